/*-------------------------------------------------------------------------
 *
 * placement.h
 *	  Which device a run goes to (src/core/placement.c): plain C, no PostgreSQL
 *	  headers, shared by the scheduler and the unit tests.
 *
 * IDENTIFICATION
 *	  src/core/placement.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_PLACEMENT_H
#define EASEML_PLACEMENT_H

/* Device kinds, in the order of easeml.devices.kind's values. */
typedef enum PlaceKind
{
	PLACE_KIND_CPU = 0,
	PLACE_KIND_CUDA = 1
} PlaceKind;

#define PLACE_N_KINDS 2

/* One device as placement sees it. */
typedef struct PlaceDevice
{
	PlaceKind	kind;
	int			free;			/* slots free now; 0 when disabled or absent */
} PlaceDevice;

extern int	PlaceKindFromName(const char *name);
extern const char *PlaceKindName(PlaceKind kind);
extern int	PlacementChoose(const PlaceDevice *devices, int n_devices,
							const PlaceKind *kinds, int n_kinds,
							const unsigned char *banned);

#endif							/* EASEML_PLACEMENT_H */
