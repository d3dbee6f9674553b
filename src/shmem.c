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
 * IDENTIFICATION
 *	  src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "easeml.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

EasemlShared *EasemlState = NULL;

static bool wake_pending = false;
static bool xact_callback_registered = false;

/* shmem_request_hook body: reserve space for the shared struct. */
void
EasemlShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(EasemlShared)));
	TrainerSessionShmemRequest();
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

static void
WakeXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			if (wake_pending && EasemlState != NULL)
			{
				Latch	   *latch;

				SpinLockAcquire(&EasemlState->mutex);
				latch = EasemlState->scheduler_latch;
				SpinLockRelease(&EasemlState->mutex);
				if (latch != NULL)
					SetLatch(latch);
			}
			wake_pending = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			wake_pending = false;
			break;
		default:
			break;
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
	if (!xact_callback_registered)
	{
		RegisterXactCallback(WakeXactCallback, NULL);
		xact_callback_registered = true;
	}
	wake_pending = true;
}
