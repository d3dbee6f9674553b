# docs/tutorial.md, run as written: every code block marked `sql ROLE` runs
# in psql as that role (`admin`: the superuser), every block marked
# `sh ROLE` in bash with psql's environment set to that role, in the order
# of the document, from the repository's root; each must succeed.  The
# `sh setup` block (scripts/setup.sh) is what CI runs before the tests
# (.ci/run); this test checks that it says so.  Then what the tutorial
# promises is checked: the task trained, the best run was deployed, the
# deployment log has every change, the model predicts, the plots exist.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use File::Temp qw(tempfile);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $doc = slurp_file("$ENV{TESTDIR}/docs/tutorial.md");
my @blocks;
while ($doc =~ /^```(\w+) (\w+)\n(.*?)^```$/msg)
{
	push @blocks, { lang => $1, role => $2, code => $3 };
}
cmp_ok(scalar(@blocks), '>=', 10, scalar(@blocks) . ' code blocks in the tutorial');
my @unknown = grep { !($_->{lang} =~ /^(sql|sh)$/ && ($_->{role} =~ /^(admin|alice)$/ || "$_->{lang} $_->{role}" eq 'sh setup')) } @blocks;
is(scalar(@unknown), 0, 'every block says how it runs (sql admin, sql alice, sh alice, sh setup)');
my ($setup) = grep { $_->{role} eq 'setup' } @blocks;
is($setup->{code}, "scripts/setup.sh\n", 'the install block is scripts/setup.sh');
like(slurp_file("$ENV{TESTDIR}/.ci/run"), qr{scripts/setup\.sh}, 'which CI runs before the tests');

my $node = easeml_node('tutorial');
chdir $ENV{TESTDIR} or die "$ENV{TESTDIR}: $!";
unlink 'penguins.csv';
my $n = 0;
foreach my $b (grep { $_->{role} ne 'setup' } @blocks)
{
	$n++;
	my $role = $b->{role} eq 'admin' ? 'postgres' : $b->{role};
	my ($out, $err);
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE} = 'postgres';
	local $ENV{PGUSER} = $role;
	my $ok;
	if ($b->{lang} eq 'sql')
	{
		my ($fh, $file) = tempfile(SUFFIX => '.sql', UNLINK => 1);
		print $fh $b->{code};
		close($fh);
		$ok = IPC::Run::run([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-f', $file ],
			'>', \$out, '2>', \$err);
	}
	else
	{
		$ok = IPC::Run::run([ 'bash', '-e', '-o', 'pipefail', '-c', $b->{code} ],
			'>', \$out, '2>', \$err);
	}
	my ($first) = $b->{code} =~ /^\s*(\S.{0,60})/;
	ok($ok, "block $n ($b->{lang} as $b->{role}) runs: $first")
	  or diag("stdout:\n$out\nstderr:\n$err");
	note("block $n output:\n$out$err");
}

# what the tutorial promised
is($node->safe_psql('postgres', q{
	SELECT status || ' ' || n_rows || ' ' || n_classes FROM easeml.tasks WHERE name = 'penguins'}),
	'completed 344 3', 'the task over the CSV trained to completion');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE status = 'succeeded') >= 8 AND count(*) <= 10 FROM easeml.runs
	 WHERE purpose = 'select'}),
	't', 'its runs stopped at max_runs, nearly all succeeded');
cmp_ok($node->safe_psql('postgres', q{
	SELECT max(score) FROM easeml.leaderboard WHERE task = 'penguins'}), '>', 0.9,
	'the best model tells the species apart');
is($node->safe_psql('postgres', q{
	SELECT string_agg(strategy || ':' || active || ':' || (rolled_back_at IS NOT NULL), ',' ORDER BY id)
	  FROM (SELECT * FROM easeml.deployments ORDER BY id DESC LIMIT 2) d}),
	'auto:true:false,run:false:true', 'the best run was deployed, the runner-up deployed and rolled back');
is($node->safe_psql('postgres', q{
	SELECT d.run_id = l.run_id FROM easeml.deployed d JOIN easeml.leaderboard l ON l.task_id = d.task_id AND l.rank = 1}),
	't', 'the best run is deployed again');
cmp_ok(query_as($node, 'alice', q{
	SELECT avg((easeml.predict('penguins', p) = p.species)::int) FROM alice.penguins p}),
	'>', 0.9, 'the deployed model predicts the species of the table\'s penguins');
is(query_as($node, 'alice', q{
	SELECT easeml.predict('penguins', n) || ' ' || ((easeml.predict_proba('penguins', n) ->> 'Gentoo')::float8 > 0.5)
	  FROM (VALUES ('Biscoe', 48.6, 15.0, 218.0, 5300.0, 'MALE'))
		   AS n(island, culmen_length_mm, culmen_depth_mm, flipper_length_mm, body_mass_g, sex)}),
	'Gentoo true', 'and calls a heavy Biscoe penguin with a long flipper a Gentoo');
ok(-s "plots/leaderboard-1.png", 'the plots were drawn');

$node->stop;
done_testing();
