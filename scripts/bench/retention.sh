#!/usr/bin/env bash
# What the scheduler's own log costs per run, and what expiring it costs.
#
#   scripts/bench/retention.sh [DEMO_MINUTES] [BACKLOG_DECISIONS]   (default 4, 100000; as root)
#
# A throw-away cluster (PG_CONFIG selects the installation, as for
# scripts/test.sh) with the real trainer and two slots runs the four demo
# tasks of scripts/setup.sh (Fashion-MNIST subset of EASEML_FASHION_ROWS
# rows, default 6000; breast cancer; digits; diabetes regression) for
# DEMO_MINUTES.  Then, with the scheduler off:
#
#  1. rows and bytes per ended run of each table a run writes to: the
#     scheduler's log (decisions, decision_candidates, trainer_jobs) and the
#     run's own record (run_events, run_progress, runs);
#  2. a backlog of BACKLOG_DECISIONS decisions 60 days old (copies of the
#     demo's, with their runner-ups) is purged the way the scheduler does
#     it, batches of 200 per table, one transaction each (the time of each
#     batch is what the scheduler's loop waits), and, as the baseline, the
#     same backlog by one easeml.purge_scheduler_log('30 days') call.
#
# Last lines: RESULT per_run_<table>=<rows> ..., RESULT bytes_per_decision=...
# (a decision with its runner-ups, at the backlog's size) batch_ms_p50=...
# batch_ms_max=... batches=... batched_total_s=... one_call_s=...
set -euo pipefail
cd "$(dirname "$0")/../.."
DEMO_MINUTES=${1:-4}
BACKLOG=${2:-100000}

[ "$(id -u)" = 0 ] || { echo "retention.sh: run as root" >&2; exit 1; }
. scripts/lib/cluster.sh
. scripts/lib/demo.sh
cluster_install
cluster_new
tmp=$cluster_dir
cluster_start "shared_preload_libraries = 'easeml'" "easeml.database = postgres" \
	"easeml.max_workers = 2" "easeml.enabled = off"
psql() { PGOPTIONS="-c client_min_messages=warning" cluster_psql "$@"; }

psql -c "CREATE EXTENSION easeml"
demo_tasks

psql -c "ALTER SYSTEM SET easeml.enabled = on" -c "SELECT pg_reload_conf()" >/dev/null
until=$(($(date +%s) + DEMO_MINUTES * 60))
while [ "$(date +%s)" -lt "$until" ]; do
	[ "$(psql -At -c "SELECT count(*) FROM easeml.tasks WHERE status = 'active'")" = 0 ] && break
	sleep 10
done
psql -c "ALTER SYSTEM SET easeml.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
# the runs in flight end (stopped: interrupted) before counting
for _ in $(seq 60); do
	[ "$(psql -At -c "SELECT count(*) FROM easeml.runs WHERE status IN ('queued', 'running')")" = 0 ] && break
	sleep 2
done

echo "# 1. per ended run: rows, bytes (table + indexes + TOAST)"
psql -At -F ' ' -c "
	WITH n AS (SELECT count(*)::float8 AS runs FROM easeml.runs WHERE status NOT IN ('queued', 'running'))
	SELECT t, round((cnt / n.runs)::numeric, 1), round((pg_total_relation_size(('easeml.' || t)::regclass) / n.runs)::numeric)
	  FROM n, LATERAL (VALUES
		('decisions', (SELECT count(*) FROM easeml.decisions)),
		('decision_candidates', (SELECT count(*) FROM easeml.decision_candidates)),
		('trainer_jobs', (SELECT count(*) FROM easeml.trainer_jobs)),
		('policy_choices', (SELECT count(*) FROM easeml.policy_choices)),
		('run_events', (SELECT count(*) FROM easeml.run_events)),
		('run_progress', (SELECT count(*) FROM easeml.run_progress)),
		('runs', (SELECT count(*) FROM easeml.runs))) v(t, cnt)" | tee "$tmp/per_run"
echo "# runs by status: $(psql -At -c "SELECT string_agg(status || '=' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM easeml.runs GROUP BY 1) s")"

# a backlog: copies of the demo's decisions and runner-ups, 60 days old
# (foreign-key triggers off while it is built: a fixture, not measured).
# Copy g is decided g seconds after the backlog's start, which maps it back
# to its source decision and that decision's runner-ups.
backlog() {
	psql -o /dev/null -c "SET session_replication_role = replica" -c "
		WITH src AS (SELECT d.*, row_number() OVER (ORDER BY d.id) AS k, count(*) OVER () AS n
					   FROM easeml.decisions d WHERE d.decided_at > now() - interval '1 day'),
		copies AS (
			INSERT INTO easeml.decisions (decided_at, task_id, tenant, model_id, run_id, policy, mu,
				sigma, acquisition, est_seconds, gp_status, rule, score, eligible)
			SELECT now() - interval '60 days' + make_interval(secs => g), s.task_id, s.tenant, s.model_id,
				   s.run_id, s.policy, s.mu, s.sigma, s.acquisition, s.est_seconds, s.gp_status, s.rule,
				   s.score, s.eligible
			  FROM generate_series(1, $BACKLOG) g JOIN src s ON s.k = 1 + g % s.n
			RETURNING id, decided_at)
		INSERT INTO easeml.decision_candidates (decision_id, role, rank, task_id, tenant, model_id,
			mu, sigma, est_seconds, acquisition, score)
		SELECT c.id, dc.role, dc.rank, dc.task_id, dc.tenant, dc.model_id, dc.mu, dc.sigma,
			   dc.est_seconds, dc.acquisition, dc.score
		  FROM copies c
		  JOIN src s ON s.k = 1 + round(extract(epoch FROM c.decided_at - (now() - interval '60 days')))::bigint % s.n
		  JOIN easeml.decision_candidates dc ON dc.decision_id = s.id"
	psql -c "VACUUM ANALYZE easeml.decisions, easeml.decision_candidates"
}
backlog
echo "# backlog: $(psql -At -c "SELECT count(*) FROM easeml.decisions") decisions, $(psql -At -c "SELECT count(*) FROM easeml.decision_candidates") runner-ups"
# bytes a decision with its runner-ups takes at this size (table, indexes, TOAST)
per_decision=$(psql -At -c "
	SELECT round(((pg_total_relation_size('easeml.decisions') + pg_total_relation_size('easeml.decision_candidates'))
				  / (SELECT count(*) FROM easeml.decisions))::numeric)")
echo "# bytes per decision with its runner-ups: $per_decision"

# 2a. the scheduler's way: batches of 200, one transaction each
psql -o /dev/null <<'SQL'
CREATE TABLE public.batch_ms (ms float8, rows bigint);
DO $$
DECLARE
	t0 timestamptz;
	n bigint;
BEGIN
	LOOP
		t0 := clock_timestamp();
		SELECT sum(deleted) INTO n FROM easeml._purge_scheduler_log('30 days', 200);
		INSERT INTO public.batch_ms VALUES (1000 * extract(epoch FROM clock_timestamp() - t0), n);
		COMMIT;
		EXIT WHEN n = 0;
	END LOOP;
END;
$$;
SQL
read -r p50 p99 bmax batches total < <(psql -At -F ' ' -c "
	SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2),
		   round(max(ms)::numeric, 2), count(*), round((sum(ms) / 1000)::numeric, 2)
	  FROM public.batch_ms WHERE rows > 0")
echo "batched: $batches batches, ms per batch p50 $p50 p99 $p99 max $bmax, total $total s"

# 2b. the baseline: the same backlog in one call
backlog
start=$(date +%s.%N)
psql -o /dev/null -c "SELECT * FROM easeml.purge_scheduler_log('30 days')"
one=$(echo "$(date +%s.%N) - $start" | bc)
echo "one call: $one s (one transaction)"

echo "RESULT $(awk '{printf "per_run_%s=%s ", $1, $2}' "$tmp/per_run")"
echo "RESULT bytes_per_decision=$per_decision batch_ms_p50=$p50 batch_ms_p99=$p99 batch_ms_max=$bmax batches=$batches batched_total_s=$total one_call_s=$one backlog=$BACKLOG"
