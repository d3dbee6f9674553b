# Generated candidates before the grid is spent (docs/scheduler.md 7.9):
# every easeml.generate_every succeeded runs, the scheduler evaluates a few
# proposals around a budgeted task's best runs with the task's GP
# posterior and the policy's acquisition, and makes the best one a model
# row when its acquisition beats the best untried candidate's by more than
# easeml.generate_margin times.  Deterministic here: the margin is 0 (any
# proposal with an acquisition above 0 wins: an untried point's posterior
# keeps variance), the policy is pinned to cost-aware EI (hybrid:cost) and
# max_runs is below the grid's size, so the grid is never spent and every
# generated candidate comes from this path.  A task without a budget gets
# none.  A task whose proposals fail (a broken space) runs on its grid.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node(
	'early_generation',
	'easeml.max_workers' => 2,
	'easeml.ensemble_min_runs' => 0,
	'easeml.policy' => 'hybrid:cost',
	'easeml.generate_every' => 1,
	'easeml.generate_margin' => 0);
load_dataset($node, 'cpu_vendor', 'cpu');
make_tenant($node, 'lab_e', 'public.cpu');
make_tenant($node, 'lab_p', 'public.cpu');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = family IN ('knn', 'ridge', 'gbt')});
my $grid = $node->safe_psql('postgres',
	q{SELECT count(*) FROM easeml.models WHERE enabled AND 'regression' = ANY (kinds)});
my $max_runs = 12;
cmp_ok($grid, '>', $max_runs, "$grid grid candidates, more than the task's max_runs ($max_runs)");

# a task without a budget and one with a budget, at the same time
query_as($node, 'lab_p', q{
	INSERT INTO easeml.tasks (name, source, target, kind, refit_all)
		VALUES ('plain', 'public.cpu', 'target', 'regression', false)});
query_as($node, 'lab_e', qq{
	INSERT INTO easeml.tasks (name, source, target, kind, budget_seconds, max_runs, refit_all)
		VALUES ('early', 'public.cpu', 'target', 'regression', 600, $max_runs, false)});
for my $name ('early', 'plain')
{
	is( $node->poll_query_until(
			'postgres', "SELECT status <> 'active' FROM easeml.tasks WHERE name = '$name'"),
		1,
		"task $name leaves active within the poll deadline");
}
is( query_as($node, 'lab_e', q{SELECT status || ': ' || status_reason FROM easeml.tasks WHERE name = 'early'}),
	"completed: max_runs ($max_runs) reached",
	'the budgeted task ends at max_runs, before its grid is spent');
is( query_as($node, 'lab_p', q{SELECT status || ': ' || status_reason FROM easeml.tasks WHERE name = 'plain'}),
	'completed: every candidate has been tried',
	'the task without a budget completes on the grid');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.models m JOIN easeml.tasks t ON t.id = m.generated_for WHERE t.name = 'plain'}),
	0, 'no candidate was generated for the task without a budget');

# ---- the budgeted task got generated candidates while its grid had some left
my ($n_gen, $n_tried_gen, $n_succeeded) = split /\|/, $node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM easeml.models m WHERE m.generated_for = t.id),
		   (SELECT count(DISTINCT r.model_id) FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
			 WHERE r.task_id = t.id AND m.generated_for = t.id),
		   (SELECT count(*) FROM easeml.runs r WHERE r.task_id = t.id AND r.status = 'succeeded')
	  FROM easeml.tasks t WHERE t.name = 'early'});
cmp_ok($n_gen, '>=', 1, "$n_gen candidates were generated before the grid was spent");
cmp_ok($n_gen, '<=', $n_succeeded,
	"at most one per succeeded run (easeml.generate_every = 1): $n_gen of $n_succeeded");
cmp_ok($n_tried_gen, '>=', 1, "the policy chose $n_tried_gen of them");
# when the first was chosen, grid candidates were still untried (so they
# were when it was generated)
my ($grid_before, $grid_eligible) = split /\|/, $node->safe_psql('postgres', q{
	WITH t AS (SELECT id FROM easeml.tasks WHERE name = 'early'),
	first_gen AS (
		SELECT min(d.id) AS id FROM easeml.decisions d JOIN easeml.models m ON m.id = d.model_id, t
		 WHERE d.task_id = t.id AND m.generated_for = t.id)
	SELECT (SELECT count(DISTINCT d.model_id) FROM easeml.decisions d JOIN easeml.models m ON m.id = d.model_id, t, first_gen
			 WHERE d.task_id = t.id AND m.generated_for IS NULL AND d.id < first_gen.id),
		   (SELECT count(*) FROM easeml.models m WHERE m.enabled AND m.generated_for IS NULL
			   AND 'regression' = ANY (m.kinds))});
cmp_ok($grid_before, '<', $grid_eligible,
	"a generated candidate was chosen after $grid_before of the $grid_eligible grid candidates");
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.models g
	  JOIN easeml.tasks t ON t.id = g.generated_for
	  JOIN easeml.models p ON p.id = g.parent_model
	  JOIN easeml.runs r ON r.id = g.generated_by_run
	 WHERE t.name = 'early' AND p.generated_for IS NULL AND r.task_id = t.id
	   AND r.status = 'succeeded' AND g.family = p.family AND g.params <> p.params
	   AND g.kinds = '{regression}' AND g.name ~ '\.t\d+\.g\d+$'}),
	$n_gen,
	'each is a row of the existing generation path: a grid parent, a succeeded run of the task, its name');
is(query_as($node, 'lab_p', 'SELECT count(*) FROM easeml.models WHERE generated_for IS NOT NULL'),
	0, 'another tenant does not see them');
is(query_as($node, 'lab_e', 'SELECT count(*) FROM easeml.models WHERE generated_for IS NOT NULL'),
	$n_gen, 'their tenant does');
ok( $node->log_contains('generated before its grid is spent: acquisition'),
	'the server log says why each was generated');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.decisions d JOIN easeml.models m ON m.id = d.model_id
	 WHERE m.generated_for IS NOT NULL AND NOT (d.mu > 0 AND d.sigma >= 0 AND d.est_seconds > 0)}),
	0, 'each decision for one had a predicted score, its spread and a cost estimate');

note($node->safe_psql('postgres', q{
	SELECT string_agg(format('%s %s %s %s', d.id, m.name, m.params, round(r.score::numeric, 4)), E'\n' ORDER BY d.id)
	  FROM easeml.decisions d JOIN easeml.models m ON m.id = d.model_id
	  JOIN easeml.tasks t ON t.id = d.task_id LEFT JOIN easeml.runs r ON r.id = d.run_id
	 WHERE t.name = 'early'}));


# ---- a look that fails stops neither the task nor the worker (docs/
# scheduler.md 7.9): an admin breaks the spaces of the classification-only
# families (the validation trigger off), so a budgeted classification
# task's proposals fail at every look; it still runs to max_runs on its
# grid, with no generated candidate and the error in the server log.  A
# restart first: no look waits out the 5 s after the last one made above.
load_dataset($node, 'breast_cancer', 'cancer');
$node->safe_psql('postgres', q{
	GRANT SELECT ON public.cancer TO lab_e;
	UPDATE easeml.models SET enabled = family IN ('softmax', 'gnb', 'linear_svm');
	ALTER TABLE easeml.model_spaces DISABLE TRIGGER model_spaces_validate;
	INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value)
	SELECT f, 'broken', 'int', 1e300, 1e301, '5e300' FROM unnest(ARRAY['softmax', 'gnb', 'linear_svm']) f;
	ALTER TABLE easeml.model_spaces ENABLE TRIGGER model_spaces_validate});
$node->restart;
my $log_offset = -s $node->logfile;
query_as($node, 'lab_e', q{
	INSERT INTO easeml.tasks (name, source, target, budget_seconds, max_runs, refit_all)
		VALUES ('broken', 'public.cancer', 'label', 600, 6, false)});
is( $node->poll_query_until(
		'postgres', "SELECT status <> 'active' FROM easeml.tasks WHERE name = 'broken'"),
	1,
	'the task whose proposals fail leaves active within the poll deadline');
is( query_as($node, 'lab_e', q{SELECT status || ': ' || status_reason FROM easeml.tasks WHERE name = 'broken'}),
	'completed: max_runs (6) reached',
	'it ran to max_runs on its grid');
is( $node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.models m JOIN easeml.tasks t ON t.id = m.generated_for WHERE t.name = 'broken'}),
	0, 'with no generated candidate');
ok( $node->log_contains(
		qr/ERROR:  bigint out of range\n[^\n]*CONTEXT:  PL\/pgSQL function easeml\._propose_candidates/,
		$log_offset),
	'its looks failed in easeml._propose_candidates, in the server log');
ok( !$node->log_contains(qr/background worker "[^"]*" \(PID \d+\) (exited|was terminated)/, $log_offset),
	'the scheduler went on: no background worker exited');

done_testing();
