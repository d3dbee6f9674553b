/*-------------------------------------------------------------------------
 *
 * test_slurm.c
 *	  Unit tests of what easeml reads from and writes to Slurm
 *	  (src/core/slurm_parse.c).
 *
 * IDENTIFICATION
 *	  src/core/test/test_slurm.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/slurm_parse.h"
#include "test.h"

/* Job names, time limits, the batch script and squeue/scontrol output. */
void
TestSlurmParse(void)
{
	char		buf[1024];
	SlurmJob	jobs[8];
	SlurmJob	j;
	int			n;

	SlurmJobName(buf, sizeof(buf), "easeml-7", 42);
	CHECK(strcmp(buf, "easeml-7-run42") == 0, "job name: %s", buf);
	CHECK(SlurmJobNameRun("easeml-7-run42", "easeml-7") == 42, "run id from name");
	CHECK(SlurmJobNameRun("easeml-8-run42", "easeml-7") == 0, "another prefix is not ours");
	CHECK(SlurmJobNameRun("easeml-7-run42x", "easeml-7") == 0 &&
		  SlurmJobNameRun("easeml-7-run", "easeml-7") == 0 &&
		  SlurmJobNameRun("easeml-7-run-3", "easeml-7") == 0 &&
		  SlurmJobNameRun("easeml-7-run0", "easeml-7") == 0, "malformed names are not ours");

	CHECK(SlurmTimeLimit(buf, sizeof(buf), 0) == 0 && buf[0] == '\0', "no budget: no --time");
	SlurmTimeLimit(buf, sizeof(buf), 5);
	CHECK(strcmp(buf, "1") == 0, "5 s rounds up to a minute: %s", buf);
	SlurmTimeLimit(buf, sizeof(buf), 120);
	CHECK(strcmp(buf, "2") == 0, "120 s is 2 minutes: %s", buf);
	SlurmTimeLimit(buf, sizeof(buf), 121);
	CHECK(strcmp(buf, "3") == 0, "121 s is 3 minutes: %s", buf);

	CHECK(SlurmSafeWord("/usr/lib/postgresql/15/bin/easeml-trainer"), "a path is safe");
	CHECK(!SlurmSafeWord("/tmp/a b") && !SlurmSafeWord("/tmp/a'b") &&
		  !SlurmSafeWord("/tmp/$(id)") && !SlurmSafeWord("/tmp/a;b") &&
		  !SlurmSafeWord("-x") && !SlurmSafeWord("") && !SlurmSafeWord(NULL) &&
		  !SlurmSafeWord("a\nb"), "quotes, spaces, $, ;, newlines and options are not");
	CHECK(SlurmBatchScript(buf, sizeof(buf), "/opt/easeml-trainer", 9) > 0 &&
		  strstr(buf, "/opt/easeml-trainer --run 9 --run-dir \"$dir\"\n") != NULL &&
		  strncmp(buf, "#!/bin/sh\n", 10) == 0, "batch script runs the trainer:\n%s", buf);
	CHECK(SlurmBatchScript(buf, sizeof(buf), "/opt/x'; rm -rf /", 9) < 0 &&
		  SlurmBatchScript(buf, sizeof(buf), "easeml-trainer", 9) < 0,
		  "no batch script for an unsafe or relative trainer path");

	CHECK(SlurmParseJobId("123\n") == 123 && SlurmParseJobId("77;cluster\n") == 77,
		  "sbatch --parsable job ids");
	CHECK(SlurmTransientError("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)") &&
		  SlurmTransientError("sbatch: error: Socket timed out on send/recv operation"),
		  "an unreachable controller is transient");
	CHECK(!SlurmTransientError("sbatch: error: Batch job submission failed: Invalid partition name specified") &&
		  !SlurmTransientError("sbatch: error: Invalid generic resource (gres) specification") &&
		  !SlurmTransientError(""), "a refusal is not");
	CHECK(SlurmParseJobId("sbatch: error: Batch job submission failed\n") == 0 &&
		  SlurmParseJobId("") == 0 && SlurmParseJobId("12x") == 0, "no job id in an error");
	/* issue 22: an id too long for easeml was clamped and accepted */
	CHECK(SlurmParseJobId("99999999999999999999999\n") == 0 &&
		  SlurmParseJobId("9223372036854775808\n") == 0 &&
		  SlurmParseJobId("1000000000000\n") == 0, "ids beyond SLURM_ID_MAX are refused");
	CHECK(SlurmParseJobId("999999999999\n") == INT64_C(999999999999) &&
		  SlurmParseJobId("4294967295\n") == INT64_C(4294967295), "the largest ids are kept");
	CHECK(SlurmParseJobId("-5\n") == 0 && SlurmParseJobId("+5\n") == 0 &&
		  SlurmParseJobId("0\n") == 0 && SlurmParseJobId("123 456\n") == 0 &&
		  SlurmParseJobId("12.5\n") == 0 && SlurmParseJobId("0x10\n") == 0,
		  "signs, zero, two numbers, decimals and hex are not job ids");
	CHECK(SlurmParseJobId("sbatch: warning: can't honor --ntasks\n88\n") == 88 &&
		  SlurmParseJobId("  89 \r\n") == 89, "warnings on other lines and blanks are skipped");
	CHECK(SlurmParseId("42", "", NULL) == 42 && SlurmParseId("42|x", "|", NULL) == 42 &&
		  SlurmParseId("42|x", "", NULL) == 0 && SlurmParseId("", "", NULL) == 0,
		  "SlurmParseId stops only where it is told");
	CHECK(SlurmJobNameRun("easeml-7-run99999999999999999999", "easeml-7") == 0,
		  "a run id too long is not ours");

	/* bounded exponential backoff after failures in a row */
	CHECK(SlurmBackoffMs(0) == 0, "no failure: no wait");
	CHECK(SlurmBackoffMs(1) == SLURM_RETRY_MS && SlurmBackoffMs(2) == 2 * SLURM_RETRY_MS &&
		  SlurmBackoffMs(3) == 4 * SLURM_RETRY_MS, "doubles: %d %d %d",
		  SlurmBackoffMs(1), SlurmBackoffMs(2), SlurmBackoffMs(3));
	CHECK(SlurmBackoffMs(7) == SLURM_RETRY_MAX_MS && SlurmBackoffMs(1000) == SLURM_RETRY_MAX_MS &&
		  SlurmBackoffMs(INT_MAX) == SLURM_RETRY_MAX_MS, "bounded: %d", SlurmBackoffMs(1000));
	{
		long		total = 0;
		int			calls = 0;

		/* a controller down for ten minutes: how often is it asked? */
		for (int f = 1; total < 600000; f++, calls++)
			total += SlurmBackoffMs(f);
		CHECK(calls <= 16, "ten minutes of failures cost %d commands, not hundreds a second", calls);
	}

	n = SlurmParseSqueue("5|easeml-7-run3|RUNNING|None\n"
						 "6|easeml-7-run4|PENDING|Resources\n"
						 "squeue: warning: something\n"
						 "7|other|COMPLETED|None\n"
						 "8|easeml-7-run9|NODE_FAIL|NodeDown\n", "easeml-7", jobs, 8);
	CHECK(n == 4, "4 jobs, the warning skipped: %d", n);
	CHECK(jobs[0].job_id == 5 && jobs[0].run_id == 3 && strcmp(jobs[0].state, "RUNNING") == 0,
		  "first job");
	CHECK(jobs[1].run_id == 4 && strcmp(jobs[1].reason, "Resources") == 0, "pending reason");
	CHECK(jobs[2].run_id == 0, "a job that is not ours");
	CHECK(jobs[3].job_id == 8 && SlurmStateClass(jobs[3].state) == SLURM_JOB_LOST,
		  "node failure is lost");
	CHECK(SlurmParseSqueue("5|a|RUNNING|None\n6|b|RUNNING|None\n", "a", jobs, 1) == 1,
		  "at most max jobs");
	CHECK(SlurmParseSqueue("", "a", jobs, 8) == 0, "no jobs");

	CHECK(SlurmStateClass("PENDING") == SLURM_JOB_PENDING &&
		  SlurmStateClass("CONFIGURING") == SLURM_JOB_PENDING &&
		  SlurmStateClass("REQUEUE_HOLD") == SLURM_JOB_PENDING &&
		  SlurmStateClass("RUNNING") == SLURM_JOB_ALIVE &&
		  SlurmStateClass("COMPLETING") == SLURM_JOB_ALIVE &&
		  SlurmStateClass("COMPLETED") == SLURM_JOB_ENDED &&
		  SlurmStateClass("FAILED") == SLURM_JOB_ENDED &&
		  SlurmStateClass("OUT_OF_MEMORY") == SLURM_JOB_ENDED &&
		  SlurmStateClass("TIMEOUT") == SLURM_JOB_TIMEOUT &&
		  SlurmStateClass("CANCELLED+") == SLURM_JOB_CANCELLED &&
		  SlurmStateClass("CANCELLED by 0") == SLURM_JOB_CANCELLED &&
		  SlurmStateClass("PREEMPTED") == SLURM_JOB_LOST &&
		  SlurmStateClass("BOOT_FAIL") == SLURM_JOB_LOST &&
		  SlurmStateClass("") == SLURM_JOB_UNKNOWN &&
		  SlurmStateClass("WHATEVER") == SLURM_JOB_UNKNOWN, "state classes");

	CHECK(SlurmParseScontrol("JobId=11 JobName=easeml-7-run5 UserId=postgres(101) JobState=FAILED "
							 "Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 RunTime=00:00:03",
							 "easeml-7", &j), "scontrol line parses");
	CHECK(j.job_id == 11 && j.run_id == 5 && strcmp(j.state, "FAILED") == 0 &&
		  strcmp(j.reason, "NonZeroExitCode") == 0 && j.has_exit && j.exit_code == 3 &&
		  j.exit_signal == 0, "scontrol fields");
	CHECK(SlurmWaitStatus(&j) == (3 << 8), "exit code 3 as a wait status");
	CHECK(SlurmParseScontrol("JobId=12 JobName=x JobState=CANCELLED Reason=None "
							 "ArrayJobId=4 ExitCode=0:15", "easeml-7", &j) &&
		  j.run_id == 0 && SlurmWaitStatus(&j) == 15, "a signal as a wait status");
	CHECK(!SlurmParseScontrol("slurm_load_jobs error: Invalid job id specified", "easeml-7", &j),
		  "a forgotten job is not a job");
	CHECK(SlurmParseSacct("21|easeml-7-run8|NODE_FAIL|0:0\n", "easeml-7", &j) &&
		  j.job_id == 21 && j.run_id == 8 && SlurmStateClass(j.state) == SLURM_JOB_LOST &&
		  j.has_exit && SlurmWaitStatus(&j) == 0, "sacct line parses");
	CHECK(SlurmParseSacct("22|x|CANCELLED by 1000|0:15", "easeml-7", &j) &&
		  strcmp(j.state, "CANCELLED") == 0 && SlurmWaitStatus(&j) == 15, "sacct's cancel by a user");
	CHECK(!SlurmParseSacct("", "easeml-7", &j) &&
		  !SlurmParseSacct("sacct: error: Slurm accounting storage is disabled", "easeml-7", &j) &&
		  !SlurmParseSacct("1|a|", "easeml-7", &j), "no job in sacct's errors");
	CHECK(SlurmParseScontrol("JobId=13 JobName=easeml-7-run1 JobState=NODE_FAIL Reason=NodeDown",
							 "easeml-7", &j) && !j.has_exit && SlurmWaitStatus(&j) == -1,
		  "no exit code: unknown status");
}
