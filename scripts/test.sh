#!/usr/bin/env bash
# easeml: run every test on fresh, throw-away PostgreSQL clusters (as root).
#
#   scripts/test.sh                  unit tests, pg_regress, TAP
#   scripts/test.sh unit regress     only some parts (unit, regress, tap)
#   PROVE_TESTS=t/002_failures.pl scripts/test.sh tap
#
# Needs the packages scripts/setup.sh installs (run it once first, or set
# EASEML_SKIP_DEMO=1 for it to stop after installing).  PG_CONFIG selects
# the PostgreSQL installation to build against and test with (default:
# Debian's PostgreSQL 15).  Each part starts its own cluster on a free port
# in a temporary directory, so two checkouts built against two
# installations can be tested at the same time.  Where nvcc exists
# (CUDA_HOME, default /usr/local/cuda) the build compiles the CUDA backend
# too; the GPU code paths are tested on the trainer's CPU emulation of a GPU
# here, and on a real GPU by scripts/gpu-check.sh.  Prints "ok" last.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "test.sh: run as root (it creates clusters owned by postgres)" >&2
	exit 1
fi
. scripts/lib/cluster.sh
export PG_CONFIG
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(unit regress tap)
want() { [[ " ${parts[*]} " == *" $1 "* ]]; }

cluster_new
tmp=$cluster_dir

echo "== build and install"
make -s PG_CONFIG="$PG_CONFIG"
make -s PG_CONFIG="$PG_CONFIG" install

if want unit; then
	echo "== documentation links"
	scripts/check_docs.sh
	echo "== unit tests (GP, policies, replay, trainer)"
	make -s PG_CONFIG="$PG_CONFIG" unittest
	make -s PG_CONFIG="$PG_CONFIG" easeml-replay
	scripts/test_replay_cli.sh
	make -s PG_CONFIG="$PG_CONFIG" trainer-unittest
	echo "== artifact reader fuzz (AddressSanitizer, UBSan)"
	make -s PG_CONFIG="$PG_CONFIG" fuzz-artifact
	echo "== GPU kernels and families against the CPU (emulated GPU)"
	make -s PG_CONFIG="$PG_CONFIG" device-test
fi

if want regress; then
	echo "== pg_regress"
	# a private cluster with the settings of scripts/regress.conf
	mapfile -t settings <scripts/regress.conf
	cluster_start "${settings[@]}"
	rm -rf results regression.diffs regression.out
	if ! PGHOST="$tmp" PGPORT="$cluster_port" PGUSER=postgres make -s PG_CONFIG="$PG_CONFIG" installcheck; then
		[ -f regression.diffs ] && cat regression.diffs
		tail -n 40 "$tmp/server.log"
		echo "test.sh: pg_regress failed" >&2
		exit 1
	fi
	runuser -u postgres -- "$BINDIR/pg_ctl" -D "$tmp/data" -m fast stop >/dev/null
fi

if want tap; then
	echo "== TAP"
	# postgres cannot read a checkout under root's home: test a copy it owns
	mkdir "$tmp/tree"
	tar --exclude=.git --exclude=results --exclude=tmp_check -cf - . | tar -C "$tmp/tree" -xf -
	chown -R postgres: "$tmp/tree"
	# one port-lock directory for every checkout, so parallel runs never share a port
	mkdir -p -m 1777 /tmp/easeml-tap-ports
	if ! runuser -u postgres -- env PG_TEST_PORT_DIR=/tmp/easeml-tap-ports \
		${PROVE_TESTS:+PROVE_TESTS="$PROVE_TESTS"} \
		make -s -C "$tmp/tree" PG_CONFIG="$PG_CONFIG" tapcheck; then
		for f in "$tmp"/tree/tmp_check/log/*; do
			[ -f "$f" ] || continue
			echo "---- $f (last 60 lines)"
			tail -n 60 "$f"
		done
		keep=$(mktemp -d /tmp/easeml-tap-logs.XXXXXX)
		cp -r "$tmp"/tree/tmp_check/log/. "$keep"/
		echo "test.sh: TAP tests failed; whole logs kept in $keep" >&2
		exit 1
	fi
fi

echo ok
