-- PLQ_1: synthetic part-lineorder query of MCC-DB (VLDB 2009), section 4.2.1.
-- 1 disjunct(s) on p_category (MFGR#11 .. MFGR#11 in the fixed order of
-- benchmarks/plq/README.md), selectivity on part about 4%.
select sum(lo_revenue)
from part, lineorder
where p_partkey = lo_partkey
  and (p_category = 'MFGR#11');
