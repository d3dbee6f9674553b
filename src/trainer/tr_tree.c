/*-------------------------------------------------------------------------
 *
 * tr_tree.c
 *	  Families "random_forest" and "gbt" (gradient-boosted trees), both
 *	  for classification and regression, on histogram-binned features.
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
 * Random forest (Breiman, "Random forests", Machine Learning 45, 2001),
 * with scikit-learn's defaults: bootstrap samples, sqrt(d) candidate
 * features per node for classification and all of them for regression,
 * fully grown trees (min_samples_leaf 1), Gini impurity / squared error,
 * and probability averaging over trees.  As in scikit-learn, a feature
 * found constant in a node still counts against max_features, but the
 * search continues until one non-constant feature has been examined.  For each
 * candidate feature the node's rows are histogrammed (per bin: class
 * counts, or sum and count), and only the occupied bins are scanned
 * (a 256-bit occupancy mask), so deep small nodes cost O(rows) not
 * O(bins x classes).  Trees are independent: each has its own seeded
 * generator and, with threads > 1, trees are built in parallel; the
 * predictions are summed in tree order afterwards, so results do not
 * depend on the thread count.
 *
 * Gradient boosting (Friedman, "Greedy function approximation", Annals
 * of Statistics 29, 2001, with the second-order leaf values of Chen and
 * Guestrin, "XGBoost", KDD 2016), as scikit-learn's
 * HistGradientBoosting{Classifier,Regressor}: log loss (one tree per class
 * and round for more than two classes, softmax) or squared error; trees
 * grown best-first to max_leaves leaves with min_samples_leaf rows each;
 * split gain G_L^2/(H_L+l2) + G_R^2/(H_R+l2) - G^2/(H+l2); leaf value
 * -lr * G / (H + l2).  The histogram of the larger child is the parent's
 * minus the smaller child's (the usual subtraction trick).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_tree.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

#define TREE_MAX_BINS 256

/* ---- binning ---------------------------------------------------------- */

typedef struct Bins
{
	int			d;
	int		   *nbins;			/* per feature: thresholds + 1 */
	float	   *thr;			/* d x (TREE_MAX_BINS - 1) thresholds */
} Bins;

static void
BinsFree(Bins *b)
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
static void
BinsApply(const Bins *b, const float *X, int n, uint8_t *out)
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

			/* number of thresholds < x */
			while (lo < hi)
			{
				int			mid = (lo + hi) >> 1;

				if (thr[mid] < x)
					lo = mid + 1;
				else
					hi = mid;
			}
			col[i] = (uint8_t) lo;
		}
	}
}

/* ---- trees -------------------------------------------------------------- */

typedef struct TreeNode
{
	int32_t		feature;		/* -1: leaf */
	int32_t		bin;			/* left when bin <= this */
	int32_t		left;			/* leaf: offset of its values */
	int32_t		right;
} TreeNode;

typedef struct Tree
{
	TreeNode   *nodes;
	int			nn;
	int			ncap;
	float	   *values;			/* leaf values, width per leaf */
	int			nv;
	int			vcap;
} Tree;

static void
TreeFree(Tree *t)
{
	free(t->nodes);
	free(t->values);
	memset(t, 0, sizeof(*t));
}

static int
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
static float *
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

/* leaf values reached by row i of column-major bins (n rows) */
static const float *
TreeLeaf(const Tree *t, const uint8_t *bins, int n, int i)
{
	const TreeNode *nd = t->nodes;

	while (nd->feature >= 0)
		nd = t->nodes + (bins[(size_t) nd->feature * n + i] <= nd->bin ?
						 nd->left : nd->right);
	return t->values + nd->left;
}

/* in-place partition of idx[lo..hi) by bin <= b; returns the split point */
static int
Partition(int *idx, int lo, int hi, const uint8_t *col, int b)
{
	int			i = lo,
				j = hi - 1;

	while (i <= j)
	{
		if (col[idx[i]] <= b)
			i++;
		else
		{
			int			tmp = idx[i];

			idx[i] = idx[j];
			idx[j] = tmp;
			j--;
		}
	}
	return i;
}

/* the set bits of a 256-bit mask in ascending order; returns how many */
static int
MaskBins(const uint64_t *mask, int *out)
{
	int			m = 0;

	for (int w = 0; w < 4; w++)
	{
		uint64_t	bits = mask[w];

		while (bits)
		{
			out[m++] = w * 64 + __builtin_ctzll(bits);
			bits &= bits - 1;
		}
	}
	return m;
}

/* ---- random forest ------------------------------------------------------ */

typedef struct ForestShared
{
	const TrContext *ctx;
	const uint8_t *bins;		/* training bins, column-major */
	const int  *nbins;			/* bins per feature */
	const int  *y;				/* classes (classification) */
	const double *t;			/* targets (regression) */
	int			n;
	int			d;
	int			k;				/* classes, 0 for regression */
	int			ntrees;
	int			mtry;
	int			max_depth;		/* 0: unlimited */
	int			min_split;
	int			min_leaf;
	int			bootstrap;
	Tree	   *trees;
	pthread_mutex_t lock;
	int			next;
	int			failed;			/* 1 oom, 2 cancelled */
	int			done;			/* trees finished (progress) */
} ForestShared;

typedef struct StackItem
{
	int			node;
	int			lo;
	int			hi;
	int			depth;
} StackItem;

/*
 * Class-count histogram of one feature over the node's rows: h[b * k + c]
 * (int32) for the occupied bins, which are listed in ascending order in
 * occ; returns how many there are.
 *
 * Large nodes (at least as many rows as bins) fill two interleaved
 * histograms, because runs of rows in the same bin (the many 0 pixels of an
 * image) otherwise chain every increment on the previous store, then sum
 * and scan all bins.  Small nodes touch few bins: each bin is cleared on
 * first touch and remembered in a 256-bit mask, so the cost stays
 * proportional to the node's rows.  h1 and touched are scratch; touched is
 * all zero on entry and on return.
 */
static int
HistClasses(const uint8_t *col, const int *idx, int lo, int hi, const int *y,
			int k, int nb, int32_t *h, int32_t *h1, unsigned char *touched,
			int *occ)
{
	int			nocc = 0;

	if (hi - lo >= nb)
	{
		int			i = lo;

		memset(h, 0, sizeof(int32_t) * nb * k);
		memset(h1, 0, sizeof(int32_t) * nb * k);
		for (; i + 1 < hi; i += 2)
		{
			h[col[idx[i]] * k + y[idx[i]]]++;
			h1[col[idx[i + 1]] * k + y[idx[i + 1]]]++;
		}
		if (i < hi)
			h[col[idx[i]] * k + y[idx[i]]]++;
		for (int b = 0; b < nb; b++)
		{
			int32_t		sum = 0;

			for (int c = 0; c < k; c++)
			{
				h[b * k + c] += h1[b * k + c];
				sum += h[b * k + c];
			}
			if (sum > 0)
				occ[nocc++] = b;
		}
	}
	else
	{
		uint64_t	mask[4] = {0, 0, 0, 0};

		for (int i = lo; i < hi; i++)
		{
			int			b = col[idx[i]];

			if (!touched[b])
			{
				touched[b] = 1;
				mask[b >> 6] |= UINT64_C(1) << (b & 63);
				memset(h + b * k, 0, sizeof(int32_t) * k);
			}
			h[b * k + y[idx[i]]]++;
		}
		nocc = MaskBins(mask, occ);
		for (int q = 0; q < nocc; q++)
			touched[occ[q]] = 0;
	}
	return nocc;
}

/* sum and count histogram of one feature (regression): h[2 b], h[2 b + 1] */
static int
HistSums(const uint8_t *col, const int *idx, int lo, int hi, const double *t,
		 int nb, double *h, unsigned char *touched, int *occ)
{
	int			nocc = 0;
	uint64_t	mask[4] = {0, 0, 0, 0};

	for (int i = lo; i < hi; i++)
	{
		int			b = col[idx[i]];

		if (!touched[b])
		{
			touched[b] = 1;
			mask[b >> 6] |= UINT64_C(1) << (b & 63);
			h[2 * b] = 0.0;
			h[2 * b + 1] = 0.0;
		}
		h[2 * b] += t[idx[i]];
		h[2 * b + 1] += 1.0;
	}
	(void) nb;
	nocc = MaskBins(mask, occ);
	for (int q = 0; q < nocc; q++)
		touched[occ[q]] = 0;
	return nocc;
}

/* one classification or regression tree of the forest */
static int
GrowForestTree(ForestShared *sh, int tree_no)
{
	int			n = sh->n,
				d = sh->d,
				k = sh->k,
				width = k > 0 ? k : 1;
	Tree	   *t = &sh->trees[tree_no];
	uint64_t	rng = sh->ctx->seed ^ (UINT64_C(0x7266) + (uint64_t) (tree_no + 1) * UINT64_C(0xd1342543de82ef95));
	int		   *idx = malloc(sizeof(int) * n);
	int		   *perm = malloc(sizeof(int) * d);
	StackItem  *stack = malloc(sizeof(StackItem) * (n + 2));
	int32_t    *hc = calloc((size_t) 2 * TREE_MAX_BINS * width, sizeof(int32_t));
	double	   *hs = calloc((size_t) 2 * TREE_MAX_BINS, sizeof(double));
	double	   *tot = calloc(width, sizeof(double));
	double	   *left = calloc(width, sizeof(double));
	unsigned char touched[TREE_MAX_BINS];
	int			occ[TREE_MAX_BINS];
	int			sp = 0,
				rc = 1;

	if (!idx || !perm || !stack || !hc || !hs || !tot || !left)
		goto done;
	memset(touched, 0, sizeof(touched));
	for (int i = 0; i < n; i++)
		idx[i] = sh->bootstrap ? (int) TrRandBelow(&rng, n) : i;
	for (int j = 0; j < d; j++)
		perm[j] = j;
	if (TreeNewNode(t) < 0)
		goto done;
	stack[sp].node = 0;
	stack[sp].lo = 0;
	stack[sp].hi = n;
	stack[sp].depth = 0;
	sp++;

	while (sp > 0)
	{
		StackItem	it = stack[--sp];
		int			m = it.hi - it.lo,
					best_f = -1,
					best_b = 0,
					visited = 0,
					is_leaf;
		double		parent_score,
					best_score = -HUGE_VAL,
					sumsq = 0.0;

		if (TrCancelled(sh->ctx))
		{
			rc = 2;
			goto done;
		}
		/* node totals */
		memset(tot, 0, sizeof(double) * width);
		for (int i = it.lo; i < it.hi; i++)
		{
			if (k > 0)
				tot[sh->y[idx[i]]] += 1.0;
			else
			{
				double		v = sh->t[idx[i]];

				tot[0] += v;
				sumsq += v * v;
			}
		}
		if (k > 0)
		{
			int			classes = 0;

			parent_score = 0.0;
			for (int c = 0; c < k; c++)
			{
				parent_score += tot[c] * tot[c];
				classes += tot[c] > 0.0;
			}
			parent_score /= m;
			is_leaf = classes <= 1;
		}
		else
		{
			parent_score = tot[0] * tot[0] / m;
			/* impurity (variance) ~ 0: nothing to split */
			is_leaf = sumsq - parent_score <= 1e-12 * (sumsq + 1e-300);
		}
		is_leaf = is_leaf || m < sh->min_split || m < 2 * sh->min_leaf ||
			(sh->max_depth > 0 && it.depth >= sh->max_depth);

		/*
		 * Candidate features, drawn without replacement.  As in scikit-learn,
		 * every drawn feature counts against max_features, constant or not,
		 * but the search goes on past max_features until one non-constant
		 * feature has been seen.
		 */
		for (int f = 0; !is_leaf && f < d && (f < sh->mtry || visited == 0); f++)
		{
			int			r = f + (int) TrRandBelow(&rng, (uint64_t) (d - f));
			int			j = perm[r];
			const uint8_t *col = sh->bins + (size_t) j * n;
			int			occupied = 0;
			double		nl = 0.0,
						sql = 0.0,
						sqr = 0.0;

			perm[r] = perm[f];
			perm[f] = j;

			if (k > 0)
				occupied = HistClasses(col, idx, it.lo, it.hi, sh->y, k, sh->nbins[j],
									   hc, hc + (size_t) TREE_MAX_BINS * k, touched, occ);
			else
				occupied = HistSums(col, idx, it.lo, it.hi, sh->t, sh->nbins[j],
									hs, touched, occ);
			if (occupied <= 1)
				continue;		/* constant in this node */
			visited++;

			/* scan the occupied bins in order; branch-free class updates */
			memset(left, 0, sizeof(double) * width);
			if (k > 0)
				for (int c = 0; c < k; c++)
					sqr += tot[c] * tot[c];
			for (int q = 0; q + 1 < occupied; q++)
			{
				int			b = occ[q];

				if (k > 0)
				{
					const int32_t *h = hc + (size_t) b * k;

					for (int c = 0; c < k; c++)
					{
						double		a = h[c];

						sql += a * (2.0 * left[c] + a);
						sqr -= a * (2.0 * (tot[c] - left[c]) - a);
						left[c] += a;
						nl += a;
					}
				}
				else
				{
					left[0] += hs[2 * b];
					nl += hs[2 * b + 1];
				}
				if (nl >= sh->min_leaf && m - nl >= sh->min_leaf)
				{
					double		s;

					if (k > 0)
						s = sql / nl + sqr / (m - nl);
					else
						s = left[0] * left[0] / nl +
							(tot[0] - left[0]) * (tot[0] - left[0]) / (m - nl);
					if (s > best_score)
					{
						best_score = s;
						best_f = j;
						best_b = b;
					}
				}
			}
		}

		if (is_leaf || best_f < 0 || best_score < parent_score - 1e-9 * fabs(parent_score))
		{
			float	   *v = TreeMakeLeaf(t, it.node, width);

			if (v == NULL)
				goto done;
			for (int c = 0; c < width; c++)
				v[c] = (float) (tot[c] / m);
			continue;
		}
		{
			int			mid = Partition(idx, it.lo, it.hi, sh->bins + (size_t) best_f * n, best_b);
			int			l = TreeNewNode(t),
						r = TreeNewNode(t);

			if (l < 0 || r < 0)
				goto done;
			t->nodes[it.node].feature = best_f;
			t->nodes[it.node].bin = best_b;
			t->nodes[it.node].left = l;
			t->nodes[it.node].right = r;
			/* push right first so that the left child is grown next */
			stack[sp].node = r;
			stack[sp].lo = mid;
			stack[sp].hi = it.hi;
			stack[sp].depth = it.depth + 1;
			sp++;
			stack[sp].node = l;
			stack[sp].lo = it.lo;
			stack[sp].hi = mid;
			stack[sp].depth = it.depth + 1;
			sp++;
		}
	}
	rc = 0;

done:
	free(idx);
	free(perm);
	free(stack);
	free(hc);
	free(hs);
	free(tot);
	free(left);
	return rc;
}

static void *
ForestWorker(void *arg)
{
	ForestShared *sh = arg;

	for (;;)
	{
		int			tr,
					rc;

		pthread_mutex_lock(&sh->lock);
		tr = sh->failed ? sh->ntrees : sh->next++;
		pthread_mutex_unlock(&sh->lock);
		if (tr >= sh->ntrees)
			break;
		rc = GrowForestTree(sh, tr);
		pthread_mutex_lock(&sh->lock);
		if (rc != 0 && sh->failed == 0)
			sh->failed = rc;
		sh->done++;
		pthread_mutex_unlock(&sh->lock);
		if (rc == 0 && sh->ctx->threads <= 1)
			TrReportProgress(sh->ctx, tr + 1, NAN);
	}
	return NULL;
}

/* run worker over jobs with up to nthreads threads */
static void
RunThreads(void *(*worker) (void *), void *arg, int nthreads)
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
static void
AddTrees(TrArtifact *art, const Tree *trees, int ntrees, const Bins *bins)
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
static int
PrepareBins(const TrData *data, int max_bins, Bins *bins, uint8_t **btr,
			uint8_t **bva)
{
	memset(bins, 0, sizeof(*bins));
	*btr = malloc((size_t) data->n_train * data->d);
	if (bva != NULL)
		*bva = malloc((size_t) (data->n_val > 0 ? data->n_val : 1) * data->d);
	if (*btr == NULL || (bva != NULL && *bva == NULL) ||
		BinsFit(bins, data->Xtr, data->n_train, data->d, max_bins) != 0)
		return -1;
	BinsApply(bins, data->Xtr, data->n_train, *btr);
	if (bva != NULL)
		BinsApply(bins, data->Xva, data->n_val, *bva);
	return 0;
}

static int
ForestFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			classify = data->kind == TR_KIND_CLASSIFICATION;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d,
				k = classify ? data->n_classes : 0,
				width = classify ? k : 1;
	double		mf = TrParamDouble(ctx->params, "max_features", 0.0);
	int			max_bins = TrParamInt(ctx->params, "max_bins", 255);
	ForestShared sh;
	Bins		bins;
	uint8_t    *btr = NULL,
			   *bva = NULL;
	double	   *acc = calloc((size_t) (nv > 0 ? nv : 1) * width, sizeof(double));
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = malloc(sizeof(double) * (nv > 0 ? nv : 1));
	int			rc = -1;
	long		nodes = 0;

	memset(&sh, 0, sizeof(sh));
	memset(&bins, 0, sizeof(bins));
	sh.ctx = ctx;
	sh.n = n;
	sh.d = d;
	sh.k = k;
	sh.y = data->ytr;
	sh.t = data->ttr;
	sh.ntrees = TrParamInt(ctx->params, "n_trees", 100);
	sh.max_depth = TrParamInt(ctx->params, "max_depth", 0);
	sh.min_split = TrParamInt(ctx->params, "min_samples_split", 2);
	sh.min_leaf = TrParamInt(ctx->params, "min_samples_leaf", 1);
	sh.bootstrap = TrParamInt(ctx->params, "bootstrap", 1);
	if (mf <= 0.0)
		sh.mtry = classify ? (int) floor(sqrt((double) d)) : d;	/* sklearn */
	else if (mf <= 1.0)
		sh.mtry = (int) floor(mf * d);
	else
		sh.mtry = (int) mf;
	sh.mtry = sh.mtry < 1 ? 1 : (sh.mtry > d ? d : sh.mtry);
	sh.trees = calloc(sh.ntrees, sizeof(Tree));
	if (!acc || !pred || !tpred || !sh.trees ||
		PrepareBins(data, max_bins, &bins, &btr, &bva) != 0)
	{
		TrSetError(res, "out of memory for random_forest (%d x %d)", n, d);
		goto done;
	}
	sh.bins = btr;
	sh.nbins = bins.nbins;
	pthread_mutex_init(&sh.lock, NULL);
	RunThreads(ForestWorker, &sh, ctx->threads < sh.ntrees ? ctx->threads : sh.ntrees);
	pthread_mutex_destroy(&sh.lock);
	if (ctx->threads > 1 && !sh.failed)
		TrReportProgress(ctx, sh.ntrees, NAN);	/* workers do not report */
	if (sh.failed)
	{
		TrSetError(res, sh.failed == 2 ? "cancelled" :
				   "out of memory growing random_forest trees");
		goto done;
	}

	/* average the trees' leaf values, in tree order */
	for (int tr = 0; tr < sh.ntrees; tr++)
	{
		nodes += sh.trees[tr].nn;
		for (int i = 0; i < nv; i++)
		{
			const float *v = TreeLeaf(&sh.trees[tr], bva, nv, i);

			for (int c = 0; c < width; c++)
				acc[(size_t) i * width + c] += v[c];
		}
	}
	if (classify)
	{
		for (int i = 0; i < nv; i++)
		{
			const double *a = acc + (size_t) i * width;
			int			best = 0;

			for (int c = 1; c < k; c++)
				if (a[c] > a[best])
					best = c;
			pred[i] = best;
		}
		res->score = TrAccuracy(pred, data->yva, nv);
	}
	else
	{
		for (int i = 0; i < nv; i++)
			tpred[i] = acc[i] / sh.ntrees;
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	res->epochs = sh.ntrees;
	res->extra = json_object_new_object();
	if (res->extra != NULL)
	{
		json_object_object_add(res->extra, "n_nodes", json_object_new_int64(nodes));
		json_object_object_add(res->extra, "max_features", json_object_new_int(sh.mtry));
	}

	{
		TrArtifact art;

		TrArtifactBegin(&art, "random_forest", data);
		AddTrees(&art, sh.trees, sh.ntrees, &bins);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;

done:
	if (sh.trees != NULL)
		for (int tr = 0; tr < sh.ntrees; tr++)
			TreeFree(&sh.trees[tr]);
	free(sh.trees);
	BinsFree(&bins);
	free(btr);
	free(bva);
	free(acc);
	free(pred);
	free(tpred);
	return rc;
}

/* ---- gradient boosting -------------------------------------------------- */

/* histogram memory up to which every open leaf keeps its histogram */
#define GBT_HIST_BUDGET ((size_t) 16 << 20)

typedef struct HistBin
{
	double		g;
	double		h;
	int64_t		n;
} HistBin;

typedef struct GbtSplit
{
	double		gain;			/* <= 0: cannot split */
	int			feature;
	int			bin;
} GbtSplit;

typedef struct GbtLeaf
{
	int			node;
	int			lo;
	int			hi;
	int			depth;
	double		G;
	double		H;
	HistBin    *hist;			/* d x TREE_MAX_BINS */
	GbtSplit	split;
} GbtLeaf;

typedef struct GbtBuilder
{
	const uint8_t *bins;
	const int  *nbins;
	int			n;
	int			d;
	int			max_leaves;
	int			max_depth;
	int			min_leaf;
	double		l2;
	double		lr;
	const double *g;
	const double *h;
	int		   *idx;
	GbtLeaf    *leaves;
	HistBin   **pool;			/* free histograms */
	int			npool;
	int			nhist;			/* histograms allocated */
	int			max_hist;		/* at most this many (GBT_HIST_BUDGET) */
	int			nleaves;		/* leaves[0 .. nleaves) are open */
	double	   *gbuf;			/* n: gradients of a node's rows, gathered */
	double	   *hbuf;
	HistBin    *hist2;			/* TREE_MAX_BINS: second partial histogram */
} GbtBuilder;

/*
 * Histograms of all features over rows idx[lo..hi).  The node's gradients
 * are first gathered into contiguous arrays so that the per-feature loops
 * read them sequentially; large nodes fill two interleaved histograms,
 * since runs of rows in the same bin would otherwise chain every update on
 * the previous store (see HistClasses).
 */
static void
BuildHist(GbtBuilder *b, const int *idx, int lo, int hi, HistBin *hist)
{
	int			n = b->n,
				m = hi - lo;
	double	   *gg = b->gbuf,
			   *hh = b->hbuf;
	HistBin    *h2 = b->hist2;

	for (int i = 0; i < m; i++)
	{
		gg[i] = b->g[idx[lo + i]];
		hh[i] = b->h[idx[lo + i]];
	}
	for (int j = 0; j < b->d; j++)
	{
		HistBin    *hj = hist + (size_t) j * TREE_MAX_BINS;
		const uint8_t *col = b->bins + (size_t) j * n;
		const int  *ix = idx + lo;
		int			nb = b->nbins[j],
					i = 0;

		memset(hj, 0, sizeof(HistBin) * nb);
		if (m >= 4 * nb)
		{
			memset(h2, 0, sizeof(HistBin) * nb);
			for (; i + 1 < m; i += 2)
			{
				HistBin    *e = hj + col[ix[i]];
				HistBin    *f = h2 + col[ix[i + 1]];

				e->g += gg[i];
				e->h += hh[i];
				e->n++;
				f->g += gg[i + 1];
				f->h += hh[i + 1];
				f->n++;
			}
			for (int q = 0; q < nb; q++)
			{
				hj[q].g += h2[q].g;
				hj[q].h += h2[q].h;
				hj[q].n += h2[q].n;
			}
		}
		for (; i < m; i++)
		{
			HistBin    *e = hj + col[ix[i]];

			e->g += gg[i];
			e->h += hh[i];
			e->n++;
		}
	}
}

/* best split of a leaf from its histogram */
static void
FindSplit(GbtBuilder *b, GbtLeaf *lf)
{
	double		parent = lf->G * lf->G / (lf->H + b->l2);
	int			m = lf->hi - lf->lo;

	lf->split.gain = 0.0;
	lf->split.feature = -1;
	if (m < 2 * b->min_leaf || (b->max_depth > 0 && lf->depth >= b->max_depth))
		return;
	for (int j = 0; j < b->d; j++)
	{
		const HistBin *hj = lf->hist + (size_t) j * TREE_MAX_BINS;
		double		gl = 0.0,
					hl = 0.0;
		int64_t		nl = 0;

		for (int bin = 0; bin < b->nbins[j] - 1; bin++)
		{
			double		gr,
						hr,
						gain;

			gl += hj[bin].g;
			hl += hj[bin].h;
			nl += hj[bin].n;
			if (nl < b->min_leaf)
				continue;
			if (m - nl < b->min_leaf)
				break;
			gr = lf->G - gl;
			hr = lf->H - hl;
			if (hl < 1e-3 || hr < 1e-3)		/* sklearn's min_hessian_to_split */
				continue;
			gain = gl * gl / (hl + b->l2) + gr * gr / (hr + b->l2) - parent;
			if (gain > lf->split.gain + 1e-12)
			{
				lf->split.gain = gain;
				lf->split.feature = j;
				lf->split.bin = bin;
			}
		}
	}
}

/*
 * A histogram buffer: a free one, a new one while fewer than max_hist
 * exist, else the one of the open leaf with the lowest split gain, the
 * leaf least likely to be split next.  Such a leaf, if it is split after
 * all, has both children histogrammed from its rows (GrowBoostTree).
 * Each histogram is d x 256 bins of 24 bytes (4.8 MB at 784 features), so
 * one per leaf would be 150 MB at 31 leaves, as much as the data.
 */
static HistBin *
TakeHist(GbtBuilder *b)
{
	int			victim = -1;
	HistBin    *h;

	if (b->npool > 0)
		return b->pool[--b->npool];
	if (b->nhist < b->max_hist)
	{
		h = malloc(sizeof(HistBin) * (size_t) b->d * TREE_MAX_BINS);
		if (h != NULL)
			b->nhist++;
		return h;
	}
	for (int q = 0; q < b->nleaves; q++)
		if (b->leaves[q].hist != NULL &&
			(victim < 0 || b->leaves[q].split.gain < b->leaves[victim].split.gain))
			victim = q;
	if (victim < 0)
		return NULL;			/* cannot happen: max_hist >= 3 */
	h = b->leaves[victim].hist;
	b->leaves[victim].hist = NULL;
	return h;
}

static void
GiveHist(GbtBuilder *b, HistBin *h)
{
	if (h != NULL)
		b->pool[b->npool++] = h;
}

/*
 * Grow one tree on gradients g and Hessians h (best-first); adds the leaf
 * values (already times lr) to F[i * stride] for every training row.
 */
static int
GrowBoostTree(GbtBuilder *b, Tree *t, double *F, int stride)
{
	int			nleaves = 1;

	for (int i = 0; i < b->n; i++)
		b->idx[i] = i;
	if (TreeNewNode(t) < 0)
		return -1;
	memset(&b->leaves[0], 0, sizeof(GbtLeaf));
	b->leaves[0].lo = 0;
	b->leaves[0].hi = b->n;
	for (int i = 0; i < b->n; i++)
	{
		b->leaves[0].G += b->g[i];
		b->leaves[0].H += b->h[i];
	}
	b->nleaves = 1;
	if ((b->leaves[0].hist = TakeHist(b)) == NULL)
		return -1;
	BuildHist(b, b->idx, 0, b->n, b->leaves[0].hist);
	FindSplit(b, &b->leaves[0]);

	while (nleaves < b->max_leaves)
	{
		int			best = -1;
		GbtLeaf    *lf,
					cl,
					cr;
		int			mid;

		for (int q = 0; q < nleaves; q++)
			if (b->leaves[q].split.feature >= 0 &&
				(best < 0 || b->leaves[q].split.gain > b->leaves[best].split.gain))
				best = q;
		if (best < 0)
			break;
		lf = &b->leaves[best];
		mid = Partition(b->idx, lf->lo, lf->hi,
						b->bins + (size_t) lf->split.feature * b->n, lf->split.bin);
		memset(&cl, 0, sizeof(cl));
		memset(&cr, 0, sizeof(cr));
		cl.lo = lf->lo;
		cl.hi = mid;
		cr.lo = mid;
		cr.hi = lf->hi;
		cl.depth = cr.depth = lf->depth + 1;
		cl.node = TreeNewNode(t);
		cr.node = TreeNewNode(t);
		if (cl.node < 0 || cr.node < 0)
			return -1;
		t->nodes[lf->node].feature = lf->split.feature;
		t->nodes[lf->node].bin = lf->split.bin;
		t->nodes[lf->node].left = cl.node;
		t->nodes[lf->node].right = cr.node;

		/*
		 * The smaller child is histogrammed, the larger one subtracted from
		 * the parent, or histogrammed too when the parent's was taken.
		 */
		{
			GbtLeaf    *sm = (cl.hi - cl.lo) <= (cr.hi - cr.lo) ? &cl : &cr;
			GbtLeaf    *lg = sm == &cl ? &cr : &cl;

			lg->hist = lf->hist;	/* reuse the parent's buffer */
			lf->hist = NULL;
			if ((sm->hist = TakeHist(b)) == NULL)
			{
				GiveHist(b, lg->hist);
				return -1;
			}
			BuildHist(b, b->idx, sm->lo, sm->hi, sm->hist);
			if (lg->hist == NULL)
			{
				if ((lg->hist = TakeHist(b)) == NULL)
				{
					GiveHist(b, sm->hist);
					return -1;
				}
				BuildHist(b, b->idx, lg->lo, lg->hi, lg->hist);
			}
			else
				for (int j = 0; j < b->d; j++)
					for (int bin = 0; bin < b->nbins[j]; bin++)
					{
						size_t		o = (size_t) j * TREE_MAX_BINS + bin;

						lg->hist[o].g -= sm->hist[o].g;
						lg->hist[o].h -= sm->hist[o].h;
						lg->hist[o].n -= sm->hist[o].n;
					}
		}
		for (int i = cl.lo; i < cl.hi; i++)
		{
			cl.G += b->g[b->idx[i]];
			cl.H += b->h[b->idx[i]];
		}
		cr.G = lf->G - cl.G;
		cr.H = lf->H - cl.H;
		FindSplit(b, &cl);
		FindSplit(b, &cr);
		/* a leaf that cannot split needs its histogram no more */
		if (cl.split.feature < 0)
		{
			GiveHist(b, cl.hist);
			cl.hist = NULL;
		}
		if (cr.split.feature < 0)
		{
			GiveHist(b, cr.hist);
			cr.hist = NULL;
		}
		b->leaves[best] = cl;
		b->leaves[nleaves++] = cr;
		b->nleaves = nleaves;
	}

	/* leaf values; apply them to the training rows */
	for (int q = 0; q < nleaves; q++)
	{
		GbtLeaf    *lf = &b->leaves[q];
		float	   *v = TreeMakeLeaf(t, lf->node, 1);
		double		val = -b->lr * lf->G / (lf->H + b->l2);

		if (v == NULL)
			return -1;
		v[0] = (float) val;
		for (int i = lf->lo; i < lf->hi; i++)
			F[(size_t) b->idx[i] * stride] += v[0];
		GiveHist(b, lf->hist);
		lf->hist = NULL;
	}
	return 0;
}

static int
GbtFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			classify = data->kind == TR_KIND_CLASSIFICATION;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d,
				k = classify ? data->n_classes : 0;
	int			kk = classify ? (k == 2 ? 1 : k) : 1;	/* trees per round */
	int			rounds = TrParamInt(ctx->params, "n_rounds", 100);
	int			max_bins = TrParamInt(ctx->params, "max_bins", 255);
	GbtBuilder	b;
	Bins		bins;
	uint8_t    *btr = NULL,
			   *bva = NULL;
	Tree	   *trees = calloc((size_t) rounds * kk, sizeof(Tree));
	double	   *F = malloc(sizeof(double) * (size_t) n * kk);
	double	   *Fv = malloc(sizeof(double) * (size_t) (nv > 0 ? nv : 1) * kk);
	double	   *g = malloc(sizeof(double) * (size_t) n * kk);
	double	   *h = malloc(sizeof(double) * (size_t) n * kk);
	double	   *gc = malloc(sizeof(double) * n);
	double	   *hc = malloc(sizeof(double) * n);
	double	   *init = calloc(kk, sizeof(double));
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = malloc(sizeof(double) * (nv > 0 ? nv : 1));
	double		loss = NAN;
	int			rc = -1,
				ntrees = 0;
	size_t		histbytes;

	memset(&b, 0, sizeof(b));
	memset(&bins, 0, sizeof(bins));
	b.n = n;
	b.d = d;
	b.max_leaves = TrParamInt(ctx->params, "max_leaves", 31);
	b.max_depth = TrParamInt(ctx->params, "max_depth", 0);
	b.min_leaf = TrParamInt(ctx->params, "min_samples_leaf", 20);
	b.l2 = TrParamDouble(ctx->params, "l2", 0.0);
	b.lr = TrParamDouble(ctx->params, "lr", 0.1);
	histbytes = sizeof(HistBin) * (size_t) d * TREE_MAX_BINS * (b.max_leaves + 1);
	if (histbytes > ((size_t) 1 << 30))
	{
		TrSetError(res, "gbt: histograms would need %zu MB (features x 256 bins x max_leaves); lower max_leaves",
				   histbytes >> 20);
		goto done;
	}
	b.idx = malloc(sizeof(int) * n);
	b.leaves = calloc(b.max_leaves + 1, sizeof(GbtLeaf));
	b.pool = calloc(b.max_leaves + 2, sizeof(HistBin *));
	{
		/* GBT_HIST_BUDGET, or an eighth of the data when that is more */
		size_t		one = sizeof(HistBin) * (size_t) d * TREE_MAX_BINS;
		size_t		budget = (size_t) n * d * sizeof(float) / 8;

		if (budget < GBT_HIST_BUDGET)
			budget = GBT_HIST_BUDGET;
		b.max_hist = (int) (budget / one);
		if (b.max_hist < 3)
			b.max_hist = 3;
		if (b.max_hist > b.max_leaves + 1)
			b.max_hist = b.max_leaves + 1;
	}
	b.gbuf = malloc(sizeof(double) * n);
	b.hbuf = malloc(sizeof(double) * n);
	b.hist2 = malloc(sizeof(HistBin) * TREE_MAX_BINS);
	if (!b.gbuf || !b.hbuf || !b.hist2 || !trees || !F || !Fv || !g || !h || !gc || !hc || !init || !pred || !tpred ||
		!b.idx || !b.leaves || !b.pool ||
		PrepareBins(data, max_bins, &bins, &btr, NULL) != 0)
	{
		TrSetError(res, "out of memory for gbt (%d x %d)", n, d);
		goto done;
	}
	b.bins = btr;
	b.nbins = bins.nbins;
	b.g = gc;
	b.h = hc;

	/* initial raw scores: mean target, log-odds, or log class priors */
	if (!classify)
	{
		for (int i = 0; i < n; i++)
			init[0] += data->ttr[i];
		init[0] /= n;
	}
	else
	{
		double	   *cnt = calloc(k, sizeof(double));

		if (cnt == NULL)
		{
			TrSetError(res, "out of memory for gbt");
			goto done;
		}
		for (int i = 0; i < n; i++)
			cnt[data->ytr[i]] += 1.0;
		if (k == 2)
		{
			double		p = fmin(fmax(cnt[1] / n, 1e-12), 1 - 1e-12);

			init[0] = log(p / (1 - p));
		}
		else
			for (int c = 0; c < k; c++)
				init[c] = log(fmax(cnt[c] / n, 1e-12));
		free(cnt);
	}
	for (int i = 0; i < n; i++)
		memcpy(F + (size_t) i * kk, init, sizeof(double) * kk);

	for (int r = 0; r < rounds; r++)
	{
		if (TrCancelled(ctx))
		{
			TrSetError(res, "cancelled");
			goto done;
		}
		/* gradients and Hessians of the loss at F, and the loss itself */
		loss = 0.0;
		for (int i = 0; i < n; i++)
		{
			double	   *f = F + (size_t) i * kk;

			if (!classify)
			{
				double		e = f[0] - data->ttr[i];

				g[i] = e;
				h[i] = 1.0;
				loss += 0.5 * e * e;
			}
			else if (kk == 1)
			{
				double		z = f[0],
							y = data->ytr[i] == 1 ? 1.0 : 0.0,
							p = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));

				g[i] = p - y;
				h[i] = fmax(p * (1.0 - p), 1e-16);
				loss += (z > 0 ? z + log1p(exp(-z)) : log1p(exp(z))) - y * z;
			}
			else
			{
				double		mx = f[0],
							sum = 0.0;

				for (int c = 1; c < kk; c++)
					mx = fmax(mx, f[c]);
				for (int c = 0; c < kk; c++)
					sum += exp(f[c] - mx);
				for (int c = 0; c < kk; c++)
				{
					double		p = exp(f[c] - mx) / sum;

					g[(size_t) c * n + i] = p - (data->ytr[i] == c ? 1.0 : 0.0);
					h[(size_t) c * n + i] = fmax(p * (1.0 - p), 1e-16);
				}
				loss += mx + log(sum) - f[data->ytr[i]];
			}
		}
		loss /= n;
		if (!isfinite(loss))
		{
			TrSetError(res, "gbt diverged (loss not finite at round %d); lower lr", r + 1);
			goto done;
		}
		for (int c = 0; c < kk; c++)
		{
			memcpy(gc, g + (size_t) c * n, sizeof(double) * n);
			memcpy(hc, h + (size_t) c * n, sizeof(double) * n);
			if (GrowBoostTree(&b, &trees[ntrees], F + c, kk) != 0)
			{
				ntrees++;
				TrSetError(res, "out of memory growing gbt trees");
				goto done;
			}
			ntrees++;
		}
		TrReportProgress(ctx, r + 1, loss);
		res->epochs = r + 1;
	}

	/*
	 * validation: init + sum of tree outputs, on validation rows binned now
	 * that the training bins and histograms are gone
	 */
	for (int i = 0; i < b.npool; i++)
		free(b.pool[i]);
	b.npool = 0;
	free(btr);
	btr = NULL;
	if ((bva = malloc((size_t) (nv > 0 ? nv : 1) * d)) == NULL)
	{
		TrSetError(res, "out of memory for gbt (%d x %d)", nv, d);
		goto done;
	}
	BinsApply(&bins, data->Xva, nv, bva);
	for (int i = 0; i < nv; i++)
		memcpy(Fv + (size_t) i * kk, init, sizeof(double) * kk);
	for (int tr = 0; tr < ntrees; tr++)
	{
		int			c = tr % kk;

		for (int i = 0; i < nv; i++)
			Fv[(size_t) i * kk + c] += TreeLeaf(&trees[tr], bva, nv, i)[0];
	}
	if (!classify)
	{
		for (int i = 0; i < nv; i++)
			tpred[i] = Fv[i];
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	else
	{
		for (int i = 0; i < nv; i++)
		{
			const double *f = Fv + (size_t) i * kk;
			int			best = 0;

			if (kk == 1)
				best = f[0] > 0.0 ? 1 : 0;
			else
				for (int c = 1; c < kk; c++)
					if (f[c] > f[best])
						best = c;
			pred[i] = best;
		}
		res->score = TrAccuracy(pred, data->yva, nv);
	}
	res->train_loss = loss;

	{
		TrArtifact art;
		int64_t		dims[1] = {kk};

		TrArtifactBegin(&art, "gbt", data);
		TrArtifactAdd(&art, "init", TR_DT_F64, 1, dims, init);
		/* tree t adds to output t % n_outputs */
		AddTrees(&art, trees, ntrees, &bins);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;

done:
	if (trees != NULL)
		for (int tr = 0; tr < ntrees; tr++)
			TreeFree(&trees[tr]);
	free(trees);
	if (b.pool != NULL)
		for (int i = 0; i < b.npool; i++)
			free(b.pool[i]);
	if (b.leaves != NULL)
		for (int i = 0; i <= b.max_leaves; i++)
			free(b.leaves[i].hist);
	free(b.pool);
	free(b.leaves);
	free(b.idx);
	free(b.gbuf);
	free(b.hbuf);
	free(b.hist2);
	BinsFree(&bins);
	free(btr);
	free(bva);
	free(F);
	free(Fv);
	free(g);
	free(h);
	free(gc);
	free(hc);
	free(init);
	free(pred);
	free(tpred);
	return rc;
}

static const TrParamSpec forest_params[] = {
	{"n_trees", TR_PARAM_INT, 1, 100000, NULL, "trees (default 100)"},
	{"max_depth", TR_PARAM_INT, 0, 1000, NULL, "0 = grow until pure (default 0)"},
	{"min_samples_split", TR_PARAM_INT, 2, 1 << 30, NULL, "default 2"},
	{"min_samples_leaf", TR_PARAM_INT, 1, 1 << 30, NULL, "default 1"},
	{"max_features", TR_PARAM_DOUBLE, 0.0, 1e9, NULL,
	"features per split: 0 = sqrt(d) (classification) / d (regression), (0,1] = fraction, >1 = count"},
	{"bootstrap", TR_PARAM_INT, 0, 1, NULL, "1 = bootstrap samples (default 1)"},
	{"max_bins", TR_PARAM_INT, 2, 256, NULL, "histogram bins per feature (default 255)"},
	{NULL}
};

static const TrParamSpec gbt_params[] = {
	{"n_rounds", TR_PARAM_INT, 1, 100000, NULL, "boosting rounds (default 100)"},
	{"lr", TR_PARAM_DOUBLE, 1e-6, 10.0, NULL, "learning rate (default 0.1)"},
	{"max_leaves", TR_PARAM_INT, 2, 65536, NULL, "leaves per tree (default 31)"},
	{"max_depth", TR_PARAM_INT, 0, 1000, NULL, "0 = no limit (default 0)"},
	{"min_samples_leaf", TR_PARAM_INT, 1, 1 << 30, NULL, "default 20"},
	{"l2", TR_PARAM_DOUBLE, 0.0, 1e9, NULL, "L2 on leaf values (default 0)"},
	{"max_bins", TR_PARAM_INT, 2, 256, NULL, "histogram bins per feature (default 255)"},
	{NULL}
};

const TrFamily TrFamilyRandomForest = {
	.name = "random_forest",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = ForestFit,
	.params = forest_params,
	.summary = "random forest on histogram bins (Gini / squared error)",
};

const TrFamily TrFamilyGbt = {
	.name = "gbt",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = GbtFit,
	.params = gbt_params,
	.summary = "gradient-boosted trees, histogram splits, best-first leaves",
};
