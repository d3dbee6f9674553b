/*-------------------------------------------------------------------------
 *
 * costmodel.c
 *	  The live scheduler's cost model (see costmodel.h for the model).
 *
 * Fitting, in order:
 *
 * 1. Overhead.  Per measured task, the median of (wall - train seconds)
 *	  over its runs (0.8 x its shortest run if its trainer reports no fit
 *	  times); then o0 + o1 x cells by least squares over tasks,
 *	  o0 >= OVERHEAD_MIN and o1 >= 0 (one task: o1 keeps its reference).
 * 2. Rates, from the trainer's fit time of runs that trained at least
 *	  WORK_MIN seconds (shorter fits are mostly fixed costs that the formula
 *	  does not describe; their wall time is the overhead's business; a
 *	  trainer that reports no fit time: wall time past the overhead):
 *	  y = ln(train) - ln(complexity) - ln(reference rate).  A family's
 *	  regression and classification tasks form two groups.  The machine
 *	  factor is the median over groups of their mean y (shrunk toward 0 as
 *	  if one more group had measured 0), a group's offset the mean of the
 *	  rest over its runs (FAMILY_PRIOR pseudo-runs), a model's the mean of
 *	  what is left (MODEL_PRIOR), over both kinds.
 * 3. The residual prior: covariance TASK_VAR for every pair of models,
 *	  plus FAMILY_VAR within a family, plus MODEL_VAR on the diagonal;
 *	  noise NOISE_VAR.  With one heavy run of a task, every other model's
 *	  estimate moves by TASK_VAR / (sum) of its log residual, those of its
 *	  family by (TASK_VAR + FAMILY_VAR) / (sum).
 *
 * The reference rates and variances are fixed constants, documented in
 * docs/scheduler.md with how they were obtained; they matter only until a
 * family has measured runs on this machine.
 *
 * IDENTIFICATION
 *	  src/costmodel.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "gp.h"

/* Reference overhead before any run: 0.1 s plus 0.5 us per cell. */
#define REF_O0			0.1
#define REF_O1			0.5e-6
#define OVERHEAD_MIN	0.01
/* Fits shorter than this do not teach the rates. */
#define WORK_MIN		0.1
#define MACHINE_PRIOR	1.0
#define FAMILY_PRIOR	2.0
#define MODEL_PRIOR		1.0
/* Residual prior (natural log units, variances). */
#define TASK_VAR		0.09
#define FAMILY_VAR		0.25
#define MODEL_VAR		0.09
#define NOISE_VAR		0.04

typedef struct FamilyRef
{
	const char *name;
	CostFormula formula;
	double		rate;			/* seconds per unit of complexity */
} FamilyRef;

/*
 * Reference rates: the trainer's fit seconds per unit of complexity, the
 * geometric mean of two runs of scripts/bench/cost_calibrate.sh 600 on
 * data sets that are neither the demo's nor the cost benchmark's new task
 * (the runs differed by up to 2x on the loaded machine; gnb from a run
 * with 1500 rows: its fits on 600 are all too short to count).  The last
 * entry, for any other family, is softmax's: a custom trainer's work is
 * its cost_factor.
 */
static const FamilyRef family_refs[] = {
	{"softmax", COST_LINEAR, 4.17e-08},
	{"linear_svm", COST_LINEAR, 2.58e-07},
	{"gbt", COST_LINEAR, 5.16e-06},
	{"ridge", COST_RIDGE, 3.26e-10},
	{"knn", COST_KNN, 2.67e-10},
	{"random_forest", COST_FOREST, 2.24e-06},
	{"gnb", COST_NB, 6.82e-9},
	{"mlp", COST_MLP, 7.4e-10},
	{"cnn", COST_NET, 4.06e-09},
	{NULL, COST_LINEAR, 4.17e-08}
};

static const FamilyRef *
RefOf(const char *family)
{
	const FamilyRef *f = family_refs;

	for (; f->name != NULL; f++)
		if (family != NULL && strcmp(family, f->name) == 0)
			break;
	return f;
}

CostFormula
CostFormulaOf(const char *family)
{
	return RefOf(family)->formula;
}

double
CostReferenceRate(const char *family)
{
	return RefOf(family)->rate;
}

int
CostFamilyKnown(const char *family)
{
	return RefOf(family)->name != NULL;
}

double
CostLogComplexity(const CostArm *a, double n, double d, double c)
{
	double		per_class,
				x;

	n = n > 1 ? n : 1;
	d = d > 1 ? d : 1;
	c = c > 1 ? c : 1;
	per_class = (a->per_class && c > 2) ? c : 1;
	switch (a->formula)
	{
		case COST_RIDGE:
			x = n * d * (d + c);
			break;
		case COST_KNN:
			x = n * n * d;
			break;
		case COST_FOREST:
			{
				double		depth = log2(n + 1);

				if (a->inner >= 1 && a->inner < depth)
					depth = a->inner;
				x = n * depth * (a->width > 0 && a->width <= 1 ? a->width * d : sqrt(d));
				break;
			}
		case COST_NB:
			x = n * d * c;
			break;
		case COST_NET:
		case COST_MLP:
			x = d * (a->width > 0 ? a->width : 1) + (a->inner > 0 ? a->inner : 0) +
				(a->out > 0 ? a->out : 0) * c;
			if (a->formula == COST_NET)
				x *= n;
			else
			{
				/* src/trainer/tr_mlp.c: 80% of the rows train, in batches of 200 */
				double		train = 0.8 * n;
				double		epochs = ceil(2000 / ceil(train / 200));

				x *= train * (epochs < 10 ? 10 : epochs > 200 ? 200 : epochs);
			}
			break;
		case COST_LINEAR:
		default:
			x = n * d;
			break;
	}
	return log(x * per_class * (a->work > 0 ? a->work : 1));
}

static int
CmpDouble(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Median of v[0..n-1] (sorted in place); n > 0. */
static double
Median(double *v, int n)
{
	qsort(v, n, sizeof(double), CmpDouble);
	return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Step 1: o0 and o1 from each task's median non-fit time. */
static void
FitOverhead(CostModel *m, const double *sizes, const double *seconds,
			const double *train, int mc, double *buf)
{
	double		sx = 0,
				sy = 0,
				sxx = 0,
				sxy = 0;
	double	   *cells = buf,
			   *other = buf + mc,
			   *tmp = buf + 2 * mc;
	int			nt = 0;

	m->o0 = REF_O0;
	m->o1 = REF_O1;
	for (int i = 0; i < mc; i++)
	{
		int			n = 0;
		double		shortest = INFINITY;

		for (int k = 0; k < m->K; k++)
		{
			double		s = seconds[(size_t) i * m->K + k];
			double		t = train ? train[(size_t) i * m->K + k] : NAN;

			if (s > 0 && t >= 0 && t < s)
				tmp[n++] = s - t;
			if (s > 0 && s < shortest)
				shortest = s;
		}
		if (n == 0 && !isfinite(shortest))
			continue;
		cells[nt] = sizes[3 * i] * sizes[3 * i + 1];
		/* no fit times reported: 0.8 x the task's shortest run */
		other[nt] = n > 0 ? Median(tmp, n) : 0.8 * shortest;
		nt++;
	}
	m->n_tasks = nt;
	if (nt == 0)
		return;
	for (int i = 0; i < nt; i++)
	{
		sx += cells[i];
		sy += other[i];
		sxx += cells[i] * cells[i];
		sxy += cells[i] * other[i];
	}
	if (nt >= 2 && sxx * nt - sx * sx > 1e-12 * sxx * nt)
		m->o1 = (sxy * nt - sx * sy) / (sxx * nt - sx * sx);
	if (m->o1 < 0)
		m->o1 = 0;
	m->o0 = (sy - m->o1 * sx) / nt;
	if (m->o0 < OVERHEAD_MIN)
	{
		/* the line through the floor: o1 by least squares on what is left */
		m->o0 = OVERHEAD_MIN;
		m->o1 = 0;
		for (int i = 0; i < nt; i++)
			m->o1 += cells[i] * (other[i] - m->o0);
		m->o1 = m->o1 > 0 ? m->o1 / sxx : 0;
	}
}

/*
 * y of run (i, k) for the rates: ln(train) - ln(complexity x reference
 * rate); 0 when the run does not teach the rates (see header).
 */
static int
RateY(const CostModel *m, const double *sizes, const double *seconds,
	  const double *train, int i, int k, double *y)
{
	const CostArm *a = &m->arms[k];
	double		s = seconds[(size_t) i * m->K + k];
	double		t = train ? train[(size_t) i * m->K + k] : NAN;

	/* a trainer that did not report its fit time: the wall time past the overhead */
	if (isnan(t))
	{
		double		o = CostOverhead(m, sizes[3 * i], sizes[3 * i + 1]);

		t = s >= 1.5 * o ? s - o : NAN;
	}
	if (!(s > 0) || !(t >= WORK_MIN) || !(t <= s) || !isfinite(s))
		return 0;
	*y = log(t) - CostLogComplexity(a, sizes[3 * i], sizes[3 * i + 1], sizes[3 * i + 2]) -
		log(a->ref_rate);
	return 1;
}

/*
 * A family's group: its regression tasks apart from its classification
 * ones (a regression forest grows far more nodes than a classification
 * forest on data of the same size).  Task i is a regression task when it
 * has 1 class.
 */
#define GROUP(m, k, sizes, i) (2 * (m)->arms[k].family + ((sizes)[3 * (i) + 2] <= 1 ? 1 : 0))

/* Step 2: the machine factor, family and model offsets (see header). */
static void
FitRates(CostModel *m, const double *sizes, const double *seconds,
		 const double *train, int mc, int n_grp, double *buf)
{
	int			K = m->K;
	/* arm_off and arm_n (2 K >= n_grp) first hold the groups' means */
	double	   *grp_off = buf,
			   *grp_n = buf + n_grp,
			   *arm_off = buf + 2 * n_grp,
			   *arm_n = buf + 2 * n_grp + K;
	double		y;
	int			n = 0,
				n_used = 0;

	memset(buf, 0, sizeof(double) * (2 * n_grp + 2 * K));
	/* the machine factor: the median of the groups' mean y */
	for (int i = 0; i < mc; i++)
		for (int k = 0; k < K; k++)
			if (RateY(m, sizes, seconds, train, i, k, &y))
			{
				grp_off[GROUP(m, k, sizes, i)] += y;
				grp_n[GROUP(m, k, sizes, i)] += 1;
				n++;
			}
	for (int g = 0; g < n_grp; g++)
		if (grp_n[g] > 0)
			arm_off[n_used++] = grp_off[g] / grp_n[g];
	m->n_work = n;
	m->machine = n_used > 0 ? Median(arm_off, n_used) * n_used / (n_used + MACHINE_PRIOR) : 0;
	memset(buf, 0, sizeof(double) * (2 * n_grp + 2 * K));
	for (int i = 0; i < mc; i++)
		for (int k = 0; k < K; k++)
			if (RateY(m, sizes, seconds, train, i, k, &y))
			{
				grp_off[GROUP(m, k, sizes, i)] += y - m->machine;
				grp_n[GROUP(m, k, sizes, i)] += 1;
			}
	for (int g = 0; g < n_grp; g++)
		grp_off[g] /= grp_n[g] + FAMILY_PRIOR;
	for (int i = 0; i < mc; i++)
		for (int k = 0; k < K; k++)
			if (RateY(m, sizes, seconds, train, i, k, &y))
			{
				arm_off[k] += y - m->machine - grp_off[GROUP(m, k, sizes, i)];
				arm_n[k] += 1;
			}
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < K; k++)
			m->log_rate[r * K + k] = log(m->arms[k].ref_rate) + m->machine +
				grp_off[2 * m->arms[k].family + r] + arm_off[k] / (arm_n[k] + MODEL_PRIOR);
}

/* Step 3: the residual prior over the K models. */
static int
FitResidualPrior(CostModel *m)
{
	int			K = m->K;
	GpPrior    *p = &m->resid;

	memset(p, 0, sizeof(*p));
	p->K = K;
	p->mu0 = calloc(K, sizeof(double));
	p->cov = malloc(sizeof(double) * (size_t) K * K);
	if (p->mu0 == NULL || p->cov == NULL)
		return -1;
	for (int i = 0; i < K; i++)
		for (int j = 0; j < K; j++)
			p->cov[(size_t) i * K + j] = TASK_VAR +
				(m->arms[i].family == m->arms[j].family ? FAMILY_VAR : 0) +
				(i == j ? MODEL_VAR : 0);
	p->noise_var = NOISE_VAR;
	p->mean_diag = TASK_VAR + FAMILY_VAR + MODEL_VAR + NOISE_VAR;
	p->kernel = GP_KERNEL_EMPIRICAL;
	p->heldout_loglik = NAN;
	return 0;
}

int
CostModelFit(CostModel *m, const CostArm *arms, int K, const double *sizes,
			 const double *seconds, const double *train, int mc)
{
	int			n_fam = 0;
	double	   *buf;
	size_t		nbuf;

	memset(m, 0, sizeof(*m));
	if (K <= 0 || arms == NULL || mc < 0 || (mc > 0 && (sizes == NULL || seconds == NULL)))
		return -1;
	for (int k = 0; k < K; k++)
	{
		if (arms[k].family < 0 || !(arms[k].ref_rate > 0) || arms[k].formula < 0 ||
			arms[k].formula >= COST_FORMULAS)
			return -1;
		if (arms[k].family + 1 > n_fam)
			n_fam = arms[k].family + 1;
	}
	for (int i = 0; i < mc; i++)
		if (!(sizes[3 * i] > 0) || !(sizes[3 * i + 1] > 0) || !(sizes[3 * i + 2] > 0))
			return -1;
	m->K = K;
	m->arms = malloc(sizeof(CostArm) * K);
	m->log_rate = malloc(sizeof(double) * 2 * K);
	nbuf = 4 * (size_t) n_fam + 2 * (size_t) K + 2 * (size_t) mc + (size_t) K + 1;
	buf = malloc(sizeof(double) * nbuf);
	if (m->arms == NULL || m->log_rate == NULL || buf == NULL)
	{
		free(buf);
		CostModelFree(m);
		return -1;
	}
	memcpy(m->arms, arms, sizeof(CostArm) * K);
	FitOverhead(m, sizes, seconds, train, mc, buf);
	FitRates(m, sizes, seconds, train, mc, 2 * n_fam, buf);
	free(buf);
	if (FitResidualPrior(m) < 0)
	{
		CostModelFree(m);
		return -1;
	}
	return 0;
}

void
CostModelFree(CostModel *m)
{
	free(m->arms);
	free(m->log_rate);
	GpPriorFree(&m->resid);
	memset(m, 0, sizeof(*m));
}

double
CostOverhead(const CostModel *m, double n, double d)
{
	return m->o0 + m->o1 * (n > 1 ? n : 1) * (d > 1 ? d : 1);
}

void
CostLogBase(const CostModel *m, double n, double d, double c, double *log_base)
{
	for (int k = 0; k < m->K; k++)
		log_base[k] = m->log_rate[(c <= 1 ? m->K : 0) + k] +
			CostLogComplexity(&m->arms[k], n, d, c);
}

double
CostTaskOverhead(const CostModel *m, double n, double d,
				 const double *log_base, const double *seconds)
{
	double		model = CostOverhead(m, n, d);
	double		sum = log(model);
	int			cnt = 1;

	for (int k = 0; k < m->K; k++)
		if (seconds[k] > 0 && isfinite(seconds[k]) && exp(log_base[k]) < 0.2 * model)
		{
			sum += log(seconds[k]);
			cnt++;
		}
	return exp(sum / cnt);
}

double
CostResidual(double seconds, double overhead, double log_base)
{
	double		work = seconds - overhead;

	if (!(seconds > 0) || !isfinite(seconds))
		return NAN;
	/* neither the measured nor the expected work is more than noise */
	if (work < 0.5 * overhead && exp(log_base) < 0.5 * overhead)
		return NAN;
	/* a run far shorter than expected: its work is below a quarter overhead */
	return log(work > 0.25 * overhead ? work : 0.25 * overhead) - log_base;
}

int
CostTaskEstimate(const CostModel *m, double n, double d, double c,
				 const double *seconds, double *log_base, double *overhead,
				 double *cost)
{
	double	   *base = log_base ? log_base : malloc(sizeof(double) * m->K);
	double		o;
	GpState		g;
	int			rc = 0;

	if (base == NULL)
		return -1;
	CostLogBase(m, n, d, c, base);
	o = CostTaskOverhead(m, n, d, base, seconds);
	if (GpStateInit(&g, &m->resid, 8) == GP_OK)
	{
		for (int k = 0; k < m->K; k++)
		{
			double		r = CostResidual(seconds[k], o, base[k]);

			/* GP_JITTER is fine; a refused one leaves the state as it was */
			if (!isnan(r))
				(void) GpStateAdd(&g, k, r);
		}
		for (int k = 0; k < m->K; k++)
			cost[k] = o + exp(base[k] + g.mu[k]);
		GpStateFree(&g);
	}
	else
	{
		for (int k = 0; k < m->K; k++)
			cost[k] = o + exp(base[k]);
		rc = -1;
	}
	if (overhead)
		*overhead = o;
	if (base != log_base)
		free(base);
	return rc;
}
