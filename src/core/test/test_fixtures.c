/*-------------------------------------------------------------------------
 *
 * test_fixtures.c
 *	  Shared fixtures of the unit tests: random covariance matrices,
 *	  diagonal priors, decision worlds with tasks, one refit cycle.
 *
 * IDENTIFICATION
 *	  src/core/test/test_fixtures.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "test.h"

/* A random symmetric positive semi-definite K x K matrix of rank r. */
void
RandomPsd(double *cov, int K, int r, uint64_t *rng)
{
	double	   *B = malloc(sizeof(double) * K * r);
	int			i,
				j,
				k;

	for (i = 0; i < K * r; i++)
		B[i] = PolicyRandUniform(rng) - 0.5;
	for (i = 0; i < K; i++)
		for (j = 0; j < K; j++)
		{
			double		s = 0.0;

			for (k = 0; k < r; k++)
				s += B[i * r + k] * B[j * r + k];
			cov[i * K + j] = 0.2 * s / r;
		}
	free(B);
}

/* A diagonal prior of K arms with the given means (variance 0.04). */
void
DiagPrior(GpPrior *p, int K, const double *mu)
{
	double	   *cov = calloc((size_t) K * K, sizeof(double));

	for (int k = 0; k < K; k++)
		cov[(size_t) k * K + k] = 0.04;
	GpPriorInit(p, K, mu, cov, 1e-4);
	free(cov);
}

/* A world of K arms under policy spec with ntenants tenants. */
void
MakeWorld(DecisionWorld *w, int K, const char *spec, int ntenants)
{
	PolicyParams pp;

	CHECK(PolicyParseSpec(spec, &pp, NULL, 0) == 0, "spec %s", spec);
	CHECK(DecisionWorldInit(w, K, NULL, NULL, &pp) == 0, "world init");
	for (int i = 0; i < ntenants; i++)
		CHECK(DecisionAddTenant(w, 0) == i, "tenant %d", i);
}

/* Add a classification task of tenant 'tenant' with the given id. */
DecisionTask *
AddTask(DecisionWorld *w, int64_t id, int tenant, const unsigned char *elig)
{
	DecisionTaskSpec s;

	memset(&s, 0, sizeof(s));
	s.id = id;
	s.tenant = tenant;
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 100;
	s.features = 4;
	s.classes = 2;
	s.eligible = elig;
	return DecisionAddTask(w, &s);
}

/* A refit input of m history rows x K models, nothing else set. */
void
HistoryInput(RefitInput *in, int K, int m, const double *cells,
			 const int64_t *row_task, const unsigned char *row_kind)
{
	memset(in, 0, sizeof(*in));
	in->K = K;
	in->m = m;
	in->cells = cells;
	in->row_task = row_task;
	in->row_kind = row_kind;
}

/* Run one refit cycle of in into w; returns the steps it took. */
int
RefitCycle(RefitState *r, const RefitInput *in, DecisionWorld *w, double now)
{
	int			steps = 0;

	if (RefitMaybeStart(r, in, now) != 1)
		return -1;
	while (RefitStep(r, w) == 0 && steps < 1000000)
		steps++;
	return steps;
}
