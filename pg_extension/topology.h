/*-------------------------------------------------------------------------
 *
 * topology.h
 *		The machine's last-level-cache domains: which online CPUs share
 *		each LLC (an AMD core complex, an Intel socket or SNC cluster).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_TOPOLOGY_H
#define MCCDB_TOPOLOGY_H

#include <sched.h>

#define MCCDB_MAX_LLC_DOMAINS 256

typedef struct MccdbLlcDomain
{
	int			level;			/* cache level, e.g. 3; 0 if unknown */
	int64		size;			/* bytes; 0 if unknown */
	int			ncpus;			/* online CPUs in it */
	cpu_set_t	cpus;
} MccdbLlcDomain;

typedef struct MccdbTopology
{
	int			ndomains;		/* at least 1 */
	int			ncpus;			/* online CPUs */
	/* "sysfs", or why the fallback applies: use mccdb_topology_source() */
	char		source_full[160];	/* may name mccdb.cpu_topology_root's value */
	char		source_public[160]; /* the same without it */
	MccdbLlcDomain domains[MCCDB_MAX_LLC_DOMAINS];	/* by lowest CPU */
} MccdbTopology;

/* The GUC mccdb.cpu_topology_root; reads the topology in the postmaster. */
extern void mccdb_topology_init(void);

/* The topology (read at the first call in a backend that did not inherit it). */
extern const MccdbTopology *mccdb_topology(void);

/* Its source as the current role may see it (mccdb_llc_domains.source). */
extern const char *mccdb_topology_source(void);

/* mccdb.cpu_topology_root, or /sys/devices/system/cpu without the preload. */
extern const char *mccdb_cpu_sysfs_root(void);

/*
 * Parse a Linux CPU list ("0-3,8,10-11") into *set.  Returns false, with
 * nothing set, for anything else or a CPU beyond CPU_SETSIZE.
 */
extern bool mccdb_parse_cpu_list(const char *s, cpu_set_t *set);

/* The canonical list of *set ("0-3,8"), palloc'd. */
extern char *mccdb_format_cpu_list(const cpu_set_t *set);

#endif							/* MCCDB_TOPOLOGY_H */
