/*-------------------------------------------------------------------------
 *
 * query_stats.c
 *		mccdb_query_stats' counters: a custom kind of the server's
 *		cumulative statistics on PostgreSQL 18, the caller's memory before.
 *
 * The kind is variable-numbered: one entry per (queryid, plan class),
 * created at a query's first admission and dropped when the gate forgets
 * the query (its known queries are bounded, as pg_stat_statements' are),
 * so the view lists the queries the gate knows, with their counters.  An
 * entry's key is a hash of (queryid, class); the entry repeats them, so a
 * collision is seen and the entry started anew.
 *
 * The gate updates the shared entries directly (as VACUUM reports its
 * counts), not through pending counts flushed when a backend goes idle:
 * the view is up to date when a query has been admitted or has ended.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "query_stats.h"
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
	uint64		queryid;		/* 0: a new or reset entry */
	int32		cls;
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
	uint64		queryid;
	int			cls;
	bool		drop;
	MccdbQueryCounters delta;
} NotedCount;

static NotedCount noted[MAX_NOTED];
static int	nnoted = 0;
static bool drop_all_noted = false;

static uint64
entry_objid(uint64 queryid, int cls)
{
	return hash_combine64(queryid, (uint64) cls);
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
note(uint64 queryid, int cls, bool drop)
{
	NotedCount *n;

	if (nnoted > 0 && !drop)
	{
		n = &noted[nnoted - 1];
		if (n->queryid == queryid && n->cls == cls && !n->drop)
			return n;
	}
	if (nnoted == MAX_NOTED)
		return NULL;
	n = &noted[nnoted++];
	memset(n, 0, sizeof(*n));
	n->queryid = queryid;
	n->cls = cls;
	n->drop = drop;
	return n;
}

void
mccdb_query_stats_add(MccdbQueryCounters *own, uint64 queryid, int cls,
					  const MccdbQueryCounters *delta)
{
	NotedCount *n;

	if (!registered)
	{
		merge(own, delta);
		return;
	}
	if ((n = note(queryid, cls, false)) != NULL)
		merge(&n->delta, delta);
}

void
mccdb_query_stats_forget(uint64 queryid, int cls)
{
	if (registered)
		(void) note(queryid, cls, true);
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
	uint64		objid = entry_objid(n->queryid, n->cls);
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
	if (e->queryid != n->queryid || e->cls != n->cls)
	{
		/* new, reset (its time kept) or, vanishingly rarely, another key's */
		TimestampTz since = e->queryid == 0 && e->counters.since != 0 ? e->counters.since : now;

		memset(e, 0, sizeof(*e));
		e->queryid = n->queryid;
		e->cls = n->cls;
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
mccdb_query_stats_get(const MccdbQueryCounters *own, uint64 queryid, int cls,
					  MccdbQueryCounters *out)
{
	MccdbQueryStatsEntry *e;

	if (!registered)
	{
		*out = *own;
		return;
	}
	e = pgstat_fetch_entry((PgStat_Kind) stats_kind, InvalidOid, entry_objid(queryid, cls));
	memset(out, 0, sizeof(*out));
	if (e != NULL && (e->queryid == 0 || (e->queryid == queryid && e->cls == cls)))
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
mccdb_query_stats_add(MccdbQueryCounters *own, uint64 queryid, int cls,
					  const MccdbQueryCounters *delta)
{
	merge(own, delta);
}

void
mccdb_query_stats_forget(uint64 queryid, int cls)
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
mccdb_query_stats_get(const MccdbQueryCounters *own, uint64 queryid, int cls,
					  MccdbQueryCounters *out)
{
	*out = *own;
}

void
mccdb_query_stats_reset_shared(void)
{
}

#endif							/* MCCDB_HAVE_CUSTOM_PGSTAT */
