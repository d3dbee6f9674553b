/*-------------------------------------------------------------------------
 *
 * decision_cost.c
 *	  A task's cost estimates, on one interface over the world's two cost
 *	  models (DecisionCostPath, decision_internal.h):
 *
 *	  - "family": the live scheduler's per-family model (CostModel,
 *		src/core/costmodel.h, DecisionSetFamilyCost); every estimate is
 *		redone from the task's size and finished runs (CostTaskEstimate);
 *	  - "size": the replay's size model with a GP on the log-runtime
 *		residuals (PolicyCostModel, src/core/policy.h,
 *		DecisionSetCostModel), one residual per finished run; with no model
 *		the task's fallback costs.
 *
 *	  The rest of the decision code goes through DecisionCostInit,
 *	  DecisionCostRefresh and DecisionCostAddRun only, and the path is the
 *	  one DecisionCostPathOf picks: family when set, size otherwise.  Also
 *	  here: the per-class arms' cost factor, the setters of the cost models
 *	  and a kind's typical cost.
 *
 * IDENTIFICATION
 *	  src/core/decision_cost.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decision.h"
#include "decision_internal.h"

double
DecisionClassFactor(const unsigned char *per_class, int k, double classes)
{
	return (per_class != NULL && per_class[k] && classes > 2.0) ? classes : 1.0;
}

/* The per-class arms' share of a task's log cost; always 1 (for &&). */
static int
AddClassFactors(DecisionWorld *w, DecisionTask *t)
{
	if (w->arm_per_class != NULL)
		for (int k = 0; k < w->K; k++)
			t->log_base[k] += log(DecisionClassFactor(w->arm_per_class, k, t->classes));
	return 1;
}

int
DecisionSetArmPerClass(DecisionWorld *w, const unsigned char *per_class)
{
	if (per_class == NULL && w->arm_per_class == NULL)
		return POLICY_OK;
	if (per_class != NULL && w->arm_per_class != NULL &&
		memcmp(per_class, w->arm_per_class, w->K) == 0)
		return POLICY_OK;
	if (per_class == NULL)
	{
		free(w->arm_per_class);
		w->arm_per_class = NULL;
	}
	else
	{
		if (w->arm_per_class == NULL && (w->arm_per_class = malloc(w->K)) == NULL)
			return POLICY_NO_MEMORY;
		memcpy(w->arm_per_class, per_class, w->K);
	}
	for (int i = 0; i < w->n_tasks; i++)
		DecisionCostInit(w, w->tasks[i]);
	return POLICY_OK;
}

/* ----------------------------------------------------------------------
 * The family path (live): every estimate from the task's size and its
 * finished runs
 * ----------------------------------------------------------------------
 */

/*
 * A task's estimates on the family cost model, from its size and its
 * finished runs (CostTaskEstimate; O(K t^2), once per finished run).
 * The path's init and refresh both.
 */
static void
FamilyEstimate(DecisionWorld *w, DecisionTask *t)
{
	GpStateFree(&t->cgp);
	t->have_cgp = 0;
	if (CostTaskEstimate(w->family_cost, t->rows, t->features, t->classes, t->folds,
						 t->bins, t->seconds, t->passes, t->log_base, &t->overhead,
						 t->cost) < 0)
		w->gp_failed++;
	DecisionMarkDirty(w, t, DIRTY_VIEW);
}

/* A finished run: nothing to add, the refresh redoes the whole task. */
static void
FamilyAddRun(DecisionWorld *w, DecisionTask *t, int k)
{
}

/* ----------------------------------------------------------------------
 * The size path (replay): a size model and a GP on the log-runtime
 * residuals, or the fallback costs with no model
 * ----------------------------------------------------------------------
 */

/* Cost estimates from the size part and the residual posterior. */
static void
SizeRefresh(DecisionWorld *w, DecisionTask *t)
{
	const PolicyCostModel *m = w->cost_model;

	if (m != NULL && m->kind != POLICY_COST_NONE &&
		PolicyCostPredict(m, t->log_base, t->have_cgp ? &t->cgp : NULL,
						  w->scratch) == POLICY_OK)
	{
		for (int k = 0; k < w->K; k++)
			t->cost[k] = (w->cost_known[k] && isfinite(w->scratch[k]) &&
						  w->scratch[k] > 0.0) ?
				w->cost_overhead + w->scratch[k] : t->fallback[k];
	}
	else
		memcpy(t->cost, t->fallback, sizeof(double) * w->K);
	DecisionMarkDirty(w, t, DIRTY_VIEW);
}

/* One finished runtime of arm k into the task's residual posterior. */
static void
SizeAddRun(DecisionWorld *w, DecisionTask *t, int k)
{
	double		work = t->seconds[k] - w->cost_overhead;
	int			rc;

	/* the model fits the time besides the overhead (DecisionSetCostOverhead) */
	work = work > 0.05 * t->seconds[k] ? work : 0.05 * t->seconds[k];
	rc = GpStateAdd(&t->cgp, k, log(work) - t->log_base[k]);

	if (rc == GP_JITTER)
		w->gp_jitter++;
	else if (rc < 0)
		w->gp_failed++;
}

/* Set up a task's cost posterior on the world's size model. */
static void
SizeInit(DecisionWorld *w, DecisionTask *t)
{
	const PolicyCostModel *m = w->cost_model;

	GpStateFree(&t->cgp);
	t->have_cgp = 0;
	for (int k = 0; k < w->K; k++)
		t->log_base[k] = 0.0;
	if (m != NULL && m->kind != POLICY_COST_NONE &&
		PolicyCostBase(m, t->rows, t->features, t->classes, t->log_base) == POLICY_OK &&
		AddClassFactors(w, t) &&
		m->kind == POLICY_COST_SIZE_GP &&
		GpStateInit(&t->cgp, &m->resid, 16) == GP_OK)
	{
		t->have_cgp = 1;
		/* the task's own finished runtimes condition the residuals */
		for (int k = 0; k < w->K; k++)
			if (!isnan(t->seconds[k]))
				SizeAddRun(w, t, k);
	}
	SizeRefresh(w, t);
}

/* ----------------------------------------------------------------------
 * The one interface
 * ----------------------------------------------------------------------
 */

static const DecisionCostPath family_path = {
	.uses_fallback = 0,
	.init = FamilyEstimate,
	.refresh = FamilyEstimate,
	.add_run = FamilyAddRun
};

static const DecisionCostPath size_path = {
	.uses_fallback = 1,
	.init = SizeInit,
	.refresh = SizeRefresh,
	.add_run = SizeAddRun
};

const DecisionCostPath *
DecisionCostPathOf(const DecisionWorld *w)
{
	return w->family_cost != NULL ? &family_path : &size_path;
}

void
DecisionCostInit(DecisionWorld *w, DecisionTask *t)
{
	DecisionCostPathOf(w)->init(w, t);
}

void
DecisionCostRefresh(DecisionWorld *w, DecisionTask *t)
{
	DecisionCostPathOf(w)->refresh(w, t);
}

void
DecisionCostAddRun(DecisionWorld *w, DecisionTask *t, int k)
{
	DecisionCostPathOf(w)->add_run(w, t, k);
}

int
DecisionSetCostModel(DecisionWorld *w, const PolicyCostModel *model,
					 const unsigned char *known)
{
	if (model && model->K != w->K)
		return POLICY_BAD_INPUT;
	if (model == w->cost_model && model != NULL)
		return POLICY_OK;
	w->cost_model = model;
	for (int k = 0; k < w->K; k++)
		w->cost_known[k] = model == NULL ? 0 : (known ? known[k] : 1);
	for (int i = 0; i < w->n_tasks; i++)
		DecisionCostInit(w, w->tasks[i]);
	return POLICY_OK;
}

int
DecisionSetFamilyCost(DecisionWorld *w, const CostModel *model)
{
	if (model != NULL && model->K != w->K)
		return POLICY_BAD_INPUT;
	w->family_cost = model;
	for (int i = 0; i < w->n_tasks; i++)
		DecisionCostInit(w, w->tasks[i]);
	return POLICY_OK;
}

void
DecisionSetCostOverhead(DecisionWorld *w, double seconds)
{
	w->cost_overhead = (isfinite(seconds) && seconds > 0) ? seconds : 0;
}

void
DecisionTypicalCost(const DecisionWorld *w, int kind, double *cost)
{
	int			n = 0;

	for (int k = 0; k < w->K; k++)
		cost[k] = 0.0;
	for (int i = 0; i < w->n_tasks; i++)
	{
		const DecisionTask *t = w->tasks[i];

		if (t->kind != kind || t->cost == NULL)
			continue;
		for (int k = 0; k < w->K; k++)
			cost[k] += log(fmax(t->cost[k], 1e-9));
		n++;
	}
	for (int k = 0; k < w->K; k++)
		cost[k] = n > 0 ? exp(cost[k] / n) : 1.0;
}
