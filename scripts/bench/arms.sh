#!/bin/bash
# scripts/bench/arms.sh: how replay and one scheduling decision scale with
# the number of candidate models (issue 7, item 8).
#
# For ARMS candidates (default 250 500 1000 2000 3000 4000) on a synthetic matrix
# of 300 data sets (scripts/bench/make_wide_matrix.py: Oboe-like quality,
# size-driven runtimes):
#   replay    easeml-replay, 20 tenants x 2 draws, policies hybrid:cost
#             and tenant_bo, --overhead 1, cost model size_gp: CPU seconds
#             (prior and cost-model fits per draw included; default, which
#             is auto, would add its choice's inner replays, docs/
#             scheduler.md 7.7);
#   dense     the same with --dense-prior-fit (the prior's hyperparameter
#             grid scored with K x K factorisations, as before the low-rank
#             form), only up to DENSE_MAX arms (default 1200): the peer;
#   decision  easeml-replay bench-decision --kernel empirical: 200 tenants,
#             20 runs each, 500 timed decisions (update + candidate + pick).
# Last line: RESULT arms=<max> replay_cpu_s=<s> decision_ms=<median ms>
#            lowrank_speedup=<dense / low-rank CPU at the largest dense size>
# Environment: ARMS, DENSE_MAX, OUT (scripts/bench/out).
set -euo pipefail
cd "$(dirname "$0")/../.."

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
ARMS=${ARMS:-250 500 1000 2000 3000 4000}
DENSE_MAX=${DENSE_MAX:-1200}
OUT=${OUT:-scripts/bench/out}
mkdir -p "$OUT/arms"
make -s easeml-replay

# CPU seconds (user + sys) of a command, its output to a file
cpu() {
	local log=$1
	shift
	local TIMEFORMAT='%U %S'
	{ time "$@" >"$log" 2>&1; } 2>&1 | awk '{ printf "%.2f", $1 + $2 }'
}

replay() {
	local d=$1
	shift
	./easeml-replay --quality "$d/quality.csv" --cost "$d/runtime.csv" \
		--sizes "$d/sizes.csv" --tenants 20 --draws 2 --seed 1 --overhead 1 \
		--policies hybrid:cost,tenant_bo "$@"
}

printf "%6s %14s %14s %9s %14s %14s\n" arms replay_cpu_s dense_cpu_s ratio decision_ms decision_p99
last_ratio=NA
for k in $ARMS; do
	d="$OUT/arms/k$k"
	mkdir -p "$d"
	[ -f "$d/quality.csv" ] || /usr/bin/python3 scripts/bench/make_wide_matrix.py 300 "$k" 1 "$d"
	r=$(cpu "$d/replay.txt" replay "$d")
	if [ "$k" -le "$DENSE_MAX" ]; then
		dn=$(cpu "$d/dense.txt" replay "$d" --dense-prior-fit)
		ratio=$(awk -v a="$dn" -v b="$r" 'BEGIN { printf "%.1f", a / b }')
		last_ratio=$ratio
	else
		dn=-
		ratio=-
	fi
	./easeml-replay bench-decision --kernel empirical --tenants 200 --arms "$k" \
		--obs 20 --decisions 500 >"$d/decision.txt"
	dm=$(awk '$1 == "DECISION" { sub("median_ms=", "", $2); print $2 }' "$d/decision.txt")
	dp=$(awk '$1 == "DECISION" { sub("p99_ms=", "", $4); print $4 }' "$d/decision.txt")
	printf "%6s %14s %14s %9s %14s %14s\n" "$k" "$r" "$dn" "$ratio" "$dm" "$dp"
done
echo "RESULT arms=$k replay_cpu_s=$r decision_ms=$dm lowrank_speedup=$last_ratio"
