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

#include <math.h>
#include <stdlib.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "policy.h"
#include "replay.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

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

	PolicyParams params;

	PG_RETURN_BOOL(PolicyParseSpec(name, &params, NULL, 0) == 0);
}

/* easeml.policies(): every policy name. */
Datum
easeml_policies(PG_FUNCTION_ARGS)
{
	Datum		elems[POLICY_NAMED_COUNT];
	int			n = 0;

	for (int k = 0; k < POLICY_NAMED_COUNT; k++)
	{
		const char *name = PolicyName(k);

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

/* ----------
 * easeml.replay(...) and easeml.replay_curve(...): the replay simulator of
 * src/replay.c over server-side CSV files (superuser only).
 * ----------
 */
PG_FUNCTION_INFO_V1(easeml_replay);

typedef struct ReplayArgs
{
	ReplayMatrix quality;
	ReplayMatrix cost;
	ReplayMatrix sizes_table;
	double	   *sizes;
	char	  **policies;
	double	   *thresholds;
	ReplayOutput out;
	bool		have_out;
} ReplayArgs;

static void
ReplayArgsFree(ReplayArgs *a)
{
	ReplayMatrixFree(&a->quality);
	ReplayMatrixFree(&a->cost);
	ReplayMatrixFree(&a->sizes_table);
	free(a->sizes);
	a->sizes = NULL;
	if (a->have_out)
		ReplayOutputFree(&a->out);
	a->have_out = false;
}

/* Polled by the simulator between runs: stop when the query is cancelled. */
static int
ReplayInterrupted(void *arg)
{
	return InterruptPending ? 1 : 0;
}

/* Raise a replay library error (after freeing what it allocated). */
static void
ReplayError(ReplayArgs *a, int rc, const char *what, const char *err)
{
	ReplayArgsFree(a);
	ereport(ERROR,
			(errcode(rc == REPLAY_IO ? ERRCODE_UNDEFINED_FILE :
					 rc == REPLAY_NO_MEMORY ? ERRCODE_OUT_OF_MEMORY :
					 ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s: %s", what, err)));
}

/*
 * easeml.replay(quality_csv, cost_csv, sizes_csv, tenants, devices,
 *				 policies, draws, seed, thresholds, one_minus, cost_model,
 *				 curve)
 *
 * curve = false: one row per (policy, threshold) with the median time to
 * reach it and the median and maximum speedup over the first policy.
 * curve = true: the averaged loss curve, one row per (policy, grid time).
 */
Datum
easeml_replay(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ReplayArgs	a;
	ReplayConfig cfg;
	char		err[1024];
	int			rc;
	char	   *quality_path;
	ArrayType  *pol_arr;
	ArrayType  *thr_arr;
	Datum	   *pol_datums;
	Datum	   *thr_datums;
	bool	   *pol_nulls;
	bool	   *thr_nulls;
	int			npol;
	int			nthr;
	char	   *cost_model;
	bool		curve;

	for (int i = 0; i < 12; i++)
		if (PG_ARGISNULL(i) && i != 1 && i != 2)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("only cost_csv and sizes_csv may be NULL")));

	memset(&a, 0, sizeof(a));
	quality_path = text_to_cstring(PG_GETARG_TEXT_PP(0));
	cost_model = text_to_cstring(PG_GETARG_TEXT_PP(10));
	curve = PG_GETARG_BOOL(11);

	pol_arr = PG_GETARG_ARRAYTYPE_P(5);
	thr_arr = PG_GETARG_ARRAYTYPE_P(8);
	deconstruct_array(pol_arr, TEXTOID, -1, false, TYPALIGN_INT,
					  &pol_datums, &pol_nulls, &npol);
	deconstruct_array(thr_arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &thr_datums, &thr_nulls, &nthr);
	if (npol < 1 || nthr < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("policies and thresholds must not be empty")));
	a.policies = palloc(sizeof(char *) * npol);
	for (int i = 0; i < npol; i++)
	{
		ReplayPolicy check;

		if (pol_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("policies must not contain NULL")));
		a.policies[i] = TextDatumGetCString(pol_datums[i]);
		if (ReplayParsePolicy(a.policies[i], &check, err, sizeof(err)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid policy \"%s\": %s", a.policies[i], err),
					 errhint("A policy is a name of easeml.policies() with options, e.g. \"hybrid:cost\".")));
	}
	a.thresholds = palloc(sizeof(double) * nthr);
	for (int i = 0; i < nthr; i++)
	{
		if (thr_nulls[i] || !(DatumGetFloat8(thr_datums[i]) > 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("thresholds must be positive numbers")));
		a.thresholds[i] = DatumGetFloat8(thr_datums[i]);
	}

	ReplayConfigDefault(&cfg);
	cfg.n_tenants = PG_GETARG_INT32(3);
	cfg.devices = PG_GETARG_INT32(4);
	cfg.draws = PG_GETARG_INT32(6);
	cfg.seed = (uint64_t) PG_GETARG_INT64(7);
	cfg.n_policies = npol;
	cfg.policies = (const char *const *) a.policies;
	cfg.n_thresholds = nthr;
	cfg.thresholds = a.thresholds;
	if (cfg.n_tenants < 1 || cfg.devices < 1 || cfg.draws < 1 ||
		cfg.draws > 1000 || cfg.devices > 1024)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tenants, devices and draws must be positive (draws at most 1000, devices at most 1024)")));
	if (strcmp(cost_model, "oracle") == 0)
		cfg.oracle_cost = 1;
	else
	{
		int			cm = PolicyCostKindFromName(cost_model);

		if (cm < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown cost model \"%s\"", cost_model),
					 errhint("Use none, size_linear, size_loglinear, size_gp or oracle.")));
		cfg.cost_model = (PolicyCostKind) cm;
	}

	/* read the files (the library allocates with malloc; freed below) */
	rc = ReplayReadCsv(quality_path, &a.quality, err, sizeof(err));
	if (rc != 0)
		ReplayError(&a, rc, "could not read the quality matrix", err);
	if (PG_GETARG_BOOL(9))
		ReplayOneMinus(&a.quality);
	cfg.quality = a.quality.data;
	cfg.n_rows = a.quality.rows;
	cfg.K = a.quality.cols;
	if (!PG_ARGISNULL(1))
	{
		rc = ReplayReadCsv(text_to_cstring(PG_GETARG_TEXT_PP(1)), &a.cost, err, sizeof(err));
		if (rc != 0)
			ReplayError(&a, rc, "could not read the cost matrix", err);
		if (a.cost.rows != a.quality.rows || a.cost.cols != a.quality.cols)
			ReplayError(&a, REPLAY_BAD_INPUT, "the cost matrix does not match",
						"it must have the quality matrix's rows and columns");
		cfg.cost = a.cost.data;
	}
	else if (!cfg.oracle_cost)
		cfg.cost_model = POLICY_COST_NONE;
	if (!PG_ARGISNULL(2))
	{
		rc = ReplayReadCsv(text_to_cstring(PG_GETARG_TEXT_PP(2)), &a.sizes_table, err, sizeof(err));
		if (rc != 0)
			ReplayError(&a, rc, "could not read the sizes", err);
		a.sizes = malloc(sizeof(double) * 2 * a.quality.rows);
		if (a.sizes == NULL)
			ReplayError(&a, REPLAY_NO_MEMORY, "out of memory", "sizes");
		rc = ReplayJoinById(&a.quality, &a.sizes_table, a.sizes, err, sizeof(err));
		if (rc != 0)
			ReplayError(&a, rc, "could not join the sizes", err);
		cfg.sizes = a.sizes;
	}
	else if (cfg.cost_model != POLICY_COST_NONE && !cfg.oracle_cost)
		ReplayError(&a, REPLAY_BAD_INPUT, "the cost model needs data-set sizes",
					"pass sizes_csv, or cost_model => 'none' or 'oracle'");

	/* a long replay stops on query cancel; the error is raised afterwards */
	cfg.cancel = ReplayInterrupted;
	rc = ReplayRun(&cfg, &a.out, err, sizeof(err));
	if (rc != 0)
	{
		if (InterruptPending)
		{
			ReplayArgsFree(&a);
			CHECK_FOR_INTERRUPTS();
		}
		ReplayError(&a, rc, "replay failed", err);
	}
	a.have_out = true;

	InitMaterializedSRF(fcinfo, 0);
	if (!curve)
	{
		for (int p = 0; p < a.out.n_policies; p++)
			for (int k = 0; k < a.out.n_thresholds; k++)
			{
				Datum		values[5];
				bool		nulls[5] = {0};
				double		med,
							max;
				double		t = a.out.median_time[p * a.out.n_thresholds + k];

				values[0] = CStringGetTextDatum(a.out.names[p]);
				values[1] = Float8GetDatum(a.out.thresholds[k]);
				values[2] = Float8GetDatum(t);
				nulls[2] = !isfinite(t);
				if (ReplaySpeedup(&a.out, 0, p, k, &med, &max) == 0 && isfinite(med))
					values[3] = Float8GetDatum(med);
				else
					nulls[3] = true;
				if (!nulls[3] && isfinite(max))
					values[4] = Float8GetDatum(max);
				else
					nulls[4] = true;
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	}
	else
	{
		for (int p = 0; p < a.out.n_policies; p++)
			for (int g = 0; g < a.out.grid_points; g++)
			{
				Datum		values[4];
				bool		nulls[4] = {0};

				values[0] = CStringGetTextDatum(a.out.names[p]);
				values[1] = Float8GetDatum(a.out.grid[g]);
				values[2] = Float8GetDatum(a.out.curve_mean[p * a.out.grid_points + g]);
				values[3] = Float8GetDatum(a.out.curve_median[p * a.out.grid_points + g]);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	}
	ReplayArgsFree(&a);
	return (Datum) 0;
}

/*
 * Run one statement as the bootstrap superuser, for a function that acts
 * on the caller's own rows.  Tenants have no UPDATE or DELETE privilege on
 * the tables the scheduler writes (which would also let them lock its rows
 * or tables); functions like easeml.cancel check ownership in the
 * statement itself.  They cannot be SECURITY DEFINER: they need to know
 * who called them.  Call between SPI_connect and SPI_finish.
 */
static int
ExecAsSuperuser(const char *sql, int nargs, Oid *types, Datum *values)
{
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	/* on error, transaction abort restores the identity */
	rc = SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return rc;
}

/*
 * easeml.drop_task(task): delete one of the caller's tasks with its runs;
 * the scheduler stops the task's running trainers when it notices their
 * runs are gone.
 */
PG_FUNCTION_INFO_V1(easeml_drop_task);

Datum
easeml_drop_task(PG_FUNCTION_ARGS)
{
	text	   *task = PG_GETARG_TEXT_PP(0);
	char	   *caller = GetUserNameFromId(GetUserId(), false);
	Oid			types[2] = {NAMEOID, TEXTOID};
	Datum		values[2];
	int64		task_id;
	bool		isnull;

	values[0] = DirectFunctionCall1(namein, CStringGetDatum(caller));
	values[1] = PointerGetDatum(task);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (ExecAsSuperuser("DELETE FROM easeml.tasks WHERE tenant = $1 AND name = $2 RETURNING id",
						2, types, values) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "could not delete the task");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist for tenant \"%s\"",
						text_to_cstring(task), caller)));
	task_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	EasemlWakeAtCommit();
	PG_RETURN_INT64(task_id);
}

/*
 * easeml.cancel(run_id): cancel a run of the caller's (any run, for a
 * superuser).  A queued run is cancelled at once; a running one gets its
 * cancel request and the scheduler stops its trainer.  Returns the run's
 * status; cancelling a cancelled run again just returns it.
 */
PG_FUNCTION_INFO_V1(easeml_cancel);

Datum
easeml_cancel(PG_FUNCTION_ARGS)
{
	int64		run_id = PG_GETARG_INT64(0);
	char	   *caller = GetUserNameFromId(GetUserId(), false);
	Oid			types[3] = {INT8OID, NAMEOID, BOOLOID};
	Datum		values[3];
	char	   *status;

	values[0] = Int64GetDatum(run_id);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(caller));
	values[2] = BoolGetDatum(superuser());

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (ExecAsSuperuser("UPDATE easeml.runs r"
						"   SET cancel_requested = true,"
						"       status = CASE WHEN r.status = 'queued' THEN 'cancelled' ELSE r.status END,"
						"       finished_at = CASE WHEN r.status = 'queued' THEN clock_timestamp() END,"
						"       error = CASE WHEN r.status = 'queued'"
						"                    THEN format('cancelled by %s before it started', $2) END"
						" WHERE r.id = $1 AND (r.tenant = $2 OR $3)"
						"   AND r.status IN ('queued', 'running') AND NOT r.cancel_requested"
						" RETURNING r.status",
						3, types, values) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not cancel the run");
	if (SPI_processed == 0)
	{
		if (ExecAsSuperuser("SELECT status FROM easeml.runs WHERE id = $1 AND (tenant = $2 OR $3)",
							3, types, values) != SPI_OK_SELECT)
			elog(ERROR, "could not look up the run");
		if (SPI_processed == 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("run %lld does not exist", (long long) run_id)));
		status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (strcmp(status, "cancelled") != 0 && strcmp(status, "running") != 0 &&
			strcmp(status, "queued") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("run %lld is already %s", (long long) run_id, status)));
	}
	else
		status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	/* SPI_finish frees SPI memory: copy to the caller's context first */
	{
		char	   *copy = SPI_palloc(strlen(status) + 1);

		strcpy(copy, status);
		status = copy;
	}
	SPI_finish();
	EasemlWakeAtCommit();
	PG_RETURN_TEXT_P(cstring_to_text(status));
}
