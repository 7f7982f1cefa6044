#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The pagecolor command inside the guest (TAP).  Skips (exit 4) when
# colouring is unsupported, after checking the "unsupported" exit status 2.
n=0 fail=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=$((fail + 1)); fi; }
echo "TAP version 13"
if ! [ -r /sys/kernel/mm/page_coloring/enabled ] || [ "$(cat /sys/kernel/mm/page_coloring/enabled)" != 1 ]; then
	pagecolor --colors=0 -- true 2>/tmp/pc.err
	rc=$?
	cat /tmp/pc.err | sed 's/^/# /'
	if [ $rc = 2 ] && grep -q "not supported\|disabled" /tmp/pc.err; then
		echo "1..0 # SKIP page colouring not supported (pagecolor exits 2 as it should)"
		exit 4
	fi
	echo "1..1"; echo "not ok 1 - pagecolor should exit 2 on an unsupported kernel (got $rc)"; exit 1
fi
nr=$(cat /sys/kernel/mm/page_coloring/nr_colors)
echo "1..7"
out=$(pagecolor --hardware); rc=$?
echo "$out" | sed 's/^/# /'
echo "$out" | grep -q "kernel support:    yes, $nr colours"; ok $(( rc | $? )) "pagecolor --hardware reports support and $nr colours"
out=$(pagecolor --colors=0-3 -- pagecolor --show); rc=$?
echo "$out" | head -3 | sed 's/^/# /'
echo "$out" | grep -q "^task default: bind 0-3$"; ok $(( rc | $? )) "pagecolor --colors=0-3 -- cmd: cmd runs with task default bind 0-3"
out=$(pagecolor --colors=1,3 --preferred -- pagecolor --show); rc=$?
echo "$out" | grep -q "^task default: preferred 1,3$"; ok $(( rc | $? )) "--preferred sets preferred mode"
echo "$out" | grep -q -E "^[0-9a-f]+-[0-9a-f]+ preferred 1,3( N[0-9]+=[0-9]+)*$"; ok $? "/proc/self/color_maps lines follow the documented format"
pagecolor --colors=$nr -- true 2>/dev/null; ok $(( $? != 1 )) "colour $nr (beyond nr_colors) is a usage error (exit 1)"
pagecolor --colors=0 -- /nonexistent 2>/dev/null; ok $(( $? != 127 )) "exec failure exits 127"
pagecolor --show 1 > /tmp/show.out 2>&1; rc=$?
grep -q -E "^[0-9a-f]+-[0-9a-f]+ default 0-$((nr - 1))" /tmp/show.out; r2=$?
[ $((rc | r2)) = 0 ] || head -5 /tmp/show.out | sed 's/^/# /'
ok $((rc | r2)) "pagecolor --show 1 prints another process's (init's) color_maps"
echo "# Totals: pass:$((n - fail)) fail:$fail"
[ $fail = 0 ]
