/*-------------------------------------------------------------------------
 *
 * tr_main.c
 *	  Entry point of easeml-trainer.
 *
 * With --run anywhere in argv the live mode (tr_live.c) takes over: it is
 * what the scheduler launches.  Otherwise the trainer runs offline on CSV
 * files, which is what the unit tests, the benchmark and people debugging
 * a model use:
 *
 *	 easeml-trainer --csv FILE --target COL --family F [options]
 *	 easeml-trainer --train-csv A --val-csv B --target COL --family F ...
 *	 easeml-trainer --csv FILE --target COL --command PROG --command ARG ...
 *	 easeml-trainer --list-families
 *	 easeml-trainer --probe		 (the devices, for the scheduler)
 *
 * and --check-model (tr_check.c) answers whether a model row can be
 * trained.
 * The metrics object is printed on stdout (and optionally written to a
 * file); errors go to stderr with exit status 1.  SIGTERM and SIGINT set
 * the cancel flag, which the families poll once per epoch or batch.
 *
 * IDENTIFICATION
 *	  src/trainer/tr_main.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer.h"
#include "trainer_protocol.h"
#include "tr_check.h"
#include "tr_external.h"

static volatile sig_atomic_t cancel_requested = 0;

static void
HandleTerm(int sig)
{
	cancel_requested = 1;
}

static void
Usage(FILE *out)
{
	fprintf(out,
			"usage: easeml-trainer --csv FILE --target COL --family F [options]\n"
			"       easeml-trainer --train-csv FILE --val-csv FILE --target COL --family F [options]\n"
			"       easeml-trainer --csv FILE --target COL --command PROGRAM [--command ARG ...]\n"
			"       easeml-trainer --list-families\n"
			"       easeml-trainer --check-model FAMILY [--params JSON] [--kinds K[,K]] [--needs-image]\n"
			"       easeml-trainer --run ...   (live mode, launched by the scheduler)\n"
			"       easeml-trainer --probe     (list this machine's devices as JSON)\n"
			"options:\n"
			"  --kind classification|regression   task kind (default classification)\n"
			"  --params JSON            family parameters, e.g. '{\"l2\":1e-4}'\n"
			"  --seed N                 split and model seed (default 0)\n"
			"  --val-fraction F         validation share in (0, 0.9] (default 0.2)\n"
			"  --threads N              BLAS threads (default 1)\n"
			"  --image-shape C,H,W      image shape for convolutional families\n"
			"  --no-impute              fail on missing features instead of imputing\n"
			"  --impute S               mean (default), median or most_frequent\n"
			"  --no-missing-indicator   no indicator feature for columns with missing values\n"
			"  --folds K                k-fold cross-validation (2..100) instead of one split\n"
			"  --metric M               rank by M (accuracy, balanced_accuracy, macro_f1,\n"
			"                           log_loss, roc_auc; r2, rmse, mae)\n"
			"  --metrics-out FILE       also write the metrics JSON to FILE\n"
			"  --artifact-out FILE      write the trained parameters to FILE\n"
			"  --verbose                print per-epoch progress on stderr\n"
			"  --command ARG            train with a custom trainer's command (repeat for\n"
			"                           each argument) instead of --family, as easeml would\n");
}

static void
PrintFamily(const TrFamily *fam, void *arg)
{
	printf("%-14s %-28s %s\n", fam->name,
		   fam->supports_classification && fam->supports_regression ?
		   "classification, regression" :
		   fam->supports_classification ? "classification" : "regression",
		   fam->summary ? fam->summary : "");
	for (const TrParamSpec *p = fam->params; p && p->name; p++)
		printf("    %-18s %s\n", p->name, p->help ? p->help : "");
	if (fam->needs_image)
		printf("    (needs --image-shape)\n");
}

static void
PrintProgress(void *arg, int epoch, double loss)
{
	fprintf(stderr, "epoch %d loss %.6g\n", epoch, loss);
}

static int
WriteFile(const char *path, const void *buf, size_t len)
{
	FILE	   *f = fopen(path, "wb");

	if (f == NULL)
	{
		fprintf(stderr, "easeml-trainer: could not open \"%s\": %s\n",
				path, strerror(errno));
		return -1;
	}
	if (fwrite(buf, 1, len, f) != len || fclose(f) != 0)
	{
		fprintf(stderr, "easeml-trainer: could not write \"%s\"\n", path);
		return -1;
	}
	return 0;
}

/*
 * Append the rows of b to a (same header required) and return a split
 * vector marking b's rows as validation rows.
 */
static unsigned char *
ConcatTables(TrTable *a, TrTable *b, char *err, size_t errlen)
{
	int			n = a->n + b->n;
	unsigned char *split;
	double	   *X;

	if (a->d != b->d)
	{
		snprintf(err, errlen, "training and validation files have %d and %d feature columns",
				 a->d, b->d);
		return NULL;
	}
	for (int j = 0; j < a->d; j++)
		if (strcmp(a->feature_names[j], b->feature_names[j]) != 0)
		{
			snprintf(err, errlen,
					 "training and validation files differ in column %d (\"%s\" vs \"%s\")",
					 j + 1, a->feature_names[j], b->feature_names[j]);
			return NULL;
		}
	split = calloc(n, 1);
	X = realloc(a->X, sizeof(double) * (size_t) n * a->d);
	if (split == NULL || X == NULL)
	{
		free(split);
		if (X != NULL)
			a->X = X;
		snprintf(err, errlen, "out of memory joining the training and validation files");
		return NULL;
	}
	a->X = X;
	memcpy(a->X + (size_t) a->n * a->d, b->X, sizeof(double) * (size_t) b->n * b->d);
	if (a->kind == TR_KIND_CLASSIFICATION)
	{
		char	  **l = realloc(a->labels, sizeof(char *) * n);

		if (l == NULL)
		{
			free(split);
			snprintf(err, errlen, "out of memory joining the training and validation files");
			return NULL;
		}
		a->labels = l;
		memcpy(a->labels + a->n, b->labels, sizeof(char *) * b->n);
		memset(b->labels, 0, sizeof(char *) * b->n);	/* moved */
	}
	else
	{
		double	   *t = realloc(a->t, sizeof(double) * n);

		if (t == NULL)
		{
			free(split);
			snprintf(err, errlen, "out of memory joining the training and validation files");
			return NULL;
		}
		a->t = t;
		memcpy(a->t + a->n, b->t, sizeof(double) * b->n);
	}
	memset(split + a->n, 1, b->n);
	a->n = n;
	return split;
}

/*
 * Train with a custom trainer's command, as a live run would (the way to
 * try one on a CSV file before registering it).  Its artifact goes to a
 * temporary file, and --artifact-out writes it wrapped (family "external").
 */
static int
RunCommandOffline(const TrTable *tab, char **command, json_object *params,
				  const TrPrepOptions *popt, int verbose, int threads,
				  TrResult *res, json_object **metrics)
{
	TrExternalRun xr;
	char		path[] = "/tmp/easeml-artifact-XXXXXX";
	int			fd = mkstemp(path);
	int			rc;

	if (fd < 0)
	{
		TrResultInit(res);
		TrSetError(res, "could not create a temporary file: %s", strerror(errno));
		return -1;
	}
	close(fd);
	memset(&xr, 0, sizeof(xr));
	xr.command = command;
	xr.params = params;
	xr.seed = popt->seed;
	xr.threads = threads;
	xr.artifact_path = path;
	xr.progress = verbose ? PrintProgress : NULL;
	xr.cancel = &cancel_requested;
	rc = TrRunExternal(tab, popt, &xr, res, metrics);
	unlink(path);
	return rc;
}

/* offline mode */
static int
OfflineMain(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"csv", required_argument, NULL, 'c'},
		{"train-csv", required_argument, NULL, 'T'},
		{"val-csv", required_argument, NULL, 'V'},
		{"target", required_argument, NULL, 't'},
		{"kind", required_argument, NULL, 'k'},
		{"family", required_argument, NULL, 'f'},
		{"params", required_argument, NULL, 'p'},
		{"seed", required_argument, NULL, 's'},
		{"val-fraction", required_argument, NULL, 'v'},
		{"threads", required_argument, NULL, 'j'},
		{"image-shape", required_argument, NULL, 'i'},
		{"metrics-out", required_argument, NULL, 'm'},
		{"artifact-out", required_argument, NULL, 'a'},
		{"no-impute", no_argument, NULL, 'N'},
		{"impute", required_argument, NULL, 'I'},
		{"no-missing-indicator", no_argument, NULL, 'M'},
		{"folds", required_argument, NULL, 'F'},
		{"metric", required_argument, NULL, 'R'},
		{"verbose", no_argument, NULL, 'q'},
		{"list-families", no_argument, NULL, 'L'},
		{"command", required_argument, NULL, 'X'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *csv = NULL,
			   *train_csv = NULL,
			   *val_csv = NULL,
			   *target = NULL,
			   *family = NULL,
			   *params_text = NULL,
			   *metrics_out = NULL,
			   *artifact_out = NULL;
	int			kind = TR_KIND_CLASSIFICATION,
				threads = 1,
				verbose = 0,
				opt_c;
	TrPrepOptions popt;
	TrTable		tab,
				vtab;
	TrResult	res;
	json_object *params = NULL,
			   *metrics = NULL;
	unsigned char *split = NULL;
	char	   *command[64];
	int			ncommand = 0;
	char		err[TR_ERRLEN];
	const char *text;
	int			status = 1;
	char	   *end;

	memset(&popt, 0, sizeof(popt));
	memset(&tab, 0, sizeof(tab));
	memset(&vtab, 0, sizeof(vtab));
	TrResultInit(&res);
	popt.val_fraction = 0.2;
	popt.impute = 1;

	while ((opt_c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
	{
		switch (opt_c)
		{
			case 'c':
				csv = optarg;
				break;
			case 'T':
				train_csv = optarg;
				break;
			case 'V':
				val_csv = optarg;
				break;
			case 't':
				target = optarg;
				break;
			case 'k':
				if (strcmp(optarg, "classification") == 0)
					kind = TR_KIND_CLASSIFICATION;
				else if (strcmp(optarg, "regression") == 0)
					kind = TR_KIND_REGRESSION;
				else
				{
					fprintf(stderr, "easeml-trainer: --kind must be classification or regression\n");
					return 1;
				}
				break;
			case 'f':
				family = optarg;
				break;
			case 'p':
				params_text = optarg;
				break;
			case 's':
				errno = 0;
				popt.seed = strtoull(optarg, &end, 10);
				if (errno != 0 || *end != '\0' || optarg[0] == '-')
				{
					fprintf(stderr, "easeml-trainer: --seed must be a non-negative integer\n");
					return 1;
				}
				break;
			case 'v':
				popt.val_fraction = strtod(optarg, &end);
				if (*end != '\0')
				{
					fprintf(stderr, "easeml-trainer: --val-fraction must be a number\n");
					return 1;
				}
				break;
			case 'j':
				threads = (int) strtol(optarg, &end, 10);
				if (*end != '\0' || threads < 1 || threads > 1024)
				{
					fprintf(stderr, "easeml-trainer: --threads must be an integer in [1, 1024]\n");
					return 1;
				}
				break;
			case 'i':
				if (sscanf(optarg, "%d,%d,%d", &popt.channels, &popt.height,
						   &popt.width) != 3 || popt.channels <= 0 ||
					popt.height <= 0 || popt.width <= 0)
				{
					fprintf(stderr, "easeml-trainer: --image-shape must be C,H,W with positive integers\n");
					return 1;
				}
				break;
			case 'm':
				metrics_out = optarg;
				break;
			case 'a':
				artifact_out = optarg;
				break;
			case 'N':
				popt.impute = 0;
				break;
			case 'I':
				if (strcmp(optarg, "mean") == 0)
					popt.strategy = TR_IMPUTE_MEAN;
				else if (strcmp(optarg, "median") == 0)
					popt.strategy = TR_IMPUTE_MEDIAN;
				else if (strcmp(optarg, "most_frequent") == 0)
					popt.strategy = TR_IMPUTE_MOST_FREQUENT;
				else
				{
					fprintf(stderr, "easeml-trainer: --impute must be mean, median or most_frequent\n");
					return 1;
				}
				break;
			case 'M':
				popt.no_indicator = 1;
				break;
			case 'F':
				popt.folds = (int) strtol(optarg, &end, 10);
				if (*end != '\0' || popt.folds < 2 || popt.folds > 100)
				{
					fprintf(stderr, "easeml-trainer: --folds must be an integer in [2, 100]\n");
					return 1;
				}
				break;
			case 'R':
				popt.metric = optarg;
				break;
			case 'q':
				verbose = 1;
				break;
			case 'L':
				TrFamilyList(PrintFamily, NULL);
				return 0;
			case 'X':
				if (ncommand >= (int) (sizeof(command) / sizeof(command[0])) - 1)
				{
					fprintf(stderr, "easeml-trainer: too many --command arguments\n");
					return 1;
				}
				command[ncommand++] = optarg;
				break;
			case 'h':
				Usage(stdout);
				return 0;
			default:
				Usage(stderr);
				return 1;
		}
	}
	if (optind < argc)
	{
		fprintf(stderr, "easeml-trainer: unexpected argument \"%s\"\n", argv[optind]);
		Usage(stderr);
		return 1;
	}
	command[ncommand] = NULL;
	if (target == NULL || (family == NULL) == (ncommand == 0) ||
		(csv == NULL) == (train_csv == NULL || val_csv == NULL) ||
		(train_csv == NULL) != (val_csv == NULL))
	{
		fprintf(stderr, "easeml-trainer: need --target, one of --family or --command, and either --csv or --train-csv with --val-csv\n");
		Usage(stderr);
		return 1;
	}
	if (params_text != NULL)
	{
		params = json_tokener_parse(params_text);
		if (params == NULL || !json_object_is_type(params, json_type_object))
		{
			fprintf(stderr, "easeml-trainer: --params is not a JSON object: %s\n",
					params_text);
			json_object_put(params);
			return 1;
		}
	}

	if (TrLoadCsv(csv ? csv : train_csv, target, kind, &tab, err, sizeof(err)) != 0)
		goto error;
	if (val_csv != NULL)
	{
		if (TrLoadCsv(val_csv, target, kind, &vtab, err, sizeof(err)) != 0)
			goto error;
		split = ConcatTables(&tab, &vtab, err, sizeof(err));
		if (split == NULL)
			goto error;
		popt.fixed_split = split;
	}

	if (ncommand > 0 ? RunCommandOffline(&tab, command, params, &popt, verbose, threads,
										 &res, &metrics) != 0 :
		TrRunCandidate(&tab, family, params, &popt,
					   verbose ? PrintProgress : NULL, NULL, &cancel_requested,
					   threads, &res, &metrics) != 0)
	{
		snprintf(err, sizeof(err), "%s", res.error);
		goto error;
	}
	text = json_object_to_json_string_ext(metrics, JSON_C_TO_STRING_PLAIN);
	printf("%s\n", text);
	fflush(stdout);
	if (metrics_out != NULL)
	{
		char	   *line;
		size_t		len = strlen(text);

		line = malloc(len + 2);
		if (line == NULL)
		{
			snprintf(err, sizeof(err), "out of memory");
			goto error;
		}
		memcpy(line, text, len);
		line[len] = '\n';
		if (WriteFile(metrics_out, line, len + 1) != 0)
		{
			free(line);
			goto cleanup;
		}
		free(line);
	}
	if (artifact_out != NULL && res.artifact != NULL &&
		WriteFile(artifact_out, res.artifact, res.artifact_len) != 0)
		goto cleanup;
	status = 0;
	goto cleanup;

error:
	fprintf(stderr, "easeml-trainer: %s\n", err);
cleanup:
	TrResultFree(&res);
	json_object_put(metrics);
	json_object_put(params);
	TrTableFree(&tab);
	TrTableFree(&vtab);
	free(split);
	return status;
}

int
main(int argc, char **argv)
{
	struct sigaction sa;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], EASEML_ARG_RUN) == 0)
			return TrLiveMain(argc, argv);
		if (strcmp(argv[i], EASEML_ARG_PROBE) == 0)
			return TrProbeMain();
		if (strcmp(argv[i], EASEML_ARG_CHECK_MODEL) == 0)
			return TrCheckModelMain(argc, argv);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = HandleTerm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return OfflineMain(argc, argv);
}
