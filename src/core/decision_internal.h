/*-------------------------------------------------------------------------
 *
 * decision_internal.h
 *	  What the files of the decision code share and nothing else includes:
 *	  the dirty bits, the cost-path interface and the helpers one file
 *	  defines for the others.  The public interface is decision.h.
 *
 *	  decision_world.c	 tasks by id, setup, models, tenants, adding and
 *						 removing tasks
 *	  decision_cost.c	 cost estimates on one interface (DecisionCostPath)
 *	  decision_events.c	 runs started and ended, results, the live sync
 *	  decision_view.c	 quality posteriors and mixture
 *						 views, a task's best candidate
 *	  decision_pick.c	 eligibility, fair shares, the pick
 *
 * IDENTIFICATION
 *	  src/core/decision_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_DECISION_INTERNAL_H
#define EASEML_DECISION_INTERNAL_H

#include "decision.h"

/* DecisionTask.dirty bits */
#define DIRTY_VIEW	1			/* recompute its best candidate */
#define DIRTY_ELIG	2			/* recompute whether it may run */

/*
 * A cost model as the decision code sees it.  The world holds one of two
 * (decision_cost.c): the live scheduler's family model (DecisionSetFamilyCost,
 * src/core/costmodel.h) or the replay's size model with a GP on the
 * residuals (DecisionSetCostModel, PolicyCostModel in src/core/sizecost.h;
 * with no model, the tasks' fallback costs).  Every caller goes through
 * DecisionCostInit, DecisionCostRefresh and DecisionCostAddRun, which call
 * the path DecisionCostPathOf picks; each path computes what it computed
 * before the interface, to the bit.
 */
typedef struct DecisionCostPath
{
	int			uses_fallback;	/* a task's fallback costs enter its
								 * estimates (a changed one needs a refresh) */
	/* set up t's estimates from its size and finished runs */
	void		(*init) (DecisionWorld *w, DecisionTask *t);
	/* redo t->cost from what the path holds for t */
	void		(*refresh) (DecisionWorld *w, DecisionTask *t);
	/* arm k's runtime t->seconds[k] just finished (call refresh after) */
	void		(*add_run) (DecisionWorld *w, DecisionTask *t, int k);
} DecisionCostPath;

extern const DecisionCostPath *DecisionCostPathOf(const DecisionWorld *w);
extern void DecisionCostInit(DecisionWorld *w, DecisionTask *t);
extern void DecisionCostRefresh(DecisionWorld *w, DecisionTask *t);
extern void DecisionCostAddRun(DecisionWorld *w, DecisionTask *t, int k);

/*
 * The helpers every file of the decision code uses, inline here so that
 * the files call one way: decision_world.c and decision_events.c ->
 * decision_pick.c -> decision_view.c -> decision_cost.c.
 */

/*
 * Queue a task for DecisionNext's refresh.  While the caller installs new
 * models (DecisionWorld.installing) a view is not queued but goes stale:
 * the models changed, not the task, and its view stays the previous
 * models' until DecisionRefreshStale, a pick or a change of the task
 * refreshes it (decision.h).  A task already queued gets its refresh
 * under the new models anyway.
 */
static inline void
DecisionMarkDirty(DecisionWorld *w, DecisionTask *t, unsigned char bits)
{
	if ((bits & DIRTY_VIEW) && w->installing && !(t->dirty & DIRTY_VIEW))
	{
		if (!t->stale)
			w->n_stale++;
		t->stale = 1;
		bits &= ~DIRTY_VIEW;
		if (bits == 0)
			return;
	}
	if (t->dirty == 0)
		w->dirty_list[w->n_dirty++] = t->index;
	t->dirty |= bits;
}

/* Every task of a tenant must recheck its eligibility (running changed). */
static inline void
DecisionMarkTenantDirty(DecisionWorld *w, int tenant)
{
	for (int i = w->tenants[tenant].first_task; i >= 0;
		 i = w->tasks[i]->next_of_tenant)
		DecisionMarkDirty(w, w->tasks[i], DIRTY_ELIG);
}

/* The prior a task's posterior is built on. */
static inline const GpPrior *
DecisionTaskPrior(const DecisionWorld *w, const DecisionTask *t)
{
	return t->own_prior ? t->own_prior : w->prior[t->kind];
}

/* decision_view.c */
extern int	DecisionRebuildGp(DecisionWorld *w, DecisionTask *t);
extern int	DecisionRefreshView(DecisionWorld *w, DecisionTask *t);

/* decision_pick.c */
extern void DecisionUpdateWaiting(DecisionWorld *w, int tenant);

#endif							/* EASEML_DECISION_INTERNAL_H */
