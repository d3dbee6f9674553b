/*-------------------------------------------------------------------------
 *
 * rundir_setting.c
 *	  The check of easeml.run_directory.  The scheduler removes the numeric
 *	  directories of gone runs there (src/worker/rundir.c), and numeric
 *	  directories are what PostgreSQL keeps its databases in (base/<oid>,
 *	  a tablespace's PG_<version>/<oid>): the run directory must never be,
 *	  hold or lie in anything PostgreSQL owns.
 *
 * Refused: an empty value; the data directory and any directory above it;
 * inside the data directory anything but one directory directly in it,
 * and there a name PostgreSQL uses (pg_*, base, global, log, ...) or an
 * existing entry easeml did not make (no marker file, the default name
 * excepted: older versions made it without one); a tablespace's location,
 * anything in it and any directory above it.  Each rule is applied to the
 * path as written (relative to the data directory, "." and ".." applied)
 * and as resolved (symbolic links followed where the path exists), so
 * neither a link such as pg_wal nor a link to base gets through.
 *
 * IDENTIFICATION
 *	  src/module/rundir_setting.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/syslogger.h"
#include "rundir_setting.h"

/* room for "/<run id>/<file>" after the base (src/worker/supervisor.c) */
#define RUNDIR_MAX_LEN	(MAXPGPATH - 64)

typedef enum PathRelation
{
	PATH_APART,
	PATH_SAME,
	PATH_INSIDE					/* the first lies inside the second */
} PathRelation;

/*
 * Normalise an absolute path: empty and "." components dropped, ".."
 * removing the one before (never above the root).  With follow, each
 * prefix that exists is replaced by its realpath() first, so ".." after a
 * symbolic link goes where the kernel goes, and what is missing is taken
 * as written, as pg_mkdir_p will create it.  False when too long.
 */
static bool
NormalizePath(const char *path, bool follow, char *out)
{
	char		real[PATH_MAX];
	size_t		n = 0;
	const char *p = path;

	Assert(is_absolute_path(path));
	out[0] = '\0';
	while (*p != '\0')
	{
		const char *start;
		size_t		len;

		while (*p == '/')
			p++;
		start = p;
		while (*p != '\0' && *p != '/')
			p++;
		len = p - start;
		if (len == 0 || (len == 1 && start[0] == '.'))
			continue;
		if (len == 2 && start[0] == '.' && start[1] == '.')
		{
			/* out holds no link here: dropping its last name is exact */
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		if (n + 1 + len >= RUNDIR_MAX_LEN)
			return false;
		out[n++] = '/';
		memcpy(out + n, start, len);
		n += len;
		out[n] = '\0';
		if (follow && realpath(out, real) != NULL)
		{
			if (strlen(real) >= RUNDIR_MAX_LEN)
				return false;
			strcpy(out, real);
			n = strlen(out);
			if (n == 1)			/* the root: "/" */
				n = 0;
			out[n] = '\0';
		}
	}
	if (n == 0)
		strcpy(out, "/");
	return true;
}

/* Whether path is dir, lies inside it, or neither. */
static PathRelation
RelatePaths(const char *path, const char *dir)
{
	size_t		len = strlen(dir);

	if (strcmp(path, dir) == 0)
		return PATH_SAME;
	if (strcmp(dir, "/") == 0)
		return PATH_INSIDE;
	if (strncmp(path, dir, len) == 0 && path[len] == '/')
		return PATH_INSIDE;
	return PATH_APART;
}

/* A name PostgreSQL uses directly in the data directory, now or later. */
static bool
PostgresName(const char *name)
{
	static const char *const names[] = {
		"base", "global", "log", "postgresql.conf", "postgresql.auto.conf",
		"postmaster.pid", "postmaster.opts", "current_logfiles",
		"backup_label", "backup_label.old", "tablespace_map",
		"tablespace_map.old", "standby.signal", "recovery.signal",
		"recovery.conf", NULL
	};

	/* pg_wal, pg_tblspc, pg_hba.conf, PG_VERSION, ... */
	if (pg_strncasecmp(name, "pg_", 3) == 0)
		return true;
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	/* the server log's directory when it is in the data directory */
	return Log_directory != NULL && strcmp(name, Log_directory) == 0;
}

static void
SetDefaultHint(void)
{
	GUC_check_errhint("Use a directory of easeml's own: a new name directly in the data directory, "
					  "such as the default \"%s\", or an absolute path outside the data directory "
					  "and every tablespace.", EASEML_RUN_DIRECTORY_DEFAULT);
}

/* Say where value resolved to, when that is not what it says. */
static void
SetResolvedDetail(const char *value, const char *resolved)
{
	if (strcmp(value, resolved) != 0)
		GUC_check_errdetail("It resolves to \"%s\".", resolved);
}

/*
 * The rules of the data directory (datadir, written or resolved like dir),
 * on dir, the setting's value written or resolved.
 */
static bool
CheckDataDir(const char *value, const char *dir, const char *datadir)
{
	const char *name;
	char		entry[MAXPGPATH];
	char		marker[MAXPGPATH];
	struct stat st;

	if (RelatePaths(dir, datadir) == PATH_SAME ||
		RelatePaths(datadir, dir) == PATH_INSIDE)
	{
		GUC_check_errmsg("easeml.run_directory \"%s\" is the data directory or a directory above it",
						 value);
		SetResolvedDetail(value, dir);
		SetDefaultHint();
		return false;
	}
	if (RelatePaths(dir, datadir) != PATH_INSIDE)
		return true;

	name = dir + strlen(datadir) + 1;
	if (strchr(name, '/') != NULL)
	{
		GUC_check_errmsg("easeml.run_directory \"%s\" is inside the data directory but not directly in it",
						 value);
		GUC_check_errdetail("In the data directory only a directory of easeml's own, directly in it, may be the run directory.");
		SetDefaultHint();
		return false;
	}
	if (PostgresName(name))
	{
		GUC_check_errmsg("easeml.run_directory \"%s\" is PostgreSQL's \"%s\" in the data directory",
						 value, name);
		SetResolvedDetail(value, dir);
		SetDefaultHint();
		return false;
	}

	/* an entry someone else made; older versions made the default unmarked */
	snprintf(entry, sizeof(entry), "%s/%s", datadir, name);
	snprintf(marker, sizeof(marker), "%s/%s", entry, EASEML_RUN_DIRECTORY_MARKER);
	if (strcmp(name, EASEML_RUN_DIRECTORY_DEFAULT) != 0 &&
		lstat(entry, &st) == 0 &&
		!(stat(marker, &st) == 0 && S_ISREG(st.st_mode)))
	{
		GUC_check_errmsg("easeml.run_directory \"%s\" is \"%s\" in the data directory, which exists and is not easeml's",
						 value, name);
		GUC_check_errdetail("easeml removes numeric directories in its run directory; in the data directory it uses only one it made, which holds the file \"%s\".",
							EASEML_RUN_DIRECTORY_MARKER);
		GUC_check_errhint("If easeml made \"%s\" and nothing else keeps files there, create the file \"%s\" first.",
						  entry, marker);
		return false;
	}
	return true;
}

/*
 * The rules of the tablespaces: the resolved dir is none's location, lies
 * in none and holds none.  Reads the links in pg_tblspc.
 */
static bool
CheckTablespaces(const char *value, const char *dir)
{
	char		links[MAXPGPATH];
	DIR		   *d;
	struct dirent *de;
	bool		ok = true;

	snprintf(links, sizeof(links), "%s/pg_tblspc", DataDir);
	d = opendir(links);
	if (d == NULL)
		return true;
	while (ok && (de = readdir(d)) != NULL)
	{
		char		link[MAXPGPATH];
		char		location[MAXPGPATH];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(link, sizeof(link), "%s/%s", links, de->d_name);
		if (!NormalizePath(link, true, location))
			continue;
		if (RelatePaths(dir, location) != PATH_APART ||
			RelatePaths(location, dir) == PATH_INSIDE)
		{
			GUC_check_errmsg("easeml.run_directory \"%s\" overlaps the location of tablespace %s, \"%s\"",
							 value, de->d_name, location);
			SetResolvedDetail(value, dir);
			SetDefaultHint();
			ok = false;
		}
	}
	closedir(d);
	return ok;
}

/*
 * Check hook of easeml.run_directory (relative paths are under the data
 * directory).  The built-in default is always accepted, so that the server
 * starts whatever lies in the data directory; the scheduler's own rules
 * still hold for it (src/worker/rundir.c).
 */
bool
CheckRunDirectory(char **newval, void **extra, GucSource source)
{
	const char *value = *newval;
	char		path[MAXPGPATH];
	char		written[MAXPGPATH];
	char		resolved[MAXPGPATH];
	char		datadir_written[MAXPGPATH];
	char		datadir_resolved[MAXPGPATH];
	size_t		len;

	if (value == NULL)
		return true;			/* only before the default is set */
	if (value[0] == '\0')
	{
		GUC_check_errmsg("easeml.run_directory must not be empty");
		SetDefaultHint();
		return false;
	}
	if (source == PGC_S_DEFAULT && strcmp(value, EASEML_RUN_DIRECTORY_DEFAULT) == 0)
		return true;
	/* no data directory yet: checked again where there is one */
	if (DataDir == NULL)
		return true;

	if (is_absolute_path(value))
		len = strlcpy(path, value, sizeof(path));
	else
		len = snprintf(path, sizeof(path), "%s/%s", DataDir, value);
	if (len >= RUNDIR_MAX_LEN ||
		!NormalizePath(path, false, written) ||
		!NormalizePath(path, true, resolved) ||
		!NormalizePath(DataDir, false, datadir_written) ||
		!NormalizePath(DataDir, true, datadir_resolved))
	{
		GUC_check_errmsg("easeml.run_directory \"%s\" is too long", value);
		GUC_check_errdetail("The run directory's path may have at most %d bytes.", RUNDIR_MAX_LEN - 1);
		return false;
	}

	return CheckDataDir(value, written, datadir_written) &&
		CheckDataDir(value, resolved, datadir_resolved) &&
		CheckTablespaces(value, resolved);
}
