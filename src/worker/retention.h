/*-------------------------------------------------------------------------
 *
 * retention.h
 *	  Expiry of the scheduler's own log, and the snapshot tables left to
 *	  the scheduler (src/worker/retention.c).
 *
 * IDENTIFICATION
 *	  src/worker/retention.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_RETENTION_H
#define EASEML_RETENTION_H

extern void RetentionStep(void);

#endif							/* EASEML_RETENTION_H */
