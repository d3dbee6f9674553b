/*-------------------------------------------------------------------------
 *
 * policy_spec.c
 *	  What a policy is: the names of the policy kinds, named specs and
 *	  decision rules, the spec grammar "name[:option]..." parsed into
 *	  PolicyParams, the defaults, and the questions about a PolicyParams
 *	  the rest of the core asks (which greedy rule and acquisition it
 *	  uses, whether it reads the posterior or the history mixture).
 *
 * The grammar is two tables: policy_names (each name, what a named spec
 * expands to, one line of doc) and policy_options (each option: type,
 * default, range, one line of doc, where it goes in PolicyParams, and
 * whether it applies after "auto" or is refused there, and why).  The
 * parser reads them, and so do easeml-replay --help and "grammar",
 * easeml.policies() and easeml.policy_options(), and the table in
 * docs/scheduler.md, which a unit test keeps equal to
 * PolicyGrammarTable(): an option exists once, here.
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
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "policy_internal.h"

/*
 * The names: the kinds (in PolicyKind order), then the named specs with
 * what they expand to (options given after a named spec apply on top;
 * "auto" is parsed as POLICY_AUTO_FALLBACK with auto_select set).
 * "default" is the live scheduler's default policy (easeml.policy):
 * "auto", which chooses among POLICY_AUTO_CANDIDATES by replay on the
 * history and runs POLICY_AUTO_FALLBACK until it has chosen;
 * docs/scheduler.md says how it was chosen and on which seeds.
 */
typedef struct PolicyNameDef
{
	const char *name;
	const char *expansion;		/* named specs: what it stands for */
	const char *doc;
} PolicyNameDef;

static const PolicyNameDef policy_names[POLICY_NAMED_COUNT] = {
	{"rr", NULL, "tasks in turn (round-robin), each its GP-UCB candidate"},
	{"random", NULL, "a random task, its GP-UCB candidate"},
	{"popular", NULL, "the users' heuristic: candidates by prior mean score, tasks in turn"},
	{"max_width", NULL, "greedy: the task whose candidate has the widest interval sqrt(beta) sigma"},
	{"max_gap", NULL, "greedy: the task of largest UCB above its best score"},
	{"max_ei", NULL, "greedy: the task of largest expected improvement, its EI candidate"},
	{"hybrid", NULL, "the greedy rule (greedy=) under a fairness floor (w=) and a streak guard (s=)"},
	{"fifo", NULL, "untried candidates in catalog order, the least recently served task first"},
	{"default", "auto", "the live scheduler's default (easeml.policy)"},
	{"tenant_bo", "rr:cost:acq=ei", "the fair per-task baseline: each task its own cost-aware GP-EI, tasks in turn"},
	{"auto", NULL, "the best of " POLICY_AUTO_CANDIDATES " by a replay on the history; " POLICY_AUTO_FALLBACK " until it has chosen"}
};

static const char *const rule_names[POLICY_RULE__COUNT] = {
	"none", "greedy", "fairness floor", "streak guard", "warm start",
	"round-robin", "random", "tenant's own queue"
};

/* default greedy rule under hybrid, chosen by measurement (docs/scheduler.md 3) */
#define POLICY_DEFAULT_GREEDY POLICY_MAX_EI

/* Policy kind by name; -1 if unknown (named specs are not kinds). */
int
PolicyFromName(const char *name)
{
	int			i;

	if (name == NULL)
		return -1;
	for (i = 0; i < POLICY__COUNT; i++)
		if (strcmp(name, policy_names[i].name) == 0)
			return i;
	return -1;
}

/* Name i of the kinds and named specs; NULL when out of range. */
const char *
PolicyName(int i)
{
	if (i < 0 || i >= POLICY_NAMED_COUNT)
		return NULL;
	return policy_names[i].name;
}

/* One line about name i; NULL when out of range. */
const char *
PolicyNameDoc(int i)
{
	if (i < 0 || i >= POLICY_NAMED_COUNT)
		return NULL;
	return policy_names[i].doc;
}

/* What named spec i expands to; NULL for a kind or out of range. */
const char *
PolicyNameExpansion(int i)
{
	if (i < 0 || i >= POLICY_NAMED_COUNT)
		return NULL;
	return policy_names[i].expansion;
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
	params->fairness_window = 0;
	params->streak_limit = 0;
	params->greedy = POLICY_DEFAULT_GREEDY;
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

/* ----------------------------------------------------------------------
 * The options
 * ----------------------------------------------------------------------
 */

/* acq=ucb|ei|mix */
static int
SetAcq(PolicyParams *p, const char *val)
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
	return 1;
}

/* greedy=max_ei|max_gap|max_width */
static int
SetGreedy(PolicyParams *p, const char *val)
{
	int			g = PolicyFromName(val);

	if (g != POLICY_MAX_EI && g != POLICY_MAX_GAP && g != POLICY_MAX_WIDTH)
		return 0;
	p->greedy = (PolicyKind) g;
	return 1;
}

#define FIELD(f) offsetof(PolicyParams, f)
#define NOLIMIT 1e9				/* the largest integer value */

/*
 * Every option, in the order the docs list them.  FLAG and INT set an int
 * field, REAL a double one, within [lo, hi] (lo_open: lo excluded);
 * CHOICE calls set.  An option no named policy, auto candidate, test or
 * benchmark uses does not belong here (docs/scheduler.md 3).
 */
static const PolicyOption policy_options[] = {
	{"cost", POLICY_OPT_FLAG, NULL, "off",
		"cost-aware: EI per estimated second (UCB: beta over the relative cost), task scores per second",
	FIELD(cost_aware), 0, 1, 0, NULL, "auto chooses the cost mode"},
	{"acq", POLICY_OPT_CHOICE, "ucb, ei, mix", "the rule's own (EI for max_ei, hybrid; UCB otherwise)",
		"a task's candidate: GP-UCB, GP-EI, or EI under the history mixture (GP-EI where none)",
	0, 0, 0, 0, SetAcq, "auto chooses the acquisition"},
	{"qmax", POLICY_OPT_REAL, NULL, "off",
		"scores are at most X: EI counts improvement up to X only",
	FIELD(q_max), 0, INFINITY, 1, NULL, NULL},
	{"qarm", POLICY_OPT_INT, NULL, "1",
		"1: qmax bounds the candidate's EI too; 0: the task score only",
	FIELD(q_max_arm), 0, 1, 0, NULL, NULL},
	{"mrg", POLICY_OPT_INT, NULL, "0",
		"greedy EI rules: task score = the mixture's remaining regret per second (1), learned from the history (2)",
	FIELD(mix_score), 0, 2, 0, NULL, "auto chooses the task score"},
	{"msh", POLICY_OPT_INT, NULL, "0",
		"1: mixture rows shifted by the task's mean offset on its tried candidates",
	FIELD(mix_shift), 0, 1, 0, NULL, "auto chooses the mixture's settings"},
	{"mgp", POLICY_OPT_REAL, NULL, "0",
		"acq=mix: EI under (1 - A) mixture + A GP posterior",
	FIELD(mix_gp), 0, 1, 0, NULL, "auto chooses the mixture's settings"},
	{"mh", POLICY_OPT_REAL, NULL, "the bandwidth",
		"acq=mix: kernel sd of a row's prediction (0: the row's value itself)",
	FIELD(mix_h), 0, INFINITY, 0, NULL, "auto chooses the mixture's settings"},
	{"w", POLICY_OPT_INT, NULL, "0 (3 x tasks)",
		"hybrid: no task with candidates left waits more than N decisions",
	FIELD(fairness_window), 0, NOLIMIT, 0, NULL, NULL},
	{"s", POLICY_OPT_INT, NULL, "0 (off)",
		"hybrid: after N greedy picks of a task in a row without improving, serve the least recently served",
	FIELD(streak_limit), 0, NOLIMIT, 0, NULL, NULL},
	{"greedy", POLICY_OPT_CHOICE, "max_ei, max_gap, max_width", "max_ei",
		"hybrid: the greedy rule it guards",
	0, 0, 0, 0, SetGreedy, "auto chooses the greedy rule"},
	{"xg", POLICY_OPT_REAL, NULL, "0 (off)",
		"explore only when it pays: a task runs its anchor unless its candidate's acquisition exceeds X times the anchor's (src/core/policy_explore.c)",
	FIELD(explore_gate), 0, INFINITY, 0, NULL, "auto chooses when to explore"},
	{"xo", POLICY_OPT_INT, NULL, "0",
		"xg's anchor: the untried candidate of largest prior mean (0) or GP posterior mean (1)",
	FIELD(explore_order), 0, 1, 0, NULL, "auto chooses when to explore"}
};

#define POLICY_OPTION_COUNT ((int) (sizeof(policy_options) / sizeof(policy_options[0])))

int
PolicyOptionCount(void)
{
	return POLICY_OPTION_COUNT;
}

const PolicyOption *
PolicyOptionAt(int i)
{
	if (i < 0 || i >= POLICY_OPTION_COUNT)
		return NULL;
	return &policy_options[i];
}

/* The type of an option as the docs name it. */
const char *
PolicyOptionType(const PolicyOption *o)
{
	switch (o->type)
	{
		case POLICY_OPT_FLAG:
			return "flag";
		case POLICY_OPT_INT:
			return "integer";
		case POLICY_OPT_REAL:
			return "real";
		case POLICY_OPT_CHOICE:
			return "choice";
	}
	return "?";
}

/* A bound as text: integers without a fraction, "inf" for infinity. */
static void
BoundText(double x, char *buf, size_t len)
{
	if (isinf(x))
		snprintf(buf, len, "inf");
	else
		snprintf(buf, len, "%.15g", x);
}

/* The values an option takes, as text ("0 to 2", "(0, 1]", "ucb, ei, mix"). */
void
PolicyOptionRange(const PolicyOption *o, char *buf, size_t len)
{
	char		lo[32],
				hi[32];

	BoundText(o->lo, lo, sizeof(lo));
	BoundText(o->hi, hi, sizeof(hi));
	switch (o->type)
	{
		case POLICY_OPT_FLAG:
			snprintf(buf, len, "no value");
			break;
		case POLICY_OPT_CHOICE:
			snprintf(buf, len, "%s", o->values);
			break;
		case POLICY_OPT_INT:
			if (o->hi >= NOLIMIT)
				snprintf(buf, len, "%s or more", lo);
			else
				snprintf(buf, len, "%s to %s", lo, hi);
			break;
		case POLICY_OPT_REAL:
			if (isinf(o->hi))
				snprintf(buf, len, "%s %s", o->lo_open ? ">" : ">=", lo);
			else
				snprintf(buf, len, "%s%s, %s]", o->lo_open ? "(" : "[", lo, hi);
			break;
	}
}

/*
 * What an option does after "auto", as text: "applies to every candidate"
 * or "refused: " and why.
 */
void
PolicyOptionAfterAuto(const PolicyOption *o, char *buf, size_t len)
{
	if (o->auto_refused == NULL)
		snprintf(buf, len, "applies to every candidate");
	else
		snprintf(buf, len, "refused: %s", o->auto_refused);
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
ApplyOption(PolicyParams *p, const PolicyOption *o, const char *val)
{
	char	   *field = (char *) p + o->offset;
	int			i;
	double		x;

	switch (o->type)
	{
		case POLICY_OPT_FLAG:
			if (val)
				return 0;
			*(int *) field = 1;
			return 1;
		case POLICY_OPT_CHOICE:
			return val && o->set(p, val);
		case POLICY_OPT_INT:
			if (!val || !OptInt(val, &i) || i < o->lo || i > o->hi)
				return 0;
			*(int *) field = i;
			return 1;
		case POLICY_OPT_REAL:
			if (!val || !OptDouble(val, &x) || x < o->lo || x > o->hi ||
				(o->lo_open && x == o->lo))
				return 0;
			*(double *) field = x;
			return 1;
	}
	return 0;
}

/* The options that apply after "auto", as "qmax, qarm, w, s". */
static void
AutoOptionNames(char *buf, size_t len)
{
	size_t		used = 0;

	buf[0] = '\0';
	for (int i = 0; i < POLICY_OPTION_COUNT && used < len; i++)
		if (policy_options[i].auto_refused == NULL)
			used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
							 policy_options[i].name);
}

/*
 * Apply the ":"-separated options of buf (modified in place).  After
 * "auto" (p->auto_select), an option auto_refused names is refused, and
 * the others are marked in p->auto_options.
 */
static int
ApplyOptions(PolicyParams *p, char *buf, const char *spec, char *err,
			 size_t errlen)
{
	char	   *save = NULL;
	char	   *tok;

	for (tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
	{
		char	   *eq = strchr(tok, '=');
		const PolicyOption *o = NULL;
		int			oi = -1;

		if (eq)
			*eq = '\0';
		for (int i = 0; i < POLICY_OPTION_COUNT && o == NULL; i++)
			if (strcmp(tok, policy_options[i].name) == 0)
				o = &policy_options[oi = i];
		if (o != NULL && p->auto_select && o->auto_refused != NULL)
		{
			char		names[64];

			AutoOptionNames(names, sizeof(names));
			if (err != NULL && errlen > 0)
				snprintf(err, errlen, "option \"%s\" cannot follow auto in \"%.60s\": %s among %s (after auto only %s apply, to every candidate)",
						 o->name, spec, o->auto_refused, POLICY_AUTO_CANDIDATES,
						 names);
			return POLICY_BAD_INPUT;
		}
		if (o != NULL && p->auto_select)
			p->auto_options |= 1u << oi;
		if (o == NULL || !ApplyOption(p, o, eq ? eq + 1 : NULL))
		{
			char		what[160];

			if (o == NULL)
				snprintf(what, sizeof(what), "no option \"%.40s\"", tok);
			else
			{
				char		range[64];

				PolicyOptionRange(o, range, sizeof(range));
				snprintf(what, sizeof(what), "%s takes %s%s", o->name,
						 o->type == POLICY_OPT_FLAG ? "" : "a value: ", range);
			}
			if (eq)
				*eq = '=';
			if (err != NULL && errlen > 0)
				snprintf(err, errlen, "bad option \"%.60s\" in \"%.60s\": %s",
						 tok, spec, what);
			return POLICY_BAD_INPUT;
		}
	}
	return POLICY_OK;
}

/*
 * After "auto" with options: every spec it may run, each candidate and
 * the fallback with the options, must parse and fit (a safeguard: the
 * options that apply are short).
 */
static int
CheckAutoOptions(const PolicyParams *params, char *err, size_t errlen)
{
	char		opts[POLICY_SPEC_LEN];
	char		list[sizeof(POLICY_AUTO_CANDIDATES) + sizeof(POLICY_AUTO_FALLBACK) + 1];
	char		run[POLICY_SPEC_LEN];

	if (params->auto_options == 0)
		return POLICY_OK;
	if (PolicyAutoOptions(params, opts, sizeof(opts)) >= sizeof(opts))
	{
		SpecError(err, errlen, "auto's options are too long%s%s", "", "");
		return POLICY_BAD_INPUT;
	}
	snprintf(list, sizeof(list), "%s,%s", POLICY_AUTO_CANDIDATES, POLICY_AUTO_FALLBACK);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
		 tok = strtok_r(NULL, ",", &save))
		if (PolicyAutoSpec(tok, opts, run, sizeof(run), err, errlen) != POLICY_OK)
			return POLICY_BAD_INPUT;
	return POLICY_OK;
}

/* Parse a policy spec; see policy.h. */
int
PolicyParseSpec(const char *spec, PolicyParams *params, char *err,
				size_t errlen)
{
	char		buf[POLICY_SPEC_LEN];
	char		base[POLICY_SPEC_LEN];
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
		if (strcmp(buf, policy_names[i].name) == 0)
		{
			/* "auto" runs its fallback until its caller has chosen */
			snprintf(base, sizeof(base), "%s", policy_names[i].expansion ?
					 policy_names[i].expansion : POLICY_AUTO_FALLBACK);
			if (PolicyParseSpec(base, params, err, errlen) != POLICY_OK)
				return POLICY_BAD_INPUT;
			if (strcmp(buf, "auto") == 0)
				params->auto_select = 1;
			if (colon && ApplyOptions(params, colon + 1, spec, err, errlen) != POLICY_OK)
				return POLICY_BAD_INPUT;
			return params->auto_select ? CheckAutoOptions(params, err, errlen) :
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

/* A finite double as the shortest text strtod reads back exactly. */
static void
RealText(double x, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++)
	{
		snprintf(buf, len, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

/* auto's options as ":key=value"...; see policy.h. */
size_t
PolicyAutoOptions(const PolicyParams *params, char *buf, size_t len)
{
	size_t		used = 0;

	if (buf != NULL && len > 0)
		buf[0] = '\0';
	for (int i = 0; i < POLICY_OPTION_COUNT; i++)
	{
		const PolicyOption *o = &policy_options[i];
		const char *field = (const char *) params + o->offset;
		char		val[40];
		int			n;

		if (!(params->auto_options & (1u << i)) || o->auto_refused != NULL)
			continue;
		switch (o->type)
		{
			case POLICY_OPT_FLAG:
				val[0] = '\0';
				break;
			case POLICY_OPT_INT:
				snprintf(val, sizeof(val), "=%d", *(const int *) field);
				break;
			case POLICY_OPT_REAL:
				val[0] = '=';
				RealText(*(const double *) field, val + 1, sizeof(val) - 1);
				break;
			case POLICY_OPT_CHOICE:
				continue;		/* none applies after auto (a unit test) */
		}
		n = snprintf(buf != NULL && used < len ? buf + used : NULL,
					 buf != NULL && used < len ? len - used : 0,
					 ":%s%s", o->name, val);
		if (n > 0)
			used += (size_t) n;
	}
	return used;
}

/* The spec auto runs for a candidate; see policy.h. */
int
PolicyAutoSpec(const char *candidate, const char *options, char *buf,
			   size_t len, char *err, size_t errlen)
{
	PolicyParams p;
	int			n;

	if (options == NULL)
		options = "";
	n = snprintf(buf, len, "%s%s", candidate, options);
	if (n < 0 || (size_t) n >= len || n >= POLICY_SPEC_LEN)
	{
		SpecError(err, errlen, "policy \"%.60s\" with auto's options \"%.60s\" is too long",
				  candidate, options);
		if (len > 0)
			buf[0] = '\0';
		return POLICY_BAD_INPUT;
	}
	return PolicyParseSpec(buf, &p, err, errlen);
}

/* What an auto setting runs after choice chosen; see policy.h. */
const char *
PolicyAutoRunning(const PolicyParams *params, const char *chosen, char *buf,
				  size_t len)
{
	char		opts[POLICY_SPEC_LEN];
	char		list[sizeof(POLICY_AUTO_CANDIDATES) + sizeof(POLICY_AUTO_FALLBACK) + 1];
	char		base[POLICY_SPEC_LEN];
	size_t		best = 0;

	snprintf(base, sizeof(base), "%s", POLICY_AUTO_FALLBACK);
	if (chosen != NULL)
	{
		/* the candidate chosen stands for: the longest that prefixes it */
		snprintf(list, sizeof(list), "%s,%s", POLICY_AUTO_CANDIDATES, POLICY_AUTO_FALLBACK);
		for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
			 tok = strtok_r(NULL, ",", &save))
		{
			size_t		n = strlen(tok);

			if (n > best && strncmp(chosen, tok, n) == 0 &&
				(chosen[n] == '\0' || chosen[n] == ':'))
			{
				best = n;
				snprintf(base, sizeof(base), "%s", tok);
			}
		}
		if (best == 0)
		{
			/* a choice among another list: as recorded */
			snprintf(buf, len, "%s", chosen);
			return buf;
		}
	}
	PolicyAutoOptions(params, opts, sizeof(opts));
	if (PolicyAutoSpec(base, opts, buf, len, NULL, 0) != POLICY_OK)
		snprintf(buf, len, "%s", base);
	return buf;
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

/* Whether the task score is the mixture's remaining regret; see policy.h. */
int
PolicyMixScore(const PolicyParams *params)
{
	return params->mix_score &&
		(params->kind == POLICY_MAX_EI || params->kind == POLICY_HYBRID) &&
		PolicyGreedyRule(params) == POLICY_MAX_EI;
}

/* ----------------------------------------------------------------------
 * The grammar as text
 * ----------------------------------------------------------------------
 */

/* An appending snprintf: counts what does not fit. */
typedef struct TextBuf
{
	char	   *buf;
	size_t		len;
	size_t		used;
} TextBuf;

static void
Append(TextBuf *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
Append(TextBuf *t, const char *fmt, ...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(t->used < t->len ? t->buf + t->used : NULL,
				  t->used < t->len ? t->len - t->used : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->used += (size_t) n;
}

/* The grammar's two tables; see policy.h. */
size_t
PolicyGrammarTable(char *buf, size_t len, int markdown)
{
	TextBuf		t = {buf, len, 0};

	if (buf != NULL && len > 0)
		buf[0] = '\0';
	if (markdown)
		Append(&t, "| name | stands for | what it does |\n|---|---|---|\n");
	else
		Append(&t, "policies (a spec is NAME[:OPTION]...):\n");
	for (int i = 0; i < POLICY_NAMED_COUNT; i++)
	{
		const PolicyNameDef *n = &policy_names[i];

		if (markdown)
			Append(&t, "| `%s` | %s%s%s | %s |\n", n->name,
				   n->expansion ? "`" : "", n->expansion ? n->expansion : "",
				   n->expansion ? "`" : "", n->doc);
		else
			Append(&t, "  %-10s %s%s%s%s\n", n->name,
				   n->expansion ? "= " : "", n->expansion ? n->expansion : "",
				   n->expansion ? ": " : "", n->doc);
	}
	if (markdown)
		Append(&t, "\n| option | type | default | values | what it does | after `auto` |\n|---|---|---|---|---|---|\n");
	else
		Append(&t, "options (KEY or KEY=VALUE, applied in order; after auto, each applies to\n"
			   "every candidate and so to its choice, or is refused):\n");
	for (int i = 0; i < POLICY_OPTION_COUNT; i++)
	{
		const PolicyOption *o = &policy_options[i];
		char		range[64];
		char		after[96];

		PolicyOptionRange(o, range, sizeof(range));
		PolicyOptionAfterAuto(o, after, sizeof(after));
		if (markdown)
			Append(&t, "| `%s` | %s | %s | %s | %s | %s |\n", o->name,
				   PolicyOptionType(o), o->def, range, o->doc, after);
		else
			Append(&t, "  %-7s %s (%s; default %s): %s; after auto: %s\n", o->name,
				   PolicyOptionType(o), range, o->def, o->doc, after);
	}
	return t.used;
}
