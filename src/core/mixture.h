/*-------------------------------------------------------------------------
 *
 * mixture.h
 *	  Empirical-mixture ("particle") posterior over the history rows: a
 *	  task's quality vector is one history row plus noise, so after scores
 *	  y on arms S each row r weighs w_r ~ exp(-|y - r[S]|^2 / (2 s^2)), and
 *	  an untried arm's predictive is a bounded, skewed mixture over the rows
 *	  (docs/scheduler.md sections 2 and 3, options acq=mix and mrg=1).
 *
 * Plain C, no PostgreSQL headers.  The history is copied (imputed like the
 * GP prior's) and the bandwidth s is fitted on it by leave-one-row-out
 * predictive likelihood, so nothing is tuned on the tasks it serves.
 *
 * IDENTIFICATION
 *	  src/core/mixture.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_MIXTURE_H
#define EASEML_MIXTURE_H

#include "policy.h"

/* The history rows and their fitted bandwidths. */
typedef struct MixPrior
{
	int			m;				/* rows */
	int			K;				/* arms */
	double	   *rows;			/* m x K, unknown cells imputed */
	double		bw;				/* s for rows as they are */
	double		bw_shift;		/* s for rows shifted by the task's mean
								 * offset on its tried arms */
} MixPrior;

/*
 * Fit from m history rows (m x K, NaN = unknown; m >= 2).  bw > 0 fixes
 * both bandwidths; bw <= 0 fits each on a grid by leave-one-row-out
 * likelihood of held-out cells given a few observed ones (seeded,
 * deterministic).  Returns POLICY_OK, POLICY_BAD_INPUT or
 * POLICY_NO_MEMORY; the prior is zeroed on error.
 */
extern int	MixPriorFit(MixPrior *mp, const double *history, int m, int K,
						double bw);
extern void MixPriorFree(MixPrior *mp);

#define MIX_GRID 14				/* bandwidths tried: MIX_GRID_MIN * STEP^g */

/*
 * MixPriorFit with bw <= 0 cut into steps, for the live scheduler's refit
 * cycle, which must not hold the worker (src/core/refit.c): the same held-out
 * cases in the same order, so the fitted bandwidths are bit-identical.
 */
typedef struct MixFitJob
{
	MixPrior	mp;				/* the rows; bandwidths set when done */
	int			shift;			/* pass under way: 0 unshifted, 1 shifted */
	int			h;				/* held-out row of the next case */
	int			obs;			/* its next count of observed cells */
	int			done;
	uint64_t	rng;			/* the held-out row's column shuffle */
	double		ll[MIX_GRID];	/* log likelihood per bandwidth, this pass */
	double		spent;			/* cell operations so far */
	int		   *cols;			/* scratch: K columns */
	double	   *d2;				/* scratch: m */
	double	   *a;				/* scratch: m */
	double	   *e;				/* scratch: m x cells scored per case */
} MixFitJob;

/* Copy and impute the rows; POLICY_OK, POLICY_BAD_INPUT, POLICY_NO_MEMORY. */
extern int	MixFitBegin(MixFitJob *job, const double *history, int m, int K);

/*
 * Score held-out cases until about 'work' cell operations are spent (at
 * least one case).  Returns 1 when the fit is done: then MixFitTake moves
 * the prior out.
 */
extern int	MixFitStep(MixFitJob *job, double work);
extern void MixFitTake(MixFitJob *job, MixPrior *out);
extern void MixFitFree(MixFitJob *job);

/*
 * Normalised row weights for a task with scores score[k] (NaN: not
 * observed) into w (m values), and each row's offset into off (m values;
 * zeros unless params->mix_shift).  Returns the bandwidth used.
 */
extern double MixWeights(const MixPrior *mp, const PolicyParams *params,
						 const double *score, double *w, double *off);

/*
 * MixWeights with row skip (-1: none) weighing 0: the live scheduler's
 * history holds each active task's own row, which must not explain that
 * task's scores (src/core/refit.h).  Needs another row (m >= 2).
 */
extern double MixWeightsExcept(const MixPrior *mp, const PolicyParams *params,
							   const double *score, int skip, double *w,
							   double *off);

/*
 * Arm choice under the mixture (acq=mix): the available arm of largest
 * expected improvement over view->best (bounded by q_max when set and
 * q_max_arm), per cost when cost-aware.  Each row contributes N(r_k +
 * off_r, h^2), h = params->mix_h (< 0: the bandwidth; 0: the row value
 * itself).  With params->mix_gp = A > 0 the predictive is (1 - A) that
 * mixture + A the GP posterior N(gp_mu, gp_var) (both needed then).
 * Fills view like PolicyBestArm (arm -1 when nothing is
 * available, or when every arm's mixture EI is 0: the caller keeps the
 * GP's choice then) and view->ei with the mixture EI.
 */
extern int	MixBestArm(const MixPrior *mp, const PolicyParams *params,
					   const double *w, const double *off, double bw,
					   const double *gp_mu, const double *gp_var,
					   const double *cost, const unsigned char *avail,
					   PolicyTenantView *view);

/*
 * The task's expected remaining regret under the mixture, sum_r w_r
 * (max over available arms of r_k + off_r, bounded by q_max - best)+.
 */
extern double MixRemainingRegret(const MixPrior *mp, const PolicyParams *params,
								 const double *w, const double *off,
								 const unsigned char *avail, double best);
/* The same, and into *p_improve (if not NULL) the weight of the rows that
 * would improve on best. */
extern double MixRemainingRegretP(const MixPrior *mp, const PolicyParams *params,
								  const double *w, const double *off,
								  const unsigned char *avail, double best,
								  double *p_improve);

#endif							/* EASEML_MIXTURE_H */
