/*-------------------------------------------------------------------------
 *
 * plan_tree.h
 *		The children of a plan node, for every walk of a plan tree.
 *
 * Each walk of a plan (the locality estimate, the gate's worker count, a
 * plan's key) used to list the nodes with children of their own by hand,
 * and the lists drifted apart (one followed a CustomScan's children, the
 * next did not).  They share this one, as planstate_tree_walker serves the
 * executor's walks of a PlanState tree.
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_PLAN_TREE_H
#define MCCDB_PLAN_TREE_H

#include "nodes/plannodes.h"

/*
 * Call walker(child, context) for each child of plan, in plan order: the
 * plans of an Append, MergeAppend, SubqueryScan or CustomScan, then the
 * outer and the inner plan.  A walker that returns true stops the walk,
 * and so does this, returning true.  Not the statement's subplans: they
 * are in the PlannedStmt.  No memory is allocated.
 */
extern bool mccdb_plan_children_walk(Plan *plan, bool (*walker) (Plan *child, void *context),
									 void *context);

#endif							/* MCCDB_PLAN_TREE_H */
