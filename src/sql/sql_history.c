/*-------------------------------------------------------------------------
 *
 * sql_history.c
 *	  easeml._csv_cells(): a quality-matrix CSV read by the shared reader
 *	  (src/core/csv.c through ReplayParseCsv), for easeml.load_history.
 *
 * load_history reads the file with pg_read_file (so its permission rules
 * apply) and hands the text here: the history loader and the replay
 * simulator then agree on every CSV detail (quotes, line breaks inside
 * quotes, CRLF, missing cells, subnormal numbers, repeated row ids).
 *
 * IDENTIFICATION
 *	  src/sql/sql_history.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "funcapi.h"
#include "core/replay.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(easeml_csv_cells);

/* Put every cell of a parsed matrix into the function's tuplestore. */
static void
EmitCells(ReturnSetInfo *rsinfo, const ReplayMatrix *m)
{
	for (int i = 0; i < m->rows; i++)
		for (int j = 0; j < m->cols; j++)
		{
			Datum		values[5];
			bool		nulls[5] = {0};
			double		v = m->data[(size_t) i * m->cols + j];

			values[0] = Int32GetDatum((int32) m->row_lines[i]);
			values[1] = Int32GetDatum(j + 2);
			values[2] = CStringGetTextDatum(m->row_ids[i]);
			values[3] = CStringGetTextDatum(m->col_names[j]);
			values[4] = Float8GetDatum(v);
			nulls[4] = isnan(v);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

/*
 * easeml._csv_cells(csv text, path text): one row per cell of the matrix
 * (line, column, row id, column header, value; value NULL when missing).
 * path only names the file in error messages.
 */
Datum
easeml_csv_cells(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *csv = PG_GETARG_TEXT_PP(0);
	char	   *path = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ReplayMatrix m;
	char		err[512];
	int			rc;

	rc = ReplayParseCsv(VARDATA_ANY(csv), VARSIZE_ANY_EXHDR(csv), &m, err, sizeof(err));
	if (rc == REPLAY_NO_MEMORY)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory reading \"%s\"", path)));
	if (rc != REPLAY_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("could not read \"%s\": %s", path, err),
				 errhint("The first line names the models; each further line is a dataset id followed by one quality per model.")));

	InitMaterializedSRF(fcinfo, 0);
	PG_TRY();
	{
		EmitCells(rsinfo, &m);
	}
	PG_FINALLY();
	{
		/* the matrix is malloc'd: free it on the error path too */
		ReplayMatrixFree(&m);
	}
	PG_END_TRY();
	return (Datum) 0;
}
