-- PLQ_5: synthetic part-lineorder query of MCC-DB (VLDB 2009), section 4.2.1.
-- 5 disjunct(s) on p_category (MFGR#11 .. MFGR#15 in the fixed order of
-- benchmarks/plq/README.md), selectivity on part about 20%.
select sum(lo_revenue)
from part, lineorder
where p_partkey = lo_partkey
  and (p_category = 'MFGR#11' or p_category = 'MFGR#12' or p_category = 'MFGR#13' or p_category = 'MFGR#14' or p_category = 'MFGR#15');
