-- [rename] easeml.rename_tenant(old_name, new_name) moves a tenant whose
-- role was renamed (ALTER ROLE old RENAME TO new) to the role's new name:
-- its registration, its tasks, every row keyed by its name, and the
-- digests its snapshots' policies hold.  tasks_tenant_fkey is deferrable
-- for it, easeml._validate_task lets a task's tenant follow its tenant's
-- name, and add_tenant's hint for a renamed role names it.
-- [dropped] a DROP of a task's source fails the task at once with the
-- reason, and sets its source to 0 (an event trigger on sql_drop); tasks
-- whose source was dropped before are marked the same way here.

ALTER TABLE easeml.tasks ALTER CONSTRAINT tasks_tenant_fkey DEFERRABLE;

CREATE FUNCTION easeml._role_as(r oid, tenant_role oid, tenant name)
RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN _role_as.r OPERATOR(pg_catalog.=) _role_as.tenant_role THEN _role_as.tenant
				ELSE pg_catalog.pg_get_userbyid(_role_as.r) END
$$;

CREATE FUNCTION easeml._access_fingerprint_as(rel oid, tenant_role oid, tenant name)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, MDY'
SET IntervalStyle = 'postgres'
SET TimeZone = 'UTC'
SET extra_float_digits = 1
SET bytea_output = 'hex'
SET quote_all_identifiers = off
SET standard_conforming_strings = on
SET lc_monetary = 'C'
AS $$
	WITH rels AS (
		SELECT DISTINCT c.oid, c.relkind, c.relowner, c.relrowsecurity, c.relforcerowsecurity,
			   c.reloptions, pg_catalog.format('%I.%I', n.nspname, c.relname) AS name
		  FROM easeml._source_relations(rel) s
		  JOIN pg_catalog.pg_class c ON c.oid = s.rel
		  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace),
	readers AS (
		SELECT r.oid,
			   pg_catalog.quote_ident(easeml._role_as(r.oid, _access_fingerprint_as.tenant_role,
													  _access_fingerprint_as.tenant)) AS name,
			   r.rolsuper OR r.rolbypassrls AS bypass
		  FROM pg_catalog.pg_roles r
		 WHERE r.oid OPERATOR(pg_catalog.=) _access_fingerprint_as.tenant_role
			OR r.oid IN (SELECT v.relowner FROM rels v WHERE v.relkind = 'v')),
	pols AS (
		SELECT p.oid, p.polname, p.polpermissive, p.polroles, p.polqual, p.polrelid, c.name AS relname
		  FROM rels c JOIN pg_catalog.pg_policy p ON p.polrelid = c.oid AND p.polcmd IN ('r', '*'))
	SELECT pg_catalog.md5(pg_catalog.string_agg(f.x, E'\n' ORDER BY f.x))
	  FROM (SELECT pg_catalog.format('%s %s owner=%s rls=%s force=%s %s %s', c.name, c.relkind,
									 pg_catalog.quote_ident(easeml._role_as(c.relowner,
																			_access_fingerprint_as.tenant_role,
																			_access_fingerprint_as.tenant)),
									 c.relrowsecurity, c.relforcerowsecurity,
									 CASE WHEN c.relkind = 'v' THEN c.reloptions::text END,
									 CASE WHEN c.relkind IN ('v', 'm')
										  THEN pg_catalog.pg_get_viewdef(c.oid) END) AS x
			  FROM rels c
			UNION ALL
			SELECT pg_catalog.format('reader %s bypass=%s', r.name, r.bypass)
			  FROM readers r
			UNION ALL
			SELECT pg_catalog.format('%s read by %s as owner=%s', c.name, r.name,
									 pg_catalog.pg_has_role(r.oid, c.relowner, 'USAGE'))
			  FROM rels c CROSS JOIN readers r
			 WHERE c.relrowsecurity
			UNION ALL
			SELECT pg_catalog.format('%s policy %I %s to %s using %s', p.relname, p.polname, p.polpermissive,
									 (SELECT pg_catalog.string_agg(o.name, ',' ORDER BY o.name)
										FROM (SELECT CASE WHEN u.role OPERATOR(pg_catalog.=) 0 THEN 'public'
														  ELSE pg_catalog.quote_ident(easeml._role_as(u.role,
																	_access_fingerprint_as.tenant_role,
																	_access_fingerprint_as.tenant))
													 END AS name
												FROM pg_catalog.unnest(p.polroles) AS u(role)) o),
									 pg_catalog.pg_get_expr(p.polqual, p.polrelid))
			  FROM pols p
			UNION ALL
			SELECT pg_catalog.format('%s policy %I applies to %s=%s', p.relname, p.polname, r.name,
									 0::oid OPERATOR(pg_catalog.=) ANY (p.polroles)
									 OR EXISTS (SELECT 1 FROM pg_catalog.unnest(p.polroles) AS u(role)
												 WHERE pg_catalog.pg_has_role(r.oid, u.role, 'USAGE')))
			  FROM pols p CROSS JOIN readers r
			UNION ALL
			SELECT DISTINCT pg_catalog.format('function %s owner=%s definer=%s config=%s source=%s',
											  f.oid::pg_catalog.regprocedure,
											  pg_catalog.quote_ident(easeml._role_as(f.proowner,
													_access_fingerprint_as.tenant_role,
													_access_fingerprint_as.tenant)),
											  f.prosecdef, f.proconfig, pg_catalog.md5(f.prosrc))
			  FROM pg_catalog.pg_depend d
			  JOIN pg_catalog.pg_proc f ON f.oid = d.refobjid
			 WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			   AND ((d.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass
					 AND d.objid IN (SELECT p.oid FROM pols p))
					OR (d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
						AND d.objid IN (SELECT w.oid FROM pg_catalog.pg_rewrite w
										 WHERE w.ev_class IN (SELECT c.oid FROM rels c))))) f
$$;

CREATE OR REPLACE FUNCTION easeml._access_fingerprint(rel oid, tenant name)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml._access_fingerprint_as(_access_fingerprint.rel,
		(SELECT r.oid FROM pg_catalog.pg_roles r
		  WHERE r.rolname OPERATOR(pg_catalog.=) _access_fingerprint.tenant),
		_access_fingerprint.tenant)
$$;

CREATE OR REPLACE FUNCTION easeml._validate_task()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	relname		text;
	renamed		boolean := false;
	source_dropped boolean := false;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		-- [dropped] a task's source becomes 0 when the relation is dropped
		-- (easeml._source_dropped, as the superuser)
		IF NEW.source <> OLD.source AND NEW.source::oid = 0 AND easeml._is_admin() THEN
			source_dropped := NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = OLD.source);
		END IF;
		-- [rename] a task's tenant changes only with the tenant's name
		-- (easeml.rename_tenant, which defers tasks_tenant_fkey): no tenant
		-- has the old name any more, and the new one is registered, bound to
		-- the role that has that name
		IF NEW.tenant <> OLD.tenant AND easeml._is_admin() THEN
			renamed := NOT EXISTS (SELECT 1 FROM easeml.tenants n WHERE n.name = OLD.tenant)
				AND EXISTS (SELECT 1 FROM easeml.tenants n JOIN pg_roles r ON r.oid = n.role_oid
							 WHERE n.name = NEW.tenant AND r.rolname = NEW.tenant);
		END IF;
		IF NEW.id <> OLD.id OR (NEW.tenant <> OLD.tenant AND NOT renamed) OR NEW.name <> OLD.name
			OR (NEW.source <> OLD.source AND NOT source_dropped) OR NEW.target <> OLD.target
			OR NEW.kind <> OLD.kind
			OR NEW.val_fraction <> OLD.val_fraction OR NEW.seed <> OLD.seed
			OR NEW.input_shape IS DISTINCT FROM OLD.input_shape
			OR NEW.snapshot <> OLD.snapshot
			OR NEW.impute <> OLD.impute
			OR NEW.missing_indicator <> OLD.missing_indicator THEN
			RAISE EXCEPTION 'the declaration of task "%" cannot be changed', OLD.name
				USING ERRCODE = 'feature_not_supported',
					  HINT = format('Only status, max_runs and auto_deploy can be updated, and metric, features and folds with SELECT easeml.alter_task(%L, ...); declare a new task for anything else.', OLD.name);
		END IF;
		-- [alter] metric, features and folds change only through
		-- easeml.alter_task, which checked the new values as the declaration
		-- does and writes them as the superuser (easeml._altering says it is
		-- this task's alter_task writing; no SQL can set that)
		IF (NEW.metric, NEW.features, NEW.feature_types, NEW.left_out, NEW.folds, NEW.features_version)
			IS DISTINCT FROM (OLD.metric, OLD.features, OLD.feature_types, OLD.left_out, OLD.folds,
							  OLD.features_version) THEN
			IF NOT easeml._is_admin() THEN
				RAISE EXCEPTION 'metric, features and folds of task "%" are changed with easeml.alter_task', OLD.name
					USING ERRCODE = 'insufficient_privilege',
						  HINT = format('Use easeml.alter_task(%L, metric => ..., features => ..., folds => ...): it checks the change as a declaration does, ranks the runs by a new metric again and takes a new snapshot for new features or folds.', OLD.name);
			END IF;
			IF NOT easeml._altering(OLD.id) THEN
				RAISE EXCEPTION 'metric, features and folds of task "%" are changed with easeml.alter_task', OLD.name
					USING ERRCODE = 'feature_not_supported',
						  HINT = format('Use easeml.alter_task(%L, ...) as its tenant: it checks the change as a declaration does.', OLD.name);
			END IF;
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
		-- [budget] a tenant's UPDATE, or easeml.alter_task's; NULL: none
		IF NEW.budget_seconds IS DISTINCT FROM OLD.budget_seconds THEN
			PERFORM easeml._check_budget(NEW.budget_seconds, 'budget_seconds');
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
		-- [quota] a new measurement (easeml.refresh) meets the limits
		IF NEW.measured_at IS DISTINCT FROM OLD.measured_at THEN
			PERFORM easeml._check_tenant_limits(NEW.tenant, NEW.name, NEW.n_rows, false);
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
	-- [budget] a task declared without a time budget gets its tenant's
	-- default (easeml.set_tenant_budget; the tenant sees its own row)
	IF NEW.budget_seconds IS NULL THEN
		NEW.budget_seconds := (SELECT n.default_budget_seconds FROM easeml.tenants n
								WHERE n.name = NEW.tenant);
	ELSE
		PERFORM easeml._check_budget(NEW.budget_seconds, 'budget_seconds');
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

	-- the source and the target column
	relname := easeml._check_source_target(NEW);

	-- features, the data checks, snapshot and metric (docs/data.md)
	NEW := easeml._declare_data(NEW, relname);
	NEW.status := 'active';
	NEW.status_reason := NULL;
	NEW.created_at := now();
	PERFORM easeml._check_tenant_limits(NEW.tenant, NEW.name, NEW.n_rows, true);
	RETURN NEW;
END;
$$;

CREATE OR REPLACE FUNCTION easeml.add_tenant(role name, max_parallel int DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	other		name;
BEGIN
	-- [trust] a tenant is an ordinary login role that row-level security binds
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a login role: SELECT easeml.add_tenant(''lab_a'');';
	END IF;
	SELECT oid, rolsuper, rolbypassrls, rolcanlogin INTO r FROM pg_roles WHERE rolname = role;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'role "%" does not exist', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Create it first: CREATE ROLE %I LOGIN;', role);
	END IF;
	-- [binding] a tenant is bound by its role and its name: a tenant's
	-- role renamed (ALTER ROLE lab_a RENAME TO x) is still tenant lab_a,
	-- and sees none of its rows until it has that name again; it is not
	-- made a second tenant (tenants.role_oid is unique)
	SELECT t.name INTO other FROM easeml.tenants t
	 WHERE t.role_oid = r.oid AND t.name <> add_tenant.role;
	IF FOUND THEN
		RAISE EXCEPTION 'role "%" is already tenant "%", registered under the name it had then', role, other
			USING ERRCODE = 'duplicate_object',
				  HINT = format('SELECT easeml.rename_tenant(%L, %L) moves tenant %I, with its tasks and runs, to the role''s new name; or give the role its old name back (ALTER ROLE %I RENAME TO %I); or remove the old tenant with its tasks first (DELETE FROM easeml.tenants WHERE name = %L).',
								other, role, other, role, other, other);
	END IF;
	IF r.rolsuper OR r.rolbypassrls THEN
		RAISE EXCEPTION 'role "%" cannot be a tenant: it is a superuser or bypasses row-level security', role
			USING ERRCODE = 'invalid_role_specification',
				  HINT = 'Row-level security keeps tenants apart and does not bind such roles: create an ordinary role for the tenant.';
	END IF;
	IF NOT r.rolcanlogin THEN
		RAISE EXCEPTION 'role "%" cannot be a tenant: it cannot log in', role
			USING ERRCODE = 'invalid_role_specification',
				  HINT = format('Allow it with ALTER ROLE %I LOGIN;', role);
	END IF;
	IF max_parallel IS NOT NULL AND max_parallel < 1 THEN
		RAISE EXCEPTION 'max_parallel must be positive or NULL'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'NULL leaves the tenant without a cap of its own (the fair share still applies).';
	END IF;
	-- [binding] easeml._bind_tenant records the role's object id; adding
	-- a tenant again binds its name to the role that has it now
	INSERT INTO easeml.tenants (name, max_parallel) VALUES (role, max_parallel)
	ON CONFLICT (name) DO UPDATE SET max_parallel = EXCLUDED.max_parallel,
									 role_oid = EXCLUDED.role_oid;
END;
$$;

-- [rename] A tenant's role renamed (ALTER ROLE lab_a RENAME TO lab_b) is
-- still tenant lab_a, and sees none of its rows: every row of the tenant's
-- is keyed by the tenant's name (easeml._bound_tenant).  An administrator
-- moves the tenant to the role's new name: its registration (limits,
-- budget, creation time, role), its tasks, and every row of a table of
-- schema easeml with a column tenant (runs, events, decisions, artifacts,
-- deployments, progress, predictions), in one transaction.  It refuses
-- unless the role bound to old_name (tenants.role_oid) is now called
-- new_name, and unless new_name is no tenant.  It waits for the writers of
-- those tables and holds off new ones until commit (SHARE ROW EXCLUSIVE,
-- taken all at once), so that no run, event or progress row of the
-- tenant's read under the old name is written after the move.  A
-- snapshot's row-level security policy holds the digest of the rules
-- under which its tenant read the source (easeml._access_fingerprint),
-- and the digest names the role: a policy whose digest is the role's
-- under its old name gets the digest under its new name; one whose rules
-- had changed before stays refused until easeml.refresh.  Columns that record who did something (deployments'
-- deployed_by and rolled_back_by) keep the name the role had then.
-- Returns the number of tasks moved.
CREATE FUNCTION easeml.rename_tenant(old_name name, new_name name)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- after its tables are locked it holds off every writer of easeml's tables:
-- a lock it then waits for (a snapshot a trainer reads, a row a tenant
-- locked) must not make that wait unbounded
SET lock_timeout = '5s'
AS $$
DECLARE
	bound		oid;
	now_name	name;
	rel			regclass;
	k			record;
	p			record;
	old_fp		text;
	new_fp		text;
	moved		bigint;
	left_refused int := 0;
	tables		text;
	deadline	timestamptz;
BEGIN
	IF old_name IS NULL OR new_name IS NULL THEN
		RAISE EXCEPTION 'old_name and new_name must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'After ALTER ROLE lab_a RENAME TO lab_b, run SELECT easeml.rename_tenant(''lab_a'', ''lab_b'');';
	END IF;
	IF NOT easeml._is_admin() THEN
		RAISE EXCEPTION 'only a superuser may rename a tenant'
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'An administrator renames the role and then the tenant; a tenant asks its administrator.';
	END IF;
	-- every table of a tenant's rows, all at once or none (waiting for one
	-- while holding another could deadlock with the scheduler): wait for
	-- their writers, hold off new ones until commit; reads go on
	SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.relname) INTO tables
	  FROM pg_class c
	 WHERE c.relnamespace = 'easeml'::regnamespace AND c.relkind IN ('r', 'p')
	   AND (c.oid = 'easeml.tenants'::regclass
			OR EXISTS (SELECT 1 FROM pg_attribute a
						WHERE a.attrelid = c.oid AND a.attname = 'tenant'
						  AND a.atttypid = 'name'::regtype AND NOT a.attisdropped));
	deadline := clock_timestamp() + interval '60 seconds';
	LOOP
		BEGIN
			EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', tables);
			EXIT;
		EXCEPTION WHEN lock_not_available THEN
			IF clock_timestamp() > deadline THEN
				RAISE EXCEPTION 'tenant "%" was not renamed: easeml''s tables were written all the time for 60 seconds', old_name
					USING ERRCODE = 'lock_not_available',
						  HINT = 'A transaction that wrote them may still be open (pg_locks and pg_stat_activity show it): end it, and run easeml.rename_tenant again.';
			END IF;
			PERFORM pg_sleep(0.02);
		END;
	END LOOP;

	SELECT n.role_oid INTO bound FROM easeml.tenants n WHERE n.name = old_name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'tenant "%" does not exist', old_name
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name, role_oid::regrole AS role FROM easeml.tenants lists the tenants and the roles they are bound to.';
	END IF;
	now_name := (SELECT r.rolname FROM pg_roles r WHERE r.oid = bound);
	IF now_name IS NULL THEN
		RAISE EXCEPTION 'the role of tenant "%" no longer exists', old_name
			USING ERRCODE = 'undefined_object',
				  HINT = format('A tenant whose role was dropped is not renamed: SELECT easeml.add_tenant(%L) binds the tenant, with its tasks, to the role that has the name now, or DELETE FROM easeml.tenants WHERE name = %L removes it with its tasks.',
								old_name, old_name);
	END IF;
	IF now_name = old_name THEN
		RAISE EXCEPTION 'the role of tenant "%" is still called "%"', old_name, old_name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('Rename the role first (ALTER ROLE %I RENAME TO %I), then SELECT easeml.rename_tenant(%L, %L).',
								old_name, new_name, old_name, new_name);
	END IF;
	IF now_name <> new_name THEN
		RAISE EXCEPTION 'the role of tenant "%" is called "%", not "%"', old_name, now_name, new_name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('The tenant takes the name its role has: SELECT easeml.rename_tenant(%L, %L); or ALTER ROLE %I RENAME TO %I first.',
								old_name, now_name, now_name, new_name);
	END IF;
	IF EXISTS (SELECT 1 FROM easeml.tenants n WHERE n.name = new_name) THEN
		RAISE EXCEPTION 'tenant "%" already exists', new_name
			USING ERRCODE = 'duplicate_object',
				  HINT = format('Another tenant has the name (its role was dropped, and the renamed role took the name): remove it with its tasks first (DELETE FROM easeml.tenants WHERE name = %L), or give the role another name and rename the tenant to that.',
								new_name);
	END IF;

	BEGIN
	-- the snapshots' digests, before anything moves (the role is found by
	-- its object id, and named as told)
	FOR k IN SELECT t.id, t.source FROM easeml.tasks t WHERE t.tenant = old_name ORDER BY t.id LOOP
		old_fp := easeml._access_fingerprint_as(k.source, bound, old_name);
		new_fp := easeml._access_fingerprint_as(k.source, bound, new_name);
		FOR p IN
			SELECT c.relname, pg_get_expr(y.polqual, y.polrelid) AS qual
			  FROM pg_class c JOIN pg_policy y ON y.polrelid = c.oid AND y.polname = 'tenant_access'
			 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace
			   AND c.relname ~ ('^task_' || k.id || '_v[0-9]+$')
			 ORDER BY c.relname
		LOOP
			IF old_fp IS NOT NULL AND strpos(p.qual, quote_literal(old_fp)) > 0 THEN
				EXECUTE format('ALTER POLICY tenant_access ON easeml_snapshots.%I USING ((SELECT easeml._snapshot_readable(%s, %L)))',
							   p.relname, k.id, new_fp);
			ELSE
				left_refused := left_refused + 1;
			END IF;
		END LOOP;
	END LOOP;

	-- the registration keeps its row (limits, budget, role_oid); the tasks
	-- follow it within this transaction (easeml._validate_task allows it)
	SET CONSTRAINTS easeml.tasks_tenant_fkey DEFERRED;
	UPDATE easeml.tenants SET name = new_name WHERE name = old_name;
	UPDATE easeml.tasks SET tenant = new_name WHERE tenant = old_name;
	GET DIAGNOSTICS moved = ROW_COUNT;
	SET CONSTRAINTS easeml.tasks_tenant_fkey IMMEDIATE;
	FOR rel IN
		SELECT c.oid::regclass
		  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		 WHERE c.relnamespace = 'easeml'::regnamespace AND c.relkind IN ('r', 'p')
		   AND a.attname = 'tenant' AND a.atttypid = 'name'::regtype AND NOT a.attisdropped
		   AND c.oid <> 'easeml.tasks'::regclass
		 ORDER BY c.relname
	LOOP
		EXECUTE format('UPDATE %s SET tenant = $1 WHERE tenant = $2', rel) USING new_name, old_name;
	END LOOP;
	EXCEPTION WHEN lock_not_available THEN
		RAISE EXCEPTION 'tenant "%" was not renamed: a lock on one of its snapshots or rows was held for 5 seconds', old_name
			USING ERRCODE = 'lock_not_available',
				  HINT = 'A trainer reading one of its snapshots, or a transaction that locked one of its rows, holds it (pg_locks and pg_stat_activity show which): run easeml.rename_tenant again once it has ended.';
	END;
	IF left_refused > 0 THEN
		RAISE WARNING '% snapshot table(s) of tenant "%" stay refused: the rules under which the tenant reads their source changed before the rename', left_refused, new_name
			USING HINT = 'SELECT easeml.refresh(task) as the tenant takes a new snapshot under the rules of now.';
	END IF;
	RETURN moved;
END;
$$;
COMMENT ON FUNCTION easeml.rename_tenant(name, name) IS
	'after ALTER ROLE old RENAME TO new: move tenant old, with its tasks, runs and every row keyed by its name, to the role''s new name (admin only); returns the tasks moved';
REVOKE ALL ON FUNCTION easeml.rename_tenant(name, name) FROM PUBLIC;

-- [dropped] A task's source is a regclass, which records no dependency:
-- a DROP of the table (or a view, a DROP SCHEMA ... CASCADE, DROP OWNED)
-- left the task pointing at the dropped relation's object id, shown as a
-- bare number, and dumped and restored as that number, which may name
-- another relation later.  The task stayed as it was until a run of it
-- failed.  At the end of each command that drops relations, the tasks
-- whose source it dropped fail at once, with the reason, and their source
-- becomes 0 ('-'), which names no relation anywhere: easeml.refresh, the
-- scheduler and the trainer find no source, as for a source dropped
-- before.  The tenant drops the task or declares a new one (a source
-- cannot change).  A DROP is not refused: PostgreSQL lets a table's
-- owner drop it whoever reads it, and a tenant's task must not keep a
-- table its owner wants gone.  SECURITY DEFINER: any role's DROP records
-- it; it reads only what the server reports as dropped.
CREATE FUNCTION easeml._source_dropped()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	dropped		oid[];
BEGIN
	-- DROP EXTENSION easeml takes the tasks with it
	IF pg_catalog.to_regclass('easeml.tasks') IS NULL THEN
		RETURN;
	END IF;
	-- every DROP in the database comes here (an index, a function, a temp
	-- table): only a read of the tasks, which waits for no writer, unless a
	-- task's source went
	SELECT pg_catalog.array_agg(d.objid) INTO dropped
	  FROM pg_catalog.pg_event_trigger_dropped_objects() d
	 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objsubid OPERATOR(pg_catalog.=) 0;
	IF dropped IS NULL OR NOT EXISTS (
		SELECT 1 FROM easeml.tasks t
		 WHERE t.source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped)) THEN
		RETURN;
	END IF;
	UPDATE easeml.tasks t
	   SET source = 0::pg_catalog.regclass,
		   -- a completed task's models stay in use: only the reason is new
		   status = CASE WHEN t.status = 'completed' THEN t.status ELSE 'failed' END,
		   status_reason = pg_catalog.format('its source %s was dropped', d.object_identity)
	  FROM pg_catalog.pg_event_trigger_dropped_objects() d
	 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objsubid OPERATOR(pg_catalog.=) 0
	   AND t.source::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END;
$$;
REVOKE ALL ON FUNCTION easeml._source_dropped() FROM PUBLIC;

CREATE EVENT TRIGGER easeml_source_dropped ON sql_drop
	EXECUTE FUNCTION easeml._source_dropped();

UPDATE easeml.tasks t
   SET source = 0::pg_catalog.regclass,
       status = CASE WHEN t.status = 'completed' THEN t.status ELSE 'failed' END,
	   status_reason = pg_catalog.format('its source (relation %s) was dropped', t.source::pg_catalog.oid)
 WHERE t.source::pg_catalog.oid <> 0
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = t.source::pg_catalog.oid);
