/*-------------------------------------------------------------------------
 *
 * tr_predict_net.c
 *	  Predictors of the neural families, mlp and cnn (tr_predict.h): the
 *	  forward passes of tr_mlp.c and tr_cnn.c, from the artifact's tensors.
 *
 * The loaders check the architecture against the header (input width,
 * image shape, outputs) and every weight tensor against the shape the
 * architecture implies, before any forward pass can run.
 *
 * IDENTIFICATION
 *	  src/trainer/predict/tr_predict_net.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "tr_predict.h"

#define NET_MAX_LAYERS	5		/* mlp: up to 4 hidden layers and the output */
#define CNN_MAX_BLOCKS	4
#define NET_BATCH		256

static void
TrReluF(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* the model's outputs from the last layer's values z (width k); zz: k doubles */
static void
NetOutput(const TrModel *m, const float *z, int k, double tmean, double tsd,
		  double *zz, double *out)
{
	if (m->kind == 1)
	{
		out[0] = tmean + tsd * z[0];
		return;
	}
	for (int c = 0; c < k; c++)
		zz[c] = z[c];
	TrProbaFromScores(zz, k, m->n_classes, out);
}

/* ---- mlp -------------------------------------------------------------- */

typedef struct Mlp
{
	int			nl;				/* weight layers */
	int			size[NET_MAX_LAYERS + 1];
	float	   *W[NET_MAX_LAYERS];
	float	   *b[NET_MAX_LAYERS];
	double		tmean;
	double		tsd;
	int			widest;
} Mlp;

static void
MlpFree(void *p)
{
	Mlp		   *n = p;

	for (int l = 0; l < NET_MAX_LAYERS; l++)
	{
		free(n->W[l]);
		free(n->b[l]);
	}
	free(n);
}

static int
MlpPredictRows(const TrModel *m, const float *X, int n, double *out)
{
	const Mlp  *net = m->state;
	float	   *H[2];
	int			k = net->size[net->nl];
	double	   *zz = malloc(sizeof(double) * k);

	int			batch = n < NET_BATCH ? n : NET_BATCH;

	H[0] = malloc(sizeof(float) * batch * (size_t) net->widest);
	H[1] = malloc(sizeof(float) * batch * (size_t) net->widest);
	if (H[0] == NULL || H[1] == NULL || zz == NULL)
	{
		free(H[0]);
		free(H[1]);
		free(zz);
		return TR_ART_NO_MEMORY;
	}
	for (int b0 = 0; b0 < n; b0 += NET_BATCH)
	{
		int			rows = n - b0 < NET_BATCH ? n - b0 : NET_BATCH;
		const float *in = X + (size_t) b0 * m->d;
		float	   *o = NULL;

		for (int l = 1; l <= net->nl; l++)
		{
			int			ni = net->size[l - 1],
						no = net->size[l];

			o = H[l % 2];
			for (int i = 0; i < rows; i++)
				memcpy(o + (size_t) i * no, net->b[l - 1], sizeof(float) * no);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, no, ni,
						1.0f, in, ni, net->W[l - 1], no, 1.0f, o, no);
			if (l < net->nl)
				TrReluF(o, (size_t) rows * no);
			in = o;
		}
		for (int i = 0; i < rows; i++)
			NetOutput(m, o + (size_t) i * k, k, net->tmean, net->tsd, zz,
					  out + (size_t) (b0 + i) * m->n_out);
	}
	free(H[0]);
	free(H[1]);
	free(zz);
	return TR_ART_OK;
}

/* layer_sizes: from d through the hidden layers to the outputs */
static int
MlpShape(const TrLoad *ld, TrModel *m, Mlp *net)
{
	int64_t		dims[1] = {-1};
	int32_t    *sizes;
	int			rc,
				want = m->kind == 1 || m->n_classes == 2 ? 1 : m->n_classes;

	if ((rc = TrLoadTensor(ld, "layer_sizes", TR_DT_I32, 1, dims, (void **) &sizes)) != 0)
		return rc;
	if (dims[0] < 2 || dims[0] > NET_MAX_LAYERS + 1)
	{
		free(sizes);
		return TrLoadFail(ld, TR_ART_BAD, "mlp has %lld layer sizes", (long long) dims[0]);
	}
	net->nl = (int) dims[0] - 1;
	for (int l = 0; l <= net->nl; l++)
	{
		net->size[l] = sizes[l];
		if (sizes[l] < 1 || sizes[l] > TR_ART_MAX_FEATURES)
			rc = TR_ART_BAD;
		if (sizes[l] > net->widest)
			net->widest = sizes[l];
	}
	free(sizes);
	if (rc != 0 || net->size[0] != m->d || net->size[net->nl] != want)
		return TrLoadFail(ld, TR_ART_BAD, "mlp layer sizes do not match %d features and %d outputs",
						  m->d, want);
	return TR_ART_OK;
}

int
TrLoadMlp(const TrLoad *ld, TrModel *m)
{
	Mlp		   *net = calloc(1, sizeof(Mlp));
	int			rc;

	if (net == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	m->state = net;
	m->free_state = MlpFree;
	m->predict = MlpPredictRows;
	net->tsd = 1.0;
	if ((rc = MlpShape(ld, m, net)) != 0)
		return rc;
	for (int l = 1; l <= net->nl; l++)
	{
		char		name[32];
		int64_t		wd[2] = {net->size[l - 1], net->size[l]},
					bd[1] = {net->size[l]};

		snprintf(name, sizeof(name), "W%d", l);
		if ((rc = TrLoadTensor(ld, name, TR_DT_F32, 2, wd, (void **) &net->W[l - 1])) != 0)
			return rc;
		snprintf(name, sizeof(name), "b%d", l);
		if ((rc = TrLoadTensor(ld, name, TR_DT_F32, 1, bd, (void **) &net->b[l - 1])) != 0)
			return rc;
	}
	if (m->kind == 1)
	{
		int64_t		two[1] = {2};
		double	   *tn;

		if ((rc = TrLoadTensor(ld, "target_mean_sd", TR_DT_F64, 1, two, (void **) &tn)) != 0)
			return rc;
		net->tmean = tn[0];
		net->tsd = tn[1];
		free(tn);
	}
	return TR_ART_OK;
}

/* ---- cnn -------------------------------------------------------------- */

typedef struct CnnBlk
{
	int			h,
				w,
				cin,
				cout;
	float	   *W;				/* (k k cin) x cout */
	float	   *b;
} CnnBlk;

typedef struct Cnn
{
	int			k;
	int			nconv;
	CnnBlk		conv[CNN_MAX_BLOCKS];
	int			flat;
	int			hidden;
	int			nout;
	float	   *W1,
			   *b1,
			   *W2,
			   *b2;
	size_t		maxact;			/* largest activation of one image */
} Cnn;

static void
CnnFreeState(void *p)
{
	Cnn		   *c = p;

	for (int l = 0; l < CNN_MAX_BLOCKS; l++)
	{
		free(c->conv[l].W);
		free(c->conv[l].b);
	}
	free(c->W1);
	free(c->b1);
	free(c->W2);
	free(c->b2);
	free(c);
}

/* one conv + ReLU + 2 x 2 max pool block on one NHWC image: in -> out */
static void
CnnBlock(const Cnn *net, const CnnBlk *S, const float *in, float *z, float *out)
{
	int			k = net->k,
				p = k / 2;

	for (int y = 0; y < S->h; y++)
		for (int x = 0; x < S->w; x++)
		{
			float	   *zz = z + ((size_t) y * S->w + x) * S->cout;

			memcpy(zz, S->b, sizeof(float) * S->cout);
			for (int ky = 0; ky < k; ky++)
				for (int kx = 0; kx < k; kx++)
				{
					int			iy = y + ky - p,
								ix = x + kx - p;
					const float *a,
							   *w;

					if (iy < 0 || iy >= S->h || ix < 0 || ix >= S->w)
						continue;
					a = in + ((size_t) iy * S->w + ix) * S->cin;
					w = S->W + (size_t) (ky * k + kx) * S->cin * S->cout;
					for (int ci = 0; ci < S->cin; ci++)
						for (int co = 0; co < S->cout; co++)
							zz[co] += a[ci] * w[(size_t) ci * S->cout + co];
				}
			TrReluF(zz, S->cout);
		}
	for (int py = 0; py < S->h / 2; py++)
		for (int px = 0; px < S->w / 2; px++)
			for (int ch = 0; ch < S->cout; ch++)
			{
				float		best = 0.0f;

				for (int dy = 0; dy < 2; dy++)
					for (int dx = 0; dx < 2; dx++)
					{
						float		v = z[(((size_t) 2 * py + dy) * S->w + 2 * px + dx) * S->cout + ch];

						best = (dy == 0 && dx == 0) || v > best ? v : best;
					}
				out[((size_t) py * (S->w / 2) + px) * S->cout + ch] = best;
			}
}

/* dense layer: o = b + in W for one row */
static void
Dense(const float *in, int nin, const float *W, const float *b, int nout, float *o)
{
	memcpy(o, b, sizeof(float) * nout);
	cblas_sgemv(CblasRowMajor, CblasTrans, nin, nout, 1.0f, W, nout, in, 1, 1.0f, o, 1);
}

static int
CnnPredictRows(const TrModel *m, const float *X, int n, double *out)
{
	const Cnn  *net = m->state;
	float	   *A = malloc(sizeof(float) * net->maxact);
	float	   *B = malloc(sizeof(float) * net->maxact);
	float	   *Z = malloc(sizeof(float) * net->maxact);
	double	   *zz = malloc(sizeof(double) * net->nout);
	int			hw = m->height * m->width;

	if (A == NULL || B == NULL || Z == NULL || zz == NULL)
	{
		free(A);
		free(B);
		free(Z);
		free(zz);
		return TR_ART_NO_MEMORY;
	}
	for (int i = 0; i < n; i++)
	{
		const float *x = X + (size_t) i * m->d;
		float	   *cur = A,
				   *nxt = B;

		/* channel-major rows into NHWC */
		for (int ch = 0; ch < m->channels; ch++)
			for (int q = 0; q < hw; q++)
				cur[(size_t) q * m->channels + ch] = x[(size_t) ch * hw + q];
		for (int l = 0; l < net->nconv; l++)
		{
			float	   *t;

			CnnBlock(net, &net->conv[l], cur, Z, nxt);
			t = cur;
			cur = nxt;
			nxt = t;
		}
		if (net->hidden > 0)
		{
			Dense(cur, net->flat, net->W1, net->b1, net->hidden, nxt);
			TrReluF(nxt, net->hidden);
			Dense(nxt, net->hidden, net->W2, net->b2, net->nout, Z);
		}
		else
			Dense(cur, net->flat, net->W2, net->b2, net->nout, Z);
		NetOutput(m, Z, net->nout, 0.0, 1.0, zz, out + (size_t) i * m->n_out);
	}
	free(A);
	free(B);
	free(Z);
	free(zz);
	return TR_ART_OK;
}

/* arch: kernel, hidden, outputs, blocks, filters...; shapes from the header */
static int
CnnShape(const TrLoad *ld, const TrModel *m, Cnn *net)
{
	int64_t		dims[1] = {-1};
	int32_t    *arch;
	int			rc,
				h = m->height,
				w = m->width,
				c = m->channels;

	if ((rc = TrLoadTensor(ld, "arch", TR_DT_I32, 1, dims, (void **) &arch)) != 0)
		return rc;
	if (dims[0] < 5 || dims[0] > 4 + CNN_MAX_BLOCKS || arch[3] != dims[0] - 4 ||
		arch[0] < 1 || arch[0] > 11 || arch[0] % 2 == 0 || arch[1] < 0 || arch[1] > 65536 ||
		arch[2] != m->n_classes || m->kind != 0 || c < 1)
	{
		free(arch);
		return TrLoadFail(ld, TR_ART_BAD, "the cnn architecture does not match the artifact's header");
	}
	net->k = arch[0];
	net->hidden = arch[1];
	net->nout = arch[2];
	net->nconv = arch[3];
	net->maxact = (size_t) h * w * c;
	for (int l = 0; l < net->nconv; l++)
	{
		CnnBlk	   *S = &net->conv[l];

		if (h < 2 || w < 2 || arch[4 + l] < 1 || arch[4 + l] > 1024)
		{
			free(arch);
			return TrLoadFail(ld, TR_ART_BAD, "cnn block %d does not fit a %dx%d image", l + 1,
							  m->height, m->width);
		}
		S->h = h;
		S->w = w;
		S->cin = c;
		S->cout = arch[4 + l];
		if ((size_t) h * w * S->cout > net->maxact)
			net->maxact = (size_t) h * w * S->cout;
		c = S->cout;
		h /= 2;
		w /= 2;
	}
	free(arch);
	net->flat = h * w * c;
	if ((size_t) net->hidden > net->maxact)
		net->maxact = net->hidden;
	if ((size_t) net->nout > net->maxact)
		net->maxact = net->nout;
	return TR_ART_OK;
}

int
TrLoadCnn(const TrLoad *ld, TrModel *m)
{
	Cnn		   *net = calloc(1, sizeof(Cnn));
	int			rc;
	int64_t		bd[1],
				wd[2];

	if (net == NULL)
		return TrLoadFail(ld, TR_ART_NO_MEMORY, "out of memory loading a model");
	m->state = net;
	m->free_state = CnnFreeState;
	m->predict = CnnPredictRows;
	if ((rc = CnnShape(ld, m, net)) != 0)
		return rc;
	for (int l = 0; l < net->nconv; l++)
	{
		CnnBlk	   *S = &net->conv[l];
		int64_t		fd[4] = {net->k, net->k, S->cin, S->cout};
		char		name[32];

		snprintf(name, sizeof(name), "conv%d.W", l + 1);
		if ((rc = TrLoadTensor(ld, name, TR_DT_F32, 4, fd, (void **) &S->W)) != 0)
			return rc;
		snprintf(name, sizeof(name), "conv%d.b", l + 1);
		bd[0] = S->cout;
		if ((rc = TrLoadTensor(ld, name, TR_DT_F32, 1, bd, (void **) &S->b)) != 0)
			return rc;
	}
	if (net->hidden > 0)
	{
		wd[0] = net->flat;
		wd[1] = net->hidden;
		bd[0] = net->hidden;
		if ((rc = TrLoadTensor(ld, "dense1.W", TR_DT_F32, 2, wd, (void **) &net->W1)) != 0 ||
			(rc = TrLoadTensor(ld, "dense1.b", TR_DT_F32, 1, bd, (void **) &net->b1)) != 0)
			return rc;
	}
	wd[0] = net->hidden > 0 ? net->hidden : net->flat;
	wd[1] = net->nout;
	bd[0] = net->nout;
	if ((rc = TrLoadTensor(ld, "out.W", TR_DT_F32, 2, wd, (void **) &net->W2)) != 0 ||
		(rc = TrLoadTensor(ld, "out.b", TR_DT_F32, 1, bd, (void **) &net->b2)) != 0)
		return rc;
	return TR_ART_OK;
}
