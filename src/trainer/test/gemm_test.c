/*-------------------------------------------------------------------------
 *
 * gemm_test.c
 *	  Unit tests of TrSgemm() (tr_gemm.c) against cblas_sgemm: every
 *	  transpose combination, alpha and beta, and shapes that leave partial
 *	  micro-tiles and span several cache blocks.  Called from tr_test.c's
 *	  main.
 *
 * IDENTIFICATION
 *	  src/trainer/test/gemm_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"
#include "tr_test.h"


/* a number in [-1, 1) from a small LCG */
static float
Rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (float) ((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/*
 * Largest |ours - cblas| over C, relative to sum_p |alpha a_ip b_pj| +
 * |beta c_ij| (the size of the terms each entry sums).
 */
static double
GemmError(int ta, int tb, int m, int n, int k, float alpha, float beta, unsigned seed)
{
	int			lda = (ta ? m : k) + 3,
				ldb = (tb ? k : n) + 1,
				ldc = n + 2;
	float	   *A = malloc(sizeof(float) * (size_t) (ta ? k : m) * lda);
	float	   *B = malloc(sizeof(float) * (size_t) (tb ? n : k) * ldb);
	float	   *C1 = malloc(sizeof(float) * (size_t) m * ldc);
	float	   *C2 = malloc(sizeof(float) * (size_t) m * ldc);
	double		worst = 0.0;

	for (size_t i = 0; i < (size_t) (ta ? k : m) * lda; i++)
		A[i] = Rnd(&seed);
	for (size_t i = 0; i < (size_t) (tb ? n : k) * ldb; i++)
		B[i] = Rnd(&seed);
	for (size_t i = 0; i < (size_t) m * ldc; i++)
		C1[i] = C2[i] = Rnd(&seed);
	TrSgemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C1, ldc);
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
				m, n, k, alpha, A, lda, B, ldb, beta, C2, ldc);
	for (int i = 0; i < m; i++)
		for (int j = 0; j < ldc; j++)
		{
			double		scale = 1e-30,
						e;

			if (j >= n)
			{
				/* the padding between rows is left alone */
				if (C1[(size_t) i * ldc + j] != C2[(size_t) i * ldc + j])
					worst = INFINITY;
				continue;
			}
			for (int p = 0; p < k; p++)
				scale += fabs((double) alpha * (ta ? A[(size_t) p * lda + i] : A[(size_t) i * lda + p]) *
							  (tb ? B[(size_t) j * ldb + p] : B[(size_t) p * ldb + j]));
			scale += 2.0 * fabs(beta);
			e = fabs((double) C1[(size_t) i * ldc + j] - C2[(size_t) i * ldc + j]) / scale;
			if (!(e <= worst))
				worst = e;
		}
	free(A);
	free(B);
	free(C1);
	free(C2);
	return worst;
}

void
TestGemm(void)
{
	static const int shapes[][3] = {
		{1, 1, 1}, {5, 7, 3}, {6, 16, 256}, {7, 17, 257}, {200, 128, 784},
		{13, 1030, 40}, {75, 33, 600}, {128, 10, 200},
	};
	static const float ab[][2] = {{1.0f, 0.0f}, {-2.0f, 1.0f}, {0.5f, 0.25f}};

	for (int s = 0; s < (int) (sizeof(shapes) / sizeof(shapes[0])); s++)
		for (int t = 0; t < 4; t++)
		{
			double		worst = 0.0;

			for (int q = 0; q < 3; q++)
			{
				double		e = GemmError(t & 1, t >> 1, shapes[s][0], shapes[s][1],
										  shapes[s][2], ab[q][0], ab[q][1],
										  (unsigned) (s * 31 + t * 7 + q));

				if (!(e <= worst))
					worst = e;
			}
			CHECK(worst <= 1e-5,
				  "sgemm %dx%dx%d %s%s agrees with cblas_sgemm (relative error %.2g)",
				  shapes[s][0], shapes[s][1], shapes[s][2], t & 1 ? "A^T" : "A",
				  t >> 1 ? " B^T" : " B", worst);
		}
	/* nothing to do: C untouched */
	{
		float		c = 3.0f;

		TrSgemm(0, 0, 0, 1, 1, 1.0f, &c, 1, &c, 1, 0.0f, &c, 1);
		CHECK(c == 3.0f, "sgemm with m = 0 leaves C alone");
	}
}
