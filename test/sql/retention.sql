-- Expiry of the scheduler's own log (easeml.purge_scheduler_log): what
-- goes, what stays however old, and who may purge.
-- (what it uses is made here and dropped at the end; try() is helpers.sql's)
CREATE ROLE regress_keeper LOGIN;
SELECT easeml.add_tenant('regress_keeper');
CREATE TABLE public.keep_pts (x float8, label text);
INSERT INTO public.keep_pts SELECT i, (ARRAY['a', 'b'])[i % 2 + 1] FROM generate_series(1, 20) i;
GRANT SELECT ON public.keep_pts TO regress_keeper;
SET ROLE regress_keeper;
INSERT INTO easeml.tasks (name, source, target)
VALUES ('keep_a', 'public.keep_pts', 'label'), ('keep_b', 'public.keep_pts', 'label');
RESET ROLE;

-- fixture(task, model, status, age): a run of the task's n-th model in
-- that status, launched and decided age ago (and finished then), its
-- launch record and a decision with two runner-ups; 'none' makes a
-- decision without a run.  Returns the decision's id.
CREATE FUNCTION pg_temp.fixture(task text, n int, status text, age interval)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	t			record;
	model		int := (SELECT id FROM easeml.models ORDER BY id OFFSET n LIMIT 1);
	run			bigint;
	dec			bigint;
BEGIN
	SELECT id, tenant INTO t FROM easeml.tasks WHERE name = task;
	IF status <> 'none' THEN
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at)
		VALUES (t.id, t.tenant, model, CASE WHEN status = 'queued' THEN 'queued' ELSE 'running' END,
				CASE WHEN status <> 'queued' THEN now() - age - interval '10 s' END)
		RETURNING id INTO run;
	END IF;
	IF status IN ('running', 'succeeded') THEN
		INSERT INTO easeml.trainer_jobs (run_id, launcher, token_sha256, submitted_at)
		VALUES (run, 'local', sha256(run::text::bytea), now() - age - interval '10 s');
	END IF;
	IF status = 'succeeded' THEN
		PERFORM easeml._finish_run(run, 'succeeded', 0, '{"score": 0.5, "n_val": 8}', NULL);
		UPDATE easeml.runs SET finished_at = now() - age, seconds = 10 WHERE id = run;
	END IF;
	INSERT INTO easeml.decisions (decided_at, task_id, tenant, model_id, run_id, policy, est_seconds)
	VALUES (now() - age - interval '10 s', t.id, t.tenant, model, run, 'fifo', 12)
	RETURNING id INTO dec;
	INSERT INTO easeml.decision_candidates (decision_id, role, rank, task_id, tenant, model_id)
	VALUES (dec, 'model', 1, t.id, t.tenant, model), (dec, 'model', 2, t.id, t.tenant, model);
	RETURN dec;
END;
$$;
CREATE TEMP TABLE fixtures (dec bigint, what text);
INSERT INTO fixtures VALUES
	(pg_temp.fixture('keep_a', 0, 'none', '40 days'), 'a: no run, old'),
	(pg_temp.fixture('keep_a', 1, 'succeeded', '40 days'), 'a: succeeded, old'),
	(pg_temp.fixture('keep_a', 2, 'succeeded', '35 days'), 'a: succeeded, old'),
	(pg_temp.fixture('keep_a', 3, 'running', '33 days'), 'a: running, old'),
	(pg_temp.fixture('keep_a', 4, 'queued', '32 days'), 'a: queued, old, latest of a'),
	(pg_temp.fixture('keep_b', 5, 'succeeded', '40 days'), 'b: succeeded, old'),
	(pg_temp.fixture('keep_b', 6, 'succeeded', '1 day'), 'b: succeeded, recent, latest of b');
-- the auto policy's choices: only the latest and the latest chosen stay
INSERT INTO easeml.policy_choices (chosen_at, setting, policy, chosen, reason, candidates, scores,
	score_unit, history_rows, models, tenants, replay_seconds)
SELECT now() - make_interval(days => 50 - i), 'default', 'hybrid:cost', i < 3, 'test ' || i,
	   '{hybrid:cost}', '{1}', 'seconds', 0, 0, 0, 0
  FROM generate_series(1, 3) i;

CREATE TEMP VIEW counts AS
SELECT (SELECT count(*) FROM easeml.decisions) AS decisions,
	   (SELECT count(*) FROM easeml.decision_candidates) AS candidates,
	   (SELECT count(*) FROM easeml.trainer_jobs) AS jobs,
	   (SELECT count(*) FROM easeml.policy_choices) AS choices,
	   (SELECT count(*) FROM easeml.runs) AS runs,
	   (SELECT count(*) FROM easeml.run_events) AS events,
	   (SELECT count(*) FROM easeml.cost_accuracy) AS cost_accuracy,
	   (SELECT count(*) FROM easeml.active_runs WHERE estimated_seconds = 12) AS active_estimated;
CREATE TEMP TABLE before AS SELECT * FROM counts;
SELECT * FROM before;

-- nothing is older than a year
SELECT * FROM easeml.purge_scheduler_log('1 year');
-- the scheduler's batches: at most max_rows rows of each table
SELECT * FROM easeml._purge_scheduler_log('30 days', 1);
-- a month: the rest of the old decisions of ended runs and their
-- runner-ups, the old launch records of ended runs, and all choices but
-- the latest and the latest chosen
SELECT * FROM easeml.purge_scheduler_log('30 days');
SELECT f.what, d.id IS NOT NULL AS kept
  FROM fixtures f LEFT JOIN easeml.decisions d ON d.id = f.dec ORDER BY f.dec;
SELECT reason, chosen FROM easeml.policy_choices ORDER BY id;
SELECT * FROM counts;
-- what no purge touches: runs, their events, the running work's estimates
SELECT c.runs = b.runs AS runs_kept, c.events = b.events AS events_kept,
	   c.active_estimated = b.active_estimated AS estimates_kept
  FROM counts c, before b;
SELECT running, chosen, reason FROM easeml.policy_status;
-- again: nothing more
SELECT * FROM easeml.purge_scheduler_log('30 days');
-- interval 0: the launch record of the recent ended run goes too; each
-- task's latest decision stays
SELECT * FROM easeml.purge_scheduler_log('0');
SELECT f.what FROM fixtures f JOIN easeml.decisions d ON d.id = f.dec ORDER BY f.dec;

-- bad input
SELECT try($$SELECT * FROM easeml.purge_scheduler_log(NULL)$$);
SELECT try($$SELECT * FROM easeml.purge_scheduler_log('-1 day')$$);
SELECT try($$SELECT * FROM easeml.purge_scheduler_log('1 month -40 days')$$);
-- tenants may not purge, and the setting is the server's
SET ROLE regress_keeper;
SELECT try($$SELECT * FROM easeml.purge_scheduler_log('1 day')$$);
SELECT try($$SELECT * FROM easeml._purge_scheduler_log('1 day', 10)$$);
SELECT try($$SET easeml.scheduler_log_retention = '30d'$$);
RESET ROLE;
SHOW easeml.scheduler_log_retention;

-- clean up
DELETE FROM easeml.policy_choices WHERE reason LIKE 'test %';
DELETE FROM easeml.tenants WHERE name = 'regress_keeper';
DROP TABLE public.keep_pts;
DROP OWNED BY regress_keeper;
DROP ROLE regress_keeper;
