

-- ===========================================================================
-- Predict in SQL (docs/predict.md; src/sql/sql_predict.c, src/sql/sql_predict_cache.c,
-- the predict module src/trainer/predict/tr_predict.h)
--
-- The same block ends sql/easeml.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

-- The run whose model serves a task: here the best succeeded run on the
-- task's current snapshot whose model easeml can apply (a built-in family,
-- artifact stored), ranked as the leaderboard ranks; the deployments topic
-- (75-results.sql) replaces it with the task's active deployment.  Read as
-- the caller, so row-level security keeps it to the caller's own runs.
CREATE FUNCTION easeml._deployed_run(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT r.id
	  FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id
	  JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.task_id = _deployed_run.task_id
	   AND r.status = 'succeeded' AND r.score IS NOT NULL
	   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
	   AND m.family <> 'external'
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = r.id)
	 ORDER BY r.score DESC, r.seconds, r.id
	 LIMIT 1
$$;
COMMENT ON FUNCTION easeml._deployed_run(bigint) IS
	'internal: the run whose model easeml.predict uses for a task (NULL: none yet)';

-- predict: the label of a classification task (as the label column's
-- ::text), or the value of a regression task as text
CREATE FUNCTION easeml.predict(task text, "row" anyelement)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict(task text, features float8[])
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict(task text, features text[])
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict(text, anyelement) IS
	'the deployed model''s prediction for a row with the task''s feature columns: the label, or the value as text';
COMMENT ON FUNCTION easeml.predict(text, float8[]) IS
	'the deployed model''s prediction for features in tasks.features order (numbers; dates as epoch seconds)';
COMMENT ON FUNCTION easeml.predict(text, text[]) IS
	'the deployed model''s prediction for features in tasks.features order, each as text';

-- predict_value: a regression task's prediction as float8
CREATE FUNCTION easeml.predict_value(task text, "row" anyelement)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_value(task text, features float8[])
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_value(task text, features text[])
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict_value(text, anyelement) IS
	'the deployed model''s prediction for a row of a regression task';
COMMENT ON FUNCTION easeml.predict_value(text, float8[]) IS
	'the deployed model''s prediction of a regression task for features in tasks.features order';
COMMENT ON FUNCTION easeml.predict_value(text, text[]) IS
	'the deployed model''s prediction of a regression task for features as text, in tasks.features order';

-- predict_proba: {"class": probability, ...} of a classification task
CREATE FUNCTION easeml.predict_proba(task text, "row" anyelement)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_proba(task text, features float8[])
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_proba(task text, features text[])
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict_proba(text, anyelement) IS
	'the deployed model''s class probabilities for a row, as {"class": probability}';
COMMENT ON FUNCTION easeml.predict_proba(text, float8[]) IS
	'the deployed model''s class probabilities for features in tasks.features order';
COMMENT ON FUNCTION easeml.predict_proba(text, text[]) IS
	'the deployed model''s class probabilities for features as text, in tasks.features order';
