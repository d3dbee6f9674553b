/*-------------------------------------------------------------------------
 *
 * launcher_settings.c
 *	  The settings of the launchers (docs/configuration.md,
 *	  docs/scale-out.md): which launcher starts trainers, and how easeml
 *	  reaches Slurm.  Defined by _PG_init like every other setting, so
 *	  they live in the module; the launchers themselves are the worker's
 *	  (src/worker/launcher.h).
 *
 * IDENTIFICATION
 *	  src/module/launcher_settings.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "core/slurm_parse.h"
#include "launcher_settings.h"
#include "utils/guc.h"

int			easeml_launcher = EASEML_LAUNCHER_LOCAL;
char	   *easeml_slurm_bindir = NULL;
char	   *easeml_slurm_conf = NULL;
char	   *easeml_slurm_account = NULL;
char	   *easeml_slurm_job_prefix = NULL;
char	   *easeml_slurm_trainer_path = NULL;
char	   *easeml_slurm_output = NULL;

static const struct config_enum_entry launcher_options[] = {
	{"local", EASEML_LAUNCHER_LOCAL, false},
	{"slurm", EASEML_LAUNCHER_SLURM, false},
	{NULL, 0, false}
};

/* A path or name that goes into sbatch's arguments or the batch script. */
static bool
CheckSafeWord(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || (*newval)[0] == '\0' || SlurmSafeWord(*newval))
		return true;
	GUC_check_errdetail("Only letters, digits and _ . / + - : @ , = %% are allowed, and no leading -.");
	return false;
}

/* The job name prefix also identifies this database's jobs: no '-run'. */
static bool
CheckJobPrefix(char **newval, void **extra, GucSource source)
{
	if (!CheckSafeWord(newval, extra, source))
		return false;
	if ((*newval)[0] == '\0' || strlen(*newval) > 64)
	{
		GUC_check_errdetail("The prefix must have 1 to 64 characters.");
		return false;
	}
	return true;
}

/* Called from _PG_init. */
void
LauncherDefineSettings(void)
{
	DefineCustomEnumVariable("easeml.launcher",
							 "Who starts trainers: local (this machine) or slurm (one sbatch job per run).",
							 "With slurm, runs go to the devices of launcher slurm (easeml.set_slurm_partition).",
							 &easeml_launcher,
							 EASEML_LAUNCHER_LOCAL, launcher_options,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("easeml.slurm_bindir",
							   "Directory of Slurm's commands (sbatch, squeue, scontrol, sacct, scancel).",
							   NULL,
							   &easeml_slurm_bindir,
							   "/usr/bin",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckSafeWord, NULL, NULL);

	DefineCustomStringVariable("easeml.slurm_conf",
							   "slurm.conf that Slurm's commands read (SLURM_CONF); empty means Slurm's default.",
							   NULL,
							   &easeml_slurm_conf,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckSafeWord, NULL, NULL);

	DefineCustomStringVariable("easeml.slurm_account",
							   "Slurm account charged for easeml's jobs (sbatch --account); empty means the default.",
							   NULL,
							   &easeml_slurm_account,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckSafeWord, NULL, NULL);

	DefineCustomStringVariable("easeml.slurm_job_prefix",
							   "Prefix of the names of easeml's Slurm jobs: <prefix>-run<id>.",
							   "Give each database that shares a Slurm cluster its own prefix.",
							   &easeml_slurm_job_prefix,
							   "easeml",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckJobPrefix, NULL, NULL);

	DefineCustomStringVariable("easeml.slurm_trainer_path",
							   "Path of easeml-trainer on the compute nodes; empty means the local trainer's path.",
							   NULL,
							   &easeml_slurm_trainer_path,
							   "",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckSafeWord, NULL, NULL);

	DefineCustomStringVariable("easeml.slurm_output",
							   "Where a Slurm job writes the trainer's output (sbatch --output, on the compute node).",
							   "Slurm's patterns apply (%j is the job id); results never travel through it.",
							   &easeml_slurm_output,
							   "/dev/null",
							   PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   CheckSafeWord, NULL, NULL);
}

/* The name of a launcher, as in easeml.devices.launcher. */
const char *
LauncherName(int launcher)
{
	return launcher == EASEML_LAUNCHER_SLURM ? "slurm" : "local";
}
