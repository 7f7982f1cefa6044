#!/usr/bin/env bash
# Follow docs/usage.md's install steps literally: the shell block after the
# marker "<!-- doc-test: install" is run as written, from the top of the
# repository, as the calling user (root, or a user with sudo), against a
# Debian cluster of its own.  The one change: its first line, which names
# Debian's cluster 15 main, names the test cluster instead.  So a doc that
# drifts from the code fails here.
#
# It touches the system PostgreSQL 15: it installs mccdb there with
# `make install` and removes it again with `make uninstall`, and it creates
# and drops the cluster 15/mccdb_doctest.  It refuses to run where the
# Debian package postgresql-15-mccdb is installed (it would overwrite it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
# As a DBA's shell would be: no libpq environment pointing at another server.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE

version=$PG_MAJOR
cluster=mccdb_doctest
doc=$MCCDB_ROOT/docs/usage.md
block=$(mktemp)
trap 'rm -f "$block"' EXIT

# The block: the first ```sh fence after the marker, up to its closing fence.
awk '/<!-- doc-test: install/ { m = 1; next }
     m == 1 && /^```sh$/ { m = 2; next }
     m == 2 && /^```$/ { exit }
     m == 2 { print }' "$doc" >"$block"
[ -s "$block" ] || die "no doc-test install block in $doc"
first='version=15 cluster=main'
[ "$(head -n 1 "$block")" = "$first" ] ||
	die "the doc-test block must start with '$first' (found: $(head -n 1 "$block"))"
sed -i "1s/.*/version=$version cluster=$cluster/" "$block"

if dpkg-query -W -f='${Status}' "postgresql-$version-mccdb" 2>/dev/null | grep -q 'install ok installed'; then
	die "the package postgresql-$version-mccdb is installed; this test would overwrite its files (remove it first)"
fi

cleanup() {
	as_root pg_dropcluster --stop "$version" "$cluster" 2>/dev/null || true
	as_root make -s -C "$MCCDB_ROOT/pg_extension" PG_CONFIG="$PG_SYS_BINDIR/pg_config" uninstall >/dev/null 2>&1 || true
	rm -f "$block"
}
trap cleanup EXIT
as_root pg_dropcluster --stop "$version" "$cluster" 2>/dev/null || true
say "creating Debian cluster $version/$cluster for the doc test"
as_root pg_createcluster "$version" "$cluster" --start >/dev/null

say "running docs/usage.md's install block:"
sed 's/^/    /' "$block" >&2
cd "$MCCDB_ROOT"
bash -euxo pipefail "$block"
say "docs/usage.md's install steps passed"
