-- [spaces] sql/easeml.sql makes the same changes (the models columns in its
-- CREATE TABLE, the leaderboard in place, the rest after the models'
-- validation and in the row-level security block)
-- ===========================================================================
-- [spaces] Hyperparameter spaces per family and generated candidates
-- (docs/models.md section 7, docs/scheduler.md 7.9)
--
-- easeml.model_spaces declares each family's space; when a task with a time
-- budget has tried every candidate, the scheduler calls
-- easeml._generate_candidates, which proposes configurations around the
-- task's best runs and inserts them as easeml.models rows for that task
-- only (generated_for), with the run that suggested them and the grid model
-- they descend from (parent_model, whose history the scheduler's prior
-- borrows).
-- ===========================================================================

ALTER TABLE easeml.models
	ADD COLUMN generated_for bigint,
	ADD COLUMN generated_by_run bigint,
	ADD COLUMN parent_model int REFERENCES easeml.models (id) ON DELETE SET NULL;
COMMENT ON COLUMN easeml.models.generated_for IS
	'generated candidates: the task they were generated for (only it may train them); NULL for the catalog''s own models';
COMMENT ON COLUMN easeml.models.generated_by_run IS
	'generated candidates: the run whose configuration they were proposed around';
COMMENT ON COLUMN easeml.models.parent_model IS
	'generated candidates: the catalog model they descend from, whose history the scheduler''s prior borrows';
-- a task's generated candidates: counted at each proposal, read by the
-- scheduler's load and the tenants' row security
CREATE INDEX models_generated_for_idx ON easeml.models (generated_for)
	WHERE generated_for IS NOT NULL;

-- [spaces] One dimension of a family's hyperparameter space.
CREATE TABLE easeml.model_spaces (
	family		text NOT NULL,
	name		text NOT NULL,
	type		text NOT NULL
		CHECK (type IN ('int', 'log-int', 'float', 'log-float', 'categorical')),
	lo			float8,
	hi			float8,
	choices		text[],
	default_value jsonb NOT NULL,
	builtin		boolean NOT NULL DEFAULT false,
	PRIMARY KEY (family, name)
);
COMMENT ON TABLE easeml.model_spaces IS
	'hyperparameter spaces: one row per family and dimension, the range new configurations are generated in';

INSERT INTO easeml.model_spaces (family, name, type, lo, hi, choices, default_value, builtin) VALUES
	('softmax', 'l2', 'log-float', 1e-6, 10, NULL, '1e-4', true),
	('softmax', 'max_iter', 'log-int', 20, 1000, NULL, '100', true),
	('linear_svm', 'C', 'log-float', 1e-4, 100, NULL, '1', true),
	('linear_svm', 'loss', 'categorical', NULL, NULL, '{squared_hinge,hinge}', '"squared_hinge"', true),
	('ridge', 'alpha', 'log-float', 1e-4, 1e4, NULL, '1', true),
	('gnb', 'var_smoothing', 'log-float', 1e-12, 0.5, NULL, '1e-9', true),
	('knn', 'k', 'log-int', 1, 100, NULL, '5', true),
	('knn', 'weights', 'categorical', NULL, NULL, '{uniform,distance}', '"uniform"', true),
	('mlp', 'hidden', 'log-int', 16, 1024, NULL, '128', true),
	('mlp', 'layers', 'int', 1, 3, NULL, '1', true),
	('mlp', 'lr', 'log-float', 1e-4, 3e-2, NULL, '1e-3', true),
	('mlp', 'l2', 'log-float', 1e-8, 1e-2, NULL, '1e-5', true),
	('mlp', 'epochs', 'log-int', 10, 400, NULL, '100', true),
	('random_forest', 'n_trees', 'log-int', 10, 500, NULL, '100', true),
	('random_forest', 'max_features', 'float', 0.05, 1, NULL, '0.3', true),
	('random_forest', 'max_depth', 'log-int', 2, 64, NULL, '64', true),
	('random_forest', 'min_samples_leaf', 'log-int', 1, 50, NULL, '1', true),
	('gbt', 'lr', 'log-float', 0.01, 0.5, NULL, '0.1', true),
	('gbt', 'n_rounds', 'log-int', 20, 1000, NULL, '100', true),
	('gbt', 'max_leaves', 'log-int', 4, 128, NULL, '31', true),
	('gbt', 'min_samples_leaf', 'log-int', 1, 100, NULL, '20', true),
	('cnn', 'filters', 'log-int', 8, 64, NULL, '16', true),
	('cnn', 'blocks', 'int', 1, 3, NULL, '2', true),
	('cnn', 'epochs', 'int', 2, 20, NULL, '5', true),
	('cnn', 'lr', 'log-float', 1e-4, 1e-2, NULL, '1e-3', true);

-- [spaces] A dimension's value in a model's params (its family's default
-- when the params leave it out).  Two dimensions describe a list: mlp's
-- hidden is the first layer's width and layers their count (each layer
-- halves the one before, at least 8), cnn's filters the first block's
-- and blocks their count (each block doubles, at most 512).
CREATE FUNCTION easeml._space_get(family text, name text, params jsonb)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE
		 WHEN family = 'mlp' AND name = 'layers' AND jsonb_typeof(params -> 'hidden') = 'array'
			 THEN to_jsonb(jsonb_array_length(params -> 'hidden'))
		 WHEN family = 'mlp' AND name = 'hidden' AND jsonb_typeof(params -> 'hidden') = 'array'
			 THEN params -> 'hidden' -> 0
		 WHEN family = 'cnn' AND name = 'blocks' AND jsonb_typeof(params -> 'filters') = 'array'
			 THEN to_jsonb(jsonb_array_length(params -> 'filters'))
		 WHEN family = 'cnn' AND name = 'filters' AND jsonb_typeof(params -> 'filters') = 'array'
			 THEN params -> 'filters' -> 0
		 WHEN (family, name) IN (('mlp', 'layers'), ('cnn', 'blocks'))
			 THEN (SELECT s.default_value FROM easeml.model_spaces s
					WHERE s.family = _space_get.family AND s.name = _space_get.name)
		 ELSE coalesce(params -> name,
					   (SELECT s.default_value FROM easeml.model_spaces s
						 WHERE s.family = _space_get.family AND s.name = _space_get.name))
	   END;
$$;

-- [spaces] params with one dimension set to value (_space_get's lists).
CREATE FUNCTION easeml._space_set(family text, params jsonb, name text, value jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	width		int;
	n			int;
	list		int[] := '{}';
BEGIN
	IF (family = 'mlp' AND name IN ('hidden', 'layers'))
		OR (family = 'cnn' AND name IN ('filters', 'blocks')) THEN
		IF family = 'mlp' THEN
			width := CASE WHEN name = 'hidden' THEN value ELSE easeml._space_get(family, 'hidden', params) END::int;
			n := CASE WHEN name = 'layers' THEN value ELSE easeml._space_get(family, 'layers', params) END::int;
			FOR i IN 0 .. n - 1 LOOP
				list := list || greatest(8, width >> i);
			END LOOP;
			RETURN params || jsonb_build_object('hidden', to_jsonb(list));
		END IF;
		width := CASE WHEN name = 'filters' THEN value ELSE easeml._space_get(family, 'filters', params) END::int;
		n := CASE WHEN name = 'blocks' THEN value ELSE easeml._space_get(family, 'blocks', params) END::int;
		FOR i IN 0 .. n - 1 LOOP
			list := list || least(512, width << i);
		END LOOP;
		RETURN params || jsonb_build_object('filters', to_jsonb(list));
	END IF;
	RETURN params || jsonb_build_object(name, value);
END;
$$;

CREATE FUNCTION easeml._space_scale(types text[], lo float8[], hi float8[], x float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'easeml_space_scale'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml._space_scale(text[], float8[], float8[], float8[]) IS
	'internal: raw hyperparameter values scaled into [0,1] (src/core/hpspace.c)';

CREATE FUNCTION easeml._space_propose(types text[], lo float8[], hi float8[], x float8[],
									  seed bigint, n int, step float8)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'easeml_space_propose'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml._space_propose(text[], float8[], float8[], float8[], bigint, int, float8) IS
	'internal: n seeded configurations around x in the scaled space, n x d raw values (src/core/hpspace.c)';

-- [spaces] A model's dimensions in its family's space, in name order:
-- types, ranges (a categorical one 0 .. choices - 1) and its raw values (a
-- categorical one the index of its choice); NULL arrays for a family
-- without a space.
CREATE FUNCTION easeml._space_of(family text, params jsonb,
								 OUT names text[], OUT types text[], OUT lo float8[],
								 OUT hi float8[], OUT x float8[], OUT choices text[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT array_agg(s.name ORDER BY s.name),
	   array_agg(s.type ORDER BY s.name),
	   array_agg(CASE WHEN s.type = 'categorical' THEN 0 ELSE s.lo END ORDER BY s.name),
	   array_agg(CASE WHEN s.type = 'categorical' THEN cardinality(s.choices) - 1 ELSE s.hi END
				 ORDER BY s.name),
	   array_agg(CASE WHEN s.type = 'categorical'
					  THEN coalesce(array_position(s.choices, v.v #>> '{}'),
									array_position(s.choices, s.default_value #>> '{}'), 1) - 1
					  ELSE least(greatest((v.v #>> '{}')::float8, s.lo), s.hi) END
				 ORDER BY s.name),
	   -- every dimension's choices joined by "|", to split again
	   array_agg(array_to_string(s.choices, '|') ORDER BY s.name)
  FROM easeml.model_spaces s
 CROSS JOIN LATERAL (SELECT easeml._space_get(_space_of.family, s.name, _space_of.params) AS v) v
 WHERE s.family = _space_of.family
   AND (s.type = 'categorical' OR jsonb_typeof(v.v) = 'number');
$$;

-- [spaces] A model's scaled coordinates in its family's space (the
-- scheduler's kernel, docs/scheduler.md 7.9); NULL without a space.
CREATE FUNCTION easeml._space_coords(family text, params jsonb)
RETURNS float8[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN sp.types IS NOT NULL
			THEN easeml._space_scale(sp.types, sp.lo, sp.hi, sp.x) END
  FROM easeml._space_of(family, params) sp;
$$;

-- [spaces] A space's row as it is written: the family is one the trainer
-- knows, the type and range are well formed, and the trainer accepts the
-- range's ends (and every choice) as that parameter.
CREATE FUNCTION easeml._validate_model_space()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	reason		text;
	probe		jsonb;
BEGIN
	IF NEW.family IS NULL OR NEW.name IS NULL OR NEW.name !~ '^[A-Za-z0-9_]{1,63}$' THEN
		RAISE EXCEPTION 'invalid hyperparameter "%" of family "%"', NEW.name, NEW.family
			USING ERRCODE = 'invalid_name',
				  HINT = 'A dimension names a parameter of the family: letters, digits and "_" (easeml-trainer --list-families).';
	END IF;
	IF NEW.type IS NULL OR NEW.type NOT IN ('int', 'log-int', 'float', 'log-float', 'categorical') THEN
		RAISE EXCEPTION 'hyperparameter "%" of family "%" has type %, not int, log-int, float, log-float or categorical',
			NEW.name, NEW.family, coalesce(NEW.type, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'log-int and log-float are searched on a log scale (their lo must be positive).';
	END IF;
	IF NEW.type = 'categorical' THEN
		IF NEW.choices IS NULL OR cardinality(NEW.choices) < 2
			OR array_position(NEW.choices, NULL) IS NOT NULL
			OR NEW.lo IS NOT NULL OR NEW.hi IS NOT NULL THEN
			RAISE EXCEPTION 'categorical hyperparameter "%" of family "%" needs at least two choices and no lo or hi',
				NEW.name, NEW.family
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'For example choices => ''{uniform,distance}''.';
		END IF;
		IF jsonb_typeof(NEW.default_value) IS DISTINCT FROM 'string'
			OR NOT (NEW.default_value #>> '{}') = ANY (NEW.choices) THEN
			RAISE EXCEPTION 'default_value of hyperparameter "%" of family "%" must be one of its choices, not %',
				NEW.name, NEW.family, coalesce(NEW.default_value::text, 'NULL')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'The default is the value the family uses when a model''s params leave it out.';
		END IF;
	ELSE
		IF NEW.choices IS NOT NULL OR NEW.lo IS NULL OR NEW.hi IS NULL
			OR NOT (NEW.lo < NEW.hi AND NEW.lo > '-Infinity' AND NEW.hi < 'Infinity')
			OR (NEW.type LIKE 'log-%' AND NOT NEW.lo > 0)
			OR (NEW.type IN ('int', 'log-int') AND (NEW.lo <> floor(NEW.lo) OR NEW.hi <> floor(NEW.hi))) THEN
			RAISE EXCEPTION 'hyperparameter "%" of family "%" needs a range lo < hi, not [%, %]',
				NEW.name, NEW.family, coalesce(NEW.lo::text, 'NULL'), coalesce(NEW.hi::text, 'NULL')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Both ends finite, integers for int and log-int, lo > 0 on a log scale, no choices.';
		END IF;
		IF jsonb_typeof(NEW.default_value) IS DISTINCT FROM 'number'
			OR NOT ((NEW.default_value #>> '{}')::float8 BETWEEN NEW.lo AND NEW.hi) THEN
			RAISE EXCEPTION 'default_value of hyperparameter "%" of family "%" must be a number in [%, %], not %',
				NEW.name, NEW.family, NEW.lo, NEW.hi, coalesce(NEW.default_value::text, 'NULL')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'The default is the value the family uses when a model''s params leave it out.';
		END IF;
	END IF;
	-- the trainer itself says whether it takes the ends of the range
	FOR probe IN
		SELECT to_jsonb(c) FROM unnest(NEW.choices) c
		UNION ALL
		SELECT to_jsonb(CASE WHEN NEW.type IN ('int', 'log-int') THEN round(e)::numeric ELSE e::numeric END)
		  FROM unnest(ARRAY[NEW.lo, NEW.hi]) e WHERE e IS NOT NULL
	LOOP
		reason := easeml._check_model(NEW.family,
									  easeml._space_set(NEW.family, '{}', NEW.name, probe),
									  '{classification}', NEW.family = 'cnn');
		IF reason IS NOT NULL THEN
			RAISE EXCEPTION 'hyperparameter "%" of family "%" cannot take %: %', NEW.name, NEW.family, probe, reason
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'easeml-trainer --list-families lists every family with its parameters and their ranges.';
		END IF;
	END LOOP;
	RETURN NEW;
END;
$$;

CREATE TRIGGER model_spaces_validate
	BEFORE INSERT OR UPDATE ON easeml.model_spaces
	FOR EACH ROW EXECUTE FUNCTION easeml._validate_model_space();

-- [spaces] New configurations for a task: n proposals around the best runs
-- of its three best families with a space (each family's best model in
-- turn, the best family first), seeded by the task and how many it has, so
-- the same runs give the same proposals.  Each is a model row for this task
-- only, unless the task already has one with those params.  At most 64 per
-- task.  Returns how many were made.  The scheduler calls it when a task
-- with a time budget has tried every candidate and nothing of it is in
-- flight (docs/scheduler.md 7.9).
CREATE FUNCTION easeml._generate_candidates(task bigint, n int DEFAULT 6)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	b			record;
	p_family	text[] := '{}';
	p_params	jsonb[] := '{}';
	p_run		bigint[] := '{}';
	p_root		int[] := '{}';
	k			int;
	sp			record;
	have		int;
	made		int := 0;
	y			float8[];
	cand		jsonb;
	v			jsonb;
	root		record;
BEGIN
	SELECT * INTO t FROM easeml.tasks WHERE id = task;
	IF NOT FOUND OR n IS NULL OR n < 1 THEN
		RETURN 0;
	END IF;
	have := (SELECT count(*) FROM easeml.models m WHERE m.generated_for = task);
	-- the best run of each family with a space, the best three families
	FOR b IN
		SELECT * FROM (
			SELECT DISTINCT ON (m.family) r.model_id, r.id AS run_id, r.score,
				   m.family, m.params, coalesce(m.parent_model, m.id) AS root
			  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
			 WHERE r.task_id = task AND r.status = 'succeeded' AND r.score IS NOT NULL
			   AND r.purpose = 'select'
			   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
			   AND m.enabled AND (m.generated_for IS NULL OR m.generated_for = task)
			   AND EXISTS (SELECT 1 FROM easeml.model_spaces s WHERE s.family = m.family)
			 ORDER BY m.family, r.score DESC, r.id) x
		 ORDER BY x.score DESC, x.model_id
		 LIMIT 3
	LOOP
		p_family := p_family || b.family;
		p_params := p_params || b.params;
		p_run := p_run || b.run_id;
		p_root := p_root || b.root;
	END LOOP;
	IF cardinality(p_family) = 0 THEN
		RETURN 0;
	END IF;
	FOR i IN 0 .. n - 1 LOOP
		EXIT WHEN have + made >= 64;
		k := 1 + i % cardinality(p_family);
		SELECT * INTO sp FROM easeml._space_of(p_family[k], p_params[k]);
		CONTINUE WHEN sp.types IS NULL;
		-- a few tries for params the task does not have yet
		FOR try IN 0 .. 4 LOOP
			y := easeml._space_propose(sp.types, sp.lo, sp.hi, sp.x,
									   task * 1000003 + (have + made) * 1009 + i * 31 + try, 1, 0.2);
			cand := p_params[k];
			FOR j IN 1 .. cardinality(sp.types) LOOP
				v := CASE
					   WHEN sp.types[j] = 'categorical'
						   THEN to_jsonb((string_to_array(sp.choices[j], '|'))[y[j]::int + 1])
					   WHEN sp.types[j] IN ('int', 'log-int') THEN to_jsonb(y[j]::bigint)
					   WHEN y[j] = 0 THEN to_jsonb(0)
					   -- six significant digits
					   ELSE to_jsonb(round(y[j]::numeric, 5 - floor(log(abs(y[j])))::int))
					 END;
				-- a parameter the parent leaves to its default stays out
				-- while it keeps that value (no twin of a grid model)
				CONTINUE WHEN NOT (p_params[k] ? sp.names[j])
					AND sp.names[j] NOT IN ('hidden', 'layers', 'filters', 'blocks')
					AND v = (SELECT s.default_value FROM easeml.model_spaces s
							  WHERE s.family = p_family[k] AND s.name = sp.names[j]);
				cand := easeml._space_set(p_family[k], cand, sp.names[j], v);
			END LOOP;
			EXIT WHEN NOT EXISTS (SELECT 1 FROM easeml.models m
								   WHERE m.family = p_family[k] AND m.params = cand
									 AND (m.generated_for IS NULL OR m.generated_for = task));
			cand := NULL;
		END LOOP;
		CONTINUE WHEN cand IS NULL;
		SELECT * INTO root FROM easeml.models m WHERE m.id = p_root[k];
		INSERT INTO easeml.models (name, family, params, kinds, needs_image, cost_factor,
								   device_kinds, generated_for, generated_by_run, parent_model)
		VALUES (format('%s.t%s.g%s', left(root.name, 32), task, have + made + 1),
				p_family[k], cand, ARRAY[t.kind], root.needs_image, root.cost_factor,
				root.device_kinds, task, p_run[k], p_root[k]);
		made := made + 1;
	END LOOP;
	RETURN made;
END;
$$;
COMMENT ON FUNCTION easeml._generate_candidates(bigint, int) IS
	'internal: the scheduler proposes new configurations around a task''s best runs (docs/scheduler.md 7.9)';

-- [spaces] A dropped task's generated candidates go with it (its runs and
-- decisions went first: their foreign keys cascade from the task).
CREATE FUNCTION easeml._drop_generated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM easeml.models m
	 WHERE m.generated_for = OLD.id
	   AND NOT EXISTS (SELECT 1 FROM easeml.runs r WHERE r.model_id = m.id)
	   AND NOT EXISTS (SELECT 1 FROM easeml.decisions d WHERE d.model_id = m.id)
	   AND NOT EXISTS (SELECT 1 FROM easeml.decision_candidates c WHERE c.model_id = m.id);
	RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_drop_generated
	AFTER DELETE ON easeml.tasks
	FOR EACH ROW EXECUTE FUNCTION easeml._drop_generated();

REVOKE ALL ON FUNCTION easeml._generate_candidates(bigint, int), easeml._drop_generated(),
	easeml._validate_model_space() FROM PUBLIC;

-- [spaces] a tenant sees the catalog's models and those generated for its
-- own tasks
ALTER TABLE easeml.models ENABLE ROW LEVEL SECURITY;
CREATE POLICY models_visible ON easeml.models FOR SELECT
	USING (generated_for IS NULL OR generated_for IN (SELECT id FROM easeml.tasks));

GRANT SELECT ON easeml.model_spaces TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.model_spaces', 'WHERE NOT builtin');

-- [spaces] the leaderboard marks generated candidates
CREATE OR REPLACE VIEW easeml.leaderboard WITH (security_invoker = true) AS
SELECT l.task, l.tenant,
	   rank() OVER (PARTITION BY l.task_id
					ORDER BY l.stale, l.tied_with_best DESC,
							 CASE WHEN l.tied_with_best THEN l.seconds END,
							 l.score DESC, l.seconds, l.run_id)::int AS rank,
	   l.model, l.family, l.score, l.seconds, l.run_id, l.task_id, l.finished_at,
	   l.metric, l.metric_value, l.snapshot_version, l.stale, l.score_se, l.metric_se,
	   l.tied_with_best, l.generated
  FROM (SELECT b.*,
			   NOT b.stale AND b.score >= first_value(b.score) OVER w
				   - coalesce(first_value(b.score_se) OVER w, 0) AS tied_with_best
		  FROM (SELECT t.name AS task,
					   t.tenant,
					   m.name AS model,
					   m.family,
					   r.score,
					   r.seconds,
					   r.id AS run_id,
					   r.task_id,
					   r.finished_at,
					   mt.metric,
					   easeml._metric_value(r.metrics, mt.metric, r.score) AS metric_value,
					   r.snapshot_version,
					   r.snapshot_version IS DISTINCT FROM t.snapshot_version AS stale,
					   easeml._score_se(r.metrics, mt.metric, r.score) AS score_se,
					   easeml._metric_se(r.metrics, mt.metric, r.score) AS metric_se,
					   m.generated_for IS NOT NULL AS generated
				  FROM easeml.runs r
				  JOIN easeml.tasks t ON t.id = r.task_id
				  JOIN easeml.models m ON m.id = r.model_id
				 CROSS JOIN LATERAL (SELECT coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric) mt
				 WHERE r.status = 'succeeded' AND r.score IS NOT NULL) b
		WINDOW w AS (PARTITION BY b.task_id ORDER BY b.stale, b.score DESC, b.seconds, b.run_id)) l;
