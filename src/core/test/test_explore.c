/*-------------------------------------------------------------------------
 *
 * test_explore.c
 *	  Unit tests of "explore only when it pays" (xg=X, xo=0|1;
 *	  src/core/policy_explore.c): the anchor, the gate's rule, and through
 *	  the decision world that a task runs its anchor unless the model's
 *	  candidate's expected improvement exceeds X times the anchor's.
 *
 * IDENTIFICATION
 *	  src/core/test/test_explore.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/gp.h"
#include "core/policy.h"
#include "test.h"

/* The pick rule alone: anchor, gate, what turns it off. */
static void
ExplorePickRule(void)
{
	PolicyParams pp;
	double		order[5] = {0.6, 0.9, 0.9, 0.3, 0.95};
	unsigned char avail[5] = {1, 1, 1, 1, 0};
	unsigned char none[5] = {0, 0, 0, 0, 0};
	char		err[128];

	/* the largest order among available arms, the lowest index on ties */
	CHECK(PolicyExploreAnchor(5, order, avail) == 1, "anchor: arm 1 (4 is out, 2 ties)");
	CHECK(PolicyExploreAnchor(5, order, none) == -1, "anchor: none available");
	CHECK(PolicyExploreAnchor(5, NULL, avail) == -1, "anchor: no order");

	CHECK(PolicyParseSpec("hybrid:cost:xg=2", &pp, NULL, 0) == 0 &&
		  pp.explore_gate == 2.0 && pp.explore_order == 0, "xg=2 parsed");
	CHECK(PolicyExploreGated(&pp), "xg=2 gates");
	CHECK(!PolicyExplorePays(&pp, 0.19, 0.1), "0.19 < 2 x 0.1: the anchor stays");
	CHECK(!PolicyExplorePays(&pp, 0.2, 0.1), "equal to 2 x: the anchor stays");
	CHECK(PolicyExplorePays(&pp, 0.21, 0.1), "0.21 > 2 x 0.1: explore");
	CHECK(PolicyExplorePays(&pp, 1e-9, 0.0), "an anchor without gain holds nothing back");
	CHECK(PolicyParseSpec("hybrid:xg=2:xo=1", &pp, NULL, 0) == 0 &&
		  pp.explore_order == 1, "xo=1 parsed");
	/* off: no xg, xg=0, and the fixed orders (they have no model) */
	CHECK(PolicyParseSpec("hybrid:cost", &pp, NULL, 0) == 0 && !PolicyExploreGated(&pp) &&
		  PolicyExplorePays(&pp, 0.0, 1.0), "no xg: the model's candidate always");
	CHECK(PolicyParseSpec("hybrid:xg=0", &pp, NULL, 0) == 0 && !PolicyExploreGated(&pp),
		  "xg=0 is off");
	CHECK(PolicyParseSpec("popular:xg=2", &pp, NULL, 0) == 0 && !PolicyExploreGated(&pp),
		  "popular is never gated");
	CHECK(PolicyParseSpec("hybrid:xg=-1", &pp, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  strstr(err, "xg") != NULL, "xg=-1 refused: %s", err);
	CHECK(PolicyParseSpec("hybrid:xo=2", &pp, NULL, 0) == POLICY_BAD_INPUT, "xo=2 refused");
}

/*
 * One task through the world.  Independent arms: prior means 0.70, 0.62,
 * 0.55 with sd 0.1, 0.05, 0.3.  After arm 0 scores 0.72 the GP's EI of arm
 * 2 (wide) is about 126 times arm 1's (the anchor: the largest prior mean
 * left).  Without the gate arm 2 runs; with xg below that ratio arm 2,
 * above it arm 1; xo=1 anchors on the posterior mean (the same arm here:
 * independent arms keep their prior means).
 */
static int
ExploreNext(const char *spec, double *ratio)
{
	const int	K = 3;
	double		mu0[3] = {0.70, 0.62, 0.55};
	double		cov[9] = {0.01, 0, 0, 0, 0.0025, 0, 0, 0, 0.09};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *t;
	DecisionChoice c;
	int			first,
				arm = -1;

	GpPriorInit(&prior, K, mu0, cov, 1e-4);
	MakeWorld(&w, K, spec, 1);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	t = AddTask(&w, 10, 0, NULL);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0, "%s: a first decision", spec);
	first = c.chosen.arm;
	CHECK(first == 0, "%s: the first run is arm 0 (got %d)", spec, first);
	DecisionStart(&w, t, first);
	DecisionObserve(&w, t, first, 0.72, 1.0);
	if (ratio)
		*ratio = PolicyExpectedImprovement(t->gp.mu[2], sqrt(t->gp.var[2]), 0.72) /
			PolicyExpectedImprovement(t->gp.mu[1], sqrt(t->gp.var[1]), 0.72);
	if (DecisionNext(&w, &c) == 0 && c.chosen.task >= 0)
		arm = c.chosen.arm;
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
	return arm;
}

void
TestExploreGate(void)
{
	double		ratio = 0.0;
	char		spec[64];

	ExplorePickRule();
	CHECK(ExploreNext("hybrid", &ratio) == 2, "no gate: the wide arm 2");
	CHECK(ratio > 50.0 && ratio < 500.0, "EI ratio arm 2 / arm 1 = %g", ratio);
	snprintf(spec, sizeof(spec), "hybrid:xg=%g", 0.5 * ratio);
	CHECK(ExploreNext(spec, NULL) == 2, "%s: exploring pays, arm 2", spec);
	snprintf(spec, sizeof(spec), "hybrid:xg=%g", 2.0 * ratio);
	CHECK(ExploreNext(spec, NULL) == 1, "%s: the anchor, arm 1", spec);
	snprintf(spec, sizeof(spec), "hybrid:xg=%g:xo=1", 2.0 * ratio);
	CHECK(ExploreNext(spec, NULL) == 1, "%s: the posterior-mean anchor, arm 1", spec);
	snprintf(spec, sizeof(spec), "rr:acq=ei:xg=%g", 2.0 * ratio);
	CHECK(ExploreNext(spec, NULL) == 1, "%s: round-robin gated too", spec);
}
