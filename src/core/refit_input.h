/*-------------------------------------------------------------------------
 *
 * refit_input.h
 *	  What a refit cycle learns from (src/core/refit.h): the history, the
 *	  measured runs and what the policies in effect need.  Its own header
 *	  so that the "auto" policy's replay (src/core/autopolicy.c), which
 *	  refit.c runs, reads it without depending on refit.h: the dependency
 *	  goes one way, refit -> autopolicy.  Plain C, no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/core/refit_input.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_REFIT_INPUT_H
#define EASEML_REFIT_INPUT_H

#include <stdint.h>

#include "costmodel.h"
#include "policy.h"

/* What the caller knows now (copied when a cycle starts). */
typedef struct RefitInput
{
	int			K;
	/* quality history: m rows x K, NaN = unknown */
	int			m;
	const double *cells;
	const int64_t *row_task;	/* per row: its task's id, 0 for seed rows */
	const unsigned char *row_kind;	/* per row: DECISION_CLASSIFICATION, ... */
	/*
	 * measured runs, the cost model's input (src/core/costmodel.h): cost.seconds
	 * mc rows x K, NaN = unknown; cost.sizes mc x 3 (rows x folds,
	 * features, classes); cost.train, folds, passes, bins may be NULL
	 */
	CostData	cost;
	const int64_t *cost_task;	/* mc: each runtime row's task id, or NULL */
	int			devices;		/* slots the "auto" replay runs on (0: 1) */
	const unsigned char *per_class; /* K: cost grows with classes, or NULL
									 * (DecisionSetArmPerClass) */
	/* the live scheduler's family cost model (src/core/costmodel.h), or NULL */
	const CostArm *arms;		/* K: what drives each model's cost */
	int			need_mix;		/* fit the history mixtures: the policy in
								 * effect, or one "auto" may choose, uses
								 * them (PolicyUsesMixture) */
	int			need_learn;		/* with need_mix: fit mrg=2's learned task
								 * score on each new mixture, with params
								 * learn (the policy in effect, or the
								 * candidate of "auto" that uses it) */
	PolicyParams learn;
	/*
	 * "auto"'s options (PolicyAutoOptions of the setting, "" for none):
	 * its replay compares the candidates with them
	 */
	char		auto_options[POLICY_SPEC_LEN];
	/*
	 * generated candidates (src/core/hpspace.h): per arm the grid arm it
	 * descends from (-1 for a grid arm), and K x space_dims scaled
	 * coordinates; NULL when the catalog has none.  The priors are
	 * extended to them (HpExtendPrior) and the mixtures read a generated
	 * arm's unknown cells from its root's column.
	 */
	const int  *arm_root;
	const double *arm_coords;
	int			space_dims;
} RefitInput;

#endif							/* EASEML_REFIT_INPUT_H */
