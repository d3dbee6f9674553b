/*-------------------------------------------------------------------------
 *
 * decision_world.c
 *	  The decision world (decision.h): tasks by id (an open-addressing hash
 *	  table), the world's setup and teardown, the models it borrows (quality
 *	  priors, mixtures, learned scores, installed in one pass by the refit),
 *	  and adding, removing and resetting tenants and tasks.
 *
 * Every change to a task (a run started, a result, a failure, a new
 * prior) marks it dirty (DecisionMarkDirty); DecisionNext
 * (decision_pick.c) first brings the dirty tasks' best candidates and
 * eligibility up to date, then asks the PolicyIndex for the pick.  Nothing
 * is recomputed for tasks that did not change.
 *
 * IDENTIFICATION
 *	  src/core/decision_world.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decision.h"
#include "decision_internal.h"
#include "mixlearn.h"

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
		DecisionMarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
	return POLICY_OK;
}

void
DecisionSetParams(DecisionWorld *w, const PolicyParams *params)
{
	w->params = *params;
	w->index_n = -1;			/* idle_only may differ */
	for (int i = 0; i < w->n_tasks; i++)
		DecisionMarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
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
			int			r = DecisionRebuildGp(w, t);

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
			DecisionMarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
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
			DecisionMarkDirty(w, w->tasks[i], DIRTY_VIEW | DIRTY_ELIG);
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
	return DecisionRebuildGp(w, t);
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
		r = DecisionRebuildGp(w, t);
		if (r < 0)
			rc = r;
		if (cost)
			DecisionCostInit(w, t);
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
	DecisionMarkTenantDirty(w, tenant);
	DecisionUpdateWaiting(w, tenant);
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
	DecisionCostInit(w, t);
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
	DecisionUpdateWaiting(w, t->tenant);
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
	DecisionMarkTenantDirty(w, t->tenant);
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
	(void) DecisionRebuildGp(w, t);
	if (t->have_cgp)
		GpStateReset(&t->cgp);
	DecisionCostRefresh(w, t);
	DecisionMarkTenantDirty(w, t->tenant);
	DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
}
