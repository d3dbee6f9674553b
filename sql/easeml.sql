/*-------------------------------------------------------------------------
 *
 * easeml.sql
 *	  The easeml catalog: tenants, tasks, candidate models, runs, the
 *	  scheduler's decisions, and the views and functions users and admins
 *	  call.  Built into sql/easeml--<version>.sql by the Makefile.
 *
 * Security model (docs/architecture.md):
 *	- A tenant is a database role registered in easeml.tenants.
 *	- Row-level security limits every tenant to its own tasks, runs and
 *	  decisions; views are security_invoker so the same rules apply.
 *	- Tenants write runs only by queueing them (column privileges and the
 *	  runs_guard trigger); dropping a task and cancelling a run go through C
 *	  functions that check ownership in their statement and run it as the
 *	  bootstrap superuser (src/sql/sql_tenant.c; they cannot be SECURITY
 *	  DEFINER: they need to know their caller).
 *	- The declaration reads the source as the tenant, read-only, in a
 *	  security-restricted operation (easeml._read_source), as the trainer
 *	  does (docs/security.md).
 *	- Nothing a tenant writes is spliced into SQL unquoted: identifiers are
 *	  checked against pg_attribute and always formatted with %I.
 *
 * IDENTIFICATION
 *	  sql/easeml.sql
 *
 *-------------------------------------------------------------------------
 */

\echo Use "CREATE EXTENSION easeml" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Tenants
-- ---------------------------------------------------------------------------
CREATE TABLE easeml.tenants (
	name		name PRIMARY KEY,
	max_parallel int CHECK (max_parallel IS NULL OR max_parallel > 0),
	created_at	timestamptz NOT NULL DEFAULT now(),
	max_tasks	int CHECK (max_tasks IS NULL OR max_tasks > 0),
	max_rows	bigint CHECK (max_rows IS NULL OR max_rows > 0),
	-- [binding] one tenant per role: a role renamed after add_tenant is
	-- still its old tenant (easeml.add_tenant refuses a second row)
	role_oid	oid CONSTRAINT tenants_role_oid_key UNIQUE,
	-- [budget] the time budget of a task declared without one (seconds;
	-- easeml.set_tenant_budget); NaN and infinities are refused
	default_budget_seconds float8
		CONSTRAINT tenants_default_budget_seconds_check
		CHECK (default_budget_seconds > 0 AND default_budget_seconds < 'Infinity')
);
COMMENT ON TABLE easeml.tenants IS
	'roles allowed to declare tasks; name is the tenant''s database role';
COMMENT ON COLUMN easeml.tenants.role_oid IS
	'the role registered under name: a role made later with the same name is not the tenant';

-- [binding] A tenant is the role registered under its name, not any role
-- that has the name later (issue 22 review): DROP ROLE lab_a; CREATE ROLE
-- lab_a would otherwise make the new role the owner of the old one's
-- tasks, runs, artifacts and deployments.  Each row records its role's
-- object id when it is inserted (easeml.add_tenant, or a superuser's
-- restore, which binds the restored tenants to the roles of this cluster).
CREATE FUNCTION easeml._bind_tenant()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	NEW.role_oid := (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = NEW.name);
	RETURN NEW;
END;
$$;

CREATE TRIGGER tenants_bind
	BEFORE INSERT ON easeml.tenants
	FOR EACH ROW EXECUTE FUNCTION easeml._bind_tenant();
REVOKE ALL ON FUNCTION easeml._bind_tenant() FROM PUBLIC;

-- [binding] The current role's name when it is the role registered as
-- that tenant, else NULL: the row-level security of every table with a
-- tenant column compares with it (once per query), so a role that only
-- has a registered tenant's name sees none of its rows.
CREATE FUNCTION easeml._bound_tenant()
RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT t.name FROM easeml.tenants t
	 WHERE t.name OPERATOR(pg_catalog.=) CURRENT_USER
	   AND t.role_oid OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
											   WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
$$;

-- ---------------------------------------------------------------------------
-- Candidate models (the catalog every task selects from)
-- ---------------------------------------------------------------------------
CREATE TABLE easeml.models (
	id			serial PRIMARY KEY,
	name		text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9_.-]+$'),
	family		text NOT NULL,
	params		jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object'),
	kinds		text[] NOT NULL DEFAULT '{classification}'
		CHECK (cardinality(kinds) > 0 AND kinds <@ ARRAY['classification', 'regression']),
	needs_image boolean NOT NULL DEFAULT false,
	-- [trust] bounded (easeml._validate_model says why); NaN is refused by
	-- the upper bound ('NaN' > 0 holds in PostgreSQL)
	cost_factor float8 NOT NULL DEFAULT 1
		CHECK (cost_factor >= 1e-6 AND cost_factor <= 1e6),
	enabled		boolean NOT NULL DEFAULT true,
	builtin		boolean NOT NULL DEFAULT false,
	created_at	timestamptz NOT NULL DEFAULT now(),
	/*
	 * the device kinds a candidate can use, in order of preference; a custom
	 * trainer's candidate has family 'external' and a command
	 */
	device_kinds text[] NOT NULL DEFAULT '{cpu}'
		CHECK (cardinality(device_kinds) >= 1 AND array_position(device_kinds, NULL) IS NULL
			   AND device_kinds <@ ARRAY['cpu', 'cuda']),
	command text[]
		CHECK (command IS NULL OR (cardinality(command) >= 1
			   AND array_position(command, NULL) IS NULL AND command[1] LIKE '/%')),
	/*
	 * [spaces] a generated candidate (docs/scheduler.md 7.9): the task it
	 * was generated for (only that task trains it), the run it was
	 * proposed around and the catalog model it descends from
	 */
	generated_for bigint,
	generated_by_run bigint,
	parent_model int REFERENCES easeml.models (id) ON DELETE SET NULL,
	CONSTRAINT models_external_command CHECK ((family = 'external') = (command IS NOT NULL))
);
COMMENT ON TABLE easeml.models IS
	'candidate model configurations; family names a trainer implementation, params its settings';
COMMENT ON COLUMN easeml.models.generated_for IS
	'generated candidates: the task they were generated for (only it may train them); NULL for the catalog''s own models';
COMMENT ON COLUMN easeml.models.generated_by_run IS
	'generated candidates: the run whose configuration they were proposed around';
COMMENT ON COLUMN easeml.models.parent_model IS
	'generated candidates: the catalog model they descend from, whose history the scheduler''s prior borrows';
-- a task's generated candidates: counted at each proposal, read by the
-- scheduler's load and the tenants' row security
CREATE INDEX models_generated_for_idx ON easeml.models (generated_for)
	WHERE generated_for IS NOT NULL;

-- ---------------------------------------------------------------------------
-- Tasks
-- ---------------------------------------------------------------------------
CREATE TABLE easeml.tasks (
	id			bigserial PRIMARY KEY,
	-- [rename] deferrable: easeml.rename_tenant moves a tenant's tasks to
	-- its new name in the transaction that renames it
	tenant		name NOT NULL DEFAULT current_user
		REFERENCES easeml.tenants (name) ON DELETE CASCADE DEFERRABLE,
	name		text NOT NULL,
	source		regclass NOT NULL,
	target		text NOT NULL,
	features	text[],
	kind		text NOT NULL DEFAULT 'classification'
		CHECK (kind IN ('classification', 'regression')),
	status		text NOT NULL DEFAULT 'active'
		CHECK (status IN ('active', 'paused', 'completed', 'failed')),
	status_reason text,
	val_fraction float8 NOT NULL DEFAULT 0.2
		CHECK (val_fraction >= 0.05 AND val_fraction <= 0.5),
	seed		bigint NOT NULL DEFAULT 42,
	max_runs	int CHECK (max_runs IS NULL OR max_runs > 0),
	input_shape int[],
	n_rows		bigint,
	n_classes	int,
	created_at	timestamptz NOT NULL DEFAULT now(),
	-- [trust] failed runs before this time are forgotten: their candidates
	-- are tried again (set when a failed or completed task is taken up)
	reactivated_at timestamptz,
	-- data (docs/data.md): snapshots, the ranking metric, cross-validation,
	-- missing values, and what the declaration chose
	snapshot	boolean NOT NULL DEFAULT true,
	snapshot_version int CHECK (snapshot_version >= 0),
	metric		text CHECK (metric IN ('accuracy', 'balanced_accuracy', 'macro_f1', 'log_loss',
									   'roc_auc', 'r2', 'rmse', 'mae')),
	folds		int CHECK (folds BETWEEN 2 AND 10),
	impute		text NOT NULL DEFAULT 'mean'
		CHECK (impute IN ('mean', 'median', 'most_frequent')),
	missing_indicator boolean NOT NULL DEFAULT true,
	feature_types text[],
	left_out	jsonb,
	measured_at timestamptz,	/* when n_rows and n_classes were measured */
	auto_deploy boolean NOT NULL DEFAULT true,	/* deploy the best run when it changes */
	/*
	 * the snapshot version from which the task has its current features (set
	 * by easeml.alter_task; NULL: since its declaration).  A run of an
	 * earlier version read other columns: it stays on the leaderboard
	 * (stale) but is never deployed.
	 */
	features_version int,
	refit_all	boolean NOT NULL DEFAULT true,	/* deploying a run refits it on every row */
	budget_seconds float8		/* the search's time budget; NULL: none */
		CONSTRAINT tasks_budget_seconds_check
		CHECK (budget_seconds > 0 AND budget_seconds < 'Infinity'),
	UNIQUE (tenant, name)
);
COMMENT ON TABLE easeml.tasks IS
	'learning tasks: one INSERT declares a task over a table or view; validated at INSERT';

-- ---------------------------------------------------------------------------
-- Runs: one row per training run; every status change is also logged in
-- easeml.run_events.
-- ---------------------------------------------------------------------------
CREATE TABLE easeml.runs (
	id			bigserial PRIMARY KEY,
	task_id		bigint NOT NULL REFERENCES easeml.tasks (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	model_id	int NOT NULL REFERENCES easeml.models (id),
	slot		int,
	status		text NOT NULL DEFAULT 'queued'
		CHECK (status IN ('queued', 'running', 'succeeded', 'failed',
						  'cancelled', 'interrupted')),
	requested_by text NOT NULL DEFAULT 'scheduler'
		CHECK (requested_by IN ('scheduler', 'user')),
	queued_at	timestamptz NOT NULL DEFAULT now(),
	started_at	timestamptz,
	finished_at timestamptz,
	seconds		float8,
	score		float8,
	metrics		jsonb,
	error		text,
	pid			int,
	exit_code	int,
	epoch		int,
	loss		float8,
	progress_at timestamptz,
	cancel_requested boolean NOT NULL DEFAULT false,
	log_path	text,
	changed_by	xid8,			/* the transaction that last wrote the row */
	snapshot_version int,		/* the task's snapshot version it trains on */
	device		text,			/* the device it was placed on */
	device_kind text CHECK (device_kind IN ('cpu', 'cuda')),
	/*
	 * a selection run (trained on the split, scored on the validation rows),
	 * the refit of one on every row, or [ensemble] an ensemble of the
	 * task's selection runs
	 */
	purpose		text NOT NULL DEFAULT 'select'
		CONSTRAINT runs_purpose_check CHECK (purpose IN ('select', 'refit', 'ensemble')),
	refit_of bigint REFERENCES easeml.runs (id) ON DELETE CASCADE,
	CONSTRAINT runs_refit_of_check CHECK ((purpose = 'refit') = (refit_of IS NOT NULL))
);
CREATE INDEX runs_task_model_idx ON easeml.runs (task_id, model_id);
CREATE INDEX runs_active_idx ON easeml.runs (status)
	WHERE status IN ('queued', 'running');
-- a candidate is in flight at most once per task, besides the refits of
-- runs of it
CREATE UNIQUE INDEX runs_in_flight_idx ON easeml.runs (task_id, model_id)
	WHERE status IN ('queued', 'running') AND purpose = 'select';
-- [ensemble] and one ensemble of a task (easeml._queue_ensemble)
CREATE UNIQUE INDEX runs_ensemble_in_flight_idx ON easeml.runs (task_id)
	WHERE status IN ('queued', 'running') AND purpose = 'ensemble';
CREATE INDEX runs_refit_of_idx ON easeml.runs (refit_of) WHERE refit_of IS NOT NULL;
COMMENT ON TABLE easeml.runs IS
	'training runs: queued, running, succeeded, failed, cancelled or interrupted';

CREATE TABLE easeml.run_events (
	id			bigserial PRIMARY KEY,
	run_id		bigint NOT NULL REFERENCES easeml.runs (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	status		text NOT NULL,
	at			timestamptz NOT NULL DEFAULT clock_timestamp(),
	detail		text
);
CREATE INDEX run_events_run_idx ON easeml.run_events (run_id);
COMMENT ON TABLE easeml.run_events IS 'every status change of every run';

-- Trained parameters of succeeded runs (docs/models.md describes the
-- format).  Artifacts up to easeml.artifact_max_bytes are kept for every
-- succeeded run; larger ones only for the best run of each task.
CREATE TABLE easeml.artifacts (
	run_id		bigint PRIMARY KEY REFERENCES easeml.runs (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	bytes		bigint NOT NULL,
	format		text NOT NULL DEFAULT 'EASEMLA1',
	data		bytea NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE easeml.artifacts IS
	'trained parameters of succeeded runs; the best run of every task always keeps its artifact';

-- ---------------------------------------------------------------------------
-- Scheduler decisions (why each run was chosen)
-- ---------------------------------------------------------------------------
CREATE TABLE easeml.decisions (
	id			bigserial PRIMARY KEY,
	decided_at	timestamptz NOT NULL DEFAULT clock_timestamp(),
	task_id		bigint NOT NULL REFERENCES easeml.tasks (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	model_id	int NOT NULL REFERENCES easeml.models (id),
	run_id		bigint REFERENCES easeml.runs (id) ON DELETE CASCADE,
	policy		text NOT NULL,
	mu			float8,
	sigma		float8,
	acquisition float8,
	est_seconds float8,
	gp_status	text,
	rule		text,
	score		float8,
	eligible	int
);
CREATE INDEX decisions_task_idx ON easeml.decisions (task_id);
COMMENT ON TABLE easeml.decisions IS
	'one row per scheduling decision: the policy, and the posterior mean, std dev and acquisition value of the chosen candidate';

-- Seed history for the scheduler's prior: quality of catalog models on
-- earlier datasets (loaded by easeml.load_history).
CREATE TABLE easeml.history (
	dataset		text NOT NULL,
	model_id	int NOT NULL REFERENCES easeml.models (id) ON DELETE CASCADE,
	quality		float8 NOT NULL CHECK (quality >= 0 AND quality <= 1),
	seconds		float8 CHECK (seconds IS NULL OR seconds > 0),
	source		text,
	/* rows of classification and of regression tasks never mix in a prior */
	kind		text NOT NULL DEFAULT 'classification'
		CHECK (kind IN ('classification', 'regression')),
	PRIMARY KEY (dataset, model_id)
);

-- ---------------------------------------------------------------------------
-- [scheduler] 0.2.0: explained decisions, task kinds in the history
-- (sql/upgrade/0.1.0--0.2.0/20-scheduler.sql makes the same changes)
-- ---------------------------------------------------------------------------
COMMENT ON COLUMN easeml.decisions.rule IS
	'what decided: greedy, fairness floor, streak guard, warm start, round-robin, random, or the tenant''s own queue';
COMMENT ON COLUMN easeml.decisions.acquisition IS
	'the chosen candidate''s acquisition value (docs/scheduler.md: expected improvement per estimated second for cost-aware EI)';
COMMENT ON COLUMN easeml.decisions.score IS
	'the chosen task''s score under the rule: expected gain per second (greedy rules) or decisions since it was last served (round-robin rules)';
COMMENT ON COLUMN easeml.decisions.eligible IS
	'tasks that could have been chosen';

-- The runner-ups of each decision: the next tasks ('task') and the chosen
-- task's next candidates ('model'), best first.
CREATE TABLE easeml.decision_candidates (
	decision_id bigint NOT NULL REFERENCES easeml.decisions (id) ON DELETE CASCADE,
	role		text NOT NULL CHECK (role IN ('task', 'model')),
	rank		int NOT NULL CHECK (rank > 0),
	task_id		bigint NOT NULL REFERENCES easeml.tasks (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	model_id	int NOT NULL REFERENCES easeml.models (id),
	mu			float8,
	sigma		float8,
	est_seconds float8,
	acquisition float8,
	score		float8,
	PRIMARY KEY (decision_id, role, rank)
);
CREATE INDEX decision_candidates_task_idx ON easeml.decision_candidates (task_id);
COMMENT ON TABLE easeml.decision_candidates IS
	'runner-ups of each decision: the next tasks and the chosen task''s next candidates, with their scores (a tenant sees the rows of its own tasks)';
ALTER TABLE easeml.decision_candidates ENABLE ROW LEVEL SECURITY;
CREATE POLICY decision_candidates_own ON easeml.decision_candidates
	FOR SELECT USING (tenant = (SELECT easeml._bound_tenant()));
GRANT SELECT ON easeml.decision_candidates TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.decision_candidates', '');

-- ---------------------------------------------------------------------------
-- Wake-up: tell the scheduler at commit that something changed
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml.wake_scheduler()
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_wake_scheduler'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION easeml.wake_scheduler() IS
	'wake the scheduler when the current transaction commits';

CREATE FUNCTION easeml._wake_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'easeml_wake_trigger'
LANGUAGE C;
-- [hardening] only easeml's own triggers call it (a tenant's trigger on its
-- own table would let it wake the scheduler at will); it also refuses to
-- fire on any other table, and wake-ups are rate-limited
-- (easeml.wake_interval, src/module/shmem.c)
REVOKE ALL ON FUNCTION easeml._wake_trigger() FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Task validation at INSERT (and guarded UPDATE)
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml._numeric_type(t oid)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT CASE WHEN typtype = 'd' THEN typbasetype ELSE oid END
					 FROM pg_type WHERE oid = t)
					IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype,
						'float4'::regtype, 'float8'::regtype, 'numeric'::regtype), false)
$$;

-- [identity] the real role attribute: pg_catalog is searched before
-- pg_temp, and named, so a tenant's temporary "pg_roles" cannot answer
CREATE FUNCTION easeml._is_admin()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r
					  WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER), false)
$$;

-- [identity] A source and, through views, every relation it reads (as
-- the rules of the views record them); functions a view calls may read
-- more, which no catalog records.
CREATE FUNCTION easeml._source_relations(rel oid)
RETURNS TABLE (rel oid)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH RECURSIVE r(rel) AS (
		SELECT _source_relations.rel
		UNION
		SELECT d.refobjid
		  FROM r
		  JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.rel
		  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
			   AND d.objid = w.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
			   AND d.refobjid OPERATOR(pg_catalog.<>) r.rel)
	SELECT r.rel FROM r
$$;

-- [identity] What may be a task's source (declaration, refresh, the start
-- of a run): not a temporary relation, which the trainers' sessions cannot
-- see (and which a tenant could use to shadow names), and not a system
-- catalog, which is never a tenant's data.  Raises with the reason; a
-- relation that does not exist is left to the caller to report.
CREATE FUNCTION easeml._check_source(rel oid)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c			record;
	tmp			record;
BEGIN
	SELECT cl.relpersistence, n.oid AS nsp, n.nspname,
		   pg_catalog.format('%I.%I', n.nspname, cl.relname) AS relname
	  INTO c
	  FROM pg_catalog.pg_class cl JOIN pg_catalog.pg_namespace n ON n.oid = cl.relnamespace
	 WHERE cl.oid = rel;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	IF c.relpersistence = 't' OR c.nsp = pg_catalog.pg_my_temp_schema()
		OR pg_catalog.pg_is_other_temp_schema(c.nsp) OR c.nspname ~ '^pg_(toast_)?temp_' THEN
		RAISE EXCEPTION '"%" is a temporary relation and cannot be the source of a task', c.relname
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'The trainers read the source in sessions of their own, which cannot see temporary tables or views: create the table or view in a schema of yours.';
	END IF;
	IF c.nspname IN ('pg_catalog', 'information_schema') OR c.nspname ~ '^pg_toast' THEN
		RAISE EXCEPTION '"%" is a system catalog and cannot be the source of a task', c.relname
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Learn from a table or view of your own: copy the rows you need into one.';
	END IF;
	-- a permanent view may call a temporary function or read a temporary
	-- table (through the views it reads, too): it goes with the session
	SELECT pg_catalog.format('%s %I.%I', o.what, n.nspname, o.name) AS obj INTO tmp
	  FROM easeml._source_relations(rel) r
	  JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.rel
	  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
		   AND d.objid = w.oid
	  CROSS JOIN LATERAL (
		SELECT 'function' AS what, p.proname AS name, p.pronamespace AS nsp
		  FROM pg_catalog.pg_proc p
		 WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = d.refobjid
		UNION ALL
		SELECT 'type', t.typname, t.typnamespace
		  FROM pg_catalog.pg_type t
		 WHERE d.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = d.refobjid
		UNION ALL
		SELECT 'relation', cl.relname, cl.relnamespace
		  FROM pg_catalog.pg_class cl
		 WHERE d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND cl.oid = d.refobjid) o
	  JOIN pg_catalog.pg_namespace n ON n.oid = o.nsp
	 WHERE n.nspname ~ '^pg_(toast_)?temp_'
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '"%" uses the temporary %, and cannot be the source of a task', c.relname, tmp.obj
			USING ERRCODE = 'wrong_object_type',
				  HINT = 'Temporary objects end with their session, before the trainers read the source: use permanent ones.';
	END IF;
END;
$$;

-- [trust] the columns of a relation, for hints
CREATE FUNCTION easeml._column_list(rel regclass)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(string_agg(quote_ident(attname), ', ' ORDER BY attnum), '(none)')
	  FROM pg_attribute
	 WHERE attrelid = rel AND attnum > 0 AND NOT attisdropped
$$;

-- [trust] Every read of a task's source at declaration goes through this:
-- as the declaring role, read-only, in a security-restricted operation
-- (src/sql/sql_source.c), the way the trainer reads it.
CREATE FUNCTION easeml._read_source(query text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_read_source'
LANGUAGE C VOLATILE STRICT
-- [identity] it switches identity (src/module/identity.c)
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._read_source(text) IS
	'internal: the first row of a query over a task''s source as jsonb, read as the current role, read-only, in a security-restricted operation';

-- ---------------------------------------------------------------------------
-- Data: what each column type becomes, which columns are keys, and a
-- profile of a source read as its tenant (docs/data.md)
-- ---------------------------------------------------------------------------

-- the type under any stack of domains
CREATE FUNCTION easeml._base_type(t oid)
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
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
SET search_path = pg_catalog, pg_temp
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
CREATE FUNCTION easeml._key_reason(rel oid, att int2)
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

-- SQL that is true when a target value v (SQL text) of type t is NaN
CREATE FUNCTION easeml._nan_sql(v text, t oid)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
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
-- [non-null values, constant, distinct values, infinite values, NULL].
-- NaN counts as missing; distinct values are counted where they decide
-- something (categorical columns).  [keys] The last entry was the span of
-- an integer column and integers were counted distinct, for a row-number
-- rule that is gone; find_keys is kept for the signature and unused.
CREATE FUNCTION easeml._column_stats_sql(c text, t oid, kind text, find_keys boolean)
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

-- Profile a relation for a task, read as the current user, read-only,
-- inside a security-restricted operation (easeml._read_source): counts of rows
-- and of NULL, NaN and infinite targets, usable rows (a target that is
-- neither NULL nor NaN), classes, and easeml._column_stats_sql() for each
-- of cols (whose kinds are given).  One scan of the relation.  No JIT (here,
-- in _take_snapshot and refresh): on a wide table (Fashion-MNIST's 785
-- columns) LLVM spent over 15 minutes compiling this one query, whose cost
-- is its expressions, not its rows.
CREATE FUNCTION easeml._profile(rel regclass, target text, kind text, cols text[],
								kinds text[], find_keys boolean)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET jit = off
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
			'numeric_target', %8$s,
			'cols', %4$s) AS p
		  FROM (SELECT s.*, t IS NOT NULL AND NOT coalesce(%1$s, false) AS u
				  FROM (SELECT %5$s FROM %6$s) s(%7$s)) s$q$,
		easeml._nan_sql('t', ttype),
		CASE WHEN isfloat THEN 'count(*) FILTER (WHERE t IN (''Infinity'', ''-Infinity''))' ELSE '0' END,
		-- [classes] by the text of each value, as the trainer reads a
		-- classification target (easeml._trainer_spec): 1 and 1.0 are two
		-- classes, and a type without an equality operator (json, point,
		-- xml) is counted too
		CASE WHEN kind = 'classification' THEN 'count(DISTINCT t::text) FILTER (WHERE u)' ELSE 'NULL' END,
		stats,
		array_to_string(sel || format('%I', target), ', '),
		rel,
		array_to_string(aliases || 't'::text, ', '),
		CASE WHEN easeml._feature_kind(ttype) = 'numeric' THEN 'true' ELSE 'false' END);
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

-- sqrt(p (1 - p) / n) of an accuracy p on n validation rows; NULL for
-- other metrics.  The error of runs recorded without one.
CREATE FUNCTION easeml._binomial_se(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN metric = 'accuracy' AND (metrics ->> 'n_val')::float8 > 0
				 AND score BETWEEN 0 AND 1
			THEN sqrt(score * (1 - score) / (metrics ->> 'n_val')::float8) END
$$;

-- The standard error of a run's score (the quality of metric) from what the
-- trainer recorded (docs/results.md): its "score_se" when the run was
-- scored by this metric, else [alter] the error of that metric's quality
-- (a task whose metric easeml.alter_task changed), else the metric's own
-- error where the quality is the metric itself, else the binomial error of
-- an accuracy.  NULL when unknown.
CREATE FUNCTION easeml._score_se(metrics jsonb, metric text, score float8)
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

-- The standard error of a run's value of metric, in the metric's units.
CREATE FUNCTION easeml._metric_se(metrics jsonb, metric text, score float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((metrics ->> (metric || '_se'))::float8,
					easeml._binomial_se(metrics, metric, score))
$$;

-- The rows a task's scores are measured on: its validation split, or with
-- folds every row (each is validated once).
CREATE FUNCTION easeml._validation_rows(n bigint, val_fraction float8, folds int)
RETURNS bigint
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN folds IS NOT NULL THEN n ELSE floor(n * val_fraction)::bigint END
$$;

-- The smallest difference between two accuracies measured on that many
-- validation rows that is more than noise: 1.96 standard errors of the
-- difference of two independent proportions at p = 0.5, the widest case.
-- A rule of thumb for every score on a 0-1 scale (docs/results.md).
CREATE FUNCTION easeml._resolvable_difference(validation_rows bigint)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN validation_rows > 0 THEN 1.96 * sqrt(0.5 / validation_rows) END
$$;

-- The errors of a target profile (easeml._profile); returns the usable
-- rows and classes.  Shared by the declaration, the snapshot and refresh.
CREATE FUNCTION easeml._check_target(p jsonb, relname text, target text, kind text,
									 val_fraction float8, folds int,
									 OUT n bigint, OUT classes int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
	IF (p ->> 'rows')::bigint = 0 THEN
		RAISE EXCEPTION 'the source "%" has no rows', relname
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Fill the source (or check that its row-level security lets you read its rows), then declare the task.';
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
	IF n < 10 OR nval < 2 OR n - nval < 2 THEN
		RAISE EXCEPTION '"%" has % row(s) with a target; too few for a training/validation split', relname, n
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A task needs at least 10 labelled rows, at least 2 of them in the validation fraction.';
	END IF;
	-- [classes] each class needs a training row: more classes than that
	-- is most often a quantity declared without kind
	IF kind = 'classification' AND n - nval < classes THEN
		RAISE EXCEPTION 'target column "%" of "%" has % distinct values, more than its % training row(s): classification needs at least one training row per class',
			target, relname, classes, n - nval
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = CASE WHEN (p ->> 'numeric_target')::boolean
							  THEN 'If the target is a quantity, declare the task with kind = ''regression''; if it is a label, group rare classes in a view or lower val_fraction.'
							  ELSE 'Group rare classes in a view, or lower val_fraction.' END;
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
SET search_path = pg_catalog, pg_temp
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
SET search_path = pg_catalog, pg_temp
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
	-- [classes] a numeric target with a class for more than a fifth of its
	-- rows is most often a quantity declared without kind
	IF t.kind = 'classification' AND (prof ->> 'numeric_target')::boolean
		AND cnt.classes > 20 AND cnt.classes > 0.2 * cnt.n THEN
		RAISE WARNING 'task "%": numeric target column "%" has % distinct values in % rows, each a class of its own',
			t.name, t.target, cnt.classes, cnt.n
			USING HINT = 'If the target is a quantity, declare the task with kind = ''regression''.';
	END IF;
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

CREATE FUNCTION easeml._validate_task()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	relname		text;
	renamed		boolean := false;
	source_dropped boolean := false;
BEGIN
	IF TG_OP = 'UPDATE' THEN
		-- [dropped] a task's source becomes 0 when the relation is dropped
		-- (easeml._source_dropped, as the superuser)
		IF NEW.source <> OLD.source AND NEW.source::oid = 0 AND easeml._is_admin() THEN
			source_dropped := NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = OLD.source);
		END IF;
		-- [rename] a task's tenant changes only with the tenant's name
		-- (easeml.rename_tenant, which defers tasks_tenant_fkey): no tenant
		-- has the old name any more, and the new one is registered, bound to
		-- the role that has that name
		IF NEW.tenant <> OLD.tenant AND easeml._is_admin() THEN
			renamed := NOT EXISTS (SELECT 1 FROM easeml.tenants n WHERE n.name = OLD.tenant)
				AND EXISTS (SELECT 1 FROM easeml.tenants n JOIN pg_roles r ON r.oid = n.role_oid
							 WHERE n.name = NEW.tenant AND r.rolname = NEW.tenant);
		END IF;
		IF NEW.id <> OLD.id OR (NEW.tenant <> OLD.tenant AND NOT renamed) OR NEW.name <> OLD.name
			OR (NEW.source <> OLD.source AND NOT source_dropped) OR NEW.target <> OLD.target
			OR NEW.kind <> OLD.kind
			OR NEW.val_fraction <> OLD.val_fraction OR NEW.seed <> OLD.seed
			OR NEW.input_shape IS DISTINCT FROM OLD.input_shape
			OR NEW.snapshot <> OLD.snapshot
			OR NEW.impute <> OLD.impute
			OR NEW.missing_indicator <> OLD.missing_indicator THEN
			RAISE EXCEPTION 'the declaration of task "%" cannot be changed', OLD.name
				USING ERRCODE = 'feature_not_supported',
					  HINT = format('Only status, max_runs and auto_deploy can be updated, and metric, features and folds with SELECT easeml.alter_task(%L, ...); declare a new task for anything else.', OLD.name);
		END IF;
		-- [alter] metric, features and folds change only through
		-- easeml.alter_task, which checked the new values as the declaration
		-- does and writes them as the superuser (easeml._altering says it is
		-- this task's alter_task writing; no SQL can set that)
		IF (NEW.metric, NEW.features, NEW.feature_types, NEW.left_out, NEW.folds, NEW.features_version)
			IS DISTINCT FROM (OLD.metric, OLD.features, OLD.feature_types, OLD.left_out, OLD.folds,
							  OLD.features_version) THEN
			IF NOT easeml._is_admin() THEN
				RAISE EXCEPTION 'metric, features and folds of task "%" are changed with easeml.alter_task', OLD.name
					USING ERRCODE = 'insufficient_privilege',
						  HINT = format('Use easeml.alter_task(%L, metric => ..., features => ..., folds => ...): it checks the change as a declaration does, ranks the runs by a new metric again and takes a new snapshot for new features or folds.', OLD.name);
			END IF;
			IF NOT easeml._altering(OLD.id) THEN
				RAISE EXCEPTION 'metric, features and folds of task "%" are changed with easeml.alter_task', OLD.name
					USING ERRCODE = 'feature_not_supported',
						  HINT = format('Use easeml.alter_task(%L, ...) as its tenant: it checks the change as a declaration does.', OLD.name);
			END IF;
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
		-- [budget] a tenant's UPDATE, or easeml.alter_task's; NULL: none
		IF NEW.budget_seconds IS DISTINCT FROM OLD.budget_seconds THEN
			PERFORM easeml._check_budget(NEW.budget_seconds, 'budget_seconds');
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
		-- [quota] a new measurement (easeml.refresh) meets the limits
		IF NEW.measured_at IS DISTINCT FROM OLD.measured_at THEN
			PERFORM easeml._check_tenant_limits(NEW.tenant, NEW.name, NEW.n_rows, false);
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
	-- [budget] a task declared without a time budget gets its tenant's
	-- default (easeml.set_tenant_budget; the tenant sees its own row)
	IF NEW.budget_seconds IS NULL THEN
		NEW.budget_seconds := (SELECT n.default_budget_seconds FROM easeml.tenants n
								WHERE n.name = NEW.tenant);
	ELSE
		PERFORM easeml._check_budget(NEW.budget_seconds, 'budget_seconds');
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

	-- the source and the target column
	relname := easeml._check_source_target(NEW);

	-- features, the data checks, snapshot and metric (docs/data.md)
	NEW := easeml._declare_data(NEW, relname);
	NEW.status := 'active';
	NEW.status_reason := NULL;
	NEW.created_at := now();
	PERFORM easeml._check_tenant_limits(NEW.tenant, NEW.name, NEW.n_rows, true);
	RETURN NEW;
END;
$$;

CREATE TRIGGER tasks_validate
	BEFORE INSERT OR UPDATE ON easeml.tasks
	FOR EACH ROW EXECUTE FUNCTION easeml._validate_task();
CREATE TRIGGER tasks_wake
	AFTER INSERT OR UPDATE ON easeml.tasks
	FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger();

-- A task whose validation rows cannot tell close scores apart: say so at
-- declaration (task_overview.small_validation says it later).  After the
-- row is written, so it sees the measured n_rows.
CREATE FUNCTION easeml._notice_small_validation()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v			bigint := easeml._validation_rows(NEW.n_rows, NEW.val_fraction, NEW.folds);
	d			float8 := easeml._resolvable_difference(v);
BEGIN
	IF d > 0.05 THEN
		RAISE NOTICE 'task "%" is scored on % validation row(s): scores closer than % are not told apart',
			NEW.name, v, round(d::numeric, 2)
			USING HINT = CASE WHEN NEW.folds IS NULL
							  THEN 'Set folds (5 scores on every row) or add rows; easeml.leaderboard shows each score''s standard error.'
							  ELSE 'Add rows; easeml.leaderboard shows each score''s standard error.' END;
	END IF;
	RETURN NULL;
END;
$$;
CREATE TRIGGER tasks_small_validation
	AFTER INSERT ON easeml.tasks
	FOR EACH ROW WHEN (NEW.n_rows IS NOT NULL)
	EXECUTE FUNCTION easeml._notice_small_validation();
REVOKE ALL ON FUNCTION easeml._notice_small_validation() FROM PUBLIC;

-- [locks] Lock the caller's own row of easeml.tenants until the transaction
-- ends (src/sql/sql_tenant.c), as the superuser (a tenant has no UPDATE on it)
-- and only ever the caller's own.  Not an advisory lock: any role may take
-- any advisory lock, and a tenant that held another tenant's key blocked
-- its declarations (issue 22 review).
CREATE FUNCTION easeml._lock_own_tenant()
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_lock_own_tenant'
LANGUAGE C VOLATILE
-- [identity] it switches identity (src/module/identity.c)
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._lock_own_tenant() IS
	'internal: lock the caller''s own row of easeml.tenants until the transaction ends';

-- [quota] A tenant's limits (easeml.set_tenant_limits): how many tasks it
-- may have and how many usable rows a task's source may hold.
-- easeml._validate_task calls it once it has measured n_rows: at a
-- declaration, and when easeml.refresh measures again, so a source that
-- grew past the limit fails the refresh and the task keeps the snapshot it
-- had.
CREATE FUNCTION easeml._check_tenant_limits(tenant name, task text, n_rows bigint,
	declaring boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	lim			record;
	n			bigint;
BEGIN
	SELECT t.max_tasks, t.max_rows INTO lim FROM easeml.tenants t
	 WHERE t.name = _check_tenant_limits.tenant;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	IF declaring AND lim.max_tasks IS NOT NULL THEN
		-- one declaration of a tenant at a time, so two cannot both pass:
		-- [locks] its own row of easeml.tenants (_validate_task checked
		-- that the tenant declares itself)
		PERFORM easeml._lock_own_tenant();
		SELECT count(*) INTO n FROM easeml.tasks t WHERE t.tenant = _check_tenant_limits.tenant;
		IF n >= lim.max_tasks THEN
			RAISE EXCEPTION 'tenant "%" may have at most % task(s) and has %', tenant, lim.max_tasks, n
				USING ERRCODE = 'configuration_limit_exceeded',
					  HINT = 'Drop a task with SELECT easeml.drop_task(name), or ask an administrator to raise max_tasks with easeml.set_tenant_limits.';
		END IF;
	END IF;
	IF lim.max_rows IS NOT NULL AND _check_tenant_limits.n_rows > lim.max_rows THEN
		RAISE EXCEPTION 'the source of task "%" has % usable rows, more than the % tenant "%" may use per task',
			task, _check_tenant_limits.n_rows, lim.max_rows, tenant
			USING ERRCODE = 'configuration_limit_exceeded',
				  HINT = 'Declare the task over a view that selects fewer rows, or ask an administrator to raise max_rows with easeml.set_tenant_limits.';
	END IF;
END;
$$;
COMMENT ON FUNCTION easeml._check_tenant_limits(name, text, bigint, boolean) IS
	'internal: raise unless a task of this many rows is within its tenant''s limits (max_tasks when declaring, max_rows)';

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

-- [rename] The name of role r, or tenant for role tenant_role
-- (easeml._access_fingerprint_as).
CREATE FUNCTION easeml._role_as(r oid, tenant_role oid, tenant name)
RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN _role_as.r OPERATOR(pg_catalog.=) _role_as.tenant_role THEN _role_as.tenant
				ELSE pg_catalog.pg_get_userbyid(_role_as.r) END
$$;

-- [access] The rules that decide which rows of a source a tenant reads,
-- as one digest (docs/data.md, section 6).  For the source and every
-- relation its views read (easeml._source_relations): its kind, owner,
-- whether row-level security is enabled and forced, for a view its options
-- (security_invoker, security_barrier) and definition; each SELECT policy
-- (name, permissive or not, roles, expression); the definition of each
-- function a view or policy calls.  And the rules as they resolve now for
-- the roles that read the rows (the tenant, and the owner of each view, as
-- whom a view that is not security_invoker reads): whether a role
-- bypasses row-level security, owns a relation (its owner is not bound by
-- its policies), and which policies apply to it (a policy TO a role
-- applies through membership, so a lost membership changes the digest).
-- Names, not object ids, so a dump restores the same digest; the text is
-- made under fixed settings, so that the reader's DateStyle, TimeZone or
-- extra_float_digits cannot change how a policy's constants print.
-- Privileges are not in it: they are checked as they are now
-- (easeml._snapshot_readable).
--
-- [rename] easeml._access_fingerprint_as computes it for the role
-- tenant_role as if it were called tenant: easeml.rename_tenant compares a
-- snapshot's digest with the role under its old name, and gives the
-- snapshot the digest under its new name when nothing else changed.
-- easeml._access_fingerprint names the role tenant as it is called now.
CREATE FUNCTION easeml._access_fingerprint_as(rel oid, tenant_role oid, tenant name)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, MDY'
SET IntervalStyle = 'postgres'
SET TimeZone = 'UTC'
SET extra_float_digits = 1
SET bytea_output = 'hex'
SET quote_all_identifiers = off
SET standard_conforming_strings = on
SET lc_monetary = 'C'
AS $$
	WITH rels AS (
		SELECT DISTINCT c.oid, c.relkind, c.relowner, c.relrowsecurity, c.relforcerowsecurity,
			   c.reloptions, pg_catalog.format('%I.%I', n.nspname, c.relname) AS name
		  FROM easeml._source_relations(rel) s
		  JOIN pg_catalog.pg_class c ON c.oid = s.rel
		  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace),
	readers AS (
		SELECT r.oid,
			   pg_catalog.quote_ident(easeml._role_as(r.oid, _access_fingerprint_as.tenant_role,
													  _access_fingerprint_as.tenant)) AS name,
			   r.rolsuper OR r.rolbypassrls AS bypass
		  FROM pg_catalog.pg_roles r
		 WHERE r.oid OPERATOR(pg_catalog.=) _access_fingerprint_as.tenant_role
			OR r.oid IN (SELECT v.relowner FROM rels v WHERE v.relkind = 'v')),
	pols AS (
		SELECT p.oid, p.polname, p.polpermissive, p.polroles, p.polqual, p.polrelid, c.name AS relname
		  FROM rels c JOIN pg_catalog.pg_policy p ON p.polrelid = c.oid AND p.polcmd IN ('r', '*'))
	SELECT pg_catalog.md5(pg_catalog.string_agg(f.x, E'\n' ORDER BY f.x))
	  FROM (SELECT pg_catalog.format('%s %s owner=%s rls=%s force=%s %s %s', c.name, c.relkind,
									 pg_catalog.quote_ident(easeml._role_as(c.relowner,
																			_access_fingerprint_as.tenant_role,
																			_access_fingerprint_as.tenant)),
									 c.relrowsecurity, c.relforcerowsecurity,
									 CASE WHEN c.relkind = 'v' THEN c.reloptions::text END,
									 CASE WHEN c.relkind IN ('v', 'm')
										  THEN pg_catalog.pg_get_viewdef(c.oid) END) AS x
			  FROM rels c
			UNION ALL
			SELECT pg_catalog.format('reader %s bypass=%s', r.name, r.bypass)
			  FROM readers r
			UNION ALL
			SELECT pg_catalog.format('%s read by %s as owner=%s', c.name, r.name,
									 pg_catalog.pg_has_role(r.oid, c.relowner, 'USAGE'))
			  FROM rels c CROSS JOIN readers r
			 WHERE c.relrowsecurity
			UNION ALL
			SELECT pg_catalog.format('%s policy %I %s to %s using %s', p.relname, p.polname, p.polpermissive,
									 (SELECT pg_catalog.string_agg(o.name, ',' ORDER BY o.name)
										FROM (SELECT CASE WHEN u.role OPERATOR(pg_catalog.=) 0 THEN 'public'
														  ELSE pg_catalog.quote_ident(easeml._role_as(u.role,
																	_access_fingerprint_as.tenant_role,
																	_access_fingerprint_as.tenant))
													 END AS name
												FROM pg_catalog.unnest(p.polroles) AS u(role)) o),
									 pg_catalog.pg_get_expr(p.polqual, p.polrelid))
			  FROM pols p
			UNION ALL
			SELECT pg_catalog.format('%s policy %I applies to %s=%s', p.relname, p.polname, r.name,
									 0::oid OPERATOR(pg_catalog.=) ANY (p.polroles)
									 OR EXISTS (SELECT 1 FROM pg_catalog.unnest(p.polroles) AS u(role)
												 WHERE pg_catalog.pg_has_role(r.oid, u.role, 'USAGE')))
			  FROM pols p CROSS JOIN readers r
			UNION ALL
			SELECT DISTINCT pg_catalog.format('function %s owner=%s definer=%s config=%s source=%s',
											  f.oid::pg_catalog.regprocedure,
											  pg_catalog.quote_ident(easeml._role_as(f.proowner,
													_access_fingerprint_as.tenant_role,
													_access_fingerprint_as.tenant)),
											  f.prosecdef, f.proconfig, pg_catalog.md5(f.prosrc))
			  FROM pg_catalog.pg_depend d
			  JOIN pg_catalog.pg_proc f ON f.oid = d.refobjid
			 WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			   AND ((d.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass
					 AND d.objid IN (SELECT p.oid FROM pols p))
					OR (d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
						AND d.objid IN (SELECT w.oid FROM pg_catalog.pg_rewrite w
										 WHERE w.ev_class IN (SELECT c.oid FROM rels c))))) f
$$;

CREATE FUNCTION easeml._access_fingerprint(rel oid, tenant name)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml._access_fingerprint_as(_access_fingerprint.rel,
		(SELECT r.oid FROM pg_catalog.pg_roles r
		  WHERE r.rolname OPERATOR(pg_catalog.=) _access_fingerprint.tenant),
		_access_fingerprint.tenant)
$$;

-- [access] Whether the caller may read a task's snapshot (docs/data.md,
-- section 6).  The row-level security policy of every snapshot table calls
-- it once per query (an InitPlan), as whoever reads: the tenant, directly
-- or in the trainer's data session (the owner and superusers bypass it).  A
-- snapshot is a copy made on the tenant's behalf, so it is readable only
-- while the tenant may still read what it copied: 42501 when the tenant can
-- no longer SELECT the copied columns of the source (as PostgreSQL decides
-- for a query of them, through views too; the source gone counts), or when
-- the rules that decide which rows of the source the tenant reads are no
-- longer those the copy was made under (access: easeml._access_fingerprint
-- then).  false for anyone else.
CREATE FUNCTION easeml._snapshot_readable(task_id bigint, access text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	src			text;
BEGIN
	SELECT k.tenant, k.name, k.source, k.features || k.target AS cols INTO t
	  FROM easeml.tasks k WHERE k.id = _snapshot_readable.task_id;
	IF NOT FOUND OR t.tenant OPERATOR(pg_catalog.<>) CURRENT_USER THEN
		RETURN false;
	END IF;
	SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) INTO src
	  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	 WHERE c.oid = t.source;
	IF src IS NULL THEN
		RAISE EXCEPTION 'the source of task "%" no longer exists: its snapshot is refused', t.name
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('A snapshot is readable only while its tenant may read its source. SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name);
	END IF;
	BEGIN
		PERFORM easeml._read_source(pg_catalog.format('SELECT %s FROM %s LIMIT 0',
			(SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c), ', ')
			   FROM pg_catalog.unnest(t.cols) AS c), src));
	EXCEPTION WHEN insufficient_privilege OR undefined_column OR undefined_table THEN
		RAISE EXCEPTION 'tenant "%" may no longer read the source % of task "%" (%): its snapshot is refused',
			t.tenant, src, t.name, SQLERRM
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('A snapshot is readable only while its tenant may read what it copied: the source''s owner can GRANT SELECT again, or SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name);
	END;
	IF easeml._access_fingerprint(t.source, t.tenant) IS DISTINCT FROM access THEN
		RAISE EXCEPTION 'the rules that decide which rows of % tenant "%" reads (row-level security, policies and whom they apply to, owners, views) changed since the snapshot of task "%" was taken: the snapshot is refused',
			src, t.tenant, t.name
			USING ERRCODE = 'insufficient_privilege',
				  HINT = format('SELECT easeml.refresh(%L) copies what the tenant may read now; SELECT easeml.drop_task(%L) removes the task with its snapshots.', t.name, t.name);
	END IF;
	RETURN true;
END;
$$;

-- [owner] The type of a snapshot column: text for a categorical feature,
-- else the column's base type when it is built in (made by initdb: an
-- object id below FirstNormalObjectId, 16384), else text, read through the
-- type's cast or output function as the tenant.  A snapshot table belongs
-- to the bootstrap superuser, and ANALYZE (autovacuum's, an
-- administrator's) runs a column type's support functions as the table's
-- owner: a tenant's range type would run its subtype_diff function, code
-- the tenant wrote, as the superuser (docs/security.md, "What runs as the
-- superuser").  A built-in type's support functions are built in.  The
-- type is named without a modifier, as format_type(oid, -1) names it:
-- bpchar and "bit", where format_type(oid, NULL) says character and bit,
-- which mean char(1) and bit(1), and the copy's cast cut a char(5) target
-- to its first character (cat and camel one class).
CREATE FUNCTION easeml._snapshot_type(t oid, kind text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN kind = 'categorical' OR b.oid IS NULL
					 OR b.oid OPERATOR(pg_catalog.>=) 16384::oid THEN 'text'
				ELSE pg_catalog.format_type(b.oid, -1) END
	  FROM (SELECT easeml._base_type(t) AS oid) b
$$;

-- The statements that take snapshot `version` of a task (run by
-- src/sql/sql_snapshot.c, each under its identity), and the query that checks the
-- target on what runs will read: the copy, or with version 0 the source.
-- Feature columns are copied in the task's order; categorical ones as text,
-- the others (and the target) as their base type if it is built in, else
-- as text (easeml._snapshot_type).
CREATE FUNCTION easeml._snapshot_sql(task_id bigint, version int,
									 OUT create_sql text, OUT grant_sql text, OUT fill_sql text,
									 OUT check_sql text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
	now_kind	text;
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
	PERFORM easeml._check_source(t.source);
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
		-- [retype] each column must still be what the task encodes: a
		-- feature of the kind recorded when the task took its features, a
		-- regression target numeric (ALTER TABLE may have changed its type
		-- since; runs would fail on every row of the new snapshot)
		IF j < cardinality(cols) THEN
			now_kind := easeml._feature_kind(a.atttypid);
			IF now_kind IS DISTINCT FROM kinds[j] THEN
				RAISE EXCEPTION 'feature column "%" of task "%" now has type %, which easeml encodes as %, but the task encodes it as %',
					cols[j], t.name, format_type(a.atttypid, NULL),
					coalesce(now_kind, 'nothing (not supported)'), kinds[j]
					USING ERRCODE = 'datatype_mismatch',
						  DETAIL = 'Nothing was changed: the task keeps its current snapshot version.',
						  HINT = CASE WHEN t.snapshot
									  THEN format('Change the column back to a %s type, or take the columns as they are now with SELECT easeml.alter_task(%L, features => %L) (a new snapshot version; leave out a column easeml cannot use).',
												  kinds[j], t.name, t.features::text)
									  ELSE format('Change the column back to a %s type, or declare a new task: the features of a task without snapshot cannot change.',
												  kinds[j]) END;
			END IF;
		ELSIF t.kind = 'regression' AND easeml._feature_kind(a.atttypid) IS DISTINCT FROM 'numeric' THEN
			RAISE EXCEPTION 'target column "%" of regression task "%" now has type %, not a numeric type',
				cols[j], t.name, format_type(a.atttypid, NULL)
				USING ERRCODE = 'datatype_mismatch',
					  DETAIL = 'Nothing was changed: the task keeps its current snapshot version.',
					  HINT = 'Change the column back to smallint, integer, bigint, real, double precision or numeric, or declare a new task on a view that casts it.';
		END IF;
		typ := easeml._snapshot_type(a.atttypid, kinds[j]);
		defs := defs || format('%I %s', cols[j], typ);
		exprs := exprs || format('%I::%s', cols[j], typ);
	END LOOP;
	create_sql := format('CREATE TABLE easeml_snapshots.%I (%s)', snap, array_to_string(defs, ', '));
	-- [access] the tenant reads it only while it may read what it copied
	grant_sql := format('GRANT SELECT ON easeml_snapshots.%I TO %I; '
						'ALTER TABLE easeml_snapshots.%I ENABLE ROW LEVEL SECURITY; '
						'CREATE POLICY tenant_access ON easeml_snapshots.%I FOR SELECT '
						'USING ((SELECT easeml._snapshot_readable(%s, %L)))',
						snap, t.tenant, snap, snap, task_id, easeml._access_fingerprint(t.source, t.tenant));
	-- read as the tenant ($1, passed by src/sql/sql_snapshot.c: the declaring or
	-- refreshing role), read-only and restricted; written by the superuser
	fill_sql := format('INSERT INTO easeml_snapshots.%I SELECT * FROM easeml._read_rows_as($1, %L) AS r(%s)',
					   snap,
					   format('SELECT %s FROM %s WHERE %I IS NOT NULL',
							  array_to_string(exprs, ', '), src, t.target),
					   array_to_string(defs, ', '));
	check_sql := format('SELECT n, classes FROM easeml._check_target(easeml._profile(%L, %L, %L, ''{}'', ''{}'', false), %L, %L, %L, %s, %s)',
						CASE WHEN version > 0 THEN format('easeml_snapshots.%I', snap) ELSE src END,
						t.target, t.kind, src, t.target, t.kind, t.val_fraction,
						coalesce(t.folds::text, 'NULL'));
END;
$$;

-- [owner] Snapshot tables easeml let go of but could not drop at once: a
-- lock on the table, or on anything built on it, was held by another
-- session (easeml._try_drop_snapshot).  The scheduler drops them later
-- (easeml._drop_stale_snapshots, src/worker/retention.c).  Recorded by
-- name rather than found by it: a table of a task not restored yet (a
-- pg_restore under way commits the tables before easeml.tasks' rows) is
-- not one to drop.
CREATE TABLE easeml.snapshot_drops (
	relname		name PRIMARY KEY,
	since		timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE easeml.snapshot_drops IS
	'internal: snapshot tables to drop once nobody holds a lock on them (the scheduler retries)';
-- dumped: pg_dump keeps the tables, and a restore drops them again
SELECT pg_catalog.pg_extension_config_dump('easeml.snapshot_drops', '');
-- [dba] every role may read it, and no role but a superuser sees a row
-- (row-level security without a policy): a tenant's backup, pg_dump
-- --enable-row-security -n easeml, dumps every table registered above and
-- stopped at "permission denied" here; the names would tell other
-- tenants' task ids (docs/security.md, "Backups by tenants")
ALTER TABLE easeml.snapshot_drops ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON easeml.snapshot_drops TO PUBLIC;

-- [owner] Drop a snapshot table if it can be done within a moment (true);
-- else leave it to the scheduler (false).  Any role can hold a lock on a
-- snapshot table or on a view over it: creating a view needs no privilege
-- on what it reads, and a PREPARE of a query locks the relations it names
-- before any privilege is checked (easeml_snapshots is usable by PUBLIC,
-- docs/security.md).  A DROP that waited would hold its tenant's refresh,
-- alter_task and drop_task, or an administrator removing the tenant, for
-- as long as that role liked.  With CASCADE: what anyone built on a
-- snapshot goes with it.  A table left is readable by its owner alone
-- from then on (REVOKE takes no lock on it) and recorded in
-- easeml.snapshot_drops.  Notices stay quiet: a cascade's would name
-- another tenant's view.
CREATE FUNCTION easeml._try_drop_snapshot(rel name)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
SET client_min_messages = warning
AS $$
DECLARE
	grantee		text;
BEGIN
	BEGIN
		EXECUTE format('DROP TABLE IF EXISTS easeml_snapshots.%I CASCADE', rel);
		RETURN true;
	EXCEPTION WHEN lock_not_available THEN
		FOR grantee IN
			SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
								 ELSE quote_ident(pg_get_userbyid(a.grantee)) END
			  FROM pg_class c, aclexplode(c.relacl) a
			 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND c.relname = rel
			   AND a.grantee <> c.relowner
		LOOP
			EXECUTE format('REVOKE ALL ON easeml_snapshots.%I FROM %s', rel, grantee);
		END LOOP;
		INSERT INTO easeml.snapshot_drops (relname) VALUES (rel) ON CONFLICT DO NOTHING;
		RETURN false;
	END;
END;
$$;

-- [owner] The scheduler's retry of easeml.snapshot_drops
-- (src/worker/retention.c): at most `batch` tables dropped, in random
-- order, up to the first that is still locked (each waits 100 ms at most,
-- so a role that keeps some locked delays the scheduler's loop by that
-- much, and the others still go).  A recorded table that is gone, or that
-- is the current version of a task after all, is forgotten.  Returns how
-- many were dropped and how many are left.
CREATE FUNCTION easeml._drop_stale_snapshots(batch int, OUT dropped int, OUT remaining int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	blocked		boolean := false;
BEGIN
	dropped := 0;
	remaining := 0;
	FOR r IN
		SELECT d.relname,
			   to_regclass(format('easeml_snapshots.%I', d.relname)) IS NULL
			   OR EXISTS (SELECT 1 FROM easeml.tasks t
						   WHERE t.snapshot_version IS NOT NULL
							 AND easeml._snapshot_name(t.id, t.snapshot_version) = d.relname) AS forget
		  FROM easeml.snapshot_drops d
		 ORDER BY random()
	LOOP
		IF r.forget THEN
			DELETE FROM easeml.snapshot_drops d WHERE d.relname = r.relname;
		ELSIF blocked OR dropped >= batch THEN
			remaining := remaining + 1;
		ELSIF easeml._try_drop_snapshot(r.relname) THEN
			DELETE FROM easeml.snapshot_drops d WHERE d.relname = r.relname;
			dropped := dropped + 1;
		ELSE
			blocked := true;
			remaining := remaining + 1;
		END IF;
	END LOOP;
END;
$$;
COMMENT ON FUNCTION easeml._drop_stale_snapshots(int) IS
	'internal: drop snapshot tables left to the scheduler, up to the first still locked (scheduler only)';

-- Make snapshot `version` (0: none, the live source) current, with the
-- usable rows and classes found on it: runs of older versions still queued
-- move to it, running ones are cancelled (their result would be stale),
-- older tables are dropped (now, or by the scheduler when another session
-- holds a lock on them: easeml._try_drop_snapshot), and a completed or
-- failed task is scheduled again.
CREATE FUNCTION easeml._snapshot_switch(task_id bigint, version int, n bigint, classes int)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
			   AND NOT EXISTS (SELECT 1 FROM easeml.snapshot_drops d WHERE d.relname = c.relname)
		LOOP
			-- [owner] never waits on another session's lock: no view
			-- (anyone's) nor lock keeps an old version, or the refresh,
			-- from going; one already left to the scheduler is left to it
			PERFORM easeml._try_drop_snapshot(rel);
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
LANGUAGE C VOLATILE STRICT
-- [identity] it switches identity (src/module/identity.c)
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._read_rows_as(oid, text) IS
	'internal: the rows of a query read as another role, read-only, in a security-restricted operation (superuser only)';

CREATE FUNCTION easeml._take_snapshot()
RETURNS trigger
AS 'MODULE_PATHNAME', 'easeml_take_snapshot'
LANGUAGE C
-- [identity] it switches identity (src/module/identity.c)
SET search_path = pg_catalog, pg_temp
SET jit = off;

CREATE TRIGGER tasks_snapshot
	AFTER INSERT ON easeml.tasks
	FOR EACH ROW WHEN (NEW.snapshot_version = 0)
	EXECUTE FUNCTION easeml._take_snapshot();

-- Snapshots go with their task (drop_task, a tenant removed, DELETE).
-- [owner] Through easeml._try_drop_snapshot: any role may make a view over
-- a snapshot table (creating a view needs no privilege on what it reads;
-- easeml_snapshots is usable by PUBLIC) or hold a lock on one, and neither
-- keeps the task from being dropped, by its tenant or an administrator:
-- what is built on a snapshot goes with it, and a table locked now is
-- dropped by the scheduler later (docs/data.md, section 6).
CREATE FUNCTION easeml._drop_snapshots()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
		   AND NOT EXISTS (SELECT 1 FROM easeml.snapshot_drops d WHERE d.relname = c.relname)
	LOOP
		PERFORM easeml._try_drop_snapshot(rel);
	END LOOP;
	-- [locks] and the task's deployment lock row
	DELETE FROM easeml.deployment_locks l WHERE l.task_id = OLD.id;
	RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_drop_snapshots
	AFTER DELETE ON easeml.tasks
	FOR EACH ROW EXECUTE FUNCTION easeml._drop_snapshots();

-- [dropped] A task's source is a regclass, which records no dependency:
-- a DROP of the table (or a view, a DROP SCHEMA ... CASCADE, DROP OWNED)
-- left the task pointing at the dropped relation's object id, shown as a
-- bare number, and dumped and restored as that number, which may name
-- another relation later.  The task stayed as it was until a run of it
-- failed.  At the end of each command that drops relations, the tasks
-- whose source it dropped fail at once, with the reason, and their source
-- becomes 0 ('-'), which names no relation anywhere: easeml.refresh, the
-- scheduler and the trainer find no source, as for a source dropped
-- before.  The tenant drops the task or declares a new one (a source
-- cannot change).  A DROP is not refused: PostgreSQL lets a table's
-- owner drop it whoever reads it, and a tenant's task must not keep a
-- table its owner wants gone.  SECURITY DEFINER: any role's DROP records
-- it; it reads only what the server reports as dropped.
CREATE FUNCTION easeml._source_dropped()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	dropped		oid[];
BEGIN
	-- DROP EXTENSION easeml takes the tasks with it
	IF pg_catalog.to_regclass('easeml.tasks') IS NULL THEN
		RETURN;
	END IF;
	-- every DROP in the database comes here (an index, a function, a temp
	-- table): only a read of the tasks, which waits for no writer, unless a
	-- task's source went
	SELECT pg_catalog.array_agg(d.objid) INTO dropped
	  FROM pg_catalog.pg_event_trigger_dropped_objects() d
	 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objsubid OPERATOR(pg_catalog.=) 0;
	IF dropped IS NULL OR NOT EXISTS (
		SELECT 1 FROM easeml.tasks t
		 WHERE t.source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (dropped)) THEN
		RETURN;
	END IF;
	UPDATE easeml.tasks t
	   SET source = 0::pg_catalog.regclass,
		   -- a completed task's models stay in use: only the reason is new
		   status = CASE WHEN t.status = 'completed' THEN t.status ELSE 'failed' END,
		   status_reason = pg_catalog.format('its source %s was dropped', d.object_identity)
	  FROM pg_catalog.pg_event_trigger_dropped_objects() d
	 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objsubid OPERATOR(pg_catalog.=) 0
	   AND t.source::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END;
$$;
REVOKE ALL ON FUNCTION easeml._source_dropped() FROM PUBLIC;

CREATE EVENT TRIGGER easeml_source_dropped ON sql_drop
	EXECUTE FUNCTION easeml._source_dropped();

CREATE FUNCTION easeml.refresh(task text)
RETURNS int
AS 'MODULE_PATHNAME', 'easeml_refresh'
LANGUAGE C VOLATILE
-- it runs statements as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp
SET jit = off;
COMMENT ON FUNCTION easeml.refresh(text) IS
	'take a new snapshot of one of your tasks'' source and train on it from now on; returns the new version';

-- Record every run status change.
CREATE FUNCTION easeml._log_run_event()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- it runs as its owner: only on easeml.runs (a tenant must not attach it
	-- to a table of its own to forge events of other tenants' runs)
	IF TG_RELID <> 'easeml.runs'::regclass THEN
		RAISE EXCEPTION 'easeml._log_run_event() only logs easeml.runs'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	-- a run is born queued or running, queued_at = now(); any other INSERT
	-- is a restore (pg_restore, a dump of runs in flight included), whose
	-- events are restored from run_events itself
	IF (TG_OP = 'INSERT' AND NEW.status IN ('queued', 'running')
		AND NEW.queued_at = now())
		OR (TG_OP = 'UPDATE' AND NEW.status IS DISTINCT FROM OLD.status) THEN
		INSERT INTO easeml.run_events (run_id, tenant, status, detail)
		VALUES (NEW.id, NEW.tenant, NEW.status,
				CASE WHEN NEW.status IN ('failed', 'interrupted', 'cancelled') THEN NEW.error END);
	END IF;
	RETURN NULL;
END;
$$;

CREATE TRIGGER runs_log_event
	AFTER INSERT OR UPDATE ON easeml.runs
	FOR EACH ROW EXECUTE FUNCTION easeml._log_run_event();
REVOKE EXECUTE ON FUNCTION easeml._log_run_event() FROM PUBLIC;

-- Record how a run ended.  Called by the scheduler; invalid trainer output
-- fails the run instead of the statement, so a run never stays 'running'.
-- A refit's score is measured on rows it trained on: it records no score.
CREATE FUNCTION easeml._finish_run(run_id bigint, new_status text, exit_code int,
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
		   seconds = extract(epoch FROM clock_timestamp() - coalesce(r.started_at, r.queued_at))
			   -- [ensemble] an ensemble's cost is its members' runs too (it
			   -- predicts with every member): tied with a member, the member
			   -- ranks first (docs/models.md 8)
			   + CASE WHEN r.purpose = 'ensemble' AND st = 'succeeded' THEN coalesce((
					 SELECT sum(x.seconds) FROM easeml.runs x
					  WHERE x.task_id = r.task_id AND x.purpose = 'select'
						AND x.id IN (SELECT (e ->> 'run_id')::numeric
									   FROM jsonb_array_elements(
										   CASE WHEN jsonb_typeof(m -> 'members') = 'array'
												THEN m -> 'members' ELSE '[]' END) e
									  WHERE jsonb_typeof(e -> 'run_id') = 'number')), 0)
				 ELSE 0 END,
		   exit_code = _finish_run.exit_code,
		   metrics = m,
		   -- [refit] a refit's score is measured on rows it trained on: no
		   -- selection score (its metrics keep it); [ensemble] an ensemble's
		   -- ranks it like a selection run's
		   score = CASE WHEN st = 'succeeded' AND r.purpose IN ('select', 'ensemble') THEN sc END,
		   error = err
	 WHERE r.id = run_id AND r.status IN ('queued', 'running');
	PERFORM easeml._keep_artifacts(run_id);
END;
$$;

-- Artifact retention after a run ended: a run that did not succeed keeps
-- none (nor [ensemble] its validation predictions, which its task's runs
-- keep while an ensemble can select them); of its task's
-- succeeded runs, those above easeml.artifact_max_bytes keep theirs only
-- while they are the best (highest score, then fastest), what
-- deploy('best') would deploy, deployed, or the deployment a rollback
-- returns to (the latest two deployments not rolled back, with their
-- refits; rollback skips older ones whose artifact is gone), or [ensemble]
-- a member of such a run that is an ensemble.
CREATE FUNCTION easeml._keep_artifacts(run_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cap			bigint := pg_size_bytes(coalesce(current_setting('easeml.artifact_max_bytes', true), '16MB'));
	tid			bigint;
	best		bigint;
	pick		bigint;
	keep		bigint[];
BEGIN
	SELECT task_id INTO tid FROM easeml.runs WHERE id = run_id;
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	DELETE FROM easeml.run_predictions p USING easeml.runs r
	 WHERE p.run_id = r.id AND r.id = _keep_artifacts.run_id AND r.status <> 'succeeded';
	SELECT r.id INTO best FROM easeml.runs r
	 WHERE r.task_id = tid AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.score DESC, r.seconds, r.id LIMIT 1;
	pick := easeml._best_deployable(tid);	/* what deploy('best') takes */
	-- [refit] and so is the refit of either
	keep := ARRAY[best, pick] || ARRAY(
		SELECT k.id
		  FROM (SELECT d.run_id, d.refit_run_id FROM easeml.deployments d
				 WHERE d.task_id = tid AND d.rolled_back_at IS NULL
				 ORDER BY d.id DESC LIMIT 2) l
		 CROSS JOIN LATERAL (VALUES (l.run_id), (l.refit_run_id)) k (id)
		 WHERE k.id IS NOT NULL);
	-- [ensemble] the members of a kept ensemble predict with it (compared
	-- as numeric: the list is the trainer's, a run_id of 1.5 or 1e20 is no
	-- run and no error either)
	keep := array_remove(keep || ARRAY(
		SELECT y.id FROM easeml.runs y
		 WHERE y.task_id = tid
		   AND y.id::numeric IN (
			   SELECT (e ->> 'run_id')::numeric
				 FROM easeml.runs x
				CROSS JOIN LATERAL jsonb_array_elements(
					CASE WHEN jsonb_typeof(x.metrics -> 'members') = 'array'
						 THEN x.metrics -> 'members' ELSE '[]' END) e
				WHERE x.id = ANY (keep) AND x.purpose = 'ensemble'
				  AND jsonb_typeof(e -> 'run_id') = 'number')), NULL);
	DELETE FROM easeml.artifacts a USING easeml.runs r
	 WHERE a.run_id = r.id AND r.task_id = tid AND a.bytes > cap
	   AND r.status IN ('succeeded', 'failed', 'cancelled', 'interrupted')
	   AND NOT r.id = ANY (keep);
	-- [ensemble] validation predictions while an ensemble can select them:
	-- a run of an older snapshot is never selected again (snapshots only
	-- move on, queued ensembles with them), nor one below the pool's best
	-- 200 while the scores stand (a new run only pushes others down; after
	-- easeml.alter_task changes the metric or features, the pool ranks the
	-- runs that kept theirs)
	DELETE FROM easeml.run_predictions p USING easeml.runs r, easeml.tasks t
	 WHERE p.run_id = r.id AND r.task_id = tid AND t.id = tid
	   AND r.status NOT IN ('queued', 'running')
	   AND (r.snapshot_version IS DISTINCT FROM t.snapshot_version
			OR r.id IN (SELECT x.run_id FROM easeml._ensemble_pool(tid) x WHERE NOT x.selectable));
END;
$$;

-- ---------------------------------------------------------------------------
-- Views
-- ---------------------------------------------------------------------------
-- score is the task metric's quality (higher is better, docs/data.md);
-- metric_value is the metric itself, score_se and metric_se their
-- standard errors (docs/results.md).  tied_with_best: on the current
-- snapshot, within one standard error of the top score, so not told apart
-- from it by the validation rows; among those the faster run ranks first
-- (rank 1 is what deploy('best') deploys).  Results on an older snapshot
-- version are stale and rank after the current ones.
CREATE VIEW easeml.leaderboard WITH (security_invoker = true) AS
SELECT l.task, l.tenant,
	   rank() OVER (PARTITION BY l.task_id
					ORDER BY l.stale, l.tied_with_best DESC,
							 CASE WHEN l.tied_with_best THEN l.seconds END,
							 l.score DESC, l.seconds, l.run_id)::int AS rank,
	   l.model, l.family, l.score, l.seconds, l.run_id, l.task_id, l.finished_at,
	   l.metric, l.metric_value, l.snapshot_version, l.stale, l.score_se, l.metric_se,
	   l.tied_with_best, l.generated
  FROM (SELECT b.*,
			   NOT b.stale AND b.score >= first_value(b.score) OVER w
				   - coalesce(first_value(b.score_se) OVER w, 0) AS tied_with_best
		  FROM (SELECT t.name AS task,
					   t.tenant,
					   m.name AS model,
					   m.family,
					   r.score,
					   r.seconds,
					   r.id AS run_id,
					   r.task_id,
					   r.finished_at,
					   mt.metric,
					   easeml._metric_value(r.metrics, mt.metric, r.score) AS metric_value,
					   r.snapshot_version,
					   r.snapshot_version IS DISTINCT FROM t.snapshot_version AS stale,
					   easeml._score_se(r.metrics, mt.metric, r.score) AS score_se,
					   easeml._metric_se(r.metrics, mt.metric, r.score) AS metric_se,
					   m.generated_for IS NOT NULL AS generated
				  FROM easeml.runs r
				  JOIN easeml.tasks t ON t.id = r.task_id
				  JOIN easeml.models m ON m.id = r.model_id
				 CROSS JOIN LATERAL (SELECT coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric) mt
				 WHERE r.status = 'succeeded' AND r.score IS NOT NULL) b
		WINDOW w AS (PARTITION BY b.task_id ORDER BY b.stale, b.score DESC, b.seconds, b.run_id)) l;
COMMENT ON VIEW easeml.leaderboard IS
	'succeeded runs per task, best first by the task''s metric (among runs within one standard error of the top score, the faster first), each score with its standard error; results on an older snapshot are stale';

-- [budget] The wall seconds a task's search has spent as of at: its
-- selection runs (not the refits on every row) on the given snapshot
-- version, those that ended by their recorded seconds, those running by
-- the time since they started; runs that never started count 0.  The
-- scheduler (src/worker/catalog.c, with now() of its load) and task_overview
-- read the same function.
CREATE FUNCTION easeml._spent_seconds(task_id bigint, snapshot_version int, at timestamptz)
RETURNS float8
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(sum(CASE WHEN r.status = 'running'
							 THEN greatest(extract(epoch FROM _spent_seconds.at - r.started_at)::float8, 0)
							 ELSE greatest(coalesce(r.seconds, 0), 0) END), 0)
	  FROM easeml.runs r
	 WHERE r.task_id = _spent_seconds.task_id AND r.purpose = 'select'
	   AND r.started_at IS NOT NULL
	   AND r.snapshot_version IS NOT DISTINCT FROM _spent_seconds.snapshot_version
$$;

CREATE VIEW easeml.task_overview WITH (security_invoker = true) AS
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
	   (SELECT l.model FROM easeml.leaderboard l
		 WHERE l.task_id = t.id AND l.rank = 1 AND NOT l.stale) AS best_model,
	   t.status_reason,
	   coalesce(t.metric, (easeml._metrics(t.kind))[1]) AS metric,
	   t.folds,
	   t.snapshot_version,
	   v.validation_rows,
	   easeml._resolvable_difference(v.validation_rows) AS resolvable_difference,
	   easeml._resolvable_difference(v.validation_rows) > 0.05 AS small_validation,
	   t.budget_seconds,
	   b.spent_seconds,
	   CASE WHEN t.budget_seconds IS NOT NULL
			THEN greatest(t.budget_seconds - b.spent_seconds, 0) END AS remaining_seconds
  FROM easeml.tasks t
  LEFT JOIN easeml.runs r ON r.task_id = t.id AND r.purpose = 'select'
 CROSS JOIN LATERAL (SELECT easeml._validation_rows(t.n_rows, t.val_fraction, t.folds)
						 AS validation_rows) v
 CROSS JOIN LATERAL (SELECT easeml._spent_seconds(t.id, t.snapshot_version, now())
						 AS spent_seconds) b
 GROUP BY t.id, v.validation_rows, b.spent_seconds;
COMMENT ON VIEW easeml.task_overview IS
	'one row per task: run counts, the best score and the leaderboard''s first model on its current snapshot, how finely its validation rows tell scores apart, and its time budget, the seconds spent and left';

-- Estimated seconds for every (task, candidate): the measured time when it
-- ran, else the model's seconds per cell (rows x features x folds: a k-fold
-- run fits k models) on finished runs times the task's cells, else the
-- model's cost_factor times a per-unit time calibrated on all finished
-- runs (1e-7 s before any run finished).
-- [cost] fn, view: the scheduler's estimates (src/sql/sql_cost.c).  The rule
-- this view had before (seconds per cell of each model) is not what the
-- scheduler uses any more: the view now shows the cost model's estimate
-- of every enabled candidate of every task you can see, for its size and
-- its own finished runs; basis says whether the task ran the model
CREATE FUNCTION easeml._cost_estimates(OUT task_id bigint, OUT model_id int,
	OUT seconds float8, OUT basis text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_cost_estimates'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._cost_estimates() IS
	'internal: the rows of the view easeml.cost_estimates';
GRANT EXECUTE ON FUNCTION easeml._cost_estimates() TO PUBLIC;
CREATE VIEW easeml.cost_estimates WITH (security_invoker = true) AS
SELECT task_id, model_id, seconds, basis FROM easeml._cost_estimates();
COMMENT ON VIEW easeml.cost_estimates IS
	'the scheduler''s estimated training seconds (CPU) of every enabled candidate for each of your tasks: its cost model for the task''s size, conditioned on the task''s own finished runs; basis is measured when the task ran the model, else estimated';

-- ---------------------------------------------------------------------------
-- Admin functions
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml.add_tenant(role name, max_parallel int DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r			record;
	other		name;
BEGIN
	-- [trust] a tenant is an ordinary login role that row-level security binds
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a login role: SELECT easeml.add_tenant(''lab_a'');';
	END IF;
	SELECT oid, rolsuper, rolbypassrls, rolcanlogin INTO r FROM pg_roles WHERE rolname = role;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'role "%" does not exist', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Create it first: CREATE ROLE %I LOGIN;', role);
	END IF;
	-- [binding] a tenant is bound by its role and its name: a tenant's
	-- role renamed (ALTER ROLE lab_a RENAME TO x) is still tenant lab_a,
	-- and sees none of its rows until it has that name again; it is not
	-- made a second tenant (tenants.role_oid is unique)
	SELECT t.name INTO other FROM easeml.tenants t
	 WHERE t.role_oid = r.oid AND t.name <> add_tenant.role;
	IF FOUND THEN
		RAISE EXCEPTION 'role "%" is already tenant "%", registered under the name it had then', role, other
			USING ERRCODE = 'duplicate_object',
				  HINT = format('SELECT easeml.rename_tenant(%L, %L) moves tenant %I, with its tasks and runs, to the role''s new name; or give the role its old name back (ALTER ROLE %I RENAME TO %I); or remove the old tenant with its tasks first (DELETE FROM easeml.tenants WHERE name = %L).',
								other, role, other, role, other, other);
	END IF;
	IF r.rolsuper OR r.rolbypassrls THEN
		RAISE EXCEPTION 'role "%" cannot be a tenant: it is a superuser or bypasses row-level security', role
			USING ERRCODE = 'invalid_role_specification',
				  HINT = 'Row-level security keeps tenants apart and does not bind such roles: create an ordinary role for the tenant.';
	END IF;
	IF NOT r.rolcanlogin THEN
		RAISE EXCEPTION 'role "%" cannot be a tenant: it cannot log in', role
			USING ERRCODE = 'invalid_role_specification',
				  HINT = format('Allow it with ALTER ROLE %I LOGIN;', role);
	END IF;
	IF max_parallel IS NOT NULL AND max_parallel < 1 THEN
		RAISE EXCEPTION 'max_parallel must be positive or NULL'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'NULL leaves the tenant without a cap of its own (the fair share still applies).';
	END IF;
	-- [binding] easeml._bind_tenant records the role's object id; adding
	-- a tenant again binds its name to the role that has it now
	INSERT INTO easeml.tenants (name, max_parallel) VALUES (role, max_parallel)
	ON CONFLICT (name) DO UPDATE SET max_parallel = EXCLUDED.max_parallel,
									 role_oid = EXCLUDED.role_oid;
END;
$$;
COMMENT ON FUNCTION easeml.add_tenant(name, int) IS
	'register a role as a tenant (admin only); max_parallel caps its concurrent runs';

-- [rename] A tenant's role renamed (ALTER ROLE lab_a RENAME TO lab_b) is
-- still tenant lab_a, and sees none of its rows: every row of the tenant's
-- is keyed by the tenant's name (easeml._bound_tenant).  An administrator
-- moves the tenant to the role's new name: its registration (limits,
-- budget, creation time, role), its tasks, and every row of a table of
-- schema easeml with a column tenant (runs, events, decisions, artifacts,
-- deployments, progress, predictions), in one transaction.  It refuses
-- unless the role bound to old_name (tenants.role_oid) is now called
-- new_name, and unless new_name is no tenant.  It waits for the writers of
-- those tables and holds off new ones until commit (SHARE ROW EXCLUSIVE,
-- taken all at once), so that no run, event or progress row of the
-- tenant's read under the old name is written after the move.  A
-- snapshot's row-level security policy holds the digest of the rules
-- under which its tenant read the source (easeml._access_fingerprint),
-- and the digest names the role: a policy whose digest is the role's
-- under its old name gets the digest under its new name; one whose rules
-- had changed before stays refused until easeml.refresh.  Columns that record who did something (deployments'
-- deployed_by and rolled_back_by) keep the name the role had then.
-- Returns the number of tasks moved.
CREATE FUNCTION easeml.rename_tenant(old_name name, new_name name)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- after its tables are locked it holds off every writer of easeml's tables:
-- a lock it then waits for (a snapshot a trainer reads, a row a tenant
-- locked) must not make that wait unbounded
SET lock_timeout = '5s'
AS $$
DECLARE
	bound		oid;
	now_name	name;
	rel			regclass;
	k			record;
	p			record;
	old_fp		text;
	new_fp		text;
	moved		bigint;
	left_refused int := 0;
	tables		text;
	deadline	timestamptz;
BEGIN
	IF old_name IS NULL OR new_name IS NULL THEN
		RAISE EXCEPTION 'old_name and new_name must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'After ALTER ROLE lab_a RENAME TO lab_b, run SELECT easeml.rename_tenant(''lab_a'', ''lab_b'');';
	END IF;
	IF NOT easeml._is_admin() THEN
		RAISE EXCEPTION 'only a superuser may rename a tenant'
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'An administrator renames the role and then the tenant; a tenant asks its administrator.';
	END IF;
	-- every table of a tenant's rows, all at once or none (waiting for one
	-- while holding another could deadlock with the scheduler): wait for
	-- their writers, hold off new ones until commit; reads go on
	SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.relname) INTO tables
	  FROM pg_class c
	 WHERE c.relnamespace = 'easeml'::regnamespace AND c.relkind IN ('r', 'p')
	   AND (c.oid = 'easeml.tenants'::regclass
			OR EXISTS (SELECT 1 FROM pg_attribute a
						WHERE a.attrelid = c.oid AND a.attname = 'tenant'
						  AND a.atttypid = 'name'::regtype AND NOT a.attisdropped));
	deadline := clock_timestamp() + interval '60 seconds';
	LOOP
		BEGIN
			EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', tables);
			EXIT;
		EXCEPTION WHEN lock_not_available THEN
			IF clock_timestamp() > deadline THEN
				RAISE EXCEPTION 'tenant "%" was not renamed: easeml''s tables were written all the time for 60 seconds', old_name
					USING ERRCODE = 'lock_not_available',
						  HINT = 'A transaction that wrote them may still be open (pg_locks and pg_stat_activity show it): end it, and run easeml.rename_tenant again.';
			END IF;
			PERFORM pg_sleep(0.02);
		END;
	END LOOP;

	SELECT n.role_oid INTO bound FROM easeml.tenants n WHERE n.name = old_name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'tenant "%" does not exist', old_name
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name, role_oid::regrole AS role FROM easeml.tenants lists the tenants and the roles they are bound to.';
	END IF;
	now_name := (SELECT r.rolname FROM pg_roles r WHERE r.oid = bound);
	IF now_name IS NULL THEN
		RAISE EXCEPTION 'the role of tenant "%" no longer exists', old_name
			USING ERRCODE = 'undefined_object',
				  HINT = format('A tenant whose role was dropped is not renamed: SELECT easeml.add_tenant(%L) binds the tenant, with its tasks, to the role that has the name now, or DELETE FROM easeml.tenants WHERE name = %L removes it with its tasks.',
								old_name, old_name);
	END IF;
	IF now_name = old_name THEN
		RAISE EXCEPTION 'the role of tenant "%" is still called "%"', old_name, old_name
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = format('Rename the role first (ALTER ROLE %I RENAME TO %I), then SELECT easeml.rename_tenant(%L, %L).',
								old_name, new_name, old_name, new_name);
	END IF;
	IF now_name <> new_name THEN
		RAISE EXCEPTION 'the role of tenant "%" is called "%", not "%"', old_name, now_name, new_name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = format('The tenant takes the name its role has: SELECT easeml.rename_tenant(%L, %L); or ALTER ROLE %I RENAME TO %I first.',
								old_name, now_name, now_name, new_name);
	END IF;
	IF EXISTS (SELECT 1 FROM easeml.tenants n WHERE n.name = new_name) THEN
		RAISE EXCEPTION 'tenant "%" already exists', new_name
			USING ERRCODE = 'duplicate_object',
				  HINT = format('Another tenant has the name (its role was dropped, and the renamed role took the name): remove it with its tasks first (DELETE FROM easeml.tenants WHERE name = %L), or give the role another name and rename the tenant to that.',
								new_name);
	END IF;

	BEGIN
	-- the snapshots' digests, before anything moves (the role is found by
	-- its object id, and named as told)
	FOR k IN SELECT t.id, t.source FROM easeml.tasks t WHERE t.tenant = old_name ORDER BY t.id LOOP
		old_fp := easeml._access_fingerprint_as(k.source, bound, old_name);
		new_fp := easeml._access_fingerprint_as(k.source, bound, new_name);
		FOR p IN
			SELECT c.relname, pg_get_expr(y.polqual, y.polrelid) AS qual
			  FROM pg_class c JOIN pg_policy y ON y.polrelid = c.oid AND y.polname = 'tenant_access'
			 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace
			   AND c.relname ~ ('^task_' || k.id || '_v[0-9]+$')
			 ORDER BY c.relname
		LOOP
			IF old_fp IS NOT NULL AND strpos(p.qual, quote_literal(old_fp)) > 0 THEN
				EXECUTE format('ALTER POLICY tenant_access ON easeml_snapshots.%I USING ((SELECT easeml._snapshot_readable(%s, %L)))',
							   p.relname, k.id, new_fp);
			ELSE
				left_refused := left_refused + 1;
			END IF;
		END LOOP;
	END LOOP;

	-- the registration keeps its row (limits, budget, role_oid); the tasks
	-- follow it within this transaction (easeml._validate_task allows it)
	SET CONSTRAINTS easeml.tasks_tenant_fkey DEFERRED;
	UPDATE easeml.tenants SET name = new_name WHERE name = old_name;
	UPDATE easeml.tasks SET tenant = new_name WHERE tenant = old_name;
	GET DIAGNOSTICS moved = ROW_COUNT;
	SET CONSTRAINTS easeml.tasks_tenant_fkey IMMEDIATE;
	FOR rel IN
		SELECT c.oid::regclass
		  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		 WHERE c.relnamespace = 'easeml'::regnamespace AND c.relkind IN ('r', 'p')
		   AND a.attname = 'tenant' AND a.atttypid = 'name'::regtype AND NOT a.attisdropped
		   AND c.oid <> 'easeml.tasks'::regclass
		 ORDER BY c.relname
	LOOP
		EXECUTE format('UPDATE %s SET tenant = $1 WHERE tenant = $2', rel) USING new_name, old_name;
	END LOOP;
	EXCEPTION WHEN lock_not_available THEN
		RAISE EXCEPTION 'tenant "%" was not renamed: a lock on one of its snapshots or rows was held for 5 seconds', old_name
			USING ERRCODE = 'lock_not_available',
				  HINT = 'A trainer reading one of its snapshots, or a transaction that locked one of its rows, holds it (pg_locks and pg_stat_activity show which): run easeml.rename_tenant again once it has ended.';
	END;
	IF left_refused > 0 THEN
		RAISE WARNING '% snapshot table(s) of tenant "%" stay refused: the rules under which the tenant reads their source changed before the rename', left_refused, new_name
			USING HINT = 'SELECT easeml.refresh(task) as the tenant takes a new snapshot under the rules of now.';
	END IF;
	RETURN moved;
END;
$$;
COMMENT ON FUNCTION easeml.rename_tenant(name, name) IS
	'after ALTER ROLE old RENAME TO new: move tenant old, with its tasks, runs and every row keyed by its name, to the role''s new name (admin only); returns the tasks moved';
REVOKE ALL ON FUNCTION easeml.rename_tenant(name, name) FROM PUBLIC;

CREATE FUNCTION easeml.set_tenant_limits(role name, max_tasks int DEFAULT NULL,
										 max_rows bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a tenant: SELECT easeml.set_tenant_limits(''lab_a'', max_tasks => 10);';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.tenants WHERE name = role) THEN
		RAISE EXCEPTION 'role "%" is not an easeml tenant', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Register it first: SELECT easeml.add_tenant(%L);', role);
	END IF;
	IF max_tasks < 1 OR max_rows < 1 THEN
		RAISE EXCEPTION 'max_tasks and max_rows must be positive or NULL'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'NULL means no limit.';
	END IF;
	UPDATE easeml.tenants t
	   SET max_tasks = set_tenant_limits.max_tasks,
		   max_rows = set_tenant_limits.max_rows
	 WHERE t.name = role;
END;
$$;
COMMENT ON FUNCTION easeml.set_tenant_limits(name, int, bigint) IS
	'limit how many tasks a tenant may have and how many usable rows a task''s source may hold (admin only; NULL: no limit); existing tasks are kept';

-- [scheduler] fn: the shared CSV reader (src/sql/sql_history.c, src/core/csv.c) for load_history
CREATE FUNCTION easeml._csv_cells(csv text, path text,
	OUT line int, OUT col int, OUT row_id text, OUT header text, OUT value float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_csv_cells'
LANGUAGE C IMMUTABLE STRICT;
REVOKE ALL ON FUNCTION easeml._csv_cells(text, text) FROM PUBLIC;

CREATE FUNCTION easeml.load_history(path text, source text DEFAULT NULL,
									one_minus boolean DEFAULT false,
									kind text DEFAULT 'classification')
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	lines		int[];
	cols		int[];
	ids			text[];
	headers		text[];
	vals		float8[];
	ncol		int;
	model_ids	int[] := '{}';
	unknown		text[] := '{}';
	q			float8;
	n			int := 0;
	mid			int;
BEGIN
	IF path IS NULL THEN
		RAISE EXCEPTION 'path must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass the path of a CSV file the server can read, e.g. easeml.load_history(''history.csv'').';
	END IF;
	IF kind IS NULL OR kind NOT IN ('classification', 'regression') THEN
		RAISE EXCEPTION 'kind must be classification or regression, not %', coalesce(quote_literal(kind), 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The rows of a history file are the scores of one kind of task: pass kind => ''regression'' for R^2 scores.';
	END IF;
	-- the shared CSV reader (src/core/csv.c) parses the file: quotes, line breaks
	-- in quotes, CRLF, missing cells, repeated dataset ids; every data row
	-- has every column, so the first ncol cells carry the header in order
	SELECT array_agg(c.line ORDER BY c.line, c.col), array_agg(c.col ORDER BY c.line, c.col),
		   array_agg(c.row_id ORDER BY c.line, c.col), array_agg(c.header ORDER BY c.line, c.col),
		   array_agg(c.value ORDER BY c.line, c.col), count(DISTINCT c.col)
	  INTO lines, cols, ids, headers, vals, ncol
	  FROM easeml._csv_cells(pg_read_file(path), path) c;
	FOR j IN 1..ncol LOOP
		SELECT id INTO mid FROM easeml.models WHERE name = headers[j];
		model_ids := model_ids || mid;
		IF mid IS NULL THEN
			unknown := unknown || headers[j];
		END IF;
	END LOOP;
	IF cardinality(unknown) = ncol THEN
		RAISE EXCEPTION 'no column of "%" names a model of easeml.models', path
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The header must hold easeml model names, e.g. ' ||
						 (SELECT string_agg(name, ',' ORDER BY id) FROM (SELECT id, name FROM easeml.models ORDER BY id LIMIT 3) m) || '.';
	END IF;
	IF cardinality(unknown) > 0 THEN
		RAISE NOTICE 'ignoring % column(s) that name no model: %',
			cardinality(unknown), array_to_string(unknown, ', ');
	END IF;
	FOR i IN 1..cardinality(vals) LOOP
		CONTINUE WHEN model_ids[cols[i] - 1] IS NULL OR vals[i] IS NULL;
		q := CASE WHEN one_minus THEN 1 - vals[i] ELSE vals[i] END;
		IF NOT (q >= 0 AND q <= 1) THEN
			RAISE EXCEPTION 'line % column % of "%": quality % is outside [0, 1]', lines[i], cols[i], path, q
				USING ERRCODE = 'numeric_value_out_of_range',
					  HINT = CASE WHEN NOT one_minus THEN 'For an error matrix, pass one_minus => true.' END;
		END IF;
		INSERT INTO easeml.history (dataset, model_id, quality, source, kind)
		VALUES (ids[i], model_ids[cols[i] - 1], q, coalesce(source, path), kind)
		ON CONFLICT (dataset, model_id) DO UPDATE
			SET quality = EXCLUDED.quality, source = EXCLUDED.source, kind = EXCLUDED.kind;
		n := n + 1;
	END LOOP;
	PERFORM easeml.wake_scheduler();
	RETURN n;
END;
$$;
COMMENT ON FUNCTION easeml.load_history(text, text, boolean, text) IS
	'load seed history for the scheduler''s priors from a server-side CSV (admin only): header = model names, rows = dataset id then scores in [0,1] of tasks of one kind; returns the cells loaded';
REVOKE ALL ON FUNCTION easeml.load_history(text, text, boolean, text) FROM PUBLIC;
-- [scheduler] end

CREATE FUNCTION easeml.policies()
RETURNS text[]
AS 'MODULE_PATHNAME', 'easeml_policies'
LANGUAGE C STABLE;
COMMENT ON FUNCTION easeml.policies() IS 'names of the scheduling policies';

-- The policy grammar's options, from the table the parser reads
-- (src/core/policy_spec.c; docs/scheduler.md 3 holds the same table).
CREATE FUNCTION easeml.policy_options(
	OUT name text, OUT type text, OUT default_value text, OUT "values" text, OUT doc text,
	OUT after_auto text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_policy_options'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml.policy_options() IS
	'the options of a policy spec NAME[:OPTION]...: name, type, default, the values it takes, what it does, and after auto: applies (to every candidate and to its choice) or refused (it selects what auto chooses)';

-- What an easeml.policy setting stands for: its named spec expanded
-- ('default' -> 'auto', 'tenant_bo' -> 'rr:cost:acq=ei').
CREATE FUNCTION easeml.policy_spec(policy text)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_spec'
LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION easeml.policy_spec(text) IS
	'the spec a policy setting stands for: a named spec (default, tenant_bo) replaced by its expansion; 22023 for a spec easeml does not know';

CREATE FUNCTION easeml.scheduler_status(
	OUT pid int,
	OUT running int,
	OUT max_workers int,
	OUT decisions bigint,
	OUT policy text,
	OUT started_at timestamptz,
	OUT loop_at timestamptz,
	OUT errors bigint,
	OUT last_error_at timestamptz,
	OUT last_error text,
	OUT wakeups bigint,
	OUT wakeups_folded bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'easeml_scheduler_status'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION easeml.scheduler_status() IS
	'the scheduler worker as seen from shared memory; pid is NULL when it is not running; loop_at is when its loop last went round, errors how many rounds failed since it started, last_error (SQLSTATE: message) the latest, shown to pg_read_all_stats; wakeups how often committing transactions woke it since it started, wakeups_folded how many wake-ups easeml.wake_interval folded into later ones';

-- ---------------------------------------------------------------------------
-- Replay simulator (src/core/replay_*.c) over server-side CSV files, admin only
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml._replay_run(quality_csv text, cost_csv text, sizes_csv text,
								   tenants int, devices int, policies text[], draws int,
								   seed bigint, thresholds float8[], one_minus boolean,
								   cost_model text, curve boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_replay'
LANGUAGE C VOLATILE;

CREATE FUNCTION easeml.replay(
	quality_csv text,
	cost_csv text DEFAULT NULL,
	sizes_csv text DEFAULT NULL,
	tenants int DEFAULT 20,
	devices int DEFAULT 1,
	policies text[] DEFAULT '{popular,rr,hybrid:cost}',
	draws int DEFAULT 5,
	seed bigint DEFAULT 1,
	thresholds float8[] DEFAULT '{0.05,0.02,0.01,0.005}',
	one_minus boolean DEFAULT false,
	cost_model text DEFAULT 'size_gp')
RETURNS TABLE (policy text, threshold float8, median_seconds float8,
			   median_speedup float8, max_speedup float8)
LANGUAGE sql VOLATILE
AS $$
	SELECT * FROM easeml._replay_run(quality_csv, cost_csv, sizes_csv, tenants, devices,
									 policies, draws, seed, thresholds, one_minus,
									 cost_model, false)
		AS r(policy text, threshold float8, median_seconds float8,
			 median_speedup float8, max_speedup float8)
$$;
COMMENT ON FUNCTION easeml.replay(text, text, text, int, int, text[], int, bigint, float8[], boolean, text) IS
	'replay multi-tenant model selection over a quality matrix (admin only): per policy and loss threshold, the median simulated time to reach it and the speedup over the first policy';

CREATE FUNCTION easeml.replay_curve(
	quality_csv text,
	cost_csv text DEFAULT NULL,
	sizes_csv text DEFAULT NULL,
	tenants int DEFAULT 20,
	devices int DEFAULT 1,
	policies text[] DEFAULT '{popular,rr,hybrid:cost}',
	draws int DEFAULT 5,
	seed bigint DEFAULT 1,
	one_minus boolean DEFAULT false,
	cost_model text DEFAULT 'size_gp')
RETURNS TABLE (policy text, seconds float8, mean_loss float8, median_loss float8)
LANGUAGE sql VOLATILE
AS $$
	SELECT * FROM easeml._replay_run(quality_csv, cost_csv, sizes_csv, tenants, devices,
									 policies, draws, seed, '{0.01}', one_minus,
									 cost_model, true)
		AS r(policy text, seconds float8, mean_loss float8, median_loss float8)
$$;
COMMENT ON FUNCTION easeml.replay_curve(text, text, text, int, int, text[], int, bigint, boolean, text) IS
	'the global average accuracy loss over simulated time of each policy, averaged over draws on a common grid (admin only)';

-- ---------------------------------------------------------------------------
-- Tenant writes to runs: only queueing a run and requesting a cancel.
-- Column privileges and RLS decide what a tenant may touch; this trigger
-- decides the values (a tenant can never write a score or a status).
-- ---------------------------------------------------------------------------
-- A refit of a run of the candidate (runs.purpose = 'refit') does not keep
-- the candidate from being queued.
CREATE FUNCTION easeml._guard_run()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
	-- [spaces] a generated candidate belongs to its task (dropping that
	-- task drops it): it is never a run of another one
	IF m.generated_for IS NOT NULL AND m.generated_for <> t.id THEN
		RAISE EXCEPTION 'model % was generated for another task', m.name
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A generated candidate is trained only for the task it was generated for.';
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
	-- [access] the run would train on the snapshot: the tenant must still
	-- be allowed to read it (its policy raises why not)
	IF t.snapshot_version IS NOT NULL
		AND pg_catalog.to_regclass(pg_catalog.format('easeml_snapshots.%I',
			easeml._snapshot_name(t.id, t.snapshot_version))) IS NOT NULL THEN
		EXECUTE pg_catalog.format('SELECT 1 FROM easeml_snapshots.%I LIMIT 1',
								  easeml._snapshot_name(t.id, t.snapshot_version));
	END IF;
	IF EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.model_id = m.id
				AND r.status IN ('queued', 'running') AND r.purpose = 'select') THEN
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

CREATE TRIGGER runs_guard
	BEFORE INSERT ON easeml.runs
	FOR EACH ROW EXECUTE FUNCTION easeml._guard_run();
CREATE TRIGGER runs_wake
	AFTER INSERT OR UPDATE OF cancel_requested ON easeml.runs
	FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger();
-- [hardening] runs deleted (a task dropped): the scheduler removes their
-- run directories at once, also while easeml.enabled is off
CREATE TRIGGER runs_sweep
	AFTER DELETE ON easeml.runs
	FOR EACH STATEMENT EXECUTE FUNCTION easeml._wake_trigger('sweep');

CREATE FUNCTION easeml.enqueue(task text, model text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	tid			bigint;
	mid			int;
	rid			bigint;
BEGIN
	-- [trust]
	IF task IS NULL OR model IS NULL THEN
		RAISE EXCEPTION 'task and model must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'For example SELECT easeml.enqueue(''my_task'', ''knn-5'');';
	END IF;
	SELECT id INTO tid FROM easeml.tasks WHERE tenant = current_user AND name = task;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" does not exist for tenant "%"', task, current_user
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	SELECT id INTO mid FROM easeml.models WHERE name = model;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'model "%" does not exist', model
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.models lists the candidates.';
	END IF;
	INSERT INTO easeml.runs (task_id, model_id) VALUES (tid, mid)
	RETURNING id INTO rid;
	RETURN rid;
END;
$$;
COMMENT ON FUNCTION easeml.enqueue(text, text) IS
	'queue one candidate for one of your tasks ahead of the scheduler''s own choices; returns the run id';

CREATE FUNCTION easeml.drop_task(task text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_drop_task'
LANGUAGE C VOLATILE
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.drop_task(text) IS
	'delete one of your tasks with its runs, decisions and artifacts (running trainers are stopped); returns its id';

CREATE FUNCTION easeml.cancel(run_id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_cancel'
LANGUAGE C VOLATILE
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.cancel(bigint) IS
	'cancel a queued or running run of yours; returns cancelled, or cancelling while the trainer of a running run is being stopped';

-- ---------------------------------------------------------------------------
-- The trainer protocol: the functions the trainer process calls over libpq
-- live in a schema of their own, easeml_trainer, so that easeml holds the
-- user API only.  None may be executed by PUBLIC: a superuser, or a login
-- role easeml.grant_trainer names, which must then prove with the run's
-- token that it is the run's trainer (easeml_trainer.attach(run, token)).
-- ---------------------------------------------------------------------------
CREATE SCHEMA easeml_trainer;
COMMENT ON SCHEMA easeml_trainer IS
	'easeml: the trainer protocol, the functions the trainer process calls (not for users)';
GRANT USAGE ON SCHEMA easeml_trainer TO PUBLIC;

-- Raises unless this session's user is a superuser or the session proved
-- it is this run's trainer (easeml_trainer.attach(run, token)).
CREATE FUNCTION easeml._trainer_authorize(run_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_trainer_authorize'
LANGUAGE C STABLE STRICT;

-- What the trainer needs to train one run (unchecked: easeml_trainer.spec
-- checks that the caller is the run's trainer and calls it).
CREATE FUNCTION easeml._trainer_spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
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
	PERFORM easeml._check_source(r.source);
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
COMMENT ON FUNCTION easeml._trainer_spec(bigint) IS
	'internal: what the trainer needs to train one run, including its COPY query';

CREATE FUNCTION easeml_trainer.data_session(run_id bigint)
RETURNS name
AS 'MODULE_PATHNAME', 'easeml_trainer_data_session'
LANGUAGE C VOLATILE STRICT
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml_trainer.data_session(bigint) IS
	'internal: for the rest of the current transaction, act as the run''s tenant inside a security-restricted operation';

-- [trust] the trainer's session registers itself so that the scheduler can
-- end it with its trainer (src/sql/sql_trainer.c; the registry: src/module/trainer_session.c)
CREATE FUNCTION easeml_trainer.attach(run_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_trainer_attach'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION easeml_trainer.attach(bigint) IS
	'internal: record this session as the database session of the run''s trainer, which the scheduler ends when the trainer ends';

-- The trainer's progress: the run's latest epoch, loss and time, and a row
-- of its learning curve.  NaN (the trainer's "not measured") is NULL.
CREATE FUNCTION easeml_trainer.progress(run_id bigint, epoch int, loss float8, score float8)
RETURNS void
LANGUAGE plpgsql
-- [slurm] a remote trainer's login role calls it: checked, as its owner
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ten			name;
	n			bigint;
BEGIN
	-- [slurm] only for the run this session proved it trains (docs/scale-out.md)
	PERFORM easeml._trainer_authorize(progress.run_id);
	-- Best effort: a row another transaction keeps locked (its tenant's
	-- open transaction that cancelled it, say) is skipped, not waited for
	-- with the trainer's lock_timeout at every report while training
	-- stalls; the next report tries again, the result still waits.
	PERFORM FROM easeml.runs r
	 WHERE r.id = progress.run_id AND r.status IN ('queued', 'running')
	   FOR NO KEY UPDATE SKIP LOCKED;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	UPDATE easeml.runs r
	   SET epoch = progress.epoch,
		   loss = nullif(progress.loss, 'NaN'::float8),
		   progress_at = clock_timestamp()
	 WHERE r.id = progress.run_id AND r.status IN ('queued', 'running')
	RETURNING r.tenant INTO ten;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	INSERT INTO easeml.run_progress (run_id, tenant, epoch, loss, score)
	VALUES (progress.run_id, ten, progress.epoch,
			nullif(progress.loss, 'NaN'::float8), nullif(progress.score, 'NaN'::float8));
	SELECT count(*) INTO n FROM easeml.run_progress p WHERE p.run_id = progress.run_id;
	IF n > easeml._progress_cap() THEN
		DELETE FROM easeml.run_progress p
		 USING (SELECT q.id, row_number() OVER (ORDER BY q.id) AS i
				  FROM easeml.run_progress q WHERE q.run_id = progress.run_id) x
		 WHERE p.id = x.id AND x.i % 2 = 0 AND x.i < n;
	END IF;
END;
$$;
COMMENT ON FUNCTION easeml_trainer.progress(bigint, int, float8, float8) IS
	'internal: the trainer reports its epoch, training loss and (when measured) validation score while it trains';

-- the three-argument form trainers before the validation score used
CREATE FUNCTION easeml_trainer.progress(run_id bigint, epoch int, loss float8)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml_trainer.progress(run_id, epoch, loss, NULL::float8);
$$;
COMMENT ON FUNCTION easeml_trainer.progress(bigint, int, float8) IS
	'internal: the trainer reports its epoch and loss while it trains';

CREATE FUNCTION easeml_trainer.artifact(run_id bigint, data bytea)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml._trainer_authorize(artifact.run_id);
	INSERT INTO easeml.artifacts (run_id, tenant, bytes, data)
	SELECT r.id, r.tenant, octet_length(artifact.data), artifact.data
	  FROM easeml.runs r
	 WHERE r.id = artifact.run_id AND r.status IN ('queued', 'running')
	ON CONFLICT (run_id) DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes;
$$;
COMMENT ON FUNCTION easeml_trainer.artifact(bigint, bytea) IS
	'internal: the trainer stores the trained parameters of its run';

-- ---------------------------------------------------------------------------
-- Row-level security and privileges
-- ---------------------------------------------------------------------------
ALTER TABLE easeml.tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenants_self ON easeml.tenants FOR SELECT
	USING (name = current_user
		   AND role_oid = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = current_user));

ALTER TABLE easeml.tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY tasks_own ON easeml.tasks
	USING (tenant = (SELECT easeml._bound_tenant()))
	WITH CHECK (tenant = (SELECT easeml._bound_tenant()));

ALTER TABLE easeml.runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY runs_own ON easeml.runs
	USING (tenant = (SELECT easeml._bound_tenant()))
	WITH CHECK (tenant = (SELECT easeml._bound_tenant()));

ALTER TABLE easeml.run_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_events_own ON easeml.run_events FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));

ALTER TABLE easeml.artifacts ENABLE ROW LEVEL SECURITY;
CREATE POLICY artifacts_own ON easeml.artifacts FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));

ALTER TABLE easeml.decisions ENABLE ROW LEVEL SECURITY;
CREATE POLICY decisions_own ON easeml.decisions FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));

GRANT USAGE ON SCHEMA easeml TO PUBLIC;
GRANT SELECT ON easeml.tenants, easeml.models, easeml.run_events, easeml.decisions, easeml.artifacts,
	easeml.leaderboard, easeml.task_overview, easeml.cost_estimates TO PUBLIC;
-- Column privileges only: a tenant never chooses an id or a system column,
-- and without table-level INSERT, UPDATE or DELETE it cannot LOCK the
-- tables the scheduler writes; without any UPDATE on runs it cannot lock a
-- run's row either.  Tasks are dropped with easeml.drop_task and runs
-- cancelled with easeml.cancel, C functions that check ownership.
GRANT SELECT ON easeml.tasks TO PUBLIC;
GRANT INSERT (tenant, name, source, target, features, kind, val_fraction, seed,
			  max_runs, input_shape) ON easeml.tasks TO PUBLIC;
GRANT INSERT (snapshot, metric, folds, impute, missing_indicator) ON easeml.tasks TO PUBLIC;
GRANT UPDATE (status, max_runs) ON easeml.tasks TO PUBLIC;
GRANT USAGE ON SEQUENCE easeml.tasks_id_seq, easeml.runs_id_seq TO PUBLIC;
GRANT SELECT ON easeml.runs TO PUBLIC;
GRANT INSERT (task_id, model_id) ON easeml.runs TO PUBLIC;
-- [trust] a tenant's pg_dump --enable-row-security -n easeml reads every
-- table and sequence easeml dumps: the seed history holds nothing of any
-- tenant's, and ids are visible to tenants anyway
GRANT SELECT ON easeml.history TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.models_id_seq, easeml.tasks_id_seq, easeml.runs_id_seq,
	easeml.run_events_id_seq, easeml.decisions_id_seq TO PUBLIC;

REVOKE ALL ON FUNCTION easeml.add_tenant(name, int), easeml.set_tenant_limits(name, int, bigint),
	easeml.wake_scheduler(),
	easeml._replay_run(text, text, text, int, int, text[], int, bigint, float8[], boolean, text, boolean),
	easeml.replay(text, text, text, int, int, text[], int, bigint, float8[], boolean, text),
	easeml.replay_curve(text, text, text, int, int, text[], int, bigint, boolean, text),
	easeml._trainer_spec(bigint), easeml_trainer.data_session(bigint),
	easeml_trainer.attach(bigint),
	easeml_trainer.progress(bigint, int, float8),
	easeml_trainer.artifact(bigint, bytea),
	easeml._finish_run(bigint, text, int, text, text),
	easeml._keep_artifacts(bigint)
	FROM PUBLIC;
-- the trigger functions too: a tenant must not attach them to a table of
-- its own, whose rows could name another tenant's task
REVOKE ALL ON FUNCTION easeml._snapshot_sql(bigint, int),
	easeml._snapshot_switch(bigint, int, bigint, int), easeml._read_rows_as(oid, text),
	easeml._take_snapshot(), easeml._drop_snapshots(), easeml._try_drop_snapshot(name),
	easeml._drop_stale_snapshots(int)
	FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Built-in candidate models
-- ---------------------------------------------------------------------------
-- cost_factor: relative training cost per row x feature, used until runs
-- have been measured (easeml.cost_estimates).
INSERT INTO easeml.models (name, family, params, kinds, needs_image, cost_factor, builtin) VALUES
	('softmax-l2-1e-5', 'softmax', '{"l2": 1e-5}', '{classification}', false, 1, true),
	('softmax-l2-1e-4', 'softmax', '{"l2": 1e-4}', '{classification}', false, 1, true),
	('softmax-l2-1e-3', 'softmax', '{"l2": 1e-3}', '{classification}', false, 1, true),
	('softmax-l2-1e-2', 'softmax', '{"l2": 1e-2}', '{classification}', false, 1, true),
	('softmax-l2-1', 'softmax', '{"l2": 1}', '{classification}', false, 0.5, true),
	('linear-svm-c0.01', 'linear_svm', '{"C": 0.01}', '{classification}', false, 0.3, true),
	('linear-svm-c0.1', 'linear_svm', '{"C": 0.1}', '{classification}', false, 0.4, true),
	('linear-svm-c1', 'linear_svm', '{"C": 1}', '{classification}', false, 0.6, true),
	('linear-svm-c10', 'linear_svm', '{"C": 10}', '{classification}', false, 1, true),
	('ridge-0.1', 'ridge', '{"alpha": 0.1}', '{classification,regression}', false, 0.2, true),
	('ridge-1', 'ridge', '{"alpha": 1}', '{classification,regression}', false, 0.2, true),
	('ridge-10', 'ridge', '{"alpha": 10}', '{classification,regression}', false, 0.2, true),
	('ridge-100', 'ridge', '{"alpha": 100}', '{classification,regression}', false, 0.2, true),
	('gnb', 'gnb', '{"var_smoothing": 1e-9}', '{classification}', false, 0.05, true),
	('gnb-1e-5', 'gnb', '{"var_smoothing": 1e-5}', '{classification}', false, 0.05, true),
	('gnb-smooth', 'gnb', '{"var_smoothing": 1e-2}', '{classification}', false, 0.05, true),
	('knn-1', 'knn', '{"k": 1}', '{classification,regression}', false, 1, true),
	('knn-3', 'knn', '{"k": 3}', '{classification,regression}', false, 1, true),
	('knn-5', 'knn', '{"k": 5}', '{classification,regression}', false, 1, true),
	('knn-15', 'knn', '{"k": 15}', '{classification,regression}', false, 1, true),
	('knn-5-distance', 'knn', '{"k": 5, "weights": "distance"}', '{classification,regression}', false, 1, true),
	('knn-15-distance', 'knn', '{"k": 15, "weights": "distance"}', '{classification,regression}', false, 1, true),
	('mlp-64', 'mlp', '{"hidden": [64]}', '{classification,regression}', false, 3, true),
	('mlp-128', 'mlp', '{"hidden": [128]}', '{classification,regression}', false, 5, true),
	('mlp-256', 'mlp', '{"hidden": [256]}', '{classification,regression}', false, 8, true),
	('mlp-512', 'mlp', '{"hidden": [512]}', '{classification,regression}', false, 15, true),
	('mlp-128-64', 'mlp', '{"hidden": [128, 64]}', '{classification,regression}', false, 6, true),
	('mlp-256-128', 'mlp', '{"hidden": [256, 128]}', '{classification,regression}', false, 10, true),
	('mlp-512-256', 'mlp', '{"hidden": [512, 256]}', '{classification,regression}', false, 20, true),
	('rf-50', 'random_forest', '{"n_trees": 50}', '{classification,regression}', false, 5, true),
	('rf-200', 'random_forest', '{"n_trees": 200}', '{classification,regression}', false, 20, true),
	('rf-200-depth12', 'random_forest', '{"n_trees": 200, "max_depth": 12}', '{classification,regression}', false, 15, true),
	('rf-200-half', 'random_forest', '{"n_trees": 200, "max_features": 0.5}', '{classification,regression}', false, 40, true),
	('gbt-100', 'gbt', '{"n_rounds": 100, "lr": 0.1}', '{classification,regression}', false, 10, true),
	('gbt-100-lr0.3', 'gbt', '{"n_rounds": 100, "lr": 0.3}', '{classification,regression}', false, 10, true),
	('gbt-300-lr0.05', 'gbt', '{"n_rounds": 300, "lr": 0.05}', '{classification,regression}', false, 30, true),
	('gbt-200-leaves63', 'gbt', '{"n_rounds": 200, "lr": 0.1, "max_leaves": 63}', '{classification,regression}', false, 30, true),
	('cnn-16-32', 'cnn', '{"filters": [16, 32], "epochs": 5}', '{classification}', true, 40, true),
	('cnn-32-64', 'cnn', '{"filters": [32, 64], "epochs": 5}', '{classification}', true, 80, true),
	('cnn-16-32-e10', 'cnn', '{"filters": [16, 32], "epochs": 10}', '{classification}', true, 80, true),
	('cnn-32-64-128', 'cnn', '{"filters": [32, 64, 128], "epochs": 8}', '{classification}', true, 150, true);

-- ---------------------------------------------------------------------------
-- [trust] Model rows are checked when they are written: the trainer itself
-- says whether it can train the family with those params (easeml-trainer
-- --check-model), so an admin's typo is refused here instead of failing a
-- run of every task.  Created after the built-in rows are seeded.
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml._check_model(family text, params jsonb, kinds text[],
									needs_image boolean)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_check_model'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION easeml._check_model(text, jsonb, text[], boolean) IS
	'internal: NULL when the trainer can train this model, else its reason';

CREATE FUNCTION easeml._validate_model()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	reason		text;
BEGIN
	IF NEW.name IS NULL OR NEW.name !~ '^[a-z0-9_.-]{1,63}$' THEN
		RAISE EXCEPTION 'invalid model name "%"', NEW.name
			USING ERRCODE = 'invalid_name',
				  HINT = 'Use 1 to 63 lower-case letters, digits, "_", "." or "-".';
	END IF;
	IF TG_OP = 'INSERT' AND EXISTS (SELECT 1 FROM easeml.models WHERE name = NEW.name) THEN
		RAISE EXCEPTION 'model "%" already exists', NEW.name
			USING ERRCODE = 'unique_violation',
				  HINT = 'Choose another name, or UPDATE the existing model.';
	END IF;
	IF NEW.family IS NULL THEN
		RAISE EXCEPTION 'model "%" has no family', NEW.name
			USING ERRCODE = 'not_null_violation',
				  HINT = 'easeml-trainer --list-families lists the families.';
	END IF;
	IF NEW.params IS NULL OR jsonb_typeof(NEW.params) <> 'object' THEN
		RAISE EXCEPTION 'params of model "%" must be a JSON object, not %', NEW.name,
			coalesce(NEW.params::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example params => ''{"k": 5}''; ''{}'' takes the family''s defaults.';
	END IF;
	IF NEW.kinds IS NULL OR cardinality(NEW.kinds) = 0
		OR NOT NEW.kinds <@ ARRAY['classification', 'regression'] THEN
		RAISE EXCEPTION 'kinds of model "%" must list classification, regression or both, not %',
			NEW.name, coalesce(NEW.kinds::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example kinds => ''{classification,regression}''.';
	END IF;
	-- bounded, so that estimates (cost_factor x a per-unit time x cells)
	-- stay finite and comparable: 1e-06 and 1e+06 are twelve orders of
	-- magnitude apart, far beyond any two real models
	IF NEW.cost_factor IS NULL OR NOT (NEW.cost_factor >= 1e-6 AND NEW.cost_factor <= 1e6) THEN
		RAISE EXCEPTION 'cost_factor of model "%" must be between 1e-06 and 1e+06, not %',
			NEW.name, coalesce(NEW.cost_factor::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'cost_factor is the training time relative to other models, e.g. 1 for a softmax regression.';
	END IF;
	IF TG_OP = 'INSERT' OR (NEW.enabled AND NOT OLD.enabled)
		OR (NEW.family, NEW.params, NEW.kinds, NEW.needs_image)
		   IS DISTINCT FROM (OLD.family, OLD.params, OLD.kinds, OLD.needs_image) THEN
		reason := easeml._check_model(NEW.family, NEW.params, NEW.kinds, NEW.needs_image);
		IF reason IS NOT NULL THEN
			RAISE EXCEPTION 'model "%" cannot be trained: %', NEW.name, reason
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'easeml-trainer --list-families lists every family with its parameters.';
		END IF;
	END IF;
	RETURN NEW;
END;
$$;

CREATE TRIGGER models_validate
	BEFORE INSERT OR UPDATE ON easeml.models
	FOR EACH ROW EXECUTE FUNCTION easeml._validate_model();

REVOKE ALL ON FUNCTION easeml._check_model(text, jsonb, text[], boolean) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- [spaces] Hyperparameter spaces per family and generated candidates
-- (docs/models.md section 7, docs/scheduler.md 7.9)
-- ---------------------------------------------------------------------------
-- [spaces] One dimension of a family's hyperparameter space.
CREATE TABLE easeml.model_spaces (
	family		text NOT NULL,
	name		text NOT NULL,
	type		text NOT NULL
		CHECK (type IN ('int', 'log-int', 'float', 'log-float', 'categorical')),
	lo			float8,
	hi			float8,
	choices		text[],
	default_value jsonb NOT NULL,
	builtin		boolean NOT NULL DEFAULT false,
	PRIMARY KEY (family, name)
);
COMMENT ON TABLE easeml.model_spaces IS
	'hyperparameter spaces: one row per family and dimension, the range new configurations are generated in';

INSERT INTO easeml.model_spaces (family, name, type, lo, hi, choices, default_value, builtin) VALUES
	('softmax', 'l2', 'log-float', 1e-6, 10, NULL, '1e-4', true),
	('softmax', 'max_iter', 'log-int', 20, 1000, NULL, '100', true),
	('linear_svm', 'C', 'log-float', 1e-4, 100, NULL, '1', true),
	('linear_svm', 'loss', 'categorical', NULL, NULL, '{squared_hinge,hinge}', '"squared_hinge"', true),
	('ridge', 'alpha', 'log-float', 1e-4, 1e4, NULL, '1', true),
	('gnb', 'var_smoothing', 'log-float', 1e-12, 0.5, NULL, '1e-9', true),
	('knn', 'k', 'log-int', 1, 100, NULL, '5', true),
	('knn', 'weights', 'categorical', NULL, NULL, '{uniform,distance}', '"uniform"', true),
	('mlp', 'hidden', 'log-int', 16, 1024, NULL, '128', true),
	('mlp', 'layers', 'int', 1, 3, NULL, '1', true),
	('mlp', 'lr', 'log-float', 1e-4, 3e-2, NULL, '1e-3', true),
	('mlp', 'l2', 'log-float', 1e-8, 1e-2, NULL, '1e-5', true),
	('mlp', 'epochs', 'log-int', 10, 400, NULL, '100', true),
	('random_forest', 'n_trees', 'log-int', 10, 500, NULL, '100', true),
	('random_forest', 'max_features', 'float', 0.05, 1, NULL, '0.3', true),
	('random_forest', 'max_depth', 'log-int', 2, 64, NULL, '64', true),
	('random_forest', 'min_samples_leaf', 'log-int', 1, 50, NULL, '1', true),
	('gbt', 'lr', 'log-float', 0.01, 0.5, NULL, '0.1', true),
	('gbt', 'n_rounds', 'log-int', 20, 1000, NULL, '100', true),
	('gbt', 'max_leaves', 'log-int', 4, 128, NULL, '31', true),
	('gbt', 'min_samples_leaf', 'log-int', 1, 100, NULL, '20', true),
	('cnn', 'filters', 'log-int', 8, 64, NULL, '16', true),
	('cnn', 'blocks', 'int', 1, 3, NULL, '2', true),
	('cnn', 'epochs', 'int', 2, 20, NULL, '5', true),
	('cnn', 'lr', 'log-float', 1e-4, 1e-2, NULL, '1e-3', true);

-- [spaces] A dimension's value in a model's params (its family's default
-- when the params leave it out).  Two dimensions describe a list: mlp's
-- hidden is the first layer's width and layers their count (each layer
-- halves the one before, at least 8), cnn's filters the first block's
-- and blocks their count (each block doubles, at most 512).
CREATE FUNCTION easeml._space_get(family text, name text, params jsonb)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE
		 WHEN family = 'mlp' AND name = 'layers' AND jsonb_typeof(params -> 'hidden') = 'array'
			 THEN to_jsonb(jsonb_array_length(params -> 'hidden'))
		 WHEN family = 'mlp' AND name = 'hidden' AND jsonb_typeof(params -> 'hidden') = 'array'
			 THEN params -> 'hidden' -> 0
		 WHEN family = 'cnn' AND name = 'blocks' AND jsonb_typeof(params -> 'filters') = 'array'
			 THEN to_jsonb(jsonb_array_length(params -> 'filters'))
		 WHEN family = 'cnn' AND name = 'filters' AND jsonb_typeof(params -> 'filters') = 'array'
			 THEN params -> 'filters' -> 0
		 WHEN (family, name) IN (('mlp', 'layers'), ('cnn', 'blocks'))
			 THEN (SELECT s.default_value FROM easeml.model_spaces s
					WHERE s.family = _space_get.family AND s.name = _space_get.name)
		 ELSE coalesce(params -> name,
					   (SELECT s.default_value FROM easeml.model_spaces s
						 WHERE s.family = _space_get.family AND s.name = _space_get.name))
	   END;
$$;

-- [spaces] params with one dimension set to value (_space_get's lists).
CREATE FUNCTION easeml._space_set(family text, params jsonb, name text, value jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	width		int;
	n			int;
	list		int[] := '{}';
BEGIN
	IF (family = 'mlp' AND name IN ('hidden', 'layers'))
		OR (family = 'cnn' AND name IN ('filters', 'blocks')) THEN
		IF family = 'mlp' THEN
			width := CASE WHEN name = 'hidden' THEN value ELSE easeml._space_get(family, 'hidden', params) END::int;
			n := CASE WHEN name = 'layers' THEN value ELSE easeml._space_get(family, 'layers', params) END::int;
			FOR i IN 0 .. n - 1 LOOP
				list := list || greatest(8, width >> i);
			END LOOP;
			RETURN params || jsonb_build_object('hidden', to_jsonb(list));
		END IF;
		width := CASE WHEN name = 'filters' THEN value ELSE easeml._space_get(family, 'filters', params) END::int;
		n := CASE WHEN name = 'blocks' THEN value ELSE easeml._space_get(family, 'blocks', params) END::int;
		FOR i IN 0 .. n - 1 LOOP
			list := list || least(512, width << i);
		END LOOP;
		RETURN params || jsonb_build_object('filters', to_jsonb(list));
	END IF;
	RETURN params || jsonb_build_object(name, value);
END;
$$;

CREATE FUNCTION easeml._space_scale(types text[], lo float8[], hi float8[], x float8[])
RETURNS float8[]
AS 'MODULE_PATHNAME', 'easeml_space_scale'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml._space_scale(text[], float8[], float8[], float8[]) IS
	'internal: raw hyperparameter values scaled into [0,1] (src/core/hpspace.c)';

CREATE FUNCTION easeml._space_propose(types text[], lo float8[], hi float8[], x float8[],
									  seed bigint, n int, step float8)
RETURNS float8[]
AS 'MODULE_PATHNAME', 'easeml_space_propose'
LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION easeml._space_propose(text[], float8[], float8[], float8[], bigint, int, float8) IS
	'internal: n seeded configurations around x in the scaled space, n x d raw values (src/core/hpspace.c)';
-- the scheduler's (it calls them as the superuser), not a tenant's
REVOKE EXECUTE ON FUNCTION easeml._space_scale(text[], float8[], float8[], float8[]),
	easeml._space_propose(text[], float8[], float8[], float8[], bigint, int, float8) FROM PUBLIC;

-- [spaces] A model's dimensions in its family's space, in name order:
-- types, ranges (a categorical one 0 .. choices - 1) and its raw values (a
-- categorical one the index of its choice); NULL arrays for a family
-- without a space.
CREATE FUNCTION easeml._space_of(family text, params jsonb,
								 OUT names text[], OUT types text[], OUT lo float8[],
								 OUT hi float8[], OUT x float8[], OUT choices text[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT array_agg(s.name ORDER BY s.name),
	   array_agg(s.type ORDER BY s.name),
	   array_agg(CASE WHEN s.type = 'categorical' THEN 0 ELSE s.lo END ORDER BY s.name),
	   array_agg(CASE WHEN s.type = 'categorical' THEN cardinality(s.choices) - 1 ELSE s.hi END
				 ORDER BY s.name),
	   array_agg(CASE WHEN s.type = 'categorical'
					  THEN coalesce(array_position(s.choices, v.v #>> '{}'),
									array_position(s.choices, s.default_value #>> '{}'), 1) - 1
					  ELSE least(greatest((v.v #>> '{}')::float8, s.lo), s.hi) END
				 ORDER BY s.name),
	   -- every dimension's choices joined by "|", to split again
	   array_agg(array_to_string(s.choices, '|') ORDER BY s.name)
  FROM easeml.model_spaces s
 CROSS JOIN LATERAL (SELECT easeml._space_get(_space_of.family, s.name, _space_of.params) AS v) v
 WHERE s.family = _space_of.family
   AND (s.type = 'categorical' OR jsonb_typeof(v.v) = 'number');
$$;

-- [spaces] A model's scaled coordinates in its family's space (the
-- scheduler's kernel, docs/scheduler.md 7.9); NULL without a space.
CREATE FUNCTION easeml._space_coords(family text, params jsonb)
RETURNS float8[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN sp.types IS NOT NULL
			THEN easeml._space_scale(sp.types, sp.lo, sp.hi, sp.x) END
  FROM easeml._space_of(family, params) sp;
$$;

-- [spaces] A space's row as it is written: the family is one the trainer
-- knows, the type and range are well formed, and the trainer accepts the
-- range's ends (and every choice) as that parameter.
CREATE FUNCTION easeml._validate_model_space()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	reason		text;
	probe		jsonb;
BEGIN
	IF NEW.family IS NULL OR NEW.name IS NULL OR NEW.name !~ '^[A-Za-z0-9_]{1,63}$' THEN
		RAISE EXCEPTION 'invalid hyperparameter "%" of family "%"', NEW.name, NEW.family
			USING ERRCODE = 'invalid_name',
				  HINT = 'A dimension names a parameter of the family: letters, digits and "_" (easeml-trainer --list-families).';
	END IF;
	IF NEW.type IS NULL OR NEW.type NOT IN ('int', 'log-int', 'float', 'log-float', 'categorical') THEN
		RAISE EXCEPTION 'hyperparameter "%" of family "%" has type %, not int, log-int, float, log-float or categorical',
			NEW.name, NEW.family, coalesce(NEW.type, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'log-int and log-float are searched on a log scale (their lo must be positive).';
	END IF;
	IF NEW.type = 'categorical' THEN
		IF NEW.choices IS NULL OR cardinality(NEW.choices) < 2
			OR array_position(NEW.choices, NULL) IS NOT NULL
			OR NEW.lo IS NOT NULL OR NEW.hi IS NOT NULL THEN
			RAISE EXCEPTION 'categorical hyperparameter "%" of family "%" needs at least two choices and no lo or hi',
				NEW.name, NEW.family
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'For example choices => ''{uniform,distance}''.';
		END IF;
		IF jsonb_typeof(NEW.default_value) IS DISTINCT FROM 'string'
			OR NOT (NEW.default_value #>> '{}') = ANY (NEW.choices) THEN
			RAISE EXCEPTION 'default_value of hyperparameter "%" of family "%" must be one of its choices, not %',
				NEW.name, NEW.family, coalesce(NEW.default_value::text, 'NULL')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'The default is the value the family uses when a model''s params leave it out.';
		END IF;
	ELSE
		IF NEW.choices IS NOT NULL OR NEW.lo IS NULL OR NEW.hi IS NULL
			OR NOT (NEW.lo < NEW.hi AND NEW.lo > '-Infinity' AND NEW.hi < 'Infinity')
			OR (NEW.type LIKE 'log-%' AND NOT NEW.lo > 0)
			OR (NEW.type IN ('int', 'log-int') AND (NEW.lo <> floor(NEW.lo) OR NEW.hi <> floor(NEW.hi))) THEN
			RAISE EXCEPTION 'hyperparameter "%" of family "%" needs a range lo < hi, not [%, %]',
				NEW.name, NEW.family, coalesce(NEW.lo::text, 'NULL'), coalesce(NEW.hi::text, 'NULL')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Both ends finite, integers for int and log-int, lo > 0 on a log scale, no choices.';
		END IF;
		IF jsonb_typeof(NEW.default_value) IS DISTINCT FROM 'number'
			OR NOT ((NEW.default_value #>> '{}')::float8 BETWEEN NEW.lo AND NEW.hi) THEN
			RAISE EXCEPTION 'default_value of hyperparameter "%" of family "%" must be a number in [%, %], not %',
				NEW.name, NEW.family, NEW.lo, NEW.hi, coalesce(NEW.default_value::text, 'NULL')
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'The default is the value the family uses when a model''s params leave it out.';
		END IF;
	END IF;
	-- the trainer itself says whether it takes the ends of the range
	FOR probe IN
		SELECT to_jsonb(c) FROM unnest(NEW.choices) c
		UNION ALL
		SELECT to_jsonb(CASE WHEN NEW.type IN ('int', 'log-int') THEN round(e)::numeric ELSE e::numeric END)
		  FROM unnest(ARRAY[NEW.lo, NEW.hi]) e WHERE e IS NOT NULL
	LOOP
		reason := easeml._check_model(NEW.family,
									  easeml._space_set(NEW.family, '{}', NEW.name, probe),
									  '{classification}', NEW.family = 'cnn');
		IF reason IS NOT NULL THEN
			RAISE EXCEPTION 'hyperparameter "%" of family "%" cannot take %: %', NEW.name, NEW.family, probe, reason
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'easeml-trainer --list-families lists every family with its parameters and their ranges.';
		END IF;
	END LOOP;
	RETURN NEW;
END;
$$;

CREATE TRIGGER model_spaces_validate
	BEFORE INSERT OR UPDATE ON easeml.model_spaces
	FOR EACH ROW EXECUTE FUNCTION easeml._validate_model_space();

-- [budgetuse] Why a task gets no further round of generated candidates,
-- NULL when it may get one: it has easeml.generate_max of them already,
-- or it converged: none of its last easeml.generate_patience generated
-- candidates that finished (each its first selection run on the task's
-- snapshot that succeeded or failed, in the order they finished) scored
-- strictly higher than the task's best before it finished
-- (docs/scheduler.md 7.9).  A setting that cannot be read (the library not
-- loaded) counts as its default.  The scheduler completes a task with
-- every candidate tried and this reason.
CREATE FUNCTION easeml._generate_stop(task bigint)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	setting		text := current_setting('easeml.generate_max', true);
	cap			int := CASE WHEN setting ~ '^\s*\d{1,9}\s*$' THEN setting::int ELSE 256 END;
	patience	int;
	finished	int;
	improved	int;
	best		float8;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	IF (SELECT count(*) FROM easeml.models m WHERE m.generated_for = task) >= cap THEN
		RETURN format('easeml.generate_max (%s) reached', cap);
	END IF;
	setting := current_setting('easeml.generate_patience', true);
	patience := CASE WHEN setting ~ '^\s*\d{1,9}\s*$' THEN setting::int ELSE 0 END;
	IF patience = 0 THEN
		RETURN NULL;
	END IF;
	WITH fin AS (
		SELECT r.id, r.model_id, r.finished_at,
			   CASE WHEN r.status = 'succeeded' THEN r.score END AS score,
			   max(CASE WHEN r.status = 'succeeded' THEN r.score END)
				   OVER (ORDER BY r.finished_at, r.id
						 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS best_before
		  FROM easeml.runs r
		 WHERE r.task_id = task AND r.purpose = 'select' AND r.status IN ('succeeded', 'failed')
		   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version),
	gen AS (
		SELECT DISTINCT ON (f.model_id) f.*
		  FROM fin f JOIN easeml.models m ON m.id = f.model_id
		 WHERE m.generated_for = task
		 ORDER BY f.model_id, f.finished_at, f.id),
	recent AS (
		SELECT * FROM gen ORDER BY finished_at DESC, id DESC LIMIT patience)
	SELECT count(*), count(*) FILTER (WHERE score > coalesce(best_before, '-Infinity'))
	  INTO finished, improved FROM recent;
	IF finished < patience OR improved > 0 THEN
		RETURN NULL;
	END IF;
	best := (SELECT max(r.score) FROM easeml.runs r
			  WHERE r.task_id = task AND r.purpose = 'select' AND r.status = 'succeeded'
				AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version);
	RETURN format('converged: its last %s generated candidates that finished did not beat its best score %s (easeml.generate_patience)',
				  patience, coalesce(round(best::numeric, 4)::text, 'none'));
END;
$$;
COMMENT ON FUNCTION easeml._generate_stop(bigint) IS
	'internal: why a task gets no more generated candidates (easeml.generate_max, easeml.generate_patience), or NULL (docs/scheduler.md 7.9)';

-- [spaces] New configurations for a task: n proposals around the best runs
-- of its three best families with a space (each family's best model in
-- turn, the best family first), seeded by the task and how many it has, so
-- the same runs give the same proposals.  A proposal whose params the task
-- already has (or an earlier proposal of the round) is drawn again, up to
-- five times.  At most easeml.generate_max less the task's generated
-- candidates, and none once easeml._generate_stop says the task gets no
-- more (that cap, or converged).  Nothing
-- is written: easeml._add_generated makes one a model row.  Each row: the
-- family, the params, the run it was proposed around, the grid model it
-- descends from (root), the model whose params it perturbs (parent), and
-- its and its root's scaled coordinates (docs/scheduler.md 7.9).
CREATE FUNCTION easeml._propose_candidates(task bigint, n int DEFAULT 6)
RETURNS TABLE (prop_family text, prop_params jsonb, prop_run bigint, prop_root int,
			   prop_parent int, prop_coords float8[], root_coords float8[])
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	b			record;
	p_family	text[] := '{}';
	p_params	jsonb[] := '{}';
	p_run		bigint[] := '{}';
	p_root		int[] := '{}';
	p_model		int[] := '{}';
	k			int;
	sp			record;
	have		int;
	made		int := 0;
	y			float8[];
	cand		jsonb;
	v			jsonb;
	r_family	text[] := '{}';
	r_params	jsonb[] := '{}';
	setting		text := current_setting('easeml.generate_max', true);
	cap			int := CASE WHEN setting ~ '^\s*\d{1,9}\s*$' THEN setting::int ELSE 256 END;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	IF NOT FOUND OR n IS NULL OR n < 1 OR easeml._generate_stop(task) IS NOT NULL THEN
		RETURN;
	END IF;
	have := (SELECT count(*) FROM easeml.models m WHERE m.generated_for = task);
	-- the best run of each family with a space, the best three families
	FOR b IN
		SELECT * FROM (
			SELECT DISTINCT ON (m.family) r.model_id, r.id AS run_id, r.score,
				   m.family, m.params, coalesce(m.parent_model, m.id) AS root
			  FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
			 WHERE r.task_id = task AND r.status = 'succeeded' AND r.score IS NOT NULL
			   AND r.purpose = 'select'
			   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
			   AND m.enabled AND (m.generated_for IS NULL OR m.generated_for = task)
			   AND EXISTS (SELECT 1 FROM easeml.model_spaces s WHERE s.family = m.family)
			 ORDER BY m.family, r.score DESC, r.id) x
		 ORDER BY x.score DESC, x.model_id
		 LIMIT 3
	LOOP
		p_family := p_family || b.family;
		p_params := p_params || b.params;
		p_run := p_run || b.run_id;
		p_root := p_root || b.root;
		p_model := p_model || b.model_id;
	END LOOP;
	IF cardinality(p_family) = 0 THEN
		RETURN;
	END IF;
	FOR i IN 0 .. n - 1 LOOP
		EXIT WHEN have + made >= cap;
		k := 1 + i % cardinality(p_family);
		SELECT * INTO sp FROM easeml._space_of(p_family[k], p_params[k]);
		CONTINUE WHEN sp.types IS NULL;
		-- a few tries for params the task does not have yet
		FOR try IN 0 .. 4 LOOP
			y := easeml._space_propose(sp.types, sp.lo, sp.hi, sp.x,
									   task * 1000003 + (have + made) * 1009 + i * 31 + try, 1, 0.2);
			cand := p_params[k];
			FOR j IN 1 .. cardinality(sp.types) LOOP
				v := CASE
					   WHEN sp.types[j] = 'categorical'
						   THEN to_jsonb((string_to_array(sp.choices[j], '|'))[y[j]::int + 1])
					   WHEN sp.types[j] IN ('int', 'log-int') THEN to_jsonb(y[j]::bigint)
					   WHEN y[j] = 0 THEN to_jsonb(0)
					   -- six significant digits
					   ELSE to_jsonb(round(y[j]::numeric, 5 - floor(log(abs(y[j])))::int))
					 END;
				-- a parameter the parent leaves to its default stays out
				-- while it keeps that value (no twin of a grid model)
				CONTINUE WHEN NOT (p_params[k] ? sp.names[j])
					AND sp.names[j] NOT IN ('hidden', 'layers', 'filters', 'blocks')
					AND v = (SELECT s.default_value FROM easeml.model_spaces s
							  WHERE s.family = p_family[k] AND s.name = sp.names[j]);
				cand := easeml._space_set(p_family[k], cand, sp.names[j], v);
			END LOOP;
			EXIT WHEN NOT EXISTS (SELECT 1 FROM easeml.models m
								   WHERE m.family = p_family[k] AND m.params = cand
									 AND (m.generated_for IS NULL OR m.generated_for = task))
				AND NOT EXISTS (SELECT 1 FROM unnest(r_family, r_params) u(f, p)
								 WHERE u.f = p_family[k] AND u.p = cand);
			cand := NULL;
		END LOOP;
		CONTINUE WHEN cand IS NULL;
		r_family := r_family || p_family[k];
		r_params := r_params || cand;
		made := made + 1;
		prop_family := p_family[k];
		prop_params := cand;
		prop_run := p_run[k];
		prop_root := p_root[k];
		prop_parent := p_model[k];
		prop_coords := easeml._space_coords(p_family[k], cand);
		root_coords := (SELECT easeml._space_coords(m.family, m.params)
						  FROM easeml.models m WHERE m.id = p_root[k]);
		RETURN NEXT;
	END LOOP;
END;
$$;
COMMENT ON FUNCTION easeml._propose_candidates(bigint, int) IS
	'internal: new configurations around a task''s best runs, not yet written (docs/scheduler.md 7.9)';

-- [spaces] One proposal of easeml._propose_candidates as a model row for
-- the task only, named after its root, the task and the next number (an
-- admin may have deleted some: a count would name a twin); unless the task
-- gets no more (easeml._generate_stop: easeml.generate_max reached, or
-- converged) or has a model with those params.  Returns 1 when made, else
-- 0.
CREATE FUNCTION easeml._add_generated(task bigint, gen_family text, gen_params jsonb,
									  gen_run bigint, gen_root int)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			record;
	root		record;
	numbered	int;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = task;
	-- a task that ended between the proposal and this insert gets none
	IF NOT FOUND OR t.status <> 'active' OR gen_family IS NULL OR gen_params IS NULL THEN
		RETURN 0;
	END IF;
	SELECT * INTO root FROM easeml.models m WHERE m.id = gen_root;
	IF NOT FOUND OR root.family IS DISTINCT FROM gen_family
		OR easeml._generate_stop(task) IS NOT NULL
		OR EXISTS (SELECT 1 FROM easeml.models m
					WHERE m.family = gen_family AND m.params = gen_params
					  AND (m.generated_for IS NULL OR m.generated_for = task)) THEN
		RETURN 0;
	END IF;
	numbered := (SELECT coalesce(max(substring(m.name FROM '\.g(\d{1,9})$')::int), 0)
			   FROM easeml.models m WHERE m.generated_for = task);
	INSERT INTO easeml.models (name, family, params, kinds, needs_image, cost_factor,
							   device_kinds, generated_for, generated_by_run, parent_model)
	VALUES (format('%s.t%s.g%s', left(root.name, 32), task, numbered + 1),
			gen_family, gen_params, ARRAY[t.kind], root.needs_image, root.cost_factor,
			root.device_kinds, task, gen_run, gen_root);
	RETURN 1;
END;
$$;
COMMENT ON FUNCTION easeml._add_generated(bigint, text, jsonb, bigint, int) IS
	'internal: one proposed configuration as a model row of its task (docs/scheduler.md 7.9)';

-- [spaces] New configurations for a task: every proposal of
-- easeml._propose_candidates made a model row (easeml._add_generated).
-- Returns how many were made.  The scheduler calls it when a task with a
-- time budget has tried every candidate and nothing of it is in flight;
-- before that it makes one proposal a row when its acquisition beats the
-- best untried candidate's (docs/scheduler.md 7.9).
CREATE FUNCTION easeml._generate_candidates(task bigint, n int DEFAULT 6)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	p			record;
	made		int := 0;
BEGIN
	FOR p IN SELECT * FROM easeml._propose_candidates(task, n) LOOP
		made := made + easeml._add_generated(task, p.prop_family, p.prop_params,
											 p.prop_run, p.prop_root);
	END LOOP;
	RETURN made;
END;
$$;
COMMENT ON FUNCTION easeml._generate_candidates(bigint, int) IS
	'internal: the scheduler proposes new configurations around a task''s best runs (docs/scheduler.md 7.9)';

-- [spaces] A dropped task's generated candidates go with it (its runs and
-- decisions went first: their foreign keys cascade from the task).
CREATE FUNCTION easeml._drop_generated()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM easeml.models m
	 WHERE m.generated_for = OLD.id
	   AND NOT EXISTS (SELECT 1 FROM easeml.runs r WHERE r.model_id = m.id)
	   AND NOT EXISTS (SELECT 1 FROM easeml.decisions d WHERE d.model_id = m.id)
	   AND NOT EXISTS (SELECT 1 FROM easeml.decision_candidates c WHERE c.model_id = m.id);
	RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_drop_generated
	AFTER DELETE ON easeml.tasks
	FOR EACH ROW EXECUTE FUNCTION easeml._drop_generated();

REVOKE ALL ON FUNCTION easeml._generate_candidates(bigint, int), easeml._drop_generated(),
	easeml._propose_candidates(bigint, int), easeml._add_generated(bigint, text, jsonb, bigint, int),
	easeml._generate_stop(bigint), easeml._validate_model_space() FROM PUBLIC;

-- [spaces] a tenant sees the catalog's models and those generated for its
-- own tasks
ALTER TABLE easeml.models ENABLE ROW LEVEL SECURITY;
CREATE POLICY models_visible ON easeml.models FOR SELECT
	USING (generated_for IS NULL OR generated_for IN (SELECT id FROM easeml.tasks));

GRANT SELECT ON easeml.model_spaces TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.model_spaces', 'WHERE NOT builtin');

SELECT pg_catalog.pg_extension_config_dump('easeml.tenants', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.tasks', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.runs', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.run_events', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.decisions', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.artifacts', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.history', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.models', 'WHERE NOT builtin');
-- [trust] and their sequences, so that a restored database does not hand
-- out ids from 1 again
SELECT pg_catalog.pg_extension_config_dump('easeml.models_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.tasks_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.runs_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.run_events_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.decisions_id_seq', '');


-- ===========================================================================
-- Devices and custom trainers (docs/devices.md; src/worker/devices.c)
--
-- The same block ends sql/easeml.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

-- Devices runs are placed on.  The scheduler keeps the rows of its own
-- machine (launcher 'local') up to date from the trainer's probe, which it
-- runs at start and on easeml.probe_devices(): a device found is inserted
-- or marked present, one no longer found is marked absent; enabled and
-- slots are the admin's and survive probes.  The CPU is always present.
CREATE TABLE easeml.devices (
	name		text PRIMARY KEY CHECK (name ~ '^[a-z0-9_.:-]{1,63}$'),
	kind		text NOT NULL CHECK (kind IN ('cpu', 'cuda')),
	ordinal		int NOT NULL DEFAULT 0 CHECK (ordinal >= 0),
	memory		bigint CHECK (memory IS NULL OR memory >= 0),
	slots		int CHECK (slots IS NULL OR (slots >= 0 AND slots <= 64)),
	enabled		boolean NOT NULL DEFAULT true,
	present		boolean NOT NULL DEFAULT true,
	launcher	text NOT NULL DEFAULT 'local' CHECK (launcher ~ '^[a-z][a-z0-9_]*$'),
	description text,
	probed_at	timestamptz
);
COMMENT ON TABLE easeml.devices IS
	'devices runs are placed on: kind cpu or cuda, memory in bytes, slots (NULL: cpu takes easeml.max_workers, cuda 1), enabled by the admin, present when the latest probe found it';

-- the built-in families with a CUDA backend prefer a GPU
UPDATE easeml.models SET device_kinds = '{cuda,cpu}'
 WHERE builtin AND family IN ('softmax', 'mlp', 'cnn');

-- Slots of a device: its own setting, else the default of its kind.
CREATE FUNCTION easeml._device_slots(kind text, slots int)
RETURNS int
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce(slots, CASE WHEN kind = 'cpu'
								THEN coalesce(current_setting('easeml.max_workers', true)::int, 2)
								ELSE 1 END)
$$;

CREATE VIEW easeml.device_usage WITH (security_invoker = true) AS
SELECT d.name,
	   d.kind,
	   d.enabled,
	   d.present,
	   easeml._device_slots(d.kind, d.slots) AS slots,
	   (SELECT count(*) FROM easeml.runs r
		 WHERE r.device = d.name AND r.status = 'running')::int AS running,
	   d.memory,
	   d.launcher,
	   d.description
  FROM easeml.devices d;
COMMENT ON VIEW easeml.device_usage IS
	'each device with its effective slots and the runs now running on it (a tenant counts only its own)';

-- Record the trainer's probe (called by the scheduler).  output is the
-- trainer's JSON, or NULL when the probe failed: then only the CPU is
-- known.  Returns the number of local devices present.
CREATE FUNCTION easeml._record_probe(output text, protocol int)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	probe		jsonb;
	dev			jsonb;
	found		text[] := '{cpu}';
BEGIN
	BEGIN
		probe := output::jsonb;
	EXCEPTION WHEN others THEN
		RAISE WARNING 'easeml: ignoring a device probe whose output is not JSON';
	END;
	IF jsonb_typeof(probe) IS DISTINCT FROM 'object'
		OR (probe ->> 'protocol') IS DISTINCT FROM protocol::text THEN
		IF probe IS NOT NULL THEN
			RAISE WARNING 'easeml: ignoring a device probe that speaks protocol %, not %',
				coalesce(probe ->> 'protocol', 'none'), protocol;
		END IF;
		probe := NULL;
	END IF;
	INSERT INTO easeml.devices (name, kind, ordinal) VALUES ('cpu', 'cpu', 0)
	ON CONFLICT (name) DO NOTHING;
	FOR dev IN SELECT jsonb_array_elements(CASE WHEN jsonb_typeof(probe -> 'devices') = 'array'
												THEN probe -> 'devices' ELSE '[]' END) LOOP
		CONTINUE WHEN jsonb_typeof(dev) <> 'object' OR dev ->> 'kind' NOT IN ('cpu', 'cuda')
			OR coalesce(dev ->> 'name', '') !~ '^[a-z0-9_.:-]{1,63}$';
		BEGIN
			INSERT INTO easeml.devices AS d (name, kind, ordinal, memory, description, present, probed_at)
			VALUES (dev ->> 'name', dev ->> 'kind', coalesce((dev ->> 'ordinal')::int, 0),
					(dev ->> 'memory')::bigint, dev ->> 'description', true, now())
			ON CONFLICT (name) DO UPDATE
				SET kind = EXCLUDED.kind, ordinal = EXCLUDED.ordinal, memory = EXCLUDED.memory,
					description = EXCLUDED.description, present = true, probed_at = now()
			WHERE d.launcher = 'local';
			found := found || (dev ->> 'name');
		EXCEPTION WHEN others THEN
			RAISE WARNING 'easeml: ignoring device % of the probe: %', dev, SQLERRM;
		END;
	END LOOP;
	UPDATE easeml.devices SET present = (name = ANY (found)), probed_at = now()
	 WHERE launcher = 'local' AND present IS DISTINCT FROM (name = ANY (found));
	RETURN (SELECT count(*) FROM easeml.devices WHERE launcher = 'local' AND present);
END;
$$;

CREATE FUNCTION easeml._device_row(device text)
RETURNS easeml.devices
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	d			easeml.devices;
BEGIN
	SELECT * INTO d FROM easeml.devices WHERE name = device FOR UPDATE;
	IF NOT FOUND OR device IS NULL THEN
		RAISE EXCEPTION 'device "%" does not exist', coalesce(device, '')
			USING ERRCODE = 'undefined_object',
				  HINT = 'Known devices: ' || coalesce((SELECT string_agg(name, ', ' ORDER BY name)
														FROM easeml.devices), 'none') || '.';
	END IF;
	RETURN d;
END;
$$;

CREATE FUNCTION easeml.enable_device(device text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._device_row(device);
	UPDATE easeml.devices SET enabled = true WHERE name = device;
	PERFORM easeml.wake_scheduler();
END;
$$;
COMMENT ON FUNCTION easeml.enable_device(text) IS
	'let the scheduler place runs on a device again (admin only)';

CREATE FUNCTION easeml.disable_device(device text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._device_row(device);
	UPDATE easeml.devices SET enabled = false WHERE name = device;
	PERFORM easeml.wake_scheduler();
END;
$$;
COMMENT ON FUNCTION easeml.disable_device(text) IS
	'place no new runs on a device (admin only); runs on it finish';

CREATE FUNCTION easeml.set_device_slots(device text, slots int)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	d			easeml.devices;
BEGIN
	d := easeml._device_row(device);
	IF slots IS NOT NULL AND (slots < 0 OR slots > 64) THEN
		RAISE EXCEPTION 'slots must be between 0 and 64, not %', slots
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'NULL returns the device to its default (cpu: easeml.max_workers, cuda: 1).';
	END IF;
	UPDATE easeml.devices SET slots = set_device_slots.slots WHERE name = device;
	PERFORM easeml.wake_scheduler();
	RETURN easeml._device_slots(d.kind, slots);
END;
$$;
COMMENT ON FUNCTION easeml.set_device_slots(text, int) IS
	'set how many runs a device holds at once (admin only); NULL returns to the default; returns the effective slots';

CREATE FUNCTION easeml.probe_devices()
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_probe_devices'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION easeml.probe_devices() IS
	'ask the scheduler to probe the devices again when this transaction commits (admin only)';

-- Custom trainers: an admin registers a candidate whose training is an
-- external command (docs/devices.md has the contract).
CREATE FUNCTION easeml.add_custom_model(name text, command text[],
										kinds text[] DEFAULT '{classification}',
										device_kinds text[] DEFAULT '{cpu}',
										needs_image boolean DEFAULT false,
										params jsonb DEFAULT '{}',
										cost_factor float8 DEFAULT 1)
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	id			int;
BEGIN
	IF name IS NULL OR name !~ '^[a-z0-9_.-]{1,63}$' THEN
		RAISE EXCEPTION 'invalid model name "%"', name
			USING ERRCODE = 'invalid_name',
				  HINT = 'Use 1 to 63 lower-case letters, digits, "_", "." or "-".';
	END IF;
	IF EXISTS (SELECT 1 FROM easeml.models m WHERE m.name = add_custom_model.name) THEN
		RAISE EXCEPTION 'model "%" already exists', name
			USING ERRCODE = 'duplicate_object';
	END IF;
	IF command IS NULL OR cardinality(command) = 0 OR array_position(command, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'command must be a non-empty array without NULLs'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass the program and its arguments, e.g. ARRAY[''/usr/bin/python3'', ''/srv/easeml/train.py''].';
	END IF;
	IF command[1] NOT LIKE '/%' THEN
		RAISE EXCEPTION 'the program "%" must be an absolute path', command[1]
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Commands run without a shell and with a fixed PATH; name the executable by its full path.';
	END IF;
	IF kinds IS NULL OR cardinality(kinds) = 0
		OR NOT kinds <@ ARRAY['classification', 'regression'] THEN
		RAISE EXCEPTION 'kinds must list ''classification'' and/or ''regression'''
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF device_kinds IS NULL OR cardinality(device_kinds) = 0
		OR array_position(device_kinds, NULL) IS NOT NULL
		OR NOT device_kinds <@ ARRAY['cpu', 'cuda'] THEN
		RAISE EXCEPTION 'device_kinds must list ''cpu'' and/or ''cuda'', in order of preference'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF params IS NULL OR jsonb_typeof(params) <> 'object' THEN
		RAISE EXCEPTION 'params must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF cost_factor IS NULL OR NOT (cost_factor >= 1e-6 AND cost_factor <= 1e6) THEN
		RAISE EXCEPTION 'cost_factor must be between 1e-06 and 1e+06, not %', coalesce(cost_factor::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'cost_factor is the training time relative to other models, e.g. 1 for a softmax regression.';
	END IF;
	INSERT INTO easeml.models (name, family, params, kinds, needs_image, cost_factor,
							   device_kinds, command)
	VALUES (name, 'external', params, kinds, coalesce(needs_image, false), cost_factor,
			device_kinds, command)
	RETURNING models.id INTO id;
	PERFORM easeml.wake_scheduler();
	RETURN id;
END;
$$;
COMMENT ON FUNCTION easeml.add_custom_model(text, text[], text[], text[], boolean, jsonb, float8) IS
	'register a candidate trained by an external command (admin only); returns its model id';

-- The command of a run's custom trainer (called by the trainer).
CREATE FUNCTION easeml_trainer.command(run_id bigint)
RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT easeml._trainer_authorize(command.run_id);
	SELECT m.command FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.id = command.run_id
$$;
COMMENT ON FUNCTION easeml_trainer.command(bigint) IS
	'internal: the command of a run''s custom trainer, NULL for built-in families';

GRANT SELECT ON easeml.devices, easeml.device_usage TO PUBLIC;
REVOKE ALL ON FUNCTION easeml._record_probe(text, int), easeml._device_row(text),
	easeml.enable_device(text), easeml.disable_device(text),
	easeml.set_device_slots(text, int), easeml.probe_devices(),
	easeml.add_custom_model(text, text[], text[], text[], boolean, jsonb, float8),
	easeml_trainer.command(bigint)
	FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.devices', '');

-- ---------------------------------------------------------------------------
-- [live] the live scheduler (issue 7 items 3-6, issue 8 item 3): explained
-- next decisions, the cost model's accuracy
-- (sql/upgrade/0.1.0--0.2.0/30-live.sql makes the same changes)
-- ---------------------------------------------------------------------------

-- decisions are looked up by their run (the run budget, cost_accuracy),
-- and each task's latest decision by the scheduler's every load
CREATE INDEX decisions_run_idx ON easeml.decisions (run_id);
CREATE INDEX decisions_task_last_idx ON easeml.decisions (task_id, id);

-- [live] fn: what the scheduler would train next for a task, and why
CREATE FUNCTION easeml.explain(task bigint, candidates int DEFAULT 5,
	OUT rank int, OUT model text, OUT predicted_score float8,
	OUT score_sd float8, OUT est_seconds float8, OUT acquisition float8,
	OUT why text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_explain'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.explain(bigint, int) IS
	'what the scheduler would train next for one of your tasks: its candidates best first (predicted score and its standard deviation in the task''s score units, estimated seconds, the policy''s acquisition value) and, on the first row, whether and when the task is served, by which rule, and what its prior learned from (docs/scheduler.md)';
GRANT EXECUTE ON FUNCTION easeml.explain(bigint, int) TO PUBLIC;
-- easeml.explain by the task's name, as every other tenant function takes
-- it; the id form above stays.  It runs as the caller: the C function
-- checks the task is the caller's.
CREATE FUNCTION easeml.explain(task text, candidates int DEFAULT 5,
	OUT rank int, OUT model text, OUT predicted_score float8,
	OUT score_sd float8, OUT est_seconds float8, OUT acquisition float8,
	OUT why text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	tid			bigint;
BEGIN
	IF task IS NULL THEN
		RAISE EXCEPTION 'task must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass the name or id of one of your tasks: SELECT id, name FROM easeml.tasks.';
	END IF;
	SELECT t.id INTO tid FROM easeml.tasks t
	 WHERE t.tenant OPERATOR(pg_catalog.=) current_user
	   AND t.name OPERATOR(pg_catalog.=) task;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" does not exist for tenant "%"', task, current_user
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	RETURN QUERY SELECT * FROM easeml.explain(tid, candidates);
END;
$$;
COMMENT ON FUNCTION easeml.explain(text, int) IS
	'easeml.explain(bigint, int) for one of your tasks by name';
GRANT EXECUTE ON FUNCTION easeml.explain(text, int) TO PUBLIC;
-- [live] fn: what drives the cost of a fit, for the scheduler's cost model
-- (src/worker/catalog_load.c, docs/scheduler.md 7.4).  A parameter of a model row is
-- read as a positive number or not at all: a row the trainer refuses never
-- breaks an estimate.
CREATE FUNCTION easeml._param_num(params jsonb, key text, dflt float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN jsonb_typeof(params -> key) = 'number' AND (params ->> key)::float8 > 0
				THEN (params ->> key)::float8 ELSE dflt END
$$;

CREATE FUNCTION easeml._param_sum(params jsonb, key text, dflt float8)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN jsonb_typeof(params -> key) = 'array'
				THEN coalesce((SELECT sum(x::text::float8) FROM jsonb_array_elements(params -> key) x
								WHERE jsonb_typeof(x) = 'number' AND x::text::float8 > 0), dflt)
				ELSE dflt END
$$;

-- The work of one fit of a model relative to its family's default:
-- boosting rounds, trees, epochs or iterations, layer widths.
CREATE FUNCTION easeml._cost_work(family text, params jsonb)
RETURNS float8
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE family
		WHEN 'gbt' THEN easeml._param_num(params, 'n_rounds', 100) / 100
		WHEN 'random_forest' THEN easeml._param_num(params, 'n_trees', 100) / 100
		WHEN 'softmax' THEN easeml._param_num(params, 'max_iter',
											  easeml._param_num(params, 'epochs', 100)) / 100
		WHEN 'cnn' THEN easeml._param_num(params, 'epochs', 5) / 5
						* easeml._param_sum(params, 'filters', 48) / 48
		WHEN 'mlp' THEN easeml._param_sum(params, 'hidden', 128) / 128
		ELSE 1 END
$$;

-- Families that fit one model per class (a tree per class and round,
-- one-vs-rest): their cost grows with the classes of a task of more than 2.
-- (easeml._cost_rates repeats the list inline, where it runs per run: keep
-- them equal.)
CREATE FUNCTION easeml._cost_per_class(family text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT family IN ('gbt', 'softmax', 'linear_svm')
$$;

-- Measured rate per model: seconds per cell (rows x features x folds,
-- times the classes of a task of more than 2 for the families of
-- easeml._cost_per_class), the geometric mean over the tasks it ran on.
-- One row per measured model; the scheduler divides by each model's work
-- (easeml._cost_work) and pools families (src/worker/catalog_load.c).  PL/pgSQL: its
-- body names a column that a later part of the upgrade adds (tasks.folds).
CREATE FUNCTION easeml._cost_rates(OUT model_id int, OUT per_cell float8)
RETURNS SETOF record
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	RETURN QUERY
	SELECT d.mid, exp(avg(ln(d.rate)))
	  FROM (SELECT r.model_id AS mid,
				   max(r.seconds) / max(greatest(t.n_rows * cardinality(t.features) * coalesce(t.folds, 1), 1)
										* CASE WHEN m.family IN ('gbt', 'softmax', 'linear_svm')
													AND t.kind = 'classification' AND t.n_classes > 2
											   THEN t.n_classes ELSE 1 END)::float8 AS rate
			  FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
			  JOIN easeml.models m ON m.id = r.model_id
			 WHERE r.status = 'succeeded' AND r.seconds > 0
			 GROUP BY r.task_id, r.model_id) d
	 GROUP BY d.mid;
END;
$$;
REVOKE ALL ON FUNCTION easeml._param_num(jsonb, text, float8), easeml._param_sum(jsonb, text, float8),
	easeml._cost_work(text, jsonb), easeml._cost_per_class(text), easeml._cost_rates() FROM PUBLIC;

-- [live] How good the scheduler's cost estimates were: each finished run
-- chosen by the scheduler, with the estimate its decision used and the
-- time it took (wall seconds, process start and data load included)
CREATE VIEW easeml.cost_accuracy WITH (security_invoker = true) AS
SELECT r.id AS run_id,
	   r.task_id,
	   r.tenant,
	   m.name AS model,
	   d.est_seconds,
	   r.seconds,
	   ln(d.est_seconds / r.seconds) AS log_ratio,
	   d.rule
  FROM easeml.runs r
  JOIN easeml.decisions d ON d.run_id = r.id
  JOIN easeml.models m ON m.id = r.model_id
 WHERE r.status = 'succeeded' AND r.seconds > 0 AND d.est_seconds > 0;
COMMENT ON VIEW easeml.cost_accuracy IS
	'each succeeded run the scheduler chose: the estimate its decision used (est_seconds), the measured seconds and ln(estimate / measured) (a tenant sees its own runs)';
GRANT SELECT ON easeml.cost_accuracy TO PUBLIC;
-- [live] end

-- ---------------------------------------------------------------------------
-- [incremental] the live scheduler reads only the
-- runs that changed since its previous step (issue 7 item 3,
-- src/worker/catalog_runs.c)
-- ---------------------------------------------------------------------------

-- Each run row records the transaction that last wrote it.  The scheduler
-- asks for the rows whose writer its previous read could not see
-- (pg_visible_in_snapshot of that read's snapshot), so a run written by a
-- transaction that commits late is never missed.
COMMENT ON COLUMN easeml.runs.changed_by IS
	'the transaction that last wrote the row (set by a trigger): the scheduler reads the runs that changed since its previous step';
CREATE INDEX runs_changed_idx ON easeml.runs (changed_by);

-- [incremental] fn: every insert and update of a run records its writer
CREATE FUNCTION easeml._run_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	NEW.changed_by := pg_current_xact_id();
	RETURN NEW;
END;
$$;
CREATE TRIGGER runs_changed
	BEFORE INSERT OR UPDATE ON easeml.runs
	FOR EACH ROW EXECUTE FUNCTION easeml._run_changed();
REVOKE EXECUTE ON FUNCTION easeml._run_changed() FROM PUBLIC;
-- [incremental] end

-- ===========================================================================
-- Launchers and the trainer's way back (docs/scale-out.md; src/worker/launch_slurm.c,
-- src/sql/sql_trainer_token.c)
--
-- The same block is sql/upgrade/0.1.0--0.2.0/60-slurm.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

-- One row per run whose trainer was launched: by which launcher, the job
-- it became (a Slurm job id; NULL for a local process), the digest of the
-- run's secret token, and what the trainer reported at its end.  The
-- trainer proves it is the run's trainer with the token; it returns its
-- result here, through the database, never through files on the server.
CREATE TABLE easeml.trainer_jobs (
	run_id		bigint PRIMARY KEY REFERENCES easeml.runs (id) ON DELETE CASCADE,
	launcher	text NOT NULL CHECK (launcher ~ '^[a-z][a-z0-9_]*$'),
	job_id		text CHECK (job_id ~ '^[0-9]+$'),
	token_sha256 bytea NOT NULL CHECK (octet_length(token_sha256) = 32),
	submitted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	exit_code	int,
	metrics		text,
	error		text,
	reported_at timestamptz
);
COMMENT ON TABLE easeml.trainer_jobs IS
	'internal: the launched trainer of each run (launcher, Slurm job id, token digest) and the result it reported';
ALTER TABLE easeml.trainer_jobs ENABLE ROW LEVEL SECURITY;

-- A session proves it is a run's trainer: the token must be the run's and
-- the run running.  SECURITY DEFINER: the trainer's login role reads no
-- table itself.
CREATE FUNCTION easeml_trainer.attach(run_id bigint, token text)
RETURNS void
AS 'MODULE_PATHNAME', 'easeml_trainer_attach_token'
LANGUAGE C VOLATILE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml_trainer.attach(bigint, text) IS
	'internal: prove with the run''s token that this session is the run''s trainer, and record it so that the scheduler can end it';

-- The functions a trainer calls check that it is the run's trainer and run
-- as their owner, so that the trainer's login role needs no privilege on
-- any table.
-- (train_all: a refit trains on every row)
CREATE FUNCTION easeml_trainer.spec(run_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	RETURN easeml._trainer_spec(run_id)
		|| jsonb_build_object('train_all',
							  EXISTS (SELECT 1 FROM easeml.runs r
									   WHERE r.id = spec.run_id AND r.purpose = 'refit'));
END;
$$;
COMMENT ON FUNCTION easeml_trainer.spec(bigint) IS
	'internal: what the trainer needs to train one run, including its COPY query';

-- The trainer's result: its exit status, its metrics (success) or the
-- reason it failed.  The scheduler records the run from it once the
-- trainer has ended (it alone changes a run's status).
CREATE FUNCTION easeml_trainer.result(run_id bigint, exit_code int, metrics text, error text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(run_id);
	UPDATE easeml.trainer_jobs j
	   SET exit_code = result.exit_code,
		   metrics = left(result.metrics, 1048576),
		   error = left(result.error, 8192),
		   reported_at = clock_timestamp()
	  FROM easeml.runs r
	 WHERE j.run_id = result.run_id AND r.id = j.run_id AND r.status = 'running';
	RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION easeml_trainer.result(bigint, int, text, text) IS
	'internal: the trainer reports how its run ended (exit status, metrics or error)';

-- Slurm partitions are devices of launcher 'slurm' named slurm:<partition>;
-- their slots are how many runs easeml keeps in that partition at once.
CREATE FUNCTION easeml.set_slurm_partition(partition text, slots int, kind text DEFAULT 'cpu')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	device		text := 'slurm:' || partition;
BEGIN
	IF partition IS NULL OR partition !~ '^[a-z0-9_.-]{1,57}$' THEN
		RAISE EXCEPTION 'invalid Slurm partition name "%"', coalesce(partition, '')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Partition names easeml uses are lower-case letters, digits, _ . and -, at most 57 characters.';
	END IF;
	IF slots IS NULL OR slots < 0 OR slots > 64 THEN
		RAISE EXCEPTION 'slots must be between 0 and 64, not %', coalesce(slots::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF kind IS NULL OR kind NOT IN ('cpu', 'cuda') THEN
		RAISE EXCEPTION 'kind must be cpu or cuda, not "%"', coalesce(kind, '')
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'A partition whose nodes have GPUs is of kind cuda: each run asks for one (--gres=gpu:1).';
	END IF;
	INSERT INTO easeml.devices AS d (name, kind, slots, launcher, description, present, enabled)
	VALUES (device, kind, slots, 'slurm', format('Slurm partition %s', partition), true, true)
	ON CONFLICT (name) DO UPDATE
		SET kind = EXCLUDED.kind, slots = EXCLUDED.slots, present = true
		WHERE d.launcher = 'slurm';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'device "%" exists and is not a Slurm partition', device
			USING ERRCODE = 'duplicate_object';
	END IF;
	PERFORM easeml.wake_scheduler();
	RETURN device;
END;
$$;
COMMENT ON FUNCTION easeml.set_slurm_partition(text, int, text) IS
	'let the scheduler keep up to slots runs in a Slurm partition (admin only; kind cuda asks each run for a GPU); returns its device name';

-- The login role a remote trainer connects as may call the trainer's
-- functions and nothing else (docs/scale-out.md).
CREATE FUNCTION easeml.grant_trainer(role name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role) THEN
		RAISE EXCEPTION 'role "%" does not exist', role USING ERRCODE = 'undefined_object';
	END IF;
	EXECUTE format('GRANT EXECUTE ON FUNCTION easeml_trainer.attach(bigint, text),'
				   ' easeml_trainer.spec(bigint), easeml_trainer.data_session(bigint),'
				   ' easeml_trainer.progress(bigint, int, float8),'
				   ' easeml_trainer.progress(bigint, int, float8, float8), easeml_trainer.artifact(bigint, bytea),'
				   ' easeml_trainer.command(bigint), easeml_trainer.result(bigint, int, text, text),'
				   -- [ensemble] a run's validation predictions, an ensemble's members
				   ' easeml_trainer.predictions(bigint, bytea), easeml_trainer.ensemble_members(bigint) TO %I',
				   role);
END;
$$;
COMMENT ON FUNCTION easeml.grant_trainer(name) IS
	'let a login role act as a remote trainer: call the trainer''s functions, which each need the run''s token (admin only)';

REVOKE ALL ON FUNCTION easeml_trainer.attach(bigint, text), easeml._trainer_authorize(bigint),
	easeml._trainer_spec(bigint), easeml_trainer.spec(bigint),
	easeml_trainer.progress(bigint, int, float8), easeml_trainer.artifact(bigint, bytea),
	easeml_trainer.command(bigint),
	easeml_trainer.result(bigint, int, text, text),
	easeml.set_slurm_partition(text, int, text), easeml.grant_trainer(name)
	FROM PUBLIC;

-- ===========================================================================
-- Predict in SQL (docs/predict.md; src/sql/sql_predict.c, src/sql/sql_predict_cache.c,
-- the predict module src/trainer/predict/tr_predict.h)
--
-- The same block ends sql/easeml.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

-- predict: the label of a classification task (as the label column's
-- ::text), or the value of a regression task as text.  [inputs] strict:
-- a category the model was not trained on is an error (22023), not an
-- unknown category (docs/predict.md).
CREATE FUNCTION easeml.predict(task text, "row" anyelement, strict boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict(task text, features float8[], strict boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict(task text, features text[], strict boolean DEFAULT false)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_predict_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict(text, anyelement, boolean) IS
	'the deployed model''s prediction for a row with the task''s feature columns: the label, or the value as text';
COMMENT ON FUNCTION easeml.predict(text, float8[], boolean) IS
	'the deployed model''s prediction for features in tasks.features order (numbers; dates as epoch seconds)';
COMMENT ON FUNCTION easeml.predict(text, text[], boolean) IS
	'the deployed model''s prediction for features in tasks.features order, each as text';

-- predict_value: a regression task's prediction as float8
CREATE FUNCTION easeml.predict_value(task text, "row" anyelement, strict boolean DEFAULT false)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_value(task text, features float8[], strict boolean DEFAULT false)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_value(task text, features text[], strict boolean DEFAULT false)
RETURNS float8
AS 'MODULE_PATHNAME', 'easeml_predict_value_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict_value(text, anyelement, boolean) IS
	'the deployed model''s prediction for a row of a regression task';
COMMENT ON FUNCTION easeml.predict_value(text, float8[], boolean) IS
	'the deployed model''s prediction of a regression task for features in tasks.features order';
COMMENT ON FUNCTION easeml.predict_value(text, text[], boolean) IS
	'the deployed model''s prediction of a regression task for features as text, in tasks.features order';

-- predict_proba: {"class": probability, ...} of a classification task
CREATE FUNCTION easeml.predict_proba(task text, "row" anyelement, strict boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_row'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_proba(task text, features float8[], strict boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_float8'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
CREATE FUNCTION easeml.predict_proba(task text, features text[], strict boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'easeml_predict_proba_text'
LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION easeml.predict_proba(text, anyelement, boolean) IS
	'the deployed model''s class probabilities for a row, as {"class": probability}';
COMMENT ON FUNCTION easeml.predict_proba(text, float8[], boolean) IS
	'the deployed model''s class probabilities for features in tasks.features order';
COMMENT ON FUNCTION easeml.predict_proba(text, text[], boolean) IS
	'the deployed model''s class probabilities for features as text, in tasks.features order';

-- [inputs] What predict saw, per task and serving run, since the server
-- started: counters in shared memory, added to when a statement that
-- predicts ends (src/module/predict_stats.c); never a write per prediction, so
-- predict stays fast in a plain SELECT, a read-only transaction or on a
-- standby.  The function returns the tasks the caller sees only.
CREATE FUNCTION easeml._prediction_counts(OUT task_id bigint, OUT run_id bigint, OUT "rows" bigint,
										  OUT unknown_rows bigint, OUT imputed_rows bigint,
										  OUT since timestamptz, OUT last_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'easeml_prediction_counts'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml._prediction_counts() IS
	'internal: the prediction counters of the caller''s tasks, per task and run, since the server started';

-- ===========================================================================
-- Results: deployments, events (docs/results.md; src/sql/sql_deploy.c)
--
-- The same block ends sql/easeml.sql, so a fresh install and an upgrade
-- from 0.1.0 build the same catalog.
-- ===========================================================================

GRANT INSERT (auto_deploy), UPDATE (auto_deploy) ON easeml.tasks TO PUBLIC;

COMMENT ON COLUMN easeml.tasks.features_version IS
	'the snapshot version from which the task has its current features (easeml.alter_task); NULL: since its declaration';

-- Which run of a task serves predictions.  Every deployment is a row, and
-- rows are never deleted (but with their task): the one active row is
-- what predict uses; a rollback marks the active row rolled back and
-- makes the latest earlier row that was not rolled back active again.
-- task_id is the run's task; the rows go with the run (and so with the
-- task).  No foreign key to tasks: checking it would share-lock the task
-- row, which its tenant may hold locked, and the scheduler deploys a new
-- best run in the statement that records its end.
CREATE TABLE easeml.deployments (
	id			bigserial PRIMARY KEY,
	task_id		bigint NOT NULL,
	tenant		name NOT NULL,
	run_id		bigint NOT NULL REFERENCES easeml.runs (id) ON DELETE CASCADE,
	strategy	text NOT NULL CHECK (strategy IN ('best', 'latest', 'run', 'auto')),
	deployed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	deployed_by name NOT NULL,
	active		boolean NOT NULL DEFAULT true,
	rolled_back_at timestamptz,
	rolled_back_by name,
	/* the deployment's refit on every row, and when its artifact took over */
	refit_run_id bigint REFERENCES easeml.runs (id) ON DELETE SET NULL,
	refitted_at timestamptz,
	CHECK (NOT (active AND rolled_back_at IS NOT NULL))
);
CREATE UNIQUE INDEX deployments_active_idx ON easeml.deployments (task_id) WHERE active;
CREATE INDEX deployments_task_idx ON easeml.deployments (task_id, id);
CREATE INDEX deployments_run_idx ON easeml.deployments (run_id);
COMMENT ON TABLE easeml.deployments IS
	'every deployment of every task: the active row names the run predict uses; rolled-back rows say when and by whom';

ALTER TABLE easeml.deployments ENABLE ROW LEVEL SECURITY;
CREATE POLICY deployments_own ON easeml.deployments FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));
GRANT SELECT ON easeml.deployments TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.deployments_id_seq TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.deployments', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.deployments_id_seq', '');

-- [locks] A row per task whose deployments have changed, locked by
-- easeml._lock_deployments.  A row of a table no tenant has any privilege
-- on, not an advisory lock: any role may take any advisory lock, and a
-- tenant that held another tenant's key (task ids are sequential) kept
-- that tenant's finished runs from being recorded (issue 22 review).  No
-- foreign key (see deployments); the rows go with their task
-- (easeml._drop_snapshots).
CREATE TABLE easeml.deployment_locks (
	task_id		bigint PRIMARY KEY
);
COMMENT ON TABLE easeml.deployment_locks IS
	'internal: a row per task, locked while its deployments change';

-- One event on channel easeml_events (docs/results.md).  Every role of the
-- database may LISTEN to any channel, so the payload carries ids only: a
-- tenant resolves the ids of its own tasks and runs through the RLS
-- views, and learns nothing of another tenant's but that some id moved.
CREATE FUNCTION easeml._notify(event text, task_id bigint, run_id bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT pg_notify('easeml_events',
					 json_build_object('event', event, 'task_id', task_id, 'run_id', run_id)::text)
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
CREATE FUNCTION easeml._best_deployable(task_id bigint)
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

-- Make a run the active deployment of its task; the callers
-- checked it.  With refit_all, the run's refit on every row
-- (easeml._refit_for) predicts at once when it succeeded before, else
-- when it succeeds; refits in flight for other deployments are cancelled.
CREATE FUNCTION easeml._activate(task_id bigint, run_id bigint, strategy text, by name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	refit		bigint;
	refitted	timestamptz;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = _activate.task_id;
	refit := easeml._refit_for(t.id, _activate.run_id);
	IF (SELECT x.status FROM easeml.runs x WHERE x.id = refit) = 'succeeded' THEN
		refitted := clock_timestamp();
	END IF;
	PERFORM easeml._cancel_refits(t.id, refit, _activate.run_id);
	UPDATE easeml.deployments d SET active = false
	 WHERE d.task_id = _activate.task_id AND d.active;
	INSERT INTO easeml.deployments (task_id, tenant, run_id, strategy, deployed_by,
									refit_run_id, refitted_at)
	VALUES (t.id, t.tenant, _activate.run_id, _activate.strategy, _activate.by, refit, refitted);
	PERFORM easeml._notify('deployment', t.id, _activate.run_id);
END;
$$;

-- One task's deployments change one at a time: deploy, rollback and the
-- automatic deployment of a finished run wait for each other here, on the
-- task's row of easeml.deployment_locks (made the first time).
CREATE FUNCTION easeml._lock_deployments(task_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	INSERT INTO easeml.deployment_locks VALUES (_lock_deployments.task_id)
	ON CONFLICT ON CONSTRAINT deployment_locks_pkey DO NOTHING;
	PERFORM FROM easeml.deployment_locks l WHERE l.task_id = _lock_deployments.task_id FOR UPDATE;
END;
$$;

-- A task of the caller's by name, or an error that says which tasks exist.
CREATE FUNCTION easeml._own_task(caller name, task text)
RETURNS easeml.tasks
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
BEGIN
	IF task IS NULL THEN
		RAISE EXCEPTION 'task must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass the name of one of your tasks: SELECT name FROM easeml.tasks lists them.';
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE tenant = caller AND name = task;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'task "%" does not exist for tenant "%"', task, caller
			USING ERRCODE = 'undefined_object',
				  HINT = 'SELECT name FROM easeml.tasks lists your tasks.';
	END IF;
	RETURN t;
END;
$$;

-- easeml.deploy as the caller (src/sql/sql_deploy.c calls it as the bootstrap
-- superuser with the caller's role): what is 'best', 'latest' or a run id
-- in decimal.  Returns the deployed run's id.
CREATE FUNCTION easeml._deploy(caller name, task text, what text)
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
-- The deployment a rollback returns to gets its refit on every row, and
-- the refits of the others are cancelled.
CREATE FUNCTION easeml._rollback(caller name, task text)
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

CREATE FUNCTION easeml.deploy(task text, what text DEFAULT 'best')
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_deploy'
LANGUAGE C VOLATILE
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.deploy(text, text) IS
	'deploy the ''best'' or ''latest'' succeeded run of one of your tasks, or a run by id; returns the run id';

CREATE FUNCTION easeml.deploy(task text, run_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_deploy_run'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.deploy(text, bigint) IS
	'deploy one succeeded run of one of your tasks; returns the run id';

CREATE FUNCTION easeml.rollback(task text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'easeml_rollback'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.rollback(text) IS
	'go back to the previous deployment of one of your tasks; returns the run id now deployed';

-- A run ended: say so, say when it is its task's new best, and deploy the
-- task's best deployable run when this run changed it (it is that run, or
-- the new top score that decides which runs are tied with the best) and
-- the task deploys automatically.  Runs in the session that ends the run
-- (the scheduler, or easeml.cancel), so the events go out when the run's
-- end commits.
-- A refit that ends swaps its artifact in where a deployment waits for it.
CREATE FUNCTION easeml._run_ended()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	best		bigint;
	pick		bigint;
	again		bigint;
BEGIN
	IF TG_RELID <> 'easeml.runs'::regclass THEN
		RAISE EXCEPTION 'easeml._run_ended() only watches easeml.runs'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	PERFORM easeml._notify('run_finished', NEW.task_id, NEW.id);
	-- [refit] a refit on every row: swap its artifact in where a
	-- deployment waits for it; an interrupted one is queued again (three
	-- tries); a failed one leaves the split model serving, and says why
	IF NEW.purpose = 'refit' THEN
		SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id;
		PERFORM easeml._lock_deployments(t.id);
		IF NEW.status = 'succeeded' THEN
			IF t.refit_all AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = NEW.id) THEN
				UPDATE easeml.deployments d SET refitted_at = clock_timestamp()
				 WHERE d.refit_run_id = NEW.id AND d.refitted_at IS NULL;
				IF EXISTS (SELECT 1 FROM easeml.deployments d
							WHERE d.task_id = t.id AND d.active AND d.refit_run_id = NEW.id) THEN
					PERFORM easeml._notify('refitted', t.id, NEW.id);
				END IF;
			END IF;
		ELSIF NEW.status = 'interrupted' AND NOT NEW.cancel_requested AND t.refit_all
			AND (SELECT count(*) FROM easeml.runs x WHERE x.refit_of = NEW.refit_of) < 3
			AND EXISTS (SELECT 1 FROM easeml.deployments d
						 WHERE d.task_id = t.id AND d.active AND d.refit_run_id = NEW.id) THEN
			INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
									 refit_of, snapshot_version)
			VALUES (t.id, t.tenant, NEW.model_id, 'queued', 'scheduler', 'refit',
					NEW.refit_of, NEW.snapshot_version)
			RETURNING id INTO again;
			UPDATE easeml.deployments d SET refit_run_id = again WHERE d.refit_run_id = NEW.id;
		END IF;
		RETURN NULL;
	END IF;
	IF NEW.status <> 'succeeded' THEN
		RETURN NULL;
	END IF;
	SELECT * INTO t FROM easeml.tasks WHERE id = NEW.task_id;
	SELECT r.id INTO best
	  FROM easeml.runs r
	 WHERE r.task_id = t.id AND r.status = 'succeeded' AND r.score IS NOT NULL
	 ORDER BY r.snapshot_version IS DISTINCT FROM t.snapshot_version, r.score DESC, r.seconds, r.id
	 LIMIT 1;
	IF best = NEW.id THEN
		PERFORM easeml._notify('new_best', NEW.task_id, NEW.id);
	END IF;
	-- deploy the best deployable run when this run changed it: it is that
	-- run, or the new top score that decides which runs are tied with it
	IF t.auto_deploy THEN
		PERFORM easeml._lock_deployments(t.id);
		pick := easeml._best_deployable(t.id);
		IF pick IS NOT NULL AND (best = NEW.id OR pick = NEW.id)
			AND NOT EXISTS (SELECT 1 FROM easeml.deployments d
							 WHERE d.task_id = t.id AND d.active AND d.run_id = pick) THEN
			PERFORM easeml._activate(t.id, pick, 'auto', current_user);
		END IF;
	END IF;
	RETURN NULL;
END;
$$;

CREATE TRIGGER runs_ended
	AFTER UPDATE OF status ON easeml.runs
	FOR EACH ROW
	WHEN (OLD.status IN ('queued', 'running')
		  AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'interrupted'))
	EXECUTE FUNCTION easeml._run_ended();

REVOKE ALL ON FUNCTION easeml._notify(text, bigint, bigint),
	easeml._activate(bigint, bigint, text, name), easeml._lock_deployments(bigint),
	easeml._own_task(name, text), easeml._deploy(name, text, text),
	easeml._rollback(name, text), easeml._run_ended()
	FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Live learning curves: what the trainer reports while it trains
-- ---------------------------------------------------------------------------
-- One row per progress report the trainer sent (at most five a second, and
-- the last one when it is done, with the run's validation score); at most
-- easeml._progress_cap() rows per run: past it, every second row but the
-- last is thinned out, so a long run keeps its whole curve, coarser.
CREATE TABLE easeml.run_progress (
	id			bigserial PRIMARY KEY,
	run_id		bigint NOT NULL REFERENCES easeml.runs (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	epoch		int NOT NULL,
	loss		float8,
	score		float8,
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX run_progress_run_idx ON easeml.run_progress (run_id, id);
COMMENT ON TABLE easeml.run_progress IS
	'progress reports of runs while they train: epoch, training loss, validation score when measured (the last report), time';
ALTER TABLE easeml.run_progress ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_progress_own ON easeml.run_progress FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));
GRANT SELECT ON easeml.run_progress TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.run_progress_id_seq TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.run_progress', '');
SELECT pg_catalog.pg_extension_config_dump('easeml.run_progress_id_seq', '');

CREATE FUNCTION easeml._progress_cap()
RETURNS int
LANGUAGE sql IMMUTABLE
AS 'SELECT 500';

-- Runs queued or running, with how far a running one is by its cost
-- estimate: the scheduler's estimate when it chose the run
-- (decisions.est_seconds), else easeml.cost_estimates.  percent stops at
-- 99 and eta is NULL once a run is past its estimate.
CREATE VIEW easeml.active_runs WITH (security_invoker = true) AS
SELECT r.id AS run_id,
	   t.name AS task,
	   r.tenant,
	   r.task_id,
	   m.name AS model,
	   r.status,
	   r.device,
	   r.queued_at,
	   r.started_at,
	   e.elapsed AS elapsed_seconds,
	   est.seconds AS estimated_seconds,
	   CASE WHEN r.status = 'running' AND est.seconds > 0
			THEN least(99, floor(100 * e.elapsed / est.seconds))::int END AS percent,
	   CASE WHEN r.status = 'running' AND est.seconds > 0 AND e.elapsed < est.seconds
			THEN r.started_at + make_interval(secs => est.seconds) END AS eta,
	   r.epoch,
	   r.loss,
	   r.progress_at
  FROM easeml.runs r
  JOIN easeml.tasks t ON t.id = r.task_id
  JOIN easeml.models m ON m.id = r.model_id
 CROSS JOIN LATERAL (SELECT extract(epoch FROM clock_timestamp() - r.started_at)::float8 AS elapsed) e
 CROSS JOIN LATERAL (
	SELECT coalesce((SELECT d.est_seconds FROM easeml.decisions d
					  WHERE d.run_id = r.id AND d.est_seconds > 0
					  ORDER BY d.id DESC LIMIT 1),
					(SELECT c.seconds FROM easeml.cost_estimates c
					  WHERE c.task_id = r.task_id AND c.model_id = r.model_id)) AS seconds) est
 WHERE r.status IN ('queued', 'running');
COMMENT ON VIEW easeml.active_runs IS
	'your queued and running runs: elapsed and estimated seconds, percent done and ETA by the cost estimate, the latest epoch and loss';
GRANT SELECT ON easeml.active_runs TO PUBLIC;

-- ---------------------------------------------------------------------------
-- A run's log, for its tenant (src/sql/sql_runlog.c)
-- ---------------------------------------------------------------------------
CREATE FUNCTION easeml.run_log(run bigint, max_bytes int DEFAULT 65536)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_run_log'
LANGUAGE C VOLATILE
-- it runs a statement as a superuser: never with the caller's search_path
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION easeml.run_log(bigint, int) IS
	'the end of the trainer log of one of your runs, at most max_bytes (1 to 1048576) bytes';

REVOKE ALL ON FUNCTION easeml_trainer.progress(bigint, int, float8, float8) FROM PUBLIC;

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
-- [dba] as easeml.snapshot_drops: readable by every role, a row by none
-- but a superuser (row-level security without a policy), so that a
-- tenant's pg_dump --enable-row-security -n easeml dumps it (empty)
ALTER TABLE easeml.policy_choices ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON easeml.policy_choices TO PUBLIC;
GRANT SELECT ON SEQUENCE easeml.policy_choices_id_seq TO PUBLIC;

-- What "auto" runs where its replay cannot choose, and what it chooses
-- among (src/core/policy.h); whether a setting is "auto" (src/core/policy_spec.c).
CREATE FUNCTION easeml._policy_fallback()
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_fallback'
LANGUAGE C IMMUTABLE;
CREATE FUNCTION easeml._policy_candidates()
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_candidates'
LANGUAGE C IMMUTABLE;
CREATE FUNCTION easeml._policy_auto(policy text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'easeml_policy_auto'
LANGUAGE C IMMUTABLE STRICT;
-- The spec an auto setting runs: the candidate of its last choice (NULL:
-- the fallback) with the setting's options after auto ('auto:w=60').
CREATE FUNCTION easeml._policy_running(policy text, chosen text)
RETURNS text
AS 'MODULE_PATHNAME', 'easeml_policy_running'
LANGUAGE C IMMUTABLE;

-- What policy runs now and why: the setting (easeml.policy, the one source
-- of the policy), the spec it stands for, and for auto its last choice
-- or, where the replay has not chosen, the fallback it runs instead.
CREATE VIEW easeml.policy_status AS
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
REVOKE ALL ON easeml.policy_status FROM PUBLIC;
-- [cost] fn: what a model's parameters add to its family's complexity
-- formula (src/core/costmodel.h): work multiplies the whole formula (rounds,
-- trees, iterations, epochs relative to the family default); width,
-- inner and last are the per-row terms of the layered families (mlp:
-- first layer width, products between hidden layers, last layer width;
-- cnn: multiply-adds per input pixel; random_forest: width is the share
-- of features tried per split, 0 for sqrt(d), inner the depth limit).
-- A parameter is read as a positive number or not at all.
CREATE FUNCTION easeml._cost_shape(family text, params jsonb,
	OUT work float8, OUT width float8, OUT inner_products float8, OUT last_width float8)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH h AS (
		-- the numeric entries of the hidden / filters array, in order
		SELECT array_agg(x.v::text::float8 ORDER BY x.i) AS a
		  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(params -> (CASE family WHEN 'cnn' THEN 'filters' ELSE 'hidden' END)) = 'array'
										  THEN params -> (CASE family WHEN 'cnn' THEN 'filters' ELSE 'hidden' END)
										  ELSE '[]' END) WITH ORDINALITY x(v, i)
		 WHERE jsonb_typeof(x.v) = 'number' AND x.v::text::float8 > 0
	), l AS (
		SELECT CASE WHEN family = 'cnn' THEN coalesce(a, '{16,32}') ELSE coalesce(a, '{128}') END AS a FROM h
	)
	SELECT CASE family
			WHEN 'gbt' THEN easeml._param_num(params, 'n_rounds', 100) / 100
			WHEN 'random_forest' THEN easeml._param_num(params, 'n_trees', 100) / 100
			WHEN 'softmax' THEN easeml._param_num(params, 'max_iter',
												  easeml._param_num(params, 'epochs', 100)) / 100
			WHEN 'cnn' THEN easeml._param_num(params, 'epochs', 5) / 5
			ELSE 1 END,
		   CASE family
			WHEN 'mlp' THEN l.a[1]
			-- 3x3 convolutions, each followed by a 2x2 pooling, then a dense layer of 128
			WHEN 'cnn' THEN 9 * l.a[1]
				+ coalesce((SELECT sum(9 * l.a[i] * l.a[i + 1] / 4 ^ i)
							  FROM generate_subscripts(l.a, 1) i WHERE i < cardinality(l.a)), 0)
				+ 128 * l.a[cardinality(l.a)] / 4 ^ cardinality(l.a)
			WHEN 'random_forest' THEN CASE WHEN easeml._param_num(params, 'max_features', 0) <= 1
										   THEN easeml._param_num(params, 'max_features', 0) ELSE 0 END
			ELSE 0 END,
		   CASE family
			WHEN 'mlp' THEN coalesce((SELECT sum(l.a[i] * l.a[i + 1])
										FROM generate_subscripts(l.a, 1) i WHERE i < cardinality(l.a)), 0)
			WHEN 'random_forest' THEN easeml._param_num(params, 'max_depth', 0)
			ELSE 0 END,
		   CASE family WHEN 'mlp' THEN l.a[cardinality(l.a)] ELSE 0 END
	  FROM l
$$;
REVOKE ALL ON FUNCTION easeml._cost_shape(text, jsonb) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- [retention] the scheduler's own log expires: decisions and their
-- runner-ups, the launch records of ended runs and the auto policy's
-- choices older than an age go (easeml.purge_scheduler_log, or the
-- scheduler itself with easeml.scheduler_log_retention set).  Runs, their
-- events, learning curves, artifacts, deployments and the history stay.
-- ---------------------------------------------------------------------------

-- At most max_rows rows of each table older than older_than (NULL: all of
-- them; a launch record by when its trainer reported, else was launched);
-- what removed how many.  Kept however old: the decision of a run
-- still queued or running (the preemption rule and easeml.active_runs read
-- its estimate), each task's latest decision (round-robin serves the task
-- served longest ago first), the launch record of a run still queued or
-- running, and the latest choice and latest chosen policy of auto (what
-- runs now).
CREATE FUNCTION easeml._purge_scheduler_log(older_than interval, max_rows int)
RETURNS TABLE (table_name text, deleted bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cutoff		timestamptz := now() - older_than;
	ids			bigint[];
	n			bigint;
BEGIN
	SELECT array_agg(id) INTO ids FROM (
		SELECT d.id FROM easeml.decisions d
		 WHERE d.decided_at < cutoff
		   AND NOT EXISTS (SELECT FROM easeml.runs r
							WHERE r.id = d.run_id AND r.status IN ('queued', 'running'))
		   AND EXISTS (SELECT FROM easeml.decisions l
						WHERE l.task_id = d.task_id AND l.id > d.id)
		 ORDER BY d.id LIMIT max_rows) x;
	-- the runner-ups first, to count them (the foreign key would cascade)
	DELETE FROM easeml.decision_candidates c WHERE c.decision_id = ANY (ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	DELETE FROM easeml.decisions d WHERE d.id = ANY (ids);
	GET DIAGNOSTICS deleted = ROW_COUNT;
	table_name := 'decisions';
	RETURN NEXT;
	table_name := 'decision_candidates';
	deleted := n;
	RETURN NEXT;

	DELETE FROM easeml.trainer_jobs j WHERE j.run_id IN (
		SELECT r.id FROM easeml.trainer_jobs k JOIN easeml.runs r ON r.id = k.run_id
		 WHERE r.status NOT IN ('queued', 'running')
		   AND coalesce(k.reported_at, k.submitted_at) < cutoff
		 ORDER BY r.id LIMIT max_rows);
	GET DIAGNOSTICS deleted = ROW_COUNT;
	table_name := 'trainer_jobs';
	RETURN NEXT;

	DELETE FROM easeml.policy_choices p WHERE p.id IN (
		SELECT c.id FROM easeml.policy_choices c
		 WHERE c.chosen_at < cutoff
		   AND c.id < (SELECT max(id) FROM easeml.policy_choices)
		   AND c.id IS DISTINCT FROM (SELECT max(id) FROM easeml.policy_choices WHERE chosen)
		 ORDER BY c.id LIMIT max_rows);
	GET DIAGNOSTICS deleted = ROW_COUNT;
	table_name := 'policy_choices';
	RETURN NEXT;
END;
$$;
COMMENT ON FUNCTION easeml._purge_scheduler_log(interval, int) IS
	'internal: remove at most max_rows rows (NULL: all) per table of the scheduler''s log older than older_than; the scheduler calls it in batches when easeml.scheduler_log_retention is set';
REVOKE ALL ON FUNCTION easeml._purge_scheduler_log(interval, int) FROM PUBLIC;

-- [retention] fn: the admin's purge.  Executable by all so that a tenant
-- is told why not (42501 with a hint) instead of a bare permission error.
CREATE FUNCTION easeml.purge_scheduler_log(older_than interval)
RETURNS TABLE (table_name text, deleted bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT easeml._is_admin() THEN
		RAISE EXCEPTION 'only a superuser may purge the scheduler''s log'
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'Ask an administrator; your own runs, events and results are never purged.';
	END IF;
	IF older_than IS NULL THEN
		RAISE EXCEPTION 'older_than must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass an age, such as interval ''30 days''; interval ''0'' removes every row that may go.';
	END IF;
	IF older_than < interval '0' THEN
		RAISE EXCEPTION 'older_than must not be negative: %', older_than
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass an age, such as interval ''30 days''.';
	END IF;
	RETURN QUERY SELECT * FROM easeml._purge_scheduler_log(older_than, NULL);
END;
$$;
COMMENT ON FUNCTION easeml.purge_scheduler_log(interval) IS
	'remove the scheduler''s log older than older_than: decisions and their runner-ups, launch records of ended runs, auto policy choices; returns the rows removed per table (superuser only; runs, run events, learning curves, artifacts, deployments and history are never touched)';
GRANT EXECUTE ON FUNCTION easeml.purge_scheduler_log(interval) TO PUBLIC;

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
-- source as the caller and says which columns are features), and [budget]
-- a time budget (easeml._check_budget).  Called by easeml.alter_task as
-- the tenant, in a restricted, read-only section; it reads only the
-- caller's own task and writes nothing.  NULL leaves a value as it is;
-- folds => 1 goes back to one validation split.
CREATE FUNCTION easeml._altered_task(task_id bigint, metric text, features text[], folds int,
									 auto_deploy boolean, budget_seconds float8)
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
	t.budget_seconds := coalesce(easeml._check_budget(_altered_task.budget_seconds, 'budget_seconds'),
								 old.budget_seconds);
	-- [retype] the same features given again take their kinds as they are
	-- now, when a column's type changed since (easeml.refresh refuses then)
	IF (t.features, t.folds) IS DISTINCT FROM (old.features, old.folds)
		OR (_altered_task.features IS NOT NULL
			AND EXISTS (SELECT 1
						  FROM unnest(old.features,
									  coalesce(old.feature_types,
											   array_fill('numeric'::text, ARRAY[cardinality(old.features)])))
							   AS u(f, kind)
						  LEFT JOIN pg_attribute a
							ON a.attrelid = old.source AND a.attname = u.f AND a.attnum > 0
						   AND NOT a.attisdropped
						 WHERE easeml._feature_kind(a.atttypid) IS DISTINCT FROM u.kind)) THEN
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
	IF (t.features, t.feature_types, t.folds)
		IS DISTINCT FROM (old.features, old.feature_types, old.folds) THEN
		version := coalesce(old.snapshot_version, 0) + 1;
	END IF;
	UPDATE easeml.tasks k
	   SET metric = t.metric,
		   features = t.features,
		   feature_types = t.feature_types,
		   left_out = t.left_out,
		   folds = t.folds,
		   auto_deploy = t.auto_deploy,
		   budget_seconds = t.budget_seconds,
		   features_version = CASE WHEN (t.features, t.feature_types)
										IS DISTINCT FROM (old.features, old.feature_types)
								   THEN version ELSE k.features_version END
	 WHERE k.id = t.id;

	IF (t.features, t.feature_types) IS DISTINCT FROM (old.features, old.feature_types) THEN
		-- the deployed run read other columns (or read them as another
		-- kind): predict must not apply it,
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
								  folds int DEFAULT NULL, auto_deploy boolean DEFAULT NULL,
								  budget_seconds float8 DEFAULT NULL)
RETURNS easeml.tasks
AS 'MODULE_PATHNAME', 'easeml_alter_task'
LANGUAGE C VOLATILE
-- [identity] it runs statements as a superuser and as the caller
-- (src/module/identity.c): never with the caller's search_path
SET search_path = pg_catalog, pg_temp
-- new features or folds profile and copy the source, as refresh does
SET jit = off;
COMMENT ON FUNCTION easeml.alter_task(text, text, text[], int, boolean, float8) IS
	'change the metric, features, folds, auto_deploy or time budget of one of your tasks; returns its row';

-- a tenant's UPDATE of these columns reaches the tasks_validate trigger,
-- which says to use easeml.alter_task (instead of "permission denied")
GRANT UPDATE (metric, features, folds) ON easeml.tasks TO PUBLIC;

-- [dba] Without the scheduler, tasks are declared and runs queued but
-- nothing is ever trained: say so at CREATE EXTENSION (easeml.database is
-- defined only when the library is preloaded).
DO $$
BEGIN
	IF current_setting('easeml.database', true) IS NULL THEN
		RAISE WARNING 'easeml is not in shared_preload_libraries: no scheduler will train the tasks of this database'
			USING HINT = 'Add easeml to shared_preload_libraries, set easeml.database to this database, and restart the server.';
	ELSIF current_setting('easeml.database') <> current_database() THEN
		RAISE WARNING 'the easeml scheduler serves database "%", not "%": the tasks of this database will not be trained',
			current_setting('easeml.database'), current_database()
			USING HINT = 'Set easeml.database to this database and restart the server, or declare tasks in that database.';
	END IF;
END;
$$;

-- ===========================================================================
-- Refit on every row (docs/results.md section 1, "Refit on every row")
--
-- A run trains on the training split and is scored on the validation split;
-- deploying it also queues its refit: the same candidate trained again on
-- every row of the run's snapshot (runs.purpose = 'refit', refit_of the
-- run).  The split model predicts at once; the refit's artifact replaces it
-- when the refit succeeds (deployments.refitted_at).  The deployment keeps
-- the run and its validation score; a refit is never a selection
-- observation (no score: the leaderboard, the priors and the scheduler's
-- world leave it out).  tasks.refit_all = false keeps the split model.
-- ===========================================================================

GRANT INSERT (refit_all), UPDATE (refit_all) ON easeml.tasks TO PUBLIC;

COMMENT ON COLUMN easeml.runs.purpose IS
	'select: trained on the training split and scored on the validation split; refit: run refit_of trained again on every row (no score)';

CREATE INDEX deployments_refit_idx ON easeml.deployments (refit_run_id)
	WHERE refit_run_id IS NOT NULL;

-- [refit] The scheduler, at each load: active deployments of tasks that
-- refit, with no refit (their task's row was locked when they were made,
-- or refit_all was switched on since), get one.  Returns how many.
CREATE FUNCTION easeml._queue_refits()
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	d			record;
	refit		bigint;
	n			int := 0;
BEGIN
	FOR d IN
		SELECT x.id, x.task_id, x.run_id
		  FROM easeml.deployments x
		  JOIN easeml.tasks t ON t.id = x.task_id
		  JOIN easeml.runs r ON r.id = x.run_id
		 WHERE x.active AND x.refit_run_id IS NULL AND t.refit_all AND r.purpose = 'select'
		   AND t.status IN ('active', 'completed')
	LOOP
		-- the task's deployments change one at a time, but the scheduler
		-- never waits for a tenant's open easeml.deploy: it tries later
		PERFORM FROM easeml.deployment_locks l WHERE l.task_id = d.task_id FOR UPDATE SKIP LOCKED;
		CONTINUE WHEN NOT FOUND;
		CONTINUE WHEN NOT EXISTS (SELECT 1 FROM easeml.deployments x
								   WHERE x.id = d.id AND x.active AND x.refit_run_id IS NULL);
		refit := easeml._refit_for(d.task_id, d.run_id);
		CONTINUE WHEN refit IS NULL;
		UPDATE easeml.deployments x
		   SET refit_run_id = refit,
			   refitted_at = CASE WHEN (SELECT r.status FROM easeml.runs r WHERE r.id = refit) = 'succeeded'
								  THEN clock_timestamp() END
		 WHERE x.id = d.id;
		n := n + 1;
	END LOOP;
	RETURN n;
END;
$$;
REVOKE ALL ON FUNCTION easeml._queue_refits() FROM PUBLIC;

-- [refit] A task deploys another run (easeml.deploy, an automatic
-- deployment, easeml.rollback): the refits still queued or running for
-- other deployments are cancelled, but keep (NULL: none; deployed NULL:
-- alter_task retired the deployment).  A queued one
-- ends here, as easeml.cancel ends it; the scheduler stops a running one.
CREATE FUNCTION easeml._cancel_refits(task_id bigint, keep bigint, deployed bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	UPDATE easeml.runs x
	   SET cancel_requested = true,
		   status = CASE WHEN x.status = 'queued' THEN 'cancelled' ELSE x.status END,
		   finished_at = CASE WHEN x.status = 'queued' THEN clock_timestamp() END,
		   error = CASE WHEN x.status <> 'queued' THEN NULL
						WHEN _cancel_refits.deployed IS NULL
						THEN 'cancelled before it started: the task''s features changed and its deployment was retired'
						ELSE format('cancelled before it started: the task deploys run %s now',
									_cancel_refits.deployed) END
	 WHERE x.task_id = _cancel_refits.task_id AND x.purpose = 'refit'
	   AND x.status IN ('queued', 'running') AND NOT x.cancel_requested
	   AND x.id IS DISTINCT FROM _cancel_refits.keep
$$;
REVOKE ALL ON FUNCTION easeml._cancel_refits(bigint, bigint, bigint) FROM PUBLIC;

-- [refit] The refit on every row a deployment of run_id uses, where the
-- task refits (refit_all) and the run is a selection run, else NULL: the
-- latest refit of the run that succeeded with its artifact, else the one
-- queued or running (and not being cancelled), else a new one, queued;
-- NULL too when the task's row is locked (the new run's foreign key would
-- wait for its tenant's transaction, and the scheduler deploys in the
-- statement that records a run's end): easeml._queue_refits
-- queues it later.
CREATE FUNCTION easeml._refit_for(task_id bigint, run_id bigint)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t			easeml.tasks;
	r			easeml.runs;
	refit		bigint;
BEGIN
	SELECT * INTO t FROM easeml.tasks x WHERE x.id = _refit_for.task_id;
	SELECT * INTO r FROM easeml.runs x WHERE x.id = _refit_for.run_id;
	IF NOT t.refit_all OR r.purpose IS DISTINCT FROM 'select' THEN
		RETURN NULL;
	END IF;
	SELECT x.id INTO refit FROM easeml.runs x
	 WHERE x.refit_of = r.id AND x.status = 'succeeded'
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = x.id)
	 ORDER BY x.id DESC LIMIT 1;
	IF refit IS NULL THEN
		SELECT x.id INTO refit FROM easeml.runs x
		 WHERE x.refit_of = r.id AND x.status IN ('queued', 'running') AND NOT x.cancel_requested
		 ORDER BY x.id DESC LIMIT 1;
	END IF;
	IF refit IS NULL THEN
		PERFORM FROM easeml.tasks x WHERE x.id = t.id FOR KEY SHARE SKIP LOCKED;
		IF NOT FOUND THEN
			RETURN NULL;
		END IF;
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
								 refit_of, snapshot_version)
		VALUES (t.id, t.tenant, r.model_id, 'queued', 'scheduler', 'refit', r.id, r.snapshot_version)
		RETURNING id INTO refit;
	END IF;
	RETURN refit;
END;
$$;

REVOKE ALL ON FUNCTION easeml._refit_for(bigint, bigint) FROM PUBLIC;

-- [refit] The run whose artifact predicts for a deployment: its refit
-- once that took over (and while its artifact is kept), else the run.
CREATE FUNCTION easeml._deployment_artifact(d easeml.deployments)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT CASE WHEN d.refitted_at IS NOT NULL
					 AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = d.refit_run_id)
				THEN d.refit_run_id ELSE d.run_id END
$$;

-- [refit] The run whose artifact predicts for a task: its active
-- deployment's (the refit once that took over), else its best deployable
-- run; NULL when it has none.
CREATE FUNCTION easeml._deployed_run(task_id bigint)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT coalesce((SELECT easeml._deployment_artifact(d)
					   FROM easeml.deployments d
					  WHERE d.task_id = _deployed_run.task_id AND d.active),
					easeml._best_deployable(_deployed_run.task_id))
$$;
COMMENT ON FUNCTION easeml._deployed_run(bigint) IS
	'the run whose artifact predicts for a task: its active deployment (or that run''s refit on every row), else its best run with an artifact';

-- what easeml.predict saw, per task and run (easeml._prediction_counts)
CREATE VIEW easeml.prediction_stats WITH (security_invoker = true) AS
SELECT t.name AS task,
	   t.tenant,
	   c.task_id,
	   c.run_id,
	   m.name AS model,
	   c.run_id IS NOT DISTINCT FROM easeml._deployed_run(t.id) AS serving,
	   c."rows" AS predicted_rows,
	   c.unknown_rows AS unknown_category_rows,
	   c.imputed_rows,
	   c.since,
	   c.last_at
  FROM easeml._prediction_counts() c
  JOIN easeml.tasks t ON t.id = c.task_id
  LEFT JOIN easeml.runs r ON r.id = c.run_id
  LEFT JOIN easeml.models m ON m.id = r.model_id;
COMMENT ON VIEW easeml.prediction_stats IS
	'what easeml.predict saw for each of your tasks and the run that served it, since the server started: rows predicted, rows with a category the model was not trained on, rows with a missing value filled in';
GRANT SELECT ON easeml.prediction_stats TO PUBLIC;

-- [refit] What each task deploys now: the run chosen and its validation
-- score, and the artifact that predicts (the run's, or its refit's)
CREATE VIEW easeml.deployed WITH (security_invoker = true) AS
SELECT t.name AS task,
	   t.tenant,
	   t.id AS task_id,
	   d.run_id,
	   m.name AS model,
	   r.score,
	   d.strategy,
	   d.deployed_at,
	   d.deployed_by,
	   t.auto_deploy,
	   a.id AS artifact_run_id,
	   CASE WHEN jsonb_typeof(a.metrics -> 'n_train') = 'number'
			THEN (a.metrics ->> 'n_train')::bigint END AS n_train,
	   t.refit_all,
	   d.refit_run_id,
	   f.status AS refit_status,
	   f.error AS refit_error,
	   d.refitted_at
  FROM easeml.deployments d
  JOIN easeml.tasks t ON t.id = d.task_id
  JOIN easeml.runs r ON r.id = d.run_id
  JOIN easeml.models m ON m.id = r.model_id
  LEFT JOIN easeml.runs f ON f.id = d.refit_run_id
  JOIN easeml.runs a ON a.id = easeml._deployment_artifact(d)
 WHERE d.active;
COMMENT ON VIEW easeml.deployed IS
	'the active deployment of each of your tasks: the run predict uses';
GRANT SELECT ON easeml.deployed TO PUBLIC;


-- [refit] end

-- ===========================================================================
-- [budget] A time budget per task (docs/sql.md, docs/scheduler.md 7.8)
--
-- tasks.budget_seconds bounds the wall seconds of a task's search: the
-- selection runs on its current snapshot version, finished ones by their
-- recorded seconds, running ones by the time since they started
-- (easeml._spent_seconds).  Once that reaches the budget the scheduler
-- proposes no run for the task; runs in flight finish (none is cancelled)
-- and the task becomes completed with the reason.  NULL: no budget.  A
-- task declared without one gets its tenant's default_budget_seconds
-- (easeml.set_tenant_budget).  Refits on every row are no part of the
-- search: they do not count and still run for a completed task.
-- ===========================================================================

COMMENT ON COLUMN easeml.tasks.budget_seconds IS
	'time budget of the task''s search in wall seconds of its selection runs on the current snapshot (easeml._spent_seconds); NULL: none';
GRANT INSERT (budget_seconds), UPDATE (budget_seconds) ON easeml.tasks TO PUBLIC;
COMMENT ON COLUMN easeml.tenants.default_budget_seconds IS
	'the time budget of a task this tenant declares without one (easeml.set_tenant_budget); NULL: none';

-- [budget] A time budget as given, checked: NULL, or a positive and finite
-- number of seconds (what names it in the message).  Returns it.  The
-- declaration, an UPDATE of the column, easeml.alter_task and
-- easeml.set_tenant_budget call it.
CREATE FUNCTION easeml._check_budget(seconds float8, what text)
RETURNS float8
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	-- NaN compares above every number in PostgreSQL: the upper bound refuses it
	IF seconds IS NOT NULL AND NOT (seconds > 0 AND seconds < 'Infinity'::float8) THEN
		RAISE EXCEPTION '% must be a positive, finite number of seconds or NULL, not %', what, seconds
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'For example 600 gives the search ten minutes of run time; NULL means no budget: the search goes on until every candidate has been tried or max_runs is reached.';
	END IF;
	RETURN seconds;
END;
$$;

-- [budget] An admin sets the time budget a tenant's tasks get when they
-- are declared without one (NULL: none).  A default, not a limit: the
-- tenant may declare or set another budget, or none; tasks declared
-- before keep theirs.
CREATE FUNCTION easeml.set_tenant_budget(role name, default_budget_seconds float8)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be NULL'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Pass a tenant: SELECT easeml.set_tenant_budget(''lab_a'', 600);';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM easeml.tenants WHERE name = role) THEN
		RAISE EXCEPTION 'role "%" is not an easeml tenant', role
			USING ERRCODE = 'undefined_object',
				  HINT = format('Register it first: SELECT easeml.add_tenant(%L);', role);
	END IF;
	PERFORM easeml._check_budget(default_budget_seconds, 'default_budget_seconds');
	UPDATE easeml.tenants t
	   SET default_budget_seconds = set_tenant_budget.default_budget_seconds
	 WHERE t.name = role;
END;
$$;
REVOKE ALL ON FUNCTION easeml.set_tenant_budget(name, float8) FROM PUBLIC;
COMMENT ON FUNCTION easeml.set_tenant_budget(name, float8) IS
	'set the time budget in seconds a tenant''s tasks get when declared without one (admin only; NULL: none); existing tasks keep theirs';

-- [budget] end

-- ===========================================================================
-- [ensemble] Ensembles of a task's runs (docs/models.md "Ensembles",
-- docs/scheduler.md 7.10)
--
-- Every selection run that succeeds stores its stored model's predictions
-- for its validation rows (easeml.run_predictions, within
-- easeml.artifact_max_bytes).  Once a task has easeml.ensemble_min_runs (k)
-- such runs on its current snapshot, a run of the built-in model
-- 'ensemble' (runs.purpose = 'ensemble') is queued; the scheduler starts
-- it like a refit, and its trainer selects the ensemble greedily, with
-- replacement, over the runs' validation predictions (Caruana et al.
-- 2004).  Its score ranks it on the leaderboard, and it is deployed and
-- predicts like any run: its artifact names its member runs and their
-- weights.  Another ensemble is built once k more runs succeeded, within
-- a bounded share of the task's compute, and a last one when the task
-- completes (easeml._queue_ensemble).
-- sql/upgrade/0.1.0--0.2.0/99zi-ensemble.sql makes the same changes.
-- ===========================================================================

-- [ensemble] the validation predictions of a run's stored model
-- (src/trainer/tr_ensemble.h: the artifact format, family 'validation')
CREATE TABLE easeml.run_predictions (
	run_id		bigint PRIMARY KEY REFERENCES easeml.runs (id) ON DELETE CASCADE,
	tenant		name NOT NULL,
	bytes		bigint NOT NULL,
	data		bytea NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE easeml.run_predictions IS
	'the validation predictions of succeeded runs'' stored models (class probabilities or values), which ensembles are selected from; kept up to easeml.artifact_max_bytes';
ALTER TABLE easeml.run_predictions ENABLE ROW LEVEL SECURITY;
CREATE POLICY run_predictions_own ON easeml.run_predictions FOR SELECT
	USING (tenant = (SELECT easeml._bound_tenant()));
GRANT SELECT ON easeml.run_predictions TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.run_predictions', '');

-- [ensemble] the model ensemble runs are of; disabled: the policy never
-- proposes it, the scheduler queues its runs (easeml._queue_ensemble)
INSERT INTO easeml.models (name, family, params, kinds, enabled, builtin) VALUES
	('ensemble', 'ensemble', '{"steps": 50}', '{classification,regression}', false, true);

-- [ensemble] The runs an ensemble of a task is selected from: its
-- succeeded selection runs on the task's current snapshot and features,
-- of a built-in family, with their artifact and validation predictions
-- stored; best first.  selectable: one of the best 200, which an ensemble
-- selects from (easeml_trainer.ensemble_members); the predictions of the
-- others are not kept (easeml._keep_artifacts).
CREATE FUNCTION easeml._ensemble_pool(task_id bigint)
RETURNS TABLE (run_id bigint, score float8, selectable boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT r.id, r.score, row_number() OVER (ORDER BY r.score DESC, r.seconds, r.id) <= 200
	  FROM easeml.tasks t
	  JOIN easeml.runs r ON r.task_id = t.id
	  JOIN easeml.models m ON m.id = r.model_id
	 WHERE t.id = _ensemble_pool.task_id AND r.status = 'succeeded' AND r.purpose = 'select'
	   AND r.score IS NOT NULL AND m.family NOT IN ('external', 'ensemble')
	   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version
	   AND easeml._has_features(t, r)
	   AND EXISTS (SELECT 1 FROM easeml.artifacts a WHERE a.run_id = r.id)
	   AND EXISTS (SELECT 1 FROM easeml.run_predictions p WHERE p.run_id = r.id)
	 ORDER BY r.score DESC, r.seconds, r.id
$$;

-- [ensemble] The trainer stores its run's validation predictions: NULL
-- when kept, else why not (over easeml.artifact_max_bytes, the run is no
-- longer running); the trainer records it in the run's metrics.
CREATE FUNCTION easeml_trainer.predictions(run_id bigint, data bytea)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	cap			bigint := pg_size_bytes(coalesce(current_setting('easeml.artifact_max_bytes', true), '16MB'));
BEGIN
	PERFORM easeml._trainer_authorize(predictions.run_id);
	IF data IS NULL OR substr(data, 1, 8) <> '\x454153454d4c4131'::bytea THEN
		RAISE EXCEPTION 'the validation predictions of run % are not in the artifact format', run_id
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Send the blob src/trainer/tr_ensemble.c writes (magic EASEMLA1, family validation).';
	END IF;
	IF octet_length(data) > cap THEN
		RETURN format('%s bytes, over easeml.artifact_max_bytes (%s bytes)', octet_length(data), cap);
	END IF;
	INSERT INTO easeml.run_predictions (run_id, tenant, bytes, data)
	SELECT r.id, r.tenant, octet_length(predictions.data), predictions.data
	  FROM easeml.runs r
	 WHERE r.id = predictions.run_id AND r.status IN ('queued', 'running')
		   AND r.purpose = 'select'
	ON CONFLICT ON CONSTRAINT run_predictions_pkey
	DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes;
	IF NOT FOUND THEN
		RETURN 'the run is not a selection run in flight';
	END IF;
	RETURN NULL;
END;
$$;
COMMENT ON FUNCTION easeml_trainer.predictions(bigint, bytea) IS
	'internal: the trainer stores the validation predictions of its run''s model; returns why not when they are not kept';

-- [ensemble] The validation predictions an ensemble run selects from: the
-- selectable runs of its task's pool (easeml._ensemble_pool) on the run's
-- snapshot, best first.
CREATE FUNCTION easeml_trainer.ensemble_members(run_id bigint)
RETURNS TABLE (member bigint, score float8, data bytea)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM easeml._trainer_authorize(ensemble_members.run_id);
	RETURN QUERY
		SELECT p.run_id, p.score, rp.data
		  FROM easeml.runs e
		 CROSS JOIN LATERAL easeml._ensemble_pool(e.task_id) p
		  JOIN easeml.runs r ON r.id = p.run_id
		  JOIN easeml.run_predictions rp ON rp.run_id = p.run_id
		 WHERE e.id = ensemble_members.run_id AND e.purpose = 'ensemble' AND p.selectable
		   AND r.snapshot_version IS NOT DISTINCT FROM e.snapshot_version
		 ORDER BY p.score DESC, r.seconds, r.id;
END;
$$;
COMMENT ON FUNCTION easeml_trainer.ensemble_members(bigint) IS
	'internal: the runs an ensemble run selects from, with their validation predictions, best first';

-- [ensemble] Queue an ensemble of a task (docs/models.md 8,
-- docs/scheduler.md 7.10), in the transaction that records the end of one
-- of its selection runs or ensembles, or its completion.  The pool is
-- easeml._ensemble_pool; a run "joined since the last ensemble" when it
-- finished after the latest ensemble of the current snapshot started
-- (queued, when it never started), however that ended.  Due:
--  - while the task is active: at least k = easeml.ensemble_min_runs runs
--    joined since the last ensemble (all the pool for the first), and the
--    ensembles so far, plus one more as long as the last, took at most a
--    quarter of the seconds of the snapshot's selection runs (seconds in a
--    slot: started to finished), so that ensembles take at most about a
--    fifth of the task's compute from its search, and never catch up with
--    the count of runs one after another;
--  - once the task is completed: one last ensemble when a run joined since
--    the last one and none of its selection runs is queued or running,
--    so that the final leaderboard's ensemble selects from every run
--    (also at the end of an ensemble still running at completion).
-- One ensemble of a task is queued or running at a time (the EXISTS;
-- runs_ensemble_in_flight_idx where two transactions recording ends of the
-- task's runs, or its completion, would queue one each: the second waits
-- for the first and queues none, its own record kept); the pool holds at
-- least k runs.  No ensemble for k-fold tasks (the runs keep the
-- predictions of no fold) or with ensemble_min_runs = 0.  A run whose
-- cancel was requested queues none (the trigger's WHEN): a cancelled
-- ensemble is not followed by another, nor does a run that succeeded
-- before its trainer could be stopped queue one; a cancel never leaves new
-- work behind (the scheduler, even with easeml.enabled = off, or the
-- tenant cancelling everything of a task, would find a run queued after
-- it).  The next selection run that ends looks again.  Per task lookups
-- only: the recording path pays for them.
CREATE FUNCTION easeml._queue_ensemble()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	k			int := coalesce(nullif(current_setting('easeml.ensemble_min_runs', true), '')::int, 5);
	tid			bigint;
	t			easeml.tasks;
	mid			int;
	last_start	timestamptz;
	ens_seconds float8;
	last_seconds float8;
	sel_seconds float8;
	pool		bigint;
	joined		bigint;
BEGIN
	IF TG_RELID = 'easeml.runs'::regclass THEN
		tid := NEW.task_id;
	ELSIF TG_RELID = 'easeml.tasks'::regclass THEN
		tid := NEW.id;
	ELSE
		RAISE EXCEPTION 'easeml._queue_ensemble() only watches easeml.runs and easeml.tasks'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	IF k <= 0 THEN
		RETURN NULL;
	END IF;
	k := greatest(k, 2);
	SELECT * INTO t FROM easeml.tasks WHERE id = tid;
	SELECT m.id INTO mid FROM easeml.models m WHERE m.name = 'ensemble' AND m.builtin;
	IF NOT FOUND OR mid IS NULL OR t.folds IS NOT NULL
		OR t.status NOT IN ('active', 'completed')
		OR EXISTS (SELECT 1 FROM easeml.runs r WHERE r.task_id = t.id AND r.status IN ('queued', 'running')
					AND (r.purpose = 'ensemble' OR (t.status = 'completed' AND r.purpose = 'select'))) THEN
		RETURN NULL;
	END IF;
	SELECT max(coalesce(r.started_at, r.queued_at)) FILTER (WHERE r.purpose = 'ensemble'),
		   coalesce(sum(extract(epoch FROM r.finished_at - r.started_at))
					FILTER (WHERE r.purpose = 'ensemble'), 0),
		   coalesce((array_agg(extract(epoch FROM r.finished_at - r.started_at) ORDER BY r.id DESC)
					 FILTER (WHERE r.purpose = 'ensemble'))[1], 0),
		   coalesce(sum(extract(epoch FROM r.finished_at - r.started_at))
					FILTER (WHERE r.purpose = 'select'), 0)
	  INTO last_start, ens_seconds, last_seconds, sel_seconds
	  FROM easeml.runs r
	 WHERE r.task_id = t.id AND r.purpose IN ('select', 'ensemble')
	   AND r.snapshot_version IS NOT DISTINCT FROM t.snapshot_version;
	SELECT count(*), count(*) FILTER (WHERE last_start IS NULL OR r.finished_at > last_start)
	  INTO pool, joined
	  FROM easeml._ensemble_pool(t.id) p JOIN easeml.runs r ON r.id = p.run_id;
	IF pool >= k
		AND ((t.status = 'completed' AND joined >= 1)
			 OR (t.status = 'active' AND joined >= k
				 AND ens_seconds + last_seconds <= sel_seconds / 4)) THEN
		INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose,
								 snapshot_version)
		VALUES (t.id, t.tenant, mid, 'queued', 'scheduler', 'ensemble', t.snapshot_version)
		ON CONFLICT (task_id) WHERE status IN ('queued', 'running') AND purpose = 'ensemble'
		DO NOTHING;
	END IF;
	RETURN NULL;
END;
$$;

CREATE TRIGGER runs_queue_ensemble
	AFTER UPDATE OF status ON easeml.runs
	FOR EACH ROW
	WHEN (OLD.status IN ('queued', 'running') AND NOT NEW.cancel_requested
		  AND NEW.status IN ('succeeded', 'failed', 'interrupted')
		  AND NEW.purpose IN ('select', 'ensemble'))
	EXECUTE FUNCTION easeml._queue_ensemble();
-- [ensemble] the task's last ensemble when it completes
CREATE TRIGGER tasks_queue_ensemble
	AFTER UPDATE OF status ON easeml.tasks
	FOR EACH ROW
	WHEN (NEW.status = 'completed' AND OLD.status <> 'completed')
	EXECUTE FUNCTION easeml._queue_ensemble();

REVOKE ALL ON FUNCTION easeml._ensemble_pool(bigint), easeml._queue_ensemble(),
	easeml_trainer.predictions(bigint, bytea), easeml_trainer.ensemble_members(bigint)
	FROM PUBLIC;

-- [ensemble] end
