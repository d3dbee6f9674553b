/*-------------------------------------------------------------------------
 *
 * recovery.c
 *	  Runs the catalog records as 'running' that no trainer of this
 *	  scheduler serves: at startup those a scheduler that is gone left,
 *	  later those whose launch failed half-way.  One whose trainer reported
 *	  success is recorded from its report; any other is ended (interrupted,
 *	  or queued again if it never started).  Each is ended in its own
 *	  transaction, so that one the worker cannot end now (a trigger waits
 *	  on a lock its tenant holds) holds up neither the others nor the loop;
 *	  it is tried again after UNTRACKED_RETRY_MS.
 *
 * IDENTIFICATION
 *	  src/worker/recovery.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog.h"
#include "module/monoclock.h"
#include "core/trainer_protocol.h"
#include "scheduler.h"
#include "trainer_jobs.h"
#include "utils/timestamp.h"

#define UNTRACKED_RETRY_MS 10000
#define UNTRACKED_DEFERRED_MAX 64

/* runs whose end failed, and when each may be tried again */
static int64 deferred_id[UNTRACKED_DEFERRED_MAX];
static TimestampTz deferred_until[UNTRACKED_DEFERRED_MAX];
static int	n_deferred;

typedef struct EndStep
{
	int64		run_id;
	const char *why;
	int			changed;
} EndStep;

static void
EndUntrackedStep(void *arg)
{
	EndStep    *step = (EndStep *) arg;
	TrainerReport report;

	CatalogBegin("easeml: ending a run no trainer serves");
	TrainerJobReport(step->run_id, CurrentMemoryContext, &report);
	if (report.reported && report.exit_code == EASEML_EXIT_OK &&
		report.metrics != NULL)
	{
		/*
		 * its trainer finished and reported before a scheduler recorded it
		 * (the scheduler restarted in between): the report stands
		 */
		CatalogFinishReportedRun(step->run_id, report.metrics);
		step->changed = 1;
	}
	else
	{
		step->changed = CatalogEndUntracked(step->run_id, step->why);
		/* a tenant's request is not lost with its run */
		if (step->changed > 0)
			CatalogRequeueInterrupted(step->run_id, false);
	}
	CatalogCommit();
}

/* Whether run_id failed to end a short while ago; forgets expired entries. */
static bool
Deferred(int64 run_id, TimestampTz now)
{
	bool		found = false;

	for (int i = 0; i < n_deferred;)
	{
		if (deferred_until[i] <= now)
		{
			deferred_id[i] = deferred_id[n_deferred - 1];
			deferred_until[i] = deferred_until[n_deferred - 1];
			n_deferred--;
			continue;
		}
		found |= (deferred_id[i] == run_id);
		i++;
	}
	return found;
}

static void
Defer(int64 run_id, TimestampTz now)
{
	if (n_deferred < UNTRACKED_DEFERRED_MAX)
	{
		deferred_id[n_deferred] = run_id;
		deferred_until[n_deferred] = TimestampTzPlusMilliseconds(now, UNTRACKED_RETRY_MS);
		n_deferred++;
	}
}

/*
 * End the runs CatalogUntrackedRuns listed (outside any transaction),
 * saying why; returns how many changed.
 */
int
EndUntrackedRuns(const int64 *ids, int n, const char *why)
{
	int			changed = 0;

	for (int i = 0; i < n; i++)
	{
		TimestampTz now = EasemlMonotonicNow();
		EndStep		step = {.run_id = ids[i],.why = why};

		if (Deferred(ids[i], now))
			continue;
		if (Guarded(EndUntrackedStep, &step))
			changed += step.changed;
		else
			Defer(ids[i], now);
	}
	return changed;
}

/*
 * Startup recovery (outside any transaction): a run left 'running' belongs
 * to a scheduler that is gone; keep holds the runs whose Slurm jobs this
 * scheduler follows again.  Those it cannot end now are left to the
 * checks of StopTrainers.
 */
void
RecoverRuns(const int64 *keep, int nkeep)
{
	int64		ids[UNTRACKED_DEFERRED_MAX];
	int			n,
				changed;

	CatalogBegin("easeml: finding runs left running");
	n = CatalogUntrackedRuns(keep, nkeep, false, ids, UNTRACKED_DEFERRED_MAX);
	CatalogCommit();
	changed = EndUntrackedRuns(ids, n, "the scheduler restarted while the run was in flight");
	if (changed > 0)
		ereport(LOG,
				(errmsg("easeml: marked %d run(s) left running as interrupted or queued", changed)));
}
