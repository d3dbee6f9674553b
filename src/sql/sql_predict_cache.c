/*-------------------------------------------------------------------------
 *
 * sql_predict_cache.c
 *	  Which model a statement's easeml.predict() uses, and the backend's
 *	  cache of parsed models.
 *
 * Once per statement and call site (the caller keeps the answer in
 * fn_extra), PredictResolve() looks the task up by name among the
 * caller's own tasks (tenant = current_user, and row-level security on
 * top), asks easeml._deployed_run() which run serves it, and takes that
 * run's model from the cache.  A model is parsed from its artifact once
 * per backend; when _deployed_run's answer for a task changes, the old
 * model is retired.  A retired model is freed when the last statement
 * that holds it ends (a reset callback on the call site's memory context
 * drops the hold), so an open cursor never sees its model freed.
 *
 * Models live in malloc'd memory owned by the cache (the predict module
 * is plain C); their size is bounded by the artifact they come from.  A
 * backend that predicts with many tasks keeps at most
 * easeml.predict_cache_models of them: the least recently used model is
 * freed first; one that a statement still holds is only marked evicted,
 * freed when its statement ends, and reused instead of parsed again when
 * a statement asks for it before then.  So the models in memory are at
 * most the cache's plus those the running statements hold, and a
 * statement holds at most SITE_TASKS (sql_predict.c) per call site.
 *
 * IDENTIFICATION
 *	  src/sql/sql_predict_cache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "module/easeml.h"
#include "sql_predict.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

typedef struct CachedModel
{
	int64		task_id;
	int64		run_id;
	TrModel    *model;
	int			holds;			/* statements using it now */
	uint64		last_used;		/* value of use_clock when last resolved */
	bool		retired;		/* the task is served by another run now */
	bool		evicted;		/* freed for room once unheld; reused (not
								 * parsed again) while still held */
	struct CachedModel *next;
} CachedModel;

static CachedModel *cache = NULL;
static uint64 use_clock = 0;

/*
 * Runs as the caller, under the caller's search_path: every function,
 * operator and type is schema-qualified, or a tenant who can create in a
 * schema on another's path (public before PostgreSQL 15) could plant an
 * unnest(text[]) or an =(oid, regclass) that wins over pg_catalog's.
 */
static const char *const lookup_sql =
"SELECT t.id, t.features,"
"       coalesce(t.feature_types, pg_catalog.array_fill('numeric'::pg_catalog.text,"
"                                 ARRAY[pg_catalog.cardinality(t.features)])),"
"       easeml._deployed_run(t.id),"
"       ARRAY(SELECT coalesce(a.atttypid, 0::pg_catalog.oid)"
"               FROM pg_catalog.unnest(t.features) WITH ORDINALITY AS u(f, ord)"
"               LEFT JOIN pg_catalog.pg_attribute a"
"                      ON a.attrelid OPERATOR(pg_catalog.=) t.source::pg_catalog.oid"
"                     AND a.attname OPERATOR(pg_catalog.=) u.f"
"                     AND a.attnum OPERATOR(pg_catalog.>) 0::pg_catalog.int2"
"                     AND NOT a.attisdropped"
"              ORDER BY u.ord)"
"  FROM easeml.tasks t"
" WHERE t.name OPERATOR(pg_catalog.=) $1"
"   AND t.tenant OPERATOR(pg_catalog.=) current_user";

static void
Unlink(CachedModel *e)
{
	for (CachedModel **p = &cache; *p != NULL; p = &(*p)->next)
		if (*p == e)
		{
			*p = e->next;
			break;
		}
	TrModelFree(e->model);
	free(e);
}

/* a statement is done with a model: free it if it was retired */
static void
ReleaseHold(void *arg)
{
	CachedModel *e = arg;

	if (--e->holds == 0 && (e->retired || e->evicted))
		Unlink(e);
}

/* every other model of the task is retired (freed now if unused) */
static void
RetireOthers(int64 task_id, int64 run_id)
{
	CachedModel *e = cache;

	while (e != NULL)
	{
		CachedModel *next = e->next;

		if (e->task_id == task_id && e->run_id != run_id && !e->retired)
		{
			e->retired = true;
			if (e->holds == 0)
				Unlink(e);
		}
		e = next;
	}
}

/*
 * Keep at most easeml.predict_cache_models live models besides keep: the
 * least recently used one is freed, or, while a statement holds it, marked
 * evicted (freed when the last hold goes, and taken back if it is wanted
 * before then, so a statement that alternates between more tasks than the
 * cache holds parses each of them once).
 */
static void
EvictLeastRecent(const CachedModel *keep)
{
	for (;;)
	{
		CachedModel *victim = NULL;
		int			live = 0;

		for (CachedModel *e = cache; e != NULL; e = e->next)
		{
			if (e->retired || e->evicted)
				continue;
			live++;
			if (e != keep && (victim == NULL || e->last_used < victim->last_used))
				victim = e;
		}
		if (live <= easeml_predict_cache_models || victim == NULL)
			return;
		victim->evicted = true;
		if (victim->holds == 0)
			Unlink(victim);
	}
}

/* text[] datum into a palloc'd array of C strings */
static char **
TextArray(Datum d, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;

	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, n);
	out = palloc(sizeof(char *) * (*n + 1));
	for (int i = 0; i < *n; i++)
		out[i] = nulls[i] ? pstrdup("") : TextDatumGetCString(elems[i]);
	return out;
}

/*
 * tr_load_interrupted: a cancel or termination is pending.  The load then
 * stops and frees its malloc'd model, and LoadFailed lets
 * CHECK_FOR_INTERRUPTS act; a CHECK_FOR_INTERRUPTS inside the plain-C load
 * would leak it.
 */
static int
LoadInterrupted(void)
{
	return (QueryCancelPending || ProcDiePending) && INTERRUPTS_CAN_BE_PROCESSED();
}

/* the error of a model that could not be loaded (TrModelLoad's status) */
static void
LoadFailed(int rc, const char *err, const char *task, int64 run_id)
{
	if (rc == TR_ART_CANCELED)
	{
		CHECK_FOR_INTERRUPTS();
		/* the pending cancel was not for this query after all */
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("the load of the model of run " INT64_FORMAT " of task \"%s\" was canceled",
						run_id, task),
				 errhint("Run the statement again.")));
	}
	if (rc == TR_ART_NO_MEMORY)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("%s", err)));
	if (rc == TR_ART_UNSUPPORTED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("run " INT64_FORMAT " of task \"%s\" cannot predict in SQL", run_id, task),
				 errdetail("%s.", err),
				 errhint("Deploy a run of a built-in family.")));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("the model of run " INT64_FORMAT " of task \"%s\" is malformed", run_id, task),
			 errdetail("%s.", err),
			 errhint("Deploy another run.")));
}

/*
 * [ensemble] The model of an ensemble run (docs/models.md, "Ensembles"):
 * each member's artifact, read as the caller among the runs of the same
 * task, loaded and handed to TrEnsembleBuild.  A member whose artifact is
 * gone fails the load (retention keeps the members of a deployed
 * ensemble).
 */
static TrModel *
LoadEnsemble(const char *task, int64 task_id, int64 run_id, const unsigned char *blob,
			 size_t len)
{
	int			n;
	int64_t    *runs;
	double	   *weights;
	TrModel   **members;
	TrModel    *model;
	char		err[TR_PREDICT_ERRLEN] = "";
	int			rc;

	rc = TrEnsembleMembers(blob, len, &n, &runs, &weights, err, sizeof(err));
	if (rc != TR_ART_OK)
		LoadFailed(rc, err, task, run_id);
	free(weights);
	members = palloc0(sizeof(TrModel *) * n);
	for (int i = 0; i < n && rc == TR_ART_OK; i++)
	{
		Oid			types[2] = {INT8OID, INT8OID};
		Datum		values[2] = {Int64GetDatum(runs[i]), Int64GetDatum(task_id)};
		bool		isnull;
		bytea	   *mb;

		if (SPI_execute_with_args("SELECT a.data FROM easeml.artifacts a"
								  "  JOIN easeml.runs r ON r.id = a.run_id"
								  " WHERE a.run_id = $1 AND r.task_id = $2",
								  2, types, values, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read the artifact of run " INT64_FORMAT, (int64) runs[i]);
		if (SPI_processed == 0)
		{
			int64		missing = runs[i];

			for (int j = 0; j < i; j++)
				TrModelFree(members[j]);
			free(runs);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("member run " INT64_FORMAT " of ensemble run " INT64_FORMAT " of task \"%s\" has no stored model",
							missing, run_id, task),
					 errhint("Retention may have deleted it; deploy another run.")));
		}
		mb = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		rc = TrModelLoad((const unsigned char *) VARDATA_ANY(mb), VARSIZE_ANY_EXHDR(mb),
						 &members[i], err, sizeof(err));
		if (rc != TR_ART_OK)
		{
			int64		bad = runs[i];

			for (int j = 0; j < i; j++)
				TrModelFree(members[j]);
			free(runs);
			LoadFailed(rc, err, task, bad);
		}
	}
	free(runs);
	rc = TrEnsembleBuild(blob, len, members, n, &model, err, sizeof(err));
	if (rc != TR_ART_OK)
		LoadFailed(rc, err, task, run_id);
	return model;
}

/*
 * Parse run_id's artifact into a new cache entry.  Runs inside the
 * caller's SPI connection (the artifact is read as the caller).
 */
static CachedModel *
LoadModel(const char *task, int64 task_id, int64 run_id)
{
	Datum		arg = Int64GetDatum(run_id);
	Oid			argtype = INT8OID;
	bool		isnull;
	bytea	   *blob;
	TrModel    *model;
	char		err[TR_PREDICT_ERRLEN] = "";
	int			rc;
	CachedModel *e;

	tr_load_interrupted = LoadInterrupted;
	if (SPI_execute_with_args("SELECT data FROM easeml.artifacts WHERE run_id = $1",
							  1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the artifact of run " INT64_FORMAT, run_id);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run " INT64_FORMAT " of task \"%s\" has no stored model", run_id, task),
				 errhint("Retention may have deleted it; deploy another run.")));
	blob = DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
		elog(ERROR, "the artifact of run " INT64_FORMAT " is NULL", run_id);
	rc = TrModelLoad((const unsigned char *) VARDATA_ANY(blob), VARSIZE_ANY_EXHDR(blob),
					 &model, err, sizeof(err));
	if (rc == TR_ART_UNSUPPORTED)
	{
		int64_t    *runs;
		double	   *weights;
		int			n;

		/* [ensemble] a blob naming its members: read, it is an ensemble */
		if (TrEnsembleMembers((const unsigned char *) VARDATA_ANY(blob), VARSIZE_ANY_EXHDR(blob),
							  &n, &runs, &weights, NULL, 0) != TR_ART_UNSUPPORTED)
		{
			free(runs);
			free(weights);
			/* a copy: the member lookups reuse the SPI connection */
			blob = (bytea *) pg_detoast_datum_copy((struct varlena *) blob);
			model = LoadEnsemble(task, task_id, run_id, (const unsigned char *) VARDATA_ANY(blob),
								 VARSIZE_ANY_EXHDR(blob));
			rc = TR_ART_OK;
		}
	}
	if (rc != TR_ART_OK)
		LoadFailed(rc, err, task, run_id);
	/* the tests count these: parsing is the expensive part */
	ereport(DEBUG1,
			(errmsg_internal("easeml.predict parsed the model of run " INT64_FORMAT " of task \"%s\"",
							 run_id, task)));
	if ((e = malloc(sizeof(CachedModel))) == NULL)
	{
		TrModelFree(model);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory caching a model")));
	}
	e->task_id = task_id;
	e->run_id = run_id;
	e->model = model;
	e->holds = 0;
	e->last_used = 0;
	e->retired = false;
	e->evicted = false;
	e->next = cache;
	cache = e;
	return e;
}

/* the cached model of (task, run), loading it when needed */
static CachedModel *
CachedFor(const char *task, int64 task_id, int64 run_id)
{
	CachedModel *e;

	for (e = cache; e != NULL; e = e->next)
		if (e->task_id == task_id && e->run_id == run_id && !e->retired)
			break;
	if (e == NULL)
	{
		RetireOthers(task_id, run_id);
		e = LoadModel(task, task_id, run_id);
	}
	e->evicted = false;
	e->last_used = ++use_clock;
	EvictLeastRecent(e);
	return e;
}

/* copy the looked-up row into pt (in mcxt); the run id, or 0 for none */
static int64
ReadTask(HeapTuple tup, TupleDesc desc, MemoryContext mcxt, PredictTask *pt)
{
	bool		isnull;
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	Datum		d;
	int			nkinds,
				ntypes;
	Datum	   *types;
	bool	   *tnulls;
	int64		run_id;

	pt->task_id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	pt->features = TextArray(SPI_getbinval(tup, desc, 2, &isnull), &pt->nfeat);
	pt->kinds = TextArray(SPI_getbinval(tup, desc, 3, &isnull), &nkinds);
	d = SPI_getbinval(tup, desc, 4, &isnull);
	run_id = isnull ? 0 : DatumGetInt64(d);
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 5, &isnull)), OIDOID,
					  sizeof(Oid), true, TYPALIGN_INT, &types, &tnulls, &ntypes);
	pt->srctypes = palloc0(sizeof(Oid) * (pt->nfeat + 1));
	for (int j = 0; j < ntypes && j < pt->nfeat; j++)
		pt->srctypes[j] = DatumGetObjectId(types[j]);
	if (nkinds != pt->nfeat)
		elog(ERROR, "task \"%s\" has %d features and %d feature types", pt->name, pt->nfeat, nkinds);
	MemoryContextSwitchTo(old);
	return run_id;
}

/* the model must read the task's features */
static void
CheckModel(const PredictTask *pt)
{
	if (pt->model->n_raw != pt->nfeat)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the model of run " INT64_FORMAT " reads %d columns, task \"%s\" has %d features",
						pt->run_id, pt->model->n_raw, pt->name, pt->nfeat),
				 errhint("Deploy a run trained on the task's current features.")));
}

/*
 * Resolve task (a name among the caller's tasks) to its deployed model,
 * held until mcxt is reset.  Errors name what is missing; another
 * tenant's task reads as a task that does not exist.
 */
void
PredictResolve(const char *task, MemoryContext mcxt, PredictTask *pt)
{
	Datum		arg = CStringGetTextDatum(task);
	Oid			argtype = TEXTOID;
	CachedModel *e;
	MemoryContextCallback *cb;

	memset(pt, 0, sizeof(*pt));
	pt->name = MemoryContextStrdup(mcxt, task);
	pt->owner = GetUserId();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(lookup_sql, 1, &argtype, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up task \"%s\"", task);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("task \"%s\" does not exist", task),
				 errhint("easeml.task_overview lists your tasks.")));
	pt->run_id = ReadTask(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, mcxt, pt);
	if (pt->run_id == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("task \"%s\" has no model to predict with yet", task),
				 errhint("A run must succeed first; easeml.leaderboard shows the runs that did.")));
	e = CachedFor(task, pt->task_id, pt->run_id);
	SPI_finish();
	pt->model = e->model;
	e->holds++;
	cb = MemoryContextAlloc(mcxt, sizeof(MemoryContextCallback));
	cb->func = ReleaseHold;
	cb->arg = e;
	MemoryContextRegisterResetCallback(mcxt, cb);
	CheckModel(pt);
}
