# A local launch whose record waits for a lock on its run's row (a
# tenant's open transaction that updated it): the trainer runs meanwhile,
# the record is tried again once a second, and once the lock is gone it
# records the same as a first try: the trainer's pid and log, on the
# device the run was claimed for.  A trigger on easeml.trainer_jobs holds
# the launch for a few seconds, so that the lock can be taken between the
# claim and the record.
use strict;
use warnings;

use lib "$ENV{TESTDIR}/t";
use EasemlTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $bindir = `pg_config --bindir`;
chomp $bindir;
# a run's trainer sleeps; the model check and the device probe are real
my $trainer = trainer_script($tmp, 'trainer.sh', <<"SH");
if [ "\$1" = --run ]; then
	echo \$\$ > $tmp/trainer.pid
	exec sleep 120
fi
exec $bindir/easeml-trainer "\$@"
SH
my $node = easeml_node('launch_record',
	'easeml.trainer_path' => $trainer,
	'easeml.max_workers' => 1,
	'easeml.enabled' => 'off');
load_dataset($node, 'iris', 'iris');
make_tenant($node, 'lab_a', 'public.iris');
$node->safe_psql('postgres', q{
	UPDATE easeml.models SET enabled = name = 'gnb';
	CREATE TABLE public.slow_launch (slow boolean NOT NULL);
	INSERT INTO public.slow_launch VALUES (true);
	CREATE FUNCTION public.slow_launch() RETURNS trigger
	LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT slow FROM public.slow_launch) THEN
			PERFORM pg_sleep(4);
		END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER slow_launch BEFORE INSERT ON easeml.trainer_jobs
		FOR EACH ROW EXECUTE FUNCTION public.slow_launch();
	ALTER SYSTEM SET easeml.enabled = on;
	SELECT pg_reload_conf();});
query_as($node, 'lab_a', q{
	INSERT INTO easeml.tasks (name, source, target) VALUES ('iris', 'public.iris', 'label')});

# Poll for at most $seconds; true once the query says so.
sub wait_for
{
	my ($sql, $seconds) = @_;
	for (my $t0 = time; time - $t0 < $seconds; usleep(100_000))
	{
		return 1 if $node->safe_psql('postgres', $sql) eq 't';
	}
	return 0;
}

# the run is claimed; its launch waits in the trigger
ok(wait_for(q{SELECT count(*) = 1 FROM easeml.runs WHERE status = 'running' AND pid IS NULL}, 60),
	'a run is claimed and being launched');
my $run = $node->safe_psql('postgres', q{SELECT id FROM easeml.runs WHERE status = 'running'});
my $holder = $node->background_psql('postgres');
$holder->query_safe(qq{BEGIN; SELECT id FROM easeml.runs WHERE id = $run FOR NO KEY UPDATE;});
$node->safe_psql('postgres', 'UPDATE public.slow_launch SET slow = false');

for (my $t0 = time; time - $t0 < 20 && !-s "$tmp/trainer.pid"; usleep(100_000)) { }
ok(-s "$tmp/trainer.pid", 'locked: the trainer is started');
my $log_re = qr/LOG:  easeml: run $run: its launch could not be recorded yet; it will be retried/;
my $logged = 0;
for (my $t0 = time; time - $t0 < 20 && !$logged; usleep(200_000))
{
	$logged = slurp_file($node->logfile) =~ $log_re;
}
ok($logged, 'locked: its record waits for the lock, and will be retried');
sleep 3;
is($node->safe_psql('postgres', qq{SELECT pid IS NULL FROM easeml.runs WHERE id = $run}),
	't', 'locked: nothing is recorded while the lock is held');
is($node->safe_psql('postgres', qq{SELECT status FROM easeml.runs WHERE id = $run}),
	'running', 'locked: the run goes on');

$holder->query_safe('ROLLBACK');
$holder->quit;
my $pid = slurp_file("$tmp/trainer.pid");
chomp $pid;
ok(wait_for(qq{SELECT pid = $pid FROM easeml.runs WHERE id = $run}, 20),
	'unlocked: the retry records the trainer\'s pid');
my $device = $node->safe_psql('postgres', qq{SELECT device FROM easeml.runs WHERE id = $run});
like($device, qr/^\S+$/, 'unlocked: the run\'s device is recorded');
is($node->safe_psql('postgres', qq{
	SELECT log_path LIKE '%/trainer.log' AND device_kind IS NOT NULL
	  FROM easeml.runs WHERE id = $run}),
	't', 'unlocked: with its log and the device\'s kind');
ok(slurp_file($node->logfile) =~
	  /LOG:  easeml: run $run started in slot \d+ on \Q$device\E \(pid $pid\)/,
	'unlocked: the log names the same device as the run\'s row');

$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET easeml.enabled = off;
	SELECT pg_reload_conf();
	SELECT easeml.cancel($run);});
ok(wait_for(qq{SELECT status <> 'running' FROM easeml.runs WHERE id = $run}, 30),
	'the run ends when cancelled');
$node->stop;
done_testing();
