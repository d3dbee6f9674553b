/*-------------------------------------------------------------------------
 *
 * tr_gbt.c
 *	  Family "gbt" (gradient-boosted trees), for classification and
 *	  regression, on the histogram bins of tr_tree.c.
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
 * A histogram bin is four floats (gradient, Hessian, row count, padding),
 * added with one vector instruction, and a feature has only as many bins
 * as its thresholds allow (off[]): on Fashion-MNIST a histogram is about
 * half the 4.8 MB that 256 bins of three 8-byte sums took, so twice as
 * many fit in the same memory.  Bins sum in float, as XGBoost's and
 * LightGBM's GPU histograms do; the counts are exact up to 2^24 rows a
 * bin, and the split search adds the bins up in double.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_gbt.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "tr_tree.h"

/* histogram memory up to which every open leaf keeps its histogram */
#define GBT_HIST_BUDGET ((size_t) 16 << 20)

/* gradient, Hessian, row count, 0: one bin, added as one vector */
typedef float HistBin __attribute__((vector_size(16)));

/*
 * copies of a feature's histogram that a node fills in turn, when it has
 * enough rows to pay for clearing and adding them up
 */
#define GBT_LANES 4
#define GBT_LANE_ROWS(nb) (8 * (nb))

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
	HistBin    *hist;			/* nbin_total bins */
	GbtSplit	split;
} GbtLeaf;

typedef struct GbtBuilder
{
	const uint8_t *bins;
	const int  *nbins;
	size_t	   *off;			/* d: feature j's first bin in a histogram */
	size_t		nbin_total;
	int			n;
	int			d;
	int			max_leaves;
	int			max_depth;
	int			min_leaf;
	double		l2;
	double		lr;
	double	   *g;				/* n: the gradients of the tree being grown */
	double	   *h;				/* n: and the Hessians */
	int		   *idx;
	GbtLeaf    *leaves;
	HistBin   **pool;			/* free histograms */
	int			npool;
	int			nhist;			/* histograms allocated */
	int			max_hist;		/* at most this many (GBT_HIST_BUDGET) */
	int			nleaves;		/* leaves[0 .. nleaves) are open */
	HistBin    *gh;				/* n: {g, h, 1, 0} of a node's rows, gathered */
	HistBin    *lanes;			/* GBT_LANES x TREE_MAX_BINS partial histograms */
	int		   *right;			/* n: the right-hand rows of a partition */
} GbtBuilder;

/*
 * Histograms of all features over rows idx[lo..hi).  The node's gradients
 * are first gathered into one contiguous array so that the per-feature
 * loops read them sequentially.  Runs of rows in the same bin (the
 * background pixels of an image) would chain every update on the previous
 * store to that bin, so a large node fills GBT_LANES copies of the
 * feature's histogram in turn and adds them up at the end.
 */
static void
BuildHist(GbtBuilder *b, const int *idx, int lo, int hi, HistBin *hist)
{
	int			n = b->n,
				m = hi - lo;
	HistBin    *gh = b->gh,
			   *ln = b->lanes;
	const int  *ix = idx + lo;

	for (int i = 0; i < m; i++)
	{
		int			r = ix[i];

		gh[i] = (HistBin) {(float) b->g[r], (float) b->h[r], 1.0f, 0.0f};
	}
	for (int j = 0; j < b->d; j++)
	{
		HistBin    *hj = hist + b->off[j];
		const uint8_t *col = b->bins + (size_t) j * n;
		int			nb = b->nbins[j],
					i = 0;

		memset(hj, 0, sizeof(HistBin) * nb);
		if (m >= GBT_LANE_ROWS(nb))
		{
			HistBin    *l0 = ln,
					   *l1 = ln + TREE_MAX_BINS,
					   *l2 = ln + 2 * TREE_MAX_BINS,
					   *l3 = ln + 3 * TREE_MAX_BINS;

			for (int q = 0; q < GBT_LANES; q++)
				memset(ln + q * TREE_MAX_BINS, 0, sizeof(HistBin) * nb);
			for (; i + 3 < m; i += 4)
			{
				l0[col[ix[i]]] += gh[i];
				l1[col[ix[i + 1]]] += gh[i + 1];
				l2[col[ix[i + 2]]] += gh[i + 2];
				l3[col[ix[i + 3]]] += gh[i + 3];
			}
			for (int q = 0; q < nb; q++)
				hj[q] = (l0[q] + l1[q]) + (l2[q] + l3[q]);
		}
		for (; i < m; i++)
			hj[col[ix[i]]] += gh[i];
	}
}

/*
 * Rows idx[lo..hi) whose bin of the split's feature is <= bin first, the
 * others after, each side in its former order; returns where the right
 * side starts.  Every row is written to both sides and only the side it
 * belongs to moves on, so the loop has no branch to mispredict (a split
 * sends rows either way at random, as far as the CPU can tell), and rows
 * stay in increasing order, so that the histograms of the children read
 * their bins and gradients front to back.
 */
static int
GbtPartition(GbtBuilder *b, int lo, int hi, const uint8_t *col, int bin)
{
	int		   *idx = b->idx,
			   *right = b->right;
	int			nl = lo,
				nr = 0;

	for (int i = lo; i < hi; i++)
	{
		int			r = idx[i],
					left = col[r] <= bin;

		idx[nl] = r;			/* nl <= i: a position already read */
		right[nr] = r;
		nl += left;
		nr += !left;
	}
	memcpy(idx + nl, right, sizeof(int) * nr);
	return nl;
}

/* best split of a leaf from its histogram */
static void
FindSplit(GbtBuilder *b, GbtLeaf *lf)
{
	double		parent = lf->G * lf->G / (lf->H + b->l2);
	double		bar;			/* parent + the best gain so far + 1e-12 */
	int			m = lf->hi - lf->lo;

	lf->split.gain = 0.0;
	lf->split.feature = -1;
	if (m < 2 * b->min_leaf || (b->max_depth > 0 && lf->depth >= b->max_depth))
		return;
	bar = parent + 1e-12;
	for (int j = 0; j < b->d; j++)
	{
		const HistBin *hj = lf->hist + b->off[j];
		double		gl = 0.0,
					hl = 0.0;
		int64_t		nl = 0;

		for (int bin = 0; bin < b->nbins[j] - 1; bin++)
		{
			double		gr,
						hr,
						dl,
						dr;

			/* an empty bin moves no row: its split is the previous one */
			if (hj[bin][2] == 0.0f)
				continue;
			gl += hj[bin][0];
			hl += hj[bin][1];
			nl += (int64_t) hj[bin][2];
			if (nl < b->min_leaf)
				continue;
			if (m - nl < b->min_leaf)
				break;
			gr = lf->G - gl;
			hr = lf->H - hl;
			if (hl < 1e-3 || hr < 1e-3)		/* sklearn's min_hessian_to_split */
				continue;

			/*
			 * gain = gl^2 / dl + gr^2 / dr - parent beats the best when
			 * gl^2 dr + gr^2 dl > (parent + best) dl dr: no division for
			 * the candidates that lose, which are nearly all of them
			 */
			dl = hl + b->l2;
			dr = hr + b->l2;
			if (gl * gl * dr + gr * gr * dl > bar * dl * dr)
			{
				double		gain = gl * gl / dl + gr * gr / dr - parent;

				if (gain > lf->split.gain + 1e-12)
				{
					lf->split.gain = gain;
					lf->split.feature = j;
					lf->split.bin = bin;
					bar = parent + gain + 1e-12;
				}
			}
		}
	}
}

/*
 * A histogram buffer: a free one, a new one while fewer than max_hist
 * exist, else the one of the open leaf with the lowest split gain, the
 * leaf least likely to be split next.  Such a leaf, if it is split after
 * all, has both children histogrammed from its rows (GrowBoostTree).
 * Each histogram is up to d x 256 bins of 16 bytes (2-3 MB at 784
 * features), so one per leaf would be 60-100 MB at 31 leaves, half the
 * data.
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
		h = aligned_alloc(sizeof(HistBin), sizeof(HistBin) * b->nbin_total);
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

/* The root leaf: every row, its gradient sums, histogram and best split. */
static int
GbtRootLeaf(GbtBuilder *b, Tree *t)
{
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
	return 0;
}

/*
 * The children's histograms: the smaller child is histogrammed, the
 * larger one subtracted from the parent, or histogrammed too when the
 * parent's was taken.
 */
static int
GbtChildHists(GbtBuilder *b, GbtLeaf *lf, GbtLeaf *cl, GbtLeaf *cr)
{
	GbtLeaf    *sm = (cl->hi - cl->lo) <= (cr->hi - cr->lo) ? cl : cr;
	GbtLeaf    *lg = sm == cl ? cr : cl;

	lg->hist = lf->hist;		/* reuse the parent's buffer */
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
		for (size_t o = 0; o < b->nbin_total; o++)
			lg->hist[o] -= sm->hist[o];
	return 0;
}

/* Split leaf `best` at its best split: it becomes the left child. */
static int
GbtSplitLeaf(GbtBuilder *b, Tree *t, int best)
{
	GbtLeaf    *lf = &b->leaves[best];
	GbtLeaf		cl,
				cr;
	int			mid;

	mid = GbtPartition(b, lf->lo, lf->hi,
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
	if (GbtChildHists(b, lf, &cl, &cr) < 0)
		return -1;
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
	b->leaves[b->nleaves++] = cr;
	return 0;
}

/*
 * Grow one tree on gradients g and Hessians h (best-first); adds the leaf
 * values (already times lr) to F[i] for every training row.
 */
static int
GrowBoostTree(GbtBuilder *b, Tree *t, double *F)
{
	if (GbtRootLeaf(b, t) < 0)
		return -1;
	while (b->nleaves < b->max_leaves)
	{
		int			best = -1;

		for (int q = 0; q < b->nleaves; q++)
			if (b->leaves[q].split.feature >= 0 &&
				(best < 0 || b->leaves[q].split.gain > b->leaves[best].split.gain))
				best = q;
		if (best < 0)
			break;
		if (GbtSplitLeaf(b, t, best) < 0)
			return -1;
	}

	/* leaf values; apply them to the training rows */
	for (int q = 0; q < b->nleaves; q++)
	{
		GbtLeaf    *lf = &b->leaves[q];
		float	   *v = TreeMakeLeaf(t, lf->node, 1);
		double		val = -b->lr * lf->G / (lf->H + b->l2);

		if (v == NULL)
			return -1;
		v[0] = (float) val;
		for (int i = lf->lo; i < lf->hi; i++)
			F[b->idx[i]] += v[0];
		GiveHist(b, lf->hist);
		lf->hist = NULL;
	}
	return 0;
}

/* what a fit produces besides the builder's working memory */
typedef struct GbtModel
{
	int			classify;
	int			k;				/* classes; 0 for regression */
	int			kk;				/* trees per round: 1 for two classes */
	double	   *init;			/* kk initial raw scores */
	Tree	   *trees;			/* tree t adds to output t % kk */
	int			ntrees;
} GbtModel;

/*
 * The builder's parameters and working memory, and the training rows'
 * bins (*btr).  Histograms are kept for at most GBT_HIST_BUDGET bytes or
 * an eighth of the data, whichever is more.
 */
static int
GbtBuilderInit(GbtBuilder *b, const TrContext *ctx, Bins *bins, uint8_t **btr,
			   TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				d = data->d;
	size_t		histbytes = sizeof(HistBin) * (size_t) d * TREE_MAX_BINS * 3;
	size_t		one,
				budget;

	b->n = n;
	b->d = d;
	b->max_leaves = TrParamInt(ctx->params, "max_leaves", 31);
	b->max_depth = TrParamInt(ctx->params, "max_depth", 0);
	b->min_leaf = TrParamInt(ctx->params, "min_samples_leaf", 20);
	b->l2 = TrParamDouble(ctx->params, "l2", 0.0);
	b->lr = TrParamDouble(ctx->params, "lr", 0.1);
	if (histbytes > ((size_t) 1 << 30))
	{
		TrSetError(res, "gbt: histograms would need %zu MB (3 x features x 256 bins x 16 bytes)",
				   histbytes >> 20);
		return -1;
	}
	b->idx = malloc(sizeof(int) * n);
	b->leaves = calloc(b->max_leaves + 1, sizeof(GbtLeaf));
	b->pool = calloc(b->max_leaves + 2, sizeof(HistBin *));
	b->gh = aligned_alloc(sizeof(HistBin), sizeof(HistBin) * (size_t) (n > 0 ? n : 1));
	b->lanes = aligned_alloc(sizeof(HistBin), sizeof(HistBin) * GBT_LANES * TREE_MAX_BINS);
	b->off = malloc(sizeof(size_t) * (d > 0 ? d : 1));
	b->right = malloc(sizeof(int) * (n > 0 ? n : 1));
	b->g = malloc(sizeof(double) * n);
	b->h = malloc(sizeof(double) * n);
	if (!b->idx || !b->leaves || !b->pool || !b->gh || !b->lanes || !b->off ||
		!b->right || !b->g || !b->h ||
		TreePrepareBins(data, TrParamInt(ctx->params, "max_bins", 255), bins, btr, NULL) != 0)
	{
		TrSetError(res, "out of memory for gbt (%d x %d)", n, d);
		return -1;
	}
	for (int j = 0; j < d; j++)
	{
		b->off[j] = b->nbin_total;
		b->nbin_total += bins->nbins[j];
	}
	one = sizeof(HistBin) * (b->nbin_total > 0 ? b->nbin_total : 1);
	budget = (size_t) n * d * sizeof(float) / 8;
	if (budget < GBT_HIST_BUDGET)
		budget = GBT_HIST_BUDGET;
	b->max_hist = (int) (budget / one);
	if (b->max_hist < 3)
		b->max_hist = 3;
	if (b->max_hist > b->max_leaves + 1)
		b->max_hist = b->max_leaves + 1;
	b->bins = *btr;
	b->nbins = bins->nbins;
	return 0;
}

/* the builder's histograms, so that validation can use their memory */
static void
GbtBuilderFreeHists(GbtBuilder *b)
{
	if (b->pool != NULL)
		for (int i = 0; i < b->npool; i++)
			free(b->pool[i]);
	b->npool = 0;
	if (b->leaves != NULL)
		for (int i = 0; i <= b->max_leaves; i++)
		{
			free(b->leaves[i].hist);
			b->leaves[i].hist = NULL;
		}
}

static void
GbtBuilderFree(GbtBuilder *b)
{
	GbtBuilderFreeHists(b);
	free(b->pool);
	free(b->leaves);
	free(b->idx);
	free(b->gh);
	free(b->lanes);
	free(b->off);
	free(b->right);
	free(b->g);
	free(b->h);
}

/* initial raw scores: mean target, log-odds, or log class priors */
static int
GbtInitScores(const TrData *data, const GbtModel *m)
{
	int			n = data->n_train;
	double	   *cnt;

	if (!m->classify)
	{
		for (int i = 0; i < n; i++)
			m->init[0] += data->ttr[i];
		m->init[0] /= n;
		return 0;
	}
	if ((cnt = calloc(m->k, sizeof(double))) == NULL)
		return -1;
	for (int i = 0; i < n; i++)
		cnt[data->ytr[i]] += 1.0;
	if (m->k == 2)
	{
		double		p = fmin(fmax(cnt[1] / n, 1e-12), 1 - 1e-12);

		m->init[0] = log(p / (1 - p));
	}
	else
		for (int c = 0; c < m->k; c++)
			m->init[c] = log(fmax(cnt[c] / n, 1e-12));
	free(cnt);
	return 0;
}

/*
 * Gradients g and Hessians h (class-major, like F) of the loss at the raw
 * scores F, and the mean loss.  work holds 2 * kk doubles.
 */
static double
GbtGradients(const TrData *data, const GbtModel *m, const double *F,
			 double *g, double *h, double *work)
{
	int			n = data->n_train,
				kk = m->kk;
	double	   *f = work,
			   *e = work + kk;
	double		loss = 0.0;

	for (int i = 0; i < n; i++)
	{
		for (int c = 0; c < kk; c++)
			f[c] = F[(size_t) c * n + i];
		if (!m->classify)
		{
			double		r = f[0] - data->ttr[i];

			g[i] = r;
			h[i] = 1.0;
			loss += 0.5 * r * r;
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
			{
				e[c] = exp(f[c] - mx);
				sum += e[c];
			}
			for (int c = 0; c < kk; c++)
			{
				double		p = e[c] / sum;

				g[(size_t) c * n + i] = p - (data->ytr[i] == c ? 1.0 : 0.0);
				h[(size_t) c * n + i] = fmax(p * (1.0 - p), 1e-16);
			}
			loss += mx + log(sum) - f[data->ytr[i]];
		}
	}
	return loss / n;
}

/*
 * The boosting rounds: each fits kk trees to the gradients at F and adds
 * them to F.  Returns the last round's training loss, NAN after an error.
 */
static double
GbtBoost(const TrContext *ctx, GbtBuilder *b, GbtModel *m, TrResult *res)
{
	int			n = b->n,
				kk = m->kk,
				rounds = TrParamInt(ctx->params, "n_rounds", 100);
	double	   *F = malloc(sizeof(double) * (size_t) n * kk);
	double	   *g = malloc(sizeof(double) * (size_t) n * kk);
	double	   *h = malloc(sizeof(double) * (size_t) n * kk);
	double	   *work = malloc(sizeof(double) * 2 * kk);
	double		loss = NAN;

	if (!F || !g || !h || !work)
	{
		TrSetError(res, "out of memory for gbt (%d x %d)", n, b->d);
		goto done;
	}
	/* class-major: a tree of class c adds to F[c * n .. c * n + n) */
	for (int c = 0; c < kk; c++)
		for (int i = 0; i < n; i++)
			F[(size_t) c * n + i] = m->init[c];
	for (int r = 0; r < rounds; r++)
	{
		if (TrCancelled(ctx))
		{
			TrSetError(res, "cancelled");
			loss = NAN;
			goto done;
		}
		loss = GbtGradients(ctx->data, m, F, g, h, work);
		if (!isfinite(loss))
		{
			TrSetError(res, "gbt diverged (loss not finite at round %d); lower lr", r + 1);
			loss = NAN;
			goto done;
		}
		for (int c = 0; c < kk; c++)
		{
			memcpy(b->g, g + (size_t) c * n, sizeof(double) * n);
			memcpy(b->h, h + (size_t) c * n, sizeof(double) * n);
			if (GrowBoostTree(b, &m->trees[m->ntrees++], F + (size_t) c * n) != 0)
			{
				TrSetError(res, "out of memory growing gbt trees");
				loss = NAN;
				goto done;
			}
		}
		TrReportProgress(ctx, r + 1, loss);
		res->epochs = r + 1;
	}
done:
	free(F);
	free(g);
	free(h);
	free(work);
	return loss;
}

/* score on the validation rows: init + the sum of the tree outputs */
static int
GbtValidate(const TrData *data, const GbtModel *m, const Bins *bins,
			TrResult *res)
{
	int			nv = data->n_val,
				kk = m->kk,
				rc = -1;
	size_t		nv1 = nv > 0 ? nv : 1;
	uint8_t    *bva = malloc(nv1 * data->d);
	double	   *Fv = malloc(sizeof(double) * nv1 * kk);
	double	   *tpred = malloc(sizeof(double) * nv1);
	int		   *pred = malloc(sizeof(int) * nv1);

	if (!bva || !Fv || !tpred || !pred)
	{
		TrSetError(res, "out of memory for gbt (%d x %d)", nv, data->d);
		goto done;
	}
	TreeBinsApply(bins, data->Xva, nv, bva);
	for (int i = 0; i < nv; i++)
		memcpy(Fv + (size_t) i * kk, m->init, sizeof(double) * kk);
	for (int tr = 0; tr < m->ntrees; tr++)
		for (int i = 0; i < nv; i++)
			Fv[(size_t) i * kk + tr % kk] += TreeLeaf(&m->trees[tr], bva, nv, i)[0];
	if (!m->classify)
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
	rc = 0;
done:
	free(bva);
	free(Fv);
	free(tpred);
	free(pred);
	return rc;
}

static int
GbtFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	GbtBuilder	b;
	GbtModel	m;
	Bins		bins;
	uint8_t    *btr = NULL;
	int			rounds = TrParamInt(ctx->params, "n_rounds", 100);
	int			rc = -1;

	memset(&b, 0, sizeof(b));
	memset(&m, 0, sizeof(m));
	memset(&bins, 0, sizeof(bins));
	m.classify = data->kind == TR_KIND_CLASSIFICATION;
	m.k = m.classify ? data->n_classes : 0;
	m.kk = m.classify ? (m.k == 2 ? 1 : m.k) : 1;
	m.init = calloc(m.kk, sizeof(double));
	m.trees = calloc((size_t) rounds * m.kk, sizeof(Tree));
	if (!m.init || !m.trees || GbtInitScores(data, &m) != 0)
	{
		TrSetError(res, "out of memory for gbt");
		goto done;
	}
	if (GbtBuilderInit(&b, ctx, &bins, &btr, res) != 0)
		goto done;
	res->train_loss = GbtBoost(ctx, &b, &m, res);
	if (isnan(res->train_loss))
		goto done;
	/* validation rows are binned now that the histograms are gone */
	GbtBuilderFreeHists(&b);
	free(btr);
	btr = NULL;
	if (GbtValidate(data, &m, &bins, res) != 0)
		goto done;
	TreeReportBins(&bins, res);
	{
		TrArtifact art;
		int64_t		dims[1] = {m.kk};

		TrArtifactBegin(&art, "gbt", data);
		TrArtifactAdd(&art, "init", TR_DT_F64, 1, dims, m.init);
		/* tree t adds to output t % n_outputs */
		TreeAddToArtifact(&art, m.trees, m.ntrees, &bins);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;
done:
	if (m.trees != NULL)
		for (int tr = 0; tr < m.ntrees; tr++)
			TreeFree(&m.trees[tr]);
	free(m.trees);
	free(m.init);
	GbtBuilderFree(&b);
	TreeBinsFree(&bins);
	free(btr);
	return rc;
}

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

const TrFamily TrFamilyGbt = {
	.name = "gbt",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = GbtFit,
	.params = gbt_params,
	.summary = "gradient-boosted trees, histogram splits, best-first leaves",
};
