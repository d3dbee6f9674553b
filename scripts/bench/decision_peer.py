#!/usr/bin/python3
"""The peers of scripts/bench/decision.sh: the same decisions in Python.

Reads the problem that `easeml-replay bench-decision --dump DIR` wrote
(history, truth, prior mean, fitted kernel parameters, each tenant's first
observations) and the C side's decisions (DIR/sequence.csv, written by
easeml-decision-bench) and makes the same steady-state decision:

  a run finishes -> update only that tenant's GP posterior on its
  observations (same RBF kernel and noise, no hyperparameter fit) -> mean
  and std over its candidates -> EI, best candidate -> pick across tenants
  (greedy max EI under easeml's hybrid fairness floor, the C side's rule).

--peer chooses how the posterior is computed:

  numpy-inc  incremental, as the C side does: each tenant keeps its
             Cholesky factor's solves against every candidate (V = L^-1
             K[A, :], t x K) and z = L^-1 y; an observation appends one row
             of each, O(t K); mean and variance follow from V and z.
  numpy      refit: Cholesky of K[A, A] + noise I, two triangular solves,
             O(t^3 + t^2 K); the kernel over the K candidates precomputed
             once, as easeml's prior holds it.
  sklearn    a new GaussianProcessRegressor per decision (fixed kernel,
             optimizer=None): fit, predict(return_std=True).

It follows the C side's sequence so that every side sees the same states,
and counts how often its own pick (tenant and candidate) equals the C
pick.  Each decision is timed in this thread's CPU time
(time.thread_time_ns), as the C side is.  Prints
`PEER name=... median_ms=... mean_ms=... agree=a/b` and, with --times FILE,
writes the per-decision CPU ms (decision j pairs with the C side's
decision j: sequence.csv's cpu_ms at step j + 1).

Run with /usr/bin/python3 (Debian's numpy, scipy and scikit-learn) and
OPENBLAS_NUM_THREADS=1 (decision.sh sets it).
"""
import argparse
import csv
import math
import os
import time

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.special import erfc


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
    ap.add_argument("--peer", choices=["numpy-inc", "numpy", "sklearn"], default="numpy-inc")
    ap.add_argument("--decisions", type=int, default=1000)
    ap.add_argument("--times", help="write the per-decision CPU ms here")
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
    ls = lengthscale * math.sqrt(m)
    sq = np.sum(feats * feats, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * feats @ feats.T, 0.0)
    kfull = signal_var * np.exp(-0.5 * d2 / (ls * ls))  # K x K, the prior's covariance

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

    def choose(t, mean, std):
        c = np.flatnonzero(avail[t])
        ei = expected_improvement(mean[c] + mu0[c], std[c], best[t])
        j = int(np.argmax(ei))
        cand[t] = c[j]
        score[t] = ei[j]

    if args.peer == "sklearn":
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel
        kernel = ConstantKernel(signal_var, constant_value_bounds="fixed") * \
            RBF(length_scale=ls, length_scale_bounds="fixed")

        def update(t, a):
            if a is not None:
                arms[t].append(a)
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
    elif args.peer == "numpy":
        def update(t, a):
            if a is not None:
                arms[t].append(a)
            A = arms[t]
            G = kfull[np.ix_(A, A)]
            G[np.diag_indices_from(G)] += noise_var
            L = cholesky(G, lower=True, check_finite=False)
            alpha = cho_solve((L, True), truth[t, A] - mu0[A], check_finite=False)
            Ks = kfull[A]  # t x K
            V = solve_triangular(L, Ks, lower=True, check_finite=False)
            mean = Ks.T @ alpha
            std = np.sqrt(np.maximum(signal_var - np.einsum("ij,ij->j", V, V), 0.0))
            choose(t, mean, std)
    else:
        # per tenant: V (cap x K), z (cap), the running mean and variance
        cap = T + 16
        Vs = np.zeros((n, cap, K))
        zs = np.zeros((n, cap))
        nobs = np.zeros(n, dtype=int)
        means = np.zeros((n, K))
        var = np.full((n, K), signal_var)

        def update(t, a):
            nonlocal Vs, zs, cap
            k = nobs[t]
            if k == cap:
                cap *= 2
                Vs = np.concatenate([Vs, np.zeros_like(Vs)], axis=1)
                zs = np.concatenate([zs, np.zeros_like(zs)], axis=1)
            V = Vs[t]
            l = V[:k, a]
            dd = math.sqrt(kfull[a, a] + noise_var - l @ l)
            row = (kfull[a] - l @ V[:k]) / dd
            zk = (truth[t, a] - mu0[a] - l @ zs[t, :k]) / dd
            V[k] = row
            zs[t, k] = zk
            nobs[t] = k + 1
            means[t] += row * zk
            var[t] -= row * row
            if a_is_new[0]:
                arms[t].append(a)
                choose(t, means[t], np.sqrt(np.maximum(var[t], 0.0)))

        a_is_new = [False]
        for t in range(n):  # the first observations, not timed
            for a in arms[t]:
                update(t, a)
        a_is_new[0] = True

    if args.peer != "numpy-inc":
        for t in range(n):  # steady state, not timed
            update(t, None)
    else:
        for t in range(n):
            choose(t, means[t], np.sqrt(np.maximum(var[t], 0.0)))

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

    times = []
    steps = min(args.decisions, len(seq) - 1)
    p0 = pick()
    agree = int(p0 == seq[0][0] and cand[p0] == seq[0][1])
    clock = time.thread_time_ns
    for j in range(steps):
        t, a = seq[j]
        # dispatch the C side's pick so that every side stays on one path
        avail[t, a] = False
        last[t] = decision_no
        decision_no += 1
        y = truth[t, a]
        t0 = clock()
        best[t] = max(best[t], y)
        update(t, a)
        p = pick()
        t1 = clock()
        times.append((t1 - t0) * 1e-6)
        agree += p == seq[j + 1][0] and cand[p] == seq[j + 1][1]
    times = np.array(times)
    if args.times:
        np.savetxt(args.times, times, fmt="%.6f")
    extra = ""
    if args.peer == "sklearn":
        extra = " sklearn %s," % __import__("sklearn").__version__
    print("# peer %s:%s numpy %s, scipy %s, OPENBLAS_NUM_THREADS=%s, %d decisions after %d observations per tenant, CPU time" % (
        args.peer, extra, np.__version__, __import__("scipy").__version__,
        os.environ.get("OPENBLAS_NUM_THREADS", "unset"), steps, T))
    print("PEER name=%s median_ms=%.4f mean_ms=%.4f agree=%d/%d" % (
        args.peer, np.median(times), times.mean(), agree, steps + 1))


if __name__ == "__main__":
    main()
