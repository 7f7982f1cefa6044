/*-------------------------------------------------------------------------
 *
 * table_sizes.h
 *		Hash table sizes learned from earlier runs of a query.
 *
 * The planner's row estimates are the error in a hash table's estimated
 * size.  Once a query has run, the size its hash tables really had (per
 * database, queryid and plan node, for a node over the same relations)
 * stands in for the estimate in its next runs; the locality and EXPLAIN say
 * which figure was used.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_TABLE_SIZES_H
#define MCCDB_TABLE_SIZES_H

#include "locality.h"

/* The GUC mccdb.learn_table_sizes and the shared hash table. */
extern void mccdb_table_sizes_init(void);

/* Is learning on, and is there a store to learn into? */
extern bool mccdb_table_sizes_enabled(void);

/* The size a table of this query had when it last ran; false if unknown. */
extern bool mccdb_learned_table_bytes(uint64 queryid, const MccdbTable *t,
									  double *bytes);

/* Remember the actual sizes measured in a finished run. */
extern void mccdb_learn_table_sizes(uint64 queryid, const MccdbLocality *loc);

/* Forget every learned size (mccdb_learned_reset()). */
extern void mccdb_table_sizes_reset(void);

#endif							/* MCCDB_TABLE_SIZES_H */
