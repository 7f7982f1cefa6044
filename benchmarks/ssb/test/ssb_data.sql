-- pgTAP tests of a loaded SSB database (mccdb_bench.ssb_generate).
-- Written for the SF 0.01 load of `make test`, valid at any scale factor:
-- expected row counts are computed from the scale recorded in ssb_load_info.
--
--   pg_prove -d "$PGDATABASE" benchmarks/ssb/test/ssb_data.sql
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
\pset pager off
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;

SELECT plan(73);

-- ---------------------------------------------------------------- schema
SELECT has_table('ssb_load_info', 'ssb_load_info records the scale and seed of the load');
SELECT is((SELECT count(*)::int FROM ssb_load_info), 1, 'ssb_load_info has exactly one row (one finished load)');

SELECT columns_are('lineorder', ARRAY['lo_orderkey', 'lo_linenumber', 'lo_custkey', 'lo_partkey',
    'lo_suppkey', 'lo_orderdate', 'lo_orderpriority', 'lo_shippriority', 'lo_quantity',
    'lo_extendedprice', 'lo_ordtotalprice', 'lo_discount', 'lo_revenue', 'lo_supplycost',
    'lo_tax', 'lo_commitdate', 'lo_shipmode'], 'lineorder has the 17 columns of the SSB spec');
SELECT columns_are('part', ARRAY['p_partkey', 'p_name', 'p_mfgr', 'p_category', 'p_brand1',
    'p_color', 'p_type', 'p_size', 'p_container'], 'part has the 9 columns of the SSB spec');
SELECT columns_are('supplier', ARRAY['s_suppkey', 's_name', 's_address', 's_city', 's_nation',
    's_region', 's_phone'], 'supplier has the 7 columns of the SSB spec');
SELECT columns_are('customer', ARRAY['c_custkey', 'c_name', 'c_address', 'c_city', 'c_nation',
    'c_region', 'c_phone', 'c_mktsegment'], 'customer has the 8 columns of the SSB spec');
SELECT columns_are('date', ARRAY['d_datekey', 'd_date', 'd_dayofweek', 'd_month', 'd_year',
    'd_yearmonthnum', 'd_yearmonth', 'd_daynuminweek', 'd_daynuminmonth', 'd_daynuminyear',
    'd_monthnuminyear', 'd_weeknuminyear', 'd_sellingseason', 'd_lastdayinweekfl',
    'd_lastdayinmonthfl', 'd_holidayfl', 'd_weekdayfl'], 'date has the 17 columns of the SSB spec');

-- ---------------------------------------------------------------- keys and indexes
SELECT col_is_pk('lineorder', ARRAY['lo_orderkey', 'lo_linenumber'], 'lineorder primary key is (lo_orderkey, lo_linenumber)');
SELECT col_is_pk('part', 'p_partkey', 'part primary key is p_partkey');
SELECT col_is_pk('supplier', 's_suppkey', 'supplier primary key is s_suppkey');
SELECT col_is_pk('customer', 'c_custkey', 'customer primary key is c_custkey');
SELECT col_is_pk('date', 'd_datekey', 'date primary key is d_datekey');
SELECT has_index('lineorder', 'lineorder_lo_partkey_idx', 'lo_partkey', 'index on lineorder(lo_partkey) for the PLQ index join');
SELECT has_index('lineorder', 'lineorder_lo_custkey_idx', 'lo_custkey', 'index on lineorder(lo_custkey)');
SELECT has_index('lineorder', 'lineorder_lo_suppkey_idx', 'lo_suppkey', 'index on lineorder(lo_suppkey)');
SELECT has_index('lineorder', 'lineorder_lo_orderdate_idx', 'lo_orderdate', 'index on lineorder(lo_orderdate)');
SELECT fk_ok('lineorder', 'lo_custkey', 'customer', 'c_custkey', 'foreign key lo_custkey -> customer');
SELECT fk_ok('lineorder', 'lo_partkey', 'part', 'p_partkey', 'foreign key lo_partkey -> part');
SELECT fk_ok('lineorder', 'lo_suppkey', 'supplier', 's_suppkey', 'foreign key lo_suppkey -> supplier');
SELECT fk_ok('lineorder', 'lo_orderdate', 'date', 'd_datekey', 'foreign key lo_orderdate -> date');
SELECT fk_ok('lineorder', 'lo_commitdate', 'date', 'd_datekey', 'foreign key lo_commitdate -> date');
SELECT ok(EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'lineorder' AND attname = 'lo_partkey')
          AND EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'part' AND attname = 'p_category'),
          'tables were ANALYZEd (planner statistics exist for lineorder and part)');

-- ---------------------------------------------------------------- row counts per scale factor
CREATE TEMP TABLE expect AS
SELECT scale,
       floor(30000 * scale)::bigint AS customer,
       floor(2000 * scale)::bigint AS supplier,
       coalesce(part_rows_override,
                CASE WHEN scale >= 1 THEN 200000 * floor(1 + log(2, scale))
                     ELSE greatest(2000, floor(200000 * scale)) END)::bigint AS part,
       floor(1500000 * scale)::bigint AS orders
FROM ssb_load_info;

SELECT is((SELECT count(*) FROM date), 2556::bigint, 'date has 2556 rows (7 years of days, as ssb-dbgen)');
SELECT is((SELECT count(*) FROM customer), (SELECT customer FROM expect), 'customer has floor(30,000 x SF) rows');
SELECT is((SELECT count(*) FROM supplier), (SELECT supplier FROM expect), 'supplier has floor(2,000 x SF) rows');
SELECT is((SELECT count(*) FROM part), (SELECT part FROM expect),
          'part has 200,000 x floor(1 + log2 SF) rows (SF >= 1), else max(2,000, 200,000 x SF), unless --part-rows');
SELECT is((SELECT count(DISTINCT lo_orderkey) FROM lineorder), (SELECT orders FROM expect),
          'lineorder holds floor(1,500,000 x SF) orders');
SELECT ok((SELECT abs(count(*) - 4 * (SELECT orders FROM expect)) <= 12 * sqrt((SELECT orders FROM expect)) FROM lineorder),
          'lineorder has about 6,000,000 x SF rows (4 lines per order on average, within 6 sd)');
SELECT is_empty($$SELECT lo_orderkey FROM lineorder GROUP BY lo_orderkey
                  HAVING min(lo_linenumber) <> 1 OR max(lo_linenumber) <> count(*) OR count(*) > 7$$,
                'every order has lines 1..k without gaps, k <= 7');

-- ---------------------------------------------------------------- date
SELECT results_eq($$SELECT min(d_datekey), max(d_datekey), count(DISTINCT d_year)::int FROM date$$,
                  $$VALUES (19920101, 19981230, 7)$$, 'date spans 1992-01-01 .. 1998-12-30, 7 years');
SELECT is_empty($$SELECT d_datekey FROM date
                  WHERE to_char(to_date(d_datekey::text, 'YYYYMMDD'), 'FMMonth FMDD, YYYY') <> d_date
                     OR to_char(to_date(d_datekey::text, 'YYYYMMDD'), 'FMDay') <> d_dayofweek
                     OR extract(dow FROM to_date(d_datekey::text, 'YYYYMMDD')) + 1 <> d_daynuminweek
                     OR d_yearmonthnum <> d_year * 100 + d_monthnuminyear
                     OR d_yearmonth <> left(d_month, 3) || d_year
                     OR d_weeknuminyear <> d_daynuminyear / 7 + 1
                     OR d_datekey <> d_year * 10000 + d_monthnuminyear * 100 + d_daynuminmonth$$,
                'date columns agree with the calendar (d_date, d_dayofweek, d_yearmonth, week numbers, ...)');
SELECT set_eq($$SELECT DISTINCT d_sellingseason FROM date$$,
              ARRAY['Christmas', 'Summer', 'Winter', 'Spring', 'Fall'], 'd_sellingseason has the 5 seasons');

-- ---------------------------------------------------------------- part domains
SELECT set_eq($$SELECT DISTINCT p_category FROM part$$,
              $$SELECT 'MFGR#' || m || c FROM generate_series(1, 5) m, generate_series(1, 5) c$$,
              'p_category has exactly the 25 values MFGR#11 .. MFGR#55');
SELECT is_empty($$SELECT p_category, count(*) FROM part GROUP BY p_category
                  HAVING count(*) NOT BETWEEN 0.035 * (SELECT count(*) FROM part)
                                          AND 0.045 * (SELECT count(*) FROM part)$$,
                'each p_category holds 4% of parts (within 3.5% .. 4.5%)');
SELECT set_eq($$SELECT DISTINCT p_mfgr FROM part$$, ARRAY['MFGR#1', 'MFGR#2', 'MFGR#3', 'MFGR#4', 'MFGR#5'],
              'p_mfgr has the 5 values MFGR#1 .. MFGR#5');
SELECT is_empty($$SELECT p_partkey FROM part WHERE left(p_category, 6) <> p_mfgr$$,
                'p_category extends p_mfgr (MFGR#m -> MFGR#mc)');
SELECT is_empty($$SELECT p_partkey FROM part
                  WHERE p_brand1 !~ '^MFGR#[1-5][1-5](0[1-9]|[1-3][0-9]|40)$' OR left(p_brand1, 7) <> p_category$$,
                'p_brand1 is p_category followed by 01 .. 40 (MFGR#1101 .. MFGR#5540)');
SELECT ok((SELECT count(DISTINCT p_brand1) FROM part) <= 1000
          AND (SELECT max(n) FROM (SELECT count(DISTINCT p_brand1) n FROM part GROUP BY p_category) x) <= 40,
          'at most 1000 brands, 40 per category');
SELECT is_empty($$SELECT p_partkey FROM part WHERE p_size NOT BETWEEN 1 AND 50$$, 'p_size is in 1 .. 50');
SELECT ok((SELECT count(DISTINCT p_type) <= 150 AND count(DISTINCT p_container) <= 40
                  AND count(DISTINCT p_color) <= 92 FROM part),
          'p_type, p_container, p_color stay within 150, 40, 92 values');

-- ---------------------------------------------------------------- customer and supplier domains
CREATE TEMP TABLE nations(nation, region) AS VALUES
  ('ALGERIA', 'AFRICA'), ('ARGENTINA', 'AMERICA'), ('BRAZIL', 'AMERICA'), ('CANADA', 'AMERICA'),
  ('EGYPT', 'MIDDLE EAST'), ('ETHIOPIA', 'AFRICA'), ('FRANCE', 'EUROPE'), ('GERMANY', 'EUROPE'),
  ('INDIA', 'ASIA'), ('INDONESIA', 'ASIA'), ('IRAN', 'MIDDLE EAST'), ('IRAQ', 'MIDDLE EAST'),
  ('JAPAN', 'ASIA'), ('JORDAN', 'MIDDLE EAST'), ('KENYA', 'AFRICA'), ('MOROCCO', 'AFRICA'),
  ('MOZAMBIQUE', 'AFRICA'), ('PERU', 'AMERICA'), ('CHINA', 'ASIA'), ('ROMANIA', 'EUROPE'),
  ('SAUDI ARABIA', 'MIDDLE EAST'), ('VIETNAM', 'ASIA'), ('RUSSIA', 'EUROPE'),
  ('UNITED KINGDOM', 'EUROPE'), ('UNITED STATES', 'AMERICA');
SELECT is((SELECT count(*)::int FROM nations), 25, 'reference list: 25 nations');
SELECT is_empty($$SELECT region FROM nations GROUP BY region HAVING count(*) <> 5$$,
                'reference list: 5 nations per region');
SELECT set_eq($$SELECT DISTINCT c_region FROM customer$$,
              ARRAY['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'], 'c_region has the 5 regions');
SELECT is_empty($$SELECT DISTINCT s_region FROM supplier
                  EXCEPT SELECT unnest(ARRAY['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'])$$,
                's_region takes only the 5 regions');
SELECT set_eq($$SELECT DISTINCT c_nation FROM customer$$, $$SELECT nation FROM nations$$,
              'c_nation has the 25 nations');
SELECT is_empty($$SELECT DISTINCT c_nation, c_region FROM customer EXCEPT SELECT * FROM nations$$,
                'c_region is the region of c_nation');
SELECT is_empty($$SELECT DISTINCT s_nation, s_region FROM supplier EXCEPT SELECT * FROM nations$$,
                's_nation is one of the 25 nations and s_region its region');
SELECT is_empty($$SELECT c_custkey FROM customer
                  WHERE c_city !~ '^.{9}[0-9]$' OR left(c_city, 9) <> rpad(left(c_nation, 9), 9)$$,
                'c_city is the first 9 letters of c_nation (space padded) plus a digit 0-9');
SELECT is_empty($$SELECT s_suppkey FROM supplier
                  WHERE s_city !~ '^.{9}[0-9]$' OR left(s_city, 9) <> rpad(left(s_nation, 9), 9)$$,
                's_city is the first 9 letters of s_nation (space padded) plus a digit 0-9');
SELECT ok((SELECT count(DISTINCT c_city) FROM customer) <= 250, 'at most 250 customer cities (10 per nation)');
SELECT set_eq($$SELECT DISTINCT c_mktsegment FROM customer$$,
              ARRAY['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'], 'c_mktsegment has the 5 segments');
SELECT is_empty($$SELECT c_custkey FROM customer WHERE c_name <> 'Customer#' || lpad(c_custkey::text, 9, '0')
                  OR c_phone !~ '^[1-3][0-9]-[1-9][0-9]{2}-[1-9][0-9]{2}-[1-9][0-9]{3}$'$$,
                'c_name is Customer#<key> and c_phone has the TPC-H format');

-- ---------------------------------------------------------------- lineorder domains
SELECT results_eq($$SELECT min(lo_discount), max(lo_discount) FROM lineorder$$, $$VALUES (0, 10)$$,
                  'lo_discount spans 0 .. 10');
SELECT results_eq($$SELECT min(lo_quantity), max(lo_quantity) FROM lineorder$$, $$VALUES (1, 50)$$,
                  'lo_quantity spans 1 .. 50');
SELECT results_eq($$SELECT min(lo_tax), max(lo_tax) FROM lineorder$$, $$VALUES (0, 8)$$,
                  'lo_tax spans 0 .. 8');
SELECT set_eq($$SELECT DISTINCT lo_orderpriority FROM lineorder$$,
              ARRAY['1-URGENT', '2-HIGH', '3-MEDIUM', '4-NOT SPECIFIED', '5-LOW'], 'lo_orderpriority has the 5 priorities');
SELECT set_eq($$SELECT DISTINCT lo_shipmode FROM lineorder$$,
              ARRAY['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'], 'lo_shipmode has the 7 ship modes');
SELECT set_eq($$SELECT DISTINCT lo_shippriority FROM lineorder$$, ARRAY['0'], 'lo_shippriority is 0');
SELECT is_empty($$SELECT 1 FROM lineorder WHERE lo_revenue <> lo_extendedprice * (100 - lo_discount) / 100$$,
                'lo_revenue = lo_extendedprice * (100 - lo_discount) / 100 on every row');
SELECT is_empty($$SELECT 1 FROM lineorder
                  WHERE lo_extendedprice <> lo_quantity * (90000 + (lo_partkey / 10) % 20001 + 100 * (lo_partkey % 1000))$$,
                'lo_extendedprice = lo_quantity x retail price of the part (TPC-H formula, cents)');
SELECT is_empty($$SELECT 1 FROM lineorder
                  WHERE lo_supplycost <> 6 * (90000 + (lo_partkey / 10) % 20001 + 100 * (lo_partkey % 1000)) / 10$$,
                'lo_supplycost = 60% of the retail price of the part');
SELECT is_empty($$SELECT lo_orderkey FROM lineorder GROUP BY lo_orderkey
                  HAVING min(lo_ordtotalprice) <> max(lo_ordtotalprice)
                      OR min(lo_ordtotalprice) <> sum(lo_revenue * (100 + lo_tax) / 100)$$,
                'lo_ordtotalprice is the order total of revenue plus tax, the same on every line');
SELECT is_empty($$SELECT lo_orderkey FROM lineorder GROUP BY lo_orderkey
                  HAVING count(DISTINCT (lo_custkey, lo_orderdate, lo_orderpriority)) <> 1$$,
                'the lines of an order share customer, order date and priority');
SELECT is_empty($$SELECT 1 FROM lineorder WHERE lo_custkey % 3 = 0$$,
                'customers with c_custkey divisible by 3 place no orders (TPC-H rule)');
SELECT cmp_ok((SELECT max(lo_orderdate) FROM lineorder), '<=', 19980802,
              'orders are placed no later than 1998-08-02 (end date - 151 days)');
SELECT is_empty($$SELECT 1 FROM lineorder
                  WHERE to_date(lo_commitdate::text, 'YYYYMMDD') - to_date(lo_orderdate::text, 'YYYYMMDD') NOT BETWEEN 30 AND 90$$,
                'lo_commitdate is 30 .. 90 days after lo_orderdate');

-- ---------------------------------------------------------------- foreign keys resolve
SELECT is_empty($$SELECT lo_partkey FROM lineorder EXCEPT SELECT p_partkey FROM part$$, 'no orphan lo_partkey');
SELECT is_empty($$SELECT lo_custkey FROM lineorder EXCEPT SELECT c_custkey FROM customer$$, 'no orphan lo_custkey');
SELECT is_empty($$SELECT lo_suppkey FROM lineorder EXCEPT SELECT s_suppkey FROM supplier$$, 'no orphan lo_suppkey');
SELECT is_empty($$SELECT lo_orderdate FROM lineorder EXCEPT SELECT d_datekey FROM date$$, 'no orphan lo_orderdate');
SELECT is_empty($$SELECT lo_commitdate FROM lineorder EXCEPT SELECT d_datekey FROM date$$, 'no orphan lo_commitdate');
SELECT ok((SELECT count(DISTINCT lo_partkey) FROM lineorder) > 0.5 * (SELECT count(*) FROM part)
          OR (SELECT count(*) FROM lineorder) < (SELECT count(*) FROM part),
          'lo_partkey spreads over the part table (more than half of the parts are ordered)');

-- ---------------------------------------------------------------- determinism
-- A fingerprint of the SF 0.01, seed 1 database: it changes only when the
-- generator's rules change (then update it here, and say why in the commit).
SELECT CASE WHEN (SELECT scale = 0.01 AND seed = 1 AND part_rows_override IS NULL FROM ssb_load_info)
  THEN results_eq($$SELECT count(*), sum(lo_revenue), sum(lo_partkey), sum(lo_custkey), sum(lo_ordtotalprice::bigint),
                           (SELECT md5(string_agg(p_category || p_brand1 || p_name, ',' ORDER BY p_partkey)) FROM part),
                           (SELECT md5(string_agg(c_city || c_mktsegment, ',' ORDER BY c_custkey)) FROM customer)
                    FROM lineorder$$,
                  $$VALUES (59883::bigint, 202892765495::bigint, 59985412::bigint, 8951517::bigint, 1052775027132::numeric,
                            '8cfc9537be87f4391ee7d1873fd08f23'::text, 'a4f0948c4afe4f95f0dfdf987d9b4580'::text)$$,
                  'SF 0.01 seed 1 data match the recorded fingerprint (deterministic generator)')
  ELSE skip('fingerprint is recorded for SF 0.01, seed 1 only') END;

SELECT * FROM finish();
ROLLBACK;
