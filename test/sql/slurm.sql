-- Launchers: Slurm partitions as devices, the trainer's login role and the
-- run's token (docs/scale-out.md).  (Self-contained but for helpers.sql's try().)

-- partitions are devices of launcher slurm; their slots are the setting
SELECT easeml.set_slurm_partition('batch', 8);
SELECT easeml.set_slurm_partition('gpu', 2, 'cuda');
SELECT easeml.set_slurm_partition('batch', 6);
SELECT name, kind, slots, launcher, enabled, present, description
  FROM easeml.device_usage WHERE launcher = 'slurm' ORDER BY name;
-- bad names, slots and kinds; a local device is not taken over
SELECT try($$SELECT easeml.set_slurm_partition('Batch', 1)$$);
SELECT try($$SELECT easeml.set_slurm_partition('a b', 1)$$);
SELECT try($$SELECT easeml.set_slurm_partition(NULL, 1)$$);
SELECT try($$SELECT easeml.set_slurm_partition('batch', 65)$$);
SELECT try($$SELECT easeml.set_slurm_partition('batch', NULL)$$);
SELECT try($$SELECT easeml.set_slurm_partition('batch', 1, 'tpu')$$);
INSERT INTO easeml.devices (name, kind) VALUES ('slurm:taken', 'cpu');
SELECT try($$SELECT easeml.set_slurm_partition('taken', 1)$$);
SELECT launcher, slots FROM easeml.devices WHERE name = 'slurm:taken';
DELETE FROM easeml.devices WHERE name = 'slurm:taken';

-- the trainer's login role: the trainer functions and nothing else
CREATE ROLE regress_slurm_trainer LOGIN;
SELECT try($$SELECT easeml.grant_trainer('regress_no_such_role')$$);
SELECT easeml.grant_trainer('regress_slurm_trainer');
SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid) AS args
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname IN ('easeml', 'easeml_trainer') AND has_function_privilege('regress_slurm_trainer', p.oid, 'EXECUTE')
   AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
 ORDER BY 1, 2, 3;
SELECT has_table_privilege('regress_slurm_trainer', 'easeml.trainer_jobs', 'SELECT') AS reads_jobs,
	   has_table_privilege('regress_slurm_trainer', 'easeml.runs', 'UPDATE') AS updates_runs;

-- without a proven token it may act for no run; a wrong token is refused
SET SESSION AUTHORIZATION regress_slurm_trainer;
SELECT try($$SELECT easeml_trainer.spec(1)$$);
SELECT try($$SELECT easeml_trainer.progress(1, 1, 0.5)$$);
SELECT try($$SELECT easeml_trainer.progress(1, 1, 0.5, 0.9)$$);
SELECT try($$SELECT easeml_trainer.artifact(1, '\x00')$$);
SELECT try($$SELECT easeml_trainer.command(1)$$);
SELECT try($$SELECT easeml_trainer.result(1, 0, '{}', NULL)$$);
SELECT try($$SELECT easeml_trainer.data_session(1)$$);
SELECT try($$SELECT easeml_trainer.attach(1, 'not the token')$$);
SELECT try($$SELECT easeml_trainer.attach(1)$$);
SELECT try($$SELECT easeml._trainer_authorize(1)$$);
SELECT try($$SELECT count(*) FROM easeml.trainer_jobs$$);
RESET SESSION AUTHORIZATION;
-- a superuser's session may act for any run (the local launcher's login)
SELECT try($$SELECT easeml._trainer_authorize(12345)$$);

-- the settings
SELECT name, setting, context FROM pg_settings
 WHERE name = 'easeml.launcher' OR name LIKE 'easeml.slurm%' ORDER BY name;
-- what goes into sbatch's arguments or the batch script is checked
ALTER SYSTEM SET easeml.slurm_job_prefix = 'a b';
ALTER SYSTEM SET easeml.slurm_trainer_path = '/opt/x;rm -rf ~';
ALTER SYSTEM SET easeml.slurm_output = '-o/etc/passwd';
ALTER SYSTEM SET easeml.launcher = 'kubernetes';

DELETE FROM easeml.devices WHERE launcher = 'slurm';
REVOKE ALL ON FUNCTION easeml_trainer.attach(bigint, text), easeml_trainer.spec(bigint),
	easeml_trainer.data_session(bigint), easeml_trainer.progress(bigint, int, float8),
	easeml_trainer.progress(bigint, int, float8, float8),
	easeml_trainer.artifact(bigint, bytea), easeml_trainer.command(bigint),
	easeml_trainer.result(bigint, int, text, text),
	easeml_trainer.predictions(bigint, bytea), easeml_trainer.ensemble_members(bigint)
	FROM regress_slurm_trainer;
DROP ROLE regress_slurm_trainer;
