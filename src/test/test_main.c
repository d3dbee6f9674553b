/*-------------------------------------------------------------------------
 *
 * test_main.c
 *	  Runs every unit test of the scheduler core ("make unittest"; no
 *	  PostgreSQL needed) and exits non-zero if any check failed.  Each
 *	  test_*.c file covers one module; test.h lists them.
 *
 * IDENTIFICATION
 *	  src/test/test_main.c
 *
 *-------------------------------------------------------------------------
 */
#include "test/test.h"

extern void openblas_set_num_threads(int num_threads);

int			n_checks = 0;
int			n_failed = 0;

/* Run every test; exit status 1 if any check failed. */
int
main(void)
{
	openblas_set_num_threads(1);
	TestPlacement();
	TestDecisionPlacement();
	TestCholesky();
	TestPosteriorClosedForm();
	TestIncremental();
	TestPriorFit();
	TestAcquisition();
	TestLookahead();
	TestBlock();
	TestBestArm();
	TestPickTenant();
	TestIndex();
	TestIndexTop();
	TestTopArmsEi();
	TestDecisionFifo();
	TestDecisionFairShare();
	TestDecisionFairSharesFull();
	TestDecisionPerClassCost();
	TestFamilyCostModel();
	TestCostFoldsAndPasses();
	TestDecisionFamilyCost();
	TestRefitCostCold();
	TestCostBinsAndPasses();
	TestCostTaskPasses();
	TestCostOverheadRuns();
	TestRefitTwice();
	TestAutoPolicy();
	TestAutoSameChoice();
	TestDecisionPosterior();
	TestMixture();
	TestMixOffsetPrior();
	TestMixTempered();
	TestMixPlan();
	TestMixtureSliced();
	TestPolicyLiveSpec();
	TestLiveMixture();
	TestLazyInstall();
	TestDecisionMixture();
	TestMixLearn();
	TestDecisionRandom();
	TestDecisionSync();
	TestDecisionMap();
	TestCostModel();
	TestCsv();
	TestReplayHand();
	TestReplayRandom();
	TestSlurmParse();
	TestMemoryModel();
	printf("easeml-unittest: %d checks, %d failed\n", n_checks, n_failed);
	return n_failed == 0 ? 0 : 1;
}
