/*-------------------------------------------------------------------------
 *
 * tr_predict_tree.c
 *	  Predictor of the tree ensembles, random_forest and gbt
 *	  (tr_predict.h; the trees' layout is in docs/models.md §4).
 *
 * A row goes left at a node when its feature is <= the node's threshold.
 * A walk is a chain of dependent loads, so a row walks LANES trees side by
 * side, one level at a time, without branches (leaves loop to themselves
 * until the deepest of the group is reached): the loads' latencies
 * overlap, about twice as fast as one tree after another.
 * The loader checks every node before a walk can run: a split's feature
 * is a real feature and its children come after it within its own tree,
 * so every walk moves forward and ends; a leaf's values lie inside
 * leaf_values.  A random forest averages its trees' leaves (class
 * probabilities, or values); gbt adds tree t to output t mod k' on top of
 * "init" and applies the logistic or softmax link.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_predict_tree.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tr_predict.h"

#define LANES 16				/* trees walked side by side */

/*
 * One node in 12 bytes, its children side by side (PackNodes lays each
 * tree out so): the walk's next node is child + !(x <= threshold), without
 * a branch.  A leaf loops to itself (feature 0, threshold +inf, child
 * itself), so a walk can take a fixed number of steps; a NaN feature is
 * read as +inf, which goes right at a split, as NaN does, and stays at a
 * leaf.
 */
typedef struct Node
{
	int32_t		feature;
	float		threshold;
	int32_t		child;			/* the left child; the right one follows */
} Node;

typedef struct Trees
{
	int			boosted;		/* gbt */
	int			ntrees;
	int			width;			/* values per leaf */
	int			k;				/* gbt outputs */
	int32_t    *roots;
	int32_t    *feature;		/* the artifact's arrays, freed once packed */
	float	   *threshold;
	int32_t    *left;
	int32_t    *right;
	Node	   *nodes;
	int32_t    *leaf;			/* per node: a leaf's offset in values */
	int		   *steps;			/* per group of LANES trees: its depth */
	float	   *values;
	double	   *init;			/* gbt: k */
} Trees;

static void
TreesFree(void *p)
{
	Trees	   *t = p;

	free(t->roots);
	free(t->feature);
	free(t->threshold);
	free(t->left);
	free(t->right);
	free(t->nodes);
	free(t->leaf);
	free(t->steps);
	free(t->values);
	free(t->init);
	free(t);
}

/*
 * The leaves row x reaches in trees t0 .. t0 + n - 1 (n <= LANES), into
 * q.  The trees are walked side by side, one level at a time: the walks'
 * memory loads are independent, so their latencies overlap instead of
 * adding up (a walk is a chain of dependent loads).
 */
static inline void
WalkGroup(const Trees *tr, int t0, int n, const float *x, int32_t *q)
{
	const Node *nodes = tr->nodes;

	for (int l = 0; l < n; l++)
		q[l] = tr->roots[t0 + l];
	for (int s = tr->steps[t0 / LANES]; s > 0; s--)
		for (int l = 0; l < n; l++)
		{
			const Node *nd = &nodes[q[l]];

			q[l] = nd->child + !(x[nd->feature] <= nd->threshold);
		}
}

static void
ForestRow(const TrModel *m, const Trees *tr, const float *x, double *out)
{
	double		sum = 0.0;
	int32_t		q[LANES];

	memset(out, 0, sizeof(double) * tr->width);
	for (int t0 = 0; t0 < tr->ntrees; t0 += LANES)
	{
		int			n = tr->ntrees - t0 < LANES ? tr->ntrees - t0 : LANES;

		WalkGroup(tr, t0, n, x, q);
		for (int l = 0; l < n; l++)
		{
			const float *v = tr->values + tr->leaf[q[l]];

			for (int c = 0; c < tr->width; c++)
				out[c] += v[c];
		}
	}
	if (m->kind == 1)
	{
		out[0] /= tr->ntrees;
		return;
	}
	for (int c = 0; c < tr->width; c++)
		sum += out[c];
	for (int c = 0; c < tr->width && sum > 0.0; c++)
		out[c] /= sum;
}

static void
BoostRow(const TrModel *m, const Trees *tr, const float *x, double *z, double *out)
{
	int32_t		q[LANES];
	int			c = 0;

	memcpy(z, tr->init, sizeof(double) * tr->k);
	for (int t0 = 0; t0 < tr->ntrees; t0 += LANES)
	{
		int			n = tr->ntrees - t0 < LANES ? tr->ntrees - t0 : LANES;

		WalkGroup(tr, t0, n, x, q);
		/* tree t adds to output t mod k, in tree order */
		for (int l = 0; l < n; l++)
		{
			z[c] += tr->values[tr->leaf[q[l]]];
			c = c + 1 == tr->k ? 0 : c + 1;
		}
	}
	if (m->kind == 1)
		out[0] = z[0];
	else
		TrProbaFromScores(z, tr->k, m->n_classes, out);
}

static int
TreesPredict(const TrModel *m, const float *X, int n, double *out)
{
	const Trees *tr = m->state;
	double	   *z = malloc(sizeof(double) * (tr->k > 0 ? tr->k : 1));
	float	   *xs = malloc(sizeof(float) * ((size_t) m->d + 1));

	if (z == NULL || xs == NULL)
	{
		free(z);
		free(xs);
		return TR_ART_NO_MEMORY;
	}
	for (int i = 0; i < n; i++)
	{
		const float *x = X + (size_t) i * m->d;

		for (int j = 0; j < m->d; j++)
			xs[j] = isnan(x[j]) ? INFINITY : x[j];
		x = xs;

		if (tr->boosted)
			BoostRow(m, tr, x, z, out + (size_t) i * m->n_out);
		else
			ForestRow(m, tr, x, out + (size_t) i * m->n_out);
	}
	free(z);
	free(xs);
	return TR_ART_OK;
}

/* every node of tree t (nodes [lo, hi)) checked; 0 or TR_ART_BAD */
static int
CheckTree(const TrLoad *ld, const TrModel *m, const Trees *tr, int t, int lo, int hi,
		  int64_t nvalues)
{
	if (lo >= hi)
		return TrLoadFail(ld, TR_ART_BAD, "tree %d has no nodes", t + 1);
	for (int q = lo; q < hi; q++)
	{
		int			f = tr->feature[q];

		if (f >= m->d || f < -1)
			return TrLoadFail(ld, TR_ART_BAD, "node %d splits on feature %d of %d", q, f, m->d);
		if (f >= 0 && (tr->left[q] <= q || tr->left[q] >= hi ||
					   tr->right[q] <= q || tr->right[q] >= hi))
			return TrLoadFail(ld, TR_ART_BAD, "node %d of tree %d has children outside the tree", q, t + 1);
		if (f < 0 && (tr->left[q] < 0 || (int64_t) tr->left[q] + tr->width > nvalues))
			return TrLoadFail(ld, TR_ART_BAD, "leaf %d points outside the leaf values", q);
	}
	return TR_ART_OK;
}

/* the node arrays: feature, threshold, left, right, all of N nodes */
static int
LoadNodes(const TrLoad *ld, Trees *tr, int64_t *nnodes, int64_t *nvalues)
{
	int64_t		nd[1] = {-1},
				td[1] = {-1},
				vd[1] = {-1};
	int			rc;

	if ((rc = TrLoadTensor(ld, "tree_roots", TR_DT_I32, 1, td, (void **) &tr->roots)) != 0 ||
		(rc = TrLoadTensor(ld, "node_feature", TR_DT_I32, 1, nd, (void **) &tr->feature)) != 0 ||
		(rc = TrLoadTensor(ld, "node_threshold", TR_DT_F32, 1, nd, (void **) &tr->threshold)) != 0 ||
		(rc = TrLoadTensor(ld, "node_left", TR_DT_I32, 1, nd, (void **) &tr->left)) != 0 ||
		(rc = TrLoadTensor(ld, "node_right", TR_DT_I32, 1, nd, (void **) &tr->right)) != 0 ||
		(rc = TrLoadTensor(ld, "leaf_values", TR_DT_F32, 1, vd, (void **) &tr->values)) != 0)
		return rc;
	if (td[0] < 1 || td[0] > INT32_MAX || nd[0] > INT32_MAX)
		return TrLoadFail(ld, TR_ART_BAD, "an ensemble of %lld trees and %lld nodes",
						  (long long) td[0], (long long) nd[0]);
	tr->ntrees = (int) td[0];
	*nnodes = nd[0];
	*nvalues = vd[0];
	return TR_ART_OK;
}

/*
 * Tree t (nodes [lo, hi) of the artifact) laid out breadth first from
 * tr->nodes[*pos], each split's children side by side; its depth (the
 * steps of a walk) into *depth.  order and depth are scratch of the
 * tree's size, seen (zero on entry) of the artifact's nodes.  The tree was
 * checked: children come after their parent within the tree; a node with
 * two parents, which would be laid out twice, makes it -1, else 0.
 */
static int
LayOut(Trees *tr, int lo, int hi, int *pos, int32_t *order, int *depth, int *maxdepth,
	   unsigned char *seen)
{
	int			head = 0,
				tail = 0,
				base = *pos;

	order[tail] = lo;
	depth[tail++] = 0;
	for (; head < tail; head++)
	{
		int			q = order[head];
		Node	   *nd = &tr->nodes[base + head];

		if (tr->feature[q] < 0)
		{
			nd->feature = 0;
			nd->threshold = INFINITY;
			nd->child = base + head;
			tr->leaf[base + head] = tr->left[q];
			*maxdepth = depth[head] > *maxdepth ? depth[head] : *maxdepth;
			continue;
		}
		if (seen[tr->left[q]] || seen[tr->right[q]] || tr->left[q] == tr->right[q])
			return -1;
		seen[tr->left[q]] = seen[tr->right[q]] = 1;
		nd->feature = tr->feature[q];
		nd->threshold = tr->threshold[q];
		nd->child = base + tail;
		tr->leaf[base + head] = 0;
		order[tail] = tr->left[q];
		depth[tail++] = depth[head] + 1;
		order[tail] = tr->right[q];
		depth[tail++] = depth[head] + 1;
	}
	(void) hi;
	*pos = base + tail;
	return 0;
}

/*
 * The checked node arrays into one array of nodes (LayOut), the trees'
 * new roots, and each group of LANES trees' depth (the steps its walk
 * takes).
 */
static int
PackNodes(const TrLoad *ld, Trees *tr, int64_t nnodes)
{
	int32_t    *order = malloc(sizeof(int32_t) * (size_t) (nnodes + 1));
	int		   *depth = malloc(sizeof(int) * (size_t) (nnodes + 1));
	unsigned char *seen = calloc(nnodes + 1, 1);
	int			rc = TR_ART_OK;
	int			ngroups = (tr->ntrees + LANES - 1) / LANES,
				pos = 0;

	tr->nodes = malloc(sizeof(Node) * (size_t) (nnodes + 1));
	tr->leaf = malloc(sizeof(int32_t) * (size_t) (nnodes + 1));
	tr->steps = calloc(ngroups + 1, sizeof(int));
	if (order == NULL || depth == NULL || seen == NULL || tr->nodes == NULL ||
		tr->leaf == NULL || tr->steps == NULL)
	{
		free(order);
		free(depth);
		free(seen);
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading %lld tree nodes",
						  (long long) nnodes);
	}
	for (int t = 0; t < tr->ntrees; t++)
	{
		int			lo = tr->roots[t],
					hi = t + 1 < tr->ntrees ? tr->roots[t + 1] : (int) nnodes;

		tr->roots[t] = pos;
		if (LayOut(tr, lo, hi, &pos, order, depth, &tr->steps[t / LANES], seen) != 0)
		{
			rc = TrLoadFail(ld, TR_ART_BAD, "a node of tree %d has two parents", t + 1);
			break;
		}
	}
	free(order);
	free(depth);
	free(seen);
	free(tr->feature);
	free(tr->threshold);
	free(tr->left);
	free(tr->right);
	tr->feature = tr->left = tr->right = NULL;
	tr->threshold = NULL;
	return rc;
}

int
TrLoadTrees(const TrLoad *ld, TrModel *m)
{
	Trees	   *tr = calloc(1, sizeof(Trees));
	int64_t		nnodes = 0,
				nvalues = 0;
	int			rc;

	if (tr == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	m->state = tr;
	m->free_state = TreesFree;
	m->predict = TreesPredict;
	tr->boosted = strcmp(m->family, "gbt") == 0;
	tr->width = !tr->boosted && m->kind == 0 ? m->n_classes : 1;
	tr->k = m->kind == 1 || m->n_classes == 2 ? 1 : m->n_classes;
	if ((rc = LoadNodes(ld, tr, &nnodes, &nvalues)) != 0)
		return rc;
	if (tr->boosted)
	{
		int64_t		kd[1] = {tr->k};

		if ((rc = TrLoadTensor(ld, "init", TR_DT_F64, 1, kd, (void **) &tr->init)) != 0)
			return rc;
	}
	for (int t = 0; t < tr->ntrees; t++)
	{
		int			lo = tr->roots[t],
					hi = t + 1 < tr->ntrees ? tr->roots[t + 1] : (int) nnodes;

		if (lo < 0 || hi > nnodes || (t == 0 && lo != 0))
			return TrLoadFail(ld, TR_ART_BAD, "tree %d starts at node %d of %lld", t + 1, lo,
							  (long long) nnodes);
		if ((rc = CheckTree(ld, m, tr, t, lo, hi, nvalues)) != 0)
			return rc;
	}
	return PackNodes(ld, tr, nnodes);
}
