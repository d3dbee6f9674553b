/*-------------------------------------------------------------------------
 *
 * test_refit.c
 *	  Unit tests of the refit cycle (src/core/refit.c) and the auto policy
 *	  (src/core/autopolicy.c): two refits in a row, the block auto cuts out of a
 *	  history with gaps, its choice against ReplayAutoChoose's.
 *
 * IDENTIFICATION
 *	  src/core/test/test_refit.c
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
#include "core/autopolicy.h"
#include "core/replay.h"
#include "test.h"

/*
 * A second refit cycle installs new priors and a new cost model into the
 * structs of the first (the live set keeps its addresses): the world's
 * posteriors and costs must be those of a world that only saw the second.
 */
void
TestRefitTwice(void)
{
	const int	K = 3,
				m = 10;
	double		h1[30],
				h2[30],
				rt1[30],
				rt2[30],
				sz[30];
	int64_t		rows_task[10] = {0};
	unsigned char rows_kind[10] = {0};
	RefitInput	in1,
				in2;
	RefitState	r,
				fresh;
	DecisionWorld w,
				w2;
	DecisionTask *t,
			   *t2;
	uint64_t	rng = 11;
	double		worst = 0;

	for (int i = 0; i < m; i++)
	{
		sz[3 * i] = 100 + 100 * i;
		sz[3 * i + 1] = 5;
		sz[3 * i + 2] = 2;
		for (int k = 0; k < K; k++)
		{
			h1[i * K + k] = 0.5 + 0.3 * PolicyRandUniform(&rng);
			h2[i * K + k] = 0.2 + 0.1 * k + 0.05 * PolicyRandUniform(&rng);
			rt1[i * K + k] = 0.01 * sz[3 * i] * (1 + k);
			rt2[i * K + k] = 0.5 * sz[3 * i] * (3 - k) * (1 + PolicyRandUniform(&rng));
		}
	}
	HistoryInput(&in1, K, m, h1, rows_task, rows_kind);
	in1.cost.mc = m;
	in1.cost.seconds = rt1;
	in1.cost.sizes = sz;
	in2 = in1;
	in2.cells = h2;
	in2.cost.seconds = rt2;

	MakeWorld(&w, K, "hybrid:cost", 1);
	MakeWorld(&w2, K, "hybrid:cost", 1);
	t = AddTask(&w, 1, 0, NULL);
	t2 = AddTask(&w2, 1, 0, NULL);
	RefitInit(&r, K, 0);
	RefitInit(&fresh, K, 0);
	CHECK(RefitCycle(&r, &in1, &w, 1.0) >= 0, "first cycle");
	DecisionObserve(&w, t, 0, 0.9, 2.0);
	DecisionObserve(&w2, t2, 0, 0.9, 2.0);
	CHECK(RefitCycle(&r, &in2, &w, 2.0) >= 0, "second cycle");
	CHECK(RefitCycle(&fresh, &in2, &w2, 2.0) >= 0, "fresh cycle");
	for (int k = 0; k < K; k++)
	{
		worst = fmax(worst, fabs(t->gp.mu[k] - t2->gp.mu[k]));
		worst = fmax(worst, fabs(t->gp.var[k] - t2->gp.var[k]));
		worst = fmax(worst, fabs(log(t->cost[k]) - log(t2->cost[k])));
	}
	CHECK(worst < 1e-9, "refit twice: posterior and costs of the new models (diff %g)", worst);
	DecisionWorldFree(&w);
	DecisionWorldFree(&w2);
	RefitFree(&r);
	RefitFree(&fresh);
}

/*
 * The "auto" policy's choice on an installed history (src/core/autopolicy.c):
 * it replays the block of complete rows it cuts out of the history, with
 * the code and seeds every "default" policy of easeml-replay uses, so its
 * choice and scores equal ReplayAutoChoose's on that block; when the best
 * model is 1,000 times the cost of one almost as good, "popular model
 * first" (the prior mean's order, blind to cost) must lose; the refit
 * cycle installs the choice, and a cycle whose inputs (block, slots,
 * options) did not change keeps it without a replay.
 */
void
TestAutoPolicy(void)
{
	enum
	{
	K = 6, M = 16, MT = 19};
	double		cells[MT * K],
				rt[M * K],
				sz[M * 3],
				block[M * (K - 1)],
				bcost[M * (K - 1)],
				bsize[M * 2],
				scores[REPLAY_AUTO_MAX];
	int64_t		row_task[MT],
				cost_task[M];
	unsigned char row_kind[MT];
	int			choice = -1,
				reused = -1,
				steps = 0,
				pop = -1,
				rc;
	RefitInput	in;
	AutoPolicyJob job;
	AutoPolicyResult res;
	ReplayAutoInput ain;
	RefitState	r;
	DecisionWorld w;
	uint64_t	rng = 5;
	char		err[256];

	/*
	 * 16 classification tasks know models 0-4: model 0 is the best and
	 * costs 1,000 s, model 1 is 0.001 below it and costs 1 s; model 5 is
	 * known in 3 rows only.  Two regression rows and a partial row are
	 * not in the block.
	 */
	for (int i = 0; i < MT; i++)
	{
		double		base_q = 0.6 + 0.3 * PolicyRandUniform(&rng);

		row_task[i] = 100 + i;
		row_kind[i] = i >= M && i < M + 2 ? DECISION_REGRESSION : DECISION_CLASSIFICATION;
		for (int k = 0; k < K; k++)
			cells[i * K + k] = k == 0 ? base_q : (k == 1 ? base_q - 0.001 :
												  base_q - 0.05 - 0.1 * PolicyRandUniform(&rng));
		if (i >= 3 && i < M)
			cells[i * K + 5] = NAN;
		if (i == M + 2)
			cells[i * K + 2] = NAN;
		if (i < M)
		{
			cost_task[i] = row_task[i];
			sz[3 * i] = 100 * (i + 1);
			sz[3 * i + 1] = 10;
			sz[3 * i + 2] = 2;
			for (int k = 0; k < K; k++)
				rt[i * K + k] = k == 0 ? 1000.0 : 1.0 + k;
		}
	}
	HistoryInput(&in, K, MT, cells, row_task, row_kind);
	in.cost.mc = M;
	in.cost.seconds = rt;
	in.cost.sizes = sz;
	in.cost_task = cost_task;

	rc = AutoPolicyBegin(&job, &in, NULL, &reused);
	CHECK(rc == 0 && !reused, "auto: a replay starts (%d)", rc);
	CHECK(job.res.kind == DECISION_CLASSIFICATION && job.res.rows == M &&
		  job.res.cols == K - 1 && job.res.measured_costs,
		  "auto: block of %d x %d, kind %d, costs %d", job.res.rows, job.res.cols,
		  job.res.kind, job.res.measured_costs);
	while ((rc = AutoPolicyStep(&job)) == 0)
		steps++;
	res = job.res;
	AutoPolicyFree(&job);
	CHECK(rc == 1 && res.have && !res.fallback,
		  "auto: chose in %d steps: %s", steps + 1, res.reason);
	CHECK(res.choice >= 0 && res.choice < res.n_cand &&
		  strcmp(res.spec, res.cand[res.choice]) == 0, "auto: the chosen spec");
	for (int i = 0; i < res.n_cand; i++)
		CHECK(res.score[res.choice] <= res.score[i], "auto: the choice has the lowest score");
	for (int i = 0; i < res.n_cand; i++)
		if (strcmp(res.cand[i], "popular") == 0)
			pop = i;
	CHECK(pop >= 0 && pop != res.choice && res.score[pop] > 10 * res.score[res.choice],
		  "auto: popular loses when the best model is costly (%g vs %g)",
		  pop >= 0 ? res.score[pop] : NAN, res.score[res.choice]);

	/* the same block replayed by ReplayAutoChoose: the same choice and scores */
	for (int i = 0; i < M; i++)
	{
		for (int k = 0; k < K - 1; k++)
		{
			block[i * (K - 1) + k] = cells[i * K + k];
			bcost[i * (K - 1) + k] = rt[i * K + k];
		}
		bsize[2 * i] = sz[3 * i];
		bsize[2 * i + 1] = sz[3 * i + 1];
	}
	memset(&ain, 0, sizeof(ain));
	ain.quality = block;
	ain.cost = bcost;
	ain.sizes = bsize;
	ain.n_rows = M;
	ain.K = K - 1;
	ain.devices = 1;
	CHECK(ReplayAutoChoose(&ain, &choice, scores, err, sizeof(err)) == 0 &&
		  choice == res.choice, "auto: ReplayAutoChoose agrees (%d vs %d) %s",
		  choice, res.choice, err);
	for (int i = 0; i < res.n_cand; i++)
		CHECK(scores[i] == res.score[i], "auto: the same score (%.17g vs %.17g)",
			  scores[i], res.score[i]);
	CHECK(res.work > 0, "auto: the replay's work is recorded (%g)", res.work);

	/* the same block again: kept without a replay */
	CHECK(AutoPolicyBegin(&job, &in, &res, &reused) == 1 && reused &&
		  job.res.choice == res.choice, "auto: an unchanged block keeps its choice");
	AutoPolicyFree(&job);

	/*
	 * the same block with options after auto ("auto:w=60"): chosen again,
	 * every candidate replayed with them
	 */
	snprintf(in.auto_options, sizeof(in.auto_options), ":w=60");
	CHECK(AutoPolicyBegin(&job, &in, &res, &reused) == 0 && !reused &&
		  job.res.sig != res.sig, "auto: other options, another choice");
	for (int i = 0; i < job.res.n_cand; i++)
		CHECK(strlen(job.res.cand[i]) > 5 &&
			  strcmp(job.res.cand[i] + strlen(job.res.cand[i]) - 5, ":w=60") == 0 &&
			  strcmp(job.replay.cands[i], job.res.cand[i]) == 0,
			  "auto: candidate %s replayed with the options", job.res.cand[i]);
	AutoPolicyFree(&job);
	in.m = 3;
	CHECK(AutoPolicyBegin(&job, &in, NULL, &reused) == 1 && !job.res.have &&
		  strcmp(job.res.spec, "popular:w=60") == 0,
		  "auto: no block, popular with the options (%s)", job.res.spec);
	AutoPolicyFree(&job);
	in.m = MT;
	in.auto_options[0] = '\0';

	/* too little history: no choice, the fallback (popular) runs */
	in.m = 3;
	CHECK(AutoPolicyBegin(&job, &in, NULL, &reused) == 1 && !job.res.have &&
		  job.res.fallback && strcmp(job.res.spec, POLICY_AUTO_FALLBACK) == 0 &&
		  strcmp(job.res.spec, "popular") == 0, "auto: no block, popular");
	AutoPolicyFree(&job);
	in.m = MT;

	/* in the refit cycle: installed, and not replayed again for a partial row */
	MakeWorld(&w, K, "default", 1);
	CHECK(w.params.auto_select == 1 && w.params.kind == POLICY_POPULAR,
		  "default is auto, popular until it has chosen");
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &w, 1.0) >= 0 && r.live.auto_pick.have &&
		  r.live.auto_pick.choice == res.choice && r.auto_made == 1,
		  "refit: the choice is installed (%d made)", r.auto_made);
	cells[(M + 2) * K + 3] += 0.01;
	CHECK(RefitCycle(&r, &in, &w, 2.0) >= 0 && r.cycles == 2 && r.auto_made == 1 &&
		  r.live.auto_pick.choice == res.choice, "refit: same block, no new replay");
	cells[0] -= 0.2;
	CHECK(RefitCycle(&r, &in, &w, 3.0) >= 0 && r.auto_made == 2 && r.live.auto_pick.have,
		  "refit: a changed block is replayed");
	RefitFree(&r);
	DecisionWorldFree(&w);
}

/*
 * The "auto" choice across a world rebuilt for new models (RefitKeepAuto,
 * AutoPolicyKeeps): a new refit state offered the old state's result keeps
 * it without a replay (auto_made stays 0: nothing to record) when the
 * chooser's inputs did not change -- the same history rows with new
 * models no row knows, the same slots -- and replays when the slots or a
 * history cell of the block changed.  Still no block is kept too; a
 * result that was not final (a replay that failed) never is.
 */
void
TestAutoKeep(void)
{
	enum
	{
	K = 5, KN = 7, M = 16};
	double		cells[M * K],
				wide[M * KN];
	int64_t		row_task[M];
	unsigned char row_kind[M] = {0};
	RefitInput	in,
				in2;
	RefitState	r,
				r2,
				r3;
	DecisionWorld w,
				w2;
	AutoPolicyJob job;
	AutoPolicyResult pick,
				failed;
	uint64_t	rng = 17;
	int			reused = -1;

	for (int i = 0; i < M; i++)
	{
		row_task[i] = 200 + i;
		for (int k = 0; k < K; k++)
			cells[i * K + k] = 0.5 + 0.4 * PolicyRandUniform(&rng);
	}
	/* the same rows, and two new models (generated: no row knows them) */
	for (int i = 0; i < M; i++)
		for (int k = 0; k < KN; k++)
			wide[i * KN + k] = k < K ? cells[i * K + k] : NAN;
	HistoryInput(&in, K, M, cells, row_task, row_kind);
	HistoryInput(&in2, KN, M, wide, row_task, row_kind);
	in.devices = in2.devices = 2;

	MakeWorld(&w, K, "default", 1);
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &w, 1.0) >= 0 && r.auto_made == 1 &&
		  RefitAutoPick(&r) != NULL, "keep: the first world's choice is made");
	pick = *RefitAutoPick(&r);
	CHECK(pick.devices == 2 && pick.sig != 0, "keep: made on 2 slots");

	/* the rebuilt world: the choice runs at once, and its refit keeps it */
	MakeWorld(&w2, KN, "default", 1);
	RefitInit(&r2, KN, 0);
	CHECK(RefitAutoPick(&r2) == NULL, "keep: nothing offered, no choice");
	RefitKeepAuto(&r2, RefitAutoLatest(&r));
	RefitFree(&r);
	CHECK(RefitAutoPick(&r2) != NULL && RefitAutoPick(&r2)->choice == pick.choice,
		  "keep: the offered choice is the one in effect before the first install");
	CHECK(RefitCycle(&r2, &in2, &w2, 2.0) >= 0 && r2.cycles == 1 && r2.auto_made == 0 &&
		  r2.live.auto_pick.have && r2.live.auto_pick.choice == pick.choice &&
		  r2.live.auto_pick.sig == pick.sig && strcmp(r2.live.auto_pick.reason, pick.reason) == 0,
		  "keep: new models alone change nothing: kept without a replay (%d made)",
		  r2.auto_made);

	/* other slots: replayed */
	in2.devices = 1;
	RefitInit(&r3, KN, 0);
	RefitKeepAuto(&r3, RefitAutoLatest(&r2));
	CHECK(RefitCycle(&r3, &in2, &w2, 3.0) >= 0 && r3.auto_made == 1 &&
		  r3.live.auto_pick.devices == 1 && r3.live.auto_pick.sig != pick.sig,
		  "keep: other slots, a new choice (%d made)", r3.auto_made);
	RefitFree(&r3);
	in2.devices = 2;

	/* a history cell of the block changed: replayed */
	wide[3 * KN + 1] -= 0.1;
	RefitInit(&r3, KN, 0);
	RefitKeepAuto(&r3, RefitAutoLatest(&r2));
	CHECK(RefitCycle(&r3, &in2, &w2, 3.0) >= 0 && r3.auto_made == 1 &&
		  r3.live.auto_pick.have && r3.live.auto_pick.sig != pick.sig,
		  "keep: a changed history row, a new choice (%d made)", r3.auto_made);
	RefitFree(&r3);
	wide[3 * KN + 1] += 0.1;

	/* no block (3 rows): no choice, kept while the inputs stay the same */
	in2.m = 3;
	RefitInit(&r3, KN, 0);
	RefitKeepAuto(&r3, RefitAutoLatest(&r2));
	CHECK(RefitCycle(&r3, &in2, &w2, 4.0) >= 0 && r3.auto_made == 1 &&
		  !r3.live.auto_pick.have && r3.live.auto_pick.no_block && RefitAutoPick(&r3) == NULL,
		  "keep: no block, no choice (the fallback runs)");
	CHECK(AutoPolicyBegin(&job, &in2, &r3.live.auto_pick, &reused) == 1 && reused &&
		  job.res.no_block, "keep: still no block, kept");
	AutoPolicyFree(&job);
	in2.m = M;
	RefitFree(&r3);

	/* a result that was not final is never kept */
	failed = pick;
	failed.have = 0;
	CHECK(AutoPolicyKeeps(&pick, pick.sig) && !AutoPolicyKeeps(&failed, pick.sig) &&
		  !AutoPolicyKeeps(&pick, pick.sig ^ 1) && !AutoPolicyKeeps(NULL, pick.sig),
		  "keep: only a final result on the same inputs");
	RefitFree(&r2);
	DecisionWorldFree(&w);
	DecisionWorldFree(&w2);
}

/*
 * One chooser (issue 23): on every draw, a replay's "default" runs what
 * the live worker's chooser (AutoPolicyBegin/Step, sliced as the refit
 * cycle runs it) chooses on a history made of that draw's prior rows --
 * their runtimes with the overhead as measured seconds, their sizes --
 * with the same scores.  The replay's own loss targets do not enter the
 * choice (the live worker's are fixed).  The test fails if the replay's
 * chooser reads its command line's thresholds, seed or overhead, or the
 * live one its wall clock.
 */
void
TestAutoSameChoice(void)
{
	enum
	{
	R = 44, K = 10, N = 6, D = 6};
	double		q[R * K],
				c[R * K],
				sz[R * 2],
				cells[R * K],
				rt[R * K],
				sz3[R * 3],
				thr[] = {0.05, 0.02},
				thr2[] = {0.03};
	int64_t		task[R];
	unsigned char kind[R];
	int			rows[R],
				n_rows,
				same = 0,
				same_thr = 0,
				n_mix = 0,
				rc;
	const char *pols[] = {"default"};
	uint64_t	rng = 23;
	ReplayConfig cfg;
	ReplayOutput out,
				out2;
	char		err[256];

	/* a few dominant models, and a cheap model almost as good on some rows */
	for (int i = 0; i < R; i++)
	{
		double		hard = 0.3 * PolicyRandUniform(&rng);

		sz[2 * i] = 100 + 2000 * PolicyRandUniform(&rng);
		sz[2 * i + 1] = 4 + 30 * PolicyRandUniform(&rng);
		for (int k = 0; k < K; k++)
		{
			q[i * K + k] = 0.9 - hard - 0.02 * k + 0.08 * PolicyRandUniform(&rng);
			c[i * K + k] = 0.002 * sz[2 * i] * (k < 3 && i % 3 ? 400.0 : 1.0 + k) *
				(0.5 + PolicyRandUniform(&rng));
		}
	}
	ReplayConfigDefault(&cfg);
	cfg.quality = q;
	cfg.cost = c;
	cfg.sizes = sz;
	cfg.n_rows = R;
	cfg.K = K;
	cfg.n_tenants = N;
	cfg.draws = D;
	cfg.seed = 3;
	cfg.overhead = 5;
	cfg.n_policies = 1;
	cfg.policies = pols;
	cfg.n_thresholds = 2;
	cfg.thresholds = thr;
	rc = ReplayRun(&cfg, &out, err, sizeof(err));
	CHECK(rc == 0, "replay: %s", err);
	if (rc != 0)
		return;
	cfg.n_thresholds = 1;
	cfg.thresholds = thr2;
	rc = ReplayRun(&cfg, &out2, err, sizeof(err));
	CHECK(rc == 0, "replay, other targets: %s", err);
	for (int d = 0; rc == 0 && d < D; d++)
	{
		RefitInput	in;
		AutoPolicyJob job;
		AutoPolicyResult res;
		int			m,
					reused = 0,
					steps = 0;

		same_thr += out2.auto_choice[d] == out.auto_choice[d];
		CHECK(ReplayDrawRows(&cfg, d, rows, &n_rows) == 0 && n_rows == R,
			  "draw %d rows", d);
		m = n_rows - N < REPLAY_AUTO_MAX_ROWS ? n_rows - N : REPLAY_AUTO_MAX_ROWS;
		/* the history the live worker would hold: the prior rows, measured */
		for (int i = 0; i < m; i++)
		{
			int			r = rows[N + i];

			task[i] = 1000 + i;
			kind[i] = DECISION_CLASSIFICATION;
			for (int k = 0; k < K; k++)
			{
				cells[i * K + k] = q[r * K + k];
				rt[i * K + k] = c[r * K + k] + cfg.overhead;
			}
			sz3[3 * i] = sz[2 * r];
			sz3[3 * i + 1] = sz[2 * r + 1];
			sz3[3 * i + 2] = 2;
		}
		HistoryInput(&in, K, m, cells, task, kind);
		in.cost.mc = m;
		in.cost.seconds = rt;
		in.cost.sizes = sz3;
		in.cost_task = task;
		in.devices = cfg.devices;
		CHECK(AutoPolicyBegin(&job, &in, NULL, &reused) == 0 && job.res.rows == m &&
			  job.res.cols == K && job.res.measured_costs, "draw %d: the live chooser starts", d);
		while ((rc = AutoPolicyStep(&job)) == 0)
			steps++;
		res = job.res;
		AutoPolicyFree(&job);
		rc = 0;
		CHECK(res.have && steps > 0, "draw %d: chosen in %d slices: %s", d, steps + 1, res.reason);
		CHECK(res.choice == out.auto_choice[d],
			  "draw %d: the replay's default chose %d, the live chooser %d", d,
			  out.auto_choice[d], res.choice);
		same += res.choice == out.auto_choice[d];
		n_mix += res.choice == 0;
	}
	CHECK(same == D && same_thr == D,
		  "one chooser: %d of %d draws the same, %d with other targets", same, D, same_thr);
	/* the draws must not all choose alike, or the test proves little */
	CHECK(n_mix > 0 && n_mix < D, "one chooser: %d of %d draws chose the first candidate",
		  n_mix, D);
	ReplayOutputFree(&out);
	ReplayOutputFree(&out2);
}
