/*-------------------------------------------------------------------------
 *
 * locality.c
 *		Estimate the cache locality strength of a plan (MCC-DB, section 4).
 *
 * The paper's rules:
 *	- a hash join's locality follows the size S of its hash table;
 *	- an index nested loop join has weak locality;
 *	- in a left-deep join tree only the first two joins from the bottom
 *	  matter: their accumulated S decides, and two index joins are weak;
 *	- strong if S < C/3, moderate if C/3 <= S < 3C, weak if S >= 3C, where C
 *	  is the last-level cache size (the factors are mccdb.strong_limit and
 *	  mccdb.weak_limit).
 *
 * S is computed with PostgreSQL 15's real hash table layout: the bucket
 * array, and per tuple a HashJoinTuple header plus a MinimalTuple, packed
 * MAXALIGNed into 32 kB dense chunks; a multi-batch join holds one batch.
 * The bucket and batch counts come from ExecChooseHashTableSize(), the
 * executor's own function, so they match what the executor will do.
 *
 * Plans the paper does not cover get the classes docs/design.md lists
 * (bushy trees, merge joins, plain nested loops, parallel hash, hash
 * aggregation, subplans, plans without a join).  Nothing here may raise an
 * error for a valid plan: estimation must never make a query fail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "cache_geometry.h"
#include "compat.h"
#include "executor/hashjoin.h"
#include "executor/nodeAgg.h"
#include "executor/nodeHash.h"
#include "locality.h"
#include "plan_tree.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "parser/parsetree.h"
#include "table_sizes.h"
#include "utils/guc.h"

/* GUCs: the class limits, as fractions of C (the paper: 1/3 and 3). */
static double strong_limit = 1.0 / 3.0;
static double weak_limit = 3.0;

/* What a join on the outer spine of the join tree contributes. */
typedef enum JoinRole
{
	JOIN_HASH_LIKE,				/* keeps a reused structure: hash table or rescanned inner */
	JOIN_INDEX,					/* index nested loop: weak */
	JOIN_MERGE					/* merge join: both inputs stream once: weak */
} JoinRole;

typedef struct WalkState
{
	PlannedStmt *stmt;
	List	   *tables;			/* MccdbTable * */
	int			parallel_workers;	/* of the nearest Gather above */
	bool		found_join;
	int			bottom_joins;	/* joins among the bottom two (0..2) */
	int			bottom_hash_like;	/* of those, with a reused structure */
	bool		bottom_merge;	/* a merge join among the bottom two */
	double		join_bytes;		/* S of the bottom two joins */
	double		upper_bytes;	/* hash aggregates, hashed setops, subplans */
	bool		bushy;
} WalkState;

static void walk_plan(Plan *plan, WalkState *w);
static bool walk_child(Plan *plan, void *context);

const char *
mccdb_locality_class_name(MccdbLocalityClass cls)
{
	switch (cls)
	{
		case MCCDB_STRONG:
			return "strong";
		case MCCDB_MODERATE:
			return "moderate";
		case MCCDB_WEAK:
			return "weak";
	}
	return "weak";
}

#if !MCCDB_HAVE_DISABLED_NODES
/*
 * Before PostgreSQL 18 a path the enable_* settings rule out is not left
 * out but made dearer: cost_seqscan() and its siblings add disable_cost
 * (1e10) to its startup cost, and every node above carries it on.  The
 * node's cost alone cannot tell that apart from a real cost above 1e10 (a
 * cross join of two large inputs costs more than that), so the plan is
 * walked instead: each node that one of the settings in force disables
 * counts once, as costsize.c adds it, and a nested loop counts its inner's
 * once per rescan, as initial_cost_nestloop() does.  A penalty no setting
 * asked for (a hash join whose most common value overflows hash_mem) is
 * the planner's real opinion and stays.
 *
 * DisabledCost is how many disable_costs a node's startup and total cost
 * hold.
 */
typedef struct DisabledCost
{
	double		startup;
	double		total;
} DisabledCost;

static void disabled_in(Plan *plan, PlannedStmt *stmt, bool subtract,
						DisabledCost *d);

/* Does a setting in force now add disable_cost to this node itself? */
static bool
node_is_disabled(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_SeqScan:
			return !enable_seqscan;
		case T_IndexScan:
		case T_IndexOnlyScan:
			return !enable_indexscan;
		case T_BitmapHeapScan:
			return !enable_bitmapscan;
		case T_TidScan:
		case T_TidRangeScan:
			return !enable_tidscan;
		case T_Sort:
			return !enable_sort;
		case T_NestLoop:
			return !enable_nestloop;
		case T_MergeJoin:
			return !enable_mergejoin;
		case T_HashJoin:
			return !enable_hashjoin;
		case T_Agg:
			return ((Agg *) plan)->aggstrategy == AGG_HASHED && !enable_hashagg;
		case T_GatherMerge:
			return !enable_gathermerge;
		default:
			return false;
	}
}

/* Is any setting that adds disable_cost off?  (Else there is nothing to find.) */
static bool
any_method_disabled(void)
{
	return !(enable_seqscan && enable_indexscan && enable_bitmapscan &&
			 enable_tidscan && enable_sort && enable_nestloop &&
			 enable_mergejoin && enable_hashjoin && enable_hashagg &&
			 enable_gathermerge);
}

/* Does a rescan of this inner repeat its startup (cost_rescan())? */
static bool
rescan_repeats_startup(Plan *inner)
{
	switch (nodeTag(inner))
	{
		case T_Material:
		case T_Sort:
		case T_FunctionScan:
		case T_CteScan:
		case T_WorkTableScan:
		case T_HashJoin:
			return false;
		default:
			return true;
	}
}

static void
add_disabled(DisabledCost *to, const DisabledCost *from, double times)
{
	to->startup += from->startup * times;
	to->total += from->total * times;
}

static void
disabled_in_list(List *plans, PlannedStmt *stmt, bool subtract,
				 DisabledCost *d, bool first_startup_only)
{
	ListCell   *lc;

	foreach(lc, plans)
	{
		DisabledCost c;

		disabled_in(lfirst(lc), stmt, subtract, &c);
		d->total += c.total;
		if (!first_startup_only || lc == list_head(plans))
			d->startup += c.startup;
	}
}

/*
 * How many disable_costs the node's costs hold, following costsize.c's
 * sums.  With subtract, the node's costs lose them (a candidate plan keeps
 * its real cost after the settings that shaped it are gone).
 */
static void
disabled_in(Plan *plan, PlannedStmt *stmt, bool subtract, DisabledCost *d)
{
	DisabledCost outer = {0, 0};
	DisabledCost inner = {0, 0};
	ListCell   *lc;

	d->startup = d->total = 0;
	if (plan == NULL)
		return;
	check_stack_depth();
	if (outerPlan(plan))
		disabled_in(outerPlan(plan), stmt, subtract, &outer);
	if (innerPlan(plan))
		disabled_in(innerPlan(plan), stmt, subtract, &inner);

	switch (nodeTag(plan))
	{
		case T_NestLoop:
			/* the inner runs once per outer row */
			add_disabled(d, &outer, 1);
			add_disabled(d, &inner, 1);
			if (rescan_repeats_startup(innerPlan(plan)) && outerPlan(plan)->plan_rows > 1)
				d->total += inner.total * (outerPlan(plan)->plan_rows - 1);
			break;
		case T_HashJoin:
			/* the hash table is built before the first row */
			d->startup = outer.startup + inner.total;
			d->total = outer.total + inner.total;
			break;
		case T_Hash:
		case T_Sort:
		case T_IncrementalSort:
		case T_SetOp:
			d->startup = d->total = outer.total;
			break;
		case T_Agg:
			if (((Agg *) plan)->aggstrategy == AGG_SORTED ||
				((Agg *) plan)->aggstrategy == AGG_MIXED)
				*d = outer;
			else
				d->startup = d->total = outer.total;
			break;
		case T_Append:
			disabled_in_list(((Append *) plan)->appendplans, stmt, subtract, d, true);
			break;
		case T_MergeAppend:
			disabled_in_list(((MergeAppend *) plan)->mergeplans, stmt, subtract, d, false);
			break;
		case T_SubqueryScan:
			disabled_in(((SubqueryScan *) plan)->subplan, stmt, subtract, d);
			break;
		case T_CustomScan:
			disabled_in_list(((CustomScan *) plan)->custom_plans, stmt, subtract, d, false);
			break;
		default:
			add_disabled(d, &outer, 1);
			add_disabled(d, &inner, 1);
			break;
	}
	if (node_is_disabled(plan))
	{
		d->startup += 1;
		d->total += 1;
	}
	/* an InitPlan runs once, before the node's first row */
	foreach(lc, plan->initPlan)
	{
		SubPlan    *sp = lfirst(lc);
		DisabledCost c;

		if (!IsA(sp, SubPlan) || sp->plan_id < 1 ||
			sp->plan_id > list_length(stmt->subplans))
			continue;
		disabled_in(list_nth(stmt->subplans, sp->plan_id - 1), stmt, subtract, &c);
		d->startup += c.total;
		d->total += c.total;
	}
	/* never more than the node's cost holds: the walk only models costsize.c */
	d->startup = Min(d->startup, floor(plan->startup_cost / disable_cost));
	d->total = Min(d->total, floor(plan->total_cost / disable_cost));
	if (subtract)
	{
		plan->startup_cost -= d->startup * disable_cost;
		plan->total_cost -= d->total * disable_cost;
	}
}
#endif

/*
 * A plan's cost without the disable_cost that the enable_* settings in
 * force added (see above; on PostgreSQL 18 the planner counts disabled
 * nodes apart and the cost is real as it stands).  Call it where the
 * settings are those the plan was made with: the planner hook, or the
 * executor of a plan made by the same session.
 */
Cost
mccdb_real_cost(PlannedStmt *stmt)
{
#if !MCCDB_HAVE_DISABLED_NODES
	DisabledCost d;

	if (any_method_disabled())
	{
		disabled_in(stmt->planTree, stmt, false, &d);
		return stmt->planTree->total_cost - d.total * disable_cost;
	}
#endif
	return stmt->planTree->total_cost;
}

/*
 * Take the disable_cost the settings in force added out of every node of
 * a plan, so that its costs stay true once those settings are reset (the
 * candidates of plan_choice.c are planned with some methods disabled).
 */
void
mccdb_strip_disable_cost(PlannedStmt *stmt)
{
#if !MCCDB_HAVE_DISABLED_NODES
	DisabledCost d;

	if (any_method_disabled())
		disabled_in(stmt->planTree, stmt, true, &d);
#endif
}

/* The class a name (as mccdb_locality_class_name gives it) names, or -1. */
int
mccdb_locality_class_from_name(const char *name)
{
	int			cls;

	for (cls = MCCDB_STRONG; cls <= MCCDB_WEAK; cls++)
		if (strcmp(name, mccdb_locality_class_name(cls)) == 0)
			return cls;
	return -1;
}

void
mccdb_locality_init(void)
{
	DefineCustomRealVariable("mccdb.strong_limit",
							 "Hash tables smaller than this fraction of the LLC have strong locality.",
							 "The MCC-DB paper uses 1/3.",
							 &strong_limit,
							 1.0 / 3.0, 0.001, 1000.0,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.weak_limit",
							 "Hash tables at least this multiple of the LLC have weak locality.",
							 "The MCC-DB paper uses 3. Between the two limits locality is moderate.",
							 &weak_limit,
							 3.0, 0.001, 1000.0,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
}

/* "hash join", or "Hash Join" for EXPLAIN, whose values are capitalised. */
const char *
mccdb_table_kind_name(MccdbTableKind kind, bool capitalised)
{
	switch (kind)
	{
		case MCCDB_HASH_JOIN:
			return capitalised ? "Hash Join" : "hash join";
		case MCCDB_HASH_AGG:
			return capitalised ? "Hash Aggregate" : "hash aggregate";
		case MCCDB_RESCANNED_INNER:
			return capitalised ? "Rescanned Inner" : "rescanned inner";
	}
	return "?";
}

MccdbLocalityClass
mccdb_classify_bytes(double bytes, Size llc_bytes)
{
	if (bytes < strong_limit * (double) llc_bytes)
		return MCCDB_STRONG;
	if (bytes < weak_limit * (double) llc_bytes)
		return MCCDB_MODERATE;
	return MCCDB_WEAK;
}

/* One decimal, none when it would be ".0": "2.3 MB", "32 MB". */
static char *
format_scaled(double v, const char *unit)
{
	if (fabs(v - rint(v)) < 0.05)
		return psprintf("%.0f %s", v, unit);
	return psprintf("%.1f %s", v, unit);
}

/* Human-readable size: "512 bytes", "40 kB", "2.3 MB", "1.5 GB". */
char *
mccdb_format_bytes(double bytes)
{
	if (bytes < 1024)
		return psprintf("%.0f bytes", bytes);
	if (bytes < 1024.0 * 1024)
		return psprintf("%.0f kB", bytes / 1024);
	if (bytes < 1024.0 * 1024 * 1024)
		return format_scaled(bytes / (1024.0 * 1024), "MB");
	return format_scaled(bytes / (1024.0 * 1024 * 1024), "GB");
}

char *
mccdb_locality_describe(const MccdbLocality *loc)
{
	const char *cls = mccdb_locality_class_name(loc->cls);
	char	   *llc = mccdb_format_bytes((double) loc->llc_bytes);

	if (loc->bytes > 0)
		return psprintf("%s (%s %s of LLC %s%s)", cls, loc->basis,
						mccdb_format_bytes(loc->bytes), llc,
						loc->learned ? "; sizes learned from the last run" : "");
	return psprintf("%s (%s; LLC %s)", cls, loc->basis, llc);
}

/*
 * Might the plan build a table the locality estimate counts (a hash table,
 * a hashed aggregate or set operation, a nested loop's rescanned inner)?
 * Errs towards yes; a point lookup's plan answers no after a node or two.
 */
static bool
holds_tables(Plan *plan, void *context)
{
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_Hash:
		case T_HashJoin:
		case T_NestLoop:
		case T_SetOp:
		case T_RecursiveUnion:
		case T_Memoize:
		case T_CustomScan:
			return true;
		case T_Agg:
			if (((Agg *) plan)->aggstrategy != AGG_PLAIN &&
				((Agg *) plan)->aggstrategy != AGG_SORTED)
				return true;
			break;
		default:
			break;
	}
	return mccdb_plan_children_walk(plan, holds_tables, context);
}

bool
mccdb_plan_holds_tables(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->subplans)
		if (lfirst(lc) != NULL && holds_tables(lfirst(lc), NULL))
			return true;
	return holds_tables(stmt->planTree, NULL);
}

/* Skip nodes that only pass tuples through on the way to a join's input. */
static Plan *
skip_passthrough(Plan *plan)
{
	while (plan != NULL)
	{
		switch (nodeTag(plan))
		{
			case T_Material:
			case T_Memoize:
			case T_Sort:
			case T_IncrementalSort:
			case T_Result:
			case T_Gather:
			case T_GatherMerge:
			case T_Hash:
				if (outerPlan(plan) == NULL)
					return plan;
				plan = outerPlan(plan);
				break;
			default:
				return plan;
		}
	}
	return NULL;
}

static bool
is_join(Plan *plan)
{
	return plan != NULL &&
		(IsA(plan, HashJoin) || IsA(plan, NestLoop) || IsA(plan, MergeJoin));
}

/* Does the subtree contain a join?  (Used to tell bushy trees.) */
static bool
contains_join(Plan *plan, void *context)
{
	check_stack_depth();
	return is_join(plan) || mccdb_plan_children_walk(plan, contains_join, context);
}

/* Alias of the base relation a subtree scans, if it scans exactly one. */
static char *
scanned_relation(Plan *plan, PlannedStmt *stmt)
{
	plan = skip_passthrough(plan);
	if (plan == NULL || is_join(plan))
		return NULL;
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_FunctionScan:
		case T_ValuesScan:
		case T_CteScan:
		case T_WorkTableScan:
		case T_SubqueryScan:
			{
				Index		rti = ((Scan *) plan)->scanrelid;

				if (rti > 0 && rti <= list_length(stmt->rtable))
				{
					RangeTblEntry *rte = rt_fetch(rti, stmt->rtable);

					if (rte->eref && rte->eref->aliasname)
						return pstrdup(rte->eref->aliasname);
				}
				return NULL;
			}
		default:
			return NULL;
	}
}

/* The OIDs of the base relations a subtree scans, each once. */
typedef struct ScannedRelids
{
	PlannedStmt *stmt;
	List	   *relids;
} ScannedRelids;

static bool
add_scanned_relids(Plan *plan, void *context)
{
	ScannedRelids *sr = context;

	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			{
				Index		rti = ((Scan *) plan)->scanrelid;
				List	   *rtable = sr->stmt->rtable;

				if (rti > 0 && rti <= list_length(rtable) &&
					rt_fetch(rti, rtable)->rtekind == RTE_RELATION)
					sr->relids = list_append_unique_oid(sr->relids,
														rt_fetch(rti, rtable)->relid);
				break;
			}
		default:
			break;
	}
	return mccdb_plan_children_walk(plan, add_scanned_relids, sr);
}

static List *
scanned_relids(Plan *plan, PlannedStmt *stmt)
{
	ScannedRelids sr = {stmt, NIL};

	if (plan != NULL)
		(void) add_scanned_relids(plan, &sr);
	return sr.relids;
}

static MccdbTable *
new_table(MccdbTableKind kind, Plan *node, WalkState *w)
{
	MccdbTable *t = palloc0(sizeof(MccdbTable));
	List	   *relids = scanned_relids(node, w->stmt);
	ListCell   *lc;

	t->kind = kind;
	t->plan_node_id = node->plan_node_id;
	list_sort(relids, list_oid_cmp);
	t->nrelids = list_length(relids);
	foreach(lc, relids)
	{
		if (foreach_current_index(lc) >= MCCDB_TABLE_RELIDS)
			break;
		t->relids[foreach_current_index(lc)] = lfirst_oid(lc);
	}
	list_free(relids);
	t->actual_bytes = -1;
	t->actual_rows = -1;
	t->actual_nbatch = -1;
	w->tables = lappend(w->tables, t);
	return t;
}

/*
 * The size this table had when the query last ran, if known, replaces the
 * planner's estimate (mccdb.learn_table_sizes): the row estimates are what
 * the estimate gets wrong.
 */
static void
use_learned_size(MccdbTable *t, WalkState *w)
{
	double		bytes;

	if (mccdb_learned_table_bytes(w->stmt->queryId, t, &bytes))
	{
		t->planner_bytes = t->bytes;
		t->bytes = bytes;
		t->learned = true;
	}
}

/*
 * Size of the in-memory hash table a Hash node builds, mirroring
 * ExecHashTableCreate() and dense_alloc() in nodeHash.c.
 */
static MccdbTable *
estimate_hash_node(Hash *hash, WalkState *w)
{
	Plan	   *child = outerPlan(&hash->plan);
	MccdbTable *t = new_table(MCCDB_HASH_JOIN, &hash->plan, w);
	size_t		space_allowed;
	int			num_skew_mcvs;
	double		tuple_size;
	double		rows_in_memory;
	double		per_chunk;
	double		chunks;

	t->rows = hash->plan.parallel_aware ? hash->rows_total : child->plan_rows;
	t->width = child->plan_width;
	t->relation = scanned_relation(child, w->stmt);
	ExecChooseHashTableSize(t->rows, t->width, OidIsValid(hash->skewTable),
							hash->plan.parallel_aware,
							hash->plan.parallel_aware ? w->parallel_workers : 0,
							&space_allowed, &t->nbuckets, &t->nbatch,
							&num_skew_mcvs);

	/* HashJoinTuple header + MinimalTuple, MAXALIGNed by dense_alloc() */
	tuple_size = HJTUPLE_OVERHEAD + MAXALIGN(SizeofMinimalTupleHeader) +
		MAXALIGN(t->width);
	rows_in_memory = Max(t->rows, 1.0) / t->nbatch;

	/* Dense chunks of HASH_CHUNK_SIZE; big tuples get a chunk of their own. */
	if (tuple_size > HASH_CHUNK_THRESHOLD)
		chunks = rows_in_memory;
	else
	{
		per_chunk = floor(HASH_CHUNK_SIZE / tuple_size);
		chunks = ceil(rows_in_memory / per_chunk);
	}
	t->bytes = rows_in_memory * tuple_size + chunks * HASH_CHUNK_HEADER_SIZE;
	if (t->nbatch > 1)
		t->bytes = Min(t->bytes, (double) space_allowed);
	t->bytes += (double) t->nbuckets * sizeof(HashJoinTuple);
	use_learned_size(t, w);
	return t;
}

/* Hash aggregation: groups x entry size, capped by hash_mem (it spills). */
static void
estimate_hash_agg(Plan *plan, long groups, Size transition_space, WalkState *w)
{
	MccdbTable *t = new_table(MCCDB_HASH_AGG, plan, w);
	Size		entry = hash_agg_entry_size(1, plan->plan_width, transition_space);

	t->rows = (double) Max(groups, 1);
	t->width = plan->plan_width;
	t->relation = scanned_relation(outerPlan(plan), w->stmt);
	t->bytes = Min(t->rows * entry, (double) get_hash_memory_limit());
	use_learned_size(t, w);
	t->counted = true;
	w->upper_bytes += t->bytes;
}

/* What one join on the outer spine contributes; records its table. */
static JoinRole
spine_join_role(Plan *join, WalkState *w, bool counted)
{
	Plan	   *inner = innerPlan(join);

	if (IsA(join, HashJoin))
	{
		MccdbTable *t = estimate_hash_node((Hash *) inner, w);

		t->counted = counted;
		if (counted)
			w->join_bytes += t->bytes;
		walk_plan(outerPlan(inner), w);
		return JOIN_HASH_LIKE;
	}
	if (IsA(join, MergeJoin))
	{
		walk_plan(inner, w);
		return JOIN_MERGE;
	}

	/* Nested loop: an index (or bitmap) scan under the inner makes it an index join. */
	{
		Plan	   *p = skip_passthrough(inner);

		if (p != NULL && (IsA(p, IndexScan) || IsA(p, IndexOnlyScan) ||
						  IsA(p, BitmapHeapScan)))
		{
			walk_plan(inner, w);
			return JOIN_INDEX;
		}
	}

	/*
	 * A nested loop without an index re-reads its whole inner side for
	 * every outer tuple: that inner is its reused working set.
	 */
	{
		MccdbTable *t = new_table(MCCDB_RESCANNED_INNER, inner, w);

		t->rows = Max(inner->plan_rows, 1.0);
		t->width = inner->plan_width;
		t->relation = scanned_relation(inner, w->stmt);
		/* a MinimalTuple in a tuplestore: header + data + palloc chunk */
		t->bytes = t->rows * (MAXALIGN(SizeofMinimalTupleHeader) +
							  MAXALIGN(t->width) + 16);
		use_learned_size(t, w);
		t->counted = counted;
		if (counted)
			w->join_bytes += t->bytes;
		walk_plan(inner, w);
		return JOIN_HASH_LIKE;
	}
}

/* A join tree: follow the outer (probe) spine down to its bottom join. */
static void
walk_join_tree(Plan *top, WalkState *w)
{
	List	   *spine = NIL;
	Plan	   *j = top;
	int			n;
	int			i;

	w->found_join = true;
	for (;;)
	{
		Plan	   *outer;

		spine = lappend(spine, j);
		if (innerPlan(j) != NULL && contains_join(innerPlan(j), NULL))
			w->bushy = true;
		outer = skip_passthrough(outerPlan(j));
		if (!is_join(outer))
			break;
		j = outer;
	}

	n = list_length(spine);
	for (i = 0; i < n; i++)
	{
		Plan	   *join = list_nth(spine, i);
		bool		bottom_two = (i >= n - 2);
		JoinRole	role = spine_join_role(join, w, bottom_two);

		if (bottom_two)
		{
			w->bottom_joins++;
			if (role == JOIN_HASH_LIKE)
				w->bottom_hash_like++;
			else if (role == JOIN_MERGE)
				w->bottom_merge = true;
		}
	}
	/* Whatever feeds the bottom join's outer side (scans, subqueries). */
	walk_plan(outerPlan((Plan *) llast(spine)), w);
	list_free(spine);
}

/*
 * Walk from a plan's root to its join tree, noting the hash aggregates and
 * setops above it.  Only the first join tree found is the query's join tree;
 * any other (under Append, in a subquery) is walked for its tables only.
 */
static void
walk_plan(Plan *plan, WalkState *w)
{
	ListCell   *lc;
	int			saved_workers = w->parallel_workers;

	if (plan == NULL)
		return;
	check_stack_depth();

	if (is_join(plan))
	{
		if (!w->found_join)
			walk_join_tree(plan, w);
		else
		{
			/* A join below the decisive tree: record its tables only. */
			WalkState	sub = *w;

			sub.tables = NIL;
			sub.found_join = false;
			sub.bottom_joins = sub.bottom_hash_like = 0;
			sub.join_bytes = sub.upper_bytes = 0;
			walk_join_tree(plan, &sub);
			foreach(lc, sub.tables)
				((MccdbTable *) lfirst(lc))->counted = false;
			w->tables = list_concat(w->tables, sub.tables);
		}
		return;
	}

	switch (nodeTag(plan))
	{
		case T_Agg:
			{
				Agg		   *agg = (Agg *) plan;

				if (agg->aggstrategy == AGG_HASHED || agg->aggstrategy == AGG_MIXED)
					estimate_hash_agg(plan, agg->numGroups, agg->transitionSpace, w);
				break;
			}
		case T_SetOp:
			if (((SetOp *) plan)->strategy == SETOP_HASHED)
				estimate_hash_agg(plan, ((SetOp *) plan)->numGroups, 0, w);
			break;
		case T_Gather:
			w->parallel_workers = ((Gather *) plan)->num_workers;
			break;
		case T_GatherMerge:
			w->parallel_workers = ((GatherMerge *) plan)->num_workers;
			break;
		default:
			break;
	}
	(void) mccdb_plan_children_walk(plan, walk_child, w);
	w->parallel_workers = saved_workers;
}

static bool
walk_child(Plan *plan, void *context)
{
	walk_plan(plan, (WalkState *) context);
	return false;
}

void
mccdb_estimate_locality(PlannedStmt *stmt, MccdbLocality *out)
{
	WalkState	w;
	Size		llc = mccdb_llc_bytes();
	double		significant = strong_limit * (double) llc;
	ListCell   *lc;

	memset(&w, 0, sizeof(w));
	w.stmt = stmt;
	walk_plan(stmt->planTree, &w);

	/* InitPlans and SubPlans: their hash tables count like upper ones. */
	foreach(lc, stmt->subplans)
	{
		WalkState	sub;
		ListCell   *lc2;

		if (lfirst(lc) == NULL)
			continue;
		memset(&sub, 0, sizeof(sub));
		sub.stmt = stmt;
		walk_plan((Plan *) lfirst(lc), &sub);
		foreach(lc2, sub.tables)
			((MccdbTable *) lfirst(lc2))->counted = false;
		w.tables = list_concat(w.tables, sub.tables);
		if (sub.join_bytes + sub.upper_bytes >= significant)
			w.upper_bytes += sub.join_bytes + sub.upper_bytes;
	}

	/*
	 * Aggregation normally builds tiny hash tables (the paper measured about
	 * 100 kB for SSB) and the join tree decides; a hash table big enough to
	 * matter (>= the strong limit) joins S.
	 */
	if (w.upper_bytes < significant)
	{
		foreach(lc, w.tables)
		{
			MccdbTable *t = lfirst(lc);

			if (t->kind == MCCDB_HASH_AGG)
				t->counted = false;
		}
		w.upper_bytes = 0;
	}

	out->llc_bytes = llc;
	out->tables = w.tables;
	out->learned = false;
	foreach(lc, w.tables)
		if (((MccdbTable *) lfirst(lc))->counted && ((MccdbTable *) lfirst(lc))->learned)
			out->learned = true;
	out->bytes = w.join_bytes + w.upper_bytes;
	if (w.found_join && w.bottom_hash_like > 0)
	{
		out->cls = mccdb_classify_bytes(out->bytes, llc);
		out->basis = w.bushy ? "hash tables (bushy tree)" : "hash tables";
	}
	else if (w.upper_bytes > 0)
	{
		out->cls = mccdb_classify_bytes(out->bytes, llc);
		out->basis = w.found_join ? "index joins, hash aggregation" : "hash aggregation";
	}
	else
	{
		out->cls = MCCDB_WEAK;
		out->bytes = 0;
		if (!w.found_join)
			out->basis = "no join";
		else if (w.bottom_merge)
			out->basis = "merge or index joins";
		else
			out->basis = "index nested loop joins";
	}
}
