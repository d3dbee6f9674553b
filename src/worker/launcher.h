/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  Launchers: who runs a run's trainer.  'local' spawns it on this
 *	  machine (src/worker/supervisor.c); 'slurm' submits it as one sbatch job
 *	  (src/worker/launch_slurm.c).  easeml.launcher chooses; the scheduler's
 *	  policy does not change.  Only src/worker/supervisor.c calls a launcher and
 *	  changes the state of a slot.
 *
 * IDENTIFICATION
 *	  src/worker/launcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_LAUNCHER_H
#define EASEML_LAUNCHER_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "core/slurm_parse.h"

/* which launcher, and the settings of Slurm: src/module/launcher_settings.h */
#include "module/launcher_settings.h"

/* What a launcher needs to start a run's trainer. */
typedef struct LaunchRequest
{
	int64		run_id;
	const char *device;			/* easeml.devices.name */
	const char *device_kind;	/* cpu or cuda */
	const char *run_dir;		/* local: the run directory on this machine */
	char	   *const *argv;	/* local: the trainer's command line */
	char	   *const *envp;	/* the trainer's environment */
	const char *const *export_names;	/* slurm: which of envp travel */
	int			time_limit;		/* seconds, 0: none */
} LaunchRequest;

/* ---- the Slurm launcher (src/worker/launch_slurm.c) ---- */

/*
 * A Slurm command running in the background: started by one of the
 * Slurm...Start functions, polled with SlurmCmdPoll (never blocks; true
 * once it ended or was killed after its timeout), read by the matching
 * Slurm...Finish, which frees it.  SlurmCmdFree kills one still running.
 * A killed command is reaped later, without blocking (SlurmReapKilled).
 * Its output lives in TopMemoryContext: a command outlives loop iterations.
 */
typedef struct SlurmCmd
{
	pid_t		pid;			/* 0: none running */
	int			fd;				/* our end of its stdout and stderr */
	TimestampTz started;		/* monotonic (src/module/monoclock.h) */
	int			timeout_ms;
	bool		done;
	bool		timed_out;
	int			status;			/* its wait status; -1: not started or
								 * timed out */
	char	   *out;			/* what it wrote, NUL-terminated */
	int			len;
	int			cap;
	char		name[16];		/* sbatch, squeue, ... */
} SlurmCmd;

static inline bool
SlurmCmdBusy(const SlurmCmd *cmd)
{
	return cmd->pid > 0 && !cmd->done;
}

typedef enum SlurmShow
{
	SLURM_SHOW_FOUND,			/* scontrol knows the job */
	SLURM_SHOW_FORGOTTEN,		/* it no longer does: ask sacct */
	SLURM_SHOW_FAILED			/* scontrol failed: nothing is known */
} SlurmShow;

extern const char *SlurmPartitionOf(const char *device);
extern char *SlurmSbatchPath(void);
extern bool SlurmCmdPoll(SlurmCmd *cmd);
extern void SlurmCmdFree(SlurmCmd *cmd);
extern void SlurmReapKilled(void);
extern void SlurmCommandsAtExit(void);
extern bool SlurmSubmitMayHaveJob(const SlurmCmd *cmd);
extern bool SlurmSubmitStart(const LaunchRequest *req, SlurmCmd *cmd,
							 char *err, size_t errlen);
extern bool SlurmSubmitFinish(SlurmCmd *cmd, int64 *job_id, bool *transient,
							  char *err, size_t errlen);
extern bool SlurmQueueStart(const int64 *job_ids, int n, SlurmCmd *cmd);
extern int	SlurmQueueFinish(SlurmCmd *cmd, SlurmJob *jobs, int max, bool *ok);
extern bool SlurmShowJobStart(int64 job_id, SlurmCmd *cmd);
extern SlurmShow SlurmShowJobFinish(SlurmCmd *cmd, SlurmJob *job);
extern bool SlurmAcctStart(int64 job_id, SlurmCmd *cmd);
extern bool SlurmAcctFinish(SlurmCmd *cmd, SlurmJob *job);
extern bool SlurmCancelStart(int64 job_id, int64 run_id, bool kill, SlurmCmd *cmd);
extern bool SlurmCancelFinish(SlurmCmd *cmd, char *err, size_t errlen);

#endif							/* EASEML_LAUNCHER_H */
