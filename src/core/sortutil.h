/*-------------------------------------------------------------------------
 *
 * sortutil.h
 *	  qsort comparators shared by the server, the simulator and the trainer
 *	  (plain C, no PostgreSQL).
 *
 * IDENTIFICATION
 *	  src/core/sortutil.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_SORTUTIL_H
#define EASEML_SORTUTIL_H

/* ascending doubles; NaNs compare equal to everything (callers drop them) */
static inline int
CmpDouble(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

#endif							/* EASEML_SORTUTIL_H */
