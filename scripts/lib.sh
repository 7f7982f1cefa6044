# Shared shell helpers for mccdb's scripts; source it, do not run it.
# shellcheck shell=bash

MCCDB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MCCDB_VAR_SET=${MCCDB_VAR:-}
MCCDB_VAR=${MCCDB_VAR:-$MCCDB_ROOT/var}
PG_MAJOR=15
PG_SYS_BINDIR=/usr/lib/postgresql/$PG_MAJOR/bin
# Relocated copy of the server: the extension is installed here, never into /usr.
PG_LOCAL=$MCCDB_VAR/pg
PG_BINDIR=$PG_LOCAL/usr/lib/postgresql/$PG_MAJOR/bin
# A project-local cluster's directory (pg-cluster.sh); data is in data/.
cluster_dir() { echo "$MCCDB_VAR/clusters/$1"; }
# PostgreSQL refuses to run as root; as root the clusters belong to this user.
MCCDB_CLUSTER_USER=${MCCDB_CLUSTER_USER:-mccdb}

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# Run a command with root rights: directly as root, through sudo otherwise.
as_root() {
	if is_root; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root for: $* (run as root or install sudo)"
	fi
}

# The OS user that owns and runs test clusters.
cluster_user() {
	if is_root; then echo "$MCCDB_CLUSTER_USER"; else id -un; fi
}

# Run a command as the cluster user (no-op switch for a normal user).
as_cluster_user() {
	if is_root; then
		runuser -u "$MCCDB_CLUSTER_USER" -- "$@"
	else
		"$@"
	fi
}

# Create database $1 in the cluster the PG* variables point at, if missing.
ensure_db() {
	"$PG_BINDIR/psql" -X -q -d postgres -tAc "select 1 from pg_database where datname = '$1'" | grep -q 1 ||
		"$PG_BINDIR/psql" -X -q -d postgres -c "create database $1"
}

ensure_cluster_user() {
	is_root || return 0
	id -u "$MCCDB_CLUSTER_USER" >/dev/null 2>&1 ||
		useradd --system --no-create-home --shell /usr/sbin/nologin \
			"$MCCDB_CLUSTER_USER"
	# The cluster user must reach var/; a clone under a private home
	# directory (e.g. /root) is not reachable, so keep var/ elsewhere then.
	if [ ! -L "$MCCDB_ROOT/var" ] && [ -z "${MCCDB_VAR_SET:-}" ] &&
		! runuser -u "$MCCDB_CLUSTER_USER" -- test -x "$MCCDB_ROOT"; then
		local alt
		alt=/var/tmp/mccdb-$(printf '%s' "$MCCDB_ROOT" | sha256sum | cut -c1-12)
		say "$MCCDB_ROOT is not reachable by user $MCCDB_CLUSTER_USER; keeping var/ in $alt"
		mkdir -p "$alt"
		[ -d "$MCCDB_ROOT/var" ] && rm -rf "$MCCDB_ROOT/var"
		ln -s "$alt" "$MCCDB_ROOT/var"
	fi
}
