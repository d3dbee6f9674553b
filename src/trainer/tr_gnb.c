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
 *	  src/trainer/tr_gnb.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer.h"

#define GNB_LOSS_ROWS 1000
#define GNB_BLOCK 1024			/* rows scored at a time (bounds A and S) */

static int
GnbFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d,
				k = data->n_classes;
	double		smoothing = TrParamDouble(ctx->params, "var_smoothing", 1e-9);
	double	   *mu = calloc((size_t) k * d, sizeof(double));
	double	   *var = calloc((size_t) k * d, sizeof(double));
	double	   *prior = calloc(k, sizeof(double));
	double	   *cnt = calloc(k, sizeof(double));
	double	   *colmean = calloc(d, sizeof(double));
	double	   *colvar = calloc(d, sizeof(double));
	double	   *A = NULL,
			   *B = NULL,
			   *C = NULL,
			   *S = NULL,
			   *cst = NULL;
	int		   *pred = NULL;
	double		eps = 0.0,
				nll = 0.0;
	int			rc = -1,
				nloss = 1;

	if (!mu || !var || !prior || !cnt || !colmean || !colvar)
		goto oom;

	/* class means and overall column means */
	for (int i = 0; i < n; i++)
	{
		const float *x = data->Xtr + (size_t) i * d;
		double	   *m = mu + (size_t) data->ytr[i] * d;

		cnt[data->ytr[i]] += 1.0;
		for (int j = 0; j < d; j++)
		{
			m[j] += x[j];
			colmean[j] += x[j];
		}
	}
	for (int c = 0; c < k; c++)
		for (int j = 0; j < d; j++)
			mu[(size_t) c * d + j] /= (cnt[c] > 0 ? cnt[c] : 1.0);
	for (int j = 0; j < d; j++)
		colmean[j] /= n;
	for (int i = 0; i < n; i++)
	{
		const float *x = data->Xtr + (size_t) i * d;
		const double *m = mu + (size_t) data->ytr[i] * d;
		double	   *v = var + (size_t) data->ytr[i] * d;

		for (int j = 0; j < d; j++)
		{
			double		e = x[j] - m[j],
						g = x[j] - colmean[j];

			v[j] += e * e;
			colvar[j] += g * g;
		}
	}
	for (int j = 0; j < d; j++)
		eps = fmax(eps, colvar[j] / n);
	eps *= smoothing;
	if (!(eps > 0.0))
		eps = smoothing > 0.0 ? smoothing : 1e-300;		/* all columns constant */
	for (int c = 0; c < k; c++)
	{
		prior[c] = cnt[c] / n;
		for (int j = 0; j < d; j++)
			var[(size_t) c * d + j] = var[(size_t) c * d + j] /
				(cnt[c] > 0 ? cnt[c] : 1.0) + eps;
	}

	/* B = 1/s2 (k x d), C = mu/s2 (k x d), cst_c = log prior - 1/2 sum ... */
	B = malloc(sizeof(double) * (size_t) k * d);
	C = malloc(sizeof(double) * (size_t) k * d);
	cst = malloc(sizeof(double) * k);
	A = malloc(sizeof(double) * (size_t) GNB_BLOCK * d);
	S = malloc(sizeof(double) * (size_t) GNB_BLOCK * k);
	pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	if (!B || !C || !cst || !A || !S || !pred)
		goto oom;
	for (int c = 0; c < k; c++)
	{
		double		s = prior[c] > 0 ? log(prior[c]) : -INFINITY;

		for (int j = 0; j < d; j++)
		{
			double		v = var[(size_t) c * d + j],
						m = mu[(size_t) c * d + j];

			B[(size_t) c * d + j] = 1.0 / v;
			C[(size_t) c * d + j] = m / v;
			s -= 0.5 * (log(2.0 * M_PI * v) + m * m / v);
		}
		cst[c] = s;
	}

	/*
	 * Scores for a sample of training rows (for the reported loss; at most
	 * GNB_LOSS_ROWS, evenly strided, so the loss never costs more than the
	 * fit) and for all validation rows.
	 */
	for (int pass = 0; pass < 2; pass++)
	{
		int			stride = pass == 0 ? (n + GNB_LOSS_ROWS - 1) / GNB_LOSS_ROWS : 1;
		const float *X = pass == 0 ? data->Xtr : data->Xva;
		int			m = pass == 0 ? (n + stride - 1) / stride : nv;
		const float *src;

		if (pass == 0)
			nloss = m;

		if (TrCancelled(ctx))
		{
			TrSetError(res, "cancelled");
			goto done;
		}
		for (int i0 = 0; i0 < m; i0 += GNB_BLOCK)
		{
			int			rows = m - i0 < GNB_BLOCK ? m - i0 : GNB_BLOCK;

			for (int i = 0; i < rows; i++)
			{
				src = X + (size_t) (i0 + i) * stride * d;
				for (int j = 0; j < d; j++)
					A[(size_t) i * d + j] = (double) src[j] * src[j];
			}
			/* S = -1/2 X^2 B^T */
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, d,
						-0.5, A, d, B, d, 0.0, S, k);
			for (int i = 0; i < rows; i++)
			{
				src = X + (size_t) (i0 + i) * stride * d;
				for (int j = 0; j < d; j++)
					A[(size_t) i * d + j] = (double) src[j];
			}
			/* S += X C^T */
			cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, k, d,
						1.0, A, d, C, d, 1.0, S, k);
			for (int i = 0; i < rows; i++)
			{
				double	   *s = S + (size_t) i * k;
				int			best = 0;

				for (int c = 0; c < k; c++)
				{
					s[c] += cst[c];
					if (s[c] > s[best])
						best = c;
				}
				if (pass == 0)
				{
					/* mean negative log posterior of the true class */
					double		sum = 0.0;

					for (int c = 0; c < k; c++)
						sum += exp(s[c] - s[best]);
					nll += s[best] + log(sum) -
						s[data->ytr[(size_t) (i0 + i) * stride]];
				}
				else
					pred[i0 + i] = best;
			}
		}
	}
	res->train_loss = nll / nloss;
	res->score = TrAccuracy(pred, data->yva, nv);
	res->epochs = 1;
	TrReportProgress(ctx, 1, res->train_loss);

	{
		TrArtifact art;
		int64_t		dims[2] = {k, d};

		TrArtifactBegin(&art, "gnb", data);
		TrArtifactAdd(&art, "theta", TR_DT_F64, 2, dims, mu);
		TrArtifactAdd(&art, "var", TR_DT_F64, 2, dims, var);
		dims[0] = k;
		TrArtifactAdd(&art, "prior", TR_DT_F64, 1, dims, prior);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;
	goto done;

oom:
	TrSetError(res, "out of memory for gnb (%d features x %d classes)", d, k);
done:
	free(mu);
	free(var);
	free(prior);
	free(cnt);
	free(colmean);
	free(colvar);
	free(A);
	free(B);
	free(C);
	free(S);
	free(cst);
	free(pred);
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
