# Real tables (docs/data.md): text, boolean, date and missing values end to
# end on real data; keys left out; missing-value strategies; snapshots and
# refresh; folds; the metric a task ranks by.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('data');

# python3-sklearn's OpenML fixtures and python-matplotlib-data's stock prices
load_dataset($node, $_, $_) for qw(titanic penguins zoo cpu_vendor stocks iris);
make_tenant($node, 'lab_d', map { "public.$_" } qw(titanic penguins zoo cpu_vendor stocks iris));
make_tenant($node, 'lab_e');

# Declare a task and queue the chosen candidates in one transaction (with
# max_runs their number, the scheduler adds none of its own); returns the
# declaration's NOTICE.
sub declare
{
	my ($sql, @models) = @_;
	my ($name) = $sql =~ /VALUES \('([^']+)'/;
	my $queue = join('', map { "SELECT easeml.enqueue('$name', '$_');" } @models);
	my ($rc, $out, $err) = $node->psql('postgres', "BEGIN; $sql; $queue COMMIT;",
		extra_params => [ '-U', 'lab_d' ]);
	die "declaration failed: $err" if $rc != 0;
	return $err;
}

sub wait_done
{
	my ($task, $n) = @_;
	return $node->poll_query_until('postgres', qq{
		SELECT count(*) >= $n FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		 WHERE t.name = '$task' AND r.status IN ('succeeded', 'failed') AND r.purpose = 'select'});
}

sub best
{
	my ($task) = @_;
	return query_as($node, 'lab_d',
		"SELECT max(r.score) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		  WHERE t.name = '$task' AND r.status = 'succeeded'");
}

# ---- column types on real data --------------------------------------------------
# titanic: text columns (sex and embarked one-hot, ticket, cabin and home
# town hashed), the passenger's name left out as an identifier, missing ages
my $notice = declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('titanic', 'public.titanic', 'label', 2)}, 'gbt-100', 'softmax-l2-1e-3');
like($notice, qr/Left out: name \(\d+ distinct values in 1309 rows: an identifier or free text\)/,
	'titanic: the passengers\' names are left out as an identifier');
like($notice, qr/sex \(categorical, 2 values\).*ticket \(categorical, 929 values\)/s,
	'titanic: text columns are features, with their number of values');
ok(wait_done('titanic', 2), 'titanic: the runs finish');
is($node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT r.status, ',') FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'titanic' AND r.purpose = 'select'}), 'succeeded', 'titanic: every run succeeded');
cmp_ok(best('titanic'), '>', 0.74, 'titanic: accuracy above the 0.62 of the majority class');
# 10 raw columns: 5 numbers (+1 indicator each for age and fare), sex 2 and
# embarked 3 (+1) one-hot, ticket, cabin and home town 32 buckets each (+1
# indicator for the last two): 7 + 2 + 4 + 32 + 33 + 33
is($node->safe_psql('postgres', q{
	SELECT DISTINCT (metrics->>'n_features') || '/' || ((metrics->>'imputed_values')::int > 0)
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'titanic' AND r.status = 'succeeded' AND r.purpose = 'select'}), '111/true',
	'titanic: one-hot and hashed columns and missing-value indicators make 111 features');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.artifacts a JOIN easeml.runs r ON r.id = a.run_id
	  JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'titanic' AND r.purpose = 'select' AND position('prep.encoders'::bytea IN a.data) > 0}), '2',
	'titanic: the encoding is stored in each run\'s artifact');

# zoo: 15 boolean columns; the animals' names are left out
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('zoo', 'public.zoo', 'label', 1)}, 'softmax-l2-1e-3');
like($notice, qr/hair \(categorical, 2 values\)/, 'zoo: boolean columns are features');
like($notice, qr/Left out: animal/, 'zoo: the animal\'s name is left out');
ok(wait_done('zoo', 1), 'zoo: the run finishes');
cmp_ok(best('zoo'), '>', 0.8, 'zoo: 7 classes learnt from booleans');

# stocks: the date alone predicts the S&P 500 (its parts carry the trend);
# a view turns it into a timestamp
$node->safe_psql('postgres', q{
	CREATE VIEW public.stocks_at AS SELECT date::timestamptz + interval '9 hours' AS at, target
	  FROM public.stocks;
	GRANT SELECT ON public.stocks_at TO lab_d;});
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, kind, features, max_runs)
	VALUES ('stocks', 'public.stocks', 'target', 'regression', '{date}', 1)}, 'gbt-100');
like($notice, qr/date \(date\)/, 'stocks: a date column is a feature');
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, kind, max_runs)
	VALUES ('stocks_at', 'public.stocks_at', 'target', 'regression', 1)}, 'gbt-100');
like($notice, qr/at \(timestamp\)/, 'stocks: a timestamp column is a feature');
ok(wait_done('stocks', 1) && wait_done('stocks_at', 1), 'stocks: the runs finish');
cmp_ok(best('stocks'), '>', 0.9, 'stocks: R^2 from the date alone');
cmp_ok(best('stocks_at'), '>', 0.9, 'stocks: R^2 from the timestamp alone');
is($node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT metrics->>'n_features', ',') FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name IN ('stocks', 'stocks_at')}), '6,7',
	'stocks: a date makes 6 numeric parts, a timestamp 7');

# ---- keys are not features ---------------------------------------------------------
# iris sorted by class with a serial id: the id would give the label away.
# Keys are keys by declaration (the NOTICE names the rule), looked up through
# a simple view; a view's row number declares nothing and is a feature.
$node->safe_psql('postgres', q{
	CREATE TABLE public.iris_keyed (id serial PRIMARY KEY, code int UNIQUE, sepal_length float8,
		sepal_width float8, petal_length float8, petal_width float8, label text);
	INSERT INTO public.iris_keyed (code, sepal_length, sepal_width, petal_length, petal_width, label)
	SELECT 1000 + row_number() OVER (), sepal_length, sepal_width, petal_length, petal_width, label
	  FROM public.iris ORDER BY label;
	CREATE VIEW public.iris_keyed_view AS
	SELECT id AS flower, sepal_length, sepal_width, petal_length, petal_width, label
	  FROM public.iris_keyed;
	CREATE VIEW public.iris_numbered AS SELECT row_number() OVER () AS n, * FROM public.iris;
	CREATE TABLE public.years AS
	SELECT 1980 + g AS year, g * 37 % 100 AS rainfall,
		   CASE WHEN g % 3 = 0 THEN 'wet' ELSE 'dry' END AS season,
		   CASE WHEN g > 20 THEN 'late' ELSE 'early' END AS era
	  FROM generate_series(1, 40) g;
	GRANT SELECT ON public.iris_keyed, public.iris_keyed_view, public.iris_numbered, public.years
		TO lab_d;});
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('keyed', 'public.iris_keyed', 'label', 1)});
like($notice, qr/Left out: id \(primary key\), code \(unique index iris_keyed_code_key\)/,
	'keys: the primary-key and unique columns are left out, and the NOTICE names the rule');
is(query_as($node, 'lab_d', "SELECT features FROM easeml.tasks WHERE name = 'keyed'"),
	'{sepal_length,sepal_width,petal_length,petal_width}', 'keys: the features are the measurements');
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('keyed_view', 'public.iris_keyed_view', 'label', 1)});
like($notice, qr/Left out: flower \(primary key of public\.iris_keyed\)/,
	'keys: a simple view\'s column that shows a key is left out, naming the table');
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('numbered', 'public.iris_numbered', 'label', 1)});
like($notice, qr/Features: n \(numeric\)/,
	'keys: a view\'s row number is no key by declaration: it is a feature');
unlike($notice, qr/row number/, 'keys: no column is left out by the pattern of its values');
# distinct consecutive integers are a feature: the year predicts the era
# (the same model without it is a guess)
$notice = declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('years', 'public.years', 'era', 1)}, 'softmax-l2-1e-3');
like($notice, qr/Features: year \(numeric\), rainfall \(numeric\), season/,
	'years: the year is a feature');
declare(q{INSERT INTO easeml.tasks (name, source, target, features, max_runs)
	VALUES ('years_without', 'public.years', 'era', '{rainfall,season}', 1)}, 'softmax-l2-1e-3');
ok(wait_done('years', 1) && wait_done('years_without', 1), 'years: the runs finish');
cmp_ok(best('years'), '>=', 0.85, 'years: the era from the year');
cmp_ok(best('years'), '>', best('years_without') + 0.2, 'years: far better than without the year');

# ---- missing values: each strategy, with and without indicators ---------------------
foreach my $s ([ 'mean', 'true' ], [ 'median', 'true' ], [ 'most_frequent', 'false' ])
{
	my ($impute, $ind) = @$s;
	declare(qq{INSERT INTO easeml.tasks (name, source, target, impute, missing_indicator, max_runs)
		VALUES ('penguins_$impute', 'public.penguins', 'label', '$impute', $ind, 1)}, 'gbt-100');
}
ok(wait_done("penguins_$_", 1), "penguins ($_): the run finishes") for qw(mean median most_frequent);
is($node->safe_psql('postgres', q{
	SELECT string_agg(t.impute || ':' || (r.metrics->>'n_features') || ':' || (r.metrics->>'imputed_values'),
					  ' ' ORDER BY t.id)
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name LIKE 'penguins\_%' AND r.status = 'succeeded' AND r.purpose = 'select'}),
	'mean:15:18 median:15:18 most_frequent:10:18',
	'penguins: 18 missing cells filled; island 3 and sex 3 one-hot, 4 numbers, and an indicator for each of the 5 columns with gaps');
cmp_ok(best("penguins_$_"), '>', 0.9, "penguins ($_): accuracy") for qw(mean median most_frequent);

# ---- snapshots: versions, stale results, refresh -------------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE public.flowers AS SELECT * FROM public.iris WHERE label <> 'virginica';
	GRANT SELECT ON public.flowers TO lab_d;});
declare(q{INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('flowers', 'public.flowers', 'label', 1)}, 'knn-5');
ok(wait_done('flowers', 1), 'snapshot: the first run finishes');
$node->safe_psql('postgres', q{INSERT INTO public.flowers SELECT * FROM public.iris WHERE label = 'virginica'});
is(query_as($node, 'lab_d', "SELECT n_rows || '/' || n_classes || '/' || snapshot_version FROM easeml.tasks WHERE name = 'flowers'"),
	'100/2/1', 'snapshot: new rows in the source do not change the task');
# the task is read in the refresh's transaction: once that commits, the
# queued run may end and complete the task again (max_runs) before any
# later query
my @refreshed = split /\n/, query_as($node, 'lab_d', q{BEGIN;
	SELECT easeml.refresh('flowers');
	SELECT easeml.enqueue('flowers', 'knn-5') > 0;
	SELECT n_rows || '/' || n_classes || '/' || status FROM easeml.tasks WHERE name = 'flowers';
	COMMIT;});
is("@refreshed[0, 1]", '2 t', 'refresh takes version 2');
is($refreshed[2], '150/3/active', 'refresh: the task counts the new rows and is scheduled again');
ok(wait_done('flowers', 2), 'refresh: the candidate runs again, on the new version');
is(query_as($node, 'lab_d', q{
	SELECT string_agg(l.snapshot_version || ':' || (r.metrics->>'rows_loaded') || ':' || l.stale::text, ' '
					  ORDER BY l.snapshot_version)
	  FROM easeml.leaderboard l JOIN easeml.runs r ON r.id = l.run_id WHERE l.task = 'flowers'}),
	'1:100:true 2:150:false', 'each run read its own version; the old result is marked stale');
is(query_as($node, 'lab_d', "SELECT rank FROM easeml.leaderboard WHERE task = 'flowers' AND NOT stale"),
	'1', 'the current version ranks first');
is(query_as($node, 'lab_e', q{SELECT count(*) FROM pg_class c
	 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND has_table_privilege(c.oid, 'SELECT')}), '0',
	'another tenant cannot read any snapshot');
# access to the source is revoked: a snapshot is never used beyond its
# tenant's rights (the trainer's refusal: t/003_security.pl)
$node->safe_psql('postgres', 'REVOKE SELECT ON public.flowers FROM lab_d');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.enqueue('flowers', 'gnb')",
	extra_params => [ '-U', 'lab_d' ]);
like($err, qr/tenant "lab_d" may no longer read the source public\.flowers of task "flowers" \(permission denied for table flowers\): its snapshot is refused/,
	'a tenant that lost access to the source cannot queue a run on its snapshot');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'flowers' AND m.name = 'gnb' AND r.purpose = 'select'}),
	'0', '... so nothing trains on it');
query_as($node, 'lab_d', "SELECT easeml.drop_task('flowers')");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relnamespace = 'easeml_snapshots'::regnamespace
	 AND relname NOT IN (SELECT easeml._snapshot_name(id, snapshot_version) FROM easeml.tasks
						  WHERE snapshot_version IS NOT NULL)}), '0',
	'the snapshot is dropped with its task');

# ---- folds and the metric ---------------------------------------------------------------
declare(q{INSERT INTO easeml.tasks (name, source, target, folds, max_runs)
	VALUES ('penguins_cv', 'public.penguins', 'label', 5, 1)}, 'knn-5');
declare(q{INSERT INTO easeml.tasks (name, source, target, kind, metric, max_runs)
	VALUES ('cpu', 'public.cpu_vendor', 'target', 'regression', 'rmse', 1)}, 'gbt-100');
ok(wait_done('penguins_cv', 1) && wait_done('cpu', 1), 'folds and metric: the runs finish');
is($node->safe_psql('postgres', q{
	SELECT jsonb_array_length(metrics->'fold_scores') || '/' || (metrics->>'folds')
		   || '/' || ((metrics->>'accuracy_sd')::float8 >= 0)
		   || '/' || (abs(score - (SELECT avg(v::float8) FROM jsonb_array_elements_text(metrics->'fold_scores') v)) < 1e-9)
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'penguins_cv' AND r.purpose = 'select'}),
	'5/5/true/true', 'folds: five fold scores, their spread, and the score is their mean');
is($node->safe_psql('postgres', q{
	SELECT (metrics->>'metric') || '/' || (metrics ? 'mae') || '/' || (metrics ? 'r2')
		   || '/' || (l.metric_value = (metrics->>'rmse')::float8) || '/' || (l.score < 1)
	  FROM easeml.leaderboard l JOIN easeml.runs r ON r.id = l.run_id WHERE l.task = 'cpu'}),
	'rmse/true/true/true/true', 'metric: the leaderboard shows the RMSE the task ranks by');

# pg_dump and pg_restore keep the snapshots, their rows and who may read them
$node->safe_psql('postgres', "ALTER SYSTEM SET easeml.enabled = off; SELECT pg_reload_conf();");
my $dump = PostgreSQL::Test::Utils::tempdir() . '/data.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', $dump ],
	'pg_dump of a database with snapshots');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
my $snaps = q{SELECT string_agg(c.relname || ':' || c.reltuples::bigint || ':'
		|| has_table_privilege('lab_d', c.oid, 'SELECT'), ' ' ORDER BY c.relname)
	FROM pg_class c WHERE c.relnamespace = 'easeml_snapshots'::regnamespace};
$node->safe_psql($_, "ANALYZE") for qw(postgres restored);
is($node->safe_psql('restored', $snaps), $node->safe_psql('postgres', $snaps),
	'the restored database has the same snapshots, rows and privileges');

$node->stop;
done_testing();
