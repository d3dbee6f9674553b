#!/usr/bin/env bash
# easeml.predict against what a user does without easeml: read the table with
# COPY ... TO STDOUT into Python and call scikit-learn's predict on a model of
# the same size, in the same run (scripts/bench/predict_bench.py gives the
# fairness rules).
#
#   scripts/bench/predict.sh [--rows N] [--reps K]        (as root)
#
# 100,000 rows of a table t (20 float8 features, 5 text classes); softmax, an
# MLP of 64 hidden units, a random forest of 100 trees and gradient boosting
# with 100 rounds, each trained on the same 20,000 rows by easeml-trainer and
# by scikit-learn (Debian's python3-sklearn).  Timed from a fresh process
# each: SELECT easeml.predict('task', t) FROM t through psql, against
# python3 + import + unpickle + binary COPY into numpy + predict.
#
# A throw-away cluster (scheduler off) on a free port; PG_CONFIG selects the
# PostgreSQL (default Debian's 15).  Scratch files go to scripts/bench/out/.
# The last line is
#   RESULT predict_vs_sklearn=<median over families of sklearn's time / easeml's>
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/scripts/bench/out/predict
. scripts/lib/cluster.sh
PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 LC_ALL=C

[ "$(id -u)" = 0 ] || { echo "predict.sh: run as root (it runs a cluster as postgres)" >&2; exit 1; }
dpkg-query -W -f='${Status}' python3-sklearn 2>/dev/null | grep -q 'install ok installed' ||
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-sklearn

cluster_install
cluster_new
tmp=$cluster_dir
chmod 755 "$tmp"
cluster_start "shared_preload_libraries = 'easeml'" "easeml.database = 'postgres'" "easeml.enabled = off"
# psql as root, not through runuser: predict_bench.py times it from its start
psql=("$BINDIR/psql" -h "$tmp" -p "$cluster_port" -U postgres -d postgres)
"${psql[@]}" -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION easeml;
CREATE ROLE bench_tenant LOGIN;
SELECT easeml.add_tenant('bench_tenant');
SQL
# artifacts are read by the server (pg_read_binary_file): a directory it can read
work=$tmp/work
mkdir -p "$work" "$out"
chmod 755 "$work"
"$PY" scripts/bench/predict_bench.py --psql "${psql[*]}" --trainer "$root/easeml-trainer" \
	--workdir "$work" "$@" | tee "$out/predict.txt"
