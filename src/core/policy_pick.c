/*-------------------------------------------------------------------------
 *
 * policy_pick.c
 *	  Picking one task: PolicyPickTenant applies a policy's task-picking
 *	  rule to the tasks' candidates (policy_acq.c fills their views), and
 *	  the seeded random numbers the random rule and the Monte Carlo scores
 *	  draw (docs/scheduler.md section 3).  policy_index.c returns the same
 *	  picks in O(log n) for many tasks.
 *
 *	 rr         least recently served task (= round-robin)           [A]
 *	 random     uniform over tasks, seeded                           [A]
 *	 popular    users' heuristic: round-robin tasks, arms in a fixed
 *				order by prior mean ("popular model first")         [A]
 *	 fifo       round-robin tasks, untried arms in catalog order
 *	 max_width  argmax sqrt(beta) sigma_i(x_i)                       [A]
 *	 max_gap    argmax UCB_i(x_i) - b_i                              [R]
 *	 max_ei     argmax EI_i(x_i)                                     [R]
 *	 hybrid     a greedy rule under a fairness floor                 [R]
 *
 * [A] the ease.ml authors' prototypes; [R] our reconstruction, not
 * confirmed by the paper's text (docs/scheduler.md, "What is
 * reconstructed").  With cost awareness the greedy task scores are divided
 * by the absolute cost estimate of x_i (gain per second).
 *
 * The hybrid fairness floor: every eligible task has a deadline
 * last_served + w (w = fairness window in decisions).  The greedy choice
 * is kept only if the other tasks can all still be served by their
 * deadlines one per decision afterwards (earliest-deadline-first
 * feasibility); otherwise the task with the earliest deadline is served.
 * With w >= the number of eligible tasks no task ever waits more than w
 * decisions.  A second guard serves the least recently served task when
 * the greedy choice has been served streak_limit times in a row without
 * improving.
 *
 * Ties are broken by the lowest task id, so every rule except random is
 * deterministic.
 *
 * IDENTIFICATION
 *	  src/core/policy_pick.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>

#include "policy.h"
#include "policy_internal.h"

/* splitmix64: small, seedable, good enough for tie-free uniform picks. */
uint64_t
PolicyRandNext(uint64_t *state)
{
	uint64_t	z = (*state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Uniform double in [0,1) from 53 random bits. */
double
PolicyRandUniform(uint64_t *state)
{
	return (PolicyRandNext(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Which eligible views a rule may choose from (warm start, spread). */
typedef struct PickFilter
{
	int			unserved_only;
	int			max_running;	/* INT32_MAX: no limit */
} PickFilter;

/* True when view i passes the filter. */
static inline int
Allowed(const PolicyTenantView *v, const PickFilter *f)
{
	if (v->arm < 0)
		return 0;
	if (f->unserved_only && v->last_served >= 0)
		return 0;
	return v->n_running <= f->max_running;
}

/* argmax of the cached greedy score over allowed tasks (ties: lowest id). */
static int
Greedy(const PolicyTenantView *views, int n, const PickFilter *f)
{
	int			best = -1;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (!Allowed(&views[i], f))
			continue;
		if (best < 0 || views[i].score > views[best].score ||
			(views[i].score == views[best].score && PolicyViewBefore(views, i, best)))
			best = i;
	}
	return best;
}

/* qsort comparator for int64 deadlines. */
static int
CmpInt64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/*
 * Fairness floor: keep g if every other eligible task can still meet its
 * deadline being served one per decision from decision_no + 1 on;
 * otherwise return the earliest-deadline task 'edf' (which is the least
 * recently served task).  min_other is the smallest deadline among the
 * eligible tasks other than g.  Returns -2 on no memory.
 */
static int
FairnessFloor(const PolicyTenantView *views, int n, int n_elig, int w,
			  int64_t decision_no, int g, int edf, int64_t min_other)
{
	int64_t    *dl;
	int			cnt = 0,
				feasible = 1,
				i;

	if (g == edf)
		return g;
	/* cheap sufficient test: everyone else has at least n_elig slack */
	if (min_other >= decision_no + n_elig)
		return g;

	/*
	 * Only tasks with less than n_elig slack can break feasibility, and they
	 * come first in deadline order, so sorting them alone is enough.
	 */
	dl = malloc(sizeof(int64_t) * (size_t) n_elig);
	if (dl == NULL)
		return -2;
	for (i = 0; i < n; i++)
		if (views[i].arm >= 0 && i != g &&
			PolicyViewDeadline(&views[i], w) < decision_no + n_elig)
			dl[cnt++] = PolicyViewDeadline(&views[i], w);
	qsort(dl, cnt, sizeof(int64_t), CmpInt64);
	for (i = 0; i < cnt; i++)
		if (dl[i] < decision_no + 1 + i)
		{
			feasible = 0;
			break;
		}
	free(dl);
	return feasible ? g : edf;
}

/* A uniformly random task among those the filter allows; -1 if none. */
static int
PickRandom(const PolicyTenantView *views, int n, const PickFilter *f,
		   uint64_t *rng)
{
	int			n_allowed = 0;
	int			r;

	for (int i = 0; i < n; i++)
		n_allowed += Allowed(&views[i], f);
	if (n_allowed == 0)
		return -1;
	r = (int) (PolicyRandUniform(rng) * n_allowed);
	if (r >= n_allowed)
		r = n_allowed - 1;
	for (int i = 0; i < n; i++)
		if (Allowed(&views[i], f) && r-- == 0)
			return i;
	return -1;
}

/*
 * hybrid: the greedy pick (the least recently served task once the greedy
 * one has had streak_limit turns in a row), unless that would make another
 * task miss its deadline (FairnessFloor).  *rule is the greedy rule on
 * entry and says which rule decided.
 */
static int
PickHybrid(const PolicyParams *params, const PolicyTenantView *views, int n,
		   int n_elig, int greedy, int lrs, int64_t decision_no,
		   PolicyRule *rule)
{
	int			w = params->fairness_window > 0 ? params->fairness_window : 3 * n_elig;
	int64_t		min_other = INT64_MAX;
	int			pick = greedy,
				floor;

	if (params->streak_limit > 0 && pick >= 0 &&
		views[pick].streak >= params->streak_limit)
	{
		pick = lrs;
		*rule = POLICY_RULE_STREAK;
	}
	if (pick < 0)
		return pick;
	/* the earliest deadline among the others */
	if (pick != lrs)
		min_other = PolicyViewDeadline(&views[lrs], w);
	else
		for (int i = 0; i < n; i++)
			if (i != pick && views[i].arm >= 0 &&
				PolicyViewDeadline(&views[i], w) < min_other)
				min_other = PolicyViewDeadline(&views[i], w);
	floor = FairnessFloor(views, n, n_elig, w, decision_no, pick, lrs, min_other);
	if (floor != pick)
		*rule = POLICY_RULE_FAIRNESS;
	return floor == -2 ? POLICY_NO_MEMORY : floor;
}

/*
 * Pick one task; see policy.h.  Greedy rules read view->score, which
 * PolicyBestArm fills with the same params.  One pass over the views finds
 * everything the steady state needs (the greedy argmax, the least recently
 * served task, the two earliest deadlines); a second, filtered pass runs
 * only during warm start or while tasks differ in runs in flight.
 */
int
PolicyPickTenant(const PolicyParams *params, int n, PolicyTenantView *views,
				 int64_t decision_no, uint64_t *rng, PolicyRule *rule)
{
	PolicyRule	dummy;
	PickFilter	f = {0, INT32_MAX};
	int			n_elig = 0,
				n_unserved = 0;
	int			min_running = INT32_MAX,
				max_running = 0;
	int			greedy = -1,
				lrs = -1;
	int			pick = -1;
	int			i;

	if (rule == NULL)
		rule = &dummy;
	*rule = POLICY_RULE_NONE;
	if (params == NULL || n < 0 || (n > 0 && views == NULL))
		return POLICY_BAD_INPUT;

	for (i = 0; i < n; i++)
	{
		const PolicyTenantView *v = &views[i];

		if (v->arm < 0)
			continue;
		n_elig++;
		if (v->last_served < 0)
			n_unserved++;
		if (v->n_running < min_running)
			min_running = v->n_running;
		if (v->n_running > max_running)
			max_running = v->n_running;
		if (greedy < 0 || v->score > views[greedy].score ||
			(v->score == views[greedy].score && PolicyViewBefore(views, i, greedy)))
			greedy = i;
		if (lrs < 0 || v->last_served < views[lrs].last_served ||
			(v->last_served == views[lrs].last_served && PolicyViewBefore(views, i, lrs)))
			lrs = i;
	}
	if (n_elig == 0)
		return -1;

	switch (params->kind)
	{
		case POLICY_RR:
		case POLICY_POPULAR:
		case POLICY_FIFO:
			*rule = POLICY_RULE_ROUND_ROBIN;
			return lrs;
		default:
			break;
	}

	/*
	 * Restrict the greedy and random rules: first to the tasks never served
	 * (warm start, docs/scheduler.md 3), then to those with the fewest runs in
	 * flight, so that M devices spread over M tasks before any task gets a
	 * second one while its first result is pending.  [R] not confirmed by
	 * the paper's text.
	 */
	f.unserved_only = n_unserved > 0 && n_unserved < n_elig;
	if (f.unserved_only || min_running != max_running)
	{
		int			m = INT32_MAX;

		for (i = 0; i < n; i++)
			if (Allowed(&views[i], &f) && views[i].n_running < m)
				m = views[i].n_running;
		f.max_running = m;
	}
	if (f.unserved_only || f.max_running != INT32_MAX)
		greedy = Greedy(views, n, &f);

	switch (params->kind)
	{
		case POLICY_RANDOM:
			pick = PickRandom(views, n, &f, rng);
			if (pick >= 0)
				*rule = POLICY_RULE_RANDOM;
			break;
		case POLICY_MAX_WIDTH:
		case POLICY_MAX_GAP:
		case POLICY_MAX_EI:
			pick = greedy;
			*rule = f.unserved_only ? POLICY_RULE_WARM_START : POLICY_RULE_GREEDY;
			break;
		case POLICY_HYBRID:
			*rule = f.unserved_only ? POLICY_RULE_WARM_START : POLICY_RULE_GREEDY;
			pick = PickHybrid(params, views, n, n_elig, greedy, lrs,
							  decision_no, rule);
			break;
		default:
			pick = lrs;
			*rule = POLICY_RULE_ROUND_ROBIN;
			break;
	}
	return pick;
}
