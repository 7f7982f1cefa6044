/*-------------------------------------------------------------------------
 *
 * locality.h
 *		Locality strength of a query plan (section 4 of the MCC-DB paper).
 *
 * A pure function of a PlannedStmt and the mccdb GUCs, so the planner hook
 * and the scheduler can call it on any candidate plan.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_LOCALITY_H
#define MCCDB_LOCALITY_H

#include "nodes/pg_list.h"
#include "nodes/plannodes.h"

struct PlanState;

typedef enum MccdbLocalityClass
{
	MCCDB_STRONG,
	MCCDB_MODERATE,
	MCCDB_WEAK
} MccdbLocalityClass;

/* The kinds of data structure a plan keeps re-reading. */
typedef enum MccdbTableKind
{
	MCCDB_HASH_JOIN,			/* in-memory hash table of a Hash node */
	MCCDB_HASH_AGG,				/* hash aggregation or hashed SetOp */
	MCCDB_RESCANNED_INNER		/* inner of a nested loop without an index */
} MccdbTableKind;

/* Relation OIDs a table keeps to tell it from another node of that id. */
#define MCCDB_TABLE_RELIDS 8

/* One reused structure of the plan, estimated and (after execution) measured. */
typedef struct MccdbTable
{
	MccdbTableKind kind;
	int			plan_node_id;	/* the Hash, Agg, SetOp or inner node */
	int			nrelids;		/* base relations the node's subtree scans */
	Oid			relids[MCCDB_TABLE_RELIDS];	/* the first of them, in OID order */
	char	   *relation;		/* alias of the base relation it holds, or NULL */
	double		rows;			/* planner's row estimate */
	int			width;			/* planner's width estimate */
	int			nbuckets;		/* hash joins: buckets ExecChooseHashTableSize picks */
	int			nbatch;			/* hash joins: batches ExecChooseHashTableSize picks */
	double		bytes;			/* estimated peak size in memory */
	bool		counted;		/* part of the S that decides the class */
	bool		learned;		/* bytes is the size of an earlier run, not the planner's */
	double		planner_bytes;	/* the planner's estimate, when bytes is learned */
	/* Filled in by mccdb_measure_tables() after execution, else negative. */
	double		actual_bytes;	/* peak hash table memory (PostgreSQL's own) */
	double		actual_rows;
	int			actual_nbatch;
} MccdbTable;

typedef struct MccdbLocality
{
	MccdbLocalityClass cls;
	double		bytes;			/* S: the sizes that decide the class */
	Size		llc_bytes;		/* C */
	const char *basis;			/* why, in a few words (see docs/design.md) */
	bool		learned;		/* some table counted in S has a learned size */
	List	   *tables;			/* every MccdbTable found, counted or not */
} MccdbLocality;

extern void mccdb_estimate_locality(PlannedStmt *stmt, MccdbLocality *out);
extern MccdbLocalityClass mccdb_classify_bytes(double bytes, Size llc_bytes);
extern void mccdb_locality_init(void);
extern const char *mccdb_locality_class_name(MccdbLocalityClass cls);
extern int	mccdb_locality_class_from_name(const char *name);

/* Might the plan build a table the estimate counts?  (Cheap: errs towards yes.) */
extern bool mccdb_plan_holds_tables(PlannedStmt *stmt);

/* A plan's cost without the disable_cost that enable_* = off added. */
extern Cost mccdb_real_cost(PlannedStmt *stmt);
/* Take that disable_cost out of the plan's nodes themselves. */
extern void mccdb_strip_disable_cost(PlannedStmt *stmt);
extern const char *mccdb_table_kind_name(MccdbTableKind kind, bool capitalised);

/*
 * A size or row count held as a double, as a bigint for SQL and EXPLAIN:
 * plan row estimates reach 1e100, and (int64) of a double out of its range
 * is undefined behaviour.  Out of range is the nearest bound; NaN is 0.
 */
static inline int64
mccdb_double_to_int64(double v)
{
	if (v != v)
		return 0;
	if (v >= (double) PG_INT64_MAX)
		return PG_INT64_MAX;
	if (v <= (double) PG_INT64_MIN)
		return PG_INT64_MIN;
	return (int64) v;
}

extern char *mccdb_locality_describe(const MccdbLocality *loc);
extern char *mccdb_format_bytes(double bytes);

/* hash_actual.c: actual peak sizes from an executed plan state tree */
extern void mccdb_measure_tables(struct PlanState *planstate, MccdbLocality *loc);

#endif							/* MCCDB_LOCALITY_H */
