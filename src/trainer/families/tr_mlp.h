/*-------------------------------------------------------------------------
 *
 * tr_mlp.h
 *	  What the mlp family's CPU fit (tr_mlp.c) and GPU fit (tr_mlp_gpu.c)
 *	  share: the network's shape and parameter layout, its initialisation,
 *	  the end-of-epoch bookkeeping, the scores and the artifact.  Both fits
 *	  start from the same parameters and visit the rows in the same order,
 *	  so for the same seed they train the same model.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_mlp.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_MLP_H
#define EASEML_TR_MLP_H

#include "trainer/trainer.h"

#define MLP_MAX_LAYERS 5		/* hidden layers + output */
#define MLP_EVAL_BATCH 1024

typedef struct MlpPlan
{
	int			nl;				/* weight layers (hidden + 1) */
	int			size[MLP_MAX_LAYERS + 1];	/* size[0] = d, size[nl] = out */
	size_t		woff[MLP_MAX_LAYERS];	/* offsets of W_l and b_l in theta */
	size_t		boff[MLP_MAX_LAYERS];
	size_t		np;				/* number of parameters */
	int			widest;			/* largest layer */
	int			regression;
	int			batch;
	int			epochs;
	float		lr;
	float		l2;
	double		tol;
	int			patience;
	/* regression targets are standardised inside the model */
	double		tmean;
	double		tsd;
	/* the stopping rule's state */
	double		best_loss;
	int			stall;
} MlpPlan;

extern int	MlpPlanFrom(const TrContext *ctx, MlpPlan *p, TrResult *res);
extern void MlpInitTheta(const MlpPlan *p, float *theta, uint64_t *rng);
extern int	MlpTargets(MlpPlan *p, const TrData *data, double *tstd);
extern int	MlpEpochEnd(MlpPlan *p, const TrContext *ctx, int epoch,
						double loss_sum, double reg, TrResult *res);
extern void MlpDecode(const MlpPlan *p, const float *Z, int rows, int *pred,
					  double *tpred);
extern void MlpScore(const MlpPlan *p, const TrData *data, const int *pred,
					 const double *tpred, TrResult *res);
extern int	MlpKeepArtifact(const MlpPlan *p, const float *theta,
							const TrData *data, TrResult *res);

/* tr_mlp_gpu.c */
extern int	MlpFitGpu(const TrContext *ctx, TrResult *res);

#endif							/* EASEML_TR_MLP_H */
