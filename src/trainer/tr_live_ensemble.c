/*-------------------------------------------------------------------------
 *
 * tr_live_ensemble.c
 *	  An ensemble run in the trainer's live mode (docs/models.md section 8):
 *	  read the members' validation predictions, select, score, store.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_live_ensemble.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/trainer_protocol.h"
#include "tr_ensemble.h"
#include "tr_live.h"
#include "trainer/io/tr_copy.h"

/* the members' validation predictions, read; *nread of them usable */
static int
ReadMembers(LiveCtx *c, TrValPreds **vps, int64_t **ids, double **scores, int *nread)
{
	const char *values[1] = {c->run_id};
	PGresult   *res = PQexecParams(c->conn,
								   "SELECT member::text, score::text, data"
								   "  FROM easeml_trainer.ensemble_members($1)",
								   1, NULL, values, NULL, NULL, 1);
	int			n,
				m = 0;

	*nread = 0;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		LiveFail(c->run_dir, "could not read the members' validation predictions: %s",
			 TrServerMessage(res, c->conn));
		LiveKeepSqlstate(res);
		PQclear(res);
		return LiveLoadFailure(c->conn, NULL);
	}
	n = PQntuples(res);
	*vps = calloc(n + 1, sizeof(TrValPreds));
	*ids = calloc(n + 1, sizeof(int64_t));
	*scores = calloc(n + 1, sizeof(double));
	if (*vps == NULL || *ids == NULL || *scores == NULL)
	{
		PQclear(res);
		return LiveFail(c->run_dir, "out of memory");
	}
	for (int i = 0; i < n; i++)
	{
		char		err[256];

		if (TrValPredsRead((const unsigned char *) PQgetvalue(res, i, 2), PQgetlength(res, i, 2),
						   &(*vps)[m], err, sizeof(err)) != 0)
		{
			LiveLog("run %s: member run %s skipped: %s", c->run_id, PQgetvalue(res, i, 0), err);
			continue;
		}
		/* the best member's rows are the ensemble's (the same split) */
		if (m > 0 && !TrValPredsAligned(&(*vps)[0], &(*vps)[m]))
		{
			LiveLog("run %s: member run %s skipped: scored on other validation rows",
					c->run_id, PQgetvalue(res, i, 0));
			TrValPredsFree(&(*vps)[m]);
			continue;
		}
		(*ids)[m] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		(*scores)[m] = strtod(PQgetvalue(res, i, 1), NULL);
		m++;
	}
	PQclear(res);
	*nread = m;
	return EASEML_EXIT_OK;
}

/*
 * The ensemble's honest score (docs/models.md section 8, "Score"): the
 * metrics fm of out-of-fold predictions, each row's from an ensemble
 * selected on the other folds, into metrics with how it was scored; or,
 * where the rows are too few for 2 folds or a fold's selection fails, of
 * avg (selected on every row), and metrics say why.  The quality of
 * metric is returned.
 */
static double
CrossFitScore(const LiveCtx *c, const TrValPreds *const *use, int m, int metric,
			  int steps, const double *avg, TrMetrics *fm, json_object *metrics)
{
	const TrValPreds *vp = use[0];
	int		   *fold = malloc(sizeof(int) * (vp->n + 1));
	double	   *oof = malloc(sizeof(double) * ((size_t) vp->n * vp->n_out + 1));
	double		fold_q[TR_ENSEMBLE_MAX_FOLDS];
	double		score = NAN;
	int			k = -1,
				rc = -1;
	char		why[512] = "out of memory";

	if (fold != NULL && oof != NULL)
		k = TrEnsembleFolds(vp, TR_ENSEMBLE_FOLDS, TR_ENSEMBLE_FOLD_ROWS, c->opt.seed, fold);
	if (k >= 0 && k < 2)
		snprintf(why, sizeof(why), "%d validation rows, fewer than 2 folds of %d",
				 vp->n, TR_ENSEMBLE_FOLD_ROWS);
	if (k >= 2)
		rc = TrEnsembleCrossFit(use, m, metric, steps, fold, k, oof, fold_q, why, sizeof(why));
	if (rc == 0 && !isfinite(score = TrEnsembleQuality(vp, oof, metric, fm)))
	{
		snprintf(why, sizeof(why), "the %s of the out-of-fold predictions is undefined",
				 TrMetricName(metric));
		rc = -1;
	}
	if (rc == 0)
	{
		json_object *arr = json_object_new_array();

		TrEnsembleErrors(vp, oof, fm);
		for (int f = 0; f < k; f++)
			json_object_array_add(arr, isfinite(fold_q[f]) ?
								  json_object_new_double(fold_q[f]) : NULL);
		json_object_object_add(metrics, "score_method", json_object_new_string("cross_fit"));
		json_object_object_add(metrics, "cross_fit_folds", json_object_new_int(k));
		json_object_object_add(metrics, "cross_fit_fold_scores", arr);
	}
	else
	{
		LiveLog("run %s: the ensemble is scored on the rows it was selected on: %s",
				c->run_id, why);
		score = TrEnsembleQuality(vp, avg, metric, fm);
		TrEnsembleErrors(vp, avg, fm);
		json_object_object_add(metrics, "score_method", json_object_new_string("in_sample"));
		json_object_object_add(metrics, "score_note", json_object_new_string(why));
	}
	free(fold);
	free(oof);
	return score;
}

/*
 * An ensemble run (docs/models.md, "Ensembles"): greedy selection with
 * replacement over the validation predictions of the task's runs, on all
 * of their rows for the weights, and cross-fitted for the score
 * (CrossFitScore); its artifact names the members and their weights.  No
 * rows are read.
 */
int
LiveEnsembleRun(LiveCtx *c)
{
	TrValPreds *vps = NULL;
	const TrValPreds **use;
	int64_t    *ids = NULL,
			   *chosen;
	double	   *scores = NULL,
			   *weights,
			   *avg;
	int		   *counts;
	int			m,
				k = 0,
				total = 0,
				rc;
	int			steps = TrParamInt(c->params, "steps", TR_ENSEMBLE_STEPS);
	int			metric;
	double		t0 = TrNow(),
				score,
				in_sample;
	char		err[512];
	TrMetrics	fm;
	TrResult	result;
	json_object *metrics,
			   *arr;
	ProgressState ps;

	metric = c->opt.metric != NULL ? TrMetricLookup(c->opt.metric, c->kind) :
		(c->kind == TR_KIND_REGRESSION ? TR_M_R2 : TR_M_ACCURACY);
	if (metric < 0)
		return LiveFail(c->run_dir, "metric \"%s\" does not apply", c->opt.metric);
	if (steps < 1 || steps > TR_ENSEMBLE_MAX_STEPS)
		return LiveFail(c->run_dir, "an ensemble takes 1 to %d steps, not %d", TR_ENSEMBLE_MAX_STEPS, steps);
	if ((rc = ReadMembers(c, &vps, &ids, &scores, &m)) != EASEML_EXIT_OK)
		return rc;
	if (m < 2)
		return LiveFail(c->run_dir, "an ensemble needs 2 runs with validation predictions on the same rows, the task has %d", m);
	use = malloc(sizeof(TrValPreds *) * m);
	counts = calloc(m, sizeof(int));
	chosen = malloc(sizeof(int64_t) * m);
	weights = malloc(sizeof(double) * m);
	avg = malloc(sizeof(double) * ((size_t) vps[0].n * vps[0].n_out + 1));
	if (use == NULL || counts == NULL || chosen == NULL || weights == NULL || avg == NULL)
		return LiveFail(c->run_dir, "out of memory");
	for (int i = 0; i < m; i++)
		use[i] = &vps[i];
	/* the weights the ensemble predicts with: selected on every row */
	if (TrEnsembleSelect(use, m, metric, steps, counts, &score, err, sizeof(err)) != 0)
		return LiveFail(c->run_dir, "%s", err);
	if (LiveCancelled())
		return LiveFail(c->run_dir, "cancelled");
	TrEnsembleAverage(use, m, counts, avg);
	in_sample = TrEnsembleQuality(&vps[0], avg, metric, &fm);
	metrics = json_object_new_object();
	/* its score: cross-fitted, every metric of the out-of-fold predictions */
	score = CrossFitScore(c, use, m, metric, steps, avg, &fm, metrics);
	if (LiveCancelled())
		return LiveFail(c->run_dir, "cancelled");
	for (int i = 0; i < m; i++)
		total += counts[i];
	arr = json_object_new_array();
	for (int i = 0; i < m; i++)
	{
		json_object *o;

		if (counts[i] == 0)
			continue;
		chosen[k] = ids[i];
		weights[k] = (double) counts[i] / total;
		o = json_object_new_object();
		json_object_object_add(o, "run_id", json_object_new_int64(ids[i]));
		json_object_object_add(o, "weight", json_object_new_double(weights[k]));
		json_object_object_add(o, "count", json_object_new_int(counts[i]));
		json_object_object_add(o, "score", json_object_new_double(scores[i]));
		json_object_array_add(arr, o);
		k++;
	}
	json_object_object_add(metrics, "score", json_object_new_double(score));
	json_object_object_add(metrics, "score_in_sample", json_object_new_double(in_sample));
	json_object_object_add(metrics, "metric", json_object_new_string(TrMetricName(metric)));
	TrMetricsJsonOne(metrics, &fm, metric);
	json_object_object_add(metrics, "family", json_object_new_string(TR_ENSEMBLE_FAMILY));
	json_object_object_add(metrics, "kind", json_object_new_string(
											c->kind == TR_KIND_REGRESSION ? "regression" : "classification"));
	json_object_object_add(metrics, "n_val", json_object_new_int(vps[0].n));
	json_object_object_add(metrics, "n_classes", json_object_new_int(vps[0].n_classes));
	json_object_object_add(metrics, "epochs", json_object_new_int(steps));
	json_object_object_add(metrics, "ensemble_steps", json_object_new_int(total));
	json_object_object_add(metrics, "candidates", json_object_new_int(m));
	json_object_object_add(metrics, "best_member_score", json_object_new_double(scores[0]));
	json_object_object_add(metrics, "members", arr);
	json_object_object_add(metrics, "train_seconds", json_object_new_double(TrNow() - t0));
	json_object_object_add(metrics, "model", json_object_new_string(LiveJsonString(c->spec, "model")));
	TrResultInit(&result);
	if (TrEnsembleArtifact(&vps[0], k, chosen, weights, &result) != 0)
		return LiveFail(c->run_dir, "%s", result.error);
	json_object_object_add(metrics, "artifact_bytes", json_object_new_int64((int64_t) result.artifact_len));
	memset(&ps, 0, sizeof(ps));
	ps.conn = c->conn;
	ps.run_id = c->run_id;
	LiveSendProgress(&ps, steps, NAN, score);
	LiveStoreArtifact(c, &result, metrics);
	if (LiveKeepMetrics(metrics) != 0)
		return LiveFail(c->run_dir, "out of memory");
	LiveLog("run %s: done, score %.6f (%s; on the rows it was selected on %.6f; an ensemble of %d of %d runs; the best alone %.6f)",
			c->run_id, score, LiveJsonString(metrics, "score_method"), in_sample, k, m, scores[0]);
	TrResultFree(&result);
	json_object_put(metrics);
	for (int i = 0; i < m; i++)
		TrValPredsFree(&vps[i]);
	free(vps);
	free(use);
	free(ids);
	free(scores);
	free(counts);
	free(chosen);
	free(weights);
	free(avg);
	return EASEML_EXIT_OK;
}
