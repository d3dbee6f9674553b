/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Shared state between the scheduler worker and backends, and the
 *	  wake-at-commit mechanism.
 *
 * Backends never signal the scheduler in the middle of a transaction: a
 * change that should wake it (a new task, a cancel, a policy change)
 * registers a transaction callback that sets the scheduler's latch only if
 * the transaction commits, so the scheduler always sees the change when it
 * wakes.  This follows logical replication's ApplyLauncherWakeupAtCommit.
 *
 * Any role can commit a transaction that wakes it (a tenant updating its
 * own task row, say), so wake-ups are rate-limited: a backend sets the
 * latch at most once per easeml.wake_interval, counted across backends; a
 * wake-up sooner than that is recorded as deferred, and the scheduler
 * takes it up at its next iteration, at the latest when the interval ends
 * (after every wake-up it sleeps no longer than the interval).  A flood of
 * commits thus costs the scheduler at most one iteration per interval
 * beyond its naptime, and no wake-up is lost.
 *
 * IDENTIFICATION
 *	  src/module/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "easeml.h"
#include "miscadmin.h"
#include "monoclock.h"
#include "predict_stats.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

EasemlShared *EasemlState = NULL;

/*
 * easeml.wake_interval (ms): defined here, where the wake-ups it limits
 * are, so that this file needs nothing of easeml.c (which registers it).
 */
int			easeml_wake_interval = 50;

static bool wake_pending = false;
static bool sweep_pending = false;
static bool xact_callback_registered = false;

/* shmem_request_hook body: reserve space for the shared struct. */
void
EasemlShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(EasemlShared)));
	TrainerSessionShmemRequest();
	PredictStatsShmemRequest();
}

/* shmem_startup_hook body: create or attach to the shared struct. */
void
EasemlShmemStartup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	EasemlState = ShmemInitStruct("easeml", sizeof(EasemlShared), &found);
	if (!found)
	{
		memset(EasemlState, 0, sizeof(EasemlShared));
		SpinLockInit(&EasemlState->mutex);
	}
	TrainerSessionShmemStartup();
	PredictStatsShmemStartup();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Publish this process as the scheduler.  Returns false if another live
 * scheduler is registered (single-instance guard).
 */
bool
EasemlShmemRegisterScheduler(void)
{
	bool		ok = true;

	if (EasemlState == NULL)
		return false;
	SpinLockAcquire(&EasemlState->mutex);
	if (EasemlState->scheduler_pid != 0 &&
		EasemlState->scheduler_pid != MyProcPid &&
		kill(EasemlState->scheduler_pid, 0) == 0)
		ok = false;
	else
	{
		EasemlState->scheduler_pid = MyProcPid;
		EasemlState->scheduler_latch = &MyProc->procLatch;
		EasemlState->started_at = GetCurrentTimestamp();
		EasemlState->running = 0;
		EasemlState->decisions = 0;
		EasemlState->loop_at = 0;
		EasemlState->loop_errors = 0;
		EasemlState->error_at = 0;
		EasemlState->last_error[0] = '\0';
		EasemlState->wake_deferred = false;
		EasemlState->wakeups = 0;
		EasemlState->wakeups_folded = 0;
	}
	SpinLockRelease(&EasemlState->mutex);
	return ok;
}

/* Forget the scheduler (called at its exit). */
void
EasemlShmemUnregisterScheduler(void)
{
	if (EasemlState == NULL)
		return;
	SpinLockAcquire(&EasemlState->mutex);
	if (EasemlState->scheduler_pid == MyProcPid)
	{
		EasemlState->scheduler_pid = 0;
		EasemlState->scheduler_latch = NULL;
		EasemlState->running = 0;
	}
	SpinLockRelease(&EasemlState->mutex);
}

/* True in the scheduler process itself. */
bool
EasemlIsScheduler(void)
{
	return EasemlState != NULL && EasemlState->scheduler_pid == MyProcPid;
}

/* Has easeml.wake_interval passed since the latch was last set?  Under the mutex. */
static bool
WakeIntervalPassed(TimestampTz now)
{
	TimestampTz last = EasemlState->wake_sent_at;

	return easeml_wake_interval <= 0 || last == 0 || now < last ||
		now - last >= (int64) easeml_wake_interval * 1000;
}

/* At commit: set the scheduler's latch, or defer the wake-up (see above). */
static void
WakeNow(bool sweep)
{
	TimestampTz now = EasemlMonotonicNow();
	Latch	   *latch = NULL;

	SpinLockAcquire(&EasemlState->mutex);
	if (sweep)
		EasemlState->sweep_requested = true;
	if (EasemlState->scheduler_latch != NULL)
	{
		if (WakeIntervalPassed(now))
		{
			latch = EasemlState->scheduler_latch;
			EasemlState->wake_sent_at = now;
			EasemlState->wakeups++;
		}
		else
		{
			EasemlState->wake_deferred = true;
			EasemlState->wakeups_folded++;
		}
	}
	SpinLockRelease(&EasemlState->mutex);
	if (latch != NULL)
		SetLatch(latch);
}

static void
WakeXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if ((wake_pending || sweep_pending) && EasemlState != NULL)
				WakeNow(sweep_pending);
			wake_pending = false;
			sweep_pending = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			wake_pending = false;
			sweep_pending = false;
			break;
		default:
			break;
	}
}

static void
RegisterWakeCallback(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(WakeXactCallback, NULL);
		xact_callback_registered = true;
	}
}

/*
 * Ask for the scheduler to be woken when the current transaction commits.
 * A no-op without shared memory (not preloaded) or inside the scheduler.
 */
void
EasemlWakeAtCommit(void)
{
	if (EasemlState == NULL || EasemlIsScheduler())
		return;
	RegisterWakeCallback();
	wake_pending = true;
}

/*
 * Runs were deleted (a task dropped): when the transaction commits, ask
 * the scheduler to remove their run directories at its next iteration,
 * whether or not it is starting runs (easeml.enabled), and wake it.
 */
void
EasemlSweepAtCommit(void)
{
	if (EasemlState == NULL || EasemlIsScheduler())
		return;
	RegisterWakeCallback();
	sweep_pending = true;
}

/*
 * In the scheduler, at each iteration: was a wake-up deferred since it
 * last looked?  Its change is committed, so the scheduler takes it up now,
 * whether the interval has ended or the scheduler woke for another reason
 * (its naptime, a trainer's exit).  Taking it counts as a wake-up: the
 * interval starts again.
 */
bool
EasemlTakeDeferredWake(void)
{
	TimestampTz now = EasemlMonotonicNow();
	bool		due = false;

	SpinLockAcquire(&EasemlState->mutex);
	if (EasemlState->wake_deferred)
	{
		EasemlState->wake_deferred = false;
		EasemlState->wake_sent_at = now;
		due = true;
	}
	SpinLockRelease(&EasemlState->mutex);
	return due;
}

/*
 * In the scheduler, before it sleeps: milliseconds until the interval that
 * began with the latest wake-up ends, 0 when a deferred wake-up is due
 * now, -1 when neither.  A wake-up deferred while the scheduler sleeps is
 * due when the interval ends, so the scheduler never sleeps past it.
 */
long
EasemlDeferredWakeDelay(void)
{
	TimestampTz now = EasemlMonotonicNow();
	TimestampTz last;
	bool		deferred;

	SpinLockAcquire(&EasemlState->mutex);
	last = EasemlState->wake_sent_at;
	deferred = EasemlState->wake_deferred;
	if (WakeIntervalPassed(now))
		last = 0;
	SpinLockRelease(&EasemlState->mutex);
	if (last == 0)
		return deferred ? 0 : -1;
	return (long) ((last + (int64) easeml_wake_interval * 1000 - now + 999) / 1000);
}

/* In the scheduler: were runs deleted since it last looked? */
bool
EasemlTakeSweepRequest(void)
{
	bool		requested;

	SpinLockAcquire(&EasemlState->mutex);
	requested = EasemlState->sweep_requested;
	EasemlState->sweep_requested = false;
	SpinLockRelease(&EasemlState->mutex);
	return requested;
}
