/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  The scheduler's catalog I/O: the short transactions every statement
 *	  of the worker runs in, whether the extension is ready, and startup
 *	  recovery.
 *
 * Each statement runs inside a short transaction opened by CatalogBegin()
 * and closed by CatalogCommit(); values are always passed as $n
 * parameters.  Results are copied into the caller's memory context (the
 * scheduler's loop context) before the transaction ends, so the policy
 * math runs outside any transaction.
 *
 * The statements about tasks, runs, models and devices are in the
 * catalog_*.c files (catalog.h lists which file does what); the worker's
 * other tables each have their own file, in the same transactions:
 * trainer_jobs.c (easeml.trainer_jobs), policy_choice.c
 * (easeml.policy_choices), retention.c (the scheduler's own log).  No
 * other worker file runs SQL.
 *
 * IDENTIFICATION
 *	  src/worker/catalog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "access/xact.h"
#include "catalog.h"
#include "catalog_spi.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "core/memmodel.h"
#include "core/placement.h"
#include "core/trainer_protocol.h"

/* where results are copied: the memory context of CatalogBegin's caller */
MemoryContext CatalogCallerContext = NULL;


/* Start a transaction with SPI connected; results go to the caller's context. */
void
CatalogBegin(const char *activity)
{
	CatalogCallerContext = CurrentMemoryContext;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* SPI_palloc and our copies land in the caller's context */
	MemoryContextSwitchTo(CatalogCallerContext);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/*
 * The same in a REPEATABLE READ transaction: every statement sees the
 * snapshot of the first (easeml.check_catalog compares two loads).
 */
void
CatalogBeginRepeatable(const char *activity)
{
	CatalogCallerContext = CurrentMemoryContext;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* before the transaction's snapshot is taken, as SET TRANSACTION does */
	XactIsoLevel = XACT_REPEATABLE_READ;
	MemoryContextSwitchTo(CatalogCallerContext);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/* Commit the transaction opened by CatalogBegin(). */
void
CatalogCommit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(CatalogCallerContext);
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Connect SPI inside the caller's transaction (a backend, not the
 * scheduler); results go to the caller's context.
 */
void
CatalogAttach(void)
{
	CatalogCallerContext = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
}

void
CatalogDetach(void)
{
	SPI_finish();
	MemoryContextSwitchTo(CatalogCallerContext);
}


/*
 * Is the extension installed in this database, at this library's version?
 * Call inside CatalogBegin; the scheduler idles until it is.
 */
CatalogStatus
CatalogReady(void)
{
	static bool warned = false;
	char	   *version;

	Exec("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'easeml'",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	if (SPI_processed == 0)
		return CATALOG_ABSENT;
	version = GetText(0, 1);
	if (version != NULL && strcmp(version, EASEML_VERSION) == 0)
	{
		warned = false;
		return CATALOG_READY;
	}
	/* the library was upgraded before the catalog: wait, touch nothing */
	if (!warned)
		ereport(WARNING,
				(errmsg("easeml: the catalog is at version %s but the library at %s; scheduling waits",
						version ? version : "?", EASEML_VERSION),
				 errhint("Run ALTER EXTENSION easeml UPDATE in database \"%s\".",
						 get_database_name(MyDatabaseId))));
	warned = true;
	return CATALOG_OTHER_VERSION;
}

/* Name of the bootstrap superuser, for the trainers' connections. */
char *
CatalogBootstrapUser(void)
{
	return MemoryContextStrdup(CatalogCallerContext,
							   GetUserNameFromId(BOOTSTRAP_SUPERUSERID, false));
}

