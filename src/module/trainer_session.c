/*-------------------------------------------------------------------------
 *
 * trainer_session.c
 *	  The registry of trainers' database sessions, in shared memory: a
 *	  trainer's session registers itself (src/sql/sql_trainer.c,
 *	  src/sql/sql_trainer_token.c), so that the scheduler can end it when
 *	  the trainer ends (src/worker/).  Shared by both sides, so it lives
 *	  in the module; so does the run a session proved it trains, which
 *	  several SQL files check (TrainerAuthorized).
 *
 * IDENTIFICATION
 *	  src/module/trainer_session.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "easeml.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

/*
 * A trainer's backend runs the tenant's query as long as the query runs,
 * whatever happens to the trainer: a backend only notices that its client
 * is gone when it next talks to it.  So the scheduler ends the session
 * itself when it reaps or kills a trainer.  It must find the right backend
 * without trusting anything a tenant can write: application_name and
 * session variables can be changed by the tenant's view code, which runs
 * in that session.  Instead the trainer calls easeml_trainer.attach(run)
 * right after connecting, before any tenant code runs, and the backend
 * records its own pid in shared memory; a before_shmem_exit callback
 * removes the entry when the backend exits.  An entry therefore always
 * names a live backend of that run, and the scheduler signals it under
 * the same lock, so a recycled pid is never signalled.
 */
#define TRAINER_SESSIONS (2 * EASEML_MAX_SLOTS)

typedef struct TrainerSession
{
	int64		run_id;
	pid_t		pid;			/* 0: entry free */
} TrainerSession;

typedef struct TrainerSessions
{
	LWLock	   *lock;
	TrainerSession entries[TRAINER_SESSIONS];
} TrainerSessions;

static TrainerSessions *sessions = NULL;
static bool detach_registered = false;

#define SESSIONS_TRANCHE "easeml trainer sessions"

/* shmem_request_hook: the registry and its lock. */
void
TrainerSessionShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(TrainerSessions)));
	RequestNamedLWLockTranche(SESSIONS_TRANCHE, 1);
}

/* shmem_startup_hook: create or attach to the registry. */
void
TrainerSessionShmemStartup(void)
{
	bool		found;

	sessions = ShmemInitStruct("easeml trainer sessions",
							   sizeof(TrainerSessions), &found);
	if (!found)
	{
		memset(sessions, 0, sizeof(TrainerSessions));
		sessions->lock = &(GetNamedLWLockTranche(SESSIONS_TRANCHE))->lock;
	}
}

/* before_shmem_exit in a trainer's backend: forget this session. */
static void
TrainerSessionDetach(int code, Datum arg)
{
	LWLockAcquire(sessions->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TRAINER_SESSIONS; i++)
		if (sessions->entries[i].pid == MyProcPid)
			memset(&sessions->entries[i], 0, sizeof(TrainerSession));
	LWLockRelease(sessions->lock);
}

/*
 * Record this backend as the database session of a run's trainer (a
 * no-op when easeml is not preloaded, as nothing would end the session
 * then anyway).  The caller checked that it may.
 */
void
TrainerSessionRegister(int64 run_id)
{
	int			free_entry = -1;

	if (sessions == NULL)
		return;
	if (!detach_registered)
	{
		before_shmem_exit(TrainerSessionDetach, 0);
		detach_registered = true;
	}

	LWLockAcquire(sessions->lock, LW_EXCLUSIVE);
	for (int i = 0; i < TRAINER_SESSIONS; i++)
	{
		if (sessions->entries[i].pid == MyProcPid)
		{
			free_entry = i;
			break;
		}
		if (sessions->entries[i].pid == 0 && free_entry < 0)
			free_entry = i;
	}
	if (free_entry >= 0)
	{
		sessions->entries[free_entry].run_id = run_id;
		sessions->entries[free_entry].pid = MyProcPid;
	}
	LWLockRelease(sessions->lock);
	if (free_entry < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many trainer sessions are attached (%d)", TRAINER_SESSIONS),
				 errhint("Each running run's trainer holds one; retry when runs have finished.")));
}

/*
 * End the database sessions of a run's trainer (run_id 0: of every
 * trainer) with SIGTERM, as pg_terminate_backend does.  Called by the
 * scheduler when a trainer has exited or is being killed, and when the
 * scheduler starts or stops.  Returns how many sessions were signalled.
 */
int
TrainerSessionTerminate(int64 run_id)
{
	int			n = 0;

	if (sessions == NULL)
		return 0;
	/* entries are removed under the exclusive lock before a backend exits */
	LWLockAcquire(sessions->lock, LW_SHARED);
	for (int i = 0; i < TRAINER_SESSIONS; i++)
	{
		TrainerSession *e = &sessions->entries[i];

		if (e->pid != 0 && (run_id == 0 || e->run_id == run_id) &&
			kill(e->pid, SIGTERM) == 0)
			n++;
	}
	LWLockRelease(sessions->lock);
	return n;
}

/*
 * The run this session proved it trains (easeml_trainer.attach(run,
 * token), src/sql/sql_trainer_token.c), in this backend's memory, where
 * nothing a tenant's code does in the same session can change it; 0: none.
 */
static int64 proved_run_id = 0;

/* This session proved it is the trainer of run_id. */
void
TrainerSessionProved(int64 run_id)
{
	proved_run_id = run_id;
}

/* May this session act as the trainer of run_id? */
bool
TrainerAuthorized(int64 run_id)
{
	/* the session's user, not a SECURITY DEFINER function's owner */
	if (superuser_arg(GetSessionUserId()))
		return true;
	return run_id > 0 && proved_run_id == run_id;
}
