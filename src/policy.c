/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  Acquisition, user (task) picking, the cost model and the one-shot
 *	  PolicyDecide() entry point (algorithm.md 2.3, 2.4, 3, 4).
 *
 * A decision has two levels.  First every task with an arm left computes
 * its best candidate x_i with an acquisition function over its posterior
 * (UCB, cost-aware UCB, EI, EI per cost).  Then a policy picks one task:
 *
 *	 rr         least recently served task (= round-robin)           [A]
 *	 random     uniform over tasks, seeded                           [A]
 *	 popular    users' heuristic: round-robin tasks, arms in a fixed
 *				order by prior mean ("popular model first")         [A]
 *	 fifo       round-robin tasks, untried arms in catalog order (the
 *				live system's simple default of the first slice)
 *	 max_width  argmax sqrt(beta) sigma_i(x_i)                       [A]
 *	 max_gap    argmax UCB_i(x_i) - b_i                              [R]
 *	 max_ei     argmax EI_i(x_i)                                     [R]
 *	 hybrid     a greedy rule under a fairness floor                 [R]
 *
 * With cost awareness the greedy task scores are divided by the absolute
 * cost estimate of x_i (gain per second).  [R] not confirmed by the
 * paper's text: the paper's public text says the system is cost-aware but
 * not where the cost enters the user choice.
 *
 * The hybrid fairness floor [R] (not confirmed by the paper's text): every
 * eligible task has a deadline last_served + w (w = fairness window in
 * decisions).  The greedy choice is kept only if the other tasks can all
 * still be served by their deadlines one per decision afterwards
 * (earliest-deadline-first feasibility); otherwise the task with the
 * earliest deadline is served.  With w >= the number of eligible tasks no
 * task ever waits more than w decisions.  A second guard serves the least
 * recently served task when the greedy choice has been served
 * streak_limit times in a row without improving.  The paper's own switch
 * between greedy and round-robin is not public; this stateless form fits
 * the live scheduler, which calls PolicyDecide() once per free device.
 *
 * Ties are broken by the lowest task id, then the lowest arm index, so
 * every rule except random is deterministic.
 *
 * IDENTIFICATION
 *	  src/policy.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gp.h"
#include "policy.h"

static const char *const policy_names[POLICY__COUNT] = {
	"rr", "random", "popular", "max_width", "max_gap", "max_ei", "hybrid",
	"fifo"
};

static const char *const cost_kind_names[] = {
	"none", "size_linear", "size_loglinear", "size_gp"
};

/* default greedy rule under hybrid, chosen by measurement (docs/scheduler.md) */
#define POLICY_DEFAULT_GREEDY POLICY_MAX_EI
/* cost floor of the relative cost c~ (algorithm.md 2.4) */
#define POLICY_DEFAULT_COST_FLOOR 0.05
/* a cost estimate is never taken below this many seconds */
#define POLICY_MIN_COST 1e-9
/* arms whose EI bounds fit on the stack in PolicyBestArm */
#define POLICY_EI_STACK 1024

/* Policy by name; -1 if unknown. */
int
PolicyFromName(const char *name)
{
	int			i;

	if (name == NULL)
		return -1;
	for (i = 0; i < POLICY__COUNT; i++)
		if (strcmp(name, policy_names[i]) == 0)
			return i;
	return -1;
}

/* Name of a policy ("?" when out of range). */
const char *
PolicyName(PolicyKind kind)
{
	if ((int) kind < 0 || kind >= POLICY__COUNT)
		return "?";
	return policy_names[kind];
}

/* Name of a cost model kind. */
const char *
PolicyCostKindName(PolicyCostKind kind)
{
	if ((int) kind < 0 || kind > POLICY_COST_SIZE_GP)
		return "?";
	return cost_kind_names[kind];
}

/* Cost model kind by name; -1 if unknown. */
int
PolicyCostKindFromName(const char *name)
{
	int			i;

	if (name == NULL)
		return -1;
	for (i = 0; i <= POLICY_COST_SIZE_GP; i++)
		if (strcmp(name, cost_kind_names[i]) == 0)
			return i;
	return -1;
}

/* Default knobs of a policy. */
void
PolicyParamsDefault(PolicyParams *params, PolicyKind kind)
{
	memset(params, 0, sizeof(*params));
	params->kind = kind;
	params->acq = POLICY_ACQ_DEFAULT;
	params->cost_aware = 0;
	params->tenant_cost = -1;
	params->beta = 0.0;
	params->delta = 0.1;
	params->cost_floor = POLICY_DEFAULT_COST_FLOOR;
	params->warm_start = 1;
	params->fairness_window = 0;
	params->streak_limit = 0;
	params->greedy = POLICY_DEFAULT_GREEDY;
	params->spread = 1;
}

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

/*
 * beta_t.  A positive params->beta is used as is.  Otherwise Srinivas et
 * al. (2010) Theorem 1 for a finite decision set,
 * beta_t = 2 log(K t^2 pi^2 / (6 delta)), with t = n_obs + 1 (the task's
 * own clock; algorithm.md 2.3 default, avoids log 0).
 */
double
PolicyBeta(const PolicyParams *params, int K, int n_obs)
{
	double		delta;
	double		t = (double) n_obs + 1.0;

	if (params->beta > 0.0)
		return params->beta;
	delta = params->delta > 0.0 ? params->delta : 0.1;
	return 2.0 * log((K > 0 ? K : 1) * t * t * M_PI * M_PI / (6.0 * delta));
}

/* EI(mu, sigma; best) = (mu - b) Phi(z) + sigma phi(z), z = (mu - b) / sigma. */
double
PolicyExpectedImprovement(double mu, double sigma, double best)
{
	double		d = mu - best;
	double		z;

	if (!(sigma > 1e-12))
		return d > 0.0 ? d : 0.0;
	z = d / sigma;
	return d * 0.5 * erfc(-z / M_SQRT2) +
		sigma * exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
}

/*
 * Upper bound of EI for d = mu - best and variance v, without exp/erfc:
 * EI = s tau(d/s) with tau(z) = z Phi(z) + phi(z) <= max(z, 0) + phi(z), and
 * phi(z) <= phi(0) / (1 + q + q^2 / 2) with q = z^2 / 2 (e^-q >= that).
 */
static inline double
EiUpperBound(double d, double v)
{
	const double phi0 = 0.3989422804014327;
	double		s,
				q;

	if (!(v > 1e-24))
		return d > 0.0 ? d : 0.0;
	s = sqrt(v);
	q = 0.5 * d * d / v;
	return (d > 0.0 ? d : 0.0) + phi0 * s / (1.0 + q + 0.5 * q * q);
}

/* EI of arm k, per second when cost-aware. */
static inline double
ArmEi(const PolicyParams *params, const double *mu, const double *var,
	  const double *cost, double best, int k)
{
	double		a = PolicyExpectedImprovement(mu[k],
											  sqrt(var[k] > 0.0 ? var[k] : 0.0),
											  best);

	if (params->cost_aware && cost)
		a /= cost[k] > POLICY_MIN_COST ? cost[k] : POLICY_MIN_COST;
	return a;
}

/* The greedy rule a policy scores tasks with (hybrid: the one it guards). */
static PolicyKind
GreedyRule(const PolicyParams *params)
{
	PolicyKind	g = params->kind;

	if (g == POLICY_HYBRID)
		g = params->greedy;
	if (g != POLICY_MAX_WIDTH && g != POLICY_MAX_GAP && g != POLICY_MAX_EI)
		g = POLICY_DEFAULT_GREEDY;
	return g;
}

/* Acquisition the policy actually uses. */
static PolicyAcq
EffectiveAcq(const PolicyParams *params)
{
	PolicyKind	kind = params->kind;

	if (params->acq != POLICY_ACQ_DEFAULT)
		return params->acq;
	/* hybrid follows the greedy rule it guards */
	if (kind == POLICY_HYBRID)
		kind = GreedyRule(params);
	return kind == POLICY_MAX_EI ? POLICY_ACQ_EI : POLICY_ACQ_UCB;
}

/* Greedy task score of a view's candidate (gain, per second if costed). */
static double
GreedyScore(const PolicyParams *params, const PolicyTenantView *v)
{
	int			tc = params->tenant_cost < 0 ? params->cost_aware :
		params->tenant_cost;
	double		c = tc ? v->cost : 1.0;
	double		g;

	switch (GreedyRule(params))
	{
		case POLICY_MAX_WIDTH:
			g = sqrt(v->beta) * v->sigma;
			break;
		case POLICY_MAX_GAP:
			g = v->ucb - v->best;
			break;
		case POLICY_MAX_EI:
		default:
			g = v->ei;
			break;
	}
	return g / (c > POLICY_MIN_COST ? c : POLICY_MIN_COST);
}

/*
 * Best candidate of one task; see policy.h.  For EI the scan is pruned:
 * EI(mu, sigma; b) <= max(mu - b, 0) + sigma / sqrt(2 pi), so arms whose
 * bound is below the best exact value so far are skipped without changing
 * the result (ties keep the lowest arm index).
 */
int
PolicyBestArm(const PolicyParams *params, int K, const double *mu,
			  const double *var, const double *cost,
			  const unsigned char *avail, const double *prior_mean,
			  PolicyTenantView *view)
{
	PolicyAcq	acq;
	double		beta,
				sqrt_beta,
				cref = 1.0;
	double		best_a = -INFINITY;
	int			best_k = -1;
	int			k;
	int			use_gp;

	if (params == NULL || view == NULL || K <= 0 || avail == NULL)
		return POLICY_BAD_INPUT;
	use_gp = params->kind != POLICY_POPULAR && params->kind != POLICY_FIFO;
	if (use_gp && (mu == NULL || var == NULL))
		return POLICY_BAD_INPUT;

	acq = EffectiveAcq(params);
	beta = PolicyBeta(params, K, view->n_obs);
	sqrt_beta = sqrt(beta);
	view->beta = beta;

	if (!use_gp)
	{
		for (k = 0; k < K; k++)
		{
			double		a;

			if (!avail[k])
				continue;
			if (params->kind == POLICY_POPULAR && prior_mean)
				a = prior_mean[k];
			else
				a = -(double) k;
			if (a > best_a || best_k < 0)
			{
				best_a = a;
				best_k = k;
			}
		}
	}
	else if (acq == POLICY_ACQ_EI)
	{
		const double b = view->best;
		double		stack_ub[POLICY_EI_STACK];
		double	   *ub = K <= POLICY_EI_STACK ? stack_ub :
			malloc(sizeof(double) * (size_t) K);
		double		top = -INFINITY;

		if (ub == NULL)
			return POLICY_NO_MEMORY;

		/*
		 * Two passes: the first computes each arm's cheap upper bound and
		 * evaluates the arm with the largest bound exactly; the second
		 * evaluates exactly only the arms whose bound reaches the best
		 * value so far (ties keep the lowest arm index).
		 */
		for (k = 0; k < K; k++)
		{
			double		c = 1.0;

			if (!avail[k])
				continue;
			if (params->cost_aware && cost)
				c = cost[k] > POLICY_MIN_COST ? cost[k] : POLICY_MIN_COST;
			ub[k] = EiUpperBound(mu[k] - b, var[k] > 0.0 ? var[k] : 0.0) / c;
			if (ub[k] > top)
			{
				top = ub[k];
				best_k = k;
			}
		}
		if (best_k >= 0)
		{
			int			first = best_k;

			best_a = ArmEi(params, mu, var, cost, b, first);
			for (k = 0; k < K; k++)
			{
				double		a;

				if (!avail[k] || k == first || ub[k] < best_a)
					continue;
				a = ArmEi(params, mu, var, cost, b, k);
				if (a > best_a || (a == best_a && k < best_k))
				{
					best_a = a;
					best_k = k;
				}
			}
		}
		if (ub != stack_ub)
			free(ub);
	}
	else
	{
		/* UCB; cost-aware: sqrt(beta / c~), c~ relative to the geometric mean */
		if (cost != NULL && params->cost_aware)
		{
			double		sum = 0.0;

			for (k = 0; k < K; k++)
				sum += log(cost[k] > POLICY_MIN_COST ? cost[k] : POLICY_MIN_COST);
			cref = exp(sum / K);
		}
		for (k = 0; k < K; k++)
		{
			double		s,
						a;

			if (!avail[k])
				continue;
			s = var[k] > 0.0 ? sqrt(var[k]) : 0.0;
			if (params->cost_aware && cost)
			{
				double		rel = (cost[k] > POLICY_MIN_COST ? cost[k] :
								   POLICY_MIN_COST) / cref;

				if (rel < params->cost_floor)
					rel = params->cost_floor;
				a = mu[k] + sqrt(beta / rel) * s;
			}
			else
				a = mu[k] + sqrt_beta * s;
			if (a > best_a || best_k < 0)
			{
				best_a = a;
				best_k = k;
			}
		}
	}

	view->arm = best_k;
	if (best_k < 0)
	{
		view->mu = view->sigma = view->acq = view->ucb = view->ei = 0.0;
		view->cost = 1.0;
		view->score = -INFINITY;
		return POLICY_OK;
	}
	view->acq = best_a;
	view->mu = use_gp ? mu[best_k] : (prior_mean ? prior_mean[best_k] : 0.0);
	view->sigma = use_gp ? sqrt(var[best_k] > 0.0 ? var[best_k] : 0.0) : 0.0;
	view->cost = cost ? (cost[best_k] > POLICY_MIN_COST ? cost[best_k] :
						 POLICY_MIN_COST) : 1.0;
	view->ucb = view->mu + sqrt_beta * view->sigma;
	view->ei = PolicyExpectedImprovement(view->mu, view->sigma, view->best);
	view->score = GreedyScore(params, view);
	return POLICY_OK;
}

/* a before b in tie order: lower id, then lower index. */
static inline int
Before(const PolicyTenantView *views, int a, int b)
{
	if (views[a].id != views[b].id)
		return views[a].id < views[b].id;
	return a < b;
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
			(views[i].score == views[best].score && Before(views, i, best)))
			best = i;
	}
	return best;
}

/* Deadline of a task under fairness window w. */
static inline int64_t
Deadline(const PolicyTenantView *v, int w)
{
	return (v->last_served < 0 ? -1 : v->last_served) + w;
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
			Deadline(&views[i], w) < decision_no + n_elig)
			dl[cnt++] = Deadline(&views[i], w);
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

/*
 * Pick one task; see policy.h.  Greedy rules read view->score, which
 * PolicyBestArm fills with the same params.  One pass over the views finds
 * everything the steady state needs (the greedy argmax, the least recently
 * served task, the two earliest deadlines); a second, filtered pass runs
 * only during warm start or while tasks differ in runs in flight.
 */
int
PolicyPickTenant(const PolicyParams *params, int n, PolicyTenantView *views,
				 int64_t decision_no, uint64_t *rng)
{
	PickFilter	f = {0, INT32_MAX};
	int			n_elig = 0,
				n_unserved = 0;
	int			min_running = INT32_MAX,
				max_running = 0;
	int			greedy = -1,
				lrs = -1;
	int			pick = -1;
	int			i;

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
			(v->score == views[greedy].score && Before(views, i, greedy)))
			greedy = i;
		if (lrs < 0 || v->last_served < views[lrs].last_served ||
			(v->last_served == views[lrs].last_served && Before(views, i, lrs)))
			lrs = i;
	}
	if (n_elig == 0)
		return -1;

	switch (params->kind)
	{
		case POLICY_RR:
		case POLICY_POPULAR:
		case POLICY_FIFO:
			return lrs;
		default:
			break;
	}

	/*
	 * Restrict the greedy and random rules: first to the tasks never served
	 * (warm start, algorithm.md 3), then to those with the fewest runs in
	 * flight, so that M devices spread over M tasks before any task gets a
	 * second one while its first result is pending.  [R] not confirmed by
	 * the paper's text.
	 */
	f.unserved_only = params->warm_start && n_unserved > 0 &&
		n_unserved < n_elig;
	if (params->spread && (f.unserved_only || min_running != max_running))
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
			{
				int			n_allowed = 0;
				int			r;

				for (i = 0; i < n; i++)
					n_allowed += Allowed(&views[i], &f);
				if (n_allowed == 0)
					break;
				r = (int) (PolicyRandUniform(rng) * n_allowed);
				if (r >= n_allowed)
					r = n_allowed - 1;
				for (i = 0; i < n; i++)
				{
					if (!Allowed(&views[i], &f))
						continue;
					if (r-- == 0)
					{
						pick = i;
						break;
					}
				}
				break;
			}
		case POLICY_MAX_WIDTH:
		case POLICY_MAX_GAP:
		case POLICY_MAX_EI:
			pick = greedy;
			break;
		case POLICY_HYBRID:
			{
				int			w = params->fairness_window > 0 ?
					params->fairness_window : 3 * n_elig;
				int64_t		min_other = INT64_MAX;

				pick = greedy;
				if (params->streak_limit > 0 && pick >= 0 &&
					views[pick].streak >= params->streak_limit)
					pick = lrs;
				if (pick < 0)
					break;
				/* the earliest deadline among the others */
				if (pick != lrs)
					min_other = Deadline(&views[lrs], w);
				else
					for (i = 0; i < n; i++)
						if (i != pick && views[i].arm >= 0 &&
							Deadline(&views[i], w) < min_other)
							min_other = Deadline(&views[i], w);
				pick = FairnessFloor(views, n, n_elig, w, decision_no, pick,
									 lrs, min_other);
				if (pick == -2)
					pick = POLICY_NO_MEMORY;
				break;
			}
		default:
			pick = lrs;
			break;
	}
	return pick;
}

/* ----------------------------------------------------------------------
 * PolicyIndex: O(log n) picks for many tasks
 * ----------------------------------------------------------------------
 */

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
	return Before(views, a, b) ? a : b;
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
	return Before(views, a, b) ? a : b;
}

/* Membership bits of one view. */
static inline unsigned char
ViewState(const PolicyTenantView *v)
{
	if (v->arm < 0)
		return 0;
	return 1 | (v->last_served < 0 ? 2 : 0) | (v->n_running > 0 ? 4 : 0);
}

/* Build an index over n views (which the caller keeps and updates). */
int
PolicyIndexInit(PolicyIndex *index, PolicyTenantView *views, int n)
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
		int			leaf = (i < n && views[i].arm >= 0) ? i : -1;

		index->best[size + i] = leaf;
		index->lrs[size + i] = leaf;
		if (i < n)
		{
			unsigned char st = ViewState(&views[i]);

			index->state[i] = st;
			index->n_elig += (st & 1) != 0;
			index->n_unserved += (st & 2) != 0;
			index->n_busy += (st & 4) != 0;
		}
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
	int			node,
				leaf;

	if (index == NULL || i < 0 || i >= index->n)
		return;
	views = index->views;
	st = ViewState(&views[i]);
	index->n_elig += ((st & 1) != 0) - ((index->state[i] & 1) != 0);
	index->n_unserved += ((st & 2) != 0) - ((index->state[i] & 2) != 0);
	index->n_busy += ((st & 4) != 0) - ((index->state[i] & 4) != 0);
	index->state[i] = st;

	leaf = views[i].arm >= 0 ? i : -1;
	node = index->size + i;
	index->best[node] = leaf;
	index->lrs[node] = leaf;
	for (node /= 2; node >= 1; node /= 2)
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
				int64_t decision_no, uint64_t *rng)
{
	const PolicyTenantView *views;
	int			greedy,
				lrs,
				pick,
				w;

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
			return lrs;
		case POLICY_MAX_WIDTH:
		case POLICY_MAX_GAP:
		case POLICY_MAX_EI:
		case POLICY_HYBRID:
			break;
		default:
			return PolicyPickTenant(params, index->n, index->views,
									decision_no, rng);
	}
	/* filters active: take the general path */
	if ((params->warm_start && index->n_unserved > 0 &&
		 index->n_unserved < index->n_elig) ||
		(params->spread && index->n_busy > 0))
		return PolicyPickTenant(params, index->n, index->views, decision_no,
								rng);
	greedy = index->best[1];
	if (params->kind != POLICY_HYBRID)
		return greedy;

	/* hybrid: streak guard, then the fairness floor */
	if (index->n_unserved > 1)
		return PolicyPickTenant(params, index->n, index->views, decision_no,
								rng);
	pick = greedy;
	if (params->streak_limit > 0 && views[pick].streak >= params->streak_limit)
		pick = lrs;
	if (pick == lrs)
		return pick;
	w = params->fairness_window > 0 ? params->fairness_window :
		3 * index->n_elig;
	/*
	 * Distinct deadlines d_(1) < d_(2) < ... are all feasible one per
	 * decision iff d_(1) >= decision_no + 1; the earliest deadline among
	 * the others is the least recently served task's, since pick != lrs.
	 */
	if (Deadline(&views[lrs], w) >= decision_no + 1)
		return pick;
	return lrs;
}

/* ----------------------------------------------------------------------
 * Cost model
 * ----------------------------------------------------------------------
 */

/* Free a cost model. */
void
PolicyCostModelFree(PolicyCostModel *model)
{
	if (model == NULL)
		return;
	free(model->coef);
	GpPriorFree(&model->resid);
	memset(model, 0, sizeof(*model));
}

/* qsort comparator for doubles. */
static int
CmpDouble(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * Least squares of y on [1, u, v] (n points) with a tiny ridge on the
 * slopes; solves the 3 x 3 normal equations by Cholesky.  Falls back to
 * slope 1 on both (cost proportional to rows x features) when n < 6.
 */
static void
FitLogLinear(const double *y, const double *u, const double *v, int n,
			 double *coef)
{
	double		A[9] = {0},
				W[9],
				b[3] = {0};
	int			i,
				rc;

	if (n < 6)
	{
		double		s = 0.0;

		for (i = 0; i < n; i++)
			s += y[i] - u[i] - v[i];
		coef[0] = n > 0 ? s / n : 0.0;
		coef[1] = 1.0;
		coef[2] = 1.0;
		return;
	}
	for (i = 0; i < n; i++)
	{
		double		x[3] = {1.0, u[i], v[i]};
		int			r,
					c;

		for (r = 0; r < 3; r++)
		{
			for (c = 0; c < 3; c++)
				A[r * 3 + c] += x[r] * x[c];
			b[r] += x[r] * y[i];
		}
	}
	A[4] += 1e-6 * n;
	A[8] += 1e-6 * n;
	rc = GpCholesky(A, 3, W, NULL);
	if (rc < 0)
	{
		coef[0] = 0.0;
		coef[1] = coef[2] = 1.0;
		return;
	}
	/* forward then backward substitution with L (row-major lower) */
	b[0] = b[0] / A[0];
	b[1] = (b[1] - A[3] * b[0]) / A[4];
	b[2] = (b[2] - A[6] * b[0] - A[7] * b[1]) / A[8];
	b[2] = b[2] / A[8];
	b[1] = (b[1] - A[7] * b[2]) / A[4];
	b[0] = (b[0] - A[3] * b[1] - A[6] * b[2]) / A[0];
	coef[0] = b[0];
	coef[1] = b[1];
	coef[2] = b[2];
}

/* Fit a cost model from history runtimes and data-set sizes; see policy.h. */
int
PolicyCostModelFit(PolicyCostModel *model, PolicyCostKind kind,
				   const double *runtime, const double *sizes, int m, int K)
{
	double	   *yv = NULL,
			   *uv = NULL,
			   *vv = NULL,
			   *resid = NULL;
	int			rc = POLICY_OK;
	int			d,
				k;

	if (model == NULL)
		return POLICY_BAD_INPUT;
	memset(model, 0, sizeof(*model));
	if (K <= 0 || m < 0 || (int) kind < 0 || kind > POLICY_COST_SIZE_GP)
		return POLICY_BAD_INPUT;
	model->kind = kind;
	model->K = K;
	if (kind == POLICY_COST_NONE)
		return POLICY_OK;
	if (m > 0 && (runtime == NULL || sizes == NULL))
		return POLICY_BAD_INPUT;
	for (d = 0; d < m; d++)
	{
		if (!(sizes[2 * d] > 0.0) || !(sizes[2 * d + 1] > 0.0) ||
			!isfinite(sizes[2 * d]) || !isfinite(sizes[2 * d + 1]))
			return POLICY_BAD_INPUT;
		for (k = 0; k < K; k++)
		{
			double		c = runtime[(size_t) d * K + k];

			if (!isnan(c) && !(c > 0.0 && isfinite(c)))
				return POLICY_BAD_INPUT;
		}
	}

	model->coef = malloc(sizeof(double) * 3 * (size_t) K);
	yv = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1));
	uv = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1));
	vv = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1));
	if (model->coef == NULL || yv == NULL || uv == NULL || vv == NULL)
	{
		rc = POLICY_NO_MEMORY;
		goto done;
	}

	for (k = 0; k < K; k++)
	{
		int			n = 0;

		for (d = 0; d < m; d++)
		{
			double		c = runtime[(size_t) d * K + k];

			if (isnan(c))
				continue;
			yv[n] = log(c);
			uv[n] = log(sizes[2 * d]);
			vv[n] = log(sizes[2 * d + 1]);
			n++;
		}
		if (kind == POLICY_COST_SIZE_LINEAR)
		{
			/* median seconds per (rows x features): the crude model */
			for (d = 0; d < n; d++)
				yv[d] = yv[d] - uv[d] - vv[d];
			if (n > 0)
			{
				qsort(yv, n, sizeof(double), CmpDouble);
				model->coef[3 * k] = (n % 2) ? yv[n / 2] :
					0.5 * (yv[n / 2 - 1] + yv[n / 2]);
			}
			else
				model->coef[3 * k] = 0.0;
			model->coef[3 * k + 1] = 1.0;
			model->coef[3 * k + 2] = 1.0;
		}
		else
			FitLogLinear(yv, uv, vv, n, model->coef + 3 * k);
	}

	if (kind == POLICY_COST_SIZE_GP)
	{
		GpPriorOptions opt;
		int			grc;

		resid = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K);
		if (resid == NULL)
		{
			rc = POLICY_NO_MEMORY;
			goto done;
		}
		for (d = 0; d < m; d++)
			for (k = 0; k < K; k++)
			{
				double		c = runtime[(size_t) d * K + k];
				const double *cf = model->coef + 3 * k;

				resid[(size_t) d * K + k] = isnan(c) ? NAN :
					log(c) - (cf[0] + cf[1] * log(sizes[2 * d]) +
							  cf[2] * log(sizes[2 * d + 1]));
			}
		memset(&opt, 0, sizeof(opt));
		opt.kernel = GP_KERNEL_EMPIRICAL;
		grc = GpPriorFit(resid, m, K, &opt, &model->resid);
		if (grc < 0)
			rc = grc == GP_NO_MEMORY ? POLICY_NO_MEMORY : POLICY_GP_FAILED;
	}

done:
	free(yv);
	free(uv);
	free(vv);
	free(resid);
	if (rc < 0)
		PolicyCostModelFree(model);
	return rc;
}

/* Size part of the log-cost prediction for one task. */
int
PolicyCostBase(const PolicyCostModel *model, double rows, double features,
			   double *log_cost)
{
	int			k;

	if (model == NULL || log_cost == NULL || model->K <= 0)
		return POLICY_BAD_INPUT;
	if (model->kind == POLICY_COST_NONE)
	{
		for (k = 0; k < model->K; k++)
			log_cost[k] = 0.0;
		return POLICY_OK;
	}
	if (!(rows > 0.0) || !(features > 0.0) || !isfinite(rows) ||
		!isfinite(features))
		return POLICY_BAD_INPUT;
	for (k = 0; k < model->K; k++)
	{
		const double *cf = model->coef + 3 * k;

		log_cost[k] = cf[0] + cf[1] * log(rows) + cf[2] * log(features);
	}
	return POLICY_OK;
}

/* Cost estimate in seconds for one task; see policy.h. */
int
PolicyCostPredict(const PolicyCostModel *model, const double *log_base,
				  const GpState *resid, double *cost)
{
	int			k;

	if (model == NULL || log_base == NULL || cost == NULL || model->K <= 0)
		return POLICY_BAD_INPUT;
	if (resid != NULL && resid->K != model->K)
		return POLICY_BAD_INPUT;
	for (k = 0; k < model->K; k++)
	{
		double		r = 0.0;

		if (model->kind == POLICY_COST_SIZE_GP)
			r = resid ? resid->mu[k] : model->resid.mu0[k];
		cost[k] = exp(log_base[k] + r);
	}
	return POLICY_OK;
}

/* ----------------------------------------------------------------------
 * PolicyDecide: the one-shot entry point of the live scheduler
 * ----------------------------------------------------------------------
 */

/* Validate an arm list. */
static int
CheckArms(const int *arms, int n, int K)
{
	int			i;

	if (n < 0 || (n > 0 && arms == NULL))
		return 0;
	for (i = 0; i < n; i++)
		if (arms[i] < 0 || arms[i] >= K)
			return 0;
	return 1;
}

/* Validate a PolicyInput before any work. */
static int
CheckInput(const PolicyInput *in)
{
	int			i,
				j;

	if ((int) in->policy < 0 || in->policy >= POLICY__COUNT)
		return 0;
	if (in->K <= 0 || in->n_tasks < 0 || (in->n_tasks > 0 && in->tasks == NULL))
		return 0;
	if (in->m < 0 || (in->m > 0 && in->history == NULL))
		return 0;
	if (in->prior != NULL && in->prior->K != in->K)
		return 0;
	if (!isfinite(in->beta))
		return 0;
	for (i = 0; i < in->n_tasks; i++)
	{
		const PolicyTask *t = &in->tasks[i];

		if (!CheckArms(t->obs_arm, t->n_obs, in->K) ||
			!CheckArms(t->done_arm, t->n_done, in->K) ||
			!CheckArms(t->running_arm, t->n_running, in->K))
			return 0;
		if (t->n_obs > 0 && t->obs_y == NULL)
			return 0;
		for (j = 0; j < t->n_obs; j++)
			if (!isfinite(t->obs_y[j]))
				return 0;
		if (t->cost != NULL)
			for (j = 0; j < in->K; j++)
				if (!(t->cost[j] > 0.0) || !isfinite(t->cost[j]))
					return 0;
	}
	return 1;
}

/* Choose one (task, arm); see policy.h. */
int
PolicyDecide(const PolicyInput *in, PolicyDecision *decision)
{
	PolicyParams params;
	GpPrior		fitted;
	const GpPrior *prior = NULL;
	PolicyTenantView *views = NULL;
	unsigned char *avail = NULL;
	double	   *mu = NULL,
			   *var = NULL,
			   *colmean = NULL;
	const double *prior_mean = NULL;
	uint64_t	rng;
	int			gp_status = GP_OK;
	int			rc = POLICY_OK;
	int			K,
				i,
				j,
				pick;
	int			need_gp;

	memset(&fitted, 0, sizeof(fitted));
	if (decision == NULL)
		return POLICY_BAD_INPUT;
	memset(decision, 0, sizeof(*decision));
	decision->task = -1;
	decision->arm = -1;
	if (in == NULL || !CheckInput(in))
		return POLICY_BAD_INPUT;
	K = in->K;

	PolicyParamsDefault(&params, in->policy);
	params.acq = in->acq;
	params.cost_aware = in->cost_aware != 0;
	params.beta = in->beta;
	params.delta = in->delta;
	params.fairness_window = in->fairness_window;
	params.streak_limit = in->streak_limit;
	need_gp = in->policy != POLICY_FIFO && in->policy != POLICY_POPULAR;

	views = calloc(in->n_tasks > 0 ? in->n_tasks : 1, sizeof(PolicyTenantView));
	avail = malloc(K);
	mu = malloc(sizeof(double) * K);
	var = malloc(sizeof(double) * K);
	if (views == NULL || avail == NULL || mu == NULL || var == NULL)
	{
		rc = POLICY_NO_MEMORY;
		goto done;
	}

	if (need_gp)
	{
		if (in->prior != NULL)
			prior = in->prior;
		else
		{
			int			grc = GpPriorFit(in->history, in->m, K,
										 in->prior_options, &fitted);

			if (grc < 0)
			{
				decision->gp_status = grc;
				rc = grc == GP_NO_MEMORY ? POLICY_NO_MEMORY : POLICY_GP_FAILED;
				goto done;
			}
			gp_status = grc;
			prior = &fitted;
		}
	}
	else if (in->policy == POLICY_POPULAR)
	{
		/* popularity = prior mean: column mean over known history cells */
		if (in->prior != NULL)
			prior_mean = in->prior->mu0;
		else if (in->m > 0)
		{
			colmean = malloc(sizeof(double) * K);
			if (colmean == NULL)
			{
				rc = POLICY_NO_MEMORY;
				goto done;
			}
			for (j = 0; j < K; j++)
			{
				double		s = 0.0;
				int			c = 0;

				for (i = 0; i < in->m; i++)
				{
					double		v = in->history[(size_t) i * K + j];

					if (!isnan(v))
					{
						s += v;
						c++;
					}
				}
				/* never-seen models go last, in catalog order */
				colmean[j] = c > 0 ? s / c : -1.0;
			}
			prior_mean = colmean;
		}
	}

	for (i = 0; i < in->n_tasks; i++)
	{
		const PolicyTask *t = &in->tasks[i];
		PolicyTenantView *v = &views[i];
		int			any = 0;

		for (j = 0; j < K; j++)
		{
			avail[j] = t->eligible ? (t->eligible[j] != 0) : 1;
			any |= avail[j];
		}
		for (j = 0; j < t->n_done; j++)
			avail[t->done_arm[j]] = 0;
		for (j = 0; j < t->n_running; j++)
			avail[t->running_arm[j]] = 0;
		for (j = 0; j < t->n_obs; j++)
			avail[t->obs_arm[j]] = 0;

		v->id = t->id;
		v->n_obs = t->n_obs;
		v->last_served = t->last_served < 0 ? -1 : t->last_served;
		v->streak = t->streak;
		v->n_running = t->n_running;
		v->best = 0.0;
		for (j = 0; j < t->n_obs; j++)
			if (j == 0 || t->obs_y[j] > v->best)
				v->best = t->obs_y[j];
		v->arm = -1;
		if (!any)
			continue;

		if (need_gp)
		{
			const GpPrior *tp = t->prior != NULL ? t->prior : prior;
			int			grc = tp->K == K ?
				GpPosterior(tp, t->n_obs, t->obs_arm, t->obs_y, mu, var) :
				GP_BAD_INPUT;

			if (grc < 0)
			{
				/* one task's failure never blocks the others */
				gp_status = gp_status < 0 ? gp_status : grc;
				continue;
			}
			if (gp_status >= 0 && grc > gp_status)
				gp_status = grc;
		}
		rc = PolicyBestArm(&params, K, need_gp ? mu : NULL,
						   need_gp ? var : NULL, t->cost, avail, prior_mean, v);
		if (rc < 0)
			goto done;
	}

	rng = in->seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t) (in->decision_no + 1));
	pick = PolicyPickTenant(&params, in->n_tasks, views, in->decision_no, &rng);
	if (pick < -1)
	{
		rc = pick;
		goto done;
	}
	decision->gp_status = gp_status;
	if (pick >= 0)
	{
		decision->task = pick;
		decision->arm = views[pick].arm;
		decision->mu = views[pick].mu;
		decision->sigma = views[pick].sigma;
		decision->score = (in->policy == POLICY_MAX_WIDTH ||
						   in->policy == POLICY_MAX_GAP ||
						   in->policy == POLICY_MAX_EI ||
						   in->policy == POLICY_HYBRID) ?
			views[pick].score : views[pick].acq;
	}

done:
	if (prior == &fitted)
		GpPriorFree(&fitted);
	free(views);
	free(avail);
	free(mu);
	free(var);
	free(colmean);
	return rc;
}
