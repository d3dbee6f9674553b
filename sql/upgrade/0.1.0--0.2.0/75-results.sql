-- ===========================================================================
-- Results: deployments, events (docs/results.md; src/sql/sql_deploy.c)
--
-- The same block ends sql/easeml.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

-- Tasks deploy their best run automatically unless told not to.
ALTER TABLE easeml.tasks
	ADD COLUMN auto_deploy boolean NOT NULL DEFAULT true;
GRANT INSERT (auto_deploy), UPDATE (auto_deploy) ON easeml.tasks TO PUBLIC;

-- Which run of a task serves predictions.  Every deployment is a row, and
-- rows are never deleted (but with their task): the one active row is
-- what predict uses; a rollback marks the active row rolled back and
-- makes the latest earlier row that was not rolled back active again.
-- task_id is the run's task; the rows go with the run (and so with the
-- task).  No foreign key to tasks: checking it would share-lock the task
-- row, which its tenant may hold locked, and the scheduler deploys a new
-- best run in the statement that records its end.
CREATE TABLE easeml.deployments (
	id			bigserial PRIMARY KEY,
	task_id		bigint NOT NULL,
	tenant		name NOT NULL,
	run_id		bigint NOT NULL REFERENCES easeml.runs (id) ON DELETE CASCADE,
	strategy	text NOT NULL CHECK (strategy IN ('best', 'latest', 'run', 'auto')),
	deployed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	deployed_by name NOT NULL,
	active		boolean NOT NULL DEFAULT true,
	rolled_back_at timestamptz,
	rolled_back_by name,
	CHECK (NOT (active AND rolled_back_at IS NOT NULL))
);
CREATE UNIQUE INDEX deployments_active_idx ON easeml.deployments (task_id) WHERE active;
CREATE INDEX deployments_task_idx ON easeml.deployments (task_id, id);
CREATE INDEX deployments_run_idx ON easeml.deployments (run_id);
COMMENT ON TABLE easeml.deployments IS
	'every deployment of every task: the active row names the run predict uses; rolled-back rows say when and by whom';

ALTER TABLE easeml.deployments ENABLE ROW LEVEL SECURITY;
CREATE POLICY deployments_own ON easeml.deployments FOR SELECT USING (tenant = current_user);
GRANT SELECT ON easeml.deployments TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.deployments_id_seq TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.deployments', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.deployments_id_seq', '');

-- One event on channel easeml_events (docs/results.md).  Every role of the
-- database may LISTEN to any channel, so the payload carries ids only: a
-- tenant resolves the ids of its own tasks and runs through the RLS
-- views, and learns nothing of another tenant's but that some id moved.
CREATE FUNCTION easeml._notify(event text, task_id bigint, run_id bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
	SELECT pg_notify('easeml_events',
					 json_build_object('event', event, 'task_id', task_id, 'run_id', run_id)::text)
$$;

-- The best run of a task that can serve predictions: the leaderboard's
-- order (current snapshot first, then score, then speed), among the
-- succeeded runs whose artifact is kept and that easeml.predict can read
-- (a custom trainer's artifact is its own format).
CREATE FUNCTION easeml._best_deployable(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT r.id
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	  JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.task_id = _best_deployable.task_id AND r.status = 'succeeded' AND r.score IS NOT NULL
	   AND m.family <> 'external'
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = r.id)
	 ORDER BY r.snapshot_version IS DISTINCT FROM t.snapshot_version, r.score DESC, r.seconds, r.id
	 LIMIT 1
$$;

-- The run whose artifact predicts for a task: its active deployment, else
-- its best deployable run (a task whose auto_deploy is off and that was
-- never deployed); NULL when it has none.
CREATE OR REPLACE FUNCTION easeml._deployed_run(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT coalesce((SELECT d.run_id FROM easeml.deployments d
					  WHERE d.task_id = _deployed_run.task_id AND d.active),
					easeml._best_deployable(_deployed_run.task_id))
$$;
COMMENT ON FUNCTION easeml._deployed_run(bigint) IS
	'the run that predicts for a task: its active deployment, else its best run with an artifact';

-- Make a run the active deployment of its task; the callers checked it.
CREATE FUNCTION easeml._activate(task_id bigint, run_id bigint, strategy text, by name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
	UPDATE easeml.deployments d SET active = false
	 WHERE d.task_id = _activate.task_id AND d.active;
	INSERT INTO easeml.deployments (task_id, tenant, run_id, strategy, deployed_by)
	SELECT t.id, t.tenant, _activate.run_id, _activate.strategy, _activate.by
	  FROM easeml.tasks t WHERE t.id = _activate.task_id;
	PERFORM easeml._notify('deployment', task_id, run_id);
END;
$$;

-- One task's deployments change one at a time: deploy, rollback and the
-- automatic deployment of a finished run wait for each other here.
CREATE FUNCTION easeml._lock_deployments(task_id bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
	SELECT pg_advisory_xact_lock(hashtextextended('easeml.deployments', task_id))
$$;

-- A task of the caller's by name, or an error that says which tasks exist.
CREATE FUNCTION easeml._own_task(caller name, task text)
RETURNS easeml.tasks
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
	t			easeml.tasks;
BEGIN
	IF task IS NULL THEN
		RAISE EXCEPTION 'task must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass the name of one of your tasks: SELECT name FROM easeml.tasks lists them.';
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE tenant = caller AND name = task;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" does not exist for tenant "%"', task, caller
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	RETURN t;
END;
$$;

-- easeml.deploy as the caller (src/sql/sql_deploy.c calls it as the bootstrap
-- superuser with the caller's role): what is 'best', 'latest' or a run id
-- in decimal.  Returns the deployed run's id.
CREATE FUNCTION easeml._deploy(caller name, task text, what text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	t			easeml.tasks;
	r			easeml.runs;
	rid			bigint;
	strategy	text;
	current		bigint;
BEGIN
	t := easeml._own_task(caller, task);
	IF what IS NULL THEN
		RAISE EXCEPTION 'what to deploy must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass ''best'', ''latest'' or a run id.';
	END IF;
	PERFORM easeml._lock_deployments(t.id);
	IF what = 'best' THEN
		strategy := 'best';
		rid := easeml._best_deployable(t.id);
	ELSIF what = 'latest' THEN
		strategy := 'latest';
		SELECT r2.id INTO rid FROM easeml.runs r2 JOIN easeml.models m ON m.id = r2.model_id
		 WHERE r2.task_id = t.id AND r2.status = 'succeeded' AND m.family <> 'external'
		   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = r2.id)
		 ORDER BY r2.finished_at DESC, r2.id DESC LIMIT 1;
	ELSIF what ~ '^[0-9]{1,18}$' THEN
		strategy := 'run';
		rid := what::bigint;
	ELSE
		RAISE EXCEPTION 'cannot deploy "%"', what
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass ''best'', ''latest'' or a run id.';
	END IF;
	IF rid IS NULL THEN
		RAISE EXCEPTION 'task "%" has no succeeded run with a stored artifact yet', t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Wait for a run to succeed: SELECT * FROM easeml.task_overview shows the progress.';
	END IF;

	-- a run of another task, or of another tenant, is one this task lacks
	SELECT * INTO r FROM easeml.runs r2 WHERE r2.id = rid AND r2.task_id = t.id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'run % is not a run of task "%"', rid, t.name
			USING ERRCODE = 'undefined_object',
				  HINT = format('SELECT run_id, model, score FROM easeml.leaderboard WHERE task = %L lists its succeeded runs.', t.name);
	END IF;
	IF r.status <> 'succeeded' THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: it is %', rid, t.name, r.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Only succeeded runs can be deployed; easeml.leaderboard lists them.';
	END IF;
	IF (SELECT m.family FROM easeml.models m WHERE m.id = r.model_id) = 'external' THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: a custom trainer trained it', rid, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'easeml.predict reads the artifacts of the built-in families only; deploy a run of one of them.';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = rid) THEN
		RAISE EXCEPTION 'run % of task "%" has no stored artifact', rid, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Its trained parameters were not kept (see easeml.artifact_max_bytes); deploy another run.';
	END IF;

	SELECT d.run_id INTO current FROM easeml.deployments d WHERE d.task_id = t.id AND d.active;
	IF current = rid THEN
		RAISE NOTICE 'task "%" deploys this run already', t.name;
		RETURN rid;
	END IF;
	PERFORM easeml._activate(t.id, rid, strategy, caller);
	IF t.auto_deploy AND rid IS DISTINCT FROM easeml._best_deployable(t.id) THEN
		RAISE NOTICE 'task "%" deploys its best run automatically: a better run that finishes will replace this one', t.name
			USING HINT = format('UPDATE easeml.tasks SET auto_deploy = false WHERE name = %L keeps this deployment.', t.name);
	END IF;
	RETURN rid;
END;
$$;

-- easeml.rollback as the caller: the active deployment is rolled back and
-- the latest earlier one that was not, and whose run still has its
-- artifact, is active again.  Returns that run's id.
CREATE FUNCTION easeml._rollback(caller name, task text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	t			easeml.tasks;
	cur			easeml.deployments;
	prev		easeml.deployments;
BEGIN
	t := easeml._own_task(caller, task);
	PERFORM easeml._lock_deployments(t.id);
	SELECT * INTO cur FROM easeml.deployments d WHERE d.task_id = t.id AND d.active;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" has no active deployment to roll back', t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('SELECT easeml.deploy(%L, ''best'') deploys its best run.', t.name);
	END IF;
	SELECT * INTO prev FROM easeml.deployments d
	 WHERE d.task_id = t.id AND d.id < cur.id AND d.rolled_back_at IS NULL
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = d.run_id)
	 ORDER BY d.id DESC LIMIT 1;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" has no earlier deployment to roll back to', t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('SELECT * FROM easeml.deployments WHERE task_id = %s shows its deployments; easeml.deploy picks another run.', t.id);
	END IF;
	UPDATE easeml.deployments d
	   SET active = false, rolled_back_at = clock_timestamp(), rolled_back_by = caller
	 WHERE d.id = cur.id;
	UPDATE easeml.deployments d SET active = true WHERE d.id = prev.id;
	PERFORM easeml._notify('deployment', t.id, prev.run_id);
	IF t.auto_deploy AND prev.run_id IS DISTINCT FROM easeml._best_deployable(t.id) THEN
		RAISE NOTICE 'task "%" deploys its best run automatically: a better run that finishes will replace this one', t.name
			USING HINT = format('UPDATE easeml.tasks SET auto_deploy = false WHERE name = %L keeps this deployment.', t.name);
	END IF;
	RETURN prev.run_id;
END;
$$;

CREATE FUNCTION easeml.deploy(task text, what text DEFAULT 'best')
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_deploy'
LANGUAGE C VOLATILE
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.deploy(text, text) IS
	'deploy the ''best'' or ''latest'' succeeded run of one of your tasks, or a run by id; returns the run id';

CREATE FUNCTION easeml.deploy(task text, run_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_deploy_run'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.deploy(text, bigint) IS
	'deploy one succeeded run of one of your tasks; returns the run id';

CREATE FUNCTION easeml.rollback(task text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_rollback'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.rollback(text) IS
	'go back to the previous deployment of one of your tasks; returns the run id now deployed';

-- What each task deploys now.
CREATE VIEW easeml.deployed WITH (security_invoker = true) AS
SELECT t.name AS task,
	   t.tenant,
	   t.id AS task_id,
	   d.run_id,
	   m.name AS model,
	   r.score,
	   d.strategy,
	   d.deployed_at,
	   d.deployed_by,
	   t.auto_deploy
  FROM easeml.deployments d
  JOIN easeml.tasks t ON t.id = d.task_id
  JOIN easeml.runs r ON r.id = d.run_id
  JOIN easeml.models m ON m.id = r.model_id
 WHERE d.active;
COMMENT ON VIEW easeml.deployed IS
	'the active deployment of each of your tasks: the run predict uses';
GRANT SELECT ON easeml.deployed TO PUBLIC;

-- A run ended: say so, say when it is its task's new best, and deploy it
-- when it is the best run the task can deploy and the task deploys
-- automatically.  Runs in the session that ends the run (the scheduler,
-- or easeml.cancel), so the events go out when the run's end commits.
CREATE FUNCTION easeml._run_ended()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	t			easeml.tasks;
	best		bigint;
BEGIN
	IF TG_RELID <> 'easeml.runs'::regclass THEN
		RAISE EXCEPTION 'easeml._run_ended() only watches easeml.runs'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	PERFORM easeml._notify('run_finished', NEW.task_id, NEW.id);
	IF NEW.status <> 'succeeded' THEN
		RETURN NULL;
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id;
	SELECT r.id INTO best
	  FROM easeml.runs r
	 WHERE r.task_id = t.id AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.snapshot_version IS DISTINCT FROM t.snapshot_version, r.score DESC, r.seconds, r.id
	 LIMIT 1;
	IF best IS DISTINCT FROM NEW.id THEN
		RETURN NULL;
	END IF;
	PERFORM easeml._notify('new_best', NEW.task_id, NEW.id);
	IF t.auto_deploy THEN
		PERFORM easeml._lock_deployments(t.id);
		IF easeml._best_deployable(t.id) = NEW.id
			AND NOT EXISTS (SELECT 1 FROM easeml.deployments d
							 WHERE d.task_id = t.id AND d.active AND d.run_id = NEW.id) THEN
			PERFORM easeml._activate(t.id, NEW.id, 'auto', current_user);
		END IF;
	END IF;
	RETURN NULL;
END;
$$;

CREATE TRIGGER runs_ended
	AFTER UPDATE OF status ON easeml.runs
	FOR EACH ROW
	WHEN (OLD.status IN ('queued', 'running')
		  AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'interrupted'))
	EXECUTE FUNCTION easeml._run_ended();

-- Artifact retention, as before, but a large artifact is also kept while
-- its run is deployed, or is the deployment a rollback returns to (the
-- latest two deployments not rolled back; rollback skips older ones whose
-- artifact is gone).
CREATE OR REPLACE FUNCTION easeml._keep_artifacts(run_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	cap			bigint := pg_size_bytes(coalesce(current_setting('easeml.artifact_max_bytes', true), '16MB'));
	tid			bigint;
	best		bigint;
BEGIN
	SELECT task_id INTO tid FROM easeml.runs WHERE id = run_id;
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	SELECT r.id INTO best FROM easeml.runs r
	 WHERE r.task_id = tid AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.score DESC, r.seconds, r.id LIMIT 1;
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.task_id = tid AND a.bytes > cap
	   AND r.id IS DISTINCT FROM best AND r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')
	   AND r.id NOT IN (SELECT d.run_id FROM easeml.deployments d
						 WHERE d.task_id = tid AND d.rolled_back_at IS NULL
						 ORDER BY d.id DESC LIMIT 2);
END;
$$;

REVOKE ALL ON FUNCTION easeml._notify(text, bigint, bigint),
	easeml._activate(bigint, bigint, text, name), easeml._lock_deployments(bigint),
	easeml._own_task(name, text), easeml._deploy(name, text, text),
	easeml._rollback(name, text), easeml._run_ended()
	FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Live learning curves: what the trainer reports while it trains
-- ---------------------------------------------------------------------------
-- One row per progress report the trainer sent (at most five a second, and
-- the last one when it is done, with the run's validation score); at most
-- easeml._progress_cap() rows per run: past it, every second row but the
-- last is thinned out, so a long run keeps its whole curve, coarser.
CREATE TABLE easeml.run_progress (
	id			bigserial PRIMARY KEY,
	run_id		bigint NOT NULL REFERENCES easeml.runs (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	epoch		int NOT NULL,
	loss		float8,
	score		float8,
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX run_progress_run_idx ON easeml.run_progress (run_id, id);
COMMENT ON TABLE easeml.run_progress IS
	'progress reports of runs while they train: epoch, training loss, validation score when measured (the last report), time';
ALTER TABLE easeml.run_progress ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_progress_own ON easeml.run_progress FOR SELECT USING (tenant = current_user);
GRANT SELECT ON easeml.run_progress TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.run_progress_id_seq TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.run_progress', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.run_progress_id_seq', '');

CREATE FUNCTION easeml._progress_cap()
RETURNS int
LANGUAGE sql IMMUTABLE
AS 'SELECT 500';

-- The trainer's progress: the run's latest epoch, loss and time, and a row
-- of its learning curve.  NaN (the trainer's "not measured") is NULL.
CREATE FUNCTION easeml.trainer_progress(run_id bigint, epoch int, loss float8, score float8)
RETURNS void
LANGUAGE plpgsql
-- [slurm] a remote trainer's login role calls it: checked, as its owner
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
	ten			name;
	n			bigint;
BEGIN
	-- [slurm] only for the run this session proved it trains (docs/scale-out.md)
	PERFORM easeml._trainer_authorize(trainer_progress.run_id);
	UPDATE easeml.runs r
	   SET epoch = trainer_progress.epoch,
		   loss = nullif(trainer_progress.loss, 'NaN'::float8),
		   progress_at = clock_timestamp()
	 WHERE r.id = trainer_progress.run_id AND r.status IN ('queued', 'running')
	RETURNING r.tenant INTO ten;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	INSERT INTO easeml.run_progress (run_id, tenant, epoch, loss, score)
	VALUES (trainer_progress.run_id, ten, trainer_progress.epoch,
			nullif(trainer_progress.loss, 'NaN'::float8), nullif(trainer_progress.score, 'NaN'::float8));
	SELECT count(*) INTO n FROM easeml.run_progress p WHERE p.run_id = trainer_progress.run_id;
	IF n > easeml._progress_cap() THEN
		DELETE FROM easeml.run_progress p
		 USING (SELECT q.id, row_number() OVER (ORDER BY q.id) AS i
				  FROM easeml.run_progress q WHERE q.run_id = trainer_progress.run_id) x
		 WHERE p.id = x.id AND x.i % 2 = 0 AND x.i < n;
	END IF;
END;
$$;
COMMENT ON FUNCTION easeml.trainer_progress(bigint, int, float8, float8) IS
	'internal: the trainer reports its epoch, training loss and (when measured) validation score while it trains';

CREATE OR REPLACE FUNCTION easeml.trainer_progress(run_id bigint, epoch int, loss float8)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
	SELECT easeml.trainer_progress(run_id, epoch, loss, NULL::float8);
$$;

-- Runs queued or running, with how far a running one is by its cost
-- estimate: the scheduler's estimate when it chose the run
-- (decisions.est_seconds), else easeml.cost_estimates.  percent stops at
-- 99 and eta is NULL once a run is past its estimate.
CREATE VIEW easeml.active_runs WITH (security_invoker = true) AS
SELECT r.id AS run_id,
	   t.name AS task,
	   r.tenant,
	   r.task_id,
	   m.name AS model,
	   r.status,
	   r.device,
	   r.queued_at,
	   r.started_at,
	   e.elapsed AS elapsed_seconds,
	   est.seconds AS estimated_seconds,
	   CASE WHEN r.status = 'running' AND est.seconds > 0
			THEN least(99, floor(100 * e.elapsed / est.seconds))::int END AS percent,
	   CASE WHEN r.status = 'running' AND est.seconds > 0 AND e.elapsed < est.seconds
			THEN r.started_at + make_interval(secs => est.seconds) END AS eta,
	   r.epoch,
	   r.loss,
	   r.progress_at
  FROM easeml.runs r
  JOIN easeml.tasks t ON t.id = r.task_id
  JOIN easeml.models m ON m.id = r.model_id
 CROSS JOIN LATERAL (SELECT extract(epoch FROM clock_timestamp() - r.started_at)::float8 AS elapsed) e
 CROSS JOIN LATERAL (
	SELECT coalesce((SELECT d.est_seconds FROM easeml.decisions d
					  WHERE d.run_id = r.id AND d.est_seconds > 0
					  ORDER BY d.id DESC LIMIT 1),
					(SELECT c.seconds FROM easeml.cost_estimates c
					  WHERE c.task_id = r.task_id AND c.model_id = r.model_id)) AS seconds) est
 WHERE r.status IN ('queued', 'running');
COMMENT ON VIEW easeml.active_runs IS
	'your queued and running runs: elapsed and estimated seconds, percent done and ETA by the cost estimate, the latest epoch and loss';
GRANT SELECT ON easeml.active_runs TO PUBLIC;

-- ---------------------------------------------------------------------------
-- A run's log, for its tenant (src/sql/sql_runlog.c)
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml.run_log(run bigint, max_bytes int DEFAULT 65536)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_run_log'
LANGUAGE C VOLATILE
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.run_log(bigint, int) IS
	'the end of the trainer log of one of your runs, at most max_bytes (1 to 1048576) bytes';

REVOKE ALL ON FUNCTION easeml.trainer_progress(bigint, int, float8, float8) FROM PUBLIC;
