/*-------------------------------------------------------------------------
 *
 * replay_auto.c
 *	  The "auto" policy choice (replay.h, src/core/autopolicy.h): nested
 *	  replays on the installed history choose the candidate with the
 *	  smallest geometric mean time to the loss targets; and the candidate
 *	  lists.
 *
 * IDENTIFICATION
 *	  src/core/replay_auto.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "replay_internal.h"

/*
 * The "auto" chooser (replay.h): replay the candidates on history rows
 * alone -- some of them play tenants, the others build their prior, as an
 * installed history would live -- and choose the candidate whose times to
 * the loss targets have the smallest geometric mean over the inner draws
 * (a target never reached counts as twice the inner draw's last
 * completion).  Every input besides the rows and the devices is fixed
 * here, so the live worker and a replay's "default" choose alike.  [R]
 */
static const double auto_thresholds[] = {0.01, 0.005, 0.002};

/* Distinct rows among the first m (a replay draws tenants from those). */
static int
DistinctCount(const double *q, int m, int K)
{
	int			n = 0;

	for (int i = 0; i < m; i++)
	{
		int			dup = 0;

		for (int j = 0; j < i && !dup; j++)
			dup = memcmp(q + (size_t) i * K, q + (size_t) j * K,
						 sizeof(double) * K) == 0;
		n += !dup;
	}
	return n;
}

int
ReplayAutoBegin(const ReplayAutoInput *ain, ReplayAutoJob *job, char *err,
				size_t errlen)
{
	const int	K = ain->K;
	const int	m = ain->n_rows < REPLAY_AUTO_MAX_ROWS ? ain->n_rows : REPLAY_AUTO_MAX_ROWS;
	const int	NK = (int) (sizeof(auto_thresholds) / sizeof(auto_thresholds[0]));
	ReplayConfig *in = &job->in;
	int			distinct;

	memset(job, 0, sizeof(*job));
	job->choice = REPLAY_AUTO_FALLBACK;
	if (ain->candidates != NULL &&
		ReplayAutoCheckCandidates(ain->candidates, err, errlen) != 0)
		return REPLAY_BAD_INPUT;
	if (ain->draws < 0 || ain->draws > REPLAY_AUTO_DRAWS_MAX)
	{
		ReplaySetErr(err, errlen, "auto draws %d: 0 (the default) to %d",
			   ain->draws, REPLAY_AUTO_DRAWS_MAX);
		return REPLAY_BAD_INPUT;
	}
	job->draws = ain->draws > 0 ? ain->draws : REPLAY_AUTO_DRAWS;
	job->work_max = ain->work_max > 0 ? ain->work_max : REPLAY_AUTO_WORK_MAX;
	snprintf(job->list, sizeof(job->list), "%s",
			 ain->candidates ? ain->candidates : POLICY_AUTO_CANDIDATES);
	snprintf(job->options, sizeof(job->options), "%s",
			 ain->options ? ain->options : "");
	/* every candidate with auto's options: what it would run */
	for (char *save = NULL, *tok = strtok_r(job->list, ",", &save);
		 tok && job->n_cand < REPLAY_AUTO_MAX; tok = strtok_r(NULL, ",", &save))
	{
		if (PolicyAutoSpec(tok, job->options, job->specs[job->n_cand],
						   REPLAY_NAME_LEN, err, errlen) != POLICY_OK)
			return REPLAY_BAD_INPUT;
		job->cands[job->n_cand] = job->specs[job->n_cand];
		job->n_cand++;
	}
	for (int p = 0; p < job->n_cand; p++)
		job->score[p] = NAN;
	if (m < REPLAY_AUTO_MIN_ROWS || K < 2 || ain->quality == NULL)
	{
		job->done = 1;			/* too little history: the fallback */
		return REPLAY_OK;
	}

	job->q = malloc(sizeof(double) * (size_t) m * K);
	if (ain->cost)
		job->cost = malloc(sizeof(double) * (size_t) m * K);
	if (ain->cost && ain->sizes)
		job->sizes = malloc(sizeof(double) * (size_t) m * 2);
	if (job->q == NULL || (ain->cost && job->cost == NULL) ||
		(ain->cost && ain->sizes && job->sizes == NULL))
	{
		ReplayAutoFree(job);
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	memcpy(job->q, ain->quality, sizeof(double) * (size_t) m * K);
	if (job->cost)
		memcpy(job->cost, ain->cost, sizeof(double) * (size_t) m * K);
	if (job->sizes)
		memcpy(job->sizes, ain->sizes, sizeof(double) * (size_t) m * 2);
	/* a replay draws its tenants among distinct rows */
	distinct = DistinctCount(job->q, m, K);
	job->work = (double) m * m * K / 2;
	if (distinct < REPLAY_AUTO_MIN_ROWS)
	{
		job->done = 1;
		return REPLAY_OK;
	}

	ReplayConfigDefault(in);
	in->quality = job->q;
	in->cost = job->cost;
	in->sizes = job->sizes;
	in->n_rows = m;
	in->K = K;
	in->n_tenants = distinct / 2 < REPLAY_AUTO_MAX_TENANTS ? distinct / 2 :
		REPLAY_AUTO_MAX_TENANTS;
	in->devices = ain->devices > 0 ? ain->devices : 1;
	in->n_policies = job->n_cand;
	in->policies = job->cands;
	in->draws = 1;				/* one inner draw at a time: first_draw */
	in->seed = REPLAY_AUTO_SEED;
	in->n_thresholds = NK;
	in->thresholds = auto_thresholds;
	/* measured seconds with the live cost model, or 1 per run */
	in->cost_model = job->sizes ? POLICY_COST_SIZE_GP : POLICY_COST_NONE;
	in->grid_points = 2;
	/* nothing after the last target matters to the choice */
	in->stop_loss = auto_thresholds[NK - 1];
	job->tenants = in->n_tenants;
	return REPLAY_OK;
}

double
ReplayAutoWork(const ReplayAutoJob *job)
{
	return job->work + (job->inner ? ReplayJobWork(job->inner) : 0.0);
}

/* A finished inner draw's times into the candidates' sums. */
static int
AutoAddDraw(ReplayAutoJob *job, char *err, size_t errlen)
{
	ReplayOutput out;
	double		horizon = 0.0;
	int			rc;

	rc = ReplayJobTake(job->inner, &out, err, errlen);
	job->work += ReplayJobWork(job->inner);
	ReplayJobFree(job->inner);
	job->inner = NULL;
	if (rc < 0)
		return rc;
	for (int p = 0; p < job->n_cand; p++)
		if (out.final_time[p] > horizon)
			horizon = out.final_time[p];
	for (int p = 0; p < job->n_cand; p++)
		for (int k = 0; k < out.n_thresholds; k++)
		{
			double		t = out.time_to[(size_t) p * out.n_thresholds + k];

			if (isinf(t))
				t = 2.0 * horizon;
			job->log_sum[p] += log(t > 1e-9 ? t : 1e-9);
		}
	job->n_terms += out.n_thresholds;
	ReplayOutputFree(&out);
	return REPLAY_OK;
}

/* About 'work' units of the choice; 1 when it is made. */
int
ReplayAutoStep(ReplayAutoJob *job, double work, char *err, size_t errlen)
{
	double		start = ReplayAutoWork(job);

	while (!job->done)
	{
		int			rc;

		if (job->inner == NULL)
		{
			job->in.first_draw = job->draw;
			rc = ReplayJobBegin(&job->in, &job->inner, err, errlen);
			if (rc < 0)
				return rc;
		}
		rc = ReplayJobStep(job->inner, work - (ReplayAutoWork(job) - start),
						   job->work_max - job->work, err, errlen);
		if (rc == REPLAY_WORK_LIMIT)
		{
			/* too big to replay within the limit: the fallback */
			job->work += ReplayJobWork(job->inner);
			ReplayJobFree(job->inner);
			job->inner = NULL;
			job->over_limit = 1;
			job->done = 1;
			break;
		}
		if (rc < 0)
			return rc;
		if (rc == 0)
			return 0;			/* the slice is spent */
		if ((rc = AutoAddDraw(job, err, errlen)) < 0)
			return rc;
		if (++job->draw < job->draws)
		{
			if (ReplayAutoWork(job) - start >= work)
				return 0;
			continue;
		}
		job->choice = 0;
		for (int p = 0; p < job->n_cand; p++)
		{
			job->score[p] = exp(job->log_sum[p] / job->n_terms);
			if (job->log_sum[p] < job->log_sum[job->choice])
				job->choice = p;
		}
		job->done = 1;
	}
	return 1;
}

void
ReplayAutoFree(ReplayAutoJob *job)
{
	ReplayJobFree(job->inner);
	job->inner = NULL;
	free(job->q);
	free(job->cost);
	free(job->sizes);
	job->q = job->cost = job->sizes = NULL;
}

/* The whole choice at once. */
int
ReplayAutoChoose(const ReplayAutoInput *in, int *choice, double *scores,
				 char *err, size_t errlen)
{
	ReplayAutoJob job;
	int			rc;

	*choice = REPLAY_AUTO_FALLBACK;
	rc = ReplayAutoBegin(in, &job, err, errlen);
	while (rc == 0)
		rc = ReplayAutoStep(&job, INFINITY, err, errlen);
	if (rc == 1)
	{
		*choice = job.choice;
		if (scores)
			memcpy(scores, job.score, sizeof(double) * job.n_cand);
		rc = REPLAY_OK;
	}
	ReplayAutoFree(&job);
	return rc;
}

const char *
ReplayAutoChosen(const ReplayAutoJob *job, char *buf, size_t buflen)
{
	if (job->choice == REPLAY_AUTO_FALLBACK)
		return PolicyAutoSpec(POLICY_AUTO_FALLBACK, job->options, buf, buflen,
							  NULL, 0) == POLICY_OK ? buf : NULL;
	if (job->choice < 0 || job->choice >= job->n_cand)
		return NULL;
	snprintf(buf, buflen, "%s", job->specs[job->choice]);
	return strlen(job->specs[job->choice]) < buflen ? buf : NULL;
}

const char *
ReplayAutoSpec(const char *list, int choice, char *buf, size_t buflen)
{
	if (choice == REPLAY_AUTO_FALLBACK)
	{
		snprintf(buf, buflen, "%s", POLICY_AUTO_FALLBACK);
		return buf;
	}
	return ReplayAutoCandidateOf(list ? list : POLICY_AUTO_CANDIDATES, choice,
								 buf, buflen);
}

/* Name of candidate i of a list (into buf), or NULL when out of range. */
const char *
ReplayAutoCandidateOf(const char *list, int i, char *buf, size_t buflen)
{
	char		copy[REPLAY_NAME_LEN * 2];
	int			n = 0;

	snprintf(copy, sizeof(copy), "%s", list);
	for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
		 tok = strtok_r(NULL, ",", &save), n++)
		if (n == i)
		{
			snprintf(buf, buflen, "%s", tok);
			return buf;
		}
	return NULL;
}

/* Name of auto candidate i (into buf), or NULL when i is out of range. */
const char *
ReplayAutoCandidate(int i, char *buf, size_t buflen)
{
	return ReplayAutoCandidateOf(POLICY_AUTO_CANDIDATES, i, buf, buflen);
}

/* An auto_candidates list: 1 to REPLAY_AUTO_MAX specs, none "auto". */
int
ReplayAutoCheckCandidates(const char *list, char *err, size_t errlen)
{
	char		name[REPLAY_NAME_LEN];
	PolicyParams pp;
	int			n = 0;

	if (strlen(list) >= REPLAY_NAME_LEN * 2 || list[0] == '\0' || list[0] == ',' ||
		list[strlen(list) - 1] == ',' || strstr(list, ",,") != NULL)
	{
		ReplaySetErr(err, errlen, "auto candidates \"%.40s\": 1 to %d specs, comma-separated, at most %d characters",
			   list, REPLAY_AUTO_MAX, REPLAY_NAME_LEN * 2 - 1);
		return REPLAY_BAD_INPUT;
	}
	while (ReplayAutoCandidateOf(list, n, name, sizeof(name)) != NULL)
	{
		if (PolicyParseSpec(name, &pp, err, errlen) != POLICY_OK)
			return REPLAY_BAD_INPUT;
		if (pp.auto_select || ++n > REPLAY_AUTO_MAX)
		{
			ReplaySetErr(err, errlen, "auto candidates: \"%.40s\" is auto itself or one too many", name);
			return REPLAY_BAD_INPUT;
		}
	}
	return REPLAY_OK;
}
