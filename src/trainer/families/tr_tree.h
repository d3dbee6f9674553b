/*-------------------------------------------------------------------------
 *
 * tr_tree.h
 *	  What the tree families share (tr_tree.c): histogram bins, trees and
 *	  their walk, the worker threads, and the artifact's tree section.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_tree.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_TREE_H
#define EASEML_TR_TREE_H

#include <stdint.h>

#include "trainer/trainer.h"

#define TREE_MAX_BINS 256

/* Per-feature thresholds: a value's bin is the count of thresholds < it. */
typedef struct Bins
{
	int			d;
	int		   *nbins;			/* per feature: thresholds + 1 */
	float	   *thr;			/* d x (TREE_MAX_BINS - 1) thresholds */
} Bins;

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

extern int	TreePrepareBins(const TrData *data, int max_bins, Bins *bins,
							uint8_t **btr, uint8_t **bva);
extern void TreeBinsApply(const Bins *b, const float *X, int n, uint8_t *out);
extern void TreeBinsFree(Bins *b);
extern void TreeReportBins(const Bins *b, TrResult *res);
extern void TreeFree(Tree *t);
extern int	TreeNewNode(Tree *t);
extern float *TreeMakeLeaf(Tree *t, int node, int width);
extern void TreeRunThreads(void *(*worker) (void *), void *arg, int nthreads);
extern void TreeAddToArtifact(TrArtifact *art, const Tree *trees, int ntrees,
							  const Bins *bins);

/* leaf values reached by row i of column-major bins (n rows) */
static inline const float *
TreeLeaf(const Tree *t, const uint8_t *bins, int n, int i)
{
	const TreeNode *nd = t->nodes;

	while (nd->feature >= 0)
		nd = t->nodes + (bins[(size_t) nd->feature * n + i] <= nd->bin ?
						 nd->left : nd->right);
	return t->values + nd->left;
}

/* in-place partition of idx[lo..hi) by bin <= b; returns the split point */
static inline int
TreePartition(int *idx, int lo, int hi, const uint8_t *col, int b)
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
static inline int
TreeMaskBins(const uint64_t *mask, int *out)
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

#endif							/* EASEML_TR_TREE_H */
