-- [keys] sql/easeml.sql makes the same changes
-- ---------------------------------------------------------------------------
-- [keys] Issue 24 item 3: a default feature is left out as a key only by
-- declaration (a single-column primary key, an identity column, a
-- nextval() default, a unique index on a single integer or uuid column,
-- looked up through simple views), never by the values of an integer
-- column: the row-number rule ("n distinct integers in a range of n") left
-- out years and other ordinal features.  The NOTICE names the rule
-- ("primary key", "identity column", "nextval default", "unique index
-- <name>", "... of <table>" through a view).  docs/data.md, section 2.
-- ---------------------------------------------------------------------------

-- [keys] The table column that column att of a simple view shows, through
-- any stack of simple views (src/sql/sql_source.c), or NULL.
CREATE FUNCTION easeml._view_base_column(rel oid, att int2, OUT base oid, OUT base_att int2)
AS 'MODULE_PATHNAME', 'easeml_view_base_column'
LANGUAGE C STABLE STRICT
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._view_base_column(oid, int2) IS
	'internal: the table column a column of a simple view shows, or NULL';

-- [keys] Why column att of relation rel is a key by declaration, or NULL:
-- the column alone is the primary key; an identity column; a nextval()
-- default (serial); the column alone has a unique index (no predicate, no
-- expression) and is an integer or a uuid.  Never by its values: a column
-- of distinct consecutive integers (a year) is a feature.  A column of a
-- simple view is looked up in the table it shows (easeml._view_base_column),
-- and the reason names that table; other views declare no keys.
CREATE OR REPLACE FUNCTION easeml._key_reason(rel oid, att int2)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
			WHEN c.relkind = 'v'
				THEN (SELECT easeml._key_reason(b.base, b.base_att) || format(' of %s', b.base::regclass)
						FROM easeml._view_base_column(rel, att) b
					   WHERE b.base IS NOT NULL)
			WHEN EXISTS (SELECT 1 FROM pg_index i
						  WHERE i.indrelid = rel AND i.indisprimary AND i.indnkeyatts = 1
							AND i.indkey[0] = att)
				THEN 'primary key'
			WHEN a.attidentity <> '' THEN 'identity column'
			WHEN EXISTS (SELECT 1 FROM pg_attrdef d
						  WHERE d.adrelid = rel AND d.adnum = att
							AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%')
				THEN 'nextval default'
			WHEN easeml._base_type(a.atttypid) IN ('int2'::regtype, 'int4'::regtype,
												   'int8'::regtype, 'uuid'::regtype)
				THEN (SELECT 'unique index ' || quote_ident(ic.relname)
						FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
					   WHERE i.indrelid = rel AND i.indisunique AND i.indnkeyatts = 1
						 AND i.indkey[0] = att AND i.indpred IS NULL
					   ORDER BY ic.relname LIMIT 1)
		   END
	  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
	 WHERE a.attrelid = rel AND a.attnum = att
$$;

-- The per-column statistics a profile computes, as SQL over alias c (the
-- column) and u (the row has a usable target): a jsonb array
-- [non-null values, constant, distinct values, infinite values, NULL].
-- NaN counts as missing; distinct values are counted where they decide
-- something (categorical columns).  [keys] The last entry was the span of
-- an integer column and integers were counted distinct, for a row-number
-- rule that is gone; find_keys is kept for the signature and unused.
CREATE OR REPLACE FUNCTION easeml._column_stats_sql(c text, t oid, kind text, find_keys boolean)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE
		WHEN kind = 'numeric' AND b IN ('float4'::regtype, 'float8'::regtype, 'numeric'::regtype) THEN
			format('jsonb_build_array(count(nullif(%1$s, ''NaN'')) FILTER (WHERE u), '
				   'min(nullif(%1$s, ''NaN'')) FILTER (WHERE u) IS NOT DISTINCT FROM max(nullif(%1$s, ''NaN'')) FILTER (WHERE u), '
				   'NULL, count(*) FILTER (WHERE u AND %1$s IN (''Infinity'', ''-Infinity'')), NULL)', c)
		WHEN kind = 'numeric' THEN
			format('jsonb_build_array(count(%1$s) FILTER (WHERE u), '
				   'min(%1$s) FILTER (WHERE u) IS NOT DISTINCT FROM max(%1$s) FILTER (WHERE u), NULL, 0, NULL)', c)
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

-- The candidate features of a declaration and their kinds: the listed
-- columns (each must exist, once, not be the target, and have a type easeml
-- encodes), or every column but the target whose type easeml encodes and
-- that is not a key; left_out and dropped say why the others are not.
CREATE OR REPLACE FUNCTION easeml._candidate_features(t easeml.tasks, relname text,
										   OUT cols text[], OUT kinds text[],
										   OUT left_out jsonb, OUT dropped text[])
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
			-- [keys] a key says so even when its type is not supported (a uuid)
			why := coalesce(col.key,
							CASE WHEN col.kind IS NULL
								 THEN format('type %s is not supported', format_type(col.atttypid, NULL)) END);
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
-- image keeps every pixel; identifiers (text with nearly every value
-- distinct) are looked for among default features only (a listed column
-- is the tenant's choice).  [keys] No rule looks at the values of an
-- integer column: a key is one by declaration (easeml._key_reason), and
-- distinct consecutive integers may well be a feature (a year).
CREATE OR REPLACE FUNCTION easeml._useless_reason(st jsonb, kind text, n bigint, listed boolean,
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
		END
$$;

