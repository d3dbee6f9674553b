/*-------------------------------------------------------------------------
 *
 * tr_test.h
 *	  What the trainer's unit test files share: the TAP check and the
 *	  test entry points that tr_test.c's main calls.
 *
 * IDENTIFICATION
 *	  src/trainer/test/tr_test.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef TR_TEST_H
#define TR_TEST_H

#include <stdio.h>

extern int	test_no;
extern int	failures;

/* One TAP line: "ok N - message" or "not ok N - message". */
#define CHECK(cond, ...) \
	do { \
		test_no++; \
		if (cond) \
			printf("ok %d - ", test_no); \
		else \
		{ \
			failures++; \
			printf("not ok %d - ", test_no); \
		} \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} while (0)

extern void TestData(void);		/* data_test.c */
extern void TestPredict(void);	/* predict_test.c */
extern void TestRows(void);		/* rows_test.c */
extern void TestGemm(void);		/* gemm_test.c */
extern void TestEnsemble(void);	/* ensemble_test.c */

#endif							/* TR_TEST_H */
