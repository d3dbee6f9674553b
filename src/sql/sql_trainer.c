/*-------------------------------------------------------------------------
 *
 * sql_trainer.c
 *	  easeml_trainer.attach(run): a trainer's database session registers
 *	  itself, so that the scheduler can end it when the trainer ends (the
 *	  registry: src/module/trainer_session.c).
 *
 * IDENTIFICATION
 *	  src/sql/sql_trainer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "module/easeml.h"
#include "fmgr.h"
#include "miscadmin.h"

PG_FUNCTION_INFO_V1(easeml_trainer_attach);

/*
 * easeml_trainer.attach(run_id): record this backend as the database
 * session of the run's trainer (superuser only; a trainer that is not one
 * proves itself with the run's token, src/sql/sql_trainer_token.c).
 */
Datum
easeml_trainer_attach(PG_FUNCTION_ARGS)
{
	int64		run_id = PG_GETARG_INT64(0);

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may attach a trainer session")));
	if (run_id <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid run id %lld", (long long) run_id)));
	TrainerSessionRegister(run_id);
	PG_RETURN_VOID();
}
