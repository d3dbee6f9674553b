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
-- from it by the validation rows.  Results on an older snapshot version
-- are stale and rank after the current ones.
CREATE OR REPLACE VIEW easeml.leaderboard WITH (security_invoker = true) AS
SELECT l.task, l.tenant,
	   rank() OVER (PARTITION BY l.task_id
					ORDER BY l.stale, l.score DESC, l.seconds, l.run_id)::int AS rank,
	   l.model, l.family, l.score, l.seconds, l.run_id, l.task_id, l.finished_at,
	   l.metric, l.metric_value, l.snapshot_version, l.stale, l.score_se, l.metric_se,
	   NOT l.stale AND l.score >= first_value(l.score) OVER w
		   - coalesce(first_value(l.score_se) OVER w, 0) AS tied_with_best
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
		 WHERE r.status = 'succeeded' AND r.score IS NOT NULL) l
WINDOW w AS (PARTITION BY l.task_id ORDER BY l.stale, l.score DESC, l.seconds, l.run_id);
COMMENT ON VIEW easeml.leaderboard IS
	'succeeded runs per task, best first by the task''s metric, each score with its standard error; results on an older snapshot are stale';

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
	   (SELECT m.name FROM easeml.runs b JOIN easeml.models m ON m.id = b.model_id
		 WHERE b.task_id = t.id AND b.status = 'succeeded' AND b.score IS NOT NULL
		   AND b.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
		 ORDER BY b.score DESC, b.seconds, b.id LIMIT 1) AS best_model,
	   t.status_reason,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   t.folds,
	   t.snapshot_version,
	   v.validation_rows,
	   easeml._resolvable_difference(v.validation_rows) AS resolvable_difference,
	   easeml._resolvable_difference(v.validation_rows) > 0.05 AS small_validation
  FROM easeml.tasks t
  LEFT JOIN easeml.runs r ON r.task_id = t.id
 CROSS JOIN LATERAL (SELECT easeml._validation_rows(t.n_rows, t.val_fraction, t.folds)
						 AS validation_rows) v
 GROUP BY t.id, v.validation_rows;
COMMENT ON VIEW easeml.task_overview IS
	'one row per task: run counts, the best model so far on its current snapshot, and how finely its validation rows tell scores apart';

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
