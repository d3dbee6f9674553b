# The scheduler's incremental catalog load (src/worker/catalog_runs.c,
# docs/scheduler.md "The live scheduler"): at each step it reads only the
# runs that changed since its previous step.  With easeml.check_catalog on,
# every step also loads the catalog afresh in the same snapshot and logs
# whether the two loads are equal; this test makes the changes an
# incremental load could miss and requires every check to be equal:
#  - a run written by a transaction that commits late, after transactions
#    that began after it (a "highest id/transaction seen" mark misses it);
#  - runs queued by a tenant, cancelled, failing;
#  - a task paused and resumed, refreshed (a new snapshot version: its
#    earlier runs stop counting), failed and reactivated, dropped;
#  - a model disabled;
#  - rows whose writer is another cluster's xid (a restored dump).
# It also requires that the loads were incremental (few full reads, rows
# read as changes).
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('incremental', 'easeml.check_catalog' => 'on');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'inc_a', 'public.iris');
make_tenant($node, 'inc_b', 'public.iris');

# What the checks logged so far: (equal, differ, last full reads, last changed rows).
sub checks
{
	my $log = slurp_file($node->logfile);
	my @equal = $log =~ /incremental catalog load checked: equal to a full load \(\d+ active tasks; (\d+) full reads, (\d+) changed rows/g;
	my @differ = $log =~ /(the incremental catalog load differs from a full load: [^\n]*)/g;
	my $n = @equal / 2;
	return ($n, \@differ, $n ? $equal[-2] : 0, $n ? $equal[-1] : 0);
}

# Wait until the scheduler has checked at least $more more loads.
sub wait_checks
{
	my ($more, $what) = @_;
	my ($start) = checks();
	my $n = $start;
	foreach (1 .. 1200)
	{
		($n) = checks();
		last if $n >= $start + $more;
		select(undef, undef, undef, 0.1);
	}
	cmp_ok($n, '>=', $start + $more, "the scheduler checked its loads $what");
	return;
}

sub succeeded
{
	my ($task) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		 WHERE t.name = '$task' AND r.status = 'succeeded'});
}

# A stub trainer of about a second per run keeps the tasks busy for the
# whole test; it reports its score through the database as trainers do.
my $bindir = $node->config_data('--bindir');
my $dir = PostgreSQL::Test::Utils::tempdir();
my $stub = trainer_script($dir, 'stub_trainer', <<"EOS");
case "\$1" in --run) ;; *) exec '$bindir/easeml-trainer' "\$@" ;; esac
sleep 1
exec '$bindir/psql' "\$EASEML_CONNINFO" -X -q -o /dev/null -v ON_ERROR_STOP=1 \\
	-c "SELECT easeml_trainer.attach(\$2, '\$EASEML_RUN_TOKEN')" \\
	-c "SELECT easeml_trainer.result(\$2, 0, '{\\"score\\": 0.\$((\$2 % 89 + 10))}', NULL)"
EOS
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$stub'; SELECT pg_reload_conf();});

query_as($node, 'inc_a', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('one', 'public.iris', 'label', true), ('two', 'public.iris', 'label', true)});
query_as($node, 'inc_b', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('three', 'public.iris', 'label', true), ('four', 'public.iris', 'label', true)});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) >= 6 FROM easeml.runs WHERE status = 'succeeded'}),
	'the tasks train');
wait_checks(3, 'while they train');

# ---- a run written by a transaction that commits late ------------------------
my $run = $node->safe_psql('postgres', q{
	SELECT min(r.id) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'one' AND r.status = 'succeeded'});
my $late = $node->background_psql('postgres');
$late->query_safe("BEGIN; UPDATE easeml.runs SET score = 0.001 WHERE id = $run;");
my $before = succeeded('two') + succeeded('three') + succeeded('four');
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) >= $before + 2 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name IN ('two', 'three', 'four') AND r.status = 'succeeded'}),
	'runs end and are recorded while a transaction that wrote a run is open');
wait_checks(2, 'while the late transaction is open');
$late->query_safe('COMMIT');
$late->quit;
wait_checks(3, 'after the late transaction committed');

# ---- a tenant's own queue, a cancel ------------------------------------------------
my $model = $node->safe_psql('postgres', qq{
	SELECT m.name FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id WHERE r.id = $run});
query_as($node, 'inc_a', "SELECT easeml.enqueue('one', '$model')");
# The slow trainer records its run: the slots may still hold a stub run
# when the new trainer_path is set (the scheduler reloads it at its next
# step), so a start time does not tell which runs are the slow ones, and a
# stub run that ends frees its slot for a failing run the cancel would
# then find ended.
my $slow = trainer_script($dir, 'slow_trainer', qq{
[ "\$1" = --run ] && echo "\$2" >>'$dir/slow_runs'
exec sleep 600});
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow'; SELECT pg_reload_conf();});
my (@slow, $filled);
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (time < $deadline)
{
	@slow = -e "$dir/slow_runs" ? split(/\n/, slurp_file("$dir/slow_runs")) : ();
	$filled = @slow == 2 && $node->safe_psql('postgres', qq{
		SELECT count(*) FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL
		   AND id IN (@{[ join(',', @slow) ]})}) eq '2';
	last if $filled;
	select(undef, undef, undef, 0.1);
}
ok($filled, 'slow runs fill both slots') or diag("slow runs: @slow");
wait_checks(2, 'with slow runs in flight');
my $failing = trainer_script($dir, 'failing_trainer', "echo 'a transient failure'; exit 1");
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$failing'; SELECT pg_reload_conf();});
foreach my $id (@slow)
{
	my $tenant = $node->safe_psql('postgres', "SELECT tenant FROM easeml.runs WHERE id = $id");
	is(query_as($node, $tenant, "SELECT easeml.cancel($id)"), 'cancelling',
		"$tenant cancels its slow run $id");
}
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 2 FROM easeml.runs WHERE status = 'cancelled'
	   AND id IN (@{[ join(',', @slow) ]})}),
	'the cancelled runs are recorded');

# ---- failures, then a task failed and reactivated ----------------------------------
ok($node->poll_query_until('postgres', q{
	SELECT count(*) >= 3 FROM easeml.runs WHERE status = 'failed'}),
	'runs fail');
wait_checks(2, 'after failures');
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$stub'; SELECT pg_reload_conf();});
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'failed', status_reason = 'made to fail by the test'
	 WHERE name = 'three'});
query_as($node, 'inc_b', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'three'");
wait_checks(3, 'after a reactivation');

# ---- pause and resume, refresh, a disabled model, a dropped task -------------------
query_as($node, 'inc_a', "UPDATE easeml.tasks SET status = 'paused' WHERE name = 'two'");
wait_checks(2, 'with a task paused');
query_as($node, 'inc_a', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'two'");
my $version = query_as($node, 'inc_b', "SELECT easeml.refresh('three')");
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) >= 2 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'three' AND r.status = 'succeeded' AND r.snapshot_version = $version}),
	'the refreshed task trains on its new snapshot');
$node->safe_psql('postgres', qq{
	UPDATE easeml.models SET enabled = false WHERE name = '$model'});
wait_checks(2, 'after a refresh and a model disabled');
query_as($node, 'inc_a', "SELECT easeml.drop_task('two')");
$before = succeeded('one') + succeeded('three') + succeeded('four');
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) >= $before + 2 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name IN ('one', 'three', 'four') AND r.status = 'succeeded'}),
	'training goes on after a task was dropped');
wait_checks(3, 'after a task was dropped');

# ---- writers of another cluster (a dump restored with triggers disabled) ----
# Their xids are past any snapshot's xmax: read by full reads, not every step.
# Only rows the scheduler has read get one: rows whose writer is visible in
# a snapshot taken before two more checked steps.  A run the scheduler
# records meanwhile keeps its writer (the UPDATE rechecks the condition on
# a row written concurrently): given a foreign writer, that write would be
# hidden from every incremental read, as any write with triggers disabled
# is until the next full read (src/worker/catalog_runs.c), and the check would
# rightly report a difference.
my $snap = $node->safe_psql('postgres', 'SELECT pg_current_snapshot()');
wait_checks(2, 'before rows get foreign writers');
my $foreign = $node->safe_psql('postgres', qq{
	SET session_replication_role = replica;
	WITH u AS (UPDATE easeml.runs SET changed_by = '999999999999'::xid8
				WHERE pg_visible_in_snapshot(changed_by, '$snap') RETURNING 1)
	SELECT count(*) FROM u});
cmp_ok($foreign, '>=', 10, "runs with another cluster's writer ($foreign)");
wait_checks(1, 'after rows with foreign writers');
my (undef, undef, undef, $changed0) = checks();
wait_checks(3, 'three more steps');
my (undef, undef, undef, $changed1) = checks();
cmp_ok($changed1 - $changed0, '<', $foreign,
	"rows with foreign writers are not read at every step ($changed0 -> $changed1)");

my ($n, $differ, $full_reads, $changed) = checks();
is(scalar(@$differ), 0, "every incremental load equalled a full load ($n checks)")
  or diag(join("\n", @$differ));
cmp_ok($n, '>=', 25, 'the loads were checked all along');
cmp_ok($full_reads, '<=', 3, "the kept runs were read in full at most 3 times ($full_reads)");
cmp_ok($changed, '>', 20, "the loads read changed runs ($changed rows)");

done_testing();
