-- [ensemble] sql/easeml.sql makes the same changes (the runs constraint
-- and easeml._finish_run and easeml._keep_artifacts in place, the rest in
-- its last block)

-- [ensemble] a run may be an ensemble of its task's selection runs
ALTER TABLE easeml.runs DROP CONSTRAINT runs_purpose_check;
ALTER TABLE easeml.runs ADD CONSTRAINT runs_purpose_check
	CHECK (purpose IN ('select', 'refit', 'ensemble'));

-- [ensemble] an ensemble's score ranks it like a selection run's, and its
-- seconds count its members'
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
			-- [alter] the task's metric changed while the run trained
			-- (easeml.alter_task): its score is the quality of the new one
			SELECT CASE WHEN m ? 'metric' AND m ->> 'metric' IS DISTINCT FROM tm.metric
						THEN easeml._run_quality(m, tm.metric) ELSE sc END
			  INTO sc
			  FROM (SELECT coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric
					  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
					 WHERE r.id = _finish_run.run_id) tm;
		END IF;
	END IF;
	UPDATE easeml.runs r
	   SET status = st,
		   finished_at = clock_timestamp(),
		   seconds = extract(epoch FROM clock_timestamp() - coalesce(r.started_at, r.queued_at))
			   -- [ensemble] an ensemble's cost is its members' runs too (it
			   -- predicts with every member): tied with a member, the member
			   -- ranks first (docs/models.md 8)
			   + CASE WHEN r.purpose = 'ensemble' AND st = 'succeeded' THEN coalesce((
					 SELECT sum(x.seconds) FROM easeml.runs x
					  WHERE x.task_id = r.task_id AND x.purpose = 'select'
						AND x.id IN (SELECT (e ->> 'run_id')::numeric
									   FROM jsonb_array_elements(
										   CASE WHEN jsonb_typeof(m -> 'members') = 'array'
												THEN m -> 'members' ELSE '[]' END) e
									  WHERE jsonb_typeof(e -> 'run_id') = 'number')), 0)
				 ELSE 0 END,
		   exit_code = _finish_run.exit_code,
		   metrics = m,
		   -- [refit] a refit's score is measured on rows it trained on: no
		   -- selection score (its metrics keep it); [ensemble] an ensemble's
		   -- ranks it like a selection run's
		   score = CASE WHEN st = 'succeeded' AND r.purpose IN ('select', 'ensemble') THEN sc END,
		   error = err
	 WHERE r.id = run_id AND r.status IN ('queued', 'running');
	PERFORM easeml._keep_artifacts(run_id);
END;
$$;

-- [ensemble] a run that did not succeed keeps no validation predictions;
-- the members of a kept ensemble keep their artifacts
CREATE OR REPLACE FUNCTION easeml._keep_artifacts(run_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cap			bigint := pg_size_bytes(coalesce(current_setting('easeml.artifact_max_bytes', true), '16MB'));
	tid			bigint;
	best		bigint;
	pick		bigint;
	keep		bigint[];
BEGIN
	SELECT task_id INTO tid FROM easeml.runs WHERE id = run_id;
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	DELETE FROM easeml.run_predictions p USING easeml.runs r
	 WHERE p.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	SELECT r.id INTO best FROM easeml.runs r
	 WHERE r.task_id = tid AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.score DESC, r.seconds, r.id LIMIT 1;
	pick := easeml._best_deployable(tid);	/* what deploy('best') takes */
	-- [refit] and so is the refit of either
	keep := ARRAY[best, pick] || ARRAY(
		SELECT k.id
		  FROM (SELECT d.run_id, d.refit_run_id FROM easeml.deployments d
				 WHERE d.task_id = tid AND d.rolled_back_at IS NULL
				 ORDER BY d.id DESC LIMIT 2) l
		 CROSS JOIN LATERAL (VALUES (l.run_id), (l.refit_run_id)) k (id)
		 WHERE k.id IS NOT NULL);
	-- [ensemble] the members of a kept ensemble predict with it
	keep := array_remove(keep || ARRAY(
		SELECT (e ->> 'run_id')::bigint
		  FROM easeml.runs x
		 CROSS JOIN LATERAL jsonb_array_elements(
			 CASE WHEN jsonb_typeof(x.metrics -> 'members') = 'array'
				  THEN x.metrics -> 'members' ELSE '[]' END) e
		 WHERE x.id = ANY (keep) AND x.purpose = 'ensemble'
		   AND jsonb_typeof(e -> 'run_id') = 'number'), NULL);
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.task_id = tid AND a.bytes > cap
	   AND r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')
	   AND NOT r.id = ANY (keep);
END;
$$;

-- ===========================================================================
-- [ensemble] Ensembles of a task's runs (docs/models.md "Ensembles",
-- docs/scheduler.md 7.10)
--
-- Every selection run that succeeds stores its stored model's predictions
-- for its validation rows (easeml.run_predictions, within
-- easeml.artifact_max_bytes).  Once a task has easeml.ensemble_min_runs (k)
-- such runs on its current snapshot, a run of the built-in model
-- 'ensemble' (runs.purpose = 'ensemble') is queued; the scheduler starts
-- it like a refit, and its trainer selects the ensemble greedily, with
-- replacement, over the runs' validation predictions (Caruana et al.
-- 2004).  Its score ranks it on the leaderboard, and it is deployed and
-- predicts like any run: its artifact names its member runs and their
-- weights.  Another ensemble is built each time k more runs succeeded.
-- sql/upgrade/0.1.0--0.2.0/99zi-ensemble.sql makes the same changes.
-- ===========================================================================

-- [ensemble] the validation predictions of a run's stored model
-- (src/trainer/tr_ensemble.h: the artifact format, family 'validation')
CREATE TABLE easeml.run_predictions (
	run_id		bigint PRIMARY KEY REFERENCES easeml.runs (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	bytes		bigint NOT NULL,
	data		bytea NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE easeml.run_predictions IS
	'the validation predictions of succeeded runs'' stored models (class probabilities or values), which ensembles are selected from; kept up to easeml.artifact_max_bytes';
ALTER TABLE easeml.run_predictions ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_predictions_own ON easeml.run_predictions FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));
GRANT SELECT ON easeml.run_predictions TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.run_predictions', '');

-- [ensemble] the model ensemble runs are of; disabled: the policy never
-- proposes it, the scheduler queues its runs (easeml._queue_ensemble)
INSERT INTO easeml.models (name, family, params, kinds, enabled, builtin) VALUES
	('ensemble', 'ensemble', '{"steps": 50}', '{classification,regression}', false, true);

-- [ensemble] The runs an ensemble of a task is selected from: its
-- succeeded selection runs on the task's current snapshot and features,
-- of a built-in family, with their artifact and validation predictions
-- stored; best first.  selectable: one of the best 200, which an ensemble
-- selects from (easeml_trainer.ensemble_members); the predictions of the
-- others are not kept (easeml._keep_artifacts).
CREATE FUNCTION easeml._ensemble_pool(task_id bigint)
RETURNS TABLE (run_id bigint, score float8, selectable boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.id, r.score, row_number() OVER (ORDER BY r.score DESC, r.seconds, r.id) <= 200
	  FROM easeml.tasks t
	  JOIN easeml.runs r ON r.task_id = t.id
	  JOIN easeml.models m ON m.id = r.model_id
	 WHERE t.id = _ensemble_pool.task_id AND r.status = 'succeeded' AND r.purpose = 'select'
	   AND r.score IS NOT NULL AND m.family NOT IN ('external', 'ensemble')
	   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
	   AND easeml._has_features(t, r)
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = r.id)
	   AND EXISTS (SELECT 1 FROM easeml.run_predictions p WHERE p.run_id = r.id)
	 ORDER BY r.score DESC, r.seconds, r.id
$$;

-- [ensemble] The trainer stores its run's validation predictions: NULL
-- when kept, else why not (over easeml.artifact_max_bytes, the run is no
-- longer running); the trainer records it in the run's metrics.
CREATE FUNCTION easeml_trainer.predictions(run_id bigint, data bytea)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cap			bigint := pg_size_bytes(coalesce(current_setting('easeml.artifact_max_bytes', true), '16MB'));
BEGIN
	PERFORM easeml._trainer_authorize(predictions.run_id);
	IF data IS NULL OR substr(data, 1, 8) <> '\x454153454d4c4131'::bytea THEN
		RAISE EXCEPTION 'the validation predictions of run % are not in the artifact format', run_id
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Send the blob src/trainer/tr_ensemble.c writes (magic EASEMLA1, family validation).';
	END IF;
	IF octet_length(data) > cap THEN
		RETURN format('%s bytes, over easeml.artifact_max_bytes (%s bytes)', octet_length(data), cap);
	END IF;
	INSERT INTO easeml.run_predictions (run_id, tenant, bytes, data)
	SELECT r.id, r.tenant, octet_length(predictions.data), predictions.data
	  FROM easeml.runs r
	 WHERE r.id = predictions.run_id AND r.status IN ('queued', 'running')
		   AND r.purpose = 'select'
	ON CONFLICT ON CONSTRAINT run_predictions_pkey
	DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes;
	IF NOT FOUND THEN
		RETURN 'the run is not a selection run in flight';
	END IF;
	RETURN NULL;
END;
$$;
COMMENT ON FUNCTION easeml_trainer.predictions(bigint, bytea) IS
	'internal: the trainer stores the validation predictions of its run''s model; returns why not when they are not kept';

-- [ensemble] The validation predictions an ensemble run selects from: the
-- selectable runs of its task's pool (easeml._ensemble_pool) on the run's
-- snapshot, best first.
CREATE FUNCTION easeml_trainer.ensemble_members(run_id bigint)
RETURNS TABLE (member bigint, score float8, data bytea)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(ensemble_members.run_id);
	RETURN QUERY
		SELECT p.run_id, p.score, rp.data
		  FROM easeml.runs e
		 CROSS JOIN LATERAL easeml._ensemble_pool(e.task_id) p
		  JOIN easeml.runs r ON r.id = p.run_id
		  JOIN easeml.run_predictions rp ON rp.run_id = p.run_id
		 WHERE e.id = ensemble_members.run_id AND e.purpose = 'ensemble' AND p.selectable
		   AND r.snapshot_version IS NOT DISTINCT FROM e.snapshot_version
		 ORDER BY p.score DESC, r.seconds, r.id;
END;
$$;
COMMENT ON FUNCTION easeml_trainer.ensemble_members(bigint) IS
	'internal: the runs an ensemble run selects from, with their validation predictions, best first';

-- [ensemble] one ensemble of a task in flight (easeml._queue_ensemble)
CREATE UNIQUE INDEX runs_ensemble_in_flight_idx ON easeml.runs (task_id)
	WHERE status IN ('queued', 'running') AND purpose = 'ensemble';

-- [ensemble] Queue an ensemble of a task (docs/models.md 8,
-- docs/scheduler.md 7.10), in the transaction that records the end of one
-- of its selection runs or ensembles, or its completion.  The pool is
-- easeml._ensemble_pool; a run "joined since the last ensemble" when it
-- finished after the latest ensemble of the current snapshot started
-- (queued, when it never started), however that ended.  Due:
--  - while the task is active: at least k = easeml.ensemble_min_runs runs
--    joined since the last ensemble (all the pool for the first), and the
--    ensembles so far, plus one more as long as the last, took at most a
--    quarter of the seconds of the snapshot's selection runs (seconds in a
--    slot: started to finished), so that ensembles take at most about a
--    fifth of the task's compute from its search, and never catch up with
--    the count of runs one after another;
--  - once the task is completed: one last ensemble when a run joined since
--    the last one and none of its selection runs is queued or running,
--    so that the final leaderboard's ensemble selects from every run
--    (also at the end of an ensemble still running at completion).
-- One ensemble of a task is queued or running at a time (the EXISTS;
-- runs_ensemble_in_flight_idx where two transactions recording ends of the
-- task's runs, or its completion, would queue one each: the second waits
-- for the first and queues none, its own record kept); the pool holds at
-- least k runs.  No ensemble for k-fold tasks (the runs keep the
-- predictions of no fold) or with ensemble_min_runs = 0.  A run whose
-- cancel was requested queues none (the trigger's WHEN): a cancelled
-- ensemble is not followed by another, nor does a run that succeeded
-- before its trainer could be stopped queue one; a cancel never leaves new
-- work behind (the scheduler, even with easeml.enabled = off, or the
-- tenant cancelling everything of a task, would find a run queued after
-- it).  The next selection run that ends looks again.  Per task lookups
-- only: the recording path pays for them.
CREATE FUNCTION easeml._queue_ensemble()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	k			int := coalesce(nullif(current_setting('easeml.ensemble_min_runs', true), '')::int, 5);
	tid			bigint;
	t			easeml.tasks;
	mid			int;
	last_start	timestamptz;
	ens_seconds float8;
	last_seconds float8;
	sel_seconds float8;
	pool		bigint;
	joined		bigint;
BEGIN
	IF TG_RELID = 'easeml.runs'::regclass THEN
		tid := NEW.task_id;
	ELSIF TG_RELID = 'easeml.tasks'::regclass THEN
		tid := NEW.id;
	ELSE
		RAISE EXCEPTION 'easeml._queue_ensemble() only watches easeml.runs and easeml.tasks'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF k <= 0 THEN
		RETURN NULL;
	END IF;
	k := greatest(k, 2);
	SELECT * INTO t FROM easeml.tasks WHERE id = tid;
	SELECT m.id INTO mid FROM easeml.models m WHERE m.name = 'ensemble' AND m.builtin;
	IF NOT FOUND OR mid IS NULL OR t.folds IS NOT NULL
		OR t.status NOT IN ('active', 'completed')
		OR EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.status IN ('queued', 'running')
					AND (r.purpose = 'ensemble' OR (t.status = 'completed' AND r.purpose = 'select'))) THEN
		RETURN NULL;
	END IF;
	SELECT max(coalesce(r.started_at, r.queued_at)) FILTER (WHERE r.purpose = 'ensemble'),
		   coalesce(sum(extract(epoch FROM r.finished_at - r.started_at))
					FILTER (WHERE r.purpose = 'ensemble'), 0),
		   coalesce((array_agg(extract(epoch FROM r.finished_at - r.started_at) ORDER BY r.id DESC)
					 FILTER (WHERE r.purpose = 'ensemble'))[1], 0),
		   coalesce(sum(extract(epoch FROM r.finished_at - r.started_at))
					FILTER (WHERE r.purpose = 'select'), 0)
	  INTO last_start, ens_seconds, last_seconds, sel_seconds
	  FROM easeml.runs r
	 WHERE r.task_id = t.id AND r.purpose IN ('select', 'ensemble')
	   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version;
	SELECT count(*), count(*) FILTER (WHERE last_start IS NULL OR r.finished_at > last_start)
	  INTO pool, joined
	  FROM easeml._ensemble_pool(t.id) p JOIN easeml.runs r ON r.id = p.run_id;
	IF pool >= k
		AND ((t.status = 'completed' AND joined >= 1)
			 OR (t.status = 'active' AND joined >= k
				 AND ens_seconds + last_seconds <= sel_seconds / 4)) THEN
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
								 snapshot_version)
		VALUES (t.id, t.tenant, mid, 'queued', 'scheduler', 'ensemble', t.snapshot_version)
		ON CONFLICT (task_id) WHERE status IN ('queued', 'running') AND purpose = 'ensemble'
		DO NOTHING;
	END IF;
	RETURN NULL;
END;
$$;

CREATE TRIGGER runs_queue_ensemble
	AFTER UPDATE OF status ON easeml.runs
	FOR EACH ROW
	WHEN (OLD.status IN ('queued', 'running') AND NOT NEW.cancel_requested
		  AND NEW.status IN ('succeeded', 'failed', 'interrupted')
		  AND NEW.purpose IN ('select', 'ensemble'))
	EXECUTE FUNCTION easeml._queue_ensemble();
-- [ensemble] the task's last ensemble when it completes
CREATE TRIGGER tasks_queue_ensemble
	AFTER UPDATE OF status ON easeml.tasks
	FOR EACH ROW
	WHEN (NEW.status = 'completed' AND OLD.status <> 'completed')
	EXECUTE FUNCTION easeml._queue_ensemble();

REVOKE ALL ON FUNCTION easeml._ensemble_pool(bigint), easeml._queue_ensemble(),
	easeml_trainer.predictions(bigint, bytea), easeml_trainer.ensemble_members(bigint)
	FROM PUBLIC;

-- [ensemble] end

-- [ensemble] a remote trainer's role may store predictions and read an
-- ensemble's members
CREATE OR REPLACE FUNCTION easeml.grant_trainer(role name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role) THEN
		RAISE EXCEPTION 'role "%" does not exist', role USING ERRCODE = 'undefined_object';
	END IF;
	EXECUTE format('GRANT EXECUTE ON FUNCTION easeml_trainer.attach(bigint, text),'
				   ' easeml_trainer.spec(bigint), easeml_trainer.data_session(bigint),'
				   ' easeml_trainer.progress(bigint, int, float8),'
				   ' easeml_trainer.progress(bigint, int, float8, float8), easeml_trainer.artifact(bigint, bytea),'
				   ' easeml_trainer.command(bigint), easeml_trainer.result(bigint, int, text, text),'
				   -- [ensemble] a run's validation predictions, an ensemble's members
				   ' easeml_trainer.predictions(bigint, bytea), easeml_trainer.ensemble_members(bigint) TO %I',
				   role);
END;
$$;
