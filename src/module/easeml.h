/*-------------------------------------------------------------------------
 *
 * easeml.h
 *	  Shared declarations of the easeml extension (server side).
 *
 * IDENTIFICATION
 *	  src/module/easeml.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_H
#define EASEML_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "identity.h"
#include "storage/latch.h"
#include "storage/s_lock.h"

/* ----------
 * GUC variables (registered in src/module/easeml.c; easeml_wake_interval is
 * defined in src/module/shmem.c, beside the wake-ups it limits)
 * ----------
 */
extern char *easeml_database;
extern int	easeml_max_workers;
extern int	easeml_naptime;
extern int	easeml_wake_interval;
extern char *easeml_policy;
extern bool easeml_enabled;
extern char *easeml_trainer_path;
extern char *easeml_trainer_conninfo;
extern char *easeml_run_directory;
extern int	easeml_trainer_threads;
extern int	easeml_run_timeout;
extern int	easeml_cancel_grace;
extern int	easeml_max_failures;
extern int	easeml_max_parallel_per_tenant;
extern int	easeml_run_budget;
extern int	easeml_scheduler_log_retention;
extern int	easeml_artifact_max_bytes;
extern bool easeml_check_catalog;
extern int	easeml_predict_cache_models;
extern int	easeml_ensemble_min_runs;
extern int	easeml_generate_every;
extern double easeml_generate_margin;
extern int	easeml_generate_max;
extern int	easeml_generate_patience;
extern int	easeml_trainer_memory_limit;

/* easeml.trainer_memory_limit in effect, in bytes; 0: none */
extern double EasemlTrainerMemoryLimitBytes(void);


/* Upper bound on concurrent trainers: sizes the scheduler's slot table. */
#define EASEML_MAX_SLOTS 64

/* ----------
 * Shared state (src/module/shmem.c)
 * ----------
 */
typedef struct EasemlShared
{
	slock_t		mutex;
	pid_t		scheduler_pid;	/* 0 when no scheduler runs */
	Latch	   *scheduler_latch;
	TimestampTz started_at;		/* wall clock: shown, as loop_at, error_at */
	int			running;		/* trainers now running */
	int64		decisions;		/* decisions since start */
	char		policy[32];		/* the policy setting */
	char		policy_label[272];	/* what runs: "default (auto: hybrid:cost)";
									 * 2 specs of POLICY_SPEC_LEN and more */
	uint32		probe_requests; /* easeml.probe_devices() calls (src/worker/devices.c) */
	/* health, for easeml.scheduler_status() */
	TimestampTz loop_at;		/* end of the latest loop iteration */
	int64		loop_errors;	/* iterations that ended in an error */
	TimestampTz error_at;		/* when the latest of them ended */
	char		last_error[256];	/* its SQLSTATE and message */
	/* wake-ups by committing backends (easeml.wake_interval) */
	TimestampTz wake_sent_at;	/* when one last set the scheduler's latch
								 * (monotonic, src/module/monoclock.h) */
	bool		wake_deferred;	/* one came sooner since: due at the interval */
	bool		sweep_requested;	/* runs were deleted: sweep run directories */
	int64		wakeups;		/* latches set since the scheduler started */
	int64		wakeups_folded; /* wake-ups folded into a later one */
} EasemlShared;

extern EasemlShared *EasemlState;

extern void EasemlShmemRequest(void);
extern void EasemlShmemStartup(void);
extern bool EasemlShmemRegisterScheduler(void);
extern void EasemlShmemUnregisterScheduler(void);
extern void EasemlWakeAtCommit(void);
extern void EasemlSweepAtCommit(void);
extern bool EasemlTakeDeferredWake(void);
extern long EasemlDeferredWakeDelay(void);
extern bool EasemlTakeSweepRequest(void);
extern bool EasemlIsScheduler(void);

/* ----------
 * Trainer database sessions (src/module/trainer_session.c): registered by
 * the trainer's session (src/sql/sql_trainer.c), ended by the scheduler
 * ----------
 */
extern void TrainerSessionShmemRequest(void);
extern void TrainerSessionShmemStartup(void);
extern void TrainerSessionRegister(int64 run_id);
extern int	TrainerSessionTerminate(int64 run_id);

/*
 * The caller of a SQL function, for those that act on the caller's own
 * rows as the bootstrap superuser (src/module/caller.c)
 */
extern char *EasemlCallerName(void);
extern char *EasemlOwnRunStatus(int64 run_id);

/* the run this session proved it trains, and may it act as a run's trainer? */
extern void TrainerSessionProved(int64 run_id);
extern bool TrainerAuthorized(int64 run_id);

/* ----------
 * Scheduler worker (src/worker/scheduler.c)
 * ----------
 */
extern PGDLLEXPORT void EasemlSchedulerMain(Datum main_arg) pg_attribute_noreturn();

#endif							/* EASEML_H */
