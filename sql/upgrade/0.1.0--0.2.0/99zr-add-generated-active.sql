-- [spaces] easeml._add_generated makes no candidate for a task that is no
-- longer active (it ended between the proposal and the insert).
CREATE OR REPLACE FUNCTION easeml._add_generated(task bigint, gen_family text, gen_params jsonb,
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
		OR (SELECT count(*) FROM easeml.models m WHERE m.generated_for = task) >= 64
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
