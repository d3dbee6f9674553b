#!/bin/bash
# scripts/bench/replay_suite.sh [SEEDS]: is the scheduler's default policy
# never slower than the users' heuristic, on workloads of different shapes,
# flat costs included? (issues 7 and 23)
#
# Cells (scripts/bench/replay_lib.sh, the one definition the clairvoyant
# bound of oracle.sh reads too):
#   oboe_ov0, oboe_ov1, oboe_ov10  Oboe (418 OpenML data sets x 219
#                                  scikit-learn models, runtimes), 0, 1 and
#                                  10 s charged per run
#   flat costs (every run costs about the same):
#   oboe_unit                      Oboe, every run costs 1
#   oboe30_unit                    Oboe restricted to its 30 cheapest models
#                                  (median runtime), every run costs 1
#   oboe30_ov1                     the same small jobs (median runtime
#                                  0.04 s) with their runtimes + 1 s per run
#   seed_history                   the project's own seed history
#                                  (scripts/history/: 14 data sets x 37
#                                  easeml models), 3 tenants, unit costs
#   openml_weka                    ASlib OPENML-WEKA-2017 (105 OpenML tasks
#                                  x 30 Weka classifiers, accuracy; GPLv3,
#                                  scripts/bench/data/openml_weka), unit costs
#   (a matrix without runtimes has no "+1 s" cell: 1 + 1 s per run is its
#   unit-cost cell scaled by 2, the same ratios)
# Policies: default (the live scheduler's default, src/core/policy_spec.c: "auto",
# which on each draw replays its candidates on that draw's prior rows
# alone, as the live worker does on its installed history, and runs the
# winner) against popular (popular model first, tenants round-robin) and
# tenant_bo (every tenant its own cost-aware GP-EI with the same prior and
# cost model, tenants round-robin), plus EXTRA policy specs (default:
# hybrid:cost, the fixed default before auto).
# SEEDS (first argument, as replay.sh; default the report seeds 401-410,
# written down before any run on them) x DRAWS (20) draws, pooled: 200.
# Per cell and loss 0.01 / 0.005 / 0.002: the median per-draw ratio
# time(base) / time(default) and the ratio of median times, each with a
# percentile 95% bootstrap interval (scripts/bench/replay_summary.py).
# Last line: RESULT worst_vs_popular=<min median ratio over cells and
# losses> worst_rom_vs_popular=<min ratio of medians> below_1=<cell-losses
# with median ratio < 1> rom_below_1=<with ratio of medians < 1>
# flat_worst_vs_popular= flat_worst_rom_vs_popular= (the same over the flat
# cells) flat_cells_met=<flat cells >= 1 at every loss by both>/<flat
# cells> worst_vs_tenant_bo=<min median ratio>, then for hybrid:cost
# hybrid_worst_vs_popular hybrid_below_1.
# CPU (one core): Oboe cells 4-7 s a draw (the default's inner replays),
# the others less: about 85 min for 200 draws;
# JOBS seeds run at a time (default 1).
#
# Environment: DRAWS (20), EXTRA (policy specs, comma list; "" for none),
# CELLS (a subset of the cells), JOBS, RESUME (1: keep a cell-seed of an
# interrupted run whose recorded command is the same and whose times are
# complete; the replay is deterministic), OUT, AUTO_CANDIDATES and AUTO_DRAWS
# (experiments, as in replay.sh).  SEEDS is read when no argument is given.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/replay_lib.sh

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
OUT=${OUT:-scripts/bench/out}/suite
SEEDS=$(expand_seeds "${1:-${SEEDS:-$REPORT_SEEDS}}")
DRAWS=${DRAWS:-20}
EXTRA=${EXTRA-hybrid:cost}
CELLS=${CELLS:-$SUITE_CELLS}
BOOT=2000
POLICIES=popular,tenant_bo,default${EXTRA:+,$EXTRA}
mkdir -p "$OUT"
if [ -n "${RESUME:-}" ]; then
	rm -f "$OUT/ratios.txt"
else
	rm -f "$OUT"/*.csv "$OUT"/*.txt "$OUT"/*.cmd
fi
make -s easeml-replay
make_oboe30 "$OUT"

echo "== seeds $SEEDS x $DRAWS draws, policies $POLICIES"
for name in $CELLS; do
	read -r flat tenants args <<<"$(cell_args "$name" "$OUT")"
	for s in $SEEDS; do
		cmd=$(cell_cmd "$name" "$OUT" "$s" "$DRAWS" "$POLICIES")
		if [ -n "${RESUME:-}" ] && [ "$(cat "$OUT/${name}_s$s.cmd" 2>/dev/null)" = "$cmd" ] &&
			complete_times "$OUT/${name}_s$s.csv" "$DRAWS" "$POLICIES"; then
			echo "$name seed $s: kept (RESUME: the same command's complete times)"
			continue
		fi
		echo "$cmd" >"$OUT/${name}_s$s.cmd"
		# shellcheck disable=SC2086
		parallel $cmd --times "$OUT/${name}_s$s.csv" >"$OUT/${name}_s$s.txt"
	done
done
parallel_wait
for name in $CELLS; do
	read -r flat tenants args <<<"$(cell_args "$name" "$OUT")"
	for p in ${POLICIES//,/ }; do
		[ "$p" = popular ] || [ "$p" = tenant_bo ] && continue
		/usr/bin/python3 scripts/bench/replay_summary.py --bootstrap $BOOT --tag "$name" "$p" \
			popular,tenant_bo "$OUT/${name}"_s*.csv | sed "s/\$/ flat=$flat/" >>"$OUT/ratios.txt"
	done
	echo "$name (flat=$flat): $(grep -h 'identical rows removed' "$OUT/${name}_s${SEEDS%% *}.txt" | sed 's/^# //');" \
		"default chose $(cat "$OUT/${name}"_s*.txt | awk '$1 == "AUTO" {
			for (i = 4; i <= NF; i++) { j = match($i, /=[0-9]+$/); n[substr($i, 1, j - 1)] += substr($i, j + 1) } }
			END { for (k in n) if (n[k]) printf "%s %d, ", k, n[k] }' | sed 's/, $//')"
done

echo
echo "time(base) / time(policy), pooled over $(awk '$1 == "RATIO" { sub("draws=", "", $8); print $8; exit }' "$OUT/ratios.txt") draws:"
echo "median per-draw ratio [bootstrap 95%] and ratio of medians [bootstrap 95%]"
/usr/bin/python3 - "$OUT/ratios.txt" <<'PY'
import sys
rows, order = {}, []
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    key = (f["tag"], f["policy"])
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key][(f["base"], f["thr"])] = f
thr = ["0.01", "0.005", "0.002"]
def cell(f, k):
    return "%6.2f [%.2f-%.2f]" % (float(f[k]), float(f[k + "_lo"]), float(f[k + "_hi"]))
for base in ("popular", "tenant_bo"):
    print("over %s (* = flat costs)" % base)
    print("%-14s %-11s %-6s %22s %22s" % ("cell", "policy", "loss", "median_ratio", "ratio_of_medians"))
    for key in order:
        for t in thr:
            f = rows[key][(base, t)]
            name = key[0] + ("*" if f["flat"] == "1" else "")
            print("%-14s %-11s %-6s %22s %22s" % (name, key[1], t, cell(f, "median_ratio"),
                                                 cell(f, "ratio_of_medians")))

def over(policy, base, flat_only=False):
    return [f for key in order if key[1] == policy for (b, t), f in rows[key].items()
            if b == base and (not flat_only or f["flat"] == "1")]
d = over("default", "popular")
fl = over("default", "popular", True)
# (nan where no cell qualifies, e.g. CELLS=oboe_ov1 has no flat cell)
mr = lambda fs: min((float(f["median_ratio"]) for f in fs), default=float("nan"))
rom = lambda fs: min((float(f["ratio_of_medians"]) for f in fs), default=float("nan"))
flat_cells = sorted({f["tag"] for f in fl})
met = [c for c in flat_cells if all(float(f["median_ratio"]) >= 1 and float(f["ratio_of_medians"]) >= 1
                                   for f in fl if f["tag"] == c)]
res = ("RESULT worst_vs_popular=%.4f worst_rom_vs_popular=%.4f below_1=%d rom_below_1=%d "
       "flat_worst_vs_popular=%.4f flat_worst_rom_vs_popular=%.4f flat_cells_met=%d/%d "
       "worst_vs_tenant_bo=%.4f"
       % (mr(d), rom(d), sum(float(f["median_ratio"]) < 1 for f in d),
          sum(float(f["ratio_of_medians"]) < 1 for f in d), mr(fl), rom(fl), len(met),
          len(flat_cells), mr(over("default", "tenant_bo"))))
h = over("hybrid:cost", "popular")
if h:
    res += " hybrid_worst_vs_popular=%.4f hybrid_below_1=%d" % (
        mr(h), sum(float(f["median_ratio"]) < 1 for f in h))
print()
print("flat cells where default >= 1 over popular at every loss by both: %s; not: %s"
      % (" ".join(met) or "none", " ".join(c for c in flat_cells if c not in met) or "none"))
print(res)
PY
