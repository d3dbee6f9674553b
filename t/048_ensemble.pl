# Ensembles (docs/models.md "Ensembles", docs/scheduler.md 7.10): every
# selection run stores its validation predictions; after k =
# easeml.ensemble_min_runs of them the scheduler runs an ensemble run,
# whose trainer selects members greedily with replacement; the ensemble is
# scored, ranked, deployed and predicted in SQL like any run, and its
# predictions are the weighted average of its members' own.  Another is
# built after k more runs (within a share of the search's seconds), and a
# last one over every run when the task completes.  Predictions over
# easeml.artifact_max_bytes are not kept, and the run says why.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('ensemble', 'easeml.ensemble_min_runs' => 3);
load_dataset($node, 'breast_cancer', 'cancer');
load_dataset($node, 'wine', 'wine');
load_dataset($node, 'diabetes_regression', 'diabetes');
make_tenant($node, 'lab_e', 'public.cancer', 'public.wine', 'public.diabetes');
make_tenant($node, 'lab_o');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'knn-15', 'knn-5', 'ridge-1',
												'linear-svm-c0.1', 'rf-50')});

# the split models predict (refit_all off), and the tenant deploys by hand;
# cancer ranks by log loss, which an average of probabilities improves
query_as($node, 'lab_e', q{
	INSERT INTO easeml.tasks (name, source, target, metric, refit_all, auto_deploy)
		VALUES ('cancer', 'public.cancer', 'label', 'log_loss', false, false);
	INSERT INTO easeml.tasks (name, source, target, kind, refit_all, auto_deploy)
		VALUES ('diabetes', 'public.diabetes', 'target', 'regression', false, false);});

ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 2 FROM easeml.tasks WHERE status = 'completed'}),
	'both tasks try their candidates');
# each task's first ensemble at k = 3 runs; then another once k more runs
# joined while the ensembles took at most a quarter of the search's
# seconds, and a last one when the task completed if a run joined since
# the last started: 1 or 2 ensembles each, the last over every run
# (t/052_ensemble_pace.pl tests the rule step by step)
ok( $node->poll_query_until('postgres', q{
		SELECT count(DISTINCT task_id) FILTER (WHERE purpose = 'ensemble') = 2
		   AND count(*) FILTER (WHERE purpose = 'ensemble' AND status IN ('queued', 'running')) = 0
		  FROM easeml.runs}),
	'the ensemble runs end and none is left queued');

is($node->safe_psql('postgres', q{
	SELECT t.name || ':' || count(*) FILTER (WHERE r.purpose = 'select' AND r.status = 'succeeded')
		   || ':' || count(p.run_id)
		   || ':' || (count(*) FILTER (WHERE r.purpose = 'ensemble') BETWEEN 1 AND 2)
		   || ':' || (count(*) FILTER (WHERE r.purpose = 'ensemble')
					  = count(*) FILTER (WHERE r.purpose = 'ensemble' AND r.status = 'succeeded'))
		   || ':' || (SELECT e.metrics ->> 'candidates' FROM easeml.runs e
					   WHERE e.task_id = t.id AND e.purpose = 'ensemble' ORDER BY e.id DESC LIMIT 1)
	  FROM easeml.tasks t JOIN easeml.runs r ON r.task_id = t.id
	  LEFT JOIN easeml.run_predictions p ON p.run_id = r.id
	 GROUP BY t.id, t.name ORDER BY t.name}),
	"cancer:6:6:true:true:6\ndiabetes:4:4:true:true:4",
	'every selection run stored its validation predictions; one or two ensembles each succeeded, the last over every run');
note('ensembles: ' . $node->safe_psql('postgres', q{
	SELECT string_agg(t.name || ' ' || r.id || ' over ' || (r.metrics ->> 'candidates'), ', ' ORDER BY r.id)
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE r.purpose = 'ensemble'}));

# the latest ensemble of cancer: its members, weights and score
my $ens = $node->safe_psql('postgres', q{
	SELECT max(r.id) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'cancer' AND r.purpose = 'ensemble'});
my %w;
for my $line (split /\n/, $node->safe_psql('postgres', qq{
	SELECT (e ->> 'run_id') || '|' || (e ->> 'weight')
	  FROM easeml.runs r, jsonb_array_elements(r.metrics -> 'members') e WHERE r.id = $ens}))
{
	my ($id, $weight) = split /\|/, $line;
	$w{$id} = $weight;
}
my $sum = 0;
$sum += $_ for values %w;
ok(keys %w >= 2 && abs($sum - 1) < 1e-9, 'the ensemble names members with weights that sum to 1 (' . join(',', map { "$_:$w{$_}" } sort keys %w) . ')');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM easeml.runs r JOIN easeml.runs e ON e.task_id = r.task_id
	 WHERE e.id = $ens AND r.purpose = 'select' AND r.status = 'succeeded'
	   AND r.id IN (} . join(',', keys %w) . q{)}), scalar(keys %w),
	'its members are succeeded selection runs of its task');
# its weights are selected on every validation row, where it is at least
# its best member; its score is cross-fitted (docs/models.md section 8):
# each row's prediction is of an ensemble selected on the other folds
is($node->safe_psql('postgres', qq{
	SELECT (r.metrics ->> 'candidates') || ' ' || ((r.metrics ->> 'score_in_sample')::float8 >=
			(SELECT max(s.score) FROM easeml.runs s
			  WHERE s.task_id = r.task_id AND s.purpose = 'select') - 1e-9)
		   || ' ' || (r.metrics ->> 'metric') || ' ' || (r.metrics ? 'score_se')
		   || ' ' || (r.metrics ->> 'score_method') || ' ' || (r.metrics ->> 'cross_fit_folds')
		   || ' ' || jsonb_array_length(r.metrics -> 'cross_fit_fold_scores')
		   || ' ' || (r.score = (r.metrics ->> 'score')::float8)
		   || ' ' || (SELECT m.name FROM easeml.models m WHERE m.id = r.model_id)
	  FROM easeml.runs r WHERE r.id = $ens}),
	'6 true log_loss true cross_fit 5 5 true ensemble',
	'the second ensemble selected from all 6 runs; in sample it is at least the best run, its score is cross-fitted in 5 folds, with its standard error');
note('cancer ensemble: ' . $node->safe_psql('postgres', qq{
	SELECT 'score ' || round(r.score::numeric, 4) || ', in sample '
		   || round((r.metrics ->> 'score_in_sample')::numeric, 4) || ', best run '
		   || round((r.metrics ->> 'best_member_score')::numeric, 4) || ', folds '
		   || (r.metrics ->> 'cross_fit_fold_scores') || ', n_val ' || (r.metrics ->> 'n_val')
	  FROM easeml.runs r WHERE r.id = $ens}));
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM easeml.decisions WHERE run_id = $ens}), '0', 'no decision of the policy chose it');

# ranked on the leaderboard like any run
my $rank = $node->safe_psql('postgres', qq{
	SELECT rank || ' ' || family FROM easeml.leaderboard WHERE run_id = $ens});
like($rank, qr/^\d+ ensemble$/, "the ensemble is ranked on the leaderboard ($rank)");

# deployed and predicted in SQL: the weighted average of its members
sub probas
{
	my ($task, $fn) = @_;
	my @out = split /\n/, query_as($node, 'lab_e', qq{
		SELECT easeml.$fn('$task', w)::text FROM public.$task w ORDER BY ctid});
	return [ map { $fn eq 'predict_proba' ? decode_json($_) : $_ } @out ];
}

sub compare_with_members
{
	my ($task, $run, $fn) = @_;
	my %weights;
	for my $line (split /\n/, $node->safe_psql('postgres', qq{
		SELECT (e ->> 'run_id') || '|' || (e ->> 'weight')
		  FROM easeml.runs r, jsonb_array_elements(r.metrics -> 'members') e WHERE r.id = $run}))
	{
		my ($id, $weight) = split /\|/, $line;
		$weights{$id} = $weight;
	}
	is(query_as($node, 'lab_e', "SELECT easeml.deploy('$task', ${run}::bigint)"), $run,
		"$task: the ensemble is deployed");
	is($node->safe_psql('postgres', qq{
		SELECT run_id || ' ' || artifact_run_id FROM easeml.deployed WHERE task = '$task'}),
		"$run $run", "$task: its own artifact predicts (no refit)");
	my $got = probas($task, $fn);
	my @expect;
	for my $id (sort keys %weights)
	{
		query_as($node, 'lab_e', "SELECT easeml.deploy('$task', ${id}::bigint)");
		my $p = probas($task, $fn);
		for my $i (0 .. $#$p)
		{
			if ($fn eq 'predict_proba')
			{
				$expect[$i]{$_} += $weights{$id} * $p->[$i]{$_} for keys %{ $p->[$i] };
			}
			else
			{
				$expect[$i] += $weights{$id} * $p->[$i];
			}
		}
	}
	my $maxdiff = 0;
	for my $i (0 .. $#$got)
	{
		my @d = $fn eq 'predict_proba'
		  ? map { abs($got->[$i]{$_} - $expect[$i]{$_}) } keys %{ $got->[$i] }
		  : (abs($got->[$i] - $expect[$i]) / (1 + abs($expect[$i])));
		for (@d) { $maxdiff = $_ if $_ > $maxdiff }
	}
	ok(@$got > 100 && $maxdiff < 1e-9,
		"$task: predict from SQL is the weighted average of the members' own predictions on "
		  . scalar(@$got) . " rows (largest difference $maxdiff)");
	query_as($node, 'lab_e', "SELECT easeml.deploy('$task', ${run}::bigint)");
	return;
}
compare_with_members('cancer', $ens, 'predict_proba');
is(query_as($node, 'lab_e', q{
	SELECT count(*) FILTER (WHERE easeml.predict('cancer', w) = w.label) > 0.9 * count(*)
	  FROM public.cancer w}), 't', 'cancer: the ensemble predicts the labels of the source');
my $rens = $node->safe_psql('postgres', q{
	SELECT max(r.id) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'diabetes' AND r.purpose = 'ensemble'});
compare_with_members('diabetes', $rens, 'predict_value');

# a tenant sees its own predictions only
is(query_as($node, 'lab_o', 'SELECT count(*) FROM easeml.run_predictions'), '0',
	'another tenant sees none of the validation predictions');
is(query_as($node, 'lab_e', 'SELECT count(*) FROM easeml.run_predictions'), '10',
	'the tenant reads its own');

# a member's artifact gone: predict says so
my $member = (sort keys %w)[0];
$node->safe_psql('postgres', "DELETE FROM easeml.artifacts WHERE run_id = $member");
my ($rc, $out, $err) = $node->psql('postgres', q{SELECT easeml.predict('cancer', w) FROM public.cancer w LIMIT 1},
	extra_params => [ '-U', 'lab_e' ]);
like($err, qr/member run $member of ensemble run $ens of task "cancer" has no stored model/,
	'a member without its artifact: predict fails and says which');

# predictions over easeml.artifact_max_bytes are not kept, and no ensemble
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET easeml.artifact_max_bytes = 0; SELECT pg_reload_conf();});
query_as($node, 'lab_e', q{
	INSERT INTO easeml.tasks (name, source, target, max_runs) VALUES ('wine2', 'public.wine', 'label', 3);});
ok( $node->poll_query_until('postgres', q{
		SELECT status = 'completed' FROM easeml.tasks WHERE name = 'wine2'}),
	'wine2 tries three candidates');
is($node->safe_psql('postgres', q{
	SELECT count(*) || ' ' || count(*) FILTER (WHERE (r.metrics ->> 'predictions_stored')::boolean IS FALSE
								AND r.metrics ->> 'predictions_skipped' LIKE '%over easeml.artifact_max_bytes%')
		   || ' ' || count(p.run_id) || ' ' || count(*) FILTER (WHERE r.purpose = 'ensemble')
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	  LEFT JOIN easeml.run_predictions p ON p.run_id = r.id
	 WHERE t.name = 'wine2' AND r.purpose <> 'refit'}), '3 3 0 0',
	'predictions over the cap are skipped, the runs say why, and no ensemble is built');

done_testing();
