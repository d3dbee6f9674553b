/*-------------------------------------------------------------------------
 *
 * csv.c
 *	  The one CSV reader of easeml (see csv.h for the format).
 *
 * The reader hands out one field at a time, so a caller that keeps numbers
 * only (the trainer loading a large file) never builds a record of
 * strings.  A quoted field is unescaped into the reader's buffer; a
 * closing quote may be followed by more text, which is appended (what
 * COPY and Python read as well).
 *
 * IDENTIFICATION
 *	  src/core/csv.c
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csv.h"

/* Start reading; a UTF-8 byte order mark is skipped. */
void
CsvInit(CsvReader *r, const char *text, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->p = text;
	r->end = text + len;
	r->line = 1;
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		r->p += 3;
}

void
CsvFree(CsvReader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = 0;
}

/* Skip lines of blanks; 1 if a record follows. */
int
CsvNextRecord(CsvReader *r)
{
	for (;;)
	{
		const char *q = r->p;

		while (q < r->end && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q >= r->end)
		{
			r->p = q;
			return 0;
		}
		if (*q != '\n')
			return 1;
		r->p = q + 1;
		r->line++;
	}
}

/* Make room for one more byte and a terminator. */
static int
Reserve(CsvReader *r)
{
	if (r->len + 2 > r->cap)
	{
		size_t		cap = r->cap ? r->cap * 2 : 256;
		char	   *nb = realloc(r->buf, cap);

		if (nb == NULL)
			return 0;
		r->buf = nb;
		r->cap = cap;
	}
	return 1;
}

/* Read one field; see csv.h. */
int
CsvNextField(CsvReader *r)
{
	int			in_quotes = 0;

	r->len = 0;
	r->quoted = 0;
	for (;;)
	{
		char		c;

		if (!Reserve(r))
			return CSV_NO_MEMORY;
		if (r->p >= r->end)
		{
			r->buf[r->len] = '\0';
			return in_quotes ? CSV_BAD_QUOTE : CSV_LAST;
		}
		c = *r->p++;
		if (in_quotes)
		{
			if (c == '"')
			{
				if (r->p < r->end && *r->p == '"')
					r->p++;		/* "" is one quote */
				else
				{
					in_quotes = 0;
					continue;
				}
			}
			else if (c == '\n')
				r->line++;
			r->buf[r->len++] = c;
			continue;
		}
		if (c == '"')
		{
			in_quotes = 1;
			r->quoted = 1;
			continue;
		}
		if (c == ',')
		{
			r->buf[r->len] = '\0';
			return CSV_MORE;
		}
		if (c == '\r' && r->p < r->end && *r->p == '\n')
			continue;
		if (c == '\n')
		{
			r->line++;
			r->buf[r->len] = '\0';
			return CSV_LAST;
		}
		r->buf[r->len++] = c;
	}
}

/* Strip blanks from both ends in place. */
char *
CsvTrim(char *s)
{
	char	   *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Is a (trimmed) cell a missing value? */
int
CsvIsMissing(const char *s)
{
	/* cheap first-character test: this runs for every cell */
	if (s[0] != '\0' && s[0] != 'N' && s[0] != 'n' && s[0] != '?')
		return 0;
	return s[0] == '\0' || strcasecmp(s, "NA") == 0 ||
		strcasecmp(s, "NaN") == 0 || strcmp(s, "?") == 0 ||
		strcasecmp(s, "NULL") == 0;
}

/* Parse a numeric cell; see csv.h. */
int
CsvParseNumber(const char *s, double *out)
{
	const char *t = s;
	const char *e;
	char	   *end;
	double		v;
	size_t		n;

	while (*t == ' ' || *t == '\t')
		t++;
	e = t + strlen(t);
	while (e > t && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	n = (size_t) (e - t);
	if (n == 0 || (n <= 4 && (t[0] == 'N' || t[0] == 'n' || t[0] == '?')))
	{
		char		tmp[5];

		memcpy(tmp, t, n);
		tmp[n] = '\0';
		if (CsvIsMissing(tmp))
		{
			*out = NAN;
			return CSV_MISSING;
		}
	}

	/* fast path: a plain integer of up to 15 digits is exact in a double */
	{
		const char *q = t + (*t == '-');
		long long	acc = 0;
		int			nd = 0;

		while (q < e && *q >= '0' && *q <= '9' && nd < 16)
		{
			acc = acc * 10 + (*q++ - '0');
			nd++;
		}
		if (q == e && nd > 0 && nd <= 15)
		{
			*out = (double) (*t == '-' ? -acc : acc);
			return CSV_NUMBER;
		}
	}

	/*
	 * strtod sets ERANGE for subnormal results and for underflow to zero:
	 * both are numbers.  Overflow gives +-HUGE_VAL (Infinity), which is
	 * returned for the caller to judge.
	 */
	errno = 0;
	v = strtod(t, &end);
	if (end == t || end != e)
		return CSV_NOT_NUMBER;
	*out = v;
	return CSV_NUMBER;
}
