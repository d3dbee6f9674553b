/*-------------------------------------------------------------------------
 *
 * replay_main.c
 *	  Command-line front end of the replay simulator (easeml-replay) and the
 *	  steady-state decision benchmark (easeml-replay bench-decision).
 *
 * All file I/O and printing lives here; src/replay.c is the library that
 * the SQL function easeml.replay(...) shares.  Machine-readable lines start
 * with an upper-case tag (TIME, SPEEDUP, DEVICE_SPEEDUP, DECISION) so that
 * the scripts in scripts/bench can pick them out.
 *
 * IDENTIFICATION
 *	  src/replay_main.c
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

#include "gp.h"
#include "policy.h"
#include "replay.h"

/* OpenBLAS: pin the pool to one thread (declared here, not in cblas.h everywhere) */
extern void openblas_set_num_threads(int num_threads);

#define MAX_LIST 64

/* Print usage to stderr. */
static void
Usage(void)
{
	fprintf(stderr,
			"usage: easeml-replay --quality FILE [options]\n"
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
			"  --policies P,P,..   policy specs (see src/replay.h), default popular,rr,max_ei:cost\n"
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
PrintAutoChoices(const ReplayOutput *out, int devices)
{
	char		list[] = POLICY_AUTO_CANDIDATES;
	char	   *names[8];
	int			nc = 0;

	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nc < 8;
		 tok = strtok_r(NULL, ",", &save))
		names[nc++] = tok;
	for (int p = 0; p < out->n_policies; p++)
	{
		int			count[8] = {0};

		if (out->auto_choice[(size_t) p * out->draws] < 0)
			continue;
		for (int d = 0; d < out->draws; d++)
			count[out->auto_choice[(size_t) p * out->draws + d]]++;
		printf("AUTO devices=%d policy=%s", devices, out->names[p]);
		for (int i = 0; i < nc; i++)
			printf(" %s=%d", names[i], count[i]);
		printf("\n");
	}
}

/* Main of the replay mode. */
static int
ReplayMain(int argc, char **argv)
{
	const char *quality_path = NULL,
			   *cost_path = NULL,
			   *sizes_path = NULL,
			   *curve_path = NULL,
			   *times_path = NULL;
	char	   *pol_arg = NULL,
			   *thr_arg = NULL,
			   *dev_arg = NULL,
			   *base_arg = NULL;
	char		default_pols[] = "popular,rr,max_ei:cost";
	char		default_thr[] = "0.05,0.02,0.01,0.005";
	char		default_dev[] = "1";
	char	   *pol_items[MAX_LIST],
			   *thr_items[MAX_LIST],
			   *dev_items[MAX_LIST],
			   *base_items[MAX_LIST];
	int			npol,
				nthr,
				ndev,
				nbase;
	double		thresholds[MAX_LIST];
	int			devices[MAX_LIST];
	int			error_matrix = 0;
	const char *cost_model_name = "size_gp";
	const char *kernel_name = "empirical";
	ReplayMatrix q = {0},
				c = {0},
				s = {0};
	double	   *sizes = NULL;
	ReplayConfig cfg;
	ReplayOutput outs[MAX_LIST];
	char		err[512];
	FILE	   *curve = NULL,
			   *times = NULL;
	int			rc = 1;
	int			i,
				di;
	double		t0;

	memset(outs, 0, sizeof(outs));
	ReplayConfigDefault(&cfg);
	for (i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;

#define NEED_VALUE() do { if (v == NULL) { fprintf(stderr, "easeml-replay: %s needs a value\n", a); return 2; } i++; } while (0)
		if (strcmp(a, "--quality") == 0)
		{
			NEED_VALUE();
			quality_path = v;
		}
		else if (strcmp(a, "--error") == 0)
			error_matrix = 1;
		else if (strcmp(a, "--cost") == 0)
		{
			NEED_VALUE();
			cost_path = v;
		}
		else if (strcmp(a, "--sizes") == 0)
		{
			NEED_VALUE();
			sizes_path = v;
		}
		else if (strcmp(a, "--cost-model") == 0)
		{
			NEED_VALUE();
			cost_model_name = v;
		}
		else if (strcmp(a, "--tenants") == 0)
		{
			NEED_VALUE();
			if (!ParseInt(a, v, 1, INT_MAX, &cfg.n_tenants))
				return 2;
		}
		else if (strcmp(a, "--prior-rows") == 0)
		{
			NEED_VALUE();
			if (!ParseInt(a, v, 0, INT_MAX, &cfg.n_prior))
				return 2;
		}
		else if (strcmp(a, "--devices") == 0)
		{
			NEED_VALUE();
			dev_arg = argv[i];
		}
		else if (strcmp(a, "--policies") == 0)
		{
			NEED_VALUE();
			pol_arg = argv[i];
		}
		else if (strcmp(a, "--draws") == 0)
		{
			NEED_VALUE();
			if (!ParseInt(a, v, 1, 100000, &cfg.draws))
				return 2;
		}
		else if (strcmp(a, "--seed") == 0)
		{
			long long	seed;

			NEED_VALUE();
			if (!ParseIntArg(a, v, 0, LLONG_MAX, &seed))
				return 2;
			cfg.seed = (uint64_t) seed;
		}
		else if (strcmp(a, "--thresholds") == 0)
		{
			NEED_VALUE();
			thr_arg = argv[i];
		}
		else if (strcmp(a, "--baselines") == 0)
		{
			NEED_VALUE();
			base_arg = argv[i];
		}
		else if (strcmp(a, "--kernel") == 0)
		{
			NEED_VALUE();
			kernel_name = v;
		}
		else if (strcmp(a, "--shrinkage") == 0)
		{
			NEED_VALUE();
			if (!ParseReal(a, v, 0.0, 1.0, 1, &cfg.prior.shrinkage))
				return 2;
		}
		else if (strcmp(a, "--noise-var") == 0)
		{
			NEED_VALUE();
			if (!ParseReal(a, v, 0.0, 1e6, 1, &cfg.prior.noise_var))
				return 2;
		}
		else if (strcmp(a, "--lengthscale") == 0)
		{
			NEED_VALUE();
			if (!ParseReal(a, v, 0.0, 1e6, 1, &cfg.prior.lengthscale))
				return 2;
		}
		else if (strcmp(a, "--signal-var") == 0)
		{
			NEED_VALUE();
			if (!ParseReal(a, v, 0.0, 1e6, 1, &cfg.prior.signal_var))
				return 2;
		}
		else if (strcmp(a, "--max-devices-per-tenant") == 0)
		{
			NEED_VALUE();
			if (!ParseInt(a, v, 0, 4096, &cfg.max_devices_per_tenant))
				return 2;
		}
		else if (strcmp(a, "--standardize-rows") == 0)
			cfg.prior.standardize_rows = 1;
		else if (strcmp(a, "--dense-prior-fit") == 0)
			cfg.prior.dense_fit = 1;
		else if (strcmp(a, "--stop-loss") == 0)
		{
			NEED_VALUE();
			if (!ParseReal(a, v, 0.0, 1.0, 0, &cfg.stop_loss))
				return 2;
		}
		else if (strcmp(a, "--overhead") == 0)
		{
			NEED_VALUE();
			if (!ParseReal(a, v, 0.0, 1e9, 0, &cfg.overhead))
				return 2;
		}
		else if (strcmp(a, "--curve") == 0)
		{
			NEED_VALUE();
			curve_path = v;
		}
		else if (strcmp(a, "--times") == 0)
		{
			NEED_VALUE();
			times_path = v;
		}
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		{
			Usage();
			return 0;
		}
		else
		{
			fprintf(stderr, "easeml-replay: unknown argument \"%s\"\n", a);
			Usage();
			return 2;
		}
#undef NEED_VALUE
	}
	if (quality_path == NULL)
	{
		Usage();
		return 2;
	}

	npol = SplitList("--policies", pol_arg ? pol_arg : default_pols, pol_items);
	nthr = SplitList("--thresholds", thr_arg ? thr_arg : default_thr, thr_items);
	ndev = SplitList("--devices", dev_arg ? dev_arg : default_dev, dev_items);
	nbase = base_arg ? SplitList("--baselines", base_arg, base_items) : 0;
	if (npol < 0 || nthr < 0 || ndev < 0 || nbase < 0)
		return 2;
	if (nbase == 0)
	{
		base_items[0] = pol_items[0];
		nbase = 1;
	}
	for (i = 0; i < nthr; i++)
		if (!ParseReal("--thresholds", thr_items[i], 0.0, 1.0, 0, &thresholds[i]))
			return 2;
	for (i = 0; i < ndev; i++)
		if (!ParseInt("--devices", dev_items[i], 1, 4096, &devices[i]))
			return 2;
	for (i = 0; i < nbase; i++)
	{
		int			j;

		for (j = 0; j < npol; j++)
			if (strcmp(base_items[i], pol_items[j]) == 0)
				break;
		if (j == npol)
		{
			fprintf(stderr, "easeml-replay: baseline \"%s\" is not one of --policies\n",
					base_items[i]);
			return 2;
		}
	}

	if (strcmp(cost_model_name, "oracle") == 0)
		cfg.oracle_cost = 1;
	else
	{
		int			cm = PolicyCostKindFromName(cost_model_name);

		if (cm < 0)
		{
			fprintf(stderr, "easeml-replay: unknown cost model \"%s\"\n", cost_model_name);
			return 2;
		}
		cfg.cost_model = (PolicyCostKind) cm;
	}
	if (strcmp(kernel_name, "empirical") == 0)
		cfg.prior.kernel = GP_KERNEL_EMPIRICAL;
	else if (strcmp(kernel_name, "rbf") == 0)
		cfg.prior.kernel = GP_KERNEL_RBF;
	else
	{
		fprintf(stderr, "easeml-replay: unknown kernel \"%s\"\n", kernel_name);
		return 2;
	}

	if (ReplayReadCsv(quality_path, &q, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-replay: %s\n", err);
		goto done;
	}
	if (error_matrix)
		ReplayOneMinus(&q);
	if (cost_path)
	{
		if (ReplayReadCsv(cost_path, &c, err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: %s\n", err);
			goto done;
		}
		if (c.rows != q.rows || c.cols != q.cols)
		{
			fprintf(stderr, "easeml-replay: cost is %d x %d but quality is %d x %d\n",
					c.rows, c.cols, q.rows, q.cols);
			goto done;
		}
		for (i = 0; i < q.rows; i++)
			if (strcmp(c.row_ids[i], q.row_ids[i]) != 0)
			{
				fprintf(stderr, "easeml-replay: row %d: cost id \"%s\" differs from quality id \"%s\"\n",
						i + 1, c.row_ids[i], q.row_ids[i]);
				goto done;
			}
	}
	if (sizes_path)
	{
		if (ReplayReadCsv(sizes_path, &s, err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: %s\n", err);
			goto done;
		}
		if (s.cols < 2)
		{
			fprintf(stderr, "easeml-replay: sizes need two columns (rows, features)\n");
			goto done;
		}
		sizes = malloc(sizeof(double) * (size_t) q.rows * s.cols);
		if (sizes == NULL)
			goto done;
		if (ReplayJoinById(&q, &s, sizes, err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: %s\n", err);
			goto done;
		}
		if (s.cols > 2)
		{
			/* keep the first two columns */
			for (i = 0; i < q.rows; i++)
			{
				sizes[2 * i] = sizes[(size_t) i * s.cols];
				sizes[2 * i + 1] = sizes[(size_t) i * s.cols + 1];
			}
		}
	}

	cfg.quality = q.data;
	cfg.cost = cost_path ? c.data : NULL;
	cfg.sizes = sizes;
	cfg.n_rows = q.rows;
	cfg.K = q.cols;
	cfg.n_policies = npol;
	cfg.policies = (const char *const *) pol_items;
	cfg.n_thresholds = nthr;
	cfg.thresholds = thresholds;
	if (cfg.cost == NULL)
		cfg.cost_model = POLICY_COST_NONE;

	printf("# easeml-replay: rows=%d arms=%d tenants=%d draws=%d seed=%llu "
		   "cost=%s overhead=%g cost_model=%s kernel=%s openblas_threads=1\n",
		   q.rows, q.cols, cfg.n_tenants, cfg.draws,
		   (unsigned long long) cfg.seed, cost_path ? "file" : "unit", cfg.overhead,
		   cfg.oracle_cost ? "oracle (true costs: reference only)" :
		   PolicyCostKindName(cfg.cost_model), kernel_name);

	for (di = 0; di < ndev; di++)
	{
		cfg.devices = devices[di];
		t0 = Now();
		if (ReplayRun(&cfg, &outs[di], err, sizeof(err)) != 0)
		{
			fprintf(stderr, "easeml-replay: %s\n", err);
			goto done;
		}
		printf("# devices=%d: %.1f s wall; prior (draw 0): shrinkage=%g lengthscale=%g signal_var=%g noise_var=%g; "
			   "gp jitter=%d skipped=%d; cost estimate log-rmse=%.3f\n",
			   devices[di], Now() - t0, outs[di].prior_shrinkage,
			   outs[di].prior_lengthscale, outs[di].prior_signal_var,
			   outs[di].prior_noise_var, outs[di].gp_jitter,
			   outs[di].gp_failed, outs[di].cost_log_rmse);
		if (di == 0)
			printf("# identical rows removed before drawing tenants: %d (%d distinct rows left)\n",
				   outs[di].rows_removed, outs[di].rows_used);
		PrintStudy(&outs[di], devices[di], base_items, nbase);
		PrintAutoChoices(&outs[di], devices[di]);
	}

	/* speedup of each device count over the first, per draw */
	if (ndev > 1)
	{
		int			p,
					k,
					d;
		double	   *r = malloc(sizeof(double) * cfg.draws);

		if (r == NULL)
			goto done;
		printf("\n## speedup over devices=%d (median over draws of the per-draw ratio)\n",
			   devices[0]);
		for (di = 1; di < ndev; di++)
			for (p = 0; p < npol; p++)
				for (k = 0; k < nthr; k++)
				{
					int			j,
								m;
					double		med;

					for (d = 0; d < cfg.draws; d++)
					{
						double		a = outs[0].time_to[((size_t) p * cfg.draws + d) * nthr + k];
						double		b = outs[di].time_to[((size_t) p * cfg.draws + d) * nthr + k];

						r[d] = isinf(b) ? 0.0 : (b > 0.0 ? a / b : 1.0);
					}
					/* insertion sort for the median */
					for (j = 1; j < cfg.draws; j++)
					{
						double		x = r[j];

						for (m = j - 1; m >= 0 && r[m] > x; m--)
							r[m + 1] = r[m];
						r[m + 1] = x;
					}
					med = (cfg.draws % 2) ? r[cfg.draws / 2] :
						0.5 * (r[cfg.draws / 2 - 1] + r[cfg.draws / 2]);
					printf("DEVICE_SPEEDUP devices=%d over=%d policy=%s thr=%g median=%.4f\n",
						   devices[di], devices[0], pol_items[p], thresholds[k], med);
				}
		free(r);
	}

	if (curve_path)
	{
		curve = fopen(curve_path, "w");
		if (curve == NULL)
		{
			fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n", curve_path, strerror(errno));
			goto done;
		}
		fprintf(curve, "devices,policy,time,mean_loss,median_loss\n");
		for (di = 0; di < ndev; di++)
		{
			int			p,
						g;

			for (p = 0; p < outs[di].n_policies; p++)
				for (g = 0; g < outs[di].grid_points; g++)
					fprintf(curve, "%d,\"%s\",%.6g,%.6g,%.6g\n", devices[di],
							outs[di].names[p], outs[di].grid[g],
							outs[di].curve_mean[(size_t) p * outs[di].grid_points + g],
							outs[di].curve_median[(size_t) p * outs[di].grid_points + g]);
		}
	}
	if (times_path)
	{
		times = fopen(times_path, "w");
		if (times == NULL)
		{
			fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n", times_path, strerror(errno));
			goto done;
		}
		fprintf(times, "devices,policy,draw,threshold,time,worst_regret,auc,runs\n");
		for (di = 0; di < ndev; di++)
		{
			int			p,
						d,
						k;
			ReplayOutput *o = &outs[di];

			for (p = 0; p < o->n_policies; p++)
				for (d = 0; d < o->draws; d++)
					for (k = 0; k < o->n_thresholds; k++)
					{
						size_t		pd = (size_t) p * o->draws + d;

						fprintf(times, "%d,\"%s\",%d,%g,%.6g,%.6g,%.6g,%d\n",
								devices[di], o->names[p], d, o->thresholds[k],
								o->time_to[pd * o->n_thresholds + k],
								o->worst_regret[pd * o->n_thresholds + k],
								o->auc[pd], o->decisions[pd]);
					}
		}
	}
	rc = 0;

done:
	if (curve)
		fclose(curve);
	if (times)
		fclose(times);
	for (di = 0; di < MAX_LIST; di++)
		ReplayOutputFree(&outs[di]);
	ReplayMatrixFree(&q);
	ReplayMatrixFree(&c);
	ReplayMatrixFree(&s);
	free(sizes);
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
static int
BenchDecision(int argc, char **argv)
{
	int			n = 1000,
				K = 200,
				T = 50,
				m = 100,
				N = 2000;
	uint64_t	seed = 1;
	const char *dump = NULL;
	const char *spec = "hybrid";
	int			empirical = 0;
	ReplayPolicy pol;
	char		err[256];
	uint64_t	rng;
	double	   *hist = NULL,
			   *truth = NULL,
			   *A = NULL,
			   *B = NULL,
			   *eff = NULL,
			   *lat = NULL;
	GpPrior		prior;
	GpPriorOptions opt;
	GpState    *st = NULL;
	unsigned char *avail = NULL;
	PolicyTenantView *views = NULL;
	double	   *best = NULL;
	int		   *nobs = NULL,
			   *seq_t = NULL,
			   *seq_a = NULL;
	int64_t    *last = NULL;
	int		   *streak = NULL;
	int64_t		decision_no = 0;
	int			i,
				k,
				r,
				rc = 1,
				grc;
	FILE	   *f = NULL;

	memset(&prior, 0, sizeof(prior));
	for (i = 2; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;

		if (v == NULL)
		{
			fprintf(stderr, "easeml-replay bench-decision: %s needs a value\n", a);
			return 2;
		}
		if (strcmp(a, "--tenants") == 0)
			n = atoi(v);
		else if (strcmp(a, "--arms") == 0)
			K = atoi(v);
		else if (strcmp(a, "--obs") == 0)
			T = atoi(v);
		else if (strcmp(a, "--history") == 0)
			m = atoi(v);
		else if (strcmp(a, "--decisions") == 0)
			N = atoi(v);
		else if (strcmp(a, "--seed") == 0)
			seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--dump") == 0)
			dump = v;
		else if (strcmp(a, "--policy") == 0)
			spec = v;
		else if (strcmp(a, "--kernel") == 0 &&
				 (strcmp(v, "rbf") == 0 || strcmp(v, "empirical") == 0))
			empirical = strcmp(v, "empirical") == 0;
		else
		{
			fprintf(stderr, "easeml-replay bench-decision: unknown argument \"%s\"\n", a);
			return 2;
		}
		i++;
	}
	if (n <= 0 || K <= 1 || T < 0 || T >= K || m < 2 || N <= 0)
	{
		fprintf(stderr, "easeml-replay bench-decision: bad sizes\n");
		return 2;
	}
	if (ReplayParsePolicy(spec, &pol, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-replay bench-decision: %s\n", err);
		return 2;
	}

	rng = seed * 0x9E3779B97F4A7C15ULL + 7;
	hist = malloc(sizeof(double) * (size_t) m * K);
	truth = malloc(sizeof(double) * (size_t) n * K);
	A = malloc(sizeof(double) * (size_t) (m + n) * 3);
	B = malloc(sizeof(double) * (size_t) K * 3);
	eff = malloc(sizeof(double) * (size_t) K);
	lat = malloc(sizeof(double) * (size_t) (m + n));
	st = calloc(n, sizeof(GpState));
	avail = malloc((size_t) n * K);
	views = calloc(n, sizeof(PolicyTenantView));
	best = calloc(n, sizeof(double));
	nobs = calloc(n, sizeof(int));
	last = malloc(sizeof(int64_t) * n);
	streak = calloc(n, sizeof(int));
	seq_t = malloc(sizeof(int) * N);
	seq_a = malloc(sizeof(int) * N);
	if (!hist || !truth || !A || !B || !eff || !lat || !st || !avail ||
		!views || !best || !nobs || !last || !streak || !seq_t || !seq_a)
	{
		fprintf(stderr, "easeml-replay bench-decision: out of memory\n");
		goto done;
	}
	for (k = 0; k < K; k++)
	{
		eff[k] = 0.8 * RandNormal(&rng);
		for (r = 0; r < 3; r++)
			B[k * 3 + r] = RandNormal(&rng);
	}
	for (i = 0; i < m + n; i++)
	{
		lat[i] = 0.7 * RandNormal(&rng);
		for (r = 0; r < 3; r++)
			A[i * 3 + r] = 0.4 * RandNormal(&rng);
	}
	for (i = 0; i < m + n; i++)
		for (k = 0; k < K; k++)
		{
			double		x = 1.0 + eff[k] + lat[i] + 0.05 * RandNormal(&rng);

			for (r = 0; r < 3; r++)
				x += A[i * 3 + r] * B[k * 3 + r];
			if (i < m)
				hist[(size_t) i * K + k] = Sigmoid(x);
			else
				truth[(size_t) (i - m) * K + k] = Sigmoid(x);
		}

	/*
	 * RBF prior over history columns (comparable with scikit-learn's RBF),
	 * or with --kernel empirical the live scheduler's own
	 */
	memset(&opt, 0, sizeof(opt));
	opt.kernel = empirical ? GP_KERNEL_EMPIRICAL : GP_KERNEL_RBF;
	grc = GpPriorFit(hist, m, K, &opt, &prior);
	if (grc < 0)
	{
		fprintf(stderr, "easeml-replay bench-decision: prior: %s\n", GpStatusText(grc));
		goto done;
	}

	/* steady state: T random observations per tenant (not timed) */
	memset(avail, 1, (size_t) n * K);
	for (i = 0; i < n; i++)
	{
		last[i] = -1;
		if (GpStateInit(&st[i], &prior, T + 16) < 0)
		{
			fprintf(stderr, "easeml-replay bench-decision: out of memory\n");
			goto done;
		}
		for (r = 0; r < T; r++)
		{
			int			a;

			do
				a = (int) (PolicyRandUniform(&rng) * K);
			while (a >= K || !avail[(size_t) i * K + a]);
			avail[(size_t) i * K + a] = 0;
			GpStateAdd(&st[i], a, truth[(size_t) i * K + a]);
			if (r == 0 || truth[(size_t) i * K + a] > best[i])
				best[i] = truth[(size_t) i * K + a];
			nobs[i]++;
		}
		/* decisions so far were served round-robin */
		last[i] = (int64_t) T * n - n + i;
		views[i].id = i;
		views[i].best = best[i];
		views[i].n_obs = nobs[i];
		views[i].last_served = last[i];
		views[i].streak = 0;
		PolicyBestArm(&pol.params, K, st[i].mu, st[i].var, NULL,
					  avail + (size_t) i * K, prior.mu0, &views[i]);
	}
	decision_no = (int64_t) T * n;

	if (dump)
	{
		char		path[1024];
		double	   *obs;
		double		params[6];

		mkdir(dump, 0755);
		params[0] = prior.lengthscale;
		params[1] = prior.signal_var;
		params[2] = prior.noise_var;
		params[3] = PolicyBeta(&pol.params, K, T);
		params[4] = m;
		params[5] = K;
		if (!WriteMatrix(dump, "history.csv", hist, m, K) ||
			!WriteMatrix(dump, "truth.csv", truth, n, K) ||
			!WriteMatrix(dump, "prior_mean.csv", prior.mu0, 1, K) ||
			!WriteMatrix(dump, "params.csv", params, 1, 6))
		{
			fprintf(stderr, "easeml-replay bench-decision: could not write to %s\n", dump);
			goto done;
		}
		/* observations: tenant, arm in observation order */
		obs = malloc(sizeof(double) * (size_t) n * T * 2);
		if (obs == NULL)
			goto done;
		for (i = 0; i < n; i++)
			for (r = 0; r < T; r++)
			{
				obs[((size_t) i * T + r) * 2] = i;
				obs[((size_t) i * T + r) * 2 + 1] = st[i].arms[r];
			}
		if (!WriteMatrix(dump, "observations.csv", obs, n * T, 2))
		{
			free(obs);
			goto done;
		}
		free(obs);
		(void) path;
	}

	/* timed steady state: finish -> update -> recompute -> pick */
	{
		double	   *ms = malloc(sizeof(double) * N);
		double		total = 0.0,
					med;
		double		t_add = 0.0,
					t_arm = 0.0,
					t_pick = 0.0;
		uint64_t	prng = seed;
		PolicyIndex index;
		int			pick;
		int			j,
					mm;

		if (ms == NULL)
			goto done;
		if (PolicyIndexInit(&index, views, n, 0) != 0)
		{
			free(ms);
			goto done;
		}
		pick = PolicyIndexPick(&index, &pol.params, decision_no, &prng, NULL);
		for (j = 0; j < N; j++)
		{
			double		t0,
						t1,
						ta,
						tb,
						y;
			int			a;

			if (pick < 0)
			{
				N = j;
				break;
			}
			a = views[pick].arm;
			seq_t[j] = pick;
			seq_a[j] = a;
			/* dispatch (bookkeeping of the pick itself, not timed again) */
			avail[(size_t) pick * K + a] = 0;
			last[pick] = decision_no++;
			y = truth[(size_t) pick * K + a];

			t0 = Now();
			/* the run finished: update the posterior incrementally */
			GpStateAdd(&st[pick], a, y);
			ta = Now();
			if (y > best[pick])
			{
				best[pick] = y;
				streak[pick] = 0;
			}
			else
				streak[pick]++;
			nobs[pick]++;
			views[pick].best = best[pick];
			views[pick].n_obs = nobs[pick];
			views[pick].last_served = last[pick];
			views[pick].streak = streak[pick];
			/* its next candidate, then the next (tenant, arm) */
			PolicyBestArm(&pol.params, K, st[pick].mu, st[pick].var, NULL,
						  avail + (size_t) pick * K, prior.mu0, &views[pick]);
			tb = Now();
			PolicyIndexUpdate(&index, pick);
			pick = PolicyIndexPick(&index, &pol.params, decision_no, &prng, NULL);
			t1 = Now();
			t_add += ta - t0;
			t_arm += tb - ta;
			t_pick += t1 - tb;
			ms[j] = (t1 - t0) * 1e3;
			total += ms[j];
		}
		for (j = 1; j < N; j++)
		{
			double		x = ms[j];

			for (mm = j - 1; mm >= 0 && ms[mm] > x; mm--)
				ms[mm + 1] = ms[mm];
			ms[mm + 1] = x;
		}
		med = N > 0 ? ((N % 2) ? ms[N / 2] : 0.5 * (ms[N / 2 - 1] + ms[N / 2])) : NAN;
		printf("# bench-decision: tenants=%d arms=%d obs/tenant=%d history=%d decisions=%d policy=%s openblas_threads=1\n",
			   n, K, T, m, N, pol.name);
		printf("# prior: %s lengthscale=%g signal_var=%g shrinkage=%g noise_var=%g (fitted on the history)\n",
			   empirical ? "empirical" : "rbf", prior.lengthscale,
			   prior.signal_var, prior.shrinkage, prior.noise_var);
		PolicyIndexFree(&index);
		printf("# mean per decision: posterior update %.2f us, candidate %.2f us, pick across tenants %.2f us\n",
			   N > 0 ? t_add / N * 1e6 : NAN, N > 0 ? t_arm / N * 1e6 : NAN,
			   N > 0 ? t_pick / N * 1e6 : NAN);
		printf("DECISION median_ms=%.6f mean_ms=%.6f p99_ms=%.6f\n", med,
			   N > 0 ? total / N : NAN, N > 0 ? ms[(int) (0.99 * (N - 1))] : NAN);
		free(ms);
	}

	if (dump)
	{
		char		path[1024];

		snprintf(path, sizeof(path), "%s/sequence.csv", dump);
		f = fopen(path, "w");
		if (f == NULL)
			goto done;
		fprintf(f, "step,tenant,arm\n");
		for (i = 0; i < N; i++)
			fprintf(f, "%d,%d,%d\n", i, seq_t[i], seq_a[i]);
		fclose(f);
		f = NULL;
	}
	rc = 0;

done:
	if (st)
		for (i = 0; i < n; i++)
			GpStateFree(&st[i]);
	GpPriorFree(&prior);
	free(hist);
	free(truth);
	free(A);
	free(B);
	free(eff);
	free(lat);
	free(st);
	free(avail);
	free(views);
	free(best);
	free(nobs);
	free(last);
	free(streak);
	free(seq_t);
	free(seq_a);
	return rc;
}

/* Entry point: "bench-decision" or the replay study. */
int
main(int argc, char **argv)
{
	openblas_set_num_threads(1);
	if (argc > 1 && strcmp(argv[1], "bench-decision") == 0)
		return BenchDecision(argc, argv);
	return ReplayMain(argc, argv);
}
