/* mccdb--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.1'" to load this file. \quit

-- The slowdown CHECK accepts exactly what mccdb_set_interference() accepts,
-- so a matrix the table holds can always be loaded.  (A row outside it makes
-- this update fail; fix the row, then update.)
ALTER TABLE mccdb_interference
	DROP CONSTRAINT mccdb_interference_slowdown_check,
	ADD CONSTRAINT mccdb_interference_slowdown_check CHECK (slowdown > 0 AND slowdown < 1000);

-- The matrix is configuration, not extension data: pg_dump keeps its rows.
SELECT pg_catalog.pg_extension_config_dump('mccdb_interference', '');

COMMENT ON TABLE mccdb_interference IS
'Slowdown of a target locality class beside a co-runner class, for mccdb.schedule = adaptive; mccdb_load_interference() loads it';

-- The queue shows lent slots and predicted run times.
DROP VIEW mccdb_queue;
DROP FUNCTION mccdb_queue();
CREATE FUNCTION mccdb_queue(
	OUT pid int,
	OUT state text,
	OUT queue text,
	OUT locality text,
	OUT hash_table_bytes bigint,
	OUT slots int,
	OUT since timestamptz,
	OUT for_ms float8,
	OUT arrival bigint,
	OUT predicted_s float8)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_queue AS
	SELECT * FROM mccdb_queue();

COMMENT ON VIEW mccdb_queue IS
'Queries waiting for admission, running, or lending their slots (a cursor between fetches, a stalled client), with their predicted run time alone';

-- The scheduler view shows the hold's owner and the gate's new counters.
DROP FUNCTION mccdb_scheduler();
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
	OUT lent bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_scheduler() IS
'The gate: policy, slots and their use, the hold and who holds it, admissions (after max_wait, ahead of the policy for locks), slots lent by stalled clients';

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

CREATE FUNCTION mccdb_query_stats(
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
	OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_query_stats AS
	SELECT * FROM mccdb_query_stats();

COMMENT ON VIEW mccdb_query_stats IS
'Per query (queryid) and plan class, since the last reset: admissions, bypasses, waits, admissions after max_wait or for locks, measured co-run slowdown, learned alone time';

CREATE FUNCTION mccdb_query_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

-- Load this table into the server: every row is checked before any takes
-- effect; the matrix survives restarts and crash recovery.
CREATE OR REPLACE FUNCTION mccdb_load_interference()
RETURNS int
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT @extschema@.mccdb_replace_interference(
		coalesce(array_agg(target), '{}'), coalesce(array_agg(corunner), '{}'),
		coalesce(array_agg(slowdown), '{}'))
	  FROM @extschema@.mccdb_interference
$$;

REVOKE ALL ON FUNCTION mccdb_replace_interference(text[], text[], float8[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_learned_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_query_stats_reset() FROM PUBLIC;
