#!/bin/bash
# Build the patched test kernel for the llcsim guest, in our own tree (so that
# we never wait for or disturb kernel-patch's build lock and tree):
#   /usr/src/linux-source-6.1.tar.xz (package linux-source-6.1) extracted to
#   build/kernel/src, kernel-patch/patches/series applied with patch -p1,
#   tinyconfig + kernel-patch/configs/test.config + scripts/llcsim.config
#   (CONFIG_ACPI=y: without it the guest sees only one of its vCPUs under TCG,
#   kernel-patch/TESTING.md finding 4), make -j$JOBS bzImage.
# Prints the bzImage path on the last line.  Reuses tree and kernel while the
# series and the fragments are unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
llc=$(dirname "$here")
repo=$(cd "$llc/../.." && pwd)
kp=$repo/kernel-patch
out=$llc/build/kernel
src=$out/src
obj=$out/obj
JOBS=${JOBS:-2}
TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
frags=("$kp/configs/test.config" "$here/llcsim.config")
log() { echo "build-kernel: $*" >&2; }
[ -f "$TARBALL" ] || { log "$TARBALL missing (run scripts/install-deps.sh)"; exit 1; }
patches=$(grep -v -E '^\s*(#|$)' "$kp/patches/series")
series_hash=$( { for p in $patches; do cat "$kp/patches/$p"; done; } | sha256sum | cut -d' ' -f1)
want=$( { echo "$series_hash"; cat "${frags[@]}"; } | sha256sum | cut -d' ' -f1)
if [ -f "$out/bzImage" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
	log "up to date"
	echo "$out/bzImage"; exit 0
fi
mkdir -p "$out"
if [ "$(cat "$src/.llcsim-series" 2>/dev/null)" != "$series_hash" ]; then
	log "extracting $TARBALL"
	rm -rf "$src" "$out/.x" "$obj"
	mkdir -p "$out/.x"
	tar -C "$out/.x" -xf "$TARBALL"
	mv "$out/.x"/* "$src"
	rm -rf "$out/.x"
	for p in $patches; do
		log "applying $p"
		patch -s -p1 -d "$src" < "$kp/patches/$p"
	done
	echo "$series_hash" > "$src/.llcsim-series"
fi
mkdir -p "$obj"
rm -f "$out/.stamp"
make -C "$src" O="$obj" -s tinyconfig >&2
(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}" >&2)
make -C "$src" O="$obj" -s olddefconfig >&2
for o in CONFIG_PAGE_COLORING CONFIG_ACPI CONFIG_SMP CONFIG_PROC_PAGE_MONITOR CONFIG_UNIX; do
	grep -qx "$o=y" "$obj/.config" || { log "$o not set in $obj/.config"; exit 1; }
done
t0=$SECONDS
make -C "$src" O="$obj" -j"$JOBS" bzImage >&2
log "built in $((SECONDS - t0)) s"
cp "$obj/arch/x86/boot/bzImage" "$out/bzImage"
cp "$obj/.config" "$out/config"
echo "$want" > "$out/.stamp"
echo "$out/bzImage"
