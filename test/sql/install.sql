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
-- the trainer protocol: the functions the trainer process calls, in a
-- schema of their own, none executable by PUBLIC
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
  FROM pg_proc p
 WHERE p.pronamespace = 'easeml_trainer'::regnamespace
 ORDER BY p.proname, args;
-- the schemas the extension owns
SELECT d.objid::regnamespace AS schema
  FROM pg_depend d
 WHERE d.classid = 'pg_namespace'::regclass AND d.deptype = 'e'
   AND d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'easeml')
 ORDER BY 1::text;

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

-- [identity] Every function of easeml that runs with another identity
-- (SECURITY DEFINER) or pins a search_path pins exactly pg_catalog, pg_temp:
-- pg_temp last, so a tenant's temporary table never shadows a catalog
-- (docs/security.md).  No row means none breaks the rule.
WITH f AS (
	SELECT p.oid::regprocedure AS function, p.prosecdef,
		   (SELECT pg_catalog.array_agg(c) FROM pg_catalog.unnest(p.proconfig) c
			 WHERE c LIKE 'search_path=%') AS paths
	  FROM pg_catalog.pg_proc p
	  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
		   AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
	  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'easeml')
SELECT function, prosecdef, paths
  FROM f
 WHERE (prosecdef OR paths IS NOT NULL)
   AND paths IS DISTINCT FROM ARRAY['search_path=pg_catalog, pg_temp']
 ORDER BY 1::text;
-- the scan saw them (a rule over nothing proves nothing), and the C
-- functions that switch identity (src/module/identity.c) pin it too
SELECT count(*) FILTER (WHERE p.prosecdef) >= 7 AS security_definers,
	   count(*) FILTER (WHERE 'search_path=pg_catalog, pg_temp' = ANY (p.proconfig)) >= 75 AS pinned
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace IN ('easeml'::regnamespace, 'easeml_trainer'::regnamespace);
SELECT count(*) AS switch_identity,
	   pg_catalog.array_agg(p.oid::regprocedure) FILTER (
		   WHERE NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false)) AS unpinned
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace IN ('easeml'::regnamespace, 'easeml_trainer'::regnamespace)
   AND p.prosrc IN ('easeml_read_source', 'easeml_read_rows_as', 'easeml_take_snapshot',
					'easeml_refresh', 'easeml_drop_task', 'easeml_cancel', 'easeml_deploy',
					'easeml_deploy_run', 'easeml_rollback', 'easeml_run_log', 'easeml_explain',
					'easeml_cost_estimates', 'easeml_trainer_data_session',
					'easeml_trainer_attach_token', 'easeml_lock_own_tenant');
