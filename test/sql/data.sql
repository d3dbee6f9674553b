-- Data (docs/data.md): column types, keys left out, useless columns left
-- out, data checks, the metric and cross-validation options, snapshots
-- and refresh.  Self-contained: its own roles, tables and helper.
CREATE ROLE regress_data_a LOGIN;
CREATE ROLE regress_data_b LOGIN;
SELECT easeml.add_tenant('regress_data_a');
SELECT easeml.add_tenant('regress_data_b');

-- data_try(sql): run a statement, show its SQLSTATE, message, detail and
-- hint (snapshot table names without their task id, which depends on
-- the tests run before)
CREATE FUNCTION public.data_try(sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	detail text;
	hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN regexp_replace(SQLSTATE || ': ' || SQLERRM
		|| CASE WHEN detail <> '' THEN E'\nDETAIL: ' || detail ELSE '' END
		|| CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END, 'task_\d+_v', 'task_N_v', 'g');
END;
$$;

-- every kind of column: keys, numbers with NULL and NaN, text, varchar,
-- boolean, enum, date, timestamp, and columns that cannot help
CREATE TYPE public.data_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN public.data_price AS numeric CHECK (VALUE >= 0);
CREATE TABLE public.data_shop (
	id serial PRIMARY KEY,
	code int UNIQUE,
	ident int GENERATED ALWAYS AS IDENTITY,
	x float8,
	qty int,
	price public.data_price,
	colour text,
	city varchar(20),
	member bool,
	mood public.data_mood,
	day date,
	at timestamptz,
	empty float8,
	same text,
	rowno int,
	ticket text,
	uid uuid,
	label text
);
INSERT INTO public.data_shop (code, x, qty, price, colour, city, member, mood, day, at, empty,
							  same, rowno, ticket, uid, label)
SELECT 1000 + i,
	   CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 5 THEN 'NaN' ELSE i * 0.25 END,
	   i % 4, (i % 9) * 1.5,
	   (ARRAY['red', 'green', 'blue'])[i % 3 + 1],
	   (ARRAY['Bern', 'Basel', 'Zurich', 'Geneva'])[i % 4 + 1],
	   i % 2 = 0, (ARRAY['sad', 'ok', 'happy'])[i % 3 + 1]::public.data_mood,
	   date '2024-01-01' + i, timestamptz '2024-01-01 00:00+00' + i * interval '7 hours',
	   NULL, 'same', i, 'T-' || i, md5(i::text)::uuid,
	   CASE WHEN i % 7 = 0 THEN NULL ELSE (ARRAY['buy', 'skip'])[i % 2 + 1] END
  FROM generate_series(1, 60) i;
GRANT SELECT ON public.data_shop TO regress_data_a;

SET ROLE regress_data_a;
-- default features: keys, unsupported types, all-NULL and constant columns
-- and identifiers are left out, and the NOTICE says why; rowno, distinct
-- consecutive integers without a key declaration, is a feature
INSERT INTO easeml.tasks (name, source, target) VALUES ('shop', 'public.data_shop', 'label');
SELECT features, feature_types, n_rows, n_classes, metric, snapshot, snapshot_version, impute,
	   missing_indicator, folds
  FROM easeml.tasks WHERE name = 'shop';
SELECT key, value FROM easeml.tasks, jsonb_each_text(left_out) WHERE name = 'shop' ORDER BY key;
-- listed features are taken as listed (a key too), but all-NULL and
-- constant ones are still left out
INSERT INTO easeml.tasks (name, source, target, features)
VALUES ('shop_listed', 'public.data_shop', 'label', '{id,empty,same,colour,day}');
SELECT features, feature_types FROM easeml.tasks WHERE name = 'shop_listed';
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_shop', 'label', '{empty,same}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_shop', 'label', '{x,uid}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_shop', 'label', '{x,nope}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features, input_shape) VALUES ('t', 'public.data_shop', 'label', '{x,colour}', '{1,2}')$$);
-- regression on a numeric target; its rows with a NaN target do not count
INSERT INTO easeml.tasks (name, source, target, kind, features)
VALUES ('shop_x', 'public.data_shop', 'x', 'regression', '{qty,colour}');
SELECT n_rows, n_classes, metric FROM easeml.tasks WHERE name = 'shop_x';

-- options: the metric, folds, the missing-value strategy
INSERT INTO easeml.tasks (name, source, target, metric, folds, impute, missing_indicator, snapshot)
VALUES ('shop_opts', 'public.data_shop', 'label', 'log_loss', 5, 'median', false, false);
SELECT metric, folds, impute, missing_indicator, snapshot, snapshot_version
  FROM easeml.tasks WHERE name = 'shop_opts';
-- a 5-fold task is estimated to cost more than the same task with one split
-- for every model, and at most 5 times as much (the work grows with the
-- folds, the start of a run, most of it on this small table, does not)
SELECT count(*) > 0 AS models, bool_and(o.seconds > s.seconds) AS more,
	   bool_and(o.seconds <= 5 * s.seconds) AS at_most_5x
  FROM easeml.cost_estimates o JOIN easeml.tasks ot ON ot.id = o.task_id
  JOIN easeml.cost_estimates s ON s.model_id = o.model_id JOIN easeml.tasks st ON st.id = s.task_id
 WHERE ot.name = 'shop_opts' AND st.name = 'shop';
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, metric) VALUES ('t', 'public.data_shop', 'label', 'rmse')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, kind, metric) VALUES ('t', 'public.data_shop', 'x', 'regression', 'roc_auc')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, metric) VALUES ('t', 'public.data_shop', 'label', 'f1')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, folds) VALUES ('t', 'public.data_shop', 'label', 1)$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, folds) VALUES ('t', 'public.data_shop', 'label', 11)$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, impute) VALUES ('t', 'public.data_shop', 'label', 'zero')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, impute) VALUES ('t', 'public.data_shop', 'label', NULL)$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, missing_indicator) VALUES ('t', 'public.data_shop', 'label', NULL)$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, snapshot) VALUES ('t', 'public.data_shop', 'label', NULL)$$);
-- the declaration cannot change afterwards
SELECT data_try($$UPDATE easeml.tasks SET metric = 'accuracy' WHERE name = 'shop_opts'$$);
SELECT data_try($$UPDATE easeml.tasks SET snapshot_version = 7 WHERE name = 'shop'$$);
RESET ROLE;

-- bad data: NaN labels, an all-NULL or all-NaN target, infinite values,
-- too few rows for the folds
CREATE TABLE public.data_bad (x float8, y float8, z float8, label text, flabel float8, big float8);
INSERT INTO public.data_bad
SELECT i, CASE WHEN i % 2 = 0 THEN 'NaN' ELSE i::float8 END, NULL, (i % 2)::text,
	   CASE WHEN i = 3 THEN 'NaN' ELSE (i % 2)::float8 END,
	   CASE WHEN i = 4 THEN 'Infinity' ELSE i::float8 END
  FROM generate_series(1, 20) i;
CREATE TABLE public.data_nan (x float8, y float8);
INSERT INTO public.data_nan SELECT i, 'NaN' FROM generate_series(1, 20) i;
CREATE TABLE public.data_nanlabel (x float8, label text);
INSERT INTO public.data_nanlabel SELECT i, CASE WHEN i < 5 THEN 'nan' ELSE (i % 2)::text END
  FROM generate_series(1, 20) i;
GRANT SELECT ON public.data_bad, public.data_nan, public.data_nanlabel TO regress_data_a;
SET ROLE regress_data_a;
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_bad', 'flabel', '{x}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_nanlabel', 'label', '{x}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_bad', 'z', '{x}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, kind, features) VALUES ('t', 'public.data_nan', 'y', 'regression', '{x}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, kind, features) VALUES ('t', 'public.data_bad', 'big', 'regression', '{x}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_bad', 'label', '{x,big}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.data_bad', 'label', '{z}')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, kind, features, folds) VALUES ('t', 'public.data_bad', 'y', 'regression', '{x}', 6)$$);
-- a regression target with NaN in half its rows: those rows are left out
INSERT INTO easeml.tasks (name, source, target, kind, features, folds)
VALUES ('bad_y', 'public.data_bad', 'y', 'regression', '{x}', 5);
SELECT n_rows FROM easeml.tasks WHERE name = 'bad_y';
RESET ROLE;

-- snapshots: a copy owned by easeml, readable by its tenant only
SELECT t.name, pg_get_userbyid(relowner) = current_user AS owned_by_admin,
	   has_table_privilege('regress_data_a', c.oid, 'SELECT') AS tenant_reads,
	   has_table_privilege('regress_data_a', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') AS tenant_writes,
	   has_table_privilege('regress_data_b', c.oid, 'SELECT') AS other_reads
  FROM pg_class c JOIN easeml.tasks t ON c.relname = easeml._snapshot_name(t.id, 1)
 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND t.tenant = 'regress_data_a'
 ORDER BY t.id;
SELECT t.name, count(*) FILTER (WHERE c.relname IS NOT NULL) AS tables
  FROM easeml.tasks t
  LEFT JOIN pg_class c ON c.relnamespace = 'easeml_snapshots'::regnamespace
						 AND c.relname LIKE format('task\_%s\_v%%', t.id)
 WHERE t.tenant = 'regress_data_a' GROUP BY t.id, t.name ORDER BY t.id;
-- the snapshot holds the chosen columns of the rows with a target
SELECT format('SELECT count(*) AS snapshot_rows FROM easeml_snapshots.%I',
			  easeml._snapshot_name(id, 1)) AS q
  FROM easeml.tasks WHERE name = 'shop' \gset
:q;
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) AS snapshot_columns
  FROM pg_attribute a JOIN easeml.tasks t ON a.attrelid = to_regclass('easeml_snapshots.' || easeml._snapshot_name(t.id, 1))
 WHERE t.name = 'shop' AND a.attnum > 0;
-- the trainer reads the snapshot; each kind has its own wire form
INSERT INTO easeml.runs (task_id, model_id, status)
SELECT t.id, m.id, 'queued' FROM easeml.tasks t, easeml.models m
 WHERE t.name IN ('shop', 'shop_opts') AND m.name = 'knn-5';
SELECT t.name, r.snapshot_version,
	   regexp_replace(s ->> 'copy_query', 'task_\d+_', 'task_N_') AS copy_query, s ->> 'metric' AS metric,
	   s ->> 'folds' AS folds, s ->> 'impute' AS impute, s ->> 'missing_indicator' AS indicator
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id, easeml_trainer.spec(r.id) s
 WHERE t.name IN ('shop', 'shop_opts') ORDER BY t.id;
-- another tenant reads none of it, the tenant cannot change it
SELECT format('SELECT data_try(%L)', format('SELECT count(*) FROM easeml_snapshots.%I',
											easeml._snapshot_name(id, 1))) AS q
  FROM easeml.tasks WHERE name = 'shop' \gset
SET ROLE regress_data_b;
:q;
SELECT data_try($$SELECT easeml.refresh('shop')$$);
SET ROLE regress_data_a;
SELECT format('SELECT data_try(%L)', format('DELETE FROM easeml_snapshots.%I',
											easeml._snapshot_name(id, 1))) AS q
  FROM easeml.tasks WHERE name = 'shop' \gset
:q;
SELECT data_try($$SELECT easeml.refresh('no_such_task')$$);
RESET ROLE;

-- refresh: new rows become version 2, runs in flight follow or stop, the
-- leaderboard marks results of version 1 stale
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 1, 0.75, '{"score": 0.75, "accuracy": 0.75}'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'shop' AND m.name = 'gnb';
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'shop' AND m.name = 'ridge-1';
INSERT INTO public.data_shop (code, x, colour, label)
SELECT 2000 + i, i, 'red', 'buy' FROM generate_series(1, 10) i;
SET ROLE regress_data_a;
SELECT easeml.refresh('shop') AS version;
SELECT snapshot_version, n_rows, status FROM easeml.tasks WHERE name = 'shop';
SELECT m.name, r.status, r.snapshot_version, r.cancel_requested
  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id JOIN easeml.tasks t ON t.id = r.task_id
 WHERE t.name = 'shop' ORDER BY r.id;
SELECT task, rank, model, score, metric, metric_value, snapshot_version, stale
  FROM easeml.leaderboard WHERE task = 'shop';
SELECT task, best_score, metric, folds, snapshot_version FROM easeml.task_overview
 WHERE task IN ('shop', 'shop_opts') ORDER BY task;
RESET ROLE;
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 1, 0.5, '{"score": 0.5, "accuracy": 0.5}'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'shop' AND m.name = 'gnb-smooth';
SET ROLE regress_data_a;
SELECT task, rank, model, score, snapshot_version, stale
  FROM easeml.leaderboard WHERE task = 'shop' ORDER BY rank;
SELECT c.relname = easeml._snapshot_name(t.id, 2) AS only_version_2
  FROM pg_class c JOIN easeml.tasks t ON c.relname LIKE format('task\_%s\_v%%', t.id)
 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND t.name = 'shop';
-- a task without a snapshot: refresh only counts the rows again
SELECT easeml.refresh('shop_opts') AS version;
SELECT n_rows, snapshot_version FROM easeml.tasks WHERE name = 'shop_opts';
RESET ROLE;
-- a refresh that finds bad data fails and keeps the current version
UPDATE public.data_shop SET label = 'buy';
SET ROLE regress_data_a;
SELECT data_try($$SELECT easeml.refresh('shop')$$);
SELECT snapshot_version FROM easeml.tasks WHERE name = 'shop';
-- snapshots go with their task
SELECT easeml.drop_task('shop') > 0 AS dropped;
RESET ROLE;
SELECT count(*) AS snapshot_tables_left FROM pg_class c
 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace
   AND NOT EXISTS (SELECT 1 FROM easeml.tasks t
					WHERE c.relname = easeml._snapshot_name(t.id, t.snapshot_version));

-- [retype] a column whose type changed since the task took its features:
-- refresh refuses (42804), and nothing changes (the version, its snapshot
-- and the recorded kinds stay); alter_task with the same features takes
-- the kinds as they are now, in a new version; a regression target that
-- is no longer numeric is refused too
CREATE TABLE public.data_retype (x1 float8, x2 int, y float8, label text);
INSERT INTO public.data_retype
SELECT i * 0.5, i % 5, i * 2.0, (ARRAY['a', 'b'])[i % 2 + 1] FROM generate_series(1, 40) i;
GRANT SELECT ON public.data_retype TO regress_data_a;
SET ROLE regress_data_a;
INSERT INTO easeml.tasks (name, source, target, features)
VALUES ('retype', 'public.data_retype', 'label', '{x1,x2}');
INSERT INTO easeml.tasks (name, source, target, kind, features)
VALUES ('retype_y', 'public.data_retype', 'y', 'regression', '{x2}');
RESET ROLE;
ALTER TABLE public.data_retype ALTER COLUMN x1 TYPE text;
UPDATE public.data_retype SET x1 = (ARRAY['low', 'mid', 'high'])[x2 % 3 + 1];
SET ROLE regress_data_a;
SELECT data_try($$SELECT easeml.refresh('retype')$$);
SELECT t.snapshot_version, t.feature_types,
	   to_regclass('easeml_snapshots.' || easeml._snapshot_name(t.id, 1)) IS NOT NULL AS v1_kept
  FROM easeml.tasks t WHERE t.name = 'retype';
SELECT snapshot_version, feature_types FROM easeml.alter_task('retype', features => '{x1,x2}');
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum) AS snapshot_columns
  FROM pg_attribute a JOIN easeml.tasks t ON a.attrelid = to_regclass('easeml_snapshots.' || easeml._snapshot_name(t.id, 2))
 WHERE t.name = 'retype' AND a.attnum > 0;
SELECT easeml.refresh('retype') AS version;
RESET ROLE;
ALTER TABLE public.data_retype ALTER COLUMN y TYPE text;
SET ROLE regress_data_a;
SELECT data_try($$SELECT easeml.refresh('retype_y')$$);
SELECT snapshot_version FROM easeml.tasks WHERE name = 'retype_y';
SELECT easeml.drop_task('retype') > 0 AS dropped, easeml.drop_task('retype_y') > 0 AS dropped_y;
RESET ROLE;
DROP TABLE public.data_retype;

-- the declaration and refresh read the source as the tenant, in a
-- security-restricted operation: a view's function cannot change role,
-- even when a superuser declares after SET ROLE
CREATE TABLE public.data_secret (x float8, label text);
INSERT INTO public.data_secret SELECT i, (i % 2)::text FROM generate_series(1, 30) i;
CREATE FUNCTION public.data_sneaky(x float8) RETURNS float8
LANGUAGE plpgsql AS $$
BEGIN
	IF current_user <> session_user THEN
		RESET ROLE;
	END IF;
	RETURN x;
END;
$$;
CREATE VIEW public.data_sneaky_view AS SELECT public.data_sneaky(x) AS x, label FROM public.data_secret;
ALTER VIEW public.data_sneaky_view OWNER TO regress_data_a;
ALTER TABLE public.data_secret OWNER TO regress_data_a;
SET ROLE regress_data_a;
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('sneaky', 'public.data_sneaky_view', 'label')$$);
SELECT data_try($$INSERT INTO easeml.tasks (name, source, target, snapshot) VALUES ('sneaky', 'public.data_sneaky_view', 'label', false)$$);
RESET ROLE;
SELECT count(*) AS sneaky_tasks FROM easeml.tasks WHERE name = 'sneaky';

-- the snapshot trigger functions act as a superuser on the task a row
-- names: a tenant cannot attach them to a table of its own, and they
-- refuse to run on any table but easeml.tasks
CREATE TABLE public.data_fake (id bigint, tenant name);
ALTER TABLE public.data_fake OWNER TO regress_data_a;
SET ROLE regress_data_a;
SELECT data_try($$CREATE TRIGGER t AFTER INSERT ON public.data_fake FOR EACH ROW EXECUTE FUNCTION easeml._take_snapshot()$$);
SELECT data_try($$CREATE TRIGGER t AFTER DELETE ON public.data_fake FOR EACH ROW EXECUTE FUNCTION easeml._drop_snapshots()$$);
RESET ROLE;
CREATE TRIGGER t1 AFTER INSERT ON public.data_fake FOR EACH ROW EXECUTE FUNCTION easeml._take_snapshot();
CREATE TRIGGER t2 AFTER DELETE ON public.data_fake FOR EACH ROW EXECUTE FUNCTION easeml._drop_snapshots();
SELECT data_try($$INSERT INTO public.data_fake VALUES (1, current_user)$$);
ALTER TABLE public.data_fake DISABLE TRIGGER t1;
INSERT INTO public.data_fake VALUES (1, current_user);
SELECT data_try($$DELETE FROM public.data_fake$$);
DROP TABLE public.data_fake;

-- a wide source: the NOTICE names the first 40 features and counts the rest
DO $$BEGIN
	EXECUTE (SELECT format('CREATE TABLE public.data_wide AS SELECT %s, (g %% 2)::text AS label FROM generate_series(1, 40) g',
						   string_agg(format('((g + %s) %% 5)::float8 AS w%s', i, i), ', ' ORDER BY i))
			   FROM generate_series(1, 45) i);
END$$;
GRANT SELECT ON public.data_wide TO regress_data_a;
SET ROLE regress_data_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('data_wide', 'public.data_wide', 'label');
SELECT cardinality(features) AS features FROM easeml.tasks WHERE name = 'data_wide';
RESET ROLE;

-- [keys] a default feature is left out as a key by declaration only, never
-- by its values: a year (40 distinct consecutive integers) is a feature
-- (it predicts the era); a primary key (a serial one), a nextval()
-- default, an identity column and a unique index on one integer or uuid
-- column are left out, and the NOTICE names the rule; a column of a
-- two-column key, one with a partial unique index, a unique text column
-- (left out as an identifier by its values, not as a key) and plain
-- distinct consecutive integers are not keys
CREATE TABLE public.data_years AS
SELECT 1980 + g AS year, g * 37 % 100 AS rainfall,
	   CASE WHEN g % 3 = 0 THEN 'wet' ELSE 'dry' END AS season,
	   CASE WHEN g > 20 THEN 'late' ELSE 'early' END AS era
  FROM generate_series(1, 40) g;
CREATE TABLE public.data_keys (
	id serial PRIMARY KEY,
	seq serial,
	ident int GENERATED BY DEFAULT AS IDENTITY,
	code int,
	uid uuid UNIQUE,
	pair_a int,
	pair_b int,
	name text UNIQUE,
	ord int,
	x float8,
	label text,
	UNIQUE (pair_a, pair_b)
);
CREATE UNIQUE INDEX data_keys_code_idx ON public.data_keys (code);
CREATE UNIQUE INDEX data_keys_ord_partial ON public.data_keys (ord) WHERE ord > 10;
INSERT INTO public.data_keys (code, uid, pair_a, pair_b, name, ord, x, label)
SELECT 500 + g, md5(g::text)::uuid, g % 5, g, 'n' || g, g, g * 0.5, (ARRAY['a', 'b'])[g % 2 + 1]
  FROM generate_series(1, 30) g;
-- views declare no keys: a simple view's columns are looked up in its
-- table (through a view of a view too), others keep every column
CREATE VIEW public.data_keys_view AS
SELECT id AS key, code, ord, x, label FROM public.data_keys WHERE x >= 0;
CREATE VIEW public.data_keys_view2 AS SELECT * FROM public.data_keys_view;
CREATE VIEW public.data_keys_numbered AS
SELECT row_number() OVER (ORDER BY id) AS n, id, x, label FROM public.data_keys;
GRANT SELECT ON public.data_years, public.data_keys, public.data_keys_view, public.data_keys_view2,
	public.data_keys_numbered TO regress_data_a;
SET ROLE regress_data_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('years', 'public.data_years', 'era');
SELECT features FROM easeml.tasks WHERE name = 'years';
INSERT INTO easeml.tasks (name, source, target) VALUES ('keys', 'public.data_keys', 'label');
SELECT features FROM easeml.tasks WHERE name = 'keys';
SELECT key, value FROM easeml.tasks, jsonb_each_text(left_out) WHERE name = 'keys' ORDER BY key;
INSERT INTO easeml.tasks (name, source, target) VALUES ('keys_view', 'public.data_keys_view2', 'label');
INSERT INTO easeml.tasks (name, source, target) VALUES ('keys_numbered', 'public.data_keys_numbered', 'label');
-- a listed key is the tenant's choice
INSERT INTO easeml.tasks (name, source, target, features) VALUES ('keys_listed', 'public.data_keys', 'label', '{id,ord}');
RESET ROLE;

-- a char(n) or bit(n) target keeps its whole value in the snapshot: the
-- copy's column has the type without its length (bpchar, "bit"), not
-- char(1) or bit(1), which cut every label to its first character or bit
-- (cat and camel were one class, 100 and 101 too: 2 classes, not 3)
CREATE TABLE public.data_chars (x float8, label char(5), flags bit(3));
INSERT INTO public.data_chars
SELECT i, (ARRAY['cat', 'camel', 'dog'])[i % 3 + 1], (ARRAY[B'100', B'101', B'010'])[i % 3 + 1]
  FROM generate_series(1, 30) i;
GRANT SELECT ON public.data_chars TO regress_data_a;
SET ROLE regress_data_a;
INSERT INTO easeml.tasks (name, source, target, features) VALUES
	('chars', 'public.data_chars', 'label', '{x}'),
	('bits', 'public.data_chars', 'flags', '{x}');
SELECT name, n_rows, n_classes FROM easeml.tasks WHERE name IN ('chars', 'bits') ORDER BY name;
SELECT t.name, a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM easeml.tasks t
  JOIN pg_attribute a ON a.attrelid = to_regclass('easeml_snapshots.' || easeml._snapshot_name(t.id, t.snapshot_version))
 WHERE t.name IN ('chars', 'bits') AND a.attnum > 0
 ORDER BY t.name, a.attnum;
-- the labels as the snapshot holds them (a char(5) label with its padding)
SELECT string_agg(format('SELECT %L AS task, string_agg(DISTINCT format(''%%s|'', %I), '' '') AS labels FROM easeml_snapshots.%I',
						 name, target, easeml._snapshot_name(id, snapshot_version)),
				  ' UNION ALL ' ORDER BY name) AS q
  FROM easeml.tasks WHERE name IN ('chars', 'bits') \gset
:q;
RESET ROLE;

-- leave nothing behind for the other tests
SET ROLE regress_data_a;
SELECT count(*) AS dropped FROM easeml.tasks t, easeml.drop_task(t.name) WHERE t.tenant = current_user;
RESET ROLE;
SELECT count(*) AS orphan_snapshot_tables FROM pg_class c
 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace
   AND NOT EXISTS (SELECT 1 FROM easeml.tasks t
					WHERE c.relname = easeml._snapshot_name(t.id, t.snapshot_version));
DELETE FROM easeml.tenants WHERE name IN ('regress_data_a', 'regress_data_b');
DROP VIEW public.data_sneaky_view;
DROP VIEW public.data_keys_view2, public.data_keys_view, public.data_keys_numbered;
DROP TABLE public.data_chars, public.data_years, public.data_keys, public.data_wide, public.data_shop, public.data_bad, public.data_nan, public.data_nanlabel, public.data_secret;
DROP FUNCTION public.data_sneaky(float8), public.data_try(text);
DROP TYPE public.data_mood;
DROP DOMAIN public.data_price;
DROP ROLE regress_data_a, regress_data_b;

-- profiling and snapshotting a wide source never JIT-compiles (a 785-column
-- declaration spent over 15 minutes in LLVM with jit = on)
SELECT p.proname, 'jit=off' = ANY (p.proconfig) AS jit_off
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'easeml' AND p.proname IN ('_profile', '_take_snapshot', 'refresh')
 ORDER BY 1;
