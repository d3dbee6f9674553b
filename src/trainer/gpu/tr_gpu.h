/*-------------------------------------------------------------------------
 *
 * tr_gpu.h
 *	  The trainer's GPU layer: the operations a GPU backend provides, and
 *	  how the trainer finds one (src/trainer/gpu/tr_gpu.c).
 *
 * The CUDA backend (src/trainer/gpu/tr_cuda.cu, built only where nvcc
 * exists) is a shared object, easeml-cuda.so, that the trainer loads with
 * dlopen() the first time a GPU is asked for: an easeml-trainer built on a
 * machine with CUDA still starts, and trains on the CPU, where libcudart,
 * cuBLAS or the driver are missing.  The object exports one function,
 * easeml_gpu_backend(abi), returning a TrGpuOps table.
 *
 * A second implementation of the same table runs on the CPU
 * (tr_gpu_host.c: OpenBLAS in column-major order for cuBLAS, the kernels'
 * bodies in loops).  It lets the GPU training code, the device placement
 * and the out-of-memory handling be tested on machines without a GPU
 * (EASEML_GPU_EMULATE=1), and it is the reference the kernel check
 * compares the CUDA kernels with.
 *
 * Conventions: device pointers are plain pointers the host never reads;
 * matrices are row-major unless a function says otherwise; every
 * operation returns TR_GPU_OK, TR_GPU_OOM or TR_GPU_ERROR, and error()
 * describes the last failure.  Loss sums accumulate into a double in
 * device memory that the caller zeroes and downloads.
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_gpu.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_GPU_H
#define EASEML_TR_GPU_H

#include <stddef.h>

#define TR_GPU_ABI			1	/* bump when TrGpuOps changes */
#define TR_GPU_MAX_DEVICES	16
#define TR_GPU_NAME_LEN		128

#define TR_GPU_OK			0
#define TR_GPU_ERROR		(-1)
#define TR_GPU_OOM			(-2)

/* the backend's file name and entry point */
#define TR_GPU_LIBRARY		"easeml-cuda.so"
#define TR_GPU_ENTRY		"easeml_gpu_backend"

/* set (to anything) to use the CPU emulation of a GPU: tests only */
#define TR_GPU_ENV_EMULATE	"EASEML_GPU_EMULATE"
/* the emulated device's memory in bytes (default 1 GiB) */
#define TR_GPU_ENV_EMULATE_MEMORY "EASEML_GPU_EMULATE_MEMORY"

typedef struct TrGpuInfo
{
	int			ordinal;		/* the CUDA device number */
	char		name[TR_GPU_NAME_LEN];
	int			major;			/* compute capability */
	int			minor;
	size_t		memory;			/* bytes */
} TrGpuInfo;

typedef struct TrGpuOps
{
	int			abi;			/* TR_GPU_ABI */
	const char *name;			/* e.g. "CUDA 13.0" */

	/* devices and lifetime */
	int			(*count) (TrGpuInfo *info, int max, char *err, size_t errlen);
	int			(*init) (int ordinal, char *err, size_t errlen);
	void		(*shutdown) (void);
	const char *(*error) (void);

	/* memory */
	int			(*alloc) (void **ptr, size_t bytes);
	void		(*release) (void *ptr);
	int			(*upload) (void *dst, const void *src, size_t bytes);
	int			(*download) (void *dst, const void *src, size_t bytes);
	int			(*copy) (void *dst, const void *src, size_t bytes);
	int			(*zero) (void *dst, size_t bytes);
	int			(*sync) (void);

	/* BLAS, column-major with cuBLAS's arguments (ta, tb: 0 = N, 1 = T) */
	int			(*sgemm) (int ta, int tb, int m, int n, int k, float alpha,
						  const float *A, int lda, const float *B, int ldb,
						  float beta, float *C, int ldc);
	int			(*sgemv) (int ta, int m, int n, float alpha, const float *A,
						  int lda, const float *x, float beta, float *y);

	/* kernels: their bodies are in tr_gpu_kernels.h */
	int			(*fill) (float *x, size_t n, float value);
	int			(*gather_rows) (float *dst, const float *X, const int *idx,
								int rows, int d);
	int			(*to_nhwc) (float *dst, const float *X, const int *idx,
							int B, int c, int h, int w);
	int			(*bias_rows) (float *H, const float *b, int rows, int cols);
	int			(*relu) (float *x, size_t n);
	int			(*relu_grad) (float *g, const float *h, size_t n);
	int			(*xent) (const float *Z, const int *y, int rows, int k,
						 float invn, float *dZ, double *loss);
	int			(*logistic) (const float *Z, const int *y, int rows,
							 float invn, float *dZ, double *loss);
	int			(*sqerr) (const float *Z, const double *t, int rows,
						  float invn, float *dZ, double *loss);
	int			(*softmax_resid) (float *Z, const int *y, const double *b,
								  int rows, int k, float invn, double *loss);
	int			(*adam) (float *theta, const float *grad, float *m1, float *m2,
						 size_t n, float lrf);
	int			(*im2col) (const float *A, int B, int h, int w, int c, int k,
						   float *cols);
	int			(*col2im) (const float *dcols, int B, int h, int w, int c,
						   int k, float *dA);
	int			(*maxpool) (const float *Z, int B, int h, int w, int c,
							float *out, int *arg);
	int			(*unpool) (const float *dP, const int *arg, size_t npool,
						   float *dZ);
	int			(*sumsq) (const float *x, size_t n, double *acc);
} TrGpuOps;

typedef const TrGpuOps *(*TrGpuEntry) (int abi);

/*
 * The device buffers of one fit, freed together; the first failure is
 * kept (TR_GPU_OOM or TR_GPU_ERROR) and later allocations return NULL.
 */
#define TR_GPU_MAX_BUFFERS 64

typedef struct TrGpuMem
{
	const TrGpuOps *g;
	void	   *ptr[TR_GPU_MAX_BUFFERS];
	int			n;
	int			status;
} TrGpuMem;

/* Stop a GPU fit at the first failing operation (needs int rc; gpu_fail:). */
#define TR_GPU_TRY(call) \
	do { \
		if ((rc = (call)) != TR_GPU_OK) \
			goto gpu_fail; \
	} while (0)

/* tr_gpu.c */
extern int	TrGpuProbe(TrGpuInfo *info, int max, char *why, size_t whylen);
extern const TrGpuOps *TrGpuOpen(char *err, size_t errlen, int *oom);
extern void TrGpuClose(const TrGpuOps *ops);
extern int	TrGemm(const TrGpuOps *g, int ta, int tb, int m, int n, int k,
				   float alpha, const float *A, int lda, const float *B, int ldb,
				   float beta, float *C, int ldc);
extern int	TrColSums(const TrGpuOps *g, const float *D, int rows, int cols,
					  const float *ones, float *out);
extern void TrGpuMemInit(TrGpuMem *mem, const TrGpuOps *g);
extern void *TrGpuAlloc(TrGpuMem *mem, size_t bytes);
extern void *TrGpuUpload(TrGpuMem *mem, const void *host, size_t bytes);
extern void TrGpuMemFree(TrGpuMem *mem);
extern int	TrGpuFailed(const TrGpuOps *g, int rc, const char *family,
						struct TrResult *res);

/* tr_gpu_host.c: the CPU emulation */
extern const TrGpuOps *TrGpuHostOps(void);

#endif							/* EASEML_TR_GPU_H */
