/*-------------------------------------------------------------------------
 *
 * mccdb.c
 *		The top floor: _PG_init and the executor and utility hooks.
 *
 * Each module defines its own GUCs and shared memory in its init function
 * (as pg_stat_statements does for itself).  The hooks create one state per
 * statement at ExecutorStart (state.h) and hand it on, in one direction:
 * partition -> admission -> counters -> explain and recent at ExecutorEnd.
 * Every hook chains to the one installed before it.
 *
 * mccdb must be loaded through shared_preload_libraries: it needs shared
 * memory and must see every query.  Loaded any other way (CREATE EXTENSION
 * or a function call without the preload) it installs nothing, and every
 * SQL function says so with a hint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "admission.h"
#include "cache_geometry.h"
#include "compat.h"
#include "counters.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "locality.h"
#include "mccdb_explain.h"
#include "miscadmin.h"
#include "partition.h"
#include "plan_choice.h"
#include "query_id.h"
#include "query_stats.h"
#include "recent.h"
#include "server_cost.h"
#include "state.h"
#include "table_sizes.h"
#include "topology.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "commands/dbcommands.h"
#include "workload_class.h"

PG_MODULE_MAGIC;

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

void		_PG_init(void);

/*
 * Does any module act on this statement before it runs or when it ends?
 * EXPLAIN shows it; a client's statement may be coloured, counted,
 * recorded, or teach its hash tables' sizes.  Compares and a walk of a
 * point lookup's node or two: a statement nothing wants gets no state at
 * all (no memory context, no lock), and the gate, which asks at each run,
 * makes one then if it stands in front of it (executor_run).
 */
static bool
statement_wanted(QueryDesc *queryDesc, int eflags, bool top)
{
	PlannedStmt *plan = queryDesc->plannedstmt;

	if (mccdb_explain_wants(queryDesc) || mccdb_recent_wants_statement(plan, top, eflags))
		return true;
	return top &&
		(mccdb_counters_wanted() || mccdb_partition_wants(plan) ||
		 (mccdb_table_sizes_enabled() && plan->queryId != 0 && mccdb_plan_holds_tables(plan)));
}

/*
 * The statement's state is created before the executor starts: its page
 * colours are set first, so that its executor state lands on them too, not
 * only the hash tables built later (scripts/testbox checks every page the
 * query faults in).  Hardware counters start with the top-level statement.
 */
static void
mccdb_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		top = mccdb_client_statement() &&
		!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !IsParallelWorker();
	MccdbStatement *st;

	if (IsParallelWorker())
		mccdb_admission_parallel_worker_start(queryDesc);
	mccdb_gate_narrow_plan(queryDesc);
	if (!statement_wanted(queryDesc, eflags, top))
	{
		if (prev_ExecutorStart)
			prev_ExecutorStart(queryDesc, eflags);
		else
			standard_ExecutorStart(queryDesc, eflags);
		return;
	}
	st = mccdb_statement_begin(queryDesc, top);

	st->explain = mccdb_explain_wants(queryDesc);
	st->plan_choice = mccdb_plan_choice_of(queryDesc->plannedstmt, st->cxt);
	PG_TRY();
	{
		if (top)
			mccdb_partition_statement_start(st);
		if (prev_ExecutorStart)
			prev_ExecutorStart(queryDesc, eflags);
		else
			standard_ExecutorStart(queryDesc, eflags);
	}
	PG_CATCH();
	{
		mccdb_statement_end(st);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (top)
		mccdb_counters_statement_start(st);
}

/* The run itself, one nesting level down: what it executes is nested. */
static void
run_nested(QueryDesc *queryDesc, ScanDirection direction, uint64 count,
		   bool execute_once)
{
	mccdb_nesting_enter();
	PG_TRY();
	{
		if (prev_ExecutorRun)
			mccdb_call_executor_run(prev_ExecutorRun, queryDesc, direction, count,
									execute_once);
		else
			mccdb_call_executor_run(standard_ExecutorRun, queryDesc, direction, count,
									execute_once);
	}
	PG_FINALLY();
	{
		mccdb_nesting_leave();
	}
	PG_END_TRY();
}

/*
 * The admission gate stands in front of every run (gate.c).  A statement
 * without a state gets one here when the gate may stand in front of it (a
 * cursor a function opened, fetched at the client's level).
 */
static void
executor_run(QueryDesc *queryDesc, ScanDirection direction, uint64 count,
			 bool execute_once)
{
	MccdbStatement *st = mccdb_statement_find(queryDesc);

	if (st == NULL)
	{
		if (!mccdb_gate_wants(queryDesc))
		{
			mccdb_admission_count_bypass(queryDesc);
			run_nested(queryDesc, direction, count, execute_once);
			return;
		}
		st = mccdb_statement_begin(queryDesc, mccdb_client_statement());
	}
	mccdb_admission_run(st, direction, count, execute_once, run_nested);
}

static void
mccdb_ExecutorRun(MCCDB_EXECUTOR_RUN_PARAMS)
{
	executor_run(queryDesc, direction, count, MCCDB_EXECUTE_ONCE);
}

static void
mccdb_ExecutorFinish(QueryDesc *queryDesc)
{
	mccdb_nesting_enter();
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		mccdb_nesting_leave();
	}
	PG_END_TRY();
}

/*
 * The database a statement takes the workload classes' table away from,
 * or InvalidOid: DROP EXTENSION mccdb (this database) or DROP DATABASE
 * (looked up before it is gone).  If the classes in force came from it,
 * they go when the drop commits (workload_class.c).
 */
static Oid
drops_classes_source(Node *stmt)
{
	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_EXTENSION)
	{
		ListCell   *lc;

		foreach(lc, ((DropStmt *) stmt)->objects)
			if (strcmp(strVal(lfirst(lc)), "mccdb") == 0)
				return MyDatabaseId;
	}
	else if (IsA(stmt, DropdbStmt))
		return get_database_oid(((DropdbStmt *) stmt)->dbname, true);
	return InvalidOid;
}

/*
 * Does this utility run, at its own level, a query the client sent?
 * EXPLAIN (ANALYZE), CREATE TABLE AS and SELECT INTO, REFRESH MATERIALIZED
 * VIEW, EXECUTE, DECLARE and FETCH of a cursor, COPY TO: their query stays
 * at the client's level.  Whatever any other utility runs is nested, as
 * what a function runs is: DO and CALL, event triggers, the deferred
 * triggers SET CONSTRAINTS fires, the index expressions CREATE INDEX,
 * VACUUM and ANALYZE evaluate, COPY FROM's triggers.
 */
static bool
runs_client_query(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_ExplainStmt:
		case T_CreateTableAsStmt:
		case T_RefreshMatViewStmt:
		case T_ExecuteStmt:
		case T_DeclareCursorStmt:
		case T_FetchStmt:
			return true;
		case T_CopyStmt:
			return !((CopyStmt *) stmt)->is_from;
		default:
			return false;
	}
}

static void
mccdb_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	bool		nests = !runs_client_query(stmt);
	bool		explain = IsA(stmt, ExplainStmt);
	int			saved_explain = 0;
	Oid			classes_source = drops_classes_source(stmt);

	if (nests)
		mccdb_nesting_enter();
	if (explain)
		saved_explain = mccdb_explain_enter();
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		if (explain)
			mccdb_explain_leave(saved_explain);
		if (nests)
			mccdb_nesting_leave();
	}
	PG_END_TRY();
	/* DISCARD ALL resets a session for its next user: the hold too */
	if (IsA(stmt, DiscardStmt) && ((DiscardStmt *) stmt)->target == DISCARD_ALL)
		mccdb_admission_discard();
	if (OidIsValid(classes_source))
		mccdb_workload_class_source_dropped(classes_source);
}

/*
 * Stop the counters, give the slots back, then measure the hash tables
 * while the plan state still holds them, show the locality in EXPLAIN and
 * record it.  The estimate is written not to fail for a valid plan (only
 * running out of memory would), and no error is caught here: catching one
 * without a subtransaction would leave what the failed code held, and a
 * subtransaction per statement costs too much.  The partition is given
 * back when the statement's memory goes (partition.c), on every path.
 */
static void
mccdb_ExecutorEnd(QueryDesc *queryDesc)
{
	MccdbStatement *st = mccdb_statement_find(queryDesc);

	if (st != NULL)
	{
		bool		record = mccdb_recent_wants(st);
		bool		learn = st->top && mccdb_table_sizes_enabled() &&
			queryDesc->plannedstmt->queryId != 0;

		mccdb_counters_statement_stop(st);
		mccdb_admission_statement_end(st);
		if (st->explain || record || learn)
		{
			MccdbLocality *loc = mccdb_statement_locality(st);
			MemoryContext old = MemoryContextSwitchTo(st->cxt);

			mccdb_measure_tables(queryDesc->planstate, loc);
			MemoryContextSwitchTo(old);
			if (st->explain)
				mccdb_explain_statement_end(st);
			if (record)
				mccdb_recent_record(st);
			if (learn)
				mccdb_learn_table_sizes(queryDesc->plannedstmt->queryId, loc);
		}
	}

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (st != NULL)
		mccdb_statement_end(st);
	/* a worker's part is done: its slot to the waiters, not to its exit */
	if (IsParallelWorker())
		mccdb_admission_parallel_worker_end();
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	mccdb_topology_init();
	mccdb_cache_geometry_init();
	mccdb_locality_init();
	mccdb_table_sizes_init();
	mccdb_explain_init();
	mccdb_recent_init();
	mccdb_plan_choice_init();
	/* after plan choice: its planner hook prices the plan plan choice returns */
	mccdb_server_cost_init();
	mccdb_admission_init();
	mccdb_learned_init();
	mccdb_workload_class_init();
	mccdb_query_stats_init();
	mccdb_counters_init();
	mccdb_partition_init();
	mccdb_query_id_init();
	MarkGUCPrefixReserved("mccdb");

	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = mccdb_ExecutorStart;
	prev_ExecutorRun = ExecutorRun_hook;
	ExecutorRun_hook = mccdb_ExecutorRun;
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = mccdb_ExecutorFinish;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = mccdb_ExecutorEnd;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = mccdb_ProcessUtility;

	mccdb_preloaded = true;
}
