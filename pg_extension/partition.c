/*-------------------------------------------------------------------------
 *
 * partition.c
 *		Cache partitioning (MCC-DB sections 6.1 and 6.2): page colours for
 *		the buffer pool and hash tables through the kernel patch of
 *		kernel-patch/ (libpagecolor), or, on machines with hardware cache
 *		allocation, a resctrl group with few L3 ways for weak plans.
 *
 * Colours (as the paper does): at start-up the postmaster binds the shared
 * buffer pool, before any backend touches it, to mccdb.buffer_pool_colors
 * and makes those colours its task default, which every backend inherits.
 * A strong or moderate plan's private memory (its hash tables) takes the
 * other colours while it runs (the paper: all colours; see start_colors()):
 * its backend's default changes at ExecutorStart and back when the
 * statement ends (see "Per statement" below).  New pages only take the
 * colours in force when they are first touched, so the hash table must be built in fresh pages: memory
 * that glibc malloc or an AllocSet keeps for reuse keeps its old colours.
 * Hence, while colouring is active, large allocations are served by mmap
 * (M_MMAP_THRESHOLD fixed at 32 kB, so a dense hash chunk is a new
 * mapping) and freed heap memory is returned with malloc_trim() before a
 * strong plan starts.  A weak plan keeps the buffer pool's colours.
 *
 * resctrl (beyond the paper; Intel CAT, AMD L3 QoS): where colours are not
 * available and mccdb.resctrl_path is a resctrl mount, a weak plan's
 * backend joins the group "mccdb_weak" limited to mccdb.weak_cache_ways
 * ways while it runs, and then goes back to the group it was in (the
 * DBA's, say with a memory-bandwidth limit; found by resctrl.c).  The weak
 * group inherits every other resource of the postmaster's group
 * (resctrl.h).  PostgreSQL's OS user must be allowed to write the tasks
 * files.
 *
 * Nothing happens unless the DBA sets mccdb.partition (default off).  Where
 * the chosen mechanism is missing, partitioning is reported unavailable,
 * once in the log and in mccdb_partition(); nothing fails.  MLS then still
 * pairs queries, without the protection (docs/design.md).  A move that
 * fails in a backend is logged once (LOG, not to the client) and shown by
 * mccdb_partition() in that backend.
 *
 * Per statement: a backend can have several top-level statements open at
 * once (cursors), which end in any order: a cursor may be closed, or its
 * portal dropped, while another statement runs.  Each statement that
 * changes the backend's placement keeps what was in force before it; when
 * the newest ends, that is put back; when an older one ends, the newer one
 * above it inherits what the older one would have put back.  So a
 * statement's colours or group are changed only by itself.  The undo runs
 * when the statement's memory goes away, which every path does (ExecutorEnd,
 * ERROR, portal drop, subtransaction abort).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <unistd.h>

#include "funcapi.h"
#include "locality.h"
#include "miscadmin.h"
#include "pagecolor.h"
#include "partition.h"
#include "server_cost.h"
#include "state.h"
#include "resctrl.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#define RESCTRL_GROUP "mccdb_weak"

static const struct config_enum_entry partition_options[] = {
	{"off", MCCDB_PARTITION_OFF, false},
	{"auto", MCCDB_PARTITION_AUTO, false},
	{"colors", MCCDB_PARTITION_COLORS, false},
	{"resctrl", MCCDB_PARTITION_RESCTRL, false},
	{NULL, 0, false}
};

/* GUCs, all fixed at server start */
static int	partition_mode = MCCDB_PARTITION_OFF;
static char *buffer_pool_colors = NULL;
static char *resctrl_path = NULL;
static int	weak_cache_ways = 2;
/*
 * Statements cheaper than this run where every backend starts (the buffer
 * pool's colours, the root resctrl group): moving a backend costs tens of
 * microseconds (docs/results/mechanism-costs.md), which a statement this
 * small cannot win back, and its cache use is too small to matter.
 */
static double partition_min_cost = 1000.0;

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

typedef enum PartitionBackend
{
	PARTITION_NONE,
	PARTITION_COLORS,
	PARTITION_RESCTRL
} PartitionBackend;

/* Set in the postmaster at start-up; backends inherit them through fork. */
static PartitionBackend backend = PARTITION_NONE;
static char status[512] = "not started";
static pagecolor_set_t pool_colors;
static pagecolor_set_t hash_colors;	/* for strong and moderate plans */
static int	nr_colors = 0;
static char postmaster_group[512] = "";	/* resctrl group the weak one inherits from */

/*
 * Per backend: whether the class placement (the hash-table colours, or the
 * weak resctrl group) is in force, else the backend's own (the buffer
 * pool's colours, or home_group).
 */
static bool placed = false;
static char home_group[512] = "";	/* where the backend was before the move */
static char failure[512] = "";	/* the last failure in this backend */

/*
 * Setting a colour policy is a privilege on the colouring kernel
 * (vm.page_color_restrict, default 1: CAP_SYS_NICE); EPERM says the server
 * lacks it.
 */
#define COLOR_PRIVILEGE_MSG "page colours need CAP_SYS_NICE or vm.page_color_restrict = 0"
#define COLOR_PRIVILEGE_HINT "Give the server CAP_SYS_NICE (systemd: AmbientCapabilities=CAP_SYS_NICE in the postgresql unit), or let every user colour with \"sysctl vm.page_color_restrict=0\"; see docs/usage.md."
static bool color_privilege_missing = false;

/* A statement that set the backend's placement (see "Per statement"). */
typedef struct PartitionFrame
{
	bool		before;			/* placed, when the statement started */
	struct PartitionFrame *older;
	struct PartitionFrame *newer;
	MemoryContextCallback cb;
} PartitionFrame;

static PartitionFrame *newest = NULL;

/* Colours the buffer pool needs: its size in physical memory, plus 25%. */
static void
auto_pool_colors(pagecolor_set_t *set)
{
	double		ram = (double) sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
	double		pool = (double) NBuffers * BLCKSZ;
	int			n = (int) ceil(1.25 * pool / (ram / nr_colors));
	int			i;

	n = Max(1, Min(n, nr_colors));
	pagecolor_set_zero(set);
	for (i = 0; i < n; i++)
		pagecolor_set_add(set, i);
}

static bool
start_colors(void)
{
	char		list[256];
	uintptr_t	page_size = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	pool_start;
	uintptr_t	pool_end;
	int			i;

	nr_colors = pagecolor_nr_colors();
	if (buffer_pool_colors[0] != '\0')
	{
		if (pagecolor_set_parse(&pool_colors, buffer_pool_colors, nr_colors) != 0)
		{
			snprintf(status, sizeof(status),
					 "unavailable: mccdb.buffer_pool_colors \"%s\" is not a colour list within 0-%d",
					 buffer_pool_colors, nr_colors - 1);
			return false;
		}
	}
	else
		auto_pool_colors(&pool_colors);
	pagecolor_set_format(&pool_colors, list, sizeof(list));

	/*
	 * Strong and moderate plans get the colours the buffer pool and weak
	 * plans do not use (all of them if the pool has every colour).  The
	 * paper gave them all colours; the simulator (docs/results/
	 * llcsim-table2.md) shows a table that shares the weak colours is not
	 * protected, since recently freed pages of those colours are reused.
	 */
	pagecolor_set_fill(&hash_colors, nr_colors);
	for (i = 0; i < nr_colors; i++)
		if (pagecolor_set_test(&pool_colors, i))
			pagecolor_set_del(&hash_colors, i);
	if (pagecolor_set_count(&hash_colors) == 0)
		pagecolor_set_fill(&hash_colors, nr_colors);

	/*
	 * color_mbind() takes whole pages, like mbind(); PostgreSQL 15 aligns
	 * the buffer blocks to a cache line only, so take the pages they touch.
	 * The first and last of those are shared with the structures beside the
	 * pool and already resident: move them (EIO: some page could not be
	 * moved, the policy is set all the same).
	 */
	pool_start = TYPEALIGN_DOWN(page_size, (uintptr_t) BufferBlocks);
	pool_end = TYPEALIGN(page_size, (uintptr_t) BufferBlocks + (Size) NBuffers * BLCKSZ);
	if ((pagecolor_mbind((void *) pool_start, pool_end - pool_start,
						 COLOR_MODE_PREFERRED, &pool_colors, COLOR_MBIND_MIGRATE) != 0 &&
		 errno != EIO) ||
		pagecolor_set_policy(COLOR_MODE_PREFERRED, &pool_colors) != 0)
	{
		if (errno == EPERM)
		{
			color_privilege_missing = true;
			snprintf(status, sizeof(status),
					 "unavailable: " COLOR_PRIVILEGE_MSG " (colouring the buffer pool with %s: %m)",
					 list);
		}
		else
			snprintf(status, sizeof(status),
					 "unavailable: colouring the buffer pool with %s failed: %m", list);
		return false;
	}
	snprintf(status, sizeof(status),
			 "page colours: buffer pool and weak plans on colours %s of %d, strong and moderate plans on the others",
			 list, nr_colors);
	return true;
}

static void
partition_startup(void)
{
	char		err[256];

	backend = PARTITION_NONE;
	if (partition_mode == MCCDB_PARTITION_OFF)
	{
		snprintf(status, sizeof(status), "off (mccdb.partition = off)");
		return;
	}
	if (partition_mode != MCCDB_PARTITION_RESCTRL && pagecolor_supported())
	{
		if (start_colors())
			backend = PARTITION_COLORS;
	}
	else if (partition_mode == MCCDB_PARTITION_COLORS)
		snprintf(status, sizeof(status),
				 "unavailable: the kernel has no page colouring (no /sys/kernel/mm/page_coloring)");
	else if (mccdb_resctrl_available(resctrl_path))
	{
		if (mccdb_resctrl_group_of(resctrl_path, getpid(), RESCTRL_GROUP,
								   postmaster_group, sizeof(postmaster_group),
								   err, sizeof(err)) == 0 &&
			mccdb_resctrl_setup(resctrl_path, RESCTRL_GROUP, weak_cache_ways,
								postmaster_group, err, sizeof(err)) == 0)
		{
			backend = PARTITION_RESCTRL;
			snprintf(status, sizeof(status),
					 "resctrl: weak plans in %s/%s with %d L3 ways, the rest as in %s/%s",
					 resctrl_path, RESCTRL_GROUP, weak_cache_ways, resctrl_path,
					 postmaster_group);
		}
		else
			snprintf(status, sizeof(status), "unavailable: resctrl: %s", err);
	}
	else if (partition_mode == MCCDB_PARTITION_RESCTRL)
		snprintf(status, sizeof(status),
				 "unavailable: %s is not a resctrl mount with L3 allocation", resctrl_path);
	else
		snprintf(status, sizeof(status),
				 "unavailable: the kernel has no page colouring (no /sys/kernel/mm/page_coloring) and %s is not a resctrl mount",
				 resctrl_path);

	if (color_privilege_missing)
		ereport(LOG,
				(errmsg("mccdb: cache partitioning %s", status),
				 errhint(COLOR_PRIVILEGE_HINT)));
	else
		ereport(LOG, (errmsg("mccdb: cache partitioning %s", status)));
	if (backend == PARTITION_COLORS)
		/* fresh pages for big allocations, so colours take effect */
		mallopt(M_MMAP_THRESHOLD, 32 * 1024);
}

/*
 * A change of placement failed in this backend: say so once in the log,
 * never to the client (its query runs on, unpartitioned), and keep the
 * reason for mccdb_partition().  Never throws: runs in cleanup.
 */
static void
note_failure(const char *what)
{
	bool		first = failure[0] == '\0';

	strlcpy(failure, what, sizeof(failure));
	if (first)
		ereport(LOG,
				(errmsg("mccdb: cache partitioning failed in this backend: %s", what),
				 errdetail("Its statements run without partitioning where it fails; mccdb_partition() shows the last failure.")));
}

/* Put the class placement (on) or the backend's own (off) in force. */
static void
place(bool on)
{
	char		err[256];

	if (on == placed)
		return;
	if (backend == PARTITION_COLORS)
	{
		if (pagecolor_set_policy(COLOR_MODE_PREFERRED, on ? &hash_colors : &pool_colors) != 0)
		{
			snprintf(err, sizeof(err), "%s: %m%s",
					 on ? "moving to the hash table colours" : "restoring the buffer pool colours",
					 errno == EPERM ? " (" COLOR_PRIVILEGE_MSG ")" : "");
			note_failure(err);
			return;
		}
	}
	else if (on)
	{
		char		here[sizeof(home_group)];

		/*
		 * Where the backend is now is where it goes back to; unless that is
		 * the weak group itself (a move back failed), then the last home.
		 */
		if (mccdb_resctrl_group_of(resctrl_path, MyProcPid, RESCTRL_GROUP,
								   here, sizeof(here), err, sizeof(err)) != 0 ||
			mccdb_resctrl_move(resctrl_path, RESCTRL_GROUP, MyProcPid,
							   err, sizeof(err)) != 0)
		{
			note_failure(err);
			return;
		}
		if (strncmp(here, RESCTRL_GROUP, strlen(RESCTRL_GROUP)) != 0 ||
			(here[strlen(RESCTRL_GROUP)] != '\0' && here[strlen(RESCTRL_GROUP)] != '/'))
			strlcpy(home_group, here, sizeof(home_group));
	}
	else if (mccdb_resctrl_move(resctrl_path, home_group, MyProcPid,
								err, sizeof(err)) != 0)
	{
		note_failure(err);
		return;
	}
	placed = on;
}

/* A statement that changed the placement is going away: undo its part. */
static void
frame_end(void *arg)
{
	PartitionFrame *f = (PartitionFrame *) arg;

	if (f->newer)
	{
		/* a newer statement is in force: it puts back what f would have */
		f->newer->before = f->before;
		f->newer->older = f->older;
	}
	else
	{
		newest = f->older;
		place(f->before);
	}
	if (f->older)
		f->older->newer = f->newer;
}

/*
 * After all shared memory, including the buffer pool, exists: colour it
 * (in the postmaster, before any backend touches it).
 */
static void
partition_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	if (!IsUnderPostmaster)
		partition_startup();
}

void
mccdb_partition_init(void)
{
	DefineCustomEnumVariable("mccdb.partition",
							 "Partitions the last-level cache between weak and strong plans.",
							 "off (the default): nothing changes; auto: page colours where the kernel has them, "
							 "else resctrl where mounted, else nothing; colors or resctrl: that back end only.",
							 &partition_mode,
							 MCCDB_PARTITION_OFF, partition_options,
							 PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("mccdb.buffer_pool_colors",
							   "Page colours of the shared buffer pool and of weak plans, e.g. '0-3'.",
							   "Empty means as few as hold the buffer pool in physical memory, plus 25%.",
							   &buffer_pool_colors,
							   "",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("mccdb.resctrl_path",
							   "Where resctrl is mounted, for hardware cache allocation.",
							   "Weak plans run in its group mccdb_weak: the postmaster's group's schemata with "
							   "only the L3 line narrowed to mccdb.weak_cache_ways of that group's ways.",
							   &resctrl_path,
							   "/sys/fs/resctrl",
							   PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("mccdb.weak_cache_ways",
							"L3 ways a weak plan may use under resctrl.",
							NULL,
							&weak_cache_ways,
							2, 1, 64,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.partition_min_cost",
							 "Statements with a lower estimated cost run in the default partition.",
							 "Giving a backend its class's colours or resctrl group costs tens of microseconds, "
							 "which a cheaper statement cannot win back.",
							 &partition_min_cost,
							 1000.0, 0.0, 1e100,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = partition_shmem_startup;
}

/*
 * A top-level statement starts: give its backend the colours (or resctrl
 * group) of its locality class, before its executor state is allocated.
 * A statement below mccdb.partition_min_cost runs where the backend is.
 */
static bool
partition_wants_cost(bool cost_known, Cost cost)
{
	return backend != PARTITION_NONE &&
		mccdb_server_cost_reaches(cost_known, cost, partition_min_cost);
}

bool
mccdb_partition_wants(PlannedStmt *plan)
{
	Cost		cost;
	bool		cost_known;

	if (backend == PARTITION_NONE)
		return false;
	cost_known = mccdb_server_cost(plan, &cost);
	return partition_wants_cost(cost_known, cost);
}

void
mccdb_partition_statement_start(MccdbStatement *st)
{
	MccdbLocality *loc;
	PartitionFrame *f;
	bool		on;

	if (!partition_wants_cost(st->cost_known, st->real_cost))
		return;
	loc = mccdb_statement_locality(st);
	on = backend == PARTITION_COLORS ? loc->cls != MCCDB_WEAK : loc->cls == MCCDB_WEAK;

	/* the frame lives and dies with the statement's memory */
	f = MemoryContextAllocZero(st->cxt, sizeof(PartitionFrame));
	f->before = placed;
	f->older = newest;
	if (newest)
		newest->newer = f;
	newest = f;
	f->cb.func = frame_end;
	f->cb.arg = f;
	MemoryContextRegisterResetCallback(st->cxt, &f->cb);

	if (on && backend == PARTITION_COLORS)
		malloc_trim(0);			/* the hash tables get fresh pages */
	place(on);
}

PG_FUNCTION_INFO_V1(mccdb_partition);

Datum
mccdb_partition(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {0};
	static const char *const names[] = {"none", "page colours", "resctrl"};
	char		list[256];

	mccdb_require_preload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(names[backend]);
	if (failure[0] != '\0')
		values[1] = CStringGetTextDatum(psprintf("%s; failed in this backend: %s",
												 status, failure));
	else if (color_privilege_missing)
		values[1] = CStringGetTextDatum(psprintf("%s; hint: %s", status,
												 COLOR_PRIVILEGE_HINT));
	else
		values[1] = CStringGetTextDatum(status);
	if (backend == PARTITION_COLORS)
	{
		pagecolor_set_format(&pool_colors, list, sizeof(list));
		values[2] = CStringGetTextDatum(list);
		values[3] = Int32GetDatum(nr_colors);
	}
	else
		nulls[2] = nulls[3] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
