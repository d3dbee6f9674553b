/*-------------------------------------------------------------------------
 *
 * tr_cnn_gpu.c
 *	  The cnn family on a GPU: the steps of tr_cnn.c with the images,
 *	  parameters, activations and Adam moments in device memory.
 *
 * As on the CPU, a convolution is im2col and one product with the filter
 * matrix per mini-batch, ReLU, then 2 x 2 max pooling that remembers the
 * winner; the backward pass routes the pooled gradient to the winners,
 * masks it with the ReLU, and takes two products (filter gradient, patch
 * gradient) and the adjoint of im2col (a gather, so no atomics).  Unlike
 * the CPU, each block keeps its im2col matrix from the forward pass
 * instead of building it again.  Parameters start as on the CPU and the
 * host draws the same image order each epoch, so both train the same
 * network for the same seed.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_cnn_gpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "trainer/families/tr_cnn.h"
#include "tr_gpu.h"

/* Device buffers of one block. */
typedef struct CnnDevBlock
{
	float	   *A;				/* input, B x h x w x cin (NHWC) */
	float	   *dA;				/* its gradient (blocks after the first) */
	float	   *cols;			/* im2col of A */
	float	   *Z;				/* post-ReLU conv output */
	int		   *arg;			/* pool winners, indexes into Z */
} CnnDevBlock;

typedef struct CnnDev
{
	const CnnPlan *p;
	const TrGpuOps *g;
	float	   *X;				/* training images (rows, c x h x w) */
	float	   *Xva;
	int		   *idx;			/* this epoch's order */
	int		   *y;				/* labels in that order */
	float	   *theta;
	float	   *grad;
	float	   *m1;
	float	   *m2;
	CnnDevBlock conv[CNN_MAX_CONV];
	float	   *F;				/* last pool output, B x flat */
	float	   *dF;
	float	   *Hd;				/* dense hidden layer */
	float	   *dHd;
	float	   *O;				/* logits */
	float	   *dO;
	float	   *dZ;				/* a block's output gradient */
	float	   *dcols;
	float	   *ones;			/* for bias gradients, B*h*w of the first block */
	double	   *loss;
	int			cap;
} CnnDev;

/* Allocate and upload everything; returns TR_GPU_OK or the failure. */
static int
CnnDevAlloc(CnnDev *m, TrGpuMem *mem, const CnnPlan *p, const TrData *data,
			const float *theta)
{
	size_t		cap = (size_t) p->batch;
	size_t		d = (size_t) data->d;
	size_t		hid = (size_t) (p->hidden > 0 ? p->hidden : 1);

	m->p = p;
	m->g = mem->g;
	m->cap = p->batch;
	m->X = TrGpuUpload(mem, data->Xtr, sizeof(float) * data->n_train * d);
	m->Xva = TrGpuUpload(mem, data->Xva, sizeof(float) * data->n_val * d);
	m->idx = TrGpuAlloc(mem, sizeof(int) * data->n_train);
	m->y = TrGpuAlloc(mem, sizeof(int) * data->n_train);
	m->theta = TrGpuUpload(mem, theta, sizeof(float) * p->np);
	m->grad = TrGpuAlloc(mem, sizeof(float) * p->np);
	m->m1 = TrGpuAlloc(mem, sizeof(float) * p->np);
	m->m2 = TrGpuAlloc(mem, sizeof(float) * p->np);
	for (int l = 0; l < p->nconv; l++)
	{
		const CnnBlock *S = &p->conv[l];
		size_t		in = cap * S->h * S->w * S->cin;

		m->conv[l].A = TrGpuAlloc(mem, sizeof(float) * in);
		if (l > 0)
			m->conv[l].dA = TrGpuAlloc(mem, sizeof(float) * in);
		m->conv[l].cols = TrGpuAlloc(mem, sizeof(float) * in * p->k * p->k);
		m->conv[l].Z = TrGpuAlloc(mem, sizeof(float) * cap * S->h * S->w * S->cout);
		m->conv[l].arg = TrGpuAlloc(mem, sizeof(int) * cap * S->ph * S->pw * S->cout);
	}
	m->F = TrGpuAlloc(mem, sizeof(float) * cap * p->flat);
	m->dF = TrGpuAlloc(mem, sizeof(float) * cap * p->flat);
	m->Hd = TrGpuAlloc(mem, sizeof(float) * cap * hid);
	m->dHd = TrGpuAlloc(mem, sizeof(float) * cap * hid);
	m->O = TrGpuAlloc(mem, sizeof(float) * cap * p->nout);
	m->dO = TrGpuAlloc(mem, sizeof(float) * cap * p->nout);
	m->dZ = TrGpuAlloc(mem, sizeof(float) * cap * p->maxz);
	m->dcols = TrGpuAlloc(mem, sizeof(float) * cap * p->maxcols);
	m->ones = TrGpuAlloc(mem, sizeof(float) * cap * p->conv[0].h * p->conv[0].w);
	m->loss = TrGpuAlloc(mem, sizeof(double));
	if (mem->status != TR_GPU_OK)
		return mem->status;
	if (m->g->zero(m->m1, sizeof(float) * p->np) != TR_GPU_OK ||
		m->g->zero(m->m2, sizeof(float) * p->np) != TR_GPU_OK ||
		m->g->zero(m->loss, sizeof(double)) != TR_GPU_OK)
		return TR_GPU_ERROR;
	return m->g->fill(m->ones, cap * p->conv[0].h * p->conv[0].w, 1.0f);
}

/* A dense layer: out (B x nout) = in W + b, ReLU when relu. */
static int
Dense(CnnDev *m, const float *in, int B, int nin, int nout, size_t woff,
	  size_t boff, float *out, int relu)
{
	int			rc;

	TR_GPU_TRY(m->g->bias_rows(out, m->theta + boff, B, nout));
	TR_GPU_TRY(TrGemm(m->g, 0, 0, B, nout, nin, 1.0f, in, nin, m->theta + woff, nout,
					  1.0f, out, nout));
	if (relu)
		TR_GPU_TRY(m->g->relu(out, (size_t) B * nout));
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* Forward pass of B images already in conv[0].A; logits in O. */
static int
CnnDevForward(CnnDev *m, int B)
{
	const CnnPlan *p = m->p;
	const TrGpuOps *g = m->g;
	int			rc;

	for (int l = 0; l < p->nconv; l++)
	{
		const CnnBlock *S = &p->conv[l];
		CnnDevBlock *L = &m->conv[l];
		int			rows = B * S->h * S->w;
		int			K = p->k * p->k * S->cin;
		float	   *out = l + 1 < p->nconv ? m->conv[l + 1].A : m->F;

		TR_GPU_TRY(g->im2col(L->A, B, S->h, S->w, S->cin, p->k, L->cols));
		TR_GPU_TRY(g->bias_rows(L->Z, m->theta + S->boff, rows, S->cout));
		TR_GPU_TRY(TrGemm(g, 0, 0, rows, S->cout, K, 1.0f, L->cols, K,
						  m->theta + S->woff, S->cout, 1.0f, L->Z, S->cout));
		TR_GPU_TRY(g->relu(L->Z, (size_t) rows * S->cout));
		TR_GPU_TRY(g->maxpool(L->Z, B, S->h, S->w, S->cout, out, L->arg));
	}
	if (p->hidden > 0)
	{
		TR_GPU_TRY(Dense(m, m->F, B, p->flat, p->hidden, p->w1off, p->b1off, m->Hd, 1));
		TR_GPU_TRY(Dense(m, m->Hd, B, p->hidden, p->nout, p->w2off, p->b2off, m->O, 0));
	}
	else
		TR_GPU_TRY(Dense(m, m->F, B, p->flat, p->nout, p->w2off, p->b2off, m->O, 0));
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/*
 * Gradients of a dense layer from d (B x nout): weights (with l2) and
 * bias, and when din is not NULL the input's gradient, masked by the ReLU
 * of relu_of (NULL: no ReLU).
 */
static int
DenseBack(CnnDev *m, const float *in, const float *d, int B, int nin, int nout,
		  size_t woff, size_t boff, float *din, const float *relu_of)
{
	const TrGpuOps *g = m->g;
	int			rc;

	TR_GPU_TRY(g->copy(m->grad + woff, m->theta + woff, sizeof(float) * (size_t) nin * nout));
	TR_GPU_TRY(TrGemm(g, 1, 0, nin, nout, B, 1.0f, in, nin, d, nout, m->p->l2,
					  m->grad + woff, nout));
	TR_GPU_TRY(TrColSums(g, d, B, nout, m->ones, m->grad + boff));
	if (din != NULL)
	{
		TR_GPU_TRY(TrGemm(g, 0, 1, B, nin, nout, 1.0f, d, nout, m->theta + woff, nout,
						  0.0f, din, nin));
		if (relu_of != NULL)
			TR_GPU_TRY(g->relu_grad(din, relu_of, (size_t) B * nin));
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* Back-propagation of dO: every gradient, with l2 on weights. */
static int
CnnDevBackward(CnnDev *m, int B)
{
	const CnnPlan *p = m->p;
	const TrGpuOps *g = m->g;
	int			rc;

	if (p->hidden > 0)
	{
		TR_GPU_TRY(DenseBack(m, m->Hd, m->dO, B, p->hidden, p->nout, p->w2off, p->b2off,
							 m->dHd, m->Hd));
		TR_GPU_TRY(DenseBack(m, m->F, m->dHd, B, p->flat, p->hidden, p->w1off, p->b1off,
							 m->dF, NULL));
	}
	else
		TR_GPU_TRY(DenseBack(m, m->F, m->dO, B, p->flat, p->nout, p->w2off, p->b2off,
							 m->dF, NULL));
	for (int l = p->nconv - 1; l >= 0; l--)
	{
		const CnnBlock *S = &p->conv[l];
		CnnDevBlock *L = &m->conv[l];
		const float *dP = l + 1 < p->nconv ? m->conv[l + 1].dA : m->dF;
		int			rows = B * S->h * S->w;
		int			K = p->k * p->k * S->cin;

		/* unpool into dZ, then through the ReLU */
		TR_GPU_TRY(g->zero(m->dZ, sizeof(float) * (size_t) rows * S->cout));
		TR_GPU_TRY(g->unpool(dP, L->arg, (size_t) B * S->ph * S->pw * S->cout, m->dZ));
		TR_GPU_TRY(g->relu_grad(m->dZ, L->Z, (size_t) rows * S->cout));
		/* filter gradient cols^T dZ + l2 W, bias gradient the column sums */
		TR_GPU_TRY(g->copy(m->grad + S->woff, m->theta + S->woff,
						   sizeof(float) * (size_t) K * S->cout));
		TR_GPU_TRY(TrGemm(g, 1, 0, K, S->cout, rows, 1.0f, L->cols, K, m->dZ, S->cout,
						  p->l2, m->grad + S->woff, S->cout));
		TR_GPU_TRY(TrColSums(g, m->dZ, rows, S->cout, m->ones, m->grad + S->boff));
		if (l > 0)
		{
			TR_GPU_TRY(TrGemm(g, 0, 1, rows, K, S->cout, 1.0f, m->dZ, S->cout,
							  m->theta + S->woff, S->cout, 0.0f, m->dcols, K));
			TR_GPU_TRY(g->col2im(m->dcols, B, S->h, S->w, S->cin, p->k, L->dA));
		}
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* The epochs; returns TR_GPU_OK, a GPU failure, or 1 with res->error set. */
static int
CnnDevTrain(CnnDev *m, const TrContext *ctx, int *idx, int *ybuf, uint64_t *rng,
			TrResult *res)
{
	const TrData *data = ctx->data;
	const CnnPlan *p = m->p;
	const TrGpuOps *g = m->g;
	int			n = data->n_train;
	long		step = 0;
	int			rc;

	for (int epoch = 1; epoch <= p->epochs; epoch++)
	{
		double		sum;

		TrShuffle(idx, n, rng);
		for (int i = 0; i < n; i++)
			ybuf[i] = data->ytr[idx[i]];
		TR_GPU_TRY(g->upload(m->idx, idx, sizeof(int) * n));
		TR_GPU_TRY(g->upload(m->y, ybuf, sizeof(int) * n));
		for (int b0 = 0; b0 < n; b0 += p->batch)
		{
			int			B = n - b0 < p->batch ? n - b0 : p->batch;

			if (TrCancelled(ctx))
			{
				TrSetError(res, "cancelled");
				return 1;
			}
			TR_GPU_TRY(g->to_nhwc(m->conv[0].A, m->X, m->idx + b0, B, data->channels,
								  data->height, data->width));
			TR_GPU_TRY(CnnDevForward(m, B));
			TR_GPU_TRY(g->xent(m->O, m->y + b0, B, p->nout, 1.0f / (float) B, m->dO,
							   m->loss));
			TR_GPU_TRY(CnnDevBackward(m, B));
			TR_GPU_TRY(g->adam(m->theta, m->grad, m->m1, m->m2, p->np,
							   TrAdamRate(p->lr, ++step)));
		}
		TR_GPU_TRY(g->download(&sum, m->loss, sizeof(double)));
		TR_GPU_TRY(g->zero(m->loss, sizeof(double)));
		if (CnnEpochEnd(ctx, epoch, sum, res) != 0)
			return 1;
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* Validation predictions, a batch at a time. */
static int
CnnDevPredict(CnnDev *m, const TrData *data, float *O, int *pred)
{
	const CnnPlan *p = m->p;
	int			rc;

	for (int b0 = 0; b0 < data->n_val; b0 += p->batch)
	{
		int			B = data->n_val - b0 < p->batch ? data->n_val - b0 : p->batch;

		TR_GPU_TRY(m->g->to_nhwc(m->conv[0].A, m->Xva + (size_t) b0 * data->d, NULL, B,
								 data->channels, data->height, data->width));
		TR_GPU_TRY(CnnDevForward(m, B));
		TR_GPU_TRY(m->g->download(O, m->O, sizeof(float) * B * p->nout));
		for (int i = 0; i < B; i++)
			pred[b0 + i] = TrArgmax(O + (size_t) i * p->nout, p->nout);
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* The cnn fit on ctx->gpu (TrFamily.fit_gpu). */
int
CnnFitGpu(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	const TrGpuOps *g = ctx->gpu;
	int			n = data->n_train,
				nv = data->n_val;
	uint64_t	rng = ctx->seed ^ UINT64_C(0x636e6e);	/* "cnn", as the CPU fit */
	CnnPlan		p;
	CnnDev		m;
	TrGpuMem	mem;
	float	   *theta = NULL;
	int		   *idx = NULL;
	int		   *ybuf = NULL;
	float	   *O = NULL;
	int		   *pred = NULL;
	int			rc = -1;

	memset(&m, 0, sizeof(m));
	TrGpuMemInit(&mem, g);
	if (CnnPlanFrom(ctx, &p, res) != 0)
		return -1;
	theta = malloc(sizeof(float) * p.np);
	idx = malloc(sizeof(int) * n);
	ybuf = malloc(sizeof(int) * n);
	O = malloc(sizeof(float) * p.batch * p.nout);
	pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	if (!theta || !idx || !ybuf || !O || !pred)
	{
		TrSetError(res, "out of memory for cnn");
		goto done;
	}
	CnnInitTheta(&p, theta, &rng);
	for (int i = 0; i < n; i++)
		idx[i] = i;

	rc = CnnDevAlloc(&m, &mem, &p, data, theta);
	if (rc == TR_GPU_OK)
		rc = CnnDevTrain(&m, ctx, idx, ybuf, &rng, res);
	if (rc == TR_GPU_OK)
		rc = CnnDevPredict(&m, data, O, pred);
	if (rc == TR_GPU_OK)
		rc = g->download(theta, m.theta, sizeof(float) * p.np);
	if (rc != TR_GPU_OK)
	{
		rc = rc > 0 ? -1 : TrGpuFailed(g, rc, "cnn", res);
		goto done;
	}
	res->score = TrAccuracy(pred, data->yva, nv);
	rc = CnnKeepArtifact(&p, theta, data, res);

done:
	TrGpuMemFree(&mem);
	free(theta);
	free(idx);
	free(ybuf);
	free(O);
	free(pred);
	return rc;
}
