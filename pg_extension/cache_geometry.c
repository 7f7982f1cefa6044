/*-------------------------------------------------------------------------
 *
 * cache_geometry.c
 *		Find the last-level cache (LLC) the locality classes are measured
 *		against: the highest cache level of cpu0 that holds data, as Linux
 *		describes it in /sys/devices/system/cpu/cpu0/cache/index*.
 *
 * The paper's C.  Read once in the postmaster (through libpagecolor, which
 * the pagecolor command shares), inherited by the backends.
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

#define SYSFS_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"

/* Used when neither sysfs nor sysconf know: a typical per-socket LLC. */
#define FALLBACK_LLC_BYTES (8 * 1024 * 1024)

static MccdbCacheGeometry geometry;

static void
load_geometry(void)
{
	struct pagecolor_geometry g;
	cpu_set_t	shared;
	long		v = -1;

	memset(&geometry, 0, sizeof(geometry));
	/* libpagecolor reads the highest data cache level of cpu0 from sysfs */
	if (pagecolor_geometry(&g) == 0 && g.size > 0)
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
					SYSFS_CACHE_DIR, FALLBACK_LLC_BYTES / (1024 * 1024)),
			 errhint("Set mccdb.llc_size to the size of the last-level cache.")));
}

/* The GUC, and the geometry read once in the postmaster (backends inherit it). */
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
	load_geometry();
}

const MccdbCacheGeometry *
mccdb_cache_geometry(void)
{
	return &geometry;
}

Size
mccdb_llc_bytes(void)
{
	if (llc_size_kb > 0)
		return (Size) llc_size_kb * 1024;
	return geometry.size;
}
