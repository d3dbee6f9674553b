/*-------------------------------------------------------------------------
 *
 * catalog_load.c
 *	  Loading the scheduler's world (CatState): the enabled models, the
 *	  active tasks (their runs from src/worker/catalog_runs.c), cost
 *	  estimates, the priors' history, measured costs and counters; and the
 *	  same load as the scheduler, from a backend (easeml.explain,
 *	  easeml.cost_estimates).  Statements in CatalogBegin's transactions
 *	  (src/worker/catalog.c).
 *
 * IDENTIFICATION
 *	  src/worker/catalog_load.c
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
#include "module/identity.h"
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

/*
 * Enabled models in id order.  [spaces] A generated candidate is loaded only
 * while its task is active: it is an arm of that task only, and a completed
 * (or paused, failed) task's candidates would otherwise pile up as arms of
 * every load (the rows stay, for the leaderboard and explain's history).
 * Everything else indexes models through CatalogModelIndex, which answers
 * -1 for a model not loaded.
 */
static void
LoadModels(CatState *state)
{
	int			n;
	int32	   *parent;
	int			dims = 0;
	bool		any = false;

	Exec("SELECT id, name, 'classification' = ANY (kinds), 'regression' = ANY (kinds),"
		 "       needs_image, cost_factor, family, params::text,"
		 "       easeml._param_num(params, CASE family WHEN 'gbt' THEN 'n_rounds' ELSE 'n_trees' END, 100),"
		 "       easeml._param_num(params, 'max_depth', 0),"
		 "       easeml._param_num(params, 'min_samples_leaf', 1),"
		 "       coalesce(generated_for, 0), coalesce(parent_model, 0),"
		 "       CASE WHEN generated_for IS NOT NULL OR id IN"
		 "                 (SELECT g.parent_model FROM easeml.models g"
		 "                   WHERE g.enabled AND g.parent_model IS NOT NULL"
		 "                     AND g.generated_for IN (SELECT id FROM easeml.tasks WHERE status = 'active'))"
		 "            THEN easeml._space_coords(family, params) END"
		 "  FROM easeml.models WHERE enabled AND family <> 'ensemble'"
		 "   AND (generated_for IS NULL"
		 "        OR generated_for IN (SELECT id FROM easeml.tasks WHERE status = 'active'))"
		 " ORDER BY id",
		 SPI_OK_SELECT, 0, NULL, NULL, NULL);
	n = (int) SPI_processed;
	state->n_models = n;
	state->models = CallerAlloc(sizeof(CatModel) * Max(n, 1), true);
	parent = palloc0(sizeof(int32) * Max(n, 1));
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
		m->generated_for = GetInt64(i, 12, 0);
		parent[i] = GetInt32(i, 13, 0);
		m->root = -1;
		m->n_coords = 0;
		m->coords = NULL;
		if (!GetNull(i, 14))
		{
			ArrayType  *a = DatumGetArrayTypeP(Get(i, 14));
			Datum	   *elems;
			bool	   *nulls;
			int			nc;

			deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
							  &elems, &nulls, &nc);
			m->coords = CallerAlloc(sizeof(double) * Max(nc, 1), false);
			for (int j = 0; j < nc; j++)
				m->coords[j] = nulls[j] ? NAN : DatumGetFloat8(elems[j]);
			m->n_coords = nc;
			dims = Max(dims, nc);
		}
	}
	/* [spaces] a generated candidate's root among the loaded models */
	for (int i = 0; i < n; i++)
	{
		int			j;

		if (state->models[i].generated_for == 0 || parent[i] == 0)
			continue;
		j = CatalogModelIndex(state, parent[i]);
		if (j >= 0 && state->models[j].generated_for == 0)
		{
			state->models[i].root = j;
			any = true;
		}
	}
	state->arm_root = NULL;
	state->arm_coords = NULL;
	state->space_dims = 0;
	if (any && dims > 0)
	{
		state->space_dims = dims;
		state->arm_root = CallerAlloc(sizeof(int) * n, false);
		state->arm_coords = CallerAlloc(sizeof(double) * n * dims, false);
		for (int i = 0; i < n; i++)
		{
			const CatModel *m = &state->models[i];

			/* a root and its generated arm must share the family's space */
			state->arm_root[i] = m->root >= 0 &&
				m->n_coords == state->models[m->root].n_coords && m->n_coords > 0 ? m->root : -1;
			for (int j = 0; j < dims; j++)
				state->arm_coords[(size_t) i * dims + j] = j < m->n_coords ? m->coords[j] : NAN;
		}
	}
	pfree(parent);
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

			/* [spaces] a generated candidate is its own task's only */
			t->eligible[k] = (t->regression ? m->regression : m->classification) &&
				(!m->needs_image || t->has_image) &&
				(m->generated_for == 0 || m->generated_for == t->id);
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
 * model of src/core/sizecost.c: one row per task with a succeeded run, and each
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

/* Next decision id, the policy (easeml.policy) and runs in flight per tenant. */
static void
LoadCounters(CatState *state)
{
	int			n;
	char	   *p;

	Exec("SELECT coalesce(max(id), 0) + 1, current_setting('easeml.policy')"
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
	CatalogLoadRuns(state, kept, CatalogCallerContext);
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
 * The spec the "auto" policy runs: the scheduler's last recorded choice
 * (easeml.policy_choices, docs/scheduler.md 7.7), or NULL before one.
 * Call connected to SPI as the bootstrap superuser.
 */
static char *
AutoChoice(MemoryContext into)
{
	char	   *spec = NULL;

	if (SPI_execute("SELECT policy FROM easeml.policy_choices WHERE chosen"
					" ORDER BY id DESC LIMIT 1", true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
		spec = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return spec ? MemoryContextStrdup(into, spec) : NULL;
}

/*
 * The whole catalog, read as the scheduler reads it, from a backend inside
 * its own transaction (easeml.explain, src/sql/sql_explain.c; the view
 * easeml.cost_estimates, src/sql/sql_cost.c), and with auto_spec (unless
 * NULL) the auto policy's last choice.  The worker's code, not a SQL
 * function: both SQL files call it here.
 */
void
CatalogLoadAsScheduler(CatState *state, char **auto_spec)
{
	EasemlIdentity saved;
	MemoryContext caller = CurrentMemoryContext;

	EasemlBeginSuperuser(&saved);
	/* on error, transaction abort restores the identity and settings */
	CatalogAttach();
	CatalogLoadState(state, true);
	if (auto_spec != NULL)
		*auto_spec = AutoChoice(caller);
	CatalogDetach();
	EasemlEndIdentity(&saved);
}
