/*-------------------------------------------------------------------------
 *
 * retention.c
 *	  Expiry of the scheduler's own log: with easeml.scheduler_log_retention
 *	  set, the scheduler removes the decisions (and their runner-ups), the
 *	  launch records of ended runs and the auto policy's choices older than
 *	  the setting, through easeml._purge_scheduler_log (sql/easeml.sql says
 *	  what is kept however old).  Runs, run events, learning curves,
 *	  artifacts, deployments and the history are never touched.  It also
 *	  drops the snapshot tables that a refresh, alter_task or drop_task
 *	  left because another session held a lock on them
 *	  (easeml.snapshot_drops).
 *
 * The purge works in batches of PURGE_BATCH_ROWS rows per table, each in
 * its own short transaction, after the iteration's decisions and for at
 * most PURGE_SLICE_MS per iteration: a long backlog (a retention set on a
 * server that kept everything for a year) drains over many iterations
 * instead of holding the loop.  A purge runs at start, when the setting
 * changes and every PURGE_INTERVAL_MS.  A failed purge is logged and tried
 * again at the next interval: it never ends the loop's iteration.
 *
 * A refresh, alter_task or drop_task never waits for a lock on an old
 * snapshot table (any role can hold one: a view over the table, or a
 * PREPARE of a query of it; docs/data.md, section 6): what it cannot drop
 * within 100 ms it records, and the scheduler drops it here, every
 * SNAPSHOT_DROP_INTERVAL_MS, at most SNAPSHOT_DROP_BATCH tables in one
 * short transaction that stops at the first table still locked
 * (easeml._drop_stale_snapshots).  A role that keeps a table locked
 * delays the loop by 100 ms per interval and keeps only that table.
 *
 * IDENTIFICATION
 *	  src/worker/retention.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog.h"
#include "catalog/pg_type_d.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "module/monoclock.h"
#include "pgstat.h"
#include "retention.h"
#include "scheduler.h"
#include "utils/timestamp.h"

#define PURGE_INTERVAL_MS (3600 * 1000)
#define PURGE_SLICE_MS 10
#define PURGE_BATCH_ROWS 200
#define SNAPSHOT_DROP_INTERVAL_MS (10 * 1000)
#define SNAPSHOT_DROP_BATCH 16

static bool purge_pending = true;	/* a purge is due now */
static int	purged_setting = 0;		/* the setting the last purge used */
static TimestampTz last_purge = 0;
static int64 round_removed = 0;		/* rows removed by the current round */
static TimestampTz last_snapshot_drop = 0;
static bool snapshot_drop_pending = true;	/* a full batch left more */

/*
 * One batch in its own transaction: at most PURGE_BATCH_ROWS rows of each
 * table.  Adds the rows removed to *removed; returns whether a table may
 * have more (a full batch).
 */
static bool
PurgeBatch(int minutes, int64 *removed)
{
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		values[2] = {Int32GetDatum(minutes), Int32GetDatum(PURGE_BATCH_ROWS)};
	bool		isnull;
	bool		more;

	CatalogBegin("easeml: purging the scheduler's log");
	/* runner-ups count, but their batch is bounded by their decisions' */
	if (SPI_execute_with_args("SELECT coalesce(sum(deleted), 0)::int8,"
							  "       coalesce(bool_or(deleted >= $2)"
							  "                FILTER (WHERE table_name <> 'decision_candidates'), false)"
							  "  FROM easeml._purge_scheduler_log(make_interval(mins => $1), $2)",
							  2, types, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "easeml: purging the scheduler's log returned no row");
	*removed += DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
	more = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 2, &isnull));
	CatalogCommit();
	return more;
}

/* Batches for at most PURGE_SLICE_MS; whether rows may remain. */
static bool
PurgeSlice(int minutes)
{
	TimestampTz start = EasemlMonotonicNow();
	bool		more;

	do
		more = PurgeBatch(minutes, &round_removed);
	while (more && !TimestampDifferenceExceeds(start, EasemlMonotonicNow(), PURGE_SLICE_MS));
	return more;
}

/*
 * One batch of easeml._drop_stale_snapshots in its own transaction; logs
 * what it dropped.  Returns whether a full batch was dropped and more are
 * left.
 */
static bool
DropSnapshotsBatch(void)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(SNAPSHOT_DROP_BATCH)};
	bool		isnull;
	int32		dropped,
				remaining;

	CatalogBegin("easeml: dropping old snapshot tables");
	if (SPI_execute_with_args("SELECT dropped, remaining FROM easeml._drop_stale_snapshots($1)",
							  1, types, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "easeml: dropping old snapshot tables returned no row");
	dropped = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	remaining = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 2, &isnull));
	CatalogCommit();
	if (dropped > 0)
		ereport(LOG,
				(errmsg("easeml: dropped %d old snapshot table(s) that were locked when their task let them go; %d left",
						dropped, remaining)));
	return dropped >= SNAPSHOT_DROP_BATCH && remaining > 0;
}

/* Steps for Guarded: a failure is logged and its transaction aborted. */
static void
DropSnapshotsGuarded(void *arg)
{
	snapshot_drop_pending = DropSnapshotsBatch();
}

static void
PurgeGuarded(void *arg)
{
	purge_pending = PurgeSlice(*(int *) arg);
}

/*
 * Called by the scheduler's loop, outside any transaction, while the
 * extension is installed.  Errors are contained here: each step is tried
 * again at its next interval.
 */
void
RetentionStep(void)
{
	int			minutes = easeml_scheduler_log_retention;

	/* the snapshot tables left to the scheduler, when due */
	if (snapshot_drop_pending ||
		TimestampDifferenceExceeds(last_snapshot_drop, EasemlMonotonicNow(),
								   SNAPSHOT_DROP_INTERVAL_MS))
	{
		last_snapshot_drop = EasemlMonotonicNow();
		if (!Guarded(DropSnapshotsGuarded, NULL))
		{
			snapshot_drop_pending = false;
			ereport(LOG,
					(errmsg("easeml: dropping old snapshot tables failed; it is tried again in %d s",
							SNAPSHOT_DROP_INTERVAL_MS / 1000),
					 errhint("The error is logged above; scheduling goes on.")));
		}
	}

	if (minutes != purged_setting)
		purge_pending = true;
	if (minutes <= 0 ||
		(!purge_pending &&
		 !TimestampDifferenceExceeds(last_purge, EasemlMonotonicNow(), PURGE_INTERVAL_MS)))
		return;
	purged_setting = minutes;
	last_purge = EasemlMonotonicNow();
	if (!Guarded(PurgeGuarded, &minutes))
	{
		purge_pending = false;
		round_removed = 0;
		ereport(LOG,
				(errmsg("easeml: purging the scheduler's log failed; it is tried again in an hour"),
				 errhint("The error is logged above; scheduling goes on.")));
		return;
	}
	if (!purge_pending && round_removed > 0)
	{
		ereport(LOG,
				(errmsg("easeml: removed %lld rows of the scheduler's log older than %d min",
						(long long) round_removed, minutes)));
		round_removed = 0;
	}
}
