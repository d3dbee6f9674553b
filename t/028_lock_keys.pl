# easeml's own serialisation cannot be held by a tenant (issue 22 review,
# finding 7).  Any role may take any advisory lock, so easeml's advisory
# keys (a task's deployments, a tenant's declarations under max_tasks) let
# one tenant hold up another: the victim's finished runs were never
# recorded, its deploys and declarations waited.  Those locks are now rows
# of tables a tenant cannot lock.  tc holds, in an open session, every
# advisory key easeml used for the victim; the victim declares under its
# task limit, its runs finish and are recorded, its best run is deployed
# and it deploys and rolls back by hand, each within a statement timeout.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('lock_keys');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'victim', 'public.iris');
make_tenant($node, 'tc', 'public.iris');
$node->safe_psql('postgres', "SELECT easeml.set_tenant_limits('victim', max_tasks => 5)");

# the victim's first task, paused until tc holds the keys
query_as($node, 'victim', q{
	BEGIN;
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('v1', 'public.iris', 'label', 2);
	UPDATE easeml.tasks SET status = 'paused' WHERE name = 'v1';
	COMMIT;});
my $v1 = $node->safe_psql('postgres', "SELECT id FROM easeml.tasks WHERE name = 'v1'");

# tc holds the keys easeml used: task ids are sequential, role names known
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'tc' ]);
$holder->query_safe(qq{
	SELECT pg_advisory_lock(hashtextextended('easeml.deployments', id)) FROM generate_series(1, 20) id;
	SELECT pg_advisory_lock(hashtext('easeml.tenant_limits'), hashtext('victim'));});
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	 WHERE l.locktype = 'advisory' AND a.usename = 'tc' AND l.granted}),
	'21', 'tc holds 21 advisory locks');

# the victim declares under its limit
my ($rc, $out, $err) = $node->psql('postgres', q{
	SET statement_timeout = '10s';
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('v2', 'public.iris', 'label', 1);},
	extra_params => [ '-U', 'victim' ]);
is($rc, 0, 'the victim declares a task while tc holds its declaration key') or diag($err);

# its runs finish, are recorded and the best one deployed
query_as($node, 'victim', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'v1'");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'v1'"),
	'the victim\'s task completes');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM easeml.runs WHERE task_id = $v1 AND status = 'succeeded' AND purpose = 'select'"),
	'2', 'both its runs were recorded as succeeded');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM easeml.deployments WHERE task_id = $v1 AND active"),
	'1', 'its best run was deployed');

# deploy the other run and roll back by hand
my $other = $node->safe_psql('postgres', qq{
	SELECT min(id) FROM easeml.runs
	 WHERE task_id = $v1 AND status = 'succeeded' AND purpose = 'select'
	   AND id NOT IN (SELECT run_id FROM easeml.deployments WHERE task_id = $v1 AND active)});
($rc, $out, $err) = $node->psql('postgres', qq{
	SET statement_timeout = '10s';
	SELECT easeml.deploy('v1', '$other') = $other;
	SELECT easeml.rollback('v1') <> $other;},
	extra_params => [ '-U', 'victim' ]);
is($rc, 0, 'the victim deploys and rolls back while tc holds the task\'s key') or diag($err);
is($out, "t\nt", '... deploying the run it named, and rolling back to the one before');

$holder->query_safe('SELECT pg_advisory_unlock_all()');
$holder->quit;

# easeml's own lock still serialises one task's deployments: a deploy in
# an open transaction holds the task's row of easeml.deployment_locks
my $locker = $node->background_psql('postgres', extra_params => [ '-U', 'victim' ]);
$locker->query_safe("SET client_min_messages = warning; BEGIN; SELECT easeml.deploy('v1', 'best');");
($rc, $out, $err) = $node->psql('postgres', q{
	SET lock_timeout = '500ms';
	SELECT easeml.rollback('v1');},
	extra_params => [ '-U', 'victim' ]);
like($err, qr/lock timeout/, 'a second deploy of the task waits for the first');
$locker->query_safe('COMMIT');
$locker->quit;
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.deployment_locks WHERE task_id = $v1"),
	'1', 'the task has one lock row');
query_as($node, 'victim', "SELECT easeml.drop_task('v1')");
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.deployment_locks WHERE task_id = $v1"),
	'0', 'it goes with the task');

$node->stop;
done_testing();
