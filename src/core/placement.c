/*-------------------------------------------------------------------------
 *
 * placement.c
 *	  Choosing the device for a run.
 *
 * A candidate lists the device kinds it can use in order of preference
 * (easeml.models.device_kinds: the GPU-capable built-in families list
 * cuda, then cpu).  It goes to the first kind that has a device with a
 * free slot, skipping devices that failed this candidate of this task
 * before (out of memory, unusable); within a kind, to the device with the most free
 * slots, so that runs spread over several GPUs.  A GPU-capable candidate
 * therefore runs on the CPU only while no GPU is free or present.
 *
 * The scheduler asks this for every candidate before each decision, so
 * the policy only ever picks a candidate that can start now
 * (src/worker/devices.c); a launcher other than the local one (a cluster
 * manager's partitions) is just more devices here.
 *
 * IDENTIFICATION
 *	  src/core/placement.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "placement.h"

/* The kind called name ("cpu", "cuda"), or -1. */
int
PlaceKindFromName(const char *name)
{
	if (name == NULL)
		return -1;
	if (strcmp(name, "cpu") == 0)
		return PLACE_KIND_CPU;
	if (strcmp(name, "cuda") == 0)
		return PLACE_KIND_CUDA;
	return -1;
}

/* The SQL name of a kind. */
const char *
PlaceKindName(PlaceKind kind)
{
	return kind == PLACE_KIND_CUDA ? "cuda" : "cpu";
}

/*
 * The device for a candidate whose kinds are kinds[0..n_kinds-1] (most
 * preferred first), or -1 when none of them has a free slot now.  banned
 * (NULL: none) marks devices the candidate must not use.
 */
int
PlacementChoose(const PlaceDevice *devices, int n_devices,
				const PlaceKind *kinds, int n_kinds,
				const unsigned char *banned)
{
	for (int k = 0; k < n_kinds; k++)
	{
		int			best = -1;

		for (int d = 0; d < n_devices; d++)
		{
			if (devices[d].kind != kinds[k] || devices[d].free <= 0)
				continue;
			if (banned != NULL && banned[d])
				continue;
			if (best < 0 || devices[d].free > devices[best].free)
				best = d;
		}
		if (best >= 0)
			return best;
	}
	return -1;
}
