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
 *	  src/trainer/tr_ridge.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "trainer.h"

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

static int
RidgeFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			regression = data->kind == TR_KIND_REGRESSION;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d;
	int			k = regression ? 1 : (data->n_classes == 2 ? 1 : data->n_classes);
	double		alpha = TrParamDouble(ctx->params, "alpha", 1.0);
	int			dual = n < d;
	int			m = dual ? n : d;	/* order of the system */
	int			blk = n < RIDGE_BLOCK ? (n > 0 ? n : 1) : RIDGE_BLOCK;
	double	   *Xc = NULL;		/* the centred rows, dual and SVD only */
	double	   *Xb = malloc(sizeof(double) * (size_t) blk * d);
	double	   *Yc = malloc(sizeof(double) * (size_t) n * k);
	double	   *xmean = calloc(d, sizeof(double));
	double	   *ymean = calloc(k, sizeof(double));
	double	   *G = malloc(sizeof(double) * (size_t) m * m);
	double	   *R = malloc(sizeof(double) * (size_t) m * k);
	double	   *W = malloc(sizeof(double) * (size_t) d * k);
	double	   *bias = malloc(sizeof(double) * k);
	double	   *S = malloc(sizeof(double) * (size_t) (nv > n ? nv : n) * k);
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = malloc(sizeof(double) * (nv > 0 ? nv : 1));
	double		sse = 0.0;
	int			rc = -1,
				used_svd = 0;
	lapack_int	info;

	if (!Xb || !Yc || !xmean || !ymean || !G || !R || !W || !bias || !S ||
		!pred || !tpred)
	{
		TrSetError(res, "out of memory for ridge (%d rows x %d features)", n, d);
		goto done;
	}

	/* column means; centred targets in double */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			xmean[j] += data->Xtr[(size_t) i * d + j];
	for (int j = 0; j < d; j++)
		xmean[j] /= n;
	for (int i = 0; i < n; i++)
		for (int c = 0; c < k; c++)
		{
			double		v;

			if (regression)
				v = data->ttr[i];
			else if (k == 1)
				v = data->ytr[i] == 1 ? 1.0 : -1.0;
			else
				v = data->ytr[i] == c ? 1.0 : -1.0;
			Yc[(size_t) i * k + c] = v;
			ymean[c] += v;
		}
	for (int c = 0; c < k; c++)
		ymean[c] /= n;
	for (int i = 0; i < n; i++)
		for (int c = 0; c < k; c++)
			Yc[(size_t) i * k + c] -= ymean[c];
	if (TrCancelled(ctx))
	{
		TrSetError(res, "cancelled");
		goto done;
	}

	/* G = Xc^T Xc (primal) or Xc Xc^T (dual), upper triangle, + alpha I */
	if (dual)
	{
		if ((Xc = malloc(sizeof(double) * (size_t) n * d)) == NULL)
		{
			TrSetError(res, "out of memory for ridge (%d rows x %d features)", n, d);
			goto done;
		}
		CentredBlock(data->Xtr, xmean, 0, n, d, Xc);
		cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, m, d, 1.0, Xc, d,
					0.0, G, m);
		memcpy(R, Yc, sizeof(double) * (size_t) n * k);
	}
	else
		for (int i0 = 0; i0 < n; i0 += blk)
		{
			int			rows = n - i0 < blk ? n - i0 : blk;

			CentredBlock(data->Xtr, xmean, i0, rows, d, Xb);
			cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, rows, 1.0,
						Xb, d, i0 > 0 ? 1.0 : 0.0, G, m);
			cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, k, rows,
						1.0, Xb, d, Yc + (size_t) i0 * k, k, i0 > 0 ? 1.0 : 0.0,
						R, k);
		}
	for (int j = 0; j < m; j++)
		G[(size_t) j * m + j] += alpha;

	/* LAPACKE_dposv: order m >= 1, k >= 1 right-hand sides, lda = m, ldb = k */
	if (m < 1 || k < 1)
	{
		TrSetError(res, "ridge: empty system (%d x %d, %d targets)", m, m, k);
		goto done;
	}
	info = alpha > 0.0 ?
		LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', m, k, G, m, R, k) : 1;
	if (info < 0)
	{
		TrSetError(res, "ridge: LAPACKE_dposv rejected argument %d", (int) -info);
		goto done;
	}
	if (info > 0)
	{
		/* singular: minimum-norm least squares on Xc (alpha = 0 semantics) */
		size_t		rows = n > d ? n : d;
		double	   *B = calloc(rows * k, sizeof(double));
		double	   *A = malloc(sizeof(double) * (size_t) n * d);

		if (B == NULL || A == NULL)
		{
			free(B);
			free(A);
			TrSetError(res, "out of memory for ridge least squares");
			goto done;
		}
		CentredBlock(data->Xtr, xmean, 0, n, d, A);
		memcpy(B, Yc, sizeof(double) * (size_t) n * k);
		if (SolveLeastSquares(A, n, d, B, k, res) != 0)
		{
			free(B);
			free(A);
			goto done;
		}
		memcpy(W, B, sizeof(double) * (size_t) d * k);
		free(B);
		free(A);
		used_svd = 1;
	}
	else if (dual)
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, k, n,
					1.0, Xc, d, R, k, 0.0, W, k);
	else
		memcpy(W, R, sizeof(double) * (size_t) d * k);
	for (int c = 0; c < k; c++)
	{
		bias[c] = ymean[c];
		for (int j = 0; j < d; j++)
			bias[c] -= xmean[j] * W[(size_t) j * k + c];
	}

	/* training loss: mean squared error of the (centred) fit */
	for (int i0 = 0; i0 < n; i0 += blk)
	{
		int			rows = n - i0 < blk ? n - i0 : blk;

		CentredBlock(data->Xtr, xmean, i0, rows, d, Xb);
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, k, d,
					1.0, Xb, d, W, k, 0.0, S + (size_t) i0 * k, k);
	}
	for (size_t i = 0; i < (size_t) n * k; i++)
	{
		double		e = S[i] - Yc[i];

		sse += e * e;
	}
	res->train_loss = sse / ((double) n * k);

	/* validation: bias + X W, the rows converted a block at a time */
	for (int i = 0; i < nv; i++)
		memcpy(S + (size_t) i * k, bias, sizeof(double) * k);
	for (int i0 = 0; i0 < nv; i0 += blk)
	{
		int			rows = nv - i0 < blk ? nv - i0 : blk;

		for (size_t c = 0; c < (size_t) rows * d; c++)
			Xb[c] = data->Xva[(size_t) i0 * d + c];
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, k, d,
					1.0, Xb, d, W, k, 1.0, S + (size_t) i0 * k, k);
	}
	if (regression)
	{
		for (int i = 0; i < nv; i++)
			tpred[i] = S[i];
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	else
	{
		for (int i = 0; i < nv; i++)
		{
			const double *s = S + (size_t) i * k;
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
	res->epochs = 1;
	TrReportProgress(ctx, 1, res->train_loss);
	res->extra = json_object_new_object();
	if (res->extra != NULL)
	{
		json_object_object_add(res->extra, "solver", json_object_new_string(
											used_svd ? "dgelsd" : dual ? "dposv_dual" : "dposv"));
	}

	{
		TrArtifact art;
		int64_t		dims[2] = {d, k};

		TrArtifactBegin(&art, "ridge", data);
		TrArtifactAdd(&art, "W", TR_DT_F64, 2, dims, W);
		dims[0] = k;
		TrArtifactAdd(&art, "b", TR_DT_F64, 1, dims, bias);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;

done:
	free(Xc);
	free(Xb);
	free(Yc);
	free(xmean);
	free(ymean);
	free(G);
	free(R);
	free(W);
	free(bias);
	free(S);
	free(pred);
	free(tpred);
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
