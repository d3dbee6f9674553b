# A tenant declares tasks with one INSERT; the scheduler trains real models
# on real data in separate processes and the leaderboard fills.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = easeml_node('end_to_end', 'easeml.artifact_max_bytes' => '4kB');

load_dataset($node, 'wine', 'wine');
load_dataset($node, 'diabetes_regression', 'diabetes');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.wine', 'public.iris');
make_tenant($node, 'lab_b', 'public.diabetes');

ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'easeml scheduler'"),
	'the scheduler worker runs');
my $worker = scheduler_pid($node);

query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (tenant, name, source, target) VALUES ('lab_a', 'wine', 'public.wine', 'label')");
query_as($node, 'lab_b',
	"INSERT INTO easeml.tasks (name, source, target, kind) VALUES ('diabetes', 'public.diabetes', 'target', 'regression')");

ok( $node->poll_query_until('postgres', q{
	SELECT count(*) >= 4 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine' AND r.status = 'succeeded'}),
	'the wine task gets at least 4 succeeded runs');

# the best model is far above chance (the largest class is 40% of wine)
my $best = query_as($node, 'lab_a',
	"SELECT score FROM easeml.leaderboard WHERE task = 'wine' AND rank = 1");
cmp_ok($best, '>', 0.85, "best wine validation accuracy $best is far above chance (0.40)");

# each finished run is fully recorded
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs
	 WHERE status = 'succeeded'
	   AND (pid IS NULL OR started_at IS NULL OR finished_at IS NULL OR seconds <= 0
			OR slot IS NULL OR log_path IS NULL OR (metrics->>'n_val')::int < 1
			OR NOT (metrics->>'peak_rss_bytes')::bigint > 0
			OR (metrics->>'rows_loaded')::int <> 178 AND (metrics->>'rows_loaded')::int <> 442)}),
	'0', 'succeeded runs record pid, slot, times, log path and metrics');
my $log = $node->safe_psql('postgres',
	"SELECT log_path FROM easeml.runs WHERE status = 'succeeded' ORDER BY id LIMIT 1");
ok(-s $log, 'the trainer log exists');
like(slurp_file($log), qr/loaded 178 rows/, 'the trainer log says what it loaded');

# live progress is recorded while iterative models train
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE m.family IN ('softmax', 'mlp') AND r.status = 'succeeded'
	   AND r.epoch > 0 AND r.loss IS NOT NULL AND r.progress_at <= r.finished_at}),
	'trainers report epoch and loss while they train');

# the GP math ran in the worker without starting a BLAS thread pool
open(my $st, '<', "/proc/$worker/status") or die "no /proc/$worker/status: $!";
my ($threads) = map { /^Threads:\s+(\d+)/ ? $1 : () } <$st>;
close($st);
is($threads, 1, 'the scheduler process is single-threaded after its decisions');

# decisions are recorded with the policy and the posterior
is( $node->safe_psql('postgres', q{
	SELECT count(*) > 0 AND bool_and(policy IS NOT NULL)
	  FROM easeml.decisions d JOIN easeml.runs r ON r.id = d.run_id}),
	't', 'every scheduler run has a decision row');

# the regression task trains regressors and reports R^2 and RMSE
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) >= 2 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'diabetes' AND r.status = 'succeeded'}),
	'the regression task gets succeeded runs');
is( query_as($node, 'lab_b', q{
	SELECT bool_and(metrics ? 'rmse' AND (metrics->>'rmse')::float8 > 0)
	  FROM easeml.runs WHERE status = 'succeeded'}),
	't', 'regression runs report RMSE');
is(query_as($node, 'lab_b', "SELECT count(*) FROM easeml.leaderboard WHERE task = 'wine'"),
	'0', 'a tenant does not see another tenant\'s leaderboard');

# every candidate gets tried, then the task is completed
ok( $node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine'"),
	'the wine task completes after every candidate was tried');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT model_id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine' AND r.purpose = 'select' GROUP BY model_id HAVING count(*) > 1) d}),
	'0', 'no candidate was trained twice (a refit on every row is no candidate\'s run)');

# artifacts: small ones kept for every succeeded run, large ones only for the best
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.leaderboard l JOIN easeml.artifacts a ON a.run_id = l.run_id
	 WHERE l.task = 'wine' AND l.rank = 1 AND l.run_id = (SELECT min(run_id) FROM easeml.leaderboard
	   WHERE task = 'wine' AND rank = 1)}),
	'1', 'the best wine run keeps its artifact');
cmp_ok( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs WHERE (metrics->>'artifact_bytes')::bigint > 4096}),
	'>', 1, 'several runs produced artifacts above the 4kB cap');
# (the rule of easeml._keep_artifacts, stated again: the best run, what
# deploy('best') takes, the latest two deployments not rolled back with
# their refits, and the members of any of those that is an ensemble -- the
# task's last ensemble, queued when it completes, may be its best)
is( $node->safe_psql('postgres', q{
	WITH kept AS (
		SELECT t.id AS task_id, k.id
		  FROM easeml.tasks t
		 CROSS JOIN LATERAL (
			(SELECT b.id FROM easeml.runs b WHERE b.task_id = t.id AND b.status = 'succeeded'
				AND b.score IS NOT NULL ORDER BY b.score DESC, b.seconds, b.id LIMIT 1)
			UNION ALL SELECT easeml._best_deployable(t.id)
			UNION ALL SELECT v.id
			  FROM (SELECT d.run_id, d.refit_run_id FROM easeml.deployments d
					 WHERE d.task_id = t.id AND d.rolled_back_at IS NULL
					 ORDER BY d.id DESC LIMIT 2) l
			 CROSS JOIN LATERAL (VALUES (l.run_id), (l.refit_run_id)) v (id)) k
		 WHERE k.id IS NOT NULL),
	members AS (
		SELECT (e ->> 'run_id')::bigint AS id
		  FROM kept JOIN easeml.runs x ON x.id = kept.id AND x.purpose = 'ensemble'
		 CROSS JOIN LATERAL jsonb_array_elements(coalesce(x.metrics -> 'members', '[]')) e)
	SELECT count(*) FROM easeml.artifacts a JOIN easeml.runs r ON r.id = a.run_id
	 WHERE a.bytes > 4096 AND r.status <> 'running'
	   AND r.id NOT IN (SELECT id FROM kept UNION ALL SELECT id FROM members)}),
	'0', 'no finished run but the best, the deployed one and the one a rollback returns to (their refits on every row, the members of such an ensemble) keeps an artifact above easeml.artifact_max_bytes');
cmp_ok( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.artifacts a JOIN easeml.runs r ON r.id = a.run_id
	 JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'wine'}),
	'>=', 5, 'small artifacts are kept for other succeeded runs');
is( $node->safe_psql('postgres', q{
	SELECT bool_and(substring(data FROM 1 FOR 8) = 'EASEMLA1'::bytea AND bytes = octet_length(data))
	  FROM easeml.artifacts}),
	't', 'artifacts carry the format magic and their size');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.artifacts a JOIN easeml.runs r ON r.id = a.run_id
	 WHERE r.status NOT IN ('succeeded', 'running')}),
	'0', 'only succeeded runs keep artifacts (a running one may have stored its own already)');
is(query_as($node, 'lab_b', "SELECT count(*) FROM easeml.artifacts WHERE tenant <> current_user"),
	'0', 'a tenant sees only its own artifacts');

# a reload keeps the worker; a long naptime shows the commit-time wake-up
my $reloaded_at = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
$node->safe_psql('postgres',
	"ALTER SYSTEM SET easeml.naptime = '10min'; SELECT pg_reload_conf();");
ok($node->poll_query_until('postgres',
		"SELECT status <> 'active' FROM easeml.tasks WHERE name = 'diabetes'"),
	'the regression task finishes');
# the worker has taken the reload once it ran a loop since (a reload
# wakes it; the finished task's runs did too)
ok($node->poll_query_until('postgres',
		"SELECT loop_at > '$reloaded_at' FROM easeml.scheduler_status()"),
	'the worker runs its loop after the reload');
is(scheduler_pid($node), $worker, 'the worker survives a configuration reload');

my $t0 = time();
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris'}),
	'a run of the new task starts');
my $waited = time() - $t0;
cmp_ok($waited, '<', 60,
	sprintf('the new task woke the scheduler (%.1f s) although it naps for 10 minutes', $waited));

# an admin changes the policy at run time; decisions say which one chose
set_policy($node, 'rr');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('iris_rr', 'public.iris', 'label', 2)});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	 WHERE t.name = 'iris_rr' AND d.policy = 'rr'}),
	'after ALTER SYSTEM SET easeml.policy and a reload, decisions are made by the new policy');
is($node->safe_psql('postgres', 'SELECT policy FROM easeml.scheduler_status()'), 'rr',
	'the scheduler reports the policy in force');

is(scheduler_pid($node), $worker, 'the same worker ran everything');

# pg_dump and pg_restore keep every task, run, event, decision and artifact
$node->safe_psql('postgres', "ALTER SYSTEM SET easeml.enabled = off; SELECT pg_reload_conf();");
# (a refit on every row queued as the scheduler stopped stays queued)
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM easeml.runs WHERE status = 'running'"),
	'nothing in flight before the dump');
# lab_a at its task limit: the restore brings its tasks and its limit back
$node->safe_psql('postgres', q{SELECT easeml.set_tenant_limits('lab_a',
	max_tasks => (SELECT count(*)::int FROM easeml.tasks WHERE tenant = 'lab_a'))});
my $dump = PostgreSQL::Test::Utils::tempdir() . '/easeml.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', $dump ],
	'pg_dump of a database with easeml');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'pg_restore into a new database');
my $counts = q{SELECT (SELECT count(*) FROM easeml.tasks) || '/' || (SELECT count(*) FROM easeml.runs)
	|| '/' || (SELECT count(*) FROM easeml.run_events) || '/' || (SELECT count(*) FROM easeml.decisions)
	|| '/' || (SELECT count(*) FROM easeml.artifacts) || '/' || (SELECT count(*) FROM easeml.models)};
is($node->safe_psql('restored', $counts), $node->safe_psql('postgres', $counts),
	'the restored database has the same tasks, runs, events, decisions, artifacts and models');
is($node->safe_psql('restored', q{SELECT max_tasks = (SELECT count(*) FROM easeml.tasks WHERE tenant = 'lab_a')
	FROM easeml.tenants WHERE name = 'lab_a'}), 't', 'a tenant at its task limit is restored with it');
my ($rc, $out, $err) = $node->psql('restored', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris_over', 'public.iris', 'label')},
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/may have at most \d+ task/, 'a declaration over the restored limit is refused');
$node->safe_psql('restored', q{SELECT easeml.set_tenant_limits('lab_a')});

# the sequences came along: new rows get ids past the restored ones
my $max_ids = q{SELECT (SELECT max(id) FROM easeml.tasks) || '/' || (SELECT max(id) FROM easeml.runs)
	|| '/' || (SELECT max(id) FROM easeml.run_events) || '/' || (SELECT max(id) FROM easeml.decisions)};
my ($task_max, $run_max, $event_max) = split m{/}, $node->safe_psql('restored', $max_ids);
$node->safe_psql('restored', q{
	INSERT INTO easeml.models (name, family, params) VALUES ('knn-7', 'knn', '{"k": 7}')},
	extra_params => [ '-U', 'postgres' ]);
my $new_task = $node->safe_psql('restored', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris_again', 'public.iris', 'label')
	RETURNING id}, extra_params => [ '-U', 'lab_a' ]);
my $new_run = $node->safe_psql('restored', q{SELECT easeml.enqueue('iris_again', 'knn-7')},
	extra_params => [ '-U', 'lab_a' ]);
cmp_ok($new_task, '>', $task_max, 'a task declared after pg_restore gets a new id');
cmp_ok($new_run, '>', $run_max, 'so does a run queued after pg_restore');
cmp_ok($node->safe_psql('restored', "SELECT max(id) FROM easeml.run_events WHERE run_id = $new_run"),
	'>', $event_max, 'and its event');
$node->stop;
done_testing();
