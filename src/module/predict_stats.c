/*-------------------------------------------------------------------------
 *
 * predict_stats.c
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
 * a slot whose counts are lost (its "since" says when counting started):
 * the least recently predicted slot of the tenant (database and role) that
 * holds the most slots.  So one tenant predicting with many runs forgets
 * its own pairs, not another's: every tenant keeps at least its share
 * (the slots divided by the tenants that hold any).  Pairs are per
 * database (task ids are); the counts of a dropped task stay until their
 * slot is taken, but are no longer shown (task ids are not reused).
 *
 * Without easeml in shared_preload_libraries there is no shared memory:
 * nothing is counted and the view is empty.
 *
 * The table lives in the module (it is set up with the rest of easeml's
 * shared memory, src/module/shmem.c); the SQL function that reads it is
 * src/sql/sql_predict_stats.c.
 *
 * IDENTIFICATION
 *	  src/module/predict_stats.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "easeml.h"
#include "miscadmin.h"
#include "predict_stats.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#define STATS_TRANCHE "easeml prediction stats"

typedef struct PredictStatsShared
{
	LWLock	   *lock;
	PredictStatsEntry entries[PREDICT_STATS_SLOTS];
} PredictStatsShared;

static PredictStatsShared *stats = NULL;

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

/* slot indexes ordered by tenant, then least recently predicted first */
static int
CompareSlots(const void *a, const void *b)
{
	const PredictStatsEntry *x = &stats->entries[*(const int *) a];
	const PredictStatsEntry *y = &stats->entries[*(const int *) b];

	if (x->dbid != y->dbid)
		return x->dbid < y->dbid ? -1 : 1;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->last_at != y->last_at)
		return x->last_at < y->last_at ? -1 : 1;
	return 0;
}

/*
 * The slot a new pair takes in a full table: the least recently predicted
 * slot of the tenant holding the most slots (of two as large, the one
 * whose oldest slot is older).  The new pair's tenant counts one more, so
 * a tenant at the top evicts its own.  Lock held; allocates nothing.
 */
static PredictStatsEntry *
Victim(Oid dbid, Oid owner)
{
	int			order[PREDICT_STATS_SLOTS];
	int			best = -1,
				best_n = 0;

	for (int i = 0; i < PREDICT_STATS_SLOTS; i++)
		order[i] = i;
	qsort(order, PREDICT_STATS_SLOTS, sizeof(int), CompareSlots);
	for (int i = 0; i < PREDICT_STATS_SLOTS;)
	{
		const PredictStatsEntry *first = &stats->entries[order[i]];
		int			j = i + 1;
		int			n;

		while (j < PREDICT_STATS_SLOTS &&
			   stats->entries[order[j]].dbid == first->dbid &&
			   stats->entries[order[j]].owner == first->owner)
			j++;
		n = j - i + (first->dbid == dbid && first->owner == owner);
		if (best < 0 || n > best_n ||
			(n == best_n && first->last_at < stats->entries[order[best]].last_at))
		{
			best = i;
			best_n = n;
		}
		i = j;
	}
	return &stats->entries[order[best]];
}

/*
 * Add one call site's counts for (task, run), predicted by owner.  Called
 * from a memory context reset callback, also while a failed transaction is
 * cleaned up: it raises no error and allocates nothing.
 */
void
PredictStatsAdd(Oid owner, int64 task_id, int64 run_id, uint64 rows, uint64 unknown,
				uint64 imputed)
{
	PredictStatsEntry *e = NULL;
	PredictStatsEntry *free_slot = NULL;
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
		if (s->run_id == 0 && free_slot == NULL)
			free_slot = s;
	}
	if (e == NULL)
	{
		e = free_slot != NULL ? free_slot : Victim(MyDatabaseId, owner);
		memset(e, 0, sizeof(*e));
		e->dbid = MyDatabaseId;
		e->owner = owner;
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
 * Copy the counters of this database's (task, run) pairs into out (room
 * for PREDICT_STATS_SLOTS entries) under the lock; returns how many.  0
 * without shared memory.
 */
int
PredictStatsCopy(PredictStatsEntry *out)
{
	int			n = 0;

	if (stats == NULL)
		return 0;
	LWLockAcquire(stats->lock, LW_SHARED);
	for (int i = 0; i < PREDICT_STATS_SLOTS; i++)
		if (stats->entries[i].run_id != 0 && stats->entries[i].dbid == MyDatabaseId)
			out[n++] = stats->entries[i];
	LWLockRelease(stats->lock);
	return n;
}
