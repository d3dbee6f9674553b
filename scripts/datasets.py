#!/usr/bin/python3
"""Write one of easeml's demo/benchmark datasets as CSV.

    datasets.py NAME [--rows N] [--seed S] [--out FILE] [--part train|test]
    datasets.py --list

The CSV has a header row: the feature columns, then the target column,
named ``label`` for classification (string class names) or ``target`` for
regression.  Missing values are empty cells.  The data come from Debian
packages (see docs/datasets.md); nothing is downloaded and no dataset file
is kept in the repository:

  python3-sklearn          iris, wine, breast_cancer, digits, diabetes_regression
  python3-sklearn (OpenML  titanic, penguins, zoo, kr_vs_kp, cpu_vendor: tables with text,
   test fixtures)          boolean and missing values, loaded with their types
  python-matplotlib-data   stocks: monthly prices 1990-2017 with their date
  weka                     segment, ionosphere, diabetes, glass, vote, credit_g,
                           soybean, breast_cancer_lj
  dataset-fashion-mnist    fashion_mnist (28x28 pixels p0..p783, 0-255)

--rows N takes a seeded random subset of N rows (kept in file order);
without it every row is written.  Directories can be overridden with the
environment variables EASEML_SKLEARN_DATA, EASEML_WEKA_DATA and
EASEML_FASHION_DATA.  Standard library only; run it with /usr/bin/python3.
"""

import argparse
import csv
import gzip
import io
import os
import random
import re
import struct
import sys

SKLEARN_DIR = os.environ.get(
    "EASEML_SKLEARN_DATA", "/usr/lib/python3/dist-packages/sklearn/datasets/data")
WEKA_DIR = os.environ.get("EASEML_WEKA_DATA", "/usr/share/doc/weka/examples")
FASHION_DIR = os.environ.get("EASEML_FASHION_DATA", "/usr/share/datasets/fashion-mnist")

FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

IRIS_FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
WINE_FEATURES = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash", "magnesium",
                 "total_phenols", "flavanoids", "nonflavanoid_phenols",
                 "proanthocyanins", "color_intensity", "hue",
                 "od280_od315_of_diluted_wines", "proline"]
_BC_BASE = ["radius", "texture", "perimeter", "area", "smoothness", "compactness",
            "concavity", "concave_points", "symmetry", "fractal_dimension"]
BREAST_CANCER_FEATURES = (["mean_" + b for b in _BC_BASE] +
                          [b + "_error" for b in _BC_BASE] +
                          ["worst_" + b for b in _BC_BASE])
DIABETES_REG_FEATURES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]


class DatasetError(Exception):
    pass


def _open_text(path):
    if not os.path.exists(path):
        raise DatasetError("%s not found (is its Debian package installed?)" % path)
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _sanitize(name):
    """Lower-case SQL-friendly column name."""
    s = re.sub(r"[^0-9a-zA-Z]+", "_", name.strip().strip("'\"")).strip("_").lower()
    if not s or s[0].isdigit():
        s = "f_" + s
    return s


def _sklearn_csv(filename, features):
    """sklearn's bundled CSVs: first line 'n,p,class names...', last column the class id."""
    with _open_text(os.path.join(SKLEARN_DIR, filename)) as f:
        reader = csv.reader(f)
        header = next(reader)
        classes = header[2:]
        rows = []
        for rec in reader:
            if not rec:
                continue
            rows.append(rec[:-1] + [classes[int(float(rec[-1]))]])
    if len(rows[0]) - 1 != len(features):
        raise DatasetError("%s: expected %d features, found %d"
                           % (filename, len(features), len(rows[0]) - 1))
    return features + ["label"], rows, "classification"


def load_iris():
    return _sklearn_csv("iris.csv", IRIS_FEATURES)


def load_wine():
    return _sklearn_csv("wine_data.csv", WINE_FEATURES)


def load_breast_cancer():
    return _sklearn_csv("breast_cancer.csv", BREAST_CANCER_FEATURES)


def load_digits():
    """8x8 digit images, values 0-16; the file has no header (one is skipped if present)."""
    rows = []
    with _open_text(os.path.join(SKLEARN_DIR, "digits.csv.gz")) as f:
        for i, rec in enumerate(csv.reader(f)):
            if not rec:
                continue
            if i == 0 and len(rec) != 65:
                continue        # an 'n,p,classes' header line
            rows.append([str(int(float(v))) for v in rec[:-1]] + [str(int(float(rec[-1])))])
    return ["p%d" % j for j in range(64)] + ["label"], rows, "classification"


def load_diabetes_regression():
    """sklearn's raw diabetes data (442 x 10, unscaled) and disease progression target."""
    with _open_text(os.path.join(SKLEARN_DIR, "diabetes_data_raw.csv.gz")) as f:
        X = [line.split() for line in f if line.strip()]
    with _open_text(os.path.join(SKLEARN_DIR, "diabetes_target.csv.gz")) as f:
        y = [line.strip() for line in f if line.strip()]
    if len(X) != len(y):
        raise DatasetError("diabetes: %d feature rows but %d targets" % (len(X), len(y)))
    rows = [x + [repr(float(t))] for x, t in zip(X, y)]
    return DIABETES_REG_FEATURES + ["target"], rows, "regression"


def _arff_split(line):
    """Split one ARFF data line on commas, honouring '...' and "..." quotes."""
    out, cur, quote, i = [], [], None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and i + 1 < len(line):
                cur.append(line[i + 1])
                i += 1
            elif c == quote:
                quote = None
            else:
                cur.append(c)
        elif c in "'\"":
            quote = c
        elif c == ",":
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur).strip())
    return out


def _read_arff(path):
    """Return (attributes [(name, nominal values or None)], data rows)."""
    attrs, rows, in_data = [], [], False
    with _open_text(path) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                low = line.lower()
                if low.startswith("@attribute"):
                    m = re.match(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.*)$", line,
                                 re.IGNORECASE)
                    if not m:
                        raise DatasetError("%s: cannot parse %r" % (path, line))
                    name, typ = m.group(1).strip("'\""), m.group(2).strip()
                    if typ.startswith("{"):
                        vals = [v.strip().strip("'\"") for v in typ.strip("{}").split(",")]
                        attrs.append((name, vals))
                    else:
                        attrs.append((name, None))
                elif low.startswith("@data"):
                    in_data = True
                continue
            if line.startswith("{"):
                raise DatasetError("%s: sparse ARFF rows are not supported" % path)
            rec = _arff_split(line)
            if len(rec) != len(attrs):
                raise DatasetError("%s: row has %d values, %d attributes"
                                   % (path, len(rec), len(attrs)))
            rows.append(rec)
    return attrs, rows


def _arff_dataset(*files):
    """ARFF files (same attributes) -> CSV rows; the last attribute is the class.

    Numeric features are copied; nominal features become their index in the
    declared value list (0, 1, ...); '?' becomes an empty (missing) cell.
    """
    attrs, rows = None, []
    for fn in files:
        a, r = _read_arff(os.path.join(WEKA_DIR, fn))
        if attrs is not None and [x[0] for x in a] != [x[0] for x in attrs]:
            raise DatasetError("%s: attributes differ from %s" % (fn, files[0]))
        attrs = a
        rows.extend(r)
    feats, cls = attrs[:-1], attrs[-1]
    if cls[1] is None:
        raise DatasetError("%s: the last attribute is not nominal" % files[0])
    header, seen = [], set()
    for name, _ in feats:
        s = _sanitize(name)
        while s in seen or s == "label":
            s += "_"
        seen.add(s)
        header.append(s)
    out = []
    for rec in rows:
        row = []
        for (name, vals), v in zip(feats, rec[:-1]):
            if v == "?":
                row.append("")
            elif vals is None:
                row.append(v)
            else:
                if v not in vals:
                    raise DatasetError("value %r not declared for attribute %s" % (v, name))
                row.append(str(vals.index(v)))
        row.append("" if rec[-1] == "?" else rec[-1])
        out.append(row)
    return header + ["label"], out, "classification"


def load_segment():
    return _arff_dataset("segment-challenge.arff", "segment-test.arff")


def load_ionosphere():
    return _arff_dataset("ionosphere.arff")


def load_diabetes():
    return _arff_dataset("diabetes.arff")


def load_glass():
    return _arff_dataset("glass.arff")


def load_vote():
    return _arff_dataset("vote.arff")


def load_credit_g():
    return _arff_dataset("credit-g.arff")


def load_soybean():
    return _arff_dataset("soybean.arff")


def load_breast_cancer_lj():
    return _arff_dataset("breast-cancer.arff")


# ---- typed tables: the OpenML fixtures shipped with python3-sklearn -------
# Each keeps its text and boolean columns as they are (no codes), so easeml's
# handling of column types and missing values is tested on real data.
# column_types(name) gives their SQL types.
OPENML_DIR = os.environ.get("EASEML_OPENML_DATA",
                            os.path.join(os.path.dirname(SKLEARN_DIR), "tests", "data", "openml"))
TYPED = {}


def _read_arff_typed(data_id, target, drop=(), bools=()):
    """One OpenML fixture as (header, rows, column SQL types); the target last, named label."""
    d = os.path.join(OPENML_DIR, "id_%d" % data_id)
    files = sorted(f for f in os.listdir(d) if f.endswith(".arff.gz")) if os.path.isdir(d) else []
    if not files:
        raise DatasetError("%s: no ARFF file (is python3-sklearn installed?)" % d)
    attrs, rows = [], []
    with _open_text(os.path.join(d, files[0])) as f:
        in_data = False
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                low = line.lower()
                if low.startswith("@attribute"):
                    m = re.match(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.*)$", line, re.IGNORECASE)
                    name, typ = m.group(1).strip("'\""), m.group(2).strip()
                    attrs.append((name, "nominal" if typ.startswith("{") else typ.lower()))
                elif low.startswith("@data"):
                    in_data = True
                continue
            rec = _arff_split(line)
            if len(rec) != len(attrs):
                raise DatasetError("id_%d: row has %d values, %d attributes"
                                   % (data_id, len(rec), len(attrs)))
            rows.append(rec)
    names = [a[0] for a in attrs]
    if target not in names:
        raise DatasetError("id_%d: no attribute %r" % (data_id, target))
    keep = [i for i, n in enumerate(names) if n != target and n not in drop]
    ti = names.index(target)
    header, types = [], []
    for i in keep:
        header.append(_sanitize(names[i]))
        if names[i] in bools:
            types.append("boolean")
        elif attrs[i][1] in ("numeric", "real", "integer"):
            types.append("double precision")
        else:
            types.append("text")
    out = []
    for rec in rows:
        row = ["" if rec[i] == "?" else rec[i] for i in keep]
        row.append("" if rec[ti] == "?" else rec[ti])
        out.append(row)
    return header + ["label"], out, types


def load_titanic():
    """Titanic passengers: text (name, ticket, cabin, home_dest), categories, missing ages.

    boat and body are left out: they were recorded after the outcome.
    """
    header, rows, types = _read_arff_typed(40945, "survived", drop=("boat", "body"))
    TYPED["titanic"] = types + ["text"]
    return header, rows, "classification"


def load_penguins():
    """Palmer penguins: island and sex as text (sex has missing values)."""
    header, rows, types = _read_arff_typed(42585, "species")
    TYPED["penguins"] = types + ["text"]
    return header, rows, "classification"


ZOO_BOOLS = ("hair", "feathers", "eggs", "milk", "airborne", "aquatic", "predator", "toothed",
             "backbone", "breathes", "venomous", "fins", "tail", "domestic", "catsize")


def load_zoo():
    """UCI zoo: 15 boolean columns, legs, and the animal's name (unique)."""
    header, rows, types = _read_arff_typed(62, "type", bools=ZOO_BOOLS)
    TYPED["zoo"] = types + ["text"]
    return header, rows, "classification"


def load_kr_vs_kp():
    """Chess endgame king+rook vs king+pawn: 36 board features as text (t/f/n...)."""
    header, rows, types = _read_arff_typed(3, "class")
    TYPED["kr_vs_kp"] = types + ["text"]
    return header, rows, "classification"


def load_cpu_vendor():
    """UCI computer hardware: the vendor as text and 6 numbers; regression target."""
    header, rows, types = _read_arff_typed(561, "class")
    header[-1] = "target"
    TYPED["cpu_vendor"] = types + ["double precision"]
    return header, rows, "regression"


MPL_DIR = os.environ.get("EASEML_MPL_DATA", "/usr/share/matplotlib/mpl-data/sample_data")


def load_stocks():
    """Monthly closing prices of ten stocks and indexes, 1990-2017, with their date.

    The target is the S&P 500 (^GSPC); the other prices have gaps (companies
    listed later), and rows with no price at all have no target.
    """
    with _open_text(os.path.join(MPL_DIR, "Stocks.csv")) as f:
        recs = [r for r in csv.reader(line for line in f if not line.startswith("#")) if r]
    names = [_sanitize(c) for c in recs[0]]
    if "date" not in names or "gspc" not in names:
        raise DatasetError("Stocks.csv: unexpected header %r" % recs[0])
    ti = names.index("gspc")
    keep = [i for i in range(len(names)) if i != ti]
    rows = [[r[i] for i in keep] + [r[ti]] for r in recs[1:]]
    header = [names[i] for i in keep] + ["target"]
    TYPED["stocks"] = ["date" if names[i] == "date" else "double precision" for i in keep] + \
        ["double precision"]
    return header, rows, "regression"


def column_types(name):
    """SQL types of a typed dataset's columns (after load()), or None: all numeric."""
    return TYPED.get(name)


def _idx(path, magic):
    if not os.path.exists(path):
        raise DatasetError("%s not found (install dataset-fashion-mnist)" % path)
    with gzip.open(path, "rb") as f:
        data = f.read()
    m, n = struct.unpack(">II", data[:8])
    if m != magic:
        raise DatasetError("%s: bad IDX magic 0x%x" % (path, m))
    if magic == 0x803:
        h, w = struct.unpack(">II", data[8:16])
        return n, h * w, data[16:]
    return n, 1, data[8:]


def load_fashion_mnist(part="train", rows=None, seed=0):
    """Fashion-MNIST images flattened row-major (p0..p783, 0-255) and class names."""
    pre = "train" if part == "train" else "t10k"
    n, p, pix = _idx(os.path.join(FASHION_DIR, pre + "-images-idx3-ubyte.gz"), 0x803)
    nl, _, lab = _idx(os.path.join(FASHION_DIR, pre + "-labels-idx1-ubyte.gz"), 0x801)
    if n != nl:
        raise DatasetError("fashion-mnist: %d images but %d labels" % (n, nl))
    idx = _subset(n, rows, seed)
    out = []
    for i in idx:
        row = [str(v) for v in pix[i * p:(i + 1) * p]]
        row.append(FASHION_CLASSES[lab[i]])
        out.append(row)
    return ["p%d" % j for j in range(p)] + ["label"], out, "classification"


def _subset(n, rows, seed):
    if rows is None or rows >= n:
        return list(range(n))
    if rows <= 0:
        raise DatasetError("--rows must be positive")
    return sorted(random.Random(seed).sample(range(n), rows))


DATASETS = {
    "iris": (load_iris, "sklearn iris: 150 x 4, 3 classes"),
    "wine": (load_wine, "sklearn wine: 178 x 13, 3 classes"),
    "breast_cancer": (load_breast_cancer, "sklearn breast cancer: 569 x 30, 2 classes"),
    "digits": (load_digits, "sklearn digits: 1797 x 64 (8x8, 0-16), 10 classes"),
    "diabetes_regression": (load_diabetes_regression,
                            "sklearn diabetes (raw): 442 x 10, regression target"),
    "segment": (load_segment, "weka segment challenge+test: 2310 x 19, 7 classes"),
    "ionosphere": (load_ionosphere, "weka ionosphere: 351 x 34, 2 classes"),
    "diabetes": (load_diabetes, "weka Pima diabetes: 768 x 8, 2 classes"),
    "glass": (load_glass, "weka glass: 214 x 9, 6 classes"),
    "vote": (load_vote, "weka vote: 435 x 16 (nominal as 0/1, missing cells), 2 classes"),
    "credit_g": (load_credit_g, "weka credit-g: 1000 x 20 (nominal as codes), 2 classes"),
    "soybean": (load_soybean, "weka soybean: 683 x 35 (nominal as codes, missing cells), 19 classes"),
    "breast_cancer_lj": (load_breast_cancer_lj,
                         "weka breast-cancer (Ljubljana): 286 x 9 (nominal as codes), 2 classes"),
    "kr_vs_kp": (load_kr_vs_kp, "OpenML kr-vs-kp: 3196 x 36 (text), 2 classes"),
    "titanic": (load_titanic, "OpenML titanic: 1309 x 11 (text, missing values), 2 classes"),
    "penguins": (load_penguins, "OpenML penguins: 344 x 6 (text, missing values), 3 classes"),
    "zoo": (load_zoo, "OpenML zoo: 101 x 17 (15 boolean, a unique name), 7 classes"),
    "cpu_vendor": (load_cpu_vendor, "OpenML cpu: 209 x 7 (vendor as text), regression target"),
    "stocks": (load_stocks, "matplotlib Stocks.csv: 524 x 10 (a date, prices with gaps), "
               "regression target S&P 500"),
    "fashion_mnist": (load_fashion_mnist,
                      "Fashion-MNIST: 60000 (train) / 10000 (test) x 784 (28x28), 10 classes"),
}


def load(name, rows=None, seed=0, part="train"):
    """Return (header, rows, kind) for a dataset name."""
    if name not in DATASETS:
        raise DatasetError("unknown dataset %r (use --list)" % name)
    if name == "fashion_mnist":
        return load_fashion_mnist(part, rows, seed)
    header, data, kind = DATASETS[name][0]()
    return header, [data[i] for i in _subset(len(data), rows, seed)], kind


def write_csv(header, rows, out):
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", nargs="?")
    ap.add_argument("--rows", type=int, default=None, help="seeded random subset of N rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="output file (default stdout)")
    ap.add_argument("--part", choices=["train", "test"], default="train",
                    help="fashion_mnist: train (60k) or test (10k) images")
    ap.add_argument("--list", action="store_true", help="list the dataset names")
    args = ap.parse_args(argv)
    if args.list:
        for k, (_, desc) in DATASETS.items():
            print("%-20s %s" % (k, desc))
        return 0
    if not args.name:
        ap.error("a dataset name or --list is required")
    try:
        header, rows, _ = load(args.name, args.rows, args.seed, args.part)
    except DatasetError as e:
        print("datasets.py: %s" % e, file=sys.stderr)
        return 1
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            write_csv(header, rows, f)
        os.replace(tmp, args.out)
    else:
        write_csv(header, rows, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
