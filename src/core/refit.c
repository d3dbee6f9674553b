/*-------------------------------------------------------------------------
 *
 * refit.c
 *	  Priors and the cost model of the live scheduler, refitted in short
 *	  steps off the decision path (see refit.h).
 *
 * IDENTIFICATION
 *	  src/core/refit.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpspace.h"
#include "refit.h"

/*
 * Steps of a cycle: the shared priors, the mixtures, one own prior per
 * task row, costs, then the "auto" choice (AUTO steps until
 * AutoPolicyStep is done).  The mixtures only when a policy that may run
 * uses them (RefitInput.need_mix); each mixture takes as many steps as
 * its fit's slices (MixStep), and as many more as mrg=2's fit on it when
 * that is needed (LearnStep).
 */
#define STEP_SHARED		0		/* DECISION_KINDS steps */
#define STEP_MIX		DECISION_KINDS	/* DECISION_KINDS mixtures, sliced */
#define STEP_OWN		(2 * DECISION_KINDS)	/* then one per snapshot row */
#define MIX_STEP_WORK	1e5		/* cell operations per mixture slice: about
								 * 2 ms on 1,011 rows */
#define LEARN_STEP_WORK	1e6		/* cells scanned per slice of mrg=2's fit
								 * (MIXL_STATE_WORK): 1.6-2.75 ms measured */

static void
SetFree(RefitSet *s)
{
	for (int k = 0; k < DECISION_KINDS; k++)
		if (s->have_prior[k])
			GpPriorFree(&s->prior[k]);
	for (int i = 0; i < s->n_own; i++)
		GpPriorFree(&s->own[i].prior);
	free(s->own);
	for (int k = 0; k < DECISION_KINDS; k++)
	{
		MixPriorFree(&s->mix[k]);
		free(s->mix_task[k]);
	}
	if (s->have_cost)
		PolicyCostModelFree(&s->cost);
	if (s->have_fcost)
		CostModelFree(&s->fcost);
	free(s->cost_known);
	memset(s, 0, sizeof(*s));
}

void
RefitInit(RefitState *r, int K, double interval)
{
	memset(r, 0, sizeof(*r));
	r->only_task = 0;
	r->K = K;
	r->interval = interval;
	r->last_start = -INFINITY;
}

/* Free the snapshot of a cycle. */
static void
SnapFree(RefitState *r)
{
	free(r->snap_cells);
	free(r->snap_task);
	free(r->snap_kind);
	free(r->snap_runtime);
	free(r->snap_sizes);
	free(r->snap_per_class);
	free(r->snap_cost_task);
	r->snap_per_class = NULL;
	r->snap_cost_task = NULL;
	free(r->snap_arms);
	free(r->snap_train);
	free(r->snap_folds);
	free(r->snap_passes);
	free(r->snap_bins);
	free(r->snap_root);
	free(r->snap_coords);
	r->snap_root = NULL;
	r->snap_coords = NULL;
	r->snap_folds = r->snap_passes = r->snap_bins = NULL;
	r->snap_per_class = NULL;
	r->snap_arms = NULL;
	r->snap_train = NULL;
	r->snap_cells = r->snap_runtime = r->snap_sizes = NULL;
	r->snap_task = NULL;
	r->snap_kind = NULL;
	memset(&r->snap, 0, sizeof(r->snap));
}

void
RefitFree(RefitState *r)
{
	AutoPolicyFree(&r->auto_job);
	MixLearnFree(&r->learn_job);
	MixFitFree(&r->mix_job);
	SnapFree(r);
	SetFree(&r->next);
	SetFree(&r->live);
	memset(r, 0, sizeof(*r));
}

/* 64-bit FNV-1a over words (the input is doubles and ids). */
static uint64_t
HashWords(uint64_t h, const void *data, size_t bytes)
{
	const unsigned char *p = data;
	size_t		i = 0;

	for (; i + 8 <= bytes; i += 8)
	{
		uint64_t	x;

		memcpy(&x, p + i, 8);
		h = (h ^ x) * 1099511628211ULL;
	}
	for (; i < bytes; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

uint64_t
RefitSignature(const RefitInput *in)
{
	uint64_t	h = 14695981039346656037ULL;
	const CostData *c = &in->cost;
	int			dims[3] = {in->K, in->m, c->mc};

	h = HashWords(h, dims, sizeof(dims));
	h = HashWords(h, in->cells, sizeof(double) * (size_t) in->m * in->K);
	h = HashWords(h, in->row_task, sizeof(int64_t) * (size_t) in->m);
	h = HashWords(h, in->row_kind, (size_t) in->m);
	h = HashWords(h, c->seconds, sizeof(double) * (size_t) c->mc * in->K);
	h = HashWords(h, c->sizes, sizeof(double) * 3 * (size_t) c->mc);
	if (in->per_class)
		h = HashWords(h, in->per_class, (size_t) in->K);
	if (in->arms)
		h = HashWords(h, in->arms, sizeof(CostArm) * (size_t) in->K);
	if (c->train)
		h = HashWords(h, c->train, sizeof(double) * (size_t) c->mc * in->K);
	if (c->folds)
		h = HashWords(h, c->folds, sizeof(double) * (size_t) c->mc);
	if (c->passes)
		h = HashWords(h, c->passes, sizeof(double) * (size_t) c->mc * in->K);
	if (c->bins)
		h = HashWords(h, c->bins, sizeof(double) * (size_t) c->mc);
	if (in->arm_root && in->arm_coords && in->space_dims > 0)
	{
		h = HashWords(h, in->arm_root, sizeof(int) * (size_t) in->K);
		h = HashWords(h, in->arm_coords, sizeof(double) * (size_t) in->K * in->space_dims);
	}
	h = HashWords(h, &in->need_mix, sizeof(in->need_mix));
	h = HashWords(h, &in->need_learn, sizeof(in->need_learn));
	if (in->auto_options[0] != '\0')
		h = HashWords(h, in->auto_options, strlen(in->auto_options));
	if (in->need_learn)
	{
		double		key[MIXL_KEY];

		MixLearnKey(&in->learn, key);
		h = HashWords(h, key, sizeof(key));
	}
	return h;
}

/* Copy n bytes, or NULL for none; *ok cleared when out of memory. */
static void *
Dup(const void *src, size_t n, int *ok)
{
	void	   *p;

	if (n == 0 || src == NULL)
		return NULL;
	p = malloc(n);
	if (p == NULL)
	{
		*ok = 0;
		return NULL;
	}
	memcpy(p, src, n);
	return p;
}

int
RefitMaybeStart(RefitState *r, const RefitInput *in, double now)
{
	uint64_t	sig;
	int			ok = 1;
	size_t		K = (size_t) r->K,
				mc = (size_t) in->cost.mc;

	if (r->running)
		return 1;
	if (in->K != r->K)
		return 0;
	sig = RefitSignature(in);
	if (r->have_live && (sig == r->fitted_sig || now - r->last_start < r->interval))
		return 0;
	SnapFree(r);
	r->snap = *in;
	r->snap_cells = Dup(in->cells, sizeof(double) * in->m * K, &ok);
	r->snap_task = Dup(in->row_task, sizeof(int64_t) * in->m, &ok);
	r->snap_kind = Dup(in->row_kind, in->m, &ok);
	r->snap_per_class = Dup(in->per_class, K, &ok);
	r->snap_cost_task = Dup(in->cost_task, sizeof(int64_t) * mc, &ok);
	r->snap_arms = Dup(in->arms, sizeof(CostArm) * K, &ok);
	r->snap_runtime = Dup(in->cost.seconds, sizeof(double) * mc * K, &ok);
	r->snap_sizes = Dup(in->cost.sizes, sizeof(double) * 3 * mc, &ok);
	r->snap_train = Dup(in->cost.train, sizeof(double) * mc * K, &ok);
	r->snap_folds = Dup(in->cost.folds, sizeof(double) * mc, &ok);
	r->snap_passes = Dup(in->cost.passes, sizeof(double) * mc * K, &ok);
	r->snap_bins = Dup(in->cost.bins, sizeof(double) * mc, &ok);
	if (in->arm_root && in->arm_coords && in->space_dims > 0)
	{
		r->snap_root = Dup(in->arm_root, sizeof(int) * K, &ok);
		r->snap_coords = Dup(in->arm_coords, sizeof(double) * K * in->space_dims, &ok);
	}
	if (!ok)
	{
		SnapFree(r);
		return 0;
	}
	r->snap.cells = r->snap_cells;
	r->snap.row_task = r->snap_task;
	r->snap.row_kind = r->snap_kind;
	r->snap.per_class = r->snap_per_class;
	r->snap.cost_task = r->snap_cost_task;
	r->snap.arms = r->snap_arms;
	r->snap.cost.seconds = r->snap_runtime;
	r->snap.cost.sizes = r->snap_sizes;
	r->snap.cost.train = r->snap_train;
	r->snap.cost.folds = r->snap_folds;
	r->snap.cost.passes = r->snap_passes;
	r->snap.cost.bins = r->snap_bins;
	r->snap.arm_root = r->snap_root;
	r->snap.arm_coords = r->snap_coords;
	if (r->snap_root == NULL || r->snap_coords == NULL)
		r->snap.space_dims = 0;
	SetFree(&r->next);
	r->next.own = calloc(in->m > 0 ? in->m : 1, sizeof(RefitOwn));
	if (r->next.own == NULL)
	{
		SnapFree(r);
		return 0;
	}
	r->pending_sig = sig;
	r->last_start = now;
	r->step = 0;
	r->running = 1;
	return 1;
}

/*
 * The rows of one kind, except the row 'skip' (-1: none), copied
 * contiguously into out; returns how many.
 */
static int
RowsOfKind(const RefitState *r, int kind, int skip, double *out)
{
	int			n = 0;

	for (int i = 0; i < r->snap.m; i++)
		if (r->snap.row_kind[i] == kind && i != skip)
			memcpy(out + (size_t) n++ * r->K, r->snap.cells + (size_t) i * r->K,
				   sizeof(double) * r->K);
	return n;
}

/*
 * Generated arms in n rows of out: an unknown cell takes the value of its
 * root's column in that row (the mixture's view of a generated candidate:
 * its parent's history, docs/scheduler.md 7.9).
 */
static void
BorrowRoots(const RefitState *r, double *out, int n)
{
	const int  *root = r->snap.arm_root;

	if (root == NULL || r->snap.space_dims <= 0)
		return;
	for (int i = 0; i < n; i++)
	{
		double	   *row = out + (size_t) i * r->K;

		for (int k = 0; k < r->K; k++)
			if (root[k] >= 0 && isnan(row[k]))
				row[k] = row[root[k]];
	}
}

/* A fitted prior extended to the generated arms (HpExtendPrior). */
static void
ExtendToGenerated(RefitState *r, GpPrior *prior)
{
	if (r->snap.arm_root == NULL || r->snap.space_dims <= 0)
		return;
	if (HpExtendPrior(prior, r->snap.arm_root, r->snap.arm_coords,
					  r->snap.space_dims, HP_LENGTHSCALE) != 0)
		r->failures++;
}

/* The shared prior of one kind, hyperparameters by held-out likelihood. */
static int
FitShared(RefitState *r, int kind, double *buf)
{
	int			n = RowsOfKind(r, kind, -1, buf);

	if (GpPriorFit(buf, n, r->K, NULL, &r->next.prior[kind]) < 0)
	{
		r->failures++;
		return 0;
	}
	ExtendToGenerated(r, &r->next.prior[kind]);
	r->next.have_prior[kind] = 1;
	return 1;
}

/*
 * The history mixture of one kind, from the rows its shared prior learns
 * from (quality in [0,1], as the tasks' scores), and each row's task id.
 * The bandwidth is fitted on every row, as the shared prior's
 * hyperparameters are; a task's own row is left out of its weights
 * (DecisionSetMixtureRows).  None with fewer than 2 rows.  The fit is cut
 * into slices of about MIX_STEP_WORK cell operations: one fit on 1,011
 * rows x 41 models takes 0.9 s, far over a slice.  Returns 1 when the
 * kind is done.
 */
static int
MixStep(RefitState *r, int kind)
{
	int64_t    *owner;
	int			j = 0;

	if (!r->mix_job_on)
	{
		size_t		cells = (size_t) (r->snap.m > 0 ? r->snap.m : 1) * r->K;
		double	   *buf = malloc(sizeof(double) * cells);
		int			n = buf ? RowsOfKind(r, kind, -1, buf) : 0,
					rc = POLICY_BAD_INPUT;

		BorrowRoots(r, buf, n);
		if (n >= 2)
			rc = MixFitBegin(&r->mix_job, buf, n, r->K);
		free(buf);
		if (buf == NULL || rc == POLICY_NO_MEMORY)
			r->failures++;
		if (rc < 0)
			return 1;
		r->mix_job_on = 1;
	}
	if (!MixFitStep(&r->mix_job, MIX_STEP_WORK))
		return 0;
	r->mix_job_on = 0;
	owner = malloc(sizeof(int64_t) * r->mix_job.mp.m);
	if (owner == NULL)
	{
		MixFitFree(&r->mix_job);
		r->failures++;
		return 1;
	}
	for (int i = 0; i < r->snap.m; i++)
		if (r->snap.row_kind[i] == kind)
			owner[j++] = r->snap.row_task[i];
	MixFitTake(&r->mix_job, &r->next.mix[kind]);
	r->next.mix_task[kind] = owner;
	r->next.have_mix[kind] = 1;
	return 1;
}

/*
 * Start mrg=2's fit on the kind's new mixture: the history rows play tasks
 * at the typical costs of the world's tasks of the kind now, the same
 * geometric mean a replay's decision path takes on first use
 * (DecisionTypicalCost; O(tasks x models), once per kind and cycle).  The
 * costs come from the world, not the snapshot: they are the estimates the
 * decisions use, and the cost model this cycle refits reaches them only
 * at the next one.  Returns 1 when there is nothing to fit.
 */
static int
LearnBegin(RefitState *r, DecisionWorld *w, int kind)
{
	double	   *cost = malloc(sizeof(double) * r->K);
	int			rc = POLICY_NO_MEMORY;

	if (cost != NULL)
	{
		DecisionTypicalCost(w, kind, cost);
		rc = MixLearnBegin(&r->learn_job, &r->next.mix[kind], &r->snap.learn,
						   r->snap.learn.cost_aware ? cost : NULL);
	}
	free(cost);
	if (rc == POLICY_OK)
	{
		r->learn_job_on = 1;
		return 0;
	}
	if (rc == POLICY_NO_MEMORY)
		r->failures++;
	else
	{
		/* too few rows: a model that says so (mrg=1's estimate) */
		memset(&r->next.learn[kind], 0, sizeof(MixLearn));
		r->next.learn[kind].params = r->snap.learn;
		r->next.have_learn[kind] = 1;
	}
	return 1;
}

/* One slice of mrg=2's fit; 1 when it is done. */
static int
LearnStep(RefitState *r, int kind)
{
	if (!MixLearnStep(&r->learn_job, LEARN_STEP_WORK))
		return 0;
	r->learn_job_on = 0;
	if (MixLearnTake(&r->learn_job, &r->next.learn[kind]) == POLICY_NO_MEMORY)
		r->failures++;
	else
	{
		r->next.have_learn[kind] = 1;
		r->learn_fits++;
	}
	return 1;
}

/*
 * A kind's mixture (MixStep), then, if the policy needs it, mrg=2's model
 * on it (LearnStep), one slice per call; 1 when the kind is done.
 */
static int
KindStep(RefitState *r, DecisionWorld *w, int kind)
{
	if (r->learn_job_on)
		return LearnStep(r, kind);
	if (!MixStep(r, kind))
		return 0;
	if (!r->snap.need_learn || !r->next.have_mix[kind])
		return 1;
	return LearnBegin(r, w, kind);
}

/* Row i's task's prior: every other row of its kind, shared hyperparameters. */
static void
FitOwn(RefitState *r, int i, double *buf)
{
	int			kind = r->snap.row_kind[i];
	const GpPrior *shared = &r->next.prior[kind];
	GpPriorOptions opt;
	RefitOwn   *o;
	int			n;

	if (r->snap.row_task[i] == 0 || !r->next.have_prior[kind] ||
		(r->only_task != 0 && r->snap.row_task[i] != r->only_task))
		return;
	n = RowsOfKind(r, kind, i, buf);
	memset(&opt, 0, sizeof(opt));
	opt.kernel = shared->kernel;
	opt.shrinkage = shared->shrinkage > 0 ? shared->shrinkage : 1e-9;
	opt.noise_var = shared->noise_var;
	opt.lengthscale = shared->lengthscale;
	opt.signal_var = shared->signal_var;
	o = &r->next.own[r->next.n_own];
	if (GpPriorFit(buf, n, r->K, &opt, &o->prior) < 0)
	{
		r->failures++;
		return;
	}
	ExtendToGenerated(r, &o->prior);
	o->task = r->snap.row_task[i];
	r->next.n_own++;
}

/* The cost model from the snapshot's measured runtimes. */
static void
FitCost(RefitState *r)
{
	const RefitInput *s = &r->snap;

	const CostData *c = &s->cost;

	if (s->arms != NULL)
	{
		/* the family cost model: from nothing measured up (costmodel.h) */
		if (CostModelFitData(&r->next.fcost, s->arms, r->K, c) < 0)
			r->failures++;
		else
			r->next.have_fcost = 1;
		return;
	}
	if (c->mc < 2)
		return;
	r->next.cost_known = calloc(r->K, 1);
	if (r->next.cost_known == NULL)
		return;
	for (int i = 0; i < c->mc; i++)
		for (int k = 0; k < r->K; k++)
			if (!isnan(c->seconds[(size_t) i * r->K + k]))
				r->next.cost_known[k] = 1;
	{
		/*
		 * Every run pays a fixed overhead (process start, data load) that
		 * does not grow with rows, features or classes: 0.8 x the shortest
		 * measured run.  The model fits the rest, per class for per-class
		 * arms (DecisionSetArmPerClass).
		 */
		double	   *per = malloc(sizeof(double) * (size_t) c->mc * r->K);
		double		shortest = INFINITY;
		int			rc;

		if (per == NULL)
			return;
		for (size_t j = 0; j < (size_t) c->mc * r->K; j++)
			if (c->seconds[j] > 0 && c->seconds[j] < shortest)
				shortest = c->seconds[j];
		r->next.cost_overhead = isfinite(shortest) ? 0.8 * shortest : 0;
		for (int i = 0; i < c->mc; i++)
			for (int k = 0; k < r->K; k++)
			{
				double		rt = c->seconds[(size_t) i * r->K + k];
				double		work = rt - r->next.cost_overhead;

				work = work > 0.05 * rt ? work : 0.05 * rt;
				per[(size_t) i * r->K + k] = work /
					DecisionClassFactor(s->per_class, k, c->sizes[3 * i + 2]);
			}
		rc = PolicyCostModelFit(&r->next.cost, POLICY_COST_SIZE_GP, per,
								c->sizes, c->mc, r->K);
		free(per);
		if (rc < 0)
		{
			r->failures++;
			return;
		}
	}
	r->next.have_cost = 1;
}

int
RefitCostCold(const CostModel *in_use, const CostData *data)
{
	int			tasks = 0;

	if (in_use != NULL && in_use->n_tasks >= REFIT_COST_TASKS)
		return 0;
	if (data == NULL || data->mc <= 0)
		return 0;
	if (in_use == NULL || data->seconds == NULL)
		return 1;				/* none in use: fit one */
	/* the tasks the overhead learns from (FitOverhead) */
	for (int i = 0; i < data->mc; i++)
		for (int k = 0; k < in_use->K; k++)
		{
			double		s = data->seconds[(size_t) i * in_use->K + k];

			if (s > 0 && isfinite(s))
			{
				tasks++;
				break;
			}
		}
	return tasks > in_use->n_tasks;
}

/* qsort comparator: own priors by task id. */
static int
CmpOwn(const void *a, const void *b)
{
	int64_t		x = ((const RefitOwn *) a)->task,
				y = ((const RefitOwn *) b)->task;

	return (x > y) - (x < y);
}

/* The own prior of a task in the live set, or NULL. */
const GpPrior *
RefitOwnPrior(const RefitState *r, int64_t task)
{
	int			lo = 0,
				hi = r->live.n_own - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (r->live.own[mid].task == task)
			return &r->live.own[mid].prior;
		if (r->live.own[mid].task < task)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* RefitOwnPrior for DecisionInstallModels. */
static const GpPrior *
OwnOf(const void *arg, int64_t task)
{
	return RefitOwnPrior((const RefitState *) arg, task);
}

/*
 * The live set's structs keep their addresses from one cycle to the next
 * (r->live is overwritten in place): DecisionInstallModels rebuilds every
 * task's posteriors on the new contents, where comparing pointers would
 * keep posteriors factored on the old ones.
 */
void
RefitApply(const RefitState *r, DecisionWorld *w)
{
	const GpPrior *priors[DECISION_KINDS];

	if (!r->have_live)
		return;
	for (int k = 0; k < DECISION_KINDS; k++)
		priors[k] = r->live.have_prior[k] ? &r->live.prior[k] : NULL;
	if (r->live.have_fcost)
		(void) DecisionSetFamilyCost(w, &r->live.fcost);
	if (r->live.have_cost)
		DecisionSetCostOverhead(w, r->live.cost_overhead);
	for (int k = 0; k < DECISION_KINDS; k++)
	{
		(void) DecisionSetMixtureRows(w, k,
									  r->live.have_mix[k] ? &r->live.mix[k] : NULL,
									  r->live.mix_task[k]);
		if (r->live.have_mix[k] && r->live.have_learn[k])
			(void) DecisionSetMixLearn(w, k, &r->live.learn[k]);
	}
	(void) DecisionInstallModels(w, priors, OwnOf, r,
								 r->live.have_cost ? &r->live.cost : NULL,
								 r->live.cost_known);
}

/* The cycle is done: the new set goes live, the old one is freed. */
static void
Install(RefitState *r, DecisionWorld *w)
{
	RefitSet	old = r->live;

	qsort(r->next.own, r->next.n_own, sizeof(RefitOwn), CmpOwn);
	/* keep what failed to refit from the old set */
	for (int k = 0; k < DECISION_KINDS; k++)
		if (!r->next.have_prior[k] && old.have_prior[k])
		{
			r->next.prior[k] = old.prior[k];
			r->next.have_prior[k] = 1;
			old.have_prior[k] = 0;
		}
	for (int k = 0; k < DECISION_KINDS; k++)
		if (!r->next.have_mix[k] && old.have_mix[k])
		{
			r->next.mix[k] = old.mix[k];
			r->next.mix_task[k] = old.mix_task[k];
			r->next.have_mix[k] = 1;
			r->next.learn[k] = old.learn[k];	/* fitted on that mixture */
			r->next.have_learn[k] = old.have_learn[k];
			old.have_mix[k] = 0;
			old.mix_task[k] = NULL;
			memset(&old.mix[k], 0, sizeof(old.mix[k]));
		}
	if (!r->next.have_cost && old.have_cost)
	{
		r->next.cost = old.cost;
		r->next.cost_overhead = old.cost_overhead;
		r->next.have_cost = 1;
		old.have_cost = 0;
		free(r->next.cost_known);
		r->next.cost_known = old.cost_known;
		old.cost_known = NULL;
	}
	if (!r->next.have_fcost && old.have_fcost)
	{
		r->next.fcost = old.fcost;
		r->next.have_fcost = 1;
		old.have_fcost = 0;
	}
	r->live = r->next;
	memset(&r->next, 0, sizeof(r->next));
	AutoPolicyFree(&r->auto_job);
	r->have_live = 1;
	RefitApply(r, w);			/* the world now points at the new set */
	SetFree(&old);
	r->fitted_sig = r->pending_sig;
	r->running = 0;
	r->cycles++;
	SnapFree(r);
}

void
RefitKeepAuto(RefitState *r, const AutoPolicyResult *pick)
{
	r->have_kept_auto = pick != NULL;
	if (pick != NULL)
		r->kept_auto = *pick;
}

const AutoPolicyResult *
RefitAutoLatest(const RefitState *r)
{
	if (r->have_live)
		return &r->live.auto_pick;
	return r->have_kept_auto ? &r->kept_auto : NULL;
}

const AutoPolicyResult *
RefitAutoPick(const RefitState *r)
{
	const AutoPolicyResult *res = RefitAutoLatest(r);

	return res != NULL && res->have ? res : NULL;
}

/*
 * One step of the "auto" choice; 1 when it is made.  The first step cuts
 * the block and starts the replay, or keeps the previous result (the
 * installed one; before the first install, the one RefitKeepAuto
 * offered) when the chooser's inputs did not change (AutoPolicyKeeps);
 * easeml.explain's own-prior refits skip it.
 */
static int
AutoStep(RefitState *r, int first)
{
	const AutoPolicyResult *prev = RefitAutoLatest(r);
	int			reused = 0,
				rc;

	if (r->only_task != 0)
	{
		if (prev)
			r->next.auto_pick = *prev;
		return 1;
	}
	rc = first ? AutoPolicyBegin(&r->auto_job, &r->snap, prev, &reused) :
		AutoPolicyStep(&r->auto_job);
	if (rc == 0)
		return 0;
	r->next.auto_pick = r->auto_job.res;
	/* a replay that failed keeps the choice before it (and retries) */
	if (!r->auto_job.res.have && r->auto_job.res.rows > 0 && prev != NULL && prev->have)
	{
		r->next.auto_pick = *prev;
		r->next.auto_pick.sig = 0;
		snprintf(r->next.auto_pick.reason, sizeof(r->next.auto_pick.reason),
				 "kept %.100s: %.140s", prev->spec, r->auto_job.res.reason);
	}
	if (!reused)
	{
		r->auto_made++;
		if (!r->auto_job.res.have)
			r->failures++;
	}
	return 1;
}

int
RefitStep(RefitState *r, DecisionWorld *w)
{
	double	   *buf;
	int			last_own = STEP_OWN + r->snap.m;

	if (!r->running)
		return 0;
	if (r->step > last_own)
	{
		if (!AutoStep(r, r->step == last_own + 1))
		{
			r->step = last_own + 2;
			return 0;
		}
		Install(r, w);
		return 1;
	}
	if (r->step >= STEP_MIX && r->step < STEP_OWN)
	{
		if (!r->snap.need_mix || KindStep(r, w, r->step - STEP_MIX))
			r->step++;
		return 0;
	}
	buf = malloc(sizeof(double) * (size_t) (r->snap.m > 0 ? r->snap.m : 1) * r->K);
	if (buf == NULL)
		return -1;
	if (r->step < STEP_MIX)
		(void) FitShared(r, r->step, buf);
	else if (r->step < last_own)
		FitOwn(r, r->step - STEP_OWN, buf);
	else
		FitCost(r);
	free(buf);
	r->step++;
	return 0;
}
