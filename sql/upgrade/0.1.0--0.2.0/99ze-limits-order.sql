-- [house] tenant limits: checked by easeml._validate_task once it has
-- measured n_rows, no longer by a second BEFORE trigger that relied on
-- trigger names sorting after tasks_validate.  sql/easeml.sql holds the same.
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

CREATE OR REPLACE FUNCTION easeml._validate_task()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	relname		text;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		IF NEW.id <> OLD.id OR NEW.tenant <> OLD.tenant OR NEW.name <> OLD.name
			OR NEW.source <> OLD.source OR NEW.target <> OLD.target
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
