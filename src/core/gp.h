/*-------------------------------------------------------------------------
 *
 * gp.h
 *	  Gaussian-process math for easeml: a prior over the K candidate models
 *	  learned from a history matrix, the closed-form posterior with the prior
 *	  mean kept, and an incremental per-tenant posterior (docs/scheduler.md
 *	  1).  gp.c holds the basics (statuses, Cholesky, a prior's storage),
 *	  gp_fit.c and gp_loglik.c the prior fit, gp_posterior.c the
 *	  posteriors.
 *
 * Plain C over BLAS/LAPACKE: no PostgreSQL headers, no printing, no exit().
 * Every function returns a GpStatus; warnings (jitter was needed) are
 * positive, errors negative.  Matrices are row-major doubles.  Nothing is
 * ever inverted explicitly: every solve goes through a Cholesky factor.
 *
 * IDENTIFICATION
 *	  src/core/gp.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_GP_H
#define EASEML_GP_H

#include <stddef.h>

/* Status codes.  >= 0 means a usable result. */
typedef enum GpStatus
{
	GP_OK = 0,
	GP_JITTER = 1,				/* usable, but diagonal jitter was added */
	GP_BAD_INPUT = -1,			/* dimensions, NULLs or non-finite values */
	GP_NOT_PD = -2,				/* not positive definite even with jitter */
	GP_NO_MEMORY = -3,
	GP_LAPACK = -4				/* LAPACK returned an illegal-argument info */
} GpStatus;

/* Covariance families (docs/scheduler.md 1). */
typedef enum GpKernelKind
{
	GP_KERNEL_EMPIRICAL = 0,	/* shrunk empirical covariance (option A) */
	GP_KERNEL_RBF = 1			/* RBF over history columns (option B) */
} GpKernelKind;

/*
 * How to build a prior.  A parameter <= 0 (or < 0 where 0 is meaningful)
 * asks GpPriorFit to choose it by held-out marginal likelihood on the
 * history rows (rows split in two halves); see gp_fit.c.  Zero-initialise and
 * set what you need: the zero struct means "empirical kernel, fit all".
 */
typedef struct GpPriorOptions
{
	GpKernelKind kernel;
	double		shrinkage;		/* empirical: lambda in [0,1], < 0 = fit;
								 * 0 means "fit" too, use 1e-9 for none */
	double		lengthscale;	/* rbf: <= 0 = fit */
	double		signal_var;		/* rbf: <= 0 = fit */
	double		noise_var;		/* observation noise sigma_n^2, <= 0 = fit */
	int			standardize_rows;	/* rbf: z-score each history row before
									 * measuring column distances */
	int			dense_fit;		/* score the grid with dense K x K
								 * factorisations even where the low-rank
								 * form applies (tests compare the two) */
} GpPriorOptions;

/* A prior over K arms: mean mu0 and covariance cov (noise kept apart). */
typedef struct GpPrior
{
	int			K;
	double	   *mu0;			/* K */
	double	   *cov;			/* K x K, symmetric, positive semi-definite */
	double		noise_var;		/* sigma_n^2 added to observed arms */
	double		mean_diag;		/* mean of diag(cov) + noise_var: jitter unit */
	/* what was used (fitted or given), for reports */
	GpKernelKind kernel;
	double		shrinkage;
	double		lengthscale;
	double		signal_var;
	double		heldout_loglik; /* per held-out row, NaN when not fitted */
} GpPrior;

/*
 * Incremental posterior of one tenant: t observations so far.  Keeps the
 * Cholesky factor L of G = K[A,A] + sigma_n^2 I, z = L^{-1} (y - mu0[A])
 * and the posterior mean and variance over all K arms, and appends one
 * observation in O(t^2 + K t) without a per-tenant t x K matrix (see
 * gp_posterior.c), so a tenant's state is O(t^2 + K) and stays small in memory.
 */
typedef struct GpState
{
	const GpPrior *prior;		/* borrowed, must outlive the state */
	int			K;
	int			t;				/* observations */
	int			cap;			/* rows allocated in L, z, arms, y */
	int		   *arms;			/* cap */
	double	   *y;				/* cap: observed values */
	double	   *L;				/* lower factor, packed by rows: row i
								 * starts at i (i + 1) / 2 */
	double	   *z;				/* cap */
	double	   *work;			/* cap scratch */
	double	   *mu;				/* K: posterior mean */
	double	   *var;			/* K: posterior variance, clamped >= 0 */
	int			status;			/* worst non-error status seen (GP_JITTER) */
} GpState;

extern const char *GpStatusText(int status);

/* Prior from an m x K history (NaN = unknown cell); see gp_fit.c. */
extern int	GpPriorFit(const double *history, int m, int K,
					   const GpPriorOptions *options, GpPrior *prior);

/* Prior from a given mean and covariance (copied); for tests and callers
 * with their own kernel. */
extern int	GpPriorInit(GpPrior *prior, int K, const double *mu0,
						const double *cov, double noise_var);

extern void GpPriorFree(GpPrior *prior);

/* Closed-form posterior: t observations -> mu, var over all K arms. */
extern int	GpPosterior(const GpPrior *prior, int t, const int *arms,
						const double *y, double *mu, double *var);

/*
 * Cholesky of an n x n symmetric matrix in place (lower, row-major), with
 * jitter retries of 1e-8, 1e-6, 1e-4 times the mean diagonal.  'work' must
 * hold n*n doubles (the original is restored from it on each retry).
 * Returns GP_OK, GP_JITTER (and *jitter_used) or GP_NOT_PD.
 */
extern int	GpCholesky(double *a, int n, double *work, double *jitter_used);

extern int	GpStateInit(GpState *state, const GpPrior *prior, int cap_hint);
extern void GpStateReset(GpState *state);
extern int	GpStateAdd(GpState *state, int arm, double y);
extern void GpStateFree(GpState *state);

/*
 * Joint posterior covariance of m arms of a state (m x m, row-major, into
 * cov): K[a,b] - (L^-1 k_a) . (L^-1 k_b), O(m t^2).  The diagonal equals
 * state->var up to rounding.
 */
extern int	GpStateCov(const GpState *state, int m, const int *arms,
					   double *cov);
/*
 * The posterior of a point that is not one of the K arms (a proposed
 * configuration, src/core/hpspace.h): krow (K) is its prior covariance with
 * every arm (only the observed arms' entries are read), kxx its prior
 * variance and mu0 its prior mean; mu = mu0 + (L^-1 k)'z, var = kxx -
 * |L^-1 k|^2 (clamped >= 0), O(t^2).
 */
extern int	GpStatePredict(const GpState *state, const double *krow, double kxx,
						   double mu0, double *mu, double *var);

#endif							/* EASEML_GP_H */
