-- ---------------------------------------------------------------------------
-- [scheduler] easeml 0.1.0 -> 0.2.0: the scheduler's catalog changes
-- (issue 7: explained decisions, history kinds, the shared CSV reader,
-- easeml.explain); sql/easeml.sql holds the same for a fresh install
-- ---------------------------------------------------------------------------

-- [scheduler] 0.2.0: explained decisions, task kinds in the history
-- (sql/upgrade/0.1.0--0.2.0/20-scheduler.sql makes the same changes)
-- ---------------------------------------------------------------------------
ALTER TABLE easeml.decisions
	ADD COLUMN rule text,
	ADD COLUMN score float8,
	ADD COLUMN eligible int;
COMMENT ON COLUMN easeml.decisions.rule IS
	'what decided: greedy, fairness floor, streak guard, warm start, round-robin, random, or the tenant''s own queue';
COMMENT ON COLUMN easeml.decisions.acquisition IS
	'the chosen candidate''s acquisition value (docs/scheduler.md: expected improvement per estimated second for cost-aware EI)';
COMMENT ON COLUMN easeml.decisions.score IS
	'the chosen task''s score under the rule: expected gain per second (greedy rules) or decisions since it was last served (round-robin rules)';
COMMENT ON COLUMN easeml.decisions.eligible IS
	'tasks that could have been chosen';

-- The runner-ups of each decision: the next tasks ('task') and the chosen
-- task's next candidates ('model'), best first.
CREATE TABLE easeml.decision_candidates (
	decision_id bigint NOT NULL REFERENCES easeml.decisions (id) ON DELETE CASCADE,
	role		text NOT NULL CHECK (role IN ('task', 'model')),
	rank		int NOT NULL CHECK (rank > 0),
	task_id		bigint NOT NULL REFERENCES easeml.tasks (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	model_id	int NOT NULL REFERENCES easeml.models (id),
	mu			float8,
	sigma		float8,
	est_seconds float8,
	acquisition float8,
	score		float8,
	PRIMARY KEY (decision_id, role, rank)
);
CREATE INDEX decision_candidates_task_idx ON easeml.decision_candidates (task_id);
COMMENT ON TABLE easeml.decision_candidates IS
	'runner-ups of each decision: the next tasks and the chosen task''s next candidates, with their scores (a tenant sees the rows of its own tasks)';
ALTER TABLE easeml.decision_candidates ENABLE ROW LEVEL SECURITY;
CREATE POLICY decision_candidates_own ON easeml.decision_candidates
	FOR SELECT USING (tenant = current_user);
GRANT SELECT ON easeml.decision_candidates TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.decision_candidates', '');

-- history rows of classification tasks and of regression tasks never mix in
-- a prior
ALTER TABLE easeml.history
	ADD COLUMN kind text NOT NULL DEFAULT 'classification'
		CHECK (kind IN ('classification', 'regression'));


-- [scheduler] fn: the shared CSV reader (src/sql/sql_history.c, src/core/csv.c) for load_history
CREATE FUNCTION easeml._csv_cells(csv text, path text,
	OUT line int, OUT col int, OUT row_id text, OUT header text, OUT value float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_csv_cells'
LANGUAGE C IMMUTABLE STRICT;
REVOKE ALL ON FUNCTION easeml._csv_cells(text, text) FROM PUBLIC;

DROP FUNCTION easeml.load_history(text, text, boolean);
CREATE FUNCTION easeml.load_history(path text, source text DEFAULT NULL,
									one_minus boolean DEFAULT false,
									kind text DEFAULT 'classification')
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
	IF kind IS NULL OR kind NOT IN ('classification', 'regression') THEN
		RAISE EXCEPTION 'kind must be classification or regression, not %', coalesce(quote_literal(kind), 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The rows of a history file are the scores of one kind of task: pass kind => ''regression'' for R^2 scores.';
	END IF;
	-- the shared CSV reader (src/core/csv.c) parses the file: quotes, line breaks
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
		INSERT INTO easeml.history (dataset, model_id, quality, source, kind)
		VALUES (ids[i], model_ids[cols[i] - 1], q, coalesce(source, path), kind)
		ON CONFLICT (dataset, model_id) DO UPDATE
			SET quality = EXCLUDED.quality, source = EXCLUDED.source, kind = EXCLUDED.kind;
		n := n + 1;
	END LOOP;
	PERFORM easeml.wake_scheduler();
	RETURN n;
END;
$$;
COMMENT ON FUNCTION easeml.load_history(text, text, boolean, text) IS
	'load seed history for the scheduler''s priors from a server-side CSV (admin only): header = model names, rows = dataset id then scores in [0,1] of tasks of one kind; returns the cells loaded';
REVOKE ALL ON FUNCTION easeml.load_history(text, text, boolean, text) FROM PUBLIC;
-- [scheduler] end
