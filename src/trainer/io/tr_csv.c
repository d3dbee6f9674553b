/*-------------------------------------------------------------------------
 *
 * tr_csv.c
 *	  Offline loader: a CSV file with a header row into a TrTable.
 *
 * The file is read with easeml's one CSV reader (src/core/csv.h: RFC 4180 as
 * COPY ... CSV HEADER and Python's csv module write it, blank lines
 * skipped, an optional byte order mark).  The target column is chosen by
 * name; every other column is a feature.  A feature cell that is empty,
 * NA, NaN, NULL or ? is missing (NaN in the table).  A feature column with
 * any other non-numeric cell is categorical (tr_column.c): a first pass
 * over the rows finds those columns.  Classification labels are kept as
 * strings (empty = missing label); a regression target must be numeric
 * (empty = missing).
 *
 * IDENTIFICATION
 *	  src/trainer/io/tr_csv.c
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/csv.h"
#include "trainer/trainer.h"

/*
 * Scan the data rows once and give the table column kinds when a feature
 * column holds a cell that is neither missing nor a number.  The reader is
 * left where it was; a malformed field stops the scan, and the second pass
 * reports it.  0, or -1 when out of memory.
 */
static int
CategoricalColumns(const CsvReader *r, int tcol, int ncol, TrTable *out)
{
	CsvReader	scan = *r;
	int		   *kinds = calloc(ncol, sizeof(int));
	int			any = 0,
				rc = 0;

	if (kinds == NULL)
		return -1;
	scan.buf = NULL;
	scan.len = scan.cap = 0;
	while (rc == 0 && CsvNextRecord(&scan))
	{
		int			col = 0,
					o = 0,
					more;

		do
		{
			double		v;

			more = CsvNextField(&scan);
			if (more < 0)
			{
				rc = more == CSV_NO_MEMORY ? -1 : 1;
				break;
			}
			if (col != tcol && o < ncol - 1)
			{
				if (kinds[o] == TR_COL_NUMERIC &&
					CsvParseNumber(scan.buf, &v) == CSV_NOT_NUMBER)
				{
					kinds[o] = TR_COL_CATEGORICAL;
					any = 1;
				}
				o++;
			}
			col++;
		} while (more == CSV_MORE);
	}
	if (rc >= 0)
		rc = any && TrTableSetKinds(out, kinds) != 0 ? -1 : 0;
	CsvFree(&scan);
	free(kinds);
	return rc;
}

/* One TrLoadCsv call: what its steps share. */
typedef struct CsvLoad
{
	const char *path;
	const char *target;
	int			kind;
	CsvReader	r;
	TrTable    *out;
	int			tcol;			/* the target's column */
	int			ncol;			/* columns of the header */
	size_t		rcap;			/* rows allocated in out */
	char	   *err;
	size_t		errlen;
} CsvLoad;

#define LOAD_FAIL	(-1)		/* err says why */
#define LOAD_OOM	(-2)

/* Format the reason into the caller's err; LOAD_FAIL. */
static int
LoadError(CsvLoad *L, const char *fmt,...) pg_attribute_printf(2, 3);

static int
LoadError(CsvLoad *L, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(L->err, L->errlen, fmt, ap);
	va_end(ap);
	return LOAD_FAIL;
}

/* The whole file in memory, NUL-terminated; NULL with err set. */
static char *
ReadWholeFile(const char *path, long *size, char *err, size_t errlen)
{
	FILE	   *f = fopen(path, "rb");
	char	   *data;

	if (f == NULL)
	{
		snprintf(err, errlen, "could not open \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (*size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
	{
		snprintf(err, errlen, "could not size \"%s\": %s", path, strerror(errno));
		fclose(f);
		return NULL;
	}
	if ((data = malloc(*size + 1)) == NULL)
		snprintf(err, errlen, "out of memory reading \"%s\" (%ld bytes)", path, *size);
	else if (*size > 0 && fread(data, 1, *size, f) != (size_t) *size)
	{
		snprintf(err, errlen, "could not read \"%s\"", path);
		free(data);
		data = NULL;
	}
	fclose(f);
	if (data != NULL)
		data[*size] = '\0';
	return data;
}

/* A field the reader could not read: out of memory or an open quote. */
static int
BadField(CsvLoad *L, int rc)
{
	if (rc == CSV_NO_MEMORY)
		return LOAD_OOM;
	snprintf(L->err, L->errlen, "line %ld of \"%s\": unterminated quoted field", L->r.line, L->path);
	return LOAD_FAIL;
}

/* The header's column names; the target's (exact, else any case) index. */
static int
ReadHeaderNames(CsvLoad *L, char ***names)
{
	int			ncap = 0,
				rc;

	do
	{
		if ((rc = CsvNextField(&L->r)) < 0)
			return BadField(L, rc);
		if (L->ncol == ncap)
		{
			char	  **nn;

			ncap = ncap ? ncap * 2 : 64;
			if ((nn = realloc(*names, sizeof(char *) * ncap)) == NULL)
				return LOAD_OOM;
			*names = nn;
		}
		if (((*names)[L->ncol] = strdup(CsvTrim(L->r.buf))) == NULL)
			return LOAD_OOM;
		L->ncol++;
	} while (rc == CSV_MORE);
	L->tcol = -1;
	for (int j = 0; j < L->ncol && L->tcol < 0; j++)
		if (strcmp((*names)[j], L->target) == 0)
			L->tcol = j;
	for (int j = 0; j < L->ncol && L->tcol < 0; j++)
		if (strcasecmp((*names)[j], L->target) == 0)
			L->tcol = j;
	return 0;
}

/* The header: the target's column and the feature names. */
static int
ReadHeader(CsvLoad *L)
{
	char	  **names = NULL;
	int			rc = ReadHeaderNames(L, &names);
	int			d = L->ncol - 1;

	if (rc == 0 && L->tcol < 0)
		rc = LoadError(L, "target column \"%s\" is not in the header of \"%s\"",
					   L->target, L->path);
	else if (rc == 0 && L->ncol < 2)
		rc = LoadError(L, "\"%s\" has no feature columns besides the target", L->path);
	else if (rc == 0 && (L->out->feature_names = calloc(d, sizeof(char *))) == NULL)
		rc = LOAD_OOM;
	if (rc != 0)
	{
		for (int j = 0; names != NULL && j < L->ncol; j++)
			free(names[j]);
		free(names);
		return rc;
	}
	L->out->d = d;
	for (int j = 0, o = 0; j < L->ncol; j++)
	{
		if (j == L->tcol)
			free(names[j]);
		else
			L->out->feature_names[o++] = names[j];
	}
	free(names);
	return 0;
}

/* Room for one more row in out (doubling). */
static int
GrowRows(CsvLoad *L)
{
	TrTable    *out = L->out;
	size_t		nc = L->rcap ? L->rcap * 2 : 1024;
	double	   *nx;

	if ((size_t) out->n < L->rcap)
		return 0;
	if ((nx = realloc(out->X, sizeof(double) * nc * out->d)) == NULL)
		return LOAD_OOM;
	out->X = nx;
	if (L->kind == TR_KIND_CLASSIFICATION)
	{
		char	  **nl = realloc(out->labels, sizeof(char *) * nc);

		if (nl == NULL)
			return LOAD_OOM;
		out->labels = nl;
	}
	else
	{
		double	   *nt = realloc(out->t, sizeof(double) * nc);

		if (nt == NULL)
			return LOAD_OOM;
		out->t = nt;
	}
	L->rcap = nc;
	return 0;
}

/* The target cell of the last row: a label, or a number for regression. */
static int
ReadTarget(CsvLoad *L, long line)
{
	TrTable    *out = L->out;
	char	   *s = CsvTrim(L->r.buf);

	if (L->kind == TR_KIND_CLASSIFICATION)
	{
		if (s[0] != '\0' && (out->labels[out->n - 1] = strdup(s)) == NULL)
			return LOAD_OOM;
		return 0;
	}
	if (CsvParseNumber(L->r.buf, &out->t[out->n - 1]) == CSV_NOT_NUMBER)
		return LoadError(L, "line %ld of \"%s\": target \"%s\" is not a number: \"%.40s\" (use --kind classification for labels)",
						 line, L->path, L->target, s);
	return 0;
}

/* Feature o of the last row: a category code, a number, or NaN for missing. */
static int
ReadFeature(CsvLoad *L, long line, int o, double *cell)
{
	TrTable    *out = L->out;

	if (out->col_kind != NULL && out->col_kind[o] == TR_COL_CATEGORICAL)
	{
		char	   *v = CsvTrim(L->r.buf);
		int			code;

		if (CsvIsMissing(v))
			*cell = NAN;
		else if ((code = TrCategoryCode(&out->cats[o], v, strlen(v))) < 0)
			return LOAD_OOM;
		else
			*cell = code;
		return 0;
	}
	if (CsvParseNumber(L->r.buf, cell) == CSV_NOT_NUMBER)
		return LoadError(L, "line %ld of \"%s\": feature column \"%s\" is not numeric: \"%.40s\"",
						 line, L->path, out->feature_names[o], CsvTrim(L->r.buf));
	return 0;
}

/* One data row (the reader is at its first field). */
static int
ReadDataRow(CsvLoad *L)
{
	TrTable    *out = L->out;
	long		line = L->r.line;
	int			col = 0,
				o = 0,
				rc;
	double	   *row;

	if ((rc = GrowRows(L)) != 0)
		return rc;
	row = out->X + (size_t) out->n * out->d;
	if (L->kind == TR_KIND_CLASSIFICATION)
		out->labels[out->n] = NULL;
	out->n++;
	for (;;)
	{
		int			more = CsvNextField(&L->r);

		if (more < 0)
			return BadField(L, more);
		if (col >= L->ncol)
			return LoadError(L, "line %ld of \"%s\" has more than %d fields",
							 line, L->path, L->ncol);
		if (col == L->tcol)
			rc = ReadTarget(L, line);
		else
		{
			rc = ReadFeature(L, line, o, &row[o]);
			o++;
		}
		if (rc != 0)
			return rc;
		col++;
		if (more != CSV_MORE)
			break;
	}
	if (col != L->ncol)
		return LoadError(L, "line %ld of \"%s\" has %d fields, the header has %d",
						 line, L->path, col, L->ncol);
	return 0;
}

int
TrLoadCsv(const char *path, const char *target, int kind, TrTable *out,
		  char *err, size_t errlen)
{
	CsvLoad		L = {.path = path,.target = target,.kind = kind,.out = out,.err = err,.errlen = errlen};
	char	   *data;
	long		size;
	int			rc = 0;

	memset(out, 0, sizeof(*out));
	if (kind != TR_KIND_CLASSIFICATION && kind != TR_KIND_REGRESSION)
	{
		snprintf(err, errlen, "unknown task kind %d", kind);
		return -1;
	}
	if ((data = ReadWholeFile(path, &size, err, errlen)) == NULL)
		return -1;
	CsvInit(&L.r, data, size);
	if (!CsvNextRecord(&L.r))
		rc = LoadError(&L, "\"%s\" is empty (a header row is required)", path);
	if (rc == 0)
		rc = ReadHeader(&L);
	out->kind = kind;
	/* first pass: which feature columns hold text */
	if (rc == 0 && CategoricalColumns(&L.r, L.tcol, L.ncol, out) != 0)
		rc = LOAD_OOM;
	while (rc == 0 && CsvNextRecord(&L.r))
		rc = ReadDataRow(&L);
	if (rc == 0 && out->n == 0)
		rc = LoadError(&L, "\"%s\" has a header but no data rows", path);
	if (rc == LOAD_OOM)
		snprintf(err, errlen, "out of memory while loading \"%s\"", path);
	CsvFree(&L.r);
	free(data);
	if (rc != 0)
	{
		TrTableFree(out);
		return -1;
	}
	return 0;
}
