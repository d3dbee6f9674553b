# A time budget per task (docs/scheduler.md 7.8): the live scheduler stops
# proposing runs for a task once its selection runs have spent
# budget_seconds of wall time (a running run counting until now), lets the
# runs in flight finish, and completes the task with the reason; the
# refit on every row of its deployed run still happens after that.
# Every run here takes a little over 3 s (a trainer that sleeps 3 s
# first), so a 20 s budget ends the search long before the 18 candidates
# are tried.  The assertions read the recorded run times, not the clock.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $budget = 20;
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = easeml_node('budget', 'easeml.max_workers' => 2);
my $bindir = $node->config_data('--bindir');
# runs sleep 3 s before training; the device probe does not
my $slow = trainer_script($tmp, 'slow_trainer', qq{
case " \$* " in *" --probe "*) ;; *) sleep 3 ;; esac
exec '$bindir/easeml-trainer' "\$\@"});
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.trainer_path = '$slow';
	SELECT pg_reload_conf();});
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_b', 'public.iris');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = family IN ('softmax', 'linear_svm', 'gnb', 'knn')
									   AND 'classification' = ANY (kinds)});
my $candidates = $node->safe_psql('postgres', 'SELECT count(*) FROM easeml.models WHERE enabled');
cmp_ok($candidates, '>=', 15, "$candidates candidates: more run time than the budget");

# refit_all off during the search: only selection runs take the slots
query_as($node, 'lab_b', qq{
	INSERT INTO easeml.tasks (name, source, target, budget_seconds, refit_all)
		VALUES ('iris', 'public.iris', 'label', $budget, false)});
is( $node->poll_query_until(
		'postgres', "SELECT status <> 'active' FROM easeml.tasks WHERE name = 'iris'"),
	1,
	'the task leaves active within the poll deadline');
my ($status, $reason) = split /\|/,
  query_as($node, 'lab_b', "SELECT status, status_reason FROM easeml.tasks WHERE name = 'iris'");
is($status, 'completed', 'the task is completed');
like($reason, qr/^time budget spent: \d+\.\d s of runs, budget_seconds $budget$/,
	"with the budget as its reason ($reason)");

# ---- the recorded runs ------------------------------------------------------
my @runs = map { [ split /\|/ ] } split /\n/, query_as(
	$node, 'lab_b', q{
	SELECT extract(epoch FROM r.started_at), extract(epoch FROM r.finished_at), r.seconds, r.status
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris' AND r.purpose = 'select' ORDER BY r.started_at});
my $n = scalar @runs;
cmp_ok($n, '>=', 2, "$n selection runs");
cmp_ok($n, '<', $candidates, 'fewer than the candidates: the budget ended the search');
is(scalar(grep { $_->[3] eq 'succeeded' } @runs), $n, 'every run succeeded');
my ($total, $longest, $shortest) = (0, 0, 1e9);
for my $r (@runs)
{
	$total += $r->[2];
	$longest = $r->[2] if $r->[2] > $longest;
	$shortest = $r->[2] if $r->[2] < $shortest;
}
cmp_ok($shortest, '>=', 3, "each run took at least the trainer's 3 s sleep (shortest $shortest s)");
cmp_ok($total, '>=', $budget, "the runs spent the budget: $total s");

# the seconds spent as of time $t: every run's wall time up to $t
sub spent_at
{
	my ($t) = @_;
	my $s = 0;
	for my $r (@runs)
	{
		my $end = $r->[1] < $t ? $r->[1] : $t;
		$s += $end - $r->[0] if $end > $r->[0];
	}
	return $s;
}

# the moment the budget was spent: spent_at is continuous and rises with
# time, so bisect between the first start and the last end
my $last_end = (sort { $b <=> $a } map { $_->[1] } @runs)[0];
my ($lo, $hi) = ($runs[0][0], $last_end);
for (1 .. 60)
{
	my $mid = ($lo + $hi) / 2;
	if (spent_at($mid) >= $budget) { $hi = $mid; }
	else { $lo = $mid; }
}
my $crossed = $hi;
# a run starts a little after the load that chose it (the decision and
# the trainer's launch): 1 s of slack
my ($late, $latest) = (0, -1e9);
for my $r (@runs)
{
	$late++ if $r->[0] > $crossed + 1.0;
	$latest = $r->[0] - $crossed if $r->[0] - $crossed > $latest;
}
is($late, 0,
	sprintf('no run started after the budget was spent (a running run counted until then; the last start %.2f s from it)',
		$latest));
my $over = $last_end - $crossed;
cmp_ok($over, '<=', $longest + 1.0,
	sprintf('the last run ended %.1f s after the budget was spent: within one run length (%.1f s)',
		$over, $longest));

# ---- what task_overview and explain say -----------------------------------
my ($shown, $spent, $left) = split /\|/, query_as($node, 'lab_b', q{
	SELECT budget_seconds, spent_seconds, remaining_seconds FROM easeml.task_overview WHERE task = 'iris'});
is($shown, $budget, 'task_overview shows the budget');
cmp_ok(abs($spent - $total), '<', 1e-6, "task_overview's spent seconds are the runs' recorded seconds ($spent)");
is($left, 0, 'and nothing remains');
like(query_as($node, 'lab_b', q{SELECT why FROM easeml.explain('iris')}),
	qr/the task is completed/, 'explain says the scheduler trains nothing for it');

# ---- the refit on every row still happens for the completed task -------
my $deployed = query_as($node, 'lab_b', q{SELECT run_id FROM easeml.deployed WHERE task = 'iris'});
like($deployed, qr/^\d+$/, "the best run is deployed (run $deployed)");
query_as($node, 'lab_b', q{UPDATE easeml.tasks SET refit_all = true WHERE name = 'iris'});
is( $node->poll_query_until(
		'postgres', q{
		SELECT d.refitted_at IS NOT NULL FROM easeml.deployed d WHERE d.task = 'iris'}),
	1,
	'the deployment swaps in its refit on every row');
my ($refit_status, $refit_start) = split /\|/, query_as($node, 'lab_b', q{
	SELECT f.status, extract(epoch FROM f.started_at)
	  FROM easeml.deployed d JOIN easeml.runs f ON f.id = d.refit_run_id WHERE d.task = 'iris'});
is($refit_status, 'succeeded', 'the refit succeeded');
cmp_ok($refit_start, '>', $last_end, 'it ran after the search had ended');
is( query_as(
		$node, 'lab_b', qq{
	SELECT t.status || '/' || (abs(o.spent_seconds - $total) < 1e-6)
	  FROM easeml.tasks t JOIN easeml.task_overview o ON o.task_id = t.id WHERE t.name = 'iris'}),
	'completed/true',
	'the task stays completed and the refit is not counted against the budget');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris' AND r.purpose = 'select'}),
	$n,
	'no selection run was added');

done_testing();
