/*-------------------------------------------------------------------------
 *
 * trainer.h
 *	  Interfaces shared by the files of the easeml-trainer executable.
 *
 * The trainer is a plain C program (no PostgreSQL server headers).  It
 * loads a table (from PostgreSQL with binary COPY, or from a CSV file in
 * offline mode), splits it into training and validation rows, fits the
 * preprocessing on the training rows only, fits one candidate model and
 * reports its validation score.
 *
 * Data flow:
 *	 TrTable (raw columns as double, NaN = NULL/missing, labels as strings)
 *	   -> TrPrepare() -> TrData (split, imputed, standardised, float rows)
 *	   -> TrFamily.fit() -> TrResult (score, metrics, optional artifact)
 *
 * IDENTIFICATION
 *	  src/trainer/trainer.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TRAINER_H
#define EASEML_TRAINER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "core/encode.h"
#include "trainer/predict/tr_artifact.h"

#ifndef pg_attribute_printf
#define pg_attribute_printf(f, a) __attribute__((format(printf, f, a)))
#endif

#define TR_KIND_CLASSIFICATION	0
#define TR_KIND_REGRESSION		1

#define TR_ERRLEN 512

/*
 * Kinds of raw feature columns (docs/data.md).  Numeric, date and
 * timestamp columns hold numbers in TrTable.X (dates and timestamps as
 * seconds since 1970-01-01 UTC); a categorical column holds in X the code
 * of its value in the column's TrCategories (NaN for NULL).
 */
#define TR_COL_NUMERIC		0
#define TR_COL_CATEGORICAL	1
#define TR_COL_DATE			2
#define TR_COL_TIMESTAMP	3

/* The distinct values of a categorical column, coded in order of arrival. */
typedef struct TrCategories
{
	int			n;				/* distinct values */
	int			cap;
	char	  **values;			/* n NUL-terminated strings */
	int		   *slots;			/* open-addressing index: code + 1, 0 = empty */
	int			nslots;			/* a power of two, > 2n */
} TrCategories;

/*
 * A loaded table's features at four bytes a cell (tr_rows.c): the live
 * loader keeps rows this way, so that a table of n x d numbers takes the
 * memory of its float32 data, not twice that.  Each numeric or categorical
 * cell holds x - off[j] as a float, off[j] being the median of the
 * column's first rows, so a column of large numbers that vary little (a
 * price around a million, a latitude) keeps the precision float has for
 * its spread rather than for its magnitude; date and timestamp columns,
 * whose parts need every second, stay double in W.  TrCell() reads a cell.
 */
typedef struct TrRows
{
	float	   *F;				/* cap x d, row-major: x - off[j]; NaN = NULL */
	double	   *off;			/* d offsets */
	double	   *W;				/* cap x nwide: the date and timestamp columns */
	int		   *wide;			/* d: W's column of a date or timestamp, or -1 */
	int			nwide;
	long		cap;			/* rows allocated */
	double	   *stage;			/* the first rows as read, until off is set */
	int			staged;			/* rows in stage; -1 once off is set */
	int			taken;			/* 1: F was handed to the prepared data */
} TrRows;

/* Raw table as loaded: n rows, d feature columns plus one target column. */
typedef struct TrTable
{
	int			n;				/* rows */
	int			d;				/* feature columns */
	double	   *X;				/* n x d, row-major; NaN marks NULL (NULL
								 * when the rows are compact; see TrCell) */
	char	  **feature_names;	/* d names (may be NULL) */
	int			kind;			/* TR_KIND_* */
	/* classification: target as label strings, NULL for a missing label */
	char	  **labels;			/* n entries (classification) */
	/* regression: numeric target, NaN for missing */
	double	   *t;				/* n entries (regression) */
	/* column kinds (appended): NULL when every column is numeric */
	int		   *col_kind;		/* d TR_COL_* */
	TrCategories *cats;			/* d entries, used by categorical columns */
	/* appended: the features in compact form when X is NULL (tr_rows.c) */
	TrRows	   *rows;
} TrTable;

/* feature j of row i of a table, whichever form its rows are in */
static inline double
TrCell(const TrTable *tab, size_t i, int j)
{
	const TrRows *r = tab->rows;

	if (r == NULL)
		return tab->X[i * (size_t) tab->d + j];
	if (r->nwide > 0 && r->wide[j] >= 0)
		return r->W[i * (size_t) r->nwide + r->wide[j]];
	return r->off[j] + (double) r->F[i * (size_t) tab->d + j];
}

/* Prepared data: split, imputed and standardised (fitted on train only). */
typedef struct TrData
{
	int			kind;			/* TR_KIND_* */
	int			d;				/* features */
	int			n_train;
	int			n_val;
	float	   *Xtr;			/* n_train x d row-major */
	float	   *Xva;			/* n_val x d row-major */
	/* classification */
	int			n_classes;
	char	  **class_names;	/* n_classes strings, sorted */
	int		   *ytr;			/* class ids 0..n_classes-1 */
	int		   *yva;
	/* regression (targets are NOT standardised) */
	double	   *ttr;
	double	   *tva;
	/* image shape for convolutional families, 0 when not an image */
	int			channels;
	int			height;
	int			width;
	/* preprocessing parameters, kept so an artifact can reproduce them */
	double	   *mean;			/* d */
	double	   *scale;			/* d; 1 / stddev, 0 for constant columns */
	/* bookkeeping added for reports and split dumps (appended fields) */
	int			missing_target_rows;	/* rows dropped for a missing target */
	long		imputed_values; /* NaN feature cells replaced by the mean */
	int		   *rows_tr;		/* n_train original table row numbers */
	int		   *rows_va;		/* n_val original table row numbers */
	/* the encoders of the raw columns (appended, src/core/encode.h): d counts
	 * their outputs; mean and scale are then 0 and 1 */
	Encoder    *encoders;
	int			n_encoders;		/* raw columns */
} TrData;

/* Options for TrPrepare(). */
typedef struct TrPrepOptions
{
	double		val_fraction;	/* in (0, 0.9]; e.g. 0.2 */
	uint64_t	seed;			/* split seed */
	int			impute;			/* 1: impute NaN features by training mean;
								 * 0: reject rows/columns with NaN */
	int			channels;		/* optional image shape */
	int			height;
	int			width;
	/*
	 * Optional predefined split (appended field): NULL for the seeded split,
	 * else tab->n entries, 0 = training row, 1 = validation row.  Used by the
	 * benchmark so that easeml and its peers see identical rows.
	 */
	const unsigned char *fixed_split;
	/* appended (docs/data.md): missing values and cross-validation */
	int			strategy;		/* TR_IMPUTE_*: fill for a missing value */
	int			no_indicator;	/* 1: no missing-value indicator features */
	int			folds;			/* > 1: k-fold; the validation rows are fold */
	int			fold;			/* 0 .. folds - 1 */
	const char *metric;			/* what the score is the quality of (NULL:
								 * accuracy or R^2; tr_metrics.h) */
	/* appended: where to write the stored model's validation rows (the
	 * table's row numbers from 0, one a line), or NULL */
	const char *val_rows_path;
	/*
	 * appended: 1 lets TrPrepare() write the prepared rows over the table's
	 * compact rows instead of copying them, when the encoding keeps every
	 * column one number wide and there is one split (no folds); the table's
	 * features are then gone (tab->rows->taken), its n, targets and
	 * categories stay.  The live trainer sets it: it reads the table once.
	 */
	int			take_rows;
	/*
	 * appended (docs/results.md, "Refit on every row"): 1 trains on every
	 * usable row.  The split is drawn as without it, and its validation
	 * rows are kept as the validation rows (so every family and the
	 * scoring run unchanged, their score measured on rows the model
	 * trained on); with folds, fold 0's split and one fit.
	 */
	int			train_all;
} TrPrepOptions;

#define TR_IMPUTE_MEAN			0	/* the default */
#define TR_IMPUTE_MEDIAN		1
#define TR_IMPUTE_MOST_FREQUENT 2

/* Progress sink: called by families at most once per epoch. */
typedef void (*TrProgressFn) (void *arg, int epoch, double loss);

/* Everything a model family needs to fit one candidate. */
typedef struct TrContext
{
	const TrData *data;
	json_object *params;		/* candidate's params (object, may be NULL) */
	uint64_t	seed;
	int			threads;		/* BLAS threads the trainer may use */
	TrProgressFn progress;		/* may be NULL */
	void	   *progress_arg;
	volatile sig_atomic_t *cancel;	/* set to 1 by SIGTERM; may be NULL */
	/* the GPU to train on (tr_gpu.h), NULL for the CPU; see fit_gpu */
	const struct TrGpuOps *gpu;
} TrContext;

/* What a fit returns. */
typedef struct TrResult
{
	double		score;			/* validation accuracy (classification) or
								 * R^2 (regression); higher is better */
	double		train_loss;		/* last training loss, NaN if none */
	double		rmse;			/* regression only, else NaN */
	double		r2;				/* regression only, else NaN */
	int			epochs;			/* epochs/iterations run */
	unsigned char *artifact;	/* malloc'd trained parameters, may be NULL */
	size_t		artifact_len;
	char		error[TR_ERRLEN];	/* set when fit returns non-zero */
	/* optional family-specific metrics merged into the metrics object */
	json_object *extra;			/* owned; freed by TrResultFree() */
	/* exit code of a failed fit: 0 for EASEML_EXIT_FAILED, or a device failure */
	int			exit_code;
	/*
	 * appended: the stored model's validation predictions (tr_ensemble.h),
	 * malloc'd, what ensemble selection needs of the run; NULL with folds,
	 * for a refit on every row, or when the predict module cannot apply
	 * the model
	 */
	unsigned char *predictions;
	size_t		predictions_len;
} TrResult;

/*
 * Declared hyperparameters of a family (appended to TrFamily).
 * TrRunCandidate() rejects unknown keys, wrong types and values outside
 * [lo, hi] before any work, so a typo never silently runs the default.
 */
typedef enum TrParamType
{
	TR_PARAM_INT,				/* JSON integer (or a double with no fraction) */
	TR_PARAM_DOUBLE,			/* JSON number */
	TR_PARAM_STRING,			/* one of 'choices' ("a|b|c") */
	TR_PARAM_INT_LIST			/* JSON array of integers, each in [lo, hi] */
} TrParamType;

typedef struct TrParamSpec
{
	const char *name;			/* NULL terminates a list */
	TrParamType type;
	double		lo;				/* inclusive bounds for numbers */
	double		hi;
	const char *choices;		/* TR_PARAM_STRING: "uniform|distance" */
	const char *help;			/* one line, with the default */
} TrParamSpec;

/* A model family: name as in easeml.models.family, and its fit function. */
typedef struct TrFamily
{
	const char *name;
	int			supports_classification;
	int			supports_regression;
	int			needs_image;	/* 1: requires channels/height/width */
	/* returns 0 on success, non-zero with res->error set on failure */
	int			(*fit) (const TrContext *ctx, TrResult *res);
	/* appended: NULL-terminated parameter list and a one-line summary */
	const TrParamSpec *params;
	const char *summary;
	/* the fit on ctx->gpu; NULL when the family trains on the CPU only */
	int			(*fit_gpu) (const TrContext *ctx, TrResult *res);
} TrFamily;

/* tr_family.c: registry of families */
extern const TrFamily *TrFamilyLookup(const char *name);
extern void TrFamilyList(void (*cb) (const TrFamily *fam, void *arg), void *arg);
extern int	TrParamsValidate(const TrFamily *fam, json_object *params,
							 char *err, size_t errlen);

/* tr_prep.c: split, impute, standardise; returns 0 or sets err */
extern int	TrPrepare(const TrTable *tab, const TrPrepOptions *opt,
					  TrData *out, char *err, size_t errlen);
extern void TrDataFree(TrData *data);
extern void TrTableFree(TrTable *tab);

/* tr_rows.c: the compact rows of a loaded table */
extern int	TrRowsBegin(TrTable *tab);
extern int	TrRowsAppend(TrTable *tab, const double *row, char *err, size_t errlen);
extern int	TrRowsFinish(TrTable *tab, char *err, size_t errlen);
extern void TrRowsFree(TrRows *rows);

/* tr_column.c: typed columns of a TrTable */
extern int	TrTableSetKinds(TrTable *tab, const int *kinds);
extern int	TrCategoryCode(TrCategories *c, const char *s, size_t len);
extern const char *TrCategoryValue(const TrTable *tab, int j, double code);
extern void TrCategoriesFree(TrCategories *c);

/* tr_encode.c: fit a raw column's encoder on the training rows (encode.h) */
extern int	TrFitEncoder(const TrTable *tab, int j, const int *rows, int nrows,
						 const TrPrepOptions *opt, int indicator_ok,
						 Encoder *e, char *err, size_t errlen);

/* tr_csv.c: offline loader (header row; target column by name) */
extern int	TrLoadCsv(const char *path, const char *target, int kind,
					  TrTable *out, char *err, size_t errlen);

/* tr_util.c: helpers for families */
extern uint64_t TrRandNext(uint64_t *state);	/* splitmix64 */
extern double TrRandUniform(uint64_t *state);	/* [0, 1) */
extern double TrRandNormal(uint64_t *state);
extern int	TrParamInt(json_object *params, const char *key, int dflt);
extern double TrParamDouble(json_object *params, const char *key, double dflt);
extern json_object *TrJsonParse(const char *text);	/* big integers kept */
extern const char *TrParamString(json_object *params, const char *key,
								 const char *dflt);
extern double TrNow(void);		/* monotonic seconds */
extern double TrCpuNow(void);	/* CPU seconds of the process */
/* cblas_sgemm, row-major, with the trainer's own kernels (tr_gemm.c) */
extern void TrSgemm(int transA, int transB, int m, int n, int k, float alpha,
					const float *A, int lda, const float *B, int ldb, float beta,
					float *C, int ldc);

/* tr_util.c: more helpers for families (added) */
extern uint64_t TrRandBelow(uint64_t *state, uint64_t n); /* [0, n) */
extern void TrShuffle(int *idx, int n, uint64_t *state);
extern int	TrParamIntList(json_object *params, const char *key, int *out,
						   int maxn, const int *dflt, int ndflt);
extern void TrSetError(TrResult *res, const char *fmt,...)
			pg_attribute_printf(2, 3);
extern int	TrCancelled(const TrContext *ctx);
extern void TrReportProgress(const TrContext *ctx, int epoch, double loss);
extern void TrResultInit(TrResult *res);
extern void TrResultFree(TrResult *res);
extern double TrAccuracy(const int *pred, const int *y, int n);
extern void TrRegressionScore(const double *pred, const double *t, int n,
							  double *r2, double *rmse);
extern int	TrArgmax(const float *v, int k);
extern void TrAdamStep(float *theta, const float *grad, float *m1, float *m2,
					   size_t n, long step, double lr);
extern float TrAdamRate(double lr, long step);

/*
 * ReLU and its gradient mask on float arrays, written with integer masks:
 * the obvious "x > 0 ? x : 0" compiles to a branch that mispredicts half
 * of the time, and fmaxf() is a libm call at -O2.
 */
static inline void
TrReluInPlace(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	b;

		memcpy(&b, &x[i], 4);
		b &= (b >> 31) - 1u;	/* sign set (negative, -0, -NaN): 0 */
		memcpy(&x[i], &b, 4);
	}
}

/* g[i] = 0 where the ReLU output h[i] is 0 (h >= 0 after TrReluInPlace) */
static inline void
TrReluGrad(float *g, const float *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	hb,
					gb;

		memcpy(&hb, &h[i], 4);
		memcpy(&gb, &g[i], 4);
		gb &= -(uint32_t) (hb != 0);
		memcpy(&g[i], &gb, 4);
	}
}

/*
 * Trained-parameter artifact: "EASEMLA1", a header (family, kind, d,
 * classes, image shape, preprocessing mean/scale) and a list of named
 * little-endian tensors.  The format is described in docs/models.md; the
 * writer is tr_artifact_write.c, the checked reader tr_artifact.h.
 */
typedef struct TrArtifact
{
	unsigned char *buf;
	size_t		len;
	size_t		cap;
	int			failed;			/* an allocation failed; Finish() reports */
} TrArtifact;

extern void TrArtifactBegin(TrArtifact *art, const char *family,
							const TrData *data);
extern void TrArtifactAdd(TrArtifact *art, const char *name, int dtype,
						  int ndim, const int64_t *dims, const void *values);
extern int	TrArtifactFinish(TrArtifact *art, TrResult *res);

/* tr_run.c: one candidate end to end (prepare, fit, metrics) */
extern int	TrRunCandidate(const TrTable *tab, const char *family,
						   json_object *params, const TrPrepOptions *opt,
						   TrProgressFn progress, void *progress_arg,
						   volatile sig_atomic_t *cancel, int threads,
						   TrResult *res, json_object **metrics);
/* the same on a GPU (NULL: the CPU), for families that have fit_gpu */
extern int	TrRunCandidateOn(const struct TrGpuOps *gpu, const TrTable *tab,
							 const char *family, json_object *params,
							 const TrPrepOptions *opt, TrProgressFn progress,
							 void *progress_arg, volatile sig_atomic_t *cancel,
							 int threads, TrResult *res, json_object **metrics);

/* tr_live.c (the lead's): the --run mode that reads rows from PostgreSQL */
extern int	TrLiveMain(int argc, char **argv);

/* tr_probe.c: the --probe mode that lists the devices */
extern int	TrProbeMain(void);

/*
 * tr_memory.c: the trainer's own peak resident set (VmHWM; -1 if unknown)
 * and the cap easeml.trainer_memory_limit sets (EASEML_ENV_MEMORY_LIMIT:
 * what it may allocate beyond its start-up footprint, as RLIMIT_DATA);
 * TrNoteAllocation records an allocation the cap refused.
 */
extern long long TrPeakRssBytes(void);
extern int	TrMemoryLimitApply(const char *value, int threads, char *err,
							   size_t errlen);
extern unsigned long long TrMemoryLimit(void);
extern void TrNoteAllocation(const void *p, size_t size);
extern int	TrMemoryLimitHit(void);

#endif							/* EASEML_TRAINER_H */
