# shellcheck shell=bash
# A throw-away PostgreSQL cluster for the benchmarks under scripts/bench/ and
# the pg_regress part of scripts/test.sh.
# Sourced (as root, from the repository's root), not run:
#
#   . scripts/lib/cluster.sh         # sets PG_CONFIG (default Debian's 15), BINDIR
#   cluster_install                  # builds easeml, installs it into PG_CONFIG's PostgreSQL
#   cluster_new                      # $cluster_dir: a new directory postgres owns
#   cluster_start "shared_preload_libraries = 'easeml'" ...
#                                    # initdb, a free port ($cluster_port), start
#   cluster_psql -c 'SELECT 1'       # psql as postgres on it, ON_ERROR_STOP
#   cluster_run pgbench ...          # any client as postgres, PGHOST etc. set
#
# The cluster's data directory is $cluster_dir/data, its log
# $cluster_dir/server.log; it listens only on a socket in $cluster_dir.
# cluster_new sets an EXIT trap: however the script ends (an error under
# set -e, a signal), the cluster stops (immediate) and $cluster_dir goes.

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
BINDIR=$("$PG_CONFIG" --bindir)

cluster_install() {
	make -s PG_CONFIG="$PG_CONFIG" >/dev/null
	make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
}

# a directory for the cluster and the script's scratch files, removed on exit
cluster_new() {
	cluster_dir=$(mktemp -d)
	chown postgres: "$cluster_dir"
	trap cluster_cleanup EXIT
}

cluster_cleanup() {
	if [ -f "$cluster_dir/data/postmaster.pid" ]; then
		runuser -u postgres -- "$BINDIR/pg_ctl" -D "$cluster_dir/data" -m immediate stop >/dev/null 2>&1 || true
	fi
	rm -rf "$cluster_dir"
}

# cluster_start [SETTING_LINE...]: initdb in $cluster_dir/data, a free port
# in $cluster_port, the lines appended to postgresql.conf, and start
cluster_start() {
	runuser -u postgres -- "$BINDIR/initdb" -D "$cluster_dir/data" -A trust -U postgres --no-sync >/dev/null
	cluster_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	{
		echo "port = $cluster_port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$cluster_dir'"
		[ $# = 0 ] || printf '%s\n' "$@"
	} >>"$cluster_dir/data/postgresql.conf"
	runuser -u postgres -- "$BINDIR/pg_ctl" -D "$cluster_dir/data" -l "$cluster_dir/server.log" -w start >/dev/null
}

# cluster_run CMD...: CMD as postgres, from the cluster's directory (postgres
# may not read the caller's), libpq's defaults pointing at the cluster; the
# caller's environment (PGOPTIONS, say) passes through
cluster_run() {
	(cd "$cluster_dir" && runuser -u postgres -- env PGHOST="$cluster_dir" PGPORT="$cluster_port" \
		PGUSER=postgres PGDATABASE=postgres "$@")
}

cluster_psql() {
	cluster_run "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 "$@"
}
