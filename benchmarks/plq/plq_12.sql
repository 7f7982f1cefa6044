-- PLQ_12: synthetic part-lineorder query of MCC-DB (VLDB 2009), section 4.2.1.
-- 12 disjunct(s) on p_category (MFGR#11 .. MFGR#32 in the fixed order of
-- benchmarks/plq/README.md), selectivity on part about 48%.
select sum(lo_revenue)
from part, lineorder
where p_partkey = lo_partkey
  and (p_category = 'MFGR#11' or p_category = 'MFGR#12' or p_category = 'MFGR#13' or p_category = 'MFGR#14' or p_category = 'MFGR#15' or p_category = 'MFGR#21' or p_category = 'MFGR#22' or p_category = 'MFGR#23' or p_category = 'MFGR#24' or p_category = 'MFGR#25' or p_category = 'MFGR#31' or p_category = 'MFGR#32');
