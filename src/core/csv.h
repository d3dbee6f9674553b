/*-------------------------------------------------------------------------
 *
 * csv.h
 *	  The one CSV reader of easeml, shared by the replay simulator
 *	  (easeml-replay and easeml.replay), easeml.load_history and the
 *	  trainer's offline loader (easeml-trainer --csv).
 *
 * The format is RFC 4180 as PostgreSQL's COPY ... (FORMAT csv) and
 * Python's csv module write it: comma-separated fields, optionally in
 * double quotes ("" inside quotes is one quote; a quoted field may hold
 * commas and line breaks), LF or CRLF line ends, an optional UTF-8 byte
 * order mark.  Lines that hold only blanks are skipped.  Plain C: no
 * PostgreSQL headers, never prints, never exits.
 *
 * IDENTIFICATION
 *	  src/core/csv.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_CSV_H
#define EASEML_CSV_H

#include <stddef.h>

/* CsvNextField results */
#define CSV_MORE		0		/* a comma follows: more fields in the record */
#define CSV_LAST		1		/* the field ended its record */
#define CSV_BAD_QUOTE	(-1)	/* a quoted field runs to the end of input */
#define CSV_NO_MEMORY	(-2)

typedef struct CsvReader
{
	const char *p;				/* next byte */
	const char *end;
	long		line;			/* line of the next byte (1-based) */
	char	   *buf;			/* the field just read, unescaped, NUL-ended */
	size_t		len;			/* its length */
	size_t		cap;
	int			quoted;			/* it was (partly) quoted */
} CsvReader;

/* Start reading text[0..len) (need not be NUL-terminated); skips a BOM. */
extern void CsvInit(CsvReader *r, const char *text, size_t len);
extern void CsvFree(CsvReader *r);

/*
 * Skip lines that hold only blanks; returns 1 if a record follows, 0 at
 * the end of input.  Call before the first field of every record.
 */
extern int	CsvNextRecord(CsvReader *r);

/* Read one field into r->buf; returns CSV_MORE, CSV_LAST or an error. */
extern int	CsvNextField(CsvReader *r);

/* Blanks (spaces, tabs, CR) stripped from both ends, in place. */
extern char *CsvTrim(char *s);

/* An empty cell, NA, NaN, NULL or ? (any case): a missing value. */
extern int	CsvIsMissing(const char *s);

/* CsvParseNumber results */
#define CSV_NUMBER		0
#define CSV_MISSING		1
#define CSV_NOT_NUMBER	(-1)

/*
 * Parse a numeric cell (blanks around it allowed).  Subnormal numbers are
 * accepted (1e-308 is a number); a value too large for a double becomes
 * +-Infinity, for the caller to accept or reject.  Missing cells give
 * CSV_MISSING and NaN.
 */
extern int	CsvParseNumber(const char *s, double *out);

#endif							/* EASEML_CSV_H */
