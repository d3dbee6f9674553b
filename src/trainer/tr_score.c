/*-------------------------------------------------------------------------
 *
 * tr_score.c
 *	  Score a fit's validation rows through the predict module: load the
 *	  artifact the fit returned (tr_predict.h), encode each validation row
 *	  from the raw table with the artifact's own encoders, predict, and
 *	  compute every metric from the predictions and class probabilities.
 *
 * This is what easeml.predict() does with the same artifact in the server,
 * so the recorded score is the score of the stored model as the server
 * applies it: trainer and backend cannot disagree.
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
#include "tr_predict.h"
#include "tr_score.h"

/* the validation rows' features, encoded from the raw table by m */
static float *
EncodeValidation(const TrModel *m, const TrTable *tab, const TrData *data)
{
	float	   *X = malloc(sizeof(float) * ((size_t) data->n_val * m->d + 1));
	const char **str = malloc(sizeof(char *) * (tab->d + 1));
	size_t	   *lens = malloc(sizeof(size_t) * (tab->d + 1));
	double	   *row = malloc(sizeof(double) * (tab->d + 1));

	if (X == NULL || str == NULL || lens == NULL || row == NULL)
	{
		free(X);
		X = NULL;
		goto done;
	}
	for (int i = 0; i < data->n_val; i++)
	{
		for (int j = 0; j < tab->d; j++)
			row[j] = TrCell(tab, data->rows_va[i], j);
		for (int j = 0; j < tab->d; j++)
		{
			str[j] = NULL;
			if (tab->col_kind != NULL && tab->col_kind[j] == TR_COL_CATEGORICAL)
				str[j] = TrCategoryValue(tab, j, row[j]);
			lens[j] = str[j] ? strlen(str[j]) : 0;
		}
		(void) TrModelEncode(m, row, str, lens, X + (size_t) i * m->d);
	}
done:
	free(str);
	free(lens);
	free(row);
	return X;
}

/* metrics of the predictions out (n_val x n_out) */
static int
Metrics(const TrModel *m, const TrData *data, const double *out, TrMetrics *fm)
{
	int			n = data->n_val;

	if (m->kind == TR_KIND_REGRESSION)
	{
		TrRegressionMetrics(n, data->tva, out, fm);
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
		free(pred);
	}
	return 0;
}

int
TrScoreValidation(const TrTable *tab, const TrData *data, const TrResult *res,
				  TrMetrics *fm, char *err, size_t errlen)
{
	TrModel    *m;
	float	   *X = NULL;
	double	   *out = NULL;
	int			rc,
				taken;

	if (res->artifact == NULL)
		return 0;
	rc = TrModelLoad(res->artifact, res->artifact_len, &m, err, errlen);
	if (rc == TR_ART_UNSUPPORTED)
		return 0;				/* a custom trainer's blob: its own score */
	if (rc != TR_ART_OK)
		return -1;
	if (m->n_raw != tab->d || m->kind != data->kind || m->n_classes != data->n_classes)
	{
		snprintf(err, errlen, "the artifact reads %d columns, the table has %d", m->n_raw, tab->d);
		TrModelFree(m);
		return -1;
	}
	rc = -1;
	taken = tab->rows != NULL && tab->rows->taken;

	/*
	 * When TrPrepare took the table's rows (TrPrepOptions.take_rows), the
	 * raw validation rows are gone: their features are data->Xva, which the
	 * same encoders wrote through the same EncApply().
	 */
	if (taken)
	{
		if (m->d != data->d)
		{
			snprintf(err, errlen, "the artifact makes %d features, the data has %d", m->d, data->d);
			TrModelFree(m);
			return -1;
		}
		X = NULL;
	}
	else
		X = EncodeValidation(m, tab, data);
	out = malloc(sizeof(double) * ((size_t) data->n_val * m->n_out + 1));
	if ((X == NULL && !taken) || out == NULL ||
		TrModelPredict(m, X ? X : data->Xva, data->n_val, out) != TR_ART_OK ||
		Metrics(m, data, out, fm) != 0)
		snprintf(err, errlen, "out of memory scoring %d validation rows", data->n_val);
	else
		rc = 1;
	free(X);
	free(out);
	TrModelFree(m);
	return rc;
}
