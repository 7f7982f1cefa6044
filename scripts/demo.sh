#!/usr/bin/env bash
# make demo: start a project-local server with mccdb, load SSB, show the
# locality class mccdb estimates for the 13 SSB queries and PLQ_1..PLQ_25,
# then run a short Figure 6 (two hash-join + two index-join instances of a
# few PLQ queries under schedule off, sls, mls, adaptive): a table on screen
# and a plot in var/demo/.
#   MCCDB_DEMO_SCALE  SSB scale factor (default 1)
#   MCCDB_DEMO_PORT   port (default 54323)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SCALE=${MCCDB_DEMO_SCALE:-1}
PORT=${MCCDB_DEMO_PORT:-54323}
PY=$MCCDB_PY

"$MCCDB_ROOT/scripts/pg-cluster.sh" install
"$MCCDB_ROOT/scripts/pg-cluster.sh" start demo --port "$PORT" \
	--set "shared_buffers = 1GB" --set "work_mem = 64MB" \
	--set "max_parallel_workers_per_gather = 0"
trap '"$MCCDB_ROOT/scripts/pg-cluster.sh" stop demo' EXIT
eval "$("$MCCDB_ROOT/scripts/pg-cluster.sh" env demo)"

export PGDATABASE=ssb
load_unless_loaded ssb ssb_generate "$SCALE"
"$PG_BINDIR/psql" -X -q -c "create extension if not exists mccdb" -c "alter extension mccdb update"
# a matrix measured by an earlier run (mccdb_interference) spares Figure 6 its calibration
"$PG_BINDIR/psql" -X -q -tAc "select mccdb_load_interference()" >/dev/null
"$PG_BINDIR/psql" -X -c "select level, size_bytes, ways, shared_cpu_list, source, llc_bytes, page_colors from mccdb_cache_geometry()"

"$PY" "$MCCDB_ROOT/scripts/show_locality.py" "$MCCDB_ROOT"/benchmarks/ssb/queries/q*.sql
plq=("$MCCDB_ROOT"/benchmarks/plq/plq_*.sql)
if [ -e "${plq[0]}" ]; then
	"$PY" "$MCCDB_ROOT/scripts/show_locality.py" --force hash "${plq[@]}"
	"$PY" "$MCCDB_ROOT/scripts/show_locality.py" --force index "${plq[@]}"
fi
echo
echo "EXPLAIN shows the same, e.g. for SSB Q2.1:"
"$PG_BINDIR/psql" -X -c "set mccdb.explain = on" -c "explain (costs off) $(cat "$MCCDB_ROOT/benchmarks/ssb/queries/q2.1.sql" | sed 's/;\s*$//')"

say "co-scheduling: Figure 6, short form (a few minutes)"
mkdir -p "$MCCDB_VAR/demo"
# a demo, not a result: no quiet-machine guard (results come from make bench)
bench fig6 --db ssb --quick --no-guard --outdir "$MCCDB_VAR/demo"
say "table and plot written to $MCCDB_VAR/demo/"
