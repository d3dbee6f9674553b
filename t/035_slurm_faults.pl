# The Slurm launcher under faults (issue 22, defect 7), with fake Slurm
# commands (t/SlurmTest.pm fake_slurm: no Slurm needed) that fail or hang
# on demand; t/016_slurm.pl runs the launcher against a real Slurm.
#
# - The controller unreachable: scontrol (and squeue) fail.  They are asked
#   again after a bounded exponential backoff (1 s, doubled per failure in
#   a row, at most 60 s), not at every loop: before, scontrol ran about
#   350 times a second.
# - A hung sbatch: Slurm's commands run in the background, so while one
#   submission waits 20 s for sbatch the scheduler keeps deciding, launching
#   and recording other runs.  Before, the whole loop waited (up to 30 s).
# - sbatch answers a job id easeml cannot follow (99999999999999999999999):
#   the run is interrupted, saying so, and any job it made cancelled by
#   name; before, the id was clamped to 9223372036854775807 and followed.
# - sbatch not installed where easeml.slurm_bindir says: no run is made (no
#   interrupted run every 160 s), one WARNING, launches resume by
#   themselves once it is there.
# - A tenant's queued run whose launch fails (the controller down) is
#   queued again, and submitted once Slurm answers.
# - sbatch refuses the job (a cluster or configuration fault, never the
#   task's): runs are interrupted, launches pause, no task fails.
# - A job waiting in Slurm's queue: easeml.run_timeout counts from when it
#   runs, the wait fails nothing.
# - A scancel that fails is sent again (with the backoff) until the job
#   ends.
# - A tenant's lock on a run's row while sbatch answers: the job id is
#   recorded once the lock is gone, the scheduler's loop goes on.
# - A job id Slurm gave to another job (its ids began again): squeue and
#   scontrol name another job, so easeml's job counts as forgotten.
# - An sbatch that SIGKILL does not end (stuck in the kernel, a hung NFS
#   mount; the fake leaves its process group instead): killed after its
#   30 s, its run is interrupted at once and the loop goes on, reaping it
#   once it ends.  Before, the loop waited in waitpid until it ended.
# - sbatch says the controller's answer timed out, but the job was queued:
#   it is cancelled by its name, and the scancel is sent again until it
#   succeeds.  Before, nothing cancelled it: it ran unobserved while the
#   run's candidate was submitted again.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use SlurmTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $bin = fake_slurm("$tmp/bin");

my $node = easeml_node('slurm_faults',
	'easeml.launcher' => 'slurm',
	'easeml.slurm_bindir' => $bin,
	'easeml.slurm_output' => "$tmp/job-%j.out",
	'easeml.slurm_job_prefix' => 'easeml-t035',
	'easeml.run_timeout' => 0,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
$node->safe_psql('postgres', q{
	SELECT easeml.set_slurm_partition('debug', 1);
	ALTER SYSTEM SET easeml.enabled = on;
	SELECT pg_reload_conf();});

# how often a fake command ran during some seconds from now
sub calls_during
{
	my ($what, $seconds) = @_;
	my $t0 = time;
	sleep $seconds;
	return scalar(fake_calls($bin, $what, $t0));
}

# ---- the controller is unreachable -------------------------------------
# squeue lists no job (so the scheduler asks scontrol how the job ended)
# and scontrol cannot reach the controller
fake_mode($bin, 'scontrol', 'down');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.status = 'running' AND j.job_id IS NOT NULL}),
	'down: a run was submitted');
my $scontrol = calls_during('scontrol', 10);
diag("scontrol ran $scontrol times in 10 s with the controller unreachable");
cmp_ok($scontrol, '>=', 2, 'down: scontrol is asked again');
cmp_ok($scontrol, '<=', 6, 'down: with a backoff (1, 2, 4, 8 s), not at every loop');
ok($node->log_contains('scontrol show job failed: slurm_load_jobs error: Unable to contact slurm controller'),
	'down: the failure is logged');
is($node->safe_psql('postgres', q{SELECT count(*) FROM easeml.runs WHERE status = 'running'}),
	'1', 'down: the run waits for Slurm, nothing is recorded');

fake_mode($bin, 'squeue', 'down');
my $squeue = calls_during('squeue', 10);
diag("squeue ran $squeue times in 10 s with the controller unreachable");
cmp_ok($squeue, '<=', 6, 'down: squeue backs off too');

# the controller is back: the job is found to have ended
fake_mode($bin, 'squeue', 'ok');
fake_mode($bin, 'scontrol', 'ok');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs WHERE status = 'interrupted'
	   AND error LIKE '%exited 0 without reporting%'}),
	'back: the job\'s end is read once the controller answers');

# ---- a hung sbatch: the loop goes on -----------------------------------
$node->safe_psql('postgres', q{SELECT easeml.set_slurm_partition('debug', 2)});
fake_mode($bin, 'sbatch', 'hang-once');
my $waited = 0;
until (fake_calls($bin, 'hang-start') || $waited > 300)
{
	usleep(100_000);
	$waited++;
}
my ($hang_start) = map { (split)[1] } fake_calls($bin, 'hang-start');
ok(defined $hang_start, 'hung: an sbatch hangs');
my $started = $node->safe_psql('postgres', q{SELECT extract(epoch FROM clock_timestamp())});
# While it hangs (20 s), the scheduler keeps deciding and recording.
# squeue lists the other slot's jobs as ended, so they end within about a
# second (a job squeue does not list is given 10 s to appear first).
fake_mode($bin, 'squeue', 'done');
my ($decided, $recorded) = (0, 0);
for (my $t0 = time; time - $t0 < 15; sleep 1)
{
	$decided = $node->safe_psql('postgres', qq{
		SELECT count(*) FROM easeml.decisions WHERE decided_at > to_timestamp($started)});
	$recorded = $node->safe_psql('postgres', qq{
		SELECT count(*) FROM easeml.runs WHERE finished_at > to_timestamp($started)});
	last if $decided >= 2 && $recorded >= 2;
}
my ($hang_end) = map { (split)[1] } fake_calls($bin, 'hang-end');
ok(!defined $hang_end, 'hung: sbatch still hangs meanwhile');
diag("while sbatch hung: $decided decisions, $recorded runs recorded as ended");
cmp_ok($decided, '>=', 2, 'hung: the scheduler kept deciding meanwhile');
cmp_ok($recorded, '>=', 2, 'hung: and recording runs that ended');
is($node->safe_psql('postgres', q{
	SELECT extract(epoch FROM clock_timestamp() - loop_at) < 5 FROM easeml.scheduler_status()}),
	't', 'hung: its loop is alive');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM easeml.runs r JOIN easeml.trainer_jobs j ON j.run_id = r.id
	 WHERE r.status = 'running' AND j.job_id IS NULL}),
	'hung: the slow submission is followed once sbatch answers');

# Poll for at most $seconds (poll_query_until waits 3 minutes: too long
# for a check that fails on the old code).
sub wait_for
{
	my ($sql, $seconds) = @_;
	for (my $t0 = time; time - $t0 < $seconds; usleep(200_000))
	{
		return 1 if $node->safe_psql('postgres', $sql) eq 't';
	}
	return 0;
}

# The scheduler stops launching, every run ends (cancelled), and nothing
# of the last section lingers in the fakes.
sub quiesce
{
	fake_mode($bin, $_, 'ok') for qw(sbatch scancel scontrol);
	fake_mode($bin, 'squeue', 'running');
	$node->safe_psql('postgres', q{
		ALTER SYSTEM SET easeml.enabled = off;
		SELECT pg_reload_conf();});
	sleep 1;
	$node->safe_psql('postgres', q{
		SELECT easeml.cancel(id) FROM easeml.runs WHERE status IN ('queued', 'running')});
	$node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')})
	  or die 'runs did not end';
	return;
}

sub enable
{
	$node->safe_psql('postgres', q{
		ALTER SYSTEM SET easeml.enabled = on;
		SELECT pg_reload_conf();});
	return;
}

sub log_count
{
	my ($re) = @_;
	my @hits = slurp_file($node->logfile) =~ /$re/g;
	return scalar @hits;
}

# ---- sbatch missing: no launches, one WARNING, resumed by itself -------
quiesce();
my $nobin = "$tmp/nobin";
mkdir $nobin;
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.slurm_bindir = '$nobin';
	SELECT pg_reload_conf();});
my $last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
enable();
sleep 6;
is($node->safe_psql('postgres', qq{SELECT count(*) FROM easeml.runs WHERE id > $last}),
	'0', 'no sbatch: no run is made (none interrupted)');
is(log_count(qr/WARNING:  easeml: sbatch "\Q$nobin\E\/sbatch" cannot be run/), 1,
	'no sbatch: one WARNING names it');
symlink("$bin/$_", "$nobin/$_") for qw(sbatch squeue scontrol sacct scancel);
ok(wait_for(qq{
	SELECT count(*) > 0 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.id > $last AND j.job_id IS NOT NULL}, 30),
	'no sbatch: launches resume by themselves once it is there');

# ---- a job id easeml cannot follow ---------------------------------------
# (jobs end, so that slots free up for new submissions)
fake_mode($bin, 'squeue', 'done');
fake_mode($bin, 'sbatch', 'huge');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs
	 WHERE status = 'interrupted'
	   AND error LIKE 'interrupted: sbatch answered no job id easeml can follow: 99999999999999999999999%'}),
	'huge: the run is interrupted (not the task\'s failure), with the reason');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.trainer_jobs WHERE length(job_id) > 12}),
	'0', 'huge: no job id was clamped and followed');
ok($node->log_contains('cancelling any job its sbatch submitted \(by its name\)'),
	'huge: any job it made is cancelled by name');
fake_mode($bin, 'sbatch', 'ok');

# ---- a tenant's request survives a failed launch -----------------------
quiesce();
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'completed' WHERE name = 'iris'});
fake_mode($bin, 'sbatch', 'down');
enable();
my $asked = query_as($node, 'lab_a', q{SELECT easeml.enqueue('iris', 'gnb')});
ok($node->poll_query_until('postgres', qq{
	SELECT status = 'interrupted' AND error LIKE 'interrupted: sbatch could not reach Slurm%'
	  FROM easeml.runs WHERE id = $asked}),
	'request: its launch fails, the run is interrupted');
fake_mode($bin, 'sbatch', 'ok');
ok(wait_for(qq{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.runs p ON p.id = $asked
	  JOIN easeml.trainer_jobs j ON j.run_id = r.id
	 WHERE r.id > p.id AND r.task_id = p.task_id AND r.model_id = p.model_id
	   AND r.requested_by = 'user' AND r.queued_at = p.queued_at AND j.job_id IS NOT NULL}, 150),
	'request: queued again and submitted once sbatch answers');

# ---- sbatch refuses the job: a launch fault, no task fails -------------
quiesce();
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'active' WHERE name = 'iris'});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris2', 'public.iris', 'label')});
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
fake_mode($bin, 'sbatch', 'refuse');
enable();
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.runs WHERE id > $last AND status <> 'running'}),
	'refused: a launch ends');
sleep 8;
is($node->safe_psql('postgres', qq{
	SELECT string_agg(DISTINCT status || ' | ' || coalesce(error, ''), '; ')
	  FROM easeml.runs WHERE id > $last AND status <> 'running'}),
	'interrupted | interrupted: sbatch refused the run: sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)',
	'refused: runs are interrupted, with sbatch\'s words');
is($node->safe_psql('postgres', q{
	SELECT string_agg(name || ' ' || status, ', ' ORDER BY name) FROM easeml.tasks}),
	'iris active, iris2 active', 'refused: no task fails');
cmp_ok($node->safe_psql('postgres', qq{SELECT count(*) FROM easeml.runs WHERE id > $last}),
	'<=', 4, 'refused: launches pause after a refusal');
ok(log_count(qr/WARNING:  easeml: run \d+: sbatch refused the run: .*Requested time limit is invalid/) >= 1,
	'refused: a WARNING with sbatch\'s words');
fake_mode($bin, 'sbatch', 'ok');
ok(wait_for(qq{
	SELECT count(*) > 0 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.id > $last AND j.job_id IS NOT NULL}, 60),
	'refused: launches resume once sbatch takes jobs');

# ---- a job waiting in Slurm's queue is not timed out -------------------
quiesce();
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'paused' WHERE name = 'iris2';
	SELECT easeml.set_slurm_partition('debug', 1);
	ALTER SYSTEM SET easeml.run_timeout = 3;
	SELECT pg_reload_conf();});
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
fake_mode($bin, 'squeue', 'pending');
enable();
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.id > $last AND j.job_id IS NOT NULL}),
	'pending: a job is submitted');
my $pending = $node->safe_psql('postgres', qq{SELECT min(id) FROM easeml.runs WHERE id > $last});
sleep 8;
is($node->safe_psql('postgres', qq{
	SELECT status || coalesce(': ' || error, '') FROM easeml.runs WHERE id = $pending}),
	'running', 'pending: 8 s in the queue fail nothing (easeml.run_timeout = 3 s)');
is($node->safe_psql('postgres', qq{SELECT count(*) FROM easeml.runs WHERE id > $last AND status = 'failed'}),
	'0', 'pending: no run failed');
fake_mode($bin, 'squeue', 'running');
ok(wait_for(qq{
	SELECT status = 'failed' AND error LIKE 'timed out after easeml.run_timeout = 3 s%'
	  FROM easeml.runs WHERE id = $pending}, 20),
	'pending: once it runs, easeml.run_timeout ends it');

# ---- a tenant's lock on the run's row while sbatch answers -------------
quiesce();
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.run_timeout = 0;
	SELECT pg_reload_conf();});
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
fake_mode($bin, 'sbatch', 'slow');
enable();
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.trainer_jobs j ON j.run_id = r.id
	 WHERE r.id > $last AND r.status = 'running' AND j.job_id IS NULL}),
	'locked: a run is being submitted');
my $slow = $node->safe_psql('postgres', qq{SELECT min(id) FROM easeml.runs WHERE id > $last});
my $holder = $node->background_psql('postgres');
$holder->query_safe(qq{BEGIN; SELECT id FROM easeml.runs WHERE id = $slow FOR UPDATE;});
sleep 9;
is($node->safe_psql('postgres', qq{SELECT job_id IS NULL FROM easeml.trainer_jobs WHERE run_id = $slow}),
	't', 'locked: the job id waits for the lock');
$holder->query_safe('ROLLBACK');
$holder->quit;
ok(wait_for(qq{
	SELECT j.job_id IS NOT NULL AND r.log_path LIKE 'slurm job 1%'
	  FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id WHERE r.id = $slow}, 20),
	'locked: the job id is recorded once the lock is gone');

# ---- a failed scancel is sent again ------------------------------------
quiesce();
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
enable();
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.id > $last AND r.status = 'running' AND j.job_id IS NOT NULL}),
	'scancel: a job runs');
my $victim = $node->safe_psql('postgres', qq{
	SELECT min(r.id) FROM easeml.runs r JOIN easeml.trainer_jobs j ON j.run_id = r.id
	 WHERE r.id > $last AND r.status = 'running' AND j.job_id IS NOT NULL});
fake_mode($bin, 'scancel', 'down');
my $t0 = time;
query_as($node, 'lab_a', qq{SELECT easeml.cancel($victim)});
sleep 8;
my $scancels = scalar(fake_calls($bin, 'scancel', $t0));
diag("scancel ran $scancels times in 8 s with the controller unreachable");
cmp_ok($scancels, '>=', 3, 'scancel: a failed cancel is sent again');
cmp_ok($scancels, '<=', 8, 'scancel: with a backoff');
is($node->safe_psql('postgres', qq{SELECT status FROM easeml.runs WHERE id = $victim}),
	'running', 'scancel: the run waits for its job to end');
fake_mode($bin, 'scancel', 'ok');
ok(wait_for(qq{SELECT status = 'cancelled' FROM easeml.runs WHERE id = $victim}, 40),
	'scancel: the job is cancelled once Slurm answers, the run ends');

# ---- the job's id now names another job ----------------------------------
quiesce();
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
enable();
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.id > $last AND r.status = 'running' AND j.job_id IS NOT NULL}),
	'reused: a job runs');
my $reused = $node->safe_psql('postgres', qq{
	SELECT min(r.id) FROM easeml.runs r JOIN easeml.trainer_jobs j ON j.run_id = r.id
	 WHERE r.id > $last AND r.status = 'running' AND j.job_id IS NOT NULL});
# slurmctld lost its state: its ids began again, another job has this one
fake_mode($bin, 'squeue', 'reused');
fake_mode($bin, 'scontrol', 'reused');
ok(wait_for(qq{
	SELECT status = 'interrupted' AND error LIKE 'interrupted: Slurm no longer knows job %'
	  FROM easeml.runs WHERE id = $reused}, 20),
	'reused: a job id that names another job is no longer followed: its run is interrupted');

# Wait for a log line for at most $seconds; true if it came.
sub wait_for_log
{
	my ($re, $seconds) = @_;
	for (my $t0 = time; time - $t0 < $seconds; usleep(200_000))
	{
		return 1 if log_count($re) > 0;
	}
	return 0;
}

# ---- a killed sbatch that does not end: the loop goes on ---------------
quiesce();
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
fake_mode($bin, 'sbatch', 'escape-once');
enable();
for (my $t0 = time; time - $t0 < 60 && !fake_calls($bin, 'escape-start'); usleep(100_000)) { }
ok(scalar(fake_calls($bin, 'escape-start')), 'killed: an sbatch runs that SIGKILL will not end');
# killed after 30 s; before, the loop then waited 30 s more for its end
ok(wait_for(qq{
	SELECT count(*) > 0 FROM easeml.runs
	 WHERE id > $last AND status = 'interrupted'
	   AND error = 'interrupted: sbatch could not reach Slurm: "sbatch" did not answer within 30 s'}, 45),
	'killed: its run is interrupted once it is killed after its timeout');
ok(!fake_calls($bin, 'escape-end'), 'killed: it has not ended meanwhile');
is($node->safe_psql('postgres', q{
	SELECT extract(epoch FROM clock_timestamp() - loop_at) < 5 FROM easeml.scheduler_status()}),
	't', 'killed: the loop goes on');
# (the code before recorded it only once sbatch ended, 60 s after it began)
wait_for(qq{SELECT count(*) > 0 FROM easeml.runs WHERE id > $last AND status = 'interrupted'}, 40);
my $escaped = $node->safe_psql('postgres', qq{
	SELECT coalesce(min(id), 0) FROM easeml.runs WHERE id > $last AND status = 'interrupted'});
ok(wait_for_log(qr/LOG:  easeml: killed Slurm command "sbatch" \(pid \d+\) has not ended 5 s after SIGKILL; the scheduler goes on/, 15),
	'killed: that it has not ended is logged');
ok(wait_for(qq{
	SELECT count(*) > 0 FROM easeml.trainer_jobs j JOIN easeml.runs r ON r.id = j.run_id
	 WHERE r.id > $escaped AND j.job_id IS NOT NULL}, 20),
	'killed: the next run is submitted meanwhile');
ok(!fake_calls($bin, 'escape-end'), 'killed: still before it ended');
ok(-e "$bin/cancelled." . (1000 + $escaped), 'killed: any job it made is cancelled by name');
ok(wait_for_log(qr/LOG:  easeml: killed Slurm command "sbatch" \(pid \d+\) has ended/, 40),
	'killed: it is reaped once it ends');

# ---- sbatch loses the controller's answer to a job it queued -----------
quiesce();
$last = $node->safe_psql('postgres', 'SELECT coalesce(max(id), 0) FROM easeml.runs');
fake_mode($bin, 'scancel', 'down');
fake_mode($bin, 'sbatch', 'lost-once');
enable();
ok(wait_for(qq{
	SELECT count(*) > 0 FROM easeml.runs
	 WHERE id > $last AND status = 'interrupted'
	   AND error LIKE 'interrupted: sbatch could not reach Slurm: sbatch: error: Batch job submission failed: Socket timed out%'}, 30),
	'lost: the run whose sbatch lost the answer is interrupted');
my $lost = $node->safe_psql('postgres', qq{
	SELECT coalesce(min(id), 0) FROM easeml.runs WHERE id > $last AND status = 'interrupted'});
ok(-e "$bin/name." . (1000 + $lost), 'lost: yet Slurm queued its job');
ok($node->log_contains("run $lost: cancelling any job its sbatch submitted \\(by its name\\)"),
	'lost: its job is cancelled by name');
# the backoff doubles from 1 s: wait for the second try (a loaded machine
# may be slow), then count the tries over 10 s
$t0 = time;
for (my $t1 = time; time - $t1 < 30 && scalar(fake_calls($bin, 'scancel', $t0)) < 2; usleep(200_000)) { }
my $name_cancels = scalar(fake_calls($bin, 'scancel', $t0));
cmp_ok($name_cancels, '>=', 2, 'lost: a failed scancel by name is sent again');
sleep 1 while time - $t0 < 10;
$name_cancels = scalar(fake_calls($bin, 'scancel', $t0));
diag("scancel ran $name_cancels times in " . (time - $t0) . " s with the controller unreachable");
cmp_ok($name_cancels, '<=', 7, 'lost: with a backoff');
ok(!-e "$bin/cancelled." . (1000 + $lost), 'lost: not cancelled while scancel fails');
fake_mode($bin, 'scancel', 'ok');
for (my $t1 = time; time - $t1 < 40 && !-e "$bin/cancelled." . (1000 + $lost); usleep(200_000)) { }
ok(-e "$bin/cancelled." . (1000 + $lost), 'lost: its job is cancelled once scancel succeeds');
sleep 4;
is(scalar(fake_calls($bin, 'scancel', time - 4)), 0, 'lost: and not again');

quiesce();
$node->stop;
done_testing();
