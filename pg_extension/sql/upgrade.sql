--
-- The upgrade path: ALTER EXTENSION mccdb UPDATE from 1.0 must give exactly
-- the objects a fresh install of the newest version gives, and the
-- comparison must see a difference where there is one (1.0 against 1.1).
--
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS mccdb;
CREATE SCHEMA mccdb_upgrade_test;

-- Every object of the extension, described with what defines it: columns,
-- constraints, function definitions, view queries, privileges, comments,
-- and whether pg_dump keeps a table's rows.
CREATE FUNCTION mccdb_upgrade_test.objects()
RETURNS TABLE (object text, definition text)
LANGUAGE sql AS $$
	SELECT pg_describe_object(d.classid, d.objid, 0),
		   concat_ws(' | ',
			 CASE WHEN d.classid = 'pg_proc'::regclass THEN pg_get_functiondef(d.objid) END,
			 CASE WHEN d.classid = 'pg_proc'::regclass THEN
				(SELECT proacl::text FROM pg_proc WHERE oid = d.objid) END,
			 CASE WHEN d.classid = 'pg_class'::regclass THEN
				(SELECT concat_ws(' ', c.relkind, c.relacl::text,
								  CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END)
				   FROM pg_class c WHERE c.oid = d.objid) END,
			 CASE WHEN d.classid = 'pg_class'::regclass THEN
				(SELECT string_agg(format('%s %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
										  CASE WHEN a.attnotnull THEN ' not null' END,
										  ' default ' || pg_get_expr(ad.adbin, ad.adrelid)),
								   ', ' ORDER BY a.attnum)
				   FROM pg_attribute a
				   LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
				  WHERE a.attrelid = d.objid AND a.attnum > 0 AND NOT a.attisdropped) END,
			 CASE WHEN d.classid = 'pg_class'::regclass THEN
				(SELECT string_agg(format('%s: %s', conname, pg_get_constraintdef(oid)), ', ' ORDER BY conname)
				   FROM pg_constraint WHERE conrelid = d.objid) END,
			 CASE WHEN d.classid = 'pg_class'::regclass THEN
				(SELECT 'dumped by pg_dump' FROM pg_extension e
				  WHERE e.extname = 'mccdb' AND d.objid = ANY (e.extconfig)) END,
			 obj_description(d.objid, d.classid::regclass::name))
	  FROM pg_depend d
	 WHERE d.refclassid = 'pg_extension'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'mccdb')
	   AND d.deptype = 'e'
$$;

-- 1.0, then updated to the default version
CREATE EXTENSION mccdb VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'mccdb';
-- the newer library serves the 1.0 objects until the update
SELECT count(*) >= 0 AS queue_readable FROM mccdb_queue;
-- and refuses a definition it does not fill, with a hint, instead of crashing
CREATE FUNCTION mccdb_upgrade_test.domains_wrong(OUT domain int, OUT slots text)
	RETURNS SETOF record AS '$libdir/mccdb', 'mccdb_llc_domains' LANGUAGE C;
SELECT * FROM mccdb_upgrade_test.domains_wrong();
DROP FUNCTION mccdb_upgrade_test.domains_wrong();
CREATE TABLE mccdb_upgrade_test.v10 AS SELECT * FROM mccdb_upgrade_test.objects();
ALTER EXTENSION mccdb UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'mccdb') AS updated
  FROM pg_extension WHERE extname = 'mccdb';
CREATE TABLE mccdb_upgrade_test.updated AS SELECT * FROM mccdb_upgrade_test.objects();

-- a fresh install of the default version
DROP EXTENSION mccdb;
CREATE EXTENSION mccdb;
CREATE TABLE mccdb_upgrade_test.fresh AS SELECT * FROM mccdb_upgrade_test.objects();

SELECT count(*) AS objects_compared FROM mccdb_upgrade_test.fresh;

-- no difference between the updated and the fresh objects, either way
(SELECT 'only after update' AS side, * FROM mccdb_upgrade_test.updated
 EXCEPT SELECT 'only after update', * FROM mccdb_upgrade_test.fresh)
UNION ALL
(SELECT 'only in fresh install', * FROM mccdb_upgrade_test.fresh
 EXCEPT SELECT 'only in fresh install', * FROM mccdb_upgrade_test.updated)
ORDER BY 1, 2;

-- the same comparison does see what 1.1 changed in 1.0
SELECT object FROM (
	SELECT * FROM mccdb_upgrade_test.v10 EXCEPT SELECT * FROM mccdb_upgrade_test.fresh) AS changed
 ORDER BY 1;

-- installed into another schema, the matrix loader still finds its table
DROP EXTENSION mccdb;
CREATE SCHEMA mccdb_elsewhere;
CREATE EXTENSION mccdb SCHEMA mccdb_elsewhere;
INSERT INTO mccdb_elsewhere.mccdb_interference (target, corunner, slowdown) VALUES ('strong', 'weak', 1.5);
SET search_path = pg_catalog;
SELECT mccdb_elsewhere.mccdb_load_interference();
SELECT mccdb_elsewhere.mccdb_clear_interference();
RESET search_path;
-- a slowdown the loader would reject is refused by the table
\set VERBOSITY terse
INSERT INTO mccdb_elsewhere.mccdb_interference (target, corunner, slowdown) VALUES ('weak', 'weak', 1000);
\set VERBOSITY default
DROP EXTENSION mccdb;
DROP SCHEMA mccdb_elsewhere;

-- leave the database as the other tests expect it
CREATE EXTENSION mccdb;
DROP SCHEMA mccdb_upgrade_test CASCADE;
