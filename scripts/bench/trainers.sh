#!/bin/sh
# Side-by-side benchmark of easeml-trainer against scikit-learn and liblinear
# on the same machine, the same rows and the same number of cores.
#
#   scripts/bench/trainers.sh [--quick]
#
# Every side runs single-threaded: OpenBLAS, OpenMP and MKL pools are pinned
# to one thread, scikit-learn uses n_jobs=1 and the trainer --threads 1.
# Needs python3-sklearn, liblinear-tools, dataset-fashion-mnist and weka
# (docs/datasets.md).  Scratch files go to scripts/bench/out/ (git-ignored);
# the table is also saved there as trainers.txt and trainers.json.  The last
# line is "RESULT median_speedup_vs_sklearn=<x> min_accuracy_delta=<d>".
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/out"

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export LC_ALL=C

command -v liblinear-train >/dev/null || { echo "trainers.sh: liblinear-tools is not installed" >&2; exit 1; }
/usr/bin/python3 -c 'import sklearn' 2>/dev/null || { echo "trainers.sh: python3-sklearn is not installed" >&2; exit 1; }

make -C "$root" -s easeml-trainer >/dev/null
mkdir -p "$out"
/usr/bin/python3 "$here/trainers_bench.py" --trainer "$root/easeml-trainer" \
	--workdir "$out/work" "$@" | tee "$out/trainers.txt"
