/*-------------------------------------------------------------------------
 *
 * decision.c
 *	  Assembling scheduling decisions (see decision.h): the world of tasks
 *	  and tenants, eligibility and fair shares, incremental posteriors and
 *	  cost estimates, and the pick with its reasons.
 *
 * Every change to a task (a run started, a result, a failure, a new
 * prior) marks it dirty; DecisionNext first brings the dirty tasks' best
 * candidates and eligibility up to date, then asks the PolicyIndex for the
 * pick.  Nothing is recomputed for tasks that did not change.
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
 *	  src/core/decision.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decision.h"
#include "mixlearn.h"
#include "mixplan.h"

/* DecisionTask.dirty bits */
#define DIRTY_VIEW	1			/* recompute its best candidate */
#define DIRTY_ELIG	2			/* recompute whether it may run */

#define TOP_ARMS DECISION_TOP_ARMS

static void UpdateWaiting(DecisionWorld *w, int tenant);
static int	TenantCap(const DecisionWorld *w, int tenant, int shared);
static int	TenantWants(const DecisionWorld *w, int tenant);
static int	FairShare(const DecisionWorld *w, int n_want);
static void InitCosts(DecisionWorld *w, DecisionTask *t);
static void InitFamilyCosts(DecisionWorld *w, DecisionTask *t);

/* ----------------------------------------------------------------------
 * Tasks by id: open addressing with linear probing (deletion shifts the
 * following entries back, so there are no tombstones)
 * ----------------------------------------------------------------------
 */

static inline size_t
Slot(int64_t id, size_t mask)
{
	uint64_t	x = (uint64_t) id * 0x9E3779B97F4A7C15ULL;

	return (size_t) (x >> 17) & mask;
}

/* Insert t; the table is kept at most half full. */
static int
MapInsert(DecisionWorld *w, DecisionTask *t)
{
	if ((size_t) (w->n_tasks + 1) * 2 > w->map_cap)
	{
		size_t		cap = w->map_cap ? w->map_cap * 2 : 64;
		DecisionTask **m = calloc(cap, sizeof(DecisionTask *));

		if (m == NULL)
			return 0;
		for (size_t i = 0; i < w->map_cap; i++)
			if (w->map[i])
			{
				size_t		s = Slot(w->map[i]->id, cap - 1);

				while (m[s])
					s = (s + 1) & (cap - 1);
				m[s] = w->map[i];
			}
		free(w->map);
		w->map = m;
		w->map_cap = cap;
	}
	{
		size_t		s = Slot(t->id, w->map_cap - 1);

		while (w->map[s])
			s = (s + 1) & (w->map_cap - 1);
		w->map[s] = t;
	}
	return 1;
}

static void
MapDelete(DecisionWorld *w, const DecisionTask *t)
{
	size_t		mask = w->map_cap - 1;
	size_t		s = Slot(t->id, mask);

	while (w->map[s] && w->map[s] != t)
		s = (s + 1) & mask;
	if (w->map[s] == NULL)
		return;
	w->map[s] = NULL;
	/* shift back the entries of the run that follows */
	for (size_t j = (s + 1) & mask; w->map[j]; j = (j + 1) & mask)
	{
		size_t		home = Slot(w->map[j]->id, mask);

		/* move j into the hole s unless its home lies in (s, j] */
		if ((j > s && (home <= s || home > j)) || (j < s && home <= s && home > j))
		{
			w->map[s] = w->map[j];
			w->map[j] = NULL;
			s = j;
		}
	}
}

DecisionTask *
DecisionFindTask(const DecisionWorld *w, int64_t id)
{
	size_t		s;

	if (w->map_cap == 0)
		return NULL;
	for (s = Slot(id, w->map_cap - 1); w->map[s]; s = (s + 1) & (w->map_cap - 1))
		if (w->map[s]->id == id)
			return w->map[s];
	return NULL;
}

/* Make an array of n elements of size sz hold at least need. */
static int
Grow(void **arr, int *cap, int need, size_t sz)
{
	int			nc = *cap > 0 ? *cap : 16;
	void	   *p;

	if (need <= *cap)
		return 1;
	while (nc < need)
		nc *= 2;
	p = realloc(*arr, sz * (size_t) nc);
	if (p == NULL)
		return 0;
	*arr = p;
	*cap = nc;
	return 1;
}

/*
 * Queue a task for DecisionNext's refresh.  While the caller installs new
 * models (DecisionWorld.installing) a view is not queued but goes stale:
 * the models changed, not the task, and its view stays the previous
 * models' until DecisionRefreshStale, a pick or a change of the task
 * refreshes it (decision.h).  A task already queued gets its refresh
 * under the new models anyway.
 */
static void
MarkDirty(DecisionWorld *w, DecisionTask *t, unsigned char bits)
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
static void
MarkTenantDirty(DecisionWorld *w, int tenant)
{
	for (int i = w->tenants[tenant].first_task; i >= 0;
		 i = w->tasks[i]->next_of_tenant)
		MarkDirty(w, w->tasks[i], DIRTY_ELIG);
}

/* The prior a task's posterior is built on. */
static const GpPrior *
TaskPrior(const DecisionWorld *w, const DecisionTask *t)
{
	return t->own_prior ? t->own_prior : w->prior[t->kind];
}

int
DecisionWorldInit(DecisionWorld *w, int K, const unsigned char *arm_kinds,
				  const unsigned char *arm_image, const PolicyParams *params)
{
	memset(w, 0, sizeof(*w));
	if (K <= 0 || params == NULL)
		return POLICY_BAD_INPUT;
	w->K = K;
	w->params = *params;
	w->slots = 1;
	w->tenant_cap = 0;
	w->index_n = -1;
	w->cap_applied = INT_MAX;
	w->arm_kinds = malloc(K);
	w->arm_image = malloc(K);
	w->cost_known = malloc(K);
	w->scratch = malloc(sizeof(double) * K);
	if (w->arm_kinds == NULL || w->arm_image == NULL ||
		w->cost_known == NULL || w->scratch == NULL)
	{
		DecisionWorldFree(w);
		return POLICY_NO_MEMORY;
	}
	for (int k = 0; k < K; k++)
	{
		w->arm_kinds[k] = arm_kinds ? arm_kinds[k] : (1 << DECISION_CLASSIFICATION);
		w->arm_image[k] = arm_image ? arm_image[k] : 0;
		w->cost_known[k] = 0;
	}
	return POLICY_OK;
}

/* Free one task's arrays and posteriors. */
static void
TaskFree(DecisionTask *t)
{
	GpStateFree(&t->gp);
	GpStateFree(&t->cgp);
	free(t->arm);
	free(t->avail);
	free(t->score);
	free(t->seconds);
	free(t->passes);
	free(t->log_base);
	free(t->fallback);
	free(t->cost);
	free(t);
}

void
DecisionWorldFree(DecisionWorld *w)
{
	for (int i = 0; i < w->n_tasks; i++)
		TaskFree(w->tasks[i]);
	free(w->tasks);
	free(w->map);
	free(w->views);
	free(w->dirty_list);
	free(w->tenants);
	free(w->arm_kinds);
	free(w->arm_image);
	free(w->cost_known);
	free(w->scratch);
	free(w->arm_open);
	free(w->arm_factor);
	free(w->open_avail);
	free(w->placed_cost);
	free(w->arm_per_class);
	free(w->mix_w);
	free(w->mix_off);
	for (int k = 0; k < DECISION_KINDS; k++)
		free(w->mix_learn[k]);
	PolicyIndexFree(&w->index);
	memset(w, 0, sizeof(*w));
}

int
DecisionSetPlacement(DecisionWorld *w, const unsigned char *open,
					 const double *factor)
{
	if (open == NULL)
	{
		if (w->arm_open == NULL)
			return POLICY_OK;
		free(w->arm_open);
		w->arm_open = NULL;
	}
	else
	{
		if (w->arm_open == NULL)
		{
			w->arm_open = malloc(w->K);
			w->arm_factor = malloc(sizeof(double) * w->K);
			w->open_avail = malloc(w->K);
			w->placed_cost = malloc(sizeof(double) * w->K);
			if (!w->arm_open || !w->arm_factor || !w->open_avail || !w->placed_cost)
			{
				free(w->arm_open);
				w->arm_open = NULL;
				return POLICY_NO_MEMORY;
			}
		}
		else if (memcmp(w->arm_open, open, w->K) == 0 &&
				 memcmp(w->arm_factor, factor, sizeof(double) * w->K) == 0)
			return POLICY_OK;	/* unchanged: nothing to refresh */
		memcpy(w->arm_open, open, w->K);
		memcpy(w->arm_factor, factor, sizeof(double) * w->K);
	}
	for (int i = 0; i < w->n_tasks; i++)
		MarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
	return POLICY_OK;
}

void
DecisionSetParams(DecisionWorld *w, const PolicyParams *params)
{
	w->params = *params;
	w->index_n = -1;			/* idle_only may differ */
	for (int i = 0; i < w->n_tasks; i++)
		MarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
}

/* ----------------------------------------------------------------------
 * Posteriors and costs of one task
 * ----------------------------------------------------------------------
 */

/*
 * Rebuild a task's quality posterior from its observed scores on the
 * prior it uses now (a new prior, or a changed score).  Observations go in
 * arm order, so the result does not depend on the order runs finished.
 */
static int
RebuildGp(DecisionWorld *w, DecisionTask *t)
{
	const GpPrior *prior = TaskPrior(w, t);
	int			rc;

	GpStateFree(&t->gp);
	t->n_obs = 0;
	if (prior == NULL)
		return GP_OK;
	rc = GpStateInit(&t->gp, prior, 16);
	if (rc < 0)
		return rc;
	for (int k = 0; k < w->K; k++)
		if (!isnan(t->score[k]))
		{
			int			grc = GpStateAdd(&t->gp, k, t->score[k]);

			if (grc == GP_JITTER)
				w->gp_jitter++;
			else if (grc < 0)
				w->gp_failed++;
			t->n_obs++;
		}
	MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
	return GP_OK;
}

/* Cost estimates from the size part and the residual posterior. */
static void
RefreshCosts(DecisionWorld *w, DecisionTask *t)
{
	const PolicyCostModel *m = w->cost_model;

	if (w->family_cost != NULL)
	{
		InitFamilyCosts(w, t);
		return;
	}
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
	MarkDirty(w, t, DIRTY_VIEW);
}

/* One finished runtime of arm k into the task's residual posterior. */
static void
AddCostResidual(DecisionWorld *w, DecisionTask *t, int k)
{
	double		work = t->seconds[k] - w->cost_overhead;
	int			rc;

	if (w->family_cost != NULL)
		return;					/* RefreshCosts redoes the whole task */
	/* the model fits the time besides the overhead (DecisionSetCostOverhead) */
	work = work > 0.05 * t->seconds[k] ? work : 0.05 * t->seconds[k];
	rc = GpStateAdd(&t->cgp, k, log(work) - t->log_base[k]);

	if (rc == GP_JITTER)
		w->gp_jitter++;
	else if (rc < 0)
		w->gp_failed++;
}

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
		InitCosts(w, w->tasks[i]);
	return POLICY_OK;
}

/*
 * A task's estimates on the family cost model, from its size and its
 * finished runs (CostTaskEstimate; O(K t^2), once per finished run).
 */
static void
InitFamilyCosts(DecisionWorld *w, DecisionTask *t)
{
	GpStateFree(&t->cgp);
	t->have_cgp = 0;
	if (CostTaskEstimate(w->family_cost, t->rows, t->features, t->classes, t->folds,
						 t->bins, t->seconds, t->passes, t->log_base, &t->overhead,
						 t->cost) < 0)
		w->gp_failed++;
	MarkDirty(w, t, DIRTY_VIEW);
}

/* Set up a task's cost posterior on the world's cost model. */
static void
InitCosts(DecisionWorld *w, DecisionTask *t)
{
	const PolicyCostModel *m = w->cost_model;

	if (w->family_cost != NULL)
	{
		InitFamilyCosts(w, t);
		return;
	}
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
				AddCostResidual(w, t, k);
	}
	RefreshCosts(w, t);
}

int
DecisionSetPrior(DecisionWorld *w, int kind, const GpPrior *prior)
{
	int			rc = GP_OK;

	if (kind < 0 || kind >= DECISION_KINDS || (prior && prior->K != w->K))
		return GP_BAD_INPUT;
	if (w->prior[kind] == prior)
		return GP_OK;
	w->prior[kind] = prior;
	for (int i = 0; i < w->n_tasks; i++)
	{
		DecisionTask *t = w->tasks[i];

		if (t->kind == kind && t->own_prior == NULL)
		{
			int			r = RebuildGp(w, t);

			if (r < 0)
				rc = r;
		}
	}
	return rc;
}

int
DecisionSetMixture(DecisionWorld *w, int kind, const MixPrior *mix)
{
	return DecisionSetMixtureRows(w, kind, mix, NULL);
}

int
DecisionSetMixtureRows(DecisionWorld *w, int kind, const MixPrior *mix,
					   const int64_t *row_task)
{
	int			rc = POLICY_OK;

	if (kind < 0 || kind >= DECISION_KINDS || (mix && mix->K != w->K))
		return POLICY_BAD_INPUT;
	if (mix && mix->m > w->mix_cap)
	{
		double	   *a = realloc(w->mix_w, sizeof(double) * mix->m);
		double	   *b = a ? realloc(w->mix_off, sizeof(double) * mix->m) : NULL;

		if (a != NULL)
			w->mix_w = a;
		if (b != NULL)
			w->mix_off = b;
		if (a != NULL && b != NULL)
			w->mix_cap = mix->m;
		else
		{
			/*
			 * The caller may have replaced the contents of the mixture in
			 * use (the refit's live set): scratch too short for the new
			 * one must not meet it, so the kind goes without.
			 */
			mix = NULL;
			rc = POLICY_NO_MEMORY;
		}
	}
	w->mix[kind] = mix;
	w->mix_task[kind] = mix ? row_task : NULL;
	free(w->mix_learn[kind]);	/* fitted on another mixture */
	w->mix_learn[kind] = NULL;
	for (int i = 0; i < w->n_tasks; i++)
		if (w->tasks[i]->kind == kind)
			MarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
	return rc;
}

int
DecisionSetMixLearn(DecisionWorld *w, int kind, const MixLearn *ml)
{
	MixLearn   *copy = NULL;

	if (kind < 0 || kind >= DECISION_KINDS)
		return POLICY_BAD_INPUT;
	if (ml != NULL && (copy = malloc(sizeof(MixLearn))) == NULL)
		return POLICY_NO_MEMORY;
	if (copy != NULL)
		*copy = *ml;
	free(w->mix_learn[kind]);
	w->mix_learn[kind] = copy;
	for (int i = 0; i < w->n_tasks; i++)
		if (w->tasks[i]->kind == kind)
			MarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
	return POLICY_OK;
}

int
DecisionTaskSetPrior(DecisionWorld *w, DecisionTask *t, const GpPrior *prior)
{
	if (prior && prior->K != w->K)
		return GP_BAD_INPUT;
	if (prior == t->own_prior)
		return GP_OK;
	t->own_prior = prior;
	return RebuildGp(w, t);
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
		InitCosts(w, w->tasks[i]);
	return POLICY_OK;
}

int
DecisionSetFamilyCost(DecisionWorld *w, const CostModel *model)
{
	if (model != NULL && model->K != w->K)
		return POLICY_BAD_INPUT;
	w->family_cost = model;
	for (int i = 0; i < w->n_tasks; i++)
		InitCosts(w, w->tasks[i]);
	return POLICY_OK;
}

void
DecisionSetCostOverhead(DecisionWorld *w, double seconds)
{
	w->cost_overhead = (isfinite(seconds) && seconds > 0) ? seconds : 0;
}

int
DecisionInstallModels(DecisionWorld *w, const GpPrior *const *priors,
					  const GpPrior *(*own) (const void *arg, int64_t task),
					  const void *arg, const PolicyCostModel *cost,
					  const unsigned char *known)
{
	int			rc = GP_OK;

	for (int k = 0; k < DECISION_KINDS; k++)
		if (priors && priors[k])
		{
			if (priors[k]->K != w->K)
				return GP_BAD_INPUT;
			w->prior[k] = priors[k];
		}
	if (cost)
	{
		if (cost->K != w->K)
			return POLICY_BAD_INPUT;
		w->cost_model = cost;
		for (int k = 0; k < w->K; k++)
			w->cost_known[k] = known ? known[k] : 1;
	}
	for (int i = 0; i < w->n_tasks; i++)
	{
		DecisionTask *t = w->tasks[i];
		int			r;

		if (own)
		{
			const GpPrior *p = own(arg, t->id);

			t->own_prior = (p && p->K == w->K) ? p : NULL;
		}
		r = RebuildGp(w, t);
		if (r < 0)
			rc = r;
		if (cost)
			InitCosts(w, t);
	}
	return rc;
}

/* ----------------------------------------------------------------------
 * Tenants and tasks
 * ----------------------------------------------------------------------
 */

int
DecisionAddTenant(DecisionWorld *w, int cap)
{
	DecisionTenant *tn;

	if (!Grow((void **) &w->tenants, &w->cap_tenants, w->n_tenants + 1,
			  sizeof(DecisionTenant)))
		return POLICY_NO_MEMORY;
	tn = &w->tenants[w->n_tenants];
	memset(tn, 0, sizeof(*tn));
	tn->cap = cap > 0 ? cap : 0;
	tn->first_task = -1;
	return w->n_tenants++;
}

void
DecisionSetTenantCap(DecisionWorld *w, int tenant, int cap)
{
	if (tenant < 0 || tenant >= w->n_tenants)
		return;
	w->tenants[tenant].cap = cap > 0 ? cap : 0;
	MarkTenantDirty(w, tenant);
	UpdateWaiting(w, tenant);
}

/* Is arm k a candidate for a task of this spec at all? */
static int
ArmFits(const DecisionWorld *w, const DecisionTaskSpec *s, int k)
{
	if (!(w->arm_kinds[k] & (1 << s->kind)))
		return 0;
	if (w->arm_image[k] && !s->has_image)
		return 0;
	return s->eligible ? s->eligible[k] != 0 : 1;
}

DecisionTask *
DecisionAddTask(DecisionWorld *w, const DecisionTaskSpec *s)
{
	DecisionTask *t;
	int			K = w->K;

	if (s->tenant < 0 || s->tenant >= w->n_tenants || s->kind < 0 ||
		s->kind >= DECISION_KINDS)
		return NULL;
	if (!Grow((void **) &w->tasks, &w->cap_tasks, w->n_tasks + 1,
			  sizeof(DecisionTask *)))
		return NULL;
	/* views and the dirty list follow the tasks' capacity */
	{
		PolicyTenantView *v = realloc(w->views, sizeof(PolicyTenantView) * w->cap_tasks);
		int		   *d;

		if (v == NULL)
			return NULL;
		w->views = v;
		d = realloc(w->dirty_list, sizeof(int) * w->cap_tasks);
		if (d == NULL)
			return NULL;
		w->dirty_list = d;
	}
	t = calloc(1, sizeof(DecisionTask));
	if (t == NULL)
		return NULL;
	t->arm = malloc(K);
	t->avail = malloc(K);
	t->score = malloc(sizeof(double) * K);
	t->seconds = malloc(sizeof(double) * K);
	t->passes = malloc(sizeof(double) * K);
	t->log_base = malloc(sizeof(double) * K);
	t->fallback = malloc(sizeof(double) * K);
	t->cost = malloc(sizeof(double) * K);
	if (!t->arm || !t->avail || !t->score || !t->seconds || !t->passes || !t->log_base ||
		!t->fallback || !t->cost)
	{
		TaskFree(t);
		return NULL;
	}
	t->id = s->id;
	t->tenant = s->tenant;
	t->kind = s->kind;
	t->rows = s->rows > 0 ? s->rows : 1;
	t->features = s->features > 0 ? s->features : 1;
	t->classes = s->classes > 0 ? s->classes : 1;
	t->folds = s->folds > 1 ? s->folds : 1;
	t->bins = s->bins > 0 ? s->bins : NAN;
	t->max_runs = s->max_runs;
	for (int k = 0; k < K; k++)
	{
		double		c = s->fallback_cost ? s->fallback_cost[k] : 1.0;

		t->fallback[k] = (isfinite(c) && c > 0.0) ? c : 1.0;
	}
	if (DecisionFindTask(w, s->id) != NULL || !MapInsert(w, t))
	{
		TaskFree(t);
		return NULL;
	}
	t->index = w->n_tasks;
	w->tasks[w->n_tasks] = t;
	memset(&w->views[w->n_tasks], 0, sizeof(PolicyTenantView));
	w->views[w->n_tasks].arm = -1;
	w->n_tasks++;
	t->next_of_tenant = w->tenants[t->tenant].first_task;
	w->tenants[t->tenant].first_task = t->index;
	w->index_n = -1;

	for (int k = 0; k < K; k++)
	{
		t->arm[k] = ArmFits(w, s, k) ? DECISION_ARM_AVAILABLE : DECISION_ARM_INELIGIBLE;
		t->score[k] = t->seconds[k] = t->passes[k] = NAN;
	}
	InitCosts(w, t);
	DecisionResetTask(w, t);
	return t;
}

/* Unlink task index i from its tenant's list. */
static void
UnlinkFromTenant(DecisionWorld *w, int i)
{
	DecisionTask *t = w->tasks[i];
	int		   *link = &w->tenants[t->tenant].first_task;

	while (*link >= 0 && *link != i)
		link = &w->tasks[*link]->next_of_tenant;
	if (*link == i)
		*link = t->next_of_tenant;
}

void
DecisionRemoveTask(DecisionWorld *w, DecisionTask *t)
{
	int			i = t->index;
	int			last = w->n_tasks - 1;
	DecisionTenant *tn = &w->tenants[t->tenant];

	if (t->ok)
		tn->n_ok--;
	if (t->stale)
		w->n_stale--;
	tn->running -= t->n_running;
	UpdateWaiting(w, t->tenant);
	UnlinkFromTenant(w, i);
	MapDelete(w, t);
	if (i != last)
	{
		/* the last task takes the freed place; fix links that name it */
		DecisionTask *m = w->tasks[last];
		int		   *link = &w->tenants[m->tenant].first_task;

		while (*link != last)
			link = &w->tasks[*link]->next_of_tenant;
		*link = i;
		w->tasks[i] = m;
		w->views[i] = w->views[last];
		m->index = i;
	}
	w->n_tasks--;
	/* the dirty list may name either index: rebuild it */
	w->n_dirty = 0;
	for (int j = 0; j < w->n_tasks; j++)
		if (w->tasks[j]->dirty)
			w->dirty_list[w->n_dirty++] = j;
	MarkTenantDirty(w, t->tenant);
	TaskFree(t);
	w->index_n = -1;
}

void
DecisionResetTask(DecisionWorld *w, DecisionTask *t)
{
	w->tenants[t->tenant].running -= t->n_running;
	t->n_running = 0;
	t->n_left = 0;
	t->n_runs = 0;
	t->best = 0.0;
	t->last_served = -1;
	t->streak = 0;
	for (int k = 0; k < w->K; k++)
	{
		if (t->arm[k] != DECISION_ARM_INELIGIBLE)
			t->arm[k] = DECISION_ARM_AVAILABLE;
		t->avail[k] = t->arm[k] == DECISION_ARM_AVAILABLE;
		t->n_left += t->avail[k];
		t->score[k] = NAN;
		t->seconds[k] = NAN;
	}
	(void) RebuildGp(w, t);
	if (t->have_cgp)
		GpStateReset(&t->cgp);
	RefreshCosts(w, t);
	MarkTenantDirty(w, t->tenant);
	MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
}

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
		MarkTenantDirty(w, t->tenant);
	}
	if (state == DECISION_ARM_RUNNING)
	{
		t->n_running++;
		w->tenants[t->tenant].running++;
		MarkTenantDirty(w, t->tenant);
	}
	t->arm[k] = state;
	t->avail[k] = state == DECISION_ARM_AVAILABLE;
	MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
}

void
DecisionStart(DecisionWorld *w, DecisionTask *t, int arm)
{
	if (arm < 0 || arm >= w->K || t->arm[arm] == DECISION_ARM_INELIGIBLE)
		return;
	SetArm(w, t, arm, DECISION_ARM_RUNNING);
	t->n_runs++;
	t->last_served = w->decision_no++;
	MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
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
		rc = RebuildGp(w, t);
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
			AddCostResidual(w, t, arm);
			RefreshCosts(w, t);
		}
	}
	MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
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
	MarkTenantDirty(w, tenant);
	/* a tenant without tasks in the world may wait for its queue */
	UpdateWaiting(w, tenant);
}

void
DecisionSetTenantQueued(DecisionWorld *w, int tenant, int n)
{
	if (tenant < 0 || tenant >= w->n_tenants || n < 0 ||
		w->tenants[tenant].queued == n)
		return;
	w->tenants[tenant].queued = n;
	MarkTenantDirty(w, tenant);
	UpdateWaiting(w, tenant);
}

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
		(void) RebuildGp(w, t);
	/* unchanged scores (every task on a full load) keep the view */
	if (changed | rebuild)
		MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
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
			/* the family cost model does not use them: same costs, view */
			t->fallback[k] = fb;
			changed |= w->family_cost == NULL;
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
				AddCostResidual(w, t, k);
			changed = 1;
		}
		else if (!(sec == t->seconds[k]))
		{
			t->seconds[k] = sec;
			reinit = 1;
		}
	}
	if (reinit)
		InitCosts(w, t);
	else if (changed)
		RefreshCosts(w, t);
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
		MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
	}
}

void
DecisionBlock(DecisionWorld *w, DecisionTask *t, int blocked)
{
	if ((t->blocked != 0) == (blocked != 0))
		return;
	t->blocked = blocked != 0;
	MarkDirty(w, t, DIRTY_ELIG);
}

void
DecisionSetMaxRuns(DecisionWorld *w, DecisionTask *t, int max_runs, int n_runs)
{
	if (t->max_runs == max_runs && t->n_runs == n_runs)
		return;
	t->max_runs = max_runs;
	t->n_runs = n_runs;
	MarkDirty(w, t, DIRTY_ELIG);
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
 * Lookahead task score (la=M): the expected improvement of the best of the
 * task's next n candidates, as its own ranking orders them, per second of
 * all of them, under the task's joint posterior.
 */
static int
LookaheadScore(const DecisionWorld *w, const DecisionTask *t,
			   const PolicyArmScore *top, int n,
			   const double *cost, PolicyTenantView *v)
{
	int			arms[POLICY_LOOKAHEAD_MAX];
	double		mu[POLICY_LOOKAHEAD_MAX],
				c[POLICY_LOOKAHEAD_MAX],
				cov[POLICY_LOOKAHEAD_MAX * POLICY_LOOKAHEAD_MAX];
	int			rc;

	for (int j = 0; j < n; j++)
	{
		arms[j] = top[j].arm;
		mu[j] = t->gp.mu[arms[j]];
		c[j] = cost ? cost[arms[j]] : 1.0;
	}
	n = PolicyLookaheadCut(&w->params, n, c);
	rc = GpStateCov(&t->gp, n, arms, cov);
	if (rc == GP_NO_MEMORY)
		return POLICY_NO_MEMORY;
	if (rc < 0)
		return POLICY_GP_FAILED;
	return PolicyLookaheadScore(&w->params, n, mu, cov, c, v, NULL);
}

/*
 * Remaining-regret task score (rg=M): the expected improvement of the best
 * of the task's M candidates of largest EI (not per second), under its
 * joint posterior, per second of the run it would start now.
 */
static int
RegretScore(const DecisionWorld *w, const DecisionTask *t,
			const unsigned char *avail, PolicyTenantView *v)
{
	PolicyParams rp = w->params;
	PolicyTenantView tv = *v;
	PolicyArmScore top[POLICY_LOOKAHEAD_MAX];
	int			arms[POLICY_LOOKAHEAD_MAX];
	double		mu[POLICY_LOOKAHEAD_MAX],
				cov[POLICY_LOOKAHEAD_MAX * POLICY_LOOKAHEAD_MAX];
	int			n = 0,
				rc;

	rp.cost_aware = 0;
	rp.q_max_arm = 1;
	rp.first_mean = 0;
	rc = PolicyTopArms(&rp, w->K, t->gp.mu, t->gp.var, NULL, avail, NULL,
					   &tv, PolicyRegretBatch(&w->params), top, &n);
	if (rc < 0)
		return rc;
	if (n == 0)
		return POLICY_OK;
	for (int j = 0; j < n; j++)
	{
		arms[j] = top[j].arm;
		mu[j] = t->gp.mu[arms[j]];
	}
	rc = GpStateCov(&t->gp, n, arms, cov);
	if (rc == GP_NO_MEMORY)
		return POLICY_NO_MEMORY;
	if (rc < 0)
		return POLICY_GP_FAILED;
	return PolicyRegretScore(&w->params, n, mu, cov, v, NULL);
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

/*
 * mrg=2's model of a kind fitted on the decision path (replays: on first
 * use, off the replay's clock; 1.1 s of CPU for 388 rows x 219 arms).
 */
static int
FitLearned(DecisionWorld *w, int kind)
{
	MixLearn   *ml = calloc(1, sizeof(MixLearn));
	double	   *cost = malloc(sizeof(double) * w->K);
	int			rc = ml && cost ? POLICY_OK : POLICY_NO_MEMORY;

	if (rc == POLICY_OK)
	{
		DecisionTypicalCost(w, kind, cost);
		rc = MixLearnFit(ml, w->mix[kind], &w->params,
						 w->params.cost_aware ? cost : NULL);
	}
	free(cost);
	if (rc == POLICY_NO_MEMORY || ml == NULL)
	{
		free(ml);
		return POLICY_NO_MEMORY;
	}
	free(w->mix_learn[kind]);
	w->mix_learn[kind] = ml;	/* not ok (too few rows): mrg=1's */
	w->mix_learn_fits++;
	return POLICY_OK;
}

/*
 * mrg=2: the learned remaining regret of task t (weights already in
 * w->mix_w); mrg=1's estimate where no model fits the world's params.  A
 * live world gets the model from the refit cycle, sliced between
 * decisions (src/core/refit.c); a replay's fits it here on first use.
 */
static int
LearnedRegret(DecisionWorld *w, const DecisionTask *t,
			  const unsigned char *avail, double *rg)
{
	const MixPrior *mp = w->mix[t->kind];
	const MixLearn *ml = w->mix_learn[t->kind];
	double		x[MIXL_FEATURES];

	if (ml != NULL && !MixLearnSameFit(&ml->params, &w->params))
		ml = NULL;
	if (ml == NULL && !w->mix_learn_by_refit)
	{
		int			rc = FitLearned(w, t->kind);

		if (rc < 0)
			return rc;
		ml = w->mix_learn[t->kind];
	}
	if (ml != NULL && ml->ok)
	{
		MixLearnFeatures(mp, &w->params, w->mix_w, w->mix_off, avail,
						 t->best, t->n_obs, t->streak, x);
		*rg = MixLearnPredict(ml, x);
	}
	else
		*rg = MixRemainingRegret(mp, &w->params, w->mix_w, w->mix_off,
								 avail, t->best);
	return POLICY_OK;
}

/*
 * The mixture options (acq=mix, mrg=1|2): the arm of largest mixture EI
 * replaces the GP's (unless every arm's is 0), and the task score becomes
 * the mixture's remaining regret (mrg=2: the learned one) per second of
 * the next run.
 */
static int
MixtureView(DecisionWorld *w, const DecisionTask *t, const double *cost,
			const unsigned char *avail, PolicyArmScore *top, int *n,
			PolicyTenantView *v)
{
	const MixPrior *mp = w->mix[t->kind];
	const int64_t *owner = w->mix_task[t->kind];
	int			own = -1;
	double		bw;
	int			rc;

	if (mp == NULL || !PolicyUsesMixture(&w->params))
		return POLICY_OK;
	/* the weights, the arm scan and the task score: a few passes each */
	w->work += 3.0 * mp->m * w->K;
	/* the task's own history row, if the mixture has one (m ints: cheap) */
	for (int r = 0; owner != NULL && r < mp->m && own < 0; r++)
		if (owner[r] != 0 && owner[r] == t->id)
			own = r;
	bw = MixWeightsExcept(mp, &w->params, t->score, own, w->mix_w, w->mix_off);
	if (w->params.mix_arm)
	{
		PolicyTenantView mv = *v;

		if (w->params.mix_plan > 0)
			rc = MixPlanBestArm(mp, &w->params, w->mix_w, w->mix_off, bw,
								t->score, t->gp.mu, t->gp.var, cost, avail,
								&mv);
		else
			rc = MixBestArm(mp, &w->params, w->mix_w, w->mix_off, bw,
							t->gp.mu, t->gp.var, cost, avail, &mv);
		if (rc < 0)
			return rc;
		if (mv.arm >= 0)
		{
			*v = mv;
			top[0].arm = mv.arm;
			top[0].acq = mv.acq;
			*n = 1;				/* the GP's runner-ups no longer apply */
		}
	}
	if (PolicyMixScore(&w->params))
	{
		int			tc = w->params.tenant_cost < 0 ? w->params.cost_aware :
			w->params.tenant_cost;
		double		rg;

		if (w->params.mix_score == 2)
		{
			rc = LearnedRegret(w, t, avail, &rg);
			if (rc < 0)
				return rc;
		}
		else
			rg = MixRemainingRegret(mp, &w->params, w->mix_w, w->mix_off,
									avail, t->best);
		v->score = rg / (tc ? fmax(v->cost, 1e-9) : 1.0);
	}
	return POLICY_OK;
}

/* Recompute a task's candidate (view and the best arm). */
static int
RefreshView(DecisionWorld *w, DecisionTask *t)
{
	PolicyTenantView *v = &w->views[t->index];
	PolicyArmScore top[POLICY_LOOKAHEAD_MAX];	/* >= TOP_ARMS */
	const GpPrior *prior = TaskPrior(w, t);
	const unsigned char *avail = t->avail;
	const double *cost = t->cost;
	int			ntop,
				n = 0,
				rc;

	w->n_refreshed++;
	w->work += w->K;
	v->id = t->id;
	v->best = t->best;
	v->n_obs = t->n_obs;
	v->last_served = t->last_served;
	v->streak = t->streak;
	v->n_running = t->n_running;
	t->best_arm = -1;
	t->n_top = 0;
	if (t->n_left == 0 || t->gp.prior == NULL)
		return POLICY_OK;
	if (w->arm_open != NULL)
	{
		int			any = 0;

		/* only arms that can start now, at their cost on that device */
		for (int k = 0; k < w->K; k++)
		{
			w->open_avail[k] = t->avail[k] && w->arm_open[k];
			w->placed_cost[k] = t->cost[k] * w->arm_factor[k];
			any |= w->open_avail[k];
		}
		if (!any)
			return POLICY_OK;
		avail = w->open_avail;
		cost = w->placed_cost;
	}
	ntop = w->explain ? TOP_ARMS : 1;
	if (PolicyLookahead(&w->params) > ntop)
		ntop = PolicyLookahead(&w->params);
	rc = PolicyTopArms(&w->params, w->K, t->gp.mu, t->gp.var, cost,
					   avail, prior ? prior->mu0 : NULL, v, ntop, top, &n);
	if (rc < 0)
		return rc;
	if (PolicyLookahead(&w->params) && n > 0 &&
		(rc = LookaheadScore(w, t, top, n, cost, v)) < 0)
		return rc;
	if (PolicyRegretBatch(&w->params) && n > 0 &&
		(rc = RegretScore(w, t, avail, v)) < 0)
		return rc;
	if (n > 0 && (rc = MixtureView(w, t, cost, avail, top, &n, v)) < 0)
		return rc;
	t->n_top = n < TOP_ARMS ? n : TOP_ARMS;
	for (int i = 0; i < t->n_top; i++)
	{
		t->top_arm[i] = top[i].arm;
		t->top_acq[i] = top[i].acq;
	}
	t->best_arm = v->arm;
	return POLICY_OK;
}

/*
 * A tenant waits when one of its tasks could run and it is below its own
 * cap; a tenant at its own cap leaves its share to the others, so the
 * fair share never idles a slot that a tenant could use.
 */
static void
UpdateWaiting(DecisionWorld *w, int tenant)
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
	UpdateWaiting(w, t->tenant);
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
			rc = RefreshView(w, t);
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
		rc = PolicyIndexInit(&w->index, w->views, w->n_tasks, w->params.spread);
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
		MarkDirty(w, w->tasks[pick], DIRTY_VIEW | DIRTY_ELIG);
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
			MarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
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
	const GpPrior *prior = TaskPrior(w, t);
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
