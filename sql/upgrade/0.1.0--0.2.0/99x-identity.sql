-- [identity] sql/easeml.sql makes the same changes
-- ---------------------------------------------------------------------------
-- [identity] Temp-schema shadowing (docs/security.md, "Identity switching"):
-- a function that runs with another identity in a tenant's session
-- searched the tenant's temporary schema first for relations and types
-- (search_path = pg_catalog names no pg_temp, so PostgreSQL puts it first).
-- Every function with a search_path now ends it with pg_temp; _is_admin
-- reads the real role attribute; temporary relations and system catalogs
-- cannot be a task's source; the snapshot's fill reads as the tenant its
-- caller passes, never a role looked up by name.
-- [access] A snapshot is read only while its tenant may read what it
-- copied: each snapshot table gets row-level security whose policy calls
-- easeml._snapshot_readable (snapshots are new in 0.2.0: a 0.1.0 database
-- has none to convert).
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION easeml._is_admin()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r
					  WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER), false)
$$;

CREATE OR REPLACE FUNCTION easeml._source_relations(rel oid)
RETURNS TABLE (rel oid)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH RECURSIVE r(rel) AS (
		SELECT _source_relations.rel
		UNION
		SELECT d.refobjid
		  FROM r
		  JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.rel
		  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
			   AND d.objid = w.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND d.refobjid OPERATOR(pg_catalog.<>) r.rel)
	SELECT r.rel FROM r
$$;

CREATE OR REPLACE FUNCTION easeml._check_source(rel oid)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c			record;
	tmp			record;
BEGIN
	SELECT cl.relpersistence, n.oid AS nsp, n.nspname,
		   pg_catalog.format('%I.%I', n.nspname, cl.relname) AS relname
	  INTO c
	  FROM pg_catalog.pg_class cl JOIN pg_catalog.pg_namespace n ON n.oid = cl.relnamespace
	 WHERE cl.oid = rel;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	IF c.relpersistence = 't' OR c.nsp = pg_catalog.pg_my_temp_schema()
		OR pg_catalog.pg_is_other_temp_schema(c.nsp) OR c.nspname ~ '^pg_(toast_)?temp_' THEN
		RAISE EXCEPTION '"%" is a temporary relation and cannot be the source of a task', c.relname
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'The trainers read the source in sessions of their own, which cannot see temporary tables or views: create the table or view in a schema of yours.';
	END IF;
	IF c.nspname IN ('pg_catalog', 'information_schema') OR c.nspname ~ '^pg_toast' THEN
		RAISE EXCEPTION '"%" is a system catalog and cannot be the source of a task', c.relname
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Learn from a table or view of your own: copy the rows you need into one.';
	END IF;
	-- a permanent view may call a temporary function or read a temporary
	-- table (through the views it reads, too): it goes with the session
	SELECT pg_catalog.format('%s %I.%I', o.what, n.nspname, o.name) AS obj INTO tmp
	  FROM easeml._source_relations(rel) r
	  JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.rel
	  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
		   AND d.objid = w.oid
	  CROSS JOIN LATERAL (
		SELECT 'function' AS what, p.proname AS name, p.pronamespace AS nsp
		  FROM pg_catalog.pg_proc p
		 WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = d.refobjid
		UNION ALL
		SELECT 'type', t.typname, t.typnamespace
		  FROM pg_catalog.pg_type t
		 WHERE d.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = d.refobjid
		UNION ALL
		SELECT 'relation', cl.relname, cl.relnamespace
		  FROM pg_catalog.pg_class cl
		 WHERE d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND cl.oid = d.refobjid) o
	  JOIN pg_catalog.pg_namespace n ON n.oid = o.nsp
	 WHERE n.nspname ~ '^pg_(toast_)?temp_'
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '"%" uses the temporary %, and cannot be the source of a task', c.relname, tmp.obj
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'Temporary objects end with their session, before the trainers read the source: use permanent ones.';
	END IF;
END;
$$;

CREATE OR REPLACE FUNCTION easeml._access_fingerprint(rel oid)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT pg_catalog.md5(pg_catalog.string_agg(f.x, E'\n' ORDER BY f.x))
	  FROM (SELECT pg_catalog.format('%I.%I %s rls=%s force=%s %s', n.nspname, c.relname, c.relkind,
									 c.relrowsecurity, c.relforcerowsecurity,
									 CASE WHEN c.relkind IN ('v', 'm')
										  THEN pg_catalog.pg_get_viewdef(c.oid) END) AS x
			  FROM easeml._source_relations(rel) s
			  JOIN pg_catalog.pg_class c ON c.oid = s.rel
			  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			UNION ALL
			SELECT pg_catalog.format('%I.%I policy %I %s %s to %s using %s', n.nspname, c.relname,
									 p.polname, p.polcmd, p.polpermissive,
									 (SELECT pg_catalog.string_agg(r.name, ',' ORDER BY r.name)
										FROM (SELECT CASE WHEN u.role OPERATOR(pg_catalog.=) 0 THEN 'public'
														  ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(u.role))
													 END AS name
												FROM pg_catalog.unnest(p.polroles) AS u(role)) r),
									 pg_catalog.pg_get_expr(p.polqual, p.polrelid))
			  FROM easeml._source_relations(rel) s
			  JOIN pg_catalog.pg_policy p ON p.polrelid = s.rel AND p.polcmd IN ('r', '*')
			  JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
			  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace) f
$$;

CREATE OR REPLACE FUNCTION easeml._snapshot_readable(task_id bigint, access text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	src			text;
BEGIN
	SELECT k.tenant, k.name, k.source, k.features || k.target AS cols INTO t
	  FROM easeml.tasks k WHERE k.id = _snapshot_readable.task_id;
	IF NOT FOUND OR t.tenant OPERATOR(pg_catalog.<>) CURRENT_USER THEN
		RETURN false;
	END IF;
	SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) INTO src
	  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	 WHERE c.oid = t.source;
	IF src IS NULL THEN
		RAISE EXCEPTION 'the source of task "%" no longer exists: its snapshot is refused', t.name
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('A snapshot is readable only while its tenant may read its source. SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name);
	END IF;
	BEGIN
		PERFORM easeml._read_source(pg_catalog.format('SELECT %s FROM %s LIMIT 0',
			(SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ')
			   FROM pg_catalog.unnest(t.cols) AS c), src));
	EXCEPTION WHEN insufficient_privilege OR undefined_column OR undefined_table THEN
		RAISE EXCEPTION 'tenant "%" may no longer read the source % of task "%" (%): its snapshot is refused',
			t.tenant, src, t.name, SQLERRM
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('A snapshot is readable only while its tenant may read what it copied: the source''s owner can GRANT SELECT again, or SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name);
	END;
	IF easeml._access_fingerprint(t.source) IS DISTINCT FROM access THEN
		RAISE EXCEPTION 'the row-level security or view definitions of % changed since the snapshot of task "%" was taken: the snapshot is refused',
			src, t.name
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('SELECT easeml.refresh(%L) copies what the tenant may read now; SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name, t.name);
	END IF;
	RETURN true;
END;
$$;

CREATE OR REPLACE FUNCTION easeml._validate_task()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	relkind		"char";
	relname		text;
	tgt			record;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		IF NEW.id <> OLD.id OR NEW.tenant <> OLD.tenant OR NEW.name <> OLD.name
			OR NEW.source <> OLD.source OR NEW.target <> OLD.target
			OR NEW.features IS DISTINCT FROM OLD.features OR NEW.kind <> OLD.kind
			OR NEW.val_fraction <> OLD.val_fraction OR NEW.seed <> OLD.seed
			OR NEW.input_shape IS DISTINCT FROM OLD.input_shape
			OR NEW.snapshot <> OLD.snapshot OR NEW.metric IS DISTINCT FROM OLD.metric
			OR NEW.folds IS DISTINCT FROM OLD.folds OR NEW.impute <> OLD.impute
			OR NEW.missing_indicator <> OLD.missing_indicator
			OR NEW.feature_types IS DISTINCT FROM OLD.feature_types
			OR NEW.left_out IS DISTINCT FROM OLD.left_out THEN
			RAISE EXCEPTION 'the declaration of task "%" cannot be changed', OLD.name
				USING ERRCODE = 'feature_not_supported',
					  HINT = 'Only status, max_runs and auto_deploy can be updated; declare a new task instead.';
		END IF;
		-- [trust] what the declaration measured is not for hand edits; [data]
		-- easeml.refresh measures again, and says so with measured_at
		IF NEW.created_at IS DISTINCT FROM OLD.created_at
			OR ((NEW.n_rows, NEW.n_classes, NEW.snapshot_version)
				IS DISTINCT FROM (OLD.n_rows, OLD.n_classes, OLD.snapshot_version)
				AND NEW.measured_at IS NOT DISTINCT FROM OLD.measured_at) THEN
			RAISE EXCEPTION 'n_rows, n_classes, snapshot_version and created_at of task "%" are recorded by easeml', OLD.name
				USING ERRCODE = 'generated_always',
					  HINT = 'SELECT easeml.refresh(task) measures the source again.';
		END IF;
		IF NEW.max_runs IS NOT NULL AND NEW.max_runs < 1 THEN
			RAISE EXCEPTION 'max_runs of task "%" must be positive or NULL, not %', OLD.name, NEW.max_runs
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'NULL means no limit.';
		END IF;
		IF NEW.status <> OLD.status AND NEW.status NOT IN ('active', 'paused')
			AND NOT easeml._is_admin() THEN
			RAISE EXCEPTION 'status "%" cannot be set by hand', NEW.status
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Set status to ''paused'' to stop scheduling a task, or ''active'' to resume it.';
		END IF;
		-- [trust] a failed or completed task taken up again retries the
		-- candidates that failed so far (docs/operations.md)
		IF OLD.status IN ('failed', 'completed') AND NEW.status IN ('active', 'paused') THEN
			NEW.reactivated_at := clock_timestamp();
			NEW.status_reason := NULL;
		END IF;
		RETURN NEW;
	END IF;

	-- [trust] A superuser restoring a dump inserts rows this trigger
	-- validated before, with what the declaration measured and when: take
	-- them as they are.  Anyone else leaves those columns to the system.
	IF NEW.n_rows IS NOT NULL AND easeml._is_admin() AND NEW.created_at < now() THEN
		RETURN NEW;
	END IF;
	IF NEW.n_rows IS NOT NULL OR NEW.n_classes IS NOT NULL OR NEW.reactivated_at IS NOT NULL THEN
		RAISE EXCEPTION 'n_rows, n_classes and reactivated_at are recorded by easeml, not declared'
			USING ERRCODE = 'generated_always',
				  HINT = 'Leave them out of the INSERT.';
	END IF;

	-- who declares (the tenant itself; RLS on tenants shows only its row)
	IF NEW.tenant IS NULL THEN
		RAISE EXCEPTION 'tenant must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Leave tenant out: it defaults to your own role.';
	END IF;
	IF NEW.tenant IS DISTINCT FROM current_user THEN
		RAISE EXCEPTION 'task for tenant "%" must be declared by role "%" itself', NEW.tenant, NEW.tenant
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('Connect as %I, or run SET ROLE %I first.', NEW.tenant, NEW.tenant);
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.tenants WHERE name = NEW.tenant) THEN
		RAISE EXCEPTION 'role "%" is not an easeml tenant', NEW.tenant
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('An administrator registers tenants with SELECT easeml.add_tenant(%L).', NEW.tenant);
	END IF;
	IF NEW.name IS NULL OR NEW.name !~ '^[A-Za-z0-9_.-]{1,63}$' THEN
		RAISE EXCEPTION 'invalid task name "%"', coalesce(NEW.name, 'NULL')
			USING ERRCODE = 'invalid_name',
				  HINT = 'Use 1 to 63 letters, digits, "_", "." or "-".';
	END IF;
	-- [trust] say so rather than let the unique constraint speak
	IF EXISTS (SELECT 1 FROM easeml.tasks WHERE tenant = NEW.tenant AND name = NEW.name) THEN
		RAISE EXCEPTION 'task "%" already exists for tenant "%"', NEW.name, NEW.tenant
			USING ERRCODE = 'unique_violation',
				  HINT = format('Choose another name, or drop the task first with SELECT easeml.drop_task(%L).', NEW.name);
	END IF;
	IF NEW.source IS NULL THEN
		RAISE EXCEPTION 'source must name the table or view to learn from'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'For example source => ''myschema.mytable''.';
	END IF;
	IF NEW.target IS NULL THEN
		RAISE EXCEPTION 'target must name the column to predict'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Set target to the name of a column of the source.';
	END IF;
	IF NEW.seed IS NULL THEN
		RAISE EXCEPTION 'seed must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Leave seed out to use the default, 42.';
	END IF;
	IF NEW.max_runs IS NOT NULL AND NEW.max_runs < 1 THEN
		RAISE EXCEPTION 'max_runs must be positive or NULL, not %', NEW.max_runs
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'NULL means no limit.';
	END IF;
	IF NEW.kind IS NULL OR NEW.kind NOT IN ('classification', 'regression') THEN
		RAISE EXCEPTION 'invalid task kind "%"', NEW.kind
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'kind must be ''classification'' or ''regression''.';
	END IF;
	IF NEW.val_fraction IS NULL OR NEW.val_fraction < 0.05 OR NEW.val_fraction > 0.5 THEN
		RAISE EXCEPTION 'val_fraction must be between 0.05 and 0.5, not %', NEW.val_fraction
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Leave val_fraction out for the default, 0.2.';
	END IF;

	-- the source relation
	SELECT c.relkind, format('%I.%I', n.nspname, c.relname)
	  INTO relkind, relname
	  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE c.oid = NEW.source;
	IF relkind IS NULL THEN
		RAISE EXCEPTION 'source relation with OID % does not exist', NEW.source::oid
			USING ERRCODE = 'undefined_table';
	END IF;
	PERFORM easeml._check_source(NEW.source);
	IF relkind NOT IN ('r', 'p', 'v', 'm', 'f') THEN
		RAISE EXCEPTION '"%" is not a table or view', relname
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'The source must be a table, partitioned table, view, materialized view or foreign table.';
	END IF;

	-- the target column
	SELECT a.attname, a.atttypid INTO tgt
	  FROM pg_attribute a
	 WHERE a.attrelid = NEW.source AND a.attname = NEW.target
	   AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'target column "%" does not exist in "%"', NEW.target, relname
			USING ERRCODE = 'undefined_column',
				  HINT = 'Columns of ' || relname || ': ' || easeml._column_list(NEW.source) || '.';
	END IF;
	IF NEW.kind = 'regression' AND NOT easeml._numeric_type(tgt.atttypid) THEN
		RAISE EXCEPTION 'target column "%" has type %, but a regression target must be numeric',
			NEW.target, format_type(tgt.atttypid, NULL)
			USING ERRCODE = 'datatype_mismatch',
				  HINT = 'Declare the task with kind = ''classification'', or cast the target to a number in a view.';
	END IF;

	-- features, the data checks, snapshot and metric (docs/data.md)
	NEW := easeml._declare_data(NEW, relname);
	NEW.status := 'active';
	NEW.status_reason := NULL;
	NEW.created_at := now();
	RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION easeml._snapshot_sql(task_id bigint, version int,
									 OUT create_sql text, OUT grant_sql text, OUT fill_sql text,
									 OUT check_sql text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	src			text;
	snap		text := easeml._snapshot_name(task_id, version);
	defs		text[] := '{}';
	exprs		text[] := '{}';
	typ			text;
	a			record;
	cols		text[];
	kinds		text[];
BEGIN
	SELECT * INTO t FROM easeml.tasks WHERE id = task_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task % does not exist', task_id USING ERRCODE = 'undefined_object';
	END IF;
	SELECT format('%I.%I', n.nspname, c.relname) INTO src
	  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = t.source;
	IF src IS NULL THEN
		RAISE EXCEPTION 'the source of task "%" no longer exists', t.name
			USING ERRCODE = 'undefined_table';
	END IF;
	PERFORM easeml._check_source(t.source);
	cols := t.features || t.target;
	kinds := coalesce(t.feature_types, array_fill('numeric'::text, ARRAY[cardinality(t.features)]))
		|| 'target'::text;
	FOR j IN 1..cardinality(cols) LOOP
		SELECT a2.atttypid INTO a FROM pg_attribute a2
		 WHERE a2.attrelid = t.source AND a2.attname = cols[j] AND a2.attnum > 0 AND NOT a2.attisdropped;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'column "%" of task "%" no longer exists in %', cols[j], t.name, src
				USING ERRCODE = 'undefined_column',
					  HINT = 'Restore the column, or declare a new task.';
		END IF;
		typ := CASE WHEN kinds[j] = 'categorical' THEN 'text'
					ELSE format_type(easeml._base_type(a.atttypid), NULL) END;
		defs := defs || format('%I %s', cols[j], typ);
		exprs := exprs || format('%I::%s', cols[j], typ);
	END LOOP;
	create_sql := format('CREATE TABLE easeml_snapshots.%I (%s)', snap, array_to_string(defs, ', '));
	-- [access] the tenant reads it only while it may read what it copied
	grant_sql := format('GRANT SELECT ON easeml_snapshots.%I TO %I; '
						'ALTER TABLE easeml_snapshots.%I ENABLE ROW LEVEL SECURITY; '
						'CREATE POLICY tenant_access ON easeml_snapshots.%I FOR SELECT '
						'USING ((SELECT easeml._snapshot_readable(%s, %L)))',
						snap, t.tenant, snap, snap, task_id, easeml._access_fingerprint(t.source));
	-- read as the tenant ($1, passed by src/sql/sql_snapshot.c: the declaring or
	-- refreshing role), read-only and restricted; written by the superuser
	fill_sql := format('INSERT INTO easeml_snapshots.%I SELECT * FROM easeml._read_rows_as($1, %L) AS r(%s)',
					   snap,
					   format('SELECT %s FROM %s WHERE %I IS NOT NULL',
							  array_to_string(exprs, ', '), src, t.target),
					   array_to_string(defs, ', '));
	check_sql := format('SELECT n, classes FROM easeml._check_target(easeml._profile(%L, %L, %L, ''{}'', ''{}'', false), %L, %L, %L, %s, %s)',
						CASE WHEN version > 0 THEN format('easeml_snapshots.%I', snap) ELSE src END,
						t.target, t.kind, src, t.target, t.kind, t.val_fraction,
						coalesce(t.folds::text, 'NULL'));
END;
$$;

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
				AND r.status IN ('queued', 'running')) THEN
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

CREATE OR REPLACE FUNCTION easeml._trainer_spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	relname		text;
	cols		text;
	kinds		text[];
	col			text;
	usable		text;
	max_rows	bigint;
BEGIN
	SELECT ru.id, ru.status, ru.snapshot_version, t.id AS task_id, t.tenant, t.name AS task,
		   t.source, t.target, t.features, t.kind, t.val_fraction, t.seed, t.input_shape,
		   t.feature_types, t.metric, t.folds, t.impute, t.missing_indicator,
		   m.name AS model, m.family, m.params
	  INTO r
	  FROM easeml.runs ru
	  JOIN easeml.tasks t ON t.id = ru.task_id
	  JOIN easeml.models m ON m.id = ru.model_id
	 WHERE ru.id = run_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'run % does not exist', run_id USING ERRCODE = 'undefined_object';
	END IF;
	SELECT format('%I.%I', n.nspname, c.relname) INTO relname
	  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE c.oid = r.source;
	IF relname IS NULL THEN
		RAISE EXCEPTION 'the source table of task "%" no longer exists', r.task
			USING ERRCODE = 'undefined_table';
	END IF;
	PERFORM easeml._check_source(r.source);
	IF r.snapshot_version IS NOT NULL THEN
		-- the run's own snapshot version (docs/data.md); a snapshot is used
		-- only while its tenant may still read what it copied
		FOREACH col IN ARRAY r.features || r.target LOOP
			IF NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = r.source AND a.attname = col
							AND a.attnum > 0 AND NOT a.attisdropped) THEN
				RAISE EXCEPTION 'column "%" does not exist in %, the source of task "%"', col, relname, r.task
					USING ERRCODE = 'undefined_column';
			END IF;
			IF NOT has_column_privilege(r.tenant, r.source, col, 'SELECT') THEN
				RAISE EXCEPTION 'permission denied for table %: tenant "%" may no longer read column "%" of the source of task "%"',
					(SELECT c.relname FROM pg_class c WHERE c.oid = r.source), r.tenant, col, r.task
					USING ERRCODE = 'insufficient_privilege';
			END IF;
		END LOOP;
		relname := format('easeml_snapshots.%I', easeml._snapshot_name(r.task_id, r.snapshot_version));
		IF to_regclass(relname) IS NULL THEN
			RAISE EXCEPTION 'snapshot version % of task "%" no longer exists', r.snapshot_version, r.task
				USING ERRCODE = 'undefined_table',
					  HINT = 'easeml.refresh replaced it; runs queued since train on the new version.';
		END IF;
	END IF;
	-- what the trainer receives per kind: numbers as float8, categories as
	-- text, dates and timestamps as seconds since 1970-01-01 (UTC)
	kinds := coalesce(r.feature_types, array_fill('numeric'::text, ARRAY[cardinality(r.features)]));
	SELECT string_agg(CASE kinds[ord]
						WHEN 'categorical' THEN format('%I::text', f)
						WHEN 'date' THEN format('extract(epoch FROM %I)::float8', f)
						WHEN 'timestamp' THEN format('extract(epoch FROM %I)::float8', f)
						ELSE format('%I::float8', f) END, ', ' ORDER BY ord)
	  INTO cols
	  FROM unnest(r.features) WITH ORDINALITY AS u(f, ord);
	-- [hardening] only the rows the declaration counted (a target neither
	-- NULL nor NaN), and no more than the tenant's max_rows + 1: a live
	-- source (snapshot = false) may hold more than it showed at
	-- declaration, even to the tenant alone (a view on session_user); the
	-- trainer fails the run when it reads the row past the limit
	SELECT format('%I IS NOT NULL AND NOT %s', r.target,
				  easeml._nan_sql(format('%I', r.target), a.atttypid))
	  INTO usable
	  FROM pg_attribute a
	 WHERE a.attrelid = r.source AND a.attname = r.target AND a.attnum > 0 AND NOT a.attisdropped;
	SELECT tn.max_rows INTO max_rows FROM easeml.tenants tn WHERE tn.name = r.tenant;
	RETURN jsonb_build_object(
		'run_id', r.id,
		'task_id', r.task_id,
		'tenant', r.tenant,
		'task', r.task,
		'kind', r.kind,
		'model', r.model,
		'family', r.family,
		'params', r.params,
		'features', to_jsonb(r.features),
		'target', r.target,
		'val_fraction', r.val_fraction,
		'seed', r.seed,
		'input_shape', to_jsonb(r.input_shape),
		'feature_types', to_jsonb(kinds),
		'metric', coalesce(r.metric, (easeml._metrics(r.kind))[1]),
		'folds', r.folds,
		'impute', r.impute,
		'missing_indicator', r.missing_indicator,
		'snapshot_version', r.snapshot_version,
		'max_rows', max_rows,
		'copy_query', format('COPY (SELECT %s, %s FROM %s WHERE %s%s) TO STDOUT (FORMAT binary)',
							 cols,
							 CASE WHEN r.kind = 'regression' THEN format('%I::float8', r.target)
								  ELSE format('%I::text', r.target) END,
							 relname, coalesce(usable, 'true'),
							 CASE WHEN max_rows < 9223372036854775807 THEN format(' LIMIT %s', max_rows + 1) ELSE '' END));
END;
$$;

-- C functions that switch identity (src/module/identity.c) say so in their settings
ALTER FUNCTION easeml._read_source(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION easeml._read_rows_as(oid, text) SET search_path = pg_catalog, pg_temp;
-- (in the order a fresh install sets them: search_path, then jit)
ALTER FUNCTION easeml._take_snapshot() RESET jit;
ALTER FUNCTION easeml._take_snapshot() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION easeml._take_snapshot() SET jit = off;

-- every other function of easeml that pins search_path = pg_catalog: with
-- pg_temp last
DO $$
DECLARE
	f			regprocedure;
BEGIN
	FOR f IN
		SELECT p.oid
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			   AND d.objid = p.oid AND d.deptype = 'e'
			   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
		  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'easeml'
		 WHERE 'search_path=pg_catalog' = ANY (p.proconfig)
	LOOP
		EXECUTE pg_catalog.format('ALTER FUNCTION %s SET search_path = pg_catalog, pg_temp', f);
	END LOOP;
END;
$$;
