/*-------------------------------------------------------------------------
 *
 * cache_geometry.c
 *		Find the last-level cache (LLC) the locality classes are measured
 *		against: the highest cache level of cpu0 that holds data, as Linux
 *		describes it in /sys/devices/system/cpu/cpu0/cache/index*.
 *
 * The paper's C.  Read through libpagecolor (pagecolor_geometry_dir), which
 * the pagecolor command and topology.c share, under mccdb.cpu_topology_root
 * as the domains are: once in the postmaster (mccdb_topology_init), so the
 * backends inherit it, else at the first use.
 * mccdb.llc_size overrides the size, e.g. with the effective capacity a
 * single query sees on a shared machine (which can be far below sysfs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <unistd.h>

#include "cache_geometry.h"
#include "pagecolor.h"
#include "topology.h"
#include "utils/guc.h"

/* GUC: C, in kB; 0 means the size found in sysfs. */
static int	llc_size_kb = 0;

/* Used when neither sysfs nor sysconf know: a typical per-socket LLC. */
#define FALLBACK_LLC_BYTES (8 * 1024 * 1024)

static MccdbCacheGeometry geometry;
static bool geometry_loaded = false;

static void
load_geometry(void)
{
	struct pagecolor_geometry g;
	cpu_set_t	shared;
	char		dir[MAXPGPATH];
	long		v = -1;

	memset(&geometry, 0, sizeof(geometry));
	/* libpagecolor reads the highest data cache level of cpu0 from sysfs */
	snprintf(dir, sizeof(dir), "%s/cpu0/cache", mccdb_cpu_sysfs_root());
	if (pagecolor_geometry_dir(dir, &g) == 0 && g.size > 0)
	{
		geometry.level = g.level;
		geometry.size = (Size) g.size;
		geometry.ways = g.ways;
		geometry.line_size = g.line_size;
		strlcpy(geometry.shared_cpu_list, g.shared_cpus, sizeof(geometry.shared_cpu_list));
		if (mccdb_parse_cpu_list(g.shared_cpus, &shared))
			geometry.shared_cpus = CPU_COUNT(&shared);
		geometry.source = "sysfs";
		return;
	}

#ifdef _SC_LEVEL3_CACHE_SIZE
	v = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (v > 0)
	{
		geometry.level = 3;
		geometry.size = (Size) v;
		geometry.source = "sysconf";
		return;
	}
#endif
	geometry.size = FALLBACK_LLC_BYTES;
	geometry.source = "fallback";
	ereport(LOG,
			(errmsg("mccdb: could not read the last-level cache size from %s; assuming %d MB",
					dir, FALLBACK_LLC_BYTES / (1024 * 1024)),
			 errhint("Set mccdb.llc_size to the size of the last-level cache.")));
}

/*
 * The GUC, and the geometry read in the postmaster (the backends inherit
 * it): called after mccdb_topology_init(), which defines
 * mccdb.cpu_topology_root.
 */
void
mccdb_cache_geometry_init(void)
{
	DefineCustomIntVariable("mccdb.llc_size",
							"Size of the last-level cache (C) the locality classes are measured against.",
							"0 means the size of the largest cache level of cpu0 in sysfs.",
							&llc_size_kb,
							0, 0, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	(void) mccdb_cache_geometry();
}

const MccdbCacheGeometry *
mccdb_cache_geometry(void)
{
	if (!geometry_loaded)
	{
		load_geometry();
		geometry_loaded = true;
	}
	return &geometry;
}

Size
mccdb_llc_bytes(void)
{
	if (llc_size_kb > 0)
		return (Size) llc_size_kb * 1024;
	return mccdb_cache_geometry()->size;
}
