/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  Multi-tenant model selection policies: policy specs, acquisition and
 *	  task picking (docs/scheduler.md sections 2 and 3).
 *
 * Plain C, no PostgreSQL headers.  src/core/decision_*.c assembles decisions
 * from these building blocks for both the live scheduler and the replay
 * simulator.  One module in five files:
 *
 *	 policy_spec.c   names, the spec grammar, what a PolicyParams means
 *	 policy_acq.c    a task's candidate: acquisition, greedy and batch scores
 *	 policy_pick.c   picking one task (PolicyPickTenant), the seeded rng
 *	 policy_index.c  the same picks in O(log n) (PolicyIndex)
 *	 policy_explore.c  explore only when it pays (xg=X): the anchor and the gate
 *
 * The size-based cost model of replays is sizecost.h.
 *
 * IDENTIFICATION
 *	  src/core/policy.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_POLICY_H
#define EASEML_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* Policies (task-picking rules); names as accepted by PolicyFromName(). */
typedef enum PolicyKind
{
	POLICY_RR = 0,				/* "rr": tasks round-robin, GP-UCB arm */
	POLICY_RANDOM,				/* "random" */
	POLICY_POPULAR,				/* "popular": users' heuristic, fixed order
								 * by prior mean, tasks round-robin */
	POLICY_MAX_WIDTH,			/* "max_width" */
	POLICY_MAX_GAP,				/* "max_gap" */
	POLICY_MAX_EI,				/* "max_ei" */
	POLICY_HYBRID,				/* "hybrid": greedy + fairness floor */
	POLICY_FIFO,				/* "fifo": untried arms in catalog order,
								 * least recently served task first */
	POLICY__COUNT
} PolicyKind;

/*
 * Named specs besides the kinds: PolicyName(i) for POLICY__COUNT <= i <
 * POLICY_NAMED_COUNT, expanded by PolicyParseSpec.  "default" is the live
 * scheduler's default policy, "auto": choose among POLICY_AUTO_CANDIDATES
 * by replaying them on the installed history (src/core/autopolicy.h), with
 * POLICY_AUTO_FALLBACK's parameters until a choice is made; "tenant_bo" is the
 * fair per-tenant baseline (every task its own cost-aware GP-EI, tasks
 * served round-robin).
 */
#define POLICY_NAMED_COUNT (POLICY__COUNT + 3)

/*
 * What "auto" chooses from, in this order; the first of equals wins.  The
 * first explores only when it pays (xg=1.5:xo=1, src/core/policy_explore.c;
 * chosen on seeds 101-110, docs/scheduler.md section 3).
 */
#define POLICY_AUTO_CANDIDATES "hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2:xg=1.5:xo=1,popular"

/*
 * What "auto" runs where its replay cannot choose -- before its first
 * choice, with too little history, or where the replay would pass its
 * work limit (src/core/replay.h) -- in the live worker and in replays alike:
 * the users' heuristic itself, so that no fallback is slower than it.
 */
#define POLICY_AUTO_FALLBACK "popular"

/*
 * Acquisition for the arm of one task.  DEFAULT picks the policy's own: EI
 * for max_ei (and hybrid, which follows its greedy rule), UCB for the
 * others.  With cost_aware set, UCB becomes mu + sqrt(beta / c~) sigma
 * (c~ = cost relative to the task's geometric-mean cost, floored) and EI
 * becomes EI / c.
 */
typedef enum PolicyAcq
{
	POLICY_ACQ_DEFAULT = 0,
	POLICY_ACQ_UCB,
	POLICY_ACQ_EI
} PolicyAcq;

/* The rule that decided a pick (recorded with every live decision). */
typedef enum PolicyRule
{
	POLICY_RULE_NONE = 0,
	POLICY_RULE_GREEDY,			/* highest greedy task score */
	POLICY_RULE_FAIRNESS,		/* hybrid's fairness floor overrode greedy */
	POLICY_RULE_STREAK,			/* hybrid's streak guard overrode greedy */
	POLICY_RULE_WARM_START,		/* a task never served goes first */
	POLICY_RULE_ROUND_ROBIN,	/* least recently served task */
	POLICY_RULE_RANDOM,
	POLICY_RULE_QUEUE,			/* a run the tenant queued (set by the
								 * worker, never by the policy) */
	POLICY_RULE__COUNT
} PolicyRule;

extern const char *PolicyRuleName(PolicyRule rule);

/*
 * Every knob of a policy; PolicyParamsDefault() fills the defaults and
 * PolicyParseSpec() sets the options (policy_spec.c's option table, the one
 * list of them: PolicyOptionAt()).
 */
typedef struct PolicyParams
{
	PolicyKind	kind;
	PolicyAcq	acq;			/* DEFAULT: see PolicyAcq */
	int			cost_aware;		/* cost in the arm acquisition, and greedy
								 * task scores per second of the candidate */
	double		q_max;			/* > 0: scores cannot exceed it (accuracy:
								 * 1), so EI counts improvement up to it
								 * only, EI(best) - EI(q_max); 0: off */
	int			q_max_arm;		/* 1 (default): q_max bounds the arm
								 * choice's EI too; 0: the task score only */
	int			mix_arm;		/* acq=mix: the arm of largest expected
								 * improvement (per cost when costed)
								 * under the empirical mixture over the
								 * history rows (src/core/mixture.h); the GP's
								 * EI where no mixture is installed */
	int			mix_score;		/* mrg=1, greedy EI rules: the task score
								 * is the mixture's expected remaining
								 * regret per second of the next run; 2:
								 * the learned one (src/core/mixlearn.h) */
	int			mix_shift;		/* msh=1: rows shifted by the task's mean
								 * offset on its tried arms */
	double		mix_gp;			/* mgp=A in [0, 1]: the arm choice's
								 * predictive is (1 - A) mixture + A GP */
	double		mix_h;			/* mh=X: predictive kernel sd of a row in
								 * the arm choice; < 0 (default): the
								 * bandwidth; 0: the row value itself */
	int			fairness_window;	/* hybrid: no task waits more than this
									 * many decisions (0: 3 x tasks) */
	int			streak_limit;	/* hybrid: serve the least recently served
								 * task instead of a greedy pick that has
								 * not improved this many times; 0 = off */
	PolicyKind	greedy;			/* hybrid: the greedy rule it guards */
	double		explore_gate;	/* xg=X > 0: a task runs its anchor (the
								 * untried arm of largest prior mean)
								 * unless the policy's own candidate's
								 * acquisition exceeds X times the
								 * anchor's (src/core/policy_explore.c);
								 * 0: off */
	int			explore_order;	/* xo=1: the anchor is the arm of largest
								 * posterior mean instead */
	int			auto_select;	/* "auto" (and "default"): the caller
								 * replaces these params with those of the
								 * POLICY_AUTO_CANDIDATES spec its replay
								 * on the history chose; the decision code
								 * ignores this flag */
	unsigned int auto_options;	/* "auto": bit i set when option i
								 * (PolicyOptionAt) was given after it; those
								 * apply to every candidate and to the choice
								 * (PolicyAutoOptions) */
} PolicyParams;

extern int	PolicyFromName(const char *name);	/* a kind; -1 if unknown */
extern const char *PolicyName(int i);	/* i < POLICY_NAMED_COUNT, else NULL */
extern const char *PolicyNameDoc(int i);	/* one line about name i */
extern const char *PolicyNameExpansion(int i);	/* a named spec's; NULL: a kind */
extern void PolicyParamsDefault(PolicyParams *params, PolicyKind kind);
/* What a candidate's acquisition value measures under params (its unit). */
extern const char *PolicyAcqUnit(const PolicyParams *params);

/*
 * Parse a policy spec "name[:option]..." into params; returns 0, or
 * POLICY_BAD_INPUT with a message in err (which may be NULL).  name is a
 * kind or a named spec (PolicyNamedSpec); the options, each "key" or
 * "key=value", apply in order on top of the name's defaults.  The options,
 * their types, defaults and ranges are policy_spec.c's option table, the
 * only list of them: PolicyOptionAt() reads it, and
 * PolicyGrammarTable() prints it (easeml-replay --help,
 * easeml.policy_options(), docs/scheduler.md, which a unit test keeps
 * equal to it).
 */
extern int	PolicyParseSpec(const char *spec, PolicyParams *params,
							char *err, size_t errlen);

/* The longest spec the parser takes, its terminating zero included. */
#define POLICY_SPEC_LEN 128

/*
 * Options after "auto" ("auto:w=60"): auto chooses among specs, so an
 * option that selects what auto chooses (the acquisition, the cost mode,
 * the mixture's settings...: the option's auto_refused says why) is
 * refused after it, and the others (the task- and tenant-level ones:
 * fairness window, streak guard, score bound) apply to every candidate
 * its replay compares, to the fallback and to the spec it runs.
 * PolicyAutoOptions writes those given in params as ":key=value"...
 * (table order, each once, its last value; "" for none) into buf and
 * returns the length it needs, as snprintf.  PolicyAutoSpec writes the
 * spec auto runs for a candidate, candidate followed by options, into
 * buf; POLICY_BAD_INPUT (with err) if it does not fit len or the parser
 * refuses it.
 */
extern size_t PolicyAutoOptions(const PolicyParams *params, char *buf,
								size_t len);
extern int	PolicyAutoSpec(const char *candidate, const char *options,
						   char *buf, size_t len, char *err, size_t errlen);

/*
 * What an auto setting (params) runs when its last recorded choice is
 * chosen (a spec recorded with the options it was made with; NULL: none
 * yet): the candidate chosen names, or the fallback, with the setting's
 * options now; a choice among another list as recorded.  Into buf.
 */
extern const char *PolicyAutoRunning(const PolicyParams *params,
									 const char *chosen, char *buf,
									 size_t len);

/* One option of the grammar (policy_spec.c's table). */
typedef enum PolicyOptionKind
{
	POLICY_OPT_FLAG,			/* "key" alone sets an int field to 1 */
	POLICY_OPT_INT,				/* "key=N", N in [lo, hi] */
	POLICY_OPT_REAL,			/* "key=X", X in [lo, hi] (lo_open: > lo) */
	POLICY_OPT_CHOICE			/* "key=WORD", one of values */
} PolicyOptionKind;

typedef struct PolicyOption
{
	const char *name;
	PolicyOptionKind type;
	const char *values;			/* CHOICE: the words, ", "-separated */
	const char *def;			/* the default, as the docs say it */
	const char *doc;			/* one line */
	size_t		offset;			/* FLAG, INT: int, REAL: double field */
	double		lo,
				hi;
	int			lo_open;
	int			(*set) (PolicyParams *params, const char *value);	/* CHOICE */
	const char *auto_refused;	/* after "auto": NULL, the option applies
								 * to every candidate and to the choice (a
								 * FLAG, INT or REAL one); else why auto
								 * refuses it (it selects what auto
								 * chooses) */
} PolicyOption;

extern int	PolicyOptionCount(void);
extern const PolicyOption *PolicyOptionAt(int i);	/* NULL out of range */
extern const char *PolicyOptionType(const PolicyOption *option);
/* The values it takes as text: "0 to 2", "[0, 1]", "> 0", "ucb, ei, mix". */
extern void PolicyOptionRange(const PolicyOption *option, char *buf,
							  size_t len);
/* What it does after "auto": "applies" or "refused: " and why. */
extern void PolicyOptionAfterAuto(const PolicyOption *option, char *buf,
								  size_t len);

/*
 * The grammar as text, the names and then the options, into buf (len
 * bytes; returns the length it needs, as snprintf): markdown != 0 the two
 * tables of docs/scheduler.md 3, 0 the lines of easeml-replay --help.
 */
extern size_t PolicyGrammarTable(char *buf, size_t len, int markdown);

/* Status codes of the functions below. */
#define POLICY_OK			0
#define POLICY_BAD_INPUT	(-1)
#define POLICY_NO_MEMORY	(-2)
#define POLICY_GP_FAILED	(-3)

/* One task's best candidate and what the task-picking rules need. */
typedef struct PolicyTenantView
{
	int64_t		id;				/* for ties: lowest id first */
	int			arm;			/* best candidate, -1: not eligible */
	double		mu;				/* posterior mean of arm */
	double		sigma;			/* posterior std dev of arm */
	double		cost;			/* absolute cost estimate of arm (1 if none) */
	double		acq;			/* arm acquisition value */
	double		ucb;			/* mu + sqrt(beta) sigma */
	double		ei;				/* expected improvement over best */
	double		beta;
	double		best;			/* best observed score, 0 before the first */
	int			n_obs;
	int64_t		last_served;	/* decision number, -1 = never */
	int			streak;			/* served without improving, in a row */
	int			n_running;		/* runs of this task in flight now */
	double		score;			/* greedy task score (gain, per second when
								 * costed); PolicyBestArm fills it and the
								 * greedy rules compare it */
} PolicyTenantView;

/* One ranked candidate of a task (PolicyTopArms). */
typedef struct PolicyArmScore
{
	int			arm;
	double		acq;			/* its acquisition value */
} PolicyArmScore;

/* Whether params use the history mixture (acq=mix or mrg=1|2). */
extern int	PolicyUsesMixture(const PolicyParams *params);
/*
 * Whether decisions under params read the tasks' quality and cost
 * posteriors: every rule but the fixed orders of popular and fifo, and
 * those too with a mixture option (the mixture blends the GP in).
 */
extern int	PolicyReadsPosterior(const PolicyParams *params);
/* Whether the task score is the mixture's remaining regret (mrg=1 with a
 * greedy EI rule). */
extern int	PolicyMixScore(const PolicyParams *params);

/* What cost-aware EI divides by: the cost, floored. */
extern double PolicyCostDivisor(const PolicyParams *params, double c);

/* Greedy task score of a view's candidate (gain, per second if costed). */
extern double PolicyGreedyScore(const PolicyParams *params,
								const PolicyTenantView *v);

/* beta_t for a task with n_obs finished runs (see policy_acq.c). */
extern double PolicyBeta(const PolicyParams *params, int K, int n_obs);

/* Expected improvement of N(mu, sigma^2) over best. */
extern double PolicyExpectedImprovement(double mu, double sigma, double best);

/*
 * Best candidate of one task.  avail[k] != 0 marks arms that may be picked
 * (not evaluated, not running, eligible).  cost may be NULL (all 1).
 * prior_mean is needed by POLICY_POPULAR only.  Fills view->arm (-1 when
 * no arm is available) and the arm-level fields; keeps id, best, n_obs,
 * last_served, streak and n_running as the caller set them.
 */
extern int	PolicyBestArm(const PolicyParams *params, int K, const double *mu,
						  const double *var, const double *cost,
						  const unsigned char *avail,
						  const double *prior_mean, PolicyTenantView *view);

/*
 * The same, and the ntop best candidates (best first, at most ntop) in
 * top[0..*n_top): top[0] is the one view describes.  The EI scan stays
 * pruned: an arm is evaluated exactly only if its bound reaches the
 * ntop-th best value so far.
 */
extern int	PolicyTopArms(const PolicyParams *params, int K, const double *mu,
						  const double *var, const double *cost,
						  const unsigned char *avail,
						  const double *prior_mean, PolicyTenantView *view,
						  int ntop, PolicyArmScore *top, int *n_top);

/*
 * Pick one task among n views (those with arm >= 0 are eligible); returns
 * its index or -1, and the rule that decided in *rule (may be NULL).
 * decision_no is the global decision counter (for the fairness floor);
 * rng is a 64-bit state used by POLICY_RANDOM only.
 */
extern int	PolicyPickTenant(const PolicyParams *params, int n,
							 PolicyTenantView *views, int64_t decision_no,
							 uint64_t *rng, PolicyRule *rule);

/*
 * Incremental task index for many tasks.  It keeps two tournament trees
 * over a caller-owned views array (greedy score, least recently served),
 * so that after one view changes (PolicyIndexUpdate, O(log n)) a pick costs
 * O(log n) instead of a pass over all views.  PolicyIndexPick returns
 * exactly what PolicyPickTenant would; it falls back to PolicyPickTenant
 * (O(n)) during warm start, while every eligible task has runs in flight
 * (or, without idle_only, while any has), for POLICY_RANDOM, and whenever
 * its shortcut does not apply.  PolicyIndexTop lists the next views of a
 * tree (runner-ups) in O(k log n).  It assumes the
 * last_served values of served tasks are distinct (each decision serves
 * one task), which holds for a decision counter; the hybrid fairness test
 * then reduces to "every other task's deadline is in the future".
 */
typedef struct PolicyIndex
{
	int			n;
	int			size;			/* leaves: a power of two >= n */
	PolicyTenantView *views;	/* borrowed, n views */
	int		   *best;			/* 2 size nodes: argmax score, -1 = none */
	int		   *lrs;			/* 2 size nodes: least recently served */
	int			n_elig;			/* views with arm >= 0 */
	int			n_unserved;		/* eligible views never served */
	int			n_busy;			/* eligible views with runs in flight */
	unsigned char *state;		/* per view: bit 0 eligible, 1 unserved,
								 * 2 busy, as last counted */
	int			idle_only;		/* score tree: eligible views without runs
								 * in flight only (for spread) */
} PolicyIndex;

extern int	PolicyIndexInit(PolicyIndex *index, PolicyTenantView *views, int n,
							int idle_only);
extern void PolicyIndexUpdate(PolicyIndex *index, int i);
extern int	PolicyIndexPick(const PolicyIndex *index, const PolicyParams *params,
							int64_t decision_no, uint64_t *rng,
							PolicyRule *rule);
extern void PolicyIndexFree(PolicyIndex *index);
extern int	PolicyIndexTop(PolicyIndex *index, int by_lrs, int skip, int k,
						   int *out);

/*
 * Explore only when it pays (xg=X, src/core/policy_explore.c): whether
 * params gate exploration; a task's anchor (the available arm of largest
 * order[k]); whether the model's candidate is worth running instead.
 */
extern int	PolicyExploreGated(const PolicyParams *params);
extern int	PolicyExploreAnchor(int K, const double *order,
								const unsigned char *avail);
extern int	PolicyExplorePays(const PolicyParams *params, double acq_model,
							  double acq_anchor);

/* splitmix64 step and a uniform double in [0,1). */
extern uint64_t PolicyRandNext(uint64_t *state);
extern double PolicyRandUniform(uint64_t *state);

#endif							/* EASEML_POLICY_H */
