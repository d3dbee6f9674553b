/*-------------------------------------------------------------------------
 *
 * test_placement.c
 *	  Unit tests of device placement (src/core/placement.c), alone and in
 *	  decisions.
 *
 * IDENTIFICATION
 *	  src/core/test/test_placement.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gp.h"
#include "core/policy.h"
#include "core/decision.h"
#include "core/placement.h"
#include "test.h"

/*
 * Device placement (DecisionSetPlacement): an arm no free device can run
 * now is never chosen, reopening it brings it back, nothing is chosen
 * when every arm is closed, and the chosen arm's cost is its estimate
 * times the factor of the device kind it gets.
 */
void
TestDecisionPlacement(void)
{
	const int	K = 3;
	double		mu[3] = {0.5, 0.5, 0.5};
	unsigned char open[3] = {0, 1, 1};
	unsigned char closed[3] = {0, 0, 0};
	double		factor[3] = {1.0, 1.0, 0.25};
	GpPrior		prior;
	DecisionWorld w;
	DecisionChoice c;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "fifo", 1);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	(void) AddTask(&w, 10, 0, NULL);
	CHECK(DecisionSetPlacement(&w, open, factor) == 0, "placement set");
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 1,
		  "placement: the closed arm 0 is skipped (got %d)", c.chosen.arm);
	open[1] = 0;
	DecisionSetPlacement(&w, open, factor);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 2 && fabs(c.chosen.cost - 0.25) < 1e-12,
		  "placement: arm 2 at its placed cost 0.25 (got arm %d cost %g)",
		  c.chosen.arm, c.chosen.cost);
	DecisionSetPlacement(&w, closed, factor);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task == -1,
		  "placement: nothing runs when every arm is closed");
	DecisionSetPlacement(&w, NULL, NULL);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 0 && fabs(c.chosen.cost - 1.0) < 1e-12,
		  "placement: without placement arm 0 again, at its own cost (got arm %d cost %g)",
		  c.chosen.arm, c.chosen.cost);
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Placement (src/core/placement.c): the first preferred kind with a free
 * device wins, the freest device of that kind is chosen, banned devices
 * are skipped, and nothing is placed when no allowed device is free.
 */
void
TestPlacement(void)
{
	PlaceDevice devs[4] = {
		{PLACE_KIND_CUDA, 1}, {PLACE_KIND_CUDA, 2}, {PLACE_KIND_CPU, 3}, {PLACE_KIND_CUDA, 0}
	};
	PlaceKind	gpu_first[2] = {PLACE_KIND_CUDA, PLACE_KIND_CPU};
	PlaceKind	cpu_only[1] = {PLACE_KIND_CPU};
	PlaceKind	gpu_only[1] = {PLACE_KIND_CUDA};
	unsigned char banned[4] = {0, 1, 0, 0};

	CHECK(PlacementChoose(devs, 4, gpu_first, 2, NULL) == 1,
		  "a GPU-capable candidate takes the GPU with the most free slots");
	CHECK(PlacementChoose(devs, 4, cpu_only, 1, NULL) == 2, "a CPU candidate takes the CPU");
	CHECK(PlacementChoose(devs, 4, gpu_first, 2, banned) == 0,
		  "a device the candidate ran out of memory on is skipped");
	devs[0].free = 0;
	devs[1].free = 0;
	CHECK(PlacementChoose(devs, 4, gpu_first, 2, NULL) == 2,
		  "with no GPU free, a GPU-capable candidate runs on the CPU");
	CHECK(PlacementChoose(devs, 4, gpu_only, 1, NULL) == -1,
		  "a GPU-only candidate waits when no GPU is free");
	CHECK(PlacementChoose(devs, 3, gpu_first, 2, NULL) == 2, "no GPU present: the CPU");
	devs[2].free = 0;
	CHECK(PlacementChoose(devs, 4, gpu_first, 2, NULL) == -1, "nothing free: no device");
	CHECK(PlacementChoose(devs, 0, cpu_only, 1, NULL) == -1, "no devices: no device");
	CHECK(PlaceKindFromName("cuda") == PLACE_KIND_CUDA && PlaceKindFromName("cpu") == PLACE_KIND_CPU &&
		  PlaceKindFromName("tpu") == -1 && PlaceKindFromName(NULL) == -1, "kind names");
	CHECK(strcmp(PlaceKindName(PLACE_KIND_CUDA), "cuda") == 0 &&
		  strcmp(PlaceKindName(PLACE_KIND_CPU), "cpu") == 0, "kind names back");
}
