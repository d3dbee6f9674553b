-- [alter] sql/easeml.sql makes the same changes
-- ---------------------------------------------------------------------------
-- Changing a task after its declaration: easeml.alter_task (metric,
-- features, folds, auto_deploy; docs/sql.md).  The declaration's source
-- and target checks become easeml._check_source_target, which alter_task
-- shares; a run's quality by any metric, and its error, come from what it
-- recorded (easeml._run_quality, metrics.quality_se in easeml._score_se);
-- runs trained on a task's earlier features are never deployed
-- (tasks.features_version).  easeml.cancel of a running run returns
-- 'cancelling' (C only).  After 99zb-score-errors.sql, whose _score_se and
-- _best_deployable it changes.
-- ---------------------------------------------------------------------------

-- The standard error of a run's score (the quality of metric) from what the
-- trainer recorded (docs/results.md): its "score_se" when the run was
-- scored by this metric, else [alter] the error of that metric's quality
-- (a task whose metric easeml.alter_task changed), else the metric's own
-- error where the quality is the metric itself, else the binomial error of
-- an accuracy.  NULL when unknown.
CREATE OR REPLACE FUNCTION easeml._score_se(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(
		CASE WHEN metrics ->> 'metric' = metric THEN (metrics ->> 'score_se')::float8 END,
		(metrics -> 'quality_se' ->> metric)::float8,
		CASE WHEN metric IN ('accuracy', 'balanced_accuracy', 'macro_f1', 'roc_auc', 'r2')
			 THEN (metrics ->> (metric || '_se'))::float8 END,
		easeml._binomial_se(metrics, metric, score))
$$;

-- [alter] The quality (runs.score, docs/data.md section 7) of a
-- succeeded run by a metric, from what the run recorded: its own score for
-- the metric it was trained for (metrics.metric; a custom trainer's score,
-- or one recorded before 0.2.0, is of accuracy or R^2), the trainer's
-- quality of each metric (metrics.quality, the mean over folds), else from
-- the metric's value where the mapping allows (accuracy, balanced
-- accuracy, macro F1, ROC AUC and R^2 are their own quality; log loss and,
-- through R^2, RMSE on one validation split).  NULL when the run did not
-- record enough (MAE without metrics.quality): the run has no score by
-- that metric.
CREATE FUNCTION easeml._run_quality(metrics jsonb, metric text)
RETURNS float8
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE
		WHEN jsonb_typeof(metrics -> 'score') IS DISTINCT FROM 'number' THEN NULL
		WHEN metrics ->> 'metric' = metric
			 OR (NOT metrics ? 'metric' AND (metrics ? 'custom' OR metric IN ('accuracy', 'r2')))
			THEN (metrics ->> 'score')::float8
		WHEN jsonb_typeof(metrics -> 'quality' -> metric) = 'number'
			THEN (metrics -> 'quality' ->> metric)::float8
		WHEN jsonb_typeof(metrics -> metric) IS DISTINCT FROM 'number' THEN NULL
		WHEN metric IN ('accuracy', 'balanced_accuracy', 'macro_f1', 'roc_auc', 'r2')
			THEN (metrics ->> metric)::float8
		WHEN metrics ? 'folds' THEN NULL
		WHEN metric = 'log_loss' THEN exp(-least((metrics ->> 'log_loss')::float8, 700))
		-- R^2 = 1 - (RMSE / RMSE of the mean)^2 on the same rows
		WHEN metric = 'rmse' AND jsonb_typeof(metrics -> 'r2') = 'number'
			THEN 1 - sqrt(greatest(1 - (metrics ->> 'r2')::float8, 0))
	END
$$;

-- The source and target checks of a declaration (easeml._validate_task),
-- also made by easeml.alter_task: the source exists, is not temporary nor
-- a catalog (easeml._check_source), is a table or view, has the target
-- column, numeric for a regression.  Returns the source's qualified name.
CREATE FUNCTION easeml._check_source_target(t easeml.tasks)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	relkind		"char";
	relname		text;
	tgt			record;
BEGIN
	SELECT c.relkind, format('%I.%I', n.nspname, c.relname)
	  INTO relkind, relname
	  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE c.oid = t.source;
	IF relkind IS NULL THEN
		RAISE EXCEPTION 'source relation with OID % does not exist', t.source::oid
			USING ERRCODE = 'undefined_table';
	END IF;
	PERFORM easeml._check_source(t.source);
	IF relkind NOT IN ('r', 'p', 'v', 'm', 'f') THEN
		RAISE EXCEPTION '"%" is not a table or view', relname
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'The source must be a table, partitioned table, view, materialized view or foreign table.';
	END IF;

	-- the target column
	SELECT a.attname, a.atttypid INTO tgt
	  FROM pg_attribute a
	 WHERE a.attrelid = t.source AND a.attname = t.target
	   AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'target column "%" does not exist in "%"', t.target, relname
			USING ERRCODE = 'undefined_column',
				  HINT = 'Columns of ' || relname || ': ' || easeml._column_list(t.source) || '.';
	END IF;
	IF t.kind = 'regression' AND NOT easeml._numeric_type(tgt.atttypid) THEN
		RAISE EXCEPTION 'target column "%" has type %, but a regression target must be numeric',
			t.target, format_type(tgt.atttypid, NULL)
			USING ERRCODE = 'datatype_mismatch',
				  HINT = 'Declare the task with kind = ''classification'', or cast the target to a number in a view.';
	END IF;
	RETURN relname;
END;
$$;

-- Record how a run ended.  Called by the scheduler; invalid trainer output
-- fails the run instead of the statement, so a run never stays 'running'.
CREATE OR REPLACE FUNCTION easeml._finish_run(run_id bigint, new_status text, exit_code int,
								   metrics text, error text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	m			jsonb;
	sc			float8;
	st			text := new_status;
	err			text := error;
BEGIN
	IF metrics IS NOT NULL THEN
		BEGIN
			m := metrics::jsonb;
		EXCEPTION WHEN others THEN
			m := NULL;
			st := 'failed';
			err := 'trainer wrote invalid metrics: ' || SQLERRM;
		END;
	END IF;
	IF st = 'succeeded' THEN
		IF m IS NULL OR jsonb_typeof(m -> 'score') IS DISTINCT FROM 'number' THEN
			st := 'failed';
			err := coalesce(err, 'trainer reported no score');
		ELSE
			sc := (m ->> 'score')::float8;
			-- [alter] the task's metric changed while the run trained
			-- (easeml.alter_task): its score is the quality of the new one
			SELECT CASE WHEN m ? 'metric' AND m ->> 'metric' IS DISTINCT FROM tm.metric
						THEN easeml._run_quality(m, tm.metric) ELSE sc END
			  INTO sc
			  FROM (SELECT coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric
					  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
					 WHERE r.id = _finish_run.run_id) tm;
		END IF;
	END IF;
	UPDATE easeml.runs r
	   SET status = st,
		   finished_at = clock_timestamp(),
		   seconds = extract(epoch FROM clock_timestamp() - coalesce(r.started_at, r.queued_at)),
		   exit_code = _finish_run.exit_code,
		   metrics = m,
		   -- [refit] a refit's score is measured on rows it trained on: no
		   -- selection score (its metrics keep it)
		   score = CASE WHEN st = 'succeeded' AND r.purpose = 'select' THEN sc END,
		   error = err
	 WHERE r.id = run_id AND r.status IN ('queued', 'running');
	PERFORM easeml._keep_artifacts(run_id);
END;
$$;

-- [alter] Whether a run read the task's current features: a run of a
-- snapshot version before the task's features changed (features_version)
-- did not, and cannot serve predictions.
CREATE FUNCTION easeml._has_features(t easeml.tasks, r easeml.runs)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.features_version IS NULL OR r.snapshot_version >= t.features_version
$$;

-- The run deploy('best') and automatic deployment pick: the first run the
-- leaderboard ranks (among runs within one standard error of the top
-- score, the faster) whose model easeml can apply (a built-in family,
-- artifact stored, and [alter] trained on the task's current features:
-- easeml._has_features); results on an older snapshot only when the
-- current one has none.
CREATE OR REPLACE FUNCTION easeml._best_deployable(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT l.run_id
	  FROM easeml.leaderboard l
	  JOIN easeml.tasks t ON t.id = l.task_id
	  JOIN easeml.runs r ON r.id = l.run_id
	 WHERE l.task_id = _best_deployable.task_id AND l.family <> 'external'
	   AND easeml._has_features(t, r)
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = l.run_id)
	 ORDER BY l.rank
	 LIMIT 1
$$;

-- easeml.deploy as the caller (src/sql/sql_deploy.c calls it as the bootstrap
-- superuser with the caller's role): what is 'best', 'latest' or a run id
-- in decimal.  Returns the deployed run's id.
CREATE OR REPLACE FUNCTION easeml._deploy(caller name, task text, what text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	r			easeml.runs;
	rid			bigint;
	strategy	text;
	current		bigint;
BEGIN
	t := easeml._own_task(caller, task);
	IF what IS NULL THEN
		RAISE EXCEPTION 'what to deploy must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass ''best'', ''latest'' or a run id.';
	END IF;
	PERFORM easeml._lock_deployments(t.id);
	IF what = 'best' THEN
		strategy := 'best';
		rid := easeml._best_deployable(t.id);
	ELSIF what = 'latest' THEN
		strategy := 'latest';
		SELECT r2.id INTO rid FROM easeml.runs r2 JOIN easeml.models m ON m.id = r2.model_id
		 WHERE r2.task_id = t.id AND r2.status = 'succeeded' AND m.family <> 'external'
		   AND r2.purpose = 'select' AND easeml._has_features(t, r2)
		   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = r2.id)
		 ORDER BY r2.finished_at DESC, r2.id DESC LIMIT 1;
	ELSIF what ~ '^[0-9]{1,18}$' THEN
		strategy := 'run';
		rid := what::bigint;
	ELSE
		RAISE EXCEPTION 'cannot deploy "%"', what
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass ''best'', ''latest'' or a run id.';
	END IF;
	IF rid IS NULL THEN
		RAISE EXCEPTION 'task "%" has no succeeded run with a stored artifact yet', t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Wait for a run to succeed: SELECT * FROM easeml.task_overview shows the progress.';
	END IF;

	-- a run of another task, or of another tenant, is one this task lacks
	SELECT * INTO r FROM easeml.runs r2 WHERE r2.id = rid AND r2.task_id = t.id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'run % is not a run of task "%"', rid, t.name
			USING ERRCODE = 'undefined_object',
				  HINT = format('SELECT run_id, model, score FROM easeml.leaderboard WHERE task = %L lists its succeeded runs.', t.name);
	END IF;
	IF r.purpose = 'refit' THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: it is the refit of run % on every row', rid, t.name, r.refit_of
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('Deploy run %s: with refit_all on, its refit on every row predicts.', r.refit_of);
	END IF;
	IF r.status <> 'succeeded' THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: it is %', rid, t.name, r.status
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Only succeeded runs can be deployed; easeml.leaderboard lists them.';
	END IF;
	IF (SELECT m.family FROM easeml.models m WHERE m.id = r.model_id) = 'external' THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: a custom trainer trained it', rid, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'easeml.predict reads the artifacts of the built-in families only; deploy a run of one of them.';
	END IF;
	IF NOT easeml._has_features(t, r) THEN
		RAISE EXCEPTION 'run % of task "%" cannot be deployed: it was trained on the task''s earlier features', rid, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('easeml.alter_task changed the features at snapshot version %s; deploy a run of that version or later.', t.features_version);
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = rid) THEN
		RAISE EXCEPTION 'run % of task "%" has no stored artifact', rid, t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Its trained parameters were not kept (see easeml.artifact_max_bytes); deploy another run.';
	END IF;

	SELECT d.run_id INTO current FROM easeml.deployments d WHERE d.task_id = t.id AND d.active;
	IF current = rid THEN
		RAISE NOTICE 'task "%" deploys this run already', t.name;
		RETURN rid;
	END IF;
	PERFORM easeml._activate(t.id, rid, strategy, caller);
	IF t.auto_deploy AND rid IS DISTINCT FROM easeml._best_deployable(t.id) THEN
		RAISE NOTICE 'task "%" deploys its best run automatically: a better run that finishes will replace this one', t.name
			USING HINT = format('UPDATE easeml.tasks SET auto_deploy = false WHERE name = %L keeps this deployment.', t.name);
	END IF;
	RETURN rid;
END;
$$;

-- easeml.rollback as the caller: the active deployment is rolled back and
-- the latest earlier one that was not, and whose run still has its
-- artifact, is active again.  Returns that run's id.
CREATE OR REPLACE FUNCTION easeml._rollback(caller name, task text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	cur			easeml.deployments;
	prev		easeml.deployments;
	refit		bigint;
BEGIN
	t := easeml._own_task(caller, task);
	PERFORM easeml._lock_deployments(t.id);
	SELECT * INTO cur FROM easeml.deployments d WHERE d.task_id = t.id AND d.active;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" has no active deployment to roll back', t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('SELECT easeml.deploy(%L, ''best'') deploys its best run.', t.name);
	END IF;
	SELECT * INTO prev FROM easeml.deployments d
	 WHERE d.task_id = t.id AND d.id < cur.id AND d.rolled_back_at IS NULL
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = d.run_id)
	   AND easeml._has_features(t, (SELECT r FROM easeml.runs r WHERE r.id = d.run_id))
	 ORDER BY d.id DESC LIMIT 1;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" has no earlier deployment to roll back to', t.name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('SELECT * FROM easeml.deployments WHERE task_id = %s shows its deployments; easeml.deploy picks another run.', t.id);
	END IF;
	UPDATE easeml.deployments d
	   SET active = false, rolled_back_at = clock_timestamp(), rolled_back_by = caller
	 WHERE d.id = cur.id;
	UPDATE easeml.deployments d SET active = true WHERE d.id = prev.id;
	-- [refit] the deployment returned to gets its refit (one that failed
	-- or was cancelled, or whose artifact was not kept, is queued again);
	-- the others' are cancelled
	IF prev.refitted_at IS NOT NULL AND easeml._deployment_artifact(prev) = prev.run_id THEN
		prev.refitted_at := NULL;
		UPDATE easeml.deployments d SET refitted_at = NULL WHERE d.id = prev.id;
	END IF;
	IF prev.refitted_at IS NULL THEN
		refit := easeml._refit_for(t.id, prev.run_id);
		IF refit IS NOT NULL THEN
			UPDATE easeml.deployments d
			   SET refit_run_id = refit,
				   refitted_at = CASE WHEN (SELECT x.status FROM easeml.runs x WHERE x.id = refit) = 'succeeded'
									  THEN clock_timestamp() END
			 WHERE d.id = prev.id;
			prev.refit_run_id := refit;
		END IF;
	END IF;
	PERFORM easeml._cancel_refits(t.id, prev.refit_run_id, prev.run_id);
	PERFORM easeml._notify('deployment', t.id, prev.run_id);
	IF t.auto_deploy AND prev.run_id IS DISTINCT FROM easeml._best_deployable(t.id) THEN
		RAISE NOTICE 'task "%" deploys its best run automatically: a better run that finishes will replace this one', t.name
			USING HINT = format('UPDATE easeml.tasks SET auto_deploy = false WHERE name = %L keeps this deployment.', t.name);
	END IF;
	RETURN prev.run_id;
END;
$$;

-- ===========================================================================
-- [alter] Changing a task after its declaration: easeml.alter_task
-- (src/sql/sql_snapshot.c; docs/sql.md).  The metric ranks the runs again from
-- what they recorded; new features or folds take a new snapshot version,
-- as easeml.refresh does, and the runs of older versions stay with theirs.
-- ===========================================================================

-- Whether easeml.alter_task of this backend is writing the task's row now:
-- the tasks_validate trigger lets metric, features and folds change only
-- then.  Backend memory: no SQL sets it.
CREATE FUNCTION easeml._altering(task_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'easeml_altering'
LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION easeml._altering(bigint) FROM PUBLIC;

-- The row easeml.alter_task writes, checked as the declaration checks a
-- new task: the metric for the task's kind (easeml._check_data_options),
-- and for new features or folds the source, the target and the data
-- (easeml._check_source_target, easeml._declare_data, which reads the
-- source as the caller and says which columns are features).  Called by
-- easeml.alter_task as the tenant, in a restricted, read-only section; it
-- reads only the caller's own task and writes nothing.  NULL leaves a
-- value as it is; folds => 1 goes back to one validation split.
CREATE FUNCTION easeml._altered_task(task_id bigint, metric text, features text[], folds int,
									 auto_deploy boolean)
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
	IF (t.features, t.folds) IS DISTINCT FROM (old.features, old.folds) THEN
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

-- What easeml.alter_task does as the superuser with the row
-- easeml._altered_task checked (src/sql/sql_snapshot.c sets easeml._altering for
-- it): the row is written; under a new metric every succeeded run of the
-- task is scored by it (easeml._run_quality) and, when the task deploys
-- automatically, its best run is deployed; under new features the
-- deployment that read the old ones is retired.  Returns the snapshot
-- version to take (new features or folds), else 0.
CREATE FUNCTION easeml._apply_alter(caller name, t easeml.tasks)
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
	IF (t.features, t.folds) IS DISTINCT FROM (old.features, old.folds) THEN
		version := coalesce(old.snapshot_version, 0) + 1;
	END IF;
	UPDATE easeml.tasks k
	   SET metric = t.metric,
		   features = t.features,
		   feature_types = t.feature_types,
		   left_out = t.left_out,
		   folds = t.folds,
		   auto_deploy = t.auto_deploy,
		   features_version = CASE WHEN t.features IS DISTINCT FROM old.features THEN version
								   ELSE k.features_version END
	 WHERE k.id = t.id;

	IF t.features IS DISTINCT FROM old.features THEN
		-- the deployed run read other columns: predict must not apply it,
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
REVOKE ALL ON FUNCTION easeml._apply_alter(name, easeml.tasks) FROM PUBLIC;

CREATE FUNCTION easeml.alter_task(task text, metric text DEFAULT NULL, features text[] DEFAULT NULL,
								  folds int DEFAULT NULL, auto_deploy boolean DEFAULT NULL)
RETURNS easeml.tasks
AS 'MODULE_PATHNAME', 'easeml_alter_task'
LANGUAGE C VOLATILE
-- [identity] it runs statements as a superuser and as the caller
-- (src/module/identity.c): never with the caller's search_path
SET search_path = pg_catalog, pg_temp
-- new features or folds profile and copy the source, as refresh does
SET jit = off;
COMMENT ON FUNCTION easeml.alter_task(text, text, text[], int, boolean) IS
	'change the metric, features, folds or auto_deploy of one of your tasks; returns its row';

-- a tenant's UPDATE of these columns reaches the tasks_validate trigger,
-- which says to use easeml.alter_task (instead of "permission denied")
GRANT UPDATE (metric, features, folds) ON easeml.tasks TO PUBLIC;


COMMENT ON FUNCTION easeml.cancel(bigint) IS
	'cancel a queued or running run of yours; returns cancelled, or cancelling while the trainer of a running run is being stopped';
