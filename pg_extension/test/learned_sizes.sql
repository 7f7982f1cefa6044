--
-- Hash table sizes learned from a query's last run replace the planner's
-- estimate in its next runs (mccdb.learn_table_sizes), and EXPLAIN
-- (VERBOSE) says which figure it used.  A plain EXPLAIN estimates from the
-- plan alone: it says the same before and after the run, whoever ran it.
-- The build side's filter is on two correlated columns, so the planner
-- underestimates its rows and the table's size.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SELECT plan(11);
SET LOCAL client_min_messages = warning;
SET LOCAL jit = off;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL mccdb.track_min_cost = 0;	-- the ring records these small queries
SET LOCAL mccdb.explain = on;
SET LOCAL enable_nestloop = off;
SET LOCAL enable_mergejoin = off;

CREATE TABLE ls_dim (k int PRIMARY KEY, a int, b int, pad text);
INSERT INTO ls_dim SELECT g, g % 100, g % 100, repeat('x', 40) FROM generate_series(1, 50000) g;
CREATE TABLE ls_fact (k int, v int);
INSERT INTO ls_fact SELECT (g % 50000) + 1, g FROM generate_series(1, 100000) g;
ANALYZE ls_dim, ls_fact;
\set q 'SELECT sum(v) FROM ls_fact JOIN ls_dim USING (k) WHERE a < 30 AND b < 30'

CREATE FUNCTION pg_temp.hash_table(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (VERBOSE, FORMAT JSON) ' || q INTO j;
	RETURN j -> 0 -> 'MCC-DB' -> 'Tables' -> 0;
END $$;
-- plain EXPLAIN, text and JSON
CREATE FUNCTION pg_temp.plain(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; j json;
BEGIN
	FOR r IN EXECUTE 'EXPLAIN ' || q LOOP o := o || r || E'\n'; END LOOP;
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN o || (j -> 0 -> 'MCC-DB')::text;
END $$;
CREATE FUNCTION pg_temp.verbose_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY EXECUTE 'EXPLAIN (VERBOSE) ' || q;
END $$;
CREATE TEMP TABLE before_run AS SELECT pg_temp.plain(:'q') AS plain;

SELECT is(pg_temp.hash_table(:'q') ->> 'Size Source', 'planner', 'before any run: the planner''s estimate');
SELECT cmp_ok((pg_temp.hash_table(:'q') ->> 'Estimated Bytes')::float8,
			  '<', 0.5 * (SELECT sum(pg_column_size(d)) FROM ls_dim d WHERE a < 30)::float8,
			  'the planner underestimates the correlated filter');

SELECT mccdb_recent_reset();
\o /dev/null
:q;
\o
SELECT is(pg_temp.hash_table(:'q') ->> 'Size Source', 'learned', 'after a run: the size of that run');
SELECT ok(abs((pg_temp.hash_table(:'q') ->> 'Estimated Bytes')::float8
			  / (SELECT actual_bytes FROM mccdb_recent_tables WHERE kind = 'hash join' ORDER BY seq DESC LIMIT 1)
			  - 1) < 0.05, 'the learned size is the measured one, within 5%');
SELECT is((pg_temp.hash_table(:'q') ->> 'Planner Bytes')::float8,
		  (SELECT est_bytes::float8 FROM mccdb_recent_tables WHERE kind = 'hash join' ORDER BY seq DESC LIMIT 1),
		  'EXPLAIN keeps the planner''s figure beside it');
SELECT matches((SELECT description FROM mccdb_locality(:'q')), 'sizes learned from the last run',
			   'the locality says its sizes were learned');
SELECT is(pg_temp.plain(:'q'), (SELECT plain FROM before_run),
		  'plain EXPLAIN says what it said before the run: the plan alone');
SELECT doesnt_match(pg_temp.plain(:'q'), 'learned', 'plain EXPLAIN shows no learned size');
SELECT matches((SELECT string_agg(l, E'\n') FROM pg_temp.verbose_lines(:'q') l),
			   'MCC-DB Locality: .*sizes learned from the last run',
			   'EXPLAIN (VERBOSE) shows the estimate the gate uses, with the learned sizes');

SET LOCAL mccdb.learn_table_sizes = off;
SELECT is(pg_temp.hash_table(:'q') ->> 'Size Source', 'planner', 'mccdb.learn_table_sizes = off: the planner''s estimate');
RESET mccdb.learn_table_sizes;

SELECT mccdb_learned_reset();
SELECT is(pg_temp.hash_table(:'q') ->> 'Size Source', 'planner', 'mccdb_learned_reset() forgets the learned sizes');

SELECT * FROM finish();
ROLLBACK;
