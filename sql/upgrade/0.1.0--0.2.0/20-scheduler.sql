-- ---------------------------------------------------------------------------
-- [scheduler] easeml 0.1.0 -> 0.2.0: the scheduler's catalog changes (issue 7)
-- ---------------------------------------------------------------------------

-- [scheduler] the shared CSV reader (src/history.c, src/csv.c) for load_history
CREATE FUNCTION easeml._csv_cells(csv text, path text,
	OUT line int, OUT col int, OUT row_id text, OUT header text, OUT value float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_csv_cells'
LANGUAGE C IMMUTABLE STRICT;
REVOKE ALL ON FUNCTION easeml._csv_cells(text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION easeml.load_history(path text, source text DEFAULT NULL,
									one_minus boolean DEFAULT false)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	lines		int[];
	cols		int[];
	ids			text[];
	headers		text[];
	vals		float8[];
	ncol		int;
	model_ids	int[] := '{}';
	unknown		text[] := '{}';
	q			float8;
	n			int := 0;
	mid			int;
BEGIN
	IF path IS NULL THEN
		RAISE EXCEPTION 'path must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass the path of a CSV file the server can read, e.g. easeml.load_history(''history.csv'').';
	END IF;
	-- the shared CSV reader (src/csv.c) parses the file: quotes, line breaks
	-- in quotes, CRLF, missing cells, repeated dataset ids; every data row
	-- has every column, so the first ncol cells carry the header in order
	SELECT array_agg(c.line ORDER BY c.line, c.col), array_agg(c.col ORDER BY c.line, c.col),
		   array_agg(c.row_id ORDER BY c.line, c.col), array_agg(c.header ORDER BY c.line, c.col),
		   array_agg(c.value ORDER BY c.line, c.col), count(DISTINCT c.col)
	  INTO lines, cols, ids, headers, vals, ncol
	  FROM easeml._csv_cells(pg_read_file(path), path) c;
	FOR j IN 1..ncol LOOP
		SELECT id INTO mid FROM easeml.models WHERE name = headers[j];
		model_ids := model_ids || mid;
		IF mid IS NULL THEN
			unknown := unknown || headers[j];
		END IF;
	END LOOP;
	IF cardinality(unknown) = ncol THEN
		RAISE EXCEPTION 'no column of "%" names a model of easeml.models', path
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The header must hold easeml model names, e.g. ' ||
						 (SELECT string_agg(name, ',' ORDER BY id) FROM (SELECT id, name FROM easeml.models ORDER BY id LIMIT 3) m) || '.';
	END IF;
	IF cardinality(unknown) > 0 THEN
		RAISE NOTICE 'ignoring % column(s) that name no model: %',
			cardinality(unknown), array_to_string(unknown, ', ');
	END IF;
	FOR i IN 1..cardinality(vals) LOOP
		CONTINUE WHEN model_ids[cols[i] - 1] IS NULL OR vals[i] IS NULL;
		q := CASE WHEN one_minus THEN 1 - vals[i] ELSE vals[i] END;
		IF NOT (q >= 0 AND q <= 1) THEN
			RAISE EXCEPTION 'line % column % of "%": quality % is outside [0, 1]', lines[i], cols[i], path, q
				USING ERRCODE = 'numeric_value_out_of_range',
					  HINT = CASE WHEN NOT one_minus THEN 'For an error matrix, pass one_minus => true.' END;
		END IF;
		INSERT INTO easeml.history (dataset, model_id, quality, source)
		VALUES (ids[i], model_ids[cols[i] - 1], q, coalesce(source, path))
		ON CONFLICT (dataset, model_id) DO UPDATE
			SET quality = EXCLUDED.quality, source = EXCLUDED.source;
		n := n + 1;
	END LOOP;
	PERFORM easeml.wake_scheduler();
	RETURN n;
END;
$$;
COMMENT ON FUNCTION easeml.load_history(text, text, boolean) IS
	'load seed history for the scheduler''s prior from a server-side CSV (admin only): header = model names, rows = dataset id then qualities in [0,1]; returns the cells loaded';
