-- ---------------------------------------------------------------------------
-- [incremental] easeml 0.1.0 -> 0.2.0: the live scheduler reads only the
-- runs that changed since its previous step (issue 7 item 3,
-- src/worker/catalog_runs.c); sql/easeml.sql holds the same for a fresh install
-- ---------------------------------------------------------------------------

-- Each run row records the transaction that last wrote it.  The scheduler
-- asks for the rows whose writer its previous read could not see
-- (pg_visible_in_snapshot of that read's snapshot), so a run written by a
-- transaction that commits late is never missed.
ALTER TABLE easeml.runs ADD COLUMN changed_by xid8;
COMMENT ON COLUMN easeml.runs.changed_by IS
	'the transaction that last wrote the row (set by a trigger): the scheduler reads the runs that changed since its previous step';
CREATE INDEX runs_changed_idx ON easeml.runs (changed_by);

-- [incremental] fn: every insert and update of a run records its writer
CREATE FUNCTION easeml._run_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
	NEW.changed_by := pg_current_xact_id();
	RETURN NEW;
END;
$$;
CREATE TRIGGER runs_changed
	BEFORE INSERT OR UPDATE ON easeml.runs
	FOR EACH ROW EXECUTE FUNCTION easeml._run_changed();
REVOKE EXECUTE ON FUNCTION easeml._run_changed() FROM PUBLIC;
-- [incremental] end
