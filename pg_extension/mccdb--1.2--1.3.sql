/* mccdb--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.3'" to load this file. \quit

-- Who runs each statement, as pg_stat_activity and pg_stat_statements show
-- it: userid and dbid columns.  The views are replaced, never dropped, so a
-- DBA's grants on them and views built on them survive the update; the new
-- columns come last.  What another role's rows show depends on
-- pg_read_all_stats (docs/usage.md).
CREATE FUNCTION mccdb_queue_1_3(
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
	OUT dbid oid)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mccdb_queue'
LANGUAGE C STRICT VOLATILE;

CREATE OR REPLACE VIEW mccdb_queue AS
	SELECT * FROM mccdb_queue_1_3();

DROP FUNCTION mccdb_queue();

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

CREATE OR REPLACE VIEW mccdb_query_stats AS
	SELECT * FROM mccdb_query_stats_1_3();

DROP FUNCTION mccdb_query_stats();

COMMENT ON VIEW mccdb_query_stats IS
'Per user, database, query (queryid) and plan class, since the last reset: admissions, bypasses, waits, admissions after max_wait or for locks, measured co-run slowdown, learned alone time; another role''s queryid only for pg_read_all_stats';
