/*-------------------------------------------------------------------------
 *
 * easeml.c
 *	  Module entry point: configuration parameters, shared memory hooks and
 *	  registration of the scheduler background worker.
 *
 * _PG_init runs in the postmaster when easeml is in shared_preload_libraries.
 * Without preloading, SQL functions still work but nothing is scheduled.
 *
 * IDENTIFICATION
 *	  src/module/easeml.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <unistd.h>

#include <cblas.h>

#include "easeml.h"
#include "launcher_settings.h"
#include "rundir_setting.h"
#include "core/policy.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

/* OpenBLAS entry point; declared here because cblas.h does not in every build */
extern void openblas_set_num_threads(int num_threads);

char	   *easeml_database = NULL;
int			easeml_max_workers = 2;
int			easeml_naptime = 1000;
char	   *easeml_policy = NULL;
bool		easeml_enabled = true;
char	   *easeml_trainer_path = NULL;
char	   *easeml_trainer_conninfo = NULL;
char	   *easeml_run_directory = NULL;
int			easeml_trainer_threads = 1;
int			easeml_run_timeout = 0;
int			easeml_cancel_grace = 5000;
int			easeml_max_failures = 3;
int			easeml_trainer_memory_limit = -1;
int			easeml_max_parallel_per_tenant = -1;
int			easeml_run_budget = 5;
int			easeml_scheduler_log_retention = 0;
int			easeml_artifact_max_bytes = 16 * 1024;
bool		easeml_check_catalog = false;
int			easeml_predict_cache_models = 16;
int			easeml_ensemble_min_runs = 5;
int			easeml_generate_every = 3;
double		easeml_generate_margin = 1.0;
int			easeml_generate_max = 256;
int			easeml_generate_patience = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

static void
EasemlShmemRequestHook(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	EasemlShmemRequest();
}

static void
EasemlShmemStartupHook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	EasemlShmemStartup();
}

/*
 * Check hook: the policy must be a spec src/core/policy_spec.c parses.  The
 * setting is the one source of the policy: the scheduler, SHOW and
 * easeml.policy_status all read it.
 */
static bool
CheckPolicy(char **newval, void **extra, GucSource source)
{
	PolicyParams params;
	char		err[256];

	if (*newval == NULL)
		return true;			/* only before the default is set */
	if (PolicyParseSpec(*newval, &params, err, sizeof(err)) != POLICY_OK)
	{
		char		name[POLICY_SPEC_LEN];
		PolicyParams named;

		err[0] = pg_toupper((unsigned char) err[0]);
		GUC_check_errdetail("%s.", err);
		/* the name alone: is it auto (options after it are refused)? */
		strlcpy(name, *newval, sizeof(name));
		name[strcspn(name, ":")] = '\0';
		if (PolicyParseSpec(name, &named, NULL, 0) == POLICY_OK && named.auto_select)
			GUC_check_errhint("After auto only the options whose after_auto in easeml.policy_options() is \"applies to every candidate\" may follow; to set another, name a policy instead of auto.");
		else
			GUC_check_errhint("A policy is NAME[:OPTION]...: SELECT easeml.policies() lists the names, easeml.policy_options() the options.");
		return false;
	}
	return true;
}

/* What the scheduler decides with: its pace, policy and fair shares. */
static void
DefineSchedulerSettings(void)
{
	DefineCustomBoolVariable("easeml.enabled",
							 "Whether the scheduler starts new runs.",
							 "When off, running trainers finish but nothing new starts.",
							 &easeml_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.naptime",
							"Longest time the scheduler sleeps between checks.",
							"New tasks, cancels and finished trainers wake it earlier.",
							&easeml_naptime,
							1000, 10, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.wake_interval",
							"Shortest time between two wake-ups of the scheduler by committing transactions.",
							"Wake-ups closer together are folded into one at the end of the interval; 0: no limit.",
							&easeml_wake_interval,
							50, 0, 3600000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.max_workers",
							"Maximum number of trainer processes running at once.",
							"Each trainer occupies one slot (one device when easeml runs on GPUs).",
							&easeml_max_workers,
							2, 0, EASEML_MAX_SLOTS,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("easeml.policy",
							   "Scheduling policy used to pick the next task and candidate.",
							   "A spec NAME[:OPTION]...; the default, \"default\", is \"auto\": the better of "
							   POLICY_AUTO_CANDIDATES " by a replay on the history (" POLICY_AUTO_FALLBACK
							   " until it has chosen).  easeml.policy_status shows what runs; "
							   "easeml.policies() and easeml.policy_options() list the grammar.",
							   &easeml_policy,
							   "default",
							   PGC_SIGHUP, 0,
							   CheckPolicy, NULL, NULL);

	DefineCustomBoolVariable("easeml.check_catalog",
							 "Check every incremental catalog load of the scheduler against a full one.",
							 "A developer's check (docs/scheduler.md): each scheduling step loads the "
							 "catalog twice in one snapshot and logs whether the loads are equal.",
							 &easeml_check_catalog,
							 false,
							 PGC_SIGHUP, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.max_parallel_per_tenant",
							"Most trainers one tenant may run at a time.",
							"-1 (the default) means a fair share of easeml.max_workers, "
							"rounded up, while several tenants have work waiting; 0 means no cap.  "
							"A tenant's own max_parallel (easeml.add_tenant) caps it further.",
							&easeml_max_parallel_per_tenant,
							-1, -1, EASEML_MAX_SLOTS,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.run_budget",
							"Time a run may hold a slot while another tenant waits below its fair share.",
							"When every slot is busy and a tenant waits below its fair share, the "
							"longest-running trainer of a tenant above its share that has run longer "
							"than this and than twice its estimate (doubled for every earlier "
							"preemption of the same candidate) is stopped and its run marked "
							"interrupted; the candidate is tried again later.  0 turns it off.",
							&easeml_run_budget,
							5, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.scheduler_log_retention",
							"Age after which the scheduler removes its own log.",
							"Decisions and their runner-ups, launch records of ended runs and the "
							"auto policy's choices older than this are removed in small batches "
							"(easeml.purge_scheduler_log); runs, their events and results stay.  "
							"0 keeps them forever.",
							&easeml_scheduler_log_retention,
							0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MIN,
							NULL, NULL, NULL);
}

/* How trainers are started, limited and retried. */
static void
DefineTrainerSettings(void)
{
	DefineCustomStringVariable("easeml.trainer_path",
							   "Trainer executable the scheduler launches.",
							   "Empty means easeml-trainer in the server's bin directory.",
							   &easeml_trainer_path,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("easeml.trainer_conninfo",
							   "Extra libpq connection settings for trainers.",
							   "Appended to the default (the server's socket, port and database, as the bootstrap superuser).",
							   &easeml_trainer_conninfo,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("easeml.run_directory",
							   "Directory for trainer logs and results, relative to the data directory.",
							   "Never the data directory, anything PostgreSQL keeps in it or a "
							   "tablespace: the scheduler removes the directories of gone runs there.",
							   &easeml_run_directory,
							   EASEML_RUN_DIRECTORY_DEFAULT,
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckRunDirectory, NULL, NULL);

	DefineCustomIntVariable("easeml.trainer_threads",
							"BLAS threads each trainer may use.",
							NULL,
							&easeml_trainer_threads,
							1, 1, 256,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.run_timeout",
							"Longest a trainer may run before it is stopped and its run failed.",
							"0 disables the limit.",
							&easeml_run_timeout,
							0, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.cancel_grace",
							"Time between SIGTERM and SIGKILL when stopping a trainer.",
							NULL,
							&easeml_cancel_grace,
							5000, 0, 600000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.max_failures",
							"Failed runs in a row, with no success, after which a task is marked failed.",
							NULL,
							&easeml_max_failures,
							3, 1, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.trainer_memory_limit",
							"Memory each trainer may allocate; a run over it fails with reason \"memory limit\".",
							"-1 (the default) means half of this machine's memory (or of its "
							"cgroup's limit) divided by easeml.max_workers, at least 256 MB; 0 means no limit.  "
							"Enforced as the trainer's RLIMIT_DATA; candidates whose predicted "
							"memory exceeds it are not scheduled.",
							&easeml_trainer_memory_limit,
							-1, -1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);
}

/*
 * The memory of this machine, or of the cgroup (v2) the server runs in
 * when that is lower; 0 when unknown.  Read once per process.
 */
static double
MachineMemoryBytes(void)
{
	static double known = -1;
	long		pages;
	long		page;
	double		bytes;
	FILE	   *f;

	if (known >= 0)
		return known;
	pages = sysconf(_SC_PHYS_PAGES);
	page = sysconf(_SC_PAGESIZE);
	bytes = (pages > 0 && page > 0) ? (double) pages * page : 0;
	f = fopen("/sys/fs/cgroup/memory.max", "r");
	if (f != NULL)
	{
		char		line[64];

		if (fgets(line, sizeof(line), f) != NULL && line[0] >= '0' && line[0] <= '9')
		{
			double		cg = strtod(line, NULL);

			if (cg > 0 && (bytes == 0 || cg < bytes))
				bytes = cg;
		}
		fclose(f);
	}
	known = bytes;
	return bytes;
}

/*
 * The memory cap of each trainer in bytes (easeml.trainer_memory_limit),
 * 0 for none.  The default shares half of the machine among the trainers
 * that may run at once, leaving the other half to PostgreSQL (shared
 * buffers, the backends that serve the trainers' COPY) and the page cache.
 */
double
EasemlTrainerMemoryLimitBytes(void)
{
	double		bytes;

	if (easeml_trainer_memory_limit == 0)
		return 0;
	if (easeml_trainer_memory_limit > 0)
		return (double) easeml_trainer_memory_limit * 1024 * 1024;
	bytes = MachineMemoryBytes();
	if (bytes <= 0)
		return 0;
	return Max(bytes / 2 / Max(easeml_max_workers, 1), 256.0 * 1024 * 1024);
}

/* What is kept of a run's model and how predict caches it. */
static void
DefineResultSettings(void)
{
	DefineCustomIntVariable("easeml.artifact_max_bytes",
							"Largest artifact (trained parameters) kept for every succeeded run.",
							"Larger artifacts are kept only for the best run of each task.",
							&easeml_artifact_max_bytes,
							16 * 1024, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.ensemble_min_runs",
							"Succeeded runs of a task after which an ensemble of them is built.",
							"An ensemble is built again each time as many more runs succeeded; "
							"0 builds none (docs/models.md, \"Ensembles\").",
							&easeml_ensemble_min_runs,
							5, 0, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.generate_every",
							"Succeeded runs of a budgeted task between two looks for a new configuration before its grid is spent.",
							"0 generates new configurations only once every candidate was tried "
							"(docs/scheduler.md 7.9).",
							&easeml_generate_every,
							3, 0, 1000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomRealVariable("easeml.generate_margin",
							 "Factor by which a proposal's acquisition must exceed the best untried candidate's.",
							 "A budgeted task gets the proposal before its grid is spent only when its "
							 "acquisition is more than this times the best untried candidate's "
							 "(docs/scheduler.md 7.9).",
							 &easeml_generate_margin,
							 1.0, 0.0, 1000.0,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	/*
	 * [budgetuse] easeml._propose_candidates, easeml._add_generated and
	 * easeml._generate_stop read these two with current_setting: the
	 * setting is the one source of truth for the scheduler (the same
	 * backend) and for an admin calling the functions by hand.
	 */
	DefineCustomIntVariable("easeml.generate_max",
							"Most generated candidates a task may have.",
							"A budgeted task gets no further round of new configurations once it has "
							"this many; 0 generates none (docs/scheduler.md 7.9).",
							&easeml_generate_max,
							256, 0, 100000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.generate_patience",
							"Generated candidates of a task that finished without improving its best score after which it gets no more.",
							"When none of the task's last this many finished generated candidates scored "
							"higher than its best before them, the task completes (converged); "
							"0 turns this off (docs/scheduler.md 7.9).",
							&easeml_generate_patience,
							0, 0, 100000,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("easeml.predict_cache_models",
							"Parsed models a session keeps for easeml.predict.",
							"Beyond this many, the least recently used model is freed "
							"and parsed again from its artifact when next needed.",
							&easeml_predict_cache_models,
							16, 1, 100000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

/*
 * Module load callback.
 */
void
_PG_init(void)
{
	BackgroundWorker worker;

	if (IsBinaryUpgrade)
		return;

	/*
	 * BLAS in a server process stays single-threaded: a thread pool per
	 * backend would multiply threads by connections (postgresml#1161).
	 */
	openblas_set_num_threads(1);

	LauncherDefineSettings();
	DefineSchedulerSettings();
	DefineTrainerSettings();
	DefineResultSettings();

	if (!process_shared_preload_libraries_in_progress)
	{
		MarkGUCPrefixReserved("easeml");
		return;
	}

	DefineCustomStringVariable("easeml.database",
							   "Database the scheduler connects to.",
							   "easeml must be created in this database.",
							   &easeml_database,
							   "postgres",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved("easeml");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = EasemlShmemRequestHook;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = EasemlShmemStartupHook;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "easeml");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "EasemlSchedulerMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, "easeml scheduler");
	snprintf(worker.bgw_type, BGW_MAXLEN, "easeml scheduler");
	RegisterBackgroundWorker(&worker);
}
