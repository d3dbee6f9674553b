/*-------------------------------------------------------------------------
 *
 * launcher_settings.h
 *	  The launchers' settings (src/module/launcher_settings.c): which
 *	  launcher starts trainers, and how easeml reaches Slurm.  The
 *	  launchers are the worker's (src/worker/launcher.h).
 *
 * IDENTIFICATION
 *	  src/module/launcher_settings.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_LAUNCHER_SETTINGS_H
#define EASEML_LAUNCHER_SETTINGS_H

typedef enum EasemlLauncher
{
	EASEML_LAUNCHER_LOCAL = 0,
	EASEML_LAUNCHER_SLURM
} EasemlLauncher;

extern int	easeml_launcher;
extern char *easeml_slurm_bindir;
extern char *easeml_slurm_conf;
extern char *easeml_slurm_account;
extern char *easeml_slurm_job_prefix;
extern char *easeml_slurm_trainer_path;
extern char *easeml_slurm_output;

/* called from _PG_init */
extern void LauncherDefineSettings(void);
/* the name of a launcher, as in easeml.devices.launcher */
extern const char *LauncherName(int launcher);

#endif							/* EASEML_LAUNCHER_SETTINGS_H */
