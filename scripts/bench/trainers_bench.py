#!/usr/bin/python3
"""Side-by-side benchmark: easeml-trainer against scikit-learn, XGBoost and liblinear.

Called by scripts/bench/trainers.sh (which installs the peers and pins every
BLAS/OpenMP pool to one thread); run it with Debian's /usr/bin/python3.

    trainers_bench.py speed --trainer T --workdir D [--letter FILE] [--quick]
    trainers_bench.py peak-rss --trainer T --run-dir D --conninfo C RUN_ID...

Fairness rules (docs/models.md repeats them):
  * Same rows: a seeded stratified split (sklearn's train_test_split); the
    trainer reads the train/validation CSV files with --train-csv/--val-csv,
    so every side trains and is scored on identical rows.
  * Same preprocessing: standardisation fitted on the training rows only.
    The CSV files hold the standardised values, printed with %.7g, and so do
    liblinear's files (dense, every feature): liblinear parses the same
    numbers easeml parses.
  * Same hyperparameters where the models are the same model (PAIRS below).
  * Same threads: one, for every side.
  * Time: what a user waits for.  easeml: the CPU seconds of its whole
    easeml-trainer process (process start, CSV parse, preparation, fit,
    prediction of the validation rows, metrics), the offline CSV entry point
    of the same binary and family code the scheduler launches.
    scikit-learn and XGBoost: the CPU seconds of loading the same CSV files
    in process (np.loadtxt: numpy's C reader; no pandas in Debian's Python
    here) plus fit + prediction; their interpreter start and imports are
    not charged (a Python user pays them once per session), which can only
    favour them.  liblinear: the CPU seconds of its processes (parse +
    train + predict), against easeml's whole process too.  Every side runs
    one thread, so its CPU time is the wall time it would take on an idle
    core; on a shared machine wall time also counts the time other jobs
    held the core.  Wall times are printed next to them.
  * One comparison per (data set, family): against the faster of its peers
    (total CPU seconds), so that a family with two peers (gbt: scikit-learn
    and XGBoost) is counted once, against the stronger.  Every peer's line
    is still printed.
  * Nothing is silenced: a fit that stops at its iteration or epoch budget
    without converging is marked in the table and listed.
  * Small data sets are repeated and averaged; the speedups over data
    sets of at least 10,000 rows are reported separately from the small
    ones, where fixed costs dominate.  Both the median of the per-comparison
    speedups and the ratio of the median peer time to the median easeml
    time are printed, with a 95 % bootstrap interval over comparisons.
"""

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import datasets  # noqa: E402  (scripts/datasets.py)

from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, RidgeClassifier  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
import xgboost  # noqa: E402

LARGE = 10000             # rows from which a data set counts as large
FASHION_ROWS = 15000      # seeded sample of Fashion-MNIST's 60,000 (--fashion-rows)
MIN_VAL_PREDICTIONS = 1000
MLP_BATCH = 200
MLP_ALPHA = 1e-4          # sklearn's default alpha; easeml l2 = alpha / batch


def letter_loader(path):
    """UCI letter recognition (opencv-doc's copy): the letter, then 16 numbers."""
    def load():
        rows = []
        with open(path) as f:
            for line in f:
                cells = line.strip().split(",")
                if len(cells) == 17:
                    rows.append(cells[1:] + [cells[0]])
        return ["x%d" % j for j in range(16)] + ["label"], rows, "classification"
    return load


def data_sets(args):
    """(name, loader, validation fraction, split seeds or None)."""
    fashion = lambda rows=None: (lambda: datasets.load("fashion_mnist", rows=rows or None,
                                                       seed=1))
    named = lambda name: (lambda: datasets.load(name))
    if args.quick:
        return [("fashion_mnist_3k", fashion(3000), 0.2, [1]),
                ("digits", named("digits"), 0.25, [1]),
                ("segment", named("segment"), 0.25, [1])]
    out = [("fashion_mnist", fashion(args.fashion_rows), 0.2, [1])]
    if args.letter:
        out.append(("letter", letter_loader(args.letter), 0.2, [1]))
    if args.large_only:
        return out
    out += [("digits", named("digits"), 0.25, None),
            ("segment", named("segment"), 0.25, None),
            ("breast_cancer", named("breast_cancer"), 0.25, None),
            ("ionosphere", named("ionosphere"), 0.25, None)]
    return out


def pairs(n_rows, n_train, n_classes, seed):
    """The compared (easeml family, params) and peers for one data set and split."""
    big = n_rows >= LARGE
    epochs = 20 if big else 200
    C = 0.01 if big else 1.0
    rounds = 30 if big else 100
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
        ("gbt", {"n_rounds": rounds, "lr": 0.1, "max_leaves": 31, "min_samples_leaf": 20,
                 "l2": 0.0, "max_bins": 255}, [
            ("sklearn HistGradientBoosting",
             lambda: HistGradientBoostingClassifier(max_iter=rounds, learning_rate=0.1,
                                                    max_leaf_nodes=31, min_samples_leaf=20,
                                                    l2_regularization=0.0, max_bins=255,
                                                    early_stopping=False,
                                                    random_state=seed)),
            ("xgboost hist",
             lambda: xgboost.XGBClassifier(n_estimators=rounds, learning_rate=0.1,
                                           tree_method="hist", grow_policy="lossguide",
                                           max_leaves=31, max_depth=0, max_bin=255,
                                           min_child_weight=1e-3, reg_lambda=0.0,
                                           n_jobs=1, random_state=seed)),
        ]),
    ]
    return out


def write_csv(path, header, X, y):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for xi, yi in zip(X, y):
            f.write(",".join("%.7g" % v for v in xi) + "," + yi + "\n")


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for xi, yi in zip(X, y):
            f.write("%d %s\n" % (yi, " ".join("%d:%.7g" % (j + 1, v) for j, v in enumerate(xi))))


def easeml_converged(family, params, m):
    """Why an easeml fit stopped at its budget, or None."""
    if m.get("hit_max_iter"):
        return "hit max_iter"
    if family == "softmax" and m.get("epochs", 0) >= params["max_iter"]:
        return "max_iter iterations"
    if family == "mlp" and m.get("epochs", 0) >= params["epochs"]:
        return "max epochs"
    return None


def run_easeml(trainer, tr_csv, va_csv, family, params, seed, extra=()):
    cmd = [trainer, "--train-csv", tr_csv, "--val-csv", va_csv, "--target", "label",
           "--family", family, "--params", json.dumps(params), "--seed", str(seed),
           "--threads", "1"] + list(extra)
    c0 = children_cpu()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("easeml-trainer failed: %s\n%s" % (" ".join(cmd), p.stderr))
    m = json.loads(p.stdout)
    return {"acc": m["score"], "cpu": m["train_cpu_seconds"], "wall": m["train_seconds"],
            "proc_cpu": children_cpu() - c0, "proc_wall": wall,
            "note": easeml_converged(family, params, m)}


def children_cpu():
    """CPU seconds (user + system) of the waited-for child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def load_csv(path):
    """The peer's data load: a CSV written by write_csv, as float features and labels."""
    with open(path) as f:
        lines = f.read().splitlines()[1:]
    y = np.array([ln.rsplit(",", 1)[1] for ln in lines])
    d = lines[0].count(",")
    X = np.loadtxt(lines, delimiter=",", usecols=range(d), dtype=np.float64)
    return X, y


def time_load(tr_csv, va_csv):
    """CPU seconds of loading both CSV files (train and validation), in process."""
    c0 = time.process_time()
    load_csv(tr_csv)
    load_csv(va_csv)
    return time.process_time() - c0


def run_python(make, Xtr, ytr, Xva, yva):
    model = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        c0, t0 = time.process_time(), time.perf_counter()
        model.fit(Xtr, ytr)
        pred = model.predict(Xva)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    note = "ConvergenceWarning" if any(issubclass(w.category, ConvergenceWarning)
                                       for w in caught) else None
    return {"acc": float(np.mean(pred == yva)), "cpu": cpu, "wall": wall, "note": note}


def run_liblinear(workdir, solver, C, tr_svm, va_svm, yva):
    model = os.path.join(workdir, "ll.model")
    out = os.path.join(workdir, "ll.out")
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(["liblinear-train", "-s", str(solver), "-c", repr(C), "-e", "0.1",
                        "-B", "1", tr_svm, model], check=True, capture_output=True, text=True)
    subprocess.run(["liblinear-predict", va_svm, model, out], check=True, capture_output=True)
    cpu, wall = children_cpu() - c0, time.perf_counter() - t0
    pred = np.loadtxt(out, dtype=int)
    note = "reached max iterations" if "reaching max number of iterations" in p.stdout else None
    return {"acc": float(np.mean(pred == yva)), "cpu": cpu, "wall": wall, "note": note}


def split_files(wd, header, X, y, yid, idx_tr, idx_va):
    """Standardised train/validation CSV and libsvm files; the arrays."""
    sc = StandardScaler().fit(X[idx_tr])
    Xtr, Xva = sc.transform(X[idx_tr]), sc.transform(X[idx_va])
    files = {k: os.path.join(wd, k) for k in ("train.csv", "val.csv", "train.svm", "val.svm")}
    write_csv(files["train.csv"], header, Xtr, y[idx_tr])
    write_csv(files["val.csv"], header, Xva, y[idx_va])
    write_libsvm(files["train.svm"], Xtr, yid[idx_tr])
    write_libsvm(files["val.svm"], Xva, yid[idx_va])
    return files, Xtr, Xva


def speed(args):
    os.makedirs(args.workdir, exist_ok=True)
    results = {}   # (dataset, family, peer) -> lists
    notes = []
    sizes = {}
    t_start = time.time()
    print("# load average at the start: %s (2 cores shared with other jobs: the speedups "
          "compare CPU seconds)" % " ".join("%.2f" % v for v in os.getloadavg()), flush=True)
    for ds, load, frac, seeds in data_sets(args):
        header, rows, _ = load()
        X = np.array([[float(v) for v in r[:-1]] for r in rows])
        y = np.array([r[-1] for r in rows])
        classes = sorted(set(y))
        yid = np.array([classes.index(v) + 1 for v in y])
        sizes[ds] = len(y)
        if seeds is None:
            n_val = int(round(frac * len(y)))
            seeds = list(range(1, max(3, -(-MIN_VAL_PREDICTIONS // n_val)) + 1))
        for seed in seeds:
            idx_tr, idx_va = train_test_split(np.arange(len(y)), test_size=frac,
                                              stratify=y, random_state=seed)
            wd = os.path.join(args.workdir, "%s-%d" % (ds, seed))
            os.makedirs(wd, exist_ok=True)
            f, Xtr, Xva = split_files(wd, header, X, y, yid, idx_tr, idx_va)
            ytr, yva = y[idx_tr], y[idx_va]
            yid_tr, yid_va = yid[idx_tr] - 1, yid[idx_va] - 1
            reps = 1 if len(y) >= LARGE else 3
            load_cpu = statistics.median(time_load(f["train.csv"], f["val.csv"])
                                         for _ in range(reps))
            for family, params, peers in pairs(len(y), len(idx_tr), len(classes), seed):
                runs = [run_easeml(args.trainer, f["train.csv"], f["val.csv"], family, params,
                                   seed) for _ in range(reps)]
                acc_e, note_e = runs[0]["acc"], runs[0]["note"]
                med = lambda rs, k: statistics.median(r[k] for r in rs)
                if note_e:
                    notes.append("%s split %d: easeml %s: %s" % (ds, seed, family, note_e))
                for peer, make in peers:
                    if isinstance(make, tuple):
                        pr = [run_liblinear(wd, make[1], make[2], f["train.svm"], f["val.svm"],
                                            yid_va + 1) for _ in range(reps)]
                        tload = 0.0
                    else:
                        yt, yv = (yid_tr, yid_va) if peer.startswith("xgboost") else (ytr, yva)
                        pr = [run_python(make, Xtr, yt, Xva, yv) for _ in range(reps)]
                        tload = load_cpu
                    # easeml: its whole process, whichever the peer
                    te, we = med(runs, "proc_cpu"), med(runs, "proc_wall")
                    acc_p, note_p = pr[0]["acc"], pr[0]["note"]
                    if note_p:
                        notes.append("%s split %d: %s: %s" % (ds, seed, peer, note_p))
                    r = results.setdefault((ds, family, peer),
                                           {"ae": [], "ap": [], "te": [], "tp": [], "we": [],
                                            "wp": [], "conv": set()})
                    r["ae"].append(acc_e)
                    r["ap"].append(acc_p)
                    r["te"].append(te)
                    r["tp"].append(med(pr, "cpu") + tload)
                    r["we"].append(we)
                    r["wp"].append(med(pr, "wall") + tload)
                    if note_e:
                        r["conv"].add("e")
                    if note_p:
                        r["conv"].add("p")
                print("# %-14s split %d %-13s easeml %.4f (%.3fs cpu, process; %.3fs in-process fit)  %s" % (
                    ds, seed, family, acc_e, med(runs, "proc_cpu"), med(runs, "cpu"),
                    "  ".join("%s %.4f (%.3fs cpu)" % (p, results[(ds, family, p)]["ap"][-1],
                                                       results[(ds, family, p)]["tp"][-1])
                              for p, _ in peers)), flush=True)
            print("# %-14s split %d: the peers' CSV load %.3fs cpu" % (ds, seed, load_cpu), flush=True)
            if ds == "fashion_mnist":
                print("# bytes parsed: easeml CSV %d (train+val), liblinear %d" % (
                    os.path.getsize(f["train.csv"]) + os.path.getsize(f["val.csv"]),
                    os.path.getsize(f["train.svm"]) + os.path.getsize(f["val.svm"])), flush=True)
    return report(args, results, notes, sizes, t_start)


def ratios(te, tp, rng):
    """Median speedup, ratio of medians and their 95 % bootstrap intervals."""
    te, tp = np.array(te), np.array(tp)
    if len(te) == 0:
        return (float("nan"),) * 6
    idx = rng.integers(0, len(te), size=(2000, len(te)))
    mr = np.median(tp / te)
    rom = np.median(tp) / np.median(te)
    mlo, mhi = np.percentile(np.median(tp[idx] / te[idx], axis=1), [2.5, 97.5])
    rlo, rhi = np.percentile(np.median(tp[idx], axis=1) / np.median(te[idx], axis=1), [2.5, 97.5])
    return mr, mlo, mhi, rom, rlo, rhi


def report(args, results, notes, sizes, t_start):
    print()
    print("%-14s %7s %-14s %-30s %6s %8s %8s %8s %9s %9s %8s %9s %9s %4s %4s" % (
        "dataset", "rows", "easeml", "peer", "splits", "acc_e", "acc_p", "delta", "cpu_e(s)",
        "cpu_p(s)", "speedup", "wall_e(s)", "wall_p(s)", "conv", "used"))
    xgb, table = [], []
    best = {}      # (dataset, family) -> the faster peer's row
    for (ds, family, peer), r in results.items():
        ae, ap = float(np.mean(r["ae"])), float(np.mean(r["ap"]))
        te, tp = float(np.sum(r["te"])), float(np.sum(r["tp"]))
        we, wp = float(np.sum(r["we"])), float(np.sum(r["wp"]))
        sp = tp / te if te > 0 else float("inf")
        if peer.startswith("xgboost"):
            xgb.append(sp)
        conv = "".join(sorted(r["conv"])) or "-"
        row = {"dataset": ds, "rows": sizes[ds], "family": family, "peer": peer,
               "acc_easeml": ae, "acc_peer": ap, "delta": ae - ap, "cpu_easeml": te,
               "cpu_peer": tp, "wall_easeml": we, "wall_peer": wp, "speedup": sp,
               "splits": len(r["ae"]), "not_converged": conv}
        table.append(row)
        if (ds, family) not in best or tp < best[(ds, family)]["cpu_peer"]:
            best[(ds, family)] = row
    for row in table:
        row["faster_peer"] = best[(row["dataset"], row["family"])] is row
        print("%-14s %7d %-14s %-30s %6d %8.4f %8.4f %+8.4f %9.4f %9.4f %7.2fx %9.3f %9.3f %4s %4s" % (
            row["dataset"], row["rows"], row["family"], row["peer"], row["splits"],
            row["acc_easeml"], row["acc_peer"], row["delta"], row["cpu_easeml"], row["cpu_peer"],
            row["speedup"], row["wall_easeml"], row["wall_peer"], row["not_converged"],
            "yes" if row["faster_peer"] else "-"))
    with open(os.path.join(args.workdir, "trainers.json"), "w") as f:
        json.dump(table, f, indent=1)
    groups = {"large": ([], []), "small": ([], [])}
    for row in best.values():
        g = groups["large" if row["rows"] >= LARGE else "small"]
        g[0].append(row["cpu_easeml"])
        g[1].append(row["cpu_peer"])
    rng = np.random.default_rng(1)
    large = ratios(*groups["large"], rng)
    small = ratios(*groups["small"], rng)
    print()
    print("# speedup = peer CPU seconds / easeml CPU seconds, one thread each: easeml's whole "
          "process (start, CSV parse, preparation, fit, predict); scikit-learn and XGBoost: "
          "CSV load in process + fit + predict; liblinear: its processes (parse, train, "
          "predict); accuracies averaged over splits, times summed")
    print("# used: the faster peer of its (data set, family), the one comparison counted")
    print("# conv: e = easeml, p = the peer stopped at its iteration budget without converging")
    for n in notes:
        print("# not converged: " + n)
    for name, g, v in (("large", groups["large"], large), ("small", groups["small"], small)):
        print("# %s data sets (%s %d rows): %d comparisons; median speedup %.2fx [%.2f-%.2f], "
              "ratio of median times %.2fx [%.2f-%.2f]" % (
                  name, ">=" if name == "large" else "<", LARGE, len(g[0]), *v))
    print("# elapsed %.0fs; load average at the end: %s" % (
        time.time() - t_start, " ".join("%.2f" % v for v in os.getloadavg())))
    print("SPEED large_median_speedup=%.3f large_median_speedup_lo=%.3f large_median_speedup_hi=%.3f "
          "large_rom_speedup=%.3f small_median_speedup=%.3f small_rom_speedup=%.3f "
          "gbt_vs_xgboost=%.3f" % (
              large[0], large[1], large[2], large[3], small[0], small[3],
              statistics.median(xgb) if xgb else float("nan")))


def peak_rss(args):
    """Train each run with the live trainer; its own peak resident set and artifact size."""
    env = dict(os.environ, EASEML_CONNINFO=args.conninfo, OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", EASEML_DEVICE="cpu", EASEML_DEVICE_KIND="cpu")
    for run in args.runs:
        rd = os.path.join(args.run_dir, run)
        os.makedirs(rd, exist_ok=True)
        t0 = time.perf_counter()
        with open(os.path.join(rd, "trainer.log"), "w") as log:
            p = subprocess.Popen([args.trainer, "--run", run, "--run-dir", rd], env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if status != 0:
            sys.exit("trainer run %s failed; see %s/trainer.log" % (run, rd))
        # the trainer reports through the database (easeml_trainer.result)
        q = subprocess.run([args.psql, args.conninfo, "-XAtq", "-c",
                            "SELECT metrics FROM easeml.trainer_jobs WHERE run_id = %d"
                            % int(run)], check=True, capture_output=True, text=True)
        if not q.stdout.strip():
            sys.exit("trainer run %s reported no metrics; see %s/trainer.log" % (run, rd))
        m = json.loads(q.stdout)
        # the trainer's own peak (VmHWM, metrics.peak_rss_bytes); wait4's
        # ru_maxrss of a spawned child also holds this script's own peak
        print(json.dumps({"run": int(run), "family": m["family"], "model": m.get("model"),
                          "peak_rss": m["peak_rss_bytes"], "wait4_maxrss": usage.ru_maxrss * 1024,
                          "artifact_bytes": m["artifact_bytes"],
                          "rows": m.get("rows_loaded"), "features": m["n_features"],
                          "score": m["score"], "seconds": wall}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--trainer", required=True)
    s.add_argument("--workdir", required=True)
    s.add_argument("--letter", help="letter-recognition.data (from opencv-doc)")
    s.add_argument("--quick", action="store_true", help="small data sets, one split")
    s.add_argument("--fashion-rows", type=int, default=FASHION_ROWS,
                   help="rows sampled from Fashion-MNIST (default %d; 0 = all 60,000)"
                   % FASHION_ROWS)
    s.add_argument("--large-only", action="store_true",
                   help="only the data sets of at least %d rows (Fashion-MNIST, letter)" % LARGE)
    m = sub.add_parser("peak-rss")
    m.add_argument("--trainer", required=True)
    m.add_argument("--run-dir", required=True)
    m.add_argument("--conninfo", required=True)
    m.add_argument("--psql", default="psql", help="psql to read the reported metrics with")
    m.add_argument("runs", nargs="+")
    args = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    speed(args) if args.mode == "speed" else peak_rss(args)


if __name__ == "__main__":
    main()
