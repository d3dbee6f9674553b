/*-------------------------------------------------------------------------
 *
 * sql_tenant.c
 *	  Tenant actions written in C: dropping a task and cancelling a run.
 *	  Both check ownership in their statement and then run it as the
 *	  bootstrap superuser (EasemlExecAsSuperuser, src/module/identity.c), since
 *	  tenants hold no UPDATE or DELETE privilege on the tables the
 *	  scheduler writes.
 *
 * IDENTIFICATION
 *	  src/sql/sql_tenant.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "module/identity.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

/*
 * The caller's tenant name and its own runs: EasemlCallerName and
 * EasemlOwnRunStatus (src/module/caller.c).
 */

/*
 * easeml.drop_task(task): delete one of the caller's tasks with its runs;
 * the scheduler stops the task's running trainers when it notices their
 * runs are gone.
 */
PG_FUNCTION_INFO_V1(easeml_drop_task);

Datum
easeml_drop_task(PG_FUNCTION_ARGS)
{
	text	   *task;
	char	   *caller = EasemlCallerName();
	Oid			types[2] = {NAMEOID, TEXTOID};
	Datum		values[2];
	int64		task_id;
	bool		isnull;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("Pass the name of one of your tasks: SELECT easeml.drop_task('my_task');")));
	task = PG_GETARG_TEXT_PP(0);
	values[0] = DirectFunctionCall1(namein, CStringGetDatum(caller));
	values[1] = PointerGetDatum(task);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (EasemlExecAsSuperuser("DELETE FROM easeml.tasks WHERE tenant = $1 AND name = $2 RETURNING id",
							  2, types, values, NULL, false, 0) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "could not delete the task");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist for tenant \"%s\"",
						text_to_cstring(task), caller),
				 errhint("SELECT name FROM easeml.tasks lists your tasks.")));
	task_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	EasemlWakeAtCommit();
	PG_RETURN_INT64(task_id);
}

/*
 * easeml.cancel(run_id): cancel a run of the caller's (any run, for a
 * superuser).  A queued run is cancelled at once; a running one gets its
 * cancel request and the scheduler stops its trainer.  Returns what the
 * run is now: 'cancelled' (a queued run, or one cancelled before), or
 * 'cancelling' for a running run whose trainer is being stopped (its
 * runs.status stays 'running', with cancel_requested, until the scheduler
 * records it cancelled).  Cancelling again just says so.
 */
PG_FUNCTION_INFO_V1(easeml_cancel);

Datum
easeml_cancel(PG_FUNCTION_ARGS)
{
	int64		run_id;
	char	   *caller = EasemlCallerName();
	Oid			types[3] = {INT8OID, NAMEOID, BOOLOID};
	Datum		values[3];
	char	   *status;
	MemoryContext caller_cxt = CurrentMemoryContext;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("run_id must not be NULL"),
				 errhint("SELECT id, status FROM easeml.runs lists your runs.")));
	run_id = PG_GETARG_INT64(0);
	values[0] = Int64GetDatum(run_id);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(caller));
	values[2] = BoolGetDatum(superuser());

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (EasemlExecAsSuperuser("UPDATE easeml.runs r"
							  "   SET cancel_requested = true,"
							  "       status = CASE WHEN r.status = 'queued' THEN 'cancelled' ELSE r.status END,"
							  "       finished_at = CASE WHEN r.status = 'queued' THEN clock_timestamp() END,"
							  "       error = CASE WHEN r.status = 'queued'"
							  "                    THEN format('cancelled by %s before it started', $2) END"
							  " WHERE r.id = $1 AND (r.tenant = $2 OR $3)"
							  "   AND r.status IN ('queued', 'running') AND NOT r.cancel_requested"
							  " RETURNING r.status",
							  3, types, values, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not cancel the run");
	status = NULL;
	if (SPI_processed == 1)
		status = MemoryContextStrdup(caller_cxt,
									 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	if (status == NULL)
	{
		/* nothing to cancel: say why */
		status = EasemlOwnRunStatus(run_id);
		if (status == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("run %lld does not exist", (long long) run_id),
					 errhint("SELECT id, status FROM easeml.runs lists your runs.")));
		if (strcmp(status, "cancelled") != 0 && strcmp(status, "running") != 0 &&
			strcmp(status, "queued") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("run %lld has already ended: it is %s", (long long) run_id, status),
					 errhint("Only queued and running runs can be cancelled.")));
	}
	/* a running run ends when its trainer has stopped: not yet */
	if (strcmp(status, "running") == 0)
		status = "cancelling";
	EasemlWakeAtCommit();
	PG_RETURN_TEXT_P(cstring_to_text(status));
}

/*
 * easeml._lock_own_tenant(): lock the caller's own row of easeml.tenants
 * until the transaction ends, so that the declarations of one tenant
 * under max_tasks count its tasks one at a time.  As the superuser, since
 * a tenant has no UPDATE privilege on easeml.tenants (which would let it
 * lock rows), and only the caller's own row: a tenant can hold up only
 * itself.  Advisory locks are no use here: any role may take any advisory
 * lock, another tenant's key too.
 */
PG_FUNCTION_INFO_V1(easeml_lock_own_tenant);

Datum
easeml_lock_own_tenant(PG_FUNCTION_ARGS)
{
	Oid			types[1] = {NAMEOID};
	Datum		values[1];

	values[0] = DirectFunctionCall1(namein,
									CStringGetDatum(GetUserNameFromId(GetUserId(), false)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (EasemlExecAsSuperuser("SELECT 1 FROM easeml.tenants WHERE name = $1 FOR NO KEY UPDATE",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the tenant's row");
	SPI_finish();
	PG_RETURN_VOID();
}
