-- ---------------------------------------------------------------------------
-- [cost] easeml 0.1.0 -> 0.2.0: the live cost model (issue 7 item 5,
-- src/core/costmodel.c, docs/scheduler.md "The cost model"); sql/easeml.sql
-- holds the same for a fresh install
-- ---------------------------------------------------------------------------

-- [cost] fn: what a model's parameters add to its family's complexity
-- formula (src/core/costmodel.h): work multiplies the whole formula (rounds,
-- trees, iterations, epochs relative to the family default); width,
-- inner and last are the per-row terms of the layered families (mlp:
-- first layer width, products between hidden layers, last layer width;
-- cnn: multiply-adds per input pixel; random_forest: width is the share
-- of features tried per split, 0 for sqrt(d), inner the depth limit).
-- A parameter is read as a positive number or not at all.
CREATE FUNCTION easeml._cost_shape(family text, params jsonb,
	OUT work float8, OUT width float8, OUT inner_products float8, OUT last_width float8)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
	WITH h AS (
		-- the numeric entries of the hidden / filters array, in order
		SELECT array_agg(x.v::text::float8 ORDER BY x.i) AS a
		  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(params -> (CASE family WHEN 'cnn' THEN 'filters' ELSE 'hidden' END)) = 'array'
										  THEN params -> (CASE family WHEN 'cnn' THEN 'filters' ELSE 'hidden' END)
										  ELSE '[]' END) WITH ORDINALITY x(v, i)
		 WHERE jsonb_typeof(x.v) = 'number' AND x.v::text::float8 > 0
	), l AS (
		SELECT CASE WHEN family = 'cnn' THEN coalesce(a, '{16,32}') ELSE coalesce(a, '{128}') END AS a FROM h
	)
	SELECT CASE family
			WHEN 'gbt' THEN easeml._param_num(params, 'n_rounds', 100) / 100
			WHEN 'random_forest' THEN easeml._param_num(params, 'n_trees', 100) / 100
			WHEN 'softmax' THEN easeml._param_num(params, 'max_iter',
												  easeml._param_num(params, 'epochs', 100)) / 100
			WHEN 'cnn' THEN easeml._param_num(params, 'epochs', 5) / 5
			ELSE 1 END,
		   CASE family
			WHEN 'mlp' THEN l.a[1]
			-- 3x3 convolutions, each followed by a 2x2 pooling, then a dense layer of 128
			WHEN 'cnn' THEN 9 * l.a[1]
				+ coalesce((SELECT sum(9 * l.a[i] * l.a[i + 1] / 4 ^ i)
							  FROM generate_subscripts(l.a, 1) i WHERE i < cardinality(l.a)), 0)
				+ 128 * l.a[cardinality(l.a)] / 4 ^ cardinality(l.a)
			WHEN 'random_forest' THEN CASE WHEN easeml._param_num(params, 'max_features', 0) <= 1
										   THEN easeml._param_num(params, 'max_features', 0) ELSE 0 END
			ELSE 0 END,
		   CASE family
			WHEN 'mlp' THEN coalesce((SELECT sum(l.a[i] * l.a[i + 1])
										FROM generate_subscripts(l.a, 1) i WHERE i < cardinality(l.a)), 0)
			WHEN 'random_forest' THEN easeml._param_num(params, 'max_depth', 0)
			ELSE 0 END,
		   CASE family WHEN 'mlp' THEN l.a[cardinality(l.a)] ELSE 0 END
	  FROM l
$$;
REVOKE ALL ON FUNCTION easeml._cost_shape(text, jsonb) FROM PUBLIC;
-- [cost] fn, view: the scheduler's estimates (src/sql/sql_cost.c).  The rule
-- this view had before (seconds per cell of each model) is not what the
-- scheduler uses any more: the view now shows the cost model's estimate
-- of every enabled candidate of every task you can see, for its size and
-- its own finished runs; basis says whether the task ran the model
CREATE FUNCTION easeml._cost_estimates(OUT task_id bigint, OUT model_id int,
	OUT seconds float8, OUT basis text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_cost_estimates'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._cost_estimates() IS
	'internal: the rows of the view easeml.cost_estimates';
GRANT EXECUTE ON FUNCTION easeml._cost_estimates() TO PUBLIC;
CREATE OR REPLACE VIEW easeml.cost_estimates WITH (security_invoker = true) AS
SELECT task_id, model_id, seconds, basis FROM easeml._cost_estimates();
COMMENT ON VIEW easeml.cost_estimates IS
	'the scheduler''s estimated training seconds (CPU) of every enabled candidate for each of your tasks: its cost model for the task''s size, conditioned on the task''s own finished runs; basis is measured when the task ran the model, else estimated';
-- [cost] end
