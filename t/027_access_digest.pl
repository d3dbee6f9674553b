# What the digest of a source's access rules sees (issue 22 review,
# findings 2 and 5; docs/data.md, section 6): a snapshot is read only
# while the rules that decide which rows of its source the tenant reads
# are those it was copied under.
#
# (a) A policy TO a role the tenant held, SELECT granted to the tenant
#     directly: the tenant loses the role and reads no row of the source;
#     its snapshot, enqueue and the trainer are refused, until the
#     membership is back.
# (b) A view owned by a superuser over a table with a policy: the view
#     becomes security_invoker and the tenant reads a third of the rows;
#     the snapshot is refused.
# (c) A task declared in a session whose TimeZone and DateStyle differ from
#     the server's, over a policy with a timestamptz constant: nothing
#     changed, so the trainer (in a session of its own, with the server's
#     settings) trains on the snapshot.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = easeml_node('access_digest');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'tc');
$node->safe_psql('postgres', q{
	CREATE ROLE analysts;
	GRANT analysts TO tc;
	CREATE TABLE public.sec AS SELECT * FROM public.iris;
	ALTER TABLE public.sec ENABLE ROW LEVEL SECURITY;
	CREATE POLICY analysts_rows ON public.sec FOR SELECT TO analysts USING (true);
	CREATE TABLE public.base AS SELECT * FROM public.iris;
	ALTER TABLE public.base ENABLE ROW LEVEL SECURITY;
	CREATE POLICY short_petals ON public.base FOR SELECT USING (petal_length < 2.5);
	CREATE VIEW public.v AS SELECT * FROM public.base;
	CREATE TABLE public.tz AS
	  SELECT i.*, timestamptz '2020-01-01 00:00+00' + n * interval '1 hour' AS ts
	    FROM (SELECT *, row_number() OVER () AS n FROM public.iris) i;
	ALTER TABLE public.tz ENABLE ROW LEVEL SECURITY;
	CREATE POLICY since ON public.tz FOR SELECT USING (ts >= '2020-01-01 00:00+00');
	GRANT SELECT ON public.sec, public.base, public.v, public.tz TO tc;});

# declared paused: nothing trains until a test says so
sub declare
{
	my ($name, $source, $settings) = @_;
	query_as($node, 'tc', qq{
		$settings
		BEGIN;
		INSERT INTO easeml.tasks (name, source, target, features)
		VALUES ('$name', '$source', 'label',
				'{sepal_length,sepal_width,petal_length,petal_width}');
		UPDATE easeml.tasks SET status = 'paused' WHERE name = '$name';
		COMMIT;});
	return query_as($node, 'tc', qq{
		SELECT format('easeml_snapshots.%I', easeml._snapshot_name(id, snapshot_version))
		  FROM easeml.tasks WHERE name = '$name'});
}

sub as_tc
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'tc' ]);
	return ($out, $err);
}

my $refused = qr/the rules that decide which rows of public\.(\w+) tenant "tc" reads \(row-level security, policies and whom they apply to, owners, views\) changed since the snapshot/;

# (a) a lost role membership
my $snap_a = declare('a', 'public.sec', '');
is(query_as($node, 'tc', "SELECT count(*) FROM $snap_a"), '150',
	'(a) the snapshot holds the rows the policy TO analysts showed');
$node->safe_psql('postgres', 'REVOKE analysts FROM tc');
is(query_as($node, 'tc', 'SELECT count(*) FROM public.sec'), '0',
	'(a) without the role, the tenant reads no row of the source');
my ($out, $err) = as_tc("SELECT count(*) FROM $snap_a");
like($err, $refused, '(a) the snapshot is refused');
($out, $err) = as_tc("SELECT easeml.enqueue('a', 'knn-1')");
like($err, $refused, '(a) ... and so is enqueue');
query_as($node, 'tc', "UPDATE easeml.tasks SET status = 'active' WHERE name = 'a'");
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' FROM easeml.tasks WHERE name = 'a'"),
	'(a) the scheduler\'s runs of the task fail');
like($node->safe_psql('postgres', q{
	SELECT min(r.error) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'a'}), $refused, '(a) refused in the trainer, which reads as the tenant');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'a' AND r.status = 'succeeded'}), '0', '(a) no run trained on the copy');
$node->safe_psql('postgres', 'GRANT analysts TO tc');
is(query_as($node, 'tc', "SELECT count(*) FROM $snap_a"), '150',
	'(a) with the membership back, the snapshot is readable again');

# (b) a view made security_invoker
my $snap_b = declare('b', 'public.v', '');
is(query_as($node, 'tc', "SELECT count(*) FROM $snap_b"), '150',
	'(b) through a superuser\'s view the policy did not apply: 150 rows copied');
$node->safe_psql('postgres', 'ALTER VIEW public.v SET (security_invoker = true)');
is(query_as($node, 'tc', 'SELECT count(*) FROM public.v'), '50',
	'(b) as security_invoker, the view shows the tenant 50 rows');
($out, $err) = as_tc("SELECT count(*) FROM $snap_b");
like($err, $refused, '(b) the snapshot is refused');
($out, $err) = as_tc("SELECT easeml.enqueue('b', 'knn-1')");
like($err, $refused, '(b) ... and so is enqueue');
$node->safe_psql('postgres', 'ALTER VIEW public.v RESET (security_invoker)');
is(query_as($node, 'tc', "SELECT count(*) FROM $snap_b"), '150',
	'(b) the view as it was: readable again');
$node->safe_psql('postgres', 'ALTER VIEW public.v OWNER TO tc');
($out, $err) = as_tc("SELECT count(*) FROM $snap_b");
like($err, $refused, '(b) a new owner of the view refuses it too');

# (c) declared under other session settings: the trainer trains on it
my $snap_c = declare('c', 'public.tz',
	"SET TimeZone = 'America/New_York'; SET DateStyle = 'Postgres, DMY'; SET extra_float_digits = -10;");
is(query_as($node, 'tc', "SELECT count(*) FROM $snap_c"), '150',
	'(c) the snapshot is readable in a session with the server\'s settings');
query_as($node, 'tc', q{
	SELECT easeml.enqueue('c', 'knn-1');
	UPDATE easeml.tasks SET status = 'active', max_runs = 1 WHERE name = 'c';});
ok($node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM easeml.runs r JOIN easeml.tasks t ON t.id = r.task_id
	 WHERE t.name = 'c' AND r.status IN ('succeeded', 'failed') AND r.purpose = 'select'}),
	'(c) the run ended');
is($node->safe_psql('postgres', q{
	SELECT r.status || coalesce(': ' || r.error, '') FROM easeml.runs r
	  JOIN easeml.tasks t ON t.id = r.task_id WHERE t.name = 'c' AND r.purpose = 'select'}),
	'succeeded', '(c) the trainer trained on the snapshot');

$node->stop;
done_testing();
