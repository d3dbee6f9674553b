-- The extension's objects, the seeded catalog and the settings.
SELECT extname, extversion, nspname
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE extname = 'easeml';

-- tables and views of the catalog
SELECT c.relname, c.relkind, c.relrowsecurity
  FROM pg_class c
 WHERE c.relnamespace = 'easeml'::regnamespace AND c.relkind IN ('r', 'v')
 ORDER BY c.relname;

-- functions, and who may execute them
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
  FROM pg_proc p
 WHERE p.pronamespace = 'easeml'::regnamespace
 ORDER BY p.proname, args;

-- the built-in candidates: at least 40 configurations of at least 8 families
SELECT count(*) >= 40 AS enough, count(DISTINCT family) >= 8 AS families
  FROM easeml.models WHERE builtin;
SELECT family, count(*) AS configurations,
	   bool_or('regression' = ANY (kinds)) AS regression, bool_and(needs_image) AS image_only
  FROM easeml.models WHERE builtin
 GROUP BY family ORDER BY family;
-- every built-in candidate's params are an object and its name is unique
SELECT count(*) FILTER (WHERE jsonb_typeof(params) <> 'object') AS bad_params,
	   count(*) - count(DISTINCT name) AS duplicate_names
  FROM easeml.models;

-- settings (scripts/regress.conf sets database and enabled)
SELECT name, setting, unit, context
  FROM pg_settings WHERE name LIKE 'easeml.%' ORDER BY name;

-- policies the scheduler knows
SELECT 'fifo' = ANY (easeml.policies()) AS has_fifo,
	   'hybrid' = ANY (easeml.policies()) AS has_hybrid,
	   'popular' = ANY (easeml.policies()) AS has_popular;

-- a bad policy in the configuration is refused with a hint
ALTER SYSTEM SET easeml.policy = 'no_such_policy';
