# scripts/plot.sh (docs/results.md, §5) against a live cluster, a replay
# curve and a live curve (scripts/bench/multitenant.sh): every plot it
# promises is written as a valid PNG; a tenant plots only its own tasks; a
# tenant's role name reaches gnuplot as data, never as a command.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('plots');
load_dataset($node, 'iris', 'iris');
load_dataset($node, 'wine', 'wine');
make_tenant($node, 'lab_a', 'public.iris');
make_tenant($node, 'lab_b', 'public.wine');
# a role whose name would run a command if it were spliced into gnuplot
my $tmp = tempdir(CLEANUP => 1);
my $pwned = "$tmp/pwned";
my $evil = qq{p"); system("touch $pwned"); print("};
(my $evil_sql = $evil) =~ s/"/""/g;
$node->safe_psql('postgres', qq{
	CREATE ROLE "$evil_sql" LOGIN;
	SELECT easeml.add_tenant('$evil');
	GRANT SELECT ON public.iris TO "$evil_sql";
	UPDATE easeml.models SET enabled = name IN ('gnb', 'mlp-64', 'knn-5', 'rf-50');});

query_as($node, 'lab_a', "INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')");
query_as($node, 'lab_b', "INSERT INTO easeml.tasks (name, source, target) VALUES ('wine', 'public.wine', 'label')");
$node->safe_psql('postgres', qq{
	SET ROLE "$evil_sql";
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label');});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 3 FROM easeml.tasks WHERE status = 'completed'"),
	'the three tasks try every candidate');

# a replay curve, as easeml-replay writes it
my $oboe = "$ENV{TESTDIR}/scripts/bench/data/oboe";
my $curve = "$tmp/curve.csv";
system('easeml-replay', '--quality', "$oboe/error_matrix.csv", '--error',
	'--cost', "$oboe/runtime_matrix.csv", '--sizes', "$oboe/dataset_sizes.csv",
	'--draws', '2', '--tenants', '5', '--policies', 'popular,rr', '--curve', $curve) == 0
  or die "easeml-replay failed";
# a live curve, as scripts/bench/multitenant.sh writes it (a policy name
# with a quote reaches gnuplot as data)
my $live = "$tmp/live.csv";
open(my $lfh, '>', $live) or die;
print $lfh "policy,seconds,mean_loss\n", "default,0.000,0.800000\n", "default,3.250,0.020000\n",
  "default,60.000,0.000000\n", "popular,0.000,0.800000\n", "popular,5.500,0.100000\n",
  "popular,60.000,0.010000\n", qq{p"x,0.000,0.5\n}, qq{p"x,60.000,0.5\n};
close($lfh);

# plot.sh as a role; returns the files it says it wrote ($plot_err: what
# it printed on stderr)
my $plot_err;
sub plot
{
	my ($role, $dir, @args) = @_;
	my ($out, $err);
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE} = 'postgres';
	local $ENV{PGUSER} = $role;
	my $ok = IPC::Run::run([ 'bash', "$ENV{TESTDIR}/scripts/plot.sh", '--out', $dir, @args ],
		'>', \$out, '2>', \$err);
	note $err if $err;
	$plot_err = $err // '';
	ok($ok, "plot.sh as $role exits 0");
	return map { s/^\Q$dir\E\///r } split /\n/, $out;
}

# a valid PNG: the signature, then an IHDR chunk with a size
sub is_png
{
	my ($path) = @_;
	open(my $fh, '<:raw', $path) or return 0;
	local $/;
	my $data = <$fh>;
	close($fh);
	return 0 unless defined $data && length($data) > 100;
	return 0 unless substr($data, 0, 8) eq "\x89PNG\r\n\x1a\n" && substr($data, 12, 4) eq 'IHDR';
	my ($w, $h) = unpack('NN', substr($data, 16, 8));
	return $w > 0 && $h > 0 && substr($data, -8, 4) eq 'IEND';
}

my %task = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	"SELECT tenant || '/' || name, id FROM easeml.tasks");
my $mlp_run = $node->safe_psql('postgres', qq{
	SELECT r.id FROM easeml.runs r JOIN easeml.models m ON m.id = r.model_id
	 WHERE m.name = 'mlp-64' AND r.purpose = 'select' AND r.task_id = $task{'lab_a/iris'}});

my $admin_dir = "$tmp/admin";
my @files = plot('postgres', $admin_dir, '--replay-curve', $curve, '--live-curve', $live, '--run', $mlp_run);
my @expected = ('global_loss.png', (map { "leaderboard-$_.png" } sort { $a <=> $b } values %task),
	'best_so_far-1.png', 'best_so_far-2.png', 'best_so_far-3.png', "curve-$mlp_run.png", 'replay_loss.png',
	'live_loss.png');
is_deeply([ sort @files ], [ sort @expected ], 'an administrator gets every plot');
is(scalar(grep { !is_png("$admin_dir/$_") } @files), 0, 'each is a valid PNG');
ok(!-e $pwned, 'a tenant\'s role name in a title ran nothing');

# without --run: the learning curve of each task's deployed run, where it has one
my @deployed = split /\n/, $node->safe_psql('postgres',
	'SELECT d.run_id FROM easeml.deployed d WHERE EXISTS (SELECT 1 FROM easeml.run_progress p WHERE p.run_id = d.run_id) ORDER BY 1');
@files = plot('lab_a', "$tmp/lab_a");
is_deeply([ sort @files ],
	[ sort 'global_loss.png', "leaderboard-$task{'lab_a/iris'}.png", 'best_so_far-1.png',
		map { "curve-$_.png" } grep { query_as($node, 'lab_a', "SELECT count(*) FROM easeml.runs WHERE id = $_") } @deployed ],
	'a tenant plots its own task only, with its deployed run\'s learning curve');
is(scalar(grep { !is_png("$tmp/lab_a/$_") } @files), 0, 'and those are valid PNGs');

# a one-epoch learning curve is a point with ranges around it, drawn
# without gnuplot's warnings about an empty range
my $single = $node->safe_psql('postgres', qq{
	SELECT p.run_id FROM easeml.run_progress p JOIN easeml.runs r ON r.id = p.run_id
	 WHERE r.task_id = $task{'lab_a/iris'} GROUP BY p.run_id HAVING count(*) = 1 ORDER BY 1 LIMIT 1});
ok($single ne '', 'a run has a one-epoch learning curve');
@files = plot('lab_a', "$tmp/single", '--run', $single);
ok((grep { $_ eq "curve-$single.png" } @files) && is_png("$tmp/single/curve-$single.png"),
	'the one-epoch curve is drawn');
unlike($plot_err, qr/warning|empty/i, 'without gnuplot warnings');

# after a refresh the best so far starts again: the old snapshot's best
# is not carried over (its series is broken by a blank line)
query_as($node, 'lab_a', "SELECT easeml.refresh('iris')");
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) > 0 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
		 WHERE t.name = 'iris' AND t.tenant = 'lab_a' AND r.status = 'succeeded'
		   AND r.snapshot_version = t.snapshot_version}),
	'a run succeeds on the new snapshot');
@files = plot('lab_a', "$tmp/refreshed", '--keep-data');
ok((grep { $_ eq 'best_so_far-1.png' } @files) && is_png("$tmp/refreshed/best_so_far-1.png"),
	'best so far is drawn after a refresh');
my $bsf = slurp_file("$tmp/refreshed/data/bsf-1-0.tsv");
my ($new_part) = $bsf =~ /\n\n(.*)\z/s;
ok(defined $new_part, 'the best-so-far series breaks at the refresh');
my @new_rows = split /\n/, ($new_part // '');
my $new_first = (split /\t/, ($new_rows[0] // ''))[1];
is($new_first, query_as($node, 'lab_a', qq{
	SELECT r.score FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'iris' AND r.status = 'succeeded' AND r.snapshot_version = t.snapshot_version
	 ORDER BY r.finished_at, r.id LIMIT 1}),
	'and starts again from the new snapshot\'s first result');

# bad arguments are refused before anything is drawn
my ($ret, $out, $err);
IPC::Run::run([ 'bash', "$ENV{TESTDIR}/scripts/plot.sh", '--run', '1; rm -rf /' ], '>', \$out, '2>', \$err);
like($err, qr/--run needs a run id/, 'a run id that is not a number is refused');
IPC::Run::run([ 'bash', "$ENV{TESTDIR}/scripts/plot.sh", '--no-db', '--replay-curve', "$tmp/none.csv" ],
	'>', \$out, '2>', \$err);
like($err, qr/cannot read replay curve/, 'a missing replay curve is refused');
IPC::Run::run([ 'bash', "$ENV{TESTDIR}/scripts/plot.sh", '--no-db', '--live-curve', "$tmp/none.csv" ],
	'>', \$out, '2>', \$err);
like($err, qr/cannot read live curve/, 'a missing live curve is refused');
my $empty = "$tmp/empty.csv";
open(my $efh, '>', $empty) or die;
print $efh "policy,seconds,mean_loss\n";
close($efh);
$ret = IPC::Run::run([ 'bash', "$ENV{TESTDIR}/scripts/plot.sh", '--no-db', '--out', "$tmp/empty", '--live-curve', $empty ],
	'>', \$out, '2>', \$err);
ok(!$ret && $err =~ /has no curve rows/, 'a live curve without rows is an error, not an empty plot');

$node->stop;
done_testing();
