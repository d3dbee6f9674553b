/*-------------------------------------------------------------------------
 *
 * sql_deploy.c
 *	  easeml.deploy and easeml.rollback: which run of a task serves
 *	  predictions (docs/results.md).
 *
 * Tenants may read easeml.deployments but not write it: the rules (a run
 * of the task, succeeded, with its artifact; one active deployment per
 * task; rollback to the latest earlier deployment not rolled back) live in
 * easeml._deploy and easeml._rollback, which nobody but the superuser may
 * call.  These functions pass them the caller's role and call them as the
 * bootstrap superuser; they cannot be SECURITY DEFINER themselves, since
 * they need to know who called them (as src/sql/sql_tenant.c).
 *
 * IDENTIFICATION
 *	  src/sql/sql_deploy.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

/*
 * Run an internal function that returns one bigint as the bootstrap
 * superuser, with the caller's role name as its first argument; the other
 * arguments are text (NULL when isnull says so).  The function's own
 * errors reach the caller as they are.
 */
static int64
CallAsSuperuser(const char *sql, int ntext, Datum *text_args, bool *isnull)
{
	Oid			types[3] = {NAMEOID, TEXTOID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	int			rc;
	bool		result_null;
	int64		result;

	Assert(ntext <= 2);
	/* [binding] the caller, refused if it only has a tenant's name */
	values[0] = DirectFunctionCall1(namein, CStringGetDatum(EasemlCallerName()));
	for (int i = 0; i < ntext; i++)
	{
		values[i + 1] = text_args[i];
		nulls[i + 1] = isnull[i] ? 'n' : ' ';
	}

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	rc = EasemlExecAsSuperuser(sql, ntext + 1, types, values, nulls, false, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not run \"%s\"", sql);
	result = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										 1, &result_null));
	if (result_null)
		elog(ERROR, "\"%s\" returned NULL", sql);
	SPI_finish();
	return result;
}

/* easeml.deploy(task text, what text DEFAULT 'best'): returns the run id. */
PG_FUNCTION_INFO_V1(easeml_deploy);

Datum
easeml_deploy(PG_FUNCTION_ARGS)
{
	Datum		args[2];
	bool		isnull[2];

	for (int i = 0; i < 2; i++)
	{
		isnull[i] = PG_ARGISNULL(i);
		args[i] = isnull[i] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	PG_RETURN_INT64(CallAsSuperuser("SELECT easeml._deploy($1, $2, $3)", 2, args, isnull));
}

/* easeml.deploy(task text, run_id bigint): returns the run id. */
PG_FUNCTION_INFO_V1(easeml_deploy_run);

Datum
easeml_deploy_run(PG_FUNCTION_ARGS)
{
	Datum		args[2];
	bool		isnull[2];

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("run_id must not be NULL"),
				 errhint("Pass a run id, or 'best' or 'latest'.")));
	if (PG_GETARG_INT64(1) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("run id must be positive, not " INT64_FORMAT, PG_GETARG_INT64(1)),
				 errhint("SELECT run_id, model, score FROM easeml.leaderboard lists your succeeded runs.")));
	isnull[0] = PG_ARGISNULL(0);
	args[0] = isnull[0] ? (Datum) 0 : PG_GETARG_DATUM(0);
	isnull[1] = false;
	args[1] = CStringGetTextDatum(psprintf(INT64_FORMAT, PG_GETARG_INT64(1)));
	PG_RETURN_INT64(CallAsSuperuser("SELECT easeml._deploy($1, $2, $3)", 2, args, isnull));
}

/* easeml.rollback(task text): returns the run id deployed again. */
PG_FUNCTION_INFO_V1(easeml_rollback);

Datum
easeml_rollback(PG_FUNCTION_ARGS)
{
	Datum		args[1];
	bool		isnull[1];

	isnull[0] = PG_ARGISNULL(0);
	args[0] = isnull[0] ? (Datum) 0 : PG_GETARG_DATUM(0);
	PG_RETURN_INT64(CallAsSuperuser("SELECT easeml._rollback($1, $2)", 1, args, isnull));
}
