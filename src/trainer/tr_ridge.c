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
	double	   *Xc = malloc(sizeof(double) * (size_t) n * d);
	double	   *Yc = malloc(sizeof(double) * (size_t) n * k);
	double	   *xmean = calloc(d, sizeof(double));
	double	   *ymean = calloc(k, sizeof(double));
	double	   *G = malloc(sizeof(double) * (size_t) m * m);
	double	   *R = malloc(sizeof(double) * (size_t) m * k);
	double	   *W = malloc(sizeof(double) * (size_t) d * k);
	double	   *bias = malloc(sizeof(double) * k);
	double	   *S = malloc(sizeof(double) * (size_t) (nv > n ? nv : n) * k);
	double	   *Xv = malloc(sizeof(double) * (size_t) (nv > 0 ? nv : 1) * d);
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = malloc(sizeof(double) * (nv > 0 ? nv : 1));
	double		sse = 0.0;
	int			rc = -1,
				used_svd = 0;
	lapack_int	info;

	if (!Xc || !Yc || !xmean || !ymean || !G || !R || !W || !bias || !S ||
		!Xv || !pred || !tpred)
	{
		TrSetError(res, "out of memory for ridge (%d rows x %d features)", n, d);
		goto done;
	}

	/* centred copies in double */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			xmean[j] += data->Xtr[(size_t) i * d + j];
	for (int j = 0; j < d; j++)
		xmean[j] /= n;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			Xc[(size_t) i * d + j] = data->Xtr[(size_t) i * d + j] - xmean[j];
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
	cblas_dsyrk(CblasRowMajor, CblasUpper, dual ? CblasNoTrans : CblasTrans,
				m, dual ? d : n, 1.0, Xc, d, 0.0, G, m);
	for (int j = 0; j < m; j++)
		G[(size_t) j * m + j] += alpha;
	if (dual)
		memcpy(R, Yc, sizeof(double) * (size_t) n * k);
	else
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, k, n,
					1.0, Xc, d, Yc, k, 0.0, R, k);

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
		memcpy(A, Xc, sizeof(double) * (size_t) n * d);
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
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, d,
				1.0, Xc, d, W, k, 0.0, S, k);
	for (size_t i = 0; i < (size_t) n * k; i++)
	{
		double		e = S[i] - Yc[i];

		sse += e * e;
	}
	res->train_loss = sse / ((double) n * k);

	/* validation */
	for (size_t i = 0; i < (size_t) nv * d; i++)
		Xv[i] = data->Xva[i];
	for (int i = 0; i < nv; i++)
		memcpy(S + (size_t) i * k, bias, sizeof(double) * k);
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nv, k, d,
				1.0, Xv, d, W, k, 1.0, S, k);
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
	free(Yc);
	free(xmean);
	free(ymean);
	free(G);
	free(R);
	free(W);
	free(bias);
	free(S);
	free(Xv);
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
