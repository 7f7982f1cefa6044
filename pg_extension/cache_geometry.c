/*-------------------------------------------------------------------------
 *
 * cache_geometry.c
 *		Find the last-level cache (LLC) the locality classes are measured
 *		against: the highest cache level of cpu0 that holds data, as Linux
 *		describes it in /sys/devices/system/cpu/cpu0/cache/index*.
 *
 * The paper's C.  Read once in the postmaster, inherited by the backends.
 * mccdb.llc_size overrides the size, e.g. with the effective capacity a
 * single query sees on a shared machine (which can be far below sysfs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "cache_geometry.h"
#include "mccdb.h"

#define SYSFS_CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"

/* Used when neither sysfs nor sysconf know: a typical per-socket LLC. */
#define FALLBACK_LLC_BYTES (8 * 1024 * 1024)

static MccdbCacheGeometry geometry;

/* Read the first line of a sysfs file; false if it does not exist. */
static bool
read_sysfs_line(const char *dir, const char *name, char *buf, size_t len)
{
	char		path[MAXPGPATH];
	FILE	   *f;
	bool		ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* "32768K", "1M" or plain bytes, as sysfs writes cache sizes. */
static Size
parse_cache_size(const char *s)
{
	char	   *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return 0;
	if (*end == 'K')
		v *= 1024;
	else if (*end == 'M')
		v *= 1024 * 1024;
	return (Size) v;
}

/* Number of CPUs in a list like "0-1,4,6-7". */
static int
count_cpu_list(const char *s)
{
	int			n = 0;

	while (*s)
	{
		char	   *end;
		long		lo = strtol(s, &end, 10),
					hi = lo;

		if (end == s)
			break;
		if (*end == '-')
		{
			s = end + 1;
			hi = strtol(s, &end, 10);
		}
		n += (int) (hi - lo + 1);
		s = (*end == ',') ? end + 1 : end;
		if (*end != ',' && *end != '\0')
			break;
	}
	return n;
}

void
mccdb_cache_geometry_load(void)
{
	int			i;

	memset(&geometry, 0, sizeof(geometry));
	for (i = 0; i < 16; i++)
	{
		char		dir[MAXPGPATH];
		char		buf[256];
		int			level;
		Size		size;

		snprintf(dir, sizeof(dir), "%s/index%d", SYSFS_CACHE_DIR, i);
		if (!read_sysfs_line(dir, "level", buf, sizeof(buf)))
			continue;
		level = atoi(buf);
		if (read_sysfs_line(dir, "type", buf, sizeof(buf)) &&
			strcmp(buf, "Instruction") == 0)
			continue;
		if (!read_sysfs_line(dir, "size", buf, sizeof(buf)))
			continue;
		size = parse_cache_size(buf);
		if (size == 0 || level < geometry.level)
			continue;
		geometry.level = level;
		geometry.size = size;
		geometry.ways = read_sysfs_line(dir, "ways_of_associativity", buf, sizeof(buf)) ? atoi(buf) : 0;
		geometry.line_size = read_sysfs_line(dir, "coherency_line_size", buf, sizeof(buf)) ? atoi(buf) : 0;
		if (read_sysfs_line(dir, "shared_cpu_list", buf, sizeof(buf)))
		{
			strlcpy(geometry.shared_cpu_list, buf, sizeof(geometry.shared_cpu_list));
			geometry.shared_cpus = count_cpu_list(buf);
		}
		geometry.source = "sysfs";
	}

	if (geometry.size == 0)
	{
		long		v = -1;

#ifdef _SC_LEVEL3_CACHE_SIZE
		v = sysconf(_SC_LEVEL3_CACHE_SIZE);
		if (v > 0)
		{
			geometry.level = 3;
			geometry.size = (Size) v;
			geometry.source = "sysconf";
		}
#endif
		if (v <= 0)
		{
			geometry.size = FALLBACK_LLC_BYTES;
			geometry.source = "fallback";
			ereport(LOG,
					(errmsg("mccdb: could not read the last-level cache size from %s; assuming %d MB",
							SYSFS_CACHE_DIR, FALLBACK_LLC_BYTES / (1024 * 1024)),
					 errhint("Set mccdb.llc_size to the size of the last-level cache.")));
		}
	}
}

const MccdbCacheGeometry *
mccdb_cache_geometry(void)
{
	return &geometry;
}

Size
mccdb_llc_bytes(void)
{
	if (mccdb_llc_size_kb > 0)
		return (Size) mccdb_llc_size_kb * 1024;
	return geometry.size;
}
