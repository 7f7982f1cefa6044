--
-- A plan's real cost: what the enable_* settings added (disable_cost, 1e10
-- per disabled node before PostgreSQL 18) is taken out, and nothing else.
-- The issue 26 reproduction: a cross join whose real cost is above 1e10.
-- And sizes beyond a bigint come out as its largest value, not as what
-- the undefined (int64) cast of the double makes of them.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SELECT plan(8);
SET LOCAL client_min_messages = warning;
SET LOCAL jit = off;
SET LOCAL max_parallel_workers_per_gather = 0;
\set q 'select count(*) from generate_series(1,3000000) a, generate_series(1,3000000) b where a < b'

CREATE FUNCTION pg_temp.plan_cost(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (j -> 0 -> 'Plan' ->> 'Total Cost')::float8;
END $$;

SELECT pg_temp.plan_cost(:'q') AS explain_cost \gset
SELECT ok(:explain_cost > 2e11, 'the cross join costs more than 2e11 in EXPLAIN: ' || :explain_cost);
SELECT ok((SELECT abs(cost - :explain_cost) < 0.01 FROM mccdb_plan_candidates(:'q') WHERE candidate = 'standard'),
		  'a standard plan above 1e10 keeps its whole cost (not taken modulo disable_cost)');
SELECT ok((SELECT abs(cost - :explain_cost) < 0.01 FROM mccdb_plan_candidates(:'q') WHERE candidate = 'hash join'),
		  'the hash join candidate must keep its nested loop: its cost is the same, without the disable_cost');
SELECT is((SELECT count(*) FROM mccdb_plan_candidates(:'q') WHERE kept), 3::bigint,
		  'all three candidates cost the same and are kept');

-- settings of the user's own: what they add is taken out of the standard plan too
SET LOCAL enable_nestloop = off;
SELECT ok(pg_temp.plan_cost(:'q') >= :explain_cost + 1e10 OR current_setting('server_version_num')::int >= 180000,
		  'before 18, enable_nestloop = off adds disable_cost to the plan EXPLAIN shows');
SELECT ok((SELECT abs(cost - :explain_cost) < 0.01 FROM mccdb_plan_candidates(:'q') WHERE candidate = 'standard'),
		  'the standard plan made with enable_nestloop = off competes with its real cost');
RESET enable_nestloop;

-- five cross-joined series: an inner re-scanned 3e17 rows, beyond a bigint in bytes
\set huge 'select count(*) from generate_series(1,1000000) a, generate_series(1,1000000) b, generate_series(1,1000000) c, generate_series(1,1000000) d, generate_series(1,1000000) e where a < b and c < d and d < e'
SELECT is((SELECT max(est_bytes) FROM mccdb_plan_tables(:'huge')), 9223372036854775807::bigint,
		  'a table size beyond a bigint is the largest bigint');
SELECT is((SELECT hash_table_bytes FROM mccdb_locality(:'huge')), 9223372036854775807::bigint,
		  'and so is the S of the query');

SELECT * FROM finish();
ROLLBACK;
