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
 * Cap.  EASEML_ENV_MEMORY_LIMIT (bytes) becomes RLIMIT_DATA before
 * anything large is allocated.  RLIMIT_DATA counts private writable
 * mappings (heap, anonymous mmap) but not address space reserved without
 * access, which the CUDA driver and OpenBLAS reserve in large amounts, so
 * it caps what the trainer uses rather than what it maps (RLIMIT_AS would
 * refuse a CUDA context outright).  An allocation over the cap returns
 * NULL; the trainer's allocation calls go through TrNoteAllocation
 * (tr_main.c wraps malloc, calloc, realloc and the aligned allocators of
 * easeml-trainer) so the run can tell the scheduler that the cap, not a
 * bug, ended it (EASEML_EXIT_MEMORY_LIMIT).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_memory.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "trainer.h"
#include "trainer_protocol.h"

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

int
TrMemoryLimitApply(const char *value, char *err, size_t errlen)
{
	unsigned long long bytes;
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
	if (getrlimit(RLIMIT_DATA, &rl) != 0)
		rl.rlim_max = RLIM_INFINITY;
	/* an unprivileged process cannot raise its hard limit: keep the lower */
	if (rl.rlim_max != RLIM_INFINITY && (rlim_t) bytes > rl.rlim_max)
		bytes = rl.rlim_max;
	rl.rlim_cur = (rlim_t) bytes;
	if (setrlimit(RLIMIT_DATA, &rl) != 0)
	{
		snprintf(err, errlen, "could not set the memory limit of %llu bytes: %s",
				 bytes, strerror(errno));
		return -1;
	}
	memory_limit = bytes;
	return 0;
}
