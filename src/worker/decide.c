/*-------------------------------------------------------------------------
 *
 * decide.c
 *	  One scheduling step: fill the free slots.  Loads the world when the
 *	  catalog may have changed, claims the refits and the runs tenants
 *	  queued, then makes one decision per free slot (src/worker/liveworld.c,
 *	  src/core/decision_*.c), records it with its run and launches it
 *	  (src/worker/launch.c); with every slot busy, only the run budget may
 *	  act (src/worker/stops.c).  The refit cycle's work (RefitWork): in
 *	  the loop's slices, and in the step itself for a world rebuilt for new
 *	  models, which decides nothing before it.
 *
 * IDENTIFICATION
 *	  src/worker/decide.c
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
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/*
 * Loading the world costs a few queries over every run: skip it while
 * nothing can have changed.  Commits that matter set the latch (triggers on
 * tasks and runs, the tenant and admin functions), trainer exits raise
 * SIGCHLD; the rest (an admin enabling a model, a task's cooldown ending)
 * is picked up by a reload at least every IDLE_RELOAD_MS.
 */
#define IDLE_RELOAD_MS 10000
static TimestampTz last_load = 0;

/*
 * The longest refit a rebuilt world runs in one go before deciding on the
 * load that started it (Schedule); a longer one continues in the loop's
 * slices.  Reaping and stopping trainers wait at most this long.
 */
#define REBUILT_REFIT_MS 50

/*
 * Tasks whose run could not be recorded (most likely a lock the tenant
 * holds on its own task row) rest for a while, so that one tenant cannot
 * make every scheduling step wait for the lock timeout.
 */
#define COOLDOWN_SLOTS 64
#define COOLDOWN_MS 10000
static int64 cooldown_task[COOLDOWN_SLOTS];
static TimestampTz cooldown_until[COOLDOWN_SLOTS];

/* when an unknown policy was last warned about (SyncWorld) */
static TimestampTz last_policy_warning = 0;

/* easeml.trainer_memory_limit in bytes when the world was built */
static double applied_memory_limit = -1;

/* Let a task rest for COOLDOWN_MS (see cooldown_task). */
static void
Cooldown(int64 task_id)
{
	TimestampTz now = EasemlMonotonicNow();
	int			victim = 0;

	for (int i = 0; i < COOLDOWN_SLOTS; i++)
	{
		if (cooldown_task[i] == task_id || cooldown_until[i] < now)
		{
			victim = i;
			break;
		}
		if (cooldown_until[i] < cooldown_until[victim])
			victim = i;
	}
	cooldown_task[victim] = task_id;
	cooldown_until[victim] = TimestampTzPlusMilliseconds(now, COOLDOWN_MS);
}

/* Is the task resting? */
static bool
InCooldown(int64 task_id)
{
	TimestampTz now = EasemlMonotonicNow();

	for (int i = 0; i < COOLDOWN_SLOTS; i++)
		if (cooldown_task[i] == task_id && cooldown_until[i] > now)
			return true;
	return false;
}

/* One decision to record and launch (for Guarded). */
typedef struct DecisionStep
{
	CatState   *state;
	int			slot;
	const CatDevice *device;
	int			task;			/* index in state->tasks */
	int			model;			/* index in state->models */
	DecisionChoice choice;
	bool		recorded;
} DecisionStep;

/* A candidate of the world's choice in the catalog's terms. */
static void
DescribeCandidate(const CatState *state, const DecisionCandidate *c,
				  int64 task_id, const char *tenant, CatCandidate *out)
{
	out->task_id = task_id;
	out->tenant = tenant;
	out->model_id = state->models[c->arm].id;
	out->mu = c->mu;
	out->sigma = c->sigma;
	out->est_seconds = c->cost;
	out->acquisition = c->acq;
	out->score = c->score;
}

/* The decision as recorded: the choice, its rule and its runner-ups. */
static void
DescribeDecision(const DecisionStep *step, CatDecision *d)
{
	const CatState *state = step->state;
	const CatTask *task = &state->tasks[step->task];
	const DecisionChoice *c = &step->choice;

	memset(d, 0, sizeof(*d));
	d->policy = LiveWorldPolicyLabel()[0] ? LiveWorldPolicyLabel() : state->policy;
	d->rule = PolicyRuleName(c->rule);
	d->gp_status = GpStatusText(c->gp_status);
	d->eligible = c->n_eligible;
	DescribeCandidate(state, &c->chosen, task->id, task->tenant, &d->chosen);
	for (int i = 0; i < c->n_runner_tasks && i < CAT_RUNNERS_UP; i++)
	{
		const DecisionTask *rt = LiveWorldTaskAt(c->runner_tasks[i].task);

		DescribeCandidate(state, &c->runner_tasks[i], rt->id,
						  LiveWorldTenantName(rt), &d->tasks[d->n_tasks++]);
	}
	for (int i = 0; i < c->n_runner_arms && i < CAT_RUNNERS_UP; i++)
		DescribeCandidate(state, &c->runner_arms[i], task->id, task->tenant,
						  &d->models[d->n_models++]);
}

/* Record a decision and its run, tell the world, launch it. */
static void
RecordDecisionStep(void *arg)
{
	DecisionStep *step = arg;
	CatState   *state = step->state;
	CatDecision d;
	int64		run_id;

	DescribeDecision(step, &d);
	CatalogBegin("easeml: recording a decision");
	run_id = CatalogCreateRun(&d, step->slot, step->device);
	CatalogCommit();
	step->recorded = true;

	/* the candidate is running, the task served */
	LiveWorldStarted(state, step->task, step->model);
	SpinLockAcquire(&EasemlState->mutex);
	EasemlState->decisions++;
	SpinLockRelease(&EasemlState->mutex);

	ereport(DEBUG1,
			(errmsg("easeml: %s (%s) chose model %s for task %lld (mu %.4f sigma %.4f)",
					state->policy, d.rule, state->models[step->model].name,
					(long long) d.chosen.task_id, d.chosen.mu, d.chosen.sigma)));
	LaunchRun(run_id, step->slot, step->device);
}

/*
 * Refit work (src/core/refit.c) for at most ms milliseconds, the rest at
 * the next call.  Returns true when the cycle ended: its choice of the
 * auto policy is recorded, and the world is loaded and decided on again at
 * once (new priors may change every decision; a rebuilt world decides
 * nothing until its refit is done, so a naptime would leave free slots
 * idle).
 */
bool
RefitWork(int ms)
{
	TimestampTz start = EasemlMonotonicNow();

	if (!Sched.refit_pending)
		return false;
	while (Sched.refit_pending &&
		   !TimestampDifferenceExceeds(start, EasemlMonotonicNow(), ms))
		Sched.refit_pending = LiveWorldRefitWork();
	if (Sched.refit_pending)
		return false;
	Sched.world_changed = true;
	PolicyChoiceRecord();
	SetLatch(MyLatch);
	return true;
}

/* Bring the world in line with the loaded state, under the live settings. */
static void
SyncWorld(CatState *state)
{
	LiveSettings s;

	s.policy = state->policy;
	s.slots = Max(DevicesSlots(), 1);
	s.tenant_cap = easeml_max_parallel_per_tenant;
	if (!LiveWorldSync(state, &s))
	{
		TimestampTz now = EasemlMonotonicNow();

		/* the GUC's check refuses unknown specs: this cannot happen */
		if (TimestampDifferenceExceeds(last_policy_warning, now, 60000))
		{
			ereport(WARNING,
					(errmsg("easeml: policy \"%s\" is unknown; keeping the previous one",
							state->policy),
					 errhint("ALTER SYSTEM SET easeml.policy = 'default'; SELECT pg_reload_conf(); restores the default.")));
			last_policy_warning = now;
		}
	}
	SpinLockAcquire(&EasemlState->mutex);
	strlcpy(EasemlState->policy, state->policy, sizeof(EasemlState->policy));
	strlcpy(EasemlState->policy_label, LiveWorldPolicyLabel(),
			sizeof(EasemlState->policy_label));
	SpinLockRelease(&EasemlState->mutex);
}

/*
 * Make one decision per free slot (after the queued runs were claimed).
 * Before each, the world learns which candidates can start now and the
 * cost of each on the device it would get (src/worker/devices.c); the chosen one
 * goes to that device.
 */
static void
DecideFreeSlots(CatState *state)
{
	for (int left = DevicesFree(); left > 0; left--)
	{
		DecisionStep step;

		/* a launch just failed for a while: decide nothing more to interrupt */
		if (LaunchBackoffActive())
			return;
		memset(&step, 0, sizeof(step));
		step.state = state;
		DevicesPlaceCandidates(state);
		for (;;)
		{
			if (!LiveWorldNext(state, &step.task, &step.model, &step.choice))
				return;			/* nothing left to schedule */
			step.device = DevicesPlaceRun(state, step.task, step.model);
			step.slot = SupervisorFreeSlot();
			if (step.slot < 0)
				return;
			/* the free device of its kind failed this candidate before */
			if (step.device == NULL)
			{
				LiveWorldBlock(state->tasks[step.task].id);
				continue;
			}
			if (Guarded(RecordDecisionStep, &step))
			{
				Sched.world_changed = true;
				break;
			}
			/* could not record it (e.g. a tenant holds a lock): skip the task */
			if (!step.recorded)
			{
				LiveWorldBlock(state->tasks[step.task].id);
				Cooldown(state->tasks[step.task].id);
			}
			else
				break;
		}
	}
}


/*
 * Launch the runs just claimed.  Once a launch fails for a while
 * (LaunchBackoffActive) the others are not launched into the same fault:
 * a tenant's run goes back to its queue, a refit is interrupted and
 * queued again (EndUntrackedRuns).
 */
static void
LaunchClaims(const CatClaim *claims, int nclaims)
{
	int64		unlaunched[EASEML_MAX_SLOTS];
	int			n = 0;

	for (int i = 0; i < nclaims; i++)
	{
		if (LaunchBackoffActive())
		{
			unlaunched[n++] = claims[i].run_id;
			continue;
		}
		LiveWorldClaimed(claims[i].tenant);
		LaunchRun(claims[i].run_id, claims[i].slot, DevicesLookup(claims[i].device));
	}
	if (n > 0)
		(void) EndUntrackedRuns(unlaunched, n, "launches are paused after a failed launch");
}

/*
 * Start the runs tenants queued themselves (easeml.enqueue) in free slots,
 * oldest first, each while its tenant holds fewer trainers than its cap in
 * the synced world: its max_parallel and, while other tenants wait, its
 * fair share.  A tenant's queue goes before the policy's choices for it,
 * never past its share (docs/scheduler.md 7.1).
 */
static void
ClaimQueued(CatState *state, const CatSlot *free_slots, int nfree)
{
	CatClaim	claims[EASEML_MAX_SLOTS];
	const char **tenants = palloc(sizeof(char *) * Max(state->n_tenant_running, 1));
	int		   *caps = palloc(sizeof(int) * Max(state->n_tenant_running, 1));
	int			n = 0;
	int			nclaims;

	for (int i = 0; i < state->n_tenant_running; i++)
		if (state->tenant_queued[i] > 0)
		{
			tenants[n] = state->tenant_names[i];
			caps[n++] = LiveWorldQueueCap(state->tenant_names[i]);
		}
	if (n == 0 || nfree == 0)
		return;
	CatalogBegin("easeml: claiming queued runs");
	nclaims = CatalogClaimQueued(free_slots, nfree, tenants, caps, n, claims);
	for (int i = 0; i < nclaims; i++)
	{
		int			k = CatalogModelIndex(state, claims[i].model_id);
		double		est = k >= 0 ? LiveWorldCost(claims[i].task_id, k) : NAN;

		if (isfinite(est) && est > 0)
			CatalogSetClaimEstimate(claims[i].run_id, est);
	}
	CatalogCommit();
	LaunchClaims(claims, nclaims);
	if (nclaims > 0)
		Sched.world_changed = true;
}

/*
 * Queue the refits active deployments lack, in a short transaction of its
 * own (under Guarded: a failure is logged and scheduling goes on).
 */
static void
QueueMissingRefitsStep(void *arg)
{
	CatalogBegin("easeml: queueing refits");
	if (CatalogQueueMissingRefits() > 0)
		Sched.world_changed = true;
	CatalogCommit();
}

/*
 * Start queued refits (a deployed run trained again on every row,
 * docs/results.md) in free slots, before anything else: the deployment
 * waits for them.  Returns how many were launched.
 */
static int
ClaimRefits(const CatSlot *free_slots, int nfree)
{
	CatClaim	claims[EASEML_MAX_SLOTS];
	int			nclaims;

	if (nfree == 0)
		return 0;
	CatalogBegin("easeml: claiming refits");
	nclaims = CatalogClaimRefits(free_slots, nfree, claims);
	CatalogCommit();
	LaunchClaims(claims, nclaims);
	if (nclaims > 0)
		Sched.world_changed = true;
	return nclaims;
}

/*
 * [spaces] Tasks that get new configurations per scheduling step: more
 * wait for the next step (docs/scheduler.md 7.9).
 */
#define MAX_GENERATE 8

typedef struct GenerateArg
{
	int64		task;
	int			made;
} GenerateArg;

/* One task's new configurations, in a short transaction of their own. */
static void
GenerateStep(void *arg)
{
	GenerateArg *g = (GenerateArg *) arg;

	CatalogBegin("easeml: generating candidates");
	g->made = CatalogGenerate(g->task);
	CatalogCommit();
}

/* A task the generator failed for completes (the error is in the log). */
static void
GenerateFailedStep(void *arg)
{
	CatalogBegin("easeml: completing a task");
	CatalogGenerateEnd(*(int64 *) arg,
					   "generating new configurations failed (the server log says why)");
	CatalogCommit();
}

/*
 * [acqgen] Proposals before a budgeted task's grid is spent
 * (docs/scheduler.md 7.9): at most this many tasks look per scheduling
 * step (the others at the next), each at most once per
 * easeml.generate_every succeeded runs, among 6 proposals.
 */
#define MAX_EARLY_ROUNDS 2
#define EARLY_PROPOSALS 6

/*
 * Each new candidate rebuilds the live world and its refit: after one is
 * made this way, no task looks again for this long.
 */
#define EARLY_INTERVAL_MS 5000
static TimestampTz last_early_made = 0;

typedef struct EarlyEntry
{
	int64		task;			/* hash key */
	int			succeeded;		/* its succeeded runs at its last round */
	/*
	 * it gets no more generated candidates (easeml._generate_stop) under
	 * these settings: no round until one of them changes
	 */
	bool		stopped;
	int			stopped_max;
	int			stopped_patience;
} EarlyEntry;

static HTAB *early_rounds = NULL;

typedef struct EarlyArg
{
	CatState   *state;
	int64		task;
	bool		made;
	bool		stopped;		/* no proposal: the task gets no more */
} EarlyArg;

/*
 * One task's round: the proposals in a short transaction (nothing
 * written), the decision outside any transaction on the live world's
 * posterior, and the winner, if any, made a model row in another.
 */
static void
EarlyStep(void *arg)
{
	EarlyArg   *a = (EarlyArg *) arg;
	CatProposal props[CAT_MAX_PROPOSALS];
	int			n,
				win;
	double		p_acq,
				grid_acq;

	CatalogBegin("easeml: proposing candidates");
	n = CatalogPropose(a->task, EARLY_PROPOSALS, props, &a->stopped);
	CatalogCommit();
	win = LiveWorldProposalBeats(a->state, a->task, props, n,
								 easeml_generate_margin, &p_acq, &grid_acq);
	if (win < 0)
	{
		elog(DEBUG1, "easeml: task %lld: no proposal of %d beats its best untried candidate "
			 "(acquisition %.4g against %.4g)",
			 (long long) a->task, n, p_acq, grid_acq);
		return;
	}
	CatalogBegin("easeml: generating a candidate");
	a->made = CatalogAddGenerated(a->task, &props[win]);
	CatalogCommit();
	if (a->made)
		elog(LOG, "easeml: task %lld: a new configuration of %s generated before its grid is spent: "
			 "acquisition %.4g, over easeml.generate_margin %g times the best untried candidate's %.4g",
			 (long long) a->task, props[win].family, p_acq, easeml_generate_margin, grid_acq);
}

/*
 * [acqgen] Look for proposals for the budgeted tasks with candidates left
 * whose succeeded runs grew by easeml.generate_every since their last
 * round (the first after that many); true when one was made a model row.
 */
static bool
GenerateEarly(CatState *state)
{
	int			rounds = 0;

	if (easeml_generate_every <= 0 ||
		!TimestampDifferenceExceeds(last_early_made, EasemlMonotonicNow(),
									EARLY_INTERVAL_MS))
		return false;
	if (early_rounds == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(EarlyEntry);
		ctl.hcxt = TopMemoryContext;
		early_rounds = hash_create("easeml early generation", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	/* tasks that left the active set: forget them now and then */
	if (hash_get_num_entries(early_rounds) > 2L * state->n_tasks + 256)
	{
		HASH_SEQ_STATUS seq;
		EarlyEntry *e;

		hash_seq_init(&seq, early_rounds);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			bool		active = false;

			for (int i = 0; i < state->n_tasks && !active; i++)
				active = state->tasks[i].id == e->task;
			if (!active)
				(void) hash_search(early_rounds, &e->task, HASH_REMOVE, NULL);
		}
	}
	for (int i = 0; i < state->n_tasks && rounds < MAX_EARLY_ROUNDS; i++)
	{
		CatTask    *t = &state->tasks[i];
		EarlyEntry *e;
		bool		found;
		EarlyArg	arg;

		if (t->skip || !CatalogMayGenerateEarly(state, t))
			continue;
		e = hash_search(early_rounds, &t->id, HASH_ENTER, &found);
		if (!found)
			e->stopped = false;
		if (!found || t->succeeded < e->succeeded)
			e->succeeded = found ? t->succeeded : 0;
		if (t->succeeded < e->succeeded + easeml_generate_every)
			continue;
		if (e->stopped && e->stopped_max == easeml_generate_max &&
			e->stopped_patience == easeml_generate_patience)
			continue;
		e->stopped = false;
		/* a round, whatever comes of it (an error too: no retry at once) */
		e->succeeded = t->succeeded;
		rounds++;
		arg.state = state;
		arg.task = t->id;
		arg.made = false;
		arg.stopped = false;
		if (Guarded(EarlyStep, &arg) && arg.made)
		{
			last_early_made = EasemlMonotonicNow();
			return true;
		}
		if (arg.stopped)
		{
			e->stopped = true;
			e->stopped_max = easeml_generate_max;
			e->stopped_patience = easeml_generate_patience;
		}
	}
	return false;
}

/*
 * Whether this step has anything to do; sets *full when every slot is busy
 * (then only preemption may be due).  Settings a reload changed are applied
 * first.
 */
static bool
ScheduleDue(bool *full)
{
	/*
	 * Again here, not only at the top of the loop: a change committed after
	 * a reload (ALTER SYSTEM, pg_reload_conf(), then a new task from
	 * another session) reaches the scheduler with the reload already
	 * signalled, and the runs this step starts for it must get the new
	 * settings (easeml.run_timeout, trainer_path), whatever the step was
	 * doing when the signal came.
	 */
	ReloadConfigIfPending();

	/*
	 * A task's candidates are sized against the memory limit when it joins
	 * the world (CatalogOverMemory): a new limit rebuilds the world.
	 */
	if (EasemlTrainerMemoryLimitBytes() != applied_memory_limit)
	{
		if (applied_memory_limit >= 0)
			LiveWorldRebuild();
		applied_memory_limit = EasemlTrainerMemoryLimitBytes();
	}
	/* nothing is placed before the devices are known */
	if (!easeml_enabled || !DevicesKnown())
		return false;
	/*
	 * the launcher's cluster could not be reached, or this machine could
	 * not start a trainer, a moment ago; or the trainer cannot be run
	 */
	if (LaunchBackoffActive())
		return false;
	if (Sched.world_changed)
		DevicesChanged();
	/*
	 * Every slot busy: tasks only complete when runs end, which frees a
	 * slot; only the run budget may have something to do.
	 */
	*full = DevicesFree() == 0;
	if (*full && !PreemptionDue())
		return false;
	if (!*full && !Sched.world_changed &&
		!TimestampDifferenceExceeds(last_load, EasemlMonotonicNow(), IDLE_RELOAD_MS))
		return false;
	return true;
}

/*
 * Load the tasks into *state in one transaction (cancelling what users
 * cancelled, closing what is complete), then generate the configurations
 * closed tasks asked for, each task in a transaction of its own.  Returns
 * whether a user queued a run.
 */
static bool
LoadTasks(CatState *state)
{
	int64		generate[MAX_GENERATE];
	int			n_generate;
	bool		any_queued;

	(void) Guarded(QueueMissingRefitsStep, NULL);
	CatalogBegin("easeml: loading tasks");
	any_queued = CatalogCancelQueued();
	CatalogLoadStateKept(state, LiveWorldRefitDue());
	CatalogLoadPlacement(state);
	DevicesRestrict(state);
	n_generate = CatalogCloseTasks(state, generate, MAX_GENERATE);
	CatalogCommit();
	/* [spaces] new configurations, each task in a transaction of its own */
	for (int i = 0; i < n_generate; i++)
	{
		GenerateArg arg = {generate[i], 0};

		/*
		 * new models: a new world (and its refit, which needs a full load:
		 * the next load is one) at once, not at the next idle reload
		 */
		if (!Guarded(GenerateStep, &arg))
			(void) Guarded(GenerateFailedStep, &generate[i]);
		else if (arg.made > 0)
		{
			LiveWorldRebuild();
			Sched.world_changed = true;
		}
	}
	for (int i = 0; i < state->n_tasks; i++)
		state->tasks[i].skip = InCooldown(state->tasks[i].id);
	return any_queued;
}

/*
 * After this step's launches: start the refit it needs, and run now a
 * refit that must come before the next decision.
 */
static void
AfterLaunches(CatState *state)
{
	Sched.refit_pending = LiveWorldRefitStart(state);

	/*
	 * A world rebuilt for new models (a round of generated candidates)
	 * decides nothing before its refit: a refit that ends within
	 * REBUILT_REFIT_MS runs now, and this step decides on this load (under
	 * the auto choice the refit installed), instead of after the loop's
	 * slices and one more load; a longer one goes on in those slices.
	 */
	if (Sched.refit_pending && LiveWorldRefitBlocks() && RefitWork(REBUILT_REFIT_MS))
	{
		SyncWorld(state);
		DecideFreeSlots(state);
		return;
	}

	/*
	 * A world rebuilt on a partial load (the models changed: an admin
	 * enabled one) cannot start its refit, which needs a full load: load
	 * again at once rather than after the idle reload.
	 */
	if (!Sched.refit_pending && !state->full && LiveWorldRefitDue())
	{
		Sched.world_changed = true;
		SetLatch(MyLatch);
	}
}

/*
 * Fill free slots: first runs users queued, then the policy's choices,
 * each on a device placement chooses (src/worker/devices.c).
 */
void
Schedule(void)
{
	CatSlot		free_slots[EASEML_MAX_SLOTS];
	int			nfree;
	CatState	state;
	bool		full = false;
	bool		any_queued;

	if (!ScheduleDue(&full))
		return;
	Sched.world_changed = false;
	last_load = EasemlMonotonicNow();

	nfree = DevicesFreeSlots(free_slots, EASEML_MAX_SLOTS);
	any_queued = LoadTasks(&state);
	SyncWorld(&state);

	if (full)
	{
		PreemptOverShare();
		Sched.refit_pending = LiveWorldRefitStart(&state);
		return;
	}
	if (any_queued)
	{
		if (ClaimRefits(free_slots, nfree) > 0)
			nfree = DevicesFreeSlots(free_slots, EASEML_MAX_SLOTS);
		ClaimQueued(&state, free_slots, nfree);
	}
	DecideFreeSlots(&state);

	/*
	 * [acqgen] Proposals before a grid is spent, after this step's launches
	 * (no slot waits for them); one that beats the grid: a new world with
	 * it at the next step, at once (the loop's latch)
	 */
	if (GenerateEarly(&state))
	{
		LiveWorldRebuild();
		Sched.world_changed = true;
		SetLatch(MyLatch);
		return;
	}
	AfterLaunches(&state);
}

