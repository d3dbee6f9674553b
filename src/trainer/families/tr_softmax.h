/*-------------------------------------------------------------------------
 *
 * tr_softmax.h
 *	  The softmax family's objective on a GPU (src/trainer/gpu/tr_softmax_gpu.c),
 *	  used by the L-BFGS fit of tr_softmax.c in place of its CPU evaluation.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_softmax.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_SOFTMAX_H
#define EASEML_TR_SOFTMAX_H

#include "trainer/trainer.h"
#include "trainer/gpu/tr_gpu.h"

typedef struct SoftmaxDev SoftmaxDev;

extern SoftmaxDev *SoftmaxDevBegin(const TrGpuOps *g, const TrData *data, int k,
								   int *status);
extern double SoftmaxDevEval(SoftmaxDev *s, const double *theta, double l2,
							 double *grad);
extern int	SoftmaxDevPredict(SoftmaxDev *s, const double *theta, int nclass,
							  int *pred);
extern int	SoftmaxDevStatus(const SoftmaxDev *s);
extern void SoftmaxDevEnd(SoftmaxDev *s);

#endif							/* EASEML_TR_SOFTMAX_H */
