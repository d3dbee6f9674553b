/*-------------------------------------------------------------------------
 *
 * tr_tree.c
 *	  The tree core of the families "random_forest" (tr_forest.c) and "gbt"
 *	  (tr_gbt.c): histogram binning, trees, the worker threads and the
 *	  artifact's tree section (docs/models.md §4).
 *
 * Binning.  Each feature's training values are sorted (a radix sort on
 * the float bits) and cut into at most max_bins bins of about equal
 * count; thresholds are midpoints between consecutive distinct values, so
 * a column with few distinct values gets one bin per value, as in
 * scikit-learn's HistGradientBoosting and LightGBM.  A row goes left at a
 * node when its bin is <= the node's bin, i.e. when its standardised value
 * is <= the stored threshold.  Bins are uint8, stored column-major so that
 * building a histogram for one feature walks one contiguous column.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_tree.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "tr_tree.h"

/* ---- binning ---------------------------------------------------------- */

void
TreeBinsFree(Bins *b)
{
	free(b->nbins);
	free(b->thr);
}

/* float -> uint32 whose unsigned order is the float order */
static inline uint32_t
FloatKey(float f)
{
	uint32_t	u;

	memcpy(&u, &f, 4);
	return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static inline float
KeyFloat(uint32_t u)
{
	float		f;

	u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
	memcpy(&f, &u, 4);
	return f;
}

/* LSD radix sort of n keys (8 bits per pass), tmp has room for n */
static void
RadixSort(uint32_t *a, uint32_t *tmp, int n)
{
	for (int shift = 0; shift < 32; shift += 8)
	{
		int			cnt[257] = {0};

		for (int i = 0; i < n; i++)
			cnt[((a[i] >> shift) & 255) + 1]++;
		if (cnt[1] == n)		/* every key has the same byte: skip pass */
			continue;
		for (int b = 0; b < 256; b++)
			cnt[b + 1] += cnt[b];
		for (int i = 0; i < n; i++)
			tmp[cnt[(a[i] >> shift) & 255]++] = a[i];
		memcpy(a, tmp, sizeof(uint32_t) * n);
	}
}

/* thresholds for every feature from the training rows (n x d row-major) */
static int
BinsFit(Bins *b, const float *X, int n, int d, int max_bins)
{
	uint32_t   *keys = malloc(sizeof(uint32_t) * n);
	uint32_t   *tmp = malloc(sizeof(uint32_t) * n);

	b->d = d;
	b->nbins = malloc(sizeof(int) * d);
	b->thr = malloc(sizeof(float) * (size_t) d * (TREE_MAX_BINS - 1));
	if (!keys || !tmp || !b->nbins || !b->thr)
	{
		free(keys);
		free(tmp);
		return -1;
	}
	for (int j = 0; j < d; j++)
	{
		float	   *thr = b->thr + (size_t) j * (TREE_MAX_BINS - 1);
		int			nt = 0,
					distinct = 1;

		for (int i = 0; i < n; i++)
			keys[i] = FloatKey(X[(size_t) i * d + j]);
		RadixSort(keys, tmp, n);
		for (int i = 1; i < n; i++)
			distinct += keys[i] != keys[i - 1];
		if (distinct <= max_bins)
		{
			for (int i = 1; i < n; i++)
				if (keys[i] != keys[i - 1])
					thr[nt++] = 0.5f * (KeyFloat(keys[i - 1]) + KeyFloat(keys[i]));
		}
		else
		{
			/* cut after the distinct value where the running count passes q n / B */
			int			q = 1;

			for (int i = 1; i < n && nt < max_bins - 1; i++)
			{
				if (keys[i] == keys[i - 1])
					continue;
				if ((long) i * max_bins >= (long) q * n)
				{
					thr[nt++] = 0.5f * (KeyFloat(keys[i - 1]) + KeyFloat(keys[i]));
					while ((long) i * max_bins >= (long) q * n)
						q++;
				}
			}
		}
		b->nbins[j] = nt + 1;
	}
	free(keys);
	free(tmp);
	return 0;
}

/* bin index of every value: column-major n x d uint8 */
void
TreeBinsApply(const Bins *b, const float *X, int n, uint8_t *out)
{
	int			d = b->d;

	for (int j = 0; j < d; j++)
	{
		const float *thr = b->thr + (size_t) j * (TREE_MAX_BINS - 1);
		int			nt = b->nbins[j] - 1;
		uint8_t    *col = out + (size_t) j * n;

		for (int i = 0; i < n; i++)
		{
			float		x = X[(size_t) i * d + j];
			int			lo = 0,
						hi = nt;

			/*
			 * number of thresholds < x; written so that the compiler can
			 * select instead of branching, since the comparisons are
			 * unpredictable
			 */
			while (lo < hi)
			{
				int			mid = (lo + hi) >> 1;
				int			less = thr[mid] < x;

				lo = less ? mid + 1 : lo;
				hi = less ? hi : mid;
			}
			col[i] = (uint8_t) lo;
		}
	}
}

/* ---- trees -------------------------------------------------------------- */

void
TreeFree(Tree *t)
{
	free(t->nodes);
	free(t->values);
	memset(t, 0, sizeof(*t));
}

int
TreeNewNode(Tree *t)
{
	if (t->nn == t->ncap)
	{
		int			cap = t->ncap ? t->ncap * 2 : 64;
		TreeNode   *nn = realloc(t->nodes, sizeof(TreeNode) * cap);

		if (nn == NULL)
			return -1;
		t->nodes = nn;
		t->ncap = cap;
	}
	t->nodes[t->nn].feature = -1;
	t->nodes[t->nn].bin = 0;
	t->nodes[t->nn].left = 0;
	t->nodes[t->nn].right = 0;
	return t->nn++;
}

/* make node a leaf holding width values; returns the values to fill */
float *
TreeMakeLeaf(Tree *t, int node, int width)
{
	if (t->nv + width > t->vcap)
	{
		int			cap = t->vcap ? t->vcap * 2 : 256;
		float	   *nv;

		while (cap < t->nv + width)
			cap *= 2;
		nv = realloc(t->values, sizeof(float) * cap);
		if (nv == NULL)
			return NULL;
		t->values = nv;
		t->vcap = cap;
	}
	t->nodes[node].feature = -1;
	t->nodes[node].left = t->nv;
	t->nv += width;
	return t->values + t->nodes[node].left;
}

/* run worker over jobs with up to nthreads threads */
void
TreeRunThreads(void *(*worker) (void *), void *arg, int nthreads)
{
	pthread_t  *tids;
	int			started = 0;

	if (nthreads <= 1 || (tids = malloc(sizeof(pthread_t) * nthreads)) == NULL)
	{
		worker(arg);
		return;
	}
	for (; started < nthreads; started++)
		if (pthread_create(&tids[started], NULL, worker, arg) != 0)
			break;
	if (started == 0)
		worker(arg);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
}

/* serialise an ensemble of trees into the artifact */
void
TreeAddToArtifact(TrArtifact *art, const Tree *trees, int ntrees, const Bins *bins)
{
	int			total = 0,
				totalv = 0;
	int32_t    *roots = malloc(sizeof(int32_t) * (ntrees + 1));
	int32_t    *vroots = malloc(sizeof(int32_t) * (ntrees + 1));
	int32_t    *feat,
			   *left,
			   *right;
	float	   *thr,
			   *vals;
	int64_t		dims[2];

	for (int i = 0; i < ntrees; i++)
	{
		total += trees[i].nn;
		totalv += trees[i].nv;
	}
	feat = malloc(sizeof(int32_t) * (total + 1));
	left = malloc(sizeof(int32_t) * (total + 1));
	right = malloc(sizeof(int32_t) * (total + 1));
	thr = malloc(sizeof(float) * (total + 1));
	vals = malloc(sizeof(float) * (totalv + 1));
	if (!roots || !vroots || !feat || !left || !right || !thr || !vals)
		art->failed = 1;
	else
	{
		int			o = 0,
					ov = 0;

		for (int i = 0; i < ntrees; i++)
		{
			const Tree *t = &trees[i];

			roots[i] = o;
			vroots[i] = ov;
			for (int q = 0; q < t->nn; q++)
			{
				const TreeNode *nd = &t->nodes[q];

				feat[o + q] = nd->feature;
				/* children are global node numbers; a leaf points at values */
				left[o + q] = nd->feature >= 0 ? o + nd->left : ov + nd->left;
				right[o + q] = nd->feature >= 0 ? o + nd->right : -1;
				thr[o + q] = nd->feature >= 0 ?
					bins->thr[(size_t) nd->feature * (TREE_MAX_BINS - 1) + nd->bin] : 0.0f;
			}
			memcpy(vals + ov, t->values, sizeof(float) * t->nv);
			o += t->nn;
			ov += t->nv;
		}
		dims[0] = ntrees;
		TrArtifactAdd(art, "tree_roots", TR_DT_I32, 1, dims, roots);
		dims[0] = total;
		TrArtifactAdd(art, "node_feature", TR_DT_I32, 1, dims, feat);
		TrArtifactAdd(art, "node_threshold", TR_DT_F32, 1, dims, thr);
		TrArtifactAdd(art, "node_left", TR_DT_I32, 1, dims, left);
		TrArtifactAdd(art, "node_right", TR_DT_I32, 1, dims, right);
		dims[0] = totalv;
		TrArtifactAdd(art, "leaf_values", TR_DT_F32, 1, dims, vals);
	}
	free(roots);
	free(vroots);
	free(feat);
	free(left);
	free(right);
	free(thr);
	free(vals);
}

/* bins for the training and (bva not NULL) validation rows */
/*
 * The fit's histogram bins, all features together, as the run's metric
 * "bins": a split search scans them per node (gbt: twice per split), so
 * the scheduler's cost model counts them (src/core/costmodel.c, COST_BOOST).
 * They depend on the data (how many distinct values each feature has),
 * which the task's profile does not say.
 */
void
TreeReportBins(const Bins *b, TrResult *res)
{
	int64_t		total = 0;

	for (int j = 0; j < b->d; j++)
		total += b->nbins[j];
	if (res->extra == NULL)
		res->extra = json_object_new_object();
	if (res->extra != NULL)
		json_object_object_add(res->extra, "bins", json_object_new_int64(total));
}

int
TreePrepareBins(const TrData *data, int max_bins, Bins *bins, uint8_t **btr,
				uint8_t **bva)
{
	memset(bins, 0, sizeof(*bins));
	*btr = malloc((size_t) data->n_train * data->d);
	if (bva != NULL)
		*bva = malloc((size_t) (data->n_val > 0 ? data->n_val : 1) * data->d);
	if (*btr == NULL || (bva != NULL && *bva == NULL) ||
		BinsFit(bins, data->Xtr, data->n_train, data->d, max_bins) != 0)
		return -1;
	TreeBinsApply(bins, data->Xtr, data->n_train, *btr);
	if (bva != NULL)
		TreeBinsApply(bins, data->Xva, data->n_val, *bva);
	return 0;
}
