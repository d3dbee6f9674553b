/*-------------------------------------------------------------------------
 *
 * mixlearn.c
 *	  A task score learned from the history's own trajectories (see
 *	  mixlearn.h; docs/scheduler.md 3).  [R] from issue 7; part of the
 *	  default policy's mixture candidate.
 *
 * Why.  The mixture's remaining-regret estimate (mrg=1) ranks tasks'
 * states only loosely against their true remaining regret; the history
 * rows are fully known, so states like the real tasks' ones, with their
 * true remaining regret, can be generated from them and a small
 * regression fitted on several cheap features at once.
 *
 * IDENTIFICATION
 *	  src/core/mixlearn.c
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

/* The cells of a history row, its best and a fresh task's state. */
static int
NextRow(MixLearnJob *job)
{
	const MixPrior *mp = &job->mp;
	const double *row;

	if (job->played >= MIXL_ROWS || job->played * job->stride >= mp->m)
		return 0;
	job->h = job->played * job->stride;
	row = mp->rows + (size_t) job->h * mp->K;
	job->rowmax = -INFINITY;
	job->best = 0.0;
	job->streak = 0;
	job->s = 0;
	for (int k = 0; k < mp->K; k++)
	{
		job->score[k] = NAN;
		job->avail[k] = 1;
		if (row[k] > job->rowmax)
			job->rowmax = row[k];
	}
	return 1;
}

/*
 * Row job->h plays state job->s: its features go to x and log(remaining
 * regret + MIXL_EPS) to y (from the second state on), then the mixture's
 * arm runs.  Returns 0, 1 when the row stops (no arm left), < 0 on error.
 */
static int
PlayState(MixLearnJob *job)
{
	const MixPrior *mp = &job->mp;
	const double *row = mp->rows + (size_t) job->h * mp->K;
	double		bw = MixWeightsExcept(mp, &job->p, job->score, job->h,
									  job->w, job->off);
	PolicyTenantView v;
	int			arm;

	if (job->s > 0)
	{
		MixLearnFeatures(mp, &job->p, job->w, job->off, job->avail,
						 job->best, job->s, job->streak,
						 job->x + (size_t) job->n * MIXL_FEATURES);
		job->y[job->n++] = log(fmax(job->rowmax - job->best, 0.0) + MIXL_EPS);
	}
	memset(&v, 0, sizeof(v));
	v.best = job->best;
	if (MixBestArm(mp, &job->p, job->w, job->off, bw, NULL, NULL, job->cost,
				   job->avail, &v) < 0)
		return -1;
	arm = v.arm >= 0 ? v.arm : MeanArm(mp, job->w, job->off, job->avail);
	if (arm < 0)
		return 1;
	job->score[arm] = row[arm];
	job->avail[arm] = 0;
	if (row[arm] > job->best)
	{
		job->best = row[arm];
		job->streak = 0;
	}
	else
		job->streak++;
	job->s++;
	return 0;
}

/* Ridge: (X'X + lambda n I) coef = X'y, the intercept unpenalised. */
static void
Solve(MixLearnJob *job)
{
	const int	F = MIXL_FEATURES;
	double		xtx[MIXL_FEATURES * MIXL_FEATURES] = {0};
	const double *x = job->x;
	MixLearn   *ml = &job->res;
	int			n = job->n;

	for (int s = 0; s < n; s++)
		for (int i = 0; i < F; i++)
		{
			ml->coef[i] += x[s * F + i] * job->y[s];
			for (int j = 0; j < F; j++)
				xtx[i * F + j] += x[s * F + i] * x[s * F + j];
		}
	for (int j = 1; j < F; j++)
		xtx[j * F + j] += MIXL_RIDGE * n;
	ml->n = n;
	ml->ok = n > F &&
		LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', F, 1, xtx, F, ml->coef, 1) == 0;
	job->done = 1;
}

int
MixLearnBegin(MixLearnJob *job, const MixPrior *mp, const PolicyParams *params,
			  const double *cost)
{
	memset(job, 0, sizeof(*job));
	job->h = -1;
	if (mp == NULL || params == NULL || mp->m < 3)
		return POLICY_BAD_INPUT;
	job->mp = *mp;
	job->res.params = *params;
	job->p = *params;
	job->p.mix_gp = 0.0;		/* no GP for the history's rows */
	job->stride = mp->m > MIXL_ROWS ? mp->m / MIXL_ROWS : 1;
	job->score = malloc(sizeof(double) * mp->K);
	job->avail = malloc(mp->K);
	job->w = malloc(sizeof(double) * mp->m);
	job->off = malloc(sizeof(double) * mp->m);
	job->x = malloc(sizeof(double) * MIXL_STATES * MIXL_FEATURES);
	job->y = malloc(sizeof(double) * MIXL_STATES);
	job->cost = cost ? malloc(sizeof(double) * mp->K) : NULL;
	if (job->score == NULL || job->avail == NULL || job->w == NULL ||
		job->off == NULL || job->x == NULL || job->y == NULL ||
		(cost != NULL && job->cost == NULL))
	{
		MixLearnFree(job);
		return POLICY_NO_MEMORY;
	}
	if (cost)
		memcpy(job->cost, cost, sizeof(double) * mp->K);
	return POLICY_OK;
}

/*
 * The rows played are every stride-th, up to MIXL_ROWS of them, each for
 * up to MIXL_STEPS runs, as MixLearnFit always did.
 */
int
MixLearnStep(MixLearnJob *job, double work)
{
	double		spent = 0.0;

	while (!job->done && (spent == 0.0 || spent < work))
	{
		int			rc;

		if (job->h < 0 && !NextRow(job))
		{
			Solve(job);
			break;
		}
		if (job->s >= MIXL_STEPS || job->s >= job->mp.K)
			rc = 1;
		else
		{
			rc = PlayState(job);
			spent += MIXL_STATE_WORK(&job->mp);
			job->spent += MIXL_STATE_WORK(&job->mp);
		}
		if (rc < 0)
		{
			job->rc = POLICY_BAD_INPUT;
			job->done = 1;
		}
		else if (rc == 1)
		{
			job->h = -1;
			job->played++;
		}
	}
	return job->done;
}

int
MixLearnTake(MixLearnJob *job, MixLearn *ml)
{
	int			rc = job->rc;

	if (rc == POLICY_OK && job->done)
		*ml = job->res;
	else
	{
		memset(ml, 0, sizeof(*ml));
		ml->params = job->res.params;
	}
	MixLearnFree(job);
	return rc;
}

void
MixLearnFree(MixLearnJob *job)
{
	free(job->cost);
	free(job->score);
	free(job->avail);
	free(job->w);
	free(job->off);
	free(job->x);
	free(job->y);
	memset(job, 0, sizeof(*job));
	job->h = -1;
}

void
MixLearnKey(const PolicyParams *p, double *key)
{
	key[0] = p->cost_aware;
	key[1] = p->q_max;
	key[2] = p->q_max_arm;
	key[3] = p->mix_shift;
	key[4] = p->mix_h;
}

int
MixLearnSameFit(const PolicyParams *a, const PolicyParams *b)
{
	double		ka[MIXL_KEY],
				kb[MIXL_KEY];

	MixLearnKey(a, ka);
	MixLearnKey(b, kb);
	return memcmp(ka, kb, sizeof(ka)) == 0;
}

int
MixLearnStates(const MixPrior *mp, const PolicyParams *params,
			   const double *cost, double *x, double *y, int *n)
{
	MixLearnJob job;
	int			rc = MixLearnBegin(&job, mp, params, cost);

	*n = 0;
	if (rc != POLICY_OK)
		return rc;
	while (!MixLearnStep(&job, INFINITY))
		;
	*n = job.n;
	memcpy(x, job.x, sizeof(double) * job.n * MIXL_FEATURES);
	memcpy(y, job.y, sizeof(double) * job.n);
	rc = job.rc;
	MixLearnFree(&job);
	return rc;
}

int
MixLearnFit(MixLearn *ml, const MixPrior *mp, const PolicyParams *params,
			const double *cost)
{
	MixLearnJob job;
	int			rc;

	if (ml == NULL)
		return POLICY_BAD_INPUT;
	memset(ml, 0, sizeof(*ml));
	if (params)
		ml->params = *params;
	rc = MixLearnBegin(&job, mp, params, cost);
	if (rc != POLICY_OK)
		return rc;
	while (!MixLearnStep(&job, INFINITY))
		;
	return MixLearnTake(&job, ml);
}
