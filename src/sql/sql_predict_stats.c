/*-------------------------------------------------------------------------
 *
 * sql_predict_stats.c
 *	  Counters of what easeml.predict() saw, per task and serving run:
 *	  rows predicted, rows with a category the model was not trained on,
 *	  rows with a missing value filled in (docs/predict.md, "Input
 *	  statistics"; the view easeml.prediction_stats).
 *
 * A prediction never writes to a table: predict runs in plain SELECTs, in
 * read-only transactions and on standbys, and a row written per call would
 * make it slow.  Each call site counts in its own memory (sql_predict.c)
 * and adds its counts here once, when its statement ends (a reset
 * callback on the call site's memory context, which also runs when the
 * statement fails), under one lightweight lock.  The counters live in
 * shared memory: they are per server, start at zero when the server
 * starts, and are not written to disk or replicated.  The table holds
 * PREDICT_STATS_SLOTS (task, run) pairs; a new pair when it is full takes
 * the slot of the pair predicted with least recently, whose counts are
 * lost (its "since" says when counting started).  Pairs are per database
 * (task ids are); the counts of a dropped task stay until their slot is
 * taken, but are no longer shown (task ids are not reused).
 *
 * Without easeml in shared_preload_libraries there is no shared memory:
 * nothing is counted and the view is empty.
 *
 * IDENTIFICATION
 *	  src/sql/sql_predict_stats.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "sql_predict.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#define PREDICT_STATS_SLOTS 1024
#define STATS_TRANCHE "easeml prediction stats"

typedef struct PredictStatsEntry
{
	Oid			dbid;			/* task ids are per database */
	int64		task_id;
	int64		run_id;			/* 0: the slot is free */
	uint64		rows;
	uint64		unknown;
	uint64		imputed;
	TimestampTz since;
	TimestampTz last_at;
} PredictStatsEntry;

typedef struct PredictStatsShared
{
	LWLock	   *lock;
	PredictStatsEntry entries[PREDICT_STATS_SLOTS];
} PredictStatsShared;

static PredictStatsShared *stats = NULL;

PG_FUNCTION_INFO_V1(easeml_prediction_counts);

/* shmem_request_hook: the table and its lock */
void
PredictStatsShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(PredictStatsShared)));
	RequestNamedLWLockTranche(STATS_TRANCHE, 1);
}

/* shmem_startup_hook (AddinShmemInitLock held): create or attach */
void
PredictStatsShmemStartup(void)
{
	bool		found;

	stats = ShmemInitStruct("easeml prediction stats", sizeof(PredictStatsShared), &found);
	if (!found)
	{
		memset(stats, 0, sizeof(PredictStatsShared));
		stats->lock = &(GetNamedLWLockTranche(STATS_TRANCHE))->lock;
	}
}

/*
 * Add one call site's counts for (task, run).  Called from a memory
 * context reset callback, also while a failed transaction is cleaned up:
 * it raises no error and allocates nothing.
 */
void
PredictStatsAdd(int64 task_id, int64 run_id, uint64 rows, uint64 unknown, uint64 imputed)
{
	PredictStatsEntry *e = NULL;
	PredictStatsEntry *oldest = NULL;
	TimestampTz now;

	if (stats == NULL || run_id == 0 || rows == 0)
		return;
	now = GetCurrentTimestamp();
	LWLockAcquire(stats->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PREDICT_STATS_SLOTS; i++)
	{
		PredictStatsEntry *s = &stats->entries[i];

		if (s->run_id == run_id && s->task_id == task_id && s->dbid == MyDatabaseId)
		{
			e = s;
			break;
		}
		if (oldest == NULL || s->run_id == 0 ||
			(oldest->run_id != 0 && s->last_at < oldest->last_at))
			oldest = s;
	}
	if (e == NULL)
	{
		e = oldest;
		memset(e, 0, sizeof(*e));
		e->dbid = MyDatabaseId;
		e->task_id = task_id;
		e->run_id = run_id;
		e->since = now;
	}
	e->rows += rows;
	e->unknown += unknown;
	e->imputed += imputed;
	e->last_at = now;
	LWLockRelease(stats->lock);
}

/*
 * easeml._prediction_counts(): the counters of the tasks of this database
 * the caller sees (easeml.tasks read as the caller, under row-level security: a tenant's
 * own, every task for a superuser), as (task_id, run_id, rows,
 * unknown_rows, imputed_rows, since, last_at).  easeml.prediction_stats
 * is the view over it.
 */
Datum
easeml_prediction_counts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PredictStatsEntry *copy;
	int			n = 0;
	Datum	   *ids;
	Oid			argtype = INT8ARRAYOID;
	Datum		arg;
	int64	   *seen = NULL;
	int			nseen = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (stats == NULL)
		return (Datum) 0;

	/* a copy, so that no lock is held while the tasks are read */
	copy = palloc(sizeof(PredictStatsEntry) * PREDICT_STATS_SLOTS);
	LWLockAcquire(stats->lock, LW_SHARED);
	for (int i = 0; i < PREDICT_STATS_SLOTS; i++)
		if (stats->entries[i].run_id != 0 && stats->entries[i].dbid == MyDatabaseId)
			copy[n++] = stats->entries[i];
	LWLockRelease(stats->lock);
	if (n == 0)
		return (Datum) 0;

	/* which of these tasks the caller may see */
	ids = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(copy[i].task_id);
	arg = PointerGetDatum(construct_array(ids, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT t.id FROM easeml.tasks t WHERE t.id = ANY ($1)",
							  1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read easeml.tasks");
	seen = palloc(sizeof(int64) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		seen[nseen++] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();

	for (int i = 0; i < n; i++)
	{
		Datum		values[7];
		bool		nulls[7] = {false};
		bool		visible = false;

		for (int k = 0; k < nseen && !visible; k++)
			visible = seen[k] == copy[i].task_id;
		if (!visible)
			continue;
		values[0] = Int64GetDatum(copy[i].task_id);
		values[1] = Int64GetDatum(copy[i].run_id);
		values[2] = Int64GetDatum((int64) copy[i].rows);
		values[3] = Int64GetDatum((int64) copy[i].unknown);
		values[4] = Int64GetDatum((int64) copy[i].imputed);
		values[5] = TimestampTzGetDatum(copy[i].since);
		values[6] = TimestampTzGetDatum(copy[i].last_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
