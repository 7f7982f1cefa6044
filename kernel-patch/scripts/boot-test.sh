#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel under QEMU (TCG) with the selftest initramfs, capture the
# serial log, and decide pass/fail from it.
#
# usage: boot-test.sh -k BZIMAGE -i INITRD [-o LOG] [-e supported|unsupported|any]
#                     [-a "EXTRA KERNEL ARGS"] [-t TIMEOUT_S] [-m MEM_MB] [-s SMP]
#                     [-c CPU_MODEL] [-q "EXTRA QEMU ARGS"]
#   -k  kernel image (bzImage)
#   -i  initramfs built by mkinitramfs.sh
#   -o  serial log file (default: build/boot-test-<timestamp>.log)
#   -e  what the probe must report: "supported" (default; the patched kernel
#       with colouring on: every test program must pass, none may skip),
#       "unsupported" (stock kernel or colouring off: color_probe must pass
#       and report unsupported, all other programs must skip), "any"
#   -a  extra kernel command line (e.g. page_colors=64)
#   -t  timeout for the whole guest run in seconds (default 1200)
#   -m  guest memory in MiB (default 1024); -s QEMU -smp (default 2; e.g. "2,sockets=2")
#   -c  QEMU -cpu model (default "qemu64,l3-cache=on": the guest then reports
#       an L3 of 16 MiB, 16-way, 64-byte lines in sysfs => 256 colours)
#   -q  extra QEMU arguments, split at blanks (e.g. -numa options)
#
# Exit status: 0 pass; 1 a test failed, a program was skipped unexpectedly,
# dmesg showed BUG/WARNING/Oops/KASAN/..., or the sentinel line is missing
# (the guest crashed, hung or timed out); 2 usage or missing files.
set -uo pipefail

kernel= initrd= log= expect=supported append= timeout_s=1200 mem=1024 smp=2
cpu="qemu64,l3-cache=on"
qemu_extra=
usage() { sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'; }
while getopts "k:i:o:e:a:t:m:s:c:q:h" opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	i) initrd=$OPTARG ;;
	o) log=$OPTARG ;;
	e) expect=$OPTARG ;;
	a) append=$OPTARG ;;
	t) timeout_s=$OPTARG ;;
	m) mem=$OPTARG ;;
	s) smp=$OPTARG ;;
	c) cpu=$OPTARG ;;
	q) qemu_extra=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ -f "$kernel" ] || { echo "boot-test: kernel image '$kernel' not found" >&2; exit 2; }
[ -f "$initrd" ] || { echo "boot-test: initramfs '$initrd' not found" >&2; exit 2; }
case $expect in supported|unsupported|any) ;; *) usage >&2; exit 2 ;; esac
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "boot-test: qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 2; }
if [ -z "$log" ]; then
	mkdir -p build
	log=build/boot-test-$(date +%Y%m%d-%H%M%S).log
fi
mkdir -p "$(dirname "$log")"

# panic=-1: reboot at once on panic, which -no-reboot turns into QEMU exiting,
# so a crashed guest ends the run instead of hanging until the timeout.
cmdline="console=ttyS0 panic=-1 oops=panic panic_on_warn=0 $append"
echo "boot-test: booting $kernel (cpu $cpu, ${mem} MiB, -smp $smp, timeout ${timeout_s}s)"
echo "boot-test: cmdline: $cmdline"
[ -z "$qemu_extra" ] || echo "boot-test: qemu: $qemu_extra"
echo "boot-test: serial log: $log"
start=$(date +%s)
# $qemu_extra is split at blanks on purpose
# shellcheck disable=SC2086
timeout --foreground -k 10 "$timeout_s" \
	qemu-system-x86_64 -accel tcg -cpu "$cpu" -m "$mem" -smp "$smp" \
	-nographic -no-reboot -monitor none -serial stdio \
	-kernel "$kernel" -initrd "$initrd" -append "$cmdline" $qemu_extra \
	< /dev/null > "$log" 2>&1
qrc=$?
secs=$(( $(date +%s) - start ))
# The serial stream has \r\n line ends and escape sequences from the BIOS.
clean=$(mktemp)
trap 'rm -f "$clean"' EXIT
tr -d '\r' < "$log" > "$clean"

fail=0
reasons=()
summary=$(grep -a -o '=== PCTEST SUMMARY .*' "$clean" | tail -1)
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	reasons+=("guest timed out after ${timeout_s}s")
	fail=1
fi
if [ -z "$summary" ]; then
	reasons+=("no summary sentinel: the guest crashed, hung or was killed (QEMU exit $qrc)")
	fail=1
fi

# Per-program results and TAP lines (only lines the tests print themselves).
n_ok=$(grep -a -c -E '^ok [0-9]+ ' "$clean")
n_skip=$(grep -a -c -E '^ok [0-9]+ .*# SKIP' "$clean")
n_notok=$(grep -a -c -E '^not ok [0-9]+ ' "$clean")
results=$(grep -a -E '^=== PCTEST RESULT ' "$clean" | sed 's/^=== PCTEST RESULT //')
probe=$(grep -a -o -E '^# probe: (supported|unsupported)' "$clean" | head -1 | sed 's/# probe: //')

while read -r name rc res secs_t; do
	[ -n "$name" ] || continue
	case $res in
	PASS) ;;
	SKIP)
		if [ "$expect" = supported ]; then
			reasons+=("$name skipped although the kernel should support colouring")
			fail=1
		fi ;;
	*) reasons+=("$name failed ($rc $res)"); fail=1 ;;
	esac
	if [ "$expect" = unsupported ] && [ "$name" != color_probe ] && [ "$res" = PASS ]; then
		reasons+=("$name passed, but on an unsupported kernel it should skip")
		fail=1
	fi
done <<< "$results"

if [ -n "$summary" ]; then
	trouble=$(sed -n 's/.*dmesg_trouble=\([0-9]*\).*/\1/p' <<< "$summary")
	if [ "${trouble:-1}" != 0 ]; then
		reasons+=("dmesg shows $trouble BUG/WARNING/Oops/KASAN lines")
		fail=1
	fi
fi
# Trouble the guest could not report itself (e.g. an oops that killed init).
if grep -a -E 'Kernel panic|BUG:|Oops|KASAN:|WARNING:.*at ' "$clean" | grep -a -q -v -E '^(ok|not ok|#) ' &&
	[ -z "$summary" ]; then
	reasons+=("kernel trouble on the console")
fi
if [ "$n_notok" -gt 0 ]; then
	reasons+=("$n_notok TAP tests not ok")
	fail=1
fi
if [ "$expect" != any ] && [ -n "$summary" ] && [ "$probe" != "$expect" ]; then
	reasons+=("color_probe reports '${probe:-nothing}', expected '$expect'")
	fail=1
fi

# A failing program's own diagnostics ("#" lines) and its "not ok" lines,
# from its section of the log: the serial log may live in a temporary
# tree (fresh-machine.sh), so what says why it failed must be printed here.
# The last $diag_lines lines of each such program.
diag_lines=60
program_diagnostics() {
	awk -v name="$1" '
		$0 ~ "^=== PCTEST RUN " name "( |$)" { on = 1; next }
		$0 ~ "^=== PCTEST RESULT " name " " { on = 0 }
		on && /^(#|not ok [0-9]+ )/ { print }
	' "$clean" | tail -n "$diag_lines"
}

echo "---------------------------------------------------------------------"
echo "$results" | sed 's/^/boot-test: program /'
grep -a -E '^not ok [0-9]+ ' "$clean" | sed 's/^/boot-test: /'
while read -r name rc res secs_t; do
	[ -n "$name" ] || continue
	case $res in PASS|SKIP) continue ;; esac
	echo "boot-test: $name failed; its diagnostics (last $diag_lines):"
	program_diagnostics "$name" | sed "s/^/boot-test: $name: /"
done <<< "$results"
grep -a -E 'BUG:|WARNING:|Oops|KASAN|Kernel panic|Huh VM_FAULT_OOM' "$clean" | grep -a -v -E '^(ok|not ok|#) ' |
	head -20 | sed 's/^/boot-test: console: /'
echo "boot-test: ${summary:-no summary}"
echo "boot-test: TAP: $n_ok ok ($n_skip skipped), $n_notok not ok; probe: ${probe:-?}; wall ${secs}s; log $log"
if [ "$fail" = 0 ]; then
	echo "boot-test: PASS"
	exit 0
fi
for r in "${reasons[@]}"; do echo "boot-test: FAIL: $r"; done
echo "boot-test: FAIL (serial log: $log)"
exit 1
