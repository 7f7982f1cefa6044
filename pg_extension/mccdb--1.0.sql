/* mccdb--1.0.sql */

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
