/*-------------------------------------------------------------------------
 *
 * tr_score.c
 *	  Score a fit's validation rows through the predict module: load the
 *	  artifact the fit returned (tr_predict.h), predict the validation rows
 *	  with it, and compute every metric from the predictions and class
 *	  probabilities, each with its standard error (tr_metrics_se.c).
 *
 * The validation rows were encoded by TrPrepare() with EncApply() and the
 * very encoders the artifact stores, which is how easeml.predict() encodes
 * a row in the server (TrModelEncode); the raw rows may be gone by now (the
 * live trainer prepares in place).  So the recorded score is the score of
 * the stored model as the server applies it: trainer and backend cannot
 * disagree.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_score.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"
#include "tr_metrics.h"
#include "trainer/predict/tr_predict.h"
#include "tr_score.h"
#include "tr_ensemble.h"

/* metrics of the predictions out (n_val x n_out) */
static int
Metrics(const TrModel *m, const TrData *data, const double *out, TrMetrics *fm)
{
	int			n = data->n_val;

	if (m->kind == TR_KIND_REGRESSION)
	{
		TrRegressionMetrics(n, data->tva, out, fm);
		TrMetricsStandardErrors(n, 0, NULL, NULL, NULL, data->tva, out, fm);
		return 0;
	}
	else
	{
		int		   *pred = malloc(sizeof(int) * (n > 0 ? n : 1));

		if (pred == NULL)
			return -1;
		for (int i = 0; i < n; i++)
			pred[i] = TrModelClass(m, out + (size_t) i * m->n_out);
		TrClassificationMetrics(n, m->n_classes, data->yva, pred, out, fm);
		TrMetricsStandardErrors(n, m->n_classes, data->yva, pred, out, NULL, NULL, fm);
		free(pred);
	}
	return 0;
}

int
TrScoreValidation(const TrData *data, const TrResult *res, TrMetrics *fm,
				  char *err, size_t errlen)
{
	return TrScoreValidationKeep(data, (TrResult *) res, fm, 0, err, errlen);
}

/*
 * As TrScoreValidation; with keep, the predictions also go to
 * res->predictions (tr_ensemble.h), what ensemble selection needs of the
 * run (none when out of memory: the run goes on without them).
 */
int
TrScoreValidationKeep(const TrData *data, TrResult *res, TrMetrics *fm, int keep,
					  char *err, size_t errlen)
{
	TrModel    *m;
	double	   *out;
	int			rc;

	if (res->artifact == NULL)
		return 0;
	rc = TrModelLoad(res->artifact, res->artifact_len, &m, err, errlen);
	if (rc == TR_ART_UNSUPPORTED)
		return 0;				/* a custom trainer's blob: its own score */
	if (rc != TR_ART_OK)
		return -1;
	if (m->d != data->d || m->kind != data->kind || m->n_classes != data->n_classes)
	{
		snprintf(err, errlen, "the artifact reads %d features, the data has %d", m->d, data->d);
		TrModelFree(m);
		return -1;
	}
	rc = -1;
	out = malloc(sizeof(double) * ((size_t) data->n_val * m->n_out + 1));
	if (out == NULL || TrModelPredict(m, data->Xva, data->n_val, out) != TR_ART_OK ||
		Metrics(m, data, out, fm) != 0)
		snprintf(err, errlen, "out of memory scoring %d validation rows", data->n_val);
	else
	{
		rc = 1;
		if (keep && data->rows_va != NULL)
			TrValPredsWrite(data, out, m->n_out, &res->predictions, &res->predictions_len);
	}
	free(out);
	TrModelFree(m);
	return rc;
}
