-- [quota] per-tenant limits: how many tasks a tenant may have, how many
-- usable rows a task's source may hold (easeml.set_tenant_limits)
ALTER TABLE easeml.tenants
	ADD COLUMN max_tasks int CHECK (max_tasks IS NULL OR max_tasks > 0),
	ADD COLUMN max_rows bigint CHECK (max_rows IS NULL OR max_rows > 0);

-- [quota] A tenant's limits (easeml.set_tenant_limits): how many tasks it
-- may have and how many usable rows a task's source may hold.  It runs
-- after tasks_validate (trigger names sort), which has measured n_rows by
-- then; easeml.refresh measures again and meets it through the UPDATE of
-- n_rows, so a source that grew past the limit fails the refresh and the
-- task keeps the snapshot it had.
CREATE FUNCTION easeml._check_tenant_limits()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
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
		-- one declaration of a tenant at a time, so two cannot both pass
		PERFORM pg_advisory_xact_lock(hashtext('easeml.tenant_limits'), hashtext(NEW.tenant));
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

CREATE TRIGGER tasks_validate_limits
	BEFORE INSERT OR UPDATE OF n_rows ON easeml.tasks
	FOR EACH ROW EXECUTE FUNCTION easeml._check_tenant_limits();

CREATE FUNCTION easeml.set_tenant_limits(role name, max_tasks int DEFAULT NULL,
										 max_rows bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a tenant: SELECT easeml.set_tenant_limits(''lab_a'', max_tasks => 10);';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.tenants WHERE name = role) THEN
		RAISE EXCEPTION 'role "%" is not an easeml tenant', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Register it first: SELECT easeml.add_tenant(%L);', role);
	END IF;
	IF max_tasks < 1 OR max_rows < 1 THEN
		RAISE EXCEPTION 'max_tasks and max_rows must be positive or NULL'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'NULL means no limit.';
	END IF;
	UPDATE easeml.tenants t
	   SET max_tasks = set_tenant_limits.max_tasks,
		   max_rows = set_tenant_limits.max_rows
	 WHERE t.name = role;
END;
$$;
COMMENT ON FUNCTION easeml.set_tenant_limits(name, int, bigint) IS
	'limit how many tasks a tenant may have and how many usable rows a task''s source may hold (admin only; NULL: no limit); existing tasks are kept';
REVOKE ALL ON FUNCTION easeml.set_tenant_limits(name, int, bigint) FROM PUBLIC;
