#!/usr/bin/env bash
# easeml: set everything up on Debian 12 as root and run the demo.
#
#   scripts/setup.sh
#
# 1. installs the Debian packages easeml needs (PostgreSQL 15, OpenBLAS,
#    LAPACKE, json-c, and the packages the demo datasets come from) and
#    those its tests use (Slurm for t/016, libfaketime for t/056);
# 2. builds and installs the extension, the trainer and the replay tool;
# 3. runs the cluster 15/main with shared_preload_libraries = 'easeml' and
#    easeml.database = 'easeml', and creates database easeml with the
#    extension;
# 4. loads four real datasets as tables (two image sets: a Fashion-MNIST
#    subset and digits; two tabular: breast cancer, and diabetes progression
#    as a regression task; none of them is in the seed history), registers
#    one tenant role per dataset, declares a task for each, waits until each
#    task has at least four finished runs and prints the leaderboards.
#
# Running it again is safe: every step checks what is already there.
# Afterwards `runuser -u postgres -- psql -d easeml` reaches the system.
#
# Environment: EASEML_DEMO_TIMEOUT (seconds to wait for the runs, default
# 1200), EASEML_FASHION_ROWS (Fashion-MNIST subset, default 6000),
# EASEML_SKIP_DEMO=1 (stop after installing).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "setup.sh: run as root (it installs packages and manages the cluster)" >&2
	exit 1
fi

PGVER=15
PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
PACKAGES=(build-essential ca-certificates pkg-config
	postgresql-$PGVER postgresql-server-dev-$PGVER postgresql-client-$PGVER
	libopenblas-dev liblapacke-dev libjson-c-dev libpq-dev libipc-run-perl
	python3 python3-sklearn python-matplotlib-data dataset-fashion-mnist
	liblinear-tools python3-xgboost gnuplot-nox
	munge slurmctld slurmd slurm-client faketime)

log() { printf '\n== %s\n' "$*"; }

# ---- 1. packages -------------------------------------------------------------
missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- 2. build and install ----------------------------------------------------
log "building easeml"
make -s PG_CONFIG=$PG_CONFIG
make -s PG_CONFIG=$PG_CONFIG install

# ---- 3. the cluster ----------------------------------------------------------
if ! pg_lsclusters -h | awk '{print $1"/"$2}' | grep -qx "$PGVER/main"; then
	log "creating cluster $PGVER/main"
	pg_createcluster $PGVER main
fi
changed=0
if [ "$(pg_conftool -s $PGVER main show shared_preload_libraries 2>/dev/null || true)" != "easeml" ]; then
	pg_conftool $PGVER main set shared_preload_libraries easeml
	changed=1
fi
if [ "$(pg_conftool -s $PGVER main show easeml.database 2>/dev/null || true)" != "easeml" ]; then
	pg_conftool $PGVER main set easeml.database easeml
	changed=1
fi
if pg_lsclusters -h | awk -v v=$PGVER '$1==v && $2=="main" {print $4}' | grep -q online; then
	if [ $changed = 1 ]; then
		log "restarting cluster $PGVER/main to load easeml"
		pg_ctlcluster $PGVER main restart
	else
		# the library may have been rebuilt: restart so the new one runs
		pg_ctlcluster $PGVER main restart
	fi
else
	log "starting cluster $PGVER/main"
	pg_ctlcluster $PGVER main start
fi
PORT=$(pg_conftool -s $PGVER main show port)
PSQL=(runuser -u postgres -- psql -X -q -p "$PORT" -v ON_ERROR_STOP=1)

if ! "${PSQL[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'easeml'" | grep -q 1; then
	"${PSQL[@]}" -d postgres -c "CREATE DATABASE easeml"
fi
"${PSQL[@]}" -d easeml -c "CREATE EXTENSION IF NOT EXISTS easeml"
# an installation of an earlier version is upgraded in place
"${PSQL[@]}" -d easeml -c "ALTER EXTENSION easeml UPDATE"
echo "easeml is installed in database easeml on port $PORT"

if [ "${EASEML_SKIP_DEMO:-0}" = 1 ]; then
	exit 0
fi

# ---- 4. the demo -------------------------------------------------------------
log "loading datasets (Fashion-MNIST subset, digits, breast cancer, diabetes)"
load() {
	/usr/bin/python3 scripts/load_dataset.py "$@" --schema demo | "${PSQL[@]}" -d easeml
}
load fashion_mnist fashion_mnist --rows "${EASEML_FASHION_ROWS:-6000}" --seed 1
load breast_cancer breast_cancer
load digits digits
load diabetes_regression diabetes

log "loading the seed history for the scheduler's prior"
SHAREDIR=$($PG_CONFIG --sharedir)
"${PSQL[@]}" -d easeml -tAc \
	"SELECT easeml.load_history('$SHAREDIR/extension/easeml_seed_history.csv', 'easeml seed history') || ' cells loaded'"

log "registering tenants and declaring tasks"
"${PSQL[@]}" -d easeml <<'SQL'
DO $$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['lab_vision', 'lab_medical', 'lab_digits', 'lab_clinic'] LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
			EXECUTE format('CREATE ROLE %I LOGIN', r);
		END IF;
		PERFORM easeml.add_tenant(r);
	END LOOP;
END
$$;
GRANT USAGE ON SCHEMA demo TO lab_vision, lab_medical, lab_digits, lab_clinic;
GRANT SELECT ON demo.fashion_mnist TO lab_vision;
GRANT SELECT ON demo.breast_cancer TO lab_medical;
GRANT SELECT ON demo.digits TO lab_digits;
GRANT SELECT ON demo.diabetes TO lab_clinic;

-- each tenant declares its own task with one INSERT
SET ROLE lab_vision;
INSERT INTO easeml.tasks (tenant, name, source, target, input_shape)
SELECT 'lab_vision', 'fashion', 'demo.fashion_mnist', 'label', '{1,28,28}'::int[]
 WHERE NOT EXISTS (SELECT 1 FROM easeml.tasks WHERE name = 'fashion');
SET ROLE lab_medical;
INSERT INTO easeml.tasks (tenant, name, source, target)
SELECT 'lab_medical', 'cancer', 'demo.breast_cancer', 'label'
 WHERE NOT EXISTS (SELECT 1 FROM easeml.tasks WHERE name = 'cancer');
SET ROLE lab_digits;
INSERT INTO easeml.tasks (tenant, name, source, target, input_shape)
SELECT 'lab_digits', 'digits', 'demo.digits', 'label', '{1,8,8}'::int[]
 WHERE NOT EXISTS (SELECT 1 FROM easeml.tasks WHERE name = 'digits');
SET ROLE lab_clinic;
INSERT INTO easeml.tasks (tenant, name, source, target, kind)
SELECT 'lab_clinic', 'progression', 'demo.diabetes', 'target', 'regression'
 WHERE NOT EXISTS (SELECT 1 FROM easeml.tasks WHERE name = 'progression');
RESET ROLE;
SQL

log "waiting until every task has at least 4 finished runs"
deadline=$((SECONDS + ${EASEML_DEMO_TIMEOUT:-1200}))
while :; do
	left=$("${PSQL[@]}" -d easeml -tAc "
		SELECT count(*) FROM easeml.tasks t
		 WHERE t.tenant IN ('lab_vision', 'lab_medical', 'lab_digits', 'lab_clinic')
		   AND t.status NOT IN ('completed', 'failed')
		   AND (SELECT count(*) FROM easeml.runs r
				 WHERE r.task_id = t.id AND r.status IN ('succeeded', 'failed')) < 4")
	"${PSQL[@]}" -d easeml -tAc "
		SELECT string_agg(format('%s/%s: %s succeeded, %s running, best %s',
						 tenant, task, succeeded, active, coalesce(round(best_score::numeric, 4)::text, '-')), '; ')
		  FROM easeml.task_overview"
	[ "$left" = 0 ] && break
	if [ $SECONDS -ge $deadline ]; then
		echo "setup.sh: timed out waiting for runs; see the log:" >&2
		tail -n 30 /var/log/postgresql/postgresql-$PGVER-main.log >&2 || true
		exit 1
	fi
	sleep 5
done

log "leaderboards (top 5 per task)"
"${PSQL[@]}" -d easeml -P pager=off <<'SQL'
-- tied: within one standard error of the top score; those rank first,
-- the faster first (docs/results.md)
SELECT tenant, task, rank, model, family, round(score::numeric, 4) AS score,
	   round(score_se::numeric, 4) AS "± se", tied_with_best AS tied,
	   round(seconds::numeric, 2) AS seconds
  FROM easeml.leaderboard
 WHERE rank <= 5
 ORDER BY tenant, task, rank;
SELECT tenant, task, status, succeeded, failed, active,
	   round(best_score::numeric, 4) AS best_score, best_model
  FROM easeml.task_overview ORDER BY tenant, task;
SQL
echo
echo "The scheduler keeps training the remaining candidates in the background."
echo "Connect with: runuser -u postgres -- psql -d easeml"
