-- Force the hash-join plan for PLQ_n: hash table built on part, lineorder probes it.
set enable_nestloop = off;
set enable_mergejoin = off;
