#!/usr/bin/python3
"""The clairvoyant bound: how fast could ANY scheduler reach a loss target
on one device if it knew every cell of the matrix (docs/scheduler.md 6.4)?

usage: clairvoyant.py [--tag TAG] [--policies P,..] [--bootstrap B] CMD...

Each CMD is a file holding one easeml-replay command line (as
replay_suite.sh and replay.sh record it, NAME_sSEED.cmd); the times it
wrote are the file of the same name ending in .csv.  The bound reads the
matrix, costs, overhead, tenants, seed, draws and loss targets from the
command itself, so it is computed on exactly the draws the policies ran.

Knowing every cell, a tenant reaches regret f*_i - q_ia by running model a
alone (a run never lowers the tenant's best, so more runs than one can only
cost more), at its true cost c_ia + overhead; running nothing leaves regret
f*_i (the replay's best starts at 0).  On one device the time to reach mean
regret <= loss is the sum of the costs run, so the fastest schedule is

    minimise  sum_i c_i(a_i)   subject to   sum_i (f*_i - q_i(a_i)) <= n loss

over one option a_i per tenant (a model or nothing): a multiple-choice
knapsack, solved EXACTLY by dynamic programming over tenants that keeps the
Pareto frontier of (total cost, total regret) (the same exact method as
oracle_interleave.py's oracle_time; only options on a tenant's own
cost-regret frontier can be optimal).  Tolerance 1e-12 as the simulator's.

The draws (which rows are the tenants) are recomputed with check_replay.py's
re-implementation of easeml-replay's permutation; every draw is checked by
re-simulating `popular` (round-robin, models by prior mean, no model of its
own) in numpy and comparing its times with the .csv, so a bound is never
computed on the wrong rows or costs (the script exits 1 on a mismatch).

Per draw and loss it prints

  CLAIRVOYANT tag=TAG file=F draw=D thr=T bound=X P=time(P)...

and per policy P and loss, pooled over all draws,

  DISTANCE tag=TAG policy=P thr=T median_ratio=R ratio_of_medians=Q draws=N
           [bootstrap fields]

where R is the median per-draw time(P) / bound (>= 1; a draw where P never
reaches the loss counts inf) and Q median time(P) / median bound, with
replay_summary.py's statistics and bootstrap.
"""
import csv
import math
import os
import shlex
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_replay import draw_perm, distinct_rows, load, simulate  # noqa: E402
from replay_summary import compare, ci_fields, fmt  # noqa: E402

TOL = 1e-12


def parse_cmd(path):
    argv = shlex.split(open(path).read())
    opt = {"--error": False, "--overhead": "0", "--tenants": "20", "--seed": "1",
           "--draws": "20", "--thresholds": "0.05,0.02,0.01,0.005", "--cost": None,
           "--devices": "1", "--prior-rows": None}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--error":
            opt[a] = True
            i += 1
        else:
            opt[a] = argv[i + 1]
            i += 2
    if opt["--devices"] != "1" or opt["--prior-rows"] is not None:
        sys.exit("clairvoyant.py: %s: one device and all other rows as prior only" % path)
    return opt


def frontier(cost, regret, fstar):
    """A tenant's options on its cost-regret frontier, nothing included:
    arrays (cost, regret) by increasing cost, strictly decreasing regret."""
    order = np.lexsort((regret, cost))
    c, r = [0.0], [fstar]
    for k in order:
        if regret[k] < r[-1] - 0.0:
            if cost[k] == c[-1]:
                r[-1] = regret[k]
            else:
                c.append(cost[k])
                r.append(regret[k])
    return np.array(c), np.array(r)


def bound(options, n, thr):
    """Exact minimum of sum cost s.t. sum regret <= n (thr + TOL)."""
    budget = n * (thr + TOL)
    fc, fr = np.zeros(1), np.zeros(1)
    # tenants with the fewest options first keeps the frontier small
    for oc, orr in sorted(options, key=lambda o: len(o[0])):
        cc = (fc[:, None] + oc[None, :]).ravel()
        cr = (fr[:, None] + orr[None, :]).ravel()
        ok = cr <= budget
        cc, cr = cc[ok], cr[ok]
        if len(cc) == 0:
            return math.inf
        o = np.lexsort((cr, cc))
        cc, cr = cc[o], cr[o]
        prev = np.concatenate(([np.inf], np.minimum.accumulate(cr)[:-1]))
        keep = cr < prev
        fc, fr = cc[keep], cr[keep]
    return float(fc[0])


def read_times(path):
    t = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if int(row["devices"]) == 1:
                t[(row["policy"], int(row["draw"]), float(row["threshold"]))] = float(row["time"])
    return t


def main(argv):
    tag, policies, resamples = "-", ["default", "tenant_bo", "popular"], 0
    while argv and argv[0].startswith("--"):
        o = argv.pop(0)
        if o == "--tag":
            tag = argv.pop(0)
        elif o == "--policies":
            policies = argv.pop(0).split(",")
        elif o == "--bootstrap":
            resamples = int(argv.pop(0))
        else:
            sys.exit("clairvoyant.py: unknown option " + o)
    if not argv:
        sys.exit(__doc__)
    pooled = {}         # (policy, thr) -> ({draw: policy time}, {draw: bound})
    cache = {}
    thresholds = None
    for fi, path in enumerate(argv):
        opt = parse_cmd(path)
        key = (opt["--quality"], opt["--error"], opt["--cost"])
        if key not in cache:
            Q = load(opt["--quality"])
            if opt["--error"]:
                Q = 1.0 - Q
            C = load(opt["--cost"]) if opt["--cost"] else np.ones_like(Q)
            rows = distinct_rows(Q)
            cache[key] = (Q[rows], C[rows])
        Q, C = cache[key]
        C = C + float(opt["--overhead"])
        n, N = int(opt["--tenants"]), Q.shape[0]
        thr = [float(x) for x in opt["--thresholds"].split(",")]
        thresholds = thresholds or thr
        times = read_times(os.path.splitext(path)[0] + ".csv")
        for d in range(int(opt["--draws"])):
            perm = draw_perm(N, int(opt["--seed"]), d)
            tenants, prior = perm[:n], perm[n:]
            # check the draw: popular re-simulated must give the C times
            pt, _ = simulate("popular", Q, C, tenants, Q[prior].mean(0), None, None, thr, until=True)
            for k, t in enumerate(thr):
                want = times[("popular", d, t)]
                got = math.inf if pt[k] is None else pt[k]
                if not (got == want or abs(got - want) <= 1e-4 * max(1.0, got)):
                    sys.exit("CHECK FAILED: %s draw %d thr %g: popular re-simulated %.6g, "
                             "easeml-replay %.6g" % (path, d, t, got, want))
            fstar = Q[tenants].max(1)
            options = [frontier(C[r], fstar[i] - Q[r], fstar[i]) for i, r in enumerate(tenants)]
            for t in thr:
                b = bound(options, n, t)
                line = "CLAIRVOYANT tag=%s file=%d draw=%d thr=%g bound=%.6g" % (tag, fi, d, t, b)
                for p in policies:
                    tp = times[(p, d, t)]
                    pooled.setdefault((p, t), ({}, {}))
                    pooled[(p, t)][0][(fi, d)] = tp
                    pooled[(p, t)][1][(fi, d)] = b
                    line += " %s=%.6g" % (p, tp)
                print(line)
    for p in policies:
        for t in thresholds:
            a, b = pooled[(p, t)]
            r, q, nd, _, ci = compare(a, b, resamples)
            print("DISTANCE tag=%s policy=%s thr=%g median_ratio=%s ratio_of_medians=%s "
                  "draws=%d%s" % (tag, p, t, fmt(r), fmt(q), nd, ci_fields(ci)))


if __name__ == "__main__":
    main(sys.argv[1:])
