# The Slurm launcher against a real single-node Slurm (t/SlurmTest.pm):
# each run is one sbatch job named after it, its trainer connects back as
# a login role with no privilege of its own and proves itself with the
# run's token, and reports through the database.  A normal run, a GPU
# run, a cancel, Slurm's time limit and easeml's, the node dying mid-run
# (the run is interrupted with Slurm's reason and its candidate trained
# again) and a database restart under a running job (the job is followed
# again, never submitted twice).
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use SlurmTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

if (my $why = slurm_missing())
{
	plan skip_all => $why;
}

my $slurm;
END { stop_slurm($slurm) if $slurm; }
$slurm = start_slurm();
ok(1, 'a single-node Slurm cluster is up');

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $python = '/usr/bin/python3';
my $examples = "$ENV{TESTDIR}/scripts/custom_trainers";

# a custom trainer that takes params.seconds, reporting progress each second
my $sleeper = "$tmp/sleeper.py";
open(my $fh, '>', $sleeper) or die $!;
print $fh <<"EOF";
import os, sys, time
sys.path.insert(0, "$examples")
import easeml_custom as ec
task = ec.read_task()
seconds = float(task.params.get("seconds", 1))
start = time.time()
epoch = 0
while True:
    epoch += 1
    ec.progress(epoch, 1.0 / epoch)
    if time.time() - start >= seconds:
        break
    time.sleep(1)
ec.result(0.5, slept=seconds, cuda=os.environ.get("CUDA_VISIBLE_DEVICES"),
          kind=os.environ.get("EASEML_DEVICE_KIND"))
EOF
close($fh);
chmod 0644, $sleeper;

my $node = easeml_node('slurm',
	'easeml.launcher' => 'slurm',
	'easeml.slurm_conf' => $slurm->{conf},
	'easeml.slurm_output' => "$slurm->{dir}/job-%j.out",
	'easeml.slurm_job_prefix' => 'easeml-t016',
	# the trainer connects back as a role that may only act as a trainer
	'easeml.trainer_conninfo' => 'user=easeml_remote',
	'easeml.run_timeout' => 0,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
$node->safe_psql('postgres', qq{
	CREATE ROLE easeml_remote LOGIN;
	SELECT easeml.grant_trainer('easeml_remote');
	UPDATE easeml.models SET enabled = false;
	SELECT easeml.add_custom_model('quick', ARRAY['$python', '$sleeper'], params => '{"seconds": 1}');
	SELECT easeml.add_custom_model('slow', ARRAY['$python', '$sleeper'], params => '{"seconds": 600}');
	SELECT easeml.add_custom_model('medium', ARRAY['$python', '$sleeper'], params => '{"seconds": 25}');
	SELECT easeml.add_custom_model('on-gpu', ARRAY['$python', '$sleeper'], params => '{"seconds": 1}',
								   device_kinds => '{cuda}');
	UPDATE easeml.models SET enabled = false WHERE name IN ('slow', 'medium', 'on-gpu');
	SELECT easeml.set_slurm_partition('debug', 2);
	SELECT easeml.set_slurm_partition('gpu', 1, 'cuda');
	ALTER SYSTEM SET easeml.enabled = on;
	SELECT pg_reload_conf();});
is($node->safe_psql('postgres',
		"SELECT rolsuper FROM pg_roles WHERE rolname = 'easeml_remote'"),
	'f', 'the trainer\'s login role is not a superuser');

# the run of a task's model, as "id|status|error"
sub run_of
{
	my ($task, $model, $extra) = @_;
	$extra //= '';
	return $node->safe_psql('postgres', qq{
		SELECT r.id || '|' || r.status || '|' || coalesce(r.error, '')
		  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		  JOIN easeml.models m ON m.id = r.model_id
		 WHERE t.name = '$task' AND m.name = '$model' AND r.purpose = 'select' $extra
		 ORDER BY r.id DESC LIMIT 1});
}

sub job_of
{
	my ($run) = @_;
	return $node->safe_psql('postgres',
		"SELECT job_id FROM easeml.trainer_jobs WHERE run_id = $run");
}

# what happened to a run, when a check failed
sub diag_run
{
	my ($run, $job) = @_;
	diag($node->safe_psql('postgres',
		"SELECT id, status, exit_code, error, log_path FROM easeml.runs WHERE id = $run"));
	diag("job $job: " . slurm_cmd($slurm, 'scontrol', '--oneliner', 'show', 'job', $job));
	diag("its output: " . slurp_file("$slurm->{dir}/job-$job.out"))
	  if -e "$slurm->{dir}/job-$job.out";
	return;
}

# wait until a task's run of a model is running and its job runs in Slurm
sub wait_job_running
{
	my ($task, $model) = @_;
	ok($node->poll_query_until('postgres', qq{
		SELECT r.status = 'running' AND r.epoch >= 1
		  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		  JOIN easeml.models m ON m.id = r.model_id
		 WHERE t.name = '$task' AND m.name = '$model' AND r.purpose = 'select'
		 ORDER BY r.id DESC LIMIT 1}), "$task: the $model run trains");
	my ($run) = split /\|/, run_of($task, $model);
	my $job = job_of($run);
	diag_run($run, $job) unless slurm_job($slurm, $job)->{JobState} eq 'RUNNING';
	is(slurm_job($slurm, $job)->{JobState}, 'RUNNING', "$task: its Slurm job $job runs");
	return ($run, $job);
}

# wait until a task's run of a model has its Slurm job (submitted; it may
# already have ended)
sub wait_job_submitted
{
	my ($task, $model) = @_;
	ok($node->poll_query_until('postgres', qq{
		SELECT j.job_id IS NOT NULL
		  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		  JOIN easeml.models m ON m.id = r.model_id
		  JOIN easeml.trainer_jobs j ON j.run_id = r.id
		 WHERE t.name = '$task' AND m.name = '$model' AND r.purpose = 'select'
		 ORDER BY r.id DESC LIMIT 1}), "$task: the $model run's Slurm job is submitted");
	my ($run) = split /\|/, run_of($task, $model);
	return ($run, job_of($run));
}

# ---- a normal run ----------------------------------------------------------
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('normal', 'public.iris', 'label', 1);});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'normal'"),
	'normal: the task completes through Slurm');
my ($run, $status, $error) = split /\|/, run_of('normal', 'quick');
is($status, 'succeeded', "normal: the run succeeded $error");
is($node->safe_psql('postgres',
		"SELECT score || '/' || device || '/' || (epoch >= 1) || '/' || (metrics ? 'custom') FROM easeml.runs WHERE id = $run"),
	'0.5/slurm:debug/true/true',
	'normal: its score, progress and metrics came back through the database');
my $job = job_of($run);
like($job, qr/^\d+$/, "normal: it was Slurm job $job");
my $info = slurm_job($slurm, $job);
is($info->{JobName}, "easeml-t016-run$run", 'normal: the job\'s name carries the run id');
is($info->{JobState} . '/' . $info->{ExitCode}, 'COMPLETED/0:0', 'normal: the job completed');
is($info->{Partition}, 'debug', 'normal: in the partition of its device');
like(slurp_file("$slurm->{dir}/job-$job.out"), qr/run $run: done/,
	'normal: the trainer ran in the job');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'normal'}),
	'1', 'normal: exactly one run');

# the token is what lets the trainer's role act for a run
my ($ret, $out, $err) = $node->psql('postgres', "SELECT easeml_trainer.spec($run)",
	extra_params => [ '-U', 'easeml_remote' ]);
like($err, qr/may not act as the trainer of run $run/,
	'the trainer\'s role without a token may not read a run\'s spec');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT easeml_trainer.attach($run, repeat('0', 64))",
	extra_params => [ '-U', 'easeml_remote' ]);
like($err, qr/not the trainer of run $run/, 'a wrong token is refused');
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM easeml.trainer_jobs',
	extra_params => [ '-U', 'easeml_remote' ]);
like($err, qr/permission denied/, 'the trainer\'s role reads no table');
($ret, $out, $err) = $node->psql('postgres', "SELECT easeml_trainer.result($run, 0, '{}', NULL)",
	extra_params => [ '-U', 'lab_a' ]);
like($err, qr/permission denied/, 'a tenant cannot report a result');

# ---- a candidate that uses a GPU gets one from Slurm ----------------------
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = (name = 'on-gpu') WHERE name IN ('quick', 'on-gpu');});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('gpu', 'public.iris', 'label', 1);});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'gpu'"),
	'gpu: the task completes');
($run, $status, $error) = split /\|/, run_of('gpu', 'on-gpu');
is($status, 'succeeded', "gpu: the run succeeded $error");
is($node->safe_psql('postgres', qq{
	SELECT device || '/' || device_kind || '/' || (metrics -> 'custom' ->> 'kind') || '/'
		   || coalesce(metrics -> 'custom' ->> 'cuda', 'none')
	  FROM easeml.runs WHERE id = $run}),
	'slurm:gpu/cuda/cuda/0', 'gpu: placed on the GPU partition, where Slurm granted it GPU 0');
$info = slurm_job($slurm, job_of($run));
is($info->{Partition} . '/' . $info->{TresPerNode}, 'gpu/gres:gpu:1', 'gpu: its job asked for one GPU');
is($node->safe_psql('postgres', qq{
	SELECT coalesce(metrics -> 'custom' ->> 'cuda', 'none') FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'normal'}),
	'', 'normal: a CPU run sees no GPU');

# ---- a cancel --------------------------------------------------------------
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = (name = 'slow') WHERE name IN ('on-gpu', 'slow');});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('cancel', 'public.iris', 'label', 1);});
($run, $job) = wait_job_running('cancel', 'slow');
query_as($node, 'lab_a', "SELECT easeml.cancel($run)");
ok($node->poll_query_until('postgres', "SELECT status = 'cancelled' FROM easeml.runs WHERE id = $run"),
	'cancel: the run is cancelled');
like(slurm_job($slurm, $job)->{JobState}, qr/^CANCELLED/, 'cancel: scancel ended its job');

# ---- Slurm's own time limit (an admin shortened the job's) ------------------
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('slurmlimit', 'public.iris', 'label', 1);});
($run, $job) = wait_job_running('slurmlimit', 'slow');
slurm_cmd($slurm, 'scontrol', 'update', "JobId=$job", 'TimeLimit=1');
ok($node->poll_query_until('postgres', "SELECT status = 'failed' FROM easeml.runs WHERE id = $run"),
	'slurmlimit: the run fails when Slurm\'s time limit ends its job');
like((split /\|/, run_of('slurmlimit', 'slow'))[2],
	qr/^timed out: Slurm job $job ended TIMEOUT/, 'slurmlimit: as timed out, in Slurm\'s words');
is(slurm_job($slurm, $job)->{JobState}, 'TIMEOUT', 'slurmlimit: Slurm says TIMEOUT');

# ---- a time limit ----------------------------------------------------------
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.run_timeout = '8s';
	SELECT pg_reload_conf();});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('limit', 'public.iris', 'label', 1);});
# (not wait_job_running: under load the run may reach its 8 s before its
# trainer reports progress, and the check would wait for a run that ended)
($run, $job) = wait_job_submitted('limit', 'slow');
is(slurm_job($slurm, $job)->{TimeLimit}, '00:01:00',
	'limit: the job\'s time limit is the run\'s budget, in whole minutes');
ok($node->poll_query_until('postgres', "SELECT status = 'failed' FROM easeml.runs WHERE id = $run"),
	'limit: the run fails');
like((split /\|/, run_of('limit', 'slow'))[2], qr/timed out after easeml.run_timeout = 8 s/,
	'limit: as timed out');
like(slurm_job($slurm, $job)->{JobState}, qr/^CANCELLED/, 'limit: its job was ended');
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.run_timeout = 0;
	SELECT pg_reload_conf();});

# ---- the node dies mid-run -------------------------------------------------
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('node', 'public.iris', 'label', 3);});
($run, $job) = wait_job_running('node', 'slow');
ok(kill_node($slurm) > 0, 'node: slurmd, the job\'s step and the trainer are killed');
ok($node->poll_query_until('postgres', "SELECT status = 'interrupted' FROM easeml.runs WHERE id = $run"),
	'node: the run is interrupted');
like((split /\|/, run_of('node', 'slow', "AND r.id = $run"))[2],
	qr/^interrupted: .*Slurm job $job ended NODE_FAIL/,
	'node: with Slurm\'s reason');
start_slurmd($slurm);
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'node' AND r.id > $run AND r.status = 'running' AND r.epoch >= 1}),
	'node: its candidate is trained again once the node is back');
my ($again) = split /\|/, run_of('node', 'slow');
isnt(job_of($again), $job, 'node: in a new job');
query_as($node, 'lab_a', "SELECT easeml.cancel($again)");
ok($node->poll_query_until('postgres', "SELECT status = 'cancelled' FROM easeml.runs WHERE id = $again"),
	'node: (the new run is cancelled)');

# ---- a database restart under a running job ------------------------------
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = (name = 'medium') WHERE name IN ('slow', 'medium');});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('restart', 'public.iris', 'label', 1);});
($run, $job) = wait_job_running('restart', 'medium');
$node->restart;
ok($node->poll_query_until('postgres', "SELECT status = 'succeeded' FROM easeml.runs WHERE id = $run"),
	'restart: the run that was training succeeds after the restart');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'restart'}),
	'1', 'restart: it was not trained again');
is(job_of($run), $job, 'restart: in the job it had');
is(scalar(() = slurm_cmd($slurm, 'squeue', '--noheader', '--states=all',
			"--name=easeml-t016-run$run", '--format=%i') =~ /^\d+$/mg),
	1, 'restart: Slurm got one job for it, not two');
ok($node->log_contains("run $run: following its Slurm job $job again"),
	'restart: the scheduler followed the job again');

# ---- the controller is down: nothing is burnt, runs wait for it ------------
stop_slurmctld($slurm);
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = (name = 'quick') WHERE name IN ('medium', 'quick');});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('ctld', 'public.iris', 'label', 1);});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'ctld' AND r.status = 'interrupted'}),
	'ctld: a run that could not be submitted is interrupted');
like((split /\|/, run_of('ctld', 'quick', "AND r.status = 'interrupted'"))[2],
	qr/^interrupted: sbatch could not reach Slurm/, 'ctld: saying so');
is($node->safe_psql('postgres', q{
	SELECT status FROM easeml.tasks WHERE name = 'ctld'}), 'active', 'ctld: the task waits');
start_slurmctld($slurm);
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'ctld'"),
	'ctld: once the controller is back the task completes');
is((split /\|/, run_of('ctld', 'quick'))[1], 'succeeded', 'ctld: its candidate trained');

$node->stop;
done_testing();
