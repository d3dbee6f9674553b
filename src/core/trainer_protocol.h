/*-------------------------------------------------------------------------
 *
 * trainer_protocol.h
 *	  The contract between the server (src/worker/launch.c, src/worker/results.c,
 *	  src/worker/supervisor.c, src/worker/devices.c) and the easeml-trainer executable (src/trainer/): its
 *	  command lines, the environment it is given, what it reports through
 *	  the database, the files of its run directory and its exit statuses.  Both sides include this
 *	  header and nothing else defines these names.
 *
 * Plain C: no PostgreSQL or trainer headers, so the server, the trainer and
 * the tests can all include it.  docs/architecture.md ("the trainer's
 * contract") and docs/devices.md describe the protocol in words.
 *
 * IDENTIFICATION
 *	  src/core/trainer_protocol.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TRAINER_PROTOCOL_H
#define EASEML_TRAINER_PROTOCOL_H

/*
 * Version of this contract; the probe reports it, and the scheduler
 * ignores a probe that speaks another one.
 */
#define EASEML_PROTOCOL_VERSION		1

/* ---- command lines -------------------------------------------------------
 *
 *	 easeml-trainer --run <id> --run-dir <dir>	 train one run
 *	 easeml-trainer --probe						 the devices, one JSON object
 *	 easeml-trainer --check-model FAMILY ...	 can it train this model row?
 */
#define EASEML_ARG_RUN				"--run"
#define EASEML_ARG_RUN_DIR			"--run-dir"
#define EASEML_ARG_PROBE			"--probe"
#define EASEML_ARG_LOAD_ONLY		"--load-only"	/* benchmark: stop after loading */
#define EASEML_ARG_CHECK_MODEL		"--check-model"

/* ---- environment of a training run --------------------------------------- */
#define EASEML_ENV_CONNINFO			"EASEML_CONNINFO"	/* libpq connection string */
#define EASEML_ENV_SCHEDULER_PID	"EASEML_SCHEDULER_PID"	/* exit if the parent is not this */
#define EASEML_ENV_RUN_ID			"EASEML_RUN_ID"
#define EASEML_ENV_RUN_TOKEN		"EASEML_RUN_TOKEN"	/* proves it is the run's trainer */
#define EASEML_ENV_DEVICE			"EASEML_DEVICE" /* device name: "cpu", "cuda:0" */
#define EASEML_ENV_DEVICE_KIND		"EASEML_DEVICE_KIND"	/* EASEML_KIND_CPU or _CUDA */
#define EASEML_ENV_TIME_LIMIT		"EASEML_TIME_LIMIT" /* seconds, 0 = none */
#define EASEML_ENV_MEMORY_LIMIT		"EASEML_MEMORY_LIMIT"	/* bytes the trainer may
															 * allocate (its
															 * RLIMIT_DATA), 0 = none */
#define EASEML_ENV_CUDA_VISIBLE		"CUDA_VISIBLE_DEVICES"	/* the run's GPU, or empty */
#define EASEML_ENV_CANCEL_GRACE		"EASEML_CANCEL_GRACE"	/* ms between SIGTERM and
															 * SIGKILL
															 * (easeml.cancel_grace) */

/* Device kinds, as in easeml.devices.kind and easeml.models.device_kinds. */
#define EASEML_KIND_CPU				"cpu"
#define EASEML_KIND_CUDA			"cuda"

/* ---- custom trainers (docs/devices.md) -------------------------------------
 * The built-in trainer starts the command of a candidate of family
 * "external" with these in its environment (besides the device ones
 * above), never with the database connection string, and writes the data
 * on its stdin in format EASEML_DATA_FORMAT.
 */
#define EASEML_FAMILY_EXTERNAL		"external"
#define EASEML_DATA_FORMAT			"easeml-data-1"
#define EASEML_ENV_SEED				"EASEML_SEED"	/* the task's seed */
#define EASEML_ENV_THREADS			"EASEML_THREADS"	/* CPU threads it may use */
#define EASEML_ENV_ARTIFACT			"EASEML_ARTIFACT_PATH"	/* where it may write one */

/* ---- what the trainer reports through the database -------------------------
 * It proves it is the run's trainer (easeml_trainer.attach(run, token) with
 * EASEML_RUN_TOKEN), then reports progress (easeml_trainer.progress), its
 * artifact (easeml_trainer.artifact) and, last, how it ended
 * (easeml_trainer.result(run, exit status, metrics JSON or NULL, error or
 * NULL)).  Nothing travels through files: on a cluster the trainer runs on
 * another machine (docs/scale-out.md).
 */

/* ---- files in the run directory (scratch space on the trainer's machine) -- */
#define EASEML_FILE_LOG				"trainer.log"	/* local: stdout and stderr */
#define EASEML_FILE_ARTIFACT		"artifact.bin"	/* a custom trainer's artifact */
#define EASEML_FILE_VALIDATION_ROWS "validation_rows.txt"	/* the stored model's
															 * validation rows */
#define EASEML_FILE_PROBE			"probe.json"	/* the probe's output */
#define EASEML_MAX_RESULT_FILE		(1024 * 1024)	/* longer files are ignored */

/* ---- exit statuses --------------------------------------------------------- */

/* the run succeeded: it reported its metrics */
#define EASEML_EXIT_OK				0

/* this candidate failed (its reported error says why); the task goes on */
#define EASEML_EXIT_FAILED			1

/* bad command line */
#define EASEML_EXIT_USAGE			2

/*
 * The task's rows could not be read: the server raised an error reading
 * its source (a table or column dropped, a privilege revoked, the view's
 * code failing).  Every other candidate would fail the same way, so the
 * scheduler marks the task failed with the reason.
 */
#define EASEML_EXIT_SOURCE			3

/*
 * The model row cannot be trained by this trainer (unknown family, bad
 * parameters): no task is to blame, so the scheduler disables the model.
 * easeml-trainer --check-model answers the same way.
 */
#define EASEML_EXIT_MODEL			4

/*
 * The run's device ran out of memory: the run fails with that reason and
 * the scheduler no longer places this candidate of this task on that
 * device; it may run on another one.  A custom trainer's command exits
 * with this status for the same reason.
 */
#define EASEML_EXIT_DEVICE_OOM		5

/*
 * The run's device could not be used at all (no driver, a device lost, a
 * CUDA error): the scheduler takes the device out of placement until a new
 * probe finds it, and the candidate is placed elsewhere.
 */
#define EASEML_EXIT_DEVICE_UNAVAILABLE 6

/*
 * The trainer could not allocate memory under its cap
 * (EASEML_ENV_MEMORY_LIMIT, easeml.trainer_memory_limit): the run fails
 * with the reason "memory limit", and its candidate is not tried again for
 * the task.  A custom trainer's command, which inherits the cap, exits with
 * this status for the same reason.
 */
#define EASEML_EXIT_MEMORY_LIMIT	7

/*
 * The database connection was lost (the server is shutting down or
 * restarting): nobody's fault, so the run is recorded interrupted and its
 * candidate is trained again.
 */
#define EASEML_EXIT_DISCONNECTED	75

#endif							/* EASEML_TRAINER_PROTOCOL_H */
