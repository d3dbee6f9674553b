/*-------------------------------------------------------------------------
 *
 * tr_gpu.c
 *	  Finding a GPU backend and the row-major helpers the GPU families use.
 *
 * The CUDA backend is loaded with dlopen() from the directory of the
 * trainer executable (the build tree, or PostgreSQL's bin directory after
 * make install) or from PostgreSQL's library directory.  Anything that
 * goes wrong (no backend built, cuBLAS or the driver missing, no device)
 * only means "no GPU": the probe reports it in words and the CPU path
 * runs.  With EASEML_GPU_EMULATE set the CPU emulation of tr_gpu_host.c
 * stands in for CUDA (tests).
 *
 * IDENTIFICATION
 *	  src/trainer/gpu/tr_gpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer/trainer.h"
#include "core/trainer_protocol.h"
#include "tr_gpu.h"

static const TrGpuOps *backend = NULL;
static char backend_error[TR_ERRLEN];
static int	backend_tried = 0;

/* Try one path; 1 when the backend was loaded, 0 if absent, -1 if broken. */
static int
TryLoad(const char *path)
{
	void	   *handle;
	TrGpuEntry	entry;
	const TrGpuOps *ops;

	if (access(path, R_OK) != 0)
		return 0;
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
	{
		snprintf(backend_error, sizeof(backend_error),
				 "the CUDA backend \"%s\" could not be loaded: %s", path, dlerror());
		return -1;
	}
	entry = (TrGpuEntry) dlsym(handle, TR_GPU_ENTRY);
	ops = entry ? entry(TR_GPU_ABI) : NULL;
	if (ops == NULL || ops->abi != TR_GPU_ABI)
	{
		snprintf(backend_error, sizeof(backend_error),
				 "the CUDA backend \"%s\" does not match this trainer (ABI %d)",
				 path, TR_GPU_ABI);
		dlclose(handle);
		return -1;
	}
	backend = ops;
	return 1;
}

/* The backend, loaded on first use; NULL with backend_error set if none. */
static const TrGpuOps *
Backend(void)
{
	char		exe[PATH_MAX];
	ssize_t		n;

	if (backend_tried)
		return backend;
	backend_tried = 1;
	if (getenv(TR_GPU_ENV_EMULATE) != NULL)
	{
		backend = TrGpuHostOps();
		return backend;
	}
	snprintf(backend_error, sizeof(backend_error),
			 "no CUDA backend: easeml was built without nvcc");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0)
	{
		char		path[PATH_MAX + sizeof(TR_GPU_LIBRARY)];
		char	   *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL)
		{
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/%s", exe, TR_GPU_LIBRARY);
			if (TryLoad(path) != 0)
				return backend;
		}
	}
#ifdef TR_GPU_LIBDIR
	(void) TryLoad(TR_GPU_LIBDIR "/" TR_GPU_LIBRARY);
#endif
	return backend;
}

/*
 * The GPUs this process may use (after CUDA_VISIBLE_DEVICES), or 0 with
 * the reason in why.  When there are some, why names the backend.
 */
int
TrGpuProbe(TrGpuInfo *info, int max, char *why, size_t whylen)
{
	const TrGpuOps *ops = Backend();
	int			n;

	if (ops == NULL)
	{
		snprintf(why, whylen, "%s", backend_error);
		return 0;
	}
	n = ops->count(info, max, why, whylen);
	if (n > 0)
		snprintf(why, whylen, "%s", ops->name);
	return n < 0 ? 0 : n;
}

/*
 * The backend with the run's GPU selected (the first visible one), or
 * NULL with the reason in err; *oom is set when the device had no memory
 * left even for the backend's own handles.
 */
const TrGpuOps *
TrGpuOpen(char *err, size_t errlen, int *oom)
{
	const TrGpuOps *ops = Backend();
	int			rc;

	*oom = 0;
	if (ops == NULL)
	{
		snprintf(err, errlen, "%s", backend_error);
		return NULL;
	}
	rc = ops->init(0, err, errlen);
	if (rc != TR_GPU_OK)
	{
		*oom = rc == TR_GPU_OOM;
		return NULL;
	}
	return ops;
}

/* Release the device's handles. */
void
TrGpuClose(const TrGpuOps *ops)
{
	if (ops != NULL)
		ops->shutdown();
}

/*
 * Row-major C (m x n) = alpha op(A) op(B) + beta C on the device, with
 * op(A) m x k and op(B) k x n, as cblas_sgemm(CblasRowMajor, ...).  A
 * row-major matrix is the transpose of the column-major matrix in the same
 * memory, so this is the column-major product C^T = op(B)^T op(A)^T: the
 * operands swap places and keep their transpose flags.
 */
int
TrGemm(const TrGpuOps *g, int ta, int tb, int m, int n, int k, float alpha,
	   const float *A, int lda, const float *B, int ldb, float beta,
	   float *C, int ldc)
{
	return g->sgemm(tb, ta, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc);
}

/*
 * out[j] = sum_i D[i][j] for a row-major rows x cols matrix D, given a
 * device vector of rows ones: in column-major terms out = D^T ones with
 * D^T the cols x rows matrix in D's memory.
 */
int
TrColSums(const TrGpuOps *g, const float *D, int rows, int cols,
		  const float *ones, float *out)
{
	return g->sgemv(0, cols, rows, 1.0f, D, cols, ones, 0.0f, out);
}

/* Start tracking the buffers of one fit. */
void
TrGpuMemInit(TrGpuMem *mem, const TrGpuOps *g)
{
	memset(mem, 0, sizeof(*mem));
	mem->g = g;
	mem->status = TR_GPU_OK;
}

/* A device buffer of bytes, or NULL once anything failed. */
void *
TrGpuAlloc(TrGpuMem *mem, size_t bytes)
{
	void	   *p = NULL;

	if (mem->status != TR_GPU_OK)
		return NULL;
	if (mem->n == TR_GPU_MAX_BUFFERS)
	{
		mem->status = TR_GPU_ERROR;
		return NULL;
	}
	mem->status = mem->g->alloc(&p, bytes > 0 ? bytes : 1);
	if (mem->status != TR_GPU_OK)
		return NULL;
	mem->ptr[mem->n++] = p;
	return p;
}

/* A device copy of host memory, or NULL once anything failed. */
void *
TrGpuUpload(TrGpuMem *mem, const void *host, size_t bytes)
{
	void	   *p = TrGpuAlloc(mem, bytes);

	if (p != NULL && bytes > 0 && (mem->status = mem->g->upload(p, host, bytes)) != TR_GPU_OK)
		return NULL;
	return p;
}

/* Free every buffer of the fit. */
void
TrGpuMemFree(TrGpuMem *mem)
{
	for (int i = mem->n - 1; i >= 0; i--)
		mem->g->release(mem->ptr[i]);
	mem->n = 0;
}

/*
 * Turn a failed GPU operation into the fit's error: out of device memory
 * (the scheduler then places the candidate elsewhere) or the device being
 * unusable.  Returns -1.
 */
int
TrGpuFailed(const TrGpuOps *g, int rc, const char *family, TrResult *res)
{
	if (rc == TR_GPU_OOM)
	{
		TrSetError(res, "%s: out of GPU memory (%s)", family, g->error());
		res->exit_code = EASEML_EXIT_DEVICE_OOM;
	}
	else
	{
		TrSetError(res, "%s: the GPU failed (%s)", family, g->error());
		res->exit_code = EASEML_EXIT_DEVICE_UNAVAILABLE;
	}
	return -1;
}
