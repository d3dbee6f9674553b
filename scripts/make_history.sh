#!/usr/bin/env bash
# Build the seed history for the scheduler's prior: every classification
# candidate of easeml.models trained by the offline trainer on datasets the
# demo does not use, written as a quality matrix (dataset x model).
#
#   scripts/make_history.sh [OUT.csv]      (default scripts/history/easeml_seed_history.csv)
#
# Needs scripts/setup.sh to have run (the catalog is read from database
# easeml) and the weka package for its example datasets.  The result is
# committed and loaded by setup.sh with easeml.load_history().
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-scripts/history/easeml_seed_history.csv}
DATASETS=(iris wine segment ionosphere diabetes glass vote credit_g titanic penguins zoo breast_cancer_lj soybean kr_vs_kp)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

runuser -u postgres -- psql -X -d easeml -tA -F $'\t' -c \
	"SELECT name, family, params FROM easeml.models
	  WHERE enabled AND NOT needs_image AND 'classification' = ANY (kinds) ORDER BY id" > "$tmp/models.tsv"
make -s easeml-trainer PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

header="dataset"
while IFS=$'\t' read -r name family params; do header="$header,$name"; done < "$tmp/models.tsv"
echo "$header" > "$tmp/out.csv"
for ds in "${DATASETS[@]}"; do
	/usr/bin/python3 scripts/datasets.py "$ds" --out "$tmp/$ds.csv"
	line="$ds"
	while IFS=$'\t' read -r name family params; do
		score=$(OPENBLAS_NUM_THREADS=1 ./easeml-trainer --csv "$tmp/$ds.csv" --target label \
			--family "$family" --params "$params" --seed 1 2>/dev/null |
			/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["score"])' || true)
		line="$line,$score"
	done < "$tmp/models.tsv"
	echo "$line" >> "$tmp/out.csv"
	echo "$ds done" >&2
done
mv "$tmp/out.csv" "$OUT"
echo "wrote $OUT" >&2
