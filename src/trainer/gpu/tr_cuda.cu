/*-------------------------------------------------------------------------
 *
 * tr_cuda.cu
 *	  The CUDA backend of the trainer: the TrGpuOps table (tr_gpu.h) over
 *	  the CUDA runtime, cuBLAS and the kernels of tr_gpu_kernels.h.
 *
 * Built by nvcc into easeml-cuda.so (sm_90 code plus compute_90 PTX for
 * newer GPUs), with the CUDA runtime linked statically, and loaded by the
 * trainer with dlopen() only when a run asks for a GPU or the scheduler
 * probes the devices; easeml.so never links it.  Every operation runs on
 * the default stream, so they execute in order; copies to the host wait
 * for what came before, which is where an asynchronous kernel failure
 * shows.
 *
 * Kernels: each body of tr_gpu_kernels.h is called once per element by a
 * grid-stride loop; the loss bodies return a row's loss, summed in shared
 * memory per block and added to a double in device memory (atomicAdd on
 * doubles needs sm_60).  Matrices passed to cuBLAS are column-major; the
 * row-major mapping is done once, in tr_gpu.c (TrGemm, TrColSums), and is
 * tested there on the CPU emulation.  cuBLAS runs in its default math
 * mode: plain FP32, no TF32.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_cuda.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C"
{
#include "tr_gpu.h"
}
#include "tr_gpu_kernels.h"

#define THREADS 256				/* per block; a power of two (reductions) */
#define MAX_BLOCKS (1 << 20)

static cublasHandle_t handle = NULL;
static char last_error[512];

/* ---- errors ---------------------------------------------------------- */

static int
Fail(int rc, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return rc;
}

/* A CUDA runtime status as TR_GPU_*, clearing a non-sticky error. */
static int
Check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return TR_GPU_OK;
	(void) cudaGetLastError();
	return Fail(e == cudaErrorMemoryAllocation ? TR_GPU_OOM : TR_GPU_ERROR,
				"%s: %s", what, cudaGetErrorString(e));
}

static int
CheckBlas(cublasStatus_t st, const char *what)
{
	if (st == CUBLAS_STATUS_SUCCESS)
		return TR_GPU_OK;
	return Fail(st == CUBLAS_STATUS_ALLOC_FAILED ? TR_GPU_OOM : TR_GPU_ERROR,
				"%s: cuBLAS status %d", what, (int) st);
}

/* After a kernel launch: a bad launch shows at once, a failure later. */
static int
Launched(const char *what)
{
	return Check(cudaGetLastError(), what);
}

static unsigned int
Blocks(size_t n)
{
	size_t		b = (n + THREADS - 1) / THREADS;

	return (unsigned int) (b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define GRID_STRIDE(i, n) \
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < (n); \
		 i += (size_t) gridDim.x * blockDim.x)

/* Add every thread's v into *acc: one atomic per block. */
__device__ static void
BlockSumInto(double v, double *acc)
{
	__shared__ double part[THREADS];

	part[threadIdx.x] = v;
	__syncthreads();
	for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1)
	{
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(acc, part[0]);
}

/* ---- kernels ----------------------------------------------------------- */

__global__ void
KFill(size_t n, float *x, float v)
{
	GRID_STRIDE(i, n) TrkFill(i, x, v);
}

__global__ void
KGatherRows(size_t n, float *dst, const float *X, const int *idx, int d)
{
	GRID_STRIDE(i, n) TrkGatherRows(i, dst, X, idx, d);
}

__global__ void
KToNhwc(size_t n, float *dst, const float *X, const int *idx, int c, int h, int w)
{
	GRID_STRIDE(i, n) TrkToNhwc(i, dst, X, idx, c, h, w);
}

__global__ void
KBiasRows(size_t n, float *H, const float *b, int cols)
{
	GRID_STRIDE(i, n) TrkBiasRows(i, H, b, cols);
}

__global__ void
KRelu(size_t n, float *x)
{
	GRID_STRIDE(i, n) TrkRelu(i, x);
}

__global__ void
KReluGrad(size_t n, float *g, const float *h)
{
	GRID_STRIDE(i, n) TrkReluGrad(i, g, h);
}

__global__ void
KXent(size_t rows, const float *Z, const int *y, int k, float invn, float *dZ,
	  double *loss)
{
	double		v = 0.0;

	GRID_STRIDE(r, rows) v += TrkXent(r, Z, y, k, invn, dZ);
	BlockSumInto(v, loss);
}

__global__ void
KLogistic(size_t rows, const float *Z, const int *y, float invn, float *dZ,
		  double *loss)
{
	double		v = 0.0;

	GRID_STRIDE(r, rows) v += TrkLogistic(r, Z, y, invn, dZ);
	BlockSumInto(v, loss);
}

__global__ void
KSqerr(size_t rows, const float *Z, const double *t, float invn, float *dZ,
	   double *loss)
{
	double		v = 0.0;

	GRID_STRIDE(r, rows) v += TrkSqerr(r, Z, t, invn, dZ);
	BlockSumInto(v, loss);
}

__global__ void
KSoftmaxResid(size_t rows, float *Z, const int *y, const double *b, int k,
			  float invn, double *loss)
{
	double		v = 0.0;

	GRID_STRIDE(r, rows) v += TrkSoftmaxResid(r, Z, y, b, k, invn);
	BlockSumInto(v, loss);
}

__global__ void
KAdam(size_t n, float *theta, const float *grad, float *m1, float *m2, float lrf)
{
	GRID_STRIDE(i, n) TrkAdam(i, theta, grad, m1, m2, lrf);
}

__global__ void
KIm2col(size_t n, const float *A, int h, int w, int c, int k, float *cols)
{
	GRID_STRIDE(i, n) TrkIm2col(i, A, h, w, c, k, cols);
}

__global__ void
KCol2im(size_t n, const float *dcols, int h, int w, int c, int k, float *dA)
{
	GRID_STRIDE(i, n) TrkCol2im(i, dcols, h, w, c, k, dA);
}

__global__ void
KMaxpool(size_t n, const float *Z, int h, int w, int c, float *out, int *arg)
{
	GRID_STRIDE(i, n) TrkMaxpool(i, Z, h, w, c, out, arg);
}

__global__ void
KUnpool(size_t n, const float *dP, const int *arg, float *dZ)
{
	GRID_STRIDE(i, n) TrkUnpool(i, dP, arg, dZ);
}

__global__ void
KSumsq(size_t n, const float *x, double *acc)
{
	double		v = 0.0;

	GRID_STRIDE(i, n) v += (double) x[i] * x[i];
	BlockSumInto(v, acc);
}

/* Launch a grid-stride kernel over n elements; nothing to do for n == 0. */
#define LAUNCH(kernel, what, n, ...) \
	do { \
		if ((n) == 0) \
			return TR_GPU_OK; \
		kernel<<<Blocks(n), THREADS>>>((size_t) (n), __VA_ARGS__); \
		return Launched(what); \
	} while (0)

/* ---- the table's operations --------------------------------------------- */

/*
 * The devices the driver shows that can run these kernels (compute
 * capability 9.0 or newer: the object holds sm_90 code and compute_90 PTX)
 * and where a context can be created.
 */
static int
CudaCount(TrGpuInfo *info, int max, char *err, size_t errlen)
{
	int			n = 0;
	int			found = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess)
	{
		snprintf(err, errlen, "CUDA reports no usable driver or device: %s",
				 cudaGetErrorString(e));
		(void) cudaGetLastError();
		return 0;
	}
	snprintf(err, errlen, "CUDA shows no device");
	for (int i = 0; i < n && found < max; i++)
	{
		cudaDeviceProp prop;
		cudaFuncAttributes attr;

		if (cudaGetDeviceProperties(&prop, i) != cudaSuccess ||
			cudaSetDevice(i) != cudaSuccess || cudaFree(0) != cudaSuccess)
		{
			snprintf(err, errlen, "GPU %d cannot be used: %s", i,
					 cudaGetErrorString(cudaGetLastError()));
			continue;
		}
		if (cudaFuncGetAttributes(&attr, KFill) != cudaSuccess)
		{
			snprintf(err, errlen, "GPU %d (%s, compute capability %d.%d) cannot run this build (sm_90 and newer): %s",
					 i, prop.name, prop.major, prop.minor,
					 cudaGetErrorString(cudaGetLastError()));
			continue;
		}
		memset(&info[found], 0, sizeof(info[found]));
		info[found].ordinal = i;
		snprintf(info[found].name, sizeof(info[found].name), "%.*s",
				 (int) sizeof(info[found].name) - 1, prop.name);
		info[found].major = prop.major;
		info[found].minor = prop.minor;
		info[found].memory = prop.totalGlobalMem;
		found++;
	}
	return found;
}

static int
CudaInit(int ordinal, char *err, size_t errlen)
{
	int			rc;

	if ((rc = Check(cudaSetDevice(ordinal), "cudaSetDevice")) != TR_GPU_OK ||
		(rc = Check(cudaFree(0), "creating the CUDA context")) != TR_GPU_OK ||
		(rc = CheckBlas(cublasCreate(&handle), "cublasCreate")) != TR_GPU_OK ||
		(rc = CheckBlas(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH),
						"cublasSetMathMode")) != TR_GPU_OK)
	{
		snprintf(err, errlen, "%s", last_error);
		return rc;
	}
	return TR_GPU_OK;
}

static void
CudaShutdown(void)
{
	if (handle != NULL)
		cublasDestroy(handle);
	handle = NULL;
}

static const char *
CudaError(void)
{
	return last_error;
}

static int
CudaAlloc(void **ptr, size_t bytes)
{
	*ptr = NULL;
	return Check(cudaMalloc(ptr, bytes), "cudaMalloc");
}

static void
CudaRelease(void *ptr)
{
	if (ptr != NULL)
		(void) cudaFree(ptr);
}

static int
CudaUpload(void *dst, const void *src, size_t bytes)
{
	return bytes == 0 ? TR_GPU_OK :
		Check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to the GPU");
}

static int
CudaDownload(void *dst, const void *src, size_t bytes)
{
	return bytes == 0 ? TR_GPU_OK :
		Check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy from the GPU");
}

static int
CudaCopy(void *dst, const void *src, size_t bytes)
{
	return bytes == 0 ? TR_GPU_OK :
		Check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "copy on the GPU");
}

static int
CudaZero(void *dst, size_t bytes)
{
	return bytes == 0 ? TR_GPU_OK : Check(cudaMemset(dst, 0, bytes), "cudaMemset");
}

static int
CudaSync(void)
{
	return Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static int
CudaSgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A,
		  int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
	if (m == 0 || n == 0)
		return TR_GPU_OK;
	return CheckBlas(cublasSgemm(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
								 tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
								 &alpha, A, lda, B, ldb, &beta, C, ldc),
					 "cublasSgemm");
}

static int
CudaSgemv(int ta, int m, int n, float alpha, const float *A, int lda,
		  const float *x, float beta, float *y)
{
	if (m == 0 || n == 0)
		return TR_GPU_OK;
	return CheckBlas(cublasSgemv(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
								 &alpha, A, lda, x, 1, &beta, y, 1),
					 "cublasSgemv");
}

static int
CudaFill(float *x, size_t n, float value)
{
	LAUNCH(KFill, "fill", n, x, value);
}

static int
CudaGatherRows(float *dst, const float *X, const int *idx, int rows, int d)
{
	LAUNCH(KGatherRows, "gather_rows", (size_t) rows * d, dst, X, idx, d);
}

static int
CudaToNhwc(float *dst, const float *X, const int *idx, int B, int c, int h, int w)
{
	LAUNCH(KToNhwc, "to_nhwc", (size_t) B * c * h * w, dst, X, idx, c, h, w);
}

static int
CudaBiasRows(float *H, const float *b, int rows, int cols)
{
	LAUNCH(KBiasRows, "bias_rows", (size_t) rows * cols, H, b, cols);
}

static int
CudaRelu(float *x, size_t n)
{
	LAUNCH(KRelu, "relu", n, x);
}

static int
CudaReluGrad(float *g, const float *h, size_t n)
{
	LAUNCH(KReluGrad, "relu_grad", n, g, h);
}

static int
CudaXent(const float *Z, const int *y, int rows, int k, float invn, float *dZ,
		 double *loss)
{
	LAUNCH(KXent, "xent", (size_t) rows, Z, y, k, invn, dZ, loss);
}

static int
CudaLogistic(const float *Z, const int *y, int rows, float invn, float *dZ,
			 double *loss)
{
	LAUNCH(KLogistic, "logistic", (size_t) rows, Z, y, invn, dZ, loss);
}

static int
CudaSqerr(const float *Z, const double *t, int rows, float invn, float *dZ,
		  double *loss)
{
	LAUNCH(KSqerr, "sqerr", (size_t) rows, Z, t, invn, dZ, loss);
}

static int
CudaSoftmaxResid(float *Z, const int *y, const double *b, int rows, int k,
				 float invn, double *loss)
{
	LAUNCH(KSoftmaxResid, "softmax_resid", (size_t) rows, Z, y, b, k, invn, loss);
}

static int
CudaAdam(float *theta, const float *grad, float *m1, float *m2, size_t n, float lrf)
{
	LAUNCH(KAdam, "adam", n, theta, grad, m1, m2, lrf);
}

static int
CudaIm2col(const float *A, int B, int h, int w, int c, int k, float *cols)
{
	LAUNCH(KIm2col, "im2col", (size_t) B * h * w * k * k * c, A, h, w, c, k, cols);
}

static int
CudaCol2im(const float *dcols, int B, int h, int w, int c, int k, float *dA)
{
	LAUNCH(KCol2im, "col2im", (size_t) B * h * w * c, dcols, h, w, c, k, dA);
}

static int
CudaMaxpool(const float *Z, int B, int h, int w, int c, float *out, int *arg)
{
	LAUNCH(KMaxpool, "maxpool", (size_t) B * (h / 2) * (w / 2) * c, Z, h, w, c, out, arg);
}

static int
CudaUnpool(const float *dP, const int *arg, size_t npool, float *dZ)
{
	LAUNCH(KUnpool, "unpool", npool, dP, arg, dZ);
}

static int
CudaSumsq(const float *x, size_t n, double *acc)
{
	LAUNCH(KSumsq, "sumsq", n, x, acc);
}

static char backend_name[64];

static const TrGpuOps cuda_ops = {
	TR_GPU_ABI,
	backend_name,
	CudaCount,
	CudaInit,
	CudaShutdown,
	CudaError,
	CudaAlloc,
	CudaRelease,
	CudaUpload,
	CudaDownload,
	CudaCopy,
	CudaZero,
	CudaSync,
	CudaSgemm,
	CudaSgemv,
	CudaFill,
	CudaGatherRows,
	CudaToNhwc,
	CudaBiasRows,
	CudaRelu,
	CudaReluGrad,
	CudaXent,
	CudaLogistic,
	CudaSqerr,
	CudaSoftmaxResid,
	CudaAdam,
	CudaIm2col,
	CudaCol2im,
	CudaMaxpool,
	CudaUnpool,
	CudaSumsq,
};

/* The entry point the trainer looks up with dlsym(). */
extern "C" __attribute__((visibility("default"))) const TrGpuOps *
easeml_gpu_backend(int abi)
{
	int			runtime = 0;

	if (abi != TR_GPU_ABI)
		return NULL;
	(void) cudaRuntimeGetVersion(&runtime);
	snprintf(backend_name, sizeof(backend_name), "CUDA %d.%d (cuBLAS)",
			 runtime / 1000, (runtime % 1000) / 10);
	return &cuda_ops;
}
