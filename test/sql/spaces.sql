-- [spaces] Hyperparameter spaces per family (easeml.model_spaces): the
-- seeded spaces, what is refused (with a hint), a model's coordinates,
-- proposals, and generated candidates: made for one task only, seen by its
-- tenant only, marked on the leaderboard, gone with their task.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_spaces_a LOGIN;
CREATE ROLE regress_spaces_b LOGIN;
SELECT easeml.add_tenant('regress_spaces_a');
SELECT easeml.add_tenant('regress_spaces_b');
GRANT EXECUTE ON FUNCTION public.try(text) TO PUBLIC;

-- ---- the seeded spaces ------------------------------------------------------
SELECT family, string_agg(name || ':' || type, ', ' ORDER BY name) AS dims
  FROM easeml.model_spaces GROUP BY family ORDER BY family;

-- ---- bad rows are refused, each with a hint -------------------------------
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('knn', 'k', 'int', 1, 50, '5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('ridge', 'x y', 'float', 0, 1, '0.5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('ridge', 'alpha2', 'real', 0, 1, '0.5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('ridge', 'alpha2', 'float', 1, 1, '1')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('ridge', 'alpha2', 'log-float', 0, 1, '0.5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('ridge', 'alpha2', 'float', 0, 'Infinity', '0.5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('gbt', 'n_rounds2', 'int', 1.5, 10, '2')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('gnb', 'var2', 'float', 0, 1, '5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, choices, default_value) VALUES ('knn', 'w2', 'categorical', '{uniform}', '"uniform"')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, choices, default_value) VALUES ('knn', 'w2', 'categorical', '{uniform,distance}', '"cosine"')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, choices, default_value) VALUES ('knn', 'w2', 'categorical', 0, 1, '{uniform,distance}', '"uniform"')$$);
-- the trainer refuses the range's end, an unknown parameter or family, a choice
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('gbt', 'max_bins', 'int', 2, 1000, '255')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('ridge', 'beta', 'float', 0, 1, '0.5')$$);
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('boosted_magic', 'lr', 'float', 0, 1, '0.5')$$);
SELECT try($$UPDATE easeml.model_spaces SET choices = '{uniform,cosine}' WHERE family = 'knn' AND name = 'weights'$$);
-- a good one is accepted, and a tenant changes nothing
INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('gbt', 'max_bins', 'log-int', 16, 255, '255');
DELETE FROM easeml.model_spaces WHERE family = 'gbt' AND name = 'max_bins';
SET ROLE regress_spaces_a;
SELECT try($$INSERT INTO easeml.model_spaces (family, name, type, lo, hi, default_value) VALUES ('gbt', 'max_bins', 'log-int', 16, 255, '255')$$);
SELECT try($$DELETE FROM easeml.model_spaces$$);
SELECT count(*) > 20 AS tenant_reads_spaces FROM easeml.model_spaces;
RESET ROLE;

-- ---- a model's place in its family's space ------------------------------
SELECT m.name, sp.names, sp.x, easeml._space_coords(m.family, m.params) AS coords
  FROM easeml.models m CROSS JOIN LATERAL easeml._space_of(m.family, m.params) sp
 WHERE m.name IN ('knn-15-distance', 'mlp-128-64', 'gbt-200-leaves63', 'linear-svm-c1', 'cnn-32-64-128')
 ORDER BY m.name;
-- the list dimensions: mlp's first width and layers, cnn's filters and blocks
SELECT easeml._space_set('mlp', '{"hidden": [128, 64], "lr": 0.01}', 'layers', '3') AS mlp3,
	   easeml._space_set('mlp', '{"hidden": [128, 64]}', 'hidden', '512') AS mlp512,
	   easeml._space_set('cnn', '{"epochs": 5}', 'blocks', '3') AS cnn3;
-- proposals are seeded: the same seed, the same configurations
SELECT easeml._space_propose('{log-int,categorical}', '{1,0}', '{100,1}', '{15,1}', 7, 3, 0.2)
	 = easeml._space_propose('{log-int,categorical}', '{1,0}', '{100,1}', '{15,1}', 7, 3, 0.2) AS same;
SELECT try($$SELECT easeml._space_propose('{log-int}', '{0}', '{100}', '{15}', 7, 3, 0.2)$$);
SELECT try($$SELECT easeml._space_propose('{cubic}', '{0}', '{100}', '{15}', 7, 3, 0.2)$$);
SELECT try($$SELECT easeml._space_scale('{int,int}', '{0}', '{100}', '{15}')$$);

-- ---- generated candidates -----------------------------------------------
CREATE TABLE public.spaces_points (x1 float8, x2 int, label text);
INSERT INTO public.spaces_points
SELECT i * 0.5, i % 7, (ARRAY['a', 'b', 'c'])[i % 3 + 1] FROM generate_series(1, 30) i;
GRANT SELECT ON public.spaces_points TO regress_spaces_a, regress_spaces_b;
SET ROLE regress_spaces_a;
INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('sa', 'public.spaces_points', 'label', 60);
RESET ROLE;
SET ROLE regress_spaces_b;
INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('sb', 'public.spaces_points', 'label', 60);
RESET ROLE;
-- sa's runs: knn-15-distance best, ridge-1 second, gnb third
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 1, f.score, jsonb_build_object('score', f.score, 'metric', 'accuracy')
  FROM (VALUES ('knn-15-distance', 0.9), ('ridge-1', 0.8), ('gnb', 0.7)) AS f(model, score),
	   easeml.tasks t, easeml.models m
 WHERE t.name = 'sa' AND m.name = f.model;
SELECT easeml._generate_candidates(id, 4) AS made FROM easeml.tasks WHERE name = 'sa';
-- around the best model of each of the three best families, in turn; each a
-- model of the task, with its parent's run
SELECT regexp_replace(g.name, '\.t\d+\.', '.tN.') AS name, g.family, g.kinds, p.name AS parent,
	   (g.generated_by_run = r.id) AS by_parents_run, g.params <> p.params AS new_params
  FROM easeml.models g JOIN easeml.models p ON p.id = g.parent_model
  JOIN easeml.tasks t ON t.id = g.generated_for
  JOIN easeml.runs r ON r.task_id = t.id AND r.model_id = p.id
 WHERE t.name = 'sa' ORDER BY g.id;
-- the same runs, the same proposals: a second call makes new ones
SELECT easeml._generate_candidates(id, 2) AS made_again FROM easeml.tasks WHERE name = 'sa';
SELECT count(DISTINCT params) = count(*) AS all_distinct FROM easeml.models m
  JOIN easeml.tasks t ON t.id = m.generated_for WHERE t.name = 'sa';
-- no succeeded run with a space: nothing
SELECT easeml._generate_candidates(id, 4) AS made_for_sb FROM easeml.tasks WHERE name = 'sb';
-- a tenant sees the models generated for its own tasks only
SET ROLE regress_spaces_a;
SELECT count(*) AS a_sees_generated FROM easeml.models WHERE generated_for IS NOT NULL;
RESET ROLE;
SELECT m.name AS gen_name FROM easeml.models m JOIN easeml.tasks t ON t.id = m.generated_for
 WHERE t.name = 'sa' ORDER BY m.id LIMIT 1 \gset
SET ROLE regress_spaces_b;
SELECT count(*) AS b_sees_generated FROM easeml.models WHERE generated_for IS NOT NULL;
-- and cannot queue one on its own task
SELECT regexp_replace(try(format('SELECT easeml.enqueue(%L, %L)', 'sb', :'gen_name')),
					  '\.t\d+\.', '.tN.') AS b_enqueues;
RESET ROLE;
-- nor can its owner queue it on another task of its own (dropping sa would
-- leave the model behind, held by sa2's run)
SET ROLE regress_spaces_a;
INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('sa2', 'public.spaces_points', 'label', 60);
SELECT regexp_replace(try(format('SELECT easeml.enqueue(%L, %L)', 'sa2', :'gen_name')),
					  '\.t\d+\.', '.tN.') AS a_enqueues_on_sa2;
-- the space arithmetic is the scheduler's, not a tenant's
SELECT try($$SELECT easeml._space_propose('{int}', '{0}', '{100}', '{15}', 7, 3, 0.2)$$) AS tenant_proposes;
SELECT try($$SELECT easeml._space_scale('{int}', '{0}', '{100}', '{15}')$$) AS tenant_scales;
RESET ROLE;
-- the leaderboard marks a generated candidate's run
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now(), now(), 1, 0.95, '{"score": 0.95, "metric": "accuracy"}'
  FROM easeml.tasks t JOIN easeml.models m ON m.generated_for = t.id WHERE t.name = 'sa'
 ORDER BY m.id LIMIT 1;
SET ROLE regress_spaces_a;
SELECT rank, regexp_replace(model, '\.t\d+\.', '.tN.') AS model, score, generated
  FROM easeml.leaderboard WHERE task = 'sa' ORDER BY rank;
-- explain ranks them with the others, each marked with what it descends from
SELECT count(*) AS generated_ranked,
	   bool_and(why LIKE '%generated: a new configuration around knn-15-distance %'
				OR why LIKE '%generated: a new configuration around ridge-1 %'
				OR why LIKE '%generated: a new configuration around gnb %') AS marked
  FROM easeml.explain('sa', 50) WHERE model ~ '\.t\d+\.g\d+$';
SELECT count(*) AS others_marked FROM easeml.explain('sa', 50)
 WHERE model !~ '\.t\d+\.g\d+$' AND why LIKE '%generated:%';
RESET ROLE;
-- an admin deletes one: the next is named after the highest number, not
-- the count (which would name a twin of the last)
DELETE FROM easeml.models m USING easeml.tasks t
 WHERE t.id = m.generated_for AND t.name = 'sa' AND m.name ~ '\.g2$';
SELECT easeml._generate_candidates(id, 1) AS made_after_delete FROM easeml.tasks WHERE name = 'sa';
SELECT regexp_replace(m.name, '^.*\.t\d+\.', '') AS newest FROM easeml.models m
  JOIN easeml.tasks t ON t.id = m.generated_for WHERE t.name = 'sa' ORDER BY m.id DESC LIMIT 1;
-- the scheduler's arms are the generated candidates of active tasks only:
-- a completed task's stay (the leaderboard shows them) but are no arms
SELECT count(*) > 0 AS arms_while_active FROM easeml.cost_estimates c
  JOIN easeml.models m ON m.id = c.model_id WHERE m.generated_for IS NOT NULL;
SELECT count(*) AS arms_of_another_task FROM easeml.cost_estimates c
  JOIN easeml.models m ON m.id = c.model_id WHERE m.generated_for IS DISTINCT FROM c.task_id
   AND m.generated_for IS NOT NULL;
UPDATE easeml.tasks SET status = 'completed' WHERE name = 'sa';
-- a task that ended gets no new candidate, even from a proposal made before
SELECT easeml._add_generated(t.id, 'knn', '{"k": 37, "weights": "distance"}', NULL,
							 (SELECT id FROM easeml.models WHERE name = 'knn-15-distance')) AS made_when_completed
  FROM easeml.tasks t WHERE t.name = 'sa';
SELECT count(*) AS arms_when_completed FROM easeml.cost_estimates c
  JOIN easeml.models m ON m.id = c.model_id WHERE m.generated_for IS NOT NULL;
-- the generated candidates go with their task
DELETE FROM easeml.runs r USING easeml.tasks t WHERE r.task_id = t.id AND t.name = 'sb';
SET ROLE regress_spaces_a;
SELECT easeml.drop_task('sa') IS NOT NULL AS dropped;
RESET ROLE;
SELECT count(*) AS generated_left FROM easeml.models WHERE generated_for IS NOT NULL;

-- ---- [budgetuse] easeml.generate_max and easeml.generate_patience --------
-- (sighup settings: ALTER SYSTEM and a reload, which a session takes in
-- between two statements: the statements \gexec sends wait for it, unseen)
SET ROLE regress_spaces_a;
INSERT INTO easeml.tasks (name, source, target, budget_seconds) VALUES ('sc', 'public.spaces_points', 'label', 60);
RESET ROLE;
INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
SELECT t.id, m.id, 'succeeded', now() - interval '2 hours', now() - interval '2 hours', 1, f.score,
	   jsonb_build_object('score', f.score, 'metric', 'accuracy')
  FROM (VALUES ('knn-15-distance', 0.9), ('ridge-1', 0.8), ('gnb', 0.7)) AS f(model, score),
	   easeml.tasks t, easeml.models m
 WHERE t.name = 'sc' AND m.name = f.model;
SELECT current_setting('easeml.generate_max') AS generate_max,
	   current_setting('easeml.generate_patience') AS generate_patience,
	   easeml._generate_stop(id) AS stop FROM easeml.tasks WHERE name = 'sc';
-- the cap follows easeml.generate_max: 3 of 4 proposals made, then none
ALTER SYSTEM SET easeml.generate_max = 3;
SELECT pg_reload_conf();
\set ECHO none
\o /dev/null
SELECT format('SELECT pg_sleep(0.1) WHERE current_setting(%L) <> %L', 'easeml.generate_max', '3')
  FROM generate_series(1, 300) \gexec
\o
\set ECHO all
SELECT current_setting('easeml.generate_max') AS generate_max;
SELECT easeml._generate_candidates(id, 4) AS made_below_cap FROM easeml.tasks WHERE name = 'sc';
SELECT easeml._generate_candidates(id, 4) AS made_at_cap FROM easeml.tasks WHERE name = 'sc';
SELECT (SELECT count(*) FROM easeml._propose_candidates(t.id, 4)) AS proposed_at_cap,
	   easeml._add_generated(t.id, 'knn', '{"k": 37, "weights": "distance"}', NULL,
							 (SELECT id FROM easeml.models WHERE name = 'knn-15-distance')) AS added_at_cap,
	   easeml._generate_stop(t.id) AS stop
  FROM easeml.tasks t WHERE t.name = 'sc';
-- 0: no generated candidate at all
ALTER SYSTEM SET easeml.generate_max = 0;
SELECT pg_reload_conf();
\set ECHO none
\o /dev/null
SELECT format('SELECT pg_sleep(0.1) WHERE current_setting(%L) <> %L', 'easeml.generate_max', '0')
  FROM generate_series(1, 300) \gexec
\o
\set ECHO all
SELECT easeml._generate_stop(id) AS stop FROM easeml.tasks WHERE name = 'sc';
-- patience 2: the last two generated candidates that finished (in the
-- order they finished; a failed one counts) must not beat the best before
-- them, a tie is no improvement
ALTER SYSTEM RESET easeml.generate_max;
ALTER SYSTEM SET easeml.generate_patience = 2;
SELECT pg_reload_conf();
\set ECHO none
\o /dev/null
SELECT format('SELECT pg_sleep(0.1) WHERE current_setting(%L) <> %L', 'easeml.generate_patience', '2')
  FROM generate_series(1, 300) \gexec
\o
\set ECHO all
SELECT current_setting('easeml.generate_max') AS generate_max,
	   current_setting('easeml.generate_patience') AS generate_patience;
CREATE FUNCTION pg_temp.finish(k int, st text, sc float8, ago interval) RETURNS void LANGUAGE sql AS $$
	INSERT INTO easeml.runs (task_id, model_id, status, started_at, finished_at, seconds, score, metrics)
	SELECT t.id, m.id, st, now() - ago, now() - ago, 1, sc,
		   CASE WHEN sc IS NOT NULL THEN jsonb_build_object('score', sc, 'metric', 'accuracy') END
	  FROM easeml.tasks t JOIN easeml.models m ON m.generated_for = t.id
	 WHERE t.name = 'sc' ORDER BY m.id OFFSET k - 1 LIMIT 1 $$;
-- the first beats the grid's 0.9: one finished, then one improvement
SELECT pg_temp.finish(1, 'succeeded', 0.95, '50 minutes');
SELECT easeml._generate_stop(id) AS stop_one_finished FROM easeml.tasks WHERE name = 'sc';
SELECT pg_temp.finish(2, 'succeeded', 0.95, '40 minutes');
SELECT easeml._generate_stop(id) AS stop_after_improvement FROM easeml.tasks WHERE name = 'sc';
-- the third fails: its last two did not beat 0.95
SELECT pg_temp.finish(3, 'failed', NULL, '30 minutes');
SELECT easeml._generate_stop(id) AS stop_converged FROM easeml.tasks WHERE name = 'sc';
SELECT easeml._generate_candidates(id, 4) AS made_converged,
	   (SELECT count(*) FROM easeml._propose_candidates(t.id, 4)) AS proposed_converged,
	   easeml._add_generated(t.id, 'knn', '{"k": 37, "weights": "distance"}', NULL,
							 (SELECT id FROM easeml.models WHERE name = 'knn-15-distance')) AS added_converged
  FROM easeml.tasks t WHERE t.name = 'sc';
-- 0 turns the patience off
ALTER SYSTEM SET easeml.generate_patience = 0;
SELECT pg_reload_conf();
\set ECHO none
\o /dev/null
SELECT format('SELECT pg_sleep(0.1) WHERE current_setting(%L) <> %L', 'easeml.generate_patience', '0')
  FROM generate_series(1, 300) \gexec
\o
\set ECHO all
SELECT easeml._generate_stop(id) AS stop_patience_0,
	   easeml._generate_candidates(id, 2) AS made_patience_0
  FROM easeml.tasks WHERE name = 'sc';
ALTER SYSTEM RESET easeml.generate_patience;
SELECT pg_reload_conf();
\set ECHO none
\o /dev/null
SELECT format('SELECT pg_sleep(0.1) WHERE current_setting(%L) <> %L', 'easeml.generate_patience', '24')
  FROM generate_series(1, 300) \gexec
\o
\set ECHO all
SELECT current_setting('easeml.generate_max') AS generate_max,
	   current_setting('easeml.generate_patience') AS generate_patience;

-- ---- clean up ----------------------------------------------------------
DELETE FROM easeml.tenants WHERE name::text LIKE 'regress\_spaces\_%';
DROP TABLE public.spaces_points;
DROP OWNED BY regress_spaces_a, regress_spaces_b;
DROP ROLE regress_spaces_a, regress_spaces_b;
