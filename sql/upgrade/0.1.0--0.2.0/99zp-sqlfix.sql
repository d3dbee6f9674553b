-- [retype] easeml.refresh (and a snapshot of alter_task) refuses a column
-- whose type changed since the task took its features (42804), and a
-- regression target that is no longer numeric; easeml.alter_task with the
-- same features takes their kinds as they are now, in a new version.
-- [classes] a classification target's classes are counted by their text,
-- as the trainer reads them (json, point and xml have no equality
-- operator; numeric 1 and 1.0 are two labels); more classes than training
-- rows has its own error, and a numeric target with many distinct values
-- a WARNING that suggests regression.  An empty source says so.
-- [dba] a tenant's pg_dump --enable-row-security -n easeml no longer stops
-- at easeml.policy_choices (and its sequence) or easeml.snapshot_drops.
-- [binding] tenants.role_oid is unique, and add_tenant refuses the role of
-- a tenant renamed since.

CREATE OR REPLACE FUNCTION easeml._profile(rel regclass, target text, kind text, cols text[],
								kinds text[], find_keys boolean)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	ttype		oid;
	ctype		oid;
	isfloat		boolean;
	sel			text[] := '{}';
	aliases		text[] := '{}';
	stats		text := 'jsonb_build_array()';
	chunk		text[] := '{}';
	q			text;
BEGIN
	FOR j IN 1..coalesce(cardinality(cols), 0) LOOP
		sel := sel || format('%I', cols[j]);
		aliases := aliases || ('c' || j);
		SELECT atttypid INTO ctype FROM pg_attribute
		 WHERE attrelid = rel AND attname = cols[j] AND attnum > 0 AND NOT attisdropped;
		chunk := chunk || easeml._column_stats_sql('c' || j, ctype, kinds[j], find_keys);
		-- jsonb_build_array takes at most 100 arguments
		IF cardinality(chunk) = 90 OR j = cardinality(cols) THEN
			stats := stats || format(' || jsonb_build_array(%s)', array_to_string(chunk, ', '));
			chunk := '{}';
		END IF;
	END LOOP;
	SELECT atttypid INTO ttype FROM pg_attribute
	 WHERE attrelid = rel AND attname = target AND attnum > 0 AND NOT attisdropped;
	isfloat := easeml._base_type(ttype) IN ('float4'::regtype, 'float8'::regtype, 'numeric'::regtype);
	q := format($q$SELECT pg_catalog.jsonb_build_object(
			'rows', count(*),
			'null_target', count(*) FILTER (WHERE t IS NULL),
			'nan_target', count(*) FILTER (WHERE %1$s),
			'inf_target', %2$s,
			'n', count(*) FILTER (WHERE u),
			'classes', %3$s,
			'numeric_target', %8$s,
			'cols', %4$s) AS p
		  FROM (SELECT s.*, t IS NOT NULL AND NOT coalesce(%1$s, false) AS u
				  FROM (SELECT %5$s FROM %6$s) s(%7$s)) s$q$,
		easeml._nan_sql('t', ttype),
		CASE WHEN isfloat THEN 'count(*) FILTER (WHERE t IN (''Infinity'', ''-Infinity''))' ELSE '0' END,
		-- [classes] by the text of each value, as the trainer reads a
		-- classification target (easeml._trainer_spec): 1 and 1.0 are two
		-- classes, and a type without an equality operator (json, point,
		-- xml) is counted too
		CASE WHEN kind = 'classification' THEN 'count(DISTINCT t::text) FILTER (WHERE u)' ELSE 'NULL' END,
		stats,
		array_to_string(sel || format('%I', target), ', '),
		rel,
		array_to_string(aliases || 't'::text, ', '),
		CASE WHEN easeml._feature_kind(ttype) = 'numeric' THEN 'true' ELSE 'false' END);
	RETURN easeml._read_source(q) -> 'p';
END;
$$;

CREATE OR REPLACE FUNCTION easeml._check_target(p jsonb, relname text, target text, kind text,
									 val_fraction float8, folds int,
									 OUT n bigint, OUT classes int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	nval		bigint;
BEGIN
	n := (p ->> 'n')::bigint;
	classes := (p ->> 'classes')::int;
	IF (p ->> 'nan_target')::bigint > 0 AND kind = 'classification' THEN
		RAISE EXCEPTION 'target column "%" of "%" has % NaN value(s), which would count as a class',
			target, relname, p ->> 'nan_target'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Set them to NULL (rows without a target are left out), or fix the data.';
	END IF;
	IF (p ->> 'rows')::bigint = 0 THEN
		RAISE EXCEPTION 'the source "%" has no rows', relname
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Fill the source (or check that its row-level security lets you read its rows), then declare the task.';
	END IF;
	IF n = 0 THEN
		RAISE EXCEPTION 'target column "%" of "%" has no value: its % row(s) are all NULL or NaN',
			target, relname, p ->> 'rows'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Check that the target column is filled, or choose another one.';
	END IF;
	IF (p ->> 'inf_target')::bigint > 0 THEN
		RAISE EXCEPTION 'target column "%" of "%" has % infinite value(s)', target, relname,
			p ->> 'inf_target'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Set them to NULL (rows without a target are left out), or fix the data.';
	END IF;
	IF kind = 'classification' AND classes < 2 THEN
		RAISE EXCEPTION 'target column "%" has % distinct value(s); classification needs at least 2 classes',
			target, classes
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Check the target column, or declare kind = ''regression'' for a numeric target.';
	END IF;
	nval := floor(n * val_fraction);
	IF n < 10 OR nval < 2 OR n - nval < 2 THEN
		RAISE EXCEPTION '"%" has % row(s) with a target; too few for a training/validation split', relname, n
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A task needs at least 10 labelled rows, at least 2 of them in the validation fraction.';
	END IF;
	-- [classes] each class needs a training row: more classes than that
	-- is most often a quantity declared without kind
	IF kind = 'classification' AND n - nval < classes THEN
		RAISE EXCEPTION 'target column "%" of "%" has % distinct values, more than its % training row(s): classification needs at least one training row per class',
			target, relname, classes, n - nval
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = CASE WHEN (p ->> 'numeric_target')::boolean
							  THEN 'If the target is a quantity, declare the task with kind = ''regression''; if it is a label, group rare classes in a view or lower val_fraction.'
							  ELSE 'Group rare classes in a view, or lower val_fraction.' END;
	END IF;
	IF folds IS NOT NULL AND n < 2 * folds THEN
		RAISE EXCEPTION '"%" has % row(s) with a target; too few for % folds', relname, n, folds
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use fewer folds, or leave folds NULL for one validation split.';
	END IF;
END;
$$;

CREATE OR REPLACE FUNCTION easeml._declare_data(t easeml.tasks, relname text)
RETURNS easeml.tasks
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c			record;
	f			text;
	why			text;
	feats		text[] := '{}';
	fkinds		text[] := '{}';
	chosen		text[] := '{}';
	prof		jsonb;
	st			jsonb;
	cnt			record;
	shape_prod	bigint := 1;
	s			int;
BEGIN
	t.metric := easeml._check_data_options(t);
	c := easeml._candidate_features(t, relname);

	-- the declaring role must be able to read what the trainer will read
	FOREACH f IN ARRAY t.target || c.cols LOOP
		IF NOT has_column_privilege(current_user, t.source, f, 'SELECT') THEN
			RAISE EXCEPTION 'permission denied: role "%" cannot read %', current_user,
				CASE WHEN f = t.target THEN format('"%s"', relname)
					 ELSE format('column "%s" of "%s"', f, relname) END
				USING ERRCODE = 'insufficient_privilege',
					  HINT = format('The owner can run GRANT SELECT ON %s TO %I.', relname, current_user);
		END IF;
	END LOOP;

	-- the data, read as the tenant in a security-restricted operation
	prof := easeml._profile(t.source, t.target, t.kind, c.cols, c.kinds, t.features IS NULL);
	cnt := easeml._check_target(prof, relname, t.target, t.kind, t.val_fraction, t.folds);
	-- [classes] a numeric target with a class for more than a fifth of its
	-- rows is most often a quantity declared without kind
	IF t.kind = 'classification' AND (prof ->> 'numeric_target')::boolean
		AND cnt.classes > 20 AND cnt.classes > 0.2 * cnt.n THEN
		RAISE WARNING 'task "%": numeric target column "%" has % distinct values in % rows, each a class of its own',
			t.name, t.target, cnt.classes, cnt.n
			USING HINT = 'If the target is a quantity, declare the task with kind = ''regression''.';
	END IF;
	FOR j IN 1..cardinality(c.cols) LOOP
		st := prof -> 'cols' -> (j - 1);
		IF (st ->> 3)::bigint > 0 THEN
			RAISE EXCEPTION 'feature column "%" of "%" has % infinite value(s)', c.cols[j], relname, st ->> 3
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Set them to NULL (easeml fills in missing values) or fix the data.';
		END IF;
		why := easeml._useless_reason(st, c.kinds[j], cnt.n, t.features IS NOT NULL,
									  t.input_shape IS NOT NULL);
		IF why IS NULL THEN
			feats := feats || c.cols[j];
			fkinds := fkinds || c.kinds[j];
			chosen := chosen || format('%s (%s%s)', c.cols[j], c.kinds[j],
									   CASE WHEN c.kinds[j] = 'categorical'
											THEN format(', %s values', st ->> 2) ELSE '' END);
		ELSE
			c.left_out := c.left_out || jsonb_build_object(c.cols[j], why);
			c.dropped := c.dropped || format('%s (%s)', c.cols[j], why);
		END IF;
	END LOOP;
	IF cardinality(feats) = 0 THEN
		RAISE EXCEPTION '"%" has no column usable as a feature besides the target "%"', relname, t.target
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = CASE WHEN cardinality(c.dropped) > 0
								THEN 'Left out: ' || array_to_string(c.dropped, ', ') || '.' END,
				  HINT = 'Features may be numeric, boolean, text, enum, date or timestamp columns that are not keys, not all NULL and not constant.';
	END IF;

	-- image shape, when given
	IF t.input_shape IS NOT NULL THEN
		IF array_ndims(t.input_shape) <> 1 OR cardinality(t.input_shape) NOT IN (2, 3) THEN
			RAISE EXCEPTION 'input_shape must be {height,width} or {channels,height,width}'
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'For 28 x 28 grey images input_shape is ''{28,28}''; for colour ones ''{3,32,32}''.';
		END IF;
		FOREACH s IN ARRAY t.input_shape LOOP
			IF s IS NULL OR s < 1 THEN
				RAISE EXCEPTION 'input_shape entries must be positive'
					USING ERRCODE = 'invalid_parameter_value',
						  HINT = 'Each entry is a number of channels or pixels, for example ''{28,28}''.';
			END IF;
			shape_prod := shape_prod * s;
		END LOOP;
		IF shape_prod <> cardinality(feats) THEN
			RAISE EXCEPTION 'input_shape % has % cells but the task has % feature columns',
				t.input_shape, shape_prod, cardinality(feats)
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'The product of the input_shape entries must equal the number of feature columns.';
		END IF;
	END IF;

	RAISE NOTICE 'task "%": % feature column(s), % left out', t.name, cardinality(feats),
		cardinality(c.dropped)
		-- a wide table (784 pixels) would fill the screen: the first 40 names
		USING DETAIL = 'Features: ' || array_to_string(chosen[1:40], ', ') ||
					   CASE WHEN cardinality(chosen) > 40
							THEN format(' and %s more (tasks.features lists them all)',
										cardinality(chosen) - 40) ELSE '' END || '.' ||
					   CASE WHEN cardinality(c.dropped) > 0
							THEN E'\nLeft out: ' || array_to_string(c.dropped, ', ') || '.' ELSE '' END;

	t.features := feats;
	t.feature_types := fkinds;
	t.left_out := c.left_out;
	t.n_rows := cnt.n;
	t.n_classes := CASE WHEN t.kind = 'classification' THEN cnt.classes END;
	t.measured_at := clock_timestamp();
	-- 0: the AFTER INSERT trigger takes version 1 as the tenant
	t.snapshot_version := CASE WHEN t.snapshot THEN 0 END;
	RETURN t;
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
	now_kind	text;
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
		-- [retype] each column must still be what the task encodes: a
		-- feature of the kind recorded when the task took its features, a
		-- regression target numeric (ALTER TABLE may have changed its type
		-- since; runs would fail on every row of the new snapshot)
		IF j < cardinality(cols) THEN
			now_kind := easeml._feature_kind(a.atttypid);
			IF now_kind IS DISTINCT FROM kinds[j] THEN
				RAISE EXCEPTION 'feature column "%" of task "%" now has type %, which easeml encodes as %, but the task encodes it as %',
					cols[j], t.name, format_type(a.atttypid, NULL),
					coalesce(now_kind, 'nothing (not supported)'), kinds[j]
					USING ERRCODE = 'datatype_mismatch',
						  DETAIL = 'Nothing was changed: the task keeps its current snapshot version.',
						  HINT = CASE WHEN t.snapshot
									  THEN format('Change the column back to a %s type, or take the columns as they are now with SELECT easeml.alter_task(%L, features => %L) (a new snapshot version; leave out a column easeml cannot use).',
												  kinds[j], t.name, t.features::text)
									  ELSE format('Change the column back to a %s type, or declare a new task: the features of a task without snapshot cannot change.',
												  kinds[j]) END;
			END IF;
		ELSIF t.kind = 'regression' AND easeml._feature_kind(a.atttypid) IS DISTINCT FROM 'numeric' THEN
			RAISE EXCEPTION 'target column "%" of regression task "%" now has type %, not a numeric type',
				cols[j], t.name, format_type(a.atttypid, NULL)
				USING ERRCODE = 'datatype_mismatch',
					  DETAIL = 'Nothing was changed: the task keeps its current snapshot version.',
					  HINT = 'Change the column back to smallint, integer, bigint, real, double precision or numeric, or declare a new task on a view that casts it.';
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

CREATE OR REPLACE FUNCTION easeml._altered_task(task_id bigint, metric text, features text[], folds int,
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
	-- [retype] the same features given again take their kinds as they are
	-- now, when a column's type changed since (easeml.refresh refuses then)
	IF (t.features, t.folds) IS DISTINCT FROM (old.features, old.folds)
		OR (_altered_task.features IS NOT NULL
			AND EXISTS (SELECT 1
						  FROM unnest(old.features,
									  coalesce(old.feature_types,
											   array_fill('numeric'::text, ARRAY[cardinality(old.features)])))
							   AS u(f, kind)
						  LEFT JOIN pg_attribute a
							ON a.attrelid = old.source AND a.attname = u.f AND a.attnum > 0
						   AND NOT a.attisdropped
						 WHERE easeml._feature_kind(a.atttypid) IS DISTINCT FROM u.kind)) THEN
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
	IF (t.features, t.feature_types, t.folds)
		IS DISTINCT FROM (old.features, old.feature_types, old.folds) THEN
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
		   features_version = CASE WHEN (t.features, t.feature_types)
										IS DISTINCT FROM (old.features, old.feature_types)
								   THEN version ELSE k.features_version END
	 WHERE k.id = t.id;

	IF (t.features, t.feature_types) IS DISTINCT FROM (old.features, old.feature_types) THEN
		-- the deployed run read other columns (or read them as another
		-- kind): predict must not apply it,
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
				  HINT = format('Give the role its tenant''s name back (ALTER ROLE %I RENAME TO %I) and its tasks are its own again; or remove the old tenant with its tasks first (DELETE FROM easeml.tenants WHERE name = %L).',
								role, other, other);
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

-- [dba] a tenant's backup (pg_dump --enable-row-security -n easeml) dumps
-- every table registered with pg_extension_config_dump: these two are
-- readable by every role, with no row for any but a superuser
-- (row-level security without a policy)
ALTER TABLE easeml.snapshot_drops ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON easeml.snapshot_drops TO PUBLIC;
ALTER TABLE easeml.policy_choices ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON easeml.policy_choices TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.policy_choices_id_seq TO PUBLIC;

-- [binding] one tenant per role (easeml.add_tenant refuses a renamed
-- tenant's role under its new name)
ALTER TABLE easeml.tenants ADD CONSTRAINT tenants_role_oid_key UNIQUE (role_oid);
