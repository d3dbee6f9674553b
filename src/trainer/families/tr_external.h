/*-------------------------------------------------------------------------
 *
 * tr_external.h
 *	  Custom trainers: candidates trained by an external command
 *	  (src/trainer/families/tr_external.c).
 *
 * IDENTIFICATION
 *	  src/trainer/families/tr_external.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TR_EXTERNAL_H
#define EASEML_TR_EXTERNAL_H

#include "trainer/trainer.h"

typedef struct TrExternalRun
{
	char	   *const *command; /* the admin's argv, NULL-terminated */
	json_object *params;		/* the candidate's params, sent in the header */
	uint64_t	seed;			/* the task's seed */
	int			threads;		/* CPU threads the command may use */
	const char *dir;			/* working directory (the run directory) */
	const char *artifact_path;	/* where the command may leave an artifact */
	TrProgressFn progress;		/* may be NULL */
	void	   *progress_arg;
	volatile sig_atomic_t *cancel;	/* may be NULL */
	int			grace_ms;		/* after a cancel, SIGTERM to SIGKILL; < 0:
								 * TR_EXTERNAL_GRACE_MS */
	int			kill_group;		/* 1: SIGKILL goes to the process group the
								 * trainer leads and the command shares,
								 * the trainer with it; 0: to the command */
} TrExternalRun;

#define TR_EXTERNAL_GRACE_MS 5000	/* easeml.cancel_grace's default */

extern int	TrRunExternal(const TrTable *tab, const TrPrepOptions *opt,
						  const TrExternalRun *run, TrResult *res,
						  json_object **metrics);

#endif							/* EASEML_TR_EXTERNAL_H */
