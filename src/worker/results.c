/*-------------------------------------------------------------------------
 *
 * results.c
 *	  How runs end: the scheduler reaps trainers that ended
 *	  (src/worker/supervisor.c tells how), works out each run's status and
 *	  error or metrics from the supervisor's word, the trainer's report and
 *	  its log, and records it in a short transaction of its own; a result
 *	  that cannot be recorded yet waits in a backlog.  The result path runs
 *	  one way: the loop calls ReapTrainers, which calls the supervisor and
 *	  the catalog, never the other way round.
 *
 * IDENTIFICATION
 *	  src/worker/results.c
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
#include "module/monoclock.h"
#include "pgstat.h"
#include "core/policy.h"
#include "policy_choice.h"
#include "retention.h"
#include "rundir.h"
#include "scheduler.h"
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
	int			hard_failures;	/* attempts that failed for another reason
								 * than a lock its tenant held */
	TimestampTz next_try;		/* monotonic */
} PendingResult;

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
		/*
		 * nobody's fault: the candidate is tried again, with more time.
		 * The waiting tenant is not named: the run's error is its own
		 * tenant's to read (run_events too), and another tenant's role is
		 * none of its business; the server log names it (stops.c).
		 */
		*error = psprintf("preempted after %ld s: another tenant waited below its fair share of the slots (easeml.run_budget = %d s; %s)",
						  (long) ((EasemlMonotonicNow() - t->started) / USECS_PER_SEC),
						  easeml_run_budget, how);
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

	/* what the trainer reported through the database (easeml_trainer.result) */
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
		Sched.sweep_pending = true;
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
	if (r->hard_failures >= BACKLOG_GIVE_UP / 2 && r->metrics != NULL)
	{
		/*
		 * the result itself cannot be stored: store that instead (not when
		 * a tenant's lock held it up, the documented wait of the backlog)
		 */
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
	if (strcmp(r->status, "interrupted") == 0)
		CatalogRequeueInterrupted(r->run_id, r->preempted);
	CatalogCommit();
	ereport(LOG,
			(errmsg("easeml: run %lld %s (%s)", (long long) r->run_id, r->status, r->how)));
}

/* One attempt to record r; counts the failures no tenant's lock explains. */
static bool
RecordResult(PendingResult *r)
{
	if (Guarded(RecordResultStep, r))
		return true;
	if (Sched.step_error != ERRCODE_LOCK_NOT_AVAILABLE)
		r->hard_failures++;
	return false;
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
	if (RecordResult(r))
	{
		FreeResult(r);
		slot_result[slot] = NULL;
		SupervisorRelease(slot);
	}
	else if (r->attempts >= 3 && n_backlog < BACKLOG_MAX)
	{
		r->next_try = TimestampTzPlusMilliseconds(EasemlMonotonicNow(), BACKLOG_RETRY_MS);
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
	TimestampTz now = EasemlMonotonicNow();

	for (int i = 0; i < n_backlog; i++)
	{
		PendingResult *r = backlog[i];
		bool		done;

		if (r->next_try > now)
			continue;
		done = RecordResult(r);
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
 * Reap trainers that ended and record them.  Without the extension (it was
 * dropped under running trainers: extension_ready false) there is nothing
 * to record into: the processes are still reaped, so no zombie is left
 * behind.
 */
void
ReapTrainers(bool extension_ready)
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
				Sched.world_changed = true;
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


/* The run ids of the results in the backlog, into ids (BACKLOG_MAX); how many. */
int
ResultsBacklogRunIds(int64 *ids)
{
	for (int i = 0; i < n_backlog; i++)
		ids[i] = backlog[i]->run_id;
	return n_backlog;
}
