/*-------------------------------------------------------------------------
 *
 * test_hpspace.c
 *	  Unit tests of src/core/hpspace.c: scaling, seeded proposals, the
 *	  kernel, and the prior's extension to generated arms (alone and in a
 *	  refit cycle).
 *
 * IDENTIFICATION
 *	  src/core/test/test_hpspace.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "core/decision.h"
#include "core/hpspace.h"

void
TestHpScale(void)
{
	HpDim		lin = {HP_FLOAT, 0.0, 2.0};
	HpDim		lg = {HP_LOG_FLOAT, 1e-4, 1.0};
	HpDim		li = {HP_LOG_INT, 10, 1000};
	HpDim		cat = {HP_CATEGORICAL, 0, 2};
	HpDim		bad = {HP_LOG_FLOAT, 0.0, 1.0};

	CHECK(HpTypeOf("log-float") == HP_LOG_FLOAT && HpTypeOf("int") == HP_INT &&
		  HpTypeOf("categorical") == HP_CATEGORICAL && HpTypeOf("real") == -1,
		  "type names");
	CHECK(HpDimCheck(&lin) == 0 && HpDimCheck(&lg) == 0 && HpDimCheck(&cat) == 0,
		  "well-formed dimensions pass");
	CHECK(HpDimCheck(&bad) == -1, "a log scale from 0 is refused");
	{
		/* [review] (int) hi + 1 must not overflow in ForceChange */
		HpDim		huge = {HP_CATEGORICAL, 0, 3e9};
		HpDim		most = {HP_CATEGORICAL, 0, HP_MAX_CATEGORICAL_HI};

		CHECK(HpDimCheck(&huge) == -1, "a categorical of 3e9 choices is refused");
		CHECK(HpDimCheck(&most) == 0, "a categorical of the most choices passes");
	}
	CHECK_NEAR(HpScale(&lin, 0.5), 0.25, 1e-12, "linear scale");
	CHECK_NEAR(HpScale(&lg, 1e-2), 0.5, 1e-12, "log scale");
	CHECK_NEAR(HpScale(&lin, 5.0), 1.0, 1e-12, "clamped above");
	CHECK_NEAR(HpUnscale(&lg, 0.5), 1e-2, 1e-12, "log unscale");
	CHECK_NEAR(HpUnscale(&li, 0.5), 100, 1e-12, "log-int unscale");
	CHECK(HpUnscale(&li, 0.3) == floor(HpUnscale(&li, 0.3)), "integers are rounded");
	CHECK_NEAR(HpScale(&cat, 1), 0.5, 1e-12, "categorical index");
	for (double v = 10; v <= 1000; v *= 1.7)
		CHECK_NEAR(HpUnscale(&li, HpScale(&li, round(v))), round(v), 1e-6, "round trip");
}

void
TestHpPropose(void)
{
	HpDim		dims[4] = {
		{HP_LOG_FLOAT, 1e-3, 1.0},	/* lr */
		{HP_LOG_INT, 10, 1000},		/* rounds */
		{HP_INT, 2, 4},			/* depth */
		{HP_CATEGORICAL, 0, 1}	/* weights */
	};
	double		x[4] = {0.1, 100, 4, 0};
	double		a[40 * 4],
				b[40 * 4],
				c[40 * 4];
	int			differs = 0,
				cat_changed = 0;

	CHECK(HpPropose(dims, 4, x, 42, 40, 0.15, a) == 0, "propose");
	CHECK(HpPropose(dims, 4, x, 42, 40, 0.15, b) == 0, "propose again");
	CHECK(memcmp(a, b, sizeof(a)) == 0, "the same seed gives the same proposals");
	CHECK(HpPropose(dims, 4, x, 43, 40, 0.15, c) == 0, "another seed");
	CHECK(memcmp(a, c, sizeof(a)) != 0, "another seed gives other proposals");
	for (int i = 0; i < 40; i++)
	{
		const double *y = a + i * 4;
		int			same = 1;

		for (int j = 0; j < 4; j++)
		{
			CHECK(y[j] >= dims[j].lo && y[j] <= dims[j].hi, "in range: dim %d = %g", j, y[j]);
			if (dims[j].type != HP_FLOAT && dims[j].type != HP_LOG_FLOAT)
				CHECK(y[j] == floor(y[j]), "integral: dim %d = %g", j, y[j]);
			same &= (y[j] == x[j]);
		}
		CHECK(!same, "proposal %d differs from its parent", i);
		differs += (y[0] != x[0]);
		cat_changed += (y[3] != x[3]);
	}
	CHECK(differs >= 38, "the real dimension moves (%d of 40)", differs);
	CHECK(cat_changed >= 1 && cat_changed <= 20, "a categorical switches sometimes (%d of 40)",
		  cat_changed);
	/* one integer dimension with a tiny step still moves by one unit */
	{
		HpDim		k = {HP_INT, 1, 50};
		double		kx = 50,
					ky[8];

		CHECK(HpPropose(&k, 1, &kx, 7, 8, 0.001, ky) == 0, "tiny step");
		for (int i = 0; i < 8; i++)
			CHECK(ky[i] == 49, "at the upper edge it moves down: %g", ky[i]);
	}
	/*
	 * [review] a parent out of the range (the space narrowed since): the
	 * fallback moves from the clamped value, so the proposal stays in range
	 */
	{
		HpDim		k = {HP_INT, 1, 50};
		HpDim		cat = {HP_CATEGORICAL, 0, 2};
		double		kx = 80,
					cx = 7,
					ky[8];

		CHECK(HpPropose(&k, 1, &kx, 7, 8, 0.001, ky) == 0, "parent above the range");
		for (int i = 0; i < 8; i++)
			CHECK(ky[i] == 49, "moved from the clamped parent: %g", ky[i]);
		CHECK(HpPropose(&cat, 1, &cx, 7, 8, 0.001, ky) == 0, "categorical parent above");
		for (int i = 0; i < 8; i++)
			CHECK(ky[i] >= 0 && ky[i] <= 1, "a choice other than the clamped one: %g", ky[i]);
	}
	CHECK(HpPropose(dims, 4, x, 1, 1, 0.0, a) == -1, "a zero step is refused");
	x[0] = NAN;
	CHECK(HpPropose(dims, 4, x, 1, 1, 0.1, a) == -1, "a NaN parent is refused");
}

/*
 * 5 arms: grid arms 0, 1, 2 and generated arms 3, 4 of root 1, in a
 * 2-dimensional space.
 */
static const int root5[5] = {-1, -1, -1, 1, 1};
static const double coords5[5 * 2] = {
	0.2, NAN, 0.5, 0.5, NAN, NAN, 0.6, 0.45, 0.9, 0.1
};

void
TestHpExtendPrior(void)
{
	uint64_t	rng = 11;
	double		cov[25],
				mu[5] = {0.6, 0.7, 0.8, 0.1, 0.1},
				work[25],
				jit;
	GpPrior		p;
	double		k34 = HpKernel(coords5 + 6, coords5 + 8, 2, HP_LENGTHSCALE),
				k41 = HpKernel(coords5 + 8, coords5 + 2, 2, HP_LENGTHSCALE),
				k31 = HpKernel(coords5 + 6, coords5 + 2, 2, HP_LENGTHSCALE);
	double		pm[5],
				pv[5],
				y = 0.9;
	int			arm = 1;

	RandomPsd(cov, 5, 3, &rng);
	for (int i = 0; i < 5; i++)
		cov[i * 5 + i] += 0.01;
	CHECK(GpPriorInit(&p, 5, mu, cov, 1e-4) == GP_OK, "prior");
	CHECK(HpExtendPrior(&p, root5, coords5, 2, HP_LENGTHSCALE) == 0, "extend");
	CHECK_NEAR(p.mu0[3], 0.7, 1e-15, "a generated arm takes its root's mean");
	CHECK_NEAR(p.cov[3 * 5 + 3], cov[1 * 5 + 1], 1e-15, "and its variance");
	CHECK_NEAR(p.cov[3 * 5 + 1], cov[1 * 5 + 1] * k31, 1e-15,
			   "near its root, nearly its twin");
	CHECK(k31 > 0.9, "a near child (%g)", k31);
	CHECK_NEAR(p.cov[4 * 5 + 1], cov[1 * 5 + 1] * k41, 1e-15, "discounted by the kernel");
	CHECK_NEAR(p.cov[4 * 5 + 3], cov[1 * 5 + 1] * k34, 1e-15, "between siblings");
	CHECK_NEAR(p.cov[4 * 5 + 0], k41 * cov[1 * 5 + 0], 1e-15, "to another grid arm");
	CHECK_NEAR(p.cov[0 * 5 + 4], p.cov[4 * 5 + 0], 0, "symmetric");
	CHECK_NEAR(p.cov[0 * 5 + 2], cov[0 * 5 + 2], 0, "grid arms unchanged");
	CHECK(k41 < 1 && k41 > 0 && k34 < 1, "the kernel discounts distant points");
	memcpy(work, p.cov, sizeof(work));
	{
		double		a[25];

		memcpy(a, p.cov, sizeof(a));
		CHECK(GpCholesky(a, 5, work, &jit) == GP_OK, "positive definite without jitter");
	}
	/* observing the root moves the near child more than the far one */
	CHECK(GpPosterior(&p, 1, &arm, &y, pm, pv) >= 0, "posterior");
	CHECK(pm[3] - 0.7 > pm[4] - 0.7 && pm[4] > 0.7, "near child %g, far child %g", pm[3], pm[4]);
	CHECK(pv[4] > pv[3], "the far child keeps more variance (%g > %g)", pv[4], pv[3]);
	GpPriorFree(&p);
	/* bad input: a generated root */
	{
		int			bad[5] = {-1, -1, -1, 1, 3};

		CHECK(GpPriorInit(&p, 5, mu, cov, 1e-4) == GP_OK, "prior");
		CHECK(HpExtendPrior(&p, bad, coords5, 2, HP_LENGTHSCALE) == -1,
			  "a generated arm's root must be a grid arm");
		CHECK_NEAR(p.mu0[4], 0.1, 0, "untouched on bad input");
		GpPriorFree(&p);
	}
}

/* A refit cycle with generated arms extends the shared and own priors. */
void
TestHpRefit(void)
{
	enum
	{
		K = 5, M = 12
	};
	double		cells[M * K];
	int64_t		row_task[M];
	unsigned char row_kind[M];
	uint64_t	rng = 5;
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	const GpPrior *shared;
	const GpPrior *own;

	for (int i = 0; i < M; i++)
	{
		for (int k = 0; k < 3; k++)
			cells[i * K + k] = 0.5 + 0.3 * PolicyRandUniform(&rng);
		cells[i * K + 3] = cells[i * K + 4] = NAN;
		row_task[i] = i == M - 1 ? 77 : 0;
		row_kind[i] = DECISION_CLASSIFICATION;
	}
	cells[(M - 1) * K + 3] = 0.95;	/* task 77 trained a generated arm */
	HistoryInput(&in, K, M, cells, row_task, row_kind);
	in.arm_root = root5;
	in.arm_coords = coords5;
	in.space_dims = 2;
	MakeWorld(&w, K, "hybrid:cost", 1);
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &w, 1.0) >= 0, "refit cycle");
	RefitApply(&r, &w);
	shared = &r.live.prior[DECISION_CLASSIFICATION];
	CHECK(r.live.have_prior[DECISION_CLASSIFICATION], "shared prior fitted");
	CHECK_NEAR(shared->mu0[3], shared->mu0[1], 1e-15, "shared: root's mean");
	CHECK_NEAR(shared->cov[3 * K + 1],
			   shared->cov[1 * K + 1] * HpKernel(coords5 + 6, coords5 + 2, 2, HP_LENGTHSCALE),
			   1e-15, "shared: its root's variance times the kernel");
	own = RefitOwnPrior(&r, 77);
	CHECK(own != NULL, "task 77 has its own prior");
	if (own)
		CHECK_NEAR(own->mu0[4], own->mu0[1], 1e-15, "own: root's mean");
	RefitFree(&r);
	DecisionWorldFree(&w);
}

/*
 * [acqgen] A proposal's posterior without making it an arm equals the
 * posterior of the same configuration as one more generated arm of its
 * root (the prior extended to K + 1 arms, then the closed form).
 */
void
TestHpPointPosterior(void)
{
	uint64_t	rng = 29;
	/* arms 0..4 as coords5, arm 5 the point (root 1), arm 6 a point of root 0 */
	static const int root7[7] = {-1, -1, -1, 1, 1, 1, 0};
	double		coords7[7 * 2];
	double		x5[2] = {0.35, 0.62},
				x6[2] = {0.7, NAN};
	double		cov7[49],
				cov5[25],
				mu7[7] = {0.6, 0.7, 0.8, 0.1, 0.1, 0.1, 0.1};
	double		pm[7],
				pv[7];
	int			arms[4] = {0, 1, 3, 2};
	double		y[4] = {0.55, 0.82, 0.86, 0.4};
	GpPrior		p7,
				p5;
	GpState		st;
	double		mu,
				var;

	memcpy(coords7, coords5, sizeof(double) * 10);
	memcpy(coords7 + 10, x5, sizeof(x5));
	memcpy(coords7 + 12, x6, sizeof(x6));
	RandomPsd(cov7, 7, 4, &rng);
	for (int i = 0; i < 7; i++)
		cov7[i * 7 + i] += 0.01;
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 5; j++)
			cov5[i * 5 + j] = cov7[i * 7 + j];
	CHECK(GpPriorInit(&p7, 7, mu7, cov7, 1e-3) == GP_OK, "prior of 7");
	CHECK(GpPriorInit(&p5, 5, mu7, cov5, 1e-3) == GP_OK, "prior of 5");
	CHECK(HpExtendPrior(&p7, root7, coords7, 2, HP_LENGTHSCALE) == 0, "extend 7");
	CHECK(HpExtendPrior(&p5, root5, coords5, 2, HP_LENGTHSCALE) == 0, "extend 5");
	CHECK(GpPosterior(&p7, 4, arms, y, pm, pv) >= 0, "closed form over 7");
	CHECK(GpStateInit(&st, &p5, 4) == GP_OK, "state over 5");
	for (int i = 0; i < 4; i++)
		CHECK(GpStateAdd(&st, arms[i], y[i]) >= 0, "observe");
	{
		HpPoint		pt = {1, 2, x5, coords5 + 2};

		CHECK(HpPointPosterior(&st, root5, coords5, 2, &pt, HP_LENGTHSCALE, &mu, &var) == GP_OK,
			  "a point of root 1");
		CHECK_NEAR(mu, pm[5], 1e-10, "its mean is the extended prior's");
		CHECK_NEAR(var, pv[5], 1e-10, "and its variance");
		CHECK(var > 0, "an untried point keeps variance (%g)", var);
	}
	{
		HpPoint		pt = {0, 2, x6, coords5 + 0};

		CHECK(HpPointPosterior(&st, root5, coords5, 2, &pt, HP_LENGTHSCALE, &mu, &var) == GP_OK,
			  "a point of root 0 (a NaN dimension on both sides)");
		CHECK_NEAR(mu, pm[6], 1e-10, "its mean");
		CHECK_NEAR(var, pv[6], 1e-10, "its variance");
	}
	{
		/* at its root's coordinates: the root's own posterior */
		HpPoint		pt = {1, 2, coords5 + 2, coords5 + 2};

		CHECK(HpPointPosterior(&st, root5, coords5, 2, &pt, HP_LENGTHSCALE, &mu, &var) == GP_OK,
			  "a point at its root");
		CHECK_NEAR(mu, st.mu[1], 1e-10, "the root's mean");
		CHECK_NEAR(var, st.var[1], 1e-10, "the root's variance");
	}
	{
		HpPoint		bad = {3, 2, x5, coords5 + 6};

		CHECK(HpPointPosterior(&st, root5, coords5, 2, &bad, HP_LENGTHSCALE, &mu, &var) == GP_BAD_INPUT,
			  "a generated arm is no root");
	}
	/* the padding of a narrower family is left out of the kernel */
	{
		double		a[3] = {0.2, 0.4, NAN},
					b[3] = {0.2, 0.5, NAN};

		CHECK_NEAR(HpKernel(a, b, 3, 0.3), HpKernel(a, b, 2, 0.3), 1e-15,
				   "NaN on both sides is no dimension");
		b[2] = 0.5;
		CHECK(HpKernel(a, b, 3, 0.3) < HpKernel(a, b, 2, 0.3), "NaN on one side is far");
	}
	CHECK_NEAR(HpPointCost(11, 1, log(2.0)), 21, 1e-12, "twice the work, the same overhead");
	CHECK_NEAR(HpPointCost(1, 1, log(3.0)), 3, 1e-12, "a parent of overhead alone scales whole");
	CHECK(isnan(HpPointCost(0, 1, 0)), "no parent cost, no estimate");
	GpStateFree(&st);
	GpPriorFree(&p7);
	GpPriorFree(&p5);
}

/*
 * [acqgen] The decision: a proposal of high posterior and low cost beats
 * the untried grid under EI per second; one that does not is not
 * generated; a tie goes to the grid; the margin; policies without an
 * acquisition over the posterior generate none.
 */
void
TestHpProposalBeats(void)
{
	PolicyParams pp;
	/* arm 0 observed (the best, 0.8), arms 1 and 2 untried */
	double		mu[3] = {0.8, 0.6, 0.7},
				var[3] = {0, 0.01, 0.01},
				cost[3] = {5, 10, 10};
	unsigned char avail[3] = {0, 1, 1};
	PolicyTenantView view;
	double		good_mu = 0.82,
				good_var = 0.01,
				good_cost = 4,
				poor_mu = 0.6,
				poor_var = 0.0025,
				poor_cost = 50;
	double		p_acq,
				g_acq;
	int			win;

	CHECK(PolicyParseSpec("hybrid:cost", &pp, NULL, 0) == 0, "EI per second");
	memset(&view, 0, sizeof(view));
	view.best = 0.8;
	view.n_obs = 1;
	CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &good_mu, &good_var,
						  &good_cost, 1.0, &win, &p_acq, &g_acq) == POLICY_OK, "good");
	CHECK(win == 0, "a proposal near the best, cheap, beats the grid (%g > %g)", p_acq, g_acq);
	CHECK(p_acq > g_acq && g_acq > 0, "by its acquisition (%g, %g)", p_acq, g_acq);
	CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &poor_mu, &poor_var,
						  &poor_cost, 1.0, &win, &p_acq, &g_acq) == POLICY_OK, "poor");
	CHECK(win == -1, "a poor, slow proposal is not generated (%g < %g)", p_acq, g_acq);
	{
		/* two proposals: the better wins, its index */
		double		m2[2] = {poor_mu, good_mu},
					v2[2] = {poor_var, good_var},
					c2[2] = {poor_cost, good_cost};

		CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 2, m2, v2, c2, 1.0,
							  &win, &p_acq, &g_acq) == POLICY_OK && win == 1,
			  "the better of two wins (%d)", win);
	}
	/* the best untried arm's twin: a tie goes to the grid */
	CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &mu[2], &var[2],
						  &cost[2], 1.0, &win, &p_acq, &g_acq) == POLICY_OK, "twin");
	CHECK(win == -1 && p_acq == g_acq, "a tie goes to the grid (%g = %g)", p_acq, g_acq);
	/* the margin: a proposal 'ratio' times better wins only with margin below it */
	{
		double		ratio;

		CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &good_mu, &good_var,
							  &good_cost, 1.0, &win, &p_acq, &g_acq) == POLICY_OK, "ratio");
		ratio = p_acq / g_acq;
		CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &good_mu, &good_var,
							  &good_cost, ratio * 1.01, &win, &p_acq, &g_acq) == POLICY_OK &&
			  win == -1, "under the margin (%g): none", ratio * 1.01);
		CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &poor_mu, &poor_var,
							  &poor_cost, 0.0, &win, &p_acq, &g_acq) == POLICY_OK &&
			  win == 0, "margin 0: any proposal with an acquisition above 0");
	}
	/* no untried arm left to start: the grid-spent path's, not this one's */
	{
		unsigned char none[3] = {0, 0, 0};

		CHECK(HpProposalBeats(&pp, 3, mu, var, cost, none, &view, 1, &good_mu, &good_var,
							  &good_cost, 1.0, &win, &p_acq, &g_acq) == POLICY_OK && win == -1,
			  "no available arm: none");
	}
	/* a proposal without a posterior is left out */
	{
		double		nan_mu = NAN;

		CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &nan_mu, &good_var,
							  &good_cost, 0.0, &win, &p_acq, &g_acq) == POLICY_OK && win == -1,
			  "NaN posterior: none");
	}
	PolicyParamsDefault(&pp, POLICY_POPULAR);
	CHECK(HpProposalBeats(&pp, 3, mu, var, cost, avail, &view, 1, &good_mu, &good_var,
						  &good_cost, 1.0, &win, &p_acq, &g_acq) == POLICY_OK && win == -1,
		  "popular has no acquisition: none");
	/*
	 * A negative acquisition (GP-UCB of a poor task: mu + sqrt(beta) sigma
	 * below 0): the margin still asks for more, not less; a proposal worse
	 * than the best untried arm never wins
	 */
	{
		double		nm[3] = {-0.3, -0.5, -0.6},
					nv[3] = {0, 1e-6, 1e-6},
					worse_mu = -0.8,
					better_mu = 0.6,
					tiny_var = 1e-6;
		PolicyTenantView nview;

		CHECK(PolicyParseSpec("rr", &pp, NULL, 0) == 0, "GP-UCB");
		memset(&nview, 0, sizeof(nview));
		nview.best = 0;
		nview.n_obs = 1;
		CHECK(HpProposalBeats(&pp, 3, nm, nv, cost, avail, &nview, 1, &worse_mu, &tiny_var,
							  &good_cost, 2.0, &win, &p_acq, &g_acq) == POLICY_OK,
			  "negative acquisitions");
		CHECK(g_acq < 0 && p_acq < g_acq && win == -1,
			  "a worse proposal does not beat a negative acquisition by margin 2 (%g, %g)",
			  p_acq, g_acq);
		CHECK(HpProposalBeats(&pp, 3, nm, nv, cost, avail, &nview, 1, &better_mu, &tiny_var,
							  &good_cost, 2.0, &win, &p_acq, &g_acq) == POLICY_OK &&
			  win == 0 && p_acq - g_acq > -g_acq,
			  "one better by more than the margin's share of |acquisition| does (%g, %g)",
			  p_acq, g_acq);
	}

	/* through a task of a world: a prior, observations, proposals around the best */
	{
		DecisionWorld w;
		DecisionTaskSpec spec;
		DecisionTask *t;
		unsigned char kinds[5] = {1, 1, 1, 1, 1};
		double		cov[25],
					m0[5] = {0.6, 0.6, 0.6, 0.6, 0.6};
		uint64_t	rng = 5;
		GpPrior		prior;
		double		fallback[5] = {10, 10, 10, 10, 10};
		double		near[2] = {0.52, 0.49},
					far[2] = {0.95, 0.05};
		DecisionProposal props[2];
		double		ga;

		RandomPsd(cov, 5, 5, &rng);
		for (int i = 0; i < 25; i++)
			cov[i] *= 0.01;
		for (int i = 0; i < 5; i++)
			cov[i * 5 + i] += 0.002;
		CHECK(GpPriorInit(&prior, 5, m0, cov, 1e-4) == GP_OK, "prior");
		CHECK(HpExtendPrior(&prior, root5, coords5, 2, HP_LENGTHSCALE) == 0, "extend");
		CHECK(PolicyParseSpec("hybrid:cost", &pp, NULL, 0) == 0, "spec");
		CHECK(DecisionWorldInit(&w, 5, kinds, NULL, &pp) == POLICY_OK, "world");
		CHECK(DecisionSetPrior(&w, 0, &prior) == POLICY_OK, "set prior");
		memset(&spec, 0, sizeof(spec));
		spec.id = 1;
		spec.tenant = DecisionAddTenant(&w, 0);
		spec.rows = 100;
		spec.features = 3;
		spec.classes = 2;
		spec.fallback_cost = fallback;
		t = DecisionAddTask(&w, &spec);
		CHECK(t != NULL, "task");
		/* the root (arm 1) is the best by far; the others are poor */
		DecisionStart(&w, t, 1);
		CHECK(DecisionObserve(&w, t, 1, 0.95, 10) >= 0, "observe the root");
		DecisionStart(&w, t, 0);
		CHECK(DecisionObserve(&w, t, 0, 0.3, 10) >= 0, "observe arm 0");
		memset(props, 0, sizeof(props));
		props[0].point = (HpPoint) {1, 2, far, coords5 + 2};
		props[0].parent = 1;
		props[0].log_complexity_delta = log(4.0);	/* four times the work */
		props[1].point = (HpPoint) {1, 2, near, coords5 + 2};
		props[1].parent = 1;
		props[1].log_complexity_delta = log(0.5);
		CHECK(DecisionProposalBeats(&w, t, root5, coords5, 2, props, 2, 1.0, &win, &p_acq, &ga) ==
			  POLICY_OK, "proposals");
		CHECK(props[1].mu > props[0].mu && props[1].mu > 0.8,
			  "the near one is expected near the root (%g, far %g)", props[1].mu, props[0].mu);
		CHECK(props[1].cost < props[0].cost, "and cheaper (%g < %g)", props[1].cost, props[0].cost);
		CHECK(win == 1, "the near one beats the untried grid (%d: %g over %g)", win, p_acq, ga);
		/* the far, slow one alone, with a margin it cannot meet */
		CHECK(DecisionProposalBeats(&w, t, root5, coords5, 2, props, 1, 1e6, &win, &p_acq, &ga) ==
			  POLICY_OK && win == -1, "the far one alone under a high margin: none (%g, %g)", p_acq, ga);
		DecisionWorldFree(&w);
		GpPriorFree(&prior);
	}
}
