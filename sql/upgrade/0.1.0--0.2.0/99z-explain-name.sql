-- [explain] sql/easeml.sql makes the same change
-- Issue 24 item 6: easeml.explain takes a task name too.
-- easeml.explain by the task's name, as every other tenant function takes
-- it; the id form above stays.  It runs as the caller: the C function
-- checks the task is the caller's.
CREATE FUNCTION easeml.explain(task text, candidates int DEFAULT 5,
	OUT rank int, OUT model text, OUT predicted_score float8,
	OUT score_sd float8, OUT est_seconds float8, OUT acquisition float8,
	OUT why text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	tid			bigint;
BEGIN
	IF task IS NULL THEN
		RAISE EXCEPTION 'task must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass the name or id of one of your tasks: SELECT id, name FROM easeml.tasks.';
	END IF;
	SELECT t.id INTO tid FROM easeml.tasks t
	 WHERE t.tenant OPERATOR(pg_catalog.=) current_user
	   AND t.name OPERATOR(pg_catalog.=) task;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" does not exist for tenant "%"', task, current_user
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	RETURN QUERY SELECT * FROM easeml.explain(tid, candidates);
END;
$$;
COMMENT ON FUNCTION easeml.explain(text, int) IS
	'easeml.explain(bigint, int) for one of your tasks by name';
GRANT EXECUTE ON FUNCTION easeml.explain(text, int) TO PUBLIC;
