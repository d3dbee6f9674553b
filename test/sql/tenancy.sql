-- Tenants see and touch only their own tasks, runs and decisions.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_lab_a LOGIN;
CREATE ROLE regress_lab_b LOGIN;
SELECT easeml.add_tenant('regress_lab_a');
SELECT easeml.add_tenant('regress_lab_b', 2);
-- data: 3 classes, 30 rows, numeric and non-numeric columns
CREATE TABLE public.points (x1 float8, x2 int, x3 numeric, note text, flag bool, label text, y float8);
INSERT INTO public.points
SELECT i * 0.5, i % 7, i % 3 + 0.25, 'row ' || i, i % 2 = 0,
	   (ARRAY['a', 'b', 'c'])[i % 3 + 1], i * 1.5
  FROM generate_series(1, 30) i;
GRANT SELECT ON public.points TO regress_lab_a;
SET ROLE regress_lab_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('points', 'public.points', 'label');
INSERT INTO easeml.tasks (name, source, target, kind, features)
VALUES ('points_y', 'public.points', 'y', 'regression', '{x1,x2}');
RESET ROLE;

GRANT SELECT ON public.points TO regress_lab_b;
SET ROLE regress_lab_b;
INSERT INTO easeml.tasks (name, source, target) VALUES ('b_points', 'public.points', 'label')
RETURNING id AS b_task \gset
SELECT tenant, name FROM easeml.tasks ORDER BY name;
-- another tenant's task is invisible: not updatable, not droppable
UPDATE easeml.tasks SET status = 'paused' WHERE name = 'points' RETURNING name;
SELECT try($$SELECT easeml.drop_task('points')$$);
-- tables the scheduler writes cannot be deleted from or locked by tenants
SELECT try($$DELETE FROM easeml.tasks WHERE name = 'b_points'$$);
SELECT try($$LOCK TABLE easeml.tasks IN ACCESS EXCLUSIVE MODE$$);
SELECT try($$LOCK TABLE easeml.runs IN ROW EXCLUSIVE MODE$$);
-- ids are the system's
SELECT try($$INSERT INTO easeml.tasks (id, name, source, target) VALUES (1000000, 'x', 'public.points', 'label')$$);
SELECT try(format($$SELECT easeml.enqueue('points', 'knn-5')$$));
RESET ROLE;
SELECT tenant, name, status FROM easeml.tasks WHERE name IN ('points', 'b_points') ORDER BY name;

-- tenants queue runs of their own tasks; the values are the system's
SET ROLE regress_lab_a;
SELECT easeml.enqueue('points', 'knn-5') IS NOT NULL AS queued;
SELECT try($$SELECT easeml.enqueue('points', 'knn-5')$$);
SELECT try($$SELECT easeml.enqueue('points', 'no-such-model')$$);
SELECT try($$SELECT easeml.enqueue('no_such_task', 'knn-5')$$);
SELECT try($$SELECT easeml.enqueue('points_y', 'softmax-l2-1e-4')$$);
-- a direct INSERT names only task and model; everything else is the system's
SELECT try($$INSERT INTO easeml.runs (task_id, model_id, status, score) SELECT t.id, m.id, 'succeeded', 0.99
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'points' AND m.name = 'gnb'$$);
SELECT try($$INSERT INTO easeml.runs (id, task_id, model_id) SELECT 1000000, t.id, m.id
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'points' AND m.name = 'gnb'$$);
INSERT INTO easeml.runs (task_id, model_id)
SELECT t.id, m.id FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'points' AND m.name = 'gnb'
RETURNING tenant, status, score, pid, requested_by;
-- nor into another tenant's task
SELECT regexp_replace(try(format($$INSERT INTO easeml.runs (task_id, model_id) VALUES (%s, 1)$$, :b_task)), 'task \d+', 'task N') AS try;
-- nor change a result
SELECT try($$UPDATE easeml.runs SET score = 1$$);
SELECT try($$UPDATE easeml.runs SET status = 'succeeded'$$);
SELECT try($$DELETE FROM easeml.runs$$);
SELECT t.name AS task, m.name AS model, r.status, r.requested_by
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id JOIN easeml.models m ON m.id = r.model_id
 ORDER BY r.id;

-- cancel: a queued run is cancelled at once and the change is recorded
SELECT easeml.cancel(id) FROM easeml.runs WHERE model_id = (SELECT id FROM easeml.models WHERE name = 'gnb');
SELECT m.name, r.status, r.error IS NOT NULL AS has_reason
  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id ORDER BY r.id;
SELECT min(id) AS a_run FROM easeml.runs \gset
-- cancelling again is harmless: it answers the run's status
SELECT easeml.cancel(id) FROM easeml.runs WHERE status = 'cancelled';
SELECT m.name, e.status
  FROM easeml.run_events e JOIN easeml.runs r ON r.id = e.run_id JOIN easeml.models m ON m.id = r.model_id
 ORDER BY e.id;
RESET ROLE;

-- the other tenant sees none of it and cannot cancel it
SET ROLE regress_lab_b;
SELECT count(*) AS runs_visible FROM easeml.runs;
SELECT count(*) AS events_visible FROM easeml.run_events;
SELECT regexp_replace(try(format('SELECT easeml.cancel(%s)', :a_run)), 'run \d+', 'run N') AS try;
SELECT try('SELECT easeml.cancel(1)');
SELECT task FROM easeml.task_overview ORDER BY task;
-- internal and admin functions are not for tenants
SELECT try($$SELECT easeml_trainer.spec(1)$$);
SELECT try($$SELECT easeml_trainer.data_session(1)$$);
SELECT try($$SELECT easeml_trainer.progress(1, 1, 0.5)$$);
SELECT try($$SELECT easeml.add_tenant('regress_lab_b')$$);
SELECT try($$SELECT set_config('easeml.policy', 'fifo', false)$$);
SELECT try($$SELECT easeml._finish_run(1, 'succeeded', 0, '{"score": 1}', NULL)$$);
SELECT try($$INSERT INTO easeml.models (name, family) VALUES ('mine', 'knn')$$);
SELECT try($$INSERT INTO easeml.tenants (name) VALUES ('regress_outsider')$$);
SELECT try($$SELECT easeml.wake_scheduler()$$);
-- a tenant drops its own task, with its runs
SELECT easeml.drop_task('b_points') > 0 AS dropped;
SELECT count(*) AS tasks_left FROM easeml.tasks;
SELECT try($$SELECT easeml.drop_task('b_points')$$);
RESET ROLE;

-- [quota] an administrator limits a tenant's tasks and the usable rows of
-- a task's source; what is over a limit is refused and loses nothing
SELECT easeml.set_tenant_limits('regress_lab_b', max_tasks => 1, max_rows => 25);
SELECT try($$SELECT easeml.set_tenant_limits('regress_lab_b', max_tasks => 0)$$);
SELECT try($$SELECT easeml.set_tenant_limits('regress_nobody', 1)$$);
SELECT try($$SELECT easeml.set_tenant_limits(NULL, 1)$$);
CREATE TABLE public.points_small AS SELECT * FROM public.points WHERE x1 <= 10;
GRANT SELECT ON public.points_small TO regress_lab_b;
SET ROLE regress_lab_b;
SELECT name, max_parallel, max_tasks, max_rows FROM easeml.tenants;
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('big', 'public.points', 'label')$$);
-- two rows of one INSERT: the second sees the first
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('small', 'public.points_small', 'label'),
	('small_b', 'public.points_small', 'label')$$);
SELECT count(*) AS tasks FROM easeml.tasks;
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('small', 'public.points_small', 'label')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('small2', 'public.points_small', 'label')$$);
SELECT try($$SELECT easeml.set_tenant_limits('regress_lab_b', 5)$$);
RESET ROLE;
-- the source grows past the limit: the refresh is refused, the snapshot kept
INSERT INTO public.points_small SELECT * FROM public.points WHERE x1 > 10;
SET ROLE regress_lab_b;
SELECT try($$SELECT easeml.refresh('small')$$);
SELECT name, n_rows, snapshot_version FROM easeml.tasks;
RESET ROLE;
-- [hardening] a run reads at most max_rows + 1 rows with a target: the
-- trainer's spec carries the limit, and its COPY query stops there
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'small' AND m.name = 'knn-5';
SELECT s ->> 'max_rows' AS max_rows,
	   regexp_replace(s ->> 'copy_query', 'task_\d+_v', 'task_N_v') AS copy_query
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id, easeml_trainer.spec(r.id) s
 WHERE t.name = 'small' AND r.status = 'running';
-- the largest limit has no row past it: no LIMIT (the trainer still counts)
SELECT easeml.set_tenant_limits('regress_lab_b', max_tasks => 1, max_rows => 9223372036854775807);
SELECT s ->> 'max_rows' AS max_rows, s ->> 'copy_query' LIKE '%LIMIT%' AS limited
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id, easeml_trainer.spec(r.id) s
 WHERE t.name = 'small' AND r.status = 'running';
SELECT easeml.set_tenant_limits('regress_lab_b', max_tasks => 1, max_rows => 25);
-- re-adding the tenant keeps its limits; NULL lifts them
SELECT easeml.add_tenant('regress_lab_b', 2);
SELECT name, max_tasks, max_rows FROM easeml.tenants WHERE name = 'regress_lab_b';
SELECT easeml.set_tenant_limits('regress_lab_b');
SET ROLE regress_lab_b;
SELECT try($$SELECT easeml.refresh('small')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target) VALUES ('small2', 'public.points_small', 'label')$$);
SELECT name, n_rows, snapshot_version FROM easeml.tasks ORDER BY name;
RESET ROLE;

-- [hardening] a paused task holds its tenant's own queue too: the run is
-- accepted and waits, and a NOTICE says so (docs/operations.md)
SET ROLE regress_lab_a;
UPDATE easeml.tasks SET status = 'paused' WHERE name = 'points_y';
SELECT easeml.enqueue('points_y', 'ridge-1') IS NOT NULL AS queued;
SELECT r.status FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'points_y';
RESET ROLE;

-- clean up
RESET ROLE;
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_%';
DROP TABLE public.points, public.points_small;
DROP OWNED BY regress_lab_a, regress_lab_b;
DROP ROLE regress_lab_a, regress_lab_b;
