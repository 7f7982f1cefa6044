/* mccdb--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.2'" to load this file. \quit

-- The last-level-cache domains: the online CPUs that share each LLC (one
-- row on a machine with one LLC, or when sysfs does not describe it).
CREATE FUNCTION mccdb_llc_domains(
	OUT domain int,
	OUT cpus text,
	OUT ncpus int,
	OUT cache_level int,
	OUT cache_bytes bigint,
	OUT source text)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW mccdb_llc_domains AS
	SELECT * FROM mccdb_llc_domains();

COMMENT ON VIEW mccdb_llc_domains IS
'Last-level-cache domains: the online CPUs sharing each LLC, its level and size, and where this came from (sysfs, or why all CPUs form one domain)';

-- What lscpu shows any user; the root it was read from stays superuser-only.
GRANT SELECT ON mccdb_llc_domains TO PUBLIC;
