-- ---------------------------------------------------------------------------
-- [trust] reliability and security (issue 8); sql/easeml.sql holds the same
-- changes for a fresh install, in blocks marked [trust].
-- ---------------------------------------------------------------------------

-- the trainer's session registers itself so that the scheduler can end it
-- with its trainer (src/sql/sql_trainer.c)
CREATE FUNCTION easeml.trainer_attach(run_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_trainer_attach'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION easeml.trainer_attach(bigint) IS
	'internal: record this session as the database session of the run''s trainer, which the scheduler ends when the trainer ends';
REVOKE ALL ON FUNCTION easeml.trainer_attach(bigint) FROM PUBLIC;

-- Model rows: cost factors outside [1e-6, 1e6] (NaN and Infinity among
-- them) and empty kinds are refused, and
-- every row is checked by the trainer when it is written.  Rows a 0.1.0
-- catalog holds that break the new rules are disabled first, with a warning.
DO $$
DECLARE
	m			record;
BEGIN
	FOR m IN SELECT id, name FROM easeml.models
			  WHERE NOT (cost_factor >= 1e-6 AND cost_factor <= 1e6) OR cardinality(kinds) = 0
	LOOP
		RAISE WARNING 'easeml: model "%" is disabled: its cost_factor or kinds are invalid', m.name;
		UPDATE easeml.models
		   SET enabled = false,
			   cost_factor = CASE WHEN cost_factor >= 1e-6 AND cost_factor <= 1e6 THEN cost_factor ELSE 1 END,
			   kinds = CASE WHEN cardinality(kinds) > 0 THEN kinds ELSE '{classification}' END
		 WHERE id = m.id;
	END LOOP;
END;
$$;
ALTER TABLE easeml.models
	DROP CONSTRAINT models_kinds_check,
	ADD CONSTRAINT models_kinds_check
		CHECK (cardinality(kinds) > 0 AND kinds <@ ARRAY['classification', 'regression']),
	DROP CONSTRAINT models_cost_factor_check,
	ADD CONSTRAINT models_cost_factor_check
		CHECK (cost_factor >= 1e-6 AND cost_factor <= 1e6);

CREATE FUNCTION easeml._check_model(family text, params jsonb, kinds text[],
									needs_image boolean)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_check_model'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION easeml._check_model(text, jsonb, text[], boolean) IS
	'internal: NULL when the trainer can train this model, else its reason';
REVOKE ALL ON FUNCTION easeml._check_model(text, jsonb, text[], boolean) FROM PUBLIC;

-- custom models of 0.1.0 the trainer cannot train are disabled
DO $$
DECLARE
	m			record;
	reason		text;
BEGIN
	FOR m IN SELECT * FROM easeml.models WHERE NOT builtin AND enabled ORDER BY id LOOP
		reason := easeml._check_model(m.family, m.params, m.kinds, m.needs_image);
		IF reason IS NOT NULL THEN
			RAISE WARNING 'easeml: model "%" is disabled: %', m.name, reason;
			UPDATE easeml.models SET enabled = false WHERE id = m.id;
		END IF;
	END LOOP;
END;
$$;

CREATE FUNCTION easeml._validate_model()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	reason		text;
BEGIN
	IF NEW.name IS NULL OR NEW.name !~ '^[a-z0-9_.-]{1,63}$' THEN
		RAISE EXCEPTION 'invalid model name "%"', NEW.name
			USING ERRCODE = 'invalid_name',
				  HINT = 'Use 1 to 63 lower-case letters, digits, "_", "." or "-".';
	END IF;
	IF TG_OP = 'INSERT' AND EXISTS (SELECT 1 FROM easeml.models WHERE name = NEW.name) THEN
		RAISE EXCEPTION 'model "%" already exists', NEW.name
			USING ERRCODE = 'unique_violation',
				  HINT = 'Choose another name, or UPDATE the existing model.';
	END IF;
	IF NEW.family IS NULL THEN
		RAISE EXCEPTION 'model "%" has no family', NEW.name
			USING ERRCODE = 'not_null_violation',
				  HINT = 'easeml-trainer --list-families lists the families.';
	END IF;
	IF NEW.params IS NULL OR jsonb_typeof(NEW.params) <> 'object' THEN
		RAISE EXCEPTION 'params of model "%" must be a JSON object, not %', NEW.name,
			coalesce(NEW.params::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example params => ''{"k": 5}''; ''{}'' takes the family''s defaults.';
	END IF;
	IF NEW.kinds IS NULL OR cardinality(NEW.kinds) = 0
		OR NOT NEW.kinds <@ ARRAY['classification', 'regression'] THEN
		RAISE EXCEPTION 'kinds of model "%" must list classification, regression or both, not %',
			NEW.name, coalesce(NEW.kinds::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example kinds => ''{classification,regression}''.';
	END IF;
	-- bounded, so that estimates (cost_factor x a per-unit time x cells)
	-- stay finite and comparable: 1e-06 and 1e+06 are twelve orders of
	-- magnitude apart, far beyond any two real models
	IF NEW.cost_factor IS NULL OR NOT (NEW.cost_factor >= 1e-6 AND NEW.cost_factor <= 1e6) THEN
		RAISE EXCEPTION 'cost_factor of model "%" must be between 1e-06 and 1e+06, not %',
			NEW.name, coalesce(NEW.cost_factor::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'cost_factor is the training time relative to other models, e.g. 1 for a softmax regression.';
	END IF;
	IF TG_OP = 'INSERT' OR (NEW.enabled AND NOT OLD.enabled)
		OR (NEW.family, NEW.params, NEW.kinds, NEW.needs_image)
		   IS DISTINCT FROM (OLD.family, OLD.params, OLD.kinds, OLD.needs_image) THEN
		reason := easeml._check_model(NEW.family, NEW.params, NEW.kinds, NEW.needs_image);
		IF reason IS NOT NULL THEN
			RAISE EXCEPTION 'model "%" cannot be trained: %', NEW.name, reason
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'easeml-trainer --list-families lists every family with its parameters.';
		END IF;
	END IF;
	RETURN NEW;
END;
$$;

CREATE TRIGGER models_validate
	BEFORE INSERT OR UPDATE ON easeml.models
	FOR EACH ROW EXECUTE FUNCTION easeml._validate_model();

-- Tasks: a failed or completed task taken up again retries the candidates
-- that failed before (docs/operations.md)
ALTER TABLE easeml.tasks ADD COLUMN reactivated_at timestamptz;

-- The declaration reads the source as the tenant, restricted and read-only,
-- and its errors name what to fix
CREATE FUNCTION easeml._column_list(rel regclass)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT coalesce(string_agg(quote_ident(attname), ', ' ORDER BY attnum), '(none)')
	  FROM pg_attribute
	 WHERE attrelid = rel AND attnum > 0 AND NOT attisdropped
$$;

CREATE FUNCTION easeml._read_source(query text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_read_source'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION easeml._read_source(text) IS
	'internal: the first row of a query over a task''s source as jsonb, read as the current role, read-only, in a security-restricted operation';

CREATE OR REPLACE FUNCTION easeml._validate_task()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	relkind		"char";
	relname		text;
	tgt			record;
	col			record;
	feats		text[] := '{}';
	f			text;
	n			bigint;
	nclass		bigint;
	nval		bigint;
	shape_prod	bigint := 1;
	s			int;
	stats		jsonb;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		IF NEW.id <> OLD.id OR NEW.tenant <> OLD.tenant OR NEW.name <> OLD.name
			OR NEW.source <> OLD.source OR NEW.target <> OLD.target
			OR NEW.features IS DISTINCT FROM OLD.features OR NEW.kind <> OLD.kind
			OR NEW.val_fraction <> OLD.val_fraction OR NEW.seed <> OLD.seed
			OR NEW.input_shape IS DISTINCT FROM OLD.input_shape THEN
			RAISE EXCEPTION 'the declaration of task "%" cannot be changed', OLD.name
				USING ERRCODE = 'feature_not_supported',
					  HINT = 'Only status and max_runs can be updated; declare a new task instead.';
		END IF;
		-- [trust] what the declaration measured is not for hand edits
		IF (NEW.n_rows, NEW.n_classes, NEW.created_at)
			IS DISTINCT FROM (OLD.n_rows, OLD.n_classes, OLD.created_at) THEN
			RAISE EXCEPTION 'n_rows, n_classes and created_at of task "%" are recorded when it is declared', OLD.name
				USING ERRCODE = 'generated_always',
					  HINT = 'Declare a new task to measure the source again.';
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

	-- feature columns: given, or every other numeric column
	IF NEW.features IS NULL THEN
		FOR col IN
			SELECT a.attname::text AS attname
			  FROM pg_attribute a
			 WHERE a.attrelid = NEW.source AND a.attnum > 0 AND NOT a.attisdropped
			   AND a.attname <> NEW.target AND easeml._numeric_type(a.atttypid)
			 ORDER BY a.attnum
		LOOP
			feats := feats || col.attname;
		END LOOP;
		IF cardinality(feats) = 0 THEN
			RAISE EXCEPTION '"%" has no numeric column besides the target "%"', relname, NEW.target
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Feature columns must be smallint, integer, bigint, real, double precision or numeric.';
		END IF;
	ELSE
		IF cardinality(NEW.features) = 0 THEN
			RAISE EXCEPTION 'features must list at least one column'
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Leave features NULL to use every numeric column except the target.';
		END IF;
		FOREACH f IN ARRAY NEW.features LOOP
			IF f IS NULL THEN
				RAISE EXCEPTION 'features must not contain NULL'
					USING ERRCODE = 'null_value_not_allowed',
						  HINT = 'List feature column names, or leave features out to use every usable column except the target.';
			END IF;
			IF f = NEW.target THEN
				RAISE EXCEPTION 'the target column "%" cannot also be a feature', f
					USING ERRCODE = 'invalid_parameter_value',
						  HINT = 'Remove the target column from features.';
			END IF;
			IF f = ANY (feats) THEN
				RAISE EXCEPTION 'feature column "%" is listed twice', f
					USING ERRCODE = 'duplicate_column',
						  HINT = 'List each feature column once.';
			END IF;
			SELECT a.attname, a.atttypid INTO col
			  FROM pg_attribute a
			 WHERE a.attrelid = NEW.source AND a.attname = f
			   AND a.attnum > 0 AND NOT a.attisdropped;
			IF NOT FOUND THEN
				RAISE EXCEPTION 'feature column "%" does not exist in "%"', f, relname
					USING ERRCODE = 'undefined_column',
						  HINT = 'Columns of ' || relname || ': ' || easeml._column_list(NEW.source) || '.';
			END IF;
			IF NOT easeml._numeric_type(col.atttypid) THEN
				RAISE EXCEPTION 'feature column "%" has type %, not a numeric type', f,
					format_type(col.atttypid, NULL)
					USING ERRCODE = 'datatype_mismatch',
						  HINT = 'Feature columns must be smallint, integer, bigint, real, double precision or numeric; cast others in a view.';
			END IF;
			feats := feats || f;
		END LOOP;
	END IF;

	-- the declaring role must be able to read what the trainer will read
	IF NOT has_column_privilege(current_user, NEW.source, NEW.target, 'SELECT') THEN
		RAISE EXCEPTION 'permission denied: role "%" cannot read "%"', current_user, relname
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('The owner can run GRANT SELECT ON %s TO %I.', relname, current_user);
	END IF;
	FOREACH f IN ARRAY feats LOOP
		IF NOT has_column_privilege(current_user, NEW.source, f, 'SELECT') THEN
			RAISE EXCEPTION 'permission denied: role "%" cannot read column "%" of "%"', current_user, f, relname
				USING ERRCODE = 'insufficient_privilege',
					  HINT = format('The owner can run GRANT SELECT ON %s TO %I.', relname, current_user);
		END IF;
	END LOOP;

	-- image shape, when given
	IF NEW.input_shape IS NOT NULL THEN
		IF array_ndims(NEW.input_shape) <> 1 OR cardinality(NEW.input_shape) NOT IN (2, 3) THEN
			RAISE EXCEPTION 'input_shape must be {height,width} or {channels,height,width}'
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'For 28 x 28 grey images input_shape is ''{28,28}''; for colour ones ''{3,32,32}''.';
		END IF;
		FOREACH s IN ARRAY NEW.input_shape LOOP
			IF s IS NULL OR s < 1 THEN
				RAISE EXCEPTION 'input_shape entries must be positive'
					USING ERRCODE = 'invalid_parameter_value',
						  HINT = 'Each entry is a number of channels or pixels, for example ''{28,28}''.';
			END IF;
			shape_prod := shape_prod * s;
		END LOOP;
		IF shape_prod <> cardinality(feats) THEN
			RAISE EXCEPTION 'input_shape % has % cells but the task has % feature columns',
				NEW.input_shape, shape_prod, cardinality(feats)
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'The product of the input_shape entries must equal the number of feature columns.';
		END IF;
	END IF;

	-- enough data: rows with a label, at least two classes, a validation split
	-- [trust] read as the tenant, restricted and read-only, as the trainer does
	stats := easeml._read_source(format(
		'SELECT count(*) AS n, count(DISTINCT %I) AS nclass FROM %s WHERE %I IS NOT NULL',
		NEW.target, relname, NEW.target));
	n := (stats ->> 'n')::bigint;
	nclass := (stats ->> 'nclass')::bigint;
	IF NEW.kind = 'classification' AND nclass < 2 THEN
		RAISE EXCEPTION 'target column "%" has % distinct value(s); classification needs at least 2 classes',
			NEW.target, nclass
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Check the target column, or declare kind = ''regression'' for a numeric target.';
	END IF;
	nval := floor(n * NEW.val_fraction);
	IF n < 10 OR nval < 2
		OR n - nval < (CASE WHEN NEW.kind = 'classification' THEN greatest(nclass, 2) ELSE 2 END) THEN
		RAISE EXCEPTION '"%" has % row(s) with a target; too few for a training/validation split', relname, n
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A task needs at least 10 labelled rows, at least 2 of them in the validation fraction.';
	END IF;

	NEW.features := feats;
	NEW.n_rows := n;
	NEW.n_classes := CASE WHEN NEW.kind = 'classification' THEN nclass END;
	NEW.status := 'active';
	NEW.status_reason := NULL;
	NEW.created_at := now();
	RETURN NEW;
END;
$$;

-- clear errors for NULL arguments; tenants must be ordinary login roles
CREATE OR REPLACE FUNCTION easeml.add_tenant(role name, max_parallel int DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
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
	INSERT INTO easeml.tenants (name, max_parallel) VALUES (role, max_parallel)
	ON CONFLICT (name) DO UPDATE SET max_parallel = EXCLUDED.max_parallel;
END;
$$;

CREATE OR REPLACE FUNCTION easeml.enqueue(task text, model text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	tid			bigint;
	mid			int;
	rid			bigint;
BEGIN
	-- [trust]
	IF task IS NULL OR model IS NULL THEN
		RAISE EXCEPTION 'task and model must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'For example SELECT easeml.enqueue(''my_task'', ''knn-5'');';
	END IF;
	SELECT id INTO tid FROM easeml.tasks WHERE tenant = current_user AND name = task;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" does not exist for tenant "%"', task, current_user
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	SELECT id INTO mid FROM easeml.models WHERE name = model;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'model "%" does not exist', model
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.models lists the candidates.';
	END IF;
	INSERT INTO easeml.runs (task_id, model_id) VALUES (tid, mid)
	RETURNING id INTO rid;
	RETURN rid;
END;
$$;

-- runs queued by hand: NULL ids get a clear error
CREATE OR REPLACE FUNCTION easeml._guard_run()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	t			record;
	m			record;
BEGIN
	-- a run always belongs to its task's tenant, whoever inserts it
	NEW.tenant := (SELECT tenant FROM easeml.tasks WHERE id = NEW.task_id);
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
	IF EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.model_id = m.id
				AND r.status IN ('queued', 'running')) THEN
		RAISE EXCEPTION 'model "%" is already queued or running for task "%"', m.name, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Wait for that run to end, or stop it with easeml.cancel(run_id).';
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

ALTER FUNCTION easeml.drop_task(text) CALLED ON NULL INPUT;
ALTER FUNCTION easeml.cancel(bigint) CALLED ON NULL INPUT;

-- a tenant's pg_dump --enable-row-security -n easeml reads every table and
-- sequence easeml dumps
GRANT SELECT ON easeml.history, easeml.settings TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.models_id_seq, easeml.tasks_id_seq, easeml.runs_id_seq,
	easeml.run_events_id_seq, easeml.decisions_id_seq TO PUBLIC;

-- sequences are dumped with their tables
SELECT pg_catalog.pg_extension_config_dump('easeml.models_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.tasks_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.runs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.run_events_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.decisions_id_seq', '');
