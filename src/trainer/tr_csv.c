/*-------------------------------------------------------------------------
 *
 * tr_csv.c
 *	  Offline loader: a CSV file with a header row into a TrTable.
 *
 * The file is read with easeml's one CSV reader (src/csv.h: RFC 4180 as
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

#include "csv.h"
#include "trainer.h"

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
	CsvInit(&r, data, size);
	if (!CsvNextRecord(&r))
	{
		snprintf(err, errlen, "\"%s\" is empty (a header row is required)", path);
		free(data);
		return -1;
	}

	/* header */
	do
	{
		rc = CsvNextField(&r);
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
		names[ncol] = strdup(CsvTrim(r.buf));
		if (names[ncol] == NULL)
			goto oom;
		ncol++;
	} while (rc == CSV_MORE);
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
	while (CsvNextRecord(&r))
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
			rc = CsvNextField(&r);
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
					char	   *s = CsvTrim(r.buf);

					if (s[0] != '\0')
					{
						out->labels[out->n - 1] = strdup(s);
						if (out->labels[out->n - 1] == NULL)
							goto oom;
					}
				}
				else if (CsvParseNumber(r.buf, &out->t[out->n - 1]) == CSV_NOT_NUMBER)
				{
					snprintf(err, errlen,
							 "line %ld of \"%s\": target \"%s\" is not a number: \"%.40s\" (use --kind classification for labels)",
							 line, path, target, CsvTrim(r.buf));
					goto fail;
				}
			}
			else if (out->col_kind != NULL && out->col_kind[o] == TR_COL_CATEGORICAL)
			{
				char	   *v = CsvTrim(r.buf);
				int			code;

				if (CsvIsMissing(v))
					row[o] = NAN;
				else if ((code = TrCategoryCode(&out->cats[o], v, strlen(v))) < 0)
					goto oom;
				else
					row[o] = code;
				o++;
			}
			else
			{
				if (CsvParseNumber(r.buf, &row[o]) == CSV_NOT_NUMBER)
				{
					snprintf(err, errlen,
							 "line %ld of \"%s\": feature column \"%s\" is not numeric: \"%.40s\"",
							 line, path, out->feature_names[o], CsvTrim(r.buf));
					goto fail;
				}
				o++;
			}
			col++;
		} while (rc == CSV_MORE);
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
	CsvFree(&r);
	free(data);
	return 0;

bad_field:
	if (rc == CSV_NO_MEMORY)
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
	CsvFree(&r);
	free(data);
	TrTableFree(out);
	return -1;
}
