/*-------------------------------------------------------------------------
 *
 * rundir.c
 *	  Run directories: <easeml.run_directory>/<run id>, one per run: the
 *	  trainer's log and its scratch files (src/core/trainer_protocol.h; results
 *	  travel through the database).
 *
 * A directory outlives its trainer so that runs.log_path can be read
 * later; it is removed once its run is gone (its task was dropped, or the
 * extension was), by a sweep the scheduler runs at start, when it notices
 * such a deletion, and every hour.
 *
 * The sweep deletes, so it trusts neither the setting (checked by
 * src/module/rundir_setting.c) nor the directory's contents: it sweeps only
 * a base directory holding EASEML_RUN_DIRECTORY_MARKER, which the
 * scheduler writes when it creates the base directory (an older version's
 * default directory, $PGDATA/easeml_runs, is adopted; any other directory
 * needs the administrator to create the file), and in it removes only
 * numeric directories, not links, that hold a trainer.log (the launcher
 * creates it in every run directory, in this version and older ones).
 *
 * IDENTIFICATION
 *	  src/worker/rundir.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "core/trainer_protocol.h"
#include "module/easeml.h"
#include "module/rundir_setting.h"
#include "miscadmin.h"
#include "rundir.h"
#include "storage/fd.h"

/* what the marker says to whoever finds it */
#define MARKER_TEXT \
	"The easeml scheduler created this directory for its runs' directories\n" \
	"(easeml.run_directory) and removes those of runs that no longer exist.\n"

/* The directory holding every run's directory (relative to PGDATA). */
char *
RunBaseDirectory(void)
{
	if (is_absolute_path(easeml_run_directory))
		return pstrdup(easeml_run_directory);
	return psprintf("%s/%s", DataDir, easeml_run_directory);
}

/* Directory of one run: <run_directory>/<run_id>. */
char *
RunDirectory(int64 run_id)
{
	return psprintf("%s/%lld", RunBaseDirectory(), (long long) run_id);
}

/* Write the marker into base; 0 or an errno. */
static int
WriteMarker(const char *base)
{
	char	   *path = psprintf("%s/%s", base, EASEML_RUN_DIRECTORY_MARKER);
	int			fd;
	int			rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, S_IRUSR | S_IWUSR);
	if (fd < 0)
		rc = (errno == EEXIST) ? 0 : errno;
	else
	{
		errno = 0;
		if (write(fd, MARKER_TEXT, strlen(MARKER_TEXT)) != (ssize_t) strlen(MARKER_TEXT))
			rc = errno ? errno : ENOSPC;
		if (close(fd) != 0 && rc == 0)
			rc = errno;
		if (rc != 0)
			(void) unlink(path);
	}
	pfree(path);
	return rc;
}

/*
 * Create the base directory (mode 0700, and its parents) with its marker
 * when it does not exist; an existing one is left as it is (RunDirSweep
 * decides whether it is easeml's).  Returns 0 or an errno.
 */
int
RunBaseCreate(void)
{
	char	   *base = RunBaseDirectory();
	struct stat st;
	int			rc = 0;

	if (stat(base, &st) == 0)
		rc = 0;
	else if (errno != ENOENT)
		rc = errno;
	else if (pg_mkdir_p(base, S_IRWXU) != 0 && errno != EEXIST)
		rc = errno;
	else
		rc = WriteMarker(base);
	pfree(base);
	return rc;
}

/*
 * Whether base is easeml's to sweep: it holds the marker, or it is the
 * default directory in the data directory, a real directory that only
 * easeml names so (older versions made it without the marker; it gets one
 * now).  Anything else is left alone, with one WARNING per directory per
 * scheduler, since whatever else lives there may be numbered too.
 */
static bool
RunBaseIsOurs(const char *base)
{
	static char warned[MAXPGPATH] = "";
	char	   *marker = psprintf("%s/%s", base, EASEML_RUN_DIRECTORY_MARKER);
	struct stat st;
	bool		ours = false;

	if (stat(marker, &st) == 0 && S_ISREG(st.st_mode))
		ours = true;
	else if (strcmp(easeml_run_directory, EASEML_RUN_DIRECTORY_DEFAULT) == 0 &&
			 lstat(base, &st) == 0 && S_ISDIR(st.st_mode))
	{
		int			rc = WriteMarker(base);

		if (rc == 0)
		{
			ereport(LOG,
					(errmsg("easeml: marked \"%s\" as easeml's run directory (file \"%s\")",
							base, EASEML_RUN_DIRECTORY_MARKER)));
			ours = true;
		}
		else
			ereport(WARNING,
					(errmsg("easeml: could not write \"%s\": %s", marker, strerror(rc)),
					 errdetail("The directories of gone runs are not removed until it exists.")));
	}
	else if (strcmp(warned, base) != 0)
	{
		strlcpy(warned, base, sizeof(warned));
		ereport(WARNING,
				(errmsg("easeml: not removing the directories of gone runs in \"%s\": it has no file \"%s\"",
						base, EASEML_RUN_DIRECTORY_MARKER),
				 errdetail("easeml removes them only in a run directory it created, and it did not create this one."),
				 errhint("If nothing but easeml keeps files in this directory, create the file \"%s\" to have them removed.",
						 marker)));
	}
	pfree(marker);
	return ours;
}

/*
 * Whether base/name is a run's directory: a directory, not a link, that
 * holds a regular file trainer.log (the launcher creates it before the
 * trainer starts; older versions did too).
 */
static bool
LooksLikeRun(const char *base, const char *name)
{
	char	   *dir = psprintf("%s/%s", base, name);
	char	   *log = psprintf("%s/%s", dir, EASEML_FILE_LOG);
	struct stat st;
	bool		run;

	run = lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		lstat(log, &st) == 0 && S_ISREG(st.st_mode);
	pfree(log);
	pfree(dir);
	return run;
}

/*
 * Remove the directories of runs that no longer exist: every run directory
 * when the extension is not installed, else those whose run is not in
 * easeml.runs.  keep[] lists runs the scheduler still tracks.  Only in a
 * base directory that is easeml's (RunBaseIsOurs), and only directories
 * that look like runs' (LooksLikeRun).  Returns how many were removed.
 * Call outside a transaction.
 */
int
RunDirSweep(bool extension_ready, const int64 *keep, int nkeep)
{
	char	   *base = RunBaseDirectory();
	DIR		   *dir;
	struct dirent *de;
	int64	   *ids;
	int			n = 0;
	int			cap = 64;
	int			removed = 0;

	dir = AllocateDir(base);
	if (dir == NULL)
		return 0;				/* nothing was ever run here */
	if (!RunBaseIsOurs(base))
	{
		FreeDir(dir);
		return 0;
	}
	ids = palloc(sizeof(int64) * cap);
	while ((de = ReadDirExtended(dir, base, LOG)) != NULL)
	{
		char	   *end;
		long long	id = strtoll(de->d_name, &end, 10);
		bool		kept = false;

		/* only names the scheduler makes: positive decimal run ids */
		if (*end != '\0' || id <= 0 || de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		for (int i = 0; i < nkeep && !kept; i++)
			kept = (keep[i] == id);
		if (kept || !LooksLikeRun(base, de->d_name))
			continue;
		if (n == cap)
		{
			cap *= 2;
			ids = repalloc(ids, sizeof(int64) * cap);
		}
		ids[n++] = id;
	}
	FreeDir(dir);

	if (n > 0 && extension_ready)
	{
		CatalogBegin("easeml: sweeping run directories");
		n = CatalogGoneRuns(ids, n);
		CatalogCommit();
	}
	for (int i = 0; i < n; i++)
	{
		char	   *path = psprintf("%s/%lld", base, (long long) ids[i]);

		if (rmtree(path, true))
			removed++;
		pfree(path);
	}
	if (removed > 0)
		ereport(LOG,
				(errmsg("easeml: removed %d run director%s whose run no longer exists",
						removed, removed == 1 ? "y" : "ies")));
	return removed;
}
