-- Force the B-tree index-join plan for PLQ_n: part is the outer relation of a
-- nested loop whose inner side is an Index Scan on lineorder(lo_partkey).
set enable_hashjoin = off;
set enable_mergejoin = off;
set enable_memoize = off;
set enable_bitmapscan = off;
set enable_material = off;
