/*-------------------------------------------------------------------------
 *
 * catalog_plans.c
 *	  Saved plans of the statements of the scheduler's catalog code.
 *
 * src/catalog.c and src/catalog_runs.c run the same few dozen statements
 * on every scheduling step; parsing and planning each of them anew was
 * about 14% of the worker's CPU.  Each statement is prepared once per
 * process (SPI_prepare, SPI_keepplan) and then executed from its saved
 * plan.  PostgreSQL's plan cache re-plans a saved statement when a table
 * or function it uses changes (an upgrade, DROP and CREATE EXTENSION) or
 * the search_path or role does, and chooses between custom and generic
 * plans as for any prepared statement, so results are those of a fresh
 * plan.
 *
 * The statements are string literals: the text's address finds the entry
 * and its copy confirms it.  Past MAX_PLANS statements the rest run
 * unprepared.
 *
 * IDENTIFICATION
 *	  src/catalog_plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog_spi.h"
#include "executor/spi.h"
#include "utils/memutils.h"

#define MAX_PLANS 64

typedef struct SavedPlan
{
	const char *key;			/* the caller's text (its address) */
	char	   *sql;			/* copy, in TopMemoryContext */
	int			nargs;
	Oid		   *types;			/* nargs, in TopMemoryContext */
	SPIPlanPtr	plan;			/* kept (SPI_keepplan) */
} SavedPlan;

static SavedPlan plans[MAX_PLANS];
static int	n_plans = 0;

/* Does entry p hold this statement with these parameter types? */
static bool
Matches(const SavedPlan *p, const char *sql, int nargs, const Oid *types)
{
	return p->nargs == nargs && strcmp(p->sql, sql) == 0 &&
		(nargs == 0 || memcmp(p->types, types, sizeof(Oid) * nargs) == 0);
}

/* Prepare and keep sql in entry p (a new one, or one being replaced). */
static void
SavePlan(SavedPlan *p, const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	if (plan == NULL)
		elog(ERROR, "easeml: SPI_prepare returned %s for \"%.60s...\"",
			 SPI_result_code_string(SPI_result), sql);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "easeml: SPI_keepplan failed for \"%.60s...\"", sql);
	if (p->plan != NULL)
	{
		SPI_freeplan(p->plan);
		pfree(p->sql);
		if (p->types)
			pfree(p->types);
	}
	p->key = sql;
	p->sql = MemoryContextStrdup(TopMemoryContext, sql);
	p->nargs = nargs;
	p->types = nargs > 0 ?
		MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * nargs) : NULL;
	if (nargs > 0)
		memcpy(p->types, types, sizeof(Oid) * nargs);
	p->plan = plan;
}

/*
 * Run one statement from its saved plan (prepared on first use); returns
 * what SPI_execute_plan returns.  Inside an SPI connection.
 */
int
CatalogExecSaved(const char *sql, int nargs, Oid *types, Datum *values,
				 const char *nulls)
{
	SavedPlan  *p = NULL;

	for (int i = 0; i < n_plans; i++)
		if (plans[i].key == sql)
		{
			p = &plans[i];
			break;
		}
	if (p == NULL && n_plans < MAX_PLANS)
	{
		p = &plans[n_plans];
		SavePlan(p, sql, nargs, types);
		n_plans++;				/* only once it is complete */
	}
	else if (p == NULL)
		return SPI_execute_with_args(sql, nargs, types, values, nulls,
									 false, 0);
	else if (!Matches(p, sql, nargs, types))
		SavePlan(p, sql, nargs, types);
	return SPI_execute_plan(p->plan, values, nulls, false, 0);
}
