/*-------------------------------------------------------------------------
 *
 * sql_predict_stats.c
 *	  easeml._prediction_counts(): the counters of what easeml.predict()
 *	  saw, per task and serving run (the view easeml.prediction_stats;
 *	  docs/predict.md, "Input statistics").  The counters themselves, in
 *	  shared memory, are src/module/predict_stats.c.
 *
 * IDENTIFICATION
 *	  src/sql/sql_predict_stats.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "module/predict_stats.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(easeml_prediction_counts);

/*
 * easeml._prediction_counts(): the counters of the tasks of this database
 * the caller sees (easeml.tasks read as the caller, under row-level security: a tenant's
 * own, every task for a superuser), as (task_id, run_id, rows,
 * unknown_rows, imputed_rows, since, last_at).  easeml.prediction_stats
 * is the view over it.
 */
Datum
easeml_prediction_counts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PredictStatsEntry *copy;
	int			n = 0;
	Datum	   *ids;
	Oid			argtype = INT8ARRAYOID;
	Datum		arg;
	int64	   *seen = NULL;
	int			nseen = 0;

	InitMaterializedSRF(fcinfo, 0);

	/* a copy, so that no lock is held while the tasks are read */
	copy = palloc(sizeof(PredictStatsEntry) * PREDICT_STATS_SLOTS);
	n = PredictStatsCopy(copy);
	if (n == 0)
		return (Datum) 0;

	/* which of these tasks the caller may see */
	ids = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(copy[i].task_id);
	arg = PointerGetDatum(construct_array(ids, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT t.id FROM easeml.tasks t WHERE t.id = ANY ($1)",
							  1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read easeml.tasks");
	seen = palloc(sizeof(int64) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		seen[nseen++] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();

	for (int i = 0; i < n; i++)
	{
		Datum		values[7];
		bool		nulls[7] = {false};
		bool		visible = false;

		for (int k = 0; k < nseen && !visible; k++)
			visible = seen[k] == copy[i].task_id;
		if (!visible)
			continue;
		values[0] = Int64GetDatum(copy[i].task_id);
		values[1] = Int64GetDatum(copy[i].run_id);
		values[2] = Int64GetDatum((int64) copy[i].rows);
		values[3] = Int64GetDatum((int64) copy[i].unknown);
		values[4] = Int64GetDatum((int64) copy[i].imputed);
		values[5] = TimestampTzGetDatum(copy[i].since);
		values[6] = TimestampTzGetDatum(copy[i].last_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
