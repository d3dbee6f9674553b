-- [review] Fixes after the review of the spaces, ensemble and trainer
-- schema changes; sql/easeml.sql has the same definitions in place.
-- ===========================================================================

-- a generated candidate is a run of the task it was generated for only
CREATE OR REPLACE FUNCTION easeml._guard_run()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	m			record;
BEGIN
	-- a run always belongs to its task's tenant, whoever inserts it, and
	-- trains on the task's current snapshot (a restored run keeps its own)
	NEW.tenant := (SELECT tenant FROM easeml.tasks WHERE id = NEW.task_id);
	NEW.snapshot_version := coalesce(NEW.snapshot_version,
									 (SELECT snapshot_version FROM easeml.tasks WHERE id = NEW.task_id));
	IF easeml._is_admin() THEN
		RETURN NEW;
	END IF;
	-- [trust]
	IF NEW.task_id IS NULL OR NEW.model_id IS NULL THEN
		RAISE EXCEPTION 'task_id and model_id must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'SELECT easeml.enqueue(task, model) queues a run by names.';
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id AND tenant = current_user;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task % does not exist', NEW.task_id
			USING ERRCODE = 'undefined_object';
	END IF;
	IF t.status NOT IN ('active', 'paused', 'completed') THEN
		RAISE EXCEPTION 'task "%" is %', t.name, t.status
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	SELECT * INTO m FROM easeml.models WHERE id = NEW.model_id;
	IF NOT FOUND OR NOT m.enabled THEN
		RAISE EXCEPTION 'model % does not exist or is disabled', NEW.model_id
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT id, name FROM easeml.models WHERE enabled lists the candidates.';
	END IF;
	-- [spaces] a generated candidate belongs to its task (dropping that
	-- task drops it): it is never a run of another one
	IF m.generated_for IS NOT NULL AND m.generated_for <> t.id THEN
		RAISE EXCEPTION 'model % was generated for another task', m.name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A generated candidate is trained only for the task it was generated for.';
	END IF;
	IF NOT (t.kind = ANY (m.kinds)) THEN
		RAISE EXCEPTION 'model "%" cannot train % task "%"', m.name, t.kind, t.name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('It supports: %s.', array_to_string(m.kinds, ', '));
	END IF;
	IF m.needs_image AND t.input_shape IS NULL THEN
		RAISE EXCEPTION 'model "%" needs an image task, and task "%" has no input_shape', m.name, t.name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Declare the task with an input_shape, or choose another model.';
	END IF;
	-- [access] the run would train on the snapshot: the tenant must still
	-- be allowed to read it (its policy raises why not)
	IF t.snapshot_version IS NOT NULL
		AND pg_catalog.to_regclass(pg_catalog.format('easeml_snapshots.%I',
			easeml._snapshot_name(t.id, t.snapshot_version))) IS NOT NULL THEN
		EXECUTE pg_catalog.format('SELECT 1 FROM easeml_snapshots.%I LIMIT 1',
								  easeml._snapshot_name(t.id, t.snapshot_version));
	END IF;
	IF EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.model_id = m.id
				AND r.status IN ('queued', 'running') AND r.purpose = 'select') THEN
		RAISE EXCEPTION 'model "%" is already queued or running for task "%"', m.name, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Wait for that run to end, or stop it with easeml.cancel(run_id).';
	END IF;
	-- [hardening] a paused task starts nothing, not even its tenant's own
	-- queue (docs/operations.md): say so, instead of a run that silently waits
	IF t.status = 'paused' THEN
		RAISE NOTICE 'task "%" is paused: the run of model "%" waits in the queue until the task is active again', t.name, m.name
			USING HINT = format('UPDATE easeml.tasks SET status = ''active'' WHERE name = %L resumes it.', t.name);
	END IF;
	-- column privileges already limit tenants to task_id and model_id;
	-- the values are set here too, so the rule does not rest on grants alone
	NEW.slot := NULL;
	NEW.status := 'queued';
	NEW.requested_by := 'user';
	NEW.queued_at := now();
	NEW.started_at := NULL;
	NEW.finished_at := NULL;
	NEW.seconds := NULL;
	NEW.score := NULL;
	NEW.metrics := NULL;
	NEW.error := NULL;
	NEW.pid := NULL;
	NEW.exit_code := NULL;
	NEW.epoch := NULL;
	NEW.loss := NULL;
	NEW.progress_at := NULL;
	NEW.cancel_requested := false;
	NEW.log_path := NULL;
	RETURN NEW;
END;
$$;

-- an ensemble's member list is the trainer's: its run ids compare as
-- numeric, so that 1.5 or 1e20 fail no _finish_run
CREATE OR REPLACE FUNCTION easeml._keep_artifacts(run_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cap			bigint := pg_size_bytes(coalesce(current_setting('easeml.artifact_max_bytes', true), '16MB'));
	tid			bigint;
	best		bigint;
	pick		bigint;
	keep		bigint[];
BEGIN
	SELECT task_id INTO tid FROM easeml.runs WHERE id = run_id;
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	DELETE FROM easeml.run_predictions p USING easeml.runs r
	 WHERE p.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	SELECT r.id INTO best FROM easeml.runs r
	 WHERE r.task_id = tid AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.score DESC, r.seconds, r.id LIMIT 1;
	pick := easeml._best_deployable(tid);	/* what deploy('best') takes */
	-- [refit] and so is the refit of either
	keep := ARRAY[best, pick] || ARRAY(
		SELECT k.id
		  FROM (SELECT d.run_id, d.refit_run_id FROM easeml.deployments d
				 WHERE d.task_id = tid AND d.rolled_back_at IS NULL
				 ORDER BY d.id DESC LIMIT 2) l
		 CROSS JOIN LATERAL (VALUES (l.run_id), (l.refit_run_id)) k (id)
		 WHERE k.id IS NOT NULL);
	-- [ensemble] the members of a kept ensemble predict with it (compared
	-- as numeric: the list is the trainer's, a run_id of 1.5 or 1e20 is no
	-- run and no error either)
	keep := array_remove(keep || ARRAY(
		SELECT y.id FROM easeml.runs y
		 WHERE y.task_id = tid
		   AND y.id::numeric IN (
			   SELECT (e ->> 'run_id')::numeric
				 FROM easeml.runs x
				CROSS JOIN LATERAL jsonb_array_elements(
					CASE WHEN jsonb_typeof(x.metrics -> 'members') = 'array'
						 THEN x.metrics -> 'members' ELSE '[]' END) e
				WHERE x.id = ANY (keep) AND x.purpose = 'ensemble'
				  AND jsonb_typeof(e -> 'run_id') = 'number')), NULL);
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.task_id = tid AND a.bytes > cap
	   AND r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')
	   AND NOT r.id = ANY (keep);
	-- [ensemble] validation predictions while an ensemble can select them:
	-- a run of an older snapshot is never selected again (snapshots only
	-- move on, queued ensembles with them), nor one below the pool's best
	-- 200 while the scores stand (a new run only pushes others down; after
	-- easeml.alter_task changes the metric or features, the pool ranks the
	-- runs that kept theirs)
	DELETE FROM easeml.run_predictions p USING easeml.runs r, easeml.tasks t
	 WHERE p.run_id = r.id AND r.task_id = tid AND t.id = tid
	   AND r.status NOT IN ('queued', 'running')
	   AND (r.snapshot_version IS DISTINCT FROM t.snapshot_version
			OR r.id IN (SELECT x.run_id FROM easeml._ensemble_pool(tid) x WHERE NOT x.selectable));
END;
$$;

-- generated names go on from the highest number the task's candidates have
CREATE OR REPLACE FUNCTION easeml._generate_candidates(task bigint, n int DEFAULT 6)
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
	numbered	int;
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
	-- names go on from the highest number the task's candidates have (an
	-- admin may have deleted some: a count would name a twin)
	numbered := (SELECT coalesce(max(substring(m.name FROM '\.g(\d{1,9})$')::int), 0)
			   FROM easeml.models m WHERE m.generated_for = task);
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
		VALUES (format('%s.t%s.g%s', left(root.name, 32), task, numbered + made + 1),
				p_family[k], cand, ARRAY[t.kind], root.needs_image, root.cost_factor,
				root.device_kinds, task, p_run[k], p_root[k]);
		made := made + 1;
	END LOOP;
	RETURN made;
END;
$$;

-- the space arithmetic is the scheduler's (called as the superuser)
REVOKE EXECUTE ON FUNCTION easeml._space_scale(text[], float8[], float8[], float8[]),
	easeml._space_propose(text[], float8[], float8[], float8[], bigint, int, float8) FROM PUBLIC;

-- [ensemble] a role made a trainer under 0.1.0 (easeml.grant_trainer) may
-- call the trainer functions that came with the ensembles too: every role
-- that holds EXECUTE on easeml_trainer.attach(bigint, text), but its owner
DO $$
DECLARE
	r			record;
BEGIN
	FOR r IN
		SELECT DISTINCT a.grantee::regrole::text AS role
		  FROM pg_catalog.pg_proc p
		 CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		 WHERE p.oid = 'easeml_trainer.attach(bigint, text)'::pg_catalog.regprocedure
		   AND a.privilege_type = 'EXECUTE'
		   AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION easeml_trainer.predictions(bigint, bytea),'
								  ' easeml_trainer.ensemble_members(bigint) TO %s', r.role);
	END LOOP;
END;
$$;
