/*-------------------------------------------------------------------------
 *
 * partition.h
 *		Cache partitioning: page colours (kernel patch) or resctrl.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_PARTITION_H
#define MCCDB_PARTITION_H

#include "nodes/plannodes.h"

typedef enum MccdbPartitionMode
{
	MCCDB_PARTITION_OFF,
	MCCDB_PARTITION_AUTO		/* page colours if the kernel has them, else resctrl */
} MccdbPartitionMode;

/* In the postmaster, once the buffer pool exists and before it is touched. */
extern void mccdb_partition_startup(void);

/* Around a top-level query: give its private memory the colours its class gets. */
extern void mccdb_partition_query_start(PlannedStmt *stmt);
extern void mccdb_partition_query_end(void);

#endif							/* MCCDB_PARTITION_H */
