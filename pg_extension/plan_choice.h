/*-------------------------------------------------------------------------
 *
 * plan_choice.h
 *		Cache-aware plan selection (MCC-DB sections 5.1 and 6.3).
 *
 *-------------------------------------------------------------------------
 */
#ifndef MCCDB_PLAN_CHOICE_H
#define MCCDB_PLAN_CHOICE_H

#include "locality.h"
#include "nodes/params.h"
#include "nodes/parsenodes.h"

typedef enum MccdbPlanPolicy
{
	MCCDB_PLAN_OFF,				/* PostgreSQL's own choice */
	MCCDB_PLAN_SLS,				/* strong, else weak, else moderate */
	MCCDB_PLAN_MLS				/* balance the two queues */
} MccdbPlanPolicy;

#define MCCDB_MAX_CANDIDATES 3

typedef struct MccdbCandidate
{
	const char *name;			/* "standard", "hash join", "index join" */
	PlannedStmt *plan;			/* NULL in the choice handed to the executor */
	Cost		cost;			/* without disable_cost */
	MccdbLocalityClass cls;
	double		bytes;
	bool		kept;			/* within mccdb.cost_slack of the cheapest */
} MccdbCandidate;

typedef struct MccdbPlanChoice
{
	PlannedStmt *chosen_plan;	/* NULL in the choice handed to the executor */
	int			chosen;			/* index into candidates */
	int			ncandidates;
	MccdbPlanPolicy policy;
	const char *reason;
	MccdbCandidate candidates[MCCDB_MAX_CANDIDATES];
} MccdbPlanChoice;

/* The GUCs mccdb.plan_policy, mccdb.cost_slack and the planner hook. */
extern void mccdb_plan_choice_init(void);
extern const char *mccdb_plan_policy_name(MccdbPlanPolicy policy);

/* Plan the query once per candidate kind and mark those within the slack. */
/* All candidates, or only the standard plan when it costs less than above_cost. */
extern void mccdb_generate_candidates(Query *parse, const char *query_string,
									  int cursorOptions, ParamListInfo boundParams,
									  double above_cost, MccdbPlanChoice *choice);

/*
 * The choice the planner made for this plan (or a copy of it: the plan
 * cache copies plans), copied into cxt; NULL if it made none.
 */
extern const MccdbPlanChoice *mccdb_plan_choice_of(PlannedStmt *plan, MemoryContext cxt);

#endif							/* MCCDB_PLAN_CHOICE_H */
