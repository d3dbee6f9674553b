-- Admin functions and how the scheduler records results.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_lab_a LOGIN;
CREATE ROLE regress_lab_b LOGIN;
SELECT easeml.add_tenant('regress_lab_a');
SELECT easeml.add_tenant('regress_lab_b');
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

-- the default is auto: its fallback, popular (the users' heuristic), runs
-- until the scheduler has chosen by replay on the history (no choice here:
-- the test database has no worker), and policy_status says so, with the
-- spec the setting's name stands for and what auto chooses among
SHOW easeml.policy;
SELECT setting, spec, auto, running, chosen, fallback, on_fallback FROM easeml.policy_status;
SELECT auto_candidates = easeml._policy_candidates() AS candidates_from_c,
	   auto_candidates LIKE '%popular%' AS popular_among_them
  FROM easeml.policy_status;
-- tenants cannot read it
SET ROLE regress_lab_a;
SELECT try($$SELECT * FROM easeml.policy_status$$);
RESET ROLE;
-- the setting is the one source of the policy: there is no set_policy and
-- no settings row that could override it (t/018 changes it live)
SELECT count(*) AS set_policy FROM pg_proc WHERE proname = 'set_policy';
SELECT to_regclass('easeml.settings') AS settings_table;
-- what a setting stands for, and whether it is auto: the parser's answer
SELECT p, easeml.policy_spec(p) AS spec, easeml._policy_auto(p) AS auto
  FROM unnest(ARRAY['default', 'auto:w=60', 'tenant_bo', 'tenant_bo:w=3', 'fifo',
					'hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2']) p;
SELECT try($$SELECT easeml.policy_spec('sometimes')$$);
-- the options, from the table the parser reads
SELECT name, type, default_value, "values" FROM easeml.policy_options();
-- after auto an option applies to every candidate (and so to its choice)
-- or is refused: it selects what auto chooses
SELECT name, after_auto FROM easeml.policy_options();
-- what an auto setting runs: its choice's candidate (NULL: none yet, the
-- fallback) with the setting's options, whatever options the choice was
-- recorded with; NULL for a setting that is not auto
SELECT easeml._policy_running(p, c) AS running
  FROM (VALUES ('auto:w=60', NULL),
			   ('default:s=3:w=5:w=60:qmax=0.99', NULL),
			   ('auto:w=60', split_part(easeml._policy_candidates(), ',', 1)),
			   ('auto:qarm=0', split_part(easeml._policy_candidates(), ',', 1) || ':w=5'),
			   ('auto', 'popular:w=60'),
			   ('auto:w=60', 'gone_candidate:w=1'),
			   ('hybrid:w=60', NULL)) v(p, c);
-- the setting checks a spec: every kept option, the history mixture's
-- included, runs live; a bad value says what the option takes; an option
-- that is gone (mpl, the two-run plan; la; beta) is no option
ALTER SYSTEM SET easeml.policy = 'hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2';
ALTER SYSTEM SET easeml.policy = 'hybrid:cost:w=60:s=3:greedy=max_gap:qmax=1:qarm=0';
ALTER SYSTEM RESET easeml.policy;
ALTER SYSTEM SET easeml.policy = 'sometimes';
ALTER SYSTEM SET easeml.policy = 'rr:cost:acq=mix:mgp=2';
ALTER SYSTEM SET easeml.policy = 'rr:cost:acq=mix:mpl=2';
ALTER SYSTEM SET easeml.policy = 'max_ei:cost:la=3';
ALTER SYSTEM SET easeml.policy = 'rr:beta=2';
-- after auto: the task- and tenant-level options are accepted, those that
-- select what auto chooses are refused with the reason (22023, a hint)
ALTER SYSTEM SET easeml.policy = 'auto:w=60:s=3:qmax=0.99:qarm=0';
ALTER SYSTEM SET easeml.policy = 'default:w=60';
ALTER SYSTEM RESET easeml.policy;
\set VERBOSITY sqlstate
ALTER SYSTEM SET easeml.policy = 'auto:acq=ei';
\set VERBOSITY default
ALTER SYSTEM SET easeml.policy = 'auto:acq=ei';
ALTER SYSTEM SET easeml.policy = 'default:cost';
ALTER SYSTEM SET easeml.policy = 'auto:w=60:xg=1.5';
-- easeml.beta, easeml.cost_aware and easeml.fairness_window are gone (the
-- spec carries cost and w=): setting one is an error, not silently ignored
SELECT name FROM pg_settings WHERE name IN ('easeml.beta', 'easeml.cost_aware', 'easeml.fairness_window');
ALTER SYSTEM SET easeml.fairness_window = 10;

-- the scheduler's status comes from shared memory
SELECT max_workers FROM easeml.scheduler_status();

-- the trainer's spec: quoted identifiers, features cast to float8
INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at)
SELECT t.id, t.tenant, m.id, 'running', now()
  FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'points' AND m.name = 'knn-15';
SELECT regexp_replace(s->>'copy_query', 'task_\d+_v', 'task_N_v') AS copy_query, s->>'family' AS family, s->'params' AS params,
	   s->>'kind' AS kind, s->'features' AS features
  FROM easeml.runs r, easeml_trainer.spec(r.id) s
 WHERE r.status = 'running';
-- the data session only works inside a transaction block
SELECT try(format('SELECT easeml_trainer.data_session(%s)', (SELECT id FROM easeml.runs WHERE status = 'running')));
BEGIN;
SELECT easeml_trainer.data_session(id) FROM easeml.runs WHERE status = 'running';
SELECT current_user;
SELECT try('RESET ROLE');
SELECT try($$SELECT set_config('role', 'postgres', false)$$);
SELECT try('SET SESSION AUTHORIZATION DEFAULT');
ROLLBACK;
SELECT current_user = session_user AS identity_restored;

-- progress while training
SELECT easeml_trainer.progress(id, 3, 0.25) FROM easeml.runs WHERE status = 'running';
SELECT epoch, loss, progress_at IS NOT NULL AS has_time FROM easeml.runs WHERE status = 'running';

-- results: bad trainer output fails the run, it never stays running
SELECT easeml._finish_run(id, 'succeeded', 0, 'not json', NULL) FROM easeml.runs WHERE status = 'running';
SELECT status, score, left(error, 36) AS error FROM easeml.runs WHERE model_id = (SELECT id FROM easeml.models WHERE name = 'knn-15');
INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at)
SELECT t.id, t.tenant, m.id, 'running', now()
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'points' AND m.name = 'mlp-64';
SELECT easeml._finish_run(id, 'succeeded', 0, '{"epochs": 3}', NULL) FROM easeml.runs WHERE status = 'running';
INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at)
SELECT t.id, t.tenant, m.id, 'running', now()
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'points' AND m.name = 'softmax-l2-1';
SELECT easeml._finish_run(id, 'succeeded', 0, '{"score": 0.875, "n_val": 8}', NULL) FROM easeml.runs WHERE status = 'running';
INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at)
SELECT t.id, t.tenant, m.id, 'running', now()
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'points' AND m.name = 'knn-1';
SELECT easeml._finish_run(id, 'failed', 137, NULL, 'trainer was terminated by signal 9 (Killed)') FROM easeml.runs WHERE status = 'running';
SELECT m.name, r.status, r.score, r.exit_code, r.error, r.seconds >= 0 AS timed
  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
 WHERE r.task_id = (SELECT id FROM easeml.tasks WHERE name = 'points')
 ORDER BY r.id;
-- finished runs cannot be finished again
SELECT easeml._finish_run(max(id), 'succeeded', 0, '{"score": 1}', NULL) FROM easeml.runs;
SELECT status, score FROM easeml.runs WHERE id = (SELECT max(id) FROM easeml.runs);
-- every status change is in run_events
SELECT m.name, string_agg(e.status, ' -> ' ORDER BY e.id) AS history
  FROM easeml.run_events e JOIN easeml.runs r ON r.id = e.run_id JOIN easeml.models m ON m.id = r.model_id
 GROUP BY r.id, m.name ORDER BY r.id;

-- the leaderboard
SELECT task, tenant, rank, model, family, score FROM easeml.leaderboard ORDER BY task, rank;
SET ROLE regress_lab_b;
SELECT count(*) AS other_tenants_rows FROM easeml.leaderboard;
RESET ROLE;

-- cost estimates: the scheduler's; basis measured for what ran, else estimated
SELECT m.name, c.basis, c.seconds > 0 AS positive
  FROM easeml.cost_estimates c JOIN easeml.tasks t ON t.id = c.task_id JOIN easeml.models m ON m.id = c.model_id
 WHERE t.name IN ('points', 'b_points') AND m.name IN ('softmax-l2-1', 'knn-5')
 ORDER BY t.name, m.name;

-- artifacts: small ones stay with every succeeded run, ones above
-- easeml.artifact_max_bytes (16MB here) only with the task's best run and
-- its deployments (the active one and the one a rollback returns to,
-- docs/results.md), and runs that did not succeed keep none
CREATE FUNCTION pg_temp.run_with_artifact(model text, bytes int, how text, score float8)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	rid bigint;
BEGIN
	INSERT INTO easeml.runs (task_id, model_id, status, started_at)
	SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
	 WHERE t.name = 'points_y' AND m.name = model
	RETURNING id INTO rid;
	PERFORM easeml_trainer.artifact(rid, convert_to('EASEMLA1', 'UTF8') || decode(repeat('00', bytes - 8), 'hex'));
	PERFORM easeml._finish_run(rid, how, 0, CASE WHEN how = 'succeeded' THEN format('{"score": %s}', score) END,
							   CASE WHEN how = 'failed' THEN 'test failure' END);
END $$;
SELECT pg_temp.run_with_artifact('ridge-1', 100, 'succeeded', 0.5);
SELECT pg_temp.run_with_artifact('ridge-10', 17000000, 'succeeded', 0.7);
SELECT m.name, a.bytes FROM easeml.artifacts a JOIN easeml.runs r ON r.id = a.run_id
  JOIN easeml.models m ON m.id = r.model_id ORDER BY r.id;
SELECT pg_temp.run_with_artifact('ridge-100', 17000000, 'succeeded', 0.9);
SELECT pg_temp.run_with_artifact('knn-1', 200, 'failed', NULL);
SELECT m.name, r.status, r.score, a.bytes
  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
  LEFT JOIN easeml.artifacts a ON a.run_id = r.id
 WHERE r.task_id = (SELECT id FROM easeml.tasks WHERE name = 'points_y')
 ORDER BY r.id;

-- clean up
RESET ROLE;
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_%';
DROP TABLE public.points;
DROP OWNED BY regress_lab_a, regress_lab_b;
DROP ROLE regress_lab_a, regress_lab_b;
