/*-------------------------------------------------------------------------
 *
 * sql_cost.c
 *	  easeml._cost_estimates(), behind the view easeml.cost_estimates: the
 *	  estimates the scheduler's cost model gives every enabled candidate of
 *	  every task the caller can see.
 *
 * The cost model is fitted as a refit cycle of the scheduler fits it
 * (src/core/costmodel.c, from every tenant's measured runs, read as the
 * bootstrap superuser as easeml.explain does), and each task's estimates
 * are CostTaskEstimate's on its size and its own measured runs, as in the
 * scheduler's world (src/core/decision_*.c).  The scheduler's model may lag by
 * one refit cycle (at most 10 s), and it scales the estimates of other
 * device kinds (docs/devices.md); these are the CPU's.  Tasks and runs are
 * read as the caller: row-level security shows a tenant its own.
 *
 * IDENTIFICATION
 *	  src/sql/sql_cost.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "worker/catalog.h"
#include "core/costmodel.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

/* The caller's tasks x their enabled models, with the measured seconds. */
#define TASK_MODELS_SQL \
	"SELECT t.id, greatest(t.n_rows * coalesce(t.folds, 1), 1)::float8," \
	"       greatest(cardinality(t.features), 1)::float8," \
	"       CASE WHEN t.kind = 'regression' THEN 1" \
	"            ELSE greatest(coalesce(t.n_classes, 2), 2) END::float8," \
	"       m.id," \
	"       (SELECT max(r.seconds) FROM easeml.runs r" \
	"         WHERE r.task_id = t.id AND r.model_id = m.id AND r.status = 'succeeded'" \
	"           AND r.seconds > 0 AND coalesce(r.device_kind, 'cpu') = 'cpu'" \
	"           AND r.purpose = 'select')," \
	"       greatest(coalesce(t.folds, 1), 1)::float8," \
	"       (SELECT max((r.metrics ->> 'bins')::float8) FROM easeml.runs r" \
	"         WHERE r.task_id = t.id AND r.status = 'succeeded' AND r.purpose = 'select'" \
	"           AND jsonb_typeof(r.metrics -> 'bins') = 'number')," \
	/* the passes of the run whose seconds are measured (catalog_runs.c) */ \
	"       (SELECT CASE WHEN jsonb_typeof(r.metrics -> 'epochs') = 'number'" \
	"                    THEN (r.metrics ->> 'epochs')::float8 END" \
	"          FROM easeml.runs r" \
	"         WHERE r.task_id = t.id AND r.model_id = m.id AND r.status = 'succeeded'" \
	"           AND r.seconds > 0 AND coalesce(r.device_kind, 'cpu') = 'cpu'" \
	"           AND r.purpose = 'select'" \
	"         ORDER BY r.seconds DESC, r.finished_at, r.id LIMIT 1)" \
	"  FROM easeml.tasks t JOIN easeml.models m ON m.enabled AND t.kind = ANY (m.kinds)" \
	"   AND (m.generated_for IS NULL OR m.generated_for = t.id)" \
	" ORDER BY t.id, m.id"

static double
Float8Col(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? NAN : DatumGetFloat8(d);
}

/* Estimates of one task's rows [from, to) of the SPI result. */
static void
EmitTask(ReturnSetInfo *rsinfo, const CostModel *model, const CatState *state,
		 uint64 from, uint64 to, double *seconds, double *passes, double *est)
{
	TupleDesc	desc = SPI_tuptable->tupdesc;
	HeapTuple	first = SPI_tuptable->vals[from];
	int		   *arm = palloc(sizeof(int) * (to - from));
	bool		isnull;

	for (int k = 0; k < state->n_models; k++)
		seconds[k] = passes[k] = NAN;
	for (uint64 i = from; i < to; i++)
	{
		int32		id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], desc, 5, &isnull));

		/* -1: not loaded (a generated candidate of a task not active) */
		arm[i - from] = CatalogModelIndex(state, id);
		if (arm[i - from] >= 0)
		{
			seconds[arm[i - from]] = Float8Col(SPI_tuptable->vals[i], desc, 6);
			passes[arm[i - from]] = Float8Col(SPI_tuptable->vals[i], desc, 9);
		}
	}
	(void) CostTaskEstimate(model, Float8Col(first, desc, 2), Float8Col(first, desc, 3),
							Float8Col(first, desc, 4), Float8Col(first, desc, 7),
							Float8Col(first, desc, 8), seconds, passes, NULL, NULL, est);
	for (uint64 i = from; i < to; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {0};
		int			k = arm[i - from];

		if (k < 0)
			continue;
		values[0] = SPI_getbinval(first, desc, 1, &isnull);
		values[1] = Int32GetDatum(state->models[k].id);
		values[2] = Float8GetDatum(est[k]);
		values[3] = CStringGetTextDatum(isnan(seconds[k]) ? "estimated" : "measured");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pfree(arm);
}

PG_FUNCTION_INFO_V1(easeml_cost_estimates);

Datum
easeml_cost_estimates(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	CatState	state;
	CostModel	model;
	CostData	data;
	double	   *seconds,
			   *passes,
			   *est;
	uint64		from = 0;

	InitMaterializedSRF(fcinfo, 0);
	CatalogLoadAsScheduler(&state, NULL);
	if (state.n_models == 0)
		return (Datum) 0;
	if (CostModelFitData(&model, state.cost_arms, state.n_models,
						 CatalogCostData(&state, &data)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not fit the cost model")));
	seconds = palloc(sizeof(double) * state.n_models);
	passes = palloc(sizeof(double) * state.n_models);
	est = palloc(sizeof(double) * state.n_models);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "easeml: SPI_connect failed");
		if (SPI_execute(TASK_MODELS_SQL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "easeml: could not read the tasks");
		for (uint64 i = 1; i <= SPI_processed; i++)
		{
			bool		isnull;

			if (i < SPI_processed &&
				DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull)) ==
				DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[from], SPI_tuptable->tupdesc, 1, &isnull)))
				continue;
			EmitTask(rsinfo, &model, &state, from, i, seconds, passes, est);
			from = i;
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		CostModelFree(&model);
	}
	PG_END_TRY();
	return (Datum) 0;
}
