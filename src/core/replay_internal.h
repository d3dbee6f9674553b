/*-------------------------------------------------------------------------
 *
 * replay_internal.h
 *	  What the files of the replay simulator share and nothing else
 *	  includes; the public interface is replay.h.
 *
 *	  replay_matrix.c	 input matrices from CSV (src/core/csv.c's reader)
 *	  replay_config.c	 policy specs, defaults, the configuration check
 *	  replay_sim.c		 one policy on one draw: the event loop, the draw
 *	  replay_output.c	 curves, times to the loss targets, speedups
 *	  replay_job.c		 every policy on every draw, in slices
 *	  replay_auto.c		 the "auto" choice by nested replays
 *
 * IDENTIFICATION
 *	  src/core/replay_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_REPLAY_INTERNAL_H
#define EASEML_REPLAY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "decision.h"
#include "gp.h"
#include "mixture.h"
#include "policy.h"
#include "replay.h"

/* A growable event list. */
typedef struct EventList
{
	ReplayEvent *ev;
	int			n;
	int			cap;
} EventList;

/*
 * Everything shared by the policies of one draw.  The tenants are the
 * tasks of a DecisionWorld, each its own tenant, exactly as the live
 * scheduler keeps them (src/core/decision.h): task i is tenant i, row rows[i].
 */
typedef struct DrawCtx
{
	const ReplayConfig *cfg;
	int			K;
	int			n;				/* tenants */
	const int  *rows;			/* n_rows usable rows (duplicates removed) */
	int			n_rows;
	int		   *tenant_row;		/* n */
	const int  *prior_row;		/* n_prior rows that build the prior */
	int			n_prior;
	double	   *fstar;			/* n: best quality of each tenant's row */
	GpPrior		prior;
	int			use_mix;		/* a policy uses the history mixture */
	MixPrior	mix;			/* fitted on the prior rows when use_mix */
	PolicyCostModel cost_model;
	int			use_cost_model;
	DecisionWorld world;
	int			have_world;
	/* devices */
	int			M;
	int		   *dev_busy;
	double	   *dev_end;
	int		   *dev_task;
	int		   *dev_arm;
	int			cur_policy;		/* what on_run is told */
	int			cur_draw;
	/* diagnostics */
	double		cost_sq_err;
	long		cost_n;
} DrawCtx;

/*
 * Simulation of one policy on the current draw, one event at a time:
 * ReplaySimBegin resets the tenants, ReplaySimAdvance dispatches every free device and
 * completes the next run(s).
 */
typedef struct SimState
{
	EventList  *events;
	double	   *time_to;
	double	   *worst;
	double		now;
} SimState;

/* replay_config.c */
extern void ReplaySetErr(char *err, size_t errlen, const char *fmt,...)
#if defined(__GNUC__)
			__attribute__((format(printf, 3, 4)))
#endif
			;
extern int	ReplayCheckConfig(const ReplayConfig *cfg, char *err, size_t errlen);

/* replay_sim.c */
extern double ReplayTrueCost(const ReplayConfig *cfg, int r, int k);
extern int	ReplaySimBegin(DrawCtx *c, const PolicyParams *params, uint64_t rng_seed,
						   SimState *s, EventList *events, double *time_to,
						   double *worst);
extern int	ReplaySimAdvance(DrawCtx *c, SimState *s, char *err, size_t errlen);
extern void ReplayDrawFree(DrawCtx *c);
extern void ReplayPermute(const DrawCtx *c, int draw, int *perm);
extern double ReplayFitWork(int n, int K);
extern int	ReplayBuildWorld(DrawCtx *c, char *err, size_t errlen);
extern int	ReplayDrawSetup(DrawCtx *c, int draw, int *perm, MixFitJob *mix,
							int *mix_on, char *err, size_t errlen);
extern int	ReplayDistinctRows(const ReplayConfig *cfg, int *rows);

/* replay_output.c */
extern double ReplayMedian(double *v, int n);
extern double ReplayStepArea(const ReplayEvent *ev, int n, double horizon);
extern int	ReplayOutputAlloc(ReplayOutput *out, int P, int D, int NK, int G);
extern int	ReplayOutputCurves(ReplayOutput *out, const EventList *lists);
extern int	ReplayOutputKeepEvents(ReplayOutput *out, EventList *lists);

#endif							/* EASEML_REPLAY_INTERNAL_H */
