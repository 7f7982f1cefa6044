--
-- The mccdb_recent_queries / mccdb_recent_tables views record executed
-- queries with estimated beside actual sizes; GUCs reject bad values with
-- clear errors; only privileged roles read other users' queries.
--
\set ON_ERROR_STOP 1
\set QUIET 1
SELECT plan(23);
SET client_min_messages = warning;

SET jit = off;
SET max_parallel_workers_per_gather = 0;
SET enable_nestloop = off;
SET enable_mergejoin = off;
SET mccdb.llc_size = '1MB';
SET mccdb.track_min_cost = 0;	-- these small tables' queries cost less than the default
DROP TABLE IF EXISTS rq_dim, rq_fact;
CREATE TABLE rq_dim (k int PRIMARY KEY, grp int);
CREATE TABLE rq_fact (k int, v int);
INSERT INTO rq_dim SELECT g, g % 10 FROM generate_series(1, 20000) g;
INSERT INTO rq_fact SELECT (g % 20000) + 1, g FROM generate_series(1, 25000) g;
ANALYZE rq_dim, rq_fact;

SELECT mccdb_recent_reset();
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query NOT LIKE 'SELECT mccdb_recent_reset()%'), 0::bigint,
          'reset empties the view (but for the reset call itself)');

-- an ordinary top-level query is recorded with its estimate and actual size
SELECT sum(v) AS total FROM rq_dim JOIN rq_fact USING (k) WHERE grp < 5 \gset
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query LIKE 'SELECT sum(v) AS total%'), 1::bigint,
          'the executed query is in mccdb_recent_queries');
SELECT is((SELECT locality FROM mccdb_recent_queries WHERE query LIKE 'SELECT sum(v) AS total%'), 'moderate',
          'with its locality class (10000-row hash table at C = 1 MB)');
SELECT ok((SELECT actual_bytes > 0 AND est_bytes > 0 FROM mccdb_recent_queries WHERE query LIKE 'SELECT sum(v) AS total%'),
          'estimated and actual hash table bytes are both recorded');
SELECT is((SELECT relation FROM mccdb_recent_tables t JOIN mccdb_recent_queries q USING (seq)
            WHERE q.query LIKE 'SELECT sum(v) AS total%'), 'rq_dim', 'per-table row names the build relation');
SELECT cmp_ok((SELECT abs(error_pct) FROM mccdb_recent_tables t JOIN mccdb_recent_queries q USING (seq)
                WHERE q.query LIKE 'SELECT sum(v) AS total%'), '<=', 10::numeric,
              'estimate within 10% of the actual size when row estimates are exact');
SELECT is((SELECT actual_rows FROM mccdb_recent_tables t JOIN mccdb_recent_queries q USING (seq)
            WHERE q.query LIKE 'SELECT sum(v) AS total%'), 10000::float8, 'actual rows in the hash table');

-- at the default mccdb.track_min_cost a point lookup is not recorded, the
-- hash join (priced as the server prices it) only if it costs that much
RESET mccdb.track_min_cost;
SELECT mccdb_recent_reset();
SELECT grp AS g FROM rq_dim WHERE k = 1 \gset
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query LIKE 'SELECT grp AS g FROM rq_dim%'), 0::bigint,
          'a statement cheaper than mccdb.track_min_cost is not recorded');
SET mccdb.track_min_cost = 1;
SELECT grp AS g FROM rq_dim WHERE k = 1 \gset
SET mccdb.track_min_cost = 0;
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query LIKE 'SELECT grp AS g FROM rq_dim%'), 1::bigint,
          'one that costs at least mccdb.track_min_cost is');

-- plain EXPLAIN runs nothing and records nothing; statements in functions
-- are recorded only with mccdb.track = all
SELECT mccdb_recent_reset();
EXPLAIN SELECT sum(v) FROM rq_dim JOIN rq_fact USING (k);
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query LIKE 'EXPLAIN%'), 0::bigint, 'EXPLAIN without ANALYZE is not recorded');
DO $$ BEGIN PERFORM sum(v) FROM rq_dim JOIN rq_fact USING (k); END $$;
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query LIKE '%PERFORM%' OR query LIKE '%FROM rq_dim JOIN rq_fact USING (k)'), 0::bigint,
          'mccdb.track = top skips statements inside functions');
SET mccdb.track = 'all';
DO $$ BEGIN PERFORM sum(v) FROM rq_dim JOIN rq_fact USING (k); END $$;
SELECT cmp_ok((SELECT count(*) FROM mccdb_recent_queries WHERE basis = 'hash tables'), '>=', 1::bigint,
              'mccdb.track = all records them');
RESET mccdb.track;

-- a parallel query is one entry: its workers record nothing of their own
SELECT mccdb_recent_reset();
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT count(*) AS n FROM rq_fact WHERE v > 0 \gset
SELECT is((SELECT count(*) FROM mccdb_recent_queries WHERE query LIKE 'SELECT count(*) AS n FROM rq_fact%'), 1::bigint,
          'a parallel query is recorded once, not once per worker');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- GUCs reject bad values
SELECT throws_ok($$SET mccdb.strong_limit = 0$$, '22023', NULL, 'strong_limit must be positive');
SELECT throws_ok($$SET mccdb.weak_limit = 'lots'$$, '22023', NULL, 'weak_limit must be a number');
SELECT throws_ok($$SET mccdb.llc_size = -1$$, '22023', NULL, 'llc_size cannot be negative');
SELECT throws_ok($$SET mccdb.track = 'sometimes'$$, '22023', NULL, 'track takes none, top or all');
SELECT throws_ok($$SET mccdb.recent_queries = 10$$, '55P02', NULL, 'recent_queries needs a restart');
SELECT throws_ok($$SET mccdb.no_such_setting = 1$$, '42602', NULL, 'the mccdb. prefix is reserved: unknown names are errors');

-- privileges: ordinary roles may not change C nor read other queries
DROP ROLE IF EXISTS mccdb_tap_user;
CREATE ROLE mccdb_tap_user;
SET ROLE mccdb_tap_user;
SELECT throws_ok($$SET mccdb.llc_size = '4MB'$$, '42501', NULL, 'only superusers set mccdb.llc_size');
SELECT throws_ok($$SET mccdb.track_min_cost = 0$$, '42501', NULL, 'only superusers set mccdb.track_min_cost');
SELECT throws_ok($$SELECT * FROM mccdb_recent_queries$$, '42501', NULL, 'ordinary roles cannot read recent queries');
RESET ROLE;
GRANT pg_read_all_stats TO mccdb_tap_user;
SET ROLE mccdb_tap_user;
SELECT lives_ok($$SELECT * FROM mccdb_recent_queries$$, 'pg_read_all_stats members can');
RESET ROLE;
DROP ROLE mccdb_tap_user;
DROP TABLE rq_dim, rq_fact;

SELECT * FROM finish();
