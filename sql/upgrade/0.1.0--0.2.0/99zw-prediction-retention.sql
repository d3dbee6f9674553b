-- [ensemble] Validation predictions are kept only while an ensemble can
-- select them (easeml._keep_artifacts, docs/operations.md): the pool says
-- which of its runs are selectable (the best 200), a new column, so the
-- function is made again; easeml_trainer.ensemble_members reads it.
DROP FUNCTION easeml._ensemble_pool(bigint);
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
REVOKE ALL ON FUNCTION easeml._ensemble_pool(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION easeml_trainer.ensemble_members(run_id bigint)
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
	-- [ensemble] the members of a kept ensemble predict with it (compared
	-- as numeric: the list is the trainer's, a run_id of 1.5 or 1e20 is no
	-- run and no error either)
	keep := array_remove(keep || ARRAY(
		SELECT y.id FROM easeml.runs y
		 WHERE y.task_id = tid
		   AND y.id::numeric IN (
			   SELECT (e ->> 'run_id')::numeric
				 FROM easeml.runs x
				CROSS JOIN LATERAL jsonb_array_elements(
					CASE WHEN jsonb_typeof(x.metrics -> 'members') = 'array'
						 THEN x.metrics -> 'members' ELSE '[]' END) e
				WHERE x.id = ANY (keep) AND x.purpose = 'ensemble'
				  AND jsonb_typeof(e -> 'run_id') = 'number')), NULL);
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.task_id = tid AND a.bytes > cap
	   AND r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')
	   AND NOT r.id = ANY (keep);
	-- [ensemble] validation predictions while an ensemble can select them:
	-- a run of an older snapshot is never selected again (snapshots only
	-- move on, queued ensembles with them), nor one below the pool's best
	-- 200 while the scores stand (a new run only pushes others down; after
	-- easeml.alter_task changes the metric or features, the pool ranks the
	-- runs that kept theirs)
	DELETE FROM easeml.run_predictions p USING easeml.runs r, easeml.tasks t
	 WHERE p.run_id = r.id AND r.task_id = tid AND t.id = tid
	   AND r.status NOT IN ('queued', 'running')
	   AND (r.snapshot_version IS DISTINCT FROM t.snapshot_version
			OR r.id IN (SELECT x.run_id FROM easeml._ensemble_pool(tid) x WHERE NOT x.selectable));
END;
$$;
