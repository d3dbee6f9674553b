#!/usr/bin/python3
"""Oracle bound on tenant picking: the fastest interleaving of fixed
per-tenant run sequences (docs/scheduler.md 6.4).

usage: oracle_interleave.py [--policy P] [--devices M] [--thresholds T,..]
                            [--times TIMES,..] [--also P2,..] [--tag TAG]
                            RUNS...

Each RUNS file is one `easeml-replay --runs` output; the draws of all files
are pooled (file i, draw d is one draw), as replay_summary.py pools --times.

With one device and per-tenant posteriors (tenant_bo: every tenant its own
GP and cost posterior), a tenant's sequence of runs does not depend on when
it is served, so any tenant-picking rule only chooses an interleaving of the
same sequences.  The first time an interleaving reaches mean regret <= loss,
the runs done are a prefix of every tenant's sequence, and the time is the
sum of their costs whatever their order.  So the fastest interleaving is the
solution of

    minimise  sum_i C_i(n_i)   subject to   sum_i R_i(n_i) <= n * loss

over prefix lengths n_i, where C_i(n) is the cost of tenant i's first n runs
and R_i(n) its regret after them (R_i(0) = f_i*): a multiple-choice
knapsack.  It is solved EXACTLY by dynamic programming over tenants that
keeps the Pareto frontier of (total cost, total regret) of the tenants so
far: a partial choice that costs more and leaves more regret than another
can never be completed better, one whose regret already exceeds the budget
can never be completed at all (regrets are >= 0), and one that costs more
than the policy's own time cannot beat it.  Only prefixes that lower a
tenant's regret are options (a longer prefix with the same regret costs
more).  No approximation: the result is the optimum up to floating-point
sums (the same 1e-12 tolerance as the simulator's).

Per draw it prints, for every threshold,

  ORACLE tag=TAG policy=P file=F draw=D thr=T policy_time=X oracle_time=Y
         ratio=X/Y runs_policy=A runs_oracle=B

and pooled over the draws

  BOUND tag=TAG policy=P thr=T median_ratio=R ratio_of_medians=Q
        min_ratio=m max_ratio=M draws=N

Two weaker rules with partial knowledge, to show which knowledge the bound
needs (medians of their per-draw ratios over P in BOUND):
skip_done = round-robin that never serves a tenant already at regret 0;
next_gain = serve the tenant whose next run removes the most regret per
second, known exactly (round-robin while no next run removes any);
regret_rate = serve the tenant whose current regret per second of its next
run is largest, its regret known exactly; prefix_index = serve the tenant
whose best prefix of its remaining runs removes the most regret per
second, known exactly (a Gittins-like index; round-robin while none
removes any).

policy_time is recomputed from the trace (the first completion at which the
mean regret is <= thr); with --times (one --times file per RUNS file, same
order) it is checked against easeml-replay's own times and the script fails
on a mismatch.  --also P2,... checks, per draw, whether P2's per-tenant
sequences are prefixes of P's (then the oracle bounds P2 too) and whether
P2 ever beat the oracle (which would be a bug here), and prints P2's
median per-draw ratio time(P) / time(P2) (ALSO_RATIO) beside the bound.
"""
import csv
import math
import sys

from replay_summary import median  # the same median as the replay reports

TOL = 1e-12
PREFIX_HORIZON = 100000     # runs the exact prefix index looks ahead (all)


def load_runs(path, devices):
    """runs[(policy, draw)][tenant] = [(start, cost, arm, regret), ...] in
    completion order, and the completion order itself."""
    runs = {}
    order = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if int(row["devices"]) != devices:
                continue
            key = (row["policy"], int(row["draw"]))
            t = int(row["tenant"])
            rec = (float(row["end"]), float(row["cost"]), int(row["arm"]),
                   float(row["regret"]), float(row["best"]))
            runs.setdefault(key, {}).setdefault(t, []).append(rec)
            order.setdefault(key, []).append((t, rec))
    return runs, order


def fstar_of(seq):
    """f* of a tenant: best + regret of any of its runs."""
    _, _, _, regret, best = seq[0]
    return best + regret


def policy_times(order, fstar, thresholds):
    """First completion time at which mean regret <= thr, as the simulator
    checks it; inf if never.  Also the runs done by then."""
    n = len(fstar)
    reg = dict(fstar)
    out = {}
    left = sorted(thresholds)
    done = 0
    for t, (end, _, _, regret, _) in order:
        reg[t] = regret
        done += 1
        loss = sum(reg.values()) / n
        for thr in list(left):
            if loss <= thr + TOL:
                out[thr] = (end, done)
                left.remove(thr)
    for thr in left:
        out[thr] = (math.inf, done)
    return out


def options(seq, fstar):
    """(cumulative cost, regret, runs) of the prefixes that lower regret."""
    opts = [(0.0, fstar, 0)]
    c = 0.0
    for j, (_, cost, _, regret, _) in enumerate(seq):
        c += cost
        if regret < opts[-1][1]:
            opts.append((c, regret, j + 1))
    return opts


def oracle_time(tenant_opts, n, thr, upper=math.inf):
    """Exact minimum of sum C_i s.t. sum R_i <= n * thr (Pareto DP).
    Returns (time, runs) or (inf, 0) if infeasible within 'upper'."""
    budget = n * (thr + TOL)
    front = [(0.0, 0.0, 0)]          # (cost, regret, runs)
    for opts in tenant_opts:
        cand = []
        for c, r, k in front:
            for oc, orr, ok in opts:
                cr = r + orr
                cc = c + oc
                if cr <= budget and cc <= upper * (1 + 1e-12):
                    cand.append((cc, cr, k + ok))
        cand.sort()
        front = []
        best_r = math.inf
        for c, r, k in cand:
            if r < best_r:
                front.append((c, r, k))
                best_r = r
        if not front:
            return math.inf, 0
    return front[0][0], front[0][2]


def rr_skip_done(seqs, fstar, thr):
    """Round-robin that never serves a tenant already at regret 0 (knows
    exactly which tenants are done, nothing else)."""
    n = len(seqs)
    reg = [fstar[t] for t in range(n)]
    pos = [0] * n
    now, budget = 0.0, n * (thr + TOL)
    if sum(reg) <= budget:
        return 0.0
    while True:
        moved = False
        for t in range(n):
            if pos[t] >= len(seqs[t]) or reg[t] <= TOL:
                continue
            _, cost, _, regret, _ = seqs[t][pos[t]]
            now += cost
            reg[t] = regret
            pos[t] += 1
            moved = True
            if sum(reg) <= budget:
                return now
        if not moved:
            return math.inf


def serve_greedy(seqs, fstar, thr, score, floor=0.0):
    """Serve, one run at a time, the tenant whose score(seq, pos, regret)
    (its trace, next run and current regret) is largest and above floor
    (ties: lowest tenant); round-robin while none is above it.  Returns the
    time at which the mean regret first reaches thr."""
    n = len(seqs)
    reg = [fstar[t] for t in range(n)]
    pos = [0] * n
    now, budget, rr = 0.0, n * (thr + TOL), 0
    while sum(reg) > budget:
        best, pick = floor, -1
        for t in range(n):
            if pos[t] < len(seqs[t]):
                g = score(seqs[t], pos[t], reg[t])
                if g > best:
                    best, pick = g, t
        if pick < 0:
            left = [(rr + k) % n for k in range(n) if pos[(rr + k) % n] < len(seqs[(rr + k) % n])]
            if not left:
                return math.inf
            pick = left[0]
            rr = pick + 1
        _, cost, _, regret, _ = seqs[pick][pos[pick]]
        now += cost
        reg[pick] = regret
        pos[pick] += 1
    return now


def next_gain_greedy(seqs, fstar, thr):
    """Serve the tenant whose NEXT run removes the most regret per second,
    known exactly; round-robin while no next run removes any: a perfectly
    calibrated myopic rule."""
    return serve_greedy(seqs, fstar, thr,
                        lambda seq, p, reg: (reg - seq[p][3]) / seq[p][1])


def regret_rate_greedy(seqs, fstar, thr):
    """Serve the tenant whose CURRENT regret per second of its next run is
    largest, the regret known exactly: what a rule with a perfect estimate
    of each tenant's remaining regret could do."""
    return serve_greedy(seqs, fstar, thr,
                        lambda seq, p, reg: reg / seq[p][1], floor=-1.0)


def prefix_index_greedy(seqs, fstar, thr, horizon=PREFIX_HORIZON):
    """Serve the tenant whose best prefix of its next 'horizon' runs (all by
    default) removes the most regret per second, known exactly (a
    Gittins-like index); round-robin while no such prefix removes any."""
    def index(seq, p, reg):
        best, c = -math.inf, 0.0
        for j in range(p, min(len(seq), p + horizon)):
            c += seq[j][1]
            best = max(best, (reg - seq[j][3]) / c)
        return best
    return serve_greedy(seqs, fstar, thr, index)


def is_prefix(seq_a, seq_b):
    """The arms of the shorter sequence are a prefix of the longer's (the
    base's trace of a tenant ends at the replay's end, with regret 0; runs
    after that cannot lower its regret)."""
    m = min(len(seq_a), len(seq_b))
    return [x[2] for x in seq_a[:m]] == [x[2] for x in seq_b[:m]] and (
        len(seq_a) <= len(seq_b) or seq_b[-1][3] <= TOL)


def read_times(path, policy, devices):
    t = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if int(row["devices"]) == devices and row["policy"] == policy:
                t[(int(row["draw"]), float(row["threshold"]))] = float(row["time"])
    return t


def parse_args(argv):
    a = {"policy": "tenant_bo", "devices": 1, "thr": [0.01, 0.005, 0.002],
         "times": [], "also": [], "tag": "oracle", "files": []}
    i = 0
    while i < len(argv):
        o = argv[i]
        if o in ("--policy", "--devices", "--thresholds", "--times", "--also", "--tag"):
            if i + 1 >= len(argv):
                sys.exit("oracle_interleave.py: %s needs a value" % o)
            v = argv[i + 1]
            i += 2
            if o == "--policy":
                a["policy"] = v
            elif o == "--devices":
                a["devices"] = int(v)
            elif o == "--thresholds":
                a["thr"] = [float(x) for x in v.split(",")]
            elif o == "--times":
                a["times"] = v.split(",")
            elif o == "--also":
                a["also"] = v.split(",")
            else:
                a["tag"] = v
        else:
            a["files"].append(o)
            i += 1
    if not a["files"]:
        sys.exit(__doc__)
    if a["times"] and len(a["times"]) != len(a["files"]):
        sys.exit("oracle_interleave.py: one --times file per RUNS file")
    if a["devices"] != 1:
        sys.exit("oracle_interleave.py: the bound holds for one device only")
    return a


def one_draw(a, fi, draw, runs, order, times, ratios, out, also):
    P = a["policy"]
    seqs = runs[(P, draw)]
    fstar = {t: fstar_of(s) for t, s in seqs.items()}
    n = len(fstar)
    if sorted(fstar) != list(range(n)):
        sys.exit("draw %d of %s: a tenant never ran; f* unknown" % (draw, a["files"][fi]))
    pt = policy_times(order[(P, draw)], fstar, a["thr"])
    opts = [options(seqs[t], fstar[t]) for t in range(n)]
    for thr in a["thr"]:
        tp, runs_p = pt[thr]
        if times is not None:
            want = times.get((draw, thr))
            if want is None or abs(want - tp) > 1e-5 * max(1.0, tp):
                sys.exit("CHECK FAILED: %s draw %d thr %g: trace gives %.6g, --times %s"
                         % (a["files"][fi], draw, thr, tp, want))
        to, runs_o = oracle_time(opts, n, thr, tp)
        r = tp / to if to > 0 else (1.0 if tp == 0 else math.inf)
        seq_list = [seqs[t] for t in range(n)]
        td = rr_skip_done(seq_list, fstar, thr)
        tg = next_gain_greedy(seq_list, fstar, thr)
        trr = regret_rate_greedy(seq_list, fstar, thr)
        tpi = prefix_index_greedy(seq_list, fstar, thr)
        ratios.setdefault(thr, []).append((r, tp, to, tp / td, tp / tg, tp / trr, tp / tpi))
        out.append("ORACLE tag=%s policy=%s file=%d draw=%d thr=%g policy_time=%.6g "
                   "oracle_time=%.6g ratio=%.4f runs_policy=%d runs_oracle=%d "
                   "skip_done_time=%.6g next_gain_time=%.6g regret_rate_time=%.6g "
                   "prefix_index_time=%.6g"
                   % (a["tag"], P, fi, draw, thr, tp, to, r, runs_p, runs_o, td, tg, trr, tpi))
        for P2 in a["also"]:
            if (P2, draw) not in runs:
                continue
            s2 = runs[(P2, draw)]
            prefix = all(is_prefix(s2[t], seqs[t]) for t in s2)
            t2 = policy_times(order[(P2, draw)], fstar, [thr])[thr][0]
            below = t2 < to * (1 - 1e-9)
            also.setdefault((P2, thr), []).append(tp / t2 if t2 > 0 else math.inf)
            out.append("ALSO tag=%s policy=%s file=%d draw=%d thr=%g time=%.6g oracle_time=%.6g "
                       "prefix_of_%s=%d beats_oracle=%d"
                       % (a["tag"], P2, fi, draw, thr, t2, to, P, int(prefix), int(below)))
            if prefix and below:
                sys.exit("CHECK FAILED: %s beat the oracle on draw %d" % (P2, draw))


def main(argv):
    a = parse_args(argv)
    ratios = {}
    also = {}
    out = []
    for fi, path in enumerate(a["files"]):
        runs, order = load_runs(path, a["devices"])
        times = read_times(a["times"][fi], a["policy"], a["devices"]) if a["times"] else None
        draws = sorted(d for (p, d) in runs if p == a["policy"])
        if not draws:
            sys.exit("%s: no runs of %s on %d device(s)" % (path, a["policy"], a["devices"]))
        for d in draws:
            one_draw(a, fi, d, runs, order, times, ratios, out, also)
    for line in out:
        print(line)
    for thr in a["thr"]:
        rs = ratios[thr]
        mt = median([x[1] for x in rs])
        mo = median([x[2] for x in rs])
        print("BOUND tag=%s policy=%s thr=%g median_ratio=%.4f ratio_of_medians=%.4f "
              "min_ratio=%.4f max_ratio=%.4f draws=%d skip_done_ratio=%.4f "
              "next_gain_ratio=%.4f regret_rate_ratio=%.4f prefix_index_ratio=%.4f"
              % (a["tag"], a["policy"], thr, median([x[0] for x in rs]),
                 mt / mo if mo > 0 else math.inf,
                 min(x[0] for x in rs), max(x[0] for x in rs), len(rs),
                 median([x[3] for x in rs]), median([x[4] for x in rs]),
                 median([x[5] for x in rs]), median([x[6] for x in rs])))
        for P2 in a["also"]:
            if (P2, thr) in also:
                print("ALSO_RATIO tag=%s policy=%s base=%s thr=%g median_ratio=%.4f draws=%d"
                      % (a["tag"], P2, a["policy"], thr, median(also[(P2, thr)]),
                         len(also[(P2, thr)])))


if __name__ == "__main__":
    main(sys.argv[1:])
