/*-------------------------------------------------------------------------
 *
 * supervisor.c
 *	  Process supervision: launch trainer executables, reap them without
 *	  blocking, stop them (cancel, timeout, shutdown) and decode how they
 *	  ended.
 *
 * Training never runs inside a PostgreSQL process: a crash there would
 * restart the whole cluster, and a CUDA context does not survive fork().
 * The scheduler starts each trainer with posix_spawn() in its own process
 * group, with default signal dispositions, stdin from /dev/null, stdout and
 * stderr written to a per-run log file (truncated at spawn) and no
 * inherited descriptors beyond those three.  The trainer itself asks for SIGTERM when the
 * scheduler dies (PR_SET_PDEATHSIG) and checks its parent pid to close the
 * race, so a dying scheduler leaves no orphans behind.
 *
 * This file is the local launcher, and calls the others (src/worker/launcher.h):
 * a run's trainer is a process here, or a Slurm job (src/worker/launch_slurm.c)
 * that squeue and scontrol follow and scancel stops.  Only this file calls
 * posix_spawn, waitpid and kill on trainers, or a launcher, and only this
 * file changes a slot's state.  A slot belongs to a device
 * (easeml.devices) while it holds a run; the scheduler decides which device
 * a run goes to (src/worker/devices.c), this file only keeps the books.  Besides
 * the scheduler's trainers, it runs the trainer's device probe for the
 * scheduler (outside the slots) and the trainer's model check for
 * backends (SupervisorCheckModel).
 *
 * IDENTIFICATION
 *	  src/worker/supervisor.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "module/easeml.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "module/monoclock.h"
#include "rundir.h"
#include "supervisor.h"
#include "core/trainer_protocol.h"
#include "utils/timestamp.h"

static EasemlTrainer trainers[EASEML_MAX_SLOTS];
static pid_t probe_pid = 0;		/* the device probe, 0 when none runs */

/*
 * Slurm's commands run in the background (src/worker/launch_slurm.c): per slot
 * its sbatch while the run is submitted, then its scontrol or sacct; one
 * squeue for every job; scancel in a pool of their own.
 */
static SlurmCmd slot_cmd[EASEML_MAX_SLOTS];
static SlurmCmd queue_cmd;
#define CANCEL_CMDS (2 * EASEML_MAX_SLOTS)
static SlurmCmd cancel_cmd[CANCEL_CMDS];
static int64 cancel_run[CANCEL_CMDS];	/* whose job it cancels */
static int	cancel_sig[CANCEL_CMDS];
static bool cancel_by_name[CANCEL_CMDS];	/* the job named after the run */

/*
 * Runs whose failed submission may have made a job all the same
 * (SlurmSubmitMayHaveJob): sbatch timed out, or lost the controller's
 * answer, and slurmctld queued the job anyway.  Nobody follows such a job
 * (the run is interrupted, its candidate or request goes to a new run, a
 * new job name), so it is cancelled by the run's job name, and a scancel
 * that fails is sent again after a backoff (SlurmBackoffMs) until one
 * succeeds.  At most NAME_CANCELS are owed; past that the oldest is given
 * up, and logged with its name.
 */
#define NAME_CANCELS 16

typedef struct NameCancel
{
	int64		run_id;
	int			failures;		/* scancel failures in a row */
	TimestampTz next;			/* no scancel again before (backoff) */
	bool		in_flight;		/* its scancel runs in cancel_cmd[] */
} NameCancel;

static NameCancel name_cancels[NAME_CANCELS];
static int	n_name_cancels = 0;

static SlurmCmd *NewCancelCmd(int64 run_id, int sig, bool by_name);
static void OweNameCancel(int64 run_id);

/* Slot table access for the scheduler. */
EasemlTrainer *
SupervisorSlot(int slot)
{
	Assert(slot >= 0 && slot < EASEML_MAX_SLOTS);
	return &trainers[slot];
}

/* Number of live trainers. */
int
SupervisorCountRunning(void)
{
	int			n = 0;

	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		if (SupervisorStarted(&trainers[i]))
			n++;
	return n;
}

/* A slot that holds no run, or -1 when every slot is taken. */
int
SupervisorFreeSlot(void)
{
	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		if (trainers[i].run_id == 0)
			return i;
	return -1;
}

/* Slots held on a device: reserved, running, or ended and not yet recorded. */
int
SupervisorDeviceCount(const char *device)
{
	int			n = 0;

	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		if (trainers[i].run_id != 0 && strcmp(trainers[i].device, device) == 0)
			n++;
	return n;
}

/* Reserve a slot on a device for a run before its trainer exists. */
void
SupervisorReserve(int slot, int64 run_id, const char *device)
{
	EasemlTrainer *t = &trainers[slot];

	SlurmCmdFree(&slot_cmd[slot]);
	memset(t, 0, sizeof(*t));
	t->run_id = run_id;
	t->pid = 0;
	strlcpy(t->device, device, sizeof(t->device));
}

/* Release a slot. */
void
SupervisorRelease(int slot)
{
	SlurmCmdFree(&slot_cmd[slot]);
	memset(&trainers[slot], 0, sizeof(EasemlTrainer));
}

/*
 * Spawn attributes for a trainer: no blocked signals, default dispositions
 * for those the server handles or ignores, and its own process group when
 * asked (so that stopping it reaches its children too).
 */
static void
InitSpawnAttr(posix_spawnattr_t *attr, bool own_group)
{
	sigset_t	mask;
	sigset_t	defaults;
	static const int default_signals[] = {
		SIGPIPE, SIGUSR1, SIGUSR2, SIGHUP, SIGINT, SIGTERM, SIGQUIT,
		SIGCHLD, SIGALRM, SIGXFSZ, SIGTTIN, SIGTTOU
	};

	sigemptyset(&mask);
	sigemptyset(&defaults);
	for (int i = 0; i < lengthof(default_signals); i++)
		sigaddset(&defaults, default_signals[i]);
	posix_spawnattr_init(attr);
	posix_spawnattr_setsigmask(attr, &mask);
	posix_spawnattr_setsigdefault(attr, &defaults);
	posix_spawnattr_setpgroup(attr, 0);
	posix_spawnattr_setflags(attr, (own_group ? POSIX_SPAWN_SETPGROUP : 0) |
							 POSIX_SPAWN_SETSIGMASK |
							 POSIX_SPAWN_SETSIGDEF);
}

/* The trainer executable: easeml.trainer_path or <bindir>/easeml-trainer. */
char *
SupervisorTrainerPath(void)
{
	char		path[MAXPGPATH];

	if (easeml_trainer_path && easeml_trainer_path[0] != '\0')
		return pstrdup(easeml_trainer_path);
	strlcpy(path, my_exec_path, sizeof(path));
	get_parent_directory(path);
	return psprintf("%s/easeml-trainer", path);
}

/*
 * Make the run directory (mode 0700) and return 0, or errno; the base
 * directory first, so that one the scheduler creates has its marker.
 */
static int
MakeRunDir(const char *path)
{
	int			rc = RunBaseCreate();

	if (rc != 0)
		return rc;
	if (pg_mkdir_p(unconstify(char *, path), S_IRWXU) != 0 && errno != EEXIST)
		return errno;
	return 0;
}

/*
 * Start a process in its own process group (InitSpawnAttr), stdin from
 * /dev/null, stdout to out_path (truncated) and stderr to err_path, or to
 * stdout when err_path is NULL; no other descriptor is inherited.
 * Returns 0 with *pid set, or an errno.
 */
static int
SpawnProcess(char *const argv[], char *const envp[], const char *out_path,
			 const char *err_path, pid_t *pid)
{
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	int			rc;

	InitSpawnAttr(&attr, true);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path,
									 O_WRONLY | O_CREAT | O_TRUNC, S_IRUSR | S_IWUSR);
	if (err_path != NULL)
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path,
										 O_WRONLY | O_CREAT | O_TRUNC, S_IRUSR | S_IWUSR);
	else
		posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
	posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);

	/* buffered output must not be written twice */
	fflush(NULL);
	rc = posix_spawn(pid, argv[0], &fa, &attr, argv, envp);

	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return rc;
}

/*
 * Start a trainer process for a run in the given slot, on the given
 * device (the local launcher).
 *
 * argv and envp are complete (argv[0] is the executable).  On failure
 * returns false with a message in err and *transient set; nothing is left
 * running.
 *
 * Every failure here is transient: none is the run's fault.  The machine
 * may be out of processes at the moment (EAGAIN: RLIMIT_NPROC, pid_max),
 * of memory, descriptors or disk space, the trainer's file may be being
 * replaced (ETXTBSY) or missing (a wrong easeml.trainer_path; launches
 * then wait for it, LaunchBackoffActive), the run directory unwritable.  A
 * failed run would count towards its task's easeml.max_failures, and
 * within seconds every task without a success would be failed; an
 * interrupted one is trained again once launches resume after a pause.
 */
static bool
LocalSpawn(int slot, int64 run_id, const char *device, const char *run_dir,
		   char *const argv[], char *const envp[], bool *transient,
		   char *err, size_t errlen)
{
	EasemlTrainer *t = &trainers[slot];
	char		log_path[MAXPGPATH];
	pid_t		pid;
	int			rc;

	rc = MakeRunDir(run_dir);
	if (rc != 0)
	{
		*transient = true;
		snprintf(err, errlen, "could not create run directory \"%s\": %s",
				 run_dir, strerror(rc));
		return false;
	}
	snprintf(log_path, sizeof(log_path), "%s/%s", run_dir, EASEML_FILE_LOG);

	/*
	 * Run ids start again after the extension is re-created: never let a
	 * previous run's files be taken for this one's.
	 */
	{
		static const char *const stale[] = {
			EASEML_FILE_ARTIFACT
		};
		char		old[MAXPGPATH];

		for (int i = 0; i < lengthof(stale); i++)
		{
			snprintf(old, sizeof(old), "%s/%s", run_dir, stale[i]);
			(void) unlink(old);
		}
	}

	rc = SpawnProcess(argv, envp, log_path, NULL, &pid);
	if (rc != 0)
	{
		/* the executable, or its log file? */
		bool		no_trainer = access(argv[0], X_OK) != 0;

		*transient = true;
		snprintf(err, errlen, "could not start trainer \"%s\": %s%s",
				 argv[0], strerror(rc),
				 no_trainer ? " (check easeml.trainer_path)" : "");
		return false;
	}

	memset(t, 0, sizeof(*t));
	t->run_id = run_id;
	t->pid = pid;
	t->launcher = EASEML_LAUNCHER_LOCAL;
	t->started = EasemlMonotonicNow();
	t->running_since = t->started;
	strlcpy(t->device, device, sizeof(t->device));
	strlcpy(t->run_dir, run_dir, sizeof(t->run_dir));
	strlcpy(t->log_path, log_path, sizeof(t->log_path));
	return true;
}

/*
 * Start the trainer of a run in the given slot with the launcher
 * easeml.launcher names.  On failure returns false with a message in err
 * and *transient set when the launch may succeed later (a cluster's
 * controller down, this machine out of processes or disk space, the
 * trainer not installed); nothing is left running.  A Slurm run is submitted in
 * the background: the slot is then "submitting" until SupervisorSubmitted
 * reads sbatch's answer.
 */
bool
SupervisorLaunch(int slot, const LaunchRequest *req, bool *transient,
				 char *err, size_t errlen)
{
	EasemlTrainer *t = &trainers[slot];

	*transient = false;
	if (easeml_launcher != EASEML_LAUNCHER_SLURM)
		return LocalSpawn(slot, req->run_id, req->device, req->run_dir,
						  req->argv, req->envp, transient, err, errlen);
	if (!SlurmSubmitStart(req, &slot_cmd[slot], err, errlen))
		return false;
	memset(t, 0, sizeof(*t));
	t->run_id = req->run_id;
	t->launcher = EASEML_LAUNCHER_SLURM;
	t->submitting = true;
	t->started = EasemlMonotonicNow();
	strlcpy(t->device, req->device, sizeof(t->device));
	snprintf(t->log_path, sizeof(t->log_path), "slurm job (being submitted): %s",
			 easeml_slurm_output);
	return true;
}

SubmitState
SupervisorSubmitted(int slot, bool *transient, char *err, size_t errlen)
{
	EasemlTrainer *t = &trainers[slot];
	int64		job_id;
	bool		may_have_job;

	*transient = false;
	if (!t->submitting)
		return SUBMIT_NONE;
	if (!SlurmCmdPoll(&slot_cmd[slot]))
		return SUBMIT_PENDING;
	t->submitting = false;
	may_have_job = SlurmSubmitMayHaveJob(&slot_cmd[slot]);
	if (!SlurmSubmitFinish(&slot_cmd[slot], &job_id, transient, err, errlen))
	{
		/* it may have submitted a job nobody follows: cancel it by name */
		if (may_have_job)
		{
			ereport(LOG,
					(errmsg("easeml: run %lld: cancelling any job its sbatch submitted (by its name)",
							(long long) t->run_id)));
			OweNameCancel(t->run_id);
		}
		return SUBMIT_FAILED;
	}
	t->job_id = job_id;
	/* queued until squeue says it runs (NoteJobClass) */
	t->job_class = SLURM_JOB_PENDING;
	t->started = EasemlMonotonicNow();
	snprintf(t->log_path, sizeof(t->log_path), "slurm job %lld: %s",
			 (long long) job_id, easeml_slurm_output);
	return SUBMIT_DONE;
}

/*
 * Take back a run whose Slurm job outlived a previous scheduler (after a
 * database restart): the slot follows the job as if it had submitted it.
 * started is the run's start as recorded in SQL (wall clock).
 */
void
SupervisorAttach(int slot, int64 run_id, const char *device, int64 job_id,
				 TimestampTz started)
{
	EasemlTrainer *t = &trainers[slot];

	SlurmCmdFree(&slot_cmd[slot]);
	memset(t, 0, sizeof(*t));
	t->run_id = run_id;
	t->launcher = EASEML_LAUNCHER_SLURM;
	t->job_id = job_id;
	t->job_class = SLURM_JOB_UNKNOWN;
	t->started = EasemlMonotonicFromWall(started);
	strlcpy(t->device, device, sizeof(t->device));
	snprintf(t->log_path, sizeof(t->log_path), "slurm job %lld: %s",
			 (long long) job_id, easeml_slurm_output);
}

#define SLURM_REFRESH_MS 1000
#define SLURM_MISSING_GRACE_MS 10000

/*
 * How Slurm says a job stands.  easeml.run_timeout counts from the first
 * time it is seen running: time in the queue is the cluster's, not the
 * run's (Slurm's own --time counts from the job's start too).
 */
static void
NoteJobClass(EasemlTrainer *t, SlurmJobClass cls)
{
	t->job_class = cls;
	if (cls == SLURM_JOB_ALIVE && t->running_since == 0)
		t->running_since = EasemlMonotonicNow();
}

/* squeue: when the next may start, the failures in a row, what it asks */
static TimestampTz next_refresh = 0;
static int	refresh_failures = 0;
static int64 queried[EASEML_MAX_SLOTS];
static int	n_queried = 0;

/*
 * Ask squeue how the jobs of the Slurm slots stand, at most once every
 * SLURM_REFRESH_MS, in the background: this starts it, a later call reads
 * its answer.  A job it no longer lists is marked missing; when squeue
 * fails nothing changes, and it is asked again after a backoff
 * (SlurmBackoffMs) that grows with the failures in a row.
 */
static void
RefreshJobs(void)
{
	SlurmJob	jobs[EASEML_MAX_SLOTS];
	int			found;
	bool		ok;
	TimestampTz now = EasemlMonotonicNow();

	if (SlurmCmdBusy(&queue_cmd))
	{
		if (!SlurmCmdPoll(&queue_cmd))
			return;
		found = SlurmQueueFinish(&queue_cmd, jobs, lengthof(jobs), &ok);
		refresh_failures = ok ? 0 : refresh_failures + 1;
		next_refresh = TimestampTzPlusMilliseconds(EasemlMonotonicNow(),
												   ok ? SLURM_REFRESH_MS : SlurmBackoffMs(refresh_failures));
		if (!ok)
			return;
		for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		{
			EasemlTrainer *t = &trainers[i];
			bool		asked = false;

			if (t->job_id <= 0 || t->exited)
				continue;
			/* a job submitted after squeue started is not in its answer */
			for (int j = 0; j < n_queried && !asked; j++)
				asked = queried[j] == t->job_id;
			if (!asked)
				continue;
			t->job_missing = true;
			for (int j = 0; j < found; j++)
				/* the id of another job (Slurm's ids began again): ours is gone */
				if (jobs[j].job_id == t->job_id && jobs[j].run_id == t->run_id)
				{
					t->job_missing = false;
					NoteJobClass(t, SlurmStateClass(jobs[j].state));
				}
		}
		return;
	}
	if (next_refresh != 0 && now < next_refresh)
		return;
	n_queried = 0;
	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		if (trainers[i].job_id > 0 && !trainers[i].exited)
			queried[n_queried++] = trainers[i].job_id;
	if (n_queried == 0)
		return;
	next_refresh = TimestampTzPlusMilliseconds(now, SLURM_REFRESH_MS);
	if (!SlurmQueueStart(queried, n_queried, &queue_cmd))
	{
		(void) SlurmQueueFinish(&queue_cmd, jobs, lengthof(jobs), &ok);
		refresh_failures++;
		next_refresh = TimestampTzPlusMilliseconds(now, SlurmBackoffMs(refresh_failures));
	}
}

/* A failed scontrol or sacct: ask about this job again after a backoff. */
static void
QueryFailed(EasemlTrainer *t)
{
	t->query_failures++;
	t->next_query = TimestampTzPlusMilliseconds(EasemlMonotonicNow(),
												SlurmBackoffMs(t->query_failures));
}

/*
 * Has the Slurm job of a slot ended?  Once squeue no longer says it is
 * alive, scontrol tells how (sacct, for a job slurmctld forgot): its exit
 * status (as a wait status), and whether Slurm lost it or its time limit
 * ended it, in Slurm's words.  Both run in the background (slot_cmd), one
 * at a time per job, and after a failure not again before the job's
 * backoff has passed.
 */
static bool
SlurmPoll(int slot, EasemlTrainer *t, int *status)
{
	SlurmCmd   *cmd = &slot_cmd[slot];
	SlurmJob	job;
	SlurmJobClass cls;

	RefreshJobs();
	if (!SlurmCmdBusy(cmd))
	{
		if ((t->job_class == SLURM_JOB_ALIVE || t->job_class == SLURM_JOB_PENDING) &&
			!t->job_missing)
			return false;
		/* squeue may not list a job it has just accepted */
		if (t->job_class == SLURM_JOB_UNKNOWN && t->job_missing &&
			!TimestampDifferenceExceeds(t->started, EasemlMonotonicNow(), SLURM_MISSING_GRACE_MS))
			return false;
		if (!t->job_missing && t->job_class == SLURM_JOB_UNKNOWN)
			return false;
		if (t->next_query != 0 && EasemlMonotonicNow() < t->next_query)
			return false;
		if (!(t->query_acct ? SlurmAcctStart(t->job_id, cmd) : SlurmShowJobStart(t->job_id, cmd)))
		{
			SlurmCmdFree(cmd);
			QueryFailed(t);
		}
		return false;			/* its exit wakes the loop (SIGCHLD) */
	}
	if (!SlurmCmdPoll(cmd))
		return false;
	if (t->query_acct)
	{
		t->query_acct = false;
		if (!SlurmAcctFinish(cmd, &job) || job.run_id != t->run_id)
		{
			*status = -1;
			t->lost = true;
			snprintf(t->end_reason, sizeof(t->end_reason),
					 "Slurm no longer knows job %lld", (long long) t->job_id);
			return true;
		}
	}
	else
	{
		switch (SlurmShowJobFinish(cmd, &job))
		{
			case SLURM_SHOW_FAILED:
				QueryFailed(t);
				return false;	/* Slurm did not answer: ask again later */
			case SLURM_SHOW_FORGOTTEN:
				t->query_acct = true;
				t->next_query = 0;
				return false;	/* the next poll asks sacct */
			case SLURM_SHOW_FOUND:
				if (job.run_id == t->run_id)
					break;
				/* another job has its id now: ours is forgotten */
				t->query_acct = true;
				t->next_query = 0;
				return false;
		}
	}
	t->query_failures = 0;
	t->next_query = 0;
	cls = SlurmStateClass(job.state);
	if (cls == SLURM_JOB_ALIVE || cls == SLURM_JOB_PENDING || cls == SLURM_JOB_UNKNOWN)
	{
		NoteJobClass(t, cls);
		t->job_missing = false;
		return false;
	}
	*status = SlurmWaitStatus(&job);
	t->lost = cls == SLURM_JOB_LOST ||
		(cls == SLURM_JOB_CANCELLED && t->stop_reason == EASEML_STOP_NONE);
	t->lost_state = t->lost;
	t->time_limit = cls == SLURM_JOB_TIMEOUT;
	snprintf(t->end_reason, sizeof(t->end_reason), "Slurm job %lld ended %s (reason: %s)",
			 (long long) t->job_id, job.state, job.reason[0] ? job.reason : "none");
	return true;
}

/*
 * A cancel of run_id's job (sig: SIGTERM or SIGKILL) did not reach Slurm:
 * it is owed, and SupervisorStop sends it again after a backoff
 * (SlurmBackoffMs), until one succeeds or the job ended.
 */
static void
CancelFailed(int64 run_id, int sig, const char *err)
{
	ereport(LOG, (errmsg("easeml: run %lld: %s", (long long) run_id, err)));
	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
	{
		EasemlTrainer *t = &trainers[i];

		if (t->run_id != run_id || t->job_id <= 0 || t->exited)
			continue;
		if (t->cancel_owed != SIGKILL)
			t->cancel_owed = sig;
		t->cancel_failures++;
		t->next_cancel = TimestampTzPlusMilliseconds(EasemlMonotonicNow(),
													 SlurmBackoffMs(t->cancel_failures));
	}
}

/* The owed cancel by name of run_id's job, or NULL. */
static NameCancel *
FindNameCancel(int64 run_id)
{
	for (int i = 0; i < n_name_cancels; i++)
		if (name_cancels[i].run_id == run_id)
			return &name_cancels[i];
	return NULL;
}

/* Owe a cancel of the job named after run_id: sent by StepNameCancels. */
static void
OweNameCancel(int64 run_id)
{
	NameCancel *nc = FindNameCancel(run_id);

	if (nc != NULL)
		return;
	if (n_name_cancels == NAME_CANCELS)
	{
		char		name[128];

		SlurmJobName(name, sizeof(name), easeml_slurm_job_prefix, name_cancels[0].run_id);
		ereport(LOG,
				(errmsg("easeml: run %lld: gave up cancelling any job named \"%s\" after %d failed scancel commands",
						(long long) name_cancels[0].run_id, name, name_cancels[0].failures),
				 errhint("Cancel it by hand if Slurm lists it (scancel --name=%s).", name)));
		memmove(&name_cancels[0], &name_cancels[1],
				sizeof(NameCancel) * (NAME_CANCELS - 1));
		n_name_cancels--;
	}
	nc = &name_cancels[n_name_cancels++];
	memset(nc, 0, sizeof(*nc));
	nc->run_id = run_id;
}

/* A cancel by name ended: done when it succeeded, else again after a backoff. */
static void
NameCancelEnded(int64 run_id, bool ok, const char *err)
{
	NameCancel *nc = FindNameCancel(run_id);

	if (!ok)
		ereport(LOG, (errmsg("easeml: run %lld: %s", (long long) run_id, err)));
	if (nc == NULL)
		return;					/* given up meanwhile */
	if (ok)
	{
		*nc = name_cancels[--n_name_cancels];
		return;
	}
	nc->in_flight = false;
	nc->failures++;
	nc->next = TimestampTzPlusMilliseconds(EasemlMonotonicNow(),
										   SlurmBackoffMs(nc->failures));
}

/* Read the answer of scancel command i if it has ended. */
static void
ReadCancel(int i)
{
	char		err[256];
	bool		ok;

	if (!SlurmCmdBusy(&cancel_cmd[i]) || !SlurmCmdPoll(&cancel_cmd[i]))
		return;
	ok = SlurmCancelFinish(&cancel_cmd[i], err, sizeof(err));
	if (cancel_by_name[i])
		NameCancelEnded(cancel_run[i], ok, err);
	else if (!ok)
		CancelFailed(cancel_run[i], cancel_sig[i], err);
	cancel_run[i] = 0;
	cancel_by_name[i] = false;
}

/*
 * A free command of the scancel pool (the oldest's answer is read first),
 * for the job of run_id, or for the job named after it.
 */
static SlurmCmd *
NewCancelCmd(int64 run_id, int sig, bool by_name)
{
	for (int i = 0; i < CANCEL_CMDS; i++)
	{
		ReadCancel(i);
		if (!SlurmCmdBusy(&cancel_cmd[i]))
		{
			cancel_run[i] = run_id;
			cancel_sig[i] = sig;
			cancel_by_name[i] = by_name;
			return &cancel_cmd[i];
		}
	}
	return NULL;
}

/* Send the cancels by name that are owed and due, in the background. */
static void
StepNameCancels(void)
{
	TimestampTz now = EasemlMonotonicNow();
	char		err[256];

	for (int i = 0; i < n_name_cancels; i++)
	{
		int64		run_id = name_cancels[i].run_id;
		SlurmCmd   *cmd;

		if (name_cancels[i].in_flight || now < name_cancels[i].next)
			continue;
		/* this reads ended scancels: entries may move (NameCancelEnded) */
		cmd = NewCancelCmd(run_id, 0, true);
		if (cmd == NULL)
			return;				/* the pool is busy: at a later loop */
		if (SlurmCancelStart(0, run_id, false, cmd))
		{
			FindNameCancel(run_id)->in_flight = true;
			continue;
		}
		(void) SlurmCancelFinish(cmd, err, sizeof(err));
		cancel_run[cmd - cancel_cmd] = 0;
		cancel_by_name[cmd - cancel_cmd] = false;
		NameCancelEnded(run_id, false, err);
	}
}

void
SupervisorSlurmStep(void)
{
	/* Slurm commands killed after their timeout, reaped once they end */
	SlurmReapKilled();
	/* an squeue whose jobs all ended meanwhile is read (and reaped) here */
	if (SlurmCmdBusy(&queue_cmd))
		RefreshJobs();
	for (int i = 0; i < CANCEL_CMDS; i++)
		ReadCancel(i);
	StepNameCancels();
}

/*
 * End the database sessions of a trainer that has exited or is being
 * killed: its backend may still be running the tenant's query.
 */
static void
EndSessions(EasemlTrainer *t)
{
	int			n = TrainerSessionTerminate(t->run_id);

	if (n > 0)
		ereport(LOG,
				(errmsg("easeml: ended %d database session(s) left by the trainer of run %lld",
						n, (long long) t->run_id)));
}

/*
 * Check whether the trainer in a slot has ended, without blocking.
 * Returns true with *status set when it has.
 */
bool
SupervisorPoll(int slot, int *status)
{
	EasemlTrainer *t = &trainers[slot];
	pid_t		rc;

	if (t->job_id > 0)
	{
		if (!SlurmPoll(slot, t, status))
			return false;
		EndSessions(t);
		return true;
	}
	if (t->pid <= 0)
		return false;
	rc = waitpid(t->pid, status, WNOHANG);
	if (rc < 0 && errno != EINTR)
	{
		/* not our child any more: report it as lost rather than hang */
		*status = -1;
		rc = t->pid;
	}
	if (rc != t->pid)
		return false;
	EndSessions(t);
	return true;
}

/*
 * Send a signal to a trainer's whole process group; to a Slurm job,
 * SIGTERM is scancel (Slurm escalates after its KillWait) and SIGKILL is
 * scancel --signal=KILL.
 */
void
SupervisorSignal(int slot, int sig)
{
	EasemlTrainer *t = &trainers[slot];
	char		err[256];

	if (t->exited)
		return;
	if (t->job_id > 0)
	{
		/* in the background: its answer is read by SupervisorSlurmStep */
		SlurmCmd   *cmd = NewCancelCmd(t->run_id, sig, false);

		t->cancel_owed = 0;
		if (cmd == NULL || !SlurmCancelStart(t->job_id, 0, sig == SIGKILL, cmd))
		{
			if (cmd != NULL)
				(void) SlurmCancelFinish(cmd, err, sizeof(err));
			else
				snprintf(err, sizeof(err), "too many scancel commands under way");
			CancelFailed(t->run_id, sig, err);
		}
	}
	else if (t->pid > 0)
		(void) kill(-t->pid, sig);
}

/*
 * Ask a trainer to stop: SIGTERM now, SIGKILL after easeml.cancel_grace.
 * Call on every loop while the stop is pending.
 */
void
SupervisorStop(int slot, EasemlStopReason reason)
{
	EasemlTrainer *t = &trainers[slot];
	TimestampTz now = EasemlMonotonicNow();

	if (!SupervisorStarted(t))
		return;
	if (t->stop_reason == EASEML_STOP_NONE)
		t->stop_reason = reason;
	if (t->term_sent == 0)
	{
		SupervisorSignal(slot, SIGTERM);
		t->term_sent = now;
	}
	else if (!t->kill_sent &&
			 TimestampDifferenceExceeds(t->term_sent, now, easeml_cancel_grace))
	{
		SupervisorSignal(slot, SIGKILL);
		t->kill_sent = true;
		EndSessions(t);
	}
	else if (t->cancel_owed != 0 && now >= t->next_cancel)
		SupervisorSignal(slot, t->cancel_owed);	/* scancel failed: again */
}

/*
 * How long SupervisorStopAll and SupervisorProbeKill wait for a process
 * after SIGKILL.  One in uninterruptible sleep (a hung NFS mount or GPU
 * driver) does not die of it before it wakes: waiting for it would keep
 * the scheduler, and with it a fast shutdown of the server, from ever
 * ending.  It is left behind, and logged; it dies when it wakes.
 */
#define KILL_WAIT_MS 5000

/*
 * Stop every trainer process and wait for them, at scheduler exit.
 * Bounded: after the grace time everything left gets SIGKILL, and what
 * SIGKILL has not ended within KILL_WAIT_MS is left behind.  Slurm jobs
 * go on: the next scheduler takes them back (SupervisorAttach).
 */
void
SupervisorStopAll(void)
{
	TimestampTz start = EasemlMonotonicNow();
	TimestampTz killed_at = 0;
	bool		killed = false;

	SupervisorProbeKill();
	SlurmCommandsAtExit();
	/* Slurm's commands in the background; a submission may have made a job */
	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
	{
		if (trainers[i].submitting && SlurmCmdBusy(&slot_cmd[i]))
		{
			SlurmCmd	cancel;

			memset(&cancel, 0, sizeof(cancel));
			SlurmCmdFree(&slot_cmd[i]);
			/* left to finish on its own: its answer is not awaited */
			if (SlurmCancelStart(0, trainers[i].run_id, false, &cancel))
				ereport(LOG,
						(errmsg("easeml: run %lld: its submission was interrupted; cancelling any job it made (by its name)",
								(long long) trainers[i].run_id)));
		}
		SlurmCmdFree(&slot_cmd[i]);
	}
	SlurmCmdFree(&queue_cmd);
	for (int i = 0; i < CANCEL_CMDS; i++)
	{
		SlurmCmdFree(&cancel_cmd[i]);
		cancel_run[i] = 0;
		cancel_by_name[i] = false;
	}
	/* cancels by name still owed: sent once more, answers not awaited */
	for (int i = 0; i < n_name_cancels; i++)
	{
		SlurmCmd	cancel;

		memset(&cancel, 0, sizeof(cancel));
		if (SlurmCancelStart(0, name_cancels[i].run_id, false, &cancel))
			ereport(LOG,
					(errmsg("easeml: run %lld: cancelling any job its failed submission made (by its name), at exit",
							(long long) name_cancels[i].run_id)));
	}
	n_name_cancels = 0;
	/* a reaped trainer's group id may belong to another process by now */
	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		if (trainers[i].pid > 0 && !trainers[i].exited)
			SupervisorSignal(i, SIGTERM);

	for (;;)
	{
		int			left = 0;

		for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		{
			int			status;

			if (trainers[i].pid <= 0 || trainers[i].exited)
				continue;
			if (waitpid(trainers[i].pid, &status, WNOHANG) != 0)
				trainers[i].pid = 0;
			else
				left++;
		}
		if (left == 0)
			break;
		if (!killed && TimestampDifferenceExceeds(start, EasemlMonotonicNow(),
												  Min(easeml_cancel_grace, 2000)))
		{
			for (int i = 0; i < EASEML_MAX_SLOTS; i++)
				if (trainers[i].pid > 0 && !trainers[i].exited)
					SupervisorSignal(i, SIGKILL);
			killed = true;
			killed_at = EasemlMonotonicNow();
		}
		else if (killed &&
				 TimestampDifferenceExceeds(killed_at, EasemlMonotonicNow(), KILL_WAIT_MS))
		{
			StringInfoData pids;

			initStringInfo(&pids);
			for (int i = 0; i < EASEML_MAX_SLOTS; i++)
				if (trainers[i].pid > 0 && !trainers[i].exited)
					appendStringInfo(&pids, "%s%d (run %lld)", pids.len > 0 ? ", " : "",
									 (int) trainers[i].pid, (long long) trainers[i].run_id);
			ereport(LOG,
					(errmsg("easeml: %d trainer(s) still running %d s after SIGKILL, left behind: %s",
							left, KILL_WAIT_MS / 1000, pids.data),
					 errdetail("A process in uninterruptible sleep dies when it wakes; its run is recorded as interrupted when the scheduler starts again.")));
			break;
		}
		pg_usleep(10000L);
	}
	(void) TrainerSessionTerminate(0);
}

/* Describe a wait status in words, for the run's error text. */
void
SupervisorDescribeExit(int status, char *buf, size_t len)
{
	if (status == -1)
		snprintf(buf, len, "trainer process was lost (not a child of the scheduler)");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_SOURCE)
		snprintf(buf, len, "trainer could not read the task's rows (exit code %d)",
				 EASEML_EXIT_SOURCE);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_MODEL)
		snprintf(buf, len, "trainer cannot train this model (exit code %d)",
				 EASEML_EXIT_MODEL);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_DEVICE_OOM)
		snprintf(buf, len, "trainer ran out of device memory (exit code %d)",
				 EASEML_EXIT_DEVICE_OOM);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_DEVICE_UNAVAILABLE)
		snprintf(buf, len, "trainer could not use its device (exit code %d)",
				 EASEML_EXIT_DEVICE_UNAVAILABLE);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_MEMORY_LIMIT)
		snprintf(buf, len, "trainer went over its memory limit (exit code %d)",
				 EASEML_EXIT_MEMORY_LIMIT);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_DISCONNECTED)
		snprintf(buf, len, "trainer lost its database connection (exit code %d)",
				 EASEML_EXIT_DISCONNECTED);
	else if (WIFEXITED(status))
		snprintf(buf, len, "trainer exited with code %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "trainer was terminated by signal %d (%s)%s",
				 WTERMSIG(status), strsignal(WTERMSIG(status)),
#ifdef WCOREDUMP
				 WCOREDUMP(status) ? ", core dumped" : ""
#else
				 ""
#endif
			);
	else
		snprintf(buf, len, "trainer ended with status 0x%x", status);
}

/*
 * Reap a child just sent SIGKILL, waiting at most KILL_WAIT_MS: one in
 * uninterruptible sleep (the trainer's file on a hung NFS mount) would
 * otherwise hold its caller, deaf to cancels and shutdown, until it
 * wakes.  False when it is left behind.
 */
static bool
ReapKilled(pid_t pid, int *status)
{
	TimestampTz start = EasemlMonotonicNow();

	for (;;)
	{
		pid_t		rc = waitpid(pid, status, WNOHANG);

		if (rc == pid)
			return true;
		if (rc < 0 && errno != EINTR)
		{
			*status = -1;
			return true;
		}
		if (TimestampDifferenceExceeds(start, EasemlMonotonicNow(), KILL_WAIT_MS))
			return false;
		pg_usleep(10000L);
	}
}

/* Read a child's output until EOF, for at most timeout_ms. */
static bool
ReadChildOutput(int fd, StringInfo out, int timeout_ms)
{
	TimestampTz start = EasemlMonotonicNow();
	char		buf[1024];

	for (;;)
	{
		struct pollfd pfd = {fd, POLLIN, 0};
		int			rc;

		CHECK_FOR_INTERRUPTS();
		if (TimestampDifferenceExceeds(start, EasemlMonotonicNow(), timeout_ms))
			return false;
		rc = poll(&pfd, 1, 100);
		if (rc < 0 && errno != EINTR)
			return false;
		if (rc <= 0)
			continue;
		rc = read(fd, buf, sizeof(buf));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return true;
		/* the answer is one line: ignore anything past a page */
		if (out->len < 4096)
			appendBinaryStringInfo(out, buf, rc);
	}
}

/*
 * Ask the trainer whether it can train a model row: easeml-trainer
 * --check-model (src/trainer/tr_check.c), the one definition of families
 * and their parameters.  Called by backends (easeml._check_model).
 * Returns NULL when it can, else the trainer's reason; raises an error
 * when the trainer cannot be run or does not answer within 10 s.
 */
char *
SupervisorCheckModel(const char *family, const char *params,
					 const char *kinds, bool needs_image)
{
	char	   *path = SupervisorTrainerPath();
	char	   *argv[10];
	char	   *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C",
	"OPENBLAS_NUM_THREADS=1", NULL};
	int			n = 0;
	int			fds[2];
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	pid_t		pid;
	int			rc;
	int			status = 0;
	volatile bool answered = false;
	volatile bool reaped = false;
	StringInfoData out;

	argv[n++] = path;
	argv[n++] = EASEML_ARG_CHECK_MODEL;
	argv[n++] = unconstify(char *, family);
	argv[n++] = "--params";
	argv[n++] = unconstify(char *, params);
	argv[n++] = "--kinds";
	argv[n++] = unconstify(char *, kinds);
	if (needs_image)
		argv[n++] = "--needs-image";
	argv[n] = NULL;

	if (pipe2(fds, O_CLOEXEC) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create a pipe to the trainer: %m")));
	InitSpawnAttr(&attr, false);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
	fflush(NULL);
	rc = posix_spawn(&pid, path, &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (rc != 0)
	{
		close(fds[0]);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("could not run the trainer \"%s\" to check the model: %s",
						path, strerror(rc)),
				 errhint("Check easeml.trainer_path, or install easeml-trainer next to the postgres binary.")));
	}

	initStringInfo(&out);
	PG_TRY();
	{
		answered = ReadChildOutput(fds[0], &out, 10000);
	}
	PG_FINALLY();
	{
		/* never leave the child behind, whatever happened */
		close(fds[0]);
		(void) kill(pid, SIGKILL);
		reaped = ReapKilled(pid, &status);
	}
	PG_END_TRY();

	if (!reaped)
	{
		ereport(LOG,
				(errmsg("easeml: the trainer's model check (pid %d) is still running %d s after SIGKILL; left behind",
						(int) pid, KILL_WAIT_MS / 1000)));
		answered = false;
	}

	while (out.len > 0 && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == ' '))
		out.data[--out.len] = '\0';
	if (answered && WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_OK)
		return NULL;
	if (answered && WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_MODEL && out.len > 0)
		return out.data;
	{
		char		how[256];

		SupervisorDescribeExit(status, how, sizeof(how));
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("the trainer \"%s\" could not check the model: %s",
						path, answered ? how : "no answer within 10 s"),
				 out.len > 0 ? errdetail("%s", out.data) : 0));
	}
	return NULL;				/* keep the compiler quiet */
}

/*
 * Start the trainer's device probe (easeml-trainer --probe), its output to
 * out_path and its messages to log_path.  One probe at a time: false with
 * a message in err if one runs or it cannot be started.
 */
bool
SupervisorProbeStart(char *const argv[], char *const envp[],
					 const char *out_path, const char *log_path,
					 char *err, size_t errlen)
{
	int			rc;

	if (probe_pid > 0)
	{
		snprintf(err, errlen, "a device probe is already running (pid %d)", (int) probe_pid);
		return false;
	}
	rc = SpawnProcess(argv, envp, out_path, log_path, &probe_pid);
	if (rc != 0)
	{
		probe_pid = 0;
		snprintf(err, errlen, "could not start the device probe \"%s\": %s",
				 argv[0], strerror(rc));
		return false;
	}
	return true;
}

/*
 * Has the probe ended?  Returns true once, with *status set (-1 if it was
 * lost), without blocking; false while it runs or when none was started.
 */
bool
SupervisorProbePoll(int *status)
{
	pid_t		rc;

	if (probe_pid <= 0)
		return false;
	rc = waitpid(probe_pid, status, WNOHANG);
	if (rc == 0 || (rc < 0 && errno == EINTR))
		return false;
	if (rc < 0)
		*status = -1;
	probe_pid = 0;
	return true;
}

/*
 * Kill a probe that takes too long (or at exit) and reap it; one that
 * SIGKILL does not end within KILL_WAIT_MS (stuck in a GPU driver) is left
 * behind.
 */
void
SupervisorProbeKill(void)
{
	TimestampTz start = EasemlMonotonicNow();
	int			status;

	if (probe_pid <= 0)
		return;
	(void) kill(-probe_pid, SIGKILL);
	for (;;)
	{
		pid_t		rc = waitpid(probe_pid, &status, WNOHANG);

		if (rc == probe_pid || (rc < 0 && errno != EINTR))
			break;
		if (TimestampDifferenceExceeds(start, EasemlMonotonicNow(), KILL_WAIT_MS))
		{
			ereport(LOG,
					(errmsg("easeml: the device probe (pid %d) is still running %d s after SIGKILL; left behind",
							(int) probe_pid, KILL_WAIT_MS / 1000)));
			break;
		}
		pg_usleep(10000L);
	}
	probe_pid = 0;
}
