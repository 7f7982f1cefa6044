/*-------------------------------------------------------------------------
 *
 * explain.c
 *		Show a plan's locality in EXPLAIN, in every output format.
 *
 * PostgreSQL 18 lets an extension add to each plan's output
 * (explain_per_plan_hook, called before the executor shuts the plan down)
 * and register EXPLAIN options: EXPLAIN (MCCDB) shows mccdb's lines,
 * EXPLAIN (MCCDB false) hides them, and without the option the GUC
 * mccdb.explain decides (off by default: loading the library leaves
 * EXPLAIN as it was).  EXPLAIN EXECUTE of a prepared statement goes
 * through the same hook, so it shows them too.
 *
 * What the lines say is repeatable: a plain EXPLAIN estimates from the plan
 * alone, so it says the same whoever ran the query before.  VERBOSE and
 * ANALYZE show the estimate the gate uses, where the sizes of the query's
 * last run replace the planner's (table_sizes.c), and each table's learned
 * and planner sizes beside it.
 *
 * Before 18 there is no such hook, but ExplainOnePlan() calls ExecutorEnd()
 * while the "Query" group is still open.  So the ExplainOneQuery hook
 * remembers the ExplainState and the plan being explained, and the
 * ExecutorEnd hook of that very plan adds the properties there: valid
 * JSON, XML and YAML, a line in text.  EXPLAIN EXECUTE does not pass
 * through the ExplainOneQuery hook, so there it shows nothing
 * (mccdb_locality() still works), and there is no MCCDB option.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "compat.h"
#include "executor/instrument.h"
#include "locality.h"
#include "mccdb_explain.h"
#include "optimizer/optimizer.h"
#include "plan_choice.h"
#include "state.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "work_memory.h"

/* GUC */
static bool explain_locality = false;

static ExplainOneQuery_hook_type prev_ExplainOneQuery = NULL;

#if MCCDB_HAVE_EXPLAIN_HOOKS
static explain_per_plan_hook_type prev_explain_per_plan = NULL;
static int	explain_extension_id = -1;
#else
/* The EXPLAIN in progress, if any; reset on error by PG_FINALLY. */
static ExplainState *current_es = NULL;
static PlannedStmt *current_plan = NULL;
#endif

/* Plan as EXPLAIN does. */
static void
explain_one_query(Query *query, int cursorOptions, IntoClause *into,
				  ExplainState *es, const char *queryString,
				  ParamListInfo params, QueryEnvironment *queryEnv)
{
#if MCCDB_HAVE_EXPLAIN_HOOKS
	standard_ExplainOneQuery(query, cursorOptions, into, es, queryString,
							 params, queryEnv);
#else
	/* the standard planning step of ExplainOneQuery(), static before 18 */
	PlannedStmt *plan;
	instr_time	planstart,
				planduration;
	BufferUsage bufusage_start,
				bufusage;

	if (es->buffers)
		bufusage_start = pgBufferUsage;
	INSTR_TIME_SET_CURRENT(planstart);

	plan = pg_plan_query(query, queryString, cursorOptions, params);

	INSTR_TIME_SET_CURRENT(planduration);
	INSTR_TIME_SUBTRACT(planduration, planstart);
	if (es->buffers)
	{
		memset(&bufusage, 0, sizeof(BufferUsage));
		BufferUsageAccumDiff(&bufusage, &pgBufferUsage, &bufusage_start);
	}

	current_plan = plan;
	mccdb_explain_one_plan(plan, into, es, queryString, params, queryEnv,
						   &planduration, (es->buffers ? &bufusage : NULL));
#endif
}

/* The next ExplainOneQuery hook, or ours. */
static void
call_explain_one_query(Query *query, int cursorOptions, IntoClause *into,
					   ExplainState *es, const char *queryString,
					   ParamListInfo params, QueryEnvironment *queryEnv)
{
	if (prev_ExplainOneQuery)
		prev_ExplainOneQuery(query, cursorOptions, into, es, queryString,
							 params, queryEnv);
	else
		explain_one_query(query, cursorOptions, into, es, queryString,
						  params, queryEnv);
}

static void
mccdb_ExplainOneQuery(Query *query, int cursorOptions, IntoClause *into,
					  ExplainState *es, const char *queryString,
					  ParamListInfo params, QueryEnvironment *queryEnv)
{
#if MCCDB_HAVE_EXPLAIN_HOOKS
	call_explain_one_query(query, cursorOptions, into, es, queryString,
						   params, queryEnv);
#else
	ExplainState *saved_es = current_es;
	PlannedStmt *saved_plan = current_plan;

	current_es = explain_locality ? es : NULL;
	current_plan = NULL;
	PG_TRY();
	{
		call_explain_one_query(query, cursorOptions, into, es, queryString,
							   params, queryEnv);
	}
	PG_FINALLY();
	{
		current_es = saved_es;
		current_plan = saved_plan;
	}
	PG_END_TRY();
#endif
}

#if MCCDB_HAVE_EXPLAIN_HOOKS
static void explain_statement(MccdbStatement *st, ExplainState *es);

/* The locality (and, under ANALYZE, the actual sizes) of an explained statement. */
typedef struct EstimateArgs
{
	MccdbStatement *st;
	bool		analyze;
} EstimateArgs;

static void
estimate_statement(void *arg)
{
	EstimateArgs *a = arg;

	/* a plain EXPLAIN estimates from the plan alone: explained_locality() */
	if (a->analyze)
	{
		MccdbLocality *loc = mccdb_statement_locality(a->st);
		MemoryContext old = MemoryContextSwitchTo(a->st->cxt);

		mccdb_measure_tables(a->st->queryDesc->planstate, loc);
		MemoryContextSwitchTo(old);
	}
}

/* EXPLAIN (MCCDB [boolean]): what this EXPLAIN shows, kept in its state. */
static void
explain_option_mccdb(ExplainState *es, DefElem *opt, ParseState *pstate)
{
	bool	   *show = GetExplainExtensionState(es, explain_extension_id);

	if (show == NULL)
	{
		show = palloc(sizeof(bool));
		SetExplainExtensionState(es, explain_extension_id, show);
	}
	*show = defGetBoolean(opt);
}

/*
 * After the plan is printed, before the executor shuts it down: the
 * statement is still there, with its hash tables if EXPLAIN ANALYZE ran it.
 */
static void
mccdb_explain_per_plan(PlannedStmt *plannedstmt, IntoClause *into,
					   ExplainState *es, const char *queryString,
					   ParamListInfo params, QueryEnvironment *queryEnv)
{
	bool	   *show = GetExplainExtensionState(es, explain_extension_id);
	MccdbStatement *st;
	EstimateArgs args;

	if (prev_explain_per_plan)
		prev_explain_per_plan(plannedstmt, into, es, queryString, params, queryEnv);
	if (!(show ? *show : explain_locality))
		return;
	st = mccdb_statement_find_plan(plannedstmt);
	if (st == NULL)
		return;
	/* a failed estimate is a WARNING, the EXPLAIN goes on without it */
	args.st = st;
	args.analyze = es->analyze;
	if (mccdb_estimate_guarded(estimate_statement, &args))
		explain_statement(st, es);
}
#endif

void
mccdb_explain_init(void)
{
	DefineCustomBoolVariable("mccdb.explain",
							 "Shows the locality estimate in EXPLAIN output.",
							 MCCDB_HAVE_EXPLAIN_HOOKS ?
							 "EXPLAIN (MCCDB) and (MCCDB false) override it for one statement. "
							 "Learned sizes are shown only with VERBOSE or ANALYZE." :
							 "Learned sizes are shown only with VERBOSE or ANALYZE.",
							 &explain_locality,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	prev_ExplainOneQuery = ExplainOneQuery_hook;
	ExplainOneQuery_hook = mccdb_ExplainOneQuery;
#if MCCDB_HAVE_EXPLAIN_HOOKS
	explain_extension_id = GetExplainExtensionId("mccdb");
	RegisterExtensionExplainOption("mccdb", explain_option_mccdb);
	prev_explain_per_plan = explain_per_plan_hook;
	explain_per_plan_hook = mccdb_explain_per_plan;
#endif
}

/* "on part" / "on a join result" for text output. */
static const char *
table_label(const MccdbTable *t)
{
	if (t->relation)
		return psprintf("%s on %s", mccdb_table_kind_name(t->kind, true), t->relation);
	return psprintf("%s (node %d)", mccdb_table_kind_name(t->kind, true), t->plan_node_id);
}

/* "chosen", "kept", or "rejected: 45% dearer than the cheapest" */
static const char *
candidate_verdict(const MccdbPlanChoice *pc, int i)
{
	Cost		cheapest = pc->candidates[0].cost;
	int			j;

	if (i == pc->chosen)
		return "chosen";
	if (pc->candidates[i].kept)
		return "kept";
	for (j = 1; j < pc->ncandidates; j++)
		cheapest = Min(cheapest, pc->candidates[j].cost);
	return psprintf("rejected: %.0f%% dearer than the cheapest",
					100.0 * (pc->candidates[i].cost - cheapest) / Max(cheapest, 1e-9));
}

static void
explain_choice_text(const MccdbPlanChoice *pc, ExplainState *es)
{
	int			i;

	ExplainPropertyText("MCC-DB Plan Choice",
						psprintf("%s by %s (%s)", pc->candidates[pc->chosen].name,
								 mccdb_plan_policy_name(pc->policy), pc->reason), es);
	for (i = 0; i < pc->ncandidates; i++)
	{
		const MccdbCandidate *c = &pc->candidates[i];

		ExplainPropertyText(psprintf("MCC-DB Candidate %s", c->name),
							psprintf("cost %.2f, %s (%s), %s", c->cost,
									 mccdb_locality_class_name(c->cls),
									 mccdb_format_bytes(c->bytes),
									 candidate_verdict(pc, i)), es);
	}
}

static void
explain_choice_structured(const MccdbPlanChoice *pc, ExplainState *es)
{
	int			i;

	ExplainOpenGroup("Plan Choice", "Plan Choice", true, es);
	ExplainPropertyText("Policy", mccdb_plan_policy_name(pc->policy), es);
	ExplainPropertyText("Chosen", pc->candidates[pc->chosen].name, es);
	ExplainPropertyText("Reason", pc->reason, es);
	ExplainOpenGroup("Candidates", "Candidates", false, es);
	for (i = 0; i < pc->ncandidates; i++)
	{
		const MccdbCandidate *c = &pc->candidates[i];

		ExplainOpenGroup("Candidate", NULL, true, es);
		ExplainPropertyText("Name", c->name, es);
		ExplainPropertyFloat("Cost", NULL, c->cost, 2, es);
		ExplainPropertyText("Locality", mccdb_locality_class_name(c->cls), es);
		ExplainPropertyInteger("Hash Table Bytes", NULL, mccdb_double_to_int64(c->bytes), es);
		ExplainPropertyBool("Kept", c->kept, es);
		ExplainCloseGroup("Candidate", NULL, true, es);
	}
	ExplainCloseGroup("Candidates", "Candidates", false, es);
	ExplainCloseGroup("Plan Choice", "Plan Choice", true, es);
}

static void
explain_text(const MccdbLocality *loc, double work_memory, ExplainState *es)
{
	ListCell   *lc;

	ExplainPropertyText("MCC-DB Locality", mccdb_locality_describe(loc), es);
	if (!es->analyze && !es->verbose)
		return;
	ExplainPropertyText("MCC-DB Working Memory",
						psprintf("estimated %s", mccdb_format_bytes(work_memory)), es);
	foreach(lc, loc->tables)
	{
		MccdbTable *t = lfirst(lc);
		char	   *line;

		if (t->learned)
			line = psprintf("learned %s (planner %s)%s", mccdb_format_bytes(t->bytes),
							mccdb_format_bytes(t->planner_bytes),
							t->counted ? "" : " (not counted)");
		else
			line = psprintf("estimated %s%s", mccdb_format_bytes(t->bytes),
							t->counted ? "" : " (not counted)");
		if (es->analyze && t->actual_bytes >= 0)
			line = psprintf("%s, actual %s (%+.1f%%)", line,
							mccdb_format_bytes(t->actual_bytes),
							t->actual_bytes > 0 ?
							100.0 * (t->bytes - t->actual_bytes) / t->actual_bytes : 0.0);
		ExplainPropertyText(psprintf("MCC-DB %s", table_label(t)), line, es);
	}
}

static void
explain_structured(const MccdbLocality *loc, double work_memory,
				   const MccdbPlanChoice *pc, ExplainState *es)
{
	ListCell   *lc;

	ExplainOpenGroup("MCC-DB", "MCC-DB", true, es);
	ExplainPropertyText("Locality", mccdb_locality_class_name(loc->cls), es);
	ExplainPropertyText("Basis", loc->basis, es);
	ExplainPropertyInteger("Hash Table Bytes", NULL, mccdb_double_to_int64(loc->bytes), es);
	ExplainPropertyInteger("LLC Bytes", NULL, mccdb_double_to_int64(loc->llc_bytes), es);
	ExplainPropertyInteger("Working Memory Bytes", NULL, mccdb_double_to_int64(work_memory), es);
	if (pc)
		explain_choice_structured(pc, es);
	if (loc->tables == NIL)
	{
		ExplainCloseGroup("MCC-DB", "MCC-DB", true, es);
		return;
	}
	ExplainOpenGroup("Tables", "Tables", false, es);
	foreach(lc, loc->tables)
	{
		MccdbTable *t = lfirst(lc);

		ExplainOpenGroup("Table", NULL, true, es);
		ExplainPropertyText("Kind", mccdb_table_kind_name(t->kind, true), es);
		ExplainPropertyInteger("Plan Node", NULL, t->plan_node_id, es);
		if (t->relation)
			ExplainPropertyText("Relation", t->relation, es);
		ExplainPropertyBool("Counted", t->counted, es);
		ExplainPropertyFloat("Estimated Rows", NULL, t->rows, 0, es);
		ExplainPropertyInteger("Estimated Width", NULL, t->width, es);
		ExplainPropertyInteger("Estimated Bytes", NULL, mccdb_double_to_int64(t->bytes), es);
		ExplainPropertyText("Size Source", t->learned ? "learned" : "planner", es);
		if (t->learned)
			ExplainPropertyInteger("Planner Bytes", NULL, mccdb_double_to_int64(t->planner_bytes), es);
		if (es->analyze && t->actual_rows >= 0)
			ExplainPropertyFloat("Actual Rows", NULL, t->actual_rows, 0, es);
		if (es->analyze && t->actual_bytes >= 0)
			ExplainPropertyInteger("Actual Bytes", NULL, mccdb_double_to_int64(t->actual_bytes), es);
		ExplainCloseGroup("Table", NULL, true, es);
	}
	ExplainCloseGroup("Tables", "Tables", false, es);
	ExplainCloseGroup("MCC-DB", "MCC-DB", true, es);
}

/*
 * The locality EXPLAIN shows.  VERBOSE and ANALYZE: the statement's, as the
 * gate sees it, with the sizes learned from the query's last run.  Plain
 * EXPLAIN: the plan's alone, estimated without a queryid (table_sizes.c
 * learns and finds nothing for queryid 0), so that it does not depend on
 * who ran the query before.
 */
static MccdbLocality *
explained_locality(MccdbStatement *st, ExplainState *es)
{
	PlannedStmt plan_only;
	MccdbLocality *loc;

	if (es->analyze || es->verbose)
		return mccdb_statement_locality(st);
	plan_only = *st->queryDesc->plannedstmt;
	plan_only.queryId = UINT64CONST(0);
	loc = palloc0(sizeof(MccdbLocality));
	mccdb_estimate_locality(&plan_only, loc);
	return loc;
}

/*
 * The statement's locality, working memory (as the gate counts it, from
 * the same locality) and candidates, in the EXPLAIN's format.
 */
static void
explain_statement(MccdbStatement *st, ExplainState *es)
{
	const MccdbPlanChoice *pc = st->plan_choice;
	MccdbLocality *loc = explained_locality(st, es);
	double		work_memory = loc == &st->locality ? mccdb_statement_work_memory(st) :
		mccdb_work_memory_bytes(st->queryDesc->plannedstmt, loc, NIL);

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		explain_text(loc, work_memory, es);
		if (pc)
			explain_choice_text(pc, es);
	}
	else
		explain_structured(loc, work_memory, pc, es);
}

/*
 * Called from the ExecutorEnd hook with the statement's locality (and the
 * actual sizes when it ran): print it if this is the plan EXPLAIN shows
 * (before 18; on 18 the per-plan hook has printed it).
 */
void
mccdb_explain_statement_end(MccdbStatement *st)
{
#if !MCCDB_HAVE_EXPLAIN_HOOKS
	if (current_es == NULL || st->queryDesc->plannedstmt != current_plan)
		return;
	explain_statement(st, current_es);
	current_es = NULL;			/* once per EXPLAIN */
#endif
}

/*
 * Is this the plan an EXPLAIN in progress shows?  Before 18 it is printed
 * at ExecutorEnd; on 18 explain_per_plan_hook finds its state, whichever
 * EXPLAIN runs at this level (its MCCDB option is read there).
 */
bool
mccdb_explain_wants(QueryDesc *queryDesc)
{
#if MCCDB_HAVE_EXPLAIN_HOOKS
	return mccdb_planning_for_explain();
#else
	return current_es != NULL && queryDesc->plannedstmt == current_plan;
#endif
}
