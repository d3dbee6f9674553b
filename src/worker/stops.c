/*-------------------------------------------------------------------------
 *
 * stops.c
 *	  Which trainers to stop: runs cancelled, timed out or deleted
 *	  (StopTrainers), and the run budget's preemption of a tenant above
 *	  its fair share while another waits below it (PreemptOverShare).  The
 *	  supervisor stops them; src/worker/results.c records how they ended.
 *
 * IDENTIFICATION
 *	  src/worker/stops.c
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
 * The run budget (easeml.run_budget): while every slot is busy and a
 * tenant waits below its fair share, the longest-running trainer of a
 * tenant above its share that has used its budget is stopped and its run
 * marked interrupted (docs/scheduler.md, "Fair shares").  Checked when the
 * catalog changed, else every PREEMPT_CHECK_MS.
 */
#define PREEMPT_CHECK_MS 1000
static TimestampTz last_preempt_check = 0;

/*
 * Stop trainers whose run was cancelled, timed out or deleted (its task was
 * dropped), and escalate stops already under way.  Then put right runs the
 * catalog says are running but no slot tracks (src/worker/recovery.c).
 */
void
StopTrainers(void)
{
	int64		ids[EASEML_MAX_SLOTS + BACKLOG_MAX];
	int64		untracked[EASEML_MAX_SLOTS];
	int			slots[EASEML_MAX_SLOTS];
	int			verdict[EASEML_MAX_SLOTS];
	int			n = 0;
	int			tracked = 0;
	int			n_untracked = 0;
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
	tracked += ResultsBacklogRunIds(ids + tracked);

	CatalogBegin("easeml: checking runs in flight");
	if (n > 0)
	{
		int64		live[EASEML_MAX_SLOTS];

		for (int i = 0; i < n; i++)
			live[i] = SupervisorSlot(slots[i])->run_id;
		CatalogCheckRuns(live, n, verdict);
	}
	if (easeml_enabled)
		n_untracked = CatalogUntrackedRuns(ids, tracked, true, untracked,
										   EASEML_MAX_SLOTS);
	CatalogCommit();
	if (n_untracked > 0)
		fixed = EndUntrackedRuns(untracked, n_untracked,
								 "the scheduler was not tracking its trainer");
	if (fixed > 0)
		Sched.world_changed = true;
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
		/* a Slurm job still in the queue has not started its run */
		if (easeml_run_timeout > 0 && t->running_since != 0 &&
			TimestampDifferenceExceeds(t->running_since, EasemlMonotonicNow(),
									   easeml_run_timeout * 1000))
			SupervisorStop(slot, EASEML_STOP_TIMEOUT);
		if (t->term_sent != 0)
			SupervisorStop(slot, t->stop_reason);	/* escalate after grace */
	}
}


/* Seconds a trainer has run. */
static double
Elapsed(const EasemlTrainer *t)
{
	return (double) (EasemlMonotonicNow() - t->started) / USECS_PER_SEC;
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
bool
PreemptionDue(void)
{
	bool		any = false;

	if (easeml_run_budget <= 0 || easeml_max_parallel_per_tenant == 0)
		return false;
	for (int slot = 0; slot < EASEML_MAX_SLOTS && !any; slot++)
		any = OverBudget(SupervisorSlot(slot));
	return any && (Sched.world_changed ||
				   TimestampDifferenceExceeds(last_preempt_check, EasemlMonotonicNow(),
											  PREEMPT_CHECK_MS));
}

/*
 * Every slot is busy and the world is synced: for each tenant waiting
 * below its fair share (less the preemptions already under way), stop the
 * longest-running trainer of a tenant above its share that has run longer
 * than its budget: easeml.run_budget and twice its estimate, doubled for
 * every earlier preemption of the same candidate.
 */
void
PreemptOverShare(void)
{
	const char *starved;
	int			n_starved = LiveWorldStarved(&starved);
	int64		ids[EASEML_MAX_SLOTS];
	int			slots[EASEML_MAX_SLOTS];
	CatRunBudget budget[EASEML_MAX_SLOTS];
	int			n = 0;

	last_preempt_check = EasemlMonotonicNow();
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
		ereport(LOG,
				(errmsg("easeml: preempting run %lld of tenant \"%s\" after %.0f s: tenant \"%s\" waits below its fair share",
						(long long) ids[victim], budget[victim].tenant, longest, starved)));
		SupervisorStop(slots[victim], EASEML_STOP_PREEMPT);
	}
}
