#!/usr/bin/python3
"""Print SQL that loads one dataset of datasets.py into a PostgreSQL table.

    load_dataset.py NAME TABLE [--schema S] [--rows N] [--seed S] | psql ...

The script creates the table if it does not exist (feature columns as
double precision, the target as text for classification or double
precision for regression; typed datasets such as titanic keep their text
and boolean columns), fills it with COPY FROM STDIN only when it is empty,
and ANALYZEs it, so running it again is safe.  Identifiers are quoted; the
data travel as CSV through COPY, never as SQL text.
"""

import argparse
import csv
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import datasets  # noqa: E402


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name")
    ap.add_argument("table")
    ap.add_argument("--schema", default="public")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        header, rows, kind = datasets.load(args.name, args.rows, args.seed)
    except datasets.DatasetError as e:
        print("load_dataset.py: %s" % e, file=sys.stderr)
        return 1
    qual = "%s.%s" % (ident(args.schema), ident(args.table))
    types = datasets.column_types(args.name)
    if types is None:
        target_type = "double precision" if kind == "regression" else "text"
        types = ["double precision"] * (len(header) - 1) + [target_type]
    cols = [ident(c) + " " + t for c, t in zip(header, types)]
    out = sys.stdout
    out.write("\\set ON_ERROR_STOP on\n")
    out.write("CREATE SCHEMA IF NOT EXISTS %s;\n" % ident(args.schema))
    out.write("CREATE TABLE IF NOT EXISTS %s (\n    %s\n);\n" % (qual, ",\n    ".join(cols)))
    # load only into an empty table: a staging copy is filled, then moved
    out.write("CREATE TEMP TABLE easeml_load (LIKE %s);\n" % qual)
    out.write("COPY easeml_load FROM STDIN (FORMAT csv);\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerows(rows)
    out.write("\\.\n")
    out.write("INSERT INTO %s SELECT * FROM easeml_load WHERE NOT EXISTS (SELECT 1 FROM %s);\n"
              % (qual, qual))
    out.write("ANALYZE %s;\n" % qual)
    return 0


if __name__ == "__main__":
    sys.exit(main())
