/*-------------------------------------------------------------------------
 *
 * affinity.h
 *		Bind this process to the CPUs of one last-level-cache domain for a
 *		query's run, and give it back the CPUs it had.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_AFFINITY_H
#define MCCDB_AFFINITY_H

/*
 * Bind to the online CPUs of domain d that this process may use.  False,
 * with nothing changed, when none of them is allowed (a cpuset, a made-up
 * topology) or the kernel refuses; errno then says why.  Never throws.
 */
extern bool mccdb_affinity_bind(int domain);

/* The CPUs the process had before mccdb_affinity_bind(); a no-op if unbound.  Never throws. */
extern void mccdb_affinity_restore(void);

/* The domain this process is bound to, or -1. */
extern int	mccdb_affinity_domain(void);

#endif							/* MCCDB_AFFINITY_H */
