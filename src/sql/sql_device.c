/*-------------------------------------------------------------------------
 *
 * sql_device.c
 *	  SQL-callable C functions about devices: easeml.probe_devices().
 *
 * The device catalog itself is plain SQL (sql/easeml.sql); the probe is
 * run by the scheduler (src/worker/devices.c).
 *
 * IDENTIFICATION
 *	  src/sql/sql_device.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "module/easeml.h"
#include "fmgr.h"
#include "storage/spin.h"

PG_FUNCTION_INFO_V1(easeml_probe_devices);

/*
 * easeml.probe_devices(): ask the scheduler to run the trainer's device
 * probe again (after a driver was installed or a GPU added).  The request
 * is counted at once and the scheduler is woken at commit; a probe nobody
 * needed costs one short trainer process.
 */
Datum
easeml_probe_devices(PG_FUNCTION_ARGS)
{
	if (EasemlState == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the easeml scheduler is not loaded"),
				 errhint("Add easeml to shared_preload_libraries and restart the server.")));
	SpinLockAcquire(&EasemlState->mutex);
	EasemlState->probe_requests++;
	SpinLockRelease(&EasemlState->mutex);
	EasemlWakeAtCommit();
	PG_RETURN_VOID();
}
