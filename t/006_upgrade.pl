# The upgrade path: CREATE EXTENSION easeml VERSION '0.1.0' followed by
# ALTER EXTENSION easeml UPDATE must give the catalog a fresh install of the
# current version gives.  Every engineer's catalog change goes into
# sql/easeml.sql and into a file of sql/upgrade/0.1.0--0.2.0/; this test is
# what keeps the two equal, and its failure shows the difference.
#
# The catalogs are compared as pg_dump -s --binary-upgrade prints them (the
# only pg_dump mode that prints an extension's member objects), normalised
# where the difference is not a difference: object ids, transaction ids,
# the order of the extension's configuration tables and of the grants on
# one object, and the placeholders a dropped column leaves behind.  The
# built-in models are compared too.  A 0.1.0 database with tenants' data is
# then upgraded: nothing is lost, model rows the new rules refuse are
# disabled with a warning, and a policy pinned with 0.1.0's set_policy()
# (gone: easeml.policy is the one source) is reported with the command
# that keeps it.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;
my $version = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'easeml'");

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('postgres', 'CREATE DATABASE upgraded');
$node->safe_psql('fresh', 'CREATE EXTENSION easeml');
$node->safe_psql('upgraded', q{
	CREATE EXTENSION easeml VERSION '0.1.0';
	ALTER EXTENSION easeml UPDATE;});
is($node->safe_psql('upgraded', "SELECT extversion FROM pg_extension WHERE extname = 'easeml'"),
	$version, "ALTER EXTENSION easeml UPDATE reaches $version");

# The schema as pg_dump prints it, normalised.
sub schema_of
{
	my ($db) = @_;
	my ($stdout, $stderr);
	IPC::Run::run [ 'pg_dump', '-s', '--binary-upgrade', '-d', $node->connstr($db) ],
	  '>', \$stdout, '2>', \$stderr
	  or die "pg_dump $db failed: $stderr";
	my @out;
	my @grants;
	foreach my $line (split /\n/, $stdout)
	{
		next if $line =~ /^--/ || $line =~ /^\\(un)?restrict /;
		next if $line =~ /binary_upgrade_set_next_/;
		# transaction ids and object ids of the tables
		next if $line =~ /relfrozenxid|^WHERE oid = /;
		# a dropped column's placeholder (storage, not schema)
		next if $line =~ /pg\.dropped\.\d+|binary_upgrade_set_missing_value|attisdropped|^SET attlen = /;
		# blank lines: a column a fresh install creates with its table and an
		# upgrade adds with a default differ in the missing-value lines above,
		# and in the blank lines around them
		next if $line eq '';
		# the configuration tables: which ones, not their order (compared below)
		$line =~ s/(binary_upgrade_create_empty_extension\('easeml', 'easeml', \w+, '[^']*'), '[^']*', '[^']*'/$1, <config>, <conditions>/;
		# the order of grants on one object is not meaningful
		if ($line =~ /^(GRANT|REVOKE) /)
		{
			push @grants, $line;
			next;
		}
		push @out, sort @grants;
		@grants = ();
		push @out, $line;
	}
	push @out, sort @grants;
	return join("\n", @out) . "\n";
}

# The output of a query, for comparing rows.
sub rows_of
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql) . "\n";
}

# Compare two texts; on a difference, show it as a unified diff.
sub same_text
{
	my ($fresh, $upgraded, $what) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my $name = $what;
	$name =~ s/\W+/_/g;
	PostgreSQL::Test::Utils::append_to_file("$dir/fresh_$name", $fresh);
	PostgreSQL::Test::Utils::append_to_file("$dir/upgraded_$name", $upgraded);
	my ($stdout, $stderr);
	IPC::Run::run [ 'diff', '-u', "$dir/fresh_$name", "$dir/upgraded_$name" ],
	  '>', \$stdout, '2>', \$stderr;
	ok($stdout eq '', "$what: an upgraded catalog equals a fresh one")
	  or diag("--- fresh install, +++ 0.1.0 upgraded:\n$stdout");
	return;
}

same_text(schema_of('fresh'), schema_of('upgraded'), 'pg_dump -s');
my $config = q{
	SELECT c::regclass::text || ' ' || quote_literal(cond)
	  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS u(c, cond)
	 WHERE e.extname = 'easeml' ORDER BY 1};
same_text(rows_of('fresh', $config), rows_of('upgraded', $config),
	'tables and sequences marked for pg_dump');
my $builtin = q{
	SELECT name, family, params, kinds, needs_image, cost_factor, enabled
	  FROM easeml.models WHERE builtin ORDER BY name};
same_text(rows_of('fresh', $builtin), rows_of('upgraded', $builtin), 'built-in models');

# [review] a role that could attach as a trainer before the ensembles came
# gets their trainer functions from the upgrade's DO block (99zk): run that
# block on a catalog where a role holds attach only
my ($grant_block) = slurp_file("$ENV{TESTDIR}/sql/upgrade/0.1.0--0.2.0/99zk-review-fixes.sql")
  =~ /^(DO \$\$.*?^\$\$;)/ms;
ok(defined $grant_block, 'the upgrade grants the ensemble trainer functions in a DO block');
$node->safe_psql('fresh', q{
	CREATE ROLE old_trainer LOGIN;
	CREATE ROLE not_trainer LOGIN;
	GRANT EXECUTE ON FUNCTION easeml_trainer.attach(bigint, text) TO old_trainer;
	REVOKE EXECUTE ON FUNCTION easeml_trainer.predictions(bigint, bytea),
		easeml_trainer.ensemble_members(bigint) FROM old_trainer;});
$node->safe_psql('fresh', $grant_block);
is( $node->safe_psql('fresh', q{
	SELECT string_agg(r || ':' || has_function_privilege(r, f, 'EXECUTE'), ',' ORDER BY r, f)
	  FROM unnest(ARRAY['old_trainer', 'not_trainer']) r,
		   unnest(ARRAY['easeml_trainer.predictions(bigint, bytea)',
						'easeml_trainer.ensemble_members(bigint)']) f}),
	'not_trainer:false,not_trainer:false,old_trainer:true,old_trainer:true',
	'a role that holds attach gets predictions and ensemble_members, another does not');

# ---- a 0.1.0 database in use is upgraded --------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE inuse');
$node->safe_psql('inuse', q{
	CREATE EXTENSION easeml VERSION '0.1.0';
	CREATE ROLE lab_a LOGIN;
	SELECT easeml.add_tenant('lab_a');
	CREATE TABLE public.pts AS
	  SELECT i::float8 AS x, (i % 3)::text AS label FROM generate_series(1, 60) i;
	GRANT SELECT ON public.pts TO lab_a;
	INSERT INTO easeml.models (name, family, cost_factor) VALUES ('bad-cost', 'knn', 'Infinity');
	INSERT INTO easeml.models (name, family, kinds) VALUES ('bad-kinds', 'knn', '{}');
	INSERT INTO easeml.models (name, family, params) VALUES ('bad-param', 'knn', '{"kk": 3}');
	INSERT INTO easeml.models (name, family, params) VALUES ('good', 'knn', '{"k": 4}');
	SELECT easeml.set_policy('fifo');});
$node->safe_psql('inuse', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('pts', 'public.pts', 'label')},
	extra_params => [ '-U', 'lab_a' ]);
$node->safe_psql('inuse', q{
	SELECT easeml.enqueue('pts', 'knn-5'), easeml.enqueue('pts', 'good')},
	extra_params => [ '-U', 'lab_a' ]);
my $before = rows_of('inuse', q{
	SELECT t.name, t.n_rows, r.status, m.name FROM easeml.tasks t
	  JOIN easeml.runs r ON r.task_id = t.id JOIN easeml.models m ON m.id = r.model_id ORDER BY r.id});
my ($rc, $stdout, $stderr) = $node->psql('inuse', 'ALTER EXTENSION easeml UPDATE');
is($rc, 0, 'a 0.1.0 database with tenants, tasks, runs and custom models upgrades');
like($stderr, qr/model "bad-cost" is disabled/, 'a model with an infinite cost factor is disabled');
like($stderr, qr/model "bad-kinds" is disabled/, 'a model with no kinds is disabled');
like($stderr, qr/WARNING:  easeml\.set_policy\(\) had set the policy to fifo, which easeml no longer reads/,
	'a policy pinned with set_policy is reported');
like($stderr, qr/HINT:  To keep it: ALTER SYSTEM SET easeml\.policy = 'fifo'; SELECT pg_reload_conf\(\);/,
	'with the ALTER SYSTEM that keeps it');
is($node->safe_psql('inuse', "SELECT to_regclass('easeml.settings') IS NULL"), 't',
	'the settings table is gone: easeml.policy is the one source of the policy');
like($stderr, qr/model "bad-param" is disabled: unknown parameter "kk"/,
	'a model with a misspelt parameter is disabled, with the trainer\'s reason');
is( $node->safe_psql('inuse',
		"SELECT string_agg(name, ',' ORDER BY name) FROM easeml.models WHERE NOT builtin AND enabled"),
	'good', 'a good custom model stays enabled');
is( rows_of('inuse', q{
	SELECT t.name, t.n_rows, r.status, m.name FROM easeml.tasks t
	  JOIN easeml.runs r ON r.task_id = t.id JOIN easeml.models m ON m.id = r.model_id ORDER BY r.id}),
	$before, 'tasks and runs are kept');
is( $node->safe_psql('inuse', q{
	SELECT easeml.enqueue('pts', 'knn-3') > 0}, extra_params => [ '-U', 'lab_a' ]),
	't', 'the tenant queues a run after the upgrade');

# ---- the library upgraded before the catalog ---------------------------------
# A server restarted with the new library over a 0.1.0 catalog: the scheduler
# waits, says why, and touches nothing until ALTER EXTENSION easeml UPDATE.
$node->stop;
my $live = PostgreSQL::Test::Cluster->new('upgrade_live');
$live->init;
$live->start;
$live->safe_psql('postgres', q{
	CREATE EXTENSION easeml VERSION '0.1.0';
	CREATE ROLE lab_b LOGIN;
	SELECT easeml.add_tenant('lab_b');
	CREATE TABLE public.pts AS
	  SELECT i::float8 AS x, (i % 3)::text AS label FROM generate_series(1, 60) i;
	GRANT SELECT ON public.pts TO lab_b;});
$live->safe_psql('postgres', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('pts', 'public.pts', 'label')},
	extra_params => [ '-U', 'lab_b' ]);
$live->safe_psql('postgres', q{SELECT easeml.enqueue('pts', 'knn-5')},
	extra_params => [ '-U', 'lab_b' ]);
$live->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'easeml'
easeml.database = 'postgres'
easeml.naptime = '200ms'
});
my $offset = -s $live->logfile;
$live->restart;
ok( $live->wait_for_log(
		qr/the catalog is at version 0\.1\.0 but the library at \Q$version\E; scheduling waits/,
		$offset),
	'a scheduler over an older catalog says it waits for ALTER EXTENSION UPDATE');
# several naptimes pass: nothing is recorded, nothing fails
ok($live->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'easeml scheduler'"),
	'the scheduler runs over the older catalog');
$live->safe_psql('postgres', 'SELECT pg_sleep(1)');
is($live->safe_psql('postgres', "SELECT string_agg(status, ',') FROM easeml.runs"),
	'queued', 'the queued run is left alone while the catalog is older');
my $log = slurp_file($live->logfile, $offset);
unlike($log, qr/ERROR:/, 'the waiting scheduler logs no errors');
# the task stays active after the update, so the scheduler goes on to other
# candidates: follow the run that was queued, not a count of runs
my $queued = $live->safe_psql('postgres', 'SELECT min(id) FROM easeml.runs');
$live->safe_psql('postgres', 'ALTER EXTENSION easeml UPDATE');
ok( $live->poll_query_until('postgres',
		"SELECT status = 'succeeded' FROM easeml.runs WHERE id = $queued"),
	'after the update the queued run is trained')
  or diag(join("\n",
	$live->safe_psql('postgres', 'SELECT id, status, error FROM easeml.runs'),
	substr(slurp_file($live->logfile, $offset), -6000)));
$live->stop;
done_testing();
