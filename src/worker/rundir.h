/*-------------------------------------------------------------------------
 *
 * rundir.h
 *	  Run directories (src/worker/rundir.c).
 *
 * IDENTIFICATION
 *	  src/worker/rundir.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_RUNDIR_H
#define EASEML_RUNDIR_H

extern char *RunBaseDirectory(void);
extern char *RunDirectory(int64 run_id);
extern int	RunBaseCreate(void);
extern int	RunDirSweep(bool extension_ready, const int64 *keep, int nkeep);

#endif							/* EASEML_RUNDIR_H */
