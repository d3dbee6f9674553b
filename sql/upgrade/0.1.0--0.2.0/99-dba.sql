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
