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
 * Create (or reuse) the group root/group whose L3 schemata allow only the
 * lowest `ways` cache ways (at least info/L3/min_cbm_bits) in every domain.
 */
extern int	mccdb_resctrl_setup(const char *root, const char *group, int ways,
								char *err, size_t errlen);

/* Move a task into root/group, or back to the default group when group is NULL. */
extern int	mccdb_resctrl_move(const char *root, const char *group, pid_t pid,
							   char *err, size_t errlen);

#endif							/* MCCDB_RESCTRL_H */
