--
-- Locality classes as section 4 of the MCC-DB paper defines them, reached
-- with crafted data: strong/moderate/weak boundaries, index joins, the
-- first two joins of a left-deep tree.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SELECT plan(24);

SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL jit = off;
SET LOCAL mccdb.llc_size = '1MB';

CREATE TABLE dim1 (k int PRIMARY KEY, grp int, pad text);
CREATE TABLE dim2 (k int PRIMARY KEY, grp int);
CREATE TABLE dim3 (k int PRIMARY KEY, grp int);
INSERT INTO dim1 SELECT g, g % 100, repeat('x', 20) FROM generate_series(1, 100000) g;
INSERT INTO dim2 SELECT g, g % 100 FROM generate_series(1, 1000) g;
INSERT INTO dim3 SELECT g, g % 100 FROM generate_series(1, 1000) g;
CREATE TABLE fact (k1 int, k2 int, k3 int, v int);
INSERT INTO fact SELECT (g % 100000) + 1, (g % 1000) + 1, (g % 997) + 1, g
  FROM generate_series(1, 300000) g;
CREATE INDEX ON fact (k1);
ANALYZE dim1, dim2, dim3, fact;

CREATE FUNCTION pg_temp.loc(q text) RETURNS text LANGUAGE sql
	AS $$ SELECT locality FROM mccdb_locality(q) $$;
CREATE FUNCTION pg_temp.s(q text) RETURNS bigint LANGUAGE sql
	AS $$ SELECT hash_table_bytes FROM mccdb_locality(q) $$;
CREATE FUNCTION pg_temp.basis(q text) RETURNS text LANGUAGE sql
	AS $$ SELECT basis FROM mccdb_locality(q) $$;

-- Hash joins only: the hash table is built on dim1, filtered by grp.
SET LOCAL enable_nestloop = off;
SET LOCAL enable_mergejoin = off;
\set q_small 'SELECT sum(v) FROM dim1 JOIN fact ON dim1.k = fact.k1 WHERE dim1.grp < 2'
\set q_mid   'SELECT sum(v) FROM dim1 JOIN fact ON dim1.k = fact.k1 WHERE dim1.grp < 25'
\set q_big   'SELECT sum(v) FROM dim1 JOIN fact ON dim1.k = fact.k1'

SELECT is(pg_temp.loc(:'q_small'), 'strong', 'small hash table (2% of dim1) is strong with the paper''s limits');
SELECT is(pg_temp.loc(:'q_mid'), 'moderate', 'hash table between C/3 and 3C is moderate');
SELECT is(pg_temp.loc(:'q_big'), 'weak', 'hash table of at least 3C is weak');
SELECT cmp_ok(pg_temp.s(:'q_small'), '<', (1048576 / 3)::bigint, 'strong one is below C/3');
SELECT ok(pg_temp.s(:'q_mid') >= 1048576 / 3 AND pg_temp.s(:'q_mid') < 3 * 1048576, 'moderate one is in [C/3, 3C)');
SELECT cmp_ok(pg_temp.s(:'q_big'), '>=', (3 * 1048576)::bigint, 'weak one is at least 3C');

-- The boundaries themselves: with strong_limit 0.5, C = 1024 k bytes,
-- S < C/2 is strong and S >= C/2 is not; likewise S >= 2C is weak.
SELECT pg_temp.s(:'q_mid') AS s_mid \gset
SET LOCAL mccdb.strong_limit = 0.5;
SET LOCAL mccdb.weak_limit = 2.0;
SELECT set_config('mccdb.llc_size', ((:s_mid / 512) + 1)::text || 'kB', true) IS NOT NULL AS set \gset
SELECT is(pg_temp.loc(:'q_mid'), 'strong', 'S just below strong_limit x C is strong');
SELECT set_config('mccdb.llc_size', (:s_mid / 512)::text || 'kB', true) IS NOT NULL AS set \gset
SELECT is(pg_temp.loc(:'q_mid'), 'moderate', 'S at or just above strong_limit x C is moderate');
SELECT set_config('mccdb.llc_size', ((:s_mid / 2048) + 1)::text || 'kB', true) IS NOT NULL AS set \gset
SELECT is(pg_temp.loc(:'q_mid'), 'moderate', 'S just below weak_limit x C is moderate');
SELECT set_config('mccdb.llc_size', (:s_mid / 2048)::text || 'kB', true) IS NOT NULL AS set \gset
SELECT is(pg_temp.loc(:'q_mid'), 'weak', 'S at or just above weak_limit x C is weak');
RESET mccdb.strong_limit;
RESET mccdb.weak_limit;
SET LOCAL mccdb.llc_size = '1MB';

-- Index nested loop joins are weak, whatever the sizes.
RESET enable_nestloop;
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_bitmapscan = off;
\set q_ij 'SELECT sum(v) FROM dim1 JOIN fact ON dim1.k = fact.k1 WHERE dim1.k < 100'
SELECT is(pg_temp.loc(:'q_ij'), 'weak', 'index nested loop join is weak');
SELECT is(pg_temp.basis(:'q_ij'), 'index nested loop joins', 'basis names the index join');
\set q_2ij 'SELECT sum(v) FROM dim1 JOIN fact ON dim1.k = fact.k1 JOIN dim2 ON dim2.k = fact.k2 WHERE dim1.k < 100'
SELECT is(pg_temp.loc(:'q_2ij'), 'weak', 'two index joins are weak');
SELECT is((SELECT count(*) FROM mccdb_plan_tables(:'q_2ij')), 0::bigint, 'two index joins keep no hash table');

-- A nested loop without an index re-reads its inner side: that is its S.
SET LOCAL enable_indexscan = off;
SET LOCAL enable_indexonlyscan = off;
\set q_nl 'SELECT sum(v) FROM dim2 JOIN fact ON dim2.k = fact.k2'
SELECT is((SELECT kind FROM mccdb_plan_tables(:'q_nl')), 'rescanned inner', 'plain nested loop: its inner is the reused structure');
SELECT is(pg_temp.loc(:'q_nl'), 'strong', 'a small rescanned inner is strong');
RESET enable_indexscan;
RESET enable_indexonlyscan;

-- One hash join and one index join: the hash table decides.
RESET enable_hashjoin;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_seqscan = on;
\set q_mix 'SELECT sum(v) FROM (SELECT * FROM dim1 WHERE k < 50) d1 JOIN fact ON d1.k = fact.k1 JOIN dim2 ON dim2.k = fact.k2'
SELECT ok((SELECT count(*) FROM mccdb_plan_tables(:'q_mix') WHERE kind = 'hash join') = 1
          AND pg_temp.basis(:'q_mix') = 'hash tables',
          'hash join + index join: classified by the one hash table');

-- Left-deep tree of three hash joins: only the bottom two are counted.
RESET ALL;
SET LOCAL mccdb.llc_size = '1MB';
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL enable_nestloop = off;
SET LOCAL enable_mergejoin = off;
SET LOCAL join_collapse_limit = 1;
\set q_3hj 'SELECT sum(v) FROM fact JOIN dim2 ON dim2.k = fact.k2 JOIN dim3 ON dim3.k = fact.k3 JOIN dim1 ON dim1.k = fact.k1'
SELECT is((SELECT count(*) FROM mccdb_plan_tables(:'q_3hj') WHERE kind = 'hash join'), 3::bigint, 'three hash joins found');
SELECT is((SELECT count(*) FROM mccdb_plan_tables(:'q_3hj') WHERE counted), 2::bigint, 'only the first two joins from the bottom count');
SELECT is(pg_temp.s(:'q_3hj'),
          (SELECT sum(est_bytes)::bigint FROM mccdb_plan_tables(:'q_3hj') WHERE counted),
          'S is the sum of the two counted hash tables');
SELECT is((SELECT relation FROM mccdb_plan_tables(:'q_3hj') WHERE NOT counted), 'dim1',
          'the uncounted table is the top join''s (dim1, joined last)');

-- A multi-batch hash join holds one batch in memory: about hash_mem on 15;
-- 18 may raise the memory allowed per batch to cut the number of batches
-- (ExecChooseHashTableSize), so the bound is against the whole table.
SELECT est_bytes AS whole_table FROM mccdb_plan_tables(:'q_big') \gset
SET LOCAL work_mem = '64kB';
SET LOCAL hash_mem_multiplier = 1;
SELECT cmp_ok((SELECT batches FROM mccdb_plan_tables(:'q_big')), '>', 1, 'small work_mem gives a multi-batch join');
SELECT cmp_ok((SELECT est_bytes FROM mccdb_plan_tables(:'q_big')),
              '<', (:whole_table / 4)::bigint,
              'multi-batch estimate is one batch: under a quarter of the whole table');
RESET work_mem;

-- The hash table is built on the inner side the planner chose.
SELECT is((SELECT relation FROM mccdb_plan_tables(:'q_small')), 'dim1', 'hash table is attributed to dim1');

SELECT * FROM finish();
ROLLBACK;
