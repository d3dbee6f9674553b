-- [inputs] sql/easeml.sql makes the same changes
-- ---------------------------------------------------------------------------
-- [inputs] Issue 24 item 5: predict's input surprises.  A boolean feature
-- given as text reads PostgreSQL's spellings (src/sql/sql_predict_conv.c); each
-- predict, predict_value and predict_proba takes strict (default false:
-- an unknown category is an error, 22023, with strict => true), so the
-- two-argument forms are replaced by three-argument ones with a default
-- (predict is new in 0.2.0: nothing of a 0.1.0 database depends on it);
-- easeml.prediction_stats counts what predict saw (src/sql/sql_predict_stats.c).
-- docs/predict.md.
-- ---------------------------------------------------------------------------

DROP FUNCTION easeml.predict(text, anyelement);
DROP FUNCTION easeml.predict(text, float8[]);
DROP FUNCTION easeml.predict(text, text[]);
DROP FUNCTION easeml.predict_value(text, anyelement);
DROP FUNCTION easeml.predict_value(text, float8[]);
DROP FUNCTION easeml.predict_value(text, text[]);
DROP FUNCTION easeml.predict_proba(text, anyelement);
DROP FUNCTION easeml.predict_proba(text, float8[]);
DROP FUNCTION easeml.predict_proba(text, text[]);

-- predict: the label of a classification task (as the label column's
-- ::text), or the value of a regression task as text.  [inputs] strict:
-- a category the model was not trained on is an error (22023), not an
-- unknown category (docs/predict.md).
CREATE FUNCTION easeml.predict(task text, "row" anyelement, strict boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict(task text, features float8[], strict boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict(task text, features text[], strict boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict(text, anyelement, boolean) IS
	'the deployed model''s prediction for a row with the task''s feature columns: the label, or the value as text';
COMMENT ON FUNCTION easeml.predict(text, float8[], boolean) IS
	'the deployed model''s prediction for features in tasks.features order (numbers; dates as epoch seconds)';
COMMENT ON FUNCTION easeml.predict(text, text[], boolean) IS
	'the deployed model''s prediction for features in tasks.features order, each as text';

-- predict_value: a regression task's prediction as float8
CREATE FUNCTION easeml.predict_value(task text, "row" anyelement, strict boolean DEFAULT false)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_value(task text, features float8[], strict boolean DEFAULT false)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_value(task text, features text[], strict boolean DEFAULT false)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict_value(text, anyelement, boolean) IS
	'the deployed model''s prediction for a row of a regression task';
COMMENT ON FUNCTION easeml.predict_value(text, float8[], boolean) IS
	'the deployed model''s prediction of a regression task for features in tasks.features order';
COMMENT ON FUNCTION easeml.predict_value(text, text[], boolean) IS
	'the deployed model''s prediction of a regression task for features as text, in tasks.features order';

-- predict_proba: {"class": probability, ...} of a classification task
CREATE FUNCTION easeml.predict_proba(task text, "row" anyelement, strict boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_proba(task text, features float8[], strict boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_proba(task text, features text[], strict boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict_proba(text, anyelement, boolean) IS
	'the deployed model''s class probabilities for a row, as {"class": probability}';
COMMENT ON FUNCTION easeml.predict_proba(text, float8[], boolean) IS
	'the deployed model''s class probabilities for features in tasks.features order';
COMMENT ON FUNCTION easeml.predict_proba(text, text[], boolean) IS
	'the deployed model''s class probabilities for features as text, in tasks.features order';

-- [inputs] What predict saw, per task and serving run, since the server
-- started: counters in shared memory, added to when a statement that
-- predicts ends (src/sql/sql_predict_stats.c); never a write per prediction, so
-- predict stays fast in a plain SELECT, a read-only transaction or on a
-- standby.  The function returns the tasks the caller sees only.
CREATE FUNCTION easeml._prediction_counts(OUT task_id bigint, OUT run_id bigint, OUT "rows" bigint,
										  OUT unknown_rows bigint, OUT imputed_rows bigint,
										  OUT since timestamptz, OUT last_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_prediction_counts'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._prediction_counts() IS
	'internal: the prediction counters of the caller''s tasks, per task and run, since the server started';

CREATE VIEW easeml.prediction_stats WITH (security_invoker = true) AS
SELECT t.name AS task,
	   t.tenant,
	   c.task_id,
	   c.run_id,
	   m.name AS model,
	   c.run_id IS NOT DISTINCT FROM easeml._deployed_run(t.id) AS serving,
	   c."rows" AS predicted_rows,
	   c.unknown_rows AS unknown_category_rows,
	   c.imputed_rows,
	   c.since,
	   c.last_at
  FROM easeml._prediction_counts() c
  JOIN easeml.tasks t ON t.id = c.task_id
  LEFT JOIN easeml.runs r ON r.id = c.run_id
  LEFT JOIN easeml.models m ON m.id = r.model_id;
COMMENT ON VIEW easeml.prediction_stats IS
	'what easeml.predict saw for each of your tasks and the run that served it, since the server started: rows predicted, rows with a category the model was not trained on, rows with a missing value filled in';
GRANT SELECT ON easeml.prediction_stats TO PUBLIC;

