#!/usr/bin/python3
"""Pool easeml-replay --times files of several seeds and summarise them.

usage: replay_summary.py [--devices-over M] [--tag TAG] POLICY BASE[,BASE..] FILE...

Each FILE is one easeml-replay --times output (devices, policy, draw,
threshold, time, ...); the draws of all files are pooled (file i, draw d is
one draw).  For every base and threshold it prints

  RATIO tag=TAG base=BASE policy=POLICY thr=T median_ratio=R ratio_of_medians=Q
        draws=N wins=W

where R is the median over draws of the per-draw ratio time(BASE) /
time(POLICY) (a draw where POLICY never reaches the loss counts 0, one
where only BASE never does +inf), Q is median time(BASE) / median
time(POLICY), and W the draws where POLICY was at least as fast.

With --devices-over M the base is the same policy on M devices and every
other device count in the files is compared with it:

  DEVICES tag=TAG policy=POLICY devices=D over=M thr=T median_ratio=R
          ratio_of_medians=Q draws=N
"""
import csv
import math
import sys


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return float("nan")
    if n % 2:
        return xs[n // 2]
    a, b = xs[n // 2 - 1], xs[n // 2]
    if math.isinf(a) or math.isinf(b):
        return a if a == b else (a + b) / 2
    return (a + b) / 2


def ratio(tb, tp):
    if math.isinf(tp):
        return 0.0
    if math.isinf(tb):
        return math.inf
    if tp <= 0:
        return 1.0 if tb <= 0 else math.inf
    return tb / tp


def load(files):
    """times[(devices, policy, thr)][(file, draw)] = time"""
    times = {}
    for i, path in enumerate(files):
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (int(row["devices"]), row["policy"], float(row["threshold"]))
                times.setdefault(key, {})[(i, int(row["draw"]))] = float(row["time"])
    return times


def compare(a, b):
    """a, b: {draw: time}; returns (median ratio, ratio of medians, n, wins)"""
    draws = sorted(set(a) & set(b))
    rs = [ratio(a[d], b[d]) for d in draws]
    ma, mb = median([a[d] for d in draws]), median([b[d] for d in draws])
    return median(rs), ratio(ma, mb), len(draws), sum(r >= 1.0 for r in rs)


def fmt(x):
    return "inf" if math.isinf(x) else "%.4f" % x


def main(argv):
    over = None
    tag = "-"
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if opt == "--devices-over":
            over = int(argv.pop(0))
        elif opt == "--tag":
            tag = argv.pop(0)
        else:
            sys.exit("replay_summary.py: unknown option " + opt)
    if len(argv) < 3:
        sys.exit(__doc__)
    policy, bases, files = argv[0], argv[1].split(","), argv[2:]
    times = load(files)
    thresholds = sorted({k[2] for k in times}, reverse=True)
    devices = sorted({k[0] for k in times})
    if over is None:
        for base in bases:
            for t in thresholds:
                for m in devices:
                    a, b = times.get((m, base, t)), times.get((m, policy, t))
                    if a is None or b is None:
                        sys.exit("replay_summary.py: no times for %s or %s" % (base, policy))
                    r, q, n, w = compare(a, b)
                    print("RATIO tag=%s base=%s policy=%s thr=%g median_ratio=%s "
                          "ratio_of_medians=%s draws=%d wins=%d"
                          % (tag, base, policy, t, fmt(r), fmt(q), n, w))
    else:
        for m in devices:
            if m == over:
                continue
            for t in thresholds:
                r, q, n, _ = compare(times[(over, policy, t)], times[(m, policy, t)])
                print("DEVICES tag=%s policy=%s devices=%d over=%d thr=%g median_ratio=%s "
                      "ratio_of_medians=%s draws=%d" % (tag, policy, m, over, t, fmt(r), fmt(q), n))


if __name__ == "__main__":
    main(sys.argv[1:])
