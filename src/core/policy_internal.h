/*-------------------------------------------------------------------------
 *
 * policy_internal.h
 *	  What the policy_*.c files share and no other module needs: the
 *	  greedy rule and the acquisition a PolicyParams resolves to
 *	  (policy_spec.c; policy_acq.c scores with them), and the tie order and
 *	  fairness deadline of the task-picking rules (policy_pick.c and
 *	  policy_index.c must agree on both to return the same pick).
 *
 * Include policy.h for the policy API; this header is not part of it.
 *
 * IDENTIFICATION
 *	  src/core/policy_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_POLICY_INTERNAL_H
#define EASEML_POLICY_INTERNAL_H

#include <stdint.h>

#include "policy.h"

/* The greedy rule a policy scores tasks with (hybrid: the one it guards). */
extern PolicyKind PolicyGreedyRule(const PolicyParams *params);

/* Acquisition the policy actually uses (DEFAULT resolved). */
extern PolicyAcq PolicyEffectiveAcq(const PolicyParams *params);

/* a before b in tie order: lower id, then lower index. */
static inline int
PolicyViewBefore(const PolicyTenantView *views, int a, int b)
{
	if (views[a].id != views[b].id)
		return views[a].id < views[b].id;
	return a < b;
}

/* Deadline of a task under fairness window w. */
static inline int64_t
PolicyViewDeadline(const PolicyTenantView *v, int w)
{
	return (v->last_served < 0 ? -1 : v->last_served) + w;
}

#endif							/* EASEML_POLICY_INTERNAL_H */
