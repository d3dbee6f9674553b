/*-------------------------------------------------------------------------
 *
 * unittest.c
 *	  Unit tests of the scheduler core (gp.c, policy.c, replay.c), run by
 *	  "make unittest"; no PostgreSQL needed.  Exits non-zero on failure.
 *
 * Covered: Cholesky with jitter and its statuses; the posterior against
 * closed-form small cases; the incremental posterior against the full
 * refit; prior fitting (means, shrinkage, RBF, NaN); EI and beta;
 * candidate choice never re-picks evaluated or running arms; deterministic
 * ties and seeds; each policy's invariants (round-robin is fair, the hybrid
 * fairness floor holds, warm start, spreading over devices); PolicyIndex
 * agrees with PolicyPickTenant; PolicyDecide (FIFO contract, bad input,
 * NaN history); the cost model; the CSV reader and id join; the replay
 * simulator on a hand-computed case, with several devices, and its seeds;
 * device placement (src/placement.c); what easeml reads from and writes to
 * Slurm (src/slurm_parse.c).
 *
 * IDENTIFICATION
 *	  src/unittest.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autopolicy.h"
#include "costmodel.h"
#include "csv.h"
#include "decision.h"
#include "refit.h"
#include "gp.h"
#include "mixture.h"
#include "mixlearn.h"
#include "mixplan.h"
#include "placement.h"
#include "policy.h"
#include "replay.h"
#include "slurm_parse.h"

extern void openblas_set_num_threads(int num_threads);

static int	n_checks = 0;
static int	n_failed = 0;

#define CHECK(cond, ...) \
	do { \
		n_checks++; \
		if (!(cond)) \
		{ \
			n_failed++; \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

#define CHECK_NEAR(a, b, tol, what) \
	CHECK(fabs((a) - (b)) <= (tol), "%s: %.15g vs %.15g", what, (double) (a), (double) (b))

/* A random symmetric positive semi-definite K x K matrix of rank r. */
static void
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

/* ---------------------------------------------------------------- gp */

/* Cholesky: ok, jitter for singular, not-PD for indefinite, bad input. */
static void
TestCholesky(void)
{
	double		a[4] = {4, 2, 2, 3},
				w[4];
	double		sing[4] = {1, 1, 1, 1};
	double		indef[4] = {1, 2, 2, 1};
	double		nan_m[4] = {1, NAN, NAN, 1};
	double		jit;
	int			rc;

	rc = GpCholesky(a, 2, w, &jit);
	CHECK(rc == GP_OK, "PD matrix: status %d", rc);
	CHECK_NEAR(a[0], 2.0, 1e-15, "L00");
	CHECK_NEAR(a[2], 1.0, 1e-15, "L10");
	CHECK_NEAR(a[3], sqrt(2.0), 1e-15, "L11");
	CHECK(a[1] == 0.0, "upper triangle zeroed");

	rc = GpCholesky(sing, 2, w, &jit);
	CHECK(rc == GP_JITTER, "singular matrix: status %d (%s)", rc, GpStatusText(rc));
	CHECK(jit > 0.0 && jit <= 1e-4, "jitter used %g", jit);

	rc = GpCholesky(indef, 2, w, &jit);
	CHECK(rc == GP_NOT_PD, "indefinite matrix: status %d", rc);
	CHECK(indef[1] == 2.0 && indef[0] == 1.0, "indefinite input restored");
	CHECK(strlen(GpStatusText(GP_NOT_PD)) > 10, "status text");

	CHECK(GpCholesky(nan_m, 2, w, NULL) == GP_BAD_INPUT, "NaN rejected");
	CHECK(GpCholesky(a, 0, w, NULL) == GP_BAD_INPUT, "n = 0 rejected");
}

/* Posterior against closed forms with one and two observations. */
static void
TestPosteriorClosedForm(void)
{
	double		mu0[3] = {0.5, 0.6, 0.7};
	double		cov[9] = {0.04, 0.02, 0.01,
		0.02, 0.05, 0.015,
	0.01, 0.015, 0.03};
	double		noise = 1e-3;
	GpPrior		prior;
	double		mu[3],
				var[3];
	int			arms1[1] = {0};
	double		y1[1] = {0.8};
	int			arms2[2] = {0, 2};
	double		y2[2] = {0.8, 0.4};
	int			rc,
				k;

	rc = GpPriorInit(&prior, 3, mu0, cov, noise);
	CHECK(rc == GP_OK, "prior init %d", rc);

	/* no observation: the prior itself */
	rc = GpPosterior(&prior, 0, NULL, NULL, mu, var);
	CHECK(rc == GP_OK, "t = 0");
	for (k = 0; k < 3; k++)
	{
		CHECK_NEAR(mu[k], mu0[k], 0, "prior mean kept");
		CHECK_NEAR(var[k], cov[k * 3 + k], 0, "prior variance");
	}

	/* one observation: mu_k = mu0_k + c_k0 (y - mu0_0) / (c_00 + s2) */
	rc = GpPosterior(&prior, 1, arms1, y1, mu, var);
	CHECK(rc == GP_OK, "t = 1: %d", rc);
	for (k = 0; k < 3; k++)
	{
		double		g = cov[0] + noise;

		CHECK_NEAR(mu[k], mu0[k] + cov[k * 3] * (y1[0] - mu0[0]) / g, 1e-14,
				   "one-observation mean");
		CHECK_NEAR(var[k], cov[k * 3 + k] - cov[k * 3] * cov[k * 3] / g, 1e-14,
				   "one-observation variance");
	}

	/* two observations: explicit 2 x 2 inverse (fine in a test) */
	{
		double		g00 = cov[0] + noise,
					g01 = cov[2],
					g11 = cov[8] + noise;
		double		det = g00 * g11 - g01 * g01;
		double		i00 = g11 / det,
					i01 = -g01 / det,
					i11 = g00 / det;
		double		r0 = y2[0] - mu0[0],
					r1 = y2[1] - mu0[2];

		rc = GpPosterior(&prior, 2, arms2, y2, mu, var);
		CHECK(rc == GP_OK, "t = 2: %d", rc);
		for (k = 0; k < 3; k++)
		{
			double		c0 = cov[k * 3 + 0],
						c1 = cov[k * 3 + 2];
			double		m = mu0[k] + c0 * (i00 * r0 + i01 * r1) + c1 * (i01 * r0 + i11 * r1);
			double		v = cov[k * 3 + k] - (c0 * (i00 * c0 + i01 * c1) +
											  c1 * (i01 * c0 + i11 * c1));

			CHECK_NEAR(mu[k], m, 1e-13, "two-observation mean");
			CHECK_NEAR(var[k], v, 1e-13, "two-observation variance");
		}
	}

	/* bad input */
	{
		int			bad_arm[1] = {3};
		double		bad_y[1] = {NAN};

		CHECK(GpPosterior(&prior, 1, bad_arm, y1, mu, var) == GP_BAD_INPUT,
			  "arm out of range");
		CHECK(GpPosterior(&prior, 1, arms1, bad_y, mu, var) == GP_BAD_INPUT,
			  "NaN observation");
	}
	GpPriorFree(&prior);

	/* non-PD: two identical arms observed with zero noise -> jitter */
	{
		double		c2[4] = {1, 1, 1, 1};
		double		m2[2] = {0, 0};
		int			a2[2] = {0, 1};
		double		yy[2] = {0.3, 0.3};

		rc = GpPriorInit(&prior, 2, m2, c2, 0.0);
		CHECK(rc == GP_OK, "singular prior accepted (it is PSD)");
		rc = GpPosterior(&prior, 2, a2, yy, mu, var);
		CHECK(rc == GP_JITTER, "singular G: status %d", rc);
		CHECK(isfinite(mu[0]) && isfinite(mu[1]) && var[0] >= 0.0 && var[1] >= 0.0,
			  "finite, clamped results under jitter");
		CHECK_NEAR(mu[0], 0.3, 1e-3, "jittered mean");
		GpPriorFree(&prior);
	}

	/* indefinite covariance: GP_NOT_PD, a clear status and no crash */
	{
		double		c3[4] = {1, 2, 2, 1};
		double		m3[2] = {0, 0};
		int			a3[2] = {0, 1};
		double		yy[2] = {0.1, 0.2};

		rc = GpPriorInit(&prior, 2, m3, c3, 0.0);
		CHECK(rc == GP_OK, "symmetric prior accepted");
		rc = GpPosterior(&prior, 2, a3, yy, mu, var);
		CHECK(rc == GP_NOT_PD, "indefinite G: status %d", rc);
		GpPriorFree(&prior);
	}

	/* asymmetric or NaN covariance rejected */
	{
		double		c4[4] = {1, 0.5, 0.2, 1};
		double		m4[2] = {0, 0};

		CHECK(GpPriorInit(&prior, 2, m4, c4, 0.0) == GP_BAD_INPUT, "asymmetric");
	}
}

/* Incremental updates agree with the full refit, across growth. */
static void
TestIncremental(void)
{
	const int	K = 30;
	double	   *cov = malloc(sizeof(double) * K * K);
	double	   *mu0 = malloc(sizeof(double) * K);
	double		mu[30],
				var[30];
	int			arms[25];
	double		y[25];
	uint64_t	rng = 42;
	GpPrior		prior;
	GpState		st;
	double		maxdiff = 0.0;
	int			t,
				k,
				rc;

	RandomPsd(cov, K, 8, &rng);	/* rank 8: strongly correlated arms */
	for (k = 0; k < K; k++)
	{
		cov[k * K + k] += 0.001;
		mu0[k] = 0.5 + 0.1 * (PolicyRandUniform(&rng) - 0.5);
	}
	rc = GpPriorInit(&prior, K, mu0, cov, 1e-4);
	CHECK(rc == GP_OK, "prior");
	rc = GpStateInit(&st, &prior, 2);	/* tiny capacity: growth is tested */
	CHECK(rc == GP_OK, "state init");
	for (t = 0; t < 25; t++)
	{
		arms[t] = (t * 7) % K;
		y[t] = 0.3 + 0.5 * PolicyRandUniform(&rng);
		rc = GpStateAdd(&st, arms[t], y[t]);
		CHECK(rc >= 0, "add %d: %d", t, rc);
		rc = GpPosterior(&prior, t + 1, arms, y, mu, var);
		CHECK(rc >= 0, "refit %d", t);
		for (k = 0; k < K; k++)
		{
			double		d = fabs(mu[k] - st.mu[k]) + fabs(var[k] - st.var[k]);

			if (d > maxdiff)
				maxdiff = d;
			CHECK(st.var[k] >= 0.0, "variance clamped");
		}
	}
	CHECK(maxdiff < 1e-9, "incremental vs refit max difference %g", maxdiff);
	CHECK(st.t == 25 && st.cap >= 25, "state size");

	/* reset goes back to the prior */
	GpStateReset(&st);
	CHECK(st.t == 0 && st.mu[3] == mu0[3] && st.var[3] == cov[3 * K + 3], "reset");
	CHECK(GpStateAdd(&st, K, 0.5) == GP_BAD_INPUT, "arm out of range");
	CHECK(GpStateAdd(&st, 0, NAN) == GP_BAD_INPUT, "NaN value");
	GpStateFree(&st);
	GpPriorFree(&prior);

	/* the same arm twice with zero noise: pivot 0 -> jitter status */
	{
		double		c[4] = {0.04, 0.0, 0.0, 0.04};
		double		m[2] = {0.5, 0.5};

		GpPriorInit(&prior, 2, m, c, 0.0);
		GpStateInit(&st, &prior, 4);
		CHECK(GpStateAdd(&st, 0, 0.7) == GP_OK, "first");
		rc = GpStateAdd(&st, 0, 0.7);
		CHECK(rc == GP_JITTER, "repeated arm, zero noise: %d", rc);
		CHECK(st.status == GP_JITTER, "state remembers jitter");
		CHECK(isfinite(st.mu[0]) && st.var[0] >= 0.0, "finite after jitter");
		GpStateFree(&st);
		GpPriorFree(&prior);
	}
	free(cov);
	free(mu0);
}

/* Prior fitting: means, shrinkage, NaN, RBF, tiny histories. */
static void
TestPriorFit(void)
{
	const int	m = 40,
				K = 12;
	double	   *h = malloc(sizeof(double) * m * K);
	GpPriorOptions opt;
	GpPrior		p;
	uint64_t	rng = 7;
	int			i,
				k,
				rc;

	for (i = 0; i < m; i++)
	{
		double		row = 0.2 * (PolicyRandUniform(&rng) - 0.5);

		for (k = 0; k < K; k++)
			h[i * K + k] = 0.5 + row + 0.02 * k + 0.05 * (PolicyRandUniform(&rng) - 0.5);
	}

	/* empirical, fixed shrinkage: exact mean and shrunk covariance */
	memset(&opt, 0, sizeof(opt));
	opt.shrinkage = 0.25;
	opt.noise_var = 1e-4;
	rc = GpPriorFit(h, m, K, &opt, &p);
	CHECK(rc == GP_OK, "empirical fit %d", rc);
	{
		double		s01 = 0.0,
					s00 = 0.0,
					m0 = 0.0,
					m1 = 0.0;

		for (i = 0; i < m; i++)
		{
			m0 += h[i * K];
			m1 += h[i * K + 1];
		}
		m0 /= m;
		m1 /= m;
		for (i = 0; i < m; i++)
		{
			s00 += (h[i * K] - m0) * (h[i * K] - m0);
			s01 += (h[i * K] - m0) * (h[i * K + 1] - m1);
		}
		CHECK_NEAR(p.mu0[0], m0, 1e-14, "column mean");
		CHECK_NEAR(p.cov[0], s00 / m, 1e-14, "diagonal not shrunk");
		CHECK_NEAR(p.cov[1], 0.75 * s01 / m, 1e-14, "off-diagonal shrunk");
		CHECK(p.noise_var == 1e-4, "given noise kept");
	}
	GpPriorFree(&p);

	/* fitted hyperparameters come from the grid and are finite */
	memset(&opt, 0, sizeof(opt));
	rc = GpPriorFit(h, m, K, &opt, &p);
	CHECK(rc >= 0, "fitted empirical %d", rc);
	CHECK(p.shrinkage > 0.0 && p.shrinkage < 1.0 && p.noise_var > 0.0 &&
		  isfinite(p.heldout_loglik), "fitted values %g %g %g", p.shrinkage,
		  p.noise_var, p.heldout_loglik);
	GpPriorFree(&p);

	/* RBF: symmetric, s^2 on the diagonal, correlations in (0, 1] */
	memset(&opt, 0, sizeof(opt));
	opt.kernel = GP_KERNEL_RBF;
	rc = GpPriorFit(h, m, K, &opt, &p);
	CHECK(rc >= 0, "rbf fit %d", rc);
	CHECK(p.lengthscale > 0.0 && p.signal_var > 0.0, "rbf parameters");
	for (i = 0; i < K; i++)
	{
		CHECK_NEAR(p.cov[i * K + i], p.signal_var, 1e-15, "rbf diagonal");
		for (k = 0; k < K; k++)
			CHECK(p.cov[i * K + k] == p.cov[k * K + i] && p.cov[i * K + k] > 0.0 &&
				  p.cov[i * K + k] <= p.signal_var, "rbf entry %d %d", i, k);
	}
	/* closer columns are more correlated: column 0 vs 1 beats 0 vs 11 */
	CHECK(p.cov[1] > p.cov[11], "rbf decays with distance");
	GpPriorFree(&p);

	/* NaN cells: column mean over the known cells */
	h[0] = NAN;
	h[K] = NAN;
	memset(&opt, 0, sizeof(opt));
	opt.shrinkage = 0.1;
	opt.noise_var = 1e-4;
	rc = GpPriorFit(h, m, K, &opt, &p);
	CHECK(rc >= 0, "NaN history %d", rc);
	{
		double		s = 0.0;

		for (i = 2; i < m; i++)
			s += h[i * K];
		CHECK_NEAR(p.mu0[0], s / (m - 2), 1e-14, "mean over known cells");
		for (i = 0; i < K * K; i++)
			CHECK(isfinite(p.cov[i]), "finite covariance with NaN history");
	}
	GpPriorFree(&p);

	/* empty and one-row histories: default prior, still usable */
	rc = GpPriorFit(NULL, 0, K, NULL, &p);
	CHECK(rc == GP_OK && p.mu0[0] == 0.5 && p.cov[1] > 0.0, "empty history");
	GpPriorFree(&p);
	rc = GpPriorFit(h + K, 1, K, NULL, &p);
	CHECK(rc == GP_OK && p.mu0[1] == h[K + 1], "one-row history");
	GpPriorFree(&p);

	/*
	 * Many arms, few rows: the grid is scored in low-rank form (Woodbury);
	 * it must agree with dense K x K factorisations, with held-out rows that
	 * have unknown cells too.
	 */
	{
		const int	m2 = 30,
					K2 = 90;
		double	   *h2 = malloc(sizeof(double) * m2 * K2);
		GpPrior		lr,
					dn;
		int			rc1,
					rc2;

		for (i = 0; i < m2; i++)
		{
			double		row = 0.3 * (PolicyRandUniform(&rng) - 0.5);

			for (k = 0; k < K2; k++)
				h2[i * K2 + k] = 0.5 + row * (k % 3) + 0.002 * k +
					0.05 * (PolicyRandUniform(&rng) - 0.5);
		}
		h2[3 * K2 + 7] = NAN;	/* odd rows are the held-out ones */
		h2[5 * K2 + 1] = NAN;
		h2[5 * K2 + 60] = NAN;
		h2[4 * K2 + 2] = NAN;	/* and a build row */
		memset(&opt, 0, sizeof(opt));
		rc1 = GpPriorFit(h2, m2, K2, &opt, &lr);
		opt.dense_fit = 1;
		rc2 = GpPriorFit(h2, m2, K2, &opt, &dn);
		CHECK(rc1 >= 0 && rc2 >= 0, "low-rank and dense fits %d %d", rc1, rc2);
		if (rc1 >= 0 && rc2 >= 0)
		{
			CHECK(lr.shrinkage == dn.shrinkage && lr.noise_var == dn.noise_var,
				  "same hyperparameters: %g/%g vs %g/%g", lr.shrinkage,
				  lr.noise_var, dn.shrinkage, dn.noise_var);
			CHECK(fabs(lr.heldout_loglik - dn.heldout_loglik) <=
				  1e-9 * fabs(dn.heldout_loglik),
				  "held-out log likelihood %.12g (low rank) vs %.12g (dense)",
				  lr.heldout_loglik, dn.heldout_loglik);
			GpPriorFree(&lr);
			GpPriorFree(&dn);
		}
		free(h2);
	}

	/* bad input */
	h[5] = INFINITY;
	CHECK(GpPriorFit(h, m, K, NULL, &p) == GP_BAD_INPUT, "inf rejected");
	CHECK(GpPriorFit(h, m, 0, NULL, &p) == GP_BAD_INPUT, "K = 0 rejected");
	free(h);
}

/* ----------------------------------------------------------- policy */

/* EI closed forms and beta schedule. */
static void
TestAcquisition(void)
{
	PolicyParams pp;
	double		ei,
				num = 0.0;
	int			i;

	CHECK_NEAR(PolicyExpectedImprovement(0.7, 0.0, 0.5), 0.2, 1e-15, "EI sigma 0 above");
	CHECK_NEAR(PolicyExpectedImprovement(0.4, 0.0, 0.5), 0.0, 0, "EI sigma 0 below");
	CHECK_NEAR(PolicyExpectedImprovement(0.5, 0.1, 0.5), 0.1 / sqrt(2 * M_PI), 1e-15,
			   "EI at mu = best");
	/* numeric integral of max(x - b, 0) N(x; 0.6, 0.05^2) */
	ei = PolicyExpectedImprovement(0.6, 0.05, 0.62);
	for (i = 0; i < 400000; i++)
	{
		double		x = 0.62 + (i + 0.5) * 1e-6;

		num += (x - 0.62) * exp(-0.5 * pow((x - 0.6) / 0.05, 2)) /
			(0.05 * sqrt(2 * M_PI)) * 1e-6;
	}
	CHECK_NEAR(ei, num, 1e-9, "EI against numeric integral");

	/*
	 * qmax=1: scores cannot pass 1, so EI counts E[(min(f, 1) - b)+].  Arm
	 * 0 (mu 0.99, sd 0.1) has most of its plain EI above 1; arm 1 (mu 0.99,
	 * sd 0.01) has not: plain EI picks arm 0, bounded EI arm 1, and qarm=0
	 * keeps the plain choice but scores the task by the bounded EI.
	 */
	{
		double		mu[2] = {0.99, 0.99},
					var[2] = {0.01, 0.0001};
		unsigned char avail[2] = {1, 1};
		const char *specs[] = {"max_ei", "max_ei:qmax=1", "max_ei:qmax=1:qarm=0"};
		int			want[] = {0, 1, 0};
		double		bounded0 = 0.0;

		for (i = 0; i < 1000000; i++)
		{
			double		x = 0.97 + (i + 0.5) * 1e-6;	/* up to 0.97 + 1 */

			bounded0 += (fmin(x, 1.0) - 0.97) * exp(-0.5 * pow((x - 0.99) / 0.1, 2)) /
				(0.1 * sqrt(2 * M_PI)) * 1e-6;
		}
		for (i = 0; i < 3; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.97;
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, NULL, avail, mu, &v) == 0 &&
				  v.arm == want[i], "%s picks arm %d (got %d)", specs[i], want[i], v.arm);
			if (i == 2)
				CHECK_NEAR(v.ei, bounded0, 1e-7, "qarm=0: the task EI is bounded");
			if (i == 0)
				CHECK(v.ei > 3 * bounded0, "plain EI counts the mass above 1 (%g)", v.ei);
		}
	}

	PolicyParamsDefault(&pp, POLICY_RR);
	CHECK_NEAR(PolicyBeta(&pp, 100, 0), 2 * log(100 * M_PI * M_PI / (6 * 0.1)), 1e-12,
			   "beta schedule t = 1");
	CHECK(PolicyBeta(&pp, 100, 5) > PolicyBeta(&pp, 100, 4), "beta grows with t");
	pp.beta = 2.5;
	CHECK(PolicyBeta(&pp, 100, 9) == 2.5, "constant beta");

	/*
	 * ce=X: cost-aware EI per cost^X.  Arm 1 has r times arm 0's EI and
	 * costs r^1.5 times as much: per second (X = 1) arm 0 wins, per
	 * cost^0.5 arm 1, per cost^2 arm 0.
	 */
	{
		double		mu[2] = {0.5, 0.6},
					var[2] = {0.01, 0.01},
					r = PolicyExpectedImprovement(0.6, 0.1, 0.55) /
			PolicyExpectedImprovement(0.5, 0.1, 0.55),
					cost[2] = {1.0, pow(r, 1.5)};
		unsigned char avail[2] = {1, 1};
		const char *specs[] = {"rr:cost:acq=ei", "rr:cost:acq=ei:ce=0.5", "rr:cost:acq=ei:ce=2"};
		int			want[] = {0, 1, 0};

		for (i = 0; i < 3; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.55;
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, cost, avail, mu, &v) == 0 &&
				  v.arm == want[i], "%s picks arm %d (got %d)", specs[i], want[i], v.arm);
		}
		/* first=1: no result yet, the highest mean; then EI per second again */
		for (i = 0; i < 2; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.55;
			v.n_obs = i;
			CHECK(PolicyParseSpec("rr:cost:acq=ei:first=1", &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, cost, avail, mu, &v) == 0 &&
				  v.arm == 1 - i, "first=1 with %d result(s) picks arm %d (got %d)",
				  i, 1 - i, v.arm);
		}
		CHECK(PolicyParseSpec("rr:cost:qmax=0", &pp, NULL, 0) != 0 &&
			  PolicyParseSpec("rr:cost:qarm=2", &pp, NULL, 0) != 0,
			  "qmax <= 0 and qarm = 2 refused");
		CHECK(PolicyParseSpec("rr:cost:ce=0", &pp, NULL, 0) != 0 &&
			  PolicyParseSpec("rr:cost:ce=3", &pp, NULL, 0) != 0, "ce out of (0, 2] refused");
	}
}

/* Expected improvement of the best of two independent normals, numerically. */
static double
BatchEiNumeric(double m1, double s1, double m2, double s2, double best)
{
	double		sum = 0.0,
				h = 1e-5;

	/* E[(max - b)+] = integral over x > b of P(max > x) */
	for (double x = best + h / 2; x < best + 2.0; x += h)
		sum += (1.0 - 0.5 * erfc(-(x - m1) / (s1 * M_SQRT2)) *
				0.5 * erfc(-(x - m2) / (s2 * M_SQRT2))) * h;
	return sum;
}

/*
 * la=M (lookahead task score): GpStateCov against the closed form, the
 * batch EI against numeric integrals, and a pick where the batch decides:
 * tenant A's next three candidates are one model three times over (fully
 * correlated), tenant B's three are independent and each a little worse
 * than A's first.  Next-candidate EI serves A; the EI of the batch of
 * three per second of it serves B.
 */
/*
 * blk=B: the task served last keeps its turn while it has run fewer than
 * B times in a row without improving; an improvement (streak 0) or B runs
 * give the turn back to the greedy score.
 */
static void
TestBlock(void)
{
	PolicyParams pp;
	PolicyTenantView v[3];
	uint64_t	rng = 1;
	const char *specs[] = {"max_ei:cost:blk=3", "hybrid:cost:blk=3:w=100"};

	for (int s = 0; s < 2; s++)
	{
		CHECK(PolicyParseSpec(specs[s], &pp, NULL, 0) == 0, "%s", specs[s]);
		memset(v, 0, sizeof(v));
		for (int i = 0; i < 3; i++)
		{
			v[i].id = i;
			v[i].arm = i;
			v[i].last_served = 10 + i;
			v[i].score = 1.0 + i;
		}
		/* task 2 has the best score; task 1 was served last */
		v[1].last_served = 20;
		for (int streak = 0; streak <= 4; streak++)
		{
			int			want = (streak >= 1 && streak < 3) ? 1 : 2;

			v[1].streak = streak;
			CHECK(PolicyPickTenant(&pp, 3, v, 21, &rng, NULL) == want,
				  "%s, streak %d: serve task %d", specs[s], streak, want);
		}
		v[1].streak = 1;
		v[1].arm = -1;
		CHECK(PolicyPickTenant(&pp, 3, v, 21, &rng, NULL) == 2,
			  "%s: a task with nothing to run gives its turn back", specs[s]);
	}
	CHECK(PolicyParseSpec("max_ei:blk=x", &pp, NULL, 0) != 0, "blk=x refused");
}

/*
 * lap=1 scores a batch by its best prefix per second, rg=M by the whole
 * batch's expected improvement per second of the next run only (two
 * independent candidates over best 0.55: N(0.5, 0.1^2), N(0.56, 0.05^2)).
 */
static void
TestLookaheadPrefix(PolicyTenantView *v)
{
	PolicyParams pp;
	double		bm[2] = {0.5, 0.56},
				bc[4] = {0.01, 0.0, 0.0, 0.0025},
				slow_first[2] = {10, 1},
				slow_second[2] = {1, 10},
				e1 = PolicyExpectedImprovement(0.5, 0.1, 0.55),
				e2,
				r;

	v->best = 0.55;
	CHECK(PolicyParseSpec("max_ei:cost:la=2", &pp, NULL, 0) == 0, "la=2");
	PolicyLookaheadScore(&pp, 2, bm, bc, slow_second, v, &e2);
	CHECK_NEAR(v->score, e2 / 11.0, 1e-15, "la=2: the whole batch per second");
	CHECK(PolicyParseSpec("max_ei:cost:la=2:lap=1", &pp, NULL, 0) == 0, "lap=1");
	PolicyLookaheadScore(&pp, 2, bm, bc, slow_second, v, &r);
	CHECK_NEAR(v->score, e1, 1e-15, "lap=1: the cheap first candidate alone");
	CHECK_NEAR(r, e1, 1e-15, "lap=1: the prefix's expected improvement");
	PolicyLookaheadScore(&pp, 2, bm, bc, slow_first, v, &r);
	CHECK(e2 / 11.0 > e1 / 10.0, "the batch beats its slow first member");
	CHECK_NEAR(v->score, e2 / 11.0, 1e-15, "lap=1: both candidates");
	CHECK(PolicyParseSpec("max_ei:cost:lap=2", &pp, NULL, 0) != 0, "lap=2 refused");

	CHECK(PolicyParseSpec("max_ei:cost:rg=2", &pp, NULL, 0) == 0 &&
		  PolicyRegretBatch(&pp) == 2, "rg=2 parsed");
	v->cost = 4.0;
	CHECK(PolicyRegretScore(&pp, 2, bm, bc, v, &r) == 0, "rg score");
	CHECK_NEAR(r, e2, 1e-15, "rg: the batch's expected improvement");
	CHECK_NEAR(v->score, e2 / 4.0, 1e-15, "rg: per second of the next run");
	CHECK(PolicyParseSpec("max_ei:cost:rg=2:tc=0", &pp, NULL, 0) == 0 &&
		  PolicyRegretScore(&pp, 2, bm, bc, v, NULL) == 0 && v->score == e2,
		  "rg with tc=0: not per second");
	CHECK(PolicyParseSpec("max_ei:cost:rg=2:qmax=0.5", &pp, NULL, 0) == 0 &&
		  PolicyRegretScore(&pp, 2, bm, bc, v, &r) == 0 && r == 0.0 &&
		  v->score == 0.0, "rg: nothing left above qmax");
	CHECK(PolicyParseSpec("max_ei:rg=17", &pp, NULL, 0) != 0, "rg=17 refused");
	CHECK(PolicyParseSpec("rr:cost:rg=3", &pp, NULL, 0) == 0 &&
		  PolicyRegretBatch(&pp) == 0, "rg ignored by round-robin");
	CHECK(PolicyRegretScore(&pp, 0, bm, bc, v, NULL) == POLICY_BAD_INPUT,
		  "rg: an empty batch refused");
}

static void
TestLookahead(void)
{
	double		mu0[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
				cov[36] = {0},
				bc[9],
				bm[3];
	GpPrior		prior;
	GpState		st;
	PolicyParams pp;
	PolicyTenantView v[2];
	int			arms[3] = {2, 0, 1};
	double		g,
				ei;
	uint64_t	rng = 1;

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			cov[i * 6 + j] = 0.01;
	for (int i = 3; i < 6; i++)
		cov[i * 6 + i] = 0.0081;
	cov[0 * 6 + 3] = cov[3 * 6 + 0] = 0.002;	/* for the closed-form check */
	CHECK(GpPriorInit(&prior, 6, mu0, cov, 1e-4) == 0, "lookahead prior");
	CHECK(GpStateInit(&st, &prior, 4) == 0 && GpStateAdd(&st, 3, 0.6) >= 0,
		  "lookahead state");
	CHECK(GpStateCov(&st, 3, arms, bc) == 0, "GpStateCov");
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
		{
			int			x = arms[a],
						y = arms[b];

			CHECK_NEAR(bc[a * 3 + b], cov[x * 6 + y] - cov[x * 6 + 3] * cov[3 * 6 + y] /
					   (cov[3 * 6 + 3] + 1e-4), 1e-12, "posterior covariance");
		}
	CHECK_NEAR(bc[0], st.var[2], 1e-12, "GpStateCov diagonal = var");
	GpStateFree(&st);

	/* batch EI: m = 1 exact, m = 2 independent and fully correlated */
	memset(&v[0], 0, sizeof(v[0]));
	v[0].best = 0.55;
	CHECK(PolicyParseSpec("max_ei:la=2", &pp, NULL, 0) == 0 && PolicyLookahead(&pp),
		  "la=2 parsed");
	bm[0] = 0.5;
	bm[1] = 0.56;
	bc[0] = 0.01;
	CHECK(PolicyLookaheadScore(&pp, 1, bm, bc, NULL, &v[0], &ei) == 0,
		  "lookahead m = 1");
	CHECK_NEAR(ei, PolicyExpectedImprovement(0.5, 0.1, 0.55), 1e-15, "m = 1: exact EI");
	bc[0] = 0.01;
	bc[1] = bc[2] = 0.0;
	bc[3] = 0.0025;
	PolicyLookaheadScore(&pp, 2, bm, bc, NULL, &v[0], &ei);
	g = BatchEiNumeric(0.5, 0.1, 0.56, 0.05, 0.55);
	CHECK(fabs(ei - g) < 0.03 * g, "batch EI, independent: %g vs %g", ei, g);
	CHECK(ei > PolicyExpectedImprovement(0.56, 0.05, 0.55) * 1.2,
		  "a batch gains more than its best member");
	bm[1] = 0.5;
	bc[1] = bc[2] = bc[3] = 0.01;
	PolicyLookaheadScore(&pp, 2, bm, bc, NULL, &v[0], &ei);
	g = PolicyExpectedImprovement(0.5, 0.1, 0.55);
	CHECK(fabs(ei - g) < 0.03 * g, "batch EI, one model twice: %g vs %g", ei, g);
	CHECK(v[0].score == ei, "tenant score not costed without cost");
	TestLookaheadPrefix(&v[0]);
	CHECK(PolicyParseSpec("max_ei:la=17", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("max_ei:la=-1", &pp, NULL, 0) != 0, "la out of range refused");
	CHECK(PolicyParseSpec("rr:cost:la=3", &pp, NULL, 0) == 0 && !PolicyLookahead(&pp),
		  "la ignored by round-robin");
	{
		double		c[4] = {2, 3, 4, 10};

		CHECK(PolicyParseSpec("max_ei:cost:lah=6", &pp, NULL, 0) == 0 &&
			  PolicyLookahead(&pp) == POLICY_LOOKAHEAD_MAX &&
			  PolicyLookaheadCut(&pp, 4, c) == 2, "lah=6: the candidates within 6 s");
		CHECK(PolicyParseSpec("max_ei:cost:lah=1:la=3", &pp, NULL, 0) == 0 &&
			  PolicyLookahead(&pp) == 3 && PolicyLookaheadCut(&pp, 3, c) == 1,
			  "lah=1: the next candidate at least, la=3 at most");
		CHECK(PolicyParseSpec("max_ei:lah=0", &pp, NULL, 0) != 0, "lah=0 refused");
	}

	/* the pick: A (arms 0-2, fully correlated) against B (arms 3-5) */
	cov[0 * 6 + 3] = cov[3 * 6 + 0] = 0.0;
	GpPriorFree(&prior);
	CHECK(GpPriorInit(&prior, 6, mu0, cov, 1e-4) == 0, "pick prior");
	{
		const char *specs[] = {"max_ei:cost", "max_ei:cost:la=1", "max_ei:cost:la=3",
		"hybrid:cost:la=3", "hybrid:cost:la=3:qmax=1:qarm=0", "max_ei:cost:lah=3",
		"max_ei:cost:rg=1", "max_ei:cost:rg=3", "hybrid:cost:rg=3:qmax=1:qarm=0",
		"max_ei:cost:la=3:lap=1"};
		/* lap=1: B's best prefix is its first candidate, A's is larger */
		int			want[] = {0, 0, 1, 1, 1, 1, 0, 1, 1, 0};
		double		cost[6] = {1, 1, 1, 1, 1, 1};

		for (int i = 0; i < 10; i++)
		{
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0, "%s", specs[i]);
			for (int t = 0; t < 2; t++)
			{
				unsigned char avail[6] = {0};
				PolicyArmScore top[3];
				double		m[3];
				int			a[3],
							n = 0;

				for (int k = 0; k < 3; k++)
					avail[3 * t + k] = 1;
				memset(&v[t], 0, sizeof(v[t]));
				v[t].id = t;
				v[t].best = 0.5;
				v[t].last_served = 8 + t;
				GpStateInit(&st, &prior, 4);
				PolicyTopArms(&pp, 6, st.mu, st.var, cost, avail, mu0, &v[t],
							  3, top, &n);
				CHECK(n == 3, "three candidates");
				if (PolicyLookahead(&pp))
				{
					n = PolicyLookaheadCut(&pp, n, cost);
					for (int k = 0; k < n; k++)
						m[k] = st.mu[a[k] = top[k].arm];
					CHECK(GpStateCov(&st, n, a, bc) == 0 &&
						  PolicyLookaheadScore(&pp, n, m, bc, cost, &v[t], NULL) == 0,
						  "lookahead score");
				}
				if (PolicyRegretBatch(&pp))
				{
					/* all costs 1: the EI ranking is the EI/s ranking */
					n = PolicyRegretBatch(&pp);
					for (int k = 0; k < n; k++)
						m[k] = st.mu[a[k] = top[k].arm];
					CHECK(GpStateCov(&st, n, a, bc) == 0 &&
						  PolicyRegretScore(&pp, n, m, bc, &v[t], NULL) == 0,
						  "remaining-regret score");
				}
				GpStateFree(&st);
			}
			CHECK(v[0].ei > v[1].ei, "A's next candidate has the larger EI");
			CHECK(PolicyPickTenant(&pp, 2, v, 10, &rng, NULL) == want[i],
				  "%s serves tenant %c", specs[i], "AB"[want[i]]);
		}
	}
	GpPriorFree(&prior);
}

/* The candidate is never an evaluated or running arm; ties by index. */
static void
TestBestArm(void)
{
	const int	K = 40;
	double		mu[40],
				var[40],
				cost[40];
	unsigned char avail[40];
	PolicyKind	kinds[] = {POLICY_RR, POLICY_MAX_EI, POLICY_MAX_GAP, POLICY_POPULAR,
	POLICY_FIFO, POLICY_HYBRID};
	uint64_t	rng = 11;
	int			trial,
				q,
				k;

	for (trial = 0; trial < 500; trial++)
	{
		int			n_avail = 0;

		for (k = 0; k < K; k++)
		{
			mu[k] = PolicyRandUniform(&rng);
			var[k] = 0.01 * PolicyRandUniform(&rng);
			cost[k] = 0.1 + 10 * PolicyRandUniform(&rng);
			avail[k] = PolicyRandUniform(&rng) < 0.3;
			n_avail += avail[k];
		}
		for (q = 0; q < (int) (sizeof(kinds) / sizeof(kinds[0])); q++)
		{
			PolicyParams pp;
			PolicyTenantView v;

			PolicyParamsDefault(&pp, kinds[q]);
			pp.cost_aware = trial % 2;
			memset(&v, 0, sizeof(v));
			v.best = 0.6;
			v.n_obs = trial % 7;
			CHECK(PolicyBestArm(&pp, K, mu, var, cost, avail, mu, &v) == 0, "best arm");
			if (n_avail == 0)
				CHECK(v.arm == -1, "no arm when none is available");
			else
				CHECK(v.arm >= 0 && avail[v.arm], "picked unavailable arm %d (kind %d)",
					  v.arm, kinds[q]);
		}
	}

	/* pruned EI equals the plain argmax */
	for (trial = 0; trial < 300; trial++)
	{
		PolicyParams pp;
		PolicyTenantView v;
		double		best = -1;
		int			arg = -1;

		for (k = 0; k < K; k++)
		{
			mu[k] = 0.5 + 0.3 * PolicyRandUniform(&rng);
			var[k] = (k % 5 == 0) ? 0.0 : 0.004 * PolicyRandUniform(&rng);
			avail[k] = PolicyRandUniform(&rng) < 0.8;
			cost[k] = 1.0;
		}
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		memset(&v, 0, sizeof(v));
		v.best = 0.75;
		PolicyBestArm(&pp, K, mu, var, NULL, avail, NULL, &v);
		for (k = 0; k < K; k++)
			if (avail[k])
			{
				double		e = PolicyExpectedImprovement(mu[k], sqrt(var[k]), 0.75);

				if (e > best)
				{
					best = e;
					arg = k;
				}
			}
		CHECK(v.arm == arg, "pruned EI argmax %d vs %d", v.arm, arg);
	}

	/* ties: lowest arm index; cost-aware EI prefers the cheaper twin */
	{
		PolicyParams pp;
		PolicyTenantView v;

		for (k = 0; k < K; k++)
		{
			mu[k] = 0.5;
			var[k] = 0.01;
			avail[k] = k >= 3;
			cost[k] = 1.0;
		}
		cost[9] = 0.5;
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		memset(&v, 0, sizeof(v));
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 3, "tie -> lowest available index, got %d", v.arm);
		pp.cost_aware = 1;
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 9, "cost-aware EI picks the cheaper arm, got %d", v.arm);
		PolicyParamsDefault(&pp, POLICY_RR);
		pp.cost_aware = 1;
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 9, "cost-aware UCB picks the cheaper arm, got %d", v.arm);
	}
}

/* Fill n views as if every task had a candidate with random scores. */
static void
RandomViews(PolicyTenantView *v, int n, uint64_t *rng, const PolicyParams *pp)
{
	int			i;
	double		mu[4],
				var[4];
	unsigned char avail[4] = {1, 1, 1, 1};

	for (i = 0; i < n; i++)
	{
		int			k;

		for (k = 0; k < 4; k++)
		{
			mu[k] = PolicyRandUniform(rng);
			var[k] = 0.01 * PolicyRandUniform(rng);
		}
		v[i].id = i;
		v[i].best = 0.5;
		PolicyBestArm(pp, 4, mu, var, NULL, avail, mu, &v[i]);
	}
}

/* Round-robin is fair; greedy is deterministic; hybrid floor; seeds. */
static void
TestPickTenant(void)
{
	enum
	{
	N = 9};
	PolicyTenantView v[N];
	PolicyParams pp;
	uint64_t	rng = 5;
	int			served[N];
	int64_t		d;
	int			i;

	/* rr: n x 20 decisions serve everyone exactly 20 times, in id order */
	memset(v, 0, sizeof(v));
	PolicyParamsDefault(&pp, POLICY_RR);
	RandomViews(v, N, &rng, &pp);
	for (i = 0; i < N; i++)
		v[i].last_served = -1;
	memset(served, 0, sizeof(served));
	for (d = 0; d < N * 20; d++)
	{
		int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

		CHECK(p == (int) (d % N), "rr order: decision %lld picked %d", (long long) d, p);
		if (p < 0)
			break;
		served[p]++;
		v[p].last_served = d;
	}
	for (i = 0; i < N; i++)
		CHECK(served[i] == 20, "rr fairness: task %d served %d times", i, served[i]);

	/* greedy: argmax score, ties lowest id; ineligible skipped */
	PolicyParamsDefault(&pp, POLICY_MAX_EI);
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = 1.0;
		v[i].last_served = 0;
		v[i].n_running = 0;
	}
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 0, "greedy tie -> lowest id");
	v[4].score = 2.0;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 4, "greedy argmax");
	v[4].arm = -1;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 0, "ineligible skipped");
	for (i = 0; i < N; i++)
		v[i].arm = -1;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == -1, "nothing eligible -> -1");

	/* warm start: the first N decisions serve every task once */
	PolicyParamsDefault(&pp, POLICY_MAX_EI);
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = (i == 2) ? 10.0 : 1.0 / (i + 1);
		v[i].last_served = -1;
	}
	memset(served, 0, sizeof(served));
	for (d = 0; d < N; d++)
	{
		int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

		served[p]++;
		v[p].last_served = d;
	}
	for (i = 0; i < N; i++)
		CHECK(served[i] == 1, "warm start: task %d served %d times", i, served[i]);

	/* spread: tasks with a run in flight wait while others are idle */
	for (i = 0; i < N; i++)
		v[i].n_running = 1;
	v[7].n_running = 0;
	CHECK(PolicyPickTenant(&pp, N, v, 50, &rng, NULL) == 7, "spread prefers idle task");
	pp.spread = 0;
	CHECK(PolicyPickTenant(&pp, N, v, 50, &rng, NULL) == 2, "without spread: argmax");
	for (i = 0; i < N; i++)
		v[i].n_running = 0;

	/* hybrid: task 0 always scores best, yet nobody waits more than w */
	{
		int			w;

		for (w = N; w <= 3 * N; w += N)
		{
			int64_t		last[N];
			int64_t		worst_wait = 0;

			PolicyParamsDefault(&pp, POLICY_HYBRID);
			pp.fairness_window = w;
			for (i = 0; i < N; i++)
			{
				v[i].arm = 0;
				v[i].score = (i == 0) ? 100.0 : 1.0 / (i + 1);
				v[i].last_served = -1;
				last[i] = -1;
			}
			memset(served, 0, sizeof(served));
			for (d = 0; d < 3000; d++)
			{
				int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

				CHECK(p >= 0, "hybrid picked nothing");
				if (p < 0)
					break;
				CHECK(d - last[p] <= w, "hybrid floor: task %d waited %lld > %d",
					  p, (long long) (d - last[p]), w);
				if (d - last[p] > worst_wait)
					worst_wait = d - last[p];
				last[p] = d;
				v[p].last_served = d;
				served[p]++;
				/* task 5 leaves and comes back: the floor must adapt */
				if (d == 1000)
					v[5].arm = -1;
				if (d == 1500)
				{
					v[5].arm = 0;
					last[5] = d;
					v[5].last_served = d;
				}
			}
			for (i = 1; i < N; i++)
				if (i != 5)
					CHECK(d - last[i] <= w, "task %d starving at the end", i);
			if (w == 3 * N)
				CHECK(served[0] > served[1] * 2, "hybrid still greedy: %d vs %d",
					  served[0], served[1]);
		}
	}

	/* hybrid streak guard: a task that does not improve yields */
	PolicyParamsDefault(&pp, POLICY_HYBRID);
	pp.streak_limit = 3;
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = (i == 0) ? 100.0 : 1.0;
		v[i].last_served = 10 + i;
		v[i].streak = 0;
	}
	v[0].streak = 3;
	v[0].last_served = 19;
	CHECK(PolicyPickTenant(&pp, N, v, 20, &rng, NULL) == 1, "streak guard -> least recent");
	v[0].streak = 2;
	CHECK(PolicyPickTenant(&pp, N, v, 20, &rng, NULL) == 0, "below the streak limit: greedy");

	/* random: same seed, same sequence; another seed, another one */
	{
		uint64_t	a = 99,
					b = 99,
					c = 100;
		int			same = 1,
					differ = 0;

		PolicyParamsDefault(&pp, POLICY_RANDOM);
		for (i = 0; i < N; i++)
		{
			v[i].arm = 0;
			v[i].last_served = 1;
			v[i].n_running = 0;
		}
		for (d = 0; d < 50; d++)
		{
			int			pa = PolicyPickTenant(&pp, N, v, d, &a, NULL);
			int			pb = PolicyPickTenant(&pp, N, v, d, &b, NULL);
			int			pc = PolicyPickTenant(&pp, N, v, d, &c, NULL);

			same &= pa == pb;
			differ |= pa != pc;
			CHECK(pa >= 0 && pa < N, "random in range");
		}
		CHECK(same, "random: same seed, same picks");
		CHECK(differ, "random: another seed, other picks");
	}
}

/* PolicyIndex picks exactly what PolicyPickTenant picks. */
static void
TestIndex(void)
{
	enum
	{
	N = 37};
	PolicyKind	kinds[] = {POLICY_RR, POLICY_MAX_EI, POLICY_MAX_GAP, POLICY_HYBRID,
	POLICY_MAX_WIDTH};
	uint64_t	rng = 123;
	int			q;

	for (q = 0; q < (int) (sizeof(kinds) / sizeof(kinds[0])); q++)
	{
		PolicyTenantView v[N];
		PolicyParams pp;
		PolicyIndex idx;
		int64_t		d;
		int			i,
					mismatches = 0;

		memset(v, 0, sizeof(v));
		PolicyParamsDefault(&pp, kinds[q]);
		pp.fairness_window = 2 * N;
		RandomViews(v, N, &rng, &pp);
		for (i = 0; i < N; i++)
			v[i].last_served = -1;
		CHECK(PolicyIndexInit(&idx, v, N, 0) == 0, "index init");
		for (d = 0; d < 3000; d++)
		{
			uint64_t	r1 = d,
						r2 = d;
			int			a = PolicyPickTenant(&pp, N, v, d, &r1, NULL);
			int			b = PolicyIndexPick(&idx, &pp, d, &r2, NULL);
			double		mu[4],
						var[4];
			unsigned char avail[4] = {1, 1, 1, 1};
			int			k;

			mismatches += a != b;
			if (a < 0)
				break;
			/* serve a: new scores, sometimes it runs out of arms */
			v[a].last_served = d;
			for (k = 0; k < 4; k++)
			{
				mu[k] = PolicyRandUniform(&rng);
				var[k] = 0.01 * PolicyRandUniform(&rng);
			}
			v[a].n_obs++;
			v[a].streak = PolicyRandUniform(&rng) < 0.5 ? v[a].streak + 1 : 0;
			PolicyBestArm(&pp, 4, mu, var, NULL, avail, mu, &v[a]);
			if (PolicyRandUniform(&rng) < 0.01)
				v[a].arm = -1;
			PolicyIndexUpdate(&idx, a);
		}
		CHECK(mismatches == 0, "index vs scan (%s): %d mismatches",
			  PolicyName(kinds[q]), mismatches);
		PolicyIndexFree(&idx);
	}
}

/* (acq, arm) pairs best first: larger acquisition, then lower arm. */
static int
CmpArmScore(const void *a, const void *b)
{
	const PolicyArmScore *x = a,
			   *y = b;

	if (x->acq != y->acq)
		return x->acq > y->acq ? -1 : 1;
	return x->arm - y->arm;
}

/*
 * PolicyTopArms under EI keeps exactly the ntop best arms of a full scan
 * (same values, same tie order), whatever the scale of mu - best and of
 * the variances: its pruning bound must never cut a winner.
 */
static void
TestTopArmsEi(void)
{
	enum
	{
	K = 60};
	const int	ntops[] = {1, 2, 4, 7, K};
	double		mu[K],
				var[K],
				cost[K];
	unsigned char avail[K];
	uint64_t	rng = 77;
	int			bad = 0;

	for (int trial = 0; trial < 3000; trial++)
	{
		PolicyParams pp;
		PolicyArmScore all[K],
					top[K];
		double		scale = pow(10.0, -6.0 + 7.0 * PolicyRandUniform(&rng));
		int			n_all = 0;

		for (int k = 0; k < K; k++)
		{
			/* some twins, some zero variances, some huge |z| */
			int			twin = k > 0 && PolicyRandUniform(&rng) < 0.1;

			mu[k] = twin ? mu[k - 1] : 0.5 + scale * (2.0 * PolicyRandUniform(&rng) - 1.0);
			var[k] = twin ? var[k - 1] :
				PolicyRandUniform(&rng) < 0.05 ? 0.0 :
				pow(10.0, -30.0 + 30.0 * PolicyRandUniform(&rng));
			cost[k] = pow(10.0, -2.0 + 4.0 * PolicyRandUniform(&rng));
			avail[k] = PolicyRandUniform(&rng) < 0.8;
		}
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		pp.cost_aware = trial % 2;
		for (int k = 0; k < K; k++)
			if (avail[k])
			{
				double		c = cost[k] > 1e-9 ? cost[k] : 1e-9;

				all[n_all].arm = k;
				all[n_all].acq = PolicyExpectedImprovement(mu[k], sqrt(var[k]), 0.5);
				if (pp.cost_aware)
					all[n_all].acq /= c;
				n_all++;
			}
		qsort(all, n_all, sizeof(PolicyArmScore), CmpArmScore);
		for (int q = 0; q < (int) (sizeof(ntops) / sizeof(ntops[0])); q++)
		{
			PolicyTenantView v;
			int			n = -1,
						want = ntops[q] < n_all ? ntops[q] : n_all;

			memset(&v, 0, sizeof(v));
			v.best = 0.5;
			v.n_obs = 3;
			CHECK(PolicyTopArms(&pp, K, mu, var, cost, avail, NULL, &v,
								ntops[q], top, &n) == 0, "top arms");
			if (n != want)
				bad++;
			for (int i = 0; i < n && i < want; i++)
				if (top[i].arm != all[i].arm || top[i].acq != all[i].acq)
				{
					bad++;
					break;
				}
		}
	}
	CHECK(bad == 0, "pruned EI ranking differs from the full scan in %d cases", bad);
}

/*
 * PolicyIndexTop lists the views in the order of a full sort, leaves out
 * skip, and leaves both trees as they were.
 */
static void
TestIndexTop(void)
{
	enum
	{
	N = 37};
	PolicyTenantView v[N];
	PolicyParams pp;
	uint64_t	rng = 5;
	int			bad = 0;

	PolicyParamsDefault(&pp, POLICY_HYBRID);
	for (int trial = 0; trial < 200; trial++)
	{
		PolicyIndex idx;
		int		   *best0,
				   *lrs0;
		int			idle_only = trial % 2;

		memset(v, 0, sizeof(v));
		RandomViews(v, N, &rng, &pp);
		for (int i = 0; i < N; i++)
		{
			v[i].id = (int64_t) (PolicyRandUniform(&rng) * 8);	/* ties */
			v[i].last_served = (int64_t) (PolicyRandUniform(&rng) * 20) - 1;
			v[i].n_running = PolicyRandUniform(&rng) < 0.3;
			if (PolicyRandUniform(&rng) < 0.2)
				v[i].arm = -1;
			if (PolicyRandUniform(&rng) < 0.2)
				v[i].score = v[(i + 1) % N].score;
		}
		CHECK(PolicyIndexInit(&idx, v, N, idle_only) == 0, "index init");
		best0 = malloc(sizeof(int) * 2 * idx.size);
		lrs0 = malloc(sizeof(int) * 2 * idx.size);
		memcpy(best0, idx.best, sizeof(int) * 2 * idx.size);
		memcpy(lrs0, idx.lrs, sizeof(int) * 2 * idx.size);
		for (int by_lrs = 0; by_lrs <= 1; by_lrs++)
			for (int k = 1; k <= N + 1; k += 1 + k / 4)
			{
				int			skip = (trial % 3 == 0) ? -1 :
					(trial % 3 == 1) ? (by_lrs ? idx.lrs[1] : idx.best[1]) :
					(int) (PolicyRandUniform(&rng) * N);
				int			out[N + 1],
							want[N],
							n_want = 0,
							n;

				/* the full sort: selection by the trees' own order */
				for (int i = 0; i < N; i++)
				{
					int			in = v[i].arm >= 0 &&
						(by_lrs || !idle_only || v[i].n_running == 0);

					if (in && i != skip)
						want[n_want++] = i;
				}
				for (int a = 0; a < n_want; a++)
					for (int b = a + 1; b < n_want; b++)
					{
						const PolicyTenantView *x = &v[want[a]],
								   *y = &v[want[b]];
						int			later = by_lrs ?
							(y->last_served < x->last_served ||
							 (y->last_served == x->last_served &&
							  (y->id < x->id || (y->id == x->id && want[b] < want[a])))) :
							(y->score > x->score ||
							 (y->score == x->score &&
							  (y->id < x->id || (y->id == x->id && want[b] < want[a]))));

						if (later)
						{
							int			tmp = want[a];

							want[a] = want[b];
							want[b] = tmp;
						}
					}
				n = PolicyIndexTop(&idx, by_lrs, skip, k, out);
				if (n != (k < n_want ? k : n_want))
					bad++;
				for (int i = 0; i < n && i < n_want; i++)
					bad += out[i] != want[i];
				if (memcmp(best0, idx.best, sizeof(int) * 2 * idx.size) != 0 ||
					memcmp(lrs0, idx.lrs, sizeof(int) * 2 * idx.size) != 0)
					bad++;
			}
		free(best0);
		free(lrs0);
		PolicyIndexFree(&idx);
	}
	CHECK(bad == 0, "PolicyIndexTop: %d differences from the full sort", bad);
}

/* A diagonal prior of K arms with the given means (variance 0.04). */
static void
DiagPrior(GpPrior *p, int K, const double *mu)
{
	double	   *cov = calloc((size_t) K * K, sizeof(double));

	for (int k = 0; k < K; k++)
		cov[(size_t) k * K + k] = 0.04;
	GpPriorInit(p, K, mu, cov, 1e-4);
	free(cov);
}

/* A world of K arms under policy spec, with a tenant per cap in caps[]. */
static void
MakeWorld(DecisionWorld *w, int K, const char *spec, int ntenants)
{
	PolicyParams pp;

	CHECK(PolicyParseSpec(spec, &pp, NULL, 0) == 0, "spec %s", spec);
	CHECK(DecisionWorldInit(w, K, NULL, NULL, &pp) == 0, "world init");
	for (int i = 0; i < ntenants; i++)
		CHECK(DecisionAddTenant(w, 0) == i, "tenant %d", i);
}

/* Add a classification task of tenant 'tenant' with the given id. */
static DecisionTask *
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

/*
 * One random change to what the catalog says about a task: mostly a new
 * score, sometimes a changed or withdrawn one, runtimes (valid or not),
 * fallbacks and arm states.
 */
static void
ChangeTaskState(int K, double *score, double *seconds, double *fallback,
				unsigned char *state, uint64_t *rng)
{
	int			k = (int) (PolicyRandUniform(rng) * K);
	double		u = PolicyRandUniform(rng);
	const double odd[] = {-1.0, 0.0, INFINITY, -INFINITY, NAN};

	if (u < 0.5)
	{
		score[k] = isnan(score[k]) ? PolicyRandUniform(rng) : score[k];
		state[k] = DECISION_ARM_OBSERVED;
	}
	else if (u < 0.6)
		score[k] = PolicyRandUniform(rng) < 0.3 ? NAN : PolicyRandUniform(rng);
	else if (u < 0.75)
		seconds[k] = 1.0 + 10.0 * PolicyRandUniform(rng);
	else if (u < 0.8)
		seconds[k] = odd[(int) (PolicyRandUniform(rng) * 5)];
	else if (u < 0.9)
		fallback[k] = PolicyRandUniform(rng) < 0.2 ? -2.0 : 5.0 * PolicyRandUniform(rng);
	else
		state[k] = (unsigned char) (1 + (int) (PolicyRandUniform(rng) * 4));
}

/* Differences between two tasks' synced state (posteriors to 1e-8). */
static int
TaskDiffs(const DecisionTask *a, const DecisionTask *b, int K)
{
	int			bad = 0;

	for (int k = 0; k < K; k++)
	{
		bad += a->arm[k] != b->arm[k] || a->avail[k] != b->avail[k];
		bad += !(a->score[k] == b->score[k] || (isnan(a->score[k]) && isnan(b->score[k])));
		bad += !(a->seconds[k] == b->seconds[k] ||
				 (isnan(a->seconds[k]) && isnan(b->seconds[k])));
		bad += a->fallback[k] != b->fallback[k] || a->cost[k] != b->cost[k];
		bad += fabs(a->gp.mu[k] - b->gp.mu[k]) > 1e-8 ||
			fabs(a->gp.var[k] - b->gp.var[k]) > 1e-8;
	}
	return bad + (a->best != b->best || a->n_obs != b->n_obs || a->n_left != b->n_left);
}

/*
 * A task synced after every change equals, after each, a new task synced
 * once with the same state: DecisionSyncTask's shortcuts for unchanged
 * scores, runtimes and states miss nothing.
 */
static void
TestDecisionSync(void)
{
	enum
	{
	K = 24};
	double		cov[K * K],
				mu0[K],
				score[K],
				seconds[K],
				fallback[K],
				given[K];
	unsigned char state[K];
	uint64_t	rng = 99;
	GpPrior		prior;
	DecisionWorld wa;
	DecisionTask *a;
	DecisionTaskState ts;
	int			bad = 0;

	RandomPsd(cov, K, 4, &rng);
	for (int k = 0; k < K; k++)
	{
		mu0[k] = 0.5;
		score[k] = seconds[k] = NAN;
		fallback[k] = given[k] = 1.0;
		state[k] = DECISION_ARM_AVAILABLE;
	}
	CHECK(GpPriorInit(&prior, K, mu0, cov, 1e-3) == 0, "prior");
	MakeWorld(&wa, K, "hybrid", 1);
	DecisionSetPrior(&wa, DECISION_CLASSIFICATION, &prior);
	a = AddTask(&wa, 1, 0, NULL);
	memset(&ts, 0, sizeof(ts));
	ts.score = score;
	ts.state = state;
	for (int step = 0; step < 400; step++)
	{
		DecisionWorld wb;
		DecisionTask *b;

		ChangeTaskState(K, score, seconds, fallback, state, &rng);
		ts.seconds = step % 17 == 16 ? NULL : seconds;
		ts.fallback_cost = step % 3 == 0 ? fallback : NULL;
		if (ts.fallback_cost)
			memcpy(given, fallback, sizeof(given));
		DecisionSyncTask(&wa, a, &ts);
		/* a new task told the same, fallbacks as a last had them */
		MakeWorld(&wb, K, "hybrid", 1);
		DecisionSetPrior(&wb, DECISION_CLASSIFICATION, &prior);
		b = AddTask(&wb, 1, 0, NULL);
		ts.fallback_cost = given;
		DecisionSyncTask(&wb, b, &ts);
		bad += TaskDiffs(a, b, K) > 0;
		DecisionWorldFree(&wb);
	}
	CHECK(bad == 0, "task synced step by step differs from one synced once: %d steps", bad);
	CHECK(a->n_obs > 5 && a->n_left > 0, "the test saw scores (%d) and free arms", a->n_obs);
	DecisionWorldFree(&wa);
	GpPriorFree(&prior);
}

/* Decide, start, and return the chosen (task id, arm) as id * 100 + arm. */
static int64_t
NextAndStart(DecisionWorld *w)
{
	DecisionChoice c;
	DecisionTask *t;

	if (DecisionNext(w, &c) != 0 || c.chosen.task < 0)
		return -1;
	t = w->tasks[c.chosen.task];
	DecisionStart(w, t, c.chosen.arm);
	return t->id * 100 + c.chosen.arm;
}

/*
 * fifo through the world: never-served tasks first (lowest id on ties),
 * untried arms in catalog order, never a running, observed, retired or
 * ineligible arm; an interrupted arm comes back.
 */
static void
TestDecisionFifo(void)
{
	const int	K = 4;
	double		mu[4] = {0.5, 0.5, 0.5, 0.5};
	unsigned char elig[4] = {0, 1, 1, 1};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *a,
			   *b;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "fifo", 2);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	a = AddTask(&w, 10, 0, NULL);
	b = AddTask(&w, 11, 1, elig);
	CHECK(NextAndStart(&w) == 1000, "fifo: task 10, arm 0");
	CHECK(NextAndStart(&w) == 1101, "fifo: task 11 skips its ineligible arm 0");
	CHECK(NextAndStart(&w) == 1001, "fifo: task 10 again, arm 1 (arm 0 running)");
	DecisionObserve(&w, a, 0, 0.7, 1.0);
	DecisionEnd(&w, a, 1, 0);	/* failed: retired */
	DecisionEnd(&w, b, 1, 1);	/* interrupted: back */
	CHECK(NextAndStart(&w) == 1101, "fifo: the interrupted arm is tried again");
	CHECK(NextAndStart(&w) == 1002, "fifo: observed and failed arms skipped");
	CHECK(a->n_left == 1 && a->n_obs == 1 && a->n_running == 1, "counters %d %d %d",
		  a->n_left, a->n_obs, a->n_running);
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Device placement (DecisionSetPlacement): an arm no free device can run
 * now is never chosen, reopening it brings it back, nothing is chosen
 * when every arm is closed, and the chosen arm's cost is its estimate
 * times the factor of the device kind it gets.
 */
static void
TestDecisionPlacement(void)
{
	const int	K = 3;
	double		mu[3] = {0.5, 0.5, 0.5};
	unsigned char open[3] = {0, 1, 1};
	unsigned char closed[3] = {0, 0, 0};
	double		factor[3] = {1.0, 1.0, 0.25};
	GpPrior		prior;
	DecisionWorld w;
	DecisionChoice c;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "fifo", 1);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	(void) AddTask(&w, 10, 0, NULL);
	CHECK(DecisionSetPlacement(&w, open, factor) == 0, "placement set");
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 1,
		  "placement: the closed arm 0 is skipped (got %d)", c.chosen.arm);
	open[1] = 0;
	DecisionSetPlacement(&w, open, factor);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 2 && fabs(c.chosen.cost - 0.25) < 1e-12,
		  "placement: arm 2 at its placed cost 0.25 (got arm %d cost %g)",
		  c.chosen.arm, c.chosen.cost);
	DecisionSetPlacement(&w, closed, factor);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task == -1,
		  "placement: nothing runs when every arm is closed");
	DecisionSetPlacement(&w, NULL, NULL);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 0 && fabs(c.chosen.cost - 1.0) < 1e-12,
		  "placement: without placement arm 0 again, at its own cost (got arm %d cost %g)",
		  c.chosen.arm, c.chosen.cost);
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Fair shares: with 2 slots, a tenant with many tasks gets at most one
 * slot while another tenant waits, and every slot when it waits alone; a
 * tenant's own cap and max_runs hold; a blocked task never runs.
 */
static void
TestDecisionFairShare(void)
{
	const int	K = 3;
	double		mu[3] = {0.5, 0.6, 0.7};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *a1,
			   *a2,
			   *b;
	DecisionChoice c;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "hybrid:cost", 2);
	w.slots = 2;
	w.tenant_cap = -1;
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	a1 = AddTask(&w, 1, 0, NULL);
	a2 = AddTask(&w, 2, 0, NULL);
	DecisionStart(&w, a1, 0);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0 &&
		  w.tasks[c.chosen.task]->tenant == 0, "alone, tenant 0 may take the second slot");
	b = AddTask(&w, 3, 1, NULL);
	CHECK(DecisionSharedCap(&w) == INT_MAX, "one tenant waited: no shared cap yet");
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task == b->index,
		  "another tenant waits: tenant 0 is at its fair share (got task %d)", c.chosen.task);
	CHECK(DecisionSharedCap(&w) == 1, "fair share of 2 slots over 2 tenants: 1");
	CHECK(!DecisionEligible(&w, a2), "tenant 0's other task waits");
	DecisionBlock(&w, b, 1);
	CHECK(DecisionNext(&w, &c) == 0 && w.tasks[c.chosen.task]->tenant == 0,
		  "the other tenant blocked: tenant 0 may use the slot");
	DecisionBlock(&w, b, 0);
	DecisionSetTenantCap(&w, 1, 1);
	DecisionStart(&w, b, 0);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0 &&
		  w.tasks[c.chosen.task]->tenant == 0, "tenant 1 at its own cap of 1");
	DecisionEnd(&w, b, 0, 1);
	DecisionSetMaxRuns(&w, b, 1, 1);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task != b->index, "max_runs reached");
	w.tenant_cap = 0;
	DecisionStart(&w, a2, 1);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.task >= 0, "no shared cap: tenant 0 runs a third");
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Fair shares while every slot is busy (the run budget): a tenant holding
 * both slots is over its share once a second tenant wants a run, that
 * tenant is starved; nobody is once each holds one, or with no shared cap,
 * or when the newcomer has nothing it could run.
 */
static void
TestDecisionFairSharesFull(void)
{
	const int	K = 3;
	double		mu[3] = {0.5, 0.6, 0.7};
	GpPrior		prior;
	DecisionWorld w;
	DecisionTask *a1,
			   *b;
	unsigned char starved[2],
				over[2];

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "hybrid:cost", 2);
	w.slots = 2;
	w.tenant_cap = -1;
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	a1 = AddTask(&w, 1, 0, NULL);
	DecisionStart(&w, a1, 0);
	DecisionStart(&w, a1, 1);
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0],
		  "alone, two runs are not over any share");
	b = AddTask(&w, 2, 1, NULL);
	CHECK(DecisionFairShares(&w, starved, over) == 1 && starved[1] && !starved[0] &&
		  over[0] && !over[1], "a newcomer is starved, the holder of both slots over its share");
	DecisionBlock(&w, b, 1);
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0],
		  "a newcomer with nothing to run starves nobody");
	DecisionBlock(&w, b, 0);
	DecisionEnd(&w, a1, 1, 1);
	DecisionStart(&w, b, 0);
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0] && !over[1],
		  "one slot each: nobody starved or over");
	DecisionEnd(&w, b, 0, 1);
	DecisionStart(&w, a1, 1);
	w.tenant_cap = 0;
	CHECK(DecisionFairShares(&w, starved, over) == 0 && !over[0],
		  "no shared cap: no fair share to enforce");
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/*
 * Per-class arms (DecisionSetArmPerClass): the refit learns their time per
 * class, and a task of 10 classes costs 10 times a binary task on them,
 * the same on the other arms.
 */
static void
TestDecisionPerClassCost(void)
{
	const int	K = 2,
				mc = 12;
	double		rt[12 * 2],
				sz[12 * 3];
	unsigned char per_class[2] = {1, 0};
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTask *a,
			   *b;
	int			steps = 0;

	for (int i = 0; i < mc; i++)
	{
		double		classes = 2 + (i % 5) * 2;

		sz[3 * i] = 100 + 400 * i;
		sz[3 * i + 1] = 10;
		sz[3 * i + 2] = classes;
		/* 0.05 s of start and load, then work */
		rt[i * K] = 0.05 + 1e-4 * sz[3 * i] * (classes > 2 ? classes : 1);
		rt[i * K + 1] = 0.05 + 1e-4 * sz[3 * i];
	}
	memset(&in, 0, sizeof(in));
	in.K = K;
	in.cost.mc = mc;
	in.cost.seconds = rt;
	in.cost.sizes = sz;
	in.per_class = per_class;
	MakeWorld(&w, K, "hybrid:cost", 1);
	CHECK(DecisionSetArmPerClass(&w, per_class) == 0, "per-class arms set");
	RefitInit(&r, K, 0);
	CHECK(RefitMaybeStart(&r, &in, 0.0) == 1, "refit started");
	while (RefitStep(&r, &w) == 0 && steps++ < 100)
		;
	CHECK(r.have_live && r.live.have_cost, "cost model fitted");
	memset(&s, 0, sizeof(s));
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 1000;
	s.features = 10;
	s.id = 1;
	s.classes = 10;
	a = DecisionAddTask(&w, &s);
	s.id = 2;
	s.classes = 2;
	b = DecisionAddTask(&w, &s);
	/* the true times: 1.05 s and 0.15 s on arm 0, 0.15 s on arm 1 */
	CHECK(a && fabs(log(a->cost[0] / 1.05)) < 0.2,
		  "per-class arm, 10 classes: %g s for 1.05", a ? a->cost[0] : NAN);
	CHECK(b && fabs(log(b->cost[0] / 0.15)) < 0.2,
		  "per-class arm, 2 classes: %g s for 0.15", b ? b->cost[0] : NAN);
	CHECK(a && b && fabs(a->cost[1] / b->cost[1] - 1.0) < 0.05,
		  "other arm: classes do not matter (got %g)", a && b ? a->cost[1] / b->cost[1] : NAN);
	CHECK(fabs(w.cost_overhead - 0.8 * 0.06) < 1e-9,
		  "overhead: 0.8 x the shortest run (%g)", w.cost_overhead);
	DecisionWorldFree(&w);
	RefitFree(&r);
}

/*
 * The live cost model (src/costmodel.c) on data it can be checked on:
 * runs generated by its own model with known overhead and rates.
 */
#define FC_K 6
static const CostArm fc_arms[FC_K] = {
	/* formula, family, work, width, inner, out, per_class, ref_rate, max_passes, ref_passes, pass_power */
	{COST_LINEAR, 0, 1, 0, 0, 0, 1, 1e-7, 0, 0, 0},	/* softmax-like */
	{COST_LINEAR, 0, 3, 0, 0, 0, 1, 1e-7, 0, 0, 0},	/* the same, 3x the iterations */
	{COST_KNN, 2, 1, 0, 0, 0, 0, 1e-7, 0, 0, 0},
	{COST_KNN, 2, 1, 0, 0, 0, 0, 1e-7, 0, 0, 0},
	{COST_FOREST, 4, 2, 0, 0, 0, 0, 1e-7, 0, 0, 0},
	{COST_NET, 5, 1, 64, 2048, 32, 0, 1e-9, 0, 0, 0},
};

/* True seconds of arm k: machine x3, knn family x0.5, arm 1 x2 its work. */
static double
FcTrueWork(int k, double n, double d, double c)
{
	double		f[FC_K] = {3, 6, 1.5, 1.5, 3, 3};

	return f[k] * fc_arms[k].ref_rate * exp(CostLogComplexity(&fc_arms[k], n, d, c));
}

static void
TestFamilyCostModel(void)
{
	enum {MC = 12};
	double		sizes[MC * 3],
				sec[MC * FC_K],
				train[MC * FC_K],
				seconds[FC_K],
				est[FC_K],
				est2[FC_K],
				base[FC_K],
				o;
	CostModel	m;
	CostArm		bad[FC_K];
	const CostData fc_data = {MC, sizes, NULL, sec, train, NULL, NULL},
				no_train = {MC, sizes, NULL, sec, NULL, NULL, NULL};

	/* complexity formulas: how each grows */
	CHECK_NEAR(CostLogComplexity(&fc_arms[2], 1000, 10, 2), log((200.0 * 800 + 2.26 * 1000 * 10) / 0.16),
			   1e-12, "knn: validation x training rows, plus 2.26 per cell");
	CHECK_NEAR(CostLogComplexity(&fc_arms[2], 1e6, 10, 2) - CostLogComplexity(&fc_arms[2], 5e5, 10, 2),
			   log(4.0), 1e-3, "knn: twice the rows of a large task, about 4x the work");
	CHECK_NEAR(CostLogComplexity(&fc_arms[0], 1000, 10, 10) - CostLogComplexity(&fc_arms[0], 1000, 10, 2),
			   log(10.0), 1e-12, "per-class family: 10 classes, 10x a binary task");
	CHECK_NEAR(CostLogComplexity(&fc_arms[2], 1000, 10, 10) - CostLogComplexity(&fc_arms[2], 1000, 10, 2),
			   0.0, 1e-12, "knn: classes do not matter");
	CHECK_NEAR(CostLogComplexity(&fc_arms[1], 1000, 10, 2) - CostLogComplexity(&fc_arms[0], 1000, 10, 2),
			   log(3.0), 1e-12, "work from parameters multiplies");
	CHECK_NEAR(CostLogComplexity(&fc_arms[5], 100, 10, 3),
			   log(100.0 * (10 * 64 + 2048 + 32 * 3)), 1e-12, "net: layer products per row");
	{
		/* mlp: 2,000 steps of 200 rows, 10 to 200 epochs (tr_mlp.c); 50 per unit */
		CostArm		mlp = {COST_MLP, 0, 1, 64, 0, 10, 0, 1e-9, 0, 0, 0};
		double		per_row = 100 * 64 + 10 * 3 + 50 * 64;

		CHECK_NEAR(CostLogComplexity(&mlp, 1000, 100, 3), log(800 * 200 * per_row), 1e-9,
				   "mlp on 1,000 rows: 200 epochs");
		CHECK_NEAR(CostLogComplexity(&mlp, 10000, 100, 3), log(8000 * 50 * per_row), 1e-9,
				   "mlp on 10,000 rows: 40 steps an epoch, 50 epochs");
		CHECK_NEAR(CostLogComplexity(&mlp, 1e6, 100, 3), log(8e5 * 10 * per_row), 1e-3,
				   "mlp on a million rows: 10 epochs");
	}
	CHECK(CostFormulaOf("gbt") == COST_BOOST && CostFormulaOf("mlp") == COST_MLP &&
		  CostFormulaOf("knn") == COST_KNN && CostFormulaOf("cnn") == COST_NET &&
		  CostFormulaOf("nonesuch") == COST_LINEAR && !CostFamilyKnown("nonesuch") &&
		  CostFamilyKnown("gbt"), "families map to formulas");

	/* nothing measured: the reference model */
	CHECK(CostModelFitData(&m, fc_arms, FC_K, NULL) == 0, "reference fit");
	CHECK_NEAR(CostOverhead(&m, 1000, 100), 0.1 + 0.5e-6 * 1e5, 1e-12, "reference overhead");
	for (int k = 0; k < FC_K; k++)
		seconds[k] = NAN;
	CostTaskEstimate(&m, 1000, 100, 2, 1, NAN, seconds, NULL, NULL, &o, est);
	CHECK_NEAR(est[2], o + 1e-7 * (200.0 * 800 + 2.26 * 1000 * 100) / 0.16, 1e-9,
			   "reference estimate of a knn");
	CostModelFree(&m);

	/* measured: 12 tasks of different sizes, 0.2 s + 1 us per cell fixed */
	for (int i = 0; i < MC; i++)
	{
		double		n = 300 * (i + 1),
					d = 5 + 7 * (i % 4),
					c = 2 + (i % 3) * 4;

		sizes[3 * i] = n;
		sizes[3 * i + 1] = d;
		sizes[3 * i + 2] = c;
		for (int k = 0; k < FC_K; k++)
		{
			/* arm 3 is never measured: it has its family's rate */
			double		w = FcTrueWork(k, n, d, c);

			train[i * FC_K + k] = k == 3 ? NAN : w;
			sec[i * FC_K + k] = k == 3 ? NAN : 0.2 + 1e-6 * n * d + w;
		}
	}
	CHECK(CostModelFitData(&m, fc_arms, FC_K, &fc_data) == 0, "fit");
	CHECK_NEAR(m.o0, 0.2, 1e-6, "fixed overhead recovered");
	CHECK_NEAR(m.o1, 1e-6, 1e-9, "overhead per cell recovered");
	CHECK(m.machine > log(2.0) && m.machine < log(3.5), "machine factor about 3 (%g)", exp(m.machine));
	{
		CostModel	nofit;

		CHECK(CostModelFitData(&nofit, fc_arms, FC_K, &no_train) == 0 &&
			  nofit.machine > log(2.0) && nofit.machine < log(5.0),
			  "without the trainer's fit times: rates from wall time past the overhead (%g)",
			  exp(nofit.machine));
		CostModelFree(&nofit);
	}
	/* a new size: every measured arm within 15%, the unmeasured knn within 40% */
	CostTaskEstimate(&m, 5000, 40, 10, 1, NAN, seconds, NULL, base, &o, est);
	for (int k = 0; k < FC_K; k++)
	{
		double		truth = 0.2 + 1e-6 * 5000 * 40 + FcTrueWork(k, 5000, 40, 10);

		CHECK(fabs(log(est[k] / truth)) < (k == 3 ? 0.4 : 0.15),
			  "new task, arm %d: %g s for %g", k, est[k], truth);
	}

	/* a task twice as slow as the model says: one heavy run rescales */
	seconds[4] = o + 2 * exp(base[4]);
	CostTaskEstimate(&m, 5000, 40, 10, 1, NAN, seconds, NULL, NULL, NULL, est2);
	CHECK(fabs(log(est2[4] / seconds[4])) < 0.1, "the measured arm: about its time (%g vs %g)",
		  est2[4], seconds[4]);
	CHECK(est2[0] > 1.05 * est[0] && est2[0] < 1.5 * est[0] &&
		  est2[2] > 1.05 * est[2] && est2[2] < 1.5 * est[2],
		  "other families move a little toward 2x: %g, %g", est2[0] / est[0], est2[2] / est[2]);
	/* a second family member moves more than another family */
	seconds[4] = NAN;
	seconds[2] = o + 2 * exp(base[2]);
	CostTaskEstimate(&m, 5000, 40, 10, 1, NAN, seconds, NULL, NULL, NULL, est2);
	CHECK(est2[3] / est[3] > est2[0] / est[0], "same family moves more: %g vs %g",
		  est2[3] / est[3], est2[0] / est[0]);
	/* a run that was mostly overhead says nothing about the work */
	seconds[2] = NAN;
	seconds[0] = 1.2 * o;
	CHECK(isnan(CostResidual(seconds[0], o, log(0.1 * o))), "overhead-bound run: no residual");
	CHECK(isnan(CostResidual(1.8 * o, o, log(1e-4 * o))),
		  "a tiny fit whose run took 0.8 overheads more: the overhead's noise, no residual");
	CHECK_NEAR(CostResidual(3 * o, o, log(1e-4 * o)), log(2 / 1e-4), 1e-9,
			   "... but two overheads more is work the model did not expect");
	CHECK_NEAR(CostResidual(seconds[0], o, log(5 * o)), log(0.25 / 5), 1e-12,
			   "a run far shorter than its expected work: floored work, a large negative residual");
	/* ... but it measures the task's overhead, if its predicted work is small */
	CostTaskEstimate(&m, 50, 2, 2, 1, NAN, seconds, NULL, base, &o, est2);
	for (int k = 0; k < FC_K; k++)
		seconds[k] = NAN;
	seconds[0] = 4 * CostOverhead(&m, 50, 2);
	CostTaskEstimate(&m, 50, 2, 2, 1, NAN, seconds, NULL, NULL, &o, est2);
	CHECK(o > 1.8 * CostOverhead(&m, 50, 2) && o < 4 * CostOverhead(&m, 50, 2),
		  "a small task's own overhead counts (%g vs the model's %g)", o, CostOverhead(&m, 50, 2));
	/* ... and no run is shorter than the overhead: a large task's line overshoots */
	seconds[0] = 0.5 * CostOverhead(&m, 1e6, 100);
	CostTaskEstimate(&m, 1e6, 100, 2, 1, NAN, seconds, NULL, NULL, &o, est2);
	CHECK(fabs(o - seconds[0]) < 1e-12,
		  "a run shorter than the model's overhead caps it (%g vs the model's %g)",
		  o, CostOverhead(&m, 1e6, 100));
	CostModelFree(&m);

	/* regression forests 4x slower than classification ones of that size */
	for (int i = 0; i < MC; i++)
	{
		double		n = sizes[3 * i],
					d = sizes[3 * i + 1];

		sizes[3 * i + 2] = (i % 2) ? 1 : 2;
		for (int k = 0; k < FC_K; k++)
		{
			double		w = FcTrueWork(k, n, d, 2) * ((i % 2) && k == 4 ? 4 : 1);

			train[i * FC_K + k] = w;
			sec[i * FC_K + k] = 0.2 + 1e-6 * n * d + w;
		}
	}
	CHECK(CostModelFitData(&m, fc_arms, FC_K, &fc_data) == 0, "fit with regression tasks");
	for (int k = 0; k < FC_K; k++)
		seconds[k] = NAN;
	CostTaskEstimate(&m, 3000, 20, 1, 1, NAN, seconds, NULL, NULL, &o, est);
	CostTaskEstimate(&m, 3000, 20, 2, 1, NAN, seconds, NULL, NULL, NULL, est2);
	CHECK((est[4] - o) / (est2[4] - o) > 2.5 && (est[4] - o) / (est2[4] - o) < 5,
		  "a family's regression tasks learn their own rate (%g x)", (est[4] - o) / (est2[4] - o));
	CHECK(fabs(log((est[0] - o) / (est2[0] - o))) < 0.2,
		  "other families: the same on both kinds (%g x)", (est[0] - o) / (est2[0] - o));
	CostModelFree(&m);

	/* bad input */
	memcpy(bad, fc_arms, sizeof(bad));
	bad[1].ref_rate = 0;
	CHECK(CostModelFitData(&m, bad, FC_K, NULL) < 0, "a zero reference rate is refused");
	bad[1].ref_rate = 1e-7;
	bad[2].family = -1;
	CHECK(CostModelFitData(&m, bad, FC_K, NULL) < 0, "a negative family is refused");
	sizes[1] = 0;
	CHECK(CostModelFitData(&m, fc_arms, FC_K, &fc_data) < 0, "zero features are refused");
}

/*
 * k-fold tasks: k fits, each on the other folds' rows; knn's work is
 * validation x training rows.  Early-stopping families: complexity counts
 * every pass, the rates are per pass made and the passes are learned from
 * what runs reported.
 */
static void
TestCostFoldsAndPasses(void)
{
	enum {MC = 10, PK = 4};
	/* formula, family, work, width, inner, out, per_class, ref_rate, max_passes, ref_passes, pass_power */
	static const CostArm pa[PK] = {
		{COST_LINEAR, 0, 1, 0, 0, 0, 1, 1e-4, 100, 50, 0},	/* softmax-like */
		{COST_LINEAR, 0, 1, 0, 0, 0, 1, 1e-4, 100, 50, 0},	/* the same, converges sooner */
		{COST_MLP, 2, 1, 32, 0, 32, 0, 1e-8, 0, 100, 0},	/* mlp: its epochs rule */
		{COST_LINEAR, 3, 1, 0, 0, 0, 1, 1e-4, 0, 0, 0},	/* no early stopping */
	};
	const CostArm *knn = &fc_arms[2];
	double		sizes[3 * MC],
				folds[MC],
				sec[MC * PK],
				train[MC * PK],
				passes[MC * PK],
				seconds[PK],
				est[PK],
				base[PK],
				o;
	CostModel	m;
	CostData	data = {MC, sizes, folds, sec, train, passes, NULL};

	/* folds: one split is CostLogComplexity's */
	CHECK_NEAR(CostLogComplexityK(knn, 1000, 10, 2, 1), CostLogComplexity(knn, 1000, 10, 2), 1e-12,
			   "one split: the reference formula");
	/* 5 folds of 1,000 rows (5,000 fitted): 5 x 200 x 800 = 0.8 n^2, 5x one split's 0.16 n^2; 5x its cells */
	CHECK_NEAR(CostLogComplexityK(knn, 5000, 10, 2, 5) - CostLogComplexity(knn, 1000, 10, 2), log(5.0),
			   1e-9, "knn on 5 folds: 5x one split, not the 25x of rows x folds");
	CHECK_NEAR(CostLogComplexityK(knn, 10000, 10, 2, 10) - CostLogComplexity(knn, 1000, 10, 2),
			   log((0.9e6 + 10 * 2.26 * 1e4) / (0.16e6 + 2.26 * 1e4)), 1e-9,
			   "knn on 10 folds: 0.9 n^2 pairs against 0.16 n^2, 10x the cells");
	CHECK_NEAR(CostLogComplexityK(&fc_arms[0], 5000, 10, 2, 5), log(5 * 1000.0 * 10), 1e-9,
			   "linear on 5 folds: 5 fits of 800 training rows, each a one-split task of 1,000");
	CHECK_NEAR(CostLogComplexityK(&fc_arms[0], 2000, 10, 2, 2), log(2 * 625.0 * 10), 1e-9,
			   "linear on 2 folds: 2 fits of 500 training rows");
	/* mlp: the epochs rule of each fold's training rows (5 x 8,000: 40 steps, 50 epochs) */
	CHECK_NEAR(CostLogComplexityK(&pa[2], 50000, 10, 3, 5), log(5 * 8000.0 * 50 * (10 * 32 + 32 * 3 + 50 * 32)), 1e-9,
			   "mlp on 5 folds of 2,000 rows: each fit's own epochs");
	{
		CostArm		two = {COST_MLP, 0, 1, 128, 128 * 64, 64, 0, 1e-9, 0, 100, 0};

		CHECK_NEAR(CostLogComplexity(&two, 1000, 10, 3), log(800 * 200 * (10 * 128 + 8192 + 64 * 3 + 50 * 192.0)),
				   1e-9, "mlp 128-64: products plus 50 per hidden unit of both layers");
	}
	CHECK_NEAR(CostMaxPasses(&pa[2], 50000, 5), 50, 1e-12, "mlp's most passes per fold");
	CHECK_NEAR(CostMaxPasses(&pa[2], 1000, 1), 200, 1e-12, "mlp's most passes on 1,000 rows");
	CHECK(CostMaxPasses(&pa[3], 1000, 1) == 0, "no early stopping: no most passes");
	{
		CostArm		thrice = pa[0];

		thrice.work = 3;
		CHECK_NEAR(CostMaxPasses(&thrice, 1000, 1), 300, 1e-12, "max_iter 300: 300 passes");
	}

	/* nothing measured: the reference passes' share of every pass */
	CHECK(CostModelFitData(&m, pa, PK, NULL) == 0, "reference fit");
	for (int k = 0; k < PK; k++)
		seconds[k] = NAN;
	CostTaskEstimate(&m, 1000, 10, 2, 1, NAN, seconds, NULL, base, &o, est);
	CHECK_NEAR(base[0], log(1e-4 * 1000 * 10 * 0.5), 1e-9, "reference: 50 of 100 passes");
	CHECK_NEAR(base[2], log(1e-8) + CostLogComplexity(&pa[2], 1000, 10, 2) + log(100 / 200.0), 1e-9,
			   "reference mlp: 100 of its 200 epochs");
	CostModelFree(&m);

	/*
	 * measured: per pass, the machine is 2x the reference; arm 0 makes 40
	 * passes on half the tasks and 10 on the others, arm 1 always 8, the
	 * mlp 30 epochs (or its most); arm 3 has no passes
	 */
	for (int i = 0; i < MC; i++)
	{
		/* at most 50 to 200 epochs: more than the mlp makes */
		double		n = 1000 * (i + 1),
					d = 10 + 5 * (i % 3);

		sizes[3 * i] = n;
		sizes[3 * i + 1] = d;
		sizes[3 * i + 2] = 3;
		folds[i] = 1;
		for (int k = 0; k < PK; k++)
		{
			double		most = CostMaxPasses(&pa[k], n, 1);
			double		p = k == 0 ? (i % 2 ? 40 : 10) : k == 1 ? 8 : k == 2 ? fmin(30, most) : NAN;
			double		w = 2 * pa[k].ref_rate * exp(CostLogComplexity(&pa[k], n, d, 3)) *
				(most > 0 ? p / most : 1);

			passes[i * PK + k] = p;
			train[i * PK + k] = w;
			sec[i * PK + k] = 0.3 + w;
		}
	}
	CHECK(CostModelFitData(&m, pa, PK, &data) == 0, "fit with passes");
	CHECK_NEAR(m.machine, log(2.0) * 3 / 4.0, 0.05, "per pass, the machine factor is the truth's, shrunk");
	CHECK(m.log_stop[0] > log(15) && m.log_stop[0] < log(25) && m.log_stop[1] < log(12) &&
		  m.log_stop[1] > log(7), "passes learned per model: %g, %g", exp(m.log_stop[0]), exp(m.log_stop[1]));
	CHECK(isnan(m.log_stop[3]), "no passes for a family that does not stop early");
	/* a new task: the convergent arm costs less than its twin; the mlp's 30 epochs */
	CostTaskEstimate(&m, 3000, 20, 3, 1, NAN, seconds, NULL, base, &o, est);
	CHECK(base[1] < base[0] - log(1.5), "fewer passes, less time (%g vs %g s)", exp(base[1]), exp(base[0]));
	{
		double		truth = 2 * 1e-8 * exp(CostLogComplexity(&pa[2], 3000, 20, 3)) * 30 /
			CostMaxPasses(&pa[2], 3000, 1);

		CHECK(fabs(base[2] - log(truth)) < 0.3, "mlp: 30 of its 167 epochs (%g s for %g)", exp(base[2]), truth);
	}
	/* a large task whose most epochs are fewer than the learned stop: all of them */
	CostTaskEstimate(&m, 1e6, 20, 3, 1, NAN, seconds, NULL, base, &o, est);
	CHECK_NEAR(base[2], m.log_rate[2] + CostLogComplexity(&pa[2], 1e6, 20, 3), 1e-9,
			   "10 epochs at most: the mlp makes them all");
	CostModelFree(&m);

	/* without the passes the rates absorb them: the same run times, a slower per-pass rate */
	data.passes = NULL;
	CHECK(CostModelFitData(&m, pa, PK, &data) == 0, "fit without passes");
	CHECK(fabs(m.log_stop[0] - log(50)) < 1e-9, "no passes reported: the reference passes");
	CostModelFree(&m);
	/* a negative reference passes is bad input */
	{
		CostArm		bad[PK];

		memcpy(bad, pa, sizeof(bad));
		bad[0].ref_passes = -1;
		CHECK(CostModelFitData(&m, bad, PK, NULL) < 0, "negative reference passes are refused");
	}
}

/*
 * The world on the family cost model: a refit cycle with arms installs it,
 * tasks' estimates are CostTaskEstimate's, and a finished run moves them.
 */
static void
TestDecisionFamilyCost(void)
{
	double		rt[2 * FC_K],
				tr[2 * FC_K],
				sz[2 * 3] = {1000, 10, 3, 4000, 30, 3},
				est[FC_K],
				est2[FC_K],
				before;
	double		seconds[FC_K];
	unsigned char state[FC_K];
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTaskState ts;
	DecisionTask *t;
	int			steps = 0;

	for (int i = 0; i < 2; i++)
		for (int k = 0; k < FC_K; k++)
		{
			tr[i * FC_K + k] = FcTrueWork(k, sz[3 * i], sz[3 * i + 1], sz[3 * i + 2]);
			rt[i * FC_K + k] = 0.3 + tr[i * FC_K + k];
		}
	memset(&in, 0, sizeof(in));
	in.K = FC_K;
	in.cost.mc = 2;
	in.cost.seconds = rt;
	in.cost.train = tr;
	in.cost.sizes = sz;
	in.arms = fc_arms;
	MakeWorld(&w, FC_K, "hybrid:cost", 1);
	RefitInit(&r, FC_K, 0);
	CHECK(RefitMaybeStart(&r, &in, 0.0) == 1, "refit started");
	while (RefitStep(&r, &w) == 0 && steps++ < 100)
		;
	CHECK(r.have_live && r.live.have_fcost && w.family_cost == &r.live.fcost,
		  "family cost model installed");
	memset(&s, 0, sizeof(s));
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 2000;
	s.features = 20;
	s.classes = 5;
	s.id = 7;
	t = DecisionAddTask(&w, &s);
	for (int k = 0; k < FC_K; k++)
		seconds[k] = NAN;
	CostTaskEstimate(w.family_cost, 2000, 20, 5, 1, NAN, seconds, NULL, NULL, NULL, est);
	for (int k = 0; k < FC_K; k++)
		CHECK(t && fabs(t->cost[k] - est[k]) < 1e-9 * est[k], "arm %d: world %g, model %g",
			  k, t ? t->cost[k] : NAN, est[k]);
	/* arm 4 ran three times as long as estimated: the others go up */
	before = t ? t->cost[0] : NAN;
	for (int k = 0; k < FC_K; k++)
		state[k] = k == 4 ? DECISION_ARM_DONE : DECISION_ARM_AVAILABLE;
	seconds[4] = t ? 3 * t->cost[4] : 1;
	memset(&ts, 0, sizeof(ts));
	ts.score = NULL;
	ts.state = state;
	ts.seconds = seconds;
	{
		double		score[FC_K];

		for (int k = 0; k < FC_K; k++)
			score[k] = NAN;
		ts.score = score;
		if (t)
			DecisionSyncTask(&w, t, &ts);
	}
	CHECK(t && t->cost[0] > 1.3 * before, "a slow run raises the task's other estimates (%g -> %g)",
		  before, t ? t->cost[0] : NAN);
	/* a 5-fold task of 400 rows (2,000 fitted): the world passes its folds */
	s.id = 8;
	s.folds = 5;
	t = DecisionAddTask(&w, &s);
	for (int k = 0; k < FC_K; k++)
		seconds[k] = NAN;
	CostTaskEstimate(w.family_cost, 2000, 20, 5, 5, NAN, seconds, NULL, NULL, NULL, est);
	CHECK(t && fabs(t->cost[2] - est[2]) < 1e-9 * est[2], "5 folds: world %g, model %g",
		  t ? t->cost[2] : NAN, est[2]);
	CostTaskEstimate(w.family_cost, 2000, 20, 5, 1, NAN, seconds, NULL, NULL, NULL, est2);
	CHECK(est[2] < est2[2], "knn: 5 folds of 400 rows cost less than one split of 2,000 (%g vs %g)",
		  est[2], est2[2]);
	DecisionWorldFree(&w);
	RefitFree(&r);
}

/*
 * What the data's histogram bins and a solver's passes do to an estimate
 * (docs/scheduler.md 7.4): gbt's complexity counts the bins a tree scans
 * at every split, which tree runs report (CostData.bins, a world task's
 * bins); linear_svm's time grows as the square root of its passes.  Runs
 * generated by the model's formulas at 2x the reference rate: the fit
 * learns the same rate from tasks of few and of many bins, and a task's
 * estimate follows its bins once it knows them.
 */
static void
TestCostBinsAndPasses(void)
{
	enum {MC = 8, BK = 3};
	/* formula, family, work, width, inner, out, per_class, ref_rate, max_passes, ref_passes, pass_power */
	static const CostArm ba[BK] = {
		{COST_BOOST, 0, 1, 0, 0, 0, 1, 1e-5, 0, 0, 0},	/* gbt */
		{COST_LINEAR, 1, 1, 0, 0, 0, 1, 1e-4, 1000, 100, 0.5},	/* linear_svm, C small */
		{COST_LINEAR, 1, 1, 0, 0, 0, 1, 1e-4, 1000, 100, 0.5},	/* the same, C large */
	};
	double		sizes[3 * MC],
				bins[MC],
				sec[MC * BK],
				train[MC * BK],
				passes[MC * BK],
				seconds[BK],
				est[BK],
				est2[BK],
				base[BK],
				base2[BK],
				o,
				h,
				g,
				a;
	CostData	data = {MC, sizes, NULL, sec, train, passes, bins};
	CostModel	m;
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTaskState ts;
	DecisionTask *t;
	unsigned char state[BK];
	double		score[BK];
	int			steps = 0;

	/* 1,000 rows: 800 training rows, 31 leaves; bins known or d x 255 */
	CHECK_NEAR(CostLogComplexityBins(&ba[0], 1000, 64, 10, 1, 883),
			   log(10 * (800 * 64 + 31 * 883.0) / 0.8), 1e-9, "gbt: rows x features + leaves x bins");
	CHECK_NEAR(CostLogComplexityK(&ba[0], 1000, 30, 2, 1), log((800 * 30 + 31 * 30 * 255.0) / 0.8),
			   1e-9, "gbt, bins unknown: 255 a feature");
	CHECK_NEAR(CostLogComplexityK(&ba[0], 200, 10, 2, 1), log((160 * 10 + 8 * 10 * 160.0) / 0.8),
			   1e-9, "gbt on 200 rows: 8 leaves of 20, at most 160 bins a feature");
	CHECK(CostLogComplexityBins(&ba[0], 1000, 30, 2, 1, 30 * 14) <
		  CostLogComplexityBins(&ba[0], 1000, 30, 2, 1, 30 * 255) - log(4.0),
		  "gbt: 14 bins a feature cost a fraction of 255");
	CHECK_NEAR(CostLogComplexityBins(&ba[0], 1000, 30, 2, 1, 1e300),
			   CostLogComplexityBins(&ba[0], 1000, 30, 2, 1, 30 * 256.0), 1e-9,
			   "gbt: a reported total above 256 bins a feature is not believed");
	{
		CostArm		forest = {COST_FOREST, 2, 1, 0, 0, 0, 0, 1e-7, 0, 0, 0};

		CHECK_NEAR(CostLogComplexity(&forest, 1000, 16, 1) - CostLogComplexity(&forest, 1000, 16, 2),
				   log(4.0), 1e-9, "a regression forest: 4x the nodes of a classification forest");
	}
	CHECK_NEAR(CostReferencePassPower("linear_svm"), 0.5, 1e-12, "linear_svm: square root of passes");
	CHECK_NEAR(CostReferencePassPower("softmax"), 1, 1e-12, "softmax: proportional to passes");

	/* nothing measured: svm at the share of its reference passes, squared-rooted */
	CHECK(CostModelFitData(&m, ba, BK, NULL) == 0, "reference fit");
	for (int k = 0; k < BK; k++)
		seconds[k] = NAN;
	CostTaskEstimate(&m, 1000, 10, 2, 1, NAN, seconds, NULL, base, &o, est);
	CHECK_NEAR(base[1], log(1e-4 * 1000 * 10 * sqrt(0.1)), 1e-9, "reference svm: sqrt(100 / 1,000)");
	CostModelFree(&m);

	/*
	 * measured at 2x the reference: half the tasks have 14 bins a feature,
	 * half 255; svm arm 1 makes 10 passes, arm 2 all 1,000
	 */
	for (int i = 0; i < MC; i++)
	{
		double		n = 1000 * (i + 1),
					d = 10 + 10 * (i % 3);

		sizes[3 * i] = n;
		sizes[3 * i + 1] = d;
		sizes[3 * i + 2] = 3;
		bins[i] = d * (i % 2 ? 14 : 255);
		for (int k = 0; k < BK; k++)
		{
			double		p = k == 1 ? 10 : 1000;
			double		w = 2 * ba[k].ref_rate * exp(CostLogComplexityBins(&ba[k], n, d, 3, 1, bins[i])) *
				(k > 0 ? sqrt(p / 1000) : 1);

			passes[i * BK + k] = k > 0 ? p : NAN;
			train[i * BK + k] = w;
			sec[i * BK + k] = 0.3 + w;
		}
	}
	CHECK(CostModelFitData(&m, ba, BK, &data) == 0, "fit with bins and passes");
	/* every run says y = ln 2: machine 2/3 ln 2 (two groups, one more at 0), then the pseudo-runs */
	h = log(2.0) * 2 / 3;
	g = MC * (log(2.0) - h) / (MC + 2.0);
	a = MC * (log(2.0) - h - g) / (MC + 1.0);
	CHECK(fabs(m.log_rate[0] - (log(1e-5) + h + g + a)) < 1e-6,
		  "gbt: one rate from tasks of few and of many bins (%g)", exp(m.log_rate[0]));
	CHECK_NEAR(m.log_rate[1], m.log_rate[2], 1e-6,
			   "svm: one rate per fit of all passes, whatever the passes made");
	CostTaskEstimate(&m, 3000, 20, 3, 1, 20 * 14, seconds, NULL, base, &o, est);
	CostTaskEstimate(&m, 3000, 20, 3, 1, NAN, seconds, NULL, base2, &o, est2);
	CHECK_NEAR(base[0] - base2[0],
			   CostLogComplexityBins(&ba[0], 3000, 20, 3, 1, 20 * 14) - CostLogComplexityK(&ba[0], 3000, 20, 3, 1),
			   1e-9, "a task's bins, once known, replace the bound");
	CHECK(base[0] < base2[0] - log(3.0), "few bins: gbt estimated at a fraction (%g vs %g s)",
		  exp(base[0]), exp(base2[0]));
	CHECK(base[1] < base[2] - log(5.0) && base[1] > base[2] - log(20.0),
		  "svm of 10 passes: about sqrt(1 / 100) of 1,000 passes' time (%g vs %g s)",
		  exp(base[1]), exp(base[2]));
	CostModelFree(&m);

	/* the world: a refit passes the bins on, a task's sync brings its own */
	memset(&in, 0, sizeof(in));
	in.K = BK;
	in.cost = data;
	in.arms = ba;
	MakeWorld(&w, BK, "hybrid:cost", 1);
	RefitInit(&r, BK, 0);
	CHECK(RefitMaybeStart(&r, &in, 0.0) == 1, "refit started");
	while (RefitStep(&r, &w) == 0 && steps++ < 100)
		;
	CHECK(r.have_live && r.live.have_fcost && w.family_cost == &r.live.fcost,
		  "family cost model installed");
	CHECK(w.family_cost && fabs(w.family_cost->log_rate[0] - (log(1e-5) + h + g + a)) < 1e-6,
		  "the refit learned from the bins");
	memset(&s, 0, sizeof(s));
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 3000;
	s.features = 20;
	s.classes = 3;
	s.id = 9;
	t = DecisionAddTask(&w, &s);
	CostTaskEstimate(w.family_cost, 3000, 20, 3, 1, NAN, seconds, NULL, NULL, NULL, est);
	CHECK(t && fabs(t->cost[0] - est[0]) < 1e-9 * est[0], "bins unknown: world %g, model %g",
		  t ? t->cost[0] : NAN, est[0]);
	for (int k = 0; k < BK; k++)
	{
		state[k] = DECISION_ARM_AVAILABLE;
		score[k] = NAN;
	}
	memset(&ts, 0, sizeof(ts));
	ts.state = state;
	ts.score = score;
	ts.seconds = seconds;
	ts.bins = 20 * 14;
	if (t)
		DecisionSyncTask(&w, t, &ts);
	CostTaskEstimate(w.family_cost, 3000, 20, 3, 1, 20 * 14, seconds, NULL, NULL, NULL, est2);
	CHECK(t && fabs(t->cost[0] - est2[0]) < 1e-9 * est2[0] && est2[0] < 0.5 * est[0],
		  "a sync with the bins: world %g, model %g (was %g)", t ? t->cost[0] : NAN, est2[0], est[0]);
	ts.bins = NAN;
	if (t)
		DecisionSyncTask(&w, t, &ts);
	CHECK(t && fabs(t->cost[0] - est2[0]) < 1e-9 * est2[0], "a sync without bins keeps them");
	DecisionWorldFree(&w);
	RefitFree(&r);
}

/*
 * The passes of an early-stopping family on a task (CostLogBase): an arm
 * that ran on the task takes the share of its passes it made, an arm that
 * did not the passes the model learned moved by what the task's runs of
 * the same family made (a task part; a run that made its most passes only
 * says "at least"), other families nothing.  The world passes a synced
 * task's passes on.  Runs of two mlp-like arms on tasks of 1,000 rows (at
 * most 200 passes): arm 0 makes 100, arm 1 50, at the reference rate.
 */
static void
TestCostTaskPasses(void)
{
	enum {MC = 6, PK = 4};
	/* formula, family, work, width, inner, out, per_class, ref_rate, max_passes, ref_passes, pass_power */
	static const CostArm pa[PK] = {
		{COST_MLP, 0, 1, 64, 0, 0, 0, 1e-9, 0, 100, 1},	/* mlp-64 */
		{COST_MLP, 0, 1, 256, 0, 0, 0, 1e-9, 0, 100, 1},	/* mlp-256 */
		{COST_LINEAR, 1, 1, 0, 0, 0, 1, 1e-6, 100, 30, 1},	/* softmax */
		{COST_BOOST, 2, 1, 0, 0, 0, 1, 1e-6, 0, 0, 0},	/* gbt */
	};
	double		sizes[3 * MC],
				sec[MC * PK],
				passes[MC * PK],
				own[PK],
				seconds[PK],
				none[PK],
				up[PK],
				down[PK],
				mine[PK],
				est[PK];
	CostData	data = {MC, sizes, NULL, sec, NULL, passes, NULL};
	CostModel	m;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTaskState ts;
	DecisionTask *t;
	unsigned char state[PK];
	double		score[PK];

	for (int i = 0; i < MC; i++)
	{
		sizes[3 * i] = 1000;
		sizes[3 * i + 1] = 10 + i;
		sizes[3 * i + 2] = 3;
		for (int k = 0; k < PK; k++)
		{
			double		p = k == 0 ? 100 : k == 1 ? 50 : k == 2 ? 30 : NAN;
			double		share = k < 3 ? p / CostMaxPasses(&pa[k], 1000, 1) : 1;

			passes[i * PK + k] = p;
			sec[i * PK + k] = 0.2 + pa[k].ref_rate * share *
				exp(CostLogComplexity(&pa[k], 1000, 10 + i, 3));
		}
	}
	CHECK(CostModelFitData(&m, pa, PK, &data) == 0, "fit with passes");
	CHECK(CostMaxPasses(&pa[0], 1000, 1) == 200, "1,000 rows: an mlp makes at most 200 passes");
	for (int k = 0; k < PK; k++)
		own[k] = seconds[k] = NAN;
	CostLogBase(&m, 2000, 12, 3, 1, NAN, NULL, none);
	CostLogBase(&m, 2000, 12, 3, 1, NAN, own, est);
	for (int k = 0; k < PK; k++)
		CHECK(fabs(est[k] - none[k]) < 1e-12, "no runs on the task: its passes change nothing (arm %d)", k);

	/* the task's arm 0 made all its 200 passes: arm 1 is expected to make more */
	own[0] = 200;
	CostLogBase(&m, 2000, 12, 3, 1, NAN, own, up);
	CHECK(fabs(up[0] - none[0] - log(200 / exp(m.log_stop[0]))) < 1e-9,
		  "an arm that ran makes the passes it made (%g learned)", exp(m.log_stop[0]));
	CHECK(up[1] > none[1] + 0.3 && up[1] <= none[1] - m.log_stop[1] + log(200.0) + 1e-9,
		  "its family's other arm: more passes, at most its most (%+.3f)", up[1] - none[1]);
	CHECK_NEAR(up[2], none[2], 1e-12, "another family's passes: unchanged");
	CHECK_NEAR(up[3], none[3], 1e-12, "a family that does not stop early: unchanged");

	/* arm 0 made half what the model learned: arm 1 about half, shrunk a little */
	own[0] = 50;
	CostLogBase(&m, 2000, 12, 3, 1, NAN, own, down);
	CHECK(down[1] < none[1] - 0.5 * log(2.0) && down[1] > none[1] - log(2.0),
		  "a task that stops early: its other arms expected short (%+.3f)", down[1] - none[1]);

	/* arm 1 ran too: its own passes, whatever arm 0's say */
	own[1] = 150;
	CostLogBase(&m, 2000, 12, 3, 1, NAN, own, mine);
	CHECK_NEAR(mine[1] - none[1], log(150.0) - m.log_stop[1], 1e-9, "arm 1's own passes");

	/* the world: a sync with the passes moves arm 1's estimate as the model does */
	MakeWorld(&w, PK, "hybrid:cost", 1);
	CHECK(DecisionSetFamilyCost(&w, &m) == POLICY_OK, "family cost installed");
	memset(&s, 0, sizeof(s));
	s.kind = DECISION_CLASSIFICATION;
	s.rows = 2000;
	s.features = 12;
	s.classes = 3;
	s.id = 5;
	t = DecisionAddTask(&w, &s);
	for (int k = 0; k < PK; k++)
	{
		state[k] = DECISION_ARM_AVAILABLE;
		score[k] = NAN;
		own[k] = NAN;
	}
	own[0] = 200;
	seconds[0] = 0.2 + exp(up[0]);
	state[0] = DECISION_ARM_OBSERVED;
	score[0] = 0.5;
	memset(&ts, 0, sizeof(ts));
	ts.state = state;
	ts.score = score;
	ts.seconds = seconds;
	ts.passes = own;
	if (t)
		DecisionSyncTask(&w, t, &ts);
	CostTaskEstimate(&m, 2000, 12, 3, 1, NAN, seconds, own, NULL, NULL, est);
	CHECK(t && fabs(t->cost[1] - est[1]) < 1e-9 * est[1], "world %g, model %g",
		  t ? t->cost[1] : NAN, est[1]);
	CostTaskEstimate(&m, 2000, 12, 3, 1, NAN, seconds, NULL, NULL, NULL, none);
	CHECK(est[1] > 1.3 * none[1], "the passes lift arm 1 (%g s vs %g s without)", est[1], none[1]);
	ts.passes = NULL;
	if (t)
		DecisionSyncTask(&w, t, &ts);
	CHECK(t && fabs(t->cost[1] - none[1]) < 1e-9 * none[1], "a sync without passes: none known");
	/* new fallback estimates (every full load) change no cost here: no refresh */
	if (t)
	{
		DecisionChoice c;
		double		fb[PK];
		int64_t		n0;

		DecisionNext(&w, &c);
		n0 = w.n_refreshed;
		for (int k = 0; k < PK; k++)
			fb[k] = 3.0 + k;
		ts.fallback_cost = fb;
		DecisionSyncTask(&w, t, &ts);
		DecisionNext(&w, &c);
		CHECK(t->fallback[1] == 4.0 && fabs(t->cost[1] - none[1]) < 1e-9 * none[1] &&
			  w.n_refreshed == n0, "fallbacks kept, costs and view unchanged (%lld refreshes)",
			  (long long) (w.n_refreshed - n0));
	}
	DecisionWorldFree(&w);
	CostModelFree(&m);
}

/*
 * CostTaskOverhead: the shortest run caps the model's overhead, not the
 * mean of the runs that measure the task's: one fast run of a task whose
 * overhead-bound runs took 1.6 to 2.4x the model's overhead (a loaded
 * machine) must not turn their overhead into work that lifts the task's
 * other estimates.
 */
static void
TestCostOverheadRuns(void)
{
	double		seconds[FC_K],
				est[FC_K],
				est0[FC_K],
				base[FC_K],
				o,
				o_model;
	CostModel	m;

	CHECK(CostModelFitData(&m, fc_arms, FC_K, NULL) == 0, "reference fit");
	o_model = CostOverhead(&m, 50, 2);
	for (int k = 0; k < FC_K; k++)
		seconds[k] = NAN;
	CostTaskEstimate(&m, 50, 2, 2, 1, NAN, seconds, NULL, base, &o, est0);
	for (int k = 0; k < 4; k++)
		CHECK(exp(base[k]) < 0.1 * o_model, "arm %d: tiny work on 50 rows", k);
	seconds[0] = 0.8 * o_model;
	seconds[1] = 1.6 * o_model;
	seconds[2] = 2.4 * o_model;
	seconds[3] = 2.0 * o_model;
	CostTaskEstimate(&m, 50, 2, 2, 1, NAN, seconds, NULL, NULL, &o, est);
	CHECK(o > 1.2 * o_model && o < 2.0 * o_model,
		  "the overhead-bound runs set the task's overhead (%g; the model's %g, the shortest run %g)",
		  o, o_model, seconds[0]);
	CHECK(est[5] - o < 1.5 * (est0[5] - o_model),
		  "their overhead is not work: the net's work stays (%g vs %g s)", est[5] - o, est0[5] - o_model);
	CostModelFree(&m);
}

/*
 * RefitCostCold: a young model (from fewer than two tasks) is refitted at
 * once from data with runs of a task it did not learn from; a model that
 * learned from those tasks, or from two, is not; the refitted model has the
 * measured overhead, not the reference one.
 */
static void
TestRefitCostCold(void)
{
	double		rt[3 * FC_K],
				tr[3 * FC_K],
				sz[3 * 3] = {1000, 10, 3, 4000, 30, 3, 2000, 5, 2};
	CostData	none = {2, sz, NULL, rt, tr, NULL, NULL},
				one = {1, sz, NULL, rt, tr, NULL, NULL},
				two = {2, sz, NULL, rt, tr, NULL, NULL},
				three = {3, sz, NULL, rt, tr, NULL, NULL};
	CostModel	ref,
				warm,
				warm2;

	for (int j = 0; j < 3 * FC_K; j++)
		rt[j] = tr[j] = NAN;
	CHECK(CostModelFitData(&ref, fc_arms, FC_K, NULL) == 0 && ref.n_tasks == 0, "reference fit");
	CHECK(RefitCostCold(NULL, &one) == 1, "no model in use and measured data: fit one");
	CHECK(RefitCostCold(&ref, &none) == 0, "nothing measured: nothing to refit from");
	CHECK(RefitCostCold(&ref, NULL) == 0, "no data: nothing to refit from");
	/* one run of one task: 0.6 s, of which 0.05 s fitting */
	rt[1] = 0.6;
	tr[1] = 0.05;
	CHECK(RefitCostCold(&ref, &one) == 1, "the reference overhead and one measured run: refit");
	CHECK(CostModelFitData(&warm, fc_arms, FC_K, &one) == 0 && warm.n_tasks == 1, "refit");
	CHECK(RefitCostCold(&warm, &one) == 0, "a model that learned from the measured tasks is kept");
	CHECK(fabs(CostOverhead(&warm, 4000, 30) - (0.55 + 0.5e-6 * (4000 * 30 - 1000 * 10))) < 1e-9,
		  "the refitted overhead is the measured one, for every task (%g)",
		  CostOverhead(&warm, 4000, 30));
	/* a second task's first run: the young model learns the overhead's line */
	rt[FC_K + 2] = 1.0;
	tr[FC_K + 2] = 0.2;
	CHECK(RefitCostCold(&warm, &two) == 1, "a young model and a new task's run: refit");
	CHECK(CostModelFitData(&warm2, fc_arms, FC_K, &two) == 0 && warm2.n_tasks == 2 &&
		  warm2.o1 > 1e-6, "refit from two tasks: o1 from them (%g)", warm2.o1);
	rt[2 * FC_K + 3] = 0.7;
	CHECK(RefitCostCold(&warm2, &three) == 0, "a model from two tasks waits for the refit cycle");
	CostModelFree(&ref);
	CostModelFree(&warm);
	CostModelFree(&warm2);
}

/* Run one refit cycle of in into w; returns the steps it took. */
static int
RefitCycle(RefitState *r, const RefitInput *in, DecisionWorld *w, double now)
{
	int			steps = 0;

	if (RefitMaybeStart(r, in, now) != 1)
		return -1;
	while (RefitStep(r, w) == 0 && steps < 1000)
		steps++;
	return steps;
}

/*
 * A second refit cycle installs new priors and a new cost model into the
 * structs of the first (the live set keeps its addresses): the world's
 * posteriors and costs must be those of a world that only saw the second.
 */
static void
TestRefitTwice(void)
{
	const int	K = 3,
				m = 10;
	double		h1[30],
				h2[30],
				rt1[30],
				rt2[30],
				sz[30];
	int64_t		rows_task[10] = {0};
	unsigned char rows_kind[10] = {0};
	RefitInput	in1,
				in2;
	RefitState	r,
				fresh;
	DecisionWorld w,
				w2;
	DecisionTask *t,
			   *t2;
	uint64_t	rng = 11;
	double		worst = 0;

	for (int i = 0; i < m; i++)
	{
		sz[3 * i] = 100 + 100 * i;
		sz[3 * i + 1] = 5;
		sz[3 * i + 2] = 2;
		for (int k = 0; k < K; k++)
		{
			h1[i * K + k] = 0.5 + 0.3 * PolicyRandUniform(&rng);
			h2[i * K + k] = 0.2 + 0.1 * k + 0.05 * PolicyRandUniform(&rng);
			rt1[i * K + k] = 0.01 * sz[3 * i] * (1 + k);
			rt2[i * K + k] = 0.5 * sz[3 * i] * (3 - k) * (1 + PolicyRandUniform(&rng));
		}
	}
	memset(&in1, 0, sizeof(in1));
	in1.K = K;
	in1.m = m;
	in1.cells = h1;
	in1.row_task = rows_task;
	in1.row_kind = rows_kind;
	in1.cost.mc = m;
	in1.cost.seconds = rt1;
	in1.cost.sizes = sz;
	in2 = in1;
	in2.cells = h2;
	in2.cost.seconds = rt2;

	MakeWorld(&w, K, "hybrid:cost", 1);
	MakeWorld(&w2, K, "hybrid:cost", 1);
	t = AddTask(&w, 1, 0, NULL);
	t2 = AddTask(&w2, 1, 0, NULL);
	RefitInit(&r, K, 0);
	RefitInit(&fresh, K, 0);
	CHECK(RefitCycle(&r, &in1, &w, 1.0) >= 0, "first cycle");
	DecisionObserve(&w, t, 0, 0.9, 2.0);
	DecisionObserve(&w2, t2, 0, 0.9, 2.0);
	CHECK(RefitCycle(&r, &in2, &w, 2.0) >= 0, "second cycle");
	CHECK(RefitCycle(&fresh, &in2, &w2, 2.0) >= 0, "fresh cycle");
	for (int k = 0; k < K; k++)
	{
		worst = fmax(worst, fabs(t->gp.mu[k] - t2->gp.mu[k]));
		worst = fmax(worst, fabs(t->gp.var[k] - t2->gp.var[k]));
		worst = fmax(worst, fabs(log(t->cost[k]) - log(t2->cost[k])));
	}
	CHECK(worst < 1e-9, "refit twice: posterior and costs of the new models (diff %g)", worst);
	DecisionWorldFree(&w);
	DecisionWorldFree(&w2);
	RefitFree(&r);
	RefitFree(&fresh);
}


/*
 * The "auto" policy's choice on an installed history (src/autopolicy.c):
 * it replays the block of complete rows it cuts out of the history, with
 * the code and seeds every "default" policy of easeml-replay uses, so its
 * choice and scores equal ReplayAutoChoose's on that block; when the best
 * model is 1,000 times the cost of one almost as good, "popular model
 * first" (the prior mean's order, blind to cost) must lose; the refit
 * cycle installs the choice, and a cycle whose block did not change keeps
 * it without a replay.
 */
static void
TestAutoPolicy(void)
{
	enum
	{
	K = 6, M = 16, MT = 19};
	double		cells[MT * K],
				rt[M * K],
				sz[M * 3],
				block[M * (K - 1)],
				bcost[M * (K - 1)],
				bsize[M * 2],
				scores[REPLAY_AUTO_MAX];
	int64_t		row_task[MT],
				cost_task[M];
	unsigned char row_kind[MT];
	int			idx[M],
				choice = -1,
				reused = -1,
				steps = 0,
				rc;
	RefitInput	in;
	AutoPolicyJob job;
	AutoPolicyResult res;
	ReplayConfig base;
	RefitState	r;
	DecisionWorld w;
	uint64_t	rng = 5;
	char		err[256];

	/*
	 * 16 classification tasks know models 0-4: model 0 is the best and
	 * costs 1,000 s, model 1 is 0.001 below it and costs 1 s; model 5 is
	 * known in 3 rows only.  Two regression rows and a partial row are
	 * not in the block.
	 */
	for (int i = 0; i < MT; i++)
	{
		double		base_q = 0.6 + 0.3 * PolicyRandUniform(&rng);

		row_task[i] = 100 + i;
		row_kind[i] = i >= M && i < M + 2 ? DECISION_REGRESSION : DECISION_CLASSIFICATION;
		for (int k = 0; k < K; k++)
			cells[i * K + k] = k == 0 ? base_q : (k == 1 ? base_q - 0.001 :
												  base_q - 0.05 - 0.1 * PolicyRandUniform(&rng));
		if (i >= 3 && i < M)
			cells[i * K + 5] = NAN;
		if (i == M + 2)
			cells[i * K + 2] = NAN;
		if (i < M)
		{
			cost_task[i] = row_task[i];
			sz[3 * i] = 100 * (i + 1);
			sz[3 * i + 1] = 10;
			sz[3 * i + 2] = 2;
			for (int k = 0; k < K; k++)
				rt[i * K + k] = k == 0 ? 1000.0 : 1.0 + k;
		}
	}
	memset(&in, 0, sizeof(in));
	in.K = K;
	in.m = MT;
	in.cells = cells;
	in.row_task = row_task;
	in.row_kind = row_kind;
	in.cost.mc = M;
	in.cost.seconds = rt;
	in.cost.sizes = sz;
	in.cost_task = cost_task;

	rc = AutoPolicyBegin(&job, &in, NULL, &reused);
	CHECK(rc == 0 && !reused, "auto: a replay starts (%d)", rc);
	CHECK(job.res.kind == DECISION_CLASSIFICATION && job.res.rows == M &&
		  job.res.cols == K - 1 && job.res.measured_costs,
		  "auto: block of %d x %d, kind %d, costs %d", job.res.rows, job.res.cols,
		  job.res.kind, job.res.measured_costs);
	while ((rc = AutoPolicyStep(&job)) == 0)
		steps++;
	res = job.res;
	AutoPolicyFree(&job);
	CHECK(rc == 1 && res.have && steps == REPLAY_AUTO_DRAWS - 1,
		  "auto: chose in %d steps: %s", steps + 1, res.reason);
	CHECK(res.choice >= 0 && res.choice < res.n_cand &&
		  strcmp(res.spec, res.cand[res.choice]) == 0, "auto: the chosen spec");
	for (int i = 0; i < res.n_cand; i++)
		CHECK(res.score[res.choice] <= res.score[i], "auto: the choice has the lowest score");
	CHECK(strcmp(res.spec, "popular") != 0 && strcmp(res.cand[2], "popular") == 0 &&
		  res.score[2] > 10 * res.score[res.choice],
		  "auto: popular loses when the best model is costly (%g vs %g)",
		  res.score[2], res.score[res.choice]);

	/* the same block replayed by ReplayAutoChoose: the same choice and scores */
	for (int i = 0; i < M; i++)
	{
		idx[i] = i;
		for (int k = 0; k < K - 1; k++)
		{
			block[i * (K - 1) + k] = cells[i * K + k];
			bcost[i * (K - 1) + k] = rt[i * K + k];
		}
		bsize[2 * i] = sz[3 * i];
		bsize[2 * i + 1] = sz[3 * i + 1];
	}
	ReplayConfigDefault(&base);
	base.quality = block;
	base.cost = bcost;
	base.sizes = bsize;
	base.n_rows = M;
	base.K = K - 1;
	base.cost_model = POLICY_COST_SIZE_GP;
	CHECK(ReplayAutoChoose(&base, idx, M, res.tenants, 1, &choice, scores,
						   err, sizeof(err)) == 0 && choice == res.choice,
		  "auto: ReplayAutoChoose agrees (%d vs %d) %s", choice, res.choice, err);
	for (int i = 0; i < res.n_cand; i++)
		CHECK_NEAR(scores[i], res.score[i], 1e-9 * scores[i], "auto: the same score");

	/* the same block again: kept without a replay */
	CHECK(AutoPolicyBegin(&job, &in, &res, &reused) == 1 && reused &&
		  job.res.choice == res.choice, "auto: an unchanged block keeps its choice");
	AutoPolicyFree(&job);

	/* too little history: no choice, hybrid:cost runs */
	in.m = 3;
	CHECK(AutoPolicyBegin(&job, &in, NULL, &reused) == 1 && !job.res.have &&
		  strcmp(job.res.spec, "hybrid:cost") == 0, "auto: no block, hybrid:cost");
	AutoPolicyFree(&job);
	in.m = MT;

	/* in the refit cycle: installed, and not replayed again for a partial row */
	MakeWorld(&w, K, "default", 1);
	CHECK(w.params.auto_select == 1 && w.params.kind == POLICY_HYBRID &&
		  w.params.cost_aware == 1, "default is auto, hybrid:cost until it has chosen");
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &w, 1.0) >= 0 && r.live.auto_pick.have &&
		  r.live.auto_pick.choice == res.choice && r.auto_made == 1,
		  "refit: the choice is installed (%d made)", r.auto_made);
	cells[(M + 2) * K + 3] += 0.01;
	CHECK(RefitCycle(&r, &in, &w, 2.0) >= 0 && r.cycles == 2 && r.auto_made == 1 &&
		  r.live.auto_pick.choice == res.choice, "refit: same block, no new replay");
	cells[0] -= 0.2;
	CHECK(RefitCycle(&r, &in, &w, 3.0) >= 0 && r.auto_made == 2 && r.live.auto_pick.have,
		  "refit: a changed block is replayed");
	RefitFree(&r);
	DecisionWorldFree(&w);
}

/*
 * The world's posterior is the closed-form one, whatever the order of
 * results; a new prior rebuilds it; kinds never share a prior and a
 * regression task never gets a classification-only arm.
 */
static void
TestDecisionPosterior(void)
{
	enum
	{
	K = 6};
	double		cov[K * K],
				mu0[K],
				mu[K],
				var[K];
	unsigned char kinds[K] = {1, 1, 3, 3, 2, 2};
	int			arms[3] = {4, 2, 3};
	double		y[3] = {0.9, 0.4, 0.55};
	uint64_t	rng = 5;
	GpPrior		cls,
				reg,
				own;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTask *r;
	PolicyParams pp;

	RandomPsd(cov, K, 3, &rng);
	for (int k = 0; k < K; k++)
		mu0[k] = 0.3 + 0.1 * k;
	GpPriorInit(&cls, K, mu0, cov, 1e-3);
	for (int k = 0; k < K; k++)
		mu0[k] = 0.8 - 0.1 * k;
	GpPriorInit(&reg, K, mu0, cov, 1e-3);
	GpPriorInit(&own, K, mu0, cov, 2e-3);
	PolicyParamsDefault(&pp, POLICY_HYBRID);
	DecisionWorldInit(&w, K, kinds, NULL, &pp);
	DecisionAddTenant(&w, 0);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &cls);
	memset(&s, 0, sizeof(s));
	s.id = 7;
	s.kind = DECISION_REGRESSION;
	r = DecisionAddTask(&w, &s);
	CHECK(r->arm[0] == DECISION_ARM_INELIGIBLE && r->arm[1] == DECISION_ARM_INELIGIBLE &&
		  r->arm[2] == DECISION_ARM_AVAILABLE, "regression task: classification-only arms out");
	CHECK(r->gp.prior == NULL, "no regression prior yet: no posterior");
	DecisionSetPrior(&w, DECISION_REGRESSION, &reg);
	CHECK(r->gp.prior == &reg, "regression prior in use");
	for (int i = 2; i >= 0; i--)
		DecisionObserve(&w, r, arms[i], y[i], 0);
	GpPosterior(&reg, 3, arms, y, mu, var);
	for (int k = 0; k < K; k++)
	{
		CHECK_NEAR(r->gp.mu[k], mu[k], 1e-9, "world posterior mean");
		CHECK_NEAR(r->gp.var[k], var[k], 1e-9, "world posterior variance");
	}
	DecisionTaskSetPrior(&w, r, &own);
	GpPosterior(&own, 3, arms, y, mu, var);
	CHECK_NEAR(r->gp.mu[5], mu[5], 1e-9, "own prior rebuilds the posterior");
	/* a better score of an arm run again replaces the first */
	DecisionObserve(&w, r, 2, 0.8, 0);
	y[1] = 0.8;
	GpPosterior(&own, 3, arms, y, mu, var);
	CHECK_NEAR(r->gp.mu[5], mu[5], 1e-9, "one score per arm, the better one");
	CHECK(r->n_obs == 3 && r->best == 0.9, "n_obs %d best %g", r->n_obs, r->best);
	DecisionWorldFree(&w);
	GpPriorFree(&cls);
	GpPriorFree(&reg);
	GpPriorFree(&own);
}

/* ----------------------------------------------------------- mixture */

/* Rows drawn around a few centres with noise sd: history for the fit. */
static void
ClusterRows(double *h, int m, int K, double sd, uint64_t *rng)
{
	double		centre[4 * 64];

	for (int i = 0; i < 4 * K; i++)
		centre[i] = 0.2 + 0.6 * PolicyRandUniform(rng);
	for (int r = 0; r < m; r++)
		for (int k = 0; k < K; k++)
		{
			/* Box-Muller */
			double		u = PolicyRandUniform(rng) + 1e-12,
						v = PolicyRandUniform(rng);

			h[r * K + k] = centre[(r % 4) * K + k] +
				sd * sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
		}
}

/*
 * The specs the live scheduler takes (easeml.policy, easeml.set_policy):
 * what PolicyParseSpec accepts, the history mixture's options included,
 * except what PolicyLiveRefusal names (mrg=2).
 */
static void
TestPolicyLiveSpec(void)
{
	char		err[256];
	PolicyParams p;

	CHECK(PolicyParseSpec("hybrid:cost", &p, err, sizeof(err)) == POLICY_OK, "hybrid:cost runs live");
	CHECK(PolicyParseSpec("default", &p, err, sizeof(err)) == POLICY_OK, "default runs live");
	CHECK(PolicyParseSpec("hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2", &p, err, sizeof(err)) == POLICY_OK &&
		  PolicyUsesMixture(&p), "acq=mix runs live, with the mixture");
	CHECK(PolicyParseSpec("max_ei:cost:mrg=1", &p, err, sizeof(err)) == POLICY_OK &&
		  PolicyUsesMixture(&p), "mrg=1 runs live, with the mixture");
	CHECK(PolicyParseSpec("sometimes", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  strstr(err, "sometimes") != NULL, "an unknown policy is refused: %s", err);
	CHECK(PolicyParseSpec("hybrid:cost:acq=mix:mgp=2", &p, err, sizeof(err)) == POLICY_BAD_INPUT,
		  "a bad mixture option is refused: %s", err);
	CHECK(PolicyParseSpec("max_ei:cost:mrg=1", &p, err, sizeof(err)) == POLICY_OK &&
		  PolicyLiveRefusal(&p) == NULL, "mrg=1: no refusal");
	CHECK(PolicyParseSpec("hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2", &p, err,
						  sizeof(err)) == POLICY_OK &&
		  PolicyLiveRefusal(&p) != NULL && strstr(PolicyLiveRefusal(&p), "mrg=2"),
		  "mrg=2 parses (replays) but the live scheduler refuses it");
}

/*
 * The history mixture: imputation, weights, the arm choice (discrete,
 * kernel, blended with the GP), the remaining regret, the fitted
 * bandwidth, the options, and the world using it (src/mixture.c).
 */
static void
TestMixture(void)
{
	enum
	{
	K = 3, M = 4};
	double		h[M * K] = {0.9, 0.5, 0.3, 0.2, 0.8, 0.4, 0.6, 0.6, NAN, 0.5, 0.1, 0.7};
	double		score[K] = {0.55, NAN, NAN};
	double		cost[K] = {1.0, 1.0, 10.0};
	unsigned char avail[K] = {0, 1, 1};
	double		w[M],
				off[M],
				want_w[M],
				sum = 0.0,
				ei1 = 0.0,
				ei2 = 0.0,
				reg = 0.0;
	double		gmu[K] = {0.55, 0.6, 0.5},
				gvar[K] = {0.0, 0.01, 0.04};
	MixPrior	mp;
	PolicyParams pp;
	PolicyTenantView v;
	uint64_t	rng = 11;
	double	   *big;

	CHECK(MixPriorFit(&mp, h, 1, K, 0.1) == POLICY_BAD_INPUT, "one row refused");
	CHECK(MixPriorFit(&mp, h, M, K, 0.1) == POLICY_OK && mp.bw == 0.1 &&
		  mp.bw_shift == 0.1, "fixed bandwidth");
	/* column 2 mean 0.4667, row 2 offset ((0.6-0.55) + (0.6-0.5)) / 2 */
	CHECK_NEAR(mp.rows[2 * K + 2], 1.4 / 3.0 + 0.075, 1e-12, "imputed cell");
	CHECK_NEAR(mp.rows[3 * K + 2], 0.7, 0.0, "known cell kept");

	CHECK(PolicyParseSpec("rr:cost:acq=mix:mh=0", &pp, NULL, 0) == 0 &&
		  pp.mix_arm && pp.acq == POLICY_ACQ_EI && pp.mix_h == 0.0 &&
		  PolicyUsesMixture(&pp) && !PolicyMixScore(&pp), "acq=mix parsed");
	CHECK(PolicyParseSpec("rr:mrg=1", &pp, NULL, 0) == 0 && !PolicyUsesMixture(&pp),
		  "mrg=1 needs a greedy EI rule");
	CHECK(PolicyParseSpec("max_ei:mrg=1", &pp, NULL, 0) == 0 && PolicyMixScore(&pp),
		  "mrg=1 with max_ei");
	CHECK(PolicyParseSpec("rr:mgp=1.5", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:mh=-1", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:mbw=0", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:msh=2", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:acq=mixture", &pp, NULL, 0) != 0, "bad mixture options refused");

	/* weights: exp(-(0.55 - r_0)^2 / (2 s^2)), normalised */
	PolicyParseSpec("rr:cost:acq=mix:mh=0", &pp, NULL, 0);
	CHECK(MixWeights(&mp, &pp, score, w, off) == 0.1, "bandwidth used");
	for (int r = 0; r < M; r++)
		sum += want_w[r] = exp(-pow(0.55 - h[r * K], 2) / 0.02);
	for (int r = 0; r < M; r++)
	{
		CHECK_NEAR(w[r], want_w[r] / sum, 1e-12, "row weight");
		CHECK(off[r] == 0.0, "no offset without msh");
		ei1 += w[r] * fmax(mp.rows[r * K + 1] - 0.55, 0.0);
		ei2 += w[r] * fmax(mp.rows[r * K + 2] - 0.55, 0.0);
		reg += w[r] * fmax(fmax(mp.rows[r * K + 1], mp.rows[r * K + 2]) - 0.55, 0.0);
	}
	CHECK(ei2 > ei1 && ei2 / 10.0 < ei1, "test case: cost decides");

	/* the discrete arm choice, per second */
	memset(&v, 0, sizeof(v));
	v.best = 0.55;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == 1, "mixture EI per second picks arm 1, got %d", v.arm);
	CHECK_NEAR(v.ei, ei1, 1e-12, "discrete mixture EI");
	CHECK_NEAR(v.acq, ei1 / 1.0, 1e-12, "per second");
	CHECK_NEAR(MixRemainingRegret(&mp, &pp, w, off, avail, 0.55), reg, 1e-12,
			   "remaining regret");
	pp.cost_aware = 0;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == 2, "without cost: arm 2");
	CHECK_NEAR(v.ei, ei2, 1e-12, "discrete mixture EI of arm 2");
	v.best = 0.95;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == -1, "no row above the best: no mixture choice");
	CHECK(MixRemainingRegret(&mp, &pp, w, off, avail, 0.95) == 0.0, "nothing left");

	/* a kernel per row: sum_r w_r EI(r_k, h, best) */
	v.best = 0.55;
	pp.mix_h = 0.05;
	ei1 = ei2 = 0.0;
	for (int r = 0; r < M; r++)
	{
		ei1 += w[r] * PolicyExpectedImprovement(mp.rows[r * K + 1], 0.05, 0.55);
		ei2 += w[r] * PolicyExpectedImprovement(mp.rows[r * K + 2], 0.05, 0.55);
	}
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) == 0 &&
		  v.arm == 2 && ei2 > ei1, "kernel: arm 2");
	CHECK_NEAR(v.ei, ei2, 1e-12, "kernel mixture EI");
	/* blended with the GP: all GP at mgp=1 */
	pp.mix_gp = 1.0;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &v) ==
		  POLICY_BAD_INPUT, "mgp needs the GP posterior");
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, gmu, gvar, cost, avail, &v) == 0 &&
		  v.arm == 1, "GP alone: arm 1");
	CHECK_NEAR(v.ei, PolicyExpectedImprovement(0.6, 0.1, 0.55), 1e-12, "GP EI");
	pp.mix_gp = 0.5;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, gmu, gvar, cost, avail, &v) == 0 &&
		  v.arm == 2, "half and half: arm 2");
	CHECK_NEAR(v.ei, 0.5 * ei2 + 0.5 * PolicyExpectedImprovement(0.5, 0.2, 0.55),
			   1e-12, "blended EI");

	/* shifted rows: one result, every row fits after its offset */
	pp.mix_shift = 1;
	MixWeights(&mp, &pp, score, w, off);
	for (int r = 0; r < M; r++)
	{
		CHECK_NEAR(w[r], 0.25, 1e-12, "one result, shifted: equal weights");
		CHECK_NEAR(off[r], 0.55 - h[r * K], 1e-12, "row offset");
	}
	MixPriorFree(&mp);

	/* the fitted bandwidth follows the rows' noise */
	big = malloc(sizeof(double) * 48 * 40);
	for (int i = 0; i < 2; i++)
	{
		double		sd = i == 0 ? 0.01 : 0.05;

		ClusterRows(big, 48, 40, sd, &rng);
		CHECK(MixPriorFit(&mp, big, 48, 40, 0.0) == 0, "fit");
		/* two noisy rows of a centre differ by sd sqrt(2) per cell */
		CHECK(mp.bw >= 0.7 * sd && mp.bw <= 3.0 * sd,
			  "noise sd %g: bandwidth %g", sd, mp.bw);
		MixPriorFree(&mp);
	}
	free(big);
}

/*
 * The shifted rows' offset prior (mtau): shrunk offsets and the offset-
 * marginal weights, exp(-(|d|^2 - (sum d)^2 / (n + kappa)) / (2 s^2)).
 */
static void
TestMixOffsetPrior(void)
{
	enum
	{
	K = 3, M = 4};
	double		h[M * K] = {0.9, 0.5, 0.3, 0.2, 0.8, 0.4, 0.6, 0.6, 0.2, 0.5, 0.1, 0.7};
	double		score[K] = {0.55, 0.7, NAN};
	double		w[M],
				off[M],
				w0[M],
				off0[M],
				want[M],
				sum = 0.0,
				kappa = 0.01 / 0.0025;
	MixPrior	mp;
	PolicyParams pp;

	CHECK(PolicyParseSpec("rr:acq=mix:msh=1:mtau=0", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:acq=mix:msh=1:mtau=-1", &pp, NULL, 0) != 0,
		  "mtau must be positive");
	MixPriorFit(&mp, h, M, K, 0.1);
	PolicyParseSpec("rr:acq=mix:msh=1:mh=0", &pp, NULL, 0);
	MixWeights(&mp, &pp, score, w0, off0);
	CHECK(MixOffsetKappa(&pp, 0.1) == 0.0, "no prior: kappa 0");
	pp.mix_tau = 0.05;
	CHECK_NEAR(MixOffsetKappa(&pp, 0.1), kappa, 1e-12, "kappa = s^2 / tau^2");
	MixWeights(&mp, &pp, score, w, off);
	for (int r = 0; r < M; r++)
	{
		double		d0 = 0.55 - h[r * K],
					d1 = 0.7 - h[r * K + 1];

		CHECK_NEAR(off[r], (d0 + d1) / (2.0 + kappa), 1e-12, "shrunk offset");
		sum += want[r] = exp(-(d0 * d0 + d1 * d1 -
							   pow(d0 + d1, 2) / (2.0 + kappa)) / 0.02);
	}
	for (int r = 0; r < M; r++)
		CHECK_NEAR(w[r], want[r] / sum, 1e-12, "offset-marginal weight");
	pp.mix_tau = 1e6;
	MixWeights(&mp, &pp, score, w, off);
	for (int r = 0; r < M; r++)
		CHECK(fabs(w[r] - w0[r]) < 1e-9 && fabs(off[r] - off0[r]) < 1e-9,
			  "a wide offset prior is the free shift");
	MixPriorFree(&mp);
}

/*
 * Tempered weights (mnc=C): with n > C results the log weights are
 * scaled by C / n, with n <= C they are unchanged.
 */
static void
TestMixTempered(void)
{
	enum
	{
	K = 4, M = 3};
	double		h[M * K] = {0.9, 0.5, 0.3, 0.4, 0.2, 0.8, 0.4, 0.6,
	0.6, 0.6, 0.2, 0.5};
	double		score[K] = {0.55, 0.7, 0.35, NAN};
	double		w[M],
				off[M],
				w0[M],
				off0[M],
				want[M],
				sum = 0.0;
	MixPrior	mp;
	PolicyParams pp;

	CHECK(PolicyParseSpec("rr:acq=mix:mnc=1001", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:acq=mix:mnc=x", &pp, NULL, 0) != 0, "bad mnc refused");
	MixPriorFit(&mp, h, M, K, 0.1);
	PolicyParseSpec("rr:acq=mix:msh=1:mh=0", &pp, NULL, 0);
	MixWeights(&mp, &pp, score, w0, off0);
	PolicyParseSpec("rr:acq=mix:msh=1:mh=0:mnc=3", &pp, NULL, 0);
	MixWeights(&mp, &pp, score, w, off);
	for (int r = 0; r < M; r++)
		CHECK(w[r] == w0[r] && off[r] == off0[r], "n <= C: unchanged");
	pp.mix_ncap = 2;
	MixWeights(&mp, &pp, score, w, off);
	for (int r = 0; r < M; r++)
	{
		double		d2 = 0.0;

		for (int k = 0; k < 3; k++)
			d2 += pow(score[k] - h[r * K + k] - off0[r], 2);
		sum += want[r] = exp(-d2 * 2.0 / 3.0 / 0.02);
		CHECK_NEAR(off[r], off0[r], 1e-15, "tempering keeps the offset");
	}
	for (int r = 0; r < M; r++)
		CHECK_NEAR(w[r], want[r] / sum, 1e-12, "tempered weight");
	CHECK(w[0] != w0[0], "test case: tempering changes the weights");
	MixPriorFree(&mp);
}

/*
 * The two-run index by brute force: the first arm's result r_a + o_r
 * added to the scores, weights and offsets recomputed by MixWeights, the
 * best second arm by EI per cost above max(best, y).
 */
static double
BrutePlanIndex(const MixPrior *mp, const PolicyParams *pp, const double *score,
			   const double *cost, const unsigned char *avail, double best,
			   int a)
{
	double		w[32],
				off[32],
				w2[32],
				off2[32],
				sc[16],
				ei1 = 0.0,
				ei2 = 0.0,
				c2 = 0.0;
	int			K = mp->K;

	MixWeights(mp, pp, score, w, off);
	for (int r = 0; r < mp->m; r++)
		ei1 += w[r] * fmax(mp->rows[r * K + a] + off[r] - best, 0.0);
	for (int r = 0; r < mp->m; r++)
	{
		double		y = mp->rows[r * K + a] + off[r],
					b1 = fmax(best, y),
					top = 0.0,
					top_ei = 0.0,
					top_c = 0.0;

		memcpy(sc, score, sizeof(double) * K);
		sc[a] = y;
		MixWeights(mp, pp, sc, w2, off2);
		for (int k = 0; k < K; k++)
		{
			double		e = 0.0;

			if (!avail[k] || k == a)
				continue;
			for (int q = 0; q < mp->m; q++)
				e += w2[q] * fmax(mp->rows[q * K + k] + off2[q] - b1, 0.0);
			if (e / cost[k] > top)
			{
				top = e / cost[k];
				top_ei = e;
				top_c = cost[k];
			}
		}
		ei2 += w[r] * top_ei;
		c2 += w[r] * top_c;
	}
	return fmax(ei1 / cost[a], (ei1 + ei2) / (cost[a] + c2));
}

/*
 * Random shifted rows (every arm and row in the plan) until the chosen
 * arm's index is its pair's, not its own EI per cost, so the weight and
 * offset update decide; then the plan must match the brute force.
 * Returns whether such a case was found.
 */
static int
PlanRandomCase(const char *spec)
{
	enum
	{
	K = 8, M = 12};
	double		big[M * K],
				score[K],
				cost[K],
				w[M],
				off[M];
	unsigned char avail[K];
	uint64_t	rng = 5;
	PolicyParams pp;

	PolicyParseSpec(spec, &pp, NULL, 0);
	for (int trial = 0; trial < 200; trial++)
	{
		MixPrior	mp;
		PolicyTenantView v;
		double		want = 0.0,
					own = 0.0,
					best;
		int			want_arm = -1;

		ClusterRows(big, M, K, 0.05, &rng);
		MixPriorFit(&mp, big, M, K, 0.06);
		for (int k = 0; k < K; k++)
		{
			score[k] = k < 2 ? big[k] + 0.1 * PolicyRandUniform(&rng) - 0.05 : NAN;
			avail[k] = k >= 2;
			cost[k] = 0.2 + 2.0 * PolicyRandUniform(&rng);
		}
		best = fmax(score[0], score[1]);
		MixWeights(&mp, &pp, score, w, off);
		for (int k = 2; k < K; k++)
		{
			double		x = BrutePlanIndex(&mp, &pp, score, cost, avail, best, k);

			if (x > want)
			{
				want = x;
				want_arm = k;
			}
		}
		for (int r = 0; want_arm >= 0 && r < M; r++)
			own += w[r] * fmax(mp.rows[r * K + want_arm] + off[r] - best, 0.0);
		if (want_arm < 0 || !(want > 1.01 * own / cost[want_arm]))
		{
			MixPriorFree(&mp);
			continue;
		}
		memset(&v, 0, sizeof(v));
		v.best = best;
		CHECK(MixPlanBestArm(&mp, &pp, w, off, 0.06, score, NULL, NULL, cost,
							 avail, &v) == 0 && v.arm == want_arm,
			  "%s: arm %d, brute force %d", spec, v.arm, want_arm);
		/* the plan leaves out rows past 99.9% of the weight */
		CHECK_NEAR(v.acq, want, 1e-3 * want, "random rows: plan index");
		MixPriorFree(&mp);
		return 1;
	}
	return 0;
}

/*
 * The two-run plan (mpl, src/mixplan.c): mpl=1 is the myopic choice; a
 * cheap probe that tells two rows apart wins over the myopic arm; on
 * random rows, shifted with an offset prior, the index and the arm agree
 * with the brute force.
 */
static void
TestMixPlan(void)
{
	enum
	{
	K = 4, M = 2};
	/* arm 0 seen (0.5); arm 1 a cheap probe; arm 2 best in row A, 3 in B */
	double		h[M * K] = {0.5, 0.52, 0.9, 0.5, 0.5, 0.1, 0.5, 0.9};
	double		score[K] = {0.5, NAN, NAN, NAN};
	double		cost[K] = {1.0, 0.1, 1.0, 1.0};
	unsigned char avail[K] = {0, 1, 1, 1};
	double		w[M],
				off[M];
	MixPrior	mp;
	PolicyParams pp;
	PolicyTenantView v,
				mv;

	CHECK(PolicyParseSpec("rr:acq=mix:mpl=17", &pp, NULL, 0) != 0 &&
		  PolicyParseSpec("rr:acq=mix:mpl=16", &pp, NULL, 0) == 0 &&
		  pp.mix_plan == 16, "mpl parsed and bounded");
	MixPriorFit(&mp, h, M, K, 0.1);
	PolicyParseSpec("rr:cost:acq=mix:mh=0:mpl=1", &pp, NULL, 0);
	MixWeights(&mp, &pp, score, w, off);
	memset(&v, 0, sizeof(v));
	v.best = 0.5;
	mv = v;
	CHECK(MixBestArm(&mp, &pp, w, off, 0.1, NULL, NULL, cost, avail, &mv) == 0 &&
		  mv.arm == 2, "myopic: arm 2, got %d", mv.arm);
	CHECK(MixPlanBestArm(&mp, &pp, w, off, 0.1, score, NULL, NULL, cost, avail,
						 &v) == 0 && v.arm == 2 && v.acq >= mv.acq &&
		  v.ei == mv.ei && v.score == mv.score, "mpl=1: the myopic choice");
	pp.mix_plan = 3;
	CHECK(MixPlanBestArm(&mp, &pp, w, off, 0.1, score, NULL, NULL, cost, avail,
						 &v) == 0 && v.arm == 1, "plan: the probe, got %d", v.arm);
	/* (EI1 0.01 + E[EI2] about 0.39) / (0.1 + 1) */
	CHECK_NEAR(v.acq, 0.4 / 1.1, 1e-3, "plan index of the probe");
	CHECK_NEAR(v.acq, BrutePlanIndex(&mp, &pp, score, cost, avail, 0.5, 1),
			   1e-12, "probe index, brute force");
	CHECK(MixPlanBestArm(&mp, &pp, w, off, 0.0, score, NULL, NULL, cost, avail,
						 &v) == POLICY_BAD_INPUT, "bandwidth must be positive");
	MixPriorFree(&mp);

	/* random rows, shifted: the plan's index equals the brute force */
	CHECK(PlanRandomCase("rr:cost:acq=mix:msh=1:mh=0:mpl=8"),
		  "random rows, shifted: a case where the pair decides");
	CHECK(PlanRandomCase("rr:cost:acq=mix:msh=1:mh=0:mtau=0.05:mpl=8"),
		  "random rows, offset prior: a case where the pair decides");
}

/*
 * A refit cycle fits the mixture in many steps (the scheduler's 5 ms
 * slices can stop between them) and installs the one-shot fit 'want'.
 */
static void
TestRefitMixtureSliced(const double *h, int m, int K, const MixPrior *want)
{
	int64_t    *task = calloc(m, sizeof(int64_t));
	unsigned char *kind = calloc(m, 1);
	RefitInput	in;
	RefitState	r;
	DecisionWorld w;
	int			plain,
				mixed;

	memset(&in, 0, sizeof(in));
	in.K = K;
	in.m = m;
	in.cells = h;
	in.row_task = task;
	in.row_kind = kind;
	MakeWorld(&w, K, "hybrid:cost", 1);
	RefitInit(&r, K, 0);
	plain = RefitCycle(&r, &in, &w, 1.0);
	RefitFree(&r);
	in.need_mix = 1;
	RefitInit(&r, K, 0);
	mixed = RefitCycle(&r, &in, &w, 1.0);
	CHECK(plain >= 0 && mixed > plain + 20 && !r.running,
		  "the mixture takes many refit steps: %d, %d without", mixed, plain);
	CHECK(r.live.have_mix[DECISION_CLASSIFICATION] &&
		  r.live.mix[DECISION_CLASSIFICATION].bw == want->bw &&
		  r.live.mix[DECISION_CLASSIFICATION].bw_shift == want->bw_shift,
		  "the refit installs the one-shot fit");
	RefitFree(&r);
	DecisionWorldFree(&w);
	free(task);
	free(kind);
}

/*
 * The live refit slices the mixture's fit (MixFitStep): one case per call
 * must give exactly the one-shot fit, likelihoods included.
 */
static void
TestMixtureSliced(void)
{
	enum
	{
		M = 120, K = 30
	};
	double	   *h = malloc(sizeof(double) * M * K);
	uint64_t	rng = 77;
	MixFitJob	whole,
				cut;
	MixPrior	a,
				b;
	int			calls = 0;

	ClusterRows(h, M, K, 0.03, &rng);
	h[5] = NAN;
	CHECK(MixFitBegin(&whole, h, M, K) == POLICY_OK &&
		  MixFitBegin(&cut, h, M, K) == POLICY_OK, "begin");
	CHECK(MixFitStep(&whole, INFINITY) == 1, "one step fits all");
	while (!MixFitStep(&cut, 1.0) && calls < 100000)
		calls++;
	/* 2 passes x 60 held-out rows (every 2nd) x 5 cases, then the last pick */
	CHECK(calls + 1 == 2 * 60 * 5 + 1, "one case per call: %d calls", calls + 1);
	CHECK(memcmp(whole.ll, cut.ll, sizeof(whole.ll)) == 0,
		  "sliced likelihoods equal the one-shot ones");
	MixFitTake(&whole, &a);
	MixFitTake(&cut, &b);
	CHECK(a.bw == b.bw && a.bw_shift == b.bw_shift && a.bw > 0,
		  "bandwidths %g/%g, sliced %g/%g", a.bw, a.bw_shift, b.bw, b.bw_shift);
	CHECK(memcmp(a.rows, b.rows, sizeof(double) * M * K) == 0, "rows");
	MixPriorFree(&b);
	CHECK(MixPriorFit(&b, h, M, K, 0.0) == POLICY_OK &&
		  b.bw == a.bw && b.bw_shift == a.bw_shift, "MixPriorFit is the same fit");
	CHECK(MixFitBegin(&cut, h, 1, K) == POLICY_BAD_INPUT, "one row refused");
	MixPriorFree(&b);
	TestRefitMixtureSliced(h, M, K, &a);
	MixPriorFree(&a);
	free(h);
}

/*
 * The learned task score (mrg=2, src/mixlearn.c): the features of a hand
 * case, a fit on generated rows
 * that solves its ridge problem and follows the states' true remaining
 * regret, and a world that
 * fits the model on first use, scores a task by it per second and drops
 * it when its mixture is replaced.
 */
static void
TestMixLearn(void)
{
	enum
	{
	K = 10, M = 30};
	double	   *h = malloc(sizeof(double) * M * K);
	double		score[K],
				w[M],
				off[M],
				x[MIXL_FEATURES],
				mx = 0.0,
				reg,
				w2 = 0.0;
	unsigned char avail[K];
	uint64_t	rng = 5;
	MixPrior	mp;
	MixLearn	ml,
				ml2;
	double	   *sx = malloc(sizeof(double) * MIXL_STATES * MIXL_FEATURES);
	double	   *sy = malloc(sizeof(double) * MIXL_STATES);
	double		grad[MIXL_FEATURES],
				sxy = 0.0,
				sxx = 0.0,
				syy = 0.0,
				my = 0.0;
	int			ns = 0;
	PolicyParams pp;
	GpPrior		prior;
	double		mu0[K],
				cov[K * K];
	DecisionWorld dw;
	DecisionTaskSpec s;
	DecisionTask *t;
	DecisionChoice c;


	/* rows: a shared shape plus noise; every third row has one star arm */
	for (int r = 0; r < M; r++)
		for (int k = 0; k < K; k++)
			h[r * K + k] = 0.5 + 0.02 * k + 0.05 * PolicyRandUniform(&rng) +
				(r % 3 == 0 && k == r % K ? 0.3 : 0.0);
	CHECK(MixPriorFit(&mp, h, M, K, 0.05) == POLICY_OK, "mixture");
	PolicyParseSpec("max_ei:acq=mix:mh=0:mrg=2", &pp, NULL, 0);
	CHECK(PolicyMixScore(&pp) && pp.mix_score == 2, "mrg=2 parsed");
	CHECK(PolicyParseSpec("max_ei:mrg=3", &pp, NULL, 0) != 0, "mrg=3 refused");
	PolicyParseSpec("max_ei:acq=mix:mh=0:mrg=2", &pp, NULL, 0);

	/* features of a hand state: one result 0.55 on arm 0 */
	for (int k = 0; k < K; k++)
	{
		score[k] = k == 0 ? 0.55 : NAN;
		avail[k] = k != 0;
	}
	MixWeights(&mp, &pp, score, w, off);
	reg = MixRemainingRegret(&mp, &pp, w, off, avail, 0.55);
	for (int k = 1; k < K; k++)
	{
		double		ei = 0.0;

		for (int r = 0; r < M; r++)
			if (w[r] > 1e-12)
				ei += w[r] * fmax(h[r * K + k] - 0.55, 0.0);
		mx = fmax(mx, ei);
	}
	for (int r = 0; r < M; r++)
		w2 += w[r] * w[r];
	MixLearnFeatures(&mp, &pp, w, off, avail, 0.55, 1, 3, x);
	CHECK(x[0] == 1.0 && x[7] == 0.55, "intercept and best");
	CHECK_NEAR(x[1], log(reg + 1e-4), 1e-9, "log remaining regret");
	CHECK_NEAR(x[2], log(mx + 1e-5), 1e-9, "log largest EI");
	CHECK_NEAR(x[4], log(2.0), 1e-12, "log runs");
	CHECK_NEAR(x[5], log(4.0), 1e-12, "log runs since the best improved");
	CHECK_NEAR(x[6], -log(w2), 1e-9, "log effective rows");

	/* the fit: deterministic, the ridge solution, and it ranks the states */
	CHECK(MixLearnFit(&ml, &mp, &pp, NULL) == POLICY_OK && ml.ok && ml.n > 100,
		  "fitted on %d states", ml.n);
	MixLearnFit(&ml2, &mp, &pp, NULL);
	CHECK(memcmp(ml.coef, ml2.coef, sizeof(ml.coef)) == 0, "deterministic");
	CHECK(MixLearnStates(&mp, &pp, NULL, sx, sy, &ns) == POLICY_OK && ns == ml.n,
		  "the fit's states");
	for (int j = 0; j < MIXL_FEATURES; j++)
		grad[j] = j > 0 ? MIXL_RIDGE * ns * ml.coef[j] : 0.0;
	for (int i = 0; i < ns; i++)
	{
		double		e = log(MixLearnPredict(&ml, sx + i * MIXL_FEATURES)) - sy[i];

		for (int j = 0; j < MIXL_FEATURES; j++)
			grad[j] += e * sx[i * MIXL_FEATURES + j];
		sxy += (e + sy[i]) * sy[i];
		sxx += (e + sy[i]) * (e + sy[i]);
		syy += sy[i] * sy[i];
		my += sy[i] / ns;
	}
	for (int j = 0; j < MIXL_FEATURES; j++)
		CHECK(fabs(grad[j]) < 1e-6 * ns, "ridge normal equation %d: %g", j, grad[j]);
	/* correlation of prediction and truth (same mean: the intercept) */
	CHECK((sxy - ns * my * my) /
		  sqrt((sxx - ns * my * my) * (syy - ns * my * my)) > 0.3,
		  "the prediction follows the true remaining regret");

	/* a world: fitted on first use, the score per second, reset */
	for (int k = 0; k < K; k++)
	{
		mu0[k] = 0.6;
		for (int j = 0; j < K; j++)
			cov[k * K + j] = k == j ? 0.02 : 0.0;
	}
	GpPriorInit(&prior, K, mu0, cov, 1e-4);
	PolicyParseSpec("max_ei:cost:acq=mix:mh=0:mrg=2", &pp, NULL, 0);
	DecisionWorldInit(&dw, K, NULL, NULL, &pp);
	DecisionSetPrior(&dw, DECISION_CLASSIFICATION, &prior);
	DecisionSetMixture(&dw, DECISION_CLASSIFICATION, &mp);
	memset(&s, 0, sizeof(s));
	s.tenant = DecisionAddTenant(&dw, 0);
	t = DecisionAddTask(&dw, &s);
	DecisionStart(&dw, t, 0);
	DecisionObserve(&dw, t, 0, 0.55, 1.0);
	DecisionEnd(&dw, t, 0, 0);
	CHECK(DecisionNext(&dw, &c) == 0 && dw.mix_learn[0] != NULL &&
		  dw.mix_learn[0]->ok, "fitted on first use");
	MixLearnFeatures(&mp, &pp, w, off, avail, 0.55, 1, 0, x);
	CHECK_NEAR(dw.views[t->index].score,
			   MixLearnPredict(dw.mix_learn[0], x) / dw.views[t->index].cost,
			   1e-9, "task score: learned regret per second");
	DecisionSetMixture(&dw, DECISION_CLASSIFICATION, &mp);
	CHECK(dw.mix_learn[0] == NULL, "refitted after a new mixture");
	DecisionWorldFree(&dw);
	GpPriorFree(&prior);
	MixPriorFree(&mp);
	free(h);
	free(sx);
	free(sy);
}

/* The world uses the mixture's arm where one is installed, else the GP's. */
static void
TestDecisionMixture(void)
{
	enum
	{
	K = 3, M = 4};
	double		h[M * K] = {0.9, 0.2, 0.3, 0.2, 0.8, 0.4, 0.9, 0.25, 0.3, 0.5, 0.1, 0.7};
	double		mu0[K] = {0.6, 0.4, 0.5},
				cov[K * K] = {0.04, 0, 0, 0, 0.01, 0, 0, 0, 0.04};
	GpPrior		prior;
	MixPrior	mp;
	DecisionWorld w;
	DecisionTaskSpec s;
	DecisionTask *t;
	DecisionChoice c;
	PolicyParams pp;

	GpPriorInit(&prior, K, mu0, cov, 1e-4);
	MixPriorFit(&mp, h, M, K, 0.05);
	PolicyParseSpec("rr:acq=mix:mh=0", &pp, NULL, 0);
	DecisionWorldInit(&w, K, NULL, NULL, &pp);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	memset(&s, 0, sizeof(s));
	s.tenant = DecisionAddTenant(&w, 0);
	t = DecisionAddTask(&w, &s);
	DecisionStart(&w, t, 0);
	DecisionObserve(&w, t, 0, 0.2, 1.0);
	DecisionEnd(&w, t, 0, 0);
	/* independent GP: arm 2 has the larger mean and variance */
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 2, "GP: arm 2");
	CHECK(DecisionSetMixture(&w, DECISION_CLASSIFICATION, &mp) == 0, "set mixture");
	/* the task matches row 1 (0.2 on arm 0), whose arm 1 is 0.8 */
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 1,
		  "mixture's arm 1, got %d", c.chosen.arm);
	DecisionSetMixture(&w, DECISION_CLASSIFICATION, NULL);
	CHECK(DecisionNext(&w, &c) == 0 && c.chosen.arm == 2, "back to the GP");
	DecisionWorldFree(&w);
	MixPriorFree(&mp);
	GpPriorFree(&prior);
}

/*
 * The live scheduler's history mixture (src/refit.c): the refit cycle fits
 * one per kind from the kind's history rows and installs it into the
 * world; a decision under acq=mix there equals the decision of a world
 * built as easeml-replay builds a draw's (DecisionSetMixture of a mixture
 * fitted on the other rows only, the same GP prior), i.e. the task's own
 * row is no particle for it.  That the check can fail: the own row left in
 * the weights changes the decision, and so does no mixture at all.  A
 * second cycle replaces the mixture in place.
 */
static void
TestLiveMixture(void)
{
	enum
	{
	K = 6, M = 9, MT = 12};
	const char *spec = "hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2";
	double		cells[MT * K],
				other[MT * K],
				cells2[MT * K];
	int64_t		row_task[MT] = {0};
	unsigned char row_kind[MT] = {0};
	uint64_t	rng = 23;
	RefitInput	in;
	RefitState	r;
	DecisionWorld live,
				ref,
				leak,
				gp;
	DecisionTask *t[4];
	DecisionChoice c[4];
	MixPrior	refmix;
	const MixPrior *lm;
	int			n_other = 0;

	/* seed rows: two families of data sets, each row a noisy copy */
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			cells[i * K + k] = (i % 2 ? 0.9 - 0.08 * k : 0.5 + 0.08 * k) +
				0.03 * PolicyRandUniform(&rng);
	/* task 101, active: two scores, the rest unknown */
	for (int k = 0; k < K; k++)
		cells[M * K + k] = k < 2 ? 0.52 + 0.08 * k : NAN;
	row_task[M] = 101;
	/* task 102, another tenant's finished task, and a regression task */
	for (int k = 0; k < K; k++)
	{
		cells[(M + 1) * K + k] = 0.55 + 0.07 * k;
		cells[(M + 2) * K + k] = 0.3;
	}
	row_task[M + 1] = 102;
	row_task[M + 2] = 103;
	row_kind[M + 2] = DECISION_REGRESSION;
	for (int i = 0; i < MT; i++)
		if (row_kind[i] == DECISION_CLASSIFICATION && row_task[i] != 101)
			memcpy(other + (size_t) n_other++ * K, cells + (size_t) i * K,
				   sizeof(double) * K);
	memset(&in, 0, sizeof(in));
	in.K = K;
	in.m = MT;
	in.cells = cells;
	in.row_task = row_task;
	in.row_kind = row_kind;

	/* no policy that may run uses the mixture: none is fitted */
	MakeWorld(&gp, K, "hybrid:cost", 1);
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &gp, 1.0) >= 0 && !r.live.have_mix[DECISION_CLASSIFICATION] &&
		  gp.mix[DECISION_CLASSIFICATION] == NULL, "no mixture without need_mix");
	RefitFree(&r);
	DecisionWorldFree(&gp);
	in.need_mix = 1;

	MakeWorld(&live, K, spec, 1);
	t[0] = AddTask(&live, 101, 0, NULL);
	for (int k = 0; k < 2; k++)
		DecisionObserve(&live, t[0], k, cells[M * K + k], 1.0);
	RefitInit(&r, K, 0);
	CHECK(RefitCycle(&r, &in, &live, 1.0) >= 0, "refit cycle");
	lm = &r.live.mix[DECISION_CLASSIFICATION];
	CHECK(r.live.have_mix[DECISION_CLASSIFICATION] && lm->m == M + 2 && lm->bw > 0,
		  "a mixture of the %d classification rows (m=%d bw=%g)", M + 2, lm->m, lm->bw);
	CHECK(!r.live.have_mix[DECISION_REGRESSION] && live.mix[DECISION_REGRESSION] == NULL,
		  "one regression row: no mixture of that kind");
	CHECK(live.mix[DECISION_CLASSIFICATION] == lm &&
		  live.mix_task[DECISION_CLASSIFICATION][M] == 101, "installed with its rows' tasks");
	CHECK(t[0]->own_prior == RefitOwnPrior(&r, 101) && t[0]->own_prior != NULL,
		  "the task's own GP prior");

	/* the replay's world: the same GP prior, a mixture of the other rows */
	CHECK(MixPriorFit(&refmix, other, n_other, K, lm->bw) == 0, "reference mixture");
	refmix.bw_shift = lm->bw_shift;
	MakeWorld(&ref, K, spec, 1);
	MakeWorld(&leak, K, spec, 1);
	MakeWorld(&gp, K, spec, 1);
	DecisionSetPrior(&ref, DECISION_CLASSIFICATION, t[0]->own_prior);
	DecisionSetPrior(&leak, DECISION_CLASSIFICATION, t[0]->own_prior);
	DecisionSetPrior(&gp, DECISION_CLASSIFICATION, t[0]->own_prior);
	DecisionSetMixture(&ref, DECISION_CLASSIFICATION, &refmix);
	DecisionSetMixture(&leak, DECISION_CLASSIFICATION, lm);	/* own row in */
	t[1] = AddTask(&ref, 101, 0, NULL);
	t[2] = AddTask(&leak, 101, 0, NULL);
	t[3] = AddTask(&gp, 101, 0, NULL);
	for (int k = 0; k < 2; k++)
	{
		DecisionObserve(&ref, t[1], k, cells[M * K + k], 1.0);
		DecisionObserve(&leak, t[2], k, cells[M * K + k], 1.0);
		DecisionObserve(&gp, t[3], k, cells[M * K + k], 1.0);
	}
	CHECK(DecisionNext(&live, &c[0]) == 0 && DecisionNext(&ref, &c[1]) == 0 &&
		  DecisionNext(&leak, &c[2]) == 0 && DecisionNext(&gp, &c[3]) == 0 &&
		  c[0].chosen.arm >= 2, "decisions (live arm %d)", c[0].chosen.arm);
	CHECK(c[0].chosen.arm == c[1].chosen.arm &&
		  fabs(live.views[0].ei - ref.views[0].ei) < 1e-12 &&
		  fabs(live.views[0].acq - ref.views[0].acq) < 1e-12,
		  "live = replay's decision: arm %d/%d, EI %.9g/%.9g", c[0].chosen.arm,
		  c[1].chosen.arm, live.views[0].ei, ref.views[0].ei);
	CHECK(fabs(leak.views[0].ei - live.views[0].ei) > 1e-6,
		  "the own row as a particle would change it (EI %.9g vs %.9g)",
		  leak.views[0].ei, live.views[0].ei);
	CHECK(fabs(gp.views[0].ei - ref.views[0].ei) > 1e-6 ||
		  c[3].chosen.arm != c[1].chosen.arm, "without the mixture it differs (EI %.9g vs %.9g, arm %d vs %d)", gp.views[0].ei, ref.views[0].ei, c[3].chosen.arm, c[1].chosen.arm);

	/* a second cycle (changed history) replaces the mixture in place */
	memcpy(cells2, cells, sizeof(cells));
	for (int k = 0; k < K; k++)
		cells2[(M + 1) * K + k] = 0.95 - 0.05 * k;
	in.cells = cells2;
	CHECK(RefitCycle(&r, &in, &live, 2.0) >= 0 && r.cycles == 2, "second cycle");
	CHECK(live.mix[DECISION_CLASSIFICATION] == lm && lm->m == M + 2 &&
		  fabs(lm->rows[(M + 1) * K] - 0.95) < 1e-12, "the new rows are installed");
	CHECK(DecisionNext(&live, &c[0]) == 0 && c[0].chosen.arm >= 2, "a decision on them");
	DecisionWorldFree(&live);
	DecisionWorldFree(&ref);
	DecisionWorldFree(&leak);
	DecisionWorldFree(&gp);
	MixPriorFree(&refmix);
	RefitFree(&r);
}

/* Two views are the same decision, bit for bit. */
static int
ViewSame(const PolicyTenantView *a, const PolicyTenantView *b)
{
	return a->arm == b->arm &&
		memcmp(&a->mu, &b->mu, sizeof(double)) == 0 &&
		memcmp(&a->sigma, &b->sigma, sizeof(double)) == 0 &&
		memcmp(&a->cost, &b->cost, sizeof(double)) == 0 &&
		memcmp(&a->acq, &b->acq, sizeof(double)) == 0 &&
		memcmp(&a->ei, &b->ei, sizeof(double)) == 0 &&
		memcmp(&a->score, &b->score, sizeof(double)) == 0;
}

/* Tasks whose views differ between two worlds of the same tasks. */
static int
ViewsDiffer(const DecisionWorld *a, const DecisionWorld *b)
{
	int			n = 0;

	for (int i = 0; i < a->n_tasks && i < b->n_tasks; i++)
		n += !ViewSame(&a->views[i], &b->views[i]);
	return n + abs(a->n_tasks - b->n_tasks);
}

/*
 * DecisionWorld.installing (the live worker's refit steps): a refit's
 * install leaves the views of unchanged tasks stale instead of refreshing
 * every task in the next decision.  A decision then refreshes at most DECISION_STALE_PICKS
 * of them (the picked ones), a task that changes is refreshed at once,
 * and after DecisionRefreshStale in batches every view is bit for bit the
 * one an eager world computes from scratch under the new models.
 */
static void
TestLazyInstall(void)
{
	enum
	{
	K = 6, M = 9, N = 30, MT = M + N, BATCH = 4};
	const char *spec = "hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2";
	double		cells[MT * K],
				cells2[MT * K];
	int64_t		row_task[MT] = {0};
	unsigned char row_kind[MT] = {0};
	uint64_t	rng = 31;
	RefitInput	in;
	RefitState	re,
				rl;
	DecisionWorld eager,
				lazy;
	PolicyTenantView before[N];
	DecisionChoice c;
	int			stale,
				calls = 0,
				left;
	int64_t		n0;

	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			cells[i * K + k] = (i % 2 ? 0.9 - 0.08 * k : 0.5 + 0.08 * k) +
				0.03 * PolicyRandUniform(&rng);
	MakeWorld(&eager, K, spec, N / 3);
	MakeWorld(&lazy, K, spec, N / 3);
	for (int j = 0; j < N; j++)
	{
		DecisionTask *te = AddTask(&eager, 1 + j, j / 3, NULL);
		DecisionTask *tl = AddTask(&lazy, 1 + j, j / 3, NULL);

		row_task[M + j] = 1 + j;
		for (int k = 0; k < K; k++)
		{
			double		v = (j % 2 ? 0.85 - 0.07 * k : 0.45 + 0.07 * k) +
				0.05 * PolicyRandUniform(&rng);

			cells[(M + j) * K + k] = k < 2 + j % 2 ? v : NAN;
			if (k < 2 + j % 2)
			{
				DecisionObserve(&eager, te, k, v, 1.0);
				DecisionObserve(&lazy, tl, k, v, 1.0);
			}
		}
	}
	memset(&in, 0, sizeof(in));
	in.K = K;
	in.m = MT;
	in.cells = cells;
	in.row_task = row_task;
	in.row_kind = row_kind;
	in.need_mix = 1;
	RefitInit(&re, K, 0);
	RefitInit(&rl, K, 0);
	lazy.installing = 1;		/* as the live worker runs its refit steps */
	CHECK(RefitCycle(&re, &in, &eager, 1.0) >= 0 &&
		  RefitCycle(&rl, &in, &lazy, 1.0) >= 0, "first cycles");
	/* views never computed are not stale: they are made at once */
	CHECK(lazy.n_stale == 0, "nothing stale before the first views (%d)", lazy.n_stale);
	CHECK(DecisionNext(&eager, &c) == 0 && DecisionNext(&lazy, &c) == 0 &&
		  c.chosen.task >= 0 && ViewsDiffer(&eager, &lazy) == 0,
		  "first decisions: the same views");

	/* a second cycle on a changed history installs new models */
	memcpy(cells2, cells, sizeof(cells));
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			cells2[i * K + k] = 1.0 - cells[i * K + k];
	in.cells = cells2;
	memcpy(before, lazy.views, sizeof(before));
	CHECK(RefitCycle(&re, &in, &eager, 2.0) >= 0 &&
		  RefitCycle(&rl, &in, &lazy, 2.0) >= 0, "second cycles");
	lazy.installing = 0;
	CHECK(lazy.n_stale == N && eager.n_stale == 0,
		  "every view stale in the lazy world only (%d, %d)", lazy.n_stale,
		  eager.n_stale);
	n0 = eager.n_refreshed;
	CHECK(DecisionNext(&eager, &c) == 0 && eager.n_refreshed - n0 == N,
		  "eager decision: %d refreshes", (int) (eager.n_refreshed - n0));
	CHECK(ViewsDiffer(&eager, &lazy) > N / 2,
		  "the new models change most views (%d of %d)",
		  ViewsDiffer(&eager, &lazy), N);
	stale = lazy.n_stale;
	n0 = lazy.n_refreshed;
	CHECK(DecisionNext(&lazy, &c) == 0 && c.chosen.task >= 0, "lazy decision");
	CHECK(stale - lazy.n_stale >= 1 && stale - lazy.n_stale <= DECISION_STALE_PICKS &&
		  lazy.n_refreshed - n0 == stale - lazy.n_stale,
		  "a decision refreshes 1..%d views, not %d (%d)", DECISION_STALE_PICKS,
		  stale, (int) (lazy.n_refreshed - n0));
	for (int i = 0, bad = 0; i < N; i++)
	{
		const PolicyTenantView *v = &lazy.views[i];

		if (lazy.tasks[i]->stale ? !ViewSame(v, &before[i]) :
			!ViewSame(v, &eager.views[i]))
			bad++;
		if (i == N - 1)
			CHECK(bad == 0, "stale views are the old ones, refreshed ones the new (%d bad)", bad);
	}
	CHECK(!lazy.tasks[c.chosen.task]->stale &&
		  ViewSame(&lazy.views[c.chosen.task], &eager.views[c.chosen.task]),
		  "the chosen task's view is the new models'");

	/* a stale task that changes is refreshed by the next decision */
	for (int i = 0; i < N; i++)
		if (lazy.tasks[i]->stale)
		{
			stale = lazy.n_stale;
			DecisionObserve(&eager, eager.tasks[i], 5, 0.7, 1.0);
			DecisionObserve(&lazy, lazy.tasks[i], 5, 0.7, 1.0);
			CHECK(DecisionNext(&eager, &c) == 0 && DecisionNext(&lazy, &c) == 0 &&
				  !lazy.tasks[i]->stale && lazy.n_stale < stale &&
				  ViewSame(&lazy.views[i], &eager.views[i]),
				  "a changed stale task is refreshed under the new models");
			break;
		}
	/* a stale task leaves the world */
	for (int i = 0; i < lazy.n_tasks; i++)
		if (lazy.tasks[i]->stale)
		{
			stale = lazy.n_stale;
			DecisionRemoveTask(&eager, eager.tasks[i]);
			DecisionRemoveTask(&lazy, lazy.tasks[i]);
			CHECK(lazy.n_stale == stale - 1, "a removed task is no longer stale");
			break;
		}
	/* the rest in batches, off the decision path */
	stale = lazy.n_stale;
	while ((left = DecisionRefreshStale(&lazy, BATCH)) > 0 && calls < 100)
		calls++;
	calls++;
	CHECK(left == 0 && calls == (stale + BATCH - 1) / BATCH,
		  "%d stale views in %d batches of %d (left %d)", stale, calls, BATCH, left);
	CHECK(DecisionNext(&eager, &c) == 0 && DecisionNext(&lazy, &c) == 0 &&
		  ViewsDiffer(&eager, &lazy) == 0, "then every view is the eager world's (%d differ)",
		  ViewsDiffer(&eager, &lazy));
	CHECK(DecisionRefreshStale(&lazy, BATCH) == 0, "nothing left to refresh");
	DecisionWorldFree(&eager);
	DecisionWorldFree(&lazy);
	RefitFree(&re);
	RefitFree(&rl);
}

/* Tasks by id survive many additions and removals (the id map). */
static void
TestDecisionMap(void)
{
	enum
	{
	K = 2, N = 600};
	double		mu[K] = {0.5, 0.5};
	GpPrior		prior;
	DecisionWorld w;
	unsigned char present[N];
	uint64_t	rng = 17;
	int			bad = 0;

	DiagPrior(&prior, K, mu);
	MakeWorld(&w, K, "rr", 3);
	DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
	memset(present, 0, sizeof(present));
	for (int step = 0; step < 4000; step++)
	{
		int			id = (int) (PolicyRandUniform(&rng) * N);
		DecisionTask *t = DecisionFindTask(&w, id * 7919 + 3);

		bad += (t != NULL) != present[id];
		if (t)
			DecisionRemoveTask(&w, t);
		else
			CHECK(AddTask(&w, id * 7919 + 3, id % 3, NULL) != NULL, "add %d", id);
		present[id] = !present[id];
	}
	for (int id = 0; id < N; id++)
	{
		DecisionTask *t = DecisionFindTask(&w, id * 7919 + 3);

		bad += (t != NULL) != present[id] || (t && w.tasks[t->index] != t);
	}
	CHECK(bad == 0, "id map: %d wrong lookups", bad);
	CHECK(AddTask(&w, 3, 0, NULL) == NULL || present[0] == 0, "a repeated id is refused");
	DecisionWorldFree(&w);
	GpPriorFree(&prior);
}

/* End one run in flight: a result (80%), an interruption or a failure. */
static void
EndRandomRun(DecisionWorld *w, uint64_t *rng, int step)
{
	for (int i = 0; i < w->n_tasks; i++)
	{
		DecisionTask *t = w->tasks[(i + step) % w->n_tasks];

		for (int k = 0; k < w->K; k++)
			if (t->arm[k] == DECISION_ARM_RUNNING)
			{
				double		u = PolicyRandUniform(rng);

				if (u < 0.8)
					DecisionObserve(w, t, k, PolicyRandUniform(rng), 1 + u);
				else
					DecisionEnd(w, t, k, u < 0.9);
				return;
			}
	}
}

/* Did the last DecisionNext take PolicyIndexPick's O(n) path? */
static int
PickFallsBack(const DecisionWorld *w)
{
	const PolicyIndex *ix = &w->index;
	const PolicyParams *p = &w->params;

	if (p->kind == POLICY_RR || p->kind == POLICY_POPULAR || p->kind == POLICY_FIFO)
		return 0;
	return (p->warm_start && ix->n_unserved > 0 && ix->n_unserved < ix->n_elig) ||
		(p->spread && ix->n_busy > 0 && ix->n_busy == ix->n_elig) ||
		(p->kind == POLICY_HYBRID && ix->n_unserved > 1);
}

/*
 * Random worlds: DecisionNext (incremental, PolicyIndex) picks exactly
 * what a fresh scan of freshly computed views picks, for every policy, as
 * runs start, succeed, fail and tasks come and go; runner-ups are other
 * eligible tasks and other available arms, best first.
 */
static void
TestDecisionRandom(void)
{
	enum
	{
	K = 8, N = 12};
	const char *specs[] = {"hybrid:cost", "max_ei:cost", "rr", "tenant_bo", "popular",
	"max_gap", "hybrid:cost:s=2:w=30", "default"};
	double		mu0[K];
	GpPrior		prior;
	uint64_t	rng = 11;

	for (int k = 0; k < K; k++)
		mu0[k] = 0.4 + 0.05 * k;
	DiagPrior(&prior, K, mu0);
	for (size_t q = 0; q < sizeof(specs) / sizeof(specs[0]); q++)
	{
		DecisionWorld w;
		int			mismatches = 0,
					bad_runners = 0,
					fast = 0;

		MakeWorld(&w, K, specs[q], 4);
		w.slots = 3;
		w.tenant_cap = q % 2 ? 0 : -1;	/* without a cap, busy tasks compete */
		w.explain = 1;
		DecisionSetPrior(&w, DECISION_CLASSIFICATION, &prior);
		for (int i = 0; i < N; i++)
			AddTask(&w, 100 + i, i % 4, NULL);
		for (int step = 0; step < 400 && w.n_tasks > 0; step++)
		{
			DecisionChoice c;
			PolicyTenantView *v;
			uint64_t	r2;
			int			expect,
						in_flight = 0;

			for (int i = 0; i < w.n_tasks; i++)
				in_flight += w.tasks[i]->n_running;
			if (in_flight >= w.slots)
			{
				EndRandomRun(&w, &rng, step);
				continue;
			}
			CHECK(DecisionNext(&w, &c) == 0, "next");
			fast += !PickFallsBack(&w);
			/* the same pick from scratch */
			v = calloc(w.n_tasks, sizeof(PolicyTenantView));
			for (int i = 0; i < w.n_tasks; i++)
			{
				DecisionTask *t = w.tasks[i];

				v[i] = w.views[i];
				PolicyBestArm(&w.params, K, t->gp.mu, t->gp.var, t->cost, t->avail,
							  prior.mu0, &v[i]);
				if (!DecisionEligible(&w, t))
					v[i].arm = -1;
			}
			r2 = 0;
			expect = PolicyPickTenant(&w.params, w.n_tasks, v, w.decision_no, &r2, NULL);
			mismatches += expect != c.chosen.task ||
				(expect >= 0 && v[expect].arm != c.chosen.arm);
			for (int i = 0; i < c.n_runner_tasks; i++)
				bad_runners += c.runner_tasks[i].task == c.chosen.task ||
					v[c.runner_tasks[i].task].arm < 0;
			for (int i = 0; i < c.n_runner_arms; i++)
				bad_runners += c.runner_arms[i].arm == c.chosen.arm ||
					!w.tasks[c.chosen.task]->avail[c.runner_arms[i].arm] ||
					(i > 0 && c.runner_arms[i].acq > c.runner_arms[i - 1].acq);
			free(v);
			if (c.chosen.task >= 0)
				DecisionStart(&w, w.tasks[c.chosen.task], c.chosen.arm);
			else
				EndRandomRun(&w, &rng, step);
			if (step % 97 == 50)
				DecisionRemoveTask(&w, w.tasks[step % w.n_tasks]);
		}
		CHECK(fast > 50, "%s: the index's fast path was taken %d times", specs[q], fast);
		CHECK(mismatches == 0, "%s: world vs scan, %d mismatches", specs[q], mismatches);
		CHECK(bad_runners == 0, "%s: %d bad runner-ups", specs[q], bad_runners);
		DecisionWorldFree(&w);
	}
	GpPriorFree(&prior);
}

/* The cost model recovers a log-linear law and learns online. */
static void
TestCostModel(void)
{
	const int	m = 30,
				K = 4;
	double		rt[30 * 4],
				sz[30 * 3],
				lb[4],
				c[4];
	PolicyCostModel cm;
	uint64_t	rng = 3;
	int			d,
				k,
				rc;

	for (d = 0; d < m; d++)
	{
		sz[3 * d] = 100 + 5000 * PolicyRandUniform(&rng);
		sz[3 * d + 1] = 2 + 50 * PolicyRandUniform(&rng);
		sz[3 * d + 2] = 1;
		for (k = 0; k < K; k++)
			rt[d * K + k] = exp(-3.0 + 0.1 * k) * pow(sz[3 * d], 1.0 + 0.2 * k) *
				pow(sz[3 * d + 1], 0.5);
	}
	rc = PolicyCostModelFit(&cm, POLICY_COST_SIZE_LOGLINEAR, rt, sz, m, K);
	CHECK(rc == 0, "loglinear fit %d", rc);
	for (k = 0; k < K; k++)
	{
		CHECK_NEAR(cm.coef[3 * k + 1], 1.0 + 0.2 * k, 1e-4, "rows exponent");
		CHECK_NEAR(cm.coef[3 * k + 2], 0.5, 1e-4, "features exponent");
	}
	PolicyCostBase(&cm, 1000, 10, 1, lb);
	PolicyCostPredict(&cm, lb, NULL, c);
	CHECK_NEAR(c[2], exp(-2.8) * pow(1000, 1.4) * pow(10, 0.5),
			   1e-3 * c[2], "loglinear prediction");
	PolicyCostModelFree(&cm);

	rc = PolicyCostModelFit(&cm, POLICY_COST_SIZE_LINEAR, rt, sz, m, K);
	CHECK(rc == 0 && cm.coef[1] == 1.0 && cm.coef[2] == 1.0, "linear model slopes");
	PolicyCostModelFree(&cm);

	/* size_gp: a slow task is learned from its own finished runs */
	for (d = 0; d < m; d++)
		for (k = 0; k < K; k++)
			rt[d * K + k] *= exp(0.5 * (PolicyRandUniform(&rng) - 0.5) +
								 ((d % 3) == 0 ? 1.0 : 0.0));
	rc = PolicyCostModelFit(&cm, POLICY_COST_SIZE_GP, rt, sz, m, K);
	CHECK(rc == 0, "size_gp fit %d", rc);
	{
		GpState		r;
		double		before[4];

		PolicyCostBase(&cm, 1000, 10, 1, lb);
		GpStateInit(&r, &cm.resid, 4);
		PolicyCostPredict(&cm, lb, &r, before);
		/* this task ran arm 0 e^1.5 times slower than predicted */
		GpStateAdd(&r, 0, log(before[0]) + 1.5 - lb[0]);
		PolicyCostPredict(&cm, lb, &r, c);
		CHECK(c[1] > before[1] * 1.5, "online: correlated arm predicted slower (%g vs %g)",
			  c[1], before[1]);
		GpStateFree(&r);
	}
	PolicyCostModelFree(&cm);

	rt[5] = -1.0;
	CHECK(PolicyCostModelFit(&cm, POLICY_COST_SIZE_GP, rt, sz, m, K) == POLICY_BAD_INPUT,
		  "negative runtime rejected");
	CHECK(PolicyCostKindFromName("size_gp") == POLICY_COST_SIZE_GP, "cost names");
}

/* ----------------------------------------------------------- replay */

/* CSV reader: quotes, CRLF, blank lines, NaN, errors with positions. */
/*
 * The shared reader (src/csv.c) on what COPY ... (FORMAT csv) writes: a
 * quoted field with a comma, a quote and a line break is one field.
 */
static void
TestCsvReader(void)
{
	const char *copy = "\xEF\xBB\xBF" "dataset,\"knn-5\"\n"
		"\"a,\"\"b\"\"\nc\",0.5\n"
		"   \n"
		"d2,1e-308\n"
		"d3,\" 0.25 \"\n";
	const char *dup = "id,a\nx,1\ny,2\n x ,3\n";
	const char *open_quote = "id,a\n\"x,1\n";
	ReplayMatrix m;
	CsvReader	r;
	char		err[256];
	double		v;
	int			rc;

	rc = ReplayParseCsv(copy, strlen(copy), &m, err, sizeof(err));
	CHECK(rc == 0, "COPY-quoted rows: %s", err);
	if (rc == 0)
	{
		CHECK(m.rows == 3 && m.cols == 1, "shape %d x %d", m.rows, m.cols);
		CHECK(strcmp(m.col_names[0], "knn-5") == 0, "BOM skipped, quoted header");
		CHECK(strcmp(m.row_ids[0], "a,\"b\"\nc") == 0, "quoted id: %s", m.row_ids[0]);
		CHECK(m.data[1] == 1e-308, "subnormal cell read: %g", m.data[1]);
		CHECK(m.data[2] == 0.25, "quoted number with blanks");
		CHECK(m.row_lines[1] == 5, "blank line skipped, line counted: %ld", m.row_lines[1]);
		ReplayMatrixFree(&m);
	}
	rc = ReplayParseCsv(dup, strlen(dup), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "line 4") && strstr(err, "line 2"),
		  "duplicate row id rejected: %s", err);
	rc = ReplayParseCsv(open_quote, strlen(open_quote), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "unterminated"), "open quote: %s", err);

	CHECK(CsvParseNumber("1e-320", &v) == CSV_NUMBER && v > 0 && v < 1e-300,
		  "deep subnormal");
	CHECK(CsvParseNumber("1e-400", &v) == CSV_NUMBER && v == 0, "underflow to 0");
	CHECK(CsvParseNumber("1e999", &v) == CSV_NUMBER && isinf(v), "overflow is Inf");
	CHECK(CsvParseNumber(" NA ", &v) == CSV_MISSING && isnan(v), "NA missing");
	CHECK(CsvParseNumber("?", &v) == CSV_MISSING, "? missing");
	CHECK(CsvParseNumber("12x", &v) == CSV_NOT_NUMBER, "12x");
	CHECK(CsvParseNumber("-", &v) == CSV_NOT_NUMBER, "lone minus");
	CHECK(CsvParseNumber("-42", &v) == CSV_NUMBER && v == -42, "integer fast path");
	CHECK(CsvParseNumber("0x10", &v) == CSV_NUMBER, "strtod accepts hex");

	CsvInit(&r, "a,b\r\n", 5);
	CHECK(CsvNextRecord(&r) == 1 && CsvNextField(&r) == CSV_MORE &&
		  strcmp(r.buf, "a") == 0 && CsvNextField(&r) == CSV_LAST &&
		  strcmp(r.buf, "b") == 0 && CsvNextRecord(&r) == 0, "CRLF record");
	CsvFree(&r);
}

static void
TestCsv(void)
{
	const char *good = "\"id\",\"{'a': 1, 'b': 2}\",\"x\"\"y\"\r\n"
		"00011,0.5,1e-3\r\n\r\n"
		"7,,nan\n"
		"8,0.25,0.75";
	const char *bad_num = "id,a,b\n1,0.5,zz\n";
	const char *bad_fields = "id,a,b\n1,0.5\n";
	const char *sizes = "id,rows,features\n8,80,8\n11,110,11\n7,70,7\n";
	ReplayMatrix m,
				s;
	char		err[256];
	double		joined[3 * 2];
	int			rc;

	rc = ReplayParseCsv(good, strlen(good), &m, err, sizeof(err));
	CHECK(rc == 0, "good csv: %s", err);
	CHECK(m.rows == 3 && m.cols == 2, "shape %d x %d", m.rows, m.cols);
	CHECK(strcmp(m.col_names[0], "{'a': 1, 'b': 2}") == 0, "quoted header with commas: %s",
		  m.col_names[0]);
	CHECK(strcmp(m.col_names[1], "x\"y") == 0, "escaped quote");
	CHECK(strcmp(m.row_ids[0], "00011") == 0 && m.data[1] == 1e-3, "first row");
	CHECK(isnan(m.data[2]) && isnan(m.data[3]), "empty and nan cells");
	CHECK(m.data[4] == 0.25 && m.data[5] == 0.75, "last row without newline");

	rc = ReplayParseCsv(sizes, strlen(sizes), &s, err, sizeof(err));
	CHECK(rc == 0, "sizes csv");
	rc = ReplayJoinById(&m, &s, joined, err, sizeof(err));
	CHECK(rc == 0, "join: %s", err);
	CHECK(joined[0] == 110 && joined[2] == 70 && joined[5] == 8, "join on integer id");
	ReplayMatrixFree(&s);
	{
		const char *miss = "id,r,f\n8,1,1\n";

		ReplayParseCsv(miss, strlen(miss), &s, err, sizeof(err));
		rc = ReplayJoinById(&m, &s, joined, err, sizeof(err));
		CHECK(rc != 0 && strstr(err, "11") != NULL, "missing id reported: %s", err);
		ReplayMatrixFree(&s);
	}
	ReplayOneMinus(&m);
	CHECK(m.data[4] == 0.75, "one minus");
	ReplayMatrixFree(&m);

	rc = ReplayParseCsv(bad_num, strlen(bad_num), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "line 2") && strstr(err, "column 3"),
		  "bad number position: %s", err);
	rc = ReplayParseCsv(bad_fields, strlen(bad_fields), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "line 2 has 2 fields, the header has 3"),
		  "field count: %s", err);
	rc = ReplayReadCsv("/nonexistent/easeml.csv", &m, err, sizeof(err));
	CHECK(rc == REPLAY_IO && strstr(err, "could not open"), "missing file: %s", err);
	TestCsvReader();

	{
		ReplayPolicy p;

		CHECK(ReplayParsePolicy("hybrid:cost:w=30:s=4:greedy=max_gap", &p, err, sizeof(err)) == 0 &&
			  p.params.kind == POLICY_HYBRID && p.params.cost_aware == 1 &&
			  p.params.fairness_window == 30 && p.params.streak_limit == 4 &&
			  p.params.greedy == POLICY_MAX_GAP, "policy spec parsed");
		CHECK(ReplayParsePolicy("max_ei:bogus=1", &p, err, sizeof(err)) != 0 &&
			  strstr(err, "bogus"), "bad option: %s", err);
		CHECK(ReplayParsePolicy("nope", &p, err, sizeof(err)) != 0, "unknown policy");
	}
}

/*
 * A hand-computed replay: 2 tenants x 3 arms, unit costs, "popular" with
 * 1 device.  Prior rows make arm 2 the most popular, then arm 1, then 0.
 * Tenant A = (0.9, 0.5, 0.6), B = (0.2, 0.8, 0.3).  Round-robin over the
 * popular order:
 *	 A first: A2 B2 A1 B1 A0 -> losses .55 .40 .40 .15 0 (zero at t = 5)
 *	 B first: B2 A2 B1 A1 B0 A0 -> .70 .40 .15 .15 .15 0 (zero at t = 6)
 */
static void
TestReplayHand(void)
{
	double		q[6 * 3] = {
		0.9, 0.5, 0.6,
		0.2, 0.8, 0.3,
		0.1, 0.5, 0.95,
		0.1, 0.5, 0.95,
		0.1, 0.5, 0.95,
	0.1, 0.5, 0.95};
	const char *pols[] = {"popular", "rr", "max_ei", "hybrid:cost", "fifo", "random"};
	double		thr[] = {0.5, 0.0};
	ReplayConfig cfg;
	ReplayOutput out;
	char		err[256];
	int			rc,
				seed,
				found = 0;

	/* find a seed whose first draw makes rows 0 and 1 the tenants */
	for (seed = 1; seed < 5000 && !found; seed++)
	{
		ReplayConfigDefault(&cfg);
		cfg.quality = q;
		cfg.n_rows = 6;
		cfg.K = 3;
		cfg.n_tenants = 2;
		cfg.draws = 1;
		cfg.seed = seed;
		cfg.n_policies = 1;
		cfg.policies = pols;
		cfg.n_thresholds = 2;
		cfg.thresholds = thr;
		cfg.keep_events = 1;
		rc = ReplayRun(&cfg, &out, err, sizeof(err));
		CHECK(rc == 0, "replay: %s", err);
		if (rc != 0)
			return;
		/* (0.9 + 0.8) / 2: only the pair A, B starts at 0.85 */
		if (fabs(out.events[0][0].loss - 0.85) < 1e-12)
			found = seed;
		ReplayOutputFree(&out);
	}
	CHECK(found, "a seed with rows 0 and 1 as tenants");
	if (!found)
		return;

	cfg.seed = found;
	rc = ReplayRun(&cfg, &out, err, sizeof(err));
	CHECK(rc == 0, "replay");
	if (fabs(out.events[0][1].loss - 0.55) < 1e-12)
	{
		double		want[] = {0.85, 0.55, 0.40, 0.40, 0.15, 0.0};
		int			i;

		CHECK(out.n_events[0] == 6, "A first: 6 steps, got %d", out.n_events[0]);
		for (i = 0; i < 6 && i < out.n_events[0]; i++)
		{
			CHECK_NEAR(out.events[0][i].loss, want[i], 1e-12, "A first: loss");
			CHECK(out.events[0][i].time == i, "unit-cost clock");
		}
		CHECK(out.time_to[1] == 5.0, "A first: zero at t = 5, got %g", out.time_to[1]);
		CHECK_NEAR(out.auc[0], 0.85 + 0.55 + 0.40 + 0.40 + 0.15, 1e-12, "A first: area");
	}
	else
	{
		double		want[] = {0.85, 0.70, 0.40, 0.15, 0.15, 0.15, 0.0};
		int			i;

		CHECK(out.n_events[0] == 7, "B first: 7 steps, got %d", out.n_events[0]);
		for (i = 0; i < 7 && i < out.n_events[0]; i++)
			CHECK_NEAR(out.events[0][i].loss, want[i], 1e-12, "B first: loss");
		CHECK(out.time_to[1] == 6.0, "B first: zero at t = 6, got %g", out.time_to[1]);
		CHECK_NEAR(out.auc[0], 0.85 + 0.70 + 0.40 + 0.15 + 0.15 + 0.15, 1e-12, "B first: area");
	}
	CHECK(out.time_to[0] == 2.0, "loss <= 0.5 first at t = 2, got %g", out.time_to[0]);
	CHECK(out.final_loss[0] == 0.0, "final loss 0");
	CHECK(out.worst_regret[1] == 0.0, "worst regret 0 at loss 0");
	/* rows 2-5 are one quality vector: three copies left out */
	CHECK(out.rows_removed == 3 && out.rows_used == 3, "identical rows removed: %d, used %d",
		  out.rows_removed, out.rows_used);
	{
		double		zero_at = out.time_to[1];

		/* a fixed charge of 0.5 s per run: every run takes 1.5 s */
		ReplayOutputFree(&out);
		cfg.overhead = 0.5;
		rc = ReplayRun(&cfg, &out, err, sizeof(err));
		CHECK(rc == 0, "replay with overhead: %s", err);
		CHECK(rc == 0 && out.time_to[1] == 1.5 * zero_at && out.time_to[0] == 3.0,
			  "overhead 0.5: zero at %g (want %g), loss <= 0.5 at %g (want 3)",
			  out.time_to[1], 1.5 * zero_at, out.time_to[0]);
		cfg.overhead = 0.0;
	}
	ReplayOutputFree(&out);

	/* every policy finishes with loss 0 and never repeats an arm */
	cfg.n_policies = 6;
	cfg.devices = 2;
	rc = ReplayRun(&cfg, &out, err, sizeof(err));
	CHECK(rc == 0, "all policies, 2 devices: %s", err);
	if (rc == 0)
	{
		int			p;

		for (p = 0; p < 6; p++)
		{
			CHECK(out.final_loss[p] == 0.0, "%s final loss %g", out.names[p], out.final_loss[p]);
			CHECK(out.decisions[p] <= 6, "%s ran %d > 6 runs", out.names[p], out.decisions[p]);
		}
		ReplayOutputFree(&out);
	}
}

/* Cancel callback: stop at the third poll. */
static int
CancelAfterTwo(void *arg)
{
	int		   *polls = arg;

	return ++(*polls) > 2;
}

/* Multi-device runs, seeds and validation on a random matrix. */
static void
TestReplayRandom(void)
{
	const int	R = 60,
				K = 25;
	double	   *q = malloc(sizeof(double) * R * K);
	double	   *c = malloc(sizeof(double) * R * K);
	double	   *sz = malloc(sizeof(double) * R * 2);
	const char *pols[] = {"popular", "rr", "max_ei:cost", "hybrid:cost", "random:cost"};
	double		thr[] = {0.05, 0.01};
	ReplayConfig cfg;
	ReplayOutput a,
				b,
				m4;
	char		err[256];
	uint64_t	rng = 77;
	int			i,
				k,
				rc;

	for (i = 0; i < R; i++)
	{
		double		hard = 0.3 * PolicyRandUniform(&rng);

		sz[2 * i] = 100 + 1000 * PolicyRandUniform(&rng);
		sz[2 * i + 1] = 5 + 20 * PolicyRandUniform(&rng);
		for (k = 0; k < K; k++)
		{
			q[i * K + k] = 0.6 - hard + 0.01 * k + 0.1 * PolicyRandUniform(&rng);
			c[i * K + k] = 0.001 * sz[2 * i] * (1 + (k % 5)) * (0.5 + PolicyRandUniform(&rng));
		}
	}
	ReplayConfigDefault(&cfg);
	cfg.quality = q;
	cfg.cost = c;
	cfg.sizes = sz;
	cfg.n_rows = R;
	cfg.K = K;
	cfg.n_tenants = 8;
	cfg.draws = 4;
	cfg.seed = 9;
	cfg.n_policies = 5;
	cfg.policies = pols;
	cfg.n_thresholds = 2;
	cfg.thresholds = thr;

	/*
	 * "default" (= "auto") runs the candidate it chose on each draw: its
	 * times equal that candidate's times on the same draw (hybrid:cost,
	 * tenant_bo and popular are deterministic), and the choice is one of
	 * the candidates.
	 */
	{
		const char *apols[] = {"hybrid:cost", "tenant_bo", "popular", "default"};
		int			n_diff = 0;

		cfg.n_policies = 4;
		cfg.policies = apols;
		rc = ReplayRun(&cfg, &a, err, sizeof(err));
		CHECK(rc == 0, "auto replay: %s", err);
		for (int d = 0; rc == 0 && d < cfg.draws; d++)
		{
			int			ch = a.auto_choice[3 * cfg.draws + d];

			CHECK(ch >= 0 && ch < 3, "auto choice %d", ch);
			CHECK(a.auto_choice[d] == -1, "no choice recorded for a plain policy");
			if (ch < 0 || ch >= 3)
				continue;
			for (k = 0; k < 2; k++)
				n_diff += a.time_to[(3 * cfg.draws + d) * 2 + k] !=
					a.time_to[(ch * cfg.draws + d) * 2 + k];
		}
		CHECK(n_diff == 0, "auto ran its chosen candidate (%d times differ)", n_diff);
		/* the chooser on its own: deterministic, and default without history */
		{
			int			hist[30],
						c1 = -1,
						c2 = -2,
						c3 = -3;
			char		nm[REPLAY_NAME_LEN];

			for (i = 0; i < 30; i++)
				hist[i] = 2 * i;
			CHECK(ReplayAutoChoose(&cfg, hist, 30, 8, 5, &c1, NULL, err, sizeof(err)) == 0 &&
				  ReplayAutoChoose(&cfg, hist, 30, 8, 5, &c2, NULL, err, sizeof(err)) == 0 &&
				  c1 == c2 && c1 >= 0 && c1 < 3, "auto chooser: %d then %d", c1, c2);
			CHECK(ReplayAutoChoose(&cfg, hist, 1, 8, 5, &c3, NULL, err, sizeof(err)) == 0 &&
				  c3 == 0, "one history row: hybrid:cost (%d)", c3);
			/* an experiment's inner draw count: that many steps, bounded */
			{
				ReplayAutoJob job;
				int			nstep = 0,
							arc;

				cfg.auto_draws = 2;
				arc = ReplayAutoBegin(&cfg, hist, 30, 8, 5, &job, err, sizeof(err));
				while (arc == 0)
				{
					arc = ReplayAutoStep(&job, err, sizeof(err));
					nstep++;
				}
				ReplayAutoFree(&job);
				CHECK(arc == 1 && nstep == 2, "auto_draws 2: %d steps (%d)", nstep, arc);
				cfg.auto_draws = REPLAY_AUTO_DRAWS_MAX + 1;
				CHECK(ReplayAutoChoose(&cfg, hist, 30, 8, 5, &c3, NULL, err, sizeof(err)) ==
					  REPLAY_BAD_INPUT, "auto_draws out of range refused");
				cfg.auto_draws = 0;
			}
			CHECK(ReplayAutoCandidate(0, nm, sizeof(nm)) && strcmp(nm, "hybrid:cost") == 0 &&
				  ReplayAutoCandidate(3, nm, sizeof(nm)) == NULL, "candidate names");
		}
		if (rc == 0)
			ReplayOutputFree(&a);
		cfg.n_policies = 5;
		cfg.policies = pols;
	}

	rc = ReplayRun(&cfg, &a, err, sizeof(err));
	CHECK(rc == 0, "replay a: %s", err);
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == 0, "replay b: %s", err);
	CHECK(memcmp(a.time_to, b.time_to, sizeof(double) * 5 * 4 * 2) == 0 &&
		  memcmp(a.auc, b.auc, sizeof(double) * 5 * 4) == 0, "same seed, same results");
	for (i = 0; i < 5 * 4; i++)
		CHECK(a.final_loss[i] == 0.0 && a.decisions[i] <= 8 * K,
			  "run %d: final loss %g, %d runs", i, a.final_loss[i], a.decisions[i]);
	{
		double		med,
					mx;

		CHECK(ReplaySpeedup(&a, 0, 0, 1, &med, &mx) == 0 && med == 1.0 && mx == 1.0,
			  "self speedup 1");
		CHECK(ReplaySpeedup(&a, 0, 9, 1, &med, &mx) != 0, "bad policy index");
	}
	ReplayOutputFree(&b);

	cfg.seed = 10;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == 0 && memcmp(a.time_to, b.time_to, sizeof(double) * 5 * 4 * 2) != 0,
		  "another seed, other draws");
	ReplayOutputFree(&b);

	/* 4 devices: faster, loss still reaches 0, no arm run twice */
	cfg.seed = 9;
	cfg.devices = 4;
	rc = ReplayRun(&cfg, &m4, err, sizeof(err));
	CHECK(rc == 0, "4 devices: %s", err);
	if (rc == 0)
	{
		int			p;

		for (p = 0; p < 5; p++)
		{
			CHECK(m4.median_time[p * 2 + 1] < a.median_time[p * 2 + 1],
				  "%s: 4 devices slower (%g vs %g)", m4.names[p],
				  m4.median_time[p * 2 + 1], a.median_time[p * 2 + 1]);
			CHECK(m4.decisions[p * 4] <= 8 * K, "bounded runs");
		}
		ReplayOutputFree(&m4);
	}

	/* oracle and size models run; a bad config is refused with a message */
	cfg.devices = 1;
	cfg.oracle_cost = 1;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == 0, "oracle: %s", err);
	ReplayOutputFree(&b);
	cfg.oracle_cost = 0;
	cfg.sizes = NULL;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "sizes"), "sizes required: %s", err);
	cfg.sizes = sz;
	q[3] = 1.5;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "[0,1]"), "quality range: %s", err);
	q[3] = 0.5;
	cfg.n_tenants = R + 1;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT, "too many tenants");

	/* a cancel callback stops the run cleanly */
	cfg.n_tenants = 8;
	cfg.cancel = CancelAfterTwo;
	cfg.cancel_arg = &i;
	i = 0;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_CANCELLED && i == 3 && strstr(err, "cancel"), "cancel: rc %d after %d polls",
		  rc, i);

	ReplayOutputFree(&a);
	free(q);
	free(c);
	free(sz);
}

/*
 * Placement (src/placement.c): the first preferred kind with a free
 * device wins, the freest device of that kind is chosen, banned devices
 * are skipped, and nothing is placed when no allowed device is free.
 */
static void
TestPlacement(void)
{
	PlaceDevice devs[4] = {
		{PLACE_KIND_CUDA, 1}, {PLACE_KIND_CUDA, 2}, {PLACE_KIND_CPU, 3}, {PLACE_KIND_CUDA, 0}
	};
	PlaceKind	gpu_first[2] = {PLACE_KIND_CUDA, PLACE_KIND_CPU};
	PlaceKind	cpu_only[1] = {PLACE_KIND_CPU};
	PlaceKind	gpu_only[1] = {PLACE_KIND_CUDA};
	unsigned char banned[4] = {0, 1, 0, 0};

	CHECK(PlacementChoose(devs, 4, gpu_first, 2, NULL) == 1,
		  "a GPU-capable candidate takes the GPU with the most free slots");
	CHECK(PlacementChoose(devs, 4, cpu_only, 1, NULL) == 2, "a CPU candidate takes the CPU");
	CHECK(PlacementChoose(devs, 4, gpu_first, 2, banned) == 0,
		  "a device the candidate ran out of memory on is skipped");
	devs[0].free = 0;
	devs[1].free = 0;
	CHECK(PlacementChoose(devs, 4, gpu_first, 2, NULL) == 2,
		  "with no GPU free, a GPU-capable candidate runs on the CPU");
	CHECK(PlacementChoose(devs, 4, gpu_only, 1, NULL) == -1,
		  "a GPU-only candidate waits when no GPU is free");
	CHECK(PlacementChoose(devs, 3, gpu_first, 2, NULL) == 2, "no GPU present: the CPU");
	devs[2].free = 0;
	CHECK(PlacementChoose(devs, 4, gpu_first, 2, NULL) == -1, "nothing free: no device");
	CHECK(PlacementChoose(devs, 0, cpu_only, 1, NULL) == -1, "no devices: no device");
	CHECK(PlaceKindFromName("cuda") == PLACE_KIND_CUDA && PlaceKindFromName("cpu") == PLACE_KIND_CPU &&
		  PlaceKindFromName("tpu") == -1 && PlaceKindFromName(NULL) == -1, "kind names");
	CHECK(strcmp(PlaceKindName(PLACE_KIND_CUDA), "cuda") == 0 &&
		  strcmp(PlaceKindName(PLACE_KIND_CPU), "cpu") == 0, "kind names back");
}

/* Job names, time limits, the batch script and squeue/scontrol output. */
static void
TestSlurmParse(void)
{
	char		buf[1024];
	SlurmJob	jobs[8];
	SlurmJob	j;
	int			n;

	SlurmJobName(buf, sizeof(buf), "easeml-7", 42);
	CHECK(strcmp(buf, "easeml-7-run42") == 0, "job name: %s", buf);
	CHECK(SlurmJobNameRun("easeml-7-run42", "easeml-7") == 42, "run id from name");
	CHECK(SlurmJobNameRun("easeml-8-run42", "easeml-7") == 0, "another prefix is not ours");
	CHECK(SlurmJobNameRun("easeml-7-run42x", "easeml-7") == 0 &&
		  SlurmJobNameRun("easeml-7-run", "easeml-7") == 0 &&
		  SlurmJobNameRun("easeml-7-run-3", "easeml-7") == 0 &&
		  SlurmJobNameRun("easeml-7-run0", "easeml-7") == 0, "malformed names are not ours");

	CHECK(SlurmTimeLimit(buf, sizeof(buf), 0) == 0 && buf[0] == '\0', "no budget: no --time");
	SlurmTimeLimit(buf, sizeof(buf), 5);
	CHECK(strcmp(buf, "1") == 0, "5 s rounds up to a minute: %s", buf);
	SlurmTimeLimit(buf, sizeof(buf), 120);
	CHECK(strcmp(buf, "2") == 0, "120 s is 2 minutes: %s", buf);
	SlurmTimeLimit(buf, sizeof(buf), 121);
	CHECK(strcmp(buf, "3") == 0, "121 s is 3 minutes: %s", buf);

	CHECK(SlurmSafeWord("/usr/lib/postgresql/15/bin/easeml-trainer"), "a path is safe");
	CHECK(!SlurmSafeWord("/tmp/a b") && !SlurmSafeWord("/tmp/a'b") &&
		  !SlurmSafeWord("/tmp/$(id)") && !SlurmSafeWord("/tmp/a;b") &&
		  !SlurmSafeWord("-x") && !SlurmSafeWord("") && !SlurmSafeWord(NULL) &&
		  !SlurmSafeWord("a\nb"), "quotes, spaces, $, ;, newlines and options are not");
	CHECK(SlurmBatchScript(buf, sizeof(buf), "/opt/easeml-trainer", 9) > 0 &&
		  strstr(buf, "/opt/easeml-trainer --run 9 --run-dir \"$dir\"\n") != NULL &&
		  strncmp(buf, "#!/bin/sh\n", 10) == 0, "batch script runs the trainer:\n%s", buf);
	CHECK(SlurmBatchScript(buf, sizeof(buf), "/opt/x'; rm -rf /", 9) < 0 &&
		  SlurmBatchScript(buf, sizeof(buf), "easeml-trainer", 9) < 0,
		  "no batch script for an unsafe or relative trainer path");

	CHECK(SlurmParseJobId("123\n") == 123 && SlurmParseJobId("77;cluster\n") == 77,
		  "sbatch --parsable job ids");
	CHECK(SlurmTransientError("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)") &&
		  SlurmTransientError("sbatch: error: Socket timed out on send/recv operation"),
		  "an unreachable controller is transient");
	CHECK(!SlurmTransientError("sbatch: error: Batch job submission failed: Invalid partition name specified") &&
		  !SlurmTransientError("sbatch: error: Invalid generic resource (gres) specification") &&
		  !SlurmTransientError(""), "a refusal is not");
	CHECK(SlurmParseJobId("sbatch: error: Batch job submission failed\n") == 0 &&
		  SlurmParseJobId("") == 0 && SlurmParseJobId("12x") == 0, "no job id in an error");

	n = SlurmParseSqueue("5|easeml-7-run3|RUNNING|None\n"
						 "6|easeml-7-run4|PENDING|Resources\n"
						 "squeue: warning: something\n"
						 "7|other|COMPLETED|None\n"
						 "8|easeml-7-run9|NODE_FAIL|NodeDown\n", "easeml-7", jobs, 8);
	CHECK(n == 4, "4 jobs, the warning skipped: %d", n);
	CHECK(jobs[0].job_id == 5 && jobs[0].run_id == 3 && strcmp(jobs[0].state, "RUNNING") == 0,
		  "first job");
	CHECK(jobs[1].run_id == 4 && strcmp(jobs[1].reason, "Resources") == 0, "pending reason");
	CHECK(jobs[2].run_id == 0, "a job that is not ours");
	CHECK(jobs[3].job_id == 8 && SlurmStateClass(jobs[3].state) == SLURM_JOB_LOST,
		  "node failure is lost");
	CHECK(SlurmParseSqueue("5|a|RUNNING|None\n6|b|RUNNING|None\n", "a", jobs, 1) == 1,
		  "at most max jobs");
	CHECK(SlurmParseSqueue("", "a", jobs, 8) == 0, "no jobs");

	CHECK(SlurmStateClass("PENDING") == SLURM_JOB_ALIVE &&
		  SlurmStateClass("COMPLETING") == SLURM_JOB_ALIVE &&
		  SlurmStateClass("COMPLETED") == SLURM_JOB_ENDED &&
		  SlurmStateClass("FAILED") == SLURM_JOB_ENDED &&
		  SlurmStateClass("OUT_OF_MEMORY") == SLURM_JOB_ENDED &&
		  SlurmStateClass("TIMEOUT") == SLURM_JOB_TIMEOUT &&
		  SlurmStateClass("CANCELLED+") == SLURM_JOB_CANCELLED &&
		  SlurmStateClass("CANCELLED by 0") == SLURM_JOB_CANCELLED &&
		  SlurmStateClass("PREEMPTED") == SLURM_JOB_LOST &&
		  SlurmStateClass("BOOT_FAIL") == SLURM_JOB_LOST &&
		  SlurmStateClass("") == SLURM_JOB_UNKNOWN &&
		  SlurmStateClass("WHATEVER") == SLURM_JOB_UNKNOWN, "state classes");

	CHECK(SlurmParseScontrol("JobId=11 JobName=easeml-7-run5 UserId=postgres(101) JobState=FAILED "
							 "Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 RunTime=00:00:03",
							 "easeml-7", &j), "scontrol line parses");
	CHECK(j.job_id == 11 && j.run_id == 5 && strcmp(j.state, "FAILED") == 0 &&
		  strcmp(j.reason, "NonZeroExitCode") == 0 && j.has_exit && j.exit_code == 3 &&
		  j.exit_signal == 0, "scontrol fields");
	CHECK(SlurmWaitStatus(&j) == (3 << 8), "exit code 3 as a wait status");
	CHECK(SlurmParseScontrol("JobId=12 JobName=x JobState=CANCELLED Reason=None "
							 "ArrayJobId=4 ExitCode=0:15", "easeml-7", &j) &&
		  j.run_id == 0 && SlurmWaitStatus(&j) == 15, "a signal as a wait status");
	CHECK(!SlurmParseScontrol("slurm_load_jobs error: Invalid job id specified", "easeml-7", &j),
		  "a forgotten job is not a job");
	CHECK(SlurmParseSacct("21|easeml-7-run8|NODE_FAIL|0:0\n", "easeml-7", &j) &&
		  j.job_id == 21 && j.run_id == 8 && SlurmStateClass(j.state) == SLURM_JOB_LOST &&
		  j.has_exit && SlurmWaitStatus(&j) == 0, "sacct line parses");
	CHECK(SlurmParseSacct("22|x|CANCELLED by 1000|0:15", "easeml-7", &j) &&
		  strcmp(j.state, "CANCELLED") == 0 && SlurmWaitStatus(&j) == 15, "sacct's cancel by a user");
	CHECK(!SlurmParseSacct("", "easeml-7", &j) &&
		  !SlurmParseSacct("sacct: error: Slurm accounting storage is disabled", "easeml-7", &j) &&
		  !SlurmParseSacct("1|a|", "easeml-7", &j), "no job in sacct's errors");
	CHECK(SlurmParseScontrol("JobId=13 JobName=easeml-7-run1 JobState=NODE_FAIL Reason=NodeDown",
							 "easeml-7", &j) && !j.has_exit && SlurmWaitStatus(&j) == -1,
		  "no exit code: unknown status");
}

/* Run every test; exit status 1 if any check failed. */
int
main(void)
{
	openblas_set_num_threads(1);
	TestPlacement();
	TestDecisionPlacement();
	TestCholesky();
	TestPosteriorClosedForm();
	TestIncremental();
	TestPriorFit();
	TestAcquisition();
	TestLookahead();
	TestBlock();
	TestBestArm();
	TestPickTenant();
	TestIndex();
	TestIndexTop();
	TestTopArmsEi();
	TestDecisionFifo();
	TestDecisionFairShare();
	TestDecisionFairSharesFull();
	TestDecisionPerClassCost();
	TestFamilyCostModel();
	TestCostFoldsAndPasses();
	TestDecisionFamilyCost();
	TestRefitCostCold();
	TestCostBinsAndPasses();
	TestCostTaskPasses();
	TestCostOverheadRuns();
	TestRefitTwice();
	TestAutoPolicy();
	TestDecisionPosterior();
	TestMixture();
	TestMixOffsetPrior();
	TestMixTempered();
	TestMixPlan();
	TestMixtureSliced();
	TestPolicyLiveSpec();
	TestLiveMixture();
	TestLazyInstall();
	TestDecisionMixture();
	TestMixLearn();
	TestDecisionRandom();
	TestDecisionSync();
	TestDecisionMap();
	TestCostModel();
	TestCsv();
	TestReplayHand();
	TestReplayRandom();
	TestSlurmParse();
	printf("easeml-unittest: %d checks, %d failed\n", n_checks, n_failed);
	return n_failed == 0 ? 0 : 1;
}
