/*-------------------------------------------------------------------------
 *
 * decision_events.c
 *	  What happens to a task (decision.h): runs started, results observed,
 *	  runs ended, the tenants' external and queued counts, the live
 *	  worker's sync of a task from the catalog (scores, runtimes, passes,
 *	  fallback costs: only what changed is redone), blocking and max_runs.
 *
 * IDENTIFICATION
 *	  src/core/decision_events.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <string.h>

#include "decision.h"
#include "decision_internal.h"

/* ----------------------------------------------------------------------
 * Runs
 * ----------------------------------------------------------------------
 */

/* Move arm k of t to a new state, keeping the counters. */
static void
SetArm(DecisionWorld *w, DecisionTask *t, int k, unsigned char state)
{
	unsigned char old = t->arm[k];

	if (old == state)
		return;
	if (old == DECISION_ARM_AVAILABLE)
		t->n_left--;
	if (state == DECISION_ARM_AVAILABLE)
		t->n_left++;
	if (old == DECISION_ARM_RUNNING)
	{
		t->n_running--;
		w->tenants[t->tenant].running--;
		DecisionMarkTenantDirty(w, t->tenant);
	}
	if (state == DECISION_ARM_RUNNING)
	{
		t->n_running++;
		w->tenants[t->tenant].running++;
		DecisionMarkTenantDirty(w, t->tenant);
	}
	t->arm[k] = state;
	t->avail[k] = state == DECISION_ARM_AVAILABLE;
	DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
}

void
DecisionStart(DecisionWorld *w, DecisionTask *t, int arm)
{
	if (arm < 0 || arm >= w->K || t->arm[arm] == DECISION_ARM_INELIGIBLE)
		return;
	SetArm(w, t, arm, DECISION_ARM_RUNNING);
	t->n_runs++;
	t->last_served = w->decision_no++;
	DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
}

int
DecisionObserve(DecisionWorld *w, DecisionTask *t, int arm, double score,
				double seconds)
{
	int			rc = GP_OK;

	if (arm < 0 || arm >= w->K || !isfinite(score))
		return GP_BAD_INPUT;
	if (t->arm[arm] != DECISION_ARM_INELIGIBLE)
		SetArm(w, t, arm, DECISION_ARM_OBSERVED);
	if (isnan(t->score[arm]))
	{
		t->score[arm] = score;
		if (t->gp.prior != NULL && !w->skip_posterior)
		{
			/* O(t^2 + K t), a triangular solve's worth per cell */
			w->work += 2.5 * w->K * (t->n_obs + 1);
			rc = GpStateAdd(&t->gp, arm, score);
			if (rc == GP_JITTER)
				w->gp_jitter++;
			else if (rc < 0)
				w->gp_failed++;
		}
		t->n_obs++;
	}
	else if (score > t->score[arm])
	{
		/* a better result of a candidate run again: one score per arm */
		t->score[arm] = score;
		rc = DecisionRebuildGp(w, t);
	}
	if (score > t->best)
	{
		t->best = score;
		t->streak = 0;
	}
	else
		t->streak++;
	if (seconds > 0.0 && isfinite(seconds) && isnan(t->seconds[arm]))
	{
		t->seconds[arm] = seconds;
		if (t->have_cgp && !w->skip_posterior)
		{
			w->work += 2.5 * w->K * (t->cgp.t + 1);
			DecisionCostAddRun(w, t, arm);
			DecisionCostRefresh(w, t);
		}
	}
	DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
	return rc;
}

void
DecisionEnd(DecisionWorld *w, DecisionTask *t, int arm, int retry)
{
	if (arm < 0 || arm >= w->K || t->arm[arm] == DECISION_ARM_INELIGIBLE)
		return;
	if (!isnan(t->score[arm]))
		SetArm(w, t, arm, DECISION_ARM_OBSERVED);
	else
		SetArm(w, t, arm, retry ? DECISION_ARM_AVAILABLE : DECISION_ARM_DONE);
}

void
DecisionSetTenantExternal(DecisionWorld *w, int tenant, int n)
{
	if (tenant < 0 || tenant >= w->n_tenants ||
		w->tenants[tenant].external == n)
		return;
	w->tenants[tenant].external = n;
	DecisionMarkTenantDirty(w, tenant);
	/* a tenant without tasks in the world may wait for its queue */
	DecisionUpdateWaiting(w, tenant);
}

void
DecisionSetTenantQueued(DecisionWorld *w, int tenant, int n)
{
	if (tenant < 0 || tenant >= w->n_tenants || n < 0 ||
		w->tenants[tenant].queued == n)
		return;
	w->tenants[tenant].queued = n;
	DecisionMarkTenantDirty(w, tenant);
	DecisionUpdateWaiting(w, tenant);
}

/* a and b have the same bits (equal, or the same NaN): nothing to sync */
static inline int
SameBits(double a, double b)
{
	uint64_t	x,
				y;

	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	return x == y;
}

/*
 * Scores of a synced task: add new ones, rebuild on a change.  A sync
 * usually brings one new score among K unchanged ones: those are skipped
 * on one predictable bit comparison each.
 */
static void
SyncScores(DecisionWorld *w, DecisionTask *t, const double *score)
{
	int			rebuild = 0,
				changed = 0;
	double		best = 0.0;

	for (int k = 0; k < w->K; k++)
	{
		if (SameBits(score[k], t->score[k]) ||
			t->arm[k] == DECISION_ARM_INELIGIBLE)
			continue;
		if (isnan(score[k]) && isnan(t->score[k]))
			continue;
		if (!isnan(score[k]) && isnan(t->score[k]) && !rebuild)
		{
			/* the common case: one new result, one incremental update */
			t->score[k] = score[k];
			if (t->gp.prior != NULL)
			{
				int			rc = GpStateAdd(&t->gp, k, score[k]);

				if (rc == GP_JITTER)
					w->gp_jitter++;
				else if (rc < 0)
					w->gp_failed++;
			}
			t->n_obs++;
			changed = 1;
		}
		else if (!(score[k] == t->score[k]))
		{
			t->score[k] = score[k];
			rebuild = 1;
		}
	}
	if (rebuild)
		(void) DecisionRebuildGp(w, t);
	/* unchanged scores (every task on a full load) keep the view */
	if (changed | rebuild)
		DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
	/* the best score, at least 0 (NaN compares false: no branch to miss) */
	for (int k = 0; k < w->K; k++)
		best = t->score[k] > best ? t->score[k] : best;
	t->best = best;
}

/* What SyncCosts keeps of a runtime: > 0 and finite, or NaN. */
static inline double
CleanSeconds(double sec)
{
	return (sec > 0.0 && isfinite(sec)) ? sec : NAN;
}

/* The task keeps sec as it is: the same bits, and CleanSeconds keeps it. */
static inline int
KeptSeconds(double sec, double kept)
{
	return SameBits(sec, kept) & !(sec <= 0.0) & (sec != INFINITY);
}

/*
 * Runtimes and fallback estimates of a synced task.  Runtimes the task
 * already has (the same bits, kept as they are) are skipped first, on a
 * predictable branch.
 */
static void
SyncCosts(DecisionWorld *w, DecisionTask *t, const DecisionTaskState *s)
{
	int			changed = 0,
				reinit = 0;

	/* the data's bins, reported by its first tree run: a new base */
	if (s->bins > 0 && isfinite(s->bins) && !(s->bins == t->bins))
	{
		t->bins = s->bins;
		reinit = 1;
	}
	for (int k = 0; k < w->K; k++)
	{
		double		sec = s->seconds ? s->seconds[k] : NAN;
		double		fb = s->fallback_cost ? s->fallback_cost[k] : t->fallback[k];
		double		p = s->passes && s->passes[k] >= 1 && isfinite(s->passes[k]) ?
			s->passes[k] : NAN;

		/* the passes a run made: its arm's share and its family's (a new base) */
		if (!SameBits(p, t->passes[k]) && !(isnan(p) && isnan(t->passes[k])))
		{
			t->passes[k] = p;
			reinit = 1;
		}

		if (!(isfinite(fb) && fb > 0.0))
			fb = 1.0;
		if (fb != t->fallback[k])
		{
			/* a cost path that does not use them (family): same costs, view */
			t->fallback[k] = fb;
			changed |= DecisionCostPathOf(w)->uses_fallback;
		}
		if (s->seconds ? KeptSeconds(sec, t->seconds[k]) : isnan(t->seconds[k]))
			continue;
		sec = CleanSeconds(sec);
		if (isnan(sec) && isnan(t->seconds[k]))
			continue;
		if (isnan(t->seconds[k]) && !isnan(sec))
		{
			t->seconds[k] = sec;
			if (t->have_cgp && !reinit)
				DecisionCostAddRun(w, t, k);
			changed = 1;
		}
		else if (!(sec == t->seconds[k]))
		{
			t->seconds[k] = sec;
			reinit = 1;
		}
	}
	if (reinit)
		DecisionCostInit(w, t);
	else if (changed)
		DecisionCostRefresh(w, t);
}

void
DecisionSyncTask(DecisionWorld *w, DecisionTask *t, const DecisionTaskState *s)
{
	SyncScores(w, t, s->score);
	for (int k = 0; k < w->K; k++)
		if (t->arm[k] != s->state[k] && t->arm[k] != DECISION_ARM_INELIGIBLE &&
			s->state[k] != DECISION_ARM_INELIGIBLE)
			SetArm(w, t, k, s->state[k]);
	SyncCosts(w, t, s);
	if (t->n_runs != s->n_runs || t->max_runs != s->max_runs ||
		t->blocked != (s->blocked != 0) || t->last_served != s->last_served ||
		t->streak != s->streak)
	{
		t->n_runs = s->n_runs;
		t->max_runs = s->max_runs;
		t->blocked = s->blocked != 0;
		t->last_served = s->last_served;
		t->streak = s->streak;
		DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
	}
}

void
DecisionBlock(DecisionWorld *w, DecisionTask *t, int blocked)
{
	if ((t->blocked != 0) == (blocked != 0))
		return;
	t->blocked = blocked != 0;
	DecisionMarkDirty(w, t, DIRTY_ELIG);
}

void
DecisionSetMaxRuns(DecisionWorld *w, DecisionTask *t, int max_runs, int n_runs)
{
	if (t->max_runs == max_runs && t->n_runs == n_runs)
		return;
	t->max_runs = max_runs;
	t->n_runs = n_runs;
	DecisionMarkDirty(w, t, DIRTY_ELIG);
}
