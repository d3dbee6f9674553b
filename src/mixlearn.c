/*-------------------------------------------------------------------------
 *
 * mixlearn.c
 *	  A task score learned from the history's own trajectories (see
 *	  mixlearn.h; docs/scheduler.md 6.5).  [R] an experiment of issue 7.
 *
 * Why.  The mixture's remaining-regret estimate (mrg=1) ranks tasks'
 * states only loosely against their true remaining regret; the history
 * rows are fully known, so states like the real tasks' ones, with their
 * true remaining regret, can be generated from them and a small
 * regression fitted on several cheap features at once.
 *
 * IDENTIFICATION
 *	  src/mixlearn.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lapacke.h>

#include "mixlearn.h"

#define MIXL_MIN_WEIGHT 1e-12

void
MixLearnFeatures(const MixPrior *mp, const PolicyParams *params,
				 const double *w, const double *off,
				 const unsigned char *avail, double best, int n_obs,
				 int streak, double *x)
{
	double		pimp,
				rg = MixRemainingRegretP(mp, params, w, off, avail, best, &pimp),
				w2 = 0.0,
				ei_max = 0.0;

	for (int r = 0; r < mp->m; r++)
		w2 += w[r] * w[r];
	for (int k = 0; k < mp->K; k++)
	{
		double		ei = 0.0;

		if (!avail[k])
			continue;
		for (int r = 0; r < mp->m; r++)
		{
			double		v = mp->rows[(size_t) r * mp->K + k] + off[r];

			if (w[r] > MIXL_MIN_WEIGHT && v > best)
				ei += w[r] * (v - best);
		}
		if (ei > ei_max)
			ei_max = ei;
	}
	x[0] = 1.0;
	x[1] = log(rg + 1e-4);
	x[2] = log(ei_max + 1e-5);
	x[3] = log(pimp + 1e-3);
	x[4] = log(1.0 + n_obs);
	x[5] = log(1.0 + streak);
	x[6] = -log(w2 > 0.0 ? w2 : 1.0);
	x[7] = best;
}

double
MixLearnPredict(const MixLearn *ml, const double *x)
{
	double		s = 0.0;

	for (int j = 0; j < MIXL_FEATURES; j++)
		s += ml->coef[j] * x[j];
	return exp(s);
}

/* The available arm of largest mixture mean (no row improves: explore). */
static int
MeanArm(const MixPrior *mp, const double *w, const double *off,
		const unsigned char *avail)
{
	double		best_mu = -INFINITY;
	int			arm = -1;

	for (int k = 0; k < mp->K; k++)
	{
		double		mu = 0.0;

		if (!avail[k])
			continue;
		for (int r = 0; r < mp->m; r++)
			mu += w[r] * (mp->rows[(size_t) r * mp->K + k] + off[r]);
		if (mu > best_mu)
		{
			best_mu = mu;
			arm = k;
		}
	}
	return arm;
}

/*
 * Row h plays a task: its states' features go to x (MIXL_FEATURES each)
 * and log(remaining regret + MIXL_EPS) to y; returns the states added,
 * < 0 on error.
 */
static int
PlayRow(const MixPrior *mp, const PolicyParams *p, const double *cost, int h,
		double *score, unsigned char *avail, double *w, double *off,
		double *x, double *y)
{
	const double *row = mp->rows + (size_t) h * mp->K;
	double		rowmax = -INFINITY,
				best = 0.0;
	int			streak = 0,
				n = 0;

	for (int k = 0; k < mp->K; k++)
	{
		score[k] = NAN;
		avail[k] = 1;
		if (row[k] > rowmax)
			rowmax = row[k];
	}
	for (int s = 0; s < MIXL_STEPS && s < mp->K; s++)
	{
		double		bw = MixWeightsExcept(mp, p, score, h, w, off);
		PolicyTenantView v;
		int			arm;

		if (s > 0)
		{
			MixLearnFeatures(mp, p, w, off, avail, best, s, streak,
							 x + (size_t) n * MIXL_FEATURES);
			y[n++] = log(fmax(rowmax - best, 0.0) + MIXL_EPS);
		}
		memset(&v, 0, sizeof(v));
		v.best = best;
		if (MixBestArm(mp, p, w, off, bw, NULL, NULL, cost, avail, &v) < 0)
			return -1;
		arm = v.arm >= 0 ? v.arm : MeanArm(mp, w, off, avail);
		if (arm < 0)
			break;
		score[arm] = row[arm];
		avail[arm] = 0;
		if (row[arm] > best)
		{
			best = row[arm];
			streak = 0;
		}
		else
			streak++;
	}
	return n;
}

int
MixLearnStates(const MixPrior *mp, const PolicyParams *params,
			   const double *cost, double *x, double *y, int *n)
{
	PolicyParams p;
	double	   *score,
			   *w,
			   *off;
	unsigned char *avail;
	int			step,
				rc = POLICY_OK;

	*n = 0;
	if (mp == NULL || params == NULL || mp->m < 3)
		return POLICY_BAD_INPUT;
	p = *params;
	p.mix_gp = 0.0;				/* no GP for the history's rows */
	score = malloc(sizeof(double) * mp->K);
	avail = malloc(mp->K);
	w = malloc(sizeof(double) * mp->m);
	off = malloc(sizeof(double) * mp->m);
	if (score == NULL || avail == NULL || w == NULL || off == NULL)
		rc = POLICY_NO_MEMORY;
	step = mp->m > MIXL_ROWS ? mp->m / MIXL_ROWS : 1;
	for (int h = 0, played = 0;
		 rc == POLICY_OK && h < mp->m && played < MIXL_ROWS;
		 h += step, played++)
	{
		int			k = PlayRow(mp, &p, cost, h, score, avail, w, off,
								x + (size_t) *n * MIXL_FEATURES, y + *n);

		if (k < 0)
			rc = POLICY_BAD_INPUT;
		else
			*n += k;
	}
	free(score);
	free(avail);
	free(w);
	free(off);
	return rc;
}

int
MixLearnFit(MixLearn *ml, const MixPrior *mp, const PolicyParams *params,
			const double *cost)
{
	const int	F = MIXL_FEATURES;
	double		xtx[MIXL_FEATURES * MIXL_FEATURES] = {0};
	double	   *x = malloc(sizeof(double) * MIXL_STATES * F);
	double	   *y = malloc(sizeof(double) * MIXL_STATES);
	int			n = 0,
				rc = x && y ? POLICY_OK : POLICY_NO_MEMORY;

	if (ml == NULL)
		rc = POLICY_BAD_INPUT;
	else
		memset(ml, 0, sizeof(*ml));
	if (rc == POLICY_OK)
		rc = MixLearnStates(mp, params, cost, x, y, &n);
	if (rc == POLICY_OK)
	{
		/* ridge: (X'X + lambda n I) coef = X'y, the intercept unpenalised */
		for (int s = 0; s < n; s++)
			for (int i = 0; i < F; i++)
			{
				ml->coef[i] += x[s * F + i] * y[s];
				for (int j = 0; j < F; j++)
					xtx[i * F + j] += x[s * F + i] * x[s * F + j];
			}
		for (int j = 1; j < F; j++)
			xtx[j * F + j] += MIXL_RIDGE * n;
		ml->n = n;
		ml->ok = n > F &&
			LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', F, 1, xtx, F, ml->coef, 1) == 0;
	}
	free(x);
	free(y);
	return rc;
}
