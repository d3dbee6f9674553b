/*-------------------------------------------------------------------------
 *
 * tr_mlp_gpu.c
 *	  The mlp family on a GPU: the steps of tr_mlp.c with the training
 *	  rows, parameters, gradients and Adam moments in device memory.
 *
 * The parameters are initialised on the host exactly as on the CPU and
 * uploaded; each epoch the host shuffles the row order with the same
 * generator and uploads it with the labels in that order, so the GPU
 * visits the same mini-batches.  Per mini-batch: gather the rows, then per
 * layer a bias broadcast, a cuBLAS product and ReLU; the output loss and
 * its gradient in one kernel; back-propagation with two products per layer
 * and the bias gradient as a product with a vector of ones; one Adam
 * kernel.  Only the epoch's loss (two doubles) comes back during training.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_mlp_gpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "tr_gpu.h"
#include "trainer/families/tr_mlp.h"

/* Device buffers of the fit. */
typedef struct MlpDev
{
	const MlpPlan *p;
	const TrGpuOps *g;
	float	   *X;				/* training rows */
	float	   *Xva;			/* validation rows */
	int		   *idx;			/* this epoch's row order */
	int		   *y;				/* labels in that order (classification) */
	double	   *t;				/* standardised targets in that order */
	float	   *theta;
	float	   *grad;
	float	   *m1;
	float	   *m2;
	float	   *H[MLP_MAX_LAYERS + 1];
	float	   *delta[2];
	float	   *ones;			/* cap ones, for bias gradients */
	double	   *acc;			/* [0] loss sum, [1] squared weights */
	int			cap;
} MlpDev;

/* Allocate and upload everything; returns TR_GPU_OK or the failure. */
static int
MlpDevAlloc(MlpDev *m, TrGpuMem *mem, const MlpPlan *p, const TrData *data,
			const float *theta, int cap)
{
	int			n = data->n_train;
	size_t		d = (size_t) data->d;

	m->p = p;
	m->g = mem->g;
	m->cap = cap;
	m->X = TrGpuUpload(mem, data->Xtr, sizeof(float) * n * d);
	m->Xva = TrGpuUpload(mem, data->Xva, sizeof(float) * data->n_val * d);
	m->idx = TrGpuAlloc(mem, sizeof(int) * n);
	if (p->regression)
		m->t = TrGpuAlloc(mem, sizeof(double) * n);
	else
		m->y = TrGpuAlloc(mem, sizeof(int) * n);
	m->theta = TrGpuUpload(mem, theta, sizeof(float) * p->np);
	m->grad = TrGpuAlloc(mem, sizeof(float) * p->np);
	m->m1 = TrGpuAlloc(mem, sizeof(float) * p->np);
	m->m2 = TrGpuAlloc(mem, sizeof(float) * p->np);
	for (int l = 1; l <= p->nl; l++)
		m->H[l] = TrGpuAlloc(mem, sizeof(float) * cap * p->size[l]);
	m->H[0] = TrGpuAlloc(mem, sizeof(float) * cap * d);
	for (int i = 0; i < 2; i++)
		m->delta[i] = TrGpuAlloc(mem, sizeof(float) * cap * p->widest);
	m->ones = TrGpuAlloc(mem, sizeof(float) * cap);
	m->acc = TrGpuAlloc(mem, sizeof(double) * 2);
	if (mem->status != TR_GPU_OK)
		return mem->status;
	if (m->g->zero(m->m1, sizeof(float) * p->np) != TR_GPU_OK ||
		m->g->zero(m->m2, sizeof(float) * p->np) != TR_GPU_OK)
		return TR_GPU_ERROR;
	return m->g->fill(m->ones, cap, 1.0f);
}

/* Forward pass of the rows in in (rows x d); the output is in H[nl]. */
static int
MlpDevForward(MlpDev *m, const float *in, int rows)
{
	const MlpPlan *p = m->p;
	const TrGpuOps *g = m->g;
	int			rc;

	for (int l = 1; l <= p->nl; l++)
	{
		int			nin = p->size[l - 1],
					out = p->size[l];

		TR_GPU_TRY(g->bias_rows(m->H[l], m->theta + p->boff[l - 1], rows, out));
		TR_GPU_TRY(TrGemm(g, 0, 0, rows, out, nin, 1.0f, l == 1 ? in : m->H[l - 1], nin,
						  m->theta + p->woff[l - 1], out, 1.0f, m->H[l], out));
		if (l < p->nl)
			TR_GPU_TRY(g->relu(m->H[l], (size_t) rows * out));
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* Loss of a batch at offset b0 of the epoch's order, gradient in delta[0]. */
static int
MlpDevLoss(MlpDev *m, int b0, int rows)
{
	const MlpPlan *p = m->p;
	int			k = p->size[p->nl];
	float		invn = 1.0f / (float) rows;

	if (p->regression)
		return m->g->sqerr(m->H[p->nl], m->t + b0, rows, invn, m->delta[0], &m->acc[0]);
	if (k == 1)
		return m->g->logistic(m->H[p->nl], m->y + b0, rows, invn, m->delta[0], &m->acc[0]);
	return m->g->xent(m->H[p->nl], m->y + b0, rows, k, invn, m->delta[0], &m->acc[0]);
}

/* Back-propagation: gradients (with l2 on weights) into m->grad. */
static int
MlpDevBackward(MlpDev *m, int rows)
{
	const MlpPlan *p = m->p;
	const TrGpuOps *g = m->g;
	float	   *dcur = m->delta[0],
			   *dprev = m->delta[1];
	int			rc;

	for (int l = p->nl; l >= 1; l--)
	{
		int			in = p->size[l - 1],
					out = p->size[l];
		float	   *gW = m->grad + p->woff[l - 1];
		const float *W = m->theta + p->woff[l - 1];

		/* gW = H_{l-1}^T delta + l2 W; gb = column sums of delta */
		TR_GPU_TRY(g->copy(gW, W, sizeof(float) * (size_t) in * out));
		TR_GPU_TRY(TrGemm(g, 1, 0, in, out, rows, 1.0f, m->H[l - 1], in, dcur, out,
						  p->l2, gW, out));
		TR_GPU_TRY(TrColSums(g, dcur, rows, out, m->ones, m->grad + p->boff[l - 1]));
		if (l > 1)
		{
			float	   *tmp;

			/* dprev = (dcur W^T) * relu'(H_{l-1}) */
			TR_GPU_TRY(TrGemm(g, 0, 1, rows, in, out, 1.0f, dcur, out, W, out,
							  0.0f, dprev, in));
			TR_GPU_TRY(g->relu_grad(dprev, m->H[l - 1], (size_t) rows * in));
			tmp = dcur;
			dcur = dprev;
			dprev = tmp;
		}
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* This epoch's order and the labels or targets in it, to the device. */
static int
MlpDevEpochOrder(MlpDev *m, const TrData *data, const int *idx, const double *tstd,
				 void *scratch)
{
	int			n = data->n_train;
	int			rc;

	TR_GPU_TRY(m->g->upload(m->idx, idx, sizeof(int) * n));
	if (m->p->regression)
	{
		double	   *t = scratch;

		for (int i = 0; i < n; i++)
			t[i] = tstd[idx[i]];
		TR_GPU_TRY(m->g->upload(m->t, t, sizeof(double) * n));
	}
	else
	{
		int		   *y = scratch;

		for (int i = 0; i < n; i++)
			y[i] = data->ytr[idx[i]];
		TR_GPU_TRY(m->g->upload(m->y, y, sizeof(int) * n));
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* The epoch's loss sum and squared weights, from the device. */
static int
MlpDevEpochLoss(MlpDev *m, double *loss_sum, double *reg)
{
	double		acc[2];
	int			rc;

	for (int l = 1; l <= m->p->nl; l++)
		TR_GPU_TRY(m->g->sumsq(m->theta + m->p->woff[l - 1],
							   (size_t) m->p->size[l - 1] * m->p->size[l], &m->acc[1]));
	TR_GPU_TRY(m->g->download(acc, m->acc, sizeof(acc)));
	TR_GPU_TRY(m->g->zero(m->acc, sizeof(acc)));
	*loss_sum = acc[0];
	*reg = acc[1];
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* Validation predictions, in chunks of cap rows. */
static int
MlpDevPredict(MlpDev *m, const TrData *data, float *Z, int *pred, double *tpred)
{
	int			nv = data->n_val;
	int			k = m->p->size[m->p->nl];
	int			rc;

	for (int b0 = 0; b0 < nv; b0 += m->cap)
	{
		int			rows = nv - b0 < m->cap ? nv - b0 : m->cap;

		TR_GPU_TRY(MlpDevForward(m, m->Xva + (size_t) b0 * data->d, rows));
		TR_GPU_TRY(m->g->download(Z, m->H[m->p->nl], sizeof(float) * rows * k));
		MlpDecode(m->p, Z, rows, pred ? pred + b0 : NULL, tpred ? tpred + b0 : NULL);
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* The epochs; returns TR_GPU_OK, a GPU failure, or 1 with res->error set. */
static int
MlpDevTrain(MlpDev *m, MlpPlan *p, const TrContext *ctx, int *idx,
			const double *tstd, void *scratch, uint64_t *rng, TrResult *res)
{
	const TrData *data = ctx->data;
	int			n = data->n_train;
	long		step = 0;
	int			rc;

	TR_GPU_TRY(m->g->zero(m->acc, sizeof(double) * 2));
	for (int epoch = 1; epoch <= p->epochs; epoch++)
	{
		double		sum,
					reg;
		int			stop;

		TrShuffle(idx, n, rng);
		TR_GPU_TRY(MlpDevEpochOrder(m, data, idx, tstd, scratch));
		for (int b0 = 0; b0 < n; b0 += p->batch)
		{
			int			rows = n - b0 < p->batch ? n - b0 : p->batch;

			if (TrCancelled(ctx))
			{
				TrSetError(res, "cancelled");
				return 1;
			}
			TR_GPU_TRY(m->g->gather_rows(m->H[0], m->X, m->idx + b0, rows, data->d));
			TR_GPU_TRY(MlpDevForward(m, m->H[0], rows));
			TR_GPU_TRY(MlpDevLoss(m, b0, rows));
			TR_GPU_TRY(MlpDevBackward(m, rows));
			TR_GPU_TRY(m->g->adam(m->theta, m->grad, m->m1, m->m2, p->np,
								  TrAdamRate(p->lr, ++step)));
		}
		TR_GPU_TRY(MlpDevEpochLoss(m, &sum, &reg));
		stop = MlpEpochEnd(p, ctx, epoch, sum, reg, res);
		if (stop < 0)
			return 1;
		if (stop)
			break;
	}
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* The mlp fit on ctx->gpu (TrFamily.fit_gpu). */
int
MlpFitGpu(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	const TrGpuOps *g = ctx->gpu;
	int			n = data->n_train,
				nv = data->n_val;
	uint64_t	rng = ctx->seed ^ UINT64_C(0x6d6c70);	/* "mlp", as the CPU fit */
	int			cap;
	MlpPlan		p;
	MlpDev		m;
	TrGpuMem	mem;
	float	   *theta = NULL;
	int		   *idx = NULL;
	double	   *tstd = NULL;
	void	   *scratch = NULL;
	float	   *Z = NULL;
	int		   *pred = NULL;
	double	   *tpred = NULL;
	int			rc = -1;

	memset(&m, 0, sizeof(m));
	TrGpuMemInit(&mem, g);
	if (MlpPlanFrom(ctx, &p, res) != 0)
		return -1;
	cap = p.batch > MLP_EVAL_BATCH ? p.batch : MLP_EVAL_BATCH;
	theta = malloc(sizeof(float) * p.np);
	idx = malloc(sizeof(int) * n);
	tstd = p.regression ? malloc(sizeof(double) * n) : NULL;
	scratch = malloc(sizeof(double) * n);
	Z = malloc(sizeof(float) * (size_t) cap * p.size[p.nl]);
	pred = malloc(sizeof(int) * (nv > 0 ? nv : 1));
	tpred = p.regression ? malloc(sizeof(double) * (nv > 0 ? nv : 1)) : NULL;
	if (!theta || !idx || (p.regression && (!tstd || !tpred)) || !scratch || !Z || !pred)
	{
		TrSetError(res, "out of memory for mlp (%zu parameters)", p.np);
		goto done;
	}
	MlpInitTheta(&p, theta, &rng);
	MlpTargets(&p, data, tstd);
	for (int i = 0; i < n; i++)
		idx[i] = i;

	rc = MlpDevAlloc(&m, &mem, &p, data, theta, cap);
	if (rc == TR_GPU_OK)
		rc = MlpDevTrain(&m, &p, ctx, idx, tstd, scratch, &rng, res);
	if (rc == TR_GPU_OK)
		rc = MlpDevPredict(&m, data, Z, pred, tpred);
	if (rc == TR_GPU_OK)
		rc = g->download(theta, m.theta, sizeof(float) * p.np);
	if (rc != TR_GPU_OK)
	{
		rc = rc > 0 ? -1 : TrGpuFailed(g, rc, "mlp", res);
		goto done;
	}
	MlpScore(&p, data, pred, tpred, res);
	rc = MlpKeepArtifact(&p, theta, data, res);

done:
	TrGpuMemFree(&mem);
	free(theta);
	free(idx);
	free(tstd);
	free(scratch);
	free(Z);
	free(pred);
	free(tpred);
	return rc;
}
