/*-------------------------------------------------------------------------
 *
 * recent.c
 *		A shared-memory ring of recently executed queries with their
 *		estimated locality and, per hash table, the estimated beside the
 *		actual peak size: the views mccdb_recent_queries and
 *		mccdb_recent_tables.
 *
 * Entries are written whole at ExecutorEnd, so an ERROR or FATAL elsewhere
 * can never leave a half-written or leaked entry.  Below
 * mccdb.track_min_cost nothing is recorded (OLTP statements get no state at
 * all); with it at 0, mccdb.track = top records every client statement, so
 * the ring must not become a point where all backends queue: a writer takes
 * the next sequence number with an atomic add and copies its entry into
 * that slot under the slot's own LWLock (one of a tranche with one per
 * slot).  Two backends meet only when more statements end at once than the
 * ring has slots; readers take the slots one at a time, shared.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "commands/extension.h"
#include "funcapi.h"
#include "locality.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "recent.h"
#include "server_cost.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

typedef enum TrackLevel
{
	MCCDB_TRACK_NONE,
	MCCDB_TRACK_TOP,
	MCCDB_TRACK_ALL
} TrackLevel;

static const struct config_enum_entry track_options[] = {
	{"none", MCCDB_TRACK_NONE, false},
	{"top", MCCDB_TRACK_TOP, false},
	{"all", MCCDB_TRACK_ALL, false},
	{NULL, 0, false}
};

/* GUCs */
static int	track = MCCDB_TRACK_TOP;
static double track_min_cost = 1000.0;
static int	recent_max = 256;

#define RECENT_QUERY_TEXT_LEN 1024
#define RECENT_MAX_TABLES 16

typedef struct RecentTable
{
	int32		kind;
	int32		plan_node_id;
	char		relation[NAMEDATALEN];
	bool		counted;
	double		rows;
	double		bytes;
	double		actual_rows;
	double		actual_bytes;
} RecentTable;

typedef struct RecentQuery
{
	int64		seq;			/* 0 = empty slot */
	int32		pid;
	TimestampTz finished;
	uint64		queryid;
	int32		cls;
	double		bytes;
	int64		llc_bytes;
	char		basis[48];
	int64		admit_seq;		/* 0: not gated by the scheduler */
	TimestampTz admitted;
	TimestampTz released;
	double		waited_ms;
	bool		have_counters;
	int64		counters[MCCDB_NCOUNTERS];	/* LLC misses, instructions, cycles */
	char		query[RECENT_QUERY_TEXT_LEN];
	int32		ntables;		/* may exceed RECENT_MAX_TABLES */
	RecentTable tables[RECENT_MAX_TABLES];
} RecentQuery;

typedef struct RecentShared
{
	pg_atomic_uint64 next_seq;	/* seq of the next entry, from 1 */
	int			size;			/* slots */
	RecentQuery entries[FLEXIBLE_ARRAY_MEMBER];
} RecentShared;

static RecentShared *recent = NULL;
static LWLockPadded *slot_locks = NULL;	/* slot i's: slot_locks[i].lock */
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
recent_shmem_size(void)
{
	return add_size(offsetof(RecentShared, entries),
					mul_size(Max(recent_max, 1), sizeof(RecentQuery)));
}

static void
recent_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(recent_shmem_size());
	RequestNamedLWLockTranche("mccdb_recent", Max(recent_max, 1));
}

static void
recent_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	recent = ShmemInitStruct("mccdb recent queries", recent_shmem_size(), &found);
	if (!found)
	{
		memset(recent, 0, recent_shmem_size());
		pg_atomic_init_u64(&recent->next_seq, 1);
		recent->size = Max(recent_max, 1);
	}
	slot_locks = GetNamedLWLockTranche("mccdb_recent");
	LWLockRelease(AddinShmemInitLock);
}

void
mccdb_recent_init(void)
{
	DefineCustomEnumVariable("mccdb.track",
							 "Which statements are recorded in mccdb_recent_queries.",
							 "top: statements issued by clients; all: also those run inside functions; none: nothing.",
							 &track,
							 MCCDB_TRACK_TOP, track_options,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.track_min_cost",
							 "Statements with a lower estimated cost are not recorded in mccdb_recent_queries.",
							 "The cost is the plan's total cost under the server's cost settings, as for mccdb.schedule_min_cost. 0 records every statement mccdb.track names.",
							 &track_min_cost,
							 1000.0, 0.0, 1e100,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.recent_queries",
							"Number of queries kept in mccdb_recent_queries.",
							NULL,
							&recent_max,
							256, 0, 100000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = recent_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = recent_shmem_startup;
}

/*
 * Should the ExecutorEnd of this statement be recorded?  mccdb.track names
 * the levels; a statement cheaper than mccdb.track_min_cost is not
 * recorded (a point lookup has no locality to show, and a server's OLTP
 * would overwrite the ring's analytics many times a second), unless the
 * gate held it: its wait is what a DBA looks for here.  The plan's cost is
 * the server's, as the gate prices it; one not known is recorded.
 */
static bool
recent_tracks(bool top, int eflags)
{
	if (recent == NULL || recent_max == 0 || creating_extension ||
		IsParallelWorker() || (eflags & EXEC_FLAG_EXPLAIN_ONLY))
		return false;
	return track == MCCDB_TRACK_ALL || (track == MCCDB_TRACK_TOP && top);
}

bool
mccdb_recent_wants(const MccdbStatement *st)
{
	return recent_tracks(st->top, st->queryDesc->estate->es_top_eflags) &&
		(st->admission.gated ||
		 mccdb_server_cost_reaches(st->cost_known, st->real_cost, track_min_cost));
}

bool
mccdb_recent_records_every_cost(void)
{
	return track != MCCDB_TRACK_NONE && recent_max > 0 && track_min_cost <= 0;
}

bool
mccdb_recent_wants_statement(PlannedStmt *plan, bool top, int eflags)
{
	Cost		cost;
	bool		cost_known;

	if (!recent_tracks(top, eflags))
		return false;
	if (track_min_cost <= 0)
		return true;
	cost_known = mccdb_server_cost(plan, &cost);
	return mccdb_server_cost_reaches(cost_known, cost, track_min_cost);
}

/*
 * Record a finished statement: its estimated locality with the actual
 * sizes measured, its admission and its counters.  The entry is filled in
 * first and only copied into the ring under the lock.
 */
void
mccdb_recent_record(const MccdbStatement *st)
{
	QueryDesc  *queryDesc = st->queryDesc;
	const MccdbLocality *loc = &st->locality;
	RecentQuery *e = palloc0(sizeof(RecentQuery));
	ListCell   *lc;
	int			i = 0,
				slot;

	e->pid = MyProcPid;
	e->finished = GetCurrentTimestamp();
	e->queryid = queryDesc->plannedstmt->queryId;
	e->cls = loc->cls;
	e->bytes = loc->bytes;
	e->llc_bytes = mccdb_double_to_int64(loc->llc_bytes);
	strlcpy(e->basis, loc->basis, sizeof(e->basis));
	if (st->admission.gated)
	{
		e->admit_seq = st->admission.admit_seq;
		e->admitted = st->admission.admitted;
		e->released = st->admission.released;
		e->waited_ms = st->admission.waited_ms;
	}
	if (queryDesc->sourceText)
	{
		/* this statement only, when the string holds several */
		const char *text = queryDesc->sourceText;
		int			location = queryDesc->plannedstmt->stmt_location;
		int			len = strlen(text);

		if (location >= 0 && location < len)
		{
			text += location;
			len -= location;
			if (queryDesc->plannedstmt->stmt_len > 0)
				len = Min(len, queryDesc->plannedstmt->stmt_len);
		}
		len = pg_mbcliplen(text, len, RECENT_QUERY_TEXT_LEN - 1);
		memcpy(e->query, text, len);
		e->query[len] = '\0';
	}
	e->have_counters = st->have_counters;
	memcpy(e->counters, st->counters, sizeof(e->counters));
	e->ntables = list_length(loc->tables);
	foreach(lc, loc->tables)
	{
		MccdbTable *t = lfirst(lc);
		RecentTable *r;

		if (i >= RECENT_MAX_TABLES)
			break;
		r = &e->tables[i++];
		r->kind = t->kind;
		r->plan_node_id = t->plan_node_id;
		if (t->relation)
			strlcpy(r->relation, t->relation, sizeof(r->relation));
		r->counted = t->counted;
		r->rows = t->rows;
		r->bytes = t->bytes;
		r->actual_rows = t->actual_rows;
		r->actual_bytes = t->actual_bytes;
	}

	e->seq = (int64) pg_atomic_fetch_add_u64(&recent->next_seq, 1);
	slot = (int) ((e->seq - 1) % recent->size);
	LWLockAcquire(&slot_locks[slot].lock, LW_EXCLUSIVE);
	/* a writer that took a later seq for this slot (ring lapped) went first */
	if (recent->entries[slot].seq < e->seq)
		recent->entries[slot] = *e;
	LWLockRelease(&slot_locks[slot].lock);
	pfree(e);
}

/* Copy the ring out under a shared lock, oldest first. */
static RecentQuery *
recent_snapshot(int *n)
{
	RecentQuery *copy;
	int64		next,
				first,
				seq;
	int			k = 0;

	mccdb_require_preload();
	if (recent == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mccdb shared memory is not initialized")));

	copy = palloc(sizeof(RecentQuery) * recent->size);
	next = (int64) pg_atomic_read_u64(&recent->next_seq);
	first = Max(1, next - recent->size);
	for (seq = first; seq < next; seq++)
	{
		int			slot = (int) ((seq - 1) % recent->size);

		/* an entry written since next was read has moved on: skipped */
		LWLockAcquire(&slot_locks[slot].lock, LW_SHARED);
		if (recent->entries[slot].seq == seq)
			copy[k++] = recent->entries[slot];
		LWLockRelease(&slot_locks[slot].lock);
	}
	*n = k;
	return copy;
}

PG_FUNCTION_INFO_V1(mccdb_recent_queries);
PG_FUNCTION_INFO_V1(mccdb_recent_tables);
PG_FUNCTION_INFO_V1(mccdb_recent_reset);

Datum
mccdb_recent_queries(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RecentQuery *rows;
	int			n,
				i;

	InitMaterializedSRF(fcinfo, 0);
	rows = recent_snapshot(&n);
	for (i = 0; i < n; i++)
	{
		RecentQuery *e = &rows[i];
		Datum		values[18];
		bool		nulls[18] = {0};
		double		actual = 0;
		bool		have_actual = false;
		int			j;

		for (j = 0; j < Min(e->ntables, RECENT_MAX_TABLES); j++)
			if (e->tables[j].counted && e->tables[j].actual_bytes >= 0)
			{
				actual += e->tables[j].actual_bytes;
				have_actual = true;
			}

		values[0] = Int64GetDatum(e->seq);
		values[1] = Int32GetDatum(e->pid);
		values[2] = TimestampTzGetDatum(e->finished);
		values[3] = Int64GetDatum((int64) e->queryid);
		nulls[3] = (e->queryid == 0);
		values[4] = CStringGetTextDatum(mccdb_locality_class_name(e->cls));
		values[5] = CStringGetTextDatum(e->basis);
		values[6] = Int64GetDatum(mccdb_double_to_int64(e->bytes));
		values[7] = Int64GetDatum(mccdb_double_to_int64(actual));
		nulls[7] = !have_actual;
		values[8] = Int64GetDatum(e->llc_bytes);
		values[9] = Int32GetDatum(e->ntables);
		values[10] = Int64GetDatum(e->admit_seq);
		nulls[10] = (e->admit_seq == 0);
		values[11] = TimestampTzGetDatum(e->admitted);
		nulls[11] = (e->admit_seq == 0);
		values[12] = TimestampTzGetDatum(e->released);
		nulls[12] = (e->admit_seq == 0);
		values[13] = Float8GetDatum(e->waited_ms);
		nulls[13] = (e->admit_seq == 0);
		for (j = 0; j < MCCDB_NCOUNTERS; j++)
		{
			values[14 + j] = Int64GetDatum(e->counters[j]);
			nulls[14 + j] = !e->have_counters;
		}
		values[17] = CStringGetTextDatum(e->query);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
mccdb_recent_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	RecentQuery *rows;
	int			n,
				i,
				j;

	InitMaterializedSRF(fcinfo, 0);
	rows = recent_snapshot(&n);
	for (i = 0; i < n; i++)
	{
		RecentQuery *e = &rows[i];

		for (j = 0; j < Min(e->ntables, RECENT_MAX_TABLES); j++)
		{
			RecentTable *t = &e->tables[j];
			Datum		values[9];
			bool		nulls[9] = {0};

			values[0] = Int64GetDatum(e->seq);
			values[1] = Int32GetDatum(t->plan_node_id);
			values[2] = CStringGetTextDatum(mccdb_table_kind_name(t->kind, false));
			values[3] = CStringGetTextDatum(t->relation);
			nulls[3] = (t->relation[0] == '\0');
			values[4] = BoolGetDatum(t->counted);
			values[5] = Float8GetDatum(t->rows);
			values[6] = Int64GetDatum(mccdb_double_to_int64(t->bytes));
			values[7] = Float8GetDatum(t->actual_rows);
			nulls[7] = (t->actual_rows < 0);
			values[8] = Int64GetDatum(mccdb_double_to_int64(t->actual_bytes));
			nulls[8] = (t->actual_bytes < 0);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

Datum
mccdb_recent_reset(PG_FUNCTION_ARGS)
{
	int			i;

	mccdb_require_preload();
	if (recent == NULL)
		PG_RETURN_VOID();
	for (i = 0; i < recent->size; i++)
	{
		LWLockAcquire(&slot_locks[i].lock, LW_EXCLUSIVE);
		recent->entries[i].seq = 0;
		LWLockRelease(&slot_locks[i].lock);
	}
	PG_RETURN_VOID();
}
