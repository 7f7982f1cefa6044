#!/usr/bin/env bash
# make bench: start the project-local cluster "bench", load the data sets if
# missing, run the calibration and every native experiment of docs/results/
# with the quiet-machine guard, stop.  Nothing else may run meanwhile.
#   MCCDB_BENCH_PORT   port (default 54400)
#   MCCDB_BENCH_SCALE  SSB/TPC-H scale factor (default 1)
#   MCCDB_BENCH_LLC    mccdb.llc_size for the experiments (default 8MB)
#   MCCDB_BENCH_SEC74_SCALE  the SSB scale of section 7.4 at the paper's scale
#                      (default 8: about 4 min to load, 7.4 GB, 27 min to run)
#   MCCDB_BENCH_TPCH_SCALE  the TPC-H scale of the estimation page (default 0.1)
# Each bench line is the command its page names (benchmarks/tests checks it).
# `benchmarks/run_all.sh oltp` (make bench-oltp) runs only the OLTP cost
# pages (issue 49) on the same cluster, without loading the other data sets.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
PORT=${MCCDB_BENCH_PORT:-54400}
SF=${MCCDB_BENCH_SCALE:-1}
LLC=${MCCDB_BENCH_LLC:-8MB}
SF74=${MCCDB_BENCH_SEC74_SCALE:-8}
SFTPCH=${MCCDB_BENCH_TPCH_SCALE:-0.1}
PARTS=$("$MCCDB_PY" -c "print(int(800000 * float('$SF')))")
cd "$MCCDB_ROOT"
# start_bench PORT: the cluster "bench" of the PostgreSQL the scripts name
# ensure_extension DB: mccdb created in DB, at the installed version.
ensure_extension() {
	"$PG_BINDIR/psql" -X -q -d "$1" -c "create extension if not exists mccdb" -c "alter extension mccdb update"
}
start_bench() {
	scripts/pg-cluster.sh start bench --port "$1" --set "shared_buffers = 4GB" \
		--set "work_mem = 64MB" --set "max_parallel_workers_per_gather = 0" --set "jit = off" \
		--set "mccdb.llc_size = '$LLC'"
}
start_bench "$PORT"
trap 'scripts/pg-cluster.sh stop bench' EXIT
eval "$(scripts/pg-cluster.sh env bench)"
# What mccdb costs pgbench, feature by feature, by subtraction (issue 49;
# mccdb_bench.oltp_cost restarts the cluster for every run): every pgbench
# protocol and client count of the two scripts the issue's targets name, for
# the configurations they name (about 100 min), then each feature alone on two scripts at 4 clients; first
# a quick look (two scripts, 1 and 16 clients, 3 rounds: about 25 min, and
# the same on PostgreSQL 18 at the end) and the query id alone (12 min).
oltp_cost_pages() {
	bench oltp_cost --db pgbench --scale 10 --configs stock,all-off,defaults,defaults-shortest --scripts select-only,tpcb-like --clients 1,16 --seconds 10 --warmup 2 --reps 3 --name oltp-cost-quick
	# what the query id mccdb asks for costs the simple protocol (the quick look's open question)
	bench oltp_cost --db pgbench --scale 10 --configs stock,all-off,queryid,defaults --scripts tpcb-like --modes simple --clients 1,16 --seconds 10 --warmup 2 --reps 4 --name oltp-cost-queryid
	bench oltp_cost --db pgbench --scale 10 --configs stock,defaults,defaults-shortest --scripts select-only,tpcb-like --seconds 15 --warmup 3 --reps 8 --name oltp-cost-targets
	# the two cells where it resolved a cost, again after the query id change (about 12 min)
	bench oltp_cost --db pgbench --scale 10 --configs stock,defaults --scripts select-only,tpcb-like --modes simple --clients 1 --seconds 15 --warmup 3 --reps 8 --name oltp-cost-simple-1client
	bench oltp_cost --db pgbench --scale 10 --scripts select-only,tpcb-like --clients 4 --seconds 15 --warmup 3 --reps 8 --name oltp-cost-features
	# the instructions each configuration adds, counted under callgrind (about 20 min)
	bench oltp_instructions --db pgbench --scale 10 --configs stock,stock-queryid,defaults-no-queryid,defaults-queryid-on,all-off,queryid,track-top,track-all,learn,explain,plan-sls,plan-mls,counters,placement,partition,gate-shortest,gate-predictive,defaults,defaults-shortest --name oltp-instructions
	# the same two configurations' simulated cache misses (callgrind's model; about 10 min)
	bench oltp_instructions --db pgbench --scale 10 --configs stock,defaults --scripts select-only,tpcb-like --cache-sim --name oltp-instructions-cachesim
	on_pg18 oltp_cost_pg18
}
# on_pg18 FUNCTION: FUNCTION's bench lines on PostgreSQL 18, in a cluster of
# its own beside bench (stopped meanwhile: one server measured at a time).
on_pg18() {
	scripts/pg-cluster.sh stop bench
	(
		export MCCDB_PG_MAJOR=18
		. scripts/lib.sh
		export PATH="$PG_BINDIR:$PATH"
		scripts/pg-cluster.sh install
		start_bench "$((PORT + 1))"
		trap 'scripts/pg-cluster.sh stop bench' EXIT
		eval "$(scripts/pg-cluster.sh env bench)"
		"$1"
	)
	start_bench "$PORT"
}
oltp_cost_pg18() {
	bench oltp_cost --db pgbench --scale 10 --configs stock,defaults --scripts select-only,tpcb-like --modes simple --clients 1 --seconds 15 --warmup 3 --reps 8 --name oltp-cost-simple-1client-pg18
	bench oltp_cost --db pgbench --scale 10 --configs stock,all-off,defaults,defaults-shortest --scripts select-only,tpcb-like --clients 1,16 --seconds 10 --warmup 2 --reps 3 --name oltp-cost-quick-pg18
	# the targets' every protocol and client count on 18 (about 100 min)
	bench oltp_cost --db pgbench --scale 10 --configs stock,defaults,defaults-shortest --scripts select-only,tpcb-like --seconds 15 --warmup 3 --reps 8 --name oltp-cost-targets-pg18
	bench oltp_instructions --db pgbench --scale 10 --configs stock,stock-queryid,defaults-no-queryid,defaults-queryid-on,all-off,queryid,track-top,track-all,learn,explain,plan-sls,plan-mls,counters,placement,partition,gate-shortest,gate-predictive,defaults,defaults-shortest --name oltp-instructions-pg18
}
memory_budget_pg18() {
	bench memory_budget --reps 5 --name memory-budget-pg18
}
classes_pg18() {
	load_unless_loaded ssb ssb_generate "$SF"
	ensure_extension ssb
	bench classes --db ssb --reps 3 --name workload-classes-pg18
	bench classes --db ssb --batch-slots 0 --reps 3 --name workload-classes-priority-only-pg18
}
if [ "${1:-}" = oltp ]; then
	oltp_cost_pages
	exit 0
fi
# plq: SSB with a larger part table (the PLQ hash tables span the classes)
load_unless_loaded plq ssb_generate "$SF" --part-rows "$PARTS" --no-foreign-keys
load_unless_loaded ssb ssb_generate "$SF"
load_unless_loaded ssb tpch_load "$SF" --schema tpch
load_unless_loaded ssb8 ssb_generate "$SF74" --jobs 2
load_unless_loaded tpch tpch_load "$SFTPCH"
for db in plq ssb ssb8 tpch; do
	ensure_extension "$db"
done
bench calibrate_host --db plq --runs 3
# the commands of the pages in docs/results, with 5 repetitions where they had fewer
bench fig4 --db plq --rounds 5
bench native_study --db ssb --rounds 16
# the same study under the name of the second host's page (Intel Xeon,
# 2026-11-28; native-study.md is the AMD EPYC's, which llcsim's validation
# reads): on one machine both pages are that machine's
bench native_study --db ssb --rounds 16 --name native-study-xeon
bench fig6 --db ssb --reps 5 --plq 1,5,12,25 --name fig6-co-scheduling-sf1
bench sec73 --db plq --reps 5
bench sec73 --db plq --reps 5 --cost-slack 1.25 --name sec7.3-plan-selection-slack1.25
bench sec74 --db ssb --long 5 --rounds 3
bench sec74 --db ssb8 --long 5 --rounds 3 --name sec7.4-ssb-pairs-sf8
bench throughput --db ssb --clients 6 --reps 3
bench pgbench_mix --db ssb --clients 6 --reps 3
bench learning --db ssb --queries 200
bench estimate_accuracy --db ssb --name locality-estimation-ssb-sf1
bench estimate_accuracy --db tpch --runs 2 --name locality-estimation-tpch benchmarks/tpch/queries/q*.sql
bench scheduler_overhead --db ssb
bench mechanism_costs --db plq --reps 5
bench planning_overhead --scale "$SF"
bench oltp_overhead --scale 10 --clients 4 --seconds 20 --reps 3
oltp_cost_pages
bench workload --db ssb --mix short --mode closed --clients 6 --per-client 10 --configs stock,pgbouncer,off,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix short --mode open --load 0.95 --capacity 13218 --clients 6 --per-client 10 --arrivals 60 --seconds 600 --configs stock,pgbouncer,off,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix long --mode closed --clients 6 --per-client 6 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix bimodal --mode closed --clients 6 --per-client 10 --oltp-seconds 30 --configs stock,pgbouncer,pgbouncer2,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix short --mode closed --clients 6 --per-client 10 --parallel-workers 2 --configs stock,pgbouncer,off,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix long --mode open --load 0.95 --capacity 1381 --clients 6 --arrivals 30 --seconds 600 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix short --mode open --load 0.5,0.8 --capacity 13218 --clients 6 --arrivals 60 --seconds 600 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-short-open-low
bench workload --db ssb --mix bimodal --mode open --load 0.5,0.8,0.95 --capacity 13112 --clients 6 --arrivals 60 --seconds 600 --oltp-seconds 30 --configs stock,pgbouncer,pgbouncer2,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix long --mode open --load 0.5,0.8 --capacity 1381 --clients 6 --arrivals 30 --seconds 600 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-long-open-low
bench workload --db ssb --mix bimodal --mode closed --clients 6 --per-client 10 --oltp-seconds 30 --parallel-workers 2 --configs stock,pgbouncer,pgbouncer2,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-bimodal-closed-pw2
bench workload --db ssb --mix long --mode closed --clients 6 --per-client 6 --parallel-workers 2 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-long-closed-pw2
# (issue 50) ad-hoc analytics: short and long from the same clients, OLTP beside
# them.  The two-pool PgBouncer (pgbouncer2: OLTP and analytics in pools of
# their own) stands beside pgbouncer in the bimodal lines (closed, closed
# with parallel workers, open at 50/80/95%) and the closed ad-hoc line; the
# ad-hoc open lines (the short and long mixes have no OLTP to separate)
bench workload --db ssb --mix adhoc --mode closed --clients 6 --per-client 10 --oltp-seconds 60 --configs stock,pgbouncer,pgbouncer2,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix adhoc --mode closed --clients 6 --per-client 10 --oltp-seconds 60 --parallel-workers 2 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-adhoc-closed-pw2
bench workload --db ssb --mix adhoc --mode open --load 0.8 --clients 6 --per-client 10 --arrivals 60 --seconds 600 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3
bench workload --db ssb --mix adhoc --mode open --load 0.8 --clients 6 --per-client 10 --arrivals 60 --seconds 600 --parallel-workers 2 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-adhoc-open-pw2
bench workload --db ssb --mix bimodal --mode open --load 0.5,0.8,0.95 --clients 6 --per-client 10 --arrivals 60 --seconds 600 --oltp-seconds 30 --parallel-workers 2 --configs stock,pgbouncer,mccdb:predictive,mccdb:shortest --reps 3 --name scheduler-vs-pooler-bimodal-open-pw2
# (issue 50) admission by memory: six big hash joins at once in a memory
# cgroup (root or passwordless sudo), with and without mccdb.memory_budget
bench memory_budget --reps 5
# Workload classes (issue 50): two roles in a high and a low class, against one
# shared class, stock and PgBouncer with a pool per role.
bench classes --db ssb --reps 3
bench classes --db ssb --batch-slots 0 --reps 3 --name workload-classes-priority-only
on_pg18 memory_budget_pg18
on_pg18 classes_pg18
bench fig5_table2 --db plq
