/*-------------------------------------------------------------------------
 *
 * sql_status.c
 *	  SQL-callable functions about the scheduler itself: waking it at
 *	  commit, its status from shared memory and the policy grammar it
 *	  knows (names, options, what a setting stands for).
 *
 * IDENTIFICATION
 *	  src/sql/sql_status.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "module/easeml.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "core/policy.h"
#include "lib/stringinfo.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(easeml_wake_scheduler);
PG_FUNCTION_INFO_V1(easeml_wake_trigger);
PG_FUNCTION_INFO_V1(easeml_policy_valid);
PG_FUNCTION_INFO_V1(easeml_policies);
PG_FUNCTION_INFO_V1(easeml_policy_options);
PG_FUNCTION_INFO_V1(easeml_policy_spec);
PG_FUNCTION_INFO_V1(easeml_policy_auto);
PG_FUNCTION_INFO_V1(easeml_policy_fallback);
PG_FUNCTION_INFO_V1(easeml_policy_candidates);
PG_FUNCTION_INFO_V1(easeml_policy_running);
PG_FUNCTION_INFO_V1(easeml_scheduler_status);

/*
 * easeml.wake_scheduler(): wake the scheduler when this transaction
 * commits.
 */
Datum
easeml_wake_scheduler(PG_FUNCTION_ARGS)
{
	EasemlWakeAtCommit();
	PG_RETURN_VOID();
}

/*
 * Statement trigger on tasks and runs: wake the scheduler at commit; with
 * the argument 'sweep' (after runs are deleted) also have it remove their
 * run directories.  It fires only on easeml's own tables: attached to a
 * table of anyone else's (EXECUTE is not PUBLIC's, but an administrator
 * could grant it), it would let that table's writers wake the scheduler.
 */
Datum
easeml_wake_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	char	   *nsp;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("easeml._wake_trigger() must be called as a trigger")));
	rel = trigdata->tg_relation;
	nsp = get_namespace_name(RelationGetNamespace(rel));
	if (nsp == NULL || strcmp(nsp, "easeml") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("easeml._wake_trigger() fires only on easeml's own tables, not on \"%s\"",
						RelationGetRelationName(rel)),
				 errhint("Drop the trigger; easeml's tables already wake the scheduler.")));
	if (trigdata->tg_trigger->tgnargs > 0 &&
		strcmp(trigdata->tg_trigger->tgargs[0], "sweep") == 0)
		EasemlSweepAtCommit();
	else
		EasemlWakeAtCommit();
	return PointerGetDatum(NULL);
}

/*
 * easeml._policy_valid(policy): whether the spec parses.  Only the 0.1.0
 * install script creates the SQL function (for its set_policy); the
 * upgrade to 0.2.0 drops both, but CREATE EXTENSION ... VERSION '0.1.0'
 * needs the symbol.
 */
Datum
easeml_policy_valid(PG_FUNCTION_ARGS)
{
	char	   *spec = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PolicyParams params;

	PG_RETURN_BOOL(PolicyParseSpec(spec, &params, NULL, 0) == POLICY_OK);
}

/* easeml.policies(): every policy name. */
Datum
easeml_policies(PG_FUNCTION_ARGS)
{
	Datum		elems[POLICY_NAMED_COUNT];
	int			n = 0;

	for (int k = 0; k < POLICY_NAMED_COUNT; k++)
	{
		const char *name = PolicyName(k);

		if (name != NULL)
			elems[n++] = CStringGetTextDatum(name);
	}
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false,
										  TYPALIGN_INT));
}

/*
 * easeml.policy_options(): the options of the policy grammar, one row
 * each, from the table the parser reads (src/core/policy_spec.c).
 */
Datum
easeml_policy_options(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < PolicyOptionCount(); i++)
	{
		const PolicyOption *o = PolicyOptionAt(i);
		char		range[64];
		char		after[96];
		Datum		values[6];
		bool		nulls[6] = {0};

		PolicyOptionRange(o, range, sizeof(range));
		PolicyOptionAfterAuto(o, after, sizeof(after));
		values[0] = CStringGetTextDatum(o->name);
		values[1] = CStringGetTextDatum(PolicyOptionType(o));
		values[2] = CStringGetTextDatum(o->def);
		values[3] = CStringGetTextDatum(range);
		values[4] = CStringGetTextDatum(o->doc);
		values[5] = CStringGetTextDatum(after);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Parse a policy spec or raise the parser's reason (22023). */
static void
ParsePolicyOrError(const char *spec, PolicyParams *params)
{
	char		err[256];

	if (PolicyParseSpec(spec, params, err, sizeof(err)) != POLICY_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s", err),
				 errhint("A policy is NAME[:OPTION]...: SELECT easeml.policies() lists the names, easeml.policy_options() the options.")));
}

/*
 * easeml.policy_spec(policy): what a policy setting stands for, its named
 * spec replaced by the expansion ("default" -> "auto", "tenant_bo:w=3" ->
 * "rr:cost:acq=ei:w=3"); "auto" stands for itself.  Raises for a spec the
 * parser refuses.
 */
Datum
easeml_policy_spec(PG_FUNCTION_ARGS)
{
	char	   *spec = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PolicyParams params;
	StringInfoData out;
	const char *colon;
	bool		expanded = true;

	ParsePolicyOrError(spec, &params);
	initStringInfo(&out);
	appendStringInfoString(&out, spec);
	while (expanded)
	{
		size_t		len;

		expanded = false;
		colon = strchr(out.data, ':');
		len = colon ? (size_t) (colon - out.data) : strlen(out.data);
		for (int i = 0; i < POLICY_NAMED_COUNT; i++)
		{
			const char *name = PolicyName(i);
			const char *exp = PolicyNameExpansion(i);

			if (exp != NULL && strlen(name) == len && strncmp(out.data, name, len) == 0)
			{
				char	   *rest = pstrdup(out.data + len);

				resetStringInfo(&out);
				appendStringInfo(&out, "%s%s", exp, rest);
				expanded = true;
				break;
			}
		}
	}
	PG_RETURN_TEXT_P(cstring_to_text(out.data));
}

/* easeml._policy_auto(policy): whether the setting is "auto" (or "default"). */
Datum
easeml_policy_auto(PG_FUNCTION_ARGS)
{
	char	   *spec = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PolicyParams params;

	ParsePolicyOrError(spec, &params);
	PG_RETURN_BOOL(params.auto_select != 0);
}

/* easeml._policy_fallback(): what "auto" runs where it cannot choose. */
Datum
easeml_policy_fallback(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(POLICY_AUTO_FALLBACK));
}

/* easeml._policy_candidates(): what "auto" chooses among, in order. */
Datum
easeml_policy_candidates(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(POLICY_AUTO_CANDIDATES));
}

/*
 * easeml._policy_running(policy, chosen): the spec an "auto" setting runs
 * now, as the scheduler applies it: the candidate that chosen (auto's last
 * recorded choice, easeml.policy_choices.policy, with the options it was
 * made with; NULL: none yet, the fallback) names, with the setting's own
 * options after auto ("auto:w=60" runs the choice with w=60).  NULL for a
 * setting that is not auto.
 */
Datum
easeml_policy_running(PG_FUNCTION_ARGS)
{
	PolicyParams params;
	char		run[POLICY_SPEC_LEN];

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	ParsePolicyOrError(text_to_cstring(PG_GETARG_TEXT_PP(0)), &params);
	if (!params.auto_select)
		PG_RETURN_NULL();
	PolicyAutoRunning(&params, PG_ARGISNULL(1) ? NULL :
					  text_to_cstring(PG_GETARG_TEXT_PP(1)), run, sizeof(run));
	PG_RETURN_TEXT_P(cstring_to_text(run));
}

/*
 * easeml.scheduler_status(): the scheduler as shared memory sees it.  The
 * latest error may name any tenant's task: only roles that may read every
 * session's statistics (pg_read_all_stats, superusers) see its text.
 */
Datum
easeml_scheduler_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[12];
	bool		nulls[12] = {0};
	pid_t		pid = 0;
	int			running = 0;
	int64		decisions = 0;
	char		policy[sizeof(EasemlState->policy_label)] = "";
	TimestampTz started = 0;
	TimestampTz loop_at = 0;
	int64		errors = 0;
	TimestampTz error_at = 0;
	char		error[sizeof(EasemlState->last_error)] = "";
	int64		wakeups = 0;
	int64		folded = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	if (EasemlState != NULL)
	{
		SpinLockAcquire(&EasemlState->mutex);
		pid = EasemlState->scheduler_pid;
		running = EasemlState->running;
		decisions = EasemlState->decisions;
		/* what runs; the setting until the world has applied it */
		strlcpy(policy, EasemlState->policy_label[0] ? EasemlState->policy_label :
				EasemlState->policy, sizeof(policy));
		started = EasemlState->started_at;
		loop_at = EasemlState->loop_at;
		errors = EasemlState->loop_errors;
		error_at = EasemlState->error_at;
		strlcpy(error, EasemlState->last_error, sizeof(error));
		wakeups = EasemlState->wakeups;
		folded = EasemlState->wakeups_folded;
		SpinLockRelease(&EasemlState->mutex);
	}

	if (pid == 0)
	{
		nulls[0] = true;
		nulls[5] = true;
	}
	values[0] = Int32GetDatum((int32) pid);
	values[1] = Int32GetDatum(running);
	values[2] = Int32GetDatum(easeml_max_workers);
	values[3] = Int64GetDatum(decisions);
	if (policy[0])
		values[4] = CStringGetTextDatum(policy);
	else
		nulls[4] = true;
	values[5] = TimestampTzGetDatum(started);
	values[6] = TimestampTzGetDatum(loop_at);
	nulls[6] = (pid == 0 || loop_at == 0);
	values[7] = Int64GetDatum(errors);
	values[8] = TimestampTzGetDatum(error_at);
	nulls[8] = (error_at == 0);
	if (error[0] && has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		values[9] = CStringGetTextDatum(error);
	else
		nulls[9] = true;
	values[10] = Int64GetDatum(wakeups);
	values[11] = Int64GetDatum(folded);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
