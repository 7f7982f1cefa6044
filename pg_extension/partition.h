/*-------------------------------------------------------------------------
 *
 * partition.h
 *		Cache partitioning: page colours (kernel patch) or resctrl.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_PARTITION_H
#define MCCDB_PARTITION_H

#include "state.h"

typedef enum MccdbPartitionMode
{
	MCCDB_PARTITION_OFF,
	MCCDB_PARTITION_AUTO,		/* page colours if the kernel has them, else resctrl */
	MCCDB_PARTITION_COLORS,		/* page colours only */
	MCCDB_PARTITION_RESCTRL		/* resctrl only, even where page colours exist */
} MccdbPartitionMode;

/* The GUCs, and the start-up step that colours the buffer pool. */
extern void mccdb_partition_init(void);

/*
 * A top-level statement starts: give its backend its class's colours or
 * resctrl group.  They are given back when the statement's memory goes
 * away (ExecutorEnd, error, portal drop), in whatever order statements end.
 */
/* Would a top-level statement of this plan be given colours or a group? */
extern bool mccdb_partition_wants(PlannedStmt *plan);
extern void mccdb_partition_statement_start(MccdbStatement *st);

#endif							/* MCCDB_PARTITION_H */
