/*-------------------------------------------------------------------------
 *
 * replay_job.c
 *	  The replay as a job in slices (replay.h: ReplayJobBegin, Step, Take):
 *	  every policy on every draw, with the sliced fits of the history
 *	  mixture and of mrg=2's model and the nested "auto" choice in pieces
 *	  of bounded work; ReplayRun runs a job to the end.
 *
 * IDENTIFICATION
 *	  src/core/replay_job.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixlearn.h"
#include "replay.h"
#include "replay_internal.h"

/*
 * Whether a policy, or a candidate "auto" may choose, uses the history
 * mixture (which is then fitted for every draw).
 */
static int
UsesMixture(const ReplayConfig *cfg, const ReplayPolicy *pols, int P)
{
	char		list[REPLAY_NAME_LEN * 2];
	int			any_auto = 0;

	for (int p = 0; p < P; p++)
	{
		if (PolicyUsesMixture(&pols[p].params))
			return 1;
		any_auto |= pols[p].auto_select;
	}
	if (!any_auto)
		return 0;
	snprintf(list, sizeof(list), "%s",
			 cfg->auto_candidates ? cfg->auto_candidates : POLICY_AUTO_CANDIDATES);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
		 tok = strtok_r(NULL, ",", &save))
	{
		PolicyParams pp;

		if (PolicyParseSpec(tok, &pp, NULL, 0) == POLICY_OK &&
			PolicyUsesMixture(&pp))
			return 1;
	}
	return 0;
}

/* ----------------------------------------------------------------------
 * The replay as a job in slices (replay.h); ReplayRun runs it to the end.
 * ----------------------------------------------------------------------
 */

/* Where a job is. */
typedef enum JobStage
{
	JOB_DRAW,					/* permute; fit the prior and cost model */
	JOB_MIX,					/* the history mixture's fit, in pieces */
	JOB_WORLD,					/* the tenants become tasks */
	JOB_POLICY,					/* the next policy of the draw */
	JOB_AUTO,					/* "auto" chooses, in pieces */
	JOB_START,					/* the policy's simulation begins */
	JOB_LEARN,					/* mrg=2's model, in pieces */
	JOB_SIM,					/* one simulated event per piece */
	JOB_DONE
} JobStage;

/* Units of one piece of a sliced fit or of a nested auto choice. */
#define PIECE_WORK 1e5

struct ReplayJob
{
	ReplayConfig cfg;
	ReplayPolicy *pols;
	DrawCtx		c;
	EventList  *lists;
	int		   *perm;
	int		   *rows;
	double	   *tmp;
	ReplayOutput out;
	int			have_out;
	JobStage	stage;
	int			d;				/* draw under way */
	int			p;				/* its policy under way */
	PolicyParams run;			/* what policy p runs */
	SimState	sim;
	double		horizon;		/* the draw's last completion so far */
	MixFitJob	mix;
	int			mix_on;
	MixLearnJob learn;
	int			learn_on;
	ReplayAutoJob autojob;
	int			auto_on;
	double		work;			/* units spent */
	double		world_seen;		/* c.world.work already counted */
};

/* Whether policy params rank tasks by mrg=2's model and it must be fitted. */
static int
NeedLearnFit(const DecisionWorld *w, const PolicyParams *params)
{
	const MixLearn *ml = w->mix_learn[DECISION_CLASSIFICATION];

	return w->mix[DECISION_CLASSIFICATION] != NULL &&
		PolicyUsesMixture(params) && PolicyMixScore(params) &&
		params->mix_score == 2 &&
		(ml == NULL || !MixLearnSameFit(&ml->params, params));
}

/*
 * "auto" in a replay: the chooser on the draw's prior rows (the tenant rows
 * are never read), as the live worker's on its history: the first
 * REPLAY_AUTO_MAX_ROWS of them, their runtimes with the overhead (what a
 * live measurement holds).
 */
static int
AutoBeginOnPrior(ReplayJob *job, char *err, size_t errlen)
{
	const ReplayConfig *cfg = &job->cfg;
	const DrawCtx *c = &job->c;
	const int	K = c->K;
	int			m = c->n_prior < REPLAY_AUTO_MAX_ROWS ? c->n_prior : REPLAY_AUTO_MAX_ROWS;
	double	   *q = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K);
	double	   *cost = cfg->cost ? malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K) : NULL;
	double	   *sizes = cfg->cost && cfg->sizes ? malloc(sizeof(double) * (m > 0 ? m : 1) * 2) : NULL;
	ReplayAutoInput ain;
	char		opts[REPLAY_NAME_LEN];
	int			rc;

	if (q == NULL || (cfg->cost && cost == NULL) || (cfg->cost && cfg->sizes && sizes == NULL))
	{
		free(q);
		free(cost);
		free(sizes);
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	for (int i = 0; i < m; i++)
	{
		int			row = c->prior_row[i];

		memcpy(q + (size_t) i * K, cfg->quality + (size_t) row * K, sizeof(double) * K);
		for (int k = 0; cost && k < K; k++)
			cost[(size_t) i * K + k] = ReplayTrueCost(cfg, row, k);
		if (sizes)
		{
			sizes[2 * i] = cfg->sizes[2 * row];
			sizes[2 * i + 1] = cfg->sizes[2 * row + 1];
		}
	}
	memset(&ain, 0, sizeof(ain));
	ain.quality = q;
	ain.cost = cost;
	ain.sizes = sizes;
	ain.n_rows = m;
	ain.K = K;
	ain.devices = cfg->devices;
	ain.candidates = cfg->auto_candidates;
	ain.draws = cfg->auto_draws;
	/* "auto:w=60": the candidates compete with the options they would run */
	PolicyAutoOptions(&job->pols[job->p].params, opts, sizeof(opts));
	ain.options = opts;
	rc = ReplayAutoBegin(&ain, &job->autojob, err, errlen);
	free(q);
	free(cost);
	free(sizes);
	if (rc == 0)
		job->auto_on = 1;
	return rc;
}

/* The policy under way has finished its draw. */
static void
PolicyDone(ReplayJob *job)
{
	DrawCtx    *c = &job->c;
	size_t		pd = (size_t) job->p * job->cfg.draws + job->d;
	EventList  *l = &job->lists[pd];

	job->out.decisions[pd] = (int) c->world.decision_no;
	job->out.gp_jitter += c->world.gp_jitter;
	job->out.gp_failed += c->world.gp_failed;
	c->world.gp_jitter = c->world.gp_failed = 0;
	job->out.final_time[pd] = l->ev[l->n - 1].time;
	job->out.final_loss[pd] = l->ev[l->n - 1].loss;
	if (job->out.final_time[pd] > job->horizon)
		job->horizon = job->out.final_time[pd];
}

/* The draw's prior, cost model and mixture inputs (JOB_DRAW). */
static int
StageDraw(ReplayJob *job, char *err, size_t errlen)
{
	DrawCtx    *c = &job->c;
	int			rc;

	rc = ReplayDrawSetup(c, job->d, job->perm, &job->mix, &job->mix_on, err, errlen);
	if (rc < 0)
		return rc;
	job->work += ReplayFitWork(c->n_prior, c->K) * (c->use_cost_model ? 2 : 1) +
		(double) c->n_prior * c->K;
	if (job->d == 0)
	{
		job->out.prior_noise_var = c->prior.noise_var;
		job->out.prior_shrinkage = c->prior.shrinkage;
		job->out.prior_lengthscale = c->prior.lengthscale;
		job->out.prior_signal_var = c->prior.signal_var;
	}
	job->stage = job->mix_on ? JOB_MIX : JOB_WORLD;
	return REPLAY_OK;
}

/* A slice of the history mixture's fit (JOB_MIX). */
static int
StageMix(ReplayJob *job)
{
	double		before = job->mix.spent;
	int			done;

	/* its cells cost about 8 of ours (exp, log) */
	done = MixFitStep(&job->mix, PIECE_WORK / 8);
	job->work += 8 * (job->mix.spent - before);
	if (done)
	{
		MixFitTake(&job->mix, &job->c.mix);
		job->mix_on = 0;
		job->stage = JOB_WORLD;
	}
	return REPLAY_OK;
}

/* The draw's world of tenants, before its first policy (JOB_WORLD). */
static int
StageWorld(ReplayJob *job, char *err, size_t errlen)
{
	DrawCtx    *c = &job->c;
	int			rc;

	if ((rc = ReplayBuildWorld(c, err, errlen)) < 0)
		return rc;
	job->work += 50.0 * c->n * c->K;
	if (job->d == 0)
	{
		job->out.mix_bw = c->mix.bw;
		job->out.mix_bw_shift = c->mix.bw_shift;
	}
	job->world_seen = c->world.work;
	job->horizon = 0.0;
	job->p = 0;
	job->stage = JOB_POLICY;
	return REPLAY_OK;
}

/*
 * The next policy of the draw, or the draw's end once every policy ran
 * (JOB_POLICY).
 */
static int
StagePolicy(ReplayJob *job, char *err, size_t errlen)
{
	const ReplayConfig *cfg = &job->cfg;
	const int	D = cfg->draws;
	size_t		pd = (size_t) job->p * D + job->d;
	int			rc;

	if (job->p == cfg->n_policies)
	{
		/* the draw is over: areas up to its last completion */
		for (int p = 0; p < cfg->n_policies; p++)
		{
			size_t		i = (size_t) p * D + job->d;

			job->out.auc[i] = ReplayStepArea(job->lists[i].ev, job->lists[i].n,
											 job->horizon);
		}
		ReplayDrawFree(&job->c);
		job->stage = ++job->d < D ? JOB_DRAW : JOB_DONE;
		return REPLAY_OK;
	}
	if (cfg->cancel && cfg->cancel(cfg->cancel_arg))
	{
		ReplaySetErr(err, errlen, "replay cancelled");
		return REPLAY_CANCELLED;
	}
	job->run = job->pols[job->p].params;
	job->out.auto_choice[pd] = -2;
	if (job->pols[job->p].auto_select)
	{
		if ((rc = AutoBeginOnPrior(job, err, errlen)) < 0)
			return rc;
		job->stage = JOB_AUTO;
	}
	else
		job->stage = JOB_START;
	return REPLAY_OK;
}

/* A slice of "auto"'s choice on the draw's prior rows (JOB_AUTO). */
static int
StageAuto(ReplayJob *job, char *err, size_t errlen)
{
	const ReplayConfig *cfg = &job->cfg;
	size_t		pd = (size_t) job->p * cfg->draws + job->d;
	double		before = ReplayAutoWork(&job->autojob);
	char		name[REPLAY_NAME_LEN];
	int			rc;

	if (cfg->cancel && cfg->cancel(cfg->cancel_arg))
	{
		ReplaySetErr(err, errlen, "replay cancelled");
		return REPLAY_CANCELLED;
	}
	rc = ReplayAutoStep(&job->autojob, PIECE_WORK * 100, err, errlen);
	job->work += ReplayAutoWork(&job->autojob) - before;
	if (rc < 0)
		return rc;
	if (rc == 0)
		return REPLAY_OK;
	job->out.auto_choice[pd] = job->autojob.choice;
	ReplayAutoFree(&job->autojob);
	job->auto_on = 0;
	/* the choice with the options given after "auto" */
	if (ReplayAutoChosen(&job->autojob, name, sizeof(name)) == NULL ||
		PolicyParseSpec(name, &job->run, err, errlen) != POLICY_OK)
		return REPLAY_BAD_INPUT;
	job->stage = JOB_START;
	return REPLAY_OK;
}

/*
 * Begin mrg=2's fit for the policy about to run, as a replay's decision
 * path would on first use (decision_view.c); stage JOB_LEARN when one is
 * under way.
 */
static int
BeginLearnFit(ReplayJob *job, char *err, size_t errlen)
{
	DrawCtx    *c = &job->c;
	double	   *typ = malloc(sizeof(double) * c->K);
	int			rc;

	if (typ == NULL)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	DecisionTypicalCost(&c->world, DECISION_CLASSIFICATION, typ);
	rc = MixLearnBegin(&job->learn, c->world.mix[DECISION_CLASSIFICATION],
					   &job->run, job->run.cost_aware ? typ : NULL);
	free(typ);
	if (rc == POLICY_BAD_INPUT)
	{
		/* too few rows: a model that is not ok, mrg=1's score */
		MixLearn	none;

		memset(&none, 0, sizeof(none));
		none.params = job->run;
		rc = DecisionSetMixLearn(&c->world, DECISION_CLASSIFICATION, &none);
	}
	else if (rc == POLICY_OK)
	{
		job->learn_on = 1;
		job->stage = JOB_LEARN;
	}
	if (rc == POLICY_NO_MEMORY)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	return REPLAY_OK;
}

/* The policy's simulation begins (JOB_START). */
static int
StageStart(ReplayJob *job, char *err, size_t errlen)
{
	const ReplayConfig *cfg = &job->cfg;
	DrawCtx    *c = &job->c;
	size_t		pd = (size_t) job->p * cfg->draws + job->d;
	int			rc;

	c->cur_policy = job->p;
	c->cur_draw = job->d;
	rc = ReplaySimBegin(c, &job->run, cfg->seed ^ (0xD1B54A32D192ED03ULL * (pd + 1)),
						&job->sim, &job->lists[pd],
						job->out.time_to + pd * cfg->n_thresholds,
						job->out.worst_regret + pd * cfg->n_thresholds);
	if (rc < 0)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return rc;
	}
	job->stage = JOB_SIM;
	if (NeedLearnFit(&c->world, &job->run) &&
		(rc = BeginLearnFit(job, err, errlen)) < 0)
		return rc;
	job->work += c->world.work - job->world_seen;
	job->world_seen = c->world.work;
	return REPLAY_OK;
}

/* A slice of mrg=2's fit (JOB_LEARN). */
static int
StageLearn(ReplayJob *job, char *err, size_t errlen)
{
	double		before = job->learn.spent;
	MixLearn	ml;
	int			rc;

	rc = MixLearnStep(&job->learn, PIECE_WORK * 10);
	job->work += job->learn.spent - before;
	if (!rc)
		return REPLAY_OK;
	rc = MixLearnTake(&job->learn, &ml);
	job->learn_on = 0;
	if (rc == POLICY_NO_MEMORY ||
		DecisionSetMixLearn(&job->c.world, DECISION_CLASSIFICATION, &ml) < 0)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	job->stage = JOB_SIM;
	return REPLAY_OK;
}

/* A slice of the policy's simulation (JOB_SIM). */
static int
StageSim(ReplayJob *job, char *err, size_t errlen)
{
	DrawCtx    *c = &job->c;
	int			rc;

	rc = ReplaySimAdvance(c, &job->sim, err, errlen);
	job->work += c->world.work - job->world_seen;
	job->world_seen = c->world.work;
	if (rc < 0)
		return rc;
	if (rc == 1)
	{
		PolicyDone(job);
		job->p++;
		job->stage = JOB_POLICY;
	}
	return REPLAY_OK;
}

/* One piece of work; updates job->stage and job->work. */
static int
JobPiece(ReplayJob *job, char *err, size_t errlen)
{
	switch (job->stage)
	{
		case JOB_DRAW:
			return StageDraw(job, err, errlen);
		case JOB_MIX:
			return StageMix(job);
		case JOB_WORLD:
			return StageWorld(job, err, errlen);
		case JOB_POLICY:
			return StagePolicy(job, err, errlen);
		case JOB_AUTO:
			return StageAuto(job, err, errlen);
		case JOB_START:
			return StageStart(job, err, errlen);
		case JOB_LEARN:
			return StageLearn(job, err, errlen);
		case JOB_SIM:
			return StageSim(job, err, errlen);
		case JOB_DONE:
			return REPLAY_OK;
	}
	return REPLAY_OK;
}

int
ReplayJobBegin(const ReplayConfig *cfg, ReplayJob **jobp, char *err,
			   size_t errlen)
{
	ReplayJob  *job;
	DrawCtx    *c;
	int			P,
				D,
				NK;

	*jobp = NULL;
	if (cfg == NULL)
	{
		ReplaySetErr(err, errlen, "no config or output");
		return REPLAY_BAD_INPUT;
	}
	if (!ReplayCheckConfig(cfg, err, errlen))
		return REPLAY_BAD_INPUT;
	job = calloc(1, sizeof(ReplayJob));
	if (job == NULL)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	*jobp = job;
	job->cfg = *cfg;
	c = &job->c;
	P = cfg->n_policies;
	D = cfg->draws;
	NK = cfg->n_thresholds;
	job->pols = calloc(P, sizeof(ReplayPolicy));
	if (job->pols == NULL)
		goto nomem;
	for (int p = 0; p < P; p++)
	{
		int			rc = ReplayParsePolicy(cfg->policies[p], &job->pols[p], err, errlen);

		if (rc < 0)
		{
			ReplayJobFree(job);
			*jobp = NULL;
			return rc;
		}
	}
	job->lists = calloc((size_t) P * D, sizeof(EventList));
	job->perm = malloc(sizeof(int) * cfg->n_rows);
	job->rows = malloc(sizeof(int) * cfg->n_rows);
	job->tmp = malloc(sizeof(double) * (D > NK ? D : NK + 1));
	job->have_out = 1;
	if (ReplayOutputAlloc(&job->out, P, D, NK, cfg->grid_points > 0 ? cfg->grid_points : 200) != 0 ||
		job->lists == NULL || job->perm == NULL || job->rows == NULL || job->tmp == NULL)
		goto nomem;
	for (int p = 0; p < P; p++)
		snprintf(job->out.names[p], REPLAY_NAME_LEN, "%s", job->pols[p].name);
	for (int k = 0; k < NK; k++)
		job->out.thresholds[k] = cfg->thresholds[k];

	c->cfg = &job->cfg;
	c->use_mix = UsesMixture(cfg, job->pols, P);
	c->K = cfg->K;
	c->n = cfg->n_tenants;
	c->M = cfg->devices;
	c->rows = job->rows;
	c->n_rows = ReplayDistinctRows(cfg, job->rows);
	job->work += (double) cfg->n_rows * cfg->K;
	job->out.rows_used = c->n_rows;
	job->out.rows_removed = cfg->n_rows - c->n_rows;
	if (c->n > c->n_rows)
	{
		ReplaySetErr(err, errlen, "%d tenants need as many distinct rows; the matrix has %d (%d repeated rows left out)",
			   c->n, c->n_rows, cfg->n_rows - c->n_rows);
		ReplayJobFree(job);
		*jobp = NULL;
		return REPLAY_BAD_INPUT;
	}
	c->dev_busy = calloc(c->M, sizeof(int));
	c->dev_end = calloc(c->M, sizeof(double));
	c->dev_task = calloc(c->M, sizeof(int));
	c->dev_arm = calloc(c->M, sizeof(int));
	if (c->dev_busy == NULL || c->dev_end == NULL || c->dev_task == NULL ||
		c->dev_arm == NULL)
		goto nomem;
	job->stage = JOB_DRAW;
	return REPLAY_OK;

nomem:
	ReplayJobFree(job);
	*jobp = NULL;
	ReplaySetErr(err, errlen, "out of memory");
	return REPLAY_NO_MEMORY;
}

int
ReplayJobStep(ReplayJob *job, double work, double limit, char *err,
			  size_t errlen)
{
	double		start = job->work;

	while (job->stage != JOB_DONE)
	{
		int			rc = JobPiece(job, err, errlen);

		if (rc < 0)
			return rc;
		if (job->stage == JOB_DONE)
			break;
		if (job->work > limit)
		{
			ReplaySetErr(err, errlen, "the replay passed its limit of %.3g work units", limit);
			return REPLAY_WORK_LIMIT;
		}
		if (job->work - start >= work)
			return 0;
	}
	return 1;
}

double
ReplayJobWork(const ReplayJob *job)
{
	return job ? job->work : 0.0;
}

int
ReplayJobTake(ReplayJob *job, ReplayOutput *out, char *err, size_t errlen)
{
	const int	P = job->cfg.n_policies,
				D = job->cfg.draws,
				NK = job->cfg.n_thresholds;
	const DrawCtx *c = &job->c;

	memset(out, 0, sizeof(*out));
	if (job->stage != JOB_DONE || !job->have_out)
	{
		ReplaySetErr(err, errlen, "the replay has not finished");
		return REPLAY_BAD_INPUT;
	}
	job->out.cost_log_rmse = c->cost_n > 0 ? sqrt(c->cost_sq_err / c->cost_n) : 0.0;
	/* medians of the time to each threshold */
	for (int p = 0; p < P; p++)
		for (int k = 0; k < NK; k++)
		{
			for (int d = 0; d < D; d++)
				job->tmp[d] = job->out.time_to[((size_t) p * D + d) * NK + k];
			job->out.median_time[p * NK + k] = ReplayMedian(job->tmp, D);
		}
	if (ReplayOutputCurves(&job->out, job->lists) != 0 ||
		(job->cfg.keep_events && ReplayOutputKeepEvents(&job->out, job->lists) != 0))
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	job->out.work = job->work;
	*out = job->out;
	memset(&job->out, 0, sizeof(job->out));
	job->have_out = 0;
	return REPLAY_OK;
}

void
ReplayJobFree(ReplayJob *job)
{
	DrawCtx    *c;

	if (job == NULL)
		return;
	c = &job->c;
	ReplayDrawFree(c);
	free(c->dev_busy);
	free(c->dev_end);
	free(c->dev_task);
	free(c->dev_arm);
	if (job->lists)
		for (int pd = 0; pd < job->cfg.n_policies * job->cfg.draws; pd++)
			free(job->lists[pd].ev);
	free(job->lists);
	free(job->perm);
	free(job->rows);
	free(job->tmp);
	free(job->pols);
	if (job->mix_on)
		MixFitFree(&job->mix);
	if (job->learn_on)
		MixLearnFree(&job->learn);
	if (job->auto_on)
		ReplayAutoFree(&job->autojob);
	if (job->have_out)
		ReplayOutputFree(&job->out);
	free(job);
}

/* The rows draw 'draw' uses, tenants first; see replay.h. */
int
ReplayDrawRows(const ReplayConfig *cfg, int draw, int *rows, int *n_rows)
{
	DrawCtx		c;
	int		   *distinct = malloc(sizeof(int) * (cfg->n_rows > 0 ? cfg->n_rows : 1));

	*n_rows = 0;
	if (distinct == NULL)
		return REPLAY_NO_MEMORY;
	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.rows = distinct;
	c.n_rows = ReplayDistinctRows(cfg, distinct);
	ReplayPermute(&c, draw, rows);
	*n_rows = c.n_rows;
	free(distinct);
	return REPLAY_OK;
}

/* Run every policy on every draw; see replay.h. */
int
ReplayRun(const ReplayConfig *cfg, ReplayOutput *out, char *err, size_t errlen)
{
	ReplayJob  *job;
	int			rc;

	if (out == NULL)
	{
		ReplaySetErr(err, errlen, "no config or output");
		return REPLAY_BAD_INPUT;
	}
	memset(out, 0, sizeof(*out));
	rc = ReplayJobBegin(cfg, &job, err, errlen);
	while (rc == 0)
		rc = ReplayJobStep(job, INFINITY, INFINITY, err, errlen);
	if (rc == 1)
		rc = ReplayJobTake(job, out, err, errlen);
	ReplayJobFree(job);
	return rc;
}
