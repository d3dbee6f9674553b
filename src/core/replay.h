/*-------------------------------------------------------------------------
 *
 * replay.h
 *	  Replay simulator of multi-tenant model selection (docs/scheduler.md 5):
 *	  a discrete-event simulation over a quality matrix (and optionally a
 *	  cost matrix) that runs the same policy code as the live scheduler.
 *
 * Plain C, no PostgreSQL headers.  The library never reads stdin, never
 * writes stdout or stderr and never exits: every entry point returns a
 * status (0 = ok, negative = error) and writes a message into the caller's
 * err buffer.  The command-line front end is src/tools/replay_main.c; the SQL
 * function easeml.replay(...) (src/sql/sql_replay.c) calls the same API.
 * The code: src/core/replay_{matrix,config,sim,output,job,auto}.c, one job
 * each (src/core/replay_internal.h says which).
 *
 * Typical use (error handling elided):
 *
 *	 ReplayMatrix q, c, s;
 *	 ReplayReadCsv("error_matrix.csv", &q, err, sizeof(err));
 *	 ReplayReadCsv("runtime_matrix.csv", &c, err, sizeof(err));
 *	 ReplayReadCsv("dataset_sizes.csv", &s, err, sizeof(err));
 *	 ReplayOneMinus(&q);                  -- error -> quality
 *	 double *sizes = malloc(q.rows * 2 * sizeof(double));
 *	 ReplayJoinById(&q, &s, sizes, err, sizeof(err));
 *
 *	 const char *pols[] = {"popular", "rr", "max_ei:cost"};
 *	 double thr[] = {0.05, 0.02, 0.01, 0.005};
 *	 ReplayConfig cfg;
 *	 ReplayConfigDefault(&cfg);
 *	 cfg.quality = q.data; cfg.cost = c.data; cfg.sizes = sizes;
 *	 cfg.n_rows = q.rows; cfg.K = q.cols;
 *	 cfg.n_tenants = 20; cfg.devices = 1; cfg.draws = 20; cfg.seed = 1;
 *	 cfg.n_policies = 3; cfg.policies = pols;
 *	 cfg.n_thresholds = 4; cfg.thresholds = thr;
 *	 cfg.cost_model = POLICY_COST_SIZE_GP;
 *
 *	 ReplayOutput out;
 *	 if (ReplayRun(&cfg, &out, err, sizeof(err)) == 0)
 *	 {
 *		 ... out.median_time[p * out.n_thresholds + k] ...
 *		 ReplaySpeedup(&out, 0, 2, 2, &median, &max);
 *	 }
 *	 ReplayOutputFree(&out);
 *	 ReplayMatrixFree(&q); ...
 *
 * Policy specs (ReplayParsePolicy) are PolicyParseSpec()'s
 * "name[:option]..."; the names and options are src/core/policy_spec.c's
 * tables (easeml-replay --help and "easeml-replay grammar" print them),
 * e.g. "rr" (per-tenant GP-UCB served round-robin), "popular" (users'
 * heuristic), "hybrid:cost:w=60".  "default" (= "auto", the live
 * scheduler's default) chooses among POLICY_AUTO_CANDIDATES per draw by
 * replaying them on that draw's prior rows only, exactly as the live
 * worker does on its installed history (src/core/autopolicy.h).
 *
 * IDENTIFICATION
 *	  src/core/replay.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_REPLAY_H
#define EASEML_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "gp.h"
#include "policy.h"
#include "sizecost.h"

#define REPLAY_OK			0
#define REPLAY_BAD_INPUT	(-1)
#define REPLAY_NO_MEMORY	(-2)
#define REPLAY_IO			(-3)
#define REPLAY_GP_FAILED	(-4)
#define REPLAY_CANCELLED	(-5)

/* a policy spec: what the parser takes (auto's choice with its options) */
#define REPLAY_NAME_LEN		POLICY_SPEC_LEN

/*
 * One finished run, handed to ReplayConfig.on_run as it completes (the
 * per-run trace of easeml-replay --runs): policy p, draw d, tenant i ran
 * arm k on [start, end) (cost plus overhead); best is the tenant's best
 * quality after it and regret its f* - best.
 */
typedef struct ReplayRunRecord
{
	int			policy;
	int			draw;
	int			tenant;
	int			arm;
	double		start;
	double		end;
	double		cost;			/* end - start: its cost plus the overhead */
	double		quality;
	double		best;
	double		regret;
} ReplayRunRecord;

/* A numeric CSV: header row, first column a row id, numbers after. */
typedef struct ReplayMatrix
{
	int			rows;
	int			cols;			/* numeric columns (the id column excluded) */
	double	   *data;			/* rows x cols, row-major; NaN = empty cell */
	char	  **row_ids;		/* rows strings, blanks trimmed */
	char	  **col_names;		/* cols header strings, blanks trimmed */
	long	   *row_lines;		/* rows: line of the file each row started on */
} ReplayMatrix;

/*
 * Parse a CSV file with the shared reader of src/core/csv.h (quotes, CRLF,
 * blank lines, a byte order mark).  Missing cells (empty, NA, NaN, NULL,
 * ?) read as NaN; any other cell that is not a number is an error with
 * its line and column in err, and so is a row whose field count differs
 * from the header's or whose row id repeats an earlier one.
 */
extern int	ReplayReadCsv(const char *path, ReplayMatrix *m, char *err,
						  size_t errlen);
/* The same from a buffer in memory (need not be NUL-terminated). */
extern int	ReplayParseCsv(const char *text, size_t len, ReplayMatrix *m,
						   char *err, size_t errlen);
extern void ReplayMatrixFree(ReplayMatrix *m);

/* x -> 1 - x on every cell (error matrix -> quality matrix). */
extern void ReplayOneMinus(ReplayMatrix *m);

/*
 * For each row of 'target', copy the row of 'table' with the same integer
 * id (ids compared as integers, so "00011" matches "11"; order may differ)
 * into out (target->rows x table->cols).  Error if an id is missing or
 * not an integer.
 */
extern int	ReplayJoinById(const ReplayMatrix *target, const ReplayMatrix *table,
						   double *out, char *err, size_t errlen);

/* One parsed policy spec. */
typedef struct ReplayPolicy
{
	char		name[REPLAY_NAME_LEN];	/* the spec as given */
	PolicyParams params;
	int			auto_select;	/* "auto"/"default": on each draw, replay
								 * the POLICY_AUTO_CANDIDATES on the draw's
								 * prior rows (tenants left out) and run the
								 * one that reached the loss targets
								 * soonest */
} ReplayPolicy;

extern int	ReplayParsePolicy(const char *spec, ReplayPolicy *policy,
							  char *err, size_t errlen);

typedef struct ReplayConfig
{
	/* data: all n_rows x K, row-major; only quality is required */
	const double *quality;		/* in [0,1], higher is better, no NaN */
	const double *cost;			/* seconds > 0, or NULL: every run costs 1 */
	const double *sizes;		/* n_rows x 2 (rows, features), or NULL;
								 * needed by the size-based cost models */
	int			n_rows;
	int			K;

	int			n_tenants;		/* rows drawn as tenants per draw */
	int			n_prior;		/* prior rows per draw; 0 = all the others */
	int			devices;		/* M */
	int			n_policies;
	const char *const *policies;	/* specs, see above */
	int			draws;			/* random prior/tenant splits and orders */
	int			first_draw;		/* draw d is split as draw first_draw + d
								 * (0: usually) */
	uint64_t	seed;
	int			n_thresholds;
	const double *thresholds;	/* loss targets */

	/*
	 * The cost estimate the policies see.  oracle_cost = 1 gives them the
	 * true cost matrix (an oracle, for reference only); otherwise
	 * cost_model is fitted on the prior rows (runtime and sizes) and, for
	 * POLICY_COST_SIZE_GP, updated with each tenant's finished runtimes.
	 */
	PolicyCostKind cost_model;
	int			oracle_cost;
	GpPriorOptions prior;		/* quality prior; zero = empirical, fitted */

	int			max_devices_per_tenant; /* > 0: at most this many runs of one
										 * tenant at a time */
	int			fair_share;		/* with no max_devices_per_tenant: 1 = a
								 * tenant gets at most a fair share of the
								 * devices while several wait, as live
								 * (src/core/decision_pick.c); 0 = no cap */
	double		overhead;		/* seconds added to every run (process
								 * start, data load, writing the result);
								 * the cost model learns it too */
	double		stop_loss;		/* stop a run once L <= stop_loss (0: run
								 * until every tenant has its best model or
								 * has no arm left) */
	int			grid_points;	/* points of the averaged curve; 0 = 200 */
	int			keep_events;	/* 1: keep every (time, loss) step */

	/*
	 * Optional: polled between simulated runs (one policy on one draw);
	 * returning non-zero stops ReplayRun with REPLAY_CANCELLED.  The SQL
	 * wrapper can return InterruptPending here and call
	 * CHECK_FOR_INTERRUPTS() after ReplayRun returns (never longjmp out of
	 * the library: it would leak its allocations).
	 */
	int			(*cancel) (void *arg);
	void	   *cancel_arg;

	/*
	 * Optional: called once per finished run of the replay itself (never
	 * for the inner replays of an "auto" choice), in completion order.
	 */
	void		(*on_run) (void *arg, const ReplayRunRecord *run);
	void	   *on_run_arg;

	/*
	 * "auto": the candidate specs, comma-separated (at most
	 * REPLAY_AUTO_MAX, none of them "auto" itself), for experiments; NULL
	 * = POLICY_AUTO_CANDIDATES, what the live worker uses.
	 */
	const char *auto_candidates;
	/* "auto": inner draws (steps), an experiment; 0 = REPLAY_AUTO_DRAWS */
	int			auto_draws;
} ReplayConfig;

extern void ReplayConfigDefault(ReplayConfig *cfg);

/* One step of L(tau): at 'time' the global average loss became 'loss'. */
typedef struct ReplayEvent
{
	double		time;
	double		loss;
} ReplayEvent;

typedef struct ReplayOutput
{
	int			n_policies;
	int			n_thresholds;
	int			draws;
	int			grid_points;
	char		(*names)[REPLAY_NAME_LEN];	/* n_policies */
	double	   *thresholds;		/* n_thresholds */
	/* per policy p, draw d, threshold k: index (p * draws + d) * nk + k */
	double	   *time_to;		/* first time L <= threshold; INFINITY if
								 * never */
	double	   *worst_regret;	/* max_i r_i at that moment */
	/* per policy p and threshold k: index p * nk + k */
	double	   *median_time;	/* median over draws of time_to */
	/* per policy p and draw d: index p * draws + d */
	double	   *auc;			/* integral of L over [0, H_d], H_d = last
								 * event time of any policy in draw d */
	double	   *final_time;		/* time of the last completion */
	double	   *final_loss;
	int		   *decisions;		/* runs dispatched */
	/* averaged curve on a common log-spaced grid */
	double	   *grid;			/* grid_points times */
	double	   *curve_mean;		/* p * grid_points + g */
	double	   *curve_median;
	/* every step, when cfg.keep_events: p * draws + d */
	ReplayEvent **events;
	int		   *n_events;
	/* diagnostics */
	int			rows_used;		/* distinct rows drawn from */
	int			rows_removed;	/* rows that repeated an earlier row */
	int			gp_jitter;		/* observations that needed jitter */
	int			gp_failed;		/* observations the GP had to skip */
	double		prior_noise_var;	/* fitted hyperparameters, draw 0 */
	double		prior_shrinkage;
	double		prior_lengthscale;
	double		prior_signal_var;
	double		mix_bw;			/* history mixture bandwidths, draw 0; */
	double		mix_bw_shift;	/* 0 when no policy uses the mixture */
	double		cost_log_rmse;	/* rms error of log cost estimates at the
								 * time of each dispatch, of the policies
								 * that read them (not popular, fifo) */
	/* per policy p and draw d (p * draws + d): for an "auto" policy, the
	 * index in its candidates it chose, or REPLAY_AUTO_FALLBACK; -2 for
	 * any other policy */
	int		   *auto_choice;
	/* work units of the whole replay (ReplayJobWork) */
	double		work;
} ReplayOutput;

/*
 * Run every policy on every draw.  Draw d permutes the rows with a seeded
 * generator: the first n_tenants rows are the tenants (in that order,
 * which sets ids and round-robin order), the next n_prior (or all the
 * rest) build the prior and the cost model.  Tenant rows never enter the
 * prior.  On success fills *out (free with ReplayOutputFree).
 */
extern int	ReplayRun(const ReplayConfig *cfg, ReplayOutput *out, char *err,
					  size_t errlen);
extern void ReplayOutputFree(ReplayOutput *out);

/*
 * The rows draw 'draw' of cfg uses, repeated rows left out: its tenant
 * rows first, then the rows that build its prior (all of the rest, or the
 * first cfg->n_prior of them); rows needs cfg->n_rows entries, *n_rows
 * gets how many are filled.  A "default" policy chooses on the first
 * REPLAY_AUTO_MAX_ROWS prior rows (tests compare it with the live
 * worker's choice on the same rows).
 */
extern int	ReplayDrawRows(const ReplayConfig *cfg, int draw, int *rows,
						   int *n_rows);

/*
 * A replay in slices, for a caller that must stay responsive (the live
 * worker's "auto" choice runs one inside its refit cycle): ReplayJobBegin,
 * then ReplayJobStep until it returns 1, then ReplayJobTake; ReplayJobFree
 * always.  ReplayRun is exactly this run to the end.
 *
 * Work is counted in deterministic units, about one per cell operation
 * (a history cell scanned, a candidate scored): the prior and cost-model
 * fits by their size, the history mixture's and mrg=2's fits as their
 * sliced fits count (src/core/mixture.h, src/core/mixlearn.h), each simulated
 * decision and result as the decision code counts them
 * (DecisionWorld.work).  A step does at least one piece (one simulated
 * event, one slice of a fit, one fit of a prior) and stops once it has
 * spent 'work' units; with a finite 'limit' the job stops with
 * REPLAY_WORK_LIMIT as soon as its total passes it.  Results, and whether
 * a limit is passed, do not depend on how the job is sliced.
 */
typedef struct ReplayJob ReplayJob;

#define REPLAY_WORK_LIMIT	(-6)

extern int	ReplayJobBegin(const ReplayConfig *cfg, ReplayJob **job, char *err,
						   size_t errlen);
extern int	ReplayJobStep(ReplayJob *job, double work, double limit, char *err,
						  size_t errlen);
extern double ReplayJobWork(const ReplayJob *job);
/* The output of a finished job (free with ReplayOutputFree). */
extern int	ReplayJobTake(ReplayJob *job, ReplayOutput *out, char *err,
						  size_t errlen);
extern void ReplayJobFree(ReplayJob *job);

/*
 * The "auto" choice (the default policy): one chooser, used by the live
 * worker on its installed history (src/core/autopolicy.c) and by every "auto"
 * policy of ReplayRun on its draw's prior rows.  Its only inputs are the
 * history rows and the devices (ReplayAutoInput); everything else is
 * fixed here, the same for both callers:
 *
 *	 - the first REPLAY_AUTO_MAX_ROWS rows, in the order given; n/2 of them
 *	   (at most REPLAY_AUTO_MAX_TENANTS) play tenants in each inner draw,
 *	   the others build the prior, the mixture and the cost model;
 *	 - REPLAY_AUTO_DRAWS inner draws of seed REPLAY_AUTO_SEED;
 *	 - loss targets 0.01, 0.005 and 0.002; the candidate whose times to
 *	   them have the smallest geometric mean wins (a target never reached
 *	   counts as twice the inner draw's last completion; ties go to the
 *	   first);
 *	 - costs are the rows' measured seconds (fixed per-run costs included,
 *	   as live measurements include them) with the size_gp cost model, or
 *	   1 per run when the rows have none; the default prior; fair shares;
 *	 - at most REPLAY_AUTO_WORK_MAX work units in all.
 *
 * Where it cannot choose -- fewer than REPLAY_AUTO_MIN_ROWS rows or 2
 * models, or a replay that would pass the work limit -- the choice is
 * REPLAY_AUTO_FALLBACK: POLICY_AUTO_FALLBACK runs, the policy that never
 * loses to the users' heuristic because it is that heuristic.
 *
 * In steps: ReplayAutoBegin, then ReplayAutoStep(job, work) (about 'work'
 * units each) until it returns 1; job->choice and job->score[] (geometric
 * mean seconds, or runs with unit costs; NaN without a replay) then hold
 * the result.  ReplayAutoFree always.  ReplayAutoChoose does it all at
 * once (scores may be NULL).  The choice does not depend on the slicing.
 */
#define REPLAY_AUTO_DRAWS	4
/* at most this many inner draws with ReplayAutoInput.draws */
#define REPLAY_AUTO_DRAWS_MAX	64
#define REPLAY_AUTO_MAX		8
/* at most this many history rows, this many of them tenants */
#define REPLAY_AUTO_MAX_ROWS	120
#define REPLAY_AUTO_MAX_TENANTS 20
#define REPLAY_AUTO_MIN_ROWS	4
#define REPLAY_AUTO_SEED	1
#define REPLAY_AUTO_WORK_MAX	5e10
#define REPLAY_AUTO_FALLBACK	(-1)

typedef struct ReplayAutoInput
{
	const double *quality;		/* n_rows x K, in [0, 1] */
	const double *cost;			/* measured seconds per run, or NULL */
	const double *sizes;		/* n_rows x 2 (rows, features); with cost */
	int			n_rows;
	int			K;
	int			devices;		/* slots (0: 1) */
	/*
	 * the options given after "auto" (PolicyAutoOptions: ":w=60"...),
	 * applied to every candidate and to the fallback; NULL or "": none
	 */
	const char *options;
	/* experiments only: NULL / 0 = what the live worker uses */
	const char *candidates;		/* comma-separated specs */
	int			draws;			/* inner draws */
	double		work_max;		/* work limit (tests) */
} ReplayAutoInput;

typedef struct ReplayAutoJob
{
	ReplayConfig in;			/* the inner replay */
	ReplayJob  *inner;			/* the inner draw under way, or NULL */
	double	   *q;				/* the history rows' copies */
	double	   *cost;
	double	   *sizes;
	char		list[REPLAY_NAME_LEN * 2];
	char		options[REPLAY_NAME_LEN];	/* ReplayAutoInput.options */
	char		specs[REPLAY_AUTO_MAX][REPLAY_NAME_LEN];	/* each candidate
															 * with the options */
	const char *cands[REPLAY_AUTO_MAX]; /* specs[] */
	int			n_cand;
	int			tenants;		/* rows that play tenants per inner draw */
	int			draws;			/* inner draws in all */
	int			draw;			/* inner draw under way */
	double		log_sum[REPLAY_AUTO_MAX];
	int			n_terms;
	double		work;			/* units spent by finished inner draws */
	double		work_max;		/* the limit */
	int			done;
	int			choice;			/* index in the list, or
								 * REPLAY_AUTO_FALLBACK */
	int			over_limit;		/* the fallback: the work limit passed */
	double		score[REPLAY_AUTO_MAX];
} ReplayAutoJob;

extern int	ReplayAutoBegin(const ReplayAutoInput *in, ReplayAutoJob *job,
							char *err, size_t errlen);
extern int	ReplayAutoStep(ReplayAutoJob *job, double work, char *err,
						   size_t errlen);
/* Work units spent so far. */
extern double ReplayAutoWork(const ReplayAutoJob *job);
extern void ReplayAutoFree(ReplayAutoJob *job);
extern int	ReplayAutoChoose(const ReplayAutoInput *in, int *choice,
							 double *scores, char *err, size_t errlen);
/*
 * The spec a finished job's choice runs: its candidate, or the fallback,
 * with the options (ReplayAutoInput.options) applied; NULL if it does not
 * fit buflen.
 */
extern const char *ReplayAutoChosen(const ReplayAutoJob *job, char *buf,
									size_t buflen);
/* The spec a choice runs: candidate 'choice' of list (NULL: the live one). */
extern const char *ReplayAutoSpec(const char *list, int choice, char *buf,
								  size_t buflen);
extern const char *ReplayAutoCandidate(int i, char *buf, size_t buflen);
/* The same in a given comma-separated list. */
extern const char *ReplayAutoCandidateOf(const char *list, int i, char *buf,
										 size_t buflen);
/* 0 if list is a valid auto_candidates value, else a message in err. */
extern int	ReplayAutoCheckCandidates(const char *list, char *err,
									  size_t errlen);

/*
 * Speedup of policy 'pol' over policy 'base' at threshold k: per draw
 * time_to(base) / time_to(pol), then the median and the maximum over
 * draws.  A draw where pol never reaches the threshold counts as 0, one
 * where only base never does as +inf.
 */
extern int	ReplaySpeedup(const ReplayOutput *out, int base, int pol, int k,
						  double *median, double *max);

#endif							/* EASEML_REPLAY_H */
