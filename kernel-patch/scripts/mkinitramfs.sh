#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the gzip'd cpio initramfs the test guest boots: busybox-static, the
# static selftest binaries, the static pagecolor tool and an /init that runs
# every selftest, prints a summary sentinel, checks dmesg and reboots.
#
# usage: mkinitramfs.sh -o OUT.cpio.gz -t TESTDIR [-p PAGECOLOR_BIN] [-l "test list"]
#   -o OUT       output; gzip'd unless its name ends in .cpio (a big image
#                boots faster uncompressed under TCG)
#   -t TESTDIR   directory with the static test binaries (selftests/build)
#   -l LIST      tests to run, in order, with optional arguments separated by
#                ':' (e.g. "color_probe color_fuzz:100000"); default: all
#                executables in TESTDIR, color_probe first
#   -p FILE      static pagecolor binary to include as /bin/pagecolor
#   -b FILE      busybox (static) to use; default /bin/busybox
#   -T SECONDS   per-test timeout inside the guest (default 300)
#   -r DIR       a staged root tree copied into the image as well (e.g. a
#                userland with PostgreSQL: scripts/testbox/testbox.sh)
set -euo pipefail

out= testdir= pagecolor= list= busybox=/bin/busybox per_test_timeout=300 extra_root=
usage() { sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; }
while getopts "o:t:p:l:b:T:r:h" opt; do
	case $opt in
	o) out=$OPTARG ;;
	t) testdir=$OPTARG ;;
	p) pagecolor=$OPTARG ;;
	l) list=$OPTARG ;;
	b) busybox=$OPTARG ;;
	T) per_test_timeout=$OPTARG ;;
	r) extra_root=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ -n "$out" ] && [ -n "$testdir" ] || { usage >&2; exit 2; }
[ -x "$busybox" ] || { echo "mkinitramfs: $busybox missing (apt-get install busybox-static)" >&2; exit 1; }
if ! file -L "$busybox" 2>/dev/null | grep -q "statically linked"; then
	if command -v file >/dev/null; then
		echo "mkinitramfs: $busybox is not statically linked (install busybox-static)" >&2
		exit 1
	fi
fi

root=$(mktemp -d)
# mktemp makes it 0700, and it becomes the guest's /: unprivileged test
# processes (color_security's attacker) must be able to reach /proc
chmod 755 "$root"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,tests,root}
if [ -n "$extra_root" ]; then
	[ -d "$extra_root" ] || { echo "mkinitramfs: $extra_root is not a directory" >&2; exit 1; }
	cp -a "$extra_root/." "$root/"
fi
cp "$busybox" "$root/bin/busybox"
[ -n "$pagecolor" ] && cp "$pagecolor" "$root/bin/pagecolor"

if [ -z "$list" ]; then
	list="color_probe"
	for f in "$testdir"/*; do
		b=$(basename "$f")
		[ -x "$f" ] && [ -f "$f" ] && [ "$b" != color_probe ] && list="$list $b"
	done
fi
for item in $list; do
	name=${item%%:*}
	[ -x "$testdir/$name" ] || { echo "mkinitramfs: test $testdir/$name missing" >&2; exit 1; }
	cp "$testdir/$name" "$root/tests/$name"
	echo "$item" | tr ':' ' ' >> "$root/tests/list"
done

cat > "$root/init" <<EOF
#!/bin/busybox sh
PER_TEST_TIMEOUT=$per_test_timeout
EOF
cat >> "$root/init" <<'EOF'
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
exec 0</dev/console 1>/dev/console 2>&1
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
# Keep kernel chatter on the console to warnings and worse while tests print.
echo 4 > /proc/sys/kernel/printk

echo "=== PCTEST BEGIN $(uname -r)"
echo "=== PCTEST cmdline: $(cat /proc/cmdline)"
echo "=== PCTEST cpus: $(nproc), $(grep MemTotal /proc/meminfo)"
for d in /sys/devices/system/cpu/cpu0/cache/index*; do
	[ -d "$d" ] || { echo "=== PCTEST cache: none in sysfs"; break; }
	echo "=== PCTEST cache: $(basename $d) L$(cat $d/level) $(cat $d/type) $(cat $d/size) $(cat $d/ways_of_associativity 2>/dev/null)-way line $(cat $d/coherency_line_size 2>/dev/null) shared_cpus $(cat $d/shared_cpu_list 2>/dev/null)"
done
if [ -d /sys/kernel/mm/page_coloring ]; then
	for f in /sys/kernel/mm/page_coloring/enabled /sys/kernel/mm/page_coloring/nr_colors; do
		echo "=== PCTEST $f: $(cat $f 2>&1 | head -1)"
	done
else
	echo "=== PCTEST no /sys/kernel/mm/page_coloring"
fi
[ -x /bin/pagecolor ] && /bin/pagecolor --hardware

pass=0 fail=0 skip=0 n=0
while read -r name args; do
	[ -n "$name" ] || continue
	n=$((n + 1))
	echo "=== PCTEST RUN $name $args"
	start=$(date +%s)
	timeout -s KILL "$PER_TEST_TIMEOUT" /tests/$name $args
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); res=PASS ;;
	4) skip=$((skip + 1)); res=SKIP ;;
	137) fail=$((fail + 1)); res="FAIL(timeout or killed)" ;;
	*) fail=$((fail + 1)); res=FAIL ;;
	esac
	echo "=== PCTEST RESULT $name rc=$rc $res ${secs}s"
done < /tests/list

[ -x /bin/pagecolor ] && /bin/pagecolor --stats

echo "=== PCTEST DMESG BEGIN"
dmesg
echo "=== PCTEST DMESG END"
trouble=$(dmesg | grep -c -E 'BUG:|WARNING:|Oops|KASAN|kernel BUG|general protection fault|UBSAN|Bad page|list_add corruption|list_del corruption|Huh VM_FAULT_OOM leaked|INFO: task .* blocked|INFO: possible .*deadlock|inconsistent lock state|suspicious RCU usage')
echo "=== PCTEST SUMMARY programs=$n pass=$pass fail=$fail skip=$skip dmesg_trouble=$trouble"
sync
reboot -f
EOF
chmod 755 "$root/init"

compress="gzip -9"
case $out in *.cpio) compress=cat ;; esac
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) | $compress > "$out.tmp"
mv "$out.tmp" "$out"
echo "mkinitramfs: wrote $out ($(du -h "$out" | cut -f1)); tests: $list"
