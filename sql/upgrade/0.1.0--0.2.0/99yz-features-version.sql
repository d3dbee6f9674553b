-- [alter] sql/easeml.sql makes the same change
-- tasks.features_version, before the refit topic's columns as in a fresh install
-- [alter] The snapshot version from which a task has its current features
-- (set by easeml.alter_task; NULL: since its declaration).  A run of an
-- earlier version read other columns: it stays on the leaderboard (stale)
-- but is never deployed.
ALTER TABLE easeml.tasks ADD COLUMN features_version int;
COMMENT ON COLUMN easeml.tasks.features_version IS
	'the snapshot version from which the task has its current features (easeml.alter_task); NULL: since its declaration';
