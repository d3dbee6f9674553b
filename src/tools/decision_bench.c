/*-------------------------------------------------------------------------
 *
 * decision_bench.c
 *	  easeml-decision-bench: the cost of one decision of the live worker's
 *	  own decision code (src/core/decision_*.c), for scripts/bench/decision.sh.
 *
 * It reads the problem `easeml-replay bench-decision --dump DIR` wrote
 * (history, truth, each task's first observations) and builds the world
 * the worker keeps (src/worker/liveworld.c): one DecisionWorld, 1,000 tasks of
 * 200 tenants (five each), the worker's default fair share
 * (tenant_cap = -1, two slots), runner-ups computed (explain on), the
 * prior fitted as bench-decision fits it.  Each task's first observations
 * go in round-robin order, as bench-decision assumes.  Then, per decision,
 * exactly what the worker does once a run has ended and a slot is free:
 *
 *	 the ended task's state is handed over (DecisionSyncTask, as
 *	 LiveWorldSync does for a task whose result is new), DecisionNext picks
 *	 the next (task, candidate), DecisionStart records it as running.
 *
 * An optional third argument is the policy spec (default "hybrid";
 * "default-candidate" is the first of POLICY_AUTO_CANDIDATES, what the
 * shipped default runs on most histories); one that uses the history
 * mixture (acq=mix, mrg=1|2) gets the mixture, and mrg=2's learned score
 * on it, fitted on the bench's history as the refit
 * cycle fits them (src/core/refit.c), each fit timed apart (they are off the
 * decision path).  decision.sh times "hybrid" against its peers
 * (scripts/bench/decision_peer.py), which make hybrid's decisions, and the
 * live default's candidate alone (no peer makes its decisions).
 *
 * That sequence is timed per decision, in this thread's CPU time (the
 * wall-clock median is printed beside it).  It writes DIR/sequence.csv,
 * each choice with the CPU time of the decision that made it, so that
 * scripts/bench/decision_peer.py makes the same decisions and decision.sh
 * can pair their times.  Besides the per-decision time it reports what
 * one full LiveWorldSync pass over every task costs when nothing changed
 * (the worker makes one per catalog load, not per decision).
 *
 * IDENTIFICATION
 *	  src/tools/decision_bench.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "core/decision.h"
#include "core/gp.h"
#include "core/mixlearn.h"
#include "core/policy.h"
#include "core/replay.h"
#include "core/sortutil.h"

#define TASKS_PER_TENANT 5

static double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * This thread's CPU time: what a decision costs on a shared machine, where
 * wall time also counts other processes' slices (the Python peers are timed
 * the same way, time.thread_time).
 */
static double
CpuNow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
ReadOrDie(const char *dir, const char *name, ReplayMatrix *m)
{
	char		path[1024];
	char		err[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (ReplayReadCsv(path, m, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "easeml-decision-bench: %s\n", err);
		return 0;
	}
	return 1;
}

/* The state the worker hands over for task t (LiveWorldSync's SyncTask). */
static void
TaskState(const DecisionWorld *w, const DecisionTask *t, unsigned char *state,
		  double *score, DecisionTaskState *s)
{
	for (int k = 0; k < w->K; k++)
	{
		state[k] = t->arm[k];
		score[k] = t->score[k];
	}
	s->state = state;
	s->score = score;
	s->seconds = t->seconds;
	s->passes = t->passes;
	s->fallback_cost = NULL;
	s->bins = t->bins;
	s->n_runs = t->n_runs;
	s->max_runs = t->max_runs;
	s->blocked = t->blocked;
	s->last_served = t->last_served;
	s->streak = t->streak;
}

/*
 * mrg=2's learned score on the bench's mixture, fitted as the refit cycle
 * fits it (at the tasks' typical costs) and installed, so that no decision
 * fits it (mix_learn_by_refit, as in the live world).
 */
static int
InstallLearned(DecisionWorld *w, const MixPrior *mix, const PolicyParams *pp)
{
	double	   *cost = malloc(sizeof(double) * w->K);
	double		t0 = Now();
	MixLearn	ml;
	int			rc = -1;

	if (cost == NULL)
		return -1;
	DecisionTypicalCost(w, DECISION_CLASSIFICATION, cost);
	if (MixLearnFit(&ml, mix, pp, pp->cost_aware ? cost : NULL) == POLICY_OK &&
		DecisionSetMixLearn(w, DECISION_CLASSIFICATION, &ml) == POLICY_OK)
	{
		w->mix_learn_by_refit = 1;
		printf("# learned task score (mrg=2): %d states, fitted in %.1f ms (refit cycle, off the decision path)\n",
			   ml.n, (Now() - t0) * 1e3);
		rc = ml.ok ? 0 : -1;
	}
	free(cost);
	return rc;
}

/*
 * The world the worker would hold: the prior as bench-decision fits it
 * (RBF over history columns), the default policy without cost (the peer
 * has no costs), every task with its first observations, round-robin
 * (task i last served at T n - n + i).
 */
static int
BuildWorld(DecisionWorld *w, GpPrior *prior, MixPrior *mix, const char *spec,
		   const ReplayMatrix *hist, const ReplayMatrix *truth,
		   const ReplayMatrix *obs)
{
	int			n = truth->rows;
	int			K = truth->cols;
	int			T = obs->rows / n;
	GpPriorOptions opt;
	PolicyParams pp;

	memset(&opt, 0, sizeof(opt));
	opt.kernel = GP_KERNEL_RBF;
	if (GpPriorFit(hist->data, hist->rows, K, &opt, prior) < 0)
		return -1;
	if (PolicyParseSpec(spec, &pp, NULL, 0) != 0 ||
		DecisionWorldInit(w, K, NULL, NULL, &pp) != 0)
		return -1;
	if (PolicyUsesMixture(&pp))
	{
		double		t0 = Now();

		if (MixPriorFit(mix, hist->data, hist->rows, K, 0.0) != 0 ||
			DecisionSetMixture(w, DECISION_CLASSIFICATION, mix) != 0)
			return -1;
		printf("# history mixture: %d rows, fitted in %.1f ms (refit cycle, off the decision path), bandwidth %.4f\n",
			   mix->m, (Now() - t0) * 1e3, mix->bw);
	}
	w->slots = 2;
	w->tenant_cap = -1;
	w->explain = 1;
	for (int i = 0; i < n / TASKS_PER_TENANT + 1; i++)
		DecisionAddTenant(w, 0);
	DecisionSetPrior(w, DECISION_CLASSIFICATION, prior);
	for (int i = 0; i < n; i++)
	{
		DecisionTaskSpec s;

		memset(&s, 0, sizeof(s));
		s.id = i;
		s.tenant = i / TASKS_PER_TENANT;
		s.kind = DECISION_CLASSIFICATION;
		s.rows = 1000;
		s.features = 10;
		s.classes = 2;
		if (DecisionAddTask(w, &s) == NULL)
			return -1;
	}
	for (int r = 0; r < T; r++)
		for (int i = 0; i < n; i++)
		{
			int			a = (int) obs->data[((size_t) i * T + r) * 2 + 1];
			DecisionTask *t = w->tasks[i];

			DecisionStart(w, t, a);
			DecisionObserve(w, t, a, truth->data[(size_t) i * K + a], 1.0);
		}
	return pp.mix_score == 2 ? InstallLearned(w, mix, &pp) : 0;
}

/* What a catalog load costs the world when nothing changed, in ms. */
static double
TimeFullSync(DecisionWorld *w, unsigned char *state, double *score)
{
	DecisionChoice c;
	double		t0 = Now();

	for (int i = 0; i < w->n_tasks; i++)
	{
		DecisionTaskState s;

		TaskState(w, w->tasks[i], state, score, &s);
		DecisionSyncTask(w, w->tasks[i], &s);
	}
	DecisionNext(w, &c);
	return (Now() - t0) * 1e3;
}

/*
 * N decisions as the worker makes them once a run has ended; ms[j] is the
 * time of decision j, seq_t/seq_a the N + 1 choices.  Returns how many
 * decisions were made, -1 if the first failed.
 */
static int
TimeDecisions(DecisionWorld *w, const ReplayMatrix *truth, int N,
			  unsigned char *state, double *score, double *ms,
			  int *seq_t, int *seq_a, double *t_sync, double *t_next,
			  double *wall_ms)
{
	DecisionChoice c;
	int			K = truth->cols;
	int			done = 0;

	if (DecisionNext(w, &c) != 0 || c.chosen.task < 0)
		return -1;
	seq_t[0] = c.chosen.task;
	seq_a[0] = c.chosen.arm;
	for (int j = 0; j < N; j++)
	{
		DecisionTask *t = w->tasks[c.chosen.task];
		int			a = c.chosen.arm;
		DecisionTaskState s;
		double		t0,
					t1,
					t2,
					w0;

		/* the decision was recorded and its run launched */
		DecisionStart(w, t, a);
		/* the run ended; the next load shows its score */
		TaskState(w, t, state, score, &s);
		state[a] = DECISION_ARM_OBSERVED;
		score[a] = truth->data[(size_t) t->id * K + a];
		w0 = Now();
		t0 = CpuNow();
		DecisionSyncTask(w, t, &s);
		t1 = CpuNow();
		if (DecisionNext(w, &c) != 0 || c.chosen.task < 0)
			break;
		t2 = CpuNow();
		wall_ms[j] = (Now() - w0) * 1e3;
		*t_sync += t1 - t0;
		*t_next += t2 - t1;
		ms[j] = (t2 - t0) * 1e3;
		seq_t[j + 1] = c.chosen.task;
		seq_a[j + 1] = c.chosen.arm;
		done++;
	}
	return done;
}

/*
 * DIR/sequence.csv: the choices, for decision_peer.py to follow; cpu_ms is
 * the CPU time of the decision that made choice step (empty for step 0),
 * so that decision.sh can pair each peer decision with this side's.
 */
static int
WriteSequence(const char *dir, const int *seq_t, const int *seq_a,
			  const double *ms, int done)
{
	char		path[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/sequence.csv", dir);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "step,tenant,arm,cpu_ms\n");
	for (int j = 0; j <= done; j++)
	{
		if (j == 0)
			fprintf(f, "%d,%d,%d,\n", j, seq_t[j], seq_a[j]);
		else
			fprintf(f, "%d,%d,%d,%.6f\n", j, seq_t[j], seq_a[j], ms[j - 1]);
	}
	fclose(f);
	return 0;
}

/*
 * The spec "default-candidate": the first of auto's candidates
 * (POLICY_AUTO_CANDIDATES, the one auto runs on most histories), read
 * from the build so that decision.sh times what ships, not a copy.
 */
static const char *
ResolveSpec(const char *spec, char *buf, size_t len)
{
	if (strcmp(spec, "default-candidate") != 0)
		return spec;
	snprintf(buf, len, "%s", POLICY_AUTO_CANDIDATES);
	buf[strcspn(buf, ",")] = '\0';
	return buf;
}

int
main(int argc, char **argv)
{
	const char *dir;
	int			N = 5000;
	ReplayMatrix hist,
				truth,
				obs;
	GpPrior		prior;
	MixPrior	mix;
	const char *spec = "hybrid";
	DecisionWorld w;
	unsigned char *state;
	double	   *score,
			   *ms,
			   *wall_ms;
	char		spec_buf[sizeof(POLICY_AUTO_CANDIDATES)];
	int		   *seq_t,
			   *seq_a;
	int			n,
				K,
				done;
	double		t_sync = 0,
				t_next = 0,
				full_sync;

	openblas_set_num_threads(1);
	if (argc < 2)
	{
		fprintf(stderr, "usage: easeml-decision-bench DUMP_DIR [DECISIONS [POLICY]]\n");
		return 2;
	}
	dir = argv[1];
	if (argc > 2)
		N = atoi(argv[2]);
	if (argc > 3)
		spec = ResolveSpec(argv[3], spec_buf, sizeof(spec_buf));
	memset(&mix, 0, sizeof(mix));
	if (N <= 0 || !ReadOrDie(dir, "history.csv", &hist) ||
		!ReadOrDie(dir, "truth.csv", &truth) ||
		!ReadOrDie(dir, "observations.csv", &obs))
		return 2;
	n = truth.rows;
	K = truth.cols;
	if (BuildWorld(&w, &prior, &mix, spec, &hist, &truth, &obs) != 0)
		return 1;

	state = malloc(K);
	score = malloc(sizeof(double) * K);
	ms = malloc(sizeof(double) * N);
	wall_ms = malloc(sizeof(double) * N);
	seq_t = malloc(sizeof(int) * (N + 1));
	seq_a = malloc(sizeof(int) * (N + 1));
	if (!state || !score || !ms || !wall_ms || !seq_t || !seq_a)
		return 1;

	full_sync = TimeFullSync(&w, state, score);
	done = TimeDecisions(&w, &truth, N, state, score, ms, seq_t, seq_a,
						 &t_sync, &t_next, wall_ms);
	if (done < 0)
		return 1;
	if (WriteSequence(dir, seq_t, seq_a, ms, done) != 0)
		return 1;
	qsort(ms, done, sizeof(double), CmpDouble);
	qsort(wall_ms, done, sizeof(double), CmpDouble);
	printf("# easeml-decision-bench: the worker's DecisionSyncTask + DecisionNext (src/core/decision_*.c)\n");
	printf("# tasks=%d tenants=%d arms=%d obs/task=%d decisions=%d policy=%s fair-share=on slots=2 explain=on openblas_threads=1\n",
		   n, (n + TASKS_PER_TENANT - 1) / TASKS_PER_TENANT, K, obs.rows / n, done, spec);
	printf("# times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID); wall-clock median %.6f ms, p99 %.6f ms\n",
		   done ? wall_ms[done / 2] : NAN, done ? wall_ms[(int) (0.99 * (done - 1))] : NAN);
	printf("# mean per decision: sync of the ended task %.2f us, next (refresh + pick + runner-ups) %.2f us\n",
		   done ? t_sync / done * 1e6 : NAN, done ? t_next / done * 1e6 : NAN);
	printf("# one full sync of every task with nothing changed (once per catalog load): %.3f ms\n",
		   full_sync);
	printf("DECISION median_ms=%.6f p99_ms=%.6f\n",
		   done ? ms[done / 2] : NAN, done ? ms[(int) (0.99 * (done - 1))] : NAN);
	DecisionWorldFree(&w);
	MixPriorFree(&mix);
	GpPriorFree(&prior);
	ReplayMatrixFree(&hist);
	ReplayMatrixFree(&truth);
	ReplayMatrixFree(&obs);
	return 0;
}
