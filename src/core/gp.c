/*-------------------------------------------------------------------------
 *
 * gp.c
 *	  Gaussian-process math: prior from a history matrix, closed-form and
 *	  incremental posteriors, Cholesky with jitter (docs/scheduler.md 1).
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
 * sigma_n = 0.01).
 *
 * Posterior (the prior mean is kept, docs/scheduler.md 1):
 *	 G = Sigma[A,A] + sigma_n^2 I = L L',  z = L^{-1}(y - mu0[A]),
 *	 V = L^{-1} Sigma[A,:],  mu = mu0 + V' z,  var = diag(Sigma) - colsum(V.^2)
 * GpState appends one observation of arm a in O(t^2 + K t) by extending L
 * by one row:
 *	 l = L^{-1} Sigma[A,a],  d = sqrt(G_aa - l'l),  z_new = (y - mu0(a) - l'z)/d
 *	 v = (Sigma[a,:] - Sigma[A,:]' L^{-T} l) / d      (the new row of V)
 *	 mu += z_new v,  var -= v.^2
 * V itself is never stored: Sigma[A,:]' (L^{-T} l) reads t rows of the
 * prior covariance, which all tenants share (and which stays in cache),
 * instead of a t x K matrix per tenant.  With 1,000 tenants x 200 arms x
 * 50 runs that is the difference between 80 KB and 10 KB of cold memory
 * per update.
 *
 * IDENTIFICATION
 *	  src/core/gp.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "gp.h"

/* history rows needed before hyperparameters are fitted rather than set */
#define GP_MIN_FIT_ROWS 8
/* held-out rows scored per grid point (keeps the grid search bounded) */
#define GP_MAX_HELDOUT_ROWS 200
/* held-out rows with unknown cells scored per grid point (each needs its own
 * factorisation, so fewer of them are used) */
#define GP_MAX_NAN_HELDOUT_ROWS 24
/* arms per block in GpStateAdd (a stack buffer of this many doubles) */
#define GP_BLOCK 64

/* defaults used when the history is too small to fit anything */
#define GP_DEFAULT_SHRINKAGE 0.3
#define GP_DEFAULT_NOISE_VAR 1e-4
#define GP_DEFAULT_VAR 0.04
#define GP_DEFAULT_RHO 0.5

static const double jitter_scales[] = {1e-8, 1e-6, 1e-4};

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

/* Combine two statuses: any error wins, then jitter, then ok. */
static int
WorseStatus(int a, int b)
{
	if (a < 0)
		return a;
	if (b < 0)
		return b;
	return (a > b) ? a : b;
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
		double		jit = jitter_scales[attempt] * mean_diag;

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
static int
PriorAlloc(GpPrior *prior, int K)
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
static void
PriorFinish(GpPrior *prior)
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
	rc = PriorAlloc(prior, K);
	if (rc < 0)
		return rc;
	memcpy(prior->mu0, mu0, sizeof(double) * K);
	memcpy(prior->cov, cov, sizeof(double) * (size_t) K * K);
	prior->noise_var = noise_var;
	prior->kernel = GP_KERNEL_EMPIRICAL;
	prior->shrinkage = 0.0;
	PriorFinish(prior);
	return GP_OK;
}

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

/*
 * Mean log likelihood of n rows under N(mu, cov + noise I).  Rows without
 * NaN share one factorisation; a row with NaN is scored on its known cells
 * with its own factorisation.  'work' holds 3 K*K + K doubles.
 */
static int
MeanLogLik(const double *mu, const double *cov, double noise_var, int K,
		   const double *rows, int n, double *work, double *per_row,
		   double *mean_out)
{
	double	   *G = work;
	double	   *W = work + (size_t) K * K;
	double	   *E = work + 2 * (size_t) K * K;
	double	   *e = work + 3 * (size_t) K * K;
	int		   *idx = NULL;
	double		total = 0.0;
	double		logdet = 0.0;
	int			have_full = 0;
	int			status = GP_OK;
	int			r,
				k,
				j;

	for (r = 0; r < n; r++)
	{
		const double *x = rows + (size_t) r * K;
		int			known = 0;
		double		ll;

		for (k = 0; k < K; k++)
			if (!isnan(x[k]))
				known++;
		if (known == 0)
		{
			if (per_row)
				per_row[r] = 0.0;
			continue;
		}
		if (known == K)
		{
			if (!have_full)
			{
				int			rc;

				memcpy(G, cov, sizeof(double) * (size_t) K * K);
				for (k = 0; k < K; k++)
					G[(size_t) k * K + k] += noise_var;
				rc = GpCholesky(G, K, W, NULL);
				if (rc < 0)
				{
					free(idx);
					return rc;
				}
				status = WorseStatus(status, rc);
				logdet = 0.0;
				for (k = 0; k < K; k++)
					logdet += 2.0 * log(G[(size_t) k * K + k]);
				have_full = 1;
			}
			for (k = 0; k < K; k++)
				e[k] = x[k] - mu[k];
			cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit,
						K, G, K, e, 1);
			ll = -0.5 * (cblas_ddot(K, e, 1, e, 1) + logdet +
						 K * log(2.0 * M_PI));
		}
		else
		{
			double		ld = 0.0;
			int			c = 0,
						rc;

			if (idx == NULL)
			{
				idx = malloc(sizeof(int) * (size_t) K);
				if (idx == NULL)
					return GP_NO_MEMORY;
			}
			for (k = 0; k < K; k++)
				if (!isnan(x[k]))
					idx[c++] = k;
			for (k = 0; k < c; k++)
				for (j = 0; j < c; j++)
					E[(size_t) k * c + j] = cov[(size_t) idx[k] * K + idx[j]] +
						(k == j ? noise_var : 0.0);
			rc = GpCholesky(E, c, W, NULL);
			if (rc < 0)
			{
				free(idx);
				return rc;
			}
			status = WorseStatus(status, rc);
			for (k = 0; k < c; k++)
			{
				e[k] = x[idx[k]] - mu[idx[k]];
				ld += 2.0 * log(E[(size_t) k * c + k]);
			}
			cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit,
						c, E, c, e, 1);
			ll = -0.5 * (cblas_ddot(c, e, 1, e, 1) + ld + c * log(2.0 * M_PI));
		}
		if (per_row)
			per_row[r] = ll;
		total += ll;
	}
	free(idx);
	*mean_out = n > 0 ? total / n : 0.0;
	return status;
}

/* Copy the lower triangle of a row-major n x n matrix up and add I. */
static void
MirrorPlusIdentity(double *a, int n)
{
	int			i,
				j;

	for (i = 0; i < n; i++)
	{
		a[(size_t) i * n + i] += 1.0;
		for (j = i + 1; j < n; j++)
			a[(size_t) i * n + j] = a[(size_t) j * n + i];
	}
}

/*
 * The same mean log likelihood for the shrunk empirical covariance when it
 * has low rank (fewer build rows n than arms K), without forming it:
 *
 *	 C = (1 - lambda) Xc' Xc / n + diag(delta),
 *	 delta_k = S_kk - (1 - lambda) s_k + noise_var,
 *
 * where s_k = (Xc' Xc / n)_kk and S_kk its floored value (EmpiricalCov),
 * so C equals ShrinkCov's matrix plus the noise exactly.  By the matrix
 * determinant lemma and Woodbury, with W = Xc diag(delta)^-1/2 and
 * A = I_n + c W W' (c = (1 - lambda) / n) = L L':
 *
 *	 log det C = sum log delta + 2 sum log L_ii
 *	 e' C^-1 e = |z|^2 - |L^-1 sqrt(c) W z|^2,  z = diag(delta)^-1/2 e
 *
 * O(n^2 K) per grid point instead of the O(K^3) Cholesky of C: with
 * 3,000 arms and 200 build rows the hyperparameter grid drops from minutes
 * to about a second.  A row with unknown cells restricts W to its known
 * columns (O(n^2 c) for that row).  'sdiag' holds s_k; 'work' holds
 * 2 n K + 2 K doubles.
 */
/* Scratch of LowRankLogLik beyond its caller's work array. */
typedef struct LowRankScratch
{
	double	   *A;				/* n x n: I + c W W' and its factor */
	double	   *cwork;			/* n x n: GpCholesky's */
	double	   *v;				/* n */
	double	   *qf;				/* per full row: |z|^2 */
	double	   *Zf;				/* full rows' z, nrows x K */
	double	   *Vf;				/* their L^-1 sqrt(c) W z, nrows x n */
} LowRankScratch;

/*
 * The log likelihood summed over the rows without unknown cells: one
 * factorisation of I + c W W' and one matrix product for all of them.
 */
static int
FullRowsLogLik(const double *mu, const double *W, const double *isd, int n, int K,
			   double c, double logdet_delta, const double *rows, int nrows,
			   LowRankScratch *s, double *total)
{
	int			nf = 0;
	int			rc;
	double		ld = logdet_delta;

	for (int r = 0; r < nrows; r++)
	{
		const double *x = rows + (size_t) r * K;
		double	   *zr = s->Zf + (size_t) nf * K;
		double		q = 0.0;
		int			k;

		for (k = 0; k < K && !isnan(x[k]); k++)
		{
			zr[k] = (x[k] - mu[k]) * isd[k];
			q += zr[k] * zr[k];
		}
		if (k == K)
			s->qf[nf++] = q;
	}
	if (nf == 0)
		return GP_OK;
	cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, K, c, W, K, 0.0, s->A, n);
	MirrorPlusIdentity(s->A, n);
	if ((rc = GpCholesky(s->A, n, s->cwork, NULL)) < 0)
		return rc;
	for (int j = 0; j < n; j++)
		ld += 2.0 * log(s->A[(size_t) j * n + j]);
	/* V = sqrt(c) Z W' L^-T: row j is L^-1 sqrt(c) W z_j */
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nf, n, K,
				sqrt(c), s->Zf, K, W, K, 0.0, s->Vf, n);
	cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
				CblasNonUnit, nf, n, 1.0, s->A, n, s->Vf, n);
	for (int r = 0; r < nf; r++)
	{
		const double *vr = s->Vf + (size_t) r * n;

		*total += -0.5 * (s->qf[r] - cblas_ddot(n, vr, 1, vr, 1) + ld + K * log(2.0 * M_PI));
	}
	return rc;
}

/*
 * The log likelihood of one row with cnt known cells (0 < cnt < K): W
 * restricted to its known columns (Wr: n x cnt, z: cnt).
 */
static int
PartialRowLogLik(const double *mu, const double *W, const double *isd, int n, int K,
				 double c, const double *x, int cnt, double *Wr, double *z,
				 LowRankScratch *s, double *ll)
{
	double		q = 0.0,
				ld = 0.0;
	int			col,
				rc;

	for (int j = 0; j < n; j++)
	{
		col = 0;
		for (int k = 0; k < K; k++)
			if (!isnan(x[k]))
				Wr[(size_t) j * cnt + col++] = W[(size_t) j * K + k];
	}
	cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, cnt, c, Wr, cnt, 0.0, s->A, n);
	MirrorPlusIdentity(s->A, n);
	if ((rc = GpCholesky(s->A, n, s->cwork, NULL)) < 0)
		return rc;
	col = 0;
	for (int k = 0; k < K; k++)
		if (!isnan(x[k]))
		{
			double		zk = (x[k] - mu[k]) * isd[k];

			z[col++] = zk;
			q += zk * zk;
			ld -= 2.0 * log(isd[k]);
		}
	for (int j = 0; j < n; j++)
		ld += 2.0 * log(s->A[(size_t) j * n + j]);
	cblas_dgemv(CblasRowMajor, CblasNoTrans, n, cnt, sqrt(c), Wr, cnt, z, 1, 0.0, s->v, 1);
	cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, s->A, n, s->v, 1);
	*ll = -0.5 * (q - cblas_ddot(n, s->v, 1, s->v, 1) + ld + cnt * log(2.0 * M_PI));
	return rc;
}

static int
LowRankLogLik(const double *mu, const double *Xc, const double *sdiag, int n,
			  int K, double lambda, double noise_var, const double *rows,
			  int nrows, double *work, double *mean_out)
{
	double	   *W = work;
	double	   *Wr = work + (size_t) n * K;
	double	   *z = work + 2 * (size_t) n * K;
	double	   *isd = z + K;	/* diag(delta)^-1/2 */
	double		c = (1.0 - lambda) / n;
	double		logdet_delta = 0.0,
				total = 0.0;
	LowRankScratch s;
	int			status;

	s.A = malloc(sizeof(double) * (2 * (size_t) n * n + n + nrows +
								   (size_t) nrows * K + (size_t) nrows * n));
	if (s.A == NULL)
		return GP_NO_MEMORY;
	s.cwork = s.A + (size_t) n * n;
	s.v = s.cwork + (size_t) n * n;
	s.qf = s.v + n;
	s.Zf = s.qf + nrows;
	s.Vf = s.Zf + (size_t) nrows * K;

	/* W = Xc diag(delta)^-1/2, and the log det of diag(delta) */
	for (int k = 0; k < K; k++)
	{
		double		sk = sdiag[k] < 1e-8 ? 1e-8 : sdiag[k];
		double		delta = sk - (1.0 - lambda) * sdiag[k] + noise_var;

		isd[k] = 1.0 / sqrt(delta);
		logdet_delta += log(delta);
	}
	for (int r = 0; r < n; r++)
		for (int k = 0; k < K; k++)
			W[(size_t) r * K + k] = Xc[(size_t) r * K + k] * isd[k];

	status = FullRowsLogLik(mu, W, isd, n, K, c, logdet_delta, rows, nrows, &s, &total);
	for (int r = 0; r < nrows && status >= 0; r++)
	{
		const double *x = rows + (size_t) r * K;
		int			cnt = 0;
		double		ll;
		int			rc;

		for (int k = 0; k < K; k++)
			cnt += !isnan(x[k]);
		if (cnt == 0 || cnt == K)
			continue;
		rc = PartialRowLogLik(mu, W, isd, n, K, c, x, cnt, Wr, z, &s, &ll);
		status = rc < 0 ? rc : WorseStatus(status, rc);
		total += rc < 0 ? 0.0 : ll;
	}
	free(s.A);
	if (status < 0)
		return status;
	*mean_out = nrows > 0 ? total / nrows : 0.0;
	return status;
}

/* Log likelihood of each of n rows (NaN = unknown) under the prior. */
int
GpPriorLogLik(const GpPrior *prior, const double *rows, int n,
			  double *loglik_per_row)
{
	double	   *work;
	double		mean;
	int			K,
				rc;

	if (prior == NULL || prior->K <= 0 || rows == NULL || n <= 0 ||
		loglik_per_row == NULL)
		return GP_BAD_INPUT;
	K = prior->K;
	work = malloc(sizeof(double) * (3 * (size_t) K * K + K));
	if (work == NULL)
		return GP_NO_MEMORY;
	rc = MeanLogLik(prior->mu0, prior->cov, prior->noise_var, K, rows, n,
					work, loglik_per_row, &mean);
	free(work);
	return rc;
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
	 * and LowRankLogLik scores it without a K x K factorisation (the same
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
					rc = LowRankLogLik(g->mu_a, scratch + cells, g->sdiag, g->na,
									   K, lambda, noise, g->held, g->nb,
									   g->work, &ll);
				else
					rc = MeanLogLik(g->mu_a, g->cov_a, noise, K, g->held, g->nb,
									g->work, NULL, &ll);
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
	PriorFinish(prior);
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
	if ((rc = PriorAlloc(prior, K)) < 0)
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
		PriorFinish(prior);
	}
	else
		GpPriorFree(prior);
	free(scratch);
	free(rows);
	return rc;
}

/* Validate t observations against a prior. */
static int
CheckObs(const GpPrior *prior, int t, const int *arms, const double *y)
{
	int			i;

	if (t < 0 || (t > 0 && (arms == NULL || y == NULL)))
		return GP_BAD_INPUT;
	for (i = 0; i < t; i++)
		if (arms[i] < 0 || arms[i] >= prior->K || !isfinite(y[i]))
			return GP_BAD_INPUT;
	return GP_OK;
}

/*
 * Closed-form posterior over all K arms from t observations (full refit,
 * O(t^3 + t^2 K)).  var is the latent variance (no noise), clamped at 0.
 */
int
GpPosterior(const GpPrior *prior, int t, const int *arms, const double *y,
			double *mu, double *var)
{
	double	   *G = NULL,
			   *W = NULL,
			   *V = NULL,
			   *z = NULL;
	int			K,
				status,
				i,
				j,
				k;

	if (prior == NULL || prior->K <= 0 || prior->mu0 == NULL ||
		prior->cov == NULL || mu == NULL || var == NULL)
		return GP_BAD_INPUT;
	K = prior->K;
	status = CheckObs(prior, t, arms, y);
	if (status < 0)
		return status;

	memcpy(mu, prior->mu0, sizeof(double) * K);
	for (k = 0; k < K; k++)
		var[k] = prior->cov[(size_t) k * K + k];
	if (t == 0)
		return GP_OK;

	G = malloc(sizeof(double) * (size_t) t * t);
	W = malloc(sizeof(double) * (size_t) t * t);
	V = malloc(sizeof(double) * (size_t) t * K);
	z = malloc(sizeof(double) * (size_t) t);
	if (G == NULL || W == NULL || V == NULL || z == NULL)
	{
		status = GP_NO_MEMORY;
		goto done;
	}
	for (i = 0; i < t; i++)
	{
		for (j = 0; j < t; j++)
			G[(size_t) i * t + j] = prior->cov[(size_t) arms[i] * K + arms[j]];
		G[(size_t) i * t + i] += prior->noise_var;
		z[i] = y[i] - prior->mu0[arms[i]];
		memcpy(V + (size_t) i * K, prior->cov + (size_t) arms[i] * K,
			   sizeof(double) * K);
	}
	status = GpCholesky(G, t, W, NULL);
	if (status < 0)
		goto done;

	cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit,
				t, G, t, z, 1);
	cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans,
				CblasNonUnit, t, K, 1.0, G, t, V, K);
	cblas_dgemv(CblasRowMajor, CblasTrans, t, K, 1.0, V, K, z, 1, 1.0, mu, 1);
	for (i = 0; i < t; i++)
	{
		const double *row = V + (size_t) i * K;

		for (k = 0; k < K; k++)
			var[k] -= row[k] * row[k];
	}
	for (k = 0; k < K; k++)
		if (!(var[k] > 0.0))
			var[k] = 0.0;

done:
	free(G);
	free(W);
	free(V);
	free(z);
	return status;
}

/* Free a state's arrays. */
void
GpStateFree(GpState *state)
{
	if (state == NULL)
		return;
	free(state->arms);
	free(state->y);
	free(state->L);
	free(state->z);
	free(state->work);
	free(state->mu);
	free(state->var);
	memset(state, 0, sizeof(*state));
}

/* Forget all observations: back to the prior. */
void
GpStateReset(GpState *state)
{
	int			k,
				K;

	if (state == NULL || state->prior == NULL)
		return;
	K = state->K;
	state->t = 0;
	state->status = GP_OK;
	memcpy(state->mu, state->prior->mu0, sizeof(double) * K);
	for (k = 0; k < K; k++)
		state->var[k] = state->prior->cov[(size_t) k * K + k];
}

/* Grow the row capacity of a state to at least 'need'. */
static int
StateGrow(GpState *state, int need)
{
	int			cap = state->cap > 0 ? state->cap : 8;
	int		   *arms;
	double	   *y,
			   *L,
			   *z,
			   *work;

	while (cap < need)
		cap *= 2;

	arms = realloc(state->arms, sizeof(int) * (size_t) cap);
	if (arms == NULL)
		return GP_NO_MEMORY;
	state->arms = arms;
	y = realloc(state->y, sizeof(double) * (size_t) cap);
	if (y == NULL)
		return GP_NO_MEMORY;
	state->y = y;
	z = realloc(state->z, sizeof(double) * (size_t) cap);
	if (z == NULL)
		return GP_NO_MEMORY;
	state->z = z;
	work = realloc(state->work, sizeof(double) * (size_t) cap);
	if (work == NULL)
		return GP_NO_MEMORY;
	state->work = work;
	/* packed rows: row i starts at i (i + 1) / 2, so growth keeps the prefix */
	L = realloc(state->L, sizeof(double) * ((size_t) cap * (cap + 1) / 2));
	if (L == NULL)
		return GP_NO_MEMORY;
	state->L = L;
	state->cap = cap;
	return GP_OK;
}

/* Start a state at the prior; cap_hint rows are allocated up front. */
int
GpStateInit(GpState *state, const GpPrior *prior, int cap_hint)
{
	int			rc;

	if (state == NULL)
		return GP_BAD_INPUT;
	memset(state, 0, sizeof(*state));
	if (prior == NULL || prior->K <= 0 || prior->mu0 == NULL ||
		prior->cov == NULL)
		return GP_BAD_INPUT;
	state->prior = prior;
	state->K = prior->K;
	state->mu = malloc(sizeof(double) * (size_t) prior->K);
	state->var = malloc(sizeof(double) * (size_t) prior->K);
	if (state->mu == NULL || state->var == NULL)
	{
		GpStateFree(state);
		return GP_NO_MEMORY;
	}
	rc = StateGrow(state, cap_hint > 0 ? cap_hint : 8);
	if (rc < 0)
	{
		GpStateFree(state);
		return rc;
	}
	GpStateReset(state);
	return GP_OK;
}

/*
 * Append one observation in O(t^2 + K t); see the file header.  If the new
 * pivot d^2 is not safely positive (the arm is almost a linear combination
 * of observed ones and the noise is tiny), jitter of 1e-8, 1e-6, 1e-4
 * times the mean diagonal is added to that pivot only, and GP_JITTER is
 * returned.  On GP_NOT_PD the state is left unchanged.
 */
/*
 * l = L^{-1} Sigma[A, a] by forward substitution on the packed rows (small
 * t makes a plain loop faster than a BLAS call); *ll = l'l, *lz = l'z.
 */
static void
ForwardRow(const GpState *state, const double *krow, double *l, double *ll, double *lz)
{
	const double *L = state->L;
	const int  *arms = state->arms;

	*ll = 0.0;
	*lz = 0.0;
	for (int i = 0; i < state->t; i++)
	{
		const double *Li = L + (size_t) i * (i + 1) / 2;
		double		acc0 = krow[arms[i]],
					acc1 = 0.0;
		int			j;

		/* two partial sums halve the dependency chain */
		for (j = 0; j + 1 < i; j += 2)
		{
			acc0 -= Li[j] * l[j];
			acc1 -= Li[j + 1] * l[j + 1];
		}
		if (j < i)
			acc0 -= Li[j] * l[j];
		l[i] = (acc0 + acc1) / Li[i];
		*ll += l[i] * l[i];
		*lz += l[i] * state->z[i];
	}
}

/*
 * The new pivot d^2 = g - ll, with jitter when it is not safely positive;
 * GP_OK, GP_JITTER or GP_NOT_PD.
 */
static int
NewPivot(const GpPrior *p, double g, double ll, double *d2)
{
	*d2 = g - ll;
	if (*d2 > 1e-12 * g)
		return GP_OK;
	for (int attempt = 0; attempt < 3; attempt++)
	{
		double		bumped = *d2 + jitter_scales[attempt] * p->mean_diag;

		if (bumped > 1e-12 * g)
		{
			*d2 = bumped;
			return GP_JITTER;
		}
	}
	return GP_NOT_PD;
}

/* u = L^{-T} l by column-oriented back substitution (row access). */
static void
BackSolve(const double *L, int t, const double *l, double *u)
{
	memcpy(u, l, sizeof(double) * t);
	for (int j = t - 1; j >= 0; j--)
	{
		const double *restrict Lj = L + (size_t) j * (j + 1) / 2;
		double	   *restrict uu = u;
		double		uj = u[j] / Lj[j];

		u[j] = uj;
		for (int i = 0; i < j; i++)
			uu[i] -= Lj[i] * uj;
	}
}

/* v[0..GP_BLOCK) -= sum_j u[j] Sigma[arms[j], k0..]: four rows per sweep. */
static void
SubtractFullBlock(const double *cov, int K, int k0, const int *arms, const double *u,
				  int t, double *restrict v)
{
	int			j;

	/* a quarter of the loads and stores of v */
	for (j = 0; j + 3 < t; j += 4)
	{
		const double *restrict r0 = cov + (size_t) arms[j] * K + k0;
		const double *restrict r1 = cov + (size_t) arms[j + 1] * K + k0;
		const double *restrict r2 = cov + (size_t) arms[j + 2] * K + k0;
		const double *restrict r3 = cov + (size_t) arms[j + 3] * K + k0;
		const double u0 = u[j],
					u1 = u[j + 1],
					u2 = u[j + 2],
					u3 = u[j + 3];

		for (int k = 0; k < GP_BLOCK; k++)
			v[k] -= (u0 * r0[k] + u1 * r1[k]) + (u2 * r2[k] + u3 * r3[k]);
	}
	for (; j < t; j++)
	{
		const double *restrict r0 = cov + (size_t) arms[j] * K + k0;
		const double u0 = u[j];

		for (int k = 0; k < GP_BLOCK; k++)
			v[k] -= u0 * r0[k];
	}
}

/*
 * v = (Sigma[a,:] - Sigma[A,:]' u) / d, then mu += zn v and var -= v^2, in
 * blocks of GP_BLOCK arms so v lives on the stack and the fixed-length
 * inner loops vectorise.
 */
static void
UpdateMeanVar(GpState *state, const double *krow, const double *u, double d, double zn)
{
	const double *cov = state->prior->cov;
	const int	K = state->K;
	const int	t = state->t;
	const double inv_d = 1.0 / d;
	double	   *restrict mu = state->mu;
	double	   *restrict var = state->var;

	for (int k0 = 0; k0 < K; k0 += GP_BLOCK)
	{
		double		v[GP_BLOCK];
		int			nb = K - k0 < GP_BLOCK ? K - k0 : GP_BLOCK;

		memcpy(v, krow + k0, sizeof(double) * nb);
		if (nb == GP_BLOCK)
			SubtractFullBlock(cov, K, k0, state->arms, u, t, v);
		else
			for (int j = 0; j < t; j++)
			{
				const double *row = cov + (size_t) state->arms[j] * K + k0;

				for (int k = 0; k < nb; k++)
					v[k] -= u[j] * row[k];
			}
		for (int k = 0; k < nb; k++)
		{
			double		vk = v[k] * inv_d;
			double		nv = var[k0 + k] - vk * vk;

			mu[k0 + k] += zn * vk;
			var[k0 + k] = nv > 0.0 ? nv : 0.0;
		}
	}
}

/* Joint posterior covariance of m arms; see gp.h. */
int
GpStateCov(const GpState *state, int m, const int *arms, double *cov)
{
	const GpPrior *p;
	double	   *l;
	double		ll,
				lz;
	int			t;

	if (state == NULL || state->prior == NULL || m <= 0 || arms == NULL ||
		cov == NULL)
		return GP_BAD_INPUT;
	p = state->prior;
	t = state->t;
	for (int a = 0; a < m; a++)
		if (arms[a] < 0 || arms[a] >= state->K)
			return GP_BAD_INPUT;
	l = malloc(sizeof(double) * ((size_t) m * t + 1));
	if (l == NULL)
		return GP_NO_MEMORY;
	/* row a of l: L^-1 K[A, arms[a]] */
	for (int a = 0; a < m; a++)
		ForwardRow(state, p->cov + (size_t) arms[a] * state->K,
				   l + (size_t) a * t, &ll, &lz);
	for (int a = 0; a < m; a++)
		for (int b = 0; b <= a; b++)
		{
			double		c = p->cov[(size_t) arms[a] * state->K + arms[b]];

			for (int i = 0; i < t; i++)
				c -= l[(size_t) a * t + i] * l[(size_t) b * t + i];
			if (a == b && c < 0.0)
				c = 0.0;
			cov[a * m + b] = cov[b * m + a] = c;
		}
	free(l);
	return GP_OK;
}

int
GpStateAdd(GpState *state, int arm, double y)
{
	const GpPrior *p;
	const double *krow;
	double	   *l;
	double		d2,
				d,
				zn,
				lz,
				ll;
	int			t,
				rc,
				status;

	if (state == NULL || state->prior == NULL || state->mu == NULL)
		return GP_BAD_INPUT;
	p = state->prior;
	if (arm < 0 || arm >= state->K || !isfinite(y))
		return GP_BAD_INPUT;
	if (state->t + 1 > state->cap && (rc = StateGrow(state, state->t + 1)) < 0)
		return rc;
	t = state->t;
	krow = p->cov + (size_t) arm * state->K;
	l = state->L + (size_t) t * (t + 1) / 2;	/* the new packed row */

	ForwardRow(state, krow, l, &ll, &lz);
	status = NewPivot(p, krow[arm] + p->noise_var, ll, &d2);
	if (status == GP_NOT_PD)
		return GP_NOT_PD;
	d = sqrt(d2);
	zn = (y - p->mu0[arm] - lz) / d;
	BackSolve(state->L, t, l, state->work);
	UpdateMeanVar(state, krow, state->work, d, zn);

	l[t] = d;
	state->z[t] = zn;
	state->arms[t] = arm;
	state->y[t] = y;
	state->t = t + 1;
	state->status = WorseStatus(state->status, status);
	return status;
}
