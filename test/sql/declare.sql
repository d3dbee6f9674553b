-- Declaring tasks: one INSERT, validated; every failure is an error with an
-- SQLSTATE and a message that says what to fix.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_lab_a LOGIN;
CREATE ROLE regress_lab_b LOGIN;
CREATE ROLE regress_outsider LOGIN;


-- registering tenants
SELECT try($$SELECT easeml.add_tenant('regress_no_such_role')$$);
SELECT try($$SELECT easeml.add_tenant('regress_lab_a', 0)$$);
SELECT easeml.add_tenant('regress_lab_a');
SELECT easeml.add_tenant('regress_lab_b', 2);
SELECT name, max_parallel FROM easeml.tenants ORDER BY name;

-- data: 3 classes, 30 rows, numeric and non-numeric columns
CREATE TABLE public.points (x1 float8, x2 int, x3 numeric, note text, flag bool, label text, y float8,
							meta jsonb);
INSERT INTO public.points
SELECT i * 0.5, i % 7, i % 3 + 0.25, 'row ' || i, i % 2 = 0,
	   (ARRAY['a', 'b', 'c'])[i % 3 + 1], i * 1.5, '{}'
  FROM generate_series(1, 30) i;
CREATE TABLE public.tiny (x float8, label text);
INSERT INTO public.tiny VALUES (1, 'a'), (2, 'b'), (3, 'a'), (4, 'b');
CREATE TABLE public.one_class (x float8, label text);
INSERT INTO public.one_class SELECT i, 'same' FROM generate_series(1, 40) i;
CREATE TABLE public.words (w text, label text);
INSERT INTO public.words SELECT 'w' || i, (i % 2)::text FROM generate_series(1, 40) i;
CREATE SEQUENCE public.a_sequence;
GRANT SELECT ON public.points, public.tiny, public.one_class, public.words TO regress_lab_a;
GRANT SELECT ON public.a_sequence TO regress_lab_a;

SET ROLE regress_lab_a;
-- not registered as a tenant
SET ROLE regress_outsider;
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.points', 'label')$$);
SET ROLE regress_lab_a;
-- for somebody else
SELECT try($$INSERT INTO easeml.tasks (tenant, name, source, target) VALUES ('regress_lab_b', 't', 'public.points', 'label')$$);
-- the source
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.no_such_table', 'label')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.a_sequence', 'label')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 123456789, 'label')$$);
-- the target
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.points', 'lable')$$);
-- features
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{x1,x9}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{x1,meta}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{x1,label}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{x1,x1}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{x1,NULL}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.words', 'label')$$);
-- the data
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.one_class', 'label')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.tiny', 'label')$$);
-- kind, split, name, image shape
SELECT try($$INSERT INTO easeml.tasks (name, source, target, kind) VALUES ('t', 'public.points', 'label', 'clustering')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, kind) VALUES ('t', 'public.points', 'note', 'regression')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, val_fraction) VALUES ('t', 'public.points', 'label', 0.9)$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('bad name!', 'public.points', 'label')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, input_shape) VALUES ('t', 'public.points', 'label', '{3,3}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, input_shape) VALUES ('t', 'public.points', 'label', '{1,0,3}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, input_shape) VALUES ('t', 'public.points', 'label', '{1,2,3,4}')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, input_shape) VALUES ('t', 'public.points', 'label', '{{2,2}}')$$);
-- permission to read the source
RESET ROLE;
REVOKE SELECT ON public.points FROM regress_lab_a;
GRANT SELECT (x1, label) ON public.points TO regress_lab_a;
SET ROLE regress_lab_a;
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'public.points', 'label')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('t', 'public.points', 'label', '{x1,x2}')$$);
-- column privileges that cover what is read are enough
SELECT try($$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('cols', 'public.points', 'label', '{x1}')$$);
RESET ROLE;
GRANT SELECT ON public.points TO regress_lab_a;
SET ROLE regress_lab_a;

-- success: features default to every column but the target whose type
-- easeml encodes and that is not a key (docs/data.md)
INSERT INTO easeml.tasks (tenant, name, source, target)
VALUES ('regress_lab_a', 'points', 'public.points', 'label')
RETURNING tenant, name, source, target, features, kind, status, n_rows, n_classes;
-- tenant defaults to the current role; regression on a numeric target
INSERT INTO easeml.tasks (name, source, target, kind, features)
VALUES ('points_y', 'public.points', 'y', 'regression', '{x1,x2}')
RETURNING tenant, name, features, kind, n_rows, n_classes;
-- an image task states its shape
INSERT INTO easeml.tasks (name, source, target, features, input_shape)
VALUES ('image', 'public.points', 'label', '{x1,x2,x3}', '{1,1,3}')
RETURNING name, input_shape;
-- the same name twice
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('points', 'public.points', 'label')$$);

-- after declaration: status and max_runs can change, the declaration cannot
UPDATE easeml.tasks SET status = 'paused', max_runs = 5 WHERE name = 'points'
RETURNING name, status, max_runs;
UPDATE easeml.tasks SET status = 'active' WHERE name = 'points' RETURNING status;
SELECT try($$UPDATE easeml.tasks SET status = 'completed' WHERE name = 'points'$$);
SELECT try($$UPDATE easeml.tasks SET target = 'y' WHERE name = 'points'$$);
SELECT try($$UPDATE easeml.tasks SET max_runs = 0 WHERE name = 'points'$$);
RESET ROLE;
SELECT try($$UPDATE easeml.tasks SET target = 'y' WHERE name = 'points'$$);

-- what was declared
SELECT tenant, name, status, n_rows, cardinality(features) AS n_features
  FROM easeml.tasks ORDER BY id;

-- clean up
RESET ROLE;
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_%';
DROP TABLE public.points, public.tiny, public.one_class, public.words;
DROP SEQUENCE public.a_sequence;
DROP ROLE regress_lab_a, regress_lab_b, regress_outsider;
