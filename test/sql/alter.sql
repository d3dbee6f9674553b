-- Changing a task after its declaration: easeml.alter_task (metric,
-- features, folds, auto_deploy), and what easeml.cancel answers.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_alter_a LOGIN;
CREATE ROLE regress_alter_b LOGIN;
SELECT easeml.add_tenant('regress_alter_a');
SELECT easeml.add_tenant('regress_alter_b');


-- data: 3 classes, 30 rows
CREATE TABLE public.alter_points (x1 float8, x2 int, x3 numeric, note text, label text, y float8);
INSERT INTO public.alter_points
SELECT i * 0.5, i % 7, i % 3 + 0.25, 'row ' || i, (ARRAY['a', 'b', 'c'])[i % 3 + 1], i * 1.5
  FROM generate_series(1, 30) i;
GRANT SELECT ON public.alter_points TO regress_alter_a, regress_alter_b;

SET ROLE regress_alter_a;
INSERT INTO easeml.tasks (name, source, target, features) VALUES ('pts', 'public.alter_points', 'label', '{x1,x2}');
INSERT INTO easeml.tasks (name, source, target, kind, features)
VALUES ('pts_y', 'public.alter_points', 'y', 'regression', '{x1,x2}');
INSERT INTO easeml.tasks (name, source, target, features, snapshot)
VALUES ('live', 'public.alter_points', 'label', '{x1,x2}', false);
RESET ROLE;
SET ROLE regress_alter_b;
INSERT INTO easeml.tasks (name, source, target, features) VALUES ('b_pts', 'public.alter_points', 'label', '{x1}');
RESET ROLE;

-- four succeeded runs of pts, as a trainer records them: ranked by
-- accuracy, their order by log loss is another; one more is running
CREATE TEMP TABLE fake (model text, acc float8, ll float8, seconds float8);
INSERT INTO fake VALUES ('knn-5', 0.90, 0.60, 1), ('gnb', 0.80, 0.20, 2), ('ridge-1', 0.70, 0.40, 3),
	('softmax-l2-1e-4', 0.85, 0.30, 4);
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), f.seconds, f.acc,
	   jsonb_build_object('score', f.acc, 'metric', 'accuracy', 'accuracy', f.acc,
						  'balanced_accuracy', f.acc - 0.05, 'macro_f1', f.acc - 0.1,
						  'log_loss', f.ll, 'roc_auc', 1 - f.ll / 2,
						  'quality', jsonb_build_object('accuracy', f.acc, 'balanced_accuracy', f.acc - 0.05,
														'macro_f1', f.acc - 0.1, 'log_loss', exp(-f.ll),
														'roc_auc', 1 - f.ll / 2))
  FROM fake f, easeml.tasks t, easeml.models m
 WHERE t.name = 'pts' AND m.name = f.model;
-- a regression run without metrics.quality: RMSE's quality comes from R^2
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 1, 0.75,
	   '{"score": 0.75, "metric": "r2", "r2": 0.75, "rmse": 3.0, "mae": 2.5}'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'pts_y' AND m.name = 'ridge-1';
-- a run recorded before metrics.quality: its log loss gives its quality on
-- one split; a custom trainer's score is kept
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 5, 0.60,
	   '{"score": 0.60, "metric": "accuracy", "accuracy": 0.60, "log_loss": 0.9}'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'pts' AND m.name = 'gnb-1e-5';
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'pts' AND m.name = 'rf-50';
-- every succeeded run has an artifact; the best one (by accuracy) is deployed
INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
SELECT r.id, r.tenant, 4, '\x00000000' FROM easeml.runs r WHERE r.status = 'succeeded';
SELECT easeml._activate(t.id, easeml._best_deployable(t.id), 'auto', 'regress_alter_a')
  FROM easeml.tasks t WHERE t.name = 'pts';

SET ROLE regress_alter_a;
SELECT rank, model, round(score::numeric, 4) AS score, metric, metric_value, stale
  FROM easeml.leaderboard WHERE task = 'pts' ORDER BY rank;
SELECT best_model, round(best_score::numeric, 4) AS best_score, metric FROM easeml.task_overview WHERE task = 'pts';
SELECT model, strategy FROM easeml.deployed WHERE task = 'pts';

-- [alter] the tenant's UPDATE of metric, features or folds says what to use
SELECT try($$UPDATE easeml.tasks SET metric = 'roc_auc' WHERE name = 'pts'$$);
SELECT try($$UPDATE easeml.tasks SET features = '{x1}' WHERE name = 'pts'$$);
SELECT try($$UPDATE easeml.tasks SET folds = 5 WHERE name = 'pts'$$);
-- the rest of the declaration stays the system's
SELECT try($$UPDATE easeml.tasks SET feature_types = '{numeric}' WHERE name = 'pts'$$);
SELECT try($$UPDATE easeml.tasks SET features_version = 7 WHERE name = 'pts'$$);
SELECT try($$UPDATE easeml.tasks SET tenant = 'regress_alter_b' WHERE name = 'pts'$$);
-- unchanged values pass, as for status
UPDATE easeml.tasks SET metric = metric, features = features, folds = folds WHERE name = 'pts' RETURNING name;
-- the flag that lets alter_task write is not the tenant's to call
SELECT try($$SELECT easeml._altering(1)$$);
SELECT try($$SELECT easeml._apply_alter('regress_alter_a', t) FROM easeml.tasks t WHERE name = 'pts'$$);

-- bad arguments
SELECT try($$SELECT easeml.alter_task(NULL, metric => 'log_loss')$$);
SELECT try($$SELECT easeml.alter_task('no_such_task', metric => 'log_loss')$$);
SELECT try($$SELECT easeml.alter_task('b_pts', metric => 'log_loss')$$);
SELECT try($$SELECT easeml.alter_task('pts', metric => 'rmse')$$);
SELECT try($$SELECT easeml.alter_task('pts', metric => 'bogus')$$);
SELECT try($$SELECT easeml.alter_task('pts_y', metric => 'accuracy')$$);
SELECT try($$SELECT easeml.alter_task('pts', folds => 11)$$);
SELECT try($$SELECT easeml.alter_task('pts', folds => 0)$$);
SELECT try($$SELECT easeml.alter_task('pts', features => '{}')$$);
SELECT try($$SELECT easeml.alter_task('pts', features => '{x1,nope}')$$);
SELECT try($$SELECT easeml.alter_task('pts', features => '{x1,label}')$$);
SELECT try($$SELECT easeml.alter_task('pts', features => '{x1,x1}')$$);
SELECT try($$SELECT easeml.alter_task('pts', features => '{x1,NULL}')$$);
SELECT try($$SELECT easeml.alter_task('live', features => '{x1}')$$);
SELECT try($$SELECT easeml.alter_task('live', folds => 3)$$);
-- nothing changed by any of them
SELECT name, metric, features, folds, snapshot_version, features_version FROM easeml.tasks ORDER BY name;
RESET ROLE;
-- a superuser's UPDATE of the metric is refused too
SELECT try($$UPDATE easeml.tasks SET metric = 'roc_auc' WHERE name = 'pts'$$);

-- a new metric ranks the runs again, without training
SET ROLE regress_alter_a;
SELECT name, metric, auto_deploy, snapshot_version
  FROM easeml.alter_task('pts', metric => 'log_loss');
SELECT rank, model, round(score::numeric, 4) AS score, metric, metric_value, stale
  FROM easeml.leaderboard WHERE task = 'pts' ORDER BY rank;
SELECT best_model, round(best_score::numeric, 4) AS best_score, metric FROM easeml.task_overview WHERE task = 'pts';
-- the task deploys automatically: its best run by the new metric
SELECT model, strategy, deployed_by FROM easeml.deployed WHERE task = 'pts';
RESET ROLE;
-- the run that was training for accuracy ends: scored by log loss
SELECT easeml._finish_run(r.id, 'succeeded', 0,
	'{"score": 0.95, "metric": "accuracy", "accuracy": 0.95, "log_loss": 0.1, "quality": {"accuracy": 0.95, "log_loss": 0.9048}}', NULL)
  FROM easeml.runs r WHERE r.status = 'running';
SET ROLE regress_alter_a;
SELECT rank, model, round(score::numeric, 4) AS score, metric_value
  FROM easeml.leaderboard WHERE task = 'pts' ORDER BY rank;

-- auto_deploy only sets the flag; back to accuracy, the deployment stays
SELECT name, metric, auto_deploy FROM easeml.alter_task('pts', auto_deploy => false);
SELECT name, metric, auto_deploy FROM easeml.alter_task('pts', metric => 'accuracy');
SELECT rank, model, round(score::numeric, 4) AS score, metric_value
  FROM easeml.leaderboard WHERE task = 'pts' ORDER BY rank;
SELECT model, strategy FROM easeml.deployed WHERE task = 'pts';
-- RMSE from R^2; a metric a run cannot be scored by (MAE needs
-- metrics.quality): the run leaves the leaderboard
SELECT name, metric FROM easeml.alter_task('pts_y', metric => 'rmse');
SELECT model, round(score::numeric, 4) AS score, metric, metric_value FROM easeml.leaderboard WHERE task = 'pts_y';
SELECT name, metric FROM easeml.alter_task('pts_y', metric => 'mae');
SELECT count(*) AS ranked FROM easeml.leaderboard WHERE task = 'pts_y';
SELECT name, metric FROM easeml.alter_task('pts_y', metric => 'r2');
SELECT model, round(score::numeric, 4) AS score, metric, metric_value FROM easeml.leaderboard WHERE task = 'pts_y';
SELECT name, metric, auto_deploy FROM easeml.alter_task('pts', auto_deploy => true);
-- a task without snapshot may change its metric
SELECT name, metric FROM easeml.alter_task('live', metric => 'macro_f1');
RESET ROLE;

-- new features: a new snapshot version; the runs stay with theirs, and the
-- refits of the retired deployment are cancelled (not moved to the new
-- version with the queued selection runs)
INSERT INTO easeml.runs (task_id, model_id)
SELECT t.id, m.id FROM easeml.tasks t, easeml.models m WHERE t.name = 'pts' AND m.name = 'knn-1';
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'pts' AND m.name = 'knn-5';
SET ROLE regress_alter_a;
SELECT name, features, feature_types, snapshot_version, features_version, n_rows
  FROM easeml.alter_task('pts', features => '{x1,x2,x3,note}');
SELECT m.name AS model, r.purpose, r.status, r.snapshot_version, r.cancel_requested
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id JOIN easeml.models m ON m.id = r.model_id
 WHERE t.name = 'pts' ORDER BY r.id;
SELECT rank, model, snapshot_version, stale FROM easeml.leaderboard WHERE task = 'pts' ORDER BY rank;
SELECT best_model, snapshot_version FROM easeml.task_overview WHERE task = 'pts';
-- older snapshot tables are dropped, as by refresh
SELECT regexp_replace(c.relname, 'task_\d+_', 'task_N_') AS snapshot
  FROM pg_class c, easeml.tasks t
 WHERE t.name = 'pts' AND c.relnamespace = 'easeml_snapshots'::regnamespace
   AND c.relname LIKE format('task\_%s\_v%%', t.id);
-- the runs of the old features are never deployed again
SELECT count(*) AS deployed FROM easeml.deployed WHERE task = 'pts';
SELECT try($$SELECT easeml.deploy('pts')$$);
SELECT regexp_replace(try(format('SELECT easeml.deploy(%L, %s::bigint)', 'pts', run_id)), 'run \d+', 'run N')
  FROM easeml.leaderboard WHERE task = 'pts' AND rank = 1;
SELECT try($$SELECT easeml.rollback('pts')$$);
-- folds: a new version too; 1 goes back to one validation split
SELECT name, folds, snapshot_version, features_version FROM easeml.alter_task('pts', folds => 5);
SELECT name, folds, snapshot_version, features_version FROM easeml.alter_task('pts', folds => 1);
-- the same values change nothing
SELECT name, folds, snapshot_version FROM easeml.alter_task('pts', features => '{x1,x2,x3,note}');
RESET ROLE;

-- [alter] easeml.cancel says what the run is now: cancelled at once when
-- queued, cancelling while a running run's trainer is being stopped
SET ROLE regress_alter_a;
SELECT easeml.cancel(r.id) FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
 WHERE r.status = 'queued' AND m.name = 'knn-1';
SELECT r.id AS running_run FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
 WHERE r.status = 'running' AND m.name = 'knn-5' \gset
SELECT easeml.cancel(:running_run);
SELECT easeml.cancel(:running_run);
SELECT status, cancel_requested FROM easeml.runs WHERE id = :running_run;
RESET ROLE;
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'pts_y' AND m.name = 'ridge-1'
RETURNING id AS fresh_run \gset
SET ROLE regress_alter_a;
SELECT easeml.cancel(:fresh_run);
RESET ROLE;
-- the scheduler records the cancelled run
SELECT easeml._finish_run(:running_run, 'cancelled', NULL, NULL, 'cancelled by regress_alter_a');
SET ROLE regress_alter_a;
SELECT easeml.cancel(:running_run);
RESET ROLE;

-- clean up
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_alter\_%';
DROP TABLE public.alter_points;
DROP OWNED BY regress_alter_a, regress_alter_b;
DROP ROLE regress_alter_a, regress_alter_b;
