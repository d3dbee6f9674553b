/*-------------------------------------------------------------------------
 *
 * slurm_parse.c
 *	  Text easeml exchanges with Slurm's commands: the job name that
 *	  carries a run id, the time limit, the batch script, the job id
 *	  sbatch prints, and the job states squeue and scontrol print.
 *
 * The batch script is the only text easeml hands to a shell, on the
 * compute node; it is built from the trainer's path (an admin's setting,
 * checked by SlurmSafeWord) and the numeric run id, never from anything a
 * tenant wrote.  Secrets (the connection string, the run's token) are not
 * in the script or in any command line: sbatch passes them on from its
 * environment (--export with names only).
 *
 * IDENTIFICATION
 *	  src/core/slurm_parse.c
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "slurm_parse.h"

/*
 * The class of a Slurm job state (squeue %T, scontrol JobState; a state
 * may carry a flag after a '+', as in "CANCELLED+").
 */
SlurmJobClass
SlurmStateClass(const char *state)
{
	static const char *const alive[] = {
		"RUNNING", "COMPLETING", "SUSPENDED", "RESIZING", "SIGNALING",
		"STAGE_OUT", "STOPPED", "SPECIAL_EXIT"
	};
	/* no trainer runs yet: easeml.run_timeout does not count this time */
	static const char *const pending[] = {
		"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
		"RESV_DEL_HOLD"
	};
	static const char *const lost[] = {
		"NODE_FAIL", "BOOT_FAIL", "PREEMPTED", "DEADLINE", "REVOKED"
	};
	char		s[SLURM_STATE_LEN];
	size_t		n = strcspn(state, "+ ");

	if (n == 0 || n >= sizeof(s))
		return SLURM_JOB_UNKNOWN;
	memcpy(s, state, n);
	s[n] = '\0';
	for (size_t i = 0; i < sizeof(alive) / sizeof(alive[0]); i++)
		if (strcmp(s, alive[i]) == 0)
			return SLURM_JOB_ALIVE;
	for (size_t i = 0; i < sizeof(pending) / sizeof(pending[0]); i++)
		if (strcmp(s, pending[i]) == 0)
			return SLURM_JOB_PENDING;
	for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++)
		if (strcmp(s, lost[i]) == 0)
			return SLURM_JOB_LOST;
	if (strcmp(s, "COMPLETED") == 0 || strcmp(s, "FAILED") == 0 ||
		strcmp(s, "OUT_OF_MEMORY") == 0)
		return SLURM_JOB_ENDED;
	if (strcmp(s, "TIMEOUT") == 0)
		return SLURM_JOB_TIMEOUT;
	if (strcmp(s, "CANCELLED") == 0)
		return SLURM_JOB_CANCELLED;
	return SLURM_JOB_UNKNOWN;
}

/*
 * A positive decimal id (a job id, a run id) that fills s up to its end or
 * to one of the characters in stop ("" for none): no sign, no blanks, and
 * no value beyond SLURM_ID_MAX (a longer number would be clamped by strtoll
 * and name another job).  Returns the id, or 0 when s is not one; *rest
 * (when not NULL) points past it.
 */
int64_t
SlurmParseId(const char *s, const char *stop, const char **rest)
{
	int64_t		id = 0;
	const char *p = s;

	if (!isdigit((unsigned char) *p))
		return 0;
	for (; isdigit((unsigned char) *p); p++)
	{
		if (id > (SLURM_ID_MAX - (*p - '0')) / 10)
			return 0;
		id = id * 10 + (*p - '0');
	}
	if (*p != '\0' && strchr(stop, *p) == NULL)
		return 0;
	if (rest != NULL)
		*rest = p;
	return id;
}

/*
 * How long to wait before asking Slurm again after the given number of
 * failures in a row: SLURM_RETRY_MS doubled each time, at most
 * SLURM_RETRY_MAX_MS (bounded exponential backoff); 0 failures: no wait.
 */
int
SlurmBackoffMs(int failures)
{
	long		ms = SLURM_RETRY_MS;

	if (failures <= 0)
		return 0;
	for (int i = 1; i < failures && ms < SLURM_RETRY_MAX_MS; i++)
		ms *= 2;
	return (int) (ms < SLURM_RETRY_MAX_MS ? ms : SLURM_RETRY_MAX_MS);
}

/* The job name of a run: <prefix>-run<id>.  Returns snprintf's count. */
int
SlurmJobName(char *buf, size_t len, const char *prefix, int64_t run_id)
{
	return snprintf(buf, len, "%s-run%lld", prefix, (long long) run_id);
}

/* The run id a job name carries, or 0 when it is not a name of ours. */
int64_t
SlurmJobNameRun(const char *name, const char *prefix)
{
	size_t		n = strlen(prefix);

	if (strncmp(name, prefix, n) != 0 || strncmp(name + n, "-run", 4) != 0)
		return 0;
	return SlurmParseId(name + n + 4, "", NULL);
}

/*
 * sbatch's --time for a budget in seconds: whole minutes (Slurm keeps
 * time limits in minutes), rounded up.  0 seconds: no limit of easeml's,
 * the partition's applies; returns 0 and leaves buf empty.
 */
int
SlurmTimeLimit(char *buf, size_t len, int seconds)
{
	int			minutes;

	if (seconds <= 0)
	{
		if (len > 0)
			buf[0] = '\0';
		return 0;
	}
	minutes = seconds / 60 + (seconds % 60 != 0);
	return snprintf(buf, len, "%d", minutes);
}

/*
 * A word that may stand in the batch script and in sbatch's arguments
 * without quoting: letters, digits and _ . / + - : @ , = %, not empty, not
 * starting with '-'.
 */
bool
SlurmSafeWord(const char *s)
{
	if (s == NULL || s[0] == '\0' || s[0] == '-')
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char) *p) && strchr("_./+-:@,=%", *p) == NULL)
			return false;
	return true;
}

/*
 * The batch script of a run: the trainer in a new scratch directory of its
 * own on the compute node (under $TMPDIR, as Slurm's prolog may set it),
 * removed when the script ends or is told to stop (scancel's SIGTERM; only
 * a SIGKILL leaves it behind); the job ends with the trainer's exit
 * status.  Returns the length, or -1 when the trainer's path is not a
 * safe word.
 */
int
SlurmBatchScript(char *buf, size_t len, const char *trainer, int64_t run_id)
{
	if (!SlurmSafeWord(trainer) || trainer[0] != '/')
		return -1;
	return snprintf(buf, len,
					"#!/bin/sh\n"
					"# easeml run %lld: generated by the easeml scheduler\n"
					"dir=$(mktemp -d \"${TMPDIR:-/tmp}/easeml-run-%lld.XXXXXX\") || exit 1\n"
					"trap 'rm -rf \"$dir\"' EXIT\n"
					"trap 'exit 143' TERM\n"
					"%s --run %lld --run-dir \"$dir\"\n",
					(long long) run_id, (long long) run_id, trainer,
					(long long) run_id);
}

/*
 * The job id in sbatch --parsable's output ("123" or "123;cluster" on a
 * line of its own; warnings on other lines are skipped), or 0 when there
 * is none or it is not a number easeml can follow (too long, trailing
 * text): such an answer is refused, never clamped into another job's id.
 */
int64_t
SlurmParseJobId(const char *out)
{
	const char *line = out;

	while (line != NULL && *line != '\0')
	{
		const char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		if (isdigit((unsigned char) *p))
		{
			const char *rest;
			int64_t		id = SlurmParseId(p, "; \t\r\n", &rest);

			if (id <= 0)
				return 0;
			/* a cluster name may follow; then only blanks to the line's end */
			if (*rest == ';')
				rest += strcspn(rest, " \t\r\n");
			while (*rest == ' ' || *rest == '\t' || *rest == '\r')
				rest++;
			return (*rest == '\n' || *rest == '\0') ? id : 0;
		}
		line = strchr(line, '\n');
		if (line != NULL)
			line++;
	}
	return 0;
}

/*
 * Does a Slurm command's error say that Slurm could not be reached (the
 * controller down or busy), rather than that it refused the request?
 */
bool
SlurmTransientError(const char *output)
{
	static const char *const transient[] = {
		"Unable to contact slurm controller", "Socket timed out",
		"Zero Bytes were transmitted", "Connection refused",
		"Slurm temporarily unable", "Resource temporarily unavailable",
		"Communication connection failure", "Could not establish a configuration source"
	};

	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (strstr(output, transient[i]) != NULL)
			return true;
	return false;
}

/* Copy at most len-1 bytes of [s, s+n) into buf, NUL-terminated. */
static void
CopyField(char *buf, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

/*
 * squeue --noheader --format=SLURM_SQUEUE_FORMAT output: one job a line,
 * id|name|state|reason.  Fills at most max jobs and returns how many;
 * lines that do not parse (a warning squeue printed) are skipped.  Jobs
 * whose name is not of this prefix get run_id 0.
 */
int
SlurmParseSqueue(const char *text, const char *prefix, SlurmJob *jobs, int max)
{
	int			n = 0;
	const char *line = text;

	while (line != NULL && *line != '\0' && n < max)
	{
		const char *eol = strchr(line, '\n');
		size_t		llen = eol ? (size_t) (eol - line) : strlen(line);
		const char *f[4];
		size_t		flen[4];
		int			nf = 0;
		const char *p = line;
		char		idbuf[32];
		char		name[256];

		while (nf < 4)
		{
			const char *bar = memchr(p, '|', llen - (size_t) (p - line));

			f[nf] = p;
			if (bar == NULL || nf == 3)
			{
				flen[nf++] = llen - (size_t) (p - line);
				break;
			}
			flen[nf++] = (size_t) (bar - p);
			p = bar + 1;
		}
		if (nf == 4 && flen[0] > 0 && flen[0] < sizeof(idbuf))
		{
			SlurmJob   *j = &jobs[n];

			CopyField(idbuf, sizeof(idbuf), f[0], flen[0]);
			memset(j, 0, sizeof(*j));
			j->job_id = SlurmParseId(idbuf, "", NULL);
			if (j->job_id > 0)
			{
				CopyField(name, sizeof(name), f[1], flen[1]);
				j->run_id = SlurmJobNameRun(name, prefix);
				CopyField(j->state, sizeof(j->state), f[2], flen[2]);
				CopyField(j->reason, sizeof(j->reason), f[3], flen[3]);
				while (strlen(j->reason) > 0 &&
					   isspace((unsigned char) j->reason[strlen(j->reason) - 1]))
					j->reason[strlen(j->reason) - 1] = '\0';
				n++;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return n;
}

/*
 * The value of Key= in one line of scontrol -o output (fields separated by
 * spaces), into buf; false when absent.  A value runs to the next space.
 */
static bool
ScontrolField(const char *line, const char *key, char *buf, size_t len)
{
	size_t		klen = strlen(key);

	for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen)
	{
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
		{
			const char *v = p + klen + 1;

			CopyField(buf, len, v, strcspn(v, " \n"));
			return true;
		}
	}
	return false;
}

/*
 * One job from `scontrol -o show job ID` output.  False when the line is
 * not a job (scontrol says "Invalid job id specified" for a job it has
 * forgotten).
 */
bool
SlurmParseScontrol(const char *line, const char *prefix, SlurmJob *job)
{
	char		buf[256];

	memset(job, 0, sizeof(*job));
	if (!ScontrolField(line, "JobId", buf, sizeof(buf)))
		return false;
	job->job_id = SlurmParseId(buf, "", NULL);
	if (job->job_id <= 0)
		return false;
	if (ScontrolField(line, "JobName", buf, sizeof(buf)))
		job->run_id = SlurmJobNameRun(buf, prefix);
	if (!ScontrolField(line, "JobState", job->state, sizeof(job->state)))
		return false;
	(void) ScontrolField(line, "Reason", job->reason, sizeof(job->reason));
	if (ScontrolField(line, "ExitCode", buf, sizeof(buf)))
	{
		int			code,
					sig;

		if (sscanf(buf, "%d:%d", &code, &sig) == 2)
		{
			job->has_exit = true;
			job->exit_code = code;
			job->exit_signal = sig;
		}
	}
	return true;
}

/*
 * A job from `sacct --noheader --parsable2 --allocations --format=
 * SLURM_SACCT_FORMAT --jobs=ID` output (its first line: id|name|state|
 * code:signal), for a job slurmctld has forgotten but the accounting
 * database remembers.  False when there is no such line.
 */
bool
SlurmParseSacct(const char *text, const char *prefix, SlurmJob *job)
{
	char		line[512];
	char	   *f[4];
	char	   *p;
	int			code,
				sig;

	memset(job, 0, sizeof(*job));
	CopyField(line, sizeof(line), text, strcspn(text, "\n"));
	p = line;
	for (int i = 0; i < 4; i++)
	{
		f[i] = p;
		p = strchr(p, '|');
		if (p == NULL && i < 3)
			return false;
		if (p != NULL)
			*p++ = '\0';
	}
	job->job_id = SlurmParseId(f[0], "", NULL);
	if (job->job_id <= 0 || f[2][0] == '\0')
		return false;
	job->run_id = SlurmJobNameRun(f[1], prefix);
	/* "CANCELLED by 1000": the state is the first word */
	CopyField(job->state, sizeof(job->state), f[2], strcspn(f[2], " "));
	snprintf(job->reason, sizeof(job->reason), "%s (from accounting)", f[2]);
	if (sscanf(f[3], "%d:%d", &code, &sig) == 2)
	{
		job->has_exit = true;
		job->exit_code = code;
		job->exit_signal = sig;
	}
	return true;
}

/*
 * The job's end as a wait status, so that it is described and recorded
 * like a local trainer's (src/worker/supervisor.c): the signal that ended it, or
 * its exit code; -1 when Slurm did not say.
 */
int
SlurmWaitStatus(const SlurmJob *job)
{
	if (!job->has_exit)
		return -1;
	if (job->exit_signal > 0 && job->exit_signal < 128)
		return job->exit_signal & 0x7f;
	return (job->exit_code & 0xff) << 8;
}
