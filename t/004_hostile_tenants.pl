# A tenant that tries to harm the service or other tenants: planting an
# operator for the superuser scheduler to run, holding locks on its own
# rows, queueing runs past its cap, re-queueing the same candidate, dropping
# a task while it trains, racing two declarations past its task limit.  Other tenants keep being served.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('hostile');
load_dataset($node, 'iris', 'iris');
load_dataset($node, 'wine', 'wine');
make_tenant($node, 'mallory', 'public.iris');
make_tenant($node, 'alice', 'public.wine');
$node->safe_psql('postgres', q{
	SELECT easeml.add_tenant('mallory', 1);
	CREATE TABLE public.iris2 AS SELECT * FROM public.iris;
	GRANT SELECT ON public.iris2 TO mallory;
	-- as in databases created before PostgreSQL 15
	GRANT CREATE ON SCHEMA public TO mallory;});
my $worker = scheduler_pid($node);

# an operator the superuser scheduler would run if it searched public
query_as($node, 'mallory', q{
	CREATE TABLE public.calls (who text);
	GRANT INSERT ON public.calls TO PUBLIC;
	CREATE FUNCTION public.evil_cat(a text, b bigint) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.calls VALUES (current_user);
		BEGIN
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
		EXCEPTION WHEN others THEN NULL;
		END;
		RETURN a || b::text;
	END $$;
	CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = public.evil_cat);
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('iris', 'public.iris', 'label', 3);});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'mallory\'s first task completes (its scores now feed the prior)');
query_as($node, 'alice', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('wine', 'public.wine', 'label', 4);});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine'"),
	'alice\'s task completes');
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"),
	'f', 'the planted operator did not make mallory a superuser');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.calls'), '0',
	'the scheduler never ran the planted operator');

# the same candidate queued again and again does not make the scheduler
# retrain everything
query_as($node, 'mallory', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('again', 'public.iris2', 'label', 8)});
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'again'"),
	'the task completes at max_runs');
for (1 .. 3)
{
	my $run = query_as($node, 'mallory', "SELECT easeml.enqueue('again', 'gnb')");
	ok($node->poll_query_until('postgres',
			"SELECT status NOT IN ('queued', 'running') FROM easeml.runs WHERE id = $run"),
		'the enqueued run ends');
}
query_as($node, 'mallory', "UPDATE easeml.tasks SET max_runs = 14, status = 'active' WHERE name = 'again'");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'again'"),
	'after re-queueing one candidate, the task completes again');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT model_id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'again' AND r.requested_by = 'scheduler' AND r.purpose = 'select'
	 GROUP BY model_id HAVING count(*) > 1) d}),
	'0', 'the scheduler never chose a candidate twice');

# max_parallel also caps runs a tenant queues itself
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $slow = trainer_script($tmp, 'slow_trainer', 'exec sleep 600');
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow'; SELECT pg_reload_conf();});
query_as($node, 'mallory', q{
	SELECT easeml.enqueue('again', m) FROM unnest(ARRAY['knn-1', 'knn-3', 'knn-5', 'knn-15']) m;});
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM easeml.runs WHERE tenant = 'mallory' AND status = 'running' AND pid IS NOT NULL"),
	'one of mallory\'s queued runs starts');
query_as($node, 'alice',
	"INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('wine2', 'public.wine', 'label', 1)");
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine2' AND r.status = 'running'}),
	'alice gets the other slot');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM easeml.runs WHERE tenant = 'mallory' AND status = 'running'"),
	'1', 'mallory (max_parallel 1) never holds two slots');

# dropping a task stops its trainer
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM easeml.runs WHERE tenant = 'mallory' AND status = 'running'");
query_as($node, 'mallory', "SELECT easeml.drop_task('again')");
ok(process_gone($pid), 'dropping a task stops its running trainer');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.runs WHERE tenant = 'mallory' AND status IN ('queued', 'running')"),
	'0', 'its runs are gone with it');

# a lock on its own task row holds up nobody else
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.trainer_path; SELECT pg_reload_conf();});
query_as($node, 'mallory',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('locked', 'public.iris2', 'label')");
my $locker = $node->background_psql('postgres', extra_params => [ '-U', 'mallory' ]);
$locker->query_safe("BEGIN; SELECT id FROM easeml.tasks WHERE name = 'locked' FOR UPDATE;");
query_as($node, 'alice',
	"INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('wine3', 'public.wine', 'label', 6)");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine3'"),
	'alice\'s task completes while mallory holds a lock on its own task');
$locker->query_safe('COMMIT');
$locker->quit;
ok($node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'locked' AND r.status = 'succeeded'}),
	'mallory\'s task trains once the lock is released');
# paused, and nothing of mallory's left to start: its runs, and the refits
# of its deployed runs on every row, leave its one slot to the runs below
query_as($node, 'mallory', "UPDATE easeml.tasks SET status = 'paused' WHERE name = 'locked'");
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE r.tenant = 'mallory' AND (r.status = 'running' OR (r.status = 'queued' AND t.status <> 'paused'))}),
	'mallory\'s runs so far ended');

# easeml.cancel and easeml.drop_task act as a superuser for one statement:
# the caller's search_path must not reach it
$node->safe_psql('postgres', 'CREATE SCHEMA mallory AUTHORIZATION mallory');
query_as($node, 'mallory', q{
	CREATE FUNCTION mallory.format(f text, n name) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.calls VALUES ('format as ' || current_user);
		BEGIN
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
		EXCEPTION WHEN others THEN NULL;
		END;
		RETURN f;
	END $$;
	CREATE FUNCTION mallory.name_eq(a name, b name) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.calls VALUES ('= as ' || current_user);
		BEGIN
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
		EXCEPTION WHEN others THEN NULL;
		END;
		RETURN a::text = b::text;
	END $$;
	CREATE OPERATOR mallory.= (LEFTARG = name, RIGHTARG = name, FUNCTION = mallory.name_eq);});
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow'; SELECT pg_reload_conf();});
query_as($node, 'mallory',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('bait', 'public.iris2', 'label')");
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'bait' AND r.status = 'running' AND r.pid IS NOT NULL}),
	'one of mallory\'s runs runs (its cap is one)');
my $queued = query_as($node, 'mallory', q{
	SELECT easeml.enqueue('bait', (SELECT m.name FROM easeml.models m
	  WHERE 'classification' = ANY (m.kinds) AND NOT m.needs_image
	    AND NOT EXISTS (SELECT 1 FROM easeml.runs r WHERE r.model_id = m.id
	                     AND r.status IN ('queued', 'running'))
	  ORDER BY m.id LIMIT 1))});
is(query_as($node, 'mallory',
		"SET search_path = mallory, pg_catalog; SELECT easeml.cancel($queued)"),
	'cancelled', 'mallory cancels its queued run with its own search_path');
query_as($node, 'mallory', "SET search_path = mallory, pg_catalog; SELECT easeml.drop_task('bait')");
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'"),
	'f', 'neither function ran mallory\'s functions as a superuser');
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.calls'), '0',
	'mallory\'s format() and = were never called');

# a lock on its own run's row, held in an open transaction, holds no slot
# (alice's slow run of wine2 still holds one: with easeml.max_workers = 1
# nothing else would start, so it is cancelled first)
query_as($node, 'alice', q{
	SELECT easeml.cancel(r.id) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine2' AND r.status = 'running'});
# (the run budget may have preempted it already, for mallory's runs and
# the refits of its deployed runs on every row)
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'wine2' AND r.status IN ('queued', 'running')}),
	'alice\'s slow run is cancelled');
my $bindir = $node->config_data('--bindir');
my $delayed = trainer_script($tmp, 'delayed_trainer',
	"sleep 5\nexec '$bindir/easeml-trainer' \"\$\@\"");
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$delayed';
	ALTER SYSTEM SET easeml.max_workers = 1;
	SELECT pg_reload_conf();});
# its one run is an enqueued gnb: which model the scheduler would choose
# first depends on its cost estimates
query_as($node, 'mallory', q{BEGIN;
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('held', 'public.iris2', 'label', 1);
	SELECT easeml.enqueue('held', 'gnb');
	COMMIT;});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'held' AND r.status = 'running' AND r.pid IS NOT NULL}),
	'mallory\'s run starts');
my $held = $node->safe_psql('postgres', q{
	SELECT r.id FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'held'});
my $holder = $node->background_psql('postgres', extra_params => [ '-U', 'mallory' ]);
$holder->query_safe("BEGIN; SELECT easeml.cancel($held);");
query_as($node, 'alice',
	"INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('wine4', 'public.wine', 'label', 2)");
ok($node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine4'"),
	'with one slot, alice\'s task completes while mallory keeps its run\'s row locked');
is($node->safe_psql('postgres', "SELECT status FROM easeml.runs WHERE id = $held"), 'running',
	'mallory\'s finished run waits to be recorded');
# its trainer has ended (alice's runs had the one slot); its progress
# report skipped the locked row instead of waiting out the lock timeout
my $held_log = $node->safe_psql('postgres', "SELECT easeml.run_log($held)");
like($held_log, qr/run $held: done/, 'the held run\'s trainer finished');
unlike($held_log, qr/could not report progress/,
	'its progress report did not wait for the locked row');
$holder->query_safe('COMMIT');
$holder->quit;
ok($node->poll_query_until('postgres',
		"SELECT status NOT IN ('queued', 'running') FROM easeml.runs WHERE id = $held"),
	'once the lock is gone its result is recorded');
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET easeml.trainer_path; ALTER SYSTEM RESET easeml.max_workers;
	SELECT pg_reload_conf();});

# two declarations at once cannot both take the last place under a limit
my $had = $node->safe_psql('postgres', "SELECT count(*) FROM easeml.tasks WHERE tenant = 'mallory'");
$node->safe_psql('postgres',
	"SELECT easeml.set_tenant_limits('mallory', max_tasks => " . ($had + 1) . ")");
my $first = $node->background_psql('postgres', extra_params => [ '-U', 'mallory' ]);
$first->query_safe(q{SET client_min_messages = warning; BEGIN;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('race1', 'public.iris2', 'label');});
my ($race_out, $race_err) = ('', '');
my $second = IPC::Run::start [ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-U', 'mallory',
	'-c', q{INSERT INTO easeml.tasks (name, source, target) VALUES ('race2', 'public.iris2', 'label')} ],
  '>', \$race_out, '2>', \$race_err;
ok($node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE usename = 'mallory' AND wait_event_type = 'Lock'"),
	'a second declaration at the task limit waits for the first');
$first->query_safe('COMMIT');
$first->quit;
$second->finish;
like($race_err, qr/may have at most \d+ task/, 'and is refused once the first took the last place');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.tasks WHERE tenant = 'mallory'"),
	$had + 1, 'one of the two was declared');
$node->safe_psql('postgres', "SELECT easeml.set_tenant_limits('mallory')");

is(scheduler_pid($node), $worker, 'the scheduler never restarted');
$node->stop;
done_testing();
