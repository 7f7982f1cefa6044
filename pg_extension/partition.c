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
 * its backend's default changes at ExecutorStart and back to the buffer
 * pool's at ExecutorEnd (or at the next query's start after an error).  New pages only take the colours in force when they are
 * first touched, so the hash table must be built in fresh pages: memory
 * that glibc malloc or an AllocSet keeps for reuse keeps its old colours.
 * Hence, while colouring is active, large allocations are served by mmap
 * (M_MMAP_THRESHOLD fixed at 32 kB, so a dense hash chunk is a new
 * mapping) and freed heap memory is returned with malloc_trim() before a
 * strong plan starts.  A weak plan keeps the buffer pool's colours.
 *
 * resctrl (beyond the paper; Intel CAT, AMD L3 QoS): where colours are not
 * available and mccdb.resctrl_path is a resctrl mount, a weak plan's
 * backend joins the group "mccdb_weak" limited to mccdb.weak_cache_ways
 * ways while it runs.  PostgreSQL's OS user must be allowed to write the
 * group's tasks file.
 *
 * Neither: partitioning is reported unavailable, once in the log and in
 * mccdb_partition(); nothing fails.  MLS then still pairs queries, without
 * the protection (docs/design.md).
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
#include "state.h"
#include "resctrl.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#define RESCTRL_GROUP "mccdb_weak"

static const struct config_enum_entry partition_options[] = {
	{"off", MCCDB_PARTITION_OFF, false},
	{"auto", MCCDB_PARTITION_AUTO, false},
	{"colors", MCCDB_PARTITION_COLORS, false},
	{"resctrl", MCCDB_PARTITION_RESCTRL, false},
	{NULL, 0, false}
};

/* GUCs, all fixed at server start */
static int	partition_mode = MCCDB_PARTITION_AUTO;
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

/* Per backend: what the running query changed. */
static bool colors_widened = false;
static bool in_weak_group = false;
static bool warned = false;

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
		if (mccdb_resctrl_setup(resctrl_path, RESCTRL_GROUP,
								weak_cache_ways, err, sizeof(err)) == 0)
		{
			backend = PARTITION_RESCTRL;
			snprintf(status, sizeof(status),
					 "resctrl: weak plans in %s/%s with %d L3 ways",
					 resctrl_path, RESCTRL_GROUP, weak_cache_ways);
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

	ereport(LOG, (errmsg("mccdb: cache partitioning %s", status)));
	if (backend == PARTITION_COLORS)
		/* fresh pages for big allocations, so colours take effect */
		mallopt(M_MMAP_THRESHOLD, 32 * 1024);
}

static void
warn_once(const char *what)
{
	if (!warned)
		ereport(WARNING,
				(errmsg("mccdb: cache partitioning failed for this backend: %s: %m", what),
				 errdetail("Queries run without partitioning.")));
	warned = true;
}

/* Restore what the previous query changed (also after an error). */
static void
restore(void)
{
	char		err[256];

	if (colors_widened &&
		pagecolor_set_policy(COLOR_MODE_PREFERRED, &pool_colors) != 0)
		warn_once("restoring the buffer pool colours");
	colors_widened = false;
	if (in_weak_group &&
		mccdb_resctrl_move(resctrl_path, NULL, MyProcPid, err, sizeof(err)) != 0)
		warn_once(err);
	in_weak_group = false;
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
							 "auto: page colours where the kernel has them, else resctrl where mounted, else nothing; "
							 "colors or resctrl: that back end only.",
							 &partition_mode,
							 MCCDB_PARTITION_AUTO, partition_options,
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
							   NULL,
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
 */
void
mccdb_partition_statement_start(MccdbStatement *st)
{
	MccdbLocality *loc;
	char		err[256];

	if (backend == PARTITION_NONE)
		return;
	restore();
	if (st->real_cost < partition_min_cost)
		return;
	loc = mccdb_statement_locality(st);
	if (backend == PARTITION_COLORS && loc->cls != MCCDB_WEAK)
	{
		malloc_trim(0);
		if (pagecolor_set_policy(COLOR_MODE_PREFERRED, &hash_colors) != 0)
			warn_once("moving to the hash table colours");
		else
			colors_widened = true;
	}
	else if (backend == PARTITION_RESCTRL && loc->cls == MCCDB_WEAK)
	{
		if (mccdb_resctrl_move(resctrl_path, RESCTRL_GROUP, MyProcPid,
							   err, sizeof(err)) != 0)
			warn_once(err);
		else
			in_weak_group = true;
	}
}

void
mccdb_partition_statement_end(void)
{
	if (backend != PARTITION_NONE)
		restore();
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
