/*-------------------------------------------------------------------------
 *
 * state.c
 *		Backend-wide state and the per-statement state (see state.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "state.h"
#include "utils/memutils.h"

bool		mccdb_preloaded = false;

static int	nesting_level = 0;
static bool planning_for_explain = false;

/* Statements being executed, newest first (cursors keep several open). */
static MccdbStatement *statements = NULL;

void
mccdb_require_preload(void)
{
	if (!mccdb_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("mccdb must be loaded via shared_preload_libraries"),
				 errhint("Add mccdb to shared_preload_libraries in postgresql.conf and restart the server.")));
}

int
mccdb_nesting_level(void)
{
	return nesting_level;
}

void
mccdb_nesting_enter(void)
{
	nesting_level++;
}

void
mccdb_nesting_leave(void)
{
	Assert(nesting_level > 0);
	nesting_level--;
}

bool
mccdb_planning_for_explain(void)
{
	return planning_for_explain;
}

void
mccdb_set_planning_for_explain(bool on)
{
	planning_for_explain = on;
}

static void
unlink_statement(MccdbStatement *st)
{
	MccdbStatement **p;

	for (p = &statements; *p != NULL; p = &(*p)->next)
		if (*p == st)
		{
			*p = st->next;
			return;
		}
}

/* The statement's context is going away (ExecutorEnd, or error cleanup). */
static void
statement_context_reset(void *arg)
{
	unlink_statement((MccdbStatement *) arg);
}

MccdbStatement *
mccdb_statement_begin(QueryDesc *queryDesc, bool top)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "mccdb statement",
											  ALLOCSET_SMALL_SIZES);
	MccdbStatement *st = MemoryContextAllocZero(cxt, sizeof(MccdbStatement));
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	st->queryDesc = queryDesc;
	st->cxt = cxt;
	st->level = nesting_level;
	st->top = top;
	st->real_cost = mccdb_real_cost(queryDesc->plannedstmt);
	cb->func = statement_context_reset;
	cb->arg = st;
	MemoryContextRegisterResetCallback(cxt, cb);
	st->next = statements;
	statements = st;
	return st;
}

MccdbStatement *
mccdb_statement_find(QueryDesc *queryDesc)
{
	MccdbStatement *st;

	for (st = statements; st != NULL; st = st->next)
		if (st->queryDesc == queryDesc)
			return st;
	return NULL;
}

/*
 * In a PG_CATCH of the locality estimate: the statement runs on, the error
 * becomes a WARNING (a failed estimate must never fail the query).
 */
void
mccdb_estimation_failed(MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg("mccdb: locality estimation failed: %s", edata->message),
			 errhint("The query runs without mccdb's estimate; mccdb_locality() shows the error.")));
	FreeErrorData(edata);
}

/* The innermost running statement executing this plan (EXPLAIN's hooks). */
MccdbStatement *
mccdb_statement_find_plan(const PlannedStmt *plan)
{
	MccdbStatement *st;

	for (st = statements; st != NULL; st = st->next)
		if (st->queryDesc->plannedstmt == plan)
			return st;
	return NULL;
}

void
mccdb_statement_end(MccdbStatement *st)
{
	MemoryContextDelete(st->cxt);	/* the callback unlinks it */
}

/* The plan's locality, estimated the first time anyone asks. */
MccdbLocality *
mccdb_statement_locality(MccdbStatement *st)
{
	if (!st->have_locality)
	{
		MemoryContext old = MemoryContextSwitchTo(st->cxt);

		mccdb_estimate_locality(st->queryDesc->plannedstmt, &st->locality);
		MemoryContextSwitchTo(old);
		st->have_locality = true;
	}
	return &st->locality;
}
