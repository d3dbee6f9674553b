#!/usr/bin/python3
"""Tests of oracle_interleave.py (run by scripts/test_replay_cli.sh).

1. A hand-made case where round-robin wastes time and where the greedy
   "most regret removed per second" rule is fooled, with the answer worked
   out by hand.
2. Random small cases: the Pareto programme against brute force over every
   vector of prefix lengths.
"""
import itertools
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle_interleave as oi  # noqa: E402

fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("not ok: " + what, file=sys.stderr)
        fails += 1


def write_runs(path, draws):
    """draws: list of (fstar list, [(tenant, cost, regret)] in run order)"""
    with open(path, "w") as f:
        f.write("devices,policy,draw,tenant,arm,start,end,cost,quality,best,regret\n")
        for d, (fstar, order) in enumerate(draws):
            now = 0.0
            arms = {}
            for t, cost, regret in order:
                start, now = now, now + cost
                arms[t] = arms.get(t, 0) + 1
                best = fstar[t] - regret
                f.write('1,"tenant_bo",%d,%d,%d,%r,%r,%r,%r,%r,%r\n'
                        % (d, t, arms[t], start, now, cost, best, best, regret))


def hand_case():
    # Tenant A (f* 0.5): 1 s -> regret 0.3, 50 s -> 0.29, 1 s -> 0.
    # Tenant B (f* 0.4): 1 s -> 0.2, 1 s -> 0.1, 1 s -> 0.
    # Round-robin A B A B A B: mean regret 0.35, 0.25, 0.245, 0.195, 0.05
    # at t = 1, 2, 52, 53, 54: loss 0.15 and 0.1 are first reached at 54.
    # Loss 0.15 (regret sum <= 0.3): A's first run (0.3) and all of B (0),
    # 1 + 3 = 4 s.  Loss 0.1 (sum <= 0.2): A's 0.3 or 0.29 with any B is
    # too much, so A runs to 0 (52 s) and B once (0.2): 53 s.
    fstar = [0.5, 0.4]
    order = [(0, 1.0, 0.3), (1, 1.0, 0.2), (0, 50.0, 0.29), (1, 1.0, 0.1),
             (0, 1.0, 0.0), (1, 1.0, 0.0)]
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "runs.csv")
        write_runs(p, [(fstar, order)])
        out = subprocess.run([sys.executable, os.path.join(HERE, "oracle_interleave.py"),
                              "--thresholds", "0.15,0.1", p],
                             capture_output=True, text=True, check=True).stdout
    # Loss 0.15, partial knowledge: skipping done tenants changes nothing
    # (none is done before 54); the exact next-run gain serves A (0.2/s,
    # tie with B: lowest tenant), then B three times (0.1/s each, against
    # A's 0.01/50): 4 s.
    got = {}
    for line in out.splitlines():
        if line.startswith("ORACLE"):
            kv = dict(x.split("=", 1) for x in line.split()[1:])
            got[float(kv["thr"])] = (float(kv["policy_time"]), float(kv["oracle_time"]),
                                     int(kv["runs_oracle"]))
            if kv["thr"] == "0.15":
                check((float(kv["skip_done_time"]), float(kv["next_gain_time"])) == (54.0, 4.0),
                      "loss 0.15: want skip_done 54, next_gain 4, got %s %s"
                      % (kv["skip_done_time"], kv["next_gain_time"]))
            # regret_rate: A (0.5/1 s), then B three times (0.4, 0.2, 0.1
            # per 1 s against A's 0.3/50 s): 4 s at 0.15; at 0.1 A's 50 s
            # run and its last one follow: 55 s.  prefix_index: A's and B's
            # first runs tie at 0.2/s (A first), then B's prefixes (0.2/s,
            # 0.1/s) beat A's best (0.3/51 s): 4 s; at 0.1 A runs out: 55 s.
            want = {"0.15": (4.0, 4.0), "0.1": (55.0, 55.0)}[kv["thr"]]
            got_r = (float(kv["regret_rate_time"]), float(kv["prefix_index_time"]))
            check(got_r == want, "loss %s: want regret_rate, prefix_index %s, got %s"
                  % (kv["thr"], want, got_r))
    check(got.get(0.15) == (54.0, 4.0, 4), "loss 0.15: want rr 54, oracle 4 s in 4 runs, got %s"
          % (got.get(0.15),))
    check(got.get(0.1) == (54.0, 53.0, 4), "loss 0.1: want rr 54, oracle 53 s in 4 runs, got %s"
          % (got.get(0.1),))
    check("BOUND" in out and "median_ratio=13.5000" in out, "pooled bound 54/4 at 0.15")


def done_case():
    # Tenant A (f* 0.2): 1 s -> 0, then a useless 100 s run.  Tenant B
    # (f* 0.4): 1 s -> 0.2, 1 s -> 0.1, 1 s -> 0.  Loss 0.05 (sum <= 0.1):
    # round-robin A B A B reaches it at 1 + 1 + 100 + 1 = 103 s; skipping
    # the done tenant A, at 3 s; the oracle also 3 s (A once, B twice).
    fstar = [0.2, 0.4]
    order = [(0, 1.0, 0.0), (1, 1.0, 0.2), (0, 100.0, 0.0), (1, 1.0, 0.1), (1, 1.0, 0.0)]
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "runs.csv")
        write_runs(p, [(fstar, order)])
        out = subprocess.run([sys.executable, os.path.join(HERE, "oracle_interleave.py"),
                              "--thresholds", "0.05", p],
                             capture_output=True, text=True, check=True).stdout
    kv = dict(x.split("=", 1) for x in out.splitlines()[0].split()[1:])
    got = tuple(float(kv[k]) for k in ("policy_time", "oracle_time", "skip_done_time"))
    check(got == (103.0, 3.0, 3.0), "done case: want 103, 3, 3, got %s" % (got,))


def prefix_case():
    # Tenant A (f* 0.4): 1 s -> 0.3, 1 s -> 0.3, 1 s -> 0.  Tenant B
    # (f* 0.3): 1 s -> 0.2, 0.19, 0.18, 0 (1 s each).  Loss 0.125 (sum <=
    # 0.25).  prefix_index: A's three runs (0.4 in 3 s) beat B's best
    # prefix (0.1/s), then A's 0.3 in 2 s, then A's last run, then B once:
    # 4 s.  Looking one run ahead only (next_gain), A and B tie at 0.1/s,
    # then B's small gains win and A's jump after a run without gain is
    # found by round-robin only: 7 s.
    fstar = [0.4, 0.3]
    order = [(0, 1.0, 0.3), (1, 1.0, 0.2), (0, 1.0, 0.3), (1, 1.0, 0.19),
             (0, 1.0, 0.0), (1, 1.0, 0.18), (1, 1.0, 0.0)]
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "runs.csv")
        write_runs(p, [(fstar, order)])
        out = subprocess.run([sys.executable, os.path.join(HERE, "oracle_interleave.py"),
                              "--thresholds", "0.125", p],
                             capture_output=True, text=True, check=True).stdout
    kv = dict(x.split("=", 1) for x in out.splitlines()[0].split()[1:])
    got = tuple(float(kv[k]) for k in ("prefix_index_time", "next_gain_time"))
    check(got == (4.0, 7.0), "prefix case: want prefix_index 4, next_gain 7, got %s" % (got,))


def brute(seqs, fstar, thr):
    n = len(fstar)
    best = float("inf")
    for lens in itertools.product(*[range(len(s) + 1) for s in seqs]):
        c = sum(sum(x[1] for x in seqs[i][:k]) for i, k in enumerate(lens))
        r = sum(seqs[i][k - 1][3] if k else fstar[i] for i, k in enumerate(lens))
        if r <= n * (thr + oi.TOL) and c < best:
            best = c
    return best


def random_cases():
    rng = random.Random(7)
    for case in range(300):
        n = rng.randint(1, 4)
        fstar, seqs = [], []
        for i in range(n):
            f = rng.uniform(0.05, 0.5)
            reg, seq = f, []
            for j in range(rng.randint(1, 5)):
                if rng.random() < 0.6:
                    reg = max(0.0, reg - rng.uniform(0, f))
                seq.append((0.0, rng.choice([1.0, 2.0, 0.5, rng.uniform(0.1, 20)]), j, reg, f - reg))
            fstar.append(f)
            seqs.append(seq)
        thr = rng.choice([0.0, 0.01, 0.05, 0.1, 0.2])
        opts = [oi.options(seqs[i], fstar[i]) for i in range(n)]
        want = brute(seqs, fstar, thr)
        got = oi.oracle_time(opts, n, thr)[0]
        check(abs(want - got) <= 1e-9 * max(1.0, want) or want == got == float("inf"),
              "random case %d: brute force %g, programme %g" % (case, want, got))


hand_case()
done_case()
prefix_case()
random_cases()
if fails:
    sys.exit(1)
print("oracle_interleave: ok")
