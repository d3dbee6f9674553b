-- [refit] sql/easeml.sql makes the same changes (its last block)
-- ===========================================================================
-- Refit on every row (docs/results.md section 1, "Refit on every row")
--
-- A run trains on the training split and is scored on the validation split;
-- deploying it also queues its refit: the same candidate trained again on
-- every row of the run's snapshot (runs.purpose = 'refit', refit_of the
-- run).  The split model predicts at once; the refit's artifact replaces it
-- when the refit succeeds (deployments.refitted_at).  The deployment keeps
-- the run and its validation score; a refit is never a selection
-- observation (no score: the leaderboard, the priors and the scheduler's
-- world leave it out).  tasks.refit_all = false keeps the split model.
-- ===========================================================================

-- [refit] whether deploying a run refits it on every row
ALTER TABLE easeml.tasks
	ADD COLUMN refit_all boolean NOT NULL DEFAULT true;
GRANT INSERT (refit_all), UPDATE (refit_all) ON easeml.tasks TO PUBLIC;

-- [refit] a run is a selection run (trained on the split, scored on the
-- validation rows) or the refit of one on every row
ALTER TABLE easeml.runs
	ADD COLUMN purpose text NOT NULL DEFAULT 'select'
		CONSTRAINT runs_purpose_check CHECK (purpose IN ('select', 'refit')),
	ADD COLUMN refit_of bigint REFERENCES easeml.runs (id) ON DELETE CASCADE,
	ADD CONSTRAINT runs_refit_of_check CHECK ((purpose = 'refit') = (refit_of IS NOT NULL));
COMMENT ON COLUMN easeml.runs.purpose IS
	'select: trained on the training split and scored on the validation split; refit: run refit_of trained again on every row (no score)';
-- a candidate is in flight at most once per task, besides the refits of
-- runs of it
DROP INDEX easeml.runs_in_flight_idx;
CREATE UNIQUE INDEX runs_in_flight_idx ON easeml.runs (task_id, model_id)
	WHERE status IN ('queued', 'running') AND purpose = 'select';
CREATE INDEX runs_refit_of_idx ON easeml.runs (refit_of) WHERE refit_of IS NOT NULL;

-- [refit] a deployment's refit, and when its artifact took over
ALTER TABLE easeml.deployments
	ADD COLUMN refit_run_id bigint REFERENCES easeml.runs (id) ON DELETE SET NULL,
	ADD COLUMN refitted_at timestamptz;
CREATE INDEX deployments_refit_idx ON easeml.deployments (refit_run_id)
	WHERE refit_run_id IS NOT NULL;

-- [refit] A tenant's run, as before; a refit of a run of the candidate
-- does not keep the candidate from being queued
CREATE OR REPLACE FUNCTION easeml._guard_run()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	m			record;
BEGIN
	-- a run always belongs to its task's tenant, whoever inserts it, and
	-- trains on the task's current snapshot (a restored run keeps its own)
	NEW.tenant := (SELECT tenant FROM easeml.tasks WHERE id = NEW.task_id);
	NEW.snapshot_version := coalesce(NEW.snapshot_version,
									 (SELECT snapshot_version FROM easeml.tasks WHERE id = NEW.task_id));
	IF easeml._is_admin() THEN
		RETURN NEW;
	END IF;
	-- [trust]
	IF NEW.task_id IS NULL OR NEW.model_id IS NULL THEN
		RAISE EXCEPTION 'task_id and model_id must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'SELECT easeml.enqueue(task, model) queues a run by names.';
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id AND tenant = current_user;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task % does not exist', NEW.task_id
			USING ERRCODE = 'undefined_object';
	END IF;
	IF t.status NOT IN ('active', 'paused', 'completed') THEN
		RAISE EXCEPTION 'task "%" is %', t.name, t.status
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	SELECT * INTO m FROM easeml.models WHERE id = NEW.model_id;
	IF NOT FOUND OR NOT m.enabled THEN
		RAISE EXCEPTION 'model % does not exist or is disabled', NEW.model_id
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT id, name FROM easeml.models WHERE enabled lists the candidates.';
	END IF;
	IF NOT (t.kind = ANY (m.kinds)) THEN
		RAISE EXCEPTION 'model "%" cannot train % task "%"', m.name, t.kind, t.name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('It supports: %s.', array_to_string(m.kinds, ', '));
	END IF;
	IF m.needs_image AND t.input_shape IS NULL THEN
		RAISE EXCEPTION 'model "%" needs an image task, and task "%" has no input_shape', m.name, t.name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Declare the task with an input_shape, or choose another model.';
	END IF;
	-- [access] the run would train on the snapshot: the tenant must still
	-- be allowed to read it (its policy raises why not)
	IF t.snapshot_version IS NOT NULL
		AND pg_catalog.to_regclass(pg_catalog.format('easeml_snapshots.%I',
			easeml._snapshot_name(t.id, t.snapshot_version))) IS NOT NULL THEN
		EXECUTE pg_catalog.format('SELECT 1 FROM easeml_snapshots.%I LIMIT 1',
								  easeml._snapshot_name(t.id, t.snapshot_version));
	END IF;
	IF EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.model_id = m.id
				AND r.status IN ('queued', 'running') AND r.purpose = 'select') THEN
		RAISE EXCEPTION 'model "%" is already queued or running for task "%"', m.name, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Wait for that run to end, or stop it with easeml.cancel(run_id).';
	END IF;
	-- [hardening] a paused task starts nothing, not even its tenant's own
	-- queue (docs/operations.md): say so, instead of a run that silently waits
	IF t.status = 'paused' THEN
		RAISE NOTICE 'task "%" is paused: the run of model "%" waits in the queue until the task is active again', t.name, m.name
			USING HINT = format('UPDATE easeml.tasks SET status = ''active'' WHERE name = %L resumes it.', t.name);
	END IF;
	-- column privileges already limit tenants to task_id and model_id;
	-- the values are set here too, so the rule does not rest on grants alone
	NEW.slot := NULL;
	NEW.status := 'queued';
	NEW.requested_by := 'user';
	NEW.queued_at := now();
	NEW.started_at := NULL;
	NEW.finished_at := NULL;
	NEW.seconds := NULL;
	NEW.score := NULL;
	NEW.metrics := NULL;
	NEW.error := NULL;
	NEW.pid := NULL;
	NEW.exit_code := NULL;
	NEW.epoch := NULL;
	NEW.loss := NULL;
	NEW.progress_at := NULL;
	NEW.cancel_requested := false;
	NEW.log_path := NULL;
	RETURN NEW;
END;
$$;

-- [refit] the trainer learns that it trains on every row
CREATE OR REPLACE FUNCTION easeml.trainer_spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	RETURN easeml._trainer_spec(run_id)
		|| jsonb_build_object('train_all',
							  EXISTS (SELECT 1 FROM easeml.runs r
									   WHERE r.id = trainer_spec.run_id AND r.purpose = 'refit'));
END;
$$;

-- [refit] The scheduler, at each load: active deployments of tasks that
-- refit, with no refit (their task's row was locked when they were made,
-- or refit_all was switched on since), get one.  Returns how many.
CREATE FUNCTION easeml._queue_refits()
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	d			record;
	refit		bigint;
	n			int := 0;
BEGIN
	FOR d IN
		SELECT x.id, x.task_id, x.run_id
		  FROM easeml.deployments x
		  JOIN easeml.tasks t ON t.id = x.task_id
		  JOIN easeml.runs r ON r.id = x.run_id
		 WHERE x.active AND x.refit_run_id IS NULL AND t.refit_all AND r.purpose = 'select'
		   AND t.status IN ('active', 'completed')
	LOOP
		-- the task's deployments change one at a time, but the scheduler
		-- never waits for a tenant's open easeml.deploy: it tries later
		PERFORM FROM easeml.deployment_locks l WHERE l.task_id = d.task_id FOR UPDATE SKIP LOCKED;
		CONTINUE WHEN NOT FOUND;
		CONTINUE WHEN NOT EXISTS (SELECT 1 FROM easeml.deployments x
								   WHERE x.id = d.id AND x.active AND x.refit_run_id IS NULL);
		refit := easeml._refit_for(d.task_id, d.run_id);
		CONTINUE WHEN refit IS NULL;
		UPDATE easeml.deployments x
		   SET refit_run_id = refit,
			   refitted_at = CASE WHEN (SELECT r.status FROM easeml.runs r WHERE r.id = refit) = 'succeeded'
								  THEN clock_timestamp() END
		 WHERE x.id = d.id;
		n := n + 1;
	END LOOP;
	RETURN n;
END;
$$;
REVOKE ALL ON FUNCTION easeml._queue_refits() FROM PUBLIC;

-- [refit] A task deploys another run (easeml.deploy, an automatic
-- deployment, easeml.rollback): the refits still queued or running for
-- other deployments are cancelled, but keep (NULL: none; deployed NULL:
-- alter_task retired the deployment).  A queued one
-- ends here, as easeml.cancel ends it; the scheduler stops a running one.
CREATE FUNCTION easeml._cancel_refits(task_id bigint, keep bigint, deployed bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	UPDATE easeml.runs x
	   SET cancel_requested = true,
		   status = CASE WHEN x.status = 'queued' THEN 'cancelled' ELSE x.status END,
		   finished_at = CASE WHEN x.status = 'queued' THEN clock_timestamp() END,
		   error = CASE WHEN x.status <> 'queued' THEN NULL
						WHEN _cancel_refits.deployed IS NULL
						THEN 'cancelled before it started: the task''s features changed and its deployment was retired'
						ELSE format('cancelled before it started: the task deploys run %s now',
									_cancel_refits.deployed) END
	 WHERE x.task_id = _cancel_refits.task_id AND x.purpose = 'refit'
	   AND x.status IN ('queued', 'running') AND NOT x.cancel_requested
	   AND x.id IS DISTINCT FROM _cancel_refits.keep
$$;
REVOKE ALL ON FUNCTION easeml._cancel_refits(bigint, bigint, bigint) FROM PUBLIC;

-- [refit] The refit on every row a deployment of run_id uses, where the
-- task refits (refit_all) and the run is a selection run, else NULL: the
-- latest refit of the run that succeeded with its artifact, else the one
-- queued or running (and not being cancelled), else a new one, queued;
-- NULL too when the task's row is locked (the new run's foreign key would
-- wait for its tenant's transaction, and the scheduler deploys in the
-- statement that records a run's end): easeml._queue_refits
-- queues it later.
CREATE FUNCTION easeml._refit_for(task_id bigint, run_id bigint)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	r			easeml.runs;
	refit		bigint;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = _refit_for.task_id;
	SELECT * INTO r FROM easeml.runs x WHERE x.id = _refit_for.run_id;
	IF NOT t.refit_all OR r.purpose IS DISTINCT FROM 'select' THEN
		RETURN NULL;
	END IF;
	SELECT x.id INTO refit FROM easeml.runs x
	 WHERE x.refit_of = r.id AND x.status = 'succeeded'
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = x.id)
	 ORDER BY x.id DESC LIMIT 1;
	IF refit IS NULL THEN
		SELECT x.id INTO refit FROM easeml.runs x
		 WHERE x.refit_of = r.id AND x.status IN ('queued', 'running') AND NOT x.cancel_requested
		 ORDER BY x.id DESC LIMIT 1;
	END IF;
	IF refit IS NULL THEN
		PERFORM FROM easeml.tasks x WHERE x.id = t.id FOR KEY SHARE SKIP LOCKED;
		IF NOT FOUND THEN
			RETURN NULL;
		END IF;
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
								 refit_of, snapshot_version)
		VALUES (t.id, t.tenant, r.model_id, 'queued', 'scheduler', 'refit', r.id, r.snapshot_version)
		RETURNING id INTO refit;
	END IF;
	RETURN refit;
END;
$$;

REVOKE ALL ON FUNCTION easeml._refit_for(bigint, bigint) FROM PUBLIC;

-- [refit] Make a run the active deployment of its task; the callers
-- checked it.  With refit_all, the run's refit on every row
-- (easeml._refit_for) predicts at once when it succeeded before, else
-- when it succeeds; refits in flight for other deployments are cancelled.
CREATE OR REPLACE FUNCTION easeml._activate(task_id bigint, run_id bigint, strategy text, by name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	refit		bigint;
	refitted	timestamptz;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = _activate.task_id;
	refit := easeml._refit_for(t.id, _activate.run_id);
	IF (SELECT x.status FROM easeml.runs x WHERE x.id = refit) = 'succeeded' THEN
		refitted := clock_timestamp();
	END IF;
	PERFORM easeml._cancel_refits(t.id, refit, _activate.run_id);
	UPDATE easeml.deployments d SET active = false
	 WHERE d.task_id = _activate.task_id AND d.active;
	INSERT INTO easeml.deployments (task_id, tenant, run_id, strategy, deployed_by,
									refit_run_id, refitted_at)
	VALUES (t.id, t.tenant, _activate.run_id, _activate.strategy, _activate.by, refit, refitted);
	PERFORM easeml._notify('deployment', t.id, _activate.run_id);
END;
$$;

-- [refit] The run whose artifact predicts for a deployment: its refit
-- once that took over (and while its artifact is kept), else the run.
CREATE FUNCTION easeml._deployment_artifact(d easeml.deployments)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN d.refitted_at IS NOT NULL
					 AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = d.refit_run_id)
				THEN d.refit_run_id ELSE d.run_id END
$$;

-- [refit] The run whose artifact predicts for a task: its active
-- deployment's (the refit once that took over), else its best deployable
-- run; NULL when it has none.
CREATE OR REPLACE FUNCTION easeml._deployed_run(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT easeml._deployment_artifact(d)
					   FROM easeml.deployments d
					  WHERE d.task_id = _deployed_run.task_id AND d.active),
					easeml._best_deployable(_deployed_run.task_id))
$$;
COMMENT ON FUNCTION easeml._deployed_run(bigint) IS
	'the run whose artifact predicts for a task: its active deployment (or that run''s refit on every row), else its best run with an artifact';

CREATE OR REPLACE FUNCTION easeml._finish_run(run_id bigint, new_status text, exit_code int,
								   metrics text, error text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m			jsonb;
	sc			float8;
	st			text := new_status;
	err			text := error;
BEGIN
	IF metrics IS NOT NULL THEN
		BEGIN
			m := metrics::jsonb;
		EXCEPTION WHEN others THEN
			m := NULL;
			st := 'failed';
			err := 'trainer wrote invalid metrics: ' || SQLERRM;
		END;
	END IF;
	IF st = 'succeeded' THEN
		IF m IS NULL OR jsonb_typeof(m -> 'score') IS DISTINCT FROM 'number' THEN
			st := 'failed';
			err := coalesce(err, 'trainer reported no score');
		ELSE
			sc := (m ->> 'score')::float8;
		END IF;
	END IF;
	UPDATE easeml.runs r
	   SET status = st,
		   finished_at = clock_timestamp(),
		   seconds = extract(epoch FROM clock_timestamp() - coalesce(r.started_at, r.queued_at)),
		   exit_code = _finish_run.exit_code,
		   metrics = m,
		   -- [refit] a refit's score is measured on rows it trained on: no
		   -- selection score (its metrics keep it)
		   score = CASE WHEN st = 'succeeded' AND r.purpose = 'select' THEN sc END,
		   error = err
	 WHERE r.id = run_id AND r.status IN ('queued', 'running');
	PERFORM easeml._keep_artifacts(run_id);
END;
$$;

CREATE OR REPLACE FUNCTION easeml._keep_artifacts(run_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
	   -- [refit] and so is the refit of either
	   AND r.id NOT IN (SELECT k.id
						  FROM (SELECT d.run_id, d.refit_run_id FROM easeml.deployments d
								 WHERE d.task_id = tid AND d.rolled_back_at IS NULL
								 ORDER BY d.id DESC LIMIT 2) l
						 CROSS JOIN LATERAL (VALUES (l.run_id), (l.refit_run_id)) k (id)
						 WHERE k.id IS NOT NULL);
END;
$$;

CREATE OR REPLACE FUNCTION easeml._deploy(caller name, task text, what text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
		   AND r2.purpose = 'select'
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
	IF r.purpose = 'refit' THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: it is the refit of run % on every row', rid, t.name, r.refit_of
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('Deploy run %s: with refit_all on, its refit on every row predicts.', r.refit_of);
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

CREATE OR REPLACE FUNCTION easeml._run_ended()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	best		bigint;
	again		bigint;
BEGIN
	IF TG_RELID <> 'easeml.runs'::regclass THEN
		RAISE EXCEPTION 'easeml._run_ended() only watches easeml.runs'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	PERFORM easeml._notify('run_finished', NEW.task_id, NEW.id);
	-- [refit] a refit on every row: swap its artifact in where a
	-- deployment waits for it; an interrupted one is queued again (three
	-- tries); a failed one leaves the split model serving, and says why
	IF NEW.purpose = 'refit' THEN
		SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id;
		PERFORM easeml._lock_deployments(t.id);
		IF NEW.status = 'succeeded' THEN
			IF t.refit_all AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = NEW.id) THEN
				UPDATE easeml.deployments d SET refitted_at = clock_timestamp()
				 WHERE d.refit_run_id = NEW.id AND d.refitted_at IS NULL;
				IF EXISTS (SELECT 1 FROM easeml.deployments d
							WHERE d.task_id = t.id AND d.active AND d.refit_run_id = NEW.id) THEN
					PERFORM easeml._notify('refitted', t.id, NEW.id);
				END IF;
			END IF;
		ELSIF NEW.status = 'interrupted' AND NOT NEW.cancel_requested AND t.refit_all
			AND (SELECT count(*) FROM easeml.runs x WHERE x.refit_of = NEW.refit_of) < 3
			AND EXISTS (SELECT 1 FROM easeml.deployments d
						 WHERE d.task_id = t.id AND d.active AND d.refit_run_id = NEW.id) THEN
			INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
									 refit_of, snapshot_version)
			VALUES (t.id, t.tenant, NEW.model_id, 'queued', 'scheduler', 'refit',
					NEW.refit_of, NEW.snapshot_version)
			RETURNING id INTO again;
			UPDATE easeml.deployments d SET refit_run_id = again WHERE d.refit_run_id = NEW.id;
		END IF;
		RETURN NULL;
	END IF;
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

-- [refit] easeml.rollback, as before; the deployment it returns to gets
-- its refit, and the refits of the others are cancelled
CREATE OR REPLACE FUNCTION easeml._rollback(caller name, task text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	cur			easeml.deployments;
	prev		easeml.deployments;
	refit		bigint;
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
	-- [refit] the deployment returned to gets its refit (one that failed
	-- or was cancelled, or whose artifact was not kept, is queued again);
	-- the others' are cancelled
	IF prev.refitted_at IS NOT NULL AND easeml._deployment_artifact(prev) = prev.run_id THEN
		prev.refitted_at := NULL;
		UPDATE easeml.deployments d SET refitted_at = NULL WHERE d.id = prev.id;
	END IF;
	IF prev.refitted_at IS NULL THEN
		refit := easeml._refit_for(t.id, prev.run_id);
		IF refit IS NOT NULL THEN
			UPDATE easeml.deployments d
			   SET refit_run_id = refit,
				   refitted_at = CASE WHEN (SELECT x.status FROM easeml.runs x WHERE x.id = refit) = 'succeeded'
									  THEN clock_timestamp() END
			 WHERE d.id = prev.id;
			prev.refit_run_id := refit;
		END IF;
	END IF;
	PERFORM easeml._cancel_refits(t.id, prev.refit_run_id, prev.run_id);
	PERFORM easeml._notify('deployment', t.id, prev.run_id);
	IF t.auto_deploy AND prev.run_id IS DISTINCT FROM easeml._best_deployable(t.id) THEN
		RAISE NOTICE 'task "%" deploys its best run automatically: a better run that finishes will replace this one', t.name
			USING HINT = format('UPDATE easeml.tasks SET auto_deploy = false WHERE name = %L keeps this deployment.', t.name);
	END IF;
	RETURN prev.run_id;
END;
$$;

-- [refit] What each task deploys now: the run chosen and its validation
-- score, and the artifact that predicts (the run's, or its refit's)
CREATE OR REPLACE VIEW easeml.deployed WITH (security_invoker = true) AS
SELECT t.name AS task,
	   t.tenant,
	   t.id AS task_id,
	   d.run_id,
	   m.name AS model,
	   r.score,
	   d.strategy,
	   d.deployed_at,
	   d.deployed_by,
	   t.auto_deploy,
	   a.id AS artifact_run_id,
	   CASE WHEN jsonb_typeof(a.metrics -> 'n_train') = 'number'
			THEN (a.metrics ->> 'n_train')::bigint END AS n_train,
	   t.refit_all,
	   d.refit_run_id,
	   f.status AS refit_status,
	   f.error AS refit_error,
	   d.refitted_at
  FROM easeml.deployments d
  JOIN easeml.tasks t ON t.id = d.task_id
  JOIN easeml.runs r ON r.id = d.run_id
  JOIN easeml.models m ON m.id = r.model_id
  LEFT JOIN easeml.runs f ON f.id = d.refit_run_id
  JOIN easeml.runs a ON a.id = easeml._deployment_artifact(d)
 WHERE d.active;

CREATE OR REPLACE VIEW easeml.task_overview WITH (security_invoker = true) AS
SELECT t.id AS task_id,
	   t.tenant,
	   t.name AS task,
	   t.kind,
	   t.status,
	   t.n_rows,
	   cardinality(t.features) AS n_features,
	   t.n_classes,
	   count(r.id) FILTER (WHERE r.status = 'succeeded')::int AS succeeded,
	   count(r.id) FILTER (WHERE r.status = 'failed')::int AS failed,
	   count(r.id) FILTER (WHERE r.status IN ('queued', 'running'))::int AS active,
	   max(r.score) FILTER (WHERE r.status = 'succeeded'
							AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version) AS best_score,
	   (SELECT m.name FROM easeml.runs b JOIN easeml.models m ON m.id = b.model_id
		 WHERE b.task_id = t.id AND b.status = 'succeeded' AND b.score IS NOT NULL
		   AND b.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
		 ORDER BY b.score DESC, b.seconds, b.id LIMIT 1) AS best_model,
	   t.status_reason,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   t.folds,
	   t.snapshot_version
  FROM easeml.tasks t
  LEFT JOIN easeml.runs r ON r.task_id = t.id AND r.purpose = 'select'
 GROUP BY t.id;

-- [refit] end
