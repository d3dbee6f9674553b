#!/usr/bin/env bash
# Print the directory of Weka's example data sets (segment, credit-g, glass,
# ionosphere, ...), fetching them first if need be; cost_model.sh and
# cost_calibrate.sh load from it (EASEML_WEKA_DATA of scripts/datasets.py).
#
#   EASEML_WEKA_DATA=$(scripts/bench/weka_data.sh)
#
# In order: $EASEML_WEKA_DATA if set; Debian's weka package if installed
# (/usr/share/doc/weka/examples); else a cache, scripts/bench/out/weka,
# filled once from Debian's weka package: `apt-get download weka` and
# `dpkg -x` (installing the package would pull in a Java runtime; only its
# .arff files are used).  Needs apt's package lists (apt-get update).
set -euo pipefail
cd "$(dirname "$0")/../.."
probe=segment-challenge.arff
if [ -n "${EASEML_WEKA_DATA:-}" ]; then
	echo "$EASEML_WEKA_DATA"
	exit 0
fi
for dir in /usr/share/doc/weka/examples "$PWD/scripts/bench/out/weka/examples"; do
	if [ -f "$dir/$probe" ]; then
		echo "$dir"
		exit 0
	fi
done
cache=$PWD/scripts/bench/out/weka
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"				# apt's sandbox user writes the .deb there
if ! (cd "$tmp" && apt-get download -q weka >&2); then
	echo "weka_data.sh: apt-get download weka failed (run apt-get update, or set EASEML_WEKA_DATA)" >&2
	exit 1
fi
dpkg -x "$tmp"/weka_*.deb "$tmp/root"
src=$tmp/root/usr/share/doc/weka/examples
# some packagings compress the examples
find "$src" -name '*.arff.gz' -exec gunzip -f {} + 2>/dev/null || true
if [ ! -f "$src/$probe" ]; then
	echo "weka_data.sh: the weka package has no $probe" >&2
	exit 1
fi
rm -rf "$cache/examples"
mv "$src" "$cache/examples"
echo "$cache/examples"
