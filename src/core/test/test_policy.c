/*-------------------------------------------------------------------------
 *
 * test_policy.c
 *	  Unit tests of the policies (src/core/policy_*.c): EI and beta, batch
 *	  EI, lookahead, candidate choice never re-picking evaluated or running
 *	  arms, deterministic ties, each policy's tenant-picking invariants
 *	  (round-robin is fair, the hybrid fairness floor holds, warm start),
 *	  PolicyIndex agreeing with PolicyPickTenant, top arms by EI.
 *
 * IDENTIFICATION
 *	  src/core/test/test_policy.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gp.h"
#include "core/policy.h"
#include "test.h"

/* EI closed forms and beta schedule. */
void
TestAcquisition(void)
{
	PolicyParams pp;
	double		ei,
				num = 0.0;
	int			i;

	CHECK_NEAR(PolicyExpectedImprovement(0.7, 0.0, 0.5), 0.2, 1e-15, "EI sigma 0 above");
	CHECK_NEAR(PolicyExpectedImprovement(0.4, 0.0, 0.5), 0.0, 0, "EI sigma 0 below");
	CHECK_NEAR(PolicyExpectedImprovement(0.5, 0.1, 0.5), 0.1 / sqrt(2 * M_PI), 1e-15,
			   "EI at mu = best");
	/* numeric integral of max(x - b, 0) N(x; 0.6, 0.05^2) */
	ei = PolicyExpectedImprovement(0.6, 0.05, 0.62);
	for (i = 0; i < 400000; i++)
	{
		double		x = 0.62 + (i + 0.5) * 1e-6;

		num += (x - 0.62) * exp(-0.5 * pow((x - 0.6) / 0.05, 2)) /
			(0.05 * sqrt(2 * M_PI)) * 1e-6;
	}
	CHECK_NEAR(ei, num, 1e-9, "EI against numeric integral");

	/*
	 * qmax=1: scores cannot pass 1, so EI counts E[(min(f, 1) - b)+].  Arm
	 * 0 (mu 0.99, sd 0.1) has most of its plain EI above 1; arm 1 (mu 0.99,
	 * sd 0.01) has not: plain EI picks arm 0, bounded EI arm 1, and qarm=0
	 * keeps the plain choice but scores the task by the bounded EI.
	 */
	{
		double		mu[2] = {0.99, 0.99},
					var[2] = {0.01, 0.0001};
		unsigned char avail[2] = {1, 1};
		const char *specs[] = {"max_ei", "max_ei:qmax=1", "max_ei:qmax=1:qarm=0"};
		int			want[] = {0, 1, 0};
		double		bounded0 = 0.0;

		for (i = 0; i < 1000000; i++)
		{
			double		x = 0.97 + (i + 0.5) * 1e-6;	/* up to 0.97 + 1 */

			bounded0 += (fmin(x, 1.0) - 0.97) * exp(-0.5 * pow((x - 0.99) / 0.1, 2)) /
				(0.1 * sqrt(2 * M_PI)) * 1e-6;
		}
		for (i = 0; i < 3; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.97;
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, NULL, avail, mu, &v) == 0 &&
				  v.arm == want[i], "%s picks arm %d (got %d)", specs[i], want[i], v.arm);
			if (i == 2)
				CHECK_NEAR(v.ei, bounded0, 1e-7, "qarm=0: the task EI is bounded");
			if (i == 0)
				CHECK(v.ei > 3 * bounded0, "plain EI counts the mass above 1 (%g)", v.ei);
		}
	}

	PolicyParamsDefault(&pp, POLICY_RR);
	CHECK_NEAR(PolicyBeta(&pp, 100, 0), 2 * log(100 * M_PI * M_PI / (6 * 0.1)), 1e-12,
			   "beta schedule t = 1");
	CHECK(PolicyBeta(&pp, 100, 5) > PolicyBeta(&pp, 100, 4), "beta grows with t");
	pp.beta = 2.5;
	CHECK(PolicyBeta(&pp, 100, 9) == 2.5, "constant beta");

	/*
	 * ce=X: cost-aware EI per cost^X.  Arm 1 has r times arm 0's EI and
	 * costs r^1.5 times as much: per second (X = 1) arm 0 wins, per
	 * cost^0.5 arm 1, per cost^2 arm 0.
	 */
	{
		double		mu[2] = {0.5, 0.6},
					var[2] = {0.01, 0.01},
					r = PolicyExpectedImprovement(0.6, 0.1, 0.55) /
			PolicyExpectedImprovement(0.5, 0.1, 0.55),
					cost[2] = {1.0, pow(r, 1.5)};
		unsigned char avail[2] = {1, 1};
		const char *specs[] = {"rr:cost:acq=ei", "rr:cost:acq=ei:ce=0.5", "rr:cost:acq=ei:ce=2"};
		int			want[] = {0, 1, 0};

		for (i = 0; i < 3; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.55;
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, cost, avail, mu, &v) == 0 &&
				  v.arm == want[i], "%s picks arm %d (got %d)", specs[i], want[i], v.arm);
		}
		/* first=1: no result yet, the highest mean; then EI per second again */
		for (i = 0; i < 2; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.55;
			v.n_obs = i;
			CHECK(PolicyParseSpec("rr:cost:acq=ei:first=1", &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, cost, avail, mu, &v) == 0 &&
				  v.arm == 1 - i, "first=1 with %d result(s) picks arm %d (got %d)",
				  i, 1 - i, v.arm);
		}
		CHECK(PolicyParseSpec("rr:cost:qmax=0", &pp, NULL, 0) != 0 &&
			  PolicyParseSpec("rr:cost:qarm=2", &pp, NULL, 0) != 0,
			  "qmax <= 0 and qarm = 2 refused");
		CHECK(PolicyParseSpec("rr:cost:ce=0", &pp, NULL, 0) != 0 &&
			  PolicyParseSpec("rr:cost:ce=3", &pp, NULL, 0) != 0, "ce out of (0, 2] refused");
	}
}

/* Expected improvement of the best of two independent normals, numerically. */
static double
BatchEiNumeric(double m1, double s1, double m2, double s2, double best)
{
	double		sum = 0.0,
				h = 1e-5;

	/* E[(max - b)+] = integral over x > b of P(max > x) */
	for (double x = best + h / 2; x < best + 2.0; x += h)
		sum += (1.0 - 0.5 * erfc(-(x - m1) / (s1 * M_SQRT2)) *
				0.5 * erfc(-(x - m2) / (s2 * M_SQRT2))) * h;
	return sum;
}

/*
 * la=M (lookahead task score): GpStateCov against the closed form, the
 * batch EI against numeric integrals, and a pick where the batch decides:
 * tenant A's next three candidates are one model three times over (fully
 * correlated), tenant B's three are independent and each a little worse
 * than A's first.  Next-candidate EI serves A; the EI of the batch of
 * three per second of it serves B.
 */
/*
 * blk=B: the task served last keeps its turn while it has run fewer than
 * B times in a row without improving; an improvement (streak 0) or B runs
 * give the turn back to the greedy score.
 */
void
TestBlock(void)
{
	PolicyParams pp;
	PolicyTenantView v[3];
	uint64_t	rng = 1;
	const char *specs[] = {"max_ei:cost:blk=3", "hybrid:cost:blk=3:w=100"};

	for (int s = 0; s < 2; s++)
	{
		CHECK(PolicyParseSpec(specs[s], &pp, NULL, 0) == 0, "%s", specs[s]);
		memset(v, 0, sizeof(v));
		for (int i = 0; i < 3; i++)
		{
			v[i].id = i;
			v[i].arm = i;
			v[i].last_served = 10 + i;
			v[i].score = 1.0 + i;
		}
		/* task 2 has the best score; task 1 was served last */
		v[1].last_served = 20;
		for (int streak = 0; streak <= 4; streak++)
		{
			int			want = (streak >= 1 && streak < 3) ? 1 : 2;

			v[1].streak = streak;
			CHECK(PolicyPickTenant(&pp, 3, v, 21, &rng, NULL) == want,
				  "%s, streak %d: serve task %d", specs[s], streak, want);
		}
		v[1].streak = 1;
		v[1].arm = -1;
		CHECK(PolicyPickTenant(&pp, 3, v, 21, &rng, NULL) == 2,
			  "%s: a task with nothing to run gives its turn back", specs[s]);
	}
	CHECK(PolicyParseSpec("max_ei:blk=x", &pp, NULL, 0) != 0, "blk=x refused");
}

/*
 * lap=1 scores a batch by its best prefix per second, rg=M by the whole
 * batch's expected improvement per second of the next run only (two
 * independent candidates over best 0.55: N(0.5, 0.1^2), N(0.56, 0.05^2)).
 */
static void
TestLookaheadPrefix(PolicyTenantView *v)
{
	PolicyParams pp;
	double		bm[2] = {0.5, 0.56},
				bc[4] = {0.01, 0.0, 0.0, 0.0025},
				slow_first[2] = {10, 1},
				slow_second[2] = {1, 10},
				e1 = PolicyExpectedImprovement(0.5, 0.1, 0.55),
				e2,
				r;

	v->best = 0.55;
	CHECK(PolicyParseSpec("max_ei:cost:la=2", &pp, NULL, 0) == 0, "la=2");
	PolicyLookaheadScore(&pp, 2, bm, bc, slow_second, v, &e2);
	CHECK_NEAR(v->score, e2 / 11.0, 1e-15, "la=2: the whole batch per second");
	CHECK(PolicyParseSpec("max_ei:cost:la=2:lap=1", &pp, NULL, 0) == 0, "lap=1");
	PolicyLookaheadScore(&pp, 2, bm, bc, slow_second, v, &r);
	CHECK_NEAR(v->score, e1, 1e-15, "lap=1: the cheap first candidate alone");
	CHECK_NEAR(r, e1, 1e-15, "lap=1: the prefix's expected improvement");
	PolicyLookaheadScore(&pp, 2, bm, bc, slow_first, v, &r);
	CHECK(e2 / 11.0 > e1 / 10.0, "the batch beats its slow first member");
	CHECK_NEAR(v->score, e2 / 11.0, 1e-15, "lap=1: both candidates");
	CHECK(PolicyParseSpec("max_ei:cost:lap=2", &pp, NULL, 0) != 0, "lap=2 refused");

	CHECK(PolicyParseSpec("max_ei:cost:rg=2", &pp, NULL, 0) == 0 &&
		  PolicyRegretBatch(&pp) == 2, "rg=2 parsed");
	v->cost = 4.0;
	CHECK(PolicyRegretScore(&pp, 2, bm, bc, v, &r) == 0, "rg score");
	CHECK_NEAR(r, e2, 1e-15, "rg: the batch's expected improvement");
	CHECK_NEAR(v->score, e2 / 4.0, 1e-15, "rg: per second of the next run");
	CHECK(PolicyParseSpec("max_ei:cost:rg=2:tc=0", &pp, NULL, 0) == 0 &&
		  PolicyRegretScore(&pp, 2, bm, bc, v, NULL) == 0 && v->score == e2,
		  "rg with tc=0: not per second");
	CHECK(PolicyParseSpec("max_ei:cost:rg=2:qmax=0.5", &pp, NULL, 0) == 0 &&
		  PolicyRegretScore(&pp, 2, bm, bc, v, &r) == 0 && r == 0.0 &&
		  v->score == 0.0, "rg: nothing left above qmax");
	CHECK(PolicyParseSpec("max_ei:rg=17", &pp, NULL, 0) != 0, "rg=17 refused");
	CHECK(PolicyParseSpec("rr:cost:rg=3", &pp, NULL, 0) == 0 &&
		  PolicyRegretBatch(&pp) == 0, "rg ignored by round-robin");
	CHECK(PolicyRegretScore(&pp, 0, bm, bc, v, NULL) == POLICY_BAD_INPUT,
		  "rg: an empty batch refused");
}

void
TestLookahead(void)
{
	double		mu0[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
				cov[36] = {0},
				bc[9],
				bm[3];
	GpPrior		prior;
	GpState		st;
	PolicyParams pp;
	PolicyTenantView v[2];
	int			arms[3] = {2, 0, 1};
	double		g,
				ei;
	uint64_t	rng = 1;

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			cov[i * 6 + j] = 0.01;
	for (int i = 3; i < 6; i++)
		cov[i * 6 + i] = 0.0081;
	cov[0 * 6 + 3] = cov[3 * 6 + 0] = 0.002;	/* for the closed-form check */
	CHECK(GpPriorInit(&prior, 6, mu0, cov, 1e-4) == 0, "lookahead prior");
	CHECK(GpStateInit(&st, &prior, 4) == 0 && GpStateAdd(&st, 3, 0.6) >= 0,
		  "lookahead state");
	CHECK(GpStateCov(&st, 3, arms, bc) == 0, "GpStateCov");
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
		{
			int			x = arms[a],
						y = arms[b];

			CHECK_NEAR(bc[a * 3 + b], cov[x * 6 + y] - cov[x * 6 + 3] * cov[3 * 6 + y] /
					   (cov[3 * 6 + 3] + 1e-4), 1e-12, "posterior covariance");
		}
	CHECK_NEAR(bc[0], st.var[2], 1e-12, "GpStateCov diagonal = var");
	GpStateFree(&st);

	/* batch EI: m = 1 exact, m = 2 independent and fully correlated */
	memset(&v[0], 0, sizeof(v[0]));
	v[0].best = 0.55;
	CHECK(PolicyParseSpec("max_ei:la=2", &pp, NULL, 0) == 0 && PolicyLookahead(&pp),
		  "la=2 parsed");
	bm[0] = 0.5;
	bm[1] = 0.56;
	bc[0] = 0.01;
	CHECK(PolicyLookaheadScore(&pp, 1, bm, bc, NULL, &v[0], &ei) == 0,
		  "lookahead m = 1");
	CHECK_NEAR(ei, PolicyExpectedImprovement(0.5, 0.1, 0.55), 1e-15, "m = 1: exact EI");
	bc[0] = 0.01;
	bc[1] = bc[2] = 0.0;
	bc[3] = 0.0025;
	PolicyLookaheadScore(&pp, 2, bm, bc, NULL, &v[0], &ei);
	g = BatchEiNumeric(0.5, 0.1, 0.56, 0.05, 0.55);
	CHECK(fabs(ei - g) < 0.03 * g, "batch EI, independent: %g vs %g", ei, g);
	CHECK(ei > PolicyExpectedImprovement(0.56, 0.05, 0.55) * 1.2,
		  "a batch gains more than its best member");
	bm[1] = 0.5;
	bc[1] = bc[2] = bc[3] = 0.01;
	PolicyLookaheadScore(&pp, 2, bm, bc, NULL, &v[0], &ei);
	g = PolicyExpectedImprovement(0.5, 0.1, 0.55);
	CHECK(fabs(ei - g) < 0.03 * g, "batch EI, one model twice: %g vs %g", ei, g);
	CHECK(v[0].score == ei, "tenant score not costed without cost");
	TestLookaheadPrefix(&v[0]);
	CHECK(PolicyParseSpec("max_ei:la=17", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("max_ei:la=-1", &pp, NULL, 0) != 0, "la out of range refused");
	CHECK(PolicyParseSpec("rr:cost:la=3", &pp, NULL, 0) == 0 && !PolicyLookahead(&pp),
		  "la ignored by round-robin");
	{
		double		c[4] = {2, 3, 4, 10};

		CHECK(PolicyParseSpec("max_ei:cost:lah=6", &pp, NULL, 0) == 0 &&
			  PolicyLookahead(&pp) == POLICY_LOOKAHEAD_MAX &&
			  PolicyLookaheadCut(&pp, 4, c) == 2, "lah=6: the candidates within 6 s");
		CHECK(PolicyParseSpec("max_ei:cost:lah=1:la=3", &pp, NULL, 0) == 0 &&
			  PolicyLookahead(&pp) == 3 && PolicyLookaheadCut(&pp, 3, c) == 1,
			  "lah=1: the next candidate at least, la=3 at most");
		CHECK(PolicyParseSpec("max_ei:lah=0", &pp, NULL, 0) != 0, "lah=0 refused");
	}

	/* the pick: A (arms 0-2, fully correlated) against B (arms 3-5) */
	cov[0 * 6 + 3] = cov[3 * 6 + 0] = 0.0;
	GpPriorFree(&prior);
	CHECK(GpPriorInit(&prior, 6, mu0, cov, 1e-4) == 0, "pick prior");
	{
		const char *specs[] = {"max_ei:cost", "max_ei:cost:la=1", "max_ei:cost:la=3",
		"hybrid:cost:la=3", "hybrid:cost:la=3:qmax=1:qarm=0", "max_ei:cost:lah=3",
		"max_ei:cost:rg=1", "max_ei:cost:rg=3", "hybrid:cost:rg=3:qmax=1:qarm=0",
		"max_ei:cost:la=3:lap=1"};
		/* lap=1: B's best prefix is its first candidate, A's is larger */
		int			want[] = {0, 0, 1, 1, 1, 1, 0, 1, 1, 0};
		double		cost[6] = {1, 1, 1, 1, 1, 1};

		for (int i = 0; i < 10; i++)
		{
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0, "%s", specs[i]);
			for (int t = 0; t < 2; t++)
			{
				unsigned char avail[6] = {0};
				PolicyArmScore top[3];
				double		m[3];
				int			a[3],
							n = 0;

				for (int k = 0; k < 3; k++)
					avail[3 * t + k] = 1;
				memset(&v[t], 0, sizeof(v[t]));
				v[t].id = t;
				v[t].best = 0.5;
				v[t].last_served = 8 + t;
				GpStateInit(&st, &prior, 4);
				PolicyTopArms(&pp, 6, st.mu, st.var, cost, avail, mu0, &v[t],
							  3, top, &n);
				CHECK(n == 3, "three candidates");
				if (PolicyLookahead(&pp))
				{
					n = PolicyLookaheadCut(&pp, n, cost);
					for (int k = 0; k < n; k++)
						m[k] = st.mu[a[k] = top[k].arm];
					CHECK(GpStateCov(&st, n, a, bc) == 0 &&
						  PolicyLookaheadScore(&pp, n, m, bc, cost, &v[t], NULL) == 0,
						  "lookahead score");
				}
				if (PolicyRegretBatch(&pp))
				{
					/* all costs 1: the EI ranking is the EI/s ranking */
					n = PolicyRegretBatch(&pp);
					for (int k = 0; k < n; k++)
						m[k] = st.mu[a[k] = top[k].arm];
					CHECK(GpStateCov(&st, n, a, bc) == 0 &&
						  PolicyRegretScore(&pp, n, m, bc, &v[t], NULL) == 0,
						  "remaining-regret score");
				}
				GpStateFree(&st);
			}
			CHECK(v[0].ei > v[1].ei, "A's next candidate has the larger EI");
			CHECK(PolicyPickTenant(&pp, 2, v, 10, &rng, NULL) == want[i],
				  "%s serves tenant %c", specs[i], "AB"[want[i]]);
		}
	}
	GpPriorFree(&prior);
}

/* The candidate is never an evaluated or running arm; ties by index. */
void
TestBestArm(void)
{
	const int	K = 40;
	double		mu[40],
				var[40],
				cost[40];
	unsigned char avail[40];
	PolicyKind	kinds[] = {POLICY_RR, POLICY_MAX_EI, POLICY_MAX_GAP, POLICY_POPULAR,
	POLICY_FIFO, POLICY_HYBRID};
	uint64_t	rng = 11;
	int			trial,
				q,
				k;

	for (trial = 0; trial < 500; trial++)
	{
		int			n_avail = 0;

		for (k = 0; k < K; k++)
		{
			mu[k] = PolicyRandUniform(&rng);
			var[k] = 0.01 * PolicyRandUniform(&rng);
			cost[k] = 0.1 + 10 * PolicyRandUniform(&rng);
			avail[k] = PolicyRandUniform(&rng) < 0.3;
			n_avail += avail[k];
		}
		for (q = 0; q < (int) (sizeof(kinds) / sizeof(kinds[0])); q++)
		{
			PolicyParams pp;
			PolicyTenantView v;

			PolicyParamsDefault(&pp, kinds[q]);
			pp.cost_aware = trial % 2;
			memset(&v, 0, sizeof(v));
			v.best = 0.6;
			v.n_obs = trial % 7;
			CHECK(PolicyBestArm(&pp, K, mu, var, cost, avail, mu, &v) == 0, "best arm");
			if (n_avail == 0)
				CHECK(v.arm == -1, "no arm when none is available");
			else
				CHECK(v.arm >= 0 && avail[v.arm], "picked unavailable arm %d (kind %d)",
					  v.arm, kinds[q]);
		}
	}

	/* pruned EI equals the plain argmax */
	for (trial = 0; trial < 300; trial++)
	{
		PolicyParams pp;
		PolicyTenantView v;
		double		best = -1;
		int			arg = -1;

		for (k = 0; k < K; k++)
		{
			mu[k] = 0.5 + 0.3 * PolicyRandUniform(&rng);
			var[k] = (k % 5 == 0) ? 0.0 : 0.004 * PolicyRandUniform(&rng);
			avail[k] = PolicyRandUniform(&rng) < 0.8;
			cost[k] = 1.0;
		}
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		memset(&v, 0, sizeof(v));
		v.best = 0.75;
		PolicyBestArm(&pp, K, mu, var, NULL, avail, NULL, &v);
		for (k = 0; k < K; k++)
			if (avail[k])
			{
				double		e = PolicyExpectedImprovement(mu[k], sqrt(var[k]), 0.75);

				if (e > best)
				{
					best = e;
					arg = k;
				}
			}
		CHECK(v.arm == arg, "pruned EI argmax %d vs %d", v.arm, arg);
	}

	/* ties: lowest arm index; cost-aware EI prefers the cheaper twin */
	{
		PolicyParams pp;
		PolicyTenantView v;

		for (k = 0; k < K; k++)
		{
			mu[k] = 0.5;
			var[k] = 0.01;
			avail[k] = k >= 3;
			cost[k] = 1.0;
		}
		cost[9] = 0.5;
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		memset(&v, 0, sizeof(v));
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 3, "tie -> lowest available index, got %d", v.arm);
		pp.cost_aware = 1;
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 9, "cost-aware EI picks the cheaper arm, got %d", v.arm);
		PolicyParamsDefault(&pp, POLICY_RR);
		pp.cost_aware = 1;
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 9, "cost-aware UCB picks the cheaper arm, got %d", v.arm);
	}
}

/* Fill n views as if every task had a candidate with random scores. */
static void
RandomViews(PolicyTenantView *v, int n, uint64_t *rng, const PolicyParams *pp)
{
	int			i;
	double		mu[4],
				var[4];
	unsigned char avail[4] = {1, 1, 1, 1};

	for (i = 0; i < n; i++)
	{
		int			k;

		for (k = 0; k < 4; k++)
		{
			mu[k] = PolicyRandUniform(rng);
			var[k] = 0.01 * PolicyRandUniform(rng);
		}
		v[i].id = i;
		v[i].best = 0.5;
		PolicyBestArm(pp, 4, mu, var, NULL, avail, mu, &v[i]);
	}
}

/* Round-robin is fair; greedy is deterministic; hybrid floor; seeds. */
void
TestPickTenant(void)
{
	enum
	{
	N = 9};
	PolicyTenantView v[N];
	PolicyParams pp;
	uint64_t	rng = 5;
	int			served[N];
	int64_t		d;
	int			i;

	/* rr: n x 20 decisions serve everyone exactly 20 times, in id order */
	memset(v, 0, sizeof(v));
	PolicyParamsDefault(&pp, POLICY_RR);
	RandomViews(v, N, &rng, &pp);
	for (i = 0; i < N; i++)
		v[i].last_served = -1;
	memset(served, 0, sizeof(served));
	for (d = 0; d < N * 20; d++)
	{
		int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

		CHECK(p == (int) (d % N), "rr order: decision %lld picked %d", (long long) d, p);
		if (p < 0)
			break;
		served[p]++;
		v[p].last_served = d;
	}
	for (i = 0; i < N; i++)
		CHECK(served[i] == 20, "rr fairness: task %d served %d times", i, served[i]);

	/* greedy: argmax score, ties lowest id; ineligible skipped */
	PolicyParamsDefault(&pp, POLICY_MAX_EI);
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = 1.0;
		v[i].last_served = 0;
		v[i].n_running = 0;
	}
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 0, "greedy tie -> lowest id");
	v[4].score = 2.0;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 4, "greedy argmax");
	v[4].arm = -1;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 0, "ineligible skipped");
	for (i = 0; i < N; i++)
		v[i].arm = -1;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == -1, "nothing eligible -> -1");

	/* warm start: the first N decisions serve every task once */
	PolicyParamsDefault(&pp, POLICY_MAX_EI);
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = (i == 2) ? 10.0 : 1.0 / (i + 1);
		v[i].last_served = -1;
	}
	memset(served, 0, sizeof(served));
	for (d = 0; d < N; d++)
	{
		int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

		served[p]++;
		v[p].last_served = d;
	}
	for (i = 0; i < N; i++)
		CHECK(served[i] == 1, "warm start: task %d served %d times", i, served[i]);

	/* spread: tasks with a run in flight wait while others are idle */
	for (i = 0; i < N; i++)
		v[i].n_running = 1;
	v[7].n_running = 0;
	CHECK(PolicyPickTenant(&pp, N, v, 50, &rng, NULL) == 7, "spread prefers idle task");
	pp.spread = 0;
	CHECK(PolicyPickTenant(&pp, N, v, 50, &rng, NULL) == 2, "without spread: argmax");
	for (i = 0; i < N; i++)
		v[i].n_running = 0;

	/* hybrid: task 0 always scores best, yet nobody waits more than w */
	{
		int			w;

		for (w = N; w <= 3 * N; w += N)
		{
			int64_t		last[N];
			int64_t		worst_wait = 0;

			PolicyParamsDefault(&pp, POLICY_HYBRID);
			pp.fairness_window = w;
			for (i = 0; i < N; i++)
			{
				v[i].arm = 0;
				v[i].score = (i == 0) ? 100.0 : 1.0 / (i + 1);
				v[i].last_served = -1;
				last[i] = -1;
			}
			memset(served, 0, sizeof(served));
			for (d = 0; d < 3000; d++)
			{
				int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

				CHECK(p >= 0, "hybrid picked nothing");
				if (p < 0)
					break;
				CHECK(d - last[p] <= w, "hybrid floor: task %d waited %lld > %d",
					  p, (long long) (d - last[p]), w);
				if (d - last[p] > worst_wait)
					worst_wait = d - last[p];
				last[p] = d;
				v[p].last_served = d;
				served[p]++;
				/* task 5 leaves and comes back: the floor must adapt */
				if (d == 1000)
					v[5].arm = -1;
				if (d == 1500)
				{
					v[5].arm = 0;
					last[5] = d;
					v[5].last_served = d;
				}
			}
			for (i = 1; i < N; i++)
				if (i != 5)
					CHECK(d - last[i] <= w, "task %d starving at the end", i);
			if (w == 3 * N)
				CHECK(served[0] > served[1] * 2, "hybrid still greedy: %d vs %d",
					  served[0], served[1]);
		}
	}

	/* hybrid streak guard: a task that does not improve yields */
	PolicyParamsDefault(&pp, POLICY_HYBRID);
	pp.streak_limit = 3;
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = (i == 0) ? 100.0 : 1.0;
		v[i].last_served = 10 + i;
		v[i].streak = 0;
	}
	v[0].streak = 3;
	v[0].last_served = 19;
	CHECK(PolicyPickTenant(&pp, N, v, 20, &rng, NULL) == 1, "streak guard -> least recent");
	v[0].streak = 2;
	CHECK(PolicyPickTenant(&pp, N, v, 20, &rng, NULL) == 0, "below the streak limit: greedy");

	/* random: same seed, same sequence; another seed, another one */
	{
		uint64_t	a = 99,
					b = 99,
					c = 100;
		int			same = 1,
					differ = 0;

		PolicyParamsDefault(&pp, POLICY_RANDOM);
		for (i = 0; i < N; i++)
		{
			v[i].arm = 0;
			v[i].last_served = 1;
			v[i].n_running = 0;
		}
		for (d = 0; d < 50; d++)
		{
			int			pa = PolicyPickTenant(&pp, N, v, d, &a, NULL);
			int			pb = PolicyPickTenant(&pp, N, v, d, &b, NULL);
			int			pc = PolicyPickTenant(&pp, N, v, d, &c, NULL);

			same &= pa == pb;
			differ |= pa != pc;
			CHECK(pa >= 0 && pa < N, "random in range");
		}
		CHECK(same, "random: same seed, same picks");
		CHECK(differ, "random: another seed, other picks");
	}
}

/* PolicyIndex picks exactly what PolicyPickTenant picks. */
void
TestIndex(void)
{
	enum
	{
	N = 37};
	PolicyKind	kinds[] = {POLICY_RR, POLICY_MAX_EI, POLICY_MAX_GAP, POLICY_HYBRID,
	POLICY_MAX_WIDTH};
	uint64_t	rng = 123;
	int			q;

	for (q = 0; q < (int) (sizeof(kinds) / sizeof(kinds[0])); q++)
	{
		PolicyTenantView v[N];
		PolicyParams pp;
		PolicyIndex idx;
		int64_t		d;
		int			i,
					mismatches = 0;

		memset(v, 0, sizeof(v));
		PolicyParamsDefault(&pp, kinds[q]);
		pp.fairness_window = 2 * N;
		RandomViews(v, N, &rng, &pp);
		for (i = 0; i < N; i++)
			v[i].last_served = -1;
		CHECK(PolicyIndexInit(&idx, v, N, 0) == 0, "index init");
		for (d = 0; d < 3000; d++)
		{
			uint64_t	r1 = d,
						r2 = d;
			int			a = PolicyPickTenant(&pp, N, v, d, &r1, NULL);
			int			b = PolicyIndexPick(&idx, &pp, d, &r2, NULL);
			double		mu[4],
						var[4];
			unsigned char avail[4] = {1, 1, 1, 1};
			int			k;

			mismatches += a != b;
			if (a < 0)
				break;
			/* serve a: new scores, sometimes it runs out of arms */
			v[a].last_served = d;
			for (k = 0; k < 4; k++)
			{
				mu[k] = PolicyRandUniform(&rng);
				var[k] = 0.01 * PolicyRandUniform(&rng);
			}
			v[a].n_obs++;
			v[a].streak = PolicyRandUniform(&rng) < 0.5 ? v[a].streak + 1 : 0;
			PolicyBestArm(&pp, 4, mu, var, NULL, avail, mu, &v[a]);
			if (PolicyRandUniform(&rng) < 0.01)
				v[a].arm = -1;
			PolicyIndexUpdate(&idx, a);
		}
		CHECK(mismatches == 0, "index vs scan (%s): %d mismatches",
			  PolicyName(kinds[q]), mismatches);
		PolicyIndexFree(&idx);
	}
}

/* (acq, arm) pairs best first: larger acquisition, then lower arm. */
static int
CmpArmScore(const void *a, const void *b)
{
	const PolicyArmScore *x = a,
			   *y = b;

	if (x->acq != y->acq)
		return x->acq > y->acq ? -1 : 1;
	return x->arm - y->arm;
}

/*
 * PolicyTopArms under EI keeps exactly the ntop best arms of a full scan
 * (same values, same tie order), whatever the scale of mu - best and of
 * the variances: its pruning bound must never cut a winner.
 */
void
TestTopArmsEi(void)
{
	enum
	{
	K = 60};
	const int	ntops[] = {1, 2, 4, 7, K};
	double		mu[K],
				var[K],
				cost[K];
	unsigned char avail[K];
	uint64_t	rng = 77;
	int			bad = 0;

	for (int trial = 0; trial < 3000; trial++)
	{
		PolicyParams pp;
		PolicyArmScore all[K],
					top[K];
		double		scale = pow(10.0, -6.0 + 7.0 * PolicyRandUniform(&rng));
		int			n_all = 0;

		for (int k = 0; k < K; k++)
		{
			/* some twins, some zero variances, some huge |z| */
			int			twin = k > 0 && PolicyRandUniform(&rng) < 0.1;

			mu[k] = twin ? mu[k - 1] : 0.5 + scale * (2.0 * PolicyRandUniform(&rng) - 1.0);
			var[k] = twin ? var[k - 1] :
				PolicyRandUniform(&rng) < 0.05 ? 0.0 :
				pow(10.0, -30.0 + 30.0 * PolicyRandUniform(&rng));
			cost[k] = pow(10.0, -2.0 + 4.0 * PolicyRandUniform(&rng));
			avail[k] = PolicyRandUniform(&rng) < 0.8;
		}
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		pp.cost_aware = trial % 2;
		for (int k = 0; k < K; k++)
			if (avail[k])
			{
				double		c = cost[k] > 1e-9 ? cost[k] : 1e-9;

				all[n_all].arm = k;
				all[n_all].acq = PolicyExpectedImprovement(mu[k], sqrt(var[k]), 0.5);
				if (pp.cost_aware)
					all[n_all].acq /= c;
				n_all++;
			}
		qsort(all, n_all, sizeof(PolicyArmScore), CmpArmScore);
		for (int q = 0; q < (int) (sizeof(ntops) / sizeof(ntops[0])); q++)
		{
			PolicyTenantView v;
			int			n = -1,
						want = ntops[q] < n_all ? ntops[q] : n_all;

			memset(&v, 0, sizeof(v));
			v.best = 0.5;
			v.n_obs = 3;
			CHECK(PolicyTopArms(&pp, K, mu, var, cost, avail, NULL, &v,
								ntops[q], top, &n) == 0, "top arms");
			if (n != want)
				bad++;
			for (int i = 0; i < n && i < want; i++)
				if (top[i].arm != all[i].arm || top[i].acq != all[i].acq)
				{
					bad++;
					break;
				}
		}
	}
	CHECK(bad == 0, "pruned EI ranking differs from the full scan in %d cases", bad);
}

/*
 * PolicyIndexTop lists the views in the order of a full sort, leaves out
 * skip, and leaves both trees as they were.
 */
void
TestIndexTop(void)
{
	enum
	{
	N = 37};
	PolicyTenantView v[N];
	PolicyParams pp;
	uint64_t	rng = 5;
	int			bad = 0;

	PolicyParamsDefault(&pp, POLICY_HYBRID);
	for (int trial = 0; trial < 200; trial++)
	{
		PolicyIndex idx;
		int		   *best0,
				   *lrs0;
		int			idle_only = trial % 2;

		memset(v, 0, sizeof(v));
		RandomViews(v, N, &rng, &pp);
		for (int i = 0; i < N; i++)
		{
			v[i].id = (int64_t) (PolicyRandUniform(&rng) * 8);	/* ties */
			v[i].last_served = (int64_t) (PolicyRandUniform(&rng) * 20) - 1;
			v[i].n_running = PolicyRandUniform(&rng) < 0.3;
			if (PolicyRandUniform(&rng) < 0.2)
				v[i].arm = -1;
			if (PolicyRandUniform(&rng) < 0.2)
				v[i].score = v[(i + 1) % N].score;
		}
		CHECK(PolicyIndexInit(&idx, v, N, idle_only) == 0, "index init");
		best0 = malloc(sizeof(int) * 2 * idx.size);
		lrs0 = malloc(sizeof(int) * 2 * idx.size);
		memcpy(best0, idx.best, sizeof(int) * 2 * idx.size);
		memcpy(lrs0, idx.lrs, sizeof(int) * 2 * idx.size);
		for (int by_lrs = 0; by_lrs <= 1; by_lrs++)
			for (int k = 1; k <= N + 1; k += 1 + k / 4)
			{
				int			skip = (trial % 3 == 0) ? -1 :
					(trial % 3 == 1) ? (by_lrs ? idx.lrs[1] : idx.best[1]) :
					(int) (PolicyRandUniform(&rng) * N);
				int			out[N + 1],
							want[N],
							n_want = 0,
							n;

				/* the full sort: selection by the trees' own order */
				for (int i = 0; i < N; i++)
				{
					int			in = v[i].arm >= 0 &&
						(by_lrs || !idle_only || v[i].n_running == 0);

					if (in && i != skip)
						want[n_want++] = i;
				}
				for (int a = 0; a < n_want; a++)
					for (int b = a + 1; b < n_want; b++)
					{
						const PolicyTenantView *x = &v[want[a]],
								   *y = &v[want[b]];
						int			later = by_lrs ?
							(y->last_served < x->last_served ||
							 (y->last_served == x->last_served &&
							  (y->id < x->id || (y->id == x->id && want[b] < want[a])))) :
							(y->score > x->score ||
							 (y->score == x->score &&
							  (y->id < x->id || (y->id == x->id && want[b] < want[a]))));

						if (later)
						{
							int			tmp = want[a];

							want[a] = want[b];
							want[b] = tmp;
						}
					}
				n = PolicyIndexTop(&idx, by_lrs, skip, k, out);
				if (n != (k < n_want ? k : n_want))
					bad++;
				for (int i = 0; i < n && i < n_want; i++)
					bad += out[i] != want[i];
				if (memcmp(best0, idx.best, sizeof(int) * 2 * idx.size) != 0 ||
					memcmp(lrs0, idx.lrs, sizeof(int) * 2 * idx.size) != 0)
					bad++;
			}
		free(best0);
		free(lrs0);
		PolicyIndexFree(&idx);
	}
	CHECK(bad == 0, "PolicyIndexTop: %d differences from the full sort", bad);
}
