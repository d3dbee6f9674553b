-- ---------------------------------------------------------------------------
-- [live] easeml 0.1.0 -> 0.2.0: the live scheduler (issue 7 items 3-6,
-- issue 8 item 3): explained next decisions, the cost model's accuracy;
-- sql/easeml.sql holds the same for a fresh install
-- ---------------------------------------------------------------------------

-- decisions are looked up by their run (the run budget, cost_accuracy)
CREATE INDEX decisions_run_idx ON easeml.decisions (run_id);

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
-- [live] end
