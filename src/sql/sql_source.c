/*-------------------------------------------------------------------------
 *
 * sql_source.c
 *	  Reading a task's source safely.  The trainer reads a task's rows in
 *	  a data session (easeml_trainer.data_session), and the declaration
 *	  trigger reads the source to count rows and classes
 *	  (easeml._read_source); both read as the tenant, inside a read-only
 *	  security-restricted operation (src/module/identity.c), so a function a
 *	  tenant's view calls can neither change role nor write.
 *
 * IDENTIFICATION
 *	  src/sql/sql_source.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(easeml_trainer_data_session);
PG_FUNCTION_INFO_V1(easeml_read_source);
PG_FUNCTION_INFO_V1(easeml_view_base_column);

/*
 * easeml_trainer.data_session(run_id): for the rest of the current
 * transaction, act as the run's tenant inside a security-restricted
 * operation.  The trainer calls it before COPYing the task's rows, so the
 * rows are read with exactly the tenant's privileges and row-level
 * security, and any function a tenant's view calls cannot change role
 * (SET ROLE, RESET ROLE and SET SESSION AUTHORIZATION are refused in a
 * security-restricted operation).  The caller's identity comes back when
 * the transaction ends, by commit or abort.  Superuser only: the execute
 * privilege is revoked from PUBLIC, and the caller is checked again here
 * (or the trainer that proved the run's token); the run must be running.
 */
Datum
easeml_trainer_data_session(PG_FUNCTION_ARGS)
{
	int64		run_id = PG_GETARG_INT64(0);
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	char	   *tenant;
	Oid			roleid;
	Oid			bound;
	bool		bound_null;
	bool		running;
	bool		running_null;

	/* a superuser, or a trainer that proved the run's token */
	if (!TrainerAuthorized(run_id))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser or the run's trainer may open a trainer data session")));
	if (!IsTransactionBlock() || GetCurrentTransactionNestLevel() != 1)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("easeml_trainer.data_session() must be called at the top level of a transaction block"),
				 errhint("Run BEGIN first; the tenant's identity ends with the transaction.")));

	/* the run's row, read as a superuser (a trainer's login sees no rows) */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (EasemlExecAsSuperuser("SELECT r.tenant::text, n.role_oid, r.status::text = 'running'"
							  "  FROM easeml.runs r"
							  "  LEFT JOIN easeml.tenants n ON n.name = r.tenant"
							  " WHERE r.id = $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up run");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run %lld does not exist", (long long) run_id)));
	tenant = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	tenant = MemoryContextStrdup(TopTransactionContext, tenant);
	bound = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
										   &bound_null));
	running = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3,
										 &running_null));
	SPI_finish();

	/*
	 * only while the run runs: a trainer session that stays open after its
	 * run finished (or a proof that outlived it) reads nothing more
	 */
	if (running_null || !running)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run %lld is not running", (long long) run_id),
				 errhint("A trainer data session is for a running run's trainer only.")));

	/*
	 * [binding] the role registered as the tenant: a role made later with
	 * its name is not the tenant, and never reads the tenant's data
	 */
	roleid = get_role_oid(tenant, false);
	if (bound_null || bound != roleid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" is not the role registered as tenant \"%s\"", tenant, tenant),
				 errdetail("The tenant's role was dropped and another role was made with its name."),
				 errhint("An administrator makes this role the tenant with SELECT easeml.add_tenant(%s).",
						 quote_literal_cstr(tenant))));
	EasemlBecomeTenantForTransaction(roleid);

	PG_RETURN_DATUM(DirectFunctionCall1(namein, CStringGetDatum(tenant)));
}

/*
 * easeml._read_source(query): the first row of a query over a task's
 * source, as jsonb (NULL without rows).  The declaration trigger
 * (easeml._validate_task) reads the source through it, the way the trainer
 * does: as the current user (the declaring tenant), inside a
 * security-restricted operation and read-only, so that the view's code
 * cannot RESET ROLE when a superuser declares after SET ROLE, nor write.
 * Settings the view's code changes are undone, as PostgreSQL does around
 * index expressions.  Anyone but a superuser may call it: it never reads
 * more than the caller could read itself, and easeml reads no tenant's data
 * with a superuser's privileges.
 */
Datum
easeml_read_source(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MemoryContext caller = CurrentMemoryContext;
	EasemlIdentity saved;
	Jsonb	   *volatile result = NULL;

	EasemlBeginTenant(&saved, GetUserId());
	PG_TRY();
	{
		bool		isnull;

		SPIPlanPtr	plan;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		/* one statement only: nothing can be appended to the wrapper */
		plan = SPI_prepare(psprintf("SELECT pg_catalog.to_jsonb(q) FROM (%s) q", query),
						   0, NULL);
		if (plan == NULL)
			elog(ERROR, "could not prepare the read of the source: %s",
				 SPI_result_code_string(SPI_result));
		if (list_length(SPI_plan_get_plan_sources(plan)) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("the read of a source must be a single query")));
		if (SPI_execute_plan(plan, NULL, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read the source");
		if (SPI_processed > 0)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
			{
				MemoryContext old = MemoryContextSwitchTo(caller);

				result = DatumGetJsonbPCopy(d);
				MemoryContextSwitchTo(old);
			}
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		EasemlEndIdentity(&saved);
	}
	PG_END_TRY();
	if (result == NULL)
		PG_RETURN_NULL();
	PG_RETURN_JSONB_P(result);
}

/*
 * easeml._view_base_column(rel, att): the column of a table (or other
 * relation that is not a view) that column att of view rel shows, through
 * any stack of simple views, as (base, base_att); NULL when rel is not a
 * view, when a view on the way is not simple or the column is not a plain
 * column of the view's relation.  Simple is what PostgreSQL makes
 * automatically updatable (view_query_is_auto_updatable): one relation in
 * FROM, no DISTINCT, GROUP BY, HAVING, LIMIT, set operation, aggregate,
 * window function or set-returning function; a WHERE clause is allowed (it
 * keeps a subset of the rows, and a key of the table is still a key of the
 * view).  The declaration looks through a view this way for keys
 * declared on its table (easeml._key_reason, docs/data.md section 2).  It
 * reads only catalog information anyone can read (pg_get_viewdef shows the
 * same), taking the lock a read of the view takes.
 */
Datum
easeml_view_base_column(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	AttrNumber	att = PG_GETARG_INT16(1);
	TupleDesc	tupdesc;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	bool		seen_view = false;
	int			depth;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	/* views cannot refer to themselves; the bound only guards the loop */
	for (depth = 0; depth < 100; depth++)
	{
		Relation	rel;
		Query	   *q;
		TargetEntry *tle;
		RangeTblRef *rtr;
		RangeTblEntry *rte;
		Var		   *var;

		rel = try_relation_open(relid, AccessShareLock);
		if (rel == NULL)
			PG_RETURN_NULL();
		if (rel->rd_rel->relkind != RELKIND_VIEW)
		{
			relation_close(rel, AccessShareLock);
			if (!seen_view)
				PG_RETURN_NULL();
			values[0] = ObjectIdGetDatum(relid);
			values[1] = Int16GetDatum(att);
			PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
															  values, nulls)));
		}
		seen_view = true;
		q = get_view_query(rel);
		if (view_query_is_auto_updatable(q, false) != NULL)
		{
			relation_close(rel, AccessShareLock);
			PG_RETURN_NULL();
		}
		tle = get_tle_by_resno(q->targetList, att);
		rtr = linitial_node(RangeTblRef, q->jointree->fromlist);
		rte = rt_fetch(rtr->rtindex, q->rtable);
		if (tle == NULL || tle->resjunk || !IsA(tle->expr, Var) ||
			rte->rtekind != RTE_RELATION)
		{
			relation_close(rel, AccessShareLock);
			PG_RETURN_NULL();
		}
		var = (Var *) tle->expr;
		if (var->varlevelsup != 0 || var->varno != rtr->rtindex || var->varattno <= 0)
		{
			relation_close(rel, AccessShareLock);
			PG_RETURN_NULL();
		}
		relid = rte->relid;
		att = var->varattno;
		relation_close(rel, AccessShareLock);
	}
	PG_RETURN_NULL();
}
