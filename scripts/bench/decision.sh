#!/bin/bash
# scripts/bench/decision.sh: the cost of one scheduling decision in steady
# state, 1,000 tenants x 200 candidates, 50 finished runs per tenant.
#
# One decision: a run finishes, its tenant's posterior is updated
# incrementally (GpStateAdd), its next candidate is chosen (EI), and the
# next (tenant, candidate) is picked across tenants (default policy
# "hybrid": greedy max EI under the fairness floor, via PolicyIndex).
# Side by side in the same run, scripts/bench/decision_sklearn.py makes the
# same decision with scikit-learn: refit that tenant's
# GaussianProcessRegressor (same RBF kernel, optimizer=None), predict mean
# and std over its candidates, EI, pick across tenants.  It follows the C
# side's sequence and reports how often its pick agrees.
#
# Both sides run with one OpenBLAS thread (OPENBLAS_NUM_THREADS=1; the C
# side also calls openblas_set_num_threads(1)).
# Last line: RESULT decision_ms=<C median> vs_sklearn=<sklearn median / C median>.
#
# Environment: OUT (scripts/bench/out), DECISIONS (5000), SK_DECISIONS (300).
set -euo pipefail
cd "$(dirname "$0")/../.."

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
OUT=${OUT:-scripts/bench/out}
DECISIONS=${DECISIONS:-5000}
SK_DECISIONS=${SK_DECISIONS:-300}
DUMP="$OUT/decision"
mkdir -p "$OUT"
make -s easeml-replay

./easeml-replay bench-decision --tenants 1000 --arms 200 --obs 50 \
	--decisions "$DECISIONS" --policy hybrid --dump "$DUMP" | tee "$OUT/decision_c.txt"
/usr/bin/python3 scripts/bench/decision_sklearn.py "$DUMP" --decisions "$SK_DECISIONS" \
	| tee "$OUT/decision_sklearn.txt"
# the C side once more after Python, so that both saw similar machine load
./easeml-replay bench-decision --tenants 1000 --arms 200 --obs 50 \
	--decisions "$DECISIONS" --policy hybrid | tee -a "$OUT/decision_c.txt" | grep DECISION

C_MS=$(awk '$1 == "DECISION" { sub("median_ms=", "", $2); v[n++] = $2 }
	END { if (n == 0) exit 1; m = v[0]; for (i = 1; i < n; i++) if (v[i] > m) m = v[i]; print m }' "$OUT/decision_c.txt")
SK_MS=$(awk '$1 == "SKLEARN" { sub("median_ms=", "", $2); print $2 }' "$OUT/decision_sklearn.txt")
echo "C median (worse of two runs): $C_MS ms; scikit-learn median: $SK_MS ms"
awk -v c="$C_MS" -v s="$SK_MS" 'BEGIN { printf "RESULT decision_ms=%.4f vs_sklearn=%.0f\n", c, s / c }'
