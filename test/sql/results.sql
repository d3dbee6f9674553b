-- Results (docs/results.md): deployments, automatic deployment of a new
-- best run, rollback, and what a tenant sees of them.  Runs are finished
-- here as the scheduler would (easeml._finish_run); the scheduler itself
-- is off.  Self-contained: its own roles, tables and helpers.
CREATE ROLE regress_res_a LOGIN;
CREATE ROLE regress_res_b LOGIN;
SELECT easeml.add_tenant('regress_res_a'), easeml.add_tenant('regress_res_b');
CREATE TABLE public.res_points AS
SELECT i * 0.5 AS x1, (i % 7)::float8 AS x2, (ARRAY['a', 'b', 'c'])[i % 3 + 1] AS label
  FROM generate_series(1, 60) i;
GRANT SELECT ON public.res_points TO regress_res_a, regress_res_b;

-- res_try(sql): run a statement as it is, show its SQLSTATE, message and hint
CREATE FUNCTION public.res_try(sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
	RETURN regexp_replace(SQLSTATE || ': ' || SQLERRM
		|| CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END,
		'(run|task_id =) [0-9]+', '\1 <id>', 'g');
END;
$$;
GRANT EXECUTE ON FUNCTION public.res_try(text) TO PUBLIC;

-- res_run(task, model, status, score, artifact): a run that ends as the
-- scheduler would end it; returns its id
CREATE FUNCTION public.res_run(task text, model text, status text, score float8, artifact boolean)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	rid bigint;
BEGIN
	INSERT INTO easeml.runs (task_id, model_id, status, started_at)
	SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
	 WHERE t.name = task AND t.tenant::text LIKE 'regress\_res\_%' AND m.name = model
	RETURNING id INTO rid;
	IF artifact THEN
		PERFORM easeml_trainer.artifact(rid, '\x454153454d4c4131'::bytea);
	END IF;
	PERFORM easeml._finish_run(rid, status, CASE WHEN status = 'succeeded' THEN 0 ELSE 1 END,
							   CASE WHEN status = 'succeeded' THEN json_build_object('score', score)::text END,
							   CASE WHEN status = 'succeeded' THEN NULL ELSE 'broke' END);
	RETURN rid;
END;
$$;

SET ROLE regress_res_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('res_task', 'public.res_points', 'label');
INSERT INTO easeml.tasks (name, source, target, auto_deploy)
VALUES ('res_manual', 'public.res_points', 'label', false);
SET ROLE regress_res_b;
INSERT INTO easeml.tasks (name, source, target) VALUES ('res_other', 'public.res_points', 'label');
RESET ROLE;
SELECT name, auto_deploy FROM easeml.tasks WHERE tenant::text LIKE 'regress\_res\_%' ORDER BY name;

-- before any run: nothing deployed, nothing to deploy
SET ROLE regress_res_a;
SELECT easeml._deployed_run(id) IS NULL AS nothing_yet FROM easeml.tasks WHERE name = 'res_task';
SELECT res_try($$SELECT easeml.deploy('res_task')$$);
SELECT res_try($$SELECT easeml.rollback('res_task')$$);
RESET ROLE;

-- the first run that succeeds is deployed automatically; a better one
-- replaces it; a worse one, a failed one and one without artifact do not
SELECT res_run('res_task', 'knn-1', 'succeeded', 0.70, true) AS r1 \gset
SELECT res_run('res_task', 'knn-3', 'succeeded', 0.80, true) AS r2 \gset
SELECT res_run('res_task', 'knn-5', 'succeeded', 0.75, true) AS r3 \gset
SELECT res_run('res_task', 'gnb', 'failed', NULL, false) AS r4 \gset
SELECT res_run('res_task', 'ridge-1', 'succeeded', 0.90, false) AS r5 \gset
SELECT res_run('res_other', 'knn-1', 'succeeded', 0.60, true) AS other \gset
SELECT d.run_id = :r1 AS is_r1, d.run_id = :r2 AS is_r2, d.strategy, d.active,
	   d.deployed_by = current_user AS by_scheduler, d.rolled_back_at IS NULL AS not_rolled_back
  FROM easeml.deployments d JOIN easeml.tasks t ON t.id = d.task_id
 WHERE t.name = 'res_task' ORDER BY d.id;
-- a better run without an artifact is the new best but cannot predict
SELECT run_id = :r5 AS best_is_r5 FROM easeml.leaderboard WHERE task = 'res_task' AND rank = 1;
SELECT easeml._deployed_run(id) = :r2 AS predicts_with_r2 FROM easeml.tasks WHERE name = 'res_task';

-- the tenant sees its own deployments only
SET ROLE regress_res_a;
SELECT task, run_id = :r2 AS is_r2, model, score, strategy, auto_deploy FROM easeml.deployed ORDER BY task;
SELECT count(*) AS own_rows FROM easeml.deployments;
SET ROLE regress_res_b;
SELECT task, run_id = :other AS is_other, strategy FROM easeml.deployed;
SELECT count(*) AS other_tenants_rows FROM easeml.deployments WHERE tenant <> current_user;

-- deploying by hand: a run by id (a notice says auto_deploy may replace
-- it), the latest run, the best again
SET ROLE regress_res_a;
SELECT easeml.deploy('res_task', :r1) = :r1 AS deployed_r1;
SELECT easeml.deploy('res_task', 'latest') = :r3 AS deployed_latest;
SELECT easeml.deploy('res_task', :'r3') = :r3 AS again_is_a_notice;
SELECT easeml.deploy('res_task') = :r2 AS deployed_best;
SELECT d.run_id = :r1 AS r1, d.run_id = :r2 AS r2, d.run_id = :r3 AS r3, d.strategy, d.active,
	   d.deployed_by, d.rolled_back_at IS NOT NULL AS rolled_back
  FROM easeml.deployments d WHERE d.task_id = (SELECT id FROM easeml.tasks WHERE name = 'res_task')
 ORDER BY d.id;

-- rolling back walks down the deployments that were not rolled back
SELECT easeml.rollback('res_task') = :r3 AS back_to_r3;
SELECT easeml.rollback('res_task') = :r1 AS back_to_r1;
SELECT easeml.rollback('res_task') = :r2 AS back_to_r2;
SELECT easeml.rollback('res_task') = :r1 AS back_to_first_r1;
SELECT res_try($$SELECT easeml.rollback('res_task')$$);
SELECT d.run_id = :r1 AS r1, d.run_id = :r2 AS r2, d.run_id = :r3 AS r3, d.strategy, d.active,
	   d.rolled_back_by, d.rolled_back_at >= d.deployed_at AS rolled_back_after
  FROM easeml.deployments d WHERE d.task_id = (SELECT id FROM easeml.tasks WHERE name = 'res_task')
 ORDER BY d.id;
SELECT run_id = :r1 AS deployed_r1 FROM easeml.deployed WHERE task = 'res_task';
RESET ROLE;

-- with auto_deploy on, a new best replaces even a rollback's choice;
-- switched off, the deployment stays
SELECT res_run('res_task', 'knn-15', 'succeeded', 0.95, true) AS r6 \gset
SELECT run_id = :r6 AS auto_deployed_r6, strategy FROM easeml.deployed WHERE task = 'res_task';
SET ROLE regress_res_a;
UPDATE easeml.tasks SET auto_deploy = false WHERE name = 'res_task';
SELECT easeml.deploy('res_task', :r1) = :r1 AS pinned_r1;
RESET ROLE;
SELECT res_run('res_task', 'knn-5-distance', 'succeeded', 0.99, true) AS r7 \gset
SELECT run_id = :r1 AS still_r1 FROM easeml.deployed WHERE task = 'res_task';
SELECT easeml._deployed_run(id) = :r1 AS predicts_with_r1 FROM easeml.tasks WHERE name = 'res_task';

-- a custom trainer's run is never deployed: predict cannot read its artifact
SELECT easeml.add_custom_model('res-custom', ARRAY['/bin/true']) > 0 AS registered;
SELECT res_run('res_task', 'res-custom', 'succeeded', 1.0, true) AS c1 \gset
SELECT run_id = :r1 AS still_r1 FROM easeml.deployed WHERE task = 'res_task';
SET ROLE regress_res_a;
SELECT res_try(format($$SELECT easeml.deploy('res_task', %s)$$, :c1));
SELECT easeml.deploy('res_task', 'latest') = :r7 AS latest_skips_it;
SELECT easeml.deploy('res_task', 'best') = :r7 AS best_skips_it;
SELECT easeml.rollback('res_task') = :r1 AS back_to_r1;
RESET ROLE;

-- a task that never deployed predicts with its best run
SELECT res_run('res_manual', 'knn-1', 'succeeded', 0.5, true) AS m1 \gset
SELECT res_run('res_manual', 'knn-3', 'succeeded', 0.6, true) AS m2 \gset
SELECT count(*) AS manual_deployments FROM easeml.deployments
 WHERE task_id = (SELECT id FROM easeml.tasks WHERE name = 'res_manual');
SELECT easeml._deployed_run(id) = :m2 AS predicts_with_best FROM easeml.tasks WHERE name = 'res_manual';

-- retention: an artifact above easeml.artifact_max_bytes (16MB) stays
-- while its run is deployed or is what a rollback returns to; rollback
-- skips a deployment whose artifact is gone
CREATE FUNCTION pg_temp.big_run(model text, score float8) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	rid bigint;
BEGIN
	INSERT INTO easeml.runs (task_id, model_id, status, started_at)
	SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
	 WHERE t.name = 'res_manual' AND m.name = model
	RETURNING id INTO rid;
	PERFORM easeml_trainer.artifact(rid, convert_to('EASEMLA1', 'UTF8') || decode(repeat('00', 17000000), 'hex'));
	PERFORM easeml._finish_run(rid, 'succeeded', 0, format('{"score": %s}', score), NULL);
	RETURN rid;
END $$;
UPDATE easeml.tasks SET auto_deploy = true WHERE name = 'res_manual';
SELECT pg_temp.big_run('rf-50', 0.7) AS big1 \gset
SELECT pg_temp.big_run('rf-200', 0.8) AS big2 \gset
SELECT pg_temp.big_run('gbt-100', 0.9) AS big3 \gset
SELECT r.id = :big1 AS big1, r.id = :big2 AS big2, r.id = :big3 AS big3, a.bytes,
	   EXISTS (SELECT 1 FROM easeml.deployments d WHERE d.run_id = r.id AND d.active) AS deployed
  FROM easeml.runs r LEFT JOIN easeml.artifacts a ON a.run_id = r.id
 WHERE r.id IN (:big1, :big2, :big3) ORDER BY r.id;
SET ROLE regress_res_a;
SELECT easeml.rollback('res_manual') = :big2 AS back_to_big2;
SELECT res_try($$SELECT easeml.rollback('res_manual')$$);
SELECT res_try(format($$SELECT easeml.deploy('res_manual', %s)$$, :big1));
RESET ROLE;

-- live progress: each report is a point of the run's learning curve (NaN
-- is "not measured"); past easeml._progress_cap() points every second one
-- but the last is thinned out, so the curve keeps its whole span
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', clock_timestamp() - interval '10 seconds'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'res_task' AND m.name = 'mlp-64'
RETURNING id AS p1 \gset
SELECT count(*) AS reports FROM (SELECT easeml_trainer.progress(:p1, e, 1.0 / e) FROM generate_series(1, 3) e) x;
SELECT easeml_trainer.progress(:p1, 4, 'NaN', 0.75);
SELECT epoch, round(loss::numeric, 3) AS loss, score, at <= clock_timestamp() AS timed
  FROM easeml.run_progress WHERE run_id = :p1 ORDER BY id;
SELECT epoch, loss FROM easeml.runs WHERE id = :p1;
SELECT count(*) AS reports FROM (SELECT easeml_trainer.progress(:p1, e, 1.0 / e) FROM generate_series(5, 600) e) x;
SELECT count(*) <= easeml._progress_cap() AS bounded, count(*) AS points, min(epoch) AS first,
	   max(epoch) AS last, count(DISTINCT epoch) = count(*) AS no_repeats
  FROM easeml.run_progress WHERE run_id = :p1;
-- how far it is, by the scheduler's estimate when it chose the run
INSERT INTO easeml.decisions (task_id, tenant, model_id, run_id, policy, est_seconds)
SELECT r.task_id, r.tenant, r.model_id, r.id, 'fifo', 40 FROM easeml.runs r WHERE r.id = :p1;
INSERT INTO easeml.runs (task_id, model_id, status)
SELECT t.id, m.id, 'queued' FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'res_task' AND m.name = 'mlp-128'
RETURNING id AS q1 \gset
SET ROLE regress_res_a;
-- elapsed and percent follow the clock: a loaded machine may take seconds
-- between the INSERT above and this query
SELECT run_id = :p1 AS is_p1, task, model, status,
	   CASE WHEN run_id = :p1 THEN elapsed_seconds BETWEEN 10 AND 20 END AS elapsed_10_to_20,
	   estimated_seconds > 0 AS estimated, CASE WHEN run_id = :p1 THEN estimated_seconds END AS decided,
	   CASE WHEN run_id = :p1 THEN percent BETWEEN 25 AND 50 END AS percent_25_to_50,
	   eta - started_at AS eta_after_start, epoch
  FROM easeml.active_runs ORDER BY run_id;
SELECT res_try(format('SELECT easeml.run_log(%s)', :q1));
SET ROLE regress_res_b;
SELECT count(*) AS other_tenants_active FROM easeml.active_runs;
SELECT count(*) AS other_tenants_points FROM easeml.run_progress;
RESET ROLE;
-- runs without a decision take easeml.cost_estimates: one fit of the cost
-- model per query, however many of them there are (the subquery's function
-- scan has no argument that changes per run: it is rescanned, not rerun)
SET track_functions = 'all';
BEGIN;
INSERT INTO easeml.runs (task_id, model_id, status)
SELECT t.id, m.id, 'queued' FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'res_task' AND m.name IN ('mlp-256', 'knn-5', 'gnb');
SELECT count(*) AS active, count(estimated_seconds) AS estimated FROM easeml.active_runs;
SELECT pg_stat_get_xact_function_calls('easeml._cost_estimates'::regproc) AS cost_model_fits;
ROLLBACK;
RESET track_functions;
-- a run past its estimate shows 99% and no ETA; a finished run's curve is closed
UPDATE easeml.runs SET started_at = clock_timestamp() - interval '1 minute' WHERE id = :p1;
SELECT percent, eta FROM easeml.active_runs WHERE run_id = :p1;
SELECT easeml._finish_run(:p1, 'cancelled', NULL, NULL, 'stopped');
SELECT easeml_trainer.progress(:p1, 601, 0.001);
SELECT max(epoch) AS last FROM easeml.run_progress WHERE run_id = :p1;
SELECT easeml._finish_run(:q1, 'cancelled', NULL, NULL, 'stopped');

-- errors: each with its SQLSTATE and a hint
SET ROLE regress_res_a;
SELECT res_try($$SELECT easeml.deploy('no_such_task')$$);
SELECT res_try($$SELECT easeml.deploy(NULL)$$);
SELECT res_try($$SELECT easeml.deploy('res_task', NULL::text)$$);
SELECT res_try($$SELECT easeml.deploy('res_task', NULL::bigint)$$);
SELECT res_try($$SELECT easeml.deploy('res_task', 'worst')$$);
SELECT res_try($$SELECT easeml.deploy('res_task', -1)$$);
SELECT res_try(format($$SELECT easeml.deploy('res_task', %s)$$, :r4));
SELECT res_try(format($$SELECT easeml.deploy('res_task', %s)$$, :r5));
SELECT res_try(format($$SELECT easeml.deploy('res_task', %s)$$, :m1));
SELECT res_try(format($$SELECT easeml.deploy('res_task', %s)$$, :other));
SELECT res_try($$SELECT easeml.deploy('res_other')$$);
SELECT res_try($$SELECT easeml.rollback('res_other')$$);
SELECT res_try($$SELECT easeml.rollback('res_manual')$$);
SELECT res_try($$SELECT easeml._deploy('regress_res_b', 'res_other', 'best')$$);
SELECT res_try($$SELECT easeml._rollback('regress_res_b', 'res_other')$$);
SELECT res_try($$UPDATE easeml.deployments SET active = true$$);
SELECT res_try($$INSERT INTO easeml.deployments (task_id, tenant, run_id, strategy, deployed_by) SELECT task_id, tenant, run_id, 'run', tenant FROM easeml.deployments$$);
RESET ROLE;

-- refit on every row (docs/results.md): deploying a run queues its refit
-- (no decision, no score); the run's split model predicts until the refit
-- succeeds; deploying another run cancels a queued refit; an interrupted
-- refit is queued again; a failed one leaves the split model, saying why;
-- a run deployed again uses its earlier refit; a rollback to a deployment
-- whose refit failed queues it again; refit_all off queues none, and
-- switched on again the scheduler queues the refit the deployment lacks
SET ROLE regress_res_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('res_refit', 'public.res_points', 'label');
RESET ROLE;
SELECT res_run('res_refit', 'knn-1', 'succeeded', 0.6, true) AS f1 \gset
SELECT refit_run_id AS g1 FROM easeml.deployed WHERE task = 'res_refit' \gset
SELECT d.run_id = :f1 AS deployed_f1, d.artifact_run_id = :f1 AS split_predicts, d.n_train,
	   d.refit_all, r.purpose, r.refit_of = :f1 AS of_f1, r.status, r.requested_by,
	   r.snapshot_version = f.snapshot_version AS same_snapshot, d.refit_status,
	   d.refitted_at IS NULL AS not_refitted,
	   (SELECT count(*) FROM easeml.decisions x WHERE x.run_id = :g1) AS decisions
  FROM easeml.deployed d JOIN easeml.runs r ON r.id = d.refit_run_id
  JOIN easeml.runs f ON f.id = d.run_id WHERE d.task = 'res_refit';
SELECT easeml_trainer.spec(:g1) -> 'train_all' AS refit_trains_on_all,
	   easeml_trainer.spec(:f1) -> 'train_all' AS run_trains_on_all;
SET ROLE regress_res_a;
SELECT res_try(format($$SELECT easeml.deploy('res_refit', %s)$$, :g1));
RESET ROLE;
UPDATE easeml.runs SET status = 'running', started_at = now() WHERE id = :g1;
SELECT easeml_trainer.artifact(:g1, '\x454153454d4c4131'::bytea) IS NULL AS stored;
SELECT easeml._finish_run(:g1, 'succeeded', 0, '{"score": 1.0, "n_train": 60, "train_all": true}', NULL);
SELECT d.run_id = :f1 AS deployed_f1, d.score, d.artifact_run_id = :g1 AS refit_predicts, d.n_train,
	   d.refit_status, d.refitted_at IS NOT NULL AS refitted,
	   easeml._deployed_run(d.task_id) = :g1 AS predicts_with_refit
  FROM easeml.deployed d WHERE d.task = 'res_refit';
SELECT r.score IS NULL AS no_score, r.metrics ->> 'score' AS trained_rows_score,
	   (SELECT count(*) FROM easeml.leaderboard l WHERE l.run_id = :g1) AS on_leaderboard,
	   (SELECT o.succeeded FROM easeml.task_overview o WHERE o.task = 'res_refit') AS overview_succeeded,
	   (SELECT string_agg(e.status, ',' ORDER BY e.id) FROM easeml.run_events e WHERE e.run_id = :g1) AS events
  FROM easeml.runs r WHERE r.id = :g1;
SELECT res_run('res_refit', 'knn-3', 'succeeded', 0.7, true) AS f2 \gset
SELECT refit_run_id AS g2 FROM easeml.deployed WHERE task = 'res_refit' \gset
SELECT res_run('res_refit', 'knn-5', 'succeeded', 0.8, true) AS f3 \gset
SELECT refit_run_id AS g3 FROM easeml.deployed WHERE task = 'res_refit' \gset
SELECT status, cancel_requested, error = format('cancelled before it started: the task deploys run %s now', :f3) AS says_why
  FROM easeml.runs WHERE id = :g2;
UPDATE easeml.runs SET status = 'running', started_at = now() WHERE id = :g3;
UPDATE easeml.runs SET status = 'interrupted', finished_at = now(), error = 'interrupted: regress' WHERE id = :g3;
SELECT refit_run_id AS g4 FROM easeml.deployed WHERE task = 'res_refit' \gset
SELECT :g4 <> :g3 AS queued_again, status, refit_of = :f3 AS of_f3 FROM easeml.runs WHERE id = :g4;
UPDATE easeml.runs SET status = 'running', started_at = now() WHERE id = :g4;
SELECT easeml._finish_run(:g4, 'failed', 1, NULL, 'the trainer broke');
SELECT d.run_id = :f3 AS deployed_f3, d.artifact_run_id = :f3 AS split_predicts, d.refit_status,
	   d.refit_error, d.refitted_at IS NULL AS not_refitted
  FROM easeml.deployed d WHERE d.task = 'res_refit';
SET ROLE regress_res_a;
SELECT easeml.deploy('res_refit', :f1) = :f1 AS deployed_f1_again;
RESET ROLE;
SELECT artifact_run_id = :g1 AS earlier_refit_predicts, refitted_at IS NOT NULL AS refitted,
	   (SELECT count(*) FROM easeml.runs r WHERE r.refit_of = :f1) AS refits_of_f1
  FROM easeml.deployed WHERE task = 'res_refit';
-- a refit whose artifact is gone: the run's own artifact predicts again
DELETE FROM easeml.artifacts WHERE run_id = :g1;
SELECT artifact_run_id = :f1 AS run_predicts_again, easeml._deployed_run(task_id) = :f1 AS deployed_run_f1,
	   n_train IS NULL AS split_n_train_unknown
  FROM easeml.deployed WHERE task = 'res_refit';
SET ROLE regress_res_a;
SELECT easeml.rollback('res_refit') = :f3 AS back_to_f3;
UPDATE easeml.tasks SET refit_all = false WHERE name = 'res_refit';
RESET ROLE;
SELECT artifact_run_id = :f3 AS split_predicts, refit_status FROM easeml.deployed WHERE task = 'res_refit';
SELECT res_run('res_refit', 'knn-15', 'succeeded', 0.9, true) AS f4 \gset
SELECT run_id = :f4 AS deployed_f4, refit_run_id IS NULL AS no_refit, artifact_run_id = :f4 AS split_predicts,
	   refit_all
  FROM easeml.deployed WHERE task = 'res_refit';
-- switched on again: the scheduler's next load queues the refit the
-- deployment lacks
SET ROLE regress_res_a;
UPDATE easeml.tasks SET refit_all = true WHERE name = 'res_refit';
RESET ROLE;
SELECT easeml._queue_refits() >= 1 AS queued;
SELECT r.refit_of = :f4 AS refit_of_f4, d.refit_status, d.artifact_run_id = :f4 AS split_predicts
  FROM easeml.deployed d JOIN easeml.runs r ON r.id = d.refit_run_id WHERE d.task = 'res_refit';
SELECT easeml._queue_refits() AS queued_again;

-- dropping a task drops its deployments
SET ROLE regress_res_b;
SELECT easeml.drop_task('res_other') > 0 AS dropped;
RESET ROLE;
SELECT count(*) AS orphans FROM easeml.deployments d
 WHERE NOT EXISTS (SELECT 1 FROM easeml.tasks t WHERE t.id = d.task_id);

-- every score with its standard error (the trainer's, else an accuracy's
-- binomial one); runs within one error of the top are tied with it; a
-- task's validation rows say how close two scores can be told apart
CREATE TABLE public.res_many AS
SELECT i * 0.5 AS x1, (ARRAY['a', 'b'])[i % 2 + 1] AS label FROM generate_series(1, 4000) i;
GRANT SELECT ON public.res_many TO regress_res_a;
SET ROLE regress_res_a;
INSERT INTO easeml.tasks (name, source, target, auto_deploy)
VALUES ('res_se', 'public.res_points', 'label', false);
INSERT INTO easeml.tasks (name, source, target, folds, auto_deploy)
VALUES ('res_folded', 'public.res_many', 'label', 2, false);
RESET ROLE;
-- res_scored(model, metrics, secs, task): a succeeded run of task that
-- took about secs seconds
CREATE FUNCTION public.res_scored(model text, metrics jsonb, secs int, task text DEFAULT 'res_se')
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	rid bigint;
BEGIN
	INSERT INTO easeml.runs (task_id, model_id, status, started_at)
	SELECT t.id, m.id, 'running', clock_timestamp() - make_interval(secs => secs)
	  FROM easeml.tasks t, easeml.models m
	 WHERE t.name = task AND m.name = model
	RETURNING id INTO rid;
	PERFORM easeml_trainer.artifact(rid, '\x454153454d4c4131'::bytea);
	PERFORM easeml._finish_run(rid, 'succeeded', 0, metrics::text, NULL);
	RETURN rid;
END;
$$;
-- the top run is slow; a faster one within its standard error ranks
-- first (and is what deploy('best') deploys); one outside it does not
SELECT res_scored('knn-1', '{"score": 0.90, "metric": "accuracy", "accuracy": 0.90, "score_se": 0.05, "accuracy_se": 0.05, "n_val": 12}', 100) AS se_top \gset
SELECT res_scored('knn-3', '{"score": 0.87, "metric": "accuracy", "accuracy": 0.87, "score_se": 0.04, "accuracy_se": 0.04, "n_val": 12}', 10) AS se_close \gset
SELECT res_scored('knn-5', '{"score": 0.80, "metric": "accuracy", "accuracy": 0.80, "score_se": 0.03, "accuracy_se": 0.03, "n_val": 12}', 1) AS se_behind \gset
SELECT res_scored('gnb', '{"score": 0.75, "n_val": 100}', 1) IS NOT NULL AS no_error_recorded;
SET ROLE regress_res_a;
SELECT rank, model, score, round(score_se::numeric, 4) AS score_se,
	   round(metric_se::numeric, 4) AS metric_se, tied_with_best
  FROM easeml.leaderboard WHERE task = 'res_se' ORDER BY rank;
SELECT best_model, round(best_score::numeric, 2) AS best_score FROM easeml.task_overview WHERE task = 'res_se';
SELECT easeml.deploy('res_se') = :se_close AS deploys_the_fast_tied_run;
RESET ROLE;
-- automatic deployment follows: a faster run tied with the deployed best
-- replaces it; a new top score that leaves it behind replaces it in turn
SET ROLE regress_res_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('res_auto', 'public.res_points', 'label');
RESET ROLE;
SELECT res_scored('knn-1', '{"score": 0.90, "metric": "accuracy", "score_se": 0.05, "n_val": 12}', 100, 'res_auto') AS auto_slow \gset
SELECT res_scored('knn-3', '{"score": 0.88, "metric": "accuracy", "score_se": 0.05, "n_val": 12}', 1, 'res_auto') AS auto_fast \gset
SELECT res_scored('knn-5', '{"score": 0.99, "metric": "accuracy", "score_se": 0.01, "n_val": 12}', 100, 'res_auto') AS auto_top \gset
SELECT d.run_id = :auto_slow AS slow, d.run_id = :auto_fast AS fast_tied, d.run_id = :auto_top AS new_top,
	   d.strategy, d.active
  FROM easeml.deployments d JOIN easeml.tasks t ON t.id = d.task_id
 WHERE t.name = 'res_auto' ORDER BY d.id;
SET ROLE regress_res_a;
SELECT task, validation_rows, round(resolvable_difference::numeric, 3) AS resolvable, small_validation
  FROM easeml.task_overview WHERE task IN ('res_se', 'res_folded') ORDER BY task;
RESET ROLE;
DROP FUNCTION public.res_scored(text, jsonb, int, text);

-- clean up
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_res\_%';
DROP TABLE public.res_points, public.res_many;
DROP FUNCTION public.res_try(text), public.res_run(text, text, text, float8, boolean);
DELETE FROM easeml.models WHERE name = 'res-custom';
DROP ROLE regress_res_a, regress_res_b;
