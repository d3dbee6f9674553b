-- [ensemble] Ensembles at a bounded pace (easeml._queue_ensemble,
-- docs/models.md 8, docs/scheduler.md 7.10): the next ensemble of an
-- active task is due once k = easeml.ensemble_min_runs runs joined the
-- pool since the last one started (not at k, 2k, 3k, ... counted from
-- zero, which made ensembles run back to back to catch up with the count)
-- and while the task's ensembles took at most a quarter of its selection
-- runs' seconds; a completed task gets one last ensemble over every run.
-- The trigger on easeml.runs also looks when a selection run fails or is
-- interrupted (a completed task's last run in flight), and one on
-- easeml.tasks when the task completes.  A run whose cancel was requested
-- queues none (the WHEN): scripts/bench/automl.sh's cancel of every run,
-- with easeml.enabled = off, left the ensemble queued by the end of the
-- one it cancelled 'queued' for good (t/051).

-- [ensemble] one ensemble of a task in flight (two recording transactions
-- could each queue one)
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
CREATE OR REPLACE FUNCTION easeml._queue_ensemble()
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

DROP TRIGGER runs_queue_ensemble ON easeml.runs;
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
