/*-------------------------------------------------------------------------
 *
 * sql_runlog.c
 *	  easeml.run_log(run, max_bytes): the end of a run's trainer log, for
 *	  the run's tenant (docs/results.md).
 *
 * The log lives in the run's directory on the server, which only the
 * server's OS user can read.  The caller's ownership of the run is checked
 * in the statement that looks it up, run as the bootstrap superuser (as in
 * src/sql/sql_tenant.c: the function must know its caller, so it cannot be
 * SECURITY DEFINER); the file is then read here, at most max_bytes of its
 * end, from the run's own directory (never from a path stored in the
 * catalog).  Bytes that are not valid in the database encoding, which a
 * custom trainer may print, become '?'.
 *
 * IDENTIFICATION
 *	  src/sql/sql_runlog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "module/easeml.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "worker/rundir.h"
#include "core/trainer_protocol.h"
#include "utils/builtins.h"

#define RUN_LOG_MAX_BYTES	(1024 * 1024)

/* Replace bytes that are not valid in the database encoding with '?'. */
static void
MakeValidText(char *s, int len)
{
	int			enc = GetDatabaseEncoding();
	int			pos = 0;

	while (pos < len)
	{
		int			ok = pg_encoding_verifymbstr(enc, s + pos, len - pos);

		pos += ok;
		if (pos < len)
			s[pos++] = '?';
	}
}

/*
 * Read at most max_bytes of the end of a file; when the file is longer,
 * the text starts after the first line break in what was read.  Sets
 * *missing when there is no such file.
 */
static text *
ReadTail(const char *path, int max_bytes, bool *missing)
{
	int			fd = open(path, O_RDONLY | PG_BINARY, 0);
	struct stat st;
	off_t		start = 0;
	char	   *buf;
	ssize_t		n;
	char	   *from;
	text	   *result;

	*missing = false;
	if (fd < 0)
	{
		if (errno == ENOENT)
		{
			*missing = true;
			return NULL;
		}
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open the run's log \"%s\": %m", path)));
	}
	if (fstat(fd, &st) != 0)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat the run's log \"%s\": %m", path)));
	}
	if (st.st_size > max_bytes)
		start = st.st_size - max_bytes;
	buf = palloc(max_bytes + 1);
	n = pread(fd, buf, max_bytes, start);
	close(fd);
	if (n < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read the run's log \"%s\": %m", path)));
	buf[n] = '\0';
	from = buf;
	if (start > 0)
	{
		char	   *nl = memchr(buf, '\n', n);

		if (nl != NULL)
			from = nl + 1;
	}
	n -= from - buf;
	/* a NUL byte cannot be in a text value either */
	for (ssize_t i = 0; i < n; i++)
		if (from[i] == '\0')
			from[i] = '?';
	MakeValidText(from, (int) n);
	result = cstring_to_text_with_len(from, (int) n);
	pfree(buf);
	return result;
}

/* easeml.run_log(run bigint, max_bytes int DEFAULT 65536) */
PG_FUNCTION_INFO_V1(easeml_run_log);

Datum
easeml_run_log(PG_FUNCTION_ARGS)
{
	int64		run_id;
	int32		max_bytes;
	char	   *status;
	char	   *path;
	bool		missing;
	text	   *log;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("run must not be NULL"),
				 errhint("SELECT id, status FROM easeml.runs lists your runs.")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("max_bytes must not be NULL"),
				 errhint("Leave it out for the last 65536 bytes.")));
	run_id = PG_GETARG_INT64(0);
	max_bytes = PG_GETARG_INT32(1);
	if (max_bytes < 1 || max_bytes > RUN_LOG_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_bytes must be between 1 and %d, not %d",
						RUN_LOG_MAX_BYTES, max_bytes),
				 errhint("The function returns the end of the log; ask for at most 1 MB.")));

	status = EasemlOwnRunStatus(run_id);
	if (status == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("run " INT64_FORMAT " does not exist", run_id),
				 errhint("SELECT id, status FROM easeml.runs lists your runs.")));

	path = psprintf("%s/%s", RunDirectory(run_id), EASEML_FILE_LOG);
	log = ReadTail(path, max_bytes, &missing);
	if (missing)
	{
		if (strcmp(status, "queued") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("run " INT64_FORMAT " has no log yet: it is queued", run_id),
					 errhint("A run's log starts when its trainer does.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("run " INT64_FORMAT " has no log", run_id),
				 errdetail("It is %s; its trainer never started on this server, or its run directory was removed.", status),
				 errhint("runs.error says why a run ended.")));
	}
	PG_RETURN_TEXT_P(log);
}
