/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  SQL-callable functions written in C: waking the scheduler, its
 *	  status, policy names, the trainer's data session and the replay
 *	  simulator.
 *
 * IDENTIFICATION
 *	  src/functions.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "policy.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(easeml_wake_scheduler);
PG_FUNCTION_INFO_V1(easeml_wake_trigger);
PG_FUNCTION_INFO_V1(easeml_policy_valid);
PG_FUNCTION_INFO_V1(easeml_policies);
PG_FUNCTION_INFO_V1(easeml_scheduler_status);
PG_FUNCTION_INFO_V1(easeml_trainer_data_session);

/*
 * easeml.wake_scheduler(): wake the scheduler when this transaction
 * commits.
 */
Datum
easeml_wake_scheduler(PG_FUNCTION_ARGS)
{
	EasemlWakeAtCommit();
	PG_RETURN_VOID();
}

/* Statement trigger on tasks and runs: wake the scheduler at commit. */
Datum
easeml_wake_trigger(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("easeml._wake_trigger() must be called as a trigger")));
	EasemlWakeAtCommit();
	return PointerGetDatum(NULL);
}

/* easeml._policy_valid(name): is it a policy src/policy.c knows? */
Datum
easeml_policy_valid(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	PG_RETURN_BOOL(PolicyFromName(name) >= 0);
}

/* easeml.policies(): every policy name. */
Datum
easeml_policies(PG_FUNCTION_ARGS)
{
	Datum		elems[POLICY__COUNT];
	int			n = 0;

	for (int k = 0; k < POLICY__COUNT; k++)
	{
		const char *name = PolicyName((PolicyKind) k);

		if (name != NULL)
			elems[n++] = CStringGetTextDatum(name);
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false,
										  TYPALIGN_INT));
}

/* easeml.scheduler_status(): the scheduler as shared memory sees it. */
Datum
easeml_scheduler_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {0};
	pid_t		pid = 0;
	int			running = 0;
	int64		decisions = 0;
	char		policy[32] = "";
	TimestampTz started = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	if (EasemlState != NULL)
	{
		SpinLockAcquire(&EasemlState->mutex);
		pid = EasemlState->scheduler_pid;
		running = EasemlState->running;
		decisions = EasemlState->decisions;
		strlcpy(policy, EasemlState->policy, sizeof(policy));
		started = EasemlState->started_at;
		SpinLockRelease(&EasemlState->mutex);
	}

	if (pid == 0)
	{
		nulls[0] = true;
		nulls[5] = true;
	}
	values[0] = Int32GetDatum((int32) pid);
	values[1] = Int32GetDatum(running);
	values[2] = Int32GetDatum(easeml_max_workers);
	values[3] = Int64GetDatum(decisions);
	if (policy[0])
		values[4] = CStringGetTextDatum(policy);
	else
		nulls[4] = true;
	values[5] = TimestampTzGetDatum(started);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Identity to restore when a trainer data session's transaction ends. */
static bool data_session_active = false;
static Oid	data_session_userid = InvalidOid;
static int	data_session_sec_context = 0;
static bool data_session_callback = false;

static void
DataSessionXactCallback(XactEvent event, void *arg)
{
	if (!data_session_active)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			SetUserIdAndSecContext(data_session_userid, data_session_sec_context);
			data_session_active = false;
			break;
		default:
			break;
	}
}

/*
 * easeml.trainer_data_session(run_id): for the rest of the current
 * transaction, act as the run's tenant inside a security-restricted
 * operation.  The trainer calls it before COPYing the task's rows, so the
 * rows are read with exactly the tenant's privileges and row-level
 * security, and any function a tenant's view calls cannot change role
 * (SET ROLE, RESET ROLE and SET SESSION AUTHORIZATION are refused in a
 * security-restricted operation).  The caller's identity comes back when
 * the transaction ends, by commit or abort.  Superuser only: the execute
 * privilege is revoked from PUBLIC, and the caller is checked again here.
 */
Datum
easeml_trainer_data_session(PG_FUNCTION_ARGS)
{
	int64		run_id = PG_GETARG_INT64(0);
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	char	   *tenant;
	Oid			roleid;
	Oid			save_userid;
	int			save_sec_context;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may open a trainer data session")));
	if (!IsTransactionBlock() || GetCurrentTransactionNestLevel() != 1 ||
		data_session_active)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("easeml.trainer_data_session() must be called at the top level of a transaction block"),
				 errhint("Run BEGIN first; the tenant's identity ends with the transaction.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT tenant::text FROM easeml.runs WHERE id = $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up run");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) run_id)));
	tenant = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	tenant = MemoryContextStrdup(TopTransactionContext, tenant);
	SPI_finish();

	roleid = get_role_oid(tenant, false);

	if (!data_session_callback)
	{
		RegisterXactCallback(DataSessionXactCallback, NULL);
		data_session_callback = true;
	}
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	data_session_userid = save_userid;
	data_session_sec_context = save_sec_context;
	data_session_active = true;
	SetUserIdAndSecContext(roleid,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);

	PG_RETURN_DATUM(DirectFunctionCall1(namein, CStringGetDatum(tenant)));
}
