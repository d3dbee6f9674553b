# Temp-schema shadowing (issue 22, docs/security.md "Identity switching"):
# code that runs as another identity in a tenant's session must not let the
# tenant's temporary objects answer for the catalog.  A tenant with only
# TEMP and SELECT on one table tries what once made it the bootstrap
# superuser: a temporary view whose function runs a shell command when it
# finds itself a superuser, a temporary pg_roles that says the tenant is
# role 10, temporary pg_class/pg_namespace/pg_attribute that map its task's
# source to pg_authid or to another tenant's table, and a fake pg_roles
# that makes easeml._is_admin() say yes.  Every attempt is refused with a
# clear error or reads only what the tenant may read; no file is written,
# no role changes, no snapshot holds pg_authid or the other tenant's rows.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# no trainer runs: what matters happens in the tenant's own session
my $node = easeml_node('identity', 'easeml.enabled' => 'off');
my $pwned = $node->basedir . '/pwned_021';
my $pwned_sql = $pwned =~ s/'/''/gr;

$node->safe_psql('postgres', q{
	CREATE SCHEMA demo;
	CREATE TABLE demo.iris (f0 float8, f1 float8, label text);
	INSERT INTO demo.iris
	SELECT i % 7 + i / 10.0, (i * 37) % 11, (ARRAY['a', 'b', 'c'])[1 + i % 3]
	  FROM generate_series(1, 90) i;
	CREATE ROLE victim LOGIN;
	SELECT easeml.add_tenant('victim');
	CREATE SCHEMA victim AUTHORIZATION victim;
	CREATE ROLE tc LOGIN;
	SELECT easeml.add_tenant('tc');
	GRANT USAGE ON SCHEMA demo TO tc, victim;
	GRANT SELECT ON demo.iris TO tc, victim;
	CREATE SCHEMA tcs AUTHORIZATION tc;});
query_as($node, 'victim', q{
	CREATE TABLE victim.secret (f0 float8, f1 float8, label text);
	INSERT INTO victim.secret SELECT f0, f1, 'SECRET-' || label FROM demo.iris;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('vt', 'demo.iris', 'label');});

# psql as the tenant, errors with their SQLSTATE
sub as_tc
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', 'tc' ]);
	return ($rc, $out, $err);
}

sub nothing_happened
{
	my ($what) = @_;
	ok(!-e $pwned, "$what: no file was written by a shell command");
	is($node->safe_psql('postgres',
			"SELECT rolsuper OR rolcreaterole OR rolbypassrls FROM pg_roles WHERE rolname = 'tc'"),
		'f', "$what: the tenant's role did not change");
	return;
}

# tenant functions that act only when they find themselves a superuser
my $funcs = qq{
	CREATE FUNCTION pg_temp.f() RETURNS float8 LANGUAGE plpgsql AS \$\$BEGIN
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'COPY (SELECT 1) TO PROGRAM ''id > $pwned_sql''';
			EXECUTE 'ALTER ROLE tc SUPERUSER';
		END IF;
		RETURN 1;
	END\$\$;
	CREATE TEMP TABLE pg_roles (oid oid, rolname name, rolsuper bool);
	INSERT INTO pg_roles VALUES (10, current_user, true);
};

# 1. The reproduction of issue 22: a temporary view as the source
my ($rc, $out, $err) = as_tc($funcs . q{
	CREATE TEMP VIEW v AS SELECT f0, f1 + pg_temp.f() AS f1, label FROM demo.iris;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'pg_temp.v', 'label');});
like($err, qr/ERROR:  42809: "pg_temp_\d+\.v" is a temporary relation and cannot be the source of a task/,
	'a temporary view is refused as a source, with its SQLSTATE');
like($err, qr/HINT:  .*create the table or view in a schema of yours/, '... and a hint');
nothing_happened('temporary view');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.tasks WHERE tenant = 'tc'"),
	'0', 'no task was declared');

# a permanent view that calls the temporary function goes with the session too
($rc, $out, $err) = as_tc($funcs . q{
	CREATE VIEW tcs.pv AS SELECT f0, f1 + pg_temp.f() AS f1, label FROM demo.iris;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'tcs.pv', 'label');});
like($err, qr/ERROR:  42809: "tcs\.pv" uses the temporary function pg_temp_\d+\.f/,
	'a view that calls a temporary function is refused');
nothing_happened('view over a temporary function');

# 2. The same function in a permanent view, with temporary catalogs in
# place: the declaration and its snapshot read the source as the tenant,
# resolve catalog names in pg_catalog, and succeed without the tenant's
# code ever running as a superuser
($rc, $out, $err) = as_tc(qq{
	CREATE FUNCTION tcs.f() RETURNS float8 LANGUAGE plpgsql AS \$\$BEGIN
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'COPY (SELECT 1) TO PROGRAM ''id > $pwned_sql''';
			EXECUTE 'ALTER ROLE tc SUPERUSER';
		END IF;
		RETURN 1;
	END\$\$;
	CREATE VIEW tcs.v AS SELECT f0, f1 + tcs.f() AS f1, label FROM demo.iris;
	CREATE TEMP TABLE pg_roles (oid oid, rolname name, rolsuper bool);
	INSERT INTO pg_roles VALUES (10, current_user, true);
	CREATE TEMP TABLE pg_class (oid oid, relname name, relnamespace oid, relkind "char",
		relpersistence "char");
	CREATE TEMP TABLE pg_namespace (oid oid, nspname name);
	INSERT INTO easeml.tasks (name, source, target) VALUES ('t', 'tcs.v', 'label');
	SELECT easeml.refresh('t');});
is($rc, 0, 'a permanent view is declared and refreshed under temporary catalogs')
  or diag($err);
nothing_happened('declaration and refresh under a fake pg_roles');
is(query_as($node, 'tc', 'SELECT snapshot_version FROM easeml.tasks WHERE name = \'t\''),
	'2', 'the refresh took version 2');
my $tid = query_as($node, 'tc', "SELECT id FROM easeml.tasks WHERE name = 't'");

# 3. Temporary pg_class, pg_namespace and pg_attribute that map the task's
# source to pg_authid, or to the victim's private table, before a refresh
# (once this copied every role's password hash into a snapshot)
foreach my $target ([ 'pg_catalog', 'pg_authid', 'rolname' ], [ 'victim', 'secret', 'label' ])
{
	my ($nsp, $rel, $col) = @$target;
	# the tenant may not even name the victim's schema: the admin does
	my $relid = $node->safe_psql('postgres', "SELECT '$nsp.$rel'::regclass::oid");
	($rc, $out, $err) = as_tc(qq{
		CREATE TEMP TABLE pg_roles (oid oid, rolname name, rolsuper bool);
		INSERT INTO pg_roles VALUES (10, current_user, true);
		CREATE TEMP TABLE pg_class AS
		SELECT t.source::oid AS oid, '$rel'::name AS relname, 99999::oid AS relnamespace,
			   'r'::"char" AS relkind, 'p'::"char" AS relpersistence
		  FROM easeml.tasks t WHERE t.name = 't';
		CREATE TEMP TABLE pg_namespace AS SELECT 99999::oid AS oid, '$nsp'::name AS nspname;
		CREATE TEMP TABLE pg_attribute AS
		SELECT t.source::oid AS attrelid, a.attname, a.atttypid, a.attnum, false AS attisdropped
		  FROM easeml.tasks t, pg_catalog.pg_attribute a
		 WHERE t.name = 't' AND a.attrelid = $relid AND a.attnum > 0;
		SELECT easeml.refresh('t');});
	is($rc, 0, "a refresh under a temporary pg_class naming $nsp.$rel reads the real source")
	  or diag($err);
	nothing_happened("refresh mapped to $nsp.$rel");
	my $v = query_as($node, 'tc', "SELECT snapshot_version FROM easeml.tasks WHERE name = 't'");
	is( $node->safe_psql('postgres', qq{
			SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
			 WHERE attrelid = 'easeml_snapshots.task_${tid}_v$v'::regclass AND attnum > 0}),
		'f0,f1,label', "... the snapshot has the source's columns, not $rel\'s");
	is( $node->safe_psql('postgres', qq{
			SELECT count(*) || '/' || count(*) FILTER (WHERE label LIKE 'SECRET%')
			  FROM easeml_snapshots.task_${tid}_v$v}),
		'90/0', "... and the source's rows, none of $rel\'s");
}
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace
		   AND a.attname IN ('rolpassword', 'rolname')}),
	'0', 'no snapshot has a column of pg_authid');

# 4. pg_authid itself as a source: refused at declaration, and at refresh
# and when a run starts for a task made to point at it behind easeml's back
($rc, $out, $err) = as_tc(q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('auth', 'pg_catalog.pg_authid', 'rolname');});
like($err, qr/ERROR:  42501: "pg_catalog\.pg_authid" is a system catalog and cannot be the source of a task/,
	'pg_authid is refused as a source at declaration');
$node->safe_psql('postgres', qq{
	SET session_replication_role = replica;
	UPDATE easeml.tasks SET source = 'pg_catalog.pg_authid', target = 'rolname',
		features = '{rolpassword}', feature_types = '{categorical}' WHERE id = $tid;
	INSERT INTO easeml.runs (task_id, model_id, tenant, status, snapshot_version)
	SELECT $tid, min(id), 'tc', 'queued', NULL FROM easeml.models;});
($rc, $out, $err) = as_tc(q{SELECT easeml.refresh('t');});
like($err, qr/ERROR:  42501: "pg_catalog\.pg_authid" is a system catalog and cannot be the source of a task/,
	'a refresh of a task whose source became pg_authid is refused');
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n" .
	"SELECT easeml_trainer.spec(id) FROM easeml.runs WHERE task_id = $tid AND status = 'queued'");
like($err, qr/ERROR:  42501: "pg_catalog\.pg_authid" is a system catalog/,
	'a run of it is refused its spec: the trainer would not read it');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND a.attname = 'rolpassword'}),
	'0', 'no snapshot of pg_authid was taken');
# reading as the bootstrap superuser is refused outright
($rc, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\n" .
	"SELECT * FROM easeml._read_rows_as(10, 'SELECT rolpassword FROM pg_catalog.pg_authid') AS r(p text)");
like($err, qr/ERROR:  42501: easeml does not read a tenant's data as superuser/,
	'easeml._read_rows_as never reads as a superuser');
nothing_happened('pg_authid as a source');

# 5. easeml._is_admin() under a temporary pg_roles that says yes
my $vt = $node->safe_psql('postgres', "SELECT id FROM easeml.tasks WHERE name = 'vt'");
($rc, $out, $err) = as_tc(qq{
	CREATE TEMP TABLE pg_roles (oid oid, rolname name, rolsuper bool);
	INSERT INTO pg_roles VALUES (10, current_user, true);
	INSERT INTO easeml.runs (task_id, model_id)
	VALUES ($vt, (SELECT min(id) FROM easeml.models WHERE enabled));});
like($err, qr/ERROR:  42704: task \d+ does not exist/,
	'a run for another tenant\'s task is refused by runs_guard, fake pg_roles or not');
is($node->safe_psql('postgres', "SELECT count(*) FROM easeml.runs WHERE task_id = $vt"),
	'0', 'no run was queued for it');
($rc, $out, $err) = as_tc(q{
	CREATE TEMP TABLE pg_roles (oid oid, rolname name, rolsuper bool);
	INSERT INTO pg_roles VALUES (10, current_user, true);
	INSERT INTO easeml.tasks (name, source, target) VALUES ('t2', 'tcs.v', 'label');
	UPDATE easeml.tasks SET status = 'completed' WHERE name = 't2';});
like($err, qr/ERROR:  22023: status "completed" cannot be set by hand/,
	'setting status completed is refused, fake pg_roles or not');
is($node->safe_psql('postgres', "SELECT status FROM easeml.tasks WHERE name = 't2'"),
	'active', 'the task stays active');
nothing_happened('fake pg_roles');

$node->stop;
done_testing();
