# Runs a tenant queues itself count against its fair share (issue 22,
# defect 2).  Tenant lab_a declares a task over a view that blocks its
# trainers and queues 8 of its candidates with easeml.enqueue at once: its
# queued runs take both slots.  Tenant lab_b then declares a task.  The
# fair share gives each tenant one of the two slots: one of lab_a's queued
# runs is preempted after the run budget like any other run, and the slot
# it frees goes to lab_b, not to lab_a's next queued run.  Before, every
# freed slot went to lab_a's queue first, so lab_b waited until the queue
# was empty.  Checked on the recorded decisions: no run of lab_a starts
# between lab_b's declaration and lab_b's first run; the preempted request
# is queued again, not lost.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = easeml_node('queued_share');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a');
make_tenant($node, 'lab_b', 'public.iris');
blocking_view($node, 'lab_a', 'public.iris', 'lab_a.iris_slow');

# the task and its queue in one transaction: the queue is there when the
# scheduler first sees the task
my @models = split /\n/, $node->safe_psql('postgres', q{
	SELECT name FROM easeml.models
	 WHERE enabled AND 'classification' = ANY (kinds) AND NOT needs_image
	 ORDER BY id LIMIT 8});
is(scalar @models, 8, 'eight candidates to queue');
query_as($node, 'lab_a', join('', q{
	BEGIN;
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('slow', 'lab_a.iris_slow', 'label', false);},
	map({ "SELECT easeml.enqueue('slow', '$_');" } @models), 'COMMIT;'));

$node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'running'
	   AND (SELECT count(*) FROM pg_stat_activity
	         WHERE backend_type = 'client backend' AND wait_event = 'PgSleep') = 2})
  or die 'lab_a did not take both slots';
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.decisions WHERE tenant = 'lab_a' AND rule <> 'tenant''s own queue'}),
	'0', 'lab_a\'s queued runs hold both slots');

# lab_b arrives while lab_a's queue holds both slots
my $before = $node->safe_psql('postgres',
	'SELECT coalesce(max(id), 0) FROM easeml.decisions');
my $t0 = time;
query_as($node, 'lab_b', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('quick', 'public.iris', 'label')});
my $b_first;
while (time - $t0 < 90)
{
	$b_first = $node->safe_psql('postgres', q{
		SELECT min(id) FROM easeml.decisions WHERE tenant = 'lab_b'});
	last if $b_first ne '';
	usleep(100_000);
}
isnt($b_first, '', 'lab_b\'s task got a run');
diag(sprintf('lab_b waited %.1f s for its first run', time - $t0));

# what happened in between, as recorded
my $a_between = $node->safe_psql('postgres', qq{
	SELECT count(*) FROM easeml.decisions
	 WHERE tenant = 'lab_a' AND id > $before AND id < $b_first});
is($a_between, '0',
	'no run of lab_a started between lab_b\'s declaration and lab_b\'s first run');
my $preempted = $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs
	 WHERE tenant = 'lab_a' AND status = 'interrupted' AND requested_by = 'user'
	   AND error LIKE 'preempted after %'
	   AND error LIKE '%: another tenant waited below its fair share%'
	   AND error NOT LIKE '%lab_b%'});
is($preempted, '1', 'one of lab_a\'s queued runs was preempted, with the reason');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs p JOIN easeml.runs q
	    ON q.task_id = p.task_id AND q.model_id = p.model_id AND q.id > p.id
	 WHERE p.tenant = 'lab_a' AND p.status = 'interrupted'
	   AND q.requested_by = 'user' AND q.status IN ('queued', 'running')}),
	'1', 'the preempted request is queued again');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'queued'}),
	'7', 'lab_a\'s other requests still wait in its queue');

# while lab_b has work, lab_a's queue keeps at most its share of the slots
my $over = 0;
foreach (1 .. 30)
{
	my ($a_running, $b_left) = split /\|/, $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM easeml.runs WHERE tenant = 'lab_a' AND status = 'running'),
		       (SELECT count(*) FROM easeml.tasks WHERE tenant = 'lab_b' AND status = 'active')});
	last if $b_left == 0;
	$over++ if $a_running > 1;
	usleep(100_000);
}
is($over, 0, 'lab_a holds at most its fair share while lab_b has work');

# lab_b's runs come from the policy; lab_a's from its queue
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.decisions WHERE tenant = 'lab_b' AND rule = 'tenant''s own queue'}),
	'0', 'lab_b\'s runs are the policy\'s choices');

query_as($node, 'lab_a', 'UPDATE lab_a.ctl SET sleep = false');
$node->safe_psql('postgres', q{
	SELECT easeml.cancel(id) FROM easeml.runs WHERE status IN ('queued', 'running')});
$node->stop;
done_testing();
