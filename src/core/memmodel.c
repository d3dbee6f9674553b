/*-------------------------------------------------------------------------
 *
 * memmodel.c
 *	  A floor on the memory a built-in candidate needs on a task.
 *
 * The scheduler keeps a candidate off a task when this floor already
 * exceeds easeml.trainer_memory_limit: the run would end "memory limit"
 * after using its slot for nothing.  It counts only what the trainer
 * certainly allocates, from the task's profile (rows, features, classes)
 * and the model's parameters, so that it never keeps off a candidate that
 * fits; what it cannot predict (a network's activations, the encoding of
 * text columns) the limit itself catches as the run trains.
 *
 *	 every family	the prepared rows, float32: rows x features x 4
 *	 random_forest	every tree keeps, per leaf, a node and (classification)
 *					a float per class.  A tree grown until its leaves are
 *					pure separates the classes of its sample: it has at
 *					least half as many leaves as classes (a bootstrap sample
 *					holds about two thirds of the rows), at most 2^max_depth
 *					and at most the training rows over min_samples_leaf;
 *					for regression, half the training rows over
 *					min_samples_leaf.  The 10,000-class case of issue 22
 *					(20,000 rows, 200 trees) is 40 GB by this floor; 5.1 GB
 *					were measured after 15 of its trees.
 *	 gbt			scores, gradients and hessians for every training row
 *					and class (one column below 3 classes), float64
 *	 softmax		the L-BFGS history: 20 vectors of (features + 1) x
 *					classes float64
 *	 knn			one block of 256 validation rows' distances to every
 *					training row, float32
 *
 * Training rows are taken as half the rows (a split keeps at least that
 * much for training unless its val_fraction is above 0.5).
 *
 * IDENTIFICATION
 *	  src/core/memmodel.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <string.h>

#include "memmodel.h"

#define TREE_NODE_BYTES 16.0	/* a split node (tr_tree.h TreeNode) */

/* Leaves a random forest's tree has at least. */
static double
ForestLeaves(const MemArm *arm, double n_train, double classes, bool classification)
{
	double		leaves;
	double		min_leaf = arm->min_leaf >= 1 ? arm->min_leaf : 1;

	leaves = classification ? fmin(classes, n_train) / 2 : n_train / (2 * min_leaf);
	leaves = fmin(leaves, n_train / min_leaf);
	if (arm->max_depth > 0 && arm->max_depth < 1000)
		leaves = fmin(leaves, ldexp(1.0, (int) arm->max_depth));
	return fmax(leaves, 1);
}

double
MemEstimateBytes(const MemArm *arm, double rows, double features,
				 double classes, bool classification)
{
	double		n_train = fmax(rows / 2, 1);
	double		k = classification ? fmax(classes, 2) : 1;
	double		bytes;

	if (!(rows > 0) || !(features > 0))
		return 0;
	bytes = rows * features * 4;
	if (arm->family == NULL)
		return bytes;
	if (strcmp(arm->family, "random_forest") == 0)
	{
		double		trees = arm->trees > 0 ? arm->trees : 100;
		double		leaves = ForestLeaves(arm, n_train, k, classification);

		bytes += trees * leaves * (2 * TREE_NODE_BYTES + 4 * (classification ? k : 1));
	}
	else if (strcmp(arm->family, "gbt") == 0)
		bytes += 3 * n_train * (k > 2 ? k : 1) * 8;
	else if (strcmp(arm->family, "softmax") == 0 && classification)
		bytes += 20 * (features + 1) * k * 8;
	else if (strcmp(arm->family, "knn") == 0)
		bytes += 256 * n_train * 4;
	return bytes;
}
