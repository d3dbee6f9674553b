/*-------------------------------------------------------------------------
 *
 * mixlearn.h
 *	  A task score learned from the history's own trajectories (mrg=2,
 *	  docs/scheduler.md sections 3 and 6.5): every sampled history row
 *	  plays a task, with its own row left out of the mixture, and follows
 *	  the mixture's arm choice; at every state a few features available at
 *	  decision time are recorded next to the row's true remaining regret,
 *	  and a ridge regression of log(regret + MIXL_EPS) on them ranks the
 *	  real tasks' states.
 *
 * Plain C, no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/mixlearn.h
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
 * mixture's EI per cost^ce (cost: K typical seconds per arm, or NULL for
 * unit costs).  Returns POLICY_OK, POLICY_BAD_INPUT or POLICY_NO_MEMORY.
 */
extern int	MixLearnFit(MixLearn *ml, const MixPrior *mp,
						const PolicyParams *params, const double *cost);

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
