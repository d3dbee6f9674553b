/*-------------------------------------------------------------------------
 *
 * sql_spaces.c
 *	  The hyperparameter spaces' arithmetic for SQL (src/core/hpspace.c):
 *	  easeml._space_scale(types, lo, hi, x) and easeml._space_propose(types,
 *	  lo, hi, x, seed, n, step).  easeml._propose_candidates reads a
 *	  family's space (easeml.model_spaces) and a parent's values and builds
 *	  the new configurations (easeml._add_generated makes one a model row);
 *	  the numbers come from here, so that the scheduler's kernel and the
 *	  proposals share one definition of the scaled space.
 *
 * IDENTIFICATION
 *	  src/sql/sql_spaces.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "core/hpspace.h"

PG_FUNCTION_INFO_V1(easeml_space_scale);
PG_FUNCTION_INFO_V1(easeml_space_propose);

/* A float8[] argument without NULLs, as a palloc'd C array. */
static double *
Float8Array(ArrayType *a, int *n, const char *what)
{
	Datum	   *elems;
	bool	   *nulls;
	double	   *out;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what),
				 errhint("Pass one value per dimension, as ARRAY[...]::float8[].")));
	deconstruct_array(a, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, n);
	out = palloc(sizeof(double) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULL", what),
					 errhint("Give every dimension a value.")));
		out[i] = DatumGetFloat8(elems[i]);
	}
	return out;
}

/* The d dimensions named by types, lo, hi (equal lengths, checked). */
static HpDim *
Dims(FunctionCallInfo fcinfo, int *d)
{
	ArrayType  *types;
	Datum	   *elems;
	bool	   *nulls;
	double	   *lo,
			   *hi;
	int			n,
				nlo,
				nhi;
	HpDim	   *dims;

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("types, lo, hi and x must not be NULL"),
					 errhint("Pass an array for each, one element per dimension.")));
	types = PG_GETARG_ARRAYTYPE_P(0);
	deconstruct_array(types, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	lo = Float8Array(PG_GETARG_ARRAYTYPE_P(1), &nlo, "lo");
	hi = Float8Array(PG_GETARG_ARRAYTYPE_P(2), &nhi, "hi");
	if (n < 1 || nlo != n || nhi != n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("types, lo and hi must have the same length of at least 1 (%d, %d, %d)",
						n, nlo, nhi),
				 errhint("Give each dimension a type, a lo and a hi.")));
	dims = palloc(sizeof(HpDim) * n);
	for (int i = 0; i < n; i++)
	{
		int			t = nulls[i] ? -1 : HpTypeOf(TextDatumGetCString(elems[i]));

		if (t < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown hyperparameter type at position %d", i + 1),
					 errhint("The types are int, log-int, float, log-float and categorical.")));
		dims[i].type = (HpType) t;
		dims[i].lo = lo[i];
		dims[i].hi = hi[i];
		if (HpDimCheck(&dims[i]) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("hyperparameter range %d is invalid: [%g, %g]", i + 1, lo[i], hi[i]),
					 errhint("lo < hi, both finite, lo > 0 on a log scale; a categorical one from 0 to an integer hi of at most %d.",
							 HP_MAX_CATEGORICAL_HI)));
	}
	*d = n;
	return dims;
}

static Datum
Float8ArrayDatum(const double *v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, FLOAT8OID, 8, FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * easeml._space_scale(types text[], lo float8[], hi float8[], x float8[])
 * returns float8[]: each raw value's position in [0, 1].
 */
Datum
easeml_space_scale(PG_FUNCTION_ARGS)
{
	int			d,
				nx;
	HpDim	   *dims = Dims(fcinfo, &d);
	double	   *x = Float8Array(PG_GETARG_ARRAYTYPE_P(3), &nx, "x");

	if (nx != d)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("x has %d values for %d dimensions", nx, d),
				 errhint("Pass one value of x per dimension of types.")));
	for (int i = 0; i < d; i++)
		x[i] = HpScale(&dims[i], x[i]);
	PG_RETURN_DATUM(Float8ArrayDatum(x, d));
}

/*
 * easeml._space_propose(types text[], lo float8[], hi float8[], x float8[],
 * seed bigint, n int, step float8) returns float8[]: n proposals around x,
 * n x d raw values in one array (HpPropose).
 */
Datum
easeml_space_propose(PG_FUNCTION_ARGS)
{
	int			d,
				nx,
				n;
	HpDim	   *dims = Dims(fcinfo, &d);
	double	   *x = Float8Array(PG_GETARG_ARRAYTYPE_P(3), &nx, "x");
	double	   *out;
	double		step;

	if (PG_ARGISNULL(4) || PG_ARGISNULL(5) || PG_ARGISNULL(6))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("seed, n and step must not be NULL"),
				 errhint("Pass a seed, how many proposals (1 to 1000) and a step in (0, 1].")));
	n = PG_GETARG_INT32(5);
	step = PG_GETARG_FLOAT8(6);
	if (nx != d || n < 1 || n > 1000 || !(step > 0 && step <= 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("x must have one value per dimension (%d of %d), n be in [1, 1000] (%d) and step in (0, 1] (%g)",
						nx, d, n, step),
				 errhint("Fix the argument out of its range.")));
	out = palloc(sizeof(double) * d * n);
	if (HpPropose(dims, d, x, (uint64) PG_GETARG_INT64(4), n, step, out) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("x holds a value that is not finite"),
				 errhint("Give every dimension a finite value (not NaN or Infinity).")));
	PG_RETURN_DATUM(Float8ArrayDatum(out, d * n));
}
