#!/usr/bin/env bash
# Install everything mccdb's demo, tests and benchmarks need, idempotently,
# before anything else runs:
#   - the Debian packages listed in scripts/debian-packages.txt;
#   - qemu-plugin.h for the cache simulator (from Debian's qemu source
#     package; no binary package ships it);
#   - the Python packages of requirements.txt in the project's .venv, and the
#     benchmark package (benchmarks/, mccdb_bench) installed editable there.
#
#   install-deps.sh            all of it
#   install-deps.sh --apt-only only the Debian packages
#   install-deps.sh --check    install nothing; list what is missing, exit 1 if any
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-all}
case $mode in all | --apt-only | --check) ;; *) die "usage: install-deps.sh [--apt-only | --check]" ;; esac

mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$MCCDB_ROOT/scripts/debian-packages.txt")
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done

qemu_include=$MCCDB_ROOT/benchmarks/llcsim/build/qemu-include
venv=$MCCDB_ROOT/.venv
req=$MCCDB_ROOT/requirements.txt
stamp=$venv/.requirements.sha256
bench=$MCCDB_ROOT/benchmarks
want=$(cat "$req" "$bench/pyproject.toml" | sha256sum | cut -d' ' -f1)
venv_ok() { [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; }

if [ "$mode" = --check ]; then
	rc=0
	[ ${#missing[@]} -eq 0 ] || { echo "missing Debian packages: ${missing[*]}"; rc=1; }
	[ -f "$qemu_include/qemu-plugin.h" ] || { echo "missing: $qemu_include/qemu-plugin.h"; rc=1; }
	venv_ok || { echo "missing or outdated: $venv (requirements.txt, benchmarks/pyproject.toml)"; rc=1; }
	[ $rc -ne 0 ] || echo "all dependencies are installed"
	exit $rc
fi

if [ ${#missing[@]} -gt 0 ]; then
	say "installing Debian packages: ${missing[*]}"
	as_root apt-get update -qq
	# postgresql-15 may create and start a system cluster 15/main; the
	# project's own clusters never use it (they live in var/ on a socket).
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}"
fi

[ "$mode" = --apt-only ] && exit 0

"$MCCDB_ROOT/benchmarks/llcsim/scripts/fetch-qemu-header.sh" "$qemu_include" >/dev/null

if ! venv_ok; then
	say "setting up Python virtual environment in .venv"
	/usr/bin/python3 -m venv "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
	# Editable: python -m mccdb_bench.<command> runs the checkout's code.
	"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --no-deps -e "$bench"
	echo "$want" >"$stamp"
fi
