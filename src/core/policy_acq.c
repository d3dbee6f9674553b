/*-------------------------------------------------------------------------
 *
 * policy_acq.c
 *	  A task's candidate and its score: the acquisition functions over a
 *	  task's posterior (UCB, cost-aware UCB, EI, EI per second, EI bounded
 *	  by q_max), the pruned scan for a task's best arms (PolicyTopArms,
 *	  PolicyBestArm) and the greedy task score (docs/scheduler.md sections
 *	  2 and 3).
 *
 * This is the first level of a decision: every task with an arm left
 * computes its best candidate x_i and the numbers the task-picking rules
 * compare (PolicyTenantView); policy_pick.c is the second level.  Ties are
 * broken by the lowest arm index, so every acquisition is deterministic.
 *
 * IDENTIFICATION
 *	  src/core/policy_acq.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_internal.h"

/* a cost estimate is never taken below this many seconds */
#define POLICY_MIN_COST 1e-9
/* arms whose EI bounds fit on the stack in PolicyBestArm */
#define POLICY_EI_STACK 1024

/* delta of the beta_t schedule below */
#define POLICY_BETA_DELTA 0.1
/* floor of the relative cost c~ of cost-aware UCB */
#define POLICY_COST_FLOOR 0.05

/*
 * beta_t: Srinivas et al. (2010) Theorem 1 for a finite decision set,
 * beta_t = 2 log(K t^2 pi^2 / (6 delta)), delta = 0.1, with t = n_obs + 1
 * (the task's own clock; docs/scheduler.md 2, avoids log 0).
 */
double
PolicyBeta(const PolicyParams *params, int K, int n_obs)
{
	double		delta = POLICY_BETA_DELTA;
	double		t = (double) n_obs + 1.0;

	(void) params;
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
 * EI = s tau(d/s) with tau(z) = z Phi(z) + phi(z) = max(z, 0) + tau(-|z|),
 * and tau(-x) <= phi(x) / (1 + x^2) by Gordon's bound on the normal tail;
 * phi(x) <= phi(0) / P(q) with q = x^2 / 2 and P the first five terms of
 * e^q.  The tighter the bound, the fewer arms TopArmsEi evaluates exactly
 * (the pick is the same); the factor 1 + 1e-9 covers the rounding of the
 * exact EI, whose relative error is largest (about 1e-16 z^2) where P is
 * far below e^q.
 */
static inline double
EiUpperBound(double d, double v)
{
	const double phi0 = 0.3989422804014327;
	double		s,
				q,
				p;

	if (!(v > 1e-24))
		return d > 0.0 ? d : 0.0;
	s = sqrt(v);
	q = 0.5 * d * d / v;
	p = 1.0 + q * (1.0 + q * (0.5 + q * (1.0 / 6.0 + q * (1.0 / 24.0))));
	return ((d > 0.0 ? d : 0.0) + phi0 * s / (p * (1.0 + 2.0 * q))) *
		(1.0 + 1e-9);
}

/* What cost-aware EI divides by: the cost, floored. */
double
PolicyCostDivisor(const PolicyParams *params, double c)
{
	(void) params;
	return c > POLICY_MIN_COST ? c : POLICY_MIN_COST;
}

/*
 * EI of a score that cannot exceed q_max (accuracy cannot pass 1): the
 * Gaussian posterior puts mass above it, which plain EI counts as
 * improvement.  E[(min(f, q) - b)+] = EI(b) - EI(q) for b < q.  It never
 * exceeds plain EI, so the pruning bound of TopArmsEi still holds.
 */
static double
BoundedEi(const PolicyParams *params, double mu, double sigma, double best)
{
	double		e;

	if (!(params->q_max > 0.0))
		return PolicyExpectedImprovement(mu, sigma, best);
	if (best >= params->q_max)
		return 0.0;
	e = PolicyExpectedImprovement(mu, sigma, best) -
		PolicyExpectedImprovement(mu, sigma, params->q_max);
	return e > 0.0 ? e : 0.0;
}

/* EI of arm k, per second when cost-aware. */
static inline double
ArmEi(const PolicyParams *params, const double *mu, const double *var,
	  const double *cost, double best, int k)
{
	double		sd = sqrt(var[k] > 0.0 ? var[k] : 0.0);
	double		a = params->q_max_arm ? BoundedEi(params, mu[k], sd, best) :
		PolicyExpectedImprovement(mu[k], sd, best);

	if (params->cost_aware && cost)
		a /= PolicyCostDivisor(params, cost[k]);
	return a;
}

/* Greedy task score of a view's candidate; see policy.h. */
double
PolicyGreedyScore(const PolicyParams *params, const PolicyTenantView *v)
{
	double		c = params->cost_aware ? v->cost : 1.0;
	double		g;

	switch (PolicyGreedyRule(params))
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
 * Keep the n best (arm, value) pairs of a scan, best first; ties keep the
 * lower arm index (arms are offered in increasing order, except the first
 * exact EI evaluation, which the comparison below puts in its place).
 */
static inline void
TopInsert(PolicyArmScore *top, int *n, int ntop, int arm, double a)
{
	int			i;

	if (*n == ntop && !(a > top[ntop - 1].acq ||
						(a == top[ntop - 1].acq && arm < top[ntop - 1].arm)))
		return;
	i = *n < ntop ? (*n)++ : ntop - 1;
	while (i > 0 && (a > top[i - 1].acq ||
					 (a == top[i - 1].acq && arm < top[i - 1].arm)))
	{
		top[i] = top[i - 1];
		i--;
	}
	top[i].arm = arm;
	top[i].acq = a;
}

/* Value the worst kept entry must beat (-inf while there is room). */
static inline double
TopFloor(const PolicyArmScore *top, int n, int ntop)
{
	return n < ntop ? -INFINITY : top[ntop - 1].acq;
}

/* Arms TopArmsEi evaluates exactly before its pruned scan */
#define EI_FIRST 8

/*
 * Keep the m arms of largest bound seen so far in first[], largest first
 * (its length *nf at most m).
 */
static inline void
FirstInsert(int *first, double *first_ub, int *nf, int m, int k, double u)
{
	int			i;

	if (*nf == m && !(u > first_ub[m - 1]))
		return;
	i = *nf < m ? (*nf)++ : m - 1;
	for (; i > 0 && u > first_ub[i - 1]; i--)
	{
		first[i] = first[i - 1];
		first_ub[i] = first_ub[i - 1];
	}
	first[i] = k;
	first_ub[i] = u;
}

/*
 * EI (per second when cost-aware) of the available arms, pruned: the
 * first pass computes each arm's cheap upper bound, and the arms with the
 * largest bounds are evaluated exactly (they set a high floor); the second
 * evaluates exactly only the other arms whose bound reaches the ntop-th
 * best value so far.  TopInsert keeps the same arms in whatever order
 * they come.
 */
static int
TopArmsEi(const PolicyParams *params, int K, const double *mu,
		  const double *var, const double *cost, const unsigned char *avail,
		  double b, int ntop, PolicyArmScore *top, int *n)
{
	double		stack_ub[POLICY_EI_STACK];
	double	   *ub = K <= POLICY_EI_STACK ? stack_ub :
		malloc(sizeof(double) * (size_t) K);
	int			first[EI_FIRST];
	double		first_ub[EI_FIRST];
	int			m = ntop < EI_FIRST ? ntop : EI_FIRST,
				nf = 0,
				k;

	if (ub == NULL)
		return POLICY_NO_MEMORY;
	for (k = 0; k < K; k++)
	{
		double		c = 1.0;

		if (!avail[k])
			continue;
		if (params->cost_aware && cost)
			c = PolicyCostDivisor(params, cost[k]);
		ub[k] = EiUpperBound(mu[k] - b, var[k] > 0.0 ? var[k] : 0.0) / c;
		FirstInsert(first, first_ub, &nf, m, k, ub[k]);
	}
	/* evaluated now: -inf marks them for the scan (a bound is never -inf) */
	for (int i = 0; i < nf; i++)
	{
		TopInsert(top, n, ntop, first[i],
				  ArmEi(params, mu, var, cost, b, first[i]));
		ub[first[i]] = -INFINITY;
	}
	for (k = 0; k < K; k++)
	{
		if (!avail[k] || ub[k] == -INFINITY || ub[k] < TopFloor(top, *n, ntop))
			continue;
		TopInsert(top, n, ntop, k, ArmEi(params, mu, var, cost, b, k));
	}
	if (ub != stack_ub)
		free(ub);
	return POLICY_OK;
}

/* UCB (cost-aware: sqrt(beta / c~), c~ relative to the geometric mean). */
static void
TopArmsUcb(const PolicyParams *params, int K, const double *mu,
		   const double *var, const double *cost, const unsigned char *avail,
		   double beta, int ntop, PolicyArmScore *top, int *n)
{
	double		cref = 1.0;
	int			k;

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
					w = beta;

		if (!avail[k])
			continue;
		s = var[k] > 0.0 ? sqrt(var[k]) : 0.0;
		if (params->cost_aware && cost)
		{
			double		rel = (cost[k] > POLICY_MIN_COST ? cost[k] :
							   POLICY_MIN_COST) / cref;

			w = beta / (rel < POLICY_COST_FLOOR ? POLICY_COST_FLOOR : rel);
		}
		TopInsert(top, n, ntop, k, mu[k] + sqrt(w) * s);
	}
}

/* Best candidates of one task; see policy.h. */
int
PolicyTopArms(const PolicyParams *params, int K, const double *mu,
			  const double *var, const double *cost,
			  const unsigned char *avail, const double *prior_mean,
			  PolicyTenantView *view, int ntop, PolicyArmScore *top,
			  int *n_top)
{
	double		beta,
				sqrt_beta;
	int			use_gp,
				best_k,
				n = 0,
				k,
				rc;

	if (params == NULL || view == NULL || K <= 0 || avail == NULL ||
		ntop < 1 || top == NULL)
		return POLICY_BAD_INPUT;
	use_gp = params->kind != POLICY_POPULAR && params->kind != POLICY_FIFO;
	if (use_gp && (mu == NULL || var == NULL))
		return POLICY_BAD_INPUT;

	beta = PolicyBeta(params, K, view->n_obs);
	sqrt_beta = sqrt(beta);
	view->beta = beta;

	if (!use_gp)
	{
		/* popular: prior mean order; fifo: catalog order */
		for (k = 0; k < K; k++)
			if (avail[k])
				TopInsert(top, &n, ntop, k,
						  params->kind == POLICY_POPULAR && prior_mean ?
						  prior_mean[k] : -(double) k);
	}
	else if (PolicyEffectiveAcq(params) == POLICY_ACQ_EI)
	{
		rc = TopArmsEi(params, K, mu, var, cost, avail, view->best, ntop,
					   top, &n);
		if (rc < 0)
			return rc;
	}
	else
		TopArmsUcb(params, K, mu, var, cost, avail, beta, ntop, top, &n);
	if (n_top)
		*n_top = n;

	best_k = n > 0 ? top[0].arm : -1;
	view->arm = best_k;
	if (best_k < 0)
	{
		view->mu = view->sigma = view->acq = view->ucb = view->ei = 0.0;
		view->cost = 1.0;
		view->score = -INFINITY;
		return POLICY_OK;
	}
	view->acq = top[0].acq;
	view->mu = use_gp ? mu[best_k] : (prior_mean ? prior_mean[best_k] : 0.0);
	view->sigma = use_gp ? sqrt(var[best_k] > 0.0 ? var[best_k] : 0.0) : 0.0;
	view->cost = cost ? (cost[best_k] > POLICY_MIN_COST ? cost[best_k] :
						 POLICY_MIN_COST) : 1.0;
	view->ucb = view->mu + sqrt_beta * view->sigma;
	view->ei = BoundedEi(params, view->mu, view->sigma, view->best);
	view->score = PolicyGreedyScore(params, view);
	return POLICY_OK;
}

/* Best candidate of one task; see policy.h. */
int
PolicyBestArm(const PolicyParams *params, int K, const double *mu,
			  const double *var, const double *cost,
			  const unsigned char *avail, const double *prior_mean,
			  PolicyTenantView *view)
{
	PolicyArmScore top;

	return PolicyTopArms(params, K, mu, var, cost, avail, prior_mean, view,
						 1, &top, NULL);
}
