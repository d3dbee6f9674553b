/*-------------------------------------------------------------------------
 *
 * tr_test.c
 *	  Unit tests of the trainer's machine-learning core (no PostgreSQL).
 *
 * Built by "make easeml-trainer-test" from every trainer source except
 * tr_main.c; "make trainer-unittest" builds and runs it.  Output is TAP
 * ("ok N - name" / "not ok N - name"); the exit status is the number of
 * failed checks (capped at 100).
 *
 * The data are synthetic and generated here with the trainer's own seeded
 * generator, so the tests need no files.  Closed-form references (naive
 * Bayes statistics, ridge normal equations, the softmax optimality
 * condition) are computed independently in plain double loops.  If
 * scikit-learn's iris.csv is installed (python3-sklearn) the families are
 * also checked on it; set EASEML_IRIS_CSV to point elsewhere, or to an
 * empty string to skip.
 *
 * IDENTIFICATION
 *	  src/trainer/test/tr_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer/trainer.h"
#include "tr_test.h"

int			test_no = 0;
int			failures = 0;


/* ---- data helpers ------------------------------------------------------- */

static void *
XMalloc(size_t n)
{
	void	   *p = calloc(1, n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(100);
	}
	return p;
}

static char *
XStrdup(const char *s)
{
	char	   *p = strdup(s);

	if (p == NULL)
		exit(100);
	return p;
}

static void
TableAlloc(TrTable *t, int n, int d, int kind)
{
	memset(t, 0, sizeof(*t));
	t->n = n;
	t->d = d;
	t->kind = kind;
	t->X = XMalloc(sizeof(double) * (size_t) n * d);
	t->feature_names = XMalloc(sizeof(char *) * d);
	for (int j = 0; j < d; j++)
	{
		char		buf[32];

		snprintf(buf, sizeof(buf), "x%d", j);
		t->feature_names[j] = XStrdup(buf);
	}
	if (kind == TR_KIND_CLASSIFICATION)
		t->labels = XMalloc(sizeof(char *) * n);
	else
		t->t = XMalloc(sizeof(double) * n);
}

static void
SetLabel(TrTable *t, int i, int c)
{
	static const char *names[] = {"alpha", "bravo", "charlie", "delta", "echo",
	"foxtrot", "golf", "hotel"};

	free(t->labels[i]);
	t->labels[i] = XStrdup(names[c]);
}

/* k well-separated Gaussian blobs in d dimensions, n rows */
static void
Blobs(TrTable *t, int n, int d, int k, double spread, uint64_t seed)
{
	uint64_t	rng = seed;
	double	   *centers = XMalloc(sizeof(double) * k * d);

	TableAlloc(t, n, d, TR_KIND_CLASSIFICATION);
	for (int c = 0; c < k; c++)
		for (int j = 0; j < d; j++)
			centers[c * d + j] = 6.0 * TrRandNormal(&rng);
	for (int i = 0; i < n; i++)
	{
		int			c = i % k;

		for (int j = 0; j < d; j++)
			t->X[(size_t) i * d + j] = centers[c * d + j] + spread * TrRandNormal(&rng) +
				(j == 0 ? 100.0 : 0.0);	/* an offset standardisation must remove */
		SetLabel(t, i, c);
	}
	free(centers);
}

/* two interleaved classes that need a non-linear boundary (XOR corners) */
static void
Xor(TrTable *t, int n, uint64_t seed)
{
	uint64_t	rng = seed;

	TableAlloc(t, n, 2, TR_KIND_CLASSIFICATION);
	for (int i = 0; i < n; i++)
	{
		double		a = TrRandUniform(&rng) * 2 - 1,
					b = TrRandUniform(&rng) * 2 - 1;

		t->X[2 * i] = a;
		t->X[2 * i + 1] = b;
		SetLabel(t, i, (a > 0) != (b > 0));
	}
}

/* y = 3 x0 - 2 x1 + 0.5 x2 + noise (+ a non-linear term if wanted) */
static void
Linear(TrTable *t, int n, int d, double noise, int nonlinear, uint64_t seed)
{
	uint64_t	rng = seed;

	TableAlloc(t, n, d, TR_KIND_REGRESSION);
	for (int i = 0; i < n; i++)
	{
		double	   *x = t->X + (size_t) i * d;

		for (int j = 0; j < d; j++)
			x[j] = TrRandNormal(&rng) * (j + 1);
		t->t[i] = 3 * x[0] - 2 * x[1] + (d > 2 ? 0.5 * x[2] : 0) +
			(nonlinear ? 2.0 * x[0] * x[0] : 0.0) + noise * TrRandNormal(&rng) + 10;
	}
}

static TrPrepOptions
Opts(double frac, uint64_t seed)
{
	TrPrepOptions o;

	memset(&o, 0, sizeof(o));
	o.val_fraction = frac;
	o.seed = seed;
	o.impute = 1;
	return o;
}

/* run a family through TrRunCandidate; returns its score or NaN on error */
static double
Run(const TrTable *t, const char *family, const char *params, uint64_t seed,
	TrResult *res)
{
	TrPrepOptions o = Opts(0.25, seed);
	json_object *p = params ? json_tokener_parse(params) : NULL;
	json_object *m = NULL;
	int			rc;

	rc = TrRunCandidate(t, family, p, &o, NULL, NULL, NULL, 1, res, &m);
	json_object_put(p);
	json_object_put(m);
	if (rc != 0)
	{
		printf("# %s: %s\n", family, res->error);
		return NAN;
	}
	return res->score;
}

static double
RunScore(const TrTable *t, const char *family, const char *params, uint64_t seed)
{
	TrResult	res;
	double		s = Run(t, family, params, seed, &res);

	TrResultFree(&res);
	return s;
}

/* expect TrRunCandidate to fail with a message containing 'needle' */
static int
FailsWith(const TrTable *t, const char *family, const char *params,
		  const TrPrepOptions *o, const char *needle)
{
	json_object *p = params ? json_tokener_parse(params) : NULL;
	json_object *m = NULL;
	TrResult	res;
	int			rc = TrRunCandidate(t, family, p, o, NULL, NULL, NULL, 1, &res, &m);
	int			ok = rc != 0 && strstr(res.error, needle) != NULL;

	if (!ok)
		printf("# expected an error with \"%s\", got rc %d: \"%s\"\n", needle, rc, res.error);
	json_object_put(p);
	json_object_put(m);
	TrResultFree(&res);
	return ok;
}

static int
PrepFailsWith(const TrTable *t, const TrPrepOptions *o, const char *needle)
{
	TrData		d;
	char		err[TR_ERRLEN] = "";
	int			rc = TrPrepare(t, o, &d, err, sizeof(err));

	if (rc == 0)
		TrDataFree(&d);
	if (rc == 0 || strstr(err, needle) == NULL)
	{
		printf("# expected a prepare error with \"%s\", got rc %d: \"%s\"\n", needle, rc, err);
		return 0;
	}
	return 1;
}

static const char *
WriteTemp(const char *content)
{
	static char path[64];
	int			fd;
	FILE	   *f;

	snprintf(path, sizeof(path), "/tmp/easeml-trtest-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
		exit(100);
	fputs(content, f);
	fclose(f);
	return path;
}

/* ---- tests -------------------------------------------------------------- */

static void
TestRng(void)
{
	uint64_t	s = 0;
	uint64_t	first = TrRandNext(&s);
	double		sum = 0,
				sq = 0;
	int			in_range = 1;

	/* reference value of splitmix64 from state 0 (Vigna's splitmix64.c) */
	CHECK(first == UINT64_C(0xe220a8397b1dcdaf), "splitmix64 first output from seed 0");
	s = 7;
	for (int i = 0; i < 100000; i++)
	{
		double		z = TrRandNormal(&s);
		uint64_t	r = TrRandBelow(&s, 7);
		double		u = TrRandUniform(&s);

		sum += z;
		sq += z * z;
		if (r >= 7 || u < 0 || u >= 1)
			in_range = 0;
	}
	CHECK(fabs(sum / 100000) < 0.02 && fabs(sq / 100000 - 1) < 0.02,
		  "normal deviates have mean 0 and variance 1 (%.4f, %.4f)", sum / 1e5, sq / 1e5);
	CHECK(in_range, "uniform in [0,1) and RandBelow in range");
}

static void
TestCsv(void)
{
	TrTable		t;
	char		err[TR_ERRLEN] = "";
	const char *p;
	int			rc;

	p = WriteTemp("\xEF\xBB\xBF" "a,\"b, quoted\",label\r\n1.5,2,\"x\"\"y\"\r\n,NA,z\r\n3,4e2,\r\n");
	rc = TrLoadCsv(p, "label", TR_KIND_CLASSIFICATION, &t, err, sizeof(err));
	CHECK(rc == 0 && t.n == 3 && t.d == 2, "csv: BOM, CRLF, quotes parse (%s)", rc ? err : "ok");
	if (rc == 0)
	{
		CHECK(strcmp(t.feature_names[1], "b, quoted") == 0, "csv: quoted header with a comma");
		CHECK(t.X[0] == 1.5 && t.X[1] == 2 && isnan(t.X[2]) && isnan(t.X[3]) &&
			  t.X[5] == 400, "csv: numbers, empty and NA cells are missing");
		CHECK(strcmp(t.labels[0], "x\"y") == 0 && t.labels[2] == NULL,
			  "csv: escaped quote in a label, empty label is missing");
		TrTableFree(&t);
	}
	unlink(p);

	p = WriteTemp("a,b,label\n1,2,x\nfoo,3,y\nNA,4,x\nfoo,5,y\n");
	rc = TrLoadCsv(p, "label", TR_KIND_CLASSIFICATION, &t, err, sizeof(err));
	CHECK(rc == 0 && t.col_kind != NULL && t.col_kind[0] == TR_COL_CATEGORICAL &&
		  t.col_kind[1] == TR_COL_NUMERIC && t.cats[0].n == 2 &&
		  strcmp(TrCategoryValue(&t, 0, t.X[0]), "1") == 0 &&
		  strcmp(TrCategoryValue(&t, 0, t.X[2]), "foo") == 0 && isnan(t.X[4]) &&
		  t.X[6] == t.X[2] && t.X[7] == 5,
		  "csv: a column with text is categorical, its missing cells NaN (%s)", rc ? err : "ok");
	if (rc == 0)
		TrTableFree(&t);
	unlink(p);
	p = WriteTemp("a,label\n1,x,3\n");
	rc = TrLoadCsv(p, "label", TR_KIND_CLASSIFICATION, &t, err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "more than 2 fields"), "csv: too many fields (%s)", err);
	unlink(p);
	p = WriteTemp("a,label\n1,\"x\n");
	rc = TrLoadCsv(p, "label", TR_KIND_CLASSIFICATION, &t, err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "unterminated"), "csv: unterminated quote (%s)", err);
	unlink(p);
	p = WriteTemp("a,label\n1,2\n");
	rc = TrLoadCsv(p, "target", TR_KIND_REGRESSION, &t, err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "\"target\" is not in the header"),
		  "csv: missing target column (%s)", err);
	unlink(p);
	p = WriteTemp("a,y\n1,abc\n");
	rc = TrLoadCsv(p, "y", TR_KIND_REGRESSION, &t, err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "not a number"), "csv: non-numeric regression target (%s)", err);
	unlink(p);
	rc = TrLoadCsv("/nonexistent/x.csv", "y", TR_KIND_REGRESSION, &t, err, sizeof(err));
	CHECK(rc != 0 && strstr(err, "could not open"), "csv: missing file (%s)", err);
	{
		/* each malformed file gets its own message */
		static const char *const bad[][2] = {
			{"a,label\n1,x\n2\n", "has 1 fields, the header has 2"},
			{"", "is empty"},
			{"a,label\n", "no data rows"},
			{"label\nx\n", "no feature columns"},
			{"a,LABEL\n1,x\n,y\n", NULL},	/* the target by name, any case */
		};

		for (int i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
		{
			p = WriteTemp(bad[i][0]);
			rc = TrLoadCsv(p, "label", TR_KIND_CLASSIFICATION, &t, err, sizeof(err));
			if (bad[i][1] == NULL)
			{
				CHECK(rc == 0 && t.n == 2 && t.d == 1 && isnan(t.X[1]),
					  "csv: target matched in any case (%s)", rc ? err : "ok");
				if (rc == 0)
					TrTableFree(&t);
			}
			else
				CHECK(rc != 0 && strstr(err, bad[i][1]), "csv: \"%s\" (%s)", bad[i][1], err);
			unlink(p);
		}
	}
}

static void
TestStratified(void)
{
	TrTable		t;
	TrData		d,
				d2,
				d3;
	TrPrepOptions o = Opts(0.2, 11);
	char		err[TR_ERRLEN] = "";
	int			cnt[3] = {0, 0, 0},
				vcnt[3] = {0, 0, 0},
				same = 1,
				differ = 0;

	/* 100 / 50 / 10 rows of classes alpha, bravo, charlie (in mixed order) */
	TableAlloc(&t, 160, 2, TR_KIND_CLASSIFICATION);
	for (int i = 0; i < 160; i++)
	{
		int			c = i % 16 < 10 ? 0 : (i % 16 < 15 ? 1 : 2);

		t.X[2 * i] = i;
		t.X[2 * i + 1] = c;
		SetLabel(&t, i, c);
		cnt[c]++;
	}
	CHECK(cnt[0] == 100 && cnt[1] == 50 && cnt[2] == 10, "stratified: fixture counts");
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0, "stratified: prepare (%s)", err);
	for (int i = 0; i < d.n_val; i++)
		vcnt[d.yva[i]]++;
	CHECK(d.n_val == 32 && vcnt[0] == 20 && vcnt[1] == 10 && vcnt[2] == 2,
		  "stratified: validation keeps class proportions (%d: %d/%d/%d)",
		  d.n_val, vcnt[0], vcnt[1], vcnt[2]);
	CHECK(d.n_classes == 3 && strcmp(d.class_names[0], "alpha") == 0 &&
		  strcmp(d.class_names[2], "charlie") == 0, "stratified: class names sorted");
	CHECK(TrPrepare(&t, &o, &d2, err, sizeof(err)) == 0, "stratified: prepare again");
	for (int i = 0; i < d.n_val; i++)
		same &= d.rows_va[i] == d2.rows_va[i];
	CHECK(same, "stratified: same seed, same split");
	o.seed = 12;
	CHECK(TrPrepare(&t, &o, &d3, err, sizeof(err)) == 0, "stratified: other seed");
	for (int i = 0; i < d.n_val; i++)
		differ |= d.rows_va[i] != d3.rows_va[i];
	CHECK(differ, "stratified: another seed gives another split");
	TrDataFree(&d);
	TrDataFree(&d2);
	TrDataFree(&d3);

	/* a class with a single row stays in training */
	SetLabel(&t, 0, 3);
	o.seed = 1;
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0, "stratified: singleton class");
	{
		int			in_val = 0;

		for (int i = 0; i < d.n_val; i++)
			in_val |= d.yva[i] == 3;
		CHECK(!in_val, "stratified: a one-row class is never only in validation");
	}
	TrDataFree(&d);
	TrTableFree(&t);
}

static void
TestStandardise(void)
{
	TrTable		t;
	TrData		d;
	TrPrepOptions o = Opts(0.3, 5);
	char		err[TR_ERRLEN] = "";
	double		mean = 0,
				var = 0,
				maxdev = 0;
	int			ntr;

	TableAlloc(&t, 200, 3, TR_KIND_REGRESSION);
	for (int i = 0; i < 200; i++)
	{
		t.X[3 * i] = i * 0.5 + 3;
		t.X[3 * i + 1] = 7.0;	/* constant */
		t.X[3 * i + 2] = (i % 10 == 0) ? NAN : i % 7;
		t.t[i] = i;
	}
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0, "standardise: prepare (%s)", err);
	ntr = d.n_train;
	/* reference statistics from the training rows only */
	for (int i = 0; i < ntr; i++)
		mean += t.X[3 * d.rows_tr[i]];
	mean /= ntr;
	for (int i = 0; i < ntr; i++)
		var += pow(t.X[3 * d.rows_tr[i]] - mean, 2);
	var /= ntr;
	CHECK(fabs(d.encoders[0].mean[0] - mean) < 1e-9 &&
		  fabs(d.encoders[0].scale[0] - 1 / sqrt(var)) < 1e-9,
		  "standardise: mean and scale from training rows only");
	for (int i = 0; i < d.n_val; i++)
		maxdev = fmax(maxdev, fabs(d.Xva[d.d * i] -
								   (t.X[3 * d.rows_va[i]] - mean) / sqrt(var)));
	CHECK(maxdev < 1e-5, "standardise: validation rows use the training statistics");
	{
		double		m2 = 0;

		for (int i = 0; i < ntr; i++)
			m2 += d.Xtr[d.d * i];
		CHECK(fabs(m2 / ntr) < 1e-5, "standardise: training column mean is 0");
	}
	{
		int			zero = 1;

		for (int i = 0; i < ntr; i++)
			zero &= d.Xtr[d.d * i + 1] == 0.0f;
		CHECK(d.encoders[1].scale[0] == 0.0 && zero, "standardise: constant column gets scale 0, values 0");
	}
	{
		int			ok = 1;
		long		nan_rows = 0;

		for (int i = 0; i < 200; i++)
			nan_rows += i % 10 == 0;
		for (int i = 0; i < ntr; i++)
			ok &= d.rows_tr[i] % 10 == 0 ?
				fabsf(d.Xtr[d.d * i + 2]) < 1e-6f && d.Xtr[d.d * i + 3] > 0 :
				d.Xtr[d.d * i + 3] < 0;
		CHECK(ok && d.imputed_values == nan_rows && d.d == 4,
			  "standardise: NaN imputed by the training mean (%ld cells), with an indicator",
			  d.imputed_values);
	}
	TrDataFree(&d);
	o.impute = 0;
	CHECK(PrepFailsWith(&t, &o, "feature column \"x2\" has 20 missing value(s)"),
		  "missing features without imputation name the column");
	TrTableFree(&t);
}

static void
TestBadInput(void)
{
	TrTable		t;
	TrPrepOptions o = Opts(0.25, 1);
	TrData		d;
	char		err[TR_ERRLEN] = "";

	Blobs(&t, 40, 3, 2, 1.0, 3);
	t.X[5] = INFINITY;
	CHECK(PrepFailsWith(&t, &o, "feature column \"x2\" holds an infinite value (data row 2)"),
		  "Inf feature is an error naming column and row");
	CHECK(FailsWith(&t, "softmax", NULL, &o, "infinite"), "Inf fails a run cleanly");
	t.X[5] = 1e300;
	t.X[8] = -1e300;
	CHECK(PrepFailsWith(&t, &o, "feature column \"x2\" has values too large"),
		  "values that overflow are an error naming the column, not NaN");
	t.X[5] = 1;
	t.X[8] = 1;
	free(t.labels[0]);
	t.labels[0] = NULL;
	free(t.labels[1]);
	t.labels[1] = NULL;
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0 && d.missing_target_rows == 2 &&
		  d.n_train + d.n_val == 38, "rows with a missing label are dropped and counted");
	TrDataFree(&d);
	o.val_fraction = 0.0;
	CHECK(PrepFailsWith(&t, &o, "outside (0, 0.9]"), "validation fraction checked");
	o.val_fraction = 0.25;
	o.channels = 1;
	o.height = 2;
	o.width = 2;
	CHECK(PrepFailsWith(&t, &o, "does not match 3 feature columns"), "image shape checked");
	TrTableFree(&t);

	/* too few rows; a single class */
	Blobs(&t, 2, 2, 2, 1.0, 3);
	o = Opts(0.2, 1);
	CHECK(PrepFailsWith(&t, &o, "too few rows"), "two rows are too few for a split");
	TrTableFree(&t);
	Blobs(&t, 30, 2, 1, 1.0, 3);
	CHECK(PrepFailsWith(&t, &o, "needs at least 2"), "one class is rejected");
	TrTableFree(&t);

	/* regression: Inf target, NaN targets */
	Linear(&t, 50, 3, 0.1, 0, 9);
	t.t[3] = INFINITY;
	CHECK(PrepFailsWith(&t, &o, "target holds an infinite value"), "Inf target rejected");
	t.t[3] = NAN;
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0 && d.missing_target_rows == 1,
		  "NaN regression target dropped");
	TrDataFree(&d);
	TrTableFree(&t);
}

static void
TestRequests(void)
{
	TrTable		t,
				r;
	TrPrepOptions o = Opts(0.25, 1);

	Blobs(&t, 60, 3, 3, 1.0, 4);
	Linear(&r, 60, 3, 0.1, 0, 4);
	CHECK(FailsWith(&t, "no_such_family", NULL, &o, "unknown model family \"no_such_family\""),
		  "unknown family is an error");
	CHECK(FailsWith(&r, "softmax", NULL, &o, "does not support regression"),
		  "classification-only family on a regression task");
	CHECK(FailsWith(&t, "cnn", NULL, &o, "needs an image shape"), "cnn without image shape");
	CHECK(FailsWith(&t, "softmax", "{\"l3\": 1}", &o, "unknown parameter \"l3\""),
		  "unknown parameter rejected");
	CHECK(FailsWith(&t, "knn", "{\"k\": \"five\"}", &o, "must be an integer"),
		  "mistyped parameter rejected");
	CHECK(FailsWith(&t, "knn", "{\"k\": 0}", &o, "outside"), "out-of-range parameter rejected");
	CHECK(FailsWith(&t, "knn", "{\"weights\": \"cosine\"}", &o, "must be one of"),
		  "bad choice rejected");
	CHECK(FailsWith(&t, "mlp", "{\"hidden\": [8, 8, 8, 8, 8]}", &o, "1 to 4 hidden layers"),
		  "too many hidden layers rejected");
	CHECK(FailsWith(&t, "mlp", "{\"hidden\": [8, -1]}", &o, "entries must be integers"),
		  "bad hidden layer size rejected");
	TrTableFree(&t);
	TrTableFree(&r);
}

/* GNB: compare with statistics computed here in plain loops */
static void
TestGnbClosedForm(void)
{
	TrTable		t;
	TrData		d;
	TrPrepOptions o = Opts(0.3, 2);
	TrContext	ctx;
	TrResult	res;
	char		err[TR_ERRLEN] = "";
	int			k,
				dd,
				hits = 0;
	double		maxerr = 0,
				eps = 0;
	const TrFamily *fam = TrFamilyLookup("gnb");

	Blobs(&t, 300, 4, 3, 3.0, 21);
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0, "gnb: prepare");
	k = d.n_classes;
	dd = d.d;
	memset(&ctx, 0, sizeof(ctx));
	ctx.data = &d;
	ctx.seed = 1;
	ctx.threads = 1;
	TrResultInit(&res);
	CHECK(fam->fit(&ctx, &res) == 0, "gnb: fit (%s)", res.error);
	{
		double		mu[8][8] = {{0}},
					var[8][8] = {{0}},
					n_c[8] = {0},
					colm[8] = {0},
					colv[8] = {0};
		int64_t		dims[2];
		int			dt,
					nd;
		const void *pt = TrArtifactFind(res.artifact, res.artifact_len, "theta", &dt, &nd, dims);
		const void *pv = TrArtifactFind(res.artifact, res.artifact_len, "var", &dt, &nd, dims);

		for (int i = 0; i < d.n_train; i++)
		{
			n_c[d.ytr[i]]++;
			for (int j = 0; j < dd; j++)
			{
				mu[d.ytr[i]][j] += d.Xtr[i * dd + j];
				colm[j] += d.Xtr[i * dd + j];
			}
		}
		for (int c = 0; c < k; c++)
			for (int j = 0; j < dd; j++)
				mu[c][j] /= n_c[c];
		for (int j = 0; j < dd; j++)
			colm[j] /= d.n_train;
		for (int i = 0; i < d.n_train; i++)
			for (int j = 0; j < dd; j++)
			{
				var[d.ytr[i]][j] += pow(d.Xtr[i * dd + j] - mu[d.ytr[i]][j], 2);
				colv[j] += pow(d.Xtr[i * dd + j] - colm[j], 2) / d.n_train;
			}
		for (int j = 0; j < dd; j++)
			eps = fmax(eps, colv[j]);
		eps *= 1e-9;
		for (int c = 0; c < k; c++)
			for (int j = 0; j < dd; j++)
			{
				double		a,
							b;

				var[c][j] = var[c][j] / n_c[c] + eps;
				memcpy(&a, (const double *) pt + c * dd + j, 8);
				memcpy(&b, (const double *) pv + c * dd + j, 8);
				maxerr = fmax(maxerr, fabs(a - mu[c][j]) + fabs(b - var[c][j]));
			}
		CHECK(pt && pv && dims[0] == k && dims[1] == dd && maxerr < 1e-9,
			  "gnb: means and variances match the closed form (err %.2g)", maxerr);
		/* predictions from the closed form */
		for (int i = 0; i < d.n_val; i++)
		{
			int			best = 0;
			double		bs = -INFINITY;

			for (int c = 0; c < k; c++)
			{
				double		s = log(n_c[c] / d.n_train);

				for (int j = 0; j < dd; j++)
					s -= 0.5 * log(2 * M_PI * var[c][j]) +
						0.5 * pow(d.Xva[i * dd + j] - mu[c][j], 2) / var[c][j];
				if (s > bs)
				{
					bs = s;
					best = c;
				}
			}
			hits += best == d.yva[i];
		}
		CHECK(fabs(res.score - (double) hits / d.n_val) < 1e-12,
			  "gnb: validation accuracy equals the closed-form classifier's (%.4f)", res.score);
	}
	TrResultFree(&res);
	TrDataFree(&d);
	TrTableFree(&t);
}

/* ridge regression with 2 features: solve the 2x2 normal equations here */
static void
TestRidgeClosedForm(void)
{
	TrTable		t;
	TrData		d;
	TrPrepOptions o = Opts(0.25, 3);
	TrContext	ctx;
	TrResult	res;
	char		err[TR_ERRLEN] = "";
	double		alpha = 2.5;
	json_object *p = json_object_new_object();
	const TrFamily *fam = TrFamilyLookup("ridge");

	json_object_object_add(p, "alpha", json_object_new_double(alpha));
	Linear(&t, 120, 2, 1.0, 0, 17);
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0, "ridge: prepare");
	memset(&ctx, 0, sizeof(ctx));
	ctx.data = &d;
	ctx.params = p;
	ctx.threads = 1;
	TrResultInit(&res);
	CHECK(fam->fit(&ctx, &res) == 0, "ridge: fit (%s)", res.error);
	{
		double		mx[2] = {0},
					my = 0,
					a = 0,
					b = 0,
					c = 0,
					r0 = 0,
					r1 = 0,
					det,
					w0,
					w1,
					b0,
					W[2],
					B,
					ss = 0,
					st = 0,
					mt = 0;
		int			n = d.n_train;

		for (int i = 0; i < n; i++)
		{
			mx[0] += d.Xtr[2 * i];
			mx[1] += d.Xtr[2 * i + 1];
			my += d.ttr[i];
		}
		mx[0] /= n;
		mx[1] /= n;
		my /= n;
		for (int i = 0; i < n; i++)
		{
			double		x0 = d.Xtr[2 * i] - mx[0],
						x1 = d.Xtr[2 * i + 1] - mx[1],
						y = d.ttr[i] - my;

			a += x0 * x0;
			b += x0 * x1;
			c += x1 * x1;
			r0 += x0 * y;
			r1 += x1 * y;
		}
		a += alpha;
		c += alpha;
		det = a * c - b * b;
		w0 = (c * r0 - b * r1) / det;
		w1 = (a * r1 - b * r0) / det;
		b0 = my - mx[0] * w0 - mx[1] * w1;
		memcpy(W, TrArtifactFind(res.artifact, res.artifact_len, "W", NULL, NULL, NULL), 16);
		memcpy(&B, TrArtifactFind(res.artifact, res.artifact_len, "b", NULL, NULL, NULL), 8);
		CHECK(fabs(W[0] - w0) < 1e-8 * fabs(w0) + 1e-10 && fabs(W[1] - w1) < 1e-8 * fabs(w1) + 1e-10 &&
			  fabs(B - b0) < 1e-8 * fabs(b0),
			  "ridge: weights match the normal equations (%.6f %.6f %.6f)", W[0], W[1], B);
		for (int i = 0; i < d.n_val; i++)
			mt += d.tva[i] / d.n_val;
		for (int i = 0; i < d.n_val; i++)
		{
			double		yhat = b0 + w0 * d.Xva[2 * i] + w1 * d.Xva[2 * i + 1];

			ss += pow(d.tva[i] - yhat, 2);
			st += pow(d.tva[i] - mt, 2);
		}
		CHECK(fabs(res.r2 - (1 - ss / st)) < 1e-9 && res.score == res.r2 &&
			  fabs(res.rmse - sqrt(ss / d.n_val)) < 1e-9,
			  "ridge: R^2 and RMSE match (%.6f)", res.r2);
	}
	TrResultFree(&res);
	TrDataFree(&d);
	TrTableFree(&t);
	json_object_put(p);

	/* alpha = 0 with a duplicated column: the SVD fallback, no NaN */
	Linear(&t, 80, 3, 0.5, 0, 5);
	for (int i = 0; i < 80; i++)
	{
		t.X[3 * i + 2] = t.X[3 * i];
		t.t[i] = 3 * t.X[3 * i] - 2 * t.X[3 * i + 1] + 10 + 0.3 * sin(i);
	}
	{
		double		s = RunScore(&t, "ridge", "{\"alpha\": 0}", 1);

		CHECK(isfinite(s) && s > 0.98, "ridge: collinear columns with alpha 0 (R^2 %.4f)", s);
	}
	TrTableFree(&t);
}

/* softmax: at the optimum the gradient of the objective vanishes */
static void
TestSoftmaxOptimality(void)
{
	TrTable		t;
	TrData		d;
	TrPrepOptions o = Opts(0.25, 3);
	TrContext	ctx;
	TrResult	res;
	char		err[TR_ERRLEN] = "";
	double		l2 = 1e-2;
	json_object *p = json_object_new_object();
	const TrFamily *fam = TrFamilyLookup("softmax");

	json_object_object_add(p, "l2", json_object_new_double(l2));
	json_object_object_add(p, "tol", json_object_new_double(1e-6));
	json_object_object_add(p, "max_iter", json_object_new_int(500));
	Blobs(&t, 300, 4, 3, 4.0, 8);
	CHECK(TrPrepare(&t, &o, &d, err, sizeof(err)) == 0, "softmax: prepare");
	memset(&ctx, 0, sizeof(ctx));
	ctx.data = &d;
	ctx.params = p;
	ctx.threads = 1;
	TrResultInit(&res);
	CHECK(fam->fit(&ctx, &res) == 0, "softmax: fit (%s)", res.error);
	{
		int			k = d.n_classes,
					dd = d.d;
		double		W[16 * 8],
					b[8],
					gW[16 * 8] = {0},
					gb[8] = {0},
					gmax = 0;

		memcpy(W, TrArtifactFind(res.artifact, res.artifact_len, "W", NULL, NULL, NULL),
			   sizeof(double) * dd * k);
		memcpy(b, TrArtifactFind(res.artifact, res.artifact_len, "b", NULL, NULL, NULL),
			   sizeof(double) * k);
		for (int i = 0; i < d.n_train; i++)
		{
			double		z[8],
						mx = -INFINITY,
						s = 0;

			for (int c = 0; c < k; c++)
			{
				z[c] = b[c];
				for (int j = 0; j < dd; j++)
					z[c] += d.Xtr[i * dd + j] * W[j * k + c];
				mx = fmax(mx, z[c]);
			}
			for (int c = 0; c < k; c++)
				s += exp(z[c] - mx);
			for (int c = 0; c < k; c++)
			{
				double		r = exp(z[c] - mx) / s - (c == d.ytr[i]);

				gb[c] += r / d.n_train;
				for (int j = 0; j < dd; j++)
					gW[j * k + c] += r * d.Xtr[i * dd + j] / d.n_train;
			}
		}
		for (int q = 0; q < dd * k; q++)
			gmax = fmax(gmax, fabs(gW[q] + l2 * W[q]));
		for (int c = 0; c < k; c++)
			gmax = fmax(gmax, fabs(gb[c]));
		CHECK(gmax < 1e-4, "softmax: gradient at the solution is ~0 (max %.2g, %d iterations)",
			  gmax, res.epochs);
	}
	TrResultFree(&res);
	TrDataFree(&d);
	TrTableFree(&t);
	json_object_put(p);
}

static void
TestFamiliesLearn(void)
{
	TrTable		blobs,
				xor,
				lin,
				nonlin;
	static const char *cls_families[] = {"softmax", "mlp", "gnb", "knn", "linear_svm",
	"ridge", "random_forest", "gbt"};
	static const char *reg_families[] = {"ridge", "mlp", "knn", "random_forest", "gbt"};

	Blobs(&blobs, 400, 6, 4, 1.5, 31);
	for (int f = 0; f < 8; f++)
	{
		double		s = RunScore(&blobs, cls_families[f], NULL, 1);

		CHECK(s >= 0.97, "%s separates 4 blobs (accuracy %.4f)", cls_families[f], s);
	}
	Xor(&xor, 600, 5);
	{
		static const char *nl[] = {"mlp", "knn", "random_forest", "gbt"};

		for (int f = 0; f < 4; f++)
		{
			double		s = RunScore(&xor, nl[f], NULL, 2);

			CHECK(s >= 0.9, "%s learns XOR (accuracy %.4f)", nl[f], s);
		}
		CHECK(RunScore(&xor, "softmax", NULL, 2) < 0.75, "softmax cannot learn XOR (sanity)");
	}
	Linear(&lin, 500, 4, 0.5, 0, 9);
	for (int f = 0; f < 5; f++)
	{
		double		s = RunScore(&lin, reg_families[f], NULL, 1);

		CHECK(s >= (f == 0 ? 0.99 : 0.8), "%s fits a linear target (R^2 %.4f)",
			  reg_families[f], s);
	}
	Linear(&nonlin, 600, 2, 0.3, 1, 10);
	{
		static const char *nl[] = {"mlp", "random_forest", "gbt", "knn"};

		for (int f = 0; f < 4; f++)
		{
			double		s = RunScore(&nonlin, nl[f], NULL, 1);

			CHECK(s >= 0.85, "%s fits a quadratic target (R^2 %.4f)", nl[f], s);
		}
	}
	{
		/* svm hinge loss and knn distance weights run too */
		double		s1 = RunScore(&blobs, "linear_svm", "{\"loss\": \"hinge\", \"C\": 0.5}", 1);
		double		s2 = RunScore(&blobs, "knn", "{\"k\": 7, \"weights\": \"distance\"}", 1);
		double		s3 = RunScore(&blobs, "mlp", "{\"hidden\": [32, 16], \"epochs\": 30}", 1);

		CHECK(s1 >= 0.97 && s2 >= 0.97 && s3 >= 0.97,
			  "variants: hinge svm %.3f, distance knn %.3f, 2-layer mlp %.3f", s1, s2, s3);
	}
	TrTableFree(&blobs);
	TrTableFree(&xor);
	TrTableFree(&lin);
	TrTableFree(&nonlin);
}

/* 8x8 one-channel images: class = quadrant holding a bright 3x3 square */
static void
TestCnn(void)
{
	TrTable		t;
	TrPrepOptions o = Opts(0.25, 4);
	uint64_t	rng = 77;
	json_object *p = json_tokener_parse("{\"filters\": [8, 8], \"hidden\": 16, \"epochs\": 8, \"batch\": 32}");
	json_object *m = NULL;
	TrResult	res;
	int			rc;

	TableAlloc(&t, 400, 64, TR_KIND_CLASSIFICATION);
	for (int i = 0; i < 400; i++)
	{
		int			c = i % 4,
					y0 = (c / 2) * 4 + (int) TrRandBelow(&rng, 2),
					x0 = (c % 2) * 4 + (int) TrRandBelow(&rng, 2);

		for (int q = 0; q < 64; q++)
			t.X[i * 64 + q] = TrRandUniform(&rng) * 0.3;
		for (int dy = 0; dy < 3; dy++)
			for (int dx = 0; dx < 3; dx++)
				t.X[i * 64 + (y0 + dy) * 8 + x0 + dx] += 1.0;
		SetLabel(&t, i, c);
	}
	o.channels = 1;
	o.height = 8;
	o.width = 8;
	rc = TrRunCandidate(&t, "cnn", p, &o, NULL, NULL, NULL, 1, &res, &m);
	CHECK(rc == 0 && res.score >= 0.95, "cnn learns where the square is (accuracy %.4f%s%s)",
		  res.score, rc ? ": " : "", rc ? res.error : "");
	TrResultFree(&res);
	json_object_put(m);
	json_object_put(p);
	CHECK(FailsWith(&t, "cnn", "{\"kernel\": 4}", &o, "kernel must be odd"), "cnn: even kernel rejected");
	TrTableFree(&t);
}

static void
TestDeterminism(void)
{
	TrTable		t,
				r;
	static const char *fams[] = {"softmax", "mlp", "gnb", "knn", "linear_svm", "ridge",
	"random_forest", "gbt"};

	Blobs(&t, 300, 5, 3, 3.0, 41);
	Linear(&r, 200, 4, 1.0, 1, 42);
	for (int f = 0; f < 8; f++)
	{
		TrResult	a,
					b;
		double		sa = Run(&t, fams[f], NULL, 9, &a);
		double		sb = Run(&t, fams[f], NULL, 9, &b);

		CHECK(sa == sb && (a.train_loss == b.train_loss || isnan(a.train_loss)),
			  "%s: same seed, same score (%.6f)", fams[f], sa);
		CHECK(a.artifact_len == b.artifact_len &&
			  (a.artifact_len == 0 || memcmp(a.artifact, b.artifact, a.artifact_len) == 0),
			  "%s: same seed, identical artifact (%zu bytes)", fams[f], a.artifact_len);
		TrResultFree(&a);
		TrResultFree(&b);
	}
	{
		/* random forest: the thread count does not change the model */
		TrPrepOptions o = Opts(0.25, 3);
		json_object *m1 = NULL,
				   *m2 = NULL;
		TrResult	a,
					b;

		TrRunCandidate(&t, "random_forest", NULL, &o, NULL, NULL, NULL, 1, &a, &m1);
		TrRunCandidate(&t, "random_forest", NULL, &o, NULL, NULL, NULL, 2, &b, &m2);
		CHECK(a.score == b.score && a.artifact_len == b.artifact_len &&
			  memcmp(a.artifact, b.artifact, a.artifact_len) == 0,
			  "random_forest: 1 and 2 threads give the same forest");
		TrResultFree(&a);
		TrResultFree(&b);
		json_object_put(m1);
		json_object_put(m2);
	}
	TrTableFree(&t);
	TrTableFree(&r);
}

typedef struct ProgressLog
{
	int			calls;
	int			last_epoch;
	int			monotone;
	volatile sig_atomic_t *cancel;
	int			cancel_at;
} ProgressLog;

static void
LogProgress(void *arg, int epoch, double loss)
{
	ProgressLog *pl = arg;

	pl->calls++;
	if (epoch <= pl->last_epoch)
		pl->monotone = 0;
	pl->last_epoch = epoch;
	if (pl->cancel && epoch == pl->cancel_at)
		*pl->cancel = 1;
}

static void
TestProgressAndCancel(void)
{
	TrTable		t;
	TrPrepOptions o = Opts(0.25, 1);
	json_object *p = json_tokener_parse("{\"epochs\": 7}");
	json_object *m = NULL;
	TrResult	res;
	ProgressLog pl = {0, 0, 1, NULL, 0};
	volatile sig_atomic_t cancel = 0;
	static const char *fams[] = {"softmax", "mlp", "linear_svm", "random_forest", "gbt"};

	Blobs(&t, 200, 4, 3, 2.0, 13);
	CHECK(TrRunCandidate(&t, "mlp", p, &o, LogProgress, &pl, &cancel, 1, &res, &m) == 0 &&
		  pl.calls == 7 && res.epochs == 7 && pl.monotone,
		  "mlp: one progress call per epoch (%d calls)", pl.calls);
	CHECK(m != NULL && json_object_get_int(json_object_object_get(m, "epochs")) == 7 &&
		  json_object_get_int(json_object_object_get(m, "n_train")) == 150 &&
		  json_object_object_get(m, "train_seconds") != NULL &&
		  json_object_object_get(m, "missing_target_rows") != NULL,
		  "metrics object has the agreed keys");
	TrResultFree(&res);
	json_object_put(m);
	json_object_put(p);
	for (int f = 0; f < 5; f++)
	{
		ProgressLog pc = {0, 0, 1, &cancel, 2};
		json_object *fp = f == 0 ? json_tokener_parse("{\"tol\": 0}") : NULL;

		cancel = 0;
		m = NULL;
		CHECK(TrRunCandidate(&t, fams[f], fp, &o, LogProgress, &pc, &cancel, 1, &res, &m) != 0 &&
			  strcmp(res.error, "cancelled") == 0,
			  "%s: a cancel during training returns \"cancelled\" (%s)", fams[f], res.error);
		TrResultFree(&res);
		json_object_put(m);
		json_object_put(fp);
	}
	cancel = 1;
	{
		int			rc = TrRunCandidate(&t, "knn", NULL, &o, NULL, NULL, &cancel, 1, &res, &m);

		CHECK(rc != 0 && strcmp(res.error, "cancelled") == 0, "a cancel before start is honoured");
		TrResultFree(&res);
	}
	TrTableFree(&t);
}

static void
TestArtifact(void)
{
	TrTable		t;
	TrResult	res;
	static const char *fams[] = {"softmax", "mlp", "gnb", "knn", "linear_svm", "ridge",
	"random_forest", "gbt"};
	unsigned char junk[16] = "EASEMLA1xxxxxxx";

	Blobs(&t, 120, 3, 3, 2.0, 51);
	for (int f = 0; f < 8; f++)
	{
		int			dt = 0,
					nd = 0;
		int64_t		dims[8];
		const void *mean;

		Run(&t, fams[f], NULL, 1, &res);
		mean = TrArtifactFind(res.artifact, res.artifact_len, "prep.mean", &dt, &nd, dims);
		CHECK(res.artifact != NULL && memcmp(res.artifact, "EASEMLA1", 8) == 0 &&
			  mean != NULL && dt == TR_DT_F64 && nd == 1 && dims[0] == 3,
			  "%s: artifact with magic and preprocessing (%zu bytes)", fams[f], res.artifact_len);
		TrResultFree(&res);
	}
	CHECK(TrArtifactFind(junk, sizeof(junk), "W", NULL, NULL, NULL) == NULL &&
		  TrArtifactFind(NULL, 0, "W", NULL, NULL, NULL) == NULL,
		  "artifact reader rejects truncated input");
	TrTableFree(&t);
}

/*
 * The stored model's validation rows (val_rows_path): one row number a
 * line; a file that cannot be written (a full disk: /dev/full, a missing
 * directory) costs the file, not the run.
 */
static void
TestValidationRows(void)
{
	TrTable		t;
	TrPrepOptions o = Opts(0.25, 1);
	TrResult	res;
	json_object *m = NULL;
	char		path[] = "/tmp/easeml-valrows-XXXXXX";
	int			fd = mkstemp(path);
	int			lines = 0;
	int			c;
	FILE	   *f;
	static const char *const bad[] = {"/dev/full", "/nonexistent-easeml-dir/validation_rows.txt"};

	Blobs(&t, 120, 3, 3, 2.0, 52);
	if (fd >= 0)
		close(fd);
	o.val_rows_path = path;
	CHECK(fd >= 0 && TrRunCandidate(&t, "gnb", NULL, &o, NULL, NULL, NULL, 1, &res, &m) == 0,
		  "validation rows: the run succeeds (%s)", fd >= 0 ? res.error : "mkstemp failed");
	if ((f = fopen(path, "r")) != NULL)
	{
		while ((c = fgetc(f)) != EOF)
			lines += c == '\n';
		fclose(f);
	}
	CHECK(lines == 30, "validation rows: one line per validation row (%d of 30)", lines);
	json_object_put(m);
	TrResultFree(&res);
	unlink(path);
	for (int i = 0; i < 2; i++)
	{
		m = NULL;
		o.val_rows_path = bad[i];
		CHECK(TrRunCandidate(&t, "gnb", NULL, &o, NULL, NULL, NULL, 1, &res, &m) == 0 &&
			  m != NULL && isfinite(res.score),
			  "validation rows: a run whose file cannot be written (%s) still succeeds (%s)",
			  bad[i], res.error);
		json_object_put(m);
		TrResultFree(&res);
	}
	CHECK(access("/dev/full", F_OK) == 0,
		  "validation rows: a file that could not be written is removed only when it is a regular file");
	TrTableFree(&t);
}

/*
 * TrJsonParse: integers too long for 64 bits (jsonb writes 1e308 as 309
 * digits) are read as what they are, not clamped; everything else is
 * json_tokener_parse()'s.
 */
static void
TestJsonParse(void)
{
	char		big[512];
	json_object *o;
	json_object *v;

	snprintf(big, sizeof(big), "{\"alpha\": 1%0308d, \"neg\": -1%025d, \"k\": 5, \"lr\": 0.25,"
			 " \"s\": \"x\\\" 123456789012345678901\", \"l\": [12345678901234567890123, 1e5]}", 0, 0);
	o = TrJsonParse(big);
	CHECK(o != NULL && json_object_is_type(o, json_type_object), "big integers: still a JSON object");
	CHECK(o && json_object_object_get_ex(o, "alpha", &v) && json_object_get_double(v) == 1e308,
		  "1 followed by 308 zeros reads as 1e308, not as 2^64 - 1");
	CHECK(o && json_object_object_get_ex(o, "neg", &v) && json_object_get_double(v) == -1e25,
		  "a negative one reads as -1e25");
	CHECK(o && json_object_object_get_ex(o, "k", &v) && json_object_is_type(v, json_type_int) &&
		  json_object_get_int(v) == 5, "a small integer stays an integer");
	CHECK(o && json_object_object_get_ex(o, "lr", &v) && json_object_get_double(v) == 0.25,
		  "a fraction is unchanged");
	CHECK(o && json_object_object_get_ex(o, "s", &v) &&
		  strcmp(json_object_get_string(v), "x\" 123456789012345678901") == 0,
		  "digits inside a string (after an escaped quote) are left alone");
	CHECK(o && json_object_object_get_ex(o, "l", &v) &&
		  json_object_get_double(json_object_array_get_idx(v, 0)) == 12345678901234567890123.0 &&
		  json_object_get_double(json_object_array_get_idx(v, 1)) == 1e5,
		  "array elements too");
	json_object_put(o);
	o = TrJsonParse("{\"l2\": 0.0004166666666666667, \"e\": 1.5e-0000000000000000001}");
	CHECK(o && json_object_object_get_ex(o, "l2", &v) &&
		  json_object_get_double(v) == 0.0004166666666666667,
		  "a fraction of 19 digits is one number, not a second integer (it was \"not a JSON object\")");
	CHECK(o && json_object_object_get_ex(o, "e", &v) && json_object_get_double(v) == 0.15,
		  "a long exponent too");
	json_object_put(o);
	CHECK(TrJsonParse("{\"a\": ") == NULL, "text that is not JSON gives NULL");
}

static void
TestConstantTarget(void)
{
	TrTable		t;
	double		s;

	Linear(&t, 60, 2, 0.0, 0, 3);
	for (int i = 0; i < 60; i++)
		t.t[i] = 5.0;
	s = RunScore(&t, "ridge", NULL, 1);
	CHECK(isfinite(s), "constant regression target gives a finite score (%.3f)", s);
	TrTableFree(&t);
}

static void
TestIris(void)
{
	const char *path = getenv("EASEML_IRIS_CSV");
	const char *tmp = "/tmp/easeml-trtest-iris.csv";
	TrTable		t;
	char		err[TR_ERRLEN] = "";
	static const char *fams[] = {"softmax", "mlp", "gnb", "knn", "linear_svm",
	"random_forest", "gbt"};
	FILE	   *in,
			   *out;
	char		line[256];

	if (path != NULL && path[0] == '\0')
	{
		printf("# iris: skipped (EASEML_IRIS_CSV is empty)\n");
		return;
	}
	if (path == NULL)
	{
		/* scikit-learn's copy: first line "150,4,names...", then rows */
		in = fopen("/usr/lib/python3/dist-packages/sklearn/datasets/data/iris.csv", "r");
		if (in == NULL)
		{
			printf("# iris: skipped (python3-sklearn not installed)\n");
			return;
		}
		out = fopen(tmp, "w");
		if (out == NULL || fgets(line, sizeof(line), in) == NULL)
			exit(100);
		fprintf(out, "sl,sw,pl,pw,label\n");
		while (fgets(line, sizeof(line), in))
			fputs(line, out);
		fclose(in);
		fclose(out);
		path = tmp;
	}
	if (TrLoadCsv(path, "label", TR_KIND_CLASSIFICATION, &t, err, sizeof(err)) != 0)
	{
		CHECK(0, "iris: load (%s)", err);
		return;
	}
	for (int f = 0; f < 7; f++)
	{
		double		s = RunScore(&t, fams[f], NULL, 1);

		CHECK(s >= 0.9, "iris: %s accuracy %.4f", fams[f], s);
	}
	TrTableFree(&t);
	if (path == tmp)
		unlink(tmp);
}

int
main(void)
{
	TestRng();
	TestCsv();
	TestStratified();
	TestStandardise();
	TestBadInput();
	TestRequests();
	TestGnbClosedForm();
	TestRidgeClosedForm();
	TestSoftmaxOptimality();
	TestFamiliesLearn();
	TestCnn();
	TestDeterminism();
	TestProgressAndCancel();
	TestArtifact();
	TestValidationRows();
	TestConstantTarget();
	TestJsonParse();
	TestIris();
	TestData();
	TestPredict();
	TestRows();
	TestGemm();
	TestEnsemble();
	printf("1..%d\n", test_no);
	if (failures)
		printf("# %d of %d checks failed\n", failures, test_no);
	else
		printf("# all %d checks passed\n", test_no);
	return failures > 100 ? 100 : failures;
}
