/*-------------------------------------------------------------------------
 *
 * tr_ensemble.h
 *	  Ensemble selection (docs/models.md, "Ensembles"): each run's
 *	  validation predictions, and greedy selection with replacement over
 *	  them (Caruana et al., ICML 2004).
 *
 * A run that succeeds stores the predictions its stored model makes for
 * its validation rows (easeml.run_predictions), in the artifact format
 * (tr_artifact.h) with family "validation", the task's kind and classes,
 * 0 features, and the tensors
 *	 rows  i32 [n]			the validation rows' numbers in the table (from 0)
 *	 y	   i32 [n]			their class ids (classification), or
 *	 t	   f64 [n]			their targets (regression)
 *	 pred  f32 [n, n_out]	class probabilities, or the predicted value
 * The ensemble's trainer reads them back (TrValPredsRead), keeps the
 * members that were scored on the same rows, and selects.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_ensemble.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_ENSEMBLE_H
#define EASEML_TR_ENSEMBLE_H

#include "trainer.h"
#include "tr_metrics.h"
#include "trainer/predict/tr_predict.h"

#define TR_VALPREDS_FAMILY		"validation"
#define TR_ENSEMBLE_STEPS		50	/* selection steps by default */
#define TR_ENSEMBLE_MAX_STEPS	1000
#define TR_ENSEMBLE_FOLDS		5	/* cross-fitting folds of the score, at most */
#define TR_ENSEMBLE_FOLD_ROWS	10	/* and the fewest rows of a fold */
#define TR_ENSEMBLE_MAX_FOLDS	10	/* what TrEnsembleFolds deals to, at most */

/* one run's validation predictions */
typedef struct TrValPreds
{
	int			kind;			/* TR_KIND_* */
	int			n;				/* validation rows */
	int			n_out;			/* n_classes, or 1 */
	int			n_classes;
	char	  **class_names;
	int		   *rows;			/* n */
	int		   *y;				/* n, classification */
	double	   *t;				/* n, regression */
	double	   *pred;			/* n x n_out */
} TrValPreds;

/*
 * The blob of data's validation predictions out (n_val x n_out), malloc'd
 * into *blob.  0, or -1 when out of memory.
 */
extern int	TrValPredsWrite(const TrData *data, const double *out, int n_out,
							unsigned char **blob, size_t *len);
/* read and check a blob; 0, or -1 with err set (vp is then empty) */
extern int	TrValPredsRead(const unsigned char *blob, size_t len, TrValPreds *vp,
						   char *err, size_t errlen);
extern void TrValPredsFree(TrValPreds *vp);
/* were a and b scored on the same rows, labels and classes? */
extern int	TrValPredsAligned(const TrValPreds *a, const TrValPreds *b);

/*
 * The metrics of predictions avg (n x n_out) of the rows of vp, and the
 * quality of metric (tr_metrics.h); a predicted class is the largest
 * probability, the first on ties, as easeml.predict takes it.
 */
extern double TrEnsembleQuality(const TrValPreds *vp, const double *avg, int metric,
								TrMetrics *fm);

/* the standard errors of fm, from the same predictions (tr_metrics_se.c) */
extern void TrEnsembleErrors(const TrValPreds *vp, const double *avg, TrMetrics *fm);

/* avg = the average of the members' predictions, weighted by counts */
extern void TrEnsembleAverage(const TrValPreds *const *members, int m,
							  const int *counts, double *avg);

/*
 * Greedy ensemble selection with replacement over m aligned members:
 * start from the best member alone, then at each of steps - 1 further
 * steps add the member (again, possibly) whose addition gives the best
 * quality of metric of the average (the first member on ties); the
 * result is the step with the best quality (the earliest on ties).
 * counts[i] is how often member i was chosen up to that step (its weight
 * is counts[i] / the sum); *score its quality.  0, or -1 with err set.
 */
extern int	TrEnsembleSelect(const TrValPreds *const *members, int m, int metric,
							 int steps, int *counts, double *score, char *err,
							 size_t errlen);

/*
 * Cross-fitting (docs/models.md section 8, "Score"): the ensemble's score
 * is of predictions each row gets from an ensemble selected without it.
 *
 * TrEnsembleFolds puts each of vp's n rows in one of k folds, fold[i] in
 * [0, k), k = min(max_folds, n / min_rows, TR_ENSEMBLE_MAX_FOLDS), and
 * returns k (-1 when out of memory); below 2 the rows are too few and
 * fold is untouched.  The folds are stratified: the
 * rows are ordered by class (classification) or target (regression), ties
 * in an order drawn from seed and the rows' numbers in the table, and each
 * run of k consecutive rows goes to the k folds in a seeded random order;
 * so every fold has n / k rows (give or take one) of every class, or of
 * every range of the target.  The same seed and rows give the same folds
 * whatever the members.
 *
 * TrEnsembleCrossFit runs TrEnsembleSelect for each fold f on the rows of
 * the other folds only, and puts the average of the members selected into
 * oof (n x n_out) for f's rows: every row's prediction is out of fold.
 * fold_q[f] (k of them, or NULL) is the quality of metric on f's rows
 * alone (NaN where undefined there).  0, or -1 with err set.
 */
extern int	TrEnsembleFolds(const TrValPreds *vp, int max_folds, int min_rows,
							uint64_t seed, int *fold);
extern int	TrEnsembleCrossFit(const TrValPreds *const *members, int m, int metric,
							   int steps, const int *fold, int k, double *oof,
							   double *fold_q, char *err, size_t errlen);

/*
 * The artifact of an ensemble of the given member runs and weights
 * (tr_predict.h), with vp's kind and classes, into res->artifact.
 * 0, or -1 with res->error set.
 */
extern int	TrEnsembleArtifact(const TrValPreds *vp, int m, const int64_t *runs,
							   const double *weights, TrResult *res);

/* tr_run.c: every metric of fm with its error and quality into obj */
extern void TrMetricsJsonOne(json_object *obj, const TrMetrics *fm, int metric);

#endif							/* EASEML_TR_ENSEMBLE_H */
