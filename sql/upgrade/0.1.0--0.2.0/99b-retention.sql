-- [retention] sql/easeml.sql makes the same changes
-- ---------------------------------------------------------------------------
-- [retention] the scheduler's own log expires: decisions and their
-- runner-ups, the launch records of ended runs and the auto policy's
-- choices older than an age go (easeml.purge_scheduler_log, or the
-- scheduler itself with easeml.scheduler_log_retention set).  Runs, their
-- events, learning curves, artifacts, deployments and the history stay.
-- ---------------------------------------------------------------------------

-- At most max_rows rows of each table older than older_than (NULL: all of
-- them; a launch record by when its trainer reported, else was launched);
-- what removed how many.  Kept however old: the decision of a run
-- still queued or running (the preemption rule and easeml.active_runs read
-- its estimate), each task's latest decision (round-robin serves the task
-- served longest ago first), the launch record of a run still queued or
-- running, and the latest choice and latest chosen policy of auto (what
-- runs now).
CREATE FUNCTION easeml._purge_scheduler_log(older_than interval, max_rows int)
RETURNS TABLE (table_name text, deleted bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	cutoff		timestamptz := now() - older_than;
	ids			bigint[];
	n			bigint;
BEGIN
	SELECT array_agg(id) INTO ids FROM (
		SELECT d.id FROM easeml.decisions d
		 WHERE d.decided_at < cutoff
		   AND NOT EXISTS (SELECT FROM easeml.runs r
							WHERE r.id = d.run_id AND r.status IN ('queued', 'running'))
		   AND EXISTS (SELECT FROM easeml.decisions l
						WHERE l.task_id = d.task_id AND l.id > d.id)
		 ORDER BY d.id LIMIT max_rows) x;
	-- the runner-ups first, to count them (the foreign key would cascade)
	DELETE FROM easeml.decision_candidates c WHERE c.decision_id = ANY (ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	DELETE FROM easeml.decisions d WHERE d.id = ANY (ids);
	GET DIAGNOSTICS deleted = ROW_COUNT;
	table_name := 'decisions';
	RETURN NEXT;
	table_name := 'decision_candidates';
	deleted := n;
	RETURN NEXT;

	DELETE FROM easeml.trainer_jobs j WHERE j.run_id IN (
		SELECT r.id FROM easeml.trainer_jobs k JOIN easeml.runs r ON r.id = k.run_id
		 WHERE r.status NOT IN ('queued', 'running')
		   AND coalesce(k.reported_at, k.submitted_at) < cutoff
		 ORDER BY r.id LIMIT max_rows);
	GET DIAGNOSTICS deleted = ROW_COUNT;
	table_name := 'trainer_jobs';
	RETURN NEXT;

	DELETE FROM easeml.policy_choices p WHERE p.id IN (
		SELECT c.id FROM easeml.policy_choices c
		 WHERE c.chosen_at < cutoff
		   AND c.id < (SELECT max(id) FROM easeml.policy_choices)
		   AND c.id IS DISTINCT FROM (SELECT max(id) FROM easeml.policy_choices WHERE chosen)
		 ORDER BY c.id LIMIT max_rows);
	GET DIAGNOSTICS deleted = ROW_COUNT;
	table_name := 'policy_choices';
	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION easeml._purge_scheduler_log(interval, int) IS
	'internal: remove at most max_rows rows (NULL: all) per table of the scheduler''s log older than older_than; the scheduler calls it in batches when easeml.scheduler_log_retention is set';
REVOKE ALL ON FUNCTION easeml._purge_scheduler_log(interval, int) FROM PUBLIC;

-- [retention] fn: the admin's purge.  Executable by all so that a tenant
-- is told why not (42501 with a hint) instead of a bare permission error.
CREATE FUNCTION easeml.purge_scheduler_log(older_than interval)
RETURNS TABLE (table_name text, deleted bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
	IF NOT easeml._is_admin() THEN
		RAISE EXCEPTION 'only a superuser may purge the scheduler''s log'
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Ask an administrator; your own runs, events and results are never purged.';
	END IF;
	IF older_than IS NULL THEN
		RAISE EXCEPTION 'older_than must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass an age, such as interval ''30 days''; interval ''0'' removes every row that may go.';
	END IF;
	IF older_than < interval '0' THEN
		RAISE EXCEPTION 'older_than must not be negative: %', older_than
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass an age, such as interval ''30 days''.';
	END IF;
	RETURN QUERY SELECT * FROM easeml._purge_scheduler_log(older_than, NULL);
END;
$$;
COMMENT ON FUNCTION easeml.purge_scheduler_log(interval) IS
	'remove the scheduler''s log older than older_than: decisions and their runner-ups, launch records of ended runs, auto policy choices; returns the rows removed per table (superuser only; runs, run events, learning curves, artifacts, deployments and history are never touched)';
GRANT EXECUTE ON FUNCTION easeml.purge_scheduler_log(interval) TO PUBLIC;
