#!/usr/bin/python3
"""Tests of clairvoyant.py and of replay_summary.py's vectorised statistics
(run by scripts/test_replay_cli.sh).

1. The clairvoyant knapsack against brute force over every choice of one
   option (a model or nothing) per tenant, on random small matrices.
2. replay_summary.py: the row-wise median and elementwise ratio used by the
   bootstrap equal median() and ratio(), infinities included; an interval
   contains the point estimate on a fixed sample.
"""
import itertools
import math
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clairvoyant as cv  # noqa: E402
import replay_summary as rs  # noqa: E402

fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("not ok: " + what, file=sys.stderr)
        fails += 1


rnd = random.Random(7)
for case in range(300):
    n, K = rnd.randint(1, 4), rnd.randint(1, 5)
    Q = np.array([[rnd.choice([0.5, 0.6, 0.7, 0.8, 0.9, 0.95]) for _ in range(K)] for _ in range(n)])
    C = np.array([[rnd.choice([1.0, 2.0, 0.5, 3.25, 10.0]) for _ in range(K)] for _ in range(n)])
    thr = rnd.choice([0.0, 0.01, 0.05, 0.1, 0.3, 1.0])
    fstar = Q.max(1)
    opts = [cv.frontier(C[i], fstar[i] - Q[i], fstar[i]) for i in range(n)]
    got = cv.bound(opts, n, thr)
    best = math.inf
    for pick in itertools.product(range(K + 1), repeat=n):    # K = nothing
        cost = sum(C[i, a] for i, a in enumerate(pick) if a < K)
        reg = sum(fstar[i] - (Q[i, a] if a < K else 0.0) for i, a in enumerate(pick))
        if reg <= n * (thr + cv.TOL):
            best = min(best, cost)
    check(abs(got - best) <= 1e-9, "case %d: bound %r, brute force %r" % (case, got, best))

for case in range(200):
    m = rnd.randint(1, 9)
    a = [rnd.choice([0.0, 1.0, 2.5, 7.0, math.inf]) for _ in range(m)]
    b = [rnd.choice([0.0, 1.0, 3.0, 7.0, math.inf]) for _ in range(m)]
    want = rs.median([rs.ratio(x, y) for x, y in zip(a, b)])
    got = rs.median_rows(rs.ratio_vec(np.array([a]), np.array([b])))[0]
    check(want == got or (math.isinf(want) and math.isinf(got)),
          "median ratio %r vs %r on %r %r" % (got, want, a, b))
tb = np.array([10.0, 12, 9, 30, 11, 14, 8, 13])
tp = np.array([5.0, 5, 4, 6, 7, 5, 4, 6])
lo, hi, qlo, qhi = rs.bootstrap(tb, tp, 2000)
r = rs.median(list(tb / tp))
check(lo <= r <= hi and lo < hi, "interval %g-%g around %g" % (lo, hi, r))
check(rs.bootstrap(tb, tp, 2000) == (lo, hi, qlo, qhi), "bootstrap not reproducible")

if fails:
    sys.exit("%d failed" % fails)
print("ok")
