# Nothing is lost: a killed trainer gives a failed run and the database
# keeps running; a restart with a run in flight gives an interrupted run
# whose candidate is trained later; cancels, timeouts, trainer errors and a
# broken task are recorded and never stop the scheduler.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('failures',
	'easeml.max_workers' => 1,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');

# a stand-in trainer that never finishes
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $slow = trainer_script($tmp, 'slow_trainer', 'exec sleep 600');

ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'easeml scheduler'"),
	'the scheduler worker runs');
my $worker = scheduler_pid($node);
my $postmaster = postmaster_pid($node);
my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow';
	ALTER SYSTEM SET easeml.enabled = on;
	SELECT pg_reload_conf();});

# ---- a trainer killed with SIGKILL ---------------------------------------
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL"),
	'a trainer runs');
my ($killed_run, $killed_pid, $killed_model) = split /\|/, $node->safe_psql('postgres',
	"SELECT id, pid, model_id FROM easeml.runs WHERE status = 'running'");
is(kill('KILL', $killed_pid), 1, "SIGKILL sent to trainer $killed_pid");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.runs WHERE id = $killed_run"),
	'the killed run is failed');
like($node->safe_psql('postgres', "SELECT error FROM easeml.runs WHERE id = $killed_run"),
	qr/signal 9/, 'its error names the signal');
is($node->safe_psql('postgres', "SELECT exit_code FROM easeml.runs WHERE id = $killed_run"),
	'137', 'its exit code is 128 + 9');
is(postmaster_pid($node), $postmaster, 'the postmaster was not restarted');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started,
	'no crash recovery happened');
is(scheduler_pid($node), $worker, 'the scheduler kept running');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM easeml.runs WHERE status = 'running' AND pid IS NOT NULL AND id > $killed_run"),
	'the scheduler started the next run');

# ---- a server restart with a run in flight --------------------------------
my ($flight_run, $flight_model) = split /\|/, $node->safe_psql('postgres',
	"SELECT id, model_id FROM easeml.runs WHERE status = 'running'");
$node->safe_psql('postgres', 'ALTER SYSTEM RESET easeml.trainer_path');
$node->restart;
ok($node->poll_query_until('postgres',
		"SELECT status = 'interrupted' FROM easeml.runs WHERE id = $flight_run"),
	'the run in flight is marked interrupted after the restart');
like($node->safe_psql('postgres', "SELECT error FROM easeml.runs WHERE id = $flight_run"),
	qr/restarted/, 'its error says why');
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM easeml.runs
	 WHERE model_id = $flight_model AND status = 'succeeded' AND id > $flight_run AND purpose = 'select'}),
	'the interrupted candidate is trained again and succeeds');
is( $node->safe_psql('postgres',
		"SELECT string_agg(status, ',' ORDER BY id) FROM easeml.run_events WHERE run_id = $flight_run"),
	'running,interrupted', 'both state changes of the interrupted run are recorded');
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'the task completes');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.runs WHERE model_id = $killed_model"),
	'1', 'the failed candidate is not retried');
$worker = scheduler_pid($node);

# ---- cancel a running trainer ----------------------------------------------
# the task's last ensemble (queued when it completed, docs/models.md 8)
# ends first: with the slow trainer it would hold the one slot
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'nothing is left in flight');
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow'; SELECT pg_reload_conf();});
my $cancel_run = query_as($node, 'lab_a', "SELECT easeml.enqueue('iris', 'knn-5')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'running' AND pid IS NOT NULL FROM easeml.runs WHERE id = $cancel_run"),
	'a queued run starts');
my $cancel_pid = $node->safe_psql('postgres', "SELECT pid FROM easeml.runs WHERE id = $cancel_run");
is(query_as($node, 'lab_a', "SELECT easeml.cancel($cancel_run)"), 'cancelling',
	'the tenant asks to cancel it');
ok($node->poll_query_until('postgres',
		"SELECT status = 'cancelled' FROM easeml.runs WHERE id = $cancel_run"),
	'the run is cancelled');
ok(process_gone($cancel_pid), 'its trainer process is gone');

# ---- a timeout ----------------------------------------------------------------
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.run_timeout = '1s'; SELECT pg_reload_conf();});
my $slow_run = query_as($node, 'lab_a', "SELECT easeml.enqueue('iris', 'gnb')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.runs WHERE id = $slow_run"),
	'a run past easeml.run_timeout fails');
like($node->safe_psql('postgres', "SELECT error FROM easeml.runs WHERE id = $slow_run"),
	qr/timed out/, 'its error says it timed out');

# ---- a model row the trainer cannot train ---------------------------------------
# The trigger on easeml.models asks the trainer and refuses such a row; one
# written around it (a restore in replica mode, a trainer that changed) is
# disabled by the scheduler after its first run, so it cannot fail a run of
# every task.
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.run_timeout;
	ALTER SYSTEM RESET easeml.trainer_path;
	SELECT pg_reload_conf();});
my ($rc, $out, $err) = $node->psql('postgres',
	"INSERT INTO easeml.models (name, family, params) VALUES ('mystery', 'no_such_family', '{}')");
like($err, qr/model "mystery" cannot be trained: unknown model family "no_such_family"/,
	'a model of an unknown family is refused when it is written');
$node->safe_psql('postgres', q{
	SET session_replication_role = replica;
	INSERT INTO easeml.models (name, family, params) VALUES ('mystery', 'no_such_family', '{}');});
my $bad_run = query_as($node, 'lab_a', "SELECT easeml.enqueue('iris', 'mystery')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.runs WHERE id = $bad_run"),
	'a run of a model that slipped past the check fails');
like($node->safe_psql('postgres', "SELECT error FROM easeml.runs WHERE id = $bad_run"),
	qr/cannot train this model .*unknown model family "no_such_family"/,
	'its error carries the trainer\'s message');
is($node->safe_psql('postgres', "SELECT enabled FROM easeml.models WHERE name = 'mystery'"),
	'f', 'the scheduler disabled the model');
ok($node->log_contains(qr/WARNING:  easeml: model "mystery" was disabled/),
	'and said so in the log');

# ---- one broken task does not stop the scheduler --------------------------------
$node->safe_psql('postgres', q{
	CREATE TABLE public.gone AS SELECT * FROM public.iris;
	CREATE TABLE public.iris2 AS SELECT * FROM public.iris;
	GRANT SELECT ON public.gone, public.iris2 TO lab_a;});
query_as($node, 'lab_a', q{
	BEGIN;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('gone', 'public.gone', 'label');
	UPDATE easeml.tasks SET status = 'paused' WHERE name = 'gone';
	COMMIT;});
$node->safe_psql('postgres', 'DROP TABLE public.gone');
query_as($node, 'lab_a', q{
	UPDATE easeml.tasks SET status = 'active' WHERE name = 'gone';
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris2', 'public.iris2', 'label');});
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'gone'"),
	'a task whose table was dropped is marked failed');
like($node->safe_psql('postgres', "SELECT status_reason FROM easeml.tasks WHERE name = 'gone'"),
	qr/its source could not be read: .*no longer exists/, 'its reason says what went wrong');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'gone' AND r.status = 'failed'}),
	'1', 'one failed run was enough to fail it, not one per candidate');
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris2'"),
	'the other task still completes');
is(scheduler_pid($node), $worker, 'the scheduler never restarted');
# (its last ensemble, queued when it completed, ends: docs/models.md 8)
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'no run is left in flight');

# ---- the extension dropped under a running trainer ------------------------
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow'; SELECT pg_reload_conf();});
my $orphan_run = query_as($node, 'lab_a', "SELECT easeml.enqueue('iris2', 'knn-5')");
ok($node->poll_query_until('postgres',
		"SELECT status = 'running' AND pid IS NOT NULL FROM easeml.runs WHERE id = $orphan_run"),
	'a trainer runs');
my $orphan_pid = $node->safe_psql('postgres', "SELECT pid FROM easeml.runs WHERE id = $orphan_run");
$node->safe_psql('postgres', 'DROP EXTENSION easeml CASCADE');
ok(process_gone($orphan_pid), 'dropping the extension stops its trainers');
is(scheduler_pid($node), $worker, 'the scheduler survives the extension being dropped');
# CREATE EXTENSION checks the catalog's models with the trainer of its
# session: wait until a new session reads the real trainer's path again
$node->safe_psql('postgres', 'ALTER SYSTEM RESET easeml.trainer_path');
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
$node->poll_query_until('postgres',
	"SELECT current_setting('easeml.trainer_path') NOT LIKE '%slow_trainer%'")
  or die 'easeml.trainer_path was not reset';
$node->safe_psql('postgres', q{
	CREATE EXTENSION easeml;
	SELECT easeml.add_tenant('lab_a');});
query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('again', 'public.iris2', 'label')");
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM easeml.runs WHERE status = 'succeeded'"),
	'after CREATE EXTENSION again, tasks train again');

$node->stop;
done_testing();
