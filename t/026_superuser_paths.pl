# What runs as the superuser because of an object easeml owns (issue 22
# review, findings 1 and 3; docs/security.md, "What runs as the superuser").
#
# 1. A snapshot table belongs to the bootstrap superuser, and ANALYZE
#    (autovacuum's, or an administrator's) runs its column types' support
#    functions as the table's owner.  A tenant's range type has a
#    subtype_diff function that, when it finds itself a superuser, writes a
#    file with COPY TO PROGRAM and makes the tenant a superuser; the tenant
#    declares tasks whose target has that type (and its multirange).  With
#    autovacuum every second, and an ANALYZE by the superuser, nothing
#    happens: the snapshot holds the target as text.  The same function
#    does run, as the tenant, when autovacuum analyzes the tenant's own
#    table: the attack is live, only its identity is not the superuser's.
# 2. The tenant's session settings do not reach easeml's statements as the
#    superuser: SET default_tablespace to a tablespace the tenant may not
#    use, and the snapshot of a declaration or a refresh is still made in
#    the database's default tablespace.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# no trainer runs; autovacuum looks at every table every second
my $node = easeml_node('superuser_paths', 'easeml.enabled' => 'off',
	'autovacuum_naptime' => '1s');
my $pwned = $node->basedir . '/pwned_026';
my $pwned_sql = $pwned =~ s/'/''/gr;

$node->safe_psql('postgres', q{
	CREATE ROLE tc LOGIN;
	SELECT easeml.add_tenant('tc');
	CREATE SCHEMA tcs AUTHORIZATION tc;});

sub nothing_happened
{
	my ($what) = @_;
	ok(!-e $pwned, "$what: no file was written by a shell command");
	is($node->safe_psql('postgres',
			"SELECT rolsuper OR rolcreaterole OR rolbypassrls FROM pg_roles WHERE rolname = 'tc'"),
		'f', "$what: the tenant's role did not change");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM tcs.ran WHERE rolsuper"),
		'0', "$what: the tenant's code never ran as a superuser");
	return;
}

# the tenant's code: it logs who runs it, and when that is a superuser
# it takes over
query_as($node, 'tc', qq{
	CREATE TABLE tcs.ran (who name, rolsuper boolean);
	CREATE FUNCTION tcs.pwn() RETURNS void LANGUAGE plpgsql AS \$\$
	BEGIN
		INSERT INTO tcs.ran
		SELECT current_user, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user;
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'COPY (SELECT 1) TO PROGRAM ''id > $pwned_sql''';
			EXECUTE 'ALTER ROLE tc SUPERUSER';
		END IF;
	END\$\$;
	CREATE FUNCTION tcs.diff(a float8, b float8) RETURNS float8
	LANGUAGE plpgsql IMMUTABLE AS \$\$
	BEGIN
		PERFORM tcs.pwn();
		RETURN a - b;
	END\$\$;
	CREATE TYPE tcs.evr AS RANGE (subtype = float8, subtype_diff = tcs.diff);
	CREATE TABLE tcs.d (f0 float8, f1 float8, label tcs.evr, mlabel tcs.evr_multirange);
	INSERT INTO tcs.d
	SELECT i, i % 7, tcs.evr(i % 3, i % 3 + 1), tcs.evr_multirange(tcs.evr(i % 3, i % 3 + 1))
	  FROM generate_series(1, 300) i;
	INSERT INTO easeml.tasks (name, source, target, features) VALUES
		('range', 'tcs.d', 'label', '{f0,f1}'), ('multirange', 'tcs.d', 'mlabel', '{f0,f1}');});

my %snap = map {
	$_ => query_as($node, 'tc', qq{
		SELECT format('easeml_snapshots.%I', easeml._snapshot_name(id, snapshot_version))
		  FROM easeml.tasks WHERE name = '$_'})
} qw(range multirange);

is($node->safe_psql('postgres', qq{
	SELECT string_agg(format_type(atttypid, NULL), ',' ORDER BY attnum)
	  FROM pg_attribute WHERE attrelid = '$snap{range}'::regclass AND attnum > 0}),
	'double precision,double precision,text',
	'the snapshot holds the range target as text');
is(query_as($node, 'tc', "SELECT n_classes FROM easeml.tasks WHERE name = 'range'"),
	'3', 'the target\'s classes are those of the range values');
is(query_as($node, 'tc', "SELECT string_agg(DISTINCT label::text, ' ' ORDER BY label::text) FROM $snap{range}"),
	'[0,1) [1,2) [2,3)', 'the tenant reads its classes as the range type prints them');

# autovacuum analyzes the tenant's table (as the tenant) and the snapshots
# (as their owner)
ok($node->poll_query_until('postgres', qq{
	SELECT count(*) = 3 FROM pg_stat_all_tables
	 WHERE relid IN ('tcs.d'::regclass, '$snap{range}'::regclass, '$snap{multirange}'::regclass)
	   AND last_autoanalyze IS NOT NULL}),
	'autovacuum analyzed the source and both snapshots');
isnt($node->safe_psql('postgres', "SELECT count(*) FROM tcs.ran WHERE who = 'tc' AND NOT rolsuper"),
	'0', 'the range\'s subtype_diff ran, as the tenant, when its own table was analyzed');
nothing_happened('autovacuum');

$node->safe_psql('postgres', "ANALYZE $snap{range}; ANALYZE $snap{multirange}; ANALYZE");
nothing_happened('ANALYZE by the superuser');
$node->command_ok([ 'vacuumdb', '-z', '-d', $node->connstr('postgres') ],
	'vacuumdb -z by the superuser');
nothing_happened('vacuumdb -z');

# a refresh makes a new table, with the same types
is(query_as($node, 'tc', "SELECT easeml.refresh('range')"), '2', 'refresh');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
	 WHERE c.relnamespace = 'easeml_snapshots'::regnamespace AND a.attnum > 0
	   AND a.atttypid >= 16384}),
	'0', 'no snapshot column has a type that initdb did not make');
$node->safe_psql('postgres', 'ANALYZE');
nothing_happened('ANALYZE after refresh');

# 2. default_tablespace
my $dir = $node->basedir . '/reserved';
mkdir $dir or die "mkdir $dir: $!";
$node->safe_psql('postgres', "CREATE TABLESPACE reserved LOCATION '$dir'");
my ($rc, $out, $err) = $node->psql('postgres',
	'SET default_tablespace = reserved; CREATE TABLE tcs.mine (x int)',
	extra_params => [ '-U', 'tc' ]);
like($err, qr/permission denied for tablespace reserved/,
	'the tenant may not make tables in the reserved tablespace');
query_as($node, 'tc', q{
	CREATE TABLE tcs.plain (f0 float8, f1 float8, label text);
	INSERT INTO tcs.plain SELECT i, i % 5, (ARRAY['a', 'b'])[1 + i % 2] FROM generate_series(1, 60) i;
	SET default_tablespace = reserved;
	INSERT INTO easeml.tasks (name, source, target) VALUES ('ts', 'tcs.plain', 'label');});
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class
	 WHERE reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'reserved')}),
	'0', 'the declaration\'s snapshot is not in the reserved tablespace');
is(query_as($node, 'tc', q{
	SET default_tablespace = reserved;
	SELECT easeml.refresh('ts')}), '2', 'a refresh under the same setting');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM pg_class
	 WHERE reltablespace = (SELECT oid FROM pg_tablespace WHERE spcname = 'reserved')}),
	'0', '... makes its snapshot outside it too');
is(query_as($node, 'tc', q{
	SET default_tablespace = reserved;
	SELECT current_setting('default_tablespace')}),
	'reserved', 'the tenant\'s own setting is left as it set it');

done_testing();
