/*-------------------------------------------------------------------------
 *
 * hash_actual.c
 *		Measure the hash tables an executed plan really built, so that the
 *		estimate can be shown beside the truth.
 *
 * Called from ExecutorEnd before the plan state is torn down: the hash
 * tables still exist then.  "Actual" for a hash join is the memory its
 * table occupies in the layout the estimate models: the bucket array plus
 * the used part of the dense chunks (tuples MAXALIGNed, chunk headers).
 * PostgreSQL's own spacePeak (EXPLAIN ANALYZE's "Memory Usage") counts
 * tuples unaligned and is taken when it is larger (multi-batch joins keep
 * only the last batch by the time we look).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/hashjoin.h"
#include "locality.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"

static MccdbTable *
find_table(MccdbLocality *loc, int plan_node_id)
{
	ListCell   *lc;

	foreach(lc, loc->tables)
	{
		MccdbTable *t = lfirst(lc);

		if (t->plan_node_id == plan_node_id)
			return t;
	}
	return NULL;
}

static void
measure_hash(HashState *hs, MccdbTable *t)
{
	HashJoinTable ht = hs->hashtable;
	double		bytes = 0;

	if (hs->hinstrument && hs->hinstrument->space_peak > 0)
	{
		/* EXPLAIN ANALYZE: peak over rescans, as PostgreSQL reports it */
		bytes = (double) hs->hinstrument->space_peak;
		t->actual_nbatch = hs->hinstrument->nbatch;
	}
	if (ht == NULL)
	{
		if (bytes > 0)
			t->actual_bytes = bytes;
		return;
	}

	bytes = Max(bytes, (double) ht->spacePeak);
	if (ht->parallel_state == NULL && ht->nbatch == 1)
	{
		HashMemoryChunk chunk;
		double		layout = (double) ht->nbuckets * sizeof(HashJoinTuple);

		for (chunk = ht->chunks; chunk != NULL; chunk = chunk->next.unshared)
			layout += HASH_CHUNK_HEADER_SIZE + chunk->used;
		bytes = Max(bytes, layout);
	}
	t->actual_bytes = bytes;
	t->actual_rows = ht->totalTuples;
	t->actual_nbatch = ht->nbatch;
}

static bool
measure_walker(PlanState *ps, void *context)
{
	MccdbLocality *loc = context;
	MccdbTable *t;

	if (ps == NULL)
		return false;
	t = find_table(loc, ps->plan->plan_node_id);
	if (t != NULL)
	{
		if (t->kind == MCCDB_HASH_JOIN && IsA(ps, HashState))
			measure_hash((HashState *) ps, t);
		else if (t->kind == MCCDB_HASH_AGG && IsA(ps, AggState) &&
				 ((AggState *) ps)->hash_mem_peak > 0)
			t->actual_bytes = (double) ((AggState *) ps)->hash_mem_peak;
	}
	return planstate_tree_walker(ps, measure_walker, context);
}

void
mccdb_measure_tables(PlanState *planstate, MccdbLocality *loc)
{
	if (planstate != NULL && loc->tables != NIL)
		measure_walker(planstate, loc);
}
