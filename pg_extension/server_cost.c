/*-------------------------------------------------------------------------
 *
 * server_cost.c
 *		The cost the gate judges a plan by (see server_cost.h).
 *
 * A plan's cost is a sum of the planner's cost settings (seq_page_cost,
 * cpu_tuple_cost, ...) weighted by its estimates, and any role may SET
 * those settings for its own session, or ALTER ROLE / ALTER DATABASE it
 * owns SET them: with every cost setting at 0, a 3-second join costs
 * nothing.  So the gate never reads the cost of a plan made under settings
 * the session chose.  The server's settings are those of the
 * configuration files and the server's command line, and those only a
 * superuser sets for everyone (ALTER ROLE ALL ... SET): each backend reads
 * them when it starts, before the role's, database's and client's settings
 * are applied (ClientAuthentication_hook), and a setting that no session or
 * role has overridden is the server's as it stands, reloads included.
 *
 * A plan made under other cost settings is planned again with the
 * server's (only then: a session at the server's settings plans once), and
 * that cost is remembered for the plan by its key (plan_key.h), as the
 * executor runs a copy of it.  What this backend no longer remembers is
 * unknown: the gate then treats the statement as one it must gate.
 *
 * Per-tablespace costs (ALTER TABLESPACE ... SET) and a function's COST are
 * its owner's: they are the server's as far as this file is concerned.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "libpq/auth.h"
#include "locality.h"
#include "miscadmin.h"
#include "optimizer/planner.h"
#include "plan_key.h"
#include "server_cost.h"
#include "utils/guc.h"

/* The planner's cost settings (optimizer/cost.h and costsize.c). */
static const char *const cost_setting_names[] = {
	"seq_page_cost",
	"random_page_cost",
	"cpu_tuple_cost",
	"cpu_index_tuple_cost",
	"cpu_operator_cost",
	"parallel_tuple_cost",
	"parallel_setup_cost",
	"effective_cache_size",
	"min_parallel_table_scan_size",
	"min_parallel_index_scan_size",
};

#define NCOST_SETTINGS lengthof(cost_setting_names)

/* Plans made under other settings whose server cost is remembered. */
#define REMEMBERED_PLANS 1024

typedef struct CostSetting
{
	struct config_generic *gen;
	double		server;			/* its value in the server's configuration */
} CostSetting;

static CostSetting settings[NCOST_SETTINGS];
static bool settings_found = false;
static MccdbPlanMemo *server_costs = NULL;

static planner_hook_type prev_planner = NULL;
static ClientAuthentication_hook_type prev_client_auth = NULL;

static double
setting_value(const struct config_generic *gen)
{
	if (gen->vartype == PGC_REAL)
		return *((const struct config_real *) gen)->variable;
	return *((const struct config_int *) gen)->variable;
}

/* Find the settings in the server's table, once per process. */
static void
find_settings(void)
{
	struct config_generic **vars;
	int			nvars;

	if (settings_found)
		return;
	vars = mccdb_guc_variables(&nvars);
	for (int i = 0; i < (int) NCOST_SETTINGS; i++)
	{
		for (int v = 0; v < nvars; v++)
			if (strcmp(vars[v]->name, cost_setting_names[i]) == 0)
				settings[i].gen = vars[v];
		if (settings[i].gen == NULL ||
			(settings[i].gen->vartype != PGC_REAL && settings[i].gen->vartype != PGC_INT))
			elog(ERROR, "mccdb: no planner setting \"%s\"", cost_setting_names[i]);
	}
	settings_found = true;
}

/* Take the values in force now as the server's. */
static void
read_server_settings(void)
{
	find_settings();
	for (int i = 0; i < (int) NCOST_SETTINGS; i++)
		settings[i].server = setting_value(settings[i].gen);
}

/*
 * Authentication is done and nothing the client, the role or the database
 * sets has been applied yet: the settings in force are the server's.
 */
static void
client_authenticated(Port *port, int status)
{
	if (prev_client_auth)
		prev_client_auth(port, status);
	read_server_settings();
}

/*
 * Are the cost settings in force the server's?  A setting whose source is
 * at most a superuser's for everyone is the server's as it stands (after a
 * reload too); one set by the database, the role, the client or the
 * session must equal the server's value.
 */
static bool
settings_are_servers(void)
{
	bool		same = true;

	find_settings();
	for (int i = 0; i < (int) NCOST_SETTINGS; i++)
	{
		CostSetting *s = &settings[i];
		double		v = setting_value(s->gen);

		if (s->gen->source <= PGC_S_GLOBAL)
			s->server = v;
		else if (v != s->server)
			same = false;
	}
	return same;
}

/* Plan a copy of the query with the server's cost settings: its cost. */
static Cost
plan_with_server_settings(Query *parse, const char *query_string, int cursorOptions,
						  ParamListInfo boundParams)
{
	int			nestlevel = NewGUCNestLevel();
	Cost		cost;

	PG_TRY();
	{
		PlannedStmt *plan;

		for (int i = 0; i < (int) NCOST_SETTINGS; i++)
		{
			char		value[64];

			if (settings[i].gen->vartype == PGC_REAL)
				snprintf(value, sizeof(value), "%.17g", settings[i].server);
			else
				snprintf(value, sizeof(value), "%d", (int) settings[i].server);
			(void) set_config_option(settings[i].gen->name, value, PGC_USERSET,
									 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		}

		/*
		 * The core planner: other extensions' planner hooks (statistics of
		 * planning, hints) are for the session's own plan, not this price.
		 */
		plan = standard_planner(parse, query_string, cursorOptions, boundParams);
		cost = mccdb_real_cost(plan);
	}
	PG_FINALLY();
	{
		AtEOXact_GUC(false, nestlevel);
	}
	PG_END_TRY();
	return cost;
}

static PlannedStmt *
server_cost_planner(Query *parse, const char *query_string, int cursorOptions,
					ParamListInfo boundParams)
{
	Query	   *copy = NULL;
	PlannedStmt *plan;

	/* what the gate may judge: client backends' statements, at any level (cursors) */
	if (mccdb_costed_command(parse->commandType) && MyBackendType == B_BACKEND &&
		!settings_are_servers())
		copy = copyObject(parse);	/* the planner scribbles on its input */

	if (prev_planner)
		plan = prev_planner(parse, query_string, cursorOptions, boundParams);
	else
		plan = standard_planner(parse, query_string, cursorOptions, boundParams);

	if (copy != NULL && mccdb_costed_command(plan->commandType))
	{
		Cost		cost = plan_with_server_settings(copy, query_string, cursorOptions,
													 boundParams);
		MccdbPlanKey key = mccdb_plan_key(plan);

		if (server_costs == NULL)
			server_costs = mccdb_plan_memo_create("mccdb server costs", sizeof(Cost),
												  REMEMBERED_PLANS);
		*(Cost *) mccdb_plan_memo_enter(server_costs, &key) = cost;
	}
	return plan;
}

bool
mccdb_server_cost(PlannedStmt *plan, Cost *cost)
{
	MccdbPlanKey key;
	Cost	   *kept;

	if (settings_are_servers())
	{
		*cost = mccdb_real_cost(plan);
		return true;
	}
	if (server_costs == NULL)
		return false;
	key = mccdb_plan_key(plan);
	kept = mccdb_plan_memo_find(server_costs, &key);
	if (kept != NULL)
		*cost = *kept;
	return kept != NULL;
}

void
mccdb_server_cost_init(void)
{
	/* the postmaster's, inherited by processes that never authenticate */
	read_server_settings();
	prev_planner = planner_hook;
	planner_hook = server_cost_planner;
	prev_client_auth = ClientAuthentication_hook;
	ClientAuthentication_hook = client_authenticated;
}
