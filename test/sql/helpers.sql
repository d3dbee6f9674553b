--
-- helpers: what the other regress files share (pg_regress runs them in one
-- database, this file first).
--
-- try(sql): run a statement and return 'ok', or its SQLSTATE, message and
-- hint, so that an expected error shows what a user would read.
CREATE FUNCTION public.try(sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
	RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END;
END;
$$;
GRANT EXECUTE ON FUNCTION public.try(text) TO PUBLIC;
