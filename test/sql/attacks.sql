-- The attack corpus (issue 8): a tenant, regress_mallory, attacks another,
-- regress_alice, and the service.  Each case says what must happen:
-- 'refused' (an error) or 'harmless' (it runs, and its result, when given,
-- shows it touched nothing of anyone else's).  Every case runs as
-- regress_mallory in a session whose session user is the superuser running
-- this file, as a superuser's "SET ROLE tenant" would (so changing the
-- role or the session authorization directly is the superuser's own power
-- here, and is attacked through view code instead); at the end alice's
-- rows are compared with a snapshot taken before.  Add the attacks on every
-- new function here.
-- (self-contained: what it uses is made here and dropped at the end)
CREATE ROLE regress_alice LOGIN;
CREATE ROLE regress_mallory LOGIN;
SELECT easeml.add_tenant('regress_alice'), easeml.add_tenant('regress_mallory');
CREATE TABLE public.alice_data AS
  SELECT i * 0.5 AS x1, (i % 5)::float8 AS x2, (i % 3)::text AS label FROM generate_series(1, 30) i;
CREATE TABLE public.mallory_data AS SELECT * FROM public.alice_data;
GRANT SELECT ON public.alice_data TO regress_alice;
GRANT SELECT ON public.mallory_data TO regress_mallory;
CREATE SCHEMA regress_mallory AUTHORIZATION regress_mallory;

-- alice's task, with a finished run (result, artifact, decision) and one in flight
SET ROLE regress_alice;
INSERT INTO easeml.tasks (name, source, target) VALUES ('alice_task', 'public.alice_data', 'label');
RESET ROLE;
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'alice_task' AND m.name = 'knn-1';
SELECT easeml_trainer.artifact(r.id, '\x454153454d4c4131'), easeml_trainer.progress(r.id, 1, 0.5)
  FROM easeml.runs r WHERE r.status = 'running';
SELECT easeml._finish_run(r.id, 'succeeded', 0, '{"score": 0.9}', NULL)
  FROM easeml.runs r WHERE r.status = 'running';
INSERT INTO easeml.decisions (task_id, tenant, model_id, run_id, policy)
SELECT r.task_id, r.tenant, r.model_id, r.id, 'fifo' FROM easeml.runs r;
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'alice_task' AND m.name = 'knn-3';
CREATE TEMP TABLE ids AS
SELECT (SELECT id FROM easeml.tasks WHERE name = 'alice_task') AS alice_task,
	   (SELECT id FROM easeml.runs WHERE status = 'succeeded') AS alice_run,
	   (SELECT id FROM easeml.runs WHERE status = 'running') AS alice_running;
GRANT SELECT ON ids TO PUBLIC;

-- mallory's own task, and the tools of her attacks
SET ROLE regress_mallory;
INSERT INTO easeml.tasks (name, source, target) VALUES ('mallory_task', 'public.mallory_data', 'label');
CREATE TABLE regress_mallory.loot (who text);
CREATE FUNCTION regress_mallory.escalate(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	RESET ROLE;
	INSERT INTO regress_mallory.loot VALUES (current_user);
	RETURN x;
END $$;
CREATE FUNCTION regress_mallory.scribble(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO regress_mallory.loot VALUES (current_user);
	RETURN x;
END $$;
CREATE FUNCTION regress_mallory.temp_table(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	CREATE TEMP TABLE IF NOT EXISTS stash (x float8);
	RETURN x;
END $$;
CREATE FUNCTION regress_mallory.guc(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('application_name', 'pwned', false);
	RETURN x;
END $$;
CREATE FUNCTION regress_mallory.become(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	SET SESSION AUTHORIZATION regress_alice;
	RETURN x;
END $$;
CREATE FUNCTION regress_mallory.become_role(x float8) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	SET ROLE regress_alice;
	RETURN x;
END $$;
CREATE VIEW regress_mallory.become_view AS
  SELECT regress_mallory.become(x1) AS x1, x2, label FROM public.mallory_data;
CREATE VIEW regress_mallory.become_role_view AS
  SELECT regress_mallory.become_role(x1) AS x1, x2, label FROM public.mallory_data;
CREATE VIEW regress_mallory.escalate_view AS
  SELECT regress_mallory.escalate(x1) AS x1, x2, label FROM public.mallory_data;
CREATE VIEW regress_mallory.write_view AS
  SELECT regress_mallory.scribble(x1) AS x1, x2, label FROM public.mallory_data;
CREATE VIEW regress_mallory.temp_view AS
  SELECT regress_mallory.temp_table(x1) AS x1, x2, label FROM public.mallory_data;
CREATE VIEW regress_mallory.guc_view AS
  SELECT regress_mallory.guc(x1) AS x1, x2, label FROM public.mallory_data;
CREATE TABLE regress_mallory.evil_cols AS
  SELECT x1 AS "x""); DROP TABLE public.alice_data; --", label FROM public.mallory_data;
-- [data] a table whose rows name alice's task, for easeml's snapshot triggers
CREATE TABLE regress_mallory.fake_tasks (id bigint, tenant name);
-- a table shaped like easeml.runs, for easeml's run-event trigger
CREATE TABLE regress_mallory.fake_runs (id bigint, tenant name, status text, error text);
RESET ROLE;
-- a view whose owner may not read what it shows
CREATE VIEW regress_mallory.alice_view AS SELECT * FROM public.alice_data;
ALTER VIEW regress_mallory.alice_view OWNER TO regress_mallory;

-- [data] alice's snapshot (docs/data.md) before the attacks
CREATE TEMP TABLE snap_before AS
SELECT easeml._snapshot_name(t.id, t.snapshot_version) AS relname, t.snapshot_version
  FROM easeml.tasks t WHERE t.name = 'alice_task';
GRANT SELECT ON snap_before TO PUBLIC;
SELECT format('SELECT md5(string_agg(s::text, %L ORDER BY s::text)) AS snap_md5 FROM easeml_snapshots.%I s',
			  '|', relname) AS q FROM snap_before \gset
:q \gset

-- alice's rows before the attacks
CREATE TEMP TABLE before AS
SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY t.id)) FROM easeml.tasks t WHERE tenant = 'regress_alice') AS tasks,
	   (SELECT md5(string_agg(r::text, '|' ORDER BY r.id)) FROM easeml.runs r WHERE tenant = 'regress_alice') AS runs,
	   (SELECT md5(string_agg(e::text, '|' ORDER BY e.id)) FROM easeml.run_events e WHERE tenant = 'regress_alice') AS events,
	   (SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) FROM easeml.decisions d WHERE tenant = 'regress_alice') AS decisions,
	   (SELECT md5(string_agg(a::text, '|' ORDER BY a.run_id)) FROM easeml.artifacts a WHERE tenant = 'regress_alice') AS artifacts,
	   (SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) FROM easeml.deployments d WHERE tenant = 'regress_alice') AS deployments,
	   (SELECT md5(string_agg(p::text, '|' ORDER BY p.id)) FROM easeml.run_progress p WHERE tenant = 'regress_alice') AS progress,
	   (SELECT md5(string_agg(n::text, '|')) FROM easeml.tenants n WHERE name = 'regress_alice') AS tenant,
	   (SELECT md5(string_agg(m::text, '|' ORDER BY m.id)) FROM easeml.models m) AS models,
	   current_setting('application_name') AS appname;

-- Each case runs as regress_mallory in its own subtransaction.  A case
-- belongs to the section named by regress.section when it is added (the
-- summary at the end counts them by section).
CREATE TEMP TABLE cases (n serial, expect text CHECK (expect IN ('refused', 'harmless')),
						 harmless_if text, sql text,
						 section text DEFAULT nullif(current_setting('regress.section', true), ''));
CREATE FUNCTION pg_temp.attempt(sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	-- queries show their first value; other statements just run
	IF sql ~* '^\s*(SELECT|WITH)\M' THEN
		EXECUTE sql INTO result;
	ELSE
		EXECUTE sql;
	END IF;
	RETURN 'done: ' || coalesce(result, '');
EXCEPTION WHEN others THEN
	RETURN 'refused: ' || SQLSTATE || ': ' || SQLERRM;
END;
$$;
CREATE FUNCTION pg_temp.run_attacks() RETURNS TABLE (n int, expect text, sql text, outcome text, verdict text)
LANGUAGE plpgsql AS $$
DECLARE
	c record;
BEGIN
	FOR c IN SELECT * FROM cases ORDER BY cases.n LOOP
		SET ROLE regress_mallory;
		outcome := pg_temp.attempt(c.sql);
		RESET ROLE;
		n := c.n;
		expect := c.expect;
		sql := c.sql;
		verdict := CASE
			WHEN c.expect = 'refused' AND outcome LIKE 'refused: %' THEN 'as expected'
			WHEN c.expect = 'harmless' AND outcome LIKE 'done: %'
				 AND (c.harmless_if IS NULL OR outcome = 'done: ' || c.harmless_if) THEN 'as expected'
			ELSE 'UNEXPECTED' END;
		RETURN NEXT;
	END LOOP;
END;
$$;

-- reading another tenant's tasks, runs, results and data
SET regress.section = 'reading another tenant''s tasks, runs, results and data';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', '0', $c$SELECT count(*) FROM easeml.tasks WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.tasks WHERE name = 'alice_task'$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.runs WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.runs WHERE id = (SELECT alice_run FROM ids)$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.runs WHERE task_id = (SELECT alice_task FROM ids)$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.run_events WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.decisions WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.artifacts WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.tenants WHERE name <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.leaderboard WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.task_overview WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.cost_estimates WHERE task_id = (SELECT alice_task FROM ids)$c$),
	('harmless', '0', $c$SELECT (easeml._read_source('SELECT count(*) AS n FROM easeml.runs WHERE tenant <> current_user')) ->> 'n'$c$),
	('harmless', '0', $c$SELECT count(*) FROM pg_stat_activity WHERE usename <> current_user AND query NOT IN ('', '<insufficient privilege>')$c$),
	('harmless', '0', $c$SELECT count(*) FROM pg_settings WHERE name IN ('easeml.trainer_conninfo', 'easeml.trainer_path', 'easeml.run_directory')$c$),
	('refused', NULL, $c$SELECT * FROM public.alice_data$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT count(*) AS n FROM public.alice_data')$c$),
	('refused', NULL, $c$SELECT easeml_trainer.spec(alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml_trainer.data_session(alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT pg_read_file('easeml_runs/1/trainer.log')$c$),
	('refused', NULL, $c$COPY easeml.runs TO '/tmp/easeml_runs_copy'$c$),
	('refused', NULL, $c$SELECT current_setting('easeml.trainer_conninfo')$c$),
	('refused', NULL, $c$SELECT lo_import('/etc/passwd')$c$);

-- changing another tenant's tasks and runs
SET regress.section = 'changing another tenant''s tasks and runs';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$INSERT INTO easeml.tasks (tenant, name, source, target) VALUES ('regress_alice', 'planted', 'public.mallory_data', 'label')$c$),
	('harmless', '0', $c$WITH u AS (UPDATE easeml.tasks SET status = 'paused' WHERE tenant = 'regress_alice' RETURNING 1) SELECT count(*) FROM u$c$),
	('harmless', '0', $c$WITH u AS (UPDATE easeml.tasks SET max_runs = 1 WHERE name = 'alice_task' RETURNING 1) SELECT count(*) FROM u$c$),
	('refused', NULL, $c$DELETE FROM easeml.tasks WHERE tenant = 'regress_alice'$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET tenant = 'regress_mallory' WHERE name = 'alice_task'$c$),
	('refused', NULL, $c$INSERT INTO easeml.runs (task_id, model_id) SELECT alice_task, 1 FROM ids$c$),
	('refused', NULL, $c$UPDATE easeml.runs SET cancel_requested = true WHERE tenant = 'regress_alice'$c$),
	('refused', NULL, $c$DELETE FROM easeml.runs WHERE tenant = 'regress_alice'$c$),
	('refused', NULL, $c$SELECT easeml.cancel(alice_running) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml.cancel(alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml.drop_task('alice_task')$c$),
	('refused', NULL, $c$SELECT easeml.enqueue('alice_task', 'knn-5')$c$),
	('refused', NULL, $c$INSERT INTO easeml.run_events (run_id, tenant, status) SELECT alice_run, 'regress_alice', 'failed' FROM ids$c$),
	('refused', NULL, $c$UPDATE easeml.run_events SET status = 'failed'$c$),
	('refused', NULL, $c$DELETE FROM easeml.run_events$c$),
	('refused', NULL, $c$INSERT INTO easeml.artifacts (run_id, tenant, bytes, data) SELECT alice_run, 'regress_alice', 1, '\x00' FROM ids$c$),
	('refused', NULL, $c$UPDATE easeml.artifacts SET data = '\x00'$c$),
	('refused', NULL, $c$INSERT INTO easeml.decisions (task_id, tenant, model_id, policy) SELECT alice_task, 'regress_alice', 1, 'fifo' FROM ids$c$),
	('refused', NULL, $c$DELETE FROM easeml.decisions$c$),
	('refused', NULL, $c$DELETE FROM easeml.tenants WHERE name = 'regress_alice'$c$),
	('refused', NULL, $c$UPDATE easeml.tenants SET max_parallel = 1 WHERE name = 'regress_alice'$c$);

-- posing as the scheduler or the trainer
SET regress.section = 'posing as the scheduler or the trainer';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml._finish_run(alice_running, 'failed', 1, NULL, 'sabotage') FROM ids$c$),
	('refused', NULL, $c$SELECT easeml_trainer.progress(alice_running, 1, 99) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml_trainer.artifact(alice_run, '\x00') FROM ids$c$),
	('refused', NULL, $c$SELECT easeml_trainer.attach(alice_running) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._keep_artifacts(alice_run) FROM ids$c$);

-- taking over the service
SET regress.section = 'taking over the service';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml.add_tenant('regress_mallory', 64)$c$),
	('refused', NULL, $c$SELECT set_config('easeml.policy', 'fifo', false)$c$),
	('refused', NULL, $c$SELECT easeml.wake_scheduler()$c$),
	('refused', NULL, $c$SELECT easeml.load_history('/etc/passwd')$c$),
	('refused', NULL, $c$SELECT * FROM easeml.replay('/etc/passwd')$c$),
	('refused', NULL, $c$SELECT easeml._check_model('knn', '{}', '{classification}', false)$c$),
	('refused', NULL, $c$INSERT INTO easeml.models (name, family) VALUES ('trojan', 'knn')$c$),
	('refused', NULL, $c$UPDATE easeml.models SET enabled = false$c$),
	('refused', NULL, $c$INSERT INTO easeml.history (dataset, model_id, quality) VALUES ('x', 1, 1)$c$),
	('refused', NULL, $c$TRUNCATE easeml.runs$c$),
	('refused', NULL, $c$LOCK TABLE easeml.tasks IN ACCESS EXCLUSIVE MODE$c$),
	('refused', NULL, $c$LOCK TABLE easeml.runs IN SHARE MODE$c$),
	('refused', NULL, $c$SELECT * FROM easeml.runs FOR UPDATE$c$),
	('harmless', '0', $c$SELECT count(*) FROM (SELECT 1 FROM easeml.tasks WHERE tenant = 'regress_alice' FOR UPDATE) l$c$),
	('refused', NULL, $c$ALTER TABLE easeml.runs DISABLE ROW LEVEL SECURITY$c$),
	('refused', NULL, $c$DROP POLICY runs_own ON easeml.runs$c$),
	('refused', NULL, $c$CREATE POLICY open ON easeml.runs FOR SELECT USING (true)$c$),
	('refused', NULL, $c$ALTER FUNCTION easeml.cancel(bigint) SECURITY DEFINER$c$),
	('refused', NULL, $c$CREATE OR REPLACE FUNCTION easeml.enqueue(task text, model text) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'$c$),
	('refused', NULL, $c$CREATE TABLE easeml.planted (x int)$c$),
	('refused', NULL, $c$CREATE TRIGGER planted BEFORE INSERT ON easeml.runs FOR EACH ROW EXECUTE FUNCTION easeml._guard_run()$c$),
	('harmless', NULL, $c$GRANT SELECT ON easeml.runs TO regress_mallory$c$),
	('refused', NULL, $c$ALTER EXTENSION easeml UPDATE$c$),
	('refused', NULL, $c$DROP EXTENSION easeml$c$),
	('refused', NULL, $c$ALTER ROLE regress_mallory BYPASSRLS$c$),
	('refused', NULL, $c$ALTER TABLE easeml.tasks OWNER TO regress_mallory$c$);

-- through the source of her own task, read at declaration
SET regress.section = 'through the source of her own task';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('steal', 'public.alice_data', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('steal2', 'regress_mallory.alice_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('escalate', 'regress_mallory.escalate_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('scribble', 'regress_mallory.write_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('temp', 'regress_mallory.temp_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('become', 'regress_mallory.become_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('become_role', 'regress_mallory.become_role_view', 'label')$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT regress_mallory.escalate(1) AS x')$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT 1) q; DROP TABLE public.alice_data; SELECT (1')$c$),
	('harmless', 'true', $c$SELECT to_regclass('public.alice_data') IS NOT NULL$c$),
	('harmless', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('guc', 'regress_mallory.guc_view', 'label')$c$),
	('harmless', 'true', $c$SELECT current_setting('application_name') <> 'pwned'$c$),
	('harmless', NULL, $c$INSERT INTO easeml.tasks (name, source, target, features) VALUES ('quoted', 'regress_mallory.evil_cols', 'label', ARRAY['x"); DROP TABLE public.alice_data; --'])$c$),
	('harmless', 'true', $c$SELECT to_regclass('public.alice_data') IS NOT NULL$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('x'');DROP TABLE public.alice_data;--', 'public.mallory_data', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('t2', 'public.mallory_data', 'label"); DROP TABLE public.alice_data; --')$c$),
	('harmless', '0', $c$SELECT count(*) FROM regress_mallory.loot$c$);

-- [data] alice's snapshot and easeml's snapshot functions
SET regress.section = 'data: snapshots';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('SELECT count(*) FROM easeml_snapshots.%I', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('DELETE FROM easeml_snapshots.%I', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('INSERT INTO easeml_snapshots.%I (label) VALUES (''x'')', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('TRUNCATE easeml_snapshots.%I', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('DROP TABLE easeml_snapshots.%I', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('ALTER TABLE easeml_snapshots.%I RENAME TO planted', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN EXECUTE format('INSERT INTO easeml.tasks (name, source, target) VALUES (''copy'', %L, ''label'')', 'easeml_snapshots.' || (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$CREATE TABLE easeml_snapshots.planted (x int)$c$),
	('harmless', '0', $c$SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND has_table_privilege(c.oid, 'SELECT') AND c.relname NOT IN (SELECT easeml._snapshot_name(id, snapshot_version) FROM easeml.tasks WHERE snapshot_version IS NOT NULL)$c$),
	('refused', NULL, $c$SELECT easeml.refresh('alice_task')$c$),
	('refused', NULL, $c$SELECT easeml._snapshot_sql(alice_task, 2) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._snapshot_switch(alice_task, 1, 0, 0) FROM ids$c$),
	('refused', NULL, $c$SELECT count(*) FROM easeml._read_rows_as((SELECT oid FROM pg_roles WHERE rolname = 'regress_alice'), 'SELECT 1') AS r(x int)$c$),
	('refused', NULL, $c$CREATE TRIGGER t AFTER INSERT ON regress_mallory.fake_tasks FOR EACH ROW EXECUTE FUNCTION easeml._take_snapshot()$c$),
	('refused', NULL, $c$CREATE TRIGGER t AFTER DELETE ON regress_mallory.fake_tasks FOR EACH ROW EXECUTE FUNCTION easeml._drop_snapshots()$c$),
	('refused', NULL, $c$CREATE TRIGGER t AFTER INSERT ON regress_mallory.fake_runs FOR EACH ROW EXECUTE FUNCTION easeml._log_run_event()$c$),
	('harmless', '0', $c$WITH u AS (UPDATE easeml.tasks SET max_runs = 1 WHERE name = 'alice_task' RETURNING 1) SELECT count(*) FROM u$c$);

-- [results] alice's deployments (docs/results.md)
SET regress.section = 'results: deployments';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', '0', $c$SELECT count(*) FROM easeml.deployments WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.deployments WHERE task_id = (SELECT alice_task FROM ids)$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.deployed WHERE tenant <> current_user$c$),
	('harmless', 'true', $c$SELECT easeml._deployed_run(alice_task) IS NULL FROM ids$c$),
	('refused', NULL, $c$SELECT easeml.deploy('alice_task')$c$),
	('refused', NULL, $c$SELECT easeml.deploy('alice_task', alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml.deploy('mallory_task', alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml.rollback('alice_task')$c$),
	('refused', NULL, $c$SELECT easeml._deploy('regress_alice', 'alice_task', 'best')$c$),
	('refused', NULL, $c$SELECT easeml._rollback('regress_alice', 'alice_task')$c$),
	('refused', NULL, $c$SELECT easeml._activate(alice_task, alice_run, 'run', 'regress_mallory') FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._notify('deployment', alice_task, alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._lock_deployments(alice_task) FROM ids$c$),
	('refused', NULL, $c$INSERT INTO easeml.deployments (task_id, tenant, run_id, strategy, deployed_by) SELECT alice_task, 'regress_alice', alice_run, 'run', 'regress_alice' FROM ids$c$),
	('refused', NULL, $c$UPDATE easeml.deployments SET active = false$c$),
	('refused', NULL, $c$DELETE FROM easeml.deployments$c$),
	('harmless', '0', $c$WITH u AS (UPDATE easeml.tasks SET auto_deploy = false WHERE name = 'alice_task' RETURNING 1) SELECT count(*) FROM u$c$),
	('refused', NULL, $c$CREATE TRIGGER t AFTER UPDATE ON regress_mallory.fake_runs FOR EACH ROW EXECUTE FUNCTION easeml._run_ended()$c$);

-- [results] alice's logs, learning curves and active runs
SET regress.section = 'results: logs, learning curves, active runs';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml.run_log(alice_run) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml.run_log(alice_running, 1048576) FROM ids$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.run_progress WHERE tenant <> current_user$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.run_progress WHERE run_id = (SELECT alice_running FROM ids)$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.active_runs WHERE tenant <> current_user$c$),
	('refused', NULL, $c$SELECT easeml_trainer.progress(alice_running, 9, 0.1, 0.9) FROM ids$c$),
	('refused', NULL, $c$INSERT INTO easeml.run_progress (run_id, tenant, epoch) SELECT alice_running, 'regress_alice', 9 FROM ids$c$),
	('refused', NULL, $c$DELETE FROM easeml.run_progress$c$);

-- [identity] issue 22 §1: temporary objects that shadow the catalog for
-- code running as another identity, temporary and catalog sources, and a
-- fake pg_roles for easeml._is_admin().  regress_mallory.shadow() makes the
-- shadows inside the case (a DO block), so they go with it: a temporary
-- pg_roles saying mallory is role 10, a superuser, and temporary pg_class
-- and pg_namespace mapping her task's source to alice's table.  A harmless
-- case raises if it finds itself fooled.
SET ROLE regress_mallory;
CREATE FUNCTION regress_mallory.shadow() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	CREATE TEMP TABLE pg_roles (oid oid, rolname name, rolsuper bool);
	INSERT INTO pg_temp.pg_roles VALUES (10, current_user, true);
	CREATE TEMP TABLE pg_class AS
	SELECT t.source::oid AS oid, 'alice_data'::name AS relname, 2200::oid AS relnamespace,
		   'r'::"char" AS relkind, 'p'::"char" AS relpersistence
	  FROM easeml.tasks t WHERE t.name = 'mallory_task';
	CREATE TEMP TABLE pg_namespace AS SELECT 2200::oid AS oid, 'public'::name AS nspname;
END $$;
CREATE FUNCTION regress_mallory.unshadow() RETURNS void LANGUAGE sql AS $$
	DROP TABLE pg_temp.pg_roles, pg_temp.pg_class, pg_temp.pg_namespace
$$;
-- a permanent view over a temporary function (it goes with the session)
CREATE FUNCTION pg_temp.ident(x float8) RETURNS float8 LANGUAGE sql AS 'SELECT x';
CREATE VIEW regress_mallory.over_temp AS
  SELECT pg_temp.ident(x1) AS x1, x2, label FROM public.mallory_data;
RESET ROLE;
SET regress.section = 'identity: temp-schema shadowing, temporary and catalog sources';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$DO $d$ BEGIN CREATE TEMP VIEW v AS SELECT * FROM public.mallory_data; INSERT INTO easeml.tasks (name, source, target) VALUES ('tv', 'pg_temp.v', 'label'); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN CREATE TEMP TABLE t AS SELECT * FROM public.mallory_data; INSERT INTO easeml.tasks (name, source, target) VALUES ('tt', 'pg_temp.t', 'label'); END $d$$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('ot', 'regress_mallory.over_temp', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('auth', 'pg_catalog.pg_authid', 'rolname')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('cls', 'pg_catalog.pg_class', 'relkind')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('ist', 'information_schema.tables', 'table_type')$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); INSERT INTO easeml.runs (task_id, model_id) SELECT alice_task, 1 FROM ids; END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); UPDATE easeml.tasks SET status = 'completed' WHERE name = 'mallory_task'; END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml._read_source('SELECT 1 AS x FROM pg_catalog.pg_authid'); END $d$$c$),
	('harmless', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); IF easeml._is_admin() THEN RAISE 'fooled'; END IF; PERFORM regress_mallory.unshadow(); END $d$$c$),
	('harmless', '1', $c$WITH s AS (SELECT regress_mallory.shadow()), r AS (SELECT easeml.refresh('mallory_task') AS v FROM s) SELECT count(*) FROM r, regress_mallory.unshadow() u$c$);

-- [access] issue 22 §2.1: a snapshot is readable, and trainable, only
-- while its tenant may read what it copied (docs/data.md, section 6).
-- mallory snapshots two tables she may read, then loses SELECT on one and
-- sees every row of the other hidden by its policy.
CREATE TABLE public.mallory_revoked AS SELECT * FROM public.mallory_data;
CREATE TABLE public.mallory_rls AS SELECT * FROM public.mallory_data;
ALTER TABLE public.mallory_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY mallory_rows ON public.mallory_rls FOR SELECT TO regress_mallory USING (true);
GRANT SELECT ON public.mallory_revoked, public.mallory_rls TO regress_mallory;
SET ROLE regress_mallory;
INSERT INTO easeml.tasks (name, source, target) VALUES
	('revoked_task', 'public.mallory_revoked', 'label'), ('rls_task', 'public.mallory_rls', 'label');
CREATE FUNCTION regress_mallory.snapshot_rows(task text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT count(*) FROM easeml_snapshots.%I',
				   (SELECT easeml._snapshot_name(id, snapshot_version) FROM easeml.tasks WHERE name = task))
	   INTO n;
	RETURN n;
END $$;
-- before: both snapshots are hers to read
SELECT regress_mallory.snapshot_rows('revoked_task') AS revoked_rows,
	   regress_mallory.snapshot_rows('rls_task') AS rls_rows;
RESET ROLE;
REVOKE SELECT ON public.mallory_revoked FROM regress_mallory;
ALTER POLICY mallory_rows ON public.mallory_rls USING (false);
SET regress.section = 'access: snapshots after access is revoked';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT regress_mallory.snapshot_rows('revoked_task')$c$),
	('refused', NULL, $c$SELECT regress_mallory.snapshot_rows('rls_task')$c$),
	('refused', NULL, $c$SELECT easeml.enqueue('revoked_task', 'knn-1')$c$),
	('refused', NULL, $c$SELECT easeml.enqueue('rls_task', 'knn-1')$c$),
	('refused', NULL, $c$INSERT INTO easeml.runs (task_id, model_id) SELECT t.id, m.id FROM easeml.tasks t, easeml.models m WHERE t.name = 'rls_task' AND m.name = 'knn-3'$c$),
	('refused', NULL, $c$SELECT easeml.refresh('rls_task')$c$),
	('refused', NULL, $c$SELECT easeml.refresh('revoked_task')$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name IN ('rls_task', 'revoked_task')$c$);

-- ===========================================================================
-- [secdata] issue 22, sections 2.3, 2.4, 2.8 and 2.9, and the campaign's
-- cases beyond them: wake-ups, limits, predict, settings, internal
-- functions reached directly or as triggers, cross-tenant ids, hostile
-- strings.  Objects they need are made here.
-- ===========================================================================
SET ROLE regress_mallory;
-- view code that reads a server file, or writes through easeml, at declaration
CREATE VIEW regress_mallory.readfile_view AS
  SELECT x1, x2, label, pg_read_file('/etc/passwd') AS f FROM public.mallory_data;
CREATE VIEW regress_mallory.enqueue_view AS
  SELECT easeml.enqueue('mallory_task', 'gnb')::float8 AS x1, x2, label FROM public.mallory_data;
-- tables shaped like easeml's, for easeml's PUBLIC trigger functions
CREATE TABLE regress_mallory.runs_copy (LIKE easeml.runs);
CREATE TABLE regress_mallory.tasks_copy (LIKE easeml.tasks INCLUDING DEFAULTS);
RESET ROLE;

SET regress.section = 'secdata: wake-ups and settings';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$CREATE TRIGGER wake AFTER INSERT ON regress_mallory.loot FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger()$c$),
	('refused', NULL, $c$CREATE TRIGGER sweep AFTER DELETE ON regress_mallory.loot FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger('sweep')$c$),
	('refused', NULL, $c$SELECT easeml._wake_trigger()$c$),
	('refused', NULL, $c$SET easeml.wake_interval = 0$c$),
	('refused', NULL, $c$SELECT set_config('easeml.wake_interval', '0', false)$c$),
	('refused', NULL, $c$SET easeml.enabled = off$c$),
	('refused', NULL, $c$SET easeml.max_workers = 64$c$),
	('refused', NULL, $c$SELECT set_config('easeml.trainer_path', '/bin/sh', false)$c$),
	('refused', NULL, $c$SET easeml.trainer_conninfo = 'user=regress_mallory'$c$),
	('refused', NULL, $c$SET easeml.run_directory = '/tmp'$c$),
	('refused', NULL, $c$SELECT pg_reload_conf()$c$),
	('refused', NULL, $c$SELECT pg_cancel_backend(pid) FROM easeml.scheduler_status() WHERE pid IS NOT NULL$c$),
	('refused', NULL, $c$SELECT pg_terminate_backend(pid) FROM easeml.scheduler_status() WHERE pid IS NOT NULL$c$),
	('harmless', NULL, $c$SET easeml.predict_cache_models = 1$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.scheduler_status() WHERE last_error IS NOT NULL$c$),
	('harmless', NULL, $c$SELECT pg_notify('easeml_events', '{"event": "run", "run_id": 1, "status": "succeeded"}')$c$);

SET regress.section = 'secdata: limits';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$UPDATE easeml.tenants SET max_rows = NULL WHERE name = current_user$c$),
	('refused', NULL, $c$UPDATE easeml.tenants SET max_tasks = NULL, max_parallel = NULL WHERE name = current_user$c$),
	('refused', NULL, $c$SELECT easeml.set_tenant_limits('regress_mallory')$c$),
	('refused', NULL, $c$SELECT easeml.set_tenant_limits('regress_alice', 1, 1)$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET snapshot = false WHERE name = 'mallory_task'$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET source = 'public.alice_data'::regclass WHERE name = 'mallory_task'$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET n_rows = 1, snapshot_version = NULL WHERE name = 'mallory_task'$c$);

SET regress.section = 'secdata: predict';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml.predict('alice_task', ARRAY[1, 2]::float8[])$c$),
	('refused', NULL, $c$SELECT easeml.predict_proba('alice_task', ARRAY['1', '2'])$c$),
	('refused', NULL, $c$SELECT easeml.predict_value('alice_task', m) FROM public.mallory_data m$c$),
	('refused', NULL, $c$SELECT easeml.predict(U&'alice\005ftask', ARRAY['Infinity', 2]::float8[])$c$),
	('refused', NULL, $c$SELECT easeml.predict('mallory_task', a) FROM public.alice_data a$c$),
	('refused', NULL, $c$SELECT easeml.predict($q$alice_task' OR tenant <> current_user OR name = '$q$, ARRAY[1, 2]::float8[])$c$),
	('harmless', '0', $c$SELECT count(*) FROM generate_series(1, 200) id WHERE easeml._deployed_run(id) IS NOT NULL$c$),
	('harmless', '', $c$SELECT easeml._best_deployable(alice_task) FROM ids$c$);

SET regress.section = 'secdata: cross-tenant ids and hostile strings';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml.cancel(id) FROM generate_series((SELECT alice_running FROM ids), (SELECT alice_running FROM ids) + 5) id$c$),
	('refused', NULL, $c$SELECT easeml.run_log(id) FROM generate_series(1, 200) id$c$),
	('refused', NULL, $c$SELECT easeml.deploy('mallory_task', id) FROM generate_series(1, 200) id$c$),
	('refused', NULL, $c$SELECT e.* FROM ids, easeml.explain(alice_task) e$c$),
	('refused', NULL, $c$SELECT e.* FROM ids, easeml.explain(alice_task, 1000) e$c$),
	('refused', NULL, $c$SELECT easeml_trainer.attach(alice_running, repeat('0', 64)) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml_trainer.result(alice_running, 0, '{"score": 1}', NULL) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml_trainer.command(alice_running) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._own_task('regress_alice', 'alice_task')$c$),
	('refused', NULL, $c$SELECT easeml.refresh('alice_task'' OR true --')$c$),
	('refused', NULL, $c$SELECT easeml.enqueue('mallory_task', 'knn-5''); DELETE FROM easeml.runs; --')$c$),
	('refused', NULL, $c$SELECT easeml.drop_task('alice_task ')$c$),
	('refused', NULL, $c$SELECT easeml.rollback(upper('alice_task'))$c$);

SET regress.section = 'secdata: the service''s admin functions and logs';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml.add_custom_model('trojan', ARRAY['/bin/sh', '-c', 'id > /tmp/easeml_pwned'])$c$),
	('refused', NULL, $c$SELECT easeml.set_device_slots('cpu', 64)$c$),
	('refused', NULL, $c$SELECT easeml.disable_device('cpu')$c$),
	('refused', NULL, $c$SELECT easeml.probe_devices()$c$),
	('refused', NULL, $c$SELECT easeml.grant_trainer('regress_mallory')$c$),
	('refused', NULL, $c$SELECT easeml.set_slurm_partition('evil', 64, 'cpu')$c$),
	('refused', NULL, $c$SELECT easeml._record_probe('{"devices": []}', 1)$c$),
	('refused', NULL, $c$SELECT * FROM easeml.purge_scheduler_log('0')$c$),
	('refused', NULL, $c$SELECT * FROM easeml._purge_scheduler_log('0', NULL)$c$),
	('refused', NULL, $c$SELECT count(*) FROM easeml.trainer_jobs$c$),
	-- [dba] readable (a tenant's pg_dump -n easeml dumps it), with no row but a
	-- superuser's (as easeml.snapshot_drops)
	('harmless', '0', $c$SELECT count(*) FROM easeml.policy_choices$c$),
	('harmless', '0', $c$SELECT count(*) FROM easeml.decision_candidates c JOIN ids ON true WHERE c.decision_id IN (SELECT id FROM easeml.decisions WHERE task_id = ids.alice_task)$c$);

SET regress.section = 'secdata: internal functions, directly and as triggers';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', 'false', $c$SELECT easeml._is_admin()$c$),
	('refused', NULL, $c$SELECT easeml._profile('public.alice_data', 'label', 'classification', '{x1}', '{numeric}', false)$c$),
	('refused', NULL, $c$SELECT easeml._profile('regress_mallory.alice_view', 'label', 'classification', '{x1}', '{numeric}', false)$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT pg_read_file(''/etc/passwd'') AS f')$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT easeml.cancel(' || alice_running || ') AS s') FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT easeml.enqueue(''mallory_task'', ''gnb'') AS r')$c$),
	('refused', NULL, $c$SELECT easeml._read_source('SELECT easeml.drop_task(''mallory_task'') AS r')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('readfile', 'regress_mallory.readfile_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('enqueue', 'regress_mallory.enqueue_view', 'label')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('stats', 'pg_catalog.pg_statistic', 'starelid')$c$),
	('refused', NULL, $c$INSERT INTO easeml.tasks (name, source, target) VALUES ('lo', 'pg_catalog.pg_largeobject', 'pageno')$c$),
	('harmless', NULL, $c$CREATE TRIGGER g BEFORE INSERT ON regress_mallory.runs_copy FOR EACH ROW EXECUTE FUNCTION easeml._guard_run()$c$),
	('refused', NULL, $c$INSERT INTO regress_mallory.runs_copy (task_id, model_id) SELECT alice_task, 1 FROM ids$c$),
	('harmless', NULL, $c$CREATE TRIGGER v BEFORE INSERT ON regress_mallory.tasks_copy FOR EACH ROW EXECUTE FUNCTION easeml._validate_task()$c$),
	('refused', NULL, $c$INSERT INTO regress_mallory.tasks_copy (name, source, target) VALUES ('x', 'public.alice_data', 'label')$c$),
	('refused', NULL, $c$CREATE TRIGGER c AFTER UPDATE ON regress_mallory.fake_runs FOR EACH ROW EXECUTE FUNCTION easeml._run_changed()$c$),
	('harmless', '0', $c$SELECT count(*) FROM regress_mallory.loot$c$);

-- variants of issue 22 section 1 (regress_mallory.shadow() above): with
-- the catalog shadowed, her own declaration reads her own table, and the
-- functions that act on a run or task by name still see only hers
SET regress.section = 'secdata: identity variants';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); INSERT INTO easeml.tasks (name, source, target, features) VALUES ('shadowed', 'public.mallory_data', 'label', '{x1}'); PERFORM regress_mallory.unshadow(); END $d$$c$),
	('harmless', '30', $c$SELECT n_rows FROM easeml.tasks WHERE name = 'shadowed' AND source = 'public.mallory_data'::regclass$c$),
	('harmless', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); IF EXISTS (SELECT 1 FROM easeml.tasks WHERE tenant <> current_user) THEN RAISE 'leak'; END IF; PERFORM regress_mallory.unshadow(); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.predict('alice_task', ARRAY[1, 2]::float8[]); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.run_log(alice_run) FROM ids; END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.deploy('alice_task'); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.cancel(alice_running) FROM ids; END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.set_tenant_limits('regress_mallory'); END $d$$c$);

-- [alter] easeml.alter_task: only the tenant's own tasks, only through the
-- function, and what it reads as the tenant is the tenant's own
SET regress.section = 'alter: changing a task after its declaration';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('refused', NULL, $c$SELECT easeml.alter_task('alice_task', metric => 'log_loss')$c$),
	('refused', NULL, $c$SELECT easeml.alter_task('alice_task', features => '{x1}')$c$),
	('refused', NULL, $c$SELECT easeml.alter_task('alice_task', auto_deploy => false)$c$),
	('refused', NULL, $c$SELECT easeml.alter_task($q$alice_task' OR tenant <> current_user OR name = '$q$, folds => 3)$c$),
	('harmless', '0', $c$WITH u AS (UPDATE easeml.tasks SET metric = 'log_loss' WHERE name = 'alice_task' RETURNING 1) SELECT count(*) FROM u$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET metric = 'log_loss' WHERE name = 'mallory_task'$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET features = '{x1}', folds = 3 WHERE name = 'mallory_task'$c$),
	('refused', NULL, $c$UPDATE easeml.tasks SET features_version = 1, feature_types = '{categorical}' WHERE name = 'mallory_task'$c$),
	('refused', NULL, $c$SELECT easeml._altering(alice_task) FROM ids$c$),
	('refused', NULL, $c$SELECT easeml._apply_alter('regress_alice', t) FROM easeml.tasks t WHERE t.name = 'mallory_task'$c$),
	('refused', NULL, $c$SELECT easeml._apply_alter('regress_mallory', t) FROM easeml.tasks t WHERE t.name = 'mallory_task'$c$),
	('refused', NULL, $c$SELECT easeml._altered_task(alice_task, 'log_loss', NULL, NULL, NULL, 1) FROM ids$c$),
	('refused', NULL, $c$ALTER FUNCTION easeml.alter_task(text, text, text[], int, boolean, float8) SECURITY DEFINER$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.alter_task('alice_task', metric => 'log_loss'); END $d$$c$),
	-- with the catalog shadowed, her own alteration reads her own table
	('harmless', NULL, $c$DO $d$ BEGIN PERFORM regress_mallory.shadow(); PERFORM easeml.alter_task('shadowed', features => '{x1,x2}'); PERFORM regress_mallory.unshadow(); END $d$$c$),
	('harmless', '30', $c$SELECT n_rows FROM easeml.tasks WHERE name = 'shadowed' AND features = '{x1,x2}' AND features_version = snapshot_version$c$),
	('harmless', NULL, $c$DO $d$ BEGIN IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN RAISE 'fooled'; END IF; END $d$$c$);
RESET regress.section;

-- [owner] issue 22 review, finding 1: a tenant's type in a table easeml
-- owns.  ANALYZE (autovacuum's, an administrator's) runs a column type's
-- support functions as the table's owner; a snapshot table's owner is the
-- bootstrap superuser.  mallory's range type has a subtype_diff function
-- that, when it finds itself a superuser, records it in her loot and makes
-- her one; her tasks' targets have that type, its multirange, an array of
-- it, and a domain whose CHECK calls the same code.  The snapshots hold
-- them as text (or the domain's base type), so the ANALYZE of every
-- snapshot table below, as the superuser, runs nothing of hers.
SET ROLE regress_mallory;
CREATE FUNCTION regress_mallory.pwn() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		INSERT INTO regress_mallory.loot VALUES ('superuser ' || current_user);
		ALTER ROLE regress_mallory SUPERUSER;
	END IF;
	RETURN true;
END $$;
CREATE FUNCTION regress_mallory.diff(a float8, b float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM regress_mallory.pwn();
	RETURN a - b;
END $$;
CREATE FUNCTION regress_mallory.fine(v int) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	RETURN regress_mallory.pwn();
END $$;
CREATE TYPE regress_mallory.span AS RANGE (subtype = float8, subtype_diff = regress_mallory.diff);
CREATE DOMAIN regress_mallory.checked AS int CHECK (regress_mallory.fine(VALUE));
CREATE TABLE regress_mallory.spans AS
  SELECT x1, x2, regress_mallory.span(x2, x2 + 1) AS label,
		 regress_mallory.span_multirange(regress_mallory.span(x2, x2 + 1)) AS mlabel,
		 ARRAY[regress_mallory.span(x2, x2 + 1)] AS alabel, (x2::int)::regress_mallory.checked AS dlabel
	FROM public.mallory_data;
INSERT INTO easeml.tasks (name, source, target, features) VALUES
	('span_task', 'regress_mallory.spans', 'label', '{x1}'),
	('mspan_task', 'regress_mallory.spans', 'mlabel', '{x1}'),
	('aspan_task', 'regress_mallory.spans', 'alabel', '{x1}'),
	('dspan_task', 'regress_mallory.spans', 'dlabel', '{x1}');
-- what her snapshots hold
SELECT t.name, a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM easeml.tasks t
  JOIN pg_attribute a ON a.attrelid = format('easeml_snapshots.%I', easeml._snapshot_name(t.id, t.snapshot_version))::regclass
 WHERE t.name LIKE '%span_task' AND a.attnum > 0
 ORDER BY t.name, a.attnum;
RESET ROLE;
SET regress.section = 'secfix: a tenant''s types in tables easeml owns';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', '0', $c$SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND a.attnum > 0 AND a.atttypid >= 16384$c$),
	('harmless', '4', $c$SELECT count(*) FROM easeml.tasks WHERE name LIKE '%span_task' AND n_classes = 5$c$),
	('harmless', '2', $c$SELECT easeml.refresh('span_task')::text$c$);

-- [owner] issue 22 review, finding 4: a view over a snapshot table (any
-- role may make one: a view needs no privilege on what it reads) does not
-- keep the snapshot, or its task, from going.  mallory pins alice's
-- snapshot (alice refreshes it below) and her own, which she then
-- refreshes and drops.
SET ROLE regress_mallory;
INSERT INTO easeml.tasks (name, source, target) VALUES ('pin_task', 'public.mallory_data', 'label');
RESET ROLE;
SET regress.section = 'secfix: views over snapshots';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', NULL, $c$DO $d$ BEGIN EXECUTE format('CREATE VIEW regress_mallory.pin_alice AS SELECT * FROM easeml_snapshots.%I', (SELECT relname FROM snap_before)); END $d$$c$),
	('refused', NULL, $c$SELECT count(*) FROM regress_mallory.pin_alice$c$),
	('harmless', NULL, $c$DO $d$ BEGIN EXECUTE format('CREATE VIEW regress_mallory.pin_own AS SELECT * FROM easeml_snapshots.%I', (SELECT easeml._snapshot_name(id, snapshot_version) FROM easeml.tasks WHERE name = 'pin_task')); END $d$$c$),
	('harmless', '2', $c$SELECT easeml.refresh('pin_task')::text$c$),
	('harmless', '0', $c$SELECT count(*) FROM pg_class WHERE relname = 'pin_own'$c$),
	('harmless', 'true', $c$SELECT easeml.drop_task('pin_task') IS NOT NULL$c$);

-- [settings] issue 22 review, finding 3: the settings of mallory's session
-- do not carry into easeml's statements as the superuser: a snapshot is not
-- made in a tablespace she may not use (default_tablespace), on a
-- declaration nor on a refresh.
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_reserved LOCATION '';
RESET allow_in_place_tablespaces;
SET regress.section = 'secfix: the tenant''s settings in easeml''s statements';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', NULL, $c$DO $d$ BEGIN PERFORM set_config('default_tablespace', 'regress_reserved', true); INSERT INTO easeml.tasks (name, source, target) VALUES ('ts_task', 'public.mallory_data', 'label'); PERFORM set_config('default_tablespace', '', true); END $d$$c$),
	('harmless', NULL, $c$DO $d$ BEGIN PERFORM set_config('default_tablespace', 'regress_reserved', true); PERFORM easeml.refresh('ts_task'); PERFORM set_config('default_tablespace', '', true); END $d$$c$),
	('harmless', '0', $c$SELECT count(*) FROM pg_class WHERE reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'regress_reserved')$c$),
	('harmless', '2', $c$SELECT snapshot_version::text FROM easeml.tasks WHERE name = 'ts_task'$c$);

-- [access] issue 22 review, findings 2 and 5: what the digest of the
-- access rules sees.  (a) A policy TO a role mallory held, with SELECT
-- granted to her directly: she loses the role and reads no row of the
-- source.  (b) A view owned by a superuser over a table whose policy shows
-- one class: it becomes security_invoker, and she reads a third of the
-- rows.  (c) A policy with a timestamptz constant tightened by five hours:
-- her TimeZone five hours off printed the old digest (the digest is made
-- under fixed settings now), and (d) a snapshot declared under another
-- TimeZone stays readable in her own.
CREATE ROLE regress_analysts;
GRANT regress_analysts TO regress_mallory;
CREATE TABLE public.mallory_role AS SELECT * FROM public.mallory_data;
ALTER TABLE public.mallory_role ENABLE ROW LEVEL SECURITY;
CREATE POLICY analysts_rows ON public.mallory_role FOR SELECT TO regress_analysts USING (true);
CREATE TABLE public.mallory_base AS SELECT * FROM public.mallory_data;
ALTER TABLE public.mallory_base ENABLE ROW LEVEL SECURITY;
CREATE POLICY one_class ON public.mallory_base FOR SELECT USING (label = '1');
CREATE VIEW public.mallory_view AS SELECT * FROM public.mallory_base;
CREATE TABLE public.mallory_ts AS
  SELECT d.*, timestamptz '2020-01-01 00:00+00' + i * interval '1 hour' AS ts
	FROM public.mallory_data d, generate_series(0, 9) i;
ALTER TABLE public.mallory_ts ENABLE ROW LEVEL SECURITY;
CREATE POLICY since ON public.mallory_ts FOR SELECT USING (ts >= '2020-01-01 00:00+00');
CREATE TABLE public.mallory_tz AS SELECT * FROM public.mallory_ts;
ALTER TABLE public.mallory_tz ENABLE ROW LEVEL SECURITY;
CREATE POLICY since ON public.mallory_tz FOR SELECT USING (ts >= '2020-01-01 00:00+00');
GRANT SELECT ON public.mallory_role, public.mallory_base, public.mallory_view, public.mallory_ts,
	public.mallory_tz TO regress_mallory;
SET ROLE regress_mallory;
INSERT INTO easeml.tasks (name, source, target, features) VALUES
	('role_task', 'public.mallory_role', 'label', '{x1,x2}'),
	('view_task', 'public.mallory_view', 'label', '{x1,x2}');
SET TimeZone = 'UTC';
SET DateStyle = 'Postgres, MDY';
INSERT INTO easeml.tasks (name, source, target, features) VALUES
	('since_task', 'public.mallory_ts', 'label', '{x1,x2}');
SET TimeZone = 'America/New_York';
INSERT INTO easeml.tasks (name, source, target, features) VALUES
	('tz_task', 'public.mallory_tz', 'label', '{x1,x2}');
RESET TimeZone;
RESET DateStyle;
SELECT regress_mallory.snapshot_rows('role_task') AS role_rows,
	   regress_mallory.snapshot_rows('view_task') AS view_rows,
	   regress_mallory.snapshot_rows('since_task') AS since_rows;
RESET ROLE;
REVOKE regress_analysts FROM regress_mallory;
ALTER VIEW public.mallory_view SET (security_invoker = true);
ALTER POLICY since ON public.mallory_ts USING (ts >= '2020-01-01 05:00+00');
SET regress.section = 'secfix: what the access digest sees';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', '0', $c$SELECT count(*) FROM public.mallory_role$c$),
	('refused', NULL, $c$SELECT regress_mallory.snapshot_rows('role_task')$c$),
	('refused', NULL, $c$SELECT easeml.enqueue('role_task', 'knn-1')$c$),
	('harmless', '10', $c$SELECT count(*) FROM public.mallory_view$c$),
	('refused', NULL, $c$SELECT regress_mallory.snapshot_rows('view_task')$c$),
	('refused', NULL, $c$SELECT easeml.enqueue('view_task', 'knn-1')$c$),
	('refused', NULL, $c$DO $d$ BEGIN PERFORM set_config('TimeZone', 'UTC+5', true); PERFORM set_config('DateStyle', 'Postgres, MDY', true); PERFORM regress_mallory.snapshot_rows('since_task'); END $d$$c$),
	('harmless', '300', $c$SELECT regress_mallory.snapshot_rows('tz_task')$c$);

-- [binding] issue 22 review, finding 6: a tenant's role is dropped (the
-- tenant is not removed) and another role made with its name; mallory
-- may act as the new role.  It sees nothing of the old tenant's and may
-- do nothing with it.
CREATE ROLE regress_ghost LOGIN;
SELECT easeml.add_tenant('regress_ghost');
GRANT SELECT ON public.mallory_data TO regress_ghost;
SET ROLE regress_ghost;
INSERT INTO easeml.tasks (name, source, target, features) VALUES
	('ghost_task', 'public.mallory_data', 'label', '{x1,x2}');
RESET ROLE;
DROP OWNED BY regress_ghost;
DROP ROLE regress_ghost;
CREATE ROLE regress_ghost LOGIN;
GRANT SELECT ON public.mallory_data TO regress_ghost;
GRANT regress_ghost TO regress_mallory;
SET regress.section = 'secfix: a new role with a tenant''s name';
INSERT INTO cases (expect, harmless_if, sql) VALUES
	('harmless', NULL, $c$DO $d$ BEGIN SET LOCAL ROLE regress_ghost; IF (SELECT count(*) FROM easeml.tasks) + (SELECT count(*) FROM easeml.tenants) + (SELECT count(*) FROM easeml.run_events) > 0 THEN RAISE 'sees the old tenant''s rows'; END IF; END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN SET LOCAL ROLE regress_ghost; PERFORM easeml.drop_task('ghost_task'); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN SET LOCAL ROLE regress_ghost; PERFORM easeml.refresh('ghost_task'); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN SET LOCAL ROLE regress_ghost; PERFORM easeml.deploy('ghost_task'); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN SET LOCAL ROLE regress_ghost; PERFORM easeml.enqueue('ghost_task', 'knn-1'); END $d$$c$),
	('refused', NULL, $c$DO $d$ BEGIN SET LOCAL ROLE regress_ghost; INSERT INTO easeml.tasks (name, source, target) VALUES ('ghost_again', 'public.mallory_data', 'label'); END $d$$c$),
	('harmless', '1', $c$SELECT count(*) FROM pg_roles r JOIN pg_auth_members m ON m.roleid = r.oid WHERE r.rolname = 'regress_ghost'$c$);
RESET regress.section;

CREATE TEMP TABLE results AS SELECT * FROM pg_temp.run_attacks();
-- [owner] ANALYZE every snapshot table as the superuser, as autovacuum
-- would (its finding is in mallory_privileged and loot below)
DO $$
DECLARE
	rel text;
BEGIN
	FOR rel IN SELECT c.relname FROM pg_class c
				WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND c.relkind = 'r' LOOP
		EXECUTE format('ANALYZE easeml_snapshots.%I', rel);
	END LOOP;
END $$;
SELECT count(DISTINCT tablename) >= 10 AS snapshots_analyzed,
	   count(*) FILTER (WHERE attname IN ('label', 'mlabel', 'alabel', 'dlabel')) >= 8 AS targets_analyzed
  FROM pg_stats WHERE schemaname = 'easeml_snapshots';
\x on
-- (ids of runs and tasks depend on what ran before: shown as <id>; so
-- does the number of the session's temporary schema)
SELECT n, expect, sql,
	   regexp_replace(regexp_replace(regexp_replace(outcome, '(run|task) [0-9]+ ', '\1 <id> ', 'g'),
					  'task_[0-9]+_v', 'task_<id>_v', 'g'), 'pg_temp_[0-9]+', 'pg_temp_<n>', 'g') AS outcome, verdict
  FROM results ORDER BY n;
\x off
SELECT count(*) AS attacks,
	   count(*) FILTER (WHERE expect = 'refused') AS refused,
	   count(*) FILTER (WHERE expect = 'harmless') AS harmless,
	   count(*) FILTER (WHERE verdict <> 'as expected') AS unexpected
  FROM results;
-- the campaign by section, and its size (issue 22: at least 180 attacks,
-- each refused or harmless as classified)
SELECT coalesce(c.section, '(none)') AS section, count(*) AS attacks,
	   count(*) FILTER (WHERE r.expect = 'refused') AS refused,
	   count(*) FILTER (WHERE r.expect = 'harmless') AS harmless,
	   count(*) FILTER (WHERE r.verdict <> 'as expected') AS unexpected
  FROM results r JOIN cases c ON c.n = r.n
 GROUP BY c.section ORDER BY min(r.n);
SELECT count(*) >= 180 AS at_least_180_attacks,
	   count(*) FILTER (WHERE verdict <> 'as expected') = 0 AS each_as_classified
  FROM results;

-- nothing of alice's changed, and mallory's view code left no trace
SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY t.id)) FROM easeml.tasks t WHERE tenant = 'regress_alice') = b.tasks AS tasks_unchanged,
	   (SELECT md5(string_agg(r::text, '|' ORDER BY r.id)) FROM easeml.runs r WHERE tenant = 'regress_alice') = b.runs AS runs_unchanged,
	   (SELECT md5(string_agg(e::text, '|' ORDER BY e.id)) FROM easeml.run_events e WHERE tenant = 'regress_alice') = b.events AS events_unchanged,
	   (SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) FROM easeml.decisions d WHERE tenant = 'regress_alice') = b.decisions AS decisions_unchanged,
	   (SELECT md5(string_agg(a::text, '|' ORDER BY a.run_id)) FROM easeml.artifacts a WHERE tenant = 'regress_alice') = b.artifacts AS artifacts_unchanged,
	   (SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) FROM easeml.deployments d WHERE tenant = 'regress_alice') = b.deployments AS deployments_unchanged,
	   (SELECT md5(string_agg(p::text, '|' ORDER BY p.id)) FROM easeml.run_progress p WHERE tenant = 'regress_alice') = b.progress AS progress_unchanged,
	   (SELECT md5(string_agg(n::text, '|')) FROM easeml.tenants n WHERE name = 'regress_alice') = b.tenant AS tenant_unchanged,
	   (SELECT md5(string_agg(m::text, '|' ORDER BY m.id)) FROM easeml.models m) = b.models AS models_unchanged,
	   current_setting('application_name') = b.appname AS settings_unchanged,
	   current_user = session_user AS identity_restored,
	   (SELECT count(*) FROM regress_mallory.loot) AS loot,
	   (SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = 'regress_mallory') AS mallory_privileged
  FROM before b;

-- [owner] Nothing of a tenant's runs as the superuser because of an
-- object easeml owns (docs/security.md, "What runs as the superuser"):
-- every column of every relation in easeml and easeml_snapshots has a type
-- made by initdb (object id below 16384) or by the extension, and the
-- relations, their indexes, defaults, constraints, triggers, policies and
-- rules depend on nothing else but each other.  No row means none breaks
-- the rule; then the scan's size (a rule over nothing proves nothing).
WITH rels AS (
	SELECT c.oid FROM pg_class c
	 WHERE c.relnamespace IN ('easeml'::regnamespace, 'easeml_snapshots'::regnamespace)),
ext AS (
	SELECT d.classid, d.objid FROM pg_depend d
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'easeml')),
objs(classid, objid) AS (
	SELECT 'pg_class'::regclass, oid FROM rels
	UNION ALL SELECT 'pg_class'::regclass, indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM rels)
	UNION ALL SELECT 'pg_attrdef'::regclass, oid FROM pg_attrdef WHERE adrelid IN (SELECT oid FROM rels)
	UNION ALL SELECT 'pg_constraint'::regclass, oid FROM pg_constraint WHERE conrelid IN (SELECT oid FROM rels)
	UNION ALL SELECT 'pg_trigger'::regclass, oid FROM pg_trigger WHERE tgrelid IN (SELECT oid FROM rels)
	UNION ALL SELECT 'pg_policy'::regclass, oid FROM pg_policy WHERE polrelid IN (SELECT oid FROM rels)
	UNION ALL SELECT 'pg_rewrite'::regclass, oid FROM pg_rewrite WHERE ev_class IN (SELECT oid FROM rels))
SELECT 'column ' || a.attrelid::regclass || '.' || a.attname AS object,
	   format_type(a.atttypid, NULL) AS uses
  FROM pg_attribute a
 WHERE a.attrelid IN (SELECT oid FROM rels) AND a.attnum > 0 AND NOT a.attisdropped
   AND a.atttypid >= 16384
   AND a.atttypid NOT IN (SELECT objid FROM ext WHERE classid = 'pg_type'::regclass)
   AND a.atttypid NOT IN (SELECT t.typarray FROM pg_type t JOIN ext ON ext.objid = t.oid
							WHERE ext.classid = 'pg_type'::regclass)
UNION ALL
SELECT pg_describe_object(d.classid, d.objid, d.objsubid),
	   pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid)
  FROM pg_depend d JOIN objs o ON o.classid = d.classid AND o.objid = d.objid
 WHERE d.refobjid >= 16384
   AND (d.refclassid, d.refobjid) NOT IN (SELECT classid, objid FROM ext)
   AND (d.refclassid, d.refobjid) NOT IN (SELECT classid, objid FROM objs)
   AND NOT (d.refclassid = 'pg_namespace'::regclass
			AND d.refobjid IN ('easeml'::regnamespace, 'easeml_snapshots'::regnamespace))
   AND NOT (d.refclassid = 'pg_extension'::regclass
			AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'easeml'))
 ORDER BY 1, 2;
SELECT count(*) FILTER (WHERE c.relnamespace = 'easeml_snapshots'::regnamespace) >= 10 AS snapshots_scanned,
	   count(*) >= 30 AS relations_scanned,
	   (SELECT count(*) FROM pg_attribute a JOIN pg_class c2 ON c2.oid = a.attrelid
		 WHERE c2.relnamespace IN ('easeml'::regnamespace, 'easeml_snapshots'::regnamespace)
		   AND a.attnum > 0) >= 300 AS columns_scanned
  FROM pg_class c
 WHERE c.relnamespace IN ('easeml'::regnamespace, 'easeml_snapshots'::regnamespace);

-- [data] alice's snapshot is untouched
SELECT format('SELECT md5(string_agg(s::text, %L ORDER BY s::text)) = %L AS snapshot_unchanged FROM easeml_snapshots.%I s',
			  '|', :'snap_md5', relname) AS q FROM snap_before \gset
:q;
SELECT t.snapshot_version = b.snapshot_version AS snapshot_version_unchanged
  FROM easeml.tasks t, snap_before b WHERE t.name = 'alice_task';

-- [secdata] the attempts to run a command wrote no file
SELECT pg_stat_file('/tmp/easeml_pwned', true) IS NULL AS no_file_written;

-- [owner] mallory's view over alice's snapshot does not keep alice from
-- refreshing her task (the view goes with the old version), and alice is
-- not told its name (t/054 holds a lock on such a view)
SET ROLE regress_alice;
SELECT easeml.refresh('alice_task') AS alice_refreshed;
RESET ROLE;
SELECT count(*) AS pin_alice_left FROM pg_class WHERE relname = 'pin_alice';

-- the column name mallory chose is quoted in the trainer's COPY query
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'quoted' AND m.name = 'knn-5';
SELECT regexp_replace(s ->> 'copy_query', 'task_[0-9]+_v', 'task_<id>_v') AS copy_query
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id, easeml_trainer.spec(r.id) s
 WHERE t.name = 'quoted';

-- clean up
DELETE FROM easeml.tenants WHERE name IN ('regress_alice', 'regress_mallory', 'regress_ghost');
DROP SCHEMA regress_mallory CASCADE;
DROP TABLE public.alice_data, public.mallory_data;
DROP TABLE public.mallory_revoked, public.mallory_rls;
DROP VIEW public.mallory_view;
DROP TABLE public.mallory_role, public.mallory_base, public.mallory_ts, public.mallory_tz;
DROP TABLESPACE regress_reserved;
DROP OWNED BY regress_alice, regress_mallory;
DROP OWNED BY regress_ghost;
DROP ROLE regress_alice, regress_mallory, regress_analysts, regress_ghost;
