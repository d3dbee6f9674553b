#!/usr/bin/python3
"""easeml.predict against scikit-learn, on the same 100,000 rows.

Called by scripts/bench/predict.sh with a running cluster (easeml loaded, the
scheduler off).  Fairness rules:

- One table t of N rows (default 100,000): 20 float8 features and a text
  label of 5 classes, generated here with a fixed seed.
- Both sides train on the same first 20,000 rows (not timed): easeml-trainer
  offline (its artifact is stored as a succeeded run of a task over t) and
  scikit-learn with the same model sizes: LogisticRegression; an MLP with one
  hidden layer of 64; a random forest of 100 fully grown trees; gradient
  boosting with 100 rounds of 31 leaves (HistGradientBoosting).
- Timed, wall clock, each from a fresh process, one thread each
  (OPENBLAS_NUM_THREADS=1):
    easeml:   psql runs SELECT easeml.predict('task', t) FROM t (a new
              backend, so the model is parsed from its artifact too; the
              labels go to /dev/null);
    peer:     python3 starts, imports scikit-learn, unpickles the model,
              reads t with COPY (SELECT features) TO STDOUT (FORMAT binary)
              through psql into numpy (np.frombuffer on the fixed-width
              tuples, the fastest load we know), and calls predict.
  Fixed costs (process start, imports, model load, data load) are charged
  to whoever pays them.  Runs alternate easeml / peer, REPS times each; the
  median time counts.
- Both sides' accuracy on the rows neither trained on is printed, so the
  models compared are of comparable quality.

The last line is RESULT predict_vs_sklearn=<median over families of the
peer's time / easeml's time>.
"""
import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import time

import numpy as np

FAMILIES = [
    # (task, easeml family, easeml params, catalog model, sklearn constructor)
    ("bench_softmax", "softmax", "{}", "softmax-l2-1e-4",
     "sklearn.linear_model:LogisticRegression(C=1.0 / (1e-4 * 20000), max_iter=100)"),
    ("bench_mlp", "mlp", '{"hidden": [64]}', "mlp-64",
     "sklearn.neural_network:MLPClassifier(hidden_layer_sizes=(64,), max_iter=50, random_state=0)"),
    # the artifact has 100 trees (as docs/predict.md's table says); its run is
    # filed under the catalog row rf-50 only because the catalog has no
    # 100-tree row (rf-50 and rf-200): the name is not the model timed
    ("bench_rf", "random_forest", '{"n_trees": 100}', "rf-50",
     "sklearn.ensemble:RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=0)"),
    ("bench_gbt", "gbt", '{"n_rounds": 100}', "gbt-100",
     "sklearn.ensemble:HistGradientBoostingClassifier(max_iter=100, max_leaf_nodes=31, "
     "early_stopping=False, random_state=0)"),
]
D = 20
CLASSES = ["alpha", "bravo", "charlie", "delta", "echo"]

PEER = r"""
import pickle, subprocess, sys
import numpy as np
model = pickle.load(open(sys.argv[1], 'rb'))
d = int(sys.argv[2])
raw = subprocess.run(sys.argv[3:], check=True, stdout=subprocess.PIPE).stdout
# binary COPY: 19-byte header, per tuple int16 count then d x (int32 8, f8)
body = np.frombuffer(raw, dtype=np.uint8, count=len(raw) - 19 - 2, offset=19)
rec = np.dtype([('n', '>i2')] + sum([[('l%d' % j, '>i4'), ('x%d' % j, '>f8')] for j in range(d)], []))
t = body.view(rec)
X = np.empty((len(t), d))
for j in range(d):
    X[:, j] = t['x%d' % j]
pred = model.predict(X)
print(len(pred))
"""


def make_data(n, seed):
    """n rows: 5 classes, informative and noisy features, a nonlinear part."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(CLASSES), n)
    centers = rng.normal(0, 1.0, (len(CLASSES), D))
    X = centers[y] + rng.normal(0, 1.2, (n, D))
    X[:, 0] += np.sin(3 * X[:, 1]) * (y % 2)
    X[:, 2] = X[:, 2] * 10 + 50
    return np.round(X, 4), y


def psql(args, sql, role=None, stdin=None, out=subprocess.PIPE):
    cmd = args.psql + ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
    if role:
        cmd += ["-U", role]
    return subprocess.run(cmd + ["-c", sql], check=True, input=stdin, stdout=out,
                          stderr=subprocess.PIPE).stdout


def load_table(args, X, y):
    cols = ", ".join("f%d float8" % j for j in range(D))
    psql(args, "DROP TABLE IF EXISTS public.t; CREATE TABLE public.t (%s, label text)" % cols)
    lines = "\n".join(",".join(map(repr, map(float, row))) + "," + CLASSES[c]
                      for row, c in zip(X, y)) + "\n"
    psql(args, "COPY public.t FROM STDIN (FORMAT csv)", stdin=lines.encode())
    psql(args, "ANALYZE public.t")


def train_easeml(args, X, y, fam, params, path):
    csv = os.path.join(args.workdir, "train.csv")
    if not os.path.exists(csv):
        with open(csv, "w") as f:
            f.write(",".join("f%d" % j for j in range(D)) + ",label\n")
            for row, c in zip(X, y):
                f.write(",".join(map(repr, map(float, row))) + "," + CLASSES[c] + "\n")
    res = subprocess.run([args.trainer, "--csv", csv, "--target", "label", "--family", fam,
                          "--params", params, "--seed", "1", "--artifact-out", path],
                         check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(res.stdout)


def deploy(args, task, model, score, path):
    """a task over t, and the artifact as its succeeded run (as the trainer records one)"""
    psql(args, "INSERT INTO easeml.tasks (name, source, target) VALUES ('%s', 'public.t', 'label')"
         % task, role=args.role)
    psql(args, """
        WITH r AS (INSERT INTO easeml.runs (task_id, model_id, status, score, seconds, finished_at)
                   SELECT t.id, m.id, 'succeeded', %f, 1, now() FROM easeml.tasks t, easeml.models m
                    WHERE t.name = '%s' AND m.name = '%s' RETURNING id, tenant)
        INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
        SELECT r.id, r.tenant, length(a), a FROM r, pg_read_binary_file('%s') a""" %
         (score, task, model, path))


def train_peer(X, y, ctor, path):
    mod, expr = ctor.split(":")
    ns = {}
    exec("import %s as m" % mod, ns)
    model = eval("m." + expr, ns)
    model.fit(X, y)
    with open(path, "wb") as f:
        pickle.dump(model, f)
    return model


def model_size(model):
    """tree nodes, or weights and biases"""
    est = getattr(model, "estimators_", None)
    if est is not None:
        return "%d nodes" % sum(e.tree_.node_count for e in est)
    pred = getattr(model, "_predictors", None)
    if pred is not None:
        return "%d nodes" % sum(p.nodes.shape[0] for r in pred for p in r)
    if hasattr(model, "coefs_"):
        return "%d weights" % sum(w.size for w in model.coefs_ + model.intercepts_)
    return "%d weights" % (model.coef_.size + model.intercept_.size)


def artifact_size(path):
    """the same count from an EASEMLA1 artifact (docs/models.md §4)"""
    import struct
    b = open(path, "rb").read()
    pos = 8
    def u32():
        nonlocal pos
        pos += 4
        return struct.unpack_from("<I", b, pos - 4)[0]
    n = u32()
    pos += n
    kind, d, k, c, h, w = [u32() for _ in range(6)]
    for _ in range(k):
        n = u32()
        pos += n
    tensors = {}
    while True:
        n = u32()
        if n == 0:
            break
        name = b[pos:pos + n].decode()
        pos += n
        dt, nd = u32(), u32()
        dims = struct.unpack_from("<%dq" % nd, b, pos)
        pos += 8 * nd
        count = 1
        for x in dims:
            count *= x
        tensors[name] = count
        pos += count * {1: 4, 2: 8, 3: 4, 4: 1}[dt]
    if "node_feature" in tensors:
        return "%d nodes" % tensors["node_feature"]
    return "%d weights" % sum(v for n, v in tensors.items()
                              if not n.startswith("prep.") and n != "layer_sizes")


def timed(cmd, env):
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--psql", required=True, help="psql command, e.g. 'psql -h /tmp -p 5432 -d postgres'")
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--role", default="bench_tenant")
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--train-rows", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    args.psql = args.psql.split()
    os.makedirs(args.workdir, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

    X, y = make_data(args.rows, 7)
    ntr = args.train_rows
    load_table(args, X, y)
    psql(args, "GRANT SELECT ON public.t TO %s" % args.role)
    peer_py = os.path.join(args.workdir, "peer.py")
    with open(peer_py, "w") as f:
        f.write(PEER)
    copy_cmd = args.psql + ["-X", "-q", "-U", args.role, "-c",
                            "COPY (SELECT %s FROM public.t) TO STDOUT (FORMAT binary)" %
                            ", ".join("f%d" % j for j in range(D))]
    rows = []
    for task, fam, params, catalog, ctor in FAMILIES:
        art = os.path.join(args.workdir, task + ".bin")
        m = train_easeml(args, X[:ntr], y[:ntr], fam, params, art)
        os.chmod(art, 0o644)
        deploy(args, task, catalog, m["score"], art)
        pkl = os.path.join(args.workdir, task + ".pkl")
        model = train_peer(X[:ntr], y[:ntr], ctor, pkl)
        ours = psql(args, "SELECT easeml.predict('%s', t) FROM public.t" % task,
                    role=args.role).decode().split()
        acc_e = np.mean(np.array(ours[ntr:]) == np.array([CLASSES[c] for c in y[ntr:]]))
        acc_p = np.mean(model.predict(X[ntr:]) == y[ntr:])
        e_cmd = args.psql + ["-X", "-q", "-A", "-t", "-U", args.role, "-o", "/dev/null", "-c",
                             "SELECT easeml.predict('%s', t) FROM public.t" % task]
        p_cmd = ["/usr/bin/python3", peer_py, pkl, str(D)] + copy_cmd
        te, tp = [], []
        for _ in range(args.reps):
            te.append(timed(e_cmd, env))
            tp.append(timed(p_cmd, env))
        e, p = statistics.median(te), statistics.median(tp)
        size = "%s / %s" % (artifact_size(art), model_size(model))
        rows.append((fam, e, p, p / e, acc_e, acc_p, size))
        print("%-14s easeml %6.3f s  sklearn %6.3f s  ratio %5.2f  accuracy %.3f / %.3f  %s"
              % rows[-1], flush=True)
    print()
    print("| family | easeml.predict (s) | COPY + scikit-learn (s) | ratio | accuracy easeml / sklearn | size easeml / sklearn |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.3f | %.3f | %.2f | %.3f / %.3f | %s |" % r)
    med = statistics.median(r[3] for r in rows)
    print("RESULT predict_vs_sklearn=%.2f" % med)


if __name__ == "__main__":
    sys.exit(main())
