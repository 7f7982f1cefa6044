-- Force the bitmap index-join plan for PLQ_n: part is the outer relation of a
-- nested loop whose inner side is a Bitmap Heap Scan on lineorder driven by a
-- Bitmap Index Scan on lineorder(lo_partkey).
set enable_hashjoin = off;
set enable_mergejoin = off;
set enable_memoize = off;
set enable_indexscan = off;
set enable_material = off;
