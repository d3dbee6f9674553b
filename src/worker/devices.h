/*-------------------------------------------------------------------------
 *
 * devices.h
 *	  The scheduler's devices: probe, slots and placement (src/worker/devices.c).
 *
 * IDENTIFICATION
 *	  src/worker/devices.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_DEVICES_H
#define EASEML_DEVICES_H

#include "postgres.h"

#include "catalog.h"

extern void DevicesStep(void);
extern void DevicesReset(void);
extern bool DevicesKnown(void);
extern void DevicesChanged(void);
extern void DevicesReload(void);
extern int	DevicesFree(void);
extern int	DevicesFreeSlots(CatSlot *slots, int max);
extern const CatDevice *DevicesLookup(const char *name);
extern void DevicesRestrict(CatState *state);
extern int	DevicesSlots(void);
extern void DevicesPlaceCandidates(CatState *state);
extern const CatDevice *DevicesPlaceRun(const CatState *state, int task, int arm);
extern void DevicesNoteExit(const char *device, int wait_status);

#endif							/* EASEML_DEVICES_H */
