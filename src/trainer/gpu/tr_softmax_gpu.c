/*-------------------------------------------------------------------------
 *
 * tr_softmax_gpu.c
 *	  The softmax family's objective and gradient on a GPU.
 *
 * L-BFGS itself stays on the host (tr_softmax.c): its vectors are the
 * d x k weights, and its line search needs only values.  What costs time
 * is the evaluation over every training row, two products with the
 * training matrix: Z = X W, the residuals (softmax - onehot) in one kernel
 * (tr_gpu_kernels.h, TrkSoftmaxResid, the arithmetic of SoftmaxEval), then
 * G = X^T R and the bias gradient as the residuals' column sums.  The
 * training rows stay on the device; per evaluation the weights go up and
 * the gradient and the loss come back.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_softmax_gpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "trainer/families/tr_softmax.h"

struct SoftmaxDev
{
	const TrGpuOps *g;
	TrGpuMem	mem;
	int			n;				/* training rows */
	int			nv;				/* validation rows */
	int			d;
	int			k;				/* columns of W: classes, or 1 for binary */
	float	   *X;				/* device: training rows */
	float	   *Xva;			/* device: validation rows */
	int		   *y;				/* device: labels */
	float	   *W;				/* device: d x k */
	double	   *b;				/* device: k */
	float	   *Z;				/* device: max(n, nv) x k */
	float	   *G;				/* device: d x k */
	float	   *gb;				/* device: k */
	float	   *ones;			/* device: n ones */
	double	   *loss;			/* device: the rows' loss sum */
	float	   *host;			/* host: d x k, or max(n, nv) x k */
	int			status;			/* the first failure, or TR_GPU_OK */
};

/* Upload the data and allocate; NULL on a host allocation failure. */
SoftmaxDev *
SoftmaxDevBegin(const TrGpuOps *g, const TrData *data, int k, int *status)
{
	SoftmaxDev *s = calloc(1, sizeof(SoftmaxDev));
	size_t		rows;

	*status = TR_GPU_OK;
	if (s == NULL)
		return NULL;
	s->g = g;
	s->n = data->n_train;
	s->nv = data->n_val;
	s->d = data->d;
	s->k = k;
	rows = (size_t) (s->n > s->nv ? s->n : s->nv);
	s->host = malloc(sizeof(float) * ((size_t) s->d * k > rows * k ? (size_t) s->d * k : rows * k));
	if (s->host == NULL)
	{
		free(s);
		return NULL;
	}
	TrGpuMemInit(&s->mem, g);
	s->X = TrGpuUpload(&s->mem, data->Xtr, sizeof(float) * s->n * (size_t) s->d);
	s->Xva = TrGpuUpload(&s->mem, data->Xva, sizeof(float) * s->nv * (size_t) s->d);
	s->y = TrGpuUpload(&s->mem, data->ytr, sizeof(int) * s->n);
	s->W = TrGpuAlloc(&s->mem, sizeof(float) * (size_t) s->d * k);
	s->b = TrGpuAlloc(&s->mem, sizeof(double) * k);
	s->Z = TrGpuAlloc(&s->mem, sizeof(float) * rows * k);
	s->G = TrGpuAlloc(&s->mem, sizeof(float) * (size_t) s->d * k);
	s->gb = TrGpuAlloc(&s->mem, sizeof(float) * k);
	s->ones = TrGpuAlloc(&s->mem, sizeof(float) * s->n);
	s->loss = TrGpuAlloc(&s->mem, sizeof(double));
	s->status = s->mem.status;
	if (s->status == TR_GPU_OK)
		s->status = g->fill(s->ones, s->n, 1.0f);
	*status = s->status;
	return s;
}

/* Weights (as float) and bias (double) of theta, to the device. */
static int
UploadTheta(SoftmaxDev *s, const double *theta)
{
	size_t		dk = (size_t) s->d * s->k;
	int			rc;

	for (size_t i = 0; i < dk; i++)
		s->host[i] = (float) theta[i];
	TR_GPU_TRY(s->g->upload(s->W, s->host, sizeof(float) * dk));
	TR_GPU_TRY(s->g->upload(s->b, theta + dk, sizeof(double) * s->k));
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/* The rows' loss sum, G and gb on the device. */
static int
EvalOnDevice(SoftmaxDev *s, const double *theta, double *loss_sum)
{
	const TrGpuOps *g = s->g;
	int			rc;

	TR_GPU_TRY(UploadTheta(s, theta));
	TR_GPU_TRY(g->zero(s->loss, sizeof(double)));
	TR_GPU_TRY(TrGemm(g, 0, 0, s->n, s->k, s->d, 1.0f, s->X, s->d, s->W, s->k,
					  0.0f, s->Z, s->k));
	TR_GPU_TRY(g->softmax_resid(s->Z, s->y, s->b, s->n, s->k, 1.0f / (float) s->n,
								s->loss));
	TR_GPU_TRY(TrGemm(g, 1, 0, s->d, s->k, s->n, 1.0f, s->X, s->d, s->Z, s->k,
					  0.0f, s->G, s->k));
	TR_GPU_TRY(TrColSums(g, s->Z, s->n, s->k, s->ones, s->gb));
	TR_GPU_TRY(g->download(loss_sum, s->loss, sizeof(double)));
	return TR_GPU_OK;
gpu_fail:
	return rc;
}

/*
 * The objective (mean loss + l2 / 2 ||W||^2) at theta and its gradient,
 * as SoftmaxEval computes them; NaN after a GPU failure (see
 * SoftmaxDevStatus).
 */
double
SoftmaxDevEval(SoftmaxDev *s, const double *theta, double l2, double *grad)
{
	size_t		dk = (size_t) s->d * s->k;
	float		gb[64];
	float	   *gbh = s->k <= 64 ? gb : malloc(sizeof(float) * s->k);
	double		loss_sum = 0.0,
				reg = 0.0;
	int			rc = s->status;

	if (rc == TR_GPU_OK && gbh == NULL)
		rc = TR_GPU_ERROR;
	if (rc == TR_GPU_OK)
		rc = EvalOnDevice(s, theta, &loss_sum);
	if (rc == TR_GPU_OK)
		rc = s->g->download(s->host, s->G, sizeof(float) * dk);
	if (rc == TR_GPU_OK)
		rc = s->g->download(gbh, s->gb, sizeof(float) * s->k);
	if (rc != TR_GPU_OK)
	{
		s->status = rc;
		if (gbh != gb)
			free(gbh);
		return NAN;
	}
	for (size_t i = 0; i < dk; i++)
	{
		grad[i] = (double) s->host[i] + l2 * theta[i];
		reg += theta[i] * theta[i];
	}
	for (int c = 0; c < s->k; c++)
		grad[dk + c] = gbh[c];
	if (gbh != gb)
		free(gbh);
	return loss_sum / s->n + 0.5 * l2 * reg;
}

/* Class ids for the validation rows, as SoftmaxPredict. */
int
SoftmaxDevPredict(SoftmaxDev *s, const double *theta, int nclass, int *pred)
{
	const double *b = theta + (size_t) s->d * s->k;
	int			rc;

	TR_GPU_TRY(UploadTheta(s, theta));
	TR_GPU_TRY(TrGemm(s->g, 0, 0, s->nv, s->k, s->d, 1.0f, s->Xva, s->d, s->W, s->k,
					  0.0f, s->Z, s->k));
	TR_GPU_TRY(s->g->download(s->host, s->Z, sizeof(float) * s->nv * s->k));
	for (int i = 0; i < s->nv; i++)
	{
		const float *z = s->host + (size_t) i * s->k;

		if (s->k == 1)
			pred[i] = ((double) z[0] + b[0]) > 0.0 ? 1 : 0;
		else
		{
			int			best = 0;
			double		bv = (double) z[0] + b[0];

			for (int c = 1; c < nclass; c++)
				if ((double) z[c] + b[c] > bv)
				{
					bv = (double) z[c] + b[c];
					best = c;
				}
			pred[i] = best;
		}
	}
	return TR_GPU_OK;
gpu_fail:
	s->status = rc;
	return rc;
}

/* TR_GPU_OK, or the first failure. */
int
SoftmaxDevStatus(const SoftmaxDev *s)
{
	return s->status;
}

void
SoftmaxDevEnd(SoftmaxDev *s)
{
	if (s == NULL)
		return;
	TrGpuMemFree(&s->mem);
	free(s->host);
	free(s);
}
