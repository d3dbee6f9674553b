/*-------------------------------------------------------------------------
 *
 * sizecost.c
 *	  The size-based cost model of replays (docs/scheduler.md 4, "Cost
 *	  model"): what a task's runs will cost, learned from the history
 *	  rows' runtimes and their data sets' sizes -- per model a median
 *	  seconds per rows x features (size_linear), a log-linear fit in rows
 *	  and features (size_loglinear), or that plus an empirical GP over the
 *	  models on the log residuals, conditioned on a task's own finished
 *	  runtimes (size_gp).
 *
 * The replay simulator and the refit cycle use it where arms carry no
 * model family (the benchmark matrices); the live scheduler's cost model
 * is src/core/costmodel.c (complexity per family, docs/cost-model.md).
 * The functions keep the Policy prefix of the module they came from, and
 * return policy.h's POLICY_* status codes.
 *
 * IDENTIFICATION
 *	  src/core/sizecost.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gp.h"
#include "policy.h"
#include "sizecost.h"
#include "sortutil.h"

static const char *const cost_kind_names[] = {
	"none", "size_linear", "size_loglinear", "size_gp"
};

/* Name of a cost model kind. */
const char *
PolicyCostKindName(PolicyCostKind kind)
{
	if ((int) kind < 0 || kind > POLICY_COST_SIZE_GP)
		return "?";
	return cost_kind_names[kind];
}

/* Cost model kind by name; -1 if unknown. */
int
PolicyCostKindFromName(const char *name)
{
	int			i;

	if (name == NULL)
		return -1;
	for (i = 0; i <= POLICY_COST_SIZE_GP; i++)
		if (strcmp(name, cost_kind_names[i]) == 0)
			return i;
	return -1;
}

/* Free a cost model. */
void
PolicyCostModelFree(PolicyCostModel *model)
{
	if (model == NULL)
		return;
	free(model->coef);
	GpPriorFree(&model->resid);
	memset(model, 0, sizeof(*model));
}

/*
 * Least squares of y on [1, u, v] (n points) with a tiny ridge on the
 * slopes; solves the 3 x 3 normal equations by Cholesky.  Falls back to
 * slope 1 on both (cost proportional to rows x features) when n < 6.
 */
static void
FitLogLinear(const double *y, const double *u, const double *v, int n,
			 double *coef)
{
	double		A[9] = {0},
				W[9],
				b[3] = {0};
	int			i,
				rc;

	if (n < 6)
	{
		double		s = 0.0;

		for (i = 0; i < n; i++)
			s += y[i] - u[i] - v[i];
		coef[0] = n > 0 ? s / n : 0.0;
		coef[1] = 1.0;
		coef[2] = 1.0;
		return;
	}
	for (i = 0; i < n; i++)
	{
		double		x[3] = {1.0, u[i], v[i]};
		int			r,
					c;

		for (r = 0; r < 3; r++)
		{
			for (c = 0; c < 3; c++)
				A[r * 3 + c] += x[r] * x[c];
			b[r] += x[r] * y[i];
		}
	}
	A[4] += 1e-6 * n;
	A[8] += 1e-6 * n;
	rc = GpCholesky(A, 3, W, NULL);
	if (rc < 0)
	{
		coef[0] = 0.0;
		coef[1] = coef[2] = 1.0;
		return;
	}
	/* forward then backward substitution with L (row-major lower) */
	b[0] = b[0] / A[0];
	b[1] = (b[1] - A[3] * b[0]) / A[4];
	b[2] = (b[2] - A[6] * b[0] - A[7] * b[1]) / A[8];
	b[2] = b[2] / A[8];
	b[1] = (b[1] - A[7] * b[2]) / A[4];
	b[0] = (b[0] - A[3] * b[1] - A[6] * b[2]) / A[0];
	coef[0] = b[0];
	coef[1] = b[1];
	coef[2] = b[2];
}

/* Sizes positive and finite; runtimes positive and finite or NaN (unknown). */
static int
CostInputsValid(const double *runtime, const double *sizes, int m, int K)
{
	if (m > 0 && (runtime == NULL || sizes == NULL))
		return 0;
	for (int d = 0; d < m; d++)
	{
		if (!(sizes[3 * d] > 0.0) || !(sizes[3 * d + 1] > 0.0) ||
			!isfinite(sizes[3 * d]) || !isfinite(sizes[3 * d + 1]))
			return 0;
		for (int k = 0; k < K; k++)
		{
			double		c = runtime[(size_t) d * K + k];

			if (!isnan(c) && !(c > 0.0 && isfinite(c)))
				return 0;
		}
	}
	return 1;
}

/*
 * size_gp: an empirical GP over the models on the log residuals of the
 * history's runtimes from each model's log-linear size fit (model->coef).
 */
static int
FitCostResiduals(PolicyCostModel *model, const double *runtime,
				 const double *sizes, int m, int K)
{
	GpPriorOptions opt;
	double	   *resid;
	int			grc;

	resid = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K);
	if (resid == NULL)
		return POLICY_NO_MEMORY;
	for (int d = 0; d < m; d++)
		for (int k = 0; k < K; k++)
		{
			double		c = runtime[(size_t) d * K + k];
			const double *cf = model->coef + 3 * k;

			resid[(size_t) d * K + k] = isnan(c) ? NAN :
				log(c) - (cf[0] + cf[1] * log(sizes[3 * d]) +
						  cf[2] * log(sizes[3 * d + 1]));
		}
	memset(&opt, 0, sizeof(opt));
	opt.kernel = GP_KERNEL_EMPIRICAL;
	grc = GpPriorFit(resid, m, K, &opt, &model->resid);
	free(resid);
	if (grc < 0)
		return grc == GP_NO_MEMORY ? POLICY_NO_MEMORY : POLICY_GP_FAILED;
	return POLICY_OK;
}

/* Fit a cost model from history runtimes and data-set sizes; see sizecost.h. */
int
PolicyCostModelFit(PolicyCostModel *model, PolicyCostKind kind,
				   const double *runtime, const double *sizes, int m, int K)
{
	double	   *yv = NULL,
			   *uv = NULL,
			   *vv = NULL;
	int			rc = POLICY_OK;
	int			d,
				k;

	if (model == NULL)
		return POLICY_BAD_INPUT;
	memset(model, 0, sizeof(*model));
	if (K <= 0 || m < 0 || (int) kind < 0 || kind > POLICY_COST_SIZE_GP)
		return POLICY_BAD_INPUT;
	model->kind = kind;
	model->K = K;
	if (kind == POLICY_COST_NONE)
		return POLICY_OK;
	if (!CostInputsValid(runtime, sizes, m, K))
		return POLICY_BAD_INPUT;

	model->coef = malloc(sizeof(double) * 3 * (size_t) K);
	yv = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1));
	uv = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1));
	vv = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1));
	if (model->coef == NULL || yv == NULL || uv == NULL || vv == NULL)
	{
		rc = POLICY_NO_MEMORY;
		goto done;
	}

	for (k = 0; k < K; k++)
	{
		int			n = 0;

		for (d = 0; d < m; d++)
		{
			double		c = runtime[(size_t) d * K + k];

			if (isnan(c))
				continue;
			yv[n] = log(c);
			uv[n] = log(sizes[3 * d]);
			vv[n] = log(sizes[3 * d + 1]);
			n++;
		}
		if (kind == POLICY_COST_SIZE_LINEAR)
		{
			/* median seconds per (rows x features): the crude model */
			for (d = 0; d < n; d++)
				yv[d] = yv[d] - uv[d] - vv[d];
			if (n > 0)
			{
				qsort(yv, n, sizeof(double), CmpDouble);
				model->coef[3 * k] = (n % 2) ? yv[n / 2] :
					0.5 * (yv[n / 2 - 1] + yv[n / 2]);
			}
			else
				model->coef[3 * k] = 0.0;
			model->coef[3 * k + 1] = 1.0;
			model->coef[3 * k + 2] = 1.0;
		}
		else
			FitLogLinear(yv, uv, vv, n, model->coef + 3 * k);
	}

	if (kind == POLICY_COST_SIZE_GP)
		rc = FitCostResiduals(model, runtime, sizes, m, K);

done:
	free(yv);
	free(uv);
	free(vv);
	if (rc < 0)
		PolicyCostModelFree(model);
	return rc;
}

/* Size part of the log-cost prediction for one task. */
int
PolicyCostBase(const PolicyCostModel *model, double rows, double features,
			   double classes, double *log_cost)
{
	int			k;

	if (model == NULL || log_cost == NULL || model->K <= 0)
		return POLICY_BAD_INPUT;
	if (model->kind == POLICY_COST_NONE)
	{
		for (k = 0; k < model->K; k++)
			log_cost[k] = 0.0;
		return POLICY_OK;
	}
	if (!(rows > 0.0) || !(features > 0.0) || !isfinite(rows) ||
		!isfinite(features))
		return POLICY_BAD_INPUT;
	for (k = 0; k < model->K; k++)
	{
		const double *cf = model->coef + 3 * k;

		log_cost[k] = cf[0] + cf[1] * log(rows) + cf[2] * log(features);
	}
	return POLICY_OK;
}

/* Cost estimate in seconds for one task; see sizecost.h. */
int
PolicyCostPredict(const PolicyCostModel *model, const double *log_base,
				  const GpState *resid, double *cost)
{
	int			k;

	if (model == NULL || log_base == NULL || cost == NULL || model->K <= 0)
		return POLICY_BAD_INPUT;
	if (resid != NULL && resid->K != model->K)
		return POLICY_BAD_INPUT;
	for (k = 0; k < model->K; k++)
	{
		double		r = 0.0;

		if (model->kind == POLICY_COST_SIZE_GP)
			r = resid ? resid->mu[k] : model->resid.mu0[k];
		cost[k] = exp(log_base[k] + r);
	}
	return POLICY_OK;
}
