-- [grammar] One source of truth for the policy: the easeml.policy setting,
-- checked by its check hook.  easeml.set_policy() wrote a row in
-- easeml.settings that overrode the setting, so SHOW easeml.policy could
-- name a policy that did not run; both go.  A row left by it is reported
-- with the command that sets the same policy (ALTER SYSTEM cannot run
-- inside the upgrade's transaction).
DO $$
DECLARE
	pinned		text;
BEGIN
	SELECT value INTO pinned FROM easeml.settings WHERE key = 'policy';
	IF pinned IS NOT NULL AND pinned IS DISTINCT FROM current_setting('easeml.policy', true) THEN
		RAISE WARNING 'easeml.set_policy() had set the policy to %, which easeml no longer reads', pinned
			USING DETAIL = 'The easeml.policy setting (now ' || coalesce(current_setting('easeml.policy', true), 'default') || ') is the only source of the policy.',
				  HINT = format('To keep it: ALTER SYSTEM SET easeml.policy = %L; SELECT pg_reload_conf();', pinned);
	END IF;
END;
$$;
DROP VIEW easeml.policy_status;		-- read the row; made again below
DROP FUNCTION easeml.set_policy(text);
DROP FUNCTION easeml._policy_valid(text);
-- out of the extension first: that also takes it off the list of
-- configuration tables pg_dump dumps (DROP TABLE alone leaves its oid there)
ALTER EXTENSION easeml DROP TABLE easeml.settings;
DROP TABLE easeml.settings;

-- The policy grammar's options, from the table the parser reads
-- (src/core/policy_spec.c; docs/scheduler.md 3 holds the same table).
CREATE FUNCTION easeml.policy_options(
	OUT name text, OUT type text, OUT default_value text, OUT "values" text, OUT doc text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_policy_options'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml.policy_options() IS
	'the options of a policy spec NAME[:OPTION]...: name, type, default, the values it takes, what it does';

-- What an easeml.policy setting stands for: its named spec expanded
-- ('default' -> 'auto', 'tenant_bo' -> 'rr:cost:acq=ei').
CREATE FUNCTION easeml.policy_spec(policy text)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_spec'
LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION easeml.policy_spec(text) IS
	'the spec a policy setting stands for: a named spec (default, tenant_bo) replaced by its expansion; 22023 for a spec easeml does not know';

CREATE FUNCTION easeml._policy_candidates()
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_candidates'
LANGUAGE C IMMUTABLE;
CREATE FUNCTION easeml._policy_auto(policy text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'easeml_policy_auto'
LANGUAGE C IMMUTABLE STRICT;

-- policy_status reads the setting alone, names the spec it stands for and
-- asks the parser (not a pattern) whether it is auto.
CREATE VIEW easeml.policy_status AS
SELECT s.setting,
	   easeml.policy_spec(s.setting) AS spec,
	   s.auto,
	   CASE WHEN s.auto THEN coalesce(c.policy, easeml._policy_fallback())
			ELSE easeml.policy_spec(s.setting) END AS running,
	   c.chosen_at, c.chosen, c.reason, c.candidates, c.scores, c.score_unit,
	   easeml._policy_fallback() AS fallback,
	   s.auto AND NOT coalesce(c.chosen, false) AS on_fallback,
	   CASE WHEN s.auto THEN easeml._policy_candidates() END AS auto_candidates
  FROM (SELECT setting, easeml._policy_auto(setting) AS auto
		  FROM (SELECT current_setting('easeml.policy') AS setting) s0) s
  LEFT JOIN LATERAL (SELECT * FROM easeml.policy_choices ORDER BY id DESC LIMIT 1) c ON true;
COMMENT ON VIEW easeml.policy_status IS
	'the scheduling policy in effect: the easeml.policy setting, the spec it stands for (default: auto), whether it is auto, the spec that runs, auto''s last recorded choice, the fallback auto runs where its replay has not chosen (before its first choice, with too little history, or where the replay would pass its work limit), whether it runs now, and what auto chooses among';
REVOKE ALL ON easeml.policy_status FROM PUBLIC;
