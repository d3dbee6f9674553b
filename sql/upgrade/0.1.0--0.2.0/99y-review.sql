-- [owner] [settings] [access] [locks] [binding] sql/easeml.sql makes the same changes
-- ---------------------------------------------------------------------------
-- Issue 22 review.
-- [owner] Nothing of a tenant's runs as the superuser because of a table
-- easeml owns (docs/security.md, "What runs as the superuser"): a snapshot
-- column has a built-in type, so ANALYZE of a snapshot table (autovacuum's)
-- never runs a tenant type's support functions (a range's subtype_diff) as
-- its owner, the bootstrap superuser; neither a view over a snapshot nor
-- another session's lock on it keeps it (or its task, or a refresh) from
-- being dropped: a table that cannot be dropped at once is left to the
-- scheduler (easeml.snapshot_drops).  Snapshots are new in 0.2.0: a 0.1.0
-- database has none to convert.
-- [settings] is src/module/identity.c's alone.
-- [access] The digest of a source's access rules also covers owners, view
-- options, the functions views and policies call and, as they resolve now,
-- which policies apply to the tenant and the views' owners (a lost role
-- membership), and is made under fixed output settings
-- (easeml._access_fingerprint(oid, name) replaces the one-argument form).
-- [binding] A tenant is the role registered under its name (its object
-- id), not a role made later with the name.
-- [locks] Row locks a tenant cannot take replace the advisory locks of
-- deployments and tenant limits.
-- ---------------------------------------------------------------------------

-- [access] The rules that decide which rows of a source a tenant reads,
-- as one digest (docs/data.md, section 6).  For the source and every
-- relation its views read (easeml._source_relations): its kind, owner,
-- whether row-level security is enabled and forced, for a view its options
-- (security_invoker, security_barrier) and definition; each SELECT policy
-- (name, permissive or not, roles, expression); the definition of each
-- function a view or policy calls.  And the rules as they resolve now for
-- the roles that read the rows (the tenant, and the owner of each view, as
-- whom a view that is not security_invoker reads): whether a role
-- bypasses row-level security, owns a relation (its owner is not bound by
-- its policies), and which policies apply to it (a policy TO a role
-- applies through membership, so a lost membership changes the digest).
-- Names, not object ids, so a dump restores the same digest; the text is
-- made under fixed settings, so that the reader's DateStyle, TimeZone or
-- extra_float_digits cannot change how a policy's constants print.
-- Privileges are not in it: they are checked as they are now
-- (easeml._snapshot_readable).
CREATE FUNCTION easeml._access_fingerprint(rel oid, tenant name)
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
		SELECT r.oid, pg_catalog.quote_ident(r.rolname) AS name, r.rolsuper OR r.rolbypassrls AS bypass
		  FROM pg_catalog.pg_roles r
		 WHERE r.rolname OPERATOR(pg_catalog.=) _access_fingerprint.tenant
			OR r.oid IN (SELECT v.relowner FROM rels v WHERE v.relkind = 'v')),
	pols AS (
		SELECT p.oid, p.polname, p.polpermissive, p.polroles, p.polqual, p.polrelid, c.name AS relname
		  FROM rels c JOIN pg_catalog.pg_policy p ON p.polrelid = c.oid AND p.polcmd IN ('r', '*'))
	SELECT pg_catalog.md5(pg_catalog.string_agg(f.x, E'\n' ORDER BY f.x))
	  FROM (SELECT pg_catalog.format('%s %s owner=%s rls=%s force=%s %s %s', c.name, c.relkind,
									 pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(c.relowner)),
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
														  ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(u.role))
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
											  pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(f.proowner)),
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

-- [access] Whether the caller may read a task's snapshot (docs/data.md,
-- section 6).  The row-level security policy of every snapshot table calls
-- it once per query (an InitPlan), as whoever reads: the tenant, directly
-- or in the trainer's data session (the owner and superusers bypass it).  A
-- snapshot is a copy made on the tenant's behalf, so it is readable only
-- while the tenant may still read what it copied: 42501 when the tenant can
-- no longer SELECT the copied columns of the source (as PostgreSQL decides
-- for a query of them, through views too; the source gone counts), or when
-- the rules that decide which rows of the source the tenant reads are no
-- longer those the copy was made under (access: easeml._access_fingerprint
-- then).  false for anyone else.
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
	IF easeml._access_fingerprint(t.source, t.tenant) IS DISTINCT FROM access THEN
		RAISE EXCEPTION 'the rules that decide which rows of % tenant "%" reads (row-level security, policies and whom they apply to, owners, views) changed since the snapshot of task "%" was taken: the snapshot is refused',
			src, t.tenant, t.name
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('SELECT easeml.refresh(%L) copies what the tenant may read now; SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name, t.name);
	END IF;
	RETURN true;
END;
$$;

-- [owner] The type of a snapshot column: text for a categorical feature,
-- else the column's base type when it is built in (made by initdb: an
-- object id below FirstNormalObjectId, 16384), else text, read through the
-- type's cast or output function as the tenant.  A snapshot table belongs
-- to the bootstrap superuser, and ANALYZE (autovacuum's, an
-- administrator's) runs a column type's support functions as the table's
-- owner: a tenant's range type would run its subtype_diff function, code
-- the tenant wrote, as the superuser (docs/security.md, "What runs as the
-- superuser").  A built-in type's support functions are built in.  The
-- type is named without a modifier, as format_type(oid, -1) names it:
-- bpchar and "bit", where format_type(oid, NULL) says character and bit,
-- which mean char(1) and bit(1), and the copy's cast cut a char(5) target
-- to its first character (cat and camel one class).
CREATE FUNCTION easeml._snapshot_type(t oid, kind text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN kind = 'categorical' OR b.oid IS NULL
					 OR b.oid OPERATOR(pg_catalog.>=) 16384::oid THEN 'text'
				ELSE pg_catalog.format_type(b.oid, -1) END
	  FROM (SELECT easeml._base_type(t) AS oid) b
$$;

-- The statements that take snapshot `version` of a task (run by
-- src/sql/sql_snapshot.c, each under its identity), and the query that checks the
-- target on what runs will read: the copy, or with version 0 the source.
-- Feature columns are copied in the task's order; categorical ones as text,
-- the others (and the target) as their base type if it is built in, else
-- as text (easeml._snapshot_type).
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
		typ := easeml._snapshot_type(a.atttypid, kinds[j]);
		defs := defs || format('%I %s', cols[j], typ);
		exprs := exprs || format('%I::%s', cols[j], typ);
	END LOOP;
	create_sql := format('CREATE TABLE easeml_snapshots.%I (%s)', snap, array_to_string(defs, ', '));
	-- [access] the tenant reads it only while it may read what it copied
	grant_sql := format('GRANT SELECT ON easeml_snapshots.%I TO %I; '
						'ALTER TABLE easeml_snapshots.%I ENABLE ROW LEVEL SECURITY; '
						'CREATE POLICY tenant_access ON easeml_snapshots.%I FOR SELECT '
						'USING ((SELECT easeml._snapshot_readable(%s, %L)))',
						snap, t.tenant, snap, snap, task_id, easeml._access_fingerprint(t.source, t.tenant));
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

-- [owner] Snapshot tables easeml let go of but could not drop at once: a
-- lock on the table, or on anything built on it, was held by another
-- session (easeml._try_drop_snapshot).  The scheduler drops them later
-- (easeml._drop_stale_snapshots, src/worker/retention.c).  Recorded by
-- name rather than found by it: a table of a task not restored yet (a
-- pg_restore under way commits the tables before easeml.tasks' rows) is
-- not one to drop.
CREATE TABLE easeml.snapshot_drops (
	relname		name PRIMARY KEY,
	since		timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE easeml.snapshot_drops IS
	'internal: snapshot tables to drop once nobody holds a lock on them (the scheduler retries)';
-- dumped: pg_dump keeps the tables, and a restore drops them again
SELECT pg_catalog.pg_extension_config_dump('easeml.snapshot_drops', '');

-- [owner] Drop a snapshot table if it can be done within a moment (true);
-- else leave it to the scheduler (false).  Any role can hold a lock on a
-- snapshot table or on a view over it: creating a view needs no privilege
-- on what it reads, and a PREPARE of a query locks the relations it names
-- before any privilege is checked (easeml_snapshots is usable by PUBLIC,
-- docs/security.md).  A DROP that waited would hold its tenant's refresh,
-- alter_task and drop_task, or an administrator removing the tenant, for
-- as long as that role liked.  With CASCADE: what anyone built on a
-- snapshot goes with it.  A table left is readable by its owner alone
-- from then on (REVOKE takes no lock on it) and recorded in
-- easeml.snapshot_drops.  Notices stay quiet: a cascade's would name
-- another tenant's view.
CREATE FUNCTION easeml._try_drop_snapshot(rel name)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
SET client_min_messages = warning
AS $$
DECLARE
	grantee		text;
BEGIN
	BEGIN
		EXECUTE format('DROP TABLE IF EXISTS easeml_snapshots.%I CASCADE', rel);
		RETURN true;
	EXCEPTION WHEN lock_not_available THEN
		FOR grantee IN
			SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
								 ELSE quote_ident(pg_get_userbyid(a.grantee)) END
			  FROM pg_class c, aclexplode(c.relacl) a
			 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND c.relname = rel
			   AND a.grantee <> c.relowner
		LOOP
			EXECUTE format('REVOKE ALL ON easeml_snapshots.%I FROM %s', rel, grantee);
		END LOOP;
		INSERT INTO easeml.snapshot_drops (relname) VALUES (rel) ON CONFLICT DO NOTHING;
		RETURN false;
	END;
END;
$$;

-- [owner] The scheduler's retry of easeml.snapshot_drops
-- (src/worker/retention.c): at most `batch` tables dropped, in random
-- order, up to the first that is still locked (each waits 100 ms at most,
-- so a role that keeps some locked delays the scheduler's loop by that
-- much, and the others still go).  A recorded table that is gone, or that
-- is the current version of a task after all, is forgotten.  Returns how
-- many were dropped and how many are left.
CREATE FUNCTION easeml._drop_stale_snapshots(batch int, OUT dropped int, OUT remaining int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	blocked		boolean := false;
BEGIN
	dropped := 0;
	remaining := 0;
	FOR r IN
		SELECT d.relname,
			   to_regclass(format('easeml_snapshots.%I', d.relname)) IS NULL
			   OR EXISTS (SELECT 1 FROM easeml.tasks t
						   WHERE t.snapshot_version IS NOT NULL
							 AND easeml._snapshot_name(t.id, t.snapshot_version) = d.relname) AS forget
		  FROM easeml.snapshot_drops d
		 ORDER BY random()
	LOOP
		IF r.forget THEN
			DELETE FROM easeml.snapshot_drops d WHERE d.relname = r.relname;
		ELSIF blocked OR dropped >= batch THEN
			remaining := remaining + 1;
		ELSIF easeml._try_drop_snapshot(r.relname) THEN
			DELETE FROM easeml.snapshot_drops d WHERE d.relname = r.relname;
			dropped := dropped + 1;
		ELSE
			blocked := true;
			remaining := remaining + 1;
		END IF;
	END LOOP;
END;
$$;
COMMENT ON FUNCTION easeml._drop_stale_snapshots(int) IS
	'internal: drop snapshot tables left to the scheduler, up to the first still locked (scheduler only)';
REVOKE ALL ON FUNCTION easeml._try_drop_snapshot(name), easeml._drop_stale_snapshots(int) FROM PUBLIC;

-- Make snapshot `version` (0: none, the live source) current, with the
-- usable rows and classes found on it: runs of older versions still queued
-- move to it, running ones are cancelled (their result would be stale),
-- older tables are dropped (now, or by the scheduler when another session
-- holds a lock on them: easeml._try_drop_snapshot), and a completed or
-- failed task is scheduled again.
CREATE OR REPLACE FUNCTION easeml._snapshot_switch(task_id bigint, version int, n bigint, classes int)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rel			text;
BEGIN
	IF version > 0 THEN
		UPDATE easeml.runs SET snapshot_version = version
		 WHERE runs.task_id = _snapshot_switch.task_id AND status = 'queued';
		UPDATE easeml.runs SET cancel_requested = true
		 WHERE runs.task_id = _snapshot_switch.task_id AND status = 'running'
		   AND snapshot_version IS DISTINCT FROM version AND NOT cancel_requested;
		FOR rel IN
			SELECT c.relname FROM pg_class c
			 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND c.relkind = 'r'
			   AND c.relname LIKE format('task\_%s\_v%%', task_id)
			   AND c.relname <> easeml._snapshot_name(task_id, version)
			   AND NOT EXISTS (SELECT 1 FROM easeml.snapshot_drops d WHERE d.relname = c.relname)
		LOOP
			-- [owner] never waits on another session's lock: no view
			-- (anyone's) nor lock keeps an old version, or the refresh,
			-- from going; one already left to the scheduler is left to it
			PERFORM easeml._try_drop_snapshot(rel);
		END LOOP;
	END IF;
	UPDATE easeml.tasks t
	   SET snapshot_version = CASE WHEN version > 0 THEN version ELSE t.snapshot_version END,
		   n_rows = n,
		   n_classes = CASE WHEN t.kind = 'classification' THEN classes END,
		   measured_at = clock_timestamp(),
		   status = CASE WHEN t.status IN ('completed', 'failed') THEN 'active' ELSE t.status END,
		   status_reason = CASE WHEN t.status IN ('completed', 'failed') THEN NULL ELSE t.status_reason END
	 WHERE t.id = task_id;
END;
$$;

-- Snapshots go with their task (drop_task, a tenant removed, DELETE).
-- [owner] Through easeml._try_drop_snapshot: any role may make a view over
-- a snapshot table (creating a view needs no privilege on what it reads;
-- easeml_snapshots is usable by PUBLIC) or hold a lock on one, and neither
-- keeps the task from being dropped, by its tenant or an administrator:
-- what is built on a snapshot goes with it, and a table locked now is
-- dropped by the scheduler later (docs/data.md, section 6).
CREATE OR REPLACE FUNCTION easeml._drop_snapshots()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rel			text;
BEGIN
	IF TG_RELID <> 'easeml.tasks'::regclass THEN
		RAISE EXCEPTION 'easeml._drop_snapshots() is a trigger of easeml.tasks only'
			USING ERRCODE = 'triggered_action_exception';
	END IF;
	FOR rel IN
		SELECT c.relname FROM pg_class c
		 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND c.relkind = 'r'
		   AND c.relname LIKE format('task\_%s\_v%%', OLD.id)
		   AND NOT EXISTS (SELECT 1 FROM easeml.snapshot_drops d WHERE d.relname = c.relname)
	LOOP
		PERFORM easeml._try_drop_snapshot(rel);
	END LOOP;
	-- [locks] and the task's deployment lock row
	DELETE FROM easeml.deployment_locks l WHERE l.task_id = OLD.id;
	RETURN NULL;
END;
$$;

-- [locks] A row per task whose deployments have changed, locked by
-- easeml._lock_deployments.  A row of a table no tenant has any privilege
-- on, not an advisory lock: any role may take any advisory lock, and a
-- tenant that held another tenant's key (task ids are sequential) kept
-- that tenant's finished runs from being recorded (issue 22 review).  No
-- foreign key (see deployments); the rows go with their task
-- (easeml._drop_snapshots).
CREATE TABLE easeml.deployment_locks (
	task_id		bigint PRIMARY KEY
);
COMMENT ON TABLE easeml.deployment_locks IS
	'internal: a row per task, locked while its deployments change';

-- One task's deployments change one at a time: deploy, rollback and the
-- automatic deployment of a finished run wait for each other here, on the
-- task's row of easeml.deployment_locks (made the first time).
CREATE OR REPLACE FUNCTION easeml._lock_deployments(task_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	INSERT INTO easeml.deployment_locks VALUES (_lock_deployments.task_id)
	ON CONFLICT ON CONSTRAINT deployment_locks_pkey DO NOTHING;
	PERFORM FROM easeml.deployment_locks l WHERE l.task_id = _lock_deployments.task_id FOR UPDATE;
END;
$$;

-- [locks] Lock the caller's own row of easeml.tenants until the transaction
-- ends (src/sql/sql_tenant.c), as the superuser (a tenant has no UPDATE on it)
-- and only ever the caller's own.  Not an advisory lock: any role may take
-- any advisory lock, and a tenant that held another tenant's key blocked
-- its declarations (issue 22 review).
CREATE FUNCTION easeml._lock_own_tenant()
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_lock_own_tenant'
LANGUAGE C VOLATILE
-- [identity] it switches identity (src/module/identity.c)
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._lock_own_tenant() IS
	'internal: lock the caller''s own row of easeml.tenants until the transaction ends';

-- [quota] A tenant's limits (easeml.set_tenant_limits): how many tasks it
-- may have and how many usable rows a task's source may hold.  It runs
-- after tasks_validate (trigger names sort), which has measured n_rows by
-- then; easeml.refresh measures again and meets it through the UPDATE of
-- n_rows, so a source that grew past the limit fails the refresh and the
-- task keeps the snapshot it had.
CREATE OR REPLACE FUNCTION easeml._check_tenant_limits()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	lim			record;
	n			bigint;
BEGIN
	-- a superuser restoring a dump brings rows that were within limits
	IF TG_OP = 'INSERT' AND NEW.created_at < now() AND easeml._is_admin() THEN
		RETURN NEW;
	END IF;
	SELECT max_tasks, max_rows INTO lim FROM easeml.tenants WHERE name = NEW.tenant;
	IF NOT FOUND THEN
		RETURN NEW;
	END IF;
	IF TG_OP = 'INSERT' AND lim.max_tasks IS NOT NULL THEN
		-- one declaration of a tenant at a time, so two cannot both pass:
		-- [locks] its own row of easeml.tenants (tasks_validate checked
		-- that the tenant declares itself)
		PERFORM easeml._lock_own_tenant();
		SELECT count(*) INTO n FROM easeml.tasks WHERE tenant = NEW.tenant;
		IF n >= lim.max_tasks THEN
			RAISE EXCEPTION 'tenant "%" may have at most % task(s) and has %', NEW.tenant, lim.max_tasks, n
				USING ERRCODE = 'configuration_limit_exceeded',
					  HINT = 'Drop a task with SELECT easeml.drop_task(name), or ask an administrator to raise max_tasks with easeml.set_tenant_limits.';
		END IF;
	END IF;
	IF lim.max_rows IS NOT NULL AND NEW.n_rows > lim.max_rows THEN
		RAISE EXCEPTION 'the source of task "%" has % usable rows, more than the % tenant "%" may use per task',
			NEW.name, NEW.n_rows, lim.max_rows, NEW.tenant
			USING ERRCODE = 'configuration_limit_exceeded',
				  HINT = 'Declare the task over a view that selects fewer rows, or ask an administrator to raise max_rows with easeml.set_tenant_limits.';
	END IF;
	RETURN NEW;
END;
$$;

-- [binding] tenants are bound to their role's object id
ALTER TABLE easeml.tenants ADD COLUMN role_oid oid;
COMMENT ON COLUMN easeml.tenants.role_oid IS
	'the role registered under name: a role made later with the same name is not the tenant';
UPDATE easeml.tenants t SET role_oid = r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = t.name;
-- [binding] A tenant is the role registered under its name, not any role
-- that has the name later (issue 22 review): DROP ROLE lab_a; CREATE ROLE
-- lab_a would otherwise make the new role the owner of the old one's
-- tasks, runs, artifacts and deployments.  Each row records its role's
-- object id when it is inserted (easeml.add_tenant, or a superuser's
-- restore, which binds the restored tenants to the roles of this cluster).
CREATE FUNCTION easeml._bind_tenant()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	NEW.role_oid := (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = NEW.name);
	RETURN NEW;
END;
$$;

CREATE TRIGGER tenants_bind
	BEFORE INSERT ON easeml.tenants
	FOR EACH ROW EXECUTE FUNCTION easeml._bind_tenant();
REVOKE ALL ON FUNCTION easeml._bind_tenant() FROM PUBLIC;

-- [binding] The current role's name when it is the role registered as
-- that tenant, else NULL: the row-level security of every table with a
-- tenant column compares with it (once per query), so a role that only
-- has a registered tenant's name sees none of its rows.
CREATE FUNCTION easeml._bound_tenant()
RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.name FROM easeml.tenants t
	 WHERE t.name OPERATOR(pg_catalog.=) CURRENT_USER
	   AND t.role_oid OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
											   WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
$$;


ALTER POLICY tenants_self ON easeml.tenants
	USING (name = current_user
		   AND role_oid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user));
ALTER POLICY tasks_own ON easeml.tasks
	USING (tenant = (SELECT easeml._bound_tenant()))
	WITH CHECK (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY runs_own ON easeml.runs
	USING (tenant = (SELECT easeml._bound_tenant()))
	WITH CHECK (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY run_events_own ON easeml.run_events USING (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY artifacts_own ON easeml.artifacts USING (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY decisions_own ON easeml.decisions USING (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY decision_candidates_own ON easeml.decision_candidates USING (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY deployments_own ON easeml.deployments USING (tenant = (SELECT easeml._bound_tenant()));
ALTER POLICY run_progress_own ON easeml.run_progress USING (tenant = (SELECT easeml._bound_tenant()));

CREATE OR REPLACE FUNCTION easeml.add_tenant(role name, max_parallel int DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
BEGIN
	-- [trust] a tenant is an ordinary login role that row-level security binds
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a login role: SELECT easeml.add_tenant(''lab_a'');';
	END IF;
	SELECT rolsuper, rolbypassrls, rolcanlogin INTO r FROM pg_roles WHERE rolname = role;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'role "%" does not exist', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Create it first: CREATE ROLE %I LOGIN;', role);
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

DROP FUNCTION easeml._access_fingerprint(oid);
