/*-------------------------------------------------------------------------
 *
 * tr_predict_linear.c
 *	  Predictors of the families without hidden layers or trees: linear
 *	  decisions (softmax, ridge, linear_svm), Gaussian naive Bayes and
 *	  k nearest neighbours (tr_predict.h).
 *
 * Each loader checks the family's tensors against the header (features,
 * classes) before the predictor may run, so the predictors index without
 * further checks.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_predict_linear.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "tr_predict.h"

/* ---- linear decisions: z = x W + b ---------------------------------- */

typedef struct Linear
{
	int			k;				/* outputs: 1 for regression and two classes */
	double	   *W;				/* d x k */
	double	   *b;				/* k */
} Linear;

static void
LinearFree(void *p)
{
	Linear	   *l = p;

	free(l->W);
	free(l->b);
	free(l);
}

static int
LinearPredict(const TrModel *m, const float *X, int n, double *out)
{
	const Linear *l = m->state;
	double	   *z = malloc(sizeof(double) * l->k);

	if (z == NULL)
		return TR_ART_NO_MEMORY;
	for (int i = 0; i < n; i++)
	{
		const float *x = X + (size_t) i * m->d;

		memcpy(z, l->b, sizeof(double) * l->k);
		for (int j = 0; j < m->d; j++)
		{
			const double *w = l->W + (size_t) j * l->k;
			double		xj = x[j];

			for (int c = 0; c < l->k; c++)
				z[c] += xj * w[c];
		}
		if (m->kind == 1)
			out[i] = z[0];
		else
			TrProbaFromScores(z, l->k, m->n_classes, out + (size_t) i * m->n_out);
	}
	free(z);
	return TR_ART_OK;
}

/* linear_svm stores one row per problem with its bias last: transpose */
static int
LoadSvm(const TrLoad *ld, const TrModel *m, Linear *l)
{
	int64_t		dims[2] = {l->k, (int64_t) m->d + 1};
	float	   *Wb;
	int			rc;

	if ((rc = TrLoadTensor(ld, "W_bias", TR_DT_F32, 2, dims, (void **) &Wb)) != 0)
		return rc;
	l->W = malloc(sizeof(double) * ((size_t) m->d * l->k + 1));
	l->b = malloc(sizeof(double) * l->k);
	if (l->W == NULL || l->b == NULL)
	{
		free(Wb);
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading linear_svm");
	}
	for (int p = 0; p < l->k; p++)
	{
		for (int j = 0; j < m->d; j++)
			l->W[(size_t) j * l->k + p] = Wb[(size_t) p * (m->d + 1) + j];
		l->b[p] = Wb[(size_t) p * (m->d + 1) + m->d];
	}
	free(Wb);
	return TR_ART_OK;
}

int
TrLoadLinear(const TrLoad *ld, TrModel *m)
{
	Linear	   *l = calloc(1, sizeof(Linear));
	int			rc;

	if (l == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	m->state = l;
	m->free_state = LinearFree;
	m->predict = LinearPredict;
	l->k = (m->kind == 1 || m->n_classes == 2) ? 1 : m->n_classes;
	if (m->kind == 1 && strcmp(m->family, "ridge") != 0)
		return TrLoadFail(ld, TR_ART_BAD, "family \"%s\" has no regression models", m->family);
	if (strcmp(m->family, "linear_svm") == 0)
		return LoadSvm(ld, m, l);
	{
		int64_t		wd[2] = {m->d, l->k},
					bd[1] = {l->k};

		if ((rc = TrLoadTensor(ld, "W", TR_DT_F64, 2, wd, (void **) &l->W)) != 0 ||
			(rc = TrLoadTensor(ld, "b", TR_DT_F64, 1, bd, (void **) &l->b)) != 0)
			return rc;
	}
	return TR_ART_OK;
}

/* ---- Gaussian naive Bayes ------------------------------------------- */

typedef struct Gnb
{
	double	   *mu;				/* k x d */
	double	   *inv_var;		/* k x d */
	double	   *cst;			/* k: log prior - 1/2 sum log(2 pi var) */
} Gnb;

static void
GnbFree(void *p)
{
	Gnb		   *g = p;

	free(g->mu);
	free(g->inv_var);
	free(g->cst);
	free(g);
}

static int
GnbPredict(const TrModel *m, const float *X, int n, double *out)
{
	const Gnb  *g = m->state;
	int			k = m->n_classes,
				d = m->d;
	double	   *s = malloc(sizeof(double) * k);

	if (s == NULL)
		return TR_ART_NO_MEMORY;
	for (int i = 0; i < n; i++)
	{
		const float *x = X + (size_t) i * d;

		for (int c = 0; c < k; c++)
		{
			const double *mu = g->mu + (size_t) c * d,
					   *iv = g->inv_var + (size_t) c * d;
			double		q = 0.0;

			for (int j = 0; j < d; j++)
			{
				double		e = x[j] - mu[j];

				q += e * e * iv[j];
			}
			s[c] = g->cst[c] - 0.5 * q;
		}
		TrProbaFromScores(s, k, k, out + (size_t) i * k);
	}
	free(s);
	return TR_ART_OK;
}

int
TrLoadGnb(const TrLoad *ld, TrModel *m)
{
	Gnb		   *g = calloc(1, sizeof(Gnb));
	int64_t		kd[2] = {m->n_classes, m->d},
				k1[1] = {m->n_classes};
	double	   *prior = NULL;
	int			rc;

	if (g == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	m->state = g;
	m->free_state = GnbFree;
	m->predict = GnbPredict;
	if (m->kind != 0)
		return TrLoadFail(ld, TR_ART_BAD, "gnb has no regression models");
	if ((rc = TrLoadTensor(ld, "theta", TR_DT_F64, 2, kd, (void **) &g->mu)) != 0 ||
		(rc = TrLoadTensor(ld, "var", TR_DT_F64, 2, kd, (void **) &g->inv_var)) != 0 ||
		(rc = TrLoadTensor(ld, "prior", TR_DT_F64, 1, k1, (void **) &prior)) != 0 ||
		(g->cst = malloc(sizeof(double) * m->n_classes)) == NULL)
	{
		free(prior);
		return rc ? rc : TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading gnb");
	}
	for (int c = 0; c < m->n_classes; c++)
	{
		double		s = prior[c] > 0 ? log(prior[c]) : -INFINITY;

		for (int j = 0; j < m->d; j++)
		{
			double	   *v = &g->inv_var[(size_t) c * m->d + j];

			if (!(*v > 0.0) || !isfinite(*v) || !isfinite(g->mu[(size_t) c * m->d + j]))
			{
				free(prior);
				return TrLoadFail(ld, TR_ART_BAD, "gnb class %d has a malformed variance", c + 1);
			}
			s -= 0.5 * log(2.0 * M_PI * *v);
			*v = 1.0 / *v;
		}
		g->cst[c] = s;
	}
	free(prior);
	return TR_ART_OK;
}

/* ---- k nearest neighbours ------------------------------------------- */

typedef struct Knn
{
	int			n;				/* training rows */
	int			k;
	int			by_distance;
	float	   *X;				/* n x d */
	float	   *norms;			/* n */
	int32_t    *y;				/* classification */
	double	   *t;				/* regression */
} Knn;

static void
KnnFree(void *p)
{
	Knn		   *kn = p;

	free(kn->X);
	free(kn->norms);
	free(kn->y);
	free(kn->t);
	free(kn);
}

/* k smallest of dist[0..n) into nd/ni, ascending; earlier rows win ties */
static int
Nearest(const float *dist, int n, int k, float *nd, int *ni)
{
	int			m = 0;

	for (int j = 0; j < n; j++)
	{
		float		v = dist[j];
		int			p;

		if (m == k && v >= nd[m - 1])
			continue;
		p = m < k ? m++ : m - 1;
		for (; p > 0 && nd[p - 1] > v; p--)
		{
			nd[p] = nd[p - 1];
			ni[p] = ni[p - 1];
		}
		nd[p] = v;
		ni[p] = j;
	}
	return m;
}

/* the vote (or mean) of one row's neighbours into out */
static void
KnnVote(const TrModel *m, const Knn *kn, const float *nd, const int *ni, int cnt,
		double *out)
{
	int			zeros = 0;
	double		sum = 0.0,
				wsum = 0.0;

	for (int q = 0; kn->by_distance && q < cnt; q++)
		zeros += nd[q] == 0.0f;
	if (m->kind == 0)
		memset(out, 0, sizeof(double) * m->n_classes);
	for (int q = 0; q < cnt; q++)
	{
		double		w = 1.0;

		if (kn->by_distance)
			w = zeros ? (nd[q] == 0.0f ? 1.0 : 0.0) : 1.0 / sqrt((double) nd[q]);
		if (m->kind == 0)
			out[kn->y[ni[q]]] += w;
		else
			sum += w * kn->t[ni[q]];
		wsum += w;
	}
	if (m->kind == 1)
		out[0] = sum / wsum;
	else
		for (int c = 0; c < m->n_classes; c++)
			out[c] /= wsum;
}

/*
 * Distances of a block of rows to every training row come from one
 * matrix product (as the fit computes them), not a matrix-vector product
 * per row: with few features the latter spends its time in call overhead
 * and reading the training rows again for every row.  A block's distances
 * take at most KNN_PREDICT_FLOATS floats.
 */
#define KNN_PREDICT_FLOATS ((size_t) 1 << 20)

static int
KnnPredict(const TrModel *m, const float *X, int n, double *out)
{
	const Knn  *kn = m->state;
	int			blk = (int) (KNN_PREDICT_FLOATS / (size_t) kn->n);
	float	   *dist,
			   *xx;
	float	   *nd = malloc(sizeof(float) * kn->k);
	int		   *ni = malloc(sizeof(int) * kn->k);

	if (blk < 1)
		blk = 1;
	if (blk > n)
		blk = n > 0 ? n : 1;
	dist = malloc(sizeof(float) * (size_t) blk * kn->n);
	xx = malloc(sizeof(float) * blk);
	if (dist == NULL || xx == NULL || nd == NULL || ni == NULL)
	{
		free(dist);
		free(xx);
		free(nd);
		free(ni);
		return TR_ART_NO_MEMORY;
	}
	for (int i0 = 0; i0 < n; i0 += blk)
	{
		int			bn = n - i0 < blk ? n - i0 : blk;
		const float *Xb = X + (size_t) i0 * m->d;

		for (int i = 0; i < bn; i++)
			xx[i] = cblas_sdot(m->d, Xb + (size_t) i * m->d, 1, Xb + (size_t) i * m->d, 1);
		/* |a - b|^2 = |a|^2 + |b|^2 - 2 a.b, as the fit computes it */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, bn, kn->n, m->d, -2.0f,
					Xb, m->d, kn->X, m->d, 0.0f, dist, kn->n);
		for (int i = 0; i < bn; i++)
		{
			float	   *row = dist + (size_t) i * kn->n;
			int			cnt;

			for (int j = 0; j < kn->n; j++)
			{
				float		v = row[j] + xx[i] + kn->norms[j];

				row[j] = v > 0.0f ? v : 0.0f;
			}
			cnt = Nearest(row, kn->n, kn->k, nd, ni);
			KnnVote(m, kn, nd, ni, cnt, out + (size_t) (i0 + i) * m->n_out);
		}
	}
	free(dist);
	free(xx);
	free(nd);
	free(ni);
	return TR_ART_OK;
}

int
TrLoadKnn(const TrLoad *ld, TrModel *m)
{
	Knn		   *kn = calloc(1, sizeof(Knn));
	int64_t		one[1] = {1},
				xd[2] = {-1, m->d},
				nd[1];
	int32_t    *kv = NULL,
			   *wv = NULL;
	int			rc;

	if (kn == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	m->state = kn;
	m->free_state = KnnFree;
	m->predict = KnnPredict;
	if ((rc = TrLoadTensor(ld, "k", TR_DT_I32, 1, one, (void **) &kv)) == 0 &&
		(rc = TrLoadTensor(ld, "distance_weights", TR_DT_I32, 1, one, (void **) &wv)) == 0 &&
		(rc = TrLoadTensor(ld, "X", TR_DT_F32, 2, xd, (void **) &kn->X)) == 0)
	{
		kn->k = kv[0];
		kn->by_distance = wv[0] != 0;
		nd[0] = xd[0];
		rc = m->kind == 0 ? TrLoadTensor(ld, "y", TR_DT_I32, 1, nd, (void **) &kn->y) :
			TrLoadTensor(ld, "t", TR_DT_F64, 1, nd, (void **) &kn->t);
	}
	free(kv);
	free(wv);
	if (rc != 0)
		return rc;
	if (xd[0] < 1 || xd[0] > INT32_MAX || kn->k < 1 || kn->k > xd[0])
		return TrLoadFail(ld, TR_ART_BAD, "knn with k = %d and %lld training rows", kn->k,
						  (long long) xd[0]);
	kn->n = (int) xd[0];
	for (int j = 0; j < kn->n; j++)
		if (m->kind == 0 ? (kn->y[j] < 0 || kn->y[j] >= m->n_classes) : !isfinite(kn->t[j]))
			return TrLoadFail(ld, TR_ART_BAD, "knn training row %d has a malformed target", j + 1);
	if ((kn->norms = malloc(sizeof(float) * kn->n)) == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading knn");
	for (int j = 0; j < kn->n; j++)
		kn->norms[j] = cblas_sdot(m->d, kn->X + (size_t) j * m->d, 1, kn->X + (size_t) j * m->d, 1);
	return TR_ART_OK;
}
