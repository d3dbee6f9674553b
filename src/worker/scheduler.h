/*-------------------------------------------------------------------------
 *
 * scheduler.h
 *	  The scheduler's loop (src/worker/scheduler.c) and its steps, one file
 *	  each: recording how runs ended (results.c), stopping and preempting
 *	  trainers (stops.c), filling free slots (decide.c), launching trainers
 *	  (launch.c), ending runs no trainer serves (recovery.c); the state and
 *	  helpers they share (loop_state.c).  Calls go one way: scheduler.c ->
 *	  decide.c -> stops.c -> results.c, decide.c -> launch.c, scheduler.c,
 *	  decide.c and stops.c -> recovery.c; all of them -> loop_state.c, the catalog
 *	  and the supervisor.  Private to the worker.
 *
 * IDENTIFICATION
 *	  src/worker/scheduler.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_SCHEDULER_H
#define EASEML_SCHEDULER_H

#include "postgres.h"

#include "catalog.h"

/* The state the loop's steps share (src/worker/loop_state.c). */
typedef struct SchedulerLoop
{
	/*
	 * Loading the world costs a few queries over every run: it is skipped
	 * while nothing can have changed (src/worker/decide.c).  Set by
	 * whatever may have changed it: a wake-up, a trainer that ended, a
	 * launch, a refit cycle that ended.
	 */
	bool		world_changed;
	bool		sweep_pending;	/* sweep run directories (src/worker/rundir.c) */
	bool		refit_pending;	/* a refit cycle is under way: work in slices */
	char	   *bootstrap_user; /* the trainers connect as this role */
	int			step_error;		/* SQLSTATE of the last error Guarded caught */
} SchedulerLoop;

extern SchedulerLoop Sched;

/* loop_state.c: what every step uses */
extern bool Guarded(void (*step) (void *arg), void *arg);
extern void ReloadConfigIfPending(void);

/* results.c: how runs ended; at most BACKLOG_MAX results wait to be recorded */
#define BACKLOG_MAX 256
extern void ReapTrainers(bool extension_ready);
extern int	ResultsBacklogRunIds(int64 *ids);

/* stops.c: cancels, timeouts, deleted runs, the run budget */
extern void StopTrainers(void);
extern bool PreemptionDue(void);
extern void PreemptOverShare(void);

/* recovery.c: runs recorded running that no trainer serves */
extern int	EndUntrackedRuns(const int64 *ids, int n, const char *why);
extern void RecoverRuns(const int64 *keep, int nkeep);

/* launch.c: starting trainers */
extern void LaunchRun(int64 run_id, int slot, const CatDevice *device);
extern void FinishSubmissions(void);
extern int	ReattachJobs(int64 *keep, int max);
extern bool LaunchBackoffActive(void);

/* decide.c: one scheduling step; refit work for at most ms milliseconds */
extern void Schedule(void);
extern bool RefitWork(int ms);

#endif							/* EASEML_SCHEDULER_H */
