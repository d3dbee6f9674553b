/*-------------------------------------------------------------------------
 *
 * tr_encode.c
 *	  Fit a raw column's encoder (src/core/encode.h) on the training rows: the
 *	  value that replaces a missing one, whether the column gets a
 *	  missing-value indicator, its categories, and the standardisation of
 *	  every output.  Only training rows are looked at, so nothing about the
 *	  validation rows leaks into the model (docs/data.md).
 *
 * Rules:
 *	 - A missing value (NULL, NaN) is replaced by the training rows' mean,
 *	   median or most frequent value (tasks.impute; ties go to the smaller
 *	   value); a categorical column always uses its most frequent category.
 *	   A column with no value in the training rows fills with 0 (or its only
 *	   hash bucket).
 *	 - A column that has missing values among the training rows gets an
 *	   indicator output, unless indicators are off (tasks.missing_indicator)
 *	   or the task is an image.
 *	 - A categorical column with at most ENC_ONEHOT_MAX distinct training
 *	   values is one-hot encoded over them (sorted bytewise); with more it
 *	   is hashed into ENC_HASH_BUCKETS buckets.
 *	 - Each output is standardised like a numeric column: mean and
 *	   population standard deviation of the training rows, scale 0 for a
 *	   constant output.
 *
 * IDENTIFICATION
 *	  src/trainer/io/tr_encode.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "core/sortutil.h"
#include "trainer/trainer.h"

/* the fill of a numeric column: vals (n, sorted here) by strategy */
static double
NumericFill(double *vals, int n, int strategy)
{
	double		sum = 0.0,
				best;
	int			best_run = 0;

	if (n == 0)
		return 0.0;
	if (strategy == TR_IMPUTE_MEAN)
	{
		for (int i = 0; i < n; i++)
			sum += vals[i];
		return sum / n;
	}
	qsort(vals, n, sizeof(double), CmpDouble);
	if (strategy == TR_IMPUTE_MEDIAN)
		return n % 2 ? vals[n / 2] : 0.5 * (vals[n / 2 - 1] + vals[n / 2]);
	/* most frequent: the longest run of equal values, the first on a tie */
	best = vals[0];
	for (int i = 0; i < n;)
	{
		int			j = i;

		while (j < n && vals[j] == vals[i])
			j++;
		if (j - i > best_run)
		{
			best_run = j - i;
			best = vals[i];
		}
		i = j;
	}
	return best;
}

typedef struct CodeCount
{
	const char *value;
	long		count;
} CodeCount;

static int
CmpValue(const void *a, const void *b)
{
	const char *x = ((const CodeCount *) a)->value,
			   *y = ((const CodeCount *) b)->value;

	return strcmp(x, y);
}

/*
 * The categories of a categorical column over the training rows: one-hot
 * when few, hashed otherwise; fill_slot is the most frequent one's slot.
 */
static int
FitCategories(const TrTable *tab, int j, const int *rows, int nrows, Encoder *e)
{
	const TrCategories *c = &tab->cats[j];
	CodeCount  *cc = calloc(c->n > 0 ? c->n : 1, sizeof(CodeCount));
	int			k = 0,
				top = -1;

	if (cc == NULL)
		return -1;
	for (int i = 0; i < nrows; i++)
	{
		double		x = TrCell(tab, rows[i], j);

		if (!isnan(x))
			cc[(int) x].count++;
	}
	for (int code = 0; code < c->n; code++)
		if (cc[code].count > 0)
		{
			cc[k].value = c->values[code];
			cc[k++].count = cc[code].count;
		}
	qsort(cc, k, sizeof(CodeCount), CmpValue);
	for (int i = 0; i < k; i++)
		if (top < 0 || cc[i].count > cc[top].count)
			top = i;
	if (k >= 1 && k <= ENC_ONEHOT_MAX)
	{
		e->kind = ENC_ONEHOT;
		e->n_slots = k;
		e->fill_slot = top;
		e->values = calloc(k, sizeof(char *));
		e->lens = calloc(k, sizeof(uint32_t));
		if (e->values == NULL || e->lens == NULL)
		{
			free(cc);
			return -1;
		}
		for (int i = 0; i < k; i++)
		{
			e->lens[i] = (uint32_t) strlen(cc[i].value);
			if ((e->values[i] = strdup(cc[i].value)) == NULL)
			{
				free(cc);
				return -1;
			}
		}
	}
	else
	{
		/* many categories, or none in the training rows: hash them */
		e->kind = ENC_HASHED;
		e->n_slots = k > 0 ? ENC_HASH_BUCKETS : 1;
		e->fill_slot = 0;
		if (k > 0)
			e->fill_slot = EncSlot(e, cc[top].value, strlen(cc[top].value));
	}
	free(cc);
	return 0;
}

/* the raw value of a row for EncRaw: a number, or a category's string */
static void
RawValue(const TrTable *tab, int j, int row, double *num, const char **s)
{
	double		x = TrCell(tab, row, j);

	if (tab->col_kind != NULL && tab->col_kind[j] == TR_COL_CATEGORICAL)
	{
		*num = NAN;
		*s = TrCategoryValue(tab, j, x);
	}
	else
	{
		*num = x;
		*s = NULL;
	}
}

/* mean and scale of every output over the training rows */
static int
FitStandardisation(const TrTable *tab, int j, const int *rows, int nrows,
				   Encoder *e)
{
	double	   *raw = malloc(sizeof(double) * e->n_out);
	double	   *sq = calloc(e->n_out, sizeof(double));

	e->mean = calloc(e->n_out, sizeof(double));
	e->scale = calloc(e->n_out, sizeof(double));
	if (raw == NULL || sq == NULL || e->mean == NULL || e->scale == NULL)
	{
		free(raw);
		free(sq);
		return -1;
	}
	for (int pass = 0; pass < 2; pass++)
	{
		for (int i = 0; i < nrows; i++)
		{
			double		num;
			const char *s;

			RawValue(tab, j, rows[i], &num, &s);
			EncRaw(e, num, s, s ? strlen(s) : 0, raw);
			for (int o = 0; o < e->n_out; o++)
			{
				if (pass == 0)
					e->mean[o] += raw[o];
				else
					sq[o] += (raw[o] - e->mean[o]) * (raw[o] - e->mean[o]);
			}
		}
		if (pass == 0)
			for (int o = 0; o < e->n_out; o++)
				e->mean[o] = nrows > 0 ? e->mean[o] / nrows : 0.0;
	}
	free(raw);
	for (int o = 0; o < e->n_out; o++)
	{
		double		sd = nrows > 0 ? sqrt(sq[o] / nrows) : 0.0;

		if (!isfinite(sd) || !isfinite(e->mean[o]))
		{
			free(sq);
			return -2;
		}
		/* relative test: a column of 1e6 +- 1e-12 is constant in float */
		e->scale[o] = sd > 1e-12 * fmax(1.0, fabs(e->mean[o])) ? 1.0 / sd : 0.0;
	}
	free(sq);
	return 0;
}

/*
 * Fit the encoder of raw column j on the training rows rows[0..nrows-1].
 * indicator_ok is 0 for image tasks.  0, or -1 with err set (e is freed).
 */
int
TrFitEncoder(const TrTable *tab, int j, const int *rows, int nrows,
			 const TrPrepOptions *opt, int indicator_ok, Encoder *e,
			 char *err, size_t errlen)
{
	int			kind = tab->col_kind ? tab->col_kind[j] : TR_COL_NUMERIC;
	long		missing = 0;

	memset(e, 0, sizeof(*e));
	for (int i = 0; i < nrows; i++)
		missing += isnan(TrCell(tab, rows[i], j));
	e->indicator = missing > 0 && indicator_ok && !opt->no_indicator;
	if (kind == TR_COL_CATEGORICAL)
	{
		if (FitCategories(tab, j, rows, nrows, e) != 0)
			goto oom;
	}
	else
	{
		double	   *vals = malloc(sizeof(double) * (nrows > 0 ? nrows : 1));
		int			n = 0;

		if (vals == NULL)
			goto oom;
		for (int i = 0; i < nrows; i++)
		{
			double		x = TrCell(tab, rows[i], j);

			if (!isnan(x))
				vals[n++] = x;
		}
		e->kind = kind == TR_COL_DATE ? ENC_DATE :
			kind == TR_COL_TIMESTAMP ? ENC_TIMESTAMP : ENC_NUMERIC;
		e->fill = NumericFill(vals, n, opt->strategy);
		free(vals);
		if (!isfinite(e->fill))
			goto overflow;
	}
	e->n_out = EncParts(e->kind, e->n_slots) + e->indicator;
	switch (FitStandardisation(tab, j, rows, nrows, e))
	{
		case 0:
			return 0;
		case -2:
			goto overflow;
		default:
			goto oom;
	}
overflow:
	EncFree(e);
	snprintf(err, errlen,
			 "feature column \"%s\" has values too large for its variance to be computed; rescale the column",
			 tab->feature_names && tab->feature_names[j] ? tab->feature_names[j] : "?");
	return -1;
oom:
	EncFree(e);
	snprintf(err, errlen, "out of memory fitting the encoding of feature %d", j + 1);
	return -1;
}
