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
 *	   src/core/decision_*.c in line with the catalog), records the decision
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
 * This file is the loop; each step has its own file (src/worker/scheduler.h):
 * results.c reaps and records (1), stops.c stops and preempts (2),
 * decide.c fills free slots (3), launch.c launches trainers, and the
 * catalog*.c files run the statements.
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
#include "module/monoclock.h"
#include "pgstat.h"
#include "core/policy.h"
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

static MemoryContext loop_context = NULL;

/*
 * Refit work (src/core/refit.c) runs in slices of at most this many
 * milliseconds between decisions; while a cycle is under way the loop
 * sleeps at most REFIT_NAP_MS, and not at all while the world waits for
 * it (LiveWorldRefitBlocks: a rebuilt world decides nothing before it).
 */
#define REFIT_SLICE_MS 5
#define REFIT_NAP_MS 20
static bool extension_ready = false;

/* run directories of runs that are gone are swept (src/worker/rundir.c) */
#define SWEEP_INTERVAL_MS (3600 * 1000)
static bool seen_ready = false;	/* the extension was ever seen installed */
static TimestampTz last_sweep = 0;
static bool recovered = false;

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
 * each a prior or the cost model (src/core/refit.c; RefitWork).
 */
static void
RefitSlice(void)
{
	(void) RefitWork(REFIT_SLICE_MS);
}

/* Remove the directories of runs that are gone, keeping tracked ones. */
static void
SweepRunDirectories(void)
{
	int64		keep[EASEML_MAX_SLOTS + BACKLOG_MAX];
	int			n = 0;

	Sched.sweep_pending = false;
	last_sweep = EasemlMonotonicNow();
	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
		if (SupervisorSlot(slot)->run_id != 0)
			keep[n++] = SupervisorSlot(slot)->run_id;
	n += ResultsBacklogRunIds(keep + n);
	(void) RunDirSweep(extension_ready, keep, n);
}

/* One iteration of the loop; errors propagate to the caller's PG_TRY. */
static void
Iterate(void)
{
	bool		was_ready = extension_ready;
	CatalogStatus catalog;
	int64		keep[EASEML_MAX_SLOTS];
	int			nkeep = 0;

	/* runs were deleted: their directories go now, not at the hourly sweep */
	if (EasemlTakeSweepRequest())
		Sched.sweep_pending = true;

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
		nkeep = ReattachJobs(keep, EASEML_MAX_SLOTS);
		Sched.bootstrap_user = MemoryContextStrdup(TopMemoryContext, CatalogBootstrapUser());
	}
	CatalogCommit();
	if (extension_ready && !recovered)
	{
		/* once: a row it cannot end now is retried by StopTrainers */
		recovered = true;
		RecoverRuns(keep, nkeep);
	}
	ReapTrainers(extension_ready);
	if (!extension_ready)
	{
		LiveWorldReset();
		CatalogForgetRuns();
		DevicesReset();
		Sched.refit_pending = false;
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
			Sched.sweep_pending = true;
		if (Sched.sweep_pending && seen_ready && SupervisorCountRunning() == 0)
			SweepRunDirectories();
		return;
	}
	FinishSubmissions();
	if (Sched.sweep_pending ||
		TimestampDifferenceExceeds(last_sweep, EasemlMonotonicNow(), SWEEP_INTERVAL_MS))
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
 * way, none while the world can decide nothing before that refit ends
 * (its slices then follow each other, each loop iteration still reaping
 * and stopping trainers between them), else the naptime.
 */
static long
SleepTime(void)
{
	long		nap = easeml_naptime;
	long		wake = EasemlDeferredWakeDelay();

	/* a wake-up folded by easeml.wake_interval is due when it ends */
	if (wake >= 0)
		nap = Min(nap, wake);
	if (Sched.refit_pending)
		return LiveWorldRefitBlocks() ? 0 : Min(REFIT_NAP_MS, nap);
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
	TimestampTz now = GetCurrentTimestamp();	/* wall clock: shown */

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

	ereport(LOG, (errmsg("easeml: scheduler started in database \"%s\"",
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
			Sched.world_changed = true;

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
			Sched.world_changed = true;
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
			Sched.world_changed = true;
		ResetLatch(MyLatch);
	}
}

