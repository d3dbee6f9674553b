/*-------------------------------------------------------------------------
 *
 * memmodel.h
 *	  What a built-in candidate will at least need in memory on a task
 *	  (src/core/memmodel.c), so that the scheduler keeps off the candidates
 *	  that easeml.trainer_memory_limit would stop anyway
 *	  (docs/operations.md, "Memory").
 *
 * Plain C, no PostgreSQL headers: the scheduler and the unit tests share
 * it.
 *
 * IDENTIFICATION
 *	  src/core/memmodel.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_MEMMODEL_H
#define EASEML_MEMMODEL_H

#include <stdbool.h>

/* What drives a candidate's memory: its family and a few parameters. */
typedef struct MemArm
{
	const char *family;			/* easeml.models.family */
	double		trees;			/* random_forest n_trees, gbt n_rounds */
	double		max_depth;		/* 0: none */
	double		min_leaf;		/* random_forest min_samples_leaf */
} MemArm;

/*
 * Bytes a run of the candidate needs at least, on a task of rows (not
 * times folds), features and classes (1 for regression); see memmodel.c
 * for what is counted.
 */
extern double MemEstimateBytes(const MemArm *arm, double rows, double features,
							   double classes, bool classification);

#endif							/* EASEML_MEMMODEL_H */
