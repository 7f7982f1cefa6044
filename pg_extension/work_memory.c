/*-------------------------------------------------------------------------
 *
 * work_memory.c
 *		A plan's working memory, for the gate's memory budget
 *		(mccdb.memory_budget): the nodes that keep rows in memory, each at
 *		its estimated size capped by the limit the executor keeps it to.
 *
 * The hash tables are the locality estimate's (locality.c), so a size
 * learned from the query's last run (table_sizes.c, per role) replaces the
 * planner's: a learned size is what the table took, and is not capped (a
 * hash join whose batches cannot split goes past hash_mem).  The other
 * nodes are estimated here from the planner's rows and width, as the
 * executor stores them, and capped by work_mem or hash_mem.  The limits are
 * the session's own: a session that lowers work_mem lowers both its
 * estimate and what it really uses.
 *
 * Not counted: bitmap scans' TID bitmaps (lossy past work_mem, small in
 * practice), sorts inside aggregates (ORDER BY or DISTINCT in an aggregate
 * call), and the memory every statement has (its plan, its executor state).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "plan_tree.h"
#include "work_memory.h"

/* The sort's per-tuple header (SortTuple in tuplesort.c): a pointer, a datum, flags. */
#define SORT_TUPLE_OVERHEAD (sizeof(void *) + sizeof(Datum) + sizeof(Datum))

typedef struct WorkMemoryWalk
{
	const MccdbLocality *loc;
	List	   *gathers;		/* the Gathers that stand in for the plan's */
	int			processes;		/* running the node: a Gather's workers and leader */
	double		bytes;
} WorkMemoryWalk;

/* Rows of width bytes, stored as minimal tuples with overhead bytes each. */
static double
rows_bytes(double rows, int width, Size overhead)
{
	return Max(rows, 1.0) * (MAXALIGN(SizeofMinimalTupleHeader) + MAXALIGN(width) + overhead);
}

/* The locality estimate's table of a plan node, or NULL. */
static const MccdbTable *
table_of(const MccdbLocality *loc, const Plan *plan)
{
	ListCell   *lc;

	foreach(lc, loc->tables)
	{
		const MccdbTable *t = lfirst(lc);

		if (t->plan_node_id == plan->plan_node_id && t->kind != MCCDB_RESCANNED_INNER)
			return t;
	}
	return NULL;
}

/*
 * A hash table's size: the locality estimate's (a learned size as it is,
 * the planner's capped at limit), else the rows it is built from.
 */
static double
hash_table_bytes(const MccdbLocality *loc, Plan *plan, Plan *input, double limit)
{
	const MccdbTable *t = table_of(loc, plan);

	if (t != NULL && t->learned)
		return t->bytes;
	if (t != NULL)
		return Min(t->bytes, limit);
	return Min(rows_bytes(input->plan_rows, input->plan_width, 0), limit);
}

/* A Gather's workers, or those of the node that stands in for it. */
static int
gather_workers(const WorkMemoryWalk *w, const Plan *plan)
{
	ListCell   *lc;

	foreach(lc, w->gathers)
		if (((Plan *) lfirst(lc))->plan_node_id == plan->plan_node_id)
			plan = lfirst(lc);
	return IsA(plan, Gather) ? ((const Gather *) plan)->num_workers :
		((const GatherMerge *) plan)->num_workers;
}

static bool
add_node(Plan *plan, void *context)
{
	WorkMemoryWalk *w = context;
	double		work_mem_bytes = (double) work_mem * 1024.0;
	double		hash_mem_bytes = (double) get_hash_memory_limit();
	double		bytes = 0;
	int			saved = w->processes;

	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_Gather:
		case T_GatherMerge:
			w->processes = gather_workers(w, plan) + 1;
			break;
		case T_Hash:
			if (plan->parallel_aware)
			{
				/* one table, shared: its rows are all the workers' */
				double		limit = hash_mem_bytes * w->processes;

				w->bytes += hash_table_bytes(w->loc, plan, outerPlan(plan), limit);
				break;
			}
			bytes = hash_table_bytes(w->loc, plan, outerPlan(plan), hash_mem_bytes);
			break;
		case T_Agg:
			if (((Agg *) plan)->aggstrategy == AGG_HASHED ||
				((Agg *) plan)->aggstrategy == AGG_MIXED)
				bytes = hash_table_bytes(w->loc, plan, plan, hash_mem_bytes);
			break;
		case T_SetOp:
			if (((SetOp *) plan)->strategy == SETOP_HASHED)
				bytes = hash_table_bytes(w->loc, plan, plan, hash_mem_bytes);
			break;
		case T_RecursiveUnion:
			/* its working tables, and the hash table of UNION (not ALL) */
			bytes = Min(rows_bytes(plan->plan_rows, plan->plan_width, 0), work_mem_bytes);
			if (((RecursiveUnion *) plan)->numCols > 0)
				bytes += Min(rows_bytes(plan->plan_rows, plan->plan_width, 0), hash_mem_bytes);
			break;
		case T_Memoize:
			bytes = Min(rows_bytes(((Memoize *) plan)->est_entries, plan->plan_width, 0),
						hash_mem_bytes);
			break;
		case T_Sort:
		case T_IncrementalSort:
			bytes = Min(rows_bytes(plan->plan_rows, plan->plan_width, SORT_TUPLE_OVERHEAD),
						work_mem_bytes);
			break;
		case T_Material:
		case T_WindowAgg:
		case T_CteScan:
		case T_FunctionScan:
		case T_TableFuncScan:
			/* a tuplestore: in memory up to work_mem, then on disk */
			bytes = Min(rows_bytes(plan->plan_rows, plan->plan_width, 0), work_mem_bytes);
			break;
		default:
			break;
	}
	w->bytes += bytes * w->processes;
	(void) mccdb_plan_children_walk(plan, add_node, w);
	w->processes = saved;
	return false;
}

double
mccdb_work_memory_bytes(PlannedStmt *stmt, const MccdbLocality *loc, List *gathers)
{
	WorkMemoryWalk w = {loc, gathers, 1, 0};
	ListCell   *lc;

	if (stmt->planTree != NULL)
		(void) add_node(stmt->planTree, &w);
	/* InitPlans and SubPlans: once each (their rows are kept in the leader) */
	foreach(lc, stmt->subplans)
		if (lfirst(lc) != NULL)
		{
			w.processes = 1;
			(void) add_node(lfirst(lc), &w);
		}
	return w.bytes;
}
