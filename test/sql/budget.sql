-- [budget] A time budget per task: tasks.budget_seconds, the tenant's
-- default (easeml.set_tenant_budget), easeml.alter_task, what is refused,
-- who may set it, and what task_overview and explain say of it.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_budget_a LOGIN;
CREATE ROLE regress_budget_b LOGIN;
SELECT easeml.add_tenant('regress_budget_a');
SELECT easeml.add_tenant('regress_budget_b');

GRANT EXECUTE ON FUNCTION public.try(text) TO PUBLIC;

CREATE TABLE public.budget_points (x1 float8, x2 int, label text);
INSERT INTO public.budget_points
SELECT i * 0.5, i % 7, (ARRAY['a', 'b', 'c'])[i % 3 + 1] FROM generate_series(1, 30) i;
GRANT SELECT ON public.budget_points TO regress_budget_a, regress_budget_b;

-- ---- the tenant's default: an admin's, checked -----------------------------
SELECT try($$SELECT easeml.set_tenant_budget(NULL, 60)$$);
SELECT try($$SELECT easeml.set_tenant_budget('regress_nobody', 60)$$);
SELECT try($$SELECT easeml.set_tenant_budget('regress_budget_a', 0)$$);
SELECT try($$SELECT easeml.set_tenant_budget('regress_budget_a', -5)$$);
SELECT try($$SELECT easeml.set_tenant_budget('regress_budget_a', 'NaN')$$);
SELECT try($$SELECT easeml.set_tenant_budget('regress_budget_a', 'Infinity')$$);
SELECT easeml.set_tenant_budget('regress_budget_a', 300);
SELECT name, default_budget_seconds FROM easeml.tenants WHERE name::text LIKE 'regress\_budget\_%' ORDER BY name;
-- a tenant sets no default, its own or another's
SET ROLE regress_budget_a;
SELECT try($$SELECT easeml.set_tenant_budget('regress_budget_a', 1)$$);
SELECT try($$UPDATE easeml.tenants SET default_budget_seconds = 1$$);
SELECT name, default_budget_seconds FROM easeml.tenants;
RESET ROLE;

-- ---- declared budgets: refused with a hint unless positive and finite ----
SET ROLE regress_budget_a;
SELECT try($$INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('z', 'public.budget_points', 'label', 0)$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('z', 'public.budget_points', 'label', -1)$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('z', 'public.budget_points', 'label', 'NaN')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('z', 'public.budget_points', 'label', '-Infinity')$$);
SELECT try($$INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('z', 'public.budget_points', 'label', 'Infinity')$$);
-- text that is no number: the type's input refuses it
SELECT try($$INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('z', 'public.budget_points', 'label', 'ten minutes')$$);
-- a budget declared, and one from the tenant's default
INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('b20', 'public.budget_points', 'label', 20);
INSERT INTO easeml.tasks (name, source, target) VALUES ('bdef', 'public.budget_points', 'label');
INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('brun', 'public.budget_points', 'label', 11);
SELECT name, budget_seconds FROM easeml.tasks ORDER BY name;
RESET ROLE;
-- no default: no budget
SET ROLE regress_budget_b;
INSERT INTO easeml.tasks (name, source, target) VALUES ('b_free', 'public.budget_points', 'label');
SELECT name, budget_seconds FROM easeml.tasks;
RESET ROLE;

-- ---- changed by UPDATE (NULL takes it away) and by alter_task ------------
SET ROLE regress_budget_a;
SELECT try($$UPDATE easeml.tasks SET budget_seconds = 0 WHERE name = 'bdef'$$);
SELECT try($$UPDATE easeml.tasks SET budget_seconds = 'NaN' WHERE name = 'bdef'$$);
UPDATE easeml.tasks SET budget_seconds = NULL WHERE name = 'bdef';
SELECT try($$SELECT easeml.alter_task('bdef', budget_seconds => -3)$$);
SELECT try($$SELECT easeml.alter_task('bdef', budget_seconds => 'Infinity')$$);
SELECT name, budget_seconds FROM easeml.alter_task('bdef', budget_seconds => 45.5);
-- NULL leaves it as it is
SELECT name, budget_seconds, metric FROM easeml.alter_task('bdef', metric => 'macro_f1');
RESET ROLE;

-- ---- a tenant sets only its own tasks' budgets ---------------------------
SET ROLE regress_budget_b;
SELECT try($$SELECT easeml.alter_task('b20', budget_seconds => 1)$$);
UPDATE easeml.tasks SET budget_seconds = 1 WHERE name = 'b20';
SELECT try($$SELECT easeml._apply_alter('regress_budget_a', t) FROM easeml.tasks t WHERE name = 'b_free'$$);
RESET ROLE;
SELECT name, budget_seconds FROM easeml.tasks WHERE tenant::text LIKE 'regress\_budget\_%' ORDER BY name;

-- ---- spent and remaining --------------------------------------------------
-- b20: three finished selection runs (8 + 7 + 6 s, one failed), a refit
-- (not the search: left out), a queued run (never started: 0) and a run of
-- an earlier snapshot version (left out, as max_runs leaves it out)
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, f.status, now(), now(), f.seconds,
	   CASE WHEN f.status = 'succeeded' THEN 0.5 END,
	   CASE WHEN f.status = 'succeeded' THEN '{"score": 0.5, "metric": "accuracy"}'::jsonb END
  FROM (VALUES ('gnb', 'succeeded', 8.0), ('knn-5', 'succeeded', 7.0), ('ridge-1', 'failed', 6.0))
		 AS f(model, status, seconds),
	   easeml.tasks t, easeml.models m
 WHERE t.name = 'b20' AND m.name = f.model;
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, purpose, refit_of)
SELECT t.id, m.id, 'succeeded', now(), now(), 100, 'refit', r.id
  FROM easeml.tasks t, easeml.models m, easeml.runs r
 WHERE t.name = 'b20' AND m.name = 'gnb' AND r.task_id = t.id AND r.model_id = m.id;
INSERT INTO easeml.runs (task_id, model_id, status)
SELECT t.id, m.id, 'queued' FROM easeml.tasks t, easeml.models m WHERE t.name = 'b20' AND m.name = 'knn-1';
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, snapshot_version)
SELECT t.id, m.id, 'failed', now(), now(), 50, 0 FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'b20' AND m.name = 'knn-1';
-- brun: a finished run of 3 s and one running for 4 s
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 3, 0.5, '{"score": 0.5, "metric": "accuracy"}'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'brun' AND m.name = 'gnb';
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() - interval '4 seconds'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'brun' AND m.name = 'knn-5';
SET ROLE regress_budget_a;
-- (a running run counts until now: whole seconds shown)
SELECT task, status, budget_seconds, floor(spent_seconds) AS spent, floor(remaining_seconds) AS remaining
  FROM easeml.task_overview ORDER BY task;
-- the scheduler's own code (easeml.explain) keeps b20 out, and brun in
SELECT regexp_replace(split_part(why, ';', 1), 'task \d+', 'task N') AS why
  FROM easeml.explain('b20') WHERE why <> 'runner-up';
SELECT split_part(why, ';', 1) LIKE 'done:%' AS brun_done
  FROM easeml.explain('brun') WHERE why <> 'runner-up';
-- a budget raised past what was spent lets the search go on
UPDATE easeml.tasks SET budget_seconds = 30 WHERE name = 'b20';
SELECT task, budget_seconds, spent_seconds, remaining_seconds FROM easeml.task_overview WHERE task = 'b20';
SELECT split_part(why, ';', 1) LIKE 'done:%' AS b20_done
  FROM easeml.explain('b20') WHERE why <> 'runner-up';
RESET ROLE;
SET ROLE regress_budget_b;
SELECT task, budget_seconds, spent_seconds, remaining_seconds FROM easeml.task_overview;
RESET ROLE;

-- clean up
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_budget\_%';
DROP TABLE public.budget_points;
DROP OWNED BY regress_budget_a, regress_budget_b;
DROP ROLE regress_budget_a, regress_budget_b;
