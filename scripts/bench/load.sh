#!/usr/bin/env bash
# Load benchmark: many tenants declaring tasks at once while the scheduler
# is busy, then tenants reading their leaderboards.
#
#   scripts/bench/load.sh [TENANTS] [TASKS_PER_TENANT] [QUERIES]
#                                   (default 200 x 5, 1000 queries; as root)
#
# A throw-away cluster (PG_CONFIG selects the installation, as for
# scripts/test.sh) with easeml preloaded and two trainer slots.  A busy
# tenant keeps both slots training real models the whole time.  Then:
#
#  1. declarations: pgbench, 20 clients, one transaction per task; each
#     client connects as an application role that is a member of every
#     tenant role and declares as the tenant (SET ROLE), so every INSERT
#     goes through the full validation: the trigger reads the source as the
#     tenant, restricted and read-only.  Every declared task is then counted
#     in easeml.tasks: lost = attempted - declared.
#  2. leaderboards: every task gets 20 finished runs, then pgbench, 4
#     clients, QUERIES transactions, each a random tenant reading its top 3
#     per task from easeml.leaderboard (row-level security, security_invoker
#     view); per-transaction latencies from pgbench's log give the p99.
#
# The peer, in the same run with the same clients and rows: the same
# declarations into a plain copy of easeml.tasks without trigger or
# row-level security, and the same leaderboard query over plain copies of
# the tables, filtered by tenant in the query.  Ratios are printed; the last
# line is RESULT declared=<n> lost=<n> leaderboard_p99_ms=<ms>.
set -euo pipefail
cd "$(dirname "$0")/../.."
TENANTS=${1:-200}
PER=${2:-5}
QUERIES=${3:-1000}
TOTAL=$((TENANTS * PER))
CLIENTS=20
READERS=4

[ "$(id -u)" = 0 ] || { echo "load.sh: run as root" >&2; exit 1; }
[ $((TOTAL % CLIENTS)) = 0 ] || { echo "load.sh: TENANTS x TASKS must be a multiple of $CLIENTS" >&2; exit 1; }
[ $((QUERIES % READERS)) = 0 ] || { echo "load.sh: QUERIES must be a multiple of $READERS" >&2; exit 1; }
. scripts/lib/cluster.sh
cluster_install
cluster_new
tmp=$cluster_dir
cluster_start "max_connections = 100" "shared_preload_libraries = 'easeml'" "easeml.database = 'postgres'" \
	"easeml.max_workers = 2" "easeml.naptime = '200ms'"
PSQL=(cluster_psql)

echo "== setup: $TENANTS tenants, a busy tenant training on wine"
"${PSQL[@]}" -c 'CREATE EXTENSION easeml'
python3 scripts/load_dataset.py wine wine | "${PSQL[@]}" >/dev/null
python3 scripts/load_dataset.py iris iris | "${PSQL[@]}" >/dev/null
"${PSQL[@]}" <<SQL
CREATE ROLE bench_busy LOGIN;
SELECT easeml.add_tenant('bench_busy');
GRANT SELECT ON public.wine TO bench_busy;
CREATE ROLE bench_app LOGIN;
SELECT format('CREATE ROLE bench_t%s LOGIN; GRANT bench_t%s TO bench_app;', i, i)
  FROM generate_series(1, $TENANTS) i \gexec
SELECT easeml.add_tenant(format('bench_t%s', i)) FROM generate_series(1, $TENANTS) i;
GRANT SELECT ON public.iris TO PUBLIC;
-- the peer: a plain table shaped like easeml.tasks
CREATE SEQUENCE public.plain_tasks_seq;
CREATE TABLE public.plain_tasks (LIKE easeml.tasks INCLUDING DEFAULTS);
ALTER TABLE public.plain_tasks ALTER COLUMN id SET DEFAULT nextval('public.plain_tasks_seq');
SQL
"${PSQL[@]}" <<'SQL'
GRANT INSERT, SELECT ON public.plain_tasks TO PUBLIC;
GRANT USAGE ON SEQUENCE public.plain_tasks_seq TO PUBLIC;
CREATE SEQUENCE public.work;
GRANT USAGE ON SEQUENCE public.work TO bench_app;
SET ROLE bench_busy;
INSERT INTO easeml.tasks (name, source, target) VALUES ('wine1', 'public.wine', 'label'), ('wine2', 'public.wine', 'label');
RESET ROLE;
SQL
for _ in $(seq 1 300); do
	n=$("${PSQL[@]}" -tAc "SELECT count(*) FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL")
	[ "$n" -ge 2 ] && break
	sleep 0.1
done
echo "trainers running: $n"

# one transaction = one task of one tenant: work item w -> tenant, task number
cat >"$tmp/declare.sql" <<'EOF'
SELECT nextval('public.work') AS w \gset
\set tenant (:w - 1) / 5 + 1
\set k (:w - 1) % 5 + 1
SET ROLE bench_t:tenant;
INSERT INTO easeml.tasks (name, source, target) VALUES ('task_:k', 'public.iris', 'label');
RESET ROLE;
EOF
sed -i "s|/ 5 + 1|/ $PER + 1|; s|% 5 + 1|% $PER + 1|" "$tmp/declare.sql"
sed 's|easeml.tasks (name, source, target)|public.plain_tasks (tenant, name, source, target)|; s|VALUES (|VALUES (current_user, |' \
	"$tmp/declare.sql" >"$tmp/declare_plain.sql"
chown postgres: "$tmp"/*.sql

pgb() { cluster_run "$BINDIR/pgbench" -n -U bench_app -d postgres "$@"; }
tps_of() { sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$1" | head -1; }

echo "== 1. $TOTAL declarations by $CLIENTS concurrent clients"
"${PSQL[@]}" -c "SELECT setval('public.work', 1, false)"
pgb -c "$CLIENTS" -j 4 -t $((TOTAL / CLIENTS)) -f "$tmp/declare_plain.sql" >"$tmp/plain.out" 2>&1 || true
"${PSQL[@]}" -c "SELECT setval('public.work', 1, false)"
pgb -c "$CLIENTS" -j 4 -t $((TOTAL / CLIENTS)) -f "$tmp/declare.sql" >"$tmp/declare.out" 2>&1 || true
grep -E "^(number of transactions actually processed|number of failed|tps)" "$tmp/declare.out" || true
declared=$("${PSQL[@]}" -tAc "SELECT count(*) FROM easeml.tasks WHERE tenant::text LIKE 'bench\_t%'")
plain=$("${PSQL[@]}" -tAc "SELECT count(*) FROM public.plain_tasks")
lost=$((TOTAL - declared))
running=$("${PSQL[@]}" -tAc "SELECT count(*) FROM easeml.runs WHERE status = 'running'")
echo "declared $declared of $TOTAL (plain table: $plain); runs in flight meanwhile: $running"
grep -m3 "ERROR" "$tmp/declare.out" || true

echo "== 2. $QUERIES leaderboard queries by $READERS clients, as tenants"
"${PSQL[@]}" <<'SQL'
-- 20 finished runs per task (the scheduler keeps running meanwhile)
INSERT INTO easeml.runs (task_id, tenant, model_id, status, queued_at, started_at, finished_at, seconds, score)
SELECT t.id, t.tenant, m.id, 'succeeded', now(), now(), now(), 0.1 + random(), random()
  FROM easeml.tasks t
 CROSS JOIN LATERAL (SELECT id FROM easeml.models WHERE 'classification' = ANY (kinds) AND NOT needs_image
					  ORDER BY id LIMIT 20) m
 WHERE t.tenant::text LIKE 'bench\_t%'
   AND NOT EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.model_id = m.id);
ANALYZE easeml.runs;
ANALYZE easeml.tasks;
-- the peer: plain copies, no row-level security
CREATE TABLE public.plain_runs AS SELECT * FROM easeml.runs;
CREATE TABLE public.plain_tasks2 AS SELECT * FROM easeml.tasks;
CREATE INDEX ON public.plain_runs (tenant);
CREATE INDEX ON public.plain_tasks2 (tenant);
ANALYZE public.plain_runs;
ANALYZE public.plain_tasks2;
GRANT SELECT ON public.plain_runs, public.plain_tasks2 TO PUBLIC;
SQL
cat >"$tmp/read.sql" <<EOF
\set tenant random(1, $TENANTS)
SET ROLE bench_t:tenant;
SELECT task, rank, model, score FROM easeml.leaderboard WHERE rank <= 3 ORDER BY task, rank;
RESET ROLE;
EOF
cat >"$tmp/read_plain.sql" <<EOF
\set tenant random(1, $TENANTS)
SET ROLE bench_t:tenant;
SELECT task, rank, model, score FROM (
	SELECT t.name AS task, rank() OVER (PARTITION BY r.task_id ORDER BY r.score DESC, r.seconds, r.id)::int AS rank,
		   m.name AS model, r.score
	  FROM public.plain_runs r JOIN public.plain_tasks2 t ON t.id = r.task_id
	  JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.status = 'succeeded' AND r.score IS NOT NULL
	   AND r.tenant = current_user AND t.tenant = current_user) l
 WHERE rank <= 3 ORDER BY task, rank;
RESET ROLE;
EOF
chown postgres: "$tmp"/*.sql
pct_of() {
	# pgbench -l: column 3 is the transaction's latency in microseconds
	cat "$1".* | awk '{ print $3 }' | sort -n | awk -v p="$2" '{ v[NR] = $1 } END {
		i = int(NR * p); if (i < NR * p) i++; if (i < 1) i = 1; printf "%.3f", v[i] / 1000 }'
}
(cd "$tmp" && pgb -c "$READERS" -j 4 -t $((QUERIES / READERS)) -l --log-prefix="$tmp/plainlog" -f "$tmp/read_plain.sql" >"$tmp/read_plain.out" 2>&1)
(cd "$tmp" && pgb -c "$READERS" -j 4 -t $((QUERIES / READERS)) -l --log-prefix="$tmp/easelog" -f "$tmp/read.sql" >"$tmp/read.out" 2>&1)
p50=$(pct_of "$tmp/easelog" 0.5)
p50_plain=$(pct_of "$tmp/plainlog" 0.5)
p99=$(pct_of "$tmp/easelog" 0.99)
p99_plain=$(pct_of "$tmp/plainlog" 0.99)
rows=$("${PSQL[@]}" -tAc "SELECT count(*) FROM easeml.runs")
running=$("${PSQL[@]}" -tAc "SELECT count(*) FROM easeml.runs WHERE status = 'running'")
queries=$(cat "$tmp"/easelog.* | wc -l)
echo "$queries queries over $rows runs; runs in flight meanwhile: $running"

printf '\n%-44s %12s %12s %8s\n' "" "easeml" "plain peer" "ratio"
awk -v a="$(tps_of "$tmp/declare.out")" -v b="$(tps_of "$tmp/plain.out")" \
	'BEGIN { printf "%-44s %12.1f %12.1f %8.2f\n", "declarations per second (20 clients)", a, b, b / a }'
awk -v a="$p50" -v b="$p50_plain" \
	'BEGIN { printf "%-44s %12.3f %12.3f %8.2f\n", "leaderboard query p50, ms (4 clients)", a, b, a / b }'
awk -v a="$p99" -v b="$p99_plain" \
	'BEGIN { printf "%-44s %12.3f %12.3f %8.2f\n", "leaderboard query p99, ms (4 clients)", a, b, a / b }'
echo "RESULT declared=$declared lost=$lost leaderboard_p99_ms=$p99"
