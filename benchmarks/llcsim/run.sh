#!/bin/bash
# llcsim: shared-LLC simulator (QEMU TCG plugin) for the page colouring kernel.
#
# usage: benchmarks/llcsim/run.sh {build|unit|validate|domains|mlp|calibrate|calibrate-bw|calibrate-tlb|window|cpi-dyn|share|table2|pg-fig2|pg-fig6|pg-compare|pg-validate|pg-map|all} [--quick]
#   build     plugin (fetches qemu-plugin.h of the installed QEMU from Debian's
#             source package on first use), static guest program, host unit
#             test, patched kernel (kernel-patch/scripts/kernel-tree.sh build guest)
#   unit      host unit test of the cache model (TAP, < 1 s); builds it first
#   validate  boot the patched kernel under QEMU TCG with the plugin: physical
#             address check, working-set sweep, shared vs disjoint colours;
#             writes docs/results/llcsim-validation.md (+ .png); fails on a
#             wrong answer
#   domains   the multi-LLC and way-mask (CAT) models against known answers:
#             4 vCPUs as 2 LLC domains of 2; a victim beside a stream in its
#             own domain and in the other, and limited to 4 of 16 ways;
#             writes docs/results/llcsim-domains.md; fails on a wrong answer
#   mlp       the miss-overlap (memory-level parallelism) model against this
#             machine: pointer chase, independent random loads, a stream and
#             hash-join probes
#             timed natively (guarded, 5 rounds) and simulated with ROB/MSHR;
#             writes docs/results/llcsim-mlp.md; fails when the model misses
#             a known answer (a chase never overlaps, random loads do).
#             --quick: no native timing (make test); both check the
#             simulated ratios against the committed native ones
#             (calibration/native-mlp.json) within MLP_TOL (0.15)
#   calibrate-bw  the memory-bandwidth term (BW_PEAK, BW_UMAX) fitted on the
#             native contention runs (calibration/native-memload.json,
#             native/memload.py: a chase, a stream, beside a stream); no
#             guest run; writes calibration/profile.env and the section of
#             docs/results/llcsim-calibration.md.  --measure: time them
#             natively first (guarded, ~5 min)
#   calibrate-tlb  the data TLBs' walk (LAT_STLB, LAT_WALK) fitted on
#             native pointer chases on 4 KiB pages against transparent huge
#             pages (calibration/native-tlb.json; --measure: time them now,
#             native/tlbload.py, guarded) and two guest runs; writes
#             calibration/profile.env and the section of
#             docs/results/llcsim-calibration.md
#   calibrate fit CPI, ROB, MSHR (with the profile's TLBs, DTLB..LAT_WALK) (a grid evaluated in one guest run) and the
#             prefetch distance (a run each) to the committed native ratios;
#             writes docs/results/llcsim-calibration.md and
#             calibration/profile.env (TIMING=calibrated)
#   window    the overlap model's window against this machine: independent
#             random loads K dependent adds apart (K 0-1024) against a
#             chase, natively (--measure: native/gaploop.py now, guarded)
#             and simulated with the profile and each ROB of CAL_ROB; writes
#             the section of docs/results/llcsim-calibration.md
#   cpi-dyn   the base CPI of PostgreSQL's code (CPI_DYN, the plugin's
#             cpi_dyn: user code of dynamically linked programs) against
#             this machine: a cached scan and aggregate against a chase,
#             natively (--measure: native/pgscan.py now, guarded, on the
#             server of the libpq environment) and in the guest (pg/pgscan,
#             a grid of CPIs); writes CPI_DYN into calibration/profile.env
#             and the section of docs/results/llcsim-calibration.md
#   share     the LLC a stream leaves a resident working set, without
#             PostgreSQL: native/memload.py's chases of 2-16 MiB alone and
#             beside a stream on the other vCPU, pairs whose vCPUs shared an
#             L3 (calibration/native-share.json) against the same over 4 in
#             the guest beside a stream that writes each line back, as
#             natively, per variant of SHARE_VARIANTS (LLC_REPL/LLC_SIZE/
#             LLC_WAYS/LAT_LLC); writes docs/results/llcsim-stream-share.md
#   table2    Table 2 / Figure 5 experiment; writes docs/results/llcsim-table2.md
#   pg-fig2   Figure 2 with PostgreSQL in the guest (the test box image of
#             scripts/testbox/mkimage.sh, TPC-H SF $PG_TPCH): TPC-H queries
#             with their server's memory on fewer and fewer colours;
#             writes docs/results/llcsim-fig2-tpch.md
#   pg-fig6   Figure 6 with PostgreSQL in the guest (SSB SF 0.1): two hash-
#             join and two index-join PLQs paired as default, SLS, MLS and
#             MLS with partitioning pair them; docs/results/llcsim-fig6-plq.md
#   pg-validate the calibrated timing on the native study's curve: its
#             PostgreSQL hash join alone and beside a C stream, tables of
#             0.25-32 MB over the native LLC share (4 x the profile's
#             LLC_SIZE, run.sh share's fit) scaled by
#             1/PGV_SCALE (4); docs/results/llcsim-pg-validation.md
#   pg-map    where each mechanism pays (issue 28 item 3): the same hash
#             join, tables of MAP_RATIOS (0.5,1,2) x the LLC of a domain,
#             probe rows 4x the largest build, at least MAP_PROBE_MIN (500000),
#             alone and beside MAP_CORUNNERS (scan,hj,ij,stream) under
#             MAP_MECHS (stock,colors,resctrl,placement), 4 vCPUs as 2 LLC
#             domains of LLC_SIZE; docs/results/llcsim-map-llcXm.md
#   pg-compare  4 vCPUs as 2 LLC domains: the Figure 6 mix and a hash join
#             beside a scan, without mccdb, with page colours, with resctrl
#             (the guest agent), as Linux or domain placement arranges them,
#             and mccdb's gate placing them; docs/results/llcsim-compare.md
#   all       build unit validate table2
#
# Environment: LLC_SIZE (2M) LLC_WAYS (16) L2_SIZE (256K) L2_WAYS (8)
#   L1_SIZE (32K) L1_WAYS (8) REPL (lru: lru, random, srrip or pacman:
#   SRRIP with prefetch fills at distant) LLC_REPL (= REPL: the LLC's; also pacman:F,
#   that fraction of prefetch fills inserted as SRRIP's, and pacman:F:D, every
#   D-th fill into a set ageing its lines) COLORS (kernel page_colors=; the LLC's colours, LLC_SIZE / LLC_WAYS / 4 KiB: 32)
#   MEM (1024 MiB) BOOT_TIMEOUT (s) JOBS (2) TABLE2_REPS (3)
#   SYNC (10000: modeled-time quantum in cycles between the vCPUs, 0 = off)
#   PG_TPCH (0.05) PG_QUERIES (q01,q03,q05,q06,q08,q09,q18,q20,q21)
#   PG_COLORS (32,16,8,4,2) PG_HASH (25,20) PG_INDEX (12,8) PG_REPS (3)
#   LAT_L2 (12) LAT_LLC (40): modeled cycles of an L2 hit and of an LLC hit
#   (a miss to memory costs 200: the cycle is defined by it)
#   LAT_SEQ (20: cycles of an LLC miss to the line after a recent miss, i.e. a
#   prefetched stream; 200 = every miss costs the memory latency)
#   KERNEL_BUILD (1; 0 = boot the guest kernel already built, even one
#   older than the series, without building it)
#   SMP (2; domains: 4) LLC_DOMAINS (1; domains: 2): vCPUs, and LLCs of LLC_SIZE
#   each among them (vCPU i in domain i * LLC_DOMAINS / SMP)
#   ROB (0) MSHR (24): independent LLC misses within ROB instructions overlap,
#   at most MSHR at once (the guest RAM is then a file in /dev/shm); ROB 0 =
#   additive timing, every miss costs the full latency; mlp uses ROB_MLP (320),
#   pg-fig2 and pg-fig6 ROB_PG (320)
#   CPI (1): modeled cycles per instruction that does not miss the L1
#   CPI_DYN (= CPI): the same for user code of dynamically linked programs
#   (PostgreSQL; the guest's static loop programs keep CPI; fitted by cpi-dyn)
#   PF (0 = off) PF_XLAT (16): the stride prefetcher, PF lines ahead, into
#   pages among the 2^PF_XLAT it knows the frames of (0: within a page)
#   PF_FILL (0 = off): a vCPU's prefetch fills from memory arrive one every
#   PF_FILL cycles at most (plugin/access.h; the native stream's rate, fitted
#   by calibrate-bw)
#   BW_PEAK (0 = off) BW_UMAX (0.9): memory-bandwidth contention, a miss to
#   memory costs lat_mem / (1 - min(u, BW_UMAX)), u = both vCPUs' lines to
#   and from memory per modeled cycle over BW_PEAK lines per 1000 cycles
#   (plugin/bandwidth.h; fitted by calibrate-bw)
#   DTLB (0 = no TLB model) DTLB_WAYS (0 = fully associative) STLB (3072)
#   STLB_WAYS (12) LAT_STLB (7) LAT_WALK (30): data TLBs per vCPU, 4 KiB and
#   2 MiB pages, a page walk whose leaf entry goes through the caches
#   (plugin/tlb.h; fitted by calibrate-tlb); with DTLB set, the mlp loops
#   run on transparent huge pages (/thp), as natively
#   TIMING (legacy; mlp, pg-validate, pg-map, calibrate-tlb, window, cpi-dyn, share: calibrated;
#   table2, pg-fig6 and pg-compare with TIMING=calibrated write a page of their own, *-calibrated.md): calibrated = CPI, CPI_DYN, ROB, MSHR,
#   PF, PF_XLAT, PF_FILL, LAT_SEQ, LAT_L2, LAT_LLC, LLC_REPL, LLC_SIZE, LLC_WAYS, BW_PEAK, BW_UMAX and the TLB's from calibration/profile.env
#   (run.sh calibrate's, calibrate-bw's and calibrate-tlb's fits) for those not
#   set, and ROB_MLP/ROB_PG = its ROB; legacy = the defaults above, the timing
#   of the pages made before the calibration (no bandwidth term, no TLBs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
kp=$repo/kernel-patch
build=$here/build
results=${LLCSIM_RESULTS:-$repo/docs/results}
py=$repo/.venv/bin/python3
[ -x "$py" ] || py=python3
profile=$here/calibration/profile.env
native_cal=$here/calibration/native-mlp.json
native_cal_memload=$here/calibration/native-memload.json
native_cal_share=$here/calibration/native-share.json

case ${1:-} in
mlp | pg-validate | pg-map | calibrate-tlb | window | cpi-dyn | share) TIMING=${TIMING:-calibrated} ;;
*) TIMING=${TIMING:-legacy} ;;
esac
case $TIMING in
calibrated)
	while IFS='=' read -r k v; do
		case $k in
		CPI | CPI_DYN | ROB | MSHR | PF | PF_XLAT | PF_FILL | LAT_SEQ | LAT_L2 | LAT_LLC | BW_PEAK | BW_UMAX | \
			LLC_REPL | LLC_SIZE | LLC_WAYS | DTLB | DTLB_WAYS | STLB | STLB_WAYS | LAT_STLB | LAT_WALK) [ -n "${!k+x}" ] || declare "$k=$v" ;;
		esac
	done <"$profile"
	ROB_MLP=${ROB_MLP:-$ROB} ROB_PG=${ROB_PG:-$ROB}
	;;
legacy)
	# the timing fit: its loops translate as the profile's TLBs say
	# (calibrate-tlb's fit), with the pages they have natively
	if [ "${1:-}" = calibrate ]; then
		while IFS='=' read -r k v; do
			case $k in
			DTLB | DTLB_WAYS | STLB | STLB_WAYS | LAT_STLB | LAT_WALK) [ -n "${!k+x}" ] || declare "$k=$v" ;;
			esac
		done <"$profile"
	fi
	;;
*) echo "run.sh: TIMING is calibrated or legacy" >&2; exit 2 ;;
esac
# table2, pg-fig6 and pg-compare with the calibrated timing (issue 28 item
# 3's re-runs) write pages of their own beside the legacy ones
cal_page=
case ${1:-} in
table2 | pg-fig6 | pg-compare) [ "$TIMING" = legacy ] || cal_page=-calibrated ;;
esac

LLC_SIZE=${LLC_SIZE:-2M} LLC_WAYS=${LLC_WAYS:-16}
L2_SIZE=${L2_SIZE:-256K} L2_WAYS=${L2_WAYS:-8}
L1_SIZE=${L1_SIZE:-32K} L1_WAYS=${L1_WAYS:-8}
REPL=${REPL:-lru} LLC_REPL=${LLC_REPL:-$REPL} MEM=${MEM:-1024}
SYNC=${SYNC:-10000} LAT_SEQ=${LAT_SEQ:-20} LAT_L2=${LAT_L2:-12} LAT_LLC=${LAT_LLC:-40}
ROB=${ROB:-0} MSHR=${MSHR:-24} CPI=${CPI:-1} CPI_DYN=${CPI_DYN:-$CPI}
PF=${PF:-0} PF_XLAT=${PF_XLAT:-16}
BW_PEAK=${BW_PEAK:-0} BW_UMAX=${BW_UMAX:-0.9} PF_FILL=${PF_FILL:-0}
DTLB=${DTLB:-0} DTLB_WAYS=${DTLB_WAYS:-0} STLB=${STLB:-3072} STLB_WAYS=${STLB_WAYS:-12}
LAT_STLB=${LAT_STLB:-7} LAT_WALK=${LAT_WALK:-30}
SMP=${SMP:-2} LLC_DOMAINS=${LLC_DOMAINS:-1}
# two LLC domains of two vCPUs: the guest boots as two sockets of two, so its
# sysfs shows the domains the plugin has (llc_domains=2)
DOMAINS_SMP=4,sockets=2,cores=2,threads=1
QUICK=0
[ "${2:-}" = --quick ] && QUICK=1

log() { echo "llcsim: $*" >&2; }

# envs VAR...: "VAR=value " for each set, and for KERNEL_BUILD and NO_GUARD
# (a page's command line)
envs() {
	local v val
	for v in "$@" KERNEL_BUILD NO_GUARD; do
		val=${!v:-}
		[ -n "$val" ] || continue
		# %q only where a shell needs quoting: bash 5.2's %q escapes
		# commas too, and the command would no longer read as the
		# Makefile's line
		if [[ $val =~ ^[A-Za-z0-9_.,:/+=@%-]+$ ]]; then
			printf '%s=%s ' "$v" "$val"
		else
			printf '%s=%q ' "$v" "$val"
		fi
	done
}

# share_kib: the native LLC share of one thread, KiB: 4 x the profile's
# LLC_SIZE (run.sh share's fit; 2M, the 8 MB assumed before it)
share_kib() {
	local v
	v=$(sed -n 's/^LLC_SIZE=//p' "$profile")
	echo $(($(LLC_SIZE=${v:-2M} llc_kib) * 4))
}

llc_kib() { "$py" - "$LLC_SIZE" <<'EOF'
import sys
s = sys.argv[1].upper().rstrip('B').rstrip('I')
m = {'K': 1, 'M': 1024, 'G': 1 << 20}
print(int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s) // 1024)
EOF
}
# the guest kernel's page colours are the LLC's (a domain's): more would
# give two kernel colours one slice of sets, and a partition of them would
# not divide the cache
COLORS=${COLORS:-$(($(llc_kib) / LLC_WAYS / 4))}

do_build() {
	make -s -C "$here/plugin"
	make -s -C "$here/guest"
	make -s -C "$here/test"
	if [ "${KERNEL_BUILD:-1}" = 0 ]; then
		# the guest kernel as it is, even one older than the series
		kernel=$("$kp/scripts/kernel-tree.sh" path guest)
		[ -f "$kernel" ] || { log "KERNEL_BUILD=0: no kernel at $kernel"; exit 1; }
		log "KERNEL_BUILD=0: $kernel as it is (built $(date -u -r "$kernel" '+%F %H:%M UTC'))"
	else
		kernel=$(JOBS=${JOBS:-2} "$kp/scripts/kernel-tree.sh" build guest | tail -1)
	fi
	log "plugin $build/libllcsim.so, guest $build/guest/llcsim, kernel $kernel"
}

do_unit() {
	make -s -C "$here/test"
	"$build/test_cachemodel"
}

# boot NAME "LIST" TIMEOUT [IMAGE KERNEL]: initramfs with the guest program
# (or the given image and kernel), boot with the plugin
boot() {
	local name=$1 list=$2 timeout=$3
	local initrd=${4:-$build/initramfs-$name.cpio.gz} kernel=${5:-$("$kp/scripts/kernel-tree.sh" path guest)}
	local serial=$build/$name.serial.log simout=$build/$name.sim.log
	[ -n "${4:-}" ] ||
		"$kp/scripts/mkinitramfs.sh" -o "$initrd" -t "$build/guest" -T "${PROG_TIMEOUT:-600}" -l "$list" >&2
	local parg="$build/libllcsim.so,llc=$LLC_SIZE,llc_ways=$LLC_WAYS,l2=$L2_SIZE,l2_ways=$L2_WAYS"
	parg+=",l1=$L1_SIZE,l1_ways=$L1_WAYS,line=64,repl=$REPL,llc_repl=$LLC_REPL,sync=$SYNC,lat_seq=$LAT_SEQ,lat_l2=$LAT_L2,lat_llc=$LAT_LLC,out=$simout"
	parg+=",llc_domains=$LLC_DOMAINS,cpi=$CPI,cpi_dyn=$CPI_DYN,pf=$PF,pf_xlat=$PF_XLAT,pf_fill=$PF_FILL,bw_peak=$BW_PEAK,bw_umax=$BW_UMAX"
	[ "$DTLB" = 0 ] ||
		parg+=",dtlb=$DTLB,dtlb_ways=$DTLB_WAYS,stlb=$STLB,stlb_ways=$STLB_WAYS,lat_stlb=$LAT_STLB,lat_walk=$LAT_WALK"
	# run.sh calibrate: a grid of timings beside the main one
	[ -z "${GRID_CPI:-}" ] || parg+=",grid_cpi=$GRID_CPI,grid_rob=$GRID_ROB,grid_mshr=$GRID_MSHR"
	local t0=$SECONDS rc=0 ram= noguard=()
	if [ "$ROB" != 0 ]; then
		# the guest RAM in a file the plugin maps, for the values of missed
		# loads; removed however this (sub)shell ends
		ram=$(mktemp /dev/shm/llcsim-ram.XXXXXX)
		# shellcheck disable=SC2064 # expand $ram now
		trap "rm -f '$ram'" EXIT
		trap 'exit 143' INT TERM
		truncate -s "${MEM}M" "$ram"
		parg+=",rob=$ROB,mshr=$MSHR,ram=$ram"
	fi
	# Modeled cycles do not depend on the host's load (the vCPUs advance in
	# modeled time together), but the wall time does and the rule is one
	# experiment at a time: the quiet-machine guard, except for --quick.
	# NO_GUARD=1: none either (modeled cycles of one vCPU's loop do not
	# depend on the host; the page then says it ran unguarded)
	[ $QUICK = 1 ] || [ -n "${NO_GUARD:-}" ] && noguard=(--no-guard)
	rm -f "$build/$name.guard.md"
	PATH="$here/scripts/qemu-wrap:$PATH" LLCSIM_PLUGIN_ARG="$parg" LLCSIM_RAM="$ram" \
		"$py" -m mccdb_bench.harness.quiet "${noguard[@]}" --own-load "${SMP%%,*}" --what "the guest run" \
		--summary "$build/$name.guard.md" -- \
		"$kp/scripts/boot-test.sh" -k "$kernel" -i "$initrd" -o "$serial" \
		-e any -m "$MEM" -s "$SMP" -t "$timeout" -a "page_colors=$COLORS" >&2 || rc=$?
	log "$name: guest run took $((SECONDS - t0)) s (boot-test exit $rc)"
	echo "$serial $simout $rc $((SECONDS - t0))"
}

do_validate() {
	local kib passes=40
	kib=$(llc_kib)
	[ $QUICK = 1 ] && passes=10
	local v="chase/$((kib / 4))/$passes/c=0-15"
	local list="llcsim:phys:16 llcsim:sweep:$kib:100"
	list+=" llcsim:run:$v:200"
	list+=" llcsim:pair:$v:stream/32768/0/c=0-15:201:202"
	list+=" llcsim:pair:$v:stream/32768/0/c=16-31:203:204"
	list+=" llcsim:pair:chase/$((kib / 4))/$passes:stream/32768/0:205:206"
	read -r serial simout rc secs < <(boot validate "$list" "${BOOT_TIMEOUT:-3000}")
	mkdir -p "$results"
	"$py" "$here/scripts/analyze.py" validate --serial "$serial" --sim "$simout" \
		--boot-rc "$rc" --secs "$secs" --llc-kib "$kib" --out "$results/llcsim-validation.md" \
		--cmd "benchmarks/llcsim/run.sh validate${2:+ $2}"
}

# The multi-LLC and way-mask models: 4 vCPUs as 2 domains of 2 (vCPUs 0-1,
# 2-3); known answers checked by analyze.py domains.
do_domains() {
	local kib passes=40 v cat half
	kib=$(llc_kib)
	half=$((kib / 2))		# the capacity of 8 of 16 ways
	[ $QUICK = 1 ] && passes=10
	# The victim beside a stream: a chase of 0.75x the LLC, whose reuse
	# distance a stream in its LLC pushes past 16 ways.
	v="chase/$((kib * 3 / 4))/$passes"
	# Under a mask of 8 ways: a chase of half their capacity.  (4 KiB pages
	# land in sets by chance, so a chase near a capacity overflows some
	# sets; and the L2 holds anything up to 256 KiB: hence 8 ways, 0.5x.)
	cat="chase/$((half / 2))/$passes/w=0x00ff"
	local list="llcsim:run:$v:500"
	list+=" llcsim:pair:$v:stream/32768/0:501:502"			# stream beside it, same domain
	list+=" llcsim:pair:$v:stream/32768/0/cpu=2:503:504"		# stream in the other domain
	list+=" llcsim:run:chase/$((half * 3 / 2))/$passes/w=0x00ff:511"	# 1.5x of 8 ways
	list+=" llcsim:run:chase/$((half * 3 / 2))/$passes:512"		# the same, all ways
	list+=" llcsim:pair:$cat:stream/32768/0/w=0xff00:513:514"		# CAT: disjoint ways
	list+=" llcsim:pair:$cat:stream/32768/0/w=0x00ff:515:516"		# CAT: the same ways
	list+=" llcsim:run:$cat:517"					# 0.5x of 8 ways, alone
	# The same two through resctrl: the guest agent's tree, groups made
	# as mccdb's resctrl back end makes them (last: the agent stays).
	cat=${cat%/w=*}
	list+=" llcsim:resctrl:/tmp/resctrl:16"
	list+=" llcsim:pair:$cat/rg=victim@0x00ff:stream/32768/0/rg=noisy@0xff00:520:521"
	list+=" llcsim:pair:$cat/rg=victim@0x00ff:stream/32768/0/rg=victim@0x00ff:522:523"
	read -r serial simout rc secs < <(SMP=$DOMAINS_SMP LLC_DOMAINS=2 boot domains "$list" "${BOOT_TIMEOUT:-3000}")
	mkdir -p "$results"
	"$py" "$here/scripts/analyze.py" domains --serial "$serial" --sim "$simout" \
		--boot-rc "$rc" --secs "$secs" --llc-kib "$kib" --smp "$DOMAINS_SMP" --llc-domains 2 \
		--out "$results/llcsim-domains.md" --cmd "benchmarks/llcsim/run.sh domains${2:+ $2}"
}

# mlp_list LOADS: the four loops over 32x the LLC (tags 400-403); with the
# TLB model on transparent huge pages, as llcsim time runs them natively
# (the hash entries stay on 4 KiB pages in both: 32-bit pointers)
mlp_list() {
	local ws=$(($(llc_kib) * 32)) t=
	[ "$DTLB" = 0 ] || t=/thp
	echo "llcsim:run:chase/$ws/1$t:400 llcsim:run:rand/$ws/$1$t:401 llcsim:run:stream/$ws/$1$t:402" \
		"llcsim:run:hash/$((ws * 1024 / 36))/$1$t:403"
}

# The miss-overlap model: the same four loops natively (guarded) and in
# the simulator with ROB_MLP/MSHR (TIMING=calibrated: the fitted profile);
# known answers, and the ratios against the committed native ones
# (calibration/native-mlp.json, within MLP_TOL), checked by analyze.py mlp.
# --quick: no native timing; the loops as the calibration ran them, so
# that make test holds the fitted numbers to the fit's own 15%.
do_mlp() {
	local kib loads=1000000 native=$build/mlp-native.json
	kib=$(llc_kib)
	rm -f "$native"
	[ $QUICK = 1 ] || "$py" -m mccdb_bench.llcsim_native --binary "$build/guest/llcsim" \
		--kib "${NATIVE_KIB:-262144}" --loads 4000000 --reps 5 --out "$native"
	read -r serial simout rc secs < <(ROB=${ROB_MLP:-320} boot mlp "$(mlp_list $loads)" "${BOOT_TIMEOUT:-1800}")
	mkdir -p "$results"
	local nat=()
	[ -f "$native" ] && nat=(--native "$native")
	"$py" "$here/scripts/analyze.py" mlp --serial "$serial" --sim "$simout" \
		--boot-rc "$rc" --secs "$secs" --llc-kib "$kib" --out "$results/llcsim-mlp.md" \
		--calibration "$native_cal" --tolerance "${MLP_TOL:-0.15}" \
		"${nat[@]}" --cmd "$([ "$TIMING" = calibrated ] || echo "TIMING=$TIMING ")$(envs)benchmarks/llcsim/run.sh mlp${2:+ $2}"
}

# Fit the timing: the four mlp loops, one guest run per prefetch distance
# of CAL_PF, each evaluating every timing of the grid CAL_CPI x CAL_ROB x
# CAL_MSHR beside the main one on the same accesses (plugin grid_*=);
# calibrate.py picks the point with the smallest worst error against the
# committed native ratios, writes docs/results/llcsim-calibration.md and
# calibration/profile.env (the TIMING=calibrated profile).
do_calibrate() {
	local pf runs=() kib
	kib=$(llc_kib)
	local gc=${CAL_CPI:-0.35:0.4:0.45} gr=${CAL_ROB:-96:128:160:224:320} gm=${CAL_MSHR:-12:13:14:16}
	for pf in ${CAL_PF:-16 4}; do
		# the main timing: a point of the grid (calibrate.py checks they agree)
		read -r serial simout rc secs < <(CPI=${gc%%:*} ROB=${gr%%:*} MSHR=${gm%%:*} PF=$pf \
			PF_XLAT=${PF_XLAT_CAL:-16} LAT_SEQ=200 GRID_CPI=$gc GRID_ROB=$gr GRID_MSHR=$gm \
			boot "calibrate-pf$pf" "$(mlp_list 1000000)" "${BOOT_TIMEOUT:-3600}")
		runs+=(--run "$serial" "$simout" "$rc" "$secs")
	done
	mkdir -p "$results"
	"$py" "$here/scripts/calibrate.py" --native "$native_cal" --profile "$profile" \
		--out "$results/llcsim-calibration.md" --llc-kib "$kib" --tolerance 0.15 "${runs[@]}" \
		--cmd "$(envs CAL_CPI CAL_ROB CAL_MSHR CAL_PF PF_XLAT_CAL)benchmarks/llcsim/run.sh calibrate"
}

do_table2() {
	local kib n_ml n_wl probes=400000 wprobes=400000 lines=800000
	kib=$(llc_kib)
	# Paper (4 MiB LLC): ML_HJ hash table 1.86 MiB (0.465 C), WL_HJ 18.6 MiB (4.65 C).
	# Table bytes = 4 B per bucket (power of two) + 32 B per entry.
	n_ml=$((kib * 1024 * 465 / 1000 / 36))
	n_wl=$((kib * 1024 * 4650 / 1000 / 36))
	[ $QUICK = 1 ] && { probes=50000; wprobes=50000; lines=100000; }
	# ML_HJ's hash table: bound to all colours (as MCC-DB gives a moderate
	# hash table every colour; the kernel then spreads it round-robin), or
	# TABLE2_VARIANT=default: no policy, the allocator's choice.
	local ml="hash/$n_ml/$probes/c=0-$((COLORS - 1))" out=llcsim-table2.md
	# TABLE2_VARIANT=disjoint: the table bound to the colours the weak
	# co-runner does not get (k..31; all 32 when k = 32).
	case "${TABLE2_VARIANT:-bound}" in
	default) ml="hash/$n_ml/$probes"; out=llcsim-table2-default-alloc.md ;;
	disjoint) out=llcsim-table2-disjoint.md ;;
	esac
	if [ -n "$cal_page" ]; then out=${out%.md}$cal_page.md
	elif [ "$ROB" != 0 ]; then out=${out%.md}-mlp.md	# the overlap model: a page of its own
	fi
	# TABLE2_REPS repetitions in one boot; repetition r uses tags
	# 300 + 40 r ..., its runs in an order of their own (shuf seeded by r).
	local list="" reps=${TABLE2_REPS:-3} r tag k c rep ml_alone=$ml
	[ $QUICK = 1 ] && reps=1
	for r in $(seq 0 $((reps - 1))); do
		tag=$((300 + 40 * r)) rep="" ml=$ml_alone
		rep+=" llcsim:run:$ml:$((tag++))"
		rep+=" llcsim:run:$ml/pc=0-3/pref:$((tag++))"
		rep+=" llcsim:run:stream/32768/$lines:$((tag++))"
		rep+=" llcsim:run:stream/32768/$lines/c=0-3/pref:$((tag++))"
		rep+=" llcsim:run:hash/$n_wl/$wprobes:$((tag++))"
		rep+=" llcsim:run:hash/$n_wl/$wprobes/c=0-3/pref:$((tag++))"
		for k in 32 16 8 4; do
			if [ "$k" = "$COLORS" ]; then c=all; else c=0-$((k - 1)); fi
			if [ "${TABLE2_VARIANT:-bound}" = disjoint ]; then
				if [ "$k" = "$COLORS" ]; then ml="hash/$n_ml/$probes/c=0-$((COLORS - 1))"
				else ml="hash/$n_ml/$probes/c=$k-$((COLORS - 1))"; fi
			fi
			rep+=" llcsim:pair:$ml/pc=$c/pref:stream/32768/0/c=$c/pref:$tag:$((tag + 1))"
			tag=$((tag + 2))
			rep+=" llcsim:pair:$ml/pc=$c/pref:hash/$n_wl/0/c=$c/pref:$tag:$((tag + 1))"
			tag=$((tag + 2))
		done
		list+=" $(printf '%s\n' $rep | shuf --random-source=<(yes "$r") | tr '\n' ' ')"
	done
	read -r serial simout rc secs < <(boot table2 "$list" "${BOOT_TIMEOUT:-5400}")
	mkdir -p "$results"
	"$py" "$here/scripts/analyze.py" table2 --serial "$serial" --sim "$simout" \
		--boot-rc "$rc" --secs "$secs" --llc-kib "$kib" --out "$results/$out" \
		--cmd "${cal_page:+TIMING=calibrated }${TABLE2_VARIANT:+TABLE2_VARIANT=$TABLE2_VARIANT }${TABLE2_REPS:+TABLE2_REPS=$TABLE2_REPS }$([ "$ROB" = 0 ] || [ -n "$cal_page" ] || echo "ROB=$ROB ")benchmarks/llcsim/run.sh table2${2:+ $2}"
}

# pg_run NAME MODE REPORT LIST [analyze.py args]: the test box image
# (scripts/testbox/mkimage.sh) with the guest programs of pg/ and the static
# llcsim (for its "op" control commands), booted under the plugin; then
# analyze.py MODE writes docs/results/REPORT.
pg_run() {
	local name=$1 mode=$2 report=$3 list=$4 kib image kernel
	shift 4
	kib=$(llc_kib)
	image=$build/$name.cpio
	kernel=$("$repo/scripts/testbox/mkimage.sh" -o "$image" -t "$here/pg" -l "$list" \
		-T "${BOOT_TIMEOUT:-10800}" -b "$build/guest/llcsim" -b "$build/guest/stream_antagonist" | tail -1)
	# the overlap timing model (validated in llcsim-mlp) unless ROB_PG=0
	read -r serial simout rc secs < <(ROB=${ROB_PG:-320} MEM=${PG_MEM:-2048} boot "$name" "" "${BOOT_TIMEOUT:-10800}" "$image" "$kernel")
	mkdir -p "$results"
	"$py" "$here/scripts/analyze.py" "$mode" --serial "$serial" --sim "$simout" \
		--boot-rc "$rc" --secs "$secs" --llc-kib "$kib" --mem "${PG_MEM:-2048}" \
		--out "$results/$report" "$@"
}

# Figure 2: TPC-H queries with the server's memory on fewer colours (pg/cachesens).
do_pg_fig2() {	# PG_REPS repetitions, the queries in an order of their own in each
	# the paper's Figure 2 (Q1, Q5, Q8, Q9, Q18, Q20, Q21) and Q3, Q6
	local queries=${PG_QUERIES:-q01,q03,q05,q06,q08,q09,q18,q20,q21} colors=${PG_COLORS:-32,16,8,4,2}
	local reps=${PG_REPS:-3}
	[ $QUICK = 1 ] && { queries=q01,q03; colors=32,4; reps=1; }
	TESTBOX_TPCH=${PG_TPCH:-0.05} pg_run pg-fig2 pgfig2 llcsim-fig2-tpch.md \
		"cachesens:$queries:$colors:$reps" --tpch "${PG_TPCH:-0.05}" \
		--cmd "${PG_QUERIES:+PG_QUERIES=$PG_QUERIES }${PG_COLORS:+PG_COLORS=$PG_COLORS }${PG_REPS:+PG_REPS=$PG_REPS }benchmarks/llcsim/run.sh pg-fig2${2:+ $2}"
}

# Placement, page colouring and resctrl side by side (pg/compare): four
# vCPUs as two LLC domains, the guest booted as two sockets to match.
# mccdb in the guest classifies with the plugin's LLC of one domain; an LLC
# other than the default writes a page of its own (llcsim-compare-llc1m.md).
do_pg_compare() {
	local reps=${PG_REPS:-3} page=llcsim-compare.md llc=
	[ $QUICK = 1 ] && reps=1
	[ "$LLC_SIZE" = 2M ] || { llc="LLC_SIZE=$LLC_SIZE "; page=llcsim-compare-llc$(echo "$LLC_SIZE" | tr A-Z a-z).md; }
	page=${page%.md}$cal_page.md llc=${cal_page:+TIMING=calibrated }$llc
	SMP=$DOMAINS_SMP LLC_DOMAINS=2 pg_run pg-compare pgcompare "$page" \
		"compare:${PG_HASH:-25,20}:${PG_INDEX:-12,8}:$reps:$(llc_kib)" --smp "$DOMAINS_SMP" --llc-domains 2 \
		--cmd "$llc${PG_HASH:+PG_HASH=$PG_HASH }${PG_INDEX:+PG_INDEX=$PG_INDEX }${PG_REPS:+PG_REPS=$PG_REPS }benchmarks/llcsim/run.sh pg-compare${2:+ $2}"
}

# Figure 6: two hash-join and two index-join PLQs as the policies pair them (pg/corun).
do_pg_fig6() {
	local reps=${PG_REPS:-3}
	[ $QUICK = 1 ] && reps=1
	pg_run pg-fig6 pgfig6 "llcsim-fig6-plq$cal_page.md" "corun:${PG_HASH:-25,20}:${PG_INDEX:-12,8}:$reps" \
		--cmd "${cal_page:+TIMING=calibrated }${PG_HASH:+PG_HASH=$PG_HASH }${PG_INDEX:+PG_INDEX=$PG_INDEX }${PG_REPS:+PG_REPS=$PG_REPS }benchmarks/llcsim/run.sh pg-fig6${2:+ $2}"
}

# The calibrated timing against the native study's curve, without
# refitting: its hash join alone and beside a C stream (pg/hjstream) at
# the native table sizes over the native effective LLC share (8 MB) scaled
# by 1/PGV_SCALE (4: the default 2 MiB LLC and 256 KiB L2 are the native
# share and 1 MiB L2 over 4; 1 wants LLC_SIZE=4x that, L2_SIZE=1M), probe
# rows as natively (4x the largest build, at least 2M / PGV_SCALE).
do_pg_validate() {
	local scale=${PGV_SCALE:-4} reps=${PG_REPS:-3} sizes=${PGV_SIZES:-0.25,0.5,1,2,4,8,16,32} rows probe
	[ $QUICK = 1 ] && { sizes=${PGV_SIZES:-2,32}; reps=1; }
	[ "$(llc_kib)" = $(($(share_kib) / scale)) ] ||
		{ log "pg-validate: LLC_SIZE must be the native share ($(share_kib) KiB) / PGV_SCALE ($scale)"; exit 2; }
	read -r rows probe < <("$py" - "$sizes" "$scale" <<'EOF'
import sys
from mccdb_bench.native_study import probe_rows_for, rows_for
sizes, scale = [float(x) for x in sys.argv[1].split(',')], float(sys.argv[2])
rows = [rows_for(int(mb * 1048576 / scale)) for mb in sizes]
print(','.join(map(str, rows)), probe_rows_for(rows, minimum=int(2_000_000 / scale)))
EOF
)
	pg_run pg-validate pgvalidate "llcsim-pg-validation$([ "$scale" = 4 ] || echo "-scale$scale").md" \
		"hjstream:$rows:$probe:$reps:${PGV_STREAM_MIB:-256}" \
		--native-study "$results/native-study.md" --sizes "$sizes" --scale "$scale" \
		--cmd "$(envs PGV_SCALE PGV_SIZES PG_REPS PGV_STREAM_MIB)benchmarks/llcsim/run.sh pg-validate${2:+ $2}"
}

# Where each mechanism pays (issue 28 item 3; pg/hjmap, analyze.py pgmap):
# the native study's hash join with hash tables of MAP_RATIOS x the LLC of
# a domain, alone and beside each of MAP_CORUNNERS (scan, hj, ij, stream)
# under each of MAP_MECHS (stock, colors, resctrl, placement); four vCPUs
# as two LLC domains of LLC_SIZE each (as pg-compare).  One page per LLC
# size: llcsim-map-llcXm.md, the native study's stock cells beside the
# simulated ones at the table sizes over the native share (profile's
# LLC_SIZE x 4) that LLC_SIZE is.
do_pg_map() {
	local reps=${PG_REPS:-2} ratios=${MAP_RATIOS:-0.5,1,2} co=${MAP_CORUNNERS:-scan,hj,ij,stream}
	local mechs=${MAP_MECHS:-stock,colors,resctrl,placement} rows probe scan big
	[ $QUICK = 1 ] && { ratios=${MAP_RATIOS:-1}; reps=1; co=${MAP_CORUNNERS:-scan}; mechs=${MAP_MECHS:-stock,colors}; }
	read -r rows probe scan big < <("$py" - "$ratios" "$(llc_kib)" "${MAP_PROBE_MIN:-500000}" <<'EOF'
import sys
from mccdb_bench.native_study import probe_rows_for, rows_for
ratios, kib = [float(x) for x in sys.argv[1].split(',')], int(sys.argv[2])
rows = [rows_for(int(r * kib * 1024)) for r in ratios]
# the scan's table (two int4, 36 bytes a row on the page) and the index
# join's (the same and its primary key, about 56) at 4x the LLC
print(','.join(map(str, rows)), probe_rows_for(rows, minimum=int(sys.argv[3])), 4 * kib * 1024 // 36, 4 * kib * 1024 // 56)
EOF
)
	local geo
	geo=llc$(echo "$LLC_SIZE" | tr A-Z a-z)
	# logs named by the geometry: the next size's run does not overwrite them
	SMP=$DOMAINS_SMP LLC_DOMAINS=2 pg_run "pg-map-$geo" pgmap "llcsim-map-$geo.md" \
		"hjmap:$rows:$probe:$scan:$big:$reps:$co:$mechs:$(llc_kib):${PGV_STREAM_MIB:-256}" \
		--smp "$DOMAINS_SMP" --llc-domains 2 \
		--native-study "$results/native-study.md" --scale $(($(share_kib) / $(llc_kib))) \
		--cmd "$(envs LLC_SIZE MAP_RATIOS MAP_CORUNNERS MAP_MECHS MAP_PROBE_MIN PG_REPS)benchmarks/llcsim/run.sh pg-map${2:+ $2}"
}

# The bandwidth term: native contention runs (--measure: made now, guarded)
# and the fit on them (calibrate.py bandwidth).
do_calibrate_bw() {
	local ml=$here/calibration/native-memload.json
	[ "${2:-}" != --measure ] || "$py" "$here/native/memload.py" --out "$ml"
	"$py" "$here/scripts/calibrate.py" bandwidth --memload "$ml" --profile "$profile" \
		--page "$results/llcsim-calibration.md"
}

# The data TLBs' walk: native chases and random loads on 4 KiB pages
# against THP (--measure: timed now by native/tlbload.py, guarded), the
# same loops over 4 in the guest with the profile's TLBs, at LAT_STLB =
# LAT_WALK = 0 (the chase is additive in both: calibrate.py tlb solves for
# them) and again at the fit (its check, and the random loads' error).
do_calibrate_tlb() {
	local nt=$here/calibration/native-tlb.json list runs=()
	[ "${2:-}" != --measure ] || "$py" "$here/native/tlbload.py" --out "$nt"
	[ "$DTLB" != 0 ] || { log "calibrate-tlb: DTLB=0 (no TLB model)"; exit 2; }
	list=$("$py" "$here/native/tlbload.py" --sim-list)
	read -r serial simout rc secs < <(LAT_STLB=0 LAT_WALK=0 boot calibrate-tlb0 "$list" "${BOOT_TIMEOUT:-1800}")
	runs+=(--run "$serial" "$simout" "$rc" "$secs")
	local ls lw
	read -r ls lw < <("$py" "$here/scripts/calibrate.py" tlb --native "$nt" "${runs[@]}" --print-fit)
	log "calibrate-tlb: fit LAT_STLB=$ls LAT_WALK=$lw"
	read -r serial simout rc secs < <(LAT_STLB=$ls LAT_WALK=$lw boot calibrate-tlb "$list" "${BOOT_TIMEOUT:-1800}")
	runs+=(--run "$serial" "$simout" "$rc" "$secs")
	"$py" "$here/scripts/calibrate.py" tlb --native "$nt" "${runs[@]}" --profile "$profile" \
		--page "$results/llcsim-calibration.md" --tolerance 0.15 \
		--cmd "$(envs)benchmarks/llcsim/run.sh calibrate-tlb${2:+ $2}"
}

# The window: independent random loads K dependent adds apart against a
# chase, natively (native/gaploop.py, --measure: timed now, guarded, into
# calibration/native-window.json) and in the guest with the profile's
# timing, every window of CAL_ROB beside it (plugin grid_*); the section of
# docs/results/llcsim-calibration.md, its verdict PASS when the profile is
# within 15% at every K; exit 1 only when the guest run is unsound.
do_window() {
	local nw=$here/calibration/native-window.json
	[ "${2:-}" != --measure ] || "$py" "$here/native/gaploop.py" --out "$nw"
	read -r serial simout rc secs < <(GRID_CPI=$CPI GRID_ROB=${CAL_ROB:-160:224:320} GRID_MSHR=$MSHR \
		boot window "$("$py" "$here/native/gaploop.py" --sim-list)" "${BOOT_TIMEOUT:-1800}")
	"$py" "$here/scripts/calibrate.py" window --native "$nw" --run "$serial" "$simout" "$rc" "$secs" \
		--page "$results/llcsim-calibration.md" --tolerance 0.15 \
		--cmd "$(envs)benchmarks/llcsim/run.sh window${2:+ $2}"
}

# The base CPI of PostgreSQL's code: a cached scan and aggregate against a
# chase, natively (native/pgscan.py, --measure: timed now, guarded, into
# calibration/native-pgscan.json) and in the test box guest (pg/pgscan) with
# the profile's timing and every CPI of CAL_CPI_DYN beside it (plugin
# grid_*, every instruction at the point's CPI); calibrate.py dyn picks the
# CPI whose scan / chase is the native one, writes CPI_DYN into the profile
# and the section of docs/results/llcsim-calibration.md.
do_cpi_dyn() {
	local np=$here/calibration/native-pgscan.json
	[ "${2:-}" != --measure ] || "$py" "$here/native/pgscan.py" --out "$np"
	local kib image kernel
	kib=$(llc_kib)
	[ "$kib" = $(($(share_kib) / 4)) ] ||
		{ log "cpi-dyn: LLC_SIZE must be the native share ($(share_kib) KiB) over 4, as pg-validate"; exit 2; }
	image=$build/cpi-dyn.cpio
	kernel=$("$repo/scripts/testbox/mkimage.sh" -o "$image" -t "$here/pg" -l "$("$py" "$here/native/pgscan.py" --sim-list)" \
		-T "${BOOT_TIMEOUT:-3600}" -b "$build/guest/llcsim" | tail -1)
	read -r serial simout rc secs < <(ROB=$ROB_PG MEM=${PG_MEM:-2048} GRID_CPI=${CAL_CPI_DYN:-0.08:0.1:0.12:0.14:0.16:0.2:0.3:0.4} \
		GRID_ROB=$ROB GRID_MSHR=$MSHR boot cpi-dyn "" "${BOOT_TIMEOUT:-3600}" "$image" "$kernel")
	"$py" "$here/scripts/calibrate.py" dyn --native "$np" --run "$serial" "$simout" "$rc" "$secs" \
		--profile "$profile" --page "$results/llcsim-calibration.md" \
		--cmd "$(envs CAL_CPI_DYN)benchmarks/llcsim/run.sh cpi-dyn${2:+ $2}"
}

# The share of the LLC a stream leaves a resident chase: memload's native
# chases (calibration/native-share.json, over 4) alone and beside a 256 MiB
# stream on the other vCPU, one guest run per variant of SHARE_VARIANTS
# (LLC_REPL/LLC_SIZE/LLC_WAYS/LAT_LLC; the private levels keep REPL); scripts/share.py compares alone
# latencies and co-run slowdowns with the native same-L3 pairs.  No
# PostgreSQL: where pg-validate overshoots, this says whether the cache
# model alone does.
do_share() {
	local passes=${SHARE_PASSES:-20} list runs=() v repl llc ways lat
	[ $QUICK = 1 ] && passes=4
	list=$("$py" "$here/scripts/share.py" --native "$native_cal_share" --sim-list "$passes")
	for v in ${SHARE_VARIANTS:-pacman:0.01/2M/16/19 pacman:0.02/2M/16/19 pacman/2M/16/19}; do
		IFS=/ read -r repl llc ways lat <<<"$v"
		[ -n "$lat" ] || { log "share: variant $v is not REPL/LLC_SIZE/LLC_WAYS/LAT_LLC"; exit 2; }
		read -r serial simout rc secs < <(LLC_REPL=$repl LLC_SIZE=$llc LLC_WAYS=$ways LAT_LLC=$lat MEM=1024 \
			boot "share-${v//\//-}" "$list" "${BOOT_TIMEOUT:-1800}")
		runs+=(--run "$v" "$serial" "$simout" "$rc" "$secs")
	done
	mkdir -p "$results"
	"$py" "$here/scripts/share.py" --native "$native_cal_share" --memload "$native_cal_memload" "${runs[@]}" \
		--out "$results/llcsim-stream-share.md" --profile "$profile" \
		--cmd "$(envs SHARE_VARIANTS SHARE_PASSES)benchmarks/llcsim/run.sh share${2:+ $2}"
}

case "${1:-}" in
build) do_build ;;
share) do_build; do_share "$@" ;;
window) do_build; do_window "$@" ;;
cpi-dyn) do_build; do_cpi_dyn "$@" ;;
calibrate-tlb) do_build; do_calibrate_tlb "$@" ;;
calibrate-bw) do_calibrate_bw "$@" ;;
unit) do_unit ;;
validate) do_build; do_validate "$@" ;;
domains) do_build; do_domains "$@" ;;
mlp) do_build; do_mlp "$@" ;;
calibrate) do_build; do_calibrate "$@" ;;
table2) do_build; do_table2 "$@" ;;
pg-fig2) do_build; do_pg_fig2 "$@" ;;
pg-fig6) do_build; do_pg_fig6 "$@" ;;
pg-compare) do_build; do_pg_compare "$@" ;;
pg-validate) do_build; do_pg_validate "$@" ;;
pg-map) do_build; do_pg_map "$@" ;;
all) do_build; do_unit; do_validate "$@"; do_table2 "$@" ;;
*) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
