/*-------------------------------------------------------------------------
 *
 * counters.h
 *		Hardware counters per query (perf_event + libpfm4).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_COUNTERS_H
#define MCCDB_COUNTERS_H

#include "state.h"

struct perf_event_attr;

/* The GUC mccdb.counters. */
extern void mccdb_counters_init(void);

extern const char *mccdb_counter_encode(const char *name, struct perf_event_attr *attr);

/*
 * Start counting a statement (silently nothing where counters are
 * unavailable); stop and keep the values in the statement's state.
 */
/* Would a top-level statement be counted (mccdb.counters)? */
extern bool mccdb_counters_wanted(void);
extern void mccdb_counters_statement_start(MccdbStatement *st);
extern void mccdb_counters_statement_stop(MccdbStatement *st);

#endif							/* MCCDB_COUNTERS_H */
