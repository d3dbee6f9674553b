/*-------------------------------------------------------------------------
 *
 * catalog_spi.h
 *	  The SPI helpers of the scheduler's catalog code (src/worker/catalog*.c):
 *	  one statement with $n parameters, typed column reads of the current
 *	  SPI result, and copies into the memory context of CatalogBegin's
 *	  caller.  Private to those files.
 *
 * IDENTIFICATION
 *	  src/worker/catalog_spi.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_CATALOG_SPI_H
#define EASEML_CATALOG_SPI_H

#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/memutils.h"

/* the memory context of CatalogBegin's caller (src/worker/catalog.c) */
extern MemoryContext CatalogCallerContext;

/* Run one statement with parameters; elog(ERROR) unless it returns expect. */
static inline void
Exec(const char *sql, int expect, int nargs, Oid *types, Datum *values,
	 const char *nulls)
{
	int			rc;

	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	if (rc != expect)
		elog(ERROR, "easeml: SPI_execute_with_args returned %s for \"%.60s...\"",
			 SPI_result_code_string(rc), sql);
}

/* An int8[] parameter value holding v[0 .. n). */
static inline Datum
Int8ArrayDatum(const int64 *v, int n)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(n, 1));
	ArrayType  *arr;

	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum(v[i]);
	arr = construct_array_builtin(elems, n, INT8OID);
	pfree(elems);
	return PointerGetDatum(arr);
}

/* Column value helpers for the current SPI result. */
static inline bool
GetNull(int row, int col)
{
	bool		isnull;

	(void) SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
	return isnull;
}

static inline Datum
Get(int row, int col)
{
	bool		isnull;

	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
}

static inline int64
GetInt64(int row, int col, int64 dflt)
{
	return GetNull(row, col) ? dflt : DatumGetInt64(Get(row, col));
}

static inline int32
GetInt32(int row, int col, int32 dflt)
{
	return GetNull(row, col) ? dflt : DatumGetInt32(Get(row, col));
}

static inline double
GetFloat8(int row, int col, double dflt)
{
	return GetNull(row, col) ? dflt : DatumGetFloat8(Get(row, col));
}

static inline bool
GetBool(int row, int col)
{
	return GetNull(row, col) ? false : DatumGetBool(Get(row, col));
}

/* Text column copied into the caller's context, or NULL. */
static inline char *
GetText(int row, int col)
{
	char	   *s;
	char	   *copy;

	if (GetNull(row, col))
		return NULL;
	s = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
	copy = MemoryContextStrdup(CatalogCallerContext, s);
	pfree(s);
	return copy;
}


/* palloc in the caller's context: the state outlives the transaction. */
static inline void *
CallerAlloc(Size size, bool zero)
{
	return zero ? MemoryContextAllocZero(CatalogCallerContext, size) :
		MemoryContextAlloc(CatalogCallerContext, size);
}

#endif							/* EASEML_CATALOG_SPI_H */
