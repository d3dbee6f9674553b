/*-------------------------------------------------------------------------
 *
 * trainer_jobs.c
 *	  The scheduler's side of easeml.trainer_jobs: a launch's token, the
 *	  job a launcher made of it, and the result its trainer reported.
 *
 * A trainer returns everything through the database (its progress, its
 * artifact, its result), never through files on the server: on a cluster
 * it runs on another machine.  Each launch gets a fresh random token; only
 * its SHA-256 digest is stored (src/sql/sql_trainer_token.c checks it).  All
 * functions run inside CatalogBegin/CatalogCommit.
 *
 * IDENTIFICATION
 *	  src/worker/trainer_jobs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "trainer_jobs.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#define TOKEN_BYTES 32

/* A new token: 32 random bytes in hex. */
char *
TrainerTokenNew(void)
{
	uint8		raw[TOKEN_BYTES];
	char	   *hex = palloc(TOKEN_BYTES * 2 + 1);

	if (!pg_strong_random(raw, sizeof(raw)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random token for a trainer")));
	hex[hex_encode((const char *) raw, sizeof(raw), hex)] = '\0';
	return hex;
}

static void
Run(const char *sql, int expect, int nargs, Oid *types, Datum *values, const char *nulls)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expect)
		elog(ERROR, "easeml: SPI_execute_with_args returned %s for \"%.60s...\"",
			 SPI_result_code_string(rc), sql);
}

/* A run is about to be launched: its launcher and its token's digest. */
void
TrainerJobRecord(int64 run_id, const char *launcher, const char *token)
{
	Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(run_id), CStringGetTextDatum(launcher),
	CStringGetTextDatum(token)};

	Run("INSERT INTO easeml.trainer_jobs (run_id, launcher, token_sha256)"
		" VALUES ($1, $2, sha256(convert_to($3, 'UTF8')))"
		" ON CONFLICT (run_id) DO UPDATE"
		"   SET launcher = EXCLUDED.launcher, token_sha256 = EXCLUDED.token_sha256,"
		"       job_id = NULL, submitted_at = clock_timestamp(), exit_code = NULL,"
		"       metrics = NULL, error = NULL, reported_at = NULL",
		SPI_OK_INSERT, 3, types, values, NULL);
}

/* The launcher made a job of it. */
void
TrainerJobSubmitted(int64 run_id, int64 job_id)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(run_id),
	CStringGetTextDatum(psprintf("%lld", (long long) job_id))};

	Run("UPDATE easeml.trainer_jobs SET job_id = $2 WHERE run_id = $1",
		SPI_OK_UPDATE, 2, types, values, NULL);
}

/* What the run's trainer reported, copied into cxt. */
void
TrainerJobReport(int64 run_id, MemoryContext cxt, TrainerReport *report)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};
	bool		isnull;

	memset(report, 0, sizeof(*report));
	Run("SELECT exit_code, metrics, error FROM easeml.trainer_jobs"
		" WHERE run_id = $1 AND reported_at IS NOT NULL",
		SPI_OK_SELECT, 1, types, values, NULL);
	if (SPI_processed != 1)
		return;
	report->reported = true;
	report->exit_code = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
		report->exit_code = -1;
	for (int col = 2; col <= 3; col++)
	{
		char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);

		if (v != NULL)
			v = MemoryContextStrdup(cxt, v);
		if (col == 2)
			report->metrics = v;
		else
			report->error = v;
	}
}

/*
 * Runs recorded as running whose trainer is a job of the given launcher,
 * oldest first; copied into cxt.
 */
int
TrainerJobsInFlight(const char *launcher, MemoryContext cxt, TrainerJobInFlight **jobs)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(launcher)};
	TrainerJobInFlight *out;
	int			n;

	Run("SELECT r.id, j.job_id::int8, coalesce(r.device, ''), coalesce(r.started_at, j.submitted_at)"
		"  FROM easeml.runs r JOIN easeml.trainer_jobs j ON j.run_id = r.id"
		" WHERE r.status = 'running' AND j.launcher = $1 AND j.job_id IS NOT NULL"
		" ORDER BY r.id",
		SPI_OK_SELECT, 1, types, values, NULL);
	n = (int) SPI_processed;
	out = MemoryContextAllocZero(cxt, sizeof(TrainerJobInFlight) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		out[i].run_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		out[i].job_id = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		out[i].device = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 3));
		out[i].started = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
	}
	*jobs = out;
	return n;
}
