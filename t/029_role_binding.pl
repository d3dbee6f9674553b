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

# ---- easeml.rename_tenant ------------------------------------------------------
# The administrator's supported way (docs/security.md, "Roles"): rename the
# role, then the tenant.  The tenant's registration, tasks, runs, events,
# decisions, artifacts and deployments move to the new name in one
# transaction, its snapshot stays readable, and it acts under the new name.
# (its run failed while the role was called lab_new: the tenant takes the
# task up again)
query_as($node, 'lab_r', q{
	UPDATE easeml.tasks SET status = 'active', max_runs = 2 WHERE name = 'renamed_task'});
ok($node->poll_query_until('postgres', q{
	SELECT t.status = 'completed' AND count(r.id) FILTER (WHERE r.status = 'succeeded') > 0
	   AND count(r.id) FILTER (WHERE r.status IN ('queued', 'running')) = 0
	  FROM easeml.tasks t LEFT JOIN easeml.runs r ON r.task_id = t.id
	 WHERE t.name = 'renamed_task' GROUP BY t.status}),
	'the task of lab_r trains');
my $lab_r = query_as($node, 'lab_r', $own);
# (how many deployments: the best run may change with the second run)
like($lab_r, qr/^1 [1-9]\d* [1-9]\d* [1-9]\d* [1-9]\d* [1-9]\d* 1 [1-9]\d*$/, 'lab_r sees its rows') or diag($lab_r);
my $snap = $node->safe_psql('postgres', q{
	SELECT easeml._snapshot_name(id, snapshot_version) FROM easeml.tasks WHERE name = 'renamed_task'});
my $rows = query_as($node, 'lab_r', "SELECT count(*) FROM easeml_snapshots.$snap");
$node->safe_psql('postgres', 'ALTER ROLE lab_r RENAME TO lab_s');
is(query_as($node, 'lab_s', $own), '0 0 0 0 0 0 0 0', 'renamed, the role sees none of its rows');

sub as_admin_err
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql);
	return $err;
}
like(as_admin_err("SELECT easeml.add_tenant('lab_s')"),
	qr/HINT:  SELECT easeml.rename_tenant\('lab_r', 'lab_s'\)/, 'add_tenant\'s hint names rename_tenant');

# another tenant can neither call it nor take the rows
make_tenant($node, 'thief', 'public.iris');
my ($trc, $tout, $terr) = $node->psql('postgres', "SELECT easeml.rename_tenant('lab_r', 'thief')",
	extra_params => [ '-U', 'thief' ]);
like($terr, qr/permission denied for function rename_tenant/, 'a tenant may not call rename_tenant');
$node->safe_psql('postgres', 'GRANT EXECUTE ON FUNCTION easeml.rename_tenant(name, name) TO thief');
($trc, $tout, $terr) = $node->psql('postgres', "SELECT easeml.rename_tenant('lab_r', 'thief')",
	extra_params => [ '-U', 'thief' ]);
like($terr, qr/only a superuser may rename a tenant/, '... nor with EXECUTE granted');
$node->safe_psql('postgres', 'REVOKE EXECUTE ON FUNCTION easeml.rename_tenant(name, name) FROM thief');
like(as_admin_err("SELECT easeml.rename_tenant('lab_r', 'thief')"),
	qr/ERROR:  the role of tenant "lab_r" is called "lab_s", not "thief"\n.*HINT:  .*rename_tenant\('lab_r', 'lab_s'\)/s,
	'an administrator cannot move a tenant to another role\'s name');
like(as_admin_err("SELECT easeml.rename_tenant('thief', 'lab_r')"),
	qr/ERROR:  the role of tenant "thief" is still called "thief"/,
	'nor a tenant whose role was not renamed');
like(as_admin_err("SELECT easeml.rename_tenant('nobody', 'lab_s')"),
	qr/ERROR:  tenant "nobody" does not exist/, 'an unknown tenant is refused');
# a name a tenant already has (that tenant's role was dropped)
$node->safe_psql('postgres', q{
	CREATE ROLE ghost LOGIN;
	SELECT easeml.add_tenant('ghost');
	DROP ROLE ghost;
	ALTER ROLE lab_s RENAME TO ghost;});
like(as_admin_err("SELECT easeml.rename_tenant('lab_r', 'ghost')"),
	qr/ERROR:  tenant "ghost" already exists/, 'a name another tenant has is refused');
like(as_admin_err("SELECT easeml.rename_tenant('ghost', 'lab_r')"),
	qr/ERROR:  the role of tenant "ghost" no longer exists/, 'a tenant whose role was dropped is not renamed');
$node->safe_psql('postgres', q{
	ALTER ROLE ghost RENAME TO lab_s;
	DELETE FROM easeml.tenants WHERE name = 'ghost';});
is($node->safe_psql('postgres', q{SELECT count(*) FROM easeml.tasks WHERE tenant = 'lab_r'}), '1',
	'the refusals moved nothing');

# a snapshot being read (a trainer's COPY) holds the rename off for at most
# 5 s, while every easeml table is locked: it gives up, moving nothing
my $reader = $node->background_psql('postgres');
$reader->query_safe("BEGIN; SELECT count(*) FROM easeml_snapshots.$snap;");
my $t_lock = time;
like(as_admin_err("SELECT easeml.rename_tenant('lab_r', 'lab_s')"),
	qr/ERROR:  tenant "lab_r" was not renamed: a lock on one of its snapshots or rows was held for 5 seconds\n.*HINT:  .*pg_locks/s,
	'a snapshot being read makes the rename give up, with a hint');
cmp_ok(time - $t_lock, '<', 50, '... after its lock timeout, not after the reader ends');
$reader->query_safe('COMMIT');
$reader->quit;
is($node->safe_psql('postgres', q{SELECT count(*) FROM easeml.tasks WHERE tenant = 'lab_r'}), '1',
	'... and moved nothing');

is($node->safe_psql('postgres', "SELECT easeml.rename_tenant('lab_r', 'lab_s')"), '1',
	'the administrator renames the tenant: one task moved');
is(query_as($node, 'lab_s', $own), $lab_r, 'the renamed role sees all its rows again');
is($node->safe_psql('postgres', q{
	SELECT string_agg(s.relname || '=' || s.n, ',' ORDER BY s.relname)
	  FROM (SELECT c.relname,
				   (xpath('/row/n/text()',
						  query_to_xml(format('SELECT count(*) AS n FROM %s WHERE tenant = %L',
											  c.oid::regclass, 'lab_r'), false, false, '')))[1]::text AS n
			  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
			 WHERE c.relnamespace = 'easeml'::regnamespace AND c.relkind = 'r'
			   AND a.attname = 'tenant' AND a.atttypid = 'name'::regtype AND NOT a.attisdropped
			 OFFSET 0) s
	 WHERE s.n <> '0'}),
	'', 'no row of any easeml table is left under the old name');
is($node->safe_psql('postgres', q{
	SELECT name || ' ' || (role_oid = 'lab_s'::regrole) FROM easeml.tenants WHERE role_oid = 'lab_s'::regrole}),
	'lab_s true', 'the registration has the new name, bound to the same role');
is(query_as($node, 'lab_s', "SELECT count(*) FROM easeml_snapshots.$snap"), $rows,
	'its snapshot is readable under the new name');
my $succeeded = q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'renamed_task' AND r.status = 'succeeded'};
my $before_runs = query_as($node, 'lab_s', $succeeded);
my $queued = query_as($node, 'lab_s', "SELECT easeml.enqueue('renamed_task', 'gnb')");
ok($node->poll_query_until('postgres', qq{
	SELECT status = 'succeeded' AND tenant = 'lab_s' FROM easeml.runs WHERE id = $queued}),
	'the tenant queues a run of its task, and it trains under the new name');
is(query_as($node, 'lab_s', $succeeded), $before_runs + 1, '... and the tenant sees it with its others');
query_as($node, 'lab_s', q{UPDATE easeml.tasks SET status = 'paused' WHERE name = 'renamed_task'});
is($node->safe_psql('postgres', q{SELECT status FROM easeml.tasks WHERE name = 'renamed_task'}), 'paused',
	'... and pauses it');
is(query_as($node, 'thief', $own), '0 0 0 0 0 0 1 0', 'the other tenant sees none of them');

$node->stop;
done_testing();
