#!/usr/bin/python3
"""The multi-tenant benchmark's arithmetic (scripts/bench/multitenant.sh runs it).

  multitenant.py summary DIR --legs "default popular rr" --window SECONDS [--grid N]

DIR/<leg>.runs.csv holds one line per succeeded run of a leg (no header):
task,seconds since the first INSERT when the run finished,score.
DIR/<leg>.tasks holds the leg's declared tasks, one a line.

For each task i, ref_i is the best score any leg reached on it within the
window; its loss at time t in a leg is ref_i - (its best score among the
runs finished by t), with a best of 0 before its first result (the quality
scale's "best constant prediction", as the replay simulator starts).  A
leg's curve is the mean of the losses over its tasks, a step function from
t = 0 to the window.  It writes DIR/curves.csv (policy,seconds,mean_loss:
every step, as scripts/plot.sh --live-curve reads it), prints the curves on
a grid of N + 1 points as CSV, a table per task and per leg, and the RESULT
line (the names are defined in multitenant.sh's header).  Standard library
only.
"""
import argparse
import csv
import math
import os
import sys

TARGETS = (0.05, 0.02, 0.01)


def read_leg(path, window):
    runs = {}
    with open(path) as f:
        for rec in csv.reader(f):
            if not rec:
                continue
            task, t, score = rec[0], float(rec[1]), float(rec[2])
            if t <= window:
                runs.setdefault(task, []).append((t, score))
    for r in runs.values():
        r.sort()
    return runs


def best_curve(runs):
    """[(t, best so far)] at each improvement."""
    out, best = [], None
    for t, s in runs:
        if best is None or s > best:
            best = s
            out.append((t, s))
    return out


def leg_curve(tasks, runs, ref):
    """The mean loss as steps [(t, loss)], the first at t = 0."""
    best = {k: 0.0 for k in tasks}
    events = sorted((t, k, s) for k in tasks for t, s in best_curve(runs.get(k, [])))
    n = len(tasks)
    steps = [(0.0, sum(ref[k] - best[k] for k in tasks) / n)]
    for t, k, s in events:
        best[k] = max(best[k], s)
        loss = sum(ref[k] - best[k] for k in tasks) / n
        if steps[-1][0] == t:
            steps[-1] = (t, loss)
        else:
            steps.append((t, loss))
    return steps


def loss_at(steps, t):
    v = steps[0][1]
    for s_t, s_v in steps:
        if s_t > t:
            break
        v = s_v
    return v


def area(steps, window, start=0.0):
    """The area under the steps over [start, window]."""
    a = 0.0
    for i, (t, v) in enumerate(steps):
        t1 = steps[i + 1][0] if i + 1 < len(steps) else window
        lo, hi = max(t, start), min(t1, window)
        if hi > lo:
            a += v * (hi - lo)
    return a


def time_to(steps, target):
    for t, v in steps:
        if v <= target + 1e-12:
            return t
    return math.nan


def fmt(v, digits=4):
    return "nan" if v is None or (isinstance(v, float) and math.isnan(v)) else "%.*f" % (digits, v)


def summary(args):
    legs = args.legs.split()
    window = args.window
    tasks = None
    runs = {}
    for leg in legs:
        with open(os.path.join(args.dir, leg + ".tasks")) as f:
            lt = [line.strip() for line in f if line.strip()]
        if tasks is None:
            tasks = lt
        elif lt != tasks:
            sys.exit("multitenant.py: leg %s declared other tasks (%s) than %s (%s)"
                     % (leg, " ".join(lt), legs[0], " ".join(tasks)))
        runs[leg] = read_leg(os.path.join(args.dir, leg + ".runs.csv"), window)
    ref = {k: max([0.0] + [s for leg in legs for _, s in runs[leg].get(k, [])]) for k in tasks}
    curves = {leg: leg_curve(tasks, runs[leg], ref) for leg in legs}

    with open(os.path.join(args.dir, "curves.csv"), "w") as f:
        f.write("policy,seconds,mean_loss\n")
        for leg in legs:
            for t, v in curves[leg]:
                f.write("%s,%.3f,%.6f\n" % (leg, t, v))
            # the last value held to the end of the window
            f.write("%s,%.3f,%.6f\n" % (leg, window, curves[leg][-1][1]))

    print("== average loss over the %d tasks (ref: each task's best over all legs), "
          "seconds since the first INSERT" % len(tasks))
    print("seconds," + ",".join(legs))
    for g in range(args.grid + 1):
        t = window * g / args.grid
        print("%.1f,%s" % (t, ",".join(fmt(loss_at(curves[leg], t), 5) for leg in legs)))

    print("== per task: ref = best any leg reached; per leg: best score at the end, runs "
          "finished, seconds to reach ref")
    print("%-12s %7s  %s" % ("task", "ref", "  ".join("%-26s" % leg for leg in legs)))
    for k in tasks:
        cells = []
        for leg in legs:
            r = runs[leg].get(k, [])
            b = max([s for _, s in r], default=math.nan)
            tr = next((t for t, s in best_curve(r) if s >= ref[k] - 1e-12), math.nan)
            cells.append("%-26s" % ("%s %3d runs %s s" % (fmt(b), len(r), fmt(tr, 1))))
        print("%-12s %7s  %s" % (k, fmt(ref[k]), "  ".join(cells)))

    res = {}
    for leg in legs:
        res["mt_auc_" + leg] = area(curves[leg], window) / window
    for leg in legs:
        if leg != legs[0]:
            d = res["mt_auc_" + legs[0]]
            res["mt_auc_ratio_%s_over_%s" % (leg, legs[0])] = (
                res["mt_auc_" + leg] / d if d > 0 else math.nan)
    for target in TARGETS:
        for leg in legs:
            res["mt_time_to_%g_%s" % (target, leg)] = time_to(curves[leg], target)
    for leg in legs:
        res["mt_final_loss_" + leg] = curves[leg][-1][1]
    for leg in legs:
        firsts = [min((t for t, _ in runs[leg].get(k, [])), default=math.nan) for k in tasks]
        res["mt_time_to_all_served_" + leg] = (
            math.nan if any(math.isnan(f) for f in firsts) else max(firsts))
    # after the warm start: from the moment every leg had served every task
    served = max(res["mt_time_to_all_served_" + leg] for leg in legs)
    if not math.isnan(served) and served < window:
        res["mt_served_at"] = served
        for leg in legs:
            res["mt_auc_served_" + leg] = area(curves[leg], window, served) / (window - served)
        d = res["mt_auc_served_" + legs[0]]
        for leg in legs[1:]:
            res["mt_auc_served_ratio_%s_over_%s" % (leg, legs[0])] = (
                res["mt_auc_served_" + leg] / d if d > 0 else math.nan)
    print("RESULT " + " ".join(
        "%s=%s" % (k, fmt(v, 1 if k.startswith(("mt_time_to", "mt_served_at")) else 5))
        for k, v in res.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("summary")
    p.add_argument("dir")
    p.add_argument("--legs", required=True)
    p.add_argument("--window", type=float, required=True)
    p.add_argument("--grid", type=int, default=20)
    args = ap.parse_args()
    summary(args)


if __name__ == "__main__":
    main()
