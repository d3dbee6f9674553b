# Custom trainers: candidates an admin registers as external commands are
# trained through the scheduler under the documented contract (data on a
# pipe, device, seed and time limit in the environment, JSON lines back).
# Nothing a tenant wrote reaches their command line or environment; a
# command that runs out of GPU memory has its candidate placed on the CPU;
# a cancel stops the command too.  The GPU is emulated (EASEML_GPU_EMULATE).
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
my $python = '/usr/bin/python3';
my $examples = "$ENV{TESTDIR}/scripts/custom_trainers";
my $trainer = trainer_script($tmp, 'gpu_trainer',
	qq{EASEML_GPU_EMULATE=1 exec "$bindir/easeml-trainer" "\$@"});

# a command that records what it was given, then trains like the example
my $recorder = "$tmp/recorder.py";
open(my $fh, '>', $recorder) or die $!;
print $fh <<"EOF";
import json, os, sys
sys.path.insert(0, "$examples")
import easeml_custom as ec
task = ec.read_task()
with open(os.path.join("$tmp", "seen.%s.json" % os.environ["EASEML_SEED"]), "w") as f:
    json.dump({"argv": sys.argv, "env": dict(os.environ), "header": task.header,
               "cwd": os.getcwd(), "n_val": len(task.y_val)}, f)
for epoch in range(1, 4):
    ec.progress(epoch, 1.0 / epoch)
ec.result(0.5, note="recorded", epochs=7)
EOF
close($fh);

# a command that runs out of memory on a GPU and trains on the CPU
my $gpu_hungry = "$tmp/gpu_hungry.py";
open($fh, '>', $gpu_hungry) or die $!;
print $fh <<"EOF";
import os, sys
sys.path.insert(0, "$examples")
import easeml_custom as ec
task = ec.read_task()
if os.environ["EASEML_DEVICE_KIND"] == "cuda":
    ec.fail("CUDA out of memory (tried to allocate 80 GiB)", ec.OUT_OF_MEMORY)
ec.result(0.75, device=os.environ["EASEML_DEVICE"])
EOF
close($fh);

my $node = easeml_node('custom',
	'easeml.trainer_path' => $trainer,
	'easeml.max_workers' => 1,
	'easeml.run_timeout' => '10min',
	'easeml.enabled' => 'off',
	# the scheduler is killed at the end: the server restarts, as in production
	restart_after_crash => 'on');
load_dataset($node, 'iris', 'iris');
# a tenant's table whose column names are shell and SQL injection attempts
$node->safe_psql('postgres', q{
	CREATE TABLE public.hostile AS
	SELECT sepal_length AS "$(touch /tmp/easeml-pwned)", sepal_width AS "`id`; rm -rf ~",
		   petal_length AS "x' OR '1'='1", petal_width, label AS "label; reboot"
	  FROM public.iris});
make_tenant($node, 'lab_a', 'public.iris', 'public.hostile');

$node->safe_psql('postgres', qq{
	UPDATE easeml.models SET enabled = false;
	SELECT easeml.add_custom_model('sk-logreg', ARRAY['$python', '$examples/sklearn_logreg.py'],
								   kinds => '{classification,regression}', params => '{"C": 10}');
	SELECT easeml.add_custom_model('recorder', ARRAY['$python', '$recorder', '--flag', 'two words']);
	SELECT easeml.add_custom_model('gpu-hungry', ARRAY['$python', '$gpu_hungry'],
								   device_kinds => '{cuda,cpu}');
	SELECT easeml.add_custom_model('broken', ARRAY['/bin/sh', '-c', 'echo "cannot go on" >&2; exit 2']);
	ALTER SYSTEM SET easeml.enabled = on;
	SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres',
		"SELECT present FROM easeml.devices WHERE name = 'cuda:0'"),
	'the emulated GPU is there');

query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label');
	INSERT INTO easeml.tasks (name, source, target, seed) VALUES ('bad', 'public.hostile', 'label; reboot', 7);});
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM easeml.tasks WHERE status IN ('completed', 'failed')"),
	'both tasks finish');

# ---- the scikit-learn example -------------------------------------------
my ($status, $score, $estimator, $epoch, $device, $n_iter) = split /\|/, $node->safe_psql('postgres', q{
	SELECT r.status, r.score, r.metrics -> 'custom' ->> 'estimator', r.epoch, r.device,
		   r.metrics -> 'custom' ->> 'n_iter'
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE m.name = 'sk-logreg' AND t.name = 'iris'});
is($status, 'succeeded', 'the scikit-learn custom trainer succeeded');
cmp_ok($score, '>', 0.8, "its validation accuracy ($score) is far above chance");
is($estimator, 'LogisticRegression', 'the metrics keep what the command reported');
cmp_ok($n_iter, '>', 1, "its fit took $n_iter iterations");
is($epoch, $n_iter, 'its progress shows them all (the epoch of its last progress line)');
is($device, 'cpu', 'a CPU-only candidate ran on the CPU');
is($node->safe_psql('postgres', q{
	SELECT substr(a.data, 1, 8) = 'EASEMLA1'::bytea AND a.bytes > 100
	  FROM easeml.artifacts a JOIN easeml.runs r ON r.id = a.run_id
	  JOIN easeml.models m ON m.id = r.model_id JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE m.name = 'sk-logreg' AND t.name = 'iris'}),
	't', 'its pickled estimator is kept as the run\'s artifact');

# ---- what the command saw -------------------------------------------------
my $seen = slurp_file("$tmp/seen.7.json");
my ($recorded_run, $run_dir) = split /\|/, $node->safe_psql('postgres', q{
	SELECT r.id, regexp_replace(r.log_path, '/[^/]*$', '')
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE m.name = 'recorder' AND t.name = 'bad'});
like($seen, qr/"argv": \["\Q$recorder\E", "--flag", "two words"\]/,
	'the command line is exactly the registered one');
unlike($seen, qr/EASEML_CONNINFO|password|dbname/, 'the command gets no database connection string');
like($seen, qr/"EASEML_DEVICE": "cpu"/, 'it knows its device');
like($seen, qr/"CUDA_VISIBLE_DEVICES": ""/, 'a CPU run sees no GPU');
like($seen, qr/"EASEML_SEED": "7"/, 'it gets the task\'s seed');
like($seen, qr/"EASEML_TIME_LIMIT": "600"/, 'and the time limit in seconds');
like($seen, qr/"EASEML_ARTIFACT_PATH": "\Q$run_dir\E\/artifact.bin"/,
	'and where to leave an artifact, in its run directory');
like($seen, qr/"cwd": "\Q$run_dir\E"/, 'it runs in its run directory');
like($seen, qr/"features": \["\$\(touch \/tmp\/easeml-pwned\)", "`id`; rm -rf ~", "x' OR '1'='1", "petal_width"\]/,
	'the tenant\'s column names arrive on the data pipe, as data');
my ($argv_env) = $seen =~ /("argv".*?"header")/s;
unlike($argv_env, qr/pwned|rm -rf|OR '1'|reboot/,
	'no name a tenant wrote is in its command line or environment');
ok(!-e '/tmp/easeml-pwned', 'nothing a tenant wrote was run');
like($seen, qr/"n_val": 30/, 'it got the validation rows of the built-in split');
is($node->safe_psql('postgres', "SELECT score || '/' || epoch FROM easeml.runs WHERE id = $recorded_run"),
	'0.5/7', 'its score and the epochs its result line says (over its last progress line, 3) were recorded');

# ---- failures -------------------------------------------------------------
like($node->safe_psql('postgres', q{
	SELECT r.status || ': ' || r.error FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 JOIN easeml.tasks t ON t.id = r.task_id WHERE m.name = 'broken' AND t.name = 'iris'}),
	qr/^failed: .*the custom trainer exited with code 2: cannot go on$/,
	'a failing command fails its run with its last words');
is($node->safe_psql('postgres', q{
	SELECT string_agg(r.status || '/' || r.device || '/' || coalesce(r.exit_code::text, '-'), ',' ORDER BY r.id)
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE m.name = 'gpu-hungry' AND t.name = 'iris'}),
	'failed/cuda:0/5,succeeded/cpu/0',
	'out of GPU memory: the run fails, and the candidate then trains on the CPU');
like($node->safe_psql('postgres', q{
	SELECT r.error FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	  JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE m.name = 'gpu-hungry' AND t.name = 'iris' AND r.status = 'failed'}),
	qr/exited with code 5: CUDA out of memory/, 'the failed run says why');
is($node->safe_psql('postgres', "SELECT status FROM easeml.tasks WHERE name = 'iris'"),
	'completed', 'the task completed all the same');

# ---- a cancel stops the command -------------------------------------------
my $pidfile = "$tmp/sleeper.pid";
$node->safe_psql('postgres', qq{
	SELECT easeml.add_custom_model('sleeper', ARRAY['/bin/sh', '-c', 'echo \$\$ > $pidfile; exec sleep 600']);});
my $run = query_as($node, 'lab_a', "SELECT easeml.enqueue('iris', 'sleeper')");
ok($node->poll_query_until('postgres', "SELECT (pg_stat_file('$pidfile', true)).size > 0"),
	'the sleeping command runs');
my $pid = slurp_file($pidfile);
chomp $pid;
query_as($node, 'lab_a', "SELECT easeml.cancel($run)");
ok($node->poll_query_until('postgres', "SELECT status = 'cancelled' FROM easeml.runs WHERE id = $run"),
	'its run is cancelled');
ok(process_gone($pid), 'and the command is gone');

# ---- a command that ignores SIGTERM does not outlive a dead scheduler -------
# The scheduler's death reaches the trainer as SIGTERM (PR_SET_PDEATHSIG),
# which it passes on to the command; easeml.cancel_grace (1 s here) later
# the trainer kills its process group, the command's child and itself
# with it.  The scheduler killed with SIGKILL restarts the server
# (restart_after_crash).
my $stubborn = "$tmp/stubborn.pids";
$node->safe_psql('postgres', qq{
	SELECT easeml.add_custom_model('stubborn',
		ARRAY['/bin/sh', '-c', 'trap "" TERM; sleep 600 & echo \$\$ \$! > $stubborn; wait']);});
$run = query_as($node, 'lab_a', "SELECT easeml.enqueue('iris', 'stubborn')");
ok($node->poll_query_until('postgres', "SELECT (pg_stat_file('$stubborn', true)).size > 0"),
	'the command that ignores SIGTERM runs');
my ($shell, $child) = split ' ', slurp_file($stubborn);
my $trainer_pid = $node->safe_psql('postgres', "SELECT pid FROM easeml.runs WHERE id = $run");
is(kill('KILL', scheduler_pid($node)), 1, 'the scheduler is killed');
ok(process_gone($shell), 'the command is gone');
ok(process_gone($child), 'its child too');
ok(process_gone($trainer_pid), 'and its trainer');
like(slurp_file($node->data_dir . "/easeml_runs/$run/trainer.log"),
	qr/custom trainer: still running 1\.0 s after SIGTERM; killing it, its process group and this trainer/,
	'the trainer\'s log says why it ended');
ok($node->poll_query_until('postgres', "SELECT status = 'interrupted' FROM easeml.runs WHERE id = $run"),
	'after the restart the run is recorded interrupted');

$node->stop;
done_testing();
