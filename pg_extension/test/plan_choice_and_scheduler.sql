--
-- Plan selection, scheduler settings, partitioning and hardware counters,
-- one session: candidates and their costs, the policies' picks, EXPLAIN,
-- GUC validation, and the unavailable paths of this machine.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SELECT plan(34);
SET LOCAL client_min_messages = warning;
SET LOCAL jit = off;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL mccdb.llc_size = '1MB';
SET LOCAL mccdb.explain = on;
SET LOCAL mccdb.track_min_cost = 0;	-- the ring records these small queries

CREATE TABLE pc_dim (k int PRIMARY KEY, grp int);
CREATE TABLE pc_fact (k int, v int);
INSERT INTO pc_dim SELECT g, g % 100 FROM generate_series(1, 20000) g;
INSERT INTO pc_fact SELECT (g % 20000) + 1, g FROM generate_series(1, 200000) g;
CREATE INDEX ON pc_fact (k);
ANALYZE pc_dim, pc_fact;
\set q 'SELECT sum(v) FROM pc_dim JOIN pc_fact USING (k) WHERE grp < 2'

CREATE FUNCTION pg_temp.explain_json(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN j;
END $$;

-- candidates
SELECT is((SELECT array_agg(candidate ORDER BY candidate) FROM mccdb_plan_candidates(:'q')),
		  ARRAY['hash join', 'index join', 'standard'], 'three candidates: standard, hash join, index join');
SELECT ok((SELECT bool_and(cost < 1e9) FROM mccdb_plan_candidates(:'q')), 'disable_cost does not leak into candidate costs');
SELECT is((SELECT locality FROM mccdb_plan_candidates(:'q') WHERE candidate = 'index join'), 'weak', 'the index join candidate is weak');
SELECT is((SELECT locality FROM mccdb_plan_candidates(:'q') WHERE candidate = 'hash join'), 'strong', 'the hash join candidate is strong');
SELECT ok((SELECT bool_and(kept = (cost <= (SELECT min(cost) FROM mccdb_plan_candidates(:'q')) * 1.30))
			 FROM mccdb_plan_candidates(:'q')), 'kept means within mccdb.cost_slack (0.30) of the cheapest');
SET LOCAL mccdb.cost_slack = 0;
SELECT is((SELECT count(*) FROM mccdb_plan_candidates(:'q') WHERE kept AND cost > (SELECT min(cost) FROM mccdb_plan_candidates(:'q'))),
		  0::bigint, 'with cost_slack 0 only the cheapest plans are kept');
SET LOCAL mccdb.cost_slack = 100;
SELECT is((SELECT count(*) FROM mccdb_plan_candidates(:'q') WHERE kept), 3::bigint, 'with a huge slack all are kept');

-- policies, seen through EXPLAIN (JSON)
SET LOCAL mccdb.plan_policy = 'sls';
SELECT is(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls', 'EXPLAIN shows the plan choice and its policy');
SELECT is(json_array_length(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' -> 'Candidates'), 3, 'EXPLAIN lists the three candidates');
SELECT is(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' ->> 'Locality', 'strong', 'sls picks a strong plan when one is kept');
SET LOCAL mccdb.plan_policy = 'mls';
SELECT is(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Reason', 'queues even: strong first', 'mls with empty queues: strong first');
SET LOCAL mccdb.cost_slack = 0;
SET LOCAL mccdb.plan_policy = 'sls';
SELECT is(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Chosen',
		  (SELECT candidate FROM mccdb_plan_candidates(:'q') WHERE kept ORDER BY cost, candidate DESC LIMIT 1),
		  'with nothing else kept, the cheapest plan is chosen');
SET LOCAL mccdb.plan_policy = 'off';
SELECT ok(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' IS NULL, 'policy off: PostgreSQL''s plan, no choice shown');
RESET mccdb.cost_slack;

-- joins anywhere in the query get candidates: a view, a FROM subquery, EXISTS, IN
CREATE VIEW pc_view AS SELECT k, v, grp FROM pc_dim JOIN pc_fact USING (k);
SET LOCAL mccdb.plan_policy = 'sls';
SELECT is(pg_temp.explain_json('SELECT sum(v) FROM pc_view WHERE grp < 2')
			-> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls', 'a join inside a view gets candidates');
SELECT is(pg_temp.explain_json('SELECT count(*) FROM (SELECT v FROM pc_dim JOIN pc_fact USING (k) WHERE grp < 2 OFFSET 0) s')
			-> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls', 'a join inside a FROM subquery gets candidates');
SELECT is(pg_temp.explain_json('SELECT count(*) FROM pc_fact f WHERE EXISTS (SELECT 1 FROM pc_dim d WHERE d.k = f.k AND d.grp < 2)')
			-> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls', 'an EXISTS sublink gets candidates');
SELECT is(pg_temp.explain_json('SELECT count(*) FROM pc_fact WHERE k IN (SELECT k FROM pc_dim WHERE grp < 2)')
			-> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls', 'an IN sublink gets candidates');
SELECT ok(pg_temp.explain_json('SELECT count(*) FROM pc_fact WHERE v < 10')
			-> 0 -> 'MCC-DB' -> 'Plan Choice' IS NULL, 'one table, no join: no candidates');
-- mccdb.plan_above_cost: a query cheaper than it is planned once, as stock
SET LOCAL mccdb.plan_above_cost = 1e12;
SELECT ok(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' IS NULL,
		  'below mccdb.plan_above_cost: the standard plan, no candidates');
SELECT is((SELECT count(*) FROM mccdb_plan_candidates(:'q')), 3::bigint,
		  'mccdb_plan_candidates() still shows every candidate');
RESET mccdb.plan_above_cost;
SET LOCAL mccdb.plan_policy = 'off';

-- GUCs: clear errors for bad values, server-wide ones not settable per session
SELECT throws_ok($$SET mccdb.plan_policy = 'greedy'$$, '22023', NULL, 'plan_policy takes off, sls or mls');
SELECT throws_ok($$SET mccdb.cost_slack = -0.1$$, '22023', NULL, 'cost_slack cannot be negative');
SELECT throws_ok($$SET mccdb.schedule_min_cost = -1$$, '22023', NULL, 'schedule_min_cost cannot be negative');
SELECT throws_ok($$SET mccdb.schedule = 'mls'$$, '55P02', NULL, 'schedule is server-wide (postgresql.conf, reload)');
SELECT throws_ok($$SET mccdb.corun_slots = 4$$, '55P02', NULL, 'corun_slots is server-wide');
SELECT throws_ok($$SET mccdb.partition = 'off'$$, '55P02', NULL, 'partition needs a restart');
SELECT throws_ok($$SET mccdb.counters = 'sometimes'$$, '22023', NULL, 'counters is a boolean');

-- scheduler state with nothing running
SELECT is((SELECT count(*) FROM mccdb_queue), 0::bigint, 'the queue is empty');
SELECT is((SELECT slots FROM mccdb_scheduler()) >= 1, true, 'at least one co-run slot');

-- partitioning: off until the DBA sets mccdb.partition, whatever the kernel
-- offers (the modes: concurrency/test_partition_modes.py)
SELECT is((SELECT (backend, status)::text FROM mccdb_partition()),
		  '(none,"off (mccdb.partition = off)")',
		  'partitioning is off by default, even where the kernel offers it');

-- hardware counters: libpfm4 encodes event names; reading them works or says why not
SELECT is((SELECT (type, config)::text FROM mccdb_counter_encoding('perf::PERF_COUNT_HW_CACHE_MISSES')), '(0,3)',
		  'libpfm4 encodes LLC misses as PERF_TYPE_HARDWARE / PERF_COUNT_HW_CACHE_MISSES');
SELECT throws_ok($$SELECT * FROM mccdb_counter_encoding('no::SUCH_EVENT')$$, '22023', NULL, 'an unknown event name is a clear error');
SELECT mccdb_counters_status() AS counters \gset
SET LOCAL mccdb.counters = on;
SELECT sum(v) AS s FROM pc_dim JOIN pc_fact USING (k) WHERE grp < 2 \gset
RESET mccdb.counters;
SELECT ok(CASE WHEN :'counters' = 'available'
			   THEN (SELECT instructions > 0 AND cycles > 0 FROM mccdb_recent_queries WHERE query LIKE 'SELECT sum(v) AS s FROM pc_dim%' ORDER BY seq DESC LIMIT 1)
			   ELSE (SELECT instructions IS NULL FROM mccdb_recent_queries WHERE query LIKE 'SELECT sum(v) AS s FROM pc_dim%' ORDER BY seq DESC LIMIT 1)
					AND :'counters' LIKE 'unavailable: %' END,
		  'counters are recorded where the PMU allows, else NULL with the reason: ' || :'counters');
SELECT ok(:'s' IS NOT NULL, 'the query with counters on ran normally');

SELECT * FROM finish();
ROLLBACK;
