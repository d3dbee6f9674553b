/*-------------------------------------------------------------------------
 *
 * tr_memory.c
 *	  The trainer's memory: its own peak resident set, and the cap the
 *	  scheduler sets on it (easeml.trainer_memory_limit).
 *
 * Peak.  A process started with posix_spawn (or fork and exec) inherits
 * its parent's high-water mark in getrusage()'s ru_maxrss: Linux keeps
 * the larger of the old and the new address space's peaks across exec, so
 * a small trainer would report the scheduler's own peak.  VmHWM in
 * /proc/self/status is the peak of this address space alone, which exec
 * made new: that is the trainer's own, wherever it runs (a Slurm node too).
 *
 * Cap.  EASEML_ENV_MEMORY_LIMIT (bytes) is what the trainer may allocate
 * beyond its start-up footprint (its libraries, a CUDA context); it
 * becomes RLIMIT_DATA (the footprint plus the cap) before the rows are
 * loaded.  RLIMIT_DATA counts private writable mappings (heap, anonymous
 * mmap, thread stacks) but not address space reserved without access,
 * which the CUDA driver reserves in large amounts (RLIMIT_AS would refuse
 * a CUDA context outright).  OpenBLAS mallocs a buffer of 128 MB of
 * address space (mostly never touched) for each thread of its first large
 * product, and when that malloc fails it retries for ever: its buffers are
 * reserved first, one per BLAS thread and one more, so that they are part
 * of the footprint and never hit the cap.  An allocation over the cap
 * returns NULL; the trainer's allocation calls go through TrNoteAllocation
 * (tr_main.c wraps malloc, calloc, realloc and aligned_alloc for
 * easeml-trainer) so the run can tell the scheduler that the cap, not a
 * bug, ended it (EASEML_EXIT_MEMORY_LIMIT).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_memory.c
 *
 *-------------------------------------------------------------------------
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "trainer.h"
#include "core/trainer_protocol.h"

/* bytes of the cap in effect, 0: none */
static unsigned long long memory_limit = 0;
/* an allocation failed while the cap was in effect */
static volatile int allocation_failed = 0;

void
TrNoteAllocation(const void *p, size_t size)
{
	if (p == NULL && size > 0 && memory_limit > 0)
		allocation_failed = 1;
}

int
TrMemoryLimitHit(void)
{
	return allocation_failed;
}

unsigned long long
TrMemoryLimit(void)
{
	return memory_limit;
}

long long
TrPeakRssBytes(void)
{
	FILE	   *f = fopen("/proc/self/status", "r");
	char		line[256];
	long long	kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmHWM:", 6) == 0)
		{
			kb = strtoll(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kb >= 0 ? kb * 1024 : -1;
}

/* The data segment's size now (VmData), in bytes; -1 if unknown. */
static long long
DataBytes(void)
{
	FILE	   *f = fopen("/proc/self/status", "r");
	char		line[256];
	long long	kb = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmData:", 7) == 0)
		{
			kb = strtoll(line + 7, NULL, 10);
			break;
		}
	fclose(f);
	return kb >= 0 ? kb * 1024 : -1;
}

/*
 * Make OpenBLAS take its buffers now (one per thread and one more): it
 * keeps them in its pool when they are released, and its later products
 * reuse them.  Nothing to do with another BLAS.
 */
static void
ReserveBlasBuffers(int threads)
{
	void	   *(*alloc) (int) = (void *(*) (int)) dlsym(RTLD_DEFAULT, "blas_memory_alloc");
	void		(*release) (void *) = (void (*) (void *)) dlsym(RTLD_DEFAULT, "blas_memory_free");
	void	   *buffers[65];
	int			n = 0;

	if (alloc == NULL || release == NULL)
		return;
	threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
	for (int i = 0; i <= threads; i++)
		if ((buffers[n] = alloc(0)) != NULL)
			n++;
	for (int i = 0; i < n; i++)
		release(buffers[i]);
}

int
TrMemoryLimitApply(const char *value, int threads, char *err, size_t errlen)
{
	unsigned long long bytes;
	long long	footprint;
	char	   *end;
	struct rlimit rl;

	if (value == NULL || value[0] == '\0')
		return 0;
	errno = 0;
	bytes = strtoull(value, &end, 10);
	if (errno != 0 || *end != '\0' || value[0] == '-')
	{
		snprintf(err, errlen, "%s is not a number of bytes: \"%s\"",
				 EASEML_ENV_MEMORY_LIMIT, value);
		return -1;
	}
	if (bytes == 0)
		return 0;
	ReserveBlasBuffers(threads);
	footprint = DataBytes();
	if (footprint < 0)
		footprint = 0;
	if (getrlimit(RLIMIT_DATA, &rl) != 0)
		rl.rlim_max = RLIM_INFINITY;
	rl.rlim_cur = (rlim_t) (bytes + (unsigned long long) footprint);
	/* an unprivileged process cannot raise its hard limit: keep the lower */
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_DATA, &rl) != 0)
	{
		snprintf(err, errlen, "could not set the memory limit of %llu bytes: %s",
				 bytes, strerror(errno));
		return -1;
	}
	memory_limit = bytes;
	return 0;
}
