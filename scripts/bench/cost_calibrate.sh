#!/usr/bin/env bash
# Reference rates of the live cost model (src/core/costmodel.c): the trainer's
# fit seconds per unit of each family's complexity formula, measured with
# the trainer alone on data sets that are neither the demo's tasks nor the
# new task of scripts/bench/cost_model.sh.
#
#   scripts/bench/cost_calibrate.sh [FASHION_TEST_ROWS]   (default 1500)
#
# Data: weka credit-g (1000 x 20, 2 classes), glass (214 x 9, 6),
# ionosphere (351 x 34, 2) and FASHION_TEST_ROWS rows of Fashion-MNIST's
# *test* part (784 pixels, 10 classes; the demo trains on the train part).
# Weka's sets come from scripts/bench/weka_data.sh (fetched once into
# scripts/bench/out/weka if Debian's weka package is not installed).
# Every built-in model runs once per data set (cnn on the images only).
# Only fits of at least 0.05 s count (shorter ones are mostly fixed costs).
# Prints, per family, the runs, the geometric mean rate and the spread of
# ln(rate) (how well the formula describes the family across sizes); the
# last line is RESULT <family>=<rate> ... for the table in costmodel.c.
# The families that stop when they converge (softmax, mlp, linear_svm)
# count every pass in their complexity: their rate is per pass made (a
# run's rate is divided by the share of its most passes it made; for
# linear_svm the share's square root, SVM_POWER), and
# <family>_passes=<geometric mean of the passes made> is their reference
# passes (FamilyRef.passes).  gbt's complexity counts the histogram bins
# the trainer reports (metrics "bins").
# The complexity formulas are repeated below from CostLogComplexity: keep
# them equal.  There is no peer.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROWS=${1:-1500}
# Weka segment (and the calibration sets): fetched once if not installed
EASEML_WEKA_DATA=$(scripts/bench/weka_data.sh)
export EASEML_WEKA_DATA
make -s easeml-trainer >/dev/null
tmp=$(mktemp -d)
# EASEML_CALIBRATE_RUNS=FILE keeps the measured runs (data set, rows, features, model, family, params, train seconds, classes, passes, histogram bins)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" "$ROWS" <<'PY'
import csv, os, sys
sys.path.insert(0, "scripts")
import datasets
out, rows = sys.argv[1], int(sys.argv[2])
for name, kw in [("credit_g", {}), ("glass", {}), ("ionosphere", {}),
                 ("fashion_mnist", {"rows": rows, "seed": 11, "part": "test"})]:
    header, data, kind = datasets.load(name, **kw)
    with open(os.path.join(out, name + ".csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(data)
PY
# the built-in models of the released catalog: name, family, params, needs_image
sed -n "/^INSERT INTO easeml.models/,/;$/p" sql/easeml--0.1.0.sql |
	sed -n "s/^\t('\([^']*\)', '\([^']*\)', '\([^']*\)', '[^']*', \(true\|false\).*/\1|\2|\3|\4/p" >"$tmp/models"
for ds in credit_g glass ionosphere fashion_mnist; do
	target=$(head -1 "$tmp/$ds.csv" | tr ',' '\n' | tail -1)
	n=$(($(wc -l <"$tmp/$ds.csv") - 1))
	d=$(($(head -1 "$tmp/$ds.csv" | tr ',' '\n' | wc -l) - 1))
	while IFS='|' read -r model family params image; do
		extra=()
		if [ "$image" = true ]; then
			[ "$ds" = fashion_mnist ] || continue
			extra=(--image-shape 1,28,28)
		fi
		if ./easeml-trainer --csv "$tmp/$ds.csv" --target "$target" --family "$family" \
			--params "$params" "${extra[@]}" --metrics-out "$tmp/m.json" >/dev/null 2>&1; then
			echo "$ds|$n|$d|$model|$family|$params|$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m.get("train_seconds"), m.get("n_classes"), m.get("epochs"), m.get("bins"))' "$tmp/m.json")"
		fi
	done <"$tmp/models"
done >"$tmp/runs"
[ -z "${EASEML_CALIBRATE_RUNS:-}" ] || cp "$tmp/runs" "$EASEML_CALIBRATE_RUNS"
python3 - "$tmp/runs" <<'PY'
import json, math, sys, statistics as st
# src/core/costmodel.c CostLogComplexity and sql _cost_shape, repeated
FORM = {"ridge": "ridge", "knn": "knn", "random_forest": "forest", "gnb": "nb", "mlp": "mlp", "cnn": "net", "gbt": "boost"}
PER = {"gbt", "softmax", "linear_svm"}
def shape(fam, p):
    num = lambda k, d: p[k] if isinstance(p.get(k), (int, float)) and p.get(k) > 0 else d
    work, width, inner, out = 1.0, 0.0, 0.0, 0.0
    if fam == "gbt": work = num("n_rounds", 100) / 100
    if fam == "random_forest":
        work = num("n_trees", 100) / 100
        mf = num("max_features", 0); width = mf if mf <= 1 else 0; inner = num("max_depth", 0)
    if fam == "softmax": work = num("max_iter", num("epochs", 100)) / 100
    if fam == "cnn":
        work = num("epochs", 5) / 5; a = p.get("filters", [16, 32])
        width = 9 * a[0] + sum(9 * a[i] * a[i + 1] / 4 ** (i + 1) for i in range(len(a) - 1)) + 128 * a[-1] / 4 ** len(a)
    if fam == "mlp":
        a = p.get("hidden", [128]); width = a[0]; inner = sum(a[i] * a[i + 1] for i in range(len(a) - 1)); out = a[-1]
    return work, width, inner, out
def complexity(fam, p, n, d, c, bins):
    work, width, inner, out = shape(fam, p)
    f = FORM.get(fam, "linear")
    if f == "ridge": x = n * d * (d + c)
    # gbt: each tree's rows x features, and leaves (<= 31, 20 rows each) x the data's bins (else d x min(255, rows))
    elif f == "boost":
        tr = 0.8 * n
        b = bins if bins and bins > 0 else d * min(255, tr)
        x = (tr * d + max(min(31, tr / 20), 1) * b) / 0.8
    # knn: validation x training row pairs plus 2.26 pairs per cell, over 0.16 (one split's pairs)
    elif f == "knn": x = (0.16 * n * n + 2.26 * n * d) / 0.16
    elif f == "forest":
        depth = math.log2(n + 1)
        if 1 <= inner < depth: depth = inner
        x = n * depth * (width * d if 0 < width <= 1 else math.sqrt(d))
    elif f == "nb": x = n * d * c
    elif f in ("net", "mlp"):
        x = d * (width or 1) + inner + out * c
        # mlp: 50 multiply-adds per hidden unit (first and last layer) and row
        if f == "mlp": x += 50 * ((width or 1) + (out if inner > 0 and out > 0 else 0))
        if f == "net": x *= n
        else: x *= 0.8 * n * min(max(math.ceil(2000 / math.ceil(0.8 * n / 200)), 10), 200)
    else: x = n * d
    return x * (c if fam in PER and c > 2 else 1) * work
def most_passes(fam, p, n):
    # src/core/costmodel.c CostMaxPasses: softmax's max_iter, mlp's epochs rule, linear_svm's 1,000
    if fam == "softmax": return 100 * shape(fam, p)[0]
    if fam == "linear_svm": return 1000
    if fam == "mlp": return min(max(math.ceil(2000 / math.ceil(0.8 * n / 200)), 10), 200)
    return 0
passes = {}
fams = {}
for line in open(sys.argv[1]):
    # features as declared (the scheduler's count), classes as the trainer saw them
    ds, n, d, model, fam, params, rest = line.rstrip("\n").split("|")
    train, c, epochs, bins = rest.split(" ")
    most = most_passes(fam, json.loads(params), float(n))
    share = 1.0
    if most > 0 and epochs != "None":
        made = min(float(epochs), most)
        passes.setdefault(fam, []).append(math.log(made))
        # linear_svm's time grows as the square root of its passes (SVM_POWER)
        share = (made / most) ** (0.5 if fam == "linear_svm" else 1)
    if train == "None" or float(train) < 0.05:
        continue
    y = math.log(float(train) / share / complexity(fam, json.loads(params), float(n), float(d), max(float(c), 2),
                                                   None if bins == "None" else float(bins)))
    fams.setdefault(fam, []).append((ds, model, y))
res = []
for fam, l in sorted(fams.items()):
    ys = [y for _, _, y in l]
    m = st.mean(ys)
    print("%-14s runs %2d  rate %.3g s/unit  sd(ln) %.2f  %s" % (fam, len(l), math.exp(m), st.pstdev(ys),
          " ".join("%s:%+.2f" % (ds, st.mean([y - m for d2, _, y in l if d2 == ds])) for ds in sorted({x[0] for x in l}))))
    res.append("%s=%.3g" % (fam, math.exp(m)))
    if fam in passes:
        print("%-14s passes made: geometric mean %.1f over %d runs, sd(ln) %.2f" % (fam, math.exp(st.mean(passes[fam])),
              len(passes[fam]), st.pstdev(passes[fam])))
        res.append("%s_passes=%.3g" % (fam, math.exp(st.mean(passes[fam]))))
print("RESULT " + " ".join(res))
PY
