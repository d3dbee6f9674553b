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
#include "core/trainer_protocol.h"
#include "tr_check.h"
#include "trainer/families/tr_external.h"

static volatile sig_atomic_t cancel_requested = 0;

/*
 * easeml-trainer is linked with --wrap for the allocators below (Makefile):
 * every allocation of the trainer's own code passes through them, so that
 * one refused by the memory cap is noted (tr_memory.c) and the run ends
 * as over its memory limit rather than as a failure of the model.
 */
extern void *__real_malloc(size_t size);
extern void *__real_calloc(size_t n, size_t size);
extern void *__real_realloc(void *p, size_t size);
extern void *__real_aligned_alloc(size_t alignment, size_t size);

void	   *__wrap_malloc(size_t size);
void	   *__wrap_calloc(size_t n, size_t size);
void	   *__wrap_realloc(void *p, size_t size);
void	   *__wrap_aligned_alloc(size_t alignment, size_t size);

void *
__wrap_malloc(size_t size)
{
	void	   *p = __real_malloc(size);

	TrNoteAllocation(p, size);
	return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
	void	   *p = __real_calloc(n, size);

	TrNoteAllocation(p, n != 0 && size != 0);
	return p;
}

void *
__wrap_realloc(void *old, size_t size)
{
	void	   *p = __real_realloc(old, size);

	TrNoteAllocation(p, size);
	return p;
}

void *
__wrap_aligned_alloc(size_t alignment, size_t size)
{
	void	   *p = __real_aligned_alloc(alignment, size);

	TrNoteAllocation(p, size);
	return p;
}


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
	xr.grace_ms = -1;
	rc = TrRunExternal(tab, popt, &xr, res, metrics);
	unlink(path);
	return rc;
}

/* What the offline command line asks for. */
typedef struct OfflineArgs
{
	const char *csv;
	const char *train_csv;
	const char *val_csv;
	const char *target;
	const char *family;
	const char *params_text;
	const char *metrics_out;
	const char *artifact_out;
	int			kind;
	int			threads;
	int			verbose;
	TrPrepOptions popt;
	char	   *command[64];
	int			ncommand;
} OfflineArgs;

#define OPT_EXIT_OK		1		/* done (--help, --list-families) */
#define OPT_BAD			(-1)	/* a message was printed */

static int
OptionError(const char *msg)
{
	fprintf(stderr, "easeml-trainer: %s\n", msg);
	return OPT_BAD;
}

/* --kind, --impute, --seed, --image-shape and the other valued options. */
static int
ParseValueOption(int c, char *arg, OfflineArgs *a)
{
	char	   *end;

	switch (c)
	{
		case 'k':
			if (strcmp(arg, "classification") != 0 && strcmp(arg, "regression") != 0)
				return OptionError("--kind must be classification or regression");
			a->kind = strcmp(arg, "regression") == 0 ? TR_KIND_REGRESSION : TR_KIND_CLASSIFICATION;
			return 0;
		case 's':
			errno = 0;
			a->popt.seed = strtoull(arg, &end, 10);
			if (errno != 0 || *end != '\0' || arg[0] == '-')
				return OptionError("--seed must be a non-negative integer");
			return 0;
		case 'v':
			a->popt.val_fraction = strtod(arg, &end);
			return *end != '\0' ? OptionError("--val-fraction must be a number") : 0;
		case 'j':
			a->threads = (int) strtol(arg, &end, 10);
			if (*end != '\0' || a->threads < 1 || a->threads > 1024)
				return OptionError("--threads must be an integer in [1, 1024]");
			return 0;
		case 'i':
			if (sscanf(arg, "%d,%d,%d", &a->popt.channels, &a->popt.height,
					   &a->popt.width) != 3 || a->popt.channels <= 0 ||
				a->popt.height <= 0 || a->popt.width <= 0)
				return OptionError("--image-shape must be C,H,W with positive integers");
			return 0;
		case 'I':
			if (strcmp(arg, "mean") == 0)
				a->popt.strategy = TR_IMPUTE_MEAN;
			else if (strcmp(arg, "median") == 0)
				a->popt.strategy = TR_IMPUTE_MEDIAN;
			else if (strcmp(arg, "most_frequent") == 0)
				a->popt.strategy = TR_IMPUTE_MOST_FREQUENT;
			else
				return OptionError("--impute must be mean, median or most_frequent");
			return 0;
		case 'F':
			a->popt.folds = (int) strtol(arg, &end, 10);
			if (*end != '\0' || a->popt.folds < 2 || a->popt.folds > 100)
				return OptionError("--folds must be an integer in [2, 100]");
			return 0;
		case 'X':
			if (a->ncommand >= (int) (sizeof(a->command) / sizeof(a->command[0])) - 1)
				return OptionError("too many --command arguments");
			a->command[a->ncommand++] = arg;
			return 0;
	}
	Usage(stderr);
	return OPT_BAD;
}

/* One getopt_long answer into a. */
static int
ParseOfflineOption(int c, char *arg, OfflineArgs *a)
{
	switch (c)
	{
		case 'c':
			a->csv = arg;
			return 0;
		case 'T':
			a->train_csv = arg;
			return 0;
		case 'V':
			a->val_csv = arg;
			return 0;
		case 't':
			a->target = arg;
			return 0;
		case 'f':
			a->family = arg;
			return 0;
		case 'p':
			a->params_text = arg;
			return 0;
		case 'm':
			a->metrics_out = arg;
			return 0;
		case 'a':
			a->artifact_out = arg;
			return 0;
		case 'R':
			a->popt.metric = arg;
			return 0;
		case 'N':
			a->popt.impute = 0;
			return 0;
		case 'M':
			a->popt.no_indicator = 1;
			return 0;
		case 'q':
			a->verbose = 1;
			return 0;
		case 'L':
			TrFamilyList(PrintFamily, NULL);
			return OPT_EXIT_OK;
		case 'h':
			Usage(stdout);
			return OPT_EXIT_OK;
	}
	return ParseValueOption(c, arg, a);
}

/* The whole command line; 0 to train, OPT_EXIT_OK or OPT_BAD. */
static int
ParseOfflineArgs(int argc, char **argv, OfflineArgs *a)
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
	int			c,
				rc;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if ((rc = ParseOfflineOption(c, optarg, a)) != 0)
			return rc;
	if (optind < argc)
	{
		fprintf(stderr, "easeml-trainer: unexpected argument \"%s\"\n", argv[optind]);
		Usage(stderr);
		return OPT_BAD;
	}
	a->command[a->ncommand] = NULL;
	if (a->target == NULL || (a->family == NULL) == (a->ncommand == 0) ||
		(a->csv == NULL) == (a->train_csv == NULL || a->val_csv == NULL) ||
		(a->train_csv == NULL) != (a->val_csv == NULL))
	{
		fprintf(stderr, "easeml-trainer: need --target, one of --family or --command, and either --csv or --train-csv with --val-csv\n");
		Usage(stderr);
		return OPT_BAD;
	}
	return 0;
}

/* The metrics line, to stdout and to --metrics-out; the artifact to its file. */
static int
WriteOfflineOutputs(const OfflineArgs *a, json_object *metrics, const TrResult *res,
					char *err, size_t errlen)
{
	const char *text = json_object_to_json_string_ext(metrics, JSON_C_TO_STRING_PLAIN);

	printf("%s\n", text);
	fflush(stdout);
	if (a->metrics_out != NULL)
	{
		size_t		len = strlen(text);
		char	   *line = malloc(len + 2);
		int			rc;

		if (line == NULL)
		{
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		memcpy(line, text, len);
		line[len] = '\n';
		rc = WriteFile(a->metrics_out, line, len + 1);
		free(line);
		if (rc != 0)
			return 1;			/* WriteFile said why */
	}
	if (a->artifact_out != NULL && res->artifact != NULL &&
		WriteFile(a->artifact_out, res->artifact, res->artifact_len) != 0)
		return 1;
	return 0;
}

/* offline mode */
static int
OfflineMain(int argc, char **argv)
{
	OfflineArgs a;
	TrTable		tab,
				vtab;
	TrResult	res;
	json_object *params = NULL,
			   *metrics = NULL;
	unsigned char *split = NULL;
	char		err[TR_ERRLEN];
	int			status = 1,
				rc;

	memset(&a, 0, sizeof(a));
	a.kind = TR_KIND_CLASSIFICATION;
	a.threads = 1;
	a.popt.val_fraction = 0.2;
	a.popt.impute = 1;
	if ((rc = ParseOfflineArgs(argc, argv, &a)) != 0)
		return rc == OPT_EXIT_OK ? 0 : 1;
	if (a.params_text != NULL)
	{
		params = TrJsonParse(a.params_text);
		if (params == NULL || !json_object_is_type(params, json_type_object))
		{
			fprintf(stderr, "easeml-trainer: --params is not a JSON object: %s\n", a.params_text);
			json_object_put(params);
			return 1;
		}
	}
	memset(&tab, 0, sizeof(tab));
	memset(&vtab, 0, sizeof(vtab));
	TrResultInit(&res);

	if (TrLoadCsv(a.csv ? a.csv : a.train_csv, a.target, a.kind, &tab, err, sizeof(err)) != 0)
		goto error;
	if (a.val_csv != NULL)
	{
		if (TrLoadCsv(a.val_csv, a.target, a.kind, &vtab, err, sizeof(err)) != 0 ||
			(split = ConcatTables(&tab, &vtab, err, sizeof(err))) == NULL)
			goto error;
		a.popt.fixed_split = split;
	}
	if (a.ncommand > 0 ?
		RunCommandOffline(&tab, a.command, params, &a.popt, a.verbose, a.threads, &res, &metrics) != 0 :
		TrRunCandidate(&tab, a.family, params, &a.popt, a.verbose ? PrintProgress : NULL, NULL,
					   &cancel_requested, a.threads, &res, &metrics) != 0)
	{
		snprintf(err, sizeof(err), "%s", res.error);
		goto error;
	}
	rc = WriteOfflineOutputs(&a, metrics, &res, err, sizeof(err));
	if (rc < 0)
		goto error;
	status = rc == 0 ? 0 : 1;
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
