/*-------------------------------------------------------------------------
 *
 * test_memory.c
 *	  Unit tests of the floor on a candidate's memory (src/core/memmodel.c),
 *	  which keeps candidates over easeml.trainer_memory_limit off a task.
 *
 * IDENTIFICATION
 *	  src/core/test/test_memory.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <string.h>

#include "core/memmodel.h"
#include "test.h"

void
TestMemoryModel(void)
{
	MemArm		rf200 = {"random_forest", 200, 0, 1};
	MemArm		rf200_d4 = {"random_forest", 200, 4, 1};
	MemArm		gbt = {"gbt", 100, 0, 1};
	MemArm		mlp = {"mlp", 100, 0, 1};
	double		gb = 1024.0 * 1024 * 1024;
	double		b;

	/* issue 22: 20,000 rows, 10,000 classes, rf-200-half reached 5.1 GB after 15 trees */
	b = MemEstimateBytes(&rf200, 20000, 16, 10000, true);
	CHECK(b > 30 * gb, "the 10,000-class forest needs tens of GB: %.3g GB", b / gb);
	/* 15 of its trees were measured at 5.1 GB: the floor stays below that */
	CHECK(b * 15 / 200 < 5.1e9, "the floor is below what 15 trees measured: %.3g GB",
		  b * 15 / 200 / gb);

	/* iris-sized tasks need next to nothing beyond their rows */
	b = MemEstimateBytes(&rf200, 150, 4, 3, true);
	CHECK(b < 1024 * 1024, "iris rf-200: %.0f bytes", b);
	CHECK(MemEstimateBytes(&mlp, 150, 4, 3, true) == 150 * 4 * 4,
		  "a family without a model floor counts its float32 rows");

	/* a depth limit bounds the leaves */
	CHECK(MemEstimateBytes(&rf200_d4, 20000, 16, 10000, true) <
		  MemEstimateBytes(&rf200, 20000, 16, 10000, true) / 100,
		  "max_depth 4 keeps 16 leaves per tree");

	/* gbt keeps scores, gradients and hessians per row and class */
	b = MemEstimateBytes(&gbt, 20000, 16, 10000, true);
	CHECK(b >= 3.0 * 10000 * 10000 * 8, "gbt on 10,000 classes: %.3g GB", b / gb);
	CHECK(MemEstimateBytes(&gbt, 20000, 16, 2, true) < 2e6,
		  "binary gbt keeps one column: %.0f", MemEstimateBytes(&gbt, 20000, 16, 2, true));

	/* nothing known: nothing refused */
	CHECK(MemEstimateBytes(&rf200, 0, 16, 3, true) == 0 &&
		  MemEstimateBytes(&rf200, NAN, 16, 3, true) == 0, "no rows: 0");
}
