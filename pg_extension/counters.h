/*-------------------------------------------------------------------------
 *
 * counters.h
 *		Hardware counters per query (perf_event + libpfm4).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_COUNTERS_H
#define MCCDB_COUNTERS_H

/* LLC misses, instructions, cycles, in that order */
#define MCCDB_NCOUNTERS 3

struct perf_event_attr;

extern const char *mccdb_counter_encode(const char *name, struct perf_event_attr *attr);

/* Open and start the counters for this backend; silently nothing if unavailable. */
extern void mccdb_counters_start(void);

/* Stop and read; false when nothing was counted. */
extern bool mccdb_counters_stop(int64 values[MCCDB_NCOUNTERS]);

#endif							/* MCCDB_COUNTERS_H */
