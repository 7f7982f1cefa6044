/*-------------------------------------------------------------------------
 *
 * state.c
 *		Backend-wide state and the per-statement state (see state.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "server_cost.h"
#include "state.h"
#include "tcop/pquery.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "work_memory.h"

bool		mccdb_preloaded = false;

static int	nesting_level = 0;

/* The nesting level of the EXPLAIN being processed, or -1. */
static int	explain_level = -1;

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

/*
 * Is the executor starting a statement the client sent?  Its own level
 * (nothing a function, DO, CALL or another utility runs), in a client
 * backend (not autovacuum's index expressions, not a background or
 * parallel worker), and inside the portal the client's statement runs in:
 * deferred triggers fire at COMMIT after that portal is gone, from
 * finish_xact_command(), with ActivePortal unset.  pg_stat_statements'
 * "toplevel" is the nesting level alone, which counts those as top level.
 */
bool
mccdb_client_statement(void)
{
	return nesting_level == 0 && MyBackendType == B_BACKEND &&
		ActivePortal != NULL;
}

int
mccdb_explain_enter(void)
{
	int			saved = explain_level;

	explain_level = nesting_level;
	return saved;
}

void
mccdb_explain_leave(int saved)
{
	explain_level = saved;
}

bool
mccdb_planning_for_explain(void)
{
	return explain_level >= 0 && explain_level == nesting_level;
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
	MemoryContext cxt;
	MccdbStatement *st;
	MemoryContextCallback *cb;

	/* what make test counts: no statement nothing wants gets here (mccdb.c) */
	elog(DEBUG3, "mccdb: state of a statement at nesting level %d", nesting_level);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "mccdb statement", ALLOCSET_SMALL_SIZES);
	st = MemoryContextAllocZero(cxt, sizeof(MccdbStatement));
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	st->queryDesc = queryDesc;
	st->cxt = cxt;
	st->level = nesting_level;
	st->top = top;
	st->cost_known = mccdb_server_cost(queryDesc->plannedstmt, &st->real_cost);
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
 * Run fn(arg) so that an error in it becomes a WARNING and the statement
 * goes on, as PL/pgSQL's exception blocks do: in an internal
 * subtransaction, whose abort releases whatever fn held (locks, buffers,
 * memory of the subtransaction) before the error is dropped.  Returns
 * whether fn finished.  A subtransaction costs: this is for EXPLAIN, where
 * the user asked; the estimate itself is written not to fail for a valid
 * plan, so the executor's hooks call it unguarded.  In parallel mode no
 * subtransaction may start, and fn runs unguarded too.
 */
bool
mccdb_estimate_guarded(void (*fn) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		ok = true;

	if (IsInParallelMode())
	{
		fn(arg);
		return true;
	}
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("mccdb: locality estimation failed: %s", edata->message),
				 errhint("The statement runs on without mccdb's estimate.")));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return ok;
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

/* The plan's working memory (work_memory.c), estimated the first time anyone asks. */
double
mccdb_statement_work_memory(MccdbStatement *st)
{
	if (!st->have_work_memory)
	{
		st->work_memory = mccdb_work_memory_bytes(st->queryDesc->plannedstmt,
												  mccdb_statement_locality(st), NIL);
		st->have_work_memory = true;
	}
	return st->work_memory;
}
