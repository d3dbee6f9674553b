/*-------------------------------------------------------------------------
 *
 * test_replay.c
 *	  Unit tests of the CSV reader (src/core/csv.c) and the replay simulator
 *	  (src/core/replay_*.c): a hand-computed replay, several devices, seeds,
 *	  random cases against their invariants, cancellation.
 *
 * IDENTIFICATION
 *	  src/core/test/test_replay.c
 *
 *-------------------------------------------------------------------------
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gp.h"
#include "core/policy.h"
#include "core/csv.h"
#include "core/replay.h"
#include "test.h"

/* CSV reader: quotes, CRLF, blank lines, NaN, errors with positions. */
/*
 * The shared reader (src/core/csv.c) on what COPY ... (FORMAT csv) writes: a
 * quoted field with a comma, a quote and a line break is one field.
 */
static void
TestCsvReader(void)
{
	const char *copy = "\xEF\xBB\xBF" "dataset,\"knn-5\"\n"
		"\"a,\"\"b\"\"\nc\",0.5\n"
		"   \n"
		"d2,1e-308\n"
		"d3,\" 0.25 \"\n";
	const char *dup = "id,a\nx,1\ny,2\n x ,3\n";
	const char *open_quote = "id,a\n\"x,1\n";
	ReplayMatrix m;
	CsvReader	r;
	char		err[256];
	double		v;
	int			rc;

	rc = ReplayParseCsv(copy, strlen(copy), &m, err, sizeof(err));
	CHECK(rc == 0, "COPY-quoted rows: %s", err);
	if (rc == 0)
	{
		CHECK(m.rows == 3 && m.cols == 1, "shape %d x %d", m.rows, m.cols);
		CHECK(strcmp(m.col_names[0], "knn-5") == 0, "BOM skipped, quoted header");
		CHECK(strcmp(m.row_ids[0], "a,\"b\"\nc") == 0, "quoted id: %s", m.row_ids[0]);
		CHECK(m.data[1] == 1e-308, "subnormal cell read: %g", m.data[1]);
		CHECK(m.data[2] == 0.25, "quoted number with blanks");
		CHECK(m.row_lines[1] == 5, "blank line skipped, line counted: %ld", m.row_lines[1]);
		ReplayMatrixFree(&m);
	}
	rc = ReplayParseCsv(dup, strlen(dup), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "line 4") && strstr(err, "line 2"),
		  "duplicate row id rejected: %s", err);
	rc = ReplayParseCsv(open_quote, strlen(open_quote), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "unterminated"), "open quote: %s", err);

	CHECK(CsvParseNumber("1e-320", &v) == CSV_NUMBER && v > 0 && v < 1e-300,
		  "deep subnormal");
	CHECK(CsvParseNumber("1e-400", &v) == CSV_NUMBER && v == 0, "underflow to 0");
	CHECK(CsvParseNumber("1e999", &v) == CSV_NUMBER && isinf(v), "overflow is Inf");
	CHECK(CsvParseNumber(" NA ", &v) == CSV_MISSING && isnan(v), "NA missing");
	CHECK(CsvParseNumber("?", &v) == CSV_MISSING, "? missing");
	CHECK(CsvParseNumber("12x", &v) == CSV_NOT_NUMBER, "12x");
	CHECK(CsvParseNumber("-", &v) == CSV_NOT_NUMBER, "lone minus");
	CHECK(CsvParseNumber("-42", &v) == CSV_NUMBER && v == -42, "integer fast path");
	CHECK(CsvParseNumber("0x10", &v) == CSV_NUMBER, "strtod accepts hex");

	CsvInit(&r, "a,b\r\n", 5);
	CHECK(CsvNextRecord(&r) == 1 && CsvNextField(&r) == CSV_MORE &&
		  strcmp(r.buf, "a") == 0 && CsvNextField(&r) == CSV_LAST &&
		  strcmp(r.buf, "b") == 0 && CsvNextRecord(&r) == 0, "CRLF record");
	CsvFree(&r);
}

void
TestCsv(void)
{
	const char *good = "\"id\",\"{'a': 1, 'b': 2}\",\"x\"\"y\"\r\n"
		"00011,0.5,1e-3\r\n\r\n"
		"7,,nan\n"
		"8,0.25,0.75";
	const char *bad_num = "id,a,b\n1,0.5,zz\n";
	const char *bad_fields = "id,a,b\n1,0.5\n";
	const char *sizes = "id,rows,features\n8,80,8\n11,110,11\n7,70,7\n";
	ReplayMatrix m,
				s;
	char		err[256];
	double		joined[3 * 2];
	int			rc;

	rc = ReplayParseCsv(good, strlen(good), &m, err, sizeof(err));
	CHECK(rc == 0, "good csv: %s", err);
	CHECK(m.rows == 3 && m.cols == 2, "shape %d x %d", m.rows, m.cols);
	CHECK(strcmp(m.col_names[0], "{'a': 1, 'b': 2}") == 0, "quoted header with commas: %s",
		  m.col_names[0]);
	CHECK(strcmp(m.col_names[1], "x\"y") == 0, "escaped quote");
	CHECK(strcmp(m.row_ids[0], "00011") == 0 && m.data[1] == 1e-3, "first row");
	CHECK(isnan(m.data[2]) && isnan(m.data[3]), "empty and nan cells");
	CHECK(m.data[4] == 0.25 && m.data[5] == 0.75, "last row without newline");

	rc = ReplayParseCsv(sizes, strlen(sizes), &s, err, sizeof(err));
	CHECK(rc == 0, "sizes csv");
	rc = ReplayJoinById(&m, &s, joined, err, sizeof(err));
	CHECK(rc == 0, "join: %s", err);
	CHECK(joined[0] == 110 && joined[2] == 70 && joined[5] == 8, "join on integer id");
	ReplayMatrixFree(&s);
	{
		const char *miss = "id,r,f\n8,1,1\n";

		ReplayParseCsv(miss, strlen(miss), &s, err, sizeof(err));
		rc = ReplayJoinById(&m, &s, joined, err, sizeof(err));
		CHECK(rc != 0 && strstr(err, "11") != NULL, "missing id reported: %s", err);
		ReplayMatrixFree(&s);
	}
	ReplayOneMinus(&m);
	CHECK(m.data[4] == 0.75, "one minus");
	ReplayMatrixFree(&m);

	rc = ReplayParseCsv(bad_num, strlen(bad_num), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "line 2") && strstr(err, "column 3"),
		  "bad number position: %s", err);
	rc = ReplayParseCsv(bad_fields, strlen(bad_fields), &m, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "line 2 has 2 fields, the header has 3"),
		  "field count: %s", err);
	rc = ReplayReadCsv("/nonexistent/easeml.csv", &m, err, sizeof(err));
	CHECK(rc == REPLAY_IO && strstr(err, "could not open"), "missing file: %s", err);
	TestCsvReader();

	{
		ReplayPolicy p;

		CHECK(ReplayParsePolicy("hybrid:cost:w=30:s=4:greedy=max_gap", &p, err, sizeof(err)) == 0 &&
			  p.params.kind == POLICY_HYBRID && p.params.cost_aware == 1 &&
			  p.params.fairness_window == 30 && p.params.streak_limit == 4 &&
			  p.params.greedy == POLICY_MAX_GAP, "policy spec parsed");
		CHECK(ReplayParsePolicy("max_ei:bogus=1", &p, err, sizeof(err)) != 0 &&
			  strstr(err, "bogus"), "bad option: %s", err);
		CHECK(ReplayParsePolicy("nope", &p, err, sizeof(err)) != 0, "unknown policy");
	}
}

/*
 * A hand-computed replay: 2 tenants x 3 arms, unit costs, "popular" with
 * 1 device.  Prior rows make arm 2 the most popular, then arm 1, then 0.
 * Tenant A = (0.9, 0.5, 0.6), B = (0.2, 0.8, 0.3).  Round-robin over the
 * popular order:
 *	 A first: A2 B2 A1 B1 A0 -> losses .55 .40 .40 .15 0 (zero at t = 5)
 *	 B first: B2 A2 B1 A1 B0 A0 -> .70 .40 .15 .15 .15 0 (zero at t = 6)
 */
void
TestReplayHand(void)
{
	double		q[6 * 3] = {
		0.9, 0.5, 0.6,
		0.2, 0.8, 0.3,
		0.1, 0.5, 0.95,
		0.1, 0.5, 0.95,
		0.1, 0.5, 0.95,
	0.1, 0.5, 0.95};
	const char *pols[] = {"popular", "rr", "max_ei", "hybrid:cost", "fifo", "random"};
	double		thr[] = {0.5, 0.0};
	ReplayConfig cfg;
	ReplayOutput out;
	char		err[256];
	int			rc,
				seed,
				found = 0;

	/* find a seed whose first draw makes rows 0 and 1 the tenants */
	for (seed = 1; seed < 5000 && !found; seed++)
	{
		ReplayConfigDefault(&cfg);
		cfg.quality = q;
		cfg.n_rows = 6;
		cfg.K = 3;
		cfg.n_tenants = 2;
		cfg.draws = 1;
		cfg.seed = seed;
		cfg.n_policies = 1;
		cfg.policies = pols;
		cfg.n_thresholds = 2;
		cfg.thresholds = thr;
		cfg.keep_events = 1;
		rc = ReplayRun(&cfg, &out, err, sizeof(err));
		CHECK(rc == 0, "replay: %s", err);
		if (rc != 0)
			return;
		/* (0.9 + 0.8) / 2: only the pair A, B starts at 0.85 */
		if (fabs(out.events[0][0].loss - 0.85) < 1e-12)
			found = seed;
		ReplayOutputFree(&out);
	}
	CHECK(found, "a seed with rows 0 and 1 as tenants");
	if (!found)
		return;

	cfg.seed = found;
	rc = ReplayRun(&cfg, &out, err, sizeof(err));
	CHECK(rc == 0, "replay");
	if (fabs(out.events[0][1].loss - 0.55) < 1e-12)
	{
		double		want[] = {0.85, 0.55, 0.40, 0.40, 0.15, 0.0};
		int			i;

		CHECK(out.n_events[0] == 6, "A first: 6 steps, got %d", out.n_events[0]);
		for (i = 0; i < 6 && i < out.n_events[0]; i++)
		{
			CHECK_NEAR(out.events[0][i].loss, want[i], 1e-12, "A first: loss");
			CHECK(out.events[0][i].time == i, "unit-cost clock");
		}
		CHECK(out.time_to[1] == 5.0, "A first: zero at t = 5, got %g", out.time_to[1]);
		CHECK_NEAR(out.auc[0], 0.85 + 0.55 + 0.40 + 0.40 + 0.15, 1e-12, "A first: area");
	}
	else
	{
		double		want[] = {0.85, 0.70, 0.40, 0.15, 0.15, 0.15, 0.0};
		int			i;

		CHECK(out.n_events[0] == 7, "B first: 7 steps, got %d", out.n_events[0]);
		for (i = 0; i < 7 && i < out.n_events[0]; i++)
			CHECK_NEAR(out.events[0][i].loss, want[i], 1e-12, "B first: loss");
		CHECK(out.time_to[1] == 6.0, "B first: zero at t = 6, got %g", out.time_to[1]);
		CHECK_NEAR(out.auc[0], 0.85 + 0.70 + 0.40 + 0.15 + 0.15 + 0.15, 1e-12, "B first: area");
	}
	CHECK(out.time_to[0] == 2.0, "loss <= 0.5 first at t = 2, got %g", out.time_to[0]);
	CHECK(out.final_loss[0] == 0.0, "final loss 0");
	CHECK(out.worst_regret[1] == 0.0, "worst regret 0 at loss 0");
	/* rows 2-5 are one quality vector: three copies left out */
	CHECK(out.rows_removed == 3 && out.rows_used == 3, "identical rows removed: %d, used %d",
		  out.rows_removed, out.rows_used);
	{
		double		zero_at = out.time_to[1];

		/* a fixed charge of 0.5 s per run: every run takes 1.5 s */
		ReplayOutputFree(&out);
		cfg.overhead = 0.5;
		rc = ReplayRun(&cfg, &out, err, sizeof(err));
		CHECK(rc == 0, "replay with overhead: %s", err);
		CHECK(rc == 0 && out.time_to[1] == 1.5 * zero_at && out.time_to[0] == 3.0,
			  "overhead 0.5: zero at %g (want %g), loss <= 0.5 at %g (want 3)",
			  out.time_to[1], 1.5 * zero_at, out.time_to[0]);
		cfg.overhead = 0.0;
	}
	ReplayOutputFree(&out);

	/* every policy finishes with loss 0 and never repeats an arm */
	cfg.n_policies = 6;
	cfg.devices = 2;
	rc = ReplayRun(&cfg, &out, err, sizeof(err));
	CHECK(rc == 0, "all policies, 2 devices: %s", err);
	if (rc == 0)
	{
		int			p;

		for (p = 0; p < 6; p++)
		{
			CHECK(out.final_loss[p] == 0.0, "%s final loss %g", out.names[p], out.final_loss[p]);
			CHECK(out.decisions[p] <= 6, "%s ran %d > 6 runs", out.names[p], out.decisions[p]);
		}
		ReplayOutputFree(&out);
	}
}

/* Cancel callback: stop at the third poll. */
static int
CancelAfterTwo(void *arg)
{
	int		   *polls = arg;

	return ++(*polls) > 2;
}

/* Multi-device runs, seeds and validation on a random matrix. */
void
TestReplayRandom(void)
{
	const int	R = 60,
				K = 25;
	double	   *q = malloc(sizeof(double) * R * K);
	double	   *c = malloc(sizeof(double) * R * K);
	double	   *sz = malloc(sizeof(double) * R * 2);
	const char *pols[] = {"popular", "rr", "max_ei:cost", "hybrid:cost", "random:cost"};
	double		thr[] = {0.05, 0.01};
	ReplayConfig cfg;
	ReplayOutput a,
				b,
				m4;
	char		err[256];
	uint64_t	rng = 77;
	int			i,
				k,
				rc;

	for (i = 0; i < R; i++)
	{
		double		hard = 0.3 * PolicyRandUniform(&rng);

		sz[2 * i] = 100 + 1000 * PolicyRandUniform(&rng);
		sz[2 * i + 1] = 5 + 20 * PolicyRandUniform(&rng);
		for (k = 0; k < K; k++)
		{
			q[i * K + k] = 0.6 - hard + 0.01 * k + 0.1 * PolicyRandUniform(&rng);
			c[i * K + k] = 0.001 * sz[2 * i] * (1 + (k % 5)) * (0.5 + PolicyRandUniform(&rng));
		}
	}
	ReplayConfigDefault(&cfg);
	cfg.quality = q;
	cfg.cost = c;
	cfg.sizes = sz;
	cfg.n_rows = R;
	cfg.K = K;
	cfg.n_tenants = 8;
	cfg.draws = 4;
	cfg.seed = 9;
	cfg.n_policies = 5;
	cfg.policies = pols;
	cfg.n_thresholds = 2;
	cfg.thresholds = thr;

	/*
	 * "default" (= "auto") runs the candidate it chose on each draw: its
	 * times equal that candidate's times on the same draw (the candidates
	 * are deterministic), and the choice is one of the candidates.
	 */
	{
		char		cands[REPLAY_AUTO_MAX][REPLAY_NAME_LEN];
		const char *apols[REPLAY_AUTO_MAX + 1];
		int			nc = 0,
					n_diff = 0;

		while (nc < REPLAY_AUTO_MAX &&
			   ReplayAutoCandidate(nc, cands[nc], REPLAY_NAME_LEN) != NULL)
		{
			apols[nc] = cands[nc];
			nc++;
		}
		apols[nc] = "default";
		CHECK(nc >= 2, "auto has %d candidates", nc);
		cfg.n_policies = nc + 1;
		cfg.policies = apols;
		rc = ReplayRun(&cfg, &a, err, sizeof(err));
		CHECK(rc == 0, "auto replay: %s", err);
		for (int d = 0; rc == 0 && d < cfg.draws; d++)
		{
			int			ch = a.auto_choice[nc * cfg.draws + d];

			CHECK(ch >= 0 && ch < nc, "auto choice %d", ch);
			CHECK(a.auto_choice[d] == -2, "no choice recorded for a plain policy");
			if (ch < 0 || ch >= nc)
				continue;
			for (k = 0; k < 2; k++)
				n_diff += a.time_to[(nc * cfg.draws + d) * 2 + k] !=
					a.time_to[(ch * cfg.draws + d) * 2 + k];
		}
		CHECK(n_diff == 0, "auto ran its chosen candidate (%d times differ)", n_diff);
		/*
		 * The chooser on its own: deterministic; the fallback without
		 * history; the same choice, scores and work however it is sliced;
		 * past its work limit, the fallback.
		 */
		{
			double		hq[30 * K],
						hc[30 * K],
						hs[30 * 2],
						s1[REPLAY_AUTO_MAX],
						s2[REPLAY_AUTO_MAX],
						w1;
			ReplayAutoInput ain;
			ReplayAutoJob job;
			int			c1 = -3,
						c2 = -4,
						c3 = -5,
						nstep = 0,
						arc;
			char		nm[REPLAY_NAME_LEN];

			for (i = 0; i < 30; i++)
			{
				memcpy(hq + i * K, q + 2 * i * K, sizeof(double) * K);
				memcpy(hc + i * K, c + 2 * i * K, sizeof(double) * K);
				hs[2 * i] = sz[4 * i];
				hs[2 * i + 1] = sz[4 * i + 1];
			}
			memset(&ain, 0, sizeof(ain));
			ain.quality = hq;
			ain.cost = hc;
			ain.sizes = hs;
			ain.n_rows = 30;
			ain.K = K;
			ain.devices = 1;
			CHECK(ReplayAutoChoose(&ain, &c1, s1, err, sizeof(err)) == 0 &&
				  ReplayAutoChoose(&ain, &c2, s2, err, sizeof(err)) == 0 &&
				  c1 == c2 && c1 >= 0 && c1 < nc && memcmp(s1, s2, sizeof(double) * nc) == 0,
				  "auto chooser: %d then %d", c1, c2);
			ain.n_rows = REPLAY_AUTO_MIN_ROWS - 1;
			CHECK(ReplayAutoChoose(&ain, &c3, NULL, err, sizeof(err)) == 0 &&
				  c3 == REPLAY_AUTO_FALLBACK, "too little history: the fallback (%d)", c3);
			CHECK(ReplayAutoSpec(NULL, c3, nm, sizeof(nm)) &&
				  strcmp(nm, POLICY_AUTO_FALLBACK) == 0 && strcmp(nm, "popular") == 0,
				  "the fallback is popular, the users' heuristic (%s)", nm);
			ain.n_rows = 30;

			/* in slices of 10^4 units: many steps, the same result */
			arc = ReplayAutoBegin(&ain, &job, err, sizeof(err));
			while (arc == 0)
			{
				arc = ReplayAutoStep(&job, 1e4, err, sizeof(err));
				nstep++;
			}
			CHECK(arc == 1 && job.choice == c1 && nstep > 100 &&
				  memcmp(job.score, s1, sizeof(double) * nc) == 0,
				  "sliced chooser: choice %d in %d steps (%d)", job.choice, nstep, arc);
			w1 = ReplayAutoWork(&job);
			ReplayAutoFree(&job);
			arc = ReplayAutoBegin(&ain, &job, err, sizeof(err));
			while (arc == 0)
				arc = ReplayAutoStep(&job, INFINITY, err, sizeof(err));
			CHECK(arc == 1 && ReplayAutoWork(&job) == w1 && w1 > 1e5,
				  "the work counted does not depend on the slicing (%g vs %g)",
				  ReplayAutoWork(&job), w1);
			ReplayAutoFree(&job);

			/* a limit below the work needed: the fallback, sliced or not */
			ain.work_max = w1 / 2;
			CHECK(ReplayAutoChoose(&ain, &c3, NULL, err, sizeof(err)) == 0 &&
				  c3 == REPLAY_AUTO_FALLBACK, "over the work limit: the fallback (%d)", c3);
			nstep = 0;
			arc = ReplayAutoBegin(&ain, &job, err, sizeof(err));
			while (arc == 0 && nstep++ < 100000)
				arc = ReplayAutoStep(&job, 1e4, err, sizeof(err));
			CHECK(arc == 1 && job.over_limit && job.choice == REPLAY_AUTO_FALLBACK &&
				  ReplayAutoWork(&job) > w1 / 2 && ReplayAutoWork(&job) < w1,
				  "sliced, over the limit: the fallback after %g units", ReplayAutoWork(&job));
			ReplayAutoFree(&job);
			ain.work_max = w1 + 1;
			CHECK(ReplayAutoChoose(&ain, &c3, NULL, err, sizeof(err)) == 0 && c3 == c1,
				  "within the limit: the choice (%d)", c3);
			ain.work_max = 0;

			/* an experiment's inner draw count: that many draws, bounded */
			ain.draws = 2;
			arc = ReplayAutoBegin(&ain, &job, err, sizeof(err));
			while (arc == 0)
				arc = ReplayAutoStep(&job, INFINITY, err, sizeof(err));
			CHECK(arc == 1 && job.draw == 2 && ReplayAutoWork(&job) < w1,
				  "auto draws 2: %d draws (%d)", job.draw, arc);
			ReplayAutoFree(&job);
			ain.draws = REPLAY_AUTO_DRAWS_MAX + 1;
			CHECK(ReplayAutoChoose(&ain, &c3, NULL, err, sizeof(err)) ==
				  REPLAY_BAD_INPUT, "auto draws out of range refused");
			ain.draws = 0;
			CHECK(ReplayAutoCandidate(0, nm, sizeof(nm)) &&
				  strncmp(POLICY_AUTO_CANDIDATES, nm, strlen(nm)) == 0 &&
				  ReplayAutoCandidate(nc, nm, sizeof(nm)) == NULL, "candidate names");
		}
		if (rc == 0)
			ReplayOutputFree(&a);
		cfg.n_policies = 5;
		cfg.policies = pols;
	}

	rc = ReplayRun(&cfg, &a, err, sizeof(err));
	CHECK(rc == 0, "replay a: %s", err);
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == 0, "replay b: %s", err);
	CHECK(memcmp(a.time_to, b.time_to, sizeof(double) * 5 * 4 * 2) == 0 &&
		  memcmp(a.auc, b.auc, sizeof(double) * 5 * 4) == 0, "same seed, same results");
	for (i = 0; i < 5 * 4; i++)
		CHECK(a.final_loss[i] == 0.0 && a.decisions[i] <= 8 * K,
			  "run %d: final loss %g, %d runs", i, a.final_loss[i], a.decisions[i]);
	{
		double		med,
					mx;

		CHECK(ReplaySpeedup(&a, 0, 0, 1, &med, &mx) == 0 && med == 1.0 && mx == 1.0,
			  "self speedup 1");
		CHECK(ReplaySpeedup(&a, 0, 9, 1, &med, &mx) != 0, "bad policy index");
	}
	ReplayOutputFree(&b);

	cfg.seed = 10;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == 0 && memcmp(a.time_to, b.time_to, sizeof(double) * 5 * 4 * 2) != 0,
		  "another seed, other draws");
	ReplayOutputFree(&b);

	/* 4 devices: faster, loss still reaches 0, no arm run twice */
	cfg.seed = 9;
	cfg.devices = 4;
	rc = ReplayRun(&cfg, &m4, err, sizeof(err));
	CHECK(rc == 0, "4 devices: %s", err);
	if (rc == 0)
	{
		int			p;

		for (p = 0; p < 5; p++)
		{
			CHECK(m4.median_time[p * 2 + 1] < a.median_time[p * 2 + 1],
				  "%s: 4 devices slower (%g vs %g)", m4.names[p],
				  m4.median_time[p * 2 + 1], a.median_time[p * 2 + 1]);
			CHECK(m4.decisions[p * 4] <= 8 * K, "bounded runs");
		}
		ReplayOutputFree(&m4);
	}

	/* oracle and size models run; a bad config is refused with a message */
	cfg.devices = 1;
	cfg.oracle_cost = 1;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == 0, "oracle: %s", err);
	ReplayOutputFree(&b);
	cfg.oracle_cost = 0;
	cfg.sizes = NULL;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "sizes"), "sizes required: %s", err);
	cfg.sizes = sz;
	q[3] = 1.5;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT && strstr(err, "[0,1]"), "quality range: %s", err);
	q[3] = 0.5;
	cfg.n_tenants = R + 1;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_BAD_INPUT, "too many tenants");

	/* a cancel callback stops the run cleanly */
	cfg.n_tenants = 8;
	cfg.cancel = CancelAfterTwo;
	cfg.cancel_arg = &i;
	i = 0;
	rc = ReplayRun(&cfg, &b, err, sizeof(err));
	CHECK(rc == REPLAY_CANCELLED && i == 3 && strstr(err, "cancel"), "cancel: rc %d after %d polls",
		  rc, i);

	ReplayOutputFree(&a);
	free(q);
	free(c);
	free(sz);
}

/*
 * Options after "auto" (policy_spec.c's table says which): those that
 * apply go on every candidate, on the fallback and on the chosen spec, in
 * the table's order, each once with its last value; those that select
 * what auto chooses are refused with the reason.  The bug: "auto:w=60"
 * ran the chosen candidate without w=60.
 */
void
TestAutoOptions(void)
{
	static const char *const refused[][2] = {
		{"auto:cost", "auto chooses the cost mode"},
		{"auto:acq=ei", "auto chooses the acquisition"},
		{"auto:w=60:acq=mix", "auto chooses the acquisition"},
		{"default:mrg=1", "auto chooses the task score"},
		{"auto:msh=1", "auto chooses the mixture's settings"},
		{"auto:mgp=0.5", "auto chooses the mixture's settings"},
		{"auto:mh=0", "auto chooses the mixture's settings"},
		{"auto:greedy=max_gap", "auto chooses the greedy rule"},
		{"auto:xg=1.5", "auto chooses when to explore"},
		{"auto:xo=1", "auto chooses when to explore"}
	};
	char		err[512];
	char		opts[POLICY_SPEC_LEN];
	char		cand[REPLAY_NAME_LEN];
	char		run[REPLAY_NAME_LEN];
	char		rec[REPLAY_NAME_LEN * 2];
	PolicyParams p,
				c;
	ReplayAutoInput ain;
	ReplayAutoJob job;
	double		q[3 * 2] = {0.5, 0.6, 0.7, 0.2, 0.9, 0.1};
	int			n_refused = 0;

	CHECK(PolicyParseSpec("auto:w=60", &p, err, sizeof(err)) == POLICY_OK &&
		  p.auto_select && p.kind == POLICY_POPULAR && p.fairness_window == 60,
		  "auto:w=60 parses, on its fallback with w=60: %s", err);
	CHECK(PolicyAutoOptions(&p, opts, sizeof(opts)) == 5 &&
		  strcmp(opts, ":w=60") == 0, "auto's options: \"%s\"", opts);
	/* the chosen candidate carries w=60 */
	CHECK(ReplayAutoCandidate(0, cand, sizeof(cand)) != NULL &&
		  PolicyAutoSpec(cand, opts, run, sizeof(run), err, sizeof(err)) == POLICY_OK &&
		  PolicyParseSpec(run, &c, err, sizeof(err)) == POLICY_OK &&
		  c.kind == POLICY_HYBRID && c.fairness_window == 60 && c.cost_aware &&
		  c.mix_arm && c.explore_gate == 1.5 && !c.auto_select,
		  "candidate 0 with auto's options: %s (%s)", run, err);
	CHECK(PolicyParseSpec(cand, &c, err, sizeof(err)) == POLICY_OK &&
		  c.fairness_window == 0, "the candidate alone has no w");

	/* canonical: table order, each once, its last value */
	CHECK(PolicyParseSpec("default:s=3:w=5:qarm=0:w=60:qmax=0.99", &p, err, sizeof(err)) == POLICY_OK &&
		  p.auto_select && PolicyAutoOptions(&p, opts, sizeof(opts)) > 0 &&
		  strcmp(opts, ":qmax=0.99:qarm=0:w=60:s=3") == 0,
		  "default's options in table order: \"%s\" (%s)", opts, err);
	CHECK(PolicyParseSpec("auto", &p, err, sizeof(err)) == POLICY_OK &&
		  p.auto_options == 0 && PolicyAutoOptions(&p, opts, sizeof(opts)) == 0 &&
		  opts[0] == '\0', "plain auto: no options");
	CHECK(PolicyParseSpec("hybrid:w=60", &p, err, sizeof(err)) == POLICY_OK &&
		  p.auto_options == 0, "options after a policy that is not auto are its own");

	/* what runs: the recorded choice's candidate with the options now */
	CHECK(PolicyParseSpec("auto:w=60", &p, err, sizeof(err)) == POLICY_OK &&
		  ReplayAutoCandidate(0, cand, sizeof(cand)) != NULL, "auto:w=60");
	snprintf(rec, sizeof(rec), "%s:w=5:s=2", cand);
	CHECK(strcmp(PolicyAutoRunning(&p, rec, run, sizeof(run)) + strlen(cand), ":w=60") == 0 &&
		  strncmp(run, cand, strlen(cand)) == 0, "the choice with the options now: %s", run);
	CHECK(strcmp(PolicyAutoRunning(&p, NULL, run, sizeof(run)), POLICY_AUTO_FALLBACK ":w=60") == 0,
		  "no choice: the fallback with the options: %s", run);
	CHECK(strcmp(PolicyAutoRunning(&p, "gone:w=1", run, sizeof(run)), "gone:w=1") == 0,
		  "a choice among another list: as recorded");

	/* refused after auto, with the reason; fine after a policy */
	for (int i = 0; i < (int) (sizeof(refused) / sizeof(refused[0])); i++)
	{
		const char *after = strchr(refused[i][0], ':');
		char		plain[64];

		err[0] = '\0';
		CHECK(PolicyParseSpec(refused[i][0], &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
			  strstr(err, "cannot follow auto") != NULL &&
			  strstr(err, refused[i][1]) != NULL && strstr(err, "only qmax, qarm, w, s apply") != NULL,
			  "%s refused: %s", refused[i][0], err);
		snprintf(plain, sizeof(plain), "hybrid%s", after);
		CHECK(PolicyParseSpec(plain, &p, err, sizeof(err)) == POLICY_OK,
			  "%s parses: %s", plain, err);
	}
	/* the table: each option applies or is refused; refused ones are all here */
	for (int i = 0; i < PolicyOptionCount(); i++)
	{
		const PolicyOption *o = PolicyOptionAt(i);

		CHECK(o->auto_refused != NULL || o->type != POLICY_OPT_CHOICE,
			  "option %s applies after auto: it has a field", o->name);
		n_refused += o->auto_refused != NULL;
	}
	CHECK(n_refused == 9 && PolicyOptionCount() <= 32,
		  "9 options refused after auto (%d), a bit each", n_refused);

	/* the chooser: every candidate with the options, the fallback too */
	memset(&ain, 0, sizeof(ain));
	ain.quality = q;
	ain.n_rows = 3;				/* too little history: the fallback */
	ain.K = 2;
	ain.options = ":qmax=0.99:w=60";
	CHECK(ReplayAutoBegin(&ain, &job, err, sizeof(err)) == 0 && job.n_cand == 2,
		  "auto with options begins: %s", err);
	for (int i = 0; i < job.n_cand; i++)
		CHECK(ReplayAutoCandidate(i, cand, sizeof(cand)) != NULL &&
			  strncmp(job.cands[i], cand, strlen(cand)) == 0 &&
			  strcmp(job.cands[i] + strlen(cand), ":qmax=0.99:w=60") == 0,
			  "candidate %d replayed as %s", i, job.cands[i]);
	CHECK(ReplayAutoStep(&job, INFINITY, err, sizeof(err)) == 1 &&
		  job.choice == REPLAY_AUTO_FALLBACK &&
		  ReplayAutoChosen(&job, run, sizeof(run)) != NULL &&
		  strcmp(run, POLICY_AUTO_FALLBACK ":qmax=0.99:w=60") == 0,
		  "the fallback with the options: %s", run);
	ReplayAutoFree(&job);
	ain.options = ":nope=1";
	CHECK(ReplayAutoBegin(&ain, &job, err, sizeof(err)) == REPLAY_BAD_INPUT &&
		  strstr(err, "no option \"nope\"") != NULL,
		  "options the parser refuses on a candidate: %s", err);
	ReplayAutoFree(&job);
}
