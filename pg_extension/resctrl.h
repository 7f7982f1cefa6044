/*-------------------------------------------------------------------------
 *
 * resctrl.h
 *		Hardware cache allocation through Linux resctrl (Intel CAT, AMD L3
 *		QoS): a resource group with few L3 ways for weak-locality plans.
 *
 * Plain C on a directory path, no PostgreSQL calls, so it is unit-tested
 * against a directory laid out like /sys/fs/resctrl (test/resctrl/).
 * Functions return 0, or -1 with a message in err.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_RESCTRL_H
#define MCCDB_RESCTRL_H

#include <stddef.h>
#include <sys/types.h>

/* Is root a mounted resctrl with L3 allocation (info/L3/cbm_mask, schemata)? */
extern int	mccdb_resctrl_available(const char *root);

/*
 * Create (or reuse) the group root/group for weak plans.  It inherits every
 * schemata line of root/parent (the group the postmaster runs in; "" or
 * NULL: the default group), memory bandwidth included, but its L3 line,
 * which allows only the lowest `ways` (at least info/L3/min_cbm_bits) of
 * the parent's ways in every domain: never more of anything than the
 * parent has.
 */
extern int	mccdb_resctrl_setup(const char *root, const char *group, int ways,
								const char *parent, char *err, size_t errlen);

/*
 * The group task pid is in, as a path under root: "" for the default
 * group, "NAME", or "NAME/mon_groups/MON" (also "mon_groups/MON") when it
 * is in a monitoring group.  The group named skip is not looked in (the
 * weak group, where a tree laid out like resctrl may still list a task
 * that left it).
 */
extern int	mccdb_resctrl_group_of(const char *root, pid_t pid, const char *skip,
								   char *group, size_t len, char *err, size_t errlen);

/* Move a task into root/group; "" or NULL is the default group. */
extern int	mccdb_resctrl_move(const char *root, const char *group, pid_t pid,
							   char *err, size_t errlen);

#endif							/* MCCDB_RESCTRL_H */
