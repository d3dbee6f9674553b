# Results end to end (docs/results.md), through the real scheduler and
# trainer: a task's best run is deployed automatically; events arrive on
# channel easeml_events as ids only, which only their tenant can resolve;
# iterative runs leave a learning curve in easeml.run_progress and every
# finished run's epoch and loss are those of its last epoch; a tenant reads
# its own run's log and not another's; deploy and rollback change the run
# predict uses.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('results');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
make_tenant($node, 'lab_b');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'softmax-l2-1e-4', 'mlp-64', 'knn-5', 'rf-50')});

# both tenants listen before anything happens
my %listener;
foreach my $who ('lab_a', 'lab_b')
{
	$listener{$who} = $node->background_psql('postgres',
		extra_params => [ '-U', $who ], timeout => $PostgreSQL::Test::Utils::timeout_default);
	$listener{$who}->query_safe('LISTEN easeml_events');
}

query_as($node, 'lab_a',
	"INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
ok( $node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM easeml.tasks WHERE name = 'iris'"),
	'the task tries every candidate');
# and the deployed run's refit on every row (docs/results.md) ends too
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM easeml.runs WHERE status IN ('queued', 'running')"),
	'every run ends, refits included');
my $task_id = $node->safe_psql('postgres', "SELECT id FROM easeml.tasks WHERE name = 'iris'");

# ---- events ------------------------------------------------------------------
# psql prints the notifications that arrived with the next command's output
sub events_of
{
	my ($who) = @_;
	my ($out) = $listener{$who}->query('SELECT 1');
	my @events;
	while ($out =~ /^Asynchronous notification "easeml_events" with payload "(.*)" received from server process with PID \d+\.$/mg)
	{
		push @events, { raw => $1, %{ decode_json($1) } };
	}
	return @events;
}
my @events = events_of('lab_a');
my @events_b = events_of('lab_b');
my @finished = split /\n/, $node->safe_psql('postgres',
	"SELECT id FROM easeml.runs WHERE task_id = $task_id AND status NOT IN ('queued', 'running') ORDER BY id");
cmp_ok(scalar(@finished), '>=', 5, 'the five candidates ran');
is_deeply([ sort { $a <=> $b } map { $_->{run_id} } grep { $_->{event} eq 'run_finished' } @events ],
	\@finished, 'one run_finished event per finished run');
is(scalar(grep { join(',', sort keys %$_) ne 'event,raw,run_id,task_id' || $_->{task_id} != $task_id } @events),
	0, 'every payload carries the event, the task id and the run id, nothing else');
is(scalar(grep { $_->{raw} =~ /iris|lab_a|knn|mlp/ } @events), 0, 'no payload names a task, tenant or model');
my @best = grep { $_->{event} eq 'new_best' } @events;
# new_best names the top score (the leaderboard's rank 1 may be a faster
# run tied with it)
my $leader = query_as($node, 'lab_a', q{
	SELECT run_id FROM easeml.leaderboard WHERE task = 'iris' AND NOT stale
	 ORDER BY score DESC, seconds, run_id LIMIT 1});
ok(@best >= 1 && $best[-1]{run_id} == $leader, 'the last new_best event names the top-scoring run');
# in the order the events came (runs of two slots finish out of id order)
my %score = map { split /\|/ } split /\n/, query_as($node, 'lab_a',
	"SELECT id, score FROM easeml.runs WHERE task_id = $task_id AND status = 'succeeded' AND purpose <> 'refit'");
my @best_scores = map { $score{ $_->{run_id} } } @best;
is(scalar(grep { $best_scores[$_] < $best_scores[ $_ - 1 ] } 1 .. $#best_scores), 0,
	'each new best scores at least as well as the one before it (' . join(' ', @best_scores) . ')');
my @deployed = grep { $_->{event} eq 'deployment' } @events;
is(scalar(@events_b), scalar(@events), 'another tenant receives the same events');
my $ids = join(',', map { $_->{run_id} } @events_b);
is(query_as($node, 'lab_b', "SELECT count(*) FROM easeml.runs WHERE id IN ($ids)"),
	'0', 'but resolves none of their run ids');
is(query_as($node, 'lab_b', "SELECT count(*) FROM easeml.tasks WHERE id = $task_id"),
	'0', 'nor their task id');

# ---- deployments -------------------------------------------------------------
is( query_as($node, 'lab_a', q{
	SELECT d.run_id = l.run_id AND d.strategy = 'auto'
	  FROM easeml.deployed d JOIN easeml.leaderboard l ON l.task_id = d.task_id AND l.rank = 1}),
	't', 'the best run is deployed automatically');
ok(@deployed >= 1 && $deployed[-1]{run_id} == $leader, 'the last deployment event names it');
is( query_as($node, 'lab_a', 'SELECT count(*) FROM easeml.deployments'),
	scalar(@deployed), 'one deployment row per deployment event');
my $worst = query_as($node, 'lab_a',
	"SELECT run_id FROM easeml.leaderboard WHERE task = 'iris' ORDER BY rank DESC, run_id DESC LIMIT 1");
query_as($node, 'lab_a', "UPDATE easeml.tasks SET auto_deploy = false WHERE name = 'iris'");
is(query_as($node, 'lab_a', "SELECT easeml.deploy('iris', $worst)"), $worst, 'a tenant deploys a run by id');
# (its refit on every row, where that succeeded when it was deployed first)
is(query_as($node, 'lab_a', qq{
	SELECT d.run_id = $worst AND easeml._deployed_run($task_id) = d.artifact_run_id
		   AND d.artifact_run_id IN ($worst, coalesce(d.refit_run_id, 0))
	  FROM easeml.deployed d WHERE d.task_id = $task_id}), 't', 'predict then uses it');
is(query_as($node, 'lab_a', "SELECT easeml.rollback('iris')"), $leader, 'rollback returns to the best run');
# (the refit deploying the worst run queued ends with the rollback: a
# run_finished event may come between them)
my @after = grep { $_->{event} eq 'deployment' } events_of('lab_a');
is_deeply([ map { "$_->{event}:$_->{run_id}" } @after ], [ "deployment:$worst", "deployment:$leader" ],
	'deploy and rollback each send a deployment event');
my ($ret, $stdout, $stderr) = $node->psql('postgres', "SELECT easeml.rollback('iris')",
	extra_params => [ '-U', 'lab_b' ]);
like($stderr, qr/task "iris" does not exist for tenant "lab_b"/, 'another tenant cannot roll it back');

# ---- progress ----------------------------------------------------------------
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FROM easeml.runs
	 WHERE task_id = $task_id AND status = 'succeeded'
	   AND (epoch IS DISTINCT FROM (metrics->>'epochs')::int
			OR loss IS DISTINCT FROM (metrics->>'train_loss')::float8)}),
	'0', 'every finished run shows the epoch and loss of its last epoch');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(m.name || ':' || (r.epoch > 1)::text, ',' ORDER BY m.name)
	  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.task_id = $task_id AND m.family IN ('softmax', 'mlp') AND r.purpose = 'select'}),
	'mlp-64:true,softmax-l2-1e-4:true', 'iterative runs trained more than one epoch');
is( query_as($node, 'lab_a', qq{
	SELECT count(*) FROM easeml.runs r
	 WHERE r.task_id = $task_id AND r.status = 'succeeded'
	   AND NOT EXISTS (SELECT 1 FROM easeml.run_progress p WHERE p.run_id = r.id)}),
	'0', 'every succeeded run has a learning curve');
is( query_as($node, 'lab_a', qq{
	SELECT count(*) FROM easeml.runs r
	  JOIN LATERAL (SELECT * FROM easeml.run_progress p WHERE p.run_id = r.id ORDER BY p.id DESC LIMIT 1) last ON true
	 WHERE r.task_id = $task_id AND r.status = 'succeeded'
	   AND (last.epoch <> r.epoch OR abs(last.score - r.score) > 1e-9 OR last.at > r.finished_at)}),
	'0', 'the last point of each curve is the run\'s last epoch with its validation score');
is( query_as($node, 'lab_a', qq{
	SELECT bool_and(p.epoch >= 1 AND p.at >= r.started_at) AND count(*) <= 500 * count(DISTINCT r.id)
	  FROM easeml.run_progress p JOIN easeml.runs r ON r.id = p.run_id}),
	't', 'curves are bounded and recorded while the runs trained');
is(query_as($node, 'lab_b', 'SELECT count(*) FROM easeml.run_progress'), '0',
	'another tenant sees none of the curves');
# the refit of the worst run, queued when it was deployed, is cancelled by
# the rollback (at once while queued, by the scheduler once running)
ok( $node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM easeml.active_runs}),
	'no run is active once the task completed');

# ---- logs --------------------------------------------------------------------
my $run = $leader;
like(query_as($node, 'lab_a', "SELECT easeml.run_log($run)"), qr/run $run: done, score/,
	'a tenant reads its own run\'s log');
my $tail = query_as($node, 'lab_a', "SELECT easeml.run_log($run, 60)");
ok(length($tail) <= 60 && $tail =~ /done, score/, 'bounded to the end of the log');
($ret, $stdout, $stderr) = $node->psql('postgres', "SELECT easeml.run_log($run)",
	extra_params => [ '-U', 'lab_b' ]);
like($stderr, qr/run $run does not exist/, 'another tenant cannot read it');
($ret, $stdout, $stderr) = $node->psql('postgres', "SELECT easeml.run_log($run, 0)",
	extra_params => [ '-U', 'lab_a' ]);
like($stderr, qr/max_bytes must be between 1 and 1048576, not 0/, 'max_bytes is checked');

$listener{$_}->quit foreach keys %listener;
$node->stop;
done_testing();
