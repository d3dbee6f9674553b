#!/usr/bin/python3
"""Side-by-side benchmark: easeml-trainer against scikit-learn and liblinear.

Called by scripts/bench/trainers.sh (which pins every BLAS/OpenMP pool to one
thread); run it with Debian's /usr/bin/python3, which sees python3-sklearn.

Fairness rules (docs/models.md repeats them):
  * Same rows: this script makes a stratified split (sklearn's
    train_test_split, seeded) and writes raw train/validation CSV files; the
    trainer reads them with --train-csv/--val-csv, so both sides train on
    identical rows and are scored on identical rows.
  * Same preprocessing: standardisation fitted on the training rows only
    (StandardScaler here; TrPrepare in the trainer; constant columns become 0
    on both sides).
  * Same hyperparameters where the models are the same model: the L2
    strength, hidden sizes, batch size, learning rate, epoch budget and
    stopping rule, number of trees, k, C and tolerance are set equal (see
    PAIRS below).
  * Same threads: one, for both (OPENBLAS/OMP/MKL_NUM_THREADS=1, n_jobs=1,
    the trainer's --threads 1).
  * Time = fit + prediction of the validation rows, in process, excluding
    file parsing and scaling, for easeml (train_seconds in its metrics) and
    for scikit-learn.  liblinear is a separate program that parses its
    input, so it is compared on process wall time (train + predict), with
    easeml's process wall time (CSV parse + prepare + fit + predict).
  * Stochastic models are compared over several splits and seeds and the
    accuracies averaged, so one lucky split does not decide the delta.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import datasets  # noqa: E402  (scripts/datasets.py)

from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression, RidgeClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
import warnings  # noqa: E402

warnings.filterwarnings("ignore")  # ConvergenceWarning at equal iteration budgets

# (name, dataset rows or None, validation fraction, split seeds or None).
# None: as many splits as it takes to score at least MIN_VAL_PREDICTIONS
# validation rows in total (at least 3), so that a one-row difference on a
# tiny validation set cannot decide an accuracy delta.
DATASETS = [
    ("fashion_mnist", 12500, 0.2, [1]),
    ("digits", None, 0.25, None),
    ("segment", None, 0.25, None),
    ("breast_cancer", None, 0.25, None),
    ("ionosphere", None, 0.25, None),
]
MIN_VAL_PREDICTIONS = 1000

MLP_BATCH = 200
MLP_ALPHA = 1e-4          # sklearn's default alpha; easeml l2 = alpha / batch
SVM_C = {"fashion_mnist": 0.01}   # else 1.0; liblinear's eps 0.1 on all sides


def pairs(ds, n_train, seed):
    """The compared (easeml family, params) and peers for one dataset/split."""
    big = ds == "fashion_mnist"
    epochs = 20 if big else 200
    C = SVM_C.get(ds, 1.0)
    out = [
        ("softmax", {"l2": 1.0 / n_train, "max_iter": 100, "tol": 1e-4}, [
            ("sklearn LogisticRegression",
             lambda: LogisticRegression(C=1.0, max_iter=100, tol=1e-4)),
            ("liblinear -s 0 (OvR)", ("ll", 0, 1.0)),
        ]),
        ("mlp", {"hidden": [128], "epochs": epochs, "batch": MLP_BATCH, "lr": 1e-3,
                 "l2": MLP_ALPHA / MLP_BATCH, "tol": 1e-4, "n_iter_no_change": 10}, [
            ("sklearn MLPClassifier",
             lambda: MLPClassifier(hidden_layer_sizes=(128,), max_iter=epochs,
                                   batch_size=MLP_BATCH, learning_rate_init=1e-3,
                                   alpha=MLP_ALPHA, tol=1e-4, n_iter_no_change=10,
                                   random_state=seed)),
        ]),
        ("knn", {"k": 5}, [
            ("sklearn KNeighborsClassifier", lambda: KNeighborsClassifier(n_neighbors=5)),
        ]),
        ("gnb", {}, [("sklearn GaussianNB", lambda: GaussianNB())]),
        ("random_forest", {"n_trees": 100}, [
            ("sklearn RandomForestClassifier",
             lambda: RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=seed)),
        ]),
        ("linear_svm", {"C": C, "tol": 0.1, "max_iter": 1000}, [
            ("sklearn LinearSVC", lambda: LinearSVC(C=C, tol=0.1, max_iter=1000,
                                                    random_state=seed)),
            ("liblinear -s 1 (dual)", ("ll", 1, C)),
            ("liblinear -s 2 (primal)", ("ll", 2, C)),
        ]),
        ("ridge", {"alpha": 1.0}, [
            ("sklearn RidgeClassifier", lambda: RidgeClassifier(alpha=1.0)),
        ]),
    ]
    if not big:
        out.append(("gbt", {"n_rounds": 100, "lr": 0.1, "max_leaves": 31,
                            "min_samples_leaf": 20, "l2": 0.0}, [
            ("sklearn HistGradientBoosting",
             lambda: HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1,
                                                    max_leaf_nodes=31, min_samples_leaf=20,
                                                    l2_regularization=0.0, early_stopping=False,
                                                    random_state=seed)),
        ]))
    return out


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for xi, yi in zip(X, y):
            feats = " ".join("%d:%.7g" % (j + 1, v) for j, v in enumerate(xi) if v != 0.0)
            f.write("%d %s\n" % (yi, feats))


def run_easeml(trainer, tr_csv, va_csv, family, params, seed, extra=()):
    cmd = [trainer, "--train-csv", tr_csv, "--val-csv", va_csv, "--target", "label",
           "--family", family, "--params", json.dumps(params), "--seed", str(seed),
           "--threads", "1"] + list(extra)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("easeml-trainer failed: %s\n%s" % (" ".join(cmd), p.stderr))
    m = json.loads(p.stdout)
    return m["score"], m["train_seconds"], wall


def run_sklearn(make, Xtr, ytr, Xva, yva):
    model = make()
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    pred = model.predict(Xva)
    t = time.perf_counter() - t0
    return float(np.mean(pred == yva)), t


def run_liblinear(workdir, solver, C, tr_svm, va_svm, yva):
    model = os.path.join(workdir, "ll.model")
    out = os.path.join(workdir, "ll.out")
    t0 = time.perf_counter()
    subprocess.run(["liblinear-train", "-q", "-s", str(solver), "-c", repr(C), "-e", "0.1",
                    "-B", "1", tr_svm, model], check=True, capture_output=True)
    subprocess.run(["liblinear-predict", va_svm, model, out], check=True, capture_output=True)
    wall = time.perf_counter() - t0
    pred = np.loadtxt(out, dtype=int)
    return float(np.mean(pred == yva)), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--quick", action="store_true", help="small Fashion-MNIST subset, one split")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    dsets = DATASETS
    if args.quick:
        dsets = [("fashion_mnist", 3000, 0.2, [1]), ("digits", None, 0.25, [1]),
                 ("segment", None, 0.25, [1]), ("breast_cancer", None, 0.25, [1])]

    results = {}   # (dataset, family, peer) -> lists of accuracies and times
    info = []
    t_start = time.time()
    for ds, nrows, frac, seeds in dsets:
        header, rows, _ = datasets.load(ds, rows=nrows, seed=1)
        X = np.array([[float(v) for v in r[:-1]] for r in rows])
        y = np.array([r[-1] for r in rows])
        classes = sorted(set(y))
        yid = np.array([classes.index(v) + 1 for v in y])
        if seeds is None:
            n_val = int(round(frac * len(y)))
            seeds = list(range(1, max(3, -(-MIN_VAL_PREDICTIONS // n_val)) + 1))
        for seed in seeds:
            idx_tr, idx_va = train_test_split(np.arange(len(y)), test_size=frac,
                                              stratify=y, random_state=seed)
            wd = os.path.join(args.workdir, "%s-%d" % (ds, seed))
            os.makedirs(wd, exist_ok=True)
            tr_csv, va_csv = os.path.join(wd, "train.csv"), os.path.join(wd, "val.csv")
            write_csv(tr_csv, header, [rows[i] for i in idx_tr])
            write_csv(va_csv, header, [rows[i] for i in idx_va])
            sc = StandardScaler().fit(X[idx_tr])
            Xtr, Xva = sc.transform(X[idx_tr]), sc.transform(X[idx_va])
            ytr, yva = y[idx_tr], y[idx_va]
            tr_svm, va_svm = os.path.join(wd, "train.svm"), os.path.join(wd, "val.svm")
            write_libsvm(tr_svm, Xtr, yid[idx_tr])
            write_libsvm(va_svm, Xva, yid[idx_va])
            reps = 1 if len(y) > 5000 else 3
            for family, params, peers in pairs(ds, len(idx_tr), seed):
                runs = [run_easeml(args.trainer, tr_csv, va_csv, family, params, seed)
                        for _ in range(reps)]
                acc_e = runs[0][0]
                t_e = statistics.median(r[1] for r in runs)
                wall_e = statistics.median(r[2] for r in runs)
                for peer, make in peers:
                    if isinstance(make, tuple):
                        lr = [run_liblinear(wd, make[1], make[2], tr_svm, va_svm, yid[idx_va])
                              for _ in range(reps)]
                        acc_p, t_p = lr[0][0], statistics.median(r[1] for r in lr)
                        te = wall_e
                    else:
                        sk = [run_sklearn(make, Xtr, ytr, Xva, yva) for _ in range(reps)]
                        acc_p, t_p = sk[0][0], statistics.median(r[1] for r in sk)
                        te = t_e
                    r = results.setdefault((ds, family, peer), {"ae": [], "ap": [], "te": [], "tp": []})
                    r["ae"].append(acc_e)
                    r["ap"].append(acc_p)
                    r["te"].append(te)
                    r["tp"].append(t_p)
                print("# %-14s split %d %-13s easeml %.4f (%.3fs)  %s" % (
                    ds, seed, family, acc_e, t_e,
                    "  ".join("%s %.4f (%.3fs)" % (p, results[(ds, family, p)]["ap"][-1],
                                                   results[(ds, family, p)]["tp"][-1])
                              for p, _ in peers)), flush=True)
        if ds == "fashion_mnist" and not args.quick:
            wd = os.path.join(args.workdir, "%s-%d" % (ds, seeds[0]))
            acc, t, _ = run_easeml(args.trainer, os.path.join(wd, "train.csv"),
                                   os.path.join(wd, "val.csv"), "cnn", {"epochs": 3}, 1,
                                   ["--image-shape", "1,28,28"])
            info.append("cnn (no peer installed) on fashion_mnist: accuracy %.4f in %.1fs "
                        "(3 epochs, filters [16,32], hidden 128)" % (acc, t))

    # table
    print()
    print("%-14s %-14s %-30s %6s %8s %8s %8s %9s %9s %8s" % (
        "dataset", "easeml", "peer", "splits", "acc_e", "acc_p", "delta", "t_e(s)", "t_p(s)",
        "speedup"))
    sk_speedups, deltas, ll_rows = [], [], []
    table = []
    for (ds, family, peer), r in results.items():
        ae, ap = float(np.mean(r["ae"])), float(np.mean(r["ap"]))
        te, tp = float(np.sum(r["te"])), float(np.sum(r["tp"]))
        sp = tp / te if te > 0 else float("inf")
        delta = ae - ap
        deltas.append(delta)
        if peer.startswith("sklearn"):
            sk_speedups.append(sp)
        else:
            ll_rows.append((ds, family, peer, delta, sp))
        table.append({"dataset": ds, "family": family, "peer": peer, "acc_easeml": ae,
                      "acc_peer": ap, "delta": delta, "t_easeml": te, "t_peer": tp,
                      "speedup": sp, "splits": len(r["ae"])})
        print("%-14s %-14s %-30s %6d %8.4f %8.4f %+8.4f %9.4f %9.4f %7.1fx" % (
            ds, family, peer, len(r["ae"]), ae, ap, delta, te, tp, sp))
    with open(os.path.join(args.workdir, "trainers.json"), "w") as f:
        json.dump(table, f, indent=1)
    print()
    for line in info:
        print("# " + line)
    print("# times: in-process fit+predict for easeml and sklearn; process wall time "
          "(parse+train+predict) for easeml and liblinear rows; accuracies averaged over "
          "splits, times summed")
    svm_ll = [r for r in ll_rows if r[1] == "linear_svm"]
    if svm_ll:
        print("# linear_svm vs liblinear: min speedup %.2fx, min accuracy delta %+.4f" % (
            min(r[4] for r in svm_ll), min(r[3] for r in svm_ll)))
    print("# elapsed %.0fs" % (time.time() - t_start))
    print("RESULT median_speedup_vs_sklearn=%.2f min_accuracy_delta=%+.4f" % (
        statistics.median(sk_speedups), min(deltas)))


if __name__ == "__main__":
    main()
