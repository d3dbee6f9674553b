-- [acqgen] Proposals before a budgeted task's grid is spent
-- (docs/scheduler.md 7.9): _generate_candidates split into
-- _propose_candidates (nothing written) and _add_generated (one row), so
-- that the scheduler can make one proposal a row when its acquisition
-- beats the best untried candidate's; sql/easeml.sql has the same
-- definitions in place.
-- ===========================================================================

-- [spaces] New configurations for a task: n proposals around the best runs
-- of its three best families with a space (each family's best model in
-- turn, the best family first), seeded by the task and how many it has, so
-- the same runs give the same proposals.  A proposal whose params the task
-- already has (or an earlier proposal of the round) is drawn again, up to
-- five times.  At most 64 less the task's generated candidates.  Nothing
-- is written: easeml._add_generated makes one a model row.  Each row: the
-- family, the params, the run it was proposed around, the grid model it
-- descends from (root), the model whose params it perturbs (parent), and
-- its and its root's scaled coordinates (docs/scheduler.md 7.9).
CREATE FUNCTION easeml._propose_candidates(task bigint, n int DEFAULT 6)
RETURNS TABLE (prop_family text, prop_params jsonb, prop_run bigint, prop_root int,
			   prop_parent int, prop_coords float8[], root_coords float8[])
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
	p_model		int[] := '{}';
	k			int;
	sp			record;
	have		int;
	made		int := 0;
	y			float8[];
	cand		jsonb;
	v			jsonb;
	r_family	text[] := '{}';
	r_params	jsonb[] := '{}';
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	IF NOT FOUND OR n IS NULL OR n < 1 THEN
		RETURN;
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
		p_model := p_model || b.model_id;
	END LOOP;
	IF cardinality(p_family) = 0 THEN
		RETURN;
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
									 AND (m.generated_for IS NULL OR m.generated_for = task))
				AND NOT EXISTS (SELECT 1 FROM unnest(r_family, r_params) u(f, p)
								 WHERE u.f = p_family[k] AND u.p = cand);
			cand := NULL;
		END LOOP;
		CONTINUE WHEN cand IS NULL;
		r_family := r_family || p_family[k];
		r_params := r_params || cand;
		made := made + 1;
		prop_family := p_family[k];
		prop_params := cand;
		prop_run := p_run[k];
		prop_root := p_root[k];
		prop_parent := p_model[k];
		prop_coords := easeml._space_coords(p_family[k], cand);
		root_coords := (SELECT easeml._space_coords(m.family, m.params)
						  FROM easeml.models m WHERE m.id = p_root[k]);
		RETURN NEXT;
	END LOOP;
END;
$$;
COMMENT ON FUNCTION easeml._propose_candidates(bigint, int) IS
	'internal: new configurations around a task''s best runs, not yet written (docs/scheduler.md 7.9)';

-- [spaces] One proposal of easeml._propose_candidates as a model row for
-- the task only, named after its root, the task and the next number (an
-- admin may have deleted some: a count would name a twin); unless the task
-- has 64 already or a model with those params.  Returns 1 when made, else
-- 0.
CREATE FUNCTION easeml._add_generated(task bigint, gen_family text, gen_params jsonb,
									  gen_run bigint, gen_root int)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	root		record;
	numbered	int;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	IF NOT FOUND OR gen_family IS NULL OR gen_params IS NULL THEN
		RETURN 0;
	END IF;
	SELECT * INTO root FROM easeml.models m WHERE m.id = gen_root;
	IF NOT FOUND OR root.family IS DISTINCT FROM gen_family
		OR (SELECT count(*) FROM easeml.models m WHERE m.generated_for = task) >= 64
		OR EXISTS (SELECT 1 FROM easeml.models m
					WHERE m.family = gen_family AND m.params = gen_params
					  AND (m.generated_for IS NULL OR m.generated_for = task)) THEN
		RETURN 0;
	END IF;
	numbered := (SELECT coalesce(max(substring(m.name FROM '\.g(\d{1,9})$')::int), 0)
			   FROM easeml.models m WHERE m.generated_for = task);
	INSERT INTO easeml.models (name, family, params, kinds, needs_image, cost_factor,
							   device_kinds, generated_for, generated_by_run, parent_model)
	VALUES (format('%s.t%s.g%s', left(root.name, 32), task, numbered + 1),
			gen_family, gen_params, ARRAY[t.kind], root.needs_image, root.cost_factor,
			root.device_kinds, task, gen_run, gen_root);
	RETURN 1;
END;
$$;
COMMENT ON FUNCTION easeml._add_generated(bigint, text, jsonb, bigint, int) IS
	'internal: one proposed configuration as a model row of its task (docs/scheduler.md 7.9)';

-- [spaces] New configurations for a task: every proposal of
-- easeml._propose_candidates made a model row (easeml._add_generated).
-- Returns how many were made.  The scheduler calls it when a task with a
-- time budget has tried every candidate and nothing of it is in flight;
-- before that it makes one proposal a row when its acquisition beats the
-- best untried candidate's (docs/scheduler.md 7.9).
CREATE OR REPLACE FUNCTION easeml._generate_candidates(task bigint, n int DEFAULT 6)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	p			record;
	made		int := 0;
BEGIN
	FOR p IN SELECT * FROM easeml._propose_candidates(task, n) LOOP
		made := made + easeml._add_generated(task, p.prop_family, p.prop_params,
											 p.prop_run, p.prop_root);
	END LOOP;
	RETURN made;
END;
$$;
COMMENT ON FUNCTION easeml._generate_candidates(bigint, int) IS
	'internal: the scheduler proposes new configurations around a task''s best runs (docs/scheduler.md 7.9)';

REVOKE ALL ON FUNCTION easeml._propose_candidates(bigint, int),
	easeml._add_generated(bigint, text, jsonb, bigint, int) FROM PUBLIC;
