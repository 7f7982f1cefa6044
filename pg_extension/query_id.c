/*-------------------------------------------------------------------------
 *
 * query_id.c
 *		Query identifiers for the statements mccdb can learn from.
 *
 * What mccdb learns is keyed by query identifier: hash table sizes, run
 * times for the gate's predictions, mccdb_query_stats, the queryid of
 * mccdb_recent_queries.  Enabling identifiers for every statement, as
 * pg_stat_statements does with EnableQueryId(), makes PostgreSQL jumble
 * each point lookup too: about 2,400 instructions of the 109,000 one costs
 * (docs/results/oltp-instructions.md), for an id nothing reads.
 *
 * So mccdb computes the identifier itself, after parse analysis, for the
 * statements that can have something to learn, and only where PostgreSQL
 * has not (compute_query_id = on, or another module enabled ids).  The id
 * is PostgreSQL's own, the one pg_stat_statements shows.  A statement that
 * reads or writes one table or materialized view, with no join, grouping,
 * aggregate, DISTINCT, window, set operation, sublink, CTE or set-returning
 * function in its target list, gets none: it builds no hash table, and the
 * planner's estimate of it is the least wrong of any, so the gate prices
 * it by its cost.  mccdb.track_min_cost = 0 asks to record every statement,
 * and then every one gets an id.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "parser/analyze.h"

#include "compat.h"
#include "query_id.h"
#include "recent.h"

static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;

/*
 * Compares on the analysed tree, before the rewriter: a view is still one
 * RTE here, so it counts as what it may expand to.  What the rewriter adds
 * is not seen: a row-level security policy's sublink (a hashed SubPlan)
 * leaves a one-table statement without an id, and its hash table is then
 * estimated, never learned.
 */
static bool
statement_learnable(const Query *query)
{
	const RangeTblEntry *rte;

	if (list_length(query->rtable) != 1)
		return true;
	rte = linitial_node(RangeTblEntry, query->rtable);
	if (rte->rtekind != RTE_RELATION ||
		(rte->relkind != RELKIND_RELATION &&
		 rte->relkind != RELKIND_PARTITIONED_TABLE &&
		 rte->relkind != RELKIND_MATVIEW))
		return true;
	return query->hasAggs || query->hasWindowFuncs || query->hasTargetSRFs ||
		query->hasSubLinks || query->hasRecursive || query->cteList != NIL ||
		query->groupClause != NIL || query->groupingSets != NIL ||
		query->distinctClause != NIL || query->setOperations != NULL;
}

/*
 * JumbleQuery() asserts that identifiers are enabled; for this statement
 * they are, so they are for the length of the call.
 */
static JumbleState *
identify_statement(ParseState *pstate, Query *query)
{
	bool		was_enabled = query_id_enabled;
	JumbleState *volatile jstate = NULL;

	query_id_enabled = true;
	PG_TRY();
	{
		jstate = mccdb_jumble_query(query, pstate->p_sourcetext);
	}
	PG_FINALLY();
	{
		query_id_enabled = was_enabled;
	}
	PG_END_TRY();
	return jstate;
}

static void
mccdb_post_parse_analyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (query->queryId == UINT64CONST(0) && query->commandType != CMD_UTILITY &&
		compute_query_id != COMPUTE_QUERY_ID_OFF &&
		(statement_learnable(query) || mccdb_recent_records_every_cost()))
		jstate = identify_statement(pstate, query);

	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);
}

void
mccdb_query_id_init(void)
{
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = mccdb_post_parse_analyze;
}
