/*-------------------------------------------------------------------------
 *
 * catalog_claim.c
 *	  Claiming runs for free slots: queued runs and refits, cancelled
 *	  queued runs, the estimates and budgets the run budget needs.
 *	  Statements in CatalogBegin's transactions (src/worker/catalog.c).
 *
 * IDENTIFICATION
 *	  src/worker/catalog_claim.c
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
 * For runs in flight (the run budget, src/worker/stops.c): the tenant, the
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
			 "         current_setting('easeml.policy'), 'tenant''s own queue'"
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
 * again on every row, docs/results.md) and ensembles (runs.purpose =
 * 'ensemble', queued by easeml._queue_ensemble: docs/models.md,
 * "Ensembles") for the given free slots, oldest
 * first, before the tenants' queues and the policy's choices: a refit
 * only waits for its tenant's max_parallel, a device of a kind its model
 * can use, and an active or completed task.  No decision is recorded: a
 * refit or an ensemble is no choice of the policy.  Returns the number
 * claimed.
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
			 "                WHERE q.status = 'queued' AND q.purpose IN ('refit', 'ensemble')"
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
 * A run the tenant queued that was interrupted (the run budget preempted
 * it, the server or the scheduler restarted, its trainer lost its
 * connection, its launch failed) is queued again, so that the request is
 * not lost: it waits for its tenant's share with the rest of its queue.  A
 * request interrupted for another reason than preemption or a failed
 * launch (preempted true: launches pause after one) is queued again at
 * most INTERRUPTED_TRIES times (its runs share its queued_at), so that a
 * trainer that always ends that way does not loop.  Nothing when the
 * candidate is queued or running again already, or the task is gone.
 */
#define INTERRUPTED_TRIES 3

void
CatalogRequeueInterrupted(int64 run_id, bool preempted)
{
	Oid			types[3] = {INT8OID, BOOLOID, INT4OID};
	Datum		values[3];

	values[0] = Int64GetDatum(run_id);
	values[1] = BoolGetDatum(preempted);
	values[2] = Int32GetDatum(INTERRUPTED_TRIES);
	Exec("INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, queued_at)"
		 " SELECT p.task_id, p.tenant, p.model_id, 'queued', 'user', p.queued_at"
		 "   FROM easeml.runs p JOIN easeml.tasks t ON t.id = p.task_id"
		 "  WHERE p.id = $1 AND p.requested_by = 'user' AND p.status = 'interrupted'"
		 "    AND p.purpose = 'select' AND NOT p.cancel_requested"
		 "    AND t.status IN ('active', 'paused', 'completed')"
		 "    AND ($2 OR (SELECT count(*) FROM easeml.runs x"
		 "                 WHERE x.task_id = p.task_id AND x.model_id = p.model_id"
		 "                   AND x.requested_by = 'user' AND x.queued_at = p.queued_at"
		 "                   AND x.status = 'interrupted') <= $3)"
		 " ON CONFLICT (task_id, model_id) WHERE status IN ('queued', 'running') AND purpose = 'select'"
		 " DO NOTHING",
		 SPI_OK_INSERT, 3, types, values, NULL);
}

