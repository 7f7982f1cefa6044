/*-------------------------------------------------------------------------
 *
 * admission.c
 *		Co-scheduling of queries (MCC-DB sections 5.2 and 6.3): a gate in
 *		front of ExecutorRun that lets at most mccdb.corun_slots queries
 *		run at once and chooses which waiting query goes next.
 *
 * Shared memory holds one entry per backend: waiting, running or lending
 * its slots, its locality class (which of the paper's two queues it is in),
 * its hash table size and the slots it takes (1 + planned parallel
 * workers).  A waiting backend sleeps on a condition variable (wait event
 * Extension/MccdbAdmission in pg_stat_activity, "Extension" before
 * PostgreSQL 17); whoever frees slots or changes the
 * queue broadcasts, and every waiter re-evaluates pick_next() under the
 * lock: the one it names takes its slots.
 *
 * Policies (mccdb.schedule):
 *	sls		co-run queries of the same queue; strong/moderate first, smallest
 *			hash tables first;
 *	mls		co-run one query of each queue (as SLS when one queue is empty);
 *	adaptive	admit the waiter that minimises the predicted slowdown of the
 *			running set, from an interference matrix measured on the host;
 *	predictive	never leave a slot idle while a query waits; among the
 *			waiters predicted compatible with the running set, the longest
 *			first; run times and interference learned online (model.c);
 *	off		admit everything (stock behaviour).
 *
 * The gate is a soft limit on how many queries share the cache, never a
 * lock: it must not stop work that PostgreSQL itself would finish.  So
 * (docs/design.md, "The gate never hangs a workload"):
 *	- a query that waited mccdb.max_wait runs next, whatever the policy or a
 *	  hold;
 *	- a waiter that holds a heavyweight lock another backend waits for is
 *	  admitted at once, once it has waited deadlock_timeout: otherwise an
 *	  admitted query blocked on that lock and the waiter would wait for each
 *	  other where the deadlock detector cannot see it;
 *	- a statement is admitted once; between the fetches of a cursor, and
 *	  while its backend has been blocked writing to its client for
 *	  mccdb.client_stall, its slots are lent to waiting queries;
 *	- waiters reload the configuration themselves, so a changed policy or
 *	  slot count reaches them within half a second;
 *	- a hold ends with the session that took it;
 *	- the extension's own functions and views are never gated.
 *
 * A slot is never leaked: an error in the run releases the entry, a reset
 * callback on the statement's memory context covers a statement dropped
 * without ExecutorEnd, a before_shmem_exit callback covers FATAL, client
 * disconnect and pg_terminate_backend, and a backend crash reinitialises
 * shared memory.
 *
 * The interference matrix is written to $PGDATA/mccdb_interference.matrix
 * whenever it is loaded, and read back when shared memory is created, so
 * it survives restarts and crash recovery.  What was learned online (the
 * matrix cells, the seconds-per-cost rate, the run times and statistics of
 * known queries) is written to pg_stat/mccdb_learned.stat at a clean
 * shutdown and read back at the next start, as pg_stat_statements keeps
 * its entries: a crash loses it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "access/parallel.h"
#include "admission.h"
#include "affinity.h"
#include "cache_geometry.h"
#include "catalog/dependency.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "compat.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "model.h"
#include "nodes/nodeFuncs.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "query_stats.h"
#include "snapshot.h"
#include "state.h"
#include "storage/condition_variable.h"
#include "table_sizes.h"
#include "topology.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#define MATRIX_FILE "mccdb_interference.matrix"
#define MATRIX_MAGIC "mccdb interference matrix 1"
#define LEARNED_FILE MCCDB_SNAPSHOT_PATH("mccdb_learned.stat")
#define LEARNED_MAGIC 0x4d43444c	/* change when the layout below changes */
/* Waiters wake at least this often: reload, max_wait, stalled clients. */
#define WAKE_MS 500
/* Queries whose run times are remembered (by queryid), as pgss keeps entries. */
#define KNOWN_QUERIES 512
/* Seconds per planner cost unit before anything was measured. */
#define DEFAULT_SECONDS_PER_COST 1e-5
/* Predictive: a waiter adding at most this much work is compatible. */
#define COMPATIBLE_LIMIT 0.10
/* Completions shorter than this teach nothing (timer noise). */
#define MIN_LEARN_MS 5.0
/* A run with less company than this (summed overlap) counts as alone. */
#define ALONE_OVERLAP 0.10
/* A loaded (calibrated) matrix counts as this many learned samples. */
#define WARM_START_WEIGHT 5.0

/* GUCs */
static int	schedule = MCCDB_SCHEDULE_OFF;
static int	corun_slots = 0;
static int	max_wait_ms = 30000;
static double min_cost = 1000.0;
static int	client_stall_ms = 1000;
static int	log_min_wait_ms = -1;
static bool placement = true;

static const struct config_enum_entry schedule_options[] = {
	{"off", MCCDB_SCHEDULE_OFF, false},
	{"sls", MCCDB_SCHEDULE_SLS, false},
	{"mls", MCCDB_SCHEDULE_MLS, false},
	{"adaptive", MCCDB_SCHEDULE_ADAPTIVE, false},
	{"predictive", MCCDB_SCHEDULE_PREDICTIVE, false},
	{NULL, 0, false}
};

typedef enum EntryState
{
	ENTRY_FREE,
	ENTRY_WAITING,
	ENTRY_RUNNING,				/* admitted, its slots counted */
	ENTRY_LENT					/* admitted, its slots lent to waiters */
} EntryState;

typedef struct AdmissionEntry
{
	int			pid;
	int			procno;			/* its PGPROC, to read its wait event */
	EntryState	state;
	int			slots;
	int			cls;			/* MccdbLocalityClass */
	double		bytes;
	int64		seq;			/* arrival order */
	int64		admit_seq;
	TimestampTz since;			/* enqueued, then admitted */
	TimestampTz stalled_since;	/* first seen blocked writing to its client */
	uint64		queryid;
	double		cost;			/* the plan's cost, without disable_cost */
	double		predicted;		/* seconds alone, predicted at arrival */
	int			domain;			/* the LLC domain it runs in, once admitted */
	double		run_ms;			/* time spent running (not lent) */
	double		overlap_ms[3];	/* time a query of each class ran beside it */
} AdmissionEntry;

/*
 * What was learned of one query: its run time alone.  Keyed by queryid and
 * the plan's locality class, since plans of one query text (a hash join, an
 * index join) can run for very different times.
 */
typedef struct KnownQuery
{
	uint64		queryid;		/* 0 = free */
	int			cls;
	ModelCell	seconds;		/* log of its alone run time */
	TimestampTz last_used;
	/* mccdb_query_stats' counters, where the server keeps none (query_stats.h) */
	MccdbQueryCounters stats;
} KnownQuery;

typedef struct AdmissionShared
{
	LWLock	   *lock;
	ConditionVariable cv;
	int			held_by;		/* pid of mccdb_hold_admission(true), 0 = not held */
	int			used_slots;
	int			domain_used[MCCDB_MAX_LLC_DOMAINS];	/* of used_slots, per domain */
	int64		next_seq;
	int64		next_admit_seq;
	int64		admitted_total;
	int64		starved_total;	/* admitted because of mccdb.max_wait */
	int64		lock_admitted_total;	/* admitted because others wait for its locks */
	int64		lent_total;		/* slots lent by stalled clients */
	bool		have_matrix;
	double		interference[3][3]; /* [target class][co-runner class] slowdown */
	/* learned online from every gated query that finishes (model.c) */
	TimestampTz last_change;	/* of the running set, for overlap accounting */
	ModelCell	learned[3][3];
	ModelCell	seconds_per_cost;
	KnownQuery	known[KNOWN_QUERIES];
	int			nentries;
	AdmissionEntry entries[FLEXIBLE_ARRAY_MEMBER];
} AdmissionShared;

static AdmissionShared *adm = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool exit_callback_registered = false;

/* The statement that owns this backend's entry, if any. */
static bool holding = false;
static MccdbStatement *holding_statement = NULL;
/* This backend took the hold (mccdb_hold_admission(true)) at some point. */
static bool took_hold = false;

const char *
mccdb_schedule_name(MccdbSchedule policy)
{
	return schedule_options[policy].name;
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

/* The matrix file: a header line, then "target corunner slowdown" lines. */
static bool
read_matrix_file(double matrix[3][3])
{
	FILE	   *f = AllocateFile(MATRIX_FILE, "r");
	char		line[128];
	int			i,
				j,
				n = 0;
	bool		ok = true;

	if (f == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("mccdb: could not read \"%s\": %m", MATRIX_FILE)));
		return false;
	}
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			matrix[i][j] = 1.0;
	if (fgets(line, sizeof(line), f) == NULL ||
		strncmp(line, MATRIX_MAGIC, strlen(MATRIX_MAGIC)) != 0)
		ok = false;
	while (ok && fgets(line, sizeof(line), f) != NULL)
	{
		char		t[16],
					c[16];
		double		s;

		if (sscanf(line, "%15s %15s %lf", t, c, &s) != 3 ||
			(i = mccdb_locality_class_from_name(t)) < 0 ||
			(j = mccdb_locality_class_from_name(c)) < 0 ||
			!(s > 0 && s < 1000))
			ok = false;
		else
		{
			matrix[i][j] = s;
			n++;
		}
	}
	FreeFile(f);
	if (!ok || n == 0)
		ereport(LOG,
				(errmsg("mccdb: ignoring malformed interference matrix file \"%s\"", MATRIX_FILE),
				 errhint("Load the matrix again with mccdb_load_interference().")));
	return ok && n > 0;
}

/* Forget what was learned; the caller holds adm->lock or is alone (startup). */
static void
forget_learned(void)
{
	memset(adm->learned, 0, sizeof(adm->learned));
	memset(&adm->seconds_per_cost, 0, sizeof(adm->seconds_per_cost));
	memset(adm->known, 0, sizeof(adm->known));
}

/*
 * The learned state across a clean restart (snapshot.h): the matrix cells
 * and the rate, then the known queries in use.
 */
static void
write_learned_file(int code, Datum arg)
{
	MccdbSnapshotHeader h = {LEARNED_MAGIC, sizeof(KnownQuery), 0};
	FILE	   *f;
	bool		ok;
	int			i;

	/* after a crash, shared memory may be corrupt: keep nothing */
	if (code != 0 || adm == NULL)
		return;
	for (i = 0; i < KNOWN_QUERIES; i++)
		if (adm->known[i].queryid != 0)
			h.nentries++;
	if ((f = mccdb_snapshot_create(LEARNED_FILE, &h)) == NULL)
		return;
	ok = mccdb_snapshot_put(f, adm->learned, sizeof(adm->learned)) &&
		mccdb_snapshot_put(f, &adm->seconds_per_cost, sizeof(adm->seconds_per_cost));
	for (i = 0; ok && i < KNOWN_QUERIES; i++)
		if (adm->known[i].queryid != 0)
			ok = mccdb_snapshot_put(f, &adm->known[i], sizeof(KnownQuery));
	mccdb_snapshot_finish(f, LEARNED_FILE, ok);
}

static void
read_learned_file(void)
{
	MccdbSnapshotHeader h = {LEARNED_MAGIC, sizeof(KnownQuery), 0};
	FILE	   *f = mccdb_snapshot_open(LEARNED_FILE, &h);
	bool		ok;
	uint64		i;

	if (f == NULL)
		return;
	ok = h.nentries <= KNOWN_QUERIES &&
		mccdb_snapshot_get(f, adm->learned, sizeof(adm->learned)) &&
		mccdb_snapshot_get(f, &adm->seconds_per_cost, sizeof(adm->seconds_per_cost));
	for (i = 0; ok && i < h.nentries; i++)
		ok = mccdb_snapshot_get(f, &adm->known[i], sizeof(KnownQuery));
	if (!ok)
		forget_learned();
	mccdb_snapshot_done(f, LEARNED_FILE, ok);
}

static void
admission_shmem_startup(void)
{
	bool		found;
	double		matrix[3][3];

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

	/* After a restart or crash recovery: the matrix the server had. */
	if (!found && !IsUnderPostmaster && read_matrix_file(matrix))
	{
		memcpy(adm->interference, matrix, sizeof(matrix));
		adm->have_matrix = true;
	}
	/* After a clean restart: what was learned; written again at shutdown. */
	if (!IsUnderPostmaster)
	{
		if (!found)
			read_learned_file();
		on_shmem_exit(write_learned_file, (Datum) 0);
	}
}

void
mccdb_admission_init(void)
{
	DefineCustomEnumVariable("mccdb.schedule",
							 "Which queries are co-scheduled (run at the same time).",
							 "off: all at once; sls: same locality queue; mls: one of each queue; adaptive: least predicted slowdown.",
							 &schedule,
							 MCCDB_SCHEDULE_OFF, schedule_options,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.corun_slots",
							"How many queries run at once when scheduling.",
							"0 means the number of CPUs sharing the last-level cache. Parallel workers take slots too.",
							&corun_slots,
							0, 0, 1024,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.max_wait",
							"A query that waited this long is admitted next, whatever the policy or a hold.",
							NULL,
							&max_wait_ms,
							30000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.min_cost",
							 "Queries with a lower estimated cost bypass the scheduler.",
							 NULL,
							 &min_cost,
							 1000.0, 0.0, 1e100,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.client_stall",
							"A running query whose backend has waited this long to write to its client lends its slots to waiting queries.",
							"Between the fetches of a cursor the slots are lent at once.",
							&client_stall_ms,
							1000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("mccdb.log_min_wait",
							"Logs each query that waited at least this long for admission.",
							"-1 logs none, as log_lock_waits does for locks.",
							&log_min_wait_ms,
							-1, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("mccdb.placement",
							 "Places each admitted query in a last-level-cache domain and binds it to its CPUs.",
							 "With one domain (mccdb_llc_domains) nothing is placed or bound.",
							 &placement,
							 true,
							 PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);

	/* run times are remembered per queryid */
	EnableQueryId();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = admission_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = admission_shmem_startup;
}

/* The LLC domains the gate places queries in: 1 without placement. */
static int
gate_domains(void)
{
	return placement ? mccdb_topology()->ndomains : 1;
}

/*
 * Slots of domain d: mccdb.corun_slots, or its CPUs.  With one domain, as
 * before there were domains: mccdb.corun_slots or the CPUs sharing cpu0's
 * LLC.
 */
static int
domain_slots(int d)
{
	int			cpus;

	if (corun_slots > 0)
		return corun_slots;
	cpus = gate_domains() == 1 ? mccdb_cache_geometry()->shared_cpus :
		mccdb_topology()->domains[d].ncpus;
	return Max(cpus, 1);
}

/* Slots in use at once, in all domains. */
static int
total_slots(void)
{
	int			n = 0;

	for (int d = 0; d < gate_domains(); d++)
		n += domain_slots(d);
	return n;
}

/* The most slots one query can take: those of the largest domain. */
static int
max_query_slots(void)
{
	int			n = 0;

	for (int d = 0; d < gate_domains(); d++)
		n = Max(n, domain_slots(d));
	return n;
}

/* An entry's slots start (sign 1) or stop (-1) counting; caller holds the lock. */
static void
charge_slots(AdmissionEntry *e, int sign)
{
	adm->used_slots += sign * e->slots;
	adm->domain_used[e->domain] += sign * e->slots;
}

/*
 * The domain e would run in now (model_place), or -1 when none has room
 * for it; with must, the one with the most free slots then.  Caller holds
 * the lock.
 */
static int
place_locked(AdmissionEntry *e, bool must)
{
	ModelDomain domains[MCCDB_MAX_LLC_DOMAINS];
	double		m[3][3];
	int			nd = gate_domains(),
				d;

	for (d = 0; d < nd; d++)
	{
		domains[d].free_slots = domain_slots(d) - adm->domain_used[d];
		memset(domains[d].running, 0, sizeof(domains[d].running));
	}
	for (int i = 0; i < adm->nentries; i++)
		if (adm->entries[i].state == ENTRY_RUNNING)
			domains[adm->entries[i].domain].running[adm->entries[i].cls]++;
	model_matrix((const ModelCell (*)[3]) adm->learned, m);
	d = model_place(domains, nd, e->cls, Min(e->slots, max_query_slots()),
					(const double (*)[3]) m);
	if (d < 0 && must)
	{
		d = 0;
		for (int i = 1; i < nd; i++)
			if (domains[i].free_slots > domains[d].free_slots)
				d = i;
	}
	return d;
}

/* The gate's wait event (compat.h), named once per backend. */
static uint32
admission_wait_event(void)
{
	static uint32 event = 0;

	if (event == 0)
		event = mccdb_admission_wait_event();
	return event;
}

static AdmissionEntry *
my_entry(void)
{
	Assert(mccdb_my_backend_slot() >= 0 && mccdb_my_backend_slot() < adm->nentries);
	return &adm->entries[mccdb_my_backend_slot()];
}

/*
 * The running set is about to change: charge the time since the last
 * change to every running entry, and to each of them the classes that ran
 * beside it.  Caller holds the lock exclusively.
 */
static void
account_running(TimestampTz now)
{
	int			running[64];
	int			n = 0,
				i,
				j;
	double		dt = adm->last_change ? (double) (now - adm->last_change) / 1000.0 : 0;

	adm->last_change = now;
	if (dt <= 0)
		return;
	for (i = 0; i < adm->nentries && n < lengthof(running); i++)
		if (adm->entries[i].state == ENTRY_RUNNING)
			running[n++] = i;
	for (i = 0; i < n; i++)
	{
		AdmissionEntry *e = &adm->entries[running[i]];

		e->run_ms += dt;
		for (j = 0; j < n; j++)
			if (j != i)
				e->overlap_ms[adm->entries[running[j]].cls] += dt;
	}
}

static KnownQuery *
known_query(uint64 queryid, int cls, bool create, TimestampTz now)
{
	KnownQuery *oldest = NULL;
	int			i;

	if (queryid == 0)
		return NULL;
	for (i = 0; i < KNOWN_QUERIES; i++)
	{
		KnownQuery *k = &adm->known[i];

		if (k->queryid == queryid && k->cls == cls)
			return k;
		if (oldest == NULL || k->last_used < oldest->last_used)
			oldest = k;
	}
	if (!create)
		return NULL;
	/* bounded, like pg_stat_statements: the least recently used makes room */
	if (oldest->queryid != 0)
		mccdb_query_stats_forget(oldest->queryid, oldest->cls);
	memset(oldest, 0, sizeof(*oldest));
	oldest->queryid = queryid;
	oldest->cls = cls;
	oldest->last_used = now;
	oldest->stats.since = now;
	return oldest;
}

/* Seconds a query runs alone: its own history, else its cost at the learned rate. */
static double
predict_seconds(uint64 queryid, int cls, double cost, TimestampTz now)
{
	KnownQuery *k = known_query(queryid, cls, false, now);

	if (k && k->seconds.weight > 0)
	{
		k->last_used = now;
		return model_cell_value(&k->seconds, 0);
	}
	return cost * model_cell_value(&adm->seconds_per_cost, DEFAULT_SECONDS_PER_COST);
}

/*
 * An admitted statement is done.  A run (nearly) alone teaches its alone
 * time and the seconds-per-cost rate; a run with company, of a query whose
 * alone time is known that way, teaches the matrix cells of the classes it
 * ran beside (measured time over alone time, weighted by the overlap).
 * Only alone runs anchor the alone times: learning them from co-runs
 * divided by the matrix's own prediction would feed the matrix its own
 * errors back.  Caller holds the lock exclusively and has charged the
 * running time.
 */
static void
learn_from(AdmissionEntry *e, TimestampTz now)
{
	double		overlap[3];
	double		seconds = e->run_ms / 1000.0;
	double		company = 0;
	KnownQuery *k;
	int			c;

	if (e->run_ms < MIN_LEARN_MS)
		return;
	for (c = 0; c < 3; c++)
	{
		overlap[c] = e->overlap_ms[c] / e->run_ms;
		company += overlap[c];
	}
	k = known_query(e->queryid, e->cls, company < ALONE_OVERLAP, now);
	if (company < ALONE_OVERLAP)
	{
		if (k != NULL)
		{
			model_cell_add(&k->seconds, seconds, 1.0);
			k->last_used = now;
		}
		if (e->cost > 0)
			model_cell_add(&adm->seconds_per_cost, seconds / e->cost, 1.0);
	}
	else if (k != NULL && k->seconds.weight > 0)
	{
		double		alone = model_cell_value(&k->seconds, 0);
		MccdbQueryCounters corun = {.coruns = 1, .slowdown_sum = seconds / alone};

		(void) model_learn_completion(adm->learned, e->cls, seconds / alone, overlap);
		mccdb_query_stats_add(&k->stats, k->queryid, k->cls, &corun);
		k->last_used = now;
	}
}

/* Remove this backend's entry and give back its slots; caller holds the lock. */
static void
remove_entry_locked(void)
{
	AdmissionEntry *e = my_entry();

	if (e->pid == MyProcPid)
	{
		TimestampTz now = GetCurrentTimestamp();

		account_running(now);
		if (e->state == ENTRY_RUNNING || e->state == ENTRY_LENT)
			learn_from(e, now);
		if (e->state == ENTRY_RUNNING)
			charge_slots(e, -1);
		memset(e, 0, sizeof(*e));
	}
	holding = false;
	holding_statement = NULL;
}

static void
release_entry(void)
{
	/* the CPUs it had, on every path that ends the statement's run */
	mccdb_affinity_restore();
	if (!holding || adm == NULL)
		return;
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	remove_entry_locked();
	LWLockRelease(adm->lock);
	ConditionVariableBroadcast(&adm->cv);
}

/*
 * FATAL, client disconnect, pg_terminate_backend: never leave a slot or a
 * hold behind.
 */
static void
admission_shmem_exit(int code, Datum arg)
{
	if (adm == NULL)
		return;
	/* a FATAL may have come while a lock was held */
	LWLockReleaseAll();
	release_entry();
	if (took_hold)
	{
		LWLockAcquire(adm->lock, LW_EXCLUSIVE);
		if (adm->held_by == MyProcPid)
			adm->held_by = 0;
		LWLockRelease(adm->lock);
		ConditionVariableBroadcast(&adm->cv);
	}
	/* counts noted under the lock, by a statement that failed too */
	mccdb_query_stats_report();
}

static void
register_exit_callback(void)
{
	if (!exit_callback_registered)
	{
		before_shmem_exit(admission_shmem_exit, (Datum) 0);
		exit_callback_registered = true;
	}
}

/* The statement's memory is going away without ExecutorEnd (error, drop). */
static void
statement_gone(void *arg)
{
	if (holding && holding_statement == (MccdbStatement *) arg)
		release_entry();
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

		if (r->state != ENTRY_RUNNING)
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

/* The predictive policy's choice (model_pick); caller holds the lock. */
static AdmissionEntry *
pick_predictive(int slots, TimestampTz now)
{
	ModelQuery	waiting[64],
				running[64];
	AdmissionEntry *waiters[64];
	double		m[3][3];
	int			nw = 0,
				nr = 0,
				i,
				pick;

	for (i = 0; i < adm->nentries; i++)
	{
		AdmissionEntry *e = &adm->entries[i];

		if (e->state == ENTRY_WAITING && nw < lengthof(waiting))
		{
			waiters[nw] = e;
			waiting[nw++] = (ModelQuery) {e->cls, e->predicted, (long) e->seq,
			Min(e->slots, max_query_slots())};
		}
		else if (e->state == ENTRY_RUNNING && nr < lengthof(running))
		{
			double		elapsed = (e->run_ms + (double) (now - adm->last_change) / 1000.0) / 1000.0;

			running[nr++] = (ModelQuery) {e->cls,
				Max(e->predicted - elapsed, 0.05 * e->predicted), (long) e->seq, e->slots};
		}
	}
	model_matrix((const ModelCell (*)[3]) adm->learned, m);
	pick = model_pick(waiting, nw, running, nr, (const double (*)[3]) m,
					  slots - adm->used_slots, COMPATIBLE_LIMIT);
	return pick < 0 ? NULL : waiters[pick];
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
	MccdbSchedule policy = (MccdbSchedule) schedule;
	int			i;

	for (i = 0; i < adm->nentries; i++)
	{
		AdmissionEntry *e = &adm->entries[i];
		int			q;

		if (e->state == ENTRY_FREE || e->state == ENTRY_LENT)
			continue;
		q = MCCDB_QUEUE_OF(e->cls);
		if (e->state == ENTRY_RUNNING)
		{
			running[q]++;
			continue;
		}
		if (better_in_queue(e, best[q]))
			best[q] = e;
		if (TimestampDifferenceExceeds(e->since, now, max_wait_ms) &&
			(starving == NULL || e->seq < starving->seq))
			starving = e;
	}

	if (starving)
		choice = starving;
	else if (adm->held_by != 0)
		return NULL;
	else if (policy == MCCDB_SCHEDULE_PREDICTIVE)
		choice = pick_predictive(slots, now);
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
	if (place_locked(choice, false) < 0)
		return NULL;
	return choice;
}

/*
 * Running queries whose backends have been blocked writing to their
 * clients for mccdb.client_stall lend their slots; caller holds the lock.
 */
static void
lend_stalled_slots(TimestampTz now)
{
	int			i;

	for (i = 0; i < adm->nentries; i++)
	{
		AdmissionEntry *e = &adm->entries[i];
		uint32		wait_event;

		if (e->state != ENTRY_RUNNING)
			continue;
		wait_event = (*(volatile uint32 *) &ProcGlobal->allProcs[e->procno].wait_event_info);
		if (wait_event != WAIT_EVENT_CLIENT_WRITE)
			e->stalled_since = 0;
		else if (e->stalled_since == 0)
			e->stalled_since = now;
		else if (TimestampDifferenceExceeds(e->stalled_since, now, client_stall_ms))
		{
			account_running(now);
			e->state = ENTRY_LENT;
			charge_slots(e, -1);
			adm->lent_total++;
		}
	}
}

/*
 * The pid of a backend waiting for a heavyweight lock this backend holds
 * (as pg_blocking_pids() sees it), or 0.  Only backends that wait on a lock
 * are asked, so this costs nothing while nobody does.
 */
static int
backend_waiting_for_my_locks(void)
{
	uint32		i;

	for (i = 0; i < ProcGlobal->allProcCount; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		int			pid = proc->pid;
		ArrayType  *blockers;
		int32	   *pids;
		int			n,
					k;

		if (pid == 0 || pid == MyProcPid ||
			((*(volatile uint32 *) &proc->wait_event_info) & 0xFF000000) != PG_WAIT_LOCK)
			continue;
		blockers = DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids,
														  Int32GetDatum(pid)));
		n = ArrayGetNItems(ARR_NDIM(blockers), ARR_DIMS(blockers));
		pids = (int32 *) ARR_DATA_PTR(blockers);
		for (k = 0; k < n; k++)
			if (pids[k] == MyProcPid)
				return pid;
	}
	return 0;
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

/* Does an expression call a function of the mccdb extension? */
static bool
calls_own_function(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		Oid			funcid = ((FuncExpr *) node)->funcid;
		char	   *name = get_func_name(funcid);
		Oid			ext = get_extension_oid("mccdb", true);

		if (name && strncmp(name, "mccdb_", 6) == 0 && OidIsValid(ext) &&
			getExtensionOfObject(ProcedureRelationId, funcid) == ext)
			return true;
	}
	return expression_tree_walker(node, calls_own_function, context);
}

static bool
plan_calls_own_function(Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return false;
	if (calls_own_function((Node *) plan->targetlist, NULL) ||
		calls_own_function((Node *) plan->qual, NULL))
		return true;
	if (IsA(plan, FunctionScan) &&
		calls_own_function((Node *) ((FunctionScan *) plan)->functions, NULL))
		return true;
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			if (plan_calls_own_function(lfirst(lc)))
				return true;
	if (IsA(plan, SubqueryScan) &&
		plan_calls_own_function(((SubqueryScan *) plan)->subplan))
		return true;
	return plan_calls_own_function(outerPlan(plan)) ||
		plan_calls_own_function(innerPlan(plan));
}

/*
 * Statements that call the extension's own functions (its views, the hold
 * and the matrix loader) are never gated: an operator must always be able
 * to look at, and release, a stuck gate.
 */
static bool
is_own_statement(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (plan_calls_own_function(stmt->planTree))
		return true;
	foreach(lc, stmt->subplans)
		if (plan_calls_own_function(lfirst(lc)))
			return true;
	return false;
}

static bool
gate_applies(MccdbStatement *st)
{
	QueryDesc  *queryDesc = st->queryDesc;
	PlannedStmt *stmt = queryDesc->plannedstmt;

	return schedule != MCCDB_SCHEDULE_OFF &&
		adm != NULL &&
		!holding &&
		st->top &&
		mccdb_nesting_level() == 0 &&
		!creating_extension &&
		queryDesc->operation == CMD_SELECT &&
		st->real_cost >= min_cost &&
		!is_own_statement(stmt);
}

/* Take the slots of this backend's entry as admitted; caller holds the lock. */
static void
admit_locked(MccdbStatement *st, AdmissionEntry *e, TimestampTz enqueued,
			 TimestampTz now, bool for_locks)
{
	KnownQuery *k = known_query(e->queryid, e->cls, true, now);
	double		waited_ms = (double) (now - enqueued) / 1000.0;
	bool		starved = TimestampDifferenceExceeds(enqueued, now, max_wait_ms);

	account_running(now);
	/* placed beside the running queries, before it is one of them */
	e->domain = place_locked(e, true);
	e->state = ENTRY_RUNNING;
	e->since = now;
	e->admit_seq = adm->next_admit_seq++;
	e->slots = Min(e->slots, domain_slots(e->domain));
	charge_slots(e, 1);
	adm->admitted_total++;
	if (starved)
		adm->starved_total++;
	if (for_locks)
		adm->lock_admitted_total++;
	if (k != NULL)
	{
		MccdbQueryCounters admission = {.admissions = 1, .starved = starved,
		.lock_admitted = for_locks, .total_wait_ms = waited_ms, .max_wait_ms = waited_ms};

		mccdb_query_stats_add(&k->stats, k->queryid, k->cls, &admission);
		k->last_used = now;
	}
	st->admission.gated = true;
	st->admission.admit_seq = e->admit_seq;
	st->admission.admitted = now;
	st->admission.waited_ms = (double) (now - enqueued) / 1000.0;
}

/*
 * Run on the CPUs of the domain the gate placed this query in, until
 * release_entry().  A domain none of whose CPUs this backend may use (a
 * cpuset, a made-up topology) leaves it where it was.
 */
static void
bind_to_domain(int domain)
{
	if (!mccdb_affinity_bind(domain))
		ereport(DEBUG1,
				(errmsg("mccdb: process %d stays on its CPUs, not on LLC domain %d's: %m",
						MyProcPid, domain)));
}

/*
 * A parallel worker of a placed query runs in its leader's domain.  The
 * worker process ends with the query, so it never binds back.
 */
void
mccdb_admission_parallel_worker(void)
{
	PGPROC	   *leader = MyProc->lockGroupLeader;
	int			domain = -1;

	if (adm == NULL || gate_domains() == 1 || leader == NULL || leader == MyProc)
		return;
	LWLockAcquire(adm->lock, LW_SHARED);
	for (int i = 0; i < adm->nentries; i++)
		if (adm->entries[i].pid == leader->pid && adm->entries[i].state != ENTRY_WAITING &&
			adm->entries[i].state != ENTRY_FREE)
			domain = adm->entries[i].domain;
	LWLockRelease(adm->lock);
	if (domain >= 0)
		bind_to_domain(domain);
}

/*
 * Enqueue, and sleep until pick_next() names this backend.  Returns false
 * when the gate no longer applies (mccdb.schedule was set to off while it
 * waited): the statement then runs ungated.
 */
static bool
wait_for_admission(MccdbStatement *st)
{
	MccdbLocality *loc = mccdb_statement_locality(st);
	AdmissionEntry *e;
	MemoryContextCallback *cb;
	int			workers = planned_workers(st->queryDesc->plannedstmt->planTree);
	TimestampTz enqueued = GetCurrentTimestamp();
	bool		admitted = false;
	int			domain = -1;

	register_exit_callback();
	cb = MemoryContextAlloc(st->cxt, sizeof(MemoryContextCallback));
	cb->func = statement_gone;
	cb->arg = st;
	MemoryContextRegisterResetCallback(st->cxt, cb);

	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	memset(e, 0, sizeof(*e));
	e->pid = MyProcPid;
	e->procno = mccdb_my_pgprocno();
	e->state = ENTRY_WAITING;
	e->cls = loc->cls;
	e->bytes = loc->bytes;
	e->slots = 1 + workers;
	e->seq = adm->next_seq++;
	e->since = enqueued;
	e->queryid = st->queryDesc->plannedstmt->queryId;
	e->cost = st->real_cost;
	e->predicted = predict_seconds(e->queryid, e->cls, e->cost, enqueued);
	holding = true;
	holding_statement = st;
	LWLockRelease(adm->lock);

	PG_TRY();
	{
		ConditionVariablePrepareToSleep(&adm->cv);
		for (;;)
		{
			TimestampTz now;
			int			blocked = 0;

			/* A busy backend never reloads: do it here, for the gate's GUCs. */
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			if (schedule == MCCDB_SCHEDULE_OFF)
				break;
			now = GetCurrentTimestamp();
			if (TimestampDifferenceExceeds(enqueued, now, DeadlockTimeout))
				blocked = backend_waiting_for_my_locks();

			LWLockAcquire(adm->lock, LW_EXCLUSIVE);
			lend_stalled_slots(now);
			if (blocked != 0 || pick_next(now) == e)
			{
				admit_locked(st, e, enqueued, now, blocked != 0);
				admitted = true;
				domain = e->domain;
			}
			LWLockRelease(adm->lock);
			if (admitted)
			{
				if (gate_domains() > 1)
					bind_to_domain(domain);
				mccdb_query_stats_report();
				if (log_min_wait_ms >= 0 &&
					TimestampDifferenceExceeds(enqueued, now, log_min_wait_ms))
					ereport(LOG,
							(errmsg("mccdb: process %d waited %.0f ms for admission",
									MyProcPid, st->admission.waited_ms),
							 errdetail("mccdb.schedule = %s, locality %s, %d slots.",
									   mccdb_schedule_name(schedule),
									   mccdb_locality_class_name(e->cls), total_slots())));
				if (blocked != 0)
					ereport(LOG,
							(errmsg("mccdb: admitted process %d ahead of mccdb.schedule: process %d waits for a lock it holds",
									MyProcPid, blocked),
							 errdetail("A query waiting in the gate while holding locks others wait for could wait for them forever.")));
				break;
			}
			ConditionVariableTimedSleep(&adm->cv, WAKE_MS, admission_wait_event());
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

	if (!admitted)
		release_entry();
	/* Another waiter may fit in the slots that are still free. */
	ConditionVariableBroadcast(&adm->cv);
	return admitted;
}

/*
 * A top-level SELECT the gate let pass: counted for a query the gate has
 * admitted before (cheap queries that never were get no entry, so they
 * cannot crowd out the ones that matter).
 */
static void
count_bypass(MccdbStatement *st)
{
	uint64		queryid = st->queryDesc->plannedstmt->queryId;
	int			i,
				found = -1;

	if (schedule == MCCDB_SCHEDULE_OFF || adm == NULL || !st->top || queryid == 0 ||
		st->queryDesc->operation != CMD_SELECT)
		return;
	/* most bypassed queries (cheap ones) were never admitted: no exclusive lock for them */
	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < KNOWN_QUERIES && found < 0; i++)
		if (adm->known[i].queryid == queryid)
			found = i;
	LWLockRelease(adm->lock);
	if (found < 0)
		return;
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	if (adm->known[found].queryid == queryid)
	{
		KnownQuery *k = &adm->known[found];
		MccdbQueryCounters bypass = {.bypasses = 1};

		mccdb_query_stats_add(&k->stats, k->queryid, k->cls, &bypass);
	}
	LWLockRelease(adm->lock);
	mccdb_query_stats_report();
}

/* An admitted statement runs again (the next FETCH): take its slots back. */
static void
retake_slots(MccdbStatement *st)
{
	AdmissionEntry *e;

	st->admission.released = 0;

	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	if (e->pid == MyProcPid && e->state == ENTRY_LENT)
	{
		account_running(GetCurrentTimestamp());
		e->state = ENTRY_RUNNING;
		e->stalled_since = 0;
		charge_slots(e, 1);
	}
	LWLockRelease(adm->lock);
}

/*
 * The run returned (a cursor waits for its next FETCH, or the statement is
 * about to end): lend the slots.
 */
static void
lend_slots(MccdbStatement *st)
{
	AdmissionEntry *e;

	st->admission.released = GetCurrentTimestamp();

	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	e = my_entry();
	if (e->pid == MyProcPid && e->state == ENTRY_RUNNING)
	{
		account_running(GetCurrentTimestamp());
		e->state = ENTRY_LENT;
		charge_slots(e, -1);
	}
	LWLockRelease(adm->lock);
	ConditionVariableBroadcast(&adm->cv);
}

void
mccdb_admission_run(MccdbStatement *st, ScanDirection direction,
					uint64 count, bool execute_once,
					void (*run) (QueryDesc *, ScanDirection, uint64, bool))
{
	bool		gated;

	if (holding && holding_statement == st)
		retake_slots(st);
	else if (!gate_applies(st) || !wait_for_admission(st))
	{
		count_bypass(st);
		run(st->queryDesc, direction, count, execute_once);
		return;
	}

	gated = true;
	PG_TRY();
	{
		run(st->queryDesc, direction, count, execute_once);
	}
	PG_CATCH();
	{
		st->admission.released = GetCurrentTimestamp();
		release_entry();
		gated = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (gated)
		lend_slots(st);
}

void
mccdb_admission_statement_end(MccdbStatement *st)
{
	if (holding && holding_statement == st)
	{
		if (st->admission.released == 0)
			st->admission.released = GetCurrentTimestamp();
		release_entry();
	}
	/* also what an earlier statement that failed left noted */
	mccdb_query_stats_report();
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

		if (e->state == ENTRY_FREE)
			continue;
		if (MCCDB_QUEUE_OF(e->cls) == 0)
			(*strong_moderate)++;
		else
			(*weak)++;
	}
	LWLockRelease(adm->lock);
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

/*
 * The SQL definition of a set-returning function has between min and max
 * columns, each a prefix of the newest: an older extension version whose
 * objects were not updated after the library was (the columns are filled
 * from the left; heap_form_tuple takes as many as the definition has).
 */
static void
require_columns(ReturnSetInfo *rsinfo, int min, int max)
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

PG_FUNCTION_INFO_V1(mccdb_queue);
PG_FUNCTION_INFO_V1(mccdb_llc_domains);
PG_FUNCTION_INFO_V1(mccdb_scheduler);
PG_FUNCTION_INFO_V1(mccdb_hold_admission);
PG_FUNCTION_INFO_V1(mccdb_set_interference);
PG_FUNCTION_INFO_V1(mccdb_clear_interference);
PG_FUNCTION_INFO_V1(mccdb_replace_interference);
PG_FUNCTION_INFO_V1(mccdb_interference_matrix);
PG_FUNCTION_INFO_V1(mccdb_learned_interference);
PG_FUNCTION_INFO_V1(mccdb_run_time_model);
PG_FUNCTION_INFO_V1(mccdb_learned_reset);
PG_FUNCTION_INFO_V1(mccdb_query_stats);
PG_FUNCTION_INFO_V1(mccdb_query_stats_reset);

/* The running, lending and waiting queries, oldest first. */
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
	/* 1.0 had the first 9 columns, 1.1 the first 10: the library may be newer */
	require_columns(rsinfo, 9, 11);
	copy = palloc(sizeof(AdmissionEntry) * adm->nentries);
	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < adm->nentries; i++)
		if (adm->entries[i].state != ENTRY_FREE)
			copy[n++] = adm->entries[i];
	LWLockRelease(adm->lock);

	for (i = 0; i < n; i++)
	{
		AdmissionEntry *e = &copy[i];
		Datum		values[11];
		bool		nulls[11] = {0};

		values[0] = Int32GetDatum(e->pid);
		values[1] = CStringGetTextDatum(entry_state_name(e->state));
		values[2] = CStringGetTextDatum(MCCDB_QUEUE_OF(e->cls) == 0 ? "strong/moderate" : "weak");
		values[3] = CStringGetTextDatum(mccdb_locality_class_name(e->cls));
		values[4] = Int64GetDatum((int64) e->bytes);
		values[5] = Int32GetDatum(e->slots);
		values[6] = TimestampTzGetDatum(e->since);
		values[7] = Float8GetDatum((double) (now - e->since) / 1000.0);
		values[8] = Int64GetDatum(e->seq);
		values[9] = Float8GetDatum(e->predicted);
		values[10] = Int32GetDatum(e->domain);
		nulls[10] = e->state == ENTRY_WAITING;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * The last-level-cache domains as the gate uses them: the CPUs of each
 * (topology.c), its slots and how many are in use.  Without placement, or
 * on a machine with one LLC, one row.
 */
Datum
mccdb_llc_domains(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const MccdbTopology *t = mccdb_topology();
	int			used[MCCDB_MAX_LLC_DOMAINS];

	require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	require_columns(rsinfo, 8, 8);
	LWLockAcquire(adm->lock, LW_SHARED);
	memcpy(used, adm->domain_used, sizeof(used));
	LWLockRelease(adm->lock);
	for (int i = 0; i < t->ndomains; i++)
	{
		const MccdbLlcDomain *d = &t->domains[i];
		Datum		values[8];
		bool		nulls[8] = {false};
		bool		in_gate = i < gate_domains();

		values[0] = Int32GetDatum(i);
		values[1] = CStringGetTextDatum(mccdb_format_cpu_list(&d->cpus));
		values[2] = Int32GetDatum(d->ncpus);
		values[3] = Int32GetDatum(d->level);
		nulls[3] = d->level == 0;
		values[4] = Int64GetDatum(d->size);
		nulls[4] = d->size == 0;
		/* without placement the gate has one domain: the first row holds its slots */
		values[5] = Int32GetDatum(in_gate ? domain_slots(i) : 0);
		nulls[5] = !in_gate;
		values[6] = Int32GetDatum(in_gate ? used[i] : 0);
		nulls[6] = !in_gate;
		values[7] = CStringGetTextDatum(t->source);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* One row: policy, slots, use, hold, counters. */
Datum
mccdb_scheduler(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {0};

	require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(adm->lock, LW_SHARED);
	values[0] = CStringGetTextDatum(mccdb_schedule_name(schedule));
	values[1] = Int32GetDatum(total_slots());
	values[2] = Int32GetDatum(adm->used_slots);
	values[3] = BoolGetDatum(adm->held_by != 0);
	values[4] = Int64GetDatum(adm->admitted_total);
	values[5] = Int64GetDatum(adm->starved_total);
	values[6] = BoolGetDatum(adm->have_matrix);
	values[7] = Int32GetDatum(adm->held_by);
	nulls[7] = adm->held_by == 0;
	values[8] = Int64GetDatum(adm->lock_admitted_total);
	values[9] = Int64GetDatum(adm->lent_total);
	LWLockRelease(adm->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * Hold admission (queue everything, run nothing new) or release it: how a
 * static batch, as in the paper's experiments, is submitted "together".
 * The hold ends with the session that took it; mccdb.max_wait still admits.
 */
Datum
mccdb_hold_admission(PG_FUNCTION_ARGS)
{
	bool		hold = PG_GETARG_BOOL(0);

	require_shmem();
	register_exit_callback();
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	adm->held_by = hold ? MyProcPid : 0;
	took_hold |= hold;
	LWLockRelease(adm->lock);
	ConditionVariableBroadcast(&adm->cv);
	PG_RETURN_VOID();
}

static int
class_from_text(text *t)
{
	char	   *name = text_to_cstring(t);
	int			cls = mccdb_locality_class_from_name(name);

	if (cls < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown locality class \"%s\"", name),
				 errhint("Use strong, moderate or weak.")));
	return cls;
}

static void
check_slowdown(double slowdown)
{
	if (!(slowdown > 0 && slowdown < 1000))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slowdown must be a ratio between 0 and 1000, not %g", slowdown),
				 errhint("A slowdown is co-run time / alone time, e.g. 1.25.")));
}

/*
 * Make a matrix the server's: write the file (durably: it is read back when
 * shared memory is created), then swap it in.  NULL clears it.
 */
static void
install_matrix(double matrix[3][3])
{
	if (matrix == NULL)
	{
		if (unlink(MATRIX_FILE) != 0 && errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not remove \"%s\": %m", MATRIX_FILE)));
	}
	else
	{
		StringInfoData buf;
		char		tmp[MAXPGPATH];
		int			fd,
					i,
					j;

		initStringInfo(&buf);
		appendStringInfo(&buf, "%s\n", MATRIX_MAGIC);
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++)
				appendStringInfo(&buf, "%s %s %.17g\n",
								 mccdb_locality_class_name(i),
								 mccdb_locality_class_name(j), matrix[i][j]);
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", MATRIX_FILE, MyProcPid);
		fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create \"%s\": %m", tmp)));
		if (write(fd, buf.data, buf.len) != buf.len || pg_fsync(fd) != 0)
		{
			int			save_errno = errno ? errno : ENOSPC;

			CloseTransientFile(fd);
			unlink(tmp);
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write \"%s\": %m", tmp)));
		}
		if (CloseTransientFile(fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not close \"%s\": %m", tmp)));
		(void) durable_rename(tmp, MATRIX_FILE, ERROR);
	}

	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	if (matrix != NULL)
	{
		int			i,
					j;

		memcpy(adm->interference, matrix, sizeof(adm->interference));
		/* a calibrated matrix is where learning starts again from */
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++)
			{
				adm->learned[i][j].log_estimate = log(matrix[i][j]);
				adm->learned[i][j].weight = WARM_START_WEIGHT;
				adm->learned[i][j].samples = 0;
			}
	}
	adm->have_matrix = matrix != NULL;
	LWLockRelease(adm->lock);
	ConditionVariableBroadcast(&adm->cv);
}

static void
current_matrix(double matrix[3][3])
{
	int			i,
				j;

	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			matrix[i][j] = adm->have_matrix ? adm->interference[i][j] : 1.0;
	LWLockRelease(adm->lock);
}

/* Set one cell of the interference matrix the adaptive policy uses. */
Datum
mccdb_set_interference(PG_FUNCTION_ARGS)
{
	int			target = class_from_text(PG_GETARG_TEXT_PP(0));
	int			corunner = class_from_text(PG_GETARG_TEXT_PP(1));
	double		slowdown = PG_GETARG_FLOAT8(2);
	double		matrix[3][3];

	require_shmem();
	check_slowdown(slowdown);
	current_matrix(matrix);
	matrix[target][corunner] = slowdown;
	install_matrix(matrix);
	PG_RETURN_VOID();
}

/*
 * Replace the whole matrix, all or nothing: every cell is checked before
 * anything changes.  Cells not given are 1.0 (no interference).
 */
Datum
mccdb_replace_interference(PG_FUNCTION_ARGS)
{
	ArrayType  *targets = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *corunners = PG_GETARG_ARRAYTYPE_P(1);
	ArrayType  *slowdowns = PG_GETARG_ARRAYTYPE_P(2);
	Datum	   *t,
			   *c,
			   *s;
	bool	   *tn,
			   *cn,
			   *sn;
	int			nt,
				nc,
				ns,
				i,
				j;
	double		matrix[3][3];

	require_shmem();
	deconstruct_array(targets, TEXTOID, -1, false, TYPALIGN_INT, &t, &tn, &nt);
	deconstruct_array(corunners, TEXTOID, -1, false, TYPALIGN_INT, &c, &cn, &nc);
	deconstruct_array(slowdowns, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &s, &sn, &ns);
	if (nt != nc || nt != ns)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("target, corunner and slowdown arrays must have the same length")));
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			matrix[i][j] = 1.0;
	for (i = 0; i < nt; i++)
	{
		if (tn[i] || cn[i] || sn[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("interference matrix cells must not be null")));
		check_slowdown(DatumGetFloat8(s[i]));
		matrix[class_from_text(DatumGetTextPP(t[i]))][class_from_text(DatumGetTextPP(c[i]))] =
			DatumGetFloat8(s[i]);
	}
	if (nt == 0)
		install_matrix(NULL);
	else
		install_matrix(matrix);
	PG_RETURN_INT32(nt);
}

/*
 * Nine rows, target x co-runner: the slowdown, and with learned cells also
 * their sample count and weight.
 */
static void
put_matrix_rows(ReturnSetInfo *rsinfo, double matrix[3][3], const ModelCell cells[3][3])
{
	int			i,
				j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
		{
			Datum		values[5];
			bool		nulls[5] = {0};

			values[0] = CStringGetTextDatum(mccdb_locality_class_name(i));
			values[1] = CStringGetTextDatum(mccdb_locality_class_name(j));
			values[2] = Float8GetDatum(matrix[i][j]);
			if (cells != NULL)
			{
				values[3] = Int64GetDatum((int64) cells[i][j].samples);
				values[4] = Float8GetDatum(cells[i][j].weight);
			}
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
}

/* The matrix the server uses now: nine rows, or none when none is loaded. */
Datum
mccdb_interference_matrix(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	double		matrix[3][3];
	bool		loaded;

	require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(adm->lock, LW_SHARED);
	loaded = adm->have_matrix;
	memcpy(matrix, adm->interference, sizeof(matrix));
	LWLockRelease(adm->lock);
	if (loaded)
		put_matrix_rows(rsinfo, matrix, NULL);
	return (Datum) 0;
}

/* The matrix the predictive policy learned, with how many samples fed each cell. */
Datum
mccdb_learned_interference(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ModelCell	cells[3][3];
	double		matrix[3][3];

	require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(adm->lock, LW_SHARED);
	memcpy(cells, adm->learned, sizeof(cells));
	LWLockRelease(adm->lock);
	model_matrix((const ModelCell (*)[3]) cells, matrix);
	put_matrix_rows(rsinfo, matrix, (const ModelCell (*)[3]) cells);
	return (Datum) 0;
}

/* The run-time model: the learned rate, and how many queries it knows by queryid. */
Datum
mccdb_run_time_model(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {0};
	int			known = 0,
				i;

	require_shmem();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < KNOWN_QUERIES; i++)
		if (adm->known[i].queryid != 0)
			known++;
	values[0] = Float8GetDatum(model_cell_value(&adm->seconds_per_cost, DEFAULT_SECONDS_PER_COST));
	values[1] = Int64GetDatum((int64) adm->seconds_per_cost.samples);
	values[2] = Int32GetDatum(known);
	values[3] = Int32GetDatum(KNOWN_QUERIES);
	LWLockRelease(adm->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* Per query and plan class: what the gate did with it, and what it measured. */
Datum
mccdb_query_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KnownQuery *copy;
	int			n = 0,
				i;

	require_shmem();
	mccdb_query_stats_report();		/* this session's own counts too */
	InitMaterializedSRF(fcinfo, 0);
	copy = palloc(sizeof(KnownQuery) * KNOWN_QUERIES);
	LWLockAcquire(adm->lock, LW_SHARED);
	for (i = 0; i < KNOWN_QUERIES; i++)
		if (adm->known[i].queryid != 0)
			copy[n++] = adm->known[i];
	LWLockRelease(adm->lock);
	for (i = 0; i < n; i++)
	{
		KnownQuery *k = &copy[i];
		MccdbQueryCounters c;
		Datum		values[13];
		bool		nulls[13] = {0};

		mccdb_query_stats_get(&k->stats, k->queryid, k->cls, &c);
		values[0] = Int64GetDatum((int64) k->queryid);
		values[1] = CStringGetTextDatum(mccdb_locality_class_name(k->cls));
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

	require_shmem();
	/* this session's counts first, so that none lands after the reset */
	mccdb_query_stats_report();
	mccdb_query_stats_reset_shared();
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	for (i = 0; i < KNOWN_QUERIES; i++)
	{
		KnownQuery *k = &adm->known[i];

		memset(&k->stats, 0, sizeof(k->stats));
		k->stats.since = now;
	}
	LWLockRelease(adm->lock);
	PG_RETURN_VOID();
}

/* Forget everything learned: matrix cells, rate, run times, table sizes. */
Datum
mccdb_learned_reset(PG_FUNCTION_ARGS)
{
	require_shmem();
	LWLockAcquire(adm->lock, LW_EXCLUSIVE);
	forget_learned();
	LWLockRelease(adm->lock);
	mccdb_query_stats_forget_all();
	mccdb_query_stats_report();
	mccdb_table_sizes_reset();
	PG_RETURN_VOID();
}

/* Forget the matrix: adaptive behaves as MLS until one is loaded. */
Datum
mccdb_clear_interference(PG_FUNCTION_ARGS)
{
	require_shmem();
	install_matrix(NULL);
	PG_RETURN_VOID();
}
