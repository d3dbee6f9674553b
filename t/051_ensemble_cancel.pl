# A cancel ends an ensemble run and queues no other (docs/scheduler.md
# 7.10, docs/operations.md "Run life cycle"): scripts/bench/automl.sh stops
# each data set with easeml.enabled = off and the tenant's cancel of every
# queued or running run; an ensemble running then was stopped and recorded
# cancelled, and the end of that ensemble queued the next one, which then
# stayed 'queued' with the scheduler off.  A run whose cancel was
# requested queues no ensemble either, even when it succeeded before its
# trainer could be stopped.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $bindir = `pg_config --bindir`;
chomp $bindir;
my $real = "$bindir/easeml-trainer";

# the real trainer, except for ensemble runs, which train until stopped
# (the script asks the node, which it knows once started)
my $wrapper = trainer_script($tmp, 'hold_ensembles', qq{exec "$real" "\$@"});
my $node = easeml_node('ensemble_cancel',
	'easeml.trainer_path' => $wrapper,
	'easeml.ensemble_min_runs' => 2,
	'easeml.generate_max' => 0);
my ($host, $port) = ($node->host, $node->port);
trainer_script($tmp, 'hold_ensembles', qq{
p=\$("$bindir/psql" -X -At -h '$host' -p $port -d postgres -c "SELECT purpose FROM easeml.runs WHERE id = \$EASEML_RUN_ID")
[ "\$p" = ensemble ] && exec sleep 600
exec "$real" "\$@"});

load_dataset($node, 'breast_cancer', 'cancer');
make_tenant($node, 'lab_c', 'public.cancer');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name IN ('gnb', 'gnb-1e-5', 'knn-5', 'knn-15', 'ridge-1',
												'linear-svm-c0.1')});
query_as($node, 'lab_c', q{
	INSERT INTO easeml.tasks (name, source, target, refit_all, auto_deploy)
		VALUES ('cancer', 'public.cancer', 'label', false, false);});

# six runs in the pool (k = 2) while the first ensemble still trains, and
# the task completes (every candidate tried): the runs joined since the
# ensemble started would make one last ensemble due when it ends
# (docs/models.md 8)
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) FILTER (WHERE purpose = 'select' AND status = 'succeeded') = 6
		   AND count(*) FILTER (WHERE purpose = 'ensemble' AND status = 'running') = 1
		   AND (SELECT status FROM easeml.tasks WHERE name = 'cancer') = 'completed'
		  FROM easeml.runs}),
	'six selection runs succeed and the task completes while the first ensemble trains');
my $ens = $node->safe_psql('postgres', q{
	SELECT id FROM easeml.runs WHERE purpose = 'ensemble'});
is($node->safe_psql('postgres', q{SELECT count(*) FROM easeml._ensemble_pool(1)}), '6',
	'the pool holds 3k runs');

# what scripts/bench/automl.sh does at the end of a data set
$node->safe_psql('postgres', 'ALTER SYSTEM SET easeml.enabled = off');
reload_worker($node);
is(query_as($node, 'lab_c', q{
	SELECT string_agg(easeml.cancel(id), ',') FROM easeml.runs WHERE status IN ('queued', 'running')}),
	'cancelling', 'the tenant cancels the running ensemble');
ok( $node->poll_query_until('postgres', qq{
		SELECT status = 'cancelled' FROM easeml.runs WHERE id = $ens}),
	'the scheduler, though disabled, stops its trainer and records it cancelled');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE status IN ('queued', 'running')) || ' '
		   || count(*) FILTER (WHERE purpose = 'ensemble')
	  FROM easeml.runs}),
	'0 1', 'its end queued no other ensemble: nothing is left queued or running');
like($node->safe_psql('postgres', qq{
	SELECT string_agg(status || ':' || coalesce(detail, ''), ',' ORDER BY id)
	  FROM easeml.run_events WHERE run_id = $ens}),
	qr/^queued:,running:,cancelled:cancelled by request \(trainer was terminated by signal/,
	'every state change of the ensemble is recorded, with the reason it ended');

# a selection run whose cancel was requested but whose trainer exited 0
# before it was stopped (the scheduler records what it reported): it
# queues no ensemble, though it joined the pool after the last ensemble
# started.  The scheduler is disabled: its records are made by hand.
my $run = query_as($node, 'lab_c', q{SELECT easeml.enqueue('cancer', 'gnb')});
$node->safe_psql('postgres', qq{
	UPDATE easeml.runs SET status = 'running', started_at = clock_timestamp() WHERE id = $run});
is(query_as($node, 'lab_c', "SELECT easeml.cancel($run)"), 'cancelling',
	'the tenant cancels a running selection run');
$node->safe_psql('postgres', qq{
	INSERT INTO easeml.artifacts (run_id, tenant, bytes, format, data)
	SELECT $run, tenant, bytes, format, data FROM easeml.artifacts WHERE run_id = (
		SELECT min(p.run_id) FROM easeml.run_predictions p JOIN easeml.artifacts a USING (run_id));
	INSERT INTO easeml.run_predictions (run_id, tenant, bytes, data)
	SELECT $run, tenant, bytes, data FROM easeml.run_predictions WHERE run_id = (
		SELECT min(p.run_id) FROM easeml.run_predictions p JOIN easeml.artifacts a USING (run_id));
	SELECT easeml._finish_run($run, 'succeeded', 0, '{"score": 0.5}', NULL);});
is($node->safe_psql('postgres', qq{
	SELECT r.status || ' ' || (SELECT count(*) FROM easeml._ensemble_pool(r.task_id)) || ' '
		   || (SELECT count(*) FROM easeml.runs x WHERE x.status IN ('queued', 'running'))
	  FROM easeml.runs r WHERE r.id = $run}),
	'succeeded 7 0', 'it succeeded and joined the pool, but queued no ensemble');

# a queued ensemble that the tenant cancels queues no other either (a
# cancelled run never fires the trigger)
$node->safe_psql('postgres', q{
	INSERT INTO easeml.runs (task_id, tenant, model_id, status, requested_by, purpose, snapshot_version)
	SELECT t.id, t.tenant, m.id, 'queued', 'scheduler', 'ensemble', t.snapshot_version
	  FROM easeml.tasks t, easeml.models m WHERE t.name = 'cancer' AND m.name = 'ensemble'});
is(query_as($node, 'lab_c', q{
	SELECT string_agg(easeml.cancel(id), ',') FROM easeml.runs WHERE status = 'queued'}),
	'cancelled', 'the tenant cancels a queued ensemble');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM easeml.runs WHERE status IN ('queued', 'running')}),
	'0', 'it ends at once and queues no other');

done_testing();
