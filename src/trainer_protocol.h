/*-------------------------------------------------------------------------
 *
 * trainer_protocol.h
 *	  The contract between the scheduler (src/scheduler.c, src/supervisor.c)
 *	  and the easeml-trainer executable (src/trainer/): its command line,
 *	  the environment it is given, the files it leaves in its run directory
 *	  and its exit codes.  Both sides include this header and nothing else
 *	  defines these names.
 *
 * Plain C: no PostgreSQL or trainer headers, so the server, the trainer and
 * the tests can all include it.  docs/architecture.md ("the trainer's
 * contract") and docs/devices.md describe the protocol in words.
 *
 * IDENTIFICATION
 *	  src/trainer_protocol.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_TRAINER_PROTOCOL_H
#define EASEML_TRAINER_PROTOCOL_H

/*
 * Version of this contract; the probe reports it, and the scheduler
 * ignores a probe that speaks another one.
 */
#define TRP_VERSION				1

/* ---- command line --------------------------------------------------------
 *
 *	 easeml-trainer --run <id> --run-dir <dir>	 train one run
 *	 easeml-trainer --probe						 print the devices, one JSON object
 */
#define TRP_ARG_RUN				"--run"
#define TRP_ARG_RUN_DIR			"--run-dir"
#define TRP_ARG_PROBE			"--probe"
#define TRP_ARG_LOAD_ONLY		"--load-only"	/* benchmark: stop after loading */

/* ---- environment of a training run --------------------------------------- */
#define TRP_ENV_CONNINFO		"EASEML_CONNINFO"	/* libpq connection string */
#define TRP_ENV_SCHEDULER_PID	"EASEML_SCHEDULER_PID"	/* exit if the parent is not this */
#define TRP_ENV_RUN_ID			"EASEML_RUN_ID"
#define TRP_ENV_DEVICE			"EASEML_DEVICE" /* device name: "cpu", "cuda:0" */
#define TRP_ENV_DEVICE_KIND		"EASEML_DEVICE_KIND"	/* TRP_KIND_CPU or TRP_KIND_CUDA */
#define TRP_ENV_TIME_LIMIT		"EASEML_TIME_LIMIT" /* seconds, 0 = none */
#define TRP_ENV_CUDA_VISIBLE	"CUDA_VISIBLE_DEVICES"	/* the run's GPU, or empty */

/* Device kinds, as in easeml.devices.kind and easeml.models.device_kinds. */
#define TRP_KIND_CPU			"cpu"
#define TRP_KIND_CUDA			"cuda"

/* ---- environment of a custom trainer's command (docs/devices.md) ----------
 * The built-in trainer sets these for the command it starts; the command
 * never gets the database connection string.
 */
#define TRP_ENV_SEED			"EASEML_SEED"	/* the task's seed */
#define TRP_ENV_THREADS			"EASEML_THREADS"	/* CPU threads it may use */
#define TRP_ENV_ARTIFACT		"EASEML_ARTIFACT_PATH"	/* where it may write one */

/* the first line of the data on the command's stdin names its format */
#define TRP_DATA_FORMAT			"easeml-data-1"
/* easeml.models.family of the candidates trained by a command */
#define TRP_FAMILY_EXTERNAL		"external"

/* ---- files in the run directory ------------------------------------------ */
#define TRP_FILE_LOG			"trainer.log"	/* stdout and stderr */
#define TRP_FILE_METRICS		"metrics.json"	/* success: one JSON object */
#define TRP_FILE_ERROR			"error.txt" /* failure: the reason, text */
#define TRP_FILE_ARTIFACT		"artifact.bin"	/* a custom trainer's artifact */
#define TRP_FILE_PROBE			"probe.json"	/* the probe's output */
#define TRP_MAX_RESULT_FILE		(1024 * 1024)	/* longer files are ignored */

/* ---- exit codes ---------------------------------------------------------- */
#define TRP_EXIT_OK				0	/* metrics.json written */
#define TRP_EXIT_ERROR			1	/* error.txt written */
#define TRP_EXIT_USAGE			2	/* bad command line */

/*
 * The run's device ran out of memory: the run fails with that reason and
 * the scheduler no longer places this candidate of this task on that
 * device (it may run on another one).
 */
#define TRP_EXIT_DEVICE_OOM		3

/*
 * The run's device could not be used at all (no driver, device lost): the
 * scheduler marks the device absent until the next probe finds it, and the
 * candidate may run elsewhere.
 */
#define TRP_EXIT_DEVICE_UNAVAILABLE 4

#endif							/* EASEML_TRAINER_PROTOCOL_H */
