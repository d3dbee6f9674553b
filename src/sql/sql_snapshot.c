/*-------------------------------------------------------------------------
 *
 * sql_snapshot.c
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
 * A snapshot is filled by one INSERT ... SELECT run as the superuser from
 * easeml._read_rows_as(tenant, query), which reads the source as the
 * tenant, read-only and in a security-restricted operation, as
 * easeml._read_source does for the declaration's checks: the tenant's view
 * code can neither change role nor write, and the tenant never holds a
 * write privilege on the snapshot.  The tenant is the declaring or
 * refreshing role itself, passed as a parameter, never looked up by name.
 *
 * The statements themselves are SQL functions in sql/easeml.sql
 * (_snapshot_sql, _snapshot_switch); this file runs each one under the
 * right identity, through src/module/identity.c (search_path pg_catalog,
 * pg_temp: a tenant's temporary tables never shadow a catalog).
 *
 * IDENTIFICATION
 *	  src/sql/sql_snapshot.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(easeml_read_rows_as);
PG_FUNCTION_INFO_V1(easeml_take_snapshot);
PG_FUNCTION_INFO_V1(easeml_refresh);
PG_FUNCTION_INFO_V1(easeml_alter_task);
PG_FUNCTION_INFO_V1(easeml_altering);

/*
 * The task whose row easeml.alter_task is writing now (0: none).  The
 * tasks_validate trigger lets metric, features and folds change only
 * while this says so (easeml._altering); backend memory, which no SQL can
 * set.
 */
static int64 altering_task = 0;

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
	return EasemlExecAsSuperuser(sql, nargs, types, values, NULL, false, 0);
}

/*
 * easeml._read_rows_as(role, query): the rows of a query over a task's
 * source, read as role, read-only, inside a security-restricted operation;
 * settings the source's code changes are undone.  The caller gives the
 * column definition list, which the query's result must match.  It runs
 * in the caller's INSERT, which writes the rows as the caller: superuser
 * only (it acts as another role).
 */
Datum
easeml_read_rows_as(PG_FUNCTION_ARGS)
{
	Oid			role = PG_GETARG_OID(0);
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	EasemlIdentity saved;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may read rows as another role")));
	InitMaterializedSRF(fcinfo, 0);

	/* refuses a role that does not exist or is a superuser */
	EasemlBeginTenant(&saved, role);
	PG_TRY();
	{
		SPIPlanPtr	plan;
		Portal		portal;
		TupleDesc	want = rsinfo->setDesc;
		Datum	   *values = palloc(sizeof(Datum) * Max(want->natts, 1));
		bool	   *nulls = palloc(sizeof(bool) * Max(want->natts, 1));

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if ((plan = SPI_prepare(query, 0, NULL)) == NULL ||
			(portal = SPI_cursor_open(NULL, plan, NULL, NULL, true)) == NULL)
			elog(ERROR, "could not read the source: %s", SPI_result_code_string(SPI_result));
		for (;;)
		{
			TupleDesc	got;

			SPI_cursor_fetch(portal, true, 10000);
			if (SPI_processed == 0)
				break;
			got = SPI_tuptable->tupdesc;
			if (got->natts != want->natts)
				elog(ERROR, "the source query returns %d columns, not %d", got->natts, want->natts);
			for (int j = 0; j < got->natts; j++)
				if (TupleDescAttr(got, j)->atttypid != TupleDescAttr(want, j)->atttypid)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("column %d of the source has type %s, the snapshot %s", j + 1,
									format_type_be(TupleDescAttr(got, j)->atttypid),
									format_type_be(TupleDescAttr(want, j)->atttypid))));
			for (uint64 i = 0; i < SPI_processed; i++)
			{
				heap_deform_tuple(SPI_tuptable->vals[i], got, values, nulls);
				tuplestore_putvalues(rsinfo->setResult, want, values, nulls);
			}
			SPI_freetuptable(SPI_tuptable);
			CHECK_FOR_INTERRUPTS();
		}
		SPI_cursor_close(portal);
		SPI_finish();
	}
	PG_FINALLY();
	{
		EasemlEndIdentity(&saved);
	}
	PG_END_TRY();
	return (Datum) 0;
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
 * The snapshot table belongs to the bootstrap superuser, and ANALYZE runs
 * its column types' support functions (a range's subtype_diff, say) as
 * the table's owner, autovacuum's included: every column must have a type
 * made by initdb, whose functions are built in, never a tenant's
 * (easeml._snapshot_type chooses them so; docs/security.md, "What runs as
 * the superuser").  Checked on the table itself, before anything is
 * committed.
 */
static void
CheckSnapshotTypes(int64 task_id, int32 version)
{
	Oid			types[3] = {INT8OID, INT4OID, OIDOID};
	Datum		values[3] = {Int64GetDatum(task_id), Int32GetDatum(version),
	ObjectIdGetDatum(FirstNormalObjectId)};

	if (ExecAsSuperuser("SELECT a.attname::text, a.atttypid::pg_catalog.regtype::text"
						"  FROM pg_catalog.pg_attribute a"
						" WHERE a.attrelid = pg_catalog.to_regclass(pg_catalog.format("
						"         'easeml_snapshots.%I', easeml._snapshot_name($1, $2)))"
						"   AND a.attnum > 0 AND a.atttypid >= $3",
						3, types, values) != SPI_OK_SELECT)
		elog(ERROR, "could not check the snapshot of task %lld", (long long) task_id);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("column \"%s\" of the snapshot of task %lld has type %s, which is not built in",
						SpiText(1), (long long) task_id, SpiText(2)),
				 errdetail("A snapshot table belongs to the superuser, so its columns may only have built-in types.")));
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
	Oid			ftypes[1] = {OIDOID};
	Datum		fvalues[1] = {ObjectIdGetDatum(tenant)};
	char	   *create_sql,
			   *grant_sql,
			   *fill_sql,
			   *check_sql;

	if (ExecAsSuperuser("SELECT create_sql, grant_sql, fill_sql, check_sql"
						"  FROM easeml._snapshot_sql($1, $2)",
						2, types, values) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not plan the snapshot of task %lld", (long long) task_id);
	check_sql = SpiText(4);
	if (version > 0)
	{
		create_sql = SpiText(1);
		grant_sql = SpiText(2);
		fill_sql = SpiText(3);
		if (ExecAsSuperuser(create_sql, 0, NULL, NULL) != SPI_OK_UTILITY ||
			ExecAsSuperuser(grant_sql, 0, NULL, NULL) != SPI_OK_UTILITY)
			elog(ERROR, "could not create the snapshot table of task %lld",
				 (long long) task_id);
		CheckSnapshotTypes(task_id, version);
		/*
		 * the rows are read as the tenant inside easeml._read_rows_as ($1:
		 * the tenant, who declared or refreshed)
		 */
		if (ExecAsSuperuser(fill_sql, 1, ftypes, fvalues) != SPI_OK_INSERT)
			elog(ERROR, "could not fill the snapshot of task %lld", (long long) task_id);
	}

	/*
	 * Check the target on what the runs will read (the copy, or the live
	 * source), as the tenant; it raises the declaration's errors.
	 */
	if (EasemlExecAsTenant(tenant, check_sql, 0, NULL, NULL, NULL, 0) != SPI_OK_SELECT ||
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
		rc = EasemlExecAsSuperuser("SELECT easeml._snapshot_switch($1, $2, $3, $4)",
								   4, stypes, svalues, snulls, false, 0);
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
	text	   *task;
	Oid			caller = GetUserId();
	char	   *caller_name;
	Oid			types[2] = {NAMEOID, TEXTOID};
	Datum		values[2];
	int64		task_id;
	int32		version;
	bool		isnull;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("For example SELECT easeml.refresh('my_task');")));
	task = PG_GETARG_TEXT_PP(0);
	/* [binding] refused if the caller only has a tenant's name */
	caller_name = EasemlCallerName();
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

/*
 * easeml._altering(task_id): whether easeml.alter_task of this backend is
 * writing that task's row now.
 */
Datum
easeml_altering(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(altering_task != 0 && altering_task == PG_GETARG_INT64(0));
}

/*
 * easeml.alter_task(task, metric, features, folds, auto_deploy,
 * budget_seconds): change a task of the caller's after its declaration
 * (docs/sql.md).  NULL leaves a value as it is.
 *
 *	1. the task's row, locked (as the superuser: the caller's own, by name;
 *	   42704 otherwise), so alterations and refreshes of one task queue;
 *	2. the new row, checked as a declaration is (easeml._altered_task) *as
 *	   the caller*, in a restricted, read-only section: new features or
 *	   folds read the source as the tenant, as the declaration does;
 *	3. the row written and its consequences (easeml._apply_alter, as the
 *	   superuser, with altering_task set so that tasks_validate lets the
 *	   checked values in): runs ranked by a new metric, a deployment that
 *	   read other features retired, the best run deployed again under a
 *	   new metric;
 *	4. for new features or folds, a new snapshot version as
 *	   easeml.refresh takes it: queued runs move to it, running ones of
 *	   older versions are cancelled, older runs stay with their version.
 *
 * Returns the task's row as it is now.
 */
Datum
easeml_alter_task(PG_FUNCTION_ARGS)
{
	char	   *caller_name;
	Oid			caller = GetUserId();
	Oid			ltypes[2] = {NAMEOID, TEXTOID};
	Datum		lvalues[2];
	Oid			atypes[6] = {INT8OID, TEXTOID, TEXTARRAYOID, INT4OID, BOOLOID, FLOAT8OID};
	Datum		avalues[6];
	char		anulls[6];
	Oid			ptypes[2] = {NAMEOID, InvalidOid};
	Datum		pvalues[2];
	Oid			ttypes[1] = {INT8OID};
	Datum		tvalues[1];
	int64		task_id;
	int32		version;
	bool		isnull;
	Datum		result;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("For example SELECT easeml.alter_task('my_task', metric => 'roc_auc');")));
	/* [binding] refused if the caller only has a tenant's name */
	caller_name = EasemlCallerName();
	lvalues[0] = DirectFunctionCall1(namein, CStringGetDatum(caller_name));
	lvalues[1] = PG_GETARG_DATUM(0);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* 1. the row lock serialises alterations and refreshes of one task */
	if (ExecAsSuperuser("SELECT id FROM easeml.tasks WHERE tenant = $1 AND name = $2 FOR UPDATE",
						2, ltypes, lvalues) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the task");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist for tenant \"%s\"",
						text_to_cstring(PG_GETARG_TEXT_PP(0)), caller_name),
				 errhint("SELECT name FROM easeml.tasks lists your tasks.")));
	task_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* 2. the new row, checked as the caller */
	avalues[0] = Int64GetDatum(task_id);
	anulls[0] = ' ';
	/* [budget] an SQL definition of fewer arguments leaves the rest NULL */
	for (int i = 1; i < 6; i++)
	{
		bool		given = i < PG_NARGS() && !PG_ARGISNULL(i);

		anulls[i] = given ? ' ' : 'n';
		avalues[i] = given ? PG_GETARG_DATUM(i) : (Datum) 0;
	}
	if (EasemlExecAsTenant(caller, "SELECT easeml._altered_task($1, $2, $3, $4, $5, $6)",
						   6, atypes, avalues, anulls, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not check the change of task %lld", (long long) task_id);
	ptypes[1] = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	pvalues[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "easeml._altered_task returned NULL");
	pvalues[1] = datumCopy(pvalues[1], false, -1);
	pvalues[0] = lvalues[0];

	/* 3. written as the superuser, the trigger told it is alter_task */
	altering_task = task_id;
	PG_TRY();
	{
		if (ExecAsSuperuser("SELECT easeml._apply_alter($1, $2)", 2, ptypes, pvalues) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "could not change task %lld", (long long) task_id);
	}
	PG_FINALLY();
	{
		altering_task = 0;
	}
	PG_END_TRY();
	version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	/* 4. new features or folds: a new snapshot version, as refresh does */
	if (!isnull && version > 0)
		TakeSnapshot(task_id, version, caller);

	/* the row as it is now */
	tvalues[0] = Int64GetDatum(task_id);
	if (ExecAsSuperuser("SELECT t FROM easeml.tasks t WHERE t.id = $1", 1, ttypes, tvalues) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read task %lld", (long long) task_id);
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = SPI_datumTransfer(result, false, -1);
	SPI_finish();
	EasemlWakeAtCommit();
	PG_RETURN_DATUM(result);
}
