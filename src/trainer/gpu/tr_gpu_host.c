/*-------------------------------------------------------------------------
 *
 * tr_gpu_host.c
 *	  A GPU emulated on the CPU: the TrGpuOps table with host memory,
 *	  OpenBLAS in column-major order for cuBLAS, and the kernels' bodies
 *	  (tr_gpu_kernels.h) in plain loops.
 *
 * It is not a way to train faster: it exists so that everything around
 * the CUDA backend can be tested where no GPU is, and run first time where
 * one is.  With EASEML_GPU_EMULATE set, the probe lists one emulated
 * device and GPU runs take the GPU code path of the families on it: the
 * same row-major to column-major mapping, the same kernel arithmetic, the
 * same buffers.  Its memory is a budget (EASEML_GPU_EMULATE_MEMORY bytes,
 * default 1 GiB) so that running out of GPU memory can be tested too.
 * Like CUDA it honours CUDA_VISIBLE_DEVICES: set to an empty string, it
 * shows no device.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_gpu_host.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"
#include "tr_gpu.h"
#include "tr_gpu_kernels.h"

/* every allocation carries its size, for the memory budget */
typedef struct HostBlock
{
	size_t		bytes;
	size_t		pad[3];			/* keeps the payload 16-byte aligned */
} HostBlock;

static size_t budget = 0;
static size_t in_use = 0;
static char last_error[TR_ERRLEN];

static int
Fail(int rc, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return rc;
}

static size_t
Budget(void)
{
	const char *s = getenv(TR_GPU_ENV_EMULATE_MEMORY);
	double		v = s ? atof(s) : 0.0;

	return v > 0 ? (size_t) v : (size_t) 1 << 30;
}

/* Is a device visible?  CUDA_VISIBLE_DEVICES="" hides every GPU. */
static int
Visible(void)
{
	const char *v = getenv("CUDA_VISIBLE_DEVICES");

	return v == NULL || v[0] != '\0';
}

static int
HostCount(TrGpuInfo *info, int max, char *err, size_t errlen)
{
	if (!Visible())
	{
		snprintf(err, errlen, "no device visible (CUDA_VISIBLE_DEVICES is empty)");
		return 0;
	}
	if (max < 1)
		return 0;
	memset(&info[0], 0, sizeof(info[0]));
	info[0].ordinal = 0;
	snprintf(info[0].name, sizeof(info[0].name), "emulated GPU (CPU, for tests)");
	info[0].major = 9;
	info[0].minor = 0;
	info[0].memory = Budget();
	return 1;
}

static int
HostInit(int ordinal, char *err, size_t errlen)
{
	if (!Visible() || ordinal != 0)
	{
		snprintf(err, errlen, "emulated GPU %d is not visible", ordinal);
		return TR_GPU_ERROR;
	}
	budget = Budget();
	in_use = 0;
	return TR_GPU_OK;
}

static void
HostShutdown(void)
{
}

static const char *
HostError(void)
{
	return last_error;
}

static int
HostAlloc(void **ptr, size_t bytes)
{
	HostBlock  *b;

	*ptr = NULL;
	if (bytes > budget || in_use > budget - bytes)
		return Fail(TR_GPU_OOM, "out of memory: %zu bytes requested, %zu of %zu in use",
					bytes, in_use, budget);
	b = malloc(sizeof(HostBlock) + (bytes ? bytes : 1));
	if (b == NULL)
		return Fail(TR_GPU_OOM, "out of host memory for %zu bytes", bytes);
	b->bytes = bytes;
	in_use += bytes;
	*ptr = b + 1;
	return TR_GPU_OK;
}

static void
HostRelease(void *ptr)
{
	HostBlock  *b;

	if (ptr == NULL)
		return;
	b = (HostBlock *) ptr - 1;
	in_use -= b->bytes;
	free(b);
}

static int
HostCopy(void *dst, const void *src, size_t bytes)
{
	if (bytes > 0)
		memcpy(dst, src, bytes);
	return TR_GPU_OK;
}

static int
HostZero(void *dst, size_t bytes)
{
	memset(dst, 0, bytes);
	return TR_GPU_OK;
}

static int
HostSync(void)
{
	return TR_GPU_OK;
}

static int
HostSgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A,
		  int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans,
				tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb,
				beta, C, ldc);
	return TR_GPU_OK;
}

static int
HostSgemv(int ta, int m, int n, float alpha, const float *A, int lda,
		  const float *x, float beta, float *y)
{
	cblas_sgemv(CblasColMajor, ta ? CblasTrans : CblasNoTrans, m, n, alpha,
				A, lda, x, 1, beta, y, 1);
	return TR_GPU_OK;
}

static int
HostFill(float *x, size_t n, float value)
{
	for (size_t i = 0; i < n; i++)
		TrkFill(i, x, value);
	return TR_GPU_OK;
}

static int
HostGatherRows(float *dst, const float *X, const int *idx, int rows, int d)
{
	for (size_t i = 0; i < (size_t) rows * d; i++)
		TrkGatherRows(i, dst, X, idx, d);
	return TR_GPU_OK;
}

static int
HostToNhwc(float *dst, const float *X, const int *idx, int B, int c, int h, int w)
{
	for (size_t i = 0; i < (size_t) B * c * h * w; i++)
		TrkToNhwc(i, dst, X, idx, c, h, w);
	return TR_GPU_OK;
}

static int
HostBiasRows(float *H, const float *b, int rows, int cols)
{
	for (size_t i = 0; i < (size_t) rows * cols; i++)
		TrkBiasRows(i, H, b, cols);
	return TR_GPU_OK;
}

static int
HostRelu(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		TrkRelu(i, x);
	return TR_GPU_OK;
}

static int
HostReluGrad(float *g, const float *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		TrkReluGrad(i, g, h);
	return TR_GPU_OK;
}

static int
HostXent(const float *Z, const int *y, int rows, int k, float invn, float *dZ,
		 double *loss)
{
	for (size_t r = 0; r < (size_t) rows; r++)
		*loss += TrkXent(r, Z, y, k, invn, dZ);
	return TR_GPU_OK;
}

static int
HostLogistic(const float *Z, const int *y, int rows, float invn, float *dZ,
			 double *loss)
{
	for (size_t r = 0; r < (size_t) rows; r++)
		*loss += TrkLogistic(r, Z, y, invn, dZ);
	return TR_GPU_OK;
}

static int
HostSqerr(const float *Z, const double *t, int rows, float invn, float *dZ,
		  double *loss)
{
	for (size_t r = 0; r < (size_t) rows; r++)
		*loss += TrkSqerr(r, Z, t, invn, dZ);
	return TR_GPU_OK;
}

static int
HostSoftmaxResid(float *Z, const int *y, const double *b, int rows, int k,
				 float invn, double *loss)
{
	for (size_t r = 0; r < (size_t) rows; r++)
		*loss += TrkSoftmaxResid(r, Z, y, b, k, invn);
	return TR_GPU_OK;
}

static int
HostAdam(float *theta, const float *grad, float *m1, float *m2, size_t n, float lrf)
{
	for (size_t i = 0; i < n; i++)
		TrkAdam(i, theta, grad, m1, m2, lrf);
	return TR_GPU_OK;
}

static int
HostIm2col(const float *A, int B, int h, int w, int c, int k, float *cols)
{
	for (size_t i = 0; i < (size_t) B * h * w * k * k * c; i++)
		TrkIm2col(i, A, h, w, c, k, cols);
	return TR_GPU_OK;
}

static int
HostCol2im(const float *dcols, int B, int h, int w, int c, int k, float *dA)
{
	for (size_t i = 0; i < (size_t) B * h * w * c; i++)
		TrkCol2im(i, dcols, h, w, c, k, dA);
	return TR_GPU_OK;
}

static int
HostMaxpool(const float *Z, int B, int h, int w, int c, float *out, int *arg)
{
	for (size_t i = 0; i < (size_t) B * (h / 2) * (w / 2) * c; i++)
		TrkMaxpool(i, Z, h, w, c, out, arg);
	return TR_GPU_OK;
}

static int
HostUnpool(const float *dP, const int *arg, size_t npool, float *dZ)
{
	for (size_t i = 0; i < npool; i++)
		TrkUnpool(i, dP, arg, dZ);
	return TR_GPU_OK;
}

static int
HostSumsq(const float *x, size_t n, double *acc)
{
	for (size_t i = 0; i < n; i++)
		*acc += (double) x[i] * x[i];
	return TR_GPU_OK;
}

static const TrGpuOps host_ops = {
	.abi = TR_GPU_ABI,
	.name = "emulated GPU (EASEML_GPU_EMULATE)",
	.count = HostCount,
	.init = HostInit,
	.shutdown = HostShutdown,
	.error = HostError,
	.alloc = HostAlloc,
	.release = HostRelease,
	.upload = HostCopy,
	.download = HostCopy,
	.copy = HostCopy,
	.zero = HostZero,
	.sync = HostSync,
	.sgemm = HostSgemm,
	.sgemv = HostSgemv,
	.fill = HostFill,
	.gather_rows = HostGatherRows,
	.to_nhwc = HostToNhwc,
	.bias_rows = HostBiasRows,
	.relu = HostRelu,
	.relu_grad = HostReluGrad,
	.xent = HostXent,
	.logistic = HostLogistic,
	.sqerr = HostSqerr,
	.softmax_resid = HostSoftmaxResid,
	.adam = HostAdam,
	.im2col = HostIm2col,
	.col2im = HostCol2im,
	.maxpool = HostMaxpool,
	.unpool = HostUnpool,
	.sumsq = HostSumsq,
};

/* The emulation's operation table. */
const TrGpuOps *
TrGpuHostOps(void)
{
	return &host_ops;
}
