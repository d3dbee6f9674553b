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

-- Runs record the device they were placed on.
ALTER TABLE easeml.runs
	ADD COLUMN device text,
	ADD COLUMN device_kind text CHECK (device_kind IN ('cpu', 'cuda'));

-- Candidates list the device kinds they can use, in order of preference;
-- a custom trainer's candidate has family 'external' and a command.
ALTER TABLE easeml.models
	ADD COLUMN device_kinds text[] NOT NULL DEFAULT '{cpu}'
		CHECK (cardinality(device_kinds) >= 1 AND array_position(device_kinds, NULL) IS NULL
			   AND device_kinds <@ ARRAY['cpu', 'cuda']),
	ADD COLUMN command text[]
		CHECK (command IS NULL OR (cardinality(command) >= 1
			   AND array_position(command, NULL) IS NULL AND command[1] LIKE '/%')),
	ADD CONSTRAINT models_external_command CHECK ((family = 'external') = (command IS NOT NULL));
-- the built-in families with a CUDA backend prefer a GPU
UPDATE easeml.models SET device_kinds = '{cuda,cpu}'
 WHERE builtin AND family IN ('softmax', 'mlp', 'cnn');

-- Slots of a device: its own setting, else the default of its kind.
CREATE FUNCTION easeml._device_slots(kind text, slots int)
RETURNS int
LANGUAGE sql STABLE
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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
SET search_path = pg_catalog
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
CREATE FUNCTION easeml.trainer_command(run_id bigint)
RETURNS text[]
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
	SELECT m.command FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE r.id = trainer_command.run_id
$$;
COMMENT ON FUNCTION easeml.trainer_command(bigint) IS
	'internal: the command of a run''s custom trainer, NULL for built-in families';

GRANT SELECT ON easeml.devices, easeml.device_usage TO PUBLIC;
REVOKE ALL ON FUNCTION easeml._record_probe(text, int), easeml._device_row(text),
	easeml.enable_device(text), easeml.disable_device(text),
	easeml.set_device_slots(text, int), easeml.probe_devices(),
	easeml.add_custom_model(text, text[], text[], text[], boolean, jsonb, float8),
	easeml.trainer_command(bigint)
	FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('easeml.devices', '');
