/*-------------------------------------------------------------------------
 *
 * predict_test.c
 *	  Unit tests of the predict module (tr_predict.h): for every family the
 *	  module reproduces the fit's own validation predictions, every metric
 *	  is recorded, unknown categories are handled, and the artifact reader
 *	  survives malformed input (fuzz_artifact.c).  Called from tr_test.c's
 *	  main.
 *
 * IDENTIFICATION
 *	  src/trainer/test/predict_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "trainer/tr_metrics.h"
#include "trainer/predict/tr_predict.h"
#include "trainer/tr_score.h"
#include "tr_test.h"

extern int	FuzzArtifacts(int iters, int verbose);
extern void PredictTestTable(TrTable *t, int n, int kind, int image, uint64_t seed);

/* fit family directly, then score through the module: the two agree */
/*
 * Validation score of 5 nearest neighbours (uniform weights), by brute
 * force in double: knn's fit leaves the scoring of a stored model to the
 * predict module, so this is the score the module is checked against.
 */
static double
NaiveKnnScore(const TrData *data)
{
	int			k = 5,
				d = data->d,
				n = data->n_train,
				nv = data->n_val;
	double	   *dist = malloc(sizeof(double) * n);
	int		   *pred = malloc(sizeof(int) * nv);
	double	   *tpred = malloc(sizeof(double) * nv);
	double		score,
				rmse;

	for (int i = 0; i < nv; i++)
	{
		int			nn[5];
		double		votes[64] = {0},
					sum = 0.0;

		for (int j = 0; j < n; j++)
		{
			double		s2 = 0.0;

			for (int f = 0; f < d; f++)
			{
				double		e = (double) data->Xva[(size_t) i * d + f] -
					data->Xtr[(size_t) j * d + f];

				s2 += e * e;
			}
			dist[j] = s2;
		}
		for (int q = 0; q < k; q++)
		{
			int			best = -1;

			for (int j = 0; j < n; j++)
				if (dist[j] >= 0.0 && (best < 0 || dist[j] < dist[best]))
					best = j;
			nn[q] = best;
			dist[best] = -1.0;	/* taken */
		}
		for (int q = 0; q < k; q++)
		{
			if (data->kind == TR_KIND_CLASSIFICATION)
				votes[data->ytr[nn[q]]] += 1.0;
			else
				sum += data->ttr[nn[q]];
		}
		pred[i] = 0;
		for (int c = 1; c < data->n_classes && c < 64; c++)
			if (votes[c] > votes[pred[i]])
				pred[i] = c;
		tpred[i] = sum / k;
	}
	if (data->kind == TR_KIND_CLASSIFICATION)
		score = TrAccuracy(pred, data->yva, nv);
	else
		TrRegressionScore(tpred, data->tva, nv, &score, &rmse);
	free(dist);
	free(pred);
	free(tpred);
	return score;
}

static void
CheckFamily(const char *family, int kind, int image)
{
	const TrFamily *fam = TrFamilyLookup(family);
	TrTable		t;
	TrData		data;
	TrPrepOptions opt = {0};
	TrContext	ctx = {0};
	TrResult	res;
	TrMetrics	fm;
	char		err[TR_ERRLEN] = "";
	int			rc;
	double		own,
				mod;

	PredictTestTable(&t, 240, kind, image, 7);
	opt.val_fraction = 0.25;
	opt.seed = 3;
	opt.impute = 1;
	if (image)
	{
		opt.channels = 1;
		opt.height = 8;
		opt.width = 8;
	}
	TrResultInit(&res);
	if (TrPrepare(&t, &opt, &data, err, sizeof(err)) != 0)
	{
		CHECK(0, "%s: prepare (%s)", family, err);
		TrTableFree(&t);
		return;
	}
	ctx.data = &data;
	ctx.seed = 3;
	ctx.threads = 1;
	rc = fam->fit(&ctx, &res);
	own = kind == TR_KIND_REGRESSION ? res.r2 : res.score;
	if (strcmp(family, "knn") == 0)
		own = NaiveKnnScore(&data);
	if (rc == 0)
		rc = TrScoreValidation(&data, &res, &fm, err, sizeof(err));
	mod = kind == TR_KIND_REGRESSION ? fm.v[TR_M_R2] : fm.v[TR_M_ACCURACY];
	CHECK(rc == 1 && fabs(own - mod) <= 0.005,
		  "%s %s: the module's score %.4f is the fit's own %.4f %s", family,
		  kind == TR_KIND_REGRESSION ? "regression" : "classification", mod, own, err);
	if (kind == TR_KIND_CLASSIFICATION)
		CHECK(rc == 1 && isfinite(fm.v[TR_M_BALANCED_ACCURACY]) && isfinite(fm.v[TR_M_MACRO_F1]) &&
			  isfinite(fm.v[TR_M_LOG_LOSS]) && isfinite(fm.v[TR_M_ROC_AUC]),
			  "%s: every classification metric is recorded (log loss %.3f, AUC %.3f)", family,
			  fm.v[TR_M_LOG_LOSS], fm.v[TR_M_ROC_AUC]);
	else
		CHECK(rc == 1 && isfinite(fm.v[TR_M_MAE]) && isfinite(fm.v[TR_M_RMSE]),
			  "%s: every regression metric is recorded (MAE %.3f)", family, fm.v[TR_M_MAE]);
	TrResultFree(&res);
	TrDataFree(&data);
	TrTableFree(&t);
}

/* an unknown or missing category encodes as none, and predicts */
static void
CheckUnknownCategory(void)
{
	TrTable		t;
	TrResult	res;
	json_object *metrics = NULL;
	TrPrepOptions opt = {0};
	TrModel    *m = NULL;
	char		err[TR_PREDICT_ERRLEN] = "";
	double		num[4] = {0.5, 1.0, NAN, NAN};
	const char *str[4] = {NULL, NULL, NULL, "ultraviolet"};
	size_t		lens[4] = {0, 0, 0, 11};
	float		x[64];
	double		p[3];
	int			unknown = -1;

	PredictTestTable(&t, 240, TR_KIND_CLASSIFICATION, 0, 9);
	opt.val_fraction = 0.2;
	opt.impute = 1;
	if (TrRunCandidate(&t, "softmax", NULL, &opt, NULL, NULL, NULL, 1, &res, &metrics) == 0 &&
		TrModelLoad(res.artifact, res.artifact_len, &m, err, sizeof(err)) == TR_ART_OK &&
		m->d < 64)
	{
		unknown = TrModelEncode(m, num, str, lens, x);
		TrModelPredict(m, x, 1, p);
	}
	CHECK(unknown == 1 && TrModelColumnIsCategorical(m, 3) && !TrModelColumnIsCategorical(m, 0) &&
		  fabs(p[0] + p[1] + p[2] - 1.0) < 1e-9,
		  "an unknown category is counted, not an error, and the row predicts (%s)", err);
	str[3] = NULL;
	CHECK(m != NULL && TrModelEncode(m, num, str, lens, x) == 0,
		  "a missing category and a missing number encode as the fill");
	TrModelFree(m);
	if (metrics)
		json_object_put(metrics);
	TrResultFree(&res);
	TrTableFree(&t);
}

/* a shape whose byte count wraps must not pass (issue 9's [2^62, 4]) */
static void
CheckWrappingShape(void)
{
	unsigned char blob[128];
	size_t		n = 0;
	char		err[TR_PREDICT_ERRLEN] = "";
	TrArtHeader h;
	uint32_t	u;
	int64_t		dims[2] = {(int64_t) 1 << 62, 4};

#define PUT(p, len) (memcpy(blob + n, (p), (len)), n += (len))
	PUT("EASEMLA1", 8);
	u = 3;
	PUT(&u, 4);
	PUT("gbt", 3);
	u = 1;						/* regression */
	PUT(&u, 4);
	u = 1;						/* d */
	PUT(&u, 4);
	u = 0;
	for (int i = 0; i < 4; i++)
		PUT(&u, 4);
	u = 1;
	PUT(&u, 4);
	PUT("W", 1);
	u = TR_DT_F32;
	PUT(&u, 4);
	u = 2;
	PUT(&u, 4);
	PUT(dims, 16);
	u = 0;
	PUT(&u, 4);
#undef PUT
	CHECK(TrArtifactCheck(blob, n, &h, err, sizeof(err)) == TR_ART_BAD &&
		  TrArtifactFind(blob, n, "W", NULL, NULL, NULL) == NULL,
		  "a [2^62, 4] tensor in a %zu-byte artifact is rejected: %s", n, err);
}

/*
 * Loading an artifact with many classes reads each class name once: the
 * reader used to start again from the first name for every class, so 200k
 * names took 2 * 10^10 reads (seconds; minutes at the format's 2^20), and a
 * backend loading it could not be cancelled.
 */
static int
AlwaysInterrupted(void)
{
	return 1;
}

static void
CheckManyClasses(void)
{
	const int	nc = 200000;
	size_t		cap = 64 + (size_t) nc * 12,
				n = 0;
	unsigned char *blob = malloc(cap);
	char		err[TR_PREDICT_ERRLEN] = "";
	char		name[16];
	TrModel    *m = NULL;
	unsigned long before;
	uint32_t	u;
	int			rc;

#define PUT(p, len) (memcpy(blob + n, (p), (len)), n += (len))
	PUT("EASEMLA1", 8);
	u = 3;
	PUT(&u, 4);
	PUT("gnb", 3);
	u = 0;						/* classification */
	PUT(&u, 4);
	u = 1;						/* d */
	PUT(&u, 4);
	u = nc;
	PUT(&u, 4);
	u = 0;
	for (int i = 0; i < 3; i++)
		PUT(&u, 4);
	for (int c = 0; c < nc; c++)
	{
		snprintf(name, sizeof(name), "%08d", c);
		u = 8;
		PUT(&u, 4);
		PUT(name, 8);
	}
	u = 0;						/* no tensors: the load fails after the classes */
	PUT(&u, 4);
#undef PUT
	before = tr_artifact_class_reads;
	rc = TrModelLoad(blob, n, &m, err, sizeof(err));
	CHECK(rc == TR_ART_BAD && strstr(err, "tensor") != NULL &&
		  tr_artifact_class_reads - before == (unsigned long) nc,
		  "%d class names load with %lu reads (one each), then: %s",
		  nc, tr_artifact_class_reads - before, err);
	TrModelFree(m);
	/* the server's hook says a cancel is pending: the load stops */
	tr_load_interrupted = AlwaysInterrupted;
	m = NULL;
	rc = TrModelLoad(blob, n, &m, err, sizeof(err));
	tr_load_interrupted = NULL;
	CHECK(rc == TR_ART_CANCELED && m == NULL,
		  "a load that tr_load_interrupted stops returns canceled: %s", err);
	free(blob);
}

void
TestPredict(void)
{
	static const char *const cls[] = {"softmax", "mlp", "gnb", "knn", "linear_svm",
	"ridge", "random_forest", "gbt"};
	static const char *const reg[] = {"mlp", "knn", "ridge", "random_forest", "gbt"};
	const char *iters = getenv("EASEML_FUZZ_ITERS");

	for (int f = 0; f < 8; f++)
		CheckFamily(cls[f], TR_KIND_CLASSIFICATION, 0);
	for (int f = 0; f < 5; f++)
		CheckFamily(reg[f], TR_KIND_REGRESSION, 0);
	CheckFamily("cnn", TR_KIND_CLASSIFICATION, 1);
	CheckUnknownCategory();
	CheckWrappingShape();
	CheckManyClasses();
	CHECK(FuzzArtifacts(iters ? atoi(iters) : 300, 0) == 0,
		  "fuzz: mutated and truncated artifacts give errors, never a crash");
}
