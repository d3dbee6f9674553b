/*-------------------------------------------------------------------------
 *
 * test.h
 *	  The unit tests' check macros, shared fixtures and entry points.  The
 *	  tests of the scheduler core (src/core/test/test_*.c) build into
 *	  easeml-unittest ("make unittest") without PostgreSQL; main() in
 *	  test_main.c runs them all and exits non-zero on any failed check.
 *
 * IDENTIFICATION
 *	  src/core/test/test.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TEST_H
#define EASEML_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "core/decision.h"
#include "core/gp.h"
#include "core/refit.h"

extern int	n_checks;
extern int	n_failed;

#define CHECK(cond, ...) \
	do { \
		n_checks++; \
		if (!(cond)) \
		{ \
			n_failed++; \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

#define CHECK_NEAR(a, b, tol, what) \
	CHECK(fabs((a) - (b)) <= (tol), "%s: %.15g vs %.15g", what, (double) (a), (double) (b))

/* test_fixtures.c */
/* A random symmetric positive semi-definite K x K matrix of rank r. */
extern void RandomPsd(double *cov, int K, int r, uint64_t *rng);
/* A diagonal prior of K arms with the given means (variance 0.04). */
extern void DiagPrior(GpPrior *p, int K, const double *mu);
/* A world of K arms under policy spec with ntenants tenants. */
extern void MakeWorld(DecisionWorld *w, int K, const char *spec, int ntenants);
/* Add a classification task of tenant 'tenant' with the given id. */
extern DecisionTask *AddTask(DecisionWorld *w, int64_t id, int tenant,
							 const unsigned char *elig);
/* A refit input of m history rows x K models, nothing else set. */
extern void HistoryInput(RefitInput *in, int K, int m, const double *cells,
						 const int64_t *row_task, const unsigned char *row_kind);
/* Run one refit cycle of in into w; returns the steps it took. */
extern int	RefitCycle(RefitState *r, const RefitInput *in, DecisionWorld *w,
					   double now);

/* test_explore.c */
extern void TestExploreGate(void);

/* test_hpspace.c */
extern void TestHpScale(void);
extern void TestHpPropose(void);
extern void TestHpExtendPrior(void);
extern void TestHpRefit(void);
extern void TestHpPointPosterior(void);
extern void TestHpProposalBeats(void);

/* test_gp.c */
extern void TestCholesky(void);
extern void TestPosteriorClosedForm(void);
extern void TestIncremental(void);
extern void TestPriorFit(void);

/* test_policy.c */
extern void TestAcquisition(void);
extern void TestBestArm(void);
extern void TestPickTenant(void);
extern void TestIndex(void);
extern void TestTopArmsEi(void);
extern void TestIndexTop(void);

/* test_decision.c */
extern void TestDecisionSync(void);
extern void TestDecisionFifo(void);
extern void TestDecisionFairShare(void);
extern void TestDecisionFairSharesFull(void);
extern void TestDecisionPerClassCost(void);
extern void TestDecisionPosterior(void);
extern void TestLazyInstall(void);
extern void TestDecisionMap(void);
extern void TestDecisionRandom(void);

/* test_memory.c */
extern void TestMemoryModel(void);

/* test_cost.c */
extern void TestFamilyCostModel(void);
extern void TestCostFoldsAndPasses(void);
extern void TestDecisionFamilyCost(void);
extern void TestCostBinsAndPasses(void);
extern void TestCostTaskPasses(void);
extern void TestCostOverheadRuns(void);
extern void TestRefitCostCold(void);
extern void TestCostModel(void);

/* test_refit.c */
extern void TestRefitTwice(void);
extern void TestAutoPolicy(void);
extern void TestAutoSameChoice(void);
extern void TestAutoKeep(void);

/* test_mixture.c */
extern void TestPolicyGrammar(void);
extern void TestMixture(void);
extern void TestMixtureSliced(void);
extern void TestMixLearn(void);
extern void TestDecisionMixture(void);
extern void TestLiveMixture(void);

/* test_replay.c */
extern void TestAutoOptions(void);
extern void TestCsv(void);
extern void TestReplayHand(void);
extern void TestReplayRandom(void);

/* test_placement.c */
extern void TestDecisionPlacement(void);
extern void TestPlacement(void);

/* test_slurm.c */
extern void TestSlurmParse(void);

#endif							/* EASEML_TEST_H */
