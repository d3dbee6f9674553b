# scripts/bench/replay_lib.sh: what replay.sh, replay_suite.sh and
# oracle.sh share (sourced, not run): the seed list, running seeds in
# parallel, and the suite's cells (one definition of each matrix, its
# costs and its tenants, read by both the suite and the clairvoyant bound).

# Report seeds for issue 23, written down (docs/scheduler.md 6) before any
# run on them; 1-5 are development, 101-110 choosing, 201-210 reported.
REPORT_SEEDS=401-410

# expand_seeds "401-410" | "401 402" | "401,402,405-407": one line of seeds
expand_seeds() {
	local s out=() a b
	for s in ${1//,/ }; do
		if [[ $s =~ ^([0-9]+)-([0-9]+)$ ]]; then
			a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
			((a <= b)) || { echo "bad seed range $s" >&2; return 2; }
			out+=($(seq "$a" "$b"))
		elif [[ $s =~ ^[0-9]+$ ]]; then
			out+=("$s")
		else
			echo "bad seed $s (want e.g. 401-410 or \"401 402\")" >&2
			return 2
		fi
	done
	((${#out[@]} > 0)) || { echo "no seeds" >&2; return 2; }
	echo "${out[*]}"
}

# parallel CMD...: run CMD in the background, at most JOBS (default 1) at
# a time; finish with parallel_wait (which fails if any job failed)
parallel() {
	while (($(jobs -rp | wc -l) >= ${JOBS:-1})); do
		wait -n
	done
	"$@" &
}
parallel_wait() {
	local p rc=0
	for p in $(jobs -p); do
		wait "$p" || rc=1
	done
	return $rc
}

# The suite's cells: name, then its flat-cost flag (1: every run costs
# about the same), then tenants, then the easeml-replay arguments.
#   oboe_ov0/1/10  Oboe (418 OpenML data sets x 219 scikit-learn models),
#                  runtimes + 0, 1, 10 s per run
#   oboe_unit      Oboe, every run costs 1                           (flat)
#   oboe30_unit    Oboe's 30 cheapest models (median runtime), unit  (flat)
#   oboe30_ov1     the same small jobs (median 0.04 s, 75% < 0.4 s) with
#                  their runtimes + 1 s per run                      (flat)
#   seed_history   the project's seed history (14 data sets x 37 models),
#                  3 tenants, unit costs                             (flat)
#   openml_weka    ASlib OPENML-WEKA-2017 (105 x 30), unit costs     (flat)
# Matrices without runtimes have no "+1 s" cell: 1 + 1 s per run is unit
# cost scaled by 2, the same ratios.
SUITE_CELLS="oboe_ov1 seed_history openml_weka oboe30_unit oboe30_ov1 oboe_unit oboe_ov0 oboe_ov10"
OBOE=scripts/bench/data/oboe

# cell_args NAME DIR: "flat tenants replay-arguments..." of cell NAME;
# DIR holds the derived matrices (make_oboe30 DIR)
cell_args() {
	local q="--quality $OBOE/error_matrix.csv --error"
	local c="--cost $OBOE/runtime_matrix.csv --sizes $OBOE/dataset_sizes.csv"
	local q30="--quality $2/oboe30_error.csv --error"
	local c30="--cost $2/oboe30_runtime.csv --sizes $OBOE/dataset_sizes.csv"
	case $1 in
	oboe_ov[0-9]*) echo "0 20 $q $c --overhead ${1#oboe_ov}" ;;
	oboe_unit) echo "1 20 $q" ;;
	oboe30_unit) echo "1 20 $q30" ;;
	oboe30_ov1) echo "1 20 $q30 $c30 --overhead 1" ;;
	seed_history) echo "1 3 --quality scripts/history/easeml_seed_history.csv" ;;
	openml_weka) echo "1 20 --quality scripts/bench/data/openml_weka/quality_matrix.csv" ;;
	*) echo "unknown cell $1" >&2; return 2 ;;
	esac
}

# cell_cmd NAME DIR SEED DRAWS POLICIES: the easeml-replay command line of
# one seed of a cell (thresholds 0.01, 0.005, 0.002; AUTO_CANDIDATES and
# AUTO_DRAWS passed on), without --times; "$(cell_cmd ...) --times F" runs
# it.  Scripts record it beside the times (NAME_sSEED.cmd) so that another
# script can reuse the times of the identical command (replay.sh REUSE).
cell_cmd() {
	local flat tenants args
	read -r flat tenants args <<<"$(cell_args "$1" "$2")"
	echo "./easeml-replay $args --tenants $tenants --draws $4 --seed $3" \
		"--thresholds 0.01,0.005,0.002 --policies $5" \
		"${AUTO_CANDIDATES:+--auto-candidates $AUTO_CANDIDATES}" \
		"${AUTO_DRAWS:+--auto-draws $AUTO_DRAWS}"
}

# complete_times CSV DRAWS POLICIES: true when CSV holds every draw of every
# policy at the three losses on one device (easeml-replay writes it at the
# end of a run, so a run that was stopped has none)
complete_times() {
	local n
	n=$(echo "$3" | tr ',' '\n' | wc -l)
	[ -s "$1" ] && [ "$(($(wc -l <"$1") - 1))" -eq "$(($2 * n * 3))" ]
}

# make_oboe30 DIR: Oboe's 30 cheapest models (median runtime over data
# sets), errors and runtimes
make_oboe30() {
	/usr/bin/python3 - "$OBOE" "$1" <<'EOF'
import csv, statistics, sys
src, out = sys.argv[1], sys.argv[2]
rows = list(csv.reader(open(src + "/error_matrix.csv")))
cost = list(csv.reader(open(src + "/runtime_matrix.csv")))
k = len(rows[0]) - 1
med = [statistics.median(float(r[j + 1]) for r in cost[1:]) for j in range(k)]
keep = sorted(range(k), key=lambda j: med[j])[:30]
for name, m in (("oboe30_error.csv", rows), ("oboe30_runtime.csv", cost)):
    with open(out + "/" + name, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for r in m:
            w.writerow([r[0]] + [r[j + 1] for j in keep])
EOF
}
