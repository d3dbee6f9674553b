-- [scheduler] sql/easeml.sql makes the same changes: the auto policy's fallback
-- (issue 23), named by the library rather than hard-coded in the view;
-- policy_status says when it runs.
-- What "auto" runs where its replay cannot choose (src/core/policy.h).
CREATE FUNCTION easeml._policy_fallback()
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_fallback'
LANGUAGE C IMMUTABLE;

-- What policy runs now and why: the setting, and for auto its last choice
-- or, where the replay has not chosen, the fallback it runs instead.
CREATE OR REPLACE VIEW easeml.policy_status AS
SELECT s.setting,
	   s.auto,
	   CASE WHEN s.auto THEN coalesce(c.policy, easeml._policy_fallback())
			ELSE s.setting END AS running,
	   c.chosen_at, c.chosen, c.reason, c.candidates, c.scores, c.score_unit,
	   easeml._policy_fallback() AS fallback,
	   s.auto AND NOT coalesce(c.chosen, false) AS on_fallback
  FROM (SELECT setting, setting ~ '^(auto|default)(:|$)' AS auto
		  FROM (SELECT coalesce((SELECT value FROM easeml.settings WHERE key = 'policy'),
								current_setting('easeml.policy')) AS setting) s0) s
  LEFT JOIN LATERAL (SELECT * FROM easeml.policy_choices ORDER BY id DESC LIMIT 1) c ON true;
COMMENT ON VIEW easeml.policy_status IS
	'the scheduling policy in effect: the setting (easeml.set_policy or the easeml.policy GUC), whether it is auto, the spec that runs, auto''s last recorded choice, the fallback auto runs where its replay has not chosen (before its first choice, with too little history, or where the replay would pass its work limit) and whether it runs now';
REVOKE ALL ON easeml.policy_status FROM PUBLIC;
