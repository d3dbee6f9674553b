/*-------------------------------------------------------------------------
 *
 * tr_prep.c
 *	  Turn a raw TrTable into TrData: drop rows without a target, split
 *	  into training and validation rows, impute and standardise.
 *
 * Rules (docs/models.md repeats them for users):
 *	 - Rows whose target is missing (NULL label, NaN target) are dropped and
 *	   counted; they cannot be scored.
 *	 - An infinite feature or target value is an error that names the
 *	   column: it almost always means corrupted input, and silently clipping
 *	   it would hide that.
 *	 - Classification: class names are sorted (strcmp) and numbered, and the
 *	   split is stratified: every class keeps (about) the same share of its
 *	   rows in validation, and at least one row of each class stays in
 *	   training.  Regression: a plain seeded split.
 *	 - With k folds (TrPrepOptions.folds), the rows are dealt to k
 *	   stratified folds and one of them is the validation split.
 *	 - Every raw column gets an encoder fitted on the training rows only
 *	   (tr_encode.c, src/core/encode.h), so no validation information leaks
 *	   into the model: a missing value's fill (mean, median or most
 *	   frequent) and indicator, categories (one-hot or hashed), date parts,
 *	   and the mean and standard deviation of each output.  A constant
 *	   output gets scale 0 (it carries no information) instead of a
 *	   division by zero.  Every row's features come from EncApply(), the
 *	   function easeml.predict() runs too.
 *	 - With imputation off (--no-impute), the first column holding a
 *	   missing value is reported instead.
 *	 - The output is checked to be finite as float, so a value that
 *	   overflows float (|x| > 3.4e38 after scaling) is also reported rather
 *	   than turning into a NaN score later.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_prep.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "trainer.h"

/* name of feature column j for messages */
static const char *
ColName(const TrTable *tab, int j, char *buf, size_t len)
{
	if (tab->feature_names != NULL && tab->feature_names[j] != NULL)
		return tab->feature_names[j];
	snprintf(buf, len, "#%d", j + 1);
	return buf;
}

static int
CmpStrPtr(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* position of s in the sorted array names[0..n-1], or -1 */
static int
FindName(char **names, int n, const char *s)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			c = strcmp(names[mid], s);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

void
TrTableFree(TrTable *tab)
{
	if (tab == NULL)
		return;
	if (tab->feature_names != NULL)
		for (int j = 0; j < tab->d; j++)
			free(tab->feature_names[j]);
	if (tab->labels != NULL)
		for (int i = 0; i < tab->n; i++)
			free(tab->labels[i]);
	if (tab->cats != NULL)
		for (int j = 0; j < tab->d; j++)
			TrCategoriesFree(&tab->cats[j]);
	free(tab->feature_names);
	free(tab->labels);
	free(tab->X);
	TrRowsFree(tab->rows);
	free(tab->t);
	free(tab->col_kind);
	free(tab->cats);
	memset(tab, 0, sizeof(*tab));
}

void
TrDataFree(TrData *data)
{
	if (data == NULL)
		return;
	if (data->class_names != NULL)
		for (int c = 0; c < data->n_classes; c++)
			free(data->class_names[c]);
	free(data->class_names);
	free(data->Xtr);
	free(data->Xva);
	free(data->ytr);
	free(data->yva);
	free(data->ttr);
	free(data->tva);
	free(data->mean);
	free(data->scale);
	free(data->rows_tr);
	free(data->rows_va);
	for (int j = 0; j < data->n_encoders; j++)
		EncFree(&data->encoders[j]);
	free(data->encoders);
	memset(data, 0, sizeof(*data));
}

/*
 * Stratified split of the usable rows.  cls[i] is the class id of usable
 * row i; on return is_val[i] says where it goes.  The number of validation
 * rows of class c is floor(f * n_c) plus one for the classes with the
 * largest remainders until the total is round(f * n); a class never gives
 * up its last training row.
 */
static int
StratifiedSplit(const int *cls, int n, int k, double frac, uint64_t seed,
				unsigned char *is_val, char *err, size_t errlen)
{
	int		   *count = calloc(k, sizeof(int));
	int		   *take = calloc(k, sizeof(int));
	double	   *rem = calloc(k, sizeof(double));
	int		   *start = calloc(k + 1, sizeof(int));
	int		   *order = malloc(sizeof(int) * (n > 0 ? n : 1));
	int		   *fill = calloc(k, sizeof(int));
	int			total,
				target;
	uint64_t	rng = seed;

	if (!count || !take || !rem || !start || !order || !fill)
	{
		snprintf(err, errlen, "out of memory while splitting %d rows", n);
		free(count);
		free(take);
		free(rem);
		free(start);
		free(order);
		free(fill);
		return -1;
	}
	for (int i = 0; i < n; i++)
		count[cls[i]]++;
	target = (int) floor(frac * n + 0.5);
	total = 0;
	for (int c = 0; c < k; c++)
	{
		double		want = frac * count[c];

		take[c] = (int) floor(want);
		if (take[c] > count[c] - 1)
			take[c] = count[c] > 0 ? count[c] - 1 : 0;
		rem[c] = want - take[c];
		total += take[c];
	}
	/* hand out the remaining validation rows by largest remainder */
	while (total < target)
	{
		int			best = -1;

		for (int c = 0; c < k; c++)
			if (take[c] < count[c] - 1 && (best < 0 || rem[c] > rem[best]))
				best = c;
		if (best < 0)
			break;
		take[best]++;
		rem[best] = -1.0;
		total++;
	}
	/* rows of each class in table order, then a seeded shuffle per class */
	for (int c = 0; c < k; c++)
		start[c + 1] = start[c] + count[c];
	for (int i = 0; i < n; i++)
		order[start[cls[i]] + fill[cls[i]]++] = i;
	memset(is_val, 0, (size_t) (n > 0 ? n : 0));
	for (int c = 0; c < k; c++)
	{
		TrShuffle(order + start[c], count[c], &rng);
		for (int j = 0; j < take[c]; j++)
			is_val[order[start[c] + j]] = 1;
	}
	free(count);
	free(take);
	free(rem);
	free(start);
	free(order);
	free(fill);
	return 0;
}

/* plain seeded split: a shuffled round(f * n) rows go to validation */
static int
PlainSplit(int n, double frac, uint64_t seed, unsigned char *is_val,
		   char *err, size_t errlen)
{
	int		   *order = malloc(sizeof(int) * (n > 0 ? n : 1));
	int			target = (int) floor(frac * n + 0.5);
	uint64_t	rng = seed;

	if (order == NULL)
	{
		snprintf(err, errlen, "out of memory while splitting %d rows", n);
		return -1;
	}
	for (int i = 0; i < n; i++)
		order[i] = i;
	TrShuffle(order, n, &rng);
	memset(is_val, 0, (size_t) (n > 0 ? n : 0));
	for (int i = 0; i < target; i++)
		is_val[order[i]] = 1;
	free(order);
	return 0;
}

/*
 * k-fold assignment of the usable rows: rows are shuffled (within their
 * class for classification, classes in order) and dealt to the folds in
 * turn, so every fold gets about n/k rows and its share of each class;
 * the rows of fold `fold` are the validation rows.  The assignment
 * depends only on the seed, so the k runs of a candidate see k disjoint
 * validation sets.
 */
static int
FoldSplit(const int *cls, int n, int k, int folds, int fold, uint64_t seed,
		  unsigned char *is_val, char *err, size_t errlen)
{
	int		   *order = malloc(sizeof(int) * (n > 0 ? n : 1));
	int			m = 0;
	uint64_t	rng = seed;

	if (order == NULL)
	{
		snprintf(err, errlen, "out of memory while splitting %d rows", n);
		return -1;
	}
	for (int c = 0; c < (cls != NULL ? k : 1); c++)
	{
		int			start = m;

		for (int i = 0; i < n; i++)
			if (cls == NULL || cls[i] == c)
				order[m++] = i;
		TrShuffle(order + start, m - start, &rng);
	}
	for (int i = 0; i < n; i++)
		is_val[order[i]] = (i % folds) == fold;
	free(order);
	return 0;
}

/*
 * The features of table row `row` into dst through the encoders (offset[j]:
 * where column j's outputs start).  Each cell is read before anything is
 * written at its place, so dst may be the row's own compact storage when
 * every column encodes to one number.  0, or -1 with err set.
 */
static int
EncodeRow(const TrTable *tab, TrData *out, const int *offset, int row,
		  float *dst, char *err, size_t errlen)
{
	char		nb[32];

	for (int j = 0; j < tab->d; j++)
	{
		double		x = TrCell(tab, row, j);
		const char *s = NULL;
		float	   *o = dst + offset[j];

		if (tab->col_kind != NULL && tab->col_kind[j] == TR_COL_CATEGORICAL)
			s = TrCategoryValue(tab, j, x);
		out->imputed_values += isnan(x);
		EncApply(&out->encoders[j], x, s, s ? strlen(s) : 0, o);
		for (int k = 0; k < out->encoders[j].n_out; k++)
			if (!isfinite(o[k]))
			{
				snprintf(err, errlen,
						 "feature column \"%s\" has a value too large to standardise in float (data row %d: %g)",
						 ColName(tab, j, nb, sizeof(nb)), row + 1, x);
				return -1;
			}
	}
	return 0;
}

/*
 * Write the prepared rows over the table's compact rows (opt->take_rows,
 * one split, every column one number wide): the validation rows are
 * encoded into their own array first, then the training rows move down
 * in table order (row rows_tr[i] >= i is read before row i is written)
 * and the array shrinks to them.  The peak is the table plus its
 * validation rows, instead of the table plus a copy of everything.
 */
static int
EncodeInPlace(const TrTable *tab, TrData *out, const int *offset,
			  char *err, size_t errlen)
{
	TrRows	   *r = tab->rows;
	int			d = out->d;
	float	   *Xtr;

	out->Xva = malloc(sizeof(float) * (size_t) out->n_val * d);
	if (out->Xva == NULL)
	{
		snprintf(err, errlen, "out of memory while preparing %d rows x %d features",
				 tab->n, d);
		return -1;
	}
	for (int i = 0; i < out->n_val; i++)
		if (EncodeRow(tab, out, offset, out->rows_va[i],
					  out->Xva + (size_t) i * d, err, errlen) != 0)
			return -1;
	/* from here on the table's features are being overwritten */
	r->taken = 1;
	for (int i = 0; i < out->n_train; i++)
		if (EncodeRow(tab, out, offset, out->rows_tr[i],
					  r->F + (size_t) i * d, err, errlen) != 0)
			return -1;
	Xtr = realloc(r->F, sizeof(float) * (size_t) out->n_train * d);
	out->Xtr = Xtr != NULL ? Xtr : r->F;
	r->F = NULL;
	r->cap = 0;
	return 0;
}

/*
 * Fit one encoder per raw column on the training rows (tr_encode.c) and
 * write every row's features through EncApply, the function predict runs.
 * Sets out->d (the encoded width), Xtr, Xva, the encoders and, for the
 * artifact, mean 0 and scale 1 per feature (the encoders standardise).
 */
static int
EncodeRows(const TrTable *tab, const TrPrepOptions *opt, TrData *out,
		   char *err, size_t errlen)
{
	int			d = tab->d,
				D = 0;
	int		   *offset = malloc(sizeof(int) * (d > 0 ? d : 1));
	int			rc = 0;

	out->encoders = calloc(d, sizeof(Encoder));
	if (offset == NULL || out->encoders == NULL)
		goto oom;
	out->n_encoders = d;
	for (int j = 0; j < d; j++)
	{
		if (TrFitEncoder(tab, j, out->rows_tr, out->n_train, opt, opt->channels <= 0,
						 &out->encoders[j], err, errlen) != 0)
		{
			free(offset);
			return -1;
		}
		offset[j] = D;
		D += out->encoders[j].n_out;
	}
	out->d = D;
	out->mean = calloc(D, sizeof(double));
	out->scale = malloc(sizeof(double) * D);
	if (!out->mean || !out->scale)
		goto oom;
	for (int o = 0; o < D; o++)
		out->scale[o] = 1.0;

	if (opt->take_rows && opt->folds <= 1 && tab->rows != NULL &&
		tab->rows->F != NULL && tab->rows->nwide == 0 && D == d)
	{
		rc = EncodeInPlace(tab, out, offset, err, errlen);
		free(offset);
		return rc;
	}

	out->Xtr = malloc(sizeof(float) * (size_t) out->n_train * D);
	out->Xva = malloc(sizeof(float) * (size_t) out->n_val * D);
	if (!out->Xtr || !out->Xva)
		goto oom;
	for (int i = 0; i < out->n_train && rc == 0; i++)
		rc = EncodeRow(tab, out, offset, out->rows_tr[i],
					   out->Xtr + (size_t) i * D, err, errlen);
	for (int i = 0; i < out->n_val && rc == 0; i++)
		rc = EncodeRow(tab, out, offset, out->rows_va[i],
					   out->Xva + (size_t) i * D, err, errlen);
	free(offset);
	return rc;
oom:
	free(offset);
	snprintf(err, errlen, "out of memory while preparing %d rows x %d features",
			 tab->n, d);
	return -1;
}

/* Format the reason into err; -1. */
static int
PrepError(char *err, size_t errlen, const char *fmt,...) pg_attribute_printf(3, 4);

static int
PrepError(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Rows, classes and split of one TrPrepare call. */
typedef struct PrepWork
{
	int			nu;				/* usable rows (with a target) */
	int		   *use;			/* usable row -> table row */
	int		   *cls;			/* usable row -> class id */
	unsigned char *is_val;		/* usable row -> in the validation split */
	char	  **names;			/* k sorted class names */
	int			k;
	int			ntr;
	int			nva;
} PrepWork;

static void
PrepWorkFree(PrepWork *w)
{
	if (w->names != NULL)
		for (int c = 0; c < w->k; c++)
			free(w->names[c]);
	free(w->names);
	free(w->use);
	free(w->cls);
	free(w->is_val);
}

/* What TrPrepare refuses before looking at rows: shape, kind, options, Inf. */
static int
CheckPrepInput(const TrTable *tab, const TrPrepOptions *opt, char *err, size_t errlen)
{
	int			n = tab->n,
				d = tab->d;
	char		nb[32];

	if (n <= 0 || d <= 0 || (tab->X == NULL && tab->rows == NULL))
		return PrepError(err, errlen, "the table has no rows or no feature columns (%d rows, %d features)",
						n, d);
	/* a caller bug: take_rows promised the table would not be read again */
	if (tab->rows != NULL && tab->rows->taken)
		return PrepError(err, errlen, "the table's rows were already handed to a prepared split");
	if (tab->kind != TR_KIND_CLASSIFICATION && tab->kind != TR_KIND_REGRESSION)
		return PrepError(err, errlen, "unknown task kind %d", tab->kind);
	if ((tab->kind == TR_KIND_CLASSIFICATION && tab->labels == NULL) ||
		(tab->kind == TR_KIND_REGRESSION && tab->t == NULL))
		return PrepError(err, errlen, "the table has no target column");
	if (opt->folds > 1 && (opt->folds > 100 || opt->fold < 0 || opt->fold >= opt->folds))
		return PrepError(err, errlen, "fold %d of %d does not exist", opt->fold, opt->folds);
	if (opt->fixed_split == NULL && opt->folds <= 1 &&
		!(opt->val_fraction > 0.0 && opt->val_fraction <= 0.9))
		return PrepError(err, errlen, "validation fraction %g is outside (0, 0.9]",
						opt->val_fraction);
	if ((opt->channels > 0 || opt->height > 0 || opt->width > 0) &&
		(opt->channels <= 0 || opt->height <= 0 || opt->width <= 0 ||
		 (long) opt->channels * opt->height * opt->width != d))
		return PrepError(err, errlen,
						"image shape %dx%dx%d (channels x height x width) does not match %d feature columns",
						opt->channels, opt->height, opt->width, d);
	/* Inf anywhere is corrupted input: report the first one */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			if (isinf(TrCell(tab, i, j)))
				return PrepError(err, errlen,
								"feature column \"%s\" holds an infinite value (data row %d); clean the data",
								ColName(tab, j, nb, sizeof(nb)), i + 1);
	return 0;
}

/* The rows with a target; an infinite regression target is an error. */
static int
UsableRows(const TrTable *tab, PrepWork *w, char *err, size_t errlen)
{
	for (int i = 0; i < tab->n; i++)
	{
		if (tab->kind == TR_KIND_CLASSIFICATION ? tab->labels[i] == NULL : isnan(tab->t[i]))
			continue;
		if (tab->kind == TR_KIND_REGRESSION && isinf(tab->t[i]))
			return PrepError(err, errlen,
							"the target holds an infinite value (data row %d); clean the data",
							i + 1);
		w->use[w->nu++] = i;
	}
	return 0;
}

/* Classes: the sorted distinct labels of the usable rows, and each row's. */
static int
FindClasses(const TrTable *tab, PrepWork *w)
{
	char	  **tmp = malloc(sizeof(char *) * (w->nu > 0 ? w->nu : 1));
	int			k = 0;

	if (tmp == NULL)
		return -1;
	for (int u = 0; u < w->nu; u++)
		tmp[u] = tab->labels[w->use[u]];
	qsort(tmp, w->nu, sizeof(char *), CmpStrPtr);
	for (int u = 0; u < w->nu; u++)
		if (k == 0 || strcmp(tmp[u], tmp[k - 1]) != 0)
			tmp[k++] = tmp[u];
	if ((w->names = calloc(k > 0 ? k : 1, sizeof(char *))) == NULL)
	{
		free(tmp);
		return -1;
	}
	w->k = k;
	for (int c = 0; c < k; c++)
		if ((w->names[c] = strdup(tmp[c])) == NULL)
		{
			free(tmp);
			return -1;
		}
	free(tmp);
	for (int u = 0; u < w->nu; u++)
		w->cls[u] = FindName(w->names, k, tab->labels[w->use[u]]);
	return 0;
}

/*
 * The split: a fixed one, a fold, stratified for classes, or plain; then
 * enough rows (and for classes, two classes) to train on.
 */
static int
SplitRows(const TrTable *tab, const TrPrepOptions *opt, PrepWork *w, char *err, size_t errlen)
{
	int			classify = tab->kind == TR_KIND_CLASSIFICATION;
	int			rc = 0;

	if (opt->fixed_split != NULL)
		for (int u = 0; u < w->nu; u++)
			w->is_val[u] = opt->fixed_split[w->use[u]] ? 1 : 0;
	else if (opt->folds > 1)
		rc = FoldSplit(classify ? w->cls : NULL, w->nu, w->k, opt->folds, opt->fold,
					   opt->seed, w->is_val, err, errlen);
	else if (classify)
		rc = StratifiedSplit(w->cls, w->nu, w->k, opt->val_fraction, opt->seed,
							 w->is_val, err, errlen);
	else
		rc = PlainSplit(w->nu, opt->val_fraction, opt->seed, w->is_val, err, errlen);
	if (rc != 0)
		return -1;
	for (int u = 0; u < w->nu; u++)
	{
		if (w->is_val[u])
			w->nva++;
		else
			w->ntr++;
	}
	if (w->ntr < 2 || w->nva < 1)
		return PrepError(err, errlen,
						"too few rows for a training/validation split: %d rows with a target (%d dropped for a missing target) give %d training and %d validation rows; need at least 2 and 1",
						w->nu, tab->n - w->nu, w->ntr, w->nva);
	if (classify)
	{
		int			seen = 0;
		unsigned char *has = calloc(w->k, 1);

		if (has == NULL)
			return PrepError(err, errlen, "out of memory while splitting %d rows", w->nu);
		for (int u = 0; u < w->nu; u++)
			if (!w->is_val[u] && !has[w->cls[u]])
			{
				has[w->cls[u]] = 1;
				seen++;
			}
		free(has);
		if (seen < 2)
			return PrepError(err, errlen,
							"the training split holds %d class(es); classification needs at least 2 (labels found: %d)",
							seen, w->k);
	}
	return 0;
}

/* With imputation off, a missing feature value is an error. */
static int
CheckMissing(const TrTable *tab, const TrPrepOptions *opt, const PrepWork *w,
			 char *err, size_t errlen)
{
	char		nb[32];

	if (opt->impute)
		return 0;
	for (int j = 0; j < tab->d; j++)
		for (int u = 0; u < w->nu; u++)
			if (isnan(TrCell(tab, w->use[u], j)))
			{
				long		m = 0;

				for (int v = 0; v < w->nu; v++)
					m += isnan(TrCell(tab, w->use[v], j)) ? 1 : 0;
				return PrepError(err, errlen,
								"feature column \"%s\" has %ld missing value(s) (first in data row %d); enable imputation or clean the data",
								ColName(tab, j, nb, sizeof(nb)), m, w->use[u] + 1);
			}
	return 0;
}

/* out's split: row indices and targets, in table order within each side. */
static int
FillSplit(const TrTable *tab, const TrPrepOptions *opt, PrepWork *w, TrData *out)
{
	int			classify = tab->kind == TR_KIND_CLASSIFICATION;
	int			itr = 0,
				iva = 0;

	/* train_all: every usable row trains, the validation rows stay */
	if (opt->train_all)
		w->ntr = w->nu;
	out->kind = tab->kind;
	out->n_train = w->ntr;
	out->n_val = w->nva;
	out->channels = opt->channels > 0 ? opt->channels : 0;
	out->height = opt->channels > 0 ? opt->height : 0;
	out->width = opt->channels > 0 ? opt->width : 0;
	out->rows_tr = malloc(sizeof(int) * w->ntr);
	out->rows_va = malloc(sizeof(int) * w->nva);
	if (classify)
	{
		out->n_classes = w->k;
		out->class_names = w->names;
		w->names = NULL;
		out->ytr = malloc(sizeof(int) * w->ntr);
		out->yva = malloc(sizeof(int) * w->nva);
	}
	else
	{
		out->ttr = malloc(sizeof(double) * w->ntr);
		out->tva = malloc(sizeof(double) * w->nva);
	}
	if (!out->rows_tr || !out->rows_va ||
		(classify ? (!out->ytr || !out->yva) : (!out->ttr || !out->tva)))
		return -1;
	for (int u = 0; u < w->nu; u++)
	{
		int			row = w->use[u];

		if (w->is_val[u])
		{
			out->rows_va[iva] = row;
			if (classify)
				out->yva[iva] = w->cls[u];
			else
				out->tva[iva] = tab->t[row];
			iva++;
		}
		if (!w->is_val[u] || opt->train_all)
		{
			out->rows_tr[itr] = row;
			if (classify)
				out->ytr[itr] = w->cls[u];
			else
				out->ttr[itr] = tab->t[row];
			itr++;
		}
	}
	return 0;
}

/*
 * TrPrepare: see the file header for the rules.  On failure out is left
 * zeroed (nothing to free) and err holds a one-line message.
 */
int
TrPrepare(const TrTable *tab, const TrPrepOptions *opt, TrData *out,
		  char *err, size_t errlen)
{
	PrepWork	w;
	int			n = tab->n;

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	if (CheckPrepInput(tab, opt, err, errlen) != 0)
		return -1;
	w.use = malloc(sizeof(int) * n);
	w.cls = malloc(sizeof(int) * n);
	w.is_val = malloc(n);
	if (!w.use || !w.cls || !w.is_val)
		goto oom;
	if (UsableRows(tab, &w, err, errlen) != 0)
		goto fail;
	out->missing_target_rows = n - w.nu;
	if (tab->kind == TR_KIND_CLASSIFICATION && w.nu > 0 && FindClasses(tab, &w) != 0)
		goto oom;
	if (SplitRows(tab, opt, &w, err, errlen) != 0 ||
		CheckMissing(tab, opt, &w, err, errlen) != 0)
		goto fail;
	if (FillSplit(tab, opt, &w, out) != 0)
		goto oom;
	/* the encoding, fitted on the training rows only, applied to all */
	if (EncodeRows(tab, opt, out, err, errlen) != 0)
		goto fail;
	PrepWorkFree(&w);
	return 0;

oom:
	snprintf(err, errlen, "out of memory while preparing %d rows x %d features",
			 n, tab->d);
fail:
	PrepWorkFree(&w);
	TrDataFree(out);
	return -1;
}
