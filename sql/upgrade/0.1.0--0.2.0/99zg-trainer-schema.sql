-- [house] The trainer protocol in a schema of its own (issue 26): the
-- functions the trainer process calls move from easeml to easeml_trainer
-- and lose their trainer_ prefix, so that easeml holds the user API only.
-- ALTER ... SET SCHEMA and RENAME keep each function's grants (a remote
-- trainer's login role, easeml.grant_trainer); the bodies that name a
-- function are then restated.  sql/easeml.sql holds the same.
CREATE SCHEMA easeml_trainer;
COMMENT ON SCHEMA easeml_trainer IS
	'easeml: the trainer protocol, the functions the trainer process calls (not for users)';
GRANT USAGE ON SCHEMA easeml_trainer TO PUBLIC;
ALTER FUNCTION easeml.trainer_data_session(bigint) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_data_session(bigint) RENAME TO data_session;
ALTER FUNCTION easeml.trainer_attach(bigint) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_attach(bigint) RENAME TO attach;
ALTER FUNCTION easeml.trainer_attach(bigint, text) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_attach(bigint, text) RENAME TO attach;
ALTER FUNCTION easeml.trainer_progress(bigint, int, float8, float8) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_progress(bigint, int, float8, float8) RENAME TO progress;
ALTER FUNCTION easeml.trainer_progress(bigint, int, float8) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_progress(bigint, int, float8) RENAME TO progress;
ALTER FUNCTION easeml.trainer_artifact(bigint, bytea) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_artifact(bigint, bytea) RENAME TO artifact;
ALTER FUNCTION easeml.trainer_command(bigint) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_command(bigint) RENAME TO command;
ALTER FUNCTION easeml.trainer_spec(bigint) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_spec(bigint) RENAME TO spec;
ALTER FUNCTION easeml.trainer_result(bigint, int, text, text) SET SCHEMA easeml_trainer;
ALTER FUNCTION easeml_trainer.trainer_result(bigint, int, text, text) RENAME TO result;

CREATE OR REPLACE FUNCTION easeml_trainer.progress(run_id bigint, epoch int, loss float8, score float8)
RETURNS void
LANGUAGE plpgsql
-- [slurm] a remote trainer's login role calls it: checked, as its owner
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ten			name;
	n			bigint;
BEGIN
	-- [slurm] only for the run this session proved it trains (docs/scale-out.md)
	PERFORM easeml._trainer_authorize(progress.run_id);
	-- Best effort: a row another transaction keeps locked (its tenant's
	-- open transaction that cancelled it, say) is skipped, not waited for
	-- with the trainer's lock_timeout at every report while training
	-- stalls; the next report tries again, the result still waits.
	PERFORM FROM easeml.runs r
	 WHERE r.id = progress.run_id AND r.status IN ('queued', 'running')
	   FOR NO KEY UPDATE SKIP LOCKED;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	UPDATE easeml.runs r
	   SET epoch = progress.epoch,
		   loss = nullif(progress.loss, 'NaN'::float8),
		   progress_at = clock_timestamp()
	 WHERE r.id = progress.run_id AND r.status IN ('queued', 'running')
	RETURNING r.tenant INTO ten;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	INSERT INTO easeml.run_progress (run_id, tenant, epoch, loss, score)
	VALUES (progress.run_id, ten, progress.epoch,
			nullif(progress.loss, 'NaN'::float8), nullif(progress.score, 'NaN'::float8));
	SELECT count(*) INTO n FROM easeml.run_progress p WHERE p.run_id = progress.run_id;
	IF n > easeml._progress_cap() THEN
		DELETE FROM easeml.run_progress p
		 USING (SELECT q.id, row_number() OVER (ORDER BY q.id) AS i
				  FROM easeml.run_progress q WHERE q.run_id = progress.run_id) x
		 WHERE p.id = x.id AND x.i % 2 = 0 AND x.i < n;
	END IF;
END;
$$;

CREATE OR REPLACE FUNCTION easeml_trainer.progress(run_id bigint, epoch int, loss float8)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml_trainer.progress(run_id, epoch, loss, NULL::float8);
$$;

CREATE OR REPLACE FUNCTION easeml_trainer.artifact(run_id bigint, data bytea)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml._trainer_authorize(artifact.run_id);
	INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
	SELECT r.id, r.tenant, octet_length(artifact.data), artifact.data
	  FROM easeml.runs r
	 WHERE r.id = artifact.run_id AND r.status IN ('queued', 'running')
	ON CONFLICT (run_id) DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes;
$$;

CREATE OR REPLACE FUNCTION easeml_trainer.command(run_id bigint)
RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml._trainer_authorize(command.run_id);
	SELECT m.command FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.id = command.run_id
$$;

CREATE OR REPLACE FUNCTION easeml_trainer.spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	RETURN easeml._trainer_spec(run_id)
		|| jsonb_build_object('train_all',
							  EXISTS (SELECT 1 FROM easeml.runs r
									   WHERE r.id = spec.run_id AND r.purpose = 'refit'));
END;
$$;

CREATE OR REPLACE FUNCTION easeml_trainer.result(run_id bigint, exit_code int, metrics text, error text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	UPDATE easeml.trainer_jobs j
	   SET exit_code = result.exit_code,
		   metrics = left(result.metrics, 1048576),
		   error = left(result.error, 8192),
		   reported_at = clock_timestamp()
	  FROM easeml.runs r
	 WHERE j.run_id = result.run_id AND r.id = j.run_id AND r.status = 'running';
	RETURN FOUND;
END;
$$;

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
				   ' easeml_trainer.command(bigint), easeml_trainer.result(bigint, int, text, text) TO %I',
				   role);
END;
$$;
