/*-------------------------------------------------------------------------
 *
 * device_test.c
 *	  easeml-device-test: the GPU kernels and the GPU families against the
 *	  CPU, on fresh random inputs.
 *
 *	 easeml-device-test			 the CPU emulation of a GPU (tr_gpu_host.c)
 *	 easeml-device-test --cuda	 the CUDA backend (easeml-cuda.so)
 *
 * Every operation of the GPU table is run on random inputs and compared
 * with a reference computed here in plain double loops, written without
 * the kernels' code; the largest difference relative to the largest
 * reference value must be at most 1e-4 (fp32).  The row-major products
 * (TrGemm, every transpose combination, with padded leading dimensions)
 * and column sums are included, so the mapping to cuBLAS's column-major
 * calls is checked too.  Then each GPU family (softmax, mlp for two and
 * more classes and for regression, cnn) trains next to its CPU fit with
 * the same seed: the validation scores must agree within 1 point.
 * Without --cuda a last check runs out of the emulated GPU's memory and
 * expects a device out-of-memory failure.  Output is TAP; the exit status
 * is the number of failed checks (capped at 100).
 *
 * IDENTIFICATION
 *	  src/trainer/devtest/device_test.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"
#include "core/trainer_protocol.h"
#include "trainer/gpu/tr_gpu.h"

#define TOL 1e-4

static int	test_no = 0;
static int	failures = 0;
static const TrGpuOps *G;
static uint64_t rng = 20261130;

static void
Check(int ok, const char *fmt,...) pg_attribute_printf(2, 3);

static void
Check(int ok, const char *fmt,...)
{
	va_list		ap;

	test_no++;
	if (!ok)
		failures++;
	printf("%s %d - ", ok ? "ok" : "not ok", test_no);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void *
Host(size_t bytes)
{
	void	   *p = calloc(1, bytes ? bytes : 1);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(100);
	}
	return p;
}

static float *
RandF(size_t n, double scale)
{
	float	   *x = Host(sizeof(float) * n);

	for (size_t i = 0; i < n; i++)
		x[i] = (float) (scale * TrRandNormal(&rng));
	return x;
}

static int *
RandI(size_t n, int below)
{
	int		   *x = Host(sizeof(int) * n);

	for (size_t i = 0; i < n; i++)
		x[i] = (int) TrRandBelow(&rng, (uint64_t) below);
	return x;
}

/* A device copy of host data (aborts on failure: nothing to test then). */
static void *
Dev(const void *host, size_t bytes)
{
	void	   *p;

	if (G->alloc(&p, bytes) != TR_GPU_OK ||
		(host != NULL && G->upload(p, host, bytes) != TR_GPU_OK) ||
		(host == NULL && G->zero(p, bytes) != TR_GPU_OK))
	{
		fprintf(stderr, "device allocation failed: %s\n", G->error());
		exit(100);
	}
	return p;
}

static float *
Back(const void *dev, size_t n)
{
	float	   *h = Host(sizeof(float) * n);

	if (G->download(h, dev, sizeof(float) * n) != TR_GPU_OK)
		fprintf(stderr, "download failed: %s\n", G->error());
	return h;
}

static double
BackD(const double *dev)
{
	double		v = NAN;

	if (G->download(&v, dev, sizeof(double)) != TR_GPU_OK)
		fprintf(stderr, "download failed: %s\n", G->error());
	return v;
}

/* max |a - ref| / max |ref|, with ref in double */
static double
RelErr(const float *a, const double *ref, size_t n)
{
	double		num = 0.0,
				den = 1e-30;

	for (size_t i = 0; i < n; i++)
	{
		double		e = fabs((double) a[i] - ref[i]);

		if (!(e <= num))
			num = e;			/* NaN counts as infinitely wrong */
		if (fabs(ref[i]) > den)
			den = fabs(ref[i]);
	}
	return num / den;
}

static void
CheckClose(const char *what, const float *got, const double *ref, size_t n, int rc)
{
	double		e = rc == TR_GPU_OK ? RelErr(got, ref, n) : INFINITY;

	Check(rc == TR_GPU_OK && e <= TOL, "%s: relative error %.2e%s%s", what, e,
		  rc == TR_GPU_OK ? "" : ": ", rc == TR_GPU_OK ? "" : G->error());
}

static void
CheckScalar(const char *what, double got, double ref, int rc)
{
	double		e = fabs(got - ref) / fmax(fabs(ref), 1e-30);

	Check(rc == TR_GPU_OK && e <= TOL, "%s: %.9g vs %.9g (relative error %.2e)",
		  what, got, ref, e);
}

/* ---- products ------------------------------------------------------------ */

/* C = alpha op(A) op(B) + beta C, all row-major, in double */
static void
RefGemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
		const float *B, int ldb, float beta, const float *C, int ldc, double *out)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++)
		{
			double		s = 0.0;

			for (int l = 0; l < k; l++)
				s += (double) (ta ? A[(size_t) l * lda + i] : A[(size_t) i * lda + l]) *
					(tb ? B[(size_t) j * ldb + l] : B[(size_t) l * ldb + j]);
			out[(size_t) i * ldc + j] = alpha * s + beta * (double) C[(size_t) i * ldc + j];
		}
}

static void
TestGemm(void)
{
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
		{
			int			m = 37 + (int) TrRandBelow(&rng, 40),
						n = 11 + (int) TrRandBelow(&rng, 40),
						k = 53 + (int) TrRandBelow(&rng, 90);
			int			lda = (ta ? m : k) + 3,
						ldb = (tb ? k : n) + 2,
						ldc = n + 1;
			size_t		na = (size_t) (ta ? k : m) * lda,
						nb = (size_t) (tb ? n : k) * ldb,
						nc = (size_t) m * ldc;
			float	   *A = RandF(na, 1.0),
					   *B = RandF(nb, 1.0),
					   *C = RandF(nc, 1.0);
			double	   *ref = Host(sizeof(double) * nc);
			float	   *dA = Dev(A, sizeof(float) * na),
					   *dB = Dev(B, sizeof(float) * nb),
					   *dC = Dev(C, sizeof(float) * nc);
			int			rc;
			float	   *got;
			char		what[64];

			for (size_t i = 0; i < nc; i++)
				ref[i] = C[i];	/* the padding keeps C's values */
			RefGemm(ta, tb, m, n, k, 0.75f, A, lda, B, ldb, 0.5f, C, ldc, ref);
			rc = TrGemm(G, ta, tb, m, n, k, 0.75f, dA, lda, dB, ldb, 0.5f, dC, ldc);
			got = Back(dC, nc);
			snprintf(what, sizeof(what), "sgemm %c%c %dx%dx%d", ta ? 'T' : 'N',
					 tb ? 'T' : 'N', m, n, k);
			CheckClose(what, got, ref, nc, rc);
			G->release(dA);
			G->release(dB);
			G->release(dC);
			free(A);
			free(B);
			free(C);
			free(ref);
			free(got);
		}
}

static void
TestColSums(void)
{
	int			rows = 1000 + (int) TrRandBelow(&rng, 3000),
				cols = 1 + (int) TrRandBelow(&rng, 40);
	float	   *D = RandF((size_t) rows * cols, 1.0);
	float	   *ones = Host(sizeof(float) * rows);
	double	   *ref = Host(sizeof(double) * cols);
	float	   *dD,
			   *dOnes,
			   *dOut,
			   *got;
	int			rc;

	for (int i = 0; i < rows; i++)
		ones[i] = 1.0f;
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			ref[j] += D[(size_t) i * cols + j];
	dD = Dev(D, sizeof(float) * rows * cols);
	dOnes = Dev(ones, sizeof(float) * rows);
	dOut = Dev(NULL, sizeof(float) * cols);
	rc = TrColSums(G, dD, rows, cols, dOnes, dOut);
	got = Back(dOut, cols);
	CheckClose("column sums (sgemv)", got, ref, cols, rc);
	G->release(dD);
	G->release(dOnes);
	G->release(dOut);
	free(D);
	free(ones);
	free(ref);
	free(got);
}

/* ---- elementwise kernels -------------------------------------------------- */

static void
TestElementwise(void)
{
	size_t		n = 10000 + TrRandBelow(&rng, 50000);
	float	   *x = RandF(n, 2.0);
	float	   *h = RandF(n, 1.0);
	float	   *g = RandF(n, 1.0);
	double	   *ref = Host(sizeof(double) * n);
	float	   *dx = Dev(x, sizeof(float) * n),
			   *dh,
			   *dg,
			   *got;
	double	   *dacc = Dev(NULL, sizeof(double));
	double		sumsq = 0.0;
	int			rc;

	rc = G->fill(dx, n, 2.5f);
	got = Back(dx, n);
	for (size_t i = 0; i < n; i++)
		ref[i] = 2.5;
	CheckClose("fill", got, ref, n, rc);
	free(got);

	rc = G->upload(dx, x, sizeof(float) * n);
	if (rc == TR_GPU_OK)
		rc = G->relu(dx, n);
	got = Back(dx, n);
	for (size_t i = 0; i < n; i++)
		ref[i] = x[i] > 0 ? x[i] : 0.0;
	CheckClose("relu", got, ref, n, rc);
	free(got);

	/* h as a ReLU output: about half zeros */
	for (size_t i = 0; i < n; i++)
		h[i] = h[i] > 0 ? h[i] : 0.0f;
	dh = Dev(h, sizeof(float) * n);
	dg = Dev(g, sizeof(float) * n);
	rc = G->relu_grad(dg, dh, n);
	got = Back(dg, n);
	for (size_t i = 0; i < n; i++)
		ref[i] = h[i] != 0.0f ? g[i] : 0.0;
	CheckClose("relu_grad", got, ref, n, rc);
	free(got);

	for (size_t i = 0; i < n; i++)
		sumsq += (double) x[i] * x[i];
	/* dx holds relu(x): x again */
	rc = G->upload(dx, x, sizeof(float) * n);
	if (rc == TR_GPU_OK)
		rc = G->zero(dacc, sizeof(double));
	if (rc == TR_GPU_OK)
		rc = G->sumsq(dx, n, dacc);
	CheckScalar("sumsq", BackD(dacc), sumsq, rc);

	G->release(dx);
	G->release(dh);
	G->release(dg);
	G->release(dacc);
	free(x);
	free(h);
	free(g);
	free(ref);
}

static void
TestAdam(void)
{
	size_t		n = 5000 + TrRandBelow(&rng, 20000);
	float	   *theta = RandF(n, 1.0),
			   *grad = RandF(n, 0.1),
			   *m1 = RandF(n, 0.01),
			   *m2 = Host(sizeof(float) * n);
	double	   *ref = Host(sizeof(double) * 3 * n);
	float	   *dt,
			   *dg,
			   *d1,
			   *d2,
			   *got;
	float		lrf = TrAdamRate(1e-3, 7);
	int			rc;

	for (size_t i = 0; i < n; i++)
		m2[i] = (float) fabs(0.001 * TrRandNormal(&rng));
	dt = Dev(theta, sizeof(float) * n);
	dg = Dev(grad, sizeof(float) * n);
	d1 = Dev(m1, sizeof(float) * n);
	d2 = Dev(m2, sizeof(float) * n);
	for (size_t i = 0; i < n; i++)
	{
		double		a = 0.9 * m1[i] + 0.1 * grad[i];
		double		b = 0.999 * m2[i] + 0.001 * (double) grad[i] * grad[i];

		ref[i] = theta[i] - lrf * a / (sqrt(b) + 1e-8);
		ref[n + i] = a;
		ref[2 * n + i] = b;
	}
	rc = G->adam(dt, dg, d1, d2, n, lrf);
	got = Back(dt, n);
	CheckClose("adam: parameters", got, ref, n, rc);
	free(got);
	got = Back(d1, n);
	CheckClose("adam: first moments", got, ref + n, n, rc);
	free(got);
	got = Back(d2, n);
	CheckClose("adam: second moments", got, ref + 2 * n, n, rc);
	free(got);
	G->release(dt);
	G->release(dg);
	G->release(d1);
	G->release(d2);
	free(theta);
	free(grad);
	free(m1);
	free(m2);
	free(ref);
}

/* ---- layouts ---------------------------------------------------------------- */

static void
TestGather(void)
{
	int			n = 500,
				d = 37,
				rows = 200;
	float	   *X = RandF((size_t) n * d, 1.0);
	int		   *idx = RandI(rows, n);
	double	   *ref = Host(sizeof(double) * rows * d);
	float	   *dX = Dev(X, sizeof(float) * n * d),
			   *dout = Dev(NULL, sizeof(float) * rows * d),
			   *got;
	int		   *didx = Dev(idx, sizeof(int) * rows);
	int			rc;

	for (int i = 0; i < rows; i++)
		for (int j = 0; j < d; j++)
			ref[(size_t) i * d + j] = X[(size_t) idx[i] * d + j];
	rc = G->gather_rows(dout, dX, didx, rows, d);
	got = Back(dout, (size_t) rows * d);
	CheckClose("gather_rows", got, ref, (size_t) rows * d, rc);
	free(got);
	G->release(dX);
	G->release(dout);
	G->release(didx);
	free(X);
	free(idx);
	free(ref);
}

static void
TestToNhwc(int c, int with_idx)
{
	int			h = 7,
				w = 5,
				n = 40,
				B = 16;
	size_t		per = (size_t) c * h * w;
	float	   *X = RandF(n * per, 1.0);
	int		   *idx = RandI(B, n);
	double	   *ref = Host(sizeof(double) * B * per);
	float	   *dX = Dev(X, sizeof(float) * n * per),
			   *dout = Dev(NULL, sizeof(float) * B * per),
			   *got;
	int		   *didx = Dev(idx, sizeof(int) * B);
	int			rc;
	char		what[64];

	for (int b = 0; b < B; b++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
				for (int ch = 0; ch < c; ch++)
					ref[(((size_t) b * h + y) * w + x) * c + ch] =
						X[(size_t) (with_idx ? idx[b] : b) * per + ((size_t) ch * h + y) * w + x];
	rc = G->to_nhwc(dout, dX, with_idx ? didx : NULL, B, c, h, w);
	got = Back(dout, B * per);
	snprintf(what, sizeof(what), "to_nhwc, %d channel(s)%s", c, with_idx ? ", gathered" : "");
	CheckClose(what, got, ref, B * per, rc);
	free(got);
	G->release(dX);
	G->release(dout);
	G->release(didx);
	free(X);
	free(idx);
	free(ref);
}

static void
TestBiasRows(void)
{
	int			rows = 333,
				cols = 29;
	float	   *b = RandF(cols, 1.0);
	double	   *ref = Host(sizeof(double) * rows * cols);
	float	   *db = Dev(b, sizeof(float) * cols),
			   *dH = Dev(NULL, sizeof(float) * rows * cols),
			   *got;
	int			rc;

	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			ref[(size_t) i * cols + j] = b[j];
	rc = G->bias_rows(dH, db, rows, cols);
	got = Back(dH, (size_t) rows * cols);
	CheckClose("bias_rows", got, ref, (size_t) rows * cols, rc);
	free(got);
	G->release(db);
	G->release(dH);
	free(b);
	free(ref);
}

/* ---- losses ----------------------------------------------------------------- */

/* softmax cross-entropy (k > 1), logistic (k == 1) or squared error (t) */
static double
RefLoss(const float *Z, const int *y, const double *t, int rows, int k,
		double invn, double *dZ)
{
	double		loss = 0.0;

	for (int r = 0; r < rows; r++)
	{
		const float *z = Z + (size_t) r * k;
		double	   *g = dZ + (size_t) r * k;

		if (t != NULL)
		{
			double		e = z[0] - t[r];

			loss += 0.5 * e * e;
			g[0] = e * invn;
		}
		else if (k == 1)
		{
			double		p = 1.0 / (1.0 + exp(-(double) z[0]));

			loss += log1p(exp(-fabs((double) z[0]))) + fmax((double) z[0], 0.0) -
				(y[r] == 1 ? z[0] : 0.0);
			g[0] = (p - (y[r] == 1)) * invn;
		}
		else
		{
			double		mx = z[0],
						sum = 0.0;

			for (int c = 1; c < k; c++)
				mx = fmax(mx, z[c]);
			for (int c = 0; c < k; c++)
				sum += exp(z[c] - mx);
			loss += mx + log(sum) - z[y[r]];
			for (int c = 0; c < k; c++)
				g[c] = (exp(z[c] - mx) / sum - (c == y[r])) * invn;
		}
	}
	return loss;
}

static void
TestLoss(const char *what, int k, int regression)
{
	int			rows = 500 + (int) TrRandBelow(&rng, 1500);
	float	   *Z = RandF((size_t) rows * k, 3.0);
	int		   *y = RandI(rows, k == 1 ? 2 : k);
	double	   *t = Host(sizeof(double) * rows);
	double	   *ref = Host(sizeof(double) * rows * k);
	float		invn = 1.0f / (float) rows;
	double		loss;
	float	   *dZ = Dev(Z, sizeof(float) * rows * k),
			   *dG = Dev(NULL, sizeof(float) * rows * k),
			   *got;
	int		   *dy = Dev(y, sizeof(int) * rows);
	double	   *dt,
			   *dloss = Dev(NULL, sizeof(double));
	char		buf[96];
	int			rc;

	for (int i = 0; i < rows; i++)
		t[i] = 2.0 * TrRandNormal(&rng);
	dt = Dev(t, sizeof(double) * rows);
	loss = RefLoss(Z, y, regression ? t : NULL, rows, k, invn, ref);
	if (regression)
		rc = G->sqerr(dZ, dt, rows, invn, dG, dloss);
	else if (k == 1)
		rc = G->logistic(dZ, dy, rows, invn, dG, dloss);
	else
		rc = G->xent(dZ, dy, rows, k, invn, dG, dloss);
	got = Back(dG, (size_t) rows * k);
	snprintf(buf, sizeof(buf), "%s: gradient", what);
	CheckClose(buf, got, ref, (size_t) rows * k, rc);
	snprintf(buf, sizeof(buf), "%s: loss", what);
	CheckScalar(buf, BackD(dloss), loss, rc);
	free(got);
	G->release(dZ);
	G->release(dG);
	G->release(dy);
	G->release(dt);
	G->release(dloss);
	free(Z);
	free(y);
	free(t);
	free(ref);
}

/* tr_softmax.c's residuals: logits without the (double) bias */
static void
TestSoftmaxResid(int k)
{
	int			rows = 1000 + (int) TrRandBelow(&rng, 3000);
	float	   *Z = RandF((size_t) rows * k, 2.0);
	int		   *y = RandI(rows, k == 1 ? 2 : k);
	double	   *b = Host(sizeof(double) * k);
	double	   *ref = Host(sizeof(double) * rows * k);
	float	   *Zb = Host(sizeof(float) * rows * k);
	float		invn = 1.0f / (float) rows;
	double		loss;
	float	   *dZ,
			   *got;
	int		   *dy = Dev(y, sizeof(int) * rows);
	double	   *db,
			   *dloss = Dev(NULL, sizeof(double));
	char		buf[96];
	int			rc;

	for (int c = 0; c < k; c++)
		b[c] = TrRandNormal(&rng);
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < k; c++)
			Zb[(size_t) r * k + c] = (float) (Z[(size_t) r * k + c] + b[c]);
	loss = RefLoss(Zb, y, NULL, rows, k, invn, ref);
	dZ = Dev(Z, sizeof(float) * rows * k);
	db = Dev(b, sizeof(double) * k);
	rc = G->softmax_resid(dZ, dy, db, rows, k, invn, dloss);
	got = Back(dZ, (size_t) rows * k);
	snprintf(buf, sizeof(buf), "softmax_resid, %d column(s): residuals", k);
	CheckClose(buf, got, ref, (size_t) rows * k, rc);
	snprintf(buf, sizeof(buf), "softmax_resid, %d column(s): loss", k);
	CheckScalar(buf, BackD(dloss), loss, rc);
	free(got);
	G->release(dZ);
	G->release(dy);
	G->release(db);
	G->release(dloss);
	free(Z);
	free(Zb);
	free(y);
	free(b);
	free(ref);
}

/* ---- convolutions and pooling ---------------------------------------------- */

static void
TestIm2col(int c, int k)
{
	int			B = 3,
				h = 9,
				w = 7,
				p = k / 2;
	size_t		K = (size_t) k * k * c,
				na = (size_t) B * h * w * c,
				nc = (size_t) B * h * w * K;
	float	   *A = RandF(na, 1.0),
			   *C = RandF(nc, 1.0);
	double	   *ref = Host(sizeof(double) * (nc > na ? nc : na));
	float	   *dA = Dev(A, sizeof(float) * na),
			   *dC = Dev(NULL, sizeof(float) * nc),
			   *dCin = Dev(C, sizeof(float) * nc),
			   *dOut = Dev(NULL, sizeof(float) * na),
			   *got;
	char		buf[96];
	int			rc;

	for (int b = 0; b < B; b++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
				for (int ky = 0; ky < k; ky++)
					for (int kx = 0; kx < k; kx++)
						for (int ch = 0; ch < c; ch++)
						{
							int			iy = y + ky - p,
										ix = x + kx - p;
							size_t		o = (((size_t) b * h + y) * w + x) * K +
								((size_t) ky * k + kx) * c + ch;

							ref[o] = (iy < 0 || iy >= h || ix < 0 || ix >= w) ? 0.0 :
								A[(((size_t) b * h + iy) * w + ix) * c + ch];
						}
	rc = G->im2col(dA, B, h, w, c, k, dC);
	got = Back(dC, nc);
	snprintf(buf, sizeof(buf), "im2col %dx%d, %d channel(s)", k, k, c);
	CheckClose(buf, got, ref, nc, rc);
	free(got);

	/* col2im is im2col's adjoint: scatter-add C's cells back */
	memset(ref, 0, sizeof(double) * na);
	for (int b = 0; b < B; b++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
				for (int ky = 0; ky < k; ky++)
					for (int kx = 0; kx < k; kx++)
						for (int ch = 0; ch < c; ch++)
						{
							int			iy = y + ky - p,
										ix = x + kx - p;

							if (iy >= 0 && iy < h && ix >= 0 && ix < w)
								ref[(((size_t) b * h + iy) * w + ix) * c + ch] +=
									C[(((size_t) b * h + y) * w + x) * K +
									  ((size_t) ky * k + kx) * c + ch];
						}
	rc = G->col2im(dCin, B, h, w, c, k, dOut);
	got = Back(dOut, na);
	snprintf(buf, sizeof(buf), "col2im %dx%d, %d channel(s)", k, k, c);
	CheckClose(buf, got, ref, na, rc);
	free(got);
	G->release(dA);
	G->release(dC);
	G->release(dCin);
	G->release(dOut);
	free(A);
	free(C);
	free(ref);
}

static void
TestPool(void)
{
	int			B = 4,
				h = 9,					/* odd: the last row is not pooled */
				w = 8,
				c = 5,
				ph = h / 2,
				pw = w / 2;
	size_t		nz = (size_t) B * h * w * c,
				np = (size_t) B * ph * pw * c;
	float	   *Z = RandF(nz, 1.0),
			   *dP = RandF(np, 1.0);
	int		   *arg = Host(sizeof(int) * np);
	double	   *ref = Host(sizeof(double) * nz);
	float	   *dZ = Dev(Z, sizeof(float) * nz),
			   *dout = Dev(NULL, sizeof(float) * np),
			   *ddP = Dev(dP, sizeof(float) * np),
			   *dgrad = Dev(NULL, sizeof(float) * nz),
			   *got;
	int		   *darg = Dev(NULL, sizeof(int) * np),
			   *garg = Host(sizeof(int) * np);
	int			wrong = 0,
				rc;

	for (int b = 0; b < B; b++)
		for (int y = 0; y < ph; y++)
			for (int x = 0; x < pw; x++)
				for (int ch = 0; ch < c; ch++)
				{
					size_t		o = (((size_t) b * ph + y) * pw + x) * c + ch;
					int			best = -1;

					for (int dy = 0; dy < 2; dy++)
						for (int dx = 0; dx < 2; dx++)
						{
							int			zi = (int) ((((size_t) b * h + 2 * y + dy) * w + 2 * x + dx) * c + ch);

							if (best < 0 || Z[zi] > Z[best])
								best = zi;
						}
					arg[o] = best;
					ref[o] = Z[best];
				}
	rc = G->maxpool(dZ, B, h, w, c, dout, darg);
	got = Back(dout, np);
	CheckClose("maxpool: values", got, ref, np, rc);
	free(got);
	if (rc == TR_GPU_OK)
		rc = G->download(garg, darg, sizeof(int) * np);
	for (size_t i = 0; i < np; i++)
		wrong += garg[i] != arg[i];
	Check(rc == TR_GPU_OK && wrong == 0, "maxpool: %d of %zu winners differ", wrong, np);

	memset(ref, 0, sizeof(double) * nz);
	for (size_t i = 0; i < np; i++)
		ref[arg[i]] += dP[i];
	rc = G->unpool(ddP, darg, np, dgrad);
	got = Back(dgrad, nz);
	CheckClose("unpool", got, ref, nz, rc);
	free(got);
	G->release(dZ);
	G->release(dout);
	G->release(ddP);
	G->release(dgrad);
	G->release(darg);
	free(Z);
	free(dP);
	free(arg);
	free(garg);
	free(ref);
}

/* ---- families --------------------------------------------------------------- */

static char *
Label(int c)
{
	char		buf[16];

	snprintf(buf, sizeof(buf), "class%d", c);
	return strdup(buf);
}

/* Gaussian blobs (classification) or a noisy non-linear target (regression). */
static void
Synthetic(TrTable *t, int n, int d, int k, int regression)
{
	double	   *centers = Host(sizeof(double) * k * d);

	memset(t, 0, sizeof(*t));
	t->n = n;
	t->d = d;
	t->kind = regression ? TR_KIND_REGRESSION : TR_KIND_CLASSIFICATION;
	t->X = Host(sizeof(double) * n * d);
	if (regression)
		t->t = Host(sizeof(double) * n);
	else
		t->labels = Host(sizeof(char *) * n);
	for (int i = 0; i < k * d; i++)
		centers[i] = 0.3 * TrRandNormal(&rng);
	for (int i = 0; i < n; i++)
	{
		int			c = i % k;
		double	   *x = t->X + (size_t) i * d;

		for (int j = 0; j < d; j++)
			x[j] = (regression ? 0.0 : centers[c * d + j]) + TrRandNormal(&rng);
		if (regression)
			t->t[i] = 3 * x[0] - 2 * x[1] + x[0] * x[2] + 0.3 * TrRandNormal(&rng);
		else
			t->labels[i] = Label(c);
	}
	free(centers);
}

/* 12 x 12 images: each class lights a different bar, in noise */
static void
Images(TrTable *t, int n, int k)
{
	Synthetic(t, n, 144, k, 0);
	for (int i = 0; i < n; i++)
	{
		int			c = i % k;
		double	   *x = t->X + (size_t) i * 144;

		for (int p = 0; p < 144; p++)
		{
			int			row = p / 12,
						col = p % 12;
			int			on = c % 2 == 0 ? row == 2 + 2 * (c / 2) : col == 2 + 2 * (c / 2);

			x[p] = (on ? 2.0 : 0.0) + 0.8 * TrRandNormal(&rng);
		}
	}
}

/* One family on the GPU next to the CPU: scores within a point. */
static void
CompareFamily(const char *family, const char *params, const TrTable *t, int image)
{
	TrPrepOptions opt;
	TrResult	cpu,
				gpu;
	json_object *pj = json_tokener_parse(params);
	json_object *mc = NULL,
			   *mg = NULL,
			   *v;
	int			rc_c,
				rc_g;
	const char *ran = "?";

	memset(&opt, 0, sizeof(opt));
	opt.val_fraction = 0.25;
	opt.seed = 7;
	opt.impute = 1;
	if (image)
	{
		opt.channels = 1;
		opt.height = 12;
		opt.width = 12;
	}
	rc_c = TrRunCandidate(t, family, pj, &opt, NULL, NULL, NULL, 1, &cpu, &mc);
	rc_g = TrRunCandidateOn(G, t, family, pj, &opt, NULL, NULL, NULL, 1, &gpu, &mg);
	if (mg && json_object_object_get_ex(mg, "device_kind", &v))
		ran = json_object_get_string(v);
	Check(rc_c == 0 && rc_g == 0 && strcmp(ran, "cuda") == 0 &&
		  fabs(cpu.score - gpu.score) <= 0.01,
		  "%s %s: CPU score %.4f, GPU score %.4f (trained on %s)%s%s", family, params,
		  cpu.score, gpu.score, ran, rc_g ? ": " : "", rc_g ? gpu.error : "");
	Check(rc_c == 0 && rc_g == 0 && cpu.artifact_len == gpu.artifact_len,
		  "%s: the artifacts have the same layout (%zu and %zu bytes)", family,
		  cpu.artifact_len, gpu.artifact_len);
	printf("# %s: training loss CPU %.6g, GPU %.6g\n", family, cpu.train_loss, gpu.train_loss);
	TrResultFree(&cpu);
	TrResultFree(&gpu);
	json_object_put(mc);
	json_object_put(mg);
	json_object_put(pj);
}

static void
TestFamilies(void)
{
	TrTable		blobs,
				two,
				reg,
				img;

	Synthetic(&blobs, 3000, 24, 5, 0);
	Synthetic(&two, 2000, 10, 2, 0);
	Synthetic(&reg, 2000, 8, 1, 1);
	Images(&img, 1200, 4);
	CompareFamily("softmax", "{\"l2\": 1e-3}", &blobs, 0);
	CompareFamily("softmax", "{\"l2\": 1e-3}", &two, 0);
	CompareFamily("mlp", "{\"hidden\": [64, 32], \"epochs\": 15}", &blobs, 0);
	CompareFamily("mlp", "{\"hidden\": [32], \"epochs\": 15}", &two, 0);
	CompareFamily("mlp", "{\"hidden\": [64], \"epochs\": 15}", &reg, 0);
	CompareFamily("cnn", "{\"filters\": [6, 8], \"hidden\": 24, \"epochs\": 3, \"batch\": 32}",
				  &img, 1);
	CompareFamily("cnn", "{\"filters\": [4], \"kernel\": 5, \"hidden\": 0, \"epochs\": 2}",
				  &img, 1);
	TrTableFree(&blobs);
	TrTableFree(&two);
	TrTableFree(&reg);
	TrTableFree(&img);
}

/* Out of the emulated GPU's memory: a device out-of-memory failure. */
static void
TestOutOfMemory(void)
{
	TrTable		t;
	TrPrepOptions opt;
	TrResult	res;
	json_object *m = NULL;
	char		err[256];
	int			rc;

	Synthetic(&t, 2000, 24, 3, 0);
	memset(&opt, 0, sizeof(opt));
	opt.val_fraction = 0.2;
	opt.seed = 1;
	opt.impute = 1;
	setenv(TR_GPU_ENV_EMULATE_MEMORY, "100000", 1);
	G->init(0, err, sizeof(err));
	rc = TrRunCandidateOn(G, &t, "mlp", NULL, &opt, NULL, NULL, NULL, 1, &res, &m);
	Check(rc != 0 && res.exit_code == EASEML_EXIT_DEVICE_OOM &&
		  strstr(res.error, "out of GPU memory") != NULL,
		  "a fit that does not fit in GPU memory fails as out of memory (%s)", res.error);
	TrResultFree(&res);
	json_object_put(m);
	unsetenv(TR_GPU_ENV_EMULATE_MEMORY);
	G->init(0, err, sizeof(err));
	TrTableFree(&t);
}

int
main(int argc, char **argv)
{
	int			cuda = argc > 1 && strcmp(argv[1], "--cuda") == 0;
	char		err[TR_ERRLEN];
	int			oom;

	if (cuda)
		unsetenv(TR_GPU_ENV_EMULATE);
	else
		setenv(TR_GPU_ENV_EMULATE, "1", 1);
	G = TrGpuOpen(err, sizeof(err), &oom);
	if (G == NULL)
	{
		printf("not ok 1 - no %s: %s\n1..1\n", cuda ? "CUDA backend" : "GPU emulation", err);
		return 1;
	}
	printf("# %s\n", G->name);
	TestGemm();
	TestColSums();
	TestElementwise();
	TestAdam();
	TestGather();
	TestToNhwc(1, 1);
	TestToNhwc(3, 1);
	TestToNhwc(3, 0);
	TestBiasRows();
	TestLoss("softmax cross-entropy", 10, 0);
	TestLoss("logistic", 1, 0);
	TestLoss("squared error", 1, 1);
	TestSoftmaxResid(1);
	TestSoftmaxResid(7);
	TestIm2col(1, 3);
	TestIm2col(4, 3);
	TestIm2col(2, 5);
	TestPool();
	TestFamilies();
	if (!cuda)
		TestOutOfMemory();
	TrGpuClose(G);
	printf("1..%d\n", test_no);
	printf("# %d of %d checks failed\n", failures, test_no);
	return failures > 100 ? 100 : failures;
}
