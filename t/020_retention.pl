# The scheduler expires its own log when easeml.scheduler_log_retention is
# set: old decisions of ended runs, their runner-ups and old launch records
# go in batches; recent ones, each task's latest decision and the records
# of work in flight stay; runs, events and leaderboards are untouched.  A
# purge that fails is logged and scheduling goes on.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# two slots: one holds a run in flight, the other goes on training
my $node = easeml_node('retention', 'easeml.max_workers' => 2);
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');

query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('iris', 'public.iris', 'label', 3)});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'a task finishes');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'and the refit of its deployed run on every row');

# what a run leaves in the scheduler's log and in the run's own tables
my $per_run = $node->safe_psql('postgres', q{
	SELECT format('runs=%s decisions=%s decision_candidates=%s trainer_jobs=%s run_events=%s run_progress=%s',
		(SELECT count(*) FROM easeml.runs), (SELECT count(*) FROM easeml.decisions),
		(SELECT count(*) FROM easeml.decision_candidates), (SELECT count(*) FROM easeml.trainer_jobs),
		(SELECT count(*) FROM easeml.run_events), (SELECT count(*) FROM easeml.run_progress))});
note("rows after three iris runs: $per_run");

# a run in flight: its trainer waits on the view
blocking_view($node, 'lab_a', 'public.iris', 'lab_a.held_iris');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot, max_runs)
	VALUES ('held', 'lab_a.held_iris', 'label', false, 1)});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'held' AND r.status = 'running'}),
	'a run is in flight');

# two days pass for the first iris decision and the run in flight: the
# other iris decisions stay recent
$node->safe_psql('postgres', q{
	CREATE TABLE aged AS
	SELECT d.id, d.run_id, t.name AS task FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	 WHERE d.id = (SELECT min(id) FROM easeml.decisions WHERE task_id = d.task_id);
	UPDATE easeml.decisions SET decided_at = decided_at - interval '2 days'
	 WHERE id IN (SELECT id FROM aged);
	UPDATE easeml.trainer_jobs SET submitted_at = submitted_at - interval '2 days',
		   reported_at = reported_at - interval '2 days'
	 WHERE run_id IN (SELECT run_id FROM aged)});
is($node->safe_psql('postgres', q{
	SELECT string_agg(a.task || ':' || r.status, ',' ORDER BY a.id)
	  FROM aged a JOIN easeml.runs r ON r.id = a.run_id}),
	'iris:succeeded,held:running', 'an ended run and one in flight are two days old');

my %state = (
	runs => q{SELECT string_agg(id || ':' || status, ',' ORDER BY id) FROM easeml.runs},
	events => q{SELECT string_agg(id || ':' || run_id || ':' || status, ',' ORDER BY id) FROM easeml.run_events},
	progress => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM easeml.run_progress},
	leaderboard => q{SELECT string_agg(task || ':' || rank || ':' || run_id, ',' ORDER BY task, rank) FROM easeml.leaderboard},
	artifacts => q{SELECT string_agg(run_id::text, ',' ORDER BY run_id) FROM easeml.artifacts},
	decisions => q{SELECT string_agg(id::text, ',' ORDER BY id) FROM easeml.decisions
					WHERE id NOT IN (SELECT id FROM public.aged WHERE task = 'iris')});
my %before = map { $_ => $node->safe_psql('postgres', $state{$_}) } keys %state;
my $errors_before = $node->safe_psql('postgres', 'SELECT errors FROM easeml.scheduler_status()');

# a purge that fails (its function is missing) is logged; scheduling goes on
$node->safe_psql('postgres',
	'ALTER FUNCTION easeml._purge_scheduler_log(interval, int) RENAME TO _purge_away');
my $offset = -s $node->logfile;
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.scheduler_log_retention = '1d'; SELECT pg_reload_conf()});
ok($node->wait_for_log(qr/purging the scheduler's log failed/, $offset),
	'a failed purge is logged');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('after', 'public.iris', 'label', 1)});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'after'"),
	'the scheduler goes on training after a failed purge');
is($node->safe_psql('postgres', 'SELECT errors FROM easeml.scheduler_status()'),
	$errors_before, 'and no loop iteration failed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.aged a JOIN easeml.decisions d USING (id)'),
	'2', 'nothing was purged');

# with the function back, a new setting purges at once
$node->safe_psql('postgres',
	'ALTER FUNCTION easeml._purge_away(interval, int) RENAME TO _purge_scheduler_log');
$offset = -s $node->logfile;
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.scheduler_log_retention = '36h'; SELECT pg_reload_conf()});
ok($node->wait_for_log(qr/removed \d+ rows of the scheduler's log older than 2160 min/, $offset),
	'the scheduler purges its log when the setting changes');
is($node->safe_psql('postgres', q{
	SELECT string_agg(a.task || ':' || (d.id IS NOT NULL) || ':' || (j.run_id IS NOT NULL), ','
					  ORDER BY a.id)
	  FROM public.aged a LEFT JOIN easeml.decisions d ON d.id = a.id
	  LEFT JOIN easeml.trainer_jobs j ON j.run_id = a.run_id}),
	'iris:false:false,held:true:true',
	'the old decision and launch record of the ended run go; those of the run in flight stay');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.decision_candidates c
	 WHERE NOT EXISTS (SELECT FROM easeml.decisions d WHERE d.id = c.decision_id)}),
	'0', 'no runner-up outlives its decision');
# recent decisions, runs, their events, learning curves, leaderboards and
# artifacts: what was there is there (the new task added rows)
for my $what (sort keys %state)
{
	my %now = map { $_ => 1 } split /,/, $node->safe_psql('postgres', $state{$what});
	my @gone = grep { !$now{$_} } split /,/, $before{$what};
	is("@gone", '', "$what: nothing removed");
}
is($node->safe_psql('postgres', q{
	SELECT estimated_seconds > 0 FROM easeml.active_runs WHERE task = 'held'}),
	't', 'the run in flight keeps its estimate');

done_testing();
