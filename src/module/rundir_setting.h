/*-------------------------------------------------------------------------
 *
 * rundir_setting.h
 *	  easeml.run_directory: where it may point (src/module/rundir_setting.c)
 *	  and the marker that makes a directory easeml's (src/worker/rundir.c).
 *
 * IDENTIFICATION
 *	  src/module/rundir_setting.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_RUNDIR_SETTING_H
#define EASEML_RUNDIR_SETTING_H

#include "utils/guc.h"

/* the default, relative to the data directory */
#define EASEML_RUN_DIRECTORY_DEFAULT	"easeml_runs"

/*
 * The file the scheduler writes into a run directory it creates: old runs'
 * directories are removed only where it is.
 */
#define EASEML_RUN_DIRECTORY_MARKER		".easeml_run_directory"

extern bool CheckRunDirectory(char **newval, void **extra, GucSource source);

#endif							/* EASEML_RUNDIR_SETTING_H */
