# Trainers' memory (issue 22, defects 5 and 6).
#
# easeml.trainer_memory_limit caps what each trainer may allocate: a run
# that goes over it fails with the reason "memory limit" and the trainer's
# exit status EASEML_EXIT_MEMORY_LIMIT (7), and a candidate whose memory
# the scheduler can tell in advance is over it (a forest whose leaves hold
# a float per class, on a task of 1,000 classes) is never started.  Runs
# under the limit train as usual.
#
# metrics.peak_rss_bytes is the trainer's own peak: a trainer spawned by
# the scheduler inherits the scheduler's high-water mark in getrusage(),
# so small runs used to report the scheduler's peak.  Here they must
# report well below it.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('memory');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');

# ---- the trainer's own peak ---------------------------------------------
$node->safe_psql('postgres', q{UPDATE easeml.models SET enabled = (name IN ('gnb', 'ridge-1'))});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('peak', 'public.iris', 'label')});
ok($node->poll_query_until('postgres', q{
	SELECT status = 'completed' FROM easeml.tasks WHERE name = 'peak'}),
	'peak: the task completes');
my $pid = scheduler_pid($node);
my $hwm = 0;
open(my $fh, '<', "/proc/$pid/status") or die "/proc/$pid/status: $!";
while (<$fh>)
{
	$hwm = $1 * 1024 if /^VmHWM:\s+(\d+) kB/;
}
close($fh);
cmp_ok($hwm, '>', 0, 'peak: the scheduler\'s own peak is known');
my ($n, $min, $max) = split /\|/, $node->safe_psql('postgres', q{
	SELECT count(*), min((r.metrics->>'peak_rss_bytes')::bigint),
	       max((r.metrics->>'peak_rss_bytes')::bigint)
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE r.status = 'succeeded' AND t.name = 'peak' AND r.purpose = 'select'});
is($n, '2', 'peak: both runs on iris report a peak');
diag(sprintf('runs on iris peak at %.1f-%.1f MB; the scheduler\'s own peak %.1f MB',
		$min / 1e6, $max / 1e6, $hwm / 1e6));
cmp_ok($min, '>', 1e6, 'peak: a real measure (over 1 MB)');
cmp_ok($max, '<', 0.75 * $hwm, 'peak: small runs report well below the scheduler\'s own peak');

# ---- the memory limit ---------------------------------------------------
$node->safe_psql('postgres', q{ALTER SYSTEM SET easeml.trainer_memory_limit = '64MB'});
$node->safe_psql('postgres', q{SELECT pg_reload_conf()});
is($node->safe_psql('postgres', 'SHOW easeml.trainer_memory_limit'),
	'64MB', 'the memory limit is set');

# 2,000 rows of 1,000 classes: a forest of 200 trees keeps a float per
# class in each of its leaves, hundreds of MB whatever the data
$node->safe_psql('postgres', q{
	CREATE TABLE public.many AS
	SELECT ((i * 7919) % 10007)::float8 / 10007 AS f0,
	       ((i * 104729) % 10009)::float8 / 10009 AS f1,
	       'c' || (i % 1000) AS label
	  FROM generate_series(1, 2000) i;
	GRANT SELECT ON public.many TO lab_a;
	UPDATE easeml.models SET enabled = (name = 'gnb');
	INSERT INTO easeml.models (name, family, params, kinds) VALUES
		('mlp-huge', 'mlp', '{"hidden": [8192, 8192], "epochs": 1}', '{classification}'),
		('rf-wide', 'random_forest', '{"n_trees": 200}', '{classification}');});

query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES
		('small', 'public.iris', 'label'),
		('many', 'public.many', 'label')});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 3 FROM easeml.tasks WHERE status <> 'active'}),
	'both tasks end');

# the run of a task's model, as "status|exit code|error"
sub run_of
{
	my ($task, $model) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT string_agg(r.status || '|' || coalesce(r.exit_code::text, '') || '|'
		                  || coalesce(r.error, ''), ';' ORDER BY r.id)
		  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		  JOIN easeml.models m ON m.id = r.model_id
		 WHERE t.name = '$task' AND m.name = '$model' AND r.purpose = 'select'});
}

# ---- a run over the limit fails with the reason --------------------------
my ($status, $code, $error) = split /\|/, run_of('small', 'mlp-huge'), 3;
is("$status|$code", 'failed|7', 'a run over the limit fails with exit status 7');
like($error, qr/^memory limit: an allocation over the trainer's cap of 64 MB failed/,
	'with the reason "memory limit"');
is((split /\|/, run_of('small', 'gnb'))[0], 'succeeded', 'a run under the limit trains');
is((split /\|/, run_of('small', 'rf-wide'))[0], 'succeeded',
	'a forest on three classes fits under the limit and trains');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE m.name = 'mlp-huge' AND r.purpose = 'select'}), '2', 'each task tried the candidate once, not again');

# ---- what the scheduler can predict never starts -------------------------
is(run_of('many', 'rf-wide'), '',
	'the 1,000-class forest over the limit was never started');
is((split /\|/, run_of('many', 'gnb'))[0], 'succeeded', 'the task\'s other candidates train');
is($node->safe_psql('postgres', q{SELECT status FROM easeml.tasks WHERE name = 'many'}),
	'completed', 'the task completes without it');
is(query_as($node, 'lab_a', q{SELECT status_reason FROM easeml.tasks WHERE name = 'many'}),
	'every candidate has been tried; 1 more would need more memory than easeml.trainer_memory_limit (64 MB)',
	'and its tenant is told why');

$node->stop;
done_testing();
