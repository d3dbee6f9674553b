# Fair shares with the default settings (issue 8 item 3): a tenant whose
# runs block cannot hold every slot.  Tenant lab_a's two tasks read a view
# that sleeps for an hour when a trainer reads it, so its runs take both
# slots and never end.  Tenant lab_b then declares a task: the fair share
# (easeml.max_parallel_per_tenant = -1, the default) gives each tenant one
# of the two slots, and the run budget (easeml.run_budget, 5 s by default)
# stops the longest-running of lab_a's trainers above its share, so lab_b's
# task gets a run within seconds.  The stopped run is recorded
# 'interrupted' with the reason, and its candidate stays schedulable.
# Without the run budget lab_b would wait for an hour.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

# only what every TAP node sets: two slots, a short naptime
my $node = easeml_node('fairness');
is($node->safe_psql('postgres', 'SHOW easeml.max_parallel_per_tenant'),
	'-1', 'the fair share is on by default');
is($node->safe_psql('postgres', 'SHOW easeml.run_budget'),
	'5s', 'the run budget is on by default');

load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a');
make_tenant($node, 'lab_b', 'public.iris');
blocking_view($node, 'lab_a', 'public.iris', 'lab_a.iris_slow');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('slow1', 'lab_a.iris_slow', 'label', false),
	       ('slow2', 'lab_a.iris_slow', 'label', false)});

# lab_a alone may use every slot: both trainers block in the data query
$node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'running'
	   AND (SELECT count(*) FROM pg_stat_activity
	         WHERE backend_type = 'client backend' AND wait_event = 'PgSleep') = 2})
  or die 'lab_a did not take both slots';
pass('a lone tenant uses every slot');

# lab_b arrives while lab_a holds both slots
my $t0 = time;
query_as($node, 'lab_b', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('quick', 'public.iris', 'label')});
my $waited;
while (time - $t0 < 60)
{
	if ($node->safe_psql('postgres', q{
		SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		 WHERE t.name = 'quick' AND r.status IN ('running', 'succeeded')}) > 0)
	{
		$waited = time - $t0;
		last;
	}
	usleep(100_000);
}
ok(defined $waited, 'the other tenant\'s new task got a run');
diag(sprintf('lab_b waited %.1f s for its first run', $waited // -1));
cmp_ok($waited // 999, '<', 30, 'within the run budget and a few seconds');

# what made room: one of lab_a's runs, preempted and recorded as such
my $preempted = $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs
	 WHERE tenant = 'lab_a' AND status = 'interrupted' AND error LIKE 'preempted after %'
	   AND error LIKE '%: another tenant waited below its fair share%'});
cmp_ok($preempted, '>=', 1, 'a run of the tenant above its share was preempted, with the reason');
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM easeml.runs WHERE tenant = 'lab_a' AND error LIKE '%lab_b%')
		 + (SELECT count(*) FROM easeml.run_events WHERE tenant = 'lab_a' AND detail LIKE '%lab_b%')}),
	'0', '... and no error or event of lab_a\'s runs names the other tenant');
ok($node->log_contains(qr/preempting run \d+ of tenant "lab_a" after \d+ s: tenant "lab_b" waits below its fair share/),
	'the server log does');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'failed'}),
	'0', 'nothing of lab_a was failed: its candidate is tried again');

# while lab_b has work, lab_a keeps at most its share of the slots (the
# preempted trainer leaves its slot within the grace period)
$node->poll_query_until('postgres', q{
	SELECT count(*) <= 1 FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'running'})
  or die 'lab_a kept both slots';
my $over = 0;
foreach (1 .. 20)
{
	my ($a_running, $b_left) = split /\|/, $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'running'),
		       (SELECT count(*) FROM easeml.tasks WHERE tenant = 'lab_b' AND status = 'active')});
	last if $b_left == 0;
	$over++ if $a_running > 1;
	usleep(100_000);
}
is($over, 0, 'lab_a holds at most its fair share while lab_b has work');
ok($node->log_contains('preempting run \d+ of tenant "lab_a"'),
	'the preemption is logged');

# every decision records the rule that decided it; the policy's choices
# record the chosen task's runner-up candidates with their scores
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.decisions WHERE rule IS NULL OR eligible IS NULL}),
	'0', 'every decision records its rule and how many tasks were eligible');
cmp_ok($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.decision_candidates c JOIN easeml.decisions d ON d.id = c.decision_id
	 WHERE c.role = 'model' AND c.task_id = d.task_id AND c.mu IS NOT NULL
	   AND c.est_seconds > 0 AND c.acquisition IS NOT NULL}),
	'>', 0, 'decisions record runner-up candidates with their scores');
# a tenant sees the runner-ups of its own tasks only
is(query_as($node, 'lab_b', q{
	SELECT count(*) FROM easeml.decision_candidates WHERE tenant <> 'lab_b'}),
	'0', 'a tenant sees only its own runner-ups');

# let lab_a's trainers finish so the node stops quickly
query_as($node, 'lab_a', 'UPDATE lab_a.ctl SET sleep = false');
$node->safe_psql('postgres', q{
	SELECT easeml.cancel(id) FROM easeml.runs WHERE status IN ('queued', 'running')});
$node->stop;
done_testing();
