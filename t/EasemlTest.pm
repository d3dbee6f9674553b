# Helpers shared by easeml's TAP tests.
package EasemlTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(easeml_node load_dataset scheduler_pid postmaster_pid
  make_tenant query_as trainer_script process_gone trainer_pids
  blocking_view set_policy reload_worker);

# Set the policy as an administrator does (easeml.policy is its one
# source): ALTER SYSTEM and a reload, then wait until new sessions see it.
sub set_policy
{
	my ($node, $spec) = @_;
	$node->safe_psql('postgres', "ALTER SYSTEM SET easeml.policy = '$spec'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$node->poll_query_until('postgres',
		"SELECT current_setting('easeml.policy') = '$spec'")
	  or die "easeml.policy did not become $spec";
	return;
}

# Reload the configuration and wait until the scheduler has applied it: it
# takes a reload at the top of its loop, so two loops that ended after the
# reload leave no launch behind that used the old settings.
sub reload_worker
{
	my ($node) = @_;
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	for (1 .. 2)
	{
		$node->poll_query_until('postgres',
			"SELECT loop_at > '$t' FROM easeml.scheduler_status()")
		  or die 'the scheduler ran no loop after the reload';
		$t = $node->safe_psql('postgres', 'SELECT loop_at FROM easeml.scheduler_status()');
	}
	return;
}

# A started node with easeml preloaded and created in database postgres.
sub easeml_node
{
	my ($name, %conf) = @_;
	my %settings = (
		shared_preload_libraries => 'easeml',
		'easeml.database' => 'postgres',
		'easeml.naptime' => '200ms',
		'easeml.max_workers' => 2,
		'easeml.cancel_grace' => '1s',
		%conf);
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf',
		join('', map { "$_ = '$settings{$_}'\n" } sort keys %settings));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION easeml');
	return $node;
}

# Load one dataset of scripts/datasets.py as a table in database postgres.
sub load_dataset
{
	my ($node, $name, $table, @args) = @_;
	my $script = "$ENV{TESTDIR}/scripts/load_dataset.py";
	my $sql = `/usr/bin/python3 '$script' $name $table @args`;
	die "load_dataset.py $name failed" if $? != 0;
	$node->safe_psql('postgres', $sql);
	return;
}

# A login role registered as a tenant, allowed to read the given tables.
sub make_tenant
{
	my ($node, $role, @tables) = @_;
	$node->safe_psql('postgres',
		"CREATE ROLE $role LOGIN; SELECT easeml.add_tenant('$role');");
	$node->safe_psql('postgres', "GRANT SELECT ON $_ TO $role") for @tables;
	return;
}

# Run SQL connected as a role.
sub query_as
{
	my ($node, $role, $sql) = @_;
	return $node->safe_psql('postgres', $sql,
		extra_params => [ '-U', $role ]);
}

# Pid of the scheduler background worker ('' if none).
sub scheduler_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'easeml scheduler'"
	);
}

# Pid of the postmaster, from postmaster.pid.
sub postmaster_pid
{
	my ($node) = @_;
	open(my $fh, '<', $node->data_dir . '/postmaster.pid') or die $!;
	my $pid = <$fh>;
	close($fh);
	chomp $pid;
	return $pid;
}

# An executable shell script to use as easeml.trainer_path; returns its path.
sub trainer_script
{
	my ($dir, $name, $body) = @_;
	my $path = "$dir/$name";
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh "#!/bin/sh\n$body\n";
	close($fh);
	chmod 0755, $path;
	return $path;
}

# Wait up to 10 s for a process to disappear; true if it did.  A zombie
# counts as gone: an orphan's exit status waits for whoever adopted it.
sub process_gone
{
	my ($pid) = @_;
	foreach (1 .. 100)
	{
		return 1 if !kill(0, $pid);
		if (open(my $fh, '<', "/proc/$pid/stat"))
		{
			my $stat = <$fh>;
			close($fh);
			return 1 if defined $stat && $stat =~ /^\d+ \(.*\) Z /;
		}
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# Pids of easeml-trainer processes of this node (their --run-dir is under
# its data directory); other clusters' trainers on the machine are ignored.
sub trainer_pids
{
	my ($node) = @_;
	my $dir = $node->data_dir;
	my @pids;
	opendir(my $dh, '/proc') or die "/proc: $!";
	foreach my $pid (grep { /^\d+$/ } readdir($dh))
	{
		open(my $fh, '<', "/proc/$pid/cmdline") or next;
		my $cmd = do { local $/; <$fh> };
		close($fh);
		next unless defined $cmd;
		my @argv = split /\0/, $cmd;
		push @pids, $pid
		  if @argv && $argv[0] =~ /easeml-trainer$/
		  && grep { index($_, $dir) == 0 } @argv;
	}
	closedir($dh);
	return sort { $a <=> $b } @pids;
}

# A view over a table, owned by a tenant, whose rows wait an hour when read
# by the trainer (the session user is then not the tenant) while
# <schema>.ctl.sleep is true; the tenant reads it at once.  The schema is
# created for the tenant.
sub blocking_view
{
	my ($node, $tenant, $table, $view) = @_;
	$node->safe_psql('postgres', qq{
		CREATE SCHEMA IF NOT EXISTS $tenant AUTHORIZATION $tenant;
		GRANT SELECT ON $table TO $tenant;});
	query_as($node, $tenant, qq{
		CREATE TABLE IF NOT EXISTS $tenant.ctl (sleep boolean NOT NULL);
		INSERT INTO $tenant.ctl SELECT true WHERE NOT EXISTS (SELECT FROM $tenant.ctl);
		CREATE OR REPLACE FUNCTION $tenant.gate() RETURNS boolean LANGUAGE plpgsql AS \$\$
		BEGIN
			IF session_user <> current_user AND (SELECT sleep FROM $tenant.ctl) THEN
				PERFORM pg_sleep(3600);
			END IF;
			RETURN true;
		END \$\$;
		CREATE VIEW $view AS SELECT * FROM $table WHERE $tenant.gate();});
	return;
}

1;
