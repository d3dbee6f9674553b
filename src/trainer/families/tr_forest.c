/*-------------------------------------------------------------------------
 *
 * tr_forest.c
 *	  Family "random_forest", for classification and regression, on the
 *	  histogram bins of tr_tree.c.
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
 * IDENTIFICATION
 *	  src/trainer/families/tr_forest.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "tr_tree.h"

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
		nocc = TreeMaskBins(mask, occ);
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
	nocc = TreeMaskBins(mask, occ);
	for (int q = 0; q < nocc; q++)
		touched[occ[q]] = 0;
	return nocc;
}

/* one tree's working memory */
typedef struct ForestGrower
{
	ForestShared *sh;
	uint64_t	rng;
	int		   *idx;			/* n: the (bootstrap) rows, partitioned by node */
	int		   *perm;			/* d: features, drawn without replacement */
	int32_t    *hc;				/* class histograms (2 x bins x classes) */
	double	   *hs;				/* sum histograms (2 x bins) */
	double	   *tot;			/* the node's class counts or target sum */
	double	   *left;			/* the same left of a threshold */
	unsigned char touched[TREE_MAX_BINS];
	int			occ[TREE_MAX_BINS];
} ForestGrower;

/* the best split found so far in a node */
typedef struct ForestSplit
{
	int			feature;		/* -1: none */
	int			bin;
	double		score;			/* larger is better */
} ForestSplit;

/*
 * The node's totals (gr->tot) and its score without a split (*parent);
 * returns whether the node must be a leaf (pure, too small or too deep).
 */
static int
ForestNodeTotals(ForestGrower *gr, const StackItem *it, double *parent)
{
	ForestShared *sh = gr->sh;
	int			k = sh->k,
				m = it->hi - it->lo,
				is_leaf;
	double		sumsq = 0.0;

	memset(gr->tot, 0, sizeof(double) * (k > 0 ? k : 1));
	for (int i = it->lo; i < it->hi; i++)
	{
		if (k > 0)
			gr->tot[sh->y[gr->idx[i]]] += 1.0;
		else
		{
			double		v = sh->t[gr->idx[i]];

			gr->tot[0] += v;
			sumsq += v * v;
		}
	}
	if (k > 0)
	{
		int			classes = 0;

		*parent = 0.0;
		for (int c = 0; c < k; c++)
		{
			*parent += gr->tot[c] * gr->tot[c];
			classes += gr->tot[c] > 0.0;
		}
		*parent /= m;
		is_leaf = classes <= 1;
	}
	else
	{
		*parent = gr->tot[0] * gr->tot[0] / m;
		/* impurity (variance) ~ 0: nothing to split */
		is_leaf = sumsq - *parent <= 1e-12 * (sumsq + 1e-300);
	}
	return is_leaf || m < sh->min_split || m < 2 * sh->min_leaf ||
		(sh->max_depth > 0 && it->depth >= sh->max_depth);
}

/*
 * Every threshold of feature j in the node, scanned over its occupied bins
 * in order (branch-free class updates); improves *best.  Returns false
 * when the feature is constant in the node.
 */
static bool
ForestScanFeature(ForestGrower *gr, const StackItem *it, int j, ForestSplit *best)
{
	ForestShared *sh = gr->sh;
	int			k = sh->k,
				m = it->hi - it->lo,
				occupied;
	const uint8_t *col = sh->bins + (size_t) j * sh->n;
	double		nl = 0.0,
				sql = 0.0,
				sqr = 0.0;

	if (k > 0)
		occupied = HistClasses(col, gr->idx, it->lo, it->hi, sh->y, k, sh->nbins[j],
							   gr->hc, gr->hc + (size_t) TREE_MAX_BINS * k,
							   gr->touched, gr->occ);
	else
		occupied = HistSums(col, gr->idx, it->lo, it->hi, sh->t, sh->nbins[j],
							gr->hs, gr->touched, gr->occ);
	if (occupied <= 1)
		return false;
	memset(gr->left, 0, sizeof(double) * (k > 0 ? k : 1));
	for (int c = 0; c < k; c++)
		sqr += gr->tot[c] * gr->tot[c];
	for (int q = 0; q + 1 < occupied; q++)
	{
		int			b = gr->occ[q];
		double		s;

		if (k > 0)
		{
			const int32_t *h = gr->hc + (size_t) b * k;

			for (int c = 0; c < k; c++)
			{
				double		a = h[c];

				sql += a * (2.0 * gr->left[c] + a);
				sqr -= a * (2.0 * (gr->tot[c] - gr->left[c]) - a);
				gr->left[c] += a;
				nl += a;
			}
		}
		else
		{
			gr->left[0] += gr->hs[2 * b];
			nl += gr->hs[2 * b + 1];
		}
		if (nl < sh->min_leaf || m - nl < sh->min_leaf)
			continue;
		if (k > 0)
			s = sql / nl + sqr / (m - nl);
		else
			s = gr->left[0] * gr->left[0] / nl +
				(gr->tot[0] - gr->left[0]) * (gr->tot[0] - gr->left[0]) / (m - nl);
		if (s > best->score)
		{
			best->score = s;
			best->feature = j;
			best->bin = b;
		}
	}
	return true;
}

/*
 * The node's best split over candidate features drawn without replacement.
 * As in scikit-learn, every drawn feature counts against max_features,
 * constant or not, but the search goes on past max_features until one
 * non-constant feature has been seen.
 */
static ForestSplit
ForestBestSplit(ForestGrower *gr, const StackItem *it)
{
	ForestShared *sh = gr->sh;
	int			d = sh->d,
				visited = 0;
	ForestSplit best = {-1, 0, -HUGE_VAL};

	for (int f = 0; f < d && (f < sh->mtry || visited == 0); f++)
	{
		int			r = f + (int) TrRandBelow(&gr->rng, (uint64_t) (d - f));
		int			j = gr->perm[r];

		gr->perm[r] = gr->perm[f];
		gr->perm[f] = j;
		if (ForestScanFeature(gr, it, j, &best))
			visited++;
	}
	return best;
}

/* split node it at the best split; push its children, left on top */
static int
ForestSplitNode(ForestGrower *gr, Tree *t, const StackItem *it,
				const ForestSplit *best, StackItem *stack, int *sp)
{
	int			mid = TreePartition(gr->idx, it->lo, it->hi,
									gr->sh->bins + (size_t) best->feature * gr->sh->n,
									best->bin);
	int			l = TreeNewNode(t),
				r = TreeNewNode(t);

	if (l < 0 || r < 0)
		return -1;
	t->nodes[it->node].feature = best->feature;
	t->nodes[it->node].bin = best->bin;
	t->nodes[it->node].left = l;
	t->nodes[it->node].right = r;
	stack[(*sp)++] = (StackItem) {r, mid, it->hi, it->depth + 1};
	stack[(*sp)++] = (StackItem) {l, it->lo, mid, it->depth + 1};
	return 0;
}

static void
ForestGrowerFree(ForestGrower *gr)
{
	free(gr->idx);
	free(gr->perm);
	free(gr->hc);
	free(gr->hs);
	free(gr->tot);
	free(gr->left);
}

/* one classification or regression tree of the forest: 0, 1 oom, 2 cancelled */
static int
GrowForestTree(ForestShared *sh, int tree_no)
{
	int			n = sh->n,
				width = sh->k > 0 ? sh->k : 1;
	Tree	   *t = &sh->trees[tree_no];
	ForestGrower gr;
	StackItem  *stack = malloc(sizeof(StackItem) * (n + 2));
	int			sp = 0,
				rc = 1;

	memset(&gr, 0, sizeof(gr));
	gr.sh = sh;
	gr.rng = sh->ctx->seed ^ (UINT64_C(0x7266) + (uint64_t) (tree_no + 1) * UINT64_C(0xd1342543de82ef95));
	gr.idx = malloc(sizeof(int) * n);
	gr.perm = malloc(sizeof(int) * sh->d);
	gr.hc = calloc((size_t) 2 * TREE_MAX_BINS * width, sizeof(int32_t));
	gr.hs = calloc((size_t) 2 * TREE_MAX_BINS, sizeof(double));
	gr.tot = calloc(width, sizeof(double));
	gr.left = calloc(width, sizeof(double));
	if (!gr.idx || !gr.perm || !stack || !gr.hc || !gr.hs || !gr.tot || !gr.left)
		goto done;
	for (int i = 0; i < n; i++)
		gr.idx[i] = sh->bootstrap ? (int) TrRandBelow(&gr.rng, n) : i;
	for (int j = 0; j < sh->d; j++)
		gr.perm[j] = j;
	if (TreeNewNode(t) < 0)
		goto done;
	stack[sp++] = (StackItem) {0, 0, n, 0};
	while (sp > 0)
	{
		StackItem	it = stack[--sp];
		double		parent;
		ForestSplit best = {-1, 0, -HUGE_VAL};

		if (TrCancelled(sh->ctx))
		{
			rc = 2;
			goto done;
		}
		if (!ForestNodeTotals(&gr, &it, &parent))
			best = ForestBestSplit(&gr, &it);
		if (best.feature < 0 || best.score < parent - 1e-9 * fabs(parent))
		{
			float	   *v = TreeMakeLeaf(t, it.node, width);

			if (v == NULL)
				goto done;
			for (int c = 0; c < width; c++)
				v[c] = (float) (gr.tot[c] / (it.hi - it.lo));
			continue;
		}
		if (ForestSplitNode(&gr, t, &it, &best, stack, &sp) != 0)
			goto done;
	}
	rc = 0;
done:
	ForestGrowerFree(&gr);
	free(stack);
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

/* The forest's parameters (scikit-learn's defaults and max_features rules). */
static void
ForestParams(const TrContext *ctx, ForestShared *sh)
{
	const TrData *data = ctx->data;
	int			classify = data->kind == TR_KIND_CLASSIFICATION;
	int			d = data->d;
	double		mf = TrParamDouble(ctx->params, "max_features", 0.0);

	sh->ctx = ctx;
	sh->n = data->n_train;
	sh->d = d;
	sh->k = classify ? data->n_classes : 0;
	sh->y = data->ytr;
	sh->t = data->ttr;
	sh->ntrees = TrParamInt(ctx->params, "n_trees", 100);
	sh->max_depth = TrParamInt(ctx->params, "max_depth", 0);
	sh->min_split = TrParamInt(ctx->params, "min_samples_split", 2);
	sh->min_leaf = TrParamInt(ctx->params, "min_samples_leaf", 1);
	sh->bootstrap = TrParamInt(ctx->params, "bootstrap", 1);
	if (mf <= 0.0)
		sh->mtry = classify ? (int) floor(sqrt((double) d)) : d;	/* sklearn */
	else if (mf <= 1.0)
		sh->mtry = (int) floor(mf * d);
	else
		sh->mtry = (int) mf;
	sh->mtry = sh->mtry < 1 ? 1 : (sh->mtry > d ? d : sh->mtry);
}

/*
 * The validation score of the grown forest: the trees' leaf values
 * averaged in tree order (acc: nv x width).  Returns the forest's nodes.
 */
static long
ForestScore(const ForestShared *sh, const TrData *data, const uint8_t *bva,
			double *acc, int *pred, double *tpred, TrResult *res)
{
	int			classify = data->kind == TR_KIND_CLASSIFICATION;
	int			nv = data->n_val,
				k = sh->k,
				width = classify ? k : 1;
	long		nodes = 0;

	for (int tr = 0; tr < sh->ntrees; tr++)
	{
		nodes += sh->trees[tr].nn;
		for (int i = 0; i < nv; i++)
		{
			const float *v = TreeLeaf(&sh->trees[tr], bva, nv, i);

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
			tpred[i] = acc[i] / sh->ntrees;
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	return nodes;
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
	ForestParams(ctx, &sh);
	sh.trees = calloc(sh.ntrees, sizeof(Tree));
	if (!acc || !pred || !tpred || !sh.trees ||
		TreePrepareBins(data, max_bins, &bins, &btr, &bva) != 0)
	{
		TrSetError(res, "out of memory for random_forest (%d x %d)", n, d);
		goto done;
	}
	sh.bins = btr;
	sh.nbins = bins.nbins;
	pthread_mutex_init(&sh.lock, NULL);
	TreeRunThreads(ForestWorker, &sh, ctx->threads < sh.ntrees ? ctx->threads : sh.ntrees);
	pthread_mutex_destroy(&sh.lock);
	if (ctx->threads > 1 && !sh.failed)
		TrReportProgress(ctx, sh.ntrees, NAN);	/* workers do not report */
	if (sh.failed)
	{
		TrSetError(res, sh.failed == 2 ? "cancelled" :
				   "out of memory growing random_forest trees");
		goto done;
	}

	nodes = ForestScore(&sh, data, bva, acc, pred, tpred, res);
	res->epochs = sh.ntrees;
	res->extra = json_object_new_object();
	if (res->extra != NULL)
	{
		json_object_object_add(res->extra, "n_nodes", json_object_new_int64(nodes));
		json_object_object_add(res->extra, "max_features", json_object_new_int(sh.mtry));
	}
	TreeReportBins(&bins, res);

	{
		TrArtifact art;

		TrArtifactBegin(&art, "random_forest", data);
		TreeAddToArtifact(&art, sh.trees, sh.ntrees, &bins);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;

done:
	if (sh.trees != NULL)
		for (int tr = 0; tr < sh.ntrees; tr++)
			TreeFree(&sh.trees[tr]);
	free(sh.trees);
	TreeBinsFree(&bins);
	free(btr);
	free(bva);
	free(acc);
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

const TrFamily TrFamilyRandomForest = {
	.name = "random_forest",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = ForestFit,
	.params = forest_params,
	.summary = "random forest on histogram bins (Gini / squared error)",
};
