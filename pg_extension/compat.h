/*-------------------------------------------------------------------------
 *
 * compat.h
 *		The PostgreSQL major-version differences mccdb meets, in one place.
 *
 * mccdb builds from one source tree against PostgreSQL 15 and 18 (both
 * built and tested; the checks follow the server's history, so 16 and 17
 * should build too, untested).  Every PG_VERSION_NUM test on a server API
 * lives here; the rest of the code calls the names below.  Features only
 * a newer server has (EXPLAIN options, named wait events) are chosen where
 * they are used, each behind a MCCDB_HAVE_ macro from this file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_COMPAT_H
#define MCCDB_COMPAT_H

#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/guc_tables.h"
#include "utils/wait_event.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif
#if PG_VERSION_NUM >= 160000
#include "nodes/queryjumble.h"	/* JumbleQuery() */
#else
#include "utils/queryjumble.h"
#endif

/* PostgreSQL's query identifier of an analysed statement (queryId). */
#if PG_VERSION_NUM >= 160000
#define mccdb_jumble_query(query, text) JumbleQuery(query)
#else
#define mccdb_jumble_query(query, text) JumbleQuery(query, text)
#endif

#if PG_VERSION_NUM < 150000
#error "mccdb needs PostgreSQL 15 or later"
#endif

/* EXPLAIN extension options and explain_per_plan_hook (18). */
#define MCCDB_HAVE_EXPLAIN_HOOKS	(PG_VERSION_NUM >= 180000)
/* Wait events an extension names (17). */
#define MCCDB_HAVE_CUSTOM_WAIT_EVENTS (PG_VERSION_NUM >= 170000)
/*
 * Plans count the nodes the enable_* settings disable apart from their
 * cost (18); before, each such node costs disable_cost (1e10) more.
 */
#define MCCDB_HAVE_DISABLED_NODES	(PG_VERSION_NUM >= 180000)
/* Kinds of cumulative statistics an extension registers (18). */
#define MCCDB_HAVE_CUSTOM_PGSTAT	(PG_VERSION_NUM >= 180000)

/*
 * The wait event a query waiting in mccdb's gate shows in pg_stat_activity:
 * type Extension, event "MccdbAdmission" where the server lets an extension
 * name its events (17), the generic "Extension" before.
 */
#if MCCDB_HAVE_CUSTOM_WAIT_EVENTS
#define mccdb_admission_wait_event() WaitEventExtensionNew("MccdbAdmission")
#else
#define mccdb_admission_wait_event() PG_WAIT_EXTENSION
#endif

/*
 * This backend's slot, 0 .. MaxBackends - 1, in arrays sized MaxBackends.
 * 17 replaced the 1-based BackendId with the 0-based ProcNumber.
 */
#if PG_VERSION_NUM >= 170000
#define mccdb_my_backend_slot()		(MyProcNumber)
#else
#define mccdb_my_backend_slot()		(MyBackendId - 1)
#endif

/* This backend's index in ProcGlobal->allProcs (17: its ProcNumber). */
#if PG_VERSION_NUM >= 170000
#define mccdb_my_pgprocno()			(MyProcNumber)
#else
#define mccdb_my_pgprocno()			(MyProc->pgprocno)
#endif

/*
 * ExecutorRun lost its execute_once argument in 18.  mccdb passes it
 * along internally on every version (true on 18); only the hook's
 * parameters and the calls into the server differ.
 */
#if PG_VERSION_NUM >= 180000
#define MCCDB_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define MCCDB_EXECUTE_ONCE			true
#define mccdb_call_executor_run(fn, qd, dir, count, execute_once) \
	((void) (execute_once), (fn) ((qd), (dir), (count)))
#else
#define MCCDB_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define MCCDB_EXECUTE_ONCE			execute_once
#define mccdb_call_executor_run(fn, qd, dir, count, execute_once) \
	(fn) ((qd), (dir), (count), (execute_once))
#endif

/*
 * The caller's privileges on the relations of a plan, as EXPLAIN checks
 * them; 16 moved the permission bits from the range table to
 * PlannedStmt.permInfos.
 */
#if PG_VERSION_NUM >= 160000
#define mccdb_check_plan_permissions(stmt) \
	((void) ExecCheckPermissions((stmt)->rtable, (stmt)->permInfos, true))
#else
#define mccdb_check_plan_permissions(stmt) \
	((void) ExecCheckRTPerms((stmt)->rtable, true))
#endif

/* ExplainOnePlan() takes the planner's memory counters since 17. */
#if PG_VERSION_NUM >= 170000
#define mccdb_explain_one_plan(plan, into, es, sql, params, env, planduration, bufusage) \
	ExplainOnePlan((plan), (into), (es), (sql), (params), (env), (planduration), (bufusage), NULL)
#else
#define mccdb_explain_one_plan(plan, into, es, sql, params, env, planduration, bufusage) \
	ExplainOnePlan((plan), (into), (es), (sql), (params), (env), (planduration), (bufusage))
#endif

/*
 * The server's table of settings, to read a setting's source: 16 made it a
 * hash table whose array get_guc_variables() hands out with its length.
 */
#if PG_VERSION_NUM >= 160000
#define mccdb_guc_variables(n)		get_guc_variables(n)
#else
#define mccdb_guc_variables(n)		(*(n) = GetNumConfigOptions(), get_guc_variables())
#endif

#endif							/* MCCDB_COMPAT_H */
