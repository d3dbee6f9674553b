/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  Acquisition, task picking, policy specs and the replay's size-based
 *	  cost model (docs/scheduler.md sections 2-4; the live scheduler's cost
 *	  model is src/core/costmodel.c, docs/scheduler.md 7.4).
 *
 * A decision has two levels.  First every task with an arm left computes
 * its best candidate x_i with an acquisition function over its posterior
 * (UCB, cost-aware UCB, EI, EI per second).  Then a policy picks one task:
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
 * Ties are broken by the lowest task id, then the lowest arm index, so
 * every rule except random is deterministic.
 *
 * IDENTIFICATION
 *	  src/core/policy.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "gp.h"
#include "policy.h"
#include "sortutil.h"

static const char *const policy_names[POLICY_NAMED_COUNT] = {
	"rr", "random", "popular", "max_width", "max_gap", "max_ei", "hybrid",
	"fifo", "default", "tenant_bo", "auto"
};

/*
 * What the named specs expand to.  "default" is the live scheduler's
 * default policy (easeml.policy): "auto", which chooses by replay on the
 * history and runs POLICY_AUTO_FALLBACK until it has chosen; docs/scheduler.md
 * says how it was chosen and on which seeds.
 */
static const char *const policy_expansions[POLICY_NAMED_COUNT - POLICY__COUNT] = {
	"auto",						/* default */
	"rr:cost:acq=ei",			/* tenant_bo */
	POLICY_AUTO_FALLBACK		/* auto, until it has chosen */
};

static const char *const rule_names[POLICY_RULE__COUNT] = {
	"none", "greedy", "fairness floor", "streak guard", "warm start",
	"round-robin", "random", "tenant's own queue"
};

static const char *const cost_kind_names[] = {
	"none", "size_linear", "size_loglinear", "size_gp"
};

/* default greedy rule under hybrid, chosen by measurement (docs/scheduler.md 3) */
#define POLICY_DEFAULT_GREEDY POLICY_MAX_EI
/* cost floor of the relative cost c~ of cost-aware UCB */
#define POLICY_DEFAULT_COST_FLOOR 0.05
/* a cost estimate is never taken below this many seconds */
#define POLICY_MIN_COST 1e-9
/* arms whose EI bounds fit on the stack in PolicyBestArm */
#define POLICY_EI_STACK 1024

/* Policy kind by name; -1 if unknown (named specs are not kinds). */
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

/* Name i of the kinds and named specs; NULL when out of range. */
const char *
PolicyName(int i)
{
	if (i < 0 || i >= POLICY_NAMED_COUNT)
		return NULL;
	return policy_names[i];
}

/* Name of a decision rule. */
const char *
PolicyRuleName(PolicyRule rule)
{
	if ((int) rule < 0 || rule >= POLICY_RULE__COUNT)
		return "?";
	return rule_names[rule];
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
	params->cost_exp = 1.0;
	params->warm_start = 1;
	params->fairness_window = 0;
	params->streak_limit = 0;
	params->greedy = POLICY_DEFAULT_GREEDY;
	params->spread = 1;
	params->q_max_arm = 1;
	params->mix_h = -1.0;
}

/* Format an error message into a caller's buffer (which may be NULL). */
static void
SpecError(char *err, size_t errlen, const char *fmt, const char *a,
		  const char *b)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, fmt, a, b);
}

/* Parse a non-negative int option value (at most 1e9). */
static int
OptInt(const char *v, int *out)
{
	char	   *end;
	long		x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (end == v || *end != '\0' || errno != 0 || x < 0 || x > 1000000000)
		return 0;
	*out = (int) x;
	return 1;
}

/* Parse a finite double option value. */
static int
OptDouble(const char *v, double *out)
{
	char	   *end;
	double		x;

	errno = 0;
	x = strtod(v, &end);
	if (end == v || *end != '\0' || errno != 0 || !isfinite(x))
		return 0;
	*out = x;
	return 1;
}

/* Apply one "key[=value]" option to params; 0 if it is not valid. */
static int
ApplyOption(PolicyParams *p, const char *key, const char *val)
{
	if (strcmp(key, "cost") == 0 && !val)
		p->cost_aware = 1;
	else if (strcmp(key, "acq") == 0 && val)
	{
		if (strcmp(val, "ucb") == 0)
			p->acq = POLICY_ACQ_UCB;
		else if (strcmp(val, "ei") == 0)
			p->acq = POLICY_ACQ_EI;
		else if (strcmp(val, "mix") == 0)
		{
			/* EI under the history mixture; the GP's EI where none */
			p->acq = POLICY_ACQ_EI;
			p->mix_arm = 1;
		}
		else
			return 0;
	}
	else if (strcmp(key, "beta") == 0 && val)
		return OptDouble(val, &p->beta) && p->beta >= 0.0;
	else if (strcmp(key, "delta") == 0 && val)
		return OptDouble(val, &p->delta) && p->delta > 0.0 && p->delta < 1.0;
	else if (strcmp(key, "first") == 0 && val)
		return OptInt(val, &p->first_mean) && p->first_mean <= 1;
	else if (strcmp(key, "ce") == 0 && val)
		return OptDouble(val, &p->cost_exp) && p->cost_exp > 0.0 && p->cost_exp <= 2.0;
	else if (strcmp(key, "floor") == 0 && val)
		return OptDouble(val, &p->cost_floor) && p->cost_floor > 0.0;
	else if (strcmp(key, "qmax") == 0 && val)
		return OptDouble(val, &p->q_max) && p->q_max > 0.0;
	else if (strcmp(key, "qarm") == 0 && val)
		return OptInt(val, &p->q_max_arm) && p->q_max_arm <= 1;
	else if (strcmp(key, "la") == 0 && val)
		return OptInt(val, &p->lookahead) && p->lookahead <= POLICY_LOOKAHEAD_MAX;
	else if (strcmp(key, "blk") == 0 && val)
		return OptInt(val, &p->block);
	else if (strcmp(key, "rg") == 0 && val)
		return OptInt(val, &p->regret_batch) && p->regret_batch <= POLICY_LOOKAHEAD_MAX;
	else if (strcmp(key, "mrg") == 0 && val)
		return OptInt(val, &p->mix_score) && p->mix_score <= 2;
	else if (strcmp(key, "msh") == 0 && val)
		return OptInt(val, &p->mix_shift) && p->mix_shift <= 1;
	else if (strcmp(key, "mbw") == 0 && val)
		return OptDouble(val, &p->mix_bw) && p->mix_bw > 0.0;
	else if (strcmp(key, "mgp") == 0 && val)
		return OptDouble(val, &p->mix_gp) && p->mix_gp >= 0.0 && p->mix_gp <= 1.0;
	else if (strcmp(key, "mnc") == 0 && val)
		return OptInt(val, &p->mix_ncap) && p->mix_ncap <= 1000;
	else if (strcmp(key, "mtau") == 0 && val)
		return OptDouble(val, &p->mix_tau) && p->mix_tau > 0.0;
	else if (strcmp(key, "mpl") == 0 && val)
		return OptInt(val, &p->mix_plan) && p->mix_plan <= 16;
	else if (strcmp(key, "mh") == 0 && val)
		return OptDouble(val, &p->mix_h) && p->mix_h >= 0.0;
	else if (strcmp(key, "lap") == 0 && val)
		return OptInt(val, &p->lookahead_prefix) && p->lookahead_prefix <= 1;
	else if (strcmp(key, "lah") == 0 && val)
		return OptDouble(val, &p->lookahead_horizon) && p->lookahead_horizon > 0.0;
	else if (strcmp(key, "tc") == 0 && val)
		return OptInt(val, &p->tenant_cost) && p->tenant_cost <= 1;
	else if (strcmp(key, "warm") == 0 && val)
		return OptInt(val, &p->warm_start) && p->warm_start <= 1;
	else if (strcmp(key, "w") == 0 && val)
		return OptInt(val, &p->fairness_window);
	else if (strcmp(key, "spread") == 0 && val)
		return OptInt(val, &p->spread) && p->spread <= 1;
	else if (strcmp(key, "s") == 0 && val)
		return OptInt(val, &p->streak_limit);
	else if (strcmp(key, "greedy") == 0 && val)
	{
		int			g = PolicyFromName(val);

		if (g != POLICY_MAX_EI && g != POLICY_MAX_GAP && g != POLICY_MAX_WIDTH)
			return 0;
		p->greedy = (PolicyKind) g;
	}
	else
		return 0;
	return 1;
}

/* Apply the ":"-separated options of buf (modified in place). */
static int
ApplyOptions(PolicyParams *p, char *buf, const char *spec, char *err,
			 size_t errlen)
{
	char	   *save = NULL;
	char	   *tok;

	for (tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
	{
		char	   *eq = strchr(tok, '=');

		if (eq)
			*eq = '\0';
		if (!ApplyOption(p, tok, eq ? eq + 1 : NULL))
		{
			if (eq)
				*eq = '=';
			SpecError(err, errlen, "bad option \"%.60s\" in \"%.60s\"", tok, spec);
			return POLICY_BAD_INPUT;
		}
	}
	return POLICY_OK;
}

/* Parse a policy spec; see policy.h. */
int
PolicyParseSpec(const char *spec, PolicyParams *params, char *err,
				size_t errlen)
{
	char		buf[128];
	char		base[128];
	char	   *colon;
	int			kind,
				i;

	if (spec == NULL || params == NULL)
	{
		SpecError(err, errlen, "no policy%s%s", "", "");
		return POLICY_BAD_INPUT;
	}
	if (spec[0] == '\0' || strlen(spec) >= sizeof(buf))
	{
		SpecError(err, errlen, "policy spec \"%.60s\" is empty or too long%s", spec, "");
		return POLICY_BAD_INPUT;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';

	/* a named spec: its expansion first, then the options given here */
	for (i = POLICY__COUNT; i < POLICY_NAMED_COUNT; i++)
		if (strcmp(buf, policy_names[i]) == 0)
		{
			snprintf(base, sizeof(base), "%s", policy_expansions[i - POLICY__COUNT]);
			if (PolicyParseSpec(base, params, err, errlen) != POLICY_OK)
				return POLICY_BAD_INPUT;
			if (strcmp(buf, "auto") == 0)
				params->auto_select = 1;
			return colon ? ApplyOptions(params, colon + 1, spec, err, errlen) :
				POLICY_OK;
		}
	kind = PolicyFromName(buf);
	if (kind < 0)
	{
		SpecError(err, errlen, "unknown policy \"%.60s\"%s", buf, "");
		return POLICY_BAD_INPUT;
	}
	PolicyParamsDefault(params, (PolicyKind) kind);
	return colon ? ApplyOptions(params, colon + 1, spec, err, errlen) :
		POLICY_OK;
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

const char *
PolicyAcqUnit(const PolicyParams *params)
{
	if (params->kind == POLICY_FIFO)
		return "catalog order (minus the model's position)";
	if (params->kind == POLICY_POPULAR)
		return "prior mean score";
	if (EffectiveAcq(params) == POLICY_ACQ_EI)
		return params->cost_aware ?
			"expected improvement of the task's best score per estimated second" :
			"expected improvement of the task's best score";
	return params->cost_aware ?
		"cost-aware upper confidence bound mu + sqrt(beta / relative cost) sigma (score)" :
		"upper confidence bound mu + sqrt(beta) sigma (score)";
}

/* Greedy task score of a view's candidate; see policy.h. */
double
PolicyGreedyScore(const PolicyParams *params, const PolicyTenantView *v)
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

/* Monte Carlo samples of a lookahead score (antithetic pairs). */
#define LOOKAHEAD_SAMPLES 2048
#define LOOKAHEAD_SEED UINT64_C(0x6c6f6f6b61686561)

/* Candidates a lookahead task score looks at; see policy.h. */
int
PolicyLookahead(const PolicyParams *params)
{
	if ((params->kind != POLICY_MAX_EI && params->kind != POLICY_HYBRID) ||
		GreedyRule(params) != POLICY_MAX_EI)
		return 0;
	if (params->lookahead_horizon > 0.0)
		return params->lookahead >= 1 ? params->lookahead : POLICY_LOOKAHEAD_MAX;
	return params->lookahead >= 2 ? params->lookahead : 0;
}

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

/* Whether params use the history mixture; see policy.h. */
int
PolicyUsesMixture(const PolicyParams *params)
{
	return params->mix_arm || PolicyMixScore(params);
}

int
PolicyReadsPosterior(const PolicyParams *params)
{
	return (params->kind != POLICY_POPULAR && params->kind != POLICY_FIFO) ||
		PolicyUsesMixture(params);
}

/*
 * Options that would hold the live worker between decisions.  mrg=2 is
 * not one any more: its model is fitted in the refit cycle's slices
 * (src/core/refit.c).  mpl=L is: the plan makes every refresh of a task's
 * candidate up to four times slower -- on the decision path, in the
 * stale-view batches after each refit, and when the policy changes, where
 * every task is refreshed at once (docs/scheduler.md 3) -- for an option
 * that never beat the plain mixture in replays.
 */
const char *
PolicyLiveRefusal(const PolicyParams *params)
{
	if (params->mix_plan > 0)
		return "Option mpl runs in replays only: its two-run plan makes every refresh of a task's candidate up to four times slower (2.1 s against 0.55 s for 1,000 tasks on 1,000 history rows), for an option that never beat the plain mixture in replays.";
	return NULL;
}

/* Whether the task score is the mixture's remaining regret; see policy.h. */
int
PolicyMixScore(const PolicyParams *params)
{
	return params->mix_score &&
		(params->kind == POLICY_MAX_EI || params->kind == POLICY_HYBRID) &&
		GreedyRule(params) == POLICY_MAX_EI;
}

/* Candidates a remaining-regret task score looks at; see policy.h. */
int
PolicyRegretBatch(const PolicyParams *params)
{
	if ((params->kind != POLICY_MAX_EI && params->kind != POLICY_HYBRID) ||
		GreedyRule(params) != POLICY_MAX_EI)
		return 0;
	return params->regret_batch;
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
	else if (EffectiveAcq(params) == POLICY_ACQ_EI)
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
 * blk=B: the task served last keeps its turn, as the greedy pick, until it
 * improves or has run B times in a row without improving (a block of runs
 * instead of one: improvements often come after several runs).
 */
static int
KeepBlock(const PolicyParams *params, const PolicyTenantView *views, int n,
		  const PickFilter *f, int greedy)
{
	int			last = -1;

	for (int i = 0; i < n; i++)
		if (views[i].last_served >= 0 &&
			(last < 0 || views[i].last_served > views[last].last_served))
			last = i;
	if (last >= 0 && views[last].arm >= 0 && Allowed(&views[last], f) &&
		views[last].streak >= 1 && views[last].streak < params->block)
		return last;
	return greedy;
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
		min_other = Deadline(&views[lrs], w);
	else
		for (int i = 0; i < n; i++)
			if (i != pick && views[i].arm >= 0 &&
				Deadline(&views[i], w) < min_other)
				min_other = Deadline(&views[i], w);
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
	if (params->block > 1 && !f.unserved_only)
		greedy = KeepBlock(params, views, n, &f, greedy);

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
	 * without idle_only), for hybrid with several unserved tasks, and
	 * with blk=B (its rule needs the task served last: O(n)).
	 */
	if ((params->warm_start && index->n_unserved > 0 &&
		 index->n_unserved < index->n_elig) ||
		(params->spread && index->n_busy > 0 &&
		 (!index->idle_only || index->n_busy == index->n_elig)) ||
		(!params->spread && index->idle_only && index->n_busy > 0) ||
		(params->kind == POLICY_HYBRID && index->n_unserved > 1) ||
		params->block > 1)
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
	if (Deadline(&views[lrs], w) >= decision_no + 1)
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

/* Sizes positive and finite; runtimes positive and finite or NaN (unknown). */
static int
CostInputsValid(const double *runtime, const double *sizes, int m, int K)
{
	if (m > 0 && (runtime == NULL || sizes == NULL))
		return 0;
	for (int d = 0; d < m; d++)
	{
		if (!(sizes[3 * d] > 0.0) || !(sizes[3 * d + 1] > 0.0) ||
			!isfinite(sizes[3 * d]) || !isfinite(sizes[3 * d + 1]))
			return 0;
		for (int k = 0; k < K; k++)
		{
			double		c = runtime[(size_t) d * K + k];

			if (!isnan(c) && !(c > 0.0 && isfinite(c)))
				return 0;
		}
	}
	return 1;
}

/*
 * size_gp: an empirical GP over the models on the log residuals of the
 * history's runtimes from each model's log-linear size fit (model->coef).
 */
static int
FitCostResiduals(PolicyCostModel *model, const double *runtime,
				 const double *sizes, int m, int K)
{
	GpPriorOptions opt;
	double	   *resid;
	int			grc;

	resid = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K);
	if (resid == NULL)
		return POLICY_NO_MEMORY;
	for (int d = 0; d < m; d++)
		for (int k = 0; k < K; k++)
		{
			double		c = runtime[(size_t) d * K + k];
			const double *cf = model->coef + 3 * k;

			resid[(size_t) d * K + k] = isnan(c) ? NAN :
				log(c) - (cf[0] + cf[1] * log(sizes[3 * d]) +
						  cf[2] * log(sizes[3 * d + 1]));
		}
	memset(&opt, 0, sizeof(opt));
	opt.kernel = GP_KERNEL_EMPIRICAL;
	grc = GpPriorFit(resid, m, K, &opt, &model->resid);
	free(resid);
	if (grc < 0)
		return grc == GP_NO_MEMORY ? POLICY_NO_MEMORY : POLICY_GP_FAILED;
	return POLICY_OK;
}

/* Fit a cost model from history runtimes and data-set sizes; see policy.h. */
int
PolicyCostModelFit(PolicyCostModel *model, PolicyCostKind kind,
				   const double *runtime, const double *sizes, int m, int K)
{
	double	   *yv = NULL,
			   *uv = NULL,
			   *vv = NULL;
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
	if (!CostInputsValid(runtime, sizes, m, K))
		return POLICY_BAD_INPUT;

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
			uv[n] = log(sizes[3 * d]);
			vv[n] = log(sizes[3 * d + 1]);
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
		rc = FitCostResiduals(model, runtime, sizes, m, K);

done:
	free(yv);
	free(uv);
	free(vv);
	if (rc < 0)
		PolicyCostModelFree(model);
	return rc;
}

/* Size part of the log-cost prediction for one task. */
int
PolicyCostBase(const PolicyCostModel *model, double rows, double features,
			   double classes, double *log_cost)
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
