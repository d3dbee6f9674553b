# A trainer this machine cannot start for a while fails no run and no task:
# out of processes (the scheduler's RLIMIT_NPROC at 1, so posix_spawn fails
# with EAGAIN) the run is recorded interrupted with the reason, launches
# pause, and the candidate trains once the limit is back; with
# easeml.trainer_path naming a file not installed yet nothing is launched
# (a WARNING names the setting) until the file is there.  A full disk under
# the run's validation_rows.txt (a link to /dev/full) costs the file, not
# the run.
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
my $node = easeml_node('spawn',
	'easeml.max_workers' => 1,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
# enabled without a task: the device probe (a process) runs and ends first
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'knn-1', 'knn-5');
	ALTER SYSTEM SET easeml.enabled = on; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM easeml.devices WHERE present"),
	'the scheduler knows its devices');

# Wait up to $secs seconds for a query to return true; no 3-minute wait
# where the code before the fix never gets there.
sub within
{
	my ($secs, $sql) = @_;
	foreach (1 .. $secs * 5)
	{
		return 1 if $node->safe_psql('postgres', $sql) eq 't';
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

sub task_runs
{
	my ($task) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT coalesce(string_agg(r.status, ',' ORDER BY r.id), '')
		  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = '$task'});
}

# ---- out of processes: the trainer cannot be forked ------------------------
SKIP:
{
	skip 'prlimit (util-linux) is not installed', 9
	  if system('prlimit --version >/dev/null 2>&1') != 0;
	my $sched = scheduler_pid($node);
	my $soft = `prlimit --pid $sched --nproc --raw --noheadings --output=SOFT`;
	$soft =~ s/\s+//g;
	die "cannot read the scheduler's RLIMIT_NPROC" if $? != 0 || $soft eq '';
	my $offset = -s $node->logfile;
	system("prlimit --pid $sched --nproc=1:") == 0
	  or die 'prlimit could not lower the scheduler\'s RLIMIT_NPROC';
	query_as($node, 'lab_a',
		"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
	ok(within(30, q{
		SELECT count(*) > 0 FROM easeml.runs WHERE status IN ('interrupted', 'failed')}),
		'a launch fails while the scheduler may not start a process');
	sleep 3;
	my $first = task_runs('iris');
	is($first, 'interrupted',
		'its run is interrupted, not failed, and launches pause (no second try within 3 s)');
	like($node->safe_psql('postgres',
			"SELECT error FROM easeml.runs WHERE status = 'interrupted'"),
		qr/^interrupted: could not start trainer ".*": Resource temporarily unavailable$/,
		'its error says why');
	is($node->safe_psql('postgres', "SELECT status FROM easeml.tasks WHERE name = 'iris'"),
		'active', 'the task is not failed');
	my $log = substr(slurp_file($node->logfile), $offset);
	like($log,
		qr/WARNING:  easeml: run \d+: could not start trainer .*Resource temporarily unavailable\n.*DETAIL:  The run is recorded as interrupted and its candidate trained again; launches pause for a while\./,
		'the server log says so');

	system("prlimit --pid $sched --nproc=$soft:") == 0
	  or die 'prlimit could not restore the scheduler\'s RLIMIT_NPROC';
	ok(within(60, "SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
		'with processes again, the task completes');
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM easeml.runs WHERE status = 'failed'}),
		'0', 'no run failed');
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM easeml.runs i JOIN easeml.runs s
		    ON s.model_id = i.model_id AND s.task_id = i.task_id AND s.id > i.id
		   AND s.purpose = 'select'
		 WHERE i.status = 'interrupted' AND s.status = 'succeeded'}),
		'1', 'the interrupted candidate was trained again, and succeeded');
	is(scheduler_pid($node), $sched, 'the scheduler kept running');
}

# ---- the trainer not installed yet ---------------------------------------------
# Nothing is claimed while it cannot be run: queued or chosen, a run would
# only fail.
ok(within(60, "SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'nothing is in flight');
my $later = "$tmp/later/easeml-trainer";
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "ALTER SYSTEM SET easeml.trainer_path = '$later'");
reload_worker($node);
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris2', 'public.iris', 'label')");
ok(!within(5, q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris2'}),
	'no run is made while the trainer is missing');
like(substr(slurp_file($node->logfile), $offset),
	qr/WARNING:  easeml: the trainer "\Q$later\E" cannot be run: No such file or directory; no run is launched until it can\n.*HINT:  Check easeml.trainer_path/,
	'a WARNING names the file and the setting');
is($node->safe_psql('postgres', "SELECT status FROM easeml.tasks WHERE name = 'iris2'"),
	'active', 'the task waits, active');

# a device probe asked for now cannot start: the CPU only, and the probe
# is tried again later (else a GPU machine would stay on its CPU)
$node->safe_psql('postgres', 'SELECT easeml.probe_devices()');
ok($node->wait_for_log(qr/using the CPU only\n.*DETAIL:  The devices are probed again later\./, $offset),
	'a probe that cannot start leaves the CPU only and says it will be tried again');
my $probed = -s $node->logfile;

# installed without a reload: launches resume by themselves
mkdir("$tmp/later") or die "mkdir: $!";
trainer_script("$tmp/later", 'easeml-trainer', qq{exec "$bindir/easeml-trainer" "\$@"});
ok($node->wait_for_log(qr/LOG:  easeml: device probe: /, $probed),
	'once the trainer is there, the devices are probed again');
unlike(substr(slurp_file($node->logfile), $probed), qr/could not start/,
	'and that probe started');
ok(within(60, "SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris2'"),
	'once the trainer is there, the task is trained and completes');
is($node->safe_psql('postgres', q{
	SELECT string_agg(r.status, ',' ORDER BY r.id) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris2' AND r.purpose = 'select'}),
	'succeeded,succeeded,succeeded', 'its three candidates succeeded');
like(substr(slurp_file($node->logfile), $offset),
	qr/LOG:  easeml: the trainer "\Q$later\E" can be run; launches resume/,
	'the log says launches resumed');

# ---- a full disk under validation_rows.txt -------------------------------------
# The sweep keeps the directories of run ids not handed out yet: the
# next runs' validation_rows.txt are links to /dev/full.
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.trainer_path; SELECT pg_reload_conf();});
reload_worker($node);
ok(within(60, "SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'nothing is in flight');
my $next = $node->safe_psql('postgres',
	'SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM easeml.runs_id_seq');
my $base = $node->data_dir . '/easeml_runs';
foreach my $id ($next .. $next + 4)
{
	mkdir("$base/$id", 0700) or die "mkdir $base/$id: $!";
	symlink('/dev/full', "$base/$id/validation_rows.txt") or die "symlink: $!";
}
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris3', 'public.iris', 'label')");
ok(within(60, "SELECT status IN ('completed', 'failed') FROM easeml.tasks WHERE name = 'iris3'"),
	'a task whose runs cannot write their validation rows ends');
my @runs = split /\n/, $node->safe_psql('postgres', qq{
	SELECT r.id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris3' AND r.purpose = 'select' AND r.id BETWEEN $next AND $next + 4
	 ORDER BY r.id});
cmp_ok(scalar(@runs), '>=', 3, 'its candidates ran in the prepared directories');
is($node->safe_psql('postgres', qq{
	SELECT string_agg(DISTINCT status || coalesce(': ' || error, ''), ', ') FROM easeml.runs
	 WHERE id IN (@{[ join(',', @runs, 0) ]})}),
	'succeeded', 'and succeeded');
is($node->safe_psql('postgres', "SELECT status FROM easeml.tasks WHERE name = 'iris3'"),
	'completed', 'the task completed');
is(scalar(grep {
	slurp_file("$base/$_/trainer.log") =~
		/warning: could not write ".*validation_rows.txt": No space left on device; the run goes on without it/
} @runs), scalar(@runs), 'each run\'s log says the file was not written');
ok(-l "$base/$runs[0]/validation_rows.txt" && -c '/dev/full', 'the link and /dev/full are left alone');

$node->stop;
done_testing();
