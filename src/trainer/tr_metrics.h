/*-------------------------------------------------------------------------
 *
 * tr_metrics.h
 *	  Validation metrics of a run, and the quality the scheduler ranks by
 *	  (docs/data.md, "Metrics").
 *
 * Every run records all the metrics of its task kind:
 *	 classification: accuracy, balanced accuracy, macro F1, log loss and
 *					 ROC AUC (binary, or macro one-vs-rest);
 *	 regression:	 R^2, RMSE and MAE.
 * A task ranks and schedules by one of them (tasks.metric).  The scheduler
 * needs "higher is better" on a [0, 1]-like scale, so each metric has a
 * quality: the metric itself where it already is one (accuracy, balanced
 * accuracy, macro F1, ROC AUC, R^2), exp(-log loss) (the geometric mean of
 * the probability given to the true class), and for RMSE and MAE one minus
 * the ratio to the error of the best constant prediction on the same rows
 * (the mean for RMSE, so 1 - RMSE/sd; the median for MAE).  Each mapping
 * is monotone, so ranking by quality ranks by the metric.
 *
 * Plain C: no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_metrics.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_METRICS_H
#define EASEML_TR_METRICS_H

#include <json-c/json.h>

/* the metrics, in tasks.metric's spelling */
typedef enum TrMetricId
{
	TR_M_ACCURACY,
	TR_M_BALANCED_ACCURACY,
	TR_M_MACRO_F1,
	TR_M_LOG_LOSS,
	TR_M_ROC_AUC,
	TR_M_R2,
	TR_M_RMSE,
	TR_M_MAE,
	TR_M__COUNT
} TrMetricId;

/* metric values of one validation split; NaN where undefined */
typedef struct TrMetrics
{
	int			kind;			/* TR_KIND_* */
	double		v[TR_M__COUNT];
	/* standard errors (tr_metrics_se.c): of v, and of each metric's quality */
	double		se[TR_M__COUNT];
	double		quality_se[TR_M__COUNT];
	/* regression baselines: errors of the best constant prediction */
	double		rmse_const;
	double		mae_const;
} TrMetrics;

extern const char *TrMetricName(TrMetricId m);
extern int	TrMetricLookup(const char *name, int kind);	/* -1: unknown */

/*
 * Classification metrics of n rows with k classes: true classes y, the
 * predicted classes pred, and class probabilities proba (n x k, row-major)
 * or NULL for a model that has none (its predictions then count as
 * probability 1, clipped, for log loss and ROC AUC).
 */
extern void TrClassificationMetrics(int n, int k, const int *y, const int *pred,
									const double *proba, TrMetrics *m);
extern void TrRegressionMetrics(int n, const double *t, const double *pred,
								TrMetrics *m);
extern void TrRegressionBaselines(int n, const double *t, TrMetrics *m);

/*
 * The standard error of every metric of m and of its quality, from the
 * same predictions (tr_metrics_se.c); pred is NULL for regression, t NULL
 * for classification.  Leaves NaN where it cannot tell.
 */
extern void TrMetricsStandardErrors(int n, int k, const int *y, const int *pred,
									const double *proba, const double *t,
									const double *fit, TrMetrics *m);
extern void TrMetricsClearErrors(TrMetrics *m);

/* the quality (higher is better) of metric id; NaN when undefined */
extern double TrMetricQuality(const TrMetrics *m, TrMetricId id);

/* add every metric of m's kind to obj (JSON null when undefined) */
extern void TrMetricsToJson(const TrMetrics *m, json_object *obj);

#endif							/* EASEML_TR_METRICS_H */
