# easeml.run_directory never names the data directory, anything PostgreSQL
# keeps in it, or a tablespace: the scheduler removes numeric directories
# there, and base/<oid> are databases (a run directory of 'base' once
# removed base/1, base/4 and base/5).  The scheduler sweeps only a
# directory it made (the marker file .easeml_run_directory; an older
# version's default easeml_runs is adopted), and in it only directories
# that hold a trainer.log (src/worker/rundir.c, docs/operations.md "Disk").
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Path qw(make_path);
use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $marker = '.easeml_run_directory';
# nothing is launched: the runs below are rows written as the superuser
my $node = easeml_node('rundir', 'easeml.enabled' => 'off');
my $pgdata = $node->data_dir;
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab', 'public.iris');

# ALTER SYSTEM's answer: 'ok' or the SQLSTATE and message
sub set_rundir
{
	my ($value) = @_;
	my ($rc, $out, $err) = $node->psql('postgres',
		"ALTER SYSTEM SET easeml.run_directory = '$value'",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $rc == 0 ? 'ok' : $err;
}

# whether the log matched after offset within 30 s (wait_for_log dies)
sub logged
{
	my ($re, $offset) = @_;
	foreach (1 .. 300)
	{
		return 1 if $node->log_contains($re, $offset);
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

sub file_text
{
	my ($path, $text) = @_;
	make_path(dirname($path));
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $text;
	close($fh);
	return;
}

# ---- refused values ----------------------------------------------------------
mkdir("$tmp/ts") or die $!;
$node->safe_psql('postgres', "CREATE TABLESPACE ts LOCATION '$tmp/ts'");
my ($ts_version) = glob("$tmp/ts/PG_*");
mkdir("$pgdata/mine") or die $!;
symlink("$pgdata/base", "$tmp/to_base") or die $!;
my %refused = (
	'' => 'empty',
	'.' => 'the data directory',
	'..' => 'above the data directory',
	'base' => 'the databases',
	'global' => 'the shared catalogs',
	'pg_wal' => 'the WAL',
	'pg_tblspc' => 'the tablespace links',
	'log' => 'the server log directory\'s default',
	'base/1' => 'a database',
	'easeml_runs/../base' => 'base, spelt with ..',
	'easeml_runs/x' => 'a directory below one in the data directory',
	'mine' => 'an existing entry easeml did not make',
	$pgdata => 'the data directory\'s absolute path',
	"$pgdata/" => 'the same, with a slash',
	"$pgdata/base" => 'base, by its absolute path',
	dirname($pgdata) => 'a directory holding the data directory',
	"$tmp/to_base" => 'a link to base outside the data directory',
	"$tmp/ts" => 'a tablespace location',
	$ts_version => 'a tablespace\'s version directory',);
foreach my $value (sort keys %refused)
{
	like(set_rundir($value),
		qr/ERROR:  22023: .*easeml\.run_directory/,
		"'$value' ($refused{$value}) is refused with SQLSTATE 22023");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_file_settings'
	  . " WHERE name = 'easeml.run_directory'"), '0', 'none was written');
like(set_rundir('mine'), qr/HINT:  .*\Q$marker\E/,
	'the hint for an existing entry names the marker file');
file_text("$pgdata/mine/$marker", '');
is(set_rundir('mine'), 'ok', 'with the marker, it is easeml\'s and accepted');
is(set_rundir('easeml_runs'), 'ok', 'the default name is accepted');
is(set_rundir('new_runs'), 'ok', 'a new name in the data directory is accepted');
is(set_rundir("$tmp/elsewhere"), 'ok', 'a path outside the data directory is accepted');

# ---- a directory easeml did not make is never swept -------------------------
# A shared directory with numeric entries: 2 looks like a run directory
# (a trainer.log), 3 does not.  Runs 1 to 3 of a task exist, and the
# task is dropped: before, both went.
my $shared = "$tmp/shared";
file_text("$shared/2/trainer.log", "not easeml's\n");
file_text("$shared/2/keep.txt", "keep me\n");
file_text("$shared/3/keep.txt", "keep me\n");
is(set_rundir($shared), 'ok', 'run_directory set to a shared directory');
reload_worker($node);
query_as($node, 'lab',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('t1', 'public.iris', 'label')");
$node->safe_psql('postgres', q{
	INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at, finished_at, seconds)
	SELECT t.id, 'lab', m.id, 'succeeded', now(), now(), 1
	  FROM easeml.tasks t, (SELECT id FROM easeml.models ORDER BY id LIMIT 3) m
	 WHERE t.name = 't1'});
is($node->safe_psql('postgres', 'SELECT max(id) FROM easeml.runs'), '3', 'runs 1 to 3 exist');
my $offset = -s $node->logfile;
query_as($node, 'lab', "SELECT easeml.drop_task('t1')");
my $warned = 0;
foreach (1 .. 300)
{
	$warned = $node->log_contains(qr/WARNING: .*\Q$shared\E.*\Q$marker\E/, $offset);
	last if $warned || !-e "$shared/3/keep.txt" || !-e "$shared/2/keep.txt";
	select(undef, undef, undef, 0.1);
}
ok(-f "$shared/3/keep.txt", 'a numeric directory in it survives the sweep');
ok(-f "$shared/2/keep.txt", 'one with a trainer.log too');
ok($warned, 'the scheduler says why it sweeps nothing there');
like(slurp_file($node->logfile, $offset), qr/HINT: .*\Q$shared\/$marker\E/,
	'and how to have it swept');

# ---- with the marker, only run directories go ----------------------------------
file_text("$shared/$marker", '');
$offset = -s $node->logfile;
$node->restart;		# the scheduler sweeps at its start
ok(logged(qr/easeml: removed 1 run directory/, $offset),
	'with the marker, the sweep removes a directory');
ok(!-e "$shared/2", 'the one that looks like a run\'s');
ok(-f "$shared/3/keep.txt", 'not one without a trainer.log');
ok(!$node->log_contains(qr/WARNING: .*\Q$marker\E/, $offset), 'and warns no more');

# ---- the default directory of an older version is adopted --------------------
# An older easeml made easeml_runs without the marker; run 1's directory
# is left of the dropped task.
file_text("$pgdata/easeml_runs/1/trainer.log", "run 1\n");
file_text("$pgdata/easeml_runs/probe.log", "probe\n");
$node->safe_psql('postgres', 'ALTER SYSTEM RESET easeml.run_directory');
$offset = -s $node->logfile;
$node->restart;
ok(logged(qr/easeml: removed 1 run directory/, $offset),
	'the default directory without the marker is swept');
ok(-f "$pgdata/easeml_runs/$marker", 'it has the marker now');
ok(!-e "$pgdata/easeml_runs/1" && -f "$pgdata/easeml_runs/probe.log",
	'its gone run\'s directory went, nothing else');

# ---- a directory the scheduler makes has the marker -------------------------
is(set_rundir("$tmp/fresh"), 'ok', 'run_directory set to a new directory');
$node->safe_psql('postgres', 'ALTER SYSTEM SET easeml.enabled = on');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
my $made = 0;
foreach (1 .. 600)
{
	$made = -f "$tmp/fresh/$marker";
	last if $made;
	select(undef, undef, undef, 0.1);
}
ok($made, 'the directory the scheduler made (for the device probe) has the marker');

$node->stop;
done_testing();
