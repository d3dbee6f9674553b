#!/usr/bin/python3
"""scikit-learn side of scripts/bench/decision.sh.

Reads the problem that `easeml-replay bench-decision --dump DIR` wrote
(history, truth, prior mean, fitted kernel parameters, each tenant's first
observations, and the C side's decision sequence) and makes the same
steady-state decision with scikit-learn:

  a run finishes -> refit only that tenant's GaussianProcessRegressor (fixed
  kernel, optimizer=None) on its observations -> predict mean and std over
  its candidates -> EI, best candidate -> pick across tenants (greedy max EI
  under easeml's hybrid fairness floor, the C side's default rule).

It follows the C side's sequence so that both sides see the same states, and
counts how often its own pick equals the C pick.  Prints one line
`SKLEARN median_ms=... mean_ms=... agree=a/b`.

Run with /usr/bin/python3: Debian's numpy and scikit-learn are only visible
to the system interpreter.  Set OPENBLAS_NUM_THREADS=1 before starting it
(decision.sh does).
"""
import argparse
import csv
import math
import os
import time

import numpy as np
from scipy.special import erfc
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel


def read_matrix(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return np.array([[float(x) for x in r[1:]] for r in rows[1:]])


def expected_improvement(mu, sigma, best):
    d = mu - best
    out = np.maximum(d, 0.0)
    ok = sigma > 1e-12
    z = np.where(ok, d / np.where(ok, sigma, 1.0), 0.0)
    ei = d * 0.5 * erfc(-z / math.sqrt(2.0)) + sigma * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return np.where(ok, ei, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--decisions", type=int, default=300)
    args = ap.parse_args()

    d = args.dump
    history = read_matrix(os.path.join(d, "history.csv"))
    truth = read_matrix(os.path.join(d, "truth.csv"))
    mu0 = read_matrix(os.path.join(d, "prior_mean.csv"))[0]
    lengthscale, signal_var, noise_var, _beta, m, K = read_matrix(os.path.join(d, "params.csv"))[0]
    m, K = int(m), int(K)
    obs = read_matrix(os.path.join(d, "observations.csv")).astype(int)
    with open(os.path.join(d, "sequence.csv"), newline="") as f:
        seq = [(int(r["tenant"]), int(r["arm"])) for r in csv.DictReader(f)]

    n = truth.shape[0]
    # arm k's features: its history column; easeml divides squared distances
    # by m, i.e. an sklearn length scale of lengthscale * sqrt(m)
    feats = history.T.copy()
    kernel = ConstantKernel(signal_var, constant_value_bounds="fixed") * \
        RBF(length_scale=lengthscale * math.sqrt(m), length_scale_bounds="fixed")

    arms = [[] for _ in range(n)]
    for t, a in obs:
        arms[t].append(a)
    T = len(arms[0])
    avail = np.ones((n, K), dtype=bool)
    for t in range(n):
        avail[t, arms[t]] = False
    best = np.array([truth[t, arms[t]].max() for t in range(n)])
    score = np.zeros(n)
    cand = np.zeros(n, dtype=int)
    last = np.array([T * n - n + t for t in range(n)], dtype=np.int64)
    decision_no = T * n

    def refit(t):
        """The per-tenant work: refit, predict over candidates, best EI."""
        gp = GaussianProcessRegressor(kernel=kernel, alpha=noise_var,
                                      optimizer=None, normalize_y=False)
        A = arms[t]
        gp.fit(feats[A], truth[t, A] - mu0[A])
        c = np.flatnonzero(avail[t])
        mean, std = gp.predict(feats[c], return_std=True)
        ei = expected_improvement(mean + mu0[c], std, best[t])
        j = int(np.argmax(ei))
        cand[t] = c[j]
        score[t] = ei[j]

    def pick():
        """Greedy max EI under the fairness floor (w = 3 x tenants)."""
        w = 3 * n
        g = int(np.argmax(score))
        dl = last + w
        edf = int(np.argmin(dl))
        if g == edf:
            return g
        others = np.delete(dl, g)
        if others.min() >= decision_no + n:
            return g
        others = np.sort(others[others < decision_no + n])
        need = decision_no + 1 + np.arange(len(others))
        return g if np.all(others >= need) else edf

    for t in range(n):  # steady state, not timed
        refit(t)

    times = []
    agree = 0
    steps = min(args.decisions, len(seq) - 1)
    agree += pick() == seq[0][0]
    for j in range(steps):
        t, a = seq[j]
        # dispatch the C side's pick so that both sides stay on one path
        avail[t, a] = False
        last[t] = decision_no
        decision_no += 1
        y = truth[t, a]
        t0 = time.perf_counter()
        arms[t].append(a)
        best[t] = max(best[t], y)
        refit(t)
        p = pick()
        t1 = time.perf_counter()
        times.append((t1 - t0) * 1e3)
        agree += p == seq[j + 1][0] and cand[p] == seq[j + 1][1]
    times = np.array(times)
    print("# sklearn %s, numpy %s, OPENBLAS_NUM_THREADS=%s, %d decisions after %d observations per tenant" % (
        __import__("sklearn").__version__, np.__version__,
        os.environ.get("OPENBLAS_NUM_THREADS", "unset"), steps, T))
    print("SKLEARN median_ms=%.4f mean_ms=%.4f agree=%d/%d" % (
        np.median(times), times.mean(), agree, steps + 1))


if __name__ == "__main__":
    main()
