/*-------------------------------------------------------------------------
 *
 * replay_bench_decision.c
 *	  easeml-replay bench-decision: the steady-state cost of one scheduling
 *	  decision on a synthetic world (GP update, candidate recompute, pick),
 *	  timed, with --dump writing the problem and the decisions for
 *	  scripts/bench/decision_peer.py.  (easeml-decision-bench,
 *	  src/tools/decision_bench.c, times the live worker's DecisionWorld
 *	  instead.)
 *
 * IDENTIFICATION
 *	  src/tools/replay_bench_decision.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/replay.h"
#include "tools/replay_cli.h"

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

/* --dump: the problem for scripts/bench/decision_peer.py. */
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

int
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
