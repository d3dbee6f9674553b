# The life cycle of tasks and of the extension (docs/operations.md):
#  - a task whose source breaks is marked failed with the reason after its
#    first failed run, not failed run by run until "every candidate has been
#    tried";
#  - a failed task set active again retries the candidates that failed and
#    is not failed again at once;
#  - dropping a task or the extension removes its runs' directories, and a
#    dropped extension does not fill the log with errors;
#  - an easeml.database that does not exist is explained in the log.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('lifecycle');
load_dataset($node, 'iris', 'iris');
$node->safe_psql('postgres', 'CREATE TABLE public.flowers AS SELECT * FROM public.iris');
make_tenant($node, 'lab_a', 'public.iris', 'public.flowers');

# ---- a source that breaks after some successes ---------------------------------
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('flowers', 'public.flowers', 'label')");
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) >= 2 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'flowers' AND r.status = 'succeeded'}),
	'the task trains');
$node->safe_psql('postgres', 'ALTER TABLE public.flowers DROP COLUMN petal_width');
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'flowers'"),
	'a task whose source lost a column is marked failed');
like($node->safe_psql('postgres', "SELECT status_reason FROM easeml.tasks WHERE name = 'flowers'"),
	qr/its source could not be read: .*"petal_width"( of relation "flowers")? does not exist/,
	'its reason names the missing column');
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		 WHERE t.name = 'flowers' AND r.status IN ('queued', 'running')}),
	'no run of the broken task is left in flight');
my $failed = $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'flowers' AND r.status = 'failed' AND r.purpose = 'select'});
cmp_ok($failed, '<=', 2, "only the runs in flight failed ($failed), not every candidate left");

# the tenant fixes the source and takes the task up again
$node->safe_psql('postgres', q{
	ALTER TABLE public.flowers ADD COLUMN petal_width float8;
	UPDATE public.flowers f SET petal_width = i.petal_width
	  FROM (SELECT row_number() OVER () AS n, petal_width FROM public.iris) i,
		   (SELECT ctid, row_number() OVER () AS n FROM public.flowers) c
	 WHERE c.ctid = f.ctid AND c.n = i.n;});
query_as($node, 'lab_a', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'flowers'");
is($node->safe_psql('postgres', "SELECT status_reason IS NULL FROM easeml.tasks WHERE name = 'flowers'"),
	't', 'taking it up again clears the reason');
ok( $node->poll_query_until('postgres', q{
	SELECT bool_and(EXISTS (SELECT 1 FROM easeml.runs s
	                         WHERE s.task_id = f.task_id AND s.model_id = f.model_id
	                           AND s.status = 'succeeded' AND s.id > f.id))
	  FROM easeml.runs f JOIN easeml.tasks t ON t.id = f.task_id
	 WHERE t.name = 'flowers' AND f.status = 'failed' AND f.purpose = 'select'}),
	'the candidates that failed on the broken source are trained again and succeed');

# ---- a task failed by failures in a row is revived by setting it active ---------
query_as($node, 'lab_a', "UPDATE easeml.tasks SET status = 'paused' WHERE name = 'flowers'");
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $failing = trainer_script($tmp, 'failing_trainer',
	"echo 'a transient failure'; exit 1");
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$failing'; SELECT pg_reload_conf();});
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('flaky', 'public.iris', 'label')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'flaky'"),
	'a task whose runs keep failing is marked failed');
like($node->safe_psql('postgres', "SELECT status_reason FROM easeml.tasks WHERE name = 'flaky'"),
	qr/failed in a row: .*a transient failure/, 'with the last error')
  or diag($node->safe_psql('postgres', q{
	SELECT r.id, r.status, r.error, r.log_path FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'flaky' ORDER BY r.id}));
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.trainer_path; SELECT pg_reload_conf();});
query_as($node, 'lab_a', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'flaky'");
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) >= 3 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'flaky' AND r.status = 'succeeded'}),
	'set active again, it trains instead of being failed again');
ok( $node->poll_query_until('postgres', q{
	SELECT bool_and(EXISTS (SELECT 1 FROM easeml.runs s
	                         WHERE s.task_id = f.task_id AND s.model_id = f.model_id
	                           AND s.status = 'succeeded' AND s.id > f.id))
	  FROM easeml.runs f JOIN easeml.tasks t ON t.id = f.task_id
	 WHERE t.name = 'flaky' AND f.status = 'failed' AND f.purpose = 'select'}),
	'its failed candidates are retried');
query_as($node, 'lab_a',
	"UPDATE easeml.tasks SET status = 'paused' WHERE name IN ('flowers', 'flaky')");

# ---- run directories go with their runs ---------------------------------------------
my $rundir = $node->data_dir . '/easeml_runs';
my $slow = trainer_script($tmp, 'slow_trainer', 'exec sleep 600');
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow'; SELECT pg_reload_conf();});
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('doomed', 'public.iris', 'label')");
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'doomed' AND r.status = 'running' AND r.pid IS NOT NULL}),
	'a run of the task to drop is running');
my @doomed = split /\n/, $node->safe_psql('postgres', q{
	SELECT r.id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'doomed'});
ok(-d "$rundir/$doomed[0]", 'its run directory exists');
query_as($node, 'lab_a', "SELECT easeml.drop_task('doomed')");
my $gone = 0;
foreach (1 .. 300)
{
	$gone = !grep { -d "$rundir/$_" } @doomed;
	last if $gone;
	select(undef, undef, undef, 0.1);
}
ok($gone, 'dropping the task removes its runs\' directories');
ok(-d "$rundir/" . $node->safe_psql('postgres', 'SELECT min(id) FROM easeml.runs'),
	'other runs keep theirs');

# the extension dropped with a run in flight
query_as($node, 'lab_a', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'flaky'");
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL"),
	'a run is in flight');
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP EXTENSION easeml CASCADE');
my $empty = 0;
foreach (1 .. 300)
{
	opendir(my $dh, $rundir) or last;
	$empty = !grep { /^\d+$/ } readdir($dh);
	closedir($dh);
	last if $empty;
	select(undef, undef, undef, 0.1);
}
ok($empty, 'dropping the extension removes every run directory');
ok($node->log_contains(qr/easeml: removed \d+ run director/, $offset), 'and says so in the log');
my $log = slurp_file($node->logfile, $offset);
my $errors = () = $log =~ /ERROR:/g;
# a statement already waiting for the dropped tables' locks may fail once
cmp_ok($errors, '<=', 1, "the scheduler did not fill the log with errors ($errors)");

# ---- an easeml.database that does not exist -------------------------------------
my $lost = PostgreSQL::Test::Cluster->new('lost');
$lost->init;
$lost->append_conf('postgresql.conf',
	"shared_preload_libraries = 'easeml'\neaseml.database = 'no_such_db'\n");
$lost->start;
ok( $lost->poll_query_until('postgres', q{SELECT true}) && wait_for_log($lost,
		qr/easeml scheduler connects to the database named by easeml.database = "no_such_db"/),
	'the log says that easeml.database names a database that does not exist');
ok($lost->log_contains(qr/HINT:  Create that database and run CREATE EXTENSION easeml/),
	'and how to fix it');
$lost->stop;

# Wait up to 30 s for a line in a node's log.
sub wait_for_log
{
	my ($n, $re) = @_;
	foreach (1 .. 300)
	{
		return 1 if $n->log_contains($re);
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

$node->stop;
done_testing();
