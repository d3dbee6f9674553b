# A large catalog (issue 23): with 3,000 candidate models the auto policy's
# replay -- sliced into deterministic work units between the worker's
# decisions (src/core/replay.h), never abandoned on a clock -- completes, and
# the worker runs the candidate it chose, not its fallback.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $K = 3000;
my $node = easeml_node('large_catalog');

# the catalog: 3,000 ridge configurations, nothing else
$node->safe_psql('postgres', qq{
	UPDATE easeml.models SET enabled = false;
	INSERT INTO easeml.models (name, family, params, kinds, cost_factor)
	SELECT 'ridge-x' || i, 'ridge',
		   jsonb_build_object('alpha', round(power(10, -3 + 6.0 * i / $K)::numeric, 6)),
		   '{classification}', 0.2
	  FROM generate_series(1, $K) i;
	-- 16 earlier data sets scored every one of them: a model effect, the
	-- data set's difficulty and an interaction
	INSERT INTO easeml.history (dataset, model_id, quality, source, kind)
	SELECT 'd' || i, m.id,
		   0.55 + 0.25 * (0.5 + 0.5 * sin(m.id * 0.013 + i * 0.9)) * (0.8 + 0.2 * cos(i))
				- 0.02 * (i % 5),
		   'synthetic', 'classification'
	  FROM generate_series(1, 16) i CROSS JOIN easeml.models m WHERE m.enabled});
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM easeml.models WHERE enabled AND 'classification' = ANY (kinds)}),
	$K, "$K candidates");

# the refit cycle replays the candidates on the 16 x 3,000 block in slices
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM easeml.policy_choices WHERE models = $K}),
	'the auto policy made its choice on the large catalog');
my $row = $node->safe_psql('postgres', qq{
	SELECT chosen, policy = ANY (candidates), history_rows, models, replay_seconds > 0, reason
	  FROM easeml.policy_choices WHERE models = $K ORDER BY id DESC LIMIT 1});
my @f = split /\|/, $row;
is("$f[0] $f[1] $f[2] $f[3] $f[4]", "t t 16 $K t",
	'a replay chose one of the candidates on every row and model');
like($f[5], qr/soonest replayed on 16 classification history rows x $K models/,
	'the reason says so');
diag "choice: $row";
my ($chosen) = $node->safe_psql('postgres', qq{
	SELECT policy FROM easeml.policy_choices WHERE models = $K ORDER BY id DESC LIMIT 1});
is($node->safe_psql('postgres', 'SELECT running, on_fallback FROM easeml.policy_status'),
	"$chosen|f", 'policy_status: auto runs its choice, not the fallback');

# and the worker decides by it
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('flowers', 'public.iris', 'label')});
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) > 0
	  FROM easeml.decisions d JOIN easeml.tasks t ON t.id = d.task_id
	  JOIN easeml.runs r ON r.id = d.run_id
	 WHERE t.name = 'flowers' AND d.policy = 'default (auto: $chosen)'
	   AND r.status = 'succeeded'}),
	'the worker runs the chosen policy on the large catalog and its runs finish');

done_testing();
