# When ensembles are built (docs/models.md 8, docs/scheduler.md 7.10): the
# next ensemble of an active task is due once k = easeml.ensemble_min_runs
# runs joined the pool since the last ensemble started, and while the
# task's ensembles took at most a quarter of its selection runs' seconds;
# when the task completes, one last ensemble selects from every run.  The
# old rule (one at k, 2k, 3k, ... pool runs counted from zero) ran
# ensembles back to back to catch up with the count, each covering only k
# more runs, and took a slot from the search (scripts/bench/automl.sh).
#
# The scheduler is off: the runs' records are made by hand, with the
# seconds each took, as the scheduler makes them (easeml._finish_run), in
# one transaction each (a 'running' row is never left for its reconcile).
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('ensemble_pace',
	'easeml.enabled' => 'off',
	'easeml.ensemble_min_runs' => 2);
load_dataset($node, 'wine', 'wine');
make_tenant($node, 'lab_p', 'public.wine');
query_as($node, 'lab_p', q{
	INSERT INTO easeml.tasks (name, source, target, refit_all, auto_deploy)
		VALUES ('wine', 'public.wine', 'label', false, false);});

# SQL for a selection run of MODEL that ran SECONDS and ends with STATUS
# (its artifact and validation predictions stored when it succeeds)
sub select_run_sql
{
	my ($seconds, $status, $model) = @_;
	$status //= 'succeeded';
	$model //= 'gnb';
	return qq{
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
								 snapshot_version, started_at)
		SELECT t.id, t.tenant, m.id, 'running', 'scheduler', 'select', t.snapshot_version,
			   clock_timestamp() - interval '$seconds seconds'
		  FROM easeml.tasks t, easeml.models m WHERE t.name = 'wine' AND m.name = '$model'
		RETURNING id AS new_run \\gset
		INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
		SELECT id, tenant, 1, '\\x00' FROM easeml.runs WHERE id = :new_run AND '$status' = 'succeeded';
		INSERT INTO easeml.run_predictions (run_id, tenant, bytes, data)
		SELECT id, tenant, 1, '\\x00' FROM easeml.runs WHERE id = :new_run AND '$status' = 'succeeded';
		SELECT easeml._finish_run(:new_run, '$status', 0,
								  CASE WHEN '$status' = 'succeeded' THEN '{"score": 0.5}' END,
								  CASE WHEN '$status' = 'failed' THEN 'failed by hand' END) \\gset
};
}

# the same, recorded in a transaction of its own
sub select_run
{
	$node->safe_psql('postgres', 'BEGIN;' . select_run_sql(@_) . 'COMMIT;');
	return;
}

# the queued ensemble run ends: it started at START (now when not given)
# and ran SECONDS
sub ensemble_ends
{
	my ($seconds, $start) = @_;
	$start = defined $start ? "'$start'::timestamptz" : 'clock_timestamp()';
	$node->safe_psql('postgres', qq{
		BEGIN;
		UPDATE easeml.runs SET status = 'running', started_at = $start
		 WHERE purpose = 'ensemble' AND status = 'queued';
		UPDATE easeml.runs
		   SET status = 'succeeded', finished_at = started_at + interval '$seconds seconds',
			   seconds = $seconds, score = 0.5, metrics = '{"score": 0.5}'
		 WHERE purpose = 'ensemble' AND status = 'running';
		COMMIT;});
	return;
}

# "<ensemble runs> <of them queued or running> <runs in the pool>"
sub ensembles
{
	return $node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE purpose = 'ensemble') || ' '
			   || count(*) FILTER (WHERE purpose = 'ensemble' AND status IN ('queued', 'running')) || ' '
			   || (SELECT count(*) FROM easeml._ensemble_pool(1))
		  FROM easeml.runs});
}

sub now { return $node->safe_psql('postgres', 'SELECT clock_timestamp()'); }

select_run(4);
is(ensembles(), '0 0 1', 'one run in the pool (k = 2): no ensemble');
select_run(4);
is(ensembles(), '1 1 2', 'k runs in the pool: the first ensemble is queued');

my $t1 = now();
select_run(4);
select_run(4);
is(ensembles(), '1 1 4', 'one ensemble of a task at a time');

# 2 runs (k) joined since it started, but it took 10 s, the 4 selection
# runs 16 s: another as long would make 20 s > 16 / 4
ensemble_ends(10, $t1);
is(ensembles(), '1 0 4',
	'k runs joined since the ensemble started, but ensembles would take over a quarter of the search: none queued (the old rule queued one at 2k)');

select_run(70);
is(ensembles(), '2 1 5',
	'the search took 86 s, a quarter is 21.5 s >= 10 s + 10 s: the next ensemble is queued, over 3 runs joined');

my $t2 = now();
select_run(10) for 1 .. 10;
is(ensembles(), '2 1 15', 'ten runs join the pool while it is queued');
ensemble_ends(1, $t2);
is(ensembles(), '3 1 15', 'it ends: ten runs joined since it started, one more ensemble is queued');
ensemble_ends(1);
is(ensembles(), '3 0 15',
	'it ends with no run joined since it started: none queued, no catch-up (the old rule queued one at 15 >= 2 x (3 + 1))');

select_run(10);
is(ensembles(), '3 0 16', 'one run joined (fewer than k): none queued while the task is active');

# the scheduler completes the task: budget spent, grid spent or converged
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'completed', status_reason = 'every candidate has been tried'
	 WHERE name = 'wine'});
is(ensembles(), '4 1 16', 'the task completes: one last ensemble is queued, over every run of the pool');
ensemble_ends(1);
is(ensembles(), '4 0 16', 'it ends: no run joined since, none queued');

# a completed task whose tenant runs two more candidates: the last
# ensemble waits for the last of them, which fails
is($node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
							 snapshot_version, started_at)
	SELECT t.id, t.tenant, m.id, 'running', 'user', 'select', t.snapshot_version, clock_timestamp()
	  FROM easeml.tasks t, easeml.models m WHERE t.name = 'wine' AND m.name = 'knn-5';}
	  . select_run_sql(2, 'succeeded', 'ridge-1') . q{
	SELECT count(*) FILTER (WHERE purpose = 'ensemble') FROM easeml.runs;
	SELECT easeml._finish_run(r.id, 'failed', 1, NULL, 'failed by hand')
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE m.name = 'knn-5' AND r.status = 'running' \gset
	COMMIT;}) . ' ' . ensembles(), "4 5 1 17",
	'a completed task: a run joined while another ran: none queued; the last fails: the last ensemble is queued');
ensemble_ends(1);
is(ensembles(), '5 0 17', 'it ends: none queued');

# a paused task gets none
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'active' WHERE name = 'wine'});
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'paused' WHERE name = 'wine'});
select_run(100);
select_run(100);
is(ensembles(), '5 0 19', 'a paused task: none queued');

# k = 0 builds none, also at completion
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.ensemble_min_runs = 0; SELECT pg_reload_conf();});
$node->poll_query_until('postgres', q{SELECT current_setting('easeml.ensemble_min_runs') = '0'})
  or die 'easeml.ensemble_min_runs did not become 0';
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'active' WHERE name = 'wine'});
select_run(100);
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'completed', status_reason = 'every candidate has been tried'
	 WHERE name = 'wine'});
is(ensembles(), '5 0 20', 'easeml.ensemble_min_runs = 0: none, also when the task completes');

# Two transactions that each find no ensemble in flight queue one: the
# second waits on runs_ensemble_in_flight_idx, then queues none, and the
# end of the run it records is kept.  (Today the scheduler alone records
# runs; an admin completing a task while it records one is such a pair.)
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.ensemble_min_runs = 2; SELECT pg_reload_conf();});
$node->poll_query_until('postgres', q{SELECT current_setting('easeml.ensemble_min_runs') = '2'})
  or die 'easeml.ensemble_min_runs did not become 2';
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'active' WHERE name = 'wine'});
my $first = $node->background_psql('postgres');
$first->query_safe(q{
	BEGIN;
	INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose, snapshot_version)
	SELECT t.id, t.tenant, m.id, 'queued', 'scheduler', 'ensemble', t.snapshot_version
	  FROM easeml.tasks t, easeml.models m WHERE t.name = 'wine' AND m.name = 'ensemble';});
my ($race_out, $race_err) = ('', '');
my $race_file = PostgreSQL::Test::Utils::tempdir() . '/race.sql';
PostgreSQL::Test::Utils::append_to_file($race_file, 'BEGIN;' . select_run_sql(100) . 'COMMIT;');
my $second = IPC::Run::start [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
	'-f', $race_file ], '>', \$race_out, '2>', \$race_err;
ok($node->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM pg_stat_activity
		 WHERE wait_event_type = 'Lock' AND query LIKE '%_finish_run%'}),
	'a run\'s end, due an ensemble, waits for another transaction\'s queued ensemble');
$first->query_safe('COMMIT');
$first->quit;
ok($second->finish, 'the run\'s end is recorded') or diag($race_err);
is(ensembles(), '6 1 21', 'one ensemble in flight: the waiting transaction queued none');

# Validation predictions are kept while an ensemble can select them: the
# best 200 of the pool, on the task's snapshot.  Faster runs (1 s, the
# same score) push the 21 before them out, the slowest first.
# "<predictions kept> <of them, runs of 2 s or more> <pool> <selectable>"
sub kept
{
	return $node->safe_psql('postgres', q{
		SELECT count(*) || ' ' || count(*) FILTER (WHERE r.seconds >= 2) || ' '
			   || (SELECT count(*) || ' ' || count(*) FILTER (WHERE selectable)
					 FROM easeml._ensemble_pool(1))
		  FROM easeml.run_predictions p JOIN easeml.runs r ON r.id = p.run_id});
}
is(kept(), '21 21 21 21', 'every run of the pool keeps its predictions');
$node->safe_psql('postgres', 'BEGIN;' . join('', map { select_run_sql(1) } 1 .. 199) . 'COMMIT;');
is(kept(), '200 1 200 200',
	'220 runs: the 20 slowest lose their predictions, the best 200 keep theirs');
select_run(1);
is(kept(), '200 0 200 200', 'one more: the slowest of the 200 loses its predictions');
is(query_as($node, 'lab_p', "SELECT easeml.refresh('wine')"), '2', 'a new snapshot of the task');
select_run(1);
is(kept(), '1 0 1 1', 'the next run that ends: the older snapshot\'s runs keep no predictions');

done_testing();
