/*-------------------------------------------------------------------------
 *
 * tr_live.c
 *	  The trainer's live mode: easeml-trainer --run ID --run-dir DIR.
 *
 * Launched by the scheduler (src/worker/supervisor.c), one process per run:
 *
 *	1. ask for SIGTERM when the scheduler dies, and exit if it already has;
 *	2. connect with the connection string in EASEML_CONNINFO;
 *	3. read the run's spec (easeml_trainer.spec) and the task's rows with
 *	   binary COPY inside a read-only transaction that acts as the tenant
 *	   (easeml_trainer.data_session), then ROLLBACK, which restores the
 *	   connection's own identity;
 *	4. train (TrRunCandidate; a custom trainer's command, tr_external.c,
 *	   for family "external"), reporting epoch and loss at most five
 *	   times a second, and the last epoch with the validation score
 *	   (easeml_trainer.progress);
 *	5. report how the run ended through the database
 *	   (easeml_trainer.result: exit status, metrics or error) and exit
 *	   with that status.  The scheduler records the result: it alone
 *	   changes a run's status.  Nothing travels through files: on a
 *	   cluster the trainer runs on another machine (docs/scale-out.md), and
 *	   the run directory is only its scratch space.
 *
 * Right after connecting, the trainer proves it is the run's trainer with
 * the run's token (easeml_trainer.attach(run, EASEML_RUN_TOKEN)), which
 * also lets the scheduler end its session when the trainer ends: a backend
 * would otherwise run the tenant's query to its end after the trainer was
 * killed.  A connection lost while it trains (the database restarted, the
 * Slurm job lives on) is opened again for progress and for the result,
 * which is retried for up to REPORT_RETRY_SECONDS.
 *
 * SIGTERM (a cancel or a timeout) sets a flag the families check, and that
 * the data loading checks while it waits for the server; the process then
 * exits 1.  Exit statuses are those of src/core/trainer_protocol.h.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_live.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "trainer.h"
#include "core/trainer_protocol.h"
#include "tr_check.h"
#include "tr_ensemble.h"
#include "tr_live.h"
#include "tr_metrics.h"
#include "trainer/io/tr_copy.h"
#include "trainer/families/tr_external.h"
#include "trainer/gpu/tr_gpu.h"

static volatile sig_atomic_t cancel_requested = 0;

static void
HandleTerm(int sig)
{
	cancel_requested = 1;
}

/* A timestamped line in the run's log (stdout goes to trainer.log). */
void
LiveLog(const char *fmt,...)
{
	va_list		ap;
	char		when[32];
	time_t		now = time(NULL);
	struct tm	tm;

	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s [%d] ", when, (int) getpid());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#define REPORT_RETRY_SECONDS 300

/* what the run reports at its end (ReportResult) */
static PGconn *live_conn = NULL;
static const char *live_run_id = NULL;
static bool live_report = true;
static char fail_message[2048];
static char *result_metrics = NULL;

/* LiveFail the run: the reason for its report, a log line for humans. */
int
LiveFail(const char *dir, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(fail_message, sizeof(fail_message), fmt, ap);
	va_end(ap);
	LiveLog("error: %s", fail_message);
	return EASEML_EXIT_FAILED;
}

/* Has SIGTERM asked the run to stop? */
bool
LiveCancelled(void)
{
	return cancel_requested != 0;
}

/* The metrics the run reports at its end (ReportResult); 0, or -1. */
int
LiveKeepMetrics(json_object *metrics)
{
	result_metrics = strdup(json_object_to_json_string_ext(metrics, JSON_C_TO_STRING_PLAIN));
	return result_metrics != NULL ? 0 : -1;
}

/*
 * Prove this session is the run's trainer: with the run's token, or, for
 * a superuser's connection without one (a benchmark), by being superuser.
 */
static PGresult *
Attach(PGconn *conn, const char *run_id)
{
	const char *token = getenv(EASEML_ENV_RUN_TOKEN);
	const char *values[2] = {run_id, token};

	if (token != NULL && token[0] != '\0')
		return PQexecParams(conn, "SELECT easeml_trainer.attach($1, $2)",
							2, NULL, values, NULL, NULL, 0);
	return PQexecParams(conn, "SELECT easeml_trainer.attach($1)",
						1, NULL, values, NULL, NULL, 0);
}

/*
 * The session again after its connection was lost (the database
 * restarted): reconnect and attach.  0 when the session is usable.
 */
static int
EnsureSession(PGconn *conn, const char *run_id)
{
	PGresult   *res;
	int			ok;

	if (PQstatus(conn) == CONNECTION_OK)
		return 0;
	PQreset(conn);
	if (PQstatus(conn) != CONNECTION_OK)
		return -1;
	res = Attach(conn, run_id);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!ok)
		LiveLog("warning: could not attach again: %s", PQresultErrorMessage(res));
	PQclear(res);
	if (ok)
		LiveLog("run %s: connected again", run_id);
	return ok ? 0 : -1;
}

/*
 * Report how the run ended (easeml_trainer.result), retrying while the
 * database is away, unless the trainer was told to stop.
 */
static void
ReportResult(int rc)
{
	char		code[16];
	const char *values[4];
	double		start = TrNow();	/* monotonic: a clock step neither ends
									 * nor stretches the retries */

	if (!live_report || live_conn == NULL || live_run_id == NULL)
		return;
	snprintf(code, sizeof(code), "%d", rc);
	values[0] = live_run_id;
	values[1] = code;
	values[2] = rc == EASEML_EXIT_OK ? result_metrics : NULL;
	values[3] = rc != EASEML_EXIT_OK && fail_message[0] ? fail_message : NULL;
	for (;;)
	{
		/* a failed read leaves its transaction open: end it (and the tenant's identity) */
		if (PQstatus(live_conn) == CONNECTION_OK &&
			PQtransactionStatus(live_conn) != PQTRANS_IDLE)
			PQclear(PQexec(live_conn, "ROLLBACK"));
		if (EnsureSession(live_conn, live_run_id) == 0)
		{
			PGresult   *res = PQexecParams(live_conn,
										   "SELECT easeml_trainer.result($1, $2, $3, $4)",
										   4, NULL, values, NULL, NULL, 0);
			bool		done = PQresultStatus(res) == PGRES_TUPLES_OK;

			if (!done)
				LiveLog("warning: could not report the result: %s", PQresultErrorMessage(res));
			PQclear(res);
			if (done || PQstatus(live_conn) == CONNECTION_OK)
				return;			/* the server refused it: retrying will not help */
		}
		if (cancel_requested || TrNow() - start > REPORT_RETRY_SECONDS)
		{
			LiveLog("error: could not report the result: %s", PQerrorMessage(live_conn));
			return;
		}
		sleep(2);
	}
}


/* A measure as SQL float8 text; NaN for "not measured" (and non-finite). */
static void
FormatMeasure(char *buf, size_t len, double v)
{
	if (isfinite(v))
		snprintf(buf, len, "%.17g", v);
	else
		snprintf(buf, len, "NaN");
}

/*
 * Send one progress report (easeml_trainer.progress): the run's epoch and
 * training loss, and its validation score when measured; NaN is "not
 * measured".  Best effort: a failure is logged, training goes on.
 */
void
LiveSendProgress(ProgressState *ps, int epoch, double loss, double score)
{
	char		epoch_s[32];
	char		loss_s[64];
	char		score_s[64];
	const char *values[4];
	PGresult   *res;

	snprintf(epoch_s, sizeof(epoch_s), "%d", epoch);
	FormatMeasure(loss_s, sizeof(loss_s), loss);
	FormatMeasure(score_s, sizeof(score_s), score);
	values[0] = ps->run_id;
	values[1] = epoch_s;
	values[2] = loss_s;
	values[3] = score_s;
	res = PQexecParams(ps->conn, "SELECT easeml_trainer.progress($1, $2, $3, $4)",
					   4, NULL, values, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		LiveLog("warning: could not report progress: %s", PQerrorMessage(ps->conn));
	PQclear(res);
}

/*
 * Progress sink of the families: at most five reports a second, enough
 * points for a learning curve (easeml.run_progress) without a statement
 * per epoch of a fast family.
 */
static void
ReportProgress(void *arg, int epoch, double loss)
{
	ProgressState *ps = arg;
	double		now = TrNow();

	if (ps->last > 0 && now - ps->last < 0.2)
		return;
	ps->last = now;
	/* lost (the database restarted): try again at most every 10 s */
	if (PQstatus(ps->conn) != CONNECTION_OK)
	{
		if (now - ps->last_reconnect < 10.0)
			return;
		ps->last_reconnect = now;
		if (EnsureSession(ps->conn, ps->run_id) != 0)
			return;
	}
	LiveSendProgress(ps, epoch, loss, NAN);
}

/* SQLSTATE of the last error Command() or the spec query got, or "" */
static char last_sqlstate[6];

void
LiveKeepSqlstate(const PGresult *res)
{
	const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	snprintf(last_sqlstate, sizeof(last_sqlstate), "%s", code ? code : "");
}

/* Run a command that returns no rows; 0 or -1 with err set. */
static int
Command(PGconn *conn, const char *sql, int nparams, const char *const *values,
		char *err, size_t errlen)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	int			rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
	{
		snprintf(err, errlen, "%s", TrServerMessage(res, conn));
		LiveKeepSqlstate(res);
		rc = -1;
	}
	PQclear(res);
	return rc;
}

/*
 * Exit status after reading the task failed (src/core/trainer_protocol.h).  A lost
 * connection means the server is going down: the run is interrupted, not
 * failed.  An error the server raised reading the source fails the task,
 * unless its class says it may pass (connection, rollback, resources,
 * lock or object state, operator intervention, system, internal).
 */
int
LiveLoadFailure(PGconn *conn, const char *sqlstate)
{
	static const char *const transient[] = {"08", "40", "53", "55", "57", "58", "XX"};

	if (PQstatus(conn) == CONNECTION_BAD)
		return EASEML_EXIT_DISCONNECTED;
	if (sqlstate == NULL || strlen(sqlstate) != 5)
		return EASEML_EXIT_FAILED;
	for (int i = 0; i < (int) (sizeof(transient) / sizeof(transient[0])); i++)
		if (strncmp(sqlstate, transient[i], 2) == 0)
			return EASEML_EXIT_FAILED;
	return EASEML_EXIT_SOURCE;
}

/*
 * The command of a custom trainer's run, as a NULL-terminated argv, or
 * NULL with err set.
 */
static char **
FetchCommand(PGconn *conn, const char *run_id, char *err, size_t errlen)
{
	const char *values[1] = {run_id};
	PGresult   *res = PQexecParams(conn,
									"SELECT u FROM unnest(easeml_trainer.command($1)) WITH ORDINALITY AS c(u, o)"
									" ORDER BY o",
									1, NULL, values, NULL, NULL, 0);
	char	  **argv = NULL;
	int			n;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		snprintf(err, errlen, "could not read the custom trainer's command: %s",
				 PQresultErrorMessage(res));
		PQclear(res);
		return NULL;
	}
	n = PQntuples(res);
	if (n == 0)
		snprintf(err, errlen, "the run's model has family \"%s\" but no command",
				 EASEML_FAMILY_EXTERNAL);
	else if ((argv = calloc(n + 1, sizeof(char *))) == NULL)
		snprintf(err, errlen, "out of memory");
	for (int i = 0; argv != NULL && i < n; i++)
		argv[i] = strdup(PQgetvalue(res, i, 0));
	PQclear(res);
	return argv;
}

/*
 * A run placed on a GPU (EASEML_DEVICE_KIND=cuda) of a family that trains
 * there: select the GPU now, before any data is read, so that a device
 * that cannot be used costs nothing.  Returns EASEML_EXIT_OK (*gpu stays
 * NULL for the CPU), or the exit status with the reason in err.
 */
static int
OpenGpu(const char *family, const TrGpuOps **gpu, char *err, size_t errlen)
{
	const char *kind = getenv(EASEML_ENV_DEVICE_KIND);
	const char *device = getenv(EASEML_ENV_DEVICE);
	const TrFamily *fam = TrFamilyLookup(family);
	char		why[TR_ERRLEN];
	int			oom;

	*gpu = NULL;
	if (kind == NULL || strcmp(kind, EASEML_KIND_CUDA) != 0 || fam == NULL ||
		fam->fit_gpu == NULL)
		return EASEML_EXIT_OK;
	*gpu = TrGpuOpen(why, sizeof(why), &oom);
	if (*gpu == NULL)
	{
		snprintf(err, errlen, "the GPU %s could not be used: %s", device ? device : "", why);
		return oom ? EASEML_EXIT_DEVICE_OOM : EASEML_EXIT_DEVICE_UNAVAILABLE;
	}
	LiveLog("training on %s (%s)", device ? device : "the GPU", (*gpu)->name);
	return EASEML_EXIT_OK;
}

const char *
LiveJsonString(json_object *obj, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * The data options of the spec (docs/data.md): the missing-value strategy
 * and indicator, folds and the metric.  Absent keys keep the defaults (a
 * run of easeml 0.1.0 has none).  0, or -1 with err set.
 */
static int
DataOptions(json_object *spec, TrPrepOptions *opt, char *err, size_t errlen)
{
	json_object *v;
	const char *impute = LiveJsonString(spec, "impute");

	if (impute == NULL || strcmp(impute, "mean") == 0)
		opt->strategy = TR_IMPUTE_MEAN;
	else if (strcmp(impute, "median") == 0)
		opt->strategy = TR_IMPUTE_MEDIAN;
	else if (strcmp(impute, "most_frequent") == 0)
		opt->strategy = TR_IMPUTE_MOST_FREQUENT;
	else
	{
		snprintf(err, errlen, "unknown missing-value strategy \"%s\"", impute);
		return -1;
	}
	if (json_object_object_get_ex(spec, "missing_indicator", &v) &&
		json_object_is_type(v, json_type_boolean))
		opt->no_indicator = !json_object_get_boolean(v);
	if (json_object_object_get_ex(spec, "folds", &v) && json_object_is_type(v, json_type_int))
		opt->folds = json_object_get_int(v);
	opt->metric = LiveJsonString(spec, "metric");
	return 0;
}

/*
 * The TR_COL_* kind of each of the d features from the spec's
 * "feature_types" (absent: all numeric, as in runs of easeml 0.1.0).
 * 0, or -1 with err set.
 */
static int
FeatureKinds(json_object *spec, int d, int *kinds, char *err, size_t errlen)
{
	json_object *v;

	for (int j = 0; j < d; j++)
		kinds[j] = TR_COL_NUMERIC;
	if (!json_object_object_get_ex(spec, "feature_types", &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_array) || (int) json_object_array_length(v) != d)
	{
		snprintf(err, errlen, "the run's spec has %d features but not as many feature types", d);
		return -1;
	}
	for (int j = 0; j < d; j++)
	{
		const char *k = json_object_get_string(json_object_array_get_idx(v, j));

		if (k != NULL && strcmp(k, "numeric") == 0)
			kinds[j] = TR_COL_NUMERIC;
		else if (k != NULL && strcmp(k, "categorical") == 0)
			kinds[j] = TR_COL_CATEGORICAL;
		else if (k != NULL && strcmp(k, "date") == 0)
			kinds[j] = TR_COL_DATE;
		else if (k != NULL && strcmp(k, "timestamp") == 0)
			kinds[j] = TR_COL_TIMESTAMP;
		else
		{
			snprintf(err, errlen, "feature %d has an unknown type \"%s\"", j + 1, k ? k : "");
			return -1;
		}
	}
	return 0;
}


/* --run ID --run-dir DIR [--load-only]; the id must be a number. */
static int
LiveArgs(LiveCtx *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], EASEML_ARG_RUN) == 0 && i + 1 < argc)
			c->run_id = argv[++i];
		else if (strcmp(argv[i], EASEML_ARG_RUN_DIR) == 0 && i + 1 < argc)
			c->run_dir = argv[++i];
		else if (strcmp(argv[i], EASEML_ARG_LOAD_ONLY) == 0)
			c->load_only = 1;
	}
	if (c->run_id == NULL || c->run_dir == NULL)
	{
		fprintf(stderr, "usage: easeml-trainer --run ID --run-dir DIR\n");
		return EASEML_EXIT_USAGE;
	}
	for (const char *ch = c->run_id; *ch; ch++)
		if (*ch < '0' || *ch > '9')
			return LiveFail(c->run_dir, "invalid run id \"%s\"", c->run_id);
	live_run_id = c->run_id;
	return EASEML_EXIT_OK;
}

/* Die with the scheduler, stop on SIGTERM, take the thread count. */
static int
GuardProcess(LiveCtx *c)
{
	const char *sched_pid;
	struct sigaction sa;

	/* the getppid() check closes the race */
	(void) prctl(PR_SET_PDEATHSIG, SIGTERM);
	sched_pid = getenv(EASEML_ENV_SCHEDULER_PID);
	if (sched_pid && atoi(sched_pid) != (int) getppid())
		return LiveFail(c->run_dir, "the scheduler (pid %s) is gone", sched_pid);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = HandleTerm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	c->threads = getenv("OPENBLAS_NUM_THREADS") ? atoi(getenv("OPENBLAS_NUM_THREADS")) : 1;
	if (c->threads < 1)
		c->threads = 1;
	return EASEML_EXIT_OK;
}

/*
 * The memory cap (tr_memory.c), before the rows are loaded: after the
 * device is opened, so that a CUDA context is part of the start-up
 * footprint the cap comes on top of.
 */
static int
CapMemory(LiveCtx *c)
{
	char		err[256];

	if (TrMemoryLimitApply(getenv(EASEML_ENV_MEMORY_LIMIT), c->threads, err, sizeof(err)) != 0)
		return LiveFail(c->run_dir, "%s", err);
	return EASEML_EXIT_OK;
}

/* Connect and attach the session as the run's trainer. */
static int
ConnectAndAttach(LiveCtx *c)
{
	const char *conninfo = getenv(EASEML_ENV_CONNINFO);
	PGresult   *res;
	char		err[2048];

	LiveLog("run %s: starting", c->run_id);
	c->conn = PQconnectdb(conninfo ? conninfo : "");
	live_conn = c->conn;
	if (PQstatus(c->conn) != CONNECTION_OK)
		return LiveFail(c->run_dir, "could not connect to the database: %s", PQerrorMessage(c->conn));
	/* before anything of the tenant's runs in this session */
	res = Attach(c->conn, c->run_id);
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		snprintf(err, sizeof(err), "%s", TrServerMessage(res, c->conn));
		PQclear(res);
		/* not the run's trainer: it may not report either */
		live_report = false;
		LiveFail(c->run_dir, "could not attach the trainer's session: %s", err);
		return LiveLoadFailure(c->conn, NULL);
	}
	PQclear(res);
	return EASEML_EXIT_OK;
}

/* The data options of the spec: split, seed, missing values, image shape. */
static int
SpecOptions(LiveCtx *c, char *err, size_t errlen)
{
	json_object *v;

	memset(&c->opt, 0, sizeof(c->opt));
	c->opt.val_fraction = 0.2;
	c->opt.seed = 42;
	c->opt.impute = 1;
	/* the table is read once: its rows may become the prepared rows */
	c->opt.take_rows = 1;
	if (json_object_object_get_ex(c->spec, "val_fraction", &v))
		c->opt.val_fraction = json_object_get_double(v);
	if (json_object_object_get_ex(c->spec, "seed", &v))
		c->opt.seed = (uint64_t) json_object_get_int64(v);
	/* a refit trains on every row (docs/results.md) */
	if (json_object_object_get_ex(c->spec, "train_all", &v) &&
		json_object_is_type(v, json_type_boolean))
		c->opt.train_all = json_object_get_boolean(v);
	if (DataOptions(c->spec, &c->opt, err, errlen) != 0)
		return -1;
	if (json_object_object_get_ex(c->spec, "input_shape", &v) &&
		json_object_is_type(v, json_type_array))
	{
		int			n = (int) json_object_array_length(v);
		int			shape[3] = {1, 0, 0};

		for (int i = 0; i < n && i < 3; i++)
			shape[3 - n + i] = json_object_get_int(json_object_array_get_idx(v, i));
		c->opt.channels = shape[0];
		c->opt.height = shape[1];
		c->opt.width = shape[2];
	}
	return 0;
}

/* easeml_trainer.spec: what to train, on which rows, with which options. */
static int
ReadSpec(LiveCtx *c)
{
	const char *values[1] = {c->run_id};
	const char *kind_s;
	json_object *v;
	PGresult   *res;
	char		err[2048];

	res = PQexecParams(c->conn, "SELECT easeml_trainer.spec($1)::text",
					   1, NULL, values, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
	{
		LiveFail(c->run_dir, "could not read the run's spec: %s", TrServerMessage(res, c->conn));
		LiveKeepSqlstate(res);
		PQclear(res);
		return LiveLoadFailure(c->conn, last_sqlstate);
	}
	c->spec = TrJsonParse(PQgetvalue(res, 0, 0));
	PQclear(res);
	if (c->spec == NULL)
		return LiveFail(c->run_dir, "the run's spec is not valid JSON");
	kind_s = LiveJsonString(c->spec, "kind");
	c->family = LiveJsonString(c->spec, "family");
	c->query = LiveJsonString(c->spec, "copy_query");
	if (json_object_object_get_ex(c->spec, "max_rows", &v) && json_object_is_type(v, json_type_int))
		c->max_rows = (long) json_object_get_int64(v);
	if (!kind_s || !c->family || !c->query ||
		!json_object_object_get_ex(c->spec, "features", &v) ||
		!json_object_is_type(v, json_type_array))
		return LiveFail(c->run_dir, "the run's spec is incomplete");
	c->d = (int) json_object_array_length(v);
	c->kind = strcmp(kind_s, "regression") == 0 ? TR_KIND_REGRESSION : TR_KIND_CLASSIFICATION;
	if (json_object_object_get_ex(c->spec, "params", &c->params) &&
		!json_object_is_type(c->params, json_type_object))
		c->params = NULL;
	if (SpecOptions(c, err, sizeof(err)) != 0)
		return LiveFail(c->run_dir, "%s", err);
	LiveLog("run %s: task %s (%s), model %s, family %s, %d features",
			c->run_id, LiveJsonString(c->spec, "task"), kind_s, LiveJsonString(c->spec, "model"),
			c->family, c->d);
	return EASEML_EXIT_OK;
}

/* The external command, or a model this trainer can train, and its device. */
static int
PrepareCandidate(LiveCtx *c)
{
	char		err[2048];
	int			rc;

	if (strcmp(c->family, EASEML_FAMILY_EXTERNAL) == 0 &&
		(c->command = FetchCommand(c->conn, c->run_id, err, sizeof(err))) == NULL)
		return LiveFail(c->run_dir, "%s", err);

	/*
	 * A model row this trainer cannot train for this kind of task is no
	 * task's fault (whether the task has images is its own business).
	 */
	if (TrModelCheck(c->family, c->params, LiveJsonString(c->spec, "kind"), 1, err, sizeof(err)) != 0)
	{
		LiveFail(c->run_dir, "model %s cannot be trained: %s", LiveJsonString(c->spec, "model"), err);
		return EASEML_EXIT_MODEL;
	}
	if (c->command == NULL && (rc = OpenGpu(c->family, &c->gpu, err, sizeof(err))) != EASEML_EXIT_OK)
	{
		LiveFail(c->run_dir, "%s", err);
		return rc;
	}
	return EASEML_EXIT_OK;
}

/* The rows, read as the tenant in a read-only snapshot, by COPY. */
static int
LoadRows(LiveCtx *c)
{
	const char *values[1] = {c->run_id};
	char		err[2048];
	int		   *kinds;
	double		t0;
	int			rc;
	json_object *v;

	/* the kind of each feature column: how its values arrive */
	if ((kinds = malloc(sizeof(int) * (c->d > 0 ? c->d : 1))) == NULL)
		return LiveFail(c->run_dir, "out of memory");
	if (FeatureKinds(c->spec, c->d, kinds, err, sizeof(err)) != 0)
		return LiveFail(c->run_dir, "%s", err);
	t0 = TrNow();
	if (Command(c->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, err, sizeof(err)) != 0 ||
		Command(c->conn, "SET LOCAL synchronize_seqscans = off", 0, NULL, err, sizeof(err)) != 0 ||
		Command(c->conn, "SELECT easeml_trainer.data_session($1)", 1, values, err, sizeof(err)) != 0)
	{
		LiveFail(c->run_dir, "could not open the data session: %s", err);
		return LiveLoadFailure(c->conn, last_sqlstate);
	}
	if ((rc = TrCopyLoad(c->conn, c->query, c->d, c->kind, kinds, c->max_rows,
						 &cancel_requested, &c->tab, &c->bytes, last_sqlstate,
						 err, sizeof(err))) != 0)
	{
		LiveFail(c->run_dir, "%s", err);
		/* every candidate would read past the limit: the task fails */
		if (rc == TR_COPY_OVER_LIMIT)
			return EASEML_EXIT_SOURCE;
		return cancel_requested ? EASEML_EXIT_FAILED : LiveLoadFailure(c->conn, last_sqlstate);
	}
	free(kinds);
	if (Command(c->conn, "ROLLBACK", 0, NULL, err, sizeof(err)) != 0)
	{
		LiveFail(c->run_dir, "could not end the data session: %s", err);
		return LiveLoadFailure(c->conn, NULL);
	}
	c->load_seconds = TrNow() - t0;
	LiveLog("run %s: loaded %d rows (%ld bytes) in %.3f s", c->run_id, c->tab.n, c->bytes,
			c->load_seconds);
	/* feature names, for messages about a column */
	if (!c->load_only && json_object_object_get_ex(c->spec, "features", &v))
	{
		c->tab.feature_names = calloc((size_t) c->d, sizeof(char *));
		if (c->tab.feature_names)
			for (int j = 0; j < c->d; j++)
				c->tab.feature_names[j] = strdup(json_object_get_string(json_object_array_get_idx(v, j)));
	}
	return EASEML_EXIT_OK;
}

/* Fit: the external command, or the built-in family on its device. */
static int
Train(LiveCtx *c, ProgressState *ps, TrResult *result, json_object **metrics)
{
	char		path[4096];
	int			rc;

	if (c->command != NULL)
	{
		TrExternalRun xr;

		snprintf(path, sizeof(path), "%s/%s", c->run_dir, EASEML_FILE_ARTIFACT);
		memset(&xr, 0, sizeof(xr));
		xr.command = c->command;
		xr.params = c->params;
		xr.seed = c->opt.seed;
		xr.threads = c->threads;
		xr.dir = c->run_dir;
		xr.artifact_path = path;
		xr.progress = ReportProgress;
		xr.progress_arg = ps;
		xr.cancel = &cancel_requested;
		xr.grace_ms = getenv(EASEML_ENV_CANCEL_GRACE) ? atoi(getenv(EASEML_ENV_CANCEL_GRACE)) : -1;
		/* the launchers start the trainer as its process group's leader */
		xr.kill_group = getpgrp() == getpid();
		return TrRunExternal(&c->tab, &c->opt, &xr, result, metrics);
	}
	snprintf(path, sizeof(path), "%s/%s", c->run_dir, EASEML_FILE_VALIDATION_ROWS);
	c->opt.val_rows_path = path;
	rc = TrRunCandidateOn(c->gpu, &c->tab, c->family, c->params, &c->opt, ReportProgress,
						  ps, &cancel_requested, c->threads, result, metrics);
	c->opt.val_rows_path = NULL;	/* path ends here */
	return rc;
}

/* The trained parameters; the run still succeeds if they cannot be kept. */
void
LiveStoreArtifact(LiveCtx *c, const TrResult *result, json_object *metrics)
{
	const char *values[2] = {c->run_id, (const char *) result->artifact};
	int			lengths[2] = {0, (int) result->artifact_len};
	int			formats[2] = {0, 1};
	Oid			types[2] = {20, 17};	/* int8, bytea */
	PGresult   *res;
	int			stored;

	if (result->artifact == NULL || result->artifact_len == 0 ||
		result->artifact_len >= (size_t) 1024 * 1024 * 1024)
		return;
	res = PQexecParams(c->conn, "SELECT easeml_trainer.artifact($1, $2)",
					   2, types, values, lengths, formats, 0);
	stored = PQresultStatus(res) == PGRES_TUPLES_OK;
	if (!stored)
		LiveLog("warning: could not store the artifact (%zu bytes): %s",
				result->artifact_len, PQresultErrorMessage(res));
	PQclear(res);
	json_object_object_add(metrics, "artifact_stored", json_object_new_boolean(stored));
}

/*
 * The stored model's validation predictions, for ensembles
 * (easeml_trainer.predictions): the server keeps them within
 * easeml.artifact_max_bytes, or says why not.  The metrics record which.
 */
static void
StorePredictions(LiveCtx *c, const TrResult *result, json_object *metrics)
{
	const char *values[2] = {c->run_id, (const char *) result->predictions};
	int			lengths[2] = {0, (int) result->predictions_len};
	int			formats[2] = {0, 1};
	Oid			types[2] = {20, 17};	/* int8, bytea */
	PGresult   *res;
	const char *why = NULL;

	if (result->predictions == NULL || result->predictions_len == 0)
		return;
	if (result->predictions_len >= (size_t) 1024 * 1024 * 1024)
		why = "over 1 GB";
	else
	{
		res = PQexecParams(c->conn, "SELECT easeml_trainer.predictions($1, $2)",
						   2, types, values, lengths, formats, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			LiveLog("warning: could not store the validation predictions (%zu bytes): %s",
					result->predictions_len, PQresultErrorMessage(res));
			why = "the server refused them";
		}
		else if (!PQgetisnull(res, 0, 0))
		{
			LiveLog("validation predictions not kept: %s", PQgetvalue(res, 0, 0));
			json_object_object_add(metrics, "predictions_stored", json_object_new_boolean(0));
			json_object_object_add(metrics, "predictions_skipped",
								   json_object_new_string(PQgetvalue(res, 0, 0)));
			PQclear(res);
			return;
		}
		PQclear(res);
	}
	json_object_object_add(metrics, "predictions_stored", json_object_new_boolean(why == NULL));
	if (why != NULL)
		json_object_object_add(metrics, "predictions_skipped", json_object_new_string(why));
}

/* What the run measured besides its scores: load, memory, sizes. */
static void
AddRunMetrics(const LiveCtx *c, json_object *metrics)
{
	long long	peak = TrPeakRssBytes();

	json_object_object_add(metrics, "load_seconds", json_object_new_double(c->load_seconds));

	/*
	 * The trainer's own high-water mark, to compare with the data's size:
	 * not getrusage()'s, which holds the scheduler's peak (tr_memory.c).
	 */
	if (peak >= 0)
		json_object_object_add(metrics, "peak_rss_bytes", json_object_new_int64(peak));
	json_object_object_add(metrics, "rows_loaded", json_object_new_int64(c->tab.n));
	json_object_object_add(metrics, "bytes_loaded", json_object_new_int64(c->bytes));
	json_object_object_add(metrics, "model", json_object_new_string(LiveJsonString(c->spec, "model")));
}

static int
LiveRun(int argc, char **argv)
{
	LiveCtx		c;
	ProgressState ps;
	TrResult	result;
	json_object *metrics = NULL;
	int			rc;

	memset(&c, 0, sizeof(c));
	if ((rc = LiveArgs(&c, argc, argv)) != EASEML_EXIT_OK ||
		(rc = GuardProcess(&c)) != EASEML_EXIT_OK ||
		(rc = ConnectAndAttach(&c)) != EASEML_EXIT_OK ||
		(rc = ReadSpec(&c)) != EASEML_EXIT_OK)
		return rc;
	/* an ensemble of the task's runs reads their predictions, not the rows */
	if (strcmp(c.family, TR_ENSEMBLE_FAMILY) == 0)
		return LiveEnsembleRun(&c);
	if ((rc = PrepareCandidate(&c)) != EASEML_EXIT_OK ||
		(rc = CapMemory(&c)) != EASEML_EXIT_OK ||
		(rc = LoadRows(&c)) != EASEML_EXIT_OK)
		return rc;
	if (c.load_only)
	{
		printf("{\"rows\": %d, \"bytes\": %ld, \"load_seconds\": %.6f}\n",
			   c.tab.n, c.bytes, c.load_seconds);
		TrTableFree(&c.tab);
		live_report = false;
		return 0;
	}
	if (cancel_requested)
		return LiveFail(c.run_dir, "cancelled");

	memset(&ps, 0, sizeof(ps));
	ps.conn = c.conn;
	ps.run_id = c.run_id;
	if (Train(&c, &ps, &result, &metrics) != 0)
	{
		LiveFail(c.run_dir, "%s", result.error[0] ? result.error : "training failed");
		/* a device failure tells the scheduler to place the candidate elsewhere */
		return result.exit_code != 0 ? result.exit_code : EASEML_EXIT_FAILED;
	}
	if (cancel_requested)
		return LiveFail(c.run_dir, "cancelled");

	/*
	 * The last epoch, which the rate limit may have held back, with the
	 * run's validation score: the run's epoch and loss, and the last point
	 * of its learning curve, are those of the fit that finished.
	 */
	LiveSendProgress(&ps, result.epochs > 0 ? result.epochs : 1, result.train_loss,
				 c.opt.train_all ? NAN : result.score);
	LiveStoreArtifact(&c, &result, metrics);
	if (!c.opt.train_all)
		StorePredictions(&c, &result, metrics);
	AddRunMetrics(&c, metrics);
	if (LiveKeepMetrics(metrics) != 0)
		return LiveFail(c.run_dir, "out of memory");
	LiveLog("run %s: done, score %.6f", c.run_id, result.score);

	TrResultFree(&result);
	json_object_put(metrics);
	json_object_put(c.spec);
	TrTableFree(&c.tab);
	TrGpuClose(c.gpu);
	return 0;
}

/* easeml-trainer --run ID --run-dir DIR: train, then report how it ended. */
int
TrLiveMain(int argc, char **argv)
{
	int			rc = LiveRun(argc, argv);

	/*
	 * An allocation the memory cap refused ended the run, whatever the
	 * code that saw it said: the scheduler records it as over the limit.
	 */
	if (rc != EASEML_EXIT_OK && rc != EASEML_EXIT_USAGE &&
		(TrMemoryLimitHit() || rc == EASEML_EXIT_MEMORY_LIMIT))
	{
		char		why[sizeof(fail_message)];

		snprintf(why, sizeof(why), "%s", fail_message);
		snprintf(fail_message, sizeof(fail_message),
				 "memory limit: an allocation over the trainer's cap of %llu MB failed (easeml.trainer_memory_limit): %.1900s",
				 TrMemoryLimit() / (1024 * 1024), why[0] ? why : "out of memory");
		LiveLog("error: %s", fail_message);
		rc = EASEML_EXIT_MEMORY_LIMIT;
	}
	if (rc != EASEML_EXIT_USAGE)
		ReportResult(rc);
	if (live_conn != NULL)
		PQfinish(live_conn);
	return rc;
}
