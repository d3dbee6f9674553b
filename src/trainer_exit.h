/*-------------------------------------------------------------------------
 *
 * trainer_exit.h
 *	  Exit statuses of easeml-trainer --run, shared by the trainer
 *	  (src/trainer/tr_live.c) and the scheduler that records them
 *	  (src/scheduler.c, src/supervisor.c).  Plain C: no server headers.
 *
 * IDENTIFICATION
 *	  src/trainer_exit.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TRAINER_EXIT_H
#define EASEML_TRAINER_EXIT_H

/* the run succeeded: metrics.json is in the run directory */
#define EASEML_EXIT_OK			0

/* this candidate failed (error.txt says why); the task goes on */
#define EASEML_EXIT_FAILED		1

/* bad command line */
#define EASEML_EXIT_USAGE		2

/*
 * The task's rows could not be read: the server raised an error reading
 * its source (a table or column dropped, a privilege revoked, the view's
 * code failing).  Every other candidate would fail the same way, so the
 * scheduler marks the task failed with the reason.
 */
#define EASEML_EXIT_SOURCE		3

/*
 * The model row cannot be trained by this trainer (unknown family, bad
 * parameters): no task is to blame, so the scheduler disables the model.
 * easeml-trainer --check-model answers the same way.
 */
#define EASEML_EXIT_MODEL		4

/*
 * The database connection was lost (the server is shutting down or
 * restarting): nobody's fault, so the run is recorded interrupted and its
 * candidate is trained again.
 */
#define EASEML_EXIT_DISCONNECTED 75

#endif							/* EASEML_TRAINER_EXIT_H */
