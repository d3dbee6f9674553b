# easeml.predict in SQL (docs/predict.md) reproduces every family's recorded
# validation score: one candidate per family is trained by the real trainer
# on small real data sets (sklearn's digits as 8x8 images, OpenML penguins
# with text columns and missing values, sklearn's diabetes for regression,
# matplotlib's stock prices with a date column and gaps);
# then, for each run, the rows the trainer validated on are predicted in SQL
# with that run's model and scored like the trainer scores them.
use strict;
use warnings;

use File::Basename qw(dirname);
use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# no ensembles (t/048 tests them): each task deploys one of its own runs,
# refitted on every row
my $node = easeml_node('predict', 'easeml.max_workers' => 3, 'easeml.ensemble_min_runs' => 0);

load_dataset($node, $_, $_) for qw(digits penguins diabetes_regression stocks);
make_tenant($node, 'lab_p', map { "public.$_" } qw(digits penguins diabetes_regression stocks));
make_tenant($node, 'lab_q', 'public.penguins');

my %tasks = (
	digits => [ q{INSERT INTO easeml.tasks (name, source, target, input_shape, max_runs)
		VALUES ('digits', 'public.digits', 'label', '{1,8,8}', 9)},
		qw(softmax-l2-1e-3 mlp-64 gnb knn-5 linear-svm-c0.1 ridge-1 rf-50 gbt-100 cnn-16-32) ],
	penguins => [ q{INSERT INTO easeml.tasks (name, source, target, max_runs)
		VALUES ('penguins', 'public.penguins', 'label', 2)},
		qw(softmax-l2-1e-3 gbt-100) ],
	diabetes => [ q{INSERT INTO easeml.tasks (name, source, target, kind, max_runs)
		VALUES ('diabetes', 'public.diabetes_regression', 'target', 'regression', 5)},
		qw(ridge-1 mlp-64 knn-5 rf-50 gbt-100) ],
	stocks => [ q{INSERT INTO easeml.tasks (name, source, target, kind, max_runs)
		VALUES ('stocks', 'public.stocks', 'target', 'regression', 2)},
		qw(ridge-1 gbt-100) ],
);

# declare each task and queue its candidates in one transaction (with
# max_runs their number, the scheduler adds none of its own)
for my $t (sort keys %tasks)
{
	my ($sql, @models) = @{ $tasks{$t} };
	my $queue = join('', map { "SELECT easeml.enqueue('$t', '$_');" } @models);
	query_as($node, 'lab_p', "BEGIN; $sql; $queue COMMIT;");
}
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 18 FROM easeml.runs
		 WHERE status IN ('succeeded', 'failed') AND purpose = 'select'}),
	'every run finishes');
# each task's deployed run is refitted on every row (tasks.refit_all)
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 4 FROM easeml.deployed WHERE refit_status IN ('succeeded', 'failed')}),
	'every task\'s deployed run is refitted');
is($node->safe_psql('postgres', q{
	SELECT string_agg(t.name || '/' || m.name || ': ' || r.error, '; ')
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.status <> 'succeeded' AND r.purpose = 'select'}), '', 'every run succeeded');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE r.status = 'succeeded' AND (CASE t.kind
		WHEN 'classification' THEN r.metrics->'balanced_accuracy' || r.metrics->'macro_f1'
			|| r.metrics->'log_loss' || r.metrics->'roc_auc'
		ELSE r.metrics->'rmse' || r.metrics->'mae' END) @> 'null'}), '0',
	'every run records every metric of its kind (none is null)');

# predict with one chosen run: the documented hook easeml._deployed_run
# answers with the run in predict_test.run (the cache follows its answer)
my $deployed_run = $node->safe_psql('postgres',
	q{SELECT pg_get_functiondef('easeml._deployed_run(bigint)'::regprocedure)});
$node->safe_psql('postgres', q{
	CREATE OR REPLACE FUNCTION easeml._deployed_run(task_id bigint) RETURNS bigint
	LANGUAGE sql STABLE AS $$ SELECT current_setting('predict_test.run')::bigint $$});

my $runs = $node->safe_psql('postgres', q{
	SELECT r.id, t.name, t.kind, t.target, m.family, r.score, r.log_path,
		   format('easeml_snapshots.%I', easeml._snapshot_name(t.id, r.snapshot_version))
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.status = 'succeeded' AND r.purpose = 'select' ORDER BY t.name, m.family});
my %families;
for my $line (split /\n/, $runs)
{
	my ($run, $task, $kind, $target, $family, $score, $log, $snap) = split /\|/, $line;
	my $file = dirname($log) . '/validation_rows.txt';
	my $rows = join(',', split(/\n/, slurp_file($file)));
	# the trainer's row i is the i-th row of its COPY of the snapshot
	my $scored = $kind eq 'classification'
	  ? "avg((easeml.predict('$task', s.s) = (s.s).\"$target\"::text)::int)"
	  : "1 - sum(((s.s).\"$target\" - easeml.predict_value('$task', s.s)) ^ 2)
			 / sum(((s.s).\"$target\" - (SELECT avg((x.s).\"$target\") FROM v x)) ^ 2)";
	my $sql_score = query_as($node, 'lab_p', qq{
		SET predict_test.run = $run;
		WITH s AS (SELECT s, row_number() OVER (ORDER BY ctid) - 1 AS i FROM $snap s),
			 v AS (SELECT s.* FROM s WHERE i = ANY ('{$rows}'::int[]))
		SELECT round(($scored)::numeric, 6) FROM v s});
	cmp_ok(abs($sql_score - $score), '<=', 0.005,
		"$task/$family: predicted in SQL $sql_score, recorded $score");
	$families{$family} = 1;
}
is(join(',', sort keys %families),
	'cnn,gbt,gnb,knn,linear_svm,mlp,random_forest,ridge,softmax',
	'every built-in family was predicted in SQL');

# the deployed run serves by default, with its refit on every row; another
# tenant cannot use the task
$node->safe_psql('postgres', $deployed_run);
is($node->safe_psql('postgres', q{
	SELECT string_agg(d.task || ':' || d.refit_status || ':' || (d.n_train = t.n_rows)
					  || ':' || (d.artifact_run_id = easeml._deployed_run(t.id)), ',' ORDER BY d.task)
	  FROM easeml.deployed d JOIN easeml.tasks t ON t.id = d.task_id}),
	'diabetes:succeeded:true:true,digits:succeeded:true:true,penguins:succeeded:true:true,stocks:succeeded:true:true',
	'each deployed run\'s refit trained on every row of the task and predicts');
my $stats_sql = q{SELECT coalesce(sum(predicted_rows), 0) || '/' || coalesce(sum(imputed_rows), 0)
	|| '/' || coalesce(sum(unknown_category_rows), 0)
	  FROM easeml.prediction_stats WHERE task = 'penguins' AND serving};
my ($rows0, $imputed0, $unknown0) = split m{/}, query_as($node, 'lab_p', $stats_sql);
is(query_as($node, 'lab_p', q{
	SELECT count(*) FILTER (WHERE easeml.predict('penguins', p) = p.label) > 0.9 * count(*)
	  FROM public.penguins p}), 't', 'penguins: the deployed run predicts the source\'s rows');

# a session keeps at most easeml.predict_cache_models parsed models: with
# room for one, two tasks in one statement (the first is evicted while its
# statement still holds it) and again in later statements (each is parsed
# again) predict what they predict with the default cache
my $both = q{SELECT (SELECT md5(string_agg(easeml.predict('penguins', p), ',')) FROM public.penguins p)
	|| (SELECT md5(string_agg(easeml.predict('digits', d), ',')) FROM public.digits d);};
my $cached = query_as($node, 'lab_p', $both);
is(query_as($node, 'lab_p', "SET easeml.predict_cache_models = 1; $both $both $both"),
	join("\n", ($cached) x 3), 'a one-model cache predicts what the default cache predicts');
my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT easeml.predict('penguins', p) FROM public.penguins p LIMIT 1},
	extra_params => [ '-U', 'lab_q' ]);
like($err, qr/task "penguins" does not exist/, 'another tenant cannot predict with the task');

# [inputs] easeml.prediction_stats: the five statements above predicted
# every penguin with the deployed run; the rows with a gap (sex) were
# filled in, no category was unknown; another tenant sees none of it
my ($n, $gaps) = split /\|/, $node->safe_psql('postgres',
	q{SELECT count(*), count(*) FILTER (WHERE NOT (p IS NOT NULL)) FROM public.penguins p});
my ($rows1, $imputed1, $unknown1) = split m{/}, query_as($node, 'lab_p', $stats_sql);
is(($rows1 - $rows0) . '/' . ($imputed1 - $imputed0) . '/' . ($unknown1 - $unknown0),
	5 * $n . '/' . 5 * $gaps . '/0', "prediction_stats: 5 x $n rows, 5 x $gaps with a gap, none unknown");
cmp_ok($gaps, '>', 0, 'penguins has rows with a gap');
is(query_as($node, 'lab_q', 'SELECT count(*) FROM easeml.prediction_stats'), '0',
	'prediction_stats: another tenant sees none of it');
# a category spelled otherwise is unknown: counted, and refused with strict
my $male = query_as($node, 'lab_p', q{
	SELECT format('ARRAY[%s]::text[]', string_agg(CASE WHEN f = 'sex' THEN quote_literal('Male') ELSE 'NULL' END,
												   ', ' ORDER BY o))
	  FROM easeml.tasks t, unnest(t.features) WITH ORDINALITY u(f, o) WHERE t.name = 'penguins'});
query_as($node, 'lab_p', "SELECT easeml.predict('penguins', $male)");
my ($rows2, $imputed2, $unknown2) = split m{/}, query_as($node, 'lab_p', $stats_sql);
is(($rows2 - $rows1) . '/' . ($imputed2 - $imputed1) . '/' . ($unknown2 - $unknown1), '1/1/1',
	"prediction_stats: 'Male' with the rest missing is one row, imputed and unknown");
($rc, $out, $err) = $node->psql('postgres',
	"SELECT easeml.predict('penguins', $male, strict => true)",
	extra_params => [ '-U', 'lab_p' ]);
like($err, qr/ERROR:  feature "sex" of task "penguins" has the value "Male", a category the model was not trained on.*HINT:  The model knows FEMALE, MALE/s,
	'strict: the unknown category is an error naming the feature, the value and the known values');
# the counters are in shared memory: they start again with the server
$node->restart;
is(query_as($node, 'lab_p', 'SELECT count(*) FROM easeml.prediction_stats'), '0',
	'prediction_stats: the counters start again when the server restarts');

# easeml.predict resolves its task under the caller's search_path: another
# tenant who may create in public (as before PostgreSQL 15) plants an
# unnest(text[]) and an =(oid, regclass), which would win over
# pg_catalog's; neither runs in lab_p's predict, which still predicts
$node->safe_psql('postgres', q{
	GRANT CREATE ON SCHEMA public TO lab_q;
	CREATE TABLE public.loot (who name);
	GRANT INSERT ON public.loot TO PUBLIC;});
query_as($node, 'lab_q', q{
	CREATE FUNCTION public.unnest(a text[]) RETURNS SETOF text LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.loot VALUES (current_user);
		RETURN QUERY SELECT * FROM pg_catalog.unnest(a);
	END $$;
	CREATE FUNCTION public.planted_eq(oid, regclass) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.loot VALUES (current_user);
		RETURN $1 = $2::oid;
	END $$;
	CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.planted_eq);});
is(query_as($node, 'lab_p', q{SELECT md5(string_agg(easeml.predict('penguins', p), ',')) FROM public.penguins p}),
	substr($cached, 0, 32),
	'predict, with another tenant\'s functions on its search_path, predicts as before');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.loot'), '0',
	'none of the planted functions ran in it');

done_testing();
