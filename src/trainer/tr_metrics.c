/*-------------------------------------------------------------------------
 *
 * tr_metrics.c
 *	  Validation metrics and their qualities (see tr_metrics.h).
 *
 * The definitions follow scikit-learn's, so a user can check a number with
 * it: balanced accuracy averages the recall of the classes present in the
 * validation rows; macro F1 averages F1 over the classes that occur in the
 * truth or the predictions, an undefined precision or recall counting 0;
 * log loss clips probabilities to [1e-15, 1 - 1e-15] after normalising
 * each row; ROC AUC is the Mann-Whitney statistic with tied scores sharing
 * their mean rank, averaged over classes one-vs-rest (classes without both
 * positive and negative validation rows are skipped); R^2 of a constant
 * validation target is 1 for a perfect fit and 0 otherwise.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_metrics.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sortutil.h"
#include "trainer.h"
#include "tr_metrics.h"

#define LOG_LOSS_EPS 1e-15

static const char *const metric_names[TR_M__COUNT] = {
	"accuracy", "balanced_accuracy", "macro_f1", "log_loss", "roc_auc",
	"r2", "rmse", "mae"
};

const char *
TrMetricName(TrMetricId m)
{
	return (m >= 0 && m < TR_M__COUNT) ? metric_names[m] : NULL;
}

int
TrMetricLookup(const char *name, int kind)
{
	int			lo = kind == TR_KIND_REGRESSION ? TR_M_R2 : TR_M_ACCURACY;
	int			hi = kind == TR_KIND_REGRESSION ? TR_M__COUNT : TR_M_R2;

	for (int m = lo; name != NULL && m < hi; m++)
		if (strcmp(name, metric_names[m]) == 0)
			return m;
	return -1;
}

typedef struct ScoredRow
{
	double		s;
	int			pos;
} ScoredRow;

static int
CmpScore(const void *a, const void *b)
{
	double		x = ((const ScoredRow *) a)->s,
				y = ((const ScoredRow *) b)->s;

	return (x > y) - (x < y);
}

/*
 * AUC of scores s[] for the rows marked positive, from mean ranks; NaN
 * without both classes.  rows is scratch of n entries.
 */
static double
Auc(int n, ScoredRow *rows)
{
	double		rank_sum = 0.0;
	long		npos = 0;

	qsort(rows, n, sizeof(ScoredRow), CmpScore);
	for (int i = 0; i < n;)
	{
		int			j = i;

		while (j < n && rows[j].s == rows[i].s)
			j++;
		/* rows i..j-1 tie: each gets the mean of ranks i+1..j */
		for (int r = i; r < j; r++)
			if (rows[r].pos)
			{
				rank_sum += 0.5 * (double) (i + 1 + j);
				npos++;
			}
		i = j;
	}
	if (npos == 0 || npos == n)
		return NAN;
	return (rank_sum - 0.5 * (double) npos * (double) (npos + 1)) /
		((double) npos * (double) (n - npos));
}

/* probability of class c in row i: the model's, or 1 for its prediction */
static inline double
Proba(const double *proba, const int *pred, int k, int i, int c)
{
	return proba != NULL ? proba[(size_t) i * k + c] : (pred[i] == c ? 1.0 : 0.0);
}

static double
LogLoss(int n, int k, const int *y, const int *pred, const double *proba)
{
	double		sum = 0.0;

	for (int i = 0; i < n; i++)
	{
		double		tot = 0.0,
					p;

		for (int c = 0; c < k; c++)
			tot += fmin(fmax(Proba(proba, pred, k, i, c), LOG_LOSS_EPS), 1.0 - LOG_LOSS_EPS);
		p = fmin(fmax(Proba(proba, pred, k, i, y[i]), LOG_LOSS_EPS), 1.0 - LOG_LOSS_EPS);
		sum -= log(p / tot);
	}
	return sum / n;
}

static double
RocAuc(int n, int k, const int *y, const int *pred, const double *proba)
{
	ScoredRow  *rows = malloc(sizeof(ScoredRow) * n);
	double		sum = 0.0;
	int			used = 0;

	if (rows == NULL)
		return NAN;
	/* two classes: the probability of class 1 */
	for (int c = (k == 2 ? 1 : 0); c < k; c++)
	{
		double		a;

		for (int i = 0; i < n; i++)
		{
			rows[i].s = Proba(proba, pred, k, i, c);
			rows[i].pos = y[i] == c;
		}
		a = Auc(n, rows);
		if (!isnan(a))
		{
			sum += a;
			used++;
		}
	}
	free(rows);
	return used > 0 ? sum / used : NAN;
}

void
TrClassificationMetrics(int n, int k, const int *y, const int *pred,
						const double *proba, TrMetrics *m)
{
	long	   *tp = calloc(k > 0 ? k : 1, sizeof(long));
	long	   *truth = calloc(k > 0 ? k : 1, sizeof(long));
	long	   *predicted = calloc(k > 0 ? k : 1, sizeof(long));
	long		correct = 0;
	double		recall_sum = 0.0,
				f1_sum = 0.0;
	int			present = 0,
				f1_classes = 0;

	for (int j = 0; j < TR_M__COUNT; j++)
		m->v[j] = NAN;
	m->kind = TR_KIND_CLASSIFICATION;
	m->rmse_const = m->mae_const = NAN;
	TrMetricsClearErrors(m);
	if (n <= 0 || k <= 0 || tp == NULL || truth == NULL || predicted == NULL)
	{
		free(tp);
		free(truth);
		free(predicted);
		return;
	}
	for (int i = 0; i < n; i++)
	{
		truth[y[i]]++;
		if (pred[i] >= 0 && pred[i] < k)
			predicted[pred[i]]++;
		if (pred[i] == y[i])
		{
			tp[y[i]]++;
			correct++;
		}
	}
	for (int c = 0; c < k; c++)
	{
		if (truth[c] > 0)
		{
			recall_sum += (double) tp[c] / truth[c];
			present++;
		}
		if (truth[c] > 0 || predicted[c] > 0)
		{
			double		p = predicted[c] > 0 ? (double) tp[c] / predicted[c] : 0.0;
			double		r = truth[c] > 0 ? (double) tp[c] / truth[c] : 0.0;

			f1_sum += (p + r > 0.0) ? 2.0 * p * r / (p + r) : 0.0;
			f1_classes++;
		}
	}
	m->v[TR_M_ACCURACY] = (double) correct / n;
	m->v[TR_M_BALANCED_ACCURACY] = present > 0 ? recall_sum / present : NAN;
	m->v[TR_M_MACRO_F1] = f1_classes > 0 ? f1_sum / f1_classes : NAN;
	m->v[TR_M_LOG_LOSS] = LogLoss(n, k, y, pred, proba);
	m->v[TR_M_ROC_AUC] = RocAuc(n, k, y, pred, proba);
	free(tp);
	free(truth);
	free(predicted);
}

/*
 * The errors of the best constant predictions of the n targets t: the
 * mean's RMSE (the standard deviation) and the median's MAE.  Sets the
 * kind; the metrics themselves are NaN until computed.
 */
void
TrRegressionBaselines(int n, const double *t, TrMetrics *m)
{
	double		mean = 0.0,
				ss_tot = 0.0,
				abs_dev = 0.0,
				median;
	double	   *sorted;

	for (int j = 0; j < TR_M__COUNT; j++)
		m->v[j] = NAN;
	m->kind = TR_KIND_REGRESSION;
	m->rmse_const = m->mae_const = NAN;
	TrMetricsClearErrors(m);
	if (n <= 0 || (sorted = malloc(sizeof(double) * n)) == NULL)
		return;
	for (int i = 0; i < n; i++)
		mean += t[i];
	mean /= n;
	memcpy(sorted, t, sizeof(double) * n);
	qsort(sorted, n, sizeof(double), CmpDouble);
	median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
	free(sorted);
	for (int i = 0; i < n; i++)
	{
		ss_tot += (t[i] - mean) * (t[i] - mean);
		abs_dev += fabs(t[i] - median);
	}
	m->rmse_const = sqrt(ss_tot / n);
	m->mae_const = abs_dev / n;
}

void
TrRegressionMetrics(int n, const double *t, const double *pred, TrMetrics *m)
{
	double		ss_res = 0.0,
				abs_err = 0.0;

	TrRegressionBaselines(n, t, m);
	if (n <= 0 || isnan(m->rmse_const))
		return;
	for (int i = 0; i < n; i++)
	{
		double		e = pred[i] - t[i];

		ss_res += e * e;
		abs_err += fabs(e);
	}
	m->v[TR_M_RMSE] = sqrt(ss_res / n);
	m->v[TR_M_MAE] = abs_err / n;
	/* R^2 from the baseline: ss_tot = n * rmse_const^2 */
	m->v[TR_M_R2] = m->rmse_const > 0.0 ?
		1.0 - ss_res / (n * m->rmse_const * m->rmse_const) : (ss_res == 0.0 ? 1.0 : 0.0);
}

/* 1 - err / err_const: 1 for a perfect model, 0 for the best constant */
static double
RelativeQuality(double err, double err_const)
{
	if (isnan(err) || isnan(err_const))
		return NAN;
	if (err_const > 0.0)
		return 1.0 - err / err_const;
	return err == 0.0 ? 1.0 : 0.0;
}

double
TrMetricQuality(const TrMetrics *m, TrMetricId id)
{
	switch (id)
	{
		case TR_M_LOG_LOSS:
			return exp(-m->v[TR_M_LOG_LOSS]);
		case TR_M_RMSE:
			return RelativeQuality(m->v[TR_M_RMSE], m->rmse_const);
		case TR_M_MAE:
			return RelativeQuality(m->v[TR_M_MAE], m->mae_const);
		default:
			return (id >= 0 && id < TR_M__COUNT) ? m->v[id] : NAN;
	}
}

void
TrMetricsToJson(const TrMetrics *m, json_object *obj)
{
	int			lo = m->kind == TR_KIND_REGRESSION ? TR_M_R2 : TR_M_ACCURACY;
	int			hi = m->kind == TR_KIND_REGRESSION ? TR_M__COUNT : TR_M_R2;

	for (int j = lo; j < hi; j++)
		json_object_object_add(obj, metric_names[j],
							   isfinite(m->v[j]) ? json_object_new_double(m->v[j]) : NULL);
}
