/*-------------------------------------------------------------------------
 *
 * tr_cnn.c
 *	  Family "cnn": a small convolutional network for image classification.
 *
 * Architecture: for each entry of "filters" a k x k convolution (stride 1,
 * zero "same" padding), ReLU and 2 x 2 max pooling; then an optional ReLU
 * dense layer of "hidden" units and a softmax output.  The default,
 * filters [16, 32], kernel 3, hidden 128, is the classic LeNet-like shape
 * that reaches about 90% on Fashion-MNIST in a few epochs.
 *
 * Activations are NHWC.  A convolution is im2col + one float GEMM per
 * mini-batch: the batch's patches form a (B*H*W) x (k*k*Cin) matrix times
 * the (k*k*Cin) x Cout filter matrix; the backward pass is two more GEMMs
 * (filter gradient = cols^T dZ, patch gradient = dZ W^T) and a col2im
 * scatter-add.  Training: mini-batch Adam as in tr_mlp.c, Glorot-uniform
 * initialisation, optional L2 on weights (not biases).
 *
 * Input rows are the image flattened channel-major (C, H, W), as
 * PyTorch's flatten and the pixel columns p0..p783 of scripts/datasets.py;
 * standardisation is per pixel (fitted on training rows, as for every
 * family), constant pixels become 0.
 *
 * On a GPU the same steps run with the same parameters and image order
 * (tr_cnn_gpu.c; what both share is in tr_cnn.h and below).
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_cnn.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"
#include "tr_cnn.h"

/* The CPU's buffers of one block, for batches of cap images. */
typedef struct ConvLayer
{
	float	   *A;				/* input, B x h x w x cin */
	float	   *dA;				/* its gradient (unused for layer 0) */
	float	   *Z;				/* post-ReLU conv output, B x h x w x cout */
	int		   *arg;			/* pool argmax offsets into Z */
} ConvLayer;

/* The CPU's parameters and buffers. */
typedef struct Cnn
{
	const CnnPlan *p;
	ConvLayer	conv[CNN_MAX_CONV];
	float	   *theta,
			   *grad,
			   *m1,
			   *m2;
	float	   *F;				/* flat features B x flat (pool output of last conv) */
	float	   *dF;
	float	   *Hd;				/* hidden activations B x hidden */
	float	   *dHd;
	float	   *O;				/* logits B x nout */
	float	   *dO;
	float	   *cols;			/* largest im2col buffer */
	float	   *dcols;
	float	   *dZ;				/* largest conv output gradient */
	int			cap;
} Cnn;

/*
 * The layout of a network for c x h x w images: the blocks' shapes, the
 * parameter offsets (per block its filter then bias, then the dense
 * layers) and the largest per-image buffers.
 */
static void
CnnLayout(CnnPlan *p, int c, int h, int w)
{
	int			kk = p->k * p->k;

	p->np = 0;
	p->maxcols = 0;
	p->maxz = 0;
	for (int l = 0; l < p->nconv; l++)
	{
		CnnBlock   *S = &p->conv[l];

		S->h = h;
		S->w = w;
		S->cin = c;
		S->cout = p->filters[l];
		S->ph = h / 2;
		S->pw = w / 2;
		S->woff = p->np;
		p->np += (size_t) kk * c * S->cout;
		S->boff = p->np;
		p->np += S->cout;
		if ((size_t) h * w * kk * c > p->maxcols)
			p->maxcols = (size_t) h * w * kk * c;
		if ((size_t) h * w * S->cout > p->maxz)
			p->maxz = (size_t) h * w * S->cout;
		c = S->cout;
		h = S->ph;
		w = S->pw;
	}
	p->flat = h * w * c;
	p->w1off = p->np;
	if (p->hidden > 0)
	{
		p->np += (size_t) p->flat * p->hidden;
		p->b1off = p->np;
		p->np += p->hidden;
		p->w2off = p->np;
		p->np += (size_t) p->hidden * p->nout;
	}
	else
	{
		p->w2off = p->np;
		p->np += (size_t) p->flat * p->nout;
	}
	p->b2off = p->np;
	p->np += p->nout;
}

static void
CnnFree(Cnn *m)
{
	for (int l = 0; l < CNN_MAX_CONV; l++)
	{
		free(m->conv[l].A);
		free(m->conv[l].dA);
		free(m->conv[l].Z);
		free(m->conv[l].arg);
	}
	free(m->theta);
	free(m->grad);
	free(m->m1);
	free(m->m2);
	free(m->F);
	free(m->dF);
	free(m->Hd);
	free(m->dHd);
	free(m->O);
	free(m->dO);
	free(m->cols);
	free(m->dcols);
	free(m->dZ);
}

/* parameters and buffers for batches of cap images */
static int
CnnAlloc(Cnn *m, const CnnPlan *p, int cap)
{
	m->p = p;
	m->cap = cap;
	for (int l = 0; l < p->nconv; l++)
	{
		const CnnBlock *S = &p->conv[l];
		ConvLayer  *L = &m->conv[l];

		L->A = malloc(sizeof(float) * cap * (size_t) S->h * S->w * S->cin);
		L->dA = l > 0 ? malloc(sizeof(float) * cap * (size_t) S->h * S->w * S->cin) : NULL;
		L->Z = malloc(sizeof(float) * cap * (size_t) S->h * S->w * S->cout);
		L->arg = malloc(sizeof(int) * cap * (size_t) S->ph * S->pw * S->cout);
		if (!L->A || (l > 0 && !L->dA) || !L->Z || !L->arg)
			return -1;
	}
	m->theta = calloc(p->np, sizeof(float));
	m->grad = calloc(p->np, sizeof(float));
	m->m1 = calloc(p->np, sizeof(float));
	m->m2 = calloc(p->np, sizeof(float));
	m->F = malloc(sizeof(float) * cap * (size_t) p->flat);
	m->dF = malloc(sizeof(float) * cap * (size_t) p->flat);
	m->Hd = malloc(sizeof(float) * cap * (size_t) (p->hidden > 0 ? p->hidden : 1));
	m->dHd = malloc(sizeof(float) * cap * (size_t) (p->hidden > 0 ? p->hidden : 1));
	m->O = malloc(sizeof(float) * cap * (size_t) p->nout);
	m->dO = malloc(sizeof(float) * cap * (size_t) p->nout);
	m->cols = malloc(sizeof(float) * cap * p->maxcols);
	m->dcols = malloc(sizeof(float) * cap * p->maxcols);
	m->dZ = malloc(sizeof(float) * cap * p->maxz);
	if (!m->theta || !m->grad || !m->m1 || !m->m2 || !m->F || !m->dF || !m->Hd ||
		!m->dHd || !m->O || !m->dO || !m->cols || !m->dcols || !m->dZ)
		return -1;
	return 0;
}

/* patches of A (B x h x w x c) into cols ((B*h*w) x (k*k*c)), zero padded */
static void
Im2col(const float *A, int B, int h, int w, int c, int k, float *cols)
{
	int			p = k / 2;
	size_t		K = (size_t) k * k * c;

	for (int b = 0; b < B; b++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
			{
				float	   *dst = cols + (((size_t) b * h + y) * w + x) * K;

				for (int ky = 0; ky < k; ky++)
				{
					int			iy = y + ky - p;

					for (int kx = 0; kx < k; kx++)
					{
						int			ix = x + kx - p;

						if (iy < 0 || iy >= h || ix < 0 || ix >= w)
							memset(dst, 0, sizeof(float) * c);
						else
							memcpy(dst, A + (((size_t) b * h + iy) * w + ix) * c,
								   sizeof(float) * c);
						dst += c;
					}
				}
			}
}

/* scatter-add patch gradients back to dA (the adjoint of Im2col) */
static void
Col2im(const float *dcols, int B, int h, int w, int c, int k, float *dA)
{
	int			p = k / 2;
	size_t		K = (size_t) k * k * c;

	memset(dA, 0, sizeof(float) * (size_t) B * h * w * c);
	for (int b = 0; b < B; b++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
			{
				const float *src = dcols + (((size_t) b * h + y) * w + x) * K;

				for (int ky = 0; ky < k; ky++)
				{
					int			iy = y + ky - p;

					for (int kx = 0; kx < k; kx++)
					{
						int			ix = x + kx - p;

						if (iy >= 0 && iy < h && ix >= 0 && ix < w)
						{
							float	   *d = dA + (((size_t) b * h + iy) * w + ix) * c;

							for (int q = 0; q < c; q++)
								d[q] += src[q];
						}
						src += c;
					}
				}
			}
}

/* input rows (C, H, W order) into NHWC */
static void
ToNhwc(const float *X, const int *idx, int B, int c, int h, int w, float *A)
{
	size_t		d = (size_t) c * h * w;

	for (int b = 0; b < B; b++)
	{
		const float *src = X + (size_t) (idx ? idx[b] : b) * d;
		float	   *dst = A + (size_t) b * d;

		if (c == 1)
			memcpy(dst, src, sizeof(float) * d);
		else
			for (int ch = 0; ch < c; ch++)
				for (int p = 0; p < h * w; p++)
					dst[(size_t) p * c + ch] = src[(size_t) ch * h * w + p];
	}
}

/* forward pass of B images already in conv[0].A; logits in m->O */
static void
CnnForward(Cnn *m, int B)
{
	int			kk = m->p->k * m->p->k;

	for (int l = 0; l < m->p->nconv; l++)
	{
		ConvLayer  *L = &m->conv[l];
		const CnnBlock *S = &m->p->conv[l];
		size_t		rows = (size_t) B * S->h * S->w;
		int			K = kk * S->cin;
		const float *bias = m->theta + S->boff;
		float	   *out = l + 1 < m->p->nconv ? m->conv[l + 1].A : m->F;

		Im2col(L->A, B, S->h, S->w, S->cin, m->p->k, m->cols);
		for (size_t r = 0; r < rows; r++)
			memcpy(L->Z + r * S->cout, bias, sizeof(float) * S->cout);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) rows, S->cout, K,
					1.0f, m->cols, K, m->theta + S->woff, S->cout, 1.0f, L->Z, S->cout);
		TrReluInPlace(L->Z, rows * S->cout);
		/* 2 x 2 max pooling, remembering the winner */
		for (int b = 0; b < B; b++)
			for (int py = 0; py < S->ph; py++)
				for (int px = 0; px < S->pw; px++)
					for (int ch = 0; ch < S->cout; ch++)
					{
						size_t		o = (((size_t) b * S->ph + py) * S->pw + px) * S->cout + ch;
						int			best = -1;
						float		bv = 0.0f;

						for (int dy = 0; dy < 2; dy++)
							for (int dx = 0; dx < 2; dx++)
							{
								int			zi = (int) ((((size_t) b * S->h + 2 * py + dy) * S->w +
														 2 * px + dx) * S->cout + ch);

								if (best < 0 || L->Z[zi] > bv)
								{
									best = zi;
									bv = L->Z[zi];
								}
							}
						out[o] = bv;
						L->arg[o] = best;
					}
	}
	/* dense part */
	{
		const float *in = m->F;
		int			nin = m->p->flat;

		if (m->p->hidden > 0)
		{
			for (int b = 0; b < B; b++)
				memcpy(m->Hd + (size_t) b * m->p->hidden, m->theta + m->p->b1off,
					   sizeof(float) * m->p->hidden);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, m->p->hidden, m->p->flat,
						1.0f, m->F, m->p->flat, m->theta + m->p->w1off, m->p->hidden,
						1.0f, m->Hd, m->p->hidden);
			TrReluInPlace(m->Hd, (size_t) B * m->p->hidden);
			in = m->Hd;
			nin = m->p->hidden;
		}
		for (int b = 0; b < B; b++)
			memcpy(m->O + (size_t) b * m->p->nout, m->theta + m->p->b2off,
				   sizeof(float) * m->p->nout);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, m->p->nout, nin,
					1.0f, in, nin, m->theta + m->p->w2off, m->p->nout, 1.0f, m->O, m->p->nout);
	}
}

/* softmax cross-entropy of the batch; dO = (P - Y) / B */
static double
CnnLoss(Cnn *m, int B, const int *y)
{
	double		loss = 0.0;
	int			k = m->p->nout;

	for (int b = 0; b < B; b++)
	{
		const float *z = m->O + (size_t) b * k;
		float	   *g = m->dO + (size_t) b * k;
		float		mx = z[0];
		double		sum = 0.0;

		for (int c = 1; c < k; c++)
			mx = z[c] > mx ? z[c] : mx;
		for (int c = 0; c < k; c++)
		{
			g[c] = expf(z[c] - mx);
			sum += g[c];
		}
		loss += (double) mx + log(sum) - (double) z[y[b]];
		for (int c = 0; c < k; c++)
			g[c] = (float) (g[c] / sum) / (float) B;
		g[y[b]] -= 1.0f / (float) B;
	}
	return loss / B;
}

/* gW = in^T d + l2 W, gb = column sums of d */
static void
DenseGrad(const float *in, const float *d, const float *W, int B, int nin,
		  int nout, float l2, float *gW, float *gb)
{
	memcpy(gW, W, sizeof(float) * (size_t) nin * nout);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nin, nout, B,
				1.0f, in, nin, d, nout, l2, gW, nout);
	memset(gb, 0, sizeof(float) * nout);
	for (int b = 0; b < B; b++)
		cblas_saxpy(nout, 1.0f, d + (size_t) b * nout, 1, gb, 1);
}

static void
CnnBackward(Cnn *m, int B, float l2)
{
	int			kk = m->p->k * m->p->k;

	/* dense */
	if (m->p->hidden > 0)
	{
		DenseGrad(m->Hd, m->dO, m->theta + m->p->w2off, B, m->p->hidden, m->p->nout, l2,
				  m->grad + m->p->w2off, m->grad + m->p->b2off);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->p->hidden, m->p->nout,
					1.0f, m->dO, m->p->nout, m->theta + m->p->w2off, m->p->nout,
					0.0f, m->dHd, m->p->hidden);
		TrReluGrad(m->dHd, m->Hd, (size_t) B * m->p->hidden);
		DenseGrad(m->F, m->dHd, m->theta + m->p->w1off, B, m->p->flat, m->p->hidden, l2,
				  m->grad + m->p->w1off, m->grad + m->p->b1off);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->p->flat, m->p->hidden,
					1.0f, m->dHd, m->p->hidden, m->theta + m->p->w1off, m->p->hidden,
					0.0f, m->dF, m->p->flat);
	}
	else
	{
		DenseGrad(m->F, m->dO, m->theta + m->p->w2off, B, m->p->flat, m->p->nout, l2,
				  m->grad + m->p->w2off, m->grad + m->p->b2off);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->p->flat, m->p->nout,
					1.0f, m->dO, m->p->nout, m->theta + m->p->w2off, m->p->nout,
					0.0f, m->dF, m->p->flat);
	}

	/* convolutions, last to first */
	for (int l = m->p->nconv - 1; l >= 0; l--)
	{
		ConvLayer  *L = &m->conv[l];
		const CnnBlock *S = &m->p->conv[l];
		const float *dP = l + 1 < m->p->nconv ? m->conv[l + 1].dA : m->dF;
		size_t		rows = (size_t) B * S->h * S->w;
		size_t		npool = (size_t) B * S->ph * S->pw * S->cout;
		int			K = kk * S->cin;
		float	   *gb = m->grad + S->boff;

		/* unpool into dZ, then through the ReLU */
		memset(m->dZ, 0, sizeof(float) * rows * S->cout);
		for (size_t i = 0; i < npool; i++)
			m->dZ[L->arg[i]] += dP[i];
		TrReluGrad(m->dZ, L->Z, rows * S->cout);
		/* the forward im2col of this layer was overwritten: redo it */
		Im2col(L->A, B, S->h, S->w, S->cin, m->p->k, m->cols);
		memcpy(m->grad + S->woff, m->theta + S->woff, sizeof(float) * (size_t) K * S->cout);
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, S->cout, (int) rows,
					1.0f, m->cols, K, m->dZ, S->cout, l2, m->grad + S->woff, S->cout);
		memset(gb, 0, sizeof(float) * S->cout);
		for (size_t r = 0; r < rows; r++)
			cblas_saxpy(S->cout, 1.0f, m->dZ + r * S->cout, 1, gb, 1);
		if (l > 0)
		{
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) rows, K, S->cout,
						1.0f, m->dZ, S->cout, m->theta + S->woff, S->cout,
						0.0f, m->dcols, K);
			Col2im(m->dcols, B, S->h, S->w, S->cin, m->p->k, L->dA);
		}
	}
}

static void
GlorotInit(float *W, size_t count, int fan_in, int fan_out, uint64_t *rng)
{
	float		bound = sqrtf(6.0f / (float) (fan_in + fan_out));

	for (size_t i = 0; i < count; i++)
		W[i] = (float) ((2.0 * TrRandUniform(rng) - 1.0) * bound);
}

/*
 * The network's shape, layout and training settings from the candidate's
 * params and the task's image shape.  Returns 0, or -1 with res->error set.
 */
int
CnnPlanFrom(const TrContext *ctx, CnnPlan *p, TrResult *res)
{
	const TrData *data = ctx->data;
	int			dflt_filters[2] = {16, 32};
	int			h = data->height,
				w = data->width;
	json_object *f;

	memset(p, 0, sizeof(*p));
	p->nconv = TrParamIntList(ctx->params, "filters", p->filters, CNN_MAX_CONV,
							  dflt_filters, 2);
	p->epochs = TrParamInt(ctx->params, "epochs", 5);
	p->batch = TrParamInt(ctx->params, "batch", 64);
	p->lr = (float) TrParamDouble(ctx->params, "lr", 1e-3);
	p->l2 = (float) TrParamDouble(ctx->params, "l2", 0.0);
	p->k = TrParamInt(ctx->params, "kernel", 3);
	p->hidden = TrParamInt(ctx->params, "hidden", 128);
	p->nout = data->n_classes;
	if (p->batch > data->n_train)
		p->batch = data->n_train;
	if (p->k % 2 == 0)
	{
		TrSetError(res, "cnn: kernel must be odd for \"same\" padding, got %d", p->k);
		return -1;
	}
	if (ctx->params != NULL &&
		json_object_object_get_ex(ctx->params, "filters", &f) &&
		json_object_is_type(f, json_type_array) &&
		json_object_array_length(f) > CNN_MAX_CONV)
	{
		TrSetError(res, "cnn supports 1 to %d conv blocks, got %d", CNN_MAX_CONV,
				   (int) json_object_array_length(f));
		return -1;
	}
	if ((double) p->batch * data->height * data->width *
		(data->channels > 1024 ? data->channels : 1024) >= 2147483647.0)
	{
		TrSetError(res, "cnn: batch %d of %dx%d images is too large", p->batch,
				   data->height, data->width);
		return -1;
	}
	for (int l = 0; l < p->nconv; l++)
	{
		if (h < 2 || w < 2)
		{
			TrSetError(res, "cnn: image %dx%d is too small for %d conv+pool layers",
					   data->height, data->width, p->nconv);
			return -1;
		}
		h /= 2;
		w /= 2;
	}
	CnnLayout(p, data->channels, data->height, data->width);
	return 0;
}

/* Glorot-uniform filters and weights, zero biases. */
void
CnnInitTheta(const CnnPlan *p, float *theta, uint64_t *rng)
{
	int			kk = p->k * p->k;

	memset(theta, 0, sizeof(float) * p->np);
	for (int l = 0; l < p->nconv; l++)
	{
		const CnnBlock *S = &p->conv[l];

		GlorotInit(theta + S->woff, (size_t) kk * S->cin * S->cout,
				   kk * S->cin, kk * S->cout, rng);
	}
	if (p->hidden > 0)
	{
		GlorotInit(theta + p->w1off, (size_t) p->flat * p->hidden, p->flat, p->hidden, rng);
		GlorotInit(theta + p->w2off, (size_t) p->hidden * p->nout, p->hidden, p->nout, rng);
	}
	else
		GlorotInit(theta + p->w2off, (size_t) p->flat * p->nout, p->flat, p->nout, rng);
}

/*
 * After an epoch: the mean loss, a divergence check and progress.  Returns
 * 0, or -1 with res->error set.
 */
int
CnnEpochEnd(const TrContext *ctx, int epoch, double loss_sum, TrResult *res)
{
	double		loss = loss_sum / ctx->data->n_train;

	if (!isfinite(loss))
	{
		TrSetError(res, "cnn training diverged (loss not finite at epoch %d); lower lr",
				   epoch);
		return -1;
	}
	TrReportProgress(ctx, epoch, loss);
	res->epochs = epoch;
	res->train_loss = loss;
	return 0;
}

/* The trained parameters as the run's artifact. */
int
CnnKeepArtifact(const CnnPlan *p, const float *theta, const TrData *data,
				TrResult *res)
{
	TrArtifact	art;
	int64_t		dims[4];
	int32_t		arch[4 + CNN_MAX_CONV];
	char		name[24];		/* "conv%d.W" for any int */

	TrArtifactBegin(&art, "cnn", data);
	arch[0] = p->k;
	arch[1] = p->hidden;
	arch[2] = p->nout;
	arch[3] = p->nconv;
	for (int l = 0; l < p->nconv; l++)
		arch[4 + l] = p->filters[l];
	dims[0] = 4 + p->nconv;
	TrArtifactAdd(&art, "arch", TR_DT_I32, 1, dims, arch);
	for (int l = 0; l < p->nconv; l++)
	{
		const CnnBlock *S = &p->conv[l];

		dims[0] = p->k;
		dims[1] = p->k;
		dims[2] = S->cin;
		dims[3] = S->cout;
		snprintf(name, sizeof(name), "conv%d.W", l + 1);
		TrArtifactAdd(&art, name, TR_DT_F32, 4, dims, theta + S->woff);
		dims[0] = S->cout;
		snprintf(name, sizeof(name), "conv%d.b", l + 1);
		TrArtifactAdd(&art, name, TR_DT_F32, 1, dims, theta + S->boff);
	}
	if (p->hidden > 0)
	{
		dims[0] = p->flat;
		dims[1] = p->hidden;
		TrArtifactAdd(&art, "dense1.W", TR_DT_F32, 2, dims, theta + p->w1off);
		dims[0] = p->hidden;
		TrArtifactAdd(&art, "dense1.b", TR_DT_F32, 1, dims, theta + p->b1off);
	}
	dims[0] = p->hidden > 0 ? p->hidden : p->flat;
	dims[1] = p->nout;
	TrArtifactAdd(&art, "out.W", TR_DT_F32, 2, dims, theta + p->w2off);
	dims[0] = p->nout;
	TrArtifactAdd(&art, "out.b", TR_DT_F32, 1, dims, theta + p->b2off);
	return TrArtifactFinish(&art, res);
}

static int
CnnFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val;
	uint64_t	rng = ctx->seed ^ UINT64_C(0x636e6e);	/* "cnn" */
	CnnPlan		p;
	Cnn			m;
	int		   *idx = NULL;
	int		   *yb = NULL;
	int		   *pred = NULL;
	long		step = 0;
	int			rc = -1;

	memset(&m, 0, sizeof(m));
	if (CnnPlanFrom(ctx, &p, res) != 0)
		goto done;
	idx = malloc(sizeof(int) * n);
	yb = malloc(sizeof(int) * p.batch);
	pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	if (!idx || !yb || !pred || CnnAlloc(&m, &p, p.batch) != 0)
	{
		TrSetError(res, "out of memory for cnn (batch %d of %dx%dx%d images)",
				   p.batch, data->channels, data->height, data->width);
		goto done;
	}
	CnnInitTheta(&p, m.theta, &rng);
	for (int i = 0; i < n; i++)
		idx[i] = i;

	for (int epoch = 1; epoch <= p.epochs; epoch++)
	{
		double		sum = 0.0;

		TrShuffle(idx, n, &rng);
		for (int b0 = 0; b0 < n; b0 += p.batch)
		{
			int			B = n - b0 < p.batch ? n - b0 : p.batch;

			if (TrCancelled(ctx))
			{
				TrSetError(res, "cancelled");
				goto done;
			}
			ToNhwc(data->Xtr, idx + b0, B, data->channels, data->height, data->width,
				   m.conv[0].A);
			for (int i = 0; i < B; i++)
				yb[i] = data->ytr[idx[b0 + i]];
			CnnForward(&m, B);
			sum += B * CnnLoss(&m, B, yb);
			CnnBackward(&m, B, p.l2);
			TrAdamStep(m.theta, m.grad, m.m1, m.m2, p.np, ++step, p.lr);
		}
		if (CnnEpochEnd(ctx, epoch, sum, res) != 0)
			goto done;
	}

	for (int b0 = 0; b0 < nv; b0 += p.batch)
	{
		int			B = nv - b0 < p.batch ? nv - b0 : p.batch;

		ToNhwc(data->Xva + (size_t) b0 * data->d, NULL, B, data->channels,
			   data->height, data->width, m.conv[0].A);
		CnnForward(&m, B);
		for (int i = 0; i < B; i++)
			pred[b0 + i] = TrArgmax(m.O + (size_t) i * p.nout, p.nout);
	}
	res->score = TrAccuracy(pred, data->yva, nv);
	if (CnnKeepArtifact(&p, m.theta, data, res) != 0)
		goto done;
	rc = 0;

done:
	CnnFree(&m);
	free(idx);
	free(yb);
	free(pred);
	return rc;
}

static const TrParamSpec cnn_params[] = {
	{"filters", TR_PARAM_INT_LIST, 1, 1024, NULL,
	"channels of each conv+pool block, 1 to 4 blocks (default [16, 32])"},
	{"kernel", TR_PARAM_INT, 1, 11, NULL, "odd kernel size (default 3)"},
	{"hidden", TR_PARAM_INT, 0, 65536, NULL, "dense ReLU units, 0 = none (default 128)"},
	{"epochs", TR_PARAM_INT, 1, 100000, NULL, "passes over the data (default 5)"},
	{"lr", TR_PARAM_DOUBLE, 1e-8, 10.0, NULL, "Adam learning rate (default 1e-3)"},
	{"batch", TR_PARAM_INT, 1, 4096, NULL, "mini-batch size (default 64)"},
	{"l2", TR_PARAM_DOUBLE, 0.0, 100.0, NULL, "L2 on weights per mean loss (default 0)"},
	{NULL}
};

const TrFamily TrFamilyCnn = {
	.name = "cnn",
	.supports_classification = 1,
	.supports_regression = 0,
	.needs_image = 1,
	.fit = CnnFit,
	.params = cnn_params,
	.summary = "convolutional network (conv-relu-pool blocks, dense), im2col + GEMM, Adam",
	.fit_gpu = CnnFitGpu,
};
