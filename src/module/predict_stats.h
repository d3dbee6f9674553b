/*-------------------------------------------------------------------------
 *
 * predict_stats.h
 *	  Counters of what easeml.predict() saw, per task and serving run, in
 *	  shared memory (src/module/predict_stats.c).
 *
 * IDENTIFICATION
 *	  src/module/predict_stats.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_PREDICT_STATS_H
#define EASEML_PREDICT_STATS_H

#include "postgres.h"

#include "datatype/timestamp.h"

#define PREDICT_STATS_SLOTS 1024

typedef struct PredictStatsEntry
{
	Oid			dbid;			/* task ids are per database */
	Oid			owner;			/* the tenant (role) that predicted: slots
								 * are shared fairly among tenants */
	int64		task_id;
	int64		run_id;			/* 0: the slot is free */
	uint64		rows;
	uint64		unknown;
	uint64		imputed;
	TimestampTz since;			/* wall clock: shown to users */
	TimestampTz last_at;
} PredictStatsEntry;

extern void PredictStatsShmemRequest(void);
extern void PredictStatsShmemStartup(void);
extern void PredictStatsAdd(Oid owner, int64 task_id, int64 run_id, uint64 rows,
							uint64 unknown, uint64 imputed);
extern int	PredictStatsCopy(PredictStatsEntry *out);

#endif							/* EASEML_PREDICT_STATS_H */
