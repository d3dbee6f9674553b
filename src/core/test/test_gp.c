/*-------------------------------------------------------------------------
 *
 * test_gp.c
 *	  Unit tests of the GP math (src/core/gp*.c): Cholesky with jitter and its
 *	  statuses, the posterior against closed-form small cases, the
 *	  incremental posterior against the full refit, prior fitting (means,
 *	  shrinkage, RBF, NaN).
 *
 * IDENTIFICATION
 *	  src/core/test/test_gp.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gp.h"
#include "core/policy.h"
#include "test.h"

/* Cholesky: ok, jitter for singular, not-PD for indefinite, bad input. */
void
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
void
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
void
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
void
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
