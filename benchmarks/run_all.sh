#!/usr/bin/env bash
# make bench: start the project-local cluster "bench", load the data sets if
# missing, run calibration and experiments 1-6, write docs/results/, stop.
#   MCCDB_BENCH_PORT   port (default 54400)
#   MCCDB_BENCH_SCALE  SSB/TPC-H scale factor (default 1)
#   MCCDB_BENCH_LLC    mccdb.llc_size for the experiments (default 8MB)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=${MCCDB_BENCH_PORT:-54400}
SF=${MCCDB_BENCH_SCALE:-1}
LLC=${MCCDB_BENCH_LLC:-8MB}
PY=$ROOT/.venv/bin/python
PARTS=$("$PY" -c "print(int(800000 * float('$SF')))")
cd "$ROOT"
scripts/pg-cluster.sh start bench --port "$PORT" --set "shared_buffers = 4GB" \
	--set "work_mem = 64MB" --set "max_parallel_workers_per_gather = 0" --set "jit = off" \
	--set "mccdb.llc_size = '$LLC'"
trap 'scripts/pg-cluster.sh stop bench' EXIT
eval "$(scripts/pg-cluster.sh env bench)"
for db in plq ssb; do
	psql -X -q -d postgres -tAc "select 1 from pg_database where datname = '$db'" | grep -q 1 ||
		psql -X -q -d postgres -c "create database $db"
	psql -X -q -d "$db" -c "create extension if not exists mccdb" -c "alter extension mccdb update"
done
PGDATABASE=plq "$PY" benchmarks/ssb/ssb_generate.py --check --scale "$SF" --part-rows "$PARTS" >/dev/null 2>&1 ||
	PGDATABASE=plq "$PY" benchmarks/ssb/ssb_generate.py --scale "$SF" --part-rows "$PARTS" --no-foreign-keys
PGDATABASE=ssb "$PY" benchmarks/ssb/ssb_generate.py --check --scale "$SF" >/dev/null 2>&1 ||
	PGDATABASE=ssb "$PY" benchmarks/ssb/ssb_generate.py --scale "$SF"
PGDATABASE=ssb "$PY" benchmarks/tpch/tpch_load.py --check --scale "$SF" --schema tpch >/dev/null 2>&1 ||
	PGDATABASE=ssb "$PY" benchmarks/tpch/tpch_load.py --scale "$SF" --schema tpch
PGDATABASE=plq "$PY" benchmarks/mccdb_calibrate.py --runs 2
E=benchmarks/experiments
"$PY" $E/fig4.py --db plq --rounds 3
"$PY" $E/fig6.py --db plq --reps 2
"$PY" $E/sec73.py --db plq --reps 3
"$PY" $E/sec74.py --db ssb --long 5 --rounds 2
"$PY" $E/throughput.py --db ssb --clients 6 --reps 3
"$PY" $E/pgbench_mix.py --db ssb --clients 6 --reps 3
"$PY" $E/fig5_table2.py --db plq
