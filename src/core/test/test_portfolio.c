/*-------------------------------------------------------------------------
 *
 * test_portfolio.c
 *	  Unit tests of the cost-aware history portfolio (pf=1|2, pfe=X;
 *	  src/core/policy_portfolio.c): the greedy list on a hand-made history,
 *	  the next entry given what a task tried, its own row and the row
 *	  weights left out, and through the decision world that a task runs the
 *	  portfolio's entry, or its candidate where the xg gate lets it pass.
 *
 * IDENTIFICATION
 *	  src/core/test/test_portfolio.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/gp.h"
#include "core/mixture.h"
#include "core/policy.h"
#include "core/portfolio.h"
#include "test.h"

/*
 * Five history rows x four models.  Within 0.01 of the row's best: row 0
 * {0}, row 1 {1, 3}, row 2 {2}, row 3 {1, 3}, row 4 {0, 3}.
 */
#define PK 4
#define PM 5
static const double prows[PM * PK] = {
	0.90, 0.80, 0.70, 0.50,
	0.60, 0.85, 0.50, 0.85,
	0.70, 0.75, 0.80, 0.50,
	0.50, 0.90, 0.60, 0.89,
	0.95, 0.40, 0.60, 0.95
};

/* seconds: covered rows per second 2/10, 2/1.2, 1/1, 3/1.9 */
static const double pcost[PK] = {10.0, 1.2, 1.0, 1.9};

static void
PortfolioList(void)
{
	int			list[8];
	unsigned char all[PK] = {1, 1, 1, 1};
	unsigned char tried[PK] = {0, 1, 1, 0};
	double		w[PM] = {0, 0, 1, 0, 0};
	double		zero[PM] = {0, 0, 0, 0, 0};
	double		v;
	int			a;

	/* costed: 1 (1.67/s), then 2 (row 2), 3 (row 4: 0.53/s), 0 (row 0) */
	CHECK(PortfolioBuild(prows, PM, PK, 0.01, pcost, 8, list) == 4 &&
		  list[0] == 1 && list[1] == 2 && list[2] == 3 && list[3] == 0,
		  "costed list 1 2 3 0, got %d %d %d %d", list[0], list[1], list[2], list[3]);
	/* unit costs: 3 covers three rows, then 0 and 2 tie (lowest first) */
	CHECK(PortfolioBuild(prows, PM, PK, 0.01, NULL, 8, list) == 3 &&
		  list[0] == 3 && list[1] == 0 && list[2] == 2,
		  "unit-cost list 3 0 2, got %d %d %d", list[0], list[1], list[2]);
	CHECK(PortfolioBuild(prows, PM, PK, 0.01, pcost, 2, list) == 2, "at most len entries");
	/* a wide tolerance: models 0 and 3 are within 0.45 of every row's best */
	CHECK(PortfolioBuild(prows, PM, PK, 0.45, NULL, 8, list) == 1 && list[0] == 0,
		  "pfe=0.45: model 0 alone covers every row (3 too, later in order)");

	/* the next entry given what was tried: rows 0 and 4 are left */
	CHECK(PortfolioNext(prows, PM, PK, -1, NULL, 0.01, 0, tried, pcost, all, NULL,
						&a, &v) == POLICY_OK && a == 3,
		  "tried 1 and 2: model 3 next, got %d", a);
	CHECK_NEAR(v, 1.0 / 1.9, 1e-12, "its value: one row per 1.9 s");
	/* the task's own row is never counted: without row 3, model 3 leads */
	CHECK(PortfolioNext(prows, PM, PK, 3, NULL, 0.01, 0, NULL, pcost, all, NULL,
						&a, &v) == POLICY_OK && a == 3,
		  "own row 3 left out: model 3 (2 rows / 1.9 s), got %d", a);
	/* pfr=1: by regret removed, sum of row values / s: model 2 (3.2 / 1 s) */
	CHECK(PortfolioNext(prows, PM, PK, -1, NULL, 0.01, 1, NULL, pcost, all, NULL,
						&a, &v) == POLICY_OK && a == 2, "pfr=1: model 2 first, got %d", a);
	CHECK_NEAR(v, 3.2, 1e-12, "its value: 3.2 removed per second");
	{
		unsigned char t2[PK] = {0, 0, 1, 0};

		/* then 0.75 / 1.2 s (model 1) over 0.99 / 1.9 s (3) and 0.65 / 10 s */
		CHECK(PortfolioNext(prows, PM, PK, -1, NULL, 0.01, 1, t2, pcost, all,
							NULL, &a, &v) == POLICY_OK && a == 1,
			  "pfr=1 after model 2: model 1, got %d", a);
		CHECK_NEAR(v, 0.75 / 1.2, 1e-12, "its value");
	}
	/* weights: only row 2 counts */
	CHECK(PortfolioNext(prows, PM, PK, -1, w, 0.01, 0, NULL, pcost, all, NULL,
						&a, NULL) == POLICY_OK && a == 2, "weights on row 2: model 2");
	CHECK(PortfolioNext(prows, PM, PK, -1, zero, 0.01, 0, NULL, pcost, all, NULL,
						&a, &v) == POLICY_OK && a == -1 && v == 0.0,
		  "no weight anywhere: spent");
	/* tried 0 and 3: only row 2 is left, which model 2 alone covers */
	tried[0] = tried[3] = 1;
	tried[1] = tried[2] = 0;
	all[0] = all[3] = 0;
	CHECK(PortfolioNext(prows, PM, PK, -1, NULL, 0.01, 0, tried, pcost, all, NULL,
						&a, NULL) == POLICY_OK && a == 2, "row 2 left: model 2, got %d", a);
	all[2] = 0;
	CHECK(PortfolioNext(prows, PM, PK, -1, NULL, 0.01, 0, tried, pcost, all, NULL,
						&a, NULL) == POLICY_OK && a == -1, "model 2 not available: spent");
	CHECK(PortfolioNext(prows, PM, 0, -1, NULL, 0.01, 0, NULL, NULL, all, NULL,
						&a, NULL) == POLICY_BAD_INPUT, "K = 0 refused");
}

/*
 * One task through the world, its fallback costs pcost, the mixture on
 * the five rows and an independent GP.  Before any result the mixture's
 * EI per second prefers model 2 (mean 0.64 / 1 s against 0.74 / 1.2 s);
 * the portfolio runs model 1.
 */
static int
PortfolioFirst(const char *spec, const int64_t *row_task)
{
	double		mu0[PK] = {0.7, 0.7, 0.7, 0.7};
	double		cov[PK * PK];
	GpPrior		prior;
	MixPrior	mp;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionChoice c;
	int			arm = -2;

	for (int i = 0; i < PK * PK; i++)
		cov[i] = i % (PK + 1) == 0 ? 0.02 : 0.0;
	GpPriorInit(&prior, PK, mu0, cov, 1e-4);
	CHECK(MixPriorFit(&mp, prows, PM, PK, 0.05) == POLICY_OK, "mixture");
	MakeWorld(&w, PK, spec, 1);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	DecisionSetMixtureRows(&w, DECISION_CLASSIFICATION, &mp, row_task);
	memset(&s, 0, sizeof(s));
	s.id = 10;
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 100;
	s.features = 4;
	s.classes = 2;
	s.fallback_cost = pcost;
	CHECK(DecisionAddTask(&w, &s) != NULL, "%s: task", spec);
	if (DecisionNext(&w, &c) == 0 && c.chosen.task >= 0)
		arm = c.chosen.arm;
	DecisionWorldFree(&w);
	MixPriorFree(&mp);
	GpPriorFree(&prior);
	return arm;
}

void
TestPortfolio(void)
{
	PolicyParams pp;
	char		err[128];
	int64_t		own3[PM] = {0, 0, 0, 10, 0};
	int			a;

	PortfolioList();

	CHECK(PolicyParseSpec("hybrid:cost:acq=mix:pf=1", &pp, NULL, 0) == 0 &&
		  pp.portfolio == 1 && pp.portfolio_eps == 0.01 && PortfolioOn(&pp) &&
		  PolicyUsesMixture(&pp), "pf=1 parsed, pfe 0.01 by default, needs the mixture");
	CHECK(PolicyParseSpec("rr:pf=2:pfe=0.02", &pp, NULL, 0) == 0 &&
		  pp.portfolio == 2 && pp.portfolio_eps == 0.02, "pf=2:pfe=0.02 parsed");
	CHECK(PolicyParseSpec("popular:pf=1", &pp, NULL, 0) == 0 && !PortfolioOn(&pp) &&
		  !PolicyUsesMixture(&pp), "popular keeps its order");
	CHECK(PolicyParseSpec("hybrid:pf=3", &pp, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  strstr(err, "pf") != NULL, "pf=3 refused: %s", err);
	CHECK(PolicyParseSpec("hybrid:pf=1:pfr=1", &pp, NULL, 0) == 0 &&
		  pp.portfolio_gain == 1, "pfr=1 parsed");
	CHECK(PolicyParseSpec("hybrid:pfe=-0.1", &pp, NULL, 0) == POLICY_BAD_INPUT,
		  "pfe=-0.1 refused");

	a = PortfolioFirst("rr:cost:acq=mix:mh=0", NULL);
	CHECK(a == 2, "no portfolio: the mixture's EI per second, model 2 (got %d)", a);
	a = PortfolioFirst("rr:cost:acq=mix:mh=0:pf=1", NULL);
	CHECK(a == 1, "pf=1: the portfolio's first entry, model 1 (got %d)", a);
	a = PortfolioFirst("rr:cost:acq=mix:mh=0:pf=1", own3);
	CHECK(a == 3, "pf=1, the task's own row 3 left out: model 3 (got %d)", a);
	a = PortfolioFirst("rr:cost:acq=mix:mh=0:pf=1:xg=1000", NULL);
	CHECK(a == 1, "xg=1000: the candidate does not pass the entry (got %d)", a);
	a = PortfolioFirst("rr:cost:acq=mix:mh=0:pf=1:xg=1.01", NULL);
	CHECK(a == 2, "xg=1.01: the candidate's EI/s passes the entry's (got %d)", a);
}
