/*-------------------------------------------------------------------------
 *
 * loop_state.c
 *	  What the scheduler loop's steps share (src/worker/scheduler.h): the
 *	  loop's state (Sched), the error boundary of one step (Guarded) and
 *	  the configuration reload.  Calls nothing of the worker's, so that
 *	  every step can use it and calls between the loop's files go one way.
 *
 * IDENTIFICATION
 *	  src/worker/loop_state.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "scheduler.h"
#include "utils/guc.h"
#include "utils/memutils.h"

/* the state the loop's steps share */
SchedulerLoop Sched = {.world_changed = true,.sweep_pending = true};

/*
 * Run one step in its own error boundary, so that one run or one task
 * that cannot be recorded (a lock a tenant holds on its own row, a
 * constraint) does not hold up the others.  Returns false after an error,
 * which is reported and whose transaction is aborted; Sched.step_error
 * says which.
 */
bool
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
		Sched.step_error = geterrcode();
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

/* Apply a configuration reload (SIGHUP) that is pending; outside transactions. */
void
ReloadConfigIfPending(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
}
