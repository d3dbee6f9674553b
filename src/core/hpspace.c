/*-------------------------------------------------------------------------
 *
 * hpspace.c
 *	  Hyperparameter spaces: scaling, seeded proposals around a
 *	  configuration, the RBF kernel in the scaled space and the extension
 *	  of a prior to generated configurations (hpspace.h;
 *	  docs/scheduler.md 7.9).
 *
 * IDENTIFICATION
 *	  src/core/hpspace.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp_internal.h"
#include "hpspace.h"
#include "policy.h"

int
HpTypeOf(const char *name)
{
	static const char *const names[] = {"int", "log-int", "float", "log-float", "categorical"};

	if (name == NULL)
		return -1;
	for (int i = 0; i < 5; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

static int
IsLog(const HpDim *dim)
{
	return dim->type == HP_LOG_INT || dim->type == HP_LOG_FLOAT;
}

static int
IsInt(const HpDim *dim)
{
	return dim->type == HP_INT || dim->type == HP_LOG_INT ||
		dim->type == HP_CATEGORICAL;
}

int
HpDimCheck(const HpDim *dim)
{
	if (dim == NULL || dim->type < HP_INT || dim->type > HP_CATEGORICAL)
		return -1;
	if (!isfinite(dim->lo) || !isfinite(dim->hi) || !(dim->lo < dim->hi))
		return -1;
	if (IsLog(dim) && !(dim->lo > 0))
		return -1;
	if (dim->type == HP_CATEGORICAL &&
		(dim->lo != 0 || dim->hi != floor(dim->hi) || dim->hi > HP_MAX_CATEGORICAL_HI))
		return -1;
	return 0;
}

/* x within the dimension's range, rounded on an integer one. */
static double
Clamped(const HpDim *dim, double x)
{
	double		v = x < dim->lo ? dim->lo : x > dim->hi ? dim->hi : x;

	return IsInt(dim) ? round(v) : v;
}

double
HpScale(const HpDim *dim, double value)
{
	double		u;

	if (isnan(value))
		return NAN;
	if (IsLog(dim))
		u = value > 0 ? (log(value) - log(dim->lo)) / (log(dim->hi) - log(dim->lo)) : 0;
	else
		u = (value - dim->lo) / (dim->hi - dim->lo);
	return u < 0 ? 0 : u > 1 ? 1 : u;
}

double
HpUnscale(const HpDim *dim, double u)
{
	double		v;

	if (!(u >= 0))
		u = 0;
	if (u > 1)
		u = 1;
	if (IsLog(dim))
		v = exp(log(dim->lo) + u * (log(dim->hi) - log(dim->lo)));
	else
		v = dim->lo + u * (dim->hi - dim->lo);
	if (IsInt(dim))
		v = round(v);
	return v < dim->lo ? dim->lo : v > dim->hi ? dim->hi : v;
}

/* A standard normal draw (Box-Muller). */
static double
Normal(uint64_t *rng)
{
	double		u1 = PolicyRandUniform(rng),
				u2 = PolicyRandUniform(rng);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* u reflected into [0, 1]. */
static double
Reflect(double u)
{
	for (int i = 0; i < 4 && (u < 0 || u > 1); i++)
		u = u < 0 ? -u : 2 - u;
	return u < 0 ? 0 : u > 1 ? 1 : u;
}

/* Move dimension j of y (raw) so that it surely differs from x[j]. */
static void
ForceChange(const HpDim *dim, double x, double *y, uint64_t *rng, double step)
{
	if (dim->type == HP_CATEGORICAL)
	{
		int			n = (int) dim->hi + 1;
		int			c = (int) x;
		int			o = 1 + (int) (PolicyRandUniform(rng) * (n - 1));

		*y = (double) ((c + (o < n ? o : n - 1)) % n);
		return;
	}
	if (IsInt(dim))
	{
		/* one unit up or down (the other way at an edge) */
		double		v = x + (PolicyRandUniform(rng) < 0.5 ? -1 : 1);

		if (v < dim->lo)
			v = x + 1;
		if (v > dim->hi)
			v = x - 1;
		*y = v;
		return;
	}
	{
		double		u = HpScale(dim, x);
		double		s = step > 0 ? step : 0.1;

		u = u + (u + s <= 1 ? s : -s);
		*y = HpUnscale(dim, u);
	}
}

int
HpPropose(const HpDim *dims, int d, const double *x, uint64_t seed,
		  int n, double step, double *out)
{
	if (dims == NULL || x == NULL || out == NULL || d < 1 || n < 0 ||
		!(step > 0 && step <= 1))
		return -1;
	for (int j = 0; j < d; j++)
		if (HpDimCheck(&dims[j]) != 0 || !isfinite(x[j]))
			return -1;
	for (int i = 0; i < n; i++)
	{
		uint64_t	rng = seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t) (i + 1));
		double	   *y = out + (size_t) i * d;
		int			changed = 0;

		(void) PolicyRandNext(&rng);
		for (int j = 0; j < d; j++)
		{
			const HpDim *dim = &dims[j];
			double		xj = x[j] < dim->lo ? dim->lo : x[j] > dim->hi ? dim->hi : x[j];

			if (dim->type == HP_CATEGORICAL)
			{
				xj = round(xj);
				y[j] = xj;
				if (PolicyRandUniform(&rng) < step)
					ForceChange(dim, xj, &y[j], &rng, step);
			}
			else
				y[j] = HpUnscale(dim, Reflect(HpScale(dim, xj) + step * Normal(&rng)));
			changed |= (y[j] != xj);
		}
		if (!changed)
		{
			int			j = (int) (PolicyRandUniform(&rng) * d);

			if (j >= d)
				j = d - 1;
			/* from the parent's value as the loop saw it: in range */
			ForceChange(&dims[j], Clamped(&dims[j], x[j]), &y[j], &rng, step);
		}
	}
	return 0;
}

double
HpKernel(const double *a, const double *b, int d, double lengthscale)
{
	double		s = 0;
	int			used = 0;

	for (int j = 0; j < d; j++)
	{
		double		diff;

		if (isnan(a[j]) && isnan(b[j]))
			continue;			/* padding on both sides */
		diff = (isnan(a[j]) || isnan(b[j])) ? 1.0 : a[j] - b[j];
		s += diff * diff;
		used++;
	}
	if (used < 1)
		return 1.0;
	return exp(-s / (2.0 * lengthscale * lengthscale * used));
}

int
HpExtendPrior(GpPrior *prior, const int *root, const double *coords,
			  int d, double lengthscale)
{
	int			K;
	double	   *orig;
	double	   *kr;
	int		   *r;

	if (prior == NULL || root == NULL || coords == NULL || d < 1 ||
		!(lengthscale > 0) || prior->K < 1)
		return -1;
	K = prior->K;
	for (int k = 0; k < K; k++)
		if (root[k] < -1 || root[k] >= K || root[k] == k ||
			(root[k] >= 0 && root[root[k]] != -1))
			return -1;
	orig = malloc(sizeof(double) * (size_t) K * K);
	kr = malloc(sizeof(double) * K);
	r = malloc(sizeof(int) * K);
	if (orig == NULL || kr == NULL || r == NULL)
	{
		free(orig);
		free(kr);
		free(r);
		return -1;
	}
	memcpy(orig, prior->cov, sizeof(double) * (size_t) K * K);
	for (int k = 0; k < K; k++)
	{
		r[k] = root[k] >= 0 ? root[k] : k;
		kr[k] = root[k] >= 0 ?
			HpKernel(coords + (size_t) k * d, coords + (size_t) r[k] * d, d, lengthscale) : 1.0;
	}
	for (int a = 0; a < K; a++)
	{
		if (root[a] < 0)
			continue;
		prior->mu0[a] = prior->mu0[r[a]];
		for (int b = 0; b < K; b++)
		{
			double		c;

			if (r[b] == r[a])
				c = orig[(size_t) r[a] * K + r[a]] *
					(a == b ? 1.0 : HpKernel(coords + (size_t) a * d,
											 coords + (size_t) b * d, d, lengthscale));
			else
				c = kr[a] * kr[b] * orig[(size_t) r[a] * K + r[b]];
			prior->cov[(size_t) a * K + b] = c;
			prior->cov[(size_t) b * K + a] = c;
		}
	}
	free(orig);
	free(kr);
	free(r);
	GpPriorFinish(prior);
	return 0;
}

/* ----------------------------------------------------------------------
 * [acqgen] Proposals before the grid is spent (docs/scheduler.md 7.9)
 * ----------------------------------------------------------------------
 */

int
HpPointPosterior(const GpState *gp, const int *arm_root,
				 const double *arm_coords, int dims, const HpPoint *p,
				 double lengthscale, double *mu, double *var)
{
	const GpPrior *prior;
	double	   *krow;
	double		kr;
	int			K,
				r,
				rc;

	if (gp == NULL || gp->prior == NULL || p == NULL || p->x == NULL ||
		p->x_root == NULL || p->d < 1 || mu == NULL || var == NULL ||
		!(lengthscale > 0))
		return GP_BAD_INPUT;
	prior = gp->prior;
	K = prior->K;
	r = p->root;
	if (r < 0 || r >= K || (arm_root != NULL && arm_root[r] >= 0))
		return GP_BAD_INPUT;
	krow = malloc(sizeof(double) * K);
	if (krow == NULL)
		return GP_NO_MEMORY;
	kr = HpKernel(p->x, p->x_root, p->d, lengthscale);
	/* only the observed arms' entries are read */
	for (int i = 0; i < gp->t; i++)
	{
		int			j = gp->arms[i];
		int			s = arm_root != NULL && arm_root[j] >= 0 ? arm_root[j] : j;
		double		c;

		if (j == r)
			c = prior->cov[(size_t) r * K + r] * kr;
		else if (s == r)
		{
			/* a generated arm of the same root: the first d columns are
			 * its family's space, the point's */
			if (arm_coords == NULL || dims < p->d)
			{
				free(krow);
				return GP_BAD_INPUT;
			}
			c = prior->cov[(size_t) r * K + r] *
				HpKernel(p->x, arm_coords + (size_t) j * dims, p->d, lengthscale);
		}
		else
			c = kr * prior->cov[(size_t) r * K + j];
		krow[j] = c;
	}
	rc = GpStatePredict(gp, krow, prior->cov[(size_t) r * K + r],
						prior->mu0[r], mu, var);
	free(krow);
	return rc;
}

double
HpPointCost(double parent_cost, double overhead, double log_complexity_delta)
{
	double		o = overhead > 0 && isfinite(overhead) ? overhead : 0.0;
	double		work = parent_cost - o;
	double		f = isfinite(log_complexity_delta) ? exp(log_complexity_delta) : 1.0;

	if (!(parent_cost > 0) || !isfinite(parent_cost))
		return NAN;
	/* a parent estimated at its overhead alone: all of it scales */
	if (!(work > 0))
		return parent_cost * f;
	return o + work * f;
}

int
HpProposalBeats(const PolicyParams *params, int K, const double *mu,
				const double *var, const double *cost,
				const unsigned char *avail, const PolicyTenantView *view,
				int n, const double *p_mu, const double *p_var,
				const double *p_cost, double margin, int *winner,
				double *p_acq, double *grid_acq)
{
	int			N = K + n;
	double	   *m,
			   *v,
			   *c;
	unsigned char *a;
	PolicyTenantView gv,
				pv;
	int			rc;

	if (winner == NULL)
		return POLICY_BAD_INPUT;
	*winner = -1;
	if (p_acq)
		*p_acq = NAN;
	if (grid_acq)
		*grid_acq = NAN;
	if (params == NULL || K < 1 || n < 0 || mu == NULL || var == NULL ||
		avail == NULL || view == NULL || (n > 0 && (p_mu == NULL || p_var == NULL)) ||
		!(margin >= 0))
		return POLICY_BAD_INPUT;
	if (n == 0 || !PolicyReadsPosterior(params) ||
		params->kind == POLICY_POPULAR || params->kind == POLICY_FIFO)
		return POLICY_OK;
	m = malloc(sizeof(double) * N);
	v = malloc(sizeof(double) * N);
	c = malloc(sizeof(double) * N);
	a = malloc(N);
	if (m == NULL || v == NULL || c == NULL || a == NULL)
	{
		free(m);
		free(v);
		free(c);
		free(a);
		return POLICY_NO_MEMORY;
	}
	for (int k = 0; k < N; k++)
	{
		int			i = k - K;

		m[k] = k < K ? mu[k] : p_mu[i];
		v[k] = k < K ? var[k] : p_var[i];
		c[k] = k < K ? (cost ? cost[k] : 1.0) :
			(p_cost && p_cost[i] > 0 ? p_cost[i] : 1.0);
		a[k] = k < K && avail[k] ? 1 : 0;
	}
	gv = *view;
	rc = PolicyBestArm(params, N, m, v, c, a, NULL, &gv);
	if (rc >= 0 && gv.arm >= 0)
	{
		for (int k = 0; k < N; k++)
			a[k] = k >= K && isfinite(m[k]) && isfinite(v[k]);
		pv = *view;
		rc = PolicyBestArm(params, N, m, v, c, a, NULL, &pv);
		if (grid_acq)
			*grid_acq = gv.acq;
		if (rc >= 0 && pv.arm >= K)
		{
			if (p_acq)
				*p_acq = pv.acq;
			/*
			 * strictly more: a tie goes to the grid's arm; the margin is
			 * taken on the size of the grid's acquisition, which may be
			 * negative (GP-UCB of a poor task), so that it still asks for
			 * more: margin x gv.acq when that is >= 0
			 */
			if (pv.acq - gv.acq > (margin - 1.0) * fabs(gv.acq))
				*winner = pv.arm - K;
		}
	}
	free(m);
	free(v);
	free(c);
	free(a);
	return rc < 0 ? rc : POLICY_OK;
}
