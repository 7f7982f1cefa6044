-- Session settings for the test box's queries, after force_hash.sql or
-- force_index.sql (benchmarks/plq/README.md): no Gather node, one batch.
set max_parallel_workers_per_gather = 0;
set work_mem = '64MB';
