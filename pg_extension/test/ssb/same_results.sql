--
-- Plan selection never changes results: every SSB and PLQ query returns
-- the same rows under mccdb.plan_policy off, sls and mls (the plans differ
-- only in their join methods).  Queries run at top level (\gexec), where
-- the planner hook chooses; the locality each run really had is read back
-- from mccdb_recent_queries.
--
\set ON_ERROR_STOP 1
\set QUIET 1
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL jit = off;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL mccdb.track_min_cost = 0;	-- the ring records these small queries
SELECT plan(2 + 2 * (SELECT count(*)::int FROM mccdb_test_queries));

CREATE TEMP TABLE runs (tab text, suite text, name text, policy text);
INSERT INTO runs
SELECT format('r_%s_%s_%s', p, suite, translate(name, '.', '_')), suite, name, p
  FROM mccdb_test_queries, unnest(ARRAY['off', 'sls', 'mls']) p;
SELECT mccdb_recent_reset();

-- each query under each policy, kept in a temp table tagged by its name
SELECT format('SET mccdb.plan_policy = %L; CREATE TEMP TABLE %I AS /* %s */ %s',
			  r.policy, r.tab, r.tab, rtrim(btrim(q.sql, E' \n\t'), ';'))
  FROM runs r JOIN mccdb_test_queries q USING (suite, name)
 ORDER BY r.tab \gexec
RESET mccdb.plan_policy;

CREATE FUNCTION pg_temp.rows_md5(tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
	EXECUTE format('SELECT md5(coalesce(string_agg(t::text, E''\n'' ORDER BY t::text), '''')) FROM %I t', tab) INTO h;
	RETURN h;
END $$;

CREATE TEMP TABLE outcome AS
SELECT r.suite, r.name, r.policy, pg_temp.rows_md5(r.tab) AS md5,
	   (SELECT locality FROM mccdb_recent_queries WHERE query LIKE '%/* ' || r.tab || ' */%') AS locality
  FROM runs r;

SELECT is((SELECT count(*) FROM outcome WHERE locality IS NULL), 0::bigint,
		  'every run was recorded with the locality of the plan it used');
SELECT cmp_ok((SELECT count(*) FROM outcome o JOIN outcome s USING (suite, name)
				WHERE o.policy = 'off' AND s.policy = 'sls' AND o.locality <> s.locality),
			  '>=', 1::bigint, 'sls picked a plan of another locality for at least one query');
SELECT ok((SELECT count(DISTINCT md5) FROM outcome o WHERE o.suite = q.suite AND o.name = q.name) = 1,
		  format('%s %s: same rows under off, sls and mls', q.suite, q.name))
  FROM mccdb_test_queries q ORDER BY suite, name;
SELECT ok((SELECT count(*) FROM outcome o WHERE o.suite = q.suite AND o.name = q.name AND md5 IS NOT NULL) = 3,
		  format('%s %s: ran under all three policies', q.suite, q.name))
  FROM mccdb_test_queries q ORDER BY suite, name;

SELECT * FROM finish();
ROLLBACK;
