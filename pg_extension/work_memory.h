/*-------------------------------------------------------------------------
 *
 * work_memory.h
 *		A plan's working memory: what its hash tables, sorts and tuplestores
 *		may hold at once, as the gate's memory budget counts it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_WORK_MEMORY_H
#define MCCDB_WORK_MEMORY_H

#include "locality.h"

/*
 * Bytes of working memory the plan's nodes may hold, in every process that
 * runs them: each node's estimated size (the locality estimate's hash
 * tables, learned where they were learned), capped where the executor caps
 * it (work_mem, or hash_mem for hash tables), times the processes that
 * build it (a Gather's workers and leader; a parallel hash table is built
 * once).  A node whose size is not estimated counts at its cap.  @gathers:
 * Gather or GatherMerge nodes that stand in for the plan's nodes of the
 * same plan_node_id (the gate's copies with fewer workers), or NIL.
 */
extern double mccdb_work_memory_bytes(PlannedStmt *stmt, const MccdbLocality *loc,
									  List *gathers);

#endif							/* MCCDB_WORK_MEMORY_H */
