/*-------------------------------------------------------------------------
 *
 * tr_softmax.c
 *	  Family "softmax": multinomial logistic regression with an L2 penalty,
 *	  fitted by L-BFGS.
 *
 * Objective (the same as scikit-learn's LogisticRegression with lbfgs when
 * l2 = 1 / (C * n_train)):
 *
 *	   f(W, b) = (1/n) sum_i [ logsumexp(x_i W + b) - (x_i W + b)_{y_i} ]
 *				 + (l2 / 2) ||W||^2			(the bias is not penalised)
 *
 * With two classes the model is the usual binomial one (a single weight
 * vector and a sigmoid), which is what LogisticRegression fits too; the
 * softmax form would halve the effective penalty.
 *
 * One evaluation of f and its gradient is two float GEMMs over the training
 * rows (Z = X W, G = X^T (P - Y)); the optimiser state (iterate, gradient,
 * L-BFGS pairs) is double.  L-BFGS: Nocedal, "Updating quasi-Newton
 * matrices with limited storage", Math. Comp. 35 (1980); two-loop recursion
 * with m = 10 pairs and the initial scaling s'y / y'y (Nocedal and Wright,
 * Numerical Optimization, 2nd ed., Alg. 7.4 and eq. 7.20), and a
 * backtracking line search on the Armijo condition, skipping pairs with
 * s'y <= 0 (which a convex objective produces only through rounding).
 * Stops when max |g_i| <= tol (scikit-learn's gtol) or after max_iter
 * iterations.
 *
 * On a GPU only the evaluations move (tr_softmax_gpu.c): the optimiser,
 * its line search and every decision it takes stay here.
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_softmax.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "trainer/trainer.h"
#include "tr_softmax.h"

#define LBFGS_M 10
#define SOFTMAX_BLOCK 256		/* rows per cache block (256 x 784 floats = 0.8 MB) */

typedef struct SoftmaxProblem
{
	const float *X;
	const int  *y;
	int			n;
	int			d;
	int			k;				/* columns of W: classes, or 1 for binary */
	double		l2;
	float	   *Wf;				/* W as float: k x d in SoftmaxEval, d x k in
								 * SoftmaxPredict */
	float	   *Z;				/* n x k */
	float	   *Gf;				/* k x d: the gradient of W, transposed */
	SoftmaxDev *dev;			/* evaluate on this GPU instead (or NULL) */
} SoftmaxProblem;

/*
 * The products of the objective, written out instead of calling sgemm.
 * With k a handful of classes, sgemm spends its time packing the rows of
 * X into its panel layout (a copy of the block for every product) rather
 * than multiplying; here each row is read once and meets every class's
 * weights while it sits in L1.  The vectors are GCC's generic ones (SSE on
 * plain x86-64, NEON on ARM); on x86-64 a second copy for AVX2 and FMA is
 * chosen at load time where the CPU has them.
 */
typedef float SmVec __attribute__((vector_size(32)));
/* the same at any float's address, for loads and stores */
typedef float SmVecU __attribute__((vector_size(32), aligned(4), may_alias));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SM_CLONES
#endif

/*
 * Loads and sums as macros: a function passing a 32-byte vector by value
 * would have a different ABI in the AVX clone (GCC's -Wpsabi).
 */
#define SmLoad(p) (*(const SmVecU *) (p))
#define SmSum(v) ((((v)[0] + (v)[1]) + ((v)[2] + (v)[3])) + \
				  (((v)[4] + (v)[5]) + ((v)[6] + (v)[7])))

/* four classes' scores of one row: z[0..3] = x . w0..w3 */
#define SM_FORWARD4(x, w0, d, d8, z) \
	do { \
		SmVec		a0_ = {0}, a1_ = {0}, a2_ = {0}, a3_ = {0}; \
		float		t0_ = 0.0f, t1_ = 0.0f, t2_ = 0.0f, t3_ = 0.0f; \
		const float *w1_ = (w0) + (d), *w2_ = w1_ + (d), *w3_ = w2_ + (d); \
		for (int j_ = 0; j_ < (d8); j_ += 8) \
		{ \
			SmVec		xv_ = SmLoad((x) + j_); \
			a0_ += xv_ * SmLoad((w0) + j_); \
			a1_ += xv_ * SmLoad(w1_ + j_); \
			a2_ += xv_ * SmLoad(w2_ + j_); \
			a3_ += xv_ * SmLoad(w3_ + j_); \
		} \
		for (int j_ = (d8); j_ < (d); j_++) \
		{ \
			t0_ += (x)[j_] * (w0)[j_]; \
			t1_ += (x)[j_] * w1_[j_]; \
			t2_ += (x)[j_] * w2_[j_]; \
			t3_ += (x)[j_] * w3_[j_]; \
		} \
		(z)[0] = SmSum(a0_) + t0_; \
		(z)[1] = SmSum(a1_) + t1_; \
		(z)[2] = SmSum(a2_) + t2_; \
		(z)[3] = SmSum(a3_) + t3_; \
	} while (0)

/*
 * Z (rows x k) = X (rows x d) Wt^T, Wt being k x d.  Two rows meet four
 * classes at a time: six loads for eight multiply-adds.
 */
SM_CLONES static void
SkinnyForward(const float *X, int rows, int d, const float *Wt, int k, float *Z)
{
	int			d8 = d - d % 8,
				r = 0;

	for (; r + 2 <= rows; r += 2)
	{
		const float *x = X + (size_t) r * d,
				   *y = x + d;
		float	   *z = Z + (size_t) r * k,
				   *zy = z + k;
		int			c = 0;

		for (; c + 4 <= k; c += 4)
		{
			const float *w0 = Wt + (size_t) c * d,
					   *w1 = w0 + d,
					   *w2 = w1 + d,
					   *w3 = w2 + d;
			SmVec		a0 = {0},
						a1 = {0},
						a2 = {0},
						a3 = {0},
						b0 = {0},
						b1 = {0},
						b2 = {0},
						b3 = {0};

			for (int j = 0; j < d8; j += 8)
			{
				SmVec		xv = SmLoad(x + j),
							yv = SmLoad(y + j),
							wv;

				wv = SmLoad(w0 + j);
				a0 += xv * wv;
				b0 += yv * wv;
				wv = SmLoad(w1 + j);
				a1 += xv * wv;
				b1 += yv * wv;
				wv = SmLoad(w2 + j);
				a2 += xv * wv;
				b2 += yv * wv;
				wv = SmLoad(w3 + j);
				a3 += xv * wv;
				b3 += yv * wv;
			}
			z[c] = SmSum(a0);
			z[c + 1] = SmSum(a1);
			z[c + 2] = SmSum(a2);
			z[c + 3] = SmSum(a3);
			zy[c] = SmSum(b0);
			zy[c + 1] = SmSum(b1);
			zy[c + 2] = SmSum(b2);
			zy[c + 3] = SmSum(b3);
			for (int j = d8; j < d; j++)
			{
				z[c] += x[j] * w0[j];
				z[c + 1] += x[j] * w1[j];
				z[c + 2] += x[j] * w2[j];
				z[c + 3] += x[j] * w3[j];
				zy[c] += y[j] * w0[j];
				zy[c + 1] += y[j] * w1[j];
				zy[c + 2] += y[j] * w2[j];
				zy[c + 3] += y[j] * w3[j];
			}
		}
		for (; c < k; c++)
		{
			const float *w = Wt + (size_t) c * d;
			SmVec		a = {0},
						b = {0};

			for (int j = 0; j < d8; j += 8)
			{
				SmVec		wv = SmLoad(w + j);

				a += SmLoad(x + j) * wv;
				b += SmLoad(y + j) * wv;
			}
			z[c] = SmSum(a);
			zy[c] = SmSum(b);
			for (int j = d8; j < d; j++)
			{
				z[c] += x[j] * w[j];
				zy[c] += y[j] * w[j];
			}
		}
	}
	for (; r < rows; r++)
	{
		const float *x = X + (size_t) r * d;
		float	   *z = Z + (size_t) r * k;
		int			c = 0;

		for (; c + 4 <= k; c += 4)
			SM_FORWARD4(x, Wt + (size_t) c * d, d, d8, z + c);
		for (; c < k; c++)
		{
			const float *w = Wt + (size_t) c * d;
			SmVec		a = {0};
			float		t = 0.0f;

			for (int j = 0; j < d8; j += 8)
				a += SmLoad(x + j) * SmLoad(w + j);
			for (int j = d8; j < d; j++)
				t += x[j] * w[j];
			z[c] = SmSum(a) + t;
		}
	}
}

/*
 * Gt (k x d) += R^T X: each class's row gains r_ic x_i for every row i.
 * Four rows at a time, so that each load and store of a class's gradient
 * row carries four multiply-adds instead of one.
 */
SM_CLONES static void
SkinnyBackward(const float *X, int rows, int d, const float *R, int k, float *Gt)
{
	int			d8 = d - d % 8,
				r = 0;

	for (; r + 4 <= rows; r += 4)
	{
		const float *x0 = X + (size_t) r * d,
				   *x1 = x0 + d,
				   *x2 = x1 + d,
				   *x3 = x2 + d;

		for (int c = 0; c < k; c++)
		{
			float		a0 = R[(size_t) r * k + c],
						a1 = R[(size_t) (r + 1) * k + c],
						a2 = R[(size_t) (r + 2) * k + c],
						a3 = R[(size_t) (r + 3) * k + c];
			SmVec		v0 = {a0, a0, a0, a0, a0, a0, a0, a0},
						v1 = {a1, a1, a1, a1, a1, a1, a1, a1},
						v2 = {a2, a2, a2, a2, a2, a2, a2, a2},
						v3 = {a3, a3, a3, a3, a3, a3, a3, a3};
			float	   *g = Gt + (size_t) c * d;

			for (int j = 0; j < d8; j += 8)
				*(SmVecU *) (g + j) = SmLoad(g + j) +
					((v0 * SmLoad(x0 + j) + v1 * SmLoad(x1 + j)) +
					 (v2 * SmLoad(x2 + j) + v3 * SmLoad(x3 + j)));
			for (int j = d8; j < d; j++)
				g[j] += (a0 * x0[j] + a1 * x1[j]) + (a2 * x2[j] + a3 * x3[j]);
		}
	}
	for (; r < rows; r++)
	{
		const float *x = X + (size_t) r * d;

		for (int c = 0; c < k; c++)
		{
			float		a = R[(size_t) r * k + c];
			SmVec		av = {a, a, a, a, a, a, a, a};
			float	   *g = Gt + (size_t) c * d;

			for (int j = 0; j < d8; j += 8)
				*(SmVecU *) (g + j) = SmLoad(g + j) + av * SmLoad(x + j);
			for (int j = d8; j < d; j++)
				g[j] += a * x[j];
		}
	}
}

/*
 * f(theta) and its gradient; theta = [W (d x k row-major), b (k)].
 *
 * The rows are processed in blocks of SOFTMAX_BLOCK: Z_blk = X_blk W, the
 * residuals P - Y in place, then G += X_blk^T (P - Y)_blk.  W has only k
 * columns, so each GEMM is memory-bound on X; doing both products while
 * the block is still in cache reads X from memory once per evaluation
 * instead of four times (two GEMMs, each packing and then reading X).
 * Loss terms are summed in double from float logits.
 */
static double
SoftmaxEval(SoftmaxProblem *pr, const double *theta, double *grad)
{
	int			n = pr->n,
				d = pr->d,
				k = pr->k;
	const double *b = theta + (size_t) d * k;
	double		loss = 0.0,
				reg = 0.0;
	double	   *gb = grad + (size_t) d * k;
	float		invn = 1.0f / (float) n;

	for (int j = 0; j < d; j++)
		for (int c = 0; c < k; c++)
			pr->Wf[(size_t) c * d + j] = (float) theta[(size_t) j * k + c];
	memset(pr->Gf, 0, sizeof(float) * (size_t) d * k);
	for (int c = 0; c < k; c++)
		gb[c] = 0.0;
	for (int i0 = 0; i0 < n; i0 += SOFTMAX_BLOCK)
	{
		int			rows = n - i0 < SOFTMAX_BLOCK ? n - i0 : SOFTMAX_BLOCK;
		const float *Xb = pr->X + (size_t) i0 * d;

		SkinnyForward(Xb, rows, d, pr->Wf, k, pr->Z);
		for (int r = 0; r < rows; r++)
		{
			float	   *z = pr->Z + (size_t) r * k;
			int			yi_class = pr->y[i0 + r];

			if (k == 1)
			{
				/* binomial: loss = log(1 + e^z) - y z, computed stably */
				double		zi = (double) z[0] + b[0];
				double		yi = yi_class == 1 ? 1.0 : 0.0;
				double		p;

				loss += (zi > 0 ? zi + log1p(exp(-zi)) : log1p(exp(zi))) - yi * zi;
				p = zi >= 0 ? 1.0 / (1.0 + exp(-zi)) : exp(zi) / (1.0 + exp(zi));
				z[0] = (float) ((p - yi) * invn);
				gb[0] += p - yi;
			}
			else
			{
				double		mx = -INFINITY,
							sum = 0.0,
							vy = (double) z[yi_class] + b[yi_class];

				for (int c = 0; c < k; c++)
				{
					double		v = (double) z[c] + b[c];

					if (v > mx)
						mx = v;
				}
				for (int c = 0; c < k; c++)
				{
					double		e = exp((double) z[c] + b[c] - mx);

					sum += e;
					z[c] = (float) e;
				}
				/* loss_i = logsumexp(v) - v_y, never -Inf or NaN */
				loss += mx + log(sum) - vy;
				for (int c = 0; c < k; c++)
				{
					double		p = (double) z[c] / sum - (c == yi_class ? 1.0 : 0.0);

					z[c] = (float) (p * invn);
					gb[c] += p;
				}
			}
		}
		SkinnyBackward(Xb, rows, d, pr->Z, k, pr->Gf);
	}
	for (int j = 0; j < d; j++)
		for (int c = 0; c < k; c++)
		{
			size_t		i = (size_t) j * k + c;

			grad[i] = (double) pr->Gf[(size_t) c * d + j] + pr->l2 * theta[i];
			reg += theta[i] * theta[i];
		}
	for (int c = 0; c < k; c++)
		gb[c] /= n;
	return loss / n + 0.5 * pr->l2 * reg;
}

/*
 * The objective for the line search: a step so long that float logits
 * overflow gives Inf (or NaN), which must read as "worse", never as a
 * comparison that is false both ways.
 */
static double
SafeEval(SoftmaxProblem *pr, const double *theta, double *grad)
{
	double		f = pr->dev ? SoftmaxDevEval(pr->dev, theta, pr->l2, grad) :
		SoftmaxEval(pr, theta, grad);

	return isfinite(f) ? f : HUGE_VAL;
}

static double
Dot(const double *a, const double *b, int n)
{
	return cblas_ddot(n, a, 1, b, 1);
}

/* predicted class ids for rows X (n x d) */
static void
SoftmaxPredict(const double *theta, int d, int k, int nclass,
			   const float *X, int n, int *pred, float *Wf, float *Z)
{
	const double *b = theta + (size_t) d * k;

	for (size_t i = 0; i < (size_t) d * k; i++)
		Wf[i] = (float) theta[i];
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, k, d,
				1.0f, X, d, Wf, k, 0.0f, Z, k);
	for (int i = 0; i < n; i++)
	{
		float	   *z = Z + (size_t) i * k;

		if (k == 1)
			pred[i] = ((double) z[0] + b[0]) > 0.0 ? 1 : 0;
		else
		{
			int			best = 0;
			double		bv = (double) z[0] + b[0];

			for (int c = 1; c < nclass; c++)
				if ((double) z[c] + b[c] > bv)
				{
					bv = (double) z[c] + b[c];
					best = c;
				}
			pred[i] = best;
		}
	}
}

/* L-BFGS memory: the last LBFGS_M steps s and gradient changes y */
typedef struct Lbfgs
{
	int			p;				/* parameters */
	int			hist;			/* pairs stored */
	int			head;			/* where the next pair goes */
	double	   *S;				/* LBFGS_M x p */
	double	   *Y;				/* LBFGS_M x p */
	double	   *rho;			/* 1 / (s'y) */
	double	   *alpha;
	double	   *dir;			/* p: the search direction */
	double	   *tnew;			/* p: the trial point */
	double	   *gnew;			/* p: its gradient */
} Lbfgs;

static int
LbfgsInit(Lbfgs *lb, int p)
{
	memset(lb, 0, sizeof(*lb));
	lb->p = p;
	lb->S = calloc((size_t) LBFGS_M * p, sizeof(double));
	lb->Y = calloc((size_t) LBFGS_M * p, sizeof(double));
	lb->rho = calloc(LBFGS_M, sizeof(double));
	lb->alpha = calloc(LBFGS_M, sizeof(double));
	lb->dir = calloc(p, sizeof(double));
	lb->tnew = calloc(p, sizeof(double));
	lb->gnew = calloc(p, sizeof(double));
	return (lb->S && lb->Y && lb->rho && lb->alpha && lb->dir && lb->tnew &&
			lb->gnew) ? 0 : -1;
}

static void
LbfgsFree(Lbfgs *lb)
{
	free(lb->S);
	free(lb->Y);
	free(lb->rho);
	free(lb->alpha);
	free(lb->dir);
	free(lb->tnew);
	free(lb->gnew);
}

/*
 * lb->dir = -H g by the two-loop recursion; returns g'dir, restarting
 * from -g (and forgetting the memory) when rounding made it no descent.
 */
static double
LbfgsDirection(Lbfgs *lb, const double *g)
{
	int			p = lb->p;
	double	   *dir = lb->dir;
	double		gd;

	for (int i = 0; i < p; i++)
		dir[i] = -g[i];
	for (int j = 0; j < lb->hist; j++)
	{
		int			s = (lb->head - 1 - j + LBFGS_M) % LBFGS_M;

		lb->alpha[s] = lb->rho[s] * Dot(lb->S + (size_t) s * p, dir, p);
		cblas_daxpy(p, -lb->alpha[s], lb->Y + (size_t) s * p, 1, dir, 1);
	}
	if (lb->hist > 0)
	{
		int			s = (lb->head - 1 + LBFGS_M) % LBFGS_M;
		double		gamma = Dot(lb->S + (size_t) s * p, lb->Y + (size_t) s * p, p) /
			Dot(lb->Y + (size_t) s * p, lb->Y + (size_t) s * p, p);

		cblas_dscal(p, gamma, dir, 1);
	}
	for (int j = lb->hist - 1; j >= 0; j--)
	{
		int			s = (lb->head - 1 - j + LBFGS_M) % LBFGS_M;
		double		beta = lb->rho[s] * Dot(lb->Y + (size_t) s * p, dir, p);

		cblas_daxpy(p, lb->alpha[s] - beta, lb->S + (size_t) s * p, 1, dir, 1);
	}
	gd = Dot(g, dir, p);
	if (!(gd < 0.0))
	{
		for (int i = 0; i < p; i++)
			dir[i] = -g[i];
		gd = Dot(g, dir, p);
		lb->hist = 0;
	}
	return gd;
}

/*
 * Backtracking on the Armijo condition from theta along lb->dir: the
 * accepted point and its gradient are left in lb->tnew and lb->gnew.
 * Returns 0 when no step of 30 halvings decreases f enough.
 */
static int
LbfgsLineSearch(Lbfgs *lb, SoftmaxProblem *pr, const double *theta, double f,
				double gd, double *fnew)
{
	double		step = (lb->hist == 0) ? fmin(1.0, 1.0 / sqrt(-gd)) : 1.0;

	for (int ls = 0; ls < 30; ls++)
	{
		for (int i = 0; i < lb->p; i++)
			lb->tnew[i] = theta[i] + step * lb->dir[i];
		*fnew = SafeEval(pr, lb->tnew, lb->gnew);
		if (*fnew <= f + 1e-4 * step * gd)
			return 1;
		step *= 0.5;
	}
	return 0;
}

/* remember the step to lb->tnew if the curvature condition holds */
static void
LbfgsRemember(Lbfgs *lb, const double *theta, const double *g)
{
	int			p = lb->p;
	double	   *s = lb->S + (size_t) lb->head * p;
	double	   *yv = lb->Y + (size_t) lb->head * p;
	double		sy;

	for (int i = 0; i < p; i++)
	{
		s[i] = lb->tnew[i] - theta[i];
		yv[i] = lb->gnew[i] - g[i];
	}
	sy = Dot(s, yv, p);
	if (sy > 1e-12 * Dot(yv, yv, p))
	{
		lb->rho[lb->head] = 1.0 / sy;
		lb->head = (lb->head + 1) % LBFGS_M;
		if (lb->hist < LBFGS_M)
			lb->hist++;
	}
}

/*
 * Minimise the objective from theta (updated in place) by L-BFGS until the
 * largest gradient entry is <= tol or max_iter iterations.  Sets
 * res->train_loss and res->epochs; -1 when cancelled or out of memory.
 */
static int
SoftmaxMinimize(const TrContext *ctx, SoftmaxProblem *pr, double *theta, int p,
				TrResult *res)
{
	int			max_iter = TrParamInt(ctx->params, "max_iter",
									  TrParamInt(ctx->params, "epochs", 100));
	double		tol = TrParamDouble(ctx->params, "tol", 1e-4);
	double	   *g = calloc(p, sizeof(double));
	Lbfgs		lb;
	int			iter = 0,
				rc = -1;
	double		f;

	if (LbfgsInit(&lb, p) != 0 || g == NULL)
	{
		TrSetError(res, "out of memory for softmax (%d parameters)", p);
		goto done;
	}
	f = SafeEval(pr, theta, g);
	while (iter < max_iter)
	{
		double		gmax = 0.0,
					gd,
					fnew = f;

		for (int i = 0; i < p; i++)
			gmax = fmax(gmax, fabs(g[i]));
		if (gmax <= tol)
			break;
		if (TrCancelled(ctx))
		{
			TrSetError(res, "cancelled");
			goto done;
		}
		gd = LbfgsDirection(&lb, g);
		if (!LbfgsLineSearch(&lb, pr, theta, f, gd, &fnew))
			break;				/* no progress possible at float precision */
		iter++;
		LbfgsRemember(&lb, theta, g);
		memcpy(theta, lb.tnew, sizeof(double) * p);
		memcpy(g, lb.gnew, sizeof(double) * p);
		f = fnew;
		TrReportProgress(ctx, iter, f);
	}
	res->train_loss = f;
	res->epochs = iter;
	rc = 0;
done:
	LbfgsFree(&lb);
	free(g);
	return rc;
}

/* validation accuracy at theta, on the GPU when the fit ran there */
static int
SoftmaxScore(const TrContext *ctx, SoftmaxProblem *pr, const double *theta,
			 TrResult *res)
{
	const TrData *data = ctx->data;
	int		   *pred = malloc(sizeof(int) * (data->n_val > 0 ? data->n_val : 1));
	int			status = TR_GPU_OK;

	if (pred == NULL)
	{
		TrSetError(res, "out of memory for softmax predictions");
		return -1;
	}
	if (pr->dev != NULL)
	{
		/* a failed evaluation reads as no progress: look before predicting */
		status = SoftmaxDevStatus(pr->dev);
		if (status == TR_GPU_OK)
			status = SoftmaxDevPredict(pr->dev, theta, data->n_classes, pred);
	}
	else
		SoftmaxPredict(theta, pr->d, pr->k, data->n_classes, data->Xva,
					   data->n_val, pred, pr->Wf, pr->Z);
	if (status != TR_GPU_OK)
	{
		TrGpuFailed(ctx->gpu, status, "softmax", res);
		free(pred);
		return -1;
	}
	res->score = TrAccuracy(pred, data->yva, data->n_val);
	free(pred);
	return 0;
}

/* the problem's buffers, and its GPU state when the fit runs on one */
static int
SoftmaxProblemInit(const TrContext *ctx, SoftmaxProblem *pr, TrResult *res)
{
	const TrData *data = ctx->data;
	int			nclass = data->n_classes,
				d = data->d,
				k = nclass == 2 ? 1 : nclass;
	size_t		nrows = (size_t) (data->n_val > SOFTMAX_BLOCK ? data->n_val : SOFTMAX_BLOCK);
	int			status;

	memset(pr, 0, sizeof(*pr));
	pr->X = data->Xtr;
	pr->y = data->ytr;
	pr->n = data->n_train;
	pr->d = d;
	pr->k = k;
	pr->l2 = TrParamDouble(ctx->params, "l2", 1e-4);
	pr->Wf = malloc(sizeof(float) * (size_t) d * k);
	pr->Gf = malloc(sizeof(float) * (size_t) d * k);
	pr->Z = malloc(sizeof(float) * nrows * k);
	if (!pr->Wf || !pr->Gf || !pr->Z)
	{
		TrSetError(res, "out of memory for softmax (%d features x %d classes)", d, nclass);
		return -1;
	}
	if (ctx->gpu == NULL)
		return 0;
	pr->dev = SoftmaxDevBegin(ctx->gpu, data, k, &status);
	if (pr->dev == NULL)
	{
		TrSetError(res, "out of memory for softmax (%d features x %d classes)", d, nclass);
		return -1;
	}
	if (status != TR_GPU_OK)
	{
		TrGpuFailed(ctx->gpu, status, "softmax", res);
		return -1;
	}
	return 0;
}

static int
SoftmaxFit(const TrContext *ctx, TrResult *res)
{
	const TrData *data = ctx->data;
	int			d = data->d,
				k = data->n_classes == 2 ? 1 : data->n_classes;
	int			p = (d + 1) * k;
	SoftmaxProblem pr;
	double	   *theta = calloc(p, sizeof(double));
	int			rc = -1;

	if (theta == NULL)
	{
		TrSetError(res, "out of memory for softmax (%d parameters)", p);
		return -1;
	}
	if (SoftmaxProblemInit(ctx, &pr, res) != 0 ||
		SoftmaxMinimize(ctx, &pr, theta, p, res) != 0 ||
		SoftmaxScore(ctx, &pr, theta, res) != 0)
		goto done;
	{
		TrArtifact art;
		int64_t		dims[2] = {d, k};

		TrArtifactBegin(&art, "softmax", data);
		TrArtifactAdd(&art, "W", TR_DT_F64, 2, dims, theta);
		dims[0] = k;
		TrArtifactAdd(&art, "b", TR_DT_F64, 1, dims, theta + (size_t) d * k);
		if (TrArtifactFinish(&art, res) != 0)
			goto done;
	}
	rc = 0;
done:
	free(theta);
	free(pr.Wf);
	free(pr.Gf);
	free(pr.Z);
	SoftmaxDevEnd(pr.dev);
	return rc;
}

static const TrParamSpec softmax_params[] = {
	{"l2", TR_PARAM_DOUBLE, 0.0, 1e6, NULL,
	"L2 penalty on W per mean loss (default 1e-4; sklearn C = 1/(l2 n))"},
	{"max_iter", TR_PARAM_INT, 1, 100000, NULL, "L-BFGS iterations (default 100)"},
	{"epochs", TR_PARAM_INT, 1, 100000, NULL, "alias of max_iter"},
	{"tol", TR_PARAM_DOUBLE, 0.0, 1.0, NULL,
	"stop when max |gradient| <= tol (default 1e-4)"},
	{NULL}
};

const TrFamily TrFamilySoftmax = {
	.name = "softmax",
	.supports_classification = 1,
	.supports_regression = 0,
	.needs_image = 0,
	.fit = SoftmaxFit,
	.params = softmax_params,
	.summary = "multinomial logistic regression, L2, L-BFGS",
	.fit_gpu = SoftmaxFit,		/* evaluations on ctx->gpu */
};
