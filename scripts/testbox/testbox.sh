#!/usr/bin/env bash
# The test box: the patched kernel booted under QEMU (TCG, 2 vCPUs) with a
# userland holding PostgreSQL 15 and mccdb, checked end to end.
#
#   scripts/testbox/testbox.sh [--record]
#
# 1-3. mkimage.sh: the kernel (the page colouring series with ACPI and Unix
#    sockets, shared with the simulator), a project-local cluster "testbox"
#    with SSB at SF $TESTBOX_SCALE and CREATE EXTENSION mccdb, and an
#    initramfs with var/pg's server, psql and mccdb, their libraries, that
#    data directory, the static pagecolor tool and guest/fullstack
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
#   TESTBOX_TIMEOUT (3600 s), and those of mkimage.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

here=$MCCDB_ROOT/scripts/testbox
box=$MCCDB_VAR/testbox
SCALE=${TESTBOX_SCALE:-0.1}
COLORS=${TESTBOX_COLORS:-32}
MEM=${TESTBOX_MEM:-2048}
TIMEOUT=${TESTBOX_TIMEOUT:-3600}
PLQ_HASH=${TESTBOX_PLQ_HASH:-25}
PLQ_INDEX=${TESTBOX_PLQ_INDEX:-12}
record=0
case ${1:-} in
--record) record=1 ;;
'') ;;
*) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
PY=$MCCDB_PY	# the project's venv (scripts/install-deps.sh): mccdb_bench's guard

image=$box/testbox.cpio
rm -rf "$box/out"
kernel=$("$here/mkimage.sh" -o "$image" -t "$here/guest" -l fullstack -T "$TIMEOUT" | tail -1)

# --- boot and check ----------------------------------------------------
# A recorded run is a result: the guest boots behind the quiet-machine
# guard (it waits for an idle host and records the load); a test run checks
# behaviour only and says in its report that no guard ran.
serial=$box/serial.log
rc=0
noguard=()
[ "$record" = 1 ] || noguard=(--no-guard)
"$PY" -m mccdb_bench.harness.quiet "${noguard[@]}" --own-load 2 --what "the guest run" \
	--summary "$box/guard.md" -- \
	"$MCCDB_ROOT/kernel-patch/scripts/boot-test.sh" -k "$kernel" -i "$image" -o "$serial" -e any \
	-m "$MEM" -s 2 -t "$TIMEOUT" -a "page_colors=$COLORS" || rc=$?
tr -d '\r' <"$serial" | sed -n '/^=== TESTBOX ARCHIVE BEGIN/,/^=== TESTBOX ARCHIVE END/p' |
	sed '1d;$d' | base64 -d | tar -xz -C "$box" || { echo "testbox: no archive in $serial" >&2; exit 1; }
crc=0
record_to=()
[ "$record" = 1 ] && record_to=(--record "$MCCDB_ROOT/docs/results/testbox-fullstack.md")
"$PY" "$here/check_fullstack.py" "$box/out" --report "$box/report.md" --boot-rc "$rc" \
	--scale "$SCALE" --plq-hash "$PLQ_HASH" --plq-index "$PLQ_INDEX" --mem "$MEM" --guard "$box/guard.md" \
	--cmd "scripts/testbox/testbox.sh${1:+ $1}" "${record_to[@]}" || crc=$?
[ "$rc" = 0 ] && [ "$crc" = 0 ]
