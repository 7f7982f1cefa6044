/*-------------------------------------------------------------------------
 *
 * query_stats.h
 *		The cumulative statistics of mccdb_query_stats: per query (queryid)
 *		and plan class, what the admission gate did with it.
 *
 * On PostgreSQL 18 they are a custom kind of the server's cumulative
 * statistics (pgstat_register_kind): kept in its shared hash, written to
 * pg_stat/pgstat.stat at a clean shutdown like every pg_stat view, dropped
 * after a crash, when mccdb.stats_kind names an ID.  Before 18, or with
 * mccdb.stats_kind = 0 (the default), they stay in the caller's own memory (learned.c's known queries, saved with what it
 * learned).
 *
 * The gate counts while it holds its lock, where nothing may throw: there
 * mccdb_query_stats_add() only notes the counts in backend-local memory,
 * and mccdb_query_stats_report() hands them to the server's statistics
 * afterwards, where an ERROR is harmless.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_QUERY_STATS_H
#define MCCDB_QUERY_STATS_H

#include "datatype/timestamp.h"

/* What the statistics and the run times are kept by, as pg_stat_statements does. */
typedef struct MccdbQueryKey
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	int			cls;			/* the plan's locality class */
} MccdbQueryKey;

static inline bool
mccdb_query_key_equal(const MccdbQueryKey *a, const MccdbQueryKey *b)
{
	return a->queryid == b->queryid && a->dbid == b->dbid &&
		a->userid == b->userid && a->cls == b->cls;
}

typedef struct MccdbQueryCounters
{
	int64		admissions;
	int64		bypasses;		/* top-level SELECTs of it the gate let pass */
	int64		starved;		/* admitted because of mccdb.max_wait */
	int64		lock_admitted;	/* admitted because others waited for its locks */
	double		total_wait_ms;
	double		max_wait_ms;
	int64		coruns;			/* runs with company, measured against its history */
	double		slowdown_sum;	/* of those runs: run time / alone time */
	TimestampTz since;			/* when these counters started */
} MccdbQueryCounters;

/* _PG_init: mccdb.stats_kind and, on 18 while preloading, the kind. */
extern void mccdb_query_stats_init(void);

/*
 * Where the counters of a key are added: the server's statistics,
 * or *own (caller's lock held for both).  add() merges delta, max_wait_ms
 * as a maximum; forget() drops the entry of a query no longer known.
 */
extern void mccdb_query_stats_add(MccdbQueryCounters *own, const MccdbQueryKey *key,
								  const MccdbQueryCounters *delta);
extern void mccdb_query_stats_forget(const MccdbQueryKey *key);
extern void mccdb_query_stats_forget_all(void);

/* No lock held: hand what add() and forget() noted to the server. */
extern void mccdb_query_stats_report(void);

/* The counters of a key now: the server's, or a copy of *own. */
extern void mccdb_query_stats_get(const MccdbQueryCounters *own, const MccdbQueryKey *key,
								  MccdbQueryCounters *out);

/* Reset the server's statistics, where it keeps them (no lock held). */
extern void mccdb_query_stats_reset_shared(void);

#endif							/* MCCDB_QUERY_STATS_H */
