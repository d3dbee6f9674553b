/*-------------------------------------------------------------------------
 *
 * tr_gemm.c
 *	  Single-precision matrix product for the one-thread trainers.
 *
 * TrSgemm() is cblas_sgemm for row-major matrices.  With one BLAS thread
 * it multiplies here, in the blocked scheme of Goto and van de Geijn
 * ("Anatomy of high-performance matrix multiplication", ACM TOMS 34, 2008):
 * B is packed into panels of GEMM_NR columns (GEMM_KC rows deep, kept in
 * L2), A into panels of GEMM_MR rows with alpha applied, and a 6 x 16
 * micro-kernel keeps its twelve 8-float accumulators in registers while it
 * streams both panels from L1.  The code is GCC's generic vectors; on
 * x86-64 it is also compiled for AVX2+FMA and AVX-512 and the loader picks
 * the copy the CPU runs (as tr_softmax.c does).  The reason is the BLAS
 * library: a DYNAMIC_ARCH OpenBLAS that does not recognise its CPU model
 * falls back to its SSE3 ("Prescott") kernels, which is what Debian's
 * OpenBLAS 0.3.21 does on the development VM's Xeon; the MLP and knn spend
 * most of their time in these products.  With more than one BLAS thread the
 * call goes to cblas_sgemm, which parallelises.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_gemm.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer.h"

#define GEMM_MR 6
#define GEMM_NR 16
#define GEMM_KC 256
#define GEMM_MC 72				/* 72 x 256 floats of A: 72 KB, in L2 */
#define GEMM_NC 1024			/* 256 x 1024 floats of B: 1 MB, in L2 */

typedef float GemmVec __attribute__((vector_size(32)));
typedef float GemmVecU __attribute__((vector_size(32), aligned(4), may_alias));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GEMM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GEMM_CLONES
#endif

#define GemmLoad(p) (*(const GemmVecU *) (p))

/*
 * C[0..mr) x [0..nr) += Ap (kc x GEMM_MR) times Bp (kc x GEMM_NR); the
 * panels are zero-padded, so the full tile is computed and only its valid
 * part is added to C.
 */
GEMM_CLONES static void
GemmKernel(int kc, const float *Ap, const float *Bp, float *C, int ldc, int mr, int nr)
{
	GemmVec		c00 = {0},
				c01 = {0},
				c10 = {0},
				c11 = {0},
				c20 = {0},
				c21 = {0},
				c30 = {0},
				c31 = {0},
				c40 = {0},
				c41 = {0},
				c50 = {0},
				c51 = {0};

	for (int p = 0; p < kc; p++)
	{
		GemmVec		b0 = GemmLoad(Bp),
					b1 = GemmLoad(Bp + 8);
		float		a;

		a = Ap[0];
		c00 += a * b0;
		c01 += a * b1;
		a = Ap[1];
		c10 += a * b0;
		c11 += a * b1;
		a = Ap[2];
		c20 += a * b0;
		c21 += a * b1;
		a = Ap[3];
		c30 += a * b0;
		c31 += a * b1;
		a = Ap[4];
		c40 += a * b0;
		c41 += a * b1;
		a = Ap[5];
		c50 += a * b0;
		c51 += a * b1;
		Ap += GEMM_MR;
		Bp += GEMM_NR;
	}
	if (mr == GEMM_MR && nr == GEMM_NR)
	{
		GemmVecU   *r;

#define GEMM_ADD_ROW(i, v0, v1) \
		r = (GemmVecU *) (C + (size_t) (i) * ldc); \
		r[0] = GemmLoad(C + (size_t) (i) * ldc) + (v0); \
		r[1] = GemmLoad(C + (size_t) (i) * ldc + 8) + (v1)
		GEMM_ADD_ROW(0, c00, c01);
		GEMM_ADD_ROW(1, c10, c11);
		GEMM_ADD_ROW(2, c20, c21);
		GEMM_ADD_ROW(3, c30, c31);
		GEMM_ADD_ROW(4, c40, c41);
		GEMM_ADD_ROW(5, c50, c51);
#undef GEMM_ADD_ROW
	}
	else
	{
		float		t[GEMM_MR][GEMM_NR];

		memcpy(t[0], &c00, 32);
		memcpy(t[0] + 8, &c01, 32);
		memcpy(t[1], &c10, 32);
		memcpy(t[1] + 8, &c11, 32);
		memcpy(t[2], &c20, 32);
		memcpy(t[2] + 8, &c21, 32);
		memcpy(t[3], &c30, 32);
		memcpy(t[3] + 8, &c31, 32);
		memcpy(t[4], &c40, 32);
		memcpy(t[4] + 8, &c41, 32);
		memcpy(t[5], &c50, 32);
		memcpy(t[5] + 8, &c51, 32);
		for (int i = 0; i < mr; i++)
			for (int j = 0; j < nr; j++)
				C[(size_t) i * ldc + j] += t[i][j];
	}
}

/* op(B)[pc.., jc..] (kc x nc) into panels of GEMM_NR columns, zero-padded */
static void
GemmPackB(int transB, const float *B, int ldb, int pc, int jc, int kc, int nc, float *Bp)
{
	for (int j0 = 0; j0 < nc; j0 += GEMM_NR)
	{
		int			nr = nc - j0 < GEMM_NR ? nc - j0 : GEMM_NR;

		for (int p = 0; p < kc; p++)
		{
			float	   *dst = Bp + (size_t) p * GEMM_NR;

			if (!transB)
				memcpy(dst, B + (size_t) (pc + p) * ldb + jc + j0, sizeof(float) * nr);
			for (int j = nr; j < GEMM_NR; j++)
				dst[j] = 0.0f;
		}
		/* B^T: read each of B's rows along its length */
		if (transB)
			for (int j = 0; j < nr; j++)
			{
				const float *src = B + (size_t) (jc + j0 + j) * ldb + pc;

				for (int p = 0; p < kc; p++)
					Bp[(size_t) p * GEMM_NR + j] = src[p];
			}
		Bp += (size_t) kc * GEMM_NR;
	}
}

/* alpha op(A)[ic.., pc..] (mc x kc) into panels of GEMM_MR rows */
static void
GemmPackA(int transA, const float *A, int lda, int ic, int pc, int mc, int kc,
		  float alpha, float *Ap)
{
	for (int i0 = 0; i0 < mc; i0 += GEMM_MR)
	{
		int			mr = mc - i0 < GEMM_MR ? mc - i0 : GEMM_MR;

		for (int p = 0; p < kc; p++)
		{
			float	   *dst = Ap + (size_t) p * GEMM_MR;

			for (int i = 0; i < mr; i++)
				dst[i] = alpha * (transA ?
								  A[(size_t) (pc + p) * lda + ic + i0 + i] :
								  A[(size_t) (ic + i0 + i) * lda + pc + p]);
			for (int i = mr; i < GEMM_MR; i++)
				dst[i] = 0.0f;
		}
		Ap += (size_t) kc * GEMM_MR;
	}
}

/*
 * C (m x n) = alpha op(A) op(B) + beta C, row-major, op(A) m x k and
 * op(B) k x n, as cblas_sgemm(CblasRowMajor, ...).
 */
void
TrSgemm(int transA, int transB, int m, int n, int k, float alpha,
		const float *A, int lda, const float *B, int ldb, float beta,
		float *C, int ldc)
{
	float	   *Ap,
			   *Bp;

	if (m <= 0 || n <= 0)
		return;
	Ap = aligned_alloc(64, sizeof(float) * GEMM_MC * GEMM_KC);
	Bp = aligned_alloc(64, sizeof(float) * GEMM_KC *
					   (size_t) ((GEMM_NC + GEMM_NR - 1) / GEMM_NR * GEMM_NR));
	if (openblas_get_num_threads() > 1 || Ap == NULL || Bp == NULL)
	{
		free(Ap);
		free(Bp);
		cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
					transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda,
					B, ldb, beta, C, ldc);
		return;
	}
	if (beta != 1.0f)
		for (int i = 0; i < m; i++)
		{
			float	   *c = C + (size_t) i * ldc;

			if (beta == 0.0f)
				memset(c, 0, sizeof(float) * n);
			else
				for (int j = 0; j < n; j++)
					c[j] *= beta;
		}
	for (int jc = 0; jc < n; jc += GEMM_NC)
	{
		int			nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;

		for (int pc = 0; pc < k; pc += GEMM_KC)
		{
			int			kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;

			GemmPackB(transB, B, ldb, pc, jc, kc, nc, Bp);
			for (int ic = 0; ic < m; ic += GEMM_MC)
			{
				int			mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;

				GemmPackA(transA, A, lda, ic, pc, mc, kc, alpha, Ap);
				for (int j0 = 0; j0 < nc; j0 += GEMM_NR)
				{
					int			nr = nc - j0 < GEMM_NR ? nc - j0 : GEMM_NR;

					for (int i0 = 0; i0 < mc; i0 += GEMM_MR)
					{
						int			mr = mc - i0 < GEMM_MR ? mc - i0 : GEMM_MR;

						GemmKernel(kc, Ap + (size_t) i0 * kc, Bp + (size_t) j0 * kc,
								   C + (size_t) (ic + i0) * ldc + jc + j0, ldc, mr, nr);
					}
				}
			}
		}
	}
	free(Ap);
	free(Bp);
}
