/*-------------------------------------------------------------------------
 *
 * replay_matrix.c
 *	  The replay's input matrices (replay.h): a CSV file or buffer read with
 *	  the one CSV reader of easeml (src/core/csv.c) into a ReplayMatrix
 *	  (header, row ids, numbers; row ids unique), errors turned into
 *	  qualities, and a table joined onto a matrix's rows by integer id.
 *
 * IDENTIFICATION
 *	  src/core/replay_matrix.c
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "replay.h"
#include "replay_internal.h"

/* ----------------------------------------------------------------------
 * Matrices from CSV (the shared reader of src/core/csv.c)
 * ----------------------------------------------------------------------
 */

/* Free a matrix. */
void
ReplayMatrixFree(ReplayMatrix *m)
{
	int			i;

	if (m == NULL)
		return;
	if (m->row_ids)
		for (i = 0; i < m->rows; i++)
			free(m->row_ids[i]);
	if (m->col_names)
		for (i = 0; i < m->cols; i++)
			free(m->col_names[i]);
	free(m->row_ids);
	free(m->col_names);
	free(m->row_lines);
	free(m->data);
	memset(m, 0, sizeof(*m));
}

/* Read the header into m->col_names; returns a REPLAY_* status. */
static int
ParseHeader(CsvReader *r, ReplayMatrix *m, char *err, size_t errlen)
{
	int			cap = 0;
	int			rc;

	if (!CsvNextRecord(r))
	{
		ReplaySetErr(err, errlen, "empty CSV: a header row is required");
		return REPLAY_BAD_INPUT;
	}
	do
	{
		rc = CsvNextField(r);
		if (rc < 0)
			break;
		if (m->cols == cap)
		{
			char	  **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(m->col_names, sizeof(char *) * cap);
			if (nn == NULL)
				return REPLAY_NO_MEMORY;
			m->col_names = nn;
		}
		/* the first field names the id column: kept for now, dropped below */
		m->col_names[m->cols] = strdup(CsvTrim(r->buf));
		if (m->col_names[m->cols] == NULL)
			return REPLAY_NO_MEMORY;
		m->cols++;
	} while (rc == CSV_MORE);
	if (rc == CSV_NO_MEMORY)
		return REPLAY_NO_MEMORY;
	if (rc == CSV_BAD_QUOTE)
	{
		ReplaySetErr(err, errlen, "line 1: unterminated quoted field in the header");
		return REPLAY_BAD_INPUT;
	}
	if (m->cols < 2)
	{
		ReplaySetErr(err, errlen, "line 1: the header needs a row-id column and at least one value column");
		return REPLAY_BAD_INPUT;
	}
	free(m->col_names[0]);
	memmove(m->col_names, m->col_names + 1, sizeof(char *) * (m->cols - 1));
	m->cols--;
	return REPLAY_OK;
}

/* Grow the row arrays of m to hold at least one more row. */
static int
GrowRows(ReplayMatrix *m, int *cap)
{
	int			nc;
	double	   *nd;
	char	  **ni;
	long	   *nl;

	if (m->rows < *cap)
		return 1;
	nc = *cap ? *cap * 2 : 64;
	nd = realloc(m->data, sizeof(double) * (size_t) nc * m->cols);
	if (nd == NULL)
		return 0;
	m->data = nd;
	ni = realloc(m->row_ids, sizeof(char *) * nc);
	if (ni == NULL)
		return 0;
	m->row_ids = ni;
	nl = realloc(m->row_lines, sizeof(long) * nc);
	if (nl == NULL)
		return 0;
	m->row_lines = nl;
	*cap = nc;
	return 1;
}

/* Read one data row (a record follows); returns a REPLAY_* status. */
static int
ParseRow(CsvReader *r, ReplayMatrix *m, char *err, size_t errlen)
{
	double	   *row = m->data + (size_t) m->rows * m->cols;
	long		line = r->line;
	int			col = 0;
	int			rc;

	m->row_ids[m->rows] = NULL;
	do
	{
		rc = CsvNextField(r);
		if (rc == CSV_NO_MEMORY)
			return REPLAY_NO_MEMORY;
		if (rc == CSV_BAD_QUOTE)
		{
			ReplaySetErr(err, errlen, "line %ld: unterminated quoted field", line);
			return REPLAY_BAD_INPUT;
		}
		if (col == 0)
		{
			m->row_ids[m->rows] = strdup(CsvTrim(r->buf));
			if (m->row_ids[m->rows] == NULL)
				return REPLAY_NO_MEMORY;
		}
		else if (col <= m->cols &&
				 CsvParseNumber(r->buf, &row[col - 1]) == CSV_NOT_NUMBER)
		{
			ReplaySetErr(err, errlen, "line %ld, column %d: not a number: \"%.40s\"",
				   line, col + 1, CsvTrim(r->buf));
			free(m->row_ids[m->rows]);
			return REPLAY_BAD_INPUT;
		}
		col++;
	} while (rc == CSV_MORE);
	if (col != m->cols + 1)
	{
		ReplaySetErr(err, errlen, "line %ld has %d fields, the header has %d",
			   line, col, m->cols + 1);
		free(m->row_ids[m->rows]);
		return REPLAY_BAD_INPUT;
	}
	m->row_lines[m->rows] = line;
	m->rows++;
	return REPLAY_OK;
}

/* qsort comparator: row indices by their id string. */
static const ReplayMatrix *sort_matrix;

static int
CmpRowId(const void *a, const void *b)
{
	int			x = *(const int *) a,
				y = *(const int *) b;
	int			c = strcmp(sort_matrix->row_ids[x], sort_matrix->row_ids[y]);

	return c != 0 ? c : (x > y) - (x < y);
}

/* Reject a matrix whose row ids repeat (a row would count twice). */
static int
CheckUniqueIds(const ReplayMatrix *m, char *err, size_t errlen)
{
	int		   *idx = malloc(sizeof(int) * (size_t) (m->rows > 0 ? m->rows : 1));
	int			i,
				rc = REPLAY_OK;

	if (idx == NULL)
		return REPLAY_NO_MEMORY;
	for (i = 0; i < m->rows; i++)
		idx[i] = i;
	sort_matrix = m;
	qsort(idx, m->rows, sizeof(int), CmpRowId);
	for (i = 1; i < m->rows; i++)
		if (strcmp(m->row_ids[idx[i - 1]], m->row_ids[idx[i]]) == 0)
		{
			ReplaySetErr(err, errlen, "line %ld: row id \"%.40s\" already appeared on line %ld",
				   m->row_lines[idx[i]], m->row_ids[idx[i]], m->row_lines[idx[i - 1]]);
			rc = REPLAY_BAD_INPUT;
			break;
		}
	free(idx);
	return rc;
}

/* Parse a CSV buffer; see replay.h. */
int
ReplayParseCsv(const char *text, size_t len, ReplayMatrix *m, char *err,
			   size_t errlen)
{
	CsvReader	r;
	int			rowcap = 0;
	int			rc;

	if (m == NULL)
		return REPLAY_BAD_INPUT;
	memset(m, 0, sizeof(*m));
	if (text == NULL)
	{
		ReplaySetErr(err, errlen, "no CSV text");
		return REPLAY_BAD_INPUT;
	}
	CsvInit(&r, text, len);
	rc = ParseHeader(&r, m, err, errlen);
	while (rc == REPLAY_OK && CsvNextRecord(&r))
	{
		if (!GrowRows(m, &rowcap))
			rc = REPLAY_NO_MEMORY;
		else
			rc = ParseRow(&r, m, err, errlen);
	}
	if (rc == REPLAY_OK && m->rows == 0)
	{
		ReplaySetErr(err, errlen, "the CSV has a header but no data rows");
		rc = REPLAY_BAD_INPUT;
	}
	if (rc == REPLAY_OK)
		rc = CheckUniqueIds(m, err, errlen);
	if (rc == REPLAY_NO_MEMORY)
		ReplaySetErr(err, errlen, "out of memory reading CSV");
	CsvFree(&r);
	if (rc != REPLAY_OK)
		ReplayMatrixFree(m);
	return rc;
}

/* Read and parse a CSV file; see replay.h. */
int
ReplayReadCsv(const char *path, ReplayMatrix *m, char *err, size_t errlen)
{
	FILE	   *f;
	char	   *text = NULL;
	size_t		len = 0,
				cap = 0;
	int			rc;

	if (m == NULL)
		return REPLAY_BAD_INPUT;
	memset(m, 0, sizeof(*m));
	if (path == NULL)
	{
		ReplaySetErr(err, errlen, "no CSV path");
		return REPLAY_BAD_INPUT;
	}
	f = fopen(path, "rb");
	if (f == NULL)
	{
		ReplaySetErr(err, errlen, "could not open \"%s\": %s", path, strerror(errno));
		return REPLAY_IO;
	}
	for (;;)
	{
		size_t		got;

		if (len + 65536 > cap)
		{
			size_t		nc = cap ? cap * 2 : 1 << 20;
			char	   *nt = realloc(text, nc);

			if (nt == NULL)
			{
				free(text);
				fclose(f);
				ReplaySetErr(err, errlen, "out of memory reading \"%s\"", path);
				return REPLAY_NO_MEMORY;
			}
			text = nt;
			cap = nc;
		}
		got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
	{
		free(text);
		fclose(f);
		ReplaySetErr(err, errlen, "could not read \"%s\"", path);
		return REPLAY_IO;
	}
	fclose(f);
	rc = ReplayParseCsv(text, len, m, err, errlen);
	if (rc != REPLAY_OK && err != NULL && errlen > 0)
	{
		char		tmp[512];

		snprintf(tmp, sizeof(tmp), "%s: %s", path, err);
		snprintf(err, errlen, "%s", tmp);
	}
	free(text);
	return rc;
}

/* x -> 1 - x on every cell. */
void
ReplayOneMinus(ReplayMatrix *m)
{
	size_t		i;

	if (m == NULL || m->data == NULL)
		return;
	for (i = 0; i < (size_t) m->rows * m->cols; i++)
		m->data[i] = 1.0 - m->data[i];
}

/* Parse an integer row id; 0 if it is not one. */
static int
ParseId(const char *s, long long *out)
{
	char	   *end;
	long long	v;

	while (isspace((unsigned char) *s))
		s++;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || errno != 0)
		return 0;
	while (isspace((unsigned char) *end))
		end++;
	if (*end != '\0')
		return 0;
	*out = v;
	return 1;
}

/* Join table rows onto target rows by integer id; see replay.h. */
int
ReplayJoinById(const ReplayMatrix *target, const ReplayMatrix *table,
			   double *out, char *err, size_t errlen)
{
	long long  *ids;
	int			i,
				j;

	if (target == NULL || table == NULL || out == NULL ||
		target->row_ids == NULL || table->row_ids == NULL)
	{
		ReplaySetErr(err, errlen, "join: missing matrix");
		return REPLAY_BAD_INPUT;
	}
	ids = malloc(sizeof(long long) * (size_t) (table->rows > 0 ? table->rows : 1));
	if (ids == NULL)
	{
		ReplaySetErr(err, errlen, "out of memory");
		return REPLAY_NO_MEMORY;
	}
	for (j = 0; j < table->rows; j++)
		if (!ParseId(table->row_ids[j], &ids[j]))
		{
			ReplaySetErr(err, errlen, "join: row id \"%.40s\" is not an integer",
				   table->row_ids[j]);
			free(ids);
			return REPLAY_BAD_INPUT;
		}
	for (i = 0; i < target->rows; i++)
	{
		long long	id;
		int			found = -1;

		if (!ParseId(target->row_ids[i], &id))
		{
			ReplaySetErr(err, errlen, "join: row id \"%.40s\" is not an integer",
				   target->row_ids[i]);
			free(ids);
			return REPLAY_BAD_INPUT;
		}
		for (j = 0; j < table->rows; j++)
			if (ids[j] == id)
			{
				found = j;
				break;
			}
		if (found < 0)
		{
			ReplaySetErr(err, errlen, "join: row id %lld has no match", id);
			free(ids);
			return REPLAY_BAD_INPUT;
		}
		memcpy(out + (size_t) i * table->cols,
			   table->data + (size_t) found * table->cols,
			   sizeof(double) * table->cols);
	}
	free(ids);
	return REPLAY_OK;
}
