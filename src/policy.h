/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  Multi-tenant model selection policies (algorithm.md sections 2.4, 3, 4).
 *
 * Plain C over BLAS/LAPACKE: no PostgreSQL headers, so the live scheduler
 * (src/scheduler.c), the replay simulator (src/replay.c) and the unit tests
 * share this code.
 *
 * The live scheduler uses the one-shot entry point PolicyDecide(): it
 * describes the world (tasks, their finished and running candidates,
 * history for the prior, costs) and gets back one (task, arm) choice.
 *
 * IDENTIFICATION
 *	  src/policy.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_POLICY_H
#define EASEML_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "gp.h"

/* Policies; names as accepted by PolicyFromName(). */
typedef enum PolicyKind
{
	POLICY_RR = 0,				/* "rr": tenants round-robin, GP-UCB arm */
	POLICY_RANDOM,				/* "random" */
	POLICY_POPULAR,				/* "popular": users' heuristic, fixed order
								 * by prior mean, tenants round-robin */
	POLICY_MAX_WIDTH,			/* "max_width" */
	POLICY_MAX_GAP,				/* "max_gap" */
	POLICY_MAX_EI,				/* "max_ei" */
	POLICY_HYBRID,				/* "hybrid": greedy + fairness floor */
	POLICY_FIFO,				/* "fifo": untried arms in catalog order,
								 * least recently served task first */
	POLICY__COUNT
} PolicyKind;

/*
 * Acquisition for the arm of one tenant (algorithm.md 2.4).  DEFAULT picks
 * the policy's own: EI for max_ei, UCB for the others.  With cost_aware
 * set, UCB becomes mu + sqrt(beta / c~) sigma (c~ = cost relative to the
 * tenant's geometric-mean cost, floored) and EI becomes EI / c.
 */
typedef enum PolicyAcq
{
	POLICY_ACQ_DEFAULT = 0,
	POLICY_ACQ_UCB,
	POLICY_ACQ_EI
} PolicyAcq;

/* One task (tenant) as the live scheduler sees it. */
typedef struct PolicyTask
{
	int64_t		id;				/* caller's id, for ties (lowest first) */
	int			n_obs;			/* finished runs with a score */
	const int  *obs_arm;		/* arm index 0..K-1 */
	const double *obs_y;		/* score in [0,1], higher is better */
	int			n_done;			/* arms that must not be picked again
								 * (failed, cancelled, evaluated...) */
	const int  *done_arm;
	int			n_running;		/* arms running or queued now */
	const int  *running_arm;
	const unsigned char *eligible;	/* K flags: arm allowed for this task, or
									 * NULL for all */
	const double *cost;			/* K estimated seconds, or NULL */
	int64_t		last_served;	/* decision counter when last served, -1 */
	int			streak;			/* decisions in a row without improving */
	/* appended: this task's own prior over the K arms (e.g. built without
	 * the task's own history row), or NULL for the input's shared prior */
	const GpPrior *prior;
} PolicyTask;

typedef struct PolicyInput
{
	PolicyKind	policy;
	int			K;				/* arms (catalog size) */
	int			n_tasks;
	const PolicyTask *tasks;
	/* history for the prior: m rows x K, row-major; NaN = unknown */
	int			m;
	const double *history;
	int			cost_aware;		/* 1: use cost in acquisition */
	double		beta;			/* <= 0: schedule from algorithm.md 2.3 */
	int			fairness_window;	/* hybrid: max decisions a task waits */
	int64_t		decision_no;	/* global decision counter */
	uint64_t	seed;

	/*
	 * Added after the first slice; all optional, zero/NULL = default.  Zero
	 * the struct (memset or "= {0}") so new fields stay at their defaults.
	 */
	PolicyAcq	acq;			/* arm acquisition, see PolicyAcq */
	int			streak_limit;	/* hybrid: serve the least recently served
								 * task instead of a greedy pick that has
								 * not improved this many times; 0 = off */
	double		delta;			/* beta schedule delta, <= 0: 0.1 */
	const GpPrior *prior;		/* ready prior over the K arms; NULL: fit
								 * one from history on every call */
	const GpPriorOptions *prior_options;	/* how to fit; NULL: defaults */
} PolicyInput;

typedef struct PolicyDecision
{
	int			task;			/* index into tasks[], -1 if nothing to do */
	int			arm;
	double		mu;				/* posterior mean of the chosen arm */
	double		sigma;			/* posterior std dev */
	double		score;			/* acquisition value that won */
	int			gp_status;		/* GP_OK or a GP_* status */
} PolicyDecision;

extern int	PolicyFromName(const char *name);	/* -1 if unknown */
extern const char *PolicyName(PolicyKind kind);

/*
 * Choose one (task, arm).  Returns 0 on success (decision->task may be -1
 * when no task has an eligible arm left), negative on bad input (a
 * PolicyStatus; PolicyDecide never prints and never exits).  With a GP
 * failure on one task (GP_NOT_PD) that task is skipped and the worst
 * status is reported in decision->gp_status.
 */
extern int	PolicyDecide(const PolicyInput *in, PolicyDecision *decision);

/* Status codes of PolicyDecide and the helpers below. */
#define POLICY_OK			0
#define POLICY_BAD_INPUT	(-1)
#define POLICY_NO_MEMORY	(-2)
#define POLICY_GP_FAILED	(-3)

/* ----------------------------------------------------------------------
 * Building blocks shared by PolicyDecide and the replay simulator, which
 * keeps incremental posteriors (GpState) and calls these directly.
 * ----------------------------------------------------------------------
 */

/* Every knob of a policy; PolicyParamsDefault() fills the defaults. */
typedef struct PolicyParams
{
	PolicyKind	kind;
	PolicyAcq	acq;			/* DEFAULT: EI for max_ei, else UCB */
	int			cost_aware;		/* cost in the arm acquisition */
	int			tenant_cost;	/* greedy task scores divided by the
								 * absolute cost of the task's candidate
								 * (gain per second); -1 = same as
								 * cost_aware */
	double		beta;			/* > 0: constant; <= 0: schedule */
	double		delta;			/* schedule delta */
	double		cost_floor;		/* floor of the relative cost c~ */
	int			warm_start;		/* serve every task once before scores */
	int			fairness_window;	/* hybrid: no task waits more than this
									 * many decisions (needs >= tasks) */
	int			streak_limit;	/* hybrid, see PolicyInput */
	PolicyKind	greedy;			/* hybrid: the greedy rule it guards */
	int			spread;			/* several devices: greedy and random rules
								 * only consider the tasks with the fewest
								 * runs in flight (work-conserving) */
} PolicyParams;

/* One task's best candidate and what the task-picking rules need. */
typedef struct PolicyTenantView
{
	int64_t		id;				/* for ties: lowest id first */
	int			arm;			/* best candidate, -1: nothing eligible */
	double		mu;				/* posterior mean of arm */
	double		sigma;			/* posterior std dev of arm */
	double		cost;			/* absolute cost estimate of arm (1 if none) */
	double		acq;			/* arm acquisition value */
	double		ucb;			/* mu + sqrt(beta) sigma */
	double		ei;				/* expected improvement over best */
	double		beta;
	double		best;			/* best observed score, 0 before the first */
	int			n_obs;
	int64_t		last_served;	/* decision number, -1 = never */
	int			streak;			/* served without improving, in a row */
	int			n_running;		/* runs of this task in flight now */
	double		score;			/* greedy task score (gain, per second when
								 * costed); PolicyBestArm fills it and the
								 * greedy rules compare it */
} PolicyTenantView;

extern void PolicyParamsDefault(PolicyParams *params, PolicyKind kind);

/* beta_t for a task with n_obs finished runs (algorithm.md 2.3). */
extern double PolicyBeta(const PolicyParams *params, int K, int n_obs);

/* Expected improvement of N(mu, sigma^2) over best. */
extern double PolicyExpectedImprovement(double mu, double sigma, double best);

/*
 * Best candidate of one task.  avail[k] != 0 marks arms that may be picked
 * (not evaluated, not running, eligible).  cost may be NULL (all 1).
 * prior_mean is needed by POLICY_POPULAR only.  Fills view->arm (-1 when
 * no arm is available) and the arm-level fields; keeps id, best, n_obs,
 * last_served and streak as the caller set them.
 */
extern int	PolicyBestArm(const PolicyParams *params, int K, const double *mu,
						  const double *var, const double *cost,
						  const unsigned char *avail,
						  const double *prior_mean, PolicyTenantView *view);

/*
 * Pick one task among n views (those with arm >= 0 are eligible); returns
 * its index or -1.  decision_no is the global decision counter (for the
 * fairness floor); rng is a 64-bit state used by POLICY_RANDOM only.
 */
extern int	PolicyPickTenant(const PolicyParams *params, int n,
							 PolicyTenantView *views, int64_t decision_no,
							 uint64_t *rng);

/*
 * Incremental task index for many tasks.  It keeps two tournament trees
 * over a caller-owned views array (greedy score, least recently served),
 * so that after one view changes (PolicyIndexUpdate, O(log n)) a pick costs
 * O(log n) instead of a pass over all views.  PolicyIndexPick returns
 * exactly what PolicyPickTenant would; it falls back to PolicyPickTenant
 * (O(n)) during warm start, while tasks differ in runs in flight, for
 * POLICY_RANDOM, and whenever its shortcut does not apply.  It assumes the
 * last_served values of served tasks are distinct (each decision serves
 * one task), which holds for a decision counter; the hybrid fairness test
 * then reduces to "every other task's deadline is in the future".
 */
typedef struct PolicyIndex
{
	int			n;
	int			size;			/* leaves: a power of two >= n */
	PolicyTenantView *views;	/* borrowed, n views */
	int		   *best;			/* 2 size nodes: argmax score, -1 = none */
	int		   *lrs;			/* 2 size nodes: least recently served */
	int			n_elig;			/* views with arm >= 0 */
	int			n_unserved;		/* eligible views never served */
	int			n_busy;			/* eligible views with runs in flight */
	unsigned char *state;		/* per view: bit 0 eligible, 1 unserved,
								 * 2 busy, as last counted */
} PolicyIndex;

extern int	PolicyIndexInit(PolicyIndex *index, PolicyTenantView *views, int n);
extern void PolicyIndexUpdate(PolicyIndex *index, int i);
extern int	PolicyIndexPick(const PolicyIndex *index, const PolicyParams *params,
							int64_t decision_no, uint64_t *rng);
extern void PolicyIndexFree(PolicyIndex *index);

/* splitmix64 step and a uniform double in [0,1). */
extern uint64_t PolicyRandNext(uint64_t *state);
extern double PolicyRandUniform(uint64_t *state);

/* ----------------------------------------------------------------------
 * Cost model: what a task's runs will cost before they run (algorithm.md
 * 2.4).  Learned from the runtimes of history rows and the sizes (rows,
 * features) of their data sets; see policy.c.  Usable live as well.
 * ----------------------------------------------------------------------
 */
typedef enum PolicyCostKind
{
	POLICY_COST_NONE = 0,		/* every run costs 1 */
	POLICY_COST_SIZE_LINEAR,	/* median sec/(rows*features) per model
								 * times the task's rows*features */
	POLICY_COST_SIZE_LOGLINEAR, /* log c = a_k + b_k log rows + g_k log
								 * features, least squares per model */
	POLICY_COST_SIZE_GP			/* log-linear plus a GP over the models on
								 * the residuals, conditioned online on the
								 * task's own finished runtimes */
} PolicyCostKind;

typedef struct PolicyCostModel
{
	PolicyCostKind kind;
	int			K;
	double	   *coef;			/* K x 3 */
	GpPrior		resid;			/* SIZE_GP: prior of log-cost residuals */
} PolicyCostModel;

extern const char *PolicyCostKindName(PolicyCostKind kind);
extern int	PolicyCostKindFromName(const char *name);	/* -1 if unknown */

/*
 * Fit from m history rows: runtime m x K seconds (NaN = unknown, values
 * must be > 0), sizes m x 2 (rows, features; > 0).
 */
extern int	PolicyCostModelFit(PolicyCostModel *model, PolicyCostKind kind,
							   const double *runtime, const double *sizes,
							   int m, int K);
extern void PolicyCostModelFree(PolicyCostModel *model);

/* log-cost prediction of the size part for one task (K values). */
extern int	PolicyCostBase(const PolicyCostModel *model, double rows,
						   double features, double *log_cost);

/*
 * Cost estimate in seconds for one task: exp(log_base + residual mean),
 * where the residual posterior 'resid' (a GpState over model->resid, fed
 * with log(observed seconds) - log_base[arm]) may be NULL.
 */
extern int	PolicyCostPredict(const PolicyCostModel *model,
							  const double *log_base, const GpState *resid,
							  double *cost);

#endif							/* EASEML_POLICY_H */
