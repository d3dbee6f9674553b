/*-------------------------------------------------------------------------
 *
 * hpspace.h
 *	  Hyperparameter spaces of the model families (easeml.model_spaces):
 *	  scaling a configuration into [0,1]^d, proposing new configurations
 *	  around a good one (seeded perturbation in the scaled space), the RBF
 *	  kernel between two configurations of one family, and how a prior over
 *	  the catalog's models extends to generated configurations through the
 *	  grid model they descend from (docs/scheduler.md 7.9).
 *
 * Plain C, no PostgreSQL headers, no printing, no exit().
 *
 * IDENTIFICATION
 *	  src/core/hpspace.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_HPSPACE_H
#define EASEML_HPSPACE_H

#include <stdint.h>

#include "gp.h"
#include "policy.h"

typedef enum HpType
{
	HP_INT = 0,					/* integer, linear scale */
	HP_LOG_INT = 1,				/* integer, log scale (lo > 0) */
	HP_FLOAT = 2,				/* real, linear scale */
	HP_LOG_FLOAT = 3,			/* real, log scale (lo > 0) */
	HP_CATEGORICAL = 4			/* index 0 .. n_choices - 1 */
} HpType;

/* One dimension of a family's space. */
typedef struct HpDim
{
	HpType		type;
	double		lo;				/* categorical: 0 */
	double		hi;				/* categorical: n_choices - 1 */
} HpDim;

/* The type named by text ("int", "log-int", "float", "log-float",
 * "categorical"), or -1. */
extern int	HpTypeOf(const char *name);

/* The most choices minus one a categorical dimension may have (its hi). */
#define HP_MAX_CATEGORICAL_HI 1000000

/* 0 when the dimension is well formed, else -1 (lo < hi, finite, lo > 0
 * on a log scale, categorical lo = 0 and hi >= 1 an integer of at most
 * HP_MAX_CATEGORICAL_HI). */
extern int	HpDimCheck(const HpDim *dim);

/* A raw value's position in [0,1] (clamped); NaN for a NaN value. */
extern double HpScale(const HpDim *dim, double value);

/* The raw value at position u in [0,1] (clamped; integers rounded). */
extern double HpUnscale(const HpDim *dim, double u);

/*
 * n configurations around x (d raw values), into out (n x d raw values):
 * each numeric dimension moves by a normal step of sd 'step' in the scaled
 * space (reflected at the edges), each categorical one switches to another
 * choice with probability 'step'; at least one dimension changes in each
 * (an integer one by at least one unit).  Seeded (splitmix64): the same
 * input gives the same proposals.  Returns 0, or -1 on bad input.
 */
extern int	HpPropose(const HpDim *dims, int d, const double *x, uint64_t seed,
					  int n, double step, double *out);

/*
 * The RBF kernel between two configurations given by their scaled
 * coordinates: exp(-|a - b|^2 / (2 l^2 d)) (categorical coordinates differ
 * by 0 or 1).  A NaN coordinate on one side counts as distance 1; one NaN
 * on both sides (the padding of a family with fewer dimensions than the
 * widest loaded) is left out, of the sum and of d.
 */
extern double HpKernel(const double *a, const double *b, int d, double lengthscale);

/* The kernel's length-scale in the scaled space (docs/scheduler.md 7.9). */
#define HP_LENGTHSCALE 0.3

/*
 * Extend a fitted prior to generated arms.  root[k] is the grid arm a
 * generated arm k descends from (-1 for a grid arm, or for a generated arm
 * whose root is not among the K arms: left as fitted); coords holds K x d
 * scaled coordinates (each row in its family's space, padded with NaN).
 * With k(a, b) = HpKernel, C the fitted covariance and mu0 the fitted mean,
 * a generated arm a of root r gets
 *   mu0[a] = mu0[r],
 *   cov[a, b] = C[r, r] k(a, b)          for b with the same root (r too),
 *   cov[a, j] = k(a, r) k(j, s) C[r, s]  for j of root s != r (k(s, s) = 1):
 * f(a) = mu0[r] + k(a, r) (f(r) - mu0[r]) + e_r(a), with e_r a GP over r's
 * space independent of everything else, of covariance C[r, r] (k(a, b) -
 * k(a, r) k(b, r)) -- positive semi-definite whenever C is.  mean_diag is
 * recomputed.  Returns 0, or -1 on bad input (prior untouched).
 */
extern int	HpExtendPrior(GpPrior *prior, const int *root, const double *coords,
						  int d, double lengthscale);

/*
 * [acqgen] Proposals before the grid is spent (docs/scheduler.md 7.9).
 *
 * A proposed configuration that is not (yet) one of the K arms: the grid
 * arm it descends from, its d scaled coordinates and its root's.
 */
typedef struct HpPoint
{
	int			root;			/* grid arm, 0 .. K - 1 */
	int			d;				/* coordinates of its family's space */
	const double *x;			/* d scaled coordinates */
	const double *x_root;		/* d: the root's */
} HpPoint;

/*
 * The posterior of a point under a task's posterior gp over K arms whose
 * prior HpExtendPrior extended (arm_root, arm_coords of 'dims' columns, as
 * given to it; NULL when no arm is generated): the point's prior is the
 * one HpExtendPrior would give it as one more generated arm of its root r,
 *   mu0 = mu0[r],  var0 = C[r, r],
 *   cov(x, b) = C[r, r] k(x, b)       b = r or a generated arm of root r,
 *   cov(x, j) = k(x, r) cov[r, j]     any other arm j,
 * conditioned on the task's observations (GpStatePredict).  Returns a
 * GpStatus.
 */
extern int	HpPointPosterior(const GpState *gp, const int *arm_root,
							 const double *arm_coords, int dims,
							 const HpPoint *p, double lengthscale,
							 double *mu, double *var);

/*
 * A proposal's estimated seconds from its parent's (the arm whose params
 * it perturbs): the fixed part 'overhead' plus the parent's work scaled by
 * the family formula's complexity ratio, exp(log_complexity_delta).
 */
extern double HpPointCost(double parent_cost, double overhead,
						  double log_complexity_delta);

/*
 * Whether a proposal's acquisition beats the best untried arm's by the
 * margin: the policy's own acquisition (PolicyTopArms: EI per second with
 * the default policy) over one array of the K arms and the n proposals
 * (so that beta and the cost reference are the same for both), once with
 * only the available arms and once with only the proposals.  view gives
 * the task's best score and observations.  The best proposal wins when
 * its acquisition > margin x the best available arm's (a tie goes to the
 * arm; for a negative one A, GP-UCB's, when it is > A + (margin - 1) |A|);
 * no available arm, or a policy that does not read the posterior
 * (popular, fifo): none wins.  *winner: the winning proposal's index or
 * -1; *p_acq, *grid_acq: the two acquisitions (NaN where none; either may
 * be NULL).  Returns POLICY_OK or a negative POLICY_* status.
 */
extern int	HpProposalBeats(const PolicyParams *params, int K, const double *mu,
							const double *var, const double *cost,
							const unsigned char *avail,
							const PolicyTenantView *view, int n,
							const double *p_mu, const double *p_var,
							const double *p_cost, double margin,
							int *winner, double *p_acq, double *grid_acq);

#endif							/* EASEML_HPSPACE_H */
