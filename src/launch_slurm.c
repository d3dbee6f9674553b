/*-------------------------------------------------------------------------
 *
 * launch_slurm.c
 *	  The Slurm launcher: each run is one sbatch job, followed with squeue
 *	  and scontrol, cancelled with scancel (docs/scale-out.md).
 *
 * Slurm's commands are run with posix_spawn and argument vectors, never
 * through a shell, with a small fixed environment (SLURM_CONF from
 * easeml.slurm_conf).  Every argument is easeml's own: numeric ids, the
 * job name <prefix>-run<id>, and admin settings checked by SlurmSafeWord;
 * nothing a tenant wrote.  The trainer's secrets (its connection string
 * and the run's token) are in sbatch's environment and named in --export,
 * never in an argument (argument vectors are visible to every local user).
 * Each command has COMMAND_TIMEOUT_MS to answer; a command that fails
 * (slurmctld down) tells the supervisor nothing, and it asks again later.
 * Only src/supervisor.c calls these functions.
 *
 * IDENTIFICATION
 *	  src/launch_slurm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/timestamp.h"

#define COMMAND_TIMEOUT_MS 30000
#define OUTPUT_MAX (4 * 1024 * 1024)
#define SLURM_PARTITION_PREFIX "slurm:"

/* The partition of a device of launcher slurm (slurm:<partition>). */
const char *
SlurmPartitionOf(const char *device)
{
	size_t		n = strlen(SLURM_PARTITION_PREFIX);

	if (strncmp(device, SLURM_PARTITION_PREFIX, n) == 0 && device[n] != '\0')
		return device + n;
	return NULL;
}

/* <slurm_bindir>/<command> */
static char *
SlurmCommand(const char *name)
{
	return psprintf("%s/%s", easeml_slurm_bindir && easeml_slurm_bindir[0] ? easeml_slurm_bindir : "/usr/bin",
					name);
}

/*
 * The environment of a Slurm command: a fixed PATH and locale, SLURM_CONF
 * when set, and the extra variables given (sbatch's --export reads them).
 */
static char **
SlurmEnvironment(char *const *extra)
{
	int			n = 0;
	int			nextra = 0;
	char	  **envp;

	while (extra && extra[nextra])
		nextra++;
	envp = palloc0(sizeof(char *) * (nextra + 4));
	envp[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
	envp[n++] = "LC_ALL=C";
	if (easeml_slurm_conf && easeml_slurm_conf[0] != '\0')
		envp[n++] = psprintf("SLURM_CONF=%s", easeml_slurm_conf);
	for (int i = 0; i < nextra; i++)
		envp[n++] = extra[i];
	envp[n] = NULL;
	return envp;
}

/*
 * Run a Slurm command: input (may be NULL) on its stdin, its stdout and
 * stderr together into out.  Returns its wait status, or -1 when it could
 * not be started or did not end within COMMAND_TIMEOUT_MS (then it is
 * killed).
 */
static int
RunSlurmCommand(char *const argv[], char *const envp[], const char *input,
				StringInfo out)
{
	int			in_fds[2];
	int			out_fds[2];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t	mask;
	pid_t		pid;
	int			rc;
	int			status = -1;
	TimestampTz start = GetCurrentTimestamp();
	volatile bool timed_out = false;
	volatile bool finished = false;

	if (pipe2(in_fds, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(out_fds, O_CLOEXEC) != 0)
	{
		close(in_fds[0]);
		close(in_fds[1]);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_fds[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out_fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out_fds[1], STDERR_FILENO);
	posix_spawnattr_init(&attr);
	sigemptyset(&mask);
	posix_spawnattr_setsigmask(&attr, &mask);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	fflush(NULL);
	rc = posix_spawn(&pid, argv[0], &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(in_fds[0]);
	close(out_fds[1]);
	if (rc != 0)
	{
		close(in_fds[1]);
		close(out_fds[0]);
		appendStringInfo(out, "could not run \"%s\": %s", argv[0], strerror(rc));
		return -1;
	}

	/* a batch script is a few hundred bytes: the pipe holds it */
	if (input != NULL && write(in_fds[1], input, strlen(input)) != (ssize_t) strlen(input))
		appendStringInfo(out, "could not write to \"%s\": %m\n", argv[0]);
	close(in_fds[1]);

	PG_TRY();
	{
		char		buf[8192];

		for (;;)
		{
			struct pollfd pfd = {out_fds[0], POLLIN, 0};
			ssize_t		n;

			CHECK_FOR_INTERRUPTS();
			if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), COMMAND_TIMEOUT_MS))
			{
				timed_out = true;
				break;
			}
			rc = poll(&pfd, 1, 100);
			if (rc < 0 && errno != EINTR)
				break;
			if (rc <= 0)
				continue;
			n = read(out_fds[0], buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			if (out->len < OUTPUT_MAX)
				appendBinaryStringInfo(out, buf, n);
		}
		finished = true;
	}
	PG_FINALLY();
	{
		close(out_fds[0]);
		/* timed out or interrupted: never leave the command behind */
		if (timed_out || !finished)
			(void) kill(-pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	PG_END_TRY();
	if (timed_out)
	{
		appendStringInfo(out, "\"%s\" did not answer within %d s", argv[0], COMMAND_TIMEOUT_MS / 1000);
		return -1;
	}
	return status;
}

/*
 * Say that a Slurm command failed, at most once a minute: while the
 * controller is down the supervisor asks every second.
 */
static void
LogFailure(const char *what, StringInfo out)
{
	static TimestampTz last = 0;

	if (last != 0 && !TimestampDifferenceExceeds(last, GetCurrentTimestamp(), 60000))
		return;
	last = GetCurrentTimestamp();
	ereport(LOG,
			(errmsg("easeml: %s failed: %s", what,
					out->len > 0 ? pnstrdup(out->data, strcspn(out->data, "\n")) : "no output"),
			 errdetail("easeml asks again every second; this message repeats at most once a minute.")));
}

/* The first line of a command's output, for messages. */
static char *
FirstLine(StringInfo out)
{
	char	   *s = pstrdup(out->data);

	s[strcspn(s, "\n")] = '\0';
	return s;
}

/*
 * Submit a run as one batch job: its name carries the run id, its
 * partition is the device's, a GPU is requested on a cuda partition, and
 * its time limit is the run's budget.  Returns true with *job_id set, or
 * false with *transient telling whether Slurm could not be reached (try
 * again later) rather than refused the job.
 */
bool
SlurmSubmit(const LaunchRequest *req, int64 *job_id, bool *transient,
			char *err, size_t errlen)
{
	const char *partition = SlurmPartitionOf(req->device);
	const char *trainer = easeml_slurm_trainer_path && easeml_slurm_trainer_path[0] ?
		easeml_slurm_trainer_path : req->argv[0];
	char		script[2048];
	char		name[128];
	char		minutes[32];
	char	   *argv[16];
	int			n = 0;
	StringInfoData exports;
	StringInfoData out;
	int			status;

	*transient = false;
	if (partition == NULL || !SlurmSafeWord(partition))
	{
		snprintf(err, errlen, "device \"%s\" is not a Slurm partition", req->device);
		return false;
	}
	if (SlurmBatchScript(script, sizeof(script), trainer, req->run_id) < 0)
	{
		snprintf(err, errlen, "the trainer's path \"%s\" cannot go into a batch script (an absolute path without spaces or quotes is needed)",
				 trainer);
		return false;
	}
	SlurmJobName(name, sizeof(name), easeml_slurm_job_prefix, req->run_id);
	initStringInfo(&exports);
	for (int i = 0; req->export_names[i] != NULL; i++)
		appendStringInfo(&exports, "%s%s", i > 0 ? "," : "", req->export_names[i]);

	argv[n++] = SlurmCommand("sbatch");
	argv[n++] = "--parsable";
	argv[n++] = psprintf("--job-name=%s", name);
	argv[n++] = psprintf("--partition=%s", partition);
	argv[n++] = "--no-requeue";		/* easeml reschedules, Slurm does not */
	argv[n++] = "--ntasks=1";
	argv[n++] = psprintf("--output=%s", easeml_slurm_output);
	argv[n++] = psprintf("--export=%s", exports.data);
	if (strcmp(req->device_kind, "cuda") == 0)
		argv[n++] = "--gres=gpu:1";
	if (SlurmTimeLimit(minutes, sizeof(minutes), req->time_limit) > 0)
		argv[n++] = psprintf("--time=%s", minutes);
	if (easeml_slurm_account && easeml_slurm_account[0] != '\0')
		argv[n++] = psprintf("--account=%s", easeml_slurm_account);
	argv[n] = NULL;

	initStringInfo(&out);
	status = RunSlurmCommand(argv, SlurmEnvironment(req->envp), script, &out);
	*job_id = status == 0 ? SlurmParseJobId(out.data) : 0;
	if (*job_id <= 0)
	{
		/* not started, timed out, or could not reach the controller */
		*transient = status == -1 || SlurmTransientError(out.data);
		snprintf(err, errlen, "%s: %s",
				 *transient ? "sbatch could not reach Slurm" : "sbatch refused the run",
				 out.len > 0 ? FirstLine(&out) : "no output");
		return false;
	}
	return true;
}

/*
 * The state of some jobs, with squeue (which lists jobs Slurm still
 * remembers, ended ones for MinJobAge).  Returns how many it reported;
 * *ok is false when squeue failed (then nothing is known).
 */
int
SlurmQueue(const int64 *job_ids, int n, SlurmJob *jobs, int max, bool *ok)
{
	char	   *argv[8];
	StringInfoData ids;
	StringInfoData out;
	int			status;

	*ok = true;
	if (n == 0)
		return 0;
	initStringInfo(&ids);
	for (int i = 0; i < n; i++)
		appendStringInfo(&ids, "%s%lld", i > 0 ? "," : "", (long long) job_ids[i]);
	argv[0] = SlurmCommand("squeue");
	argv[1] = "--noheader";
	argv[2] = "--states=all";
	argv[3] = psprintf("--jobs=%s", ids.data);
	argv[4] = "--format=" SLURM_SQUEUE_FORMAT;
	argv[5] = NULL;
	initStringInfo(&out);
	status = RunSlurmCommand(argv, SlurmEnvironment(NULL), NULL, &out);
	if (status != 0)
	{
		/* every id forgotten: squeue says "Invalid job id specified" */
		if (strstr(out.data, "Invalid job id") != NULL)
			return 0;
		*ok = false;
		LogFailure("squeue", &out);
		return 0;
	}
	return SlurmParseSqueue(out.data, easeml_slurm_job_prefix, jobs, max);
}

/*
 * How one job stands or ended, with its exit code and reason (scontrol
 * show job, else sacct).  False when Slurm does not know the job (any
 * more): *ok is then true, or false when scontrol itself failed.
 */
bool
SlurmShowJob(int64 job_id, SlurmJob *job, bool *ok)
{
	char	   *argv[7];
	StringInfoData out;
	int			status;

	argv[0] = SlurmCommand("scontrol");
	argv[1] = "--oneliner";
	argv[2] = "show";
	argv[3] = "job";
	argv[4] = psprintf("%lld", (long long) job_id);
	argv[5] = NULL;
	initStringInfo(&out);
	status = RunSlurmCommand(argv, SlurmEnvironment(NULL), NULL, &out);
	*ok = true;
	if (status == 0 && SlurmParseScontrol(out.data, easeml_slurm_job_prefix, job))
		return true;
	if (strstr(out.data, "Invalid job id") == NULL)
	{
		*ok = false;
		LogFailure("scontrol show job", &out);
		return false;
	}

	/*
	 * slurmctld forgot it (MinJobAge): the accounting database may still
	 * know, where there is one (sacct fails without slurmdbd).
	 */
	argv[0] = SlurmCommand("sacct");
	argv[1] = "--noheader";
	argv[2] = "--parsable2";
	argv[3] = "--allocations";
	argv[4] = "--format=" SLURM_SACCT_FORMAT;
	argv[5] = psprintf("--jobs=%lld", (long long) job_id);
	argv[6] = NULL;
	resetStringInfo(&out);
	status = RunSlurmCommand(argv, SlurmEnvironment(NULL), NULL, &out);
	return status == 0 && SlurmParseSacct(out.data, easeml_slurm_job_prefix, job);
}

/*
 * Cancel a job: Slurm sends SIGTERM, then SIGKILL after its KillWait;
 * kill sends SIGKILL at once (the grace time is over).
 */
bool
SlurmCancel(int64 job_id, bool kill, char *err, size_t errlen)
{
	char	   *argv[6];
	int			n = 0;
	StringInfoData out;

	argv[n++] = SlurmCommand("scancel");
	if (kill)
	{
		argv[n++] = "--full";
		argv[n++] = "--signal=KILL";
	}
	argv[n++] = psprintf("%lld", (long long) job_id);
	argv[n] = NULL;
	initStringInfo(&out);
	if (RunSlurmCommand(argv, SlurmEnvironment(NULL), NULL, &out) != 0)
	{
		snprintf(err, errlen, "scancel %lld failed: %s", (long long) job_id,
				 out.len > 0 ? FirstLine(&out) : "no output");
		return false;
	}
	return true;
}
