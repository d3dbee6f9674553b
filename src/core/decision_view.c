/*-------------------------------------------------------------------------
 *
 * decision_view.c
 *	  A task's quality posterior and its view (decision.h): the GP rebuilt
 *	  on the prior in use, the mixture views (acq=mix, mrg=1 and the learned score of mrg=2) and the best
 *	  candidate the policy index ranks (DecisionRefreshView).
 *
 * IDENTIFICATION
 *	  src/core/decision_view.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decision.h"
#include "decision_internal.h"
#include "mixlearn.h"
#include "mixture.h"

/* ----------------------------------------------------------------------
 * The quality posterior of one task
 * ----------------------------------------------------------------------
 */

/*
 * Rebuild a task's quality posterior from its observed scores on the
 * prior it uses now (a new prior, or a changed score).  Observations go in
 * arm order, so the result does not depend on the order runs finished.
 */
int
DecisionRebuildGp(DecisionWorld *w, DecisionTask *t)
{
	const GpPrior *prior = DecisionTaskPrior(w, t);
	int			rc;

	GpStateFree(&t->gp);
	t->n_obs = 0;
	if (prior == NULL)
		return GP_OK;
	rc = GpStateInit(&t->gp, prior, 16);
	if (rc < 0)
		return rc;
	for (int k = 0; k < w->K; k++)
		if (!isnan(t->score[k]))
		{
			int			grc = GpStateAdd(&t->gp, k, t->score[k]);

			if (grc == GP_JITTER)
				w->gp_jitter++;
			else if (grc < 0)
				w->gp_failed++;
			t->n_obs++;
		}
	DecisionMarkDirty(w, t, DIRTY_VIEW | DIRTY_ELIG);
	return GP_OK;
}

/*
 * mrg=2's model of a kind fitted on the decision path (replays: on first
 * use, off the replay's clock; 1.1 s of CPU for 388 rows x 219 arms).
 */
static int
FitLearned(DecisionWorld *w, int kind)
{
	MixLearn   *ml = calloc(1, sizeof(MixLearn));
	double	   *cost = malloc(sizeof(double) * w->K);
	int			rc = ml && cost ? POLICY_OK : POLICY_NO_MEMORY;

	if (rc == POLICY_OK)
	{
		DecisionTypicalCost(w, kind, cost);
		rc = MixLearnFit(ml, w->mix[kind], &w->params,
						 w->params.cost_aware ? cost : NULL);
	}
	free(cost);
	if (rc == POLICY_NO_MEMORY || ml == NULL)
	{
		free(ml);
		return POLICY_NO_MEMORY;
	}
	free(w->mix_learn[kind]);
	w->mix_learn[kind] = ml;	/* not ok (too few rows): mrg=1's */
	w->mix_learn_fits++;
	return POLICY_OK;
}

/*
 * mrg=2: the learned remaining regret of task t (weights already in
 * w->mix_w); mrg=1's estimate where no model fits the world's params.  A
 * live world gets the model from the refit cycle, sliced between
 * decisions (src/core/refit.c); a replay's fits it here on first use.
 */
static int
LearnedRegret(DecisionWorld *w, const DecisionTask *t,
			  const unsigned char *avail, double *rg)
{
	const MixPrior *mp = w->mix[t->kind];
	const MixLearn *ml = w->mix_learn[t->kind];
	double		x[MIXL_FEATURES];

	if (ml != NULL && !MixLearnSameFit(&ml->params, &w->params))
		ml = NULL;
	if (ml == NULL && !w->mix_learn_by_refit)
	{
		int			rc = FitLearned(w, t->kind);

		if (rc < 0)
			return rc;
		ml = w->mix_learn[t->kind];
	}
	if (ml != NULL && ml->ok)
	{
		MixLearnFeatures(mp, &w->params, w->mix_w, w->mix_off, avail,
						 t->best, t->n_obs, t->streak, x);
		*rg = MixLearnPredict(ml, x);
	}
	else
		*rg = MixRemainingRegret(mp, &w->params, w->mix_w, w->mix_off,
								 avail, t->best);
	return POLICY_OK;
}

/*
 * Explore only when it pays (xg=X, src/core/policy_explore.c): the task's
 * anchor -- its untried arm of largest prior (xo=1: posterior) mean --
 * replaces the view's candidate unless that candidate's acquisition
 * exceeds X times the anchor's under the same predictive (the mixture's
 * with acq=mix, else the GP's), each per second of its run when costed.
 */
static int
ExploreGate(DecisionWorld *w, const DecisionTask *t, const double *cost,
			const unsigned char *avail, double bw, PolicyArmScore *top,
			int *n, PolicyTenantView *v)
{
	const GpPrior *prior = DecisionTaskPrior(w, t);
	const MixPrior *mp = w->mix[t->kind];
	const double *order;
	PolicyTenantView av = *v;
	unsigned char *one;
	int			a,
				rc;

	if (!PolicyExploreGated(&w->params) || v->arm < 0)
		return POLICY_OK;
	order = w->params.explore_order ? t->gp.mu : (prior ? prior->mu0 : NULL);
	a = PolicyExploreAnchor(w->K, order, avail);
	if (a < 0 || a == v->arm)
		return POLICY_OK;
	one = calloc(w->K, 1);
	if (one == NULL)
		return POLICY_NO_MEMORY;
	one[a] = 1;
	w->work += w->K;
	if (w->params.mix_arm && mp != NULL)
		rc = MixBestArm(mp, &w->params, w->mix_w, w->mix_off, bw,
						t->gp.mu, t->gp.var, cost, one, &av);
	else
		rc = PolicyBestArm(&w->params, w->K, t->gp.mu, t->gp.var, cost, one,
						   prior ? prior->mu0 : NULL, &av);
	free(one);
	if (rc < 0)
		return rc;
	if (av.arm != a || PolicyExplorePays(&w->params, v->acq, av.acq))
		return POLICY_OK;		/* no gain to hold to, or exploring pays */
	*v = av;
	top[0].arm = a;
	top[0].acq = av.acq;
	*n = 1;
	return POLICY_OK;
}

/*
 * The mixture options (acq=mix, mrg=1|2): the arm of largest mixture EI
 * replaces the GP's (unless every arm's is 0), and the task score becomes
 * the mixture's remaining regret (mrg=2: the learned one) per second of
 * the next run.
 */
static int
MixtureView(DecisionWorld *w, const DecisionTask *t, const double *cost,
			const unsigned char *avail, PolicyArmScore *top, int *n,
			PolicyTenantView *v)
{
	const MixPrior *mp = w->mix[t->kind];
	const int64_t *owner = w->mix_task[t->kind];
	int			own = -1;
	double		bw;
	int			rc;

	if (mp == NULL || !PolicyUsesMixture(&w->params))
		return ExploreGate(w, t, cost, avail, 0.0, top, n, v);
	/* the weights, the arm scan and the task score: a few passes each */
	w->work += 3.0 * mp->m * w->K;
	/* the task's own history row, if the mixture has one (m ints: cheap) */
	for (int r = 0; owner != NULL && r < mp->m && own < 0; r++)
		if (owner[r] != 0 && owner[r] == t->id)
			own = r;
	bw = MixWeightsExcept(mp, &w->params, t->score, own, w->mix_w, w->mix_off);
	if (w->params.mix_arm)
	{
		PolicyTenantView mv = *v;

		rc = MixBestArm(mp, &w->params, w->mix_w, w->mix_off, bw,
						t->gp.mu, t->gp.var, cost, avail, &mv);
		if (rc < 0)
			return rc;
		if (mv.arm >= 0)
		{
			*v = mv;
			top[0].arm = mv.arm;
			top[0].acq = mv.acq;
			*n = 1;				/* the GP's runner-ups no longer apply */
		}
	}
	/* the gate before the task score: it is per second of the run chosen */
	rc = ExploreGate(w, t, cost, avail, bw, top, n, v);
	if (rc < 0)
		return rc;
	if (PolicyMixScore(&w->params))
	{
		int			tc = w->params.cost_aware;
		double		rg;

		if (w->params.mix_score == 2)
		{
			rc = LearnedRegret(w, t, avail, &rg);
			if (rc < 0)
				return rc;
		}
		else
			rg = MixRemainingRegret(mp, &w->params, w->mix_w, w->mix_off,
									avail, t->best);
		v->score = rg / (tc ? fmax(v->cost, 1e-9) : 1.0);
	}
	return POLICY_OK;
}

/* Recompute a task's candidate (view and the best arm). */
int
DecisionRefreshView(DecisionWorld *w, DecisionTask *t)
{
	PolicyTenantView *v = &w->views[t->index];
	PolicyArmScore top[DECISION_TOP_ARMS];
	const GpPrior *prior = DecisionTaskPrior(w, t);
	const unsigned char *avail = t->avail;
	const double *cost = t->cost;
	int			ntop,
				n = 0,
				rc;

	w->n_refreshed++;
	w->work += w->K;
	v->id = t->id;
	v->best = t->best;
	v->n_obs = t->n_obs;
	v->last_served = t->last_served;
	v->streak = t->streak;
	v->n_running = t->n_running;
	t->best_arm = -1;
	t->n_top = 0;
	if (t->n_left == 0 || t->gp.prior == NULL)
		return POLICY_OK;
	if (w->arm_open != NULL)
	{
		int			any = 0;

		/* only arms that can start now, at their cost on that device */
		for (int k = 0; k < w->K; k++)
		{
			w->open_avail[k] = t->avail[k] && w->arm_open[k];
			w->placed_cost[k] = t->cost[k] * w->arm_factor[k];
			any |= w->open_avail[k];
		}
		if (!any)
			return POLICY_OK;
		avail = w->open_avail;
		cost = w->placed_cost;
	}
	ntop = w->explain ? DECISION_TOP_ARMS : 1;
	rc = PolicyTopArms(&w->params, w->K, t->gp.mu, t->gp.var, cost,
					   avail, prior ? prior->mu0 : NULL, v, ntop, top, &n);
	if (rc < 0)
		return rc;
	if (n > 0 && (rc = MixtureView(w, t, cost, avail, top, &n, v)) < 0)
		return rc;
	t->n_top = n < DECISION_TOP_ARMS ? n : DECISION_TOP_ARMS;
	for (int i = 0; i < t->n_top; i++)
	{
		t->top_arm[i] = top[i].arm;
		t->top_acq[i] = top[i].acq;
	}
	t->best_arm = v->arm;
	return POLICY_OK;
}

/* ----------------------------------------------------------------------
 * [acqgen] Proposals before the grid is spent (docs/scheduler.md 7.9)
 * ----------------------------------------------------------------------
 */

int
DecisionProposalBeats(DecisionWorld *w, DecisionTask *t, const int *arm_root,
					  const double *arm_coords, int dims, DecisionProposal *p,
					  int n, double margin, int *winner, double *p_acq,
					  double *grid_acq)
{
	PolicyTenantView view;
	double	   *pm,
			   *pv,
			   *pc;
	int			rc = POLICY_OK;

	if (winner == NULL || w == NULL || t == NULL || n < 0 || (n > 0 && p == NULL))
		return POLICY_BAD_INPUT;
	*winner = -1;
	if (p_acq)
		*p_acq = NAN;
	if (grid_acq)
		*grid_acq = NAN;
	if (n == 0 || t->gp.prior == NULL)
		return POLICY_OK;
	pm = malloc(sizeof(double) * n);
	pv = malloc(sizeof(double) * n);
	pc = malloc(sizeof(double) * n);
	if (pm == NULL || pv == NULL || pc == NULL)
	{
		free(pm);
		free(pv);
		free(pc);
		return POLICY_NO_MEMORY;
	}
	for (int i = 0; i < n; i++)
	{
		double		mu = NAN,
					var = NAN;

		if (p[i].parent < 0 || p[i].parent >= w->K ||
			HpPointPosterior(&t->gp, arm_root, arm_coords, dims, &p[i].point,
							 HP_LENGTHSCALE, &mu, &var) < 0)
			mu = var = NAN;		/* left out (HpProposalBeats) */
		pm[i] = mu;
		pv[i] = var;
		pc[i] = p[i].parent >= 0 && p[i].parent < w->K ?
			HpPointCost(t->cost[p[i].parent], t->overhead,
						p[i].log_complexity_delta) : NAN;
		if (!(pc[i] > 0))
			pv[i] = NAN;		/* no cost: left out too */
		p[i].mu = mu;
		p[i].sigma = var >= 0 ? sqrt(var) : NAN;
		p[i].cost = pc[i];
		w->work += (double) t->n_obs * t->n_obs;
	}
	memset(&view, 0, sizeof(view));
	view.id = t->id;
	view.best = t->best;
	view.n_obs = t->n_obs;
	view.last_served = t->last_served;
	view.streak = t->streak;
	view.n_running = t->n_running;
	w->work += w->K + n;
	rc = HpProposalBeats(&w->params, w->K, t->gp.mu, t->gp.var, t->cost,
						 t->avail, &view, n, pm, pv, pc, margin, winner,
						 p_acq, grid_acq);
	free(pm);
	free(pv);
	free(pc);
	return rc;
}
