/*-------------------------------------------------------------------------
 *
 * tr_ridge.c
 *	  Family "ridge": ridge regression, and the ridge (least-squares)
 *	  classifier on +-1 one-vs-rest targets.
 *
 * Minimises |Y - X W - 1 b^T|^2 + alpha |W|^2 (sums, not means: the same
 * objective as scikit-learn's Ridge and RidgeClassifier).  The intercept is
 * not penalised, so X and Y are centred on the training means first and
 * b = mean(Y) - mean(X) W.  The normal equations are solved in double:
 *
 *	   primal (n >= d):  (Xc^T Xc + alpha I) W = Xc^T Yc	  d x d system
 *	   dual	  (n <  d):  (Xc Xc^T + alpha I) A = Yc, W = Xc^T A	  n x n
 *
 * with the Gram matrix from DSYRK and a Cholesky solve (LAPACKE_dposv).
 * The primal Gram matrix and right-hand side are summed over blocks of
 * RIDGE_BLOCK centred rows converted to double, so the fit needs a d x d
 * matrix beside the float data instead of a double copy of it (twice the
 * data: 300 MB on Fashion-MNIST); the dual and the SVD fallback work on
 * the whole centred matrix.
 * When the system is not positive definite (alpha = 0 with collinear or
 * constant columns) it falls back to the minimum-norm least-squares
 * solution by SVD (LAPACKE_dgelsd).  Classification targets follow
 * scikit-learn's LabelBinarizer: +1 for the class, -1 otherwise, and a
 * single column for two classes.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_ridge.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "trainer/trainer.h"

#define RIDGE_BLOCK 1024

/* rows i0 .. i0+rows-1 of X (float, d wide) minus xmean, as doubles */
static void
CentredBlock(const float *X, const double *xmean, size_t i0, int rows, int d,
			 double *out)
{
	for (int i = 0; i < rows; i++)
	{
		const float *x = X + (i0 + i) * (size_t) d;
		double	   *o = out + (size_t) i * d;

		for (int j = 0; j < d; j++)
			o[j] = x[j] - xmean[j];
	}
}

/*
 * Minimum-norm least squares min |Xc W - Yc| by SVD: A (n x d) and B
 * (max(n, d) x k, first n rows = Yc) are overwritten; W in B's first d rows.
 */
static int
SolveLeastSquares(double *A, int n, int d, double *B, int k, TrResult *res)
{
	double	   *s = malloc(sizeof(double) * (n < d ? n : d));
	lapack_int	rank,
				info;

	if (s == NULL)
	{
		TrSetError(res, "out of memory for ridge least squares");
		return -1;
	}
	if (n < 1 || d < 1 || k < 1)
	{
		free(s);
		TrSetError(res, "ridge: empty least-squares problem (%d x %d, %d targets)", n, d, k);
		return -1;
	}
	info = LAPACKE_dgelsd(LAPACK_ROW_MAJOR, n, d, k, A, d, B, k, s, -1.0, &rank);
	free(s);
	if (info != 0)
	{
		TrSetError(res, "ridge: LAPACKE_dgelsd failed (info %d)", (int) info);
		return -1;
	}
	return 0;
}

/* One ridge fit: sizes and buffers its steps share. */
typedef struct RidgeWork
{
	const TrData *data;
	int			n;				/* training rows */
	int			nv;				/* validation rows */
	int			d;				/* features */
	int			k;				/* targets: 1, or one per class beyond two */
	int			m;				/* order of the normal equations */
	int			dual;			/* n < d: solve in row space */
	int			blk;			/* rows converted at a time */
	double		alpha;
	double	   *Xc;				/* the centred rows, dual only */
	double	   *Xb;				/* blk x d */
	double	   *Yc;				/* n x k centred targets */
	double	   *xmean;
	double	   *ymean;
	double	   *G;				/* m x m */
	double	   *R;				/* m x k */
	double	   *W;				/* d x k */
	double	   *bias;			/* k */
	double	   *S;				/* max(n, nv) x k scores */
	int			used_svd;
} RidgeWork;

static void
RidgeWorkFree(RidgeWork *w)
{
	free(w->Xc);
	free(w->Xb);
	free(w->Yc);
	free(w->xmean);
	free(w->ymean);
	free(w->G);
	free(w->R);
	free(w->W);
	free(w->bias);
	free(w->S);
}

static int
RidgeWorkAlloc(RidgeWork *w, const TrData *data, double alpha)
{
	int			regression = data->kind == TR_KIND_REGRESSION;

	memset(w, 0, sizeof(*w));
	w->data = data;
	w->n = data->n_train;
	w->nv = data->n_val;
	w->d = data->d;
	w->k = regression ? 1 : (data->n_classes == 2 ? 1 : data->n_classes);
	w->alpha = alpha;
	w->dual = w->n < w->d;
	w->m = w->dual ? w->n : w->d;
	w->blk = w->n < RIDGE_BLOCK ? (w->n > 0 ? w->n : 1) : RIDGE_BLOCK;
	w->Xb = malloc(sizeof(double) * (size_t) w->blk * w->d);
	w->Yc = malloc(sizeof(double) * (size_t) w->n * w->k);
	w->xmean = calloc(w->d, sizeof(double));
	w->ymean = calloc(w->k, sizeof(double));
	w->G = malloc(sizeof(double) * (size_t) w->m * w->m);
	w->R = malloc(sizeof(double) * (size_t) w->m * w->k);
	w->W = malloc(sizeof(double) * (size_t) w->d * w->k);
	w->bias = malloc(sizeof(double) * w->k);
	w->S = malloc(sizeof(double) * (size_t) (w->nv > w->n ? w->nv : w->n) * w->k);
	if (w->dual)
		w->Xc = malloc(sizeof(double) * (size_t) w->n * w->d);
	return w->Xb && w->Yc && w->xmean && w->ymean && w->G && w->R && w->W &&
		w->bias && w->S && (!w->dual || w->Xc);
}

/* Column means, and the targets (+-1 per class) centred, in double. */
static void
RidgeCentre(RidgeWork *w)
{
	const TrData *data = w->data;
	int			n = w->n,
				d = w->d,
				k = w->k;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			w->xmean[j] += data->Xtr[(size_t) i * d + j];
	for (int j = 0; j < d; j++)
		w->xmean[j] /= n;
	for (int i = 0; i < n; i++)
		for (int c = 0; c < k; c++)
		{
			double		v;

			if (data->kind == TR_KIND_REGRESSION)
				v = data->ttr[i];
			else if (k == 1)
				v = data->ytr[i] == 1 ? 1.0 : -1.0;
			else
				v = data->ytr[i] == c ? 1.0 : -1.0;
			w->Yc[(size_t) i * k + c] = v;
			w->ymean[c] += v;
		}
	for (int c = 0; c < k; c++)
		w->ymean[c] /= n;
	for (int i = 0; i < n; i++)
		for (int c = 0; c < k; c++)
			w->Yc[(size_t) i * k + c] -= w->ymean[c];
}

/* G = Xc^T Xc (primal) or Xc Xc^T (dual), upper triangle, + alpha I; R. */
static void
RidgeNormalEquations(RidgeWork *w)
{
	int			n = w->n,
				d = w->d,
				k = w->k,
				m = w->m;

	if (w->dual)
	{
		CentredBlock(w->data->Xtr, w->xmean, 0, n, d, w->Xc);
		cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, m, d, 1.0, w->Xc, d,
					0.0, w->G, m);
		memcpy(w->R, w->Yc, sizeof(double) * (size_t) n * k);
	}
	else
		for (int i0 = 0; i0 < n; i0 += w->blk)
		{
			int			rows = n - i0 < w->blk ? n - i0 : w->blk;

			CentredBlock(w->data->Xtr, w->xmean, i0, rows, d, w->Xb);
			cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, rows, 1.0,
						w->Xb, d, i0 > 0 ? 1.0 : 0.0, w->G, m);
			cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, k, rows,
						1.0, w->Xb, d, w->Yc + (size_t) i0 * k, k, i0 > 0 ? 1.0 : 0.0,
						w->R, k);
		}
	for (int j = 0; j < m; j++)
		w->G[(size_t) j * m + j] += w->alpha;
}

/* Singular system: minimum-norm least squares on Xc (alpha = 0 semantics). */
static int
RidgeMinNorm(RidgeWork *w, TrResult *res)
{
	size_t		rows = w->n > w->d ? w->n : w->d;
	double	   *B = calloc(rows * w->k, sizeof(double));
	double	   *A = malloc(sizeof(double) * (size_t) w->n * w->d);
	int			rc = -1;

	if (B == NULL || A == NULL)
		TrSetError(res, "out of memory for ridge least squares");
	else
	{
		CentredBlock(w->data->Xtr, w->xmean, 0, w->n, w->d, A);
		memcpy(B, w->Yc, sizeof(double) * (size_t) w->n * w->k);
		rc = SolveLeastSquares(A, w->n, w->d, B, w->k, res);
		if (rc == 0)
			memcpy(w->W, B, sizeof(double) * (size_t) w->d * w->k);
	}
	free(B);
	free(A);
	w->used_svd = 1;
	return rc;
}

/* W from the normal equations (or least squares), then the bias. */
static int
RidgeSolve(RidgeWork *w, TrResult *res)
{
	lapack_int	info;

	/* LAPACKE_dposv: order m >= 1, k >= 1 right-hand sides, lda = m, ldb = k */
	if (w->m < 1 || w->k < 1)
	{
		TrSetError(res, "ridge: empty system (%d x %d, %d targets)", w->m, w->m, w->k);
		return -1;
	}
	info = w->alpha > 0.0 ?
		LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', w->m, w->k, w->G, w->m, w->R, w->k) : 1;
	if (info < 0)
	{
		TrSetError(res, "ridge: LAPACKE_dposv rejected argument %d", (int) -info);
		return -1;
	}
	if (info > 0 && RidgeMinNorm(w, res) != 0)
		return -1;
	if (info == 0 && w->dual)
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w->d, w->k, w->n,
					1.0, w->Xc, w->d, w->R, w->k, 0.0, w->W, w->k);
	else if (info == 0)
		memcpy(w->W, w->R, sizeof(double) * (size_t) w->d * w->k);
	for (int c = 0; c < w->k; c++)
	{
		w->bias[c] = w->ymean[c];
		for (int j = 0; j < w->d; j++)
			w->bias[c] -= w->xmean[j] * w->W[(size_t) j * w->k + c];
	}
	return 0;
}

/* Mean squared error of the (centred) fit on the training rows. */
static double
RidgeTrainLoss(RidgeWork *w)
{
	int			n = w->n,
				d = w->d,
				k = w->k;
	double		sse = 0.0;

	for (int i0 = 0; i0 < n; i0 += w->blk)
	{
		int			rows = n - i0 < w->blk ? n - i0 : w->blk;

		CentredBlock(w->data->Xtr, w->xmean, i0, rows, d, w->Xb);
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, k, d,
					1.0, w->Xb, d, w->W, k, 0.0, w->S + (size_t) i0 * k, k);
	}
	for (size_t i = 0; i < (size_t) n * k; i++)
	{
		double		e = w->S[i] - w->Yc[i];

		sse += e * e;
	}
	return sse / ((double) n * k);
}

/* Validation scores bias + X W (rows converted a block at a time), scored. */
static int
RidgeValidate(RidgeWork *w, TrResult *res)
{
	const TrData *data = w->data;
	int			nv = w->nv,
				d = w->d,
				k = w->k;
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = malloc(sizeof(double) * (nv > 0 ? nv : 1));

	if (pred == NULL || tpred == NULL)
	{
		free(pred);
		free(tpred);
		TrSetError(res, "out of memory for ridge (%d rows x %d features)", w->n, d);
		return -1;
	}
	for (int i = 0; i < nv; i++)
		memcpy(w->S + (size_t) i * k, w->bias, sizeof(double) * k);
	for (int i0 = 0; i0 < nv; i0 += w->blk)
	{
		int			rows = nv - i0 < w->blk ? nv - i0 : w->blk;

		for (size_t c = 0; c < (size_t) rows * d; c++)
			w->Xb[c] = data->Xva[(size_t) i0 * d + c];
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, k, d,
					1.0, w->Xb, d, w->W, k, 1.0, w->S + (size_t) i0 * k, k);
	}
	if (data->kind == TR_KIND_REGRESSION)
	{
		for (int i = 0; i < nv; i++)
			tpred[i] = w->S[i];
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	else
	{
		for (int i = 0; i < nv; i++)
		{
			const double *s = w->S + (size_t) i * k;
			int			best = 0;

			if (k == 1)
				best = s[0] > 0.0 ? 1 : 0;
			else
				for (int c = 1; c < k; c++)
					if (s[c] > s[best])
						best = c;
			pred[i] = best;
		}
		res->score = TrAccuracy(pred, data->yva, nv);
	}
	free(pred);
	free(tpred);
	return 0;
}

static int
RidgeFit(const TrContext *ctx, TrResult *res)
{
	RidgeWork	w;
	TrArtifact	art;
	int64_t		dims[2];
	int			rc = -1;

	if (!RidgeWorkAlloc(&w, ctx->data, TrParamDouble(ctx->params, "alpha", 1.0)))
	{
		TrSetError(res, "out of memory for ridge (%d rows x %d features)", w.n, w.d);
		goto done;
	}
	RidgeCentre(&w);
	if (TrCancelled(ctx))
	{
		TrSetError(res, "cancelled");
		goto done;
	}
	RidgeNormalEquations(&w);
	if (RidgeSolve(&w, res) != 0)
		goto done;
	res->train_loss = RidgeTrainLoss(&w);
	if (RidgeValidate(&w, res) != 0)
		goto done;
	res->epochs = 1;
	TrReportProgress(ctx, 1, res->train_loss);
	res->extra = json_object_new_object();
	if (res->extra != NULL)
		json_object_object_add(res->extra, "solver", json_object_new_string(
											w.used_svd ? "dgelsd" : w.dual ? "dposv_dual" : "dposv"));
	TrArtifactBegin(&art, "ridge", ctx->data);
	dims[0] = w.d;
	dims[1] = w.k;
	TrArtifactAdd(&art, "W", TR_DT_F64, 2, dims, w.W);
	dims[0] = w.k;
	TrArtifactAdd(&art, "b", TR_DT_F64, 1, dims, w.bias);
	if (TrArtifactFinish(&art, res) != 0)
		goto done;
	rc = 0;

done:
	RidgeWorkFree(&w);
	return rc;
}

static const TrParamSpec ridge_params[] = {
	{"alpha", TR_PARAM_DOUBLE, 0.0, 1e12, NULL,
	"L2 penalty on summed squared error, as sklearn Ridge (default 1.0)"},
	{NULL}
};

const TrFamily TrFamilyRidge = {
	.name = "ridge",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = RidgeFit,
	.params = ridge_params,
	.summary = "ridge regression / least-squares classifier (Cholesky, SVD fallback)",
};
