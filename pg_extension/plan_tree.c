/*-------------------------------------------------------------------------
 *
 * plan_tree.c
 *		The children of a plan node (see plan_tree.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "plan_tree.h"

static bool
walk_list(List *plans, bool (*walker) (Plan *child, void *context), void *context)
{
	ListCell   *lc;

	foreach(lc, plans)
		if (walker(lfirst(lc), context))
			return true;
	return false;
}

bool
mccdb_plan_children_walk(Plan *plan, bool (*walker) (Plan *child, void *context),
						 void *context)
{
	List	   *plans = NIL;

	switch (nodeTag(plan))
	{
		case T_Append:
			plans = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			plans = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_CustomScan:
			plans = ((CustomScan *) plan)->custom_plans;
			break;
		case T_SubqueryScan:
			if (walker(((SubqueryScan *) plan)->subplan, context))
				return true;
			break;
		default:
			break;
	}
	if (walk_list(plans, walker, context))
		return true;
	if (outerPlan(plan) != NULL && walker(outerPlan(plan), context))
		return true;
	return innerPlan(plan) != NULL && walker(innerPlan(plan), context);
}
