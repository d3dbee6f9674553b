#!/usr/bin/python3
"""Pool easeml-replay --times files of several seeds and summarise them.

usage: replay_summary.py [--devices-over M] [--tag TAG] [--bootstrap B]
                         POLICY BASE[,BASE..] FILE...

Each FILE is one easeml-replay --times output (devices, policy, draw,
threshold, time, ...); the draws of all files are pooled (file i, draw d is
one draw).  For every base and threshold it prints

  RATIO tag=TAG base=BASE policy=POLICY thr=T median_ratio=R ratio_of_medians=Q
        draws=N wins=W

where R is the median over draws of the per-draw ratio time(BASE) /
time(POLICY) (a draw where POLICY never reaches the loss counts 0, one
where only BASE never does +inf), Q is median time(BASE) / median
time(POLICY), and W the draws where POLICY was at least as fast.

With --bootstrap B (B > 0) each RATIO line also carries percentile 95%
bootstrap intervals, B resamples of the pooled draws with replacement
(numpy, fixed seed, so the same files give the same interval):

  median_ratio_lo=.. median_ratio_hi=.. ratio_of_medians_lo=..
  ratio_of_medians_hi=..

This file is the one definition of the statistics the replay benchmarks
report (median, per-draw ratio, ratio of medians, bootstrap interval);
oracle_interleave.py and clairvoyant.py import them.

With --devices-over M the base is the same policy on M devices and every
other device count in the files is compared with it:

  DEVICES tag=TAG policy=POLICY devices=D over=M thr=T median_ratio=R
          ratio_of_medians=Q draws=N
"""
import csv
import math
import sys

import numpy as np


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


BOOT_SEED = 20261206


def median_rows(x):
    """Row-wise median of a 2-D array, the same rule as median() (the mean
    of the middle pair; inf if either is inf)."""
    x = np.sort(x, axis=1)
    n = x.shape[1]
    if n % 2:
        return x[:, n // 2]
    a, b = x[:, n // 2 - 1], x[:, n // 2]
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(a) | np.isinf(b), np.maximum(a, b), (a + b) / 2)


def ratio_vec(tb, tp):
    """ratio() elementwise on arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = tb / tp
    r = np.where(tp <= 0, np.where(tb <= 0, 1.0, np.inf), r)
    r = np.where(np.isinf(tb), np.inf, r)
    return np.where(np.isinf(tp), 0.0, r)


def bootstrap(tb, tp, resamples, level=0.95, seed=BOOT_SEED):
    """Percentile intervals (lo, hi) of the median per-draw ratio and of the
    ratio of medians of base times tb over policy times tp (per draw,
    paired), from 'resamples' resamples of the draws with replacement."""
    tb, tp = np.asarray(tb, dtype=float), np.asarray(tp, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(tb), size=(resamples, len(tb)))
    mr = median_rows(ratio_vec(tb, tp)[idx])
    rom = ratio_vec(median_rows(tb[idx]), median_rows(tp[idx]))
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    with np.errstate(invalid="ignore"):
        return tuple(np.percentile(mr, q, method="lower")) + \
            tuple(np.percentile(rom, q, method="lower"))


def load(files):
    """times[(devices, policy, thr)][(file, draw)] = time"""
    times = {}
    for i, path in enumerate(files):
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (int(row["devices"]), row["policy"], float(row["threshold"]))
                times.setdefault(key, {})[(i, int(row["draw"]))] = float(row["time"])
    return times


def compare(a, b, resamples=0):
    """a, b: {draw: time}; returns (median ratio, ratio of medians, n, wins,
    bootstrap intervals or None)"""
    draws = sorted(set(a) & set(b))
    rs = [ratio(a[d], b[d]) for d in draws]
    ma, mb = median([a[d] for d in draws]), median([b[d] for d in draws])
    ci = bootstrap([a[d] for d in draws], [b[d] for d in draws], resamples) \
        if resamples > 0 and draws else None
    return median(rs), ratio(ma, mb), len(draws), sum(r >= 1.0 for r in rs), ci


def ci_fields(ci):
    if ci is None:
        return ""
    return (" median_ratio_lo=%s median_ratio_hi=%s ratio_of_medians_lo=%s "
            "ratio_of_medians_hi=%s" % tuple(fmt(x) for x in ci))


def fmt(x):
    return "inf" if math.isinf(x) else "%.4f" % x


def main(argv):
    over = None
    tag = "-"
    resamples = 0
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if opt == "--devices-over":
            over = int(argv.pop(0))
        elif opt == "--tag":
            tag = argv.pop(0)
        elif opt == "--bootstrap":
            resamples = int(argv.pop(0))
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
                    r, q, n, w, ci = compare(a, b, resamples)
                    print("RATIO tag=%s base=%s policy=%s thr=%g median_ratio=%s "
                          "ratio_of_medians=%s draws=%d wins=%d%s"
                          % (tag, base, policy, t, fmt(r), fmt(q), n, w, ci_fields(ci)))
    else:
        for m in devices:
            if m == over:
                continue
            for t in thresholds:
                r, q, n, _, ci = compare(times[(over, policy, t)], times[(m, policy, t)],
                                         resamples)
                print("DEVICES tag=%s policy=%s devices=%d over=%d thr=%g median_ratio=%s "
                      "ratio_of_medians=%s draws=%d%s"
                      % (tag, policy, m, over, t, fmt(r), fmt(q), n, ci_fields(ci)))


if __name__ == "__main__":
    main(sys.argv[1:])
