-- [results] sql/easeml.sql makes the same change
-- Issue 24 item 2: every score with its standard error; small validation sets said.
-- sqrt(p (1 - p) / n) of an accuracy p on n validation rows; NULL for
-- other metrics.  The error of runs recorded without one.
CREATE FUNCTION easeml._binomial_se(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN metric = 'accuracy' AND (metrics ->> 'n_val')::float8 > 0
				 AND score BETWEEN 0 AND 1
			THEN sqrt(score * (1 - score) / (metrics ->> 'n_val')::float8) END
$$;

-- The standard error of a run's score (the quality of metric) from what the
-- trainer recorded (docs/results.md): its "score_se" when the run was
-- scored by this metric, else the metric's own error where the quality is
-- the metric itself, else the binomial error of an accuracy.  NULL when
-- unknown.
CREATE FUNCTION easeml._score_se(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(
		CASE WHEN metrics ->> 'metric' = metric THEN (metrics ->> 'score_se')::float8 END,
		CASE WHEN metric IN ('accuracy', 'balanced_accuracy', 'macro_f1', 'roc_auc', 'r2')
			 THEN (metrics ->> (metric || '_se'))::float8 END,
		easeml._binomial_se(metrics, metric, score))
$$;

-- The standard error of a run's value of metric, in the metric's units.
CREATE FUNCTION easeml._metric_se(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((metrics ->> (metric || '_se'))::float8,
					easeml._binomial_se(metrics, metric, score))
$$;

-- The rows a task's scores are measured on: its validation split, or with
-- folds every row (each is validated once).
CREATE FUNCTION easeml._validation_rows(n bigint, val_fraction float8, folds int)
RETURNS bigint
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN folds IS NOT NULL THEN n ELSE floor(n * val_fraction)::bigint END
$$;

-- The smallest difference between two accuracies measured on that many
-- validation rows that is more than noise: 1.96 standard errors of the
-- difference of two independent proportions at p = 0.5, the widest case.
-- A rule of thumb for every score on a 0-1 scale (docs/results.md).
CREATE FUNCTION easeml._resolvable_difference(validation_rows bigint)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN validation_rows > 0 THEN 1.96 * sqrt(0.5 / validation_rows) END
$$;

-- score is the task metric's quality (higher is better, docs/data.md);
-- metric_value is the metric itself, score_se and metric_se their
-- standard errors (docs/results.md).  tied_with_best: on the current
-- snapshot, within one standard error of the top score, so not told apart
-- from it by the validation rows; among those the faster run ranks first
-- (rank 1 is what deploy('best') deploys).  Results on an older snapshot
-- version are stale and rank after the current ones.
CREATE OR REPLACE VIEW easeml.leaderboard WITH (security_invoker = true) AS
SELECT l.task, l.tenant,
	   rank() OVER (PARTITION BY l.task_id
					ORDER BY l.stale, l.tied_with_best DESC,
							 CASE WHEN l.tied_with_best THEN l.seconds END,
							 l.score DESC, l.seconds, l.run_id)::int AS rank,
	   l.model, l.family, l.score, l.seconds, l.run_id, l.task_id, l.finished_at,
	   l.metric, l.metric_value, l.snapshot_version, l.stale, l.score_se, l.metric_se,
	   l.tied_with_best
  FROM (SELECT b.*,
			   NOT b.stale AND b.score >= first_value(b.score) OVER w
				   - coalesce(first_value(b.score_se) OVER w, 0) AS tied_with_best
		  FROM (SELECT t.name AS task,
					   t.tenant,
					   m.name AS model,
					   m.family,
					   r.score,
					   r.seconds,
					   r.id AS run_id,
					   r.task_id,
					   r.finished_at,
					   mt.metric,
					   easeml._metric_value(r.metrics, mt.metric, r.score) AS metric_value,
					   r.snapshot_version,
					   r.snapshot_version IS DISTINCT FROM t.snapshot_version AS stale,
					   easeml._score_se(r.metrics, mt.metric, r.score) AS score_se,
					   easeml._metric_se(r.metrics, mt.metric, r.score) AS metric_se
				  FROM easeml.runs r
				  JOIN easeml.tasks t ON t.id = r.task_id
				  JOIN easeml.models m ON m.id = r.model_id
				 CROSS JOIN LATERAL (SELECT coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric) mt
				 WHERE r.status = 'succeeded' AND r.score IS NOT NULL) b
		WINDOW w AS (PARTITION BY b.task_id ORDER BY b.stale, b.score DESC, b.seconds, b.run_id)) l;
COMMENT ON VIEW easeml.leaderboard IS
	'succeeded runs per task, best first by the task''s metric (among runs within one standard error of the top score, the faster first), each score with its standard error; results on an older snapshot are stale';

CREATE OR REPLACE VIEW easeml.task_overview WITH (security_invoker = true) AS
SELECT t.id AS task_id,
	   t.tenant,
	   t.name AS task,
	   t.kind,
	   t.status,
	   t.n_rows,
	   cardinality(t.features) AS n_features,
	   t.n_classes,
	   count(r.id) FILTER (WHERE r.status = 'succeeded')::int AS succeeded,
	   count(r.id) FILTER (WHERE r.status = 'failed')::int AS failed,
	   count(r.id) FILTER (WHERE r.status IN ('queued', 'running'))::int AS active,
	   max(r.score) FILTER (WHERE r.status = 'succeeded'
							AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version) AS best_score,
	   (SELECT l.model FROM easeml.leaderboard l
		 WHERE l.task_id = t.id AND l.rank = 1 AND NOT l.stale) AS best_model,
	   t.status_reason,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   t.folds,
	   t.snapshot_version,
	   v.validation_rows,
	   easeml._resolvable_difference(v.validation_rows) AS resolvable_difference,
	   easeml._resolvable_difference(v.validation_rows) > 0.05 AS small_validation
  FROM easeml.tasks t
  LEFT JOIN easeml.runs r ON r.task_id = t.id AND r.purpose = 'select'
 CROSS JOIN LATERAL (SELECT easeml._validation_rows(t.n_rows, t.val_fraction, t.folds)
						 AS validation_rows) v
 GROUP BY t.id, v.validation_rows;
COMMENT ON VIEW easeml.task_overview IS
	'one row per task: run counts, the best score and the leaderboard''s first model on its current snapshot, and how finely its validation rows tell scores apart';

-- A task whose validation rows cannot tell close scores apart: say so at
-- declaration (task_overview.small_validation says it later).  After the
-- row is written, so it sees the measured n_rows.
CREATE FUNCTION easeml._notice_small_validation()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v			bigint := easeml._validation_rows(NEW.n_rows, NEW.val_fraction, NEW.folds);
	d			float8 := easeml._resolvable_difference(v);
BEGIN
	IF d > 0.05 THEN
		RAISE NOTICE 'task "%" is scored on % validation row(s): scores closer than % are not told apart',
			NEW.name, v, round(d::numeric, 2)
			USING HINT = CASE WHEN NEW.folds IS NULL
							  THEN 'Set folds (5 scores on every row) or add rows; easeml.leaderboard shows each score''s standard error.'
							  ELSE 'Add rows; easeml.leaderboard shows each score''s standard error.' END;
	END IF;
	RETURN NULL;
END;
$$;
CREATE TRIGGER tasks_small_validation
	AFTER INSERT ON easeml.tasks
	FOR EACH ROW WHEN (NEW.n_rows IS NOT NULL)
	EXECUTE FUNCTION easeml._notice_small_validation();
REVOKE ALL ON FUNCTION easeml._notice_small_validation() FROM PUBLIC;

-- The run deploy('best') and automatic deployment pick: the first run the
-- leaderboard ranks (among runs within one standard error of the top
-- score, the faster) whose model easeml can apply (a built-in family,
-- artifact stored); results on an older snapshot only when the current one
-- has none.
CREATE OR REPLACE FUNCTION easeml._best_deployable(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT l.run_id
	  FROM easeml.leaderboard l
	 WHERE l.task_id = _best_deployable.task_id AND l.family <> 'external'
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = l.run_id)
	 ORDER BY l.rank
	 LIMIT 1
$$;

-- A run ended: say so, say when it is its task's new best, and deploy the
-- task's best deployable run when this run changed it (it is that run, or
-- the new top score that decides which runs are tied with the best) and
-- the task deploys automatically.  Runs in the session that ends the run
-- (the scheduler, or easeml.cancel), so the events go out when the run's
-- end commits.
CREATE OR REPLACE FUNCTION easeml._run_ended()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	best		bigint;
	pick		bigint;
	again		bigint;
BEGIN
	IF TG_RELID <> 'easeml.runs'::regclass THEN
		RAISE EXCEPTION 'easeml._run_ended() only watches easeml.runs'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	PERFORM easeml._notify('run_finished', NEW.task_id, NEW.id);
	-- [refit] a refit on every row: swap its artifact in where a
	-- deployment waits for it; an interrupted one is queued again (three
	-- tries); a failed one leaves the split model serving, and says why
	IF NEW.purpose = 'refit' THEN
		SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id;
		PERFORM easeml._lock_deployments(t.id);
		IF NEW.status = 'succeeded' THEN
			IF t.refit_all AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = NEW.id) THEN
				UPDATE easeml.deployments d SET refitted_at = clock_timestamp()
				 WHERE d.refit_run_id = NEW.id AND d.refitted_at IS NULL;
				IF EXISTS (SELECT 1 FROM easeml.deployments d
							WHERE d.task_id = t.id AND d.active AND d.refit_run_id = NEW.id) THEN
					PERFORM easeml._notify('refitted', t.id, NEW.id);
				END IF;
			END IF;
		ELSIF NEW.status = 'interrupted' AND NOT NEW.cancel_requested AND t.refit_all
			AND (SELECT count(*) FROM easeml.runs x WHERE x.refit_of = NEW.refit_of) < 3
			AND EXISTS (SELECT 1 FROM easeml.deployments d
						 WHERE d.task_id = t.id AND d.active AND d.refit_run_id = NEW.id) THEN
			INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
									 refit_of, snapshot_version)
			VALUES (t.id, t.tenant, NEW.model_id, 'queued', 'scheduler', 'refit',
					NEW.refit_of, NEW.snapshot_version)
			RETURNING id INTO again;
			UPDATE easeml.deployments d SET refit_run_id = again WHERE d.refit_run_id = NEW.id;
		END IF;
		RETURN NULL;
	END IF;
	IF NEW.status <> 'succeeded' THEN
		RETURN NULL;
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id;
	SELECT r.id INTO best
	  FROM easeml.runs r
	 WHERE r.task_id = t.id AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.snapshot_version IS DISTINCT FROM t.snapshot_version, r.score DESC, r.seconds, r.id
	 LIMIT 1;
	IF best = NEW.id THEN
		PERFORM easeml._notify('new_best', NEW.task_id, NEW.id);
	END IF;
	-- deploy the best deployable run when this run changed it: it is that
	-- run, or the new top score that decides which runs are tied with it
	IF t.auto_deploy THEN
		PERFORM easeml._lock_deployments(t.id);
		pick := easeml._best_deployable(t.id);
		IF pick IS NOT NULL AND (best = NEW.id OR pick = NEW.id)
			AND NOT EXISTS (SELECT 1 FROM easeml.deployments d
							 WHERE d.task_id = t.id AND d.active AND d.run_id = pick) THEN
			PERFORM easeml._activate(t.id, pick, 'auto', current_user);
		END IF;
	END IF;
	RETURN NULL;
END;
$$;

-- Artifact retention, as before, but a large artifact is also kept while
-- its run is deployed, is the deployment a rollback returns to (the latest
-- two deployments not rolled back; rollback skips older ones whose
-- artifact is gone), or is what deploy('best') would deploy.
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
BEGIN
	SELECT task_id INTO tid FROM easeml.runs WHERE id = run_id;
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	SELECT r.id INTO best FROM easeml.runs r
	 WHERE r.task_id = tid AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.score DESC, r.seconds, r.id LIMIT 1;
	pick := easeml._best_deployable(tid);	/* what deploy('best') takes */
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.task_id = tid AND a.bytes > cap
	   AND r.id IS DISTINCT FROM best AND r.id IS DISTINCT FROM pick
	   AND r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')
	   -- [refit] and so is the refit of either
	   AND r.id NOT IN (SELECT k.id
						  FROM (SELECT d.run_id, d.refit_run_id FROM easeml.deployments d
								 WHERE d.task_id = tid AND d.rolled_back_at IS NULL
								 ORDER BY d.id DESC LIMIT 2) l
						 CROSS JOIN LATERAL (VALUES (l.run_id), (l.refit_run_id)) k (id)
						 WHERE k.id IS NOT NULL);
END;
$$;
