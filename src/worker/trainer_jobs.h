/*-------------------------------------------------------------------------
 *
 * trainer_jobs.h
 *	  The scheduler's side of easeml.trainer_jobs (src/worker/trainer_jobs.c).
 *
 * IDENTIFICATION
 *	  src/worker/trainer_jobs.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TRAINER_JOBS_H
#define EASEML_TRAINER_JOBS_H

#include "postgres.h"

#include "datatype/timestamp.h"

/* What the trainer reported at its end (easeml_trainer.result). */
typedef struct TrainerReport
{
	bool		reported;
	int			exit_code;
	char	   *metrics;		/* NULL unless it succeeded */
	char	   *error;			/* NULL unless it failed */
} TrainerReport;

/* A run recorded as running whose trainer is a job of some launcher. */
typedef struct TrainerJobInFlight
{
	int64		run_id;
	int64		job_id;
	char	   *device;
	TimestampTz started;		/* wall clock: runs.started_at */
} TrainerJobInFlight;

extern char *TrainerTokenNew(void);
extern void TrainerJobRecord(int64 run_id, const char *launcher, const char *token);
extern void TrainerJobSubmitted(int64 run_id, int64 job_id);
extern void TrainerJobReport(int64 run_id, MemoryContext cxt, TrainerReport *report);
extern int	TrainerJobsInFlight(const char *launcher, MemoryContext cxt,
								TrainerJobInFlight **jobs);

#endif							/* EASEML_TRAINER_JOBS_H */
