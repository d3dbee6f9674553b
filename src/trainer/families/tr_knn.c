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
 *	  src/trainer/families/tr_knn.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"

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

/* knn's parameters and the scratch of one query row's neighbours */
typedef struct KnnQuery
{
	const TrData *data;
	int			k;
	int			by_distance;	/* weights = distance */
	float	   *nd;				/* k: the neighbours' squared distances */
	int		   *ni;				/* k: their training rows */
	double	   *votes;			/* classes */
} KnnQuery;

/*
 * The prediction from the m neighbours in q->nd/q->ni: the class with the
 * most (weighted) votes, or the (weighted) mean target.  With distance
 * weights, neighbours at distance 0 take all the weight.
 */
static double
KnnVote(KnnQuery *q, int m)
{
	const TrData *data = q->data;
	int			zeros = 0,
				best = 0;
	double		s = 0.0,
				ws = 0.0;

	if (q->by_distance)
		for (int j = 0; j < m; j++)
			zeros += (q->nd[j] == 0.0f);
	if (data->kind == TR_KIND_CLASSIFICATION)
		memset(q->votes, 0, sizeof(double) * data->n_classes);
	for (int j = 0; j < m; j++)
	{
		double		w = 1.0;

		if (q->by_distance)
			w = zeros ? (q->nd[j] == 0.0f ? 1.0 : 0.0) : 1.0 / sqrt((double) q->nd[j]);
		if (data->kind == TR_KIND_CLASSIFICATION)
			q->votes[data->ytr[q->ni[j]]] += w;
		else
		{
			s += w * data->ttr[q->ni[j]];
			ws += w;
		}
	}
	if (data->kind != TR_KIND_CLASSIFICATION)
		return s / ws;
	for (int c = 1; c < data->n_classes; c++)
		if (q->votes[c] > q->votes[best])
			best = c;
	return best;
}

/*
 * Score a model too large to store: predict every validation row here,
 * KNN_BLOCK rows at a time, distances by one GEMM per block.
 */
static int
KnnScoreHere(const TrContext *ctx, KnnQuery *q, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d,
				rc = -1;
	float	   *ntr = malloc(sizeof(float) * n);
	float	   *nva = malloc(sizeof(float) * KNN_BLOCK);
	float	   *D = malloc(sizeof(float) * (size_t) KNN_BLOCK * n);
	double	   *pv = malloc(sizeof(double) * (nv > 0 ? nv : 1));
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));

	if (!ntr || !nva || !D || !pv || !pred)
	{
		TrSetError(res, "out of memory for knn (%d training rows)", n);
		goto done;
	}
	RowNorms(data->Xtr, n, d, ntr);
	for (int b0 = 0; b0 < nv; b0 += KNN_BLOCK)
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

			for (int j = 0; j < n; j++)
			{
				float		v = row[j] + nva[i] + ntr[j];

				row[j] = v > 0.0f ? v : 0.0f;
			}
			pv[b0 + i] = KnnVote(q, SelectK(row, n, q->k, q->nd, q->ni));
		}
		TrReportProgress(ctx, b0 / KNN_BLOCK + 1, NAN);
	}
	if (data->kind == TR_KIND_CLASSIFICATION)
	{
		for (int i = 0; i < nv; i++)
			pred[i] = (int) pv[i];
		res->score = TrAccuracy(pred, data->yva, nv);
	}
	else
	{
		TrRegressionScore(pv, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	rc = 0;
done:
	free(ntr);
	free(nva);
	free(D);
	free(pv);
	free(pred);
	return rc;
}

/* the model is the training set, k and the weighting */
static int
KnnStore(const TrData *data, const KnnQuery *q, TrResult *res)
{
	TrArtifact	art;
	int64_t		dims[2] = {data->n_train, data->d};
	int64_t		one[1] = {1};
	int32_t		kv = q->k,
				wv = q->by_distance;

	TrArtifactBegin(&art, "knn", data);
	TrArtifactAdd(&art, "k", TR_DT_I32, 1, one, &kv);
	TrArtifactAdd(&art, "distance_weights", TR_DT_I32, 1, one, &wv);
	TrArtifactAdd(&art, "X", TR_DT_F32, 2, dims, data->Xtr);
	if (data->kind == TR_KIND_CLASSIFICATION)
		TrArtifactAdd(&art, "y", TR_DT_I32, 1, dims, data->ytr);
	else
		TrArtifactAdd(&art, "t", TR_DT_F64, 1, dims, data->ttr);
	return TrArtifactFinish(&art, res);
}

static int
KnnFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	KnnQuery	q;
	int			rc = -1;

	/* the model is the training set: stored when it is modest in size */
	int			store = (size_t) data->n_train * data->d <= ((size_t) 4 << 20);

	q.data = data;
	q.k = TrParamInt(ctx->params, "k", 5);
	if (q.k > data->n_train)
		q.k = data->n_train;
	q.by_distance = strcmp(TrParamString(ctx->params, "weights", "uniform"),
						   "distance") == 0;
	q.nd = malloc(sizeof(float) * q.k);
	q.ni = malloc(sizeof(int) * q.k);
	q.votes = calloc(data->kind == TR_KIND_CLASSIFICATION ? data->n_classes : 1,
					 sizeof(double));
	if (!q.nd || !q.ni || !q.votes)
	{
		TrSetError(res, "out of memory for knn (%d training rows)", data->n_train);
		goto done;
	}
	res->epochs = 1;

	/*
	 * A stored model is scored from its artifact by the predict module
	 * (tr_score.c), which finds the same neighbours; predicting here too
	 * would double the cost of the fit, which is all prediction.
	 */
	if (store)
	{
		res->score = NAN;
		rc = KnnStore(data, &q, res);
	}
	else
		rc = KnnScoreHere(ctx, &q, res);
done:
	free(q.nd);
	free(q.ni);
	free(q.votes);
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
