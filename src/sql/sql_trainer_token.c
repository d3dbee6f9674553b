/*-------------------------------------------------------------------------
 *
 * sql_trainer_token.c
 *	  A trainer proves that it is a run's trainer with the run's token.
 *
 * A trainer on another machine (a Slurm compute node) connects as a login
 * role with no privilege of its own (docs/scale-out.md).  The scheduler
 * gives each launch a random token, keeps only its SHA-256 digest in
 * easeml.trainer_jobs, and hands the token to the trainer in its
 * environment.  easeml_trainer.attach(run, token) checks it while the run
 * is running and remembers the run in this backend's memory, where
 * nothing a tenant's code does in the same session (its view runs there
 * during the data session) can change it.  The trainer's functions call
 * easeml._trainer_authorize(run) first: a superuser session may act for
 * any run, any other only for the run it proved.  The local launcher uses
 * the same path, with the bootstrap superuser as its login.  The proved
 * run and TrainerAuthorized are src/module/trainer_session.c's, since
 * other SQL files ask too (src/sql/sql_source.c).
 *
 * IDENTIFICATION
 *	  src/sql/sql_trainer_token.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(easeml_trainer_attach_token);
PG_FUNCTION_INFO_V1(easeml_trainer_authorize);

/*
 * easeml_trainer.attach(run_id, token): SECURITY DEFINER, so the lookup
 * runs as the extension's owner.  A wrong token and a run that is not
 * running get the same error, so the answer tells nothing about runs.
 */
Datum
easeml_trainer_attach_token(PG_FUNCTION_ARGS)
{
	int64		run_id = PG_GETARG_INT64(0);
	text	   *token = PG_GETARG_TEXT_PP(1);
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2] = {Int64GetDatum(run_id), PointerGetDatum(token)};
	bool		valid;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT 1 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id"
							  " WHERE j.run_id = $1 AND r.status = 'running'"
							  "   AND j.token_sha256 = sha256(convert_to($2, 'UTF8'))",
							  2, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the run's token");
	valid = SPI_processed == 1;
	SPI_finish();
	if (!valid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("not the trainer of run %lld: the token does not match a running run",
						(long long) run_id)));
	/*
	 * Registered first: a session the scheduler cannot end with its run
	 * (the registry is full, an error) must not be left proved.
	 */
	TrainerSessionRegister(run_id);
	TrainerSessionProved(run_id);
	PG_RETURN_VOID();
}

/* easeml._trainer_authorize(run_id): raise unless TrainerAuthorized. */
Datum
easeml_trainer_authorize(PG_FUNCTION_ARGS)
{
	int64		run_id = PG_GETARG_INT64(0);

	if (!TrainerAuthorized(run_id))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("this session may not act as the trainer of run %lld", (long long) run_id),
				 errhint("A trainer first proves itself with easeml_trainer.attach(run, token).")));
	PG_RETURN_VOID();
}
