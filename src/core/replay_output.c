/*-------------------------------------------------------------------------
 *
 * replay_output.c
 *	  A replay's results (replay.h): the output's arrays, the loss curves
 *	  on a common grid and the times to each loss target, read from the
 *	  exact steps (docs/scheduler.md 5), and the speedups between policies.
 *
 * IDENTIFICATION
 *	  src/core/replay_output.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "replay_internal.h"

/* Free a replay output. */
void
ReplayOutputFree(ReplayOutput *out)
{
	int			i;

	if (out == NULL)
		return;
	if (out->events)
		for (i = 0; i < out->n_policies * out->draws; i++)
			free(out->events[i]);
	free(out->events);
	free(out->n_events);
	free(out->names);
	free(out->thresholds);
	free(out->time_to);
	free(out->worst_regret);
	free(out->median_time);
	free(out->auc);
	free(out->final_time);
	free(out->final_loss);
	free(out->decisions);
	free(out->auto_choice);
	free(out->grid);
	free(out->curve_mean);
	free(out->curve_median);
	memset(out, 0, sizeof(*out));
}

/* ReplayMedian of n values (sorts them in place); NAN when n == 0. */
double
ReplayMedian(double *v, int n)
{
	int			i,
				j;

	if (n <= 0)
		return NAN;
	/* insertion sort: n is the number of draws */
	for (i = 1; i < n; i++)
	{
		double		x = v[i];

		for (j = i - 1; j >= 0 && v[j] > x; j--)
			v[j + 1] = v[j];
		v[j + 1] = x;
	}
	return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Loss of a step function at time tau. */
static double
LossAt(const ReplayEvent *ev, int n, double tau)
{
	int			lo = 0,
				hi = n - 1;

	if (n == 0)
		return NAN;
	if (tau < ev[0].time)
		return ev[0].loss;
	/* last event with time <= tau */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (ev[mid].time <= tau)
			lo = mid;
		else
			hi = mid - 1;
	}
	return ev[lo].loss;
}

/* Exact area under a step function over [0, horizon]. */
double
ReplayStepArea(const ReplayEvent *ev, int n, double horizon)
{
	double		a = 0.0;
	int			i;

	for (i = 0; i < n; i++)
	{
		double		t0 = ev[i].time;
		double		t1 = (i + 1 < n) ? ev[i + 1].time : horizon;

		if (t0 >= horizon)
			break;
		if (t1 > horizon)
			t1 = horizon;
		a += ev[i].loss * (t1 - t0);
	}
	return a;
}

/* The output's arrays for P policies, D draws, NK thresholds, G grid points. */
int
ReplayOutputAlloc(ReplayOutput *out, int P, int D, int NK, int G)
{
	size_t		nk = NK > 0 ? NK : 1;

	out->n_policies = P;
	out->draws = D;
	out->n_thresholds = NK;
	out->grid_points = G;
	out->names = calloc(P, REPLAY_NAME_LEN);
	out->thresholds = malloc(sizeof(double) * nk);
	out->time_to = malloc(sizeof(double) * (size_t) P * D * nk);
	out->worst_regret = malloc(sizeof(double) * (size_t) P * D * nk);
	out->median_time = malloc(sizeof(double) * (size_t) P * nk);
	out->auc = malloc(sizeof(double) * (size_t) P * D);
	out->final_time = malloc(sizeof(double) * (size_t) P * D);
	out->final_loss = malloc(sizeof(double) * (size_t) P * D);
	out->decisions = malloc(sizeof(int) * (size_t) P * D);
	out->auto_choice = malloc(sizeof(int) * (size_t) P * D);
	out->grid = malloc(sizeof(double) * G);
	out->curve_mean = malloc(sizeof(double) * (size_t) P * G);
	out->curve_median = malloc(sizeof(double) * (size_t) P * G);
	return (out->names && out->thresholds && out->time_to && out->worst_regret &&
			out->median_time && out->auc && out->final_time && out->final_loss &&
			out->decisions && out->auto_choice && out->grid && out->curve_mean &&
			out->curve_median) ? 0 : -1;
}

/*
 * The loss curves on a common log-spaced grid from the first completion
 * to the last: mean and median over draws.
 */
int
ReplayOutputCurves(ReplayOutput *out, const EventList *lists)
{
	int			P = out->n_policies,
				D = out->draws,
				G = out->grid_points;
	double		t0 = INFINITY,
				t1 = 0.0;
	double	   *col = malloc(sizeof(double) * D);

	if (col == NULL)
		return -1;
	for (int pd = 0; pd < P * D; pd++)
	{
		const EventList *l = &lists[pd];

		if (l->n > 1 && l->ev[1].time < t0)
			t0 = l->ev[1].time;
		if (l->ev[l->n - 1].time > t1)
			t1 = l->ev[l->n - 1].time;
	}
	if (!isfinite(t0) || !(t0 > 0.0))
		t0 = 1.0;
	if (!(t1 > t0))
		t1 = t0 * 10.0;
	for (int g = 0; g < G; g++)
		out->grid[g] = G > 1 ? t0 * pow(t1 / t0, (double) g / (G - 1)) : t1;
	for (int p = 0; p < P; p++)
		for (int g = 0; g < G; g++)
		{
			double		s = 0.0;

			for (int d = 0; d < D; d++)
			{
				const EventList *l = &lists[(size_t) p * D + d];

				col[d] = LossAt(l->ev, l->n, out->grid[g]);
				s += col[d];
			}
			out->curve_mean[(size_t) p * G + g] = s / D;
			out->curve_median[(size_t) p * G + g] = ReplayMedian(col, D);
		}
	free(col);
	return 0;
}

/* Hand the events over to the output (keep_events). */
int
ReplayOutputKeepEvents(ReplayOutput *out, EventList *lists)
{
	int			PD = out->n_policies * out->draws;

	out->events = calloc((size_t) PD, sizeof(ReplayEvent *));
	out->n_events = calloc((size_t) PD, sizeof(int));
	if (out->events == NULL || out->n_events == NULL)
		return -1;
	for (int pd = 0; pd < PD; pd++)
	{
		out->events[pd] = lists[pd].ev;
		out->n_events[pd] = lists[pd].n;
		lists[pd].ev = NULL;
	}
	return 0;
}

/* ReplayMedian and maximum per-draw speedup; see replay.h. */
int
ReplaySpeedup(const ReplayOutput *out, int base, int pol, int k,
			  double *median, double *max)
{
	double	   *r;
	double		mx = 0.0;
	int			d;

	if (out == NULL || base < 0 || base >= out->n_policies || pol < 0 ||
		pol >= out->n_policies || k < 0 || k >= out->n_thresholds)
		return REPLAY_BAD_INPUT;
	r = malloc(sizeof(double) * out->draws);
	if (r == NULL)
		return REPLAY_NO_MEMORY;
	for (d = 0; d < out->draws; d++)
	{
		double		tb = out->time_to[((size_t) base * out->draws + d) * out->n_thresholds + k];
		double		tp = out->time_to[((size_t) pol * out->draws + d) * out->n_thresholds + k];

		if (isinf(tp))
			r[d] = 0.0;
		else if (isinf(tb))
			r[d] = INFINITY;
		else if (tp <= 0.0)
			r[d] = tb <= 0.0 ? 1.0 : INFINITY;
		else
			r[d] = tb / tp;
		if (r[d] > mx)
			mx = r[d];
	}
	if (median)
		*median = ReplayMedian(r, out->draws);
	if (max)
		*max = mx;
	free(r);
	return REPLAY_OK;
}
