/*-------------------------------------------------------------------------
 *
 * policy_spec.c
 *	  What a policy is: the names of the policy kinds, named specs and
 *	  decision rules, the spec grammar "name[:option]..." parsed into
 *	  PolicyParams (policy.h lists the options), the defaults, and the
 *	  questions about a PolicyParams the rest of the core asks (which
 *	  greedy rule and acquisition it uses, whether it reads the posterior
 *	  or the history mixture, whether the live worker runs it).
 *
 * Kept apart from the math (policy_acq.c, policy_pick.c) so that the
 * grammar can change without touching how candidates are scored.
 *
 * IDENTIFICATION
 *	  src/core/policy_spec.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_internal.h"

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

/* default greedy rule under hybrid, chosen by measurement (docs/scheduler.md 3) */
#define POLICY_DEFAULT_GREEDY POLICY_MAX_EI
/* cost floor of the relative cost c~ of cost-aware UCB */
#define POLICY_DEFAULT_COST_FLOOR 0.05

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

/* The greedy rule a policy scores tasks with (hybrid: the one it guards). */
PolicyKind
PolicyGreedyRule(const PolicyParams *params)
{
	PolicyKind	g = params->kind;

	if (g == POLICY_HYBRID)
		g = params->greedy;
	if (g != POLICY_MAX_WIDTH && g != POLICY_MAX_GAP && g != POLICY_MAX_EI)
		g = POLICY_DEFAULT_GREEDY;
	return g;
}

/* Acquisition the policy actually uses. */
PolicyAcq
PolicyEffectiveAcq(const PolicyParams *params)
{
	PolicyKind	kind = params->kind;

	if (params->acq != POLICY_ACQ_DEFAULT)
		return params->acq;
	/* hybrid follows the greedy rule it guards */
	if (kind == POLICY_HYBRID)
		kind = PolicyGreedyRule(params);
	return kind == POLICY_MAX_EI ? POLICY_ACQ_EI : POLICY_ACQ_UCB;
}

const char *
PolicyAcqUnit(const PolicyParams *params)
{
	if (params->kind == POLICY_FIFO)
		return "catalog order (minus the model's position)";
	if (params->kind == POLICY_POPULAR)
		return "prior mean score";
	if (PolicyEffectiveAcq(params) == POLICY_ACQ_EI)
		return params->cost_aware ?
			"expected improvement of the task's best score per estimated second" :
			"expected improvement of the task's best score";
	return params->cost_aware ?
		"cost-aware upper confidence bound mu + sqrt(beta / relative cost) sigma (score)" :
		"upper confidence bound mu + sqrt(beta) sigma (score)";
}

/* Candidates a lookahead task score looks at; see policy.h. */
int
PolicyLookahead(const PolicyParams *params)
{
	if ((params->kind != POLICY_MAX_EI && params->kind != POLICY_HYBRID) ||
		PolicyGreedyRule(params) != POLICY_MAX_EI)
		return 0;
	if (params->lookahead_horizon > 0.0)
		return params->lookahead >= 1 ? params->lookahead : POLICY_LOOKAHEAD_MAX;
	return params->lookahead >= 2 ? params->lookahead : 0;
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
		PolicyGreedyRule(params) == POLICY_MAX_EI;
}

/* Candidates a remaining-regret task score looks at; see policy.h. */
int
PolicyRegretBatch(const PolicyParams *params)
{
	if ((params->kind != POLICY_MAX_EI && params->kind != POLICY_HYBRID) ||
		PolicyGreedyRule(params) != POLICY_MAX_EI)
		return 0;
	return params->regret_batch;
}
