/*-------------------------------------------------------------------------
 *
 * tr_probe.c
 *	  easeml-trainer --probe: list the devices this machine offers, as one
 *	  JSON object on stdout, for the scheduler's easeml.devices.
 *
 *	  {"protocol": 1,
 *	   "devices": [{"name": "cpu", "kind": "cpu", "ordinal": 0,
 *					"memory": <bytes>, "description": "..."},
 *				   {"name": "cuda:0", "kind": "cuda", ...}],
 *	   "cuda": "<why there is no GPU, or the backend's version>"}
 *
 * The CPU is always listed.  GPUs are listed only when the CUDA backend
 * loads and the driver reports devices (src/trainer/gpu/tr_gpu.c); any failure
 * there means "no GPU", never a failed probe.  The probe is the only
 * place besides a GPU run where the trainer touches CUDA, and it runs in
 * its own short-lived process (the scheduler never initialises CUDA).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_probe.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <unistd.h>

#include "trainer.h"
#include "trainer/gpu/tr_gpu.h"
#include "core/trainer_protocol.h"

/* Add the CPU: all cores, physical memory. */
static void
AddCpu(json_object *list)
{
	json_object *d = json_object_new_object();
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page = sysconf(_SC_PAGESIZE);
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	char		desc[64];

	snprintf(desc, sizeof(desc), "%ld CPU core%s", cores, cores == 1 ? "" : "s");
	json_object_object_add(d, "name", json_object_new_string(EASEML_KIND_CPU));
	json_object_object_add(d, "kind", json_object_new_string(EASEML_KIND_CPU));
	json_object_object_add(d, "ordinal", json_object_new_int(0));
	if (pages > 0 && page > 0)
		json_object_object_add(d, "memory", json_object_new_int64((int64_t) pages * page));
	json_object_object_add(d, "description", json_object_new_string(desc));
	json_object_array_add(list, d);
}

/* Add every GPU the CUDA backend reports; returns why there is none. */
static const char *
AddGpus(json_object *list)
{
	TrGpuInfo	info[TR_GPU_MAX_DEVICES];
	static char why[TR_ERRLEN];
	int			n = TrGpuProbe(info, TR_GPU_MAX_DEVICES, why, sizeof(why));

	for (int i = 0; i < n; i++)
	{
		json_object *d = json_object_new_object();
		char		name[32];
		char		desc[TR_GPU_NAME_LEN + 64];

		snprintf(name, sizeof(name), "%s:%d", EASEML_KIND_CUDA, info[i].ordinal);
		snprintf(desc, sizeof(desc), "%.*s, compute capability %d.%d",
				 TR_GPU_NAME_LEN - 1, info[i].name, info[i].major, info[i].minor);
		json_object_object_add(d, "name", json_object_new_string(name));
		json_object_object_add(d, "kind", json_object_new_string(EASEML_KIND_CUDA));
		json_object_object_add(d, "ordinal", json_object_new_int(info[i].ordinal));
		json_object_object_add(d, "memory", json_object_new_int64((int64_t) info[i].memory));
		json_object_object_add(d, "description", json_object_new_string(desc));
		json_object_array_add(list, d);
	}
	return why;
}

/* The probe mode's main: exit 0 with the JSON, whatever the GPUs say. */
int
TrProbeMain(void)
{
	json_object *out = json_object_new_object();
	json_object *list = json_object_new_array();
	const char *cuda;

	AddCpu(list);
	cuda = AddGpus(list);
	json_object_object_add(out, "protocol", json_object_new_int(EASEML_PROTOCOL_VERSION));
	json_object_object_add(out, "devices", list);
	json_object_object_add(out, "cuda", json_object_new_string(cuda));
	printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
	json_object_put(out);
	return fflush(stdout) == 0 ? EASEML_EXIT_OK : EASEML_EXIT_FAILED;
}
