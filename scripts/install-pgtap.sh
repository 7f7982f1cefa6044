#!/bin/bash
# Install pgTAP into the PostgreSQL installation PG_CONFIG describes (the
# project-local copy of PostgreSQL 18; 15 has Debian's postgresql-15-pgtap),
# built with PGXS from pgTAP's release tarball, pinned by version and
# SHA-256.  The tarball comes from Debian's archive, the one registry this
# machine reaches that has it (the .orig.tar.gz of Debian's pgtap source
# package; bookworm's own 1.2.0 tarball is not served).  Idempotent.
#
# usage: install-pgtap.sh PG_CONFIG
set -euo pipefail
. "$(dirname "$0")/lib.sh"
PGTAP_VERSION=1.3.3
PGTAP_SHA256=325ea79d0d2515bce96bce43f6823dcd3effbd6c54cb2a4d6c2384fffa3a14c7
PGTAP_URL=http://deb.debian.org/debian/pool/main/p/pgtap/pgtap_$PGTAP_VERSION.orig.tar.gz

pgc=${1:?usage: install-pgtap.sh PG_CONFIG}
ext=$("$pgc" --sharedir)/extension
if [ -f "$ext/pgtap.control" ] && [ "$(cat "$ext/pgtap.release" 2>/dev/null)" = "$PGTAP_VERSION" ]; then
	exit 0
fi
src=$MCCDB_VAR/build/pgtap
tarball=$src/pgtap_$PGTAP_VERSION.orig.tar.gz
mkdir -p "$src"
if ! echo "$PGTAP_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
	say "downloading pgTAP $PGTAP_VERSION"
	curl -fsSL --retry 3 -o "$tarball.part" "$PGTAP_URL" || die "cannot download $PGTAP_URL"
	echo "$PGTAP_SHA256  $tarball.part" | sha256sum -c --status ||
		die "$PGTAP_URL: SHA-256 is not $PGTAP_SHA256"
	mv "$tarball.part" "$tarball"
fi
say "building pgTAP $PGTAP_VERSION for $("$pgc" --version)"
rm -rf "$src/tree" && mkdir -p "$src/tree"
tar -xzf "$tarball" -C "$src/tree" --strip-components=1
make -s -C "$src/tree" PG_CONFIG="$pgc" >/dev/null
make -s -C "$src/tree" PG_CONFIG="$pgc" install >/dev/null
echo "$PGTAP_VERSION" >"$ext/pgtap.release"
