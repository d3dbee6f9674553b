# What a DBA does to a production easeml database: dump and restore it while
# runs are in flight, point the scheduler at the restored copy, and run the
# server with statement and idle timeouts set for its clients.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = easeml_node('dba', 'easeml.max_workers' => 1);
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');

# finished runs and a leaderboard
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('iris', 'public.iris', 'label', 2)});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'a task finishes');

# a run in flight (its trainer waits on the view) and a queued one behind it
blocking_view($node, 'lab_a', 'public.iris', 'lab_a.held_iris');
# the task reads its source live (no snapshot), so its trainer runs the view
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target, snapshot)
	VALUES ('held', 'lab_a.held_iris', 'label', false)});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'held' AND r.status = 'running'}),
	'a run is in flight');
my $queued = query_as($node, 'lab_a', q{
	SELECT easeml.enqueue('held', m.name) FROM easeml.models m
	 WHERE m.enabled AND m.family = 'knn' AND NOT EXISTS
		(SELECT FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		  WHERE t.name = 'held' AND r.model_id = m.id)
	 ORDER BY m.name LIMIT 1});
is($node->safe_psql('postgres', "SELECT status FROM easeml.runs WHERE id = $queued"),
	'queued', 'and one queued behind it');

# ---- pg_dump / pg_restore with runs in flight --------------------------------
my $events = q{SELECT string_agg(id || ':' || run_id || ':' || status, ',' ORDER BY id)
	FROM easeml.run_events};
my $board = q{SELECT string_agg(task || ':' || rank || ':' || run_id || ':' || score, ','
	ORDER BY task, rank) FROM easeml.leaderboard};
my ($events_before, $board_before) =
  map { $node->safe_psql('postgres', $_) } ($events, $board);
my $dump = "$tmp/easeml.dump";
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', $dump ],
	'pg_dump with runs in flight');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
my ($stdout, $stderr);
my $ok = IPC::Run::run [ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
  '>', \$stdout, '2>', \$stderr;
ok($ok, 'pg_restore of runs in flight succeeds');
is($stderr, '', 'without an error');
is($node->safe_psql('restored', $events), $events_before,
	'every run event is restored, none added');
is($node->safe_psql('restored', $board), $board_before, 'the leaderboard is restored');

# ---- a tenant's backup: the command of docs/security.md -----------------------
# pg_dump dumps every table easeml registers for dumps (-n easeml selects
# them all), the internal ones too: as a tenant it must not stop at one it
# may not read, and it must hold the tenant's rows and no other tenant's.
make_tenant($node, 'lab_b', 'public.iris');
query_as($node, 'lab_b', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs)
	VALUES ('lab_b_only', 'public.iris', 'label', 1)});
my ($tdump, $terr);
{
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	# exactly as documented: pg_dump --enable-row-security -n easeml -U <tenant> <db>
	$ok = IPC::Run::run [ 'pg_dump', '--enable-row-security', '-n', 'easeml', '-U', 'lab_a',
		'postgres' ], '>', \$tdump, '2>', \$terr;
}
ok($ok, 'a tenant\'s documented pg_dump --enable-row-security -n easeml succeeds')
  or diag($terr);
unlike($terr, qr/permission denied|error/i, 'without a permission error');
like($tdump, qr/^COPY easeml\.tasks /m, 'the dump holds easeml.tasks');
like($tdump, qr/\bheld\b/, 'and the tenant\'s own task');
unlike($tdump, qr/lab_b/, 'but no row of another tenant');

# CREATE EXTENSION where the scheduler does not serve says so
$node->safe_psql('postgres', 'CREATE DATABASE other');
my ($rc, $out, $err) = $node->psql('other', 'CREATE EXTENSION easeml');
like($err, qr/WARNING:  the easeml scheduler serves database "postgres", not "other"/,
	'CREATE EXTENSION in a database the scheduler does not serve warns');

# ---- run directories outlive a scheduler that finds no extension -------------
# The scheduler starts in a database without easeml (a new easeml.database,
# a database about to be restored into), then sees CREATE EXTENSION before
# any run row is there, as during a pg_restore: the directories of the runs
# restored elsewhere stay.
my $rundir = $node->data_dir . '/easeml_runs';
my @logs = split /\n/, $node->safe_psql('restored',
	'SELECT log_path FROM easeml.runs WHERE log_path IS NOT NULL ORDER BY id');
ok(@logs >= 3 && !grep({ !-f $_ } @logs), 'the restored runs\' logs are there');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->append_conf('postgresql.conf', "easeml.database = 'fresh'\n");
$node->restart;
my $offset = -s $node->logfile;
$node->safe_psql('fresh', 'CREATE EXTENSION easeml');
ok($node->wait_for_log(qr/easeml: device probe/, $offset),
	'the scheduler works in a database where the extension was just created');
ok(!grep({ !-f $_ } @logs), 'no run directory was removed');

# ---- the scheduler resumes on the restored database --------------------------
my ($running) = $node->safe_psql('restored',
	"SELECT id FROM easeml.runs WHERE status = 'running'");
my $max_run = $node->safe_psql('restored', 'SELECT max(id) FROM easeml.runs');
$node->safe_psql('restored', 'UPDATE lab_a.ctl SET sleep = false');
$node->append_conf('postgresql.conf', "easeml.database = 'restored'\n");
$node->restart;
ok($node->poll_query_until('restored', qq{
	SELECT status = 'interrupted' FROM easeml.runs WHERE id = $running}),
	'the run restored as running is marked interrupted');
is($node->safe_psql('restored', qq{
	SELECT string_agg(status, ',' ORDER BY id) FROM easeml.run_events WHERE run_id = $running}),
	'running,interrupted', 'with its event after the restored one');
ok($node->poll_query_until('restored', qq{
	SELECT status = 'succeeded' FROM easeml.runs WHERE id = $queued}),
	'the restored queued run is trained');
ok($node->poll_query_until('restored', qq{
	SELECT count(*) > 0 FROM easeml.runs WHERE id > $max_run AND status = 'succeeded'}),
	'new runs get ids past the restored ones and succeed');

# ---- client timeouts do not reach trainers ------------------------------------
# A custom command that trains for 3 s leaves the trainer's session idle.
my $sleeper = "$tmp/sleeper.py";
open(my $fh, '>', $sleeper) or die $!;
print $fh <<"EOF";
import sys, time
sys.path.insert(0, "$ENV{TESTDIR}/scripts/custom_trainers")
import easeml_custom as ec
task = ec.read_task()
time.sleep(3)
ec.result(0.5, note="slept")
EOF
close($fh);
$node->safe_psql('restored', qq{
	SELECT easeml.add_custom_model('sleeper', ARRAY['/usr/bin/python3', '$sleeper']);
	ALTER SYSTEM SET idle_session_timeout = '1s';
	ALTER SYSTEM SET idle_in_transaction_session_timeout = '1s';
	ALTER SYSTEM SET statement_timeout = '1s';
	SELECT pg_reload_conf();});
$offset = -s $node->logfile;
my $slept = $node->safe_psql('restored', "SELECT easeml.enqueue('iris', 'sleeper')",
	extra_params => [ '-U', 'lab_a' ]);
ok($node->poll_query_until('restored', qq{
	SELECT status NOT IN ('queued', 'running') FROM easeml.runs WHERE id = $slept}),
	'a 3 s run ends under 1 s client timeouts');
is($node->safe_psql('restored', "SELECT status FROM easeml.runs WHERE id = $slept"),
	'succeeded', 'it succeeds');
ok(!$node->log_contains(qr/idle-session timeout|idle-in-transaction timeout|statement timeout/,
		$offset),
	'no trainer session was ended by a client timeout');
my $log = $node->safe_psql('restored', "SELECT log_path FROM easeml.runs WHERE id = $slept");
unlike(slurp_file($log), qr/connected again/, 'the trainer kept its session');

# ---- the scheduler's health from SQL ------------------------------------------
# An administrator's lock on easeml.runs makes the scheduler's rounds fail
# (lock_timeout); scheduler_status() says so, and when the loop last went
# round.  Only pg_read_all_stats sees the error's text.
my $health = q{SELECT loop_at > now() - interval '5 s' AND last_error IS NULL
	FROM easeml.scheduler_status()};
ok($node->poll_query_until('restored', $health), 'scheduler_status() shows a loop that goes round');
my $errors = $node->safe_psql('restored', 'SELECT errors FROM easeml.scheduler_status()');
my $locker = IPC::Run::start [ 'psql', '-X', '-q', '-d', $node->connstr('restored'), '-c', q{
	SET statement_timeout = 0; BEGIN; LOCK TABLE easeml.runs IN ACCESS EXCLUSIVE MODE;
	SELECT pg_sleep(4); COMMIT;} ];
ok($node->poll_query_until('restored', qq{
	SELECT errors > $errors AND last_error LIKE '55P03: %lock timeout%'
	   AND last_error_at > now() - interval '5 s'
	  FROM easeml.scheduler_status()}),
	'it counts the rounds a lock made fail, with the SQLSTATE and message of the latest');
is($node->safe_psql('restored', q{
	SELECT errors > 0 AND last_error IS NULL FROM easeml.scheduler_status()},
	extra_params => [ '-U', 'lab_a' ]), 't', 'a tenant sees the count, not the text');
$locker->finish;
my $released = $node->safe_psql('restored', 'SELECT now()');
ok($node->poll_query_until('restored', qq{
	SELECT loop_at > '$released' AND last_error_at < '$released' FROM easeml.scheduler_status()}),
	'after the lock the loop goes round without errors');

$node->stop;

# ---- easeml created where no scheduler runs -----------------------------------
my $bare = PostgreSQL::Test::Cluster->new('bare');
$bare->init;
$bare->start;
($rc, $out, $err) = $bare->psql('postgres', 'CREATE EXTENSION easeml');
is($rc, 0, 'CREATE EXTENSION works without shared_preload_libraries');
like($err, qr/WARNING:  easeml is not in shared_preload_libraries: no scheduler will train/,
	'and warns that nothing will be trained');
$bare->stop;
done_testing();
