#!/usr/bin/env bash
# Install what mccdb's build, tests and demo need, idempotently.
#   install-deps.sh            Debian packages for the extension + Python venv
#   install-deps.sh --apt-only only the Debian packages
set -euo pipefail
. "$(dirname "$0")/lib.sh"

APT_PACKAGES=(
	postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
	libtap-parser-sourcehandler-pgtap-perl libpfm4-dev
	build-essential python3 python3-venv
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing Debian packages: ${missing[*]}"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}"
	# The postgresql-15 package may create and start a system cluster; we
	# never use it (our clusters live in var/ on their own port).
fi

[ "${1:-}" = --apt-only ] && exit 0

# Python packages live in a project-local virtual environment.
venv=$MCCDB_ROOT/.venv
req=$MCCDB_ROOT/requirements.txt
stamp=$venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	say "setting up Python virtual environment in .venv"
	/usr/bin/python3 -m venv "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
	echo "$want" >"$stamp"
fi
