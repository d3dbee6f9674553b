/*-------------------------------------------------------------------------
 *
 * mixplan.h
 *	  Arm choice by a two-run plan under the history mixture (option
 *	  mpl=L with acq=mix; docs/scheduler.md 3 and
 *	  docs/research/scheduler-experiments.md).
 *
 * Myopic mixture EI (MixBestArm) ranks an arm by what its own result may
 * improve.  The plan also counts what the result teaches: for each of the
 * L arms of largest myopic EI per cost, every likely row r is taken as the
 * truth in turn, the arm's result r_a + o_r updates the row weights
 * exactly (with the shift, the rows' offsets too), and the best second
 * arm by EI per cost under the updated weights is chosen.  An arm's index
 * is the better of its own EI per cost and the pair's (EI1 + E[EI2]) /
 * (c1 + E[c2]), a two-step "best prefix" rate.  Plain C, no PostgreSQL
 * headers.
 *
 * IDENTIFICATION
 *	  src/core/mixplan.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_MIXPLAN_H
#define EASEML_MIXPLAN_H

#include "mixture.h"

#define MIX_PLAN_MAX 16			/* mpl=L at most this */

/*
 * As MixBestArm (same arguments, plus the task's scores, NaN = not
 * observed, which the weights w and offsets off came from), choosing
 * among the params->mix_plan arms of largest myopic acquisition by the
 * two-run index; view->acq is that index, view->ei the arm's own EI.
 * Returns POLICY_OK, POLICY_BAD_INPUT or POLICY_NO_MEMORY.
 */
extern int	MixPlanBestArm(const MixPrior *mp, const PolicyParams *params,
						   const double *w, const double *off, double bw,
						   const double *score, const double *gp_mu,
						   const double *gp_var, const double *cost,
						   const unsigned char *avail, PolicyTenantView *view);

#endif							/* EASEML_MIXPLAN_H */
