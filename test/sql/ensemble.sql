-- [ensemble] Ensembles of a task's runs (docs/models.md "Ensembles"): the
-- catalog's model row and setting, what a tenant may not do (queue an
-- ensemble, call the trainer's functions, read another's predictions),
-- and the trainer's input checked.  The ensembles themselves are built by
-- the scheduler: t/048_ensemble.pl.  (try() is helpers.sql's)
CREATE ROLE regress_ens_a LOGIN;
CREATE ROLE regress_ens_b LOGIN;
SELECT easeml.add_tenant('regress_ens_a');
SELECT easeml.add_tenant('regress_ens_b');
CREATE TABLE public.ens_points (x1 float8, x2 int, label text);
INSERT INTO public.ens_points
SELECT i * 0.5, i % 7, (ARRAY['a', 'b', 'c'])[i % 3 + 1] FROM generate_series(1, 30) i;
GRANT SELECT ON public.ens_points TO regress_ens_a;

-- ---- the built-in model and the setting -----------------------------------
SELECT name, family, params, kinds, enabled, builtin FROM easeml.models WHERE family = 'ensemble';
SHOW easeml.ensemble_min_runs;
-- a server setting: not a session's
SELECT try($$SET easeml.ensemble_min_runs = 3$$);
-- an admin's model of the family: one parameter, steps, checked
SELECT try($$INSERT INTO easeml.models (name, family, params) VALUES ('ens-0', 'ensemble', '{"steps": 0}')$$);
SELECT try($$INSERT INTO easeml.models (name, family, params) VALUES ('ens-k', 'ensemble', '{"k": 3}')$$);
SELECT try($$INSERT INTO easeml.models (name, family, params) VALUES ('ens-s', 'ensemble', '{"steps": "ten"}')$$);

-- ---- a tenant queues no ensemble and calls no trainer function --------------
SET ROLE regress_ens_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('ens', 'public.ens_points', 'label');
SELECT regexp_replace(try($$INSERT INTO easeml.runs (task_id, model_id)
			 SELECT t.id, m.id FROM easeml.tasks t, easeml.models m
			  WHERE t.name = 'ens' AND m.name = 'ensemble'$$), 'model [0-9]+', 'model <ensemble>') AS try;
SELECT try($$SELECT easeml_trainer.predictions(1, '\x00')$$);
SELECT try($$SELECT * FROM easeml_trainer.ensemble_members(1)$$);
SELECT try($$SELECT * FROM easeml._ensemble_pool(1)$$);
SELECT count(*) FROM easeml.run_predictions;
RESET ROLE;

-- ---- the trainer's blob is checked -----------------------------------------
SELECT try($$SELECT easeml_trainer.predictions(1, NULL)$$);
SELECT try($$SELECT easeml_trainer.predictions(1, '\x00')$$);
SELECT try($$SELECT easeml_trainer.predictions(1, 'not a blob')$$);
-- well formed but for no run in flight: not kept, and the answer says why
SELECT easeml_trainer.predictions(-1, '\x454153454d4c4131'::bytea);
-- an ensemble run reads the predictions of its own task only, and a
-- selection run is none
SELECT count(*) FROM easeml_trainer.ensemble_members(-1);

-- ---- another tenant's predictions are not seen ------------------------------
INSERT INTO easeml.runs (task_id, model_id, status)
SELECT t.id, m.id, 'running' FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'ens' AND m.name = 'gnb';
SELECT easeml_trainer.predictions(r.id, '\x454153454d4c4131'::bytea) IS NULL AS kept
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'ens';
SET ROLE regress_ens_a;
SELECT count(*), min(bytes) FROM easeml.run_predictions;
SELECT try($$DELETE FROM easeml.run_predictions$$);
RESET ROLE;
SET ROLE regress_ens_b;
SELECT count(*) FROM easeml.run_predictions;
RESET ROLE;

-- ---- a member list with run ids no run has: the run still finishes ------
-- (1.5 and 1e20 are numbers, not bigints: retention compares them as numeric)
INSERT INTO easeml.runs (task_id, model_id, status, purpose, started_at)
SELECT t.id, m.id, 'running', 'ensemble', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'ens' AND m.name = 'ensemble';
SELECT try(format('SELECT easeml._finish_run(%s, %L, 0, %L, NULL)', r.id, 'succeeded',
				  '{"score": 0.9, "metric": "accuracy", "members": [{"run_id": 1.5}, {"run_id": 1e20}, {"run_id": "x"}]}'))
	   AS finished
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
 WHERE t.name = 'ens' AND r.purpose = 'ensemble';
SELECT r.status, r.score FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
 WHERE t.name = 'ens' AND r.purpose = 'ensemble';

-- ---- clean up -------------------------------------------------------------
SELECT easeml._finish_run(r.id, 'failed', 1, NULL, 'regress')
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'ens';
SELECT count(*) AS predictions_left FROM easeml.run_predictions;
DELETE FROM easeml.tasks WHERE tenant IN ('regress_ens_a', 'regress_ens_b');
DELETE FROM easeml.tenants WHERE name IN ('regress_ens_a', 'regress_ens_b');
DROP TABLE public.ens_points;
DROP ROLE regress_ens_a;
DROP ROLE regress_ens_b;
