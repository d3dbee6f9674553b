# A step of the wall clock (an NTP correction, a virtual machine resumed)
# changes no interval the scheduler measures (src/module/monoclock.h).
# The server runs under libfaketime (Debian's faketime package; skipped,
# saying why, without it), which moves the wall clock of every server
# process and leaves CLOCK_MONOTONIC alone: two hours forward do not time
# out a run with easeml.run_timeout = 30 min, and two hours back after a
# failed launch do not pause launches for two hours.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($faketime) = glob('/usr/lib/*/faketime/libfaketime.so.1');
plan skip_all => 'libfaketime is not installed (Debian package faketime)'
  unless defined $faketime && -e $faketime;
plan skip_all => 'prlimit (util-linux) is not installed'
  if system('prlimit --version >/dev/null 2>&1') != 0;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $clock = "$tmp/faketime.rc";

# Move the wall clock of every server process, relative to the real one
# (seconds); each process sees it within FAKETIME_CACHE_DURATION.
sub set_clock
{
	my ($offset) = @_;
	open(my $fh, '>', "$clock.new") or die "$clock.new: $!";
	print $fh "$offset\n";
	close($fh);
	rename("$clock.new", $clock) or die "rename: $!";
	sleep 2;
	return;
}

set_clock('+0');
my $node;
{
	# the server only: this script's own clock stays the real one
	local $ENV{LD_PRELOAD} = $faketime;
	local $ENV{FAKETIME_TIMESTAMP_FILE} = $clock;
	local $ENV{FAKETIME_CACHE_DURATION} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	$node = easeml_node('clock',
		'easeml.max_workers' => 1,
		'easeml.run_timeout' => '30min',
		'easeml.enabled' => 'off');
}
# PostgreSQL 15's postmaster forks the first scheduler from a signal
# handler, inside the select() libfaketime runs unfaked: that process
# would keep the real clock.  The one it starts again (5 s after the
# first ends) comes from its loop and sees the fake one.
my $first = scheduler_pid($node);
$node->safe_psql('postgres', "SELECT pg_terminate_backend($first)");
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'easeml scheduler' AND pid <> $first}),
	'the scheduler started again');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');

# Wait up to $secs seconds for a query to return true.
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

# How far the server's wall clock is from this script's, in seconds.
sub server_offset
{
	return $node->safe_psql('postgres',
		'SELECT round(extract(epoch FROM now()))::int8') - time();
}

# ---- two hours forward under a running trainer ------------------------------
my $pidfile = "$tmp/sleeper.pid";
$node->safe_psql('postgres', qq{
	UPDATE easeml.models SET enabled = false;
	SELECT easeml.add_custom_model('sleeper',
		ARRAY['/bin/sh', '-c', 'echo \$\$ > $pidfile; exec sleep 600']);
	ALTER SYSTEM SET easeml.enabled = on; SELECT pg_reload_conf();});
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
ok(within(60, "SELECT count(*) = 1 FROM easeml.runs WHERE status = 'running'"),
	'the run starts');
foreach (1 .. 300)
{
	last if -s $pidfile;
	select(undef, undef, undef, 0.2);
}
ok(-s $pidfile, 'its sleeping command runs');
my $run = $node->safe_psql('postgres', "SELECT id FROM easeml.runs WHERE status = 'running'");
cmp_ok(abs(server_offset()), '<', 60, 'the server\'s clock is the real one');

set_clock('+7200');
cmp_ok(abs(server_offset() - 7200), '<', 60,
	'the server\'s wall clock stepped two hours forward');
ok($node->poll_query_until('postgres', q{
	SELECT abs(extract(epoch FROM clock_timestamp() - loop_at)) < 60
	  FROM easeml.scheduler_status()}),
	'and so did the scheduler\'s');
ok(!within(8, "SELECT status <> 'running' FROM easeml.runs WHERE id = $run"),
	'the run is not timed out by a step of the clock (easeml.run_timeout = 30 min)');
is($node->safe_psql('postgres',
		"SELECT status || coalesce(': ' || error, '') FROM easeml.runs WHERE id = $run"),
	'running', 'it is still running');
my $sleeper = slurp_file($pidfile);
chomp $sleeper;
ok(kill(0, $sleeper), 'and so is its command');

# not safe_psql: on a run that ended, the cancel is an error
$node->psql('postgres', "SELECT easeml.cancel($run)", extra_params => [ '-U', 'lab_a' ]);
ok(within(30, "SELECT status = 'cancelled' FROM easeml.runs WHERE id = $run"),
	'a cancel still ends it');

# ---- two hours back after a launch failed -----------------------------------
# The scheduler may not start a process (RLIMIT_NPROC at 1): a launch
# fails, its run is interrupted and launches pause for 10 s.  The clock
# then goes back two hours: the pause still ends 10 s after it began.
my $sched = scheduler_pid($node);
my $soft = `prlimit --pid $sched --nproc --raw --noheadings --output=SOFT`;
$soft =~ s/\s+//g;
die "cannot read the scheduler's RLIMIT_NPROC" if $? != 0 || $soft eq '';
system("prlimit --pid $sched --nproc=1:") == 0
  or die 'prlimit could not lower the scheduler\'s RLIMIT_NPROC';
$node->safe_psql('postgres', "UPDATE easeml.models SET enabled = (name = 'gnb')");
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris2', 'public.iris', 'label')");
ok(within(30, "SELECT count(*) > 0 FROM easeml.runs WHERE status = 'interrupted'"),
	'a launch fails while the scheduler may not start a process');
set_clock('+0');
system("prlimit --pid $sched --nproc=$soft:") == 0
  or die 'prlimit could not restore the scheduler\'s RLIMIT_NPROC';
cmp_ok(abs(server_offset()), '<', 60,
	'the server\'s wall clock stepped two hours back');
ok(within(40, "SELECT count(*) > 0 FROM easeml.runs WHERE status = 'succeeded'"),
	'launches resume after the pause, not two hours later');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs WHERE status = 'failed'}),
	'0', 'no run failed');
is(scheduler_pid($node), $sched, 'the scheduler kept running');

$node->stop;
done_testing();
