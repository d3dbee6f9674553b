/*-------------------------------------------------------------------------
 *
 * gp_posterior.c
 *	  The GP posterior of one task given its observations: closed form
 *	  (GpPosterior, a full refit) and incremental (GpState, one
 *	  observation at a time), and the joint covariance of a few arms
 *	  (GpStateCov) for the batch task scores.
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
 * per update.  This is the decision path's hottest code.
 *
 * IDENTIFICATION
 *	  src/core/gp_posterior.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gp.h"
#include "gp_internal.h"

/* arms per block in GpStateAdd (a stack buffer of this many doubles) */
#define GP_BLOCK 64

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
		double		bumped = *d2 + GpJitterScales[attempt] * p->mean_diag;

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

/* The posterior of a point outside the arms; see gp.h. */
int
GpStatePredict(const GpState *state, const double *krow, double kxx,
			   double mu0, double *mu, double *var)
{
	double	   *l;
	double		ll,
				lz;

	if (state == NULL || state->prior == NULL || krow == NULL || mu == NULL ||
		var == NULL || !isfinite(kxx) || !isfinite(mu0))
		return GP_BAD_INPUT;
	for (int i = 0; i < state->t; i++)
		if (!isfinite(krow[state->arms[i]]))
			return GP_BAD_INPUT;
	l = malloc(sizeof(double) * ((size_t) state->t + 1));
	if (l == NULL)
		return GP_NO_MEMORY;
	ForwardRow(state, krow, l, &ll, &lz);
	free(l);
	*mu = mu0 + lz;
	*var = kxx - ll > 0.0 ? kxx - ll : 0.0;
	return GP_OK;
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

/*
 * Append one observation in O(t^2 + K t); see the file header.  If the new
 * pivot d^2 is not safely positive (the arm is almost a linear combination
 * of observed ones and the noise is tiny), jitter of 1e-8, 1e-6, 1e-4
 * times the mean diagonal is added to that pivot only, and GP_JITTER is
 * returned.  On GP_NOT_PD the state is left unchanged.
 */
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
	state->status = GpWorseStatus(state->status, status);
	return status;
}
