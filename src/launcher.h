/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  Launchers: who runs a run's trainer.  'local' spawns it on this
 *	  machine (src/supervisor.c); 'slurm' submits it as one sbatch job
 *	  (src/launch_slurm.c).  easeml.launcher chooses; the scheduler's
 *	  policy does not change.  Only src/supervisor.c calls a launcher and
 *	  changes the state of a slot.
 *
 * IDENTIFICATION
 *	  src/launcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_LAUNCHER_H
#define EASEML_LAUNCHER_H

#include "postgres.h"

#include "slurm_parse.h"

typedef enum EasemlLauncher
{
	EASEML_LAUNCHER_LOCAL = 0,
	EASEML_LAUNCHER_SLURM
} EasemlLauncher;

/* settings (src/launcher.c) */
extern int	easeml_launcher;
extern char *easeml_slurm_bindir;
extern char *easeml_slurm_conf;
extern char *easeml_slurm_account;
extern char *easeml_slurm_job_prefix;
extern char *easeml_slurm_trainer_path;
extern char *easeml_slurm_output;

extern void LauncherDefineSettings(void);
extern const char *LauncherName(int launcher);

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

/* ---- the Slurm launcher (src/launch_slurm.c) ---- */
extern const char *SlurmPartitionOf(const char *device);
extern bool SlurmSubmit(const LaunchRequest *req, int64 *job_id,
						bool *transient, char *err, size_t errlen);
extern int	SlurmQueue(const int64 *job_ids, int n, SlurmJob *jobs, int max,
					   bool *ok);
extern bool SlurmShowJob(int64 job_id, SlurmJob *job, bool *ok);
extern bool SlurmCancel(int64 job_id, bool kill, char *err, size_t errlen);

#endif							/* EASEML_LAUNCHER_H */
