
-- [hardening] issue 22: easeml._wake_trigger() is called by easeml's own
-- triggers only (a tenant's trigger on its own table would wake the
-- scheduler at will; it also refuses to fire on other tables, and wake-ups
-- are rate-limited by easeml.wake_interval); runs deleted (a task dropped)
-- have the scheduler remove their run directories at once, also while
-- easeml.enabled is off
REVOKE ALL ON FUNCTION easeml._wake_trigger() FROM PUBLIC;
CREATE TRIGGER runs_sweep
	AFTER DELETE ON easeml.runs
	FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger('sweep');
