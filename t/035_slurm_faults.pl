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
#   the run fails to start, saying so; before, the id was clamped to
#   9223372036854775807 and followed.
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

# ---- a job id easeml cannot follow ---------------------------------------
fake_mode($bin, 'sbatch', 'huge');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs
	 WHERE status = 'failed' AND error LIKE 'sbatch answered no job id easeml can follow: 99999999999999999999999%'}),
	'huge: the run fails to start, with the reason');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.trainer_jobs WHERE length(job_id) > 12}),
	'0', 'huge: no job id was clamped and followed');
fake_mode($bin, 'sbatch', 'ok');

$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.enabled = off;
	SELECT pg_reload_conf();
	SELECT easeml.cancel(id) FROM easeml.runs WHERE status IN ('queued', 'running');});
$node->stop;
done_testing();
