#!/usr/bin/env bash
# Build the test box image: an initramfs with PostgreSQL 15 (var/pg: the
# server, psql and mccdb, and every shared library they load), a data
# directory with SSB (and, if asked, TPC-H) loaded on the host, the static
# pagecolor tool, and guest programs run in order by the /init of
# kernel-patch/scripts/mkinitramfs.sh.  Also makes sure the kernel is built
# (kernel-patch/scripts/kernel-tree.sh build guest: the page colouring series with
# ACPI and Unix sockets) and prints its path on the last line.
#
#   scripts/testbox/mkimage.sh -o IMAGE -t GUESTDIR -l "PROG[:ARGS] ..."
#       [-T SECONDS] [-b FILE]...
#   -t, -l, -T   as for mkinitramfs.sh (guest programs, list, timeout each)
#   -b FILE      an extra static program for the guest's /bin (repeatable)
#
# Environment: TESTBOX_SCALE (SSB SF, 0.1) TESTBOX_TPCH (TPC-H SF, unset:
#   none) TESTBOX_PORT (54324) TESTBOX_PLQ_HASH (25) TESTBOX_PLQ_INDEX (12)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

here=$MCCDB_ROOT/scripts/testbox
box=$MCCDB_VAR/testbox
SCALE=${TESTBOX_SCALE:-0.1}
TPCH=${TESTBOX_TPCH:-}
PORT=${TESTBOX_PORT:-54324}
PLQ_HASH=${TESTBOX_PLQ_HASH:-25}
PLQ_INDEX=${TESTBOX_PLQ_INDEX:-12}
image= guestdir= list= timeout=3600 extra=()
while getopts "o:t:l:T:b:h" opt; do
	case $opt in
	o) image=$OPTARG ;;
	t) guestdir=$OPTARG ;;
	l) list=$OPTARG ;;
	T) timeout=$OPTARG ;;
	b) extra+=("$OPTARG") ;;
	*) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
[ -n "$image" ] && [ -n "$guestdir" ] && [ -n "$list" ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
cluster() { "$MCCDB_ROOT/scripts/pg-cluster.sh" "$@"; }

kernel=$(JOBS=${JOBS:-2} "$MCCDB_ROOT/kernel-patch/scripts/kernel-tree.sh" build guest | tail -1)
make -s -C "$MCCDB_ROOT/kernel-patch/tools/pagecolor" pagecolor.static

# --- data --------------------------------------------------------------
cluster install
# Small WAL: the data directory goes into the guest's RAM.  mccdb is
# preloaded here only because CREATE EXTENSION needs it.
cluster start testbox --port "$PORT" --set "min_wal_size = 32MB" --set "max_wal_size = 64MB"
(
	eval "$(cluster env testbox)"
	load_unless_loaded ssb ssb_generate "$SCALE" --progress none
	[ -z "$TPCH" ] || load_unless_loaded tpch tpch_load "$TPCH" --progress none
	"$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -d ssb -c "create extension if not exists mccdb" -c "alter extension mccdb update" -c "checkpoint" -c "checkpoint"
)
cluster stop testbox

# --- image -------------------------------------------------------------
say "staging the guest userland in $box/root"
root=$box/root
rm -rf "$root"
pgl=usr/lib/postgresql/$PG_MAJOR
mkdir -p "$root/$pgl/bin" "$root/$pgl/lib" "$root/usr/share/postgresql" "$root/etc" \
	"$root/testbox/queries" "$root/testbox/conf" "$root/usr/share/zoneinfo"
bins=()
for b in postgres pg_ctl psql; do
	cp "$PG_LOCAL/$pgl/bin/$b" "$root/$pgl/bin/"
	bins+=("$PG_LOCAL/$pgl/bin/$b")
done
for l in mccdb.so plpgsql.so; do
	cp "$PG_LOCAL/$pgl/lib/$l" "$root/$pgl/lib/"
	bins+=("$PG_LOCAL/$pgl/lib/$l")
done
cp -a "$PG_LOCAL/usr/share/postgresql/$PG_MAJOR" "$root/usr/share/postgresql/"
rm -rf "$root/usr/share/postgresql/$PG_MAJOR/man"
# The dynamic loader and every library the programs load, at their paths.
for lib in $(ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
cp -L /usr/share/zoneinfo/UTC "$root/usr/share/zoneinfo/UTC"
# initdb's --locale=C.UTF-8 (pg-cluster.sh): glibc loads it from here.
mkdir -p "$root/usr/lib/locale"
cp -a /usr/lib/locale/C.utf8 "$root/usr/lib/locale/"
printf 'root:x:0:0:root:/root:/bin/sh\npostgres:x:70:70:PostgreSQL:/pgdata:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\npostgres:x:70:\n' >"$root/etc/group"
cp "$MCCDB_ROOT/benchmarks/plq/force_hash.sql" "$MCCDB_ROOT/benchmarks/plq/force_index.sql" \
	"$here/session.sql" "$root/testbox/queries/"
cp "$MCCDB_ROOT/benchmarks/plq/plq_$PLQ_HASH.sql" "$root/testbox/queries/plq-hash.sql"
cp "$MCCDB_ROOT/benchmarks/plq/plq_$PLQ_INDEX.sql" "$root/testbox/queries/plq-index.sql"
cp "$here"/conf/* "$root/testbox/conf/"
cp "$here/guestlib.sh" "$root/testbox/"
mkdir -p "$root/testbox/tpch" "$root/testbox/plq" "$root/bin"
cp "$MCCDB_ROOT"/benchmarks/tpch/queries/*.sql "$root/testbox/tpch/"
cp "$MCCDB_ROOT"/benchmarks/plq/plq_*.sql "$root/testbox/plq/"
for f in "${extra[@]+"${extra[@]}"}"; do cp "$f" "$root/bin/"; done
# The cluster was shut down cleanly: of its WAL only the segment with the
# last checkpoint is needed (the others are recycled ones, 16 MiB each).
data=$(cluster_dir testbox)/data
redo=$("$PG_BINDIR/pg_controldata" "$data" | sed -n "s/^Latest checkpoint's REDO WAL file: *//p")
[ -n "$redo" ] && [ -f "$data/pg_wal/$redo" ] || die "no REDO WAL file in $data"
mkdir -p "$root/pgdata"
(cd "$data" && find . -path ./pg_wal -prune -o -print0 | cpio --null -pdm --quiet "$root/pgdata")
mkdir -p "$root/pgdata/pg_wal/archive_status"
cp "$data/pg_wal/$redo" "$root/pgdata/pg_wal/"
rm -f "$root/pgdata/postmaster.pid" "$root/pgdata/mccdb.conf"

"$MCCDB_ROOT/kernel-patch/scripts/mkinitramfs.sh" -o "$image" -t "$guestdir" -l "$list" \
	-p "$MCCDB_ROOT/kernel-patch/tools/pagecolor/pagecolor.static" -r "$root" -T "$timeout" >&2
rm -rf "$root"
echo "$kernel"

