/*-------------------------------------------------------------------------
 *
 * data_test.c
 *	  Unit tests of the data handling (docs/data.md): the column encoders
 *	  (src/core/encode.c) and their fitting on training rows (tr_encode.c), and
 *	  the validation metrics (tr_metrics.c).  Called from tr_test.c's main.
 *
 * Reference values are worked out by hand in the comments (calendar days
 * were checked with Python's datetime), never copied from the code.
 *
 * IDENTIFICATION
 *	  src/trainer/test/data_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "trainer/trainer.h"
#include "trainer/tr_metrics.h"
#include "tr_test.h"


#define CLOSE(a, b) (fabs((a) - (b)) < 1e-9)

static void
TestDateParts(void)
{
	double		p[7];

	/* 2024-02-29 is day 19782, a Thursday (ISO weekday 3), day 60 */
	EncDateParts(19782 * 86400.0, 0, p);
	CHECK(p[0] == 2024 && p[1] == 2 && p[2] == 29 && p[3] == 3 && p[4] == 60 && p[5] == 19782,
		  "date parts of a leap day: %g-%g-%g weekday %g day %g", p[0], p[1], p[2], p[3], p[4]);
	/* 1969-12-31 23:30 is day -1, a Wednesday, day 365, hour 23.5 */
	EncDateParts(-1800.0, 1, p);
	CHECK(p[0] == 1969 && p[1] == 12 && p[2] == 31 && p[3] == 2 && p[4] == 365 &&
		  p[5] == -1 && CLOSE(p[6], 23.5), "timestamp parts before 1970 (hour %g)", p[6]);
	/* 1900-01-01 was a Monday; 2000-03-01 a Wednesday, day 61 */
	EncDateParts(-25567 * 86400.0, 0, p);
	CHECK(p[0] == 1900 && p[1] == 1 && p[2] == 1 && p[3] == 0 && p[4] == 1, "1900-01-01");
	EncDateParts(11017 * 86400.0 + 12.5 * 3600, 1, p);
	CHECK(p[0] == 2000 && p[1] == 3 && p[2] == 1 && p[3] == 2 && p[4] == 61 && CLOSE(p[6], 12.5),
		  "2000-03-01 12:30");
	EncDateParts(1e300, 1, p);
	CHECK(isfinite(p[0]) && isfinite(p[5]) && isfinite(p[6]), "a huge date is clamped, not overflowed");
}

/* a one-hot encoder over red < green < blue (sorted: blue, green, red) */
static void
ColourEncoder(Encoder *e, int indicator)
{
	static const char *const v[3] = {"blue", "green", "red"};

	memset(e, 0, sizeof(*e));
	e->kind = ENC_ONEHOT;
	e->n_slots = 3;
	e->fill_slot = 2;
	e->indicator = indicator;
	e->n_out = 3 + indicator;
	e->values = calloc(3, sizeof(char *));
	e->lens = calloc(3, sizeof(uint32_t));
	e->mean = calloc(e->n_out, sizeof(double));
	e->scale = calloc(e->n_out, sizeof(double));
	for (int i = 0; i < 3; i++)
	{
		e->values[i] = strdup(v[i]);
		e->lens[i] = (uint32_t) strlen(v[i]);
	}
	for (int j = 0; j < e->n_out; j++)
	{
		e->mean[j] = 0.25;
		e->scale[j] = 2.0;
	}
}

static void
TestEncoders(void)
{
	Encoder		e,
				r;
	double		raw[ENC_HASH_BUCKETS + 1];
	float		out[8],
				out2[8];
	unsigned char *buf;
	size_t		len;
	char		err[256];
	int			bad = 0,
				crashes_avoided = 0;

	ColourEncoder(&e, 1);
	CHECK(EncSlot(&e, "green", 5) == 1 && EncSlot(&e, "blue", 4) == 0 &&
		  EncSlot(&e, "red", 3) == 2 && EncSlot(&e, "gre", 3) == -1 &&
		  EncSlot(&e, "greenish", 8) == -1, "one-hot: sorted lookup, prefixes are other categories");
	CHECK(EncRaw(&e, NAN, "green", 5, raw) == 0 && raw[0] == 0 && raw[1] == 1 && raw[2] == 0 &&
		  raw[3] == 0, "one-hot: a known category sets its slot, indicator 0");
	CHECK(EncRaw(&e, NAN, "purple", 6, raw) == 1 && raw[0] == 0 && raw[1] == 0 && raw[2] == 0 &&
		  raw[3] == 0, "one-hot: an unknown category sets none and is reported");
	CHECK(EncRaw(&e, NAN, NULL, 0, raw) == 0 && raw[2] == 1 && raw[3] == 1,
		  "one-hot: a missing category is the most frequent, with the indicator");
	EncApply(&e, NAN, "green", 5, out);
	CHECK(out[0] == -0.5f && out[1] == 1.5f && out[3] == -0.5f, "one-hot: outputs are standardised");

	/* parameters round trip, and every truncation is refused */
	CHECK(EncWrite(&e, &buf, &len) == 0, "one-hot: parameters written (%zu bytes)", len);
	CHECK(EncRead(ENC_ONEHOT, 4, buf, len, &r, err, sizeof(err)) == 0 &&
		  EncApply(&r, NAN, "green", 5, out2) == 0 && memcmp(out, out2, sizeof(float) * 4) == 0 &&
		  EncSlot(&r, "red", 3) == 2, "one-hot: read back, it encodes the same (%s)", err);
	EncFree(&r);
	for (size_t cut = 0; cut < len; cut++)
		if (EncRead(ENC_ONEHOT, 4, buf, cut, &r, err, sizeof(err)) == 0)
		{
			bad++;
			EncFree(&r);
		}
	CHECK(bad == 0, "one-hot: all %zu truncations are refused", len);
	CHECK(EncRead(ENC_ONEHOT, 3, buf, len, &r, err, sizeof(err)) == ENC_BAD &&
		  strstr(err, "writes 4 features"), "a wrong width is refused (%s)", err);
	CHECK(EncRead(ENC_DATE, 4, buf, len, &r, err, sizeof(err)) == ENC_BAD,
		  "another kind's parameters are refused (%s)", err);
	/* every single-byte corruption either reads or is refused: never a crash */
	for (size_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++)
		{
			buf[i] ^= (unsigned char) (1 << bit);
			if (EncRead(ENC_ONEHOT, 4, buf, len, &r, err, sizeof(err)) == 0)
			{
				EncApply(&r, NAN, "green", 5, out2);
				EncFree(&r);
			}
			crashes_avoided++;
			buf[i] ^= (unsigned char) (1 << bit);
		}
	CHECK(crashes_avoided == (int) len * 8, "%d corrupted parameter blobs handled", crashes_avoided);
	/* unsorted categories would break the lookup: refused */
	free(e.values[0]);
	e.values[0] = strdup("zzz");
	e.lens[0] = 3;
	free(buf);
	EncWrite(&e, &buf, &len);
	CHECK(EncRead(ENC_ONEHOT, 4, buf, len, &r, err, sizeof(err)) == ENC_BAD &&
		  strstr(err, "sorted"), "unsorted categories are refused (%s)", err);
	free(buf);
	EncFree(&e);

	/* hashing: stable, in range, a missing value goes to the fill bucket */
	memset(&e, 0, sizeof(e));
	e.kind = ENC_HASHED;
	e.n_slots = ENC_HASH_BUCKETS;
	e.fill_slot = 5;
	{
		int			a = EncSlot(&e, "ticket 17", 9),
					same = 1,
					used[ENC_HASH_BUCKETS] = {0},
					nused = 0;
		char		s[32];

		for (int i = 0; i < 1000; i++)
		{
			snprintf(s, sizeof(s), "value %d", i);
			int			b = EncSlot(&e, s, strlen(s));

			same &= b >= 0 && b < ENC_HASH_BUCKETS;
			if (!used[b]++)
				nused++;
		}
		CHECK(a == EncSlot(&e, "ticket 17", 9) && same && nused == ENC_HASH_BUCKETS,
			  "hashing: deterministic, in range, 1000 values fill all %d buckets", nused);
	}
	e.n_out = ENC_HASH_BUCKETS;
	CHECK(EncRaw(&e, NAN, NULL, 0, raw) == 0, "hashing: a missing value has a bucket");

	/* numbers and dates: the fill replaces NaN, infinite dates are missing */
	memset(&e, 0, sizeof(e));
	e.kind = ENC_NUMERIC;
	e.fill = 7.5;
	e.indicator = 1;
	e.n_out = 2;
	EncRaw(&e, NAN, NULL, 0, raw);
	CHECK(raw[0] == 7.5 && raw[1] == 1, "numeric: a missing value is the fill, indicator 1");
	EncRaw(&e, 3.0, NULL, 0, raw);
	CHECK(raw[0] == 3.0 && raw[1] == 0, "numeric: a value passes, indicator 0");
	e.kind = ENC_DATE;
	e.fill = 0;
	e.n_out = 7;
	EncRaw(&e, INFINITY, NULL, 0, raw);
	CHECK(raw[0] == 1970 && raw[6] == 1, "date: 'infinity' counts as missing");
}

/* a table with a numeric column (with NaN) and a categorical one */
static void
SmallTable(TrTable *t, int n, int ncat)
{
	int			kinds[2] = {TR_COL_NUMERIC, TR_COL_CATEGORICAL};
	char		s[32];

	memset(t, 0, sizeof(*t));
	t->n = n;
	t->d = 2;
	t->kind = TR_KIND_CLASSIFICATION;
	t->X = calloc((size_t) n * 2, sizeof(double));
	t->labels = calloc(n, sizeof(char *));
	TrTableSetKinds(t, kinds);
	for (int i = 0; i < n; i++)
	{
		/* x: 1, 2, 2, 3, 4, NaN, ... ; categories c0..c(ncat-1), c0 most often */
		t->X[2 * i] = i % 6 == 5 ? NAN : (double) ((i % 6) - ((i % 6) >= 2));
		snprintf(s, sizeof(s), "c%d", (i % 3 == 0) ? 0 : i % ncat);
		t->X[2 * i + 1] = i % 10 == 9 ? NAN : TrCategoryCode(&t->cats[1], s, strlen(s));
		t->labels[i] = strdup(i % 2 ? "a" : "b");
	}
}

static void
TestFitEncoders(void)
{
	TrTable		t;
	TrPrepOptions o;
	Encoder		e;
	int		   *rows;
	char		err[256];
	double		mean = 0;
	int			n = 60;

	SmallTable(&t, n, 4);
	rows = malloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
		rows[i] = i;
	memset(&o, 0, sizeof(o));
	/* x over one cycle of six rows: 0, 1, 1, 2, 3 and NaN -> mean 1.4 */
	o.strategy = TR_IMPUTE_MEAN;
	CHECK(TrFitEncoder(&t, 0, rows, n, &o, 1, &e, err, sizeof(err)) == 0 &&
		  e.kind == ENC_NUMERIC && CLOSE(e.fill, 1.4) && e.indicator && e.n_out == 2,
		  "fit: mean fill %g and an indicator for a column with NaN", e.fill);
	{
		/* the training outputs are standardised to mean 0 */
		double		raw[2];
		float		z[2];

		for (int i = 0; i < n; i++)
		{
			EncRaw(&e, t.X[2 * i], NULL, 0, raw);
			EncApply(&e, t.X[2 * i], NULL, 0, z);
			mean += z[0];
		}
		CHECK(fabs(mean / n) < 1e-6, "fit: standardised training column has mean 0");
	}
	EncFree(&e);
	o.strategy = TR_IMPUTE_MEDIAN;
	TrFitEncoder(&t, 0, rows, n, &o, 1, &e, err, sizeof(err));
	CHECK(e.fill == 1, "fit: median fill %g", e.fill);
	EncFree(&e);
	o.strategy = TR_IMPUTE_MOST_FREQUENT;
	o.no_indicator = 1;
	TrFitEncoder(&t, 0, rows, n, &o, 1, &e, err, sizeof(err));
	CHECK(e.fill == 1 && !e.indicator && e.n_out == 1,
		  "fit: most frequent fill %g, no indicator when turned off", e.fill);
	EncFree(&e);
	o.no_indicator = 0;
	/* only the training rows count: the first five rows have no NaN */
	TrFitEncoder(&t, 0, rows, 5, &o, 1, &e, err, sizeof(err));
	CHECK(!e.indicator, "fit: no indicator when the training rows have no missing value");
	EncFree(&e);
	TrFitEncoder(&t, 0, rows, n, &o, 0, &e, err, sizeof(err));
	CHECK(!e.indicator, "fit: an image column never gets an indicator");
	EncFree(&e);

	/* categories: few -> one-hot sorted, the most frequent fills */
	CHECK(TrFitEncoder(&t, 1, rows, n, &o, 1, &e, err, sizeof(err)) == 0 &&
		  e.kind == ENC_ONEHOT && e.n_slots == 4 && strcmp(e.values[0], "c0") == 0 &&
		  strcmp(e.values[3], "c3") == 0 && e.fill_slot == 0 && e.indicator && e.n_out == 5,
		  "fit: 4 categories are one-hot, sorted, c0 fills, with an indicator");
	EncFree(&e);
	TrTableFree(&t);
	SmallTable(&t, 600, 200);
	free(rows);
	rows = malloc(sizeof(int) * 600);
	for (int i = 0; i < 600; i++)
		rows[i] = i;
	CHECK(TrFitEncoder(&t, 1, rows, 600, &o, 1, &e, err, sizeof(err)) == 0 &&
		  e.kind == ENC_HASHED && e.n_slots == ENC_HASH_BUCKETS &&
		  e.fill_slot == EncSlot(&e, "c0", 2) && e.n_out == ENC_HASH_BUCKETS + 1,
		  "fit: 200 categories are hashed, the most frequent's bucket fills");
	EncFree(&e);
	TrTableFree(&t);
	free(rows);
}

static void
TestMetrics(void)
{
	TrMetrics	m;
	int			y4[4] = {0, 0, 1, 1};
	int			p4[4] = {0, 1, 0, 1};
	double		pr4[8] = {0.9, 0.1, 0.6, 0.4, 0.65, 0.35, 0.2, 0.8};
	int			yb[4] = {0, 0, 0, 1};
	int			pb[4] = {0, 0, 0, 0};
	int			y3[6] = {0, 1, 2, 0, 1, 2};
	double		pr3[18] = {.8, .1, .1, .1, .7, .2, .1, .2, .7, .6, .3, .1, .2, .5, .3, .3, .3, .4};
	int			p3[6] = {0, 1, 2, 0, 1, 2};
	double		t[4] = {1, 2, 3, 4},
				f[4] = {1, 2, 3, 5};

	/* scikit-learn's roc_auc_score example: scores .1 .4 .35 .8 give 0.75 */
	TrClassificationMetrics(4, 2, y4, p4, pr4, &m);
	CHECK(CLOSE(m.v[TR_M_ROC_AUC], 0.75), "binary ROC AUC %g (0.75)", m.v[TR_M_ROC_AUC]);
	CHECK(CLOSE(m.v[TR_M_LOG_LOSS], -(log(0.9) + log(0.6) + log(0.35) + log(0.8)) / 4),
		  "log loss %g", m.v[TR_M_LOG_LOSS]);
	CHECK(CLOSE(TrMetricQuality(&m, TR_M_LOG_LOSS), exp(-m.v[TR_M_LOG_LOSS])),
		  "log loss quality is exp(-log loss)");
	CHECK(CLOSE(m.v[TR_M_ACCURACY], 0.5), "accuracy %g", m.v[TR_M_ACCURACY]);

	/* always class 0 on 3:1 data: accuracy .75, balanced .5, macro F1 3/7 */
	TrClassificationMetrics(4, 2, yb, pb, NULL, &m);
	CHECK(CLOSE(m.v[TR_M_ACCURACY], 0.75) && CLOSE(m.v[TR_M_BALANCED_ACCURACY], 0.5) &&
		  CLOSE(m.v[TR_M_MACRO_F1], 3.0 / 7.0),
		  "balanced accuracy %g and macro F1 %g of a majority guess",
		  m.v[TR_M_BALANCED_ACCURACY], m.v[TR_M_MACRO_F1]);
	CHECK(CLOSE(m.v[TR_M_ROC_AUC], 0.5) && m.v[TR_M_LOG_LOSS] > 8,
		  "without probabilities: hard predictions give AUC %g and a large log loss %g",
		  m.v[TR_M_ROC_AUC], m.v[TR_M_LOG_LOSS]);

	/* three classes: each class's own probability ranks it first -> 1 */
	TrClassificationMetrics(6, 3, y3, p3, pr3, &m);
	CHECK(CLOSE(m.v[TR_M_ROC_AUC], 1.0) && CLOSE(m.v[TR_M_MACRO_F1], 1.0),
		  "macro one-vs-rest AUC %g of separable scores", m.v[TR_M_ROC_AUC]);
	/* ties share their rank: equal scores give 0.5 */
	{
		int			yt[2] = {0, 1},
					pt[2] = {0, 0};
		double		prt[4] = {.5, .5, .5, .5};

		TrClassificationMetrics(2, 2, yt, pt, prt, &m);
		CHECK(CLOSE(m.v[TR_M_ROC_AUC], 0.5), "tied scores give AUC %g", m.v[TR_M_ROC_AUC]);
	}

	/* regression: errors 0,0,0,1 -> RMSE .5, MAE .25, R^2 1 - 1/5 */
	TrRegressionMetrics(4, t, f, &m);
	CHECK(CLOSE(m.v[TR_M_RMSE], 0.5) && CLOSE(m.v[TR_M_MAE], 0.25) && CLOSE(m.v[TR_M_R2], 0.8),
		  "regression: RMSE %g MAE %g R2 %g", m.v[TR_M_RMSE], m.v[TR_M_MAE], m.v[TR_M_R2]);
	/* the best constants: the mean (sd sqrt 1.25) and the median (MAE 1) */
	CHECK(CLOSE(TrMetricQuality(&m, TR_M_RMSE), 1 - 0.5 / sqrt(1.25)) &&
		  CLOSE(TrMetricQuality(&m, TR_M_MAE), 0.75) && CLOSE(TrMetricQuality(&m, TR_M_R2), 0.8),
		  "regression qualities: 1 - error / error of the best constant");
	TrRegressionMetrics(4, t, t, &m);
	CHECK(TrMetricQuality(&m, TR_M_RMSE) == 1 && TrMetricQuality(&m, TR_M_MAE) == 1,
		  "a perfect fit has quality 1");
	CHECK(TrMetricLookup("log_loss", TR_KIND_CLASSIFICATION) == TR_M_LOG_LOSS &&
		  TrMetricLookup("rmse", TR_KIND_CLASSIFICATION) < 0 &&
		  TrMetricLookup("mae", TR_KIND_REGRESSION) == TR_M_MAE,
		  "metric names by task kind");
}

/*
 * The bootstrap's standard errors: accuracy's agrees with the binomial
 * sqrt(p (1 - p) / n), it shrinks as the validation set grows (also past
 * the resample cap), it is the same on every call, and every metric of a
 * regression gets one
 */
static void
TestMetricErrors(void)
{
	static int	y[20000],
				pred[20000];
	static double t[400],
				fit[400];
	TrMetrics	m,
				again,
				big;
	double		binom = sqrt(0.8 * 0.2 / 100);

	for (int i = 0; i < 20000; i++)
	{
		y[i] = i % 2;
		pred[i] = (i % 10 < 8) ? y[i] : 1 - y[i];	/* 80% right */
	}
	TrClassificationMetrics(100, 2, y, pred, NULL, &m);
	TrMetricsStandardErrors(100, 2, y, pred, NULL, NULL, NULL, &m);
	CHECK(fabs(m.se[TR_M_ACCURACY] - binom) < 0.3 * binom,
		  "bootstrap SE of accuracy %g near the binomial %g", m.se[TR_M_ACCURACY], binom);
	CHECK(m.quality_se[TR_M_ACCURACY] == m.se[TR_M_ACCURACY] &&
		  isfinite(m.se[TR_M_MACRO_F1]) && isfinite(m.se[TR_M_ROC_AUC]),
		  "every classification metric has an error");
	TrClassificationMetrics(100, 2, y, pred, NULL, &again);
	TrMetricsStandardErrors(100, 2, y, pred, NULL, NULL, NULL, &again);
	CHECK(again.se[TR_M_ACCURACY] == m.se[TR_M_ACCURACY], "the bootstrap is reproducible");
	TrClassificationMetrics(20000, 2, y, pred, NULL, &big);
	TrMetricsStandardErrors(20000, 2, y, pred, NULL, NULL, NULL, &big);
	CHECK(fabs(big.se[TR_M_ACCURACY] - sqrt(0.16 / 20000)) < 0.3 * sqrt(0.16 / 20000),
		  "past the resample cap the SE %g still scales as 1/sqrt(n) (%g)",
		  big.se[TR_M_ACCURACY], sqrt(0.16 / 20000));
	TrMetricsStandardErrors(1, 2, y, pred, NULL, NULL, NULL, &again);
	CHECK(isnan(again.se[TR_M_ACCURACY]), "one row: no error");

	for (int i = 0; i < 400; i++)
	{
		t[i] = i % 17;
		fit[i] = t[i] + ((i % 3) - 1);
	}
	TrRegressionMetrics(400, t, fit, &m);
	TrMetricsStandardErrors(400, 0, NULL, NULL, NULL, t, fit, &m);
	CHECK(m.se[TR_M_R2] > 0 && m.se[TR_M_R2] < 0.05 && m.se[TR_M_RMSE] > 0 &&
		  m.quality_se[TR_M_RMSE] > 0 && m.se[TR_M_MAE] > 0,
		  "regression errors: R2 %g RMSE %g (quality %g) MAE %g", m.se[TR_M_R2],
		  m.se[TR_M_RMSE], m.quality_se[TR_M_RMSE], m.se[TR_M_MAE]);
}

/* TrPrepare encodes every row through EncApply; the artifact's encoders
 * reproduce the training features, and folds partition the rows */
static void
TestPrepareEncoded(void)
{
	TrTable		t;
	TrData		d;
	TrPrepOptions o;
	char		err[256];
	Encoder    *back = NULL;
	int			nback = 0;
	unsigned char *blob;
	size_t		len;
	int			same = 1;

	SmallTable(&t, 60, 4);
	memset(&o, 0, sizeof(o));
	o.val_fraction = 0.25;
	o.seed = 3;
	o.impute = 1;
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0 && d.d == 2 + 5 && d.n_encoders == 2,
		  "prepare: a number with NaN and 4 categories with NULLs give %d features (%s)", d.d, err);
	CHECK(EncListWrite(d.encoders, d.n_encoders, &blob, &len) == 0 &&
		  EncListRead(blob, len, &back, &nback, err, sizeof(err)) == 0 && nback == 2,
		  "prepare: the encoders round-trip (%s)", err);
	for (int i = 0; back != NULL && i < d.n_train; i++)
	{
		float		z[7];
		int			r = d.rows_tr[i];
		const char *s = TrCategoryValue(&t, 1, t.X[2 * r + 1]);

		EncApply(&back[0], t.X[2 * r], NULL, 0, z);
		EncApply(&back[1], NAN, s, s ? strlen(s) : 0, z + 2);
		same &= memcmp(z, d.Xtr + (size_t) i * d.d, sizeof(z)) == 0;
	}
	CHECK(same, "prepare: applying the stored encoders to raw rows gives the training features");
	{
		float		z[5];

		CHECK(EncApply(&back[1], NAN, "never seen", 10, z) == 1 &&
			  z[0] == (float) (-back[1].mean[0] * back[1].scale[0]),
			  "prepare: an unknown category at predict time sets no category");
	}
	for (int j = 0; j < nback; j++)
		EncFree(&back[j]);
	free(back);
	for (size_t cut = 0; cut < len; cut += 7)
	{
		if (EncListRead(blob, cut, &back, &nback, err, sizeof(err)) == 0)
			same = 0;
	}
	CHECK(same, "prepare: truncated encoder lists are refused");
	free(blob);
	TrDataFree(&d);

	/* five folds: disjoint validation sets that cover every row */
	{
		int			seen[60] = {0},
					ok = 1;

		o.folds = 5;
		for (int f = 0; f < 5; f++)
		{
			int			has_a = 0,
						has_b = 0;

			o.fold = f;
			ok &= TrPrepare(&t, &o, &d, err, sizeof(err)) == 0 && d.n_val == 12;
			for (int i = 0; i < d.n_val; i++)
			{
				seen[d.rows_va[i]]++;
				has_a |= d.yva[i] == 0;
				has_b |= d.yva[i] == 1;
			}
			ok &= has_a && has_b;
			TrDataFree(&d);
		}
		for (int i = 0; i < 60; i++)
			ok &= seen[i] == 1;
		CHECK(ok, "folds: 5 stratified folds of 12 rows, every row validated once");
		o.fold = 5;
		CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) != 0 && strstr(err, "fold 5 of 5"),
			  "folds: a fold out of range is refused (%s)", err);
	}
	TrTableFree(&t);
}

/*
 * train_all (a refit on every row, docs/results.md): the same split is
 * drawn, every row trains and the validation rows stay; a run fits once
 * even with folds, and its metrics say so
 */
static void
TestTrainAll(void)
{
	TrTable		t;
	TrData		split,
				all;
	TrPrepOptions o;
	TrResult	res;
	json_object *m = NULL,
			   *v;
	char		err[256];
	int			ok = 1;

	SmallTable(&t, 60, 4);
	memset(&o, 0, sizeof(o));
	o.val_fraction = 0.25;
	o.seed = 3;
	o.impute = 1;
	CHECK(TrPrepare(&t, &o, &split, err, sizeof(err)) == 0, "train_all: the split (%s)", err);
	o.train_all = 1;
	CHECK(TrPrepare(&t, &o, &all, err, sizeof(err)) == 0 && all.n_train == 60 &&
		  all.n_val == split.n_val && split.n_train + split.n_val == 60,
		  "train_all: every row trains (%d of 60), the validation rows stay (%d, the split has %d + %d) (%s)",
		  all.n_train, all.n_val, split.n_train, split.n_val, err);
	for (int i = 0; i < all.n_val && i < split.n_val; i++)
		ok &= all.rows_va[i] == split.rows_va[i] && all.yva[i] == split.yva[i];
	for (int i = 0; i < all.n_train; i++)
		ok &= all.rows_tr[i] == i;
	CHECK(ok, "train_all: the same validation rows, and the training rows are every row in order");
	TrDataFree(&split);
	TrDataFree(&all);

	/* a k-fold task's refit: one fit on every row */
	o.folds = 5;
	o.fold = 0;
	if (TrRunCandidate(&t, "softmax", NULL, &o, NULL, NULL, NULL, 1, &res, &m) != 0)
		printf("# train_all: %s\n", res.error);
	CHECK(m != NULL && json_object_object_get_ex(m, "n_train", &v) && json_object_get_int(v) == 60 &&
		  json_object_object_get_ex(m, "train_all", &v) && json_object_get_boolean(v) &&
		  !json_object_object_get_ex(m, "folds", &v) && res.artifact_len > 0,
		  "train_all: a 5-fold task's refit fits once on all 60 rows and stores its model");
	json_object_put(m);
	TrResultFree(&res);
	o.train_all = 0;
	if (TrRunCandidate(&t, "softmax", NULL, &o, NULL, NULL, NULL, 1, &res, &m) != 0)
		printf("# train_all: %s\n", res.error);
	CHECK(m != NULL && json_object_object_get_ex(m, "n_train", &v) && json_object_get_int(v) == 48 &&
		  !json_object_object_get_ex(m, "train_all", &v),
		  "train_all: without it, a 5-fold run's model trains on 48 of 60 rows");
	json_object_put(m);
	TrResultFree(&res);
	TrTableFree(&t);
}

void
TestData(void)
{
	TestDateParts();
	TestEncoders();
	TestFitEncoders();
	TestPrepareEncoded();
	TestTrainAll();
	TestMetrics();
	TestMetricErrors();
}
