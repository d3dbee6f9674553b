#!/usr/bin/python3
"""Synthetic quality/cost/size matrices with many candidate models.

scripts/bench/arms.sh uses them to measure how easeml-replay scales with
the number of candidates.  The shape follows Oboe's: quality is a logistic
function of a model effect, a data-set difficulty and a rank-3 interaction;
runtime is a per-model constant times rows^a x features^b with log-normal
noise, so the size-based cost models have something to learn.

usage: make_wide_matrix.py ROWS ARMS SEED OUTDIR
writes OUTDIR/quality.csv, OUTDIR/runtime.csv, OUTDIR/sizes.csv
"""
import math
import random
import sys


def main():
    rows, arms, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    a = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(rows)]
    b = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(arms)]
    effect = [rng.gauss(0, 1) for _ in range(arms)]
    base = [rng.gauss(-9, 1.5) for _ in range(arms)]
    ra = [rng.uniform(0.7, 1.3) for _ in range(arms)]
    fa = [rng.uniform(0.3, 1.0) for _ in range(arms)]
    header = "id," + ",".join("m%d" % k for k in range(arms)) + "\n"
    with open(out + "/quality.csv", "w") as q, open(out + "/runtime.csv", "w") as c, \
            open(out + "/sizes.csv", "w") as s:
        q.write(header)
        c.write(header)
        s.write("id,rows,features\n")
        for r in range(rows):
            d = rng.gauss(0, 1)
            n = int(math.exp(rng.uniform(math.log(100), math.log(100000))))
            f = int(math.exp(rng.uniform(math.log(4), math.log(1000))))
            s.write("%d,%d,%d\n" % (r, n, f))
            qual = []
            cost = []
            for k in range(arms):
                z = 0.5 * effect[k] + 0.5 * d + 0.3 * sum(x * y for x, y in zip(a[r], b[k]))
                qual.append("%.5f" % (1.0 / (1.0 + math.exp(-z))))
                lc = base[k] + ra[k] * math.log(n) + fa[k] * math.log(f) + rng.gauss(0, 0.5)
                cost.append("%.5g" % math.exp(lc))
            q.write("%d,%s\n" % (r, ",".join(qual)))
            c.write("%d,%s\n" % (r, ",".join(cost)))


if __name__ == "__main__":
    main()
