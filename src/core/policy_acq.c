/*-------------------------------------------------------------------------
 *
 * policy_acq.c
 *	  A task's candidate and its score: the acquisition functions over a
 *	  task's posterior (UCB, cost-aware UCB, EI, EI per second, EI bounded
 *	  by q_max), the pruned scan for a task's best arms (PolicyTopArms,
 *	  PolicyBestArm), the greedy task score, and the batch task scores
 *	  (lookahead la=M/lah=X, remaining regret rg=M) estimated by Monte
 *	  Carlo (docs/scheduler.md sections 2 and 3).
 *
 * This is the first level of a decision: every task with an arm left
 * computes its best candidate x_i and the numbers the task-picking rules
 * compare (PolicyTenantView); policy_pick.c is the second level.  Ties are
 * broken by the lowest arm index, so every acquisition is deterministic
 * (the Monte Carlo scores use a fixed seed).
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

/*
 * beta_t.  A positive params->beta is used as is.  Otherwise Srinivas et
 * al. (2010) Theorem 1 for a finite decision set,
 * beta_t = 2 log(K t^2 pi^2 / (6 delta)), with t = n_obs + 1 (the task's
 * own clock; docs/scheduler.md 2, avoids log 0).
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

/* What cost-aware EI divides by: cost^ce (ce = 1 unless set). */
double
PolicyCostDivisor(const PolicyParams *params, double c)
{
	c = c > POLICY_MIN_COST ? c : POLICY_MIN_COST;
	if (params->cost_exp > 0.0 && params->cost_exp != 1.0)
		return pow(c, params->cost_exp);
	return c;
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
	int			tc = params->tenant_cost < 0 ? params->cost_aware :
		params->tenant_cost;
	double		c = tc ? v->cost : 1.0;
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

/* Monte Carlo samples of a lookahead score (antithetic pairs). */
#define LOOKAHEAD_SAMPLES 2048
#define LOOKAHEAD_SEED UINT64_C(0x6c6f6f6b61686561)

/* The first candidates within the horizon, at least one; see policy.h. */
int
PolicyLookaheadCut(const PolicyParams *params, int n, const double *cost)
{
	double		sum = 0.0;
	int			j;

	if (!(params->lookahead_horizon > 0.0) || cost == NULL)
		return n;
	for (j = 0; j < n; j++)
	{
		sum += cost[j];
		if (j > 0 && sum > params->lookahead_horizon)
			break;
	}
	return j;
}

/*
 * Lower factor of an m x m covariance in place (row-major), positive
 * semi-definite: a pivot that is not positive (an arm the others already
 * determine) gets a zero column instead of failing.
 */
static void
CholeskyPsd(double *a, int m)
{
	for (int j = 0; j < m; j++)
	{
		double		d = a[j * m + j];

		for (int k = 0; k < j; k++)
			d -= a[j * m + k] * a[j * m + k];
		d = d > 1e-14 * (1.0 + fabs(a[j * m + j])) ? sqrt(d) : 0.0;
		a[j * m + j] = d;
		for (int i = j + 1; i < m; i++)
		{
			double		c = a[i * m + j];

			for (int k = 0; k < j; k++)
				c -= a[i * m + k] * a[j * m + k];
			a[i * m + j] = d > 0.0 ? c / d : 0.0;
		}
		for (int k = j + 1; k < m; k++)
			a[j * m + k] = 0.0;
	}
}

/*
 * E[(min(max_{j<=i} f_j, q_max) - best)+] of every prefix i + 1 of the
 * batch, into g[0..m-1], by antithetic Monte Carlo (one set of samples).
 */
static void
BatchEiMc(const PolicyParams *params, int m, const double *mu,
		  const double *L, double best, double *g)
{
	double		z[POLICY_LOOKAHEAD_MAX];
	double		cap = params->q_max > 0.0 ? params->q_max : INFINITY;
	uint64_t	rng = LOOKAHEAD_SEED;

	for (int i = 0; i < m; i++)
		g[i] = 0.0;
	for (int s = 0; s < LOOKAHEAD_SAMPLES / 2; s++)
	{
		double		hi[2] = {-INFINITY, -INFINITY};

		for (int j = 0; j < m; j += 2)
		{
			/* Box-Muller: two normals per pair of uniforms */
			double		r = sqrt(-2.0 * log(1.0 - PolicyRandUniform(&rng)));
			double		t = 6.283185307179586 * PolicyRandUniform(&rng);

			z[j] = r * cos(t);
			if (j + 1 < m)
				z[j + 1] = r * sin(t);
		}
		for (int i = 0; i < m; i++)
		{
			double		e = 0.0;

			for (int k = 0; k <= i; k++)
				e += L[i * m + k] * z[k];
			hi[0] = fmax(hi[0], mu[i] + e);
			hi[1] = fmax(hi[1], mu[i] - e);
			for (int a = 0; a < 2; a++)
				g[i] += fmax(fmin(hi[a], cap) - best, 0.0);
		}
	}
	for (int i = 0; i < m; i++)
		g[i] /= 2.0 * (LOOKAHEAD_SAMPLES / 2);
}

/* Lookahead task score of a batch; see policy.h. */
int
PolicyLookaheadScore(const PolicyParams *params, int m, const double *mu,
					 const double *cov, const double *cost,
					 PolicyTenantView *view, double *ei)
{
	double		L[POLICY_LOOKAHEAD_MAX * POLICY_LOOKAHEAD_MAX];
	double		g[POLICY_LOOKAHEAD_MAX];
	int			tc;
	int			first;
	double		c = 0.0;

	if (params == NULL || view == NULL || mu == NULL || cov == NULL ||
		m < 1 || m > POLICY_LOOKAHEAD_MAX)
		return POLICY_BAD_INPUT;
	if (params->q_max > 0.0 && view->best >= params->q_max)
		memset(g, 0, sizeof(double) * m);
	else if (m > 1)
	{
		memcpy(L, cov, sizeof(double) * (size_t) m * m);
		CholeskyPsd(L, m);
		BatchEiMc(params, m, mu, L, view->best, g);
	}
	if (m == 1 || params->lookahead_prefix)
		g[0] = BoundedEi(params, mu[0], sqrt(fmax(cov[0], 0.0)), view->best);
	tc = params->tenant_cost < 0 ? params->cost_aware : params->tenant_cost;
	/* la=M: the whole batch; lap=1: its best prefix (a Gittins-like index) */
	first = params->lookahead_prefix ? 0 : m - 1;
	view->score = -INFINITY;
	for (int j = 0; j < m; j++)
	{
		c += cost ? fmax(cost[j], POLICY_MIN_COST) : 1.0;
		if (j >= first && g[j] / (tc ? c : 1.0) > view->score)
		{
			view->score = g[j] / (tc ? c : 1.0);
			if (ei)
				*ei = g[j];
		}
	}
	return POLICY_OK;
}

/* Remaining-regret task score; see policy.h. */
int
PolicyRegretScore(const PolicyParams *params, int m, const double *mu,
				  const double *cov, PolicyTenantView *view, double *regret)
{
	double		L[POLICY_LOOKAHEAD_MAX * POLICY_LOOKAHEAD_MAX];
	double		g[POLICY_LOOKAHEAD_MAX];
	int			tc;

	if (params == NULL || view == NULL || mu == NULL || cov == NULL ||
		m < 1 || m > POLICY_LOOKAHEAD_MAX)
		return POLICY_BAD_INPUT;
	if (params->q_max > 0.0 && view->best >= params->q_max)
		g[m - 1] = 0.0;
	else if (m == 1)
		g[0] = BoundedEi(params, mu[0], sqrt(fmax(cov[0], 0.0)), view->best);
	else
	{
		memcpy(L, cov, sizeof(double) * (size_t) m * m);
		CholeskyPsd(L, m);
		BatchEiMc(params, m, mu, L, view->best, g);
	}
	tc = params->tenant_cost < 0 ? params->cost_aware : params->tenant_cost;
	/* what is left to gain, per second of the run that starts on it */
	view->score = g[m - 1] / (tc ? fmax(view->cost, POLICY_MIN_COST) : 1.0);
	if (regret)
		*regret = g[m - 1];
	return POLICY_OK;
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

			w = beta / (rel < params->cost_floor ? params->cost_floor : rel);
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

	if (use_gp && params->first_mean && view->n_obs == 0)
	{
		/* warm start by prior mean: no result yet, the mean decides */
		for (k = 0; k < K; k++)
			if (avail[k])
				TopInsert(top, &n, ntop, k, mu[k]);
	}
	else if (!use_gp)
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
