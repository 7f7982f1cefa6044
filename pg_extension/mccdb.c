/*-------------------------------------------------------------------------
 *
 * mccdb.c
 *		Module load: GUCs and hook installation (the hooks chain to any
 *		previous ones, as contrib/pg_stat_statements does).
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
#include "commands/extension.h"
#include "counters.h"
#include "partition.h"
#include "storage/ipc.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "locality.h"
#include "mccdb.h"
#include "plan_choice.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/memutils.h"

PG_MODULE_MAGIC;

/* GUCs */
int			mccdb_llc_size_kb = 0;
double		mccdb_strong_limit = 1.0 / 3.0;
double		mccdb_weak_limit = 3.0;
bool		mccdb_explain = true;
int			mccdb_track = MCCDB_TRACK_TOP;
int			mccdb_recent_max = 256;
int			mccdb_plan_policy = MCCDB_PLAN_OFF;
double		mccdb_cost_slack = 0.30;
int			mccdb_schedule = MCCDB_SCHEDULE_OFF;
int			mccdb_corun_slots = 0;
int			mccdb_max_wait = 30000;
double		mccdb_min_cost = 1000.0;
bool		mccdb_counters = false;
int			mccdb_partition_mode = MCCDB_PARTITION_AUTO;
char	   *mccdb_buffer_pool_colors = NULL;
char	   *mccdb_resctrl_path = NULL;
int			mccdb_weak_cache_ways = 2;

bool		mccdb_preloaded = false;
int			mccdb_exec_nested_level = 0;

static const struct config_enum_entry track_options[] = {
	{"none", MCCDB_TRACK_NONE, false},
	{"top", MCCDB_TRACK_TOP, false},
	{"all", MCCDB_TRACK_ALL, false},
	{NULL, 0, false}
};

static const struct config_enum_entry plan_policy_options[] = {
	{"off", MCCDB_PLAN_OFF, false},
	{"sls", MCCDB_PLAN_SLS, false},
	{"mls", MCCDB_PLAN_MLS, false},
	{NULL, 0, false}
};

static const struct config_enum_entry schedule_options[] = {
	{"off", MCCDB_SCHEDULE_OFF, false},
	{"sls", MCCDB_SCHEDULE_SLS, false},
	{"mls", MCCDB_SCHEDULE_MLS, false},
	{"adaptive", MCCDB_SCHEDULE_ADAPTIVE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry partition_options[] = {
	{"off", MCCDB_PARTITION_OFF, false},
	{"auto", MCCDB_PARTITION_AUTO, false},
	{NULL, 0, false}
};

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ExecutorRun_hook_type prev_ExecutorRun = NULL;
static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

void		_PG_init(void);

void
mccdb_require_preload(void)
{
	if (!mccdb_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mccdb must be loaded via shared_preload_libraries"),
				 errhint("Add mccdb to shared_preload_libraries in postgresql.conf and restart the server.")));
}

static bool
track_this_level(void)
{
	return mccdb_track == MCCDB_TRACK_ALL ||
		(mccdb_track == MCCDB_TRACK_TOP && mccdb_exec_nested_level == 0);
}

/*
 * The query's page colours are set before the executor starts, so that its
 * executor state lands on them too, not only the hash tables built later
 * (scripts/testbox checks every page the query faults in).  Hardware
 * counters start with the top-level query (counters.c).
 */
static void
mccdb_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	bool		top = mccdb_exec_nested_level == 0 &&
		!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && !IsParallelWorker();

	if (top)
		mccdb_partition_query_start(queryDesc->plannedstmt);
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (top && mccdb_counters)
		mccdb_counters_start();
}

/* After all shared memory, including the buffer pool, exists (postmaster). */
static void
mccdb_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	if (!IsUnderPostmaster)
		mccdb_partition_startup();
}

/* Nesting depth, to tell top-level statements from those run by functions. */
static void
run_counting_nesting(QueryDesc *queryDesc, ScanDirection direction,
					 uint64 count, bool execute_once)
{
	mccdb_exec_nested_level++;
	PG_TRY();
	{
		if (prev_ExecutorRun)
			prev_ExecutorRun(queryDesc, direction, count, execute_once);
		else
			standard_ExecutorRun(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		mccdb_exec_nested_level--;
	}
	PG_END_TRY();
}

/* The admission gate stands in front of every run (admission.c). */
static void
mccdb_ExecutorRun(QueryDesc *queryDesc, ScanDirection direction, uint64 count,
				  bool execute_once)
{
	mccdb_admission_run(queryDesc, direction, count, execute_once,
						run_counting_nesting);
}

static void
mccdb_ExecutorFinish(QueryDesc *queryDesc)
{
	mccdb_exec_nested_level++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		mccdb_exec_nested_level--;
	}
	PG_END_TRY();
}

/*
 * DO blocks and CALL run statements on the user's behalf, like functions:
 * those count as nested.  Other utilities that run a query (EXPLAIN
 * ANALYZE, CREATE TABLE AS, EXECUTE, COPY) leave it at the top level.
 */
static void
mccdb_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	bool		nests = IsA(stmt, DoStmt) || IsA(stmt, CallStmt);

	if (nests)
		mccdb_exec_nested_level++;
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
		if (nests)
			mccdb_exec_nested_level--;
	}
	PG_END_TRY();
}

/*
 * Estimate and measure while the plan state still holds its hash tables,
 * then show it in EXPLAIN and record it.  A failure here is reported and
 * swallowed: estimation must never make a query fail.
 */
static void
mccdb_ExecutorEnd(QueryDesc *queryDesc)
{
	bool		explain = mccdb_explain_wants(queryDesc);
	bool		record = !(queryDesc->estate->es_top_eflags & EXEC_FLAG_EXPLAIN_ONLY) &&
		!creating_extension && !IsParallelWorker() && track_this_level();

	if (explain || record)
	{
		MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
												  "mccdb locality",
												  ALLOCSET_SMALL_SIZES);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		PG_TRY();
		{
			MccdbLocality loc;

			mccdb_estimate_locality(queryDesc->plannedstmt, &loc);
			mccdb_measure_tables(queryDesc->planstate, &loc);
			if (explain)
				mccdb_explain_executor_end(queryDesc, &loc);
			if (record)
				mccdb_recent_record(queryDesc, &loc);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(old);
			edata = CopyErrorData();
			FlushErrorState();
			ereport(WARNING,
					(errmsg("mccdb: locality estimation failed: %s", edata->message)));
			FreeErrorData(edata);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
	}

	if (mccdb_exec_nested_level == 0 && !IsParallelWorker())
		mccdb_partition_query_end();

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

static void
define_gucs(void)
{
	DefineCustomIntVariable("mccdb.llc_size",
							"Size of the last-level cache (C) the locality classes are measured against.",
							"0 means the size of the largest cache level of cpu0 in sysfs.",
							&mccdb_llc_size_kb,
							0, 0, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.strong_limit",
							 "Hash tables smaller than this fraction of the LLC have strong locality.",
							 "The MCC-DB paper uses 1/3.",
							 &mccdb_strong_limit,
							 1.0 / 3.0, 0.001, 1000.0,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.weak_limit",
							 "Hash tables at least this multiple of the LLC have weak locality.",
							 "The MCC-DB paper uses 3. Between the two limits locality is moderate.",
							 &mccdb_weak_limit,
							 3.0, 0.001, 1000.0,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("mccdb.explain",
							 "Shows the locality estimate in EXPLAIN output.",
							 NULL,
							 &mccdb_explain,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("mccdb.track",
							 "Which statements are recorded in mccdb_recent_queries.",
							 "top: statements issued by clients; all: also those run inside functions; none: nothing.",
							 &mccdb_track,
							 MCCDB_TRACK_TOP, track_options,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.recent_queries",
							"Number of queries kept in mccdb_recent_queries.",
							NULL,
							&mccdb_recent_max,
							256, 0, 100000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("mccdb.plan_policy",
							 "How the planner picks among candidate plans of similar cost.",
							 "sls: strong, else weak, else moderate locality; mls: keep the strong/moderate and weak queues balanced; off: PostgreSQL's plan.",
							 &mccdb_plan_policy,
							 MCCDB_PLAN_OFF, plan_policy_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.cost_slack",
							 "Candidate plans costing at most this fraction more than the cheapest are kept.",
							 "The MCC-DB paper uses 0.30.",
							 &mccdb_cost_slack,
							 0.30, 0.0, 100.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("mccdb.schedule",
							 "Which queries are co-scheduled (run at the same time).",
							 "off: all at once; sls: same locality queue; mls: one of each queue; adaptive: least predicted slowdown.",
							 &mccdb_schedule,
							 MCCDB_SCHEDULE_OFF, schedule_options,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.corun_slots",
							"How many queries run at once when scheduling.",
							"0 means the number of CPUs sharing the last-level cache. Parallel workers take slots too.",
							&mccdb_corun_slots,
							0, 0, 1024,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.max_wait",
							"A query that waited this long is admitted next, whatever the policy.",
							NULL,
							&mccdb_max_wait,
							30000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.min_cost",
							 "Queries with a lower estimated cost bypass the scheduler.",
							 NULL,
							 &mccdb_min_cost,
							 1000.0, 0.0, 1e100,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("mccdb.counters",
							 "Counts LLC misses, instructions and cycles per query (perf_event, libpfm4).",
							 "Where the PMU is not available the counters are NULL and the reason is logged once.",
							 &mccdb_counters,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("mccdb.partition",
							 "Partitions the last-level cache between weak and strong plans.",
							 "auto: page colours where the kernel has them, else resctrl where mounted, else nothing.",
							 &mccdb_partition_mode,
							 MCCDB_PARTITION_AUTO, partition_options,
							 PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("mccdb.buffer_pool_colors",
							   "Page colours of the shared buffer pool and of weak plans, e.g. '0-3'.",
							   "Empty means as few as hold the buffer pool in physical memory, plus 25%.",
							   &mccdb_buffer_pool_colors,
							   "",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("mccdb.resctrl_path",
							   "Where resctrl is mounted, for hardware cache allocation.",
							   NULL,
							   &mccdb_resctrl_path,
							   "/sys/fs/resctrl",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.weak_cache_ways",
							"L3 ways a weak plan may use under resctrl.",
							NULL,
							&mccdb_weak_cache_ways,
							2, 1, 64,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("mccdb");
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	define_gucs();
	mccdb_cache_geometry_load();
	mccdb_recent_install();
	mccdb_admission_install();
	mccdb_explain_install();
	mccdb_plan_choice_install();

	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = mccdb_shmem_startup;
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
