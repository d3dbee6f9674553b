/*-------------------------------------------------------------------------
 *
 * catalog_runs.c
 *	  The runs of active tasks as the scheduler sees them, kept across
 *	  scheduling steps and brought up to date by reading only the runs that
 *	  changed.
 *
 * Every scheduling step needs, for each active task, what its runs say:
 * which candidates succeeded (and their scores), failed, or are in
 * flight, the streaks, the measured seconds.  Reading every run of every
 * active task at each step cost O(all runs) per decision (37 ms of SQL at
 * 5,000 runs, issue 7 item 3).  The scheduler instead keeps the runs of
 * the active tasks in memory (the "kept store") and at each step reads
 * only
 *
 *	- the runs written since its previous read: every run row carries the
 *	  transaction that last wrote it (easeml.runs.changed_by, set by a
 *	  trigger, indexed), and the scheduler asks for the rows whose writer
 *	  its previous read could not see, with that read's snapshot
 *	  (pg_visible_in_snapshot).  A transaction that commits after it wrote
 *	  a row is therefore never missed, whatever the order of commits;
 *	- every run of a task that joined the active set (a new or
 *	  reactivated task).
 *
 * Tasks that left the active set are dropped from the store.  What a
 * task's runs say is then folded in C from its kept runs, exactly as the
 * full read did in SQL (oldest first, the current snapshot version only,
 * failures before a reactivation left out): the fold is the same for a
 * kept and a fresh store, so a kept store that holds the same rows gives
 * the same CatState.  easeml.check_catalog makes the scheduler prove it at
 * every step (CatalogStatesDiffer, t/017_incremental.pl).
 *
 * The store is read again in full at the first step, after any error in
 * the scheduler's loop (CatalogForgetRuns), and every RUNS_REREAD_MS as a
 * safety net for what no trigger sees: a run row deleted by hand while its
 * task stays active, or a row written with triggers disabled.
 *
 * IDENTIFICATION
 *	  src/worker/catalog_runs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog.h"
#include "catalog_spi.h"
#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "module/monoclock.h"
#include "core/trainer_protocol.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* a full read of the kept store at least this often (see above) */
#define RUNS_REREAD_MS (5 * 60 * 1000)

/* One run row, as the fold needs it. */
typedef struct StoredRun
{
	int64		id;
	int32		model_id;
	char		status;			/* first letter of easeml.runs.status */
	bool		device_failure; /* failed because of its device */
	bool		on_cpu;			/* device_kind NULL or 'cpu' */
	bool		has_version;
	int32		snapshot_version;
	bool		has_finished;
	TimestampTz finished_at;	/* wall clock, as SQL has them */
	TimestampTz queued_at;
	double		score;			/* NaN: NULL */
	double		seconds;		/* NaN: NULL */
	double		bins;			/* metrics' histogram bins, NaN: none */
	double		passes;			/* metrics' epochs, NaN: none */
	char	   *error;
	char	   *device;
} StoredRun;

/* The runs of one active task. */
typedef struct StoredTask
{
	int64		task_id;		/* hash key */
	bool		seen;			/* active in the current load */
	int64		last_decision;	/* its latest decision, -1: none */
	int			n;
	int			cap;
	StoredRun  *runs;
} StoredTask;

typedef struct RunStore
{
	MemoryContext cxt;
	HTAB	   *tasks;
	char	   *snapshot;		/* pg_snapshot of the last read; NULL: empty */
	int64		max_decision;	/* the highest decision id read */
	TimestampTz read_at;		/* the last full read (monotonic) */
} RunStore;

static RunStore kept = {NULL, NULL, NULL, 0, 0};

/* counters for the log and the docs (easeml.check_catalog) */
static int64 n_full_reads = 0;
static int64 n_changed_rows = 0;

/* The columns every run read returns, from column 2 on. */
#define RUN_COLUMNS \
	" r.task_id, r.id, r.model_id, r.status, r.score, r.error, r.seconds," \
	" coalesce(r.device_kind, 'cpu') = 'cpu', r.device, r.exit_code," \
	" r.snapshot_version, r.finished_at, r.queued_at," \
	" CASE WHEN jsonb_typeof(r.metrics -> 'bins') = 'number'" \
	"      THEN (r.metrics ->> 'bins')::float8 END," \
	" CASE WHEN jsonb_typeof(r.metrics -> 'epochs') = 'number'" \
	"      THEN (r.metrics ->> 'epochs')::float8 END"

static void
StoreInit(RunStore *store, MemoryContext parent)
{
	HASHCTL		ctl;

	store->cxt = AllocSetContextCreate(parent, "easeml kept runs",
									   ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(StoredTask);
	ctl.hcxt = store->cxt;
	store->tasks = hash_create("easeml kept runs", 1024, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	store->snapshot = NULL;
	store->max_decision = 0;
	store->read_at = 0;
}

static void
StoreFree(RunStore *store)
{
	if (store->cxt)
		MemoryContextDelete(store->cxt);
	store->cxt = NULL;
	store->tasks = NULL;
	store->snapshot = NULL;
}

/* Forget the kept runs: the next load reads them all again. */
void
CatalogForgetRuns(void)
{
	StoreFree(&kept);
}

static char *
StoreText(RunStore *store, int row, int col)
{
	char	   *s;
	char	   *copy;

	if (GetNull(row, col))
		return NULL;
	s = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
	copy = MemoryContextStrdup(store->cxt, s);
	pfree(s);
	return copy;
}

/*
 * Put the run rows of the current SPI result (RUN_COLUMNS from column
 * col0) into the store: a run it holds is replaced, a new one appended.
 * Rows of tasks the store does not hold (not active) are skipped.
 * Returns the number of rows applied.
 */
static int
ApplyRows(RunStore *store, int col0)
{
	int			applied = 0;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int			row = (int) i;
		int64		task_id;
		int64		run_id;
		StoredTask *st;
		StoredRun  *r = NULL;
		char	   *status;
		int32		exit_code;

		if (GetNull(row, col0))
			continue;			/* the snapshot row of an empty result */
		task_id = GetInt64(row, col0, 0);
		st = hash_search(store->tasks, &task_id, HASH_FIND, NULL);
		if (st == NULL)
			continue;
		run_id = GetInt64(row, col0 + 1, 0);
		for (int j = 0; j < st->n && r == NULL; j++)
			if (st->runs[j].id == run_id)
				r = &st->runs[j];
		if (r == NULL)
		{
			if (st->n == st->cap)
			{
				st->cap = Max(8, st->cap * 2);
				st->runs = st->runs == NULL ?
					MemoryContextAlloc(store->cxt, sizeof(StoredRun) * st->cap) :
					repalloc(st->runs, sizeof(StoredRun) * st->cap);
			}
			r = &st->runs[st->n++];
		}
		else
		{
			if (r->error)
				pfree(r->error);
			if (r->device)
				pfree(r->device);
		}
		status = TextDatumGetCString(Get(row, col0 + 3));
		exit_code = GetInt32(row, col0 + 9, INT_MIN);
		r->id = run_id;
		r->model_id = GetInt32(row, col0 + 2, 0);
		r->status = status[0];
		r->score = GetFloat8(row, col0 + 4, NAN);
		r->error = StoreText(store, row, col0 + 5);
		r->seconds = GetFloat8(row, col0 + 6, NAN);
		r->on_cpu = GetBool(row, col0 + 7);
		r->device = StoreText(store, row, col0 + 8);
		r->device_failure = r->status == 'f' && r->device != NULL &&
			(exit_code == EASEML_EXIT_DEVICE_OOM ||
			 exit_code == EASEML_EXIT_DEVICE_UNAVAILABLE);
		r->has_version = !GetNull(row, col0 + 10);
		r->snapshot_version = GetInt32(row, col0 + 10, 0);
		r->has_finished = !GetNull(row, col0 + 11);
		r->finished_at = r->has_finished ? DatumGetTimestampTz(Get(row, col0 + 11)) : 0;
		r->queued_at = DatumGetTimestampTz(Get(row, col0 + 12));
		r->bins = GetFloat8(row, col0 + 13, NAN);
		r->passes = GetFloat8(row, col0 + 14, NAN);
		pfree(status);
		applied++;
	}
	return applied;
}

/* Remember the snapshot in column 1 of the current result. */
static void
KeepSnapshot(RunStore *store)
{
	char	   *snap = StoreText(store, 0, 1);

	if (snap == NULL)
		elog(ERROR, "easeml: no snapshot came back with the runs");
	if (store->snapshot)
		pfree(store->snapshot);
	store->snapshot = snap;
}

/*
 * Every run of the given tasks; with_snapshot also remembers the
 * statement's snapshot (a full read).
 */
static void
ReadTaskRuns(RunStore *store, const int64 *ids, int n, bool with_snapshot)
{
	Oid			types[1] = {INT8ARRAYOID};
	Datum		values[1];

	values[0] = Int8ArrayDatum(ids, n);
	Exec("SELECT s.snap," RUN_COLUMNS
		 "  FROM (SELECT pg_current_snapshot()::text) s(snap)"
		 "  LEFT JOIN easeml.runs r ON r.task_id = ANY ($1) AND r.purpose = 'select'",
		 SPI_OK_SELECT, 1, types, values, NULL);
	if (with_snapshot)
		KeepSnapshot(store);
	(void) ApplyRows(store, 2);
	pfree(DatumGetPointer(values[0]));
}

/*
 * The runs written by transactions the store's last read could not see:
 * the rows written since, and those of transactions that were still in
 * progress then.  Then the store's snapshot is this read's.  A writer at
 * or past this read's xmax, other than this transaction (whose claims of
 * queued runs the read must see; its xid can be past xmax), cannot be a
 * transaction of this cluster (a dump restored with triggers disabled
 * keeps another cluster's xids): such rows were read by the full read and
 * are not read again each step.
 */
static void
ReadChanges(RunStore *store)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(store->snapshot)};

	Exec("SELECT s.snap," RUN_COLUMNS
		 "  FROM (SELECT pg_current_snapshot()::text) s(snap)"
		 "  LEFT JOIN easeml.runs r"
		 "    ON r.changed_by >= pg_snapshot_xmin($1::pg_snapshot)"
		 "   AND NOT pg_visible_in_snapshot(r.changed_by, $1::pg_snapshot)"
		 "   AND (r.changed_by < pg_snapshot_xmax(pg_current_snapshot())"
		 "        OR r.changed_by = pg_current_xact_id_if_assigned())"
		 "   AND r.purpose = 'select'",
		 SPI_OK_SELECT, 1, types, values, NULL);
	KeepSnapshot(store);
	n_changed_rows += ApplyRows(store, 2);	/* only the kept store reads changes */
}

/*
 * Each task's latest decision (the world serves the task served longest
 * ago first).  Only the scheduler writes decisions, one committed
 * transaction after the other, so their ids grow in commit order: the
 * decisions with an id above the highest one read are the new ones.  With
 * ids, every decision of those tasks is read instead (a full read, tasks
 * that joined), and first_read sets the mark.
 */
static void
ReadDecisions(RunStore *store, const int64 *ids, int n, bool first_read)
{
	Oid			types[1];
	Datum		values[1];

	if (ids != NULL)
	{
		types[0] = INT8ARRAYOID;
		values[0] = Int8ArrayDatum(ids, n);
		Exec("SELECT d.task_id, max(d.id), (SELECT max(id) FROM easeml.decisions)"
			 "  FROM easeml.decisions d WHERE d.task_id = ANY ($1) GROUP BY d.task_id",
			 SPI_OK_SELECT, 1, types, values, NULL);
	}
	else
	{
		types[0] = INT8OID;
		values[0] = Int64GetDatum(store->max_decision);
		Exec("SELECT d.task_id, max(d.id), max(max(d.id)) OVER ()"
			 "  FROM easeml.decisions d WHERE d.id > $1 GROUP BY d.task_id",
			 SPI_OK_SELECT, 1, types, values, NULL);
	}
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int64		task_id = GetInt64((int) i, 1, 0);
		StoredTask *st = hash_search(store->tasks, &task_id, HASH_FIND, NULL);

		if (st != NULL)
			st->last_decision = Max(st->last_decision, GetInt64((int) i, 2, -1));
		if (ids == NULL || first_read)
			store->max_decision = Max(store->max_decision, GetInt64((int) i, 3, 0));
	}
	if (ids != NULL && first_read && SPI_processed == 0)
	{
		/* none of these tasks has a decision: the mark is the highest */
		Exec("SELECT coalesce(max(id), 0) FROM easeml.decisions",
			 SPI_OK_SELECT, 0, NULL, NULL, NULL);
		store->max_decision = GetInt64(0, 1, 0);
	}
}

/* Release one task's runs. */
static void
DropTask(StoredTask *st)
{
	for (int j = 0; j < st->n; j++)
	{
		if (st->runs[j].error)
			pfree(st->runs[j].error);
		if (st->runs[j].device)
			pfree(st->runs[j].device);
	}
	if (st->runs)
		pfree(st->runs);
	st->runs = NULL;
	st->n = st->cap = 0;
}

/*
 * Bring the store in line with the active tasks of the state: a full read
 * when it holds nothing (or is due one), else the changed runs and every
 * run of the tasks that joined.
 */
static void
Refresh(RunStore *store, const CatState *state, MemoryContext parent)
{
	int64	   *joined = palloc(sizeof(int64) * Max(state->n_tasks, 1));
	int			n_joined = 0;
	bool		full = store->cxt == NULL || store->snapshot == NULL ||
		TimestampDifferenceExceeds(store->read_at, EasemlMonotonicNow(), RUNS_REREAD_MS);
	HASH_SEQ_STATUS seq;
	StoredTask *st;

	if (full)
	{
		StoreFree(store);
		StoreInit(store, parent);
	}
	else
	{
		hash_seq_init(&seq, store->tasks);
		while ((st = hash_seq_search(&seq)) != NULL)
			st->seen = false;
	}
	for (int i = 0; i < state->n_tasks; i++)
	{
		bool		found;

		st = hash_search(store->tasks, &state->tasks[i].id, HASH_ENTER, &found);
		if (!found)
		{
			st->n = st->cap = 0;
			st->runs = NULL;
			st->last_decision = -1;
			joined[n_joined++] = st->task_id;
		}
		st->seen = true;
	}
	/* tasks that left the active set */
	hash_seq_init(&seq, store->tasks);
	while ((st = hash_seq_search(&seq)) != NULL)
		if (!st->seen)
		{
			DropTask(st);
			(void) hash_search(store->tasks, &st->task_id, HASH_REMOVE, NULL);
		}

	if (full)
	{
		ReadTaskRuns(store, joined, n_joined, true);
		ReadDecisions(store, joined, n_joined, true);
		store->read_at = EasemlMonotonicNow();
		if (store == &kept)
			n_full_reads++;
	}
	else
	{
		ReadChanges(store);
		ReadDecisions(store, NULL, 0, false);
		if (n_joined > 0)
		{
			ReadTaskRuns(store, joined, n_joined, false);
			ReadDecisions(store, joined, n_joined, false);
		}
	}
	pfree(joined);
}

/* Runs in the order the fold reads them: by end (else queue) time, id. */
static int
RunOrder(const void *a, const void *b)
{
	const StoredRun *x = a;
	const StoredRun *y = b;
	TimestampTz tx = x->has_finished ? x->finished_at : x->queued_at;
	TimestampTz ty = y->has_finished ? y->finished_at : y->queued_at;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	return x->id < y->id ? -1 : (x->id > y->id ? 1 : 0);
}

/* A succeeded run's score: into the task's observations (one per model). */
static void
AddScore(CatTask *t, int k, double y)
{
	double		best = -INFINITY;

	for (int j = 0; j < t->n_obs; j++)
		best = Max(best, t->obs_y[j]);
	/* scores are in [0,1] for the policy; R^2 can be negative */
	y = Min(Max(y, 0.0), 1.0);
	if (t->obs_of[k] >= 0)
		t->obs_y[t->obs_of[k]] = Max(t->obs_y[t->obs_of[k]], y);
	else
	{
		t->obs_of[k] = t->n_obs;
		t->obs_arm[t->n_obs] = k;
		t->obs_y[t->n_obs] = y;
		t->n_obs++;
	}
	t->streak = (y > best) ? 0 : t->streak + 1;
	t->fail_streak = 0;
	t->succeeded++;
}

/* A (candidate, device) pair the task must not use again, once. */
static void
AddBan(CatTask *t, int k, const char *device, MemoryContext cxt)
{
	for (int b = 0; b < t->n_bans; b++)
		if (t->ban_arm[b] == k && strcmp(t->ban_device[b], device) == 0)
			return;
	if (t->n_bans == 0)
	{
		t->ban_arm = MemoryContextAlloc(cxt, sizeof(int));
		t->ban_device = MemoryContextAlloc(cxt, sizeof(char *));
	}
	else
	{
		t->ban_arm = repalloc(t->ban_arm, sizeof(int) * (t->n_bans + 1));
		t->ban_device = repalloc(t->ban_device, sizeof(char *) * (t->n_bans + 1));
	}
	t->ban_arm[t->n_bans] = k;
	t->ban_device[t->n_bans] = MemoryContextStrdup(cxt, device);
	t->n_bans++;
}

/*
 * What one run says about its task.  A model is "done" for a task once
 * it succeeded, failed or was cancelled; interrupted runs do not count,
 * their candidate is tried again.  A run that failed because of its
 * device (out of memory, device unusable) counts as interrupted: its
 * candidate may run on another device, and the ban keeps it off that one.
 * Each arm appears at most once in each list, whatever the number of its
 * runs (a user may queue a finished candidate again).
 */
static void
FoldRun(const CatState *state, CatTask *t, const StoredRun *r, MemoryContext cxt)
{
	int			k = CatalogModelIndex(state, r->model_id);
	char		status = r->device_failure ? 'i' : r->status;
	/* the second letter, as the signature of the full read hashed it */
	char		second = status == 'i' ? 'n' : (status == 'f' || status == 'c') ? 'a' : 'u';
	double		cpu_seconds = r->on_cpu ? r->seconds : NAN;

	/* the device bans hold whatever the snapshot or a reactivation */
	if (r->device_failure && k >= 0)
		AddBan(t, k, r->device, cxt);
	/*
	 * Only runs on the task's current snapshot count: after easeml.refresh
	 * the search starts again on the new data; and so do runs that failed
	 * before the task was reactivated.
	 */
	if (r->has_version != t->has_version ||
		(t->has_version && r->snapshot_version != t->snapshot_version))
		return;
	if (r->status == 'f' && t->reactivated && r->has_finished &&
		r->finished_at < t->reactivated_at)
		return;

	{
		/* what the world needs to know changed (src/worker/liveworld.c) */
		uint64		x[5] = {(uint64) r->model_id, (uint64) status << 8 | (uint64) second, 0, 0, 0};

		memcpy(&x[2], &r->score, sizeof(double));
		memcpy(&x[3], &cpu_seconds, sizeof(double));
		memcpy(&x[4], &r->passes, sizeof(double));
		for (int j = 0; j < 5; j++)
			t->runs_sig = (t->runs_sig ^ x[j]) * UINT64CONST(1099511628211);
	}
	if (status != 'i')
		t->n_runs++;
	/* the data's histogram bins, which a tree run reports (costmodel.h) */
	if (status == 's' && r->bins > 0 && !(t->n_bins >= r->bins))
		t->n_bins = r->bins;
	if (k < 0)
		return;					/* model disabled or deleted */
	if (status == 's' && cpu_seconds > 0 && !(t->seconds[k] >= cpu_seconds))
	{
		t->seconds[k] = cpu_seconds;	/* the CPU's time: the cost model's */
		t->passes[k] = r->passes;	/* and the passes it made (costmodel.h) */
	}
	if (status == 's' && !isnan(r->score))
		AddScore(t, k, r->score);
	else if (status == 'q' || status == 'r')
	{
		if (!t->in_flight[k])
		{
			t->in_flight[k] = true;
			t->running_arm[t->n_running++] = k;
		}
	}
	else if (status != 'i')
	{
		/* failed, cancelled, or succeeded without a score */
		if (!t->is_done[k])
		{
			t->is_done[k] = true;
			t->done_arm[t->n_done++] = k;
		}
		if (status == 'f')
		{
			t->fail_streak++;
			t->last_error = r->error ? MemoryContextStrdup(cxt, r->error) : NULL;
		}
	}
}

/* Fold the store's runs into the tasks of the state. */
static void
Fold(const RunStore *store, CatState *state, MemoryContext cxt)
{
	for (int i = 0; i < state->n_tasks; i++)
	{
		CatTask    *t = &state->tasks[i];
		StoredTask *st = hash_search(store->tasks, &t->id, HASH_FIND, NULL);

		if (st == NULL)
			continue;
		t->last_decision = st->last_decision;
		qsort(st->runs, st->n, sizeof(StoredRun), RunOrder);
		for (int j = 0; j < st->n; j++)
			FoldRun(state, t, &st->runs[j], cxt);
	}
}

/*
 * The runs of the state's active tasks, into its tasks: from the kept
 * store brought up to date (the scheduler), or from a fresh read of every
 * run (a backend's easeml.explain, the check).  Call inside CatalogBegin
 * after the tasks are loaded; cxt is where the state lives.
 */
void
CatalogLoadRuns(CatState *state, bool use_kept, MemoryContext cxt)
{
	if (use_kept)
	{
		Refresh(&kept, state, TopMemoryContext);
		Fold(&kept, state, cxt);
	}
	else
	{
		RunStore	fresh = {NULL, NULL, NULL, 0, 0};

		Refresh(&fresh, state, cxt);
		Fold(&fresh, state, cxt);
		StoreFree(&fresh);
	}
}

/* How many full reads and changed rows the kept store has had. */
void
CatalogRunsCounters(int64 *full_reads, int64 *changed_rows)
{
	*full_reads = n_full_reads;
	*changed_rows = n_changed_rows;
}

static bool
SameArms(const int *a, const int *b, int n)
{
	return n == 0 || memcmp(a, b, sizeof(int) * n) == 0;
}

static bool
SameText(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Does a task's loaded state differ between two loads of the same models? */
static const char *
TaskDiffers(const CatTask *a, const CatTask *b, int K)
{
	if (a->n_runs != b->n_runs || a->runs_sig != b->runs_sig)
		return "runs";
	if (a->n_obs != b->n_obs || !SameArms(a->obs_arm, b->obs_arm, a->n_obs) ||
		memcmp(a->obs_y, b->obs_y, sizeof(double) * a->n_obs) != 0)
		return "scores";
	if (a->n_done != b->n_done || !SameArms(a->done_arm, b->done_arm, a->n_done))
		return "candidates done";
	if (a->n_running != b->n_running ||
		!SameArms(a->running_arm, b->running_arm, a->n_running))
		return "runs in flight";
	if (a->fail_streak != b->fail_streak || a->succeeded != b->succeeded ||
		a->streak != b->streak || !SameText(a->last_error, b->last_error))
		return "streaks";
	for (int k = 0; k < K; k++)
		if (!(a->seconds[k] == b->seconds[k] ||
			  (isnan(a->seconds[k]) && isnan(b->seconds[k]))) ||
			a->cost[k] != b->cost[k])
			return "measured seconds or cost estimates";
	for (int k = 0; k < K; k++)
		if (!(a->passes[k] == b->passes[k] ||
			  (isnan(a->passes[k]) && isnan(b->passes[k]))))
			return "measured passes";
	if (!(a->n_bins == b->n_bins || (isnan(a->n_bins) && isnan(b->n_bins))))
		return "histogram bins";
	if (a->n_bans != b->n_bans)
		return "device bans";
	for (int i = 0; i < a->n_bans; i++)
	{
		bool		found = false;

		for (int j = 0; j < b->n_bans && !found; j++)
			found = a->ban_arm[i] == b->ban_arm[j] &&
				strcmp(a->ban_device[i], b->ban_device[j]) == 0;
		if (!found)
			return "device bans";
	}
	if (a->last_decision != b->last_decision || a->max_runs != b->max_runs ||
		a->tenant_cap != b->tenant_cap)
		return "task row";
	if (a->budget != b->budget || a->spent != b->spent ||
		a->budget_spent != b->budget_spent)
		return "time budget";
	return NULL;
}

/*
 * Compare two loads of the catalog (CatalogLoadState) made in the same
 * snapshot: NULL when they are equal, else what differs, in words.
 */
char *
CatalogStatesDiffer(const CatState *a, const CatState *b)
{
	if (a->n_models != b->n_models)
		return psprintf("models: %d vs %d", a->n_models, b->n_models);
	if (a->n_tasks != b->n_tasks)
		return psprintf("active tasks: %d vs %d", a->n_tasks, b->n_tasks);
	if (a->decision_no != b->decision_no || a->n_tenant_running != b->n_tenant_running)
		return pstrdup("counters");
	for (int i = 0; i < a->n_tenant_running; i++)
		if (strcmp(a->tenant_names[i], b->tenant_names[i]) != 0 ||
			a->tenant_running[i] != b->tenant_running[i] ||
			a->tenant_queued[i] != b->tenant_queued[i])
			return psprintf("runs in flight of tenant \"%s\"", a->tenant_names[i]);
	for (int i = 0; i < a->n_tasks; i++)
	{
		const char *what;

		if (a->tasks[i].id != b->tasks[i].id)
			return psprintf("task %lld vs %lld", (long long) a->tasks[i].id,
							(long long) b->tasks[i].id);
		what = TaskDiffers(&a->tasks[i], &b->tasks[i], a->n_models);
		if (what != NULL)
			return psprintf("task %lld: %s", (long long) a->tasks[i].id, what);
	}
	return NULL;
}
