#!/bin/bash
# scripts/bench/replay.sh: multi-tenant model selection replayed on the Oboe
# matrices (quality = 1 - balanced error, cost = runtime in seconds).
#
# 1. 20 tenants, 1 device, DRAWS random draws (default 20): the median
#    time to reach each loss target and the median per-draw speedup of
#    every policy over "popular first, round-robin" (popular) and over
#    "per-tenant GP-UCB served round-robin" (rr), with the cost model the
#    live system can use (size_gp: per-model log-linear law in data-set
#    rows and features fitted on the prior rows, corrected online by a GP
#    over the tenant's own finished runtimes).  Reference lines: the crude
#    cost model (size_linear) and the oracle (true runtimes).
# 2. 64 tenants, 1, 2, 4, 8 devices: speedup of 8 devices over 1.
#
# Baselines: "popular" = users' heuristic (popular model first, tenants
# round-robin); "rr" = per-tenant GP-UCB (same learned prior, not
# cost-aware) served round-robin; "rr:cost" (reported, stronger) = the same
# with cost-aware UCB.
# Last lines: RESULT heuristic_speedup=.. per_tenant_speedup=.. (best policy
# at loss 0.01) and RESULT multi_device_speedup_m8=.. (the same policy).
# OpenBLAS runs single-threaded (easeml-replay calls
# openblas_set_num_threads(1); OPENBLAS_NUM_THREADS=1 is set as well).
#
# Environment: DRAWS (20), SEED (1), OUT (scripts/bench/out).
set -euo pipefail
cd "$(dirname "$0")/../.."

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
DATA=scripts/bench/data/oboe
OUT=${OUT:-scripts/bench/out}
DRAWS=${DRAWS:-20}
SEED=${SEED:-1}
THRESHOLDS=0.05,0.02,0.01,0.005
POLICIES=popular,rr,rr:cost,random:cost,max_width:cost,max_gap:cost,max_ei:cost,hybrid:cost
mkdir -p "$OUT"
make -s easeml-replay

replay() {
	./easeml-replay --quality "$DATA/error_matrix.csv" --error \
		--cost "$DATA/runtime_matrix.csv" --sizes "$DATA/dataset_sizes.csv" \
		--thresholds "$THRESHOLDS" --draws "$DRAWS" --seed "$SEED" \
		--baselines popular,rr,rr:cost "$@"
}

# speedup MEDIAN from a SPEEDUP line: file base policy threshold
speedup() {
	awk -v b="$2" -v p="$3" -v t="$4" '
		$1 == "SPEEDUP" && $3 == "base=" b && $4 == "policy=" p && $5 == "thr=" t {
			sub("median=", "", $6); print $6; exit }' "$1"
}

echo "== 20 tenants, 1 device, $DRAWS draws, cost model size_gp (no oracle) =="
replay --tenants 20 --devices 1 --cost-model size_gp --policies "$POLICIES" \
	--curve "$OUT/replay_curve.csv" --times "$OUT/replay_times.csv" \
	> "$OUT/replay_size_gp.txt"
grep -v -E '^(TIME|SPEEDUP) ' "$OUT/replay_size_gp.txt"

# best policy at loss 0.01: largest median speedup over popular
BEST=$(awk '$1 == "SPEEDUP" && $3 == "base=popular" && $5 == "thr=0.01" {
		p = substr($4, 8); v = substr($6, 8) + 0
		if (p != "popular" && p != "rr" && (best == "" || v > bv)) { best = p; bv = v } }
	END { print best }' "$OUT/replay_size_gp.txt")

echo
echo "== reference: crude cost model (size_linear: median s/(rows x features) per model) =="
replay --tenants 20 --devices 1 --cost-model size_linear --policies "popular,rr,max_ei:cost,hybrid:cost" \
	> "$OUT/replay_size_linear.txt"
for p in max_ei:cost hybrid:cost; do
	echo "size_linear $p: heuristic_speedup=$(speedup "$OUT/replay_size_linear.txt" popular "$p" 0.01) per_tenant_speedup=$(speedup "$OUT/replay_size_linear.txt" rr "$p" 0.01)"
done
echo
echo "== reference: oracle costs (true runtimes as the estimate; not available live) =="
replay --tenants 20 --devices 1 --cost-model oracle --policies "popular,rr,max_ei:cost,hybrid:cost" \
	> "$OUT/replay_oracle.txt"
for p in max_ei:cost hybrid:cost; do
	echo "oracle $p: heuristic_speedup=$(speedup "$OUT/replay_oracle.txt" popular "$p" 0.01) per_tenant_speedup=$(speedup "$OUT/replay_oracle.txt" rr "$p" 0.01)"
done

echo
echo "== 64 tenants, 1/2/4/8 devices, $DRAWS draws, cost model size_gp =="
replay --tenants 64 --devices 1,2,4,8 --cost-model size_gp \
	--policies "popular,rr,max_ei:cost,hybrid:cost" \
	--curve "$OUT/replay_multi_curve.csv" --times "$OUT/replay_multi_times.csv" \
	> "$OUT/replay_multi.txt"
# the median-time tables of each device count, then the device speedups
awk '/^## devices=[0-9]+: median/ { p = 1 } /^## .*speedup/ { p = 0 } /^(TIME|SPEEDUP) / { next } p' "$OUT/replay_multi.txt"
grep -E '^DEVICE_SPEEDUP .* thr=0.01 ' "$OUT/replay_multi.txt" || true
M8=$(awk -v p="$BEST" '$1 == "DEVICE_SPEEDUP" && $2 == "devices=8" && $4 == "policy=" p && $5 == "thr=0.01" {
		sub("median=", "", $6); print $6 }' "$OUT/replay_multi.txt")

echo
echo "best policy at loss 0.01 (cost model size_gp, learned from prior rows + finished runs): $BEST"
echo "(stronger baseline, per-tenant cost-aware GP-UCB served round-robin: $BEST is $(speedup "$OUT/replay_size_gp.txt" rr:cost "$BEST" 0.01)x faster at loss 0.01)"
echo "RESULT heuristic_speedup=$(speedup "$OUT/replay_size_gp.txt" popular "$BEST" 0.01) per_tenant_speedup=$(speedup "$OUT/replay_size_gp.txt" rr "$BEST" 0.01)"
echo "RESULT multi_device_speedup_m8=$M8"
