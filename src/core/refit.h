/*-------------------------------------------------------------------------
 *
 * refit.h
 *	  Keeping the live scheduler's priors and cost model current, off the
 *	  decision path.
 *
 * The history the priors learn from changes with every finished run (the
 * best score per model of every task is a history row), and so do the
 * measured runtimes the cost model learns from.  Refitting on every
 * decision made the worker's decisions slow; instead a refit cycle starts
 * at most every RefitState.interval seconds (or at once when nothing is
 * fitted yet) from a snapshot of the history, runs in short steps between
 * decisions, and installs everything it fitted into the DecisionWorld at
 * once when it is done.  In between, each task's posterior is updated
 * incrementally by the world (one observation per finished run).
 *
 * A cycle fits, per task kind, the shared prior (hyperparameters by
 * held-out likelihood) and then, for every task of that kind with a row in
 * the snapshot, a prior from every other row with the shared prior's
 * hyperparameters: a task's own scores never shape its own prior.  When
 * a policy that may run needs it (RefitInput.need_mix), it also fits each
 * kind's history mixture (src/core/mixture.h, for the policy options acq=mix
 * and mrg=1) on the kind's rows, with every row's task id: a task's own
 * row weighs 0 for it (DecisionSetMixtureRows), as its own prior leaves
 * the row out; when the policy scores tasks by mrg=2
 * (RefitInput.need_learn), the learned task score is fitted on each new
 * mixture right after it (src/core/mixlearn.h), in slices too, and installed
 * with it, so the live decision path never fits it.  Then it fits the
 * cost model, and last it makes the "auto"
 * policy's choice on the snapshot (src/core/autopolicy.h) in REPLAY_AUTO_DRAWS steps -- skipped when
 * the chooser's inputs (the complete block of the history it replays, the
 * slots, the options) did not change since the installed choice, or, in a
 * state's first cycle, since the choice RefitKeepAuto offered it (the
 * previous world's, when the world was rebuilt for new models).  Plain C,
 * no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/core/refit.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_REFIT_H
#define EASEML_REFIT_H

#include <stdint.h>

#include "autopolicy.h"
#include "costmodel.h"
#include "decision.h"
#include "gp.h"
#include "mixlearn.h"
#include "mixture.h"
#include "policy.h"
#include "refit_input.h"
#include "sizecost.h"

typedef struct RefitOwn
{
	int64_t		task;
	GpPrior		prior;
} RefitOwn;

/* One generation of fitted models (installed together). */
typedef struct RefitSet
{
	int			have_prior[DECISION_KINDS];
	GpPrior		prior[DECISION_KINDS];
	int			n_own;
	RefitOwn   *own;			/* leave-one-out priors, by task */
	int			have_mix[DECISION_KINDS];
	MixPrior	mix[DECISION_KINDS];	/* history mixture of the kind's rows */
	int64_t    *mix_task[DECISION_KINDS];	/* its rows' task ids (0: seed) */
	int			have_learn[DECISION_KINDS];
	MixLearn	learn[DECISION_KINDS];	/* mrg=2's model of that mixture */
	int			have_cost;
	PolicyCostModel cost;
	double		cost_overhead;	/* seconds of every run besides its work */
	unsigned char *cost_known;	/* K: the cost model has data for arm */
	AutoPolicyResult auto_pick; /* the "auto" policy's choice */
	int			have_fcost;
	CostModel	fcost;			/* family cost model (input with arms) */
} RefitSet;

typedef struct RefitState
{
	int			K;
	double		interval;		/* seconds between cycles */
	uint64_t	fitted_sig;		/* signature of the installed snapshot */
	uint64_t	pending_sig;	/* signature of the snapshot being fitted */
	double		last_start;		/* the caller's clock (seconds) at the last
								 * cycle's start */
	int			running;		/* a cycle is under way */
	/* the snapshot of the cycle under way */
	RefitInput	snap;
	double	   *snap_cells;
	int64_t    *snap_task;
	unsigned char *snap_kind;
	double	   *snap_runtime;
	double	   *snap_sizes;
	unsigned char *snap_per_class;
	int64_t    *snap_cost_task;
	CostArm    *snap_arms;
	double	   *snap_train;
	double	   *snap_folds;
	double	   *snap_passes;
	double	   *snap_bins;
	int		   *snap_root;		/* generated arms' roots, or NULL */
	double	   *snap_coords;	/* their scaled coordinates, or NULL */
	int			step;			/* next step of the cycle */
	RefitSet	next;			/* what the cycle has fitted so far */
	RefitSet	live;			/* what the world uses now */
	int			have_live;
	int64_t		only_task;		/* != 0: fit the own prior of this task
								 * only (easeml.explain) */
	AutoPolicyJob auto_job;		/* the "auto" choice under way */
	int			have_kept_auto; /* kept_auto holds a choice RefitKeepAuto
								 * offered */
	AutoPolicyResult kept_auto; /* until the first install */
	MixFitJob	mix_job;		/* the history mixture fit under way */
	int			mix_job_on;
	MixLearnJob learn_job;		/* mrg=2's fit on it under way */
	int			learn_job_on;
	int			learn_fits;		/* mrg=2 models fitted since RefitInit */
	int			auto_made;		/* choices made by a replay (or found
								 * impossible) since RefitInit: the worker
								 * records each (easeml.policy_choices) */
	int			auto_recorded;	/* auto_made when the worker last recorded */
	int			cycles;			/* cycles completed */
	int			failures;		/* fits that failed (the old ones stay) */
} RefitState;

extern void RefitInit(RefitState *r, int K, double interval);
extern void RefitFree(RefitState *r);

/* Signature of an input (cells, row owners and kinds, runtimes, sizes). */
extern uint64_t RefitSignature(const RefitInput *in);

/*
 * Start a cycle if the input changed since the installed fit and the
 * interval has passed (or nothing is installed yet); now is a clock in
 * seconds.  Returns 1 if a cycle is (still) under way.
 */
extern int	RefitMaybeStart(RefitState *r, const RefitInput *in, double now);

/*
 * Do one step of the cycle under way (a prior, a mixture or the cost
 * model); when the cycle completes, install it into the world and return
 * 1, else 0.  Negative on no memory.
 */
extern int	RefitStep(RefitState *r, DecisionWorld *w);

/*
 * Whether the cost model in use (NULL: none) should be refitted at once
 * from data, without waiting for a refit cycle: it is young (it learned
 * its overhead from fewer than REFIT_COST_TASKS tasks) and data has
 * measured runs of more tasks than it learned from.  The fixed part of a
 * run is most of the first runs' time and differs between machines and
 * loads far more than the families' rates do; the first run of any task
 * sets it for all, and the overhead's line (o0 + o1 x cells) needs two
 * tasks.
 */
#define REFIT_COST_TASKS 2
extern int	RefitCostCold(const CostModel *in_use, const CostData *data);

/*
 * Offer a new state (after RefitInit) the "auto" result of the state it
 * replaces (RefitAutoLatest of the world before a rebuild): until its
 * first cycle installs, RefitAutoPick returns it (when it is a choice),
 * and that cycle keeps it without a replay when the chooser's inputs did
 * not change (AutoPolicyKeeps); a kept result is not a new one
 * (auto_made).
 */
extern void RefitKeepAuto(RefitState *r, const AutoPolicyResult *pick);
/*
 * The "auto" chooser's latest result: the installed one, else the one
 * offered by RefitKeepAuto, or NULL (what a rebuild offers the next state).
 * RefitAutoPick: the same when it is a choice (AutoPolicyResult.have), the
 * one that runs, else NULL.
 */
extern const AutoPolicyResult *RefitAutoLatest(const RefitState *r);
extern const AutoPolicyResult *RefitAutoPick(const RefitState *r);

/* Install the live set into a world (a new one, after a rebuild). */
extern void RefitApply(const RefitState *r, DecisionWorld *w);
/* The installed prior of a task built without its own row, or NULL. */
extern const GpPrior *RefitOwnPrior(const RefitState *r, int64_t task);

#endif							/* EASEML_REFIT_H */
