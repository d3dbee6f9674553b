-- Progress reports skip a run row another transaction keeps locked
-- instead of waiting the trainer's lock_timeout (10 s) at each report.
CREATE OR REPLACE FUNCTION easeml.trainer_progress(run_id bigint, epoch int, loss float8, score float8)
RETURNS void
LANGUAGE plpgsql
-- [slurm] a remote trainer's login role calls it: checked, as its owner
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
	ten			name;
	n			bigint;
BEGIN
	-- [slurm] only for the run this session proved it trains (docs/scale-out.md)
	PERFORM easeml._trainer_authorize(trainer_progress.run_id);
	-- Best effort: a row another transaction keeps locked (its tenant's
	-- open transaction that cancelled it, say) is skipped, not waited for
	-- with the trainer's lock_timeout at every report while training
	-- stalls; the next report tries again, the result still waits.
	PERFORM FROM easeml.runs r
	 WHERE r.id = trainer_progress.run_id AND r.status IN ('queued', 'running')
	   FOR NO KEY UPDATE SKIP LOCKED;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	UPDATE easeml.runs r
	   SET epoch = trainer_progress.epoch,
		   loss = nullif(trainer_progress.loss, 'NaN'::float8),
		   progress_at = clock_timestamp()
	 WHERE r.id = trainer_progress.run_id AND r.status IN ('queued', 'running')
	RETURNING r.tenant INTO ten;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	INSERT INTO easeml.run_progress (run_id, tenant, epoch, loss, score)
	VALUES (trainer_progress.run_id, ten, trainer_progress.epoch,
			nullif(trainer_progress.loss, 'NaN'::float8), nullif(trainer_progress.score, 'NaN'::float8));
	SELECT count(*) INTO n FROM easeml.run_progress p WHERE p.run_id = trainer_progress.run_id;
	IF n > easeml._progress_cap() THEN
		DELETE FROM easeml.run_progress p
		 USING (SELECT q.id, row_number() OVER (ORDER BY q.id) AS i
				  FROM easeml.run_progress q WHERE q.run_id = trainer_progress.run_id) x
		 WHERE p.id = x.id AND x.i % 2 = 0 AND x.i < n;
	END IF;
END;
$$;
