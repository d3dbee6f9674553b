# shellcheck shell=bash
# The demo of scripts/setup.sh in a benchmark's throw-away cluster
# (scripts/lib/cluster.sh, sourced first); sourced, from the repository's root.
#
#   demo_load NAME TABLE [--rows N ...]   a data set into table demo.TABLE
#   demo_tasks                            the demo's data, the seed history and tasks
#
# demo_tasks loads Fashion-MNIST (a subset of EASEML_FASHION_ROWS rows,
# default 6000), breast cancer, digits and diabetes, the seed history, and
# has the tenants lab_vision, lab_medical, lab_digits and lab_clinic declare
# one task each (fashion, cancer, digits, progression regression).  The
# extension must exist; the scheduler should be off meanwhile.

_demo_psql() {
	PGOPTIONS="-c client_min_messages=warning" cluster_psql "$@"
}

demo_load() {
	/usr/bin/python3 scripts/load_dataset.py "$@" --schema demo | _demo_psql -o /dev/null
}

demo_tasks() {
	demo_load fashion_mnist fashion_mnist --rows "${EASEML_FASHION_ROWS:-6000}" --seed 1
	demo_load breast_cancer breast_cancer
	demo_load digits digits
	demo_load diabetes_regression diabetes
	_demo_psql -At -c "SELECT easeml.load_history('$("$PG_CONFIG" --sharedir)/extension/easeml_seed_history.csv', 'seed') || ' history cells'"
	_demo_psql -o /dev/null <<'SQL'
CREATE ROLE lab_vision LOGIN; CREATE ROLE lab_medical LOGIN; CREATE ROLE lab_digits LOGIN;
CREATE ROLE lab_clinic LOGIN;
SELECT easeml.add_tenant(r) FROM unnest(ARRAY['lab_vision', 'lab_medical', 'lab_digits', 'lab_clinic']) r;
GRANT USAGE ON SCHEMA demo TO lab_vision, lab_medical, lab_digits, lab_clinic;
GRANT SELECT ON demo.fashion_mnist TO lab_vision;
GRANT SELECT ON demo.breast_cancer TO lab_medical;
GRANT SELECT ON demo.digits TO lab_digits;
GRANT SELECT ON demo.diabetes TO lab_clinic;
SET ROLE lab_vision;
INSERT INTO easeml.tasks (name, source, target, input_shape)
VALUES ('fashion', 'demo.fashion_mnist', 'label', '{1,28,28}');
SET ROLE lab_digits;
INSERT INTO easeml.tasks (name, source, target, input_shape)
VALUES ('digits', 'demo.digits', 'label', '{1,8,8}');
SET ROLE lab_medical;
INSERT INTO easeml.tasks (name, source, target) VALUES ('cancer', 'demo.breast_cancer', 'label');
SET ROLE lab_clinic;
INSERT INTO easeml.tasks (name, source, target, kind)
VALUES ('progression', 'demo.diabetes', 'target', 'regression');
RESET ROLE;
SQL
}
