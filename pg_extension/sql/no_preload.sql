--
-- Without shared_preload_libraries, mccdb refuses to install and its
-- functions refuse to run, with a hint how to fix it.
--
SHOW shared_preload_libraries;
CREATE EXTENSION mccdb;
SELECT count(*) AS mccdb_installed FROM pg_extension WHERE extname = 'mccdb';
-- reach a C function of the library directly
CREATE FUNCTION mccdb_locality_unpreloaded(query text,
	OUT locality text, OUT hash_table_bytes bigint, OUT llc_bytes bigint,
	OUT basis text, OUT description text)
	RETURNS record AS '$libdir/mccdb', 'mccdb_locality' LANGUAGE C STRICT;
SELECT * FROM mccdb_locality_unpreloaded('SELECT 1');
DROP FUNCTION mccdb_locality_unpreloaded(text);
-- loading the library by hand installs no hooks: EXPLAIN is unchanged
LOAD 'mccdb';
EXPLAIN (COSTS OFF) SELECT 1;
