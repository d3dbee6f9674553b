/*-------------------------------------------------------------------------
 *
 * tr_gpu_kernels.h
 *	  The bodies of the GPU kernels, one element (or one row) each.
 *
 * Compiled twice: by nvcc into the CUDA backend (src/trainer/gpu/tr_cuda.cu,
 * where a grid-stride loop calls each body once per element) and by the C
 * compiler into the CPU emulation (tr_gpu_host.c, a plain loop).  So the
 * arithmetic the GPU runs is written once, next to the operations of the
 * CPU families it mirrors (tr_mlp.c, tr_cnn.c, tr_softmax.c), and the
 * kernel check compares the two builds of it.
 *
 * Row bodies (the losses) return the row's loss; the caller sums them.
 * Index arithmetic is in size_t: a batch of images can exceed 2^31 cells
 * in its im2col buffer.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_gpu_kernels.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_GPU_KERNELS_H
#define EASEML_TR_GPU_KERNELS_H

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define TRK_FN static __host__ __device__ inline
#else
#define TRK_FN static inline
#endif

/* x[i] = v */
TRK_FN void
TrkFill(size_t i, float *x, float v)
{
	x[i] = v;
}

/* dst (rows x d) = the rows idx[] of X */
TRK_FN void
TrkGatherRows(size_t i, float *dst, const float *X, const int *idx, int d)
{
	size_t		r = i / (size_t) d;
	size_t		j = i - r * (size_t) d;

	dst[i] = X[(size_t) idx[r] * d + j];
}

/*
 * dst (B x h x w x c, NHWC) = images idx[] (or 0..B-1 when idx is NULL) of
 * X, whose rows are images flattened channel-major (c, h, w)
 */
TRK_FN void
TrkToNhwc(size_t i, float *dst, const float *X, const int *idx, int c, int h, int w)
{
	size_t		per = (size_t) h * w * c;
	size_t		b = i / per;
	size_t		rem = i - b * per;
	size_t		p = rem / (size_t) c;
	size_t		ch = rem - p * (size_t) c;
	size_t		src = idx ? (size_t) idx[b] : b;

	dst[i] = X[src * per + ch * (size_t) h * w + p];
}

/* H[r][j] = b[j] */
TRK_FN void
TrkBiasRows(size_t i, float *H, const float *b, int cols)
{
	H[i] = b[i % (size_t) cols];
}

/* ReLU in place; NaN passes through, as TrReluInPlace lets +NaN through */
TRK_FN void
TrkRelu(size_t i, float *x)
{
	float		v = x[i];

	x[i] = v <= 0.0f ? 0.0f : v;
}

/* g[i] = 0 where the ReLU output h[i] is 0 */
TRK_FN void
TrkReluGrad(size_t i, float *g, const float *h)
{
	if (h[i] == 0.0f)
		g[i] = 0.0f;
}

/*
 * Softmax cross-entropy of row r of Z (k > 1 classes): the loss, and
 * dZ = (softmax - onehot(y)) * invn, as tr_mlp.c's MlpOutputLoss
 */
TRK_FN double
TrkXent(size_t r, const float *Z, const int *y, int k, float invn, float *dZ)
{
	const float *z = Z + r * (size_t) k;
	float	   *g = dZ + r * (size_t) k;
	float		mx = z[0];
	double		sum = 0.0;
	double		loss;

	for (int c = 1; c < k; c++)
		if (z[c] > mx)
			mx = z[c];
	for (int c = 0; c < k; c++)
	{
		float		e = expf(z[c] - mx);

		g[c] = e;
		sum += e;
	}
	loss = (double) mx + log(sum) - (double) z[y[r]];
	for (int c = 0; c < k; c++)
		g[c] = (float) (g[c] / sum) * invn;
	g[y[r]] -= invn;
	return loss;
}

/* Logistic loss of one logit (two classes, y in {0, 1}) and its gradient */
TRK_FN double
TrkLogistic(size_t r, const float *Z, const int *y, float invn, float *dZ)
{
	double		zi = Z[r];
	double		yi = y[r] == 1 ? 1.0 : 0.0;
	double		p;

	p = zi >= 0 ? 1.0 / (1.0 + exp(-zi)) : exp(zi) / (1.0 + exp(zi));
	dZ[r] = (float) (p - yi) * invn;
	return (zi > 0 ? zi + log1p(exp(-zi)) : log1p(exp(zi))) - yi * zi;
}

/* Half squared error of one output against a (standardised) target */
TRK_FN double
TrkSqerr(size_t r, const float *Z, const double *t, float invn, float *dZ)
{
	double		e = (double) Z[r] - t[r];

	dZ[r] = (float) e * invn;
	return 0.5 * e * e;
}

/*
 * Softmax regression (tr_softmax.c's SoftmaxEval) for row r: Z holds the
 * logits without the bias b (double); they are replaced by the residuals
 * (p - onehot(y)) * invn.  k == 1 is the binomial model.
 */
TRK_FN double
TrkSoftmaxResid(size_t r, float *Z, const int *y, const double *b, int k, float invn)
{
	float	   *z = Z + r * (size_t) k;
	int			yc = y[r];

	if (k == 1)
	{
		double		zi = (double) z[0] + b[0];
		double		yi = yc == 1 ? 1.0 : 0.0;
		double		p = zi >= 0 ? 1.0 / (1.0 + exp(-zi)) : exp(zi) / (1.0 + exp(zi));

		z[0] = (float) ((p - yi) * invn);
		return (zi > 0 ? zi + log1p(exp(-zi)) : log1p(exp(zi))) - yi * zi;
	}
	else
	{
		double		mx = -INFINITY;
		double		sum = 0.0;
		double		vy = (double) z[yc] + b[yc];

		for (int c = 0; c < k; c++)
		{
			double		v = (double) z[c] + b[c];

			if (v > mx)
				mx = v;
		}
		for (int c = 0; c < k; c++)
		{
			double		e = exp((double) z[c] + b[c] - mx);

			sum += e;
			z[c] = (float) e;
		}
		for (int c = 0; c < k; c++)
		{
			double		p = (double) z[c] / sum - (c == yc ? 1.0 : 0.0);

			z[c] = (float) (p * invn);
		}
		return mx + log(sum) - vy;
	}
}

/* One Adam step (tr_util.c's TrAdamStep; lrf has the bias correction) */
TRK_FN void
TrkAdam(size_t i, float *theta, const float *grad, float *m1, float *m2, float lrf)
{
	const float b1f = 0.9f,
				b2f = 0.999f,
				epsf = 1e-8f;
	float		g = grad[i];

	m1[i] = b1f * m1[i] + (1.0f - b1f) * g;
	m2[i] = b2f * m2[i] + (1.0f - b2f) * g * g;
	theta[i] -= lrf * m1[i] / (sqrtf(m2[i]) + epsf);
}

/*
 * One cell of the im2col matrix of A (B x h x w x c, NHWC) for a k x k
 * "same" convolution: row (b, y, x), column (ky, kx, ch), zero outside
 */
TRK_FN void
TrkIm2col(size_t i, const float *A, int h, int w, int c, int k, float *cols)
{
	size_t		K = (size_t) k * k * c;
	size_t		pos = i / K;
	size_t		q = i - pos * K;
	int			p = k / 2;
	int			x = (int) (pos % (size_t) w);
	int			y = (int) ((pos / (size_t) w) % (size_t) h);
	size_t		b = pos / ((size_t) w * h);
	int			ky = (int) (q / ((size_t) k * c));
	int			kx = (int) ((q / (size_t) c) % (size_t) k);
	int			ch = (int) (q % (size_t) c);
	int			iy = y + ky - p;
	int			ix = x + kx - p;

	cols[i] = (iy < 0 || iy >= h || ix < 0 || ix >= w) ? 0.0f :
		A[((b * h + iy) * w + ix) * c + ch];
}

/*
 * One cell of dA, the adjoint of im2col: the sum of the patch gradients
 * that read it (a gather, so no two threads write the same cell)
 */
TRK_FN void
TrkCol2im(size_t i, const float *dcols, int h, int w, int c, int k, float *dA)
{
	size_t		K = (size_t) k * k * c;
	int			p = k / 2;
	int			ch = (int) (i % (size_t) c);
	int			ix = (int) ((i / (size_t) c) % (size_t) w);
	int			iy = (int) ((i / ((size_t) c * w)) % (size_t) h);
	size_t		b = i / ((size_t) c * w * h);
	float		sum = 0.0f;

	for (int ky = 0; ky < k; ky++)
	{
		int			y = iy - ky + p;

		if (y < 0 || y >= h)
			continue;
		for (int kx = 0; kx < k; kx++)
		{
			int			x = ix - kx + p;

			if (x < 0 || x >= w)
				continue;
			sum += dcols[((b * h + y) * w + x) * K + ((size_t) ky * k + kx) * c + ch];
		}
	}
	dA[i] = sum;
}

/*
 * 2 x 2 max pooling of Z (B x h x w x c) for output cell i of
 * B x (h/2) x (w/2) x c; arg gets the winner's index in Z (first maximum)
 */
TRK_FN void
TrkMaxpool(size_t i, const float *Z, int h, int w, int c, float *out, int *arg)
{
	int			ph = h / 2;
	int			pw = w / 2;
	int			ch = (int) (i % (size_t) c);
	int			px = (int) ((i / (size_t) c) % (size_t) pw);
	int			py = (int) ((i / ((size_t) c * pw)) % (size_t) ph);
	size_t		b = i / ((size_t) c * pw * ph);
	size_t		best = 0;
	float		bv = 0.0f;
	int			have = 0;

	for (int dy = 0; dy < 2; dy++)
		for (int dx = 0; dx < 2; dx++)
		{
			size_t		zi = ((b * h + 2 * py + dy) * w + 2 * px + dx) * c + ch;

			if (!have || Z[zi] > bv)
			{
				best = zi;
				bv = Z[zi];
				have = 1;
			}
		}
	out[i] = bv;
	arg[i] = (int) best;
}

/* Route a pooled cell's gradient to its winner (windows never overlap) */
TRK_FN void
TrkUnpool(size_t i, const float *dP, const int *arg, float *dZ)
{
	dZ[arg[i]] += dP[i];
}

#endif							/* EASEML_TR_GPU_KERNELS_H */
