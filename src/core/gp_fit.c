/*-------------------------------------------------------------------------
 *
 * gp_fit.c
 *	  The GP prior from a history matrix (GpPriorFit): imputation of
 *	  unknown cells, the two covariance families, and the search of their
 *	  hyperparameters (docs/scheduler.md 1).
 *
 * The model.  A tenant's quality vector over the K candidate models is one
 * draw from N(mu0, Sigma); an observation of arm a is f(a) + eps with
 * eps ~ N(0, sigma_n^2).  mu0 and Sigma are learned from a history matrix
 * (rows = other tasks, columns = models) [A: design note and prototypes]:
 *
 *	 mu0(k)   column mean over the known cells;
 *	 Sigma    either the empirical covariance shrunk toward its diagonal,
 *			  (1 - lambda) S + lambda diag(S)   (option A), or an RBF kernel
 *			  over the history columns, s^2 exp(-|q_a - q_b|^2 / (2 l^2 m))
 *			  with the squared distance divided by the number of history
 *			  rows m so the length-scale does not drift as history grows
 *			  (option B, docs/scheduler.md 1).
 *
 * Unknown cells (NaN) in the history are imputed before any covariance is
 * formed: x(d,k) = mu0(k) + (mean over row d's known cells of x - mu0).
 * The row offset keeps the "hard dataset" effect; imputing a full matrix
 * keeps S positive semi-definite, which a pairwise-complete covariance
 * would not guarantee.  [R] not confirmed by the paper's text.
 *
 * Hyperparameters (lambda, or l and s^2, and sigma_n^2) left <= 0 by the
 * caller are chosen on a grid by held-out marginal likelihood: the mean
 * and covariance are built from the even history rows and the odd rows
 * are scored (and vice versa is not needed: the grid only ranks).  The
 * final prior is then rebuilt from all rows.  [R] not confirmed by the
 * paper's text; the prototypes used fixed values (s^2 = 0.5 or 1, l = 1,
 * sigma_n = 0.01).  The scoring itself is gp_loglik.c.
 *
 * IDENTIFICATION
 *	  src/core/gp_fit.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gp.h"
#include "gp_internal.h"

/* history rows needed before hyperparameters are fitted rather than set */
#define GP_MIN_FIT_ROWS 8
/* held-out rows scored per grid point (keeps the grid search bounded) */
#define GP_MAX_HELDOUT_ROWS 200
/* held-out rows with unknown cells scored per grid point (each needs its own
 * factorisation, so fewer of them are used) */
#define GP_MAX_NAN_HELDOUT_ROWS 24

/* defaults used when the history is too small to fit anything */
#define GP_DEFAULT_SHRINKAGE 0.3
#define GP_DEFAULT_NOISE_VAR 1e-4
#define GP_DEFAULT_VAR 0.04
#define GP_DEFAULT_RHO 0.5

/*
 * Column means over known cells and a completed copy of the selected rows
 * (NaN imputed as mu0(k) + row offset).  Columns with no known cell take
 * the global mean of the known cells (0.5 when the history is empty).
 */
static void
CompleteRows(const double *history, int K, const int *rows, int n,
			 double *mu, double *X)
{
	double		gsum = 0.0;
	long		gcnt = 0;
	int			r,
				k;

	for (k = 0; k < K; k++)
	{
		double		s = 0.0;
		int			c = 0;

		for (r = 0; r < n; r++)
		{
			double		v = history[(size_t) rows[r] * K + k];

			if (!isnan(v))
			{
				s += v;
				c++;
			}
		}
		mu[k] = c > 0 ? s / c : NAN;
		gsum += s;
		gcnt += c;
	}
	for (k = 0; k < K; k++)
		if (isnan(mu[k]))
			mu[k] = gcnt > 0 ? gsum / gcnt : 0.5;

	for (r = 0; r < n; r++)
	{
		const double *src = history + (size_t) rows[r] * K;
		double		off = 0.0;
		int			c = 0;

		for (k = 0; k < K; k++)
			if (!isnan(src[k]))
			{
				off += src[k] - mu[k];
				c++;
			}
		off = c > 0 ? off / c : 0.0;
		for (k = 0; k < K; k++)
			X[(size_t) r * K + k] = isnan(src[k]) ? mu[k] + off : src[k];
	}
}

/* Empirical covariance S = Xc' Xc / n of a completed n x K matrix. */
static void
EmpiricalCov(const double *X, int n, int K, const double *mu, double *Xc,
			 double *S)
{
	int			r,
				k;

	for (r = 0; r < n; r++)
		for (k = 0; k < K; k++)
			Xc[(size_t) r * K + k] = X[(size_t) r * K + k] - mu[k];
	/* one triangle (half the flops of a general product), then mirrored */
	cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, K, n, 1.0 / n, Xc, K,
				0.0, S, K);
	for (k = 0; k < K; k++)
	{
		int			j;

		for (j = k + 1; j < K; j++)
			S[(size_t) k * K + j] = S[(size_t) j * K + k];
		if (S[(size_t) k * K + k] < 1e-8)
			S[(size_t) k * K + k] = 1e-8;
	}
}

/* Shrink S toward its diagonal into out: (1 - lambda) S + lambda diag(S). */
static void
ShrinkCov(const double *S, int K, double lambda, double *out)
{
	size_t		i;
	int			k;

	for (i = 0; i < (size_t) K * K; i++)
		out[i] = (1.0 - lambda) * S[i];
	for (k = 0; k < K; k++)
		out[(size_t) k * K + k] = S[(size_t) k * K + k];
}

/*
 * Squared column distances of a completed n x K matrix, divided by n
 * (docs/scheduler.md 1), optionally after z-scoring each row.
 */
static void
ColumnDistances(const double *X, int n, int K, int standardize, double *Xs,
				double *D)
{
	int			r,
				a,
				b;
	double	   *norms;

	for (r = 0; r < n; r++)
	{
		const double *src = X + (size_t) r * K;
		double	   *dst = Xs + (size_t) r * K;
		double		m = 0.0,
					s = 0.0;

		for (a = 0; a < K; a++)
			m += src[a];
		m /= K;
		for (a = 0; a < K; a++)
			s += (src[a] - m) * (src[a] - m);
		s = sqrt(s / K);
		for (a = 0; a < K; a++)
			dst[a] = standardize ? (s > 1e-12 ? (src[a] - m) / s : 0.0) : src[a];
	}
	/* D = diag(G) 1' + 1 diag(G)' - 2 G with G = Xs' Xs */
	cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, K, n,
				1.0, Xs, K, Xs, K, 0.0, D, K);
	norms = Xs;					/* reuse the first K entries as scratch */
	for (a = 0; a < K; a++)
		norms[a] = D[(size_t) a * K + a];
	for (a = 0; a < K; a++)
		for (b = 0; b < K; b++)
		{
			double		d = norms[a] + norms[b] - 2.0 * D[(size_t) a * K + b];

			D[(size_t) a * K + b] = (d > 0.0 ? d : 0.0) / n;
		}
	for (a = 0; a < K; a++)
		D[(size_t) a * K + a] = 0.0;
}

/* RBF covariance from squared distances: s2 exp(-D / (2 l^2)). */
static void
RbfCov(const double *D, int K, double lengthscale, double signal_var,
	   double *out)
{
	size_t		i;
	double		inv = 1.0 / (2.0 * lengthscale * lengthscale);

	for (i = 0; i < (size_t) K * K; i++)
		out[i] = signal_var * exp(-D[i] * inv);
}

/* Fallback prior when the history is too small: constant correlation. */
static void
DefaultCov(int K, const GpPriorOptions *opt, double *cov)
{
	double		s2 = (opt->kernel == GP_KERNEL_RBF && opt->signal_var > 0.0) ?
		opt->signal_var : GP_DEFAULT_VAR;
	int			a,
				b;

	for (a = 0; a < K; a++)
		for (b = 0; b < K; b++)
			cov[(size_t) a * K + b] = s2 * (a == b ? 1.0 : GP_DEFAULT_RHO);
}

/*
 * Build mean and covariance for one hyperparameter choice from the given
 * rows of the history.  scratch holds 2 n*K + K*K doubles.
 */
static void
BuildCov(const double *history, int K, const int *rows, int n,
		 GpKernelKind kernel, int standardize, double lambda, double l,
		 double s2, double *mu, double *cov, double *scratch)
{
	double	   *X = scratch;
	double	   *Xc = scratch + (size_t) n * K;
	double	   *T = scratch + 2 * (size_t) n * K;

	CompleteRows(history, K, rows, n, mu, X);
	if (kernel == GP_KERNEL_EMPIRICAL)
	{
		EmpiricalCov(X, n, K, mu, Xc, T);
		ShrinkCov(T, K, lambda, cov);
	}
	else
	{
		ColumnDistances(X, n, K, standardize, Xc, T);
		RbfCov(T, K, l, s2, cov);
	}
}

/*
 * The hyperparameter search of GpPriorFit: even rows build a prior, odd
 * rows (at most GP_MAX_HELDOUT_ROWS) score it by held-out likelihood.
 */
typedef struct GridFit
{
	int			na;				/* build rows */
	int			nb;				/* held-out rows */
	int		   *rows_a;			/* na: the build rows' indices */
	double	   *held;			/* nb x K: the held-out rows */
	double	   *mu_a;			/* K: the build rows' mean */
	double	   *cov_a;			/* K x K (dense search) */
	double	   *sdiag;			/* K: column variances (low-rank search) */
	double	   *work;
	int			low_rank;
} GridFit;

static void
GridFree(GridFit *g)
{
	free(g->rows_a);
	free(g->held);
	free(g->mu_a);
	free(g->cov_a);
	free(g->sdiag);
	free(g->work);
	memset(g, 0, sizeof(*g));
}

/* Split the rows, allocate the search's buffers and copy the held-out rows. */
static int
GridAlloc(GridFit *g, const double *history, int m, int K, const GpPriorOptions *opt)
{
	int			n_nan = 0;

	memset(g, 0, sizeof(*g));
	g->rows_a = malloc(sizeof(int) * (size_t) m);
	if (g->rows_a == NULL)
		return GP_NO_MEMORY;
	for (int i = 0; i < m; i += 2)
		g->rows_a[g->na++] = i;
	g->nb = m / 2 < GP_MAX_HELDOUT_ROWS ? m / 2 : GP_MAX_HELDOUT_ROWS;

	/*
	 * Few build rows for many arms: the empirical covariance has low rank
	 * and GpLowRankLogLik scores it without a K x K factorisation (the same
	 * numbers up to rounding).
	 */
	g->low_rank = opt->kernel == GP_KERNEL_EMPIRICAL && 2 * g->na <= K && !opt->dense_fit;
	g->held = malloc(sizeof(double) * (size_t) (g->nb > 0 ? g->nb : 1) * K);
	g->mu_a = malloc(sizeof(double) * (size_t) K);
	if (g->low_rank)
	{
		g->sdiag = malloc(sizeof(double) * (size_t) K);
		g->work = malloc(sizeof(double) * (2 * (size_t) g->na * K + 2 * (size_t) K));
	}
	else
	{
		g->cov_a = malloc(sizeof(double) * (size_t) K * K);
		g->work = malloc(sizeof(double) * (3 * (size_t) K * K + K));
	}
	if (g->held == NULL || g->mu_a == NULL || g->work == NULL ||
		(g->low_rank ? g->sdiag == NULL : g->cov_a == NULL))
	{
		GridFree(g);
		return GP_NO_MEMORY;
	}
	/* odd rows, in order; rows with NaN only up to a cap */
	{
		int			kept = 0;

		for (int i = 1; i < m && kept < g->nb; i += 2)
		{
			const double *row = history + (size_t) i * K;
			int			has_nan = 0;

			for (int k = 0; k < K && !has_nan; k++)
				has_nan = isnan(row[k]);
			if (has_nan && n_nan >= GP_MAX_NAN_HELDOUT_ROWS)
				continue;
			n_nan += has_nan;
			memcpy(g->held + (size_t) kept * K, row, sizeof(double) * K);
			kept++;
		}
		g->nb = kept;
	}
	return GP_OK;
}

/*
 * The empirical kernel's build rows, centred (scratch + cells), and their
 * covariance (scratch + 2 cells) or only its diagonal (sdiag), once for
 * every lambda.
 */
static void
GridCentre(GridFit *g, const double *history, int K, double *scratch, size_t cells)
{
	double	   *X = scratch;
	double	   *Xc = scratch + cells;

	CompleteRows(history, K, g->rows_a, g->na, g->mu_a, X);
	if (!g->low_rank)
	{
		EmpiricalCov(X, g->na, K, g->mu_a, Xc, scratch + 2 * cells);
		return;
	}
	for (int k = 0; k < K; k++)
		g->sdiag[k] = 0.0;
	for (int i = 0; i < g->na; i++)
		for (int k = 0; k < K; k++)
		{
			double		d = X[(size_t) i * K + k] - g->mu_a[k];

			Xc[(size_t) i * K + k] = d;
			g->sdiag[k] += d * d;
		}
	for (int k = 0; k < K; k++)
		g->sdiag[k] /= g->na;
}

/*
 * Search the grid of the hyperparameters opt leaves unset (<= 0) for the
 * best held-out log-likelihood; set them in opt.  ref_dist and mean_var
 * are the RBF grid's units.
 */
static int
GridSearch(GridFit *g, const double *history, int K, GpPriorOptions *opt,
		   double ref_dist, double mean_var, double *scratch, size_t cells,
		   double *best_ll)
{
	static const double lambda_grid[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 0.6};
	static const double lscale_grid[] = {0.25, 0.5, 1.0, 2.0, 4.0};
	static const double svar_grid[] = {0.5, 1.0, 2.0, 4.0};
	static const double noise_grid[] = {1e-6, 1e-5, 1e-4, 1e-3, 4e-3};
	int			empirical = opt->kernel == GP_KERNEL_EMPIRICAL;
	int			n1 = empirical ? (opt->shrinkage > 0.0 ? 1 : 7) : (opt->lengthscale > 0.0 ? 1 : 5);
	int			n2 = empirical ? 1 : (opt->signal_var > 0.0 ? 1 : 4);
	int			n3 = opt->noise_var > 0.0 ? 1 : 5;
	double		best = -INFINITY;
	GpPriorOptions found = *opt;

	if (empirical)
		GridCentre(g, history, K, scratch, cells);
	for (int i1 = 0; i1 < n1; i1++)
		for (int i2 = 0; i2 < n2; i2++)
		{
			double		lambda = 0.0,
						l = 0.0,
						s2 = 0.0;

			if (empirical)
			{
				lambda = opt->shrinkage > 0.0 ? opt->shrinkage : lambda_grid[i1];
				if (!g->low_rank)
					ShrinkCov(scratch + 2 * cells, K, lambda, g->cov_a);
			}
			else
			{
				l = opt->lengthscale > 0.0 ? opt->lengthscale : lscale_grid[i1] * ref_dist;
				s2 = opt->signal_var > 0.0 ? opt->signal_var : svar_grid[i2] * mean_var;
				BuildCov(history, K, g->rows_a, g->na, opt->kernel,
						 opt->standardize_rows, lambda, l, s2, g->mu_a,
						 g->cov_a, scratch);
			}
			for (int i3 = 0; i3 < n3; i3++)
			{
				double		noise = opt->noise_var > 0.0 ? opt->noise_var : noise_grid[i3];
				double		ll;
				int			rc;

				if (g->low_rank)
					rc = GpLowRankLogLik(g->mu_a, scratch + cells, g->sdiag,
										 g->na, K, lambda, noise, g->held,
										 g->nb, g->work, &ll);
				else
					rc = GpMeanLogLik(g->mu_a, g->cov_a, noise, K, g->held,
									  g->nb, g->work, &ll);
				if (rc < 0 || !(ll > best))
					continue;	/* unusable or not better */
				best = ll;
				found.shrinkage = lambda;
				found.lengthscale = l;
				found.signal_var = s2;
				found.noise_var = noise;
			}
		}
	if (best == -INFINITY)
		return GP_NOT_PD;
	*opt = found;
	*best_ll = best;
	return GP_OK;
}

/*
 * Units of the RBF grid from all rows: the mean pairwise column distance
 * (cheaper than a median and as good for placing a grid) and the mean
 * column variance around mu0.
 */
static int
RbfUnits(const double *history, int m, int K, const GpPriorOptions *opt,
		 const int *rows, double *mu0, double *scratch, size_t cells,
		 double *ref_dist, double *mean_var)
{
	double	   *X = scratch;
	double	   *D = malloc(sizeof(double) * (size_t) K * K);
	size_t		npair = 0;

	if (D == NULL)
		return GP_NO_MEMORY;
	*ref_dist = 0.0;
	*mean_var = 0.0;
	CompleteRows(history, K, rows, m, mu0, X);
	ColumnDistances(X, m, K, opt->standardize_rows, scratch + cells, D);
	for (int i = 0; i < K; i++)
		for (int k = i + 1; k < K; k++)
		{
			*ref_dist += sqrt(D[(size_t) i * K + k]);
			npair++;
		}
	free(D);
	if (npair > 0)
		*ref_dist /= npair;
	if (!(*ref_dist > 1e-9))
		*ref_dist = 0.1;
	for (int k = 0; k < K; k++)
	{
		double		s = 0.0;

		for (int i = 0; i < m; i++)
		{
			double		d = X[(size_t) i * K + k] - mu0[k];

			s += d * d;
		}
		*mean_var += s / m;
	}
	*mean_var /= K;
	if (!(*mean_var > 1e-9))
		*mean_var = GP_DEFAULT_VAR;
	return GP_OK;
}

/* Whether the rows are enough, and opt leaves something to search for. */
static int
NeedsSearch(int m, const GpPriorOptions *opt)
{
	return m >= GP_MIN_FIT_ROWS &&
		((opt->kernel == GP_KERNEL_EMPIRICAL && opt->shrinkage <= 0.0) ||
		 (opt->kernel == GP_KERNEL_RBF &&
		  (opt->lengthscale <= 0.0 || opt->signal_var <= 0.0)) ||
		 opt->noise_var <= 0.0);
}

/* Fixed defaults for what opt leaves unset (too few rows to search). */
static void
DefaultHyper(GpPriorOptions *opt, double ref_dist, double mean_var)
{
	if (opt->shrinkage <= 0.0)
		opt->shrinkage = GP_DEFAULT_SHRINKAGE;
	if (opt->lengthscale <= 0.0)
		opt->lengthscale = ref_dist > 0.0 ? ref_dist : 0.1;
	if (opt->signal_var <= 0.0)
		opt->signal_var = mean_var > 0.0 ? mean_var : GP_DEFAULT_VAR;
	if (opt->noise_var <= 0.0)
		opt->noise_var = GP_DEFAULT_NOISE_VAR;
}

/* Prior from fewer than two rows: constant correlation around the mean. */
static int
FewRowsPrior(const double *history, int m, int K, const GpPriorOptions *opt,
			 GpPrior *prior)
{
	if (m == 1)
	{
		double	   *x = malloc(sizeof(double) * (size_t) K);
		int			row0 = 0;

		if (x == NULL)
			return GP_NO_MEMORY;
		CompleteRows(history, K, &row0, 1, prior->mu0, x);
		free(x);
	}
	else
		for (int k = 0; k < K; k++)
			prior->mu0[k] = 0.5;
	DefaultCov(K, opt, prior->cov);
	prior->noise_var = opt->noise_var > 0.0 ? opt->noise_var : GP_DEFAULT_NOISE_VAR;
	prior->shrinkage = opt->kernel == GP_KERNEL_EMPIRICAL ? 1.0 : 0.0;
	prior->signal_var = opt->kernel == GP_KERNEL_RBF ?
		(opt->signal_var > 0.0 ? opt->signal_var : GP_DEFAULT_VAR) : 0.0;
	GpPriorFinish(prior);
	return GP_OK;
}

/* Check GpPriorFit's arguments; the options to use in *opt. */
static int
CheckFitInput(const double *history, int m, int K, const GpPriorOptions *options,
			  GpPriorOptions *opt)
{
	size_t		cells;

	if (K <= 0 || m < 0 || (m > 0 && history == NULL))
		return GP_BAD_INPUT;
	cells = (size_t) m * K;
	for (size_t i = 0; i < cells; i++)
		if (isinf(history[i]))
			return GP_BAD_INPUT;
	if (options)
		*opt = *options;
	else
		memset(opt, 0, sizeof(*opt));
	if (opt->kernel != GP_KERNEL_EMPIRICAL && opt->kernel != GP_KERNEL_RBF)
		return GP_BAD_INPUT;
	if (opt->shrinkage > 1.0)
		return GP_BAD_INPUT;
	return GP_OK;
}

/*
 * Prior from an m x K history (NaN = unknown).  See the file header for the
 * model and the fitting rule.  With fewer than GP_MIN_FIT_ROWS rows the
 * unspecified hyperparameters take fixed defaults; with no usable rows the
 * prior is a constant-correlation Gaussian around the mean of the known
 * cells (0.5 when there are none).
 */
int
GpPriorFit(const double *history, int m, int K, const GpPriorOptions *options,
		   GpPrior *prior)
{
	GpPriorOptions opt;
	size_t		cells = (size_t) (m > 0 ? m : 0) * (K > 0 ? K : 0);
	double	   *scratch = NULL;
	int		   *rows = NULL;
	double		ref_dist = 0.0,
				mean_var = 0.0;
	int			rc;

	if (prior == NULL)
		return GP_BAD_INPUT;
	memset(prior, 0, sizeof(*prior));
	if ((rc = CheckFitInput(history, m, K, options, &opt)) != GP_OK)
		return rc;
	if ((rc = GpPriorAlloc(prior, K)) < 0)
		return rc;
	prior->kernel = opt.kernel;
	if (m < 2)
	{
		/* nothing to estimate a covariance from */
		if ((rc = FewRowsPrior(history, m, K, &opt, prior)) != GP_OK)
			GpPriorFree(prior);
		return rc;
	}

	rows = malloc(sizeof(int) * (size_t) m);
	scratch = malloc(sizeof(double) * (2 * cells + (size_t) K * K));
	rc = rows && scratch ? GP_OK : GP_NO_MEMORY;
	for (int i = 0; rc == GP_OK && i < m; i++)
		rows[i] = i;
	if (rc == GP_OK && opt.kernel == GP_KERNEL_RBF)
		rc = RbfUnits(history, m, K, &opt, rows, prior->mu0, scratch, cells,
					  &ref_dist, &mean_var);
	if (rc == GP_OK && NeedsSearch(m, &opt))
	{
		GridFit		g;

		if ((rc = GridAlloc(&g, history, m, K, &opt)) == GP_OK)
		{
			rc = GridSearch(&g, history, K, &opt, ref_dist, mean_var,
							scratch, cells, &prior->heldout_loglik);
			GridFree(&g);
		}
	}
	else if (rc == GP_OK)
		DefaultHyper(&opt, ref_dist, mean_var);

	if (rc == GP_OK)
	{
		BuildCov(history, K, rows, m, opt.kernel, opt.standardize_rows,
				 opt.shrinkage, opt.lengthscale, opt.signal_var, prior->mu0,
				 prior->cov, scratch);
		prior->noise_var = opt.noise_var;
		prior->shrinkage = opt.kernel == GP_KERNEL_EMPIRICAL ? opt.shrinkage : 0.0;
		prior->lengthscale = opt.kernel == GP_KERNEL_RBF ? opt.lengthscale : 0.0;
		prior->signal_var = opt.kernel == GP_KERNEL_RBF ? opt.signal_var : 0.0;
		GpPriorFinish(prior);
	}
	else
		GpPriorFree(prior);
	free(scratch);
	free(rows);
	return rc;
}
