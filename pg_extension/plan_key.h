/*-------------------------------------------------------------------------
 *
 * plan_key.h
 *		A key that names a plan and every copy of it.
 *
 * The plan cache copies a plan right after the planner returns it
 * (BuildCachedPlan), so a prepared statement, an extended-protocol one or
 * a PL/pgSQL query runs a copy, perhaps many times: what the planner hook
 * learned of a plan is found again by its content, not its address.  The
 * key is what a copy keeps: the queryid and a hash of the plan's node
 * types, ids, costs and row and width estimates.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_PLAN_KEY_H
#define MCCDB_PLAN_KEY_H

#include "nodes/plannodes.h"

typedef struct MccdbPlanKey
{
	uint64		queryid;
	uint64		shape;
} MccdbPlanKey;

extern MccdbPlanKey mccdb_plan_key(const PlannedStmt *plan);

/*
 * What a backend remembers of the plans it made, by key: a bounded map in
 * TopMemoryContext whose entries hold payload_size bytes each; when full,
 * the entry used longest ago makes room.
 */
typedef struct MccdbPlanMemo MccdbPlanMemo;

extern MccdbPlanMemo *mccdb_plan_memo_create(const char *name, Size payload_size,
											 long capacity);
/* The payload remembered for key, or NULL; a hit counts as a use. */
extern void *mccdb_plan_memo_find(MccdbPlanMemo *memo, const MccdbPlanKey *key);
/* The payload to fill for key: found, or new and zeroed. */
extern void *mccdb_plan_memo_enter(MccdbPlanMemo *memo, const MccdbPlanKey *key);
extern void mccdb_plan_memo_forget(MccdbPlanMemo *memo, const MccdbPlanKey *key);
extern bool mccdb_plan_memo_empty(const MccdbPlanMemo *memo);

#endif							/* MCCDB_PLAN_KEY_H */
