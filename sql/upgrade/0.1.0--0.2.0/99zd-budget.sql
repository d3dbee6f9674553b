-- [budget] sql/easeml.sql makes the same changes (the tenants column in its
-- CREATE TABLE, the rest in its last block and in place)
-- ===========================================================================
-- [budget] A time budget per task (docs/sql.md, docs/scheduler.md 7.8)
--
-- tasks.budget_seconds bounds the wall seconds of a task's search: the
-- selection runs on its current snapshot version, finished ones by their
-- recorded seconds, running ones by the time since they started
-- (easeml._spent_seconds).  Once that reaches the budget the scheduler
-- proposes no run for the task; runs in flight finish (none is cancelled)
-- and the task becomes completed with the reason.  NULL: no budget.  A
-- task declared without one gets its tenant's default_budget_seconds
-- (easeml.set_tenant_budget); easeml.alter_task sets a budget too.
-- Refits on every row are no part of the search: they do not count and
-- still run for a completed task.
-- ===========================================================================

-- [budget] the time budget a tenant's tasks get when declared without one
ALTER TABLE easeml.tenants
	ADD COLUMN default_budget_seconds float8
		CONSTRAINT tenants_default_budget_seconds_check
		CHECK (default_budget_seconds > 0 AND default_budget_seconds < 'Infinity');

-- [budget] the task's time budget in seconds; NULL: none
ALTER TABLE easeml.tasks
	ADD COLUMN budget_seconds float8
		CONSTRAINT tasks_budget_seconds_check
		CHECK (budget_seconds > 0 AND budget_seconds < 'Infinity');
COMMENT ON COLUMN easeml.tasks.budget_seconds IS
	'time budget of the task''s search in wall seconds of its selection runs on the current snapshot (easeml._spent_seconds); NULL: none';
GRANT INSERT (budget_seconds), UPDATE (budget_seconds) ON easeml.tasks TO PUBLIC;
COMMENT ON COLUMN easeml.tenants.default_budget_seconds IS
	'the time budget of a task this tenant declares without one (easeml.set_tenant_budget); NULL: none';

-- [budget] A time budget as given, checked: NULL, or a positive and finite
-- number of seconds (what names it in the message).  Returns it.  The
-- declaration, an UPDATE of the column, easeml.alter_task and
-- easeml.set_tenant_budget call it.
CREATE FUNCTION easeml._check_budget(seconds float8, what text)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- NaN compares above every number in PostgreSQL: the upper bound refuses it
	IF seconds IS NOT NULL AND NOT (seconds > 0 AND seconds < 'Infinity'::float8) THEN
		RAISE EXCEPTION '% must be a positive, finite number of seconds or NULL, not %', what, seconds
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example 600 gives the search ten minutes of run time; NULL means no budget: the search goes on until every candidate has been tried or max_runs is reached.';
	END IF;
	RETURN seconds;
END;
$$;

-- [budget] The wall seconds a task's search has spent as of at: its
-- selection runs (not the refits on every row) on the given snapshot
-- version, those that ended by their recorded seconds, those running by
-- the time since they started; runs that never started count 0.  The
-- scheduler (src/worker/catalog.c, with now() of its load) and task_overview
-- read the same function.
CREATE FUNCTION easeml._spent_seconds(task_id bigint, snapshot_version int, at timestamptz)
RETURNS float8
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(sum(CASE WHEN r.status = 'running'
							 THEN greatest(extract(epoch FROM _spent_seconds.at - r.started_at)::float8, 0)
							 ELSE greatest(coalesce(r.seconds, 0), 0) END), 0)
	  FROM easeml.runs r
	 WHERE r.task_id = _spent_seconds.task_id AND r.purpose = 'select'
	   AND r.started_at IS NOT NULL
	   AND r.snapshot_version IS NOT DISTINCT FROM _spent_seconds.snapshot_version
$$;

-- [budget] An admin sets the time budget a tenant's tasks get when they
-- are declared without one (NULL: none).  A default, not a limit: the
-- tenant may declare or set another budget, or none; tasks declared
-- before keep theirs.
CREATE FUNCTION easeml.set_tenant_budget(role name, default_budget_seconds float8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a tenant: SELECT easeml.set_tenant_budget(''lab_a'', 600);';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.tenants WHERE name = role) THEN
		RAISE EXCEPTION 'role "%" is not an easeml tenant', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Register it first: SELECT easeml.add_tenant(%L);', role);
	END IF;
	PERFORM easeml._check_budget(default_budget_seconds, 'default_budget_seconds');
	UPDATE easeml.tenants t
	   SET default_budget_seconds = set_tenant_budget.default_budget_seconds
	 WHERE t.name = role;
END;
$$;
REVOKE ALL ON FUNCTION easeml.set_tenant_budget(name, float8) FROM PUBLIC;
COMMENT ON FUNCTION easeml.set_tenant_budget(name, float8) IS
	'set the time budget in seconds a tenant''s tasks get when declared without one (admin only; NULL: none); existing tasks keep theirs';

-- One row per task; [refit] a refit is no observation of model selection:
-- the counts leave it out; [budget] the time budget, the seconds spent on
-- the current snapshot (easeml._spent_seconds, as the scheduler counts
-- them) and what is left.
CREATE OR REPLACE VIEW easeml.task_overview WITH (security_invoker = true) AS
SELECT t.id AS task_id,
	   t.tenant,
	   t.name AS task,
	   t.kind,
	   t.status,
	   t.n_rows,
	   cardinality(t.features) AS n_features,
	   t.n_classes,
	   count(r.id) FILTER (WHERE r.status = 'succeeded')::int AS succeeded,
	   count(r.id) FILTER (WHERE r.status = 'failed')::int AS failed,
	   count(r.id) FILTER (WHERE r.status IN ('queued', 'running'))::int AS active,
	   max(r.score) FILTER (WHERE r.status = 'succeeded'
							AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version) AS best_score,
	   (SELECT l.model FROM easeml.leaderboard l
		 WHERE l.task_id = t.id AND l.rank = 1 AND NOT l.stale) AS best_model,
	   t.status_reason,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   t.folds,
	   t.snapshot_version,
	   v.validation_rows,
	   easeml._resolvable_difference(v.validation_rows) AS resolvable_difference,
	   easeml._resolvable_difference(v.validation_rows) > 0.05 AS small_validation,
	   t.budget_seconds,
	   b.spent_seconds,
	   CASE WHEN t.budget_seconds IS NOT NULL
			THEN greatest(t.budget_seconds - b.spent_seconds, 0) END AS remaining_seconds
  FROM easeml.tasks t
  LEFT JOIN easeml.runs r ON r.task_id = t.id AND r.purpose = 'select'
 CROSS JOIN LATERAL (SELECT easeml._validation_rows(t.n_rows, t.val_fraction, t.folds)
						 AS validation_rows) v
 CROSS JOIN LATERAL (SELECT easeml._spent_seconds(t.id, t.snapshot_version, now())
						 AS spent_seconds) b
 GROUP BY t.id, v.validation_rows, b.spent_seconds;
COMMENT ON VIEW easeml.task_overview IS
	'one row per task: run counts, the best score and the leaderboard''s first model on its current snapshot, how finely its validation rows tell scores apart, and its time budget, the seconds spent and left';

-- [budget] the declaration gives a task without a budget its tenant's
-- default and checks a budget given; an UPDATE checks a new one
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

-- [budget] easeml.alter_task(..., budget_seconds): checked as the caller
-- (easeml._altered_task), written by easeml._apply_alter
DROP FUNCTION easeml.alter_task(text, text, text[], int, boolean);
DROP FUNCTION easeml._altered_task(bigint, text, text[], int, boolean);

CREATE FUNCTION easeml._altered_task(task_id bigint, metric text, features text[], folds int,
									 auto_deploy boolean, budget_seconds float8)
RETURNS easeml.tasks
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	old			easeml.tasks;
	t			easeml.tasks;
BEGIN
	SELECT * INTO old FROM easeml.tasks k
	 WHERE k.id = _altered_task.task_id AND k.tenant = CURRENT_USER;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task % does not exist', _altered_task.task_id
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	t := old;
	IF _altered_task.folds IS NOT NULL THEN
		IF _altered_task.folds < 1 OR _altered_task.folds > 10 THEN
			RAISE EXCEPTION 'folds must be between 2 and 10, or 1 for one validation split, not %',
				_altered_task.folds
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'folds => 1 scores every run on one validation split of val_fraction; leave folds out to keep it as it is.';
		END IF;
		t.folds := nullif(_altered_task.folds, 1);
	END IF;
	t.features := coalesce(_altered_task.features, old.features);
	t.auto_deploy := coalesce(_altered_task.auto_deploy, old.auto_deploy);
	t.metric := coalesce(_altered_task.metric, old.metric);
	t.budget_seconds := coalesce(easeml._check_budget(_altered_task.budget_seconds, 'budget_seconds'),
								 old.budget_seconds);
	IF (t.features, t.folds) IS DISTINCT FROM (old.features, old.folds) THEN
		IF NOT old.snapshot THEN
			RAISE EXCEPTION 'the features and folds of task "%" cannot change: it has no snapshot', old.name
				USING ERRCODE = 'feature_not_supported',
					  HINT = 'The runs of a task without snapshot cannot be told apart by the data they read: declare a new task with the new features or folds.';
		END IF;
		-- the declaration's checks, on the source as it is now
		t := easeml._declare_data(t, easeml._check_source_target(t));
		t.snapshot_version := old.snapshot_version;
		IF _altered_task.metric IS NULL THEN
			t.metric := old.metric;
		END IF;
	ELSIF _altered_task.metric IS NOT NULL THEN
		t.metric := easeml._check_data_options(t);
	END IF;
	RETURN t;
END;
$$;

CREATE OR REPLACE FUNCTION easeml._apply_alter(caller name, t easeml.tasks)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	old			easeml.tasks;
	version		int := 0;
	new_metric	text;
	best		bigint;
BEGIN
	SELECT * INTO old FROM easeml.tasks k
	 WHERE k.id = t.id AND k.tenant = _apply_alter.caller FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task % does not exist for tenant "%"', t.id, caller
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	IF (t.features, t.folds) IS DISTINCT FROM (old.features, old.folds) THEN
		version := coalesce(old.snapshot_version, 0) + 1;
	END IF;
	UPDATE easeml.tasks k
	   SET metric = t.metric,
		   features = t.features,
		   feature_types = t.feature_types,
		   left_out = t.left_out,
		   folds = t.folds,
		   auto_deploy = t.auto_deploy,
		   budget_seconds = t.budget_seconds,
		   features_version = CASE WHEN t.features IS DISTINCT FROM old.features THEN version
								   ELSE k.features_version END
	 WHERE k.id = t.id;

	IF t.features IS DISTINCT FROM old.features THEN
		-- the deployed run read other columns: predict must not apply it,
		-- nor a refit of it on every row
		PERFORM easeml._lock_deployments(t.id);
		UPDATE easeml.deployments d SET active = false WHERE d.task_id = t.id AND d.active;
		PERFORM easeml._cancel_refits(t.id, NULL, NULL);
	END IF;

	new_metric := coalesce(t.metric, (easeml._metrics(t.kind))[1]);
	IF new_metric IS DISTINCT FROM coalesce(old.metric, (easeml._metrics(old.kind))[1]) THEN
		-- a refit has no selection score (its rows trained it)
		UPDATE easeml.runs r SET score = easeml._run_quality(r.metrics, new_metric)
		 WHERE r.task_id = t.id AND r.status = 'succeeded' AND r.purpose = 'select';
		IF t.auto_deploy THEN
			PERFORM easeml._lock_deployments(t.id);
			best := easeml._best_deployable(t.id);
			IF best IS NOT NULL
				AND NOT EXISTS (SELECT 1 FROM easeml.deployments d
								 WHERE d.task_id = t.id AND d.active AND d.run_id = best) THEN
				PERFORM easeml._activate(t.id, best, 'auto', caller);
			END IF;
		END IF;
	END IF;
	RETURN version;
END;
$$;

CREATE FUNCTION easeml.alter_task(task text, metric text DEFAULT NULL, features text[] DEFAULT NULL,
								  folds int DEFAULT NULL, auto_deploy boolean DEFAULT NULL,
								  budget_seconds float8 DEFAULT NULL)
RETURNS easeml.tasks
AS 'MODULE_PATHNAME', 'easeml_alter_task'
LANGUAGE C VOLATILE
-- [identity] it runs statements as a superuser and as the caller
-- (src/module/identity.c): never with the caller's search_path
SET search_path = pg_catalog, pg_temp
-- new features or folds profile and copy the source, as refresh does
SET jit = off;
COMMENT ON FUNCTION easeml.alter_task(text, text, text[], int, boolean, float8) IS
	'change the metric, features, folds, auto_deploy or time budget of one of your tasks; returns its row';

-- [budget] end
