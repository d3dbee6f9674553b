/*-------------------------------------------------------------------------
 *
 * tr_copy.h
 *	  Binary COPY loader of the trainer's live mode (src/trainer/io/tr_copy.c).
 *
 * IDENTIFICATION
 *	  src/trainer/io/tr_copy.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_COPY_H
#define EASEML_TR_COPY_H

#include <libpq-fe.h>

#include "trainer/trainer.h"

/* TrCopyLoad's result when the rows went past max_rows */
#define TR_COPY_OVER_LIMIT	(-3)

extern int	TrCopyLoad(PGconn *conn, const char *query, int d, int kind,
					   const int *kinds, long max_rows,
					   volatile sig_atomic_t *cancel, TrTable *out, long *bytes,
					   char *sqlstate, char *err, size_t errlen);

extern const char *TrServerMessage(const PGresult *res, PGconn *conn);

#endif							/* EASEML_TR_COPY_H */
