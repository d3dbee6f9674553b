/*-------------------------------------------------------------------------
 *
 * tr_svm.c
 *	  Family "linear_svm": L2-regularised linear support vector machine,
 *	  one-vs-rest, trained by dual coordinate descent.
 *
 * For each class c the binary problem (y_i = +1 for class c, -1 else) is
 *
 *	   min_w  1/2 |w|^2 + C sum_i loss(1 - y_i w.x_i)
 *
 * with loss = max(0, .)^2 ("squared_hinge", the default, as LinearSVC and
 * liblinear -s 1) or max(0, .) ("hinge", liblinear -s 3).  The bias is an
 * extra feature of constant value 1 and is regularised like the weights,
 * exactly as liblinear -B 1 and LinearSVC(intercept_scaling=1) do, so the
 * three give the same model for the same C.
 *
 * Solver: Hsieh, Chang, Lin, Keerthi and Sundararajan, "A dual coordinate
 * descent method for large-scale linear SVM", ICML 2008 (Algorithm 1 with
 * random permutations and the shrinking of section 3.2), with liblinear's
 * stopping rule: the spread of the projected gradient over the active set
 * falls below tol (liblinear's eps, default 0.1).  The difference from
 * liblinear is the data layout: rows are dense float arrays and w.x and
 * w += a x are BLAS level-1 calls, where liblinear walks sparse
 * (index, value) lists in double.  With two classes a single problem is
 * solved (class 1 positive), as liblinear does.
 *
 * The one-vs-rest problems are independent; with threads > 1 they run in
 * parallel (each with its own seeded permutation, so the result does not
 * depend on the thread count).
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_svm.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"

typedef struct SvmShared
{
	const TrContext *ctx;
	const float *X;				/* n x d */
	const int  *y;				/* class ids */
	const float *xsq;			/* |x_i|^2 + 1 (bias) */
	int			n;
	int			d;
	int			nprob;			/* binary problems */
	int			hinge;			/* 1: L1 loss; 0: squared hinge */
	double		C;
	double		tol;
	int			max_iter;
	float	   *W;				/* nprob x (d + 1); last entry is the bias */
	double	   *objective;		/* nprob primal objectives */
	int		   *iters;			/* nprob iteration counts */
	pthread_mutex_t lock;
	int			next;			/* next problem to take */
	int			failed;			/* 1: out of memory, 2: cancelled */
} SvmShared;

/*
 * w.x and w += a x.  For short rows a plain loop with four accumulators
 * beats a BLAS call (whose dispatch costs as much as 20 multiply-adds);
 * for long rows the vectorised BLAS kernels win.
 */
#define SVM_BLAS_MIN_D 64

static inline float
SvmDot(const float *x, const float *w, int d)
{
	float		s0 = 0.0f,
				s1 = 0.0f,
				s2 = 0.0f,
				s3 = 0.0f;
	int			j = 0;

	if (d >= SVM_BLAS_MIN_D)
		return cblas_sdot(d, x, 1, w, 1);
	for (; j + 4 <= d; j += 4)
	{
		s0 += x[j] * w[j];
		s1 += x[j + 1] * w[j + 1];
		s2 += x[j + 2] * w[j + 2];
		s3 += x[j + 3] * w[j + 3];
	}
	for (; j < d; j++)
		s0 += x[j] * w[j];
	return (s0 + s1) + (s2 + s3);
}

static inline void
SvmAxpy(float a, const float *x, float *w, int d)
{
	if (d >= SVM_BLAS_MIN_D)
	{
		cblas_saxpy(d, a, x, 1, w, 1);
		return;
	}
	for (int j = 0; j < d; j++)
		w[j] += a * x[j];
}

/* the positive class of problem p */
static int
PositiveClass(const SvmShared *sh, int p)
{
	return sh->nprob == 1 ? 1 : p;
}

/* one binary problem's dual state */
typedef struct SvmDual
{
	SvmShared  *sh;
	float	   *w;				/* d + 1: weights, then the bias */
	double	   *alpha;			/* n */
	int		   *index;			/* n: the active rows first */
	signed char *yy;			/* n: +1 / -1 */
	int			active;
	double		diag;			/* 1/(2C) for the squared hinge, else 0 */
	double		upper;			/* C for the hinge, else unbounded */
	double		pgmax_old;		/* the last pass's projected-gradient range */
	double		pgmin_old;
} SvmDual;

/*
 * One pass of dual coordinate descent over the active rows (in random
 * order), shrinking rows that stay at a bound.  Returns the spread of the
 * projected gradients seen, the stopping measure.
 */
static double
SvmPass(SvmDual *s, uint64_t *rng)
{
	SvmShared  *sh = s->sh;
	int			d = sh->d;
	double		pgmax_new = -HUGE_VAL,
				pgmin_new = HUGE_VAL;

	TrShuffle(s->index, s->active, rng);
	for (int k = 0; k < s->active; k++)
	{
		int			i = s->index[k];
		const float *x = sh->X + (size_t) i * d;
		double		yi = s->yy[i];
		double		G = yi * ((double) SvmDot(x, s->w, d) + s->w[d]) - 1.0 +
			s->diag * s->alpha[i];
		double		PG = 0.0;

		if ((s->alpha[i] == 0.0 && G > s->pgmax_old) ||
			(s->alpha[i] == s->upper && G < s->pgmin_old))
		{
			/* shrink: stays at the bound */
			s->active--;
			s->index[k] = s->index[s->active];
			s->index[s->active] = i;
			k--;
			continue;
		}
		if (s->alpha[i] == 0.0)
			PG = G < 0.0 ? G : 0.0;
		else if (s->alpha[i] == s->upper)
			PG = G > 0.0 ? G : 0.0;
		else
			PG = G;
		pgmax_new = fmax(pgmax_new, PG);
		pgmin_new = fmin(pgmin_new, PG);
		if (fabs(PG) > 1.0e-12)
		{
			double		old = s->alpha[i];
			double		a = old - G / ((double) sh->xsq[i] + s->diag);
			float		delta;

			a = a < 0.0 ? 0.0 : (a > s->upper ? s->upper : a);
			s->alpha[i] = a;
			delta = (float) ((a - old) * yi);
			SvmAxpy(delta, x, s->w, d);
			s->w[d] += delta;
		}
	}
	s->pgmax_old = pgmax_new;
	s->pgmin_old = pgmin_new;
	return pgmax_new - pgmin_new;
}

/* the primal objective at w, for the report */
static double
SvmObjective(const SvmDual *s)
{
	SvmShared  *sh = s->sh;
	int			d = sh->d;
	double		obj = 0.0,
				loss = 0.0;

	for (int j = 0; j <= d; j++)
		obj += 0.5 * (double) s->w[j] * s->w[j];
	for (int i = 0; i < sh->n; i++)
	{
		const float *x = sh->X + (size_t) i * d;
		double		m = 1.0 - s->yy[i] * ((double) cblas_sdot(d, x, 1, s->w, 1) + s->w[d]);

		if (m > 0.0)
			loss += sh->hinge ? m : m * m;
	}
	return obj + sh->C * loss;
}

/*
 * Binary problem p (class p against the rest) by liblinear's dual
 * coordinate descent with shrinking: 0, 1 out of memory, 2 cancelled.
 */
static int
SolveOne(SvmShared *sh, int p)
{
	int			n = sh->n,
				pos = PositiveClass(sh, p),
				iter = 0,
				rc = 1;
	uint64_t	rng = sh->ctx->seed ^ (UINT64_C(0x73766d) + (uint64_t) p * UINT64_C(0x9e3779b97f4a7c15));
	SvmDual		s;

	s.sh = sh;
	s.w = sh->W + (size_t) p * (sh->d + 1);
	s.diag = sh->hinge ? 0.0 : 0.5 / sh->C;
	s.upper = sh->hinge ? sh->C : HUGE_VAL;
	s.pgmax_old = HUGE_VAL;
	s.pgmin_old = -HUGE_VAL;
	s.active = n;
	s.alpha = calloc(n, sizeof(double));
	s.index = malloc(sizeof(int) * n);
	s.yy = malloc(n);
	if (!s.alpha || !s.index || !s.yy)
		goto done;
	memset(s.w, 0, sizeof(float) * (sh->d + 1));
	for (int i = 0; i < n; i++)
	{
		s.index[i] = i;
		s.yy[i] = sh->y[i] == pos ? 1 : -1;
	}
	while (iter < sh->max_iter)
	{
		if (TrCancelled(sh->ctx))
		{
			rc = 2;
			goto done;
		}
		iter++;
		if (SvmPass(&s, &rng) <= sh->tol)
		{
			if (s.active == n)
				break;
			/* converged on the active set: recheck everything */
			s.active = n;
			s.pgmax_old = HUGE_VAL;
			s.pgmin_old = -HUGE_VAL;
			continue;
		}
		if (s.pgmax_old <= 0.0)
			s.pgmax_old = HUGE_VAL;
		if (s.pgmin_old >= 0.0)
			s.pgmin_old = -HUGE_VAL;
	}
	sh->objective[p] = SvmObjective(&s);
	sh->iters[p] = iter;
	rc = 0;
done:
	free(s.alpha);
	free(s.index);
	free(s.yy);
	return rc;
}

/* worker: take problems until none is left */
static void *
SvmWorker(void *arg)
{
	SvmShared  *sh = arg;

	for (;;)
	{
		int			p,
					rc;

		pthread_mutex_lock(&sh->lock);
		p = sh->failed ? sh->nprob : sh->next++;
		pthread_mutex_unlock(&sh->lock);
		if (p >= sh->nprob)
			break;
		rc = SolveOne(sh, p);
		pthread_mutex_lock(&sh->lock);
		if (rc != 0 && sh->failed == 0)
			sh->failed = rc;
		pthread_mutex_unlock(&sh->lock);
		if (rc == 0 && sh->ctx->threads <= 1)
			TrReportProgress(sh->ctx, p + 1, sh->objective[p] / sh->n);
	}
	return NULL;
}

/*
 * Every binary problem, on up to ctx->threads threads; returns how many
 * ran.  sh->failed says whether one failed.
 */
static int
SvmSolveAll(const TrContext *ctx, SvmShared *sh)
{
	int			nthreads = ctx->threads < sh->nprob ? ctx->threads : sh->nprob;

	pthread_mutex_init(&sh->lock, NULL);
	if (nthreads <= 1)
		SvmWorker(sh);
	else
	{
		pthread_t  *tids = malloc(sizeof(pthread_t) * nthreads);
		int			started = 0;

		/* level-1 calls from several threads: keep BLAS itself serial */
		openblas_set_num_threads(1);
		if (tids != NULL)
			for (; started < nthreads; started++)
				if (pthread_create(&tids[started], NULL, SvmWorker, sh) != 0)
					break;
		if (started == 0)
			SvmWorker(sh);
		for (int t = 0; t < started; t++)
			pthread_join(tids[t], NULL);
		free(tids);
		openblas_set_num_threads(ctx->threads);
	}
	pthread_mutex_destroy(&sh->lock);
	return nthreads;
}

/* validation accuracy: scores = Xva W^T + bias (S, pred: scratch) */
static void
SvmScore(const TrData *data, const SvmShared *sh, float *S, int *pred,
		 TrResult *res)
{
	int			nv = data->n_val,
				d = data->d;

	for (int i = 0; i < nv; i++)
		for (int p = 0; p < sh->nprob; p++)
			S[(size_t) i * sh->nprob + p] = sh->W[(size_t) p * (d + 1) + d];
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nv, sh->nprob, d,
				1.0f, data->Xva, d, sh->W, d + 1, 1.0f, S, sh->nprob);
	for (int i = 0; i < nv; i++)
	{
		if (sh->nprob == 1)
			pred[i] = S[i] > 0.0f ? 1 : 0;
		else
			pred[i] = TrArgmax(S + (size_t) i * sh->nprob, sh->nprob);
	}
	res->score = TrAccuracy(pred, data->yva, nv);
}

static int
SvmFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val,
				d = data->d,
				k = data->n_classes;
	SvmShared	sh;
	float	   *xsq = malloc(sizeof(float) * n);
	float	   *S = NULL;
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	int			nthreads,
				rc = -1,
				maxit = 0;
	double		objsum = 0.0;

	memset(&sh, 0, sizeof(sh));
	sh.ctx = ctx;
	sh.X = data->Xtr;
	sh.y = data->ytr;
	sh.n = n;
	sh.d = d;
	sh.nprob = k == 2 ? 1 : k;
	sh.hinge = strcmp(TrParamString(ctx->params, "loss", "squared_hinge"), "hinge") == 0;
	sh.C = TrParamDouble(ctx->params, "C", 1.0);
	sh.tol = TrParamDouble(ctx->params, "tol", 0.1);
	sh.max_iter = TrParamInt(ctx->params, "max_iter", 1000);
	sh.xsq = xsq;
	sh.W = calloc((size_t) sh.nprob * (d + 1), sizeof(float));
	sh.objective = calloc(sh.nprob, sizeof(double));
	sh.iters = calloc(sh.nprob, sizeof(int));
	S = malloc(sizeof(float) * (size_t) (nv > 0 ? nv : 1) * sh.nprob);
	if (!xsq || !pred || !sh.W || !sh.objective || !sh.iters || !S)
	{
		TrSetError(res, "out of memory for linear_svm (%d x %d)", n, d);
		goto done;
	}
	for (int i = 0; i < n; i++)
		xsq[i] = cblas_sdot(d, data->Xtr + (size_t) i * d, 1,
							data->Xtr + (size_t) i * d, 1) + 1.0f;

	nthreads = SvmSolveAll(ctx, &sh);
	if (nthreads > 1 && !sh.failed)
		TrReportProgress(ctx, sh.nprob, NAN);	/* workers do not report */
	if (sh.failed == 2)
	{
		TrSetError(res, "cancelled");
		goto done;
	}
	if (sh.failed)
	{
		TrSetError(res, "out of memory for linear_svm (%d x %d)", n, d);
		goto done;
	}

	SvmScore(data, &sh, S, pred, res);
	for (int p = 0; p < sh.nprob; p++)
	{
		objsum += sh.objective[p];
		if (sh.iters[p] > maxit)
			maxit = sh.iters[p];
	}
	res->train_loss = objsum / n;
	res->epochs = maxit;
	res->extra = json_object_new_object();
	if (res->extra != NULL)
		json_object_object_add(res->extra, "hit_max_iter",
							   json_object_new_boolean(maxit >= sh.max_iter));

	{
		TrArtifact art;
		int64_t		dims[2] = {sh.nprob, d + 1};

		TrArtifactBegin(&art, "linear_svm", data);
		/* row p: weights of problem p, then its bias */
		TrArtifactAdd(&art, "W_bias", TR_DT_F32, 2, dims, sh.W);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;

done:
	free(xsq);
	free(S);
	free(pred);
	free(sh.W);
	free(sh.objective);
	free(sh.iters);
	return rc;
}

static const TrParamSpec svm_params[] = {
	{"C", TR_PARAM_DOUBLE, 1e-12, 1e12, NULL, "inverse regularisation (default 1.0)"},
	{"loss", TR_PARAM_STRING, 0, 0, "squared_hinge|hinge",
	"squared_hinge (liblinear -s 1, default) or hinge (-s 3)"},
	{"tol", TR_PARAM_DOUBLE, 1e-12, 10.0, NULL,
	"projected-gradient spread to stop at (liblinear eps, default 0.1)"},
	{"max_iter", TR_PARAM_INT, 1, 1000000, NULL, "passes over the data per class (default 1000)"},
	{NULL}
};

const TrFamily TrFamilyLinearSvm = {
	.name = "linear_svm",
	.supports_classification = 1,
	.supports_regression = 0,
	.needs_image = 0,
	.fit = SvmFit,
	.params = svm_params,
	.summary = "linear SVM one-vs-rest, dual coordinate descent (liblinear's algorithm)",
};
