/*-------------------------------------------------------------------------
 *
 * server_cost.h
 *		The cost the gate judges a plan by, computed with the server's cost
 *		settings: never a number the session sets.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_SERVER_COST_H
#define MCCDB_SERVER_COST_H

#include "nodes/plannodes.h"

/*
 * The statements the gate judges by cost: queries and data-modifying
 * statements (an INSERT ... SELECT runs a query as long as any SELECT).
 */
static inline bool
mccdb_costed_command(CmdType command)
{
	return command == CMD_SELECT || command == CMD_INSERT || command == CMD_UPDATE ||
		command == CMD_DELETE || command == CMD_MERGE;
}

/* The planner hook that prices plans made under a session's own cost settings. */
extern void mccdb_server_cost_init(void);

/*
 * The plan's cost under the server's cost settings, without disable_cost:
 * false when it is not known (a plan made under the session's own cost
 * settings whose price this backend no longer remembers).  Call it where
 * the settings are those the plan is run with (the executor).
 */
extern bool mccdb_server_cost(PlannedStmt *plan, Cost *cost);

/*
 * Does a plan of that server cost reach a threshold?  A cost not known
 * does: a session must not slip under a threshold by pricing its own plan.
 */
static inline bool
mccdb_server_cost_reaches(bool cost_known, Cost cost, double threshold)
{
	return !cost_known || cost >= threshold;
}

#endif							/* MCCDB_SERVER_COST_H */
