-- [acqgen] Proposals before a budgeted task's grid is spent
-- (docs/scheduler.md 7.9): _generate_candidates split into
-- _propose_candidates (nothing written) and _add_generated (one row), so
-- that the scheduler can make one proposal a row when its acquisition
-- beats the best untried candidate's.  [budgetuse] The cap on a task's
-- generated candidates is easeml.generate_max, and a task that converged
-- (easeml.generate_patience) gets no more: easeml._generate_stop.
-- sql/easeml.sql has the same definitions in place.
-- ===========================================================================

-- [budgetuse] Why a task gets no further round of generated candidates,
-- NULL when it may get one: it has easeml.generate_max of them already,
-- or it converged: none of its last easeml.generate_patience generated
-- candidates that finished (each its first selection run on the task's
-- snapshot that succeeded or failed, in the order they finished) scored
-- strictly higher than the task's best before it finished
-- (docs/scheduler.md 7.9).  A setting that cannot be read (the library not
-- loaded) counts as its default.  The scheduler completes a task with
-- every candidate tried and this reason.
CREATE FUNCTION easeml._generate_stop(task bigint)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	setting		text := current_setting('easeml.generate_max', true);
	cap			int := CASE WHEN setting ~ '^\s*\d{1,9}\s*$' THEN setting::int ELSE 256 END;
	patience	int;
	finished	int;
	improved	int;
	best		float8;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	IF (SELECT count(*) FROM easeml.models m WHERE m.generated_for = task) >= cap THEN
		RETURN format('easeml.generate_max (%s) reached', cap);
	END IF;
	setting := current_setting('easeml.generate_patience', true);
	patience := CASE WHEN setting ~ '^\s*\d{1,9}\s*$' THEN setting::int ELSE 0 END;
	IF patience = 0 THEN
		RETURN NULL;
	END IF;
	WITH fin AS (
		SELECT r.id, r.model_id, r.finished_at,
			   CASE WHEN r.status = 'succeeded' THEN r.score END AS score,
			   max(CASE WHEN r.status = 'succeeded' THEN r.score END)
				   OVER (ORDER BY r.finished_at, r.id
						 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS best_before
		  FROM easeml.runs r
		 WHERE r.task_id = task AND r.purpose = 'select' AND r.status IN ('succeeded', 'failed')
		   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version),
	gen AS (
		SELECT DISTINCT ON (f.model_id) f.*
		  FROM fin f JOIN easeml.models m ON m.id = f.model_id
		 WHERE m.generated_for = task
		 ORDER BY f.model_id, f.finished_at, f.id),
	recent AS (
		SELECT * FROM gen ORDER BY finished_at DESC, id DESC LIMIT patience)
	SELECT count(*), count(*) FILTER (WHERE score > coalesce(best_before, '-Infinity'))
	  INTO finished, improved FROM recent;
	IF finished < patience OR improved > 0 THEN
		RETURN NULL;
	END IF;
	best := (SELECT max(r.score) FROM easeml.runs r
			  WHERE r.task_id = task AND r.purpose = 'select' AND r.status = 'succeeded'
				AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version);
	RETURN format('converged: its last %s generated candidates that finished did not beat its best score %s (easeml.generate_patience)',
				  patience, coalesce(round(best::numeric, 4)::text, 'none'));
END;
$$;
COMMENT ON FUNCTION easeml._generate_stop(bigint) IS
	'internal: why a task gets no more generated candidates (easeml.generate_max, easeml.generate_patience), or NULL (docs/scheduler.md 7.9)';

-- [spaces] New configurations for a task: n proposals around the best runs
-- of its three best families with a space (each family's best model in
-- turn, the best family first), seeded by the task and how many it has, so
-- the same runs give the same proposals.  A proposal whose params the task
-- already has (or an earlier proposal of the round) is drawn again, up to
-- five times.  At most easeml.generate_max less the task's generated
-- candidates, and none once easeml._generate_stop says the task gets no
-- more (that cap, or converged).  Nothing
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
	setting		text := current_setting('easeml.generate_max', true);
	cap			int := CASE WHEN setting ~ '^\s*\d{1,9}\s*$' THEN setting::int ELSE 256 END;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	IF NOT FOUND OR n IS NULL OR n < 1 OR easeml._generate_stop(task) IS NOT NULL THEN
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
		EXIT WHEN have + made >= cap;
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
-- gets no more (easeml._generate_stop: easeml.generate_max reached, or
-- converged) or has a model with those params.  Returns 1 when made, else
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
	-- a task that ended between the proposal and this insert gets none
	IF NOT FOUND OR t.status <> 'active' OR gen_family IS NULL OR gen_params IS NULL THEN
		RETURN 0;
	END IF;
	SELECT * INTO root FROM easeml.models m WHERE m.id = gen_root;
	IF NOT FOUND OR root.family IS DISTINCT FROM gen_family
		OR easeml._generate_stop(task) IS NOT NULL
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

REVOKE ALL ON FUNCTION easeml._generate_stop(bigint),
	easeml._propose_candidates(bigint, int),
	easeml._add_generated(bigint, text, jsonb, bigint, int) FROM PUBLIC;
