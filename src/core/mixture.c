/*-------------------------------------------------------------------------
 *
 * mixture.c
 *	  Empirical-mixture ("particle") posterior over the history rows
 *	  (docs/scheduler.md sections 2 and 3, docs/research/scheduler-experiments.md;
 *	  see mixture.h).
 *
 * The model.  A task's quality vector is one of the m history rows r plus
 * independent N(0, s^2) noise per cell; rows are equally likely a priori.
 * After scores y on arms S the posterior over rows is w_r ~ exp(-sum_{j in
 * S} (y_j - r_j - o_r)^2 / (2 s^2)), o_r = 0, or with the shift option the
 * row's mean offset on S (the task may be uniformly easier or harder than
 * the row: only the shape is matched).  Unlike the GP posterior, the
 * predictive of an untried arm is a mixture over the rows: bounded by what
 * rows reach, skewed, and multi-modal.  [R] an experiment of issue 7.
 *
 * The bandwidth.  s is chosen on a grid by leave-one-row-out likelihood
 * on the history itself: for up to MIX_HELDOUT rows, a few cells (1, 2, 4,
 * 8, 16) are "observed" and MIX_PREDICT others are scored under the
 * mixture of the other rows, p(x_T | x_S) = sum_r w_r N(x_T; r_T + o_r,
 * s^2).  The columns are drawn with a fixed seed, so the fit is
 * deterministic.
 *
 * IDENTIFICATION
 *	  src/core/mixture.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mixture.h"

#define MIX_HELDOUT 48			/* held-out rows of the bandwidth fit */
#define MIX_PREDICT 8			/* cells scored per held-out case */
#define MIX_GRID_MIN 0.002
#define MIX_GRID_STEP 1.6
#define MIX_SEED UINT64_C(0x6d69787475726521)
#define MIX_MIN_WEIGHT 1e-12	/* rows below this share are skipped */

static const int mix_observed[] = {1, 2, 4, 8, 16};

void
MixPriorFree(MixPrior *mp)
{
	if (mp == NULL)
		return;
	free(mp->rows);
	memset(mp, 0, sizeof(*mp));
}

/*
 * Copy the history, unknown cells as column mean + the row's mean offset
 * (as the GP prior imputes them); mean is scratch of K values.
 */
static void
Impute(double *x, const double *h, int m, int K, double *mean)
{
	double		all = 0.0;
	long		n_all = 0;

	for (int k = 0; k < K; k++)
	{
		double		s = 0.0;
		int			n = 0;

		for (int i = 0; i < m; i++)
			if (!isnan(h[(size_t) i * K + k]))
			{
				s += h[(size_t) i * K + k];
				n++;
			}
		mean[k] = n > 0 ? s / n : NAN;
		all += s;
		n_all += n;
	}
	for (int k = 0; k < K; k++)
		if (isnan(mean[k]))
			mean[k] = n_all > 0 ? all / n_all : 0.5;
	for (int i = 0; i < m; i++)
	{
		double		off = 0.0;
		int			n = 0;

		for (int k = 0; k < K; k++)
			if (!isnan(h[(size_t) i * K + k]))
			{
				off += h[(size_t) i * K + k] - mean[k];
				n++;
			}
		off = n > 0 ? off / n : 0.0;
		for (int k = 0; k < K; k++)
		{
			double		v = h[(size_t) i * K + k];

			x[(size_t) i * K + k] = isnan(v) ? mean[k] + off : v;
		}
	}
}

/* log(sum exp(a[i])) over n values. */
static double
LogSumExp(const double *a, int n)
{
	double		mx = -INFINITY,
				s = 0.0;

	for (int i = 0; i < n; i++)
		if (a[i] > mx)
			mx = a[i];
	if (!isfinite(mx))
		return mx;
	for (int i = 0; i < n; i++)
		s += exp(a[i] - mx);
	return mx + log(s);
}

/*
 * Add to ll[g] the log predictive of MIX_PREDICT cells of held-out row h
 * given nobs observed ones (cols[0..nobs) observed, the next MIX_PREDICT
 * scored), under the mixture of the other rows, for every grid bandwidth.
 * d2, e and a are scratch of m, m x MIX_PREDICT and m values.
 */
static void
ScoreCase(const MixPrior *mp, int h, const int *cols, int nobs, int shift,
		  double *d2, double *e, double *a, double *ll)
{
	const double *x = mp->rows + (size_t) h * mp->K;
	int			n = 0;

	for (int r = 0; r < mp->m; r++)
	{
		const double *row = mp->rows + (size_t) r * mp->K;
		double		off = 0.0,
					s = 0.0;

		if (r == h)
			continue;
		if (shift)
		{
			for (int j = 0; j < nobs; j++)
				off += x[cols[j]] - row[cols[j]];
			off /= nobs;
		}
		for (int j = 0; j < nobs; j++)
		{
			double		d = x[cols[j]] - row[cols[j]] - off;

			s += d * d;
		}
		d2[n] = s;
		for (int j = 0; j < MIX_PREDICT; j++)
			e[(size_t) n * MIX_PREDICT + j] =
				x[cols[nobs + j]] - row[cols[nobs + j]] - off;
		n++;
	}
	for (int g = 0; g < MIX_GRID; g++)
	{
		double		bw = MIX_GRID_MIN * pow(MIX_GRID_STEP, g);
		double		c = 0.5 / (bw * bw);
		double		norm;

		for (int r = 0; r < n; r++)
			a[r] = -c * d2[r];
		norm = LogSumExp(a, n);
		for (int j = 0; j < MIX_PREDICT; j++)
		{
			for (int r = 0; r < n; r++)
			{
				double		d = e[(size_t) r * MIX_PREDICT + j];

				a[r] = -c * (d2[r] + d * d);
			}
			ll[g] += LogSumExp(a, n) - norm - log(bw * sqrt(2.0 * M_PI));
		}
	}
}

/* The grid bandwidth of largest likelihood in ll. */
static double
BestBandwidth(const double *ll)
{
	int			best = 0;

	for (int g = 1; g < MIX_GRID; g++)
		if (ll[g] > ll[best])
			best = g;
	return MIX_GRID_MIN * pow(MIX_GRID_STEP, best);
}

int
MixFitBegin(MixFitJob *job, const double *history, int m, int K)
{
	double	   *mean;

	memset(job, 0, sizeof(*job));
	if (history == NULL || m < 2 || K < 1)
		return POLICY_BAD_INPUT;
	job->mp.rows = malloc(sizeof(double) * (size_t) m * K);
	mean = malloc(sizeof(double) * K);
	job->cols = malloc(sizeof(int) * K);
	job->d2 = malloc(sizeof(double) * m);
	job->a = malloc(sizeof(double) * m);
	job->e = malloc(sizeof(double) * m * MIX_PREDICT);
	if (job->mp.rows == NULL || mean == NULL || job->cols == NULL ||
		job->d2 == NULL || job->a == NULL || job->e == NULL)
	{
		free(mean);
		MixFitFree(job);
		return POLICY_NO_MEMORY;
	}
	job->mp.m = m;
	job->mp.K = K;
	Impute(job->mp.rows, history, m, K, mean);
	free(mean);
	return POLICY_OK;
}

/* The columns of the job's next case: a seeded partial shuffle. */
static void
NextColumns(MixFitJob *job, int need)
{
	const int	K = job->mp.K;
	int		   *cols = job->cols;

	if (job->obs == 0)
		job->rng = MIX_SEED + (uint64_t) job->h;
	for (int k = 0; k < K; k++)
		cols[k] = k;
	for (int j = 0; j < need; j++)
	{
		int			p = j + (int) (PolicyRandUniform(&job->rng) * (K - j));
		int			tmp = cols[j];

		if (p >= K)
			p = K - 1;
		cols[j] = cols[p];
		cols[p] = tmp;
	}
}

/*
 * The bandwidth of each pass is the grid point of largest leave-one-row-out
 * likelihood over up to MIX_HELDOUT rows, each with a case per count of
 * observed cells that leaves MIX_PREDICT cells to score.
 */
int
MixFitStep(MixFitJob *job, double work)
{
	const int	m = job->mp.m,
				n_obs = (int) (sizeof(mix_observed) / sizeof(int));
	int			step = m > MIX_HELDOUT ? m / MIX_HELDOUT : 1;
	double		spent = 0.0;

	while (!job->done && (spent == 0.0 || spent < work))
	{
		int			nobs,
					need;

		if (job->h >= m)
		{
			if (job->shift)
			{
				job->mp.bw_shift = BestBandwidth(job->ll);
				job->done = 1;
				break;
			}
			job->mp.bw = BestBandwidth(job->ll);
			memset(job->ll, 0, sizeof(job->ll));
			job->shift = 1;
			job->h = job->obs = 0;
			continue;
		}
		nobs = job->obs < n_obs ? mix_observed[job->obs] : 0;
		need = nobs + MIX_PREDICT;
		if (job->obs >= n_obs || need > job->mp.K)
		{
			job->h += step;
			job->obs = 0;
			continue;
		}
		NextColumns(job, need);
		ScoreCase(&job->mp, job->h, job->cols, nobs, job->shift,
				  job->d2, job->e, job->a, job->ll);
		spent += (double) m * (nobs + MIX_GRID * (MIX_PREDICT + 1));
		job->spent += (double) m * (nobs + MIX_GRID * (MIX_PREDICT + 1));
		job->obs++;
	}
	return job->done;
}

void
MixFitTake(MixFitJob *job, MixPrior *out)
{
	*out = job->mp;
	memset(&job->mp, 0, sizeof(job->mp));
	MixFitFree(job);
}

void
MixFitFree(MixFitJob *job)
{
	MixPriorFree(&job->mp);
	free(job->cols);
	free(job->d2);
	free(job->a);
	free(job->e);
	memset(job, 0, sizeof(*job));
}

int
MixPriorFit(MixPrior *mp, const double *history, int m, int K, double bw)
{
	MixFitJob	job;
	int			rc;

	if (mp == NULL)
		return POLICY_BAD_INPUT;
	memset(mp, 0, sizeof(*mp));
	if (!(bw <= 0.0 || isfinite(bw)))
		return POLICY_BAD_INPUT;
	if ((rc = MixFitBegin(&job, history, m, K)) < 0)
		return rc;
	if (bw > 0.0)
	{
		job.mp.bw = job.mp.bw_shift = bw;
		MixFitTake(&job, mp);
		return POLICY_OK;
	}
	while (!MixFitStep(&job, INFINITY))
		;
	MixFitTake(&job, mp);
	return POLICY_OK;
}

double
MixWeights(const MixPrior *mp, const PolicyParams *params,
		   const double *score, double *w, double *off)
{
	return MixWeightsExcept(mp, params, score, -1, w, off);
}

double
MixWeightsExcept(const MixPrior *mp, const PolicyParams *params,
				 const double *score, int skip, double *w, double *off)
{
	double		bw = params->mix_shift ? mp->bw_shift : mp->bw;
	double		c = 0.5 / (bw * bw),
				mx = -INFINITY,
				sum = 0.0;

	for (int r = 0; r < mp->m; r++)
	{
		const double *row = mp->rows + (size_t) r * mp->K;
		double		o = 0.0,
					d2 = 0.0;
		int			n = 0;

		if (params->mix_shift)
		{
			for (int k = 0; k < mp->K; k++)
				if (!isnan(score[k]))
				{
					o += score[k] - row[k];
					n++;
				}
			o = n > 0 ? o / n : 0.0;
		}
		n = 0;
		for (int k = 0; k < mp->K; k++)
			if (!isnan(score[k]))
			{
				double		d = score[k] - row[k] - o;

				d2 += d * d;
				n++;
			}
		off[r] = o;
		w[r] = r == skip ? -INFINITY : -c * d2;
		if (w[r] > mx)
			mx = w[r];
	}
	for (int r = 0; r < mp->m; r++)
	{
		w[r] = exp(w[r] - mx);
		sum += w[r];
	}
	for (int r = 0; r < mp->m; r++)
		w[r] /= sum;
	return bw;
}

/* One row's expected improvement at value v (kernel sd h, 0: v itself). */
static inline double
RowEi(const PolicyParams *params, double v, double h, double best, int bound)
{
	double		e;

	if (h <= 0.0)
	{
		if (bound && params->q_max > 0.0 && v > params->q_max)
			v = params->q_max;
		return v > best ? v - best : 0.0;
	}
	if (v - best < -8.0 * h)
		return 0.0;				/* below 1e-16 h: nothing to add */
	e = PolicyExpectedImprovement(v, h, best);
	if (bound && params->q_max > 0.0)
		e -= PolicyExpectedImprovement(v, h, params->q_max);
	return e > 0.0 ? e : 0.0;
}

/* Mean (into *mu) and variance of arm k's row values under the weights. */
static double
MixMoments(const MixPrior *mp, const double *w, const double *off, int k,
		   double *mu)
{
	double		m = 0.0,
				var = 0.0;

	for (int r = 0; r < mp->m; r++)
		m += w[r] * (mp->rows[(size_t) r * mp->K + k] + off[r]);
	for (int r = 0; r < mp->m; r++)
	{
		double		d = mp->rows[(size_t) r * mp->K + k] + off[r] - m;

		var += w[r] * d * d;
	}
	*mu = m;
	return var;
}

int
MixBestArm(const MixPrior *mp, const PolicyParams *params, const double *w,
		   const double *off, double bw, const double *gp_mu,
		   const double *gp_var, const double *cost,
		   const unsigned char *avail, PolicyTenantView *view)
{
	double		a = params->mix_gp;
	double		h = params->mix_h < 0.0 ? bw : params->mix_h;
	int			bound = params->q_max_arm;
	double		best_acq = 0.0,
				best_ei = 0.0;
	int			best_k = -1;

	if (mp == NULL || params == NULL || w == NULL || off == NULL ||
		avail == NULL || view == NULL ||
		(a > 0.0 && (gp_mu == NULL || gp_var == NULL)))
		return POLICY_BAD_INPUT;
	if (bound && params->q_max > 0.0 && view->best >= params->q_max)
	{
		view->arm = -1;
		return POLICY_OK;
	}
	for (int k = 0; k < mp->K; k++)
	{
		double		ei = 0.0,
					acq;

		if (!avail[k])
			continue;
		for (int r = 0; r < mp->m; r++)
			if (w[r] > MIX_MIN_WEIGHT)
				ei += w[r] * RowEi(params, mp->rows[(size_t) r * mp->K + k] +
								   off[r], h, view->best, bound);
		if (a > 0.0)
			ei = (1.0 - a) * ei + a * RowEi(params, gp_mu[k],
											sqrt(fmax(gp_var[k], 0.0)),
											view->best, bound);
		acq = ei;
		if (params->cost_aware && cost)
			acq /= PolicyCostDivisor(params, cost[k]);
		if (acq > best_acq)
		{
			best_acq = acq;
			best_ei = ei;
			best_k = k;
		}
	}
	view->arm = best_k;
	if (best_k < 0)
		return POLICY_OK;
	view->sigma = sqrt(MixMoments(mp, w, off, best_k, &view->mu) + h * h);
	view->acq = best_acq;
	view->ei = best_ei;
	view->cost = cost ? fmax(cost[best_k], 1e-9) : 1.0;
	view->ucb = view->mu + sqrt(view->beta) * view->sigma;
	view->score = PolicyGreedyScore(params, view);
	return POLICY_OK;
}

double
MixRemainingRegret(const MixPrior *mp, const PolicyParams *params,
				   const double *w, const double *off,
				   const unsigned char *avail, double best)
{
	return MixRemainingRegretP(mp, params, w, off, avail, best, NULL);
}

double
MixRemainingRegretP(const MixPrior *mp, const PolicyParams *params,
					const double *w, const double *off,
					const unsigned char *avail, double best,
					double *p_improve)
{
	double		regret = 0.0,
				p = 0.0;

	for (int r = 0; r < mp->m; r++)
	{
		const double *row = mp->rows + (size_t) r * mp->K;
		double		mx = -INFINITY;

		if (!(w[r] > MIX_MIN_WEIGHT))
			continue;
		for (int k = 0; k < mp->K; k++)
			if (avail[k] && row[k] > mx)
				mx = row[k];
		mx += off[r];
		if (params->q_max > 0.0 && mx > params->q_max)
			mx = params->q_max;
		if (mx > best)
		{
			regret += w[r] * (mx - best);
			p += w[r];
		}
	}
	if (p_improve)
		*p_improve = p;
	return regret;
}
