/*-------------------------------------------------------------------------
 *
 * tr_score.h
 *	  The trainer's validation scoring through the predict module
 *	  (tr_score.c).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_score.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_SCORE_H
#define EASEML_TR_SCORE_H

#include "trainer.h"
#include "tr_metrics.h"

/*
 * Every metric of the validation rows of data, predicted from the
 * artifact in res.  1 when scored, 0 when there is nothing the predict
 * module can apply (no artifact, or a custom trainer's opaque blob), -1
 * with err set when the artifact cannot be applied.
 */
extern int	TrScoreValidation(const TrData *data, const TrResult *res,
							  TrMetrics *fm, char *err, size_t errlen);

/* the same, and with keep the validation predictions into res->predictions */
extern int	TrScoreValidationKeep(const TrData *data, TrResult *res, TrMetrics *fm,
								  int keep, char *err, size_t errlen);

#endif							/* EASEML_TR_SCORE_H */
