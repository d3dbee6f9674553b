#!/usr/bin/python3
"""The AutoML benchmark's Python side (scripts/bench/automl.sh runs it).

  automl_bench.py data NAME OUT.csv        a data set as x1..xd,label (numbers, label text)
  automl_bench.py holdout CSV DEV TEST     the held-out test rows (seed 20261207, fraction 0.2)
  automl_bench.py split CSV TRAIN VAL      easeml's validation split (seed 42, fraction 0.2)
  automl_bench.py optuna CSV --budget S --trace OUT.jsonl [--jobs 2] [--seed 0]
  automl_bench.py optuna_test DEV TEST --trace T.jsonl --budget S --out OUT.json
  automl_bench.py summary DIR --budgets '60 300' --ran 300

The data sets are in no seed history (scripts/make_history.sh) and no demo
(scripts/setup.sh): mlbench's Sonar, Vehicle, Vowel, Satellite and DNA
(r-cran-mlbench), kernlab's spam (r-cran-kernlab), both read through Rscript
(r-base-core), and Statlog heart (liblinear-tools' heart_scale).

Both sides score the same rows: split reproduces the trainer's stratified
split (src/trainer/tr_prep.c StratifiedSplit: classes sorted bytewise, per
class floor(f n_c) validation rows plus the largest remainders up to
round(f n), a Fisher-Yates shuffle per class with splitmix64 and Lemire's
bounded draw, TrShuffle / TrRandBelow in src/trainer/tr_util.c), on the rows
in table order.  automl.sh checks it per data set against the trainer itself
(the same score with --seed 42 on the whole file as on --train-csv/--val-csv).
The metric is accuracy on the validation rows on both sides (easeml's default
for classification, runs.score).

Held-out test rows: holdout splits the whole data set, before either side
runs, into a dev file (80 %) and a test file (20 %), stratified the same way
as easeml's split (easeml_split) but with its own seed, TEST_SEED = 20261207
(not 42, so the test rows are not the rows the validation split would pick).
Both searches see the dev rows only (the dev file is what split, optuna and
easeml's table hold); the validation split above is a split of the dev rows.
The best run of each side is scored once on the test rows after its search:
easeml's by automl.sh (deployed without refit, easeml.predict as the tenant),
Optuna's by optuna_test (the best trial that finished within the budget,
the highest validation score and the earliest among ties, rebuilt from its
params and seed, fitted on the same training rows, accuracy on the test
rows).  The validation score picks the model on both sides, so it is
optimistic (easeml's ensembles' scores are cross-fitted over the validation
rows, docs/models.md section 8, but their members were chosen by them); the
test score is not.

optuna runs Optuna's TPE (n_jobs threads, one study, define-by-run) over the
scikit-learn estimators of easeml's families (softmax, linear_svm, ridge, gnb,
knn, mlp, random_forest, gbt; cnn needs images) on features standardised on
the training rows, as the trainer does.  The clock starts before the CSV is
read (the imports are done: a user's Python is up, as easeml's server is);
each finished trial is written to the trace with its end time; a trial that
ends after the budget does not count, and the process exits at the budget.

summary reads DIR/<set>.easeml.jsonl and DIR/<set>.optuna.jsonl (lines
{"t": seconds since the start, "score": validation accuracy}), and
DIR/<set>.easeml_test.json and DIR/<set>.optuna_test.json (the test
accuracy of each side's best at the largest budget), and prints the table
and the RESULT lines.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

HEART = "/usr/share/doc/liblinear-tools/examples/heart_scale"
RSETS = {  # name: (R package, data object, target column)
    "sonar": ("mlbench", "Sonar", "Class"),
    "vehicle": ("mlbench", "Vehicle", "Class"),
    "vowel": ("mlbench", "Vowel", "Class"),
    "satellite": ("mlbench", "Satellite", "classes"),
    "dna": ("mlbench", "DNA", "Class"),
    "spam": ("kernlab", "spam", "type"),
}
SETS = ["heart", "sonar", "vehicle", "vowel", "dna", "spam", "satellite"]
TEST_SEED = 20261207    # the held-out test split's seed (the validation split's is 42)
TEST_FRACTION = 0.2


# ---- data -------------------------------------------------------------------
def write_set(name, out):
    if name == "heart":
        rows = []
        with open(HEART) as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                x = [0.0] * 13
                for p in parts[1:]:
                    i, v = p.split(":")
                    x[int(i) - 1] = float(v)
                rows.append(x + [str(int(float(parts[0])))])
        with open(out, "w") as f:
            f.write(",".join(["x%d" % (i + 1) for i in range(13)] + ["label"]) + "\n")
            for r in rows:
                f.write(",".join(repr(v) for v in r[:-1]) + "," + r[-1] + "\n")
        return
    pkg, obj, target = RSETS[name]
    # factors whose levels are numbers become those numbers, other factors
    # their level codes; the target becomes text
    script = """
suppressMessages(library(%s)); data(%s); d <- %s; y <- as.character(d[["%s"]]); d[["%s"]] <- NULL
for (j in seq_along(d)) if (is.factor(d[[j]])) {
  v <- suppressWarnings(as.numeric(as.character(d[[j]])))
  d[[j]] <- if (any(is.na(v))) as.integer(d[[j]]) else v
}
names(d) <- paste0("x", seq_along(d)); d$label <- y
write.csv(d, "%s", row.names = FALSE, quote = FALSE)
""" % (pkg, obj, obj, target, target, out)
    subprocess.run(["Rscript", "-e", script], check=True)


def read_csv(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
        X, y = [], []
        for line in f:
            p = line.rstrip("\n").split(",")
            X.append([float(v) for v in p[:-1]])
            y.append(p[-1])
    return header, np.array(X, dtype=np.float64), y


# ---- easeml's split ---------------------------------------------------------
M64 = (1 << 64) - 1


class SplitMix:
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9e3779b97f4a7c15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        return z ^ (z >> 31)

    def below(self, n):
        if n <= 1:
            return 0
        m = self.next() * n
        lo = m & M64
        if lo < n:
            t = ((1 << 64) - n) % n
            while lo < t:
                m = self.next() * n
                lo = m & M64
        return m >> 64


def easeml_split(y, frac=0.2, seed=42):
    """is_val per row, as StratifiedSplit in src/trainer/tr_prep.c."""
    classes = sorted(set(y), key=lambda s: s.encode())
    cid = {c: i for i, c in enumerate(classes)}
    cls = [cid[v] for v in y]
    n, k = len(y), len(classes)
    count = [0] * k
    for c in cls:
        count[c] += 1
    target = int(math.floor(frac * n + 0.5))
    take, rem, total = [0] * k, [0.0] * k, 0
    for c in range(k):
        want = frac * count[c]
        take[c] = int(math.floor(want))
        if take[c] > count[c] - 1:
            take[c] = count[c] - 1 if count[c] > 0 else 0
        rem[c] = want - take[c]
        total += take[c]
    while total < target:
        best = -1
        for c in range(k):
            if take[c] < count[c] - 1 and (best < 0 or rem[c] > rem[best]):
                best = c
        if best < 0:
            break
        take[best] += 1
        rem[best] = -1.0
        total += 1
    rng = SplitMix(seed)
    is_val = [False] * n
    for c in range(k):
        order = [i for i in range(n) if cls[i] == c]
        for i in range(len(order) - 1, 0, -1):
            j = rng.below(i + 1)
            order[i], order[j] = order[j], order[i]
        for i in order[:take[c]]:
            is_val[i] = True
    return np.array(is_val)


def write_split(csv, train, val, frac=0.2, seed=42):
    """the rows of csv picked by easeml_split(frac, seed) to val, the others
    to train, each in the file's order"""
    with open(csv) as f:
        lines = f.readlines()
    _, _, y = read_csv(csv)
    is_val = easeml_split(y, frac, seed)
    with open(train, "w") as ft, open(val, "w") as fv:
        ft.write(lines[0])
        fv.write(lines[0])
        for line, v in zip(lines[1:], is_val):
            (fv if v else ft).write(line)


def standardise(X, y):
    """the training and validation rows of easeml's split of (X, y), features
    standardised on the training rows as the trainer does; and the
    transform, for other rows"""
    is_val = easeml_split(y)
    y = np.array(y)
    Xtr, Xva, ytr, yva = X[~is_val], X[is_val], y[~is_val], y[is_val]
    mean, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    scale = np.where(sd > 1e-12 * np.maximum(1.0, np.abs(mean)), 1.0 / np.where(sd > 0, sd, 1.0), 0.0)
    return (Xtr - mean) * scale, (Xva - mean) * scale, ytr, yva, lambda Z: (Z - mean) * scale


# ---- Optuna -----------------------------------------------------------------
def make_model(trial, n_train, seed):
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import LinearSVC

    fam = trial.suggest_categorical("family", ["softmax", "linear_svm", "ridge", "gnb", "knn",
                                               "mlp", "random_forest", "gbt"])
    # the grid's values (sql/easeml.sql's easeml.models rows) lie inside each range
    if fam == "softmax":
        l2 = trial.suggest_float("softmax_l2", 1e-6, 10.0, log=True)
        return fam, LogisticRegression(C=1.0 / (l2 * n_train), max_iter=100)
    if fam == "linear_svm":
        return fam, LinearSVC(C=trial.suggest_float("svm_C", 1e-3, 100.0, log=True), max_iter=1000)
    if fam == "ridge":
        return fam, RidgeClassifier(alpha=trial.suggest_float("ridge_alpha", 1e-2, 1e3, log=True))
    if fam == "gnb":
        return fam, GaussianNB(var_smoothing=trial.suggest_float("gnb_var_smoothing", 1e-10, 1.0,
                                                                 log=True))
    if fam == "knn":
        return fam, KNeighborsClassifier(
            n_neighbors=min(trial.suggest_int("knn_k", 1, 50, log=True), n_train),
            weights=trial.suggest_categorical("knn_weights", ["uniform", "distance"]))
    if fam == "mlp":
        layers = trial.suggest_int("mlp_layers", 1, 2)
        width = trial.suggest_int("mlp_width", 32, 512, log=True)
        hidden = (width,) if layers == 1 else (width, max(width // 2, 1))
        return fam, MLPClassifier(hidden_layer_sizes=hidden,
                                  learning_rate_init=trial.suggest_float("mlp_lr", 1e-4, 1e-2, log=True),
                                  alpha=trial.suggest_float("mlp_alpha", 1e-6, 1e-1, log=True),
                                  batch_size=min(200, n_train), max_iter=200, random_state=seed)
    if fam == "random_forest":
        depth = trial.suggest_int("rf_max_depth", 0, 30)
        return fam, RandomForestClassifier(
            n_estimators=trial.suggest_int("rf_n_trees", 20, 300, log=True),
            max_features=trial.suggest_float("rf_max_features", 0.05, 1.0),
            max_depth=depth if depth > 0 else None,
            min_samples_leaf=trial.suggest_int("rf_min_samples_leaf", 1, 10),
            n_jobs=1, random_state=seed)
    return fam, HistGradientBoostingClassifier(
        max_iter=trial.suggest_int("gbt_n_rounds", 50, 400, log=True),
        learning_rate=trial.suggest_float("gbt_lr", 0.01, 0.5, log=True),
        max_leaf_nodes=trial.suggest_int("gbt_max_leaves", 8, 128, log=True),
        min_samples_leaf=trial.suggest_int("gbt_min_samples_leaf", 5, 50, log=True),
        l2_regularization=trial.suggest_float("gbt_l2", 1e-8, 1.0, log=True),
        early_stopping=False, random_state=seed)


def run_optuna(args):
    import optuna
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import accuracy_score

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    t0 = time.monotonic()
    _, X, y = read_csv(args.csv)
    Xtr, Xva, ytr, yva, _ = standardise(X, y)
    lock = threading.Lock()
    out = open(args.trace, "w")

    def stop():
        with lock:
            out.flush()
            os._exit(0)
    threading.Timer(max(args.budget - (time.monotonic() - t0), 0), stop).start()

    def objective(trial):
        fam, model = make_model(trial, len(ytr), args.seed + trial.number)
        s = time.monotonic()
        try:
            model.fit(Xtr, ytr)
            score = float(accuracy_score(yva, model.predict(Xva)))
        except (ValueError, ArithmeticError) as e:  # a diverged or refused fit: a failed trial
            print("trial %d (%s) failed: %s" % (trial.number, fam, e), file=sys.stderr)
            raise optuna.TrialPruned()
        t = time.monotonic() - t0
        with lock:
            if t <= args.budget:
                out.write(json.dumps({"t": round(t, 3), "score": score, "family": fam,
                                      "seconds": round(t - (s - t0), 3),
                                      "number": trial.number, "seed": args.seed + trial.number,
                                      "params": trial.params}) + "\n")
                out.flush()
        return score

    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=args.seed))
    study.optimize(objective, n_jobs=args.jobs, timeout=args.budget)
    stop()


def optuna_test(args):
    """the test accuracy of the best trial of a trace that finished within
    the budget (highest validation score, then the earliest), rebuilt from
    its params and seed and fitted on the same training rows"""
    import optuna
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import accuracy_score

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    tr = [r for r in trace(args.trace) if r["t"] <= args.budget]
    res = {"budget": args.budget, "test_accuracy": None}
    if tr:
        best = min(tr, key=lambda r: (-r["score"], r["t"]))
        _, X, y = read_csv(args.dev)
        Xtr, Xva, ytr, yva, tf = standardise(X, y)
        _, Xte, yte = read_csv(args.test)
        fam, model = make_model(optuna.trial.FixedTrial(best["params"], best["number"]),
                                len(ytr), best["seed"])
        model.fit(Xtr, ytr)
        res.update({"trial": best["number"], "t": best["t"], "family": fam,
                    "params": best["params"], "seed": best["seed"], "score": best["score"],
                    # the rebuilt model's validation score: the trial's when
                    # the rebuild is the same model
                    "score_rebuilt": float(accuracy_score(yva, model.predict(Xva))),
                    "n_train": len(ytr), "n_test": len(yte),
                    "test_accuracy": float(accuracy_score(np.array(yte), model.predict(tf(Xte))))})
    with open(args.out, "w") as f:
        json.dump(res, f)
        f.write("\n")
    print(json.dumps(res))


# ---- summary ----------------------------------------------------------------
def trace(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return sorted((json.loads(line) for line in f if line.strip()), key=lambda r: r["t"])


def best_at(tr, b):
    s = [r["score"] for r in tr if r["t"] <= b]
    return max(s) if s else None


def time_to(tr, score, b):
    for r in tr:
        if r["t"] > b:
            break
        if r["score"] >= score - 1e-9:
            return r["t"]
    return None


def fmt(v, f="%.4f"):
    return "-" if v is None else f % v


def test_result(path):
    """a side's test record ({} when there is none)"""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def summary(args):
    budgets = [int(b) for b in args.budgets.replace(",", " ").split()]
    ran = int(args.ran)
    sets = [s for s in SETS if os.path.exists(os.path.join(args.dir, s + ".easeml.jsonl"))]
    print("# best validation accuracy at each budget (runs/trials finished by then), and at the")
    print("# largest budget run (%d s): the time each side took to reach the other's final score" % ran)
    head = "%-10s" % "data set"
    for b in budgets:
        head += " %9s %9s" % ("easeml%d" % b, "optuna%d" % b)
    head += " %8s %8s %8s %8s %6s %6s" % ("e->o_s", "o->e_s", "tgt_e_s", "tgt_o_s", "e_runs", "o_runs")
    head += " %9s %9s  %s" % ("e_test", "o_test", "e_model (test: the best at %d s)" % ran)
    print(head)
    deltas = {b: [] for b in budgets}
    test_deltas = []
    ratios = []
    for s in sets:
        e = trace(os.path.join(args.dir, s + ".easeml.jsonl"))
        o = trace(os.path.join(args.dir, s + ".optuna.jsonl"))
        line = "%-10s" % s
        for b in budgets:
            if b > ran:
                line += " %9s %9s" % ("-", "-")
                continue
            be, bo = best_at(e, b), best_at(o, b)
            line += " %9s %9s" % (fmt(be), fmt(bo))
            if be is not None and bo is not None:
                deltas[b].append(be - bo)
        fe, fo = best_at(e, ran), best_at(o, ran)
        e2o = time_to(e, fo, ran) if fo is not None else None
        o2e = time_to(o, fe, ran) if fe is not None else None
        # the score both reached: the lower of the two final scores
        te = to = None
        if fe is not None and fo is not None:
            tgt = min(fe, fo)
            te, to = time_to(e, tgt, ran), time_to(o, tgt, ran)
            if te and to:
                ratios.append(to / te)
        line += " %8s %8s %8s %8s %6d %6d" % (fmt(e2o, "%.1f"), fmt(o2e, "%.1f"), fmt(te, "%.1f"),
                                               fmt(to, "%.1f"),
                                               sum(1 for r in e if r["t"] <= ran),
                                               sum(1 for r in o if r["t"] <= ran))
        et = test_result(os.path.join(args.dir, s + ".easeml_test.json"))
        ot = test_result(os.path.join(args.dir, s + ".optuna_test.json"))
        eta, ota = et.get("test_accuracy"), ot.get("test_accuracy")
        if eta is not None and ota is not None:
            test_deltas.append(eta - ota)
        model = et.get("model") or "-"
        if et.get("purpose") == "ensemble":
            model = "ensemble of %s" % (et.get("members") or "?")
        line += " %9s %9s  %s" % (fmt(eta), fmt(ota), model)
        print(line)
    print("# e->o_s: seconds easeml took to reach Optuna's final score (- never); o->e_s the reverse;")
    print("# tgt_e_s, tgt_o_s: seconds each took to reach the lower of the two final scores (the one")
    print("# both reached); automl_time_to_peer is the median of tgt_o_s / tgt_e_s (> 1: easeml faster)")
    print("# e_test, o_test: accuracy on the held-out test rows (neither search saw them) of each side's")
    print("# best at %d s (highest validation score, the earliest among ties): easeml's deployed without" % ran)
    print("# refit (trained on the training split), Optuna's best trial rebuilt; e_model: easeml's best")
    print("# (an ensemble with its members' models and how often each was added)")
    med = {b: (statistics.median(d) if d else float("nan")) for b, d in deltas.items()}
    for b in budgets:
        print("# median easeml - optuna at %d s: %s over %d data sets" % (
            b, "%.4f" % med[b] if deltas[b] else "not run", len(deltas[b])))
    d300 = med.get(300, float("nan"))
    extra = "".join(" automl_score_delta_%ds=%.4f" % (b, med[b]) for b in budgets if b != 300)
    print("RESULT automl_score_delta_300s=%s automl_time_to_peer=%s%s" % (
        "%.4f" % d300 if not math.isnan(d300) else "nan",
        "%.2f" % statistics.median(ratios) if ratios else "nan", extra))
    print("# median easeml - optuna test accuracy at %d s: over %d data sets" % (ran, len(test_deltas)))
    print("RESULT automl_test_delta_%ds=%s" % (
        ran, "%.4f" % statistics.median(test_deltas) if test_deltas else "nan"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("data")
    p.add_argument("name", choices=SETS)
    p.add_argument("out")
    p = sub.add_parser("holdout")
    p.add_argument("csv")
    p.add_argument("dev")
    p.add_argument("test")
    p = sub.add_parser("split")
    p.add_argument("csv")
    p.add_argument("train")
    p.add_argument("val")
    p = sub.add_parser("optuna")
    p.add_argument("csv")
    p.add_argument("--budget", type=float, required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("optuna_test")
    p.add_argument("dev")
    p.add_argument("test")
    p.add_argument("--trace", required=True)
    p.add_argument("--budget", type=float, required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("summary")
    p.add_argument("dir")
    p.add_argument("--budgets", default="60 300", help="seconds, separated by spaces or commas")
    p.add_argument("--ran", required=True, help="the budget the runs had (seconds)")
    p = sub.add_parser("sets")
    args = ap.parse_args()
    if args.cmd == "data":
        write_set(args.name, args.out)
    elif args.cmd == "holdout":
        write_split(args.csv, args.dev, args.test, TEST_FRACTION, TEST_SEED)
    elif args.cmd == "split":
        write_split(args.csv, args.train, args.val)
    elif args.cmd == "optuna":
        run_optuna(args)
    elif args.cmd == "optuna_test":
        optuna_test(args)
    elif args.cmd == "summary":
        summary(args)
    elif args.cmd == "sets":
        print(" ".join(SETS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
