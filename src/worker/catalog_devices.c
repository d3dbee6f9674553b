/*-------------------------------------------------------------------------
 *
 * catalog_devices.c
 *	  The catalog's side of devices (src/worker/devices.c,
 *	  docs/devices.md): the devices a launcher fills, the device probe,
 *	  each model's device kinds and cost factor per kind.  Statements in
 *	  CatalogBegin's transactions (src/worker/catalog.c).
 *
 * IDENTIFICATION
 *	  src/worker/catalog_devices.c
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
	out = MemoryContextAllocZero(CatalogCallerContext, sizeof(CatDevice) * Max(n, 1));
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

/* measured over every run: read on full loads only (as the cost rates) */
static double *kind_rates = NULL;	/* model id, kind, per_cell */
static int	n_kind_rates = 0;

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
	/* measured over every run: read on full loads only */
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

