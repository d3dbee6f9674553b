/*-------------------------------------------------------------------------
 *
 * gp.c
 *	  The shared basics of the GP math (gp.h): status texts, Cholesky with
 *	  jitter, and a prior's storage (allocate, free, from a given mean and
 *	  covariance).  The rest of the GP is one file per job:
 *
 *	 gp_fit.c        the prior from a history matrix (GpPriorFit)
 *	 gp_loglik.c     held-out log likelihood that ranks its hyperparameters
 *	 gp_posterior.c  the closed-form and the incremental posterior
 *
 * Nothing is ever inverted explicitly: every solve goes through a Cholesky
 * factor (docs/scheduler.md 1).
 *
 * IDENTIFICATION
 *	  src/core/gp.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "gp.h"
#include "gp_internal.h"

/* relative jitter of GpCholesky's retries and GpStateAdd's pivots */
const double GpJitterScales[3] = {1e-8, 1e-6, 1e-4};

/* Human-readable text for a GpStatus. */
const char *
GpStatusText(int status)
{
	switch (status)
	{
		case GP_OK:
			return "ok";
		case GP_JITTER:
			return "covariance was not positive definite; diagonal jitter was added";
		case GP_BAD_INPUT:
			return "bad input (dimensions, null pointer or non-finite value)";
		case GP_NOT_PD:
			return "covariance is not positive definite even with jitter";
		case GP_NO_MEMORY:
			return "out of memory";
		case GP_LAPACK:
			return "LAPACK rejected an argument";
	}
	return "unknown status";
}

/* True when all n values are finite. */
static int
AllFinite(const double *x, size_t n)
{
	size_t		i;

	for (i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return 0;
	return 1;
}

/* Zero the strictly upper triangle of a row-major n x n matrix. */
static void
ZeroUpper(double *a, int n, int lda)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			a[(size_t) i * lda + j] = 0.0;
}

/*
 * Cholesky with jitter retries.  LAPACK is only called with n > 0, lda = n
 * and finite input, so reference LAPACK's XERBLA can never stop the process.
 */
int
GpCholesky(double *a, int n, double *work, double *jitter_used)
{
	double		mean_diag = 0.0;
	lapack_int	info;
	int			attempt;
	int			i;

	if (jitter_used)
		*jitter_used = 0.0;
	if (a == NULL || work == NULL || n <= 0)
		return GP_BAD_INPUT;
	if (!AllFinite(a, (size_t) n * n))
		return GP_BAD_INPUT;

	memcpy(work, a, sizeof(double) * (size_t) n * n);
	for (i = 0; i < n; i++)
		mean_diag += a[(size_t) i * n + i];
	mean_diag /= n;
	if (!(mean_diag > 0.0))
		mean_diag = 1.0;

	info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n);
	if (info == 0)
	{
		ZeroUpper(a, n, n);
		return GP_OK;
	}
	if (info < 0)
		return GP_LAPACK;

	for (attempt = 0; attempt < 3; attempt++)
	{
		double		jit = GpJitterScales[attempt] * mean_diag;

		memcpy(a, work, sizeof(double) * (size_t) n * n);
		for (i = 0; i < n; i++)
			a[(size_t) i * n + i] += jit;
		info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n);
		if (info == 0)
		{
			ZeroUpper(a, n, n);
			if (jitter_used)
				*jitter_used = jit;
			return GP_JITTER;
		}
		if (info < 0)
			return GP_LAPACK;
	}
	memcpy(a, work, sizeof(double) * (size_t) n * n);
	return GP_NOT_PD;
}

/* Free a prior's arrays and zero it. */
void
GpPriorFree(GpPrior *prior)
{
	if (prior == NULL)
		return;
	free(prior->mu0);
	free(prior->cov);
	memset(prior, 0, sizeof(*prior));
}

/* Allocate the arrays of a K-arm prior. */
int
GpPriorAlloc(GpPrior *prior, int K)
{
	memset(prior, 0, sizeof(*prior));
	prior->mu0 = malloc(sizeof(double) * (size_t) K);
	prior->cov = malloc(sizeof(double) * (size_t) K * K);
	if (prior->mu0 == NULL || prior->cov == NULL)
	{
		GpPriorFree(prior);
		return GP_NO_MEMORY;
	}
	prior->K = K;
	prior->heldout_loglik = NAN;
	return GP_OK;
}

/* Mean of diag(cov) plus the noise: the unit for jitter. */
void
GpPriorFinish(GpPrior *prior)
{
	double		s = 0.0;
	int			k;

	for (k = 0; k < prior->K; k++)
		s += prior->cov[(size_t) k * prior->K + k];
	prior->mean_diag = s / prior->K + prior->noise_var;
	if (!(prior->mean_diag > 0.0))
		prior->mean_diag = 1.0;
}

/* Prior from a caller's mean and covariance (both copied). */
int
GpPriorInit(GpPrior *prior, int K, const double *mu0, const double *cov,
			double noise_var)
{
	int			rc;
	int			i,
				j;

	if (prior == NULL)
		return GP_BAD_INPUT;
	memset(prior, 0, sizeof(*prior));
	if (K <= 0 || mu0 == NULL || cov == NULL || !(noise_var >= 0.0) ||
		!isfinite(noise_var))
		return GP_BAD_INPUT;
	if (!AllFinite(mu0, K) || !AllFinite(cov, (size_t) K * K))
		return GP_BAD_INPUT;
	for (i = 0; i < K; i++)
	{
		if (cov[(size_t) i * K + i] < 0.0)
			return GP_BAD_INPUT;
		for (j = 0; j < i; j++)
			if (fabs(cov[(size_t) i * K + j] - cov[(size_t) j * K + i]) >
				1e-12 * (1.0 + fabs(cov[(size_t) i * K + j])))
				return GP_BAD_INPUT;
	}
	rc = GpPriorAlloc(prior, K);
	if (rc < 0)
		return rc;
	memcpy(prior->mu0, mu0, sizeof(double) * K);
	memcpy(prior->cov, cov, sizeof(double) * (size_t) K * K);
	prior->noise_var = noise_var;
	prior->kernel = GP_KERNEL_EMPIRICAL;
	prior->shrinkage = 0.0;
	GpPriorFinish(prior);
	return GP_OK;
}
