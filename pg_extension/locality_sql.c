/*-------------------------------------------------------------------------
 *
 * locality_sql.c
 *		SQL functions: the locality of a query given as text, its hash
 *		tables, and the cache geometry in use.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "cache_geometry.h"
#include "compat.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "locality.h"
#include "state.h"
#include "plan_choice.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(mccdb_check_preload);
PG_FUNCTION_INFO_V1(mccdb_locality);
PG_FUNCTION_INFO_V1(mccdb_plan_tables);
PG_FUNCTION_INFO_V1(mccdb_cache_geometry_info);
PG_FUNCTION_INFO_V1(mccdb_plan_candidates);

/* Called by the extension script so CREATE EXTENSION fails without the preload. */
Datum
mccdb_check_preload(PG_FUNCTION_ARGS)
{
	mccdb_require_preload();
	PG_RETURN_VOID();
}

/* Point syntax error positions into the query text, as SPI does. */
static void
query_text_error_callback(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
	errcontext("query text passed to a mccdb function");
}

/* Parse and analyze one SELECT/DML statement given as text. */
static Query *
analyze_query_text(const char *sql)
{
	List	   *raw = pg_parse_query(sql);
	List	   *queries;
	Query	   *query;

	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query text must contain exactly one statement, not %d",
						list_length(raw))));
	queries = pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, raw),
												 sql, NULL, 0, NULL);
	if (list_length(queries) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("statement is rewritten into %d queries; only one can be estimated",
						list_length(queries))));
	query = linitial_node(Query, queries);
	if (query->commandType == CMD_UTILITY)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot estimate the locality of a utility statement"),
				 errhint("Pass a SELECT, INSERT, UPDATE, DELETE or MERGE statement.")));
	return query;
}

static void
push_error_context(ErrorContextCallback *errcb, const char *sql)
{
	errcb->callback = query_text_error_callback;
	errcb->arg = unconstify(char *, sql);
	errcb->previous = error_context_stack;
	error_context_stack = errcb;
}

/*
 * Plan one statement as EXPLAIN would, with the caller's privileges checked
 * as EXPLAIN checks them (row estimates are not for everyone's eyes).
 */
static PlannedStmt *
plan_query_text(const char *sql)
{
	ErrorContextCallback errcb;
	PlannedStmt *stmt;

	push_error_context(&errcb, sql);
	stmt = pg_plan_query(analyze_query_text(sql), sql, CURSOR_OPT_PARALLEL_OK, NULL);
	mccdb_check_plan_permissions(stmt);
	error_context_stack = errcb.previous;
	return stmt;
}

Datum
mccdb_locality(PG_FUNCTION_ARGS)
{
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TupleDesc	tupdesc;
	MccdbLocality loc;
	Datum		values[5];
	bool		nulls[5] = {0};

	mccdb_require_preload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	mccdb_estimate_locality(plan_query_text(sql), &loc);
	values[0] = CStringGetTextDatum(mccdb_locality_class_name(loc.cls));
	values[1] = Int64GetDatum(mccdb_double_to_int64(loc.bytes));
	values[2] = Int64GetDatum(mccdb_double_to_int64(loc.llc_bytes));
	values[3] = CStringGetTextDatum(loc.basis);
	values[4] = CStringGetTextDatum(mccdb_locality_describe(&loc));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
mccdb_plan_tables(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MccdbLocality loc;
	ListCell   *lc;

	mccdb_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	mccdb_estimate_locality(plan_query_text(sql), &loc);
	foreach(lc, loc.tables)
	{
		MccdbTable *t = lfirst(lc);
		Datum		values[9];
		bool		nulls[9] = {0};

		values[0] = Int32GetDatum(t->plan_node_id);
		values[1] = CStringGetTextDatum(mccdb_table_kind_name(t->kind, false));
		values[2] = t->relation ? CStringGetTextDatum(t->relation) : (Datum) 0;
		nulls[2] = (t->relation == NULL);
		values[3] = BoolGetDatum(t->counted);
		values[4] = Float8GetDatum(t->rows);
		values[5] = Int32GetDatum(t->width);
		values[6] = Int32GetDatum(t->nbuckets);
		nulls[6] = (t->kind != MCCDB_HASH_JOIN);
		values[7] = Int32GetDatum(t->nbatch);
		nulls[7] = (t->kind != MCCDB_HASH_JOIN);
		values[8] = Int64GetDatum(mccdb_double_to_int64(t->bytes));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
mccdb_cache_geometry_info(PG_FUNCTION_ARGS)
{
	const MccdbCacheGeometry *g = mccdb_cache_geometry();
	TupleDesc	tupdesc;
	Datum		values[9];
	bool		nulls[9] = {0};
	long		page = sysconf(_SC_PAGESIZE);

	mccdb_require_preload();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = Int32GetDatum(g->level);
	values[1] = Int64GetDatum((int64) g->size);
	values[2] = Int32GetDatum(g->ways);
	nulls[2] = (g->ways == 0);
	values[3] = Int32GetDatum(g->line_size);
	nulls[3] = (g->line_size == 0);
	values[4] = CStringGetTextDatum(g->shared_cpu_list);
	nulls[4] = (g->shared_cpu_list[0] == '\0');
	values[5] = Int32GetDatum(g->shared_cpus);
	nulls[5] = (g->shared_cpus == 0);
	values[6] = CStringGetTextDatum(g->source);
	values[7] = Int64GetDatum((int64) mccdb_llc_bytes());
	/* page colours: cache size / (ways x page size), the paper's formula */
	values[8] = Int32GetDatum(g->ways > 0 && page > 0 ?
							  (int32) (g->size / ((Size) g->ways * page)) : 0);
	nulls[8] = (g->ways == 0 || page <= 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* The candidate plans mccdb's planner hook weighs for a query. */
Datum
mccdb_plan_candidates(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ErrorContextCallback errcb;
	MccdbPlanChoice choice;
	int			i;

	mccdb_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	push_error_context(&errcb, sql);
	mccdb_generate_candidates(analyze_query_text(sql), sql,
							  CURSOR_OPT_PARALLEL_OK, NULL, 0.0, &choice);
	mccdb_check_plan_permissions(choice.candidates[0].plan);
	error_context_stack = errcb.previous;

	for (i = 0; i < choice.ncandidates; i++)
	{
		MccdbCandidate *c = &choice.candidates[i];
		Datum		values[5];
		bool		nulls[5] = {0};

		values[0] = CStringGetTextDatum(c->name);
		values[1] = Float8GetDatum(c->cost);
		values[2] = CStringGetTextDatum(mccdb_locality_class_name(c->cls));
		values[3] = Int64GetDatum(mccdb_double_to_int64(c->bytes));
		values[4] = BoolGetDatum(c->kept);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
