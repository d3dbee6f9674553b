/*-------------------------------------------------------------------------
 *
 * snapshot.c
 *	  Reading a tenant's source safely, and the per-task data snapshots
 *	  (docs/data.md).
 *
 * Two identities are involved when a task's data is read or copied:
 *
 *	- the tenant, who may read the source (a table, or a view whose code
 *	  the tenant wrote).  Every read of a source happens as the tenant
 *	  inside a *security-restricted operation*, as the trainer's data
 *	  session does: the tenant's own privileges and row-level security
 *	  apply, and code in the tenant's view cannot SET ROLE, RESET ROLE or
 *	  SET SESSION AUTHORIZATION, so a superuser who declared a task after
 *	  SET ROLE cannot be taken over by it;
 *	- the bootstrap superuser, who owns the snapshot tables in schema
 *	  easeml_snapshots and the catalog rows that record them.  No tenant
 *	  code ever runs under this identity: its statements touch only
 *	  easeml's own tables, with names built by easeml._snapshot_sql() from
 *	  a task id and checked column names.
 *
 * A snapshot is filled by one INSERT ... SELECT run as the tenant, which
 * for that one statement holds INSERT on its own new snapshot table
 * (granted just before and revoked just after, in the same transaction, so
 * nobody else ever sees the grant).  The most the tenant's view code can do
 * with it is write into the tenant's own snapshot.
 *
 * The statements themselves are SQL functions in sql/easeml.sql
 * (_snapshot_sql, _snapshot_check, _snapshot_switch); this file only runs
 * each one under the right identity.
 *
 * IDENTIFICATION
 *	  src/snapshot.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(easeml_read_restricted);
PG_FUNCTION_INFO_V1(easeml_take_snapshot);
PG_FUNCTION_INFO_V1(easeml_refresh);

/*
 * Run one statement under the given identity; restricted adds a
 * security-restricted operation.  On error, (sub)transaction abort
 * restores the caller's identity.  Call between SPI_connect and
 * SPI_finish.
 */
static int
ExecAs(Oid role, bool restricted, const char *sql, int nargs, Oid *types,
	   Datum *values, bool read_only)
{
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(role,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   (restricted ? SECURITY_RESTRICTED_OPERATION : 0));
	rc = SPI_execute_with_args(sql, nargs, types, values, NULL, read_only, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return rc;
}

/* OID of easeml.tasks */
static Oid
EasemlTasksRelid(void)
{
	Oid			nsp = get_namespace_oid("easeml", false);

	return get_relname_relid("tasks", nsp);
}

static int
ExecAsSuperuser(const char *sql, int nargs, Oid *types, Datum *values)
{
	return ExecAs(BOOTSTRAP_SUPERUSERID, false, sql, nargs, types, values, false);
}

/*
 * easeml._read_restricted(query): run a query that returns one jsonb value
 * as the current user inside a security-restricted operation, and return
 * the value.  The declaration reads a task's source through it.  It gives
 * the caller nothing it did not have: the query runs with the caller's own
 * privileges, only with less freedom.
 */
Datum
easeml_read_restricted(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Datum		result;
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (ExecAs(GetUserId(), true, sql, 0, NULL, NULL, true) != SPI_OK_SELECT ||
		SPI_processed != 1 || SPI_tuptable->tupdesc->natts != 1 ||
		SPI_gettypeid(SPI_tuptable->tupdesc, 1) != JSONBOID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("easeml._read_restricted() needs a query that returns one jsonb value")));
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		result = SPI_datumTransfer(result, false, -1);
	SPI_finish();
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* text of column col of the current SPI result row 0 (NULL -> error) */
static char *
SpiText(int col)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

	if (v == NULL)
		elog(ERROR, "unexpected NULL in column %d", col);
	return v;
}

/*
 * Take snapshot version `version` of task task_id: create its table, fill
 * it as the tenant, check the target on the copy, and make it the task's
 * current version (older versions are dropped and their runs in flight
 * cancelled, see easeml._snapshot_switch).  With version 0 nothing is
 * copied: a task without a snapshot only has its row counts updated from
 * the live source.
 */
static void
TakeSnapshot(int64 task_id, int32 version, Oid tenant)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(task_id), Int32GetDatum(version)};
	char	   *create_sql,
			   *grant_sql,
			   *fill_sql,
			   *revoke_sql,
			   *check_sql;

	if (ExecAsSuperuser("SELECT create_sql, grant_sql, fill_sql, revoke_sql, check_sql"
						"  FROM easeml._snapshot_sql($1, $2)",
						2, types, values) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not plan the snapshot of task %lld", (long long) task_id);
	check_sql = SpiText(5);
	if (version > 0)
	{
		create_sql = SpiText(1);
		grant_sql = SpiText(2);
		fill_sql = SpiText(3);
		revoke_sql = SpiText(4);
		if (ExecAsSuperuser(create_sql, 0, NULL, NULL) != SPI_OK_UTILITY ||
			ExecAsSuperuser(grant_sql, 0, NULL, NULL) != SPI_OK_UTILITY)
			elog(ERROR, "could not create the snapshot table of task %lld",
				 (long long) task_id);
		if (ExecAs(tenant, true, fill_sql, 0, NULL, NULL, false) != SPI_OK_INSERT)
			elog(ERROR, "could not fill the snapshot of task %lld", (long long) task_id);
		if (ExecAsSuperuser(revoke_sql, 0, NULL, NULL) != SPI_OK_UTILITY)
			elog(ERROR, "could not seal the snapshot of task %lld", (long long) task_id);
	}

	/*
	 * Check the target on what the runs will read (the copy, or the live
	 * source), as the tenant; it raises the declaration's errors.
	 */
	if (ExecAs(tenant, true, check_sql, 0, NULL, NULL, true) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not check the snapshot of task %lld", (long long) task_id);
	{
		Oid			stypes[4] = {INT8OID, INT4OID, INT8OID, INT4OID};
		Datum		svalues[4];
		char		snulls[4] = {' ', ' ', ' ', ' '};
		bool		isnull;
		int			rc;

		svalues[0] = Int64GetDatum(task_id);
		svalues[1] = Int32GetDatum(version);
		svalues[2] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (isnull)
			snulls[2] = 'n';
		svalues[3] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		if (isnull)
			snulls[3] = 'n';
		{
			Oid			save_userid;
			int			save_sec_context;

			GetUserIdAndSecContext(&save_userid, &save_sec_context);
			SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
								   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
			rc = SPI_execute_with_args("SELECT easeml._snapshot_switch($1, $2, $3, $4)",
									   4, stypes, svalues, snulls, false, 0);
			SetUserIdAndSecContext(save_userid, save_sec_context);
		}
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "could not record the snapshot of task %lld", (long long) task_id);
	}
}

/*
 * AFTER INSERT trigger on easeml.tasks, for rows the declaration marked
 * with snapshot_version = 0 (a task being declared with a snapshot; rows
 * restored from a dump carry their version and are left alone): take
 * version 1 as the declaring tenant.
 */
Datum
easeml_take_snapshot(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	TupleDesc	tupdesc;
	int			attno;
	bool		isnull;
	int64		task_id;
	char	   *tenant;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("easeml._take_snapshot() must be an AFTER INSERT row trigger")));
	/* only on easeml.tasks: another table's rows could name any task */
	if (RelationGetRelid(trigdata->tg_relation) != EasemlTasksRelid())
		ereport(ERROR,
				(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
				 errmsg("easeml._take_snapshot() is a trigger of easeml.tasks only")));
	tuple = trigdata->tg_trigtuple;
	tupdesc = trigdata->tg_relation->rd_att;
	attno = SPI_fnumber(tupdesc, "id");
	task_id = DatumGetInt64(SPI_getbinval(tuple, tupdesc, attno, &isnull));
	tenant = SPI_getvalue(tuple, tupdesc, SPI_fnumber(tupdesc, "tenant"));

	/* the declaration checked that the tenant itself declares */
	if (tenant == NULL || get_role_oid(tenant, false) != GetUserId())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the snapshot of a task is taken by its tenant \"%s\"",
						tenant ? tenant : "?")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	TakeSnapshot(task_id, 1, GetUserId());
	SPI_finish();
	return PointerGetDatum(NULL);
}

/*
 * easeml.refresh(task): take a new snapshot version of one of the caller's
 * tasks and make it current; returns the new version (0 for a task
 * without snapshots, whose row counts are brought up to date).
 */
Datum
easeml_refresh(PG_FUNCTION_ARGS)
{
	text	   *task = PG_GETARG_TEXT_PP(0);
	Oid			caller = GetUserId();
	char	   *caller_name = GetUserNameFromId(caller, false);
	Oid			types[2] = {NAMEOID, TEXTOID};
	Datum		values[2];
	int64		task_id;
	int32		version;
	bool		isnull;

	values[0] = DirectFunctionCall1(namein, CStringGetDatum(caller_name));
	values[1] = PointerGetDatum(task);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the row lock serialises refreshes of one task */
	if (ExecAsSuperuser("SELECT id, CASE WHEN snapshot THEN coalesce(snapshot_version, 0) + 1 ELSE 0 END"
						"  FROM easeml.tasks WHERE tenant = $1 AND name = $2 FOR UPDATE",
						2, types, values) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the task");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist for tenant \"%s\"",
						text_to_cstring(task), caller_name),
				 errhint("SELECT name FROM easeml.tasks lists your tasks.")));
	task_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	TakeSnapshot(task_id, version, caller);
	SPI_finish();
	EasemlWakeAtCommit();
	PG_RETURN_INT32(version);
}
