
-- The "auto" policy (the default, easeml.policy = 'default'): the scheduler
-- replays its candidates (docs/scheduler.md "The auto policy") on the
-- installed history, off the decision path, and runs the one that reached the loss targets soonest
-- (src/core/autopolicy.c, docs/scheduler.md "The auto policy").  Every choice it
-- makes is recorded here, with why; admins read it (superuser only, like
-- the history it summarises).
CREATE TABLE easeml.policy_choices (
	id				bigserial PRIMARY KEY,
	chosen_at		timestamptz NOT NULL DEFAULT now(),
	setting			text NOT NULL,		-- easeml.policy in effect then
	policy			text NOT NULL,		-- the spec "auto" runs from now on
	chosen			boolean NOT NULL,	-- false: no replay chose (reason)
	reason			text NOT NULL,
	candidates		text[] NOT NULL,
	scores			float8[] NOT NULL,	-- per candidate, NaN: not replayed
	score_unit		text NOT NULL CHECK (score_unit IN ('seconds', 'runs')),
	kind			text,				-- the history rows' task kind
	history_rows	int NOT NULL,
	models			int NOT NULL,
	tenants			int NOT NULL,
	replay_seconds	float8 NOT NULL
);
COMMENT ON TABLE easeml.policy_choices IS
	'choices of the auto policy (the default): candidates replayed on the installed history, their scores (geometric mean of the simulated time to loss 0.01/0.005/0.002) and the winner';
REVOKE ALL ON easeml.policy_choices FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.policy_choices', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.policy_choices_id_seq', '');

-- What policy runs now and why: the setting, and for auto its last choice.
CREATE VIEW easeml.policy_status AS
SELECT s.setting,
	   s.setting ~ '^(auto|default)(:|$)' AS auto,
	   CASE WHEN s.setting ~ '^(auto|default)(:|$)'
			THEN coalesce(c.policy, 'hybrid:cost') ELSE s.setting END AS running,
	   c.chosen_at, c.chosen, c.reason, c.candidates, c.scores, c.score_unit
  FROM (SELECT coalesce((SELECT value FROM easeml.settings WHERE key = 'policy'),
						current_setting('easeml.policy')) AS setting) s
  LEFT JOIN LATERAL (SELECT * FROM easeml.policy_choices ORDER BY id DESC LIMIT 1) c ON true;
COMMENT ON VIEW easeml.policy_status IS
	'the scheduling policy in effect: the setting (easeml.set_policy or the easeml.policy GUC), whether it is auto, the spec that runs, and auto''s last recorded choice';
REVOKE ALL ON easeml.policy_status FROM PUBLIC;
