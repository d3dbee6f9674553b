/*-------------------------------------------------------------------------
 *
 * replay_sim.c
 *	  The discrete-event simulation of one policy on one draw
 *	  (docs/scheduler.md 5), and the draw it runs on.
 *
 * Tenant i's run of model k takes cost[i][k] seconds of one of M devices
 * and then reveals quality[i][k] (no noise).  The loop is event driven:
 *
 *	 1. every free device, in index order, asks the policy for a
 *		(tenant, arm); the posteriors are conditioned on finished runs only
 *		and running arms are excluded (docs/scheduler.md 5); if nothing can run
 *		the device idles until the next completion;
 *	 2. time jumps to the next completion(s); each reveals its result,
 *		appends one observation to the tenant's GpState (O(K t), no refit)
 *		and, with the SIZE_GP cost model, one log-runtime residual to the
 *		tenant's cost posterior;
 *	 3. the global average loss L = mean_i (f_i* - b_i) is a step function
 *		of time; its steps are recorded exactly.
 *
 * Only the completing or dispatched tenant's candidate is recomputed, so a
 * decision costs O(K t) for that tenant plus O(n) to pick among tenants.
 *
 * Each draw permutes the rows with a seeded generator: tenants first, then
 * the prior rows, disjoint (docs/scheduler.md 5).  The draw's prior, cost
 * model and world are built here (ReplayDrawSetup, FitModels, ReplayBuildWorld).
 *
 * IDENTIFICATION
 *	  src/core/replay_sim.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "replay_internal.h"

/* Append an event. */
static int
EventPush(EventList *l, double time, double loss)
{
	if (l->n == l->cap)
	{
		int			cap = l->cap ? l->cap * 2 : 256;
		ReplayEvent *ne = realloc(l->ev, sizeof(ReplayEvent) * cap);

		if (ne == NULL)
			return 0;
		l->ev = ne;
		l->cap = cap;
	}
	l->ev[l->n].time = time;
	l->ev[l->n].loss = loss;
	l->n++;
	return 1;
}

/* What a run of row r, arm k really takes: its cost plus the overhead. */
double
ReplayTrueCost(const ReplayConfig *cfg, int r, int k)
{
	double		c = cfg->cost ? cfg->cost[(size_t) r * cfg->K + k] : 1.0;

	return c + cfg->overhead;
}

/* Record the first time each loss target is reached (and the worst regret). */
static void
CheckTargets(const DrawCtx *c, double now, double loss, double *time_to,
			 double *worst)
{
	const ReplayConfig *cfg = c->cfg;

	for (int k = 0; k < cfg->n_thresholds; k++)
		if (isinf(time_to[k]) && loss <= cfg->thresholds[k] + 1e-12)
		{
			double		wr = 0.0;

			for (int t = 0; t < c->n; t++)
				if (c->fstar[t] - c->world.tasks[t]->best > wr)
					wr = c->fstar[t] - c->world.tasks[t]->best;
			time_to[k] = now;
			worst[k] = wr;
		}
}

/* Hand every free device a (task, arm); devices stay idle if none can run. */
static int
Dispatch(DrawCtx *c, double now, char *err, size_t errlen)
{
	DecisionWorld *w = &c->world;

	for (int d = 0; d < c->M; d++)
	{
		DecisionChoice choice;
		DecisionTask *t;
		int			arm,
					rc;

		if (c->dev_busy[d])
			continue;
		rc = DecisionNext(w, &choice);
		if (rc < 0)
		{
			ReplaySetErr(err, errlen, "the policy failed (%d)", rc);
			return rc == POLICY_NO_MEMORY ? REPLAY_NO_MEMORY : REPLAY_BAD_INPUT;
		}
		if (choice.chosen.task < 0)
			break;				/* idle until a run finishes */
		t = w->tasks[choice.chosen.task];
		arm = choice.chosen.arm;
		if (arm < 0 || arm >= c->K || t->arm[arm] != DECISION_ARM_AVAILABLE)
		{
			ReplaySetErr(err, errlen, "the policy picked an unavailable arm");
			return REPLAY_BAD_INPUT;
		}
		/* how good was the cost estimate the policy used (if it reads one)? */
		if (c->cfg->cost && !w->skip_posterior)
		{
			double		e = log(t->cost[arm]) -
				log(ReplayTrueCost(c->cfg, c->tenant_row[choice.chosen.task], arm));

			c->cost_sq_err += e * e;
			c->cost_n++;
		}
		DecisionStart(w, t, arm);
		c->dev_busy[d] = 1;
		c->dev_task[d] = choice.chosen.task;
		c->dev_arm[d] = arm;
		c->dev_end[d] = now + ReplayTrueCost(c->cfg, c->tenant_row[choice.chosen.task], arm);
	}
	return REPLAY_OK;
}

/* Finish every run that ends at 'now': reveal its quality and runtime. */
static void
Complete(DrawCtx *c, double now)
{
	for (int d = 0; d < c->M; d++)
	{
		int			ti = c->dev_task[d],
					arm = c->dev_arm[d],
					row;

		if (!c->dev_busy[d] || c->dev_end[d] != now)
			continue;
		row = c->tenant_row[ti];
		c->dev_busy[d] = 0;
		(void) DecisionObserve(&c->world, c->world.tasks[ti], arm,
							   c->cfg->quality[(size_t) row * c->K + arm],
							   c->use_cost_model ? ReplayTrueCost(c->cfg, row, arm) : 0.0);
		if (c->cfg->on_run)
		{
			ReplayRunRecord r;

			r.policy = c->cur_policy;
			r.draw = c->cur_draw;
			r.tenant = ti;
			r.arm = arm;
			r.end = now;
			r.cost = ReplayTrueCost(c->cfg, row, arm);
			r.start = now - r.cost;
			r.quality = c->cfg->quality[(size_t) row * c->K + arm];
			r.best = c->world.tasks[ti]->best;
			r.regret = c->fstar[ti] - r.best;
			c->cfg->on_run(c->cfg->on_run_arg, &r);
		}
	}
}

int
ReplaySimBegin(DrawCtx *c, const PolicyParams *params, uint64_t rng_seed,
		 SimState *s, EventList *events, double *time_to, double *worst)
{
	DecisionWorld *w = &c->world;
	double		loss = 0.0;

	DecisionSetParams(w, params);
	w->skip_posterior = !PolicyReadsPosterior(params);
	w->rng = rng_seed;
	w->decision_no = 0;
	for (int t = 0; t < c->n; t++)
		DecisionResetTask(w, w->tasks[t]);
	for (int k = 0; k < c->cfg->n_thresholds; k++)
	{
		time_to[k] = INFINITY;
		worst[k] = NAN;
	}
	for (int d = 0; d < c->M; d++)
		c->dev_busy[d] = 0;
	s->events = events;
	s->time_to = time_to;
	s->worst = worst;
	s->now = 0.0;
	events->n = 0;
	for (int t = 0; t < c->n; t++)
		loss += c->fstar[t];
	return EventPush(events, 0.0, loss / c->n) ? REPLAY_OK : REPLAY_NO_MEMORY;
}

/* One event; 1 when the simulation is over (nothing runs or can run). */
int
ReplaySimAdvance(DrawCtx *c, SimState *s, char *err, size_t errlen)
{
	DecisionWorld *w = &c->world;
	double		next = INFINITY,
				loss = 0.0;
	int			rc;

	rc = Dispatch(c, s->now, err, errlen);
	if (rc < 0)
		return rc;
	for (int d = 0; d < c->M; d++)
		if (c->dev_busy[d] && c->dev_end[d] < next)
			next = c->dev_end[d];
	if (isinf(next))
		return 1;				/* nothing runs and nothing can: done */
	s->now = next;
	Complete(c, s->now);

	/* summed afresh (O(n)) so that the loss is exactly 0 at the end */
	for (int t = 0; t < c->n; t++)
		loss += c->fstar[t] - w->tasks[t]->best;
	loss /= c->n;
	if (!EventPush(s->events, s->now, loss))
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	CheckTargets(c, s->now, loss, s->time_to, s->worst);
	return loss <= c->cfg->stop_loss + 1e-12 ? 1 : 0;
}

/* Free a draw context's per-draw parts. */
void
ReplayDrawFree(DrawCtx *c)
{
	if (c->have_world)
		DecisionWorldFree(&c->world);
	c->have_world = 0;
	GpPriorFree(&c->prior);
	MixPriorFree(&c->mix);
	PolicyCostModelFree(&c->cost_model);
	free(c->tenant_row);
	free(c->fstar);
	c->tenant_row = NULL;
	c->fstar = NULL;
}

/* Seeded Fisher-Yates shuffle of the usable rows for draw 'draw'. */
void
ReplayPermute(const DrawCtx *c, int draw, int *perm)
{
	uint64_t	rng = c->cfg->seed * 0x2545F4914F6CDD1DULL +
		(uint64_t) (c->cfg->first_draw + draw) * 0x9E3779B97F4A7C15ULL + 1;

	for (int i = 0; i < c->n_rows; i++)
		perm[i] = c->rows[i];
	for (int i = c->n_rows - 1; i > 0; i--)
	{
		int			j = (int) (PolicyRandUniform(&rng) * (i + 1));
		int			tmp;

		if (j > i)
			j = i;
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
}

/*
 * Work units of a prior fit on n rows x K models (the shared prior or the
 * size_gp cost model's residual prior): the K x K covariance and the
 * held-out scoring of its hyperparameter grid (src/core/gp.c).
 */
double
ReplayFitWork(int n, int K)
{
	return 20.0 * K * K + 0.2 * (double) n * K * K + 2.0 * (double) n * n * K;
}

/*
 * Fit the prior and the cost model on the draw's prior rows perm[n ..
 * n + n_prior), and start the history mixture's fit (*mix, stepped by the
 * caller) when a policy uses it.  Prior rows' runtimes carry the overhead
 * as well, as the live scheduler's measured seconds do.
 */
static int
FitModels(DrawCtx *c, const int *prior_rows, int n_prior, int draw,
		  MixFitJob *mix, int *mix_on, char *err, size_t errlen)
{
	const ReplayConfig *cfg = c->cfg;
	const int	K = c->K;
	double	   *hist,
			   *hcost = NULL,
			   *hsize = NULL;
	int			rc = REPLAY_OK,
				grc;

	*mix_on = 0;
	hist = malloc(sizeof(double) * (size_t) (n_prior > 0 ? n_prior : 1) * K);
	if (hist == NULL)
		goto nomem;
	for (int i = 0; i < n_prior; i++)
		memcpy(hist + (size_t) i * K, cfg->quality + (size_t) prior_rows[i] * K,
			   sizeof(double) * K);
	grc = GpPriorFit(hist, n_prior, K, &cfg->prior, &c->prior);
	if (grc < 0)
	{
		ReplaySetErr(err, errlen, "draw %d: prior fit failed: %s", draw, GpStatusText(grc));
		rc = REPLAY_GP_FAILED;
		goto done;
	}
	/* the history mixture, from the same rows (none with fewer than 2) */
	if (c->use_mix && n_prior >= 2)
	{
		if (MixFitBegin(mix, hist, n_prior, K) < 0)
			goto nomem;
		*mix_on = 1;
	}
	c->use_cost_model = 0;
	if (!cfg->oracle_cost && cfg->cost && cfg->cost_model != POLICY_COST_NONE)
	{
		hcost = malloc(sizeof(double) * (size_t) (n_prior > 0 ? n_prior : 1) * K);
		hsize = malloc(sizeof(double) * (size_t) (n_prior > 0 ? n_prior : 1) * 3);
		if (hcost == NULL || hsize == NULL)
			goto nomem;
		for (int i = 0; i < n_prior; i++)
		{
			int			row = prior_rows[i];

			for (int k = 0; k < K; k++)
				hcost[(size_t) i * K + k] = ReplayTrueCost(cfg, row, k);
			hsize[3 * i] = cfg->sizes[2 * row];
			hsize[3 * i + 1] = cfg->sizes[2 * row + 1];
			hsize[3 * i + 2] = 1.0;
		}
		grc = PolicyCostModelFit(&c->cost_model, cfg->cost_model, hcost, hsize,
								 n_prior, K);
		if (grc < 0)
		{
			ReplaySetErr(err, errlen, "draw %d: cost model fit failed (%d)", draw, grc);
			rc = REPLAY_GP_FAILED;
			goto done;
		}
		c->use_cost_model = 1;
	}
	goto done;

nomem:
	ReplaySetErr(err, errlen, "out of memory");
	rc = REPLAY_NO_MEMORY;
done:
	free(hist);
	free(hcost);
	free(hsize);
	return rc;
}

/* Build the draw's world: one tenant and one task per tenant row. */
int
ReplayBuildWorld(DrawCtx *c, char *err, size_t errlen)
{
	const ReplayConfig *cfg = c->cfg;
	const int	K = c->K;
	PolicyParams params;
	double	   *fallback;
	int			rc;

	PolicyParamsDefault(&params, POLICY_FIFO);
	rc = DecisionWorldInit(&c->world, K, NULL, NULL, &params);
	if (rc < 0)
		goto nomem;
	c->have_world = 1;
	c->world.slots = c->M;
	c->world.tenant_cap = cfg->max_devices_per_tenant > 0 ?
		cfg->max_devices_per_tenant : (cfg->fair_share ? -1 : 0);
	if (DecisionSetPrior(&c->world, DECISION_CLASSIFICATION, &c->prior) < 0)
		goto nomem;
	if (c->mix.rows != NULL &&
		DecisionSetMixture(&c->world, DECISION_CLASSIFICATION, &c->mix) < 0)
		goto nomem;
	if (c->use_cost_model)
		DecisionSetCostModel(&c->world, &c->cost_model, NULL);
	fallback = malloc(sizeof(double) * K);
	if (fallback == NULL)
		goto nomem;
	for (int t = 0; t < c->n; t++)
	{
		DecisionTaskSpec spec;
		int			row = c->tenant_row[t];

		memset(&spec, 0, sizeof(spec));
		spec.id = t;
		spec.tenant = DecisionAddTenant(&c->world, 0);
		spec.kind = DECISION_CLASSIFICATION;
		spec.rows = cfg->sizes ? cfg->sizes[2 * row] : 1.0;
		spec.features = cfg->sizes ? cfg->sizes[2 * row + 1] : 1.0;
		spec.classes = 1.0;
		/* the oracle sees true runtimes; without a cost model, 1 s each */
		for (int k = 0; k < K; k++)
			fallback[k] = (cfg->oracle_cost && cfg->cost) ? ReplayTrueCost(cfg, row, k) : 1.0;
		spec.fallback_cost = fallback;
		if (spec.tenant < 0 || DecisionAddTask(&c->world, &spec) == NULL)
		{
			free(fallback);
			goto nomem;
		}
	}
	free(fallback);
	return REPLAY_OK;

nomem:
	ReplaySetErr(err, errlen, "out of memory");
	return REPLAY_NO_MEMORY;
}

/*
 * Set up draw 'draw': permute the usable rows, fit the prior and the cost
 * model on the prior rows (and start the mixture's fit), and note the
 * tenants; ReplayBuildWorld makes them tasks once the mixture is fitted.
 */
int
ReplayDrawSetup(DrawCtx *c, int draw, int *perm, MixFitJob *mix, int *mix_on,
		  char *err, size_t errlen)
{
	const ReplayConfig *cfg = c->cfg;
	int			n_prior;
	int			rc;

	ReplayPermute(c, draw, perm);
	n_prior = c->n_rows - c->n;
	if (cfg->n_prior > 0 && cfg->n_prior < n_prior)
		n_prior = cfg->n_prior;
	c->prior_row = perm + c->n;
	c->n_prior = n_prior;
	rc = FitModels(c, perm + c->n, n_prior, draw, mix, mix_on, err, errlen);
	if (rc < 0)
		return rc;
	c->tenant_row = malloc(sizeof(int) * c->n);
	c->fstar = malloc(sizeof(double) * c->n);
	if (c->tenant_row == NULL || c->fstar == NULL)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	for (int t = 0; t < c->n; t++)
	{
		c->tenant_row[t] = perm[t];
		c->fstar[t] = -INFINITY;
		for (int k = 0; k < c->K; k++)
			if (cfg->quality[(size_t) perm[t] * c->K + k] > c->fstar[t])
				c->fstar[t] = cfg->quality[(size_t) perm[t] * c->K + k];
	}
	return REPLAY_OK;
}

/*
 * Rows whose quality vector repeats an earlier row's are left out before
 * any draw (a copy would otherwise sit in the prior of its own twin):
 * fills rows[] with the first row of every distinct vector; returns how
 * many rows are kept.
 */
int
ReplayDistinctRows(const ReplayConfig *cfg, int *rows)
{
	int			n = 0;

	for (int r = 0; r < cfg->n_rows; r++)
	{
		const double *x = cfg->quality + (size_t) r * cfg->K;
		int			dup = 0;

		for (int j = 0; j < n && !dup; j++)
			dup = memcmp(x, cfg->quality + (size_t) rows[j] * cfg->K,
						 sizeof(double) * cfg->K) == 0;
		if (!dup)
			rows[n++] = r;
	}
	return n;
}
