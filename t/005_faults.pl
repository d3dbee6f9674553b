# The fault campaign of issue 8, kept as a test.  Trainers are blocked in
# their data query (a tenant's view that sleeps when the trainer reads it),
# which is where a killed trainer used to leave its database session
# running the tenant's query:
#  - cancel, timeout and drop of such a run end the trainer and its session
#    quickly, without waiting for SIGKILL;
#  - 50 trainers killed with SIGKILL or SIGSEGV give 50 failed runs with
#    their reasons, no session left behind, and the same postmaster;
#  - ten immediate shutdowns with runs in flight: every run is interrupted
#    (never failed), no trainer outlives the server, and the candidates are
#    trained again;
#  - a trainer that lost its database connection gives an interrupted run.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = easeml_node('faults',
	'easeml.max_workers' => 1,
	'easeml.cancel_grace' => '10s',
	'easeml.max_failures' => 1000,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a');
blocking_view($node, 'lab_a', 'public.iris', 'lab_a.iris_slow');
# the tasks read their source live (no snapshot), so each trainer runs the view
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('slow1', 'lab_a.iris_slow', 'label', false), ('slow2', 'lab_a.iris_slow', 'label', false)});
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.enabled = on; SELECT pg_reload_conf();});
my $postmaster = postmaster_pid($node);

# Sessions blocked in the tenant's query: trainers' backends sleeping in it.
my $blocked_sessions = q{
	SELECT count(*) FROM pg_stat_activity
	 WHERE backend_type = 'client backend' AND wait_event = 'PgSleep'};

# Wait for $n runs whose trainers are blocked in the data query; returns
# [run id, trainer pid, backend pid] for each.  One statement reads them:
# a run may end as soon as a poll has seen it (a time limit), and a later
# read would then miss it, or find a new run with no trainer pid yet.
sub blocked_runs
{
	my ($n) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		# a run and a backend pair up by start order: only their sets matter
		my @rows = split /\n/, $node->safe_psql('postgres', qq{
			SELECT r.id || '|' || r.pid || '|' || b.pid
			  FROM (SELECT id, pid, row_number() OVER (ORDER BY started_at, id) AS i
					  FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL) r
			  JOIN (SELECT pid, row_number() OVER (ORDER BY backend_start, pid) AS i
					  FROM pg_stat_activity
					 WHERE backend_type = 'client backend' AND wait_event = 'PgSleep') b
				ON b.i = r.i
			 WHERE (SELECT count(*) FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL) = $n
			   AND ($blocked_sessions) = $n});
		return map { [ split /\|/ ] } @rows if @rows == $n;
		usleep(100_000);
	}
	die "no $n blocked run(s)";
}

# Seconds until a trainer process and a backend are both gone ($cap s at
# most, 30 by default).
sub seconds_until_gone
{
	my ($trainer, $backend, $t0, $cap) = @_;
	$cap //= 30;
	while (time - $t0 < $cap)
	{
		my $left = $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $backend");
		return time - $t0 if $left eq '0' && !kill(0, $trainer);
		usleep(20_000);
	}
	return 999;
}

# ---- cancel, timeout and drop of a run blocked in its data query -----------
my ($r) = blocked_runs(1);
my ($run, $trainer, $backend) = @$r;
my $t0 = time;
is(query_as($node, 'lab_a', "SELECT easeml.cancel($run)"), 'cancelling',
	'the tenant cancels a run blocked in its data query');
my $took = seconds_until_gone($trainer, $backend, $t0);
ok($took < 2, sprintf('its trainer and its session end within 2 s (%.2f s)', $took));
ok($node->poll_query_until('postgres',
		"SELECT status = 'cancelled' FROM easeml.runs WHERE id = $run"),
	'the run is cancelled');
unlike($node->safe_psql('postgres', "SELECT error FROM easeml.runs WHERE id = $run"),
	qr/signal 9/, 'the trainer stopped on SIGTERM, without waiting for SIGKILL');

# the time limit is set once a run is blocked: that run times out at the
# scheduler's next step
($r) = blocked_runs(1);
($run, $trainer, $backend) = @$r;
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.run_timeout = '2s'; SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' AND error LIKE 'timed out%' FROM easeml.runs WHERE id = $run"),
	'a run blocked in its data query times out');
ok(seconds_until_gone($trainer, $backend, time) < 30,
	'its trainer and its session are gone');
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.run_timeout; SELECT pg_reload_conf();});

query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot) VALUES ('doomed', 'lab_a.iris_slow', 'label', false)});
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'paused' WHERE name IN ('slow1', 'slow2')});
# the run of slow1 or slow2 in flight is not stopped by the pause: cancel it
# (until the scheduler has reloaded the reset time limit, that run may
# time out first: then there is nothing left to cancel)
my @inflight = blocked_runs(1);
my ($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.cancel($inflight[0][0])",
	extra_params => [ '-U', 'lab_a' ]);
die "cancel of run $inflight[0][0] failed: $err"
  if $rc != 0 && $err !~ /has already ended: it is failed/;
# (not "no blocked session": the next run, of doomed, may block at once)
$node->poll_query_until('postgres',
	"SELECT status <> 'running' FROM easeml.runs WHERE id = $inflight[0][0]")
  or die "run $inflight[0][0] is still running";
($r) = blocked_runs(1);
($run, $trainer, $backend) = @$r;
is($node->safe_psql('postgres',
		"SELECT t.name FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE r.id = $run"),
	'doomed', 'a run of the task to drop is blocked in its data query');
query_as($node, 'lab_a', "SELECT easeml.drop_task('doomed')");
ok(seconds_until_gone($trainer, $backend, time) < 5,
	'dropping the task ends its trainer and its session');
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'active' WHERE name IN ('slow1', 'slow2')});

# ---- 50 trainers killed with SIGKILL or SIGSEGV -------------------------------
my ($killed, $sessions_left) = (0, 0);
for my $i (1 .. 50)
{
	my ($k) = blocked_runs(1);
	my ($krun, $kpid, $kbackend) = @$k;
	my $sig = $i % 2 ? 'KILL' : 'SEGV';
	$killed += kill($sig, $kpid);
	ok($node->poll_query_until('postgres',
			"SELECT status = 'failed' FROM easeml.runs WHERE id = $krun"),
		"killed run $krun is marked failed");
	next if seconds_until_gone($kpid, $kbackend, time, 10) < 10;
	# left behind: count it, and end it so that the loop can go on
	$sessions_left++;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($kbackend)");
	last if $sessions_left == 3;
}
is($killed, 50, '50 trainers were killed');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs
	 WHERE status = 'failed' AND error ~ 'terminated by signal (9|11) '}),
	'50', '50 failed runs name the signal that ended their trainer');
is($sessions_left, 0, 'no killed trainer left its database session behind');
is(postmaster_pid($node), $postmaster, 'the postmaster was never restarted');

# ---- ten immediate shutdowns with runs in flight -------------------------------
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.max_workers = 2; SELECT pg_reload_conf();});
my @interrupted;
my ($orphans, $not_interrupted) = (0, 0);
for my $round (1 .. 10)
{
	my @flight = blocked_runs(2);
	my @trainers = trainer_pids($node);
	# the last round: candidates trained again after it do not block
	query_as($node, 'lab_a', 'UPDATE lab_a.ctl SET sleep = false') if $round == 10;
	$node->stop('immediate');
	foreach my $pid (@trainers)
	{
		$orphans++ unless process_gone($pid);
	}
	$node->start;
	foreach my $f (@flight)
	{
		ok($node->poll_query_until('postgres',
				"SELECT status NOT IN ('running', 'queued') FROM easeml.runs WHERE id = $f->[0]"),
			"run $f->[0] in flight at the stop ends");
		my $st = $node->safe_psql('postgres', "SELECT status FROM easeml.runs WHERE id = $f->[0]");
		$not_interrupted++ if $st ne 'interrupted';
		push @interrupted, $f->[0];
	}
}
is(scalar(@interrupted), 20, '20 runs were in flight at ten immediate shutdowns');
is($not_interrupted, 0, 'every one of them is interrupted, none failed');
is($orphans, 0, 'no trainer outlived an immediate shutdown');
my $ids = join(',', @interrupted);
ok( $node->poll_query_until('postgres', qq{
	SELECT bool_and(EXISTS (SELECT 1 FROM easeml.runs s
	                         WHERE s.task_id = i.task_id AND s.model_id = i.model_id
	                           AND s.status = 'succeeded' AND s.id > i.id))
	  FROM easeml.runs i WHERE i.id IN ($ids)}),
	'every interrupted candidate is trained again and succeeds');
is($node->safe_psql('postgres', $blocked_sessions), '0',
	'no session is left in the tenant\'s query');

# ---- a trainer that lost its database connection -----------------------------
$node->safe_psql('postgres', q{
	UPDATE easeml.tasks SET status = 'paused' WHERE name IN ('slow1', 'slow2')});
# (an ensemble queued just before the pause waits, queued, for the task to
# resume: docs/models.md 8)
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM easeml.runs
		 WHERE status = 'running' OR (status = 'queued' AND purpose <> 'ensemble')}),
	'the paused tasks have no run in flight');
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $real = $node->config_data('--bindir') . '/easeml-trainer';
my $once = trainer_script($tmp, 'lose_connection_once', qq{
if [ -e '$tmp/lost' ]; then exec '$real' "\$@"; fi
touch '$tmp/lost'
echo 'server closed the connection unexpectedly' >&2
exit 75});
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$once';
	ALTER SYSTEM SET easeml.max_workers = 1;
	SELECT pg_reload_conf();});
make_tenant($node, 'lab_b', 'public.iris');
query_as($node, 'lab_b', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('lost', 'public.iris', 'label', 2)});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'lost' AND r.status = 'interrupted'}),
	'a run whose trainer lost its connection is interrupted, not failed');
like($node->safe_psql('postgres', q{
	SELECT r.error FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'lost' AND r.status = 'interrupted'}),
	qr/lost its database connection/, 'its error says why');
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs i JOIN easeml.tasks t ON t.id = i.task_id
	  JOIN easeml.runs s ON s.task_id = i.task_id AND s.model_id = i.model_id
	 WHERE t.name = 'lost' AND i.status = 'interrupted' AND s.status = 'succeeded' AND s.purpose = 'select'}),
	'its candidate is trained again');

is(postmaster_pid($node) > 0, 1, 'the server runs');
$node->stop;
done_testing();
