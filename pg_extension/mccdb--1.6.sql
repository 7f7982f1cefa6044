/* mccdb--1.6.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION mccdb" to load this file. \quit

-- mccdb needs shared memory and must see every query: refuse to install
-- unless the library was preloaded.
CREATE FUNCTION mccdb_check_preload()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL SAFE;

SELECT mccdb_check_preload();

CREATE FUNCTION mccdb_locality(
	query text,
	OUT locality text,
	OUT hash_table_bytes bigint,
	OUT llc_bytes bigint,
	OUT basis text,
	OUT description text)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_locality(text) IS
'Plans a statement (without running it) and returns its estimated cache locality, as EXPLAIN shows it';

CREATE FUNCTION mccdb_plan_tables(
	query text,
	OUT plan_node_id int,
	OUT kind text,
	OUT relation text,
	OUT counted boolean,
	OUT est_rows float8,
	OUT est_width int,
	OUT buckets int,
	OUT batches int,
	OUT est_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_plan_tables(text) IS
'Plans a statement and lists the hash tables (and other reused structures) whose sizes decide its locality';

CREATE FUNCTION mccdb_cache_geometry(
	OUT level int,
	OUT size_bytes bigint,
	OUT ways int,
	OUT line_size int,
	OUT shared_cpu_list text,
	OUT shared_cpus int,
	OUT source text,
	OUT llc_bytes bigint,
	OUT page_colors int)
RETURNS record
AS 'MODULE_PATHNAME', 'mccdb_cache_geometry_info'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_cache_geometry() IS
'The last-level cache found in sysfs, and the size C in use (mccdb.llc_size overrides it)';

CREATE FUNCTION mccdb_recent_queries(
	OUT seq bigint,
	OUT pid int,
	OUT finished timestamptz,
	OUT queryid bigint,
	OUT locality text,
	OUT basis text,
	OUT est_bytes bigint,
	OUT actual_bytes bigint,
	OUT llc_bytes bigint,
	OUT tables int,
	OUT admit_seq bigint,
	OUT admitted timestamptz,
	OUT released timestamptz,
	OUT waited_ms float8,
	OUT llc_misses bigint,
	OUT instructions bigint,
	OUT cycles bigint,
	OUT query text)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION mccdb_recent_tables(
	OUT seq bigint,
	OUT plan_node_id int,
	OUT kind text,
	OUT relation text,
	OUT counted boolean,
	OUT est_rows float8,
	OUT est_bytes bigint,
	OUT actual_rows float8,
	OUT actual_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION mccdb_plan_candidates(
	query text,
	OUT candidate text,
	OUT cost float8,
	OUT locality text,
	OUT hash_table_bytes bigint,
	OUT kept boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_plan_candidates(text) IS
'The candidate plans mccdb.plan_policy chooses among: cost without disable_cost, locality, and whether within mccdb.cost_slack';

CREATE FUNCTION mccdb_queue_1_6(
	OUT pid int,
	OUT state text,
	OUT queue text,
	OUT locality text,
	OUT hash_table_bytes bigint,
	OUT slots int,
	OUT since timestamptz,
	OUT for_ms float8,
	OUT arrival bigint,
	OUT predicted_s float8,
	OUT domain int,
	OUT userid oid,
	OUT dbid oid,
	OUT working_memory_bytes bigint,
	OUT class text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mccdb_queue'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_queue AS
	SELECT * FROM mccdb_queue_1_6();

COMMENT ON VIEW mccdb_queue IS
'Queries waiting for admission, running, or lending their slots (a cursor between fetches, a stalled client), with their predicted run time alone and the last-level-cache domain they run in';

CREATE FUNCTION mccdb_scheduler(
	OUT policy text,
	OUT slots int,
	OUT used_slots int,
	OUT held boolean,
	OUT admitted bigint,
	OUT admitted_after_max_wait bigint,
	OUT interference_loaded boolean,
	OUT held_by int,
	OUT admitted_for_locks bigint,
	OUT lent bigint,
	OUT short_slots_used int,
	OUT lock_slots_used int,
	OUT slot_counts_repaired bigint,
	OUT timed_out bigint,
	OUT memory_budget_bytes bigint,
	OUT memory_in_use_bytes bigint,
	OUT admitted_alone bigint,
	OUT ran_after_queue_timeout bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_scheduler() IS
'The gate: policy, slots and their use, the hold and who holds it, admissions (after max_wait, ahead of the policy for locks), slots lent by stalled clients, slots of the short queries run beside the slots and of the queries admitted for locks, slot counts found wrong and recounted, statements failed by mccdb.queue_timeout, mccdb.memory_budget, the estimated working memory the admitted statements hold, statements admitted alone because their estimate is over the budget, statements run without the gate after mccdb.queue_timeout (mccdb.queue_timeout_action = run)';

CREATE FUNCTION mccdb_hold_admission(hold boolean)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_hold_admission(boolean) IS
'true: queue every gated query and admit none (to submit a batch together); false: resume';

CREATE FUNCTION mccdb_set_interference(target text, corunner text, slowdown float8)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION mccdb_clear_interference()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

-- The interference matrix of the adaptive policy, measured on this host
-- (slowdown = co-run time / alone time of a target class beside a co-runner).
-- Its CHECKs accept exactly what mccdb_set_interference() accepts.
CREATE TABLE mccdb_interference (
	target text NOT NULL CHECK (target IN ('strong', 'moderate', 'weak')),
	corunner text NOT NULL CHECK (corunner IN ('strong', 'moderate', 'weak')),
	slowdown float8 NOT NULL,
	measured timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (target, corunner),
	CONSTRAINT mccdb_interference_slowdown_check CHECK (slowdown > 0 AND slowdown < 1000)
);

-- It is configuration, not extension data: pg_dump keeps its rows.
SELECT pg_catalog.pg_extension_config_dump('mccdb_interference', '');

COMMENT ON TABLE mccdb_interference IS
'Slowdown of a target locality class beside a co-runner class, for mccdb.schedule = adaptive; mccdb_load_interference() loads it';

-- Replace the server's matrix, all or nothing, and keep it across restarts.
CREATE FUNCTION mccdb_replace_interference(target text[], corunner text[], slowdown float8[])
RETURNS int
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION mccdb_interference_matrix(
	OUT target text,
	OUT corunner text,
	OUT slowdown float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_interference_matrix() IS
'The interference matrix the server uses now (no rows: none loaded, adaptive behaves as MLS)';

CREATE FUNCTION mccdb_learned_interference(
	OUT target text,
	OUT corunner text,
	OUT slowdown float8,
	OUT samples bigint,
	OUT weight float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_learned_interference() IS
'The interference matrix learned from finished gated queries (the predictive policy uses it): slowdown, samples that fed each cell, weight (capped: it forgets)';

CREATE FUNCTION mccdb_run_time_model(
	OUT seconds_per_cost float8,
	OUT rate_samples bigint,
	OUT known_queries int,
	OUT max_known_queries int)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_run_time_model() IS
'How run times are predicted: planner cost times a learned rate, or a query''s own history by queryid';

CREATE FUNCTION mccdb_learned_reset()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION mccdb_query_stats_1_3(
	OUT queryid bigint,
	OUT locality text,
	OUT admissions bigint,
	OUT bypasses bigint,
	OUT total_wait_ms float8,
	OUT max_wait_ms float8,
	OUT mean_wait_ms float8,
	OUT admitted_after_max_wait bigint,
	OUT admitted_for_locks bigint,
	OUT coruns bigint,
	OUT mean_corun_slowdown float8,
	OUT alone_s float8,
	OUT since timestamptz,
	OUT userid oid,
	OUT dbid oid)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mccdb_query_stats'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_query_stats AS
	SELECT * FROM mccdb_query_stats_1_3();

COMMENT ON VIEW mccdb_query_stats IS
'Per user, database, query (queryid) and plan class, since the last reset: admissions, bypasses, waits, admissions after max_wait or for locks, measured co-run slowdown, learned alone time; another role''s queryid only for pg_read_all_stats';

CREATE FUNCTION mccdb_query_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

-- Load this table into the server: every row is checked before any takes
-- effect; the matrix survives restarts and crash recovery.
CREATE FUNCTION mccdb_load_interference()
RETURNS int
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT @extschema@.mccdb_replace_interference(
		coalesce(array_agg(target), '{}'), coalesce(array_agg(corunner), '{}'),
		coalesce(array_agg(slowdown), '{}'))
	  FROM @extschema@.mccdb_interference
$$;

CREATE FUNCTION mccdb_counters_status()
RETURNS text
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_counters_status() IS
'Whether per-query hardware counters (mccdb.counters) can be read here, and if not why';

CREATE FUNCTION mccdb_counter_encoding(event text, OUT type int, OUT config bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_counter_encoding(text) IS
'How libpfm4 encodes a hardware event name for perf_event_open: perf_event_attr type and config';

CREATE FUNCTION mccdb_partition(
	OUT backend text,
	OUT status text,
	OUT buffer_pool_colors text,
	OUT nr_colors int)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_partition() IS
'How the last-level cache is partitioned: page colours, resctrl, or unavailable and why';

CREATE FUNCTION mccdb_recent_reset()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_recent_queries AS
	SELECT * FROM mccdb_recent_queries();

COMMENT ON VIEW mccdb_recent_queries IS
'Recently executed queries: estimated locality, estimated S beside the actual peak size of the same hash tables';

CREATE VIEW mccdb_recent_tables AS
	SELECT *,
		   round(100.0 * (est_bytes - actual_bytes) / nullif(actual_bytes, 0), 1)
			 AS error_pct
	  FROM mccdb_recent_tables();

COMMENT ON VIEW mccdb_recent_tables IS
'Per hash table of the recently executed queries: estimated and actual peak size';

-- Query texts and row estimates of other users' queries are not for everyone.
REVOKE ALL ON FUNCTION mccdb_recent_queries() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_recent_tables() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_recent_reset() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mccdb_recent_queries(), mccdb_recent_tables() TO pg_read_all_stats;
GRANT SELECT ON mccdb_recent_queries, mccdb_recent_tables TO pg_read_all_stats;

REVOKE ALL ON FUNCTION mccdb_hold_admission(boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_set_interference(text, text, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_load_interference() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_clear_interference() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_replace_interference(text[], text[], float8[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_learned_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_query_stats_reset() FROM PUBLIC;

-- The last-level-cache domains: the online CPUs that share each LLC (one
-- row on a machine with one LLC, or when sysfs does not describe it), and
-- the gate's slots in each (mccdb.placement).
CREATE FUNCTION mccdb_llc_domains(
	OUT domain int,
	OUT cpus text,
	OUT ncpus int,
	OUT cache_level int,
	OUT cache_bytes bigint,
	OUT slots int,
	OUT used_slots int,
	OUT source text)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_llc_domains AS
	SELECT * FROM mccdb_llc_domains();

COMMENT ON VIEW mccdb_llc_domains IS
'Last-level-cache domains: the online CPUs sharing each LLC, its level and size, the gate''s slots in it and their use, and where this came from (sysfs, or why all CPUs form one domain)';

-- What lscpu shows any user; the root it was read from stays superuser-only.
GRANT SELECT ON mccdb_llc_domains TO PUBLIC;
-- Every role reads the queue and the statistics, as pg_stat_activity and
-- pg_stat_statements: another role's queryids, sizes and predictions show
-- only to pg_read_all_stats and that role (docs/usage.md).
GRANT SELECT ON mccdb_queue, mccdb_query_stats TO PUBLIC;

-- Workload classes: a DBA defines them here and assigns them with
-- ALTER ROLE ... SET mccdb.class (superuser-only).  Each class has its own
-- queue inside the gate: its slots, priority, share of mccdb.memory_budget,
-- queue timeout and short-query limit.  A NULL takes the server's setting.
-- Changes take effect when their transaction commits (a deferred trigger
-- loads the table into the server), and are kept in the data directory
-- across restarts.  pg_dump keeps the rows; restoring them loads them.
CREATE TABLE mccdb_class (
	name text PRIMARY KEY
		CONSTRAINT mccdb_class_name_check
		CHECK (name ~ '^[a-z_][a-z0-9_]*$' AND length(name) < 64),
	slots int CONSTRAINT mccdb_class_slots_check CHECK (slots BETWEEN 1 AND 1024),
	priority int NOT NULL DEFAULT 0
		CONSTRAINT mccdb_class_priority_check CHECK (priority BETWEEN -1000 AND 1000),
	memory_share float8
		CONSTRAINT mccdb_class_memory_share_check CHECK (memory_share > 0 AND memory_share <= 100),
	queue_timeout int CONSTRAINT mccdb_class_queue_timeout_check CHECK (queue_timeout >= 0),
	queue_timeout_action text
		CONSTRAINT mccdb_class_queue_timeout_action_check
		CHECK (queue_timeout_action IN ('error', 'run')),
	short_query int CONSTRAINT mccdb_class_short_query_check CHECK (short_query >= 0)
);

SELECT pg_catalog.pg_extension_config_dump('mccdb_class', '');

COMMENT ON TABLE mccdb_class IS
'Workload classes (ALTER ROLE ... SET mccdb.class): slots, priority, percent of mccdb.memory_budget, queue timeout (ms) and its action, short-query limit (ms); NULL takes the server''s setting; in force when the change commits';

CREATE FUNCTION mccdb_class_changed()
RETURNS trigger
AS 'MODULE_PATHNAME'
LANGUAGE C;

-- At commit, once per changed row (a few rows): the last one loads the table.
CREATE CONSTRAINT TRIGGER mccdb_class_load
	AFTER INSERT OR UPDATE OR DELETE ON mccdb_class
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION mccdb_class_changed();

-- TRUNCATE fires no row trigger: it would leave the server's classes behind.
CREATE TRIGGER mccdb_class_no_truncate
	BEFORE TRUNCATE ON mccdb_class
	FOR EACH STATEMENT EXECUTE FUNCTION mccdb_class_changed();

CREATE FUNCTION mccdb_load_classes()
RETURNS int
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_load_classes() IS
'Loads mccdb_class into the server now (after a restore with triggers disabled); returns the number of classes';

CREATE FUNCTION mccdb_classes(
	OUT name text,
	OUT slots int,
	OUT priority int,
	OUT memory_share float8,
	OUT queue_timeout int,
	OUT queue_timeout_action text,
	OUT short_query int,
	OUT running int,
	OUT running_slots int,
	OUT waiting int,
	OUT memory_in_use_bytes bigint,
	OUT admitted bigint,
	OUT admitted_after_max_wait bigint,
	OUT timed_out bigint,
	OUT ran_after_queue_timeout bigint,
	OUT wait_p50_ms float8,
	OUT wait_p95_ms float8,
	OUT wait_p99_ms float8,
	OUT wait_max_ms float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_classes AS
	SELECT * FROM mccdb_classes();

COMMENT ON VIEW mccdb_classes IS
'The workload classes in force (default first), their statements running and waiting, and since the server started: admissions, admissions after mccdb.max_wait, queue timeouts; the wait percentiles are of the class''s last 1024 admissions';

-- Every role reads the classes (as pg_settings), only their owner changes them.
REVOKE ALL ON mccdb_class FROM PUBLIC;
GRANT SELECT ON mccdb_class, mccdb_classes TO PUBLIC;
REVOKE ALL ON FUNCTION mccdb_load_classes() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_class_changed() FROM PUBLIC;
