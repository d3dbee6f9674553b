#!/usr/bin/env bash
# Live scheduler under load: many small tasks of many tenants on a real
# cluster, the scheduler's decision gap and how busy it keeps the slots.
#
#   scripts/bench/live.sh [RUNS] [TENANTS] [TASKS_PER_TENANT]
#                         (default 5000 runs, 200 x 5 tasks; as root)
#
# A throw-away cluster (PG_CONFIG selects the installation, as for
# scripts/test.sh: initdb in a temporary directory, a free port,
# shared_preload_libraries = easeml) with two trainer slots.  TENANTS
# tenants declare TASKS_PER_TENANT tasks each over a 60-row table while the
# scheduler is off; then it is turned on and runs until RUNS runs have
# finished.  The trainer is a stub that sleeps TRAIN_SECONDS (0.2 s) and
# reports a score (the real trainer answers the device probe), so that the
# scheduler's own time is what is measured.
#
# Measured from easeml.runs (each run's start and end as the scheduler
# recorded them, per slot):
#  - decision gap: the time a slot stays free between the end of one run
#    and the start of the next one in it (reaping, recording the result,
#    loading the catalog, deciding, recording the decision, spawning); p50
#    and p99 over the 200 runs around run 500 and the last 200 before RUNS;
#  - slot_busy: the share of slot-time in trainer runs over the same
#    windows (work is waiting all the time: every task has candidates left);
#  - the scheduler's SQL per catalog load: pg_stat_statements over the
#    scheduler's statements (calls, mean ms), and the mean time of a load.
#
# POLICY (environment; default: the extension's default) sets easeml.policy
# for the run, e.g. POLICY=hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2 to load the
# refit cycle with the history mixture's fit.
#
# There is no peer: the number is compared with the targets of issue 7
# (p99 < 50 ms at 5,000 runs, busy >= 0.9).  On a 2-core machine the stub
# trainers, the server and the scheduler share the cores.  Last line:
# RESULT decision_gap_p99_ms=<ms at RUNS> slot_busy=<fraction at RUNS>.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-5000}
TENANTS=${2:-200}
PER=${3:-5}
TRAIN_SECONDS=${TRAIN_SECONDS:-0.2}
POLICY=${POLICY:-}
[[ $POLICY =~ ^[a-z_0-9:=.,-]*$ ]] || { echo "live.sh: POLICY has characters a policy spec does not" >&2; exit 1; }
EARLY=500
[ "$RUNS" -ge 700 ] || EARLY=$((RUNS / 2))

[ "$(id -u)" = 0 ] || { echo "live.sh: run as root" >&2; exit 1; }
. scripts/lib/cluster.sh
cluster_install
cluster_new
tmp=$cluster_dir

# the stub trainer: the real one for the device probe and model checks;
# a run reports its score through the database with the run's token, as
# the real trainer does (easeml_trainer.attach, easeml_trainer.result)
cat >"$tmp/stub_trainer" <<EOF
#!/bin/sh
case "\$1" in --run) ;; *) exec "$BINDIR/easeml-trainer" "\$@" ;; esac
sleep $TRAIN_SECONDS
score=\$(printf '0.%04d' \$(( (\$2 * 7919) % 10000 )))
exec "$BINDIR/psql" "\$EASEML_CONNINFO" -X -q -o /dev/null -v ON_ERROR_STOP=1 \\
	-c "SELECT easeml_trainer.attach(\$2, '\$EASEML_RUN_TOKEN')" \\
	-c "SELECT easeml_trainer.result(\$2, 0, '{\"score\": \$score}', NULL)"
EOF
chmod 755 "$tmp/stub_trainer"

cluster_start "shared_preload_libraries = 'easeml, pg_stat_statements'" "pg_stat_statements.track = all" \
	"easeml.database = postgres" "easeml.max_workers = 2" "easeml.enabled = off" \
	"easeml.trainer_path = '$tmp/stub_trainer'" ${POLICY:+"easeml.policy = '$POLICY'"}
psql() { cluster_psql "$@"; }

psql -c "CREATE EXTENSION easeml; CREATE EXTENSION pg_stat_statements;"
psql -c "CREATE TABLE public.small AS
	SELECT i::float8 AS x1, (i % 7)::float8 AS x2, (i % 5)::float8 * 0.3 + i AS x3,
	       (ARRAY['a', 'b', 'c'])[i % 3 + 1] AS label
	  FROM generate_series(1, 60) i;
	GRANT SELECT ON public.small TO PUBLIC;"
echo "# declaring $TENANTS x $PER tasks"
t0=$(date +%s.%N)
{
	for i in $(seq 1 "$TENANTS"); do
		echo "CREATE ROLE live_$i LOGIN; SELECT easeml.add_tenant('live_$i');"
		echo "SET ROLE live_$i;"
		for j in $(seq 1 "$PER"); do
			echo "INSERT INTO easeml.tasks (name, source, target) VALUES ('t$j', 'public.small', 'label');"
		done
		echo "RESET ROLE;"
	done
} | psql -o /dev/null 2>/dev/null
echo "# declared $(psql -At -c 'SELECT count(*) FROM easeml.tasks') tasks in $(echo "$(date +%s.%N) - $t0" | bc) s; \
$(psql -At -c "SELECT count(*) FROM easeml.models WHERE enabled AND 'classification' = ANY (kinds)") candidates each"

psql -c "SELECT pg_stat_statements_reset()" -c "ALTER SYSTEM SET easeml.enabled = on" -c "SELECT pg_reload_conf()" >/dev/null
start=$(date +%s)
while :; do
	done_runs=$(psql -At -c "SELECT count(*) FROM easeml.runs WHERE status NOT IN ('queued', 'running')")
	[ "$done_runs" -ge "$RUNS" ] && break
	if [ $(( $(date +%s) - start )) -gt $((RUNS * 2 + 600)) ]; then
		echo "live.sh: only $done_runs runs finished in time" >&2
		break
	fi
	sleep 5
done
echo "# policy: $(psql -At -c "SELECT setting || ' (running ' || running || ')' FROM easeml.policy_status")"
psql -c "ALTER SYSTEM SET easeml.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
echo "# $done_runs runs finished in $(( $(date +%s) - start )) s; by status: \
$(psql -At -c "SELECT string_agg(status || ' ' || n, ', ' ORDER BY status) FROM (SELECT status, count(*) AS n FROM easeml.runs GROUP BY status) s")"

# gaps and busy share per window of finished runs (by end order)
psql -At -F ' ' <<EOF >"$tmp/windows"
WITH r AS (
	SELECT slot, started_at, finished_at,
		   row_number() OVER (ORDER BY finished_at) AS n
	  FROM easeml.runs WHERE finished_at IS NOT NULL AND started_at IS NOT NULL
), g AS (
	SELECT n, extract(epoch FROM lead(started_at) OVER (PARTITION BY slot ORDER BY started_at)
								 - finished_at) * 1000 AS gap_ms
	  FROM r
), w AS (
	SELECT * FROM (VALUES ('early', greatest($EARLY - 100, 1), $EARLY + 100),
						  ('late', greatest($done_runs - 200, 1), $done_runs)) v(name, lo, hi)
), bounds AS (
	SELECT w.name, min(r.finished_at) AS t0, max(r.finished_at) AS t1
	  FROM w JOIN r ON r.n BETWEEN w.lo AND w.hi GROUP BY w.name
), busy AS (
	SELECT b.name,
		   sum(extract(epoch FROM least(r.finished_at, b.t1) - greatest(r.started_at, b.t0)))
		   / (2 * extract(epoch FROM b.t1 - b.t0)) AS busy
	  FROM bounds b JOIN r ON r.finished_at > b.t0 AND r.started_at < b.t1
	 GROUP BY b.name, b.t0, b.t1
), gaps AS (
	SELECT w.name, w.lo, w.hi,
		   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY g.gap_ms)::numeric, 1) AS p50,
		   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY g.gap_ms)::numeric, 1) AS p99
	  FROM w JOIN g ON g.n BETWEEN w.lo AND w.hi AND g.gap_ms IS NOT NULL
	 GROUP BY w.name, w.lo, w.hi
)
SELECT gaps.name, gaps.lo, gaps.hi, gaps.p50, gaps.p99, round(busy.busy::numeric, 3)
  FROM gaps JOIN busy USING (name)
 ORDER BY gaps.lo;
EOF
while read -r name lo hi p50 p99 busy; do
	echo "window $name (finished runs $lo-$hi): decision gap p50 ${p50} ms, p99 ${p99} ms, slots busy $busy"
done <"$tmp/windows"

echo "# the scheduler's statements (pg_stat_statements, all loads and decisions)"
psql -At -F ' | ' -c "
	SELECT calls, round(mean_exec_time::numeric, 2) AS mean_ms, round(total_exec_time::numeric) AS total_ms,
		   regexp_replace(left(query, 90), '\s+', ' ', 'g')
	  FROM pg_stat_statements
	 WHERE query LIKE '%easeml.%' AND userid = 'postgres'::regrole
	 ORDER BY total_exec_time DESC LIMIT 12"
loads=$(psql -At -c "SELECT max(calls) FROM pg_stat_statements WHERE query LIKE '%FROM easeml.models WHERE enabled ORDER BY id%'")
total=$(psql -At -c "SELECT round(sum(total_exec_time)::numeric) FROM pg_stat_statements WHERE userid = 'postgres'::regrole")
echo "# catalog loads: $loads; all statements: $total ms in total"
# grep -c exits 1 when it counts none: not a failure here
echo "# errors in the server log: $(grep -c "ERROR" "$tmp/server.log" || true)"
late=$(awk '$1 == "late" { print $5, $6 }' "$tmp/windows")
echo "RESULT decision_gap_p99_ms=${late% *} slot_busy=${late#* } runs=$done_runs"
