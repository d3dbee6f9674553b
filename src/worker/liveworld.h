/*-------------------------------------------------------------------------
 *
 * liveworld.h
 *	  The live scheduler's DecisionWorld (src/core/decision_*.c), kept across
 *	  scheduling steps and brought in line with the catalog after each load.
 *
 * IDENTIFICATION
 *	  src/worker/liveworld.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_LIVEWORLD_H
#define EASEML_LIVEWORLD_H

#include "catalog.h"
#include "lib/stringinfo.h"
#include "core/autopolicy.h"
#include "core/decision.h"

/* Settings that shape the world (GUCs, the effective policy). */
typedef struct LiveSettings
{
	const char *policy;			/* a policy spec (easeml.policies()) */
	int			slots;			/* easeml.max_workers */
	int			tenant_cap;		/* easeml.max_parallel_per_tenant */
} LiveSettings;

/*
 * Bring the world in line with a freshly loaded state: tasks come and go,
 * new results are added to the posteriors incrementally, runs in flight
 * and caps are updated.  Returns false when the policy spec is unknown
 * (the world then keeps its previous policy).
 */
extern bool LiveWorldSync(CatState *state, const LiveSettings *settings);

/*
 * The next decision: the index of the task in state->tasks and of the
 * model in state->models, with the world's reasons; false when nothing
 * can run.  The caller records it and then calls LiveWorldStarted.
 */
extern bool LiveWorldNext(CatState *state, int *task_index, int *model_index,
						  DecisionChoice *choice);
extern void LiveWorldStarted(CatState *state, int task_index, int model_index);

/*
 * [acqgen] Whether one of n proposals for a task beats its best untried
 * candidate by the margin (DecisionProposalBeats, docs/scheduler.md 7.9):
 * the proposal's index, or -1 (no world, no prior yet, none beats).
 * *p_acq and *grid_acq get the two acquisitions (NaN where none).
 */
extern int	LiveWorldProposalBeats(const CatState *state, int64 task_id,
								   const CatProposal *p, int n, double margin,
								   double *p_acq, double *grid_acq);

/* A world task by its index in a DecisionChoice, and its tenant's name. */
extern const DecisionTask *LiveWorldTaskAt(int index);
extern const char *LiveWorldTenantName(const DecisionTask *task);

/* Which candidates can start now and their cost factors (src/worker/devices.c). */
extern void LiveWorldSetPlacement(const unsigned char *open, const double *factor);

/* Keep a task out until the next sync (its decision could not be recorded). */
extern void LiveWorldBlock(int64 task_id);

/*
 * Refit work off the decision path (src/core/refit.c): start a cycle if one is
 * due for the loaded state (a full load), then do one step per call.  Both return true
 * while steps are pending.
 */
extern bool LiveWorldRefitStart(CatState *state);
/* Should the next load be a full one (a refit cycle may start)? */
extern bool LiveWorldRefitDue(void);
extern bool LiveWorldRefitWork(void);
/*
 * Whether the world decides nothing until the refit cycle under way
 * installs: a world built since (LiveWorldRebuild, new models) has no
 * priors yet.
 */
extern bool LiveWorldRefitBlocks(void);

/*
 * Fair shares while every slot is busy (DecisionFairShares): returns how
 * many tenants wait below their fair share and names one; afterwards
 * LiveWorldOverShare says whether a tenant holds more than its share.
 */
extern int	LiveWorldStarved(const char **one_starved);
extern bool LiveWorldOverShare(const char *tenant);

/*
 * A tenant's own queued runs count against its fair share: the trainers it
 * may hold now (INT_MAX: any), for the claim of its queued runs; after a
 * claim, LiveWorldClaimed counts the new trainer before the next decision.
 * LiveWorldCost: the world's estimate of a candidate of a task (NaN when
 * the task is not in the world), for the run budget of a claimed run.
 */
extern int	LiveWorldQueueCap(const char *tenant);
extern void LiveWorldClaimed(const char *tenant);
extern double LiveWorldCost(int64 task_id, int model_index);

/*
 * easeml.explain, in a backend: fit the priors and the cost model now, the
 * own prior of one task only (the scheduler does the same in slices), then
 * rank that task's candidates (best first, at most max) and say in why
 * whether and when it would be served.  Returns the number of candidates,
 * or -1 when the task is not in the world (not active).
 */
extern void LiveWorldRefitNow(CatState *state, int64 only_task);
extern int	LiveWorldExplain(const CatState *state, int64 task_id,
							 DecisionCandidate *out, int max, StringInfo why);

/*
 * The "auto" policy's latest choice (src/core/autopolicy.h) if it was not
 * recorded yet, else NULL; LiveWorldAutoMarkRecorded marks it recorded.
 */
extern const AutoPolicyResult *LiveWorldAutoUnrecorded(void);
/* The policy as decisions record it: the setting, "default (auto: SPEC)" */
extern const char *LiveWorldPolicyLabel(void);
extern void LiveWorldAutoMarkRecorded(void);

/* Forget everything (the extension was dropped). */
extern void LiveWorldReset(void);
/*
 * The models changed: a new world at the next sync, whose refit keeps the
 * "auto" choice of this one when the chooser's inputs did not change
 * (RefitKeepAuto); no decision until that refit installs its priors.
 */
extern void LiveWorldRebuild(void);

#endif							/* EASEML_LIVEWORLD_H */
