/*-------------------------------------------------------------------------
 *
 * affinity.c
 *		A query's backend (and its parallel workers) run on the CPUs of
 *		the last-level-cache domain the gate placed it in.
 *
 * sched_setaffinity(2) on this process only, never on another: a backend
 * binds itself when admitted and gives back the CPUs it had when its entry
 * is released, on every path the gate releases on (end of statement,
 * ERROR, cancel, the statement's memory going away, backend exit).  The
 * CPUs bound to are the domain's that the process was allowed before, so
 * a cpuset or taskset the DBA set is never widened.  Nothing here throws:
 * it runs in error and exit paths.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sched.h>

#include "affinity.h"
#include "topology.h"

static bool bound = false;
static int	bound_domain = -1;
static cpu_set_t saved;

bool
mccdb_affinity_bind(int domain)
{
	const MccdbTopology *t = mccdb_topology();
	cpu_set_t	before,
				target;

	if (domain < 0 || domain >= t->ndomains)
	{
		errno = EINVAL;
		return false;
	}
	if (bound)
		mccdb_affinity_restore();
	if (sched_getaffinity(0, sizeof(before), &before) != 0)
		return false;
	CPU_AND(&target, &before, &t->domains[domain].cpus);
	if (CPU_COUNT(&target) == 0)
	{
		errno = ESRCH;			/* none of the domain's CPUs is ours */
		return false;
	}
	if (CPU_EQUAL(&target, &before))
	{
		/* already there (one domain, or a taskset): nothing to undo */
		bound_domain = domain;
		return true;
	}
	if (sched_setaffinity(0, sizeof(target), &target) != 0)
		return false;
	saved = before;
	bound = true;
	bound_domain = domain;
	return true;
}

void
mccdb_affinity_restore(void)
{
	bound_domain = -1;
	if (!bound)
		return;
	bound = false;
	/* can only fail if the CPUs went offline; the kernel then moved us already */
	(void) sched_setaffinity(0, sizeof(saved), &saved);
}

int
mccdb_affinity_domain(void)
{
	return bound_domain;
}
