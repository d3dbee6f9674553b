/*-------------------------------------------------------------------------
 *
 * tr_ensemble.c
 *	  Validation predictions of runs and greedy ensemble selection with
 *	  replacement over them (tr_ensemble.h; docs/models.md, "Ensembles").
 *
 * IDENTIFICATION
 *	  src/trainer/tr_ensemble.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "tr_ensemble.h"
#include "trainer/predict/tr_predict.h"

/* a header-only TrData of data's (or vp's) kind and classes */
static TrData
HeaderOnly(int kind, int n_classes, char **class_names)
{
	TrData		h;

	memset(&h, 0, sizeof(h));
	h.kind = kind;
	h.n_classes = n_classes;
	h.class_names = class_names;
	return h;
}

int
TrValPredsWrite(const TrData *data, const double *out, int n_out,
				unsigned char **blob, size_t *len)
{
	TrData		h = HeaderOnly(data->kind, data->n_classes, data->class_names);
	TrArtifact	art;
	TrResult	tmp;
	int64_t		dims[2] = {data->n_val, n_out};
	float	   *pred = malloc(sizeof(float) * ((size_t) data->n_val * n_out + 1));

	*blob = NULL;
	*len = 0;
	if (pred == NULL)
		return -1;
	for (size_t i = 0; i < (size_t) data->n_val * n_out; i++)
		pred[i] = (float) out[i];
	TrResultInit(&tmp);
	TrArtifactBegin(&art, TR_VALPREDS_FAMILY, &h);
	TrArtifactAdd(&art, "rows", TR_DT_I32, 1, dims, data->rows_va);
	if (data->kind == TR_KIND_CLASSIFICATION)
		TrArtifactAdd(&art, "y", TR_DT_I32, 1, dims, data->yva);
	else
		TrArtifactAdd(&art, "t", TR_DT_F64, 1, dims, data->tva);
	TrArtifactAdd(&art, "pred", TR_DT_F32, 2, dims, pred);
	free(pred);
	if (TrArtifactFinish(&art, &tmp) != 0)
		return -1;
	*blob = tmp.artifact;
	*len = tmp.artifact_len;
	return 0;
}

void
TrValPredsFree(TrValPreds *vp)
{
	if (vp->class_names != NULL)
		for (int c = 0; c < vp->n_classes; c++)
			free(vp->class_names[c]);
	free(vp->class_names);
	free(vp->rows);
	free(vp->y);
	free(vp->t);
	free(vp->pred);
	memset(vp, 0, sizeof(*vp));
}

/* a copy of tensor name of type dtype and shape [n] or [n, k]; NULL if not */
static void *
Tensor(const unsigned char *blob, size_t len, const TrArtHeader *hdr, const char *name,
	   int dtype, int n, int k)
{
	TrArtTensor t;
	void	   *out;

	if (!TrArtifactTensor(blob, len, hdr, name, &t) || t.dtype != dtype ||
		t.ndim != (k > 0 ? 2 : 1) || t.dims[0] != n || (k > 0 && t.dims[1] != k))
		return NULL;
	if ((out = malloc(t.bytes + 8)) != NULL)
		memcpy(out, t.data, t.bytes);
	return out;
}

int
TrValPredsRead(const unsigned char *blob, size_t len, TrValPreds *vp, char *err,
			   size_t errlen)
{
	TrArtHeader hdr;
	TrArtTensor t;
	float	   *pred;

	memset(vp, 0, sizeof(*vp));
	if (TrArtifactCheck(blob, len, &hdr, err, errlen) != TR_ART_OK)
		return -1;
	if (strcmp(hdr.family, TR_VALPREDS_FAMILY) != 0 ||
		!TrArtifactTensor(blob, len, &hdr, "rows", &t) || t.ndim != 1 ||
		t.dims[0] < 1 || t.dims[0] > (1 << 30))
	{
		snprintf(err, errlen, "no validation predictions");
		return -1;
	}
	vp->kind = hdr.kind;
	vp->n = (int) t.dims[0];
	vp->n_classes = hdr.n_classes;
	vp->n_out = hdr.kind == TR_KIND_CLASSIFICATION ? hdr.n_classes : 1;
	vp->class_names = calloc(hdr.n_classes + 1, sizeof(char *));
	vp->rows = Tensor(blob, len, &hdr, "rows", TR_DT_I32, vp->n, 0);
	if (vp->kind == TR_KIND_CLASSIFICATION)
		vp->y = Tensor(blob, len, &hdr, "y", TR_DT_I32, vp->n, 0);
	else
		vp->t = Tensor(blob, len, &hdr, "t", TR_DT_F64, vp->n, 0);
	pred = Tensor(blob, len, &hdr, "pred", TR_DT_F32, vp->n, vp->n_out);
	vp->pred = malloc(sizeof(double) * ((size_t) vp->n * vp->n_out + 1));
	if (vp->class_names == NULL || vp->rows == NULL || (vp->y == NULL && vp->t == NULL) ||
		pred == NULL || vp->pred == NULL)
	{
		free(pred);
		TrValPredsFree(vp);
		snprintf(err, errlen, "the validation predictions are incomplete");
		return -1;
	}
	for (size_t i = 0; i < (size_t) vp->n * vp->n_out; i++)
		vp->pred[i] = pred[i];
	free(pred);
	for (int c = 0; c < hdr.n_classes; c++)
		if (TrArtifactClassName(blob, len, &hdr, c, &vp->class_names[c]) != TR_ART_OK)
		{
			TrValPredsFree(vp);
			snprintf(err, errlen, "the validation predictions' classes are unreadable");
			return -1;
		}
	for (int i = 0; i < vp->n; i++)
		if ((vp->y != NULL && (vp->y[i] < 0 || vp->y[i] >= vp->n_classes)) ||
			(vp->t != NULL && !isfinite(vp->t[i])))
		{
			TrValPredsFree(vp);
			snprintf(err, errlen, "validation row %d has no valid label", i + 1);
			return -1;
		}
	for (size_t i = 0; i < (size_t) vp->n * vp->n_out; i++)
		if (!isfinite(vp->pred[i]))
		{
			TrValPredsFree(vp);
			snprintf(err, errlen, "the validation predictions are not finite");
			return -1;
		}
	return 0;
}

int
TrValPredsAligned(const TrValPreds *a, const TrValPreds *b)
{
	if (a->kind != b->kind || a->n != b->n || a->n_classes != b->n_classes ||
		memcmp(a->rows, b->rows, sizeof(int) * a->n) != 0)
		return 0;
	for (int c = 0; c < a->n_classes; c++)
		if (strcmp(a->class_names[c], b->class_names[c]) != 0)
			return 0;
	if (a->y != NULL)
		return memcmp(a->y, b->y, sizeof(int) * a->n) == 0;
	for (int i = 0; i < a->n; i++)
		if (a->t[i] != b->t[i])
			return 0;
	return 1;
}

double
TrEnsembleQuality(const TrValPreds *vp, const double *avg, int metric, TrMetrics *fm)
{
	memset(fm, 0, sizeof(*fm));
	fm->kind = vp->kind;
	for (int j = 0; j < TR_M__COUNT; j++)
		fm->v[j] = NAN;
	TrMetricsClearErrors(fm);
	if (vp->kind == TR_KIND_REGRESSION)
		TrRegressionMetrics(vp->n, vp->t, avg, fm);
	else
	{
		int		   *pred = malloc(sizeof(int) * vp->n);

		if (pred == NULL)
			return NAN;
		for (int i = 0; i < vp->n; i++)
		{
			const double *p = avg + (size_t) i * vp->n_out;
			int			best = 0;

			for (int c = 1; c < vp->n_out; c++)
				if (p[c] > p[best])
					best = c;
			pred[i] = best;
		}
		TrClassificationMetrics(vp->n, vp->n_classes, vp->y, pred, avg, fm);
		free(pred);
	}
	return TrMetricQuality(fm, metric);
}

void
TrEnsembleErrors(const TrValPreds *vp, const double *avg, TrMetrics *fm)
{
	if (vp->kind == TR_KIND_REGRESSION)
		TrMetricsStandardErrors(vp->n, 0, NULL, NULL, NULL, vp->t, avg, fm);
	else
	{
		int		   *pred = malloc(sizeof(int) * vp->n);

		if (pred == NULL)
			return;
		for (int i = 0; i < vp->n; i++)
		{
			const double *p = avg + (size_t) i * vp->n_out;
			int			best = 0;

			for (int c = 1; c < vp->n_out; c++)
				if (p[c] > p[best])
					best = c;
			pred[i] = best;
		}
		TrMetricsStandardErrors(vp->n, vp->n_classes, vp->y, pred, avg, NULL, NULL, fm);
		free(pred);
	}
}

void
TrEnsembleAverage(const TrValPreds *const *members, int m, const int *counts, double *avg)
{
	size_t		cells = (size_t) members[0]->n * members[0]->n_out;
	double		total = 0;

	memset(avg, 0, sizeof(double) * cells);
	for (int i = 0; i < m; i++)
		total += counts[i];
	for (int i = 0; i < m; i++)
	{
		double		w = counts[i] / total;

		if (counts[i] == 0)
			continue;
		for (size_t j = 0; j < cells; j++)
			avg[j] += w * members[i]->pred[j];
	}
}

int
TrEnsembleSelect(const TrValPreds *const *members, int m, int metric, int steps,
				 int *counts, double *score, char *err, size_t errlen)
{
	size_t		cells;
	double	   *sum,
			   *cand;
	int		   *cur;
	double		best_q = -INFINITY;
	TrMetrics	fm;

	if (m < 1 || steps < 1)
	{
		snprintf(err, errlen, "ensemble selection needs a member and a step");
		return -1;
	}
	for (int i = 1; i < m; i++)
		if (!TrValPredsAligned(members[0], members[i]))
		{
			snprintf(err, errlen, "member %d was not scored on the rows of member 1", i + 1);
			return -1;
		}
	cells = (size_t) members[0]->n * members[0]->n_out;
	sum = calloc(cells + 1, sizeof(double));
	cand = malloc(sizeof(double) * (cells + 1));
	cur = calloc(m, sizeof(int));
	if (sum == NULL || cand == NULL || cur == NULL)
	{
		free(sum);
		free(cand);
		free(cur);
		snprintf(err, errlen, "out of memory selecting an ensemble");
		return -1;
	}
	memset(counts, 0, sizeof(int) * m);
	for (int s = 0; s < steps; s++)
	{
		int			pick = -1;
		double		pick_q = -INFINITY;

		/* the first step is the best member alone */
		for (int i = 0; i < m; i++)
		{
			double		q;

			for (size_t j = 0; j < cells; j++)
				cand[j] = (sum[j] + members[i]->pred[j]) / (s + 1);
			q = TrEnsembleQuality(members[0], cand, metric, &fm);
			if (isfinite(q) && (pick < 0 || q > pick_q))
			{
				pick = i;
				pick_q = q;
			}
		}
		if (pick < 0)
		{
			free(sum);
			free(cand);
			free(cur);
			snprintf(err, errlen, "the %s of the ensemble is undefined on the validation rows",
					 TrMetricName(metric));
			return -1;
		}
		for (size_t j = 0; j < cells; j++)
			sum[j] += members[pick]->pred[j];
		cur[pick]++;
		if (pick_q > best_q)
		{
			best_q = pick_q;
			memcpy(counts, cur, sizeof(int) * m);
		}
	}
	*score = best_q;
	free(sum);
	free(cand);
	free(cur);
	return 0;
}

int
TrEnsembleArtifact(const TrValPreds *vp, int m, const int64_t *runs,
				   const double *weights, TrResult *res)
{
	TrData		h = HeaderOnly(vp->kind, vp->n_classes, vp->class_names);
	TrArtifact	art;
	int64_t		dims[1] = {m};
	double	   *ids = malloc(sizeof(double) * (m + 1));

	if (ids == NULL)
	{
		TrSetError(res, "out of memory writing the ensemble's artifact");
		return -1;
	}
	for (int i = 0; i < m; i++)
		ids[i] = (double) runs[i];
	TrArtifactBegin(&art, TR_ENSEMBLE_FAMILY, &h);
	TrArtifactAdd(&art, "members", TR_DT_F64, 1, dims, ids);
	TrArtifactAdd(&art, "weights", TR_DT_F64, 1, dims, weights);
	free(ids);
	return TrArtifactFinish(&art, res);
}
