/*-------------------------------------------------------------------------
 *
 * replay_cli.h
 *	  What the files of easeml-replay share (src/tools/replay_*.c):
 *
 *	  replay_main.c			   main, the replay study and "choose"
 *	  replay_args.c			   the command line and the input files
 *	  replay_report.c		   printed results and the CSV outputs
 *	  replay_bench_decision.c  "bench-decision"
 *
 * IDENTIFICATION
 *	  src/tools/replay_cli.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_REPLAY_CLI_H
#define EASEML_REPLAY_CLI_H

#include <stdio.h>

#include "core/replay.h"

#define MAX_LIST 64

/* What the command line of a replay asks for, besides the ReplayConfig. */
typedef struct ReplayCli
{
	char	   *quality_path;
	char	   *cost_path;
	char	   *sizes_path;
	char	   *curve_path;
	char	   *times_path;
	char	   *runs_path;
	char	   *auto_arg;
	char	   *pol_arg;
	char	   *thr_arg;
	char	   *dev_arg;
	char	   *base_arg;
	char	   *cost_model_name;
	char	   *kernel_name;
	int			error_matrix;
	int			help;
	char	   *pol_items[MAX_LIST];
	char	   *base_items[MAX_LIST];
	char		default_pols[64];	/* pol_items point into it by default */
	int			npol;
	int			nthr;
	int			ndev;
	int			nbase;
	double		thresholds[MAX_LIST];
	int			devices[MAX_LIST];
} ReplayCli;

/* --runs: where ReplayConfig.on_run writes, and what it cannot know. */
typedef struct RunTrace
{
	FILE	   *f;
	int			devices;
	char	  **names;
} RunTrace;

/* replay_args.c */
extern int	ParseIntArg(const char *opt, const char *v, long long lo, long long hi,
						long long *out);
extern int	ParseInt(const char *opt, const char *v, int lo, int hi, int *out);
extern int	ParseReplayArgs(int argc, char **argv, ReplayCli *cli, ReplayConfig *cfg);
extern int	ParseReplayLists(ReplayCli *cli);
extern int	ParseReplayModels(const ReplayCli *cli, ReplayConfig *cfg);
extern int	ReadReplayInputs(const ReplayCli *cli, ReplayMatrix *q, ReplayMatrix *c,
							 ReplayMatrix *s, double **sizes);

/* replay_report.c */
extern double Now(void);
extern void PrintStudy(const ReplayOutput *out, int devices, char **baselines,
					   int nbase);
extern void PrintAutoChoices(const ReplayOutput *out, int devices,
							 const char *auto_list);
extern double MedianInPlace(double *r, int n);
extern int	PrintDeviceSpeedups(const ReplayCli *cli, const ReplayOutput *outs,
								int draws);
extern int	WriteCurves(const char *path, const ReplayCli *cli,
						const ReplayOutput *outs);
extern int	WriteTimes(const char *path, const ReplayCli *cli,
					   const ReplayOutput *outs);
extern void WriteRun(void *arg, const ReplayRunRecord *r);

/* replay_bench_decision.c */
extern int	BenchDecision(int argc, char **argv);

#endif							/* EASEML_REPLAY_CLI_H */
