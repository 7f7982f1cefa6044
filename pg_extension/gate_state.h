/*-------------------------------------------------------------------------
 *
 * gate_state.h
 *		The admission gate's shared state, shared by the files that make up
 *		the gate and nothing else.  The files are layers, each calling only
 *		those below it (pg_extension/test/check_layers.py keeps it so):
 *
 *	gate_sql.c		the SQL functions: mccdb_queue, mccdb_scheduler,
 *					mccdb_hold_admission, mccdb_llc_domains
 *	gate.c			enqueue, wait, admit, lend, release (the hot path)
 *	policy.c		which waiter goes next, and in which LLC domain
 *	learned.c		what is learned and kept: run times, rates, the
 *					interference matrix, their files and functions
 *	gate_state.c	settings, shared memory, the lock
 *
 * Every field of AdmissionShared is read and written under its lock.
 * Times that are compared between backends are monotonic microseconds
 * (mccdb_monotonic_us()), so a step of the wall clock (NTP, a restored VM)
 * neither stalls nor rushes the gate; wall-clock timestamps are kept only
 * where a view shows them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_GATE_STATE_H
#define MCCDB_GATE_STATE_H

#include "admission.h"
#include "nodes/execnodes.h"
#include "model.h"
#include "query_stats.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "topology.h"
#include "utils/timestamp.h"

/* Queries whose run times are remembered, as pgss keeps entries. */
#define KNOWN_QUERIES 512

typedef enum EntryState
{
	ENTRY_FREE,
	ENTRY_WAITING,
	ENTRY_RUNNING,				/* admitted, its slots counted */
	ENTRY_LENT					/* admitted, its slots lent to waiters */
} EntryState;

/*
 * What an admitted entry's slots count against (SlotCounts): the slots
 * (used_slots, never more than mccdb_total_slots()), the short queries that
 * shortest runs beside them (short_used, never more than
 * mccdb_total_slots()), or the queries admitted because a running query
 * waits for their locks (lock_used: they must run, or the two would wait
 * for each other).
 */
typedef enum EntryLane
{
	LANE_SLOTS,
	LANE_SHORT,
	LANE_LOCKS
} EntryLane;

/* One backend's statement in the gate, at the backend's own slot. */
typedef struct AdmissionEntry
{
	int			pid;
	int			procno;			/* its PGPROC, to read its wait event */
	Oid			userid;			/* who runs it: what others may see of it */
	Oid			dbid;
	EntryState	state;
	int			slots;			/* what it holds now: 1 + workers running or to come */
	int			workers_planned;	/* its plan's parallel workers, reserved at admission */
	int			workers_started;	/* of them (and relaunches, at a rescan), started */
	int			workers_ended;	/* and ended: their slots given back */
	EntryLane	lane;			/* what its slots count against, once admitted */
	int			cls;			/* MccdbLocalityClass */
	int			wclass;			/* its workload class: mccdb_adm->classes[wclass] */
	int			queue_timeout_ms;	/* its class's, or its session's, when enqueued */
	int			queue_timeout_action;	/* MccdbQueueTimeoutAction, the same */
	double		bytes;
	int64		memory_kb;		/* working memory estimate (work_memory.h), kB */
	int64		seq;			/* arrival order */
	int64		admit_seq;
	int64		since_us;		/* enqueued, then admitted (monotonic) */
	TimestampTz since;			/* the same, as mccdb_queue shows it */
	int64		stalled_since_us;	/* first seen blocked writing to its client */
	uint64		queryid;
	double		cost;			/* the plan's cost, without disable_cost */
	double		predicted;		/* seconds alone, predicted at arrival */
	int			domain;			/* the LLC domain it runs in, once admitted */
	double		run_ms;			/* time spent running (not lent) */
	double		overlap_ms[MODEL_CLASSES];	/* time a query of each class ran beside it */
} AdmissionEntry;

/*
 * What was learned of one query: its run time alone.  Keyed as
 * pg_stat_statements keys its entries (user, database, queryid), and by the
 * plan's locality class, since plans of one query text (a hash join, an
 * index join) can run for very different times.
 */
typedef struct KnownQuery
{
	MccdbQueryKey key;			/* queryid 0 = free */
	ModelCell	seconds;		/* log of its alone run time */
	int64		last_used_us;
	/* mccdb_query_stats' counters, where the server keeps none (query_stats.h) */
	MccdbQueryCounters stats;
} KnownQuery;

/*
 * What a role's runs taught, used for that role's statements only: its
 * seconds per unit of the server's cost (from its alone runs) and its
 * interference matrix (from its co-runs).  One role's queries (a
 * pg_sleep() that costs nothing, co-runs it arranges) never move another
 * role's predictions, admissions or placement.
 */
#define ROLE_MODELS 64

typedef struct RoleModel
{
	Oid			userid;			/* InvalidOid = free */
	ModelCell	rate;			/* log of seconds per cost unit */
	ModelCell	learned[MODEL_CLASSES][MODEL_CLASSES];	/* [target][co-runner] */
	int64		last_used_us;
} RoleModel;

/*
 * A workload class (mccdb_class, workload_class.c): a queue of its own in
 * the gate.  Class 0 is "default", the class of a session whose
 * mccdb.class is empty or names no class.  A field left NULL in the table
 * takes the server's setting (0 or -1 here).
 */
#define MCCDB_MAX_CLASSES 32
#define MCCDB_DEFAULT_CLASS 0
#define CLASS_WAIT_RING 1024

typedef struct WorkloadClass
{
	char		name[NAMEDATALEN];
	int			slots;			/* 0: the gate's */
	int			priority;		/* higher first */
	double		memory_share;	/* percent of mccdb.memory_budget; 0: all of it */
	int			queue_timeout_ms;	/* -1: the session's mccdb.queue_timeout */
	int			queue_timeout_action;	/* -1: the session's; MccdbQueueTimeoutAction */
	int			short_query_ms; /* -1: mccdb.short_query */
} WorkloadClass;

/* What a class's statements met, since the server started. */
typedef struct WorkloadClassStats
{
	int64		admitted;
	int64		starved;		/* admitted after mccdb.max_wait */
	int64		timed_out;		/* failed at the queue timeout */
	int64		timed_out_run;	/* run without the gate at it */
	int			nwaits;			/* in wait_ms, at most CLASS_WAIT_RING */
	int			next_wait;
	float4		wait_ms[CLASS_WAIT_RING];	/* the last admissions' waits */
} WorkloadClassStats;

/* The slots the running entries take, by lane (EntryLane). */
typedef struct SlotCounts
{
	int			used_slots;		/* of LANE_SLOTS entries */
	int			domain_used[MCCDB_MAX_LLC_DOMAINS];	/* of used_slots, per domain */
	int			short_used;		/* of LANE_SHORT entries */
	int			lock_used;		/* of LANE_LOCKS entries */
} SlotCounts;

typedef struct AdmissionShared
{
	LWLock	   *lock;
	ConditionVariable cv;
	int			held_by;		/* pid of mccdb_hold_admission(true), 0 = not held */
	Oid			held_by_role;	/* the role that took it */
	SlotCounts	counts;			/* of the running entries */
	int64		repaired_total; /* slot counts found wrong and recounted */
	int64		timed_out_total;	/* statements failed by mccdb.queue_timeout */
	int64		timed_out_run_total;	/* run without the gate after it */
	int64		alone_total;	/* admitted alone: their memory over mccdb.memory_budget */
	int64		next_seq;
	int64		next_admit_seq;
	int64		admitted_total;
	int64		starved_total;	/* admitted because of mccdb.max_wait */
	int64		lock_admitted_total;	/* admitted because others wait for its locks */
	int64		lent_total;		/* slots lent by stalled clients */
	bool		have_matrix;
	/* [target class][co-runner class] slowdown */
	double		interference[MODEL_CLASSES][MODEL_CLASSES];
	int64		last_change_us; /* of the running set, for overlap accounting */
	/* where each role's learned matrix starts: a loaded matrix's warm start */
	ModelCell	learned[MODEL_CLASSES][MODEL_CLASSES];
	/* learned online from every gated query that finishes (model.c) */
	RoleModel	roles[ROLE_MODELS];
	KnownQuery	known[KNOWN_QUERIES];
	/* bumped whenever a known query comes or goes: read without the lock */
	pg_atomic_uint64 known_generation;
	int			nclasses;		/* at least 1: default */
	Oid			classes_dbid;	/* the database whose mccdb_class they are; 0: none */
	WorkloadClass classes[MCCDB_MAX_CLASSES];
	WorkloadClassStats class_stats[MCCDB_MAX_CLASSES];
	int			nentries;
	AdmissionEntry entries[FLEXIBLE_ARRAY_MEMBER];
} AdmissionShared;

extern AdmissionShared *mccdb_adm;

/* An entry's key in the known queries and the statistics. */
static inline MccdbQueryKey
mccdb_entry_key(const AdmissionEntry *e)
{
	MccdbQueryKey key = {e->userid, e->dbid, e->queryid, e->cls};

	return key;
}

/* Settings (gate_state.c). */
extern int	mccdb_schedule;
extern int	mccdb_corun_slots;
extern int	mccdb_max_wait_ms;
extern double mccdb_schedule_min_cost;
/* mccdb.schedule_min_cost, or the deprecated mccdb.min_cost where set */
extern double mccdb_schedule_min_cost_value(void);
extern int	mccdb_client_stall_ms;
extern int	mccdb_log_min_wait_ms;
extern bool mccdb_placement;
extern int	mccdb_short_query_ms;
extern int	mccdb_queue_timeout_ms;

/* What a statement that waited mccdb.queue_timeout does. */
typedef enum MccdbQueueTimeoutAction
{
	MCCDB_QUEUE_TIMEOUT_ERROR,	/* fails, SQLSTATE 53400 */
	MCCDB_QUEUE_TIMEOUT_RUN		/* leaves the queue and runs without the gate */
} MccdbQueueTimeoutAction;
extern int	mccdb_queue_timeout_action;
extern int	mccdb_memory_budget_kb;

/* A clock all backends share that never steps: microseconds. */
extern int64 mccdb_monotonic_us(void);

/* gate_state.c: the SQL functions' checks. */
extern void mccdb_admission_require_shmem(void);
extern void mccdb_require_columns(TupleDesc desc, int min, int max);

/* gate.c */
extern void mccdb_gate_account_running(int64 now_us);
extern void mccdb_gate_exit_callback(void);

/* The working memory of the admitted statements, in kB (mccdb.memory_budget). */
typedef struct MemoryInUse
{
	int64		running_kb;
	int64		lent_kb;		/* a cursor between fetches, a stalled client */
	/* the same by workload class (a class's memory_share) */
	int64		class_running_kb[MCCDB_MAX_CLASSES];
	int64		class_lent_kb[MCCDB_MAX_CLASSES];
} MemoryInUse;

/* policy.c; the caller holds the lock. */
extern int	mccdb_gate_domains(void);
extern int	mccdb_domain_slots(int d);
extern int	mccdb_total_slots(void);
extern int	mccdb_max_query_slots(void);
extern MemoryInUse mccdb_memory_in_use(void);
extern void mccdb_class_slots_in_use(int class_slots[MCCDB_MAX_CLASSES]);
extern int	mccdb_place_locked(AdmissionEntry *e, bool must);
extern AdmissionEntry *mccdb_pick_next(int64 now_us, EntryLane *lane);
/* Before the lock is first taken to pick: the policy's scratch space. */
extern void mccdb_policy_prepare(void);

/* learned.c */
extern void mccdb_forget_learned(void);
extern KnownQuery *mccdb_known_query(const MccdbQueryKey *key, bool create, int64 now_us);
extern double mccdb_predict_seconds(const MccdbQueryKey *key, double cost, int64 now_us);
extern void mccdb_learn_from(AdmissionEntry *e, int64 now_us);
/* The interference matrix a role's statements are judged by; caller holds the lock. */
extern void mccdb_role_matrix(Oid userid, double m[MODEL_CLASSES][MODEL_CLASSES]);

#endif							/* MCCDB_GATE_STATE_H */
