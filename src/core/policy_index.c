/*-------------------------------------------------------------------------
 *
 * policy_index.c
 *	  PolicyIndex: the task picks of PolicyPickTenant (policy_pick.c) in
 *	  O(log n) for many tasks.  Two tournament trees over the caller's
 *	  views (greedy score, least recently served) are kept up to date one
 *	  changed view at a time; a pick reads their roots, and falls back to
 *	  PolicyPickTenant wherever its shortcut does not apply (policy.h says
 *	  when).  PolicyIndexTop lists runner-ups in O(k log n).
 *
 * A separate file because it is a data structure with its own invariants
 * (tie order and deadlines as policy_pick.c has them, policy_internal.h);
 * the unit tests check that both return the same pick (TestIndex).
 *
 * IDENTIFICATION
 *	  src/core/policy_index.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_internal.h"

/* Better of two view indices by greedy score (ties: lowest id), -1 aware. */
static inline int
BetterScore(const PolicyTenantView *views, int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	if (views[a].score > views[b].score)
		return a;
	if (views[b].score > views[a].score)
		return b;
	return PolicyViewBefore(views, a, b) ? a : b;
}

/* Less recently served of two view indices (ties: lowest id), -1 aware. */
static inline int
BetterLrs(const PolicyTenantView *views, int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	if (views[a].last_served < views[b].last_served)
		return a;
	if (views[b].last_served < views[a].last_served)
		return b;
	return PolicyViewBefore(views, a, b) ? a : b;
}

/* Membership bits of one view. */
static inline unsigned char
ViewState(const PolicyTenantView *v)
{
	if (v->arm < 0)
		return 0;
	return 1 | (v->last_served < 0 ? 2 : 0) | (v->n_running > 0 ? 4 : 0);
}

/*
 * Leaves of the two trees for view i: every eligible view is in the
 * least-recently-served tree; with idle_only, only the eligible views
 * without runs in flight are in the score tree (what the spread filter of
 * PolicyPickTenant keeps while some eligible task is idle).
 */
static inline void
SetLeaves(PolicyIndex *index, int i)
{
	const PolicyTenantView *v = &index->views[i];
	int			node = index->size + i;

	index->lrs[node] = v->arm >= 0 ? i : -1;
	index->best[node] = (v->arm >= 0 && (!index->idle_only || v->n_running == 0)) ?
		i : -1;
}

/* Build an index over n views (which the caller keeps and updates). */
int
PolicyIndexInit(PolicyIndex *index, PolicyTenantView *views, int n,
				int idle_only)
{
	int			size = 1;
	int			i;

	if (index == NULL)
		return POLICY_BAD_INPUT;
	memset(index, 0, sizeof(*index));
	if (n <= 0 || views == NULL)
		return POLICY_BAD_INPUT;
	while (size < n)
		size *= 2;
	index->n = n;
	index->size = size;
	index->views = views;
	index->idle_only = idle_only != 0;
	index->best = malloc(sizeof(int) * 2 * (size_t) size);
	index->lrs = malloc(sizeof(int) * 2 * (size_t) size);
	index->state = calloc(n, 1);
	if (index->best == NULL || index->lrs == NULL || index->state == NULL)
	{
		PolicyIndexFree(index);
		return POLICY_NO_MEMORY;
	}
	for (i = 0; i < size; i++)
	{
		if (i < n)
		{
			unsigned char st = ViewState(&views[i]);

			SetLeaves(index, i);
			index->state[i] = st;
			index->n_elig += (st & 1) != 0;
			index->n_unserved += (st & 2) != 0;
			index->n_busy += (st & 4) != 0;
		}
		else
			index->best[size + i] = index->lrs[size + i] = -1;
	}
	for (i = size - 1; i >= 1; i--)
	{
		index->best[i] = BetterScore(views, index->best[2 * i], index->best[2 * i + 1]);
		index->lrs[i] = BetterLrs(views, index->lrs[2 * i], index->lrs[2 * i + 1]);
	}
	return POLICY_OK;
}

/* Free an index (not the views). */
void
PolicyIndexFree(PolicyIndex *index)
{
	if (index == NULL)
		return;
	free(index->best);
	free(index->lrs);
	free(index->state);
	memset(index, 0, sizeof(*index));
}

/* Re-rank view i after the caller changed it. */
void
PolicyIndexUpdate(PolicyIndex *index, int i)
{
	const PolicyTenantView *views;
	unsigned char st;
	int			node;

	if (index == NULL || i < 0 || i >= index->n)
		return;
	views = index->views;
	st = ViewState(&views[i]);
	index->n_elig += ((st & 1) != 0) - ((index->state[i] & 1) != 0);
	index->n_unserved += ((st & 2) != 0) - ((index->state[i] & 2) != 0);
	index->n_busy += ((st & 4) != 0) - ((index->state[i] & 4) != 0);
	index->state[i] = st;

	SetLeaves(index, i);
	for (node = (index->size + i) / 2; node >= 1; node /= 2)
	{
		index->best[node] = BetterScore(views, index->best[2 * node],
										index->best[2 * node + 1]);
		index->lrs[node] = BetterLrs(views, index->lrs[2 * node],
									 index->lrs[2 * node + 1]);
	}
}

/* Pick like PolicyPickTenant, in O(log n) on the common path. */
int
PolicyIndexPick(const PolicyIndex *index, const PolicyParams *params,
				int64_t decision_no, uint64_t *rng, PolicyRule *rule)
{
	const PolicyTenantView *views;
	PolicyRule	dummy;
	int			greedy,
				lrs,
				pick,
				w;

	if (rule == NULL)
		rule = &dummy;
	*rule = POLICY_RULE_NONE;
	if (index == NULL || params == NULL || index->views == NULL)
		return POLICY_BAD_INPUT;
	views = index->views;
	if (index->n_elig == 0)
		return -1;
	lrs = index->lrs[1];

	switch (params->kind)
	{
		case POLICY_RR:
		case POLICY_POPULAR:
		case POLICY_FIFO:
			*rule = POLICY_RULE_ROUND_ROBIN;
			return lrs;
		case POLICY_MAX_WIDTH:
		case POLICY_MAX_GAP:
		case POLICY_MAX_EI:
		case POLICY_HYBRID:
			break;
		default:
			return PolicyPickTenant(params, index->n, index->views,
									decision_no, rng, rule);
	}

	/*
	 * The general path applies while the warm start filter is on, while
	 * runs are in flight and the score tree does not hold exactly the
	 * spread filter's tasks (every eligible task busy, or a tree built
	 * without idle_only), and for hybrid with several unserved tasks.
	 */
	if ((index->n_unserved > 0 && index->n_unserved < index->n_elig) ||
		(index->n_busy > 0 &&
		 (!index->idle_only || index->n_busy == index->n_elig)) ||
		(params->kind == POLICY_HYBRID && index->n_unserved > 1))
		return PolicyPickTenant(params, index->n, index->views, decision_no,
								rng, rule);
	greedy = index->best[1];
	*rule = POLICY_RULE_GREEDY;
	if (params->kind != POLICY_HYBRID)
		return greedy;

	/* hybrid: streak guard, then the fairness floor */
	pick = greedy;
	if (params->streak_limit > 0 && views[pick].streak >= params->streak_limit)
	{
		pick = lrs;
		*rule = POLICY_RULE_STREAK;
	}
	if (pick == lrs)
		return pick;
	w = params->fairness_window > 0 ? params->fairness_window :
		3 * index->n_elig;

	/*
	 * Distinct deadlines d_(1) < d_(2) < ... are all feasible one per
	 * decision iff d_(1) >= decision_no + 1; the earliest deadline among
	 * the others is the least recently served task's, since pick != lrs.
	 */
	if (PolicyViewDeadline(&views[lrs], w) >= decision_no + 1)
		return pick;
	*rule = POLICY_RULE_FAIRNESS;
	return lrs;
}

/* Take view i out of one tree: its leaf empty, its path re-decided. */
static void
TreeTakeOut(PolicyIndex *index, int *tree, int by_lrs, int i)
{
	int			node = index->size + i;

	tree[node] = -1;
	for (node /= 2; node >= 1; node /= 2)
		tree[node] = by_lrs ?
			BetterLrs(index->views, tree[2 * node], tree[2 * node + 1]) :
			BetterScore(index->views, tree[2 * node], tree[2 * node + 1]);
}

/*
 * Undo TreeTakeOut of view i, the last one taken out: i was the tree's
 * top then, so every node of its path held i.
 */
static void
TreePutBack(const PolicyIndex *index, int *tree, int i)
{
	for (int node = index->size + i; node >= 1; node /= 2)
		tree[node] = i;
}

/*
 * The k first views of one tree other than 'skip' (by greedy score, or
 * least recently served first with by_lrs), in order; returns how many.
 * Views are taken out of the tree one by one and put back in the reverse
 * order, so it costs O(k log n) and leaves the tree as it was.
 */
int
PolicyIndexTop(PolicyIndex *index, int by_lrs, int skip, int k, int *out)
{
	int		   *tree;
	int			n = 0,
				skip_at = -1;	/* outputs taken out before skip was */

	if (index == NULL || index->views == NULL || k <= 0 || out == NULL)
		return 0;
	tree = by_lrs ? index->lrs : index->best;
	for (;;)
	{
		int			top = tree[1];

		if (top < 0)
			break;
		if (top != skip)
		{
			if (n == k)
				break;
			out[n++] = top;
		}
		else
			skip_at = n;
		TreeTakeOut(index, tree, by_lrs, top);
		if (n == k && top != skip)
			break;
	}
	/* put back what was taken out, last first */
	for (int i = n; i >= 0; i--)
	{
		if (i == skip_at)
			TreePutBack(index, tree, skip);
		if (i > 0)
			TreePutBack(index, tree, out[i - 1]);
	}
	return n;
}
