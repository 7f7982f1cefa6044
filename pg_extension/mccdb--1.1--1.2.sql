/* mccdb--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.2'" to load this file. \quit

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

-- The queue shows the domain each admitted query runs in.
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
	OUT predicted_s float8,
	OUT domain int)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_queue AS
	SELECT * FROM mccdb_queue();

COMMENT ON VIEW mccdb_queue IS
'Queries waiting for admission, running, or lending their slots (a cursor between fetches, a stalled client), with their predicted run time alone and the last-level-cache domain they run in';
