/*-------------------------------------------------------------------------
 *
 * catalog_record.c
 *	  Recording what the scheduler does: decisions and their runs, launches,
 *	  how runs ended, tasks that failed or are finished, runs in flight
 *	  checked against the catalog.  Statements in CatalogBegin's
 *	  transactions (src/worker/catalog.c).
 *
 * IDENTIFICATION
 *	  src/worker/catalog_record.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "access/xact.h"
#include "catalog.h"
#include "catalog_spi.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "core/memmodel.h"
#include "core/placement.h"
#include "core/trainer_protocol.h"

/* A float8 parameter that is NULL unless finite. */
static void
SetFloat(Datum *values, char *nulls, int i, double v)
{
	values[i] = Float8GetDatum(v);
	nulls[i] = isfinite(v) ? ' ' : 'n';
}

/* Arrays of the runner-ups, for the unnest() of CatalogCreateRun. */
static void
CandidateArrays(const CatDecision *d, Datum *values, char *nulls)
{
	int			n = d->n_tasks + d->n_models;
	Datum	   *role = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *rank = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *task = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *tenant = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *model = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *f[5];
	bool	   *fnull[5];
	int			dims[1] = {n},
				lbs[1] = {1};

	for (int j = 0; j < 5; j++)
	{
		f[j] = palloc(sizeof(Datum) * Max(n, 1));
		fnull[j] = palloc(sizeof(bool) * Max(n, 1));
	}
	for (int i = 0; i < n; i++)
	{
		bool		is_task = i < d->n_tasks;
		const CatCandidate *c = is_task ? &d->tasks[i] : &d->models[i - d->n_tasks];
		double		v[5] = {c->mu, c->sigma, c->est_seconds, c->acquisition, c->score};

		role[i] = CStringGetTextDatum(is_task ? "task" : "model");
		rank[i] = Int32GetDatum(is_task ? i + 1 : i - d->n_tasks + 1);
		task[i] = Int64GetDatum(c->task_id);
		tenant[i] = DirectFunctionCall1(namein, CStringGetDatum(c->tenant));
		model[i] = Int32GetDatum(c->model_id);
		for (int j = 0; j < 5; j++)
		{
			f[j][i] = Float8GetDatum(v[j]);
			fnull[j][i] = !isfinite(v[j]);
		}
	}
	values[0] = PointerGetDatum(construct_array(role, n, TEXTOID, -1, false, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_array(rank, n, INT4OID, 4, true, TYPALIGN_INT));
	values[2] = PointerGetDatum(construct_array(task, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[3] = PointerGetDatum(construct_array(tenant, n, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR));
	values[4] = PointerGetDatum(construct_array(model, n, INT4OID, 4, true, TYPALIGN_INT));
	for (int j = 0; j < 5; j++)
		values[5 + j] = PointerGetDatum(construct_md_array(f[j], fnull[j], 1, dims, lbs,
														   FLOAT8OID, 8, FLOAT8PASSBYVAL,
														   TYPALIGN_DOUBLE));
	memset(nulls, ' ', 10);
}

/*
 * Record a scheduler decision, its runner-ups and its run (status
 * 'running', slot taken), in one statement.  Returns the run id.  The rows
 * take their tenant from the tasks as they are now, not from the loaded
 * state: a tenant renamed since the load (easeml.rename_tenant) keeps its
 * decisions.
 */
int64
CatalogCreateRun(const CatDecision *d, int slot, const CatDevice *device)
{
	Oid			types[25] = {INT8OID, NAMEOID, INT4OID, INT4OID, TEXTOID,
		FLOAT8OID, FLOAT8OID, FLOAT8OID, TEXTOID, FLOAT8OID, TEXTOID, FLOAT8OID, INT4OID,
		TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, NAMEARRAYOID, INT4ARRAYOID,
		FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID, FLOAT8ARRAYOID,
	TEXTOID, TEXTOID};
	Datum		values[25];
	char		nulls[26];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(d->chosen.task_id);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(d->chosen.tenant));
	values[2] = Int32GetDatum(d->chosen.model_id);
	values[3] = Int32GetDatum(slot);
	values[4] = CStringGetTextDatum(d->policy);
	SetFloat(values, nulls, 5, d->chosen.mu);
	SetFloat(values, nulls, 6, d->chosen.sigma);
	SetFloat(values, nulls, 7, d->chosen.acquisition);
	values[8] = CStringGetTextDatum(d->gp_status ? d->gp_status : "ok");
	SetFloat(values, nulls, 9, d->chosen.est_seconds > 0 ? d->chosen.est_seconds : NAN);
	values[10] = CStringGetTextDatum(d->rule);
	SetFloat(values, nulls, 11, d->chosen.score);
	values[12] = Int32GetDatum(d->eligible);
	CandidateArrays(d, values + 13, nulls + 13);
	values[23] = CStringGetTextDatum(device->name);
	values[24] = CStringGetTextDatum(device->kind);
	nulls[25] = '\0';

	Exec("WITH r AS ("
		 "  INSERT INTO easeml.runs (task_id, tenant, model_id, slot, status, started_at,"
		 "                          device, device_kind)"
		 "  VALUES ($1, $2, $3, $4, 'running', clock_timestamp(), $24, $25) RETURNING id, tenant),"
		 " d AS ("
		 "  INSERT INTO easeml.decisions (task_id, tenant, model_id, run_id, policy,"
		 "                                mu, sigma, acquisition, gp_status, est_seconds,"
		 "                                rule, score, eligible)"
		 "  SELECT $1, r.tenant, $3, r.id, $5, $6, $7, $8, $9, $10, $11, $12, $13 FROM r"
		 "  RETURNING id, run_id),"
		 " c AS ("
		 "  INSERT INTO easeml.decision_candidates (decision_id, role, rank, task_id, tenant,"
		 "                                          model_id, mu, sigma, est_seconds,"
		 "                                          acquisition, score)"
		 "  SELECT d.id, u.role, u.rank, u.task_id, coalesce(k.tenant, u.tenant), u.model_id,"
		 "         u.mu, u.sigma, u.est_seconds, u.acquisition, u.score"
		 "    FROM d, unnest($14, $15, $16, $17, $18, $19, $20, $21, $22, $23)"
		 "            AS u (role, rank, task_id, tenant, model_id, mu, sigma, est_seconds,"
		 "                  acquisition, score)"
		 "    LEFT JOIN easeml.tasks k ON k.id = u.task_id)"
		 " SELECT run_id FROM d",
		 SPI_OK_SELECT, 25, types, values, nulls);
	return GetInt64(0, 1, 0);
}

/* The trainer of a run has been spawned. */
void
CatalogRunStarted(int64 run_id, int pid, const char *log_path)
{
	Oid			types[3] = {INT8OID, INT4OID, TEXTOID};
	Datum		values[3] = {Int64GetDatum(run_id), Int32GetDatum(pid),
	CStringGetTextDatum(log_path)};

	Exec("UPDATE easeml.runs SET pid = $2, log_path = $3 WHERE id = $1",
		 SPI_OK_UPDATE, 3, types, values, NULL);
}

/* The trainer of a claimed run could not be spawned. */
void
CatalogRunFailedToStart(int64 run_id, const char *error)
{
	CatalogFinishRun(run_id, "failed", -1, NULL, error);
}

/*
 * Record how a run ended (easeml._finish_run validates the trainer's
 * metrics, so bad output fails the run instead of this statement).
 */
void
CatalogFinishRun(int64 run_id, const char *status, int exit_code,
				 const char *metrics_json, const char *error)
{
	Oid			types[5] = {INT8OID, TEXTOID, INT4OID, TEXTOID, TEXTOID};
	Datum		values[5];
	char		nulls[5] = "     ";

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(status);
	values[2] = Int32GetDatum(exit_code);
	if (exit_code == INT_MIN)
		nulls[2] = 'n';
	if (metrics_json)
		values[3] = CStringGetTextDatum(metrics_json);
	else
		nulls[3] = 'n';
	if (error)
		values[4] = CStringGetTextDatum(error);
	else
		nulls[4] = 'n';
	Exec("SELECT easeml._finish_run($1, $2, $3, $4, $5)",
		 SPI_OK_SELECT, 5, types, values, nulls);
}

/*
 * A run whose trainer reported success that no scheduler recorded: record
 * it from the report, with the time the trainer reported as its end (not
 * the time the scheduler came back).
 */
void
CatalogFinishReportedRun(int64 run_id, const char *metrics_json)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};

	CatalogFinishRun(run_id, "succeeded", EASEML_EXIT_OK, metrics_json, NULL);
	Exec("UPDATE easeml.runs r"
		 "   SET finished_at = j.reported_at,"
		 "       seconds = extract(epoch FROM j.reported_at - coalesce(r.started_at, r.queued_at))"
		 "  FROM easeml.trainer_jobs j"
		 " WHERE r.id = $1 AND j.run_id = r.id AND r.status = 'succeeded'"
		 "   AND j.reported_at >= coalesce(r.started_at, r.queued_at)",
		 SPI_OK_UPDATE, 1, types, values, NULL);
}

/*
 * The trainer of a run could not read its task's source (a dropped table
 * or column, a revoked privilege, the view's code failing): every other
 * candidate would fail the same way, so the task becomes 'failed' with the
 * reason.  The tenant fixes the source and sets the task 'active' again.
 * A completed task fails too (a run the tenant queued on it found the
 * source gone: the task can no longer be trained, and its status must say
 * so); a paused one stays paused, as its tenant set it.  A task row its
 * tenant keeps locked is left alone: its next run fails the same way and
 * tries again.
 */
void
CatalogFailTaskOfRun(int64 run_id, const char *error)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2];

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(error ? error : "unknown error");
	Exec("UPDATE easeml.tasks t"
		 "   SET status = 'failed',"
		 "       status_reason = 'its source could not be read: ' || $2"
		 " WHERE t.id = (SELECT x.id FROM easeml.tasks x JOIN easeml.runs r ON r.task_id = x.id"
		 "                WHERE r.id = $1 AND x.status IN ('active', 'completed')"
		 /* a refit reads an older snapshot, which may be gone: no reason to fail the task */
		 "                  AND r.purpose = 'select'"
		 "                FOR UPDATE OF x SKIP LOCKED)",
		 SPI_OK_UPDATE, 2, types, values, NULL);
	if (SPI_processed > 0)
		elog(LOG, "easeml: the task of run %lld is failed: its source could not be read",
			 (long long) run_id);
}

/*
 * The trainer cannot train the model of a run (a family it does not know,
 * parameters it refuses: a row written around the check of
 * easeml._validate_model, or a trainer that changed): disable the model,
 * so that it does not fail a run of every task, and say so in the log.
 */
void
CatalogDisableModelOfRun(int64 run_id, const char *error)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};

	Exec("UPDATE easeml.models m SET enabled = false"
		 "  FROM easeml.runs r WHERE r.id = $1 AND m.id = r.model_id AND m.enabled"
		 " RETURNING m.name",
		 SPI_OK_UPDATE_RETURNING, 1, types, values, NULL);
	if (SPI_processed > 0)
		ereport(WARNING,
				(errmsg("easeml: model \"%s\" was disabled: the trainer cannot train it",
						GetText(0, 1)),
				 errdetail("%s", error ? error : "unknown error"),
				 errhint("Fix the model's family or params and set enabled = true again.")));
}

/*
 * Keep, of the given run ids, those with no row in easeml.runs (their
 * directories can go); returns how many are left in ids.  An id the runs
 * sequence has not handed out yet is kept: its directory belongs to a
 * database being restored (pg_restore creates the extension before it
 * copies the runs and sets the sequence) or to an earlier installation.
 */
int
CatalogGoneRuns(int64 *ids, int n)
{
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];
	int			gone;

	values[0] = Int8ArrayDatum(ids, n);
	Exec("SELECT u.id FROM unnest($1::int8[]) AS u(id)"
		 " WHERE NOT EXISTS (SELECT 1 FROM easeml.runs r WHERE r.id = u.id)"
		 "   AND u.id < (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END"
		 "                 FROM easeml.runs_id_seq)",
		 SPI_OK_SELECT, 1, types, values, NULL);
	gone = (int) SPI_processed;
	for (int i = 0; i < gone; i++)
		ids[i] = GetInt64(i, 1, 0);
	return gone;
}

/*
 * For each tracked run id, whether a cancel was requested (1) or its row is
 * gone (2, its task was dropped), else 0.
 */
void
CatalogCheckRuns(const int64 *run_ids, int n, int *verdict)
{
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];

	for (int i = 0; i < n; i++)
		verdict[i] = 0;
	values[0] = Int8ArrayDatum(run_ids, n);
	Exec("SELECT u.ord::int, CASE WHEN r.id IS NULL THEN 2"
		 "                       WHEN r.cancel_requested THEN 1 ELSE 0 END"
		 "  FROM unnest($1::int8[]) WITH ORDINALITY AS u(id, ord)"
		 "  LEFT JOIN easeml.runs r ON r.id = u.id",
		 SPI_OK_SELECT, 1, types, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int			ord = GetInt32(i, 1, 0);

		if (ord >= 1 && ord <= n)
			verdict[ord - 1] = GetInt32(i, 2, 0);
	}
}

/*
 * Runs recorded as 'running' that no slot of this scheduler tracks, at
 * most max of them into ids: at startup (settled = false) every such run,
 * left by a scheduler that is gone; later only rows older than a few
 * seconds (a launch being recorded is not lost).  Rows a tenant keeps
 * locked are skipped.  Returns how many.
 */
int
CatalogUntrackedRuns(const int64 *tracked, int n, bool settled,
					 int64 *ids, int max)
{
	Oid			types[3] = {INT8ARRAYOID, BOOLOID, INT4OID};
	Datum		values[3];
	int			found = 0;

	values[0] = Int8ArrayDatum(tracked, n);
	values[1] = BoolGetDatum(settled);
	values[2] = Int32GetDatum(max);
	Exec("SELECT x.id FROM easeml.runs x"
		 " WHERE x.status = 'running' AND x.id <> ALL ($1::int8[])"
		 "   AND (NOT $2 OR coalesce(x.started_at, x.queued_at) < clock_timestamp() - interval '5 seconds')"
		 " ORDER BY x.id LIMIT $3 FOR UPDATE SKIP LOCKED",
		 SPI_OK_SELECT, 3, types, values, NULL);
	for (uint64 i = 0; i < SPI_processed && found < max; i++)
		ids[found++] = GetInt64(i, 1, 0);
	return found;
}

/*
 * End one run that CatalogUntrackedRuns found: a user's run that never got
 * its trainer goes back to 'queued', any other becomes 'interrupted' so
 * its candidate can be chosen again; why says what happened.  One row per
 * statement, so that a trigger that cannot finish one run (a deployment
 * lock its tenant holds) holds up no other.  Returns 1 if it changed.
 */
int
CatalogEndUntracked(int64 run_id, const char *why)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2];

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(why);
	Exec("UPDATE easeml.runs r"
		 "   SET status = CASE WHEN r.pid IS NULL AND r.requested_by = 'user'"
		 "                     THEN 'queued' ELSE 'interrupted' END,"
		 "       slot = NULL,"
		 "       device = CASE WHEN r.pid IS NULL AND r.requested_by = 'user'"
		 "                     THEN NULL ELSE r.device END,"
		 "       device_kind = CASE WHEN r.pid IS NULL AND r.requested_by = 'user'"
		 "                          THEN NULL ELSE r.device_kind END,"
		 "       started_at = CASE WHEN r.pid IS NULL AND r.requested_by = 'user'"
		 "                         THEN NULL ELSE r.started_at END,"
		 "       finished_at = CASE WHEN r.pid IS NULL AND r.requested_by = 'user'"
		 "                          THEN NULL ELSE clock_timestamp() END,"
		 "       seconds = CASE WHEN r.pid IS NULL AND r.requested_by = 'user' THEN NULL"
		 "                      ELSE extract(epoch FROM clock_timestamp() - coalesce(r.started_at, r.queued_at)) END,"
		 "       error = CASE WHEN r.pid IS NULL AND r.requested_by = 'user' THEN NULL"
		 "                    ELSE 'interrupted: ' || $2 END"
		 " WHERE r.id = $1 AND r.status = 'running'",
		 SPI_OK_UPDATE, 2, types, values, NULL);
	return (int) SPI_processed;
}

/* [spaces] Whether a candidate of the task is neither tried nor running. */
static bool
StartableLeft(const CatState *state, const CatTask *t)
{
	for (int k = 0; k < state->n_models; k++)
	{
		bool		used = false;

		if (!t->eligible[k])
			continue;
		for (int j = 0; j < t->n_obs && !used; j++)
			used = (t->obs_arm[j] == k);
		for (int j = 0; j < t->n_done && !used; j++)
			used = (t->done_arm[j] == k);
		for (int j = 0; j < t->n_running && !used; j++)
			used = (t->running_arm[j] == k);
		if (!used)
			return true;
	}
	return false;
}

/*
 * Close tasks that are finished: no candidate left (or max_runs reached,
 * or [budget] the time budget spent) and nothing in flight become
 * 'completed'; tasks whose runs keep failing without a single success
 * become 'failed' with the last error.  A task whose budget is spent waits
 * for its runs in flight: they finish (docs/scheduler.md 7.8).
 */
int
CatalogCloseTasks(const CatState *state, int64 *generate, int max_generate)
{
	int			n_generate = 0;

	/* with every model disabled nothing was tried: nothing is complete */
	if (state->n_models == 0)
		return 0;
	for (int i = 0; i < state->n_tasks; i++)
	{
		const CatTask *t = &state->tasks[i];
		const char *status = NULL;
		char		reason[512];
		Oid			types[3] = {INT8OID, TEXTOID, TEXTOID};
		Datum		values[3];

		if (t->succeeded == 0 && t->fail_streak >= easeml_max_failures &&
			t->n_running == 0)
		{
			status = "failed";
			snprintf(reason, sizeof(reason), "%d runs failed in a row: %s",
					 t->fail_streak, t->last_error ? t->last_error : "unknown error");
		}
		else if (t->n_running == 0)
		{
			bool		left = false;

			if (t->budget_spent)
				snprintf(reason, sizeof(reason),
						 "time budget spent: %.1f s of runs, budget_seconds %g",
						 t->spent, t->budget);
			else if (t->max_runs > 0 && t->n_runs >= t->max_runs)
				snprintf(reason, sizeof(reason), "max_runs (%d) reached", t->max_runs);
			else
			{
				for (int k = 0; k < state->n_models && !left; k++)
				{
					bool		used = false;

					if (!t->eligible[k])
						continue;
					for (int j = 0; j < t->n_obs && !used; j++)
						used = (t->obs_arm[j] == k);
					for (int j = 0; j < t->n_done && !used; j++)
						used = (t->done_arm[j] == k);
					left = !used;
				}
				if (t->n_over_memory > 0)
					snprintf(reason, sizeof(reason),
							 "every candidate has been tried; %d more would need more memory than easeml.trainer_memory_limit (%.0f MB)",
							 t->n_over_memory, EasemlTrainerMemoryLimitBytes() / (1024 * 1024));
				else
					snprintf(reason, sizeof(reason), "every candidate has been tried");
			}
			if (!left)
				status = "completed";
		}
		/*
		 * [spaces] A task with a time budget left that has no candidate
		 * left to start gets new configurations instead of completing
		 * (docs/scheduler.md 7.9): CatalogGenerate, in a transaction of its
		 * own after this load, completes it when none can be made.
		 */
		if (t->budget > 0 && !t->budget_spent &&
			!(t->max_runs > 0 && t->n_runs >= t->max_runs) &&
			(status == NULL || strcmp(status, "completed") == 0) &&
			n_generate < max_generate && !StartableLeft(state, t))
		{
			/*
			 * only once its runs in flight have ended: the proposals then
			 * depend on the runs alone, not on which ended first
			 */
			if (t->n_running == 0)
				generate[n_generate++] = t->id;
			continue;
		}
		if (status == NULL)
			continue;
		values[0] = Int64GetDatum(t->id);
		values[1] = CStringGetTextDatum(status);
		/* snprintf cut by bytes: cut again on a character boundary */
		reason[pg_mbcliplen(reason, strlen(reason), sizeof(reason) - 1)] = '\0';
		values[2] = CStringGetTextDatum(reason);
		/* a tenant may hold a lock on its own task row: try again later */
		Exec("UPDATE easeml.tasks SET status = $2, status_reason = $3"
			 " WHERE id = (SELECT id FROM easeml.tasks WHERE id = $1 AND status = 'active'"
			 "              FOR UPDATE SKIP LOCKED)",
			 SPI_OK_UPDATE, 3, types, values, NULL);
		if (SPI_processed == 0)
			continue;
		elog(LOG, "easeml: task %lld (%s/%s) is %s: %s",
			 (long long) t->id, t->tenant, t->name, status, reason);
	}
	return n_generate;
}

/*
 * [spaces] New configurations for a task with a time budget whose
 * candidates are all tried and nothing in flight
 * (easeml._generate_candidates, in the caller's transaction).  When none
 * can be made, the task completes.  Returns how many were made.
 */
int
CatalogGenerate(int64 task)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	int			made;
	char	   *why;

	values[0] = Int64GetDatum(task);
	Exec("SELECT easeml._generate_candidates($1)", SPI_OK_SELECT, 1, types, values, NULL);
	made = GetInt32(0, 1, 0);
	if (made > 0)
	{
		elog(LOG, "easeml: task %lld: %d new configurations generated around its best runs",
			 (long long) task, made);
		return made;
	}
	/*
	 * [budgetuse] why none: easeml.generate_max reached, or converged
	 * (easeml.generate_patience); NULL when the proposals were all twins
	 */
	Exec("SELECT easeml._generate_stop($1)", SPI_OK_SELECT, 1, types, values, NULL);
	why = GetText(0, 1);
	CatalogGenerateEnd(task, why != NULL ? why : "no new configuration could be generated");
	return 0;
}

/*
 * [spaces] Complete a task whose candidates are all tried when no new one
 * can be generated ('why'; also after generating failed, so that a task
 * the generator keeps failing for does not stay active).
 */
void
CatalogGenerateEnd(int64 task, const char *why)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		values[2];

	values[0] = Int64GetDatum(task);
	values[1] = CStringGetTextDatum(why);
	Exec("UPDATE easeml.tasks SET status = 'completed',"
		 "       status_reason = 'every candidate has been tried; ' || $2 || ' ('"
		 "                       || (SELECT count(*) FROM easeml.models m WHERE m.generated_for = $1)"
		 "                       || ' generated)'"
		 " WHERE id = (SELECT id FROM easeml.tasks WHERE id = $1 AND status = 'active'"
		 "              FOR UPDATE SKIP LOCKED)",
		 SPI_OK_UPDATE, 2, types, values, NULL);
	if (SPI_processed > 0)
		elog(LOG, "easeml: task %lld is completed: every candidate has been tried; %s",
			 (long long) task, why);
}


/*
 * [acqgen] Whether a task may get a proposal before its grid is spent
 * (docs/scheduler.md 7.9): a time budget left, below max_runs, a scored
 * run to propose around, a candidate left that could start, and fewer
 * than easeml.generate_max generated candidates (easeml._propose_candidates
 * also stops at easeml.generate_patience; the scheduler then asks that
 * task no more until a setting changes: GenerateEarly).
 */
bool
CatalogMayGenerateEarly(const CatState *state, const CatTask *t)
{
	int			generated = 0;

	if (!(t->budget > 0) || t->budget_spent || t->n_obs == 0 ||
		(t->max_runs > 0 && t->n_runs >= t->max_runs))
		return false;
	for (int k = 0; k < state->n_models; k++)
		generated += state->models[k].generated_for == t->id;
	return generated < easeml_generate_max && StartableLeft(state, t);
}

/* A float8[] column as n doubles (caller's memory); -1 when NULL. */
static int
GetFloat8Array(int row, int col, double **out)
{
	ArrayType  *a;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	*out = NULL;
	if (GetNull(row, col))
		return -1;
	a = DatumGetArrayTypeP(Get(row, col));
	deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	*out = CallerAlloc(sizeof(double) * Max(n, 1), false);
	for (int j = 0; j < n; j++)
		(*out)[j] = nulls[j] ? NAN : DatumGetFloat8(elems[j]);
	return n;
}

/*
 * [acqgen] Up to n proposals for a task (easeml._propose_candidates,
 * nothing written), into out (CAT_MAX_PROPOSALS at most), in the
 * caller's memory.  Proposals without coordinates are left out.  With
 * none, *stopped says whether the task gets no more generated candidates
 * (easeml._generate_stop: easeml.generate_max reached, or converged).
 */
int
CatalogPropose(int64 task, int n, CatProposal *out, bool *stopped)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];
	int			rows,
				got = 0;

	values[0] = Int64GetDatum(task);
	values[1] = Int32GetDatum(Min(n, CAT_MAX_PROPOSALS));
	Exec("SELECT p.prop_family, p.prop_params::text, p.prop_run, p.prop_root, p.prop_parent,"
		 "       p.prop_coords, p.root_coords,"
		 "       s.work, s.width, s.inner_products, s.last_width"
		 "  FROM easeml._propose_candidates($1, $2) p"
		 " CROSS JOIN LATERAL easeml._cost_shape(p.prop_family, p.prop_params) s",
		 SPI_OK_SELECT, 2, types, values, NULL);
	rows = Min((int) SPI_processed, CAT_MAX_PROPOSALS);
	for (int i = 0; i < rows; i++)
	{
		CatProposal *p = &out[got];
		int			nc,
					nr;

		p->family = GetText(i, 1);
		p->params = GetText(i, 2);
		p->run_id = GetInt64(i, 3, 0);
		p->root_id = GetInt32(i, 4, 0);
		p->parent_id = GetInt32(i, 5, 0);
		nc = GetFloat8Array(i, 6, &p->coords);
		nr = GetFloat8Array(i, 7, &p->root_coords);
		p->work = GetFloat8(i, 8, 1);
		p->width = GetFloat8(i, 9, 0);
		p->inner = GetFloat8(i, 10, 0);
		p->out = GetFloat8(i, 11, 0);
		if (nc < 1 || nc != nr || p->family == NULL || p->params == NULL)
			continue;
		p->n_coords = nc;
		got++;
	}
	*stopped = false;
	if (rows == 0)
	{
		Exec("SELECT easeml._generate_stop($1) IS NOT NULL",
			 SPI_OK_SELECT, 1, types, values, NULL);
		*stopped = GetBool(0, 1);
	}
	return got;
}

/*
 * [acqgen] One proposal as a model row of the task
 * (easeml._add_generated: its caps and twins); true when made.
 */
bool
CatalogAddGenerated(int64 task, const CatProposal *p)
{
	Oid			types[5] = {INT8OID, TEXTOID, TEXTOID, INT8OID, INT4OID};
	Datum		values[5];

	values[0] = Int64GetDatum(task);
	values[1] = CStringGetTextDatum(p->family);
	values[2] = CStringGetTextDatum(p->params);
	values[3] = Int64GetDatum(p->run_id);
	values[4] = Int32GetDatum(p->root_id);
	Exec("SELECT easeml._add_generated($1, $2, $3::jsonb, $4, $5)",
		 SPI_OK_SELECT, 5, types, values, NULL);
	return GetInt32(0, 1, 0) > 0;
}
