/*-------------------------------------------------------------------------
 *
 * gate_state.c
 *		The admission gate's settings and shared memory (MCC-DB sections 5.2
 *		and 6.3): the bottom of the gate, which calls nothing above it.
 *
 * The gate is in layers (gate_state.h), each calling only those below it,
 * as PostgreSQL's lock manager sits under its SQL functions:
 *	gate_sql.c		mccdb_queue, mccdb_scheduler, mccdb_hold_admission,
 *					mccdb_llc_domains (read the layers below)
 *	gate.c			enqueue, wait, admit, lend, release
 *	policy.c		which waiter goes next (SLS, MLS, adaptive, predictive,
 *					shortest) and in which LLC domain; reads, never writes
 *	learned.c		run times, rates, interference matrices, their files
 *					and functions
 *	gate_state.c	settings, shared memory, the lock
 *
 * Shared memory holds one entry per backend: waiting, running or lending
 * its slots, its locality class (which of the paper's two queues it is in),
 * its hash table size and the slots it takes (1 + planned parallel
 * workers).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "gate_state.h"
#include "catalog/pg_authid.h"
#include "compat.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"

/* GUCs */
int			mccdb_schedule = MCCDB_SCHEDULE_OFF;
int			mccdb_corun_slots = 0;
int			mccdb_max_wait_ms = 30000;
double		mccdb_schedule_min_cost = 1000.0;
int			mccdb_client_stall_ms = 1000;
int			mccdb_log_min_wait_ms = -1;
bool		mccdb_placement = true;
int			mccdb_short_query_ms = 250;
int			mccdb_queue_timeout_ms = 0;
int			mccdb_queue_timeout_action = MCCDB_QUEUE_TIMEOUT_ERROR;
int			mccdb_memory_budget_kb = 0;
static double legacy_min_cost = -1.0;

static const struct config_enum_entry queue_timeout_actions[] = {
	{"error", MCCDB_QUEUE_TIMEOUT_ERROR, false},
	{"run", MCCDB_QUEUE_TIMEOUT_RUN, false},
	{NULL, 0, false}
};

static const struct config_enum_entry schedule_options[] = {
	{"off", MCCDB_SCHEDULE_OFF, false},
	{"sls", MCCDB_SCHEDULE_SLS, false},
	{"mls", MCCDB_SCHEDULE_MLS, false},
	{"adaptive", MCCDB_SCHEDULE_ADAPTIVE, false},
	{"predictive", MCCDB_SCHEDULE_PREDICTIVE, false},
	{"shortest", MCCDB_SCHEDULE_SHORTEST, false},
	{NULL, 0, false}
};

AdmissionShared *mccdb_adm = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;


const char *
mccdb_schedule_name(MccdbSchedule policy)
{
	return schedule_options[policy].name;
}

/* The cost below which a statement bypasses the gate. */
double
mccdb_schedule_min_cost_value(void)
{
	return legacy_min_cost >= 0 ? legacy_min_cost : mccdb_schedule_min_cost;
}

int64
mccdb_monotonic_us(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC is one clock for every process of the machine */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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
	mccdb_adm = ShmemInitStruct("mccdb admission", admission_shmem_size(), &found);
	if (!found)
	{
		memset(mccdb_adm, 0, admission_shmem_size());
		mccdb_adm->lock = &(GetNamedLWLockTranche("mccdb_admission"))->lock;
		ConditionVariableInit(&mccdb_adm->cv);
		mccdb_adm->nentries = MaxBackends;
		mccdb_adm->next_seq = 1;
		mccdb_adm->next_admit_seq = 1;
		pg_atomic_init_u64(&mccdb_adm->known_generation, 1);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
mccdb_admission_init(void)
{
	DefineCustomEnumVariable("mccdb.schedule",
							 "Which queries are co-scheduled (run at the same time).",
							 "off: all at once; sls: same locality queue; mls: one of each queue; adaptive: least predicted slowdown; predictive: compatible longest first; shortest: short queries at once, then highest response ratio.",
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
							"A query that waited this long is admitted next, whatever the policy or a hold.",
							NULL,
							&mccdb_max_wait_ms,
							30000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.schedule_min_cost",
							 "Queries with a lower estimated cost bypass the scheduler.",
							 "The cost is the plan's total cost without disable_cost.",
							 &mccdb_schedule_min_cost,
							 1000.0, 0.0, 1e100,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	/* the name before 1.3, accepted for one release */
	DefineCustomRealVariable("mccdb.min_cost",
							 "Deprecated name of mccdb.schedule_min_cost: when set (not -1), it is used instead.",
							 NULL,
							 &legacy_min_cost,
							 -1.0, -1.0, 1e100,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.client_stall",
							"A running query whose backend has waited this long to write to its client lends its slots to waiting queries.",
							"Between the fetches of a cursor the slots are lent at once.",
							&mccdb_client_stall_ms,
							1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("mccdb.short_query",
							"With mccdb.schedule = shortest, a query predicted to run at most this long alone is admitted at once.",
							"It runs beside the admitted queries, over the slot count: short queries never queue behind long ones.",
							&mccdb_short_query_ms,
							250, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("mccdb.queue_timeout",
							"A statement that has waited this long for admission fails instead of waiting on.",
							"0 waits on (mccdb.max_wait admits it). Superuser-only: set it per role with ALTER ROLE ... SET.",
							&mccdb_queue_timeout_ms,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("mccdb.queue_timeout_action",
							 "What a statement that has waited mccdb.queue_timeout does: error fails it, run runs it without the gate.",
							 "Superuser-only: set it per role with ALTER ROLE ... SET, beside mccdb.queue_timeout.",
							 &mccdb_queue_timeout_action,
							 MCCDB_QUEUE_TIMEOUT_ERROR, queue_timeout_actions,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("mccdb.memory_budget",
							"The gate admits a statement only while the admitted statements' estimated working memory stays within this.",
							"0 admits by slots alone. A statement estimated at more than the budget runs with no other statement that needs working memory.",
							&mccdb_memory_budget_kb,
							0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("mccdb.log_min_wait",
							"Logs each query that waited at least this long for admission.",
							"-1 logs none, as log_lock_waits does for locks.",
							&mccdb_log_min_wait_ms,
							-1, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("mccdb.placement",
							 "Places each admitted query in a last-level-cache domain and binds it to its CPUs.",
							 "With one domain (mccdb_llc_domains) nothing is placed or bound.",
							 &mccdb_placement,
							 true,
							 PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = admission_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = admission_shmem_startup;
}

void
mccdb_admission_queue_counts(int *strong_moderate, int *weak)
{
	int			i;

	*strong_moderate = *weak = 0;
	if (mccdb_adm == NULL)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state == ENTRY_FREE)
			continue;
		if (MCCDB_QUEUE_OF(e->cls) == 0)
			(*strong_moderate)++;
		else
			(*weak)++;
	}
	LWLockRelease(mccdb_adm->lock);
}

void
mccdb_admission_require_shmem(void)
{
	mccdb_require_preload();
	if (mccdb_adm == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mccdb shared memory is not initialized")));
}

/*
 * The SQL definition of a set-returning function has between min and max
 * columns, each a prefix of the newest: an older extension version whose
 * objects were not updated after the library was (the columns are filled
 * from the left; heap_form_tuple takes as many as the definition has).
 */
void
mccdb_require_columns(TupleDesc desc, int min, int max)
{
	int			natts = desc->natts;

	if (natts < min || natts > max)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mccdb's SQL objects do not match its library"),
				 min == max ?
				 errdetail("The function returns %d columns; this library fills %d.", natts, max) :
				 errdetail("The function returns %d columns; this library fills %d to %d.",
						   natts, min, max),
				 errhint("Run ALTER EXTENSION mccdb UPDATE.")));
}

/* DISCARD ALL: this session's hold ends (a pooler hands the session on). */
void
mccdb_admission_discard(void)
{
	bool		had_hold;

	if (mccdb_adm == NULL)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	had_hold = mccdb_adm->held_by == MyProcPid;
	if (had_hold)
		mccdb_adm->held_by = 0;
	LWLockRelease(mccdb_adm->lock);
	if (had_hold)
		ConditionVariableBroadcast(&mccdb_adm->cv);
}
