/*-------------------------------------------------------------------------
 *
 * replay_args.c
 *	  easeml-replay's command line: the usage text, option parsing into a
 *	  ReplayCli and a ReplayConfig, the lists (policies, thresholds,
 *	  devices, baselines), the models, and reading the input matrices the
 *	  options name.
 *
 * IDENTIFICATION
 *	  src/tools/replay_args.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/replay.h"
#include "tools/replay_cli.h"

/* Print usage, and the policy grammar (src/core/policy_spec.c), to stderr. */
static void
Usage(void)
{
	size_t		len = PolicyGrammarTable(NULL, 0, 0) + 1;
	char	   *grammar = malloc(len);

	fprintf(stderr,
			"usage: easeml-replay --quality FILE [options]\n"
			"       easeml-replay choose --quality FILE [options]\n"
			"       easeml-replay bench-decision [options]\n"
			"       easeml-replay grammar   (the policy grammar as docs/scheduler.md's tables)\n"
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
			"  --policies P,P,..   policy specs (below), default popular,rr,max_ei:cost\n"
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
			"  runtime, as a measurement holds it), --devices M (slots), --policies\n"
			"  auto:OPTIONS (the setting's options that apply after auto, on every\n"
			"  candidate), and the experiments --auto-candidates, --auto-draws.\n"
			"  Prints CHOICE and SCORE lines (scores as easeml.policy_choices\n"
			"  records them).\n"
			"\n"
			"bench-decision options:\n"
			"  --tenants N (1000) --arms K (200) --obs T (50) --history M (100)\n"
			"  --decisions N (2000) --seed S (1) --policy SPEC (default hybrid)\n"
			"  --kernel rbf|empirical  prior covariance (default rbf, as scikit-learn's)\n"
			"  --dump DIR          write the problem and the decision sequence for the\n"
			"                      Python peers (scripts/bench/decision_peer.py)\n");
	if (grammar != NULL)
	{
		PolicyGrammarTable(grammar, len, 0);
		fprintf(stderr, "\n%s", grammar);
		free(grammar);
	}
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
int
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
int
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
int
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
int
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
int
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
int
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
