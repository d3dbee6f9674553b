/*-------------------------------------------------------------------------
 *
 * caller.c
 *	  Who called a SQL function: the caller's tenant name, and the status
 *	  of a run of the caller's.  For the SQL-callable functions that act on
 *	  the caller's own rows as the bootstrap superuser (drop_task, cancel,
 *	  run_log, deploy, rollback, refresh, the snapshot functions), which
 *	  row-level security does not guard.  Helpers, not SQL functions: they
 *	  live in the module, next to the identity switching they rely on
 *	  (src/module/identity.c), so that no file under src/sql/ calls another.
 *
 * IDENTIFICATION
 *	  src/module/caller.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "easeml.h"
#include "executor/spi.h"
#include "identity.h"
#include "miscadmin.h"
#include "utils/builtins.h"

/*
 * The caller's role name, for the statements that act on the caller's own
 * rows as the bootstrap superuser (drop_task, cancel, run_log, deploy,
 * rollback, refresh), which row-level security does not guard.  A tenant
 * is the role registered under its name (easeml.tenants.role_oid): a role
 * that has a registered tenant's name but is not that role (the tenant's
 * role was dropped and another made with its name) is refused, and sees
 * none of the tenant's rows through row-level security either.
 */
char *
EasemlCallerName(void)
{
	Oid			caller = GetUserId();
	char	   *name = GetUserNameFromId(caller, false);
	Oid			types[2] = {NAMEOID, OIDOID};
	Datum		values[2];
	bool		unbound;

	if (superuser_arg(caller))
		return name;
	values[0] = DirectFunctionCall1(namein, CStringGetDatum(name));
	values[1] = ObjectIdGetDatum(caller);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (EasemlExecAsSuperuser("SELECT 1 FROM easeml.tenants"
							  " WHERE name = $1 AND role_oid IS DISTINCT FROM $2",
							  2, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the tenant");
	unbound = SPI_processed > 0;
	SPI_finish();
	if (unbound)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" is not the role registered as tenant \"%s\"", name, name),
				 errdetail("The tenant's role was dropped and another role was made with its name."),
				 errhint("An administrator makes this role the tenant, with the old role's tasks, with SELECT easeml.add_tenant(%s), or removes the old tenant with DELETE FROM easeml.tenants WHERE name = %s.",
						 quote_literal_cstr(name), quote_literal_cstr(name))));
	return name;
}

/*
 * Status of a run the caller may read (any run, for a superuser), or NULL
 * when there is no such run of the caller's (the ownership test is in the
 * statement, as for every EasemlExecAsSuperuser caller).
 */
char *
EasemlOwnRunStatus(int64 run_id)
{
	Oid			types[3] = {INT8OID, NAMEOID, BOOLOID};
	Datum		values[3];
	MemoryContext caller_cxt = CurrentMemoryContext;
	char	   *status = NULL;

	values[0] = Int64GetDatum(run_id);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(EasemlCallerName()));
	values[2] = BoolGetDatum(superuser());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (EasemlExecAsSuperuser("SELECT status FROM easeml.runs WHERE id = $1 AND (tenant = $2 OR $3)",
							  3, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the run");
	if (SPI_processed == 1)
		status = MemoryContextStrdup(caller_cxt,
									 SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	SPI_finish();
	return status;
}
