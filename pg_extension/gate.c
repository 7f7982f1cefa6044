/*-------------------------------------------------------------------------
 *
 * gate.c
 *		The admission gate in front of ExecutorRun (MCC-DB sections 5.2 and
 *		6.3): a statement enqueues, sleeps until the policy (policy.c) names
 *		it, runs, and gives its slots back; what it ran teaches learned.c.
 *
 * A waiting backend sleeps on a condition variable (wait event
 * Extension/MccdbAdmission in pg_stat_activity, "Extension" before
 * PostgreSQL 17); whoever frees slots or changes the queue broadcasts, and
 * every waiter re-evaluates mccdb_pick_next() under the lock: the one it
 * names takes its slots.
 *
 * The gate is a soft limit on how many queries share the cache, never a
 * lock: it must not stop work that PostgreSQL itself would finish.  So
 * (docs/design.md, "The gate never hangs a workload"):
 *	- a query that waited mccdb.max_wait takes the next free slot, whatever
 *	  the policy or a hold;
 *	- a waiter holding a heavyweight lock that a query running in the gate
 *	  waits for is admitted once it has waited deadlock_timeout: else the
 *	  two would wait for each other where the deadlock detector cannot see
 *	  it (a lock waiter outside the gate holds no slot: no escape for it);
 *	- waiters reload the configuration themselves, so a changed policy or
 *	  slot count reaches them within half a second;
 *	- a hold ends with the session that took it, and never holds that
 *	  session's own statements;
 *	- statements that read nothing but the extension's own functions (its
 *	  views, the hold, the matrix loader) are never gated.
 *
 * The gate's threat model (docs/design.md): it is a boundary between
 * roles, so nothing it decides by may be a number a session sets.
 *	- what a session controls: its cost settings (SET, and ALTER ROLE or
 *	  ALTER DATABASE it owns), its statements, their rows, whether its
 *	  client reads, its locks, its cursors, functions it writes;
 *	- so the gate judges a plan by its cost under the server's cost
 *	  settings (server_cost.c), admits every run of a gated statement (each
 *	  FETCH of a cursor, wherever the cursor was opened; a statement beside
 *	  a lent cursor), lets a lent slot be taken back only by waiting (a
 *	  stalled backend waits when its write returns, gate_receive_slot), and
 *	  escapes the queue for a lock only for a deadlock it would hide;
 *	- what a role learns moves only its own predictions: run times are kept
 *	  per (role, database, queryid, plan class), rates and the interference
 *	  matrix per role (learned.c; each waiter is judged by its own role's),
 *	  hash table sizes per role (table_sizes.c), so that no role sees a
 *	  size of rows it may not read;
 *	- what a role sees: every entry of the queue and of the statistics, but
 *	  another role's queryid, sizes and predictions only with
 *	  pg_read_all_stats or that role's privileges (gate_sql.c).
 *	Not covered: statements run inside functions, triggers, DO and CALL are
 *	nested and never gated (their call is judged by its own cost).
 *
 * Admitted queries count against one of three lanes (gate_state.h): the
 * slots, the short queries shortest runs beside them (at most as many), or
 * the queries admitted for a lock.  After every change under the lock the
 * counts are checked against the running entries.
 *
 * A slot is never leaked: an error in the run releases the entry, a reset
 * callback on the statement's memory context covers a statement dropped
 * without ExecutorEnd, a before_shmem_exit callback covers FATAL, client
 * disconnect and pg_terminate_backend, and a backend crash reinitialises
 * shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/parallel.h"
#include "gate_state.h"
#include "workload_class.h"
#include "server_cost.h"
#include "affinity.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "compat.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "plan_tree.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/wait_event.h"
#include "work_memory.h"

/* Waiters wake at least this often: reload, max_wait, stalled clients. */
#define WAKE_MS 500

static bool exit_callback_registered = false;

/*
 * This backend's entry: whether it has one (waiting, running or lent), the
 * statement it describes (whose run time it teaches), how many gated runs
 * are in progress (a run inside a gated run, of a cursor a gated query
 * fetches from, takes no slots of its own) and how many admitted statements
 * have not ended (open cursors keep the entry, lent, until the last ends).
 */
static bool holding = false;
static MccdbStatement *entry_statement = NULL;
static int	gated_runs = 0;
static int	open_admitted = 0;

/* The gate's wait event (compat.h), named once per backend. */
static uint32
admission_wait_event(void)
{
	static uint32 event = 0;

	if (event == 0)
		event = mccdb_admission_wait_event();
	return event;
}

static AdmissionEntry *
my_entry(void)
{
	Assert(mccdb_my_backend_slot() >= 0 && mccdb_my_backend_slot() < mccdb_adm->nentries);
	return &mccdb_adm->entries[mccdb_my_backend_slot()];
}

/*
 * The running set is about to change: charge the time since the last
 * change to every running entry, and to each of them the classes that ran
 * beside it.  Two passes over the entries, whatever their number.  Caller
 * holds the lock exclusively.
 */
void
mccdb_gate_account_running(int64 now_us)
{
	int			per_class[MODEL_CLASSES] = {0};
	double		dt = mccdb_adm->last_change_us ?
		(double) (now_us - mccdb_adm->last_change_us) / 1000.0 : 0;
	int			i,
				c;

	mccdb_adm->last_change_us = now_us;
	if (dt <= 0)
		return;
	for (i = 0; i < mccdb_adm->nentries; i++)
		if (mccdb_adm->entries[i].state == ENTRY_RUNNING)
			per_class[mccdb_adm->entries[i].cls]++;
	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state != ENTRY_RUNNING)
			continue;
		e->run_ms += dt;
		for (c = 0; c < MODEL_CLASSES; c++)
			e->overlap_ms[c] += dt * (per_class[c] - (c == e->cls ? 1 : 0));
	}
}

/* An entry's slots start (sign 1) or stop (-1) counting in counts. */
static void
count_slots(SlotCounts *counts, const AdmissionEntry *e, int sign)
{
	switch (e->lane)
	{
		case LANE_SLOTS:
			counts->used_slots += sign * e->slots;
			counts->domain_used[e->domain] += sign * e->slots;
			break;
		case LANE_SHORT:
			counts->short_used += sign * e->slots;
			break;
		case LANE_LOCKS:
			counts->lock_used += sign * e->slots;
			break;
	}
}

/*
 * The slot counts are what the running entries add up to: checked under
 * the lock after every change of an entry.  A count found wrong is a bug in
 * the gate: asserted in a debug build; in production logged and recounted,
 * so that the gate goes on with the truth.  Caller holds the lock
 * exclusively.
 */
static void
check_slots_locked(void)
{
	SlotCounts	truth;
	SlotCounts *kept = &mccdb_adm->counts;

	memset(&truth, 0, sizeof(truth));
	for (int i = 0; i < mccdb_adm->nentries; i++)
		if (mccdb_adm->entries[i].state == ENTRY_RUNNING)
			count_slots(&truth, &mccdb_adm->entries[i], 1);
	if (memcmp(&truth, kept, sizeof(truth)) == 0)
		return;
	Assert(false);
	ereport(LOG,
			(errmsg("mccdb: the gate counted %d slots used, %d short and %d for locks where its running queries take %d, %d and %d; recounted",
					kept->used_slots, kept->short_used, kept->lock_used,
					truth.used_slots, truth.short_used, truth.lock_used)));
	*kept = truth;
	mccdb_adm->repaired_total++;
}

/*
 * An entry's slots start (sign 1) or stop (-1) counting, after its state
 * became (or stopped being) running; caller holds the lock.
 */
static void
charge_slots(AdmissionEntry *e, int sign)
{
	count_slots(&mccdb_adm->counts, e, sign);
	check_slots_locked();
}

/* Admitted: running, or lending its slots while it waits for a lock. */
static bool
entry_admitted(const AdmissionEntry *e)
{
	return e->state == ENTRY_RUNNING || e->state == ENTRY_LENT;
}

/* An admitted entry's workers: running, and those of its plan not started yet. */
static int
entry_workers(const AdmissionEntry *e)
{
	int			running = Max(e->workers_started - e->workers_ended, 0);
	int			to_come = Max(e->workers_planned - e->workers_started, 0);

	return running + to_come;
}

/*
 * The slots an admitted entry holds: its leader, its workers running, and
 * those of its plan not started yet (reserved at admission, so that they
 * find their CPUs free when its Gather launches them).  A worker that has
 * ended gives its slot back: the leader may run long after (a sort, an
 * aggregate, a join above the Gather), and a slot it kept would leave a CPU
 * idle while queries wait.  Never more than a domain's slots.
 */
static int
entry_slots(const AdmissionEntry *e)
{
	return Min(1 + entry_workers(e), mccdb_domain_slots(e->domain));
}

/* Recount an admitted entry's slots after its workers changed; caller holds the lock. */
static bool
resize_entry_locked(AdmissionEntry *e)
{
	int			slots = entry_slots(e);

	if (slots == e->slots)
		return false;
	if (e->state == ENTRY_RUNNING)
		count_slots(&mccdb_adm->counts, e, -1);
	e->slots = slots;
	if (e->state == ENTRY_RUNNING)
		charge_slots(e, 1);
	return true;
}

/* Remove this backend's entry and give back its slots; caller holds the lock. */
static void
remove_entry_locked(void)
{
	AdmissionEntry *e = my_entry();

	if (e->pid == MyProcPid)
	{
		int64		now_us = mccdb_monotonic_us();

		mccdb_gate_account_running(now_us);
		if (entry_admitted(e))
			mccdb_learn_from(e, now_us);
		if (e->state == ENTRY_RUNNING)
		{
			e->state = ENTRY_FREE;
			charge_slots(e, -1);
		}
		memset(e, 0, sizeof(*e));
	}
	holding = false;
	entry_statement = NULL;
}

static void
release_entry(void)
{
	/* the CPUs it had, on every path that ends the statement's run */
	mccdb_affinity_restore();
	if (!holding || mccdb_adm == NULL)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	remove_entry_locked();
	LWLockRelease(mccdb_adm->lock);
	ConditionVariableBroadcast(&mccdb_adm->cv);
}

/*
 * FATAL, client disconnect, pg_terminate_backend: never leave a slot or a
 * hold behind.
 */
static void
gate_shmem_exit(int code, Datum arg)
{
	if (mccdb_adm == NULL)
		return;
	/* a FATAL may have come while a lock was held */
	LWLockReleaseAll();
	release_entry();
	/* the hold ends with the session, as with its DISCARD ALL */
	mccdb_admission_discard();
	/* counts noted under the lock, by a statement that failed too */
	mccdb_query_stats_report();
}

/* Before this backend takes an entry or the hold: its release at exit. */
void
mccdb_gate_exit_callback(void)
{
	if (!exit_callback_registered)
	{
		before_shmem_exit(gate_shmem_exit, (Datum) 0);
		exit_callback_registered = true;
	}
}

/*
 * An admitted statement ends (ExecutorEnd, or its memory goes without it:
 * an error, a dropped portal): when it was the last open one, the entry
 * goes.
 */
static void
statement_leaves_gate(MccdbStatement *st)
{
	if (!st->admission.counted)
		return;
	st->admission.counted = false;
	open_admitted--;
	if (open_admitted == 0 && gated_runs == 0)
		release_entry();
}

static void
statement_gone(void *arg)
{
	statement_leaves_gate((MccdbStatement *) arg);
}

/*
 * Running queries whose backends have been blocked writing to their
 * clients for mccdb.client_stall lend their slots to the waiters.  Such a
 * backend takes a slot again by waiting like any other, as soon as its
 * write returns (gate_receive_slot): it is still in the same run, and no
 * more queries run than there are slots.  Caller holds the lock.
 */
static void
lend_stalled_slots(int64 now_us)
{
	int			i;

	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];
		uint32		wait_event;

		if (e->state != ENTRY_RUNNING)
			continue;
		wait_event = (*(volatile uint32 *) &ProcGlobal->allProcs[e->procno].wait_event_info);
		if (wait_event != WAIT_EVENT_CLIENT_WRITE)
			e->stalled_since_us = 0;
		else if (e->stalled_since_us == 0)
			e->stalled_since_us = now_us;
		else if (now_us - e->stalled_since_us >= (int64) mccdb_client_stall_ms * 1000)
		{
			mccdb_gate_account_running(now_us);
			e->state = ENTRY_LENT;
			charge_slots(e, -1);
			mccdb_adm->lent_total++;
		}
	}
}

/*
 * The backends (their parallel groups' leaders) waiting for a heavyweight
 * lock this backend (or a member of its parallel group) holds in a
 * conflicting mode: up to max of them in pids; how many.  Only when some
 * backend waits on a lock at all is the lock table read, and then once
 * (GetLockStatusData, all partitions once), in a memory context of its own
 * that is gone when this returns.
 */
static int
backends_waiting_for_my_locks(int *pids, int max)
{
	MemoryContext cxt,
				old;
	LockData   *locks;
	int		   *mine;
	int			nmine = 0,
				nblocked = 0,
				i,
				j;
	bool		anyone_waits = false;

	for (i = 0; i < (int) ProcGlobal->allProcCount && !anyone_waits; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];

		anyone_waits = proc->pid != 0 && proc->pid != MyProcPid &&
			((*(volatile uint32 *) &proc->wait_event_info) & 0xFF000000) == PG_WAIT_LOCK;
	}
	if (!anyone_waits)
		return 0;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "mccdb lock check",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	locks = GetLockStatusData();
	mine = palloc(sizeof(int) * Max(locks->nelements, 1));
	for (i = 0; i < locks->nelements; i++)
		if (locks->locks[i].leaderPid == MyProcPid && locks->locks[i].holdMask != 0)
			mine[nmine++] = i;
	for (j = 0; j < locks->nelements && nblocked < max && nmine > 0; j++)
	{
		LockInstanceData *w = &locks->locks[j];

		if (w->waitLockMode == NoLock || w->leaderPid == MyProcPid)
			continue;
		for (i = 0; i < nmine; i++)
		{
			LockInstanceData *h = &locks->locks[mine[i]];

			if (memcmp(&h->locktag, &w->locktag, sizeof(LOCKTAG)) == 0 &&
				(GetLockTagsMethodTable(&w->locktag)->conflictTab[w->waitLockMode] & h->holdMask))
			{
				pids[nblocked++] = w->leaderPid;
				break;
			}
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return nblocked;
}

/*
 * Of the backends waiting for this one's locks, one that runs in the gate,
 * or 0.  Only such a wait is a deadlock the detector cannot see (it holds
 * a slot this backend waits for, and waits for this backend's lock): a
 * lock waiter that holds no slot (an advisory lock's, any session's) will
 * get its lock when this backend runs in its turn.  Caller holds the lock.
 */
static int
blocked_in_the_gate(const int *pids, int n)
{
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state != ENTRY_RUNNING)
			continue;
		for (int j = 0; j < n; j++)
			if (pids[j] == e->pid)
				return e->pid;
	}
	return 0;
}

/*
 * The parallel workers a plan asks for (they take slots too).  With budget,
 * each Gather's workers are cut, in plan order, to what is left of it: a
 * Gather that gets fewer workers than planned runs the rest of its plan in
 * the leader, as it does when the server has no worker free.
 */
typedef struct WorkerCount
{
	int			planned;
	int		   *budget;			/* NULL: count only */
} WorkerCount;

static bool
count_gather_workers(Plan *plan, void *context)
{
	WorkerCount *wc = context;

	check_stack_depth();
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
	{
		int		   *workers = IsA(plan, Gather) ?
			&((Gather *) plan)->num_workers : &((GatherMerge *) plan)->num_workers;

		wc->planned += *workers;
		if (wc->budget != NULL)
		{
			*workers = Min(*workers, *wc->budget);
			*wc->budget -= *workers;
		}
	}
	return mccdb_plan_children_walk(plan, count_gather_workers, wc);
}

/* ... in the statement's main plan and its subplans */
static int
planned_workers(PlannedStmt *stmt, int *budget)
{
	WorkerCount wc = {0, budget};
	ListCell   *lc;

	(void) count_gather_workers(stmt->planTree, &wc);
	foreach(lc, stmt->subplans)
		if (lfirst(lc) != NULL)
			(void) count_gather_workers(lfirst(lc), &wc);
	return wc.planned;
}

/*
 * With the gate on, no plan runs more processes than the largest LLC
 * domain has slots: a role's max_parallel_workers_per_gather would
 * otherwise put more processes on the CPUs than the gate counts (a query
 * takes at most a domain's slots).  The plan may be the plan cache's, so a
 * plan wider than that is copied, and the copy's workers cut.  Cheap for
 * the rest: parallelModeNeeded is false for a plan without a Gather.
 */
void
mccdb_gate_narrow_plan(QueryDesc *queryDesc)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;
	int			allowed;
	int			budget;
	int			planned;

	if (mccdb_schedule == MCCDB_SCHEDULE_OFF || mccdb_adm == NULL ||
		!stmt->parallelModeNeeded || IsParallelWorker())
		return;
	allowed = Max(mccdb_max_query_slots() - 1, 0);
	planned = planned_workers(stmt, NULL);
	if (planned <= allowed)
		return;
	stmt = copyObject(stmt);
	budget = allowed;
	planned_workers(stmt, &budget);
	queryDesc->plannedstmt = stmt;
	ereport(DEBUG1,
			(errmsg_internal("mccdb: a plan's %d parallel workers cut to %d, the slots of an LLC domain less its leader",
							 planned, allowed)));
}

/*
 * Cut a started statement's Gathers to budget workers between them, in
 * the order of its plan state.  The executor reads a Gather's num_workers
 * when the node first runs, so this holds for a statement admitted before
 * its run.  Its plan may be the plan cache's: a Gather to cut is copied
 * into the statement's memory and its plan state pointed at the copy
 * (EXPLAIN ANALYZE shows the workers it was given); the copies are listed
 * in cut, for the working memory (mccdb_work_memory_bytes()).
 */
typedef struct GatherCut
{
	int			budget;
	List	   *cut;
} GatherCut;

static bool
cut_gather_workers(PlanState *ps, void *context)
{
	GatherCut  *gc = context;
	int		   *budget = &gc->budget;

	if (ps == NULL)
		return false;
	check_stack_depth();
	if (IsA(ps, GatherState) || IsA(ps, GatherMergeState))
	{
		bool		is_gather = IsA(ps, GatherState);
		Size		size = is_gather ? sizeof(Gather) : sizeof(GatherMerge);
		int			workers = is_gather ? ((Gather *) ps->plan)->num_workers :
			((GatherMerge *) ps->plan)->num_workers;

		if (workers > *budget)
		{
			Plan	   *copy = MemoryContextAlloc(ps->state->es_query_cxt, size);

			memcpy(copy, ps->plan, size);
			workers = *budget;
			if (is_gather)
				((Gather *) copy)->num_workers = workers;
			else
				((GatherMerge *) copy)->num_workers = workers;
			ps->plan = copy;
			gc->cut = lappend(gc->cut, copy);
		}
		*budget -= workers;
	}
	return planstate_tree_walker(ps, cut_gather_workers, context);
}

/*
 * An admitted statement given fewer workers than its plan has: cut its
 * Gathers, and count its working memory with the workers it was given,
 * so that the memory budget does not hold what the others would have
 * used (a statement waiting for memory may fit now).
 */
static void
narrow_admitted(MccdbStatement *st, AdmissionEntry *e, int planned, int workers)
{
	GatherCut	gc = {workers, NIL};
	int64		memory_kb;

	(void) cut_gather_workers(st->queryDesc->planstate, &gc);
	ereport(DEBUG1,
			(errmsg_internal("mccdb: a plan's %d parallel workers cut to %d, the slots free when it was admitted",
							 planned, workers)));
	if (gc.cut == NIL)
		return;
	st->work_memory = mccdb_work_memory_bytes(st->queryDesc->plannedstmt,
											  mccdb_statement_locality(st), gc.cut);
	st->have_work_memory = true;
	list_free(gc.cut);
	memory_kb = (int64) ceil(st->work_memory / 1024.0);
	if (memory_kb >= e->memory_kb)
		return;
	/* this backend's own entry: only it sets its memory */
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e->memory_kb = memory_kb;
	LWLockRelease(mccdb_adm->lock);
	ConditionVariableBroadcast(&mccdb_adm->cv);
}

/* Is a function one of the mccdb extension's? */
static bool
is_own_function(Oid funcid, Oid ext)
{
	return OidIsValid(ext) && getExtensionOfObject(ProcedureRelationId, funcid) == ext;
}

/*
 * Does a function scan of a plan call anything but the extension's
 * functions?  (The flat range table of a PlannedStmt has lost its
 * functions: they are in the FunctionScan nodes.)  context: the
 * extension's OID.
 */
static bool
scans_other_functions(Plan *plan, void *context)
{
	Oid			ext = *(Oid *) context;
	ListCell   *lc;

	check_stack_depth();
	if (IsA(plan, CustomScan))
		return true;			/* its children are its own business */
	if (IsA(plan, FunctionScan))
		foreach(lc, ((FunctionScan *) plan)->functions)
		{
			Node	   *expr = lfirst_node(RangeTblFunction, lc)->funcexpr;

			if (!IsA(expr, FuncExpr) || !is_own_function(((FuncExpr *) expr)->funcid, ext))
				return true;
		}
	return mccdb_plan_children_walk(plan, scans_other_functions, context);
}

static bool
scans_only_own_functions(Plan *plan, Oid ext)
{
	return plan == NULL || !scans_other_functions(plan, &ext);
}

/*
 * Statements that read nothing but the extension's own views and
 * functions (its views, the hold, the matrix loader) are never gated: an
 * operator must always be able to look at, and release, a stuck gate.
 * Every range table entry must be one of them, or read no table at all:
 * calling an extension function beside a join does not exempt the join.
 */
static bool
is_own_statement(PlannedStmt *stmt)
{
	Oid			ext = get_extension_oid("mccdb", true);
	bool		own = false;
	ListCell   *lc;

	if (!OidIsValid(ext))
		return false;
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		switch (rte->rtekind)
		{
			case RTE_RELATION:
				/* a view kept for its permission check; nothing else is read */
				if (rte->relkind != RELKIND_VIEW ||
					getExtensionOfObject(RelationRelationId, rte->relid) != ext)
					return false;
				own = true;
				break;
			case RTE_FUNCTION:
				/* which functions: scans_only_own_functions() below */
				own = true;
				break;
			case RTE_SUBQUERY:
			case RTE_JOIN:
			case RTE_VALUES:
			case RTE_CTE:
			case RTE_RESULT:
				/* what these read has entries of its own in the flat range table */
				break;
			default:
				return false;
		}
	}
	if (!scans_only_own_functions(stmt->planTree, ext))
		return false;
	foreach(lc, stmt->subplans)
		if (!scans_only_own_functions(lfirst(lc), ext))
			return false;
	/* SELECT mccdb_hold_admission(false): no range table entry but a RESULT */
	if (!own && stmt->planTree != NULL)
		foreach(lc, stmt->planTree->targetlist)
		{
			Expr	   *expr = lfirst_node(TargetEntry, lc)->expr;

			if (IsA(expr, FuncExpr) && is_own_function(((FuncExpr *) expr)->funcid, ext))
				own = true;
		}
	return own;
}

/*
 * Does the gate stand in front of this run?  (mccdb_gate_wants: all but the
 * catalog lookups of is_own_statement, for a statement without a state.)
 * A client's query or data-modifying statement (INSERT ... SELECT runs a
 * query too) at the time it runs (a cursor a function opened is fetched at the client's level and
 * is gated then), not the extension's own, costing at least
 * mccdb.schedule_min_cost under the server's cost settings or of a cost
 * not known; the session that holds the gate is not held by it.  The cheap
 * tests first: most statements are cheap.
 */
static bool
gate_may_apply(QueryDesc *queryDesc)
{
	return mccdb_schedule != MCCDB_SCHEDULE_OFF &&
		mccdb_adm != NULL &&
		mccdb_costed_command(queryDesc->operation) &&
		mccdb_client_statement() &&
		!creating_extension &&
		mccdb_adm->held_by != MyProcPid;
}

static bool
costs_enough(bool cost_known, Cost cost)
{
	return mccdb_server_cost_reaches(cost_known, cost, mccdb_schedule_min_cost_value());
}

bool
mccdb_gate_wants(QueryDesc *queryDesc)
{
	Cost		cost;
	bool		cost_known;

	if (!gate_may_apply(queryDesc))
		return false;
	cost_known = mccdb_server_cost(queryDesc->plannedstmt, &cost);
	return costs_enough(cost_known, cost);
}

static bool
gate_applies(MccdbStatement *st)
{
	return gate_may_apply(st->queryDesc) && costs_enough(st->cost_known, st->real_cost) &&
		!is_own_statement(st->queryDesc->plannedstmt);
}

/*
 * The slots e may take when admitted in its domain now: those its domain
 * and its workload class have free.  The policies admit a waiter when its
 * leader fits, so that a parallel query never keeps a free slot idle while
 * it waits for as many as it planned; it runs with the workers that fit
 * (cut_gather_workers), as PostgreSQL runs a query when
 * max_parallel_workers is used up.  The short lane runs beside the slots,
 * and the lock lane past them: only their class limits them.  Caller holds
 * the lock.
 */
static int
free_slots_for(const AdmissionEntry *e, EntryLane lane)
{
	const WorkloadClass *wc = &mccdb_adm->classes[e->wclass];
	int			free = INT_MAX;

	if (lane == LANE_SLOTS)
		free = mccdb_domain_slots(e->domain) - mccdb_adm->counts.domain_used[e->domain];
	if (wc->slots > 0 && lane != LANE_LOCKS)
	{
		int			class_slots[MCCDB_MAX_CLASSES];

		mccdb_class_slots_in_use(class_slots);
		free = Min(free, wc->slots - class_slots[e->wclass]);
	}
	return free;
}

/*
 * Parallel workers running now for leaders the gate has not admitted:
 * those of statements below mccdb.schedule_min_cost, of maintenance
 * commands (a parallel CREATE INDEX or VACUUM), of databases without the
 * gate.  A worker names its leader in lockGroupLeader, read without the
 * lock manager's lock as pg_stat_activity reads leader_pid: a worker
 * starting or ending meanwhile may be missed or counted.  Parallel apply
 * workers of a subscription form lock groups too and are counted, though
 * max_parallel_workers does not limit them, and the workers of a query
 * nested in an admitted statement pass for that statement's.  Caller holds
 * the lock.
 */
static int
ungated_workers_locked(void)
{
	int			workers = 0;

	for (uint32 i = 0; i < ProcGlobal->allProcCount; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		PGPROC	   *leader = proc->lockGroupLeader;
		bool		gated = false;

		if (leader == NULL || leader == proc || proc->pid == 0)
			continue;
		for (int j = 0; j < mccdb_adm->nentries && !gated; j++)
		{
			const AdmissionEntry *e = &mccdb_adm->entries[j];

			gated = entry_admitted(e) && &ProcGlobal->allProcs[e->procno] == leader;
		}
		workers += !gated;
	}
	return workers;
}

/*
 * The parallel workers PostgreSQL may still launch for this backend, as far
 * as the gate can tell: the session's max_parallel_workers less the workers
 * the admitted statements run or have reserved and those running for
 * statements the gate did not admit.  A worker its Gather cannot register
 * never starts, and a slot kept for it would idle until the statement
 * ends.  Caller holds the lock.
 */
static int
launchable_workers_locked(const AdmissionEntry *self)
{
	int			workers = 0;

	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		const AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e != self && entry_admitted(e))
			workers += entry_workers(e);
	}
	if (self->workers_planned > 0 && workers < max_parallel_workers)
		workers += ungated_workers_locked();
	return Max(max_parallel_workers - workers, 0);
}

/* Take the slots of this backend's entry as admitted; caller holds the lock. */
static void
admit_locked(MccdbStatement *st, AdmissionEntry *e, int64 enqueued_us,
			 int64 now_us, EntryLane lane)
{
	MccdbQueryKey key = mccdb_entry_key(e);
	KnownQuery *k = mccdb_known_query(&key, true, now_us);
	double		waited_ms = (double) (now_us - enqueued_us) / 1000.0;
	bool		starved = waited_ms >= mccdb_max_wait_ms;
	bool		for_locks = lane == LANE_LOCKS;

	mccdb_gate_account_running(now_us);
	/* placed beside the running queries, before it is one of them */
	e->domain = mccdb_place_locked(e, true);
	e->state = ENTRY_RUNNING;
	e->lane = lane;
	e->since_us = now_us;
	e->since = GetCurrentTimestamp();
	e->admit_seq = mccdb_adm->next_admit_seq++;
	e->workers_planned = Min(e->workers_planned,
							 Min(Max(free_slots_for(e, lane) - 1, 0),
								 launchable_workers_locked(e)));
	e->slots = entry_slots(e);
	charge_slots(e, 1);
	mccdb_adm->admitted_total++;
	if (starved)
		mccdb_adm->starved_total++;
	if (for_locks)
		mccdb_adm->lock_admitted_total++;
	if (mccdb_memory_budget_kb > 0 && e->memory_kb > mccdb_memory_budget_kb)
		mccdb_adm->alone_total++;
	mccdb_workload_class_admitted(e->wclass, waited_ms, starved);
	if (k != NULL)
	{
		MccdbQueryCounters admission = {.admissions = 1, .starved = starved,
		.lock_admitted = for_locks, .total_wait_ms = waited_ms, .max_wait_ms = waited_ms};

		mccdb_query_stats_add(&k->stats, &k->key, &admission);
		k->last_used_us = now_us;
	}
	st->admission.gated = true;
	st->admission.admit_seq = e->admit_seq;
	st->admission.admitted = e->since;
	st->admission.waited_ms = waited_ms;
}

/*
 * Run on the CPUs of the domain the gate placed this query in, until
 * release_entry().  A domain none of whose CPUs this backend may use (a
 * cpuset, a made-up topology) leaves it where it was.
 */
static void
bind_to_domain(int domain)
{
	if (!mccdb_affinity_bind(domain))
		ereport(DEBUG1,
				(errmsg("mccdb: process %d stays on its CPUs, not on LLC domain %d's: %m",
						MyProcPid, domain)));
}

/*
 * This parallel worker's place in its leader's entry: the leader's pid,
 * the statement's queryid and the admission it counts in (a later run of
 * the same query by the leader has another admit_seq), or pid 0.
 */
static int	worker_leader_pid = 0;
static uint64 worker_queryid = 0;
static int64 worker_admit_seq = 0;
static bool worker_exit_registered = false;

/*
 * The leader's admitted entry whose statement this worker runs, or NULL: a
 * statement nested in the gated one (a function's query, never gated) has
 * its own queryid, and its workers are not the entry's.  Caller holds the
 * lock.
 */
static AdmissionEntry *
leader_entry_locked(int leader_pid, uint64 queryid)
{
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->pid == leader_pid && entry_admitted(e) && e->queryid == queryid)
			return e;
	}
	return NULL;
}

/* The worker's process exits, whatever the path (an error ends no ExecutorEnd). */
static void
parallel_worker_exit(int code, Datum arg)
{
	LWLockReleaseAll();
	mccdb_admission_parallel_worker_end();
}

void
mccdb_admission_parallel_worker_start(QueryDesc *queryDesc)
{
	PGPROC	   *leader = MyProc->lockGroupLeader;
	AdmissionEntry *e;
	int			domain = -1;

	if (mccdb_adm == NULL || mccdb_schedule == MCCDB_SCHEDULE_OFF || leader == NULL ||
		leader == MyProc || worker_leader_pid != 0)
		return;
	if (!worker_exit_registered)
	{
		before_shmem_exit(parallel_worker_exit, (Datum) 0);
		worker_exit_registered = true;
	}
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e = leader_entry_locked(leader->pid, queryDesc->plannedstmt->queryId);
	if (e != NULL)
	{
		domain = e->domain;
		worker_leader_pid = e->pid;
		worker_queryid = e->queryid;
		worker_admit_seq = e->admit_seq;
		e->workers_started++;
		(void) resize_entry_locked(e);
	}
	LWLockRelease(mccdb_adm->lock);
	/* a placed query's workers run in its leader's domain */
	if (domain >= 0 && mccdb_gate_domains() > 1)
		bind_to_domain(domain);
}

void
mccdb_admission_parallel_worker_end(void)
{
	AdmissionEntry *e;
	bool		freed = false;

	if (worker_leader_pid == 0 || mccdb_adm == NULL)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e = leader_entry_locked(worker_leader_pid, worker_queryid);
	if (e != NULL && e->admit_seq == worker_admit_seq)
	{
		e->workers_ended++;
		freed = resize_entry_locked(e);
	}
	LWLockRelease(mccdb_adm->lock);
	worker_leader_pid = 0;
	if (freed)
		ConditionVariableBroadcast(&mccdb_adm->cv);
}

/* The most lock waiters one check names (a deadlock needs only one). */
#define MAX_LOCK_WAITERS 16

/*
 * Describe st in this backend's entry, waiting from now: a new entry, or
 * the entry an open cursor keeps lent, which waits again like any other.
 * Caller holds the lock.
 */
static AdmissionEntry *
enqueue_locked(MccdbStatement *st, int64 memory_kb, int64 now_us, bool *class_unknown)
{
	MccdbLocality *loc = mccdb_statement_locality(st);
	AdmissionEntry *e = my_entry();
	MccdbQueryKey key;
	const WorkloadClass *wc;

	if (!holding)
	{
		memset(e, 0, sizeof(*e));
		e->pid = MyProcPid;
		e->procno = mccdb_my_pgprocno();
	}
	else if (entry_statement != st)
	{
		/* another statement than the one whose run time it gathered */
		e->run_ms = 0;
		memset(e->overlap_ms, 0, sizeof(e->overlap_ms));
	}
	Assert(e->state != ENTRY_RUNNING);
	e->userid = GetUserId();
	e->dbid = MyDatabaseId;
	e->state = ENTRY_WAITING;
	e->lane = LANE_SLOTS;
	e->cls = loc->cls;
	e->bytes = loc->bytes;
	e->memory_kb = memory_kb;
	e->wclass = mccdb_workload_class_find(mccdb_class_name);
	*class_unknown = e->wclass < 0;
	if (e->wclass < 0)
		e->wclass = MCCDB_DEFAULT_CLASS;
	wc = &mccdb_adm->classes[e->wclass];
	e->queue_timeout_ms = wc->queue_timeout_ms >= 0 ? wc->queue_timeout_ms : mccdb_queue_timeout_ms;
	e->queue_timeout_action = wc->queue_timeout_action >= 0 ? wc->queue_timeout_action :
		mccdb_queue_timeout_action;
	if (entry_statement != st)
	{
		/* a lent statement that waits again keeps its workers' counts */
		e->workers_planned = planned_workers(st->queryDesc->plannedstmt, NULL);
		e->workers_started = 0;
		e->workers_ended = 0;
	}
	e->slots = entry_slots(e);
	e->seq = mccdb_adm->next_seq++;
	e->since_us = now_us;
	e->since = GetCurrentTimestamp();
	e->stalled_since_us = 0;
	e->queryid = st->queryDesc->plannedstmt->queryId;
	/* unknown: priced under the session's own settings (server_cost.h) */
	e->cost = st->cost_known ? st->real_cost : -1;
	key = mccdb_entry_key(e);
	e->predicted = mccdb_predict_seconds(&key, e->cost, now_us);
	holding = true;
	entry_statement = st;
	return e;
}

/*
 * The name of e's class and where its queue timeout came from, for the
 * messages; counted as timed out there, and in the server's total
 * (run = queue_timeout_action run).  Not under the lock.
 */
static void
count_timeout(const AdmissionEntry *e, bool run, char *class_name, bool *class_timeout,
			  int *waiting)
{
	const WorkloadClass *wc;

	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	wc = &mccdb_adm->classes[e->wclass];
	strlcpy(class_name, wc->name, NAMEDATALEN);
	*class_timeout = wc->queue_timeout_ms >= 0;
	if (run)
	{
		mccdb_adm->timed_out_run_total++;
		mccdb_adm->class_stats[e->wclass].timed_out_run++;
	}
	else
	{
		mccdb_adm->timed_out_total++;
		mccdb_adm->class_stats[e->wclass].timed_out++;
	}
	*waiting = 0;
	for (int i = 0; i < mccdb_adm->nentries; i++)
		*waiting += mccdb_adm->entries[i].state == ENTRY_WAITING &&
			mccdb_adm->entries[i].wclass == e->wclass;
	LWLockRelease(mccdb_adm->lock);
}

/*
 * A waiter has waited its queue timeout (its class's, or mccdb.queue_timeout):
 * it fails, as a statement over a server limit does (class 53), and leaves
 * the queue on the way out (the error path of wait_for_admission).
 */
static void
queue_timed_out(const AdmissionEntry *e, int64 waited_us)
{
	char		class_name[NAMEDATALEN];
	bool		class_timeout;
	int			waiting;

	count_timeout(e, false, class_name, &class_timeout, &waiting);
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 class_timeout ?
			 errmsg("statement waited %.0f ms for admission in workload class \"%s\", longer than its queue_timeout",
					waited_us / 1000.0, class_name) :
			 errmsg("statement waited %.0f ms for admission in workload class \"%s\", longer than mccdb.queue_timeout",
					waited_us / 1000.0, class_name),
			 errdetail("mccdb.schedule = %s, %d slots, %d statements of the class waiting; this one's locality %s.",
					   mccdb_schedule_name(mccdb_schedule), mccdb_total_slots(), waiting,
					   mccdb_locality_class_name(e->cls)),
			 class_timeout ?
			 errhint("Retry it later, or raise queue_timeout of class \"%s\" in mccdb_class, or set its queue_timeout_action to 'run'.",
					 class_name) :
			 errhint("Retry it later, or for its role raise mccdb.queue_timeout or set mccdb.queue_timeout_action = run (ALTER ROLE ... SET).")));
}

/*
 * A waiter has waited its queue timeout, and its action is run: it leaves
 * the queue and runs without the gate, as it would with the gate off.
 * Logged and counted.
 */
static void
queue_timed_out_runs(const AdmissionEntry *e, int64 waited_us)
{
	char		class_name[NAMEDATALEN];
	bool		class_timeout;
	int			waiting;

	count_timeout(e, true, class_name, &class_timeout, &waiting);
	ereport(LOG,
			(errmsg("mccdb: process %d waited %.0f ms for admission in workload class \"%s\", longer than its queue timeout: it runs without the gate",
					MyProcPid, waited_us / 1000.0, class_name),
			 errdetail("queue_timeout_action = run (%s); mccdb.schedule = %s, locality %s.",
					   class_timeout ? "the class's" : "mccdb.queue_timeout_action",
					   mccdb_schedule_name(mccdb_schedule), mccdb_locality_class_name(e->cls))));
}

/*
 * Enqueue, and sleep until mccdb_pick_next() names this backend, or a
 * query running in the gate waits for one of its locks.  Returns false
 * when the gate no longer applies (mccdb.schedule was set to off while it
 * waited, or mccdb.queue_timeout passed with mccdb.queue_timeout_action =
 * run): the statement then runs ungated.
 */
static bool
wait_for_admission(MccdbStatement *st)
{
	AdmissionEntry *e;
	int64		enqueued_us = mccdb_monotonic_us();
	int64		next_lock_check_us = enqueued_us + (int64) DeadlockTimeout * 1000;
	int			lock_waiters[MAX_LOCK_WAITERS];
	int			nlock_waiters = 0;
	bool		admitted = false;
	int			domain = -1;
	int			planned;
	int			workers = 0;
	int64		memory_kb;
	bool		class_unknown;

	mccdb_gate_exit_callback();
	mccdb_policy_prepare();
	if (!st->admission.counted)
	{
		MemoryContextCallback *cb = MemoryContextAlloc(st->cxt, sizeof(MemoryContextCallback));

		cb->func = statement_gone;
		cb->arg = st;
		MemoryContextRegisterResetCallback(st->cxt, cb);
		st->admission.counted = true;
		open_admitted++;
	}

	/* estimated before the lock is taken: a walk of the plan */
	memory_kb = (int64) ceil(mccdb_statement_work_memory(st) / 1024.0);
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e = enqueue_locked(st, memory_kb, enqueued_us, &class_unknown);
	planned = e->workers_planned;	/* this backend's own entry: only it sets this */
	LWLockRelease(mccdb_adm->lock);
	if (class_unknown && !st->admission.gated)
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("workload class \"%s\" does not exist: the statement waits in class default",
						mccdb_class_name),
				 errhint("Add it to mccdb_class, or set mccdb.class for the role to a class that exists.")));
	if (!st->admission.gated && mccdb_memory_budget_kb > 0 &&
		memory_kb > mccdb_memory_budget_kb)
		ereport(NOTICE,
				(errmsg("statement's estimated working memory %s is over mccdb.memory_budget %s: it runs when no other statement holds working memory",
						mccdb_format_bytes(memory_kb * 1024.0),
						mccdb_format_bytes(mccdb_memory_budget_kb * 1024.0)),
				 errhint("Lower work_mem for it, or raise mccdb.memory_budget.")));

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&mccdb_adm->cv);
		for (;;)
		{
			int64		now_us;
			int			blocked;
			EntryLane	lane = LANE_SLOTS;

			/* A busy backend never reloads: do it here, for the gate's GUCs. */
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			if (mccdb_schedule == MCCDB_SCHEDULE_OFF)
				break;
			now_us = mccdb_monotonic_us();
			if (e->queue_timeout_ms > 0 &&
				now_us - enqueued_us >= (int64) e->queue_timeout_ms * 1000)
			{
				if (e->queue_timeout_action == MCCDB_QUEUE_TIMEOUT_ERROR)
					queue_timed_out(e, now_us - enqueued_us);
				queue_timed_out_runs(e, now_us - enqueued_us);
				break;
			}
			/* after deadlock_timeout, and then at most once per deadlock_timeout */
			if (now_us >= next_lock_check_us)
			{
				nlock_waiters = backends_waiting_for_my_locks(lock_waiters, MAX_LOCK_WAITERS);
				next_lock_check_us = now_us + (int64) DeadlockTimeout * 1000;
			}

			LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
			lend_stalled_slots(now_us);
			blocked = blocked_in_the_gate(lock_waiters, nlock_waiters);
			if (blocked != 0)
				lane = LANE_LOCKS;
			if (blocked != 0 || mccdb_pick_next(now_us, &lane) == e)
			{
				admit_locked(st, e, enqueued_us, now_us, lane);
				admitted = true;
				domain = e->domain;
				workers = e->workers_planned;
			}
			LWLockRelease(mccdb_adm->lock);
			if (admitted)
			{
				if (workers < planned && st->queryDesc->planstate != NULL)
					narrow_admitted(st, e, planned, workers);
				if (mccdb_gate_domains() > 1)
					bind_to_domain(domain);
				mccdb_query_stats_report();
				if (mccdb_log_min_wait_ms >= 0 &&
					st->admission.waited_ms >= mccdb_log_min_wait_ms)
					ereport(LOG,
							(errmsg("mccdb: process %d waited %.0f ms for admission",
									MyProcPid, st->admission.waited_ms),
							 errdetail("mccdb.schedule = %s, locality %s, %d slots.",
									   mccdb_schedule_name(mccdb_schedule),
									   mccdb_locality_class_name(e->cls), mccdb_total_slots())));
				if (blocked != 0)
					ereport(LOG,
							(errmsg("mccdb: admitted process %d ahead of mccdb.schedule: process %d, running in the gate, waits for a lock it holds",
									MyProcPid, blocked),
							 errdetail("A query waiting in the gate for the slot of a query that waits for its locks would wait for it forever.")));
				break;
			}
			ConditionVariableTimedSleep(&mccdb_adm->cv, WAKE_MS, admission_wait_event());
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		/* cancel, statement_timeout: leave the queue at once */
		ConditionVariableCancelSleep();
		release_entry();
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (!admitted)
		release_entry();
	/* Another waiter may fit in the slots that are still free. */
	ConditionVariableBroadcast(&mccdb_adm->cv);
	return admitted;
}

/*
 * The receiver of a gated run's rows, in front of the run's own: after
 * each row it hands on, a backend whose slots were lent while its client
 * did not read (lend_stalled_slots) waits for a slot again, before it
 * computes the next row.  One read of its own entry a row, no lock.
 */
typedef struct GateReceiver
{
	DestReceiver pub;
	DestReceiver *inner;
	MccdbStatement *st;
} GateReceiver;

static bool
gate_receive_slot(TupleTableSlot *slot, DestReceiver *self)
{
	GateReceiver *g = (GateReceiver *) self;
	bool		ok = g->inner->receiveSlot(slot, g->inner);

	if (holding && ((volatile AdmissionEntry *) my_entry())->state == ENTRY_LENT)
		(void) wait_for_admission(g->st);
	return ok;
}

static void
gate_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	GateReceiver *g = (GateReceiver *) self;

	g->inner->rStartup(g->inner, operation, typeinfo);
}

static void
gate_shutdown(DestReceiver *self)
{
	GateReceiver *g = (GateReceiver *) self;

	g->inner->rShutdown(g->inner);
}

/* The run's own receiver belongs to whoever made it; this one to the statement. */
static void
gate_destroy(DestReceiver *self)
{
}

/* The statement's receiver, made at its first gated run, in front of this run's. */
static DestReceiver *
gate_receiver(MccdbStatement *st, DestReceiver *inner)
{
	GateReceiver *g = (GateReceiver *) st->admission.receiver;

	if (g == NULL)
	{
		g = MemoryContextAllocZero(st->cxt, sizeof(GateReceiver));
		st->admission.receiver = &g->pub;
	}
	g->pub.receiveSlot = gate_receive_slot;
	g->pub.rStartup = gate_startup;
	g->pub.rShutdown = gate_shutdown;
	g->pub.rDestroy = gate_destroy;
	g->pub.mydest = inner->mydest;
	g->inner = inner;
	g->st = st;
	return &g->pub;
}

/*
 * The keys of the known queries (those the gate admitted), as this backend
 * last copied them, sorted by queryid: a statement the gate lets pass is
 * looked up here, without the gate's lock, and only a known one takes it.
 * The copy is made again when the shared table's generation moves.
 */
static MccdbQueryKey *known_copy = NULL;
static int	nknown_copy = 0;
static uint64 known_copy_generation = 0;

static int
key_by_queryid(const void *a, const void *b)
{
	uint64		x = ((const MccdbQueryKey *) a)->queryid;
	uint64		y = ((const MccdbQueryKey *) b)->queryid;

	return x < y ? -1 : x > y ? 1 : 0;
}

static bool
maybe_known(const MccdbQueryKey *key)
{
	uint64		generation = pg_atomic_read_u64(&mccdb_adm->known_generation);
	int			lo = 0,
				hi;

	if (generation != known_copy_generation)
	{
		if (known_copy == NULL)
			known_copy = MemoryContextAlloc(TopMemoryContext,
											sizeof(MccdbQueryKey) * KNOWN_QUERIES);
		nknown_copy = 0;
		LWLockAcquire(mccdb_adm->lock, LW_SHARED);
		known_copy_generation = pg_atomic_read_u64(&mccdb_adm->known_generation);
		for (int i = 0; i < KNOWN_QUERIES; i++)
			if (mccdb_adm->known[i].key.queryid != 0)
				known_copy[nknown_copy++] = mccdb_adm->known[i].key;
		LWLockRelease(mccdb_adm->lock);
		qsort(known_copy, nknown_copy, sizeof(MccdbQueryKey), key_by_queryid);
	}
	/* the first of this queryid, then those after it */
	hi = nknown_copy;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (known_copy[mid].queryid < key->queryid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nknown_copy && known_copy[lo].queryid == key->queryid; lo++)
		if (known_copy[lo].dbid == key->dbid && known_copy[lo].userid == key->userid)
			return true;
	return false;
}

/*
 * A client's statement the gate let pass: counted for a query the gate has
 * admitted before (cheap queries that never were get no entry, so they
 * cannot crowd out the ones that matter, and take no lock).
 */
void
mccdb_admission_count_bypass(QueryDesc *queryDesc)
{
	MccdbQueryKey key = {GetUserId(), MyDatabaseId, queryDesc->plannedstmt->queryId, 0};
	int			i;

	if (mccdb_schedule == MCCDB_SCHEDULE_OFF || mccdb_adm == NULL || key.queryid == 0 ||
		!mccdb_costed_command(queryDesc->operation) || !mccdb_client_statement() ||
		!maybe_known(&key))
		return;
	elog(DEBUG3, "mccdb: counting a bypass of a known query");
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	for (i = 0; i < KNOWN_QUERIES; i++)
	{
		KnownQuery *k = &mccdb_adm->known[i];

		if (k->key.queryid == key.queryid && k->key.dbid == key.dbid &&
			k->key.userid == key.userid)
		{
			MccdbQueryCounters bypass = {.bypasses = 1};

			mccdb_query_stats_add(&k->stats, &k->key, &bypass);
			break;
		}
	}
	LWLockRelease(mccdb_adm->lock);
	mccdb_query_stats_report();
}

/*
 * The run returned (a cursor waits for its next FETCH, or the statement is
 * about to end): lend the slots.  The next run waits for them again.
 */
static void
lend_slots(MccdbStatement *st)
{
	AdmissionEntry *e;

	st->admission.released = GetCurrentTimestamp();

	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	if (e->pid == MyProcPid && e->state == ENTRY_RUNNING)
	{
		mccdb_gate_account_running(mccdb_monotonic_us());
		e->state = ENTRY_LENT;
		charge_slots(e, -1);
	}
	if (e->pid == MyProcPid)
		e->stalled_since_us = 0;
	LWLockRelease(mccdb_adm->lock);
	ConditionVariableBroadcast(&mccdb_adm->cv);
}

/*
 * Every run of a statement the gate applies to is admitted: the first, and
 * each FETCH of a cursor after it (between runs its slots are lent, and it
 * waits for them again like anyone else).  A run inside a gated run (a
 * function the query calls fetches from a cursor) runs on its slots.
 */
void
mccdb_admission_run(MccdbStatement *st, ScanDirection direction,
					uint64 count, bool execute_once,
					void (*run) (QueryDesc *, ScanDirection, uint64, bool))
{
	DestReceiver *dest = st->queryDesc->dest;

	if (gated_runs > 0)
	{
		run(st->queryDesc, direction, count, execute_once);
		return;
	}
	if (!gate_applies(st) || !wait_for_admission(st))
	{
		mccdb_admission_count_bypass(st->queryDesc);
		run(st->queryDesc, direction, count, execute_once);
		return;
	}

	gated_runs++;
	st->admission.released = 0;
	st->queryDesc->dest = gate_receiver(st, dest);
	PG_TRY();
	{
		run(st->queryDesc, direction, count, execute_once);
	}
	PG_CATCH();
	{
		st->queryDesc->dest = dest;
		gated_runs--;
		st->admission.released = GetCurrentTimestamp();
		release_entry();
		PG_RE_THROW();
	}
	PG_END_TRY();
	st->queryDesc->dest = dest;
	gated_runs--;
	lend_slots(st);
}

void
mccdb_admission_statement_end(MccdbStatement *st)
{
	if (st->admission.counted && st->admission.released == 0)
		st->admission.released = GetCurrentTimestamp();
	statement_leaves_gate(st);
	/* also what an earlier statement that failed left noted */
	mccdb_query_stats_report();
}
