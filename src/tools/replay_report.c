/*-------------------------------------------------------------------------
 *
 * replay_report.c
 *	  easeml-replay's results: the study printed in human and tagged form
 *	  (TIME, SPEEDUP, DEVICE_SPEEDUP, AUTO lines), the auto choices, and
 *	  the CSV files of --curve, --times and --runs.
 *
 * IDENTIFICATION
 *	  src/tools/replay_report.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/replay.h"
#include "tools/replay_cli.h"

/* Monotonic clock in seconds. */
double
Now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Index of a policy name in the output, or -1. */
static int
FindPolicy(const ReplayOutput *out, const char *name)
{
	int			p;

	for (p = 0; p < out->n_policies; p++)
		if (strcmp(out->names[p], name) == 0)
			return p;
	return -1;
}

/* Print one study (one device count) in human and tagged form. */
void
PrintStudy(const ReplayOutput *out, int devices, char **baselines, int nbase)
{
	int			p,
				k,
				b,
				d;

	printf("\n## devices=%d: median over %d draws of the time (s) to reach each loss\n",
		   devices, out->draws);
	printf("%-34s", "policy");
	for (k = 0; k < out->n_thresholds; k++)
		printf(" %11s%-6g", "L<=", out->thresholds[k]);
	printf(" %12s %10s %8s\n", "mean_auc", "worst_r", "runs");
	for (p = 0; p < out->n_policies; p++)
	{
		double		auc = 0.0,
					runs = 0.0,
					worst = 0.0;
		int			kmid = out->n_thresholds > 2 ? 2 : out->n_thresholds - 1;

		printf("%-34s", out->names[p]);
		for (k = 0; k < out->n_thresholds; k++)
			printf(" %17.1f", out->median_time[p * out->n_thresholds + k]);
		for (d = 0; d < out->draws; d++)
		{
			size_t		pd = (size_t) p * out->draws + d;

			auc += out->auc[pd];
			runs += out->decisions[pd];
			if (kmid >= 0 && out->worst_regret[pd * out->n_thresholds + kmid] > worst)
				worst = out->worst_regret[pd * out->n_thresholds + kmid];
		}
		printf(" %12.1f %10.4f %8.0f\n", auc / out->draws, worst, runs / out->draws);
	}
	for (p = 0; p < out->n_policies; p++)
		for (k = 0; k < out->n_thresholds; k++)
			printf("TIME devices=%d policy=%s thr=%g median=%.3f\n", devices,
				   out->names[p], out->thresholds[k],
				   out->median_time[p * out->n_thresholds + k]);

	for (b = 0; b < nbase; b++)
	{
		int			bi = FindPolicy(out, baselines[b]);

		if (bi < 0)
			continue;
		printf("\n## devices=%d: speedup over %s (median over draws of the per-draw ratio; max)\n",
			   devices, baselines[b]);
		for (p = 0; p < out->n_policies; p++)
		{
			printf("%-34s", out->names[p]);
			for (k = 0; k < out->n_thresholds; k++)
			{
				double		med,
							mx;

				ReplaySpeedup(out, bi, p, k, &med, &mx);
				printf("   %7.2fx (%6.1fx)", med, mx);
			}
			printf("\n");
		}
		for (p = 0; p < out->n_policies; p++)
			for (k = 0; k < out->n_thresholds; k++)
			{
				double		med,
							mx;

				ReplaySpeedup(out, bi, p, k, &med, &mx);
				printf("SPEEDUP devices=%d base=%s policy=%s thr=%g median=%.4f max=%.4f\n",
					   devices, baselines[b], out->names[p], out->thresholds[k],
					   med, mx);
			}
	}
}

/* For each "auto" policy: how often it chose each candidate. */
void
PrintAutoChoices(const ReplayOutput *out, int devices, const char *auto_list)
{
	char		list[REPLAY_NAME_LEN * 2];
	char	   *names[8];
	int			nc = 0;

	snprintf(list, sizeof(list), "%s", auto_list);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && nc < 8;
		 tok = strtok_r(NULL, ",", &save))
		names[nc++] = tok;
	for (int p = 0; p < out->n_policies; p++)
	{
		int			count[8] = {0},
					fallback = 0;

		if (out->auto_choice[(size_t) p * out->draws] < REPLAY_AUTO_FALLBACK)
			continue;			/* not an "auto" policy */
		for (int d = 0; d < out->draws; d++)
		{
			int			ch = out->auto_choice[(size_t) p * out->draws + d];

			if (ch == REPLAY_AUTO_FALLBACK)
				fallback++;
			else
				count[ch]++;
		}
		printf("AUTO devices=%d policy=%s", devices, out->names[p]);
		for (int i = 0; i < nc; i++)
			printf(" %s=%d", names[i], count[i]);
		printf(" fallback:%s=%d\n", POLICY_AUTO_FALLBACK, fallback);
	}
}

/* Median of r[0..n) (sorted in place). */
double
MedianInPlace(double *r, int n)
{
	for (int j = 1; j < n; j++)
	{
		double		x = r[j];
		int			m;

		for (m = j - 1; m >= 0 && r[m] > x; m--)
			r[m + 1] = r[m];
		r[m + 1] = x;
	}
	return (n % 2) ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
}

/* Speedup of each device count over the first: median of per-draw ratios. */
int
PrintDeviceSpeedups(const ReplayCli *cli, const ReplayOutput *outs, int draws)
{
	double	   *r = malloc(sizeof(double) * draws);

	if (r == NULL)
		return 0;
	printf("\n## speedup over devices=%d (median over draws of the per-draw ratio)\n",
		   cli->devices[0]);
	for (int di = 1; di < cli->ndev; di++)
		for (int p = 0; p < cli->npol; p++)
			for (int k = 0; k < cli->nthr; k++)
			{
				for (int d = 0; d < draws; d++)
				{
					double		a = outs[0].time_to[((size_t) p * draws + d) * cli->nthr + k];
					double		b = outs[di].time_to[((size_t) p * draws + d) * cli->nthr + k];

					r[d] = isinf(b) ? 0.0 : (b > 0.0 ? a / b : 1.0);
				}
				printf("DEVICE_SPEEDUP devices=%d over=%d policy=%s thr=%g median=%.4f\n",
					   cli->devices[di], cli->devices[0], cli->pol_items[p],
					   cli->thresholds[k], MedianInPlace(r, draws));
			}
	free(r);
	return 1;
}

/* --curve: the averaged loss curves as CSV. */
int
WriteCurves(const char *path, const ReplayCli *cli, const ReplayOutput *outs)
{
	FILE	   *f = fopen(path, "w");

	if (f == NULL)
	{
		fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n", path, strerror(errno));
		return 0;
	}
	fprintf(f, "devices,policy,time,mean_loss,median_loss\n");
	for (int di = 0; di < cli->ndev; di++)
	{
		const ReplayOutput *o = &outs[di];

		for (int p = 0; p < o->n_policies; p++)
			for (int g = 0; g < o->grid_points; g++)
				fprintf(f, "%d,\"%s\",%.6g,%.6g,%.6g\n", cli->devices[di],
						o->names[p], o->grid[g],
						o->curve_mean[(size_t) p * o->grid_points + g],
						o->curve_median[(size_t) p * o->grid_points + g]);
	}
	fclose(f);
	return 1;
}

/* --times: every draw's time to each threshold as CSV. */
int
WriteTimes(const char *path, const ReplayCli *cli, const ReplayOutput *outs)
{
	FILE	   *f = fopen(path, "w");

	if (f == NULL)
	{
		fprintf(stderr, "easeml-replay: could not write \"%s\": %s\n", path, strerror(errno));
		return 0;
	}
	fprintf(f, "devices,policy,draw,threshold,time,worst_regret,auc,runs\n");
	for (int di = 0; di < cli->ndev; di++)
	{
		const ReplayOutput *o = &outs[di];

		for (int p = 0; p < o->n_policies; p++)
			for (int d = 0; d < o->draws; d++)
				for (int k = 0; k < o->n_thresholds; k++)
				{
					size_t		pd = (size_t) p * o->draws + d;

					fprintf(f, "%d,\"%s\",%d,%g,%.6g,%.6g,%.6g,%d\n",
							cli->devices[di], o->names[p], d, o->thresholds[k],
							o->time_to[pd * o->n_thresholds + k],
							o->worst_regret[pd * o->n_thresholds + k],
							o->auc[pd], o->decisions[pd]);
				}
	}
	fclose(f);
	return 1;
}

/* ReplayConfig.on_run of --runs: one CSV line per finished run. */
void
WriteRun(void *arg, const ReplayRunRecord *r)
{
	RunTrace   *tr = arg;

	fprintf(tr->f, "%d,\"%s\",%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
			tr->devices, tr->names[r->policy], r->draw, r->tenant, r->arm,
			r->start, r->end, r->cost, r->quality, r->best, r->regret);
}
