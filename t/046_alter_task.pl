# easeml.alter_task on runs the real scheduler and trainer made (docs/sql.md):
# every run records the quality of every metric of its kind; a new metric
# ranks the finished runs again without training (leaderboard, best so far,
# the automatic deployment, and the scheduler's view of the task); new
# features take a new snapshot version, the scheduler trains the candidates
# again on it, the old runs stay as stale history and are never deployed,
# and predict reads the new features.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('alter');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'softmax-l2-1e-4', 'knn-5', 'rf-50')});

query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
ok( $node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'the task tries every candidate');
my $succeeded = query_as($node, 'lab_a',
	"SELECT count(*) FROM easeml.runs WHERE status = 'succeeded' AND purpose = 'select'");
cmp_ok($succeeded, '>=', 3, "runs succeeded ($succeeded)");

# ---- every metric's quality is recorded -----------------------------------
is( query_as(
		$node, 'lab_a', q{
	SELECT count(*) FROM easeml.runs r
	 WHERE r.status = 'succeeded' AND r.purpose = 'select'
	   AND (SELECT count(*) FROM jsonb_object_keys(r.metrics -> 'quality')) = 5
	   AND (SELECT count(*) FROM jsonb_object_keys(r.metrics -> 'quality_se')) = 5
	   AND abs((r.metrics -> 'quality' ->> 'accuracy')::float8 - r.score) < 1e-12
	   AND abs((r.metrics -> 'quality' ->> 'log_loss')::float8
			   - exp(-(r.metrics ->> 'log_loss')::float8)) < 1e-9}),
	$succeeded,
	'each run records the quality of all five classification metrics, its score among them');

# ---- a new metric ranks the runs again ------------------------------------
my $trained = $node->safe_psql('postgres', 'SELECT count(*) FROM easeml.runs');
is( query_as(
		$node, 'lab_a',
		"SELECT metric || '/' || snapshot_version FROM easeml.alter_task('iris', metric => 'log_loss')"),
	'log_loss/1',
	'alter_task sets the metric and keeps the snapshot');
is(query_as($node, 'lab_a', q{
	SELECT count(*) FROM easeml.leaderboard
	 WHERE task = 'iris' AND metric = 'log_loss'
	   AND abs(score - exp(-metric_value)) < 1e-9 AND NOT stale}),
	$succeeded, 'every run is scored by its log loss: exp(-log loss)');
# (runs within one standard error of the best rank first, the faster first)
is( query_as(
		$node, 'lab_a', q{
	SELECT string_agg(run_id::text, ',' ORDER BY rank, run_id) FROM easeml.leaderboard
	 WHERE task = 'iris' AND NOT tied_with_best}),
	query_as(
		$node, 'lab_a', q{
	SELECT string_agg(r.id::text, ',' ORDER BY (r.metrics ->> 'log_loss')::float8, r.seconds, r.id)
	  FROM easeml.runs r JOIN easeml.leaderboard l ON l.run_id = r.id WHERE NOT l.tied_with_best}),
	'the leaderboard ranks the runs by log loss, lowest first');
is( query_as(
		$node, 'lab_a', q{
	SELECT l.tied_with_best || '/'
		   || ((SELECT coalesce(max(rank), 0) FROM easeml.leaderboard WHERE task = 'iris' AND tied_with_best)
			   < (SELECT coalesce(min(rank), 1000) FROM easeml.leaderboard WHERE task = 'iris' AND NOT tied_with_best))
	  FROM easeml.leaderboard l JOIN easeml.runs r ON r.id = l.run_id
	 WHERE l.task = 'iris' ORDER BY (r.metrics ->> 'log_loss')::float8, r.id LIMIT 1}),
	'true/true',
	'the run of the lowest log loss is among the best, which rank first');
is(query_as($node, 'lab_a', q{
	SELECT count(*) FROM easeml.leaderboard l JOIN easeml.runs r ON r.id = l.run_id
	 WHERE l.task = 'iris' AND l.score_se = (r.metrics -> 'quality_se' ->> 'log_loss')::float8}),
	$succeeded, 'each score\'s standard error is that of its log loss quality');
my $leader = query_as($node, 'lab_a',
	"SELECT run_id || '/' || model FROM easeml.leaderboard WHERE task = 'iris' AND rank = 1");
is( query_as(
		$node, 'lab_a',
		"SELECT b.run_id || '/' || o.best_model FROM easeml.task_overview o, easeml.leaderboard b"
		  . " WHERE o.task = 'iris' AND b.task = 'iris' AND b.rank = 1"),
	$leader,
	'the best so far is the best by log loss');
is(query_as($node, 'lab_a', "SELECT run_id || '/' || model FROM easeml.deployed WHERE task = 'iris'"),
	$leader, 'the task deploys its best run by log loss');
is($node->safe_psql('postgres', 'SELECT count(*) FROM easeml.runs'),
	$trained, 'nothing was trained again');
# the scheduler reads the new scores: its prior history holds them
sleep 1;
is( query_as(
		$node, 'lab_a', "SELECT status FROM easeml.tasks WHERE name = 'iris'"),
	'completed',
	'the task stays completed');

# ---- new features: a new snapshot version ------------------------------
is( query_as(
		$node, 'lab_a', q{
	SELECT features::text || '/' || snapshot_version || '/' || features_version
	  FROM easeml.alter_task('iris', features => '{petal_length,petal_width}')}),
	'{petal_length,petal_width}/2/2',
	'new features take snapshot version 2');
ok( $node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'the task tries every candidate again, on the new version');
is( query_as(
		$node, 'lab_a', q{
	SELECT count(*) FILTER (WHERE snapshot_version = 1 AND stale)
		   || '/' || bool_and(stale = (snapshot_version = 1))
	  FROM easeml.leaderboard WHERE task = 'iris'}),
	"$succeeded/true",
	'the runs of version 1 stay on the leaderboard, stale');
is( query_as(
		$node, 'lab_a', q{
	SELECT r.snapshot_version || '/' || (r.metrics ->> 'n_features') || '/' || (r.metrics ->> 'metric')
	  FROM easeml.deployed d JOIN easeml.runs r ON r.id = d.run_id WHERE d.task = 'iris'}),
	'2/2/log_loss',
	'the deployed run is of version 2, trained on two features for log loss');
like(query_as($node, 'lab_a', q{SELECT easeml.predict('iris', ARRAY[1.4, 0.2]::float8[])}),
	qr/^\S+$/, 'predict reads the two new features');
my $old_best = query_as($node, 'lab_a',
	"SELECT run_id FROM easeml.leaderboard WHERE task = 'iris' AND stale ORDER BY rank LIMIT 1");
my ($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.deploy('iris', ${old_best}::bigint)",
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/trained on the task's earlier features/, 'a run of the old features is not deployed');

done_testing();
