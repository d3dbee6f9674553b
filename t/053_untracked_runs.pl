# Runs the catalog records as running that no trainer serves (at the
# scheduler's start, those a scheduler that is gone left; later, those
# whose launch failed half-way) are ended one at a time
# (src/worker/recovery.c): a refit among them whose end waits on its task's
# deployment lock, which its tenant may hold in an open transaction after
# its own deploy or rollback, holds up neither the other runs nor the
# scheduling of every other task, and is ended once the lock is free.
# Before, one statement ended them all: the lock made it fail at every
# round, and nothing was scheduled for anyone.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $bindir = `pg_config --bindir`;
chomp $bindir;
# the real trainer, or one that waits while the file hold exists
my $trainer = trainer_script($tmp, 'holding', qq{
[ -e '$tmp/hold' ] && exec sleep 60
exec "$bindir/easeml-trainer" "\$@"});
my $node = easeml_node('untracked',
	'easeml.trainer_path' => $trainer,
	'easeml.enabled' => 'off',
	'easeml.generate_max' => 0,
	'easeml.ensemble_min_runs' => 0);
load_dataset($node, 'breast_cancer', 'cancer');
make_tenant($node, $_, 'public.cancer') for qw(lab_a lab_b);
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'gnb-1e-5', 'ridge-1')});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, refit_all, auto_deploy)
		VALUES ('a', 'public.cancer', 'label', false, false)});
my $task_a = $node->safe_psql('postgres', q{SELECT id FROM easeml.tasks WHERE name = 'a'});

# what a scheduler that is gone leaves: a refit and a selection run of
# task a recorded as running (written here as the superuser)
my ($refit, $select) = split /\n/, $node->safe_psql('postgres', qq{
	WITH done AS (
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at, finished_at, seconds)
		SELECT $task_a, 'lab_a', id, 'succeeded', now(), now(), 1
		  FROM easeml.models WHERE name = 'gnb'
		RETURNING id, model_id)
	INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at, purpose, refit_of)
	SELECT $task_a, 'lab_a', d.model_id, 'running', now() - interval '1 minute', 'refit', d.id FROM done d
	UNION ALL
	SELECT $task_a, 'lab_a', m.id, 'running', now() - interval '1 minute', 'select', NULL
	  FROM easeml.models m WHERE m.name = 'ridge-1'
	RETURNING id});
ok($refit && $select, 'a refit and a selection run of task a are recorded as running');
# and a run whose trainer reported success before the scheduler recorded it
my $reported = $node->safe_psql('postgres', qq{
	WITH r AS (
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at)
		SELECT $task_a, 'lab_a', id, 'running', now() - interval '1 minute'
		  FROM easeml.models WHERE name = 'gnb-1e-5'
		RETURNING id)
	INSERT INTO easeml.trainer_jobs (run_id, launcher, token_sha256, exit_code, metrics, reported_at)
	SELECT id, 'local', sha256('t'), 0, '{"score": 0.75}', now() - interval '20 seconds' FROM r
	RETURNING run_id});

# task a's deployment lock held in an open transaction
my $holder = $node->background_psql('postgres');
$holder->query_safe(qq{
	BEGIN;
	INSERT INTO easeml.deployment_locks VALUES ($task_a) ON CONFLICT DO NOTHING;
	SELECT 1 FROM easeml.deployment_locks WHERE task_id = $task_a FOR UPDATE;});

# the scheduler restarts (it is restarted 5 s after it exits) and runs
my $old = scheduler_pid($node);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE backend_type = 'easeml scheduler' AND pid <> $old}),
	'the scheduler restarts');
ok( $node->poll_query_until('postgres', qq{
		SELECT status = 'interrupted' FROM easeml.runs WHERE id = $select}),
	'its start ends the selection run left running');
like($node->safe_psql('postgres', qq{SELECT error FROM easeml.runs WHERE id = $select}),
	qr/^interrupted: the scheduler restarted while the run was in flight$/,
	'and says why');
is($node->safe_psql('postgres', qq{SELECT status FROM easeml.runs WHERE id = $refit}),
	'running', 'the refit, whose end waits on the lock, is left for later');
is($node->safe_psql('postgres', qq{
	SELECT r.status || ' ' || r.score || ' ' || (r.finished_at = j.reported_at) || ' ' || round(r.seconds)
	  FROM easeml.runs r JOIN easeml.trainer_jobs j ON j.run_id = r.id WHERE r.id = $reported}),
	'succeeded 0.75 true 40',
	'the run whose trainer reported success is recorded from its report, ending when it reported');

# scheduling goes on for everyone while the lock is held
$node->safe_psql('postgres', 'ALTER SYSTEM SET easeml.enabled = on');
reload_worker($node);
query_as($node, 'lab_b', q{
	INSERT INTO easeml.tasks (name, source, target, refit_all, auto_deploy)
		VALUES ('b', 'public.cancer', 'label', false, false)});
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) >= 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		 WHERE t.name = 'b' AND r.status = 'succeeded'}),
	'another tenant\'s task gets runs that succeed while the lock is held');
is($node->safe_psql('postgres', 'SELECT errors FROM easeml.scheduler_status()'),
	'0', 'no round of the scheduler failed');
is($node->safe_psql('postgres', qq{SELECT status FROM easeml.runs WHERE id = $refit}),
	'running', 'the refit is still recorded running: its end would wait on the lock');

# the tenant's transaction ends: the refit is ended at the next retry
$holder->query_safe('ROLLBACK');
$holder->quit;
ok( $node->poll_query_until('postgres', qq{
		SELECT status = 'interrupted' FROM easeml.runs WHERE id = $refit}),
	'once the lock is free the refit is ended too');
like($node->safe_psql('postgres', qq{SELECT error FROM easeml.runs WHERE id = $refit}),
	qr/^interrupted: the scheduler was not tracking its trainer$/,
	'and says why');
like($node->safe_psql('postgres', qq{
	SELECT string_agg(status, ',' ORDER BY id) FROM easeml.run_events WHERE run_id = $refit}),
	qr/interrupted$/, 'its end is recorded among its events');

# a run the tenant queued, interrupted by a restart of the server, is
# queued again (its task completed: the scheduler would not choose the
# candidate again), and trains
ok( $node->poll_query_until('postgres', q{
		SELECT status = 'completed' FROM easeml.tasks WHERE name = 'b'}),
	'task b completes');
open(my $fh, '>', "$tmp/hold") or die $!;
close($fh);
my $asked = query_as($node, 'lab_b', q{SELECT easeml.enqueue('b', 'gnb')});
ok( $node->poll_query_until('postgres', qq{
		SELECT status = 'running' AND pid IS NOT NULL FROM easeml.runs WHERE id = $asked}),
	'the tenant\'s queued run starts');
unlink("$tmp/hold") or die $!;
$node->stop('immediate');
$node->start;
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.runs p ON p.id = $asked
		 WHERE r.task_id = p.task_id AND r.model_id = p.model_id AND r.id > p.id
		   AND r.requested_by = 'user' AND r.queued_at = p.queued_at AND r.status = 'succeeded'}),
	'after the restart the request is queued again and its run succeeds');
like($node->safe_psql('postgres', qq{SELECT status || ': ' || error FROM easeml.runs WHERE id = $asked}),
	qr/^interrupted: interrupted: the scheduler restarted while the run was in flight$/,
	'the interrupted run says why');

done_testing();
