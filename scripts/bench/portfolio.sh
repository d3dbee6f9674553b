#!/bin/bash
# scripts/bench/portfolio.sh SEEDS: the cost-aware history portfolio
# (options pf=1|2 and pfe=X, src/core/policy_portfolio.c, docs/scheduler.md
# 3; docs/research/scheduler-experiments.md 14) replayed beside the
# default's mixture candidate on the suite's cells (replay_lib.sh).
#
# Each SPEC in SPECS (comma list; default the mixture candidate with the
# portfolio, "$H:pf=1:xg=0") runs ALONE (not through auto) beside
# popular, tenant_bo and H, the first of POLICY_AUTO_CANDIDATES
# (hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2:xg=1.5:xo=1, the policy
# `default` runs on every Oboe draw), with WITH_DEFAULT=1 also `default`
# itself.  SEEDS (the argument, as replay.sh: "1-5", "101,102") x DRAWS
# (default 2) draws per cell, pooled.  For every cell, spec and loss 0.01 /
# 0.005 / 0.002: the median per-draw ratio time(base) / time(spec) and the
# ratio of median times, with percentile 95% bootstrap intervals
# (replay_summary.py), over popular, tenant_bo and H.  With CLAIRVOYANT=1
# (oboe_ov1 only) also time(spec) / the clairvoyant bound (clairvoyant.py).
#
# RESULT lines, one per cell and spec (losses 0.01/0.005/0.002):
#   RESULT portfolio cell=C spec=S draws=N
#     tb_mr=a/b/c tb_rom=.. (over tenant_bo) pop_mr= pop_rom= (over popular)
#     h_mr= h_rom= (over H) [clair=<median time/bound at 0.01> clair_lo= clair_hi=]
#
# Environment: SPECS, CELLS (default "oboe_ov1 seed_history openml_weka
# oboe30_unit oboe30_ov1"), DRAWS (2), JOBS (1), WITH_DEFAULT, CLAIRVOYANT,
# OUT (scripts/bench/out).  CPU: about 1.4 s a draw per policy on Oboe
# (default: about 5 s), far less on the small cells.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/replay_lib.sh

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
[ $# -ge 1 ] || { echo "usage: $0 SEEDS" >&2; exit 2; }
SEEDS=$(expand_seeds "$1")
H=hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2:xg=1.5:xo=1
SPECS=${SPECS:-$H:pf=1:xg=0}
CELLS=${CELLS:-oboe_ov1 seed_history openml_weka oboe30_unit oboe30_ov1}
DRAWS=${DRAWS:-2}
OUT=${OUT:-scripts/bench/out}/portfolio
BOOT=2000
POLICIES=popular,tenant_bo,$H${WITH_DEFAULT:+,default},$SPECS
mkdir -p "$OUT"
rm -f "$OUT"/*.csv "$OUT"/*.txt "$OUT"/*.cmd
make -s easeml-replay
make_oboe30 "$OUT"

echo "== seeds $SEEDS x $DRAWS draws, policies $POLICIES"
for name in $CELLS; do
	for s in $SEEDS; do
		cmd=$(cell_cmd "$name" "$OUT" "$s" "$DRAWS" "$POLICIES")
		echo "$cmd" >"$OUT/${name}_s$s.cmd"
		# shellcheck disable=SC2086
		parallel $cmd --times "$OUT/${name}_s$s.csv" >"$OUT/${name}_s$s.txt"
	done
done
parallel_wait

for name in $CELLS; do
	for p in ${SPECS//,/ }${WITH_DEFAULT:+ default}; do
		/usr/bin/python3 scripts/bench/replay_summary.py --bootstrap $BOOT --tag "$name" "$p" \
			"popular,tenant_bo,$H" "$OUT/${name}"_s*.csv >>"$OUT/ratios.txt"
	done
	if [ -n "${CLAIRVOYANT:-}" ] && [ "$name" = oboe_ov1 ]; then
		/usr/bin/python3 scripts/bench/clairvoyant.py --bootstrap $BOOT --tag "$name" \
			--policies "${SPECS}${WITH_DEFAULT:+,default},$H,tenant_bo" "$OUT/${name}"_s*.cmd >"$OUT/clair.txt"
	fi
done

/usr/bin/python3 - "$OUT/ratios.txt" "$OUT/clair.txt" "$H" <<'PY'
import os, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    key = (f["tag"], f["policy"])
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key][(f["base"], f["thr"])] = f
clair = {}
if os.path.exists(sys.argv[2]):
    for line in open(sys.argv[2]):
        w = line.split()
        if w and w[0] == "DISTANCE":
            f = dict(kv.split("=", 1) for kv in w[1:])
            clair[(f["policy"], f["thr"])] = f
H = sys.argv[3]
thr = ["0.01", "0.005", "0.002"]
short = {"popular": "pop", "tenant_bo": "tb", H: "h"}
print("time(base) / time(spec): median per-draw ratio [95%] (ratio of medians [95%])")
for key in order:
    print("%s  %s" % key)
    for base in ("tenant_bo", "popular", H):
        cells = []
        for t in thr:
            f = rows[key][(base, t)]
            cells.append("%.2f [%.2f-%.2f] (%.2f [%.2f-%.2f])" % (
                float(f["median_ratio"]), float(f["median_ratio_lo"]), float(f["median_ratio_hi"]),
                float(f["ratio_of_medians"]), float(f["ratio_of_medians_lo"]),
                float(f["ratio_of_medians_hi"])))
        print("  over %-10s %s" % (short[base], " | ".join(cells)))
for key in order:
    out = "RESULT portfolio cell=%s spec=%s draws=%s" % (key[0], key[1], rows[key][("tenant_bo", "0.01")]["draws"])
    for base in ("tenant_bo", "popular", H):
        for stat, name in (("median_ratio", "mr"), ("ratio_of_medians", "rom")):
            out += " %s_%s=%s" % (short[base], name, "/".join(
                "%.2f" % float(rows[key][(base, t)][stat]) for t in thr))
    c = clair.get((key[1], "0.01"))
    if key[0] == "oboe_ov1" and c:
        out += " clair=%.2f clair_lo=%.2f clair_hi=%.2f clair_rom=%.2f" % (
            float(c["median_ratio"]), float(c["median_ratio_lo"]), float(c["median_ratio_hi"]),
            float(c["ratio_of_medians"]))
    print(out)
for p in (H, "tenant_bo"):
    c = clair.get((p, "0.01"))
    if c:
        print("RESULT portfolio cell=oboe_ov1 spec=%s clair=%.2f clair_lo=%.2f clair_hi=%.2f clair_rom=%.2f" % (
            p, float(c["median_ratio"]), float(c["median_ratio_lo"]), float(c["median_ratio_hi"]),
            float(c["ratio_of_medians"])))
PY
