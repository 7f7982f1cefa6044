/*-------------------------------------------------------------------------
 *
 * state.h
 *		What this backend knows that every module may read: whether mccdb
 *		was preloaded, how deeply execution is nested, whether a statement
 *		is the client's, whether the planner plans for an EXPLAIN, and the
 *		state of each statement it executes.
 *
 * The state flows one way: mccdb.c (the hooks) creates a statement's state
 * at ExecutorStart and hands it to partition.c, gate.c, counters.c,
 * explain.c and recent.c in turn; none of them reaches back into mccdb.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_STATE_H
#define MCCDB_STATE_H

#include "executor/execdesc.h"
#include "locality.h"
#include "utils/timestamp.h"

#define MCCDB_NCOUNTERS 3		/* LLC misses, instructions, cycles */

struct MccdbPlanChoice;

/* What the admission gate decided for a statement (gate.c). */
typedef struct MccdbAdmission
{
	bool		gated;			/* went through the gate (else bypassed) */
	bool		counted;		/* admitted and not ended: keeps the entry */
	struct _DestReceiver *receiver;	/* in front of its runs' own (gate.c) */
	int64		admit_seq;		/* order of admission, from 1 */
	TimestampTz admitted;
	TimestampTz released;		/* when the statement gave its slots back */
	double		waited_ms;
} MccdbAdmission;

/*
 * One statement being executed.  It lives in its own memory context, a
 * child of the context ExecutorStart ran in, so it is freed with the
 * statement on every path (ExecutorEnd, error, portal drop).
 */
typedef struct MccdbStatement
{
	QueryDesc  *queryDesc;
	MemoryContext cxt;
	int			level;			/* execution nesting level at ExecutorStart */
	bool		top;			/* a client's statement (mccdb_client_statement),
								 * really executed */
	bool		explain;		/* the plan an EXPLAIN in progress shows */
	Cost		real_cost;		/* the plan's cost under the server's cost settings,
								 * without disable_cost (server_cost.h) */
	bool		cost_known;		/* else a plan priced under the session's own
								 * settings whose server cost was forgotten */
	bool		have_locality;
	MccdbLocality locality;		/* estimated once, by mccdb_statement_locality() */
	bool		have_work_memory;
	double		work_memory;	/* bytes, once, by mccdb_statement_work_memory() */
	const struct MccdbPlanChoice *plan_choice;	/* candidates, if the planner chose */
	MccdbAdmission admission;
	bool		counting;		/* hardware counters were started */
	bool		have_counters;
	int64		counters[MCCDB_NCOUNTERS];
	struct MccdbStatement *next;
} MccdbStatement;

/* Set by _PG_init when loaded through shared_preload_libraries. */
extern bool mccdb_preloaded;
extern void mccdb_require_preload(void);

/* Nesting: statements run by functions, DO and CALL are nested (level > 0). */
extern int	mccdb_nesting_level(void);
extern void mccdb_nesting_enter(void);
extern void mccdb_nesting_leave(void);

/*
 * Is the executor starting a statement the client sent (level 0, a client
 * backend, inside the client's portal: not a deferred trigger at COMMIT)?
 */
extern bool mccdb_client_statement(void);

/*
 * EXPLAIN plans the statement it shows as a client's, even inside a
 * function: the utility hook marks the level an EXPLAIN runs at, and the
 * planner asks whether it plans at that level.
 */
extern int	mccdb_explain_enter(void);
extern void mccdb_explain_leave(int saved);
extern bool mccdb_planning_for_explain(void);

extern MccdbStatement *mccdb_statement_begin(QueryDesc *queryDesc, bool top);
extern MccdbStatement *mccdb_statement_find(QueryDesc *queryDesc);
extern MccdbStatement *mccdb_statement_find_plan(const PlannedStmt *plan);
extern bool mccdb_estimate_guarded(void (*fn) (void *arg), void *arg);
extern void mccdb_statement_end(MccdbStatement *st);
extern MccdbLocality *mccdb_statement_locality(MccdbStatement *st);
extern double mccdb_statement_work_memory(MccdbStatement *st);

#endif							/* MCCDB_STATE_H */
