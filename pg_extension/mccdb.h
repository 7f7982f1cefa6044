/*-------------------------------------------------------------------------
 *
 * mccdb.h
 *		Declarations shared by the files of the mccdb extension.
 *
 * mccdb rebuilds MCC-DB (Lee et al., VLDB 2009): it estimates the cache
 * locality strength of each query plan from its hash table sizes, and (in
 * later parts) picks plans, co-schedules queries and partitions the LLC.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_H
#define MCCDB_H

#include "executor/execdesc.h"

struct MccdbLocality;

/* GUC variables (mccdb.c) */
extern int	mccdb_llc_size_kb;
extern double mccdb_strong_limit;
extern double mccdb_weak_limit;
extern bool mccdb_explain;
extern int	mccdb_track;
extern int	mccdb_recent_max;
extern int	mccdb_plan_policy;
extern double mccdb_cost_slack;
extern int	mccdb_schedule;
extern int	mccdb_corun_slots;
extern int	mccdb_max_wait;
extern double mccdb_min_cost;
extern bool mccdb_counters;
extern int	mccdb_partition_mode;
extern char *mccdb_buffer_pool_colors;
extern char *mccdb_resctrl_path;
extern int	mccdb_weak_cache_ways;

typedef enum
{
	MCCDB_TRACK_NONE,
	MCCDB_TRACK_TOP,
	MCCDB_TRACK_ALL
}			MccdbTrackLevel;

/* mccdb.c */
extern bool mccdb_preloaded;
extern void mccdb_require_preload(void);
extern int	mccdb_exec_nested_level;

/* explain.c */
extern void mccdb_explain_install(void);
extern bool mccdb_explain_wants(QueryDesc *queryDesc);
extern bool mccdb_planning_for_explain(void);
extern void mccdb_explain_executor_end(QueryDesc *queryDesc,
									   struct MccdbLocality *loc);

/* recent.c */
extern void mccdb_recent_install(void);
extern void mccdb_recent_record(QueryDesc *queryDesc,
								struct MccdbLocality *loc);

#endif							/* MCCDB_H */
