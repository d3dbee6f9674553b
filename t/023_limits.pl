# Limits and edges a hostile or careless tenant reaches through the
# scheduler and the trainer (issue 22, docs/operations.md, docs/security.md):
#  - wake-ups are rate-limited: 200 commits of a tenant in a loop set the
#    scheduler's latch at most once per easeml.wake_interval and the rest
#    are folded (asserted by counting, never by timing), and a change
#    committed during the flood is still taken up;
#  - max_rows is enforced by the trainer as it reads: a live view that shows
#    the tenant 150 rows and the trainer 300,000 fails its run, and its
#    task, at the row past the limit;
#  - a run queued on a paused task waits (with a NOTICE) while other runs
#    are served, and trains once the task is resumed;
#  - a completed task is marked failed when a run queued on it finds its
#    source unreadable (a privilege revoked), and dropping the source then
#    says so in its reason;
#  - the run directories of a task dropped while easeml.enabled = off go at
#    once, not at the hourly sweep.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('limits');
load_dataset($node, 'iris', 'iris');
$node->safe_psql('postgres', 'CREATE TABLE public.doomed_src AS SELECT * FROM public.iris');
make_tenant($node, 'tc', 'public.iris', 'public.doomed_src');
$node->safe_psql('postgres', 'CREATE SCHEMA tc AUTHORIZATION tc');

sub reload_with
{
	my ($setting, $value) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET $setting = '$value'; SELECT pg_reload_conf();");
	$node->poll_query_until('postgres', "SELECT current_setting('$setting') = '$value'")
	  or die "$setting did not become $value";
	return;
}

sub runs_of
{
	my ($task, $cond) = @_;
	return qq{SELECT (SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	           WHERE t.name = '$task' AND $cond)};
}

# ---- wake-ups: a flood of commits is folded, counted without timing ------------
reload_with('easeml.wake_interval', '1h');
my ($sent0, $folded0) = split /\|/,
  $node->safe_psql('postgres', 'SELECT wakeups, wakeups_folded FROM easeml.scheduler_status()');
# 200 transactions that each fire easeml's wake-up trigger (a statement
# trigger fires for an UPDATE of no row too)
query_as($node, 'tc',
	join('', map { "UPDATE easeml.tasks SET max_runs = max_runs WHERE false;\n" } 1 .. 200));
my ($sent1, $folded1) = split /\|/,
  $node->safe_psql('postgres', 'SELECT wakeups, wakeups_folded FROM easeml.scheduler_status()');
is(($sent1 - $sent0) + ($folded1 - $folded0), 200, 'each of the 200 commits asked for a wake-up');
cmp_ok($sent1 - $sent0, '<=', 1,
	'at most one of them set the scheduler\'s latch within easeml.wake_interval');
# a change committed while wake-ups are folded is still taken up (at the
# scheduler's next iteration)
query_as($node, 'tc',
	"INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('flood', 'public.iris', 'label', 2)");
cmp_ok($node->safe_psql('postgres', 'SELECT wakeups_folded FROM easeml.scheduler_status()'),
	'>', $folded1, 'the declaration\'s wake-up was folded too');
ok($node->poll_query_until('postgres', runs_of('flood', "r.status = 'succeeded'") . ' >= 2'),
	'and the task it declared is trained all the same');
# a tenant cannot attach the wake-up trigger to a table of its own
my ($rc, $out, $err) = $node->psql('postgres', q{
	CREATE TABLE tc.noise (x int);
	CREATE TRIGGER noise AFTER INSERT ON tc.noise FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger();},
	extra_params => [ '-U', 'tc' ]);
like($err, qr/permission denied for function easeml._wake_trigger/, 'a tenant cannot attach easeml._wake_trigger');
reload_with('easeml.wake_interval', '50ms');

# ---- max_rows: the trainer stops at the row past the limit -----------------------
$node->safe_psql('postgres', "SELECT easeml.set_tenant_limits('tc', max_rows => 1000)");
# 150 rows to the tenant at declaration, 300,000 to the trainer, whose
# session user is the bootstrap superuser
query_as($node, 'tc', q{
	CREATE VIEW tc.grow AS
	SELECT i.* FROM public.iris i,
		   generate_series(1, CASE WHEN session_user = 'tc' THEN 1 ELSE 2000 END) g;
	INSERT INTO easeml.tasks (name, source, target, snapshot, max_runs)
	VALUES ('grow', 'tc.grow', 'label', false, 1);});
is($node->safe_psql('postgres', "SELECT n_rows FROM easeml.tasks WHERE name = 'grow'"),
	'150', 'the declaration saw 150 rows (under max_rows)');
ok($node->poll_query_until('postgres', runs_of('grow', "r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')") . ' > 0'),
	'its run ended');
my ($status, $error) = split /\|/, $node->safe_psql('postgres', q{
	SELECT r.status, r.error FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'grow' ORDER BY r.id LIMIT 1});
is($status, 'failed', 'the run over max_rows failed');
like($error, qr/more than 1000 rows with a target, its tenant's max_rows .*reading stopped at row 1001/,
	'its error says why, and where reading stopped');
ok($node->poll_query_until('postgres', "SELECT status = 'failed' FROM easeml.tasks WHERE name = 'grow'"),
	'the task is failed (every candidate would read past the limit)');
like($node->safe_psql('postgres', "SELECT status_reason FROM easeml.tasks WHERE name = 'grow'"),
	qr/more than 1000 rows with a target/, 'with the reason');
$node->safe_psql('postgres', "SELECT easeml.set_tenant_limits('tc')");

# ---- a paused task holds even its tenant's own queue ----------------------------
query_as($node, 'tc', "UPDATE easeml.tasks SET status = 'paused' WHERE name = 'flood'");
($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.enqueue('flood', 'knn-5')",
	extra_params => [ '-U', 'tc' ]);
is($rc, 0, 'a run can be queued on a paused task');
like($err, qr/NOTICE:  task "flood" is paused: the run of model "knn-5" waits in the queue until the task is active again/,
	'with a NOTICE that it waits');
# a witness queued after it, on an active task, is served first
query_as($node, 'tc',
	"INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('witness', 'public.iris', 'label', 1)");
ok($node->poll_query_until('postgres', runs_of('witness', "r.status = 'succeeded'") . ' > 0'),
	'a later task is served');
is($node->safe_psql('postgres', q{
	SELECT r.status FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	  JOIN easeml.models m ON m.id = r.model_id WHERE t.name = 'flood' AND m.name = 'knn-5'
	   AND r.purpose = 'select'}),
	'queued', 'while the paused task\'s run waits');
query_as($node, 'tc', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'flood'");
ok($node->poll_query_until('postgres', q{
	SELECT r.status = 'succeeded' FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	  JOIN easeml.models m ON m.id = r.model_id WHERE t.name = 'flood' AND m.name = 'knn-5'
	   AND r.purpose = 'select'}),
	'resumed, the task trains it');

# ---- a completed task whose source is gone -------------------------------------
query_as($node, 'tc', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot, max_runs)
	VALUES ('doomed', 'public.doomed_src', 'label', false, 1)});
ok($node->poll_query_until('postgres', "SELECT status = 'completed' FROM easeml.tasks WHERE name = 'doomed'"),
	'a task completes');
# (its source unreadable: a DROP fails the task itself, t/058)
$node->safe_psql('postgres', 'REVOKE SELECT ON public.doomed_src FROM tc');
query_as($node, 'tc', "SELECT easeml.enqueue('doomed', 'gnb')");
ok($node->poll_query_until('postgres', "SELECT status = 'failed' FROM easeml.tasks WHERE name = 'doomed'"),
	'a run queued on it that finds its source unreadable fails the completed task')
  or diag($node->safe_psql('postgres', q{
	SELECT r.id, r.status, r.exit_code, r.error FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'doomed' ORDER BY r.id}));
like($node->safe_psql('postgres', "SELECT status_reason FROM easeml.tasks WHERE name = 'doomed'"),
	qr/its source could not be read: .*permission denied/, 'with the reason');
$node->safe_psql('postgres', 'DROP TABLE public.doomed_src');
is($node->safe_psql('postgres', "SELECT status || ': ' || status_reason FROM easeml.tasks WHERE name = 'doomed'"),
	'failed: its source public.doomed_src was dropped', 'dropped, the source gives the failed task its reason');

# ---- run directories of a task dropped while easeml.enabled = off ----------------
my $rundir = $node->data_dir . '/easeml_runs';
ok($node->poll_query_until('postgres', runs_of('flood', "r.status IN ('queued', 'running')") . ' = 0'),
	'the task has no run in flight');
reload_with('easeml.enabled', 'off');
# its selection runs (a refit on every row cancelled while queued never
# started)
my @flood = split /\n/, $node->safe_psql('postgres', q{
	SELECT r.id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'flood' AND r.purpose = 'select'});
ok(@flood >= 3 && !grep({ !-d "$rundir/$_" } @flood), 'the task\'s runs have their directories');
query_as($node, 'tc', "SELECT easeml.drop_task('flood')");
my $gone = 0;
foreach (1 .. 300)
{
	$gone = !grep { -d "$rundir/$_" } @flood;
	last if $gone;
	select(undef, undef, undef, 0.1);
}
ok($gone, 'dropped while easeml.enabled = off, its run directories go at once');
ok(-d "$rundir/" . $node->safe_psql('postgres', 'SELECT min(id) FROM easeml.runs'),
	'other runs keep theirs');

$node->stop;
done_testing();
