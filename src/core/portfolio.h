/*-------------------------------------------------------------------------
 *
 * portfolio.h
 *	  A cost-aware portfolio learned from the history (option pf=1|2,
 *	  src/core/policy_portfolio.c, docs/scheduler.md section 3): a task's
 *	  next candidate is the greedy portfolio's next entry, the model that
 *	  brings the most history rows within pfe of their best per second,
 *	  given the models the task has tried.
 *
 * Plain C, no PostgreSQL headers.
 *
 * IDENTIFICATION
 *	  src/core/portfolio.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_PORTFOLIO_H
#define EASEML_PORTFOLIO_H

#include "policy.h"

/* Whether params run the history portfolio (pf=1|2). */
extern int	PortfolioOn(const PolicyParams *params);

/*
 * The next entry for a task: rows m x K (no NaN), skip a row never
 * counted (-1: none), w m row weights or NULL (all 1), eps the tolerance,
 * gain 1: value by the regret removed from the rows instead (pfr=1),
 * tried[k] the models the task has results of (may be NULL), cost K
 * seconds or NULL (all 1), avail the models it may run, val K doubles of
 * scratch or NULL.  *arm gets the entry, -1 when no available model covers
 * an uncovered row of positive weight; *value (may be NULL) its covered
 * weight per second.  Returns POLICY_OK, POLICY_BAD_INPUT or
 * POLICY_NO_MEMORY.
 */
extern int	PortfolioNext(const double *rows, int m, int K, int skip,
						  const double *w, double eps, int gain,
						  const unsigned char *tried, const double *cost,
						  const unsigned char *avail, double *val, int *arm,
						  double *value);

/*
 * The greedy list itself, at most len entries into list (nothing tried,
 * every model available, one cost vector or NULL); returns its length or
 * a negative status.
 */
extern int	PortfolioBuild(const double *rows, int m, int K, double eps,
						   const double *cost, int len, int *list);

#endif							/* EASEML_PORTFOLIO_H */
