-- [ensemble] A run whose cancel was requested queues no ensemble
-- (easeml._queue_ensemble, docs/scheduler.md 7.10): a cancelled ensemble is
-- not followed by another, nor does a run that succeeded before its
-- trainer could be stopped queue one.  scripts/bench/automl.sh's cancel of
-- every run, with easeml.enabled = off, left the ensemble queued by the
-- end of the one it cancelled 'queued' for good (t/051).
DROP TRIGGER runs_queue_ensemble ON easeml.runs;
CREATE TRIGGER runs_queue_ensemble
	AFTER UPDATE OF status ON easeml.runs
	FOR EACH ROW
	WHEN (OLD.status IN ('queued', 'running') AND NOT NEW.cancel_requested
		  AND ((NEW.status = 'succeeded' AND NEW.purpose = 'select')
			   OR (NEW.status IN ('succeeded', 'failed', 'interrupted')
				   AND NEW.purpose = 'ensemble')))
	EXECUTE FUNCTION easeml._queue_ensemble();
