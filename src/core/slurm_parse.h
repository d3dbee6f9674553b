/*-------------------------------------------------------------------------
 *
 * slurm_parse.h
 *	  What easeml reads from and writes to Slurm's commands
 *	  (src/core/slurm_parse.c): job names, time limits, the batch script, and
 *	  the output of squeue and scontrol.
 *
 * Plain C, no PostgreSQL headers: src/worker/launch_slurm.c uses it in the
 * server and src/core/test/test_slurm.c tests it without one.
 *
 * IDENTIFICATION
 *	  src/core/slurm_parse.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_SLURM_PARSE_H
#define EASEML_SLURM_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLURM_STATE_LEN 32
#define SLURM_REASON_LEN 256

/* How a job stands, by the class of its Slurm state. */
typedef enum SlurmJobClass
{
	SLURM_JOB_UNKNOWN = 0,		/* not reported (yet) */
	SLURM_JOB_ALIVE,			/* running, completing, suspended */
	SLURM_JOB_PENDING,			/* waiting in the queue: not running yet */
	SLURM_JOB_ENDED,			/* completed or failed: its exit code says how */
	SLURM_JOB_TIMEOUT,			/* Slurm's time limit killed it */
	SLURM_JOB_CANCELLED,		/* scancel, by easeml or someone else */
	SLURM_JOB_LOST				/* node failure, preemption, boot failure */
} SlurmJobClass;

/* One job as squeue or scontrol reports it. */
typedef struct SlurmJob
{
	int64_t		job_id;
	int64_t		run_id;			/* from the job name, 0 if not ours */
	char		state[SLURM_STATE_LEN];
	char		reason[SLURM_REASON_LEN];
	bool		has_exit;		/* scontrol gave ExitCode=code:signal */
	int			exit_code;
	int			exit_signal;
} SlurmJob;

extern SlurmJobClass SlurmStateClass(const char *state);
extern int	SlurmJobName(char *buf, size_t len, const char *prefix, int64_t run_id);
extern int64_t SlurmJobNameRun(const char *name, const char *prefix);
extern int	SlurmTimeLimit(char *buf, size_t len, int seconds);
extern int	SlurmBatchScript(char *buf, size_t len, const char *trainer,
							 int64_t run_id);
extern bool SlurmSafeWord(const char *s);
/* ids beyond this are refused, not clamped (Slurm's own are 32-bit) */
#define SLURM_ID_MAX INT64_C(999999999999)
extern int64_t SlurmParseId(const char *s, const char *stop, const char **rest);
extern int64_t SlurmParseJobId(const char *sbatch_output);

/*
 * Asking Slurm again after failures: SLURM_RETRY_MS, doubled per failure
 * in a row up to SLURM_RETRY_MAX_MS.
 */
#define SLURM_RETRY_MS 1000
#define SLURM_RETRY_MAX_MS 60000
extern int	SlurmBackoffMs(int failures);
extern bool SlurmTransientError(const char *output);
extern int	SlurmParseSqueue(const char *text, const char *prefix,
							 SlurmJob *jobs, int max);
extern bool SlurmParseScontrol(const char *line, const char *prefix, SlurmJob *job);
extern bool SlurmParseSacct(const char *text, const char *prefix, SlurmJob *job);
extern int	SlurmWaitStatus(const SlurmJob *job);

/* squeue's output format that SlurmParseSqueue reads: id|name|state|reason */
#define SLURM_SQUEUE_FORMAT "%i|%j|%T|%r"
/* sacct's fields that SlurmParseSacct reads (with --parsable2 --noheader) */
#define SLURM_SACCT_FORMAT "JobID,JobName,State,ExitCode"

#endif							/* EASEML_SLURM_PARSE_H */
