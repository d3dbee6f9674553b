/*-------------------------------------------------------------------------
 *
 * monoclock.h
 *	  The clock easeml measures intervals with inside the server: run
 *	  timeouts, grace times, timeouts of child processes, backoffs, rate
 *	  limits, rests.  The wall clock (GetCurrentTimestamp) jumps when NTP
 *	  steps it or a virtual machine resumes: an hour forward would time
 *	  out every run at once, an hour back would stop launches for an hour.
 *	  CLOCK_MONOTONIC never jumps.
 *
 *	  Its values are microseconds like a TimestampTz, so
 *	  TimestampDifferenceExceeds and TimestampTzPlusMilliseconds work on
 *	  them, but they are no time of day: never store one in SQL, compare
 *	  one with now() or a column, or show one.  A variable holds one
 *	  clock's values only: every time the scheduler keeps between calls is
 *	  on this one, except the few read from SQL or shown to users
 *	  (runs.started_at, easeml.scheduler_status()), which say "wall
 *	  clock".  CLOCK_MONOTONIC is the same in every process of the
 *	  machine, so shared memory may hold its values too.
 *
 * IDENTIFICATION
 *	  src/module/monoclock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef EASEML_MONOCLOCK_H
#define EASEML_MONOCLOCK_H

#include "postgres.h"

#include <time.h>

#include "datatype/timestamp.h"
#include "utils/timestamp.h"

/*
 * Added to every value so that 0, the "never" of the variables that hold
 * them (last_sweep = 0: sweep at once), stays longer ago than any interval
 * measured from it (the longest is an hour) even right after boot, when
 * CLOCK_MONOTONIC itself is only seconds.
 */
#define EASEML_MONOTONIC_OFFSET ((TimestampTz) 365 * USECS_PER_DAY)

/* Now on the monotonic clock, in microseconds. */
static inline TimestampTz
EasemlMonotonicNow(void)
{
	struct timespec ts;

	/* cannot fail: CLOCK_MONOTONIC exists on every system PostgreSQL runs on */
	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	return EASEML_MONOTONIC_OFFSET + (TimestampTz) ts.tv_sec * USECS_PER_SEC +
		ts.tv_nsec / 1000;
}

/*
 * A start recorded on the wall clock (a SQL timestamp, such as a run's
 * started_at read back after a restart) on the monotonic clock: now less
 * the time since it, as the wall clock tells it now, never after now.
 */
static inline TimestampTz
EasemlMonotonicFromWall(TimestampTz wall_start)
{
	TimestampTz since = GetCurrentTimestamp() - wall_start;

	return EasemlMonotonicNow() - Max(since, 0);
}

#endif							/* EASEML_MONOCLOCK_H */
