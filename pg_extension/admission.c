/*-------------------------------------------------------------------------
 *
 * admission.c
 *		Co-scheduling of queries (MCC-DB sections 5.2 and 6.3): a gate in
 *		front of ExecutorRun that lets at most mccdb.corun_slots queries
 *		run at once and chooses which waiting query goes next.
 *
 * Shared memory holds one entry per backend: waiting or running, its
 * locality class (which of the paper's two queues it is in), its hash table
 * size and the slots it takes (1 + planned parallel workers).  A waiting
 * backend sleeps on a condition variable (wait event "Extension" in
 * pg_stat_activity); whoever frees slots or changes the queue broadcasts,
 * and every waiter re-evaluates pick_next() under the lock: the one it
 * names takes its slots.
 *
 * Policies (mccdb.schedule):
 *	sls		co-run queries of the same queue; strong/moderate first, smallest
 *			hash tables first;
 *	mls		co-run one query of each queue (as SLS when one queue is empty);
 *	adaptive	admit the waiter that minimises the predicted slowdown of the
 *			running set, from an interference matrix measured on the host;
 *	off		admit everything (stock behaviour).
 * Beyond the paper, which assumed a static batch: a query that has waited
 * mccdb.max_wait is admitted next whatever the policy (no starvation).
 *
 * A slot is never leaked: the run is wrapped in PG_FINALLY (ERROR, cancel,
 * statement_timeout), a before_shmem_exit callback covers FATAL, client
 * disconnect and pg_terminate_backend, and a backend crash reinitialises
 * shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "admission.h"
#include "cache_geometry.h"
#include "commands/extension.h"
#include "funcapi.h"
#include "mccdb.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "plan_choice.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

typedef struct AdmissionEntry
{
	int			pid;			/* 0 = free */
	bool		running;
	int			slots;
	int			cls;			/* MccdbLocalityClass */
	double		bytes;
	int64		seq;			/* arrival order */
	int64		admit_seq;
	TimestampTz since;			/* enqueued, then admitted */
	uint64		queryid;
} AdmissionEntry;

typedef struct AdmissionShared
{
	LWLock	   *lock;
	ConditionVariable cv;
	bool		held;			/* mccdb_hold_admission(true): queue, admit nothing */
	int			used_slots;
	int64		next_seq;
	int64		next_admit_seq;
	int64		admitted_total;
	int64		starved_total;	/* admitted because of mccdb.max_wait */
	bool		have_matrix;
	double		interference[3][3]; /* [target class][co-runner class] slowdown */
	int			nentries;
	AdmissionEntry entries[FLEXIBLE_ARRAY_MEMBER];
} AdmissionShared;

static AdmissionShared *adm = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool exit_callback_registered = false;
static bool holding = false;	/* this backend has an entry */
static MccdbAdmission last_admission;

static Size
admission_shmem_size(void)
{
	return add_size(offsetof(AdmissionShared, entries),
					mul_size(MaxBackends, sizeof(AdmissionEntry)));
}

static void
admission_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(admission_shmem_size());
	RequestNamedLWLockTranche("mccdb_admission", 1);
}

static void
admission_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	adm = ShmemInitStruct("mccdb admission", admission_shmem_size(), &found);
	if (!found)
	{
		memset(adm, 0, admission_shmem_size());
		adm->lock = &(GetNamedLWLockTranche("mccdb_admission"))->lock;
		ConditionVariableInit(&adm->cv);
		adm->nentries = MaxBackends;
		adm->next_seq = 1;
		adm->next_admit_seq = 1;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
mccdb_admission_install(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = admission_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = admission_shmem_startup;
}

/* Slots in use at once: mccdb.corun_slots, or the CPUs sharing the LLC. */
static int
total_slots(void)
{
	int			cpus;

	if (mccdb_corun_slots > 0)
		return mccdb_corun_slots;
	cpus = mccdb_cache_geometry()->shared_cpus;
	return Max(cpus, 1);
}

static AdmissionEntry *
my_entry(void)
{
	Assert(MyBackendId >= 1 && MyBackendId <= adm->nentries);
	return &adm->entries[MyBackendId - 1];
}

/* Remove this backend's entry and give back its slots; caller holds the lock. */
static void
remove_entry_locked(void)
{
	AdmissionEntry *e = my_entry();

	if (e->pid == MyProcPid)
	{
		if (e->running)
			adm->used_slots -= e->slots;
		memset(e, 0, sizeof(*e));
	}
	holding = false;
}

static void
release_entry(void)
{
	if (!holding || adm == NULL)
		return;
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	remove_entry_locked();
	LWLockRelease(adm->lock);
	ConditionVariableBroadcast(&adm->cv);
}

/* FATAL, client disconnect, pg_terminate_backend: never leave a slot behind. */
static void
admission_shmem_exit(int code, Datum arg)
{
	if (holding && adm != NULL)
	{
		LWLockReleaseAll();
		release_entry();
	}
}

/* Predicted slowdown (sum of factors - 1) of a candidate joining the running set. */
static double
predicted_slowdown(int cls)
{
	double		s = 0;
	int			i;

	for (i = 0; i < adm->nentries; i++)
	{
		AdmissionEntry *r = &adm->entries[i];

		if (r->pid == 0 || !r->running)
			continue;
		s += adm->interference[r->cls][cls] - 1.0;
		s += adm->interference[cls][r->cls] - 1.0;
	}
	return s;
}

/*
 * Is a better than b as the next query of the given queue?  The
 * strong/moderate queue takes the smallest hash tables first (SLS), the
 * weak queue goes in arrival order.
 */
static bool
better_in_queue(AdmissionEntry *a, AdmissionEntry *b)
{
	if (b == NULL)
		return true;
	if (MCCDB_QUEUE_OF(a->cls) == 0 && a->bytes != b->bytes)
		return a->bytes < b->bytes;
	return a->seq < b->seq;
}

/*
 * The waiting entry to admit now, or NULL.  Deterministic in the shared
 * state, so every waiter agrees; caller holds the lock.
 */
static AdmissionEntry *
pick_next(TimestampTz now)
{
	int			slots = total_slots();
	int			running[2] = {0, 0};
	AdmissionEntry *best[2] = {NULL, NULL};
	AdmissionEntry *starving = NULL;
	AdmissionEntry *choice = NULL;
	MccdbSchedule policy = (MccdbSchedule) mccdb_schedule;
	int			i;

	if (adm->held)
		return NULL;
	for (i = 0; i < adm->nentries; i++)
	{
		AdmissionEntry *e = &adm->entries[i];
		int			q;

		if (e->pid == 0)
			continue;
		q = MCCDB_QUEUE_OF(e->cls);
		if (e->running)
		{
			running[q]++;
			continue;
		}
		if (better_in_queue(e, best[q]))
			best[q] = e;
		if (TimestampDifferenceExceeds(e->since, now, mccdb_max_wait) &&
			(starving == NULL || e->seq < starving->seq))
			starving = e;
	}

	if (starving)
		choice = starving;
	else if (policy == MCCDB_SCHEDULE_ADAPTIVE && adm->have_matrix)
	{
		double		best_cost = 0;

		for (i = 0; i < 2; i++)
		{
			double		c;

			if (best[i] == NULL)
				continue;
			c = predicted_slowdown(best[i]->cls);
			if (choice == NULL || c < best_cost ||
				(c == best_cost && best[i]->seq < choice->seq))
			{
				choice = best[i];
				best_cost = c;
			}
		}
	}
	else if (policy == MCCDB_SCHEDULE_SLS)
	{
		if (running[0] + running[1] == 0)
			choice = best[0] ? best[0] : best[1];
		else if (running[1] == 0)
			choice = best[0];	/* strong/moderate running: only them */
		else if (running[0] == 0)
			choice = best[1];	/* weak running: only weak */
		else
			choice = (best[0] && (!best[1] || best[0]->seq < best[1]->seq)) ? best[0] : best[1];
	}
	else
	{
		/* MLS, and adaptive without a matrix: balance the two queues */
		if (running[0] <= running[1])
			choice = best[0] ? best[0] : best[1];
		else
			choice = best[1] ? best[1] : best[0];
	}

	if (choice == NULL)
		return NULL;
	if (adm->used_slots + Min(choice->slots, slots) > slots)
		return NULL;
	return choice;
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

/* Statements of the extension itself (its views) are never gated. */
static bool
is_own_statement(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);
		ListCell   *lc2;

		if (rte->rtekind != RTE_FUNCTION)
			continue;
		foreach(lc2, rte->functions)
		{
			RangeTblFunction *f = lfirst(lc2);

			if (IsA(f->funcexpr, FuncExpr))
			{
				char	   *name = get_func_name(((FuncExpr *) f->funcexpr)->funcid);

				if (name && strncmp(name, "mccdb_", 6) == 0)
					return true;
			}
		}
	}
	return false;
}

static bool
gate_applies(QueryDesc *queryDesc)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	return mccdb_schedule != MCCDB_SCHEDULE_OFF &&
		adm != NULL &&
		!holding &&
		mccdb_exec_nested_level == 0 &&
		!IsParallelWorker() &&
		!creating_extension &&
		queryDesc->operation == CMD_SELECT &&
		mccdb_real_cost(stmt->planTree) >= mccdb_min_cost &&
		!is_own_statement(stmt);
}

/* Enqueue, and sleep until pick_next() names this backend. */
static void
wait_for_admission(QueryDesc *queryDesc)
{
	MccdbLocality loc;
	AdmissionEntry *e;
	int			workers = planned_workers(queryDesc->plannedstmt->planTree);
	TimestampTz enqueued = GetCurrentTimestamp();

	mccdb_estimate_locality(queryDesc->plannedstmt, &loc);

	if (!exit_callback_registered)
	{
		before_shmem_exit(admission_shmem_exit, (Datum) 0);
		exit_callback_registered = true;
	}

	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	memset(e, 0, sizeof(*e));
	e->pid = MyProcPid;
	e->cls = loc.cls;
	e->bytes = loc.bytes;
	e->slots = 1 + workers;
	e->seq = adm->next_seq++;
	e->since = enqueued;
	e->queryid = queryDesc->plannedstmt->queryId;
	holding = true;
	LWLockRelease(adm->lock);

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&adm->cv);
		for (;;)
		{
			TimestampTz now = GetCurrentTimestamp();
			bool		admitted = false;

			LWLockAcquire(adm->lock, LW_EXCLUSIVE);
			if (pick_next(now) == e)
			{
				e->running = true;
				e->since = now;
				e->admit_seq = adm->next_admit_seq++;
				adm->used_slots += Min(e->slots, total_slots());
				e->slots = Min(e->slots, total_slots());
				adm->admitted_total++;
				if (TimestampDifferenceExceeds(enqueued, now, mccdb_max_wait))
					adm->starved_total++;
				last_admission.admit_seq = e->admit_seq;
				last_admission.admitted = now;
				last_admission.waited_ms =
					(double) (now - enqueued) / 1000.0;
				admitted = true;
			}
			LWLockRelease(adm->lock);
			if (admitted)
				break;
			/* wake up at least once a second to honour mccdb.max_wait */
			ConditionVariableTimedSleep(&adm->cv, 1000, PG_WAIT_EXTENSION);
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

	/* Another waiter may fit in the slots that are still free. */
	ConditionVariableBroadcast(&adm->cv);
}

void
mccdb_admission_run(QueryDesc *queryDesc, ScanDirection direction,
					uint64 count, bool execute_once,
					void (*run) (QueryDesc *, ScanDirection, uint64, bool))
{
	if (mccdb_exec_nested_level == 0)
		memset(&last_admission, 0, sizeof(last_admission));
	if (!gate_applies(queryDesc))
	{
		run(queryDesc, direction, count, execute_once);
		return;
	}

	wait_for_admission(queryDesc);
	last_admission.gated = true;
	PG_TRY();
	{
		run(queryDesc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		last_admission.released = GetCurrentTimestamp();
		release_entry();
	}
	PG_END_TRY();
}

void
mccdb_admission_queue_counts(int *strong_moderate, int *weak)
{
	int			i;

	*strong_moderate = *weak = 0;
	if (adm == NULL)
		return;
	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < adm->nentries; i++)
	{
		AdmissionEntry *e = &adm->entries[i];

		if (e->pid == 0)
			continue;
		if (MCCDB_QUEUE_OF(e->cls) == 0)
			(*strong_moderate)++;
		else
			(*weak)++;
	}
	LWLockRelease(adm->lock);
}

const MccdbAdmission *
mccdb_admission_last(void)
{
	return &last_admission;
}

static void
require_shmem(void)
{
	mccdb_require_preload();
	if (adm == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mccdb shared memory is not initialized")));
}

PG_FUNCTION_INFO_V1(mccdb_queue);
PG_FUNCTION_INFO_V1(mccdb_scheduler);
PG_FUNCTION_INFO_V1(mccdb_hold_admission);
PG_FUNCTION_INFO_V1(mccdb_set_interference);
PG_FUNCTION_INFO_V1(mccdb_clear_interference);

/* The running and waiting queries, oldest first. */
Datum
mccdb_queue(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AdmissionEntry *copy;
	int			n = 0,
				i;
	TimestampTz now = GetCurrentTimestamp();

	require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	copy = palloc(sizeof(AdmissionEntry) * adm->nentries);
	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < adm->nentries; i++)
		if (adm->entries[i].pid != 0)
			copy[n++] = adm->entries[i];
	LWLockRelease(adm->lock);

	for (i = 0; i < n; i++)
	{
		AdmissionEntry *e = &copy[i];
		Datum		values[9];
		bool		nulls[9] = {0};

		values[0] = Int32GetDatum(e->pid);
		values[1] = CStringGetTextDatum(e->running ? "running" : "waiting");
		values[2] = CStringGetTextDatum(MCCDB_QUEUE_OF(e->cls) == 0 ? "strong/moderate" : "weak");
		values[3] = CStringGetTextDatum(mccdb_locality_class_name(e->cls));
		values[4] = Int64GetDatum((int64) e->bytes);
		values[5] = Int32GetDatum(e->slots);
		values[6] = TimestampTzGetDatum(e->since);
		values[7] = Float8GetDatum((double) (now - e->since) / 1000.0);
		values[8] = Int64GetDatum(e->seq);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* One row: policy, slots, use, counters. */
Datum
mccdb_scheduler(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {0};
	static const char *const names[] = {"off", "sls", "mls", "adaptive"};

	require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(adm->lock, LW_SHARED);
	values[0] = CStringGetTextDatum(names[mccdb_schedule]);
	values[1] = Int32GetDatum(total_slots());
	values[2] = Int32GetDatum(adm->used_slots);
	values[3] = BoolGetDatum(adm->held);
	values[4] = Int64GetDatum(adm->admitted_total);
	values[5] = Int64GetDatum(adm->starved_total);
	values[6] = BoolGetDatum(adm->have_matrix);
	LWLockRelease(adm->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Hold admission (queue everything, run nothing new) or release it: how a
 * static batch, as in the paper's experiments, is submitted "together".
 */
Datum
mccdb_hold_admission(PG_FUNCTION_ARGS)
{
	bool		hold = PG_GETARG_BOOL(0);

	require_shmem();
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	adm->held = hold;
	LWLockRelease(adm->lock);
	ConditionVariableBroadcast(&adm->cv);
	PG_RETURN_VOID();
}

static int
class_from_name(const char *name)
{
	if (strcmp(name, "strong") == 0)
		return MCCDB_STRONG;
	if (strcmp(name, "moderate") == 0)
		return MCCDB_MODERATE;
	if (strcmp(name, "weak") == 0)
		return MCCDB_WEAK;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown locality class \"%s\"", name),
			 errhint("Use strong, moderate or weak.")));
	return MCCDB_WEAK;			/* keep compiler quiet */
}

/* Set one cell of the interference matrix the adaptive policy uses. */
Datum
mccdb_set_interference(PG_FUNCTION_ARGS)
{
	int			target = class_from_name(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	int			corunner = class_from_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	double		slowdown = PG_GETARG_FLOAT8(2);
	int			i,
				j;

	require_shmem();
	if (!(slowdown > 0 && slowdown < 1000))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slowdown must be a ratio between 0 and 1000, not %g", slowdown),
				 errhint("A slowdown is co-run time / alone time, e.g. 1.25.")));
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	if (!adm->have_matrix)
	{
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++)
				adm->interference[i][j] = 1.0;
		adm->have_matrix = true;
	}
	adm->interference[target][corunner] = slowdown;
	LWLockRelease(adm->lock);
	PG_RETURN_VOID();
}

/* Forget the matrix: adaptive behaves as MLS until one is loaded. */
Datum
mccdb_clear_interference(PG_FUNCTION_ARGS)
{
	require_shmem();
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	adm->have_matrix = false;
	LWLockRelease(adm->lock);
	PG_RETURN_VOID();
}
