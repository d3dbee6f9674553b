# A single-node Slurm cluster for easeml's TAP tests, from Debian's
# packages: munged, slurmctld and slurmd on localhost, run as the test's
# own user, with a configuration written in a directory of its own:
# partitions debug (the default) and gpu, and one pretend GPU (a gres on
# /dev/null: Slurm grants it and sets CUDA_VISIBLE_DEVICES; nothing uses
# it).
# Everything is private to one test run (munge socket, ports, state and
# spool directories), so concurrent copies do not meet; stop_slurm (call
# it from an END block) leaves no daemon and no job behind.
package SlurmTest;

use strict;
use warnings;

use Exporter 'import';
use File::Path ();
use File::Temp ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(slurm_missing start_slurm stop_slurm slurm_cmd slurm_job
  start_slurmd kill_node wait_node_state stop_slurmctld start_slurmctld
  fake_slurm fake_mode fake_calls);

my @DAEMONS = qw(/usr/sbin/munged /usr/sbin/mungekey /usr/sbin/slurmctld
  /usr/sbin/slurmd /usr/bin/sbatch /usr/bin/squeue /usr/bin/scontrol
  /usr/bin/scancel /usr/bin/sinfo);

# Why Slurm cannot be started here ('' when it can).
sub slurm_missing
{
	my @missing = grep { !-x $_ } @DAEMONS;
	return @missing
	  ? 'Slurm or munge is not installed (missing '
	  . join(', ', @missing)
	  . '; scripts/setup.sh installs slurmctld, slurmd, slurm-client and munge)'
	  : '';
}

sub write_file
{
	my ($path, $text) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $text;
	close($fh);
	return;
}

# Start munged, slurmctld and slurmd; returns the cluster's description.
sub start_slurm
{
	# short path: the munge socket's name must fit a sockaddr_un
	my $dir = File::Temp::tempdir('easeml-slurm-XXXXXX', TMPDIR => 1, CLEANUP => 1);
	# munged wants its socket's directory searchable by all (not readable)
	chmod 0711, $dir;
	my $user = getpwuid($<);
	my %s = (dir => $dir, conf => "$dir/slurm.conf", user => $user);
	mkdir "$dir/$_" for qw(state spool);

	system('/usr/sbin/mungekey', '--create', "--keyfile=$dir/munge.key") == 0
	  or die 'mungekey failed';
	chmod 0600, "$dir/munge.key";
	system('/usr/sbin/munged', "--socket=$dir/munge.sock",
		"--pid-file=$dir/munged.pid", "--log-file=$dir/munged.log",
		"--seed-file=$dir/munge.seed", "--key-file=$dir/munge.key") == 0
	  or die 'munged did not start: ' . slurp_or_empty("$dir/munged.log");

	my $ctld_port = PostgreSQL::Test::Cluster::get_free_port();
	my $slurmd_port = PostgreSQL::Test::Cluster::get_free_port();
	write_file($s{conf}, <<"EOF");
ClusterName=easemltest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdTimeout=10
InactiveLimit=0
MinJobAge=3600
KillWait=5
GresTypes=gpu
NodeName=localhost CPUs=2 RealMemory=1000 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=localhost MaxTime=INFINITE State=UP
EOF
	# one GPU for Slurm to hand out: it sets CUDA_VISIBLE_DEVICES for it
	write_file("$dir/gres.conf", "Name=gpu File=/dev/null\n");
	$ENV{SLURM_CONF} = $s{conf};
	start_slurmctld(\%s);
	start_slurmd(\%s);
	return \%s;
}

# Start slurmctld (again: it keeps its jobs in its state directory).
sub start_slurmctld
{
	my ($s) = @_;
	system('/usr/sbin/slurmctld', '-f', $s->{conf}, '-i') == 0
	  or die 'slurmctld did not start: ' . slurp_or_empty("$s->{dir}/slurmctld.log");
	return;
}

# The controller goes away (the jobs and slurmd stay).
sub stop_slurmctld
{
	my ($s) = @_;
	stop_pid(pid_from("$s->{dir}/slurmctld.pid"));
	return;
}

# Start slurmd and wait until the node takes jobs.
sub start_slurmd
{
	my ($s) = @_;
	system('/usr/sbin/slurmd', '-f', $s->{conf}) == 0
	  or die 'slurmd did not start: ' . slurp_or_empty("$s->{dir}/slurmd.log");
	wait_node_state($s, qr/^(idle|mixed|allocated)/, 60)
	  or die 'the node did not come up: '
	  . slurm_cmd($s, 'sinfo', '--noheader', '--format=%T %E');
	return;
}

# Wait until sinfo's node state matches; true if it did.
sub wait_node_state
{
	my ($s, $re, $seconds) = @_;
	foreach (1 .. $seconds * 2)
	{
		my $state = slurm_cmd($s, 'sinfo', '--noheader', '--format=%T');
		return 1 if $state =~ $re;
		select(undef, undef, undef, 0.5);
	}
	return 0;
}

# Output of a Slurm command against this cluster (stderr included).
sub slurm_cmd
{
	my ($s, $cmd, @args) = @_;
	local $ENV{SLURM_CONF} = $s->{conf};
	my $out = '';
	my $pid = open(my $fh, '-|');
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDERR, '>&', \*STDOUT);
		exec("/usr/bin/$cmd", @args) or exit 127;
	}
	{
		local $/;
		$out = <$fh> // '';
	}
	close($fh);
	chomp $out;
	return $out;
}

# A job as scontrol -o shows it: a hash of its fields ({} if unknown).
sub slurm_job
{
	my ($s, $job_id) = @_;
	my $line = slurm_cmd($s, 'scontrol', '--oneliner', 'show', 'job', $job_id);
	my %f;
	$f{$1} = $2 while $line =~ /(?:^|\s)(\w+)=(\S*)/g;
	return \%f;
}

# Fake Slurm commands (no Slurm needed) in a directory to point
# easeml.slurm_bindir at, for faults a real cluster does not make on
# demand.  Each appends "<command> <unix time>" to calls.log and behaves
# as the file <command>.mode says (fake_mode):
#   sbatch    ok (default): prints job id 1000 + the run id of its
#             --job-name; hang-once: this call sleeps 20 s first (logging
#             hang-start and hang-end) and the mode goes back to ok;
#             huge: prints 99999999999999999999999; down: cannot reach
#             the controller; refuse: refuses the job (an invalid time
#             limit); slow: answers as ok after 6 s; escape-once: this
#             call leaves its process group for its parent's (so that
#             SIGKILL to its group misses it, as if it slept in the kernel:
#             a hung NFS mount) and ends after 60 s (logging escape-start
#             and escape-end), and the mode goes back to ok; lost-once:
#             this call queues the job (squeue and scancel know its name)
#             but says that the controller's answer timed out, and the
#             mode goes back to ok
#   squeue    ok (default): exits 0 listing no job; done: lists every
#             job it is asked about as COMPLETED; pending, running: lists
#             them as PENDING or RUNNING; down: cannot reach the
#             controller; reused: lists them RUNNING under another job's
#             name (Slurm gave their ids to other jobs).  A job scancel
#             cancelled is listed CANCELLED.  Jobs keep sbatch's names.
#   scontrol  ok (default): the job COMPLETED with exit code 0 (CANCELLED
#             once scancel cancelled it); down: cannot reach the
#             controller; reused: another job, RUNNING
#   scancel   ok (default): the jobs named (by id or --name) are
#             cancelled, exit 0; down: cannot reach the controller
#   sacct     fails (no accounting database)
sub fake_slurm
{
	my ($dir) = @_;
	mkdir $dir;
	my $down = 'echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"; exit 1';
	my %body = (
		sbatch => <<"SH",
cat >/dev/null
run=\$(echo "\$*" | sed -n 's/.*--job-name=[^ ]*-run\\([0-9]*\\).*/\\1/p')
echo "\$*" | sed -n 's/.*--job-name=\\([^ ]*\\).*/\\1/p' > $dir/name.\$((1000 + run))
case "\$mode" in
hang-once)
	echo ok > $dir/sbatch.mode
	echo "hang-start \$(date +%s.%N)" >> $dir/calls.log
	sleep 20
	echo "hang-end \$(date +%s.%N)" >> $dir/calls.log
	echo \$((1000 + run)) ;;
escape-once)
	echo ok > $dir/sbatch.mode
	echo "escape-start \$(date +%s.%N)" >> $dir/calls.log
	exec perl -e 'setpgrp(0, getpgrp(getppid())) or die "setpgrp: \$!"; exec \@ARGV' sh -c 'sleep 60; echo "escape-end \$(date +%s.%N)" >> $dir/calls.log' ;;
lost-once)
	echo ok > $dir/sbatch.mode
	echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
	exit 1 ;;
huge) echo 99999999999999999999999 ;;
down) $down ;;
refuse)
	echo "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)"
	exit 1 ;;
slow)
	sleep 6
	echo \$((1000 + run)) ;;
*) echo \$((1000 + run)) ;;
esac
SH
		squeue => <<"SH",
case "\$mode" in
down) $down ;;
done|pending|running)
	state=\$(echo "\$mode" | tr a-z A-Z)
	[ "\$mode" = done ] && state=COMPLETED
	for id in \$(echo "\$3" | sed 's/^--jobs=//' | tr , ' '); do
		s=\$state
		[ -e $dir/cancelled.\$id ] && s=CANCELLED
		echo "\$id|\$(cat $dir/name.\$id 2>/dev/null)|\$s|None"
	done ;;
reused)
	for id in \$(echo "\$3" | sed 's/^--jobs=//' | tr , ' '); do
		echo "\$id|someone-else|RUNNING|None"
	done ;;
esac
exit 0
SH
		scontrol => <<"SH",
name=\$(cat $dir/name.\$4 2>/dev/null)
case "\$mode" in
down) $down ;;
reused) echo "JobId=\$4 JobName=someone-else JobState=RUNNING Reason=None ExitCode=0:0"; exit 0 ;;
esac
if [ -e $dir/cancelled.\$4 ]; then
	echo "JobId=\$4 JobName=\$name JobState=CANCELLED Reason=None ExitCode=0:15"
else
	echo "JobId=\$4 JobName=\$name JobState=COMPLETED Reason=None ExitCode=0:0"
fi
SH
		scancel => <<"SH",
case "\$mode" in down) $down ;; esac
for a in "\$@"; do
	case "\$a" in
	--name=*-run*) touch $dir/cancelled.\$((1000 + \${a##*-run})) ;;
	-*) ;;
	*) touch $dir/cancelled.\$a ;;
	esac
done
exit 0
SH
		sacct => "echo 'sacct: error: no accounting'; exit 1\n");
	foreach my $cmd (keys %body)
	{
		write_file("$dir/$cmd",
			"#!/bin/sh\necho \"$cmd \$(date +%s.%N)\" >> $dir/calls.log\n"
			  . "mode=\$(cat $dir/$cmd.mode 2>/dev/null)\n"
			  . $body{$cmd});
		chmod 0755, "$dir/$cmd";
	}
	return $dir;
}

# Set the behaviour of one fake command (fake_slurm).
sub fake_mode
{
	my ($dir, $cmd, $mode) = @_;
	write_file("$dir/$cmd.mode", "$mode\n");
	return;
}

# The calls.log lines of a fake command (or a hang marker) from a unix
# time on.
sub fake_calls
{
	my ($dir, $what, $since) = @_;
	$since //= 0;
	return grep { /^$what (\S+)/ && $1 >= $since }
	  split /\n/, slurp_or_empty("$dir/calls.log");
}

sub slurp_or_empty
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return '';
	local $/;
	my $text = <$fh>;
	close($fh);
	return $text // '';
}

sub pid_from
{
	my ($path) = @_;
	my $pid = slurp_or_empty($path);
	return $pid =~ /^(\d+)/ ? $1 : 0;
}

# slurmstepd processes of this cluster (their environment names its conf)
# and every process below them: the jobs' processes.
sub job_processes
{
	my ($s) = @_;
	my (%parent, @roots);
	opendir(my $dh, '/proc') or return ();
	foreach my $pid (grep { /^\d+$/ } readdir($dh))
	{
		my $stat = slurp_or_empty("/proc/$pid/stat");
		next unless $stat =~ /^\d+ \((.*)\) \S (\d+)/;
		$parent{$pid} = $2;
		next unless $1 eq 'slurmstepd';
		my $env = slurp_or_empty("/proc/$pid/environ");
		push @roots, $pid if index($env, "SLURM_CONF=$s->{conf}\0") >= 0;
	}
	closedir($dh);
	my %mine = map { $_ => 1 } @roots;
	my $grew = 1;
	while ($grew)
	{
		$grew = 0;
		foreach my $pid (keys %parent)
		{
			next if $mine{$pid} || !$mine{ $parent{$pid} };
			$mine{$pid} = 1;
			$grew = 1;
		}
	}
	return keys %mine;
}

# The node dies: slurmd, its job steps and their processes, at once.  The
# scratch directories of the trainers killed are removed by stop_slurm.
sub kill_node
{
	my ($s) = @_;
	my @procs = job_processes($s);
	foreach my $pid (@procs)
	{
		my @argv = split /\0/, slurp_or_empty("/proc/$pid/cmdline");
		foreach my $i (0 .. $#argv - 1)
		{
			push @{ $s->{scratch} }, $argv[ $i + 1 ]
			  if $argv[$i] eq '--run-dir' && $argv[ $i + 1 ] =~ m{/easeml-run-\d+\.\w+$};
		}
	}
	my $slurmd = pid_from("$s->{dir}/slurmd.pid");
	kill 'KILL', $slurmd, @procs;
	return scalar @procs;
}

sub stop_pid
{
	my ($pid) = @_;
	return unless $pid && kill(0, $pid);
	kill 'TERM', $pid;
	foreach (1 .. 50)
	{
		return unless kill(0, $pid);
		select(undef, undef, undef, 0.1);
	}
	kill 'KILL', $pid;
	return;
}

# Cancel every job, stop the daemons, kill what is left of the jobs.
sub stop_slurm
{
	my ($s) = @_;
	return unless $s && $s->{dir};
	slurm_cmd($s, 'scancel', '--full', "--user=$s->{user}");
	kill 'KILL', job_processes($s);
	stop_pid(pid_from("$s->{dir}/slurmd.pid"));
	stop_pid(pid_from("$s->{dir}/slurmctld.pid"));
	kill 'KILL', job_processes($s);
	stop_pid(pid_from("$s->{dir}/munged.pid"));
	File::Path::rmtree($_) for @{ $s->{scratch} // [] };
	return;
}

1;
