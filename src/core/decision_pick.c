/*-------------------------------------------------------------------------
 *
 * decision_pick.c
 *	  Eligibility, fair shares and the pick (decision.h): DecisionNext
 *	  brings the dirty tasks up to date and asks the PolicyIndex for the
 *	  pick, with its runner-ups; DecisionRankArms ranks one task's arms.
 *
 * Eligibility.  A task "could run" (ok) when the caller has not blocked it,
 * it has an available candidate and it has not reached max_runs.  It is
 * eligible when, in addition, its tenant runs fewer trainers than its cap:
 * the smaller of the tenant's own cap and the shared one.  The shared cap
 * is either fixed (tenant_cap > 0) or, with tenant_cap < 0, a fair share
 * of the slots, ceil(slots / tenants waiting), while more than one tenant
 * waits: has a task that could run and runs fewer trainers than its own
 * cap.  A single waiting tenant may use every slot, and a tenant held by
 * its own cap leaves its share to the others.
 *
 * IDENTIFICATION
 *	  src/core/decision_pick.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decision.h"
#include "decision_internal.h"

static int	TenantCap(const DecisionWorld *w, int tenant, int shared);
static int	TenantWants(const DecisionWorld *w, int tenant);
static int	FairShare(const DecisionWorld *w, int n_want);

int
DecisionTenantCap(const DecisionWorld *w, int tenant)
{
	int			n_want = 0;

	if (tenant < 0 || tenant >= w->n_tenants)
		return INT_MAX;
	/* as DecisionFairShares counts: the views may not be refreshed yet */
	for (int i = 0; i < w->n_tenants; i++)
		n_want += TenantWants(w, i);
	return TenantCap(w, tenant, FairShare(w, n_want));
}

int
DecisionTenantRunning(const DecisionWorld *w, int tenant)
{
	return (tenant >= 0 && tenant < w->n_tenants) ? w->tenants[tenant].running : 0;
}

/* ----------------------------------------------------------------------
 * The pick
 * ----------------------------------------------------------------------
 */

/* The shared per-tenant cap now (INT_MAX: none); see the file header. */
int
DecisionSharedCap(const DecisionWorld *w)
{
	if (w->tenant_cap > 0)
		return w->tenant_cap;
	if (w->tenant_cap == 0 || w->n_waiting <= 1)
		return INT_MAX;
	return (w->slots + w->n_waiting - 1) / w->n_waiting;
}

/* The cap of one tenant: its own, or the shared one if smaller. */
static int
TenantCap(const DecisionWorld *w, int tenant, int shared)
{
	int			own = w->tenants[tenant].cap;

	return (own > 0 && own < shared) ? own : shared;
}

/* Could t run if a slot of any device were free (caps apart)? */
static int
Wants(const DecisionTask *t)
{
	return !t->blocked && t->n_left > 0 && t->gp.prior != NULL &&
		!(t->max_runs > 0 && t->n_runs >= t->max_runs);
}

/*
 * Does a tenant want a slot now: a task of it could run, or its own queue
 * holds a run, and it is below its own cap (a tenant at its own cap leaves
 * its share to the others)?  From the tasks' own state, not from the
 * views: valid between refreshes.
 */
static int
TenantWants(const DecisionWorld *w, int tenant)
{
	const DecisionTenant *tn = &w->tenants[tenant];
	int			wants = tn->queued > 0;

	for (int j = tn->first_task; j >= 0 && !wants; j = w->tasks[j]->next_of_tenant)
		wants = Wants(w->tasks[j]);
	return wants && (tn->cap == 0 || tn->running + tn->external < tn->cap);
}

/* The fair share of the slots among the tenants that want one (INT_MAX: none). */
static int
FairShare(const DecisionWorld *w, int n_want)
{
	if (w->tenant_cap > 0)
		return w->tenant_cap;
	if (w->tenant_cap == 0 || n_want <= 1)
		return INT_MAX;
	return (w->slots + n_want - 1) / n_want;
}

int
DecisionFairShares(const DecisionWorld *w, unsigned char *starved,
				   unsigned char *over)
{
	int			n_want = 0,
				n_starved = 0,
				share;

	for (int i = 0; i < w->n_tenants; i++)
	{
		starved[i] = TenantWants(w, i);
		n_want += starved[i];
	}
	share = FairShare(w, n_want);
	for (int i = 0; i < w->n_tenants; i++)
	{
		const DecisionTenant *tn = &w->tenants[i];
		int			held = tn->running + tn->external;

		over[i] = share < INT_MAX && held > share;
		starved[i] = starved[i] && share < INT_MAX &&
			held < TenantCap(w, i, share);
		n_starved += starved[i];
	}
	return n_starved;
}

int
DecisionEligible(DecisionWorld *w, const DecisionTask *t)
{
	const DecisionTenant *tn = &w->tenants[t->tenant];

	return t->ok && tn->running + tn->external <
		TenantCap(w, t->tenant, DecisionSharedCap(w));
}

/*
 * A tenant waits when one of its tasks could run and it is below its own
 * cap; a tenant at its own cap leaves its share to the others, so the
 * fair share never idles a slot that a tenant could use.
 */
void
DecisionUpdateWaiting(DecisionWorld *w, int tenant)
{
	DecisionTenant *tn = &w->tenants[tenant];
	int			waiting = (tn->n_ok > 0 || tn->queued > 0) &&
		(tn->cap == 0 || tn->running + tn->external < tn->cap);

	if (waiting != tn->waiting)
	{
		w->n_waiting += waiting ? 1 : -1;
		tn->waiting = waiting;
	}
}

/* Recompute ok; keeps the tenants' n_ok and the world's n_waiting. */
static void
RefreshOk(DecisionWorld *w, DecisionTask *t)
{
	int			ok = !t->blocked && t->best_arm >= 0 &&
		!(t->max_runs > 0 && t->n_runs >= t->max_runs);

	if (ok != t->ok)
	{
		t->ok = ok;
		w->tenants[t->tenant].n_ok += ok ? 1 : -1;
	}
	DecisionUpdateWaiting(w, t->tenant);
}

/*
 * Put a task's eligibility into its view (and the index).  The index
 * re-ranks the view only if it changed: refreshed, or its arm did.
 */
static void
ApplyEligibility(DecisionWorld *w, DecisionTask *t, int shared)
{
	PolicyTenantView *v = &w->views[t->index];
	const DecisionTenant *tn = &w->tenants[t->tenant];
	int			arm = (t->ok && tn->running + tn->external <
					   TenantCap(w, t->tenant, shared)) ? t->best_arm : -1;
	int			changed = (t->dirty & DIRTY_VIEW) || v->arm != arm;

	v->arm = arm;
	if (changed && w->index_n == w->n_tasks)
		PolicyIndexUpdate(&w->index, t->index);
}

/* Bring dirty tasks, the shared cap and the index up to date. */
static int
Refresh(DecisionWorld *w)
{
	int			shared;
	int			rc;

	for (int j = 0; j < w->n_dirty; j++)
	{
		DecisionTask *t = w->tasks[w->dirty_list[j]];

		if (t->dirty & DIRTY_VIEW)
		{
			if (t->stale)
			{
				t->stale = 0;
				w->n_stale--;
			}
			rc = DecisionRefreshView(w, t);
			if (rc < 0)
				return rc;
		}
		RefreshOk(w, t);
	}
	shared = DecisionSharedCap(w);
	if (shared != w->cap_applied)
	{
		/* the fair share moved: every task's eligibility may change */
		w->cap_applied = shared;
		for (int i = 0; i < w->n_tasks; i++)
			ApplyEligibility(w, w->tasks[i], shared);
	}
	else
		for (int j = 0; j < w->n_dirty; j++)
			ApplyEligibility(w, w->tasks[w->dirty_list[j]], shared);
	for (int j = 0; j < w->n_dirty; j++)
		w->tasks[w->dirty_list[j]]->dirty = 0;
	w->n_dirty = 0;

	if (w->index_n != w->n_tasks && w->n_tasks > 0)
	{
		PolicyIndexFree(&w->index);
		rc = PolicyIndexInit(&w->index, w->views, w->n_tasks, 1);
		if (rc < 0)
			return rc;
		w->index_n = w->n_tasks;
	}
	return POLICY_OK;
}

/* Describe task i's candidate as the decision saw it. */
static void
Describe(const DecisionWorld *w, int i, int round_robin, DecisionCandidate *c)
{
	const PolicyTenantView *v = &w->views[i];

	c->task = i;
	c->arm = v->arm;
	c->mu = v->mu;
	c->sigma = v->sigma;
	c->cost = v->cost;
	c->acq = v->acq;
	c->score = round_robin ?
		(double) (w->decision_no - (v->last_served < 0 ? -1 : v->last_served)) :
		v->score;
}

/* Runner-ups: other tasks, then the chosen task's other candidates. */
static void
RunnersUp(DecisionWorld *w, int pick, int round_robin, DecisionChoice *c)
{
	const DecisionTask *t = w->tasks[pick];
	int			idx[DECISION_RUNNERS_UP];
	int			n;

	n = PolicyIndexTop(&w->index, round_robin, pick, DECISION_RUNNERS_UP, idx);
	for (int i = 0; i < n; i++)
		Describe(w, idx[i], round_robin, &c->runner_tasks[i]);
	c->n_runner_tasks = n;

	/* the chosen task's next candidates, as its last refresh ranked them */
	c->n_runner_arms = 0;
	for (int i = 1; i < t->n_top; i++)
	{
		DecisionCandidate *r = &c->runner_arms[c->n_runner_arms++];
		int			k = t->top_arm[i];

		r->task = pick;
		r->arm = k;
		r->mu = t->gp.mu[k];
		r->sigma = sqrt(t->gp.var[k] > 0.0 ? t->gp.var[k] : 0.0);
		r->cost = t->cost[k] * (w->arm_open != NULL ? w->arm_factor[k] : 1.0);
		r->acq = t->top_acq[i];
		r->score = NAN;
	}
}

int
DecisionNext(DecisionWorld *w, DecisionChoice *c)
{
	int			pick,
				rc;
	int			round_robin;

	memset(c, 0, sizeof(*c));
	c->chosen.task = -1;
	c->chosen.arm = -1;
	if (w->n_tasks == 0)
		return POLICY_OK;
	rc = Refresh(w);
	if (rc < 0)
		return rc;
	for (int n = 0;; n++)
	{
		pick = PolicyIndexPick(&w->index, &w->params, w->decision_no, &w->rng,
							   &c->rule);
		if (pick < 0 || !w->tasks[pick]->stale || n == DECISION_STALE_PICKS)
			break;

		/*
		 * The pick's view is the previous models': refresh it and pick
		 * again, so that the chosen candidate is normally the installed
		 * models' one.  Past the bound the stale view is used: it is what
		 * the previous generation of models, fitted on a history a refit
		 * interval older, makes of the task's current scores and
		 * candidates (every change of the task refreshes its view), i.e.
		 * the decision had the refit finished a little later.
		 */
		DecisionMarkDirty(w, w->tasks[pick], DIRTY_VIEW | DIRTY_ELIG);
		if ((rc = Refresh(w)) < 0)
			return rc;
	}
	c->n_eligible = w->index.n_elig;
	if (pick < -1)
		return pick;
	if (pick < 0)
		return POLICY_OK;
	round_robin = c->rule == POLICY_RULE_ROUND_ROBIN;
	Describe(w, pick, round_robin, &c->chosen);
	c->gp_status = w->tasks[pick]->gp.status;
	if (w->explain)
		RunnersUp(w, pick, round_robin, c);
	return POLICY_OK;
}

int
DecisionRefreshStale(DecisionWorld *w, int max)
{
	int			n = 0,
				rc;

	/* n_stale counts flags on tasks, so the scan ends within one lap */
	while (w->n_stale > n && n < max)
	{
		DecisionTask *t;

		if (w->stale_next >= w->n_tasks)
			w->stale_next = 0;
		t = w->tasks[w->stale_next++];
		if (t->stale)
		{
			DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
			n++;
		}
	}
	if (n > 0 && (rc = Refresh(w)) < 0)
		return rc;
	return w->n_stale;
}

int
DecisionRankArms(DecisionWorld *w, DecisionTask *t, DecisionCandidate *out,
				 int max)
{
	PolicyTenantView v;
	PolicyArmScore *top;
	const GpPrior *prior = DecisionTaskPrior(w, t);
	int			n = 0,
				rc;

	if (max <= 0 || t->gp.prior == NULL)
		return 0;
	top = malloc(sizeof(PolicyArmScore) * max);
	if (top == NULL)
		return POLICY_NO_MEMORY;
	memset(&v, 0, sizeof(v));
	v.id = t->id;
	v.best = t->best;
	v.n_obs = t->n_obs;
	v.last_served = t->last_served;
	v.streak = t->streak;
	v.n_running = t->n_running;
	rc = PolicyTopArms(&w->params, w->K, t->gp.mu, t->gp.var, t->cost,
					   t->avail, prior ? prior->mu0 : NULL, &v, max, top, &n);
	if (rc < 0)
	{
		free(top);
		return rc;
	}
	for (int i = 0; i < n; i++)
	{
		int			k = top[i].arm;
		DecisionCandidate *c = &out[i];

		c->task = t->index;
		c->arm = k;
		c->mu = t->gp.mu[k];
		c->sigma = sqrt(t->gp.var[k] > 0.0 ? t->gp.var[k] : 0.0);
		c->cost = t->cost[k];
		c->acq = top[i].acq;
		c->score = NAN;
	}
	free(top);
	return n;
}
