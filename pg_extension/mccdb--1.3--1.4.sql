/* mccdb--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.4'" to load this file. \quit

-- Every role reads the queue and the statistics, as pg_stat_activity and
-- pg_stat_statements: another role's queryids, sizes and predictions show
-- only to pg_read_all_stats and that role (docs/usage.md).
GRANT SELECT ON mccdb_queue, mccdb_query_stats TO PUBLIC;

-- The slots the gate counts apart: short queries shortest runs beside the
-- slots, queries admitted because a running query waits for their locks,
-- counts found wrong and recounted; statements failed by
-- mccdb.queue_timeout.  A function's OUT columns cannot
-- be changed in place: it is made again.
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
	OUT lent bigint,
	OUT short_slots_used int,
	OUT lock_slots_used int,
	OUT slot_counts_repaired bigint,
	OUT timed_out bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_scheduler() IS
'The gate: policy, slots and their use, the hold and who holds it, admissions (after max_wait, ahead of the policy for locks), slots lent by stalled clients, slots of the short queries run beside the slots and of the queries admitted for locks, slot counts found wrong and recounted, statements failed by mccdb.queue_timeout';
