/*-------------------------------------------------------------------------
 *
 * fuzz_artifact.c
 *	  Fuzz the artifact reader and the predict module: real artifacts of
 *	  every family, mutated thousands of times (flipped bytes, sizes and
 *	  shapes overwritten with extreme values, truncation, junk appended,
 *	  bytes inserted and deleted), and random blobs.  Each one either
 *	  loads, and then encodes and predicts rows, or fails with a message;
 *	  it never crashes, reads out of bounds or loops.
 *
 * The unit tests (predict_test.c) run a few hundred mutations per
 * artifact; "make fuzz-artifact" builds this file as its own program with
 * AddressSanitizer and UndefinedBehaviorSanitizer, so an overread of even
 * one byte aborts, and runs EASEML_FUZZ_ITERS (default 5000) per artifact.
 *
 * IDENTIFICATION
 *	  src/trainer/test/fuzz_artifact.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "trainer/predict/tr_predict.h"
#include "trainer/tr_ensemble.h"

static const char *const colours[] = {"red", "green", "blue", "amber"};

/* class c's images are bright in quadrant c of 8 x 8 */
static double
ImagePixel(int j, int c)
{
	int			q = (j / 8 >= 4) * 2 + (j % 8 >= 4);

	return q == c ? 2.0 : 0.0;
}

/*
 * A test table (predict_test.c uses it too), n rows: d - 1 numeric columns and one categorical column (last); a
 * classification target of 3 classes that depends on both, or a
 * regression target.  Images: 1 x 8 x 8 pixels with a bright quadrant.
 */
void
PredictTestTable(TrTable *t, int n, int kind, int image, uint64_t seed)
{
	int			d = image ? 64 : 4;
	uint64_t	rng = seed;
	int		   *kinds = calloc(d, sizeof(int));

	memset(t, 0, sizeof(*t));
	t->n = n;
	t->d = d;
	t->kind = kind;
	t->X = calloc((size_t) n * d, sizeof(double));
	t->labels = kind == TR_KIND_CLASSIFICATION ? calloc(n, sizeof(char *)) : NULL;
	t->t = kind == TR_KIND_REGRESSION ? calloc(n, sizeof(double)) : NULL;
	if (!image)
		kinds[d - 1] = TR_COL_CATEGORICAL;
	TrTableSetKinds(t, kinds);
	free(kinds);
	for (int i = 0; i < n; i++)
	{
		int			c = i % 3;
		double	   *x = t->X + (size_t) i * d;

		for (int j = 0; j < d; j++)
			x[j] = TrRandNormal(&rng) + (image ? ImagePixel(j, c) : 1.5 * ((j + c) % 3));
		if (!image)
		{
			const char *s = colours[(c + (i % 7 == 0)) % 4];

			x[d - 1] = i % 11 == 5 ? NAN : TrCategoryCode(&t->cats[d - 1], s, strlen(s));
			if (i % 13 == 0)
				x[0] = NAN;
		}
		if (kind == TR_KIND_CLASSIFICATION)
			t->labels[i] = strdup(c == 0 ? "ant" : c == 1 ? "bee" : "cat");
		else
			t->t[i] = 3.0 * x[0 + (i % 13 == 0)] - 2.0 * x[1] + c + 0.1 * TrRandNormal(&rng);
	}
}

typedef struct Blob
{
	unsigned char *p;
	size_t		len;
} Blob;

/* a candidate's artifact on the test table */
static int
MakeArtifact(const char *family, int kind, int image, Blob *out)
{
	TrTable		t;
	TrPrepOptions opt = {0};
	TrResult	res;
	json_object *metrics = NULL;
	int			rc;

	PredictTestTable(&t, 120, kind, image, 11);
	opt.val_fraction = 0.25;
	opt.impute = 1;
	if (image)
	{
		opt.channels = 1;
		opt.height = 8;
		opt.width = 8;
	}
	rc = TrRunCandidate(&t, family, NULL, &opt, NULL, NULL, NULL, 1, &res, &metrics);
	if (metrics)
		json_object_put(metrics);
	TrTableFree(&t);
	if (rc != 0 || res.artifact == NULL)
	{
		fprintf(stderr, "fuzz: %s: %s\n", family, res.error);
		TrResultFree(&res);
		return -1;
	}
	out->p = res.artifact;
	out->len = res.artifact_len;
	res.artifact = NULL;
	TrResultFree(&res);
	return 0;
}

static const uint64_t extremes[] = {
	0, 1, 2, 0x7f, 0xff, 0x7fffffff, 0x80000000, 0xffffffff, UINT64_C(1) << 32,
	UINT64_C(1) << 62, UINT64_C(0x7fffffffffffffff), UINT64_C(0x8000000000000000),
	UINT64_C(0xffffffffffffffff), 0x3fffffff
};

/* one random mutation of src into a fresh exact-size buffer */
static Blob
Mutate(const Blob *src, uint64_t *rng)
{
	Blob		b;
	size_t		len = src->len,
				at = src->len ? TrRandBelow(rng, src->len) : 0;
	int			op = (int) TrRandBelow(rng, 7);
	uint64_t	v = extremes[TrRandBelow(rng, sizeof(extremes) / sizeof(extremes[0]))];

	if (op == 3)
		len = TrRandBelow(rng, src->len + 1);	/* truncate */
	else if (op == 4 || op == 5)
		len = src->len + 1 + TrRandBelow(rng, 16);	/* append, insert */
	else if (op == 6 && len > 0)
		len = src->len - 1 - TrRandBelow(rng, len < 16 ? len : 16);	/* delete */
	b.len = len;
	b.p = malloc(len ? len : 1);
	if (op == 5 || op == 6)
	{
		size_t		keep = at < len ? at : len;

		memcpy(b.p, src->p, keep);
		for (size_t i = keep; i < len; i++)
			b.p[i] = op == 5 && i < keep + (len - src->len) ? (unsigned char) TrRandNext(rng) :
				src->p[i - (op == 5 ? (len - src->len) : 0) + (op == 6 ? (src->len - len) : 0)];
		return b;
	}
	memcpy(b.p, src->p, len < src->len ? len : src->len);
	for (size_t i = src->len; i < len; i++)
		b.p[i] = (unsigned char) TrRandNext(rng);
	if (op == 0)
		for (int k = 0; k < 1 + (int) TrRandBelow(rng, 4) && len > 0; k++)
			b.p[TrRandBelow(rng, len)] ^= (unsigned char) (1 + TrRandBelow(rng, 255));
	else if ((op == 1 || op == 2) && len >= 8)
	{
		size_t		w = op == 1 ? 4 : 8,
					pos = TrRandBelow(rng, len - w + 1);

		memcpy(b.p + pos, &v, w);	/* little-endian: the low bytes */
	}
	return b;
}

/* encode and predict three random rows with a loaded model */
static void
Predict3(TrModel *m, uint64_t *rng)
{
	int			nraw = m->n_raw;
	double	   *num = calloc(nraw + 1, sizeof(double));
	const char **str = calloc(nraw + 1, sizeof(char *));
	size_t	   *lens = calloc(nraw + 1, sizeof(size_t));
	float	   *x = malloc(sizeof(float) * 3 * ((size_t) m->d + 1));
	double	   *out = malloc(sizeof(double) * 3 * ((size_t) m->n_out + 1));

	for (int r = 0; r < 3 && num && str && lens && x && out; r++)
	{
		for (int j = 0; j < nraw; j++)
		{
			num[j] = TrRandBelow(rng, 8) == 0 ? NAN : TrRandNormal(rng) * 100;
			str[j] = TrRandBelow(rng, 3) == 0 ? NULL : "green";
			lens[j] = str[j] ? 5 : 0;
		}
		TrModelEncode(m, num, str, lens, x + (size_t) r * m->d);
	}
	if (num && str && lens && x && out)
		(void) TrModelPredict(m, x, 3, out);
	free(num);
	free(str);
	free(lens);
	free(x);
	free(out);
}

/* load b; when it loads, encode and predict a few rows.  0, or -1 */
static int
Exercise(const Blob *b, uint64_t *rng)
{
	TrModel    *m = NULL;
	char		err[TR_PREDICT_ERRLEN] = "";
	int			rc = TrModelLoad(b->p, b->len, &m, err, sizeof(err));

	if (rc != TR_ART_OK)
		return err[0] != '\0' ? 0 : -1;	/* an error always says why */
	Predict3(m, rng);
	TrModelFree(m);
	return 0;
}

/*
 * [ensemble] Mutated validation predictions (TrValPredsRead) and mutated
 * ensemble artifacts (TrEnsembleMembers, TrEnsembleBuild with two real
 * members): each is read or refused with a message.  The number refused
 * without one, or -1.
 */
static int
FuzzEnsembles(int iters, uint64_t *rng, int verbose)
{
	TrTable		t;
	TrPrepOptions opt = {0};
	TrResult	res[2],
				ens;
	TrValPreds	vp;
	json_object *metrics = NULL;
	const char *fams[2] = {"softmax", "gnb"};
	int64_t		ids[2] = {3, 4};
	double		w[2] = {0.5, 0.5};
	char		err[256] = "";
	int			bad = 0,
				built = 0;
	Blob		preds,
				blob;

	PredictTestTable(&t, 120, TR_KIND_CLASSIFICATION, 0, 11);
	opt.val_fraction = 0.25;
	opt.impute = 1;
	for (int f = 0; f < 2; f++)
	{
		if (TrRunCandidate(&t, fams[f], NULL, &opt, NULL, NULL, NULL, 1, &res[f], &metrics) != 0 ||
			res[f].predictions == NULL)
			return -1;
		json_object_put(metrics);
	}
	TrTableFree(&t);
	if (TrValPredsRead(res[0].predictions, res[0].predictions_len, &vp, err, sizeof(err)) != 0)
		return -1;
	TrResultInit(&ens);
	if (TrEnsembleArtifact(&vp, 2, ids, w, &ens) != 0)
		return -1;
	TrValPredsFree(&vp);
	preds.p = res[0].predictions;
	preds.len = res[0].predictions_len;
	blob.p = ens.artifact;
	blob.len = ens.artifact_len;
	for (int i = 0; i < iters; i++)
	{
		Blob		b = Mutate(&preds, rng);
		TrValPreds	v;
		int64_t    *runs;
		double	   *weights;
		int			n;
		int			rc;

		err[0] = '\0';
		if (TrValPredsRead(b.p, b.len, &v, err, sizeof(err)) == 0)
			TrValPredsFree(&v);
		else
			bad += err[0] == '\0';
		free(b.p);

		b = Mutate(&blob, rng);
		err[0] = '\0';
		rc = TrEnsembleMembers(b.p, b.len, &n, &runs, &weights, err, sizeof(err));
		if (rc != TR_ART_OK)
			bad += err[0] == '\0';
		else
		{
			TrModel    *members[2] = {NULL, NULL};
			TrModel    *m = NULL;

			free(runs);
			free(weights);
			if (n == 2 &&
				TrModelLoad(res[0].artifact, res[0].artifact_len, &members[0], err, sizeof(err)) == TR_ART_OK &&
				TrModelLoad(res[1].artifact, res[1].artifact_len, &members[1], err, sizeof(err)) == TR_ART_OK)
			{
				err[0] = '\0';
				if (TrEnsembleBuild(b.p, b.len, members, 2, &m, err, sizeof(err)) == TR_ART_OK)
				{
					built++;
					Predict3(m, rng);
					TrModelFree(m);
				}
				else
					bad += err[0] == '\0';
			}
			else
			{
				TrModelFree(members[0]);
				TrModelFree(members[1]);
			}
		}
		free(b.p);
	}
	if (verbose)
		printf("# fuzz ensemble: %d mutations of each, %d ensembles still built\n", iters, built);
	TrResultFree(&res[0]);
	TrResultFree(&res[1]);
	TrResultFree(&ens);
	return bad;
}

int
FuzzArtifacts(int iters, int verbose)
{
	static const struct
	{
		const char *family;
		int			kind;
		int			image;
	}			cases[] =
	{
		{"softmax", 0, 0}, {"mlp", 0, 0}, {"gnb", 0, 0}, {"knn", 0, 0},
		{"linear_svm", 0, 0}, {"ridge", 0, 0}, {"random_forest", 0, 0}, {"gbt", 0, 0},
		{"ridge", 1, 0}, {"mlp", 1, 0}, {"random_forest", 1, 0}, {"gbt", 1, 0},
		{"knn", 1, 0}, {"cnn", 0, 1},
	};
	uint64_t	rng = 12345;
	int			bad = 0;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		Blob		src;
		int			loaded = 0;

		if (MakeArtifact(cases[c].family, cases[c].kind, cases[c].image, &src) != 0)
			return -1;
		for (int i = 0; i < iters; i++)
		{
			Blob		b = Mutate(&src, &rng);

			bad += Exercise(&b, &rng) != 0;
			loaded += TrArtifactFind(b.p, b.len, "prep.encoders", NULL, NULL, NULL) != NULL;
			free(b.p);
		}
		if (verbose)
			printf("# fuzz %s/%d: %d mutations, %d still well formed\n", cases[c].family,
				   cases[c].kind, iters, loaded);
		free(src.p);
	}
	{
		int			e = FuzzEnsembles(iters, &rng, verbose);

		if (e < 0)
			return -1;
		bad += e;
	}
	/* random bytes behind the magic */
	for (int i = 0; i < iters; i++)
	{
		Blob		b;

		b.len = 8 + TrRandBelow(&rng, 200);
		b.p = malloc(b.len);
		memcpy(b.p, "EASEMLA1", 8);
		for (size_t j = 8; j < b.len; j++)
			b.p[j] = (unsigned char) (TrRandBelow(&rng, 4) == 0 ? TrRandNext(&rng) : TrRandBelow(&rng, 3));
		bad += Exercise(&b, &rng) != 0;
		free(b.p);
	}
	return bad;
}

#ifdef FUZZ_MAIN
int
main(void)
{
	const char *iters = getenv("EASEML_FUZZ_ITERS");
	int			bad = FuzzArtifacts(iters ? atoi(iters) : 5000, 1);

	printf("%s: %d malformed artifacts without a message\n", bad == 0 ? "ok" : "FAILED", bad);
	return bad != 0;
}
#endif
