# The trainer reads a task's rows with the tenant's own privileges, inside a
# read-only, security-restricted transaction: a tenant's code cannot take
# the trainer's identity, row-level security applies, and losing access
# fails the run.  A snapshot outlives no access: losing SELECT, or a policy
# that changed, refuses the snapshot to the tenant, to enqueue and to the
# trainer.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('security');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
make_tenant($node, 'lab_b', 'public.iris');

# lab_b's views call functions that try to become the superuser or to
# write down what they saw.  The declaration reads the source the way the
# trainer does (as the tenant, read-only, in a security-restricted
# operation), so views that misbehave every time are refused at once ...
$node->safe_psql('postgres', 'CREATE SCHEMA lab_b AUTHORIZATION lab_b');
query_as($node, 'lab_b', q{
	CREATE TABLE lab_b.loot (who text);
	CREATE FUNCTION lab_b.escalate(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
	BEGIN
		RESET ROLE;
		INSERT INTO lab_b.loot VALUES (current_user);
		RETURN x;
	END $$;
	CREATE VIEW lab_b.iris_v AS
	  SELECT lab_b.escalate(sepal_length) AS sepal_length, sepal_width, petal_length, petal_width, label
	    FROM public.iris;
	CREATE FUNCTION lab_b.scribble(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO lab_b.loot VALUES (current_user);
		RETURN x;
	END $$;
	CREATE VIEW lab_b.iris_w AS
	  SELECT lab_b.scribble(sepal_length) AS sepal_length, sepal_width, petal_length, petal_width, label
	    FROM public.iris;});
my ($rc, $out, $err) = $node->psql('postgres',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('escalate', 'lab_b.iris_v', 'label')",
	extra_params => [ '-U', 'lab_b' ]);
like($err, qr/cannot set parameter "role" within security-restricted operation/,
	'a view that changes role is refused at declaration');
($rc, $out, $err) = $node->psql('postgres',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('scribble', 'lab_b.iris_w', 'label')",
	extra_params => [ '-U', 'lab_b' ]);
like($err, qr/read-only transaction/, 'a view that writes is refused at declaration');

# ... also when a superuser declares for the tenant after SET ROLE, as the
# README's tour does: the view's RESET ROLE would make it a superuser
($rc, $out, $err) = $node->psql('postgres', q{
	SET ROLE lab_b;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('escalate', 'lab_b.iris_v', 'label')});
like($err, qr/cannot set parameter "role" within security-restricted operation/,
	'a superuser declaring after SET ROLE cannot be made to RESET ROLE');
is($node->safe_psql('postgres', 'SELECT count(*) FROM lab_b.loot'), '0',
	'nothing was written at declaration');

# ... and views that misbehave only when the trainer reads them (its session
# user is not the tenant) fail their task when the trainer reads them.  A
# snapshot runs the view only when it is taken, as the tenant: these tasks
# read their source live (docs/data.md)
query_as($node, 'lab_b', q{
	CREATE OR REPLACE FUNCTION lab_b.escalate(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
	BEGIN
		IF session_user <> current_user THEN
			RESET ROLE;
			INSERT INTO lab_b.loot VALUES (current_user);
		END IF;
		RETURN x;
	END $$;
	CREATE OR REPLACE FUNCTION lab_b.scribble(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
	BEGIN
		IF session_user <> current_user THEN
			INSERT INTO lab_b.loot VALUES (current_user);
		END IF;
		RETURN x;
	END $$;
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('escalate', 'lab_b.iris_v', 'label', false), ('scribble', 'lab_b.iris_w', 'label', false);});

ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'escalate'"),
	'the task whose view changes role fails');
like($node->safe_psql('postgres',
		"SELECT min(error) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'escalate'"),
	qr/cannot set parameter "role"/, 'RESET ROLE was refused inside the trainer\'s data session');
like($node->safe_psql('postgres', "SELECT status_reason FROM easeml.tasks WHERE name = 'escalate'"),
	qr/its source could not be read: .*cannot set parameter "role"/, 'the task says why it failed');
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'scribble'"),
	'the task whose view writes fails');
like($node->safe_psql('postgres',
		"SELECT min(error) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'scribble'"),
	qr/read-only transaction/, 'the data session is read-only');
is($node->safe_psql('postgres', 'SELECT count(*) FROM lab_b.loot'), '0',
	'nothing was written');

# row-level security on the source applies to the tenant's rows
$node->safe_psql('postgres', q{
	CREATE TABLE public.iris_rls AS SELECT * FROM public.iris;
	ALTER TABLE public.iris_rls ENABLE ROW LEVEL SECURITY;
	CREATE POLICY no_setosa ON public.iris_rls FOR SELECT TO lab_a USING (label <> 'setosa');
	GRANT SELECT ON public.iris_rls TO lab_a;});
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('rls', 'public.iris_rls', 'label')");
is(query_as($node, 'lab_a', "SELECT n_rows || '/' || n_classes FROM easeml.tasks WHERE name = 'rls'"),
	'100/2', 'the declaration counts only the rows the tenant may see');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'rls' AND r.status = 'succeeded'}),
	'the task trains');
is( $node->safe_psql('postgres', q{
	SELECT DISTINCT (metrics->>'rows_loaded') || '/' || (metrics->>'n_classes')
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'rls' AND r.status = 'succeeded'
	   AND r.purpose = 'select'}),	# an ensemble reads no rows
	'100/2', 'the trainer read only the rows the tenant may see');

# access lost after the declaration: the trainer reads as the tenant
$node->safe_psql('postgres', q{
	CREATE TABLE public.iris_revoked AS SELECT * FROM public.iris;
	GRANT SELECT ON public.iris_revoked TO lab_a;});
query_as($node, 'lab_a', q{
	BEGIN;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('revoked', 'public.iris_revoked', 'label');
	UPDATE easeml.tasks SET status = 'paused' WHERE name = 'revoked';
	COMMIT;});
$node->safe_psql('postgres', 'REVOKE SELECT ON public.iris_revoked FROM lab_a');
# (issue 22 §2.1) its snapshot is refused to the tenant, and no run is queued on it
my $revoked_snap = query_as($node, 'lab_a', q{
	SELECT format('easeml_snapshots.%I', easeml._snapshot_name(id, snapshot_version))
	  FROM easeml.tasks WHERE name = 'revoked'});
($rc, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM $revoked_snap",
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/tenant "lab_a" may no longer read the source public\.iris_revoked of task "revoked" \(permission denied for table iris_revoked\): its snapshot is refused/,
	'a tenant that lost SELECT on the source cannot read its snapshot');
($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.enqueue('revoked', 'knn-1')",
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/may no longer read the source public\.iris_revoked/, '... nor queue a run on it');
query_as($node, 'lab_a', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'revoked'");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'revoked'"),
	'a task whose tenant lost access fails');
like($node->safe_psql('postgres',
		"SELECT min(error) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'revoked'"),
	qr/permission denied for table iris_revoked/, 'with the tenant\'s permission error');

# (issue 22 §2.1) a snapshot is read, and trained on, only under the row
# filters it was copied under: the source's policy hides every row after
# the copy
$node->safe_psql('postgres', q{
	CREATE TABLE public.iris_hidden AS SELECT * FROM public.iris;
	ALTER TABLE public.iris_hidden ENABLE ROW LEVEL SECURITY;
	CREATE POLICY lab_a_rows ON public.iris_hidden FOR SELECT TO lab_a USING (true);
	GRANT SELECT ON public.iris_hidden TO lab_a;});
query_as($node, 'lab_a', q{
	BEGIN;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('hidden', 'public.iris_hidden', 'label');
	UPDATE easeml.tasks SET status = 'paused' WHERE name = 'hidden';
	COMMIT;});
my $hidden_snap = query_as($node, 'lab_a', q{
	SELECT format('easeml_snapshots.%I', easeml._snapshot_name(id, snapshot_version))
	  FROM easeml.tasks WHERE name = 'hidden'});
is(query_as($node, 'lab_a', "SELECT count(*) FROM $hidden_snap"), '150',
	'the tenant reads its snapshot while the source\'s policy shows it the rows');
$node->safe_psql('postgres', 'ALTER POLICY lab_a_rows ON public.iris_hidden USING (false)');
($rc, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM $hidden_snap",
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/the rules that decide which rows of public\.iris_hidden tenant "lab_a" reads \(row-level security, policies and whom they apply to, owners, views\) changed since the snapshot of task "hidden" was taken/,
	'after the policy hides every row, the snapshot is refused');
($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.enqueue('hidden', 'knn-1')",
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/rules that decide which rows of public\.iris_hidden tenant "lab_a" reads/,
	'... and no run can be queued on it');
query_as($node, 'lab_a', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'hidden'");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'hidden'"),
	'the scheduler\'s runs of it fail: the trainer, reading as the tenant, is refused the snapshot');
like($node->safe_psql('postgres',
		"SELECT min(error) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'hidden'"),
	qr/rules that decide which rows of public\.iris_hidden tenant "lab_a" reads/,
	'with the reason');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'hidden' AND (r.status = 'succeeded' OR r.metrics ? 'rows_loaded')}),
	'0', 'no run trained on the hidden rows');
# the rules it was copied under again: readable again
$node->safe_psql('postgres', 'ALTER POLICY lab_a_rows ON public.iris_hidden USING (true)');
is(query_as($node, 'lab_a', "SELECT count(*) FROM $hidden_snap"), '150',
	'with the policy back as it was, the snapshot is readable again');

# tenants see only their own rows everywhere
is(query_as($node, 'lab_a', q{
	SELECT count(*) FROM easeml.runs WHERE tenant <> current_user}), '0', 'runs are private');
is(query_as($node, 'lab_a', q{
	SELECT count(*) FROM easeml.decisions WHERE tenant <> current_user}), '0', 'decisions are private');
is(query_as($node, 'lab_a', q{
	SELECT count(*) FROM easeml.task_overview WHERE tenant <> current_user}), '0', 'tasks are private');

$node->stop;
done_testing();
