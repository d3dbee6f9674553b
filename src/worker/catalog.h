/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  The scheduler's view of the easeml tables: the statements about tasks,
 *	  runs, models and devices, one file per job:
 *
 *	  catalog.c          transactions (CatalogBegin/Commit), readiness, recovery
 *	  catalog_load.c     loading the world (CatState), also from a backend
 *	  catalog_runs.c     the runs of active tasks, kept between loads
 *	  catalog_claim.c    claiming queued runs and refits for free slots
 *	  catalog_record.c   recording decisions, launches and how runs ended
 *	  catalog_devices.c  devices, the probe, device kinds and their factors
 *
 *	  The other worker files that run SQL (trainer_jobs.c, policy_choice.c,
 *	  retention.c) own their tables and use the same transactions.
 *
 * IDENTIFICATION
 *	  src/worker/catalog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_CATALOG_H
#define EASEML_CATALOG_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "core/costmodel.h"
#include "core/memmodel.h"
#include "core/placement.h"

/* A candidate model. */
typedef struct CatModel
{
	int32		id;
	char	   *name;
	bool		classification;
	bool		regression;
	bool		needs_image;
	double		cost_factor;	/* the admin's relative cost */
	double		cost_work;		/* easeml._cost_work: rounds, trees,
								 * epochs, width relative to the family's
								 * default */
	bool		per_class;		/* fits a model per class (cost x classes) */
	char	   *family;
	char	   *params;			/* as text */
	int			n_device_kinds; /* device kinds it can use, preferred first */
	PlaceKind	device_kinds[PLACE_N_KINDS];
	double		kind_factor[PLACE_N_KINDS];	/* cost on a kind / on the CPU */
	MemArm		mem;			/* what drives its memory (src/core/memmodel.h) */
	/* [spaces] docs/scheduler.md 7.9 */
	int64		generated_for;	/* a generated candidate's task, 0: none */
	int			root;			/* the loaded model it descends from, -1 */
	int			n_coords;		/* scaled coordinates in its family's space
								 * (generated candidates and their roots) */
	double	   *coords;
} CatModel;

/* An active task and its runs, as arm indexes into the model array. */
typedef struct CatTask
{
	int64		id;
	char	   *tenant;
	char	   *name;
	bool		regression;
	bool		has_image;
	double		n_rows;			/* rows (x folds), features and classes,
								 * for cost estimates */
	double		n_features;
	double		n_classes;		/* 1 for regression */
	double		n_folds;		/* k-fold tasks' k, else 1 */
	double		n_bins;			/* the data's histogram bins, which its
								 * tree runs reported; NaN: none yet */
	int			max_runs;		/* 0: unlimited */
	double		budget;			/* tasks.budget_seconds, 0: none */
	double		spent;			/* seconds its search spent as of the load
								 * (easeml._spent_seconds); 0 without a
								 * budget */
	bool		budget_spent;	/* budget > 0 and spent >= budget: no
								 * more runs are proposed */
	int			tenant_cap;		/* tenant's max_parallel, 0: none */
	int64		last_decision;	/* id of its latest decision, -1: none */
	bool		has_version;	/* only runs on its snapshot version count */
	int32		snapshot_version;
	bool		reactivated;	/* failures before reactivated_at do not
								 * count */
	TimestampTz reactivated_at;	/* wall clock (SQL) */

	int			n_runs;			/* every run, any status */
	int			n_obs;			/* succeeded, with a score */
	int		   *obs_arm;
	double	   *obs_y;
	int			n_done;			/* failed or cancelled: never again */
	int		   *done_arm;
	int			n_running;		/* queued or running */
	int		   *running_arm;
	uint64		runs_sig;		/* signature of its runs (LoadRuns) */
	int			fail_streak;	/* failures since the last success */
	int			succeeded;
	int			streak;			/* successes since the best improved */
	char	   *last_error;

	unsigned char *eligible;	/* per model */
	int			n_over_memory;	/* models of its kind kept off: their memory
								 * floor is over easeml.trainer_memory_limit */
	double	   *cost;			/* per model, easeml.cost_estimates seconds */
	double	   *seconds;		/* per model, measured seconds, NaN if none */
	double	   *passes;			/* per model, the passes (metrics "epochs")
								 * of the run whose seconds those are, NaN
								 * if none */
	int		   *obs_of;			/* per model: index in obs_arm, or -1 */
	bool	   *in_flight;		/* per model: in running_arm */
	bool	   *is_done;		/* per model: in done_arm */
	bool		skip;			/* left out for the rest of this step */

	/* devices (src/worker/devices.c) */
	int			n_bans;			/* (arm, device) pairs it must not use */
	int		   *ban_arm;
	char	  **ban_device;
} CatTask;

/* Everything one scheduling step needs, loaded in one transaction. */
typedef struct CatState
{
	int			n_models;
	CatModel   *models;
	int			n_tasks;
	CatTask    *tasks;
	int			m_history;		/* rows of history (prior) */
	double	   *history;		/* m_history x n_models, NaN = unknown */
	int64	   *history_task;	/* per row: its task's id, 0 for seed rows */
	unsigned char *history_kind;	/* per row: DECISION_CLASSIFICATION, ... */
	/* measured costs: tasks with succeeded runs x models, for the cost model */
	int			m_cost;
	double	   *cost_runtime;	/* m_cost x n_models seconds, NaN = unknown */
	double	   *cost_sizes;		/* m_cost x 3: rows, features, classes */
	double	   *cost_train;		/* m_cost x n_models: the trainer's fit
								 * seconds of the same runs, NaN = unknown */
	double	   *cost_folds;		/* m_cost: each task's folds (1: none) */
	double	   *cost_passes;	/* m_cost x n_models: the passes (epochs)
								 * the same runs reported, NaN = unknown */
	double	   *cost_bins;		/* m_cost: each task's histogram bins
								 * (metrics "bins"), NaN = unknown */
	int64	   *cost_task;		/* m_cost task ids */
	CostArm    *cost_arms;		/* n_models: what drives each one's cost
								 * (easeml._cost_shape, src/core/costmodel.h) */
	bool		full;			/* history, measured costs and fresh
								 * fallback estimates were loaded */
	int64		decision_no;	/* next decision id */
	char		policy[64];		/* effective policy */
	unsigned char *per_class;	/* n_models: CatModel.per_class */
	/* [spaces] generated candidates' roots and coordinates for the refit,
	 * NULL when none is loaded (docs/scheduler.md 7.9) */
	int		   *arm_root;		/* n_models */
	double	   *arm_coords;		/* n_models x space_dims */
	int			space_dims;
	int			n_tenant_running;
	char	  **tenant_names;	/* tenants with queued/running runs */
	int		   *tenant_running; /* their trainers (runs 'running') */
	int		   *tenant_queued;	/* their own queued runs a slot could start */
	int		   *tenant_caps;	/* their max_parallel, 0: none */
} CatState;

/* A candidate a decision saw (the chosen one or a runner-up). */
typedef struct CatCandidate
{
	int64		task_id;
	const char *tenant;
	int32		model_id;
	double		mu;
	double		sigma;
	double		est_seconds;
	double		acquisition;
	double		score;
} CatCandidate;

#define CAT_RUNNERS_UP 3

/* One decision as it is recorded (easeml.decisions, decision_candidates). */
typedef struct CatDecision
{
	const char *policy;
	const char *rule;
	const char *gp_status;
	int			eligible;
	CatCandidate chosen;
	int			n_tasks;		/* runner-up tasks */
	CatCandidate tasks[CAT_RUNNERS_UP];
	int			n_models;		/* the chosen task's runner-up models */
	CatCandidate models[CAT_RUNNERS_UP];
} CatDecision;

/* A run the scheduler has claimed and must launch. */
typedef struct CatClaim
{
	int64		run_id;
	int64		task_id;
	int32		model_id;
	char	   *tenant;
	int			slot;
	const char *device;
} CatClaim;

/* A free slot on a device, offered to queued runs. */
typedef struct CatSlot
{
	int			slot;
	const char *device;
	const char *kind;
} CatSlot;

/* A device of easeml.devices, as the scheduler uses it. */
typedef struct CatDevice
{
	char	   *name;
	char	   *kind;
	int			ordinal;
	int			slots;			/* effective: easeml._device_slots() */
	bool		usable;			/* enabled and present */
} CatDevice;

/* Index of a model in state->models (loaded in id order), or -1. */
static inline int
CatalogModelIndex(const CatState *state, int32 model_id)
{
	int			lo = 0,
				hi = state->n_models - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (state->models[mid].id == model_id)
			return mid;
		if (state->models[mid].id < model_id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

extern void CatalogBegin(const char *activity);
extern void CatalogCommit(void);
/* The same inside a backend's own transaction (easeml.explain). */
extern void CatalogAttach(void);
extern void CatalogDetach(void);
/* CatalogReady: is the extension created, at this library's version? */
typedef enum CatalogStatus
{
	CATALOG_ABSENT,				/* not created (or dropped) */
	CATALOG_OTHER_VERSION,		/* created, at another version: wait */
	CATALOG_READY
} CatalogStatus;

extern CatalogStatus CatalogReady(void);
extern char *CatalogBootstrapUser(void);
/*
 * Load what a scheduling step needs; full adds the history and the
 * measured costs the refits learn from (src/core/refit.c), which only a refit
 * cycle reads.
 */
extern void CatalogLoadState(CatState *state, bool full);
extern bool CatalogOverMemory(const CatModel *m, const CatTask *t, double limit);
extern const CostData *CatalogCostData(const CatState *state, CostData *data);
/* The same with the runs of the scheduler's kept store (src/worker/catalog_runs.c). */
extern void CatalogLoadStateKept(CatState *state, bool full);
/* CatalogLoadState as the bootstrap superuser, from a backend (easeml.explain,
 * easeml.cost_estimates); auto_spec (may be NULL) gets the auto policy's last
 * choice.  src/worker/catalog_load.c */
extern void CatalogLoadAsScheduler(CatState *state, char **auto_spec);
extern bool CatalogCancelQueued(void);
extern int	CatalogClaimQueued(const CatSlot *slots, int nslots,
							   const char *const *tenants, const int *caps,
							   int ntenants, CatClaim *claims);
extern int	CatalogClaimRefits(const CatSlot *slots, int nslots, CatClaim *claims);
extern int	CatalogQueueMissingRefits(void);
extern void CatalogSetClaimEstimate(int64 run_id, double est_seconds);
extern void CatalogRequeueInterrupted(int64 run_id, bool preempted);
extern int64 CatalogCreateRun(const CatDecision *decision, int slot,
							  const CatDevice *device);
extern void CatalogRunStarted(int64 run_id, int pid, const char *log_path);
extern void CatalogRunFailedToStart(int64 run_id, const char *error);
extern void CatalogFinishRun(int64 run_id, const char *status, int exit_code,
							 const char *metrics_json, const char *error);
extern void CatalogFinishReportedRun(int64 run_id, const char *metrics_json);
extern void CatalogFailTaskOfRun(int64 run_id, const char *error);
extern void CatalogDisableModelOfRun(int64 run_id, const char *error);
extern int	CatalogGoneRuns(int64 *ids, int n);
extern void CatalogCheckRuns(const int64 *run_ids, int n, int *verdict);
extern int	CatalogUntrackedRuns(const int64 *tracked, int n, bool settled,
								 int64 *ids, int max);
extern int	CatalogEndUntracked(int64 run_id, const char *why);
extern int	CatalogCloseTasks(const CatState *state, int64 *generate, int max_generate);
extern int	CatalogGenerate(int64 task);
extern void CatalogGenerateEnd(int64 task, const char *why);

/*
 * [acqgen] A proposal of easeml._propose_candidates (docs/scheduler.md
 * 7.9): a configuration around one of the task's best runs, not yet a
 * model row, with what drives its cost (easeml._cost_shape).
 */
typedef struct CatProposal
{
	char	   *family;
	char	   *params;			/* as text */
	int64		run_id;			/* the run it was proposed around */
	int32		root_id;		/* the grid model it descends from */
	int32		parent_id;		/* the model whose params it perturbs */
	int			n_coords;		/* scaled coordinates in its family's space */
	double	   *coords;
	double	   *root_coords;	/* n_coords: its root's */
	double		work;			/* easeml._cost_shape */
	double		width;
	double		inner;
	double		out;
} CatProposal;

#define CAT_MAX_PROPOSALS 16

extern bool CatalogMayGenerateEarly(const CatState *state, const CatTask *t);
extern int	CatalogPropose(int64 task, int n, CatProposal *out, bool *stopped);
extern bool CatalogAddGenerated(int64 task, const CatProposal *p);

/*
 * The runs of active tasks (src/worker/catalog_runs.c): folded into the loaded
 * tasks, from the kept store brought up to date or from a fresh read.
 */
extern void CatalogLoadRuns(CatState *state, bool use_kept, MemoryContext cxt);
/* Forget the kept store: the next kept load reads every run again. */
extern void CatalogForgetRuns(void);
extern void CatalogRunsCounters(int64 *full_reads, int64 *changed_rows);
/* NULL when two loads in one snapshot are equal, else what differs. */
extern char *CatalogStatesDiffer(const CatState *a, const CatState *b);
/* CatalogBegin in a REPEATABLE READ transaction: one snapshot throughout. */
extern void CatalogBeginRepeatable(const char *activity);

/* What the run budget needs to know about a run in flight. */
typedef struct CatRunBudget
{
	char	   *tenant;
	double		est_seconds;	/* its decision's estimate, 0 if none */
	int			preempted;		/* earlier runs of its candidate preempted */
} CatRunBudget;

extern void CatalogRunBudgets(const int64 *run_ids, int n, CatRunBudget *out);

/* devices (src/worker/catalog_devices.c) */
extern int	CatalogLoadDevices(const char *launcher, CatDevice **devices);
extern int	CatalogRecordProbe(const char *probe, int protocol);
extern void CatalogLoadPlacement(CatState *state);

#endif							/* EASEML_CATALOG_H */
