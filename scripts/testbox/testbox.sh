#!/usr/bin/env bash
# The test box: the patched kernel booted under QEMU (TCG, 2 vCPUs) with a
# userland holding PostgreSQL 15 and mccdb, checked end to end.
#
#   scripts/testbox/testbox.sh [--record]
#
# 1. kernel: the page colouring series with ACPI and Unix sockets
#    (benchmarks/llcsim/scripts/build-kernel.sh, shared with the simulator)
# 2. data: a project-local cluster "testbox" (port $TESTBOX_PORT) with
#    SSB at SF $TESTBOX_SCALE and CREATE EXTENSION mccdb, then stopped
# 3. image: var/pg's server, psql and mccdb, the shared libraries they load,
#    that data directory, the static pagecolor tool and guest/fullstack,
#    packed by kernel-patch/scripts/mkinitramfs.sh (uncompressed cpio)
# 4. boot with page_colors=$TESTBOX_COLORS (kernel-patch/scripts/boot-test.sh
#    judges the console: TAP, dmesg, sentinels), unpack the archive the
#    guest prints, and check it (check_fullstack.py): buffer pool pages on
#    the buffer-pool colours, hash table pages spread over the colours mccdb
#    gave the hash join, the index join's new pages never outside its set,
#    results equal to the stock run, MLS co-ran the two.
# The report goes to var/testbox/report.md; --record also copies it to
# docs/results/testbox-fullstack.md.
#
# Environment: TESTBOX_SCALE (0.1) TESTBOX_COLORS (32) TESTBOX_MEM (2048 MiB)
#   TESTBOX_TIMEOUT (3600 s) TESTBOX_PORT (54324) TESTBOX_PLQ_HASH (25)
#   TESTBOX_PLQ_INDEX (12)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

here=$MCCDB_ROOT/scripts/testbox
box=$MCCDB_VAR/testbox
SCALE=${TESTBOX_SCALE:-0.1}
COLORS=${TESTBOX_COLORS:-32}
MEM=${TESTBOX_MEM:-2048}
TIMEOUT=${TESTBOX_TIMEOUT:-3600}
PORT=${TESTBOX_PORT:-54324}
PLQ_HASH=${TESTBOX_PLQ_HASH:-25}
PLQ_INDEX=${TESTBOX_PLQ_INDEX:-12}
record=0
case ${1:-} in
--record) record=1 ;;
'') ;;
*) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
PY=$MCCDB_ROOT/.venv/bin/python3
[ -x "$PY" ] || PY=python3
cluster() { "$MCCDB_ROOT/scripts/pg-cluster.sh" "$@"; }

kernel=$(JOBS=${JOBS:-2} "$MCCDB_ROOT/benchmarks/llcsim/scripts/build-kernel.sh" | tail -1)
make -s -C "$MCCDB_ROOT/kernel-patch/tools/pagecolor" pagecolor.static

# --- data --------------------------------------------------------------
cluster install
# Small WAL: the data directory goes into the guest's RAM.  mccdb is
# preloaded here only because CREATE EXTENSION needs it.
cluster start testbox --port "$PORT" --set "min_wal_size = 32MB" --set "max_wal_size = 64MB"
(
	eval "$(cluster env testbox)"
	"$PG_BINDIR/psql" -X -q -d postgres -tAc "select 1 from pg_database where datname = 'ssb'" | grep -q 1 ||
		"$PG_BINDIR/psql" -X -q -d postgres -c "create database ssb"
	if ! PGDATABASE=ssb "$PY" "$MCCDB_ROOT/benchmarks/ssb/ssb_generate.py" --scale "$SCALE" --check >/dev/null 2>&1; then
		say "loading SSB SF $SCALE into the testbox cluster"
		PGDATABASE=ssb "$PY" "$MCCDB_ROOT/benchmarks/ssb/ssb_generate.py" --scale "$SCALE" >/dev/null
	fi
	"$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -d ssb -c "create extension if not exists mccdb" -c "checkpoint" -c "checkpoint"
)
cluster stop testbox

# --- image -------------------------------------------------------------
say "staging the guest userland in $box/root"
root=$box/root
rm -rf "$root" "$box/out"
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

image=$box/testbox.cpio
"$MCCDB_ROOT/kernel-patch/scripts/mkinitramfs.sh" -o "$image" -t "$here/guest" -l fullstack \
	-p "$MCCDB_ROOT/kernel-patch/tools/pagecolor/pagecolor.static" -r "$root" -T "$TIMEOUT" >&2
rm -rf "$root"

# --- boot and check ----------------------------------------------------
serial=$box/serial.log
rc=0
"$MCCDB_ROOT/kernel-patch/scripts/boot-test.sh" -k "$kernel" -i "$image" -o "$serial" -e any \
	-m "$MEM" -s 2 -t "$TIMEOUT" -a "page_colors=$COLORS" || rc=$?
tr -d '\r' <"$serial" | sed -n '/^=== TESTBOX ARCHIVE BEGIN/,/^=== TESTBOX ARCHIVE END/p' |
	sed '1d;$d' | base64 -d | tar -xz -C "$box" || { echo "testbox: no archive in $serial" >&2; exit 1; }
crc=0
"$PY" "$here/check_fullstack.py" "$box/out" --report "$box/report.md" --boot-rc "$rc" \
	--scale "$SCALE" --plq-hash "$PLQ_HASH" --plq-index "$PLQ_INDEX" --mem "$MEM" || crc=$?
if [ "$record" = 1 ]; then
	mkdir -p "$MCCDB_ROOT/docs/results"
	cp "$box/report.md" "$MCCDB_ROOT/docs/results/testbox-fullstack.md"
fi
[ "$rc" = 0 ] && [ "$crc" = 0 ]
