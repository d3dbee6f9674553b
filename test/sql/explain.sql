-- easeml.explain(task): what the scheduler would train next for a task and
-- why, computed by the scheduler's own code in the backend; each kind's
-- prior learns from that kind's history only (issue 7 items 4 and 6).
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
-- write_csv(name, rows): the server writes a CSV file into its data directory
CREATE FUNCTION public.write_csv(name text, rows text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE format('COPY (SELECT * FROM (VALUES %s) v) TO %L (FORMAT csv)',
				   rows, current_setting('data_directory') || '/' || name);
END $f$;
-- three candidates that serve both kinds; the others are disabled here
CREATE TEMP TABLE was_enabled AS SELECT id, enabled FROM easeml.models;
UPDATE easeml.models SET enabled = name IN ('knn-1', 'knn-3', 'ridge-1');
DELETE FROM easeml.history;
-- classification history: knn-3 is best, ridge-1 worst
SELECT write_csv('easeml_explain_cls.csv', $$
	('dataset', 'knn-1', 'knn-3', 'ridge-1'),
	('c1', '0.60', '0.95', '0.30'),
	('c2', '0.65', '0.90', '0.35'),
	('c3', '0.55', '1.00', '0.25')$$);
SELECT easeml.load_history('easeml_explain_cls.csv', 'regress');
-- regression history (R^2): the other way round
SELECT write_csv('easeml_explain_reg.csv', $$
	('dataset', 'knn-1', 'knn-3', 'ridge-1'),
	('r1', '0.50', '0.20', '0.90'),
	('r2', '0.55', '0.25', '0.85'),
	('r3', '0.45', '0.15', '0.95')$$);
SELECT easeml.load_history('easeml_explain_reg.csv', 'regress', kind => 'regression');

CREATE ROLE regress_ex_a LOGIN;
CREATE ROLE regress_ex_b LOGIN;
SELECT easeml.add_tenant('regress_ex_a');
SELECT easeml.add_tenant('regress_ex_b');
CREATE TABLE public.ex_points (x1 float8, x2 float8, label text, y float8);
INSERT INTO public.ex_points
SELECT i * 0.5, (i % 7) * 1.0, (ARRAY['a', 'b', 'c'])[i % 3 + 1], i * 1.5
  FROM generate_series(1, 30) i;
GRANT SELECT ON public.ex_points TO regress_ex_a;
SET ROLE regress_ex_a;
INSERT INTO easeml.tasks (name, source, target) VALUES ('ex_cls', 'public.ex_points', 'label');
INSERT INTO easeml.tasks (name, source, target, kind)
VALUES ('ex_reg', 'public.ex_points', 'y', 'regression');

-- before any run, a task's predicted scores are its own kind's prior means:
-- the regression task's from the regression history only
SELECT rank IS NOT NULL AS ranked, model, round(predicted_score::numeric, 3) AS predicted,
	   score_sd > 0 AS uncertain, est_seconds > 0 AS costed, acquisition > 0 AS positive
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_reg'))
 ORDER BY model;
SELECT model, round(predicted_score::numeric, 3) AS predicted
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls'))
 ORDER BY model;
-- the first row says why; candidates are ranked by acquisition, best first
SELECT rank, regexp_replace(why, 'task \d+', 'task N') AS why
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_reg'), 3) ORDER BY rank;
SELECT bool_and(acquisition >= coalesce(next_acq, acquisition)) AS best_first
  FROM (SELECT acquisition, lead(acquisition) OVER (ORDER BY rank) AS next_acq
		  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls'))) e;
SELECT count(*) AS rows_asked_for_one
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls'), 1);
RESET ROLE;

-- a result moves the posterior and takes its candidate out of the ranking;
-- the task's own row joins the classification history, never its prior
INSERT INTO easeml.runs (task_id, model_id, status, started_at)
SELECT t.id, m.id, 'running', now() FROM easeml.tasks t, easeml.models m
 WHERE t.name = 'ex_cls' AND m.name = 'knn-3';
SELECT easeml._finish_run(r.id, 'succeeded', 0, '{"score": 0.5}', NULL)
  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'ex_cls';
SET ROLE regress_ex_a;
SELECT model, round(predicted_score::numeric, 3) AS predicted
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls'))
 ORDER BY model;
SELECT why LIKE '%prior: classification history only, 3 seed row(s) and 0 other task(s)%' AS own_row_left_out
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls')) WHERE rank = 1;
-- a paused task is not trained
UPDATE easeml.tasks SET status = 'paused' WHERE name = 'ex_reg';
SELECT rank, model, why FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_reg'));
UPDATE easeml.tasks SET status = 'active' WHERE name = 'ex_reg';
-- by name, as every other tenant function: the same rows as by id
SELECT (SELECT array_agg(model ORDER BY rank) FROM easeml.explain('ex_cls', 3))
	 = (SELECT array_agg(model ORDER BY rank)
		  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls'), 3)) AS by_name_same,
	   (SELECT count(*) FROM easeml.explain('ex_cls', 3)) AS by_name_rows;
RESET ROLE;

-- another tenant cannot explain, or learn of, a task that is not its own
SELECT id AS cls_id FROM easeml.tasks WHERE name = 'ex_cls' \gset
SET ROLE regress_ex_b;
SELECT regexp_replace(try('SELECT * FROM easeml.explain(' || :cls_id || ')'), '\d+ does', 'N does') AS other_tenant;
SELECT try('SELECT * FROM easeml.explain(''ex_cls'')') AS other_tenant_by_name;
RESET ROLE;
-- bad input
SELECT try('SELECT * FROM easeml.explain(NULL)');
SELECT try('SELECT * FROM easeml.explain(NULL::bigint)');
SELECT try('SELECT * FROM easeml.explain(''no_such_task'')');
SELECT try('SELECT * FROM easeml.explain(' || :cls_id || ', 0)');
SELECT try('SELECT * FROM easeml.explain(-1)');

-- what drives the cost estimates: each model's work relative to its
-- family's default, and the families that fit one model per class
SELECT name, round(easeml._cost_work(family, params)::numeric, 3) AS work,
	   easeml._cost_per_class(family) AS per_class
  FROM easeml.models
 WHERE name IN ('gbt-100', 'gbt-300-lr0.05', 'rf-50', 'mlp-512-256', 'cnn-16-32-e10',
				'knn-3', 'softmax-l2-1', 'linear-svm-c1')
 ORDER BY name;
-- a parameter that is not a positive number counts as the default
SELECT easeml._cost_work('gbt', '{"n_rounds": "many"}') AS text_rounds,
	   easeml._cost_work('mlp', '{"hidden": [64, "x", -3]}') AS odd_layers,
	   easeml._cost_work('cnn', '{"epochs": 0, "filters": []}') AS empty;
-- what a model's parameters add to its family's complexity formula in the
-- cost model (easeml._cost_shape, src/core/costmodel.h); odd entries are ignored
SELECT name, round(s.work::numeric, 3) AS work, round(s.width::numeric, 1) AS width,
	   s.inner_products, s.last_width
  FROM easeml.models, easeml._cost_shape(family, params) s
 WHERE name IN ('gbt-300-lr0.05', 'rf-200-half', 'rf-200-depth12', 'mlp-512-256',
				'cnn-16-32-e10', 'knn-3', 'softmax-l2-1')
 ORDER BY name;
SELECT * FROM easeml._cost_shape('mlp', '{"hidden": [64, "x", -3]}');
SELECT * FROM easeml._cost_shape('cnn', '{"epochs": "x", "filters": []}');

-- the view easeml.cost_estimates shows what the scheduler uses: for an
-- active task, the estimates easeml.explain ranks the candidates with
SELECT count(*) AS candidates, bool_and(abs(e.est_seconds / c.seconds - 1) < 1e-9) AS same,
	   bool_and(c.basis = 'estimated') AS none_ran
  FROM easeml.explain((SELECT id FROM easeml.tasks WHERE name = 'ex_cls'), 50) e
  JOIN easeml.models m ON m.name = e.model
  JOIN easeml.cost_estimates c
	ON c.model_id = m.id AND c.task_id = (SELECT id FROM easeml.tasks WHERE name = 'ex_cls');

-- the scheduler's estimates against measured times: runs it chose only
-- (the fixture run above was not chosen by a decision)
SELECT count(*) AS fixture_runs FROM easeml.cost_accuracy;

-- clean up
RESET ROLE;
DELETE FROM easeml.tasks WHERE tenant::text LIKE 'regress\_ex\_%';
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_ex\_%';
DELETE FROM easeml.history;
UPDATE easeml.models m SET enabled = w.enabled FROM was_enabled w WHERE w.id = m.id;
DROP TABLE public.ex_points;
DROP FUNCTION public.write_csv(text, text);
DROP OWNED BY regress_ex_a, regress_ex_b;
DROP ROLE regress_ex_a, regress_ex_b;
