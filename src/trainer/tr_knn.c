/*-------------------------------------------------------------------------
 *
 * tr_knn.c
 *	  Family "knn": k-nearest neighbours (Euclidean, on standardised
 *	  features), classification by vote and regression by mean.
 *
 * Squared distances of a block of validation rows to all training rows
 * come from one float GEMM: |a - b|^2 = |a|^2 + |b|^2 - 2 a.b (clamped at
 * 0 against rounding), 256 validation rows at a time so the distance block
 * stays small.  The k smallest are kept by insertion into a sorted list
 * (ties: the earlier training row wins).  Votes: "uniform" counts, ties go
 * to the smaller class id (scikit-learn's mode does the same);
 * "distance" weights 1/dist, and training rows at distance 0 take all the
 * weight (as in scikit-learn).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_knn.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer.h"

#define KNN_BLOCK 256

/* the squared row norms of X (n x d) */
static void
RowNorms(const float *X, int n, int d, float *out)
{
	for (int i = 0; i < n; i++)
		out[i] = cblas_sdot(d, X + (size_t) i * d, 1, X + (size_t) i * d, 1);
}

/*
 * k nearest of one distance row: fills nd/ni (sorted ascending), returns
 * how many were found (min(k, n)).
 */
static int
SelectK(const float *dist, int n, int k, float *nd, int *ni)
{
	int			m = 0;

	for (int j = 0; j < n; j++)
	{
		float		v = dist[j];
		int			p;

		if (m == k && v >= nd[m - 1])
			continue;
		p = (m < k) ? m++ : m - 1;
		while (p > 0 && nd[p - 1] > v)
		{
			nd[p] = nd[p - 1];
			ni[p] = ni[p - 1];
			p--;
		}
		nd[p] = v;
		ni[p] = j;
	}
	return m;
}

static int
KnnFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d,
				nc = data->n_classes;
	int			k = TrParamInt(ctx->params, "k", 5);
	int			by_distance = strcmp(TrParamString(ctx->params, "weights", "uniform"),
									 "distance") == 0;
	int			classify = data->kind == TR_KIND_CLASSIFICATION;
	float	   *ntr = malloc(sizeof(float) * n);
	float	   *nva = malloc(sizeof(float) * KNN_BLOCK);
	float	   *D = malloc(sizeof(float) * (size_t) KNN_BLOCK * n);
	float	   *nd;
	int		   *ni;
	double	   *votes = calloc(classify ? nc : 1, sizeof(double));
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = malloc(sizeof(double) * (nv > 0 ? nv : 1));
	int			rc = -1;

	/* the model is the training set: stored when it is modest in size */
	int			store = (size_t) n * d <= ((size_t) 4 << 20);

	if (k > n)
		k = n;
	nd = malloc(sizeof(float) * k);
	ni = malloc(sizeof(int) * k);
	if (!ntr || !nva || !D || !nd || !ni || !votes || !pred || !tpred)
	{
		TrSetError(res, "out of memory for knn (%d training rows)", n);
		goto done;
	}
	RowNorms(data->Xtr, n, d, ntr);

	/*
	 * A stored model is scored from its artifact by the predict module
	 * (tr_score.c), which finds the same neighbours; predicting here too
	 * would double the cost of the fit, which is all prediction.
	 */
	for (int b0 = 0; !store && b0 < nv; b0 += KNN_BLOCK)
	{
		int			bn = nv - b0 < KNN_BLOCK ? nv - b0 : KNN_BLOCK;
		const float *Xb = data->Xva + (size_t) b0 * d;

		if (TrCancelled(ctx))
		{
			TrSetError(res, "cancelled");
			goto done;
		}
		RowNorms(Xb, bn, d, nva);
		TrSgemm(0, 1, bn, n, d, -2.0f, Xb, d, data->Xtr, d, 0.0f, D, n);
		for (int i = 0; i < bn; i++)
		{
			float	   *row = D + (size_t) i * n;
			int			m,
						zeros = 0;

			for (int j = 0; j < n; j++)
			{
				float		v = row[j] + nva[i] + ntr[j];

				row[j] = v > 0.0f ? v : 0.0f;
			}
			m = SelectK(row, n, k, nd, ni);
			if (by_distance)
				for (int q = 0; q < m; q++)
					zeros += (nd[q] == 0.0f);
			if (classify)
			{
				int			best = 0;

				memset(votes, 0, sizeof(double) * nc);
				for (int q = 0; q < m; q++)
				{
					double		w = 1.0;

					if (by_distance)
						w = zeros ? (nd[q] == 0.0f ? 1.0 : 0.0) : 1.0 / sqrt((double) nd[q]);
					votes[data->ytr[ni[q]]] += w;
				}
				for (int c = 1; c < nc; c++)
					if (votes[c] > votes[best])
						best = c;
				pred[b0 + i] = best;
			}
			else
			{
				double		s = 0.0,
							ws = 0.0;

				for (int q = 0; q < m; q++)
				{
					double		w = 1.0;

					if (by_distance)
						w = zeros ? (nd[q] == 0.0f ? 1.0 : 0.0) : 1.0 / sqrt((double) nd[q]);
					s += w * data->ttr[ni[q]];
					ws += w;
				}
				tpred[b0 + i] = s / ws;
			}
		}
		TrReportProgress(ctx, b0 / KNN_BLOCK + 1, NAN);
	}

	if (store)
		res->score = NAN;		/* set by the predict module's scoring */
	else if (classify)
		res->score = TrAccuracy(pred, data->yva, nv);
	else
	{
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	res->epochs = 1;

	if (store)
	{
		TrArtifact art;
		int64_t		dims[2] = {n, d};
		int64_t		kk[1] = {1};
		int32_t		kv = k,
					wv = by_distance;

		TrArtifactBegin(&art, "knn", data);
		TrArtifactAdd(&art, "k", TR_DT_I32, 1, kk, &kv);
		TrArtifactAdd(&art, "distance_weights", TR_DT_I32, 1, kk, &wv);
		TrArtifactAdd(&art, "X", TR_DT_F32, 2, dims, data->Xtr);
		if (classify)
			TrArtifactAdd(&art, "y", TR_DT_I32, 1, dims, data->ytr);
		else
			TrArtifactAdd(&art, "t", TR_DT_F64, 1, dims, data->ttr);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;

done:
	free(ntr);
	free(nva);
	free(D);
	free(nd);
	free(ni);
	free(votes);
	free(pred);
	free(tpred);
	return rc;
}

static const TrParamSpec knn_params[] = {
	{"k", TR_PARAM_INT, 1, 10000, NULL, "neighbours (default 5)"},
	{"weights", TR_PARAM_STRING, 0, 0, "uniform|distance",
	"vote weights (default uniform)"},
	{NULL}
};

const TrFamily TrFamilyKnn = {
	.name = "knn",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = KnnFit,
	.params = knn_params,
	.summary = "k-nearest neighbours (Euclidean; GEMM distances)",
};
