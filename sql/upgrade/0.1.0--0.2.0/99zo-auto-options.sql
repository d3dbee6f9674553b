-- [autoopt] Options after "auto" ('auto:w=60') apply to every candidate
-- and to its choice, or are refused where they select what auto chooses
-- (src/core/policy_spec.c's option table says which): policy_options()
-- shows it, and policy_status's running column shows the choice with the
-- options the scheduler applies.
DROP FUNCTION easeml.policy_options();
CREATE FUNCTION easeml.policy_options(
	OUT name text, OUT type text, OUT default_value text, OUT "values" text, OUT doc text,
	OUT after_auto text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_policy_options'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml.policy_options() IS
	'the options of a policy spec NAME[:OPTION]...: name, type, default, the values it takes, what it does, and after auto: applies (to every candidate and to its choice) or refused (it selects what auto chooses)';

-- The spec an auto setting runs: the candidate of its last choice (NULL:
-- the fallback) with the setting's options after auto ('auto:w=60').
CREATE FUNCTION easeml._policy_running(policy text, chosen text)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_running'
LANGUAGE C IMMUTABLE;

CREATE OR REPLACE VIEW easeml.policy_status AS
SELECT s.setting,
	   easeml.policy_spec(s.setting) AS spec,
	   s.auto,
	   CASE WHEN s.auto THEN easeml._policy_running(s.setting, c.policy)
			ELSE easeml.policy_spec(s.setting) END AS running,
	   c.chosen_at, c.chosen, c.reason, c.candidates, c.scores, c.score_unit,
	   easeml._policy_fallback() AS fallback,
	   s.auto AND NOT coalesce(c.chosen, false) AS on_fallback,
	   CASE WHEN s.auto THEN easeml._policy_candidates() END AS auto_candidates
  FROM (SELECT setting, easeml._policy_auto(setting) AS auto
		  FROM (SELECT current_setting('easeml.policy') AS setting) s0) s
  LEFT JOIN LATERAL (SELECT * FROM easeml.policy_choices ORDER BY id DESC LIMIT 1) c ON true;
COMMENT ON VIEW easeml.policy_status IS
	'the scheduling policy in effect: the easeml.policy setting, the spec it stands for (default: auto), whether it is auto, the spec that runs (for auto: its choice with the options given after auto), auto''s last recorded choice, the fallback auto runs where its replay has not chosen (before its first choice, with too little history, or where the replay would pass its work limit), whether it runs now, and what auto chooses among';
