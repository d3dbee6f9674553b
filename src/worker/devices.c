/*-------------------------------------------------------------------------
 *
 * devices.c
 *	  The scheduler's devices: the trainer's probe that fills
 *	  easeml.devices, the free slots of each device, and where each run
 *	  goes.
 *
 * Devices.  At start (and on easeml.probe_devices(), or after a trainer
 * reported its GPU unusable) the scheduler runs `easeml-trainer --probe`
 * through the supervisor, without blocking its loop: the trainer is the
 * only process that may initialise CUDA.  Its JSON output is recorded by
 * easeml._record_probe(); a probe that fails or takes longer than
 * PROBE_TIMEOUT_MS leaves only the CPU, and one that could not be started
 * is tried again later.  Nothing is scheduled before the first probe is
 * recorded.
 *
 * Slots.  A device holds easeml._device_slots() runs at once (its slots
 * setting, else easeml.max_workers for the CPU and one per GPU); disabled
 * or absent devices hold none.  The supervisor's slot table records the
 * device of each run, so the free slots of a device are its slots minus
 * the runs the supervisor holds on it.
 *
 * Placement.  Before each decision the decision world (src/core/decision_*.c)
 * learns which candidates can start now (src/core/placement.c: the first of
 * its device kinds with a free device) and the cost factor of that kind,
 * so the policy only picks candidates that can start now, at the cost
 * they have on that device.  The chosen one goes to a free device of
 * that kind that did not fail it before.  Candidates no usable device can
 * ever run are done for their task, so tasks can complete.
 *
 * Costs per device kind.  The world's cost model is fitted on CPU times
 * (src/worker/catalog_load.c loads those only); a candidate's time on another kind is
 * its CPU estimate times that kind's factor: the ratio of its measured
 * seconds per cell on that kind to those on the CPU, or the same ratio
 * over every candidate measured on both while it has none, or 1 before
 * anything ran on that kind (CatalogLoadPlacement).
 *
 * Only the local launcher's devices are filled here; Slurm's partitions
 * are rows of launcher 'slurm' (easeml.set_slurm_partition), placed on
 * while easeml.launcher is slurm.
 *
 * IDENTIFICATION
 *	  src/worker/devices.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catalog.h"
#include "devices.h"
#include "launcher.h"
#include "module/easeml.h"
#include "lib/stringinfo.h"
#include "liveworld.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "module/monoclock.h"
#include "core/placement.h"
#include "rundir.h"
#include "storage/spin.h"
#include "supervisor.h"
#include "core/trainer_protocol.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#define PROBE_TIMEOUT_MS 30000
#define PROBE_LOG_FILE "probe.log"
/*
 * A probe that could not even be started (the trainer not installed yet,
 * the machine out of processes for a moment) is tried again after
 * PROBE_RETRY_MS, doubled each time up to PROBE_RETRY_MAX_MS, so that a
 * passing fault does not leave a GPU machine on its CPU until an admin
 * calls easeml.probe_devices().
 */
#define PROBE_RETRY_MS 10000
#define PROBE_RETRY_MAX_MS 600000

typedef enum ProbeState
{
	PROBE_NEEDED,				/* start one at the next step */
	PROBE_RUNNING,
	PROBE_IDLE
} ProbeState;

static ProbeState probe_state = PROBE_NEEDED;
static TimestampTz probe_started = 0;
static uint32 probe_requests_seen = 0;
static bool probe_requests_read = false;
static bool devices_known = false;	/* a probe was recorded */
static TimestampTz probe_retry_at = 0;	/* when to try a probe that could not start */
static int	probe_retry_ms = 0;
static bool devices_stale = true;

/* the local devices, GPUs first; names live in devices_context */
static CatDevice devices[EASEML_MAX_SLOTS];
static int	n_devices = 0;
static MemoryContext devices_context = NULL;

/* The probe's output, or NULL if missing, too long or not valid text. */
static char *
ReadProbeOutput(const char *path)
{
	int			fd = open(path, O_RDONLY | PG_BINARY, 0);
	struct stat st;
	char	   *buf;
	ssize_t		n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || st.st_size > EASEML_MAX_RESULT_FILE)
	{
		close(fd);
		return NULL;
	}
	buf = palloc(st.st_size + 1);
	n = read(fd, buf, st.st_size);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	if (!pg_verify_mbstr(GetDatabaseEncoding(), buf, n, true))
		return NULL;
	return buf;
}

/* Record a probe's output (NULL: only the CPU) and reload the devices. */
static void
RecordProbe(const char *output)
{
	int			n;
	StringInfoData names;

	/* if recording fails (the error aborts this step), probe again */
	probe_state = PROBE_NEEDED;
	CatalogBegin("easeml: recording the device probe");
	n = CatalogRecordProbe(output, EASEML_PROTOCOL_VERSION);
	CatalogCommit();
	probe_state = PROBE_IDLE;
	devices_known = true;
	DevicesReload();

	initStringInfo(&names);
	for (int i = 0; i < n_devices; i++)
		if (devices[i].usable)
			appendStringInfo(&names, "%s%s", names.len ? ", " : "", devices[i].name);
	ereport(LOG,
			(errmsg("easeml: device probe: %d device(s) present%s%s", n,
					names.len ? "; usable: " : "", names.data)));
}

/* A probe could not be started: the CPU only for now, and try again later. */
static void
ProbeNotStarted(void)
{
	probe_retry_ms = probe_retry_ms == 0 ? PROBE_RETRY_MS :
		Min(2 * probe_retry_ms, PROBE_RETRY_MAX_MS);
	RecordProbe(NULL);
	probe_retry_at = TimestampTzPlusMilliseconds(EasemlMonotonicNow(), probe_retry_ms);
}

/*
 * Start `easeml-trainer --probe`; when it cannot start, record a CPU-only
 * probe and try again later.
 */
static void
StartProbe(void)
{
	char	   *base = RunBaseDirectory();
	char	   *out = psprintf("%s/%s", base, EASEML_FILE_PROBE);
	char	   *log = psprintf("%s/%s", base, PROBE_LOG_FILE);
	char	   *argv[3];
	char	   *envp[4];
	int			ne = 0;
	const char *home = getenv("HOME");
	char		err[512];
	int			rc;

	argv[0] = SupervisorTrainerPath();
	argv[1] = EASEML_ARG_PROBE;
	argv[2] = NULL;
	envp[ne++] = "PATH=/usr/local/bin:/usr/bin:/bin";
	envp[ne++] = "LC_ALL=C";
	if (home)
		envp[ne++] = psprintf("HOME=%s", home);
	envp[ne] = NULL;

	rc = RunBaseCreate();
	if (rc != 0)
	{
		errno = rc;				/* for %m */
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("easeml: could not create directory \"%s\": %m", base),
				 errdetail("The devices are probed again later.")));
		ProbeNotStarted();
		return;
	}
	(void) unlink(out);
	if (!SupervisorProbeStart(argv, envp, out, log, err, sizeof(err)))
	{
		ereport(WARNING,
				(errmsg("easeml: %s; using the CPU only", err),
				 errdetail("The devices are probed again later.")));
		ProbeNotStarted();
		return;
	}
	probe_retry_at = 0;
	probe_retry_ms = 0;
	probe_state = PROBE_RUNNING;
	probe_started = EasemlMonotonicNow();
}

/* Check on a running probe; record its result once it ended. */
static void
PollProbe(void)
{
	int			status;
	char	   *base = RunBaseDirectory();

	if (SupervisorProbePoll(&status))
	{
		char	   *output = NULL;

		if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == EASEML_EXIT_OK)
			output = ReadProbeOutput(psprintf("%s/%s", base, EASEML_FILE_PROBE));
		if (output == NULL)
		{
			char		how[256];

			SupervisorDescribeExit(status, how, sizeof(how));
			ereport(WARNING,
					(errmsg("easeml: the device probe failed (%s); using the CPU only", how),
					 errdetail("The probe's messages are in \"%s/%s\".", base, PROBE_LOG_FILE)));
		}
		RecordProbe(output);
	}
	else if (TimestampDifferenceExceeds(probe_started, EasemlMonotonicNow(),
										PROBE_TIMEOUT_MS))
	{
		SupervisorProbeKill();
		ereport(WARNING,
				(errmsg("easeml: the device probe did not finish within %d s; using the CPU only",
						PROBE_TIMEOUT_MS / 1000)));
		RecordProbe(NULL);
	}
}

/*
 * Advance the probe: start one when needed (first call, an admin's
 * request, a device reported unusable), else check on the running one.
 * Call on every scheduler iteration while the extension exists.
 */
void
DevicesStep(void)
{
	uint32		requests;

	SpinLockAcquire(&EasemlState->mutex);
	requests = EasemlState->probe_requests;
	SpinLockRelease(&EasemlState->mutex);
	if (!probe_requests_read)
	{
		/* requests made before this scheduler started are served by its first probe */
		probe_requests_seen = requests;
		probe_requests_read = true;
	}
	if (requests != probe_requests_seen && probe_state == PROBE_IDLE)
	{
		probe_requests_seen = requests;
		probe_state = PROBE_NEEDED;
	}
	if (probe_state == PROBE_IDLE && probe_retry_at != 0 &&
		EasemlMonotonicNow() >= probe_retry_at)
	{
		probe_retry_at = 0;
		probe_state = PROBE_NEEDED;
	}
	if (probe_state == PROBE_NEEDED)
		StartProbe();
	else if (probe_state == PROBE_RUNNING)
		PollProbe();
}

/*
 * Forget the devices (the extension was dropped): probe again once it is
 * created again, since its easeml.devices starts empty.
 */
void
DevicesReset(void)
{
	SupervisorProbeKill();
	probe_state = PROBE_NEEDED;
	devices_known = false;
	devices_stale = true;
	n_devices = 0;
}

/* Has a probe been recorded (scheduling waits for the first)? */
bool
DevicesKnown(void)
{
	return devices_known;
}

/* The device list must be read again before it is used. */
void
DevicesChanged(void)
{
	devices_stale = true;
}

/*
 * Read the devices of easeml.launcher from easeml.devices (with slurm, the
 * partitions easeml.set_slurm_partition registered), in their own
 * transaction.
 */
void
DevicesReload(void)
{
	CatDevice  *list;
	int			n;
	MemoryContext old;

	if (devices_context == NULL)
		devices_context = AllocSetContextCreate(TopMemoryContext, "easeml devices",
												ALLOCSET_SMALL_SIZES);
	CatalogBegin("easeml: loading devices");
	/* the devices of the launcher in use (src/worker/launcher.h) */
	n = CatalogLoadDevices(LauncherName(easeml_launcher), &list);
	CatalogCommit();

	MemoryContextReset(devices_context);
	old = MemoryContextSwitchTo(devices_context);
	n_devices = Min(n, EASEML_MAX_SLOTS);
	for (int i = 0; i < n_devices; i++)
	{
		devices[i] = list[i];
		devices[i].name = pstrdup(list[i].name);
		devices[i].kind = pstrdup(list[i].kind);
	}
	MemoryContextSwitchTo(old);
	devices_stale = false;
}

/* Free slots of device i now. */
static int
FreeOn(int i)
{
	if (!devices[i].usable)
		return 0;
	return Max(devices[i].slots - SupervisorDeviceCount(devices[i].name), 0);
}

/* Slots of the supervisor's table that hold no run. */
static int
FreeTableSlots(void)
{
	int			n = 0;

	for (int i = 0; i < EASEML_MAX_SLOTS; i++)
		if (SupervisorSlot(i)->run_id == 0)
			n++;
	return n;
}

/* Free slots over every device (reading the devices again if needed). */
int
DevicesFree(void)
{
	int			n = 0;

	if (devices_stale)
		DevicesReload();
	for (int i = 0; i < n_devices; i++)
		n += FreeOn(i);
	return Min(n, FreeTableSlots());
}

/*
 * List every free slot, GPUs first, each with its own index in the
 * supervisor's table, for queued runs to claim.  Returns how many.
 */
int
DevicesFreeSlots(CatSlot *slots, int max)
{
	bool		taken[EASEML_MAX_SLOTS] = {0};
	int			n = 0;
	int			next = 0;

	for (int i = 0; i < n_devices; i++)
	{
		int			f = FreeOn(i);

		for (int j = 0; j < f && n < max; j++)
		{
			while (next < EASEML_MAX_SLOTS &&
				   (taken[next] || SupervisorSlot(next)->run_id != 0))
				next++;
			if (next >= EASEML_MAX_SLOTS)
				return n;
			taken[next] = true;
			slots[n].slot = next;
			slots[n].device = devices[i].name;
			slots[n].kind = devices[i].kind;
			n++;
		}
	}
	return n;
}

/* The loaded device called name, or NULL. */
const CatDevice *
DevicesLookup(const char *name)
{
	for (int i = 0; i < n_devices; i++)
		if (strcmp(devices[i].name, name) == 0)
			return &devices[i];
	return NULL;
}

/* Mark in banned[] the devices that failed this task's candidate before. */
static bool
BannedDevices(const CatTask *t, int arm, unsigned char *banned)
{
	bool		any = false;

	memset(banned, 0, n_devices);
	for (int b = 0; b < t->n_bans; b++)
	{
		if (t->ban_arm[b] != arm)
			continue;
		for (int i = 0; i < n_devices; i++)
			if (strcmp(devices[i].name, t->ban_device[b]) == 0)
			{
				banned[i] = 1;
				any = true;
			}
	}
	return any;
}

/* The devices as placement sees them: free counts now, or capacity. */
static void
PlaceView(PlaceDevice *view, bool capacity)
{
	for (int i = 0; i < n_devices; i++)
	{
		view[i].kind = (PlaceKind) Max(PlaceKindFromName(devices[i].kind), 0);
		view[i].free = capacity ? (devices[i].usable ? devices[i].slots : 0) : FreeOn(i);
	}
}

/*
 * Candidates that no usable device can ever run (no device of their
 * kinds, or every one failed them before) are done for their task: they
 * are not chosen, and the task can complete without them.  A device that
 * comes back makes them available again at the next load.
 */
void
DevicesRestrict(CatState *state)
{
	PlaceDevice view[EASEML_MAX_SLOTS];
	unsigned char banned[EASEML_MAX_SLOTS];

	PlaceView(view, true);
	for (int i = 0; i < state->n_tasks; i++)
	{
		CatTask    *t = &state->tasks[i];

		for (int k = 0; k < state->n_models; k++)
		{
			CatModel   *m = &state->models[k];

			if (!t->eligible[k] || t->is_done[k] || t->in_flight[k] || t->obs_of[k] >= 0)
				continue;
			(void) BannedDevices(t, k, banned);
			if (PlacementChoose(view, n_devices, m->device_kinds,
								m->n_device_kinds, banned) >= 0)
				continue;
			t->is_done[k] = true;
			t->done_arm[t->n_done++] = k;
		}
	}
}

/* Slots of the usable devices (the scheduler's fair share counts them). */
int
DevicesSlots(void)
{
	int			n = 0;

	for (int i = 0; i < n_devices; i++)
		if (devices[i].usable)
			n += devices[i].slots;
	return Min(n, EASEML_MAX_SLOTS);
}

/*
 * Before a decision: which candidates can start now (a device of one of
 * their kinds has a free slot) and the cost factor of the kind each would
 * get (CatModel.kind_factor), handed to the decision world.  A device that
 * failed one task's candidate is that task's business: DevicesPlaceRun
 * finds another device or none.
 */
void
DevicesPlaceCandidates(CatState *state)
{
	PlaceDevice view[EASEML_MAX_SLOTS];
	unsigned char *open = palloc(Max(state->n_models, 1));
	double	   *factor = palloc(sizeof(double) * Max(state->n_models, 1));

	PlaceView(view, false);
	for (int k = 0; k < state->n_models; k++)
	{
		const CatModel *m = &state->models[k];
		int			d = PlacementChoose(view, n_devices, m->device_kinds,
										m->n_device_kinds, NULL);

		open[k] = d >= 0;
		factor[k] = d >= 0 ? m->kind_factor[view[d].kind] : 1.0;
	}
	LiveWorldSetPlacement(open, factor);
	pfree(open);
	pfree(factor);
}

/* The device for a chosen (task, candidate), or NULL if none is free. */
const CatDevice *
DevicesPlaceRun(const CatState *state, int task, int arm)
{
	PlaceDevice view[EASEML_MAX_SLOTS];
	unsigned char banned[EASEML_MAX_SLOTS];
	const CatModel *m = &state->models[arm];
	int			d;

	PlaceView(view, false);
	(void) BannedDevices(&state->tasks[task], arm, banned);
	d = PlacementChoose(view, n_devices, m->device_kinds,
						m->n_device_kinds, banned);
	return d >= 0 ? &devices[d] : NULL;
}

/*
 * A trainer ended: if it found its device unusable, take the device out
 * of placement and probe again (the probe decides whether it is there).
 */
void
DevicesNoteExit(const char *device, int wait_status)
{
	if (wait_status == -1 || !WIFEXITED(wait_status) ||
		WEXITSTATUS(wait_status) != EASEML_EXIT_DEVICE_UNAVAILABLE)
		return;
	for (int i = 0; i < n_devices; i++)
		if (strcmp(devices[i].name, device) == 0)
			devices[i].usable = false;
	ereport(WARNING,
			(errmsg("easeml: a trainer could not use device \"%s\"; probing the devices again",
					device)));
	if (probe_state == PROBE_IDLE)
		probe_state = PROBE_NEEDED;
}
