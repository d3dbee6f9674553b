/*-------------------------------------------------------------------------
 *
 * gp_internal.h
 *	  What the gp*.c files share and no other module needs: combining
 *	  statuses, the jitter scales, a prior's allocation, and the held-out
 *	  log likelihood that gp_fit.c's grid search ranks hyperparameters by
 *	  (gp_loglik.c).
 *
 * Include gp.h for the GP API; this header is not part of it.
 *
 * IDENTIFICATION
 *	  src/core/gp_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_GP_INTERNAL_H
#define EASEML_GP_INTERNAL_H

#include "gp.h"

/* Relative jitter of each retry: 1e-8, 1e-6, 1e-4 times the mean diagonal. */
extern const double GpJitterScales[3];

/* Combine two statuses: any error wins, then jitter, then ok. */
static inline int
GpWorseStatus(int a, int b)
{
	if (a < 0)
		return a;
	if (b < 0)
		return b;
	return (a > b) ? a : b;
}

/* Allocate the arrays of a K-arm prior (gp.c). */
extern int	GpPriorAlloc(GpPrior *prior, int K);

/* Set prior->mean_diag: mean of diag(cov) plus the noise (gp.c). */
extern void GpPriorFinish(GpPrior *prior);

/*
 * Mean log likelihood of n rows under N(mu, cov + noise I) (NaN = unknown
 * cell); 'work' holds 3 K*K + K doubles (gp_loglik.c).
 */
extern int	GpMeanLogLik(const double *mu, const double *cov, double noise_var,
						 int K, const double *rows, int n, double *work,
						 double *mean_out);

/*
 * The same for the shrunk empirical covariance of n centred build rows Xc
 * (n x K, column variances sdiag) without forming it (gp_loglik.c).
 */
extern int	GpLowRankLogLik(const double *mu, const double *Xc,
							const double *sdiag, int n, int K, double lambda,
							double noise_var, const double *rows, int nrows,
							double *work, double *mean_out);

#endif							/* EASEML_GP_INTERNAL_H */
