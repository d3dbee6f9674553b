-- easeml.predict, predict_value and predict_proba (docs/predict.md): rows,
-- float8[] and text[] features, categories never seen in training, text
-- labels, regression, the model cache, tenancy, and every error.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
-- The artifacts were written by easeml-trainer on the same rows, offline:
--   easeml-trainer --csv shop.csv --target label --family softmax --seed 1
--   easeml-trainer --csv shop.csv --target label --family gnb --seed 1
--   easeml-trainer --csv shop_y.csv --target y --kind regression --family ridge --seed 1
CREATE ROLE regress_pred_a LOGIN;
CREATE ROLE regress_pred_b LOGIN;
SELECT easeml.add_tenant('regress_pred_a');
SELECT easeml.add_tenant('regress_pred_b');
CREATE TABLE public.shop (x float8, qty int, colour text, member bool, label text, y float8);
INSERT INTO public.shop VALUES
	(-0.83, 8, 'green', true, 'ant', -6.834),
	(2.77, 3, 'green', false, 'bee', 6.871),
	(3.11, 1, 'blue', true, 'cat', 8.311),
	(-0.98, 6, 'red', false, 'ant', -5.504),
	(1.12, 0, 'green', true, 'bee', 3.254),
	(3.92, 2, 'red', false, 'cat', 10.455),
	(1.03, 2, 'red', true, 'ant', 1.834),
	(2.02, 9, 'green', false, 'bee', 1.444),
	(3.73, 0, 'blue', true, 'cat', 11.085),
	(0.07, 3, 'red', false, 'ant', -1.295),
	(2.41, 2, 'blue', true, 'bee', 6.185),
	(3.56, 8, 'blue', false, 'cat', 7.422),
	(0.7, 2, 'red', true, 'ant', 0.805),
	(3.0, 6, 'green', false, 'bee', 5.833),
	(3.8, 2, 'blue', true, 'cat', 10.671),
	(0.5, 5, 'green', false, 'ant', -1.092),
	(1.7, 0, 'green', true, 'bee', 5.487),
	(3.1, 1, 'blue', false, 'cat', 8.533),
	(-0.48, 7, 'red', true, 'ant', -4.425),
	(1.85, 7, 'green', false, 'bee', 1.869),
	(3.93, 0, 'red', true, 'cat', 11.691),
	(0.63, 6, 'red', false, 'ant', -1.199),
	(3.22, 5, 'green', true, 'bee', 7.22),
	(3.04, 7, 'blue', false, 'cat', 6.023),
	(0.42, 3, 'red', true, 'ant', -0.185),
	(2.39, 7, 'blue', false, 'bee', 3.823),
	(3.63, 8, 'blue', true, 'cat', 7.123),
	(-0.0, 9, 'red', false, 'ant', -4.166),
	(1.99, 4, 'green', true, 'bee', 3.434),
	(5.65, 1, 'blue', false, 'cat', 16.615),
	(0.22, 5, 'green', true, 'ant', -1.492),
	(2.56, 8, 'green', false, 'bee', 3.545),
	(4.89, 4, 'blue', true, 'cat', 12.92),
	(0.12, 2, 'red', false, 'ant', -0.531),
	(1.89, 7, 'green', true, 'bee', 1.916),
	(4.12, 9, 'red', false, 'cat', 7.94),
	(-0.7, 3, 'red', true, 'ant', -3.664),
	(1.96, 4, 'green', false, 'bee', 3.605),
	(3.3, 0, 'blue', true, 'cat', 9.986),
	(0.99, 7, 'red', false, 'ant', -0.586),
	(1.76, 9, 'blue', true, 'bee', 0.956),
	(4.94, 6, 'blue', false, 'cat', 11.689),
	(0.59, 2, 'red', true, 'ant', 0.969),
	(2.68, 2, 'green', false, 'bee', 7.153),
	(1.45, 2, 'blue', true, 'cat', 3.682),
	(0.76, 7, 'green', false, 'ant', -1.27),
	(1.77, 4, 'green', true, 'bee', 3.067),
	(3.82, 2, 'blue', false, 'cat', 10.755);
GRANT SELECT ON public.shop TO regress_pred_a, regress_pred_b;
SET ROLE regress_pred_a;
INSERT INTO easeml.tasks (name, source, target, features)
VALUES ('shop', 'public.shop', 'label', '{x,qty,colour,member}');
INSERT INTO easeml.tasks (name, source, target, kind, features)
VALUES ('shop_y', 'public.shop', 'y', 'regression', '{x,qty}');
SELECT name, features, feature_types FROM easeml.tasks ORDER BY name;
-- no run has succeeded yet
SELECT try($$SELECT easeml.predict('shop', s) FROM public.shop s$$);
RESET ROLE;

-- runs as the trainer would record them, with its artifacts
CREATE FUNCTION public.fake_run(task text, model text, score float8, art bytea) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	rid bigint;
BEGIN
	INSERT INTO easeml.runs (task_id, model_id, status, score, seconds, finished_at)
	SELECT t.id, m.id, 'succeeded', score, 1, now()
	  FROM easeml.tasks t, easeml.models m WHERE t.name = task AND m.name = model
	RETURNING id INTO rid;
	INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
	SELECT rid, r.tenant, length(art), art FROM easeml.runs r WHERE r.id = rid;
	RETURN rid;
END;
$$;
SELECT fake_run('shop', 'softmax-l2-1e-4', 0.8,
	decode('454153454d4c413107000000736f66746d61780000000007000000030000000000000000000000000000000300000061'
	|| '6e74030000006265650300000063617409000000707265702e6d65616e02000000010000000700000000000000000000'
	|| '000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000'
	|| '00000000000a000000707265702e7363616c6502000000010000000700000000000000000000000000f03f0000000000'
	|| '00f03f000000000000f03f000000000000f03f000000000000f03f000000000000f03f000000000000f03f0d00000070'
	|| '7265702e656e636f6465727304000000010000001d010000000000000400000001000000010000002400000000000000'
	|| 'd7f682379ba001400000000000000000d7f682379ba00140515efac783a8e43f01000000010000002400000000000000'
	|| 'f31aca6b28af11400000000000000000f31aca6b28af1140a4658a55fa46d73f02000000030000005c00000000000000'
	|| '0000000000000000000000000300000004000000626c756505000000677265656e03000000726564515e43790de5d53f'
	|| 'c0e93818e6dc0040515e43790de5d53fc0e93818e6dc00405e43790de535d43fbc46e198ea3501400200000002000000'
	|| '4500000000000000000000000000000000000000020000000500000066616c73650400000074727565790de53594d7e0'
	|| '3fd6397958af0500400de53594d750de3fd6397958af0500400100000057020000000200000007000000000000000300'
	|| '000000000000656f9b961f8422c072c1695f1a83bfbfaf01cac625c32240e86a22a69ce4e73f1cf7272f317bfc3f227d'
	|| '28ffbf3604c0fa44907873e0fbbfd3d0157e59c4d1bfe5f232dbc4280040f7c2aec542c7e73f596b86c809df01409743'
	|| '2ae2d9d007c0fb95fdbb3851f03fd5e22da439f2ffbfb2d7f5680242ef3ffa6cb0cbe6d3e33f47f1fff0a970d33fea74'
	|| '8f343a8cedbf9a96966ae7d3e3bf368b8b60ac70d3bfbbd1bd203a8ced3f010000006202000000010000000300000000'
	|| '0000004387ce732af4f8bfa3e74af4001c004009929d655c0fddbf00000000', 'hex')) AS soft_run \gset
SELECT fake_run('shop_y', 'ridge-1', 0.99,
	decode('454153454d4c413105000000726964676501000000020000000000000000000000000000000000000009000000707265'
	|| '702e6d65616e02000000010000000200000000000000000000000000000000000000000000000a000000707265702e73'
	|| '63616c6502000000010000000200000000000000000000000000f03f000000000000f03f0d000000707265702e656e63'
	|| '6f646572730400000001000000640000000000000002000000010000000100000024000000000000006c828aad9af3fe'
	|| '3f00000000000000006c828aad9af3fe3f2629e25769e2e23f01000000010000002400000000000000790de53594d710'
	|| '400000000000000000790de53594d710408f03ea03173cd73f0100000057020000000200000002000000000000000100'
	|| '0000000000002a769c5a98e913409ac82341ea31f5bf01000000620200000001000000010000000000000034926d5a0a'
	|| 'e00d4000000000', 'hex')) AS ridge_run \gset

SET ROLE regress_pred_a;
SELECT easeml._deployed_run(id) = :soft_run AS deployed FROM easeml.tasks WHERE name = 'shop';
-- rows of the source: text labels come back as text
SELECT s.x, s.colour, s.label, easeml.predict('shop', s) AS predicted,
	   (SELECT jsonb_object_agg(key, round(value::numeric, 3))
		  FROM jsonb_each_text(easeml.predict_proba('shop', s))) AS proba
  FROM public.shop s ORDER BY s.x LIMIT 6;
SELECT count(*) FILTER (WHERE easeml.predict('shop', s) = s.label) AS right, count(*) AS rows
  FROM public.shop s;
-- the probabilities sum to 1 and the label is the most probable class
SELECT bool_and(abs(p.total - 1) < 1e-9) AS sums_to_1,
	   bool_and(easeml.predict('shop', s) = p.top) AS label_is_argmax
  FROM public.shop s,
	   LATERAL (SELECT sum(value::float8) AS total,
					   (array_agg(key ORDER BY value::float8 DESC, key))[1] AS top
				  FROM jsonb_each_text(easeml.predict_proba('shop', s))) p;
-- any row with the feature columns by name: other order, other columns
SELECT easeml.predict('shop', r) AS label
  FROM (VALUES ('extra', true, 'red', 4, 0.1::float8)) AS r(note, member, colour, qty, x);
-- a category never seen in training, and missing values, are not errors
SELECT easeml.predict('shop', r) AS unseen_colour
  FROM (VALUES (4.1::float8, 2, 'ultraviolet', false)) AS r(x, qty, colour, member);
SELECT easeml.predict('shop', r) AS all_null
  FROM (VALUES (NULL::float8, NULL::int, NULL::text, NULL::bool)) AS r(x, qty, colour, member);
-- columns of other types that cast like the source's: numeric, varchar
SELECT easeml.predict('shop', r) AS cast_types
  FROM (VALUES (4.1::numeric, 2::int8, 'blue'::varchar, false)) AS r(x, qty, colour, member);
-- text[] in tasks.features order, as the source's columns read text
SELECT easeml.predict('shop', ARRAY['4.1', '2', 'blue', 'false']) AS from_text,
	   easeml.predict('shop', r) AS from_row
  FROM (VALUES (4.1::float8, 2, 'blue', false)) AS r(x, qty, colour, member);
SELECT easeml.predict('shop', ARRAY[NULL, NULL, 'green', NULL]::text[]) AS text_nulls;

-- regression: predict_value, and predict gives the value as text
SELECT s.x, s.qty, s.y, round(easeml.predict_value('shop_y', s)::numeric, 3) AS predicted
  FROM public.shop s ORDER BY s.x LIMIT 4;
SELECT round(easeml.predict_value('shop_y', ARRAY[1.0, 2]::float8[])::numeric, 6) AS from_float8,
	   round(easeml.predict_value('shop_y', ARRAY['1.0', '2'])::numeric, 6) AS from_text,
	   round(easeml.predict('shop_y', ARRAY[1.0, 2]::float8[])::float8::numeric, 6) AS as_text;
-- R^2 on the source's rows
SELECT round((1 - sum((y - easeml.predict_value('shop_y', s)) ^ 2) /
				  sum((y - (SELECT avg(y) FROM public.shop)) ^ 2))::numeric, 3) AS r2
  FROM public.shop s;

-- errors: each with its SQLSTATE and a hint
SELECT try($$SELECT easeml.predict('no_such_task', s) FROM public.shop s$$);
SELECT try($$SELECT easeml.predict('shop', r) FROM (VALUES (1.0::float8, 2, 'red')) r(x, qty, colour)$$);
SELECT try($$SELECT easeml.predict('shop', r) FROM (VALUES ('1.0', 2, 'red', true)) r(x, qty, colour, member)$$);
SELECT try($$SELECT easeml.predict('shop', r) FROM (VALUES (1.0::float8, true, 'red', true)) r(x, qty, colour, member)$$);
SELECT try($$SELECT easeml.predict('shop', r) FROM (VALUES (1.0::float8, 2, 'red', true, now())) r(x, qty, colour, member, x2)$$);
SELECT try($$SELECT easeml.predict('shop', 5)$$);
SELECT try($$SELECT easeml.predict('shop', ARRAY[1.0, 2, 3, 4]::float8[])$$);
SELECT try($$SELECT easeml.predict('shop', ARRAY['1', '2', 'red'])$$);
SELECT try($$SELECT easeml.predict('shop', ARRAY[['1', '2'], ['red', 'true']])$$);
SELECT try($$SELECT easeml.predict('shop_y', ARRAY['one', '2'])$$);
SELECT try($$SELECT easeml.predict_value('shop', s) FROM public.shop s$$);
SELECT try($$SELECT easeml.predict_proba('shop_y', s) FROM public.shop s$$);
-- non-finite features (issue 22): an infinite number is refused in every
-- function and input form, as the declaration refuses one; a finite value
-- that overflows the model's single precision is refused too; NaN stays a
-- missing value
SELECT try($$SELECT easeml.predict('shop_y', ARRAY['Infinity', 2]::float8[])$$);
SELECT try($$SELECT easeml.predict_value('shop_y', ARRAY[1, '-Infinity']::float8[])$$);
SELECT try($$SELECT easeml.predict_value('shop_y', ARRAY['inf', '2'])$$);
SELECT try($$SELECT easeml.predict_value('shop_y', r) FROM (VALUES ('Infinity'::float8, 2)) r(x, qty)$$);
SELECT try($$SELECT easeml.predict('shop', ARRAY['Infinity', '2', 'red', 'true'])$$);
SELECT try($$SELECT easeml.predict_proba('shop', ARRAY['-Infinity', '2', 'red', 'true'])$$);
SELECT try($$SELECT easeml.predict('shop', r) FROM (VALUES ('Infinity'::numeric, 2, 'red', true)) r(x, qty, colour, member)$$);
SELECT try($$SELECT easeml.predict_proba('shop', r) FROM (VALUES ('-Infinity'::float8, 2, 'red', true)) r(x, qty, colour, member)$$);
SELECT try($$SELECT easeml.predict_value('shop_y', ARRAY[1e308, 2]::float8[])$$);
SELECT try($$SELECT easeml.predict_proba('shop', ARRAY['-1e300', '2', 'red', 'true'])$$);
SELECT round(easeml.predict_value('shop_y', ARRAY['NaN', 2]::float8[])::numeric, 6) =
	   round(easeml.predict_value('shop_y', ARRAY[NULL, 2]::float8[])::numeric, 6) AS nan_is_missing,
	   easeml.predict('shop', ARRAY['NaN', '2', 'red', 'true']) =
	   easeml.predict('shop', ARRAY[NULL, '2', 'red', 'true']) AS nan_is_missing_too;
-- NULL in, NULL out
SELECT easeml.predict(NULL, s) IS NULL AS null_task FROM public.shop s LIMIT 1;

-- [inputs] a boolean feature given as text reads PostgreSQL's spellings of
-- a boolean (boolin's: any case, blanks around), in a text[] and in a text
-- column of a row; other text stays an unknown category
SELECT v, easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', v]) =
		  easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', 'true']) AS reads_true
  FROM unnest(ARRAY['t', 'TRUE', ' yes ', 'on', '1', 'Y', 'tru']) v;
SELECT v, easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', v]) =
		  easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', 'false']) AS reads_false
  FROM unnest(ARRAY['f', 'no', 'OFF', '0', E'\tfalse']) v;
SELECT easeml.predict_proba('shop', r) = easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', 'true'])
		AS text_column_reads_true
  FROM (VALUES (1.5::float8, 2, 'blue', 'Yes'::text)) r(x, qty, colour, member);
SELECT easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', 'maybe']) NOT IN
	   (easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', 'true']),
		easeml.predict_proba('shop', ARRAY['1.5', '2', 'blue', 'false'])) AS maybe_is_unknown;
-- strict => true: an unknown category is an error naming the feature and
-- the value (categories match exactly, case included); known values and
-- missing ones predict as without it, in every function and input form
SELECT try($$SELECT easeml.predict('shop', ARRAY['1.5', '2', 'Green', 'true'], strict => true)$$);
SELECT try($$SELECT easeml.predict_proba('shop', r, strict => true) FROM (VALUES (1.5::float8, 2, 'blue', 'maybe')) r(x, qty, colour, member)$$);
SELECT try($$SELECT easeml.predict('shop', r, true) FROM (VALUES (1.5::float8, 2, 'ultraviolet', true)) r(x, qty, colour, member)$$);
SELECT easeml.predict('shop', ARRAY['1.5', '2', 'green', ' ON '], strict => true) =
	   easeml.predict('shop', ARRAY['1.5', '2', 'green', 'true']) AS strict_known,
	   easeml.predict_proba('shop', ARRAY[NULL, '2', NULL, NULL], strict => true) =
	   easeml.predict_proba('shop', ARRAY[NULL, '2', NULL, NULL]) AS strict_missing,
	   easeml.predict_value('shop_y', ARRAY[1.0, 2]::float8[], strict => true) =
	   easeml.predict_value('shop_y', ARRAY[1.0, 2]::float8[]) AS strict_value;

-- [inputs] easeml.prediction_stats counts, per task and serving run, the
-- rows predicted, those with an unknown category and those with a missing
-- value filled in; a statement adds its counts when it ends, also in a
-- read-only transaction and when it fails (the rows predicted before the
-- error count)
SELECT coalesce(sum(predicted_rows), 0) AS r0, coalesce(sum(unknown_category_rows), 0) AS u0,
	   coalesce(sum(imputed_rows), 0) AS i0
  FROM easeml.prediction_stats WHERE task = 'shop' AND serving \gset
SELECT count(easeml.predict('shop', r)) AS predicted
  FROM (VALUES (1.5::float8, 2, 'blue', true), (1.5, 2, 'ultraviolet', true),
			   (NULL, 2, 'blue', NULL), (NULL, NULL, 'Blue', false), (2.5, 3, 'red', 'f'::bool))
	   r(x, qty, colour, member);
SELECT task, model, serving, predicted_rows - :r0 AS rows, unknown_category_rows - :u0 AS unknown,
	   imputed_rows - :i0 AS imputed, since <= last_at AS since_first
  FROM easeml.prediction_stats WHERE task = 'shop';
BEGIN READ ONLY;
SELECT easeml.predict('shop', ARRAY['1.5', '2', 'blue', 't']) IS NOT NULL AS read_only;
COMMIT;
SELECT try($$SELECT easeml.predict('shop', r, strict => true) FROM (VALUES (1, 1.5::float8, 2, 'blue', true), (2, 1.5, 2, 'mauve', true)) r(n, x, qty, colour, member) ORDER BY n$$);
SELECT predicted_rows - :r0 AS rows, unknown_category_rows - :u0 AS unknown, imputed_rows - :i0 AS imputed
  FROM easeml.prediction_stats WHERE task = 'shop' AND serving;
RESET ROLE;
-- another tenant sees no counts of a's tasks, in the view or the function
SET ROLE regress_pred_b;
SELECT count(*) AS others_stats FROM easeml.prediction_stats;
SELECT count(*) AS others_counts FROM easeml._prediction_counts();
RESET ROLE;
SET ROLE regress_pred_a;
RESET ROLE;

-- tenancy: another tenant's task reads as one that does not exist
SET ROLE regress_pred_b;
SELECT try($$SELECT easeml.predict('shop', s) FROM public.shop s$$);
SELECT try($$SELECT easeml.predict_value('shop_y', ARRAY[1.0, 2]::float8[])$$);
SELECT count(*) AS artifacts_seen FROM easeml.artifacts;
RESET ROLE;

-- a better run replaces the model in this backend's cache at once
SET ROLE regress_pred_a;
SELECT easeml.predict_proba('shop', ARRAY['4.1', '2', 'blue', 'false'])::text =
	   (SELECT easeml.predict_proba('shop', ARRAY['4.1', '2', 'blue', 'false']))::text AS stable;
CREATE TEMP TABLE before AS
SELECT easeml.predict_proba('shop', ARRAY['4.1', '2', 'blue', 'false']) AS p;
RESET ROLE;
SELECT fake_run('shop', 'gnb', 0.85,
	decode('454153454d4c413103000000676e6200000000070000000300000000000000000000000000000003000000616e740300'
	|| '00006265650300000063617409000000707265702e6d65616e0200000001000000070000000000000000000000000000'
	|| '000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000'
	|| '000a000000707265702e7363616c6502000000010000000700000000000000000000000000f03f000000000000f03f00'
	|| '0000000000f03f000000000000f03f000000000000f03f000000000000f03f000000000000f03f0d000000707265702e'
	|| '656e636f6465727304000000010000001d010000000000000400000001000000010000002400000000000000d7f68237'
	|| '9ba001400000000000000000d7f682379ba00140515efac783a8e43f01000000010000002400000000000000f31aca6b'
	|| '28af11400000000000000000f31aca6b28af1140a4658a55fa46d73f02000000030000005c0000000000000000000000'
	|| '00000000000000000300000004000000626c756505000000677265656e03000000726564515e43790de5d53fc0e93818'
	|| 'e6dc0040515e43790de5d53fc0e93818e6dc00405e43790de535d43fbc46e198ea350140020000000200000045000000'
	|| '00000000000000000000000000000000020000000500000066616c73650400000074727565790de53594d7e03fd63979'
	|| '58af0500400de53594d750de3fd6397958af050040050000007468657461020000000200000003000000000000000700'
	|| '0000000000000000001c64d3f2bf00000000d971bfbf000000e05513e7bfabaaaa4aceaad7bf5555559582d0f13f0000'
	|| '000019fcaabf0000000019fcaa3f27766227cae7ae3fecc44e7cc361df3f4fecc48e9065d9bf143bb173dafff03f0000'
	|| '00405ebde5bf2776622751d5c63f2776622751d5c6bf143bb1db6c69f03fc54eec541b20d8bf143bb173dafff03f0000'
	|| '00e05513e7bf622776e2114cd6bf62277662239bc0bf62277662239bc03f030000007661720200000002000000030000'
	|| '000000000007000000000000000386f2cb0067b63fb0a476fd79c8e43f2cc65df60b2e113ef960c3f33bbfe33ffcf1ca'
	|| '84de91e43f134f5db5600bf03f134f5db5600bf03f5e3afffbfbb4b83f813ce54ce149e43fb549490b2982e23fb54949'
	|| '0b2982e23f2cc65df60b2e113e22c66d894861ee3f22c66d894861ee3f8a2aaba6a75fda3faabc63a379b0f43fb64949'
	|| '0b2982e23f2cc65df60b2e113eecc7317c9547e33fd13079c325e6ef3fd13079c325e6ef3f050000007072696f720200'
	|| '00000100000003000000000000005e43790de535d43f515e43790de5d53f515e43790de5d53f00000000', 'hex')) AS gnb_run \gset
SET ROLE regress_pred_a;
SELECT easeml._deployed_run(id) = :gnb_run AS deployed FROM easeml.tasks WHERE name = 'shop';
SELECT easeml.predict_proba('shop', ARRAY['4.1', '2', 'blue', 'false']) <> p AS model_changed FROM before;
RESET ROLE;

-- a malformed artifact, and a custom trainer's opaque one, are clear errors;
-- a backend that parsed the model before keeps predicting with its copy
UPDATE easeml.artifacts SET data = decode('454153454d4c4131ffffffff', 'hex') WHERE run_id = :gnb_run;
SET ROLE regress_pred_a;
SELECT try($$SELECT easeml.predict('shop', ARRAY['4.1', '2', 'blue', 'false'])$$) AS cached;
\c -
SET ROLE regress_pred_a;
SELECT regexp_replace(try($$SELECT easeml.predict('shop', ARRAY['4.1', '2', 'blue', 'false'])$$),
					  'run \d+', 'run N') AS fresh_backend;
RESET ROLE;
UPDATE easeml.artifacts SET data = decode('454153454d4c41310800000065787465726e616c01000000020000000000000000000000000000000000000004000000626c6f620400000001000000030000000000000061626300000000', 'hex') WHERE run_id = :ridge_run;
SET ROLE regress_pred_a;
SELECT regexp_replace(try($$SELECT easeml.predict_value('shop_y', ARRAY[1.0, 2]::float8[])$$),
					  'run \d+', 'run N') AS custom_trainer;
RESET ROLE;

DELETE FROM easeml.tasks WHERE name IN ('shop', 'shop_y');
DROP TABLE public.shop;
DROP FUNCTION public.fake_run(text, text, float8, bytea);
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_pred\_%';
DROP OWNED BY regress_pred_a, regress_pred_b;
DROP ROLE regress_pred_a, regress_pred_b;
