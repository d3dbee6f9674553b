/*-------------------------------------------------------------------------
 *
 * scheduler.c
 *	  The easeml scheduler: a background worker that decides, again and
 *	  again, which task gets the next free slot and which candidate model it
 *	  trains, launches a trainer process for it and records how it ends.
 *
 * It only schedules and supervises.  Each loop iteration:
 *
 *	1. reaps trainers that ended (waitpid WNOHANG) and records their result
 *	   in one short transaction each;
 *	2. stops trainers whose run was cancelled or timed out;
 *	3. while slots are free: loads the world in one short transaction,
 *	   decides outside any transaction (src/worker/liveworld.c keeps the world of
 *	   src/core/decision.c in line with the catalog), records the decision
 *	   and its run in one short transaction, and spawns the trainer
 *	   (src/worker/supervisor.c);
 *	4. sleeps on its latch until a backend commits a change (a new task, a
 *	   cancel), a trainer exits (SIGCHLD) or easeml.naptime passes.
 *
 * Every iteration runs under PG_TRY: an error is logged, its transaction
 * aborted, and the loop goes on, so one bad task never stops the
 * scheduler.  At start, runs left 'running' by a previous scheduler are
 * marked 'interrupted' and their candidates become schedulable again.
 *
 * IDENTIFICATION
 *	  src/worker/scheduler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog.h"
#include "devices.h"
#include "module/easeml.h"
#include "core/gp.h"
#include "liveworld.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "core/policy.h"
#include "policy_choice.h"
#include "retention.h"
#include "rundir.h"
#include "storage/spin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "supervisor.h"
#include "tcop/tcopprot.h"
#include "trainer_jobs.h"
#include "core/trainer_protocol.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

static MemoryContext loop_context = NULL;

/*
 * Loading the world costs a few queries over every run: skip it while
 * nothing can have changed.  Commits that matter set the latch (triggers on
 * tasks and runs, the tenant and admin functions), trainer exits raise
 * SIGCHLD; the rest (an admin enabling a model, a task's cooldown ending)
 * is picked up by a reload at least every IDLE_RELOAD_MS.
 */
#define IDLE_RELOAD_MS 10000
static bool world_changed = true;
static TimestampTz last_load = 0;

/*
 * Tasks whose run could not be recorded (most likely a lock the tenant
 * holds on its own task row) rest for a while, so that one tenant cannot
 * make every scheduling step wait for the lock timeout.
 */
#define COOLDOWN_SLOTS 64
#define COOLDOWN_MS 10000
#define LAUNCH_BACKOFF_MS 10000
#define LAUNCH_BACKOFF_MAX_MS 160000
static TimestampTz launch_backoff_until = 0;	/* no launches before */
static int	launch_failures = 0;	/* unreachable launcher, in a row */
static int64 cooldown_task[COOLDOWN_SLOTS];
static TimestampTz cooldown_until[COOLDOWN_SLOTS];
static TimestampTz last_policy_warning = 0;

/*
 * Refit work (src/core/refit.c) runs in slices of at most this many
 * milliseconds between decisions; while a cycle is under way the loop
 * sleeps at most REFIT_NAP_MS.
 */
#define REFIT_SLICE_MS 5
#define REFIT_NAP_MS 20
static bool refit_pending = false;
static bool extension_ready = false;

/* run directories of runs that are gone are swept (src/worker/rundir.c) */
#define SWEEP_INTERVAL_MS (3600 * 1000)
static bool sweep_pending = true;
static bool seen_ready = false;	/* the extension was ever seen installed */
static TimestampTz last_sweep = 0;
static bool recovered = false;
static char *bootstrap_user = NULL;

/*
 * The run budget (easeml.run_budget): while every slot is busy and a
 * tenant waits below its fair share, the longest-running trainer of a
 * tenant above its share that has used its budget is stopped and its run
 * marked interrupted (docs/scheduler.md, "Fair shares").  Checked when the
 * catalog changed, else every PREEMPT_CHECK_MS.
 */
#define PREEMPT_CHECK_MS 1000
static TimestampTz last_preempt_check = 0;
static double applied_memory_limit = -1;	/* bytes, when the world was built */
static char preempt_for[EASEML_MAX_SLOTS][NAMEDATALEN];

static void
HandleSigchld(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SetLatch(MyLatch);
	errno = save_errno;
}

/* before_shmem_exit: stop trainers so none outlives the scheduler. */
static void
SchedulerExit(int code, Datum arg)
{
	SupervisorStopAll();
	EasemlShmemUnregisterScheduler();
}

/* Append key='value' to a libpq conninfo string, quoting as libpq wants. */
static void
AppendConnOption(StringInfo buf, const char *key, const char *value)
{
	appendStringInfo(buf, "%s%s='", buf->len > 0 ? " " : "", key);
	for (const char *p = value; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
}

/*
 * A run's length is easeml.run_timeout's to bound: statement and idle
 * timeouts set for clients (postgresql.conf, ALTER ROLE or DATABASE) must
 * not end a trainer's session while it trains (docs/operations.md).
 */
#define TRAINER_NO_TIMEOUTS " -c statement_timeout=0" \
	" -c idle_in_transaction_session_timeout=0 -c idle_session_timeout=0"

/* Connection string for trainers: this server's socket, port and database. */
static char *
TrainerConninfo(void)
{
	StringInfoData buf;
	char		host[MAXPGPATH] = "localhost";
	char		port[16];

	if (Unix_socket_directories && Unix_socket_directories[0] != '\0')
	{
		/* first entry of the comma-separated list */
		const char *s = Unix_socket_directories;
		int			i = 0;

		while (*s == ' ')
			s++;
		while (s[i] && s[i] != ',' && i < MAXPGPATH - 1)
		{
			host[i] = s[i];
			i++;
		}
		while (i > 0 && host[i - 1] == ' ')
			i--;
		host[i] = '\0';
		if (i == 0)
			strlcpy(host, "localhost", sizeof(host));
	}
	snprintf(port, sizeof(port), "%d", PostPortNumber);

	initStringInfo(&buf);
	AppendConnOption(&buf, "host", host);
	AppendConnOption(&buf, "port", port);
	AppendConnOption(&buf, "dbname", easeml_database);
	AppendConnOption(&buf, "user", bootstrap_user);
	AppendConnOption(&buf, "application_name", "easeml trainer");
	/*
	 * The trainer is a superuser too: names resolve in pg_catalog only.  A
	 * tenant's open transaction may hold a lock on its run's row: progress
	 * reports skip such a row (easeml.trainer_progress), and the result
	 * gives up after a while (the scheduler records it from its backlog)
	 * instead of stalling the trainer.  A
	 * backend whose trainer is gone stops its query within a second even
	 * if the scheduler could not end the session (it ends it at once when
	 * it reaps the trainer).
	 */
	AppendConnOption(&buf, "options", "-c search_path=pg_catalog,pg_temp -c lock_timeout=10s"
					 " -c client_connection_check_interval=1s" TRAINER_NO_TIMEOUTS);
	if (easeml_trainer_conninfo && easeml_trainer_conninfo[0] != '\0')
		appendStringInfo(&buf, " %s", easeml_trainer_conninfo);
	return buf.data;
}

/*
 * Make text from a trainer file safe to store: a log cut at an arbitrary
 * byte or a message truncated by the trainer may split a character, and
 * a text datum must be valid in the database encoding.  Keeps the longest
 * valid prefix (after skipping a split UTF-8 character at the start).
 */
static char *
ValidText(char *s)
{
	int			len;

	if (s == NULL)
		return NULL;
	if (GetDatabaseEncoding() == PG_UTF8)
		while (*s && ((unsigned char) *s & 0xC0) == 0x80)
			s++;
	len = strlen(s);
	s[pg_encoding_verifymbstr(GetDatabaseEncoding(), s, len)] = '\0';
	return s;
}

/* Last non-empty line of the trainer log, for runs that die silently. */
static char *
LogTail(const char *log_path)
{
	int			fd = open(log_path, O_RDONLY | PG_BINARY, 0);
	char		buf[1024];
	off_t		size;
	ssize_t		n;
	char	   *end;
	char	   *start;

	if (fd < 0)
		return NULL;
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0)
	{
		close(fd);
		return NULL;
	}
	(void) lseek(fd, size > (off_t) sizeof(buf) - 1 ? size - (off_t) sizeof(buf) + 1 : 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	end = buf + n;
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		*--end = '\0';
	start = end;
	while (start > buf && start[-1] != '\n')
		start--;
	return *start ? pstrdup(start) : NULL;
}

static bool Guarded(void (*step) (void *arg), void *arg);

/*
 * How a run ended, kept in TopMemoryContext until it is recorded.  A result
 * that cannot be recorded at once (most likely a tenant's open transaction
 * holds a lock on its own run's row) waits in the backlog, and its slot is
 * released: a tenant can delay its own results, never hold a slot.
 */
typedef struct PendingResult
{
	int64		run_id;
	char	   *status;
	int			exit_code;
	char	   *metrics;
	char	   *error;
	char	   *how;
	char	   *source_error;	/* why the task's source could not be read */
	bool		model_error;	/* the trainer cannot train the model row */
	bool		preempted;		/* the run budget stopped it: a tenant's
								 * queued request is queued again */
	int			attempts;
	TimestampTz next_try;
} PendingResult;

#define BACKLOG_MAX 256
#define BACKLOG_RETRY_MS 10000
#define BACKLOG_GIVE_UP 100
static PendingResult *slot_result[EASEML_MAX_SLOTS];
static PendingResult *backlog[BACKLOG_MAX];
static int	n_backlog = 0;

static void
FreeResult(PendingResult *r)
{
	if (r == NULL)
		return;
	if (r->metrics)
		pfree(r->metrics);
	if (r->error)
		pfree(r->error);
	if (r->source_error)
		pfree(r->source_error);
	pfree(r->status);
	pfree(r->how);
	pfree(r);
}

/*
 * The error of a trainer that failed: how it ended and the reason it gave
 * (its report, else its log's tail, in *detail).
 */
static char *
FailedError(const EasemlTrainer *t, const TrainerReport *report,
			const char *how, char **detail)
{
	*detail = report->error ? ValidText(report->error) : NULL;
	if (*detail == NULL && t->log_path[0] == '/')
		*detail = ValidText(LogTail(t->log_path));
	if (*detail && (*detail)[0])
	{
		int			len = strlen(*detail);

		while (len > 0 && ((*detail)[len - 1] == '\n' || (*detail)[len - 1] == ' '))
			(*detail)[--len] = '\0';
		return psprintf("%s: %s", how, *detail);
	}
	return pstrdup(how);
}

/*
 * The run's status from why the supervisor stopped the trainer in slot and
 * how it ended (wait status, exit code); sets its error or its metrics.
 */
static const char *
EndStatus(int slot, const EasemlTrainer *t, int status, int exit_code,
		  const char *how, const TrainerReport *report, char **metrics,
		  char **error, char **detail)
{
	if (t->stop_reason == EASEML_STOP_CANCEL)
	{
		*error = psprintf("cancelled by request (%s)", how);
		return "cancelled";
	}
	if (t->stop_reason == EASEML_STOP_PREEMPT)
	{
		/* nobody's fault: the candidate is tried again, with more time */
		*error = psprintf("preempted after %ld s: tenant \"%s\" waited below its fair share of the slots (easeml.run_budget = %d s; %s)",
						  (long) ((GetCurrentTimestamp() - t->started) / USECS_PER_SEC),
						  preempt_for[slot], easeml_run_budget, how);
		return "interrupted";
	}
	if (status != -1 && WIFEXITED(status) &&
		WEXITSTATUS(status) == EASEML_EXIT_MEMORY_LIMIT)
	{
		/* the trainer's report starts with the reason; else say it */
		char	   *why = FailedError(t, report, how, detail);

		*error = (*detail && strncmp(*detail, "memory limit", 12) == 0) ?
			pstrdup(*detail) : psprintf("memory limit: %s", why);
		return "failed";
	}
	if (t->stop_reason == EASEML_STOP_TIMEOUT)
	{
		*error = psprintf("timed out after easeml.run_timeout = %d s (%s)",
						  easeml_run_timeout, how);
		return "failed";
	}
	if (t->lost)
	{
		/* the cluster lost it (a node failed, it was preempted): nobody's fault */
		*error = psprintf("interrupted: %s", t->end_reason);
		return "interrupted";
	}
	if (t->time_limit)
	{
		*error = psprintf("timed out: %s", t->end_reason);
		return "failed";
	}
	if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		*metrics = report->metrics ? ValidText(report->metrics) : NULL;
		if (*metrics)
			return "succeeded";
		/* it could not reach the database to report: nobody's fault */
		*error = psprintf("interrupted: the trainer exited 0 without reporting its result");
		return "interrupted";
	}
	*error = FailedError(t, report, how, detail);

	/*
	 * A trainer that lost its database connection saw the server go down
	 * (an immediate shutdown kills backends before the scheduler): nobody's
	 * fault, the candidate is trained again.
	 */
	return exit_code == EASEML_EXIT_DISCONNECTED ? "interrupted" : "failed";
}

/*
 * Work out how the trainer in a slot ended; NULL when there is nothing to
 * record (its run was deleted with its task).
 */
static PendingResult *
BuildResult(int slot)
{
	EasemlTrainer *t = SupervisorSlot(slot);
	int			status = t->wait_status;
	const char *run_status;
	char	   *metrics = NULL;
	char	   *error = NULL;
	char	   *detail = NULL;
	char		how[512];
	TrainerReport report;
	int			exit_code = INT_MIN;
	PendingResult *r;
	MemoryContext old;

	/* what the trainer reported through the database (easeml.trainer_result) */
	CatalogBegin("easeml: reading a trainer's report");
	TrainerJobReport(t->run_id, CurrentMemoryContext, &report);
	CatalogCommit();

	/*
	 * The trainer's own word wins over a cluster's (which may have
	 * forgotten a job that ended while the database was down), unless the
	 * cluster's time limit ended it, or the cluster says it lost the job
	 * (a node failed) and the trainer reports a failure: killed with its
	 * node, it may still report the signal as "cancelled".
	 */
	if (report.reported && t->job_id > 0 && !t->time_limit &&
		!(t->lost_state && report.exit_code != EASEML_EXIT_OK))
	{
		status = (report.exit_code & 0xff) << 8;
		t->lost = false;
	}

	SupervisorDescribeExit(status, how, sizeof(how));
	if (t->end_reason[0] != '\0')
		strlcat(how, psprintf("; %s", t->end_reason), sizeof(how));
	if (status != -1 && WIFEXITED(status))
		exit_code = WEXITSTATUS(status);
	else if (status != -1 && WIFSIGNALED(status))
		exit_code = 128 + WTERMSIG(status);

	if (t->stop_reason == EASEML_STOP_ORPHAN)
	{
		sweep_pending = true;
		ereport(LOG,
				(errmsg("easeml: run %lld was deleted while it trained; its trainer was stopped (%s)",
						(long long) t->run_id, how)));
		return NULL;
	}
	run_status = EndStatus(slot, t, status, exit_code, how, &report, &metrics,
						   &error, &detail);

	old = MemoryContextSwitchTo(TopMemoryContext);
	r = palloc0(sizeof(PendingResult));
	r->run_id = t->run_id;
	r->status = pstrdup(run_status);
	r->exit_code = exit_code;
	r->metrics = metrics ? pstrdup(metrics) : NULL;
	r->error = error ? pstrdup(error) : NULL;
	r->how = pstrdup(how);
	if (exit_code == EASEML_EXIT_SOURCE && strcmp(run_status, "failed") == 0)
		r->source_error = pstrdup(detail && detail[0] ? detail : how);
	r->model_error = (exit_code == EASEML_EXIT_MODEL && strcmp(run_status, "failed") == 0);
	r->preempted = t->stop_reason == EASEML_STOP_PREEMPT && strcmp(run_status, "interrupted") == 0;
	MemoryContextSwitchTo(old);
	return r;
}

/* Record one result in its own transaction (for Guarded). */
static void
RecordResultStep(void *arg)
{
	PendingResult *r = arg;

	r->attempts++;
	if (r->attempts > BACKLOG_GIVE_UP / 2 && r->metrics != NULL)
	{
		/* the result itself cannot be stored: store that instead */
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		pfree(r->metrics);
		r->metrics = NULL;
		pfree(r->status);
		r->status = pstrdup("failed");
		if (r->error)
			pfree(r->error);
		r->error = psprintf("%s; its result could not be recorded", r->how);
		MemoryContextSwitchTo(old);
	}
	CatalogBegin("easeml: recording a finished run");
	CatalogFinishRun(r->run_id, r->status, r->exit_code, r->metrics, r->error);
	/* every other candidate would fail the same way: fail the task */
	if (r->source_error)
		CatalogFailTaskOfRun(r->run_id, r->source_error);
	/* a model row the trainer cannot train must not fail every task */
	if (r->model_error)
		CatalogDisableModelOfRun(r->run_id, r->error);
	if (r->preempted)
		CatalogRequeuePreempted(r->run_id);
	CatalogCommit();
	ereport(LOG,
			(errmsg("easeml: run %lld %s (%s)", (long long) r->run_id, r->status, r->how)));
}

/*
 * Record the end of the trainer in a slot.  The slot is freed once the
 * result is recorded, or after three failed attempts, when the result
 * moves to the backlog.
 */
static void
RecordExit(int slot)
{
	PendingResult *r;

	if (slot_result[slot] == NULL)
	{
		slot_result[slot] = BuildResult(slot);
		if (slot_result[slot] == NULL)
		{
			SupervisorRelease(slot);
			return;
		}
	}
	r = slot_result[slot];
	if (Guarded(RecordResultStep, r))
	{
		FreeResult(r);
		slot_result[slot] = NULL;
		SupervisorRelease(slot);
	}
	else if (r->attempts >= 3 && n_backlog < BACKLOG_MAX)
	{
		r->next_try = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), BACKLOG_RETRY_MS);
		backlog[n_backlog++] = r;
		slot_result[slot] = NULL;
		SupervisorRelease(slot);
		ereport(LOG,
				(errmsg("easeml: the result of run %lld could not be recorded yet; it will be retried",
						(long long) r->run_id)));
	}
}

/* Retry results in the backlog whose time has come. */
static void
RetryBacklog(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < n_backlog; i++)
	{
		PendingResult *r = backlog[i];
		bool		done;

		if (r->next_try > now)
			continue;
		done = Guarded(RecordResultStep, r);
		if (!done && r->attempts < BACKLOG_GIVE_UP)
		{
			r->next_try = TimestampTzPlusMilliseconds(now, BACKLOG_RETRY_MS);
			continue;
		}
		if (!done)
			ereport(LOG,
					(errmsg("easeml: gave up recording run %lld; it will be marked interrupted",
							(long long) r->run_id)));
		FreeResult(r);
		backlog[i--] = backlog[--n_backlog];
	}
}

/*
 * Run one step in its own error boundary, so that one run or one task
 * that cannot be recorded (a lock a tenant holds on its own row, a
 * constraint) does not hold up the others.  Returns false after an error,
 * which is reported and whose transaction is aborted.
 */
static bool
Guarded(void (*step) (void *arg), void *arg)
{
	MemoryContext ctx = CurrentMemoryContext;
	volatile bool ok = true;

	PG_TRY();
	{
		step(arg);
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		MemoryContextSwitchTo(ctx);
		EmitErrorReport();
		AbortOutOfAnyTransaction();
		FlushErrorState();
		pgstat_report_activity(STATE_IDLE, NULL);
		RESUME_INTERRUPTS();
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(ctx);
	return ok;
}

/*
 * Reap trainers that ended and record them.  Without the extension (it was
 * dropped under running trainers) there is nothing to record into: the
 * processes are still reaped, so no zombie is left behind.
 */
static void
ReapTrainers(void)
{
	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
	{
		EasemlTrainer *t = SupervisorSlot(slot);

		if (SupervisorStarted(t) && !t->exited)
		{
			int			status;

			if (SupervisorPoll(slot, &status))
			{
				t->exited = true;
				t->wait_status = status;
				world_changed = true;
				DevicesNoteExit(t->device, status);
			}
		}
		if (!t->exited)
			continue;
		if (extension_ready)
			RecordExit(slot);
		else
		{
			ereport(LOG,
					(errmsg("easeml: run %lld ended while the extension is not installed; nothing recorded",
							(long long) t->run_id)));
			FreeResult(slot_result[slot]);
			slot_result[slot] = NULL;
			SupervisorRelease(slot);
		}
	}
	if (extension_ready)
		RetryBacklog();
	else
	{
		for (int i = 0; i < n_backlog; i++)
			FreeResult(backlog[i]);
		n_backlog = 0;
	}
}

/*
 * Stop trainers whose run was cancelled, timed out or deleted (its task was
 * dropped), and escalate stops already under way.  Then put right runs the
 * catalog says are running but no slot tracks.
 */
static void
StopTrainers(void)
{
	int64		ids[EASEML_MAX_SLOTS + BACKLOG_MAX];
	int			slots[EASEML_MAX_SLOTS];
	int			verdict[EASEML_MAX_SLOTS];
	int			n = 0;
	int			tracked = 0;
	int			fixed = 0;

	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
	{
		EasemlTrainer *t = SupervisorSlot(slot);

		if (t->run_id != 0)
			ids[tracked++] = t->run_id;
		if (SupervisorStarted(t) && !t->exited)
		{
			slots[n] = slot;
			n++;
		}
	}
	/* results waiting in the backlog are not lost trainers */
	for (int i = 0; i < n_backlog; i++)
		ids[tracked++] = backlog[i]->run_id;

	CatalogBegin("easeml: checking runs in flight");
	if (n > 0)
	{
		int64		live[EASEML_MAX_SLOTS];

		for (int i = 0; i < n; i++)
			live[i] = SupervisorSlot(slots[i])->run_id;
		CatalogCheckRuns(live, n, verdict);
	}
	if (easeml_enabled)
		fixed = CatalogReconcile(ids, tracked);
	CatalogCommit();
	if (fixed > 0)
		world_changed = true;
	if (fixed > 0)
		ereport(LOG,
				(errmsg("easeml: %d run(s) marked running had no trainer; requeued or marked interrupted",
						fixed)));

	for (int i = 0; i < n; i++)
	{
		int			slot = slots[i];
		EasemlTrainer *t = SupervisorSlot(slot);

		if (verdict[i] == 2)
			SupervisorStop(slot, EASEML_STOP_ORPHAN);
		else if (verdict[i] == 1)
			SupervisorStop(slot, EASEML_STOP_CANCEL);
		if (easeml_run_timeout > 0 &&
			TimestampDifferenceExceeds(t->started, GetCurrentTimestamp(),
									   easeml_run_timeout * 1000))
			SupervisorStop(slot, EASEML_STOP_TIMEOUT);
		if (t->term_sent != 0)
			SupervisorStop(slot, t->stop_reason);	/* escalate after grace */
	}
}

/*
 * The trainer's environment: nothing inherited from the postmaster but
 * HOME and TZ, and for a Slurm job not even those (sbatch --export names
 * what travels).  envp must hold 20 entries.
 */
static void
TrainerEnvironment(char **envp, int64 run_id, const char *token,
				   const CatDevice *device, bool slurm)
{
	int			ne = 0;
	const char *home = getenv("HOME");
	const char *tz = getenv("TZ");
	bool		cuda = strcmp(device->kind, EASEML_KIND_CUDA) == 0;

	envp[ne++] = psprintf("%s=%s", EASEML_ENV_CONNINFO, TrainerConninfo());
	envp[ne++] = psprintf("%s=%lld", EASEML_ENV_RUN_ID, (long long) run_id);
	envp[ne++] = psprintf("%s=%s", EASEML_ENV_RUN_TOKEN, token);
	envp[ne++] = psprintf("%s=%s", EASEML_ENV_DEVICE, device->name);
	envp[ne++] = psprintf("%s=%s", EASEML_ENV_DEVICE_KIND, device->kind);
	envp[ne++] = psprintf("%s=%d", EASEML_ENV_TIME_LIMIT, easeml_run_timeout);
	envp[ne++] = psprintf("%s=%.0f", EASEML_ENV_MEMORY_LIMIT, EasemlTrainerMemoryLimitBytes());
	envp[ne++] = psprintf("OPENBLAS_NUM_THREADS=%d", easeml_trainer_threads);
	envp[ne++] = psprintf("OMP_NUM_THREADS=%d", easeml_trainer_threads);
	envp[ne++] = "LC_ALL=C";
	if (!slurm)
	{
		envp[ne++] = psprintf("%s=%d", EASEML_ENV_SCHEDULER_PID, (int) MyProcPid);
		envp[ne++] = cuda ? psprintf("%s=%d", EASEML_ENV_CUDA_VISIBLE, device->ordinal) :
			psprintf("%s=", EASEML_ENV_CUDA_VISIBLE);
		envp[ne++] = "PATH=/usr/local/bin:/usr/bin:/bin";
		if (home)
			envp[ne++] = psprintf("HOME=%s", home);
		if (tz)
			envp[ne++] = psprintf("TZ=%s", tz);
	}
	envp[ne] = NULL;
}

/*
 * A launch that failed: an unreachable cluster interrupts the run (its
 * candidate is trained again) and pauses launches for LAUNCH_BACKOFF_MS,
 * doubled for each such failure in a row up to LAUNCH_BACKOFF_MAX_MS,
 * instead of burning one candidate after another; anything else fails it.
 */
static void
RecordFailedLaunch(int64 run_id, bool transient, const char *err)
{
	CatalogBegin("easeml: recording a failed launch");
	if (transient)
	{
		int			ms = LAUNCH_BACKOFF_MS;

		CatalogFinishRun(run_id, "interrupted", INT_MIN, NULL,
						 psprintf("interrupted: %s", err));
		for (int i = 0; i < launch_failures && ms < LAUNCH_BACKOFF_MAX_MS; i++)
			ms *= 2;
		launch_failures++;
		launch_backoff_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														   Min(ms, LAUNCH_BACKOFF_MAX_MS));
	}
	else
		CatalogRunFailedToStart(run_id, err);
	CatalogCommit();
}

/* The launch of the trainer in a slot is under way: record where it runs. */
static void
RecordLaunched(int slot, const CatDevice *device)
{
	EasemlTrainer *t = SupervisorSlot(slot);

	CatalogBegin("easeml: recording a launch");
	CatalogRunStarted(t->run_id, (int) t->pid, t->log_path);
	if (t->job_id > 0)
		TrainerJobSubmitted(t->run_id, t->job_id);
	CatalogCommit();
	if (t->job_id > 0)
		ereport(LOG, (errmsg("easeml: run %lld submitted in slot %d to %s (Slurm job %lld)",
							 (long long) t->run_id, slot, t->device, (long long) t->job_id)));
	else
		ereport(LOG, (errmsg("easeml: run %lld started in slot %d on %s (pid %d)",
							 (long long) t->run_id, slot, device ? device->name : t->device,
							 (int) t->pid)));
}

/*
 * Read the answers of the Slurm submissions under way (sbatch runs in the
 * background, src/worker/supervisor.c): record the job of each one that was
 * accepted, and the failure of each one that was not.  The loop never
 * waits for sbatch.
 */
static void
FinishSubmissions(void)
{
	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
	{
		EasemlTrainer *t = SupervisorSlot(slot);
		char		err[512];
		bool		transient;
		int64		run_id = t->run_id;

		if (!t->submitting)
			continue;
		switch (SupervisorSubmitted(slot, &transient, err, sizeof(err)))
		{
			case SUBMIT_NONE:
			case SUBMIT_PENDING:
				break;
			case SUBMIT_DONE:
				launch_failures = 0;
				world_changed = true;
				RecordLaunched(slot, NULL);
				break;
			case SUBMIT_FAILED:
				SupervisorRelease(slot);
				world_changed = true;
				ereport(WARNING, (errmsg("easeml: run %lld: %s", (long long) run_id, err)));
				RecordFailedLaunch(run_id, transient, err);
				break;
		}
	}
	SupervisorSlurmStep();
}

/*
 * Launch the trainer of a run already recorded as 'running' in a slot on a
 * device, with the launcher easeml.launcher names (src/worker/launcher.h).  The
 * trainer sees only its own GPU (CUDA_VISIBLE_DEVICES; on Slurm, Slurm
 * sets it for the GPU it grants), none on the CPU.  It proves it is the
 * run's trainer with a fresh token, recorded first (src/worker/trainer_jobs.c).
 */
static void
LaunchRun(int64 run_id, int slot, const CatDevice *device)
{
	char	   *path = SupervisorTrainerPath();
	char	   *dir = RunDirectory(run_id);
	char	   *token = TrainerTokenNew();
	char		err[512];
	char	   *argv[6];
	char	   *envp[20];
	bool		slurm = easeml_launcher == EASEML_LAUNCHER_SLURM;
	bool		transient;
	LaunchRequest req;

	/* what travels to a Slurm job (sbatch --export): never HOME or PATH */
	static const char *const exports[] = {
		EASEML_ENV_CONNINFO, EASEML_ENV_RUN_ID, EASEML_ENV_RUN_TOKEN,
		EASEML_ENV_DEVICE, EASEML_ENV_DEVICE_KIND, EASEML_ENV_TIME_LIMIT,
		EASEML_ENV_MEMORY_LIMIT, "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "LC_ALL", NULL
	};

	argv[0] = path;
	argv[1] = EASEML_ARG_RUN;
	argv[2] = psprintf("%lld", (long long) run_id);
	argv[3] = EASEML_ARG_RUN_DIR;
	argv[4] = dir;
	argv[5] = NULL;

	TrainerEnvironment(envp, run_id, token, device, slurm);

	memset(&req, 0, sizeof(req));
	req.run_id = run_id;
	req.device = device->name;
	req.device_kind = device->kind;
	req.run_dir = dir;
	req.argv = argv;
	req.envp = envp;
	req.export_names = exports;
	req.time_limit = easeml_run_timeout;

	CatalogBegin("easeml: recording a launch's token");
	TrainerJobRecord(run_id, LauncherName(easeml_launcher), token);
	CatalogCommit();

	pgstat_report_activity(STATE_RUNNING, "easeml: launching a trainer");
	SupervisorReserve(slot, run_id, device->name);
	if (!SupervisorLaunch(slot, &req, &transient, err, sizeof(err)))
	{
		SupervisorRelease(slot);
		ereport(WARNING, (errmsg("easeml: run %lld: %s", (long long) run_id, err)));
		RecordFailedLaunch(run_id, transient, err);
		return;
	}

	/* sbatch answers later (FinishSubmissions) */
	if (SupervisorSlot(slot)->submitting)
	{
		ereport(DEBUG1, (errmsg("easeml: run %lld: submitting in slot %d to %s",
								(long long) run_id, slot, device->name)));
		return;
	}
	RecordLaunched(slot, device);
}

/*
 * After a restart, take back the runs whose Slurm jobs outlived the
 * previous scheduler, before anything marks runs left running as
 * interrupted: a job still alive is followed again (never submitted
 * twice); one that ended, or that Slurm forgot, is recorded from its
 * trainer's report and Slurm's words like any other (BuildResult).
 * Returns how many runs were taken back; their ids go to keep.
 */
static int
ReattachJobs(int64 *keep, int max)
{
	TrainerJobInFlight *jobs;
	int			n;
	int			kept = 0;

	n = TrainerJobsInFlight(LauncherName(EASEML_LAUNCHER_SLURM), CurrentMemoryContext, &jobs);
	for (int i = 0; i < n && kept < max; i++)
	{
		int			slot = SupervisorFreeSlot();

		if (slot < 0)
			break;
		SupervisorAttach(slot, jobs[i].run_id, jobs[i].device, jobs[i].job_id,
						 jobs[i].started);
		keep[kept++] = jobs[i].run_id;
		ereport(LOG,
				(errmsg("easeml: run %lld: following its Slurm job %lld again",
						(long long) jobs[i].run_id, (long long) jobs[i].job_id)));
	}
	return kept;
}

/* Let a task rest for COOLDOWN_MS (see cooldown_task). */
static void
Cooldown(int64 task_id)
{
	TimestampTz now = GetCurrentTimestamp();
	int			victim = 0;

	for (int i = 0; i < COOLDOWN_SLOTS; i++)
	{
		if (cooldown_task[i] == task_id || cooldown_until[i] < now)
		{
			victim = i;
			break;
		}
		if (cooldown_until[i] < cooldown_until[victim])
			victim = i;
	}
	cooldown_task[victim] = task_id;
	cooldown_until[victim] = TimestampTzPlusMilliseconds(now, COOLDOWN_MS);
}

/* Is the task resting? */
static bool
InCooldown(int64 task_id)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < COOLDOWN_SLOTS; i++)
		if (cooldown_task[i] == task_id && cooldown_until[i] > now)
			return true;
	return false;
}

/* One decision to record and launch (for Guarded). */
typedef struct DecisionStep
{
	CatState   *state;
	int			slot;
	const CatDevice *device;
	int			task;			/* index in state->tasks */
	int			model;			/* index in state->models */
	DecisionChoice choice;
	bool		recorded;
} DecisionStep;

/* A candidate of the world's choice in the catalog's terms. */
static void
DescribeCandidate(const CatState *state, const DecisionCandidate *c,
				  int64 task_id, const char *tenant, CatCandidate *out)
{
	out->task_id = task_id;
	out->tenant = tenant;
	out->model_id = state->models[c->arm].id;
	out->mu = c->mu;
	out->sigma = c->sigma;
	out->est_seconds = c->cost;
	out->acquisition = c->acq;
	out->score = c->score;
}

/* The decision as recorded: the choice, its rule and its runner-ups. */
static void
DescribeDecision(const DecisionStep *step, CatDecision *d)
{
	const CatState *state = step->state;
	const CatTask *task = &state->tasks[step->task];
	const DecisionChoice *c = &step->choice;

	memset(d, 0, sizeof(*d));
	d->policy = LiveWorldPolicyLabel()[0] ? LiveWorldPolicyLabel() : state->policy;
	d->rule = PolicyRuleName(c->rule);
	d->gp_status = GpStatusText(c->gp_status);
	d->eligible = c->n_eligible;
	DescribeCandidate(state, &c->chosen, task->id, task->tenant, &d->chosen);
	for (int i = 0; i < c->n_runner_tasks && i < CAT_RUNNERS_UP; i++)
	{
		const DecisionTask *rt = LiveWorldTaskAt(c->runner_tasks[i].task);

		DescribeCandidate(state, &c->runner_tasks[i], rt->id,
						  LiveWorldTenantName(rt), &d->tasks[d->n_tasks++]);
	}
	for (int i = 0; i < c->n_runner_arms && i < CAT_RUNNERS_UP; i++)
		DescribeCandidate(state, &c->runner_arms[i], task->id, task->tenant,
						  &d->models[d->n_models++]);
}

/* Record a decision and its run, tell the world, launch it. */
static void
RecordDecisionStep(void *arg)
{
	DecisionStep *step = arg;
	CatState   *state = step->state;
	CatDecision d;
	int64		run_id;

	DescribeDecision(step, &d);
	CatalogBegin("easeml: recording a decision");
	run_id = CatalogCreateRun(&d, step->slot, step->device);
	CatalogCommit();
	step->recorded = true;

	/* the candidate is running, the task served */
	LiveWorldStarted(state, step->task, step->model);
	SpinLockAcquire(&EasemlState->mutex);
	EasemlState->decisions++;
	SpinLockRelease(&EasemlState->mutex);

	ereport(DEBUG1,
			(errmsg("easeml: %s (%s) chose model %s for task %lld (mu %.4f sigma %.4f)",
					state->policy, d.rule, state->models[step->model].name,
					(long long) d.chosen.task_id, d.chosen.mu, d.chosen.sigma)));
	LaunchRun(run_id, step->slot, step->device);
}

/* Bring the world in line with the loaded state, under the live settings. */
static void
SyncWorld(CatState *state)
{
	LiveSettings s;

	s.policy = state->policy;
	s.slots = Max(DevicesSlots(), 1);
	s.tenant_cap = easeml_max_parallel_per_tenant;
	s.cost_aware = easeml_cost_aware;
	s.beta = easeml_beta;
	s.fairness_window = easeml_fairness_window;
	if (!LiveWorldSync(state, &s))
	{
		TimestampTz now = GetCurrentTimestamp();

		/* set_policy and the GUC check refuse unknown specs: a leftover */
		if (TimestampDifferenceExceeds(last_policy_warning, now, 60000))
		{
			ereport(WARNING,
					(errmsg("easeml: policy \"%s\" is unknown or does not run live; keeping the previous one",
							state->policy),
					 errhint("SELECT easeml.set_policy('default') restores the default.")));
			last_policy_warning = now;
		}
	}
}

/*
 * Make one decision per free slot (after the queued runs were claimed).
 * Before each, the world learns which candidates can start now and the
 * cost of each on the device it would get (src/worker/devices.c); the chosen one
 * goes to that device.
 */
static void
DecideFreeSlots(CatState *state)
{
	for (int left = DevicesFree(); left > 0; left--)
	{
		DecisionStep step;

		memset(&step, 0, sizeof(step));
		step.state = state;
		DevicesPlaceCandidates(state);
		for (;;)
		{
			if (!LiveWorldNext(state, &step.task, &step.model, &step.choice))
				return;			/* nothing left to schedule */
			step.device = DevicesPlaceRun(state, step.task, step.model);
			step.slot = SupervisorFreeSlot();
			if (step.slot < 0)
				return;
			/* the free device of its kind failed this candidate before */
			if (step.device == NULL)
			{
				LiveWorldBlock(state->tasks[step.task].id);
				continue;
			}
			if (Guarded(RecordDecisionStep, &step))
			{
				world_changed = true;
				break;
			}
			/* could not record it (e.g. a tenant holds a lock): skip the task */
			if (!step.recorded)
			{
				LiveWorldBlock(state->tasks[step.task].id);
				Cooldown(state->tasks[step.task].id);
			}
			else
				break;
		}
	}
}

/* Seconds a trainer has run. */
static double
Elapsed(const EasemlTrainer *t)
{
	return (double) (GetCurrentTimestamp() - t->started) / USECS_PER_SEC;
}

/* A trainer that may be preempted: running, not stopping, past the budget. */
static bool
OverBudget(const EasemlTrainer *t)
{
	return SupervisorStarted(t) && !t->exited && t->term_sent == 0 &&
		t->stop_reason == EASEML_STOP_NONE && Elapsed(t) > easeml_run_budget;
}

/*
 * Should a full scheduler look for a run to preempt?  Only when the
 * budget is on, some trainer is past it, and the catalog changed (a new
 * task) or PREEMPT_CHECK_MS passed.
 */
static bool
PreemptionDue(void)
{
	bool		any = false;

	if (easeml_run_budget <= 0 || easeml_max_parallel_per_tenant == 0)
		return false;
	for (int slot = 0; slot < EASEML_MAX_SLOTS && !any; slot++)
		any = OverBudget(SupervisorSlot(slot));
	return any && (world_changed ||
				   TimestampDifferenceExceeds(last_preempt_check, GetCurrentTimestamp(),
											  PREEMPT_CHECK_MS));
}

/*
 * Every slot is busy and the world is synced: for each tenant waiting
 * below its fair share (less the preemptions already under way), stop the
 * longest-running trainer of a tenant above its share that has run longer
 * than its budget: easeml.run_budget and twice its estimate, doubled for
 * every earlier preemption of the same candidate.
 */
static void
PreemptOverShare(void)
{
	const char *starved;
	int			n_starved = LiveWorldStarved(&starved);
	int64		ids[EASEML_MAX_SLOTS];
	int			slots[EASEML_MAX_SLOTS];
	CatRunBudget budget[EASEML_MAX_SLOTS];
	int			n = 0;

	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
	{
		EasemlTrainer *t = SupervisorSlot(slot);

		if (SupervisorStarted(t) && !t->exited && t->stop_reason == EASEML_STOP_PREEMPT)
			n_starved--;		/* a slot is being freed already */
		else if (OverBudget(t))
		{
			ids[n] = t->run_id;
			slots[n++] = slot;
		}
	}
	if (n_starved <= 0 || n == 0)
		return;
	CatalogBegin("easeml: checking run budgets");
	CatalogRunBudgets(ids, n, budget);
	CatalogCommit();
	while (n_starved-- > 0)
	{
		int			victim = -1;
		double		longest = 0;

		for (int i = 0; i < n; i++)
		{
			EasemlTrainer *t = SupervisorSlot(slots[i]);
			double		limit = Max((double) easeml_run_budget, 2.0 * budget[i].est_seconds);

			limit = ldexp(limit, Min(budget[i].preempted, 20));
			if (budget[i].tenant == NULL || !LiveWorldOverShare(budget[i].tenant) ||
				t->stop_reason != EASEML_STOP_NONE || Elapsed(t) <= limit)
				continue;
			if (victim < 0 || Elapsed(t) > longest)
			{
				victim = i;
				longest = Elapsed(t);
			}
		}
		if (victim < 0)
			return;
		strlcpy(preempt_for[slots[victim]], starved, NAMEDATALEN);
		ereport(LOG,
				(errmsg("easeml: preempting run %lld of tenant \"%s\" after %.0f s: tenant \"%s\" waits below its fair share",
						(long long) ids[victim], budget[victim].tenant, longest, starved)));
		SupervisorStop(slots[victim], EASEML_STOP_PREEMPT);
	}
}

/* Apply a configuration reload (SIGHUP) that is pending; outside transactions. */
static void
ReloadConfigIfPending(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}

/*
 * Start the runs tenants queued themselves (easeml.enqueue) in free slots,
 * oldest first, each while its tenant holds fewer trainers than its cap in
 * the synced world: its max_parallel and, while other tenants wait, its
 * fair share.  A tenant's queue goes before the policy's choices for it,
 * never past its share (docs/scheduler.md 7.1).
 */
static void
ClaimQueued(CatState *state, const CatSlot *free_slots, int nfree)
{
	CatClaim	claims[EASEML_MAX_SLOTS];
	const char **tenants = palloc(sizeof(char *) * Max(state->n_tenant_running, 1));
	int		   *caps = palloc(sizeof(int) * Max(state->n_tenant_running, 1));
	int			n = 0;
	int			nclaims;

	for (int i = 0; i < state->n_tenant_running; i++)
		if (state->tenant_queued[i] > 0)
		{
			tenants[n] = state->tenant_names[i];
			caps[n++] = LiveWorldQueueCap(state->tenant_names[i]);
		}
	if (n == 0 || nfree == 0)
		return;
	CatalogBegin("easeml: claiming queued runs");
	nclaims = CatalogClaimQueued(free_slots, nfree, tenants, caps, n, claims);
	for (int i = 0; i < nclaims; i++)
	{
		int			k = CatalogModelIndex(state, claims[i].model_id);
		double		est = k >= 0 ? LiveWorldCost(claims[i].task_id, k) : NAN;

		if (isfinite(est) && est > 0)
			CatalogSetClaimEstimate(claims[i].run_id, est);
	}
	CatalogCommit();
	for (int i = 0; i < nclaims; i++)
	{
		LiveWorldClaimed(claims[i].tenant);
		LaunchRun(claims[i].run_id, claims[i].slot, DevicesLookup(claims[i].device));
	}
	if (nclaims > 0)
		world_changed = true;
}

/*
 * Queue the refits active deployments lack, in a short transaction of its
 * own (under Guarded: a failure is logged and scheduling goes on).
 */
static void
QueueMissingRefitsStep(void *arg)
{
	CatalogBegin("easeml: queueing refits");
	if (CatalogQueueMissingRefits() > 0)
		world_changed = true;
	CatalogCommit();
}

/*
 * Start queued refits (a deployed run trained again on every row,
 * docs/results.md) in free slots, before anything else: the deployment
 * waits for them.  Returns how many were launched.
 */
static int
ClaimRefits(const CatSlot *free_slots, int nfree)
{
	CatClaim	claims[EASEML_MAX_SLOTS];
	int			nclaims;

	if (nfree == 0)
		return 0;
	CatalogBegin("easeml: claiming refits");
	nclaims = CatalogClaimRefits(free_slots, nfree, claims);
	CatalogCommit();
	for (int i = 0; i < nclaims; i++)
	{
		LiveWorldClaimed(claims[i].tenant);
		LaunchRun(claims[i].run_id, claims[i].slot, DevicesLookup(claims[i].device));
	}
	if (nclaims > 0)
		world_changed = true;
	return nclaims;
}

/*
 * Fill free slots: first runs users queued, then the policy's choices,
 * each on a device placement chooses (src/worker/devices.c).
 */
static void
Schedule(void)
{
	CatSlot		free_slots[EASEML_MAX_SLOTS];
	int			nfree;
	CatState	state;
	bool		full;
	bool		any_queued;

	/*
	 * Again here, not only at the top of the loop: a change committed after
	 * a reload (ALTER SYSTEM, pg_reload_conf(), then a new task from
	 * another session) reaches the scheduler with the reload already
	 * signalled, and the runs this step starts for it must get the new
	 * settings (easeml.run_timeout, trainer_path), whatever the step was
	 * doing when the signal came.
	 */
	ReloadConfigIfPending();

	/*
	 * A task's candidates are sized against the memory limit when it joins
	 * the world (CatalogOverMemory): a new limit rebuilds the world.
	 */
	if (EasemlTrainerMemoryLimitBytes() != applied_memory_limit)
	{
		if (applied_memory_limit >= 0)
			LiveWorldReset();
		applied_memory_limit = EasemlTrainerMemoryLimitBytes();
	}
	/* nothing is placed before the devices are known */
	if (!easeml_enabled || !DevicesKnown())
		return;
	/* the launcher's cluster could not be reached a moment ago */
	if (launch_backoff_until > GetCurrentTimestamp())
		return;
	if (world_changed)
		DevicesChanged();
	/*
	 * Every slot busy: tasks only complete when runs end, which frees a
	 * slot; only the run budget may have something to do.
	 */
	full = DevicesFree() == 0;
	if (full && !PreemptionDue())
		return;
	if (!full && !world_changed &&
		!TimestampDifferenceExceeds(last_load, GetCurrentTimestamp(), IDLE_RELOAD_MS))
		return;
	world_changed = false;
	last_load = GetCurrentTimestamp();

	nfree = DevicesFreeSlots(free_slots, EASEML_MAX_SLOTS);
	(void) Guarded(QueueMissingRefitsStep, NULL);
	CatalogBegin("easeml: loading tasks");
	any_queued = CatalogCancelQueued();
	CatalogLoadStateKept(&state, LiveWorldRefitDue());
	CatalogLoadPlacement(&state);
	DevicesRestrict(&state);
	CatalogCloseTasks(&state);
	CatalogCommit();
	for (int i = 0; i < state.n_tasks; i++)
		state.tasks[i].skip = InCooldown(state.tasks[i].id);
	SyncWorld(&state);

	SpinLockAcquire(&EasemlState->mutex);
	strlcpy(EasemlState->policy, state.policy, sizeof(EasemlState->policy));
	strlcpy(EasemlState->policy_label, LiveWorldPolicyLabel(),
			sizeof(EasemlState->policy_label));
	SpinLockRelease(&EasemlState->mutex);

	if (full)
	{
		last_preempt_check = GetCurrentTimestamp();
		PreemptOverShare();
		refit_pending = LiveWorldRefitStart(&state);
		return;
	}
	if (any_queued)
	{
		if (ClaimRefits(free_slots, nfree) > 0)
			nfree = DevicesFreeSlots(free_slots, EASEML_MAX_SLOTS);
		ClaimQueued(&state, free_slots, nfree);
	}
	DecideFreeSlots(&state);
	refit_pending = LiveWorldRefitStart(&state);
}

/*
 * easeml.check_catalog: load the catalog from the kept runs and afresh in
 * one snapshot, and say whether the two loads are equal.  A difference
 * means an incremental load missed a change: the kept runs are forgotten,
 * so the next step reads them all.
 */
static void
CheckCatalog(void)
{
	CatState	kept;
	CatState	fresh;
	char	   *diff;
	int64		full_reads,
				changed;

	CatalogBeginRepeatable("easeml: checking the incremental catalog load");
	CatalogLoadStateKept(&kept, false);
	CatalogLoadState(&fresh, false);
	diff = CatalogStatesDiffer(&kept, &fresh);
	CatalogCommit();
	CatalogRunsCounters(&full_reads, &changed);
	if (diff != NULL)
	{
		ereport(WARNING,
				(errmsg("easeml: the incremental catalog load differs from a full load: %s", diff)));
		CatalogForgetRuns();
	}
	else
		ereport(LOG,
				(errmsg("easeml: incremental catalog load checked: equal to a full load (%d active tasks; %lld full reads, %lld changed rows so far)",
						kept.n_tasks, (long long) full_reads, (long long) changed)));
}

/*
 * Refit work off the decision path: slices of at most REFIT_SLICE_MS,
 * each a prior or the cost model (src/core/refit.c).
 */
static void
RefitSlice(void)
{
	TimestampTz start = GetCurrentTimestamp();

	if (!refit_pending)
		return;
	while (refit_pending &&
		   !TimestampDifferenceExceeds(start, GetCurrentTimestamp(), REFIT_SLICE_MS))
		refit_pending = LiveWorldRefitWork();
	/* new priors may change every decision: decide again with them */
	if (!refit_pending)
	{
		world_changed = true;
		PolicyChoiceRecord();
	}
}

/* Remove the directories of runs that are gone, keeping tracked ones. */
static void
SweepRunDirectories(void)
{
	int64		keep[EASEML_MAX_SLOTS + BACKLOG_MAX];
	int			n = 0;

	sweep_pending = false;
	last_sweep = GetCurrentTimestamp();
	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
		if (SupervisorSlot(slot)->run_id != 0)
			keep[n++] = SupervisorSlot(slot)->run_id;
	for (int i = 0; i < n_backlog; i++)
		keep[n++] = backlog[i]->run_id;
	(void) RunDirSweep(extension_ready, keep, n);
}

/* One iteration of the loop; errors propagate to the caller's PG_TRY. */
static void
Iterate(void)
{
	bool		was_ready = extension_ready;
	CatalogStatus catalog;

	/* runs were deleted: their directories go now, not at the hourly sweep */
	if (EasemlTakeSweepRequest())
		sweep_pending = true;

	/* before reaping: a dropped extension has nothing to record into */
	CatalogBegin("easeml: checking the extension");
	catalog = CatalogReady();
	if (catalog == CATALOG_OTHER_VERSION)
	{
		/* an upgrade under way: record nothing, stop nothing, remove nothing */
		CatalogCommit();
		return;
	}
	extension_ready = (catalog == CATALOG_READY);
	seen_ready |= extension_ready;
	if (extension_ready && !recovered)
	{
		int64		keep[EASEML_MAX_SLOTS];
		int			nkeep = ReattachJobs(keep, EASEML_MAX_SLOTS);
		int			n = CatalogRecover(keep, nkeep);

		if (n > 0)
			ereport(LOG, (errmsg("easeml: marked %d run(s) left running as interrupted", n)));
		bootstrap_user = MemoryContextStrdup(TopMemoryContext, CatalogBootstrapUser());
		recovered = true;
	}
	CatalogCommit();
	ReapTrainers();
	if (!extension_ready)
	{
		LiveWorldReset();
		CatalogForgetRuns();
		DevicesReset();
		refit_pending = false;
		/* dropped under running trainers: their runs are gone, stop them */
		for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
			if (SupervisorStarted(SupervisorSlot(slot)) && !SupervisorSlot(slot)->exited)
				SupervisorStop(slot, EASEML_STOP_ORPHAN);
		/*
		 * Only a drop this scheduler saw clears every run directory: at a
		 * start before CREATE EXTENSION (a database being restored, a new
		 * easeml.database) the directories may still have their runs.
		 */
		if (was_ready)
			sweep_pending = true;
		if (sweep_pending && seen_ready && SupervisorCountRunning() == 0)
			SweepRunDirectories();
		return;
	}
	FinishSubmissions();
	if (sweep_pending ||
		TimestampDifferenceExceeds(last_sweep, GetCurrentTimestamp(), SWEEP_INTERVAL_MS))
		SweepRunDirectories();

	StopTrainers();
	if (easeml_enabled)
		DevicesStep();
	Schedule();
	if (easeml_check_catalog && easeml_enabled)
		CheckCatalog();
	RefitSlice();
	/* after the decisions: expire the scheduler's own log (src/worker/retention.c) */
	RetentionStep();
}

/*
 * Sleep time: short while a trainer is being stopped or a refit is under
 * way, else the naptime.
 */
static long
SleepTime(void)
{
	long		nap = easeml_naptime;
	long		wake = EasemlDeferredWakeDelay();

	/* a wake-up folded by easeml.wake_interval is due when it ends */
	if (wake >= 0)
		nap = Min(nap, wake);
	if (refit_pending)
		return Min(REFIT_NAP_MS, nap);
	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
	{
		EasemlTrainer *t = SupervisorSlot(slot);

		if (SupervisorStarted(t) && (t->term_sent != 0 || t->exited))
			return Min(100, nap);
	}
	return nap;
}

/*
 * The loop's health for easeml.scheduler_status(): when an iteration last
 * ended, and the latest error that ended one, so that a monitor can tell a
 * scheduler that loops but fails, or one that is stuck, from SQL.
 */
static char loop_error[sizeof(EasemlState->last_error)];

/* In PG_CATCH, in a memory context other than ErrorContext. */
static void
RememberLoopError(void)
{
	ErrorData  *edata = CopyErrorData();

	snprintf(loop_error, sizeof(loop_error), "%s: %s",
			 unpack_sql_state(edata->sqlerrcode), edata->message);
	loop_error[pg_mbcliplen(loop_error, strlen(loop_error), sizeof(loop_error) - 1)] = '\0';
	FreeErrorData(edata);
}

static void
PublishHealth(bool failed)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&EasemlState->mutex);
	EasemlState->running = SupervisorCountRunning();
	EasemlState->loop_at = now;
	if (failed)
	{
		EasemlState->loop_errors++;
		EasemlState->error_at = now;
		memcpy(EasemlState->last_error, loop_error, sizeof(loop_error));
	}
	SpinLockRelease(&EasemlState->mutex);
}

/*
 * Error context while the scheduler connects: the server log then says
 * that easeml.database names a database that does not exist (the worker
 * is restarted every 5 s until it does).
 */
static void
ConnectContext(void *arg)
{
	errcontext("the easeml scheduler connects to the database named by easeml.database = \"%s\"",
			   easeml_database);
	errhint("Create that database and run CREATE EXTENSION easeml in it, or set easeml.database and restart.");
}

/*
 * Entry point of the scheduler background worker.
 */
void
EasemlSchedulerMain(Datum main_arg)
{
	ErrorContextCallback connect_context;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGCHLD, HandleSigchld);
	BackgroundWorkerUnblockSignals();

	/* a database that does not exist: say which setting names it */
	connect_context.callback = ConnectContext;
	connect_context.arg = NULL;
	connect_context.previous = error_context_stack;
	error_context_stack = &connect_context;
	BackgroundWorkerInitializeConnection(easeml_database, NULL, 0);
	error_context_stack = connect_context.previous;
	pgstat_report_appname("easeml scheduler");

	/*
	 * The scheduler runs as a superuser: resolve every name in pg_catalog
	 * only, so no object a tenant creates (an operator in public, say) can
	 * run in it.  Its statements are short; a lock a tenant holds on one of
	 * its own rows makes a statement fail after a moment instead of
	 * stopping the loop.
	 */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "500ms", PGC_SUSET, PGC_S_OVERRIDE);

	if (!EasemlShmemRegisterScheduler())
	{
		ereport(LOG, (errmsg("easeml: another scheduler is running, exiting")));
		proc_exit(1);
	}
	before_shmem_exit(SchedulerExit, 0);
	/* sessions of trainers a previous scheduler left behind */
	if (TrainerSessionTerminate(0) > 0)
		ereport(LOG, (errmsg("easeml: ended database sessions left by earlier trainers")));

	ereport(LOG, (errmsg("easeml scheduler started in database \"%s\"",
						 easeml_database)));

	loop_context = AllocSetContextCreate(TopMemoryContext, "easeml scheduler loop",
										 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		bool		failed = false;

		CHECK_FOR_INTERRUPTS();
		ReloadConfigIfPending();
		/* a committed change whose wake-up easeml.wake_interval deferred */
		if (EasemlTakeDeferredWake())
			world_changed = true;

		MemoryContextSwitchTo(loop_context);
		PG_TRY();
		{
			Iterate();
		}
		PG_CATCH();
		{
			/* autovacuum's recipe: report, abort, and carry on */
			HOLD_INTERRUPTS();
			MemoryContextSwitchTo(TopMemoryContext);
			RememberLoopError();
			EmitErrorReport();
			AbortOutOfAnyTransaction();
			FlushErrorState();
			pgstat_report_activity(STATE_IDLE, NULL);
			RESUME_INTERRUPTS();
			failed = true;
			world_changed = true;
			/* the kept runs may be half brought up to date: read them again */
			CatalogForgetRuns();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(loop_context);

		/* after an error too: status must not report trainers long gone */
		PublishHealth(failed);

		if (WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					  failed ? Max(easeml_naptime, 1000) : SleepTime(),
					  PG_WAIT_EXTENSION) & WL_LATCH_SET)
			world_changed = true;
		ResetLatch(MyLatch);
	}
}
