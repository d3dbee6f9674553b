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
 * IDENTIFICATION
 *	  src/trainer/tr_cnn.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer.h"

#define CNN_MAX_CONV 4

typedef struct ConvLayer
{
	int			h;				/* input height, width, channels */
	int			w;
	int			cin;
	int			cout;
	int			ph;				/* pooled output height, width */
	int			pw;
	size_t		woff;			/* filter (k*k*cin) x cout in theta */
	size_t		boff;
	float	   *A;				/* input, B x h x w x cin */
	float	   *dA;				/* its gradient (unused for layer 0) */
	float	   *Z;				/* post-ReLU conv output, B x h x w x cout */
	int		   *arg;			/* pool argmax offsets into Z */
} ConvLayer;

typedef struct Cnn
{
	int			k;				/* kernel size */
	int			nconv;
	ConvLayer	conv[CNN_MAX_CONV];
	int			flat;			/* features after the last pool */
	int			hidden;			/* dense hidden units, 0 = none */
	int			nout;
	size_t		w1off,
				b1off,
				w2off,
				b2off;
	size_t		np;
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

static void
CnnFree(Cnn *m)
{
	for (int l = 0; l < m->nconv; l++)
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

/* shapes, parameter offsets and buffers for batches of cap images */
static int
CnnAlloc(Cnn *m, int c, int h, int w, const int *filters, int cap)
{
	size_t		maxcols = 0,
				maxz = 0;
	int			kk = m->k * m->k;

	m->np = 0;
	m->cap = cap;
	for (int l = 0; l < m->nconv; l++)
	{
		ConvLayer  *L = &m->conv[l];

		L->h = h;
		L->w = w;
		L->cin = c;
		L->cout = filters[l];
		L->ph = h / 2;
		L->pw = w / 2;
		L->woff = m->np;
		m->np += (size_t) kk * c * L->cout;
		L->boff = m->np;
		m->np += L->cout;
		if ((size_t) h * w * kk * c > maxcols)
			maxcols = (size_t) h * w * kk * c;
		if ((size_t) h * w * L->cout > maxz)
			maxz = (size_t) h * w * L->cout;
		L->A = malloc(sizeof(float) * cap * (size_t) h * w * c);
		L->dA = l > 0 ? malloc(sizeof(float) * cap * (size_t) h * w * c) : NULL;
		L->Z = malloc(sizeof(float) * cap * (size_t) h * w * L->cout);
		L->arg = malloc(sizeof(int) * cap * (size_t) L->ph * L->pw * L->cout);
		if (!L->A || (l > 0 && !L->dA) || !L->Z || !L->arg)
			return -1;
		c = L->cout;
		h = L->ph;
		w = L->pw;
	}
	m->flat = h * w * c;
	m->w1off = m->np;
	if (m->hidden > 0)
	{
		m->np += (size_t) m->flat * m->hidden;
		m->b1off = m->np;
		m->np += m->hidden;
		m->w2off = m->np;
		m->np += (size_t) m->hidden * m->nout;
	}
	else
	{
		m->w2off = m->np;
		m->np += (size_t) m->flat * m->nout;
	}
	m->b2off = m->np;
	m->np += m->nout;
	m->theta = calloc(m->np, sizeof(float));
	m->grad = calloc(m->np, sizeof(float));
	m->m1 = calloc(m->np, sizeof(float));
	m->m2 = calloc(m->np, sizeof(float));
	m->F = malloc(sizeof(float) * cap * (size_t) m->flat);
	m->dF = malloc(sizeof(float) * cap * (size_t) m->flat);
	m->Hd = malloc(sizeof(float) * cap * (size_t) (m->hidden > 0 ? m->hidden : 1));
	m->dHd = malloc(sizeof(float) * cap * (size_t) (m->hidden > 0 ? m->hidden : 1));
	m->O = malloc(sizeof(float) * cap * (size_t) m->nout);
	m->dO = malloc(sizeof(float) * cap * (size_t) m->nout);
	m->cols = malloc(sizeof(float) * cap * maxcols);
	m->dcols = malloc(sizeof(float) * cap * maxcols);
	m->dZ = malloc(sizeof(float) * cap * maxz);
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
	int			kk = m->k * m->k;

	for (int l = 0; l < m->nconv; l++)
	{
		ConvLayer  *L = &m->conv[l];
		size_t		rows = (size_t) B * L->h * L->w;
		int			K = kk * L->cin;
		const float *bias = m->theta + L->boff;
		float	   *out = l + 1 < m->nconv ? m->conv[l + 1].A : m->F;

		Im2col(L->A, B, L->h, L->w, L->cin, m->k, m->cols);
		for (size_t r = 0; r < rows; r++)
			memcpy(L->Z + r * L->cout, bias, sizeof(float) * L->cout);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) rows, L->cout, K,
					1.0f, m->cols, K, m->theta + L->woff, L->cout, 1.0f, L->Z, L->cout);
		TrReluInPlace(L->Z, rows * L->cout);
		/* 2 x 2 max pooling, remembering the winner */
		for (int b = 0; b < B; b++)
			for (int py = 0; py < L->ph; py++)
				for (int px = 0; px < L->pw; px++)
					for (int ch = 0; ch < L->cout; ch++)
					{
						size_t		o = (((size_t) b * L->ph + py) * L->pw + px) * L->cout + ch;
						int			best = -1;
						float		bv = 0.0f;

						for (int dy = 0; dy < 2; dy++)
							for (int dx = 0; dx < 2; dx++)
							{
								int			zi = (int) ((((size_t) b * L->h + 2 * py + dy) * L->w +
														 2 * px + dx) * L->cout + ch);

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
		int			nin = m->flat;

		if (m->hidden > 0)
		{
			for (int b = 0; b < B; b++)
				memcpy(m->Hd + (size_t) b * m->hidden, m->theta + m->b1off,
					   sizeof(float) * m->hidden);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, m->hidden, m->flat,
						1.0f, m->F, m->flat, m->theta + m->w1off, m->hidden,
						1.0f, m->Hd, m->hidden);
			TrReluInPlace(m->Hd, (size_t) B * m->hidden);
			in = m->Hd;
			nin = m->hidden;
		}
		for (int b = 0; b < B; b++)
			memcpy(m->O + (size_t) b * m->nout, m->theta + m->b2off,
				   sizeof(float) * m->nout);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, m->nout, nin,
					1.0f, in, nin, m->theta + m->w2off, m->nout, 1.0f, m->O, m->nout);
	}
}

/* softmax cross-entropy of the batch; dO = (P - Y) / B */
static double
CnnLoss(Cnn *m, int B, const int *y)
{
	double		loss = 0.0;
	int			k = m->nout;

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
	int			kk = m->k * m->k;

	/* dense */
	if (m->hidden > 0)
	{
		DenseGrad(m->Hd, m->dO, m->theta + m->w2off, B, m->hidden, m->nout, l2,
				  m->grad + m->w2off, m->grad + m->b2off);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->hidden, m->nout,
					1.0f, m->dO, m->nout, m->theta + m->w2off, m->nout,
					0.0f, m->dHd, m->hidden);
		TrReluGrad(m->dHd, m->Hd, (size_t) B * m->hidden);
		DenseGrad(m->F, m->dHd, m->theta + m->w1off, B, m->flat, m->hidden, l2,
				  m->grad + m->w1off, m->grad + m->b1off);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->flat, m->hidden,
					1.0f, m->dHd, m->hidden, m->theta + m->w1off, m->hidden,
					0.0f, m->dF, m->flat);
	}
	else
	{
		DenseGrad(m->F, m->dO, m->theta + m->w2off, B, m->flat, m->nout, l2,
				  m->grad + m->w2off, m->grad + m->b2off);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, m->flat, m->nout,
					1.0f, m->dO, m->nout, m->theta + m->w2off, m->nout,
					0.0f, m->dF, m->flat);
	}

	/* convolutions, last to first */
	for (int l = m->nconv - 1; l >= 0; l--)
	{
		ConvLayer  *L = &m->conv[l];
		const float *dP = l + 1 < m->nconv ? m->conv[l + 1].dA : m->dF;
		size_t		rows = (size_t) B * L->h * L->w;
		size_t		npool = (size_t) B * L->ph * L->pw * L->cout;
		int			K = kk * L->cin;
		float	   *gb = m->grad + L->boff;

		/* unpool into dZ, then through the ReLU */
		memset(m->dZ, 0, sizeof(float) * rows * L->cout);
		for (size_t i = 0; i < npool; i++)
			m->dZ[L->arg[i]] += dP[i];
		TrReluGrad(m->dZ, L->Z, rows * L->cout);
		/* the forward im2col of this layer was overwritten: redo it */
		Im2col(L->A, B, L->h, L->w, L->cin, m->k, m->cols);
		memcpy(m->grad + L->woff, m->theta + L->woff, sizeof(float) * (size_t) K * L->cout);
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, L->cout, (int) rows,
					1.0f, m->cols, K, m->dZ, L->cout, l2, m->grad + L->woff, L->cout);
		memset(gb, 0, sizeof(float) * L->cout);
		for (size_t r = 0; r < rows; r++)
			cblas_saxpy(L->cout, 1.0f, m->dZ + r * L->cout, 1, gb, 1);
		if (l > 0)
		{
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int) rows, K, L->cout,
						1.0f, m->dZ, L->cout, m->theta + L->woff, L->cout,
						0.0f, m->dcols, K);
			Col2im(m->dcols, B, L->h, L->w, L->cin, m->k, L->dA);
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

static int
CnnFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train,
				nv = data->n_val;
	int			dflt_filters[2] = {16, 32};
	int			filters[CNN_MAX_CONV];
	int			nconv = TrParamIntList(ctx->params, "filters", filters, CNN_MAX_CONV,
									   dflt_filters, 2);
	int			epochs = TrParamInt(ctx->params, "epochs", 5);
	int			batch = TrParamInt(ctx->params, "batch", 64);
	float		lr = (float) TrParamDouble(ctx->params, "lr", 1e-3);
	float		l2 = (float) TrParamDouble(ctx->params, "l2", 0.0);
	uint64_t	rng = ctx->seed ^ UINT64_C(0x636e6e);	/* "cnn" */
	Cnn			m;
	int		   *idx = malloc(sizeof(int) * n);
	int		   *yb = malloc(sizeof(int) * (batch < n ? batch : n));
	int		   *pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	double		loss = NAN;
	long		step = 0;
	int			rc = -1,
				h = data->height,
				w = data->width;

	memset(&m, 0, sizeof(m));
	if (batch > n)
		batch = n;
	m.k = TrParamInt(ctx->params, "kernel", 3);
	m.hidden = TrParamInt(ctx->params, "hidden", 128);
	m.nout = data->n_classes;
	m.nconv = nconv;
	if (!idx || !yb || !pred)
	{
		TrSetError(res, "out of memory for cnn");
		goto done;
	}
	if (m.k % 2 == 0)
	{
		TrSetError(res, "cnn: kernel must be odd for \"same\" padding, got %d", m.k);
		goto done;
	}
	{
		json_object *f;

		if (ctx->params != NULL &&
			json_object_object_get_ex(ctx->params, "filters", &f) &&
			json_object_is_type(f, json_type_array) &&
			json_object_array_length(f) > CNN_MAX_CONV)
		{
			TrSetError(res, "cnn supports 1 to %d conv blocks, got %d", CNN_MAX_CONV,
					   (int) json_object_array_length(f));
			goto done;
		}
	}
	if ((double) batch * data->height * data->width *
		(data->channels > 1024 ? data->channels : 1024) >= 2147483647.0)
	{
		TrSetError(res, "cnn: batch %d of %dx%d images is too large", batch,
				   data->height, data->width);
		goto done;
	}
	for (int l = 0; l < nconv; l++)
	{
		if (h < 2 || w < 2)
		{
			TrSetError(res, "cnn: image %dx%d is too small for %d conv+pool layers",
					   data->height, data->width, nconv);
			goto done;
		}
		h /= 2;
		w /= 2;
	}
	if (CnnAlloc(&m, data->channels, data->height, data->width, filters, batch) != 0)
	{
		TrSetError(res, "out of memory for cnn (batch %d of %dx%dx%d images)",
				   batch, data->channels, data->height, data->width);
		goto done;
	}

	for (int l = 0; l < nconv; l++)
	{
		ConvLayer  *L = &m.conv[l];
		int			kk = m.k * m.k;

		GlorotInit(m.theta + L->woff, (size_t) kk * L->cin * L->cout,
				   kk * L->cin, kk * L->cout, &rng);
	}
	if (m.hidden > 0)
	{
		GlorotInit(m.theta + m.w1off, (size_t) m.flat * m.hidden, m.flat, m.hidden, &rng);
		GlorotInit(m.theta + m.w2off, (size_t) m.hidden * m.nout, m.hidden, m.nout, &rng);
	}
	else
		GlorotInit(m.theta + m.w2off, (size_t) m.flat * m.nout, m.flat, m.nout, &rng);
	for (int i = 0; i < n; i++)
		idx[i] = i;

	for (int epoch = 1; epoch <= epochs; epoch++)
	{
		double		sum = 0.0;

		TrShuffle(idx, n, &rng);
		for (int b0 = 0; b0 < n; b0 += batch)
		{
			int			B = n - b0 < batch ? n - b0 : batch;

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
			CnnBackward(&m, B, l2);
			TrAdamStep(m.theta, m.grad, m.m1, m.m2, m.np, ++step, lr);
		}
		loss = sum / n;
		if (!isfinite(loss))
		{
			TrSetError(res, "cnn training diverged (loss not finite at epoch %d); lower lr",
					   epoch);
			goto done;
		}
		TrReportProgress(ctx, epoch, loss);
		res->epochs = epoch;
	}

	for (int b0 = 0; b0 < nv; b0 += batch)
	{
		int			B = nv - b0 < batch ? nv - b0 : batch;

		ToNhwc(data->Xva + (size_t) b0 * data->d, NULL, B, data->channels,
			   data->height, data->width, m.conv[0].A);
		CnnForward(&m, B);
		for (int i = 0; i < B; i++)
			pred[b0 + i] = TrArgmax(m.O + (size_t) i * m.nout, m.nout);
	}
	res->score = TrAccuracy(pred, data->yva, nv);
	res->train_loss = loss;

	{
		TrArtifact art;
		int64_t		dims[4];
		int32_t		arch[4 + CNN_MAX_CONV];
		char		name[16];

		TrArtifactBegin(&art, "cnn", data);
		arch[0] = m.k;
		arch[1] = m.hidden;
		arch[2] = m.nout;
		arch[3] = nconv;
		for (int l = 0; l < nconv; l++)
			arch[4 + l] = filters[l];
		dims[0] = 4 + nconv;
		TrArtifactAdd(&art, "arch", TR_DT_I32, 1, dims, arch);
		for (int l = 0; l < nconv; l++)
		{
			ConvLayer  *L = &m.conv[l];

			dims[0] = m.k;
			dims[1] = m.k;
			dims[2] = L->cin;
			dims[3] = L->cout;
			snprintf(name, sizeof(name), "conv%d.W", l + 1);
			TrArtifactAdd(&art, name, TR_DT_F32, 4, dims, m.theta + L->woff);
			dims[0] = L->cout;
			snprintf(name, sizeof(name), "conv%d.b", l + 1);
			TrArtifactAdd(&art, name, TR_DT_F32, 1, dims, m.theta + L->boff);
		}
		if (m.hidden > 0)
		{
			dims[0] = m.flat;
			dims[1] = m.hidden;
			TrArtifactAdd(&art, "dense1.W", TR_DT_F32, 2, dims, m.theta + m.w1off);
			dims[0] = m.hidden;
			TrArtifactAdd(&art, "dense1.b", TR_DT_F32, 1, dims, m.theta + m.b1off);
		}
		dims[0] = m.hidden > 0 ? m.hidden : m.flat;
		dims[1] = m.nout;
		TrArtifactAdd(&art, "out.W", TR_DT_F32, 2, dims, m.theta + m.w2off);
		dims[0] = m.nout;
		TrArtifactAdd(&art, "out.b", TR_DT_F32, 1, dims, m.theta + m.b2off);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
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
};
