# Shell helpers for the test box's guest programs (scripts/testbox/guest/,
# benchmarks/llcsim/pg/); mkimage.sh puts this file at /testbox/guestlib.sh.
# Source it: it mounts /dev/shm, hands /pgdata to the user postgres and
# defines tap, as_pg, server, sql and finish.
set -u
PGBIN=/usr/lib/postgresql/15/bin
export PATH=$PGBIN:$PATH PGHOST=/tmp PGUSER=postgres PGDATABASE=ssb TZ=UTC
out=/tmp/out
q=/testbox/queries
conf=/testbox/conf
mkdir -p $out /dev/shm
chmod 777 $out
grep -q " /dev/shm " /proc/mounts || mount -t tmpfs -o mode=1777 shm /dev/shm
chown -R postgres:postgres /pgdata
chmod 700 /pgdata
# Setting a page colour policy is a privilege (vm.page_color_restrict,
# default 1: CAP_SYS_NICE).  The server runs as the user postgres through
# su, which drops capabilities, and busybox has no way to hand it an
# ambient CAP_SYS_NICE; so, as a DBA would on a machine where every local
# user may colour, the guest's init lowers the sysctl (docs/usage.md).
[ ! -w /proc/sys/vm/page_color_restrict ] || echo 0 > /proc/sys/vm/page_color_restrict
n=0 bad=0
tap() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; return 1; fi
}
as_pg() { su postgres -s /bin/sh -c "$*"; }
# server start CONF [WRAPPER...]: the server with /testbox/conf/CONF as
# mccdb.conf, started through WRAPPER (e.g. taskset 1 pagecolor -c 0-3 --),
# which its processes inherit; GUEST_CONF, when set, is a line added to
# that mccdb.conf.  server stop.
server() {
	if [ "$1" = stop ]; then
		as_pg "pg_ctl -D /pgdata -m fast -w -t 600 stop" >/dev/null
		return
	fi
	local c=$2
	shift 2
	cp "$conf/stock.conf" /pgdata/stock.conf
	cp "$conf/$c" /pgdata/mccdb.conf
	[ -z "${GUEST_CONF:-}" ] || echo "$GUEST_CONF" >> /pgdata/mccdb.conf
	chown postgres /pgdata/mccdb.conf /pgdata/stock.conf
	as_pg "$* pg_ctl -D /pgdata -l $out/server-$c.log -w -t 600 start" >/dev/null
}
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# shuffled SEED WORD...: the words in an order fixed by SEED (one repetition
# of an experiment each; busybox shuf takes no seed)
shuffled() {
	local seed=$1
	shift
	printf '%s\n' "$@" | awk -v s="$seed" 'BEGIN { srand(s + 1) } { print rand() "\t" $0 }' |
		sort -n | cut -f2 | tr '\n' ' '
}
# Print the archive the host unpacks, and end.
finish() {
	pagecolor --stats > $out/stats.txt 2>&1
	dmesg > $out/dmesg.txt
	echo "=== TESTBOX ARCHIVE BEGIN"
	tar -C /tmp -cz out | base64
	echo "=== TESTBOX ARCHIVE END"
	exit $bad
}
