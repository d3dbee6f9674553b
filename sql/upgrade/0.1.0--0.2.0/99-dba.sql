-- [dba] a restored run that was queued or running keeps the events of the
-- dump: the trigger logs only runs born now, so pg_restore of a database
-- with runs in flight does not collide with run_events' restored ids
CREATE OR REPLACE FUNCTION easeml._log_run_event()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
	-- it runs as its owner: only on easeml.runs (a tenant must not attach it
	-- to a table of its own to forge events of other tenants' runs)
	IF TG_RELID <> 'easeml.runs'::regclass THEN
		RAISE EXCEPTION 'easeml._log_run_event() only logs easeml.runs'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	-- a run is born queued or running, queued_at = now(); any other INSERT
	-- is a restore (pg_restore, a dump of runs in flight included), whose
	-- events are restored from run_events itself
	IF (TG_OP = 'INSERT' AND NEW.status IN ('queued', 'running')
		AND NEW.queued_at = now())
		OR (TG_OP = 'UPDATE' AND NEW.status IS DISTINCT FROM OLD.status) THEN
		INSERT INTO easeml.run_events (run_id, tenant, status, detail)
		VALUES (NEW.id, NEW.tenant, NEW.status,
				CASE WHEN NEW.status IN ('failed', 'interrupted', 'cancelled') THEN NEW.error END);
	END IF;
	RETURN NULL;
END;
$$;

-- [dba] the scheduler's health from SQL: when its loop last went round and
-- the errors that ended rounds
DROP FUNCTION easeml.scheduler_status();
CREATE FUNCTION easeml.scheduler_status(
	OUT pid int,
	OUT running int,
	OUT max_workers int,
	OUT decisions bigint,
	OUT policy text,
	OUT started_at timestamptz,
	OUT loop_at timestamptz,
	OUT errors bigint,
	OUT last_error_at timestamptz,
	OUT last_error text,
	OUT wakeups bigint,
	OUT wakeups_folded bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'easeml_scheduler_status'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION easeml.scheduler_status() IS
	'the scheduler worker as seen from shared memory; pid is NULL when it is not running; loop_at is when its loop last went round, errors how many rounds failed since it started, last_error (SQLSTATE: message) the latest, shown to pg_read_all_stats; wakeups how often committing transactions woke it since it started, wakeups_folded how many wake-ups easeml.wake_interval folded into later ones';
