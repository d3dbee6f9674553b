-- ---------------------------------------------------------------------------
-- data (issue 10): column kinds, keys and useless columns left out, data
-- checks read as the tenant, snapshots and refresh, the ranking metric,
-- cross-validation and missing-value options (docs/data.md).  Every block
-- below is the same text as in sql/easeml.sql.
-- ---------------------------------------------------------------------------

-- Tasks declared before 0.2.0 have no snapshot: they keep reading their
-- source.  The columns are added without a default and filled, so that no
-- "missing value" is stored and the catalog equals a fresh install's.
ALTER TABLE easeml.tasks
	ADD COLUMN snapshot boolean,
	ADD COLUMN snapshot_version int CHECK (snapshot_version >= 0),
	ADD COLUMN metric text CHECK (metric IN ('accuracy', 'balanced_accuracy', 'macro_f1', 'log_loss',
											 'roc_auc', 'r2', 'rmse', 'mae')),
	ADD COLUMN folds int CHECK (folds BETWEEN 2 AND 10),
	ADD COLUMN impute text CHECK (impute IN ('mean', 'median', 'most_frequent')),
	ADD COLUMN missing_indicator boolean,
	ADD COLUMN feature_types text[],
	ADD COLUMN left_out jsonb,
	ADD COLUMN measured_at timestamptz;
ALTER TABLE easeml.tasks DISABLE TRIGGER USER;
UPDATE easeml.tasks SET snapshot = false, impute = 'mean', missing_indicator = true;
ALTER TABLE easeml.tasks ENABLE TRIGGER USER;
ALTER TABLE easeml.tasks
	ALTER COLUMN snapshot SET DEFAULT true,
	ALTER COLUMN snapshot SET NOT NULL,
	ALTER COLUMN impute SET DEFAULT 'mean',
	ALTER COLUMN impute SET NOT NULL,
	ALTER COLUMN missing_indicator SET DEFAULT true,
	ALTER COLUMN missing_indicator SET NOT NULL;
ALTER TABLE easeml.runs ADD COLUMN snapshot_version int;

-- ---------------------------------------------------------------------------
-- Data: what each column type becomes, which columns are keys, and a
-- profile of a source read as its tenant (docs/data.md)
-- ---------------------------------------------------------------------------

-- the type under any stack of domains
CREATE FUNCTION easeml._base_type(t oid)
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	WITH RECURSIVE b(oid, base, typtype) AS (
		SELECT oid, typbasetype, typtype FROM pg_type WHERE oid = t
		UNION ALL
		SELECT p.oid, p.typbasetype, p.typtype
		  FROM pg_type p JOIN b ON p.oid = b.base
		 WHERE b.typtype = 'd')
	SELECT oid FROM b WHERE typtype <> 'd'
$$;

-- How easeml encodes a column of type t: 'numeric', 'categorical' (one-hot
-- or hashed), 'date' or 'timestamp' (numeric parts); NULL: not supported.
CREATE FUNCTION easeml._feature_kind(t oid)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE
			WHEN b.oid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype,
						   'float4'::regtype, 'float8'::regtype, 'numeric'::regtype) THEN 'numeric'
			WHEN b.oid IN ('bool'::regtype, 'text'::regtype, 'varchar'::regtype,
						   'bpchar'::regtype) OR b.typtype = 'e' THEN 'categorical'
			WHEN b.oid = 'date'::regtype THEN 'date'
			WHEN b.oid IN ('timestamp'::regtype, 'timestamptz'::regtype) THEN 'timestamp'
		   END
	  FROM pg_type b WHERE b.oid = easeml._base_type(t)
$$;

-- Why column att of relation rel identifies rows (a primary-key column, a
-- unique, identity or serial column), or NULL.
CREATE FUNCTION easeml._key_reason(rel oid, att int2)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE
			WHEN EXISTS (SELECT 1 FROM pg_index i
						  WHERE i.indrelid = rel AND i.indisprimary AND att = ANY (i.indkey))
				THEN 'primary key'
			WHEN EXISTS (SELECT 1 FROM pg_index i
						  WHERE i.indrelid = rel AND i.indisunique AND i.indnkeyatts = 1
							AND i.indkey[0] = att AND i.indpred IS NULL)
				THEN 'unique'
			WHEN a.attidentity <> '' THEN 'identity column'
			WHEN EXISTS (SELECT 1 FROM pg_attrdef d
						  WHERE d.adrelid = rel AND d.adnum = att
							AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%')
				THEN 'serial'
		   END
	  FROM pg_attribute a WHERE a.attrelid = rel AND a.attnum = att
$$;

-- SQL that is true when a target value v (SQL text) of type t is NaN
CREATE FUNCTION easeml._nan_sql(v text, t oid)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE
			WHEN easeml._base_type(t) IN ('float4'::regtype, 'float8'::regtype, 'numeric'::regtype)
				THEN format('(%s = ''NaN'')', v)
			WHEN easeml._base_type(t) IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype)
				THEN format('(lower(%s::text) = ''nan'')', v)
			ELSE 'false'
		   END
$$;

-- The per-column statistics a profile computes, as SQL over alias c (the
-- column) and u (the row has a usable target): a jsonb array
-- [non-null values, constant, distinct values, infinite values, span of an
-- integer column (max - min + 1)].  NaN counts as missing; distinct values
-- are counted where they decide something (categorical columns; integers
-- when keys are looked for).
CREATE FUNCTION easeml._column_stats_sql(c text, t oid, kind text, find_keys boolean)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT CASE
		WHEN kind = 'numeric' AND b IN ('float4'::regtype, 'float8'::regtype, 'numeric'::regtype) THEN
			format('jsonb_build_array(count(nullif(%1$s, ''NaN'')) FILTER (WHERE u), '
				   'min(nullif(%1$s, ''NaN'')) FILTER (WHERE u) IS NOT DISTINCT FROM max(nullif(%1$s, ''NaN'')) FILTER (WHERE u), '
				   'NULL, count(*) FILTER (WHERE u AND %1$s IN (''Infinity'', ''-Infinity'')), NULL)', c)
		WHEN kind = 'numeric' THEN
			format('jsonb_build_array(count(%1$s) FILTER (WHERE u), '
				   'min(%1$s) FILTER (WHERE u) IS NOT DISTINCT FROM max(%1$s) FILTER (WHERE u), %2$s, 0, '
				   'max(%1$s::numeric) FILTER (WHERE u) - min(%1$s::numeric) FILTER (WHERE u) + 1)',
				   c, CASE WHEN find_keys THEN format('count(DISTINCT %s) FILTER (WHERE u)', c) ELSE 'NULL' END)
		WHEN kind = 'categorical' THEN
			format('jsonb_build_array(count(%1$s) FILTER (WHERE u), count(DISTINCT %1$s) FILTER (WHERE u) <= 1, '
				   'count(DISTINCT %1$s) FILTER (WHERE u), 0, NULL)', c)
		ELSE
			format('jsonb_build_array(count(%1$s) FILTER (WHERE u), '
				   'min(%1$s) FILTER (WHERE u) IS NOT DISTINCT FROM max(%1$s) FILTER (WHERE u), '
				   'NULL, count(*) FILTER (WHERE u AND NOT isfinite(%1$s)), NULL)', c)
		END
	  FROM (SELECT easeml._base_type(t) AS b) x
$$;

-- Profile a relation for a task, read as the current user, read-only,
-- inside a security-restricted operation (easeml._read_source): counts of rows
-- and of NULL, NaN and infinite targets, usable rows (a target that is
-- neither NULL nor NaN), classes, and easeml._column_stats_sql() for each
-- of cols (whose kinds are given).  One scan of the relation.
CREATE FUNCTION easeml._profile(rel regclass, target text, kind text, cols text[],
								kinds text[], find_keys boolean)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
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
			'cols', %4$s) AS p
		  FROM (SELECT s.*, t IS NOT NULL AND NOT coalesce(%1$s, false) AS u
				  FROM (SELECT %5$s FROM %6$s) s(%7$s)) s$q$,
		easeml._nan_sql('t', ttype),
		CASE WHEN isfloat THEN 'count(*) FILTER (WHERE t IN (''Infinity'', ''-Infinity''))' ELSE '0' END,
		CASE WHEN kind = 'classification' THEN 'count(DISTINCT t) FILTER (WHERE u)' ELSE 'NULL' END,
		stats,
		array_to_string(sel || format('%I', target), ', '),
		rel,
		array_to_string(aliases || 't'::text, ', '));
	RETURN easeml._read_source(q) -> 'p';
END;
$$;

-- The metrics a task of each kind may be ranked by (docs/data.md); the
-- first is the default.
CREATE FUNCTION easeml._metrics(kind text)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE kind
			WHEN 'classification' THEN '{accuracy,balanced_accuracy,macro_f1,log_loss,roc_auc}'::text[]
			WHEN 'regression' THEN '{r2,rmse,mae}'::text[]
		   END
$$;

-- The value of a task's metric in a run's metrics.  Runs recorded before
-- 0.2.0 only have their score, which was the accuracy (classification) or
-- R^2 (regression).
CREATE FUNCTION easeml._metric_value(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE WHEN metrics ? metric THEN (metrics ->> metric)::float8
				WHEN metric IN ('accuracy', 'r2') THEN score END
$$;

-- The errors of a target profile (easeml._profile); returns the usable
-- rows and classes.  Shared by the declaration, the snapshot and refresh.
CREATE FUNCTION easeml._check_target(p jsonb, relname text, target text, kind text,
									 val_fraction float8, folds int,
									 OUT n bigint, OUT classes int)
LANGUAGE plpgsql
SET search_path = pg_catalog
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
	IF n < 10 OR nval < 2
		OR n - nval < (CASE WHEN kind = 'classification' THEN greatest(classes, 2) ELSE 2 END) THEN
		RAISE EXCEPTION '"%" has % row(s) with a target; too few for a training/validation split', relname, n
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A task needs at least 10 labelled rows, at least 2 of them in the validation fraction.';
	END IF;
	IF folds IS NOT NULL AND n < 2 * folds THEN
		RAISE EXCEPTION '"%" has % row(s) with a target; too few for % folds', relname, n, folds
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Use fewer folds, or leave folds NULL for one validation split.';
	END IF;
END;
$$;

-- The options of a declaration's data (docs/data.md): the metric for the
-- task's kind (default its first), folds, the missing-value strategy.
CREATE FUNCTION easeml._check_data_options(t easeml.tasks)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
	IF NOT (coalesce(t.metric, (easeml._metrics(t.kind))[1]) = ANY (easeml._metrics(t.kind))) THEN
		RAISE EXCEPTION 'metric "%" does not apply to % tasks', t.metric, t.kind
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('Metrics for %s tasks: %s.', t.kind,
								array_to_string(easeml._metrics(t.kind), ', '));
	END IF;
	IF t.folds IS NOT NULL AND (t.folds < 2 OR t.folds > 10) THEN
		RAISE EXCEPTION 'folds must be between 2 and 10, not %', t.folds
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Leave folds NULL to score every run on one validation split of val_fraction.';
	END IF;
	IF t.impute IS NULL OR t.impute NOT IN ('mean', 'median', 'most_frequent') THEN
		RAISE EXCEPTION 'unknown missing-value strategy "%"', t.impute
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'impute must be ''mean'', ''median'' or ''most_frequent''.';
	END IF;
	IF t.missing_indicator IS NULL OR t.snapshot IS NULL THEN
		RAISE EXCEPTION 'missing_indicator and snapshot must be true or false, not NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Leave them out for their defaults.';
	END IF;
	RETURN coalesce(t.metric, (easeml._metrics(t.kind))[1]);
END;
$$;

-- The candidate features of a declaration and their kinds: the listed
-- columns (each must exist, once, not be the target, and have a type easeml
-- encodes), or every column but the target whose type easeml encodes and
-- that is not a key; left_out and dropped say why the others are not.
CREATE FUNCTION easeml._candidate_features(t easeml.tasks, relname text,
										   OUT cols text[], OUT kinds text[],
										   OUT left_out jsonb, OUT dropped text[])
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
	col			record;
	f			text;
	why			text;
BEGIN
	cols := '{}';
	kinds := '{}';
	left_out := '{}';
	dropped := '{}';
	IF t.features IS NULL THEN
		FOR col IN
			SELECT a.attname::text AS attname, a.atttypid, easeml._feature_kind(a.atttypid) AS kind,
				   easeml._key_reason(t.source, a.attnum) AS key
			  FROM pg_attribute a
			 WHERE a.attrelid = t.source AND a.attnum > 0 AND NOT a.attisdropped
			   AND a.attname <> t.target
			 ORDER BY a.attnum
		LOOP
			why := CASE WHEN col.kind IS NULL
						THEN format('type %s is not supported', format_type(col.atttypid, NULL))
						ELSE col.key END;
			IF why IS NULL THEN
				cols := cols || col.attname;
				kinds := kinds || col.kind;
			ELSE
				left_out := left_out || jsonb_build_object(col.attname, why);
				dropped := dropped || format('%s (%s)', col.attname, why);
			END IF;
		END LOOP;
		RETURN;
	END IF;
	IF cardinality(t.features) = 0 THEN
		RAISE EXCEPTION 'features must list at least one column'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Leave features NULL to use every column except the target and keys.';
	END IF;
	FOREACH f IN ARRAY t.features LOOP
		IF f IS NULL THEN
			RAISE EXCEPTION 'features must not contain NULL'
				USING ERRCODE = 'null_value_not_allowed',
					  HINT = 'List feature column names, or leave features out to use every usable column except the target.';
		END IF;
		IF f = t.target THEN
			RAISE EXCEPTION 'the target column "%" cannot also be a feature', f
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Remove the target column from features.';
		END IF;
		IF f = ANY (cols) THEN
			RAISE EXCEPTION 'feature column "%" is listed twice', f
				USING ERRCODE = 'duplicate_column',
					  HINT = 'List each feature column once.';
		END IF;
		SELECT a.atttypid, easeml._feature_kind(a.atttypid) AS kind INTO col
		  FROM pg_attribute a
		 WHERE a.attrelid = t.source AND a.attname = f AND a.attnum > 0 AND NOT a.attisdropped;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'feature column "%" does not exist in "%"', f, relname
				USING ERRCODE = 'undefined_column',
					  HINT = 'Columns of ' || relname || ': ' || easeml._column_list(t.source) || '.';
		END IF;
		IF col.kind IS NULL THEN
			RAISE EXCEPTION 'feature column "%" has type %, which easeml cannot use', f,
				format_type(col.atttypid, NULL)
				USING ERRCODE = 'datatype_mismatch',
					  HINT = 'Feature columns may be numeric, boolean, text, varchar, char, enum, date or timestamp columns; cast others in a view.';
		END IF;
		IF t.input_shape IS NOT NULL AND col.kind <> 'numeric' THEN
			RAISE EXCEPTION 'feature column "%" of an image task has type %, not a numeric type', f,
				format_type(col.atttypid, NULL)
				USING ERRCODE = 'datatype_mismatch',
					  HINT = 'Pixels must be smallint, integer, bigint, real, double precision or numeric columns.';
		END IF;
		cols := cols || f;
		kinds := kinds || col.kind;
	END LOOP;
END;
$$;

-- Why a candidate feature cannot help, from its profile statistics
-- (easeml._column_stats_sql) over the n rows with a target, or NULL.  An
-- image keeps every pixel; identifiers and row numbers are looked for
-- among default features only (a listed column is the tenant's choice).
CREATE FUNCTION easeml._useless_reason(st jsonb, kind text, n bigint, listed boolean,
									   image boolean)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE
		WHEN image THEN NULL
		WHEN (st ->> 0)::bigint = 0 THEN 'all NULL'
		WHEN (st ->> 1)::boolean AND (st ->> 0)::bigint = n THEN 'constant'
		WHEN NOT listed AND kind = 'categorical' AND (st ->> 0)::bigint >= 20
			 AND (st ->> 2)::bigint >= 0.9 * (st ->> 0)::bigint
			THEN format('%s distinct values in %s rows: an identifier or free text',
						st ->> 2, st ->> 0)
		WHEN NOT listed AND kind = 'numeric' AND n >= 20
			 AND (st ->> 0)::bigint = n AND (st ->> 2)::bigint = n
			 AND (st ->> 4)::numeric <= 2 * n
			THEN format('%s distinct integers in a range of %s: a row number', n, st ->> 4)
		END
$$;

-- The data part of a declaration (called by easeml._validate_task, which
-- checked the tenant, the source and the target): the options, the feature
-- columns and their kinds, the data checks on the source read as the
-- tenant, and a NOTICE that says which columns are features and why others
-- are not.  Returns the task row to insert.
CREATE FUNCTION easeml._declare_data(t easeml.tasks, relname text)
RETURNS easeml.tasks
LANGUAGE plpgsql
SET search_path = pg_catalog
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

CREATE OR REPLACE FUNCTION easeml._validate_task()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
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

-- ---------------------------------------------------------------------------
-- Snapshots (src/sql/sql_snapshot.c, docs/data.md): by default a task trains on a
-- copy of its source taken at declaration, easeml_snapshots.task_<id>_v<n>,
-- owned by the bootstrap superuser and readable by the tenant (and
-- admins); easeml.refresh(task) takes version n+1.  Runs record the
-- version they trained on.  The rows are read as the tenant, read-only and
-- restricted (easeml._read_rows_as).
-- ---------------------------------------------------------------------------
CREATE SCHEMA easeml_snapshots;
COMMENT ON SCHEMA easeml_snapshots IS
	'easeml: one table per task snapshot version, readable by its tenant';
GRANT USAGE ON SCHEMA easeml_snapshots TO PUBLIC;

CREATE FUNCTION easeml._snapshot_name(task_id bigint, version int)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT
AS $$
	SELECT format('task_%s_v%s', task_id, version)
$$;

-- The statements that take snapshot `version` of a task (run by
-- src/sql/sql_snapshot.c, each under its identity), and the query that checks the
-- target on what runs will read: the copy, or with version 0 the source.
-- Feature columns are copied in the task's order; categorical ones as text,
-- the others (and the target) as their base type.
CREATE FUNCTION easeml._snapshot_sql(task_id bigint, version int,
									 OUT create_sql text, OUT grant_sql text, OUT fill_sql text,
									 OUT check_sql text)
LANGUAGE plpgsql
SET search_path = pg_catalog
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
	grant_sql := format('GRANT SELECT ON easeml_snapshots.%I TO %I', snap, t.tenant);
	-- read as the tenant, read-only and restricted; written by the superuser
	fill_sql := format('INSERT INTO easeml_snapshots.%I SELECT * FROM easeml._read_rows_as(%s, %L) AS r(%s)',
					   snap, (SELECT oid FROM pg_roles WHERE rolname = t.tenant),
					   format('SELECT %s FROM %s WHERE %I IS NOT NULL',
							  array_to_string(exprs, ', '), src, t.target),
					   array_to_string(defs, ', '));
	check_sql := format('SELECT n, classes FROM easeml._check_target(easeml._profile(%L, %L, %L, ''{}'', ''{}'', false), %L, %L, %L, %s, %s)',
						CASE WHEN version > 0 THEN format('easeml_snapshots.%I', snap) ELSE src END,
						t.target, t.kind, src, t.target, t.kind, t.val_fraction,
						coalesce(t.folds::text, 'NULL'));
END;
$$;

-- Make snapshot `version` (0: none, the live source) current, with the
-- usable rows and classes found on it: runs of older versions still queued
-- move to it, running ones are cancelled (their result would be stale),
-- older tables are dropped, and a completed or failed task is scheduled
-- again.
CREATE FUNCTION easeml._snapshot_switch(task_id bigint, version int, n bigint, classes int)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
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
		LOOP
			EXECUTE format('DROP TABLE easeml_snapshots.%I', rel);
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

CREATE FUNCTION easeml._read_rows_as(role oid, query text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_read_rows_as'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION easeml._read_rows_as(oid, text) IS
	'internal: the rows of a query read as another role, read-only, in a security-restricted operation (superuser only)';

CREATE FUNCTION easeml._take_snapshot()
RETURNS trigger
AS 'MODULE_PATHNAME', 'easeml_take_snapshot'
LANGUAGE C;

CREATE TRIGGER tasks_snapshot
	AFTER INSERT ON easeml.tasks
	FOR EACH ROW WHEN (NEW.snapshot_version = 0)
	EXECUTE FUNCTION easeml._take_snapshot();

-- Snapshots go with their task (drop_task, a tenant removed, DELETE).
CREATE FUNCTION easeml._drop_snapshots()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog
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
	LOOP
		EXECUTE format('DROP TABLE easeml_snapshots.%I', rel);
	END LOOP;
	RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_drop_snapshots
	AFTER DELETE ON easeml.tasks
	FOR EACH ROW EXECUTE FUNCTION easeml._drop_snapshots();

CREATE FUNCTION easeml.refresh(task text)
RETURNS int
AS 'MODULE_PATHNAME', 'easeml_refresh'
LANGUAGE C VOLATILE
-- it runs statements as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.refresh(text) IS
	'take a new snapshot of one of your tasks'' source and train on it from now on; returns the new version';

CREATE OR REPLACE FUNCTION easeml._guard_run()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
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

CREATE OR REPLACE FUNCTION easeml.trainer_spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog
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
COMMENT ON FUNCTION easeml.trainer_spec(bigint) IS
	'internal: what the trainer needs to train one run, including its COPY query';

CREATE OR REPLACE VIEW easeml.leaderboard WITH (security_invoker = true) AS
SELECT t.name AS task,
	   t.tenant,
	   rank() OVER (PARTITION BY r.task_id
					ORDER BY r.snapshot_version IS DISTINCT FROM t.snapshot_version,
							 r.score DESC, r.seconds, r.id)::int AS rank,
	   m.name AS model,
	   m.family,
	   r.score,
	   r.seconds,
	   r.id AS run_id,
	   r.task_id,
	   r.finished_at,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   easeml._metric_value(r.metrics, coalesce(t.metric, (easeml._metrics(t.kind))[1]), r.score)
		   AS metric_value,
	   r.snapshot_version,
	   r.snapshot_version IS DISTINCT FROM t.snapshot_version AS stale
  FROM easeml.runs r
  JOIN easeml.tasks t ON t.id = r.task_id
  JOIN easeml.models m ON m.id = r.model_id
 WHERE r.status = 'succeeded' AND r.score IS NOT NULL;
COMMENT ON VIEW easeml.leaderboard IS
	'succeeded runs per task, best first by the task''s metric; results on an older snapshot are stale';

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
	   (SELECT m.name FROM easeml.runs b JOIN easeml.models m ON m.id = b.model_id
		 WHERE b.task_id = t.id AND b.status = 'succeeded' AND b.score IS NOT NULL
		   AND b.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
		 ORDER BY b.score DESC, b.seconds, b.id LIMIT 1) AS best_model,
	   t.status_reason,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   t.folds,
	   t.snapshot_version
  FROM easeml.tasks t
  LEFT JOIN easeml.runs r ON r.task_id = t.id
 GROUP BY t.id;
COMMENT ON VIEW easeml.task_overview IS
	'one row per task: run counts and the best model so far on its current snapshot';

CREATE OR REPLACE VIEW easeml.cost_estimates WITH (security_invoker = true) AS
WITH done AS (
	-- one row per (task, model) that ran: linear in the number of runs
	SELECT r.task_id, r.model_id, max(r.seconds) AS seconds,
		   max(r.seconds) / greatest(max(t.n_rows) * max(cardinality(t.features))
									 * max(coalesce(t.folds, 1)), 1)::float8 AS per_cell
	  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE r.status = 'succeeded' AND r.seconds > 0
	 GROUP BY r.task_id, r.model_id
), per_model AS (
	SELECT model_id, exp(avg(ln(per_cell))) AS per_cell
	  FROM done GROUP BY model_id
), per_unit AS (
	SELECT exp(avg(ln(p.per_cell / m.cost_factor))) AS per_unit
	  FROM per_model p JOIN easeml.models m ON m.id = p.model_id
)
SELECT t.id AS task_id,
	   m.id AS model_id,
	   CASE WHEN own.seconds IS NOT NULL THEN own.seconds
			WHEN p.per_cell IS NOT NULL THEN p.per_cell * c.cells
			ELSE coalesce(u.per_unit, 1e-7) * m.cost_factor * c.cells END AS seconds,
	   CASE WHEN own.seconds IS NOT NULL THEN 'measured'
			WHEN p.per_cell IS NOT NULL THEN 'model history'
			WHEN u.per_unit IS NOT NULL THEN 'cost factor, calibrated'
			ELSE 'cost factor' END AS basis
  FROM easeml.tasks t
 CROSS JOIN LATERAL (SELECT greatest(t.n_rows * cardinality(t.features) * coalesce(t.folds, 1), 1)::float8
					   AS cells) c
 CROSS JOIN easeml.models m
 CROSS JOIN per_unit u
  LEFT JOIN done own ON own.task_id = t.id AND own.model_id = m.id
  LEFT JOIN per_model p ON p.model_id = m.id
 WHERE m.enabled AND t.kind = ANY (m.kinds);
COMMENT ON VIEW easeml.cost_estimates IS
	'estimated training seconds of every enabled candidate for every task; the cost-aware policies read it';

GRANT INSERT (snapshot, metric, folds, impute, missing_indicator) ON easeml.tasks TO PUBLIC;
-- the trigger functions too: a tenant must not attach them to a table of
-- its own, whose rows could name another tenant's task
REVOKE ALL ON FUNCTION easeml._snapshot_sql(bigint, int),
	easeml._snapshot_switch(bigint, int, bigint, int), easeml._read_rows_as(oid, text),
	easeml._take_snapshot(), easeml._drop_snapshots()
	FROM PUBLIC;
