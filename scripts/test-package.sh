#!/usr/bin/env bash
# Build the Debian package of the extension (make -C pg_extension deb),
# install it into the system PostgreSQL 15, check its contents, and use it
# in a Debian cluster of its own (15/mccdb_pkgtest) the Debian way:
# pg_createcluster, pg_ctlcluster, psql --cluster as the postgres user.
# Prints TAP lines; exits non-zero on any failure.
#
# It always cleans up: it drops the cluster and removes the package again,
# unless the package was installed before it started (then it is left
# installed, at the version just built).  Run it as root or as a user with
# sudo.  It does not touch var/pg or the project's clusters.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# Debian's clusters are reached through --cluster: a libpq environment
# (the test runner's, for its own cluster) would point psql elsewhere.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE

version=$PG_MAJOR
cluster=mccdb_pkgtest
pkg=postgresql-$version-mccdb
ext_dir=$MCCDB_ROOT/pg_extension
pg_config=$PG_SYS_BINDIR/pg_config
log=$(mktemp)

n=0
failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$1"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	printf 'not ok %d - %s\n' "$n" "$1"
	[ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/# /'
}
# check DESCRIPTION COMMAND...: one test line from a command's status.
check() {
	local what=$1
	shift
	if "$@" >"$log" 2>&1; then ok "$what"; else not_ok "$what" "$(tail -n 20 "$log")"; fi
}
bail_out() {
	printf 'Bail out! %s\n' "$1"
	[ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/# /'
	exit 1
}

is_installed() {
	dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null | grep -qx installed
}
cluster_exists() {
	pg_lsclusters -h 2>/dev/null | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { f = 1 } END { exit !f }'
}
drop_cluster() {
	if cluster_exists; then as_root pg_dropcluster --stop "$version" "$cluster"; fi
}
# psql in the test cluster as the postgres OS user; stops at the first error.
psql_test() {
	(cd / && as_root runuser -u postgres -- psql --cluster "$version/$cluster" \
		-X -q -v ON_ERROR_STOP=1 -d postgres "$@")
}

installed_before=no
is_installed && installed_before=yes

cleanup() {
	local rc=$?
	set +e
	drop_cluster >/dev/null 2>&1 || printf '# could not drop cluster %s/%s\n' "$version" "$cluster"
	if [ "$installed_before" = no ] && is_installed; then
		as_root dpkg -r "$pkg" >/dev/null 2>&1 || printf '# could not remove %s\n' "$pkg"
	fi
	rm -f "$log"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v pg_createcluster >/dev/null || die "pg_createcluster missing (postgresql-common)"
[ -x "$pg_config" ] || die "$pg_config missing (postgresql-server-dev-$version)"
pkglibdir=$("$pg_config" --pkglibdir)
extdir=$("$pg_config" --sharedir)/extension

# A `make install` copy in the system directories (scripts/test-usage.sh
# makes one) would be overwritten by the package and deleted with it.
if [ -e "$pkglibdir/mccdb.so" ] && ! dpkg -S "$pkglibdir/mccdb.so" >/dev/null 2>&1; then
	die "$pkglibdir/mccdb.so is not from a package (make install?); remove it first (make -C pg_extension uninstall)"
fi
# A cluster of that name can only be a leftover of an interrupted run.
if cluster_exists; then
	say "dropping the leftover cluster $version/$cluster"
	drop_cluster
fi

extversion=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$ext_dir/mccdb.control")
[ -n "$extversion" ] || die "no default_version in $ext_dir/mccdb.control"
# The SQL files the package must ship: PGXS's DATA, as the Makefile lists it.
data=$(make -s --no-print-directory -C "$ext_dir" -f Makefile -f - print-data <<'EOF'
print-data:
	@echo $(DATA)
EOF
)
[ -n "$data" ] || die "could not read DATA from $ext_dir/Makefile"

# 1. build
say "building the package (make -C pg_extension deb)"
dist_dir=${MCCDB_VAR}/dist
deb_dir=${MCCDB_VAR}/deb
if make -s --no-print-directory -C "$ext_dir" DIST_DIR="$dist_dir" DEB_DIR="$deb_dir" deb >"$log" 2>&1; then
	deb=$(grep '\.deb$' "$log" | tail -n 1)
fi
if [ -n "${deb:-}" ] && [ -f "$deb" ]; then
	ok "make deb built $(basename "$deb")"
else
	not_ok "make deb builds the package" "$(tail -n 30 "$log")"
	bail_out "no package"
fi

# 2. install
say "installing $deb"
if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb" >"$log" 2>&1 &&
	is_installed; then
	ok "apt-get install $pkg"
else
	not_ok "apt-get install $pkg" "$(tail -n 20 "$log")"
	bail_out "package not installed"
fi

# 3. contents
files=$(dpkg -L "$pkg")
has() { grep -qxF "$1" <<<"$files"; }
check "package ships $pkglibdir/mccdb.so" has "$pkglibdir/mccdb.so"
check "package ships $extdir/mccdb.control" has "$extdir/mccdb.control"
for f in $data; do
	check "package ships $extdir/$f" has "$extdir/$f"
done
check "package ships $extdir/mccdb--$extversion.sql (default_version)" has "$extdir/mccdb--$extversion.sql"
check "package ships the bitcode index $pkglibdir/bitcode/mccdb.index.bc" has "$pkglibdir/bitcode/mccdb.index.bc"
check "package ships the bitcode $pkglibdir/bitcode/mccdb/mccdb.bc" has "$pkglibdir/bitcode/mccdb/mccdb.bc"

# 4. a Debian cluster preloading mccdb (pg_createcluster picks a free port)
say "creating cluster $version/$cluster"
if as_root pg_createcluster "$version" "$cluster" -o shared_preload_libraries=mccdb >"$log" 2>&1 &&
	as_root pg_ctlcluster "$version" "$cluster" start >>"$log" 2>&1; then
	ok "pg_createcluster $version $cluster with shared_preload_libraries=mccdb, started"
else
	not_ok "pg_createcluster $version $cluster, pg_ctlcluster start" "$(tail -n 20 "$log")"
	bail_out "no cluster"
fi

check "CREATE EXTENSION mccdb" psql_test -c 'CREATE EXTENSION mccdb'

# Values come from stdout alone: sudo may warn on stderr (an unresolvable
# host name, say), which is not part of the answer.
got=$(psql_test -tA -c "select extversion from pg_extension where extname = 'mccdb'" 2>"$log") || true
if [ "$got" = "$extversion" ]; then
	ok "extversion is default_version $extversion"
else
	not_ok "extversion is default_version $extversion" "got: $got $(cat "$log")"
fi

setup="
create table pkgtest_fact (k int, v int);
create table pkgtest_dim (k int primary key, name text);
insert into pkgtest_dim select g, 'd' || g from generate_series(1, 1000) g;
insert into pkgtest_fact select g % 1000 + 1, g from generate_series(1, 20000) g;
analyze pkgtest_fact, pkgtest_dim;"
check "create and fill two tables" psql_test -c "$setup"

query="select count(*), sum(f.v) from pkgtest_fact f join pkgtest_dim d on d.k = f.k"
explain=$(psql_test -tA -c "set enable_nestloop = off" -c "set enable_mergejoin = off" \
	-c "set mccdb.explain = on" -c "explain (costs off) $query" 2>&1) || true
if grep -q '^MCC-DB Locality:' <<<"$explain" && grep -q 'Hash Join' <<<"$explain"; then
	ok "EXPLAIN of a hash join shows 'MCC-DB Locality:'"
else
	not_ok "EXPLAIN of a hash join shows 'MCC-DB Locality:'" "$explain"
fi

jit_settings=(-c "set jit = on" -c "set jit_above_cost = 0" -c "set jit_inline_above_cost = 0"
	-c "set jit_optimize_above_cost = 0")
if expected=$(psql_test -tA -c "set jit = off" -c "$query" 2>"$log") &&
	got=$(psql_test -tA "${jit_settings[@]}" -c "$query" 2>>"$log") &&
	[[ $expected =~ ^[0-9|]+$ ]] && [ "$got" = "$expected" ]; then
	ok "query with JIT and inlining on runs, same result ($got)"
else
	not_ok "query with JIT and inlining on runs, same result" "without JIT: $expected"$'\n'"with JIT: $got"$'\n'"$(cat "$log")"
fi
# (EXPLAIN prints its JIT summary only with COSTS on.)
plan=$(psql_test -tA "${jit_settings[@]}" -c "explain (analyze, timing off) $query" 2>&1) || true
if grep -q "Inlining true" <<<"$plan"; then
	ok "EXPLAIN ANALYZE reports JIT with inlining"
else
	not_ok "EXPLAIN ANALYZE reports JIT with inlining" "$plan"
fi

echo "1..$n"
if [ "$failed" -gt 0 ]; then
	printf '# %d of %d failed\n' "$failed" "$n"
	exit 1
fi
