/*-------------------------------------------------------------------------
 *
 * launch.c
 *	  Launching a run's trainer: its connection string and environment,
 *	  the launch by the launcher easeml.launcher names (through
 *	  src/worker/supervisor.c), recording where it runs or why it could
 *	  not start, the Slurm submissions under way, and the Slurm jobs taken
 *	  back after a restart.
 *
 * IDENTIFICATION
 *	  src/worker/launch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog.h"
#include "devices.h"
#include "module/easeml.h"
#include "core/gp.h"
#include "liveworld.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "module/monoclock.h"
#include "pgstat.h"
#include "core/policy.h"
#include "policy_choice.h"
#include "retention.h"
#include "rundir.h"
#include "scheduler.h"
#include "storage/spin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "supervisor.h"
#include "tcop/tcopprot.h"
#include "trainer_jobs.h"
#include "core/trainer_protocol.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/*
 * A launch that may succeed later (the launcher's cluster could not take
 * it, this machine could not start a process) pauses launches
 * (RecordFailedLaunch).
 */
#define LAUNCH_BACKOFF_MS 10000
#define LAUNCH_BACKOFF_MAX_MS 160000
static TimestampTz launch_backoff_until = 0;	/* no launches before */
static int	launch_failures = 0;	/* unreachable launcher, in a row */

/*
 * A launch whose record failed (a tenant's transaction holds a lock on its
 * run's row): per slot its run, recorded again at the next try (at most
 * once a second) by FinishSubmissions, so that a Slurm job id is never
 * left unrecorded.  What a try records is all in the slot (its pid, log
 * and job id; the device was recorded with the claim), so a retry records
 * the same as the first try.
 */
#define RECORD_RETRY_MS 1000
static int64 unrecorded_run[EASEML_MAX_SLOTS];
static TimestampTz unrecorded_retry[EASEML_MAX_SLOTS];

/* Append key='value' to a libpq conninfo string, quoting as libpq wants. */
static void
AppendConnOption(StringInfo buf, const char *key, const char *value)
{
	appendStringInfo(buf, "%s%s='", buf->len > 0 ? " " : "", key);
	for (const char *p = value; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
}

/*
 * A run's length is easeml.run_timeout's to bound: statement and idle
 * timeouts set for clients (postgresql.conf, ALTER ROLE or DATABASE) must
 * not end a trainer's session while it trains (docs/operations.md).
 */
#define TRAINER_NO_TIMEOUTS " -c statement_timeout=0" \
	" -c idle_in_transaction_session_timeout=0 -c idle_session_timeout=0"

/* Connection string for trainers: this server's socket, port and database. */
static char *
TrainerConninfo(void)
{
	StringInfoData buf;
	char		host[MAXPGPATH] = "localhost";
	char		port[16];

	if (Unix_socket_directories && Unix_socket_directories[0] != '\0')
	{
		/* first entry of the comma-separated list */
		const char *s = Unix_socket_directories;
		int			i = 0;

		while (*s == ' ')
			s++;
		while (s[i] && s[i] != ',' && i < MAXPGPATH - 1)
		{
			host[i] = s[i];
			i++;
		}
		while (i > 0 && host[i - 1] == ' ')
			i--;
		host[i] = '\0';
		if (i == 0)
			strlcpy(host, "localhost", sizeof(host));
	}
	snprintf(port, sizeof(port), "%d", PostPortNumber);

	initStringInfo(&buf);
	AppendConnOption(&buf, "host", host);
	AppendConnOption(&buf, "port", port);
	AppendConnOption(&buf, "dbname", easeml_database);
	AppendConnOption(&buf, "user", Sched.bootstrap_user);
	AppendConnOption(&buf, "application_name", "easeml trainer");
	/*
	 * The trainer is a superuser too: names resolve in pg_catalog only.  A
	 * tenant's open transaction may hold a lock on its run's row: progress
	 * reports skip such a row (easeml_trainer.progress), and the result
	 * gives up after a while (the scheduler records it from its backlog)
	 * instead of stalling the trainer.  A
	 * backend whose trainer is gone stops its query within a second even
	 * if the scheduler could not end the session (it ends it at once when
	 * it reaps the trainer).
	 */
	AppendConnOption(&buf, "options", "-c search_path=pg_catalog,pg_temp -c lock_timeout=10s"
					 " -c client_connection_check_interval=1s" TRAINER_NO_TIMEOUTS);
	if (easeml_trainer_conninfo && easeml_trainer_conninfo[0] != '\0')
		appendStringInfo(&buf, " %s", easeml_trainer_conninfo);
	return buf.data;
}


/*
 * The trainer's environment: nothing inherited from the postmaster but
 * HOME and TZ, and for a Slurm job not even those (sbatch --export names
 * what travels).  envp must hold 20 entries.
 */
static void
TrainerEnvironment(char **envp, int64 run_id, const char *token,
				   const CatDevice *device, bool slurm)
{
	int			ne = 0;
	const char *home = getenv("HOME");
	const char *tz = getenv("TZ");
	bool		cuda = strcmp(device->kind, EASEML_KIND_CUDA) == 0;

	envp[ne++] = psprintf("%s=%s", EASEML_ENV_CONNINFO, TrainerConninfo());
	envp[ne++] = psprintf("%s=%lld", EASEML_ENV_RUN_ID, (long long) run_id);
	envp[ne++] = psprintf("%s=%s", EASEML_ENV_RUN_TOKEN, token);
	envp[ne++] = psprintf("%s=%s", EASEML_ENV_DEVICE, device->name);
	envp[ne++] = psprintf("%s=%s", EASEML_ENV_DEVICE_KIND, device->kind);
	envp[ne++] = psprintf("%s=%d", EASEML_ENV_TIME_LIMIT, easeml_run_timeout);
	envp[ne++] = psprintf("%s=%.0f", EASEML_ENV_MEMORY_LIMIT, EasemlTrainerMemoryLimitBytes());
	envp[ne++] = psprintf("%s=%d", EASEML_ENV_CANCEL_GRACE, easeml_cancel_grace);
	envp[ne++] = psprintf("OPENBLAS_NUM_THREADS=%d", easeml_trainer_threads);
	envp[ne++] = psprintf("OMP_NUM_THREADS=%d", easeml_trainer_threads);
	envp[ne++] = "LC_ALL=C";
	if (!slurm)
	{
		envp[ne++] = psprintf("%s=%d", EASEML_ENV_SCHEDULER_PID, (int) MyProcPid);
		envp[ne++] = cuda ? psprintf("%s=%d", EASEML_ENV_CUDA_VISIBLE, device->ordinal) :
			psprintf("%s=", EASEML_ENV_CUDA_VISIBLE);
		envp[ne++] = "PATH=/usr/local/bin:/usr/bin:/bin";
		if (home)
			envp[ne++] = psprintf("HOME=%s", home);
		if (tz)
			envp[ne++] = psprintf("TZ=%s", tz);
	}
	envp[ne] = NULL;
}

/*
 * A launch that failed: an unreachable cluster or one that refused the job
 * (src/worker/launch_slurm.c), or a trainer this machine could not start
 * (out of processes, memory or disk space at the moment:
 * src/worker/supervisor.c), interrupts the run (its candidate is trained
 * again, a tenant's request queued again) and pauses launches for
 * LAUNCH_BACKOFF_MS, doubled for each such failure in a row up to
 * LAUNCH_BACKOFF_MAX_MS, instead of burning one candidate after another;
 * anything else fails it.
 */
static void
RecordFailedLaunch(int64 run_id, bool transient, const char *err)
{
	CatalogBegin("easeml: recording a failed launch");
	if (transient)
	{
		int			ms = LAUNCH_BACKOFF_MS;

		CatalogFinishRun(run_id, "interrupted", INT_MIN, NULL,
						 psprintf("interrupted: %s", err));
		/* no trainer ever ran: no try of the request, however many */
		CatalogRequeueInterrupted(run_id, true);
		for (int i = 0; i < launch_failures && ms < LAUNCH_BACKOFF_MAX_MS; i++)
			ms *= 2;
		launch_failures++;
		launch_backoff_until = TimestampTzPlusMilliseconds(EasemlMonotonicNow(),
														   Min(ms, LAUNCH_BACKOFF_MAX_MS));
	}
	else
		CatalogRunFailedToStart(run_id, err);
	CatalogCommit();
}

/* Record where the trainer in a slot runs (for Guarded). */
static void
RecordLaunchedStep(void *arg)
{
	int			slot = *(int *) arg;
	EasemlTrainer *t = SupervisorSlot(slot);

	CatalogBegin("easeml: recording a launch");
	CatalogRunStarted(t->run_id, (int) t->pid, t->log_path);
	if (t->job_id > 0)
		TrainerJobSubmitted(t->run_id, t->job_id);
	CatalogCommit();
	if (t->job_id > 0)
		ereport(LOG, (errmsg("easeml: run %lld submitted in slot %d to %s (Slurm job %lld)",
							 (long long) t->run_id, slot, t->device, (long long) t->job_id)));
	else
		ereport(LOG, (errmsg("easeml: run %lld started in slot %d on %s (pid %d)",
							 (long long) t->run_id, slot, t->device, (int) t->pid)));
}

/*
 * The launch of the trainer in a slot is under way: record where it runs
 * (its Slurm job id).  A record that fails is tried again
 * (FinishSubmissions) rather than ending the loop's iteration.
 */
static void
RecordLaunched(int slot)
{
	EasemlTrainer *t = SupervisorSlot(slot);

	if (Guarded(RecordLaunchedStep, &slot))
	{
		unrecorded_run[slot] = 0;
		return;
	}
	if (unrecorded_run[slot] != t->run_id)
		ereport(LOG,
				(errmsg("easeml: run %lld: its launch could not be recorded yet; it will be retried",
						(long long) t->run_id)));
	unrecorded_run[slot] = t->run_id;
	unrecorded_retry[slot] = TimestampTzPlusMilliseconds(EasemlMonotonicNow(), RECORD_RETRY_MS);
}

/*
 * Read the answers of the Slurm submissions under way (sbatch runs in the
 * background, src/worker/supervisor.c): record the job of each one that was
 * accepted, and the failure of each one that was not.  The loop never
 * waits for sbatch.
 */
void
FinishSubmissions(void)
{
	for (int slot = 0; slot < EASEML_MAX_SLOTS; slot++)
	{
		EasemlTrainer *t = SupervisorSlot(slot);
		char		err[512];
		bool		transient;
		int64		run_id = t->run_id;

		if (unrecorded_run[slot] != 0)
		{
			/* a launch whose record failed: again, while its trainer runs */
			if (t->run_id != unrecorded_run[slot] || !SupervisorStarted(t) || t->exited)
				unrecorded_run[slot] = 0;
			else if (EasemlMonotonicNow() >= unrecorded_retry[slot])
				RecordLaunched(slot);
		}
		if (!t->submitting)
			continue;
		switch (SupervisorSubmitted(slot, &transient, err, sizeof(err)))
		{
			case SUBMIT_NONE:
			case SUBMIT_PENDING:
				break;
			case SUBMIT_DONE:
				launch_failures = 0;
				Sched.world_changed = true;
				RecordLaunched(slot);
				break;
			case SUBMIT_FAILED:
				SupervisorRelease(slot);
				Sched.world_changed = true;
				ereport(WARNING, (errmsg("easeml: run %lld: %s", (long long) run_id, err)));
				RecordFailedLaunch(run_id, transient, err);
				break;
		}
	}
	SupervisorSlurmStep();
}

/*
 * Launch the trainer of a run already recorded as 'running' in a slot on a
 * device, with the launcher easeml.launcher names (src/worker/launcher.h).  The
 * trainer sees only its own GPU (CUDA_VISIBLE_DEVICES; on Slurm, Slurm
 * sets it for the GPU it grants), none on the CPU.  It proves it is the
 * run's trainer with a fresh token, recorded first (src/worker/trainer_jobs.c).
 */
void
LaunchRun(int64 run_id, int slot, const CatDevice *device)
{
	char	   *path = SupervisorTrainerPath();
	char	   *dir = RunDirectory(run_id);
	char	   *token = TrainerTokenNew();
	char		err[512];
	char	   *argv[6];
	char	   *envp[20];
	bool		slurm = easeml_launcher == EASEML_LAUNCHER_SLURM;
	bool		transient;
	LaunchRequest req;

	/* what travels to a Slurm job (sbatch --export): never HOME or PATH */
	static const char *const exports[] = {
		EASEML_ENV_CONNINFO, EASEML_ENV_RUN_ID, EASEML_ENV_RUN_TOKEN,
		EASEML_ENV_DEVICE, EASEML_ENV_DEVICE_KIND, EASEML_ENV_TIME_LIMIT,
		EASEML_ENV_MEMORY_LIMIT, EASEML_ENV_CANCEL_GRACE, "OPENBLAS_NUM_THREADS",
		"OMP_NUM_THREADS", "LC_ALL", NULL
	};

	argv[0] = path;
	argv[1] = EASEML_ARG_RUN;
	argv[2] = psprintf("%lld", (long long) run_id);
	argv[3] = EASEML_ARG_RUN_DIR;
	argv[4] = dir;
	argv[5] = NULL;

	TrainerEnvironment(envp, run_id, token, device, slurm);

	memset(&req, 0, sizeof(req));
	req.run_id = run_id;
	req.device = device->name;
	req.device_kind = device->kind;
	req.run_dir = dir;
	req.argv = argv;
	req.envp = envp;
	req.export_names = exports;
	req.time_limit = easeml_run_timeout;

	CatalogBegin("easeml: recording a launch's token");
	TrainerJobRecord(run_id, LauncherName(easeml_launcher), token);
	CatalogCommit();

	pgstat_report_activity(STATE_RUNNING, "easeml: launching a trainer");
	SupervisorReserve(slot, run_id, device->name);
	if (!SupervisorLaunch(slot, &req, &transient, err, sizeof(err)))
	{
		SupervisorRelease(slot);
		ereport(WARNING,
				(errmsg("easeml: run %lld: %s", (long long) run_id, err),
				 transient ? errdetail("The run is recorded as interrupted and its candidate trained again; launches pause for a while.") : 0));
		RecordFailedLaunch(run_id, transient, err);
		return;
	}

	/* sbatch answers later (FinishSubmissions) */
	if (SupervisorSlot(slot)->submitting)
	{
		ereport(DEBUG1, (errmsg("easeml: run %lld: submitting in slot %d to %s",
								(long long) run_id, slot, device->name)));
		return;
	}
	launch_failures = 0;
	RecordLaunched(slot);
}

/*
 * After a restart, take back the runs whose Slurm jobs outlived the
 * previous scheduler, before anything marks runs left running as
 * interrupted: a job still alive is followed again (never submitted
 * twice); one that ended, or that Slurm forgot, is recorded from its
 * trainer's report and Slurm's words like any other (BuildResult,
 * src/worker/results.c).
 * Returns how many runs were taken back; their ids go to keep.
 */
int
ReattachJobs(int64 *keep, int max)
{
	TrainerJobInFlight *jobs;
	int			n;
	int			kept = 0;

	n = TrainerJobsInFlight(LauncherName(EASEML_LAUNCHER_SLURM), CurrentMemoryContext, &jobs);
	for (int i = 0; i < n && kept < max; i++)
	{
		int			slot = -1;

		/* a retry after a failed first call: the job is followed already */
		for (int s = 0; s < EASEML_MAX_SLOTS && slot < 0; s++)
			if (SupervisorSlot(s)->run_id == jobs[i].run_id)
				slot = s;
		if (slot >= 0)
		{
			keep[kept++] = jobs[i].run_id;
			continue;
		}
		slot = SupervisorFreeSlot();
		if (slot < 0)
			break;
		SupervisorAttach(slot, jobs[i].run_id, jobs[i].device, jobs[i].job_id,
						 jobs[i].started);
		keep[kept++] = jobs[i].run_id;
		ereport(LOG,
				(errmsg("easeml: run %lld: following its Slurm job %lld again",
						(long long) jobs[i].run_id, (long long) jobs[i].job_id)));
	}
	return kept;
}


/*
 * Can the launcher start a run: the local launcher the trainer, the Slurm
 * launcher sbatch (<easeml.slurm_bindir>/sbatch, /usr/bin/sbatch when it is
 * empty; the trainer runs on the nodes)?  While it cannot (a wrong
 * easeml.trainer_path or easeml.slurm_bindir, a program not installed)
 * nothing is claimed or launched: every launch would fail.  Said once, a
 * WARNING, when it stops being runnable, and once, in the log, when it is
 * again.
 */
static bool
TrainerUnusable(void)
{
	static char *unusable = NULL;	/* the path last found unusable */
	bool		slurm = easeml_launcher == EASEML_LAUNCHER_SLURM;
	char	   *path;
	int			save_errno;

	path = slurm ? SlurmSbatchPath() : SupervisorTrainerPath();
	if (access(path, X_OK) == 0)
	{
		if (unusable != NULL)
		{
			ereport(LOG,
					(errmsg("easeml: %s \"%s\" can be run; launches resume",
							slurm ? "sbatch" : "the trainer", path)));
			pfree(unusable);
			unusable = NULL;
		}
		pfree(path);
		return false;
	}
	save_errno = errno;
	if (unusable == NULL || strcmp(unusable, path) != 0)
	{
		if (unusable != NULL)
			pfree(unusable);
		unusable = MemoryContextStrdup(TopMemoryContext, path);
		errno = save_errno;
		if (slurm)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIG_FILE_ERROR),
					 errmsg("easeml: sbatch \"%s\" cannot be run: %m; no run is launched until it can", path),
					 errhint("Check easeml.slurm_bindir (empty: /usr/bin), or install Slurm's client commands there.")));
		else
			ereport(WARNING,
					(errcode(ERRCODE_CONFIG_FILE_ERROR),
					 errmsg("easeml: the trainer \"%s\" cannot be run: %m; no run is launched until it can", path),
					 errhint("Check easeml.trainer_path, or install easeml-trainer next to the postgres binary.")));
	}
	pfree(path);
	return true;
}

/*
 * Are launches paused (the launcher's cluster could not be reached, or
 * this machine could not start a trainer, a moment ago; the trainer cannot
 * be run)?
 */
bool
LaunchBackoffActive(void)
{
	/* first: its WARNING is due at once, not after a pause */
	bool		unusable = TrainerUnusable();

	return unusable || launch_backoff_until > EasemlMonotonicNow();
}
