/*-------------------------------------------------------------------------
 *
 * autopolicy.h
 *	  The live scheduler's "auto" policy (the default): choose among
 *	  POLICY_AUTO_CANDIDATES by replaying them on the installed history,
 *	  in steps off the decision path (src/core/refit.c runs them).
 *
 * The replay needs complete rows (a quality for every candidate it
 * replays), so the chooser first cuts the largest complete block out of
 * the history: for one task kind, the models known in at least a share of
 * that kind's rows, and the rows that know all of them.  When enough of
 * those rows have measured runtimes for every such model, the replay
 * charges them (and fits the size_gp cost model on them, as live);
 * otherwise every run costs 1.  Then ReplayAutoBegin/ReplayAutoStep
 * (src/core/replay.h) -- the code every "default" policy of easeml-replay runs
 * on its draw's prior rows -- replays the candidates, half the rows at
 * most playing tenants, and the one that reaches the loss targets soonest
 * wins: the very chooser a replay's "default" runs, on the same inputs
 * (the rows and the slots; src/core/replay.h fixes the rest).  The result says
 * what was chosen and why (per-candidate scores, the block it was chosen
 * on); the worker records it in easeml.policy_choices.
 *
 * Sliced: each AutoPolicyStep does about AUTO_SLICE_WORK of the replay's
 * deterministic work units (a couple of milliseconds), so the worker
 * never waits on it and never abandons it.  Bounded: at most
 * AUTO_MAX_ROWS rows, AUTO_MAX_TENANTS tenants and REPLAY_AUTO_WORK_MAX
 * units; a replay that would need more chooses POLICY_AUTO_FALLBACK, as a
 * replay's "default" does on the same rows.
 *
 * Inputs that did not change keep their choice without a replay: the
 * chooser's inputs are the block (its kind, rows, models, qualities and,
 * when charged, runtimes and data-set sizes; or that there is none), the
 * slots and the options after auto, and AutoPolicyBegin compares their
 * signature (AutoPolicyResult.sig) with the previous result's -- the one
 * definition of "unchanged".  A previous result is kept when it was
 * final on them: a choice, a fallback by the chooser's rules, or no block.
 * The previous result may come from another refit state (a world rebuilt
 * for new models, RefitKeepAuto): models no history row knows are not in
 * the block, so new candidates alone change nothing.
 *
 * Plain C, no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/core/autopolicy.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_AUTOPOLICY_H
#define EASEML_AUTOPOLICY_H

#include <stdint.h>

#include "replay.h"

#define AUTO_MAX_ROWS		REPLAY_AUTO_MAX_ROWS
#define AUTO_MAX_TENANTS	REPLAY_AUTO_MAX_TENANTS
#define AUTO_MIN_ROWS		REPLAY_AUTO_MIN_ROWS	/* fewer complete rows:
													 * no choice */
/* work units of one step (src/core/replay.h), a few milliseconds */
#define AUTO_SLICE_WORK		2e6

struct RefitInput;

/* What the chooser decided, and why. */
typedef struct AutoPolicyResult
{
	int			have;			/* final: a replay chose, or fell back by
								 * its rules (else reason says why not, and
								 * the previous choice or the fallback
								 * runs) */
	int			fallback;		/* spec is POLICY_AUTO_FALLBACK: no replay
								 * chose (too little history, or the
								 * replay would pass its work limit) */
	int			choice;			/* index in POLICY_AUTO_CANDIDATES, or
								 * REPLAY_AUTO_FALLBACK */
	char		spec[REPLAY_NAME_LEN];	/* the spec that runs */
	int			n_cand;
	char		cand[REPLAY_AUTO_MAX][REPLAY_NAME_LEN];
	double		score[REPLAY_AUTO_MAX]; /* geometric mean of the simulated
										 * seconds (runs, with unit costs)
										 * to the loss targets; NaN: none */
	int			kind;			/* DECISION_CLASSIFICATION, ... */
	int			rows;			/* history rows of the block */
	int			cols;			/* models of the block */
	int			tenants;		/* rows that played tenants per draw */
	int			devices;		/* slots the replay ran on */
	int			measured_costs; /* 1: runtimes; 0: every run cost 1 */
	int			no_block;		/* the history has no block: no choice,
								 * final until the inputs change */
	double		seconds;		/* time spent in its steps */
	double		work;			/* the replay's work units */
	uint64_t	sig;			/* signature of the chooser's inputs (0:
								 * none, never kept) */
	char		reason[256];
} AutoPolicyResult;

typedef struct AutoPolicyJob
{
	int			running;
	ReplayAutoJob replay;
	double	   *q;				/* the block: rows x cols */
	double	   *cost;			/* rows x cols, or NULL */
	double	   *sizes;			/* rows x 2, or NULL */
	AutoPolicyResult res;
} AutoPolicyJob;

/*
 * Cut the block out of the input and start the replay.  Returns 1 when
 * the result is already final (too little history, or the inputs of prev
 * unchanged, whose result is kept: then *reused is set), 0 when steps are
 * pending, negative on no memory.
 */
extern int	AutoPolicyBegin(AutoPolicyJob *job, const struct RefitInput *in,
							const AutoPolicyResult *prev, int *reused);
/*
 * Whether prev stands for inputs of signature sig without a replay: the
 * same inputs, and prev final on them.
 */
extern int	AutoPolicyKeeps(const AutoPolicyResult *prev, uint64_t sig);
/* One step of the replay; 1 when job->res is final. */
extern int	AutoPolicyStep(AutoPolicyJob *job);
extern void AutoPolicyFree(AutoPolicyJob *job);

/* Seconds of a monotonic clock. */
extern double AutoPolicyClock(void);

#endif							/* EASEML_AUTOPOLICY_H */
