/*-------------------------------------------------------------------------
 *
 * policy_choice.c
 *	  The scheduler records each choice of the "auto" policy (made off the
 *	  decision path by the refit cycle, src/core/autopolicy.c) in
 *	  easeml.policy_choices, with the candidates' replay scores and why.
 *
 * IDENTIFICATION
 *	  src/worker/policy_choice.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog.h"
#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "liveworld.h"
#include "policy_choice.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#define N_ARGS 12

/* A text[] or float8[] of a result's candidates. */
static Datum
CandidateArray(const AutoPolicyResult *res, bool scores)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(res->n_cand, 1));

	for (int i = 0; i < res->n_cand; i++)
		elems[i] = scores ? Float8GetDatum(res->score[i]) :
			CStringGetTextDatum(res->cand[i]);
	return PointerGetDatum(scores ?
						   construct_array(elems, res->n_cand, FLOAT8OID, 8, FLOAT8PASSBYVAL, 'd') :
						   construct_array(elems, res->n_cand, TEXTOID, -1, false, 'i'));
}

void
PolicyChoiceRecord(void)
{
	const AutoPolicyResult *res = LiveWorldAutoUnrecorded();
	Oid			types[N_ARGS] = {TEXTOID, TEXTOID, BOOLOID, TEXTOID, TEXTARRAYOID,
		FLOAT8ARRAYOID, TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, FLOAT8OID};
	Datum		values[N_ARGS];
	char		setting[sizeof(EasemlState->policy)];

	if (res == NULL)
		return;
	/* one attempt per choice: a failure is reported, not retried forever */
	LiveWorldAutoMarkRecorded();
	SpinLockAcquire(&EasemlState->mutex);
	strlcpy(setting, EasemlState->policy, sizeof(setting));
	SpinLockRelease(&EasemlState->mutex);

	values[0] = CStringGetTextDatum(setting);
	values[1] = CStringGetTextDatum(res->spec);
	/* chosen: a replay chose (not the fallback its rules fell back to) */
	values[2] = BoolGetDatum(res->have != 0 && !res->fallback);
	values[3] = CStringGetTextDatum(res->reason);
	values[4] = CandidateArray(res, false);
	values[5] = CandidateArray(res, true);
	values[6] = CStringGetTextDatum(res->measured_costs ? "seconds" : "runs");
	values[7] = CStringGetTextDatum(res->kind == DECISION_REGRESSION ? "regression" : "classification");
	values[8] = Int32GetDatum(res->rows);
	values[9] = Int32GetDatum(res->cols);
	values[10] = Int32GetDatum(res->tenants);
	values[11] = Float8GetDatum(res->seconds);

	CatalogBegin("easeml: recording the auto policy's choice");
	if (SPI_execute_with_args("INSERT INTO easeml.policy_choices (setting, policy, chosen, reason,"
							  " candidates, scores, score_unit, kind, history_rows, models, tenants,"
							  " replay_seconds)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $10 > 0 THEN $8 END,"
							  " $9, $10, $11, $12)",
							  12, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "easeml: could not record the auto policy's choice");
	CatalogCommit();
	ereport(LOG,
			(errmsg("easeml: policy auto %s %s",
					res->have && !res->fallback ? "chose" : "made no choice, runs",
					res->spec),
			 errdetail_internal("%s", res->reason)));
}
