/*-------------------------------------------------------------------------
 *
 * liveworld.c
 *	  The live scheduler's DecisionWorld: the same decision code the replay
 *	  simulator runs (src/core/decision_*.c), kept across scheduling steps.
 *
 * After every load of the catalog, LiveWorldSync brings the world in line
 * with it: tasks that are no longer active leave, new ones join, and each
 * task's candidates take the state the catalog gives them.  A score the
 * world has not seen yet is one incremental posterior update; nothing is
 * refitted on the decision path.  Priors and the cost model are refitted
 * in short steps between decisions (src/core/refit.c).
 *
 * The world lives in malloc'd memory (src/core/decision_*.c is plain C) and
 * survives the loop context's reset; tenants are mapped to world indexes
 * by name in a hash table in TopMemoryContext.
 *
 * IDENTIFICATION
 *	  src/worker/liveworld.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <math.h>

#include "module/easeml.h"
#include "liveworld.h"
#include "miscadmin.h"
#include "module/monoclock.h"
#include "core/refit.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* seconds between refit cycles (docs/scheduler.md, "The live scheduler") */
#define REFIT_INTERVAL 10.0

typedef struct TenantEntry
{
	NameData	name;			/* hash key */
	int			index;			/* in the world */
} TenantEntry;

static DecisionWorld world;
static bool world_ok = false;
static RefitState refit;
static HTAB *tenant_map = NULL;
static char **tenant_names = NULL;	/* by world index, TopMemoryContext */
static int	n_tenant_names = 0;
static uint64 models_sig = 0;
static char applied_policy[POLICY_SPEC_LEN] = "";
static char applied_label[2 * POLICY_SPEC_LEN + 16] = "";	/* decisions.policy */
static char auto_options[POLICY_SPEC_LEN] = ""; /* PolicyAutoOptions of the
												 * setting */
static unsigned char *share_over = NULL;	/* by tenant, LiveWorldStarved */
static int	n_share_over = 0;
/*
 * The "auto" chooser's latest result, kept from a world dropped for a
 * rebuild (the models changed) for the next world's refit: it keeps the
 * choice without a replay when the chooser's inputs did not change
 * (RefitKeepAuto).
 */
static AutoPolicyResult carried_auto;
static bool have_carried_auto = false;
/* the cost model until the first refit cycle installs one */
static CostModel boot_cost;
static bool have_boot_cost = false;

/*
 * When a full load last offered the refit its input: a cycle whose input
 * did not change does not start, and the next full load (which reads the
 * history and the measured costs over every run) waits another interval.
 */
static double last_offered = 0;

/* Signature of the model set: ids, kinds, image flags. */
static uint64
ModelsSignature(const CatState *state)
{
	uint64		h = UINT64CONST(14695981039346656037);

	for (int k = 0; k < state->n_models; k++)
	{
		const CatModel *m = &state->models[k];
		uint64		x = ((uint64) (uint32) m->id << 3) | (m->classification ? 1 : 0) |
			(m->regression ? 2 : 0) | (m->needs_image ? 4 : 0);

		h = (h ^ x) * UINT64CONST(1099511628211);
	}
	return h ^ (uint64) state->n_models;
}

/*
 * Drop the world; keep_auto: the models changed, and the next world's
 * refit gets auto's latest result (carried_auto), else it is forgotten.
 */
static void
DropWorld(bool keep_auto)
{
	if (!keep_auto)
		have_carried_auto = false;
	if (world_ok)
	{
		const AutoPolicyResult *res = RefitAutoLatest(&refit);

		if (keep_auto && res != NULL)
		{
			carried_auto = *res;
			have_carried_auto = true;
		}
		DecisionWorldFree(&world);
		RefitFree(&refit);
	}
	world_ok = false;
	if (have_boot_cost)
		CostModelFree(&boot_cost);
	have_boot_cost = false;
	if (tenant_map)
		hash_destroy(tenant_map);
	tenant_map = NULL;
	for (int i = 0; i < n_tenant_names; i++)
		pfree(tenant_names[i]);
	if (tenant_names)
		pfree(tenant_names);
	tenant_names = NULL;
	n_tenant_names = 0;
	applied_policy[0] = '\0';
	applied_label[0] = '\0';
	last_offered = 0;
	if (share_over)
		pfree(share_over);
	share_over = NULL;
	n_share_over = 0;
}

void
LiveWorldReset(void)
{
	DropWorld(false);
}

void
LiveWorldRebuild(void)
{
	DropWorld(true);
}

/* A new world for the state's model set (the old one is dropped). */
static bool
BuildWorld(const CatState *state)
{
	unsigned char *kinds;
	unsigned char *image;
	PolicyParams params;
	HASHCTL		ctl;
	bool		ok;

	DropWorld(true);
	if (state->n_models == 0)
		return false;
	kinds = palloc(state->n_models);
	image = palloc(state->n_models);
	for (int k = 0; k < state->n_models; k++)
	{
		kinds[k] = (state->models[k].classification ? 1 << DECISION_CLASSIFICATION : 0) |
			(state->models[k].regression ? 1 << DECISION_REGRESSION : 0);
		image[k] = state->models[k].needs_image;
	}
	PolicyParamsDefault(&params, POLICY_FIFO);
	ok = DecisionWorldInit(&world, state->n_models, kinds, image, &params) == POLICY_OK;
	pfree(kinds);
	pfree(image);
	if (!ok)
		return false;
	world.mix_learn_by_refit = 1;	/* mrg=2: fitted in the refit's slices */
	RefitInit(&refit, state->n_models, REFIT_INTERVAL);
	if (have_carried_auto)
		RefitKeepAuto(&refit, &carried_auto);
	have_carried_auto = false;
	world.explain = 1;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = NAMEDATALEN;
	ctl.entrysize = sizeof(TenantEntry);
	ctl.hcxt = TopMemoryContext;
	tenant_map = hash_create("easeml tenants", 256, &ctl,
							 HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	models_sig = ModelsSignature(state);
	world_ok = true;
	return true;
}

/* mrg=2: the task score learned from the history's trajectories */
static int
UsesLearned(const PolicyParams *p)
{
	return PolicyMixScore(p) && p->mix_score == 2;
}

/*
 * The first of "auto"'s candidates (POLICY_AUTO_CANDIDATES) for which want
 * holds, parsed into out; 0 if none.
 */
static int
AutoCandidateWhere(int (*want) (const PolicyParams *), PolicyParams *out)
{
	char		list[sizeof(POLICY_AUTO_CANDIDATES)];

	strlcpy(list, POLICY_AUTO_CANDIDATES, sizeof(list));
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
		 tok = strtok_r(NULL, ",", &save))
		if (PolicyParseSpec(tok, out, NULL, 0) == POLICY_OK && want(out))
			return 1;
	return 0;
}

/*
 * Whether the refit cycle must fit the history mixtures: the policy in
 * effect uses them, or "auto" runs and one of its candidates does.
 */
static int
NeedMixture(void)
{
	PolicyParams p;

	if (PolicyUsesMixture(&world.params))
		return 1;
	return world.params.auto_select && AutoCandidateWhere(PolicyUsesMixture, &p);
}

/*
 * Whether the refit cycle must fit mrg=2's learned task score, and with
 * which params: the policy in effect scores tasks by it, or "auto" runs
 * and a candidate does (the first such; the settings do not enter the
 * fit, MixLearnKey).  Until a cycle
 * installs it, such a policy ranks tasks by mrg=1's estimate.
 */
static int
NeedLearn(PolicyParams *out)
{
	if (UsesLearned(&world.params))
	{
		*out = world.params;
		return 1;
	}
	if (!world.params.auto_select || !AutoCandidateWhere(UsesLearned, out))
		return 0;
	return 1;
}

/*
 * The world's policy and caps from the settings; false if the spec is bad
 * (easeml.policy's check hook refuses such a spec: a safeguard).
 */
static bool
ApplySettings(const LiveSettings *s)
{
	PolicyParams params;

	world.slots = Max(s->slots, 1);
	world.tenant_cap = s->tenant_cap;
	if (PolicyParseSpec(s->policy, &params, NULL, 0) != POLICY_OK)
		return false;
	/* the options after "auto" ("auto:w=60"): its replay and choice get them */
	PolicyAutoOptions(&params, auto_options, sizeof(auto_options));
	/*
	 * "auto" (the default) runs what the refit cycle's replay chose, with
	 * the setting's options now (the choice records those it was made
	 * with; the next cycle replays with these)
	 */
	strlcpy(applied_label, s->policy, sizeof(applied_label));
	if (params.auto_select && RefitAutoPick(&refit) != NULL)
	{
		const AutoPolicyResult *pick = RefitAutoPick(&refit);
		char		base[REPLAY_NAME_LEN];
		char		run[REPLAY_NAME_LEN];
		PolicyParams chosen;

		if (pick->fallback || pick->choice == REPLAY_AUTO_FALLBACK)
			strlcpy(base, POLICY_AUTO_FALLBACK, sizeof(base));
		else if (ReplayAutoCandidate(pick->choice, base, sizeof(base)) == NULL)
			base[0] = '\0';
		if (base[0] != '\0' &&
			PolicyAutoSpec(base, auto_options, run, sizeof(run), NULL, 0) == POLICY_OK &&
			PolicyParseSpec(run, &chosen, NULL, 0) == POLICY_OK)
		{
			params = chosen;
			params.auto_select = 1;
			snprintf(applied_label, sizeof(applied_label), "%s (auto: %s)", s->policy,
					 run);
		}
	}
	if (strcmp(applied_policy, s->policy) != 0 ||
		memcmp(&params, &world.params, sizeof(params)) != 0)
	{
		DecisionSetParams(&world, &params);
		strlcpy(applied_policy, s->policy, sizeof(applied_policy));
	}
	return true;
}

/* The world index of a tenant, added on first sight. */
static int
TenantIndex(const char *name, int cap)
{
	TenantEntry *e;
	bool		found;
	NameData	key;

	namestrcpy(&key, name);
	e = hash_search(tenant_map, &key, HASH_ENTER, &found);
	if (!found)
	{
		e->index = DecisionAddTenant(&world, cap);
		tenant_names = tenant_names == NULL ?
			MemoryContextAlloc(TopMemoryContext, sizeof(char *)) :
			repalloc(tenant_names, sizeof(char *) * (n_tenant_names + 1));
		tenant_names[n_tenant_names++] = MemoryContextStrdup(TopMemoryContext, name);
	}
	return e->index;
}

/* What the catalog says about candidate k of a loaded task. */
static unsigned char
ArmState(const CatTask *t, int k)
{
	if (t->in_flight[k])
		return DECISION_ARM_RUNNING;
	if (t->obs_of[k] >= 0)
		return DECISION_ARM_OBSERVED;
	if (t->is_done[k])
		return DECISION_ARM_DONE;
	return DECISION_ARM_AVAILABLE;
}

/* A task joins the world. */
static DecisionTask *
AddTask(const CatTask *t, int tenant)
{
	DecisionTaskSpec spec;
	DecisionTask *dt;

	memset(&spec, 0, sizeof(spec));
	spec.id = t->id;
	spec.tenant = tenant;
	spec.kind = t->regression ? DECISION_REGRESSION : DECISION_CLASSIFICATION;
	spec.has_image = t->has_image;
	spec.rows = t->n_rows;
	spec.features = t->n_features;
	spec.classes = t->n_classes;
	spec.folds = t->n_folds;
	spec.bins = t->n_bins;
	spec.max_runs = t->max_runs;
	spec.eligible = t->eligible;
	spec.fallback_cost = t->cost;
	dt = DecisionAddTask(&world, &spec);
	if (dt != NULL)
		DecisionTaskSetPrior(&world, dt, RefitOwnPrior(&refit, t->id));
	return dt;
}

/* What the world knows of a loaded task (its runs and counters). */
static uint64
TaskSignature(const CatTask *t)
{
	uint64		x[6] = {t->runs_sig, (uint64) t->n_runs, (uint64) t->max_runs,
		(uint64) t->last_decision, (uint64) t->fail_streak << 32 | (uint64) t->succeeded,
		(uint64) t->streak << 2 | (t->budget_spent ? 2 : 0) | (t->skip ? 1 : 0)};
	uint64		h = UINT64CONST(14695981039346656037);

	for (int i = 0; i < 6; i++)
		h = (h ^ x[i]) * UINT64CONST(1099511628211);
	return h | 1;				/* never 0, the value of a task that just joined */
}

/*
 * Bring one world task in line with its loaded row.  A task whose runs and
 * counters did not change since its last sync is skipped: a load then
 * costs the world O(tasks), not O(tasks x models).  Fallback estimates are
 * refreshed with the full loads of the refit cycles only.
 */
static void
SyncTask(DecisionTask *dt, const CatTask *t, bool full)
{
	DecisionTaskState s;
	uint64		sig = TaskSignature(t);

	if (dt->sync_sig == sig && !full)
		return;
	dt->sync_sig = sig;

	s.score = palloc(sizeof(double) * world.K);
	s.state = palloc(world.K);
	for (int k = 0; k < world.K; k++)
	{
		s.score[k] = t->obs_of[k] >= 0 ? t->obs_y[t->obs_of[k]] : NAN;
		s.state[k] = ArmState(t, k);
	}
	s.seconds = t->seconds;
	s.passes = t->passes;
	s.fallback_cost = full ? t->cost : NULL;
	s.bins = t->n_bins;
	s.n_runs = t->n_runs;
	s.max_runs = t->max_runs;
	/* [budget] a task whose time budget is spent is kept out (7.8) */
	s.blocked = t->skip || t->budget_spent ||
		(t->succeeded == 0 && t->fail_streak >= easeml_max_failures);
	s.last_served = t->last_decision;
	s.streak = t->streak;
	DecisionSyncTask(&world, dt, &s);
	pfree(s.score);
	pfree(s.state);
}

/*
 * What the world's tasks do not tell of a tenant's slots: the trainers it
 * holds (runs of tasks outside the world, paused or completed, count; its
 * queued runs, which the world counts as in flight, do not) and its own
 * queued runs, which wait for its fair share like a task that could run.
 * A tenant whose only work is its queue joins the world without tasks.
 */
static void
SyncExternalRuns(const CatState *state)
{
	int		   *ext;
	int		   *queued;

	for (int i = 0; i < state->n_tenant_running; i++)
		if (state->tenant_queued[i] > 0)
			(void) TenantIndex(state->tenant_names[i], state->tenant_caps[i]);
	ext = palloc0(sizeof(int) * Max(world.n_tenants, 1));
	queued = palloc0(sizeof(int) * Max(world.n_tenants, 1));
	/* a tenant absent from the list holds nothing outside the world */
	for (int i = 0; i < world.n_tenants; i++)
		ext[i] = -DecisionTenantRunning(&world, i);
	for (int i = 0; i < state->n_tenant_running; i++)
	{
		TenantEntry *e;
		NameData	key;

		namestrcpy(&key, state->tenant_names[i]);
		e = hash_search(tenant_map, &key, HASH_FIND, NULL);
		if (e == NULL)
			continue;
		ext[e->index] += state->tenant_running[i];
		queued[e->index] = state->tenant_queued[i];
		DecisionSetTenantCap(&world, e->index, state->tenant_caps[i]);
	}
	for (int i = 0; i < world.n_tenants; i++)
	{
		DecisionSetTenantExternal(&world, i, ext[i]);
		DecisionSetTenantQueued(&world, i, queued[i]);
	}
	pfree(ext);
	pfree(queued);
}

int
LiveWorldQueueCap(const char *tenant)
{
	TenantEntry *e;
	NameData	key;

	if (!world_ok || tenant_map == NULL)
		return INT_MAX;
	namestrcpy(&key, tenant);
	e = hash_search(tenant_map, &key, HASH_FIND, NULL);
	return e == NULL ? INT_MAX : DecisionTenantCap(&world, e->index);
}

void
LiveWorldClaimed(const char *tenant)
{
	TenantEntry *e;
	NameData	key;
	const DecisionTenant *tn;

	if (!world_ok || tenant_map == NULL)
		return;
	namestrcpy(&key, tenant);
	e = hash_search(tenant_map, &key, HASH_FIND, NULL);
	if (e == NULL)
		return;
	tn = &world.tenants[e->index];
	/* one more trainer, one less queued run; nothing else changed */
	DecisionSetTenantExternal(&world, e->index, tn->external + 1);
	DecisionSetTenantQueued(&world, e->index, Max(tn->queued - 1, 0));
}

double
LiveWorldCost(int64 task_id, int model_index)
{
	DecisionTask *dt;

	if (!world_ok || model_index < 0 || model_index >= world.K)
		return NAN;
	dt = DecisionFindTask(&world, task_id);
	return dt != NULL ? dt->cost[model_index] : NAN;
}

/*
 * The cost model fitted at once from what the catalog loaded: before the
 * first refit cycle installs one, and whenever the one in use is young
 * and the load has runs of tasks it did not learn from (RefitCostCold:
 * the catalog loads are full while it is young, LiveWorldRefitDue).  The model in use
 * is replaced only once the new one is fitted.
 */
static void
FitBootCost(const CatState *state)
{
	CostModel	fitted;
	CostData	boot_data;
	bool		first = !have_boot_cost && !(refit.have_live && refit.live.have_fcost);

	CatalogCostData(state, &boot_data);
	if (!first && !(state->full && RefitCostCold(world.family_cost, &boot_data)))
		return;
	if (CostModelFitData(&fitted, state->cost_arms, state->n_models, &boot_data) < 0)
		return;
	if (have_boot_cost)
		CostModelFree(&boot_cost);
	boot_cost = fitted;
	have_boot_cost = true;
	world.installing = 1;		/* new models: views go stale (decision.h) */
	(void) DecisionSetFamilyCost(&world, &boot_cost);
	world.installing = 0;
}

bool
LiveWorldSync(CatState *state, const LiveSettings *settings)
{
	bool	   *seen;
	bool		ok;

	if (!world_ok || ModelsSignature(state) != models_sig)
	{
		if (!BuildWorld(state))
			return false;
	}
	ok = ApplySettings(settings);
	FitBootCost(state);
	world.decision_no = state->decision_no;
	if (DecisionSetArmPerClass(&world, state->per_class) != POLICY_OK)
		ereport(WARNING, (errmsg("easeml: out of memory setting the cost model's arms")));

	seen = palloc0(sizeof(bool) * Max(world.n_tasks, 1));
	for (int i = 0; i < state->n_tasks; i++)
	{
		CatTask    *t = &state->tasks[i];
		int			tenant = TenantIndex(t->tenant, t->tenant_cap);
		DecisionTask *dt = DecisionFindTask(&world, t->id);

		DecisionSetTenantCap(&world, tenant, t->tenant_cap);
		if (dt == NULL)
		{
			dt = AddTask(t, tenant);
			if (dt == NULL)
				continue;
			seen = repalloc(seen, sizeof(bool) * world.n_tasks);
		}
		seen[dt->index] = true;
		SyncTask(dt, t, state->full);
	}
	/* tasks that left the active set; removal moves the last into the gap */
	for (int i = world.n_tasks - 1; i >= 0; i--)
		if (!seen[i])
			DecisionRemoveTask(&world, world.tasks[i]);
	pfree(seen);

	SyncExternalRuns(state);
	return ok;
}

bool
LiveWorldNext(CatState *state, int *task_index, int *model_index,
			  DecisionChoice *choice)
{
	DecisionTask *dt;

	if (!world_ok || DecisionNext(&world, choice) != POLICY_OK ||
		choice->chosen.task < 0)
		return false;
	dt = world.tasks[choice->chosen.task];
	for (int i = 0; i < state->n_tasks; i++)
		if (state->tasks[i].id == dt->id)
		{
			*task_index = i;
			*model_index = choice->chosen.arm;
			return true;
		}
	return false;
}

void
LiveWorldSetPlacement(const unsigned char *open, const double *factor)
{
	if (world_ok && DecisionSetPlacement(&world, open, factor) != POLICY_OK)
		ereport(WARNING,
				(errmsg("easeml: out of memory placing candidates on devices")));
}

void
LiveWorldStarted(CatState *state, int task_index, int model_index)
{
	DecisionTask *dt = DecisionFindTask(&world, state->tasks[task_index].id);

	if (dt != NULL)
		DecisionStart(&world, dt, model_index);
}

int
LiveWorldProposalBeats(const CatState *state, int64 task_id,
					   const CatProposal *p, int n, double margin,
					   double *p_acq, double *grid_acq)
{
	DecisionTask *dt;
	DecisionProposal *props;
	int			win = -1;

	*p_acq = NAN;
	*grid_acq = NAN;
	if (!world_ok || n < 1 || state->n_models != world.K)
		return -1;
	dt = DecisionFindTask(&world, task_id);
	if (dt == NULL)
		return -1;
	props = palloc0(sizeof(DecisionProposal) * n);
	for (int i = 0; i < n; i++)
	{
		int			r = CatalogModelIndex(state, p[i].root_id);
		int			a = CatalogModelIndex(state, p[i].parent_id);
		CostArm		arm;

		props[i].parent = -1;	/* left out unless both are loaded */
		if (r < 0 || a < 0 || state->models[r].generated_for != 0 ||
			(state->arm_root != NULL && state->arm_root[r] >= 0))
			continue;
		props[i].point.root = r;
		props[i].point.d = p[i].n_coords;
		props[i].point.x = p[i].coords;
		props[i].point.x_root = p[i].root_coords;
		props[i].parent = a;
		/* the family formula with its own params, against its parent's */
		arm = state->cost_arms[a];
		arm.work = p[i].work > 0 && isfinite(p[i].work) ? p[i].work : 1;
		arm.width = p[i].width;
		arm.inner = p[i].inner;
		arm.out = p[i].out;
		if (!CostFamilyKnown(state->models[a].family))
			arm.work *= state->models[a].cost_factor > 0 ? state->models[a].cost_factor : 1;
		props[i].log_complexity_delta =
			CostLogComplexityBins(&arm, dt->rows, dt->features, dt->classes,
								  dt->folds, dt->bins) -
			CostLogComplexityBins(&state->cost_arms[a], dt->rows, dt->features,
								  dt->classes, dt->folds, dt->bins);
	}
	if (DecisionProposalBeats(&world, dt, state->arm_root, state->arm_coords,
							  state->space_dims, props, n, margin, &win,
							  p_acq, grid_acq) != POLICY_OK)
		win = -1;
	pfree(props);
	return win;
}

const DecisionTask *
LiveWorldTaskAt(int index)
{
	return world.tasks[index];
}

const char *
LiveWorldTenantName(const DecisionTask *task)
{
	return (task->tenant >= 0 && task->tenant < n_tenant_names) ?
		tenant_names[task->tenant] : "";
}

void
LiveWorldBlock(int64 task_id)
{
	DecisionTask *t = world_ok ? DecisionFindTask(&world, task_id) : NULL;

	if (t != NULL)
	{
		DecisionBlock(&world, t, 1);
		t->sync_sig = 0;		/* the next sync unblocks it */
	}
}

bool
LiveWorldRefitStart(CatState *state)
{
	RefitInput	in;
	double		now;

	if (!world_ok)
		return false;
	if (refit.running || !state->full)
		return refit.running || world.n_stale > 0;
	memset(&in, 0, sizeof(in));
	in.K = state->n_models;
	in.m = state->m_history;
	in.cells = state->history;
	in.row_task = (const int64_t *) state->history_task;
	in.row_kind = state->history_kind;
	(void) CatalogCostData(state, &in.cost);
	in.per_class = state->per_class;
	in.cost_task = (const int64_t *) state->cost_task;
	in.devices = world.slots;
	in.arms = state->cost_arms;
	in.arm_root = state->arm_root;
	in.arm_coords = state->arm_coords;
	in.space_dims = state->space_dims;
	in.need_mix = NeedMixture();
	in.need_learn = in.need_mix && NeedLearn(&in.learn);
	if (world.params.auto_select)
		strlcpy(in.auto_options, auto_options, sizeof(in.auto_options));
	now = (double) EasemlMonotonicNow() / USECS_PER_SEC;
	last_offered = now;
	return RefitMaybeStart(&refit, &in, now) != 0 || world.n_stale > 0;
}

/*
 * Stale views refreshed per call of LiveWorldRefitWork: about 1 ms with
 * the history mixture on 1,011 rows x 41 models; the scheduler's refit
 * slice (REFIT_SLICE_MS) bounds the calls between decisions.
 */
#define STALE_BATCH 8

bool
LiveWorldRefitWork(void)
{
	int			rc;

	if (!world_ok)
		return false;
	/* the views the last install left stale first, a batch per call */
	if (world.n_stale > 0)
	{
		int			left = DecisionRefreshStale(&world, STALE_BATCH);

		if (left >= 0)
			return left > 0 || refit.running;
		/* the refit goes on: a stale pick is refreshed when it is picked */
		ereport(WARNING, (errmsg("easeml: out of memory refreshing the decisions' views")));
	}
	if (!refit.running)
		return false;
	/* an install must not refresh 1,000 views in one decision (decision.h) */
	world.installing = 1;
	rc = RefitStep(&refit, &world);
	world.installing = 0;
	if (rc < 0)
		ereport(WARNING, (errmsg("easeml: out of memory refitting the priors")));
	return refit.running || world.n_stale > 0;
}

int
LiveWorldStarved(const char **one_starved)
{
	unsigned char *starved;
	int			n;

	*one_starved = NULL;
	if (!world_ok || world.n_tenants == 0)
		return 0;
	if (share_over)
		pfree(share_over);
	share_over = MemoryContextAlloc(TopMemoryContext, world.n_tenants);
	n_share_over = world.n_tenants;
	starved = palloc(world.n_tenants);
	n = DecisionFairShares(&world, starved, share_over);
	for (int i = 0; i < world.n_tenants && *one_starved == NULL; i++)
		if (starved[i] && i < n_tenant_names)
			*one_starved = tenant_names[i];
	pfree(starved);
	return n;
}

bool
LiveWorldOverShare(const char *tenant)
{
	TenantEntry *e;
	NameData	key;

	if (!world_ok || tenant_map == NULL)
		return false;
	namestrcpy(&key, tenant);
	e = hash_search(tenant_map, &key, HASH_FIND, NULL);
	return e != NULL && e->index < n_share_over && share_over[e->index];
}

void
LiveWorldRefitNow(CatState *state, int64 only_task)
{
	if (!world_ok)
		return;
	refit.only_task = only_task;
	if (!LiveWorldRefitStart(state))
		return;
	while (LiveWorldRefitWork())
		CHECK_FOR_INTERRUPTS();
}

/* The history the task's prior learned from, for explain. */
static void
DescribePrior(const CatState *state, const DecisionTask *dt, StringInfo why)
{
	int			seed = 0,
				tasks = 0;

	for (int i = 0; i < state->m_history; i++)
		if (state->history_kind[i] == dt->kind && state->history_task[i] != dt->id)
		{
			if (state->history_task[i] == 0)
				seed++;
			else
				tasks++;
		}
	appendStringInfo(why, "; prior: %s history only, %d seed row(s) and %d other task(s)%s",
					 dt->kind == DECISION_REGRESSION ? "regression" : "classification",
					 seed, tasks, dt->own_prior ? ", without this task's own scores" : "");
}

/*
 * The history mixture the policy ranks by (acq=mix, mrg=1|2): how many
 * rows weigh for this task (its own row does not), or that there is none
 * yet and the GP ranks alone (decision_view.c); with mrg=2 whether the learned
 * task score is installed.
 */
static void
DescribeMixture(const DecisionTask *dt, StringInfo why)
{
	const MixPrior *mp = world.mix[dt->kind];
	const int64_t *owner = world.mix_task[dt->kind];
	bool		own = false;

	if (!PolicyUsesMixture(&world.params))
		return;
	if (mp == NULL)
	{
		appendStringInfoString(why, "; history mixture: none yet (fewer than 2 history rows of this kind, or no refit yet), ranked by the GP");
		return;
	}
	for (int r = 0; owner != NULL && r < mp->m; r++)
		own |= owner[r] == dt->id;
	appendStringInfo(why, "; history mixture: %d row(s)%s, bandwidth %.3g",
					 mp->m - (own ? 1 : 0), own ? " besides this task's own" : "",
					 world.params.mix_shift ? mp->bw_shift : mp->bw);
	if (PolicyMixScore(&world.params) && world.params.mix_score == 2)
	{
		const MixLearn *ml = world.mix_learn[dt->kind];

		if (ml != NULL && ml->ok && MixLearnSameFit(&ml->params, &world.params))
			appendStringInfo(why, "; learned task score: fitted on %d state(s) by the refit cycle", ml->n);
		else
			appendStringInfoString(why, "; learned task score: none yet for these options (fewer than 3 rows, or no refit since), ranked by the mixture's remaining regret");
	}
}

/* Why the task would or would not get the next free slot. */
static void
DescribeTurn(const CatTask *t, DecisionTask *dt, StringInfo why)
{
	DecisionChoice choice;
	const DecisionTenant *tn = &world.tenants[dt->tenant];
	int			shared;

	if (DecisionNext(&world, &choice) != POLICY_OK)
		choice.chosen.task = -1;
	shared = DecisionSharedCap(&world);
	if (t->succeeded == 0 && t->fail_streak >= easeml_max_failures)
		appendStringInfo(why, "kept out: %d failed run(s) in a row without a success (easeml.max_failures = %d)",
						 t->fail_streak, easeml_max_failures);
	else if (t->budget_spent)
		appendStringInfo(why, "done: its runs spent %.1f s of its time budget of %g s%s",
						 t->spent, t->budget,
						 t->n_running > 0 ? " (the runs in flight finish)" : "");
	else if (dt->max_runs > 0 && dt->n_runs >= dt->max_runs)
		appendStringInfo(why, "done: its %d run(s) reached max_runs", dt->n_runs);
	else if (dt->n_left == 0 || dt->best_arm < 0)
		appendStringInfoString(why, "nothing to choose now: every candidate it may run has run, failed or is running");
	else if (!DecisionEligible(&world, dt))
	{
		appendStringInfo(why, "waits: its tenant runs %d trainer(s), at its cap of ",
						 tn->running + tn->external);
		if (tn->cap > 0 && tn->cap <= shared)
			appendStringInfo(why, "%d (its max_parallel)", tn->cap);
		else
			appendStringInfo(why, "%d (a fair share of %d slot(s) over %d waiting tenants)",
							 shared, world.slots, world.n_waiting);
	}
	else if (choice.chosen.task == dt->index)
		appendStringInfo(why, "next: the next free slot trains rank 1 for this task (rule: %s)",
						 PolicyRuleName(choice.rule));
	else if (choice.chosen.task >= 0 &&
			 world.tasks[choice.chosen.task]->tenant == dt->tenant)
		appendStringInfo(why, "eligible: the next free slot goes to your task %lld first (rule: %s)",
						 (long long) world.tasks[choice.chosen.task]->id,
						 PolicyRuleName(choice.rule));
	else
		appendStringInfo(why, "eligible: the next free slot goes to another tenant's task first (rule: %s)",
						 PolicyRuleName(choice.rule));
}

int
LiveWorldExplain(const CatState *state, int64 task_id, DecisionCandidate *out,
				 int max, StringInfo why)
{
	DecisionTask *dt = world_ok ? DecisionFindTask(&world, task_id) : NULL;
	const CatTask *t = NULL;
	int			n;

	for (int i = 0; i < state->n_tasks && t == NULL; i++)
		if (state->tasks[i].id == task_id)
			t = &state->tasks[i];
	if (dt == NULL || t == NULL)
		return -1;
	n = DecisionRankArms(&world, dt, out, max);
	if (n < 0)
		n = 0;
	DescribeTurn(t, dt, why);
	appendStringInfo(why, "; candidates ranked by %s", PolicyAcqUnit(&world.params));
	DescribePrior(state, dt, why);
	DescribeMixture(dt, why);
	return n;
}

const char *
LiveWorldPolicyLabel(void)
{
	return applied_label;
}

const AutoPolicyResult *
LiveWorldAutoUnrecorded(void)
{
	if (!world_ok || !refit.have_live || refit.auto_made == refit.auto_recorded)
		return NULL;
	return &refit.live.auto_pick;
}

void
LiveWorldAutoMarkRecorded(void)
{
	refit.auto_recorded = refit.auto_made;
}

bool
LiveWorldRefitBlocks(void)
{
	return world_ok && refit.running && !refit.have_live;
}

bool
LiveWorldRefitDue(void)
{
	double		now = (double) EasemlMonotonicNow() / USECS_PER_SEC;

	if (!world_ok)
		return true;
	/* a world built since the last refit has no priors: it decides nothing */
	if (!refit.running && !refit.have_live)
		return true;
	/*
	 * a young cost model (RefitCostCold) while an active task may teach
	 * it: the measured runs at once
	 */
	if (world.family_cost != NULL && world.family_cost->n_tasks < REFIT_COST_TASKS &&
		world.family_cost->n_tasks < world.n_tasks)
		return true;
	return !refit.running && now - refit.last_start >= refit.interval &&
		now - last_offered >= refit.interval;
}
