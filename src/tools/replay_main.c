/*-------------------------------------------------------------------------
 *
 * replay_main.c
 *	  Entry point of easeml-replay: the replay study (the default mode),
 *	  "choose" (the auto choice on a history) and "bench-decision"
 *	  (replay_bench_decision.c).
 *
 * All file I/O and printing of the simulator lives in src/tools; the
 * library (src/core/replay_*.c, replay.h) is what the SQL function
 * easeml.replay(...) shares.  Machine-readable lines start with an
 * upper-case tag (TIME, SPEEDUP, DEVICE_SPEEDUP, DECISION, CHOICE) so that
 * the scripts in scripts/bench can pick them out.  The command line is
 * parsed in replay_args.c, results printed in replay_report.c.
 *
 * IDENTIFICATION
 *	  src/tools/replay_main.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/replay.h"
#include "tools/replay_cli.h"

/* OpenBLAS: pin the pool to one thread (declared here, not in cblas.h everywhere) */
extern void openblas_set_num_threads(int num_threads);

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
				name[REPLAY_NAME_LEN],
				opts[REPLAY_NAME_LEN];
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
	/* --policies auto:OPTIONS: the candidates compete with those options */
	opts[0] = '\0';
	if (cli.pol_arg != NULL)
	{
		PolicyParams pp;

		if (cli.npol != 1 || PolicyParseSpec(cli.pol_items[0], &pp, err, sizeof(err)) != POLICY_OK ||
			(!pp.auto_select && snprintf(err, sizeof(err), "\"%s\" is not auto", cli.pol_items[0]) > 0))
		{
			fprintf(stderr, "easeml-replay choose: --policies takes one auto spec (auto[:OPTION]...)%s%s\n",
					cli.npol == 1 ? ": " : "", cli.npol == 1 ? err : "");
			return 2;
		}
		PolicyAutoOptions(&pp, opts, sizeof(opts));
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
	in.options = opts;
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
		   ReplayAutoChosen(&job, name, sizeof(name)) ? name : "?",
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

/*
 * grammar: the policy grammar's tables (src/core/policy_spec.c) as
 * docs/scheduler.md 3 holds them, to stdout.
 */
static int
GrammarMain(void)
{
	size_t		len = PolicyGrammarTable(NULL, 0, 1) + 1;
	char	   *text = malloc(len);

	if (text == NULL)
		return 1;
	PolicyGrammarTable(text, len, 1);
	fputs(text, stdout);
	free(text);
	return 0;
}

/* Entry point: "bench-decision", "choose", "grammar" or the replay study. */
int
main(int argc, char **argv)
{
	openblas_set_num_threads(1);
	if (argc == 2 && strcmp(argv[1], "grammar") == 0)
		return GrammarMain();
	if (argc > 1 && strcmp(argv[1], "bench-decision") == 0)
		return BenchDecision(argc, argv);
	if (argc > 1 && strcmp(argv[1], "choose") == 0)
		return ChooseMain(argc - 1, argv + 1);
	return ReplayMain(argc, argv);
}
