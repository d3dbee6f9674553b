/*-------------------------------------------------------------------------
 *
 * tr_cnn.h
 *	  What the cnn family's CPU fit (tr_cnn.c) and GPU fit (tr_cnn_gpu.c)
 *	  share: the network's shapes and parameter layout, its
 *	  initialisation and the artifact.  Both fits start from the same
 *	  parameters and visit the images in the same order.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_cnn.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_CNN_H
#define EASEML_TR_CNN_H

#include "trainer/trainer.h"

#define CNN_MAX_CONV 4

/* One conv + ReLU + 2 x 2 max pool block. */
typedef struct CnnBlock
{
	int			h;				/* input height, width, channels */
	int			w;
	int			cin;
	int			cout;
	int			ph;				/* pooled output height, width */
	int			pw;
	size_t		woff;			/* filter (k*k*cin) x cout in theta */
	size_t		boff;
} CnnBlock;

typedef struct CnnPlan
{
	int			k;				/* kernel size */
	int			nconv;
	int			filters[CNN_MAX_CONV];
	CnnBlock	conv[CNN_MAX_CONV];
	int			flat;			/* features after the last pool */
	int			hidden;			/* dense hidden units, 0 = none */
	int			nout;
	size_t		w1off,
				b1off,
				w2off,
				b2off;
	size_t		np;
	size_t		maxcols;		/* largest im2col matrix per image */
	size_t		maxz;			/* largest conv output per image */
	int			epochs;
	int			batch;
	float		lr;
	float		l2;
} CnnPlan;

extern int	CnnPlanFrom(const TrContext *ctx, CnnPlan *p, TrResult *res);
extern void CnnInitTheta(const CnnPlan *p, float *theta, uint64_t *rng);
extern int	CnnEpochEnd(const TrContext *ctx, int epoch, double loss_sum,
						TrResult *res);
extern int	CnnKeepArtifact(const CnnPlan *p, const float *theta,
							const TrData *data, TrResult *res);

/* tr_cnn_gpu.c */
extern int	CnnFitGpu(const TrContext *ctx, TrResult *res);

#endif							/* EASEML_TR_CNN_H */
