# A tenant is the role registered under its name, not any role that has
# the name later (issue 22 review, finding 6; docs/security.md, "Roles").
# Tenant "gone" trains and deploys a model; an administrator drops the role
# (DROP OWNED BY, DROP ROLE) without removing the tenant, and later a new
# role is made with the same name.  The new role sees none of the old
# tenant's tasks, runs, events, decisions, artifacts, deployments or
# progress, cannot drop, cancel, refresh, deploy or read the logs of them,
# cannot declare as the tenant, and the trainer refuses to read the old
# task's data as it.  add_tenant binds the name to the new role again, as
# an administrator's explicit act.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('role_binding');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'gone', 'public.iris');

# (refit_all off: one run, one artifact, no refit on every row to count)
query_as($node, 'gone', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs, refit_all)
	VALUES ('secret', 'public.iris', 'label', 1, false);});
ok($node->poll_query_until('postgres', q{
	SELECT status = 'completed' FROM easeml.tasks WHERE name = 'secret'}),
	'the tenant\'s task trains');
my $run = $node->safe_psql('postgres', q{
	SELECT r.id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'secret' AND r.status = 'succeeded'});

my $own = q{
	SELECT (SELECT count(*) FROM easeml.tasks) || ' ' || (SELECT count(*) FROM easeml.runs) || ' ' ||
		   (SELECT count(*) FROM easeml.run_events) || ' ' || (SELECT count(*) FROM easeml.decisions) || ' ' ||
		   (SELECT count(*) FROM easeml.artifacts) || ' ' || (SELECT count(*) FROM easeml.deployments) || ' ' ||
		   (SELECT count(*) FROM easeml.tenants) || ' ' || (SELECT count(*) FROM easeml.leaderboard)};
my $before = query_as($node, 'gone', $own);
like($before, qr/^1 1 [1-9]\d* [1-9]\d* 1 1 1 1$/,
	'the tenant sees its task, run, events, decisions, artifact, deployment, registration, leaderboard')
  or diag($before);

# the role goes, the tenant stays; another role gets the name
$node->safe_psql('postgres', q{
	DROP OWNED BY gone;
	DROP ROLE gone;
	CREATE ROLE gone LOGIN;
	GRANT SELECT ON public.iris TO gone;});
is(query_as($node, 'gone', $own), '0 0 0 0 0 0 0 0',
	'the new role with the name sees nothing of the old tenant\'s');

sub as_gone
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'gone' ]);
	return $err;
}
my $unbound = qr/role "gone" is not the role registered as tenant "gone"/;
like(as_gone("SELECT easeml.drop_task('secret')"), $unbound, 'drop_task is refused');
like(as_gone("SELECT easeml.cancel($run)"), $unbound, 'cancel is refused');
like(as_gone("SELECT easeml.refresh('secret')"), $unbound, 'refresh is refused');
like(as_gone("SELECT easeml.alter_task('secret', metric => 'log_loss')"), $unbound, 'alter_task is refused');
like(as_gone("UPDATE easeml.tasks SET metric = 'log_loss' WHERE name = 'secret'"), qr/^$/,
	'an UPDATE of the metric finds no row of the old tenant\'s');
like(as_gone("SELECT easeml.deploy('secret')"), $unbound, 'deploy is refused');
like(as_gone("SELECT easeml.rollback('secret')"), $unbound, 'rollback is refused');
like(as_gone("SELECT easeml.run_log($run)"), $unbound, 'run_log is refused');
like(as_gone("SELECT easeml.enqueue('secret', 'knn-1')"), qr/task "secret" does not exist for tenant "gone"/,
	'enqueue finds no task');
like(as_gone(q{INSERT INTO easeml.tasks (name, source, target) VALUES ('mine', 'public.iris', 'label')}),
	qr/role "gone" is not an easeml tenant/, 'it cannot declare as the tenant');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.tasks WHERE name = 'secret'"), '1',
	'the old tenant\'s task is still there');

# the trainer does not read the old task's data as the new role
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'active', max_runs = 2 WHERE name = 'secret'});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'secret' AND r.status = 'failed'}),
	'a new run of the old task fails');
like($node->safe_psql('postgres', q{
	SELECT min(r.error) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'secret' AND r.status = 'failed'}),
	$unbound, '... because the trainer refuses to act as the new role');

# an administrator's add_tenant makes the new role the tenant
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'paused' WHERE name = 'secret';
	SELECT easeml.add_tenant('gone');});
is(query_as($node, 'gone', 'SELECT count(*) FROM easeml.tasks'), '1',
	'after add_tenant the new role is the tenant');
is(query_as($node, 'gone', "SELECT easeml.drop_task('secret') > 0"), 't',
	'... and may drop the task');

# ---- a tenant's role renamed ---------------------------------------------------
# A tenant is bound by its role and its name (docs/security.md, "Roles"):
# the role renamed sees none of its rows; add_tenant under the new name is
# refused (it made a second tenant of the same role, whose old tasks stayed
# out of reach); the old name back gives the role its tasks again.
$node->safe_psql('postgres', q{
	CREATE ROLE lab_r LOGIN;
	SELECT easeml.add_tenant('lab_r');
	GRANT SELECT ON public.iris TO lab_r;});
query_as($node, 'lab_r', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs, refit_all)
	VALUES ('renamed_task', 'public.iris', 'label', 1, false);});
$node->safe_psql('postgres', 'ALTER ROLE lab_r RENAME TO lab_new');
is(query_as($node, 'lab_new', 'SELECT count(*) FROM easeml.tasks'), '0',
	'a renamed tenant role sees none of its tasks');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.add_tenant('lab_new')");
isnt($rc, 0, 'add_tenant under the new name is refused');
like($err, qr/ERROR:  role "lab_new" is already tenant "lab_r", registered under the name it had then/,
	'... saying which tenant the role is');
like($err, qr/HINT:  .*ALTER ROLE lab_new RENAME TO lab_r/, '... with the way back');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.tenants WHERE role_oid = 'lab_new'::regrole}), '1',
	'the role is one tenant');
($rc, $out, $err) = $node->psql('postgres', q{
	INSERT INTO easeml.tenants (name) VALUES ('lab_new')});
like($err, qr/tenants_role_oid_key/, 'a second row for the role is refused by the table too');
$node->safe_psql('postgres', 'ALTER ROLE lab_new RENAME TO lab_r');
is(query_as($node, 'lab_r', 'SELECT count(*) FROM easeml.tasks'), '1',
	'with its old name back the role has its task again');

$node->stop;
done_testing();
