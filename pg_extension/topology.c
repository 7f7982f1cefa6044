/*-------------------------------------------------------------------------
 *
 * topology.c
 *		Find the last-level-cache (LLC) domains: the sets of online CPUs
 *		that share a last-level cache, as Linux describes them in
 *		/sys/devices/system/cpu (online, cpuN/cache/indexM/{level,type,
 *		size,shared_cpu_list}).
 *
 * A CPU's LLC is its highest cache level that holds data; CPUs whose LLCs
 * list the same CPUs form one domain.  Which cache is a CPU's LLC, and its
 * size, are read by libpagecolor (pagecolor_llc_index, pagecolor_parse_size),
 * which also reads cpu0's cache for cache_geometry.c and the pagecolor
 * command: one reader, one set of rules.  mccdb.cpu_topology_root points
 * both at another directory laid out the same way, so a test can supply any
 * machine; only roles that may read that setting see it in
 * mccdb_llc_domains.source.  When the description is missing or
 * contradicts itself, all online CPUs form one domain and the reason is
 * kept: the gate then behaves as it does on a machine with one LLC.
 *
 * Read once in the postmaster and inherited by the backends, or at the
 * first use in a backend of a server that does not preload mccdb.  The
 * view of the domains and their slots is the gate's (gate_sql.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "catalog/pg_authid_d.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pagecolor.h"
#include "topology.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"

/*
 * GUC: the directory laid out like /sys/devices/system/cpu (defined only
 * when mccdb is preloaded; the view reads the real one otherwise).
 */
#define SYSFS_CPU_DIR "/sys/devices/system/cpu"
static char *cpu_topology_root = NULL;

static MccdbTopology topology;
static bool topology_loaded = false;

bool
mccdb_parse_cpu_list(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s == ' ')
		s++;
	if (*s == '\0' || *s == '\n')
		return true;			/* the empty list */
	for (;;)
	{
		char	   *end;
		long		lo,
					hi;

		if (*s < '0' || *s > '9')
			goto bad;
		lo = hi = strtol(s, &end, 10);
		if (*end == '-')
		{
			s = end + 1;
			if (*s < '0' || *s > '9')
				goto bad;
			hi = strtol(s, &end, 10);
		}
		if (lo < 0 || hi < lo || hi >= CPU_SETSIZE)
			goto bad;
		for (long c = lo; c <= hi; c++)
			CPU_SET((int) c, set);
		if (*end == ',')
			s = end + 1;
		else if (*end == '\0' || (*end == '\n' && end[1] == '\0'))
			return true;
		else
			goto bad;
	}
bad:
	CPU_ZERO(set);
	return false;
}

char *
mccdb_format_cpu_list(const cpu_set_t *set)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int c = 0; c < CPU_SETSIZE; c++)
	{
		int			last = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		appendStringInfo(&buf, "%s%d", buf.len ? "," : "", c);
		if (last > c)
			appendStringInfo(&buf, "-%d", last);
		c = last;
	}
	return buf.data;
}

/*
 * The first line of root/rel into buf (without the newline); false when it
 * cannot be read.  Plain read(2): this runs in the postmaster too, before
 * anything that could throw.
 */
static bool
read_sysfs(const char *rel, char *buf, size_t size)
{
	char		path[MAXPGPATH];
	int			fd;
	ssize_t		n;

	snprintf(path, sizeof(path), "%s/%s", mccdb_cpu_sysfs_root(), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

/*
 * cpu's last-level cache: its level, size and the CPUs sharing it; false
 * with why when sysfs does not say.
 */
static bool
read_cpu_llc(int cpu, MccdbLlcDomain *d, char *why, size_t whysize)
{
	char		rel[64],
				dir[MAXPGPATH],
				buf[4096];
	int			best,
				best_level;
	long long	size;

	snprintf(dir, sizeof(dir), "%s/cpu%d/cache", mccdb_cpu_sysfs_root(), cpu);
	if (pagecolor_llc_index(dir, &best, &best_level) != 0)
	{
		snprintf(why, whysize, "cpu%d lists no data cache", cpu);
		return false;
	}
	snprintf(rel, sizeof(rel), "cpu%d/cache/index%d/shared_cpu_list", cpu, best);
	if (!read_sysfs(rel, buf, sizeof(buf)) || !mccdb_parse_cpu_list(buf, &d->cpus))
	{
		snprintf(why, whysize, "cpu%d/cache/index%d/shared_cpu_list is missing or not a CPU list",
				 cpu, best);
		return false;
	}
	d->level = best_level;
	snprintf(rel, sizeof(rel), "cpu%d/cache/index%d/size", cpu, best);
	d->size = read_sysfs(rel, buf, sizeof(buf)) && pagecolor_parse_size(buf, &size) == 0 ?
		(int64) size : 0;
	return true;
}

/*
 * All online CPUs as one domain, because of why; why_public says it without
 * the root directory (NULL: why names none).
 */
static void
one_domain(const cpu_set_t *online, const char *why, const char *why_public)
{
	MccdbLlcDomain *d = &topology.domains[0];

	memset(d, 0, sizeof(*d));
	d->cpus = *online;
	d->ncpus = CPU_COUNT(online);
	topology.ndomains = 1;
	snprintf(topology.source_full, sizeof(topology.source_full), "one domain: %s", why);
	snprintf(topology.source_public, sizeof(topology.source_public), "one domain: %s",
			 why_public ? why_public : why);
}

static void
load_topology(void)
{
	char		buf[4096],
				why[128];
	cpu_set_t	online,
				seen;

	memset(&topology, 0, sizeof(topology));
	if (!read_sysfs("online", buf, sizeof(buf)) || !mccdb_parse_cpu_list(buf, &online) ||
		CPU_COUNT(&online) == 0)
	{
		/* no description of the CPUs: the ones this process may use */
		if (sched_getaffinity(0, sizeof(online), &online) != 0)
		{
			CPU_ZERO(&online);
			CPU_SET(0, &online);
		}
		topology.ncpus = CPU_COUNT(&online);
		one_domain(&online, psprintf("%s/online is missing or not a CPU list",
									 mccdb_cpu_sysfs_root()),
				   "the list of online CPUs is missing or not a CPU list");
		return;
	}
	topology.ncpus = CPU_COUNT(&online);
	CPU_ZERO(&seen);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
	{
		MccdbLlcDomain d;
		cpu_set_t	overlap;

		if (!CPU_ISSET(cpu, &online) || CPU_ISSET(cpu, &seen))
			continue;
		memset(&d, 0, sizeof(d));
		if (!read_cpu_llc(cpu, &d, why, sizeof(why)))
		{
			one_domain(&online, why, NULL);
			return;
		}
		/* offline CPUs share the cache but run nothing */
		CPU_AND(&d.cpus, &d.cpus, &online);
		CPU_AND(&overlap, &d.cpus, &seen);
		if (!CPU_ISSET(cpu, &d.cpus) || CPU_COUNT(&overlap) > 0)
		{
			one_domain(&online, psprintf("cpu%d's last-level cache lists CPUs %s, which "
										 "contradicts the CPUs before it",
										 cpu, mccdb_format_cpu_list(&d.cpus)), NULL);
			return;
		}
		if (topology.ndomains == MCCDB_MAX_LLC_DOMAINS)
		{
			one_domain(&online, psprintf("more than %d last-level caches",
										 MCCDB_MAX_LLC_DOMAINS), NULL);
			return;
		}
		d.ncpus = CPU_COUNT(&d.cpus);
		CPU_OR(&seen, &seen, &d.cpus);
		topology.domains[topology.ndomains++] = d;
	}

	/*
	 * Every CPU of a domain must name the same CPUs: read the others too, so
	 * that a domain is never built from one CPU's word alone.
	 */
	for (int i = 0; i < topology.ndomains; i++)
	{
		for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		{
			MccdbLlcDomain other;

			if (!CPU_ISSET(cpu, &topology.domains[i].cpus))
				continue;
			memset(&other, 0, sizeof(other));
			if (!read_cpu_llc(cpu, &other, why, sizeof(why)))
			{
				one_domain(&online, why, NULL);
				return;
			}
			CPU_AND(&other.cpus, &other.cpus, &online);
			if (!CPU_EQUAL(&other.cpus, &topology.domains[i].cpus))
			{
				one_domain(&online, psprintf("cpu%d's last-level cache lists CPUs %s, "
											 "other CPUs of it %s",
											 cpu, mccdb_format_cpu_list(&other.cpus),
											 mccdb_format_cpu_list(&topology.domains[i].cpus)), NULL);
				return;
			}
		}
	}
	strlcpy(topology.source_full, "sysfs", sizeof(topology.source_full));
	strlcpy(topology.source_public, "sysfs", sizeof(topology.source_public));
}

void
mccdb_topology_init(void)
{
	DefineCustomStringVariable("mccdb.cpu_topology_root",
							   "Directory the CPUs' caches are read from: the last-level-cache domains and C.",
							   "Laid out like /sys/devices/system/cpu (online, cpuN/cache/indexM); "
							   "tests point it at a made-up machine.",
							   &cpu_topology_root,
							   SYSFS_CPU_DIR,
							   PGC_POSTMASTER, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	/* in the postmaster (shared_preload_libraries): the backends inherit it */
	(void) mccdb_topology();
}

const char *
mccdb_cpu_sysfs_root(void)
{
	return cpu_topology_root ? cpu_topology_root : SYSFS_CPU_DIR;
}

/*
 * Where the domains came from, as the current role may see it: the root
 * directory only for those who may read mccdb.cpu_topology_root
 * (GUC_SUPERUSER_ONLY: superusers and pg_read_all_settings, as SHOW).
 */
const char *
mccdb_topology_source(void)
{
	const MccdbTopology *t = mccdb_topology();

	if (has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS))
		return t->source_full;
	return t->source_public;
}

const MccdbTopology *
mccdb_topology(void)
{
	if (!topology_loaded)
	{
		load_topology();
		topology_loaded = true;
		if (strcmp(topology.source_full, "sysfs") != 0)
			ereport(LOG,
					(errmsg("mccdb: all %d online CPUs form one last-level-cache domain", topology.ncpus),
					 errdetail("%s.", topology.source_full)));
	}
	return &topology;
}

