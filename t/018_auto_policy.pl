# The "auto" policy, the live default (issue 7): the scheduler replays its
# candidates (the history mixture with the learned task score, and
# popular) on the installed history off the decision path, runs the winner and records its choice, with every
# candidate's replay score, in easeml.policy_choices; easeml.policy_status
# shows what runs.  Setting easeml.policy to another spec pins that one.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('auto_policy');
is($node->safe_psql('postgres', 'SHOW easeml.policy'), 'default',
	'SHOW easeml.policy names the default');
is($node->safe_psql('postgres', 'SELECT setting, spec, auto, auto_candidates FROM easeml.policy_status'),
	'default|auto|t|hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2:xg=1.5:xo=1,popular',
	'the default policy is auto, and policy_status says what it chooses among');
# until its replay has chosen, auto runs its fallback: the users' heuristic
is($node->safe_psql('postgres',
		'SELECT running, fallback, on_fallback, coalesce(chosen, false) FROM easeml.policy_status'),
	'popular|popular|t|f', 'before a choice: the fallback popular runs, and policy_status says so');

# the seed history installed with the extension: its data sets x models
my $csv = $node->config_data('--sharedir') . '/extension/easeml_seed_history.csv';
open(my $fh, '<', $csv) or die "$csv: $!";
my @lines = grep { /\S/ } <$fh>;
close($fh);
my $n_rows = @lines - 1;
my $n_models = (split /,/, $lines[0]) - 1;
my $n_tenants = int($n_rows / 2);	# half the rows, as autopolicy.c draws
cmp_ok($n_rows, '>=', 14, 'the seed history has at least 14 data sets');
ok($node->safe_psql('postgres', "SELECT easeml.load_history('$csv', 'seed')") > 200,
	'seed history loaded');

# a refit cycle starts within about 10 s of a change and replays in steps
$node->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM easeml.policy_choices WHERE chosen})
  or die 'the scheduler recorded no choice';
my $row = $node->safe_psql('postgres', q{
	SELECT policy = ANY (candidates), candidates::text, history_rows, models, tenants,
	       score_unit, kind, setting,
	       scores[array_position(candidates, policy)] = (SELECT min(s) FROM unnest(scores) s),
	       (SELECT bool_and(s > 0 AND s < 'Infinity') FROM unnest(scores) s), reason
	  FROM easeml.policy_choices WHERE chosen ORDER BY id DESC LIMIT 1});
my @f = split /\|/, $row;
is($f[0], 't', 'the choice is one of the candidates');
is($f[1], '{hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2:xg=1.5:xo=1,popular}', 'the candidates');
is("$f[2] $f[3] $f[4] $f[5] $f[6] $f[7]",
	"$n_rows $n_models $n_tenants runs classification default",
	'replayed on the seed history: every row and model, half the rows as tenants, unit costs');
is($f[8], 't', 'the choice has the lowest score');
is($f[9], 't', 'every candidate has a positive, finite score');
like($f[10], qr/reached loss .* soonest replayed on $n_rows classification history rows/,
	'the reason says why');
diag "choice: $row";

my ($chosen) = $node->safe_psql('postgres', q{
	SELECT policy FROM easeml.policy_choices WHERE chosen ORDER BY id DESC LIMIT 1});
is($node->safe_psql('postgres', 'SELECT running, chosen, on_fallback FROM easeml.policy_status'),
	"$chosen|t|f", 'policy_status: auto runs its choice, not the fallback');

# [autokeep] New models rebuild the live world and its refit (as each
# round of generated candidates does), but the chooser's inputs -- the
# history's block, the slots -- did not change: the rebuilt world keeps
# the choice without a replay, so nothing new is recorded.  A regression
# task makes decisions (each comes from the rebuilt world after its refit,
# the chooser's step included) without touching the classification block.
# Then a changed cell of the block is chosen again.
my ($n_choices, $last_id, $chosen_at) = split /\|/, $node->safe_psql('postgres', q{
	SELECT count(*), max(id), (SELECT chosen_at FROM easeml.policy_status) FROM easeml.policy_choices});
load_dataset($node, 'cpu_vendor', 'cpu');
make_tenant($node, 'lab_k', 'public.cpu');
$node->safe_psql('postgres', q{
	INSERT INTO easeml.models (name, family, params, kinds)
		VALUES ('knn-4-keep', 'knn', '{"k": 4}', '{classification,regression}')});
query_as($node, 'lab_k', q{
	INSERT INTO easeml.tasks (name, source, target, kind, max_runs, refit_all)
		VALUES ('keep', 'public.cpu', 'target', 'regression', 4, false)});
$node->poll_query_until('postgres', qq{
	SELECT count(*) >= 2 FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	 WHERE t.name = 'keep' AND d.policy = 'default (auto: $chosen)'})
  or die 'the rebuilt world made no decision';
pass('the world rebuilt for a new model decides, running the choice it kept');
is( $node->safe_psql('postgres', q{
	SELECT count(*) || '|' || max(id) || '|' || (SELECT chosen_at FROM easeml.policy_status)
	  FROM easeml.policy_choices}),
	"$n_choices|$last_id|$chosen_at",
	'the rebuilt world kept the choice: not replayed again, nothing recorded, chosen_at unchanged');
$node->safe_psql('postgres', q{
	UPDATE easeml.history SET quality = quality / 2
	 WHERE kind = 'classification'
	   AND (dataset, model_id) = (
		   SELECT dataset, model_id FROM easeml.history WHERE kind = 'classification'
			  AND model_id IN (SELECT model_id FROM easeml.history WHERE kind = 'classification'
								GROUP BY model_id
							   HAVING count(*) = (SELECT count(DISTINCT dataset) FROM easeml.history
												   WHERE kind = 'classification'))
			ORDER BY dataset, model_id LIMIT 1)});
$node->poll_query_until('postgres', qq{SELECT count(*) > 0 FROM easeml.policy_choices WHERE id > $last_id})
  or die 'a changed history was not chosen on again';
is($node->safe_psql('postgres', qq{
	SELECT history_rows || ' ' || (chosen_at > '$chosen_at') FROM easeml.policy_choices
	 WHERE id > $last_id ORDER BY id LIMIT 1}),
	"$n_rows true", 'a changed cell of the block is replayed and recorded');
$node->poll_query_until('postgres', q{SELECT status <> 'active' FROM easeml.tasks WHERE name = 'keep'})
  or die 'the regression task did not end';
$chosen = $node->safe_psql('postgres', q{
	SELECT policy FROM easeml.policy_choices WHERE chosen ORDER BY id DESC LIMIT 1});

# One chooser (issue 23): a replay's default makes the same choice on the
# same history.  The history as the worker reads it -- rows by key, the
# models every row knows by id -- replayed by easeml-replay choose gives
# the recorded choice and the same scores.
my @hist = split /\n/, $node->safe_psql('postgres', q{
	WITH d AS (SELECT DISTINCT 'h:' || kind || ':' || dataset AS key, dataset
				 FROM easeml.history WHERE kind = 'classification'),
		 m AS (SELECT h.model_id FROM easeml.history h JOIN easeml.models mo ON mo.id = h.model_id
				WHERE h.kind = 'classification' AND mo.enabled
				GROUP BY h.model_id HAVING count(*) = (SELECT count(*) FROM d))
	SELECT string_agg(h.quality::text, ',' ORDER BY h.model_id)
	  FROM d JOIN easeml.history h ON h.dataset = d.dataset AND h.kind = 'classification'
	 WHERE h.model_id IN (SELECT model_id FROM m)
	 GROUP BY d.key ORDER BY d.key});
my $n_cols = scalar(split /,/, $hist[0]);
my $block = PostgreSQL::Test::Utils::tempdir() . '/history.csv';
open(my $bf, '>', $block) or die "$block: $!";
print $bf join(',', 'id', map { "m$_" } 1 .. $n_cols), "\n";
print $bf join("\n", map { ($_ + 1) . ",$hist[$_]" } 0 .. $#hist), "\n";
close($bf);
my ($slots) = $node->safe_psql('postgres', q{
	SELECT reason FROM easeml.policy_choices WHERE chosen ORDER BY id DESC LIMIT 1})
  =~ /(\d+) slot\(s\)/;
my $replayed = `easeml-replay choose --quality $block --devices $slots`;
is($?, 0, 'easeml-replay choose runs');
my ($rpolicy) = $replayed =~ /^CHOICE policy=(\S+)/m;
is($rpolicy, $chosen, "a replay's default chooses what the worker chose on the same history");
my %rscore = $replayed =~ /^SCORE candidate=(\S+) score=(\S+)$/mg;
my @live = split /[|\n]/, $node->safe_psql('postgres', q{
	SELECT c, s FROM easeml.policy_choices, unnest(candidates, scores) AS u(c, s)
	 WHERE chosen AND id = (SELECT max(id) FROM easeml.policy_choices WHERE chosen)
	 ORDER BY c});
my $agree = 0;
for (my $i = 0; $i < @live; $i += 2)
{
	my ($c, $s) = @live[ $i, $i + 1 ];
	$agree++ if defined $rscore{$c} && abs($rscore{$c} - $s) <= 1e-12 * abs($s);
}
is($agree, scalar(keys %rscore), 'and every candidate has the score the worker recorded');
cmp_ok($agree, '>=', 2, 'two or more candidates compared');

# tenants cannot read the choices (they summarise every tenant's history),
# but easeml.explain ranks their candidates as the chosen policy does
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('flowers', 'public.iris', 'label')});
like(query_as($node, 'lab_a', q{
	SELECT why FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'flowers'))
	 WHERE rank = 1}),
	qr/; policy: default \(auto\) runs \Q$chosen\E, chosen by replay on the history$/,
	'explain names what auto runs');
# readable for a tenant's pg_dump, but row security shows a tenant no row
my ($rc, $out, $err) = $node->psql('postgres',
	'SELECT count(*) FROM easeml.policy_choices', extra_params => [ '-U', 'lab_a' ]);
is($rc . '|' . $out, '0|0', 'tenants cannot read the choices');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM easeml.policy_choices'),
	'>=', 1, 'which the superuser sees');

# the worker's decisions for it say which policy auto ran
$node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	 WHERE t.name = 'flowers' AND d.policy = 'default (auto: $chosen)'})
  or die 'no decision records what auto ran';
pass('decisions record what auto ran');
is($node->safe_psql('postgres', 'SELECT policy FROM easeml.scheduler_status()'),
	"default (auto: $chosen)", 'scheduler_status shows what auto runs');

# options after auto: w, s, qmax, qarm apply to every candidate and to
# the choice (they were dropped once auto had chosen); those that select
# what auto chooses are refused by the setting's check hook
my $opts = ':qmax=1:w=60';
set_policy($node, 'auto:w=60:qmax=1');
is($node->safe_psql('postgres', 'SELECT setting, auto, running FROM easeml.policy_status'),
	"auto:w=60:qmax=1|t|$chosen$opts",
	'policy_status: auto runs its choice with the options after it');
$node->poll_query_until('postgres',
	qq{SELECT policy = 'auto:w=60:qmax=1 (auto: $chosen$opts)' FROM easeml.scheduler_status()})
  or die 'the scheduler does not run the choice with the options';
pass('the scheduler runs the choice with the options after auto at once');
# the next refit cycle replays the candidates with the options
$node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.policy_choices WHERE setting = 'auto:w=60:qmax=1'})
  or die 'no choice made with the options';
my $with = $node->safe_psql('postgres', qq{
	SELECT chosen, policy, policy LIKE '%$opts',
		   (SELECT bool_and(c LIKE '%$opts') FROM unnest(candidates) c), reason LIKE '%$opts %'
	  FROM easeml.policy_choices WHERE setting = 'auto:w=60:qmax=1' ORDER BY id DESC LIMIT 1});
my @w = split /\|/, $with;
is("$w[0] $w[2] $w[3] $w[4]", 't t t t',
	"the replay compared every candidate with the options and chose one with them ($w[1])");
is($node->safe_psql('postgres', 'SELECT running FROM easeml.policy_status'),
	$w[1], 'policy_status: the new choice with the options runs');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('leaves', 'public.iris', 'label')});
$node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	 WHERE t.name = 'leaves' AND d.policy LIKE 'auto:w=60:qmax=1 (auto: %$opts)'})
  or die 'no decision records the choice with the options';
pass('decisions record the choice with the options');
$node->safe_psql('postgres', q{DELETE FROM easeml.tasks WHERE name = 'leaves'});
($rc, $out, $err) = $node->psql('postgres',
	"ALTER SYSTEM SET easeml.policy = 'auto:w=60:acq=ei'");
isnt($rc, 0, 'auto:w=60:acq=ei is refused');
like($err, qr/invalid value for parameter "easeml.policy".*\n.*Option "acq" cannot follow auto in "auto:w=60:acq=ei": auto chooses the acquisition/,
	'with the reason');
like($err, qr/HINT:  After auto only the options/, 'and a hint');
is($node->safe_psql('postgres', 'SHOW easeml.policy'), 'auto:w=60:qmax=1',
	'the refused setting changed nothing');

# pinned: the setting runs, whatever auto chose; SHOW, policy_status and
# the worker read the same single value
set_policy($node, 'tenant_bo');
is($node->safe_psql('postgres', 'SHOW easeml.policy'), 'tenant_bo', 'SHOW names the pinned policy');
is($node->safe_psql('postgres', 'SELECT setting, spec, auto, running FROM easeml.policy_status'),
	'tenant_bo|rr:cost:acq=ei|f|rr:cost:acq=ei', 'a pinned policy runs, and policy_status says its spec');
$node->poll_query_until('postgres',
	q{SELECT policy = 'tenant_bo' FROM easeml.scheduler_status()})
  or die 'scheduler_status does not show the pinned policy';
pass('scheduler_status shows the pinned policy');

# a policy that uses the history mixture runs live: the refit cycle fits it
# on the kind's history rows (src/core/refit.c), each task's own row left out
my $mix = 'hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2';
set_policy($node, $mix);
is($node->safe_psql('postgres', 'SELECT setting, auto, running FROM easeml.policy_status'),
	"$mix|f|$mix", 'a history-mixture policy is accepted live');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('petals', 'public.iris', 'label')});
$node->poll_query_until('postgres', qq{
	SELECT count(*) >= 2
	  FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	  JOIN easeml.runs r ON r.id = d.run_id
	 WHERE t.name = 'petals' AND d.policy = '$mix' AND r.status = 'succeeded'})
  or die 'no run chosen under the history-mixture policy finished';
pass('the worker decides under the history-mixture policy and its runs finish');
like(query_as($node, 'lab_a', q{
	SELECT why FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'petals'))
	 WHERE rank = 1}),
	qr/; history mixture: (1[1-9]|[2-9]\d) row\(s\) besides this task's own, bandwidth [0-9.e-]+/,
	"explain: the mixture of the seed and task rows, without the task's own row");

# the learned task score (mrg=2) runs live too: the refit cycle fits its
# model on the new mixture in slices and installs it with the mixture
my $learn = "$mix:mrg=2";
set_policy($node, $learn);
is($node->safe_psql('postgres', 'SELECT setting, auto, running FROM easeml.policy_status'),
	"$learn|f|$learn", 'a policy with mrg=2 is accepted live');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('sepals', 'public.iris', 'label')});
$node->poll_query_until('postgres', qq{
	SELECT count(*) >= 2
	  FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	  JOIN easeml.runs r ON r.id = d.run_id
	 WHERE t.name = 'sepals' AND d.policy = '$learn' AND r.status = 'succeeded'})
  or die 'no run chosen under mrg=2 finished';
pass('the worker decides under mrg=2 and its runs finish');
ok( $node->poll_query_until(
		'postgres', q{
	SELECT why ~ '; learned task score: fitted on [0-9]+ state\(s\) by the refit cycle'
	  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'sepals'))
	 WHERE rank = 1}),
	'explain: the refit cycle installed the learned task score');

done_testing();
