#!/usr/bin/python3
"""Convert ASlib's OPENML-WEKA-2017 algorithm runs into a replay matrix.

usage: convert_aslib_weka.py algorithm_runs.arff OUT.csv

algorithm_runs.arff (coseal/aslib_data, folder OPENML-WEKA-2017) lists one
run per (OpenML task, Weka classifier): instance_id, repetition, algorithm,
predictive_accuracy, runstatus.  The output is the quality CSV that
easeml-replay reads: a header row "task,<algorithm>...", then one row per
task with the accuracy of every algorithm (columns sorted by name, rows by
task id).  A run that is not "ok" is an error here rather than a silent
gap: the scenario has none.
"""
import csv
import sys


def main(src, dst):
    acc = {}
    algos = set()
    data = False
    with open(src) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("%"):
                continue
            if line.upper() == "@DATA":
                data = True
                continue
            if not data:
                continue
            inst, rep, algo, value, status = next(csv.reader([line]))
            if status != "ok":
                sys.exit("run %s / %s has status %s" % (inst, algo, status))
            if (inst, algo) in acc:
                sys.exit("run %s / %s repeats" % (inst, algo))
            acc[(inst, algo)] = float(value)
            algos.add(algo)
    algos = sorted(algos)
    tasks = sorted({i for i, _ in acc}, key=int)
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["task"] + algos)
        for t in tasks:
            if any((t, a) not in acc for a in algos):
                sys.exit("task %s lacks some algorithms" % t)
            w.writerow([t] + ["%g" % acc[(t, a)] for a in algos])
    print("%s: %d tasks x %d algorithms" % (dst, len(tasks), len(algos)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
