#!/usr/bin/python3
"""Independent cross-check of the C replay simulator (easeml-replay).

Re-implements, in plain numpy with full posterior refits, the draw
permutation (splitmix64) of the distinct rows, the empirical prior with a fixed shrinkage and
noise, and two policies ("popular": round-robin over tenants, arms by prior
mean; "max_ei:cost": warm start, then the (tenant, arm) with the largest
EI per true second), runs them on the Oboe matrices and compares the times
to each loss target and the number of runs with what easeml-replay wrote.

    /usr/bin/python3 scripts/bench/check_replay.py [--draws 2] [--tenants 20]

Run from the repository root after "make easeml-replay".  Exits 1 on any
mismatch.  Slow on purpose (refits every posterior): a couple of minutes
per draw.
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

M64 = (1 << 64) - 1
THRESHOLDS = [0.05, 0.02, 0.01, 0.005]


class SplitMix:
    def __init__(self, state):
        self.state = state & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return np.array([[float(x) for x in r[1:]] for r in rows[1:]])


def distinct_rows(Q):
    """Rows whose quality vector repeats an earlier row are left out before
    any draw, as easeml-replay does (first occurrence kept, file order)."""
    seen, rows = set(), []
    for r in range(Q.shape[0]):
        key = Q[r].tobytes()
        if key not in seen:
            seen.add(key)
            rows.append(r)
    return rows


def draw_perm(N, seed, draw):
    """easeml-replay's permutation of the N distinct rows for one draw
    (src/core/replay_sim.c ReplayPermute): its first 'tenants' entries are the tenants."""
    rng = SplitMix(seed * 0x2545F4914F6CDD1D + draw * 0x9E3779B97F4A7C15 + 1)
    perm = list(range(N))
    for i in range(N - 1, 0, -1):
        j = min(int(rng.uniform() * (i + 1)), i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def expected_improvement(mu, sigma, best):
    from scipy.special import erfc  # only the cross-check needs scipy
    d = mu - best
    ok = sigma > 1e-12
    z = np.where(ok, d / np.where(ok, sigma, 1.0), 0.0)
    ei = d * 0.5 * erfc(-z / math.sqrt(2)) + sigma * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return np.where(ok, ei, np.maximum(d, 0.0))


def simulate(policy, Q, C, tenants, mu0, Sig, noise, thresholds=THRESHOLDS, until=False):
    """Times to each threshold and the runs made; with until, stop as soon
    as every threshold is reached (the runs are then those made so far)."""
    n, K = len(tenants), Q.shape[1]
    fstar = Q[tenants].max(1)
    obs = [[] for _ in range(n)]
    best = np.zeros(n)
    last = [-1] * n
    avail = np.ones((n, K), dtype=bool)
    now, decisions = 0.0, 0
    times = [None] * len(thresholds)
    while (fstar - best).mean() > 1e-12 and avail.any():
        elig = [i for i in range(n) if avail[i].any()]
        if policy == "popular":
            i = min(elig, key=lambda i: (last[i], i))
            cand = np.flatnonzero(avail[i])
            a = int(cand[np.argmax(mu0[cand])])
        else:
            unserved = [i for i in elig if last[i] < 0]
            pool = unserved if 0 < len(unserved) < len(elig) else elig
            top, i, a = -1.0, None, None
            for j in pool:
                A = [o[0] for o in obs[j]]
                if A:
                    y = np.array([o[1] for o in obs[j]])
                    L = np.linalg.cholesky(Sig[np.ix_(A, A)] + noise * np.eye(len(A)))
                    z = np.linalg.solve(L, y - mu0[A])
                    V = np.linalg.solve(L, Sig[A, :])
                    mu = mu0 + V.T @ z
                    var = np.maximum(np.diag(Sig) - (V * V).sum(0), 0.0)
                else:
                    mu, var = mu0.copy(), np.diag(Sig).copy()
                score = expected_improvement(mu, np.sqrt(var), best[j]) / C[tenants[j]]
                score = np.where(avail[j], score, -np.inf)
                k = int(np.argmax(score))
                if score[k] > top:
                    top, i, a = score[k], j, k
        avail[i, a] = False
        last[i] = decisions
        decisions += 1
        now += C[tenants[i], a]
        y = Q[tenants[i], a]
        obs[i].append((a, y))
        best[i] = max(best[i], y)
        loss = (fstar - best).mean()
        for k, t in enumerate(thresholds):
            if times[k] is None and loss <= t + 1e-12:
                times[k] = now
        if until and None not in times:
            break
    return times, decisions


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=2)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    shrinkage, noise = 0.01, 1e-4
    data = "scripts/bench/data/oboe"
    Q = 1.0 - load(os.path.join(data, "error_matrix.csv"))
    C = load(os.path.join(data, "runtime_matrix.csv"))
    rows = distinct_rows(Q)
    Q, C = Q[rows], C[rows]
    N = Q.shape[0]

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "times.csv")
        subprocess.run(["./easeml-replay", "--quality", os.path.join(data, "error_matrix.csv"),
                        "--error", "--cost", os.path.join(data, "runtime_matrix.csv"),
                        "--cost-model", "oracle", "--shrinkage", str(shrinkage),
                        "--noise-var", str(noise), "--tenants", str(args.tenants),
                        "--draws", str(args.draws), "--seed", str(args.seed),
                        "--policies", "popular,max_ei:cost", "--times", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out, newline="") as f:
            c_rows = list(csv.DictReader(f))

    bad = 0
    for d in range(args.draws):
        perm = draw_perm(N, args.seed, d)
        tenants, prior_rows = perm[:args.tenants], perm[args.tenants:]
        X = Q[prior_rows]
        mu0 = X.mean(0)
        S = (X - mu0).T @ (X - mu0) / len(prior_rows)
        Sig = (1 - shrinkage) * S
        np.fill_diagonal(Sig, np.maximum(np.diag(S), 1e-8))
        for policy in ("popular", "max_ei:cost"):
            times, runs = simulate(policy, Q, C, tenants, mu0, Sig, noise)
            for k, t in enumerate(THRESHOLDS):
                row = [r for r in c_rows if r["policy"] == policy and int(r["draw"]) == d
                       and float(r["threshold"]) == t][0]
                ok = abs(float(row["time"]) - t_or_inf(times[k])) <= 1e-4 * max(1.0, t_or_inf(times[k])) \
                    and int(row["runs"]) == runs
                bad += not ok
                print("draw %d %-12s L<=%-6g python %12.4f runs %5d | C %12.4f runs %5s %s" % (
                    d, policy, t, t_or_inf(times[k]), runs, float(row["time"]), row["runs"],
                    "ok" if ok else "MISMATCH"))
    print("CHECK %s" % ("ok" if bad == 0 else "%d mismatches" % bad))
    sys.exit(1 if bad else 0)


def t_or_inf(t):
    return math.inf if t is None else t


if __name__ == "__main__":
    main()
