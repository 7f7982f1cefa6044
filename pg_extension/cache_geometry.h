/*-------------------------------------------------------------------------
 *
 * cache_geometry.h
 *		The last-level cache the locality classes are measured against.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_CACHE_GEOMETRY_H
#define MCCDB_CACHE_GEOMETRY_H

typedef struct MccdbCacheGeometry
{
	int			level;			/* cache level, e.g. 3; 0 if unknown */
	Size		size;			/* bytes */
	int			ways;			/* associativity; 0 if unknown */
	int			line_size;		/* bytes; 0 if unknown */
	int			shared_cpus;	/* CPUs sharing this cache; 0 if unknown */
	char		shared_cpu_list[64];	/* as sysfs prints it */
	const char *source;			/* where size came from */
} MccdbCacheGeometry;

/* The GUC mccdb.llc_size. */
extern void mccdb_cache_geometry_init(void);

/*
 * The largest cache level of cpu0 under mccdb.cpu_topology_root (read once,
 * in the postmaster when preloaded); size is what sysfs said, before any
 * GUC override.
 */
extern const MccdbCacheGeometry *mccdb_cache_geometry(void);

/* C of the paper: mccdb.llc_size when set, else the detected size. */
extern Size mccdb_llc_bytes(void);

#endif							/* MCCDB_CACHE_GEOMETRY_H */
