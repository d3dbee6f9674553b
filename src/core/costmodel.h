/*-------------------------------------------------------------------------
 *
 * costmodel.h
 *	  The live scheduler's cost model: how long a built-in candidate will
 *	  train on a task, from the task's profiled size, before and while its
 *	  runs finish (docs/scheduler.md 7.4).
 *
 * A run's wall time is a fixed part plus work:
 *
 *	   seconds = o0 + o1 x cells + rate(model) x complexity(model, task)
 *
 * o0 is process start, scoring and writing the result; o1 x cells (rows x
 * features) is reading and preparing the data.  complexity is a formula
 * per family in rows n, features d and classes c (CostLogComplexity) times
 * the model's work from its parameters (rounds, trees, epochs, widths);
 * for a trainer that stops when it converges, times the share of its
 * passes it is expected to make (learned from the passes runs reported).
 * rate starts at a reference rate per family, is scaled by one machine
 * factor learned from every measured run, then refined per family and per
 * model, each level shrunk toward the one above by a pseudo-count.  A
 * task's own finished runs then move its estimates through a Gaussian
 * process on log residuals whose covariance has a task part (all models),
 * a family part and a model part: the first heavy run of a task rescales
 * all its models, a family's the more.
 *
 * Plain C, no PostgreSQL headers: the scheduler, explain and the unit
 * tests share it.
 *
 * IDENTIFICATION
 *	  src/core/costmodel.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_COSTMODEL_H
#define EASEML_COSTMODEL_H

#include "gp.h"

/* Complexity formulas (n rows, d features, c classes, C per-class factor). */
typedef enum CostFormula
{
	COST_LINEAR = 0,			/* n d C: linear models, custom */
	COST_RIDGE,					/* n d (d + c): normal equations */
	COST_KNN,					/* (validation x training rows + 2.26 n d)
								 * / 0.16: n^2 on one split, plus cells */
	COST_FOREST,				/* n depth sqrt(d): trees on sqrt(d)
								 * candidate features per split, depth
								 * log2 n or the limit */
	COST_NB,					/* n d c: per-class means and variances */
	COST_NET,					/* n (d width + inner + out c): layer
								 * products per row and epoch (cnn) */
	COST_MLP,					/* the same per row plus 50 per hidden
								 * unit (element-wise work), times the
								 * trainer's default epochs: about 2,000
								 * steps of 200 rows, 10 to 200 epochs */
	COST_BOOST,					/* (training rows x d + leaves x bins) /
								 * 0.8 x C: each round's tree histograms
								 * its rows' cells and scans the data's
								 * histogram bins at every split (gbt) */
	COST_FORMULAS
} CostFormula;

/* What drives one model's cost (from its family and parameters). */
typedef struct CostArm
{
	CostFormula formula;
	int			family;			/* index >= 0; models of a family pool */
	double		work;			/* rounds, trees, epochs, iterations
								 * relative to the family default (> 0) */
	double		width;			/* COST_NET: products per input feature;
								 * COST_FOREST: share of the features tried
								 * per split (0: sqrt(d)) */
	double		inner;			/* COST_NET: products between hidden
								 * layers; COST_FOREST: depth limit (0:
								 * none) */
	double		out;			/* COST_NET: last layer's width (x classes) */
	int			per_class;		/* one model per class when c > 2 */
	double		ref_rate;		/* reference seconds per unit of
								 * complexity (CostReferenceRate) */
	double		max_passes;		/* early-stopping families: the trainer's
								 * most passes per fit at work 1 (0: the
								 * mlp's epochs rule) */
	double		ref_passes;		/* the passes it makes before it converges
								 * on the reference data (CostReference-
								 * Passes); 0: it does not stop early.
								 * Complexity counts every pass; the model
								 * learns the passes runs make */
	double		pass_power;		/* time grows as passes^pass_power (0: 1;
								 * CostReferencePassPower) */
} CostArm;

/*
 * A fit's input: measured runs of mc tasks.  rows are the rows fitted over
 * all folds (rows x folds); passes are what the trainer reported as its
 * epochs (the passes or iterations of the first fold's fit).
 */
typedef struct CostData
{
	int			mc;
	const double *sizes;		/* mc x 3: rows x folds, features, classes */
	const double *folds;		/* mc: folds (1: one validation split), or
								 * NULL: 1 each */
	const double *seconds;		/* mc x K: wall time, NaN = not measured */
	const double *train;		/* mc x K: the trainer's fit seconds of the
								 * same run, NaN = unknown; or NULL */
	const double *passes;		/* mc x K: the passes the same run made,
								 * NaN = unknown; or NULL */
	const double *bins;			/* mc: the task's histogram bins, all
								 * features (a tree run's metric "bins"),
								 * NaN = unknown; or NULL */
} CostData;

typedef struct CostModel
{
	int			K;
	CostArm    *arms;			/* K, copied */
	double	   *log_rate;		/* 2 x K: log seconds per unit of
								 * complexity on classification tasks,
								 * then on regression tasks (1 class) */
	double		o0;				/* fixed seconds of every run */
	double		o1;				/* seconds per cell of the task's data */
	double		machine;		/* log factor of this machine's rates over
								 * the reference ones */
	double	   *log_stop;		/* K: log of the passes an early-stopping
								 * arm makes before it converges (NaN for
								 * the others) */
	int			n_work;			/* runs the rates learned from */
	int			n_tasks;		/* tasks the overhead learned from */
	GpPrior		resid;			/* prior of a task's log residuals */
} CostModel;

/* Reference values before anything is measured (costmodel.c). */
extern CostFormula CostFormulaOf(const char *family);
extern double CostReferenceRate(const char *family);
extern int	CostFamilyKnown(const char *family);
extern double CostReferencePasses(const char *family, double *max_passes);
extern double CostReferencePassPower(const char *family);

/*
 * log complexity of one arm on a task of n rows fitted (rows x folds), d
 * features, c classes and bins histogram bins (NaN or <= 0: unknown, the
 * most the trainer makes), with every pass the trainer may make: one fit
 * of a validation split of 20%, or one per fold, each on the other folds'
 * rows (folds > 1).  CostLogComplexityK is the case of unknown bins,
 * CostLogComplexity the one-split case of that.
 */
extern double CostLogComplexityBins(const CostArm *arm, double n, double d, double c,
									double folds, double bins);
extern double CostLogComplexityK(const CostArm *arm, double n, double d, double c,
								 double folds);
extern double CostLogComplexity(const CostArm *arm, double n, double d, double c);

/* The most passes an early-stopping arm makes per fit (0 for the others). */
extern double CostMaxPasses(const CostArm *arm, double n, double folds);

/*
 * Fit from the measured runs of data->mc tasks (CostData; data NULL or mc
 * 0: the reference model).  Returns 0, or -1 on bad input or no memory.
 */
extern int	CostModelFitData(CostModel *m, const CostArm *arms, int K,
							 const CostData *data);
extern void CostModelFree(CostModel *m);

/* The fixed part of a run on a task of n rows and d features. */
extern double CostOverhead(const CostModel *m, double n, double d);

/*
 * log(rate x complexity x the share of its passes it is expected to make)
 * of every arm on one task (K values).  passes (K, NaN = not run; or NULL)
 * are what the task's own runs reported: an arm that ran makes what it
 * made, and the others of its family what the model learned moved by the
 * task's part, which those runs show (the passes a solver needs are set
 * by the data as much as by the model).
 */
extern void CostLogBase(const CostModel *m, double n, double d, double c,
						double folds, double bins, const double *passes,
						double *log_base);

/*
 * A task's fixed part from its own runs: runs whose predicted work is
 * small next to the model's overhead measure the overhead; their
 * geometric mean is shrunk toward the model's by one pseudo-run, the
 * model's capped by the task's shortest run.  seconds K (NaN = not run).
 */
extern double CostTaskOverhead(const CostModel *m, double n, double d,
							   const double *log_base, const double *seconds);

/*
 * The log residual of a measured run for the task's posterior, or NaN
 * when the run says little about its work: the work expected
 * (exp(log_base)) is under half the overhead and its measured work
 * (seconds - overhead) under one overhead (the overhead's own noise).
 * Measured work is floored at a quarter of the overhead (timing noise).
 */
extern double CostResidual(double seconds, double overhead, double log_base);

/*
 * Every arm's estimate for one task (bins as in CostLogComplexityBins):
 * cost[k] = overhead + exp(log_base[k] + the residual posterior's mean at
 * k), where the posterior is
 * conditioned on the task's finished runs (seconds, K, NaN = not run) and
 * log_base has the passes they reported (passes, as in CostLogBase; or
 * NULL).  log_base may be NULL; *overhead may be NULL.  Returns 0, -1 on
 * no memory (cost then has the size part only).
 */
extern int	CostTaskEstimate(const CostModel *m, double n, double d, double c,
							 double folds, double bins, const double *seconds,
							 const double *passes, double *log_base,
							 double *overhead, double *cost);

#endif							/* EASEML_COSTMODEL_H */
