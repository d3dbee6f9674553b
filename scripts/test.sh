#!/usr/bin/env bash
# easeml: run every test on a fresh, throw-away PostgreSQL cluster (as root).
#
#   scripts/test.sh            unit tests, pg_regress, TAP
#
# Needs the packages scripts/setup.sh installs (run it once first, or set
# EASEML_SKIP_DEMO=1 for it to stop after installing).  Prints "ok" last.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "test.sh: run as root (it creates clusters owned by postgres)" >&2
	exit 1
fi
PGVER=15
PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
export PG_CONFIG

echo "== build and install"
make -s PG_CONFIG=$PG_CONFIG
make -s PG_CONFIG=$PG_CONFIG install

echo "== unit tests (GP, policies, replay, trainer)"
make -s PG_CONFIG=$PG_CONFIG unittest
make -s PG_CONFIG=$PG_CONFIG trainer-unittest

echo "== pg_regress"
opts=()
while IFS= read -r line; do
	case "$line" in ''|'#'*) continue ;; esac
	opts+=(-o "$(printf '%s' "$line" | sed -e 's/[[:space:]]*=[[:space:]]*/=/')")
done < scripts/regress.conf
# a cluster left by a killed run would make pg_virtualenv refuse to start
if [ -f /etc/postgresql/$PGVER/regress/.by_pg_virtualenv ]; then
	pg_dropcluster --stop $PGVER regress || true
fi
rm -rf results regression.diffs regression.out
if ! pg_virtualenv -v $PGVER "${opts[@]}" make -s PG_CONFIG=$PG_CONFIG installcheck; then
	[ -f regression.diffs ] && cat regression.diffs
	echo "test.sh: pg_regress failed" >&2
	exit 1
fi

echo "== TAP"
# postgres cannot read a checkout under root's home: test a copy it owns
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar --exclude=.git --exclude=results --exclude=tmp_check -cf - . | tar -C "$tmp" -xf -
chown -R postgres: "$tmp"
if ! runuser -u postgres -- make -s -C "$tmp" PG_CONFIG=$PG_CONFIG tapcheck; then
	for f in "$tmp"/tmp_check/log/*; do
		[ -f "$f" ] || continue
		echo "---- $f (last 60 lines)"
		tail -n 60 "$f"
	done
	echo "test.sh: TAP tests failed" >&2
	exit 1
fi

echo ok
