/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  Discrete-event replay simulator of multi-tenant model selection
 *	  (docs/scheduler.md 5) and the CSV reader it needs.
 *
 * One run replays one policy on one draw.  Tenant i's run of model k takes
 * cost[i][k] seconds of one of M devices and then reveals quality[i][k]
 * (no noise).  The loop is event driven:
 *
 *	 1. every free device, in index order, asks the policy for a
 *		(tenant, arm); the posteriors are conditioned on finished runs only
 *		and running arms are excluded (docs/scheduler.md 5); if nothing can run
 *		the device idles until the next completion;
 *	 2. time jumps to the next completion(s); each reveals its result,
 *		appends one observation to the tenant's GpState (O(K t), no refit)
 *		and, with the SIZE_GP cost model, one log-runtime residual to the
 *		tenant's cost posterior;
 *	 3. the global average loss L = mean_i (f_i* - b_i) is a step function
 *		of time; its steps are recorded exactly.
 *
 * Only the completing or dispatched tenant's candidate is recomputed, so a
 * decision costs O(K t) for that tenant plus O(n) to pick among tenants.
 *
 * Each draw permutes the rows with a seeded generator: tenants first, then
 * the prior rows, disjoint (docs/scheduler.md 5).  Curves are compared
 * on a common grid and times to a loss target are read from the exact
 * steps (docs/scheduler.md 5).
 *
 * IDENTIFICATION
 *	  src/core/replay.c
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csv.h"
#include "decision.h"
#include "gp.h"
#include "mixlearn.h"
#include "mixture.h"
#include "policy.h"
#include "replay.h"

#if defined(__GNUC__)
static void SetErr(char *err, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
#endif

/* Format an error message into the caller's buffer. */
static void
SetErr(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ----------------------------------------------------------------------
 * Matrices from CSV (the shared reader of src/core/csv.c)
 * ----------------------------------------------------------------------
 */

/* Free a matrix. */
void
ReplayMatrixFree(ReplayMatrix *m)
{
	int			i;

	if (m == NULL)
		return;
	if (m->row_ids)
		for (i = 0; i < m->rows; i++)
			free(m->row_ids[i]);
	if (m->col_names)
		for (i = 0; i < m->cols; i++)
			free(m->col_names[i]);
	free(m->row_ids);
	free(m->col_names);
	free(m->row_lines);
	free(m->data);
	memset(m, 0, sizeof(*m));
}

/* Read the header into m->col_names; returns a REPLAY_* status. */
static int
ParseHeader(CsvReader *r, ReplayMatrix *m, char *err, size_t errlen)
{
	int			cap = 0;
	int			rc;

	if (!CsvNextRecord(r))
	{
		SetErr(err, errlen, "empty CSV: a header row is required");
		return REPLAY_BAD_INPUT;
	}
	do
	{
		rc = CsvNextField(r);
		if (rc < 0)
			break;
		if (m->cols == cap)
		{
			char	  **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(m->col_names, sizeof(char *) * cap);
			if (nn == NULL)
				return REPLAY_NO_MEMORY;
			m->col_names = nn;
		}
		/* the first field names the id column: kept for now, dropped below */
		m->col_names[m->cols] = strdup(CsvTrim(r->buf));
		if (m->col_names[m->cols] == NULL)
			return REPLAY_NO_MEMORY;
		m->cols++;
	} while (rc == CSV_MORE);
	if (rc == CSV_NO_MEMORY)
		return REPLAY_NO_MEMORY;
	if (rc == CSV_BAD_QUOTE)
	{
		SetErr(err, errlen, "line 1: unterminated quoted field in the header");
		return REPLAY_BAD_INPUT;
	}
	if (m->cols < 2)
	{
		SetErr(err, errlen, "line 1: the header needs a row-id column and at least one value column");
		return REPLAY_BAD_INPUT;
	}
	free(m->col_names[0]);
	memmove(m->col_names, m->col_names + 1, sizeof(char *) * (m->cols - 1));
	m->cols--;
	return REPLAY_OK;
}

/* Grow the row arrays of m to hold at least one more row. */
static int
GrowRows(ReplayMatrix *m, int *cap)
{
	int			nc;
	double	   *nd;
	char	  **ni;
	long	   *nl;

	if (m->rows < *cap)
		return 1;
	nc = *cap ? *cap * 2 : 64;
	nd = realloc(m->data, sizeof(double) * (size_t) nc * m->cols);
	if (nd == NULL)
		return 0;
	m->data = nd;
	ni = realloc(m->row_ids, sizeof(char *) * nc);
	if (ni == NULL)
		return 0;
	m->row_ids = ni;
	nl = realloc(m->row_lines, sizeof(long) * nc);
	if (nl == NULL)
		return 0;
	m->row_lines = nl;
	*cap = nc;
	return 1;
}

/* Read one data row (a record follows); returns a REPLAY_* status. */
static int
ParseRow(CsvReader *r, ReplayMatrix *m, char *err, size_t errlen)
{
	double	   *row = m->data + (size_t) m->rows * m->cols;
	long		line = r->line;
	int			col = 0;
	int			rc;

	m->row_ids[m->rows] = NULL;
	do
	{
		rc = CsvNextField(r);
		if (rc == CSV_NO_MEMORY)
			return REPLAY_NO_MEMORY;
		if (rc == CSV_BAD_QUOTE)
		{
			SetErr(err, errlen, "line %ld: unterminated quoted field", line);
			return REPLAY_BAD_INPUT;
		}
		if (col == 0)
		{
			m->row_ids[m->rows] = strdup(CsvTrim(r->buf));
			if (m->row_ids[m->rows] == NULL)
				return REPLAY_NO_MEMORY;
		}
		else if (col <= m->cols &&
				 CsvParseNumber(r->buf, &row[col - 1]) == CSV_NOT_NUMBER)
		{
			SetErr(err, errlen, "line %ld, column %d: not a number: \"%.40s\"",
				   line, col + 1, CsvTrim(r->buf));
			free(m->row_ids[m->rows]);
			return REPLAY_BAD_INPUT;
		}
		col++;
	} while (rc == CSV_MORE);
	if (col != m->cols + 1)
	{
		SetErr(err, errlen, "line %ld has %d fields, the header has %d",
			   line, col, m->cols + 1);
		free(m->row_ids[m->rows]);
		return REPLAY_BAD_INPUT;
	}
	m->row_lines[m->rows] = line;
	m->rows++;
	return REPLAY_OK;
}

/* qsort comparator: row indices by their id string. */
static const ReplayMatrix *sort_matrix;

static int
CmpRowId(const void *a, const void *b)
{
	int			x = *(const int *) a,
				y = *(const int *) b;
	int			c = strcmp(sort_matrix->row_ids[x], sort_matrix->row_ids[y]);

	return c != 0 ? c : (x > y) - (x < y);
}

/* Reject a matrix whose row ids repeat (a row would count twice). */
static int
CheckUniqueIds(const ReplayMatrix *m, char *err, size_t errlen)
{
	int		   *idx = malloc(sizeof(int) * (size_t) (m->rows > 0 ? m->rows : 1));
	int			i,
				rc = REPLAY_OK;

	if (idx == NULL)
		return REPLAY_NO_MEMORY;
	for (i = 0; i < m->rows; i++)
		idx[i] = i;
	sort_matrix = m;
	qsort(idx, m->rows, sizeof(int), CmpRowId);
	for (i = 1; i < m->rows; i++)
		if (strcmp(m->row_ids[idx[i - 1]], m->row_ids[idx[i]]) == 0)
		{
			SetErr(err, errlen, "line %ld: row id \"%.40s\" already appeared on line %ld",
				   m->row_lines[idx[i]], m->row_ids[idx[i]], m->row_lines[idx[i - 1]]);
			rc = REPLAY_BAD_INPUT;
			break;
		}
	free(idx);
	return rc;
}

/* Parse a CSV buffer; see replay.h. */
int
ReplayParseCsv(const char *text, size_t len, ReplayMatrix *m, char *err,
			   size_t errlen)
{
	CsvReader	r;
	int			rowcap = 0;
	int			rc;

	if (m == NULL)
		return REPLAY_BAD_INPUT;
	memset(m, 0, sizeof(*m));
	if (text == NULL)
	{
		SetErr(err, errlen, "no CSV text");
		return REPLAY_BAD_INPUT;
	}
	CsvInit(&r, text, len);
	rc = ParseHeader(&r, m, err, errlen);
	while (rc == REPLAY_OK && CsvNextRecord(&r))
	{
		if (!GrowRows(m, &rowcap))
			rc = REPLAY_NO_MEMORY;
		else
			rc = ParseRow(&r, m, err, errlen);
	}
	if (rc == REPLAY_OK && m->rows == 0)
	{
		SetErr(err, errlen, "the CSV has a header but no data rows");
		rc = REPLAY_BAD_INPUT;
	}
	if (rc == REPLAY_OK)
		rc = CheckUniqueIds(m, err, errlen);
	if (rc == REPLAY_NO_MEMORY)
		SetErr(err, errlen, "out of memory reading CSV");
	CsvFree(&r);
	if (rc != REPLAY_OK)
		ReplayMatrixFree(m);
	return rc;
}

/* Read and parse a CSV file; see replay.h. */
int
ReplayReadCsv(const char *path, ReplayMatrix *m, char *err, size_t errlen)
{
	FILE	   *f;
	char	   *text = NULL;
	size_t		len = 0,
				cap = 0;
	int			rc;

	if (m == NULL)
		return REPLAY_BAD_INPUT;
	memset(m, 0, sizeof(*m));
	if (path == NULL)
	{
		SetErr(err, errlen, "no CSV path");
		return REPLAY_BAD_INPUT;
	}
	f = fopen(path, "rb");
	if (f == NULL)
	{
		SetErr(err, errlen, "could not open \"%s\": %s", path, strerror(errno));
		return REPLAY_IO;
	}
	for (;;)
	{
		size_t		got;

		if (len + 65536 > cap)
		{
			size_t		nc = cap ? cap * 2 : 1 << 20;
			char	   *nt = realloc(text, nc);

			if (nt == NULL)
			{
				free(text);
				fclose(f);
				SetErr(err, errlen, "out of memory reading \"%s\"", path);
				return REPLAY_NO_MEMORY;
			}
			text = nt;
			cap = nc;
		}
		got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
	{
		free(text);
		fclose(f);
		SetErr(err, errlen, "could not read \"%s\"", path);
		return REPLAY_IO;
	}
	fclose(f);
	rc = ReplayParseCsv(text, len, m, err, errlen);
	if (rc != REPLAY_OK && err != NULL && errlen > 0)
	{
		char		tmp[512];

		snprintf(tmp, sizeof(tmp), "%s: %s", path, err);
		snprintf(err, errlen, "%s", tmp);
	}
	free(text);
	return rc;
}

/* x -> 1 - x on every cell. */
void
ReplayOneMinus(ReplayMatrix *m)
{
	size_t		i;

	if (m == NULL || m->data == NULL)
		return;
	for (i = 0; i < (size_t) m->rows * m->cols; i++)
		m->data[i] = 1.0 - m->data[i];
}

/* Parse an integer row id; 0 if it is not one. */
static int
ParseId(const char *s, long long *out)
{
	char	   *end;
	long long	v;

	while (isspace((unsigned char) *s))
		s++;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno != 0)
		return 0;
	while (isspace((unsigned char) *end))
		end++;
	if (*end != '\0')
		return 0;
	*out = v;
	return 1;
}

/* Join table rows onto target rows by integer id; see replay.h. */
int
ReplayJoinById(const ReplayMatrix *target, const ReplayMatrix *table,
			   double *out, char *err, size_t errlen)
{
	long long  *ids;
	int			i,
				j;

	if (target == NULL || table == NULL || out == NULL ||
		target->row_ids == NULL || table->row_ids == NULL)
	{
		SetErr(err, errlen, "join: missing matrix");
		return REPLAY_BAD_INPUT;
	}
	ids = malloc(sizeof(long long) * (size_t) (table->rows > 0 ? table->rows : 1));
	if (ids == NULL)
	{
		SetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	for (j = 0; j < table->rows; j++)
		if (!ParseId(table->row_ids[j], &ids[j]))
		{
			SetErr(err, errlen, "join: row id \"%.40s\" is not an integer",
				   table->row_ids[j]);
			free(ids);
			return REPLAY_BAD_INPUT;
		}
	for (i = 0; i < target->rows; i++)
	{
		long long	id;
		int			found = -1;

		if (!ParseId(target->row_ids[i], &id))
		{
			SetErr(err, errlen, "join: row id \"%.40s\" is not an integer",
				   target->row_ids[i]);
			free(ids);
			return REPLAY_BAD_INPUT;
		}
		for (j = 0; j < table->rows; j++)
			if (ids[j] == id)
			{
				found = j;
				break;
			}
		if (found < 0)
		{
			SetErr(err, errlen, "join: row id %lld has no match", id);
			free(ids);
			return REPLAY_BAD_INPUT;
		}
		memcpy(out + (size_t) i * table->cols,
			   table->data + (size_t) found * table->cols,
			   sizeof(double) * table->cols);
	}
	free(ids);
	return REPLAY_OK;
}

/* ----------------------------------------------------------------------
 * Policy specs (src/core/policy.c parses them)
 * ----------------------------------------------------------------------
 */

/* Parse "name[:opt]..." into a ReplayPolicy; see replay.h. */
int
ReplayParsePolicy(const char *spec, ReplayPolicy *policy, char *err,
				  size_t errlen)
{
	if (spec == NULL || policy == NULL)
	{
		SetErr(err, errlen, "no policy");
		return REPLAY_BAD_INPUT;
	}
	memset(policy, 0, sizeof(*policy));
	if (strlen(spec) >= sizeof(policy->name))
	{
		SetErr(err, errlen, "policy spec \"%.40s...\" is too long", spec);
		return REPLAY_BAD_INPUT;
	}
	snprintf(policy->name, sizeof(policy->name), "%s", spec);
	if (PolicyParseSpec(spec, &policy->params, err, errlen) != POLICY_OK)
		return REPLAY_BAD_INPUT;
	policy->auto_select = policy->params.auto_select;
	return REPLAY_OK;
}

/* ----------------------------------------------------------------------
 * Simulation
 * ----------------------------------------------------------------------
 */

/* Defaults of a replay configuration. */
void
ReplayConfigDefault(ReplayConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->n_tenants = 20;
	cfg->devices = 1;
	cfg->draws = 20;
	cfg->seed = 1;
	cfg->cost_model = POLICY_COST_SIZE_GP;
	cfg->prior.kernel = GP_KERNEL_EMPIRICAL;
	cfg->grid_points = 200;
	cfg->fair_share = 1;
}

/* A growable event list. */
typedef struct EventList
{
	ReplayEvent *ev;
	int			n;
	int			cap;
} EventList;

/* Append an event. */
static int
EventPush(EventList *l, double time, double loss)
{
	if (l->n == l->cap)
	{
		int			cap = l->cap ? l->cap * 2 : 256;
		ReplayEvent *ne = realloc(l->ev, sizeof(ReplayEvent) * cap);

		if (ne == NULL)
			return 0;
		l->ev = ne;
		l->cap = cap;
	}
	l->ev[l->n].time = time;
	l->ev[l->n].loss = loss;
	l->n++;
	return 1;
}

/*
 * Everything shared by the policies of one draw.  The tenants are the
 * tasks of a DecisionWorld, each its own tenant, exactly as the live
 * scheduler keeps them (src/core/decision.c): task i is tenant i, row rows[i].
 */
typedef struct DrawCtx
{
	const ReplayConfig *cfg;
	int			K;
	int			n;				/* tenants */
	const int  *rows;			/* n_rows usable rows (duplicates removed) */
	int			n_rows;
	int		   *tenant_row;		/* n */
	const int  *prior_row;		/* n_prior rows that build the prior */
	int			n_prior;
	double	   *fstar;			/* n: best quality of each tenant's row */
	GpPrior		prior;
	int			use_mix;		/* a policy uses the history mixture */
	MixPrior	mix;			/* fitted on the prior rows when use_mix */
	PolicyCostModel cost_model;
	int			use_cost_model;
	DecisionWorld world;
	int			have_world;
	/* devices */
	int			M;
	int		   *dev_busy;
	double	   *dev_end;
	int		   *dev_task;
	int		   *dev_arm;
	int			cur_policy;		/* what on_run is told */
	int			cur_draw;
	/* diagnostics */
	double		cost_sq_err;
	long		cost_n;
} DrawCtx;

/* What a run of row r, arm k really takes: its cost plus the overhead. */
static double
TrueCost(const ReplayConfig *cfg, int r, int k)
{
	double		c = cfg->cost ? cfg->cost[(size_t) r * cfg->K + k] : 1.0;

	return c + cfg->overhead;
}

/* Record the first time each loss target is reached (and the worst regret). */
static void
CheckTargets(const DrawCtx *c, double now, double loss, double *time_to,
			 double *worst)
{
	const ReplayConfig *cfg = c->cfg;

	for (int k = 0; k < cfg->n_thresholds; k++)
		if (isinf(time_to[k]) && loss <= cfg->thresholds[k] + 1e-12)
		{
			double		wr = 0.0;

			for (int t = 0; t < c->n; t++)
				if (c->fstar[t] - c->world.tasks[t]->best > wr)
					wr = c->fstar[t] - c->world.tasks[t]->best;
			time_to[k] = now;
			worst[k] = wr;
		}
}

/* Hand every free device a (task, arm); devices stay idle if none can run. */
static int
Dispatch(DrawCtx *c, double now, char *err, size_t errlen)
{
	DecisionWorld *w = &c->world;

	for (int d = 0; d < c->M; d++)
	{
		DecisionChoice choice;
		DecisionTask *t;
		int			arm,
					rc;

		if (c->dev_busy[d])
			continue;
		rc = DecisionNext(w, &choice);
		if (rc < 0)
		{
			SetErr(err, errlen, "the policy failed (%d)", rc);
			return rc == POLICY_NO_MEMORY ? REPLAY_NO_MEMORY : REPLAY_BAD_INPUT;
		}
		if (choice.chosen.task < 0)
			break;				/* idle until a run finishes */
		t = w->tasks[choice.chosen.task];
		arm = choice.chosen.arm;
		if (arm < 0 || arm >= c->K || t->arm[arm] != DECISION_ARM_AVAILABLE)
		{
			SetErr(err, errlen, "the policy picked an unavailable arm");
			return REPLAY_BAD_INPUT;
		}
		/* how good was the cost estimate the policy used (if it reads one)? */
		if (c->cfg->cost && !w->skip_posterior)
		{
			double		e = log(t->cost[arm]) -
				log(TrueCost(c->cfg, c->tenant_row[choice.chosen.task], arm));

			c->cost_sq_err += e * e;
			c->cost_n++;
		}
		DecisionStart(w, t, arm);
		c->dev_busy[d] = 1;
		c->dev_task[d] = choice.chosen.task;
		c->dev_arm[d] = arm;
		c->dev_end[d] = now + TrueCost(c->cfg, c->tenant_row[choice.chosen.task], arm);
	}
	return REPLAY_OK;
}

/* Finish every run that ends at 'now': reveal its quality and runtime. */
static void
Complete(DrawCtx *c, double now)
{
	for (int d = 0; d < c->M; d++)
	{
		int			ti = c->dev_task[d],
					arm = c->dev_arm[d],
					row;

		if (!c->dev_busy[d] || c->dev_end[d] != now)
			continue;
		row = c->tenant_row[ti];
		c->dev_busy[d] = 0;
		(void) DecisionObserve(&c->world, c->world.tasks[ti], arm,
							   c->cfg->quality[(size_t) row * c->K + arm],
							   c->use_cost_model ? TrueCost(c->cfg, row, arm) : 0.0);
		if (c->cfg->on_run)
		{
			ReplayRunRecord r;

			r.policy = c->cur_policy;
			r.draw = c->cur_draw;
			r.tenant = ti;
			r.arm = arm;
			r.end = now;
			r.cost = TrueCost(c->cfg, row, arm);
			r.start = now - r.cost;
			r.quality = c->cfg->quality[(size_t) row * c->K + arm];
			r.best = c->world.tasks[ti]->best;
			r.regret = c->fstar[ti] - r.best;
			c->cfg->on_run(c->cfg->on_run_arg, &r);
		}
	}
}

/*
 * Simulation of one policy on the current draw, one event at a time:
 * SimBegin resets the tenants, SimAdvance dispatches every free device and
 * completes the next run(s).
 */
typedef struct SimState
{
	EventList  *events;
	double	   *time_to;
	double	   *worst;
	double		now;
} SimState;

static int
SimBegin(DrawCtx *c, const PolicyParams *params, uint64_t rng_seed,
		 SimState *s, EventList *events, double *time_to, double *worst)
{
	DecisionWorld *w = &c->world;
	double		loss = 0.0;

	DecisionSetParams(w, params);
	w->skip_posterior = !PolicyReadsPosterior(params);
	w->rng = rng_seed;
	w->decision_no = 0;
	for (int t = 0; t < c->n; t++)
		DecisionResetTask(w, w->tasks[t]);
	for (int k = 0; k < c->cfg->n_thresholds; k++)
	{
		time_to[k] = INFINITY;
		worst[k] = NAN;
	}
	for (int d = 0; d < c->M; d++)
		c->dev_busy[d] = 0;
	s->events = events;
	s->time_to = time_to;
	s->worst = worst;
	s->now = 0.0;
	events->n = 0;
	for (int t = 0; t < c->n; t++)
		loss += c->fstar[t];
	return EventPush(events, 0.0, loss / c->n) ? REPLAY_OK : REPLAY_NO_MEMORY;
}

/* One event; 1 when the simulation is over (nothing runs or can run). */
static int
SimAdvance(DrawCtx *c, SimState *s, char *err, size_t errlen)
{
	DecisionWorld *w = &c->world;
	double		next = INFINITY,
				loss = 0.0;
	int			rc;

	rc = Dispatch(c, s->now, err, errlen);
	if (rc < 0)
		return rc;
	for (int d = 0; d < c->M; d++)
		if (c->dev_busy[d] && c->dev_end[d] < next)
			next = c->dev_end[d];
	if (isinf(next))
		return 1;				/* nothing runs and nothing can: done */
	s->now = next;
	Complete(c, s->now);

	/* summed afresh (O(n)) so that the loss is exactly 0 at the end */
	for (int t = 0; t < c->n; t++)
		loss += c->fstar[t] - w->tasks[t]->best;
	loss /= c->n;
	if (!EventPush(s->events, s->now, loss))
	{
		SetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	CheckTargets(c, s->now, loss, s->time_to, s->worst);
	return loss <= c->cfg->stop_loss + 1e-12 ? 1 : 0;
}

/* Free a draw context's per-draw parts. */
static void
DrawFree(DrawCtx *c)
{
	if (c->have_world)
		DecisionWorldFree(&c->world);
	c->have_world = 0;
	GpPriorFree(&c->prior);
	MixPriorFree(&c->mix);
	PolicyCostModelFree(&c->cost_model);
	free(c->tenant_row);
	free(c->fstar);
	c->tenant_row = NULL;
	c->fstar = NULL;
}

/* Seeded Fisher-Yates shuffle of the usable rows for draw 'draw'. */
static void
Permute(const DrawCtx *c, int draw, int *perm)
{
	uint64_t	rng = c->cfg->seed * 0x2545F4914F6CDD1DULL +
		(uint64_t) (c->cfg->first_draw + draw) * 0x9E3779B97F4A7C15ULL + 1;

	for (int i = 0; i < c->n_rows; i++)
		perm[i] = c->rows[i];
	for (int i = c->n_rows - 1; i > 0; i--)
	{
		int			j = (int) (PolicyRandUniform(&rng) * (i + 1));
		int			tmp;

		if (j > i)
			j = i;
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
}

/*
 * Work units of a prior fit on n rows x K models (the shared prior or the
 * size_gp cost model's residual prior): the K x K covariance and the
 * held-out scoring of its hyperparameter grid (src/core/gp.c).
 */
static double
FitWork(int n, int K)
{
	return 20.0 * K * K + 0.2 * (double) n * K * K + 2.0 * (double) n * n * K;
}

/*
 * Fit the prior and the cost model on the draw's prior rows perm[n ..
 * n + n_prior), and start the history mixture's fit (*mix, stepped by the
 * caller) when a policy uses it.  Prior rows' runtimes carry the overhead
 * as well, as the live scheduler's measured seconds do.
 */
static int
FitModels(DrawCtx *c, const int *prior_rows, int n_prior, int draw,
		  MixFitJob *mix, int *mix_on, char *err, size_t errlen)
{
	const ReplayConfig *cfg = c->cfg;
	const int	K = c->K;
	double	   *hist,
			   *hcost = NULL,
			   *hsize = NULL;
	int			rc = REPLAY_OK,
				grc;

	*mix_on = 0;
	hist = malloc(sizeof(double) * (size_t) (n_prior > 0 ? n_prior : 1) * K);
	if (hist == NULL)
		goto nomem;
	for (int i = 0; i < n_prior; i++)
		memcpy(hist + (size_t) i * K, cfg->quality + (size_t) prior_rows[i] * K,
			   sizeof(double) * K);
	grc = GpPriorFit(hist, n_prior, K, &cfg->prior, &c->prior);
	if (grc < 0)
	{
		SetErr(err, errlen, "draw %d: prior fit failed: %s", draw, GpStatusText(grc));
		rc = REPLAY_GP_FAILED;
		goto done;
	}
	/* the history mixture, from the same rows (none with fewer than 2) */
	if (c->use_mix && n_prior >= 2)
	{
		if (MixFitBegin(mix, hist, n_prior, K) < 0)
			goto nomem;
		*mix_on = 1;
	}
	c->use_cost_model = 0;
	if (!cfg->oracle_cost && cfg->cost && cfg->cost_model != POLICY_COST_NONE)
	{
		hcost = malloc(sizeof(double) * (size_t) (n_prior > 0 ? n_prior : 1) * K);
		hsize = malloc(sizeof(double) * (size_t) (n_prior > 0 ? n_prior : 1) * 3);
		if (hcost == NULL || hsize == NULL)
			goto nomem;
		for (int i = 0; i < n_prior; i++)
		{
			int			row = prior_rows[i];

			for (int k = 0; k < K; k++)
				hcost[(size_t) i * K + k] = TrueCost(cfg, row, k);
			hsize[3 * i] = cfg->sizes[2 * row];
			hsize[3 * i + 1] = cfg->sizes[2 * row + 1];
			hsize[3 * i + 2] = 1.0;
		}
		grc = PolicyCostModelFit(&c->cost_model, cfg->cost_model, hcost, hsize,
								 n_prior, K);
		if (grc < 0)
		{
			SetErr(err, errlen, "draw %d: cost model fit failed (%d)", draw, grc);
			rc = REPLAY_GP_FAILED;
			goto done;
		}
		c->use_cost_model = 1;
	}
	goto done;

nomem:
	SetErr(err, errlen, "out of memory");
	rc = REPLAY_NO_MEMORY;
done:
	free(hist);
	free(hcost);
	free(hsize);
	return rc;
}

/* Build the draw's world: one tenant and one task per tenant row. */
static int
BuildWorld(DrawCtx *c, char *err, size_t errlen)
{
	const ReplayConfig *cfg = c->cfg;
	const int	K = c->K;
	PolicyParams params;
	double	   *fallback;
	int			rc;

	PolicyParamsDefault(&params, POLICY_FIFO);
	rc = DecisionWorldInit(&c->world, K, NULL, NULL, &params);
	if (rc < 0)
		goto nomem;
	c->have_world = 1;
	c->world.slots = c->M;
	c->world.tenant_cap = cfg->max_devices_per_tenant > 0 ?
		cfg->max_devices_per_tenant : (cfg->fair_share ? -1 : 0);
	if (DecisionSetPrior(&c->world, DECISION_CLASSIFICATION, &c->prior) < 0)
		goto nomem;
	if (c->mix.rows != NULL &&
		DecisionSetMixture(&c->world, DECISION_CLASSIFICATION, &c->mix) < 0)
		goto nomem;
	if (c->use_cost_model)
		DecisionSetCostModel(&c->world, &c->cost_model, NULL);
	fallback = malloc(sizeof(double) * K);
	if (fallback == NULL)
		goto nomem;
	for (int t = 0; t < c->n; t++)
	{
		DecisionTaskSpec spec;
		int			row = c->tenant_row[t];

		memset(&spec, 0, sizeof(spec));
		spec.id = t;
		spec.tenant = DecisionAddTenant(&c->world, 0);
		spec.kind = DECISION_CLASSIFICATION;
		spec.rows = cfg->sizes ? cfg->sizes[2 * row] : 1.0;
		spec.features = cfg->sizes ? cfg->sizes[2 * row + 1] : 1.0;
		spec.classes = 1.0;
		/* the oracle sees true runtimes; without a cost model, 1 s each */
		for (int k = 0; k < K; k++)
			fallback[k] = (cfg->oracle_cost && cfg->cost) ? TrueCost(cfg, row, k) : 1.0;
		spec.fallback_cost = fallback;
		if (spec.tenant < 0 || DecisionAddTask(&c->world, &spec) == NULL)
		{
			free(fallback);
			goto nomem;
		}
	}
	free(fallback);
	return REPLAY_OK;

nomem:
	SetErr(err, errlen, "out of memory");
	return REPLAY_NO_MEMORY;
}

/*
 * Set up draw 'draw': permute the usable rows, fit the prior and the cost
 * model on the prior rows (and start the mixture's fit), and note the
 * tenants; BuildWorld makes them tasks once the mixture is fitted.
 */
static int
DrawSetup(DrawCtx *c, int draw, int *perm, MixFitJob *mix, int *mix_on,
		  char *err, size_t errlen)
{
	const ReplayConfig *cfg = c->cfg;
	int			n_prior;
	int			rc;

	Permute(c, draw, perm);
	n_prior = c->n_rows - c->n;
	if (cfg->n_prior > 0 && cfg->n_prior < n_prior)
		n_prior = cfg->n_prior;
	c->prior_row = perm + c->n;
	c->n_prior = n_prior;
	rc = FitModels(c, perm + c->n, n_prior, draw, mix, mix_on, err, errlen);
	if (rc < 0)
		return rc;
	c->tenant_row = malloc(sizeof(int) * c->n);
	c->fstar = malloc(sizeof(double) * c->n);
	if (c->tenant_row == NULL || c->fstar == NULL)
	{
		SetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	for (int t = 0; t < c->n; t++)
	{
		c->tenant_row[t] = perm[t];
		c->fstar[t] = -INFINITY;
		for (int k = 0; k < c->K; k++)
			if (cfg->quality[(size_t) perm[t] * c->K + k] > c->fstar[t])
				c->fstar[t] = cfg->quality[(size_t) perm[t] * c->K + k];
	}
	return REPLAY_OK;
}

/*
 * Rows whose quality vector repeats an earlier row's are left out before
 * any draw (a copy would otherwise sit in the prior of its own twin):
 * fills rows[] with the first row of every distinct vector; returns how
 * many rows are kept.
 */
static int
DistinctRows(const ReplayConfig *cfg, int *rows)
{
	int			n = 0;

	for (int r = 0; r < cfg->n_rows; r++)
	{
		const double *x = cfg->quality + (size_t) r * cfg->K;
		int			dup = 0;


		for (int j = 0; j < n && !dup; j++)
			dup = memcmp(x, cfg->quality + (size_t) rows[j] * cfg->K,
						 sizeof(double) * cfg->K) == 0;
		if (!dup)
			rows[n++] = r;
	}
	return n;
}

/* Free a replay output. */
void
ReplayOutputFree(ReplayOutput *out)
{
	int			i;

	if (out == NULL)
		return;
	if (out->events)
		for (i = 0; i < out->n_policies * out->draws; i++)
			free(out->events[i]);
	free(out->events);
	free(out->n_events);
	free(out->names);
	free(out->thresholds);
	free(out->time_to);
	free(out->worst_regret);
	free(out->median_time);
	free(out->auc);
	free(out->final_time);
	free(out->final_loss);
	free(out->decisions);
	free(out->auto_choice);
	free(out->grid);
	free(out->curve_mean);
	free(out->curve_median);
	memset(out, 0, sizeof(*out));
}

/* Median of n values (sorts them in place); NAN when n == 0. */
static double
Median(double *v, int n)
{
	int			i,
				j;

	if (n <= 0)
		return NAN;
	/* insertion sort: n is the number of draws */
	for (i = 1; i < n; i++)
	{
		double		x = v[i];

		for (j = i - 1; j >= 0 && v[j] > x; j--)
			v[j + 1] = v[j];
		v[j + 1] = x;
	}
	return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Loss of a step function at time tau. */
static double
LossAt(const ReplayEvent *ev, int n, double tau)
{
	int			lo = 0,
				hi = n - 1;

	if (n == 0)
		return NAN;
	if (tau < ev[0].time)
		return ev[0].loss;
	/* last event with time <= tau */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (ev[mid].time <= tau)
			lo = mid;
		else
			hi = mid - 1;
	}
	return ev[lo].loss;
}

/* Exact area under a step function over [0, horizon]. */
static double
StepArea(const ReplayEvent *ev, int n, double horizon)
{
	double		a = 0.0;
	int			i;

	for (i = 0; i < n; i++)
	{
		double		t0 = ev[i].time;
		double		t1 = (i + 1 < n) ? ev[i + 1].time : horizon;

		if (t0 >= horizon)
			break;
		if (t1 > horizon)
			t1 = horizon;
		a += ev[i].loss * (t1 - t0);
	}
	return a;
}

/* Validate a configuration before any work. */
static int
CheckConfig(const ReplayConfig *cfg, char *err, size_t errlen)
{
	size_t		i,
				cells;
	int			k;

	if (cfg->quality == NULL || cfg->n_rows <= 0 || cfg->K <= 0)
	{
		SetErr(err, errlen, "no quality matrix");
		return 0;
	}
	cells = (size_t) cfg->n_rows * cfg->K;
	for (i = 0; i < cells; i++)
		if (!(cfg->quality[i] >= 0.0 && cfg->quality[i] <= 1.0))
		{
			SetErr(err, errlen, "quality row %zu, column %zu is %g: quality must be in [0,1] without gaps",
				   i / cfg->K + 1, i % cfg->K + 1, cfg->quality[i]);
			return 0;
		}
	if (cfg->cost)
		for (i = 0; i < cells; i++)
			if (!(cfg->cost[i] > 0.0) || !isfinite(cfg->cost[i]))
			{
				SetErr(err, errlen, "cost row %zu, column %zu is %g: costs must be positive and finite",
					   i / cfg->K + 1, i % cfg->K + 1, cfg->cost[i]);
				return 0;
			}
	if (cfg->n_tenants <= 0 || cfg->n_tenants > cfg->n_rows)
	{
		SetErr(err, errlen, "tenants must be between 1 and the %d rows", cfg->n_rows);
		return 0;
	}
	if (cfg->first_draw < 0)
	{
		SetErr(err, errlen, "first draw must be >= 0");
		return 0;
	}
	if (cfg->n_prior < 0)
	{
		SetErr(err, errlen, "prior rows must be >= 0");
		return 0;
	}
	if (cfg->devices <= 0 || cfg->devices > 4096)
	{
		SetErr(err, errlen, "devices must be between 1 and 4096");
		return 0;
	}
	if (cfg->draws <= 0 || cfg->draws > 100000)
	{
		SetErr(err, errlen, "draws must be between 1 and 100000");
		return 0;
	}
	if (cfg->n_policies <= 0 || cfg->policies == NULL)
	{
		SetErr(err, errlen, "no policies");
		return 0;
	}
	if (cfg->n_thresholds < 0 || (cfg->n_thresholds > 0 && cfg->thresholds == NULL))
	{
		SetErr(err, errlen, "bad thresholds");
		return 0;
	}
	for (k = 0; k < cfg->n_thresholds; k++)
		if (!(cfg->thresholds[k] >= 0.0 && cfg->thresholds[k] <= 1.0))
		{
			SetErr(err, errlen, "thresholds must be in [0,1]");
			return 0;
		}
	if ((int) cfg->cost_model < 0 || cfg->cost_model > POLICY_COST_SIZE_GP)
	{
		SetErr(err, errlen, "unknown cost model");
		return 0;
	}
	if (cfg->cost && !cfg->oracle_cost && cfg->cost_model != POLICY_COST_NONE)
	{
		if (cfg->sizes == NULL)
		{
			SetErr(err, errlen, "cost model %s needs data-set sizes (or use oracle costs or cost model none)",
				   PolicyCostKindName(cfg->cost_model));
			return 0;
		}
		for (i = 0; i < 2 * (size_t) cfg->n_rows; i++)
			if (!(cfg->sizes[i] > 0.0) || !isfinite(cfg->sizes[i]))
			{
				SetErr(err, errlen, "data-set size of row %zu must be positive", i / 2 + 1);
				return 0;
			}
	}
	if (cfg->stop_loss < 0.0 || cfg->grid_points < 0 || cfg->max_devices_per_tenant < 0)
	{
		SetErr(err, errlen, "bad stop loss, grid size or device limit");
		return 0;
	}
	return 1;
}

/* The output's arrays for P policies, D draws, NK thresholds, G grid points. */
static int
OutputAlloc(ReplayOutput *out, int P, int D, int NK, int G)
{
	size_t		nk = NK > 0 ? NK : 1;

	out->n_policies = P;
	out->draws = D;
	out->n_thresholds = NK;
	out->grid_points = G;
	out->names = calloc(P, REPLAY_NAME_LEN);
	out->thresholds = malloc(sizeof(double) * nk);
	out->time_to = malloc(sizeof(double) * (size_t) P * D * nk);
	out->worst_regret = malloc(sizeof(double) * (size_t) P * D * nk);
	out->median_time = malloc(sizeof(double) * (size_t) P * nk);
	out->auc = malloc(sizeof(double) * (size_t) P * D);
	out->final_time = malloc(sizeof(double) * (size_t) P * D);
	out->final_loss = malloc(sizeof(double) * (size_t) P * D);
	out->decisions = malloc(sizeof(int) * (size_t) P * D);
	out->auto_choice = malloc(sizeof(int) * (size_t) P * D);
	out->grid = malloc(sizeof(double) * G);
	out->curve_mean = malloc(sizeof(double) * (size_t) P * G);
	out->curve_median = malloc(sizeof(double) * (size_t) P * G);
	return (out->names && out->thresholds && out->time_to && out->worst_regret &&
			out->median_time && out->auc && out->final_time && out->final_loss &&
			out->decisions && out->auto_choice && out->grid && out->curve_mean &&
			out->curve_median) ? 0 : -1;
}

/*
 * Whether a policy, or a candidate "auto" may choose, uses the history
 * mixture (which is then fitted for every draw).
 */
static int
UsesMixture(const ReplayConfig *cfg, const ReplayPolicy *pols, int P)
{
	char		list[REPLAY_NAME_LEN * 2];
	int			any_auto = 0;

	for (int p = 0; p < P; p++)
	{
		if (PolicyUsesMixture(&pols[p].params))
			return 1;
		any_auto |= pols[p].auto_select;
	}
	if (!any_auto)
		return 0;
	snprintf(list, sizeof(list), "%s",
			 cfg->auto_candidates ? cfg->auto_candidates : POLICY_AUTO_CANDIDATES);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
		 tok = strtok_r(NULL, ",", &save))
	{
		PolicyParams pp;

		if (PolicyParseSpec(tok, &pp, NULL, 0) == POLICY_OK &&
			PolicyUsesMixture(&pp))
			return 1;
	}
	return 0;
}

/*
 * The loss curves on a common log-spaced grid from the first completion
 * to the last: mean and median over draws.
 */
static int
OutputCurves(ReplayOutput *out, const EventList *lists)
{
	int			P = out->n_policies,
				D = out->draws,
				G = out->grid_points;
	double		t0 = INFINITY,
				t1 = 0.0;
	double	   *col = malloc(sizeof(double) * D);

	if (col == NULL)
		return -1;
	for (int pd = 0; pd < P * D; pd++)
	{
		const EventList *l = &lists[pd];

		if (l->n > 1 && l->ev[1].time < t0)
			t0 = l->ev[1].time;
		if (l->ev[l->n - 1].time > t1)
			t1 = l->ev[l->n - 1].time;
	}
	if (!isfinite(t0) || !(t0 > 0.0))
		t0 = 1.0;
	if (!(t1 > t0))
		t1 = t0 * 10.0;
	for (int g = 0; g < G; g++)
		out->grid[g] = G > 1 ? t0 * pow(t1 / t0, (double) g / (G - 1)) : t1;
	for (int p = 0; p < P; p++)
		for (int g = 0; g < G; g++)
		{
			double		s = 0.0;

			for (int d = 0; d < D; d++)
			{
				const EventList *l = &lists[(size_t) p * D + d];

				col[d] = LossAt(l->ev, l->n, out->grid[g]);
				s += col[d];
			}
			out->curve_mean[(size_t) p * G + g] = s / D;
			out->curve_median[(size_t) p * G + g] = Median(col, D);
		}
	free(col);
	return 0;
}

/* Hand the events over to the output (keep_events). */
static int
OutputKeepEvents(ReplayOutput *out, EventList *lists)
{
	int			PD = out->n_policies * out->draws;

	out->events = calloc((size_t) PD, sizeof(ReplayEvent *));
	out->n_events = calloc((size_t) PD, sizeof(int));
	if (out->events == NULL || out->n_events == NULL)
		return -1;
	for (int pd = 0; pd < PD; pd++)
	{
		out->events[pd] = lists[pd].ev;
		out->n_events[pd] = lists[pd].n;
		lists[pd].ev = NULL;
	}
	return 0;
}

/* ----------------------------------------------------------------------
 * The replay as a job in slices (replay.h); ReplayRun runs it to the end.
 * ----------------------------------------------------------------------
 */

/* Where a job is. */
typedef enum JobStage
{
	JOB_DRAW,					/* permute; fit the prior and cost model */
	JOB_MIX,					/* the history mixture's fit, in pieces */
	JOB_WORLD,					/* the tenants become tasks */
	JOB_POLICY,					/* the next policy of the draw */
	JOB_AUTO,					/* "auto" chooses, in pieces */
	JOB_START,					/* the policy's simulation begins */
	JOB_LEARN,					/* mrg=2's model, in pieces */
	JOB_SIM,					/* one simulated event per piece */
	JOB_DONE
} JobStage;

/* Units of one piece of a sliced fit or of a nested auto choice. */
#define PIECE_WORK 1e5

struct ReplayJob
{
	ReplayConfig cfg;
	ReplayPolicy *pols;
	DrawCtx		c;
	EventList  *lists;
	int		   *perm;
	int		   *rows;
	double	   *tmp;
	ReplayOutput out;
	int			have_out;
	JobStage	stage;
	int			d;				/* draw under way */
	int			p;				/* its policy under way */
	PolicyParams run;			/* what policy p runs */
	SimState	sim;
	double		horizon;		/* the draw's last completion so far */
	MixFitJob	mix;
	int			mix_on;
	MixLearnJob learn;
	int			learn_on;
	ReplayAutoJob autojob;
	int			auto_on;
	double		work;			/* units spent */
	double		world_seen;		/* c.world.work already counted */
};

/* Whether policy params rank tasks by mrg=2's model and it must be fitted. */
static int
NeedLearnFit(const DecisionWorld *w, const PolicyParams *params)
{
	const MixLearn *ml = w->mix_learn[DECISION_CLASSIFICATION];

	return w->mix[DECISION_CLASSIFICATION] != NULL &&
		PolicyUsesMixture(params) && PolicyMixScore(params) &&
		params->mix_score == 2 &&
		(ml == NULL || !MixLearnSameFit(&ml->params, params));
}

/*
 * "auto" in a replay: the chooser on the draw's prior rows (the tenant rows
 * are never read), as the live worker's on its history: the first
 * REPLAY_AUTO_MAX_ROWS of them, their runtimes with the overhead (what a
 * live measurement holds).
 */
static int
AutoBeginOnPrior(ReplayJob *job, char *err, size_t errlen)
{
	const ReplayConfig *cfg = &job->cfg;
	const DrawCtx *c = &job->c;
	const int	K = c->K;
	int			m = c->n_prior < REPLAY_AUTO_MAX_ROWS ? c->n_prior : REPLAY_AUTO_MAX_ROWS;
	double	   *q = malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K);
	double	   *cost = cfg->cost ? malloc(sizeof(double) * (size_t) (m > 0 ? m : 1) * K) : NULL;
	double	   *sizes = cfg->cost && cfg->sizes ? malloc(sizeof(double) * (m > 0 ? m : 1) * 2) : NULL;
	ReplayAutoInput ain;
	int			rc;

	if (q == NULL || (cfg->cost && cost == NULL) || (cfg->cost && cfg->sizes && sizes == NULL))
	{
		free(q);
		free(cost);
		free(sizes);
		SetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	for (int i = 0; i < m; i++)
	{
		int			row = c->prior_row[i];

		memcpy(q + (size_t) i * K, cfg->quality + (size_t) row * K, sizeof(double) * K);
		for (int k = 0; cost && k < K; k++)
			cost[(size_t) i * K + k] = TrueCost(cfg, row, k);
		if (sizes)
		{
			sizes[2 * i] = cfg->sizes[2 * row];
			sizes[2 * i + 1] = cfg->sizes[2 * row + 1];
		}
	}
	memset(&ain, 0, sizeof(ain));
	ain.quality = q;
	ain.cost = cost;
	ain.sizes = sizes;
	ain.n_rows = m;
	ain.K = K;
	ain.devices = cfg->devices;
	ain.candidates = cfg->auto_candidates;
	ain.draws = cfg->auto_draws;
	rc = ReplayAutoBegin(&ain, &job->autojob, err, errlen);
	free(q);
	free(cost);
	free(sizes);
	if (rc == 0)
		job->auto_on = 1;
	return rc;
}

/* The policy under way has finished its draw. */
static void
PolicyDone(ReplayJob *job)
{
	DrawCtx    *c = &job->c;
	size_t		pd = (size_t) job->p * job->cfg.draws + job->d;
	EventList  *l = &job->lists[pd];

	job->out.decisions[pd] = (int) c->world.decision_no;
	job->out.gp_jitter += c->world.gp_jitter;
	job->out.gp_failed += c->world.gp_failed;
	c->world.gp_jitter = c->world.gp_failed = 0;
	job->out.final_time[pd] = l->ev[l->n - 1].time;
	job->out.final_loss[pd] = l->ev[l->n - 1].loss;
	if (job->out.final_time[pd] > job->horizon)
		job->horizon = job->out.final_time[pd];
}

/* One piece of work; updates job->stage and job->work. */
static int
JobPiece(ReplayJob *job, char *err, size_t errlen)
{
	const ReplayConfig *cfg = &job->cfg;
	DrawCtx    *c = &job->c;
	const int	P = cfg->n_policies,
				D = cfg->draws,
				NK = cfg->n_thresholds;
	size_t		pd = (size_t) job->p * D + job->d;
	int			rc;

	switch (job->stage)
	{
		case JOB_DRAW:
			rc = DrawSetup(c, job->d, job->perm, &job->mix, &job->mix_on, err, errlen);
			if (rc < 0)
				return rc;
			job->work += FitWork(c->n_prior, c->K) * (c->use_cost_model ? 2 : 1) +
				(double) c->n_prior * c->K;
			if (job->d == 0)
			{
				job->out.prior_noise_var = c->prior.noise_var;
				job->out.prior_shrinkage = c->prior.shrinkage;
				job->out.prior_lengthscale = c->prior.lengthscale;
				job->out.prior_signal_var = c->prior.signal_var;
			}
			job->stage = job->mix_on ? JOB_MIX : JOB_WORLD;
			return REPLAY_OK;

		case JOB_MIX:
			{
				double		before = job->mix.spent;

				/* its cells cost about 8 of ours (exp, log) */
				if (MixFitStep(&job->mix, PIECE_WORK / 8))
				{
					job->work += 8 * (job->mix.spent - before);
					MixFitTake(&job->mix, &c->mix);
					job->mix_on = 0;
					job->stage = JOB_WORLD;
				}
				else
					job->work += 8 * (job->mix.spent - before);
				return REPLAY_OK;
			}

		case JOB_WORLD:
			if ((rc = BuildWorld(c, err, errlen)) < 0)
				return rc;
			job->work += 50.0 * c->n * c->K;
			if (job->d == 0)
			{
				job->out.mix_bw = c->mix.bw;
				job->out.mix_bw_shift = c->mix.bw_shift;
			}
			job->world_seen = c->world.work;
			job->horizon = 0.0;
			job->p = 0;
			job->stage = JOB_POLICY;
			return REPLAY_OK;

		case JOB_POLICY:
			if (job->p == P)
			{
				/* the draw is over: areas up to its last completion */
				for (int p = 0; p < P; p++)
				{
					size_t		i = (size_t) p * D + job->d;

					job->out.auc[i] = StepArea(job->lists[i].ev, job->lists[i].n,
											   job->horizon);
				}
				DrawFree(c);
				job->stage = ++job->d < D ? JOB_DRAW : JOB_DONE;
				return REPLAY_OK;
			}
			if (cfg->cancel && cfg->cancel(cfg->cancel_arg))
			{
				SetErr(err, errlen, "replay cancelled");
				return REPLAY_CANCELLED;
			}
			job->run = job->pols[job->p].params;
			job->out.auto_choice[pd] = -2;
			if (job->pols[job->p].auto_select)
			{
				if ((rc = AutoBeginOnPrior(job, err, errlen)) < 0)
					return rc;
				job->stage = JOB_AUTO;
			}
			else
				job->stage = JOB_START;
			return REPLAY_OK;

		case JOB_AUTO:
			{
				double		before = ReplayAutoWork(&job->autojob);
				char		name[REPLAY_NAME_LEN];

				if (cfg->cancel && cfg->cancel(cfg->cancel_arg))
				{
					SetErr(err, errlen, "replay cancelled");
					return REPLAY_CANCELLED;
				}
				rc = ReplayAutoStep(&job->autojob, PIECE_WORK * 100, err, errlen);
				job->work += ReplayAutoWork(&job->autojob) - before;
				if (rc < 0)
					return rc;
				if (rc == 0)
					return REPLAY_OK;
				job->out.auto_choice[pd] = job->autojob.choice;
				ReplayAutoFree(&job->autojob);
				job->auto_on = 0;
				if (ReplayAutoSpec(cfg->auto_candidates, job->out.auto_choice[pd],
								   name, sizeof(name)) == NULL ||
					PolicyParseSpec(name, &job->run, err, errlen) != POLICY_OK)
					return REPLAY_BAD_INPUT;
				job->stage = JOB_START;
				return REPLAY_OK;
			}

		case JOB_START:
			c->cur_policy = job->p;
			c->cur_draw = job->d;
			rc = SimBegin(c, &job->run, cfg->seed ^ (0xD1B54A32D192ED03ULL * (pd + 1)),
						  &job->sim, &job->lists[pd], job->out.time_to + pd * NK,
						  job->out.worst_regret + pd * NK);
			if (rc < 0)
			{
				SetErr(err, errlen, "out of memory");
				return rc;
			}
			job->stage = JOB_SIM;
			if (NeedLearnFit(&c->world, &job->run))
			{
				double	   *typ = malloc(sizeof(double) * c->K);

				/* as a replay's decision path would on first use (decision.c) */
				if (typ == NULL)
				{
					SetErr(err, errlen, "out of memory");
					return REPLAY_NO_MEMORY;
				}
				DecisionTypicalCost(&c->world, DECISION_CLASSIFICATION, typ);
				rc = MixLearnBegin(&job->learn, c->world.mix[DECISION_CLASSIFICATION],
								   &job->run, job->run.cost_aware ? typ : NULL);
				free(typ);
				if (rc == POLICY_BAD_INPUT)
				{
					/* too few rows: a model that is not ok, mrg=1's score */
					MixLearn	none;

					memset(&none, 0, sizeof(none));
					none.params = job->run;
					rc = DecisionSetMixLearn(&c->world, DECISION_CLASSIFICATION, &none);
				}
				else if (rc == POLICY_OK)
				{
					job->learn_on = 1;
					job->stage = JOB_LEARN;
				}
				if (rc == POLICY_NO_MEMORY)
				{
					SetErr(err, errlen, "out of memory");
					return REPLAY_NO_MEMORY;
				}
			}
			job->work += c->world.work - job->world_seen;
			job->world_seen = c->world.work;
			return REPLAY_OK;

		case JOB_LEARN:
			{
				double		before = job->learn.spent;
				MixLearn	ml;

				rc = MixLearnStep(&job->learn, PIECE_WORK * 10);
				job->work += job->learn.spent - before;
				if (!rc)
					return REPLAY_OK;
				rc = MixLearnTake(&job->learn, &ml);
				job->learn_on = 0;
				if (rc == POLICY_NO_MEMORY ||
					DecisionSetMixLearn(&c->world, DECISION_CLASSIFICATION, &ml) < 0)
				{
					SetErr(err, errlen, "out of memory");
					return REPLAY_NO_MEMORY;
				}
				job->stage = JOB_SIM;
				return REPLAY_OK;
			}

		case JOB_SIM:
			rc = SimAdvance(c, &job->sim, err, errlen);
			job->work += c->world.work - job->world_seen;
			job->world_seen = c->world.work;
			if (rc < 0)
				return rc;
			if (rc == 1)
			{
				PolicyDone(job);
				job->p++;
				job->stage = JOB_POLICY;
			}
			return REPLAY_OK;

		case JOB_DONE:
			return REPLAY_OK;
	}
	return REPLAY_OK;
}

int
ReplayJobBegin(const ReplayConfig *cfg, ReplayJob **jobp, char *err,
			   size_t errlen)
{
	ReplayJob  *job;
	DrawCtx    *c;
	int			P,
				D,
				NK;

	*jobp = NULL;
	if (cfg == NULL)
	{
		SetErr(err, errlen, "no config or output");
		return REPLAY_BAD_INPUT;
	}
	if (!CheckConfig(cfg, err, errlen))
		return REPLAY_BAD_INPUT;
	job = calloc(1, sizeof(ReplayJob));
	if (job == NULL)
	{
		SetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	*jobp = job;
	job->cfg = *cfg;
	c = &job->c;
	P = cfg->n_policies;
	D = cfg->draws;
	NK = cfg->n_thresholds;
	job->pols = calloc(P, sizeof(ReplayPolicy));
	if (job->pols == NULL)
		goto nomem;
	for (int p = 0; p < P; p++)
	{
		int			rc = ReplayParsePolicy(cfg->policies[p], &job->pols[p], err, errlen);

		if (rc < 0)
		{
			ReplayJobFree(job);
			*jobp = NULL;
			return rc;
		}
	}
	job->lists = calloc((size_t) P * D, sizeof(EventList));
	job->perm = malloc(sizeof(int) * cfg->n_rows);
	job->rows = malloc(sizeof(int) * cfg->n_rows);
	job->tmp = malloc(sizeof(double) * (D > NK ? D : NK + 1));
	job->have_out = 1;
	if (OutputAlloc(&job->out, P, D, NK, cfg->grid_points > 0 ? cfg->grid_points : 200) != 0 ||
		job->lists == NULL || job->perm == NULL || job->rows == NULL || job->tmp == NULL)
		goto nomem;
	for (int p = 0; p < P; p++)
		snprintf(job->out.names[p], REPLAY_NAME_LEN, "%s", job->pols[p].name);
	for (int k = 0; k < NK; k++)
		job->out.thresholds[k] = cfg->thresholds[k];

	c->cfg = &job->cfg;
	c->use_mix = UsesMixture(cfg, job->pols, P);
	c->K = cfg->K;
	c->n = cfg->n_tenants;
	c->M = cfg->devices;
	c->rows = job->rows;
	c->n_rows = DistinctRows(cfg, job->rows);
	job->work += (double) cfg->n_rows * cfg->K;
	job->out.rows_used = c->n_rows;
	job->out.rows_removed = cfg->n_rows - c->n_rows;
	if (c->n > c->n_rows)
	{
		SetErr(err, errlen, "%d tenants need as many distinct rows; the matrix has %d (%d repeated rows left out)",
			   c->n, c->n_rows, cfg->n_rows - c->n_rows);
		ReplayJobFree(job);
		*jobp = NULL;
		return REPLAY_BAD_INPUT;
	}
	c->dev_busy = calloc(c->M, sizeof(int));
	c->dev_end = calloc(c->M, sizeof(double));
	c->dev_task = calloc(c->M, sizeof(int));
	c->dev_arm = calloc(c->M, sizeof(int));
	if (c->dev_busy == NULL || c->dev_end == NULL || c->dev_task == NULL ||
		c->dev_arm == NULL)
		goto nomem;
	job->stage = JOB_DRAW;
	return REPLAY_OK;

nomem:
	ReplayJobFree(job);
	*jobp = NULL;
	SetErr(err, errlen, "out of memory");
	return REPLAY_NO_MEMORY;
}

int
ReplayJobStep(ReplayJob *job, double work, double limit, char *err,
			  size_t errlen)
{
	double		start = job->work;

	while (job->stage != JOB_DONE)
	{
		int			rc = JobPiece(job, err, errlen);

		if (rc < 0)
			return rc;
		if (job->stage == JOB_DONE)
			break;
		if (job->work > limit)
		{
			SetErr(err, errlen, "the replay passed its limit of %.3g work units", limit);
			return REPLAY_WORK_LIMIT;
		}
		if (job->work - start >= work)
			return 0;
	}
	return 1;
}

double
ReplayJobWork(const ReplayJob *job)
{
	return job ? job->work : 0.0;
}

int
ReplayJobTake(ReplayJob *job, ReplayOutput *out, char *err, size_t errlen)
{
	const int	P = job->cfg.n_policies,
				D = job->cfg.draws,
				NK = job->cfg.n_thresholds;
	const DrawCtx *c = &job->c;

	memset(out, 0, sizeof(*out));
	if (job->stage != JOB_DONE || !job->have_out)
	{
		SetErr(err, errlen, "the replay has not finished");
		return REPLAY_BAD_INPUT;
	}
	job->out.cost_log_rmse = c->cost_n > 0 ? sqrt(c->cost_sq_err / c->cost_n) : 0.0;
	/* medians of the time to each threshold */
	for (int p = 0; p < P; p++)
		for (int k = 0; k < NK; k++)
		{
			for (int d = 0; d < D; d++)
				job->tmp[d] = job->out.time_to[((size_t) p * D + d) * NK + k];
			job->out.median_time[p * NK + k] = Median(job->tmp, D);
		}
	if (OutputCurves(&job->out, job->lists) != 0 ||
		(job->cfg.keep_events && OutputKeepEvents(&job->out, job->lists) != 0))
	{
		SetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	job->out.work = job->work;
	*out = job->out;
	memset(&job->out, 0, sizeof(job->out));
	job->have_out = 0;
	return REPLAY_OK;
}

void
ReplayJobFree(ReplayJob *job)
{
	DrawCtx    *c;

	if (job == NULL)
		return;
	c = &job->c;
	DrawFree(c);
	free(c->dev_busy);
	free(c->dev_end);
	free(c->dev_task);
	free(c->dev_arm);
	if (job->lists)
		for (int pd = 0; pd < job->cfg.n_policies * job->cfg.draws; pd++)
			free(job->lists[pd].ev);
	free(job->lists);
	free(job->perm);
	free(job->rows);
	free(job->tmp);
	free(job->pols);
	if (job->mix_on)
		MixFitFree(&job->mix);
	if (job->learn_on)
		MixLearnFree(&job->learn);
	if (job->auto_on)
		ReplayAutoFree(&job->autojob);
	if (job->have_out)
		ReplayOutputFree(&job->out);
	free(job);
}

/* The rows draw 'draw' uses, tenants first; see replay.h. */
int
ReplayDrawRows(const ReplayConfig *cfg, int draw, int *rows, int *n_rows)
{
	DrawCtx		c;
	int		   *distinct = malloc(sizeof(int) * (cfg->n_rows > 0 ? cfg->n_rows : 1));

	*n_rows = 0;
	if (distinct == NULL)
		return REPLAY_NO_MEMORY;
	memset(&c, 0, sizeof(c));
	c.cfg = cfg;
	c.rows = distinct;
	c.n_rows = DistinctRows(cfg, distinct);
	Permute(&c, draw, rows);
	*n_rows = c.n_rows;
	free(distinct);
	return REPLAY_OK;
}

/* Run every policy on every draw; see replay.h. */
int
ReplayRun(const ReplayConfig *cfg, ReplayOutput *out, char *err, size_t errlen)
{
	ReplayJob  *job;
	int			rc;

	if (out == NULL)
	{
		SetErr(err, errlen, "no config or output");
		return REPLAY_BAD_INPUT;
	}
	memset(out, 0, sizeof(*out));
	rc = ReplayJobBegin(cfg, &job, err, errlen);
	while (rc == 0)
		rc = ReplayJobStep(job, INFINITY, INFINITY, err, errlen);
	if (rc == 1)
		rc = ReplayJobTake(job, out, err, errlen);
	ReplayJobFree(job);
	return rc;
}

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
		SetErr(err, errlen, "auto draws %d: 0 (the default) to %d",
			   ain->draws, REPLAY_AUTO_DRAWS_MAX);
		return REPLAY_BAD_INPUT;
	}
	job->draws = ain->draws > 0 ? ain->draws : REPLAY_AUTO_DRAWS;
	job->work_max = ain->work_max > 0 ? ain->work_max : REPLAY_AUTO_WORK_MAX;
	snprintf(job->list, sizeof(job->list), "%s",
			 ain->candidates ? ain->candidates : POLICY_AUTO_CANDIDATES);
	for (char *save = NULL, *tok = strtok_r(job->list, ",", &save);
		 tok && job->n_cand < REPLAY_AUTO_MAX; tok = strtok_r(NULL, ",", &save))
		job->cands[job->n_cand++] = tok;
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
		SetErr(err, errlen, "out of memory");
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
		SetErr(err, errlen, "auto candidates \"%.40s\": 1 to %d specs, comma-separated, at most %d characters",
			   list, REPLAY_AUTO_MAX, REPLAY_NAME_LEN * 2 - 1);
		return REPLAY_BAD_INPUT;
	}
	while (ReplayAutoCandidateOf(list, n, name, sizeof(name)) != NULL)
	{
		if (PolicyParseSpec(name, &pp, err, errlen) != POLICY_OK)
			return REPLAY_BAD_INPUT;
		if (pp.auto_select || ++n > REPLAY_AUTO_MAX)
		{
			SetErr(err, errlen, "auto candidates: \"%.40s\" is auto itself or one too many", name);
			return REPLAY_BAD_INPUT;
		}
	}
	return REPLAY_OK;
}

/* Median and maximum per-draw speedup; see replay.h. */
int
ReplaySpeedup(const ReplayOutput *out, int base, int pol, int k,
			  double *median, double *max)
{
	double	   *r;
	double		mx = 0.0;
	int			d;

	if (out == NULL || base < 0 || base >= out->n_policies || pol < 0 ||
		pol >= out->n_policies || k < 0 || k >= out->n_thresholds)
		return REPLAY_BAD_INPUT;
	r = malloc(sizeof(double) * out->draws);
	if (r == NULL)
		return REPLAY_NO_MEMORY;
	for (d = 0; d < out->draws; d++)
	{
		double		tb = out->time_to[((size_t) base * out->draws + d) * out->n_thresholds + k];
		double		tp = out->time_to[((size_t) pol * out->draws + d) * out->n_thresholds + k];

		if (isinf(tp))
			r[d] = 0.0;
		else if (isinf(tb))
			r[d] = INFINITY;
		else if (tp <= 0.0)
			r[d] = tb <= 0.0 ? 1.0 : INFINITY;
		else
			r[d] = tb / tp;
		if (r[d] > mx)
			mx = r[d];
	}
	if (median)
		*median = Median(r, out->draws);
	if (max)
		*max = mx;
	free(r);
	return REPLAY_OK;
}
