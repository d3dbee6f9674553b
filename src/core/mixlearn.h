/*-------------------------------------------------------------------------
 *
 * mixlearn.h
 *	  A task score learned from the history's own trajectories (mrg=2,
 *	  docs/scheduler.md 3 and 7; docs/research/scheduler-experiments.md): every sampled history row
 *	  plays a task, with its own row left out of the mixture, and follows
 *	  the mixture's arm choice; at every state a few features available at
 *	  decision time are recorded next to the row's true remaining regret,
 *	  and a ridge regression of log(regret + MIXL_EPS) on them ranks the
 *	  real tasks' states.
 *
 * Plain C, no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/core/mixlearn.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_MIXLEARN_H
#define EASEML_MIXLEARN_H

#include "mixture.h"

#define MIXL_FEATURES 8			/* intercept + 7 features */
#define MIXL_EPS 1e-3			/* regret floor of the log target */
#define MIXL_ROWS 60			/* history rows that play a task, at most */
#define MIXL_STEPS 60			/* runs each of them makes, at most */
#define MIXL_STATES (MIXL_ROWS * MIXL_STEPS)
#define MIXL_RIDGE 1e-3			/* ridge per state, features only */

typedef struct MixLearn
{
	int			ok;				/* fitted */
	int			n;				/* states it was fitted on */
	double		coef[MIXL_FEATURES];
	PolicyParams params;		/* what it was fitted with (MixLearnSameFit) */
} MixLearn;

/*
 * The features of a task's state: weights w and offsets off from
 * MixWeights*, available arms, best score, results so far and results
 * since the best improved.  x gets MIXL_FEATURES values (x[0] = 1).
 */
extern void MixLearnFeatures(const MixPrior *mp, const PolicyParams *params,
							 const double *w, const double *off,
							 const unsigned char *avail, double best,
							 int n_obs, int streak, double *x);

/*
 * Fit from the history's own trajectories: up to MIXL_ROWS rows of mp
 * play a task for up to MIXL_STEPS runs each, choosing arms by the
 * mixture's EI per cost (cost: K typical seconds per arm, or NULL for
 * unit costs).  Returns POLICY_OK, POLICY_BAD_INPUT or POLICY_NO_MEMORY;
 * ml->params is set in every case.  The sliced fit below run to the end.
 */
extern int	MixLearnFit(MixLearn *ml, const MixPrior *mp,
						const PolicyParams *params, const double *cost);

/*
 * MixLearnFit cut into steps, for the live scheduler's refit cycle, which
 * must not hold the worker (src/core/refit.c): the same rows play the same
 * states in the same order, so the coefficients are bit-identical.  A
 * step ends between two states (one state scans the mixture about four
 * times, MIXL_STATE_WORK cells); MixLearnFit is this run to completion.
 */
typedef struct MixLearnJob
{
	MixPrior	mp;				/* borrowed rows (the struct copied): they
								 * must outlive the job */
	PolicyParams p;				/* the fit's params, mix_gp = 0 */
	double	   *cost;			/* K, owned, or NULL: unit costs */
	int			rc;				/* POLICY_OK, or what ended the fit */
	int			done;
	int			stride;			/* history rows between played rows */
	int			played;			/* rows played so far */
	int			h;				/* row playing now; -1: none */
	int			s;				/* its next state */
	int			streak;			/* its results since the best improved */
	double		best;			/* its best score so far */
	double		rowmax;			/* its true best */
	double	   *score;			/* K: its results so far, NaN untried */
	unsigned char *avail;		/* K: arms it has not tried */
	double	   *w;				/* m: row weights */
	double	   *off;			/* m: row offsets */
	double	   *x;				/* MIXL_STATES x MIXL_FEATURES */
	double	   *y;				/* MIXL_STATES */
	int			n;				/* states recorded */
	double		spent;			/* cell operations so far (MIXL_STATE_WORK
								 * per state) */
	MixLearn	res;			/* the fit, when done */
} MixLearnJob;

#define MIXL_STATE_WORK(mp) (4.0 * (mp)->m * (mp)->K)

/*
 * Start a fit (arguments as MixLearnFit's; cost is copied).  Returns
 * POLICY_OK, POLICY_BAD_INPUT or POLICY_NO_MEMORY (the job is then
 * empty).
 */
extern int	MixLearnBegin(MixLearnJob *job, const MixPrior *mp,
						  const PolicyParams *params, const double *cost);

/*
 * Play states until about 'work' cell operations are spent (at least one
 * state); the last step solves the regression.  Returns 1 when the fit is
 * done: then MixLearnTake gives the result.
 */
extern int	MixLearnStep(MixLearnJob *job, double work);

/* The fit into *ml (zeroed on error), the job freed; returns its rc. */
extern int	MixLearnTake(MixLearnJob *job, MixLearn *ml);
extern void MixLearnFree(MixLearnJob *job);

/*
 * What of params the fit reads (the mixture options, q_max and cost): MIXL_KEY values into key.  A model fitted with params a
 * serves params b when their keys are equal (MixLearnSameFit).
 */
#define MIXL_KEY 5
extern void MixLearnKey(const PolicyParams *params, double *key);
extern int	MixLearnSameFit(const PolicyParams *a, const PolicyParams *b);

/*
 * The states MixLearnFit learns from: features into x (MIXL_STATES x
 * MIXL_FEATURES at most), log(remaining regret + MIXL_EPS) into y, their
 * number into *n.
 */
extern int	MixLearnStates(const MixPrior *mp, const PolicyParams *params,
						   const double *cost, double *x, double *y, int *n);

/* Predicted remaining regret (+ MIXL_EPS) of a state with features x. */
extern double MixLearnPredict(const MixLearn *ml, const double *x);

#endif							/* EASEML_MIXLEARN_H */
