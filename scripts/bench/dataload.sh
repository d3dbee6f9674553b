#!/usr/bin/env bash
# Data path benchmark: how fast the trainer loads a task's rows, against
# PostgreSQL's own binary COPY of the same rows to /dev/null, in the same run.
#
#   scripts/bench/dataload.sh [ROWS] [COLS]      (default 1000000 x 50, as root)
#
# Both sides run the same query (easeml_trainer.spec's COPY query: every
# feature cast to float8, the label as text) against the same table in a
# throw-away cluster.  The trainer side is `easeml-trainer --run N
# --load-only`: connect, read the spec, open the tenant data session, COPY,
# parse into its in-memory table.  The peer is `psql -c "COPY ... TO STDOUT
# (FORMAT binary)" > /dev/null`.  Wall time of each whole process, best of 3.
# Last line: RESULT load_vs_copy=<trainer rows/s divided by COPY rows/s>.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROWS=${1:-1000000}
COLS=${2:-50}
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

if [ -z "${EASEML_BENCH_INNER:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "dataload.sh: run as root" >&2; exit 1; }
	make -s PG_CONFIG=$PG_CONFIG >/dev/null
	make -s PG_CONFIG=$PG_CONFIG install >/dev/null
	[ -f /etc/postgresql/15/regress/.by_pg_virtualenv ] && pg_dropcluster --stop 15 regress
	export EASEML_BENCH_INNER=1
	exec pg_virtualenv -v 15 -o shared_preload_libraries=easeml -o easeml.enabled=off \
		-o shared_buffers=1GB "$0" "$ROWS" "$COLS"
fi

PSQL=(psql -X -q -v ON_ERROR_STOP=1 -d postgres)
"${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS easeml"
echo "generating $ROWS rows x $COLS float8 columns + a label ..."
cols=$(seq -s, 1 "$COLS" | sed 's/\([0-9]\+\)/c\1 float8/g')
vals=$(seq -s, 1 "$COLS" | sed 's/[0-9]\+/random()/g')
"${PSQL[@]}" <<SQL
SELECT setseed(0.42);
CREATE UNLOGGED TABLE bench ($cols, label text);
INSERT INTO bench SELECT $vals, (i % 10)::text FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE bench;
CREATE ROLE bench_tenant LOGIN;
GRANT SELECT ON bench TO bench_tenant;
SELECT easeml.add_tenant('bench_tenant');
SET ROLE bench_tenant;
INSERT INTO easeml.tasks (name, source, target) VALUES ('bench', 'public.bench', 'label');
RESET ROLE;
INSERT INTO easeml.runs (task_id, model_id, status)
SELECT t.id, m.id, 'running' FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'bench' AND m.name = 'gnb';
SQL
run=$("${PSQL[@]}" -tAc "SELECT max(id) FROM easeml.runs")
query=$("${PSQL[@]}" -tAc "SELECT easeml_trainer.spec($run)->>'copy_query'")
size=$("${PSQL[@]}" -tAc "SELECT pg_size_pretty(pg_total_relation_size('bench'))")
echo "table: $size; query: ${query:0:80}..."
rundir=$(mktemp -d)
trap 'rm -rf "$rundir"' EXIT

now() { date +%s.%N; }
best_copy=999999
best_trainer=999999
"${PSQL[@]}" -c "$query" >/dev/null      # warm the cache
for i in 1 2 3; do
	t0=$(now)
	"${PSQL[@]}" -c "$query" >/dev/null
	t1=$(now)
	EASEML_CONNINFO="" OPENBLAS_NUM_THREADS=1 ./easeml-trainer --run "$run" --run-dir "$rundir" --load-only >"$rundir/out.json" 2>"$rundir/err.log" \
		|| { cat "$rundir/err.log" "$rundir/out.json"; exit 1; }
	t2=$(now)
	c=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	t=$(awk -v a="$t1" -v b="$t2" 'BEGIN { print b - a }')
	printf 'round %d: COPY to /dev/null %.3f s, trainer load %.3f s (%s)\n' "$i" "$c" "$t" "$(grep -o '"rows": [0-9]*' "$rundir/out.json")"
	best_copy=$(awk -v a="$c" -v b="$best_copy" 'BEGIN { print (a < b) ? a : b }')
	best_trainer=$(awk -v a="$t" -v b="$best_trainer" 'BEGIN { print (a < b) ? a : b }')
done
grep -q "\"rows\": $ROWS" "$rundir/out.json" || { echo "trainer loaded the wrong number of rows" >&2; exit 1; }
printf '\n%-28s %10s %14s\n' "side" "seconds" "rows/s"
awk -v r="$ROWS" -v c="$best_copy" -v t="$best_trainer" 'BEGIN {
	printf "%-28s %10.3f %14.0f\n", "COPY binary -> /dev/null", c, r / c
	printf "%-28s %10.3f %14.0f\n", "easeml-trainer --load-only", t, r / t
	printf "RESULT load_vs_copy=%.3f\n", c / t
}'
