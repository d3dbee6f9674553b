# shellcheck shell=bash
# One data set of scripts/bench/automl.sh in a benchmark's throw-away
# cluster (scripts/lib/cluster.sh, sourced first, cluster started); sourced,
# from the repository's root.  Shared by automl.sh and genround.sh, so
# both run a task the same way.
#
#   automl_set NAME CSV   the extension, the seed history, table public.NAME
#                         (float8 features, text label) loaded from CSV, and
#                         the tenant bench that may read it

_automl_psql() {
	PGOPTIONS="-c client_min_messages=warning" cluster_psql "$@"
}

automl_set() {
	local name=$1 csv=$2 cols
	_automl_psql -c 'CREATE EXTENSION easeml'
	_automl_psql -At -c "SELECT easeml.load_history('$("$PG_CONFIG" --sharedir)/extension/easeml_seed_history.csv', 'seed') || ' seed history cells'"
	cols=$(head -1 "$csv" | tr ',' '\n' | grep -v '^label$' | sed 's/$/ float8/' | paste -sd,)
	_automl_psql -c "CREATE TABLE public.$name ($cols, label text)"
	_automl_psql -c "COPY public.$name FROM STDIN (FORMAT csv, HEADER true)" <"$csv"
	_automl_psql -o /dev/null <<SQL
CREATE ROLE bench LOGIN;
SELECT easeml.add_tenant('bench');
GRANT SELECT ON public.$name TO bench;
SQL
}
