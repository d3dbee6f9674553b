/*-------------------------------------------------------------------------
 *
 * supervisor.h
 *	  Trainer process supervision (src/worker/supervisor.c).
 *
 * IDENTIFICATION
 *	  src/worker/supervisor.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_SUPERVISOR_H
#define EASEML_SUPERVISOR_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "launcher.h"

typedef enum EasemlStopReason
{
	EASEML_STOP_NONE = 0,
	EASEML_STOP_CANCEL,			/* a user asked */
	EASEML_STOP_TIMEOUT,		/* easeml.run_timeout passed */
	EASEML_STOP_ORPHAN,			/* its run row or task is gone */
	EASEML_STOP_PREEMPT			/* over easeml.run_budget while another
								 * tenant waits below its fair share */
} EasemlStopReason;

/*
 * One slot of the scheduler's trainer table.  Its times are on the
 * monotonic clock (src/module/monoclock.h), never compared with SQL's.
 */
typedef struct EasemlTrainer
{
	int64		run_id;			/* 0: slot free */
	pid_t		pid;			/* also the process group id */
	TimestampTz started;		/* monotonic */
	TimestampTz running_since;	/* monotonic; easeml.run_timeout counts from it; 0
								 * while a Slurm job waits in the queue */
	TimestampTz term_sent;		/* 0 until SIGTERM was sent */
	bool		kill_sent;
	EasemlStopReason stop_reason;
	char		device[NAMEDATALEN];	/* easeml.devices.name of its device */
	bool		exited;			/* reaped; result not yet recorded */
	int			wait_status;	/* from waitpid, -1 if lost */
	char		run_dir[MAXPGPATH];
	char		log_path[MAXPGPATH];
	/* a launcher other than local (src/worker/launcher.h) */
	int			launcher;		/* EasemlLauncher that started it */
	int64		job_id;			/* its Slurm job; 0 for a local process */
	int			job_class;		/* SlurmJobClass as squeue last saw it */
	bool		job_missing;	/* squeue no longer lists it */
	bool		lost;			/* the cluster lost it: nobody's fault */
	bool		lost_state;		/* ... and said so (NODE_FAIL, PREEMPTED),
								 * rather than forgot the job */
	bool		time_limit;		/* the cluster's time limit ended it */
	char		end_reason[256];	/* the cluster's words on its end */
	bool		submitting;		/* sbatch has not answered yet */
	bool		query_acct;		/* scontrol forgot the job: ask sacct */
	int			query_failures; /* scontrol/sacct failures in a row */
	TimestampTz next_query;		/* no scontrol/sacct before (backoff) */
	int			cancel_owed;	/* signal of a scancel that failed, to send
								 * again; 0: none */
	int			cancel_failures;	/* scancel failures in a row */
	TimestampTz next_cancel;	/* no scancel again before (backoff) */
} EasemlTrainer;

/* How a Slurm submission stands (SupervisorSubmitted). */
typedef enum SubmitState
{
	SUBMIT_NONE,				/* the slot is not submitting */
	SUBMIT_PENDING,				/* sbatch has not answered yet */
	SUBMIT_DONE,				/* the slot follows its job now */
	SUBMIT_FAILED				/* err says why; the slot is to be released */
} SubmitState;

/* Has the slot's trainer been started (a process or a job)? */
static inline bool
SupervisorStarted(const EasemlTrainer *t)
{
	return t->pid > 0 || t->job_id > 0;
}

extern EasemlTrainer *SupervisorSlot(int slot);
extern int	SupervisorCountRunning(void);
extern int	SupervisorFreeSlot(void);
extern int	SupervisorDeviceCount(const char *device);
extern void SupervisorReserve(int slot, int64 run_id, const char *device);
extern void SupervisorRelease(int slot);
extern bool SupervisorLaunch(int slot, const LaunchRequest *req,
							 bool *transient, char *err, size_t errlen);
extern SubmitState SupervisorSubmitted(int slot, bool *transient, char *err,
									   size_t errlen);
extern void SupervisorAttach(int slot, int64 run_id, const char *device,
							 int64 job_id, TimestampTz started);
/* read the answers of Slurm commands in the background (scancel) */
extern void SupervisorSlurmStep(void);
extern bool SupervisorPoll(int slot, int *status);
extern void SupervisorSignal(int slot, int sig);
extern void SupervisorStop(int slot, EasemlStopReason reason);
extern void SupervisorStopAll(void);
extern void SupervisorDescribeExit(int status, char *buf, size_t len);
extern char *SupervisorTrainerPath(void);
extern char *SupervisorCheckModel(const char *family, const char *params,
								  const char *kinds, bool needs_image);

/* the trainer's device probe: one process at a time, outside the slots */
extern bool SupervisorProbeStart(char *const argv[], char *const envp[],
								 const char *out_path, const char *log_path,
								 char *err, size_t errlen);
extern bool SupervisorProbePoll(int *status);
extern void SupervisorProbeKill(void);

#endif							/* EASEML_SUPERVISOR_H */
