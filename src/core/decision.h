/*-------------------------------------------------------------------------
 *
 * decision.h
 *	  How one scheduling decision is assembled: which tasks may run
 *	  (eligibility, per-tenant caps and fair shares), each task's prior and
 *	  incremental posterior, its cost estimates, and the pick across tasks
 *	  with the reasons for it.
 *
 * Plain C over BLAS/LAPACKE, no PostgreSQL headers.  The live scheduler
 * (src/worker/scheduler.c) and the replay simulator (src/core/replay_*.c) both keep a
 * DecisionWorld and call the same functions: DecisionStart when a run is
 * launched, DecisionObserve / DecisionEnd when it ends, DecisionNext for
 * the next (task, candidate).  The world keeps each task's GP posterior
 * incrementally (one GpStateAdd per finished run, never a refit) and its
 * best candidate, and picks across tasks through a PolicyIndex, so a
 * decision costs O(K t) for the task whose run ended plus O(log n).
 *
 * The code: src/core/decision_{world,cost,events,view,pick}.c, one job
 * each (src/core/decision_internal.h says which).
 *
 * IDENTIFICATION
 *	  src/core/decision.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_DECISION_H
#define EASEML_DECISION_H

#include <stddef.h>
#include <stdint.h>

#include "costmodel.h"
#include "gp.h"
#include "hpspace.h"
#include "mixture.h"
#include "policy.h"
#include "sizecost.h"

/* Task kinds; each has its own prior (scores never mix across kinds). */
#define DECISION_CLASSIFICATION 0
#define DECISION_REGRESSION		1
#define DECISION_KINDS			2

/* State of one candidate (arm) for one task. */
#define DECISION_ARM_INELIGIBLE 0	/* wrong kind, needs images, disabled */
#define DECISION_ARM_AVAILABLE	1	/* may be chosen */
#define DECISION_ARM_RUNNING	2	/* queued or running now */
#define DECISION_ARM_OBSERVED	3	/* succeeded with a score */
#define DECISION_ARM_DONE		4	/* failed, cancelled: never again */

/* Runner-ups recorded with each decision; candidates kept per task. */
#define DECISION_RUNNERS_UP		3
#define DECISION_TOP_ARMS		(1 + DECISION_RUNNERS_UP)

/* What a task is when it joins the world. */
typedef struct DecisionTaskSpec
{
	int64_t		id;				/* caller's id; ties go to the lowest */
	int			tenant;			/* index from DecisionAddTenant */
	int			kind;			/* DECISION_CLASSIFICATION, _REGRESSION */
	int			has_image;		/* image models may run */
	double		rows;			/* size, for the cost model (> 0): rows
								 * fitted, x folds */
	double		features;
	double		classes;		/* 1 for regression */
	double		folds;			/* k-fold tasks' k; <= 1: one split */
	double		bins;			/* the data's histogram bins (a tree run's
								 * metric); NaN or <= 0: unknown */
	int			max_runs;		/* 0: unlimited */
	const unsigned char *eligible;	/* K flags, or NULL: by kind and image */
	const double *fallback_cost;	/* K seconds used where the cost model
									 * knows nothing, or NULL: 1 s */
} DecisionTaskSpec;

typedef struct DecisionTask
{
	int64_t		id;
	int			tenant;
	int			kind;
	double		rows;
	double		features;
	double		classes;
	double		folds;
	double		bins;			/* NaN: unknown */
	int			max_runs;
	int			n_runs;			/* runs counted against max_runs */
	int			blocked;		/* the caller keeps it out (see
								 * DecisionBlock): a cooldown, failures,
								 * a spent time budget */
	unsigned char *arm;			/* K: DECISION_ARM_* */
	unsigned char *avail;		/* K: arm == AVAILABLE (PolicyTopArms) */
	double	   *score;			/* K: observed score, NaN if none */
	double	   *seconds;		/* K: measured runtime, NaN if none */
	double	   *passes;			/* K: the passes that run made (an
								 * early-stopping trainer's epochs), NaN
								 * if none */
	int			n_left;			/* arms available */
	int			n_obs;
	int			n_running;
	double		best;			/* best score, 0 before the first */
	int64_t		last_served;	/* decision number, -1: never */
	int			streak;			/* results since the best improved */
	const GpPrior *own_prior;	/* set by DecisionTaskSetPrior, or NULL */
	GpState		gp;				/* quality posterior over the K arms */
	GpState		cgp;			/* log-cost residual posterior */
	int			have_cgp;
	double	   *log_base;		/* K: the cost model's size part */
	double	   *fallback;		/* K: caller's estimates */
	double	   *cost;			/* K: estimated seconds the policy uses */
	double		overhead;		/* family cost model: the fixed seconds of
								 * a run of this task (CostTaskOverhead) */
	int			best_arm;		/* cached candidate, -1 none */
	int			n_top;			/* cached ranking (explain only) */
	int			top_arm[DECISION_TOP_ARMS];
	double		top_acq[DECISION_TOP_ARMS];
	int			ok;				/* could run, apart from tenant caps */
	int			index;			/* position in world->tasks, ->views */
	int			next_of_tenant; /* index of the tenant's next task, -1 */
	unsigned char dirty;		/* DIRTY_* bits (decision_internal.h) */
	unsigned char stale;		/* its view is from models installed
								 * before the current ones (installing) */
	uint64_t	sync_sig;		/* the caller's signature of the state it
								 * last synced (0 on joining) */
} DecisionTask;

typedef struct DecisionTenant
{
	int			cap;			/* its own cap (max_parallel), 0: none */
	int			running;		/* runs in flight of its tasks in the world */
	int			external;		/* trainers it holds less running: its runs
								 * outside the world, less the queued runs
								 * counted in running (may be negative) */
	int			queued;			/* its own queued runs waiting for a slot */
	int			n_ok;			/* tasks that could run apart from caps */
	int			waiting;		/* n_ok > 0 or queued > 0, and below its own
								 * cap */
	int			first_task;		/* index of one of its tasks, -1 */
} DecisionTenant;

typedef struct DecisionWorld
{
	int			K;
	PolicyParams params;
	int			slots;			/* devices, for the fair share */
	int			tenant_cap;		/* > 0: runs per tenant at most; 0: no
								 * cap; < 0: a fair share of the slots
								 * while several tenants wait (decision_pick.c) */
	int			explain;		/* fill runner-ups in DecisionNext */
	int			installing;		/* the caller is installing new models:
								 * unchanged tasks' views go stale
								 * (DecisionRefreshStale) */
	unsigned char *arm_kinds;	/* K: bit (1 << kind) per kind it serves */
	unsigned char *arm_image;	/* K: needs an image task */
	const GpPrior *prior[DECISION_KINDS];	/* borrowed */
	const MixPrior *mix[DECISION_KINDS];	/* borrowed, or NULL: the
											 * mixture options (acq=mix,
											 * mrg=1) use the GP */
	const int64_t *mix_task[DECISION_KINDS];	/* borrowed, or NULL: each
												 * mixture row's task id,
												 * 0 for none */
	struct MixLearn *mix_learn[DECISION_KINDS];	/* owned, or NULL: the
												 * learned task score of
												 * mrg=2 (src/core/mixlearn.h) */
	int			mix_learn_by_refit; /* 1 (live): only the refit cycle fits
									 * mix_learn (DecisionSetMixLearn),
									 * never the decision path; 0
									 * (replay): fitted on first use */
	int			mix_learn_fits; /* fits made on the decision path */
	double	   *mix_w;			/* scratch: row weights, offsets */
	double	   *mix_off;
	int			mix_cap;
	const PolicyCostModel *cost_model;	/* borrowed, or NULL */
	double		cost_overhead;	/* seconds every run costs besides its
								 * work (start, data load); the cost model
								 * fits the rest */
	unsigned char *cost_known;	/* K: the cost model has data for arm */
	const CostModel *family_cost;	/* borrowed, or NULL; when set it
									 * estimates every arm and cost_model,
									 * cost_overhead, arm_per_class and the
									 * fallbacks are not used (the live
									 * scheduler, src/core/costmodel.h) */
	unsigned char *arm_per_class;	/* K: fits one model per class (cost
									 * grows with the task's classes), or
									 * NULL */
	int			n_tasks;
	int			cap_tasks;
	DecisionTask **tasks;		/* entries never move in memory */
	DecisionTask **map;			/* by id (decision_world.c), map_cap slots */
	size_t		map_cap;
	PolicyTenantView *views;	/* parallel to tasks */
	PolicyIndex index;
	int			index_n;		/* tasks the index was built for, -1 */
	int		   *dirty_list;
	int			n_dirty;
	int			n_stale;		/* tasks with stale views */
	int64_t		n_refreshed;	/* views computed so far (RefreshView) */
	int			skip_posterior; /* results update neither the quality
								 * nor the cost posteriors: a replay sets
								 * it for a policy that reads neither
								 * (PolicyReadsPosterior: popular's prior
								 * order costs O(K) a run instead of O(K
								 * t)); never live, where the policy may
								 * change at any time */
	double		work;			/* cell operations of the views computed
								 * and observations added so far: the
								 * replay's deterministic work units
								 * (src/core/replay.h) */
	int			stale_next;		/* where DecisionRefreshStale looks next */
	int			n_tenants;
	int			cap_tenants;
	DecisionTenant *tenants;
	int			n_waiting;		/* tenants waiting (DecisionTenant.waiting) */
	int			cap_applied;	/* the shared cap the views reflect */
	int64_t		decision_no;
	uint64_t	rng;
	double	   *scratch;		/* K */
	int			gp_jitter;		/* observations that needed jitter */
	int			gp_failed;		/* observations the GP had to refuse */
	/* device placement (DecisionSetPlacement); NULL: every arm, factor 1 */
	unsigned char *arm_open;	/* K: a device of its kinds is free now */
	double	   *arm_factor;		/* K: cost on that device / the estimate */
	unsigned char *open_avail;	/* K scratch: avail and open */
	double	   *placed_cost;	/* K scratch: cost times factor */
} DecisionWorld;

/* One candidate as a decision saw it. */
typedef struct DecisionCandidate
{
	int			task;			/* index in world->tasks */
	int			arm;
	double		mu;				/* posterior mean (score units) */
	double		sigma;			/* posterior std dev (score units) */
	double		cost;			/* estimated seconds */
	double		acq;			/* arm acquisition (see docs/scheduler.md) */
	double		score;			/* task score: greedy gain (per second when
								 * cost-aware); for round-robin rules the
								 * decisions since the task was served */
} DecisionCandidate;

typedef struct DecisionChoice
{
	DecisionCandidate chosen;	/* task -1: nothing can run now */
	PolicyRule	rule;
	int			n_eligible;		/* tasks that could have been chosen */
	int			n_runner_tasks; /* other tasks' candidates, next best first */
	DecisionCandidate runner_tasks[DECISION_RUNNERS_UP];
	int			n_runner_arms;	/* the chosen task's next candidates */
	DecisionCandidate runner_arms[DECISION_RUNNERS_UP];
	int			gp_status;		/* worst GP status of the chosen task */
} DecisionChoice;

extern int	DecisionWorldInit(DecisionWorld *w, int K,
							  const unsigned char *arm_kinds,
							  const unsigned char *arm_image,
							  const PolicyParams *params);
extern void DecisionWorldFree(DecisionWorld *w);

/* Priors (borrowed; changing one rebuilds the posteriors that use it). */
extern int	DecisionSetPrior(DecisionWorld *w, int kind, const GpPrior *prior);
extern int	DecisionTaskSetPrior(DecisionWorld *w, DecisionTask *t,
								 const GpPrior *prior);
/*
 * Install a new generation of fitted models at once (src/core/refit.c): the
 * priors of the kinds given (NULL entries keep theirs), each task's own
 * prior from own(arg, task id) (own NULL: keep), and the cost model with
 * its known arms (NULL: keep).  Every task's posteriors are rebuilt once,
 * whether or not a pointer changed: a caller that refits into the same
 * structs hands over new contents at the same addresses.
 */
extern int	DecisionInstallModels(DecisionWorld *w, const GpPrior *const *priors,
								  const GpPrior *(*own) (const void *arg, int64_t task),
								  const void *arg, const PolicyCostModel *cost,
								  const unsigned char *known);
/*
 * The fixed part of every run's time (process start, data load): the cost
 * model's estimates are this plus the model's, and a task's own runtimes
 * condition the residuals less this.  Applies from the next install.
 */
extern void DecisionSetCostOverhead(DecisionWorld *w, double seconds);
/*
 * The live scheduler's cost model (borrowed; NULL: back to cost_model and
 * the fallbacks).  Every task's estimates are rebuilt on it.
 */
extern int	DecisionSetFamilyCost(DecisionWorld *w, const CostModel *model);
/*
 * The history mixture of a kind (borrowed; NULL: none), which the policy
 * options acq=mix and mrg=1 use (src/core/mixture.h).  Tasks with their own GP
 * prior use their kind's mixture too.
 */
extern int	DecisionSetMixture(DecisionWorld *w, int kind, const MixPrior *mix);
/*
 * DecisionSetMixture, with each mixture row's task id (m values, 0: a row
 * of no task; borrowed, or NULL): a task's own row weighs 0 for it, as its
 * own GP prior leaves its row out (the live scheduler's history holds the
 * rows of active tasks, src/core/refit.h).  On failure the kind has none.
 */
extern int	DecisionSetMixtureRows(DecisionWorld *w, int kind,
								   const MixPrior *mix,
								   const int64_t *row_task);
/*
 * mrg=2's learned task score for a kind's mixture (copied; NULL: none),
 * fitted off the decision path (src/core/refit.c); setting the kind's mixture
 * drops it.  Used while the world's params have its key
 * (MixLearnSameFit); without one a live world (mix_learn_by_refit) ranks
 * by mrg=1's estimate.
 */
extern int	DecisionSetMixLearn(DecisionWorld *w, int kind,
								const struct MixLearn *ml);
/*
 * Typical seconds per arm of a kind's tasks, what mrg=2's fit charges its
 * history rows: the geometric mean of the kind's tasks' estimates (unit
 * costs when none has any); cost gets K values.
 */
extern void DecisionTypicalCost(const DecisionWorld *w, int kind, double *cost);
/* Cost model and its known arms (both borrowed; NULL: fallbacks only). */
extern int	DecisionSetCostModel(DecisionWorld *w, const PolicyCostModel *model,
								 const unsigned char *known);
extern void DecisionSetParams(DecisionWorld *w, const PolicyParams *params);

/*
 * Arms whose training fits one model per class (one-vs-rest, a tree per
 * class and round): their cost estimate for a task of c > 2 classes is the
 * cost model's times c (the cost model learns from times divided by c,
 * src/core/refit.c).  Copied; NULL: none.  A change refreshes every task.
 */
extern int	DecisionSetArmPerClass(DecisionWorld *w, const unsigned char *per_class);
/* The factor DecisionSetArmPerClass applies to arm k for c classes. */
extern double DecisionClassFactor(const unsigned char *per_class, int k, double classes);

/*
 * Device placement (src/worker/devices.c): which arms can start now (a device of
 * a kind they use has a free slot) and by how much each one's cost
 * estimate scales on the device it would get; copied.  Candidates of
 * closed arms are not chosen, and costs are the placed ones.  NULL open:
 * every arm, factor 1 (the replay).  A change refreshes every task.
 */
extern int	DecisionSetPlacement(DecisionWorld *w, const unsigned char *open,
								 const double *factor);

extern int	DecisionAddTenant(DecisionWorld *w, int cap);
extern void DecisionSetTenantCap(DecisionWorld *w, int tenant, int cap);
extern DecisionTask *DecisionAddTask(DecisionWorld *w,
									 const DecisionTaskSpec *spec);
extern void DecisionRemoveTask(DecisionWorld *w, DecisionTask *t);
extern DecisionTask *DecisionFindTask(const DecisionWorld *w, int64_t id);
/* Back to no runs at all (the replay, between policies). */
extern void DecisionResetTask(DecisionWorld *w, DecisionTask *t);

/* A run of (t, arm) was launched: the arm is in flight, t was served. */
extern void DecisionStart(DecisionWorld *w, DecisionTask *t, int arm);
/*
 * A run of (t, arm) succeeded with a score (higher is better) after
 * seconds (<= 0: unknown); the posterior gains one observation.  A second
 * score for an arm keeps the better one.  Returns a GpStatus.
 */
extern int	DecisionObserve(DecisionWorld *w, DecisionTask *t, int arm,
							double score, double seconds);
/* A run ended without a score: retry = 1 (interrupted) frees the arm,
 * retry = 0 (failed, cancelled) retires it. */
extern void DecisionEnd(DecisionWorld *w, DecisionTask *t, int arm, int retry);
/*
 * What the live catalog says about one task (src/worker/liveworld.c): arms take
 * these states, scores the world has not seen are added incrementally (a
 * changed one rebuilds the posterior), runtimes condition the cost
 * residuals, and the counters and caller's flags are replaced.
 */
typedef struct DecisionTaskState
{
	unsigned char *state;		/* K: DECISION_ARM_* (ineligible arms stay) */
	double	   *score;			/* K: best score, NaN if none */
	const double *seconds;		/* K: measured seconds, NaN if none; or NULL */
	const double *passes;		/* K: the passes those runs made, NaN if
								 * none; or NULL */
	const double *fallback_cost;	/* K: caller's estimates, or NULL */
	double		bins;			/* histogram bins, once known (> 0); NaN
								 * or <= 0: what the task had */
	int			n_runs;
	int			max_runs;
	int			blocked;
	int64_t		last_served;
	int			streak;
} DecisionTaskState;

extern void DecisionSyncTask(DecisionWorld *w, DecisionTask *t,
							 const DecisionTaskState *s);
/*
 * What the caller knows of a tenant's slots beyond the world's tasks:
 * external is added to the runs the world counts in flight so that the
 * sum is the trainers the tenant holds (its runs of tasks outside the
 * world count; its queued runs, which the world counts as in flight, do
 * not: external may be negative).  queued is its own queued runs waiting
 * for a slot: a tenant with one waits for its share like one with a task
 * that could run (docs/scheduler.md 7.1).
 */
extern void DecisionSetTenantExternal(DecisionWorld *w, int tenant, int n);
extern void DecisionSetTenantQueued(DecisionWorld *w, int tenant, int n);
extern int	DecisionTenantRunning(const DecisionWorld *w, int tenant);
/* The trainers a tenant may hold now: its cap or its fair share (INT_MAX: any). */
extern int	DecisionTenantCap(const DecisionWorld *w, int tenant);

/* The caller keeps a task out of decisions (cooldown, failures, paused,
 * a spent time budget). */
extern void DecisionBlock(DecisionWorld *w, DecisionTask *t, int blocked);
extern void DecisionSetMaxRuns(DecisionWorld *w, DecisionTask *t,
							   int max_runs, int n_runs);

/*
 * The next (task, candidate) and why; choice->chosen.task is -1 when no
 * task can run now.  It does not start the run: call DecisionStart.
 * Returns 0, or a negative POLICY_* status.
 */
extern int	DecisionNext(DecisionWorld *w, DecisionChoice *choice);

/*
 * Stale views.  While the caller sets DecisionWorld.installing, installing
 * models (DecisionInstallModels, DecisionSetMixtureRows,
 * DecisionSetFamilyCost, ...) still rebuilds every posterior and cost at
 * once but leaves the views (candidate, score) of tasks that did not
 * change as the previous models made them, so that no decision pays for
 * refreshing every task (the live scheduler: its refit's install, on
 * 1,000 tasks with the history mixture about 0.1 s).  A stale task is
 * refreshed when it changes, when DecisionNext picks it (at most
 * DECISION_STALE_PICKS per decision) and by DecisionRefreshStale, which
 * the caller runs off the decision path: at most max stale tasks per call.
 * Returns the stale tasks left, or a negative POLICY_* status.  The replay
 * never sets installing.
 */
#define DECISION_STALE_PICKS 4
extern int	DecisionRefreshStale(DecisionWorld *w, int max);

/*
 * The available candidates of one task, best first by the policy's
 * acquisition (at most max); returns how many, or a negative status.
 */
extern int	DecisionRankArms(DecisionWorld *w, DecisionTask *t,
							 DecisionCandidate *out, int max);

/* Could t be chosen now (eligible, under its tenant's cap)? */
extern int	DecisionEligible(DecisionWorld *w, const DecisionTask *t);
/* The shared per-tenant cap now in force (INT32_MAX: none). */
extern int	DecisionSharedCap(const DecisionWorld *w);

/*
 * Fair shares while every slot is busy (the live scheduler's run budget):
 * which tenants want a run but hold fewer slots than their fair share
 * (starved[i] = 1) and which hold more than it (over[i] = 1), counting
 * every task that could run if a slot were free, whatever the device.
 * Both arrays have n_tenants entries.  Returns the number of starved
 * tenants (0 when there is no fair share: tenant_cap = 0).
 */
extern int	DecisionFairShares(const DecisionWorld *w, unsigned char *starved,
							   unsigned char *over);

/*
 * [acqgen] Proposals before a task's grid is spent (docs/scheduler.md
 * 7.9): configurations around its best runs that are not arms yet, each
 * described by an HpPoint, the arm whose params it perturbs and its
 * family formula's log complexity less that arm's.
 */
typedef struct DecisionProposal
{
	HpPoint		point;
	int			parent;			/* arm its params come from (its cost) */
	double		log_complexity_delta;
	double		mu;				/* filled: posterior mean, std dev */
	double		sigma;
	double		cost;			/* filled: estimated seconds */
} DecisionProposal;

/*
 * Whether one of n proposals for task t beats its best available arm by
 * the margin under the policy's acquisition (HpProposalBeats), each
 * proposal's posterior from the task's (HpPointPosterior over the arms'
 * roots and coordinates, as the priors were extended: arm_root NULL when
 * no arm is generated) and its cost from its parent's (HpPointCost).
 * *winner: its index or -1; *p_acq and *grid_acq (may be NULL): the best
 * proposal's and the best arm's acquisition.  Returns POLICY_OK or a
 * negative POLICY_* status.
 */
extern int	DecisionProposalBeats(DecisionWorld *w, DecisionTask *t,
								  const int *arm_root, const double *arm_coords,
								  int dims, DecisionProposal *p, int n,
								  double margin, int *winner, double *p_acq,
								  double *grid_acq);

#endif							/* EASEML_DECISION_H */
