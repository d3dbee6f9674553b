-- Devices: what the probe records, the admin functions, placement data,
-- and the registration of custom trainers.  (Self-contained but for helpers.sql's try().)

-- the scheduler here never starts (easeml.enabled = off), so nothing was
-- probed yet; a failed probe leaves only the CPU
SELECT count(*) AS devices_before_a_probe FROM easeml.devices;
SELECT easeml._record_probe(NULL, 1) AS present;
SELECT name, kind, ordinal, enabled, present, slots, launcher FROM easeml.devices ORDER BY name;

-- a probe that found two GPUs
SELECT easeml._record_probe($${"protocol": 1, "devices": [
	{"name": "cpu", "kind": "cpu", "ordinal": 0, "memory": 8000000000, "description": "2 CPU cores"},
	{"name": "cuda:0", "kind": "cuda", "ordinal": 0, "memory": 80000000000, "description": "GPU A, compute capability 9.0"},
	{"name": "cuda:1", "kind": "cuda", "ordinal": 1, "memory": 40000000000, "description": "GPU B, compute capability 8.0"}],
	"cuda": "CUDA 13.0"}$$, 1) AS present;
SELECT name, kind, ordinal, memory, description, enabled, present FROM easeml.devices ORDER BY name;
-- slots: the CPU follows easeml.max_workers, a GPU holds one run
SELECT current_setting('easeml.max_workers') AS max_workers;
SELECT name, kind, slots, running, enabled, present FROM easeml.device_usage ORDER BY name;

-- the admin's settings survive probes; a GPU no longer found is absent, not forgotten
SELECT easeml.disable_device('cuda:0');
SELECT easeml.set_device_slots('cuda:1', 3) AS slots;
SELECT easeml.set_device_slots('cpu', 0) AS slots;
SELECT easeml._record_probe($${"protocol": 1, "devices": [
	{"name": "cpu", "kind": "cpu", "ordinal": 0},
	{"name": "cuda:0", "kind": "cuda", "ordinal": 0, "memory": 80000000000}]}$$, 1) AS present;
SELECT name, slots, enabled, present FROM easeml.device_usage ORDER BY name;
SELECT easeml.enable_device('cuda:0');
SELECT easeml.set_device_slots('cuda:1', NULL) AS slots;
SELECT easeml.set_device_slots('cpu', NULL) = current_setting('easeml.max_workers')::int AS cpu_default;
SELECT name, slots, enabled, present FROM easeml.device_usage ORDER BY name;

-- errors name the device or the value, with a hint
SELECT try($$SELECT easeml.disable_device('tpu:0')$$);
SELECT try($$SELECT easeml.enable_device(NULL)$$);
SELECT try($$SELECT easeml.set_device_slots('cpu', 65)$$);
SELECT try($$SELECT easeml.set_device_slots('cpu', -1)$$);

-- output that is not a probe of this protocol is ignored: only the CPU is kept
SELECT easeml._record_probe('not json', 1) AS present;
SELECT easeml._record_probe('{"protocol": 2, "devices": [{"name": "cuda:0", "kind": "cuda"}]}', 1) AS present;
SELECT easeml._record_probe('{"protocol": 1, "devices": [{"name": "cuda:0", "kind": "cuda", "memory": "lots"},
	{"name": "Bad Name", "kind": "cuda"}, {"name": "tpu:0", "kind": "tpu"}, 7]}', 1) AS present;
SELECT name, present FROM easeml.devices ORDER BY name;
SELECT easeml._record_probe('{"protocol": 1, "devices": [{"name": "cuda:0", "kind": "cuda", "ordinal": 0}]}', 1) AS present;

-- asking for a new probe (served when the scheduler runs)
SELECT easeml.probe_devices();

-- tenants may read the devices, never change them
CREATE ROLE regress_dev_tenant;
SET ROLE regress_dev_tenant;
SELECT name, kind FROM easeml.devices ORDER BY name;
SELECT name, running FROM easeml.device_usage ORDER BY name;
SELECT try($$SELECT easeml.disable_device('cpu')$$);
SELECT try($$SELECT easeml.set_device_slots('cpu', 8)$$);
SELECT try($$SELECT easeml.probe_devices()$$);
SELECT try($$UPDATE easeml.devices SET enabled = false$$);
SELECT try($$SELECT easeml.add_custom_model('mine', ARRAY['/bin/true'])$$);
SELECT try($$SELECT easeml_trainer.command(1)$$);
RESET ROLE;
DROP ROLE regress_dev_tenant;

-- built-in candidates list the device kinds they can use
SELECT family, device_kinds, count(*) AS configurations
  FROM easeml.models WHERE builtin GROUP BY family, device_kinds ORDER BY family;

-- custom trainers: an admin registers a command
SELECT easeml.add_custom_model('sk-logreg', ARRAY['/usr/bin/python3', '/srv/easeml/logreg.py', '--quiet'],
							   kinds => '{classification,regression}', params => '{"C": 1.0}') > 0 AS registered;
SELECT easeml.add_custom_model('torch-mlp', ARRAY['/usr/bin/python3', '/srv/easeml/torch_mlp.py'],
							   device_kinds => '{cuda,cpu}', cost_factor => 4) > 0 AS registered;
SELECT name, family, command, kinds, device_kinds, needs_image, params, cost_factor, builtin
  FROM easeml.models WHERE NOT builtin ORDER BY name;
SELECT try($$SELECT easeml.add_custom_model('Bad Name', ARRAY['/bin/true'])$$);
SELECT try($$SELECT easeml.add_custom_model('sk-logreg', ARRAY['/bin/true'])$$);
SELECT try($$SELECT easeml.add_custom_model('rel', ARRAY['python3', 'train.py'])$$);
SELECT try($$SELECT easeml.add_custom_model('empty', '{}')$$);
SELECT try($$SELECT easeml.add_custom_model('nulls', ARRAY['/bin/true', NULL])$$);
SELECT try($$SELECT easeml.add_custom_model('kinds', ARRAY['/bin/true'], kinds => '{clustering}')$$);
SELECT try($$SELECT easeml.add_custom_model('devs', ARRAY['/bin/true'], device_kinds => '{tpu}')$$);
SELECT try($$SELECT easeml.add_custom_model('params', ARRAY['/bin/true'], params => '[1]')$$);
SELECT try($$SELECT easeml.add_custom_model('cost', ARRAY['/bin/true'], cost_factor => 0)$$);
-- the table itself keeps commands and families consistent
SELECT try($$INSERT INTO easeml.models (name, family) VALUES ('no-command', 'external')$$);
SELECT try($$INSERT INTO easeml.models (name, family, command) VALUES ('cmd', 'mlp', '{/bin/true}')$$);
SELECT try($$UPDATE easeml.models SET device_kinds = '{}' WHERE name = 'sk-logreg'$$);

-- a run records its device; the trainer reads a custom model's command
CREATE ROLE regress_dev_lab LOGIN;
SELECT easeml.add_tenant('regress_dev_lab');
CREATE TABLE public.dev_points AS
SELECT i, (i % 7)::float8 AS x, (i % 3)::float8 AS y, CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END AS label
  FROM generate_series(1, 40) i;
GRANT SELECT ON public.dev_points TO regress_dev_lab;
SET ROLE regress_dev_lab;
INSERT INTO easeml.tasks (name, source, target, features) VALUES ('dev_points', 'public.dev_points', 'label', '{x,y}');
RESET ROLE;
INSERT INTO easeml.runs (task_id, tenant, model_id, status, started_at, device, device_kind)
SELECT t.id, t.tenant, m.id, 'running', now(), 'cuda:0', 'cuda'
  FROM easeml.tasks t, easeml.models m WHERE t.name = 'dev_points' AND m.name = 'sk-logreg'
RETURNING device, device_kind;
SELECT easeml_trainer.command(id) FROM easeml.runs WHERE device = 'cuda:0';
SELECT easeml_trainer.command(-1) IS NULL AS no_such_run;
SELECT name, running FROM easeml.device_usage WHERE name = 'cuda:0';
SELECT try($$INSERT INTO easeml.runs (task_id, tenant, model_id, device_kind)
  SELECT t.id, t.tenant, m.id, 'tpu' FROM easeml.tasks t, easeml.models m
   WHERE t.name = 'dev_points' AND m.name = 'knn-1'$$);
-- out of memory on that device: the run fails with the trainer's reason
SELECT easeml._finish_run(id, 'failed', 5, NULL, 'trainer ran out of device memory (exit code 5): mlp: out of GPU memory (out of memory)')
  FROM easeml.runs WHERE device = 'cuda:0';
SELECT status, exit_code, device, error FROM easeml.runs WHERE device = 'cuda:0';
SET ROLE regress_dev_lab;
SELECT easeml.drop_task('dev_points') > 0 AS dropped;
RESET ROLE;
DROP TABLE public.dev_points;
DELETE FROM easeml.models WHERE NOT builtin;
DELETE FROM easeml.tenants WHERE name = 'regress_dev_lab';
DROP ROLE regress_dev_lab;
