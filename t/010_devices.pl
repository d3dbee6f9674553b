# Devices: the probe fills easeml.devices at start, runs are placed in
# device slots and record their device, a GPU-capable candidate runs on the
# CPU when no GPU is free, disabled devices take no runs, a run out of GPU
# memory fails with that reason and its candidate trains on the CPU, the
# GPU and CPU fits of a candidate score alike, and a new probe notices a
# GPU that is gone.  The GPU is the trainer's CPU emulation of one
# (EASEML_GPU_EMULATE), so this runs where no GPU is.
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
my $real = "$bindir/easeml-trainer";

# the real trainer with an emulated GPU (unless $tmp/no_gpu exists) whose
# memory is the number in $tmp/gpu_memory, if any; each run's environment
# is kept in $tmp/env.<run id>
my $wrapper = trainer_script($tmp, 'gpu_trainer', qq{
[ -n "\$EASEML_RUN_ID" ] && env > "$tmp/env.\$EASEML_RUN_ID"
[ -f "$tmp/no_gpu" ] || export EASEML_GPU_EMULATE=1
[ -f "$tmp/gpu_memory" ] && export EASEML_GPU_EMULATE_MEMORY=\$(cat "$tmp/gpu_memory")
exec "$real" "\$@"});

my $node = easeml_node('devices',
	'easeml.trainer_path' => $wrapper,
	'easeml.max_workers' => 1,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
load_dataset($node, 'wine', 'wine');
make_tenant($node, 'lab_a', 'public.iris', 'public.wine');

# only a few quick candidates: one GPU-only, one that prefers the GPU, one CPU
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'knn-1', 'ridge-1');
	UPDATE easeml.models SET device_kinds = '{cuda}' WHERE name = 'gnb';
	UPDATE easeml.models SET device_kinds = '{cuda,cpu}' WHERE name = 'knn-1';});

is($node->safe_psql('postgres', 'SELECT count(*) FROM easeml.devices'), '0',
	'no device is known before the scheduler probes');
$node->safe_psql('postgres', 'ALTER SYSTEM SET easeml.enabled = on; SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', q{
	SELECT string_agg(name || ':' || kind || ':' || present, ',' ORDER BY name)
	  FROM easeml.devices},
	'cpu:cpu:true,cuda:0:cuda:true'),
	'the probe found the CPU and the (emulated) GPU');
like($node->safe_psql('postgres', "SELECT description FROM easeml.devices WHERE name = 'cuda:0'"),
	qr/emulated GPU.*compute capability 9\.0/, 'the GPU is described');
like($node->safe_psql('postgres', "SELECT description FROM easeml.devices WHERE name = 'cpu'"),
	qr/^\d+ CPU cores?$/, 'so is the CPU');
is($node->safe_psql('postgres',
		"SELECT string_agg(name || '=' || slots, ',' ORDER BY name) FROM easeml.device_usage"),
	'cpu=1,cuda:0=1', 'one slot each (easeml.max_workers = 1 for the CPU)');

# ---- placement ---------------------------------------------------------
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'the task completes');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'and the refit of its deployed run on every row ends');
is($node->safe_psql('postgres', q{
	SELECT string_agg(m.name || ':' || r.status, ',' ORDER BY m.name)
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id WHERE r.purpose = 'select'}),
	'gnb:succeeded,knn-1:succeeded,ridge-1:succeeded', 'every candidate trained');
is($node->safe_psql('postgres', q{
	SELECT r.device || '/' || r.device_kind FROM easeml.runs r
	  JOIN easeml.models m ON m.id = r.model_id WHERE m.name = 'gnb' AND r.purpose = 'select'}),
	'cuda:0/cuda', 'the GPU-only candidate ran on the GPU');
is($node->safe_psql('postgres', q{
	SELECT r.device FROM easeml.runs r
	  JOIN easeml.models m ON m.id = r.model_id WHERE m.name = 'ridge-1' AND r.purpose = 'select'}),
	'cpu', 'the CPU candidate ran on the CPU');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM easeml.runs WHERE (device IS NULL OR device_kind IS NULL) AND started_at IS NOT NULL"),
	'0', 'every run records its device');

# each trainer saw its own device and nothing else
foreach my $row (split /\n/, $node->safe_psql('postgres',
	"SELECT id, device, device_kind FROM easeml.runs WHERE status = 'succeeded' ORDER BY id"))
{
	my ($id, $device, $kind) = split /\|/, $row;
	my $env = slurp_file("$tmp/env.$id");
	like($env, qr/^EASEML_DEVICE=\Q$device\E$/m, "run $id was told its device $device");
	like($env, qr/^EASEML_DEVICE_KIND=$kind$/m, "run $id was told its device kind");
	my $visible = $kind eq 'cuda' ? '0' : '';
	like($env, qr/^CUDA_VISIBLE_DEVICES=$visible$/m,
		"run $id sees " . ($kind eq 'cuda' ? 'only GPU 0' : 'no GPU'));
	like($env, qr/^EASEML_TIME_LIMIT=0$/m, "run $id knows it has no time limit");
}

# ---- a disabled GPU takes no runs; the GPU-capable candidate uses the CPU
$node->safe_psql('postgres', "SELECT easeml.disable_device('cuda:0')");
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('wine', 'public.wine', 'label')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine'"),
	'a task completes with the GPU disabled');
is($node->safe_psql('postgres', q{
	SELECT string_agg(m.name || ':' || r.device, ',' ORDER BY m.name)
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'wine' AND r.purpose = 'select'}),
	'knn-1:cpu,ridge-1:cpu',
	'the GPU-capable candidate ran on the CPU, the GPU-only one did not run');

# a queued GPU-only run waits for a GPU; a CPU run queued after it goes first
query_as($node, 'lab_a', "SELECT easeml.enqueue('wine', 'gnb')");
query_as($node, 'lab_a', "SELECT easeml.enqueue('wine', 'ridge-1')");
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	  JOIN easeml.models m ON m.id = r.model_id
	 WHERE t.name = 'wine' AND r.requested_by = 'user' AND m.name = 'ridge-1' AND r.purpose = 'select'
	   AND r.status = 'succeeded'}),
	'the queued CPU run was served');
is($node->safe_psql('postgres', q{
	SELECT string_agg(m.name || ':' || r.status, ',' ORDER BY r.id)
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'wine' AND r.requested_by = 'user'}),
	'gnb:queued,ridge-1:succeeded', 'the GPU-only run is not placed while the GPU is disabled');
$node->safe_psql('postgres', "SELECT easeml.enable_device('cuda:0')");
ok($node->poll_query_until('postgres', q{
	SELECT r.status || '/' || r.device FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'wine' AND m.name = 'gnb' AND r.purpose = 'select'},
	'succeeded/cuda:0'), 'it runs on the GPU once the GPU is enabled');

# ---- out of GPU memory: a failed run, then the candidate trains on the CPU
write_file("$tmp/gpu_memory", '20000');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name = 'mlp-64';
	UPDATE easeml.models SET device_kinds = '{cuda,cpu}' WHERE name = 'mlp-64';});
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris_oom', 'public.iris', 'label')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris_oom'"),
	'a task whose GPU run runs out of memory completes');
is($node->safe_psql('postgres', q{
	SELECT string_agg(r.status || '/' || r.device || '/' || r.exit_code, ',' ORDER BY r.id)
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'iris_oom' AND r.purpose = 'select'}),
	'failed/cuda:0/5,succeeded/cpu/0',
	'the run out of GPU memory failed, then the candidate trained on the CPU');
like($node->safe_psql('postgres', q{
	SELECT r.error FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris_oom' AND r.status = 'failed' AND r.purpose = 'select'}),
	qr/ran out of device memory \(exit code 5\): .*mlp: out of GPU memory/,
	'its error says it ran out of GPU memory');

# ---- the same candidate on the GPU and on the CPU scores alike -------------
unlink("$tmp/gpu_memory");
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('wine_gpu', 'public.wine', 'label')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine_gpu'"),
	'a task trains its GPU-capable candidate');
my ($gpu_score, $gpu_kind) = split /\|/, $node->safe_psql('postgres', q{
	SELECT r.score, r.metrics ->> 'device_kind' FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'wine_gpu' AND r.device = 'cuda:0'
	   AND r.purpose = 'select'});
is($gpu_kind, 'cuda', 'the run trained on the GPU (its metrics say so)');
$node->safe_psql('postgres', "SELECT easeml.disable_device('cuda:0')");
my $cpu_run = query_as($node, 'lab_a', "SELECT easeml.enqueue('wine_gpu', 'mlp-64')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'succeeded' FROM easeml.runs WHERE id = $cpu_run"),
	'the same candidate trains again, on the CPU');
my $cpu_score = $node->safe_psql('postgres', "SELECT score FROM easeml.runs WHERE id = $cpu_run");
cmp_ok(abs($gpu_score - $cpu_score), '<=', 0.01,
	"GPU and CPU accuracies agree within a point ($gpu_score and $cpu_score)");
$node->safe_psql('postgres', "SELECT easeml.enable_device('cuda:0')");

# ---- a new probe notices that the GPU is gone -----------------------------
write_file("$tmp/no_gpu");
$node->safe_psql('postgres', 'SELECT easeml.probe_devices()');
ok($node->poll_query_until('postgres',
		"SELECT NOT present FROM easeml.devices WHERE name = 'cuda:0'"),
	'easeml.probe_devices() marks the vanished GPU absent');
is($node->safe_psql('postgres', "SELECT enabled FROM easeml.devices WHERE name = 'cuda:0'"),
	't', 'its settings are kept');
$node->safe_psql('postgres', 'SELECT easeml.set_device_slots(\'cpu\', 2)');
is($node->safe_psql('postgres', "SELECT slots FROM easeml.device_usage WHERE name = 'cpu'"),
	'2', 'the CPU\'s slots can be set');

# ---- a probe that fails leaves the CPU only ----------------------------------
my $broken = trainer_script($tmp, 'broken_probe', qq{
case "\$1" in --probe) echo 'not a probe'; exit 1;; esac
exec "$real" "\$@"});
unlink("$tmp/no_gpu");
$node->safe_psql('postgres', "ALTER SYSTEM SET easeml.trainer_path = '$broken'");
$node->restart;
ok($node->poll_query_until('postgres',
		"SELECT string_agg(name, ',' ORDER BY name) FROM easeml.devices WHERE present", 'cpu'),
	'after a failed probe only the CPU is present');
ok($node->wait_for_log(qr/the device probe failed \(trainer exited with code 1\); using the CPU only/),
	'the server log says why');

$node->stop;
done_testing();

sub write_file
{
	my ($path, $content) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $content if defined $content;
	close($fh);
	return;
}
