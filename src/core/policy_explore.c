/*-------------------------------------------------------------------------
 *
 * policy_explore.c
 *	  "Explore only when it pays" (option xg=X): a task's next run is the
 *	  users' heuristic's -- the untried candidate of largest prior mean,
 *	  the anchor -- unless the model's own candidate promises more than X
 *	  times the anchor's expected improvement per second of its run
 *	  (docs/scheduler.md section 3).
 *
 * The posterior (GP or history mixture) ranks the candidates by expected
 * improvement per second, the cost being the whole charge of a run (its
 * runtime estimate, which the cost model learns with the fixed per-run
 * overhead in it).  Where costs are flat that ranking overrates uncertain
 * candidates: the prior's best models reach a good score sooner than the
 * arm of largest EI, which is why every model-based policy loses to
 * "popular model first" there.  The gate keeps the anchor unless the
 * exploratory candidate's advantage is large, as it is where a cheap
 * model is nearly as good as an expensive one (heavy-tailed runtimes).
 *
 * Pure functions of the numbers a view already holds; decision_view.c
 * computes the anchor's acquisition under the same predictive.
 *
 * IDENTIFICATION
 *	  src/core/policy_explore.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>

#include "policy.h"

/* Whether params gate exploration (xg=X). */
int
PolicyExploreGated(const PolicyParams *params)
{
	return params != NULL && params->explore_gate > 0.0 &&
		params->kind != POLICY_POPULAR && params->kind != POLICY_FIFO;
}

/*
 * The anchor of a task: the available arm of largest order[k] (the prior
 * mean; xo=1 the posterior mean), the lowest index among equals; -1 when
 * none is available or order is NULL.
 */
int
PolicyExploreAnchor(int K, const double *order, const unsigned char *avail)
{
	int			best = -1;

	if (order == NULL || avail == NULL)
		return -1;
	for (int k = 0; k < K; k++)
		if (avail[k] && (best < 0 || order[k] > order[best]))
			best = k;
	return best;
}

/*
 * Whether the model's candidate (acquisition acq_model, EI per second
 * when cost-aware) is worth running instead of the anchor (acq_anchor,
 * under the same predictive): its acquisition must exceed X times the
 * anchor's.  An anchor with no expected improvement never holds the
 * model's candidate back.
 */
int
PolicyExplorePays(const PolicyParams *params, double acq_model,
				  double acq_anchor)
{
	if (!PolicyExploreGated(params))
		return 1;
	if (!(acq_anchor > 0.0))
		return 1;
	return acq_model > params->explore_gate * acq_anchor;
}
