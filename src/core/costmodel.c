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
 * 2. Passes of the families that stop when they converge (softmax, mlp,
 *	  linear_svm): per group (as below) the mean log passes runs reported,
 *	  with STOP_PRIOR pseudo-runs at the family's reference passes, and a
 *	  model's offset with MODEL_PRIOR.  An estimate makes min(most passes,
 *	  that), its time that share of the most passes' to the family's pass
 *	  power (linear_svm: its square root).
 * 3. Rates, from the trainer's fit time of runs that trained at least
 *	  WORK_MIN seconds (shorter fits are mostly fixed costs that the formula
 *	  does not describe; their wall time is the overhead's business; a
 *	  trainer that reports no fit time: wall time past the overhead):
 *	  y = ln(train) - ln(complexity) - ln(reference rate) - ln(the share
 *	  of its most passes' time the run took, for early stoppers), the
 *	  complexity with the task's histogram bins where known.  A family's
 *	  regression and classification tasks form two groups.  The machine
 *	  factor is the median over groups of their mean y (shrunk toward 0 as
 *	  if one more group had measured 0), a group's offset the mean of the
 *	  rest over its runs (FAMILY_PRIOR pseudo-runs), a model's the mean of
 *	  what is left (MODEL_PRIOR), over both kinds.
 * 4. The residual prior: covariance TASK_VAR for every pair of models,
 *	  plus FAMILY_VAR within a family, plus MODEL_VAR on the diagonal;
 *	  noise NOISE_VAR.  With one heavy run of a task, every other model's
 *	  estimate moves by TASK_VAR / (sum) of its log residual, those of its
 *	  family by (TASK_VAR + FAMILY_VAR) / (sum).
 *
 * The reference rates and variances are fixed constants, documented in
 * docs/scheduler.md 7.4 with how they were obtained; they matter only until a
 * family has measured runs on this machine.
 *
 * IDENTIFICATION
 *	  src/core/costmodel.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "gp.h"
#include "sortutil.h"

/*
 * Early-stopping families: per-pass rates and passes made (family_refs),
 * from one run of cost_calibrate.sh 600 (load average about 10).
 */
#define SOFTMAX_RATE	4.79e-08
#define SOFTMAX_PASSES	28.5
#define MLP_RATE		2.74e-10
#define MLP_PASSES		146.5
/*
 * linear_svm (dual coordinate descent, at most max_iter = 1,000 passes,
 * stops at tol): its passes shrink the rows they visit as it converges,
 * so a fit's time grows about as the square root of its passes (the
 * trainer alone, C from 0.01 to 10 on one data set: the power fitted from
 * the fewest and the most passes was 0.40 to 0.64 on the calibration sets,
 * 0.44 to 0.71 on digits, segment and Fashion-MNIST).  SVM_PASSES is the
 * geometric mean of the passes its calibration runs made (8 to 1,000); its
 * rate, per fit of all 1,000 passes, is the previous whole-fit reference
 * (2.58e-7) over (SVM_PASSES / 1,000)^SVM_POWER.
 */
#define SVM_POWER		0.5
#define SVM_PASSES		105.0
#define SVM_RATE		7.96e-07
/*
 * An mlp's element-wise work per hidden unit and row (bias, ReLU and its
 * derivative: scalar loops, not GEMM), in multiply-adds of its products:
 * the value that fits the calibration runs best (sd of ln(rate) 0.37,
 * against 0.63 for products alone: wide inputs ran faster per product).
 */
#define MLP_UNIT		50
/*
 * knn's work: a distance and a place in the k nearest for each pair of a
 * validation and a training row, whatever the features (the GEMM's d
 * multiply-adds per pair cost less than the scalar selection), plus work
 * per cell of the task's rows (the model is its training rows: stored in
 * its artifact and scored through it), KNN_CELL pairs' worth: the value
 * that fits the calibration runs of credit-g (1,000 x 20) and 600 rows of
 * Fashion-MNIST (x 784), whose times per pair differed 15x.
 */
#define KNN_CELL		2.26
#define KNN_RATE		7.4e-09
/*
 * gbt (src/trainer/families/tr_gbt.c): a tree histograms its root's rows (n d), a
 * child per split (the smaller; the larger is subtracted) and scans every
 * histogram bin of the data per split (subtraction, two split searches):
 * leaves x bins, at most max_leaves (31) and one per min_samples_leaf (20)
 * training rows.  Bins are the data's: a feature has as many as it has
 * distinct values, at most GBT_MAX_BINS.  Measured with the trainer alone,
 * the bins term is most of a tree on small continuous data (breast cancer,
 * 30 continuous features: 7,432 bins a split, 13,650 cells a tree) and
 * little on images of few levels (digits: 883 bins, 92,000 cells); the
 * same digits with noise added (16,320 bins) fitted 5x to 8x slower.
 */
#define GBT_LEAVES		31
#define GBT_MIN_LEAF	20
#define GBT_MAX_BINS	255
#define GBT_MOST_BINS	256		/* a feature's most bins in the trainer
								 * (TREE_MAX_BINS): a reported total above d
								 * x this is not believed */
#define GBT_RATE		8.3e-07
/*
 * A regression tree splits until its leaves reach the minimum size (a
 * continuous target is never pure), a classification tree stops at pure
 * nodes: the trainer alone, random_forest with 200 trees on credit-g,
 * glass and ionosphere, each with a numeric column as the target instead
 * of the class, grew 3.1x, 3.0x and 6.8x the nodes in 3.8x, 2.5x and 6.8x
 * the time; FOREST_REGRESSION is their geometric mean.
 */
#define FOREST_REGRESSION 4.0

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
/* Pseudo-runs at the reference passes of an early-stopping family. */
#define STOP_PRIOR		2.0
/*
 * The task's part of an early-stopping family's passes (TaskPassShift):
 * the passes an mlp makes are set by the task more than by the model (the
 * demo's and the benchmark's runs: on segment and diabetes every mlp but
 * the widest made all its 200 epochs, on digits mlp-256-128 stopped at 60,
 * on breast cancer at 75).  A two-way fit of ln(passes) = model + task
 * over those runs' 19 uncensored cells gave task parts from -0.62 to +0.99
 * (sd 0.6) and a residual sd of 0.09; the noise allows for the error of a
 * model's learned passes too.
 */
#define TASK_PASS_SD	0.6
#define PASS_NOISE_SD	0.25
#define PASS_GRID		121
#define PASS_GRID_LO	(-3.0)
#define PASS_GRID_STEP	0.05

typedef struct FamilyRef
{
	const char *name;
	CostFormula formula;
	double		rate;			/* seconds per unit of complexity */
	double		max_passes;		/* early stopping: most passes at work 1 */
	double		passes;			/* early stopping: passes made (0: none) */
	double		power;			/* time ~ passes^power (0: 1) */
} FamilyRef;

/*
 * Reference rates: the trainer's fit seconds per unit of complexity, the
 * geometric mean of two runs of scripts/bench/cost_calibrate.sh 600 on
 * data sets that are neither the demo's nor the cost benchmark's new task
 * (the runs differed by up to 2x on the loaded machine; gnb from a run
 * with 1500 rows: its fits on 600 are all too short to count).  A custom
 * trainer's work is its cost_factor.
 *
 * Families whose trainer stops when it converges (softmax: max |gradient|
 * <= tol, at most max_iter L-BFGS iterations, default 100; mlp: no loss
 * improvement for 10 epochs, at most its epochs rule) count every pass in
 * their complexity; their rate is per pass made, and passes is the
 * geometric mean of the passes the calibration runs made
 * (cost_calibrate.sh, which divides each run's rate by the share of its
 * passes it made).  linear_svm stops early too, but its dual coordinate
 * descent shrinks the rows it visits as it converges: its fit time follows
 * its passes loosely and by data set (digits: 106 to 1,000 passes, 0.12 to
 * 0.15 s; segment: 141 to 1,000, 0.05 to 0.57 s), so its complexity is one
 * pass's and its per-model rate absorbs them.  The last entry, for any
 * other family, keeps the softmax rate of the first calibration (whole
 * fits): a custom trainer reports no passes.
 */
static const FamilyRef family_refs[] = {
	{"softmax", COST_LINEAR, SOFTMAX_RATE, 100, SOFTMAX_PASSES, 1},
	{"linear_svm", COST_LINEAR, SVM_RATE, 1000, SVM_PASSES, SVM_POWER},
	{"gbt", COST_BOOST, GBT_RATE, 0, 0, 0},
	{"ridge", COST_RIDGE, 3.26e-10, 0, 0, 0},
	{"knn", COST_KNN, KNN_RATE, 0, 0, 0},
	{"random_forest", COST_FOREST, 2.24e-06, 0, 0, 0},
	{"gnb", COST_NB, 6.82e-9, 0, 0, 0},
	{"mlp", COST_MLP, MLP_RATE, 0, MLP_PASSES, 1},
	{"cnn", COST_NET, 4.06e-09, 0, 0, 0},
	{NULL, COST_LINEAR, 4.17e-08, 0, 0, 0}
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
CostReferencePasses(const char *family, double *max_passes)
{
	if (max_passes)
		*max_passes = RefOf(family)->max_passes;
	return RefOf(family)->passes;
}

double
CostReferencePassPower(const char *family)
{
	return RefOf(family)->power > 0 ? RefOf(family)->power : 1;
}

/* how a fit's time grows with its passes */
static double
PassPower(const CostArm *a)
{
	return a->pass_power > 0 ? a->pass_power : 1;
}

/* src/trainer/families/tr_mlp.c: about 2,000 steps of 200 rows, 10 to 200 epochs */
static double
MlpEpochs(double train_rows)
{
	double		epochs = ceil(2000 / ceil(train_rows / 200));

	return epochs < 10 ? 10 : epochs > 200 ? 200 : epochs;
}

/*
 * A fit's training rows: with folds, the other folds' rows; else 80%
 * (the trainer's validation split of 20%).
 */
static double
TrainRows(double rows, double folds)
{
	return folds > 1 ? rows * (folds - 1) / folds : 0.8 * rows;
}

double
CostMaxPasses(const CostArm *a, double n, double folds)
{
	double		work = a->work > 0 ? a->work : 1;

	if (!(a->ref_passes > 0))
		return 0;
	folds = folds > 1 ? folds : 1;
	n = n > 1 ? n : 1;
	if (a->formula == COST_MLP || !(a->max_passes > 0))
		return MlpEpochs(TrainRows(n / folds, folds)) * work;
	return a->max_passes * work;
}

/*
 * The formulas are in the rows n of a one-split task (the reference rates
 * are measured on such), whose fit trains on 0.8 n and scores 0.2 n.  A
 * k-fold task fits k times on (k - 1) / k of its rows and scores the rest:
 * each fit counts as a one-split task of n_fit = train / 0.8 rows, and
 * knn's work is validation rows x training rows, 0.16 n^2 for one split.
 */
double
CostLogComplexityBins(const CostArm *a, double n, double d, double c, double folds,
					  double bins)
{
	double		per_class,
				rows,
				fits,
				train,
				n_fit,
				x;

	n = n > 1 ? n : 1;
	d = d > 1 ? d : 1;
	c = c > 1 ? c : 1;
	fits = folds > 1 ? folds : 1;
	rows = n / fits;
	train = TrainRows(rows, fits);
	n_fit = train / 0.8;
	per_class = (a->per_class && c > 2) ? c : 1;
	switch (a->formula)
	{
		case COST_RIDGE:
			x = n_fit * d * (d + c);
			break;
		case COST_KNN:
			/* pairs of validation and training rows, and the rows' cells */
			x = (train * (rows - train) + KNN_CELL * rows * d) / 0.16;
			break;
		case COST_FOREST:
			{
				double		depth = log2(n_fit + 1);

				if (a->inner >= 1 && a->inner < depth)
					depth = a->inner;
				x = n_fit * depth * (a->width > 0 && a->width <= 1 ? a->width * d : sqrt(d));
				if (c <= 1)
					x *= FOREST_REGRESSION;
				break;
			}
		case COST_NB:
			x = n_fit * d * c;
			break;
		case COST_NET:
			x = d * (a->width > 0 ? a->width : 1) + (a->inner > 0 ? a->inner : 0) +
				(a->out > 0 ? a->out : 0) * c;
			x *= n_fit;
			break;
		case COST_MLP:
			{
				/* hidden units: the first and last layers (all of one or two) */
				double		units = (a->width > 0 ? a->width : 1) +
					(a->inner > 0 && a->out > 0 ? a->out : 0);

				x = d * (a->width > 0 ? a->width : 1) + (a->inner > 0 ? a->inner : 0) +
					(a->out > 0 ? a->out : 0) * c + MLP_UNIT * units;
				x *= train * MlpEpochs(train);
				break;
			}
		case COST_BOOST:
			{
				double		leaves = fmax(fmin(GBT_LEAVES, train / GBT_MIN_LEAF), 1);

				if (!(bins > 0) || !isfinite(bins))
					bins = d * fmin(GBT_MAX_BINS, fmax(train, 1));
				bins = fmin(bins, d * GBT_MOST_BINS);
				x = (train * d + leaves * bins) / 0.8;
				break;
			}
		case COST_LINEAR:
		default:
			x = n_fit * d;
			break;
	}
	return log(x * fits * per_class * (a->work > 0 ? a->work : 1));
}

double
CostLogComplexityK(const CostArm *a, double n, double d, double c, double folds)
{
	return CostLogComplexityBins(a, n, d, c, folds, NAN);
}

double
CostLogComplexity(const CostArm *a, double n, double d, double c)
{
	return CostLogComplexityK(a, n, d, c, 1);
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

/* Folds and histogram bins of measured task i. */
#define FOLDS(data, i) ((data)->folds && (data)->folds[i] > 1 ? (data)->folds[i] : 1)
#define BINS(data, i) ((data)->bins ? (data)->bins[i] : NAN)

/*
 * log of the share of its most passes' time that run (i, k) took: the
 * share of its passes it made (what it reported, else what the model
 * expects) to the arm's pass power; 0 for a family that does not stop
 * early.
 */
static double
LogPassShare(const CostModel *m, const CostData *data, int i, int k)
{
	const CostArm *a = &m->arms[k];
	double		most = CostMaxPasses(a, data->sizes[3 * i], FOLDS(data, i));
	double		p = data->passes ? data->passes[(size_t) i * m->K + k] : NAN;

	if (!(most > 0))
		return 0;
	if (!(p >= 1 && isfinite(p)))
		p = exp(m->log_stop[(data->sizes[3 * i + 2] <= 1 ? m->K : 0) + k]);
	return p < most ? PassPower(a) * log(p / most) : 0;
}

/*
 * y of run (i, k) for the rates: ln(train) - ln(complexity x reference
 * rate x the share of its passes it made); 0 when the run does not teach
 * the rates (see header).
 */
static int
RateY(const CostModel *m, const CostData *data, int i, int k, double *y)
{
	const CostArm *a = &m->arms[k];
	const double *sizes = data->sizes;
	double		s = data->seconds[(size_t) i * m->K + k];
	double		t = data->train ? data->train[(size_t) i * m->K + k] : NAN;

	/* a trainer that did not report its fit time: the wall time past the overhead */
	if (isnan(t))
	{
		double		o = CostOverhead(m, sizes[3 * i], sizes[3 * i + 1]);

		t = s >= 1.5 * o ? s - o : NAN;
	}
	if (!(s > 0) || !(t >= WORK_MIN) || !(t <= s) || !isfinite(s))
		return 0;
	*y = log(t) - CostLogComplexityBins(a, sizes[3 * i], sizes[3 * i + 1], sizes[3 * i + 2],
										FOLDS(data, i), BINS(data, i)) -
		log(a->ref_rate) - LogPassShare(m, data, i, k);
	return 1;
}

/*
 * A family's group: its regression tasks apart from its classification
 * ones (a regression forest grows far more nodes than a classification
 * forest on data of the same size).  Task i is a regression task when it
 * has 1 class.
 */
#define GROUP(m, k, sizes, i) (2 * (m)->arms[k].family + ((sizes)[3 * (i) + 2] <= 1 ? 1 : 0))

/* log of the passes run (i, k) made, at most its most; 0 if unknown. */
static int
StopZ(const CostModel *m, const CostData *data, int i, int k, double *z)
{
	double		most = CostMaxPasses(&m->arms[k], data->sizes[3 * i], FOLDS(data, i));
	double		p = data->passes ? data->passes[(size_t) i * m->K + k] : NAN;

	if (!(most > 0) || !(p >= 1) || !isfinite(p) || !(data->seconds[(size_t) i * m->K + k] > 0))
		return 0;
	*z = log(p < most ? p : most);
	return 1;
}

/*
 * Step 2: the passes of early-stopping arms (log_stop, see header), per
 * group as the rates are: the mean log passes of the group's runs with
 * STOP_PRIOR pseudo-runs at the family's reference passes, then a model's
 * offset from the mean of what is left with MODEL_PRIOR.  A run that made
 * its most passes counts them (it might have gone on: a low bound).
 */
static int
FitStops(CostModel *m, const CostData *data, int n_grp)
{
	int			K = m->K;
	double	   *grp = calloc(3 * (size_t) n_grp + 2 * (size_t) K, sizeof(double));
	double	   *grp_n = grp + n_grp,
			   *prior = grp + 2 * n_grp,
			   *arm_sum = grp + 3 * n_grp,
			   *arm_n = arm_sum + K;
	double		z;

	if (grp == NULL)
		return -1;
	for (int k = 0; k < K; k++)
		if (m->arms[k].ref_passes > 0)
			prior[2 * m->arms[k].family] = prior[2 * m->arms[k].family + 1] =
				log(m->arms[k].ref_passes);
	for (int i = 0; i < data->mc; i++)
		for (int k = 0; k < K; k++)
			if (StopZ(m, data, i, k, &z))
			{
				grp[GROUP(m, k, data->sizes, i)] += z;
				grp_n[GROUP(m, k, data->sizes, i)] += 1;
			}
	for (int g = 0; g < n_grp; g++)
		grp[g] = (grp[g] + STOP_PRIOR * prior[g]) / (grp_n[g] + STOP_PRIOR);
	for (int i = 0; i < data->mc; i++)
		for (int k = 0; k < K; k++)
			if (StopZ(m, data, i, k, &z))
			{
				arm_sum[k] += z - grp[GROUP(m, k, data->sizes, i)];
				arm_n[k] += 1;
			}
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < K; k++)
			m->log_stop[r * K + k] = m->arms[k].ref_passes > 0 ?
				grp[2 * m->arms[k].family + r] + arm_sum[k] / (arm_n[k] + MODEL_PRIOR) : NAN;
	free(grp);
	return 0;
}

/* Step 3: the machine factor, family and model offsets (see header). */
static void
FitRates(CostModel *m, const CostData *data, int n_grp, double *buf)
{
	const double *sizes = data->sizes;
	int			mc = data->mc;
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
			if (RateY(m, data, i, k, &y))
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
			if (RateY(m, data, i, k, &y))
			{
				grp_off[GROUP(m, k, sizes, i)] += y - m->machine;
				grp_n[GROUP(m, k, sizes, i)] += 1;
			}
	for (int g = 0; g < n_grp; g++)
		grp_off[g] /= grp_n[g] + FAMILY_PRIOR;
	for (int i = 0; i < mc; i++)
		for (int k = 0; k < K; k++)
			if (RateY(m, data, i, k, &y))
			{
				arm_off[k] += y - m->machine - grp_off[GROUP(m, k, sizes, i)];
				arm_n[k] += 1;
			}
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < K; k++)
			m->log_rate[r * K + k] = log(m->arms[k].ref_rate) + m->machine +
				grp_off[2 * m->arms[k].family + r] + arm_off[k] / (arm_n[k] + MODEL_PRIOR);
}

/* Step 4: the residual prior over the K models. */
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
CostModelFitData(CostModel *m, const CostArm *arms, int K, const CostData *data)
{
	static const CostData none;
	int			n_fam = 0,
				mc;
	double	   *buf;
	size_t		nbuf;

	memset(m, 0, sizeof(*m));
	data = data ? data : &none;
	mc = data->mc;
	if (K <= 0 || arms == NULL || mc < 0 ||
		(mc > 0 && (data->sizes == NULL || data->seconds == NULL)))
		return -1;
	for (int k = 0; k < K; k++)
	{
		if (arms[k].family < 0 || !(arms[k].ref_rate > 0) || arms[k].formula < 0 ||
			arms[k].formula >= COST_FORMULAS || arms[k].ref_passes < 0)
			return -1;
		if (arms[k].family + 1 > n_fam)
			n_fam = arms[k].family + 1;
	}
	for (int i = 0; i < mc; i++)
		if (!(data->sizes[3 * i] > 0) || !(data->sizes[3 * i + 1] > 0) ||
			!(data->sizes[3 * i + 2] > 0))
			return -1;
	m->K = K;
	m->arms = malloc(sizeof(CostArm) * K);
	m->log_rate = malloc(sizeof(double) * 2 * K);
	m->log_stop = malloc(sizeof(double) * 2 * K);
	nbuf = 4 * (size_t) n_fam + 2 * (size_t) K + 2 * (size_t) mc + (size_t) K + 1;
	buf = malloc(sizeof(double) * nbuf);
	if (m->arms == NULL || m->log_rate == NULL || m->log_stop == NULL || buf == NULL)
	{
		free(buf);
		CostModelFree(m);
		return -1;
	}
	memcpy(m->arms, arms, sizeof(CostArm) * K);
	FitOverhead(m, data->sizes, data->seconds, data->train, mc, buf);
	if (FitStops(m, data, 2 * n_fam) < 0)
	{
		free(buf);
		CostModelFree(m);
		return -1;
	}
	FitRates(m, data, 2 * n_fam, buf);
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
	free(m->log_stop);
	GpPriorFree(&m->resid);
	memset(m, 0, sizeof(*m));
}

double
CostOverhead(const CostModel *m, double n, double d)
{
	return m->o0 + m->o1 * (n > 1 ? n : 1) * (d > 1 ? d : 1);
}

/* log of the standard normal's distribution function */
static double
LogNormalCdf(double x)
{
	double		p = 0.5 * erfc(-x / sqrt(2.0));

	return p > 1e-300 ? log(p) : -690.8;
}

/*
 * The task's part of family fam's log passes (see header): the posterior
 * mean of a shift delta of the learned log passes of all its arms on this
 * task, prior N(0, TASK_PASS_SD^2), from the passes the task's runs of the
 * family reported: a run that stopped early saw ln(passes) = learned +
 * delta + noise (PASS_NOISE_SD), one that made its most passes only that
 * learned + delta + noise >= ln(most).  On a grid: censoring has no closed
 * form.  0 when the task ran none of the family.
 */
static double
TaskPassShift(const CostModel *m, int fam, double n, double c, double folds,
			  const double *passes)
{
	double		lp[PASS_GRID],
				top = -INFINITY,
				sum = 0,
				mean = 0;
	int			seen = 0;

	for (int g = 0; g < PASS_GRID; g++)
	{
		double		x = PASS_GRID_LO + g * PASS_GRID_STEP;

		lp[g] = -0.5 * x * x / (TASK_PASS_SD * TASK_PASS_SD);
	}
	for (int k = 0; k < m->K; k++)
	{
		double		most = CostMaxPasses(&m->arms[k], n, folds);
		double		stop = m->log_stop[(c <= 1 ? m->K : 0) + k];
		double		p = passes[k];

		if (m->arms[k].family != fam || !(most > 0) || !(p >= 1) || !isfinite(p) ||
			!isfinite(stop))
			continue;
		seen = 1;
		for (int g = 0; g < PASS_GRID; g++)
		{
			double		x = PASS_GRID_LO + g * PASS_GRID_STEP;

			if (p < most)
			{
				double		e = (log(p) - stop - x) / PASS_NOISE_SD;

				lp[g] -= 0.5 * e * e;
			}
			else
				lp[g] += LogNormalCdf((stop + x - log(most)) / PASS_NOISE_SD);
		}
	}
	if (!seen)
		return 0;
	for (int g = 0; g < PASS_GRID; g++)
		top = fmax(top, lp[g]);
	for (int g = 0; g < PASS_GRID; g++)
	{
		double		w = exp(lp[g] - top);

		sum += w;
		mean += w * (PASS_GRID_LO + g * PASS_GRID_STEP);
	}
	return mean / sum;
}

void
CostLogBase(const CostModel *m, double n, double d, double c, double folds,
			double bins, const double *passes, double *log_base)
{
	for (int k = 0; k < m->K; k++)
	{
		double		most = CostMaxPasses(&m->arms[k], n, folds);
		double		stop = m->log_stop[(c <= 1 ? m->K : 0) + k];
		double		own = passes ? passes[k] : NAN;

		log_base[k] = m->log_rate[(c <= 1 ? m->K : 0) + k] +
			CostLogComplexityBins(&m->arms[k], n, d, c, folds, bins);
		if (!(most > 0))
			continue;
		/*
		 * an early-stopping arm: the share of its passes it will make; what
		 * it made if it ran on this task, else its learned passes moved by
		 * what the task's runs of its family made
		 */
		if (own >= 1 && isfinite(own))
			stop = log(own);
		else if (passes)
			stop += TaskPassShift(m, m->arms[k].family, n, c, folds, passes);
		if (stop < log(most))
			log_base[k] += PassPower(&m->arms[k]) * (stop - log(most));
	}
}

double
CostTaskOverhead(const CostModel *m, double n, double d,
				 const double *log_base, const double *seconds)
{
	double		model = CostOverhead(m, n, d);
	double		sum;
	int			cnt = 1;

	/*
	 * Every run pays the overhead, so none can be shorter: the model's
	 * line, fitted on other tasks' sizes, can overshoot a task far larger
	 * than they were, and runs of large predicted work would never say so
	 * (CostResidual ignores a run shorter than the overhead).  The cap
	 * bounds the model's part only: the runs that measure the overhead are
	 * averaged as they are, since one fast run under a changing load is
	 * not the overhead of the others (a cap of the mean at the shortest
	 * run made every overhead-bound run of the task look like work).
	 */
	for (int k = 0; k < m->K; k++)
		if (seconds[k] > 0 && isfinite(seconds[k]) && seconds[k] < model)
			model = seconds[k];
	sum = log(model);
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
	/*
	 * expected work under half the overhead: a run's overhead varies by
	 * about half of it from run to run (under load), so its measured work
	 * says something only past one overhead
	 */
	if (exp(log_base) < 0.5 * overhead && work < overhead)
		return NAN;
	/* a run far shorter than expected: its work is below a quarter overhead */
	return log(work > 0.25 * overhead ? work : 0.25 * overhead) - log_base;
}

int
CostTaskEstimate(const CostModel *m, double n, double d, double c, double folds,
				 double bins, const double *seconds, const double *passes,
				 double *log_base, double *overhead, double *cost)
{
	double	   *base = log_base ? log_base : malloc(sizeof(double) * m->K);
	double		o;
	GpState		g;
	int			rc = 0;

	if (base == NULL)
		return -1;
	CostLogBase(m, n, d, c, folds, bins, passes, base);
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
