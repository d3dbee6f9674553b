#!/usr/bin/python3
"""Ratios of scripts/bench/decision.sh: each peer against the C side.

Usage: decision_summary.py --round C_SEQ1 C_SEQ2 NAME=TIMES [NAME=TIMES ...] [--round ...]

Per round: C_SEQ1, C_SEQ2, the sequence.csv of the two C runs that bracket
the peers (their cpu_ms column, decision j at step j + 1); TIMES, a peer's
per-decision CPU ms (decision_peer.py --times), decision j the same
decision as the C side's j.  Each peer decision is paired with the worse
(larger) of its round's two C times for it, which can only lower the ratios.

Per peer, over the decisions of every round pooled: the C and peer
medians, the ratio of medians (rom), the median of the per-decision ratios
(mr), 95 % bootstrap intervals of both (2,000 resamples of the pooled
decisions), and the smallest and largest round's rom.  The first peer named
is the baseline: RESULT vs_peer.
"""
import csv
import sys

import numpy as np


def c_times(path):
    with open(path, newline="") as f:
        return np.array([float(r["cpu_ms"]) for r in csv.DictReader(f) if r["cpu_ms"] != ""])


def main():
    rounds = []
    for arg in sys.argv[1:]:
        if arg == "--round":
            rounds.append({"c": [], "peers": {}})
        elif "=" in arg:
            name, path = arg.split("=", 1)
            rounds[-1]["peers"][name] = np.loadtxt(path, ndmin=1)
        else:
            rounds[-1]["c"].append(c_times(arg))
    names = list(rounds[0]["peers"])
    rng = np.random.default_rng(1)
    lines = []
    for i, name in enumerate(names):
        ps, cs, per_round = [], [], []
        for r in rounds:
            p = r["peers"][name]
            c = np.maximum(r["c"][0], r["c"][1])[:len(p)]
            ps.append(p)
            cs.append(c)
            per_round.append(np.median(p) / np.median(c))
        p, c = np.concatenate(ps), np.concatenate(cs)
        rom = np.median(p) / np.median(c)
        mr = np.median(p / c)
        idx = rng.integers(0, len(p), size=(2000, len(p)))
        rlo, rhi = np.percentile(np.median(p[idx], axis=1) / np.median(c[idx], axis=1), [2.5, 97.5])
        mlo, mhi = np.percentile(np.median(p[idx] / c[idx], axis=1), [2.5, 97.5])
        print("# %s: %d rounds x %d paired decisions, C median %.4f ms (worse of each round's two runs), "
              "peer median %.4f ms; ratio of medians %.2f [%.2f-%.2f], median ratio %.2f [%.2f-%.2f]; "
              "rounds' ratios of medians %s" % (
                  name, len(rounds), len(ps[0]), np.median(c), np.median(p), rom, rlo, rhi, mr, mlo, mhi,
                  " ".join("%.2f" % x for x in per_round)))
        if i == 0:
            lines.append("decision_ms=%.4f peer=%s peer_ms=%.4f rounds=%d" % (
                np.median(c), name, np.median(p), len(rounds)))
        key = "vs_peer" if i == 0 else "vs_" + name.replace("-", "_")
        lines.append("%s=%.2f %s_lo=%.2f %s_hi=%.2f %s_median_ratio=%.2f %s_round_min=%.2f %s_round_max=%.2f" % (
            key, rom, key, rlo, key, rhi, key, mr, key, min(per_round), key, max(per_round)))
    for l in lines:
        print("RESULT " + l)


if __name__ == "__main__":
    main()
