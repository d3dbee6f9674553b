/*-------------------------------------------------------------------------
 *
 * test_decision.c
 *	  Unit tests of the decision module (src/core/decision_*.c) the live worker
 *	  and easeml-replay share: incremental task state against a rebuild,
 *	  the FIFO contract, fair shares, per-class costs, the posterior, the
 *	  task map, random decision sequences, and the stale views a live
 *	  install leaves (refreshed in batches).
 *
 * IDENTIFICATION
 *	  src/core/test/test_decision.c
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
#include "test.h"

/*
 * One random change to what the catalog says about a task: mostly a new
 * score, sometimes a changed or withdrawn one, runtimes (valid or not),
 * fallbacks and arm states.
 */
static void
ChangeTaskState(int K, double *score, double *seconds, double *fallback,
				unsigned char *state, uint64_t *rng)
{
	int			k = (int) (PolicyRandUniform(rng) * K);
	double		u = PolicyRandUniform(rng);
	const double odd[] = {-1.0, 0.0, INFINITY, -INFINITY, NAN};

	if (u < 0.5)
	{
		score[k] = isnan(score[k]) ? PolicyRandUniform(rng) : score[k];
		state[k] = DECISION_ARM_OBSERVED;
	}
	else if (u < 0.6)
		score[k] = PolicyRandUniform(rng) < 0.3 ? NAN : PolicyRandUniform(rng);
	else if (u < 0.75)
		seconds[k] = 1.0 + 10.0 * PolicyRandUniform(rng);
	else if (u < 0.8)
		seconds[k] = odd[(int) (PolicyRandUniform(rng) * 5)];
	else if (u < 0.9)
		fallback[k] = PolicyRandUniform(rng) < 0.2 ? -2.0 : 5.0 * PolicyRandUniform(rng);
	else
		state[k] = (unsigned char) (1 + (int) (PolicyRandUniform(rng) * 4));
}

/* Differences between two tasks' synced state (posteriors to 1e-8). */
static int
TaskDiffs(const DecisionTask *a, const DecisionTask *b, int K)
{
	int			bad = 0;

	for (int k = 0; k < K; k++)
	{
		bad += a->arm[k] != b->arm[k] || a->avail[k] != b->avail[k];
		bad += !(a->score[k] == b->score[k] || (isnan(a->score[k]) && isnan(b->score[k])));
		bad += !(a->seconds[k] == b->seconds[k] ||
				 (isnan(a->seconds[k]) && isnan(b->seconds[k])));
		bad += a->fallback[k] != b->fallback[k] || a->cost[k] != b->cost[k];
		bad += fabs(a->gp.mu[k] - b->gp.mu[k]) > 1e-8 ||
			fabs(a->gp.var[k] - b->gp.var[k]) > 1e-8;
	}
	return bad + (a->best != b->best || a->n_obs != b->n_obs || a->n_left != b->n_left);
}

/*
 * A task synced after every change equals, after each, a new task synced
 * once with the same state: DecisionSyncTask's shortcuts for unchanged
 * scores, runtimes and states miss nothing.
 */
void
TestDecisionSync(void)
{
	enum
	{
	K = 24};
	double		cov[K * K],
				mu0[K],
				score[K],
				seconds[K],
				fallback[K],
				given[K];
	unsigned char state[K];
	uint64_t	rng = 99;
	GpPrior		prior;
	DecisionWorld wa;
	DecisionTask *a;
	DecisionTaskState ts;
	int			bad = 0;

	RandomPsd(cov, K, 4, &rng);
	for (int k = 0; k < K; k++)
	{
		mu0[k] = 0.5;
		score[k] = seconds[k] = NAN;
		fallback[k] = given[k] = 1.0;
		state[k] = DECISION_ARM_AVAILABLE;
	}
	CHECK(GpPriorInit(&prior, K, mu0, cov, 1e-3) == 0, "prior");
	MakeWorld(&wa, K, "hybrid", 1);
	DecisionSetPrior(&wa, DECISION_CLASSIFICATION, &prior);
	a = AddTask(&wa, 1, 0, NULL);
	memset(&ts, 0, sizeof(ts));
	ts.score = score;
	ts.state = state;
	for (int step = 0; step < 400; step++)
	{
		DecisionWorld wb;
		DecisionTask *b;

		ChangeTaskState(K, score, seconds, fallback, state, &rng);
		ts.seconds = step % 17 == 16 ? NULL : seconds;
		ts.fallback_cost = step % 3 == 0 ? fallback : NULL;
		if (ts.fallback_cost)
			memcpy(given, fallback, sizeof(given));
		DecisionSyncTask(&wa, a, &ts);
		/* a new task told the same, fallbacks as a last had them */
		MakeWorld(&wb, K, "hybrid", 1);
		DecisionSetPrior(&wb, DECISION_CLASSIFICATION, &prior);
		b = AddTask(&wb, 1, 0, NULL);
		ts.fallback_cost = given;
		DecisionSyncTask(&wb, b, &ts);
		bad += TaskDiffs(a, b, K) > 0;
		DecisionWorldFree(&wb);
	}
	CHECK(bad == 0, "task synced step by step differs from one synced once: %d steps", bad);
	CHECK(a->n_obs > 5 && a->n_left > 0, "the test saw scores (%d) and free arms", a->n_obs);
	DecisionWorldFree(&wa);
	GpPriorFree(&prior);
}

/* Decide, start, and return the chosen (task id, arm) as id * 100 + arm. */
static int64_t
NextAndStart(DecisionWorld *w)
{
	DecisionChoice c;
	DecisionTask *t;

	if (DecisionNext(w, &c) != 0 || c.chosen.task < 0)
		return -1;
	t = w->tasks[c.chosen.task];
	DecisionStart(w, t, c.chosen.arm);
	return t->id * 100 + c.chosen.arm;
}

/*
 * fifo through the world: never-served tasks first (lowest id on ties),
 * untried arms in catalog order, never a running, observed, retired or
 * ineligible arm; an interrupted arm comes back.
 */
void
TestDecisionFifo(void)
{
	const int	K = 4;
	double		mu[4] = {0.5, 0.5, 0.5, 0.5};
	unsigned char elig[4] = {0, 1, 1, 1};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *a,
			   *b;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "fifo", 2);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	a = AddTask(&w, 10, 0, NULL);
	b = AddTask(&w, 11, 1, elig);
	CHECK(NextAndStart(&w) == 1000, "fifo: task 10, arm 0");
	CHECK(NextAndStart(&w) == 1101, "fifo: task 11 skips its ineligible arm 0");
	CHECK(NextAndStart(&w) == 1001, "fifo: task 10 again, arm 1 (arm 0 running)");
	DecisionObserve(&w, a, 0, 0.7, 1.0);
	DecisionEnd(&w, a, 1, 0);	/* failed: retired */
	DecisionEnd(&w, b, 1, 1);	/* interrupted: back */
	CHECK(NextAndStart(&w) == 1101, "fifo: the interrupted arm is tried again");
	CHECK(NextAndStart(&w) == 1002, "fifo: observed and failed arms skipped");
	CHECK(a->n_left == 1 && a->n_obs == 1 && a->n_running == 1, "counters %d %d %d",
		  a->n_left, a->n_obs, a->n_running);
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Fair shares: with 2 slots, a tenant with many tasks gets at most one
 * slot while another tenant waits, and every slot when it waits alone; a
 * tenant's own cap and max_runs hold; a blocked task never runs.
 */
void
TestDecisionFairShare(void)
{
	const int	K = 3;
	double		mu[3] = {0.5, 0.6, 0.7};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *a1,
			   *a2,
			   *b;
	DecisionChoice c;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "hybrid:cost", 2);
	w.slots = 2;
	w.tenant_cap = -1;
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	a1 = AddTask(&w, 1, 0, NULL);
	a2 = AddTask(&w, 2, 0, NULL);
	DecisionStart(&w, a1, 0);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0 &&
		  w.tasks[c.chosen.task]->tenant == 0, "alone, tenant 0 may take the second slot");
	b = AddTask(&w, 3, 1, NULL);
	CHECK(DecisionSharedCap(&w) == INT_MAX, "one tenant waited: no shared cap yet");
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task == b->index,
		  "another tenant waits: tenant 0 is at its fair share (got task %d)", c.chosen.task);
	CHECK(DecisionSharedCap(&w) == 1, "fair share of 2 slots over 2 tenants: 1");
	CHECK(!DecisionEligible(&w, a2), "tenant 0's other task waits");
	DecisionBlock(&w, b, 1);
	CHECK(DecisionNext(&w, &c) == 0 && w.tasks[c.chosen.task]->tenant == 0,
		  "the other tenant blocked: tenant 0 may use the slot");
	DecisionBlock(&w, b, 0);
	DecisionSetTenantCap(&w, 1, 1);
	DecisionStart(&w, b, 0);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0 &&
		  w.tasks[c.chosen.task]->tenant == 0, "tenant 1 at its own cap of 1");
	DecisionEnd(&w, b, 0, 1);
	DecisionSetMaxRuns(&w, b, 1, 1);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task != b->index, "max_runs reached");
	w.tenant_cap = 0;
	DecisionStart(&w, a2, 1);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0, "no shared cap: tenant 0 runs a third");
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Fair shares while every slot is busy (the run budget): a tenant holding
 * both slots is over its share once a second tenant wants a run, that
 * tenant is starved; nobody is once each holds one, or with no shared cap,
 * or when the newcomer has nothing it could run.
 */
void
TestDecisionFairSharesFull(void)
{
	const int	K = 3;
	double		mu[3] = {0.5, 0.6, 0.7};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *a1,
			   *b;
	unsigned char starved[2],
				over[2];

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "hybrid:cost", 2);
	w.slots = 2;
	w.tenant_cap = -1;
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	a1 = AddTask(&w, 1, 0, NULL);
	DecisionStart(&w, a1, 0);
	DecisionStart(&w, a1, 1);
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0],
		  "alone, two runs are not over any share");
	b = AddTask(&w, 2, 1, NULL);
	CHECK(DecisionFairShares(&w, starved, over) == 1 && starved[1] && !starved[0] &&
		  over[0] && !over[1], "a newcomer is starved, the holder of both slots over its share");
	DecisionBlock(&w, b, 1);
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0],
		  "a newcomer with nothing to run starves nobody");
	DecisionBlock(&w, b, 0);
	DecisionEnd(&w, a1, 1, 1);
	DecisionStart(&w, b, 0);
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0] && !over[1],
		  "one slot each: nobody starved or over");
	DecisionEnd(&w, b, 0, 1);
	DecisionStart(&w, a1, 1);
	w.tenant_cap = 0;
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0],
		  "no shared cap: no fair share to enforce");
	w.tenant_cap = -1;

	/*
	 * A tenant's own queue counts against its share (issue 22): tenant 0
	 * holds both slots with runs it queued (the world counts a queued run
	 * as in flight; external takes the not yet started ones back out of
	 * what it holds), its task has nothing left, and tenant 1 waits.
	 */
	DecisionBlock(&w, a1, 1);
	DecisionBlock(&w, b, 1);
	CHECK(DecisionTenantCap(&w, 0) == INT_MAX, "nobody else waits: no cap");
	DecisionSetTenantQueued(&w, 0, 3);
	DecisionSetTenantExternal(&w, 0, 0);
	CHECK(DecisionTenantCap(&w, 0) == INT_MAX, "a queue alone takes every slot");
	DecisionBlock(&w, b, 0);
	CHECK(DecisionTenantCap(&w, 0) == 1 && DecisionTenantCap(&w, 1) == 1,
		  "a queue and another tenant's task: one slot each");
	CHECK(DecisionFairShares(&w, starved, over) == 1 && starved[1] && over[0],
		  "the queue's holder of both slots is over its share, the other starved");
	DecisionSetTenantExternal(&w, 0, -1);
	CHECK(DecisionFairShares(&w, starved, over) == 1 && !over[0] && starved[1],
		  "a queued run counted in flight is not a slot held");
	DecisionBlock(&w, b, 1);
	DecisionSetTenantQueued(&w, 1, 1);
	CHECK(DecisionTenantCap(&w, 0) == 1 && DecisionFairShares(&w, starved, over) == 1 &&
		  starved[1], "a tenant whose only work is its queue waits for its share too");
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Per-class arms (DecisionSetArmPerClass): the refit learns their time per
 * class, and a task of 10 classes costs 10 times a binary task on them,
 * the same on the other arms.
 */
void
TestDecisionPerClassCost(void)
{
	const int	K = 2,
				mc = 12;
	double		rt[12 * 2],
				sz[12 * 3];
	unsigned char per_class[2] = {1, 0};
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTask *a,
			   *b;
	int			steps = 0;

	for (int i = 0; i < mc; i++)
	{
		double		classes = 2 + (i % 5) * 2;

		sz[3 * i] = 100 + 400 * i;
		sz[3 * i + 1] = 10;
		sz[3 * i + 2] = classes;
		/* 0.05 s of start and load, then work */
		rt[i * K] = 0.05 + 1e-4 * sz[3 * i] * (classes > 2 ? classes : 1);
		rt[i * K + 1] = 0.05 + 1e-4 * sz[3 * i];
	}
	memset(&in, 0, sizeof(in));
	in.K = K;
	in.cost.mc = mc;
	in.cost.seconds = rt;
	in.cost.sizes = sz;
	in.per_class = per_class;
	MakeWorld(&w, K, "hybrid:cost", 1);
	CHECK(DecisionSetArmPerClass(&w, per_class) == 0, "per-class arms set");
	RefitInit(&r, K, 0);
	CHECK(RefitMaybeStart(&r, &in, 0.0) == 1, "refit started");
	while (RefitStep(&r, &w) == 0 && steps++ < 100)
		;
	CHECK(r.have_live && r.live.have_cost, "cost model fitted");
	memset(&s, 0, sizeof(s));
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 1000;
	s.features = 10;
	s.id = 1;
	s.classes = 10;
	a = DecisionAddTask(&w, &s);
	s.id = 2;
	s.classes = 2;
	b = DecisionAddTask(&w, &s);
	/* the true times: 1.05 s and 0.15 s on arm 0, 0.15 s on arm 1 */
	CHECK(a && fabs(log(a->cost[0] / 1.05)) < 0.2,
		  "per-class arm, 10 classes: %g s for 1.05", a ? a->cost[0] : NAN);
	CHECK(b && fabs(log(b->cost[0] / 0.15)) < 0.2,
		  "per-class arm, 2 classes: %g s for 0.15", b ? b->cost[0] : NAN);
	CHECK(a && b && fabs(a->cost[1] / b->cost[1] - 1.0) < 0.05,
		  "other arm: classes do not matter (got %g)", a && b ? a->cost[1] / b->cost[1] : NAN);
	CHECK(fabs(w.cost_overhead - 0.8 * 0.06) < 1e-9,
		  "overhead: 0.8 x the shortest run (%g)", w.cost_overhead);
	DecisionWorldFree(&w);
	RefitFree(&r);
}

/*
 * The world's posterior is the closed-form one, whatever the order of
 * results; a new prior rebuilds it; kinds never share a prior and a
 * regression task never gets a classification-only arm.
 */
void
TestDecisionPosterior(void)
{
	enum
	{
	K = 6};
	double		cov[K * K],
				mu0[K],
				mu[K],
				var[K];
	unsigned char kinds[K] = {1, 1, 3, 3, 2, 2};
	int			arms[3] = {4, 2, 3};
	double		y[3] = {0.9, 0.4, 0.55};
	uint64_t	rng = 5;
	GpPrior		cls,
				reg,
				own;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTask *r;
	PolicyParams pp;

	RandomPsd(cov, K, 3, &rng);
	for (int k = 0; k < K; k++)
		mu0[k] = 0.3 + 0.1 * k;
	GpPriorInit(&cls, K, mu0, cov, 1e-3);
	for (int k = 0; k < K; k++)
		mu0[k] = 0.8 - 0.1 * k;
	GpPriorInit(&reg, K, mu0, cov, 1e-3);
	GpPriorInit(&own, K, mu0, cov, 2e-3);
	PolicyParamsDefault(&pp, POLICY_HYBRID);
	DecisionWorldInit(&w, K, kinds, NULL, &pp);
	DecisionAddTenant(&w, 0);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &cls);
	memset(&s, 0, sizeof(s));
	s.id = 7;
	s.kind = DECISION_REGRESSION;
	r = DecisionAddTask(&w, &s);
	CHECK(r->arm[0] == DECISION_ARM_INELIGIBLE && r->arm[1] == DECISION_ARM_INELIGIBLE &&
		  r->arm[2] == DECISION_ARM_AVAILABLE, "regression task: classification-only arms out");
	CHECK(r->gp.prior == NULL, "no regression prior yet: no posterior");
	DecisionSetPrior(&w, DECISION_REGRESSION, &reg);
	CHECK(r->gp.prior == &reg, "regression prior in use");
	for (int i = 2; i >= 0; i--)
		DecisionObserve(&w, r, arms[i], y[i], 0);
	GpPosterior(&reg, 3, arms, y, mu, var);
	for (int k = 0; k < K; k++)
	{
		CHECK_NEAR(r->gp.mu[k], mu[k], 1e-9, "world posterior mean");
		CHECK_NEAR(r->gp.var[k], var[k], 1e-9, "world posterior variance");
	}
	DecisionTaskSetPrior(&w, r, &own);
	GpPosterior(&own, 3, arms, y, mu, var);
	CHECK_NEAR(r->gp.mu[5], mu[5], 1e-9, "own prior rebuilds the posterior");
	/* a better score of an arm run again replaces the first */
	DecisionObserve(&w, r, 2, 0.8, 0);
	y[1] = 0.8;
	GpPosterior(&own, 3, arms, y, mu, var);
	CHECK_NEAR(r->gp.mu[5], mu[5], 1e-9, "one score per arm, the better one");
	CHECK(r->n_obs == 3 && r->best == 0.9, "n_obs %d best %g", r->n_obs, r->best);
	DecisionWorldFree(&w);
	GpPriorFree(&cls);
	GpPriorFree(&reg);
	GpPriorFree(&own);
}

/* Two views are the same decision, bit for bit. */
static int
ViewSame(const PolicyTenantView *a, const PolicyTenantView *b)
{
	return a->arm == b->arm &&
		memcmp(&a->mu, &b->mu, sizeof(double)) == 0 &&
		memcmp(&a->sigma, &b->sigma, sizeof(double)) == 0 &&
		memcmp(&a->cost, &b->cost, sizeof(double)) == 0 &&
		memcmp(&a->acq, &b->acq, sizeof(double)) == 0 &&
		memcmp(&a->ei, &b->ei, sizeof(double)) == 0 &&
		memcmp(&a->score, &b->score, sizeof(double)) == 0;
}

/* Tasks whose views differ between two worlds of the same tasks. */
static int
ViewsDiffer(const DecisionWorld *a, const DecisionWorld *b)
{
	int			n = 0;

	for (int i = 0; i < a->n_tasks && i < b->n_tasks; i++)
		n += !ViewSame(&a->views[i], &b->views[i]);
	return n + abs(a->n_tasks - b->n_tasks);
}

/*
 * DecisionWorld.installing (the live worker's refit steps): a refit's
 * install leaves the views of unchanged tasks stale instead of refreshing
 * every task in the next decision.  A decision then refreshes at most DECISION_STALE_PICKS
 * of them (the picked ones), a task that changes is refreshed at once,
 * and after DecisionRefreshStale in batches every view is bit for bit the
 * one an eager world computes from scratch under the new models.
 */
void
TestLazyInstall(void)
{
	enum
	{
	K = 6, M = 9, N = 30, MT = M + N, BATCH = 4};
	const char *spec = "hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2";
	double		cells[MT * K],
				cells2[MT * K];
	int64_t		row_task[MT] = {0};
	unsigned char row_kind[MT] = {0};
	uint64_t	rng = 31;
	RefitInput	in;
	RefitState	re,
				rl;
	DecisionWorld eager,
				lazy;
	PolicyTenantView before[N];
	DecisionChoice c;
	int			stale,
				calls = 0,
				left;
	int64_t		n0;

	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			cells[i * K + k] = (i % 2 ? 0.9 - 0.08 * k : 0.5 + 0.08 * k) +
				0.03 * PolicyRandUniform(&rng);
	MakeWorld(&eager, K, spec, N / 3);
	MakeWorld(&lazy, K, spec, N / 3);
	for (int j = 0; j < N; j++)
	{
		DecisionTask *te = AddTask(&eager, 1 + j, j / 3, NULL);
		DecisionTask *tl = AddTask(&lazy, 1 + j, j / 3, NULL);

		row_task[M + j] = 1 + j;
		for (int k = 0; k < K; k++)
		{
			double		v = (j % 2 ? 0.85 - 0.07 * k : 0.45 + 0.07 * k) +
				0.05 * PolicyRandUniform(&rng);

			cells[(M + j) * K + k] = k < 2 + j % 2 ? v : NAN;
			if (k < 2 + j % 2)
			{
				DecisionObserve(&eager, te, k, v, 1.0);
				DecisionObserve(&lazy, tl, k, v, 1.0);
			}
		}
	}
	HistoryInput(&in, K, MT, cells, row_task, row_kind);
	in.need_mix = 1;
	RefitInit(&re, K, 0);
	RefitInit(&rl, K, 0);
	lazy.installing = 1;		/* as the live worker runs its refit steps */
	CHECK(RefitCycle(&re, &in, &eager, 1.0) >= 0 &&
		  RefitCycle(&rl, &in, &lazy, 1.0) >= 0, "first cycles");
	/* views never computed are not stale: they are made at once */
	CHECK(lazy.n_stale == 0, "nothing stale before the first views (%d)", lazy.n_stale);
	CHECK(DecisionNext(&eager, &c) == 0 && DecisionNext(&lazy, &c) == 0 &&
		  c.chosen.task >= 0 && ViewsDiffer(&eager, &lazy) == 0,
		  "first decisions: the same views");

	/* a second cycle on a changed history installs new models */
	memcpy(cells2, cells, sizeof(cells));
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			cells2[i * K + k] = 1.0 - cells[i * K + k];
	in.cells = cells2;
	memcpy(before, lazy.views, sizeof(before));
	CHECK(RefitCycle(&re, &in, &eager, 2.0) >= 0 &&
		  RefitCycle(&rl, &in, &lazy, 2.0) >= 0, "second cycles");
	lazy.installing = 0;
	CHECK(lazy.n_stale == N && eager.n_stale == 0,
		  "every view stale in the lazy world only (%d, %d)", lazy.n_stale,
		  eager.n_stale);
	n0 = eager.n_refreshed;
	CHECK(DecisionNext(&eager, &c) == 0 && eager.n_refreshed - n0 == N,
		  "eager decision: %d refreshes", (int) (eager.n_refreshed - n0));
	CHECK(ViewsDiffer(&eager, &lazy) > N / 2,
		  "the new models change most views (%d of %d)",
		  ViewsDiffer(&eager, &lazy), N);
	stale = lazy.n_stale;
	n0 = lazy.n_refreshed;
	CHECK(DecisionNext(&lazy, &c) == 0 && c.chosen.task >= 0, "lazy decision");
	CHECK(stale - lazy.n_stale >= 1 && stale - lazy.n_stale <= DECISION_STALE_PICKS &&
		  lazy.n_refreshed - n0 == stale - lazy.n_stale,
		  "a decision refreshes 1..%d views, not %d (%d)", DECISION_STALE_PICKS,
		  stale, (int) (lazy.n_refreshed - n0));
	for (int i = 0, bad = 0; i < N; i++)
	{
		const PolicyTenantView *v = &lazy.views[i];

		if (lazy.tasks[i]->stale ? !ViewSame(v, &before[i]) :
			!ViewSame(v, &eager.views[i]))
			bad++;
		if (i == N - 1)
			CHECK(bad == 0, "stale views are the old ones, refreshed ones the new (%d bad)", bad);
	}
	CHECK(!lazy.tasks[c.chosen.task]->stale &&
		  ViewSame(&lazy.views[c.chosen.task], &eager.views[c.chosen.task]),
		  "the chosen task's view is the new models'");

	/* a stale task that changes is refreshed by the next decision */
	for (int i = 0; i < N; i++)
		if (lazy.tasks[i]->stale)
		{
			stale = lazy.n_stale;
			DecisionObserve(&eager, eager.tasks[i], 5, 0.7, 1.0);
			DecisionObserve(&lazy, lazy.tasks[i], 5, 0.7, 1.0);
			CHECK(DecisionNext(&eager, &c) == 0 && DecisionNext(&lazy, &c) == 0 &&
				  !lazy.tasks[i]->stale && lazy.n_stale < stale &&
				  ViewSame(&lazy.views[i], &eager.views[i]),
				  "a changed stale task is refreshed under the new models");
			break;
		}
	/* a stale task leaves the world */
	for (int i = 0; i < lazy.n_tasks; i++)
		if (lazy.tasks[i]->stale)
		{
			stale = lazy.n_stale;
			DecisionRemoveTask(&eager, eager.tasks[i]);
			DecisionRemoveTask(&lazy, lazy.tasks[i]);
			CHECK(lazy.n_stale == stale - 1, "a removed task is no longer stale");
			break;
		}
	/* the rest in batches, off the decision path */
	stale = lazy.n_stale;
	while ((left = DecisionRefreshStale(&lazy, BATCH)) > 0 && calls < 100)
		calls++;
	calls++;
	CHECK(left == 0 && calls == (stale + BATCH - 1) / BATCH,
		  "%d stale views in %d batches of %d (left %d)", stale, calls, BATCH, left);
	CHECK(DecisionNext(&eager, &c) == 0 && DecisionNext(&lazy, &c) == 0 &&
		  ViewsDiffer(&eager, &lazy) == 0, "then every view is the eager world's (%d differ)",
		  ViewsDiffer(&eager, &lazy));
	CHECK(DecisionRefreshStale(&lazy, BATCH) == 0, "nothing left to refresh");
	DecisionWorldFree(&eager);
	DecisionWorldFree(&lazy);
	RefitFree(&re);
	RefitFree(&rl);
}

/* Tasks by id survive many additions and removals (the id map). */
void
TestDecisionMap(void)
{
	enum
	{
	K = 2, N = 600};
	double		mu[K] = {0.5, 0.5};
	GpPrior		prior;
	DecisionWorld w;
	unsigned char present[N];
	uint64_t	rng = 17;
	int			bad = 0;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "rr", 3);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	memset(present, 0, sizeof(present));
	for (int step = 0; step < 4000; step++)
	{
		int			id = (int) (PolicyRandUniform(&rng) * N);
		DecisionTask *t = DecisionFindTask(&w, id * 7919 + 3);

		bad += (t != NULL) != present[id];
		if (t)
			DecisionRemoveTask(&w, t);
		else
			CHECK(AddTask(&w, id * 7919 + 3, id % 3, NULL) != NULL, "add %d", id);
		present[id] = !present[id];
	}
	for (int id = 0; id < N; id++)
	{
		DecisionTask *t = DecisionFindTask(&w, id * 7919 + 3);

		bad += (t != NULL) != present[id] || (t && w.tasks[t->index] != t);
	}
	CHECK(bad == 0, "id map: %d wrong lookups", bad);
	CHECK(AddTask(&w, 3, 0, NULL) == NULL || present[0] == 0, "a repeated id is refused");
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/* End one run in flight: a result (80%), an interruption or a failure. */
static void
EndRandomRun(DecisionWorld *w, uint64_t *rng, int step)
{
	for (int i = 0; i < w->n_tasks; i++)
	{
		DecisionTask *t = w->tasks[(i + step) % w->n_tasks];

		for (int k = 0; k < w->K; k++)
			if (t->arm[k] == DECISION_ARM_RUNNING)
			{
				double		u = PolicyRandUniform(rng);

				if (u < 0.8)
					DecisionObserve(w, t, k, PolicyRandUniform(rng), 1 + u);
				else
					DecisionEnd(w, t, k, u < 0.9);
				return;
			}
	}
}

/* Did the last DecisionNext take PolicyIndexPick's O(n) path? */
static int
PickFallsBack(const DecisionWorld *w)
{
	const PolicyIndex *ix = &w->index;
	const PolicyParams *p = &w->params;

	if (p->kind == POLICY_RR || p->kind == POLICY_POPULAR || p->kind == POLICY_FIFO)
		return 0;
	return (ix->n_unserved > 0 && ix->n_unserved < ix->n_elig) ||
		(ix->n_busy > 0 && ix->n_busy == ix->n_elig) ||
		(p->kind == POLICY_HYBRID && ix->n_unserved > 1);
}

/*
 * Random worlds: DecisionNext (incremental, PolicyIndex) picks exactly
 * what a fresh scan of freshly computed views picks, for every policy, as
 * runs start, succeed, fail and tasks come and go; runner-ups are other
 * eligible tasks and other available arms, best first.
 */
void
TestDecisionRandom(void)
{
	enum
	{
	K = 8, N = 12};
	const char *specs[] = {"hybrid:cost", "max_ei:cost", "rr", "tenant_bo", "popular",
	"max_gap", "hybrid:cost:s=2:w=30", "default"};
	double		mu0[K];
	GpPrior		prior;
	uint64_t	rng = 11;

	for (int k = 0; k < K; k++)
		mu0[k] = 0.4 + 0.05 * k;
	DiagPrior(&prior, K, mu0);
	for (size_t q = 0; q < sizeof(specs) / sizeof(specs[0]); q++)
	{
		DecisionWorld w;
		int			mismatches = 0,
					bad_runners = 0,
					fast = 0;

		MakeWorld(&w, K, specs[q], 4);
		w.slots = 3;
		w.tenant_cap = q % 2 ? 0 : -1;	/* without a cap, busy tasks compete */
		w.explain = 1;
		DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
		for (int i = 0; i < N; i++)
			AddTask(&w, 100 + i, i % 4, NULL);
		for (int step = 0; step < 400 && w.n_tasks > 0; step++)
		{
			DecisionChoice c;
			PolicyTenantView *v;
			uint64_t	r2;
			int			expect,
						in_flight = 0;

			for (int i = 0; i < w.n_tasks; i++)
				in_flight += w.tasks[i]->n_running;
			if (in_flight >= w.slots)
			{
				EndRandomRun(&w, &rng, step);
				continue;
			}
			CHECK(DecisionNext(&w, &c) == 0, "next");
			fast += !PickFallsBack(&w);
			/* the same pick from scratch */
			v = calloc(w.n_tasks, sizeof(PolicyTenantView));
			for (int i = 0; i < w.n_tasks; i++)
			{
				DecisionTask *t = w.tasks[i];

				v[i] = w.views[i];
				PolicyBestArm(&w.params, K, t->gp.mu, t->gp.var, t->cost, t->avail,
							  prior.mu0, &v[i]);
				if (!DecisionEligible(&w, t))
					v[i].arm = -1;
			}
			r2 = 0;
			expect = PolicyPickTenant(&w.params, w.n_tasks, v, w.decision_no, &r2, NULL);
			mismatches += expect != c.chosen.task ||
				(expect >= 0 && v[expect].arm != c.chosen.arm);
			for (int i = 0; i < c.n_runner_tasks; i++)
				bad_runners += c.runner_tasks[i].task == c.chosen.task ||
					v[c.runner_tasks[i].task].arm < 0;
			for (int i = 0; i < c.n_runner_arms; i++)
				bad_runners += c.runner_arms[i].arm == c.chosen.arm ||
					!w.tasks[c.chosen.task]->avail[c.runner_arms[i].arm] ||
					(i > 0 && c.runner_arms[i].acq > c.runner_arms[i - 1].acq);
			free(v);
			if (c.chosen.task >= 0)
				DecisionStart(&w, w.tasks[c.chosen.task], c.chosen.arm);
			else
				EndRandomRun(&w, &rng, step);
			if (step % 97 == 50)
				DecisionRemoveTask(&w, w.tasks[step % w.n_tasks]);
		}
		CHECK(fast > 50, "%s: the index's fast path was taken %d times", specs[q], fast);
		CHECK(mismatches == 0, "%s: world vs scan, %d mismatches", specs[q], mismatches);
		CHECK(bad_runners == 0, "%s: %d bad runner-ups", specs[q], bad_runners);
		DecisionWorldFree(&w);
	}
	GpPriorFree(&prior);
}
