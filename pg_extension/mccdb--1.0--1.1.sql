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

-- Safe against the caller's search_path, wherever the extension lives.
CREATE OR REPLACE FUNCTION mccdb_load_interference()
RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
	n int := 0;
BEGIN
	PERFORM @extschema@.mccdb_clear_interference();
	FOR r IN SELECT * FROM @extschema@.mccdb_interference LOOP
		PERFORM @extschema@.mccdb_set_interference(r.target, r.corunner, r.slowdown);
		n := n + 1;
	END LOOP;
	RETURN n;
END $$;
