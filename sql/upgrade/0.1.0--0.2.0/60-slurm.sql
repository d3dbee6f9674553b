-- ===========================================================================
-- Launchers and the trainer's way back (docs/scale-out.md; src/worker/launch_slurm.c,
-- src/sql/sql_trainer_token.c)
--
-- The same block ends sql/easeml.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

-- One row per run whose trainer was launched: by which launcher, the job
-- it became (a Slurm job id; NULL for a local process), the digest of the
-- run's secret token, and what the trainer reported at its end.  The
-- trainer proves it is the run's trainer with the token; it returns its
-- result here, through the database, never through files on the server.
CREATE TABLE easeml.trainer_jobs (
	run_id		bigint PRIMARY KEY REFERENCES easeml.runs (id) ON DELETE CASCADE,
	launcher	text NOT NULL CHECK (launcher ~ '^[a-z][a-z0-9_]*$'),
	job_id		text CHECK (job_id ~ '^[0-9]+$'),
	token_sha256 bytea NOT NULL CHECK (octet_length(token_sha256) = 32),
	submitted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	exit_code	int,
	metrics		text,
	error		text,
	reported_at timestamptz
);
COMMENT ON TABLE easeml.trainer_jobs IS
	'internal: the launched trainer of each run (launcher, Slurm job id, token digest) and the result it reported';
ALTER TABLE easeml.trainer_jobs ENABLE ROW LEVEL SECURITY;

-- A session proves it is a run's trainer: the token must be the run's and
-- the run running.  SECURITY DEFINER: the trainer's login role reads no
-- table itself.
CREATE FUNCTION easeml.trainer_attach(run_id bigint, token text)
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_trainer_attach_token'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.trainer_attach(bigint, text) IS
	'internal: prove with the run''s token that this session is the run''s trainer, and record it so that the scheduler can end it';

-- Raises unless this session's user is a superuser or the session proved
-- it is this run's trainer (easeml.trainer_attach(run, token)).
CREATE FUNCTION easeml._trainer_authorize(run_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_trainer_authorize'
LANGUAGE C STABLE STRICT;

-- The functions a trainer calls check that it is the run's trainer and run
-- as their owner, so that the trainer's login role needs no privilege on
-- any table.  trainer_spec's unchecked body keeps its code under another
-- name; the short ones are restated with the check.
ALTER FUNCTION easeml.trainer_spec(bigint) RENAME TO _trainer_spec;
CREATE FUNCTION easeml.trainer_spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	RETURN easeml._trainer_spec(run_id);
END;
$$;
COMMENT ON FUNCTION easeml.trainer_spec(bigint) IS
	'internal: what the trainer needs to train one run, including its COPY query';

CREATE OR REPLACE FUNCTION easeml.trainer_progress(run_id bigint, epoch int, loss float8)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
	SELECT easeml._trainer_authorize(trainer_progress.run_id);
	UPDATE easeml.runs
	   SET epoch = trainer_progress.epoch,
		   loss = CASE WHEN trainer_progress.loss = 'NaN'::float8 THEN NULL ELSE trainer_progress.loss END,
		   progress_at = clock_timestamp()
	 WHERE id = trainer_progress.run_id AND status IN ('queued', 'running');
$$;
COMMENT ON FUNCTION easeml.trainer_progress(bigint, int, float8) IS
	'internal: the trainer reports its epoch and loss while it trains';

CREATE OR REPLACE FUNCTION easeml.trainer_artifact(run_id bigint, data bytea)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
	SELECT easeml._trainer_authorize(trainer_artifact.run_id);
	INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
	SELECT r.id, r.tenant, octet_length(trainer_artifact.data), trainer_artifact.data
	  FROM easeml.runs r
	 WHERE r.id = trainer_artifact.run_id AND r.status IN ('queued', 'running')
	ON CONFLICT (run_id) DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes;
$$;
COMMENT ON FUNCTION easeml.trainer_artifact(bigint, bytea) IS
	'internal: the trainer stores the trained parameters of its run';

CREATE OR REPLACE FUNCTION easeml.trainer_command(run_id bigint)
RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
	SELECT easeml._trainer_authorize(trainer_command.run_id);
	SELECT m.command FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.id = trainer_command.run_id
$$;
COMMENT ON FUNCTION easeml.trainer_command(bigint) IS
	'internal: the command of a run''s custom trainer, NULL for built-in families';

-- The trainer's result: its exit status, its metrics (success) or the
-- reason it failed.  The scheduler records the run from it once the
-- trainer has ended (it alone changes a run's status).
CREATE FUNCTION easeml.trainer_result(run_id bigint, exit_code int, metrics text, error text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	UPDATE easeml.trainer_jobs j
	   SET exit_code = trainer_result.exit_code,
		   metrics = left(trainer_result.metrics, 1048576),
		   error = left(trainer_result.error, 8192),
		   reported_at = clock_timestamp()
	  FROM easeml.runs r
	 WHERE j.run_id = trainer_result.run_id AND r.id = j.run_id AND r.status = 'running';
	RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION easeml.trainer_result(bigint, int, text, text) IS
	'internal: the trainer reports how its run ended (exit status, metrics or error)';

-- Slurm partitions are devices of launcher 'slurm' named slurm:<partition>;
-- their slots are how many runs easeml keeps in that partition at once.
CREATE FUNCTION easeml.set_slurm_partition(partition text, slots int, kind text DEFAULT 'cpu')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	device		text := 'slurm:' || partition;
BEGIN
	IF partition IS NULL OR partition !~ '^[a-z0-9_.-]{1,57}$' THEN
		RAISE EXCEPTION 'invalid Slurm partition name "%"', coalesce(partition, '')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Partition names easeml uses are lower-case letters, digits, _ . and -, at most 57 characters.';
	END IF;
	IF slots IS NULL OR slots < 0 OR slots > 64 THEN
		RAISE EXCEPTION 'slots must be between 0 and 64, not %', coalesce(slots::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF kind IS NULL OR kind NOT IN ('cpu', 'cuda') THEN
		RAISE EXCEPTION 'kind must be cpu or cuda, not "%"', coalesce(kind, '')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A partition whose nodes have GPUs is of kind cuda: each run asks for one (--gres=gpu:1).';
	END IF;
	INSERT INTO easeml.devices AS d (name, kind, slots, launcher, description, present, enabled)
	VALUES (device, kind, slots, 'slurm', format('Slurm partition %s', partition), true, true)
	ON CONFLICT (name) DO UPDATE
		SET kind = EXCLUDED.kind, slots = EXCLUDED.slots, present = true
		WHERE d.launcher = 'slurm';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'device "%" exists and is not a Slurm partition', device
			USING ERRCODE = 'duplicate_object';
	END IF;
	PERFORM easeml.wake_scheduler();
	RETURN device;
END;
$$;
COMMENT ON FUNCTION easeml.set_slurm_partition(text, int, text) IS
	'let the scheduler keep up to slots runs in a Slurm partition (admin only; kind cuda asks each run for a GPU); returns its device name';

-- The login role a remote trainer connects as may call the trainer's
-- functions and nothing else (docs/scale-out.md).
CREATE FUNCTION easeml.grant_trainer(role name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role) THEN
		RAISE EXCEPTION 'role "%" does not exist', role USING ERRCODE = 'undefined_object';
	END IF;
	EXECUTE format('GRANT EXECUTE ON FUNCTION easeml.trainer_attach(bigint, text),'
				   ' easeml.trainer_spec(bigint), easeml.trainer_data_session(bigint),'
				   ' easeml.trainer_progress(bigint, int, float8),'
				   ' easeml.trainer_progress(bigint, int, float8, float8), easeml.trainer_artifact(bigint, bytea),'
				   ' easeml.trainer_command(bigint), easeml.trainer_result(bigint, int, text, text) TO %I',
				   role);
END;
$$;
COMMENT ON FUNCTION easeml.grant_trainer(name) IS
	'let a login role act as a remote trainer: call the trainer''s functions, which each need the run''s token (admin only)';

REVOKE ALL ON FUNCTION easeml.trainer_attach(bigint, text), easeml._trainer_authorize(bigint),
	easeml._trainer_spec(bigint), easeml.trainer_spec(bigint),
	easeml.trainer_progress(bigint, int, float8), easeml.trainer_artifact(bigint, bytea),
	easeml.trainer_command(bigint),
	easeml.trainer_result(bigint, int, text, text),
	easeml.set_slurm_partition(text, int, text), easeml.grant_trainer(name)
	FROM PUBLIC;
