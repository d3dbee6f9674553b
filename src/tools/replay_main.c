/*-------------------------------------------------------------------------
 *
 * replay_main.c
 *	  Command-line front end of the replay simulator (easeml-replay) and the
 *	  steady-state decision benchmark (easeml-replay bench-decision).
 *
 * All file I/O and printing lives here; src/core/replay.c is the library that
 * the SQL function easeml.replay(...) shares.  Machine-readable lines start
 * with an upper-case tag (TIME, SPEEDUP, DEVICE_SPEEDUP, DECISION) so that
 * the scripts in scripts/bench can pick them out.
 *
 * IDENTIFICATION
 *	  src/tools/replay_main.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cblas.h>

#include "core/gp.h"
#include "core/policy.h"
#include "core/replay.h"

/* OpenBLAS: pin the pool to one thread (declared here, not in cblas.h everywhere) */
extern void openblas_set_num_threads(int num_threads);

#define MAX_LIST 64

/* Print usage to stderr. */
static void
Usage(void)
{
	fprintf(stderr,
			"usage: easeml-replay --quality FILE [options]\n"
			"       easeml-replay choose --quality FILE [options]\n"
			"       easeml-replay bench-decision [options]\n"
			"\n"
			"replay options:\n"
			"  --quality FILE      quality CSV (header row, row id, numbers in [0,1])\n"
			"  --error             the quality CSV holds errors: quality = 1 - value\n"
			"  --cost FILE         cost CSV (seconds, same shape); default: unit cost\n"
			"  --sizes FILE        data-set sizes CSV (id, rows, features), joined on integer id\n"
			"  --cost-model NAME   none|size_linear|size_loglinear|size_gp|oracle (default size_gp)\n"
			"  --tenants N         tenants per draw (default 20)\n"
			"  --prior-rows N      prior rows per draw (default: all rows not drawn as tenants)\n"
			"  --devices M[,M..]   devices; several values run the whole study per value\n"
			"  --policies P,P,..   policy specs (see src/core/replay.h), default popular,rr,max_ei:cost\n"
			"  --draws N           random draws (default 20)\n"
			"  --seed S            seed (default 1)\n"
			"  --thresholds a,b..  loss targets (default 0.05,0.02,0.01,0.005)\n"
			"  --baselines P,P     policy specs to compute speedups against (default: the first)\n"
			"  --kernel NAME       prior covariance: empirical|rbf (default empirical)\n"
			"  --shrinkage X, --noise-var X, --lengthscale X, --signal-var X\n"
			"                      fix a prior hyperparameter (default: fitted by held-out\n"
			"                      likelihood on the prior rows)\n"
			"  --standardize-rows  rbf: z-score each history row before distances\n"
			"  --dense-prior-fit   score the prior's grid with K x K factorisations even\n"
			"                      where the low-rank form applies (for comparison)\n"
			"  --max-devices-per-tenant N  at most N runs of one tenant at a time (0: no limit)\n"
			"  --stop-loss X       stop each run once the loss is <= X (default 0)\n"
			"  --overhead S        seconds charged to every run on top of its cost (process\n"
			"                      start, data load, writing the result; default 0)\n"
			"  --curve FILE        write the averaged loss curve (CSV)\n"
			"  --times FILE        write per-draw times to each threshold (CSV)\n"
			"  --auto-candidates P,P,..  what \"default\"/\"auto\" chooses among (an\n"
			"                      experiment; default: the live worker's list)\n"
			"  --auto-draws N      inner draws of its choice (an experiment, 1-64;\n"
			"                      default: the live worker's 4)\n"
			"  --runs FILE         write every finished run: devices, policy, draw, tenant,\n"
			"                      arm, start, end, cost, quality, best, regret (CSV; the\n"
			"                      input of scripts/bench/oracle_interleave.py)\n"
			"\n"
			"choose: the default policy's choice on a history, as the live worker makes\n"
			"  it: every row of the files in their order (the first 120) is history;\n"
			"  options --quality, --error, --cost, --sizes, --overhead (added to every\n"
			"  runtime, as a measurement holds it), --devices M (slots), and the\n"
			"  experiments --auto-candidates, --auto-draws.  Prints CHOICE and SCORE\n"
			"  lines (scores as easeml.policy_choices records them).\n"
			"\n"
			"bench-decision options:\n"
			"  --tenants N (1000) --arms K (200) --obs T (50) --history M (100)\n"
			"  --decisions N (2000) --seed S (1) --policy SPEC (default hybrid)\n"
			"  --kernel rbf|empirical  prior covariance (default rbf, as scikit-learn's)\n"
			"  --dump DIR          write the problem and the decision sequence for the\n"
			"                      scikit-learn side (scripts/bench/decision_sklearn.py)\n");
}

/*
 * Split a comma list in place into at most MAX_LIST items; -1 (with a
 * message) if an item is empty ("0.1,,x", a trailing comma) or there are
 * too many.  strtok would silently skip the empty ones.
 */
static int
SplitList(const char *opt, char *s, char **items)
{
	int			n = 0;

	for (;;)
	{
		char	   *comma = strchr(s, ',');

		if (comma)
			*comma = '\0';
		if (*s == '\0')
		{
			fprintf(stderr, "easeml-replay: %s: empty item in the list\n", opt);
			return -1;
		}
		if (n == MAX_LIST)
		{
			fprintf(stderr, "easeml-replay: %s: more than %d items\n", opt, MAX_LIST);
			return -1;
		}
		items[n++] = s;
		if (comma == NULL)
			return n;
		s = comma + 1;
	}
}

/*
 * Parse an integer option value in [lo, hi]; 0 with a message otherwise.
 * Unlike atoi, "4294967297", "12x" and "" are errors, not 1, 12 and 0.
 */
static int
ParseIntArg(const char *opt, const char *v, long long lo, long long hi,
			long long *out)
{
	char	   *end;
	long long	x;

	errno = 0;
	x = strtoll(v, &end, 10);
	if (end == v || *end != '\0' || errno != 0 || x < lo || x > hi)
	{
		fprintf(stderr, "easeml-replay: %s must be an integer between %lld and %lld, not \"%s\"\n",
				opt, lo, hi, v);
		return 0;
	}
	*out = x;
	return 1;
}

/* The same for an int-sized option. */
static int
ParseInt(const char *opt, const char *v, int lo, int hi, int *out)
{
	long long	x;

	if (!ParseIntArg(opt, v, lo, hi, &x))
		return 0;
	*out = (int) x;
	return 1;
}

/*
 * Parse a finite real option value in [lo, hi] (lo excluded when
 * lo_open); NaN, infinities, trailing garbage and empty values are errors.
 */
static int
ParseReal(const char *opt, const char *v, double lo, double hi, int lo_open,
		  double *out)
{
	char	   *end;
	double		x;

	errno = 0;
	x = strtod(v, &end);
	if (end == v || *end != '\0' || !isfinite(x) ||
		(lo_open ? !(x > lo) : !(x >= lo)) || !(x <= hi))
	{
		fprintf(stderr, "easeml-replay: %s must be a number in %c%g, %g], not \"%s\"\n",
				opt, lo_open ? '(' : '[', lo, hi, v);
		return 0;
	}
	*out = x;
	return 1;
}

/* Monotonic clock in seconds. */
static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Index of a policy name in the output, or -1. */
static int
FindPolicy(const ReplayOutput *out, const char *name)
{
	int			p;

	for (p = 0; p < out->n_policies; p++)
		if (strcmp(out->names[p], name) == 0)
			return p;
	return -1;
}

/* Print one study (one device count) in human and tagged form. */
static void
PrintStudy(const ReplayOutput *out, int devices, char **baselines, int nbase)
{
	int			p,
				k,
				b,
				d;

	printf("\n## devices=%d: median over %d draws of the time (s) to reach each loss\n",
		   devices, out->draws);
	printf("%-34s", "policy");
	for (k = 0; k < out->n_thresholds; k++)
		printf(" %11s%-6g", "L<=", out->thresholds[k]);
	printf(" %12s %10s %8s\n", "mean_auc", "worst_r", "runs");
	for (p = 0; p < out->n_policies; p++)
	{
		double		auc = 0.0,
					runs = 0.0,
					worst = 0.0;
		int			kmid = out->n_thresholds > 2 ? 2 : out->n_thresholds - 1;

		printf("%-34s", out->names[p]);
		for (k = 0; k < out->n_thresholds; k++)
			printf(" %17.1f", out->median_time[p * out->n_thresholds + k]);
		for (d = 0; d < out->draws; d++)
		{
			size_t		pd = (size_t) p * out->draws + d;

			auc += out->auc[pd];
			runs += out->decisions[pd];
			if (kmid >= 0 && out->worst_regret[pd * out->n_thresholds + kmid] > worst)
				worst = out->worst_regret[pd * out->n_thresholds + kmid];
		}
		printf(" %12.1f %10.4f %8.0f\n", auc / out->draws, worst, runs / out->draws);
	}
	for (p = 0; p < out->n_policies; p++)
		for (k = 0; k < out->n_thresholds; k++)
			printf("TIME devices=%d policy=%s thr=%g median=%.3f\n", devices,
				   out->names[p], out->thresholds[k],
				   out->median_time[p * out->n_thresholds + k]);

	for (b = 0; b < nbase; b++)
	{
		int			bi = FindPolicy(out, baselines[b]);

		if (bi < 0)
			continue;
		printf("\n## devices=%d: speedup over %s (median over draws of the per-draw ratio; max)\n",
			   devices, baselines[b]);
		for (p = 0; p < out->n_policies; p++)
		{
			printf("%-34s", out->names[p]);
			for (k = 0; k < out->n_thresholds; k++)
			{
				double		med,
							mx;

				ReplaySpeedup(out, bi, p, k, &med, &mx);
				printf("   %7.2fx (%6.1fx)", med, mx);
			}
			printf("\n");
		}
		for (p = 0; p < out->n_policies; p++)
			for (k = 0; k < out->n_thresholds; k++)
			{
				double		med,
							mx;

				ReplaySpeedup(out, bi, p, k, &med, &mx);
				printf("SPEEDUP devices=%d base=%s policy=%s thr=%g median=%.4f max=%.4f\n",
					   devices, baselines[b], out->names[p], out->thresholds[k],
					   med, mx);
			}
	}
}

/* For each "auto" policy: how often it chose each candidate. */
static void
PrintAutoChoices(const ReplayOutput *out, int devices, const char *auto_list)
{
	char		list[REPLAY_NAME_LEN * 2];
	char	   *names[8];
	int			nc = 0;

	snprintf(list, sizeof(list), "%s", auto_list);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nc < 8;
		 tok = strtok_r(NULL, ",", &save))
		names[nc++] = tok;
	for (int p = 0; p < out->n_policies; p++)
	{
		int			count[8] = {0},
					fallback = 0;

		if (out->auto_choice[(size_t) p * out->draws] < REPLAY_AUTO_FALLBACK)
			continue;			/* not an "auto" policy */
		for (int d = 0; d < out->draws; d++)
		{
			int			ch = out->auto_choice[(size_t) p * out->draws + d];

			if (ch == REPLAY_AUTO_FALLBACK)
				fallback++;
			else
				count[ch]++;
		}
		printf("AUTO devices=%d policy=%s", devices, out->names[p]);
		for (int i = 0; i < nc; i++)
			printf(" %s=%d", names[i], count[i]);
		printf(" fallback:%s=%d\n", POLICY_AUTO_FALLBACK, fallback);
	}
}

/* Main of the replay mode. */
/* What the command line of a replay asks for, besides the ReplayConfig. */
typedef struct ReplayCli
{
	char	   *quality_path;
	char	   *cost_path;
	char	   *sizes_path;
	char	   *curve_path;
	char	   *times_path;
	char	   *runs_path;
	char	   *auto_arg;
	char	   *pol_arg;
	char	   *thr_arg;
	char	   *dev_arg;
	char	   *base_arg;
	char	   *cost_model_name;
	char	   *kernel_name;
	int			error_matrix;
	int			help;
	char	   *pol_items[MAX_LIST];
	char	   *base_items[MAX_LIST];
	char		default_pols[64];	/* pol_items point into it by default */
	int			npol;
	int			nthr;
	int			ndev;
	int			nbase;
	double		thresholds[MAX_LIST];
	int			devices[MAX_LIST];
} ReplayCli;

typedef enum
{
	OPT_FLAG,					/* int: set to 1 */
	OPT_STRING,					/* char *: the value */
	OPT_INT,					/* int in [lo, hi] */
	OPT_REAL,					/* double in [lo, hi], (lo, hi] when lo_open */
} OptKind;

typedef struct ReplayOption
{
	const char *name;
	OptKind		kind;
	void	   *dest;
	double		lo;
	double		hi;
	int			lo_open;
} ReplayOption;

/* Parse one option's value into its destination; 0 on a bad value. */
static int
SetOption(const ReplayOption *o, char *v)
{
	switch (o->kind)
	{
		case OPT_FLAG:
			*(int *) o->dest = 1;
			return 1;
		case OPT_STRING:
			*(char **) o->dest = v;
			return 1;
		case OPT_INT:
			return ParseInt(o->name, v, (int) o->lo, (int) o->hi, (int *) o->dest);
		case OPT_REAL:
			return ParseReal(o->name, v, o->lo, o->hi, o->lo_open, (double *) o->dest);
	}
	return 0;
}

/*
 * Read argv into cli and cfg: 0 when the replay can run, 1 for --help, 2
 * on a bad command line (with a message).
 */
static int
ParseReplayArgs(int argc, char **argv, ReplayCli *cli, ReplayConfig *cfg)
{
	long long	seed = (long long) cfg->seed;
	char	   *seed_arg = NULL;
	const ReplayOption opts[] = {
		{"--quality", OPT_STRING, &cli->quality_path, 0, 0, 0},
		{"--error", OPT_FLAG, &cli->error_matrix, 0, 0, 0},
		{"--cost", OPT_STRING, &cli->cost_path, 0, 0, 0},
		{"--sizes", OPT_STRING, &cli->sizes_path, 0, 0, 0},
		{"--cost-model", OPT_STRING, &cli->cost_model_name, 0, 0, 0},
		{"--tenants", OPT_INT, &cfg->n_tenants, 1, INT_MAX, 0},
		{"--prior-rows", OPT_INT, &cfg->n_prior, 0, INT_MAX, 0},
		{"--devices", OPT_STRING, &cli->dev_arg, 0, 0, 0},
		{"--policies", OPT_STRING, &cli->pol_arg, 0, 0, 0},
		{"--draws", OPT_INT, &cfg->draws, 1, 100000, 0},
		{"--seed", OPT_STRING, &seed_arg, 0, 0, 0},
		{"--thresholds", OPT_STRING, &cli->thr_arg, 0, 0, 0},
		{"--baselines", OPT_STRING, &cli->base_arg, 0, 0, 0},
		{"--kernel", OPT_STRING, &cli->kernel_name, 0, 0, 0},
		{"--shrinkage", OPT_REAL, &cfg->prior.shrinkage, 0.0, 1.0, 1},
		{"--noise-var", OPT_REAL, &cfg->prior.noise_var, 0.0, 1e6, 1},
		{"--lengthscale", OPT_REAL, &cfg->prior.lengthscale, 0.0, 1e6, 1},
		{"--signal-var", OPT_REAL, &cfg->prior.signal_var, 0.0, 1e6, 1},
		{"--max-devices-per-tenant", OPT_INT, &cfg->max_devices_per_tenant, 0, 4096, 0},
		{"--standardize-rows", OPT_FLAG, &cfg->prior.standardize_rows, 0, 0, 0},
		{"--dense-prior-fit", OPT_FLAG, &cfg->prior.dense_fit, 0, 0, 0},
		{"--stop-loss", OPT_REAL, &cfg->stop_loss, 0.0, 1.0, 0},
		{"--overhead", OPT_REAL, &cfg->overhead, 0.0, 1e9, 0},
		{"--curve", OPT_STRING, &cli->curve_path, 0, 0, 0},
		{"--times", OPT_STRING, &cli->times_path, 0, 0, 0},
		{"--runs", OPT_STRING, &cli->runs_path, 0, 0, 0},
		{"--auto-candidates", OPT_STRING, &cli->auto_arg, 0, 0, 0},
		{"--auto-draws", OPT_INT, &cfg->auto_draws, 1, REPLAY_AUTO_DRAWS_MAX, 0},
		{"--help", OPT_FLAG, &cli->help, 0, 0, 0},
		{"-h", OPT_FLAG, &cli->help, 0, 0, 0},
	};

	for (int i = 1; i < argc; i++)
	{
		const ReplayOption *o = NULL;

		for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
			if (strcmp(argv[i], opts[k].name) == 0)
				o = &opts[k];
		if (o == NULL)
		{
			fprintf(stderr, "easeml-replay: unknown argument \"%s\"\n", argv[i]);
			Usage();
			return 2;
		}
		if (o->kind != OPT_FLAG && i + 1 >= argc)
		{
			fprintf(stderr, "easeml-replay: %s needs a value\n", argv[i]);
			return 2;
		}
		if (!SetOption(o, o->kind == OPT_FLAG ? NULL : argv[++i]))
			return 2;
		if (cli->help)
		{
			Usage();
			return 1;
		}
	}
	if (seed_arg != NULL && !ParseIntArg("--seed", seed_arg, 0, LLONG_MAX, &seed))
		return 2;
	cfg->seed = (uint64_t) seed;
	if (cli->quality_path == NULL)
	{
		Usage();
		return 2;
	}
	return 0;
}

/*
 * Split and check the list options (policies, thresholds, devices,
 * baselines); 0 or 2 with a message.
 */
static int
ParseReplayLists(ReplayCli *cli)
{
	char		default_thr[] = "0.05,0.02,0.01,0.005";
	char		default_dev[] = "1";
	char	   *thr_items[MAX_LIST],
			   *dev_items[MAX_LIST];

	snprintf(cli->default_pols, sizeof(cli->default_pols), "popular,rr,max_ei:cost");
	cli->npol = SplitList("--policies", cli->pol_arg ? cli->pol_arg : cli->default_pols,
						  cli->pol_items);
	cli->nthr = SplitList("--thresholds", cli->thr_arg ? cli->thr_arg : default_thr, thr_items);
	cli->ndev = SplitList("--devices", cli->dev_arg ? cli->dev_arg : default_dev, dev_items);
	cli->nbase = cli->base_arg ? SplitList("--baselines", cli->base_arg, cli->base_items) : 0;
	if (cli->npol < 0 || cli->nthr < 0 || cli->ndev < 0 || cli->nbase < 0)
		return 2;
	if (cli->nbase == 0)
	{
		cli->base_items[0] = cli->pol_items[0];
		cli->nbase = 1;
	}
	for (int i = 0; i < cli->nthr; i++)
		if (!ParseReal("--thresholds", thr_items[i], 0.0, 1.0, 0, &cli->thresholds[i]))
			return 2;
	for (int i = 0; i < cli->ndev; i++)
		if (!ParseInt("--devices", dev_items[i], 1, 4096, &cli->devices[i]))
			return 2;
	for (int i = 0; i < cli->nbase; i++)
	{
		int			j;

		for (j = 0; j < cli->npol; j++)
			if (strcmp(cli->base_items[i], cli->pol_items[j]) == 0)
				break;
		if (j == cli->npol)
		{
			fprintf(stderr, "easeml-replay: baseline \"%s\" is not one of --policies\n",
					cli->base_items[i]);
			return 2;
		}
	}
	return 0;
}

/* --cost-model, --kernel and --auto-candidates into cfg; 0 or 2 with a message. */
static int
ParseReplayModels(const ReplayCli *cli, ReplayConfig *cfg)
{
	if (strcmp(cli->cost_model_name, "oracle") == 0)
		cfg->oracle_cost = 1;
	else
	{
		int			cm = PolicyCostKindFromName(cli->cost_model_name);

		if (cm < 0)
		{
			fprintf(stderr, "easeml-replay: unknown cost model \"%s\"\n", cli->cost_model_name);
			return 2;
		}
		cfg->cost_model = (PolicyCostKind) cm;
	}
	if (strcmp(cli->kernel_name, "empirical") == 0)
		cfg->prior.kernel = GP_KERNEL_EMPIRICAL;
	else if (strcmp(cli->kernel_name, "rbf") == 0)
		cfg->prior.kernel = GP_KERNEL_RBF;
	else
	{
		fprintf(stderr, "easeml-replay: unknown kernel \"%s\"\n", cli->kernel_name);
		return 2;
	}
	if (cli->auto_arg != NULL)
	{
		char		err[256];

		if (ReplayAutoCheckCandidates(cli->auto_arg, err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: --auto-candidates: %s\n", err);
			return 2;
		}
		cfg->auto_candidates = cli->auto_arg;
	}
	return 0;
}

/* The cost matrix must have the quality matrix's shape and row ids. */
static int
CheckCostMatrix(const ReplayMatrix *q, const ReplayMatrix *c)
{
	if (c->rows != q->rows || c->cols != q->cols)
	{
		fprintf(stderr, "easeml-replay: cost is %d x %d but quality is %d x %d\n",
				c->rows, c->cols, q->rows, q->cols);
		return 0;
	}
	for (int i = 0; i < q->rows; i++)
		if (strcmp(c->row_ids[i], q->row_ids[i]) != 0)
		{
			fprintf(stderr, "easeml-replay: row %d: cost id \"%s\" differs from quality id \"%s\"\n",
					i + 1, c->row_ids[i], q->row_ids[i]);
			return 0;
		}
	return 1;
}

/* Sizes joined to the quality rows by id: rows x 2 (rows, features). */
static double *
ReadSizes(const char *path, const ReplayMatrix *q, ReplayMatrix *s)
{
	char		err[512];
	double	   *sizes;

	if (ReplayReadCsv(path, s, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-replay: %s\n", err);
		return NULL;
	}
	if (s->cols < 2)
	{
		fprintf(stderr, "easeml-replay: sizes need two columns (rows, features)\n");
		return NULL;
	}
	if ((sizes = malloc(sizeof(double) * (size_t) q->rows * s->cols)) == NULL)
		return NULL;
	if (ReplayJoinById(q, s, sizes, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-replay: %s\n", err);
		free(sizes);
		return NULL;
	}
	/* keep the first two columns */
	for (int i = 0; i < q->rows && s->cols > 2; i++)
	{
		sizes[2 * i] = sizes[(size_t) i * s->cols];
		sizes[2 * i + 1] = sizes[(size_t) i * s->cols + 1];
	}
	return sizes;
}

/* Read the matrices the command line names; 1 on success. */
static int
ReadReplayInputs(const ReplayCli *cli, ReplayMatrix *q, ReplayMatrix *c,
				 ReplayMatrix *s, double **sizes)
{
	char		err[512];

	if (ReplayReadCsv(cli->quality_path, q, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-replay: %s\n", err);
		return 0;
	}
	if (cli->error_matrix)
		ReplayOneMinus(q);
	if (cli->cost_path)
	{
		if (ReplayReadCsv(cli->cost_path, c, err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: %s\n", err);
			return 0;
		}
		if (!CheckCostMatrix(q, c))
			return 0;
	}
	if (cli->sizes_path && (*sizes = ReadSizes(cli->sizes_path, q, s)) == NULL)
		return 0;
	return 1;
}

/* Median of r[0..n) (sorted in place). */
static double
MedianInPlace(double *r, int n)
{
	for (int j = 1; j < n; j++)
	{
		double		x = r[j];
		int			m;

		for (m = j - 1; m >= 0 && r[m] > x; m--)
			r[m + 1] = r[m];
		r[m + 1] = x;
	}
	return (n % 2) ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
}

/* Speedup of each device count over the first: median of per-draw ratios. */
static int
PrintDeviceSpeedups(const ReplayCli *cli, const ReplayOutput *outs, int draws)
{
	double	   *r = malloc(sizeof(double) * draws);

	if (r == NULL)
		return 0;
	printf("\n## speedup over devices=%d (median over draws of the per-draw ratio)\n",
		   cli->devices[0]);
	for (int di = 1; di < cli->ndev; di++)
		for (int p = 0; p < cli->npol; p++)
			for (int k = 0; k < cli->nthr; k++)
			{
				for (int d = 0; d < draws; d++)
				{
					double		a = outs[0].time_to[((size_t) p * draws + d) * cli->nthr + k];
					double		b = outs[di].time_to[((size_t) p * draws + d) * cli->nthr + k];

					r[d] = isinf(b) ? 0.0 : (b > 0.0 ? a / b : 1.0);
				}
				printf("DEVICE_SPEEDUP devices=%d over=%d policy=%s thr=%g median=%.4f\n",
					   cli->devices[di], cli->devices[0], cli->pol_items[p],
					   cli->thresholds[k], MedianInPlace(r, draws));
			}
	free(r);
	return 1;
}

/* --curve: the averaged loss curves as CSV. */
static int
WriteCurves(const char *path, const ReplayCli *cli, const ReplayOutput *outs)
{
	FILE	   *f = fopen(path, "w");

	if (f == NULL)
	{
		fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n", path, strerror(errno));
		return 0;
	}
	fprintf(f, "devices,policy,time,mean_loss,median_loss\n");
	for (int di = 0; di < cli->ndev; di++)
	{
		const ReplayOutput *o = &outs[di];

		for (int p = 0; p < o->n_policies; p++)
			for (int g = 0; g < o->grid_points; g++)
				fprintf(f, "%d,\"%s\",%.6g,%.6g,%.6g\n", cli->devices[di],
						o->names[p], o->grid[g],
						o->curve_mean[(size_t) p * o->grid_points + g],
						o->curve_median[(size_t) p * o->grid_points + g]);
	}
	fclose(f);
	return 1;
}

/* --times: every draw's time to each threshold as CSV. */
static int
WriteTimes(const char *path, const ReplayCli *cli, const ReplayOutput *outs)
{
	FILE	   *f = fopen(path, "w");

	if (f == NULL)
	{
		fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n", path, strerror(errno));
		return 0;
	}
	fprintf(f, "devices,policy,draw,threshold,time,worst_regret,auc,runs\n");
	for (int di = 0; di < cli->ndev; di++)
	{
		const ReplayOutput *o = &outs[di];

		for (int p = 0; p < o->n_policies; p++)
			for (int d = 0; d < o->draws; d++)
				for (int k = 0; k < o->n_thresholds; k++)
				{
					size_t		pd = (size_t) p * o->draws + d;

					fprintf(f, "%d,\"%s\",%d,%g,%.6g,%.6g,%.6g,%d\n",
							cli->devices[di], o->names[p], d, o->thresholds[k],
							o->time_to[pd * o->n_thresholds + k],
							o->worst_regret[pd * o->n_thresholds + k],
							o->auc[pd], o->decisions[pd]);
				}
	}
	fclose(f);
	return 1;
}

/* --runs: where ReplayConfig.on_run writes, and what it cannot know. */
typedef struct RunTrace
{
	FILE	   *f;
	int			devices;
	char	  **names;
} RunTrace;

/* ReplayConfig.on_run of --runs: one CSV line per finished run. */
static void
WriteRun(void *arg, const ReplayRunRecord *r)
{
	RunTrace   *tr = arg;

	fprintf(tr->f, "%d,\"%s\",%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
			tr->devices, tr->names[r->policy], r->draw, r->tenant, r->arm,
			r->start, r->end, r->cost, r->quality, r->best, r->regret);
}

/* Run the study once per device count, printing each; 1 on success. */
static int
RunStudies(const ReplayCli *cli, ReplayConfig *cfg, ReplayOutput *outs)
{
	char		err[512];
	RunTrace	trace = {NULL, 0, (char **) cli->pol_items};
	int			ok = 0;

	if (cli->runs_path != NULL)
	{
		trace.f = fopen(cli->runs_path, "w");
		if (trace.f == NULL)
		{
			fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n",
					cli->runs_path, strerror(errno));
			return 0;
		}
		fprintf(trace.f, "devices,policy,draw,tenant,arm,start,end,cost,quality,best,regret\n");
		cfg->on_run = WriteRun;
		cfg->on_run_arg = &trace;
	}
	for (int di = 0; di < cli->ndev; di++)
	{
		double		t0 = Now();

		cfg->devices = cli->devices[di];
		trace.devices = cfg->devices;
		if (ReplayRun(cfg, &outs[di], err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: %s\n", err);
			goto done;
		}
		printf("# devices=%d: %.1f s wall; prior (draw 0): shrinkage=%g lengthscale=%g signal_var=%g noise_var=%g; "
			   "gp jitter=%d skipped=%d; cost estimate log-rmse=%.3f\n",
			   cli->devices[di], Now() - t0, outs[di].prior_shrinkage,
			   outs[di].prior_lengthscale, outs[di].prior_signal_var,
			   outs[di].prior_noise_var, outs[di].gp_jitter,
			   outs[di].gp_failed, outs[di].cost_log_rmse);
		if (outs[di].mix_bw > 0.0)
			printf("# history mixture (draw 0): bandwidth=%g shifted=%g\n",
				   outs[di].mix_bw, outs[di].mix_bw_shift);
		if (di == 0)
			printf("# identical rows removed before drawing tenants: %d (%d distinct rows left)\n",
				   outs[di].rows_removed, outs[di].rows_used);
		PrintStudy(&outs[di], cli->devices[di], (char **) cli->base_items, cli->nbase);
		PrintAutoChoices(&outs[di], cli->devices[di],
						 cli->auto_arg ? cli->auto_arg : POLICY_AUTO_CANDIDATES);
	}
	ok = 1;
done:
	if (trace.f != NULL && fclose(trace.f) != 0)
	{
		fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n",
				cli->runs_path, strerror(errno));
		ok = 0;
	}
	cfg->on_run = NULL;
	return ok;
}

static int
ReplayMain(int argc, char **argv)
{
	ReplayCli	cli = {.cost_model_name = "size_gp",.kernel_name = "empirical"};
	ReplayMatrix q = {0},
				c = {0},
				s = {0};
	double	   *sizes = NULL;
	ReplayConfig cfg;
	ReplayOutput outs[MAX_LIST];
	int			rc;

	memset(outs, 0, sizeof(outs));
	ReplayConfigDefault(&cfg);
	if ((rc = ParseReplayArgs(argc, argv, &cli, &cfg)) != 0)
		return rc == 1 ? 0 : rc;
	if (ParseReplayLists(&cli) != 0 || ParseReplayModels(&cli, &cfg) != 0)
		return 2;

	rc = 1;
	if (!ReadReplayInputs(&cli, &q, &c, &s, &sizes))
		goto done;
	cfg.quality = q.data;
	cfg.cost = cli.cost_path ? c.data : NULL;
	cfg.sizes = sizes;
	cfg.n_rows = q.rows;
	cfg.K = q.cols;
	cfg.n_policies = cli.npol;
	cfg.policies = (const char *const *) cli.pol_items;
	cfg.n_thresholds = cli.nthr;
	cfg.thresholds = cli.thresholds;
	if (cfg.cost == NULL)
		cfg.cost_model = POLICY_COST_NONE;

	printf("# easeml-replay: rows=%d arms=%d tenants=%d draws=%d seed=%llu "
		   "cost=%s overhead=%g cost_model=%s kernel=%s openblas_threads=1\n",
		   q.rows, q.cols, cfg.n_tenants, cfg.draws,
		   (unsigned long long) cfg.seed, cli.cost_path ? "file" : "unit", cfg.overhead,
		   cfg.oracle_cost ? "oracle (true costs: reference only)" :
		   PolicyCostKindName(cfg.cost_model), cli.kernel_name);
	if (RunStudies(&cli, &cfg, outs) &&
		(cli.ndev < 2 || PrintDeviceSpeedups(&cli, outs, cfg.draws)) &&
		(cli.curve_path == NULL || WriteCurves(cli.curve_path, &cli, outs)) &&
		(cli.times_path == NULL || WriteTimes(cli.times_path, &cli, outs)))
		rc = 0;

done:
	for (int di = 0; di < MAX_LIST; di++)
		ReplayOutputFree(&outs[di]);
	ReplayMatrixFree(&q);
	ReplayMatrixFree(&c);
	ReplayMatrixFree(&s);
	free(sizes);
	return rc;
}

/*
 * choose: the "auto" choice on a history given as files, every row in
 * file order, exactly as the live worker makes it on its installed
 * history (src/core/autopolicy.c; src/core/replay.h fixes every other input).
 */
static int
ChooseMain(int argc, char **argv)
{
	ReplayCli	cli = {.cost_model_name = "size_gp",.kernel_name = "empirical"};
	ReplayMatrix q = {0},
				c = {0},
				s = {0};
	double	   *sizes = NULL,
			   *cost = NULL;
	ReplayConfig cfg;
	ReplayAutoInput in;
	ReplayAutoJob job;
	char		err[512],
				name[REPLAY_NAME_LEN];
	int			rc;

	ReplayConfigDefault(&cfg);
	if ((rc = ParseReplayArgs(argc, argv, &cli, &cfg)) != 0)
		return rc == 1 ? 0 : rc;
	if (ParseReplayLists(&cli) != 0 || ParseReplayModels(&cli, &cfg) != 0)
		return 2;
	if (cli.ndev != 1)
	{
		fprintf(stderr, "easeml-replay choose: --devices takes one value\n");
		return 2;
	}
	rc = 1;
	if (!ReadReplayInputs(&cli, &q, &c, &s, &sizes))
		goto done;
	/* the live worker keeps every score in [0, 1] (R^2 may fall below) */
	for (size_t i = 0; i < (size_t) q.rows * q.cols; i++)
		q.data[i] = q.data[i] < 0.0 ? 0.0 : (q.data[i] > 1.0 ? 1.0 : q.data[i]);
	if (cli.cost_path)
	{
		/* a measurement holds the fixed part of a run too */
		cost = malloc(sizeof(double) * (size_t) q.rows * q.cols);
		if (cost == NULL)
			goto done;
		for (size_t i = 0; i < (size_t) q.rows * q.cols; i++)
			cost[i] = c.data[i] + cfg.overhead;
	}
	memset(&in, 0, sizeof(in));
	in.quality = q.data;
	in.cost = cost;
	in.sizes = cost ? sizes : NULL;
	in.n_rows = q.rows;
	in.K = q.cols;
	in.devices = cli.devices[0];
	in.candidates = cfg.auto_candidates;
	in.draws = cfg.auto_draws;
	rc = ReplayAutoBegin(&in, &job, err, sizeof(err));
	while (rc == 0)
		rc = ReplayAutoStep(&job, INFINITY, err, sizeof(err));
	if (rc < 0)
	{
		fprintf(stderr, "easeml-replay choose: %s\n", err);
		ReplayAutoFree(&job);
		rc = 1;
		goto done;
	}
	printf("CHOICE policy=%s index=%d chosen=%d rows=%d models=%d tenants=%d work=%.6g%s\n",
		   ReplayAutoSpec(cfg.auto_candidates, job.choice, name, sizeof(name)),
		   job.choice, job.choice != REPLAY_AUTO_FALLBACK,
		   q.rows < REPLAY_AUTO_MAX_ROWS ? q.rows : REPLAY_AUTO_MAX_ROWS, q.cols,
		   job.tenants, ReplayAutoWork(&job),
		   job.over_limit ? " (the replay would pass its work limit: the fallback)" : "");
	for (int i = 0; i < job.n_cand; i++)
		printf("SCORE candidate=%s score=%.17g\n", job.cands[i], job.score[i]);
	ReplayAutoFree(&job);
	rc = 0;

done:
	ReplayMatrixFree(&q);
	ReplayMatrixFree(&c);
	ReplayMatrixFree(&s);
	free(sizes);
	free(cost);
	return rc;
}

/* ----------------------------------------------------------------------
 * bench-decision: steady-state cost of one scheduling decision
 * ----------------------------------------------------------------------
 */

/* Logistic function. */
static double
Sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

/* Standard normal draw (Box-Muller). */
static double
RandNormal(uint64_t *rng)
{
	double		u1 = PolicyRandUniform(rng),
				u2 = PolicyRandUniform(rng);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Write a row-major matrix as CSV with a row-id column. */
static int
WriteMatrix(const char *dir, const char *name, const double *x, int rows,
			int cols)
{
	char		path[1024];
	FILE	   *f;
	int			r,
				k;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		return 0;
	fprintf(f, "id");
	for (k = 0; k < cols; k++)
		fprintf(f, ",c%d", k);
	fprintf(f, "\n");
	for (r = 0; r < rows; r++)
	{
		fprintf(f, "%d", r);
		for (k = 0; k < cols; k++)
			fprintf(f, ",%.17g", x[(size_t) r * cols + k]);
		fprintf(f, "\n");
	}
	return fclose(f) == 0;
}

/*
 * Synthetic world: m history rows + n tenant rows over K arms from a
 * low-rank logistic model (a shared model effect, a per-row difficulty and
 * a rank-3 interaction).  Tenants start with 'obs' random observations;
 * then 'decisions' times: the policy picks (tenant, arm), the run
 * "finishes" with the true value, the tenant's posterior is updated
 * incrementally, its candidate recomputed, and the next pick made.  The
 * timed part is exactly that update + recompute + pick.
 */
typedef struct BenchWorld
{
	int			n;				/* tenants */
	int			K;				/* arms */
	int			T;				/* observations per tenant before timing */
	int			m;				/* history rows */
	int			N;				/* timed decisions (the number made, after) */
	uint64_t	seed;
	const char *dump;
	int			empirical;
	ReplayPolicy pol;
	double	   *hist;			/* m x K */
	double	   *truth;			/* n x K */
	GpPrior		prior;
	GpState    *st;				/* n */
	unsigned char *avail;		/* n x K */
	PolicyTenantView *views;	/* n */
	int64_t    *last;			/* n: decision that last served it */
	int		   *streak;			/* n */
	int		   *seq_t;			/* N: tenant of each timed decision */
	int		   *seq_a;			/* N: its arm */
	int64_t		decision_no;
} BenchWorld;

/* Options of bench-decision into w; 0, or 2 with a message. */
static int
ParseBenchArgs(int argc, char **argv, BenchWorld *w)
{
	const char *spec = "hybrid";
	char		err[256];

	for (int i = 2; i < argc; i += 2)
	{
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
		long long	seed;
		int			ok = 1;

		if (v == NULL)
		{
			fprintf(stderr, "easeml-replay bench-decision: %s needs a value\n", a);
			return 2;
		}
		if (strcmp(a, "--tenants") == 0)
			ok = ParseInt(a, v, 1, 1000000, &w->n);
		else if (strcmp(a, "--arms") == 0)
			ok = ParseInt(a, v, 2, 1000000, &w->K);
		else if (strcmp(a, "--obs") == 0)
			ok = ParseInt(a, v, 0, 1000000, &w->T);
		else if (strcmp(a, "--history") == 0)
			ok = ParseInt(a, v, 2, 1000000, &w->m);
		else if (strcmp(a, "--decisions") == 0)
			ok = ParseInt(a, v, 1, 100000000, &w->N);
		else if (strcmp(a, "--seed") == 0)
			ok = ParseIntArg(a, v, 0, LLONG_MAX, &seed) && (w->seed = (uint64_t) seed, 1);
		else if (strcmp(a, "--dump") == 0)
			w->dump = v;
		else if (strcmp(a, "--policy") == 0)
			spec = v;
		else if (strcmp(a, "--kernel") == 0 &&
				 (strcmp(v, "rbf") == 0 || strcmp(v, "empirical") == 0))
			w->empirical = strcmp(v, "empirical") == 0;
		else
		{
			fprintf(stderr, "easeml-replay bench-decision: unknown argument \"%s\"\n", a);
			return 2;
		}
		if (!ok)
			return 2;
	}
	if (w->T >= w->K)
	{
		fprintf(stderr, "easeml-replay bench-decision: --obs must be below --arms\n");
		return 2;
	}
	if (ReplayParsePolicy(spec, &w->pol, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-replay bench-decision: %s\n", err);
		return 2;
	}
	return 0;
}

static void
BenchWorldFree(BenchWorld *w)
{
	if (w->st)
		for (int i = 0; i < w->n; i++)
			GpStateFree(&w->st[i]);
	GpPriorFree(&w->prior);
	free(w->hist);
	free(w->truth);
	free(w->st);
	free(w->avail);
	free(w->views);
	free(w->last);
	free(w->streak);
	free(w->seq_t);
	free(w->seq_a);
}

static int
BenchWorldAlloc(BenchWorld *w)
{
	int			n = w->n;

	w->hist = malloc(sizeof(double) * (size_t) w->m * w->K);
	w->truth = malloc(sizeof(double) * (size_t) n * w->K);
	w->st = calloc(n, sizeof(GpState));
	w->avail = malloc((size_t) n * w->K);
	w->views = calloc(n, sizeof(PolicyTenantView));
	w->last = malloc(sizeof(int64_t) * n);
	w->streak = calloc(n, sizeof(int));
	w->seq_t = malloc(sizeof(int) * w->N);
	w->seq_a = malloc(sizeof(int) * w->N);
	return w->hist && w->truth && w->st && w->avail && w->views && w->last &&
		w->streak && w->seq_t && w->seq_a;
}

/*
 * The synthetic quality matrix: history rows then tenant rows, from a
 * shared model effect, a per-row difficulty and a rank-3 interaction.
 */
static int
GenerateQuality(BenchWorld *w, uint64_t *rng)
{
	int			rows = w->m + w->n,
				K = w->K;
	double	   *A = malloc(sizeof(double) * (size_t) rows * 3);
	double	   *B = malloc(sizeof(double) * (size_t) K * 3);
	double	   *eff = malloc(sizeof(double) * (size_t) K);
	double	   *lat = malloc(sizeof(double) * (size_t) rows);
	int			ok = A && B && eff && lat;

	for (int k = 0; ok && k < K; k++)
	{
		eff[k] = 0.8 * RandNormal(rng);
		for (int r = 0; r < 3; r++)
			B[k * 3 + r] = RandNormal(rng);
	}
	for (int i = 0; ok && i < rows; i++)
	{
		lat[i] = 0.7 * RandNormal(rng);
		for (int r = 0; r < 3; r++)
			A[i * 3 + r] = 0.4 * RandNormal(rng);
	}
	for (int i = 0; ok && i < rows; i++)
		for (int k = 0; k < K; k++)
		{
			double		x = 1.0 + eff[k] + lat[i] + 0.05 * RandNormal(rng);

			for (int r = 0; r < 3; r++)
				x += A[i * 3 + r] * B[k * 3 + r];
			if (i < w->m)
				w->hist[(size_t) i * K + k] = Sigmoid(x);
			else
				w->truth[(size_t) (i - w->m) * K + k] = Sigmoid(x);
		}
	free(A);
	free(B);
	free(eff);
	free(lat);
	return ok;
}

/*
 * Steady state (not timed): T random observations per tenant, served
 * round-robin so far, each tenant's candidate ranked.
 */
static int
BenchSteadyState(BenchWorld *w, uint64_t *rng)
{
	int			K = w->K;

	memset(w->avail, 1, (size_t) w->n * K);
	for (int i = 0; i < w->n; i++)
	{
		const double *truth = w->truth + (size_t) i * K;
		double		best = 0.0;

		if (GpStateInit(&w->st[i], &w->prior, w->T + 16) < 0)
			return 0;
		for (int r = 0; r < w->T; r++)
		{
			int			a;

			do
				a = (int) (PolicyRandUniform(rng) * K);
			while (a >= K || !w->avail[(size_t) i * K + a]);
			w->avail[(size_t) i * K + a] = 0;
			GpStateAdd(&w->st[i], a, truth[a]);
			if (r == 0 || truth[a] > best)
				best = truth[a];
		}
		w->last[i] = (int64_t) w->T * w->n - w->n + i;
		w->views[i].id = i;
		w->views[i].best = best;
		w->views[i].n_obs = w->T;
		w->views[i].last_served = w->last[i];
		w->views[i].streak = 0;
		PolicyBestArm(&w->pol.params, K, w->st[i].mu, w->st[i].var, NULL,
					  w->avail + (size_t) i * K, w->prior.mu0, &w->views[i]);
	}
	w->decision_no = (int64_t) w->T * w->n;
	return 1;
}

/* --dump: the problem for scripts/bench/decision_sklearn.py. */
static int
DumpProblem(const BenchWorld *w)
{
	double		params[6];
	double	   *obs;
	int			ok;

	mkdir(w->dump, 0755);
	params[0] = w->prior.lengthscale;
	params[1] = w->prior.signal_var;
	params[2] = w->prior.noise_var;
	params[3] = PolicyBeta(&w->pol.params, w->K, w->T);
	params[4] = w->m;
	params[5] = w->K;
	/* observations: tenant, arm in observation order */
	obs = malloc(sizeof(double) * ((size_t) w->n * w->T * 2 + 1));
	if (obs == NULL)
		return 0;
	for (int i = 0; i < w->n; i++)
		for (int r = 0; r < w->T; r++)
		{
			obs[((size_t) i * w->T + r) * 2] = i;
			obs[((size_t) i * w->T + r) * 2 + 1] = w->st[i].arms[r];
		}
	ok = WriteMatrix(w->dump, "history.csv", w->hist, w->m, w->K) &&
		WriteMatrix(w->dump, "truth.csv", w->truth, w->n, w->K) &&
		WriteMatrix(w->dump, "prior_mean.csv", w->prior.mu0, 1, w->K) &&
		WriteMatrix(w->dump, "params.csv", params, 1, 6) &&
		WriteMatrix(w->dump, "observations.csv", obs, w->n * w->T, 2);
	free(obs);
	if (!ok)
		fprintf(stderr, "easeml-replay bench-decision: could not write to %s\n", w->dump);
	return ok;
}

/* The run of pick finished with y: the views' bookkeeping after it. */
static void
NoteResult(BenchWorld *w, int pick, double y)
{
	PolicyTenantView *v = &w->views[pick];

	if (y > v->best)
	{
		v->best = y;
		w->streak[pick] = 0;
	}
	else
		w->streak[pick]++;
	v->n_obs++;
	v->last_served = w->last[pick];
	v->streak = w->streak[pick];
}

/* Time N steady-state decisions: finish -> update -> recompute -> pick. */
static int
TimeDecisions(BenchWorld *w)
{
	double	   *ms = malloc(sizeof(double) * w->N);
	double		total = 0.0,
				t_add = 0.0,
				t_arm = 0.0,
				t_pick = 0.0;
	uint64_t	prng = w->seed;
	PolicyIndex index;
	int			pick,
				N = w->N,
				K = w->K;

	if (ms == NULL || PolicyIndexInit(&index, w->views, w->n, 0) != 0)
	{
		free(ms);
		return 0;
	}
	pick = PolicyIndexPick(&index, &w->pol.params, w->decision_no, &prng, NULL);
	for (int j = 0; j < N; j++)
	{
		double		t0,
					ta,
					tb,
					t1,
					y;
		int			a;

		if (pick < 0)
		{
			N = j;
			break;
		}
		a = w->views[pick].arm;
		w->seq_t[j] = pick;
		w->seq_a[j] = a;
		/* dispatch (bookkeeping of the pick itself, not timed again) */
		w->avail[(size_t) pick * K + a] = 0;
		w->last[pick] = w->decision_no++;
		y = w->truth[(size_t) pick * K + a];

		t0 = Now();
		/* the run finished: update the posterior incrementally */
		GpStateAdd(&w->st[pick], a, y);
		ta = Now();
		NoteResult(w, pick, y);
		/* its next candidate, then the next (tenant, arm) */
		PolicyBestArm(&w->pol.params, K, w->st[pick].mu, w->st[pick].var, NULL,
					  w->avail + (size_t) pick * K, w->prior.mu0, &w->views[pick]);
		tb = Now();
		PolicyIndexUpdate(&index, pick);
		pick = PolicyIndexPick(&index, &w->pol.params, w->decision_no, &prng, NULL);
		t1 = Now();
		t_add += ta - t0;
		t_arm += tb - ta;
		t_pick += t1 - tb;
		ms[j] = (t1 - t0) * 1e3;
		total += ms[j];
	}
	PolicyIndexFree(&index);
	w->N = N;
	printf("# bench-decision: tenants=%d arms=%d obs/tenant=%d history=%d decisions=%d policy=%s openblas_threads=1\n",
		   w->n, K, w->T, w->m, N, w->pol.name);
	printf("# prior: %s lengthscale=%g signal_var=%g shrinkage=%g noise_var=%g (fitted on the history)\n",
		   w->empirical ? "empirical" : "rbf", w->prior.lengthscale,
		   w->prior.signal_var, w->prior.shrinkage, w->prior.noise_var);
	printf("# mean per decision: posterior update %.2f us, candidate %.2f us, pick across tenants %.2f us\n",
		   N > 0 ? t_add / N * 1e6 : NAN, N > 0 ? t_arm / N * 1e6 : NAN,
		   N > 0 ? t_pick / N * 1e6 : NAN);
	{
		double		mean = N > 0 ? total / N : NAN;
		double		med = N > 0 ? MedianInPlace(ms, N) : NAN;	/* sorts ms */

		printf("DECISION median_ms=%.6f mean_ms=%.6f p99_ms=%.6f\n", med, mean,
			   N > 0 ? ms[(int) (0.99 * (N - 1))] : NAN);
	}
	free(ms);
	return 1;
}

/* --dump: the sequence of timed decisions, for the Python side to follow. */
static int
DumpSequence(const BenchWorld *w)
{
	char		path[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/sequence.csv", w->dump);
	if ((f = fopen(path, "w")) == NULL)
		return 0;
	fprintf(f, "step,tenant,arm\n");
	for (int i = 0; i < w->N; i++)
		fprintf(f, "%d,%d,%d\n", i, w->seq_t[i], w->seq_a[i]);
	return fclose(f) == 0;
}

static int
BenchDecision(int argc, char **argv)
{
	BenchWorld	w = {.n = 1000,.K = 200,.T = 50,.m = 100,.N = 2000,.seed = 1};
	GpPriorOptions opt;
	uint64_t	rng;
	int			grc,
				rc = 1;

	if ((rc = ParseBenchArgs(argc, argv, &w)) != 0)
		return rc;
	rc = 1;
	rng = w.seed * 0x9E3779B97F4A7C15ULL + 7;
	if (!BenchWorldAlloc(&w) || !GenerateQuality(&w, &rng))
	{
		fprintf(stderr, "easeml-replay bench-decision: out of memory\n");
		goto done;
	}

	/*
	 * RBF prior over history columns (comparable with scikit-learn's RBF),
	 * or with --kernel empirical the live scheduler's own
	 */
	memset(&opt, 0, sizeof(opt));
	opt.kernel = w.empirical ? GP_KERNEL_EMPIRICAL : GP_KERNEL_RBF;
	if ((grc = GpPriorFit(w.hist, w.m, w.K, &opt, &w.prior)) < 0)
	{
		fprintf(stderr, "easeml-replay bench-decision: prior: %s\n", GpStatusText(grc));
		goto done;
	}
	if (!BenchSteadyState(&w, &rng))
	{
		fprintf(stderr, "easeml-replay bench-decision: out of memory\n");
		goto done;
	}
	if ((w.dump == NULL || DumpProblem(&w)) && TimeDecisions(&w) &&
		(w.dump == NULL || DumpSequence(&w)))
		rc = 0;

done:
	BenchWorldFree(&w);
	return rc;
}

/* Entry point: "bench-decision" or the replay study. */
int
main(int argc, char **argv)
{
	openblas_set_num_threads(1);
	if (argc > 1 && strcmp(argv[1], "bench-decision") == 0)
		return BenchDecision(argc, argv);
	if (argc > 1 && strcmp(argv[1], "choose") == 0)
		return ChooseMain(argc - 1, argv + 1);
	return ReplayMain(argc, argv);
}
