/*-------------------------------------------------------------------------
 *
 * tr_mlp.c
 *	  Family "mlp": multilayer perceptron with 1 to 4 ReLU hidden layers,
 *	  softmax (or, for two classes, sigmoid) output for classification and
 *	  a linear output for regression, trained by mini-batch Adam.
 *
 * Objective per mini-batch: mean loss + (l2 / 2) * sum of squared weights
 * (biases are not penalised).  scikit-learn's MLPClassifier adds
 * alpha / (2 * batch) * ||W||^2 to the batch's mean loss, so its alpha
 * equals l2 * batch here.  Initialisation follows scikit-learn / Glorot
 * and Bengio (AISTATS 2010): weights and biases uniform in +-sqrt(6 /
 * (fan_in + fan_out)).  Adam: Kingma and Ba, ICLR 2015, with the bias
 * correction folded into the step size as scikit-learn does.  Training
 * stops after "epochs" passes, or earlier when the epoch loss has not
 * improved by tol for n_iter_no_change epochs (scikit-learn's rule).
 *
 * Regression targets are standardised inside the model (train mean and
 * standard deviation, stored in the artifact) so that the default learning
 * rate works whatever the target's units; scores are computed in the
 * original units.
 *
 * All products are float GEMMs on a mini-batch gathered into contiguous
 * rows; the parameters, gradients and Adam moments each live in one
 * array so the update is one loop.  On a GPU the same steps run with the
 * same parameters and row order (tr_mlp_gpu.c; what both share is in
 * tr_mlp.h and below).
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_mlp.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"
#include "tr_mlp.h"

/* The CPU's buffers for batches of up to cap rows. */
typedef struct Mlp
{
	const MlpPlan *p;
	float	   *theta;
	float	   *grad;
	float	   *m1;
	float	   *m2;
	float	   *H[MLP_MAX_LAYERS + 1];	/* activations, batch x size[l] */
	float	   *delta[2];		/* two back-propagation buffers */
	int			cap;			/* rows the buffers hold */
} Mlp;

/*
 * The network's shape and training settings from the candidate's params,
 * with the parameter layout: one array, W_1 b_1 W_2 b_2 ...  Returns 0, or
 * -1 with res->error set.
 */
int
MlpPlanFrom(const TrContext *ctx, MlpPlan *p, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train;
	int			dflt_hidden[1] = {128};
	int			hidden[MLP_MAX_LAYERS];
	int			nh = TrParamIntList(ctx->params, "hidden", hidden, 4, dflt_hidden, 1);
	json_object *h;

	memset(p, 0, sizeof(*p));
	if (ctx->params != NULL &&
		json_object_object_get_ex(ctx->params, "hidden", &h) &&
		json_object_is_type(h, json_type_array) &&
		json_object_array_length(h) > 4)
	{
		TrSetError(res, "mlp supports 1 to 4 hidden layers, got %d",
				   (int) json_object_array_length(h));
		return -1;
	}
	p->regression = data->kind == TR_KIND_REGRESSION;
	p->batch = TrParamInt(ctx->params, "batch", 200);
	p->epochs = TrParamInt(ctx->params, "epochs", 0);
	p->lr = (float) TrParamDouble(ctx->params, "lr", 1e-3);
	p->l2 = (float) TrParamDouble(ctx->params, "l2", 1e-5);
	p->tol = TrParamDouble(ctx->params, "tol", 1e-4);
	p->patience = TrParamInt(ctx->params, "n_iter_no_change", 10);
	if (p->batch > n)
		p->batch = n;
	if (p->epochs <= 0)
	{
		/* default: about 2000 Adam steps, between 10 and 200 epochs */
		int			per_epoch = (n + p->batch - 1) / p->batch;

		p->epochs = (2000 + per_epoch - 1) / per_epoch;
		p->epochs = p->epochs < 10 ? 10 : (p->epochs > 200 ? 200 : p->epochs);
	}
	p->nl = nh + 1;
	p->size[0] = data->d;
	for (int l = 0; l < nh; l++)
		p->size[l + 1] = hidden[l];
	p->size[p->nl] = p->regression ? 1 : (data->n_classes == 2 ? 1 : data->n_classes);
	for (int l = 1; l <= p->nl; l++)
	{
		p->woff[l - 1] = p->np;
		p->np += (size_t) p->size[l - 1] * p->size[l];
		p->boff[l - 1] = p->np;
		p->np += p->size[l];
	}
	for (int l = 0; l <= p->nl; l++)
		if (p->size[l] > p->widest)
			p->widest = p->size[l];
	p->tmean = 0.0;
	p->tsd = 1.0;
	p->best_loss = INFINITY;
	return 0;
}

/* Glorot-uniform weights and biases, as scikit-learn. */
void
MlpInitTheta(const MlpPlan *p, float *theta, uint64_t *rng)
{
	for (int l = 1; l <= p->nl; l++)
	{
		float		bound = sqrtf(6.0f / (float) (p->size[l - 1] + p->size[l]));
		float	   *W = theta + p->woff[l - 1];

		for (size_t i = 0; i < (size_t) p->size[l - 1] * p->size[l]; i++)
			W[i] = (float) ((2.0 * TrRandUniform(rng) - 1.0) * bound);
		for (int i = 0; i < p->size[l]; i++)
			theta[p->boff[l - 1] + i] = (float) ((2.0 * TrRandUniform(rng) - 1.0) * bound);
	}
}

/*
 * Regression: the training targets' mean and standard deviation, and the
 * standardised targets in tstd.  Nothing to do for classification.
 */
int
MlpTargets(MlpPlan *p, const TrData *data, double *tstd)
{
	double		ss = 0.0;
	int			n = data->n_train;

	if (!p->regression)
		return 0;
	p->tmean = 0.0;
	for (int i = 0; i < n; i++)
		p->tmean += data->ttr[i];
	p->tmean /= n;
	for (int i = 0; i < n; i++)
		ss += (data->ttr[i] - p->tmean) * (data->ttr[i] - p->tmean);
	p->tsd = sqrt(ss / n);
	if (!(p->tsd > 0.0))
		p->tsd = 1.0;
	for (int i = 0; i < n; i++)
		tstd[i] = (data->ttr[i] - p->tmean) / p->tsd;
	return 0;
}

/*
 * After an epoch: the objective from the sum of the rows' losses and the
 * squared weights, progress, and scikit-learn's stopping rule on it.
 * Returns 1 to stop, 0 to go on, -1 if training diverged (res->error set).
 */
int
MlpEpochEnd(MlpPlan *p, const TrContext *ctx, int epoch, double loss_sum,
			double reg, TrResult *res)
{
	double		loss = loss_sum / ctx->data->n_train + 0.5 * p->l2 * reg;

	if (p->regression)
		loss *= p->tsd * p->tsd;	/* report in the target's units */
	if (!isfinite(loss))
	{
		TrSetError(res, "mlp training diverged (loss is not finite at epoch %d); lower lr",
				   epoch);
		return -1;
	}
	TrReportProgress(ctx, epoch, loss);
	res->epochs = epoch;
	res->train_loss = loss;
	if (loss > p->best_loss - p->tol * (p->regression ? p->tsd * p->tsd : 1.0))
		p->stall++;
	else
		p->stall = 0;
	if (loss < p->best_loss)
		p->best_loss = loss;
	return p->patience > 0 && p->stall > p->patience;
}

/* Predictions from the output layer's values Z (rows x out). */
void
MlpDecode(const MlpPlan *p, const float *Z, int rows, int *pred, double *tpred)
{
	int			k = p->size[p->nl];

	for (int i = 0; i < rows; i++)
	{
		const float *z = Z + (size_t) i * k;

		if (p->regression)
			tpred[i] = p->tmean + p->tsd * z[0];
		else if (k == 1)
			pred[i] = z[0] > 0.0f ? 1 : 0;
		else
			pred[i] = TrArgmax(z, k);
	}
}

/* The validation score from the predictions. */
void
MlpScore(const MlpPlan *p, const TrData *data, const int *pred,
		 const double *tpred, TrResult *res)
{
	if (p->regression)
	{
		TrRegressionScore(tpred, data->tva, data->n_val, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	else
		res->score = TrAccuracy(pred, data->yva, data->n_val);
}

/* The trained parameters as the run's artifact. */
int
MlpKeepArtifact(const MlpPlan *p, const float *theta, const TrData *data,
				TrResult *res)
{
	TrArtifact	art;
	int64_t		dims[2];
	int32_t		sizes[MLP_MAX_LAYERS + 1];
	double		tnorm[2] = {p->tmean, p->tsd};
	char		name[16];

	TrArtifactBegin(&art, "mlp", data);
	for (int l = 0; l <= p->nl; l++)
		sizes[l] = p->size[l];
	dims[0] = p->nl + 1;
	TrArtifactAdd(&art, "layer_sizes", TR_DT_I32, 1, dims, sizes);
	if (p->regression)
	{
		dims[0] = 2;
		TrArtifactAdd(&art, "target_mean_sd", TR_DT_F64, 1, dims, tnorm);
	}
	for (int l = 1; l <= p->nl; l++)
	{
		dims[0] = p->size[l - 1];
		dims[1] = p->size[l];
		snprintf(name, sizeof(name), "W%d", l);
		TrArtifactAdd(&art, name, TR_DT_F32, 2, dims, theta + p->woff[l - 1]);
		dims[0] = p->size[l];
		snprintf(name, sizeof(name), "b%d", l);
		TrArtifactAdd(&art, name, TR_DT_F32, 1, dims, theta + p->boff[l - 1]);
	}
	return TrArtifactFinish(&art, res);
}

static void
MlpFree(Mlp *m)
{
	free(m->theta);
	free(m->grad);
	free(m->m1);
	free(m->m2);
	for (int l = 0; l <= MLP_MAX_LAYERS; l++)
		free(m->H[l]);
	free(m->delta[0]);
	free(m->delta[1]);
}

/* allocate parameters and buffers for batches of up to cap rows */
static int
MlpAlloc(Mlp *m, const MlpPlan *p, int cap)
{
	m->p = p;
	m->cap = cap;
	m->theta = calloc(p->np, sizeof(float));
	m->grad = calloc(p->np, sizeof(float));
	m->m1 = calloc(p->np, sizeof(float));
	m->m2 = calloc(p->np, sizeof(float));
	if (!m->theta || !m->grad || !m->m1 || !m->m2)
		return -1;
	for (int l = 0; l <= p->nl; l++)
		if ((m->H[l] = malloc(sizeof(float) * (size_t) cap * p->size[l])) == NULL)
			return -1;
	for (int i = 0; i < 2; i++)
		if ((m->delta[i] = malloc(sizeof(float) * (size_t) cap * p->widest)) == NULL)
			return -1;
	return 0;
}

/* forward pass of H[0] (rows x d) through all layers; output in H[nl] */
static void
MlpForward(Mlp *m, int rows)
{
	const MlpPlan *p = m->p;

	for (int l = 1; l <= p->nl; l++)
	{
		int			in = p->size[l - 1],
					out = p->size[l];
		const float *b = m->theta + p->boff[l - 1];
		float	   *H = m->H[l];

		/* H = 1 b^T, then H += H_{l-1} W */
		for (int i = 0; i < rows; i++)
			memcpy(H + (size_t) i * out, b, sizeof(float) * out);
		TrSgemm(0, 0, rows, out, in, 1.0f, m->H[l - 1], in,
				m->theta + p->woff[l - 1], out, 1.0f, H, out);
		if (l < p->nl)
			TrReluInPlace(H, (size_t) rows * out);
	}
}

/*
 * Output loss of a batch and its gradient with respect to the output
 * pre-activations, written to dout (already divided by rows).  y holds
 * class ids, t standardised targets (one of them is NULL).  Returns the
 * sum of the rows' losses.
 */
static double
MlpOutputLoss(Mlp *m, int rows, const int *y, const double *t, float *dout)
{
	int			k = m->p->size[m->p->nl];
	const float *Z = m->H[m->p->nl];
	double		loss = 0.0;
	float		invn = 1.0f / (float) rows;

	for (int i = 0; i < rows; i++)
	{
		const float *z = Z + (size_t) i * k;
		float	   *g = dout + (size_t) i * k;

		if (t != NULL)
		{
			double		e = (double) z[0] - t[i];

			loss += 0.5 * e * e;
			g[0] = (float) e * invn;
		}
		else if (k == 1)
		{
			double		zi = z[0],
						yi = y[i] == 1 ? 1.0 : 0.0,
						pr;

			loss += (zi > 0 ? zi + log1p(exp(-zi)) : log1p(exp(zi))) - yi * zi;
			pr = zi >= 0 ? 1.0 / (1.0 + exp(-zi)) : exp(zi) / (1.0 + exp(zi));
			g[0] = (float) (pr - yi) * invn;
		}
		else
		{
			float		mx = z[0];
			double		sum = 0.0;

			for (int c = 1; c < k; c++)
				if (z[c] > mx)
					mx = z[c];
			for (int c = 0; c < k; c++)
			{
				float		e = expf(z[c] - mx);

				g[c] = e;
				sum += e;
			}
			loss += (double) mx + log(sum) - (double) z[y[i]];
			for (int c = 0; c < k; c++)
				g[c] = (float) (g[c] / sum) * invn;
			g[y[i]] -= invn;
		}
	}
	return loss;
}

/* back-propagate dout (in delta[0]) and fill m->grad, including l2 */
static void
MlpBackward(Mlp *m, int rows)
{
	const MlpPlan *p = m->p;
	float	   *dcur = m->delta[0],
			   *dprev = m->delta[1];

	for (int l = p->nl; l >= 1; l--)
	{
		int			in = p->size[l - 1],
					out = p->size[l];
		float	   *gW = m->grad + p->woff[l - 1];
		float	   *gb = m->grad + p->boff[l - 1];
		const float *W = m->theta + p->woff[l - 1];

		/* gW = H_{l-1}^T delta + l2 W */
		memcpy(gW, W, sizeof(float) * (size_t) in * out);
		TrSgemm(1, 0, in, out, rows, 1.0f, m->H[l - 1], in, dcur, out,
				p->l2, gW, out);
		memset(gb, 0, sizeof(float) * out);
		for (int i = 0; i < rows; i++)
			cblas_saxpy(out, 1.0f, dcur + (size_t) i * out, 1, gb, 1);
		if (l > 1)
		{
			const float *H = m->H[l - 1];
			float	   *tmp;

			/* dprev = (dcur W^T) * relu'(H_{l-1}) */
			TrSgemm(0, 1, rows, in, out, 1.0f, dcur, out, W, out, 0.0f,
					dprev, in);
			TrReluGrad(dprev, H, (size_t) rows * in);
			tmp = dcur;
			dcur = dprev;
			dprev = tmp;
		}
	}
}

/* gather rows idx[0..rows-1] of X into H[0] */
static void
Gather(Mlp *m, const float *X, const int *idx, int rows)
{
	int			d = m->p->size[0];

	for (int i = 0; i < rows; i++)
		memcpy(m->H[0] + (size_t) i * d, X + (size_t) idx[i] * d,
			   sizeof(float) * d);
}

/* predictions for X (n rows): class ids or targets in original units */
static void
MlpPredict(Mlp *m, const float *X, int n, int *pred, double *tpred)
{
	int			d = m->p->size[0];

	for (int b0 = 0; b0 < n; b0 += m->cap)
	{
		int			rows = n - b0 < m->cap ? n - b0 : m->cap;

		memcpy(m->H[0], X + (size_t) b0 * d, sizeof(float) * (size_t) rows * d);
		MlpForward(m, rows);
		MlpDecode(m->p, m->H[m->p->nl], rows, pred ? pred + b0 : NULL,
				  tpred ? tpred + b0 : NULL);
	}
}

/* The sum of the squared weights (not the biases). */
static double
MlpSquaredWeights(const Mlp *m)
{
	double		reg = 0.0;

	for (int l = 1; l <= m->p->nl; l++)
		reg += cblas_sdot((int) ((size_t) m->p->size[l - 1] * m->p->size[l]),
						  m->theta + m->p->woff[l - 1], 1, m->theta + m->p->woff[l - 1], 1);
	return reg;
}

static int
MlpFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val;
	uint64_t	rng = ctx->seed ^ UINT64_C(0x6d6c70);	/* "mlp" */
	MlpPlan		p;
	Mlp			m;
	int		   *idx = NULL;
	int		   *pred = NULL;
	double	   *tpred = NULL;
	double	   *tstd = NULL;
	int		   *ybatch = NULL;
	double	   *tbatch = NULL;
	long		step = 0;
	int			rc = -1;

	memset(&m, 0, sizeof(m));
	if (MlpPlanFrom(ctx, &p, res) != 0)
		goto done;
	idx = malloc(sizeof(int) * n);
	pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	tpred = p.regression ? malloc(sizeof(double) * (nv > 0 ? nv : 1)) : NULL;
	tstd = p.regression ? malloc(sizeof(double) * n) : NULL;
	ybatch = malloc(sizeof(int) * p.batch);
	tbatch = malloc(sizeof(double) * p.batch);
	if (!idx || !pred || (p.regression && (!tpred || !tstd)) || !ybatch || !tbatch ||
		MlpAlloc(&m, &p, p.batch > MLP_EVAL_BATCH ? p.batch : MLP_EVAL_BATCH) != 0)
	{
		TrSetError(res, "out of memory for mlp (%zu parameters)", p.np);
		goto done;
	}
	MlpInitTheta(&p, m.theta, &rng);
	MlpTargets(&p, data, tstd);
	for (int i = 0; i < n; i++)
		idx[i] = i;

	for (int epoch = 1; epoch <= p.epochs; epoch++)
	{
		double		sum = 0.0;
		int			stop;

		TrShuffle(idx, n, &rng);
		for (int b0 = 0; b0 < n; b0 += p.batch)
		{
			int			rows = n - b0 < p.batch ? n - b0 : p.batch;

			if (TrCancelled(ctx))
			{
				TrSetError(res, "cancelled");
				goto done;
			}
			Gather(&m, data->Xtr, idx + b0, rows);
			for (int i = 0; i < rows; i++)
			{
				if (p.regression)
					tbatch[i] = tstd[idx[b0 + i]];
				else
					ybatch[i] = data->ytr[idx[b0 + i]];
			}
			MlpForward(&m, rows);
			sum += MlpOutputLoss(&m, rows, ybatch, p.regression ? tbatch : NULL,
								 m.delta[0]);
			MlpBackward(&m, rows);

			/* Adam with bias correction folded into the step */
			TrAdamStep(m.theta, m.grad, m.m1, m.m2, p.np, ++step, p.lr);
		}
		stop = MlpEpochEnd(&p, ctx, epoch, sum, MlpSquaredWeights(&m), res);
		if (stop < 0)
			goto done;
		if (stop)
			break;
	}

	MlpPredict(&m, data->Xva, nv, pred, tpred);
	MlpScore(&p, data, pred, tpred, res);
	if (MlpKeepArtifact(&p, m.theta, data, res) != 0)
		goto done;
	rc = 0;

done:
	MlpFree(&m);
	free(idx);
	free(pred);
	free(tpred);
	free(tstd);
	free(ybatch);
	free(tbatch);
	return rc;
}

static const TrParamSpec mlp_params[] = {
	{"hidden", TR_PARAM_INT_LIST, 1, 65536, NULL,
	"hidden layer sizes, 1 to 4 layers (default [128])"},
	{"epochs", TR_PARAM_INT, 1, 100000, NULL,
	"passes over the data (default: ~2000 steps, 10 to 200 epochs)"},
	{"lr", TR_PARAM_DOUBLE, 1e-8, 10.0, NULL, "Adam learning rate (default 1e-3)"},
	{"batch", TR_PARAM_INT, 1, 1 << 20, NULL, "mini-batch size (default 200)"},
	{"l2", TR_PARAM_DOUBLE, 0.0, 100.0, NULL,
	"L2 on weights per mean loss (default 1e-5; sklearn alpha = l2 * batch)"},
	{"tol", TR_PARAM_DOUBLE, 0.0, 1.0, NULL, "loss improvement that counts (default 1e-4)"},
	{"n_iter_no_change", TR_PARAM_INT, 0, 100000, NULL,
	"stop after this many epochs without improvement; 0 = never (default 10)"},
	{NULL}
};

const TrFamily TrFamilyMlp = {
	.name = "mlp",
	.supports_classification = 1,
	.supports_regression = 1,
	.needs_image = 0,
	.fit = MlpFit,
	.params = mlp_params,
	.summary = "multilayer perceptron, ReLU, Adam",
	.fit_gpu = MlpFitGpu,
};
