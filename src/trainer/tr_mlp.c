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
 * array so the update is one loop.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_mlp.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer.h"

#define MLP_MAX_LAYERS 5		/* hidden layers + output */
#define MLP_EVAL_BATCH 1024

typedef struct Mlp
{
	int			nl;				/* weight layers (hidden + 1) */
	int			size[MLP_MAX_LAYERS + 1];	/* size[0] = d, size[nl] = out */
	size_t		woff[MLP_MAX_LAYERS];	/* offsets of W_l and b_l in theta */
	size_t		boff[MLP_MAX_LAYERS];
	size_t		np;				/* number of parameters */
	float	   *theta;
	float	   *grad;
	float	   *m1;
	float	   *m2;
	float	   *H[MLP_MAX_LAYERS + 1];	/* activations, batch x size[l] */
	float	   *delta[2];		/* two back-propagation buffers */
	int			cap;			/* rows the buffers hold */
} Mlp;

static void
MlpFree(Mlp *m)
{
	free(m->theta);
	free(m->grad);
	free(m->m1);
	free(m->m2);
	for (int l = 0; l <= m->nl; l++)
		free(m->H[l]);
	free(m->delta[0]);
	free(m->delta[1]);
}

/* allocate parameters and buffers for batches of up to cap rows */
static int
MlpAlloc(Mlp *m, int cap)
{
	int			widest = 0;

	m->np = 0;
	for (int l = 1; l <= m->nl; l++)
	{
		m->woff[l - 1] = m->np;
		m->np += (size_t) m->size[l - 1] * m->size[l];
		m->boff[l - 1] = m->np;
		m->np += m->size[l];
	}
	for (int l = 0; l <= m->nl; l++)
		if (m->size[l] > widest)
			widest = m->size[l];
	m->cap = cap;
	m->theta = calloc(m->np, sizeof(float));
	m->grad = calloc(m->np, sizeof(float));
	m->m1 = calloc(m->np, sizeof(float));
	m->m2 = calloc(m->np, sizeof(float));
	if (!m->theta || !m->grad || !m->m1 || !m->m2)
		return -1;
	for (int l = 0; l <= m->nl; l++)
		if ((m->H[l] = malloc(sizeof(float) * (size_t) cap * m->size[l])) == NULL)
			return -1;
	for (int i = 0; i < 2; i++)
		if ((m->delta[i] = malloc(sizeof(float) * (size_t) cap * widest)) == NULL)
			return -1;
	return 0;
}

/* forward pass of H[0] (rows x d) through all layers; output in H[nl] */
static void
MlpForward(Mlp *m, int rows)
{
	for (int l = 1; l <= m->nl; l++)
	{
		int			in = m->size[l - 1],
					out = m->size[l];
		const float *b = m->theta + m->boff[l - 1];
		float	   *H = m->H[l];

		/* H = 1 b^T, then H += H_{l-1} W */
		for (int i = 0; i < rows; i++)
			memcpy(H + (size_t) i * out, b, sizeof(float) * out);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, out, in,
					1.0f, m->H[l - 1], in, m->theta + m->woff[l - 1], out,
					1.0f, H, out);
		if (l < m->nl)
			TrReluInPlace(H, (size_t) rows * out);
	}
}

/*
 * Output loss of a batch and its gradient with respect to the output
 * pre-activations, written to dout (already divided by rows).  y holds
 * class ids, t standardised targets (one of them is NULL).
 */
static double
MlpOutputLoss(Mlp *m, int rows, const int *y, const double *t, float *dout)
{
	int			k = m->size[m->nl];
	const float *Z = m->H[m->nl];
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
						p;

			loss += (zi > 0 ? zi + log1p(exp(-zi)) : log1p(exp(zi))) - yi * zi;
			p = zi >= 0 ? 1.0 / (1.0 + exp(-zi)) : exp(zi) / (1.0 + exp(zi));
			g[0] = (float) (p - yi) * invn;
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
	return loss / rows;
}

/* back-propagate dout (in delta[0]) and fill m->grad, including l2 */
static void
MlpBackward(Mlp *m, int rows, float l2)
{
	float	   *dcur = m->delta[0],
			   *dprev = m->delta[1];

	for (int l = m->nl; l >= 1; l--)
	{
		int			in = m->size[l - 1],
					out = m->size[l];
		float	   *gW = m->grad + m->woff[l - 1];
		float	   *gb = m->grad + m->boff[l - 1];
		const float *W = m->theta + m->woff[l - 1];

		/* gW = H_{l-1}^T delta + l2 W */
		memcpy(gW, W, sizeof(float) * (size_t) in * out);
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, rows,
					1.0f, m->H[l - 1], in, dcur, out, l2, gW, out);
		memset(gb, 0, sizeof(float) * out);
		for (int i = 0; i < rows; i++)
			cblas_saxpy(out, 1.0f, dcur + (size_t) i * out, 1, gb, 1);
		if (l > 1)
		{
			const float *H = m->H[l - 1];
			float	   *tmp;

			/* dprev = (dcur W^T) * relu'(H_{l-1}) */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, in, out,
						1.0f, dcur, out, W, out, 0.0f, dprev, in);
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
	int			d = m->size[0];

	for (int i = 0; i < rows; i++)
		memcpy(m->H[0] + (size_t) i * d, X + (size_t) idx[i] * d,
			   sizeof(float) * d);
}

/* predictions for X (n rows): class ids or targets in original units */
static void
MlpPredict(Mlp *m, const float *X, int n, int *pred, double *tpred,
		   double tmean, double tsd)
{
	int			d = m->size[0],
				k = m->size[m->nl];

	for (int b0 = 0; b0 < n; b0 += m->cap)
	{
		int			rows = n - b0 < m->cap ? n - b0 : m->cap;

		memcpy(m->H[0], X + (size_t) b0 * d, sizeof(float) * (size_t) rows * d);
		MlpForward(m, rows);
		for (int i = 0; i < rows; i++)
		{
			const float *z = m->H[m->nl] + (size_t) i * k;

			if (tpred != NULL)
				tpred[b0 + i] = tmean + tsd * z[0];
			else if (k == 1)
				pred[b0 + i] = z[0] > 0.0f ? 1 : 0;
			else
				pred[b0 + i] = TrArgmax(z, k);
		}
	}
}

static int
MlpFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			regression = data->kind == TR_KIND_REGRESSION;
	int			n = data->n_train,
				nv = data->n_val;
	int			dflt_hidden[1] = {128};
	int			hidden[MLP_MAX_LAYERS];
	int			nh = TrParamIntList(ctx->params, "hidden", hidden, 4, dflt_hidden, 1);
	int			batch = TrParamInt(ctx->params, "batch", 200);
	int			epochs = TrParamInt(ctx->params, "epochs", 0);
	float		lr = (float) TrParamDouble(ctx->params, "lr", 1e-3);
	float		l2 = (float) TrParamDouble(ctx->params, "l2", 1e-5);
	double		tol = TrParamDouble(ctx->params, "tol", 1e-4);
	int			patience = TrParamInt(ctx->params, "n_iter_no_change", 10);
	uint64_t	rng = ctx->seed ^ UINT64_C(0x6d6c70);	/* "mlp" */
	Mlp			m;
	int		   *idx = malloc(sizeof(int) * n);
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double	   *tpred = regression ? malloc(sizeof(double) * (nv > 0 ? nv : 1)) : NULL;
	double	   *tstd = regression ? malloc(sizeof(double) * n) : NULL;
	int		   *ybatch = malloc(sizeof(int) * (batch < n ? batch : n));
	double	   *tbatch = malloc(sizeof(double) * (batch < n ? batch : n));
	double		tmean = 0.0,
				tsd = 1.0,
				best_loss = INFINITY,
				loss = NAN;
	long		step = 0;
	int			stall = 0,
				epoch,
				rc = -1;

	memset(&m, 0, sizeof(m));
	{
		json_object *h;

		if (ctx->params != NULL &&
			json_object_object_get_ex(ctx->params, "hidden", &h) &&
			json_object_is_type(h, json_type_array) &&
			json_object_array_length(h) > 4)
		{
			TrSetError(res, "mlp supports 1 to 4 hidden layers, got %d",
					   (int) json_object_array_length(h));
			goto done;
		}
	}
	if (batch > n)
		batch = n;
	if (epochs <= 0)
	{
		/* default: about 2000 Adam steps, between 10 and 200 epochs */
		int			per_epoch = (n + batch - 1) / batch;

		epochs = (2000 + per_epoch - 1) / per_epoch;
		epochs = epochs < 10 ? 10 : (epochs > 200 ? 200 : epochs);
	}
	m.nl = nh + 1;
	m.size[0] = data->d;
	for (int l = 0; l < nh; l++)
		m.size[l + 1] = hidden[l];
	m.size[m.nl] = regression ? 1 : (data->n_classes == 2 ? 1 : data->n_classes);
	if (!idx || !pred || (regression && (!tpred || !tstd)) || !ybatch || !tbatch ||
		MlpAlloc(&m, batch > MLP_EVAL_BATCH ? batch : MLP_EVAL_BATCH) != 0)
	{
		TrSetError(res, "out of memory for mlp (%zu parameters)", m.np);
		goto done;
	}

	/* Glorot-uniform weights and biases, as scikit-learn */
	for (int l = 1; l <= m.nl; l++)
	{
		float		bound = sqrtf(6.0f / (float) (m.size[l - 1] + m.size[l]));
		float	   *W = m.theta + m.woff[l - 1];

		for (size_t i = 0; i < (size_t) m.size[l - 1] * m.size[l]; i++)
			W[i] = (float) ((2.0 * TrRandUniform(&rng) - 1.0) * bound);
		for (int i = 0; i < m.size[l]; i++)
			m.theta[m.boff[l - 1] + i] = (float) ((2.0 * TrRandUniform(&rng) - 1.0) * bound);
	}
	if (regression)
	{
		double		ss = 0.0;

		for (int i = 0; i < n; i++)
			tmean += data->ttr[i];
		tmean /= n;
		for (int i = 0; i < n; i++)
			ss += (data->ttr[i] - tmean) * (data->ttr[i] - tmean);
		tsd = sqrt(ss / n);
		if (!(tsd > 0.0))
			tsd = 1.0;
		for (int i = 0; i < n; i++)
			tstd[i] = (data->ttr[i] - tmean) / tsd;
	}
	for (int i = 0; i < n; i++)
		idx[i] = i;

	for (epoch = 1; epoch <= epochs; epoch++)
	{
		double		sum = 0.0,
					reg = 0.0;

		TrShuffle(idx, n, &rng);
		for (int b0 = 0; b0 < n; b0 += batch)
		{
			int			rows = n - b0 < batch ? n - b0 : batch;

			if (TrCancelled(ctx))
			{
				TrSetError(res, "cancelled");
				goto done;
			}
			Gather(&m, data->Xtr, idx + b0, rows);
			for (int i = 0; i < rows; i++)
			{
				if (regression)
					tbatch[i] = tstd[idx[b0 + i]];
				else
					ybatch[i] = data->ytr[idx[b0 + i]];
			}
			MlpForward(&m, rows);
			sum += rows * MlpOutputLoss(&m, rows, ybatch,
										regression ? tbatch : NULL, m.delta[0]);
			MlpBackward(&m, rows, l2);

			/* Adam with bias correction folded into the step */
			TrAdamStep(m.theta, m.grad, m.m1, m.m2, m.np, ++step, lr);
		}
		for (int l = 1; l <= m.nl; l++)
		{
			const float *W = m.theta + m.woff[l - 1];
			size_t		cnt = (size_t) m.size[l - 1] * m.size[l];

			reg += cblas_sdot((int) cnt, W, 1, W, 1);
		}
		loss = sum / n + 0.5 * l2 * reg;
		if (regression)
			loss *= tsd * tsd;	/* report in the target's units */
		if (!isfinite(loss))
		{
			TrSetError(res, "mlp training diverged (loss is not finite at epoch %d); lower lr",
					   epoch);
			goto done;
		}
		TrReportProgress(ctx, epoch, loss);
		res->epochs = epoch;
		/* scikit-learn's stopping rule on the training loss */
		if (loss > best_loss - tol * (regression ? tsd * tsd : 1.0))
			stall++;
		else
			stall = 0;
		if (loss < best_loss)
			best_loss = loss;
		if (patience > 0 && stall > patience)
			break;
	}

	MlpPredict(&m, data->Xva, nv, pred, tpred, tmean, tsd);
	if (regression)
	{
		TrRegressionScore(tpred, data->tva, nv, &res->r2, &res->rmse);
		res->score = res->r2;
	}
	else
		res->score = TrAccuracy(pred, data->yva, nv);
	res->train_loss = loss;

	{
		TrArtifact art;
		int64_t		dims[2];
		int32_t		sizes[MLP_MAX_LAYERS + 1];
		double		tnorm[2] = {tmean, tsd};
		char		name[16];

		TrArtifactBegin(&art, "mlp", data);
		for (int l = 0; l <= m.nl; l++)
			sizes[l] = m.size[l];
		dims[0] = m.nl + 1;
		TrArtifactAdd(&art, "layer_sizes", TR_DT_I32, 1, dims, sizes);
		if (regression)
		{
			dims[0] = 2;
			TrArtifactAdd(&art, "target_mean_sd", TR_DT_F64, 1, dims, tnorm);
		}
		for (int l = 1; l <= m.nl; l++)
		{
			dims[0] = m.size[l - 1];
			dims[1] = m.size[l];
			snprintf(name, sizeof(name), "W%d", l);
			TrArtifactAdd(&art, name, TR_DT_F32, 2, dims, m.theta + m.woff[l - 1]);
			dims[0] = m.size[l];
			snprintf(name, sizeof(name), "b%d", l);
			TrArtifactAdd(&art, name, TR_DT_F32, 1, dims, m.theta + m.boff[l - 1]);
		}
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
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
};
