# No tenant can hold up another's refresh, alter_task or drop_task, nor an
# administrator removing a tenant, by holding a lock on that tenant's
# snapshot.  Any role may make a view over a snapshot table (a view needs
# no privilege on what it reads) and lock it, or lock the table itself
# (PREPARE locks what a query names before any privilege is checked):
# easeml dropped old snapshot versions with a plain DROP ... CASCADE as the
# superuser, which waited for mallory's transaction for as long as she
# kept it open.  Now a table that cannot be dropped within a moment is
# left, readable by nobody, and the scheduler drops it once the lock is
# gone (src/worker/retention.c).
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = easeml_node('snapshot_locks');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'alice', 'public.iris');
make_tenant($node, 'bob', 'public.iris');
make_tenant($node, 'mallory');
$node->safe_psql('postgres', 'CREATE SCHEMA mallory AUTHORIZATION mallory');

# alice's and bob's tasks, paused: no run reads a snapshot meanwhile
for my $t ([ 'alice', 'a1' ], [ 'alice', 'a2' ], [ 'bob', 'b1' ])
{
	query_as($node, $t->[0], qq{
		BEGIN;
		INSERT INTO easeml.tasks (name, source, target) VALUES ('$t->[1]', 'public.iris', 'label');
		UPDATE easeml.tasks SET status = 'paused' WHERE name = '$t->[1]';
		COMMIT;});
}
my %snap = map {
	$_ => $node->safe_psql('postgres', qq{
		SELECT format('easeml_snapshots.%I', easeml._snapshot_name(id, snapshot_version))
		  FROM easeml.tasks WHERE name = '$_'})
} qw(a1 a2 b1);
my $a1 = $node->safe_psql('postgres', "SELECT id FROM easeml.tasks WHERE name = 'a1'");

# mallory's views over the snapshots: allowed, though she may read none
query_as($node, 'mallory', qq{
	CREATE VIEW mallory.pin_a1 AS SELECT * FROM $snap{a1};
	CREATE VIEW mallory.pin_a2 AS SELECT * FROM $snap{a2};
	CREATE VIEW mallory.pin_b1 AS SELECT * FROM $snap{b1};});

# LOCK TABLE on her view is refused (it checks what the view reads), but
# PREPARE locks the view and the snapshot under it, until her transaction
# ends
my ($rc, $out, $err) = $node->psql('postgres',
	'BEGIN; LOCK TABLE mallory.pin_a1 IN ACCESS SHARE MODE;',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/permission denied for table task_/, 'mallory may not LOCK her view over alice\'s snapshot');
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'mallory' ]);
$holder->query_safe(q{
	BEGIN;
	PREPARE p_a1 AS SELECT * FROM mallory.pin_a1;
	PREPARE p_a2 AS SELECT * FROM mallory.pin_a2;
	PREPARE p_b1 AS SELECT * FROM mallory.pin_b1;});
is($node->safe_psql('postgres', qq{
	SELECT count(DISTINCT l.relation) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	 WHERE a.usename = 'mallory' AND l.granted
	   AND l.relation IN ('$snap{a1}'::regclass, '$snap{a2}'::regclass, '$snap{b1}'::regclass,
						  'mallory.pin_a1'::regclass, 'mallory.pin_a2'::regclass,
						  'mallory.pin_b1'::regclass)}),
	'6', 'mallory holds locks on three snapshots and her views over them');

# run SQL as a role with a 10 s statement timeout; (rc, stdout, stderr, seconds)
sub timed_as
{
	my ($role, $sql) = @_;
	my $t0 = time;
	my ($rc, $out, $err) = $node->psql('postgres', "SET statement_timeout = '10s';\n$sql",
		extra_params => [ '-U', $role ]);
	return ($rc, $out, $err, time - $t0);
}

# alice refreshes a1: version 2, while mallory pins version 1
my $took;
($rc, $out, $err, $took) = timed_as('alice', "SELECT easeml.refresh('a1')");
is($rc, 0, 'alice refreshes a1 while mallory locks its snapshot') or diag($err);
is($out, '2', '... taking version 2');
cmp_ok($took, '<', 5, '... within a few seconds');
diag(sprintf('refresh took %.2f s', $took));
unlike($err, qr/mallory/, '... and is told nothing of mallory\'s view');
is($node->safe_psql('postgres', qq{
	SELECT to_regclass('$snap{a1}') IS NOT NULL,
		   has_table_privilege('alice', '$snap{a1}', 'SELECT'),
		   EXISTS (SELECT 1 FROM easeml.snapshot_drops WHERE relname = easeml._snapshot_name($a1, 1))}),
	't|f|t', 'version 1 is left for the scheduler, readable by nobody');

# mallory locks version 2 itself (no view needed); alice alters a1's folds:
# version 3
$holder->query_safe("PREPARE p_a1_v2 AS SELECT * FROM easeml_snapshots.task_${a1}_v2");
($rc, $out, $err, $took) = timed_as('alice', "SELECT snapshot_version FROM easeml.alter_task('a1', folds => 3)");
is($rc, 0, 'alice alters a1 while mallory locks its current snapshot') or diag($err);
is($out, '3', '... taking version 3');
cmp_ok($took, '<', 5, '... within a few seconds');
diag(sprintf('alter_task took %.2f s', $took));

# alice drops a2
($rc, $out, $err, $took) = timed_as('alice', "SELECT easeml.drop_task('a2')");
is($rc, 0, 'alice drops a2 while mallory locks its snapshot') or diag($err);
cmp_ok($took, '<', 5, '... within a few seconds');
diag(sprintf('drop_task took %.2f s', $took));
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.tasks WHERE name = 'a2'"),
	'0', '... and the task is gone');

# an administrator removes bob, and then his role
($rc, $out, $err, $took) = timed_as('postgres', q{
	DELETE FROM easeml.tenants WHERE name = 'bob';
	REVOKE SELECT ON public.iris FROM bob;
	DROP ROLE bob;});
is($rc, 0, 'an administrator removes tenant bob, and drops his role, while mallory locks his snapshot')
  or diag($err);
cmp_ok($took, '<', 5, '... within a few seconds');

# while mallory holds on, her locked tables stay; the scheduler keeps going
is($node->safe_psql('postgres', 'SELECT count(*) FROM easeml.snapshot_drops'),
	'4', 'four snapshot tables are left to the scheduler');
my $loop = $node->safe_psql('postgres', 'SELECT loop_at FROM easeml.scheduler_status()');
ok($node->poll_query_until('postgres',
		"SELECT loop_at > '$loop' FROM easeml.scheduler_status()"),
	'the scheduler loops while they are locked');

# once her transaction ends, the scheduler drops them, with her views
$holder->query_safe('ROLLBACK');
$holder->quit;
ok($node->poll_query_until('postgres', q{
	SELECT NOT EXISTS (SELECT 1 FROM easeml.snapshot_drops)
	   AND (SELECT count(*) FROM pg_class WHERE relnamespace = 'easeml_snapshots'::regnamespace) = 1}),
	'the scheduler drops the old snapshot tables once the lock is gone');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class WHERE relnamespace = 'mallory'::regnamespace}),
	'0', 'mallory\'s views went with them');
ok($node->log_contains(qr/dropped \d old snapshot table\(s\) that were locked/),
	'the scheduler logged the drop');
is(query_as($node, 'alice', qq{
	SELECT count(*) > 0 FROM easeml_snapshots.task_${a1}_v3}),
	't', 'alice reads a1\'s current snapshot');

$node->stop;
done_testing();
