/*-------------------------------------------------------------------------
 *
 * mixplan.c
 *	  Arm choice by a two-run plan under the history mixture (see
 *	  mixplan.h; docs/scheduler.md 3, docs/research/scheduler-experiments.md).
 *	  [R] an experiment of issue 7, refused by the live scheduler.
 *
 * Under the mixture a task is one history row r (offset o_r).  For a first
 * arm a, row r as the truth gives the result y = r_a + o_r exactly (the
 * discrete predictive, mh=0; with a kernel the row's mean stands for it),
 * and adding y to the task's scores changes each row's log weight by
 * -(y - q_a - o_q)^2 / (2 s^2), or with the shift by -n/(n+1) (y - q_a -
 * o_q)^2 / (2 s^2) with the offset moving to o_q + (y - q_a - o_q)/(n+1)
 * (n: results so far; Welford's update of the sum of squared deviations
 * from the mean offset).  The second arm is the best by EI per cost above
 * max(best, y) under those weights (the GP part of the blend, mgp, is
 * kept at its current posterior).  The expected improvement of the pair's
 * best is EI1(a) + E_r[EI2], its expected cost c_a + E_r[c2].
 *
 * To keep a decision cheap the first arm is one of the L of largest
 * myopic EI per cost, the second one of the MIX_PLAN_POOL of largest, and
 * the truth one of the MIX_PLAN_ROWS rows of largest weight (their weight
 * renormalised).
 *
 * IDENTIFICATION
 *	  src/core/mixplan.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mixplan.h"

#define MIX_PLAN_POOL 16		/* candidates for the second run */
#define MIX_PLAN_ROWS 32		/* rows taken as the truth */
#define MIX_PLAN_MASS 0.999		/* ... or fewer, once they hold this */
#define MIX_PLAN_TINY 1e-12		/* rows below this share are skipped */

/* Scratch of one decision. */
typedef struct PlanScratch
{
	double	   *ei;				/* K: myopic (blended) EI */
	double	   *acq;			/* K: ei per cost divisor */
	double	   *q;				/* m: weights after the first result */
	double	   *off;			/* m: offsets after the first result */
	int		   *pool;			/* MIX_PLAN_POOL arms, best first */
	int		   *rows;			/* MIX_PLAN_ROWS rows, heaviest first */
	int			npool;
	int			nrows;
	double		rows_mass;
} PlanScratch;

/* EI of arm k over best: (1 - A) mixture under (w, off) + A GP. */
static double
PlanArmEi(const MixPrior *mp, const PolicyParams *params, const double *w,
		  const double *off, double h, const double *gp_mu,
		  const double *gp_var, int k, double best)
{
	double		ei = 0.0,
				a = params->mix_gp;

	for (int r = 0; r < mp->m; r++)
	{
		double		v;

		if (!(w[r] > MIX_PLAN_TINY))
			continue;
		v = mp->rows[(size_t) r * mp->K + k] + off[r];
		if (h > 0.0)
			ei += w[r] * PolicyExpectedImprovement(v, h, best);
		else if (v > best)
			ei += w[r] * (v - best);
	}
	if (a > 0.0)
		ei = (1.0 - a) * ei + a *
			PolicyExpectedImprovement(gp_mu[k], sqrt(fmax(gp_var[k], 0.0)),
									  best);
	return ei;
}

/* The cost divisor of arm k (1 when not cost-aware). */
static double
PlanCost(const PolicyParams *params, const double *cost, int k)
{
	if (params->cost_aware && cost)
		return PolicyCostDivisor(params, cost[k]);
	return 1.0;
}

/*
 * Indices of the n largest values of x[0..len) (skipped where x < 0),
 * largest first, ties to the lowest index; returns how many were found.
 */
static int
TopIndices(const double *x, int len, int n, int *out)
{
	int			found = 0;

	for (int i = 0; i < n; i++)
	{
		int			bi = -1;

		for (int k = 0; k < len; k++)
		{
			int			taken = 0;

			if (x[k] < 0.0 || (bi >= 0 && x[k] <= x[bi]))
				continue;
			for (int j = 0; j < found && !taken; j++)
				taken = out[j] == k;
			if (!taken)
				bi = k;
		}
		if (bi < 0)
			break;
		out[found++] = bi;
	}
	return found;
}

/*
 * Row weights and offsets after the result y on arm a (n results so far)
 * into s->q and s->off.
 */
static void
PlanUpdate(const MixPrior *mp, const PolicyParams *params, const double *w,
		   const double *off, double bw, int n, int a, double y,
		   PlanScratch *s)
{
	double		c = 0.5 / (bw * bw),
				nk = n + MixOffsetKappa(params, bw),
				f = params->mix_shift ? nk / (nk + 1.0) : 1.0,
				mx = -INFINITY,
				sum = 0.0;

	for (int j = 0; j < mp->m; j++)
	{
		double		d = y - mp->rows[(size_t) j * mp->K + a] - off[j];

		s->off[j] = params->mix_shift ? off[j] + d / (nk + 1.0) : off[j];
		s->q[j] = w[j] > 0.0 ? log(w[j]) - c * f * d * d : -INFINITY;
		if (s->q[j] > mx)
			mx = s->q[j];
	}
	for (int j = 0; j < mp->m; j++)
	{
		s->q[j] = exp(s->q[j] - mx);
		sum += s->q[j];
	}
	for (int j = 0; j < mp->m; j++)
		s->q[j] /= sum;
}

/* The two-run index of first arm a (see the file header). */
static double
PlanIndex(const MixPrior *mp, const PolicyParams *params, const double *w,
		  const double *off, double bw, double h, int n, const double *gp_mu,
		  const double *gp_var, const double *cost, double best, int a,
		  PlanScratch *s)
{
	double		ei2 = 0.0,
				c2 = 0.0;

	for (int i = 0; i < s->nrows; i++)
	{
		int			r = s->rows[i];
		double		y = mp->rows[(size_t) r * mp->K + a] + off[r];
		double		b1 = y > best ? y : best,
					top_acq = 0.0,
					top_ei = 0.0,
					top_c = 0.0;

		PlanUpdate(mp, params, w, off, bw, n, a, y, s);
		for (int p = 0; p < s->npool; p++)
		{
			int			k = s->pool[p];
			double		e,
						ck;

			if (k == a)
				continue;
			e = PlanArmEi(mp, params, s->q, s->off, h, gp_mu, gp_var, k, b1);
			ck = PlanCost(params, cost, k);
			if (e / ck > top_acq)
			{
				top_acq = e / ck;
				top_ei = e;
				top_c = ck;
			}
		}
		ei2 += w[r] * top_ei;
		c2 += w[r] * top_c;
	}
	ei2 /= s->rows_mass;
	c2 /= s->rows_mass;
	return fmax(s->acq[a],
				(s->ei[a] + ei2) / (PlanCost(params, cost, a) + c2));
}

/* Fill s: myopic EI and acquisition per arm, the pool, the likely rows. */
static void
PlanPrepare(const MixPrior *mp, const PolicyParams *params, const double *w,
			const double *off, double h, const double *gp_mu,
			const double *gp_var, const double *cost,
			const unsigned char *avail, double best, PlanScratch *s)
{
	for (int k = 0; k < mp->K; k++)
	{
		s->ei[k] = s->acq[k] = -1.0;
		if (!avail[k])
			continue;
		s->ei[k] = PlanArmEi(mp, params, w, off, h, gp_mu, gp_var, k, best);
		s->acq[k] = s->ei[k] / PlanCost(params, cost, k);
	}
	s->npool = TopIndices(s->acq, mp->K, MIX_PLAN_POOL, s->pool);
	s->nrows = 0;
	s->rows_mass = 0.0;
	while (s->nrows < MIX_PLAN_ROWS && s->rows_mass < MIX_PLAN_MASS)
	{
		int			bi = -1;

		for (int r = 0; r < mp->m; r++)
		{
			int			taken = 0;

			if (!(w[r] > MIX_PLAN_TINY) || (bi >= 0 && w[r] <= w[bi]))
				continue;
			for (int j = 0; j < s->nrows && !taken; j++)
				taken = s->rows[j] == r;
			if (!taken)
				bi = r;
		}
		if (bi < 0)
			break;
		s->rows[s->nrows++] = bi;
		s->rows_mass += w[bi];
	}
}

/* Fill the view for arm k as MixBestArm does. */
static void
PlanView(const MixPrior *mp, const PolicyParams *params, const double *w,
		 const double *off, double h, const double *cost, int k,
		 double index, double ei, PolicyTenantView *view)
{
	double		mu = 0.0,
				var = 0.0;

	for (int r = 0; r < mp->m; r++)
		mu += w[r] * (mp->rows[(size_t) r * mp->K + k] + off[r]);
	for (int r = 0; r < mp->m; r++)
	{
		double		d = mp->rows[(size_t) r * mp->K + k] + off[r] - mu;

		var += w[r] * d * d;
	}
	view->arm = k;
	view->mu = mu;
	view->sigma = sqrt(var + h * h);
	view->acq = index;
	view->ei = ei;
	view->cost = cost ? fmax(cost[k], 1e-9) : 1.0;
	view->ucb = view->mu + sqrt(view->beta) * view->sigma;
	view->score = PolicyGreedyScore(params, view);
}

int
MixPlanBestArm(const MixPrior *mp, const PolicyParams *params,
			   const double *w, const double *off, double bw,
			   const double *score, const double *gp_mu,
			   const double *gp_var, const double *cost,
			   const unsigned char *avail, PolicyTenantView *view)
{
	double		h = params->mix_h < 0.0 ? bw : params->mix_h;
	int			L = params->mix_plan,
				n = 0,
				first[MIX_PLAN_MAX],
				nfirst,
				best_k = -1;
	double		best_index = 0.0;
	PlanScratch s;
	int			ok;

	if (mp == NULL || params == NULL || w == NULL || off == NULL ||
		score == NULL || avail == NULL || view == NULL || L < 1 ||
		L > MIX_PLAN_MAX || !(bw > 0.0) ||
		(params->mix_gp > 0.0 && (gp_mu == NULL || gp_var == NULL)))
		return POLICY_BAD_INPUT;
	memset(&s, 0, sizeof(s));
	s.ei = malloc(sizeof(double) * mp->K);
	s.acq = malloc(sizeof(double) * mp->K);
	s.q = malloc(sizeof(double) * mp->m);
	s.off = malloc(sizeof(double) * mp->m);
	s.pool = malloc(sizeof(int) * MIX_PLAN_POOL);
	s.rows = malloc(sizeof(int) * MIX_PLAN_ROWS);
	view->arm = -1;
	ok = s.ei && s.acq && s.q && s.off && s.pool && s.rows;
	if (ok)
	{
		for (int k = 0; k < mp->K; k++)
			n += !isnan(score[k]);
		PlanPrepare(mp, params, w, off, h, gp_mu, gp_var, cost, avail,
					view->best, &s);
		nfirst = TopIndices(s.acq, mp->K, L, first);
		for (int i = 0; i < nfirst; i++)
		{
			double		x;

			if (!(s.ei[first[i]] > 0.0))
				continue;
			x = PlanIndex(mp, params, w, off, bw, h, n, gp_mu, gp_var, cost,
						  view->best, first[i], &s);
			if (x > best_index)
			{
				best_index = x;
				best_k = first[i];
			}
		}
		if (best_k >= 0)
			PlanView(mp, params, w, off, h, cost, best_k, best_index,
					 s.ei[best_k], view);
	}
	free(s.ei);
	free(s.acq);
	free(s.q);
	free(s.off);
	free(s.pool);
	free(s.rows);
	return ok ? POLICY_OK : POLICY_NO_MEMORY;
}
