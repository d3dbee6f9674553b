/*-------------------------------------------------------------------------
 *
 * tr_metrics_se.c
 *	  Standard errors of the validation metrics, by the bootstrap.
 *
 * A score measured on a few dozen validation rows is noisy: the best of
 * many candidates is then partly the luckiest.  The leaderboard shows each
 * score with its standard error so that a user can tell a real lead from
 * noise (docs/results.md).  One method serves every metric, including the
 * ones without a closed form (ROC AUC, macro F1, R^2): resample the
 * validation rows with replacement, recompute the metric, and take the
 * standard deviation over the resamples.  For accuracy it agrees with the
 * binomial sqrt(p (1 - p) / n).
 *
 * The cost is bounded: SE_BOOTSTRAP resamples of at most SE_MAX_ROWS rows;
 * a larger validation set is resampled at SE_MAX_ROWS rows and the spread
 * scaled by sqrt(SE_MAX_ROWS / n), as the spread of a mean shrinks.  The
 * resamples come from a fixed seed, so a run's errors are reproducible.
 *
 * Plain C: no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_metrics_se.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "trainer.h"
#include "tr_metrics.h"

#define SE_BOOTSTRAP	64
#define SE_MAX_ROWS		4000

void
TrMetricsClearErrors(TrMetrics *m)
{
	for (int j = 0; j < TR_M__COUNT; j++)
		m->se[j] = m->quality_se[j] = NAN;
}

/* splitmix64: small, and the same sequence everywhere */
static uint64_t
NextRandom(uint64_t *state)
{
	uint64_t	z = (*state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* running sums of one quantity over the resamples */
typedef struct Spread
{
	double		sum;
	double		sumsq;
	int			n;
} Spread;

static void
SpreadAdd(Spread *s, double x)
{
	if (!isfinite(x))
		return;
	s->sum += x;
	s->sumsq += x * x;
	s->n++;
}

/* the standard deviation (ddof 1) of what was added; NaN when too few */
static double
SpreadSd(const Spread *s)
{
	double		mean,
				var;

	if (s->n < SE_BOOTSTRAP / 2)
		return NAN;				/* mostly undefined: no honest error */
	mean = s->sum / s->n;
	var = (s->sumsq - s->n * mean * mean) / (s->n - 1);
	return var > 0.0 ? sqrt(var) : 0.0;
}

void
TrMetricsStandardErrors(int n, int k, const int *y, const int *pred,
						const double *proba, const double *t,
						const double *fit, TrMetrics *m)
{
	int			size = n < SE_MAX_ROWS ? n : SE_MAX_ROWS;
	double		scale;
	int		   *ry = NULL,
			   *rp = NULL;
	double	   *rprob = NULL,
			   *rt = NULL,
			   *rf = NULL;
	Spread		v[TR_M__COUNT] = {{0}},
				q[TR_M__COUNT] = {{0}};
	uint64_t	state = 0x5EEDULL + (uint64_t) n;
	int			classification = pred != NULL;

	TrMetricsClearErrors(m);
	if (n < 2)
		return;
	scale = sqrt((double) size / n);
	if (classification)
	{
		ry = malloc(sizeof(int) * size);
		rp = malloc(sizeof(int) * size);
		if (proba != NULL)
			rprob = malloc(sizeof(double) * (size_t) size * k);
		if (ry == NULL || rp == NULL || (proba != NULL && rprob == NULL))
			goto done;
	}
	else
	{
		rt = malloc(sizeof(double) * size);
		rf = malloc(sizeof(double) * size);
		if (rt == NULL || rf == NULL)
			goto done;
	}

	for (int b = 0; b < SE_BOOTSTRAP; b++)
	{
		TrMetrics	r;

		for (int i = 0; i < size; i++)
		{
			int			src = (int) (NextRandom(&state) % (uint64_t) n);

			if (classification)
			{
				ry[i] = y[src];
				rp[i] = pred[src];
				for (int c = 0; rprob != NULL && c < k; c++)
					rprob[(size_t) i * k + c] = proba[(size_t) src * k + c];
			}
			else
			{
				rt[i] = t[src];
				rf[i] = fit[src];
			}
		}
		if (classification)
			TrClassificationMetrics(size, k, ry, rp, rprob, &r);
		else
			TrRegressionMetrics(size, rt, rf, &r);
		for (int j = 0; j < TR_M__COUNT; j++)
		{
			SpreadAdd(&v[j], r.v[j]);
			SpreadAdd(&q[j], TrMetricQuality(&r, j));
		}
	}
	for (int j = 0; j < TR_M__COUNT; j++)
	{
		if (!isfinite(m->v[j]))
			continue;
		m->se[j] = SpreadSd(&v[j]) * scale;
		m->quality_se[j] = SpreadSd(&q[j]) * scale;
	}
done:
	free(ry);
	free(rp);
	free(rprob);
	free(rt);
	free(rf);
}
