/*-------------------------------------------------------------------------
 *
 * tr_csv.c
 *	  Offline loader: a CSV file with a header row into a TrTable.
 *
 * The format is RFC 4180 as written by PostgreSQL's COPY ... CSV HEADER and
 * by Python's csv module: comma separated, fields optionally in double
 * quotes ("" inside quotes is a quote; quoted fields may span lines), LF or
 * CRLF line ends, an optional UTF-8 byte order mark.  The target column is
 * chosen by name; every other column is a feature.  A feature cell that is
 * empty, NA, NaN, NULL or ? is missing (NaN in the table).  A feature
 * column with any other non-numeric cell is categorical (tr_column.c): a
 * first pass over the rows finds those columns.  Classification labels are
 * kept as strings (empty = missing label); a regression target must be
 * numeric (empty = missing).
 *
 * IDENTIFICATION
 *	  src/trainer/tr_csv.c
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trainer.h"

typedef struct CsvReader
{
	const char *p;
	const char *end;
	long		line;			/* line number of the current position */
	char	   *buf;			/* current field, unescaped, NUL-terminated */
	size_t		cap;
} CsvReader;

/*
 * Read one field.  Returns 1 when the field ended a record (newline or end
 * of input), 0 when a comma follows, -1 on an unterminated quote or when
 * out of memory (the caller tells them apart by r->buf == NULL).
 */
static int
CsvField(CsvReader *r)
{
	size_t		n = 0;
	int			quoted = 0;

	if (r->p < r->end && *r->p == '"')
	{
		quoted = 1;
		r->p++;
	}
	for (;;)
	{
		char		c;

		if (n + 2 > r->cap)
		{
			size_t		cap = r->cap ? r->cap * 2 : 256;
			char	   *nb = realloc(r->buf, cap);

			if (nb == NULL)
			{
				free(r->buf);
				r->buf = NULL;
				return -1;
			}
			r->buf = nb;
			r->cap = cap;
		}
		if (r->p >= r->end)
		{
			r->buf[n] = '\0';
			return quoted ? -1 : 1;
		}
		c = *r->p++;
		if (quoted)
		{
			if (c == '"')
			{
				if (r->p < r->end && *r->p == '"')
				{
					r->buf[n++] = '"';
					r->p++;
					continue;
				}
				quoted = 0;		/* closing quote; text may follow */
				continue;
			}
			if (c == '\n')
				r->line++;
			r->buf[n++] = c;
			continue;
		}
		if (c == ',')
		{
			r->buf[n] = '\0';
			return 0;
		}
		if (c == '\r' && r->p < r->end && *r->p == '\n')
			continue;
		if (c == '\n')
		{
			r->line++;
			r->buf[n] = '\0';
			return 1;
		}
		r->buf[n++] = c;
	}
}

/* strip leading and trailing blanks in place */
static char *
Trim(char *s)
{
	char	   *e;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s >= '0' && *s <= '9')
	{
		/* common case: a bare number; only check its last character */
		e = s + 1;
		while (*e > ' ')
			e++;
		if (*e == '\0')
			return s;
	}
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int
IsMissing(const char *s)
{
	/* cheap first-character test: this runs for every cell */
	if (s[0] != '\0' && s[0] != 'N' && s[0] != 'n' && s[0] != '?')
		return 0;
	return s[0] == '\0' || strcasecmp(s, "NA") == 0 ||
		strcasecmp(s, "NaN") == 0 || strcmp(s, "?") == 0 ||
		strcasecmp(s, "NULL") == 0;
}

/* parse a number; 0 on success (missing -> NaN), -1 when not numeric */
static int
ParseNumber(char *s, double *v)
{
	char	   *end;

	s = Trim(s);
	if (IsMissing(s))
	{
		*v = NAN;
		return 0;
	}
	/* fast path: a plain integer of up to 15 digits is exact in double */
	{
		const char *q = s + (*s == '-');
		long long	acc = 0;
		int			nd = 0;

		while (*q >= '0' && *q <= '9' && nd < 16)
		{
			acc = acc * 10 + (*q++ - '0');
			nd++;
		}
		if (*q == '\0' && nd > 0 && nd <= 15)
		{
			*v = (double) (*s == '-' ? -acc : acc);
			return 0;
		}
	}
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end != '\0')
		return -1;
	/* strtod turns 1e999 into HUGE_VAL with ERANGE: keep it as Inf */
	return 0;
}

/* is the rest of the input only blank lines? */
static int
OnlyBlank(const char *p, const char *end)
{
	for (; p < end; p++)
		if (!isspace((unsigned char) *p))
			return 0;
	return 1;
}

/*
 * Scan the data rows once and give the table column kinds when a feature
 * column holds a cell that is neither missing nor a number.  The reader is
 * left where it was; a malformed field stops the scan, and the second pass
 * reports it.  0, or -2 when out of memory.
 */
static int
CategoricalColumns(CsvReader *r, int tcol, int ncol, TrTable *out)
{
	CsvReader	scan = *r;
	int		   *kinds = calloc(ncol, sizeof(int));
	int			any = 0,
				rc = 0;

	if (kinds == NULL)
		return -2;
	scan.buf = NULL;
	scan.cap = 0;
	while (scan.p < scan.end && !OnlyBlank(scan.p, scan.end))
	{
		int			col = 0,
					o = 0;

		do
		{
			double		v;

			rc = CsvField(&scan);
			if (rc < 0)
			{
				rc = scan.buf == NULL ? -2 : 0;
				goto done;
			}
			if (col != tcol && o < ncol - 1)
			{
				if (kinds[o] == TR_COL_NUMERIC && ParseNumber(scan.buf, &v) != 0)
				{
					kinds[o] = TR_COL_CATEGORICAL;
					any = 1;
				}
				o++;
			}
			col++;
		} while (rc == 0);
	}
	rc = 0;
done:
	if (rc == 0 && any && TrTableSetKinds(out, kinds) != 0)
		rc = -2;
	free(scan.buf);
	free(kinds);
	return rc;
}

int
TrLoadCsv(const char *path, const char *target, int kind, TrTable *out,
		  char *err, size_t errlen)
{
	FILE	   *f = NULL;
	char	   *data = NULL;
	long		size;
	CsvReader	r;
	char	  **names = NULL;
	int			ncol = 0,
				ncap = 0,
				tcol = -1,
				d,
				rc;
	size_t		rcap = 0;

	memset(out, 0, sizeof(*out));
	memset(&r, 0, sizeof(r));
	if (kind != TR_KIND_CLASSIFICATION && kind != TR_KIND_REGRESSION)
	{
		snprintf(err, errlen, "unknown task kind %d", kind);
		return -1;
	}
	f = fopen(path, "rb");
	if (f == NULL)
	{
		snprintf(err, errlen, "could not open \"%s\": %s", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0)
	{
		snprintf(err, errlen, "could not size \"%s\": %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	data = malloc(size + 1);
	if (data == NULL)
	{
		snprintf(err, errlen, "out of memory reading \"%s\" (%ld bytes)", path, size);
		fclose(f);
		return -1;
	}
	if (size > 0 && fread(data, 1, size, f) != (size_t) size)
	{
		snprintf(err, errlen, "could not read \"%s\"", path);
		fclose(f);
		free(data);
		return -1;
	}
	fclose(f);
	data[size] = '\0';
	r.p = data;
	r.end = data + size;
	r.line = 1;
	if (size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
		r.p += 3;
	if (OnlyBlank(r.p, r.end))
	{
		snprintf(err, errlen, "\"%s\" is empty (a header row is required)", path);
		free(data);
		return -1;
	}

	/* header */
	do
	{
		rc = CsvField(&r);
		if (rc < 0)
			goto bad_field;
		if (ncol == ncap)
		{
			char	  **nn;

			ncap = ncap ? ncap * 2 : 64;
			nn = realloc(names, sizeof(char *) * ncap);
			if (nn == NULL)
				goto oom;
			names = nn;
		}
		names[ncol] = strdup(Trim(r.buf));
		if (names[ncol] == NULL)
			goto oom;
		ncol++;
	} while (rc == 0);
	for (int j = 0; j < ncol; j++)
		if (strcmp(names[j], target) == 0)
		{
			tcol = j;
			break;
		}
	if (tcol < 0)
		for (int j = 0; j < ncol; j++)
			if (strcasecmp(names[j], target) == 0)
			{
				tcol = j;
				break;
			}
	if (tcol < 0)
	{
		snprintf(err, errlen, "target column \"%s\" is not in the header of \"%s\"",
				 target, path);
		goto fail;
	}
	if (ncol < 2)
	{
		snprintf(err, errlen, "\"%s\" has no feature columns besides the target", path);
		goto fail;
	}
	d = ncol - 1;
	out->d = d;
	out->kind = kind;
	out->feature_names = calloc(d, sizeof(char *));
	if (out->feature_names == NULL)
		goto oom;
	for (int j = 0, o = 0; j < ncol; j++)
	{
		if (j == tcol)
		{
			free(names[j]);
			continue;
		}
		out->feature_names[o++] = names[j];
	}
	free(names);
	names = NULL;
	ncol = d + 1;

	/* first pass: which feature columns hold text */
	if (CategoricalColumns(&r, tcol, ncol, out) != 0)
		goto oom;

	/* data rows */
	while (r.p < r.end && !OnlyBlank(r.p, r.end))
	{
		long		line = r.line;
		int			col = 0,
					o = 0;
		double	   *row;

		if ((size_t) out->n == rcap)
		{
			size_t		nc = rcap ? rcap * 2 : 1024;
			double	   *nx = realloc(out->X, sizeof(double) * nc * d);

			if (nx == NULL)
				goto oom;
			out->X = nx;
			if (kind == TR_KIND_CLASSIFICATION)
			{
				char	  **nl = realloc(out->labels, sizeof(char *) * nc);

				if (nl == NULL)
					goto oom;
				out->labels = nl;
			}
			else
			{
				double	   *nt = realloc(out->t, sizeof(double) * nc);

				if (nt == NULL)
					goto oom;
				out->t = nt;
			}
			rcap = nc;
		}
		row = out->X + (size_t) out->n * d;
		if (kind == TR_KIND_CLASSIFICATION)
			out->labels[out->n] = NULL;
		out->n++;
		do
		{
			rc = CsvField(&r);
			if (rc < 0)
				goto bad_field;
			if (col >= ncol)
			{
				snprintf(err, errlen, "line %ld of \"%s\" has more than %d fields",
						 line, path, ncol);
				goto fail;
			}
			if (col == tcol)
			{
				if (kind == TR_KIND_CLASSIFICATION)
				{
					char	   *s = Trim(r.buf);

					if (s[0] != '\0')
					{
						out->labels[out->n - 1] = strdup(s);
						if (out->labels[out->n - 1] == NULL)
							goto oom;
					}
				}
				else if (ParseNumber(r.buf, &out->t[out->n - 1]) != 0)
				{
					snprintf(err, errlen,
							 "line %ld of \"%s\": target \"%s\" is not a number: \"%.40s\" (use --kind classification for labels)",
							 line, path, target, Trim(r.buf));
					goto fail;
				}
			}
			else if (out->col_kind != NULL && out->col_kind[o] == TR_COL_CATEGORICAL)
			{
				char	   *v = Trim(r.buf);
				int			code;

				if (IsMissing(v))
					row[o] = NAN;
				else if ((code = TrCategoryCode(&out->cats[o], v, strlen(v))) < 0)
					goto oom;
				else
					row[o] = code;
				o++;
			}
			else
			{
				if (ParseNumber(r.buf, &row[o]) != 0)
				{
					snprintf(err, errlen,
							 "line %ld of \"%s\": feature column \"%s\" is not numeric: \"%.40s\"",
							 line, path, out->feature_names[o], Trim(r.buf));
					goto fail;
				}
				o++;
			}
			col++;
		} while (rc == 0);
		if (col != ncol)
		{
			snprintf(err, errlen, "line %ld of \"%s\" has %d fields, the header has %d",
					 line, path, col, ncol);
			goto fail;
		}
	}
	if (out->n == 0)
	{
		snprintf(err, errlen, "\"%s\" has a header but no data rows", path);
		goto fail;
	}
	free(r.buf);
	free(data);
	return 0;

bad_field:
	if (r.buf == NULL)
		goto oom;
	snprintf(err, errlen, "line %ld of \"%s\": unterminated quoted field", r.line, path);
	goto fail;
oom:
	snprintf(err, errlen, "out of memory while loading \"%s\"", path);
fail:
	if (names != NULL)
	{
		for (int j = 0; j < ncol; j++)
			free(names[j]);
		free(names);
	}
	free(r.buf);
	free(data);
	TrTableFree(out);
	return -1;
}
