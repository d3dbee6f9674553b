-- Seed history for the scheduler's prior, from a quality-matrix CSV.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
-- write_csv(name, rows): the server writes a CSV file into its data
-- directory, where relative paths of pg_read_file point
CREATE FUNCTION public.write_csv(name text, rows text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format('COPY (SELECT * FROM (VALUES %s) v) TO %L (FORMAT csv)',
				   rows, current_setting('data_directory') || '/' || name);
END $f$;
CREATE ROLE regress_lab_a LOGIN;
SELECT write_csv('easeml_history_ok.csv', $$
	('dataset', 'knn-1', 'gnb', 'not-a-model', 'softmax-l2-1'),
	('d1', '0.9', '0.8', '0.5', '0.95'),
	('d2', '0.7', '', '0.5', '0.75'),
	('d3', 'NA', '0.6', '0.5', '0.65')$$);
SELECT easeml.load_history('easeml_history_ok.csv', 'regress');
SELECT h.dataset, m.name, h.quality, h.source
  FROM easeml.history h JOIN easeml.models m ON m.id = h.model_id
 ORDER BY h.dataset, m.name;
-- loading again replaces, never duplicates
SELECT easeml.load_history('easeml_history_ok.csv', 'regress again');
SELECT count(*), min(source) FROM easeml.history;

-- what COPY quotes is read back as written: a dataset id with a comma, a
-- quote and a line break, a quoted number, a subnormal number, CRLF
SELECT write_csv('easeml_history_quoted.csv', $$
	('dataset', 'knn-5', 'gnb'),
	(E'lab "A", run\n2', '0.5', '1e-308'),
	('plain', ' 0.25 ', '')$$);
SELECT easeml.load_history('easeml_history_quoted.csv', 'quoted');
SELECT h.dataset, m.name, h.quality
  FROM easeml.history h JOIN easeml.models m ON m.id = h.model_id
 WHERE h.source = 'quoted' ORDER BY h.dataset, m.name;
DELETE FROM easeml.history WHERE source = 'quoted';

-- an error matrix is turned into quality with one_minus
SELECT write_csv('easeml_history_err.csv', $$('id', 'knn-5'), ('e1', '0.25')$$);
SELECT easeml.load_history('easeml_history_err.csv', one_minus => true);
SELECT quality FROM easeml.history WHERE dataset = 'e1';

-- errors
SELECT write_csv('easeml_history_bad.csv', $$('id', 'knn-5'), ('e1', '1.25')$$);
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
SELECT write_csv('easeml_history_bad.csv', $$('id', 'knn-5'), ('e1', 'high')$$);
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
SELECT write_csv('easeml_history_bad.csv', $$('id', 'nothing', 'known'), ('x', '0.5', '0.5')$$);
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
-- COPY quotes a field holding a comma: one field, and not a number
SELECT write_csv('easeml_history_bad.csv', $$('id', 'knn-5'), ('e1', '0.5,0.6')$$);
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
-- a row with too many fields, written as raw lines (COPY's text format
-- leaves commas alone)
CREATE FUNCTION write_lines(name text, lines text[]) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format('COPY (SELECT unnest(%L::text[])) TO %L',
				   lines, current_setting('data_directory') || '/' || name);
END $f$;
SELECT write_lines('easeml_history_bad.csv', '{"id,knn-5", "e1,0.5,0.6"}');
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
SELECT write_lines('easeml_history_bad.csv', '{"id,knn-5", "\"e1,0.5"}');
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
-- a dataset id that repeats
SELECT write_csv('easeml_history_bad.csv', $$('id', 'knn-5'), ('e1', '0.5'), ('e1', '0.6')$$);
SELECT try($$SELECT easeml.load_history('easeml_history_bad.csv')$$);
SELECT try($$SELECT easeml.load_history(NULL)$$);
SELECT try($$SELECT easeml.load_history('no_such_file.csv')$$);
SET ROLE regress_lab_a;
SELECT try($$SELECT easeml.load_history('easeml_history_ok.csv')$$);
RESET ROLE;
DELETE FROM easeml.history;

-- clean up
DROP FUNCTION public.write_csv(text, text);
DROP ROLE regress_lab_a;
