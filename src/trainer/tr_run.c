/*-------------------------------------------------------------------------
 *
 * tr_run.c
 *	  One candidate end to end: check the request, prepare the data, fit
 *	  the family and build the metrics object.  Shared by the offline CSV
 *	  mode (tr_main.c) and the live mode (tr_live.c).
 *
 * All checks that need no data (family known, task kind supported, image
 * shape present, parameters valid) run before TrPrepare(), so a bad
 * catalog entry fails in microseconds with a message naming the problem.
 * The score is required to be finite: a NaN or Inf score is turned into an
 * error rather than being reported to the scheduler as a number.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_run.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cblas.h>
#if defined(__x86_64__) || defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include "trainer.h"
#include "tr_metrics.h"
#include "tr_score.h"
#include "tr_ensemble.h"

#define TR_MAX_FOLDS 100

typedef struct NameList
{
	char		buf[512];
} NameList;

static void
CollectName(const TrFamily *fam, void *arg)
{
	NameList   *nl = arg;

	if (nl->buf[0])
		strncat(nl->buf, ", ", sizeof(nl->buf) - strlen(nl->buf) - 1);
	strncat(nl->buf, fam->name, sizeof(nl->buf) - strlen(nl->buf) - 1);
}

/* a JSON number, or null for NaN/Inf (JSON has no NaN) */
static json_object *
JsonNum(double v)
{
	return isfinite(v) ? json_object_new_double(v) : NULL;
}

static double
Mean(const double *v, int n)
{
	double		s = 0.0;

	for (int i = 0; i < n; i++)
		s += v[i];
	return s / n;
}

/*
 * The metrics of a fold whose model the predict module cannot apply (a
 * custom trainer's, or knn's without an artifact), from what the fit
 * reported: the accuracy of a classifier, the R^2 and RMSE of a regressor;
 * the metrics that need the predictions themselves stay NaN.
 */
static void
FoldMetrics(const TrData *data, const TrResult *res, TrMetrics *m)
{
	if (data->kind == TR_KIND_CLASSIFICATION)
	{
		for (int j = 0; j < TR_M__COUNT; j++)
			m->v[j] = NAN;
		m->kind = data->kind;
		m->rmse_const = m->mae_const = NAN;
		TrMetricsClearErrors(m);
		m->v[TR_M_ACCURACY] = res->score;
	}
	else
	{
		TrRegressionBaselines(data->n_val, data->tva, m);
		m->v[TR_M_R2] = res->r2;
		m->v[TR_M_RMSE] = res->rmse;
	}
}

/* the standard deviation (ddof 1) of n values around their mean */
static double
FoldSd(const double *v, int n)
{
	double		mean = Mean(v, n),
				ss = 0.0;

	for (int i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	return sqrt(ss / (n - 1));
}

static json_object *
JsonError(double se)
{
	return isfinite(se) ? json_object_new_double(se) : NULL;
}

/*
 * Every metric of the task's kind into the metrics object: the value, or
 * with folds the mean over folds, with "<metric>_sd" (the folds' standard
 * deviation, ddof 1), "folds" and "fold_scores" (each fold's quality).
 * Each metric's standard error goes with it as "<metric>_se", and that of
 * the run's quality as "score_se": across folds (sd / sqrt(folds)) with
 * folds, else the bootstrap's over the validation rows (tr_metrics_se.c).
 */
static void
AddMetrics(json_object *obj, const TrMetrics *fm, const double *quality, int folds,
		   int metric)
{
	TrMetrics	mean = fm[0];

	for (int j = 0; j < TR_M__COUNT; j++)
	{
		double		v[TR_MAX_FOLDS];
		char		key[64];

		for (int f = 0; f < folds; f++)
			v[f] = fm[f].v[j];
		mean.v[j] = Mean(v, folds);
		if (TrMetricName(j) == NULL || !isfinite(mean.v[j]) ||
			(fm[0].kind == TR_KIND_REGRESSION) != (j >= TR_M_R2))
			continue;
		if (folds > 1)
		{
			double		sd = FoldSd(v, folds);

			snprintf(key, sizeof(key), "%s_sd", TrMetricName(j));
			json_object_object_add(obj, key, json_object_new_double(sd));
			snprintf(key, sizeof(key), "%s_se", TrMetricName(j));
			json_object_object_add(obj, key, json_object_new_double(sd / sqrt(folds)));
		}
		else
		{
			snprintf(key, sizeof(key), "%s_se", TrMetricName(j));
			json_object_object_add(obj, key, JsonError(fm[0].se[j]));
		}
	}
	TrMetricsToJson(&mean, obj);
	json_object_object_add(obj, "score_se", folds > 1 ?
						   JsonError(FoldSd(quality, folds) / sqrt(folds)) :
						   JsonError(fm[0].quality_se[metric]));
	/*
	 * [alter] The quality of every metric of the kind and its standard
	 * error (the mean over folds and its error, as for the score):
	 * easeml.alter_task ranks the run by another metric from them without
	 * training again (docs/data.md, section 7).
	 */
	{
		json_object *q = json_object_new_object();
		json_object *qse = json_object_new_object();
		int			lo = fm[0].kind == TR_KIND_REGRESSION ? TR_M_R2 : TR_M_ACCURACY;
		int			hi = fm[0].kind == TR_KIND_REGRESSION ? TR_M__COUNT : TR_M_R2;

		for (int j = lo; j < hi; j++)
		{
			double		v[TR_MAX_FOLDS];
			double		mq;

			for (int f = 0; f < folds; f++)
				v[f] = TrMetricQuality(&fm[f], j);
			mq = Mean(v, folds);
			json_object_object_add(q, TrMetricName(j), JsonError(mq));
			json_object_object_add(qse, TrMetricName(j),
								   folds > 1 ? JsonError(FoldSd(v, folds) / sqrt(folds)) :
								   JsonError(fm[0].quality_se[j]));
		}
		json_object_object_add(obj, "quality", q);
		json_object_object_add(obj, "quality_se", qse);
	}
	if (folds > 1)
	{
		json_object *arr = json_object_new_array();

		for (int f = 0; f < folds; f++)
			json_object_array_add(arr, json_object_new_double(quality[f]));
		json_object_object_add(obj, "folds", json_object_new_int(folds));
		json_object_object_add(obj, "fold_scores", arr);
	}
}

/* one split's metrics (an ensemble's, tr_ensemble.h) as a run records them */
void
TrMetricsJsonOne(json_object *obj, const TrMetrics *fm, int metric)
{
	double		q = TrMetricQuality(fm, metric);

	AddMetrics(obj, fm, &q, 1, metric);
}

/* What every fold of a run shares. */
typedef struct FoldRun
{
	const TrFamily *fam;
	json_object *params;
	const struct TrGpuOps *gpu;	/* NULL: the CPU fit */
	TrProgressFn progress;
	void	   *progress_arg;
	volatile sig_atomic_t *cancel;
	int			threads;
	int			metric;			/* TrMetricId the quality is of */
	double		t_prep;			/* seconds, summed over folds */
	double		t_fit;
	double		t_fit_cpu;		/* CPU seconds of the fits, every thread */
} FoldRun;

/*
 * Prepare, fit and score one fold (opt->fold) into data and res, with its
 * metrics and the quality of the run's metric.  0, or -1 with res->error.
 */
static int
FitFold(FoldRun *fr, const TrTable *tab, const TrPrepOptions *opt, TrData *data,
		TrResult *res, TrMetrics *fm, double *quality)
{
	TrContext	ctx;
	double		t0 = TrNow(),
				c0;
	int			rc;

	if (TrPrepare(tab, opt, data, res->error, sizeof(res->error)) != 0)
		return -1;
	fr->t_prep += TrNow() - t0;

	memset(&ctx, 0, sizeof(ctx));
	ctx.data = data;
	ctx.params = fr->params;
	ctx.seed = opt->seed;
	ctx.threads = fr->threads;
	ctx.progress = fr->progress;
	ctx.progress_arg = fr->progress_arg;
	ctx.cancel = fr->cancel;
	ctx.gpu = fr->gpu;

	t0 = TrNow();
	c0 = TrCpuNow();
	rc = ctx.gpu != NULL ? fr->fam->fit_gpu(&ctx, res) : fr->fam->fit(&ctx, res);
	if (rc != 0)
	{
		fr->t_fit += TrNow() - t0;
		fr->t_fit_cpu += TrCpuNow() - c0;
		if (res->error[0] == '\0')
			TrSetError(res, "family \"%s\" failed without a message", fr->fam->name);
		return -1;
	}
	/* the stored model's predictions, as easeml.predict() makes them */
	/* one split, not a refit: keep its predictions for ensembles */
	rc = TrScoreValidationKeep(data, res, fm, opt->folds <= 1 && !opt->train_all,
							   res->error, sizeof(res->error));
	fr->t_fit += TrNow() - t0;
	fr->t_fit_cpu += TrCpuNow() - c0;
	if (rc < 0)
		return -1;
	if (rc == 0)
		FoldMetrics(data, res, fm);
	*quality = TrMetricQuality(fm, fr->metric);
	if (!isfinite(*quality))
	{
		/*
		 * the family's own score, or for a model scored only through its
		 * artifact (knn) the accuracy or RMSE of the stored model's
		 * predictions: finite means the metric, not the model, is at fault
		 */
		double		basic = data->kind == TR_KIND_CLASSIFICATION ?
			fm->v[TR_M_ACCURACY] : fm->v[TR_M_RMSE];

		if (isfinite(res->score) || isfinite(basic))
			TrSetError(res, "the %s of family \"%s\" is undefined on this validation split",
					   TrMetricName(fr->metric), fr->fam->name);
		else
			TrSetError(res, "family \"%s\" produced a non-finite validation score (%s); the model diverged",
					   fr->fam->name, TrMetricName(fr->metric));
		return -1;
	}
	return 0;
}

/*
 * The stored model's validation rows into path (when not NULL), so that
 * its score can be checked against predictions made elsewhere (the TAP
 * test of easeml.predict does).  Best effort: nothing else reads the file,
 * so a full disk or a missing directory costs the file, never the run (a
 * line in the log says so); a partial file is removed.
 */
static void
WriteValidationRows(const char *path, const TrData *data)
{
	FILE	   *f;
	int			ok = 1;

	if (path == NULL)
		return;
	if ((f = fopen(path, "w")) == NULL)
	{
		printf("warning: could not write \"%s\": %s; the run goes on without it\n",
			   path, strerror(errno));
		return;
	}
	for (int i = 0; i < data->n_val && ok; i++)
		ok = fprintf(f, "%d\n", data->rows_va[i]) > 0;
	if (fclose(f) != 0 || !ok)
	{
		struct stat st;

		printf("warning: could not write \"%s\": %s; the run goes on without it\n",
			   path, strerror(errno));
		/* never a device or a link's target (/dev/full), only our file */
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			(void) unlink(path);
	}
}

int
TrRunCandidate(const TrTable *tab, const char *family, json_object *params,
			   const TrPrepOptions *opt, TrProgressFn progress,
			   void *progress_arg, volatile sig_atomic_t *cancel, int threads,
			   TrResult *res, json_object **metrics)
{
	return TrRunCandidateOn(NULL, tab, family, params, opt, progress,
							progress_arg, cancel, threads, res, metrics);
}

/*
 * One candidate on a GPU: the family's fit_gpu when it has one and gpu is
 * not NULL, else its CPU fit.  The metrics say which ran ("device_kind").
 */
/*
 * Whether family (known, of the task's kind, with an image shape when it
 * needs one, valid params) can run on the table; -1 with res->error set.
 */
static int
CheckCandidate(const TrTable *tab, const char *family, json_object *params,
			   const TrPrepOptions *opt, const TrFamily **famp, TrResult *res)
{
	const TrFamily *fam = TrFamilyLookup(family);

	if (fam == NULL)
	{
		NameList	nl;

		nl.buf[0] = '\0';
		TrFamilyList(CollectName, &nl);
		TrSetError(res, "unknown model family \"%s\" (known: %s)",
				   family ? family : "(null)", nl.buf);
		return -1;
	}
	if (tab->kind == TR_KIND_CLASSIFICATION && !fam->supports_classification)
	{
		TrSetError(res, "family \"%s\" does not support classification tasks",
				   fam->name);
		return -1;
	}
	if (tab->kind == TR_KIND_REGRESSION && !fam->supports_regression)
	{
		TrSetError(res, "family \"%s\" does not support regression tasks",
				   fam->name);
		return -1;
	}
	if (fam->needs_image && !(opt->channels > 0 && opt->height > 0 && opt->width > 0))
	{
		TrSetError(res,
				   "family \"%s\" needs an image shape (channels, height, width) and the task has none",
				   fam->name);
		return -1;
	}
	if (TrParamsValidate(fam, params, res->error, sizeof(res->error)) != 0)
		return -1;
	*famp = fam;
	return 0;
}

/*
 * One fit per fold (one fold: the validation split).  The result of the
 * first fold is the run's, and *data its prepared data: its artifact is
 * what predict uses.  0, or -1 with res->error set and *data freed.
 */
static int
RunFolds(FoldRun *fr, const TrTable *tab, const TrPrepOptions *opt, int folds,
		 TrData *data, TrMetrics *fm, double *quality, TrResult *res)
{
	for (int f = 0; f < folds; f++)
	{
		TrPrepOptions fopt = *opt;
		TrResult	fres;
		TrData		fdata;
		int			rc;

		fopt.fold = f;
		if (f == 0)
		{
			if (FitFold(fr, tab, &fopt, data, res, &fm[f], &quality[f]) != 0)
			{
				TrDataFree(data);
				return -1;
			}
			WriteValidationRows(opt->val_rows_path, data);
			continue;
		}
		TrResultInit(&fres);
		rc = FitFold(fr, tab, &fopt, &fdata, &fres, &fm[f], &quality[f]);
		if (rc != 0)
			snprintf(res->error, sizeof(res->error), "fold %d of %d: %.400s", f + 1, folds,
					 fres.error);
		TrResultFree(&fres);
		TrDataFree(&fdata);
		if (rc != 0)
		{
			TrDataFree(data);
			return -1;
		}
	}
	return 0;
}

/* the run's metrics JSON; NULL when out of memory */
static json_object *
BuildMetrics(const FoldRun *fr, const TrData *data, const TrPrepOptions *opt,
			 const TrMetrics *fm, const double *quality, int folds,
			 const TrResult *res)
{
	json_object *m = json_object_new_object();

	if (m == NULL)
		return NULL;
	json_object_object_add(m, "score", json_object_new_double(res->score));
	json_object_object_add(m, "metric", json_object_new_string(TrMetricName(fr->metric)));
	AddMetrics(m, fm, quality, folds, fr->metric);
	json_object_object_add(m, "family", json_object_new_string(fr->fam->name));
	json_object_object_add(m, "kind", json_object_new_string(
									  data->kind == TR_KIND_CLASSIFICATION ?
									  "classification" : "regression"));
	json_object_object_add(m, "train_seconds", json_object_new_double(fr->t_fit));
	json_object_object_add(m, "train_cpu_seconds", json_object_new_double(fr->t_fit_cpu));
	json_object_object_add(m, "prep_seconds", json_object_new_double(fr->t_prep));
	json_object_object_add(m, "n_train", json_object_new_int(data->n_train));
	json_object_object_add(m, "n_val", json_object_new_int(data->n_val));
	if (opt->train_all)
		json_object_object_add(m, "train_all", json_object_new_boolean(1));
	json_object_object_add(m, "n_features", json_object_new_int(data->d));
	json_object_object_add(m, "n_classes", json_object_new_int(data->n_classes));
	json_object_object_add(m, "train_loss", JsonNum(res->train_loss));
	json_object_object_add(m, "epochs", json_object_new_int(res->epochs));
	json_object_object_add(m, "missing_target_rows",
						   json_object_new_int(data->missing_target_rows));
	json_object_object_add(m, "imputed_values",
						   json_object_new_int64(data->imputed_values));
	json_object_object_add(m, "seed", json_object_new_uint64(opt->seed));
	json_object_object_add(m, "threads", json_object_new_int(fr->threads));
	json_object_object_add(m, "device_kind", json_object_new_string(fr->gpu ? "cuda" : "cpu"));
	json_object_object_add(m, "artifact_bytes",
						   json_object_new_int64((int64_t) res->artifact_len));
	if (res->extra != NULL)
	{
		json_object_object_foreach(res->extra, key, val)
			json_object_object_add(m, key, json_object_get(val));
	}
	return m;
}

int
TrRunCandidateOn(const struct TrGpuOps *gpu, const TrTable *tab,
				 const char *family, json_object *params,
				 const TrPrepOptions *opt, TrProgressFn progress,
				 void *progress_arg, volatile sig_atomic_t *cancel, int threads,
				 TrResult *res, json_object **metrics)
{
	const TrFamily *fam = NULL;
	TrData		data;
	/* a refit on every row fits once (fold 0's split, every row training) */
	int			folds = opt->folds > 1 && !opt->train_all ? opt->folds : 1;
	int			metric;
	TrMetrics	fm[TR_MAX_FOLDS];
	double		quality[TR_MAX_FOLDS];
	FoldRun		fr;

	TrResultInit(res);
	*metrics = NULL;
	if (CheckCandidate(tab, family, params, opt, &fam, res) != 0)
		return -1;
	if (cancel != NULL && *cancel)
	{
		TrSetError(res, "cancelled");
		return -1;
	}

	/* BLAS threads: one by default, which also keeps sums deterministic */
	openblas_set_num_threads(threads > 0 ? threads : 1);
#if defined(__x86_64__) || defined(__SSE2__)

	/*
	 * Flush denormals to zero: Adam's second moments and tiny gradients
	 * otherwise drift into the denormal range, where every float operation
	 * is ~100 times slower, and no model here needs values below 1e-38.
	 */
	_MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
	_MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif

	if (folds > TR_MAX_FOLDS)
	{
		TrSetError(res, "%d folds are too many (at most %d)", folds, TR_MAX_FOLDS);
		return -1;
	}
	metric = opt->metric != NULL ? TrMetricLookup(opt->metric, tab->kind) :
		(tab->kind == TR_KIND_REGRESSION ? TR_M_R2 : TR_M_ACCURACY);
	if (metric < 0)
	{
		TrSetError(res, "metric \"%s\" does not apply to %s tasks", opt->metric,
				   tab->kind == TR_KIND_REGRESSION ? "regression" : "classification");
		return -1;
	}

	memset(&fr, 0, sizeof(fr));
	fr.fam = fam;
	fr.params = params;
	fr.gpu = fam->fit_gpu != NULL ? gpu : NULL;
	fr.progress = progress;
	fr.progress_arg = progress_arg;
	fr.cancel = cancel;
	fr.threads = threads > 0 ? threads : 1;
	fr.metric = metric;
	if (RunFolds(&fr, tab, opt, folds, &data, fm, quality, res) != 0)
		return -1;
	res->score = Mean(quality, folds);
	*metrics = BuildMetrics(&fr, &data, opt, fm, quality, folds, res);
	TrDataFree(&data);
	if (*metrics == NULL)
	{
		TrSetError(res, "out of memory building metrics");
		return -1;
	}
	return 0;
}
