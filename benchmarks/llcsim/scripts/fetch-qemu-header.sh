#!/bin/bash
# Fetch qemu-plugin.h matching the installed QEMU from Debian's `qemu` source
# package (apt-get source --download-only, through a temporary deb-src list),
# into a project-local directory.  Idempotent: does nothing when the header for
# the installed version is already there.
#
# usage: fetch-qemu-header.sh OUTDIR      -> OUTDIR/qemu-plugin.h, OUTDIR/VERSION
set -euo pipefail
out=${1:?usage: fetch-qemu-header.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ver=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null) ||
	{ echo "fetch-qemu-header: qemu-system-x86 is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
# Source version: the binary may carry a binNMU suffix (+bN) the source lacks.
srcver=${ver%+b[0-9]*}
if [ -f "$out/qemu-plugin.h" ] && [ "$(cat "$out/VERSION" 2>/dev/null)" = "$srcver" ]; then
	echo "fetch-qemu-header: $out/qemu-plugin.h ($srcver) already there"
	exit 0
fi
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
command -v dpkg-source >/dev/null ||
	{ echo "fetch-qemu-header: dpkg-dev is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
work="$out/apt"
mkdir -p "$work/lists/partial" "$work/src"
sed 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources > "$work/sources.sources"
aptopts=(-o Dir::Etc::sourcelist="$work/sources.sources" -o Dir::Etc::sourceparts=- \
	-o Dir::State::Lists="$work/lists" -o APT::Get::List-Cleanup=0)
if ! ls "$work/lists/"*Sources* >/dev/null 2>&1; then
	echo "fetch-qemu-header: apt-get update (deb-src, private lists in $work/lists)"
	$SUDO apt-get "${aptopts[@]}" update -q >/dev/null
fi
cd "$work/src"
if ! ls qemu_*.dsc >/dev/null 2>&1; then
	echo "fetch-qemu-header: apt-get source --download-only qemu=$srcver"
	$SUDO apt-get "${aptopts[@]}" source --download-only -q "qemu=$srcver" >/dev/null
fi
orig=$(ls qemu_*.orig.tar.* | head -1)
rm -rf x && mkdir x
tar -xf "$orig" -C x --wildcards '*/include/qemu/qemu-plugin.h'
hdr=$(find x -name qemu-plugin.h | head -1)
[ -n "$hdr" ] || { echo "fetch-qemu-header: qemu-plugin.h not in $orig" >&2; exit 1; }
# Apply Debian's patches to the header, if any touch it.
deb=$(ls qemu_*.debian.tar.* 2>/dev/null | head -1 || true)
if [ -n "$deb" ]; then
	mkdir -p x/deb && tar -xf "$deb" -C x/deb
	top=$(dirname "$(dirname "$(dirname "$hdr")")")
	if [ -f x/deb/debian/patches/series ]; then
		while read -r p _; do
			case $p in ''|'#'*) continue ;; esac
			if grep -q 'include/qemu/qemu-plugin.h' "x/deb/debian/patches/$p"; then
				echo "fetch-qemu-header: applying $p"
				patch -s -f -N -d "$top" -p1 < "x/deb/debian/patches/$p" || true
			fi
		done < x/deb/debian/patches/series
	fi
fi
cp "$hdr" "$out/qemu-plugin.h"
echo "$srcver" > "$out/VERSION"
rm -rf x
grep -m1 'QEMU_PLUGIN_VERSION' "$out/qemu-plugin.h" || true
echo "fetch-qemu-header: wrote $out/qemu-plugin.h for qemu $srcver"
