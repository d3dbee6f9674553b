/*-------------------------------------------------------------------------
 *
 * tr_gnb.c
 *	  Family "gnb": Gaussian naive Bayes.
 *
 * Per class c: prior pi_c = n_c / n, per-feature mean mu_cj and variance
 * s2_cj (maximum likelihood, i.e. divided by n_c) plus eps, where eps =
 * var_smoothing * max_j var(x_j) over all training rows, as in
 * scikit-learn's GaussianNB.  The class score of a row x is
 *
 *	   log pi_c - 1/2 sum_j log(2 pi s2_cj) - 1/2 sum_j (x_j - mu_cj)^2 / s2_cj
 *
 * and the quadratic form is expanded into x^2 (1/s2)^T - 2 x (mu/s2)^T +
 * const, i.e. two double GEMMs over the validation rows.  The reported
 * training loss (mean negative log posterior of the true class) uses at
 * most GNB_LOSS_ROWS evenly spaced training rows.  Statistics are
 * accumulated in double (two passes: mean, then centred squares).
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_gnb.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"

#define GNB_LOSS_ROWS 1000
#define GNB_BLOCK 1024			/* rows scored at a time (bounds A and S) */

/* One gnb fit: the statistics, the expanded scoring terms, the buffers. */
typedef struct GnbWork
{
	const TrData *data;
	int			n;
	int			nv;
	int			d;
	int			k;
	double	   *mu;				/* k x d class means */
	double	   *var;			/* k x d class variances + eps */
	double	   *prior;			/* k */
	double	   *cnt;			/* k */
	double	   *colmean;		/* d */
	double	   *colvar;			/* d */
	double	   *B;				/* k x d: 1/s2 */
	double	   *C;				/* k x d: mu/s2 */
	double	   *cst;			/* k: log prior - 1/2 sum log(2 pi s2) + mu^2/s2 */
	double	   *A;				/* GNB_BLOCK x d */
	double	   *S;				/* GNB_BLOCK x k */
	int		   *pred;			/* nv */
} GnbWork;

static void
GnbWorkFree(GnbWork *w)
{
	free(w->mu);
	free(w->var);
	free(w->prior);
	free(w->cnt);
	free(w->colmean);
	free(w->colvar);
	free(w->B);
	free(w->C);
	free(w->cst);
	free(w->A);
	free(w->S);
	free(w->pred);
}

static int
GnbWorkAlloc(GnbWork *w, const TrData *data)
{
	size_t		kd;

	memset(w, 0, sizeof(*w));
	w->data = data;
	w->n = data->n_train;
	w->nv = data->n_val;
	w->d = data->d;
	w->k = data->n_classes;
	kd = (size_t) w->k * w->d;
	w->mu = calloc(kd, sizeof(double));
	w->var = calloc(kd, sizeof(double));
	w->prior = calloc(w->k, sizeof(double));
	w->cnt = calloc(w->k, sizeof(double));
	w->colmean = calloc(w->d, sizeof(double));
	w->colvar = calloc(w->d, sizeof(double));
	w->B = malloc(sizeof(double) * kd);
	w->C = malloc(sizeof(double) * kd);
	w->cst = malloc(sizeof(double) * w->k);
	w->A = malloc(sizeof(double) * (size_t) GNB_BLOCK * w->d);
	w->S = malloc(sizeof(double) * (size_t) GNB_BLOCK * w->k);
	w->pred = malloc(sizeof(int) * (w->nv > 0 ? w->nv : 1));
	return w->mu && w->var && w->prior && w->cnt && w->colmean && w->colvar &&
		w->B && w->C && w->cst && w->A && w->S && w->pred;
}

/* Class means, priors and smoothed variances (two passes, in double). */
static void
GnbStatistics(GnbWork *w, double smoothing)
{
	const TrData *data = w->data;
	int			n = w->n,
				d = w->d;
	double		eps = 0.0;

	for (int i = 0; i < n; i++)
	{
		const float *x = data->Xtr + (size_t) i * d;
		double	   *m = w->mu + (size_t) data->ytr[i] * d;

		w->cnt[data->ytr[i]] += 1.0;
		for (int j = 0; j < d; j++)
		{
			m[j] += x[j];
			w->colmean[j] += x[j];
		}
	}
	for (int c = 0; c < w->k; c++)
		for (int j = 0; j < d; j++)
			w->mu[(size_t) c * d + j] /= (w->cnt[c] > 0 ? w->cnt[c] : 1.0);
	for (int j = 0; j < d; j++)
		w->colmean[j] /= n;
	for (int i = 0; i < n; i++)
	{
		const float *x = data->Xtr + (size_t) i * d;
		const double *m = w->mu + (size_t) data->ytr[i] * d;
		double	   *v = w->var + (size_t) data->ytr[i] * d;

		for (int j = 0; j < d; j++)
		{
			double		e = x[j] - m[j],
						g = x[j] - w->colmean[j];

			v[j] += e * e;
			w->colvar[j] += g * g;
		}
	}
	for (int j = 0; j < d; j++)
		eps = fmax(eps, w->colvar[j] / n);
	eps *= smoothing;
	if (!(eps > 0.0))
		eps = smoothing > 0.0 ? smoothing : 1e-300;		/* all columns constant */
	for (int c = 0; c < w->k; c++)
	{
		w->prior[c] = w->cnt[c] / n;
		for (int j = 0; j < d; j++)
			w->var[(size_t) c * d + j] = w->var[(size_t) c * d + j] /
				(w->cnt[c] > 0 ? w->cnt[c] : 1.0) + eps;
	}
}

/* B = 1/s2, C = mu/s2, cst_c = log prior - 1/2 sum (log(2 pi s2) + mu^2/s2). */
static void
GnbScoringTerms(GnbWork *w)
{
	int			d = w->d;

	for (int c = 0; c < w->k; c++)
	{
		double		s = w->prior[c] > 0 ? log(w->prior[c]) : -INFINITY;

		for (int j = 0; j < d; j++)
		{
			double		v = w->var[(size_t) c * d + j],
						m = w->mu[(size_t) c * d + j];

			w->B[(size_t) c * d + j] = 1.0 / v;
			w->C[(size_t) c * d + j] = m / v;
			s -= 0.5 * (log(2.0 * M_PI * v) + m * m / v);
		}
		w->cst[c] = s;
	}
}

/*
 * Class scores of rows X[i0 * stride], X[(i0 + 1) * stride], ... (rows of
 * them, at most GNB_BLOCK) into S: -1/2 X^2 B^T + X C^T + cst.
 */
static void
GnbScoreBlock(GnbWork *w, const float *X, int i0, int rows, int stride)
{
	int			d = w->d,
				k = w->k;

	for (int i = 0; i < rows; i++)
	{
		const float *src = X + (size_t) (i0 + i) * stride * d;

		for (int j = 0; j < d; j++)
			w->A[(size_t) i * d + j] = (double) src[j] * src[j];
	}
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, d,
				-0.5, w->A, d, w->B, d, 0.0, w->S, k);
	for (int i = 0; i < rows; i++)
	{
		const float *src = X + (size_t) (i0 + i) * stride * d;

		for (int j = 0; j < d; j++)
			w->A[(size_t) i * d + j] = (double) src[j];
	}
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, d,
				1.0, w->A, d, w->C, d, 1.0, w->S, k);
	for (int i = 0; i < rows; i++)
		for (int c = 0; c < k; c++)
			w->S[(size_t) i * k + c] += w->cst[c];
}

/* Index of the largest of s[0..k). */
static int
ArgMax(const double *s, int k)
{
	int			best = 0;

	for (int c = 1; c < k; c++)
		if (s[c] > s[best])
			best = c;
	return best;
}

/*
 * Mean negative log posterior of the true class over at most GNB_LOSS_ROWS
 * evenly strided training rows (so the loss never costs more than the fit).
 */
static double
GnbTrainLoss(GnbWork *w)
{
	int			stride = (w->n + GNB_LOSS_ROWS - 1) / GNB_LOSS_ROWS;
	int			m = (w->n + stride - 1) / stride;
	double		nll = 0.0;

	for (int i0 = 0; i0 < m; i0 += GNB_BLOCK)
	{
		int			rows = m - i0 < GNB_BLOCK ? m - i0 : GNB_BLOCK;

		GnbScoreBlock(w, w->data->Xtr, i0, rows, stride);
		for (int i = 0; i < rows; i++)
		{
			const double *s = w->S + (size_t) i * w->k;
			int			best = ArgMax(s, w->k);
			double		sum = 0.0;

			for (int c = 0; c < w->k; c++)
				sum += exp(s[c] - s[best]);
			nll += s[best] + log(sum) - s[w->data->ytr[(size_t) (i0 + i) * stride]];
		}
	}
	return nll / m;
}

/* The most probable class of every validation row, into pred. */
static void
GnbPredictValidation(GnbWork *w)
{
	for (int i0 = 0; i0 < w->nv; i0 += GNB_BLOCK)
	{
		int			rows = w->nv - i0 < GNB_BLOCK ? w->nv - i0 : GNB_BLOCK;

		GnbScoreBlock(w, w->data->Xva, i0, rows, 1);
		for (int i = 0; i < rows; i++)
			w->pred[i0 + i] = ArgMax(w->S + (size_t) i * w->k, w->k);
	}
}

static int
GnbFit(const TrContext *ctx, TrResult *res)
{
	GnbWork		w;
	TrArtifact	art;
	int64_t		dims[2];
	int			rc = -1;

	if (!GnbWorkAlloc(&w, ctx->data))
	{
		TrSetError(res, "out of memory for gnb (%d features x %d classes)", w.d, w.k);
		goto done;
	}
	GnbStatistics(&w, TrParamDouble(ctx->params, "var_smoothing", 1e-9));
	GnbScoringTerms(&w);
	if (TrCancelled(ctx))
	{
		TrSetError(res, "cancelled");
		goto done;
	}
	res->train_loss = GnbTrainLoss(&w);
	if (TrCancelled(ctx))
	{
		TrSetError(res, "cancelled");
		goto done;
	}
	GnbPredictValidation(&w);
	res->score = TrAccuracy(w.pred, ctx->data->yva, w.nv);
	res->epochs = 1;
	TrReportProgress(ctx, 1, res->train_loss);
	TrArtifactBegin(&art, "gnb", ctx->data);
	dims[0] = w.k;
	dims[1] = w.d;
	TrArtifactAdd(&art, "theta", TR_DT_F64, 2, dims, w.mu);
	TrArtifactAdd(&art, "var", TR_DT_F64, 2, dims, w.var);
	dims[0] = w.k;
	TrArtifactAdd(&art, "prior", TR_DT_F64, 1, dims, w.prior);
	if (TrArtifactFinish(&art, res) == 0)
		rc = 0;

done:
	GnbWorkFree(&w);
	return rc;
}

static const TrParamSpec gnb_params[] = {
	{"var_smoothing", TR_PARAM_DOUBLE, 0.0, 1.0, NULL,
	"added variance, times the largest feature variance (default 1e-9)"},
	{NULL}
};

const TrFamily TrFamilyGnb = {
	.name = "gnb",
	.supports_classification = 1,
	.supports_regression = 0,
	.needs_image = 0,
	.fit = GnbFit,
	.params = gnb_params,
	.summary = "Gaussian naive Bayes",
};
