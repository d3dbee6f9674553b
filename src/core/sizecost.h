/*-------------------------------------------------------------------------
 *
 * sizecost.h
 *	  The size-based cost model of replays: what a task's runs will cost
 *	  before they run (docs/scheduler.md 4), learned from the runtimes of
 *	  history rows and the sizes (rows, features) of their data sets; see
 *	  sizecost.c.  The live scheduler's cost model is costmodel.h.
 *
 * Plain C, no PostgreSQL headers.  Functions return policy.h's POLICY_*
 * status codes.
 *
 * IDENTIFICATION
 *	  src/core/sizecost.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_SIZECOST_H
#define EASEML_SIZECOST_H

#include "gp.h"
#include "policy.h"

typedef enum PolicyCostKind
{
	POLICY_COST_NONE = 0,		/* every run costs 1 */
	POLICY_COST_SIZE_LINEAR,	/* median sec/(rows*features) per model
								 * times the task's rows*features */
	POLICY_COST_SIZE_LOGLINEAR, /* log c = a_k + b_k log rows + g_k log
								 * features, least squares per model */
	POLICY_COST_SIZE_GP			/* log-linear plus a GP over the models on
								 * the residuals, conditioned online on the
								 * task's own finished runtimes */
} PolicyCostKind;

typedef struct PolicyCostModel
{
	PolicyCostKind kind;
	int			K;
	double	   *coef;			/* K x 3 */
	GpPrior		resid;			/* SIZE_GP: prior of log-cost residuals */
} PolicyCostModel;

extern const char *PolicyCostKindName(PolicyCostKind kind);
extern int	PolicyCostKindFromName(const char *name);	/* -1 if unknown */

/*
 * Fit from m history rows: runtime m x K seconds (NaN = unknown, values
 * must be > 0), sizes m x 3 (rows, features, classes; > 0).
 */
extern int	PolicyCostModelFit(PolicyCostModel *model, PolicyCostKind kind,
							   const double *runtime, const double *sizes,
							   int m, int K);
extern void PolicyCostModelFree(PolicyCostModel *model);

/* log-cost prediction of the size part for one task (K values). */
extern int	PolicyCostBase(const PolicyCostModel *model, double rows,
						   double features, double classes, double *log_cost);

/*
 * Cost estimate in seconds for one task: exp(log_base + residual mean),
 * where the residual posterior 'resid' (a GpState over model->resid, fed
 * with log(observed seconds) - log_base[arm]) may be NULL.
 */
extern int	PolicyCostPredict(const PolicyCostModel *model,
							  const double *log_base, const GpState *resid,
							  double *cost);

#endif							/* EASEML_SIZECOST_H */
