/*-------------------------------------------------------------------------
 *
 * sql_predict.h
 *	  easeml.predict() in the server: the task and model a statement
 *	  predicts with (sql_predict_cache.c) and how a feature value is read from
 *	  a SQL datum (sql_predict_conv.c).  docs/predict.md describes the user's
 *	  side.
 *
 * IDENTIFICATION
 *	  src/sql/sql_predict.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_PREDICT_H
#define EASEML_PREDICT_H

#include "postgres.h"

#include "fmgr.h"
#include "trainer/predict/tr_predict.h"

/* how one feature is read (PredictConvBuild) */
typedef enum PredictConvHow
{
	CONV_FLOAT8 = 1,			/* float8 (or a domain over it); 0: not built */
	CONV_TO_FLOAT8,				/* the cast function to float8 */
	CONV_DATE,					/* date: seconds since 1970-01-01 */
	CONV_TIMESTAMP,				/* timestamp or timestamptz: seconds */
	CONV_TEXT,					/* a text-like datum as is */
	CONV_TO_TEXT,				/* the cast function to text */
	CONV_OUTPUT					/* the type's output function (cast via I/O) */
} PredictConvHow;

typedef struct PredictConv
{
	PredictConvHow how;
	FmgrInfo	fn;
	bool		boolean;		/* text for a boolean feature: read as boolin */
} PredictConv;

/* The task and model one call site predicts with during a statement. */
typedef struct PredictTask
{
	char	   *name;			/* as the caller wrote it */
	int64		task_id;
	int64		run_id;
	Oid			owner;			/* the tenant: current_user when resolved */
	int			nfeat;
	char	  **features;		/* tasks.features */
	char	  **kinds;			/* tasks.feature_types */
	Oid		   *srctypes;		/* the source's column types (InvalidOid:
								 * gone) */
	TrModel    *model;			/* held until the statement ends */
} PredictTask;

/* sql_predict_cache.c */
extern void PredictResolve(const char *task, MemoryContext mcxt, PredictTask *pt);

/* sql_predict_conv.c */
extern void PredictConvBuild(const PredictTask *pt, int j, Oid type, const char *what,
							 MemoryContext mcxt, PredictConv *conv);
extern void PredictConvApply(PredictConv *conv, Datum v, bool isnull,
							 double *num, const char **str, size_t *len);
extern bool PredictFeatureIsBoolean(const PredictTask *pt, int j);
extern bool PredictBoolSpelling(const char **str, size_t *len);

#endif							/* EASEML_PREDICT_H */
