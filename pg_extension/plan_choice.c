/*-------------------------------------------------------------------------
 *
 * plan_choice.c
 *		Cache-aware plan selection (MCC-DB sections 5.1 and 6.3): plan a
 *		query several ways, keep the plans whose cost is within
 *		mccdb.cost_slack of the cheapest, and pick one by locality.
 *
 * Candidates differ in their physical joins: PostgreSQL's standard plan, a
 * hash-join plan (nested loops and merge joins disabled) and an
 * index-nested-loop plan (hash and merge joins, materialize and memoize
 * disabled).  A disabled method the planner still had to use costs
 * disable_cost per node before PostgreSQL 18; that is taken out of the
 * candidate's nodes (mccdb_strip_disable_cost) while the settings are still
 * in force, so a forced plan competes, and later runs, with its real cost.
 *
 * Policies (mccdb.plan_policy):
 *	sls		the cheapest strong candidate, else the cheapest weak one (it
 *			neither hurts nor is hurt by a weak co-runner), else moderate;
 *	mls		keep the two queues (strong/moderate, weak) balanced, counting the
 *			queries waiting and running now: choose from the shorter queue,
 *			with strong first when they are even; if that queue has no
 *			candidate, the cheapest plan;
 *	off		PostgreSQL's plan, untouched.
 * Whatever plan is chosen computes the same rows: only join methods differ.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "admission.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/planner.h"
#include "plan_choice.h"
#include "plan_key.h"
#include "state.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

static const struct config_enum_entry plan_policy_options[] = {
	{"off", MCCDB_PLAN_OFF, false},
	{"sls", MCCDB_PLAN_SLS, false},
	{"mls", MCCDB_PLAN_MLS, false},
	{NULL, 0, false}
};

/* GUCs */
static int	plan_policy = MCCDB_PLAN_OFF;
static double cost_slack = 0.30;
static double plan_choice_min_cost = 1000.0;
/* mccdb.plan_above_cost, its earlier name: when set (>= 0), it wins */
static double deprecated_plan_above_cost = -1.0;

static planner_hook_type prev_planner = NULL;

/* True while planning candidates: the inner planner calls pass straight through. */
static bool planning_candidates = false;

typedef struct CandidateKind
{
	const char *name;
	const char *disable[5];		/* enable_* GUCs turned off */
} CandidateKind;

static const CandidateKind candidate_kinds[MCCDB_MAX_CANDIDATES] = {
	{"standard", {NULL}},
	{"hash join", {"enable_nestloop", "enable_mergejoin", NULL}},
	{"index join", {"enable_hashjoin", "enable_mergejoin", "enable_material",
	"enable_memoize", NULL}},
};

static PlannedStmt *
next_planner(Query *parse, const char *query_string, int cursorOptions,
			 ParamListInfo boundParams)
{
	if (prev_planner)
		return prev_planner(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * Plan a copy of the query with some join methods disabled; its real cost.
 * A plan made with methods disabled loses their disable_cost: it is the
 * cost it has later too, when those settings are gone.
 */
static PlannedStmt *
plan_candidate(const CandidateKind *kind, Query *parse, const char *query_string,
			   int cursorOptions, ParamListInfo boundParams, Cost *cost)
{
	int			nestlevel = NewGUCNestLevel();
	PlannedStmt *plan;
	int			i;

	for (i = 0; kind->disable[i] != NULL; i++)
		(void) set_config_option(kind->disable[i], "off", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		plan = next_planner(copyObject(parse), query_string, cursorOptions,
							boundParams);
		/* while the settings that shaped it are in force */
		if (kind->disable[0] != NULL)
		{
			mccdb_strip_disable_cost(plan);
			*cost = plan->planTree->total_cost;
		}
		else
			*cost = mccdb_real_cost(plan);
	}
	PG_FINALLY();
	{
		AtEOXact_GUC(true, nestlevel);
	}
	PG_END_TRY();
	return plan;
}

void
mccdb_generate_candidates(Query *parse, const char *query_string,
						  int cursorOptions, ParamListInfo boundParams,
						  double above_cost, MccdbPlanChoice *choice)
{
	Cost		cheapest = 0;
	int			n = MCCDB_MAX_CANDIDATES;
	int			i;

	memset(choice, 0, sizeof(*choice));
	planning_candidates = true;
	PG_TRY();
	{
		for (i = 0; i < n; i++)
		{
			MccdbCandidate *c = &choice->candidates[i];
			MccdbLocality loc;

			c->name = candidate_kinds[i].name;
			c->plan = plan_candidate(&candidate_kinds[i], parse, query_string,
									 cursorOptions, boundParams, &c->cost);
			mccdb_estimate_locality(c->plan, &loc);
			c->cls = loc.cls;
			c->bytes = loc.bytes;
			if (i == 0 || c->cost < cheapest)
				cheapest = c->cost;
			/* a cheap query pays for its standard plan only (jit_above_cost) */
			if (i == 0 && c->cost < above_cost)
				n = 1;
		}
	}
	PG_FINALLY();
	{
		planning_candidates = false;
	}
	PG_END_TRY();

	choice->ncandidates = n;
	for (i = 0; i < choice->ncandidates; i++)
		choice->candidates[i].kept =
			choice->candidates[i].cost <= cheapest * (1.0 + cost_slack);
}

/* The cheapest kept candidate of a class (-1: any class), or -1. */
static int
cheapest_of(const MccdbPlanChoice *choice, int cls)
{
	int			best = -1;
	int			i;

	for (i = 0; i < choice->ncandidates; i++)
	{
		const MccdbCandidate *c = &choice->candidates[i];

		if (!c->kept || (cls >= 0 && (int) c->cls != cls))
			continue;
		/* ties go to the earlier kind: the standard plan first */
		if (best < 0 || c->cost < choice->candidates[best].cost)
			best = i;
	}
	return best;
}

static void
choose(MccdbPlanChoice *choice, MccdbPlanPolicy policy)
{
	int			pick = -1;

	choice->policy = policy;
	if (policy == MCCDB_PLAN_SLS)
	{
		if ((pick = cheapest_of(choice, MCCDB_STRONG)) >= 0)
			choice->reason = "strong first";
		else if ((pick = cheapest_of(choice, MCCDB_WEAK)) >= 0)
			choice->reason = "no strong candidate: weak";
		else if ((pick = cheapest_of(choice, MCCDB_MODERATE)) >= 0)
			choice->reason = "only moderate candidates";
	}
	else
	{
		int			strong_moderate,
					weak;

		mccdb_admission_queue_counts(&strong_moderate, &weak);
		if (weak < strong_moderate)
		{
			if ((pick = cheapest_of(choice, MCCDB_WEAK)) >= 0)
				choice->reason = "weak queue is shorter";
		}
		else
		{
			if ((pick = cheapest_of(choice, MCCDB_STRONG)) < 0)
				pick = cheapest_of(choice, MCCDB_MODERATE);
			if (pick >= 0)
				choice->reason = weak > strong_moderate ?
					"strong/moderate queue is shorter" : "queues even: strong first";
		}
	}
	if (pick < 0)
	{
		pick = cheapest_of(choice, -1);
		choice->reason = "no candidate of the wanted class: cheapest";
	}
	choice->chosen = pick;
	choice->chosen_plan = choice->candidates[pick].plan;
}

/*
 * Count the base relations anywhere in a query: its range table, the
 * subqueries of views and FROM, EXISTS and IN sublinks, CTEs.
 */
static bool
count_relations(Node *node, int *n)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		if (((RangeTblEntry *) node)->rtekind == RTE_RELATION)
			(*n)++;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, count_relations, n,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, count_relations, n);
}

/* Plan choice only matters with joins, wherever they are in the query. */
static bool
has_join(Query *parse)
{
	int			n = 0;

	(void) count_relations((Node *) parse, &n);
	return n >= 2;
}

/*
 * The standard plan's cost of queries this backend planned before, by
 * queryid.  A query that was below mccdb.plan_choice_min_cost last time is
 * planned once, as stock planning does, without the copy that candidate
 * planning needs (its cost is remembered again, so one that grew gets
 * candidates the next time).  Bounded: when full, new queries are not
 * remembered and pay for the copy.
 */
#define REMEMBERED_QUERIES 1024

/* A hash table of this backend's, for as long as it lives. */
static HTAB *
backend_hash(const char *name, Size keysize, Size entrysize)
{
	HASHCTL		info;

	info.keysize = keysize;
	info.entrysize = entrysize;
	info.hcxt = TopMemoryContext;
	return hash_create(name, 64, &info, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

typedef struct RememberedCost
{
	uint64		queryid;
	Cost		cost;
} RememberedCost;

static HTAB *remembered = NULL;

static bool
remembered_cost(uint64 queryid, Cost *cost)
{
	RememberedCost *r;

	if (remembered == NULL || queryid == 0)
		return false;
	r = hash_search(remembered, &queryid, HASH_FIND, NULL);
	if (r != NULL)
		*cost = r->cost;
	return r != NULL;
}

static void
remember_cost(uint64 queryid, Cost cost)
{
	RememberedCost *r;
	bool		found;

	if (queryid == 0)
		return;
	if (remembered == NULL)
		remembered = backend_hash("mccdb remembered plan costs", sizeof(uint64),
								  sizeof(RememberedCost));
	if (hash_get_num_entries(remembered) >= REMEMBERED_QUERIES &&
		hash_search(remembered, &queryid, HASH_FIND, NULL) == NULL)
		return;
	r = hash_search(remembered, &queryid, HASH_ENTER, &found);
	r->cost = cost;
}

/*
 * The choices made for the plans this backend returned, handed to the
 * executor (mccdb_plan_choice_of) by the plan's key (plan_key.h): the
 * executor runs a copy of the plan.  Bounded: the choice used longest ago
 * goes first; a plan whose choice went shows none in EXPLAIN and runs as
 * chosen all the same.
 */
#define REMEMBERED_CHOICES 256

static MccdbPlanMemo *choices = NULL;

static void
remember_choice(const MccdbPlanChoice *choice)
{
	MccdbPlanKey key = mccdb_plan_key(choice->chosen_plan);
	MccdbPlanChoice *kept;
	int			i;

	if (choices == NULL)
		choices = mccdb_plan_memo_create("mccdb plan choices", sizeof(MccdbPlanChoice),
										 REMEMBERED_CHOICES);
	kept = mccdb_plan_memo_enter(choices, &key);
	*kept = *choice;
	kept->chosen_plan = NULL;
	for (i = 0; i < MCCDB_MAX_CANDIDATES; i++)
		kept->candidates[i].plan = NULL;
}

/*
 * The planner made no choice for this plan: a choice made for the same
 * plan before is not this planning's (a plan the cache kept from then
 * shows none either).
 */
static void
forget_choice(PlannedStmt *plan)
{
	MccdbPlanKey key;

	if (choices == NULL || mccdb_plan_memo_empty(choices) ||
		plan->commandType != CMD_SELECT)
		return;
	key = mccdb_plan_key(plan);
	mccdb_plan_memo_forget(choices, &key);
}

/* The candidates the planner chose this plan from, if it did (copied into cxt). */
const MccdbPlanChoice *
mccdb_plan_choice_of(PlannedStmt *plan, MemoryContext cxt)
{
	MccdbPlanKey key;
	MccdbPlanChoice *kept;
	MccdbPlanChoice *copy;

	if (plan == NULL || plan->commandType != CMD_SELECT || choices == NULL ||
		mccdb_plan_memo_empty(choices))
		return NULL;
	key = mccdb_plan_key(plan);
	kept = mccdb_plan_memo_find(choices, &key);
	if (kept == NULL)
		return NULL;
	copy = MemoryContextAlloc(cxt, sizeof(MccdbPlanChoice));
	*copy = *kept;
	return copy;
}

/*
 * Plan choice is for the statements a client sends, and for what EXPLAIN
 * shows, wherever it runs: it plans its statement as a client's.
 */
static PlannedStmt *
mccdb_planner(Query *parse, const char *query_string, int cursorOptions,
			  ParamListInfo boundParams)
{
	MccdbPlanChoice choice;
	Cost		cost;
	double		min_cost = deprecated_plan_above_cost >= 0 ?
		deprecated_plan_above_cost : plan_choice_min_cost;

	PlannedStmt *plan;

	if (planning_candidates)
		return next_planner(parse, query_string, cursorOptions, boundParams);
	if (plan_policy == MCCDB_PLAN_OFF ||
		(mccdb_nesting_level() > 0 && !mccdb_planning_for_explain()) ||
		MyBackendType != B_BACKEND || creating_extension ||
		parse->commandType != CMD_SELECT || !has_join(parse))
	{
		plan = next_planner(parse, query_string, cursorOptions, boundParams);
		forget_choice(plan);
		return plan;
	}

	if (remembered_cost(parse->queryId, &cost) && cost < min_cost)
	{
		uint64		queryid = parse->queryId;

		plan = next_planner(parse, query_string, cursorOptions, boundParams);
		remember_cost(queryid, mccdb_real_cost(plan));
		forget_choice(plan);
		return plan;
	}
	mccdb_generate_candidates(parse, query_string, cursorOptions, boundParams,
							  min_cost, &choice);
	remember_cost(parse->queryId, choice.candidates[0].cost);
	if (choice.ncandidates == 1)
	{
		/* below mccdb.plan_choice_min_cost */
		forget_choice(choice.candidates[0].plan);
		return choice.candidates[0].plan;
	}
	choose(&choice, (MccdbPlanPolicy) plan_policy);
	remember_choice(&choice);
	return choice.chosen_plan;
}

const char *
mccdb_plan_policy_name(MccdbPlanPolicy policy)
{
	return plan_policy_options[policy].name;
}


void
mccdb_plan_choice_init(void)
{
	DefineCustomEnumVariable("mccdb.plan_policy",
							 "How the planner picks among candidate plans of similar cost.",
							 "sls: strong, else weak, else moderate locality; mls: keep the strong/moderate and weak queues balanced; off: PostgreSQL's plan.",
							 &plan_policy,
							 MCCDB_PLAN_OFF, plan_policy_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.plan_choice_min_cost",
							 "Queries whose standard plan costs less are not given candidate plans.",
							 "As jit_above_cost: cheap queries pay for one plan only.",
							 &plan_choice_min_cost,
							 1000.0, 0.0, 1e100,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	/*
	 * The earlier name, still accepted for one release (postgresql.conf,
	 * SET, ALTER ROLE ... SET): -1, the default, leaves the new setting in
	 * charge; any other value is used instead of it.
	 */
	DefineCustomRealVariable("mccdb.plan_above_cost",
							 "Deprecated name of mccdb.plan_choice_min_cost; when set (not -1) it is used instead.",
							 "Accepted until the next release; set mccdb.plan_choice_min_cost instead.",
							 &deprecated_plan_above_cost,
							 -1.0, -1.0, 1e100,
							 PGC_USERSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomRealVariable("mccdb.cost_slack",
							 "Candidate plans costing at most this fraction more than the cheapest are kept.",
							 "The MCC-DB paper uses 0.30.",
							 &cost_slack,
							 0.30, 0.0, 100.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	prev_planner = planner_hook;
	planner_hook = mccdb_planner;
}
