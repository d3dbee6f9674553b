/*-------------------------------------------------------------------------
 *
 * tr_predict.h
 *	  Predictions from a model artifact: the one module that the trainer
 *	  (to score its validation rows) and the server (easeml.predict) share,
 *	  so the two cannot disagree (docs/predict.md).
 *
 * TrModelLoad() checks an artifact (tr_artifact.h) and copies what the
 * family needs into aligned arrays, checking every shape against the
 * header: after a successful load nothing indexes outside an array, and
 * every tree walk ends.  TrModelEncode() turns one raw row (the values of
 * the task's feature columns) into the model's features with the encoders
 * stored in the artifact (src/core/encode.h); TrModelPredict() turns feature
 * rows into class probabilities or regression values.
 *
 * Families without probabilities (ridge and linear_svm classifiers) give
 * the softmax (two classes: the logistic function) of their decision
 * values: the ranking, and so the predicted class, is the family's own.
 *
 * Plain C: no PostgreSQL headers, no json-c, no output; BLAS only.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_predict.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_PREDICT_H
#define EASEML_TR_PREDICT_H

#include <stddef.h>

#include "core/encode.h"
#include "tr_artifact.h"

#define TR_PREDICT_ERRLEN 256

typedef struct TrModel TrModel;

/* how a family turns feature rows into outputs (n x n_out into out) */
typedef int (*TrPredictFn) (const TrModel *m, const float *X, int n, double *out);

struct TrModel
{
	char		family[TR_ART_MAX_NAME + 1];
	int			kind;			/* 0 classification, 1 regression */
	int			d;				/* features the family reads */
	int			n_classes;
	char	  **class_names;	/* n_classes, sorted (strcmp) */
	int			channels;		/* image shape, 0 when not an image */
	int			height;
	int			width;
	/* preprocessing: one encoder per raw column, or (0.1.0 artifacts) a
	 * mean and scale per feature with n_raw = d */
	int			n_raw;
	Encoder    *encoders;		/* n_raw, or NULL */
	double	   *mean;			/* d, when encoders is NULL */
	double	   *scale;
	int			n_out;			/* n_classes, or 1 for regression */
	TrPredictFn predict;
	void	   *state;			/* the family's parameters */
	void		(*free_state) (void *state);
	/*
	 * appended: an ensemble (tr_predict_ensemble.c) encodes a raw row once
	 * for each member (encode, NULL for every other model); its encoders,
	 * mean and scale are its first member's (prep_borrowed: not its own)
	 */
	int			(*encode) (const TrModel *m, const double *num,
						   const char *const *str, const size_t *lens, float *x);
	int			prep_borrowed;
};

/*
 * Load an artifact.  TR_ART_OK with *out set, or TR_ART_BAD (malformed),
 * TR_ART_UNSUPPORTED (no predictor for its family, e.g. a custom
 * trainer's blob) or TR_ART_NO_MEMORY, with err set.
 */
extern int	TrModelLoad(const unsigned char *blob, size_t len, TrModel **out,
						char *err, size_t errlen);
extern void TrModelFree(TrModel *m);

/*
 * Asked between chunks of a long load (every few thousand class names,
 * each ensemble member): nonzero stops the load, which frees what it built
 * and returns TR_ART_CANCELED.  The server sets it to "a cancel or
 * termination is pending", so that its CHECK_FOR_INTERRUPTS can act
 * without leaking malloc'd memory; NULL (the trainer) never stops.
 */
extern int	(*tr_load_interrupted) (void);

/*
 * One raw row into m->d features: num[j] for numeric, date and timestamp
 * columns (NaN = missing; dates and timestamps in seconds since
 * 1970-01-01 UTC), str[j]/lens[j] for categorical ones (str[j] NULL =
 * missing; str may be NULL when no column is categorical).  Returns the
 * number of categorical values not seen in training (they encode as no
 * category at all, which is not an error).
 */
extern int	TrModelEncode(const TrModel *m, const double *num,
						  const char *const *str, const size_t *lens, float *x);

/* is raw column j categorical (its values are given as strings)? */
extern int	TrModelColumnIsCategorical(const TrModel *m, int j);

/*
 * n feature rows (n x m->d) into out (n x m->n_out): class probabilities
 * summing to 1, or the regression value.  TR_ART_OK or TR_ART_NO_MEMORY.
 */
extern int	TrModelPredict(const TrModel *m, const float *X, int n, double *out);

/* the predicted class of one row of probabilities (the first wins ties) */
extern int	TrModelClass(const TrModel *m, const double *proba);

/* ---- for the families' loaders (tr_predict_*.c) ------------------------ */

typedef struct TrLoad
{
	const unsigned char *blob;
	size_t		len;
	const TrArtHeader *hdr;
	char	   *err;
	size_t		errlen;
} TrLoad;

/*
 * A copy of tensor name, which must have the given type and ndim; dims[i]
 * >= 0 must match, dims[i] < 0 is set to the tensor's.  TR_ART_OK, or an
 * error status with ld->err set.
 */
extern int	TrLoadTensor(const TrLoad *ld, const char *name, int dtype, int ndim,
						 int64_t *dims, void **out);
extern int	TrLoadFail(const TrLoad *ld, int status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* outputs of a linear decision: softmax, or the logistic of one logit */
extern void TrProbaFromScores(const double *z, int k, int n_classes, double *p);

/* each family's loader: sets m->predict, m->state and m->free_state */
extern int	TrLoadLinear(const TrLoad *ld, TrModel *m);	/* softmax, ridge, linear_svm */
extern int	TrLoadGnb(const TrLoad *ld, TrModel *m);
extern int	TrLoadKnn(const TrLoad *ld, TrModel *m);
extern int	TrLoadMlp(const TrLoad *ld, TrModel *m);
extern int	TrLoadCnn(const TrLoad *ld, TrModel *m);
extern int	TrLoadTrees(const TrLoad *ld, TrModel *m);	/* random_forest, gbt */

/*
 * Ensembles (tr_predict_ensemble.c, docs/models.md "Ensembles"): an
 * artifact of family "ensemble" holds no parameters of its own, only the
 * ids of its member runs ("members", f64 [m]) and their weights
 * ("weights", f64 [m]); its header has the task's kind and classes and 0
 * features.  Its model averages the members' outputs (class
 * probabilities or values) with the weights.
 */
#define TR_ENSEMBLE_FAMILY		"ensemble"
#define TR_ENSEMBLE_MAX_MEMBERS 1024

/*
 * The member run ids and weights (normalised to sum 1) of an ensemble
 * artifact, malloc'd.  TR_ART_OK; TR_ART_UNSUPPORTED when the artifact is
 * well formed but no ensemble; TR_ART_BAD or TR_ART_NO_MEMORY, with err.
 */
extern int	TrEnsembleMembers(const unsigned char *blob, size_t len, int *n,
							  int64_t **runs, double **weights, char *err,
							  size_t errlen);

/*
 * The ensemble's model from its artifact and its members' models, in the
 * order of TrEnsembleMembers; it takes the members (freed with it, or at
 * once on failure).  The members must agree with the ensemble on the kind
 * and the classes, and with each other on the raw columns and their kinds.
 */
extern int	TrEnsembleBuild(const unsigned char *blob, size_t len, TrModel **members,
							int n, TrModel **out, char *err, size_t errlen);

#endif							/* EASEML_TR_PREDICT_H */
