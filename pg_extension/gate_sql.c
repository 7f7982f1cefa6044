/*-------------------------------------------------------------------------
 *
 * gate_sql.c
 *		The gate's SQL functions: its queue, its state, the hold, the LLC
 *		domains and their slots.  The top of the gate (gate_state.c): it
 *		reads the layers below and nothing calls it.
 *
 * What a role may see (as pg_stat_activity and pg_stat_statements decide):
 * every row of mccdb_queue, but the hash table size, working memory and
 * predicted run time of another role's statement only with pg_read_all_stats or that role's
 * privileges.  A hold belongs to the session that took it: another session
 * may end it only with the privileges of the holder's role.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_authid.h"
#include "compat.h"
#include "funcapi.h"
#include "gate_state.h"
#include "miscadmin.h"
#include "state.h"
#include "topology.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(mccdb_queue);
PG_FUNCTION_INFO_V1(mccdb_scheduler);
PG_FUNCTION_INFO_V1(mccdb_hold_admission);
PG_FUNCTION_INFO_V1(mccdb_llc_domains);
PG_FUNCTION_INFO_V1(mccdb_classes);

static const char *
entry_state_name(EntryState state)
{
	static const char *const names[] = {"free", "waiting", "running", "lent"};

	return names[state];
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
	char		(*class_names)[NAMEDATALEN];

	mccdb_admission_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	/* 1.0 had the first 9 columns, 1.1 the first 10, 1.2 11, 1.3 13, 1.5 14: the library may be newer */
	mccdb_require_columns(rsinfo->setDesc, 9, 15);
	copy = palloc(sizeof(AdmissionEntry) * mccdb_adm->nentries);
	class_names = palloc(sizeof(*class_names) * MCCDB_MAX_CLASSES);
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < mccdb_adm->nentries; i++)
		if (mccdb_adm->entries[i].state != ENTRY_FREE)
			copy[n++] = mccdb_adm->entries[i];
	for (i = 0; i < mccdb_adm->nclasses; i++)
		strlcpy(class_names[i], mccdb_adm->classes[i].name, NAMEDATALEN);
	LWLockRelease(mccdb_adm->lock);

	for (i = 0; i < n; i++)
	{
		AdmissionEntry *e = &copy[i];
		bool		visible = all_visible || has_privs_of_role(GetUserId(), e->userid);
		Datum		values[15];
		bool		nulls[15] = {0};

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
		values[13] = Int64GetDatum(e->memory_kb * 1024);
		nulls[13] = !visible;
		values[14] = CStringGetTextDatum(class_names[e->wclass]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* The LLC domains' slots and their use, for mccdb_llc_domains. */
static void
domain_use(int *slots, int *used, int ndomains)
{
	int			nd = mccdb_adm ? mccdb_gate_domains() : 0;

	for (int d = 0; d < ndomains; d++)
		slots[d] = d < nd ? mccdb_domain_slots(d) : -1;
	if (mccdb_adm == NULL)
		return;
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	memcpy(used, mccdb_adm->counts.domain_used, sizeof(int) * Min(ndomains, MCCDB_MAX_LLC_DOMAINS));
	LWLockRelease(mccdb_adm->lock);
}

/*
 * One row: policy, slots, use, hold, counters, memory.  1.0 defined the
 * first 7 columns, 1.1 to 1.3 the first 10, 1.4 14, 1.5 18: the tuple
 * takes as many as the definition has.
 */
Datum
mccdb_scheduler(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[18];
	bool		nulls[18] = {0};
	MemoryInUse memory;

	mccdb_admission_require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	mccdb_require_columns(tupdesc, 7, 18);
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	values[0] = CStringGetTextDatum(mccdb_schedule_name(mccdb_schedule));
	values[1] = Int32GetDatum(mccdb_total_slots());
	values[2] = Int32GetDatum(mccdb_adm->counts.used_slots);
	values[3] = BoolGetDatum(mccdb_adm->held_by != 0);
	values[4] = Int64GetDatum(mccdb_adm->admitted_total);
	values[5] = Int64GetDatum(mccdb_adm->starved_total);
	values[6] = BoolGetDatum(mccdb_adm->have_matrix);
	values[7] = Int32GetDatum(mccdb_adm->held_by);
	nulls[7] = mccdb_adm->held_by == 0;
	values[8] = Int64GetDatum(mccdb_adm->lock_admitted_total);
	values[9] = Int64GetDatum(mccdb_adm->lent_total);
	values[10] = Int32GetDatum(mccdb_adm->counts.short_used);
	values[11] = Int32GetDatum(mccdb_adm->counts.lock_used);
	values[12] = Int64GetDatum(mccdb_adm->repaired_total);
	values[13] = Int64GetDatum(mccdb_adm->timed_out_total);
	memory = mccdb_memory_in_use();
	values[14] = Int64GetDatum((int64) mccdb_memory_budget_kb * 1024);
	nulls[14] = mccdb_memory_budget_kb <= 0;
	values[15] = Int64GetDatum((memory.running_kb + memory.lent_kb) * 1024);
	values[16] = Int64GetDatum(mccdb_adm->alone_total);
	values[17] = Int64GetDatum(mccdb_adm->timed_out_run_total);
	LWLockRelease(mccdb_adm->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
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

/*
 * The last-level-cache domains as the gate uses them (topology.c): the CPUs
 * of each, its slots and how many are in use.  Without placement, or
 * on a machine with one LLC, the gate has one domain: the first row holds
 * its slots.
 */
Datum
mccdb_llc_domains(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const MccdbTopology *t = mccdb_topology();
	int			slots[MCCDB_MAX_LLC_DOMAINS];
	int			used[MCCDB_MAX_LLC_DOMAINS] = {0};

	mccdb_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	mccdb_require_columns(rsinfo->setDesc, 8, 8);
	domain_use(slots, used, t->ndomains);
	for (int i = 0; i < t->ndomains; i++)
	{
		const MccdbLlcDomain *d = &t->domains[i];
		Datum		values[8];
		bool		nulls[8] = {false};

		values[0] = Int32GetDatum(i);
		values[1] = CStringGetTextDatum(mccdb_format_cpu_list(&d->cpus));
		values[2] = Int32GetDatum(d->ncpus);
		values[3] = Int32GetDatum(d->level);
		nulls[3] = d->level == 0;
		values[4] = Int64GetDatum(d->size);
		nulls[4] = d->size == 0;
		values[5] = Int32GetDatum(slots[i]);
		nulls[5] = slots[i] < 0;
		values[6] = Int32GetDatum(used[i]);
		nulls[6] = slots[i] < 0;
		values[7] = CStringGetTextDatum(mccdb_topology_source());
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static int
compare_float4(const void *a, const void *b)
{
	float4		x = *(const float4 *) a,
				y = *(const float4 *) b;

	return (x > y) - (x < y);
}

/* The p-th percentile (nearest rank) of n sorted waits. */
static float4
percentile(const float4 *sorted, int n, double p)
{
	int			rank = (int) ceil(p * n);

	return sorted[Max(rank, 1) - 1];
}

/*
 * The workload classes in force, default first: their settings (NULL where
 * the server's apply), their statements running and waiting now, and
 * what they met since the server started.  Counts only, as
 * mccdb_scheduler: every role sees them.
 */
Datum
mccdb_classes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WorkloadClass *classes;
	WorkloadClassStats *stats;
	int			nclasses;
	int			running[MCCDB_MAX_CLASSES] = {0};
	int			running_slots[MCCDB_MAX_CLASSES] = {0};
	int			waiting[MCCDB_MAX_CLASSES] = {0};
	MemoryInUse memory;

	mccdb_admission_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	mccdb_require_columns(rsinfo->setDesc, 19, 19);
	classes = palloc(sizeof(mccdb_adm->classes));
	stats = palloc(sizeof(mccdb_adm->class_stats));
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	nclasses = mccdb_adm->nclasses;
	memcpy(classes, mccdb_adm->classes, sizeof(mccdb_adm->classes));
	memcpy(stats, mccdb_adm->class_stats, sizeof(mccdb_adm->class_stats));
	for (int i = 0; i < mccdb_adm->nentries; i++)
	{
		AdmissionEntry *e = &mccdb_adm->entries[i];

		if (e->state == ENTRY_WAITING)
			waiting[e->wclass]++;
		else if (e->state == ENTRY_RUNNING)
		{
			running[e->wclass]++;
			running_slots[e->wclass] += e->slots;
		}
	}
	memory = mccdb_memory_in_use();
	LWLockRelease(mccdb_adm->lock);

	for (int c = 0; c < nclasses; c++)
	{
		WorkloadClass *wc = &classes[c];
		WorkloadClassStats *s = &stats[c];
		Datum		values[19];
		bool		nulls[19] = {0};

		values[0] = CStringGetTextDatum(wc->name);
		values[1] = Int32GetDatum(wc->slots);
		nulls[1] = wc->slots == 0;
		values[2] = Int32GetDatum(wc->priority);
		values[3] = Float8GetDatum(wc->memory_share);
		nulls[3] = wc->memory_share == 0;
		values[4] = Int32GetDatum(wc->queue_timeout_ms);
		nulls[4] = wc->queue_timeout_ms < 0;
		values[5] = CStringGetTextDatum(wc->queue_timeout_action == MCCDB_QUEUE_TIMEOUT_RUN ?
										"run" : "error");
		nulls[5] = wc->queue_timeout_action < 0;
		values[6] = Int32GetDatum(wc->short_query_ms);
		nulls[6] = wc->short_query_ms < 0;
		values[7] = Int32GetDatum(running[c]);
		values[8] = Int32GetDatum(running_slots[c]);
		values[9] = Int32GetDatum(waiting[c]);
		values[10] = Int64GetDatum((memory.class_running_kb[c] + memory.class_lent_kb[c]) * 1024);
		values[11] = Int64GetDatum(s->admitted);
		values[12] = Int64GetDatum(s->starved);
		values[13] = Int64GetDatum(s->timed_out);
		values[14] = Int64GetDatum(s->timed_out_run);
		if (s->nwaits > 0)
		{
			qsort(s->wait_ms, s->nwaits, sizeof(float4), compare_float4);
			values[15] = Float8GetDatum(percentile(s->wait_ms, s->nwaits, 0.50));
			values[16] = Float8GetDatum(percentile(s->wait_ms, s->nwaits, 0.95));
			values[17] = Float8GetDatum(percentile(s->wait_ms, s->nwaits, 0.99));
			values[18] = Float8GetDatum(s->wait_ms[s->nwaits - 1]);
		}
		else
			nulls[15] = nulls[16] = nulls[17] = nulls[18] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
