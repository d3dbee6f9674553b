/*-------------------------------------------------------------------------
 *
 * policy_portfolio.c
 *	  A cost-aware portfolio learned from the history (option pf=1|2,
 *	  docs/scheduler.md section 3): a task's next candidate is the next
 *	  entry of a greedy portfolio over the history rows, built as in
 *	  auto-sklearn 2.0 and Oboe -- the model that brings, per second of its
 *	  run, the most history tasks within pfe of their own best score, given
 *	  the models the task has already tried.
 *
 * A history row r is "covered" by a set S of models when some j in S
 * scores within eps of the row's own best, r_j >= max_k r_k - eps.  The
 * greedy portfolio appends, given the list so far, the model that covers
 * the most rows not yet covered per second of its run: the classic greedy
 * for (min-sum) set cover with costs, whose list minimises the expected
 * time until a history task is within eps, up to a constant factor.  Here
 * the list is never stored: a task's next entry is that greedy step taken
 * with S = the models the task has tried.  A task that follows the
 * portfolio therefore runs exactly the greedy list, and one that deviated
 * (its model candidate ran instead, src/core/decision_view.c) continues
 * from what it has actually tried.  The cost is the task's own estimate
 * (the cost model's, per data set), so the list is cost-aware for this
 * task and not only on average.
 *
 * pf=1 counts every row once (the history portfolio itself); pf=2
 * weighs each row by the task's mixture weight (src/core/mixture.h), so
 * that rows unlike the task's results count less: the conditional value
 * of the next entry.  pfr=1 values a model by the regret it removes from
 * the rows instead, sum_r (r_k - b_r)+ per second, b_r the row's best
 * among the tried models: the mean loss the benchmarks measure rather
 * than the count of rows within pfe.  Where no available model covers any uncovered row
 * of positive weight, the portfolio is spent and the policy's own
 * candidate runs.  The task's own history row (live: an active task's row
 * is in the history) is never counted.
 *
 * Plain C, no PostgreSQL headers; one pass over the history rows (m x K),
 * the same order of work as the mixture's arm choice beside it.
 *
 * IDENTIFICATION
 *	  src/core/policy_portfolio.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>

#include "mixture.h"
#include "portfolio.h"

/* Whether params run the history portfolio (pf=1|2). */
int
PortfolioOn(const PolicyParams *params)
{
	return params != NULL && params->portfolio > 0 &&
		params->kind != POLICY_POPULAR && params->kind != POLICY_FIFO;
}

/*
 * The greedy portfolio's next entry for a task; see the file header.
 * rows: m x K history (no NaN); skip: a row never counted (-1: none); w:
 * m row weights, or NULL (every row 1); gain != 0 (pfr=1): a model's
 * value is the regret it removes from the rows, sum_r w_r (r_k - b_r)+
 * with b_r the row's best among the tried models (0 when none), instead
 * of the rows it brings within eps; tried[k] != 0 for the models the
 * task has results of; cost: K seconds, or NULL (every run 1); avail: the
 * models it may run now.  The entry is the arm (-1 when none covers an
 * uncovered row of positive weight) in *arm and its value, covered weight per
 * second, in *value (may be NULL).  val is K doubles of scratch, or NULL
 * (then allocated).  Returns POLICY_OK, POLICY_BAD_INPUT (bad sizes) or
 * POLICY_NO_MEMORY; the entry in *arm.
 */
int
PortfolioNext(const double *rows, int m, int K, int skip, const double *w,
			  double eps, int gain, const unsigned char *tried, const double *cost,
			  const unsigned char *avail, double *val, int *arm,
			  double *value)
{
	double	   *own = NULL;
	int			best = -1;
	double		best_v = 0.0;

	if (value != NULL)
		*value = 0.0;
	*arm = -1;
	if (rows == NULL || m < 0 || K <= 0 || avail == NULL || !(eps >= 0.0))
		return POLICY_BAD_INPUT;
	if (val == NULL)
	{
		own = malloc(sizeof(double) * K);
		if (own == NULL)
			return POLICY_NO_MEMORY;
		val = own;
	}
	for (int k = 0; k < K; k++)
		val[k] = 0.0;
	for (int r = 0; r < m; r++)
	{
		const double *row = rows + (size_t) r * K;
		double		wr = w ? w[r] : 1.0;
		double		top = -INFINITY,
					bar;
		int			covered = 0;

		if (r == skip || !(wr > 0.0))
			continue;
		for (int k = 0; k < K; k++)
			if (row[k] > top)
				top = row[k];
		bar = top - eps;
		for (int k = 0; tried != NULL && k < K && !covered; k++)
			covered = tried[k] && row[k] >= bar;
		if (covered && !gain)
			continue;
		if (gain)
		{
			/* regret reduction: the row's best among the tried is b */
			double		b = 0.0;

			for (int k = 0; tried != NULL && k < K; k++)
				if (tried[k] && row[k] > b)
					b = row[k];
			for (int k = 0; k < K; k++)
				if (avail[k] && row[k] > b)
					val[k] += wr * (row[k] - b);
			continue;
		}
		for (int k = 0; k < K; k++)
			if (avail[k] && row[k] >= bar)
				val[k] += wr;
	}
	for (int k = 0; k < K; k++)
	{
		double		v;

		if (!avail[k] || !(val[k] > 0.0))
			continue;
		v = val[k] / (cost ? fmax(cost[k], 1e-9) : 1.0);
		if (best < 0 || v > best_v)
		{
			best = k;
			best_v = v;
		}
	}
	free(own);
	if (value != NULL)
		*value = best_v;
	*arm = best;
	return POLICY_OK;
}

/*
 * The whole greedy list of at most len entries over the rows (no task:
 * nothing tried, every model available, one cost vector for all), into
 * list; returns its length (stops where no model covers an uncovered
 * row), or a negative status.  The unit tests and the docs' description
 * of the list; a task's next entry is PortfolioNext.
 */
int
PortfolioBuild(const double *rows, int m, int K, double eps,
			   const double *cost, int len, int *list)
{
	unsigned char *tried = calloc(K, 1);
	unsigned char *avail = malloc(K);
	double	   *val = malloc(sizeof(double) * (K > 0 ? K : 1));
	int			n = 0,
				rc = POLICY_OK;

	if (tried == NULL || avail == NULL || val == NULL)
		rc = POLICY_NO_MEMORY;
	for (int k = 0; rc == POLICY_OK && k < K; k++)
		avail[k] = 1;
	while (rc == POLICY_OK && n < len)
	{
		int			a;

		rc = PortfolioNext(rows, m, K, -1, NULL, eps, 0, tried, cost, avail,
						   val, &a, NULL);
		if (rc < 0 || a < 0)
			break;
		list[n++] = a;
		tried[a] = 1;
		avail[a] = 0;
	}
	free(tried);
	free(avail);
	free(val);
	return rc < 0 ? rc : n;
}
