/*-------------------------------------------------------------------------
 *
 * tr_live.h
 *	  What the live mode's two files share: tr_live.c (a run's steps, its
 *	  report) and tr_live_ensemble.c (an ensemble run).  Internal to the
 *	  trainer's live mode.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_live.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef TR_LIVE_H
#define TR_LIVE_H

#include <stdbool.h>

#include <json-c/json.h>
#include <libpq-fe.h>

#include "trainer.h"
#include "tr_metrics.h"
#include "trainer/gpu/tr_gpu.h"

/* where and how often progress goes (LiveSendProgress) */
typedef struct ProgressState
{
	PGconn	   *conn;
	const char *run_id;
	double		last;
	double		last_reconnect;
} ProgressState;

/* One live run as LiveRun's steps see it. */
typedef struct LiveCtx
{
	const char *run_id;
	const char *run_dir;
	int			load_only;		/* scripts/bench/dataload.sh: stop after loading */
	int			threads;
	PGconn	   *conn;
	json_object *spec;
	json_object *params;		/* the model's, or NULL */
	const char *family;
	const char *query;			/* the COPY query of the rows */
	long		max_rows;		/* the tenant's limit on rows with a target; 0: none */
	int			kind;
	int			d;				/* feature columns */
	TrPrepOptions opt;
	char	  **command;		/* an external trainer's, or NULL */
	const TrGpuOps *gpu;
	TrTable		tab;
	long		bytes;
	double		load_seconds;
} LiveCtx;

extern void LiveLog(const char *fmt,...) pg_attribute_printf(1, 2);
extern int	LiveFail(const char *dir, const char *fmt,...) pg_attribute_printf(2, 3);
extern bool LiveCancelled(void);
extern int	LiveKeepMetrics(json_object *metrics);
extern void LiveSendProgress(ProgressState *ps, int epoch, double loss, double score);
extern void LiveKeepSqlstate(const PGresult *res);
extern int	LiveLoadFailure(PGconn *conn, const char *sqlstate);
extern const char *LiveJsonString(json_object *obj, const char *key);
extern void LiveStoreArtifact(LiveCtx *c, const TrResult *result, json_object *metrics);

/* tr_live_ensemble.c */
extern int	LiveEnsembleRun(LiveCtx *c);

#endif							/* TR_LIVE_H */
