/*-------------------------------------------------------------------------
 *
 * sql_replay.c
 *	  easeml.replay(...) and easeml.replay_curve(...): the replay simulator
 *	  of src/core/replay_*.c over server-side CSV files (superuser only).
 *
 * IDENTIFICATION
 *	  src/sql/sql_replay.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <stdlib.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "core/policy.h"
#include "core/replay.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(easeml_replay);

typedef struct ReplayArgs
{
	ReplayMatrix quality;
	ReplayMatrix cost;
	ReplayMatrix sizes_table;
	double	   *sizes;
	char	  **policies;
	double	   *thresholds;
	ReplayOutput out;
	bool		have_out;
} ReplayArgs;

static void
ReplayArgsFree(ReplayArgs *a)
{
	ReplayMatrixFree(&a->quality);
	ReplayMatrixFree(&a->cost);
	ReplayMatrixFree(&a->sizes_table);
	free(a->sizes);
	a->sizes = NULL;
	if (a->have_out)
		ReplayOutputFree(&a->out);
	a->have_out = false;
}

/* Polled by the simulator between runs: stop when the query is cancelled. */
static int
ReplayInterrupted(void *arg)
{
	return InterruptPending ? 1 : 0;
}

#define MATRIX_HINT "A matrix is a CSV file the server can read: a header row, then an id and one number per model on each row."
#define SIZES_HINT "sizes_csv has a header row, then id, rows, features on each row, with the quality matrix's ids."

/* Raise a replay library error (after freeing what it allocated). */
static void
ReplayError(ReplayArgs *a, int rc, const char *what, const char *err, const char *hint)
{
	ReplayArgsFree(a);
	ereport(ERROR,
			(errcode(rc == REPLAY_IO ? ERRCODE_UNDEFINED_FILE :
					 rc == REPLAY_NO_MEMORY ? ERRCODE_OUT_OF_MEMORY :
					 ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s: %s", what, err),
			 hint ? errhint("%s", hint) : 0));
}

/* One row per (policy, threshold): median time and speedups. */
static void
PutThresholdRows(ReturnSetInfo *rsinfo, const ReplayOutput *out)
{
	for (int p = 0; p < out->n_policies; p++)
		for (int k = 0; k < out->n_thresholds; k++)
		{
			Datum		values[5];
			bool		nulls[5] = {0};
			double		med,
						max;
			double		t = out->median_time[p * out->n_thresholds + k];

			values[0] = CStringGetTextDatum(out->names[p]);
			values[1] = Float8GetDatum(out->thresholds[k]);
			values[2] = Float8GetDatum(t);
			nulls[2] = !isfinite(t);
			if (ReplaySpeedup(out, 0, p, k, &med, &max) == 0 && isfinite(med))
				values[3] = Float8GetDatum(med);
			else
				nulls[3] = true;
			if (!nulls[3] && isfinite(max))
				values[4] = Float8GetDatum(max);
			else
				nulls[4] = true;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

/* One row per (policy, grid time): the averaged loss curve. */
static void
PutCurveRows(ReturnSetInfo *rsinfo, const ReplayOutput *out)
{
	for (int p = 0; p < out->n_policies; p++)
		for (int g = 0; g < out->grid_points; g++)
		{
			Datum		values[4];
			bool		nulls[4] = {0};

			values[0] = CStringGetTextDatum(out->names[p]);
			values[1] = Float8GetDatum(out->grid[g]);
			values[2] = Float8GetDatum(out->curve_mean[p * out->grid_points + g]);
			values[3] = Float8GetDatum(out->curve_median[p * out->grid_points + g]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

/* The policies argument: names easeml.policies() knows, with options. */
static void
ReadPolicies(ArrayType *arr, ReplayArgs *a, ReplayConfig *cfg)
{
	Datum	   *datums;
	bool	   *nulls;
	int			n;
	char		err[1024];

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &datums, &nulls, &n);
	if (n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("policies must not be empty"),
				 errhint("For example policies => '{popular,hybrid:cost}'.")));
	a->policies = palloc(sizeof(char *) * n);
	for (int i = 0; i < n; i++)
	{
		ReplayPolicy check;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("policies must not contain NULL"),
					 errhint("SELECT easeml.policies() lists the policy names.")));
		a->policies[i] = TextDatumGetCString(datums[i]);
		if (ReplayParsePolicy(a->policies[i], &check, err, sizeof(err)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid policy \"%s\": %s", a->policies[i], err),
					 errhint("A policy is a name of easeml.policies() with options, e.g. \"hybrid:cost\".")));
	}
	cfg->n_policies = n;
	cfg->policies = (const char *const *) a->policies;
}

/* The thresholds argument: losses to reach, each positive. */
static void
ReadThresholds(ArrayType *arr, ReplayArgs *a, ReplayConfig *cfg)
{
	Datum	   *datums;
	bool	   *nulls;
	int			n;

	deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &datums, &nulls, &n);
	if (n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("thresholds must not be empty"),
				 errhint("For example thresholds => '{0.01}'.")));
	a->thresholds = palloc(sizeof(double) * n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i] || !(DatumGetFloat8(datums[i]) > 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("thresholds must be positive numbers"),
					 errhint("A threshold is a loss (1 - quality) to reach, for example 0.01.")));
		a->thresholds[i] = DatumGetFloat8(datums[i]);
	}
	cfg->n_thresholds = n;
	cfg->thresholds = a->thresholds;
}

/* The cost_model argument: a size model, none, or the true costs. */
static void
ReadCostModel(const char *name, ReplayConfig *cfg)
{
	int			cm;

	if (strcmp(name, "oracle") == 0)
	{
		cfg->oracle_cost = 1;
		return;
	}
	cm = PolicyCostKindFromName(name);
	if (cm < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown cost model \"%s\"", name),
				 errhint("Use none, size_linear, size_loglinear, size_gp or oracle.")));
	cfg->cost_model = (PolicyCostKind) cm;
}

/*
 * Read the CSV files into a (the library allocates with malloc: on error
 * ReplayError frees them) and point cfg at them.
 */
static void
ReadMatrices(const char *quality_path, const char *cost_path, const char *sizes_path,
			 bool one_minus, ReplayArgs *a, ReplayConfig *cfg)
{
	char		err[1024];
	int			rc;

	if ((rc = ReplayReadCsv(quality_path, &a->quality, err, sizeof(err))) != 0)
		ReplayError(a, rc, "could not read the quality matrix", err, MATRIX_HINT);
	if (one_minus)
		ReplayOneMinus(&a->quality);
	cfg->quality = a->quality.data;
	cfg->n_rows = a->quality.rows;
	cfg->K = a->quality.cols;
	if (cost_path != NULL)
	{
		if ((rc = ReplayReadCsv(cost_path, &a->cost, err, sizeof(err))) != 0)
			ReplayError(a, rc, "could not read the cost matrix", err, MATRIX_HINT);
		if (a->cost.rows != a->quality.rows || a->cost.cols != a->quality.cols)
			ReplayError(a, REPLAY_BAD_INPUT, "the cost matrix does not match",
						"it must have the quality matrix's rows and columns", NULL);
		cfg->cost = a->cost.data;
	}
	else if (!cfg->oracle_cost)
		cfg->cost_model = POLICY_COST_NONE;
	if (sizes_path != NULL)
	{
		if ((rc = ReplayReadCsv(sizes_path, &a->sizes_table, err, sizeof(err))) != 0)
			ReplayError(a, rc, "could not read the sizes", err, SIZES_HINT);
		if ((a->sizes = malloc(sizeof(double) * 2 * a->quality.rows)) == NULL)
			ReplayError(a, REPLAY_NO_MEMORY, "out of memory", "sizes", NULL);
		rc = ReplayJoinById(&a->quality, &a->sizes_table, a->sizes, err, sizeof(err));
		if (rc != 0)
			ReplayError(a, rc, "could not join the sizes", err, SIZES_HINT);
		cfg->sizes = a->sizes;
	}
	else if (cfg->cost_model != POLICY_COST_NONE && !cfg->oracle_cost)
		ReplayError(a, REPLAY_BAD_INPUT, "the cost model needs data-set sizes",
					"pass sizes_csv, or cost_model => 'none' or 'oracle'", NULL);
}

/* Simulate; a cancelled query stops the simulator and raises its error. */
static void
RunReplay(ReplayConfig *cfg, ReplayArgs *a)
{
	char		err[1024];
	int			rc;

	cfg->cancel = ReplayInterrupted;
	rc = ReplayRun(cfg, &a->out, err, sizeof(err));
	if (rc != 0)
	{
		if (InterruptPending)
		{
			ReplayArgsFree(a);
			CHECK_FOR_INTERRUPTS();
		}
		ReplayError(a, rc, "replay failed", err, rc == REPLAY_NO_MEMORY ? NULL : MATRIX_HINT);
	}
	a->have_out = true;
}

/*
 * easeml.replay(quality_csv, cost_csv, sizes_csv, tenants, devices,
 *				 policies, draws, seed, thresholds, one_minus, cost_model,
 *				 curve)
 *
 * curve = false: one row per (policy, threshold) with the median time to
 * reach it and the median and maximum speedup over the first policy.
 * curve = true: the averaged loss curve, one row per (policy, grid time).
 */
Datum
easeml_replay(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ReplayArgs	a;
	ReplayConfig cfg;
	bool		curve;

	for (int i = 0; i < 12; i++)
		if (PG_ARGISNULL(i) && i != 1 && i != 2)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("only cost_csv and sizes_csv may be NULL"),
					 errhint("Leave an argument out for its default.")));
	memset(&a, 0, sizeof(a));
	ReplayConfigDefault(&cfg);
	ReadPolicies(PG_GETARG_ARRAYTYPE_P(5), &a, &cfg);
	ReadThresholds(PG_GETARG_ARRAYTYPE_P(8), &a, &cfg);
	ReadCostModel(text_to_cstring(PG_GETARG_TEXT_PP(10)), &cfg);
	cfg.n_tenants = PG_GETARG_INT32(3);
	cfg.devices = PG_GETARG_INT32(4);
	cfg.draws = PG_GETARG_INT32(6);
	cfg.seed = (uint64_t) PG_GETARG_INT64(7);
	if (cfg.n_tenants < 1 || cfg.devices < 1 || cfg.draws < 1 ||
		cfg.draws > 1000 || cfg.devices > 1024)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tenants, devices and draws must be positive (draws at most 1000, devices at most 1024)"),
				 errhint("Replay runs in your backend: keep draws modest.")));
	curve = PG_GETARG_BOOL(11);
	ReadMatrices(text_to_cstring(PG_GETARG_TEXT_PP(0)),
				 PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)),
				 PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)),
				 PG_GETARG_BOOL(9), &a, &cfg);
	RunReplay(&cfg, &a);

	/*
	 * The output is malloc'd by the library: free it however the rows end
	 * (the tuplestore may run out of memory or work_mem's temp files).
	 */
	PG_TRY();
	{
		InitMaterializedSRF(fcinfo, 0);
		if (curve)
			PutCurveRows(rsinfo, &a.out);
		else
			PutThresholdRows(rsinfo, &a.out);
	}
	PG_FINALLY();
	{
		ReplayArgsFree(&a);
	}
	PG_END_TRY();
	return (Datum) 0;
}
