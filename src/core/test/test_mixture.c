/*-------------------------------------------------------------------------
 *
 * test_mixture.c
 *	  Unit tests of the history mixture (src/core/mixture.c) and its options
 *	  (src/core/mixlearn.c): the fit and its slices, offsets, the learned
 *	  task score, decisions and the live worker under a mixture policy.
 *
 * IDENTIFICATION
 *	  src/core/test/test_mixture.c
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
#include "core/decision.h"
#include "core/refit.h"
#include "core/mixture.h"
#include "core/mixlearn.h"
#include "test.h"

/* Rows drawn around a few centres with noise sd: history for the fit. */
static void
ClusterRows(double *h, int m, int K, double sd, uint64_t *rng)
{
	double		centre[4 * 64];

	for (int i = 0; i < 4 * K; i++)
		centre[i] = 0.2 + 0.6 * PolicyRandUniform(rng);
	for (int r = 0; r < m; r++)
		for (int k = 0; k < K; k++)
		{
			/* Box-Muller */
			double		u = PolicyRandUniform(rng) + 1e-12,
						v = PolicyRandUniform(rng);

			h[r * K + k] = centre[(r % 4) * K + k] +
				sd * sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
		}
}

/*
 * The history mixture: imputation, weights, the arm choice (discrete,
 * kernel, blended with the GP), the remaining regret, the fitted
 * bandwidth, the options, and the world using it (src/core/mixture.c).
 */
void
TestMixture(void)
{
	enum
	{
	K = 3, M = 4};
	double		h[M * K] = {0.9, 0.5, 0.3, 0.2, 0.8, 0.4, 0.6, 0.6, NAN, 0.5, 0.1, 0.7};
	double		score[K] = {0.55, NAN, NAN};
	double		cost[K] = {1.0, 1.0, 10.0};
	unsigned char avail[K] = {0, 1, 1};
	double		w[M],
				off[M],
				want_w[M],
				sum = 0.0,
				ei1 = 0.0,
				ei2 = 0.0,
				reg = 0.0;
	double		gmu[K] = {0.55, 0.6, 0.5},
				gvar[K] = {0.0, 0.01, 0.04};
	MixPrior	mp;
	PolicyParams pp;
	PolicyTenantView v;
	uint64_t	rng = 11;
	double	   *big;

	CHECK(MixPriorFit(&mp, h, 1, K, 0.1) == POLICY_BAD_INPUT, "one row refused");
	CHECK(MixPriorFit(&mp, h, M, K, 0.1) == POLICY_OK && mp.bw == 0.1 &&
		  mp.bw_shift == 0.1, "fixed bandwidth");
	/* column 2 mean 0.4667, row 2 offset ((0.6-0.55) + (0.6-0.5)) / 2 */
	CHECK_NEAR(mp.rows[2 * K + 2], 1.4 / 3.0 + 0.075, 1e-12, "imputed cell");
	CHECK_NEAR(mp.rows[3 * K + 2], 0.7, 0.0, "known cell kept");

	CHECK(PolicyParseSpec("rr:cost:acq=mix:mh=0", &pp, NULL, 0) == 0 &&
		  pp.mix_arm && pp.acq == POLICY_ACQ_EI && pp.mix_h == 0.0 &&
		  PolicyUsesMixture(&pp) && !PolicyMixScore(&pp), "acq=mix parsed");
	CHECK(PolicyParseSpec("rr:mrg=1", &pp, NULL, 0) == 0 && !PolicyUsesMixture(&pp),
		  "mrg=1 needs a greedy EI rule");
	CHECK(PolicyParseSpec("max_ei:mrg=1", &pp, NULL, 0) == 0 && PolicyMixScore(&pp),
		  "mrg=1 with max_ei");
	CHECK(PolicyParseSpec("rr:mgp=1.5", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:mh=-1", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:msh=2", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:acq=mixture", &pp, NULL, 0) != 0, "bad mixture options refused");

	/* weights: exp(-(0.55 - r_0)^2 / (2 s^2)), normalised */
	PolicyParseSpec("rr:cost:acq=mix:mh=0", &pp, NULL, 0);
	CHECK(MixWeights(&mp, &pp, score, w, off) == 0.1, "bandwidth used");
	for (int r = 0; r < M; r++)
		sum += want_w[r] = exp(-pow(0.55 - h[r * K], 2) / 0.02);
	for (int r = 0; r < M; r++)
	{
		CHECK_NEAR(w[r], want_w[r] / sum, 1e-12, "row weight");
		CHECK(off[r] == 0.0, "no offset without msh");
		ei1 += w[r] * fmax(mp.rows[r * K + 1] - 0.55, 0.0);
		ei2 += w[r] * fmax(mp.rows[r * K + 2] - 0.55, 0.0);
		reg += w[r] * fmax(fmax(mp.rows[r * K + 1], mp.rows[r * K + 2]) - 0.55, 0.0);
	}
	CHECK(ei2 > ei1 && ei2 / 10.0 < ei1, "test case: cost decides");

	/* the discrete arm choice, per second */
	memset(&v, 0, sizeof(v));
	v.best = 0.55;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == 1, "mixture EI per second picks arm 1, got %d", v.arm);
	CHECK_NEAR(v.ei, ei1, 1e-12, "discrete mixture EI");
	CHECK_NEAR(v.acq, ei1 / 1.0, 1e-12, "per second");
	CHECK_NEAR(MixRemainingRegret(&mp, &pp, w, off, avail, 0.55), reg, 1e-12,
			   "remaining regret");
	pp.cost_aware = 0;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == 2, "without cost: arm 2");
	CHECK_NEAR(v.ei, ei2, 1e-12, "discrete mixture EI of arm 2");
	v.best = 0.95;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == -1, "no row above the best: no mixture choice");
	CHECK(MixRemainingRegret(&mp, &pp, w, off, avail, 0.95) == 0.0, "nothing left");

	/* a kernel per row: sum_r w_r EI(r_k, h, best) */
	v.best = 0.55;
	pp.mix_h = 0.05;
	ei1 = ei2 = 0.0;
	for (int r = 0; r < M; r++)
	{
		ei1 += w[r] * PolicyExpectedImprovement(mp.rows[r * K + 1], 0.05, 0.55);
		ei2 += w[r] * PolicyExpectedImprovement(mp.rows[r * K + 2], 0.05, 0.55);
	}
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == 2 && ei2 > ei1, "kernel: arm 2");
	CHECK_NEAR(v.ei, ei2, 1e-12, "kernel mixture EI");
	/* blended with the GP: all GP at mgp=1 */
	pp.mix_gp = 1.0;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) ==
		  POLICY_BAD_INPUT, "mgp needs the GP posterior");
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, gmu, gvar, cost, avail, &v) == 0 &&
		  v.arm == 1, "GP alone: arm 1");
	CHECK_NEAR(v.ei, PolicyExpectedImprovement(0.6, 0.1, 0.55), 1e-12, "GP EI");
	pp.mix_gp = 0.5;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, gmu, gvar, cost, avail, &v) == 0 &&
		  v.arm == 2, "half and half: arm 2");
	CHECK_NEAR(v.ei, 0.5 * ei2 + 0.5 * PolicyExpectedImprovement(0.5, 0.2, 0.55),
			   1e-12, "blended EI");

	/* shifted rows: one result, every row fits after its offset */
	pp.mix_shift = 1;
	MixWeights(&mp, &pp, score, w, off);
	for (int r = 0; r < M; r++)
	{
		CHECK_NEAR(w[r], 0.25, 1e-12, "one result, shifted: equal weights");
		CHECK_NEAR(off[r], 0.55 - h[r * K], 1e-12, "row offset");
	}
	MixPriorFree(&mp);

	/* the fitted bandwidth follows the rows' noise */
	big = malloc(sizeof(double) * 48 * 40);
	for (int i = 0; i < 2; i++)
	{
		double		sd = i == 0 ? 0.01 : 0.05;

		ClusterRows(big, 48, 40, sd, &rng);
		CHECK(MixPriorFit(&mp, big, 48, 40, 0.0) == 0, "fit");
		/* two noisy rows of a centre differ by sd sqrt(2) per cell */
		CHECK(mp.bw >= 0.7 * sd && mp.bw <= 3.0 * sd,
			  "noise sd %g: bandwidth %g", sd, mp.bw);
		MixPriorFree(&mp);
	}
	free(big);
}

/*
 * A refit cycle fits the mixture in many steps (the scheduler's 5 ms
 * slices can stop between them) and installs the one-shot fit 'want'.
 */
static void
TestRefitMixtureSliced(const double *h, int m, int K, const MixPrior *want)
{
	int64_t    *task = calloc(m, sizeof(int64_t));
	unsigned char *kind = calloc(m, 1);
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	int			plain,
				mixed;

	HistoryInput(&in, K, m, h, task, kind);
	MakeWorld(&w, K, "hybrid:cost", 1);
	RefitInit(&r, K, 0);
	plain = RefitCycle(&r, &in, &w, 1.0);
	RefitFree(&r);
	in.need_mix = 1;
	RefitInit(&r, K, 0);
	mixed = RefitCycle(&r, &in, &w, 1.0);
	CHECK(plain >= 0 && mixed > plain + 20 && !r.running,
		  "the mixture takes many refit steps: %d, %d without", mixed, plain);
	CHECK(r.live.have_mix[DECISION_CLASSIFICATION] &&
		  r.live.mix[DECISION_CLASSIFICATION].bw == want->bw &&
		  r.live.mix[DECISION_CLASSIFICATION].bw_shift == want->bw_shift,
		  "the refit installs the one-shot fit");
	RefitFree(&r);
	DecisionWorldFree(&w);
	free(task);
	free(kind);
}

/*
 * With a policy that scores by mrg=2 the refit fits the learned model on
 * the new mixture in slices and installs it with the mixture: the world's
 * model is the one-shot fit at the world's typical costs, and the
 * decision path fits nothing, even where it may (mix_learn_by_refit 0).
 */
static void
TestRefitLearn(const double *h, int m, int K)
{
	const char *spec = "hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2";
	int64_t    *task = calloc(m, sizeof(int64_t));
	unsigned char *kind = calloc(m, 1);
	double	   *cost = malloc(sizeof(double) * K);
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	DecisionTask *t;
	DecisionChoice c;
	MixLearn	want;
	int			mixed,
				learned;
	uint64_t	sig;

	HistoryInput(&in, K, m, h, task, kind);
	in.need_mix = 1;
	MakeWorld(&w, K, spec, 1);
	t = AddTask(&w, 7, 0, NULL);
	RefitInit(&r, K, 0);
	mixed = RefitCycle(&r, &in, &w, 1.0);
	CHECK(w.mix_learn[0] == NULL && !r.live.have_learn[0],
		  "no learned model without need_learn");
	RefitFree(&r);
	sig = RefitSignature(&in);
	in.need_learn = 1;
	PolicyParseSpec(spec, &in.learn, NULL, 0);
	CHECK(RefitSignature(&in) != sig, "need_learn changes the signature");
	RefitInit(&r, K, 0);
	learned = RefitCycle(&r, &in, &w, 1.0);
	CHECK(mixed > 0 && learned > mixed + 10 && !r.running && r.learn_fits == 1,
		  "mrg=2's fit takes many refit steps: %d, %d without", learned, mixed);
	DecisionTypicalCost(&w, 0, cost);
	CHECK(MixLearnFit(&want, &r.live.mix[0], &w.params, cost) == POLICY_OK &&
		  want.ok, "one-shot fit");
	CHECK(w.mix_learn[0] != NULL && w.mix_learn[0]->n == want.n &&
		  memcmp(w.mix_learn[0]->coef, want.coef, sizeof(want.coef)) == 0,
		  "the refit installs the one-shot fit with the mixture");
	DecisionStart(&w, t, 0);
	DecisionObserve(&w, t, 0, h[0], 1.0);
	DecisionEnd(&w, t, 0, 0);
	CHECK(DecisionNext(&w, &c) == 0 && w.mix_learn_fits == 0 &&
		  w.mix_learn[0] != NULL, "the decision path fits nothing");
	/* a live world without a model ranks by mrg=1's estimate, fits none */
	w.mix_learn_by_refit = 1;
	DecisionSetMixLearn(&w, 0, NULL);
	DecisionStart(&w, t, 1);
	DecisionObserve(&w, t, 1, h[1], 1.0);
	DecisionEnd(&w, t, 1, 0);
	CHECK(DecisionNext(&w, &c) == 0 && w.mix_learn_fits == 0 &&
		  w.mix_learn[0] == NULL, "live: never fitted on the decision path");
	w.mix_learn_by_refit = 0;
	DecisionSetMixLearn(&w, 0, NULL);
	DecisionStart(&w, t, 2);
	DecisionObserve(&w, t, 2, h[2], 1.0);
	DecisionEnd(&w, t, 2, 0);
	CHECK(DecisionNext(&w, &c) == 0 && w.mix_learn_fits == 1,
		  "replay: fitted on first use (the counter counts)");
	RefitFree(&r);
	DecisionWorldFree(&w);
	free(task);
	free(kind);
	free(cost);
}

/*
 * mrg=2's fit sliced (MixLearnStep): one state per call must give exactly
 * the one-shot fit, states and coefficients, with costs; many calls.
 */
static void
TestMixLearnSliced(const MixPrior *mp)
{
	PolicyParams pp;
	MixLearnJob whole,
				cut;
	MixLearn	a,
				b,
				c;
	double	   *cost = malloc(sizeof(double) * mp->K);
	int			calls = 1;

	for (int k = 0; k < mp->K; k++)
		cost[k] = 1.0 + (k % 7);
	PolicyParseSpec("hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2", &pp, NULL, 0);
	CHECK(MixLearnBegin(&whole, mp, &pp, cost) == POLICY_OK &&
		  MixLearnBegin(&cut, mp, &pp, cost) == POLICY_OK, "learn begin");
	CHECK(MixLearnStep(&whole, INFINITY) == 1, "one step fits all");
	while (!MixLearnStep(&cut, 1.0) && calls < 100000)
		calls++;
	CHECK(cut.n == whole.n && cut.n > 100 && calls > cut.n,
		  "one state per call: %d calls, %d states", calls, cut.n);
	CHECK(memcmp(whole.x, cut.x, sizeof(double) * cut.n * MIXL_FEATURES) == 0 &&
		  memcmp(whole.y, cut.y, sizeof(double) * cut.n) == 0,
		  "sliced states equal the one-shot ones");
	CHECK(MixLearnTake(&whole, &a) == POLICY_OK &&
		  MixLearnTake(&cut, &b) == POLICY_OK && a.ok && b.ok &&
		  a.n == b.n && memcmp(a.coef, b.coef, sizeof(a.coef)) == 0,
		  "sliced coefficients equal the one-shot ones");
	CHECK(MixLearnFit(&c, mp, &pp, cost) == POLICY_OK && c.n == a.n &&
		  memcmp(a.coef, c.coef, sizeof(a.coef)) == 0 &&
		  MixLearnSameFit(&c.params, &pp), "MixLearnFit is the same fit");
	pp.mix_h = 0.01;
	CHECK(!MixLearnSameFit(&c.params, &pp), "another mh needs another fit");
	free(cost);
}

/*
 * The live refit slices the mixture's fit (MixFitStep): one case per call
 * must give exactly the one-shot fit, likelihoods included.
 */
void
TestMixtureSliced(void)
{
	enum
	{
		M = 120, K = 30
	};
	double	   *h = malloc(sizeof(double) * M * K);
	uint64_t	rng = 77;
	MixFitJob	whole,
				cut;
	MixPrior	a,
				b;
	int			calls = 0;

	ClusterRows(h, M, K, 0.03, &rng);
	h[5] = NAN;
	CHECK(MixFitBegin(&whole, h, M, K) == POLICY_OK &&
		  MixFitBegin(&cut, h, M, K) == POLICY_OK, "begin");
	CHECK(MixFitStep(&whole, INFINITY) == 1, "one step fits all");
	while (!MixFitStep(&cut, 1.0) && calls < 100000)
		calls++;
	/* 2 passes x 60 held-out rows (every 2nd) x 5 cases, then the last pick */
	CHECK(calls + 1 == 2 * 60 * 5 + 1, "one case per call: %d calls", calls + 1);
	CHECK(memcmp(whole.ll, cut.ll, sizeof(whole.ll)) == 0,
		  "sliced likelihoods equal the one-shot ones");
	MixFitTake(&whole, &a);
	MixFitTake(&cut, &b);
	CHECK(a.bw == b.bw && a.bw_shift == b.bw_shift && a.bw > 0,
		  "bandwidths %g/%g, sliced %g/%g", a.bw, a.bw_shift, b.bw, b.bw_shift);
	CHECK(memcmp(a.rows, b.rows, sizeof(double) * M * K) == 0, "rows");
	MixPriorFree(&b);
	CHECK(MixPriorFit(&b, h, M, K, 0.0) == POLICY_OK &&
		  b.bw == a.bw && b.bw_shift == a.bw_shift, "MixPriorFit is the same fit");
	CHECK(MixFitBegin(&cut, h, 1, K) == POLICY_BAD_INPUT, "one row refused");
	MixPriorFree(&b);
	TestRefitMixtureSliced(h, M, K, &a);
	TestMixLearnSliced(&a);
	TestRefitLearn(h, M, K);
	MixPriorFree(&a);
	free(h);
}

/*
 * The learned task score (mrg=2, src/core/mixlearn.c): the features of a hand
 * case, a fit on generated rows
 * that solves its ridge problem and follows the states' true remaining
 * regret, and a world that
 * fits the model on first use, scores a task by it per second and drops
 * it when its mixture is replaced.
 */
void
TestMixLearn(void)
{
	enum
	{
	K = 10, M = 30};
	double	   *h = malloc(sizeof(double) * M * K);
	double		score[K],
				w[M],
				off[M],
				x[MIXL_FEATURES],
				mx = 0.0,
				reg,
				w2 = 0.0;
	unsigned char avail[K];
	uint64_t	rng = 5;
	MixPrior	mp;
	MixLearn	ml,
				ml2;
	double	   *sx = malloc(sizeof(double) * MIXL_STATES * MIXL_FEATURES);
	double	   *sy = malloc(sizeof(double) * MIXL_STATES);
	double		grad[MIXL_FEATURES],
				sxy = 0.0,
				sxx = 0.0,
				syy = 0.0,
				my = 0.0;
	int			ns = 0;
	PolicyParams pp;
	GpPrior		prior;
	double		mu0[K],
				cov[K * K];
	DecisionWorld dw;
	DecisionTaskSpec s;
	DecisionTask *t;
	DecisionChoice c;


	/* rows: a shared shape plus noise; every third row has one star arm */
	for (int r = 0; r < M; r++)
		for (int k = 0; k < K; k++)
			h[r * K + k] = 0.5 + 0.02 * k + 0.05 * PolicyRandUniform(&rng) +
				(r % 3 == 0 && k == r % K ? 0.3 : 0.0);
	CHECK(MixPriorFit(&mp, h, M, K, 0.05) == POLICY_OK, "mixture");
	PolicyParseSpec("max_ei:acq=mix:mh=0:mrg=2", &pp, NULL, 0);
	CHECK(PolicyMixScore(&pp) && pp.mix_score == 2, "mrg=2 parsed");
	CHECK(PolicyParseSpec("max_ei:mrg=3", &pp, NULL, 0) != 0, "mrg=3 refused");
	PolicyParseSpec("max_ei:acq=mix:mh=0:mrg=2", &pp, NULL, 0);

	/* features of a hand state: one result 0.55 on arm 0 */
	for (int k = 0; k < K; k++)
	{
		score[k] = k == 0 ? 0.55 : NAN;
		avail[k] = k != 0;
	}
	MixWeights(&mp, &pp, score, w, off);
	reg = MixRemainingRegret(&mp, &pp, w, off, avail, 0.55);
	for (int k = 1; k < K; k++)
	{
		double		ei = 0.0;

		for (int r = 0; r < M; r++)
			if (w[r] > 1e-12)
				ei += w[r] * fmax(h[r * K + k] - 0.55, 0.0);
		mx = fmax(mx, ei);
	}
	for (int r = 0; r < M; r++)
		w2 += w[r] * w[r];
	MixLearnFeatures(&mp, &pp, w, off, avail, 0.55, 1, 3, x);
	CHECK(x[0] == 1.0 && x[7] == 0.55, "intercept and best");
	CHECK_NEAR(x[1], log(reg + 1e-4), 1e-9, "log remaining regret");
	CHECK_NEAR(x[2], log(mx + 1e-5), 1e-9, "log largest EI");
	CHECK_NEAR(x[4], log(2.0), 1e-12, "log runs");
	CHECK_NEAR(x[5], log(4.0), 1e-12, "log runs since the best improved");
	CHECK_NEAR(x[6], -log(w2), 1e-9, "log effective rows");

	/* the fit: deterministic, the ridge solution, and it ranks the states */
	CHECK(MixLearnFit(&ml, &mp, &pp, NULL) == POLICY_OK && ml.ok && ml.n > 100,
		  "fitted on %d states", ml.n);
	MixLearnFit(&ml2, &mp, &pp, NULL);
	CHECK(memcmp(ml.coef, ml2.coef, sizeof(ml.coef)) == 0, "deterministic");
	CHECK(MixLearnStates(&mp, &pp, NULL, sx, sy, &ns) == POLICY_OK && ns == ml.n,
		  "the fit's states");
	for (int j = 0; j < MIXL_FEATURES; j++)
		grad[j] = j > 0 ? MIXL_RIDGE * ns * ml.coef[j] : 0.0;
	for (int i = 0; i < ns; i++)
	{
		double		e = log(MixLearnPredict(&ml, sx + i * MIXL_FEATURES)) - sy[i];

		for (int j = 0; j < MIXL_FEATURES; j++)
			grad[j] += e * sx[i * MIXL_FEATURES + j];
		sxy += (e + sy[i]) * sy[i];
		sxx += (e + sy[i]) * (e + sy[i]);
		syy += sy[i] * sy[i];
		my += sy[i] / ns;
	}
	for (int j = 0; j < MIXL_FEATURES; j++)
		CHECK(fabs(grad[j]) < 1e-6 * ns, "ridge normal equation %d: %g", j, grad[j]);
	/* correlation of prediction and truth (same mean: the intercept) */
	CHECK((sxy - ns * my * my) /
		  sqrt((sxx - ns * my * my) * (syy - ns * my * my)) > 0.3,
		  "the prediction follows the true remaining regret");

	/* a world: fitted on first use, the score per second, reset */
	for (int k = 0; k < K; k++)
	{
		mu0[k] = 0.6;
		for (int j = 0; j < K; j++)
			cov[k * K + j] = k == j ? 0.02 : 0.0;
	}
	GpPriorInit(&prior, K, mu0, cov, 1e-4);
	PolicyParseSpec("max_ei:cost:acq=mix:mh=0:mrg=2", &pp, NULL, 0);
	DecisionWorldInit(&dw, K, NULL, NULL, &pp);
	DecisionSetPrior(&dw, DECISION_CLASSIFICATION, &prior);
	DecisionSetMixture(&dw, DECISION_CLASSIFICATION, &mp);
	memset(&s, 0, sizeof(s));
	s.tenant = DecisionAddTenant(&dw, 0);
	t = DecisionAddTask(&dw, &s);
	DecisionStart(&dw, t, 0);
	DecisionObserve(&dw, t, 0, 0.55, 1.0);
	DecisionEnd(&dw, t, 0, 0);
	CHECK(DecisionNext(&dw, &c) == 0 && dw.mix_learn[0] != NULL &&
		  dw.mix_learn[0]->ok && dw.mix_learn_fits == 1, "fitted on first use");
	MixLearnFeatures(&mp, &pp, w, off, avail, 0.55, 1, 0, x);
	CHECK_NEAR(dw.views[t->index].score,
			   MixLearnPredict(dw.mix_learn[0], x) / dw.views[t->index].cost,
			   1e-9, "task score: learned regret per second");
	DecisionSetMixture(&dw, DECISION_CLASSIFICATION, &mp);
	CHECK(dw.mix_learn[0] == NULL, "refitted after a new mixture");
	DecisionWorldFree(&dw);
	GpPriorFree(&prior);
	MixPriorFree(&mp);
	free(h);
	free(sx);
	free(sy);
}

/* The world uses the mixture's arm where one is installed, else the GP's. */
void
TestDecisionMixture(void)
{
	enum
	{
	K = 3, M = 4};
	double		h[M * K] = {0.9, 0.2, 0.3, 0.2, 0.8, 0.4, 0.9, 0.25, 0.3, 0.5, 0.1, 0.7};
	double		mu0[K] = {0.6, 0.4, 0.5},
				cov[K * K] = {0.04, 0, 0, 0, 0.01, 0, 0, 0, 0.04};
	GpPrior		prior;
	MixPrior	mp;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTask *t;
	DecisionChoice c;
	PolicyParams pp;

	GpPriorInit(&prior, K, mu0, cov, 1e-4);
	MixPriorFit(&mp, h, M, K, 0.05);
	PolicyParseSpec("rr:acq=mix:mh=0", &pp, NULL, 0);
	DecisionWorldInit(&w, K, NULL, NULL, &pp);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	memset(&s, 0, sizeof(s));
	s.tenant = DecisionAddTenant(&w, 0);
	t = DecisionAddTask(&w, &s);
	DecisionStart(&w, t, 0);
	DecisionObserve(&w, t, 0, 0.2, 1.0);
	DecisionEnd(&w, t, 0, 0);
	/* independent GP: arm 2 has the larger mean and variance */
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 2, "GP: arm 2");
	CHECK(DecisionSetMixture(&w, DECISION_CLASSIFICATION, &mp) == 0, "set mixture");
	/* the task matches row 1 (0.2 on arm 0), whose arm 1 is 0.8 */
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 1,
		  "mixture's arm 1, got %d", c.chosen.arm);
	DecisionSetMixture(&w, DECISION_CLASSIFICATION, NULL);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 2, "back to the GP");
	DecisionWorldFree(&w);
	MixPriorFree(&mp);
	GpPriorFree(&prior);
}

/*
 * The live scheduler's history mixture (src/core/refit.c): the refit cycle fits
 * one per kind from the kind's history rows and installs it into the
 * world; a decision under acq=mix there equals the decision of a world
 * built as easeml-replay builds a draw's (DecisionSetMixture of a mixture
 * fitted on the other rows only, the same GP prior), i.e. the task's own
 * row is no particle for it.  That the check can fail: the own row left in
 * the weights changes the decision, and so does no mixture at all.  A
 * second cycle replaces the mixture in place.
 */
void
TestLiveMixture(void)
{
	enum
	{
	K = 6, M = 9, MT = 12};
	const char *spec = "hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2";
	double		cells[MT * K],
				other[MT * K],
				cells2[MT * K];
	int64_t		row_task[MT] = {0};
	unsigned char row_kind[MT] = {0};
	uint64_t	rng = 23;
	RefitInput	in;
	RefitState	r;
	DecisionWorld live,
				ref,
				leak,
				gp;
	DecisionTask *t[4];
	DecisionChoice c[4];
	MixPrior	refmix;
	const MixPrior *lm;
	int			n_other = 0;

	/* seed rows: two families of data sets, each row a noisy copy */
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			cells[i * K + k] = (i % 2 ? 0.9 - 0.08 * k : 0.5 + 0.08 * k) +
				0.03 * PolicyRandUniform(&rng);
	/* task 101, active: two scores, the rest unknown */
	for (int k = 0; k < K; k++)
		cells[M * K + k] = k < 2 ? 0.52 + 0.08 * k : NAN;
	row_task[M] = 101;
	/* task 102, another tenant's finished task, and a regression task */
	for (int k = 0; k < K; k++)
	{
		cells[(M + 1) * K + k] = 0.55 + 0.07 * k;
		cells[(M + 2) * K + k] = 0.3;
	}
	row_task[M + 1] = 102;
	row_task[M + 2] = 103;
	row_kind[M + 2] = DECISION_REGRESSION;
	for (int i = 0; i < MT; i++)
		if (row_kind[i] == DECISION_CLASSIFICATION && row_task[i] != 101)
			memcpy(other + (size_t) n_other++ * K, cells + (size_t) i * K,
				   sizeof(double) * K);
	HistoryInput(&in, K, MT, cells, row_task, row_kind);

	/* no policy that may run uses the mixture: none is fitted */
	MakeWorld(&gp, K, "hybrid:cost", 1);
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &gp, 1.0) >= 0 && !r.live.have_mix[DECISION_CLASSIFICATION] &&
		  gp.mix[DECISION_CLASSIFICATION] == NULL, "no mixture without need_mix");
	RefitFree(&r);
	DecisionWorldFree(&gp);
	in.need_mix = 1;

	MakeWorld(&live, K, spec, 1);
	t[0] = AddTask(&live, 101, 0, NULL);
	for (int k = 0; k < 2; k++)
		DecisionObserve(&live, t[0], k, cells[M * K + k], 1.0);
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &live, 1.0) >= 0, "refit cycle");
	lm = &r.live.mix[DECISION_CLASSIFICATION];
	CHECK(r.live.have_mix[DECISION_CLASSIFICATION] && lm->m == M + 2 && lm->bw > 0,
		  "a mixture of the %d classification rows (m=%d bw=%g)", M + 2, lm->m, lm->bw);
	CHECK(!r.live.have_mix[DECISION_REGRESSION] && live.mix[DECISION_REGRESSION] == NULL,
		  "one regression row: no mixture of that kind");
	CHECK(live.mix[DECISION_CLASSIFICATION] == lm &&
		  live.mix_task[DECISION_CLASSIFICATION][M] == 101, "installed with its rows' tasks");
	CHECK(t[0]->own_prior == RefitOwnPrior(&r, 101) && t[0]->own_prior != NULL,
		  "the task's own GP prior");

	/* the replay's world: the same GP prior, a mixture of the other rows */
	CHECK(MixPriorFit(&refmix, other, n_other, K, lm->bw) == 0, "reference mixture");
	refmix.bw_shift = lm->bw_shift;
	MakeWorld(&ref, K, spec, 1);
	MakeWorld(&leak, K, spec, 1);
	MakeWorld(&gp, K, spec, 1);
	DecisionSetPrior(&ref, DECISION_CLASSIFICATION, t[0]->own_prior);
	DecisionSetPrior(&leak, DECISION_CLASSIFICATION, t[0]->own_prior);
	DecisionSetPrior(&gp, DECISION_CLASSIFICATION, t[0]->own_prior);
	DecisionSetMixture(&ref, DECISION_CLASSIFICATION, &refmix);
	DecisionSetMixture(&leak, DECISION_CLASSIFICATION, lm);	/* own row in */
	t[1] = AddTask(&ref, 101, 0, NULL);
	t[2] = AddTask(&leak, 101, 0, NULL);
	t[3] = AddTask(&gp, 101, 0, NULL);
	for (int k = 0; k < 2; k++)
	{
		DecisionObserve(&ref, t[1], k, cells[M * K + k], 1.0);
		DecisionObserve(&leak, t[2], k, cells[M * K + k], 1.0);
		DecisionObserve(&gp, t[3], k, cells[M * K + k], 1.0);
	}
	CHECK(DecisionNext(&live, &c[0]) == 0 && DecisionNext(&ref, &c[1]) == 0 &&
		  DecisionNext(&leak, &c[2]) == 0 && DecisionNext(&gp, &c[3]) == 0 &&
		  c[0].chosen.arm >= 2, "decisions (live arm %d)", c[0].chosen.arm);
	CHECK(c[0].chosen.arm == c[1].chosen.arm &&
		  fabs(live.views[0].ei - ref.views[0].ei) < 1e-12 &&
		  fabs(live.views[0].acq - ref.views[0].acq) < 1e-12,
		  "live = replay's decision: arm %d/%d, EI %.9g/%.9g", c[0].chosen.arm,
		  c[1].chosen.arm, live.views[0].ei, ref.views[0].ei);
	CHECK(fabs(leak.views[0].ei - live.views[0].ei) > 1e-6,
		  "the own row as a particle would change it (EI %.9g vs %.9g)",
		  leak.views[0].ei, live.views[0].ei);
	CHECK(fabs(gp.views[0].ei - ref.views[0].ei) > 1e-6 ||
		  c[3].chosen.arm != c[1].chosen.arm, "without the mixture it differs (EI %.9g vs %.9g, arm %d vs %d)", gp.views[0].ei, ref.views[0].ei, c[3].chosen.arm, c[1].chosen.arm);

	/* a second cycle (changed history) replaces the mixture in place */
	memcpy(cells2, cells, sizeof(cells));
	for (int k = 0; k < K; k++)
		cells2[(M + 1) * K + k] = 0.95 - 0.05 * k;
	in.cells = cells2;
	CHECK(RefitCycle(&r, &in, &live, 2.0) >= 0 && r.cycles == 2, "second cycle");
	CHECK(live.mix[DECISION_CLASSIFICATION] == lm && lm->m == M + 2 &&
		  fabs(lm->rows[(M + 1) * K] - 0.95) < 1e-12, "the new rows are installed");
	CHECK(DecisionNext(&live, &c[0]) == 0 && c[0].chosen.arm >= 2, "a decision on them");
	DecisionWorldFree(&live);
	DecisionWorldFree(&ref);
	DecisionWorldFree(&leak);
	DecisionWorldFree(&gp);
	MixPriorFree(&refmix);
	RefitFree(&r);
}
