#!/bin/bash
# scripts/bench/smallhist.sh [SEEDS]: does the default's chooser gain over
# the users' heuristic on small histories? (issue 23; the experiment of
# docs/research/scheduler-experiments.md 17)
#
# Each suite matrix (scripts/bench/replay_lib.sh's cells) cut down to N
# prior rows per draw (easeml-replay --prior-rows N), TENANTS tenants (3, as
# the seed-history cell), `default` against `popular`.  Per cell and N one
# line, pooled over SEEDS (default the development seeds 1-5) x 20 draws:
#   RESULT smallhist cell=C rows=N median_ratio=R ratio_of_medians=Q
#          draws=D wins=W
# at loss 0.01 (time(popular) / time(default): above 1, default is faster;
# scripts/bench/replay_summary.py).  A few minutes on one core.
#
# Environment: CELLS (default: the suite's matrices of more than 48 + 3 rows,
#   Oboe at 0 and 10 s per run left out), ROWS ("6 8 11 16 24 32 48"), TENANTS (3), OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/replay_lib.sh

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
OUT=${OUT:-scripts/bench/out}/smallhist
SEEDS=$(expand_seeds "${1:-1-5}")
CELLS=${CELLS:-"openml_weka oboe30_unit oboe_unit oboe30_ov1 oboe_ov1"}
ROWS=${ROWS:-"6 8 11 16 24 32 48"}
TENANTS=${TENANTS:-3}
mkdir -p "$OUT"
make -s easeml-replay
make_oboe30 "$OUT"

for cell in $CELLS; do
	read -r _flat _tenants args <<<"$(cell_args "$cell" "$OUT")"
	for n in $ROWS; do
		files=()
		for seed in $SEEDS; do
			f=$OUT/${cell}_t${TENANTS}_n${n}_s$seed.csv
			# shellcheck disable=SC2086 # args is a word list
			./easeml-replay $args --tenants "$TENANTS" --prior-rows "$n" \
				--draws 20 --seed "$seed" --thresholds 0.01,0.005,0.002 \
				--policies default,popular --times "$f" >/dev/null
			files+=("$f")
		done
		/usr/bin/python3 scripts/bench/replay_summary.py default popular "${files[@]}" |
			awk -v c="$cell" -v n="$n" '$5 == "thr=0.01" {
				printf "RESULT smallhist cell=%s rows=%s %s %s %s %s\n", c, n, $6, $7, $8, $9 }'
	done
done
