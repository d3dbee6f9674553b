/*-------------------------------------------------------------------------
 *
 * autopolicy.c
 *	  The "auto" policy's choice on the installed history (see
 *	  autopolicy.h).
 *
 * IDENTIFICATION
 *	  src/core/autopolicy.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autopolicy.h"
#include "decision.h"
#include "refit_input.h"

/* shares of a kind's rows a model must be known in, tried in turn */
static const double block_shares[] = {1.0, 0.9, 0.75, 0.5};

double
AutoPolicyClock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * The complete block of one kind at one share: models known in at least
 * share x the kind's rows (into cols), rows knowing all of them (into
 * rows, at most AUTO_MAX_ROWS, in history order).  Returns the row count.
 */
static int
Block(const struct RefitInput *in, int kind, double share, int *cols,
	  int *n_cols, int *rows)
{
	int			nk = 0,
				nr = 0;

	for (int i = 0; i < in->m; i++)
		nk += in->row_kind[i] == kind;
	*n_cols = 0;
	if (nk == 0)
		return 0;
	for (int k = 0; k < in->K; k++)
	{
		int			known = 0;

		for (int i = 0; i < in->m; i++)
			if (in->row_kind[i] == kind && isfinite(in->cells[(size_t) i * in->K + k]))
				known++;
		if (known > 0 && known >= share * nk - 1e-9)
			cols[(*n_cols)++] = k;
	}
	for (int i = 0; i < in->m && nr < AUTO_MAX_ROWS; i++)
	{
		int			ok = in->row_kind[i] == kind;

		for (int j = 0; ok && j < *n_cols; j++)
			ok = isfinite(in->cells[(size_t) i * in->K + cols[j]]);
		if (ok)
			rows[nr++] = i;
	}
	return nr;
}

/* The measured runtime row of history row i's task, or -1. */
static int
CostRow(const struct RefitInput *in, int i, const int *cols, int n_cols)
{
	int64_t		task = in->row_task[i];

	if (task == 0 || in->cost_task == NULL)
		return -1;
	for (int c = 0; c < in->cost.mc; c++)
		if (in->cost_task[c] == task)
		{
			for (int j = 0; j < n_cols; j++)
			{
				double		rt = in->cost.seconds[(size_t) c * in->K + cols[j]];

				if (!(rt > 0) || !isfinite(rt))
					return -1;
			}
			return c;
		}
	return -1;
}

/* 64-bit FNV-1a. */
static uint64_t
Hash(uint64_t h, const void *data, size_t bytes)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < bytes; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/*
 * The signature of the chooser's inputs (autopolicy.h): the block in the
 * job (its kind, shape, qualities, runtimes and data-set sizes), or that
 * there is none; the slots; the options after auto.  Never 0.
 */
static uint64_t
InputsSignature(const AutoPolicyJob *job, int devices, const char *options)
{
	const AutoPolicyResult *res = &job->res;
	uint64_t	sig = 14695981039346656037ULL;

	sig = Hash(sig, &res->no_block, sizeof(int));
	if (!res->no_block)
	{
		sig = Hash(sig, &res->kind, sizeof(int));
		sig = Hash(sig, &res->rows, sizeof(int));
		sig = Hash(sig, &res->cols, sizeof(int));
		sig = Hash(sig, job->q, sizeof(double) * res->rows * res->cols);
		if (job->cost)
			sig = Hash(sig, job->cost, sizeof(double) * res->rows * res->cols);
		/* the data-set sizes the replay's cost model reads with runtimes */
		if (job->sizes)
			sig = Hash(sig, job->sizes, sizeof(double) * 2 * res->rows);
	}
	sig = Hash(sig, &devices, sizeof(int));
	/* other options after auto: another choice */
	if (options[0] != '\0')
		sig = Hash(sig, options, strlen(options));
	return sig != 0 ? sig : 1;
}

int
AutoPolicyKeeps(const AutoPolicyResult *prev, uint64_t sig)
{
	return prev != NULL && sig != 0 && prev->sig == sig &&
		(prev->have || prev->no_block);
}

/*
 * Fill the candidate names and the fallback spec of a result, each with
 * auto's options (what it would run).
 */
static void
ResultInit(AutoPolicyResult *res, const char *options)
{
	char		name[REPLAY_NAME_LEN];

	memset(res, 0, sizeof(*res));
	for (int i = 0; i < REPLAY_AUTO_MAX &&
		 ReplayAutoCandidate(i, name, sizeof(name)); i++)
	{
		if (PolicyAutoSpec(name, options, res->cand[i], REPLAY_NAME_LEN,
						   NULL, 0) != POLICY_OK)
			snprintf(res->cand[i], REPLAY_NAME_LEN, "%s", name);
		res->score[i] = NAN;
		res->n_cand++;
	}
	res->choice = REPLAY_AUTO_FALLBACK;
	res->fallback = 1;
	if (PolicyAutoSpec(POLICY_AUTO_FALLBACK, options, res->spec,
					   sizeof(res->spec), NULL, 0) != POLICY_OK)
		snprintf(res->spec, sizeof(res->spec), "%s", POLICY_AUTO_FALLBACK);
}

/*
 * Copy the chosen block (and its runtimes when enough rows have them)
 * into the job; returns 0, or -1 on no memory.
 */
static int
CopyBlock(AutoPolicyJob *job, const struct RefitInput *in, const int *rows,
		  int nr, const int *cols, int nc)
{
	int		   *crow = malloc(sizeof(int) * (nr > 0 ? nr : 1));
	int			costed = 0,
				n = 0;

	if (crow == NULL)
		return -1;
	for (int i = 0; i < nr; i++)
		costed += (crow[i] = CostRow(in, rows[i], cols, nc)) >= 0;
	/* runtimes only when they cover enough rows; those rows alone then */
	job->res.measured_costs = costed >= AUTO_MIN_ROWS && 2 * costed >= nr;
	job->q = malloc(sizeof(double) * nr * nc);
	if (job->res.measured_costs)
	{
		job->cost = malloc(sizeof(double) * nr * nc);
		job->sizes = malloc(sizeof(double) * nr * 2);
	}
	if (job->q == NULL || (job->res.measured_costs && (job->cost == NULL || job->sizes == NULL)))
	{
		free(crow);
		return -1;
	}
	for (int i = 0; i < nr; i++)
	{
		if (job->res.measured_costs && crow[i] < 0)
			continue;
		for (int j = 0; j < nc; j++)
		{
			double		v = in->cells[(size_t) rows[i] * in->K + cols[j]];

			/* the replay's loss is on [0, 1] (R^2 may fall below 0) */
			job->q[(size_t) n * nc + j] = v < 0 ? 0 : (v > 1 ? 1 : v);
			if (job->res.measured_costs)
				job->cost[(size_t) n * nc + j] = in->cost.seconds[(size_t) crow[i] * in->K + cols[j]];
		}
		if (job->res.measured_costs)
		{
			job->sizes[2 * n] = in->cost.sizes[3 * crow[i]];
			job->sizes[2 * n + 1] = in->cost.sizes[3 * crow[i] + 1];
		}
		n++;
	}
	free(crow);
	job->res.rows = n;
	job->res.cols = nc;
	return 0;
}

int
AutoPolicyBegin(AutoPolicyJob *job, const struct RefitInput *in,
				const AutoPolicyResult *prev, int *reused)
{
	int		   *rows = malloc(sizeof(int) * (in->m > 0 ? in->m : 1));
	int		   *cols = malloc(sizeof(int) * (in->K > 0 ? in->K : 1));
	int		   *best_cols = malloc(sizeof(int) * (in->K > 0 ? in->K : 1));
	int			best_kind = -1,
				best_nc = 0;
	double		best_share = 1.0;
	long		best_area = 0;
	int			nr,
				nc;
	int			devices = in->devices > 0 ? in->devices : 1;
	ReplayAutoInput ain;
	char		err[256];
	int			rc;

	memset(job, 0, sizeof(*job));
	*reused = 0;
	ResultInit(&job->res, in->auto_options);
	job->res.devices = devices;
	if (rows == NULL || cols == NULL || best_cols == NULL)
		goto nomem;
	/* the largest complete block over kinds and shares */
	for (int kind = 0; kind < DECISION_KINDS; kind++)
		for (size_t s = 0; s < sizeof(block_shares) / sizeof(block_shares[0]); s++)
		{
			nr = Block(in, kind, block_shares[s], cols, &nc, rows);
			if (nr >= AUTO_MIN_ROWS && nc >= 2 && (long) nr * nc > best_area)
			{
				best_area = (long) nr * nc;
				best_kind = kind;
				best_share = block_shares[s];
				best_nc = nc;
				memcpy(best_cols, cols, sizeof(int) * nc);
			}
		}
	if (best_kind < 0)
	{
		free(rows);
		free(cols);
		free(best_cols);
		job->res.no_block = 1;
		job->res.sig = InputsSignature(job, devices, in->auto_options);
		if (AutoPolicyKeeps(prev, job->res.sig))
		{
			job->res = *prev;	/* still no block: the same result */
			*reused = 1;
			return 1;
		}
		snprintf(job->res.reason, sizeof(job->res.reason),
				 "no choice: the history has no block of %d rows that know the same 2 or more models (%s runs)",
				 AUTO_MIN_ROWS, POLICY_AUTO_FALLBACK);
		return 1;
	}
	nr = Block(in, best_kind, best_share, cols, &nc, rows);
	job->res.kind = best_kind;
	if (CopyBlock(job, in, rows, nr, best_cols, best_nc) < 0)
		goto nomem;
	free(rows);
	free(cols);
	free(best_cols);

	job->res.sig = InputsSignature(job, devices, in->auto_options);
	if (AutoPolicyKeeps(prev, job->res.sig))
	{
		job->res = *prev;		/* the same inputs, the same choice */
		*reused = 1;
		AutoPolicyFree(job);
		return 1;
	}

	memset(&ain, 0, sizeof(ain));
	ain.quality = job->q;
	ain.cost = job->cost;
	ain.sizes = job->sizes;
	ain.n_rows = job->res.rows;
	ain.K = job->res.cols;
	ain.devices = devices;
	ain.options = in->auto_options;
	if ((rc = ReplayAutoBegin(&ain, &job->replay, err, sizeof(err))) < 0)
	{
		if (rc != REPLAY_BAD_INPUT)
			goto nomem;
		/* options the setting's check hook let through: a safeguard */
		AutoPolicyFree(job);
		snprintf(job->res.reason, sizeof(job->res.reason), "no choice: %.200s", err);
		return -1;
	}
	job->res.tenants = job->replay.tenants;
	job->running = 1;
	return 0;

nomem:
	free(rows);
	free(cols);
	free(best_cols);
	AutoPolicyFree(job);
	snprintf(job->res.reason, sizeof(job->res.reason), "no choice: out of memory");
	return -1;
}

/* The reason of a finished choice. */
static void
Explain(AutoPolicyResult *res)
{
	const char *unit = res->measured_costs ? "s" : " runs";
	int			n;

	n = snprintf(res->reason, sizeof(res->reason),
				 "%s reached loss 0.01/0.005/0.002 soonest replayed on %d %s history rows x %d models (%d as tenants, %d slot(s), %d draws, %s): geometric mean",
				 res->spec, res->rows,
				 res->kind == DECISION_REGRESSION ? "regression" : "classification",
				 res->cols, res->tenants, res->devices, REPLAY_AUTO_DRAWS,
				 res->measured_costs ? "measured runtimes" : "every run costs 1");
	for (int i = 0; i < res->n_cand && n > 0 && n < (int) sizeof(res->reason); i++)
		n += snprintf(res->reason + n, sizeof(res->reason) - n, "%s %s %.3g%s",
					  i ? "," : "", res->cand[i], res->score[i], unit);
}

int
AutoPolicyStep(AutoPolicyJob *job)
{
	char		err[200];
	double		t0 = AutoPolicyClock();
	int			rc;

	if (!job->running)
		return 1;
	rc = ReplayAutoStep(&job->replay, AUTO_SLICE_WORK, err, sizeof(err));
	job->res.seconds += AutoPolicyClock() - t0;
	job->res.work = ReplayAutoWork(&job->replay);
	if (rc == 0)
		return 0;
	if (rc < 0)
		snprintf(job->res.reason, sizeof(job->res.reason), "no choice: %s", err);
	else if (job->replay.choice == REPLAY_AUTO_FALLBACK)
	{
		/* final by the chooser's rules: a replay's "default" does the same */
		job->res.have = 1;
		if (job->replay.over_limit)
			snprintf(job->res.reason, sizeof(job->res.reason),
					 "%s runs: replaying %d %s history rows x %d models would pass the chooser's limit of %.3g work units",
					 POLICY_AUTO_FALLBACK, job->res.rows,
					 job->res.kind == DECISION_REGRESSION ? "regression" : "classification",
					 job->res.cols, (double) REPLAY_AUTO_WORK_MAX);
		else
			snprintf(job->res.reason, sizeof(job->res.reason),
					 "%s runs: fewer than %d of the %d %s history rows x %d models differ",
					 POLICY_AUTO_FALLBACK, REPLAY_AUTO_MIN_ROWS, job->res.rows,
					 job->res.kind == DECISION_REGRESSION ? "regression" : "classification",
					 job->res.cols);
	}
	else
	{
		job->res.have = 1;
		job->res.fallback = 0;
		job->res.choice = job->replay.choice;
		snprintf(job->res.spec, sizeof(job->res.spec), "%s", job->res.cand[job->res.choice]);
		for (int i = 0; i < job->res.n_cand; i++)
			job->res.score[i] = job->replay.score[i];
		Explain(&job->res);
	}
	AutoPolicyFree(job);
	return 1;
}

void
AutoPolicyFree(AutoPolicyJob *job)
{
	if (job->running)
		ReplayAutoFree(&job->replay);
	job->running = 0;
	free(job->q);
	free(job->cost);
	free(job->sizes);
	job->q = job->cost = job->sizes = NULL;
}
