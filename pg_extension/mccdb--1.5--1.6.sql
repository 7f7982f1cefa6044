/* mccdb--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.6'" to load this file. \quit

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

CREATE OR REPLACE VIEW mccdb_queue AS
	SELECT * FROM mccdb_queue_1_6();

DROP FUNCTION mccdb_queue_1_5();

-- Every role reads the classes (as pg_settings), only their owner changes them.
REVOKE ALL ON mccdb_class FROM PUBLIC;
GRANT SELECT ON mccdb_class, mccdb_classes TO PUBLIC;
REVOKE ALL ON FUNCTION mccdb_load_classes() FROM PUBLIC;
REVOKE ALL ON FUNCTION mccdb_class_changed() FROM PUBLIC;
