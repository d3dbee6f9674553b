/*-------------------------------------------------------------------------
 *
 * ensemble_test.c
 *	  Unit tests of ensembles (tr_ensemble.h, tr_predict_ensemble.c):
 *	  greedy selection with replacement on hand-made predictions, the
 *	  cross-fitted score (folds, overfitting noise members, tiny sets), the
 *	  validation predictions' round trip, and an ensemble's model against
 *	  the weighted average of its members' own predictions.  Called from
 *	  tr_test.c's main.
 *
 * IDENTIFICATION
 *	  src/trainer/test/ensemble_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "trainer/tr_ensemble.h"
#include "trainer/tr_metrics.h"
#include "trainer/predict/tr_predict.h"
#include "tr_test.h"

extern void PredictTestTable(TrTable *t, int n, int kind, int image, uint64_t seed);

static int	rows4[4] = {7, 3, 9, 1};
static char *bin_names[2] = {"no", "yes"};

/* a member of binary classification on 4 rows: p1 = P(yes) per row */
static void
Binary(TrValPreds *vp, const double *p1, int *y)
{
	memset(vp, 0, sizeof(*vp));
	vp->kind = TR_KIND_CLASSIFICATION;
	vp->n = 4;
	vp->n_out = vp->n_classes = 2;
	vp->class_names = bin_names;
	vp->rows = rows4;
	vp->y = y;
	vp->pred = malloc(sizeof(double) * 8);
	for (int i = 0; i < 4; i++)
	{
		vp->pred[2 * i] = 1.0 - p1[i];
		vp->pred[2 * i + 1] = p1[i];
	}
}

static void
Regression(TrValPreds *vp, const double *pred, double *t, int n)
{
	memset(vp, 0, sizeof(*vp));
	vp->kind = TR_KIND_REGRESSION;
	vp->n = n;
	vp->n_out = 1;
	vp->rows = rows4;
	vp->t = t;
	vp->pred = malloc(sizeof(double) * n);
	memcpy(vp->pred, pred, sizeof(double) * n);
}

/* two members that err on different rows: together they are right */
static void
TestGreedyClassification(void)
{
	int			y[4] = {0, 0, 1, 1};
	double		a[4] = {0.4, 0.4, 0.9, 0.45};	/* 0 0 1 0: 0.75 */
	double		b[4] = {0.6, 0.1, 0.55, 0.9};	/* 1 0 1 1: 0.75 */
	double		c[4] = {0.9, 0.9, 0.1, 0.1};	/* all wrong */
	TrValPreds	m[3];
	const TrValPreds *use[3] = {&m[0], &m[1], &m[2]};
	int			counts[3];
	double		score = NAN,
				avg[8];
	char		err[256] = "";
	TrMetrics	fm;

	Binary(&m[0], a, y);
	Binary(&m[1], b, y);
	Binary(&m[2], c, y);
	CHECK(TrEnsembleSelect(use, 3, TR_M_ACCURACY, 50, counts, &score, err, sizeof(err)) == 0,
		  "ensemble: selection runs (%s)", err);
	CHECK(counts[0] == 1 && counts[1] == 1 && counts[2] == 0,
		  "ensemble: the best member, then the one that fixes its errors (counts %d %d %d)",
		  counts[0], counts[1], counts[2]);
	CHECK(score == 1.0, "ensemble: the pair's accuracy is 1 (%.3f), each alone 0.75", score);
	TrEnsembleAverage(use, 3, counts, avg);
	CHECK(fabs(avg[1] - 0.5) < 1e-12 && fabs(avg[7] - 0.675) < 1e-12,
		  "ensemble: the average is the members' mean (%.3f %.3f)", avg[1], avg[7]);
	/* P(yes) = 0.5 on row 1: a tie goes to the first class, as predict does */
	CHECK(TrEnsembleQuality(&m[0], avg, TR_M_ACCURACY, &fm) == 1.0,
		  "ensemble: a tie goes to the first class");
	CHECK(TrEnsembleSelect(use, 3, TR_M_ACCURACY, 1, counts, &score, err, sizeof(err)) == 0 &&
		  counts[0] == 1 && counts[1] + counts[2] == 0 && score == 0.75,
		  "ensemble: one step is the best member alone (the first on ties)");
	/* the log loss ranks by probabilities: still the pair */
	CHECK(TrEnsembleSelect(use, 3, TR_M_LOG_LOSS, 50, counts, &score, err, sizeof(err)) == 0 &&
		  counts[2] == 0 && counts[0] > 0 && counts[1] > 0,
		  "ensemble: by log loss, both good members and not the bad one (%d %d %d)",
		  counts[0], counts[1], counts[2]);
	for (int i = 0; i < 3; i++)
		free(m[i].pred);
}

/* with replacement: a member chosen twice gives it weight 2/3 */
static void
TestGreedyReplacement(void)
{
	double		t[4] = {0, 1, 3, 2};
	double		a[4] = {1, 2, 4, 3};	/* t + 1 */
	double		b[4] = {-2, -1, 1, 0};	/* t - 2 */
	TrValPreds	m[2];
	const TrValPreds *use[2] = {&m[0], &m[1]};
	int			counts[2];
	double		score = NAN;
	char		err[256] = "";
	int			other[4] = {7, 3, 9, 2};

	Regression(&m[0], a, t, 4);
	Regression(&m[1], b, t, 4);
	CHECK(TrEnsembleSelect(use, 2, TR_M_R2, 50, counts, &score, err, sizeof(err)) == 0 &&
		  counts[0] == 2 && counts[1] == 1 && fabs(score - 1.0) < 1e-12,
		  "ensemble: A, then B, then A again: 2/3 A + 1/3 B is exact (counts %d %d, R2 %.4f)",
		  counts[0], counts[1], score);
	CHECK(TrEnsembleSelect(use, 2, TR_M_RMSE, 50, counts, &score, err, sizeof(err)) == 0 &&
		  counts[0] == 2 && counts[1] == 1,
		  "ensemble: the same by RMSE");
	/* members scored on other rows cannot be averaged */
	m[1].rows = other;
	CHECK(TrEnsembleSelect(use, 2, TR_M_R2, 50, counts, &score, err, sizeof(err)) != 0 &&
		  strstr(err, "rows of member 1") != NULL,
		  "ensemble: members on other rows are refused (%s)", err);
	free(m[0].pred);
	free(m[1].pred);
}

/* n rows numbered 100, 103, ... as a member's rows */
static int	rows_n[200];

/* a binary member on n rows of labels y: P(yes) per row */
static void
BinaryN(TrValPreds *vp, int n, const double *p1, int *y)
{
	Binary(vp, p1, y);			/* fills 4 rows: redone for n */
	free(vp->pred);
	vp->n = n;
	vp->rows = rows_n;
	vp->pred = malloc(sizeof(double) * 2 * n);
	for (int i = 0; i < n; i++)
	{
		vp->pred[2 * i] = 1.0 - p1[i];
		vp->pred[2 * i + 1] = p1[i];
	}
}

/*
 * The cross-fitted score (TrEnsembleFolds, TrEnsembleCrossFit): one weak
 * member and 40 members of pure noise.  Selected on every row, the noise
 * flips rows it happens to get right and the in-sample accuracy rises
 * above the member's; selected without the rows it is scored on, it does
 * not: the out-of-fold accuracy is lower than the in-sample one.
 */
static void
TestCrossFitNoise(void)
{
	enum
	{
		N = 120,
		M = 41
	};
	int			y[N],
				fold[N],
				fold2[N],
				counts[M],
				size[TR_ENSEMBLE_MAX_FOLDS] = {0},
				yes[TR_ENSEMBLE_MAX_FOLDS] = {0},
				n_yes = 0,
				k,
				differ = 0,
				smin = N,
				smax = 0,
				ymin = N,
				ymax = 0;
	double		p[N],
				avg[2 * N],
				oof[2 * N],
				oof2[2 * N],
				fold_q[TR_ENSEMBLE_MAX_FOLDS],
				fold_q2[TR_ENSEMBLE_MAX_FOLDS],
				in_sample = NAN,
				alone,
				cross,
				pooled = 0;
	uint64_t	st = 7;
	TrValPreds	m[M];
	const TrValPreds *use[M];
	char		err[256] = "";
	TrMetrics	fm;
	int			ok;

	for (int i = 0; i < N; i++)
	{
		rows_n[i] = 100 + 3 * i;
		y[i] = TrRandUniform(&st) < 0.4;
		n_yes += y[i];
	}
	/* the member: right with probability 0.7, never sure */
	for (int i = 0; i < N; i++)
	{
		int			right = TrRandUniform(&st) < 0.7;

		p[i] = (y[i] == right) ? 0.55 : 0.45;
	}
	BinaryN(&m[0], N, p, y);
	for (int j = 1; j < M; j++)
	{
		for (int i = 0; i < N; i++)
			p[i] = TrRandUniform(&st);
		BinaryN(&m[j], N, p, y);
	}
	for (int j = 0; j < M; j++)
		use[j] = &m[j];
	alone = TrEnsembleQuality(&m[0], m[0].pred, TR_M_ACCURACY, &fm);

	k = TrEnsembleFolds(&m[0], TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 42, fold);
	for (int i = 0; i < N; i++)
	{
		size[fold[i]]++;
		yes[fold[i]] += y[i];
	}
	for (int f = 0; f < k; f++)
	{
		smin = size[f] < smin ? size[f] : smin;
		smax = size[f] > smax ? size[f] : smax;
		ymin = yes[f] < ymin ? yes[f] : ymin;
		ymax = yes[f] > ymax ? yes[f] : ymax;
	}
	CHECK(k == 5 && smin == N / 5 && smax == N / 5 && ymax - ymin <= 2,
		  "cross-fit: %d rows in %d folds of %d to %d rows, stratified (%d to %d of the %d yes)",
		  N, k, smin, smax, ymin, ymax, n_yes);
	TrEnsembleFolds(&m[0], TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 42, fold2);
	CHECK(memcmp(fold, fold2, sizeof(fold)) == 0, "cross-fit: the same seed deals the same folds");
	TrEnsembleFolds(&m[0], TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 43, fold2);
	for (int i = 0; i < N; i++)
		differ += fold[i] != fold2[i];
	CHECK(differ > N / 2, "cross-fit: another seed deals other folds (%d of %d rows moved)",
		  differ, N);

	ok = TrEnsembleSelect(use, M, TR_M_ACCURACY, 50, counts, &in_sample, err, sizeof(err)) == 0;
	TrEnsembleAverage(use, M, counts, avg);
	CHECK(ok && in_sample > alone + 0.04 &&
		  TrEnsembleQuality(&m[0], avg, TR_M_ACCURACY, &fm) == in_sample,
		  "cross-fit: selected on every row, noise raises the accuracy from %.3f to %.3f (%s)",
		  alone, in_sample, err);
	ok = TrEnsembleCrossFit(use, M, TR_M_ACCURACY, 50, fold, k, oof, fold_q, err, sizeof(err)) == 0;
	cross = ok ? TrEnsembleQuality(&m[0], oof, TR_M_ACCURACY, &fm) : NAN;
	CHECK(ok && cross < in_sample - 0.05,
		  "cross-fit: out of fold it is %.3f, below the %.3f in sample (%s)", cross, in_sample, err);
	for (int f = 0; f < k; f++)
		pooled += fold_q[f] * size[f] / N;
	CHECK(ok && fabs(pooled - cross) < 1e-12,
		  "cross-fit: the accuracy of the pooled rows is the row-weighted mean of the folds' (%.4f)",
		  pooled);
	ok = TrEnsembleCrossFit(use, M, TR_M_ACCURACY, 50, fold, k, oof2, fold_q2, err, sizeof(err)) == 0;
	CHECK(ok && memcmp(oof, oof2, sizeof(oof)) == 0 && memcmp(fold_q, fold_q2, sizeof(double) * k) == 0,
		  "cross-fit: a second run gives the same predictions, bit for bit");
	/* log loss, which an average of probabilities can improve honestly */
	ok = TrEnsembleSelect(use, M, TR_M_LOG_LOSS, 50, counts, &in_sample, err, sizeof(err)) == 0 &&
		TrEnsembleCrossFit(use, M, TR_M_LOG_LOSS, 50, fold, k, oof, NULL, err, sizeof(err)) == 0;
	cross = ok ? TrEnsembleQuality(&m[0], oof, TR_M_LOG_LOSS, &fm) : NAN;
	CHECK(ok && cross < in_sample,
		  "cross-fit: by log loss too, out of fold %.4f < in sample %.4f", cross, in_sample);
	for (int j = 0; j < M; j++)
		free(m[j].pred);
}

/*
 * A real gain survives cross-fitting: 2/3 A + 1/3 B is exact on every
 * fold, so the out-of-fold R^2 is 1 as in sample.  Tiny sets: too few
 * rows for 2 folds of TR_ENSEMBLE_FOLD_ROWS, and cross-fitting refuses
 * fewer than 2 folds.
 */
static void
TestCrossFitExactAndTiny(void)
{
	enum
	{
		N = 30
	};
	double		t[N],
				a[N],
				b[N],
				oof[N],
				fold_q[TR_ENSEMBLE_MAX_FOLDS],
				r2;
	int			fold[N];
	int			k;
	uint64_t	st = 11;
	TrValPreds	m[2];
	const TrValPreds *use[2] = {&m[0], &m[1]};
	char		err[256] = "";
	TrMetrics	fm;
	int			ok;

	for (int i = 0; i < N; i++)
	{
		rows_n[i] = 100 + 3 * i;
		t[i] = TrRandNormal(&st);
		a[i] = t[i] + 1;
		b[i] = t[i] - 2;
	}
	Regression(&m[0], a, t, N);
	Regression(&m[1], b, t, N);
	m[0].rows = m[1].rows = rows_n;
	k = TrEnsembleFolds(&m[0], TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 42, fold);
	ok = k == 3 && TrEnsembleCrossFit(use, 2, TR_M_R2, 50, fold, k, oof, fold_q, err, sizeof(err)) == 0;
	r2 = ok ? TrEnsembleQuality(&m[0], oof, TR_M_R2, &fm) : NAN;
	CHECK(ok && fabs(r2 - 1.0) < 1e-12 && fabs(fold_q[0] - 1.0) < 1e-12,
		  "cross-fit: 30 rows in %d folds; an exact pair stays exact out of fold (R2 %.6f) (%s)",
		  k, r2, err);

	m[0].n = m[1].n = 2 * TR_ENSEMBLE_FOLD_ROWS - 1;
	k = TrEnsembleFolds(&m[0], TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 42, fold);
	CHECK(k == 1, "cross-fit: %d rows are too few for 2 folds of %d (k = %d)",
		  m[0].n, TR_ENSEMBLE_FOLD_ROWS, k);
	m[0].n = m[1].n = 2 * TR_ENSEMBLE_FOLD_ROWS;
	k = TrEnsembleFolds(&m[0], TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 42, fold);
	CHECK(k == 2, "cross-fit: %d rows make 2 folds", m[0].n);
	CHECK(TrEnsembleCrossFit(use, 2, TR_M_R2, 50, fold, 1, oof, NULL, err, sizeof(err)) != 0 &&
		  strstr(err, "2 folds") != NULL,
		  "cross-fit: one fold is refused (%s)", err);
	/* every row in fold 1: nothing to select on for it */
	memset(fold, 0, sizeof(fold));
	CHECK(TrEnsembleCrossFit(use, 2, TR_M_R2, 50, fold, 2, oof, NULL, err, sizeof(err)) != 0 &&
		  strstr(err, "no rows") != NULL,
		  "cross-fit: an empty fold is refused (%s)", err);
	free(m[0].pred);
	free(m[1].pred);

	/* 4 rows: no folds */
	{
		int			y[4] = {0, 0, 1, 1};
		double		p[4] = {0.2, 0.3, 0.8, 0.6};
		TrValPreds	v;

		Binary(&v, p, y);
		CHECK(TrEnsembleFolds(&v, TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, 42, fold) == 0,
			  "cross-fit: 4 rows make no folds");
		free(v.pred);
	}
}

/* a raw row of a table as the predict module takes it */
static void
RawRow(const TrTable *tab, int i, double *num, const char **str, size_t *lens)
{
	for (int j = 0; j < tab->d; j++)
	{
		num[j] = TrCell(tab, i, j);
		str[j] = NULL;
		lens[j] = 0;
		if (tab->col_kind != NULL && tab->col_kind[j] == TR_COL_CATEGORICAL && !isnan(num[j]))
		{
			str[j] = TrCategoryValue(tab, j, num[j]);
			lens[j] = strlen(str[j]);
		}
	}
}

/*
 * Two fitted members: their stored validation predictions read back, and
 * an ensemble of them predicts the weighted average of their outputs.
 */
static void
TestEnsembleModel(int kind)
{
	const char *fams[2] = {kind == TR_KIND_CLASSIFICATION ? "softmax" : "ridge", "random_forest"};
	TrTable		tab;
	TrPrepOptions opt;
	TrResult	res[2];
	TrValPreds	vp[2];
	TrModel    *members[2];
	TrModel    *ens = NULL;
	TrResult	eres;
	int64_t		ids[2] = {11, 12};
	double		w[2] = {0.25, 0.75};
	char		err[256] = "";
	int			ok = 1;
	double		maxdiff = 0;
	int64_t    *rruns;
	double	   *rw;
	int			n;

	PredictTestTable(&tab, 150, kind, 0, 5);
	memset(&opt, 0, sizeof(opt));
	opt.val_fraction = 0.2;
	opt.seed = 3;
	opt.impute = 1;
	for (int f = 0; f < 2; f++)
	{
		json_object *metrics = NULL;

		ok &= TrRunCandidate(&tab, fams[f], NULL, &opt, NULL, NULL, NULL, 1, &res[f], &metrics) == 0;
		json_object_put(metrics);
		ok &= res[f].predictions != NULL &&
			TrValPredsRead(res[f].predictions, res[f].predictions_len, &vp[f], err, sizeof(err)) == 0;
	}
	CHECK(ok, "ensemble (%s): both members stored their validation predictions (%s)",
		  kind == TR_KIND_CLASSIFICATION ? "classification" : "regression", err);
	if (!ok)
		return;
	CHECK(vp[0].n == 30 && TrValPredsAligned(&vp[0], &vp[1]),
		  "ensemble: the members' predictions are of the same 30 rows");
	TrResultInit(&eres);
	ok = TrEnsembleArtifact(&vp[0], 2, ids, w, &eres) == 0 &&
		TrEnsembleMembers(eres.artifact, eres.artifact_len, &n, &rruns, &rw, err, sizeof(err)) == TR_ART_OK &&
		n == 2 && rruns[0] == 11 && rruns[1] == 12 && fabs(rw[1] - 0.75) < 1e-15;
	CHECK(ok, "ensemble: its artifact names the members and weights (%s)", err);
	if (ok)
	{
		free(rruns);
		free(rw);
	}
	CHECK(TrEnsembleMembers(res[0].artifact, res[0].artifact_len, &n, &rruns, &rw, err,
							sizeof(err)) == TR_ART_UNSUPPORTED,
		  "ensemble: a member's artifact is no ensemble");
	ok = 1;
	for (int f = 0; f < 2; f++)
		ok &= TrModelLoad(res[f].artifact, res[f].artifact_len, &members[f], err, sizeof(err)) == TR_ART_OK;
	ok = ok && TrEnsembleBuild(eres.artifact, eres.artifact_len, members, 2, &ens, err,
							   sizeof(err)) == TR_ART_OK;
	CHECK(ok, "ensemble: the model builds from its members (%s)", err);
	if (ok)
	{
		TrModel    *solo[2];
		double		num[8],
					out[4],
					o0[4],
					o1[4];
		const char *str[8];
		size_t		lens[8];
		float	   *x = malloc(sizeof(float) * (ens->d + 1));
		float	   *x0,
				   *x1;

		CHECK(ens->n_raw == tab.d && ens->n_out == (kind == TR_KIND_CLASSIFICATION ? 3 : 1),
			  "ensemble: it reads the task's %d columns", tab.d);
		TrModelLoad(res[0].artifact, res[0].artifact_len, &solo[0], err, sizeof(err));
		TrModelLoad(res[1].artifact, res[1].artifact_len, &solo[1], err, sizeof(err));
		x0 = malloc(sizeof(float) * (solo[0]->d + 1));
		x1 = malloc(sizeof(float) * (solo[1]->d + 1));
		for (int i = 0; i < tab.n; i++)
		{
			RawRow(&tab, i, num, str, lens);
			TrModelEncode(ens, num, str, lens, x);
			TrModelEncode(solo[0], num, str, lens, x0);
			TrModelEncode(solo[1], num, str, lens, x1);
			TrModelPredict(ens, x, 1, out);
			TrModelPredict(solo[0], x0, 1, o0);
			TrModelPredict(solo[1], x1, 1, o1);
			for (int c = 0; c < ens->n_out; c++)
				maxdiff = fmax(maxdiff, fabs(out[c] - (0.25 * o0[c] + 0.75 * o1[c])));
		}
		CHECK(maxdiff < 1e-12, "ensemble: predict is 0.25 x member 1 + 0.75 x member 2 on every row (%.2g)",
			  maxdiff);
		/* the stored predictions are what the stored model predicts */
		maxdiff = 0;
		for (int i = 0; i < vp[0].n; i++)
		{
			RawRow(&tab, vp[0].rows[i], num, str, lens);
			TrModelEncode(solo[0], num, str, lens, x0);
			TrModelPredict(solo[0], x0, 1, o0);
			for (int c = 0; c < vp[0].n_out; c++)
				maxdiff = fmax(maxdiff, fabs(o0[c] - vp[0].pred[(size_t) i * vp[0].n_out + c]) /
							   fmax(1.0, fabs(o0[c])));
		}
		CHECK(maxdiff < 1e-5, "ensemble: the stored validation predictions are the model's (%.2g)",
			  maxdiff);
		free(x);
		free(x0);
		free(x1);
		TrModelFree(solo[0]);
		TrModelFree(solo[1]);
		TrModelFree(ens);
	}
	/* members of another kind are refused */
	if (kind == TR_KIND_CLASSIFICATION)
	{
		TrValPreds	bad = vp[0];
		TrResult	bres;
		TrModel    *two[2];

		bad.n_classes = 2;
		TrResultInit(&bres);
		bad.class_names = vp[0].class_names;
		TrEnsembleArtifact(&bad, 2, ids, w, &bres);
		TrModelLoad(res[0].artifact, res[0].artifact_len, &two[0], err, sizeof(err));
		TrModelLoad(res[1].artifact, res[1].artifact_len, &two[1], err, sizeof(err));
		CHECK(TrEnsembleBuild(bres.artifact, bres.artifact_len, two, 2, &ens, err, sizeof(err)) == TR_ART_BAD,
			  "ensemble: members of other classes are refused (%s)", err);
		TrResultFree(&bres);
	}
	TrResultFree(&eres);
	for (int f = 0; f < 2; f++)
	{
		TrValPredsFree(&vp[f]);
		TrResultFree(&res[f]);
	}
	TrTableFree(&tab);
}

void
TestEnsemble(void)
{
	TestGreedyClassification();
	TestGreedyReplacement();
	TestCrossFitNoise();
	TestCrossFitExactAndTiny();
	TestEnsembleModel(TR_KIND_CLASSIFICATION);
	TestEnsembleModel(TR_KIND_REGRESSION);
}
