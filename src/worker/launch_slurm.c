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
 * Every command runs in the background (SlurmCmd): the supervisor starts
 * it and polls it from the scheduler's loop without blocking, so a
 * controller that is slow or hangs never holds up scheduling; a command
 * gets COMMAND_TIMEOUT_MS to answer, then it is killed, and reaped later
 * without blocking (SlurmReapKilled: one in uninterruptible sleep, on a
 * hung NFS mount, outlives SIGKILL until it wakes).  A command that
 * fails (slurmctld down) tells the supervisor nothing, and it asks again
 * after a bounded exponential backoff (SlurmBackoffMs).  Only
 * src/worker/supervisor.c calls these functions.
 *
 * IDENTIFICATION
 *	  src/worker/launch_slurm.c
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
#include "module/monoclock.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define COMMAND_TIMEOUT_MS 30000
#define OUTPUT_MAX (4 * 1024 * 1024)
#define SLURM_PARTITION_PREFIX "slurm:"

/*
 * Slurm commands killed (after their timeout, or freed while running)
 * whose end has not been reaped yet.  SIGKILL ends a command at once
 * unless it sleeps in the kernel (a hung NFS mount): waiting for it would
 * hold up the scheduler's loop until it wakes, so each loop reaps them
 * without blocking instead (SlurmReapKilled).  While KILLED_MAX of them
 * have not ended no Slurm command is started (it fails as if Slurm could
 * not be reached, and its caller backs off): processes stuck in the
 * kernel do not pile up.
 */
#define KILLED_MAX 8
#define KILLED_LOG_MS 5000

typedef struct KilledCmd
{
	pid_t		pid;
	TimestampTz killed_at;		/* monotonic */
	bool		logged;			/* said that it has not ended */
	char		name[16];
} KilledCmd;

static KilledCmd killed_cmds[KILLED_MAX];
static int	n_killed = 0;
static bool full_logged = false;	/* said that none is started */
static bool exiting = false;	/* SlurmCommandsAtExit was called */

static void AppendOut(SlurmCmd *cmd, const char *data, int n);

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

/* The sbatch that submissions run (launches wait while it cannot be run). */
char *
SlurmSbatchPath(void)
{
	return SlurmCommand("sbatch");
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
 * Start a Slurm command in the background: input (may be NULL) on its
 * stdin, its stdout and stderr together into cmd->out as SlurmCmdPoll
 * reads them.  The command runs in its own process group, so that a
 * timeout kills whatever it started too.  Returns false when it could not
 * be started (cmd is then done, with status -1 and the reason in out).
 */
static bool
StartSlurmCommand(SlurmCmd *cmd, char *const argv[], char *const envp[],
				  const char *input, int timeout_ms)
{
	int			in_fds[2];
	int			out_fds[2];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t	mask;
	pid_t		pid;
	int			rc;

	Assert(!SlurmCmdBusy(cmd));
	SlurmCmdFree(cmd);
	strlcpy(cmd->name, last_dir_separator(argv[0]) ? last_dir_separator(argv[0]) + 1 : argv[0],
			sizeof(cmd->name));
	cmd->out = MemoryContextAllocZero(TopMemoryContext, 1024);
	cmd->cap = 1024;
	cmd->status = -1;
	cmd->started = EasemlMonotonicNow();
	cmd->timeout_ms = timeout_ms;
	SlurmReapKilled();
	if (n_killed >= KILLED_MAX && !exiting)
	{
		if (!full_logged)
			ereport(LOG,
					(errmsg("easeml: %d killed Slurm commands have not ended; no Slurm command is started until one does",
							n_killed)));
		full_logged = true;
		AppendOut(cmd, psprintf("%d killed Slurm commands have not ended",
								n_killed), -1);
		cmd->done = true;
		return false;
	}
	if (pipe2(in_fds, O_CLOEXEC) != 0)
	{
		AppendOut(cmd, psprintf("could not create a pipe: %m"), -1);
		cmd->done = true;
		return false;
	}
	if (pipe2(out_fds, O_CLOEXEC) != 0)
	{
		AppendOut(cmd, psprintf("could not create a pipe: %m"), -1);
		close(in_fds[0]);
		close(in_fds[1]);
		cmd->done = true;
		return false;
	}
	/* only our end reads without blocking; the command's end is as usual */
	(void) fcntl(out_fds[0], F_SETFL, O_NONBLOCK);
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
		AppendOut(cmd, psprintf("could not run \"%s\": %s", argv[0], strerror(rc)), -1);
		cmd->done = true;
		return false;
	}
	cmd->pid = pid;
	cmd->fd = out_fds[0];

	/* a batch script is a few hundred bytes: the pipe holds it */
	if (input != NULL && write(in_fds[1], input, strlen(input)) != (ssize_t) strlen(input))
		AppendOut(cmd, psprintf("could not write to \"%s\": %m\n", argv[0]), -1);
	close(in_fds[1]);
	return true;
}

/* Append n bytes (n < 0: a string) to a command's output, up to OUTPUT_MAX. */
static void
AppendOut(SlurmCmd *cmd, const char *data, int n)
{
	if (n < 0)
		n = strlen(data);
	if (cmd->len + n > OUTPUT_MAX)
		n = OUTPUT_MAX - cmd->len;
	if (n <= 0)
		return;
	if (cmd->len + n + 1 > cmd->cap)
	{
		while (cmd->len + n + 1 > cmd->cap)
			cmd->cap *= 2;
		cmd->out = repalloc(cmd->out, cmd->cap);
	}
	memcpy(cmd->out + cmd->len, data, n);
	cmd->len += n;
	cmd->out[cmd->len] = '\0';
}

/*
 * Kill a running command and whatever it started (its process group), and
 * reap it if it ended at once; if not, SlurmReapKilled reaps it later.
 */
static void
KillCommand(SlurmCmd *cmd)
{
	int			status;
	pid_t		rc;

	(void) kill(-cmd->pid, SIGKILL);
	rc = waitpid(cmd->pid, &status, WNOHANG);
	if (rc == cmd->pid || (rc < 0 && errno == ECHILD))
		return;
	if (n_killed < KILLED_MAX)
	{
		KilledCmd  *k = &killed_cmds[n_killed++];

		k->pid = cmd->pid;
		k->killed_at = EasemlMonotonicNow();
		k->logged = false;
		strlcpy(k->name, cmd->name, sizeof(k->name));
	}
	else
	{
		/* only commands started before the list filled up get here */
		ereport(LOG,
				(errmsg("easeml: killed Slurm command \"%s\" (pid %d) is no longer waited for: too many killed Slurm commands have not ended",
						cmd->name, (int) cmd->pid)));
	}
}

/*
 * Reap the killed commands that have ended, without blocking; say once of
 * each one that SIGKILL has not ended within KILLED_LOG_MS.
 */
void
SlurmReapKilled(void)
{
	TimestampTz now = EasemlMonotonicNow();

	for (int i = 0; i < n_killed;)
	{
		KilledCmd  *k = &killed_cmds[i];
		int			status;
		pid_t		rc = waitpid(k->pid, &status, WNOHANG);

		if (rc == k->pid || (rc < 0 && errno == ECHILD))
		{
			if (k->logged)
				ereport(LOG,
						(errmsg("easeml: killed Slurm command \"%s\" (pid %d) has ended",
								k->name, (int) k->pid)));
			killed_cmds[i] = killed_cmds[--n_killed];
			continue;
		}
		if (!k->logged && TimestampDifferenceExceeds(k->killed_at, now, KILLED_LOG_MS))
		{
			ereport(LOG,
					(errmsg("easeml: killed Slurm command \"%s\" (pid %d) has not ended %d s after SIGKILL; the scheduler goes on and reaps it once it ends",
							k->name, (int) k->pid, KILLED_LOG_MS / 1000),
					 errdetail("A process in uninterruptible sleep (a hung NFS mount) dies when it wakes.  While %d killed Slurm commands have not ended, no Slurm command is started.",
							   KILLED_MAX)));
			k->logged = true;
		}
		i++;
	}
	if (n_killed < KILLED_MAX)
		full_logged = false;
}

/*
 * The scheduler exits: the last scancels (by name, for submissions that may
 * have made a job) are started even while KILLED_MAX killed commands have
 * not ended, since stopping the pool at exit kills commands that seldom die
 * before the next one starts, and nothing would send those scancels later.
 */
void
SlurmCommandsAtExit(void)
{
	exiting = true;
}

/* Read what the command wrote so far, without blocking; true at its end. */
static bool
ReadAvailable(SlurmCmd *cmd)
{
	char		buf[8192];

	for (;;)
	{
		ssize_t		n = read(cmd->fd, buf, sizeof(buf));

		if (n > 0)
			AppendOut(cmd, buf, (int) n);
		else if (n == 0)
			return true;
		else if (errno != EINTR)
			return false;		/* EAGAIN: nothing more for now */
	}
}

bool
SlurmCmdPoll(SlurmCmd *cmd)
{
	bool		eof;
	pid_t		rc;
	int			status;

	if (cmd->done || cmd->pid <= 0)
	{
		cmd->done = true;
		return true;
	}
	eof = ReadAvailable(cmd);
	rc = waitpid(cmd->pid, &status, WNOHANG);
	if (rc == cmd->pid || (rc < 0 && errno == ECHILD))
	{
		/* what it wrote just before it exited */
		if (!eof)
			(void) ReadAvailable(cmd);
		cmd->status = rc == cmd->pid ? status : -1;
		cmd->done = true;
	}
	else if (TimestampDifferenceExceeds(cmd->started, EasemlMonotonicNow(), cmd->timeout_ms))
	{
		/* never leave it behind: it and whatever it started */
		KillCommand(cmd);
		cmd->status = -1;
		cmd->timed_out = true;
		cmd->done = true;
		AppendOut(cmd, psprintf("%s\"%s\" did not answer within %d s",
								cmd->len > 0 ? "\n" : "", cmd->name, cmd->timeout_ms / 1000), -1);
	}
	if (cmd->done)
	{
		close(cmd->fd);
		cmd->fd = -1;
		cmd->pid = 0;
	}
	return cmd->done;
}

void
SlurmCmdFree(SlurmCmd *cmd)
{
	if (SlurmCmdBusy(cmd))
	{
		KillCommand(cmd);
		close(cmd->fd);
	}
	if (cmd->out != NULL)
		pfree(cmd->out);
	memset(cmd, 0, sizeof(*cmd));
	cmd->fd = -1;
}

/*
 * Say that a Slurm command failed, at most once a minute: while the
 * controller is down the supervisor asks again and again (with a backoff).
 */
static void
LogFailure(const char *what, const SlurmCmd *cmd)
{
	static TimestampTz last = 0;

	if (last != 0 && !TimestampDifferenceExceeds(last, EasemlMonotonicNow(), 60000))
		return;
	last = EasemlMonotonicNow();
	ereport(LOG,
			(errmsg("easeml: %s failed: %s", what,
					cmd->len > 0 ? pnstrdup(cmd->out, strcspn(cmd->out, "\n")) : "no output"),
			 errdetail("easeml asks again after 1 s, then after twice as long at each failure in a row (at most %d s); this message repeats at most once a minute.",
					   SLURM_RETRY_MAX_MS / 1000)));
}

/* The first line of a command's output, for messages. */
static char *
FirstLine(const SlurmCmd *cmd)
{
	return pnstrdup(cmd->out, strcspn(cmd->out, "\n"));
}

/*
 * Start submitting a run as one batch job: its name carries the run id,
 * its partition is the device's, a GPU is requested on a cuda partition,
 * and its time limit is the run's budget.  sbatch runs in the background
 * (SlurmSubmitFinish reads its answer): a controller slow to answer never
 * holds up the scheduler.  Returns false with a message in err when the
 * run cannot be submitted at all (then cmd is not busy).
 */
bool
SlurmSubmitStart(const LaunchRequest *req, SlurmCmd *cmd, char *err, size_t errlen)
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

	/* not started: the answer is a failure to reach Slurm (SlurmSubmitFinish) */
	(void) StartSlurmCommand(cmd, argv, SlurmEnvironment(req->envp), script,
							 COMMAND_TIMEOUT_MS);
	return true;
}

/*
 * sbatch's answer, once SlurmCmdPoll says it ended: true with *job_id
 * set, or false with the reason in err.  Every failure is transient: the
 * arguments are the admin's settings and the device's partition, never
 * the run's, so a refusal (a time limit over the partition's, an account
 * over its limits), an sbatch killed by a signal or one that answered no
 * job id easeml can follow (SlurmParseJobId) is the cluster's or its
 * configuration's fault, not the task's: the run is interrupted and
 * launches pause (src/worker/launch.c).  Frees cmd.
 */
bool
SlurmSubmitFinish(SlurmCmd *cmd, int64 *job_id, bool *transient, char *err, size_t errlen)
{
	*transient = true;
	*job_id = cmd->status == 0 ? SlurmParseJobId(cmd->out) : 0;
	if (*job_id <= 0)
	{
		const char *what;

		if (cmd->status == 0)
			what = "sbatch answered no job id easeml can follow";
		else if (cmd->status == -1 || SlurmTransientError(cmd->out))
			what = "sbatch could not reach Slurm";	/* not started, timed out */
		else if (WIFSIGNALED(cmd->status))
			what = psprintf("sbatch was terminated by signal %d", WTERMSIG(cmd->status));
		else
			what = "sbatch refused the run";
		snprintf(err, errlen, "%s: %s", what, cmd->len > 0 ? FirstLine(cmd) : "no output");
	}
	SlurmCmdFree(cmd);
	return *job_id > 0;
}

/*
 * Could an sbatch that gave no job id easeml can follow have made a job
 * all the same?  Yes when it was killed (after its timeout, or by a
 * signal), when the controller's answer was lost (a connection error:
 * slurmctld may have queued the job before its answer got lost), or when
 * it exited 0; no when it never started or Slurm refused the job.  Call
 * before SlurmSubmitFinish frees cmd.
 */
bool
SlurmSubmitMayHaveJob(const SlurmCmd *cmd)
{
	if (cmd->timed_out || cmd->status == 0)
		return true;
	if (cmd->status == -1)
		return false;			/* never started */
	return WIFSIGNALED(cmd->status) || SlurmTransientError(cmd->out);
}

/*
 * Ask squeue, in the background, about some jobs (it lists jobs Slurm
 * still remembers, ended ones for MinJobAge).
 */
bool
SlurmQueueStart(const int64 *job_ids, int n, SlurmCmd *cmd)
{
	char	   *argv[8];
	StringInfoData ids;

	initStringInfo(&ids);
	for (int i = 0; i < n; i++)
		appendStringInfo(&ids, "%s%lld", i > 0 ? "," : "", (long long) job_ids[i]);
	argv[0] = SlurmCommand("squeue");
	argv[1] = "--noheader";
	argv[2] = "--states=all";
	argv[3] = psprintf("--jobs=%s", ids.data);
	argv[4] = "--format=" SLURM_SQUEUE_FORMAT;
	argv[5] = NULL;
	return StartSlurmCommand(cmd, argv, SlurmEnvironment(NULL), NULL, COMMAND_TIMEOUT_MS);
}

/*
 * squeue's answer: how many jobs it reported; *ok is false when squeue
 * failed (then nothing is known).  Frees cmd.
 */
int
SlurmQueueFinish(SlurmCmd *cmd, SlurmJob *jobs, int max, bool *ok)
{
	int			found = 0;

	*ok = true;
	if (cmd->status != 0)
	{
		/* every id forgotten: squeue says "Invalid job id specified" */
		if (strstr(cmd->out, "Invalid job id") == NULL)
		{
			*ok = false;
			LogFailure("squeue", cmd);
		}
	}
	else
		found = SlurmParseSqueue(cmd->out, easeml_slurm_job_prefix, jobs, max);
	SlurmCmdFree(cmd);
	return found;
}

/* Ask scontrol show job, in the background, how one job stands or ended. */
bool
SlurmShowJobStart(int64 job_id, SlurmCmd *cmd)
{
	char	   *argv[6];

	argv[0] = SlurmCommand("scontrol");
	argv[1] = "--oneliner";
	argv[2] = "show";
	argv[3] = "job";
	argv[4] = psprintf("%lld", (long long) job_id);
	argv[5] = NULL;
	return StartSlurmCommand(cmd, argv, SlurmEnvironment(NULL), NULL, COMMAND_TIMEOUT_MS);
}

/*
 * scontrol's answer: the job with its state, reason and exit code; that
 * scontrol no longer knows it (then ask sacct); or that it failed.  Frees
 * cmd.
 */
SlurmShow
SlurmShowJobFinish(SlurmCmd *cmd, SlurmJob *job)
{
	SlurmShow	r;

	if (cmd->status == 0 && SlurmParseScontrol(cmd->out, easeml_slurm_job_prefix, job))
		r = SLURM_SHOW_FOUND;
	else if (strstr(cmd->out, "Invalid job id") != NULL)
		r = SLURM_SHOW_FORGOTTEN;
	else
	{
		LogFailure("scontrol show job", cmd);
		r = SLURM_SHOW_FAILED;
	}
	SlurmCmdFree(cmd);
	return r;
}

/*
 * slurmctld forgot the job (MinJobAge): ask the accounting database in the
 * background, where there is one (sacct fails without slurmdbd).
 */
bool
SlurmAcctStart(int64 job_id, SlurmCmd *cmd)
{
	char	   *argv[7];

	argv[0] = SlurmCommand("sacct");
	argv[1] = "--noheader";
	argv[2] = "--parsable2";
	argv[3] = "--allocations";
	argv[4] = "--format=" SLURM_SACCT_FORMAT;
	argv[5] = psprintf("--jobs=%lld", (long long) job_id);
	argv[6] = NULL;
	return StartSlurmCommand(cmd, argv, SlurmEnvironment(NULL), NULL, COMMAND_TIMEOUT_MS);
}

/* sacct's answer: true with the job when it knows it.  Frees cmd. */
bool
SlurmAcctFinish(SlurmCmd *cmd, SlurmJob *job)
{
	bool		found = cmd->status == 0 &&
		SlurmParseSacct(cmd->out, easeml_slurm_job_prefix, job);

	SlurmCmdFree(cmd);
	return found;
}

/*
 * Cancel a job in the background: Slurm sends SIGTERM, then SIGKILL after
 * its KillWait; kill sends SIGKILL at once (the grace time is over).  With
 * job_id 0, the job named after run_id (a submission whose answer never
 * came).  False when scancel could not be started.
 */
bool
SlurmCancelStart(int64 job_id, int64 run_id, bool kill, SlurmCmd *cmd)
{
	char	   *argv[6];
	int			n = 0;
	char		name[128];

	argv[n++] = SlurmCommand("scancel");
	if (kill)
	{
		argv[n++] = "--full";
		argv[n++] = "--signal=KILL";
	}
	if (job_id > 0)
		argv[n++] = psprintf("%lld", (long long) job_id);
	else
	{
		SlurmJobName(name, sizeof(name), easeml_slurm_job_prefix, run_id);
		argv[n++] = psprintf("--name=%s", name);
	}
	argv[n] = NULL;
	return StartSlurmCommand(cmd, argv, SlurmEnvironment(NULL), NULL, COMMAND_TIMEOUT_MS);
}

/* scancel's answer: false with the reason in err when it failed.  Frees cmd. */
bool
SlurmCancelFinish(SlurmCmd *cmd, char *err, size_t errlen)
{
	bool		ok = cmd->status == 0;

	if (!ok)
		snprintf(err, errlen, "scancel failed: %s", cmd->len > 0 ? FirstLine(cmd) : "no output");
	SlurmCmdFree(cmd);
	return ok;
}
