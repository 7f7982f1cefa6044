--
-- The planner hands its choice to the executor with the plan, whatever
-- happens to the plan in between: the plan cache copies a prepared
-- statement's plan, and EXPLAIN EXECUTE (PostgreSQL 18) shows the choice
-- of that copy.  And mccdb.plan_choice_min_cost, with its earlier name
-- mccdb.plan_above_cost still accepted.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SELECT plan(8);
SET LOCAL client_min_messages = warning;
SET LOCAL jit = off;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL mccdb.llc_size = '1MB';
SET LOCAL mccdb.explain = on;

CREATE TABLE ph_dim (k int PRIMARY KEY, grp int);
CREATE TABLE ph_fact (k int, v int);
INSERT INTO ph_dim SELECT g, g % 100 FROM generate_series(1, 20000) g;
INSERT INTO ph_fact SELECT (g % 20000) + 1, g FROM generate_series(1, 200000) g;
CREATE INDEX ON ph_fact (k);
ANALYZE ph_dim, ph_fact;
\set q 'SELECT sum(v) FROM ph_dim JOIN ph_fact USING (k) WHERE grp < 2'

CREATE FUNCTION pg_temp.explain_json(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN j;
END $$;

SET LOCAL mccdb.plan_policy = 'sls';
SELECT is(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls',
		  'EXPLAIN of the statement (in a function too) shows the plan choice');

-- a prepared statement runs the plan cache's copy of the chosen plan
PREPARE ph_q AS SELECT sum(v) FROM ph_dim JOIN ph_fact USING (k) WHERE grp < $1;
SELECT CASE WHEN current_setting('server_version_num')::int >= 180000
			THEN is(pg_temp.explain_json('EXECUTE ph_q(2)') -> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls',
					'EXPLAIN EXECUTE of a prepared statement shows the choice its cached plan was made with')
			ELSE skip('EXPLAIN EXECUTE shows mccdb''s lines from PostgreSQL 18 on', 1) END;
SELECT CASE WHEN current_setting('server_version_num')::int >= 180000
			THEN is(json_array_length(pg_temp.explain_json('EXECUTE ph_q(2)') -> 0 -> 'MCC-DB' -> 'Plan Choice' -> 'Candidates'), 3,
					'and its three candidates, the second time too')
			ELSE skip('EXPLAIN EXECUTE shows mccdb''s lines from PostgreSQL 18 on', 1) END;
SELECT is((SELECT sum(v) FROM ph_dim JOIN ph_fact USING (k) WHERE grp < 2), (SELECT sum(v) FROM ph_fact WHERE k IN (SELECT k FROM ph_dim WHERE grp < 2)),
		  'the chosen plan computes the same rows');
DEALLOCATE ph_q;

-- a plan made without a choice shows none, though the same plan was chosen before
SET LOCAL mccdb.plan_policy = 'off';
SELECT ok(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' IS NULL,
		  'policy off: the same plan, planned without a choice, shows none');
SET LOCAL mccdb.plan_policy = 'sls';

-- mccdb.plan_choice_min_cost, and its earlier name
SET LOCAL mccdb.plan_choice_min_cost = 1e12;
SELECT ok(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' IS NULL,
		  'below mccdb.plan_choice_min_cost: the standard plan, no candidates');
SET LOCAL mccdb.plan_above_cost = 0;
SELECT is(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' ->> 'Policy', 'sls',
		  'the deprecated mccdb.plan_above_cost, when set, is used instead');
RESET mccdb.plan_above_cost;
SELECT ok(pg_temp.explain_json(:'q') -> 0 -> 'MCC-DB' -> 'Plan Choice' IS NULL,
		  'reset, the deprecated name leaves mccdb.plan_choice_min_cost in charge again');

SELECT * FROM finish();
ROLLBACK;
