/*-------------------------------------------------------------------------
 *
 * tr_rows.c
 *	  The compact rows of a loaded table (TrRows in trainer.h): four bytes
 *	  a numeric or categorical cell, written one row at a time as the
 *	  loader decodes it.
 *
 * The raw table used to hold every cell as a double, twice the float32
 * data the models train on, and the prepared copy came on top of it; the
 * trainer peaked at three to six times the data on Fashion-MNIST.  Here a
 * cell is stored as the float x - off[j], and TrPrepare() can write the
 * prepared rows over these (TrPrepOptions.take_rows), so a table costs
 * about its float32 size once.
 *
 * The offsets are chosen from the first TR_STAGE_ROWS rows, kept as
 * doubles until then: the median of each numeric column's values there
 * (0 for a column with none, and for categorical columns, whose codes are
 * small integers, exact in float).  Float keeps about seven significant
 * digits of x - off, so a column that varies little around a large value
 * loses nothing that matters to its standardised value, which is a float
 * anyway.  Date and timestamp columns are kept as doubles (W): a date's
 * seconds since 1970 need all their digits, or midnight rounds into the
 * day before.  A finite value beyond float's range after the offset is an
 * error naming the column, as it would be after standardisation.
 *
 * IDENTIFICATION
 *	  src/trainer/io/tr_rows.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sortutil.h"
#include "trainer/trainer.h"

#define TR_STAGE_ROWS 256

/*
 * Give an empty table (n = 0, d and col_kind set) compact rows.  0, or -1
 * when out of memory.
 */
int
TrRowsBegin(TrTable *tab)
{
	TrRows	   *r = calloc(1, sizeof(TrRows));
	int			d = tab->d;

	if (r == NULL)
		return -1;
	tab->rows = r;
	r->off = calloc(d > 0 ? d : 1, sizeof(double));
	r->wide = malloc(sizeof(int) * (d > 0 ? d : 1));
	r->stage = malloc(sizeof(double) * (size_t) TR_STAGE_ROWS * (d > 0 ? d : 1));
	if (r->off == NULL || r->wide == NULL || r->stage == NULL)
		return -1;
	for (int j = 0; j < d; j++)
	{
		int			kind = tab->col_kind ? tab->col_kind[j] : TR_COL_NUMERIC;

		r->wide[j] = kind == TR_COL_DATE || kind == TR_COL_TIMESTAMP ? r->nwide++ : -1;
	}
	return 0;
}

/* room for row index `row` in F and W */
static int
Reserve(TrRows *r, int d, long row)
{
	long		cap;
	float	   *F;

	if (row < r->cap)
		return 0;
	cap = r->cap ? r->cap * 2 : 4096;
	F = realloc(r->F, sizeof(float) * (size_t) cap * (d > 0 ? d : 1));
	if (F == NULL)
		return -1;
	r->F = F;
	if (r->nwide > 0)
	{
		double	   *W = realloc(r->W, sizeof(double) * (size_t) cap * r->nwide);

		if (W == NULL)
			return -1;
		r->W = W;
	}
	r->cap = cap;
	return 0;
}

/* store a row of doubles at index `row`, once the offsets are set */
static int
Store(TrTable *tab, long row, const double *x, char *err, size_t errlen)
{
	TrRows	   *r = tab->rows;
	int			d = tab->d;
	float	   *f;

	if (Reserve(r, d, row) != 0)
	{
		snprintf(err, errlen, "out of memory after %ld rows", row);
		return -1;
	}
	f = r->F + (size_t) row * d;
	for (int j = 0; j < d; j++)
	{
		if (r->nwide > 0 && r->wide[j] >= 0)
		{
			r->W[(size_t) row * r->nwide + r->wide[j]] = x[j];
			f[j] = 0.0f;
			continue;
		}
		f[j] = (float) (x[j] - r->off[j]);
		if (isinf(f[j]) && isfinite(x[j]))
		{
			const char *name = tab->feature_names ? tab->feature_names[j] : NULL;

			if (name != NULL)
				snprintf(err, errlen,
						 "feature column \"%s\" holds %g (data row %ld), beyond the range of float; rescale the column",
						 name, x[j], row + 1);
			else
				snprintf(err, errlen,
						 "feature column #%d holds %g (data row %ld), beyond the range of float; rescale the column",
						 j + 1, x[j], row + 1);
			return -1;
		}
	}
	return 0;
}

/* choose the offsets from the staged rows, then store those rows */
static int
Settle(TrTable *tab, char *err, size_t errlen)
{
	TrRows	   *r = tab->rows;
	int			d = tab->d,
				m = r->staged;
	double	   *col = malloc(sizeof(double) * (m > 0 ? m : 1));

	if (col == NULL)
	{
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int j = 0; j < d; j++)
	{
		int			k = 0;

		r->off[j] = 0.0;
		if (tab->col_kind != NULL && tab->col_kind[j] != TR_COL_NUMERIC)
			continue;
		for (int i = 0; i < m; i++)
			if (isfinite(r->stage[(size_t) i * d + j]))
				col[k++] = r->stage[(size_t) i * d + j];
		if (k > 0)
		{
			qsort(col, k, sizeof(double), CmpDouble);
			r->off[j] = col[k / 2];
		}
	}
	free(col);
	r->staged = -1;
	for (int i = 0; i < m; i++)
		if (Store(tab, i, r->stage + (size_t) i * d, err, errlen) != 0)
			return -1;
	free(r->stage);
	r->stage = NULL;
	return 0;
}

/*
 * Append row tab->n (d doubles, NaN = NULL; categorical cells hold codes);
 * the caller counts it in tab->n afterwards.  0, or -1 with err set.
 */
int
TrRowsAppend(TrTable *tab, const double *row, char *err, size_t errlen)
{
	TrRows	   *r = tab->rows;

	if (r->staged >= 0)
	{
		memcpy(r->stage + (size_t) r->staged * tab->d, row, sizeof(double) * tab->d);
		if (++r->staged == TR_STAGE_ROWS)
			return Settle(tab, err, errlen);
		return 0;
	}
	return Store(tab, tab->n, row, err, errlen);
}

/*
 * After the last row: store what is still staged and give back the rows
 * allocated beyond n.  0, or -1 with err set.
 */
int
TrRowsFinish(TrTable *tab, char *err, size_t errlen)
{
	TrRows	   *r = tab->rows;
	size_t		n = tab->n > 0 ? (size_t) tab->n : 1;

	if (r->staged >= 0 && Settle(tab, err, errlen) != 0)
		return -1;
	if (r->F != NULL && (long) n < r->cap)
	{
		float	   *F = realloc(r->F, sizeof(float) * n * (tab->d > 0 ? tab->d : 1));

		if (F != NULL)
			r->F = F;
		if (r->nwide > 0)
		{
			double	   *W = realloc(r->W, sizeof(double) * n * r->nwide);

			if (W != NULL)
				r->W = W;
		}
		r->cap = (long) n;
	}
	return 0;
}

void
TrRowsFree(TrRows *r)
{
	if (r == NULL)
		return;
	free(r->F);
	free(r->off);
	free(r->W);
	free(r->wide);
	free(r->stage);
	free(r);
}
