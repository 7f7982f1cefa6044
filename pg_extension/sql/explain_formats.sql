--
-- EXPLAIN shows the locality estimate of every plan, in all four formats,
-- when mccdb.explain is on (it is off by default: loading mccdb leaves
-- EXPLAIN as it was).  Tables are small enough for ANALYZE to read every
-- row, so estimates are the same on every run; mccdb.llc_size pins C.
--
CREATE EXTENSION IF NOT EXISTS mccdb;
-- by default EXPLAIN is PostgreSQL's own
SHOW mccdb.explain;
EXPLAIN (COSTS OFF) SELECT 1;
SET mccdb.explain = on;
SET mccdb.llc_size = '1MB';
SET max_parallel_workers_per_gather = 0;
SET jit = off;
-- mccdb asks for query ids (EnableQueryId); VERBOSE would print them
SET compute_query_id = off;

CREATE TABLE dim (k int PRIMARY KEY, name text, grp int);
INSERT INTO dim SELECT g, 'name-' || g, g % 10 FROM generate_series(1, 20000) g;
CREATE TABLE fact (k int, v int);
INSERT INTO fact SELECT (g % 20000) + 1, g FROM generate_series(1, 25000) g;
CREATE INDEX fact_k ON fact (k);
ANALYZE dim, fact;

-- hash join, text
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3;

-- VERBOSE lists each table and whether it is counted in S
EXPLAIN (COSTS OFF, VERBOSE)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3;

-- ANALYZE puts the actual size beside the estimate
EXPLAIN (COSTS OFF, ANALYZE, TIMING OFF, SUMMARY OFF)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3;

-- the structured formats nest an "MCC-DB" group inside the query
EXPLAIN (COSTS OFF, FORMAT JSON)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3;
EXPLAIN (COSTS OFF, FORMAT YAML)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3;
EXPLAIN (COSTS OFF, FORMAT XML)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3;

-- index nested loop: weak
RESET enable_nestloop;
SET enable_hashjoin = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT sum(v) FROM dim JOIN fact USING (k) WHERE dim.k < 50;

-- merge join: weak (both inputs stream once)
RESET ALL;
SET mccdb.explain = on;
SET mccdb.llc_size = '1MB';
SET enable_hashjoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT sum(v) FROM dim JOIN fact USING (k);

-- no join at all: weak
EXPLAIN (COSTS OFF) SELECT count(*) FROM fact;

-- mccdb.explain = off (the default) hides it
SET mccdb.explain = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fact;
SET mccdb.explain = on;

-- EXPLAIN EXECUTE: PostgreSQL 18 shows the line (explain_per_plan_hook);
-- on 15 it bypasses the hook mccdb has there (documented)
PREPARE q AS SELECT count(*) FROM fact;
EXPLAIN (COSTS OFF) EXECUTE q;
DEALLOCATE q;

-- EXPLAIN (MCCDB) shows the lines whatever mccdb.explain says, (MCCDB
-- false) hides them; PostgreSQL 15 has no extension options (an error)
RESET mccdb.explain;
EXPLAIN (COSTS OFF, MCCDB) SELECT count(*) FROM fact;
SET mccdb.explain = on;
EXPLAIN (COSTS OFF, MCCDB false) SELECT count(*) FROM fact;
EXPLAIN (COSTS OFF, MCCDB 'perhaps') SELECT count(*) FROM fact;

-- the SQL function gives the same answer for a query text
RESET ALL;
SET mccdb.llc_size = '1MB';
SET enable_nestloop = off;
SET enable_mergejoin = off;
SELECT locality, hash_table_bytes, llc_bytes, basis, description
  FROM mccdb_locality('SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3');
SELECT plan_node_id, kind, relation, counted, est_rows, est_width, buckets, batches, est_bytes
  FROM mccdb_plan_tables('SELECT sum(v) FROM dim JOIN fact USING (k) WHERE grp < 3');

-- bad input to the SQL function: clear errors
SELECT * FROM mccdb_locality('SELECT 1; SELECT 2');
SELECT * FROM mccdb_locality('VACUUM fact');
SELECT * FROM mccdb_locality('SELECT * FROM no_such_table');

DROP TABLE dim, fact;
