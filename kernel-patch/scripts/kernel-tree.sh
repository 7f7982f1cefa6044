#!/bin/bash
# kernel-tree.sh - extract Debian's linux-source-6.12 (or 6.1), apply the page colouring
# series and build small test kernels.  Run with --help for usage.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KP="$(cd "$HERE/.." && pwd)"                   # kernel-patch/
# KERNEL_SERIES=6.1: the series on Linux 6.1, the base before the rebase
# (patches-6.1/, linux-source-6.1), in a build directory of its own; the
# default is the 6.12 series, which make test boots.
SERIES="${KERNEL_SERIES:-6.12}"
case "$SERIES" in
6.12) SUFFIX= ;;
6.1) SUFFIX=-6.1 ;;
*) echo "kernel-tree: ERROR: KERNEL_SERIES is 6.12 or 6.1, not '$SERIES'" >&2; exit 2 ;;
esac
BUILD="${KP_BUILD:-$KP/build$SUFFIX}"          # build trees live here
TARBALL="${KERNEL_TARBALL:-/usr/src/linux-source-$SERIES.tar.xz}"
PATCHES="$KP/patches$SUFFIX"
CONFIGS="$KP/configs"
JOBS="${JOBS:-2}"
SRC="${KP_SRC:-$BUILD/src}"                    # git tree: pristine + series
SCRIPT_VERSION=1                               # bump to force rebuilds

usage() {
	cat <<EOF
Usage: $(basename "$0") command [args]

Commands:
  build [test|debug|guest|trace]
                      Extract the tree if needed, apply the series, build a
                      bzImage for the config (default: test).  Reuses the
                      tree and the kernel when series and config are unchanged.
                      Prints the bzImage path on the last line of stdout.
  tree                Only extract the tree and apply the series.
  path [test|debug|guest|trace]
                      Print the bzImage path (does not build).
  check-series        Slow: apply the patches one by one; build each
                      (make -j$JOBS, test config) and run
                      scripts/checkpatch.pl --strict on it.  Fails on a build
                      failure or a checkpatch ERROR.
  clean               Remove the trees and kernels built here (src, obj-*,
                      test, debug, check-*) from $BUILD.
  -h, --help          This text.

Outputs (stable paths, used by the QEMU boot scripts):
  $BUILD/test/bzImage     test.config  (tinyconfig + fragment)
  $BUILD/debug/bzImage    test.config + debug.config (KASAN, DEBUG_VM,
                          PROVE_LOCKING, DEBUG_PAGEALLOC, ...)
  $BUILD/guest/bzImage    test.config + guest.config (ACPI for both vCPUs,
                          Unix sockets): the test box and the cache simulator
  $BUILD/trace/bzImage    test.config + trace.config (the irqs-off latency
                          tracer): the guest benchmark kernel_latency
  $BUILD/<cfg>/config     the resulting .config
  $BUILD/src              git tree: tag 'pristine' = the tarball,
                          branch 'series' = pristine + the series

Inputs: $PATCHES/series (patch file names in order), the patches,
$CONFIGS/test.config, debug.config and guest.config, and the tarball
$TARBALL (package linux-source-$SERIES; scripts/install-deps.sh installs
6.12 and the build's other packages; 6.1 is apt-get install linux-source-6.1).

Environment: JOBS (default 2), KP_BUILD (build dir), KERNEL_TARBALL,
KERNEL_SERIES (6.12, the default, or 6.1: patches-6.1/ on
linux-source-6.1, built in kernel-patch/build-6.1).
EOF
}

log() { echo "kernel-tree: $*" >&2; }
die() { echo "kernel-tree: ERROR: $*" >&2; exit 1; }

# The build's packages are installed up front by scripts/install-deps.sh
# (scripts/debian-packages.txt); here we only say what is missing.
ensure_packages() {
	local missing=()
	[ -f "$TARBALL" ] || missing+=(linux-source-"$SERIES")
	command -v bc >/dev/null || missing+=(bc)
	command -v flex >/dev/null || missing+=(flex)
	command -v bison >/dev/null || missing+=(bison)
	command -v cpio >/dev/null || missing+=(cpio)
	command -v gcc >/dev/null && command -v make >/dev/null || missing+=(build-essential)
	[ -f /usr/include/gelf.h ] || missing+=(libelf-dev)
	[ -f /usr/include/openssl/opensslv.h ] || missing+=(libssl-dev)
	[ ${#missing[@]} -eq 0 ] && return 0
	# install-deps.sh installs the default series' source only
	[ "$SERIES" = 6.12 ] ||
		die "missing Debian packages: ${missing[*]} (KERNEL_SERIES=$SERIES: sudo apt-get install ${missing[*]})"
	die "missing Debian packages: ${missing[*]} (run scripts/install-deps.sh)"
}

series_files() {
	[ -f "$PATCHES/series" ] || die "$PATCHES/series missing"
	grep -v '^\s*#' "$PATCHES/series" | grep -v '^\s*$' || true
}

series_hash() {
	{
		echo "v$SCRIPT_VERSION"
		cat "$PATCHES/series"
		local p
		for p in $(series_files); do
			[ -f "$PATCHES/$p" ] || die "patch $p listed in series is missing"
			cat "$PATCHES/$p"
		done
	} | sha256sum | cut -d' ' -f1
}

git_src() { git -C "$SRC" -c user.name=kernel-tree -c user.email=kernel-tree@localhost "$@"; }

extract_tree() {
	local tarball_name
	tarball_name="$(basename "$TARBALL")"
	if [ -d "$SRC/.git" ] && git_src rev-parse -q --verify pristine >/dev/null; then
		# a tree from another tarball (build/ held 6.1 before 6.12 was
		# the default) is extracted again, not patched with this series
		[ "$(git_src log -1 --format=%s pristine)" = "pristine $tarball_name" ] && return 0
		log "$SRC is '$(git_src log -1 --format=%s pristine)', not $tarball_name: extracting again"
	fi
	ensure_packages
	log "extracting $TARBALL into $SRC"
	rm -rf "$SRC" "$BUILD/.extract"
	mkdir -p "$BUILD/.extract"
	tar -C "$BUILD/.extract" -xf "$TARBALL"
	local top
	top="$(find "$BUILD/.extract" -mindepth 1 -maxdepth 1 -type d | head -n1)"
	[ -n "$top" ] && [ -f "$top/Makefile" ] || die "unexpected tarball layout"
	mv "$top" "$SRC"
	rm -rf "$BUILD/.extract"
	# Debian's .gitignore ignores everything at the top level ("/*"), which
	# would hide the whole tree from git: drop that block.
	sed -i '/^# Debian packaging: ignore everything/,/^!\/debian\/$/d' "$SRC/.gitignore"
	git_src init -q
	git_src add -A
	GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" \
		git_src commit -q -m "pristine $tarball_name"
	git_src tag pristine
}

apply_series() {
	local want have
	want="$(series_hash)"
	have="$(cat "$SRC/.kp-series" 2>/dev/null || true)"
	if [ "$want" = "$have" ] && [ "$(git_src rev-parse --abbrev-ref HEAD)" = series ]; then
		return 0
	fi
	log "applying the series"
	git_src am --abort >/dev/null 2>&1 || true
	git_src checkout -q -f -B series pristine
	git_src clean -q -fdx -e .kp-series
	local p
	for p in $(series_files); do
		git_src am -q --keep-cr "$PATCHES/$p" || {
			git_src am --abort >/dev/null 2>&1 || true
			rm -f "$SRC/.kp-series"
			die "patch $p does not apply"
		}
	done
	echo "$want" > "$SRC/.kp-series"
}

fragments_for() {
	case "$1" in
	test) echo "$CONFIGS/test.config" ;;
	debug) echo "$CONFIGS/test.config $CONFIGS/debug.config" ;;
	guest) echo "$CONFIGS/test.config $CONFIGS/guest.config" ;;
	trace) echo "$CONFIGS/test.config $CONFIGS/trace.config" ;;
	*) die "unknown config '$1' (test, debug, guest or trace)" ;;
	esac
}

# Does the tree's Kconfig define the option (CONFIG_X)?
kconfig_defines() {
	grep -rqsE "^[[:space:]]*(menu)?config ${1#CONFIG_}\$" "$SRC" --include='Kconfig*'
}

# Fail unless every option of the fragments has its value in .config
# (an option this kernel does not have at all is skipped, with a note).
verify_config() {
	local dotconfig="$1"; shift
	local frag line opt val bad=0
	for frag in "$@"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*)
				opt="${line%%=*}"; val="${line#*=}" ;;
			"# CONFIG_"*" is not set")
				opt="${line#\# }"; opt="${opt%% *}"; val=n ;;
			*) continue ;;
			esac
			if [ "$val" = n ]; then
				if grep -q "^$opt=" "$dotconfig"; then
					log "config: $opt should be unset but is $(grep "^$opt=" "$dotconfig")"
					bad=1
				fi
			elif ! grep -qxF "$opt=$val" "$dotconfig" && ! kconfig_defines "$opt"; then
				# gone from this kernel (CONFIG_MEMCG_KMEM, folded into MEMCG in 6.6)
				log "config: $opt does not exist in $(basename "$TARBALL"): skipped"
			elif ! grep -qxF "$opt=$val" "$dotconfig"; then
				log "config: wanted $opt=$val, got: $(grep -E "^(# )?$opt[= ]" "$dotconfig" || echo 'absent')"
				bad=1
			fi
		done < "$frag"
	done
	[ $bad = 0 ] || die "the config fragment did not apply (options above); see $dotconfig"
}

# build_kernel <name> <objdir> <outdir> <fragment...>
build_kernel() {
	local name="$1" obj="$2" out="$3"; shift 3
	local frags=("$@") want
	want="$( { cat "$SRC/.kp-series"; cat "${frags[@]}"; echo "v$SCRIPT_VERSION"; } | sha256sum | cut -d' ' -f1)"
	if [ -f "$out/bzImage" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
		log "$name kernel is up to date"
		return 0
	fi
	mkdir -p "$obj" "$out"
	rm -f "$out/.stamp"
	log "configuring $name kernel in $obj"
	make -C "$SRC" O="$obj" -s tinyconfig >&2
	(cd "$obj" && "$SRC/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}" >&2)
	make -C "$SRC" O="$obj" -s olddefconfig >&2
	verify_config "$obj/.config" "${frags[@]}"
	log "building $name kernel (make -j$JOBS bzImage)"
	local t0=$SECONDS
	make -C "$SRC" O="$obj" -j"$JOBS" bzImage >&2 || die "$name kernel build failed"
	log "$name kernel built in $((SECONDS - t0)) s"
	cp "$obj/arch/x86/boot/bzImage" "$out/bzImage.tmp"
	mv "$out/bzImage.tmp" "$out/bzImage"
	cp "$obj/.config" "$out/config"
	echo "$want" > "$out/.stamp"
}

cmd_build() {
	local cfg="${1:-test}"
	local frags
	frags="$(fragments_for "$cfg")"
	ensure_packages
	extract_tree
	apply_series
	# shellcheck disable=SC2086
	build_kernel "$cfg" "$BUILD/obj-$cfg" "$BUILD/$cfg" $frags
	echo "$BUILD/$cfg/bzImage"
}

cmd_check_series() {
	ensure_packages
	extract_tree
	local wt="$BUILD/check-src" obj="$BUILD/obj-check" report="$BUILD/check-series.log"
	local n=0 fail=0 p res
	git_src worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"
	git_src worktree prune
	git_src worktree add -q -f --detach "$wt" pristine
	: > "$report"
	for p in $(series_files); do
		n=$((n + 1))
		log "[$n] $p: applying"
		git -C "$wt" -c user.name=kernel-tree -c user.email=kernel-tree@localhost \
			am -q --keep-cr "$PATCHES/$p" || { echo "$p: DOES NOT APPLY" >> "$report"; fail=1; break; }
		log "[$n] $p: checkpatch --strict"
		# stderr dropped: spdxcheck.py prints a traceback without python3-ply
		res="$(cd "$wt" && ./scripts/checkpatch.pl --strict -q --terse \
			"$PATCHES/$p" 2>/dev/null || true)"
		printf '%s: checkpatch: %s\n' "$p" \
			"$(echo "$res" | grep -c ' ERROR:' || true) errors, $(echo "$res" | grep -c ' WARNING:' || true) warnings, $(echo "$res" | grep -c ' CHECK:' || true) checks" >> "$report"
		[ -n "$res" ] && echo "$res" | sed 's/^/    /' >> "$report"
		echo "$res" | grep -q ' ERROR:' && fail=1
		log "[$n] $p: building (test config)"
		if [ ! -f "$obj/.config" ]; then
			mkdir -p "$obj"
			make -C "$wt" O="$obj" -s tinyconfig >&2
			(cd "$obj" && "$wt/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$CONFIGS/test.config" >&2)
		fi
		make -C "$wt" O="$obj" -s olddefconfig >&2
		if make -C "$wt" O="$obj" -j"$JOBS" bzImage >"$BUILD/check-build-$n.log" 2>&1; then
			echo "$p: build OK" >> "$report"
		else
			echo "$p: BUILD FAILED (see $BUILD/check-build-$n.log)" >> "$report"
			tail -20 "$BUILD/check-build-$n.log" >&2
			fail=1
		fi
	done
	git_src worktree remove --force "$wt" >/dev/null 2>&1 || true
	cat "$report"
	[ $fail = 0 ] || die "check-series failed (report: $report)"
	log "check-series: all $n patches apply, build and have no checkpatch errors"
}

# One kernel-tree.sh at a time per build directory: two makes in one
# object directory corrupt each other.
take_lock() {
	mkdir -p "$BUILD"
	exec 9>"$BUILD/.lock"
	if ! flock -n 9; then
		log "waiting for another kernel-tree.sh (lock $BUILD/.lock)"
		flock 9
	fi
}

main() {
	# no default command: a bare run prints the usage rather than building
	[ $# -gt 0 ] || { usage >&2; exit 2; }
	local cmd="$1"
	shift
	case "$cmd" in
	build|tree|check-series|clean) take_lock ;;
	esac
	case "$cmd" in
	-h|--help|help) usage ;;
	build) cmd_build "$@" ;;
	tree) ensure_packages; extract_tree; apply_series; echo "$SRC" ;;
	path) fragments_for "${1:-test}" >/dev/null; echo "$BUILD/${1:-test}/bzImage" ;;
	check-series) cmd_check_series ;;
	clean) rm -rf "$BUILD"/src "$BUILD"/obj-* "$BUILD"/test "$BUILD"/debug "$BUILD"/guest "$BUILD"/trace "$BUILD"/check-* ;;
	*) usage >&2; exit 2 ;;
	esac
}

main "$@"
