--
-- Plans the paper does not cover get a documented class and never an
-- error: no join, hash aggregation, bushy trees, parallel hash, subplans,
-- set operations, DML, cursors; EXPLAIN stays valid in every format.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SELECT plan(23);

SET LOCAL jit = off;
SET LOCAL mccdb.llc_size = '1MB';
SET LOCAL mccdb.explain = on;
CREATE TABLE a (k int PRIMARY KEY, g int, v int);
CREATE TABLE b (k int PRIMARY KEY, g int);
INSERT INTO a SELECT i, i % 50000, i FROM generate_series(1, 200000) i;
INSERT INTO b SELECT i, i % 10 FROM generate_series(1, 5000) i;
ANALYZE a, b;

CREATE FUNCTION pg_temp.loc(q text) RETURNS text LANGUAGE sql
	AS $$ SELECT locality FROM mccdb_locality(q) $$;
CREATE FUNCTION pg_temp.basis(q text) RETURNS text LANGUAGE sql
	AS $$ SELECT basis FROM mccdb_locality(q) $$;
CREATE FUNCTION pg_temp.explain(q text, fmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := '';
BEGIN
	FOR r IN EXECUTE format('EXPLAIN (FORMAT %s) %s', fmt, q) LOOP o := o || r || E'\n'; END LOOP;
	RETURN o;
END $$;

-- No join, no hash table: scans stream through the cache.
SELECT is(pg_temp.loc('SELECT count(*) FROM a'), 'weak', 'a plain scan is weak');
SELECT is(pg_temp.basis('SELECT count(*) FROM a'), 'no join', '... because there is no join');

-- Hash aggregation: small group counts are ignored (the paper's ~100 kB),
-- a big one is classified by its size.
SET LOCAL enable_sort = off;
SELECT is(pg_temp.loc('SELECT g, count(*) FROM b GROUP BY g'), 'weak', 'hash aggregation with 10 groups leaves a scan weak');
SELECT is(pg_temp.basis('SELECT g, sum(v) FROM a GROUP BY g'), 'hash aggregation', 'hash aggregation with 50000 groups decides the class');
SELECT isnt(pg_temp.loc('SELECT g, sum(v) FROM a GROUP BY g'), 'strong', '... and 50000 groups are not strong at C = 1 MB');
RESET enable_sort;

-- Bushy tree: a hash join whose build side is itself a join.
SET LOCAL enable_nestloop = off;
SET LOCAL enable_mergejoin = off;
-- (not a self-join on a key: PostgreSQL 18 removes those)
\set q_bushy 'SELECT count(*) FROM (SELECT a.k, a.g FROM a JOIN b USING (k) OFFSET 0) x JOIN (SELECT b1.k FROM b b1 JOIN a a2 USING (k) OFFSET 0) y ON x.g = y.k'
SELECT lives_ok(format('SELECT * FROM mccdb_locality(%L)', :'q_bushy'), 'bushy tree: no error');
SELECT is(pg_temp.basis(:'q_bushy'), 'hash tables (bushy tree)', 'bushy tree is recognised and classified by its hash tables');

-- Parallel hash join: the shared table is estimated from its total rows.
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL enable_parallel_hash = on;
\set q_par 'SELECT count(*) FROM a JOIN b USING (k)'
SELECT alike(pg_temp.explain(:'q_par', 'TEXT'), '%Parallel Hash%', 'the planner chose a parallel hash');
SELECT is(pg_temp.basis(:'q_par'), 'hash tables', 'parallel hash join is classified by its shared hash table');
SELECT lives_ok('EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM a JOIN b USING (k)', 'EXPLAIN ANALYZE of a parallel hash join works');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- Subplans, CTEs, set operations, recursion, DML, cursors.
SELECT lives_ok($q$SELECT * FROM mccdb_locality('SELECT count(*) FROM a WHERE a.k NOT IN (SELECT k FROM b)')$q$, 'hashed subplan');
SELECT lives_ok($q$SELECT * FROM mccdb_locality('SELECT (SELECT max(g) FROM b WHERE b.k = a.k) FROM a LIMIT 5')$q$, 'correlated subplan');
SELECT lives_ok($q$SELECT * FROM mccdb_locality('WITH x AS MATERIALIZED (SELECT * FROM b) SELECT count(*) FROM a JOIN x USING (k)')$q$, 'materialized CTE');
SELECT lives_ok($q$SELECT * FROM mccdb_locality('SELECT k FROM a EXCEPT SELECT k FROM b')$q$, 'set operation');
SELECT lives_ok($q$SELECT * FROM mccdb_locality('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT * FROM r')$q$, 'recursive CTE');
SELECT lives_ok($q$SELECT * FROM mccdb_locality('UPDATE b SET g = b.g + 1 FROM a WHERE a.k = b.k')$q$, 'UPDATE ... FROM');
SELECT lives_ok('INSERT INTO b SELECT k + 100000, g FROM a WHERE k < 10', 'INSERT ... SELECT runs with mccdb loaded');
SELECT lives_ok($q$DO $d$ DECLARE c refcursor; r record; BEGIN OPEN c FOR SELECT * FROM a JOIN b USING (k); FETCH c INTO r; CLOSE c; END $d$$q$, 'cursor over a join');

-- EXPLAIN output stays well-formed with the MCC-DB group in it.
SELECT is((pg_temp.explain(:'q_bushy', 'JSON')::json -> 0 -> 'MCC-DB' ->> 'Locality'),
          pg_temp.loc(:'q_bushy'), 'JSON: parses, and the MCC-DB group matches mccdb_locality()');
SELECT alike(pg_temp.explain(:'q_bushy', 'XML'), '%<MCC-DB>%<Locality>%</Locality>%</MCC-DB>%</Query>%',
             'XML: an MCC-DB element inside the query');
-- parsing it needs a server built with libxml (the PostgreSQL 18 wheel is not)
CREATE FUNCTION pg_temp.xml_checks(q text, loc text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	IF (SELECT setting FROM pg_config WHERE name = 'CONFIGURE') NOT LIKE '%with-libxml%' THEN
		RETURN NEXT skip('the server has no libxml to parse XML', 2);
		RETURN;
	END IF;
	RETURN NEXT ok(xml_is_well_formed_document(pg_temp.explain(q, 'XML')), 'XML: well-formed');
	RETURN NEXT is((xpath('//e:MCC-DB/e:Locality/text()', pg_temp.explain(q, 'XML')::xml,
	                      ARRAY[ARRAY['e', 'http://www.postgresql.org/2009/explain']]))[1]::text,
	               loc, 'XML: MCC-DB/Locality matches');
END $$;
SELECT * FROM pg_temp.xml_checks(:'q_bushy', pg_temp.loc(:'q_bushy'));
SELECT alike(pg_temp.explain(:'q_bushy', 'YAML'), E'%\n  MCC-DB: \n    Locality: "%', 'YAML: MCC-DB mapping inside the query');

SELECT * FROM finish();
ROLLBACK;
