#!/usr/bin/env bash
# How long the trainer slots stay free after each round of generated
# candidates (docs/scheduler.md 7.9): one budgeted task on a small data set,
# as scripts/bench/automl.sh runs it, on a throw-away cluster.
#
#   scripts/bench/genround.sh                     (as root; heart, 60 s)
#   SECONDS_RUN=120 EXTRA="easeml.generate_every = 0" scripts/bench/genround.sh
#
# The cluster (scripts/lib/cluster.sh): easeml.max_workers = 2, the seed
# history loaded as scripts/setup.sh does, the default policy, plus the
# settings in EXTRA (lines of postgresql.conf, separated by ';').  One tenant
# declares one task over Statlog heart (270 x 13, automl_bench.py data;
# refit_all => false, budget_seconds 2 x SECONDS_RUN); after SECONDS_RUN
# seconds (or once the task ended) the scheduler is turned off.
#
# A round is the generated models one transaction made (models.created_at,
# the start of the round's transaction).  For each round the runs say:
#   idle1: the first run started after the round minus the round's start,
#   idle2: the same for the second run (both slots free after a round made
#          with nothing in flight, the grid-spent rounds),
#   before: the round's start minus the end of the last run before it (the
#          catalog load that found the task's grid spent).
# Last lines:
#   RESULT genround_rounds=<rounds made with nothing in flight>
#   RESULT genround_idle1_ms=<median idle1 over them> genround_idle2_ms=<median idle2>
#   RESULT genround_before_ms=<median before>
#   RESULT genround_early_rounds=<rounds made while runs were in flight>
#          genround_early_idle_ms=<median over them of the free slots' wait
#          for their next run, for the runs that ended within 2 s after it>
# The server log (timestamps in ms) is kept as scripts/bench/out/genround/server.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/scripts/bench/out/genround
PY=/usr/bin/python3
SECONDS_RUN=${SECONDS_RUN:-60}
SET=${SET:-heart}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 LC_ALL=C

[ "$(id -u)" = 0 ] || { echo "genround.sh: run as root (it runs a cluster)" >&2; exit 1; }
[[ $SECONDS_RUN =~ ^[0-9]+$ && $SECONDS_RUN -gt 0 ]] || { echo "genround.sh: SECONDS_RUN is not a number of seconds" >&2; exit 1; }
mkdir -p "$out"
"$PY" scripts/bench/automl_bench.py data "$SET" "$out/$SET.csv"

. scripts/lib/cluster.sh
. scripts/lib/automl_set.sh
cluster_install
extra=()
if [ -n "${EXTRA:-}" ]; then
	IFS=';' read -r -a extra <<<"$EXTRA"
fi
cluster_new
cluster_start "shared_preload_libraries = 'easeml'" "easeml.database = 'postgres'" \
	"easeml.max_workers = 2" "easeml.cancel_grace = 0" "jit = off" \
	"log_line_prefix = '%m [%p] '" ${extra[@]+"${extra[@]}"}
psql() { PGOPTIONS="-c client_min_messages=warning" cluster_psql "$@"; }
automl_set "$SET" "$out/$SET.csv"
sleep 2
echo "== $SET for $SECONDS_RUN s ($(cut -d' ' -f1-3 /proc/loadavg) load average; settings: ${EXTRA:-none})"
t0=$(date +%s)
psql -o /dev/null <<EOF
SET ROLE bench;
INSERT INTO easeml.tasks (name, source, target, val_fraction, seed, refit_all, budget_seconds)
VALUES ('$SET', 'public.$SET', 'label', 0.2, 42, false, $((2 * SECONDS_RUN)));
EOF
while [ $(($(date +%s) - t0)) -lt "$SECONDS_RUN" ]; do
	[ "$(psql -At -c "SELECT count(*) FROM easeml.tasks t WHERE t.status IN ('completed', 'failed')
		AND NOT EXISTS (SELECT 1 FROM easeml.runs r WHERE r.status IN ('queued', 'running'))")" = 1 ] && break
	sleep 1
done
psql -c "ALTER SYSTEM SET easeml.enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
psql -At -c "SELECT 'task: ' || status || coalesce(' (' || status_reason || ')', '') FROM easeml.tasks"
psql -At -c "SELECT 'runs: ' || string_agg(status || ' ' || n, ', ' ORDER BY status)
			   FROM (SELECT status, count(*) AS n FROM easeml.runs GROUP BY status) c"
psql -At -c "SELECT 'auto: ' || count(*) || ' choice(s) recorded, the last: ' || coalesce(max(policy), '-')
			   FROM easeml.policy_choices"
# one line per round ("round <start> <models> <runs in flight> <before> <idle1> <idle2>", ms), then the RESULT lines
psql -At -F ' ' <<'EOF'
CREATE TEMP VIEW ms AS
WITH rounds AS (
	SELECT created_at AS t, count(*) AS n FROM easeml.models
	 WHERE generated_for IS NOT NULL GROUP BY created_at),
per AS (
	SELECT r.t, r.n,
		   (SELECT count(*) FROM easeml.runs x
			 WHERE x.started_at <= r.t AND (x.finished_at IS NULL OR x.finished_at > r.t)) AS in_flight,
		   (SELECT max(x.finished_at) FROM easeml.runs x WHERE x.finished_at <= r.t) AS freed,
		   (SELECT x.started_at FROM easeml.runs x WHERE x.started_at > r.t
			 ORDER BY x.started_at LIMIT 1) AS s1,
		   (SELECT x.started_at FROM easeml.runs x WHERE x.started_at > r.t
			 ORDER BY x.started_at LIMIT 1 OFFSET 1) AS s2
	  FROM rounds r)
SELECT *, 1000 * extract(epoch FROM s1 - t) AS idle1, 1000 * extract(epoch FROM s2 - t) AS idle2,
	   1000 * extract(epoch FROM t - freed) AS before,
	   in_flight = 0 AND s2 IS NOT NULL AS spent
  FROM per;
SELECT 'round', to_char(t, 'HH24:MI:SS.MS'), n, in_flight, round(before::numeric, 1),
	   round(idle1::numeric, 1), round(idle2::numeric, 1) FROM ms ORDER BY t;
-- rounds made with runs in flight: each run that ended within 2 s after
-- the round waits from its end to the next start after it
WITH early AS (
	SELECT 1000 * extract(epoch FROM
			   (SELECT min(y.started_at) FROM easeml.runs y WHERE y.started_at >= x.finished_at)
			   - x.finished_at) AS wait
	  FROM ms m JOIN easeml.runs x ON x.finished_at > m.t AND x.finished_at < m.t + interval '2 s'
	 WHERE m.in_flight > 0)
SELECT 'RESULT genround_rounds=' || count(*) FILTER (WHERE spent) || E'\n' ||
	   'RESULT genround_idle1_ms=' || coalesce(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY idle1)
			FILTER (WHERE spent))::numeric, 1)::text, 'nan') ||
	   ' genround_idle2_ms=' || coalesce(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY idle2)
			FILTER (WHERE spent))::numeric, 1)::text, 'nan') || E'\n' ||
	   'RESULT genround_before_ms=' || coalesce(round((percentile_cont(0.5) WITHIN GROUP (ORDER BY before)
			FILTER (WHERE spent))::numeric, 1)::text, 'nan') || E'\n' ||
	   'RESULT genround_early_rounds=' || count(*) FILTER (WHERE in_flight > 0) ||
	   ' genround_early_idle_ms=' || coalesce((SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY wait))::numeric, 1)::text
												 FROM early), 'nan')
  FROM ms;
EOF
cp "$cluster_dir/server.log" "$out/server.log"
