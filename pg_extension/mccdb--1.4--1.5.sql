/* mccdb--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mccdb UPDATE TO '1.5'" to load this file. \quit

-- mccdb.memory_budget: each statement's estimated working memory in the
-- queue (another role's only to pg_read_all_stats and that role), the
-- budget, the memory the admitted statements hold, and the statements
-- admitted alone because their estimate is over the budget; and the
-- statements mccdb.queue_timeout_action = run let go without the gate.  The view is
-- replaced, never dropped, so a DBA's grants on it survive; the new column
-- comes last.  A function's OUT columns cannot be changed in place: it is
-- made again.
CREATE FUNCTION mccdb_queue_1_5(
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
	OUT working_memory_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'mccdb_queue'
LANGUAGE C STRICT VOLATILE;

CREATE OR REPLACE VIEW mccdb_queue AS
	SELECT * FROM mccdb_queue_1_5();

DROP FUNCTION mccdb_queue_1_3();

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
	OUT timed_out bigint,
	OUT memory_budget_bytes bigint,
	OUT memory_in_use_bytes bigint,
	OUT admitted_alone bigint,
	OUT ran_after_queue_timeout bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION mccdb_scheduler() IS
'The gate: policy, slots and their use, the hold and who holds it, admissions (after max_wait, ahead of the policy for locks), slots lent by stalled clients, slots of the short queries run beside the slots and of the queries admitted for locks, slot counts found wrong and recounted, statements failed by mccdb.queue_timeout, mccdb.memory_budget, the estimated working memory the admitted statements hold, statements admitted alone because their estimate is over the budget, statements run without the gate after mccdb.queue_timeout (mccdb.queue_timeout_action = run)';
