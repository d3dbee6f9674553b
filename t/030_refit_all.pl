# Refit on every row (docs/results.md section 1): a deployed run is trained
# again on every row of its snapshot, and that artifact predicts, while the
# deployment keeps the run and its validation score.  With refit_all off
# the split model serves.  A refit is no selection observation (no score,
# not on the leaderboard), a refit that fails leaves the split model
# serving and says why, and deploying a run refitted before serves its
# refit at once.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('refit');
my $tmp = PostgreSQL::Test::Utils::tempdir();
load_dataset($node, 'wine', 'wine');
make_tenant($node, 'lab_r', 'public.wine');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'softmax-l2-1e-3')});
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM public.wine');
is($rows, '178', 'wine has 178 rows');

# wine refits (the default); wine_split keeps the split model; wine_folds
# is a 5-fold task, whose split model trained on 4 folds
query_as($node, 'lab_r', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs, auto_deploy)
		VALUES ('wine', 'public.wine', 'label', 2, false);
	INSERT INTO easeml.tasks (name, source, target, max_runs, refit_all)
		VALUES ('wine_split', 'public.wine', 'label', 2, false);
	INSERT INTO easeml.tasks (name, source, target, max_runs, folds)
		VALUES ('wine_folds', 'public.wine', 'label', 1, 5);});
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 3 FROM easeml.tasks WHERE status = 'completed'}),
	'every task tries its candidates');
# wine deploys its best run once both have ended: deploying the first run
# to finish (auto_deploy) would refit it while the other still runs, and
# on a loaded machine that refit can succeed before the other run ends,
# so "the other run" below would already have a refit to serve
is(query_as($node, 'lab_r', "SELECT easeml.deploy('wine') IS NOT NULL"), 't', 'wine deploys its best run');
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 2 FROM easeml.deployed
		 WHERE task IN ('wine', 'wine_folds') AND refitted_at IS NOT NULL}),
	'the deployments of the refitting tasks swap in their refits');

# what each task deploys
my %d;
for my $line (split /\n/, query_as($node, 'lab_r', q{
	SELECT d.task, d.run_id, d.score, d.artifact_run_id, d.n_train, d.refit_all,
		   coalesce(d.refit_run_id, 0), coalesce(d.refit_status, '-'),
		   (SELECT l.run_id FROM easeml.leaderboard l WHERE l.task = d.task AND l.rank = 1),
		   (SELECT r.score FROM easeml.runs r WHERE r.id = d.run_id),
		   (SELECT (r.metrics ->> 'n_train')::int FROM easeml.runs r WHERE r.id = d.run_id)
	  FROM easeml.deployed d ORDER BY d.task}))
{
	my @f = split /\|/, $line;
	$d{ $f[0] } = { run => $f[1], score => $f[2], artifact => $f[3], n_train => $f[4],
		refit_all => $f[5], refit => $f[6], refit_status => $f[7], best => $f[8],
		run_score => $f[9], run_n_train => $f[10] };
}
is($d{wine}{run}, $d{wine}{best}, 'wine: the deployment names the leaderboard\'s best run');
is($d{wine}{score}, $d{wine}{run_score}, 'wine: and keeps its validation score');
is($d{wine}{n_train}, $rows, 'wine: the deployed artifact trained on every row (easeml.deployed.n_train)');
is($d{wine}{run_n_train}, '142', 'wine: the run it was chosen by trained on the training split (142 rows)');
ok($d{wine}{artifact} == $d{wine}{refit} && $d{wine}{artifact} != $d{wine}{run},
	'wine: the artifact that predicts is the refit\'s');
is($d{wine}{refit_status}, 'succeeded', 'wine: its refit succeeded');
is($d{wine_folds}{n_train}, $rows, 'wine_folds: the refit of a 5-fold run trained on every row');
ok($d{wine_folds}{run_n_train} < $rows, "wine_folds: its run trained on fewer ($d{wine_folds}{run_n_train})");
is($d{wine_split}{refit_all}, 'f', 'wine_split: refit_all is off');
is($d{wine_split}{n_train}, '142', 'wine_split: the split model serves, trained on the training split');
ok($d{wine_split}{artifact} == $d{wine_split}{run} && $d{wine_split}{refit} == 0,
	'wine_split: its own artifact predicts, and no refit was queued');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine_split' AND r.purpose = 'refit'}), '0', 'wine_split: no refit run');

# a refit is no selection observation
my $refit = $d{wine}{refit};
is($node->safe_psql('postgres', qq{
	SELECT r.purpose || ' ' || r.refit_of || ' ' || r.status || ' ' || (r.score IS NULL)
		   || ' ' || (r.metrics ->> 'train_all') || ' ' || r.snapshot_version
		   || ' ' || (r.snapshot_version = s.snapshot_version)
	  FROM easeml.runs r JOIN easeml.runs s ON s.id = r.refit_of WHERE r.id = $refit}),
	"refit $d{wine}{run} succeeded true true 1 true",
	'the refit run: purpose refit, of the deployed run, on its snapshot, no score');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM easeml.leaderboard WHERE run_id = $refit}), '0', 'the refit is not on the leaderboard');
is($node->safe_psql('postgres', q{
	SELECT succeeded || '/' || active FROM easeml.task_overview WHERE task = 'wine'}), '2/0',
	'task_overview counts the two selection runs only');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM easeml.decisions WHERE run_id = $refit}), '0', 'no decision chose the refit');
is($node->safe_psql('postgres', qq{
	SELECT string_agg(status, ',' ORDER BY id) FROM easeml.run_events WHERE run_id = $refit}),
	'queued,running,succeeded', 'the refit\'s state changes are run events');

# predict uses the refit's artifact
is($node->safe_psql('postgres', q{
	SELECT easeml._deployed_run(id) FROM easeml.tasks WHERE name = 'wine'}), $refit,
	'easeml._deployed_run answers with the refit');
is(query_as($node, 'lab_r', q{
	SELECT count(*) FILTER (WHERE easeml.predict('wine', w) = w.label) > 0.9 * count(*)
	  FROM public.wine w}), 't', 'the refit predicts the source\'s rows');
is(query_as($node, 'lab_r', q{
	SELECT count(*) FROM public.wine w WHERE easeml.predict('wine_split', w) IS NULL}), '0',
	'the split model of wine_split predicts too');

# a refit cannot be deployed by id
my ($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.deploy('wine', ${refit}::bigint)",
	extra_params => [ '-U', 'lab_r' ]);
like($err, qr/cannot be deployed: it is the refit of run $d{wine}{run} on every row/,
	'deploying a refit by id is refused');

# deploy the other run while refits fail: the split model serves, and the
# deployment says why its refit failed
my $other = $node->safe_psql('postgres', qq{
	SELECT r.id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine' AND r.purpose = 'select' AND r.id <> $d{wine}{run}});
my $failing = trainer_script($tmp, 'failing_trainer', 'echo "refit test: no trainer" >&2; exit 1');
$node->safe_psql('postgres', "ALTER SYSTEM SET easeml.trainer_path = '$failing'");
reload_worker($node);
is(query_as($node, 'lab_r', "SELECT easeml.deploy('wine', ${other}::bigint)"), $other,
	'another run is deployed');
ok( $node->poll_query_until('postgres', q{
		SELECT refit_status = 'failed' FROM easeml.deployed WHERE task = 'wine'}),
	'its refit fails');
is(query_as($node, 'lab_r', q{
	SELECT run_id || ' ' || artifact_run_id || ' ' || n_train || ' ' || (refitted_at IS NULL)
		   || ' ' || (refit_error IS NOT NULL)
	  FROM easeml.deployed WHERE task = 'wine'}), "$other $other 142 true true",
	'the split model keeps serving, and the deployment says why the refit failed');
is(query_as($node, 'lab_r', q{
	SELECT count(*) FROM public.wine w WHERE easeml.predict('wine', w) IS NULL}), '0',
	'the split model predicts');
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.trainer_path; SELECT pg_reload_conf();});

# deploying the first run again: its refit serves at once, no new refit
my $before = $node->safe_psql('postgres', "SELECT count(*) FROM easeml.runs WHERE purpose = 'refit'");
is(query_as($node, 'lab_r', "SELECT easeml.deploy('wine', $d{wine}{run}::bigint)"), $d{wine}{run},
	'the first run is deployed again');
is(query_as($node, 'lab_r', q{
	SELECT artifact_run_id || ' ' || n_train || ' ' || (refitted_at IS NOT NULL) FROM easeml.deployed WHERE task = 'wine'}),
	"$refit $rows true", 'its earlier refit predicts at once');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.runs WHERE purpose = 'refit'"), $before,
	'no refit was queued');
is($node->safe_psql('postgres', q{
	SELECT string_agg(x.strategy || ':' || (x.refit_run_id IS NOT NULL) || ':' || (x.refitted_at IS NOT NULL), ',' ORDER BY x.id)
	  FROM (SELECT d.* FROM easeml.deployments d JOIN easeml.tasks t ON t.id = d.task_id
			 WHERE t.name = 'wine' ORDER BY d.id DESC LIMIT 3) x}),
	'best:true:true,run:true:false,run:true:true',
	'easeml.deployments records each deployment with its refit and when it took over');

# the other tenant-visible rule: refit_all can be changed by the tenant
query_as($node, 'lab_r', "UPDATE easeml.tasks SET refit_all = false WHERE name = 'wine'");
is($node->safe_psql('postgres', "SELECT refit_all FROM easeml.tasks WHERE name = 'wine'"), 'f',
	'a tenant switches refit_all off with UPDATE');

done_testing();
