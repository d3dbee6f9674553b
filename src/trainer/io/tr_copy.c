/*-------------------------------------------------------------------------
 *
 * tr_copy.c
 *	  Read a task's rows from PostgreSQL with binary COPY into a TrTable.
 *
 * The COPY query comes from easeml_trainer.spec(): every feature column is
 * cast to float8 by the server (dates and timestamps as seconds since the
 * epoch), except categorical ones, which come as text, and the target
 * comes last (text for classification, float8 for regression).  The binary format is parsed as
 * a byte stream, so it does not matter how libpq chunks it into messages:
 *
 *	 header:  "PGCOPY\n\377\r\n\0", int32 flags, int32 extension length, ext
 *	 tuple:   int16 field count, then per field int32 length (-1 = NULL)
 *			  and that many bytes; a field count of -1 ends the data
 *
 * All integers are big-endian.  A NULL feature becomes NaN (imputed or
 * rejected later by TrPrepare), a NULL target leaves the label NULL.  A
 * text feature becomes the code of its value (tr_column.c).
 *
 * Each tuple is decoded into one row of doubles and appended at once to
 * the table's compact rows (tr_rows.c, four bytes a cell), so the loader
 * holds no more than libpq's current message, an incomplete tuple and the
 * rows in their final form.
 *
 * The tenant's max_rows is enforced here, as the rows arrive: the rows
 * with a target are counted, and the one past the limit stops the load
 * (the query is cancelled, the run fails with the reason).  The COPY query
 * already asks for at most max_rows + 1 of them; the count does not rely
 * on it.  The declaration's count cannot be trusted for this: a live
 * source may show the tenant fewer rows than it gives the trainer.
 *
 * IDENTIFICATION
 *	  src/trainer/io/tr_copy.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "trainer/trainer.h"
#include "tr_copy.h"

static const char copy_signature[11] = "PGCOPY\n\377\r\n\0";

static inline uint32_t
ReadU32(const unsigned char *p)
{
	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

static inline int16_t
ReadI16(const unsigned char *p)
{
	return (int16_t) (((uint16_t) p[0] << 8) | (uint16_t) p[1]);
}

static inline double
ReadF64(const unsigned char *p)
{
	uint64_t	u;
	double		v;

	memcpy(&u, p, 8);
	u = __builtin_bswap64(u);
	memcpy(&v, &u, 8);
	return v;
}

/* Parser state across libpq messages. */
typedef struct CopyParser
{
	TrTable    *tab;
	int			kind;
	int			d;
	long		cap;			/* rows of labels or targets allocated */
	double	   *row;			/* d: the tuple being decoded */
	int			header_done;
	int			finished;		/* saw the -1 trailer */
	unsigned char *carry;		/* bytes of an incomplete tuple */
	size_t		carry_len;
	size_t		carry_cap;
	long		max_rows;		/* rows with a target allowed; 0: no limit */
	long		usable;			/* rows with a target read */
	int			over_limit;		/* the row past max_rows came */
	char	   *err;
	size_t		errlen;
} CopyParser;

static int
Grow(CopyParser *p)
{
	TrTable    *tab = p->tab;
	long		cap = p->cap ? p->cap * 2 : 4096;

	if (p->kind == TR_KIND_CLASSIFICATION)
	{
		char	  **labels = realloc(tab->labels, sizeof(char *) * (size_t) cap);

		if (labels == NULL)
			goto oom;
		tab->labels = labels;
	}
	else
	{
		double	   *t = realloc(tab->t, sizeof(double) * (size_t) cap);

		if (t == NULL)
			goto oom;
		tab->t = t;
	}
	p->cap = cap;
	return 0;
oom:
	snprintf(p->err, p->errlen, "out of memory after %d rows", tab->n);
	return -1;
}

/* The binary COPY header: its length once all of it is here, 0 before, -1. */
static long
ParseHeader(CopyParser *p, const unsigned char *buf, size_t len)
{
	uint32_t	ext;

	if (len < 19)
		return 0;
	if (memcmp(buf, copy_signature, sizeof(copy_signature)) != 0)
	{
		snprintf(p->err, p->errlen, "COPY data is not in binary format");
		return -1;
	}
	ext = ReadU32(buf + 15);
	if (len < 19 + (size_t) ext)
		return 0;
	p->header_done = 1;
	return 19 + ext;
}

/* Bytes of the tuple at q (nfields fields) if all of it is in avail, else 0. */
static size_t
TupleBytes(const unsigned char *q, int nfields, size_t avail)
{
	size_t		need = 2;

	for (int f = 0; f < nfields; f++)
	{
		int32_t		flen;

		if (need + 4 > avail)
			return 0;
		flen = (int32_t) ReadU32(q + need);
		need += 4;
		if (flen > 0)
			need += (size_t) flen;
		if (need > avail)
			return 0;
	}
	return need;
}

/* The feature fields at *q into row; *q moves past them. */
static int
DecodeFeatures(CopyParser *p, const unsigned char **q, double *row)
{
	TrTable    *tab = p->tab;

	for (int f = 0; f < p->d; f++)
	{
		int32_t		flen = (int32_t) ReadU32(*q);

		*q += 4;
		if (flen == -1)
			row[f] = NAN;
		else if (tab->col_kind != NULL && tab->col_kind[f] == TR_COL_CATEGORICAL)
		{
			int			code = TrCategoryCode(&tab->cats[f], (const char *) *q, (size_t) flen);

			if (code < 0)
			{
				snprintf(p->err, p->errlen, "out of memory after %d rows", tab->n);
				return -1;
			}
			row[f] = code;
			*q += flen;
		}
		else if (flen == 8)
		{
			row[f] = ReadF64(*q);
			*q += 8;
		}
		else
		{
			snprintf(p->err, p->errlen,
					 "COPY row %d: feature %d has %d bytes, expected float8",
					 tab->n + 1, f + 1, flen);
			return -1;
		}
	}
	return 0;
}

/* The target field at q: the row's label, or its float8 value. */
static int
DecodeTarget(CopyParser *p, const unsigned char *q)
{
	TrTable    *tab = p->tab;
	int32_t		flen = (int32_t) ReadU32(q);

	q += 4;
	if (p->kind == TR_KIND_CLASSIFICATION)
	{
		char	   *s;

		tab->labels[tab->n] = NULL;
		if (flen < 0)
			return 0;
		if ((s = malloc((size_t) flen + 1)) == NULL)
		{
			snprintf(p->err, p->errlen, "out of memory");
			return -1;
		}
		memcpy(s, q, (size_t) flen);
		s[flen] = '\0';
		tab->labels[tab->n] = s;
		return 0;
	}
	if (flen == -1)
		tab->t[tab->n] = NAN;
	else if (flen == 8)
		tab->t[tab->n] = ReadF64(q);
	else
	{
		snprintf(p->err, p->errlen, "COPY row %d: target has %d bytes, expected float8",
				 tab->n + 1, flen);
		return -1;
	}
	return 0;
}

/* Does the row just decoded have a target (a label, a number not NaN)? */
static int
RowHasTarget(const CopyParser *p)
{
	if (p->kind == TR_KIND_CLASSIFICATION)
		return p->tab->labels[p->tab->n] != NULL;
	return !isnan(p->tab->t[p->tab->n]);
}

/*
 * Parse as many complete items (header, tuples) as buf holds.  Returns the
 * number of bytes consumed, or -1 on a format error.
 */
static long
ParseBuffer(CopyParser *p, const unsigned char *buf, size_t len)
{
	size_t		pos = 0;

	if (!p->header_done)
	{
		long		h = ParseHeader(p, buf, len);

		if (h <= 0)
			return h;
		pos = (size_t) h;
	}
	while (pos + 2 <= len && !p->finished)
	{
		const unsigned char *q = buf + pos;
		int			nfields = ReadI16(q);
		size_t		need;
		TrTable    *tab = p->tab;

		if (nfields == -1)
		{
			p->finished = 1;
			pos += 2;
			break;
		}
		if (nfields != p->d + 1)
		{
			snprintf(p->err, p->errlen,
					 "COPY row %d has %d fields, expected %d", tab->n + 1,
					 nfields, p->d + 1);
			return -1;
		}
		/* the whole tuple must be here before it is decoded */
		if ((need = TupleBytes(q, nfields, len - pos)) == 0)
			return (long) pos;
		if (tab->n >= p->cap && Grow(p) != 0)
			return -1;
		q += 2;
		if (DecodeFeatures(p, &q, p->row) != 0 || DecodeTarget(p, q) != 0)
			return -1;
		if (p->max_rows > 0 && RowHasTarget(p) && ++p->usable > p->max_rows)
		{
			if (p->kind == TR_KIND_CLASSIFICATION)
				free(tab->labels[tab->n]);
			p->over_limit = 1;
			snprintf(p->err, p->errlen,
					 "the source holds more than %ld rows with a target, its tenant's max_rows (easeml.set_tenant_limits); reading stopped at row %ld: select fewer rows in a view, or ask an administrator to raise the limit",
					 p->max_rows, p->max_rows + 1);
			return -1;
		}
		if (TrRowsAppend(tab, p->row, p->err, p->errlen) != 0)
			return -1;
		tab->n++;
		pos += need;
	}
	return (long) pos;
}

/* Append bytes to the carry buffer. */
static int
Carry(CopyParser *p, const unsigned char *buf, size_t len)
{
	if (p->carry_len + len > p->carry_cap)
	{
		size_t		cap = (p->carry_len + len) * 2;
		unsigned char *c = realloc(p->carry, cap);

		if (c == NULL)
		{
			snprintf(p->err, p->errlen, "out of memory");
			return -1;
		}
		p->carry = c;
		p->carry_cap = cap;
	}
	memcpy(p->carry + p->carry_len, buf, len);
	p->carry_len += len;
	return 0;
}

/*
 * Wait until the server sends something or the cancel flag is set.  A
 * tenant's view may take any time to produce a row, and a trainer blocked
 * inside libpq would never see SIGTERM (libpq retries poll() on EINTR), so
 * the waiting is done here.  A signal interrupts poll(); the timeout
 * covers one arriving just before it.  Returns 0, or -1 when cancelled or
 * when the connection failed.
 */
static int
WaitForServer(PGconn *conn, volatile sig_atomic_t *cancel)
{
	struct pollfd pfd;

	pfd.fd = PQsocket(conn);
	pfd.events = POLLIN;
	for (;;)
	{
		int			rc;

		if (cancel != NULL && *cancel)
			return -1;
		rc = poll(&pfd, 1, 200);
		if (rc > 0)
			return PQconsumeInput(conn) ? 0 : -1;
		if (rc < 0 && errno != EINTR)
			return -1;
	}
}

/* Stop the server's side of the query (best effort) after a cancel. */
static void
CancelQuery(PGconn *conn)
{
	PGcancel   *c = PQgetCancel(conn);
	char		buf[256];

	if (c != NULL)
	{
		(void) PQcancel(c, buf, sizeof(buf));
		PQfreeCancel(c);
	}
}

/*
 * The text of a server error for a run's error: the primary message alone
 * (libpq's full text adds "ERROR:", CONTEXT lines and newlines), else what
 * libpq says about the connection.
 */
const char *
TrServerMessage(const PGresult *res, PGconn *conn)
{
	const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	return m ? m : PQerrorMessage(conn);
}

/* Keep the SQLSTATE of the first server error (sqlstate may be NULL). */
static void
KeepSqlstate(const PGresult *res, char *sqlstate)
{
	const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (sqlstate != NULL && sqlstate[0] == '\0' && code != NULL)
		snprintf(sqlstate, 6, "%s", code);
}

#define COPY_INTERRUPTED	(-2)

/* Send the COPY query and wait for its COPY OUT state; 0, -1 or COPY_INTERRUPTED. */
static int
StartCopy(PGconn *conn, const char *query, volatile sig_atomic_t *cancel,
		  char *sqlstate, char *err, size_t errlen)
{
	PGresult   *res;

	if (!PQsendQuery(conn, query))
	{
		snprintf(err, errlen, "could not read the task's rows: %s", PQerrorMessage(conn));
		return -1;
	}
	while (PQisBusy(conn))
		if (WaitForServer(conn, cancel) != 0)
			return COPY_INTERRUPTED;
	res = PQgetResult(conn);
	if (PQresultStatus(res) != PGRES_COPY_OUT)
	{
		snprintf(err, errlen, "could not read the task's rows: %s", TrServerMessage(res, conn));
		KeepSqlstate(res, sqlstate);
		PQclear(res);
		return -1;
	}
	PQclear(res);
	return 0;
}

/* One chunk of COPY data: parsed, the incomplete tail carried over. */
static int
FeedChunk(CopyParser *p, unsigned char *buf, size_t n)
{
	long		used;

	if (p->carry_len == 0)
	{
		if ((used = ParseBuffer(p, buf, n)) < 0)
			return -1;
		if ((size_t) used < n && Carry(p, buf + used, n - used) != 0)
			return -1;
		return 0;
	}
	if (Carry(p, buf, n) != 0 || (used = ParseBuffer(p, p->carry, p->carry_len)) < 0)
		return -1;
	memmove(p->carry, p->carry + used, p->carry_len - used);
	p->carry_len -= used;
	return 0;
}

/*
 * Read the COPY data until its end; after a parse error keep draining so
 * the connection stays usable.  0, -1 or COPY_INTERRUPTED.
 */
static int
ReadCopyData(PGconn *conn, CopyParser *p, volatile sig_atomic_t *cancel, long *bytes)
{
	int			rc = 0;

	for (;;)
	{
		char	   *buf = NULL;
		int			n = PQgetCopyData(conn, &buf, 1);

		if (n == 0)
		{
			if (WaitForServer(conn, cancel) != 0)
				return COPY_INTERRUPTED;
			continue;
		}
		if (n == -1)
			return rc;			/* COPY done */
		if (cancel != NULL && *cancel && rc == 0)
		{
			PQfreemem(buf);
			return COPY_INTERRUPTED;
		}
		if (n == -2)
		{
			snprintf(p->err, p->errlen, "COPY failed: %s", PQerrorMessage(conn));
			return -1;
		}
		*bytes += n;
		if (rc == 0 && FeedChunk(p, (unsigned char *) buf, (size_t) n) != 0)
		{
			rc = -1;
			/* past max_rows: the server need not produce the rest */
			if (p->over_limit)
				CancelQuery(conn);
		}
		PQfreemem(buf);
	}
}

/* The COPY's final command status; rc unless that failed. */
static int
FinishCopy(PGconn *conn, int rc, char *sqlstate, char *err, size_t errlen)
{
	PGresult   *res;

	while ((res = PQgetResult(conn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
		{
			snprintf(err, errlen, "could not read the task's rows: %s",
					 TrServerMessage(res, conn));
			KeepSqlstate(res, sqlstate);
			rc = -1;
		}
		PQclear(res);
	}
	return rc;
}

/*
 * Run a COPY ... TO STDOUT (FORMAT binary) query and load its rows.
 * d is the number of feature columns (the target is the last column);
 * kinds gives their TR_COL_* kinds (NULL: all numeric): a categorical
 * column arrives as text, every other one as float8.  At most max_rows
 * rows with a target are loaded (0: no limit).
 * Returns 0, or -1 with err set, and sqlstate (6 bytes, may be NULL) set
 * to the server's SQLSTATE when the server raised the error (empty
 * otherwise), or TR_COPY_OVER_LIMIT with err set when the rows went past
 * max_rows; on error *out is freed.
 */
int
TrCopyLoad(PGconn *conn, const char *query, int d, int kind, const int *kinds,
		   long max_rows, volatile sig_atomic_t *cancel, TrTable *out, long *bytes,
		   char *sqlstate, char *err, size_t errlen)
{
	CopyParser	p;
	int			rc;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	out->d = d;
	out->kind = kind;
	p.tab = out;
	p.kind = kind;
	p.d = d;
	p.err = err;
	p.errlen = errlen;
	p.max_rows = max_rows > 0 ? max_rows : 0;
	*bytes = 0;
	if (sqlstate != NULL)
		sqlstate[0] = '\0';
	if (d <= 0)
	{
		snprintf(err, errlen, "no feature columns");
		return -1;
	}
	if ((kinds != NULL && TrTableSetKinds(out, kinds) != 0) ||
		TrRowsBegin(out) != 0 || (p.row = malloc(sizeof(double) * d)) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		TrTableFree(out);
		return -1;
	}

	rc = StartCopy(conn, query, cancel, sqlstate, err, errlen);
	if (rc == 0)
		rc = ReadCopyData(conn, &p, cancel, bytes);
	if (rc != COPY_INTERRUPTED)
		rc = FinishCopy(conn, rc, sqlstate, err, errlen);
	if (rc == 0 && (!p.finished || p.carry_len != 0))
	{
		snprintf(err, errlen, "COPY data ended in the middle of a row");
		rc = -1;
	}
	if (rc == 0)
		rc = TrRowsFinish(out, err, errlen);
	if (rc == COPY_INTERRUPTED && cancel != NULL && *cancel)
	{
		/* the caller exits, closing the connection; stop the query first */
		CancelQuery(conn);
		snprintf(err, errlen, "cancelled while loading the data");
	}
	else if (rc == COPY_INTERRUPTED)
		snprintf(err, errlen, "could not read the task's rows: %s", PQerrorMessage(conn));
	free(p.carry);
	free(p.row);
	if (rc != 0)
		TrTableFree(out);
	if (rc != 0 && p.over_limit && !(cancel != NULL && *cancel))
		return TR_COPY_OVER_LIMIT;
	return rc == 0 ? 0 : -1;
}
