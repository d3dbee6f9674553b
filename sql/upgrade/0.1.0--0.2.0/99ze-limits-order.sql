-- [house] tenant limits: checked by easeml._validate_task once it has
-- measured n_rows, no longer by a second BEFORE trigger that relied on
-- trigger names sorting after tasks_validate (99zd-budget.sql restates
-- _validate_task with the call).  sql/easeml.sql holds the same.
DROP TRIGGER tasks_validate_limits ON easeml.tasks;
DROP FUNCTION easeml._check_tenant_limits();

-- [quota] A tenant's limits (easeml.set_tenant_limits): how many tasks it
-- may have and how many usable rows a task's source may hold.
-- easeml._validate_task calls it once it has measured n_rows: at a
-- declaration, and when easeml.refresh measures again, so a source that
-- grew past the limit fails the refresh and the task keeps the snapshot it
-- had.
CREATE FUNCTION easeml._check_tenant_limits(tenant name, task text, n_rows bigint,
	declaring boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	lim			record;
	n			bigint;
BEGIN
	SELECT t.max_tasks, t.max_rows INTO lim FROM easeml.tenants t
	 WHERE t.name = _check_tenant_limits.tenant;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	IF declaring AND lim.max_tasks IS NOT NULL THEN
		-- one declaration of a tenant at a time, so two cannot both pass:
		-- [locks] its own row of easeml.tenants (_validate_task checked
		-- that the tenant declares itself)
		PERFORM easeml._lock_own_tenant();
		SELECT count(*) INTO n FROM easeml.tasks t WHERE t.tenant = _check_tenant_limits.tenant;
		IF n >= lim.max_tasks THEN
			RAISE EXCEPTION 'tenant "%" may have at most % task(s) and has %', tenant, lim.max_tasks, n
				USING ERRCODE = 'configuration_limit_exceeded',
					  HINT = 'Drop a task with SELECT easeml.drop_task(name), or ask an administrator to raise max_tasks with easeml.set_tenant_limits.';
		END IF;
	END IF;
	IF lim.max_rows IS NOT NULL AND _check_tenant_limits.n_rows > lim.max_rows THEN
		RAISE EXCEPTION 'the source of task "%" has % usable rows, more than the % tenant "%" may use per task',
			task, _check_tenant_limits.n_rows, lim.max_rows, tenant
			USING ERRCODE = 'configuration_limit_exceeded',
				  HINT = 'Declare the task over a view that selects fewer rows, or ask an administrator to raise max_rows with easeml.set_tenant_limits.';
	END IF;
END;
$$;
COMMENT ON FUNCTION easeml._check_tenant_limits(name, text, bigint, boolean) IS
	'internal: raise unless a task of this many rows is within its tenant''s limits (max_tasks when declaring, max_rows)';
