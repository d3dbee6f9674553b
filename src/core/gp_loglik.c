/*-------------------------------------------------------------------------
 *
 * gp_loglik.c
 *	  Held-out log likelihood of history rows under a candidate prior: the
 *	  number GpPriorFit's hyperparameter grid ranks (gp_fit.c).  Two ways
 *	  to the same number: the dense one (GpMeanLogLik, a K x K Cholesky)
 *	  and, for the shrunk empirical covariance with fewer build rows than
 *	  arms, the low-rank one (GpLowRankLogLik, Woodbury and the matrix
 *	  determinant lemma, O(n^2 K) instead of O(K^3)).
 *
 * A file of its own because it is the costly part of a refit and the one
 * with the most linear algebra; the unit tests compare the two ways
 * (GpPriorOptions.dense_fit).
 *
 * IDENTIFICATION
 *	  src/core/gp_loglik.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gp.h"
#include "gp_internal.h"

/*
 * Mean log likelihood of n rows under N(mu, cov + noise I).  Rows without
 * NaN share one factorisation; a row with NaN is scored on its known cells
 * with its own factorisation.  'work' holds 3 K*K + K doubles.
 */
int
GpMeanLogLik(const double *mu, const double *cov, double noise_var, int K,
			 const double *rows, int n, double *work, double *mean_out)
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
			continue;
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
				status = GpWorseStatus(status, rc);
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
			status = GpWorseStatus(status, rc);
			for (k = 0; k < c; k++)
			{
				e[k] = x[idx[k]] - mu[idx[k]];
				ld += 2.0 * log(E[(size_t) k * c + k]);
			}
			cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit,
						c, E, c, e, 1);
			ll = -0.5 * (cblas_ddot(c, e, 1, e, 1) + ld + c * log(2.0 * M_PI));
		}
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

/* Scratch of GpLowRankLogLik beyond its caller's work array. */
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

/*
 * The same mean log likelihood for the shrunk empirical covariance when it
 * has low rank (fewer build rows n than arms K), without forming it:
 *
 *	 C = (1 - lambda) Xc' Xc / n + diag(delta),
 *	 delta_k = S_kk - (1 - lambda) s_k + noise_var,
 *
 * where s_k = (Xc' Xc / n)_kk and S_kk its floored value (EmpiricalCov in
 * gp_fit.c), so C equals ShrinkCov's matrix plus the noise exactly.  By
 * the matrix determinant lemma and Woodbury, with W = Xc diag(delta)^-1/2
 * and A = I_n + c W W' (c = (1 - lambda) / n) = L L':
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
int
GpLowRankLogLik(const double *mu, const double *Xc, const double *sdiag, int n,
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
		status = rc < 0 ? rc : GpWorseStatus(status, rc);
		total += rc < 0 ? 0.0 : ll;
	}
	free(s.A);
	if (status < 0)
		return status;
	*mean_out = nrows > 0 ? total / nrows : 0.0;
	return status;
}
