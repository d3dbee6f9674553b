/*-------------------------------------------------------------------------
 *
 * test_policy.c
 *	  Unit tests of the policies (src/core/policy_*.c): EI and beta,
 *	  candidate choice never re-picking evaluated or running arms,
 *	  deterministic ties, each policy's tenant-picking invariants
 *	  (round-robin is fair, the hybrid fairness floor holds, warm start),
 *	  PolicyIndex agreeing with PolicyPickTenant, top arms by EI, and the
 *	  grammar (its option table, the docs' copy of it).
 *
 * IDENTIFICATION
 *	  src/core/test/test_policy.c
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
#include "test.h"

/* EI closed forms and beta schedule. */
void
TestAcquisition(void)
{
	PolicyParams pp;
	double		ei,
				num = 0.0;
	int			i;

	CHECK_NEAR(PolicyExpectedImprovement(0.7, 0.0, 0.5), 0.2, 1e-15, "EI sigma 0 above");
	CHECK_NEAR(PolicyExpectedImprovement(0.4, 0.0, 0.5), 0.0, 0, "EI sigma 0 below");
	CHECK_NEAR(PolicyExpectedImprovement(0.5, 0.1, 0.5), 0.1 / sqrt(2 * M_PI), 1e-15,
			   "EI at mu = best");
	/* numeric integral of max(x - b, 0) N(x; 0.6, 0.05^2) */
	ei = PolicyExpectedImprovement(0.6, 0.05, 0.62);
	for (i = 0; i < 400000; i++)
	{
		double		x = 0.62 + (i + 0.5) * 1e-6;

		num += (x - 0.62) * exp(-0.5 * pow((x - 0.6) / 0.05, 2)) /
			(0.05 * sqrt(2 * M_PI)) * 1e-6;
	}
	CHECK_NEAR(ei, num, 1e-9, "EI against numeric integral");

	/*
	 * qmax=1: scores cannot pass 1, so EI counts E[(min(f, 1) - b)+].  Arm
	 * 0 (mu 0.99, sd 0.1) has most of its plain EI above 1; arm 1 (mu 0.99,
	 * sd 0.01) has not: plain EI picks arm 0, bounded EI arm 1, and qarm=0
	 * keeps the plain choice but scores the task by the bounded EI.
	 */
	{
		double		mu[2] = {0.99, 0.99},
					var[2] = {0.01, 0.0001};
		unsigned char avail[2] = {1, 1};
		const char *specs[] = {"max_ei", "max_ei:qmax=1", "max_ei:qmax=1:qarm=0"};
		int			want[] = {0, 1, 0};
		double		bounded0 = 0.0;

		for (i = 0; i < 1000000; i++)
		{
			double		x = 0.97 + (i + 0.5) * 1e-6;	/* up to 0.97 + 1 */

			bounded0 += (fmin(x, 1.0) - 0.97) * exp(-0.5 * pow((x - 0.99) / 0.1, 2)) /
				(0.1 * sqrt(2 * M_PI)) * 1e-6;
		}
		for (i = 0; i < 3; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.97;
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, NULL, avail, mu, &v) == 0 &&
				  v.arm == want[i], "%s picks arm %d (got %d)", specs[i], want[i], v.arm);
			if (i == 2)
				CHECK_NEAR(v.ei, bounded0, 1e-7, "qarm=0: the task EI is bounded");
			if (i == 0)
				CHECK(v.ei > 3 * bounded0, "plain EI counts the mass above 1 (%g)", v.ei);
		}
	}

	PolicyParamsDefault(&pp, POLICY_RR);
	CHECK_NEAR(PolicyBeta(&pp, 100, 0), 2 * log(100 * M_PI * M_PI / (6 * 0.1)), 1e-12,
			   "beta schedule t = 1");
	CHECK(PolicyBeta(&pp, 100, 5) > PolicyBeta(&pp, 100, 4), "beta grows with t");

	/*
	 * cost: EI per second.  Arm 1 has r times arm 0's EI and costs r^1.5
	 * times as much: plain EI picks arm 1, EI per second arm 0.
	 */
	{
		double		mu[2] = {0.5, 0.6},
					var[2] = {0.01, 0.01},
					r = PolicyExpectedImprovement(0.6, 0.1, 0.55) /
			PolicyExpectedImprovement(0.5, 0.1, 0.55),
					cost[2] = {1.0, pow(r, 1.5)};
		unsigned char avail[2] = {1, 1};
		const char *specs[] = {"rr:acq=ei", "rr:cost:acq=ei"};
		int			want[] = {1, 0};

		for (i = 0; i < 2; i++)
		{
			PolicyTenantView v;

			memset(&v, 0, sizeof(v));
			v.best = 0.55;
			CHECK(PolicyParseSpec(specs[i], &pp, NULL, 0) == 0 &&
				  PolicyBestArm(&pp, 2, mu, var, cost, avail, mu, &v) == 0 &&
				  v.arm == want[i], "%s picks arm %d (got %d)", specs[i], want[i], v.arm);
		}
		CHECK(PolicyParseSpec("rr:cost:qmax=0", &pp, NULL, 0) != 0 &&
			  PolicyParseSpec("rr:cost:qarm=2", &pp, NULL, 0) != 0,
			  "qmax <= 0 and qarm = 2 refused");
	}
}

/* The candidate is never an evaluated or running arm; ties by index. */
void
TestBestArm(void)
{
	const int	K = 40;
	double		mu[40],
				var[40],
				cost[40];
	unsigned char avail[40];
	PolicyKind	kinds[] = {POLICY_RR, POLICY_MAX_EI, POLICY_MAX_GAP, POLICY_POPULAR,
	POLICY_FIFO, POLICY_HYBRID};
	uint64_t	rng = 11;
	int			trial,
				q,
				k;

	for (trial = 0; trial < 500; trial++)
	{
		int			n_avail = 0;

		for (k = 0; k < K; k++)
		{
			mu[k] = PolicyRandUniform(&rng);
			var[k] = 0.01 * PolicyRandUniform(&rng);
			cost[k] = 0.1 + 10 * PolicyRandUniform(&rng);
			avail[k] = PolicyRandUniform(&rng) < 0.3;
			n_avail += avail[k];
		}
		for (q = 0; q < (int) (sizeof(kinds) / sizeof(kinds[0])); q++)
		{
			PolicyParams pp;
			PolicyTenantView v;

			PolicyParamsDefault(&pp, kinds[q]);
			pp.cost_aware = trial % 2;
			memset(&v, 0, sizeof(v));
			v.best = 0.6;
			v.n_obs = trial % 7;
			CHECK(PolicyBestArm(&pp, K, mu, var, cost, avail, mu, &v) == 0, "best arm");
			if (n_avail == 0)
				CHECK(v.arm == -1, "no arm when none is available");
			else
				CHECK(v.arm >= 0 && avail[v.arm], "picked unavailable arm %d (kind %d)",
					  v.arm, kinds[q]);
		}
	}

	/* pruned EI equals the plain argmax */
	for (trial = 0; trial < 300; trial++)
	{
		PolicyParams pp;
		PolicyTenantView v;
		double		best = -1;
		int			arg = -1;

		for (k = 0; k < K; k++)
		{
			mu[k] = 0.5 + 0.3 * PolicyRandUniform(&rng);
			var[k] = (k % 5 == 0) ? 0.0 : 0.004 * PolicyRandUniform(&rng);
			avail[k] = PolicyRandUniform(&rng) < 0.8;
			cost[k] = 1.0;
		}
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		memset(&v, 0, sizeof(v));
		v.best = 0.75;
		PolicyBestArm(&pp, K, mu, var, NULL, avail, NULL, &v);
		for (k = 0; k < K; k++)
			if (avail[k])
			{
				double		e = PolicyExpectedImprovement(mu[k], sqrt(var[k]), 0.75);

				if (e > best)
				{
					best = e;
					arg = k;
				}
			}
		CHECK(v.arm == arg, "pruned EI argmax %d vs %d", v.arm, arg);
	}

	/* ties: lowest arm index; cost-aware EI prefers the cheaper twin */
	{
		PolicyParams pp;
		PolicyTenantView v;

		for (k = 0; k < K; k++)
		{
			mu[k] = 0.5;
			var[k] = 0.01;
			avail[k] = k >= 3;
			cost[k] = 1.0;
		}
		cost[9] = 0.5;
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		memset(&v, 0, sizeof(v));
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 3, "tie -> lowest available index, got %d", v.arm);
		pp.cost_aware = 1;
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 9, "cost-aware EI picks the cheaper arm, got %d", v.arm);
		PolicyParamsDefault(&pp, POLICY_RR);
		pp.cost_aware = 1;
		PolicyBestArm(&pp, K, mu, var, cost, avail, NULL, &v);
		CHECK(v.arm == 9, "cost-aware UCB picks the cheaper arm, got %d", v.arm);
	}
}

/* Fill n views as if every task had a candidate with random scores. */
static void
RandomViews(PolicyTenantView *v, int n, uint64_t *rng, const PolicyParams *pp)
{
	int			i;
	double		mu[4],
				var[4];
	unsigned char avail[4] = {1, 1, 1, 1};

	for (i = 0; i < n; i++)
	{
		int			k;

		for (k = 0; k < 4; k++)
		{
			mu[k] = PolicyRandUniform(rng);
			var[k] = 0.01 * PolicyRandUniform(rng);
		}
		v[i].id = i;
		v[i].best = 0.5;
		PolicyBestArm(pp, 4, mu, var, NULL, avail, mu, &v[i]);
	}
}

/* Round-robin is fair; greedy is deterministic; hybrid floor; seeds. */
void
TestPickTenant(void)
{
	enum
	{
	N = 9};
	PolicyTenantView v[N];
	PolicyParams pp;
	uint64_t	rng = 5;
	int			served[N];
	int64_t		d;
	int			i;

	/* rr: n x 20 decisions serve everyone exactly 20 times, in id order */
	memset(v, 0, sizeof(v));
	PolicyParamsDefault(&pp, POLICY_RR);
	RandomViews(v, N, &rng, &pp);
	for (i = 0; i < N; i++)
		v[i].last_served = -1;
	memset(served, 0, sizeof(served));
	for (d = 0; d < N * 20; d++)
	{
		int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

		CHECK(p == (int) (d % N), "rr order: decision %lld picked %d", (long long) d, p);
		if (p < 0)
			break;
		served[p]++;
		v[p].last_served = d;
	}
	for (i = 0; i < N; i++)
		CHECK(served[i] == 20, "rr fairness: task %d served %d times", i, served[i]);

	/* greedy: argmax score, ties lowest id; ineligible skipped */
	PolicyParamsDefault(&pp, POLICY_MAX_EI);
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = 1.0;
		v[i].last_served = 0;
		v[i].n_running = 0;
	}
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 0, "greedy tie -> lowest id");
	v[4].score = 2.0;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 4, "greedy argmax");
	v[4].arm = -1;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == 0, "ineligible skipped");
	for (i = 0; i < N; i++)
		v[i].arm = -1;
	CHECK(PolicyPickTenant(&pp, N, v, 100, &rng, NULL) == -1, "nothing eligible -> -1");

	/* warm start: the first N decisions serve every task once */
	PolicyParamsDefault(&pp, POLICY_MAX_EI);
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = (i == 2) ? 10.0 : 1.0 / (i + 1);
		v[i].last_served = -1;
	}
	memset(served, 0, sizeof(served));
	for (d = 0; d < N; d++)
	{
		int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

		served[p]++;
		v[p].last_served = d;
	}
	for (i = 0; i < N; i++)
		CHECK(served[i] == 1, "warm start: task %d served %d times", i, served[i]);

	/* spread: tasks with a run in flight wait while others are idle */
	for (i = 0; i < N; i++)
		v[i].n_running = 1;
	v[7].n_running = 0;
	CHECK(PolicyPickTenant(&pp, N, v, 50, &rng, NULL) == 7, "spread prefers idle task");
	for (i = 0; i < N; i++)
		v[i].n_running = 0;

	/* hybrid: task 0 always scores best, yet nobody waits more than w */
	{
		int			w;

		for (w = N; w <= 3 * N; w += N)
		{
			int64_t		last[N];
			int64_t		worst_wait = 0;

			PolicyParamsDefault(&pp, POLICY_HYBRID);
			pp.fairness_window = w;
			for (i = 0; i < N; i++)
			{
				v[i].arm = 0;
				v[i].score = (i == 0) ? 100.0 : 1.0 / (i + 1);
				v[i].last_served = -1;
				last[i] = -1;
			}
			memset(served, 0, sizeof(served));
			for (d = 0; d < 3000; d++)
			{
				int			p = PolicyPickTenant(&pp, N, v, d, &rng, NULL);

				CHECK(p >= 0, "hybrid picked nothing");
				if (p < 0)
					break;
				CHECK(d - last[p] <= w, "hybrid floor: task %d waited %lld > %d",
					  p, (long long) (d - last[p]), w);
				if (d - last[p] > worst_wait)
					worst_wait = d - last[p];
				last[p] = d;
				v[p].last_served = d;
				served[p]++;
				/* task 5 leaves and comes back: the floor must adapt */
				if (d == 1000)
					v[5].arm = -1;
				if (d == 1500)
				{
					v[5].arm = 0;
					last[5] = d;
					v[5].last_served = d;
				}
			}
			for (i = 1; i < N; i++)
				if (i != 5)
					CHECK(d - last[i] <= w, "task %d starving at the end", i);
			if (w == 3 * N)
				CHECK(served[0] > served[1] * 2, "hybrid still greedy: %d vs %d",
					  served[0], served[1]);
		}
	}

	/* hybrid streak guard: a task that does not improve yields */
	PolicyParamsDefault(&pp, POLICY_HYBRID);
	pp.streak_limit = 3;
	for (i = 0; i < N; i++)
	{
		v[i].arm = 0;
		v[i].score = (i == 0) ? 100.0 : 1.0;
		v[i].last_served = 10 + i;
		v[i].streak = 0;
	}
	v[0].streak = 3;
	v[0].last_served = 19;
	CHECK(PolicyPickTenant(&pp, N, v, 20, &rng, NULL) == 1, "streak guard -> least recent");
	v[0].streak = 2;
	CHECK(PolicyPickTenant(&pp, N, v, 20, &rng, NULL) == 0, "below the streak limit: greedy");

	/* random: same seed, same sequence; another seed, another one */
	{
		uint64_t	a = 99,
					b = 99,
					c = 100;
		int			same = 1,
					differ = 0;

		PolicyParamsDefault(&pp, POLICY_RANDOM);
		for (i = 0; i < N; i++)
		{
			v[i].arm = 0;
			v[i].last_served = 1;
			v[i].n_running = 0;
		}
		for (d = 0; d < 50; d++)
		{
			int			pa = PolicyPickTenant(&pp, N, v, d, &a, NULL);
			int			pb = PolicyPickTenant(&pp, N, v, d, &b, NULL);
			int			pc = PolicyPickTenant(&pp, N, v, d, &c, NULL);

			same &= pa == pb;
			differ |= pa != pc;
			CHECK(pa >= 0 && pa < N, "random in range");
		}
		CHECK(same, "random: same seed, same picks");
		CHECK(differ, "random: another seed, other picks");
	}
}

/* PolicyIndex picks exactly what PolicyPickTenant picks. */
void
TestIndex(void)
{
	enum
	{
	N = 37};
	PolicyKind	kinds[] = {POLICY_RR, POLICY_MAX_EI, POLICY_MAX_GAP, POLICY_HYBRID,
	POLICY_MAX_WIDTH};
	uint64_t	rng = 123;
	int			q;

	for (q = 0; q < (int) (sizeof(kinds) / sizeof(kinds[0])); q++)
	{
		PolicyTenantView v[N];
		PolicyParams pp;
		PolicyIndex idx;
		int64_t		d;
		int			i,
					mismatches = 0;

		memset(v, 0, sizeof(v));
		PolicyParamsDefault(&pp, kinds[q]);
		pp.fairness_window = 2 * N;
		RandomViews(v, N, &rng, &pp);
		for (i = 0; i < N; i++)
			v[i].last_served = -1;
		CHECK(PolicyIndexInit(&idx, v, N, 0) == 0, "index init");
		for (d = 0; d < 3000; d++)
		{
			uint64_t	r1 = d,
						r2 = d;
			int			a = PolicyPickTenant(&pp, N, v, d, &r1, NULL);
			int			b = PolicyIndexPick(&idx, &pp, d, &r2, NULL);
			double		mu[4],
						var[4];
			unsigned char avail[4] = {1, 1, 1, 1};
			int			k;

			mismatches += a != b;
			if (a < 0)
				break;
			/* serve a: new scores, sometimes it runs out of arms */
			v[a].last_served = d;
			for (k = 0; k < 4; k++)
			{
				mu[k] = PolicyRandUniform(&rng);
				var[k] = 0.01 * PolicyRandUniform(&rng);
			}
			v[a].n_obs++;
			v[a].streak = PolicyRandUniform(&rng) < 0.5 ? v[a].streak + 1 : 0;
			PolicyBestArm(&pp, 4, mu, var, NULL, avail, mu, &v[a]);
			if (PolicyRandUniform(&rng) < 0.01)
				v[a].arm = -1;
			PolicyIndexUpdate(&idx, a);
		}
		CHECK(mismatches == 0, "index vs scan (%s): %d mismatches",
			  PolicyName(kinds[q]), mismatches);
		PolicyIndexFree(&idx);
	}
}

/* (acq, arm) pairs best first: larger acquisition, then lower arm. */
static int
CmpArmScore(const void *a, const void *b)
{
	const PolicyArmScore *x = a,
			   *y = b;

	if (x->acq != y->acq)
		return x->acq > y->acq ? -1 : 1;
	return x->arm - y->arm;
}

/*
 * PolicyTopArms under EI keeps exactly the ntop best arms of a full scan
 * (same values, same tie order), whatever the scale of mu - best and of
 * the variances: its pruning bound must never cut a winner.
 */
void
TestTopArmsEi(void)
{
	enum
	{
	K = 60};
	const int	ntops[] = {1, 2, 4, 7, K};
	double		mu[K],
				var[K],
				cost[K];
	unsigned char avail[K];
	uint64_t	rng = 77;
	int			bad = 0;

	for (int trial = 0; trial < 3000; trial++)
	{
		PolicyParams pp;
		PolicyArmScore all[K],
					top[K];
		double		scale = pow(10.0, -6.0 + 7.0 * PolicyRandUniform(&rng));
		int			n_all = 0;

		for (int k = 0; k < K; k++)
		{
			/* some twins, some zero variances, some huge |z| */
			int			twin = k > 0 && PolicyRandUniform(&rng) < 0.1;

			mu[k] = twin ? mu[k - 1] : 0.5 + scale * (2.0 * PolicyRandUniform(&rng) - 1.0);
			var[k] = twin ? var[k - 1] :
				PolicyRandUniform(&rng) < 0.05 ? 0.0 :
				pow(10.0, -30.0 + 30.0 * PolicyRandUniform(&rng));
			cost[k] = pow(10.0, -2.0 + 4.0 * PolicyRandUniform(&rng));
			avail[k] = PolicyRandUniform(&rng) < 0.8;
		}
		PolicyParamsDefault(&pp, POLICY_MAX_EI);
		pp.cost_aware = trial % 2;
		for (int k = 0; k < K; k++)
			if (avail[k])
			{
				double		c = cost[k] > 1e-9 ? cost[k] : 1e-9;

				all[n_all].arm = k;
				all[n_all].acq = PolicyExpectedImprovement(mu[k], sqrt(var[k]), 0.5);
				if (pp.cost_aware)
					all[n_all].acq /= c;
				n_all++;
			}
		qsort(all, n_all, sizeof(PolicyArmScore), CmpArmScore);
		for (int q = 0; q < (int) (sizeof(ntops) / sizeof(ntops[0])); q++)
		{
			PolicyTenantView v;
			int			n = -1,
						want = ntops[q] < n_all ? ntops[q] : n_all;

			memset(&v, 0, sizeof(v));
			v.best = 0.5;
			v.n_obs = 3;
			CHECK(PolicyTopArms(&pp, K, mu, var, cost, avail, NULL, &v,
								ntops[q], top, &n) == 0, "top arms");
			if (n != want)
				bad++;
			for (int i = 0; i < n && i < want; i++)
				if (top[i].arm != all[i].arm || top[i].acq != all[i].acq)
				{
					bad++;
					break;
				}
		}
	}
	CHECK(bad == 0, "pruned EI ranking differs from the full scan in %d cases", bad);
}

/*
 * PolicyIndexTop lists the views in the order of a full sort, leaves out
 * skip, and leaves both trees as they were.
 */
void
TestIndexTop(void)
{
	enum
	{
	N = 37};
	PolicyTenantView v[N];
	PolicyParams pp;
	uint64_t	rng = 5;
	int			bad = 0;

	PolicyParamsDefault(&pp, POLICY_HYBRID);
	for (int trial = 0; trial < 200; trial++)
	{
		PolicyIndex idx;
		int		   *best0,
				   *lrs0;
		int			idle_only = trial % 2;

		memset(v, 0, sizeof(v));
		RandomViews(v, N, &rng, &pp);
		for (int i = 0; i < N; i++)
		{
			v[i].id = (int64_t) (PolicyRandUniform(&rng) * 8);	/* ties */
			v[i].last_served = (int64_t) (PolicyRandUniform(&rng) * 20) - 1;
			v[i].n_running = PolicyRandUniform(&rng) < 0.3;
			if (PolicyRandUniform(&rng) < 0.2)
				v[i].arm = -1;
			if (PolicyRandUniform(&rng) < 0.2)
				v[i].score = v[(i + 1) % N].score;
		}
		CHECK(PolicyIndexInit(&idx, v, N, idle_only) == 0, "index init");
		best0 = malloc(sizeof(int) * 2 * idx.size);
		lrs0 = malloc(sizeof(int) * 2 * idx.size);
		memcpy(best0, idx.best, sizeof(int) * 2 * idx.size);
		memcpy(lrs0, idx.lrs, sizeof(int) * 2 * idx.size);
		for (int by_lrs = 0; by_lrs <= 1; by_lrs++)
			for (int k = 1; k <= N + 1; k += 1 + k / 4)
			{
				int			skip = (trial % 3 == 0) ? -1 :
					(trial % 3 == 1) ? (by_lrs ? idx.lrs[1] : idx.best[1]) :
					(int) (PolicyRandUniform(&rng) * N);
				int			out[N + 1],
							want[N],
							n_want = 0,
							n;

				/* the full sort: selection by the trees' own order */
				for (int i = 0; i < N; i++)
				{
					int			in = v[i].arm >= 0 &&
						(by_lrs || !idle_only || v[i].n_running == 0);

					if (in && i != skip)
						want[n_want++] = i;
				}
				for (int a = 0; a < n_want; a++)
					for (int b = a + 1; b < n_want; b++)
					{
						const PolicyTenantView *x = &v[want[a]],
								   *y = &v[want[b]];
						int			later = by_lrs ?
							(y->last_served < x->last_served ||
							 (y->last_served == x->last_served &&
							  (y->id < x->id || (y->id == x->id && want[b] < want[a])))) :
							(y->score > x->score ||
							 (y->score == x->score &&
							  (y->id < x->id || (y->id == x->id && want[b] < want[a]))));

						if (later)
						{
							int			tmp = want[a];

							want[a] = want[b];
							want[b] = tmp;
						}
					}
				n = PolicyIndexTop(&idx, by_lrs, skip, k, out);
				if (n != (k < n_want ? k : n_want))
					bad++;
				for (int i = 0; i < n && i < n_want; i++)
					bad += out[i] != want[i];
				if (memcmp(best0, idx.best, sizeof(int) * 2 * idx.size) != 0 ||
					memcmp(lrs0, idx.lrs, sizeof(int) * 2 * idx.size) != 0)
					bad++;
			}
		free(best0);
		free(lrs0);
		PolicyIndexFree(&idx);
	}
	CHECK(bad == 0, "PolicyIndexTop: %d differences from the full sort", bad);
}

/*
 * The grammar (src/core/policy_spec.c's tables): the kept options parse
 * within their ranges and are refused outside them with the range in the
 * message, options removed from the grammar are refused, named specs
 * expand, and docs/scheduler.md holds exactly PolicyGrammarTable()'s
 * tables between its markers (the docs cannot disagree with the parser).
 */
void
TestPolicyGrammar(void)
{
	static const char *const begin = "<!-- policy grammar: begin (easeml-replay grammar) -->\n";
	static const char *const end = "<!-- policy grammar: end -->";
	static const char *const removed[] = {
		"beta=2", "delta=0.1", "floor=0.1", "ce=0.5", "first=1", "la=2",
		"lah=3", "lap=1", "blk=3", "rg=2", "tc=0", "mbw=0.1", "mnc=3",
	"mtau=0.1", "mpl=4", "warm=0", "spread=0"};
	char		err[256];
	char		spec[64];
	PolicyParams p;
	size_t		len;
	char	   *table;
	FILE	   *f;

	CHECK(PolicyParseSpec("hybrid:cost:w=30:s=4:greedy=max_gap:qmax=1:qarm=0", &p,
						  err, sizeof(err)) == POLICY_OK &&
		  p.kind == POLICY_HYBRID && p.cost_aware && p.fairness_window == 30 &&
		  p.streak_limit == 4 && p.greedy == POLICY_MAX_GAP && p.q_max == 1.0 &&
		  p.q_max_arm == 0, "hybrid's options parse: %s", err);
	CHECK(PolicyParseSpec(POLICY_AUTO_FALLBACK, &p, err, sizeof(err)) == POLICY_OK,
		  "the fallback parses");
	CHECK(PolicyParseSpec("hybrid:cost:acq=mix:msh=1:mh=0:mgp=0.2:mrg=2", &p, err,
						  sizeof(err)) == POLICY_OK && p.mix_arm && p.mix_shift &&
		  p.mix_h == 0.0 && p.mix_gp == 0.2 && p.mix_score == 2 &&
		  PolicyUsesMixture(&p), "auto's mixture candidate parses");
	CHECK(PolicyParseSpec("default", &p, err, sizeof(err)) == POLICY_OK &&
		  p.auto_select && p.kind == POLICY_POPULAR, "default = auto, on its fallback");
	CHECK(PolicyParseSpec("tenant_bo:w=3", &p, err, sizeof(err)) == POLICY_OK &&
		  p.kind == POLICY_RR && p.cost_aware && p.acq == POLICY_ACQ_EI &&
		  p.fairness_window == 3, "tenant_bo expands, options apply on top");
	CHECK(PolicyParseSpec("sometimes", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  strstr(err, "unknown policy \"sometimes\"") != NULL, "unknown name: %s", err);
	CHECK(PolicyParseSpec("hybrid:cost:acq=mix:mgp=2", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  strstr(err, "mgp takes a value: [0, 1]") != NULL, "out of range: %s", err);
	CHECK(PolicyParseSpec("rr:cost=1", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  strstr(err, "cost takes no value") != NULL, "a flag with a value: %s", err);
	CHECK(PolicyParseSpec("rr:w=-1", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  PolicyParseSpec("rr:s=x", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  PolicyParseSpec("hybrid:greedy=rr", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  PolicyParseSpec("rr:mrg=3", &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
		  PolicyParseSpec("rr:mh=-1", &p, err, sizeof(err)) == POLICY_BAD_INPUT,
		  "bad values refused");
	for (int i = 0; i < (int) (sizeof(removed) / sizeof(removed[0])); i++)
	{
		snprintf(spec, sizeof(spec), "hybrid:cost:%s", removed[i]);
		CHECK(PolicyParseSpec(spec, &p, err, sizeof(err)) == POLICY_BAD_INPUT &&
			  strstr(err, "no option") != NULL, "%s is no option: %s", removed[i], err);
	}
	for (int i = 0; i < PolicyOptionCount(); i++)
	{
		const PolicyOption *o = PolicyOptionAt(i);

		CHECK(o != NULL && o->name && o->def && o->doc &&
			  (o->type != POLICY_OPT_CHOICE || (o->values && o->set)) &&
			  strchr(o->doc, '|') == NULL && strchr(o->def, '|') == NULL,
			  "option %d is complete (no '|' for the markdown table)", i);
	}
	CHECK(PolicyOptionAt(PolicyOptionCount()) == NULL, "the table ends");

	/* docs/scheduler.md holds the grammar's tables, byte for byte */
	len = PolicyGrammarTable(NULL, 0, 1);
	table = malloc(len + 1);
	CHECK(table != NULL && PolicyGrammarTable(table, len + 1, 1) == len &&
		  strlen(table) == len, "the tables print");
	f = fopen("docs/scheduler.md", "r");
	CHECK(f != NULL, "docs/scheduler.md opens (run from the repository root)");
	if (f != NULL && table != NULL)
	{
		char	   *doc = malloc(1 << 20);
		size_t		n = doc ? fread(doc, 1, (1 << 20) - 1, f) : 0;
		char	   *a,
				   *b;

		if (doc)
			doc[n] = '\0';
		a = doc ? strstr(doc, begin) : NULL;
		b = a ? strstr(a, end) : NULL;
		CHECK(a != NULL && b != NULL, "docs/scheduler.md has the grammar's markers");
		if (a != NULL && b != NULL)
		{
			a += strlen(begin);
			CHECK((size_t) (b - a) == len && strncmp(a, table, len) == 0,
				  "docs/scheduler.md's grammar tables equal easeml-replay grammar's "
				  "(regenerate them: ./easeml-replay grammar)");
		}
		free(doc);
	}
	if (f != NULL)
		fclose(f);
	free(table);
}
