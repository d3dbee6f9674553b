-- ---------------------------------------------------------------------------
-- [live] easeml 0.1.0 -> 0.2.0: the live scheduler (issue 7 items 3-6,
-- issue 8 item 3): explained next decisions, the cost model's accuracy;
-- sql/easeml.sql holds the same for a fresh install
-- ---------------------------------------------------------------------------

-- decisions are looked up by their run (the run budget, cost_accuracy),
-- and each task's latest decision by the scheduler's every load
CREATE INDEX decisions_run_idx ON easeml.decisions (run_id);
CREATE INDEX decisions_task_last_idx ON easeml.decisions (task_id, id);

-- [live] fn: what the scheduler would train next for a task, and why
CREATE FUNCTION easeml.explain(task bigint, candidates int DEFAULT 5,
	OUT rank int, OUT model text, OUT predicted_score float8,
	OUT score_sd float8, OUT est_seconds float8, OUT acquisition float8,
	OUT why text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_explain'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.explain(bigint, int) IS
	'what the scheduler would train next for one of your tasks: its candidates best first (predicted score and its standard deviation in the task''s score units, estimated seconds, the policy''s acquisition value) and, on the first row, whether and when the task is served, by which rule, and what its prior learned from (docs/scheduler.md)';
GRANT EXECUTE ON FUNCTION easeml.explain(bigint, int) TO PUBLIC;
-- [live] fn: what drives the cost of a fit, for the scheduler's cost model
-- (src/worker/catalog.c, docs/scheduler.md 7.4).  A parameter of a model row is
-- read as a positive number or not at all: a row the trainer refuses never
-- breaks an estimate.
CREATE FUNCTION easeml._param_num(params jsonb, key text, dflt float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE WHEN jsonb_typeof(params -> key) = 'number' AND (params ->> key)::float8 > 0
				THEN (params ->> key)::float8 ELSE dflt END
$$;

CREATE FUNCTION easeml._param_sum(params jsonb, key text, dflt float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE WHEN jsonb_typeof(params -> key) = 'array'
				THEN coalesce((SELECT sum(x::text::float8) FROM jsonb_array_elements(params -> key) x
								WHERE jsonb_typeof(x) = 'number' AND x::text::float8 > 0), dflt)
				ELSE dflt END
$$;

-- The work of one fit of a model relative to its family's default:
-- boosting rounds, trees, epochs or iterations, layer widths.
CREATE FUNCTION easeml._cost_work(family text, params jsonb)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE family
		WHEN 'gbt' THEN easeml._param_num(params, 'n_rounds', 100) / 100
		WHEN 'random_forest' THEN easeml._param_num(params, 'n_trees', 100) / 100
		WHEN 'softmax' THEN easeml._param_num(params, 'max_iter',
											  easeml._param_num(params, 'epochs', 100)) / 100
		WHEN 'cnn' THEN easeml._param_num(params, 'epochs', 5) / 5
						* easeml._param_sum(params, 'filters', 48) / 48
		WHEN 'mlp' THEN easeml._param_sum(params, 'hidden', 128) / 128
		ELSE 1 END
$$;

-- Families that fit one model per class (a tree per class and round,
-- one-vs-rest): their cost grows with the classes of a task of more than 2.
-- (easeml._cost_rates repeats the list inline, where it runs per run: keep
-- them equal.)
CREATE FUNCTION easeml._cost_per_class(family text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
	SELECT family IN ('gbt', 'softmax', 'linear_svm')
$$;

-- Measured rate per model: seconds per cell (rows x features x folds,
-- times the classes of a task of more than 2 for the families of
-- easeml._cost_per_class), the geometric mean over the tasks it ran on.
-- One row per measured model; the scheduler divides by each model's work
-- (easeml._cost_work) and pools families (src/worker/catalog.c).  PL/pgSQL: its
-- body names a column that a later part of the upgrade adds (tasks.folds).
CREATE FUNCTION easeml._cost_rates(OUT model_id int, OUT per_cell float8)
RETURNS SETOF record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
	RETURN QUERY
	SELECT d.mid, exp(avg(ln(d.rate)))
	  FROM (SELECT r.model_id AS mid,
				   max(r.seconds) / max(greatest(t.n_rows * cardinality(t.features) * coalesce(t.folds, 1), 1)
										* CASE WHEN m.family IN ('gbt', 'softmax', 'linear_svm')
													AND t.kind = 'classification' AND t.n_classes > 2
											   THEN t.n_classes ELSE 1 END)::float8 AS rate
			  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
			  JOIN easeml.models m ON m.id = r.model_id
			 WHERE r.status = 'succeeded' AND r.seconds > 0
			 GROUP BY r.task_id, r.model_id) d
	 GROUP BY d.mid;
END;
$$;
REVOKE ALL ON FUNCTION easeml._param_num(jsonb, text, float8), easeml._param_sum(jsonb, text, float8),
	easeml._cost_work(text, jsonb), easeml._cost_per_class(text), easeml._cost_rates() FROM PUBLIC;

-- [live] How good the scheduler's cost estimates were: each finished run
-- chosen by the scheduler, with the estimate its decision used and the
-- time it took (wall seconds, process start and data load included)
CREATE VIEW easeml.cost_accuracy WITH (security_invoker = true) AS
SELECT r.id AS run_id,
	   r.task_id,
	   r.tenant,
	   m.name AS model,
	   d.est_seconds,
	   r.seconds,
	   ln(d.est_seconds / r.seconds) AS log_ratio,
	   d.rule
  FROM easeml.runs r
  JOIN easeml.decisions d ON d.run_id = r.id
  JOIN easeml.models m ON m.id = r.model_id
 WHERE r.status = 'succeeded' AND r.seconds > 0 AND d.est_seconds > 0;
COMMENT ON VIEW easeml.cost_accuracy IS
	'each succeeded run the scheduler chose: the estimate its decision used (est_seconds), the measured seconds and ln(estimate / measured) (a tenant sees its own runs)';
GRANT SELECT ON easeml.cost_accuracy TO PUBLIC;
-- [live] end
