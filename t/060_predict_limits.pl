# Limits of easeml.predict in a backend (docs/predict.md §3 and §9): a
# call site whose task name changes from row to row parses each model
# once, also with a one-model cache; a cast function that takes a typmod
# and an explicit flag gets -1 and true; one tenant predicting with more
# runs than the counters hold forgets its own counts, not another's; and a
# trainer data session refuses a run that is not running.  The runs are
# fake (a stored softmax artifact), so nothing trains.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('predict_limits', 'easeml.enabled' => 'off');

# a softmax model over x, qty, colour (categorical) and member (boolean)
my $soft = '454153454d4c413107000000736f66746d61780000000007000000030000000000000000000000000000000300000061'
	. '6e74030000006265650300000063617409000000707265702e6d65616e02000000010000000700000000000000000000'
	. '000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000'
	. '00000000000a000000707265702e7363616c6502000000010000000700000000000000000000000000f03f0000000000'
	. '00f03f000000000000f03f000000000000f03f000000000000f03f000000000000f03f000000000000f03f0d00000070'
	. '7265702e656e636f6465727304000000010000001d010000000000000400000001000000010000002400000000000000'
	. 'd7f682379ba001400000000000000000d7f682379ba00140515efac783a8e43f01000000010000002400000000000000'
	. 'f31aca6b28af11400000000000000000f31aca6b28af1140a4658a55fa46d73f02000000030000005c00000000000000'
	. '0000000000000000000000000300000004000000626c756505000000677265656e03000000726564515e43790de5d53f'
	. 'c0e93818e6dc0040515e43790de5d53fc0e93818e6dc00405e43790de535d43fbc46e198ea3501400200000002000000'
	. '4500000000000000000000000000000000000000020000000500000066616c73650400000074727565790de53594d7e0'
	. '3fd6397958af0500400de53594d750de3fd6397958af0500400100000057020000000200000007000000000000000300'
	. '000000000000656f9b961f8422c072c1695f1a83bfbfaf01cac625c32240e86a22a69ce4e73f1cf7272f317bfc3f227d'
	. '28ffbf3604c0fa44907873e0fbbfd3d0157e59c4d1bfe5f232dbc4280040f7c2aec542c7e73f596b86c809df01409743'
	. '2ae2d9d007c0fb95fdbb3851f03fd5e22da439f2ffbfb2d7f5680242ef3ffa6cb0cbe6d3e33f47f1fff0a970d33fea74'
	. '8f343a8cedbf9a96966ae7d3e3bf368b8b60ac70d3bfbbd1bd203a8ced3f010000006202000000010000000300000000'
	. '0000004387ce732af4f8bfa3e74af4001c004009929d655c0fddbf00000000';

make_tenant($node, 'ta');
make_tenant($node, 'tb');
$node->safe_psql('postgres', q{
CREATE TABLE public.shop (x float8, qty int, colour text, member bool, label text);
INSERT INTO public.shop SELECT (i % 7)::float8, i % 5, (ARRAY['red','green','blue'])[1 + i % 3], i % 2 = 0,
  (ARRAY['ant','bee','cat'])[1 + i % 3] FROM generate_series(1, 60) i;
GRANT SELECT ON public.shop TO ta, tb;
CREATE FUNCTION public.fake_run(task_id bigint, art bytea) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE rid bigint;
BEGIN
	INSERT INTO easeml.runs (task_id, model_id, status, score, seconds, finished_at)
	SELECT task_id, m.id, 'succeeded', 0.8, 1, now() FROM easeml.models m WHERE m.name = 'softmax-l2-1e-4'
	RETURNING id INTO rid;
	INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
	SELECT rid, r.tenant, length(art), art FROM easeml.runs r WHERE r.id = rid;
	RETURN rid;
END $$;
});
for my $t (qw(s1 s2))
{
	query_as($node, 'ta', qq{INSERT INTO easeml.tasks (name, source, target, features)
		VALUES ('$t', 'public.shop', 'label', '{x,qty,colour,member}')});
	$node->safe_psql('postgres',
		qq{SELECT fake_run(id, decode('$soft', 'hex')) FROM easeml.tasks WHERE name = '$t'});
}

# [cache] two task names alternating over 4000 rows with a one-model
# cache: each model is parsed once (was once per row: 72 MB and a minute
# for 12,000 rows), and the predictions are those of the default cache
my $alt = q{SELECT md5(string_agg(easeml.predict(CASE WHEN i % 2 = 0 THEN 's1' ELSE 's2' END,
	ARRAY[(i % 7)::text, (i % 5)::text, (ARRAY['red','green','blue'])[1 + i % 3], (i % 2 = 0)::text]), ',' ORDER BY i))
	FROM generate_series(1, 4000) i};
my $want = query_as($node, 'ta', $alt);
my ($rc, $out, $err) = $node->psql('postgres',
	"SET easeml.predict_cache_models = 1; SET client_min_messages = debug1; $alt",
	extra_params => [ '-U', 'ta' ]);
my $parses = () = $err =~ /easeml\.predict parsed the model of run/g;
is($out, $want, 'alternating tasks with a one-model cache predict what the default cache predicts');
is($parses, 2, 'and each of the two models is parsed once in the statement');
# ten names in turn (more than a call site keeps): still correct
my $ten = q{SELECT string_agg(easeml.predict(CASE WHEN i % 10 < 5 THEN 's1' ELSE 's2' END, ARRAY['4.1','2','blue','false']), ',')
	FROM generate_series(1, 40) i};
is(query_as($node, 'ta', "SET easeml.predict_cache_models = 1; $ten"), query_as($node, 'ta', $ten),
	'names in runs of five with a one-model cache predict as with the default cache');

# [cast] a cast to text that takes (value, typmod, explicit), as
# CREATE CAST allows: predict passes -1 and true as PostgreSQL does (it
# passed only the value, and the function read garbage)
$node->safe_psql('postgres', 'CREATE SCHEMA ta AUTHORIZATION ta');
query_as($node, 'ta', q{
CREATE TYPE ta.col AS ENUM ('red', 'green', 'blue');
CREATE FUNCTION ta.col_text(ta.col, int, bool) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	IF $2 IS DISTINCT FROM -1 OR $3 IS DISTINCT FROM true THEN
		RAISE EXCEPTION 'cast called with typmod % explicit %', $2, $3;
	END IF;
	RETURN format('%s', $1);
END $$;
CREATE CAST (ta.col AS text) WITH FUNCTION ta.col_text(ta.col, int, bool);});
($rc, $out, $err) = $node->psql('postgres', q{
	SELECT string_agg((easeml.predict('s1', r) = easeml.predict('s1', ARRAY[r.x::text, r.qty::text, r.colour::text, r.member::text]))::text, ',')
	  FROM (SELECT 1::float8 AS x, 2 AS qty, c AS colour, true AS member
			  FROM unnest(enum_range(NULL::ta.col)) c) r},
	extra_params => [ '-U', 'ta' ]);
is("$out$err", 'true,true,true', 'a three-argument cast function gets typmod -1 and explicit true');

# [stats] tenant tb predicts with 1,030 runs (one statement over 1,030
# tasks): ta's counters stay (they were erased: one LRU for all tenants)
query_as($node, 'ta', q{SELECT count(easeml.predict('s1', ARRAY['4.1','2','blue','false'])) FROM generate_series(1, 7)});
my $ta_before = query_as($node, 'ta',
	q{SELECT string_agg(task || ':' || predicted_rows, ',' ORDER BY task) FROM easeml.prediction_stats});
query_as($node, 'tb', q{INSERT INTO easeml.tasks (name, source, target, features)
	SELECT 'u' || i, 'public.shop', 'label', '{x,qty,colour,member}' FROM generate_series(1, 1030) i});
$node->safe_psql('postgres',
	qq{SELECT count(fake_run(id, decode('$soft', 'hex'))) FROM easeml.tasks WHERE tenant = 'tb'});
is(query_as($node, 'tb', q{SELECT count(easeml.predict(name, ARRAY['4.1','2','blue','false'])) FROM easeml.tasks}),
	'1030', 'tb predicts with 1,030 tasks in one statement');
is(query_as($node, 'ta',
	q{SELECT string_agg(task || ':' || predicted_rows, ',' ORDER BY task) FROM easeml.prediction_stats}),
	$ta_before, "ta's prediction counters survive tb's 1,030 runs");
is(query_as($node, 'tb', 'SELECT count(*) FROM easeml.prediction_stats'),
	1024 - 2, 'tb keeps the other 1,022 slots');

# [leak] a call site whose task cannot be resolved leaves nothing behind
# (its context, with any hold on a model, stayed in the function's memory
# until the statement's end: a loop catching the errors piled them up)
($rc, $out, $err) = $node->psql('postgres', q{
DO $$
DECLARE n int;
BEGIN
	FOR i IN 1..50 LOOP
		BEGIN
			PERFORM easeml.predict('no_such_task', ARRAY['4.1','2','blue','false']);
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
	END LOOP;
	SELECT count(*) INTO n FROM pg_backend_memory_contexts WHERE name = 'easeml.predict call site';
	RAISE NOTICE 'call sites left: %', n;
END $$;});
like($err, qr/call sites left: 0\b/, 'failed lookups leave no call site behind');

# [trainer] a data session is for a running run only
($rc, $out, $err) = $node->psql('postgres', q{
	BEGIN;
	SELECT easeml_trainer.data_session(min(id)) FROM easeml.runs WHERE status = 'succeeded';
	ROLLBACK;});
like($err, qr/run \d+ is not running/, 'data_session refuses a run that is not running');

done_testing();
