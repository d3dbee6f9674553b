-- The replay simulator from SQL (the same C code as easeml-replay and the
-- live scheduler's policies).
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
-- write_csv(name, rows): the server writes a CSV file into its data
-- directory, where relative paths of pg_read_file point
CREATE FUNCTION public.write_csv(name text, rows text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format('COPY (SELECT * FROM (VALUES %s) v) TO %L (FORMAT csv)',
				   rows, current_setting('data_directory') || '/' || name);
END $f$;
CREATE ROLE regress_lab_a LOGIN;
SELECT write_csv('replay_q.csv', $$
	('id', 'm1', 'm2', 'm3', 'm4', 'm5'),
	('1', '0.90', '0.70', '0.60', '0.95', '0.50'),
	('2', '0.80', '0.75', '0.65', '0.90', '0.55'),
	('3', '0.85', '0.60', '0.70', '0.97', '0.45'),
	('4', '0.70', '0.90', '0.60', '0.80', '0.50'),
	('5', '0.88', '0.72', '0.66', '0.93', '0.52'),
	('6', '0.60', '0.65', '0.95', '0.70', '0.40'),
	('7', '0.91', '0.71', '0.61', '0.96', '0.51'),
	('8', '0.82', '0.77', '0.62', '0.91', '0.58'),
	('9', '0.86', '0.66', '0.68', '0.94', '0.47'),
	('10', '0.79', '0.81', '0.63', '0.89', '0.53')$$);
SELECT write_csv('replay_c.csv', $$
	('id', 'm1', 'm2', 'm3', 'm4', 'm5'),
	('1', '1', '2', '3', '20', '1'), ('2', '1', '2', '3', '20', '1'),
	('3', '1', '2', '3', '20', '1'), ('4', '1', '2', '3', '20', '1'),
	('5', '1', '2', '3', '20', '1'), ('6', '1', '2', '3', '20', '1'),
	('7', '1', '2', '3', '20', '1'), ('8', '1', '2', '3', '20', '1'),
	('9', '1', '2', '3', '20', '1'), ('10', '1', '2', '3', '20', '1')$$);
SELECT write_csv('replay_wrong.csv', $$('id', 'm1'), ('1', '1')$$);

-- one row per (policy, threshold); the first policy is the baseline
SELECT policy, threshold, median_seconds > 0 AS reached, median_speedup, max_speedup >= median_speedup AS max_ge_median
  FROM easeml.replay('replay_q.csv', 'replay_c.csv', tenants => 3, draws => 4,
					 policies => '{popular,rr,hybrid:cost}', thresholds => '{0.1,0.05}',
					 cost_model => 'none')
 WHERE policy = 'popular';
SELECT count(*) AS rows, count(DISTINCT policy) AS policies
  FROM easeml.replay('replay_q.csv', 'replay_c.csv', tenants => 3, draws => 4,
					 policies => '{popular,rr,hybrid:cost}', thresholds => '{0.1,0.05}',
					 cost_model => 'none');
-- the same seed gives the same answer
SELECT (SELECT array_agg(median_seconds ORDER BY policy, threshold)
		  FROM easeml.replay('replay_q.csv', 'replay_c.csv', tenants => 3, draws => 4, seed => 7, cost_model => 'none')) =
	   (SELECT array_agg(median_seconds ORDER BY policy, threshold)
		  FROM easeml.replay('replay_q.csv', 'replay_c.csv', tenants => 3, draws => 4, seed => 7, cost_model => 'none'))
	   AS deterministic;
-- the loss curve never rises and ends at zero (every tenant finds its best)
WITH c AS (
	SELECT policy, seconds, mean_loss,
		   lag(mean_loss) OVER (PARTITION BY policy ORDER BY seconds) AS prev
	  FROM easeml.replay_curve('replay_q.csv', 'replay_c.csv', tenants => 3, draws => 4, cost_model => 'none'))
SELECT policy, bool_and(prev IS NULL OR mean_loss <= prev + 1e-12) AS non_increasing,
	   min(mean_loss) AS final_loss, count(*) > 1 AS has_points
  FROM c GROUP BY policy ORDER BY policy;

-- errors
SELECT try($$SELECT * FROM easeml.replay('no_such.csv')$$);
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv', policies => '{popular,nonsense}')$$);
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv', 'replay_wrong.csv', cost_model => 'none')$$);
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv', 'replay_c.csv')$$);
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv', cost_model => 'psychic')$$);
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv', draws => 0)$$);
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv', thresholds => '{0.1,-1}')$$);
SELECT try($$SELECT * FROM easeml.replay('replay_c.csv')$$);
SET ROLE regress_lab_a;
SELECT try($$SELECT * FROM easeml.replay('replay_q.csv')$$);
RESET ROLE;

-- clean up
DROP FUNCTION public.write_csv(text, text);
DROP ROLE regress_lab_a;
