/*-------------------------------------------------------------------------
 *
 * test_main.c
 *	  Runs the unit tests of the scheduler core ("make unittest"; no
 *	  PostgreSQL needed) and exits non-zero if any check failed.  Each
 *	  test_*.c file covers one module; test.h lists them.
 *
 *	  easeml-unittest              every test, in the order below
 *	  easeml-unittest NAME...      only these (make unittest TEST="NAME...")
 *	  easeml-unittest --list       the names
 *
 * IDENTIFICATION
 *	  src/core/test/test_main.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "test.h"

extern void openblas_set_num_threads(int num_threads);

int			n_checks = 0;
int			n_failed = 0;

typedef struct UnitTest
{
	const char *name;
	void		(*fn) (void);
} UnitTest;

#define TEST(fn) {#fn, fn}

/* every test, in the order a full run takes them */
static const UnitTest tests[] = {
	TEST(TestPlacement),
	TEST(TestDecisionPlacement),
	TEST(TestCholesky),
	TEST(TestPosteriorClosedForm),
	TEST(TestIncremental),
	TEST(TestPriorFit),
	TEST(TestAcquisition),
	TEST(TestBestArm),
	TEST(TestPickTenant),
	TEST(TestIndex),
	TEST(TestIndexTop),
	TEST(TestTopArmsEi),
	TEST(TestExploreGate),
	TEST(TestDecisionFifo),
	TEST(TestDecisionFairShare),
	TEST(TestDecisionFairSharesFull),
	TEST(TestDecisionPerClassCost),
	TEST(TestFamilyCostModel),
	TEST(TestCostFoldsAndPasses),
	TEST(TestDecisionFamilyCost),
	TEST(TestRefitCostCold),
	TEST(TestCostBinsAndPasses),
	TEST(TestCostTaskPasses),
	TEST(TestHpScale),
	TEST(TestHpPropose),
	TEST(TestHpExtendPrior),
	TEST(TestHpRefit),
	TEST(TestHpPointPosterior),
	TEST(TestHpProposalBeats),
	TEST(TestCostOverheadRuns),
	TEST(TestRefitTwice),
	TEST(TestAutoPolicy),
	TEST(TestAutoSameChoice),
	TEST(TestAutoKeep),
	TEST(TestDecisionPosterior),
	TEST(TestMixture),
	TEST(TestMixtureSliced),
	TEST(TestPolicyGrammar),
	TEST(TestAutoOptions),
	TEST(TestLiveMixture),
	TEST(TestLazyInstall),
	TEST(TestDecisionMixture),
	TEST(TestMixLearn),
	TEST(TestDecisionRandom),
	TEST(TestDecisionSync),
	TEST(TestDecisionMap),
	TEST(TestCostModel),
	TEST(TestCsv),
	TEST(TestReplayHand),
	TEST(TestReplayRandom),
	TEST(TestSlurmParse),
	TEST(TestMemoryModel),
};

#define N_TESTS ((int) (sizeof(tests) / sizeof(tests[0])))

static const UnitTest *
FindTest(const char *name)
{
	for (int i = 0; i < N_TESTS; i++)
		if (strcmp(tests[i].name, name) == 0)
			return &tests[i];
	return NULL;
}

/*
 * Run every test, or those named on the command line; exit status 1 if
 * any check failed, 2 for a name that is no test (before running any).
 */
int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0)
	{
		for (int i = 0; i < N_TESTS; i++)
			printf("%s\n", tests[i].name);
		return 0;
	}
	for (int a = 1; a < argc; a++)
	{
		if (FindTest(argv[a]) == NULL)
		{
			fprintf(stderr, "easeml-unittest: no test named \"%s\" (--list shows them)\n", argv[a]);
			return 2;
		}
	}
	openblas_set_num_threads(1);
	if (argc == 1)
		for (int i = 0; i < N_TESTS; i++)
			tests[i].fn();
	for (int a = 1; a < argc; a++)
		FindTest(argv[a])->fn();
	printf("easeml-unittest: %d checks, %d failed\n", n_checks, n_failed);
	return n_failed == 0 ? 0 : 1;
}
