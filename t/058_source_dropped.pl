# A task's source dropped (docs/operations.md, "Task life cycle"): the DROP
# fails the task at once with the reason, and its source becomes 0 ('-'),
# which names no relation (before, the task kept the dropped relation's
# object id, shown as a number and dumped and restored as one, and stayed
# as it was until a run of it failed).  A DROP by the tenant itself, a
# DROP SCHEMA ... CASCADE and a view dropped count too; a DROP rolled back
# changes nothing; the task taken up again fails again; easeml.refresh
# says the source is gone; the extension is still dropped and created.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('source_dropped');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_d', 'public.iris');
# the tenant's own schema: it owns the tables it drops
$node->safe_psql('postgres', q{
	CREATE SCHEMA lab_d AUTHORIZATION lab_d;
	CREATE TABLE public.doomed AS SELECT * FROM public.iris;
	GRANT SELECT ON public.doomed TO lab_d;});
query_as($node, 'lab_d', q{
	CREATE TABLE lab_d.own AS SELECT * FROM public.iris;
	CREATE TABLE lab_d.in_schema AS SELECT * FROM public.iris;
	CREATE VIEW lab_d.v AS SELECT * FROM public.iris;
	CREATE TABLE lab_d.kept AS SELECT * FROM public.iris;});

# paused at once: nothing trains, a run failing could not be what fails them
sub declare
{
	my ($name, $source) = @_;
	query_as($node, 'lab_d', qq{
		BEGIN;
		INSERT INTO easeml.tasks (name, source, target) VALUES ('$name', '$source', 'label');
		UPDATE easeml.tasks SET status = 'paused' WHERE name = '$name';
		COMMIT;});
	return;
}
declare('t_doomed', 'public.doomed');
declare('t_own', 'lab_d.own');
declare('t_schema', 'lab_d.in_schema');
declare('t_view', 'lab_d.v');
declare('t_kept', 'lab_d.kept');
# a completed task: its deployed model stays in use after its data is gone
$node->safe_psql('postgres', q{
	CREATE TABLE public.staging AS SELECT * FROM public.iris;
	GRANT SELECT ON public.staging TO lab_d;});
declare('t_done', 'public.staging');
$node->safe_psql('postgres', q{UPDATE easeml.tasks SET status = 'completed' WHERE name = 't_done'});

sub task
{
	my ($name) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT status || '|' || source::text || '|' || source::oid || '|' || coalesce(status_reason, '')
		  FROM easeml.tasks WHERE name = '$name'});
}

# a DROP rolled back changes nothing
$node->safe_psql('postgres', 'BEGIN; DROP TABLE public.doomed; ROLLBACK;');
like(task('t_doomed'), qr/^paused\|doomed\|[1-9]\d*\|$/, 'a DROP rolled back leaves the task as it was');

# the owner (a superuser) drops the table a tenant reads
$node->safe_psql('postgres', 'DROP TABLE public.doomed');
is(task('t_doomed'), 'failed|-|0|its source public.doomed was dropped',
	'a dropped source fails the task at once, says which, and names no relation');

$node->safe_psql('postgres', 'DROP TABLE public.staging');
is(task('t_done'), 'completed|-|0|its source public.staging was dropped',
	'a completed task stays completed, with the reason and no relation');

# the tenant drops its own table, its schema with one, and a view
query_as($node, 'lab_d', 'DROP TABLE lab_d.own');
is(task('t_own'), 'failed|-|0|its source lab_d.own was dropped', 'the tenant\'s own DROP too');
query_as($node, 'lab_d', 'DROP VIEW lab_d.v');
is(task('t_view'), 'failed|-|0|its source lab_d.v was dropped', 'a view dropped too');
is(task('t_kept'), 'paused|lab_d.kept|' . $node->safe_psql('postgres', "SELECT 'lab_d.kept'::regclass::oid") . '|',
	'a task whose source is still there is left alone');
$node->safe_psql('postgres', 'DROP SCHEMA lab_d CASCADE');
is(task('t_schema'), 'failed|-|0|its source lab_d.in_schema was dropped', 'DROP SCHEMA ... CASCADE too');
is(task('t_kept'), 'failed|-|0|its source lab_d.kept was dropped', '... every task of the schema');

# the tenant sees why, and what it can do
is(query_as($node, 'lab_d', q{SELECT status_reason FROM easeml.tasks WHERE name = 't_own'}),
	'its source lab_d.own was dropped', 'the tenant sees the reason');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT easeml.refresh('t_own')",
	extra_params => [ '-U', 'lab_d' ]);
like($err, qr/the source of task "t_own" no longer exists/, 'refresh says the source is gone');
($rc, $out, $err) = $node->psql('postgres', q{UPDATE easeml.tasks SET source = 'public.iris' WHERE name = 't_own'});
like($err, qr/the declaration of task "t_own" cannot be changed/, 'a source cannot be set again');

# taken up again, it fails again (the runs started at once, one per slot)
query_as($node, 'lab_d', q{UPDATE easeml.tasks SET status = 'active' WHERE name = 't_own'});
ok($node->poll_query_until('postgres', q{
	SELECT t.status = 'failed' AND count(r.id) BETWEEN 1 AND 2 AND bool_and(r.status = 'failed')
	  FROM easeml.tasks t JOIN easeml.runs r ON r.task_id = t.id
	 WHERE t.name = 't_own' GROUP BY t.status}),
	'taken up again, the task fails again, its first runs failed');
like($node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT r.error, ' / ') FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 't_own'}),
	qr/the source table of task "t_own" no longer exists/, '... because the source is gone');

# the dump carries '-', not a number another relation may have later
my $dump = $node->safe_psql('postgres', q{
	SELECT string_agg(source::text, ',' ORDER BY id) FROM easeml.tasks});
is($dump, '-,-,-,-,-,-', 'every dropped source reads as -');

# a DROP that drops no source only reads the tasks: it does not wait for
# a writer of easeml.tasks (here a lock like rename_tenant's)
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; LOCK TABLE easeml.tasks IN SHARE ROW EXCLUSIVE MODE;');
($rc, $out, $err) = $node->psql('postgres', q{
	SET lock_timeout = '2s';
	CREATE TABLE public.scratch (x int);
	CREATE INDEX scratch_x ON public.scratch (x);
	DROP INDEX public.scratch_x;
	DROP TABLE public.scratch;});
is($rc, 0, 'a DROP of no source does not wait for a lock on easeml.tasks') or diag($err);
$holder->query_safe('COMMIT');
$holder->quit;

# the extension is still dropped and created
$node->safe_psql('postgres', 'DROP EXTENSION easeml CASCADE');
$node->safe_psql('postgres', 'CREATE EXTENSION easeml');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_event_trigger WHERE evtname = 'easeml_source_dropped'}), '1',
	'DROP EXTENSION and CREATE EXTENSION work with the event trigger');
$node->safe_psql('postgres', 'CREATE TABLE public.after AS SELECT 1 AS x; DROP TABLE public.after;');
pass('a DROP after the extension was created again works');

$node->stop;
done_testing();
