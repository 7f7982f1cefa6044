/*-------------------------------------------------------------------------
 *
 * recent.h
 *		The ring of recently executed queries (mccdb_recent_queries).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_RECENT_H
#define MCCDB_RECENT_H

#include "state.h"

/* GUCs (mccdb.track, mccdb.track_min_cost, mccdb.recent_queries), shared memory. */
extern void mccdb_recent_init(void);

/* Do mccdb.track and mccdb.track_min_cost record this statement? */
extern bool mccdb_recent_wants(const MccdbStatement *st);
/* Does mccdb.track_min_cost = 0 ask to record statements of any cost? */
extern bool mccdb_recent_records_every_cost(void);
/* The same before the statement has a state: its plan, is it a client's, its eflags. */
extern bool mccdb_recent_wants_statement(PlannedStmt *plan, bool top, int eflags);

/* Record it, once its locality holds the actual sizes. */
extern void mccdb_recent_record(const MccdbStatement *st);

#endif							/* MCCDB_RECENT_H */
