/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Every SQL statement the scheduler runs against the easeml tables.
 *
 * Each statement runs inside a short transaction opened by CatalogBegin()
 * and closed by CatalogCommit(); values are always passed as $n
 * parameters.  Results are copied into the caller's memory context (the
 * scheduler's loop context) before the transaction ends, so the policy
 * math runs outside any transaction.
 *
 * IDENTIFICATION
 *	  src/worker/catalog.c
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

static MemoryContext caller_context = NULL;

/* Start a transaction with SPI connected; results go to the caller's context. */
void
CatalogBegin(const char *activity)
{
	caller_context = CurrentMemoryContext;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* SPI_palloc and our copies land in the caller's context */
	MemoryContextSwitchTo(caller_context);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/*
 * The same in a REPEATABLE READ transaction: every statement sees the
 * snapshot of the first (easeml.check_catalog compares two loads).
 */
void
CatalogBeginRepeatable(const char *activity)
{
	caller_context = CurrentMemoryContext;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* before the transaction's snapshot is taken, as SET TRANSACTION does */
	XactIsoLevel = XACT_REPEATABLE_READ;
	MemoryContextSwitchTo(caller_context);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

/* Commit the transaction opened by CatalogBegin(). */
void
CatalogCommit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(caller_context);
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Connect SPI inside the caller's transaction (a backend, not the
 * scheduler); results go to the caller's context.
 */
void
CatalogAttach(void)
{
	caller_context = CurrentMemoryContext;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "easeml: SPI_connect failed");
}

void
CatalogDetach(void)
{
	SPI_finish();
	MemoryContextSwitchTo(caller_context);
}

/* Text column copied into the caller's context, or NULL. */
static char *
GetText(int row, int col)
{
	char	   *s;
	char	   *copy;

	if (GetNull(row, col))
		return NULL;
	s = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
	copy = MemoryContextStrdup(caller_context, s);
	pfree(s);
	return copy;
}

/*
 * Is the extension installed in this database, at this library's version?
 * Call inside CatalogBegin; the scheduler idles until it is.
 */
CatalogStatus
CatalogReady(void)
{
	static bool warned = false;
	char	   *version;

	Exec("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'easeml'",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	if (SPI_processed == 0)
		return CATALOG_ABSENT;
	version = GetText(0, 1);
	if (version != NULL && strcmp(version, EASEML_VERSION) == 0)
	{
		warned = false;
		return CATALOG_READY;
	}
	/* the library was upgraded before the catalog: wait, touch nothing */
	if (!warned)
		ereport(WARNING,
				(errmsg("easeml: the catalog is at version %s but the library at %s; scheduling waits",
						version ? version : "?", EASEML_VERSION),
				 errhint("Run ALTER EXTENSION easeml UPDATE in database \"%s\".",
						 get_database_name(MyDatabaseId))));
	warned = true;
	return CATALOG_OTHER_VERSION;
}

/* Name of the bootstrap superuser, for the trainers' connections. */
char *
CatalogBootstrapUser(void)
{
	return MemoryContextStrdup(caller_context,
							   GetUserNameFromId(BOOTSTRAP_SUPERUSERID, false));
}

/*
 * Startup recovery: a run left 'running' belongs to a scheduler that is
 * gone, so it is marked 'interrupted' and its candidate becomes
 * schedulable again; but not those in keep, whose Slurm jobs the new
 * scheduler follows again.  Returns how many were marked.
 */
int
CatalogRecover(const int64 *keep, int n)
{
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];

	values[0] = Int8ArrayDatum(keep, n);
	/* rows a tenant keeps locked are left to CatalogReconcile later */
	Exec("UPDATE easeml.runs"
		 "   SET status = 'interrupted', finished_at = clock_timestamp(),"
		 "       seconds = extract(epoch FROM clock_timestamp() - started_at),"
		 "       error = 'interrupted: the scheduler restarted while the run was in flight'"
		 " WHERE id IN (SELECT id FROM easeml.runs WHERE status = 'running'"
		 "               AND id <> ALL ($1::int8[])"
		 "               FOR UPDATE SKIP LOCKED)",
		 SPI_OK_UPDATE, 1, types, values, NULL);
	return (int) SPI_processed;
}

/* Index of a model in state->models (loaded in id order), or -1. */
int
CatalogModelIndex(const CatState *state, int32 model_id)
{
	int			lo = 0,
				hi = state->n_models - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (state->models[mid].id == model_id)
			return mid;
		if (state->models[mid].id < model_id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* palloc in the caller's context: the state outlives the transaction. */
static void *
CallerAlloc(Size size, bool zero)
{
	return zero ? MemoryContextAllocZero(caller_context, size) :
		MemoryContextAlloc(caller_context, size);
}

/*
 * What drives each model's cost (easeml._cost_work, easeml._cost_per_class)
 * changes only with its row: it is cached by model id, family and
 * parameters, and asked of SQL for new or changed rows only.
 */
typedef struct WorkEntry
{
	int32		id;
	char	   *key;			/* family, then params as text */
	double		work;
	bool		per_class;
	CostArm		arm;			/* family index filled per load */
} WorkEntry;

static WorkEntry *work_cache = NULL;
static int	n_work_cache = 0;

static void
ModelWork(CatState *state)
{
	Oid			types[2] = {TEXTOID, TEXTOID};

	for (int i = 0; i < state->n_models; i++)
	{
		CatModel   *m = &state->models[i];
		char	   *key = psprintf("%s %s", m->family ? m->family : "",
								   m->params ? m->params : "");
		WorkEntry  *e = NULL;

		for (int j = 0; j < n_work_cache && e == NULL; j++)
			if (work_cache[j].id == m->id)
				e = &work_cache[j];
		if (e == NULL || strcmp(e->key, key) != 0)
		{
			Datum		values[2] = {CStringGetTextDatum(m->family ? m->family : ""),
			CStringGetTextDatum(m->params ? m->params : "{}")};

			Exec("SELECT easeml._cost_work($1, $2::jsonb), easeml._cost_per_class($1),"
				 "       s.work, s.width, s.inner_products, s.last_width"
				 "  FROM easeml._cost_shape($1, $2::jsonb) s",
				 SPI_OK_SELECT, 2, types, values, NULL);
			if (e == NULL)
			{
				work_cache = work_cache == NULL ?
					MemoryContextAlloc(TopMemoryContext, sizeof(WorkEntry)) :
					repalloc(work_cache, sizeof(WorkEntry) * (n_work_cache + 1));
				e = &work_cache[n_work_cache++];
				e->id = m->id;
				e->key = NULL;
			}
			if (e->key)
				pfree(e->key);
			e->key = MemoryContextStrdup(TopMemoryContext, key);
			e->work = GetFloat8(0, 1, 1);
			e->per_class = GetBool(0, 2);
			if (!(isfinite(e->work) && e->work > 0))
				e->work = 1;
			memset(&e->arm, 0, sizeof(CostArm));
			e->arm.formula = CostFormulaOf(m->family);
			e->arm.ref_rate = CostReferenceRate(m->family);
			e->arm.work = GetFloat8(0, 3, 1);
			e->arm.width = GetFloat8(0, 4, 0);
			e->arm.inner = GetFloat8(0, 5, 0);
			e->arm.out = GetFloat8(0, 6, 0);
			e->arm.per_class = e->per_class;
			e->arm.ref_passes = CostReferencePasses(m->family, &e->arm.max_passes);
			e->arm.pass_power = CostReferencePassPower(m->family);
			/* a custom trainer's relative cost is the admin's cost_factor */
			if (!CostFamilyKnown(m->family))
				e->arm.work *= m->cost_factor > 0 ? m->cost_factor : 1;
			if (!(isfinite(e->arm.work) && e->arm.work > 0))
				e->arm.work = 1;
		}
		m->cost_work = e->work;
		m->per_class = e->per_class;
		state->per_class[i] = m->per_class;
		state->cost_arms[i] = e->arm;
		/* models of one family pool: its first model's index */
		state->cost_arms[i].family = i;
		for (int j = 0; j < i; j++)
			if (strcmp(m->family ? m->family : "", state->models[j].family ? state->models[j].family : "") == 0)
			{
				state->cost_arms[i].family = j;
				break;
			}
		pfree(key);
	}
}

/* Enabled models in id order. */
static void
LoadModels(CatState *state)
{
	int			n;

	Exec("SELECT id, name, 'classification' = ANY (kinds), 'regression' = ANY (kinds),"
		 "       needs_image, cost_factor, family, params::text,"
		 "       easeml._param_num(params, CASE family WHEN 'gbt' THEN 'n_rounds' ELSE 'n_trees' END, 100),"
		 "       easeml._param_num(params, 'max_depth', 0),"
		 "       easeml._param_num(params, 'min_samples_leaf', 1)"
		 "  FROM easeml.models WHERE enabled ORDER BY id",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	state->n_models = n;
	state->models = CallerAlloc(sizeof(CatModel) * Max(n, 1), true);
	state->per_class = CallerAlloc(Max(n, 1), true);
	state->cost_arms = CallerAlloc(sizeof(CostArm) * Max(n, 1), true);
	for (int i = 0; i < n; i++)
	{
		CatModel   *m = &state->models[i];

		m->id = GetInt32(i, 1, 0);
		m->name = GetText(i, 2);
		m->classification = GetBool(i, 3);
		m->regression = GetBool(i, 4);
		m->needs_image = GetBool(i, 5);
		m->cost_factor = GetFloat8(i, 6, 1);
		m->family = GetText(i, 7);
		m->params = GetText(i, 8);
		m->mem.family = m->family;
		m->mem.trees = GetFloat8(i, 9, 100);
		m->mem.max_depth = GetFloat8(i, 10, 0);
		m->mem.min_leaf = GetFloat8(i, 11, 1);
	}
	ModelWork(state);
}

/* The per-model arrays of one task. */
static void
AllocTaskArrays(CatTask *t, int K)
{
	K = Max(K, 1);
	t->obs_arm = CallerAlloc(sizeof(int) * K, false);
	t->obs_y = CallerAlloc(sizeof(double) * K, false);
	t->done_arm = CallerAlloc(sizeof(int) * K, false);
	t->running_arm = CallerAlloc(sizeof(int) * K, false);
	t->eligible = CallerAlloc(K, true);
	t->cost = CallerAlloc(sizeof(double) * K, false);
	t->seconds = CallerAlloc(sizeof(double) * K, false);
	t->passes = CallerAlloc(sizeof(double) * K, false);
	t->obs_of = CallerAlloc(sizeof(int) * K, false);
	t->in_flight = CallerAlloc(sizeof(bool) * K, true);
	t->is_done = CallerAlloc(sizeof(bool) * K, true);
	for (int k = 0; k < K; k++)
	{
		t->obs_of[k] = -1;
		t->cost[k] = 1.0;
		t->seconds[k] = t->passes[k] = NAN;
	}
}

/*
 * Would a run of model m on task t surely need more than limit bytes
 * (src/core/memmodel.c)?  Then easeml.trainer_memory_limit would stop it: the
 * scheduler keeps the candidate off the task instead.
 */
bool
CatalogOverMemory(const CatModel *m, const CatTask *t, double limit)
{
	double		rows = t->n_rows / Max(t->n_folds, 1.0);

	return limit > 0 &&
		MemEstimateBytes(&m->mem, rows, t->n_features, t->n_classes,
						 !t->regression) > limit;
}

/*
 * Active tasks in id order, with their tenant's cap and last decision, and
 * [budget] the seconds a task with a time budget has spent: its selection
 * runs on its current snapshot, a running one until now() (the load's
 * transaction start), from the function task_overview reads.  That one
 * query per budgeted task is not incremental (docs/scheduler.md 7.6): the
 * sum grows with the clock.
 */
static void
LoadTasks(CatState *state)
{
	int			n;
	double		memory_limit;

	Exec("SELECT t.id, t.tenant, t.name, t.kind = 'regression', t.input_shape IS NOT NULL,"
		 "       coalesce(t.max_runs, 0), coalesce(tn.max_parallel, 0),"
		 "       greatest(t.n_rows * coalesce(t.folds, 1), 1)::float8,"
		 "       greatest(cardinality(t.features), 1)::float8,"
		 "       CASE WHEN t.kind = 'regression' THEN 1"
		 "            ELSE greatest(coalesce(t.n_classes, 2), 2) END::float8,"
		 "       t.snapshot_version, t.reactivated_at, greatest(coalesce(t.folds, 1), 1)::float8,"
		 "       coalesce(t.budget_seconds, 0),"
		 "       CASE WHEN t.budget_seconds IS NOT NULL"
		 "            THEN easeml._spent_seconds(t.id, t.snapshot_version, now()) ELSE 0 END"
		 "  FROM easeml.tasks t JOIN easeml.tenants tn ON tn.name = t.tenant"
		 " WHERE t.status = 'active' ORDER BY t.id",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	state->n_tasks = n;
	state->tasks = CallerAlloc(sizeof(CatTask) * Max(n, 1), true);
	memory_limit = EasemlTrainerMemoryLimitBytes();
	for (int i = 0; i < n; i++)
	{
		CatTask    *t = &state->tasks[i];

		AllocTaskArrays(t, state->n_models);
		t->id = GetInt64(i, 1, 0);
		t->tenant = GetText(i, 2);
		t->name = GetText(i, 3);
		t->regression = GetBool(i, 4);
		t->has_image = GetBool(i, 5);
		t->max_runs = GetInt32(i, 6, 0);
		t->tenant_cap = GetInt32(i, 7, 0);
		t->last_decision = -1;	/* CatalogLoadRuns */
		t->n_rows = GetFloat8(i, 8, 1);
		t->n_features = GetFloat8(i, 9, 1);
		t->n_classes = GetFloat8(i, 10, 2);
		t->has_version = !GetNull(i, 11);
		t->snapshot_version = GetInt32(i, 11, 0);
		t->reactivated = !GetNull(i, 12);
		t->reactivated_at = t->reactivated ? DatumGetTimestampTz(Get(i, 12)) : 0;
		t->n_folds = GetFloat8(i, 13, 1);
		/* [budget] the clock moves: read at every load, not kept */
		t->budget = GetFloat8(i, 14, 0);
		t->spent = GetFloat8(i, 15, 0);
		t->budget_spent = t->budget > 0 && t->spent >= t->budget;
		t->n_bins = NAN;		/* CatalogLoadRuns */
		for (int k = 0; k < state->n_models; k++)
		{
			CatModel   *m = &state->models[k];

			t->eligible[k] = (t->regression ? m->regression : m->classification) &&
				(!m->needs_image || t->has_image);
			if (t->eligible[k] && CatalogOverMemory(m, t, memory_limit))
			{
				t->eligible[k] = false;
				t->n_over_memory++;
			}
		}
	}
}

/*
 * Fallback cost estimates, the rule of the view easeml.cost_estimates
 * (sql/easeml.sql) made aware of parameters and classes: the task's own
 * measured time; else the model's measured seconds per unit of work
 * (easeml._cost_rates), times the task's work; else its family's; else
 * the admin's cost_factor times a per-unit time calibrated on every
 * measured enabled model (before any: COLD_START_SECONDS plus 1e-7 s per
 * unit).  A task's work for a model
 * is its cells (rows x features x folds) times the model's work from its
 * parameters (easeml._cost_work) times its classes for models that fit one
 * model per class (easeml._cost_per_class, of more than 2 classes).  The
 * view joins tasks x models; here one row per model comes back and the
 * product is formed in C, so a load costs O(models), not O(tasks x
 * models), in SQL.
 */
/*
 * Rates measured over every run (easeml._cost_rates, the kind factors)
 * grow costlier with the runs and change slowly: they are read on the full
 * loads only (at most every refit interval) and kept in between.
 */
static double *rates = NULL;	/* model id, per_cell */

/*
 * Before any run was measured, a run is assumed to take its start and data
 * load (about this long with the built-in trainer) plus 1e-7 s per unit of
 * work times its cost_factor.
 */
#define COLD_START_SECONDS 0.1
static int	n_rates = 0;
static double *kind_rates = NULL;	/* model id, kind, per_cell */
static int	n_kind_rates = 0;

/*
 * Copy the current SPI result (numeric columns, NULL as NaN) into a cache
 * of cols doubles per row in TopMemoryContext, replacing the old one.
 */
static double *
CacheRows(double *old, int *n, int cols)
{
	int			rows = (int) SPI_processed;
	double	   *c = MemoryContextAlloc(TopMemoryContext,
									   sizeof(double) * cols * Max(rows, 1));

	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
		{
			Oid			type = SPI_gettypeid(SPI_tuptable->tupdesc, j + 1);

			c[i * cols + j] = GetNull(i, j + 1) ? NAN :
				type == INT4OID ? (double) GetInt32(i, j + 1, 0) :
				type == INT8OID ? (double) GetInt64(i, j + 1, 0) : GetFloat8(i, j + 1, NAN);
		}
	if (old)
		pfree(old);
	*n = rows;
	return c;
}

static void
LoadCostEstimates(CatState *state)
{
	int			K = state->n_models;
	double	   *per_work = palloc(sizeof(double) * Max(K, 1));
	double	   *per_family = palloc(sizeof(double) * Max(K, 1));
	double		log_unit = 0,
				per_unit;
	int			units = 0,
				n;

	for (int k = 0; k < K; k++)
		per_work[k] = per_family[k] = NAN;
	if (state->full || rates == NULL)
	{
		Exec("SELECT model_id, per_cell FROM easeml._cost_rates()",
			 SPI_OK_SELECT, 0, NULL, NULL, NULL);
		rates = CacheRows(rates, &n_rates, 2);
	}
	n = n_rates;
	for (int i = 0; i < n; i++)
	{
		int			k = CatalogModelIndex(state, (int32) rates[2 * i]);
		double		p = rates[2 * i + 1];

		if (k >= 0 && isfinite(p) && p > 0)
		{
			per_work[k] = p / state->models[k].cost_work;
			log_unit += log(per_work[k] / state->models[k].cost_factor);
			units++;
		}
	}
	per_unit = units > 0 ? exp(log_unit / units) : 1e-7;
	/* a family's rate: the geometric mean of its measured models' */
	for (int k = 0; k < K; k++)
	{
		double		sum = 0;
		int			cnt = 0;

		for (int j = 0; j < K; j++)
			if (!isnan(per_work[j]) && state->models[j].family && state->models[k].family &&
				strcmp(state->models[j].family, state->models[k].family) == 0)
			{
				sum += log(per_work[j]);
				cnt++;
			}
		if (cnt > 0)
			per_family[k] = exp(sum / cnt);
	}
	for (int i = 0; i < state->n_tasks; i++)
	{
		CatTask    *t = &state->tasks[i];
		double		cells = Max(t->n_rows * t->n_features, 1.0);

		for (int k = 0; k < K; k++)
		{
			const CatModel *m = &state->models[k];
			double		work = cells * m->cost_work *
				(m->per_class && !t->regression && t->n_classes > 2 ? t->n_classes : 1.0);
			double		c;

			if (!isnan(t->seconds[k]))
				c = t->seconds[k];
			else if (!isnan(per_work[k]))
				c = per_work[k] * work;
			else if (!isnan(per_family[k]))
				c = per_family[k] * work;
			else if (units > 0)
				c = per_unit * m->cost_factor * work;
			else
				c = COLD_START_SECONDS + per_unit * m->cost_factor * work;
			if (isfinite(c) && c > 0)
				t->cost[k] = c;
		}
	}
	pfree(per_work);
	pfree(per_family);
}

/*
 * History for the priors: the seed history plus the best score per model
 * of every task, active ones included, so that tenants learn from each
 * other while they run.  Each row carries its kind (a kind's prior learns
 * from its own rows only) and, for a task's row, the task id: the
 * scheduler builds an active task's prior without its own row.
 */
static void
LoadHistory(CatState *state)
{
	int			n,
				rows = 0;
	char	   *prev = NULL;

	Exec("SELECT key, task_id, model_id, quality, regression FROM ("
		 "  SELECT 'h:' || h.kind || ':' || h.dataset AS key, 0::int8 AS task_id,"
		 "         h.model_id, h.quality, h.kind = 'regression' AS regression"
		 "    FROM easeml.history h"
		 "  UNION ALL"
		 "  SELECT 't:' || r.task_id, r.task_id, r.model_id, max(r.score),"
		 "         bool_or(t.kind = 'regression')"
		 "    FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id"
		 "   WHERE r.status = 'succeeded' AND r.score IS NOT NULL"
		 "   GROUP BY r.task_id, r.model_id) h"
		 " ORDER BY key",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	for (int i = 0; i < n; i++)
	{
		char	   *key = GetText(i, 1);

		if (prev == NULL || strcmp(prev, key) != 0)
			rows++;
		prev = key;
	}
	state->m_history = rows;
	state->history = CallerAlloc(sizeof(double) * Max(rows, 1) * Max(state->n_models, 1), false);
	state->history_task = CallerAlloc(sizeof(int64) * Max(rows, 1), true);
	state->history_kind = CallerAlloc(Max(rows, 1), true);
	for (int i = 0; i < rows * state->n_models; i++)
		state->history[i] = NAN;
	rows = -1;
	prev = NULL;
	for (int i = 0; i < n; i++)
	{
		char	   *key = GetText(i, 1);
		int			k = CatalogModelIndex(state, GetInt32(i, 3, 0));

		if (prev == NULL || strcmp(prev, key) != 0)
		{
			rows++;
			state->history_task[rows] = GetInt64(i, 2, 0);
			state->history_kind[rows] = GetBool(i, 5) ? 1 : 0;
		}
		prev = key;
		/* R^2 can be negative: every kind's scores are kept in [0,1] */
		if (k >= 0)
			state->history[rows * state->n_models + k] =
				Min(Max(GetFloat8(i, 4, NAN), 0.0), 1.0);
	}
}

/*
 * Measured training times of every task (active or not), for the cost
 * model of src/core/policy.c: one row per task with a succeeded run, and each
 * active task's own times.
 */
static void
LoadMeasuredCosts(CatState *state)
{
	int			n,
				rows = 0;
	int64		prev = -1;

	/* a k-fold task's rows count k times: its runs fit k models */
	Exec("SELECT r.task_id, max(t.n_rows * coalesce(t.folds, 1))::float8,"
		 "       max(cardinality(t.features))::float8,"
		 "       max(CASE WHEN t.kind = 'regression' THEN 1"
		 "                ELSE greatest(coalesce(t.n_classes, 2), 2) END)::float8,"
		 "       r.model_id, max(r.seconds),"
		 /* the fit time of the slowest run, where the trainer reported it */
		 "       (array_agg(CASE WHEN jsonb_typeof(r.metrics -> 'train_seconds') = 'number'"
		 "                       THEN (r.metrics ->> 'train_seconds')::float8 END"
		 "                  ORDER BY r.seconds DESC))[1],"
		 /* the passes that run made (the trainer's epochs), and the task's folds */
		 "       (array_agg(CASE WHEN jsonb_typeof(r.metrics -> 'epochs') = 'number'"
		 "                       THEN (r.metrics ->> 'epochs')::float8 END"
		 "                  ORDER BY r.seconds DESC))[1],"
		 "       max(greatest(coalesce(t.folds, 1), 1))::float8,"
		 /* the data's histogram bins, from its tree runs */
		 "       max(CASE WHEN jsonb_typeof(r.metrics -> 'bins') = 'number'"
		 "                THEN (r.metrics ->> 'bins')::float8 END)"
		 "  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id"
		 " WHERE r.status = 'succeeded' AND r.seconds > 0 AND t.n_rows > 0"
		 "   AND r.purpose = 'select'"
		 /* the CPU's times: other device kinds scale them (src/worker/devices.c) */
		 "   AND coalesce(r.device_kind, 'cpu') = 'cpu'"
		 " GROUP BY r.task_id, r.model_id ORDER BY r.task_id",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	for (int i = 0; i < n; i++)
	{
		if (GetInt64(i, 1, 0) != prev)
			rows++;
		prev = GetInt64(i, 1, 0);
	}
	state->m_cost = rows;
	state->cost_runtime = CallerAlloc(sizeof(double) * Max(rows, 1) * Max(state->n_models, 1), false);
	state->cost_sizes = CallerAlloc(sizeof(double) * 3 * Max(rows, 1), false);
	state->cost_task = CallerAlloc(sizeof(int64) * Max(rows, 1), false);
	state->cost_train = CallerAlloc(sizeof(double) * Max(rows, 1) * Max(state->n_models, 1), false);
	state->cost_passes = CallerAlloc(sizeof(double) * Max(rows, 1) * Max(state->n_models, 1), false);
	state->cost_folds = CallerAlloc(sizeof(double) * Max(rows, 1), false);
	state->cost_bins = CallerAlloc(sizeof(double) * Max(rows, 1), false);
	for (int i = 0; i < rows * state->n_models; i++)
		state->cost_runtime[i] = state->cost_train[i] = state->cost_passes[i] = NAN;
	rows = -1;
	prev = -1;
	for (int i = 0; i < n; i++)
	{
		int64		task = GetInt64(i, 1, 0);
		int			k = CatalogModelIndex(state, GetInt32(i, 5, 0));
		double		sec = GetFloat8(i, 6, NAN);

		if (task != prev)
		{
			rows++;
			state->cost_task[rows] = task;
			state->cost_sizes[3 * rows] = Max(GetFloat8(i, 2, 1), 1.0);
			state->cost_sizes[3 * rows + 1] = Max(GetFloat8(i, 3, 1), 1.0);
			state->cost_sizes[3 * rows + 2] = Max(GetFloat8(i, 4, 1), 1.0);
			state->cost_folds[rows] = Max(GetFloat8(i, 9, 1), 1.0);
			state->cost_bins[rows] = NAN;
		}
		/* the most of any of its runs (rows are per task and model) */
		if (GetFloat8(i, 10, NAN) > 0 && !(state->cost_bins[rows] >= GetFloat8(i, 10, NAN)))
			state->cost_bins[rows] = GetFloat8(i, 10, NAN);
		prev = task;
		if (k < 0)
			continue;
		state->cost_runtime[rows * state->n_models + k] = sec;
		state->cost_train[rows * state->n_models + k] = GetFloat8(i, 7, NAN);
		state->cost_passes[rows * state->n_models + k] = GetFloat8(i, 8, NAN);
	}
}

/* A loaded state's measured runs, as the cost model's input (in data). */
const CostData *
CatalogCostData(const CatState *state, CostData *data)
{
	data->mc = state->m_cost;
	data->sizes = state->cost_sizes;
	data->folds = state->cost_folds;
	data->seconds = state->cost_runtime;
	data->train = state->cost_train;
	data->passes = state->cost_passes;
	data->bins = state->cost_bins;
	return data;
}

/* Next decision id, the effective policy and runs in flight per tenant. */
static void
LoadCounters(CatState *state)
{
	int			n;
	char	   *p;

	Exec("SELECT coalesce(max(id), 0) + 1,"
		 "       coalesce((SELECT value FROM easeml.settings WHERE key = 'policy'),"
		 "                current_setting('easeml.policy'))"
		 "  FROM easeml.decisions",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	state->decision_no = GetInt64(0, 1, 1);
	p = GetText(0, 2);
	strlcpy(state->policy, p ? p : "default", sizeof(state->policy));

	/*
	 * Per tenant with runs in flight: its trainers, and its own queued runs
	 * that a slot could start (CatalogClaimQueued), which wait for its
	 * share like a task that could run.
	 */
	Exec("SELECT r.tenant, count(*) FILTER (WHERE r.status = 'running')::int,"
		 "       count(*) FILTER (WHERE r.status = 'queued' AND NOT r.cancel_requested"
		 "                          AND r.purpose = 'select'"
		 "                          AND t.status IN ('active', 'completed'))::int,"
		 "       coalesce(max(tn.max_parallel), 0)"
		 "  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id"
		 "  LEFT JOIN easeml.tenants tn ON tn.name = r.tenant"
		 " WHERE r.status IN ('queued', 'running') GROUP BY r.tenant ORDER BY r.tenant",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	state->n_tenant_running = n;
	state->tenant_names = CallerAlloc(sizeof(char *) * Max(n, 1), false);
	state->tenant_running = CallerAlloc(sizeof(int) * Max(n, 1), false);
	state->tenant_queued = CallerAlloc(sizeof(int) * Max(n, 1), false);
	state->tenant_caps = CallerAlloc(sizeof(int) * Max(n, 1), false);
	for (int i = 0; i < n; i++)
	{
		state->tenant_names[i] = GetText(i, 1);
		state->tenant_running[i] = GetInt32(i, 2, 0);
		state->tenant_queued[i] = GetInt32(i, 3, 0);
		state->tenant_caps[i] = GetInt32(i, 4, 0);
	}
}

/*
 * Load models, active tasks with their runs, cost estimates, the priors'
 * history, measured costs and the effective policy; the runs from the
 * scheduler's kept store (src/worker/catalog_runs.c) or read afresh.
 */
static void
LoadState(CatState *state, bool full, bool kept)
{
	memset(state, 0, sizeof(*state));
	state->full = full;
	LoadModels(state);
	LoadTasks(state);
	CatalogLoadRuns(state, kept, caller_context);
	LoadCostEstimates(state);
	if (full)
	{
		LoadHistory(state);
		LoadMeasuredCosts(state);
	}
	LoadCounters(state);
}

/* Load the state reading every run afresh.  Call inside CatalogBegin. */
void
CatalogLoadState(CatState *state, bool full)
{
	LoadState(state, full, false);
}

/*
 * The scheduler's load: the runs come from its kept store, brought up to
 * date with the runs that changed since its previous load.  Call inside
 * CatalogBegin.
 */
void
CatalogLoadStateKept(CatState *state, bool full)
{
	LoadState(state, full, true);
}

/*
 * For runs in flight (the run budget, src/worker/scheduler.c): the tenant, the
 * estimate its decision used, and how often its task's candidate was
 * preempted before (each preemption doubles the next run's budget, so a
 * long candidate is not preempted for ever).  A run not found keeps a
 * NULL tenant.
 */
void
CatalogRunBudgets(const int64 *run_ids, int n, CatRunBudget *out)
{
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];

	for (int i = 0; i < n; i++)
	{
		out[i].tenant = NULL;
		out[i].est_seconds = 0;
		out[i].preempted = 0;
	}
	values[0] = Int8ArrayDatum(run_ids, n);
	Exec("SELECT r.id, r.tenant::text,"
		 "       coalesce((SELECT max(d.est_seconds) FROM easeml.decisions d"
		 "                  WHERE d.run_id = r.id), 0),"
		 "       (SELECT count(*)::int FROM easeml.runs p"
		 "         WHERE p.task_id = r.task_id AND p.model_id = r.model_id"
		 "           AND p.status = 'interrupted' AND p.error LIKE 'preempted%')"
		 "  FROM easeml.runs r WHERE r.id = ANY ($1)",
		 SPI_OK_SELECT, 1, types, values, NULL);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		int64		id = GetInt64(row, 1, 0);

		for (int i = 0; i < n; i++)
			if (run_ids[i] == id)
			{
				out[i].tenant = GetText(row, 2);
				out[i].est_seconds = GetFloat8(row, 3, 0);
				out[i].preempted = GetInt32(row, 4, 0);
			}
	}
}

/*
 * Before a load: cancel the queued runs whose cancel was requested, and
 * say whether any queued run is left to claim.  Mostly nothing is queued:
 * one probe of the index of runs in flight.
 */
bool
CatalogCancelQueued(void)
{
	Exec("SELECT EXISTS (SELECT 1 FROM easeml.runs WHERE status = 'queued')",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	if (!GetBool(0, 1))
		return false;
	Exec("UPDATE easeml.runs SET status = 'cancelled', finished_at = clock_timestamp(),"
		 "       error = 'cancelled before it started'"
		 " WHERE id IN (SELECT id FROM easeml.runs WHERE status = 'queued' AND cancel_requested"
		 "               FOR UPDATE SKIP LOCKED)",
		 SPI_OK_UPDATE, 0, NULL, NULL, NULL);
	return true;
}

/*
 * Claim runs that users queued (oldest first) for the given free slots:
 * they become 'running' in this transaction, on the slot's device.  A
 * slot takes the oldest queued run whose candidate can use its device's
 * kind and did not fail because of that device before, of a tenant that
 * holds fewer trainers than its cap: its max_parallel, and its cap in
 * caps[] (its fair share, LiveWorldQueueCap: a tenant's queue counts
 * against its share like the policy's choices).  A tenant not named in
 * tenants[] (its queue is newer than the caller's load) waits for the next
 * step.
 * The caller lists GPU slots first, so a GPU-capable run takes a free GPU
 * before a CPU slot.  Returns the number claimed.
 */
int
CatalogClaimQueued(const CatSlot *slots, int nslots, const char *const *tenants,
				   const int *caps, int ntenants, CatClaim *claims)
{
	int			claimed = 0;
	Datum	   *names = palloc(sizeof(Datum) * Max(ntenants, 1));
	Datum	   *capd = palloc(sizeof(Datum) * Max(ntenants, 1));
	ArrayType  *name_array;
	ArrayType  *cap_array;

	for (int i = 0; i < ntenants; i++)
	{
		names[i] = DirectFunctionCall1(namein, CStringGetDatum(tenants[i]));
		capd[i] = Int32GetDatum(caps[i]);
	}
	name_array = construct_array(names, ntenants, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR);
	cap_array = construct_array(capd, ntenants, INT4OID, 4, true, TYPALIGN_INT);

	for (int i = 0; i < nslots; i++)
	{
		Oid			types[7] = {INT4OID, TEXTOID, TEXTOID, INT4OID, INT4OID,
		NAMEARRAYOID, INT4ARRAYOID};
		Datum		values[7] = {Int32GetDatum(slots[i].slot),
			CStringGetTextDatum(slots[i].device),
			CStringGetTextDatum(slots[i].kind),
			Int32GetDatum(EASEML_EXIT_DEVICE_OOM),
			Int32GetDatum(EASEML_EXIT_DEVICE_UNAVAILABLE),
			PointerGetDatum(name_array),
		PointerGetDatum(cap_array)};

		Exec("WITH c AS ("
			 " UPDATE easeml.runs r SET status = 'running', slot = $1,"
			 "       device = $2, device_kind = $3, started_at = clock_timestamp()"
			 " WHERE r.id = (SELECT q.id FROM easeml.runs q"
			 "                 JOIN easeml.tasks t ON t.id = q.task_id"
			 "                 JOIN easeml.tenants tn ON tn.name = q.tenant"
			 "                 JOIN easeml.models m ON m.id = q.model_id"
			 "                 CROSS JOIN LATERAL (SELECT count(*) AS n FROM easeml.runs x"
			 "                         WHERE x.tenant = q.tenant AND x.status = 'running') held"
			 "                WHERE q.status = 'queued' AND NOT q.cancel_requested"
			 "                  AND q.purpose = 'select'"
			 "                  AND t.status IN ('active', 'completed')"
			 "                  AND $3 = ANY (m.device_kinds)"
			 "                  AND NOT EXISTS (SELECT 1 FROM easeml.runs b"
			 "                        WHERE b.task_id = q.task_id AND b.model_id = q.model_id"
			 "                          AND b.device = $2 AND b.status = 'failed'"
			 "                          AND b.exit_code IN ($4, $5))"
			 "                  AND (tn.max_parallel IS NULL OR tn.max_parallel > held.n)"
			 "                  AND held.n < coalesce((SELECT a.cap FROM unnest($6::name[], $7::int[]) a (tenant, cap)"
			 "                                          WHERE a.tenant = q.tenant), 0)"
			 "                ORDER BY q.id LIMIT 1 FOR UPDATE OF q SKIP LOCKED)"
			 " RETURNING r.id, r.task_id, r.tenant, r.model_id),"
			 " d AS ("
			 "  INSERT INTO easeml.decisions (task_id, tenant, model_id, run_id, policy, rule)"
			 "  SELECT c.task_id, c.tenant, c.model_id, c.id,"
			 "         coalesce((SELECT value FROM easeml.settings WHERE key = 'policy'),"
			 "                  current_setting('easeml.policy')), 'tenant''s own queue'"
			 "    FROM c)"
			 " SELECT id, task_id, tenant::text, model_id FROM c",
			 SPI_OK_SELECT, 7, types, values, NULL);
		if (SPI_processed == 0)
			continue;			/* nothing queued this slot may start */
		claims[claimed].run_id = GetInt64(0, 1, 0);
		claims[claimed].task_id = GetInt64(0, 2, 0);
		claims[claimed].tenant = GetText(0, 3);
		claims[claimed].model_id = GetInt32(0, 4, 0);
		claims[claimed].slot = slots[i].slot;
		claims[claimed].device = slots[i].device;
		claimed++;
	}
	return claimed;
}

/*
 * Claim queued refits (runs.purpose = 'refit': a deployed run trained
 * again on every row, docs/results.md) for the given free slots, oldest
 * first, before the tenants' queues and the policy's choices: a refit
 * only waits for its tenant's max_parallel, a device of a kind its model
 * can use, and an active or completed task.  No decision is recorded: a
 * refit is no choice of the policy.  Returns the number claimed.
 */
int
CatalogClaimRefits(const CatSlot *slots, int nslots, CatClaim *claims)
{
	int			claimed = 0;

	for (int i = 0; i < nslots; i++)
	{
		Oid			types[5] = {INT4OID, TEXTOID, TEXTOID, INT4OID, INT4OID};
		Datum		values[5] = {Int32GetDatum(slots[i].slot),
			CStringGetTextDatum(slots[i].device),
			CStringGetTextDatum(slots[i].kind),
			Int32GetDatum(EASEML_EXIT_DEVICE_OOM),
		Int32GetDatum(EASEML_EXIT_DEVICE_UNAVAILABLE)};

		Exec("UPDATE easeml.runs r SET status = 'running', slot = $1,"
			 "       device = $2, device_kind = $3, started_at = clock_timestamp()"
			 " WHERE r.id = (SELECT q.id FROM easeml.runs q"
			 "                 JOIN easeml.tasks t ON t.id = q.task_id"
			 "                 JOIN easeml.models m ON m.id = q.model_id"
			 "                 LEFT JOIN easeml.tenants tn ON tn.name = q.tenant"
			 "                WHERE q.status = 'queued' AND q.purpose = 'refit'"
			 "                  AND NOT q.cancel_requested"
			 "                  AND t.status IN ('active', 'completed')"
			 "                  AND $3 = ANY (m.device_kinds)"
			 "                  AND NOT EXISTS (SELECT 1 FROM easeml.runs b"
			 "                        WHERE b.task_id = q.task_id AND b.model_id = q.model_id"
			 "                          AND b.device = $2 AND b.status = 'failed'"
			 "                          AND b.exit_code IN ($4, $5))"
			 "                  AND (tn.max_parallel IS NULL"
			 "                       OR tn.max_parallel > (SELECT count(*) FROM easeml.runs x"
			 "                                              WHERE x.tenant = q.tenant"
			 "                                                AND x.status = 'running'))"
			 "                ORDER BY q.id LIMIT 1 FOR UPDATE OF q SKIP LOCKED)"
			 " RETURNING r.id, r.task_id, r.tenant::text, r.model_id",
			 SPI_OK_UPDATE_RETURNING, 5, types, values, NULL);
		if (SPI_processed == 0)
			continue;			/* no refit this slot may start */
		claims[claimed].run_id = GetInt64(0, 1, 0);
		claims[claimed].task_id = GetInt64(0, 2, 0);
		claims[claimed].tenant = GetText(0, 3);
		claims[claimed].model_id = GetInt32(0, 4, 0);
		claims[claimed].slot = slots[i].slot;
		claims[claimed].device = slots[i].device;
		claimed++;
	}
	return claimed;
}

/*
 * Queue the refits that active deployments lack (easeml._queue_refits:
 * their task's row was locked when they were deployed, or refit_all was
 * switched on since).  Returns how many were queued.
 */
int
CatalogQueueMissingRefits(void)
{
	Exec("SELECT easeml._queue_refits()", SPI_OK_SELECT, 0, NULL, NULL, NULL);
	return GetInt32(0, 1, 0);
}

/*
 * The estimate a claimed run's decision used, for the run budget
 * (CatalogRunBudgets): a queued run is preempted like any other.
 */
void
CatalogSetClaimEstimate(int64 run_id, double est_seconds)
{
	Oid			types[2] = {INT8OID, FLOAT8OID};
	Datum		values[2] = {Int64GetDatum(run_id), Float8GetDatum(est_seconds)};

	Exec("UPDATE easeml.decisions SET est_seconds = $2 WHERE run_id = $1",
		 SPI_OK_UPDATE, 2, types, values, NULL);
}

/*
 * A run the tenant queued and the run budget preempted is queued again,
 * so that the request is not lost: it waits for its tenant's share with
 * the rest of its queue.  Nothing when the candidate is queued or running
 * again already, or the task is gone.
 */
void
CatalogRequeuePreempted(int64 run_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(run_id)};

	Exec("INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, queued_at)"
		 " SELECT p.task_id, p.tenant, p.model_id, 'queued', 'user', p.queued_at"
		 "   FROM easeml.runs p JOIN easeml.tasks t ON t.id = p.task_id"
		 "  WHERE p.id = $1 AND p.requested_by = 'user' AND p.status = 'interrupted'"
		 "    AND t.status IN ('active', 'paused', 'completed')"
		 " ON CONFLICT (task_id, model_id) WHERE status IN ('queued', 'running') AND purpose = 'select'"
		 " DO NOTHING",
		 SPI_OK_INSERT, 1, types, values, NULL);
}

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
 * 'running', slot taken), in one statement.  Returns the run id.
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
		 "  VALUES ($1, $2, $3, $4, 'running', clock_timestamp(), $24, $25) RETURNING id),"
		 " d AS ("
		 "  INSERT INTO easeml.decisions (task_id, tenant, model_id, run_id, policy,"
		 "                                mu, sigma, acquisition, gp_status, est_seconds,"
		 "                                rule, score, eligible)"
		 "  SELECT $1, $2, $3, r.id, $5, $6, $7, $8, $9, $10, $11, $12, $13 FROM r"
		 "  RETURNING id, run_id),"
		 " c AS ("
		 "  INSERT INTO easeml.decision_candidates (decision_id, role, rank, task_id, tenant,"
		 "                                          model_id, mu, sigma, est_seconds,"
		 "                                          acquisition, score)"
		 "  SELECT d.id, u.* FROM d,"
		 "         unnest($14, $15, $16, $17, $18, $19, $20, $21, $22, $23) AS u)"
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
 * Runs recorded as 'running' that no slot of this scheduler tracks (a
 * launch that failed half-way, a restored dump): a user's run that never
 * got its trainer goes back to 'queued', any other becomes 'interrupted'
 * so its candidate can be chosen again.  Rows younger than a few seconds
 * are left alone.  Returns how many were changed.
 */
int
CatalogReconcile(const int64 *tracked, int n)
{
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];

	values[0] = Int8ArrayDatum(tracked, n);
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
		 "                    ELSE 'interrupted: the scheduler was not tracking its trainer' END"
		 " WHERE r.id IN (SELECT x.id FROM easeml.runs x"
		 "                 WHERE x.status = 'running' AND x.id <> ALL ($1::int8[])"
		 "                   AND coalesce(x.started_at, x.queued_at) < clock_timestamp() - interval '5 seconds'"
		 "                 FOR UPDATE SKIP LOCKED)",
		 SPI_OK_UPDATE, 1, types, values, NULL);
	return (int) SPI_processed;
}

/*
 * Close tasks that are finished: no candidate left (or max_runs reached,
 * or [budget] the time budget spent) and nothing in flight become
 * 'completed'; tasks whose runs keep failing without a single success
 * become 'failed' with the last error.  A task whose budget is spent waits
 * for its runs in flight: they finish (docs/scheduler.md 7.8).
 */
void
CatalogCloseTasks(const CatState *state)
{
	/* with every model disabled nothing was tried: nothing is complete */
	if (state->n_models == 0)
		return;
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
}

/* ----------------------------------------------------------------------
 * Devices (src/worker/devices.c, docs/devices.md)
 * ----------------------------------------------------------------------
 */

/*
 * The devices a launcher fills, GPUs first, with their effective slots.
 * Call inside CatalogBegin; returns how many.
 */
int
CatalogLoadDevices(const char *launcher, CatDevice **devices)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(launcher)};
	CatDevice  *out;
	int			n;

	Exec("SELECT name, kind, ordinal, easeml._device_slots(kind, slots), enabled AND present"
		 "  FROM easeml.devices WHERE launcher = $1"
		 " ORDER BY kind = 'cpu', ordinal, name",
		 SPI_OK_SELECT, 1, types, values, NULL);
	n = (int) SPI_processed;
	out = MemoryContextAllocZero(caller_context, sizeof(CatDevice) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		out[i].name = GetText(i, 1);
		out[i].kind = GetText(i, 2);
		out[i].ordinal = GetInt32(i, 3, 0);
		out[i].slots = Max(GetInt32(i, 4, 0), 0);
		out[i].usable = GetBool(i, 5);
	}
	*devices = out;
	return n;
}

/*
 * Record the trainer's device probe (its JSON output, or NULL when it
 * failed: then only the CPU is known).  Returns the devices present.
 */
int
CatalogRecordProbe(const char *probe, int protocol)
{
	Oid			types[2] = {TEXTOID, INT4OID};
	Datum		values[2];
	char		nulls[2] = "  ";

	if (probe != NULL)
		values[0] = CStringGetTextDatum(probe);
	else
		nulls[0] = 'n';
	values[1] = Int32GetDatum(protocol);
	Exec("SELECT easeml._record_probe($1, $2)", SPI_OK_SELECT, 2, types, values, nulls);
	return GetInt32(0, 1, 0);
}

/*
 * Each model's cost factor per device kind (src/worker/devices.c): its measured
 * seconds per cell (rows x features) on that kind over those on the CPU,
 * as geometric means over its succeeded runs; a model measured on one
 * kind only takes the factor of all models measured on both; 1 when no
 * model was.
 */
static void
LoadKindFactors(CatState *state)
{
	double	   *per_cell = palloc(sizeof(double) * PLACE_N_KINDS * Max(state->n_models, 1));
	double		log_sum[PLACE_N_KINDS] = {0};
	int			pairs[PLACE_N_KINDS] = {0};
	int			n;

	for (int i = 0; i < PLACE_N_KINDS * state->n_models; i++)
		per_cell[i] = NAN;
	/* measured over every run: read on full loads only (see rates) */
	if (state->full || kind_rates == NULL)
	{
		Exec("SELECT r.model_id, coalesce(r.device_kind, 'cpu'),"
			 "       exp(avg(ln(r.seconds / greatest(t.n_rows * cardinality(t.features), 1))))"
			 "  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id"
			 " WHERE r.status = 'succeeded' AND r.seconds > 0 AND r.purpose = 'select'"
			 " GROUP BY 1, 2",
			 SPI_OK_SELECT, 0, NULL, NULL, NULL);
		n = (int) SPI_processed;
		if (kind_rates)
			pfree(kind_rates);
		kind_rates = MemoryContextAlloc(TopMemoryContext, sizeof(double) * 3 * Max(n, 1));
		n_kind_rates = n;
		for (int i = 0; i < n; i++)
		{
			kind_rates[3 * i] = GetInt32(i, 1, 0);
			kind_rates[3 * i + 1] = PlaceKindFromName(GetText(i, 2));
			kind_rates[3 * i + 2] = GetFloat8(i, 3, NAN);
		}
	}
	for (int i = 0; i < n_kind_rates; i++)
	{
		int			k = CatalogModelIndex(state, (int32) kind_rates[3 * i]);
		int			kind = (int) kind_rates[3 * i + 1];

		if (k >= 0 && kind >= 0)
			per_cell[kind * state->n_models + k] = kind_rates[3 * i + 2];
	}
	for (int kind = 0; kind < PLACE_N_KINDS; kind++)
		for (int k = 0; k < state->n_models; k++)
		{
			double		r = per_cell[kind * state->n_models + k] /
				per_cell[PLACE_KIND_CPU * state->n_models + k];

			if (isfinite(r) && r > 0)
			{
				log_sum[kind] += log(r);
				pairs[kind]++;
			}
		}
	for (int k = 0; k < state->n_models; k++)
		for (int kind = 0; kind < PLACE_N_KINDS; kind++)
		{
			double		r = per_cell[kind * state->n_models + k] /
				per_cell[PLACE_KIND_CPU * state->n_models + k];

			if (!(isfinite(r) && r > 0))
				r = pairs[kind] > 0 ? exp(log_sum[kind] / pairs[kind]) : 1.0;
			state->models[k].kind_factor[kind] = kind == PLACE_KIND_CPU ? 1.0 : r;
		}
	pfree(per_cell);
}

/*
 * What placement needs besides the devices: the device kinds of every
 * loaded model and their cost factors.  The (candidate, device) pairs of
 * each active task that failed for the device (out of memory, or
 * unusable: a candidate is never tried twice on a device that failed it)
 * came with its runs (src/worker/catalog_runs.c).  Call inside CatalogBegin after
 * CatalogLoadState().
 */
void
CatalogLoadPlacement(CatState *state)
{
	int			n;

	Exec("SELECT id, array_to_string(device_kinds, ',') FROM easeml.models"
		 " WHERE enabled ORDER BY id",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	for (int i = 0; i < n; i++)
	{
		int			k = CatalogModelIndex(state, GetInt32(i, 1, 0));
		char	   *list = GetText(i, 2);
		char	   *save = NULL;
		CatModel   *m;

		if (k < 0 || list == NULL)
			continue;
		m = &state->models[k];
		m->n_device_kinds = 0;
		for (char *tok = strtok_r(list, ",", &save); tok != NULL;
			 tok = strtok_r(NULL, ",", &save))
		{
			int			kind = PlaceKindFromName(tok);

			if (kind >= 0 && m->n_device_kinds < lengthof(m->device_kinds))
				m->device_kinds[m->n_device_kinds++] = (PlaceKind) kind;
		}
	}

	LoadKindFactors(state);
	/* the device bans of each task came with its runs (CatalogLoadRuns) */
}
