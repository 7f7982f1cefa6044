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
 *	- a query that waited mccdb.max_wait runs next, whatever the policy or a
 *	  hold;
 *	- a waiter that holds a heavyweight lock another backend waits for is
 *	  admitted at once, once it has waited deadlock_timeout: otherwise an
 *	  admitted query blocked on that lock and the waiter would wait for each
 *	  other where the deadlock detector cannot see it;
 *	- a statement is admitted once; between the fetches of a cursor, and
 *	  while its backend has been blocked writing to its client for
 *	  mccdb.client_stall, its slots are lent to waiting queries, and taken
 *	  back as soon as it runs again;
 *	- waiters reload the configuration themselves, so a changed policy or
 *	  slot count reaches them within half a second;
 *	- a hold ends with the session that took it;
 *	- statements that read nothing but the extension's own functions (its
 *	  views, the hold, the matrix loader) are never gated.
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

#include "access/parallel.h"
#include "admission_internal.h"
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
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/wait_event.h"

/* Waiters wake at least this often: reload, max_wait, stalled clients. */
#define WAKE_MS 500

static bool exit_callback_registered = false;

/* The statement that owns this backend's entry, if any. */
static bool holding = false;
static MccdbStatement *holding_statement = NULL;

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

/* An entry's slots start (sign 1) or stop (-1) counting; caller holds the lock. */
static void
charge_slots(AdmissionEntry *e, int sign)
{
	mccdb_adm->used_slots += sign * e->slots;
	mccdb_adm->domain_used[e->domain] += sign * e->slots;
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
		if (e->state == ENTRY_RUNNING || e->state == ENTRY_LENT)
			mccdb_learn_from(e, now_us);
		if (e->state == ENTRY_RUNNING)
			charge_slots(e, -1);
		memset(e, 0, sizeof(*e));
	}
	holding = false;
	holding_statement = NULL;
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

/* The statement's memory is going away without ExecutorEnd (error, drop). */
static void
statement_gone(void *arg)
{
	if (holding && holding_statement == (MccdbStatement *) arg)
		release_entry();
}

/*
 * Running queries whose backends have been blocked writing to their
 * clients for mccdb.client_stall lend their slots; a query lent that way
 * takes them back as soon as its backend runs again (it is still in the
 * same ExecutorRun: nothing else would), so no more queries run than there
 * are slots and its run time goes on counting.  Caller holds the lock.
 */
static void
lend_stalled_slots(int64 now_us)
{
	int			i;

	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];
		uint32		wait_event;
		bool		stalled;

		if (e->state != ENTRY_RUNNING && !(e->state == ENTRY_LENT && e->stalled_since_us != 0))
			continue;
		wait_event = (*(volatile uint32 *) &ProcGlobal->allProcs[e->procno].wait_event_info);
		stalled = wait_event == WAIT_EVENT_CLIENT_WRITE;
		if (e->state == ENTRY_LENT)
		{
			/* lent while stalled: running again */
			if (!stalled)
			{
				mccdb_gate_account_running(now_us);
				e->state = ENTRY_RUNNING;
				e->stalled_since_us = 0;
				charge_slots(e, 1);
			}
		}
		else if (!stalled)
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
 * The pid of a backend waiting for a heavyweight lock this backend (or a
 * member of its parallel group) holds in a conflicting mode, or 0.  Only
 * when some backend waits on a lock at all is the lock table read, and then
 * once (GetLockStatusData, all partitions once), in a memory context of
 * its own that is gone when this returns.
 */
static int
backend_waiting_for_my_locks(void)
{
	MemoryContext cxt,
				old;
	LockData   *locks;
	int		   *mine;
	int			nmine = 0,
				blocked = 0,
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
	for (j = 0; j < locks->nelements && blocked == 0 && nmine > 0; j++)
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
				blocked = w->pid;
				break;
			}
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return blocked;
}

/* Parallel workers a plan asks for: they take slots too. */
static int
planned_workers(Plan *plan)
{
	int			n = 0;
	ListCell   *lc;

	if (plan == NULL)
		return 0;
	if (IsA(plan, Gather))
		n += ((Gather *) plan)->num_workers;
	else if (IsA(plan, GatherMerge))
		n += ((GatherMerge *) plan)->num_workers;
	else if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			n += planned_workers(lfirst(lc));
	else if (IsA(plan, SubqueryScan))
		n += planned_workers(((SubqueryScan *) plan)->subplan);
	return n + planned_workers(outerPlan(plan)) + planned_workers(innerPlan(plan));
}

/* Is a function one of the mccdb extension's? */
static bool
is_own_function(Oid funcid, Oid ext)
{
	return OidIsValid(ext) && getExtensionOfObject(ProcedureRelationId, funcid) == ext;
}

/*
 * Do the function scans of a plan call the extension's functions only?
 * (The flat range table of a PlannedStmt has lost its functions: they are
 * in the FunctionScan nodes.)
 */
static bool
scans_only_own_functions(Plan *plan, Oid ext)
{
	ListCell   *lc;

	if (plan == NULL)
		return true;
	if (IsA(plan, FunctionScan))
		foreach(lc, ((FunctionScan *) plan)->functions)
		{
			Node	   *expr = lfirst_node(RangeTblFunction, lc)->funcexpr;

			if (!IsA(expr, FuncExpr) || !is_own_function(((FuncExpr *) expr)->funcid, ext))
				return false;
		}
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			if (!scans_only_own_functions(lfirst(lc), ext))
				return false;
	if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			if (!scans_only_own_functions(lfirst(lc), ext))
				return false;
	if (IsA(plan, SubqueryScan) &&
		!scans_only_own_functions(((SubqueryScan *) plan)->subplan, ext))
		return false;
	if (IsA(plan, CustomScan))
		return false;			/* its children are its own business */
	return scans_only_own_functions(outerPlan(plan), ext) &&
		scans_only_own_functions(innerPlan(plan), ext);
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

static bool
gate_applies(MccdbStatement *st)
{
	QueryDesc  *queryDesc = st->queryDesc;
	PlannedStmt *stmt = queryDesc->plannedstmt;

	return mccdb_schedule != MCCDB_SCHEDULE_OFF &&
		mccdb_adm != NULL &&
		!holding &&
		st->top &&
		mccdb_nesting_level() == 0 &&
		!creating_extension &&
		queryDesc->operation == CMD_SELECT &&
		st->real_cost >= mccdb_schedule_min_cost_value() &&
		!is_own_statement(stmt);
}

/* Take the slots of this backend's entry as admitted; caller holds the lock. */
static void
admit_locked(MccdbStatement *st, AdmissionEntry *e, int64 enqueued_us,
			 int64 now_us, bool for_locks)
{
	MccdbQueryKey key = mccdb_entry_key(e);
	KnownQuery *k = mccdb_known_query(&key, true, now_us);
	double		waited_ms = (double) (now_us - enqueued_us) / 1000.0;
	bool		starved = waited_ms >= mccdb_max_wait_ms;

	mccdb_gate_account_running(now_us);
	/* placed beside the running queries, before it is one of them */
	e->domain = mccdb_place_locked(e, true);
	e->state = ENTRY_RUNNING;
	e->since_us = now_us;
	e->since = GetCurrentTimestamp();
	e->admit_seq = mccdb_adm->next_admit_seq++;
	e->slots = Min(e->slots, mccdb_domain_slots(e->domain));
	charge_slots(e, 1);
	mccdb_adm->admitted_total++;
	if (starved)
		mccdb_adm->starved_total++;
	if (for_locks)
		mccdb_adm->lock_admitted_total++;
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
 * A parallel worker of a placed query runs in its leader's domain.  The
 * worker process ends with the query, so it never binds back.
 */
void
mccdb_admission_parallel_worker(void)
{
	PGPROC	   *leader = MyProc->lockGroupLeader;
	int			domain = -1;

	if (mccdb_adm == NULL || mccdb_gate_domains() == 1 || leader == NULL || leader == MyProc)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (int i = 0; i < mccdb_adm->nentries; i++)
		if (mccdb_adm->entries[i].pid == leader->pid && mccdb_adm->entries[i].state != ENTRY_WAITING &&
			mccdb_adm->entries[i].state != ENTRY_FREE)
			domain = mccdb_adm->entries[i].domain;
	LWLockRelease(mccdb_adm->lock);
	if (domain >= 0)
		bind_to_domain(domain);
}

/*
 * Enqueue, and sleep until mccdb_pick_next() names this backend.  Returns false
 * when the gate no longer applies (mccdb.schedule was set to off while it
 * waited): the statement then runs ungated.
 */
static bool
wait_for_admission(MccdbStatement *st)
{
	MccdbLocality *loc = mccdb_statement_locality(st);
	AdmissionEntry *e;
	MemoryContextCallback *cb;
	MccdbQueryKey key;
	int			workers = planned_workers(st->queryDesc->plannedstmt->planTree);
	int64		enqueued_us = mccdb_monotonic_us();
	int64		next_lock_check_us = enqueued_us + (int64) DeadlockTimeout * 1000;
	bool		admitted = false;
	int			domain = -1;

	mccdb_gate_exit_callback();
	mccdb_policy_prepare();
	cb = MemoryContextAlloc(st->cxt, sizeof(MemoryContextCallback));
	cb->func = statement_gone;
	cb->arg = st;
	MemoryContextRegisterResetCallback(st->cxt, cb);

	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	memset(e, 0, sizeof(*e));
	e->pid = MyProcPid;
	e->procno = mccdb_my_pgprocno();
	e->userid = GetUserId();
	e->dbid = MyDatabaseId;
	e->state = ENTRY_WAITING;
	e->cls = loc->cls;
	e->bytes = loc->bytes;
	e->slots = 1 + workers;
	e->seq = mccdb_adm->next_seq++;
	e->since_us = enqueued_us;
	e->since = GetCurrentTimestamp();
	e->queryid = st->queryDesc->plannedstmt->queryId;
	e->cost = st->real_cost;
	key = mccdb_entry_key(e);
	e->predicted = mccdb_predict_seconds(&key, e->cost, enqueued_us);
	holding = true;
	holding_statement = st;
	LWLockRelease(mccdb_adm->lock);

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&mccdb_adm->cv);
		for (;;)
		{
			int64		now_us;
			int			blocked = 0;

			/* A busy backend never reloads: do it here, for the gate's GUCs. */
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			if (mccdb_schedule == MCCDB_SCHEDULE_OFF)
				break;
			now_us = mccdb_monotonic_us();
			/* after deadlock_timeout, and then at most once per deadlock_timeout */
			if (now_us >= next_lock_check_us)
			{
				blocked = backend_waiting_for_my_locks();
				next_lock_check_us = now_us + (int64) DeadlockTimeout * 1000;
			}

			LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
			lend_stalled_slots(now_us);
			if (blocked != 0 || mccdb_pick_next(now_us) == e)
			{
				admit_locked(st, e, enqueued_us, now_us, blocked != 0);
				admitted = true;
				domain = e->domain;
			}
			LWLockRelease(mccdb_adm->lock);
			if (admitted)
			{
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
							(errmsg("mccdb: admitted process %d ahead of mccdb.schedule: process %d waits for a lock it holds",
									MyProcPid, blocked),
							 errdetail("A query waiting in the gate while holding locks others wait for could wait for them forever.")));
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
 * A top-level SELECT the gate let pass: counted for a query the gate has
 * admitted before (cheap queries that never were get no entry, so they
 * cannot crowd out the ones that matter).
 */
static void
count_bypass(MccdbStatement *st)
{
	MccdbQueryKey key = {GetUserId(), MyDatabaseId, st->queryDesc->plannedstmt->queryId, 0};
	int			i,
				found = -1;

	if (mccdb_schedule == MCCDB_SCHEDULE_OFF || mccdb_adm == NULL || !st->top || key.queryid == 0 ||
		st->queryDesc->operation != CMD_SELECT)
		return;
	/* most bypassed queries (cheap ones) were never admitted: no exclusive lock for them */
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < KNOWN_QUERIES && found < 0; i++)
		if (mccdb_adm->known[i].key.queryid == key.queryid &&
			mccdb_adm->known[i].key.dbid == key.dbid &&
			mccdb_adm->known[i].key.userid == key.userid)
			found = i;
	LWLockRelease(mccdb_adm->lock);
	if (found < 0)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	if (mccdb_adm->known[found].key.queryid == key.queryid &&
		mccdb_adm->known[found].key.dbid == key.dbid &&
		mccdb_adm->known[found].key.userid == key.userid)
	{
		KnownQuery *k = &mccdb_adm->known[found];
		MccdbQueryCounters bypass = {.bypasses = 1};

		mccdb_query_stats_add(&k->stats, &k->key, &bypass);
	}
	LWLockRelease(mccdb_adm->lock);
	mccdb_query_stats_report();
}

/* An admitted statement runs again (the next FETCH): take its slots back. */
static void
retake_slots(MccdbStatement *st)
{
	AdmissionEntry *e;

	st->admission.released = 0;

	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	if (e->pid == MyProcPid && e->state == ENTRY_LENT)
	{
		mccdb_gate_account_running(mccdb_monotonic_us());
		e->state = ENTRY_RUNNING;
		e->stalled_since_us = 0;
		charge_slots(e, 1);
	}
	LWLockRelease(mccdb_adm->lock);
}

/*
 * The run returned (a cursor waits for its next FETCH, or the statement is
 * about to end): lend the slots.
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
	/* lent between fetches now, not stalled: only the next run takes them back */
	if (e->pid == MyProcPid)
		e->stalled_since_us = 0;
	LWLockRelease(mccdb_adm->lock);
	ConditionVariableBroadcast(&mccdb_adm->cv);
}

void
mccdb_admission_run(MccdbStatement *st, ScanDirection direction,
					uint64 count, bool execute_once,
					void (*run) (QueryDesc *, ScanDirection, uint64, bool))
{
	bool		gated;

	if (holding && holding_statement == st)
		retake_slots(st);
	else if (!gate_applies(st) || !wait_for_admission(st))
	{
		count_bypass(st);
		run(st->queryDesc, direction, count, execute_once);
		return;
	}

	gated = true;
	PG_TRY();
	{
		run(st->queryDesc, direction, count, execute_once);
	}
	PG_CATCH();
	{
		st->admission.released = GetCurrentTimestamp();
		release_entry();
		gated = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (gated)
		lend_slots(st);
}

void
mccdb_admission_statement_end(MccdbStatement *st)
{
	if (holding && holding_statement == st)
	{
		if (st->admission.released == 0)
			st->admission.released = GetCurrentTimestamp();
		release_entry();
	}
	/* also what an earlier statement that failed left noted */
	mccdb_query_stats_report();
}
