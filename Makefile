# mccdb: two commands do everything on a fresh Debian 12 machine.
#   make demo   start a local server with mccdb, load a small SSB database,
#               show the locality class of the SSB and PLQ queries
#   make test   every test: extension (pg_regress + pgTAP), data generator,
#               benchmark harness, kernel patch (booted under QEMU), cache
#               simulator, PostgreSQL + mccdb on the patched kernel (test box)
#   make bench  the full benchmark set (long), results in docs/results/
# Both install what they need themselves and are idempotent.

.PHONY: all deps extension deb demo bench bench-native bench-oltp bench-sim bench-guest test test-long test-extension test-package test-kernel test-llcsim test-box clean

all: extension

deps:
	scripts/install-deps.sh

extension: deps
	scripts/pg-cluster.sh install

# The Debian package of the extension (pg_buildext): var/deb/*.deb.
deb: deps
	$(MAKE) -C pg_extension deb

demo: deps
	scripts/demo.sh

test: deps
	scripts/run-tests.sh

# The extension's tests with the long storm: 2,000 cancel/terminate signals
# at gated queries (make test sends 100), and 60 s of fifty sessions a policy
# (make test: 8 s).
test-long: deps
	MCCDB_STORM_SIGNALS=2000 MCCDB_SOAK_SECONDS=60 scripts/run-tests.sh extension

# The full set of experiments (long, hours): docs/results/.  Run it alone:
# every experiment waits for a quiet machine and refuses a busy one.
bench: bench-native bench-sim bench-guest

bench-native: deps
	scripts/pg-cluster.sh install
	benchmarks/run_all.sh

# What mccdb costs OLTP, feature by feature (issue 49): pgbench against a
# stock server, mccdb with every feature off and each feature alone, by
# subtraction; the same pages make bench-native makes (benchmarks/run_all.sh).
bench-oltp: deps
	scripts/pg-cluster.sh install
	benchmarks/run_all.sh oltp

# The simulator's pages (simulated cycles, in a QEMU TCG guest): the
# validation, the LLC domains and way masks, the timing fit to native
# microbenchmarks (calibrate-bw: the bandwidth term on native contention
# runs; calibrate; calibrate-tlb: the page walk on native chases on 4 KiB
# pages against THP; window: the overlap model's window on native loads K
# dependent adds apart; cpi-dyn: PostgreSQL's base CPI on a native cached
# scan) and the overlap model against native timing, the
# calibrated timing on the native study's PostgreSQL curve (pg-validate)
# and the LLC a stream leaves a resident chase (share),
# Table 2 in its three variants and with the overlap model, Figures 2 and
# 6, and placement vs colouring vs resctrl with PostgreSQL, and the map of
# where each mechanism pays (pg-map at LLCs of 0.5, 1, 2 and 4 MiB).
# Each line is the command its page names (benchmarks/tests checks it).
bench-sim: deps
	benchmarks/llcsim/run.sh validate
	benchmarks/llcsim/run.sh domains
	benchmarks/llcsim/run.sh calibrate-bw --measure
	benchmarks/llcsim/run.sh calibrate-tlb --measure
	CAL_PF=16 benchmarks/llcsim/run.sh calibrate
	benchmarks/llcsim/run.sh window --measure
	benchmarks/llcsim/run.sh cpi-dyn --measure
	benchmarks/llcsim/run.sh share
	benchmarks/llcsim/run.sh mlp
	benchmarks/llcsim/run.sh pg-validate
	TABLE2_REPS=3 benchmarks/llcsim/run.sh table2
	TABLE2_VARIANT=disjoint TABLE2_REPS=3 benchmarks/llcsim/run.sh table2
	TABLE2_VARIANT=default TABLE2_REPS=3 benchmarks/llcsim/run.sh table2
	TABLE2_REPS=3 ROB=320 benchmarks/llcsim/run.sh table2
	benchmarks/llcsim/run.sh pg-fig2
	benchmarks/llcsim/run.sh pg-fig6
	benchmarks/llcsim/run.sh pg-compare
	LLC_SIZE=2M MAP_RATIOS=1,2 MAP_CORUNNERS=scan,hj,stream MAP_MECHS=stock,colors,placement MAP_PROBE_MIN=0 PG_REPS=2 benchmarks/llcsim/run.sh pg-map
	LLC_SIZE=1M MAP_RATIOS=1,2 MAP_CORUNNERS=scan,hj,stream MAP_MECHS=stock,colors,placement MAP_PROBE_MIN=0 PG_REPS=2 benchmarks/llcsim/run.sh pg-map
	LLC_SIZE=512K MAP_RATIOS=0.5,1,2 MAP_CORUNNERS=scan,hj,ij,stream MAP_MECHS=stock,colors,resctrl,placement MAP_PROBE_MIN=0 PG_REPS=2 benchmarks/llcsim/run.sh pg-map
	LLC_SIZE=4M MAP_RATIOS=1 MAP_CORUNNERS=scan,hj,stream MAP_MECHS=stock,colors,placement MAP_PROBE_MIN=0 PG_REPS=2 benchmarks/llcsim/run.sh pg-map
	LLC_SIZE=1M benchmarks/llcsim/run.sh pg-compare
	TIMING=calibrated TABLE2_REPS=3 benchmarks/llcsim/run.sh table2
	TIMING=calibrated benchmarks/llcsim/run.sh pg-fig6

# In the patched kernel's guest: fault throughput and memory pressure
# (kernel-patch/Makefile bench), and the full stack on the test box.
bench-guest: deps
	$(MAKE) -C kernel-patch bench
	scripts/testbox/testbox.sh --record

# One part only.
test-extension: deps
	scripts/run-tests.sh extension

# The install steps of docs/usage.md and the Debian package, against the
# system PostgreSQL (installs, checks, removes again).
test-package: deps
	scripts/run-tests.sh package

test-kernel: deps
	$(MAKE) -C kernel-patch test

# The cache simulator against known answers, in a booted guest (about a
# minute; make test runs the --quick form).
test-llcsim: deps
	benchmarks/llcsim/run.sh validate

# PostgreSQL with mccdb on the patched kernel in a QEMU guest, checked end to
# end; --record keeps the report in docs/results/testbox-fullstack.md.
test-box: deps
	scripts/testbox/testbox.sh --record

clean:
	-scripts/pg-cluster.sh stop testbox
	-scripts/pg-cluster.sh stop test
	-scripts/pg-cluster.sh stop nopreload
	-scripts/pg-cluster.sh stop demo
	$(MAKE) -C pg_extension clean
	rm -rf var
