/*-------------------------------------------------------------------------
 *
 * sql_explain.c
 *	  easeml.explain(task): what the scheduler would train next for a task
 *	  and why.
 *
 * The backend builds the scheduler's world itself, with the scheduler's
 * code (src/worker/liveworld.c, src/core/decision_*.c, src/core/refit.c): the catalog is
 * loaded as the scheduler loads it, the priors and the cost model are
 * fitted as a refit cycle fits them (the own prior of the explained task
 * only), and the task's candidates are ranked by the policy's acquisition.
 * The scheduler's own world may lag by one refit cycle (at most 10 s) and
 * places candidates on devices; explain ignores devices.
 *
 * The caller must see the task (row-level security): a tenant explains its
 * own tasks only.  The catalog is then read as the bootstrap superuser,
 * since the priors learn from every tenant's results; what is returned is
 * about the caller's task only, and other tenants' tasks are never named.
 *
 * IDENTIFICATION
 *	  src/sql/sql_explain.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "worker/catalog.h"
#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "worker/liveworld.h"
#include "miscadmin.h"
#include "core/policy.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#define EXPLAIN_MAX 50

/* The task's status as the caller sees it, or NULL if it cannot see it. */
static char *
VisibleStatus(int64 task_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(task_id)};
	char	   *status = NULL;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
	if (SPI_execute_with_args("SELECT status FROM easeml.tasks WHERE id = $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "easeml: could not read easeml.tasks");
	if (SPI_processed == 1)
		status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	status = status ? MemoryContextStrdup(CurrentMemoryContext, status) : NULL;
	SPI_finish();
	return status;
}

/* One output row; a NULL candidate gives a row with only the reason. */
static void
PutRow(ReturnSetInfo *rsinfo, const CatState *state, int rank,
	   const DecisionCandidate *c, const char *why)
{
	Datum		values[7];
	bool		nulls[7] = {0};

	if (c == NULL)
	{
		for (int i = 0; i < 6; i++)
			nulls[i] = true;
	}
	else
	{
		values[0] = Int32GetDatum(rank);
		values[1] = CStringGetTextDatum(state->models[c->arm].name);
		values[2] = Float8GetDatum(c->mu);
		values[3] = Float8GetDatum(c->sigma);
		values[4] = Float8GetDatum(c->cost);
		values[5] = Float8GetDatum(c->acq);
	}
	if (why)
		values[6] = CStringGetTextDatum(why);
	else
		nulls[6] = true;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * easeml.explain(task bigint, candidates int DEFAULT 5): the task's
 * candidates best first, the first row saying whether and when the task
 * is served next, what ranks the candidates and what its prior learned
 * from.
 */
PG_FUNCTION_INFO_V1(easeml_explain);

Datum
easeml_explain(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		task_id;
	int			max;
	char	   *status;
	CatState	state;
	DecisionCandidate cand[EXPLAIN_MAX];
	StringInfoData why;
	LiveSettings settings;
	PolicyParams params;
	char	   *auto_spec = NULL;
	char		auto_run[POLICY_SPEC_LEN];
	int			n = -1;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("task must not be NULL"),
				 errhint("Pass the id of one of your tasks: SELECT id, name FROM easeml.tasks.")));
	task_id = PG_GETARG_INT64(0);
	max = PG_ARGISNULL(1) ? 5 : PG_GETARG_INT32(1);
	if (max < 1 || max > EXPLAIN_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("candidates must be between 1 and %d, not %d", EXPLAIN_MAX, max)));
	status = VisibleStatus(task_id);
	if (status == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task %lld does not exist", (long long) task_id),
				 errhint("SELECT id, name FROM easeml.tasks lists your tasks.")));

	InitMaterializedSRF(fcinfo, 0);
	initStringInfo(&why);
	if (strcmp(status, "active") != 0)
	{
		appendStringInfo(&why, "the task is %s: the scheduler trains nothing for it%s",
						 status, strcmp(status, "completed") == 0 ?
						 " (queue a run with easeml.enqueue, or set it active again)" :
						 strcmp(status, "failed") == 0 ?
						 " (fix the cause and set it active again)" : "");
		PutRow(rsinfo, NULL, 0, NULL, why.data);
		return (Datum) 0;
	}

	CatalogLoadAsScheduler(&state, &auto_spec);
	settings.policy = state.policy;
	/*
	 * "auto" ranks as the scheduler runs it: its last recorded choice with
	 * the setting's options after auto
	 */
	if (PolicyParseSpec(state.policy, &params, NULL, 0) == POLICY_OK && params.auto_select)
		settings.policy = PolicyAutoRunning(&params, auto_spec, auto_run,
											sizeof(auto_run));
	settings.slots = Max(easeml_max_workers, 1);
	settings.tenant_cap = easeml_max_parallel_per_tenant;

	/* the world of this process only lives for this call */
	LiveWorldReset();
	PG_TRY();
	{
		if (LiveWorldSync(&state, &settings))
		{
			LiveWorldRefitNow(&state, task_id);
			n = LiveWorldExplain(&state, task_id, cand, max, &why);
			if (strcmp(settings.policy, state.policy) != 0)
				appendStringInfo(&why, "; policy: %s (auto) runs %s%s", state.policy,
								 settings.policy, auto_spec ? ", chosen by replay on the history" :
								 " until the scheduler has chosen by replay on the history");
			else
				appendStringInfo(&why, "; policy: %s", state.policy);
		}
	}
	PG_FINALLY();
	{
		LiveWorldReset();
	}
	PG_END_TRY();

	if (n < 0)
	{
		resetStringInfo(&why);
		appendStringInfoString(&why, "the scheduler cannot choose for it now (no enabled model, or an unknown policy)");
		PutRow(rsinfo, NULL, 0, NULL, why.data);
	}
	else if (n == 0)
		PutRow(rsinfo, NULL, 0, NULL, why.data);
	for (int i = 0; i < n; i++)
	{
		const CatModel *m = &state.models[cand[i].arm];
		const char *base = i == 0 ? why.data : "runner-up";

		/* [spaces] a generated candidate says so, and what it descends from */
		if (m->generated_for != 0)
			base = psprintf("%s; generated: a new configuration around %s (docs/scheduler.md 7.9)",
							base, m->root >= 0 ? state.models[m->root].name : "a model not enabled now");
		PutRow(rsinfo, &state, i + 1, &cand[i], base);
	}
	return (Datum) 0;
}
