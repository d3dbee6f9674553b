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
	TrArtClasses it;
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
	TrArtifactClassesBegin(blob, len, &hdr, &it);
	for (int c = 0; c < hdr.n_classes; c++)
		if (TrArtifactClassCopy(&it, &vp->class_names[c]) != TR_ART_OK)
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

/*
 * The labels of rows idx[0 .. nidx - 1] of vp, as a TrValPreds without
 * predictions (what TrEnsembleQuality reads); idx NULL: all of vp's rows,
 * not copied.  0, or -1 when out of memory.
 */
static int
Labels(const TrValPreds *vp, const int *idx, int nidx, TrValPreds *lab)
{
	*lab = *vp;
	lab->pred = NULL;
	if (idx == NULL)
		return 0;
	lab->n = nidx;
	lab->rows = NULL;
	lab->y = NULL;
	lab->t = NULL;
	if (vp->y != NULL)
	{
		if ((lab->y = malloc(sizeof(int) * (nidx + 1))) == NULL)
			return -1;
		for (int r = 0; r < nidx; r++)
			lab->y[r] = vp->y[idx[r]];
	}
	else
	{
		if ((lab->t = malloc(sizeof(double) * (nidx + 1))) == NULL)
			return -1;
		for (int r = 0; r < nidx; r++)
			lab->t[r] = vp->t[idx[r]];
	}
	return 0;
}

static void
LabelsFree(TrValPreds *lab, const int *idx)
{
	if (idx != NULL)
	{
		free(lab->y);
		free(lab->t);
	}
}

/* do members[1 ..] have members[0]'s rows? 0, or -1 with err set */
static int
CheckAligned(const TrValPreds *const *members, int m, char *err, size_t errlen)
{
	for (int i = 1; i < m; i++)
		if (!TrValPredsAligned(members[0], members[i]))
		{
			snprintf(err, errlen, "member %d was not scored on the rows of member 1", i + 1);
			return -1;
		}
	return 0;
}

/*
 * TrEnsembleSelect on rows idx[0 .. nidx - 1] of the members only (idx
 * NULL: on all of them); the members are aligned.
 */
static int
SelectOn(const TrValPreds *const *members, int m, int metric, int steps,
		 const int *idx, int nidx, int *counts, double *score, char *err,
		 size_t errlen)
{
	int			n_out = members[0]->n_out;
	size_t		cells = (size_t) nidx * n_out;
	double	   *sum,
			   *cand;
	int		   *cur;
	double		best_q = -INFINITY;
	TrMetrics	fm;
	TrValPreds	lab;

	if (Labels(members[0], idx, nidx, &lab) != 0)
	{
		snprintf(err, errlen, "out of memory selecting an ensemble");
		return -1;
	}
	sum = calloc(cells + 1, sizeof(double));
	cand = malloc(sizeof(double) * (cells + 1));
	cur = calloc(m, sizeof(int));
	if (sum == NULL || cand == NULL || cur == NULL)
	{
		free(sum);
		free(cand);
		free(cur);
		LabelsFree(&lab, idx);
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

			for (int r = 0; r < nidx; r++)
			{
				const double *p = members[i]->pred +
					(size_t) (idx != NULL ? idx[r] : r) * n_out;
				const double *sr = sum + (size_t) r * n_out;
				double	   *cr = cand + (size_t) r * n_out;

				for (int c = 0; c < n_out; c++)
					cr[c] = (sr[c] + p[c]) / (s + 1);
			}
			q = TrEnsembleQuality(&lab, cand, metric, &fm);
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
			LabelsFree(&lab, idx);
			snprintf(err, errlen, "the %s of the ensemble is undefined on the validation rows",
					 TrMetricName(metric));
			return -1;
		}
		for (int r = 0; r < nidx; r++)
		{
			const double *p = members[pick]->pred +
				(size_t) (idx != NULL ? idx[r] : r) * n_out;

			for (int c = 0; c < n_out; c++)
				sum[(size_t) r * n_out + c] += p[c];
		}
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
	LabelsFree(&lab, idx);
	return 0;
}

int
TrEnsembleSelect(const TrValPreds *const *members, int m, int metric, int steps,
				 int *counts, double *score, char *err, size_t errlen)
{
	if (m < 1 || steps < 1)
	{
		snprintf(err, errlen, "ensemble selection needs a member and a step");
		return -1;
	}
	if (CheckAligned(members, m, err, errlen) != 0)
		return -1;
	return SelectOn(members, m, metric, steps, NULL, members[0]->n, counts, score,
					err, errlen);
}

/* a row's place in the order the folds are dealt in */
typedef struct FoldKey
{
	double		key;			/* class id or target */
	uint64_t	draw;			/* seeded, of the row's number */
	int			i;
} FoldKey;

static int
CompareFoldKeys(const void *a, const void *b)
{
	const FoldKey *x = a,
			   *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->draw != y->draw)
		return x->draw < y->draw ? -1 : 1;
	return x->i - y->i;
}

int
TrEnsembleFolds(const TrValPreds *vp, int max_folds, int min_rows, uint64_t seed,
				int *fold)
{
	int			k = min_rows > 0 ? vp->n / min_rows : vp->n;
	FoldKey    *keys;
	int			perm[TR_ENSEMBLE_MAX_FOLDS];
	uint64_t	state = seed ^ UINT64_C(0x656e73656d626c65);	/* "ensemble" */

	if (k > max_folds)
		k = max_folds;
	if (k > TR_ENSEMBLE_MAX_FOLDS)
		k = TR_ENSEMBLE_MAX_FOLDS;
	if (k < 2)
		return k < 0 ? 0 : k;
	if ((keys = malloc(sizeof(FoldKey) * vp->n)) == NULL)
		return -1;
	for (int i = 0; i < vp->n; i++)
	{
		uint64_t	s = seed ^ ((uint64_t) (uint32_t) vp->rows[i] * UINT64_C(0xd1342543de82ef95));

		keys[i].key = vp->y != NULL ? vp->y[i] : vp->t[i];
		keys[i].draw = TrRandNext(&s);
		keys[i].i = i;
	}
	qsort(keys, vp->n, sizeof(FoldKey), CompareFoldKeys);
	/* deal each k consecutive rows to the k folds in a random order */
	for (int start = 0; start < vp->n; start += k)
	{
		for (int j = 0; j < k; j++)
			perm[j] = j;
		TrShuffle(perm, k, &state);
		for (int j = 0; j < k && start + j < vp->n; j++)
			fold[keys[start + j].i] = perm[j];
	}
	free(keys);
	return k;
}

int
TrEnsembleCrossFit(const TrValPreds *const *members, int m, int metric, int steps,
				   const int *fold, int k, double *oof, double *fold_q, char *err,
				   size_t errlen)
{
	int			n = members[0]->n,
				n_out = members[0]->n_out;
	int		   *idx,
			   *held,
			   *counts;
	double	   *part;
	int			rc = 0;

	if (m < 1 || steps < 1 || k < 2)
	{
		snprintf(err, errlen, "cross-fitting needs a member, a step and 2 folds");
		return -1;
	}
	if (CheckAligned(members, m, err, errlen) != 0)
		return -1;
	idx = malloc(sizeof(int) * (n + 1));
	held = malloc(sizeof(int) * (n + 1));
	counts = malloc(sizeof(int) * (m + 1));
	part = malloc(sizeof(double) * ((size_t) n * n_out + 1));
	if (idx == NULL || held == NULL || counts == NULL || part == NULL)
	{
		snprintf(err, errlen, "out of memory cross-fitting an ensemble");
		rc = -1;
	}
	for (int f = 0; f < k && rc == 0; f++)
	{
		int			ntrain = 0,
					nheld = 0;
		double		total = 0,
					q;
		char		why[256];
		TrValPreds	lab;
		TrMetrics	fm;

		for (int i = 0; i < n; i++)
		{
			if (fold[i] == f)
				held[nheld++] = i;
			else
				idx[ntrain++] = i;
		}
		if (ntrain == 0 || nheld == 0)
		{
			snprintf(err, errlen, "fold %d of %d has no rows %s", f + 1, k,
					 nheld == 0 ? "held out" : "to select on");
			rc = -1;
			break;
		}
		if (SelectOn(members, m, metric, steps, idx, ntrain, counts, &q, why,
					 sizeof(why)) != 0)
		{
			snprintf(err, errlen, "fold %d of %d: %s", f + 1, k, why);
			rc = -1;
			break;
		}
		/* the weighted average on the held-out rows, as TrEnsembleAverage */
		for (int i = 0; i < m; i++)
			total += counts[i];
		for (int r = 0; r < nheld; r++)
		{
			double	   *o = oof + (size_t) held[r] * n_out;

			for (int c = 0; c < n_out; c++)
				o[c] = 0;
			for (int i = 0; i < m; i++)
			{
				const double *p = members[i]->pred + (size_t) held[r] * n_out;
				double		w = counts[i] / total;

				if (counts[i] == 0)
					continue;
				for (int c = 0; c < n_out; c++)
					o[c] += w * p[c];
			}
			memcpy(part + (size_t) r * n_out, o, sizeof(double) * n_out);
		}
		if (fold_q == NULL)
			continue;
		if (Labels(members[0], held, nheld, &lab) != 0)
		{
			snprintf(err, errlen, "out of memory cross-fitting an ensemble");
			rc = -1;
			break;
		}
		fold_q[f] = TrEnsembleQuality(&lab, part, metric, &fm);
		LabelsFree(&lab, held);
	}
	free(idx);
	free(held);
	free(counts);
	free(part);
	return rc;
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
