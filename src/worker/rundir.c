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
 * IDENTIFICATION
 *	  src/worker/rundir.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdlib.h>

#include "catalog.h"
#include "module/easeml.h"
#include "miscadmin.h"
#include "rundir.h"
#include "storage/fd.h"

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

/*
 * Remove the directories of runs that no longer exist: every run directory
 * when the extension is not installed, else those whose run is not in
 * easeml.runs.  keep[] lists runs the scheduler still tracks.  Returns how
 * many were removed.  Call outside a transaction.
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
		if (kept)
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
