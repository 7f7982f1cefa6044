/*-------------------------------------------------------------------------
 *
 * admission.c
 *		Co-scheduling of queries (MCC-DB sections 5.2 and 6.3): the gate's
 *		settings, its shared memory and the views of it.  A gate in front of
 *		ExecutorRun lets at most mccdb.corun_slots queries run at once and
 *		the policy chooses which waiting query goes next.
 *
 * The gate is four files (admission_internal.h):
 *	admission.c		settings, shared memory, mccdb_queue, mccdb_scheduler,
 *					mccdb_hold_admission
 *	gate.c			enqueue, wait, admit, lend, release
 *	policy.c		SLS, MLS, adaptive, predictive; placement in LLC domains
 *	learned.c		run times, interference matrices, their files and views
 *
 * Shared memory holds one entry per backend: waiting, running or lending
 * its slots, its locality class (which of the paper's two queues it is in),
 * its hash table size and the slots it takes (1 + planned parallel
 * workers).
 *
 * What a role may see (as pg_stat_activity and pg_stat_statements decide):
 * every row of mccdb_queue, but the hash table size and predicted run time
 * of another role's statement only with pg_read_all_stats.  A hold belongs
 * to the session that took it: another session may end it only with the
 * privileges of the holder's role.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "admission_internal.h"
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
static double legacy_min_cost = -1.0;

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

PG_FUNCTION_INFO_V1(mccdb_queue);
PG_FUNCTION_INFO_V1(mccdb_scheduler);
PG_FUNCTION_INFO_V1(mccdb_hold_admission);

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

static const char *
entry_state_name(EntryState state)
{
	static const char *const names[] = {"free", "waiting", "running", "lent"};

	return names[state];
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
	double		matrix[MODEL_CLASSES][MODEL_CLASSES];

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
	}
	LWLockRelease(AddinShmemInitLock);

	if (found || IsUnderPostmaster)
		return;
	/* After a restart or crash recovery: the matrix the server had. */
	mccdb_remove_matrix_temp_files();
	if (mccdb_read_matrix_file(matrix))
	{
		memcpy(mccdb_adm->interference, matrix, sizeof(matrix));
		mccdb_adm->have_matrix = true;
	}
	/* After a clean restart: what was learned; written again at shutdown. */
	mccdb_learned_startup();
	if (strcmp(GetConfigOption("compute_query_id", false, false), "off") == 0)
		ereport(LOG,
				(errmsg("mccdb: compute_query_id is off: run times and mccdb_query_stats are not kept"),
				 errhint("Set compute_query_id to auto (its default) or on.")));
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

	/*
	 * Run times and statistics are kept per queryid, as pg_stat_statements
	 * keeps its entries: compute_query_id = auto computes them.
	 */
	EnableQueryId();

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
mccdb_require_columns(ReturnSetInfo *rsinfo, int min, int max)
{
	int			natts = rsinfo->setDesc->natts;

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

/*
 * The running, lending and waiting queries, oldest first.  Every role sees
 * every row, as in pg_stat_activity; what a statement is (its hash tables,
 * its predicted run time) only its own role and pg_read_all_stats see.
 */
Datum
mccdb_queue(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AdmissionEntry *copy;
	bool		all_visible = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	int			n = 0,
				i;
	int64		now_us = mccdb_monotonic_us();

	mccdb_admission_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	/* 1.0 had the first 9 columns, 1.1 the first 10, 1.2 11: the library may be newer */
	mccdb_require_columns(rsinfo, 9, 13);
	copy = palloc(sizeof(AdmissionEntry) * mccdb_adm->nentries);
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < mccdb_adm->nentries; i++)
		if (mccdb_adm->entries[i].state != ENTRY_FREE)
			copy[n++] = mccdb_adm->entries[i];
	LWLockRelease(mccdb_adm->lock);

	for (i = 0; i < n; i++)
	{
		AdmissionEntry *e = &copy[i];
		bool		visible = all_visible || has_privs_of_role(GetUserId(), e->userid);
		Datum		values[13];
		bool		nulls[13] = {0};

		values[0] = Int32GetDatum(e->pid);
		values[1] = CStringGetTextDatum(entry_state_name(e->state));
		values[2] = CStringGetTextDatum(MCCDB_QUEUE_OF(e->cls) == 0 ? "strong/moderate" : "weak");
		values[3] = CStringGetTextDatum(mccdb_locality_class_name(e->cls));
		values[4] = Int64GetDatum(mccdb_double_to_int64(e->bytes));
		nulls[4] = !visible;
		values[5] = Int32GetDatum(e->slots);
		values[6] = TimestampTzGetDatum(e->since);
		values[7] = Float8GetDatum((double) (now_us - e->since_us) / 1000.0);
		values[8] = Int64GetDatum(e->seq);
		values[9] = Float8GetDatum(e->predicted);
		nulls[9] = !visible;
		values[10] = Int32GetDatum(e->domain);
		nulls[10] = e->state == ENTRY_WAITING;
		values[11] = ObjectIdGetDatum(e->userid);
		values[12] = ObjectIdGetDatum(e->dbid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* The LLC domains' slots and their use, for mccdb_llc_domains (topology.c). */
void
mccdb_admission_domain_use(int *slots, int *used, int ndomains)
{
	int			nd = mccdb_adm ? mccdb_gate_domains() : 0;

	for (int d = 0; d < ndomains; d++)
		slots[d] = d < nd ? mccdb_domain_slots(d) : -1;
	if (mccdb_adm == NULL)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	memcpy(used, mccdb_adm->domain_used, sizeof(int) * Min(ndomains, MCCDB_MAX_LLC_DOMAINS));
	LWLockRelease(mccdb_adm->lock);
}

/* One row: policy, slots, use, hold, counters. */
Datum
mccdb_scheduler(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};

	mccdb_admission_require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	values[0] = CStringGetTextDatum(mccdb_schedule_name(mccdb_schedule));
	values[1] = Int32GetDatum(mccdb_total_slots());
	values[2] = Int32GetDatum(mccdb_adm->used_slots);
	values[3] = BoolGetDatum(mccdb_adm->held_by != 0);
	values[4] = Int64GetDatum(mccdb_adm->admitted_total);
	values[5] = Int64GetDatum(mccdb_adm->starved_total);
	values[6] = BoolGetDatum(mccdb_adm->have_matrix);
	values[7] = Int32GetDatum(mccdb_adm->held_by);
	nulls[7] = mccdb_adm->held_by == 0;
	values[8] = Int64GetDatum(mccdb_adm->lock_admitted_total);
	values[9] = Int64GetDatum(mccdb_adm->lent_total);
	LWLockRelease(mccdb_adm->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
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

/*
 * Hold admission (queue everything, run nothing new) or release it: how a
 * static batch, as in the paper's experiments, is submitted "together".
 * The hold belongs to the session that took it and ends with it or with its
 * DISCARD ALL (what a pooler runs before handing the session on); another
 * session may end it only with the privileges of the holder's role (as
 * pg_cancel_backend decides), and nobody takes it over silently.
 * mccdb.max_wait still admits.
 */
Datum
mccdb_hold_admission(PG_FUNCTION_ARGS)
{
	bool		hold = PG_GETARG_BOOL(0);
	int			holder;
	Oid			holder_role;

	mccdb_admission_require_shmem();
	mccdb_gate_exit_callback();
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	holder = mccdb_adm->held_by;
	holder_role = mccdb_adm->held_by_role;
	if (hold && holder == 0)
	{
		mccdb_adm->held_by = MyProcPid;
		mccdb_adm->held_by_role = GetUserId();
	}
	LWLockRelease(mccdb_adm->lock);

	if (hold)
	{
		if (holder != 0 && holder != MyProcPid)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("admission is already held by process %d", holder),
					 errhint("Wait until that session calls mccdb_hold_admission(false) or ends.")));
		PG_RETURN_VOID();
	}
	if (holder == 0)
		PG_RETURN_VOID();
	if (holder != MyProcPid && !has_privs_of_role(GetUserId(), holder_role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to end the hold of process %d", holder),
				 errdetail("Only roles with the privileges of the role that took the hold may end it.")));
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	if (mccdb_adm->held_by == holder)
		mccdb_adm->held_by = 0;
	LWLockRelease(mccdb_adm->lock);
	ConditionVariableBroadcast(&mccdb_adm->cv);
	PG_RETURN_VOID();
}
