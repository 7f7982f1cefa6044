/*-------------------------------------------------------------------------
 *
 * query_stats.c
 *		mccdb_query_stats' counters: a custom kind of the server's
 *		cumulative statistics on PostgreSQL 18, the caller's memory before.
 *
 * The kind is variable-numbered: one entry per (user, database, queryid,
 * plan class),
 * created at a query's first admission and dropped when the gate forgets
 * the query (its known queries are bounded, as pg_stat_statements' are),
 * so the view lists the queries the gate knows, with their counters.  An
 * entry's key is a hash of them; the entry repeats them, so a
 * collision is seen and the entry started anew.
 *
 * The gate updates the shared entries directly (as VACUUM reports its
 * counts), not through pending counts flushed when a backend goes idle:
 * the view is up to date when a query has been admitted or has ended.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "gate_state.h"
#include "catalog/pg_authid.h"
#include "compat.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "query_stats.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"

static void
merge(MccdbQueryCounters *into, const MccdbQueryCounters *delta)
{
	into->admissions += delta->admissions;
	into->bypasses += delta->bypasses;
	into->starved += delta->starved;
	into->lock_admitted += delta->lock_admitted;
	into->total_wait_ms += delta->total_wait_ms;
	into->max_wait_ms = Max(into->max_wait_ms, delta->max_wait_ms);
	into->coruns += delta->coruns;
	into->slowdown_sum += delta->slowdown_sum;
}

#if MCCDB_HAVE_CUSTOM_PGSTAT

#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/pgstat_internal.h"
#include "utils/timestamp.h"

/*
 * Off by default: no ID is reserved for mccdb on the PostgreSQL wiki's list
 * of custom statistics, and a kind the server has written to
 * pg_stat/pgstat.stat makes it discard that whole file at a start without
 * the kind (mccdb removed from shared_preload_libraries, another ID): the
 * statistics of every view, not only mccdb's.  A DBA who wants the counters
 * among the server's picks an ID, e.g. PGSTAT_KIND_EXPERIMENTAL (24).
 */
#define DEFAULT_STATS_KIND 0

typedef struct MccdbQueryStatsEntry
{
	MccdbQueryKey key;			/* queryid 0: a new or reset entry */
	MccdbQueryCounters counters;
} MccdbQueryStatsEntry;

typedef struct PgStatShared_MccdbQuery
{
	PgStatShared_Common header;
	MccdbQueryStatsEntry stats;
} PgStatShared_MccdbQuery;

static void query_stats_reset_timestamp(PgStatShared_Common *header, TimestampTz ts);

static const PgStat_KindInfo query_stats_kind = {
	.name = "mccdb_query",
	.fixed_amount = false,
	/* the gate serves every database; its known queries are global */
	.accessed_across_databases = true,
	.write_to_file = true,
	.shared_size = sizeof(PgStatShared_MccdbQuery),
	.shared_data_off = offsetof(PgStatShared_MccdbQuery, stats),
	.shared_data_len = sizeof(MccdbQueryStatsEntry),
	.pending_size = 0,			/* updated in place, see above */
	.reset_timestamp_cb = query_stats_reset_timestamp,
};

static int	stats_kind = DEFAULT_STATS_KIND;
static bool registered = false;

/*
 * What add() and forget() noted under the gate's lock, in order.  Between
 * two reports a backend notes at most a few (an admission, the end of a
 * statement that failed); more are dropped rather than grown under a lock.
 */
#define MAX_NOTED 16

typedef struct NotedCount
{
	MccdbQueryKey key;
	bool		drop;
	MccdbQueryCounters delta;
} NotedCount;

static NotedCount noted[MAX_NOTED];
static int	nnoted = 0;
static bool drop_all_noted = false;

static uint64
entry_objid(const MccdbQueryKey *key)
{
	uint64		who = ((uint64) key->userid << 32) | key->dbid;

	return hash_combine64(hash_combine64(key->queryid, who), (uint64) key->cls);
}

static void
query_stats_reset_timestamp(PgStatShared_Common *header, TimestampTz ts)
{
	((PgStatShared_MccdbQuery *) header)->stats.counters.since = ts;
}

static bool
check_stats_kind(int *newval, void **extra, GucSource source)
{
	if (*newval == 0 || pgstat_is_kind_custom(*newval))
		return true;
	GUC_check_errdetail("Custom statistics kinds are %d to %d; 0 keeps the statistics in mccdb's own memory.",
						PGSTAT_KIND_CUSTOM_MIN, PGSTAT_KIND_CUSTOM_MAX);
	return false;
}

void
mccdb_query_stats_init(void)
{
	DefineCustomIntVariable("mccdb.stats_kind",
							"ID of mccdb's kind of cumulative statistics (mccdb_query_stats).",
							"0 (the default) keeps them in mccdb's own memory. With an ID, any later change of it, "
							"or a start without mccdb preloaded, makes the server discard its statistics file.",
							&stats_kind,
							DEFAULT_STATS_KIND, 0, PGSTAT_KIND_CUSTOM_MAX,
							PGC_POSTMASTER, 0,
							check_stats_kind, NULL, NULL);
	if (process_shared_preload_libraries_in_progress && stats_kind != 0)
	{
		pgstat_register_kind((PgStat_Kind) stats_kind, &query_stats_kind);
		registered = true;
	}
}

static NotedCount *
note(const MccdbQueryKey *key, bool drop)
{
	NotedCount *n;

	if (nnoted > 0 && !drop)
	{
		n = &noted[nnoted - 1];
		if (mccdb_query_key_equal(&n->key, key) && !n->drop)
			return n;
	}
	if (nnoted == MAX_NOTED)
		return NULL;
	n = &noted[nnoted++];
	memset(n, 0, sizeof(*n));
	n->key = *key;
	n->drop = drop;
	return n;
}

void
mccdb_query_stats_add(MccdbQueryCounters *own, const MccdbQueryKey *key,
					  const MccdbQueryCounters *delta)
{
	NotedCount *n;

	if (!registered)
	{
		merge(own, delta);
		return;
	}
	if ((n = note(key, false)) != NULL)
		merge(&n->delta, delta);
}

void
mccdb_query_stats_forget(const MccdbQueryKey *key)
{
	if (registered)
		(void) note(key, true);
}

void
mccdb_query_stats_forget_all(void)
{
	if (registered)
	{
		nnoted = 0;
		drop_all_noted = true;
	}
}

static bool
is_query_stats_entry(PgStatShared_HashEntry *entry, Datum match_data)
{
	return entry->key.kind == (PgStat_Kind) stats_kind;
}

static void
report_one(const NotedCount *n, TimestampTz now)
{
	PgStat_Kind kind = (PgStat_Kind) stats_kind;
	uint64		objid = entry_objid(&n->key);
	PgStat_EntryRef *ref;
	MccdbQueryStatsEntry *e;

	if (n->drop)
	{
		/* others may still hold a reference: ask them to let go */
		if (!pgstat_drop_entry(kind, InvalidOid, objid))
			pgstat_request_entry_refs_gc();
		return;
	}
	ref = pgstat_get_entry_ref_locked(kind, InvalidOid, objid, false);
	e = &((PgStatShared_MccdbQuery *) ref->shared_stats)->stats;
	if (!mccdb_query_key_equal(&e->key, &n->key))
	{
		/* new, reset (its time kept) or, vanishingly rarely, another key's */
		TimestampTz since = e->key.queryid == 0 && e->counters.since != 0 ? e->counters.since : now;

		memset(e, 0, sizeof(*e));
		e->key = n->key;
		e->counters.since = since;
	}
	merge(&e->counters, &n->delta);
	pgstat_unlock_entry(ref);
}

void
mccdb_query_stats_report(void)
{
	NotedCount	copy[MAX_NOTED];
	int			n = nnoted,
				i;
	bool		drop_all = drop_all_noted;
	TimestampTz now;

	if (!registered || (n == 0 && !drop_all))
		return;
	/* taken first: what an ERROR below interrupts is lost, never counted twice */
	memcpy(copy, noted, sizeof(NotedCount) * n);
	nnoted = 0;
	drop_all_noted = false;
	if (drop_all)
		pgstat_drop_matching_entries(is_query_stats_entry, (Datum) 0);
	now = GetCurrentTimestamp();
	for (i = 0; i < n; i++)
		report_one(&copy[i], now);
}

void
mccdb_query_stats_get(const MccdbQueryCounters *own, const MccdbQueryKey *key,
					  MccdbQueryCounters *out)
{
	MccdbQueryStatsEntry *e;

	if (!registered)
	{
		*out = *own;
		return;
	}
	e = pgstat_fetch_entry((PgStat_Kind) stats_kind, InvalidOid, entry_objid(key));
	memset(out, 0, sizeof(*out));
	if (e != NULL && (e->key.queryid == 0 || mccdb_query_key_equal(&e->key, key)))
		*out = e->counters;
	if (out->since == 0)
		out->since = own->since;	/* not admitted since it became known */
}

void
mccdb_query_stats_reset_shared(void)
{
	if (registered)
		pgstat_reset_of_kind((PgStat_Kind) stats_kind);
}

#else							/* !MCCDB_HAVE_CUSTOM_PGSTAT */

/* Before PostgreSQL 18: the counters live in the caller's memory. */

void
mccdb_query_stats_init(void)
{
}

void
mccdb_query_stats_add(MccdbQueryCounters *own, const MccdbQueryKey *key,
					  const MccdbQueryCounters *delta)
{
	merge(own, delta);
}

void
mccdb_query_stats_forget(const MccdbQueryKey *key)
{
}

void
mccdb_query_stats_forget_all(void)
{
}

void
mccdb_query_stats_report(void)
{
}

void
mccdb_query_stats_get(const MccdbQueryCounters *own, const MccdbQueryKey *key,
					  MccdbQueryCounters *out)
{
	*out = *own;
}

void
mccdb_query_stats_reset_shared(void)
{
}

#endif							/* MCCDB_HAVE_CUSTOM_PGSTAT */

PG_FUNCTION_INFO_V1(mccdb_query_stats);
PG_FUNCTION_INFO_V1(mccdb_query_stats_reset);

/*
 * Per query and plan class: what the gate did with it, and what it
 * measured.  As pg_stat_statements: every role sees every row, and another
 * role's queryid only with pg_read_all_stats.
 */
Datum
mccdb_query_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		all_visible = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	KnownQuery *copy;
	int			n = 0,
				i;

	mccdb_admission_require_shmem();
	mccdb_query_stats_report();		/* this session's own counts too */
	InitMaterializedSRF(fcinfo, 0);
	/* 1.2 had the first 13 columns */
	mccdb_require_columns(rsinfo->setDesc, 13, 15);
	copy = palloc(sizeof(KnownQuery) * KNOWN_QUERIES);
	LWLockAcquire(mccdb_adm->lock, LW_SHARED);
	for (i = 0; i < KNOWN_QUERIES; i++)
		if (mccdb_adm->known[i].key.queryid != 0)
			copy[n++] = mccdb_adm->known[i];
	LWLockRelease(mccdb_adm->lock);
	for (i = 0; i < n; i++)
	{
		KnownQuery *k = &copy[i];
		MccdbQueryCounters c;
		Datum		values[15];
		bool		nulls[15] = {0};

		mccdb_query_stats_get(&k->stats, &k->key, &c);
		values[0] = Int64GetDatum((int64) k->key.queryid);
		nulls[0] = !all_visible && !has_privs_of_role(GetUserId(), k->key.userid);
		values[1] = CStringGetTextDatum(mccdb_locality_class_name(k->key.cls));
		values[2] = Int64GetDatum(c.admissions);
		values[3] = Int64GetDatum(c.bypasses);
		values[4] = Float8GetDatum(c.total_wait_ms);
		values[5] = Float8GetDatum(c.max_wait_ms);
		values[6] = Float8GetDatum(c.admissions ? c.total_wait_ms / c.admissions : 0);
		values[7] = Int64GetDatum(c.starved);
		values[8] = Int64GetDatum(c.lock_admitted);
		values[9] = Int64GetDatum(c.coruns);
		values[10] = Float8GetDatum(c.coruns ? c.slowdown_sum / c.coruns : 0);
		nulls[10] = c.coruns == 0;
		values[11] = Float8GetDatum(model_cell_value(&k->seconds, 0));
		nulls[11] = k->seconds.weight == 0;
		values[12] = TimestampTzGetDatum(c.since);
		values[13] = ObjectIdGetDatum(k->key.userid);
		values[14] = ObjectIdGetDatum(k->key.dbid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Reset the statistics, keeping what was learned of run times. */
Datum
mccdb_query_stats_reset(PG_FUNCTION_ARGS)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	mccdb_admission_require_shmem();
	/* this session's counts first, so that none lands after the reset */
	mccdb_query_stats_report();
	mccdb_query_stats_reset_shared();
	LWLockAcquire(mccdb_adm->lock, LW_EXCLUSIVE);
	for (i = 0; i < KNOWN_QUERIES; i++)
	{
		KnownQuery *k = &mccdb_adm->known[i];

		memset(&k->stats, 0, sizeof(k->stats));
		k->stats.since = now;
	}
	LWLockRelease(mccdb_adm->lock);
	PG_RETURN_VOID();
}
