"""PgBouncer in front of the project cluster: the pooler a DBA would pick instead of mccdb.

A PgBouncer process (the Debian package `pgbouncer`) of the harness's own:
its configuration, auth file, log and socket under var/pgbouncer/NAME/,
listening on 127.0.0.1:PORT and on a Unix socket there, transaction
pooling, `default_pool_size` server connections per database and user,
pointing at the cluster the libpq environment names (PGHOST, a project
cluster's socket directory, and PGPORT).  Clients reach the pooler with
PgBouncer.conninfo() (psycopg keywords) or PgBouncer.env() (libpq variables
for pgbench and psql) instead of the server.

Authentication is `trust`, as the project clusters are (initdb --auth=trust):
the auth file names the user only.  As root, PgBouncer switches to the
clusters' user (MCCDB_CLUSTER_USER, default mccdb; scripts/lib.sh), as the
server itself runs: neither runs as root.

    with PgBouncer(pool_size=2, port=54441) as pool:
        psycopg.connect(**pool.conninfo(), dbname="ssb", prepare_threshold=None)

A pool per workload class (aliases): OLTP and analytics clients connect to
their own database alias of the same database, each with its own pool_size:

    PgBouncer(2, 54441, aliases={"ssb_oltp": ("ssb", 8), "ssb_analytics": ("ssb", 2)})

Transaction pooling hands a server connection to a client for one
transaction only: session state (SET, prepared statements, holds) stays on
the server connection, not with the client.  Clients send per-query
settings as SET LOCAL inside a transaction and must not prepare statements
(psycopg: prepare_threshold=None).
"""
import os
import pathlib
import shutil
import socket
import subprocess
import time

from ..paths import VAR

# Where Debian installs it; root's PATH has /usr/sbin, a user's may not.
DEBIAN_BINARY = "/usr/sbin/pgbouncer"


def binary():
    """The pgbouncer executable, or None when it is not installed."""
    found = shutil.which("pgbouncer")
    if found:
        return found
    return DEBIAN_BINARY if os.access(DEBIAN_BINARY, os.X_OK) else None


def cluster_user():
    """The user PgBouncer runs as when started by root (scripts/lib.sh's
    MCCDB_CLUSTER_USER); None when not root (it runs as the caller)."""
    if os.geteuid() != 0:
        return None
    return os.environ.get("MCCDB_CLUSTER_USER", "mccdb")


def alias_lines(aliases, server_host, server_port):
    """[databases] lines of the per-class aliases: {alias: (dbname, pool_size)}
    -> 'alias = host=... port=... dbname=DB pool_size=N', in the given order."""
    out = []
    for alias, (dbname, size) in aliases.items():
        if not alias or not all(ch.isalnum() or ch == "_" for ch in alias):
            raise ValueError(f"alias {alias!r}: letters, digits and _ only")
        if int(size) < 1:
            raise ValueError(f"alias {alias}: a pool of at least one connection")
        out.append(f"{alias} = host={server_host} port={server_port} dbname={dbname} pool_size={int(size)}")
    return out


def config_text(*, server_host, server_port, listen_port, socket_dir, auth_file, logfile, pidfile,
                pool_size, pool_mode="transaction", max_client_conn=200, admin_user="postgres", aliases=None):
    """pgbouncer.ini for one pooler: every database of the server (the '*'
    fallback), one pool of pool_size server connections per database and
    user, no reserve, no limit on how long a client waits for a server
    connection (a long analytical query may hold every one for minutes).

    aliases ({alias: (dbname, pool_size)}): one pool per workload class, as
    a DBA sets a mixed server up: each alias is a database name clients
    connect to, served by the real database dbname through its own pool of
    pool_size server connections (OLTP and analytics kept apart)."""
    lines = [
        "; written by mccdb_bench.harness.pgbouncer; edits are overwritten",
        "[databases]",
        *alias_lines(aliases or {}, server_host, server_port),
        f"* = host={server_host} port={server_port}",
        "",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {listen_port}",
        f"unix_socket_dir = {socket_dir}",
        "auth_type = trust",
        f"auth_file = {auth_file}",
        f"admin_users = {admin_user}",
        f"pool_mode = {pool_mode}",
        f"default_pool_size = {pool_size}",
        "min_pool_size = 0",
        "reserve_pool_size = 0",
        f"max_client_conn = {max_client_conn}",
        "query_wait_timeout = 0",
        "server_check_delay = 0",
        "ignore_startup_parameters = extra_float_digits",
        f"logfile = {logfile}",
        f"pidfile = {pidfile}",
        "log_connections = 0",
        "log_disconnections = 0",
        "",
    ]
    return "\n".join(lines)


class PgBouncer:
    """One PgBouncer process in front of the server the libpq environment
    names (or server_host/server_port).  start() writes its files and starts
    it in the foreground as a child of this process; stop() ends it."""

    def __init__(self, pool_size, port, name=None, server_host=None, server_port=None,
                 user="postgres", pool_mode="transaction", max_client_conn=200, root=None, aliases=None,
                 users=()):
        """aliases: {alias: (dbname, pool_size)}, a pool per workload class
        (config_text); the '*' fallback with pool_size serves every other name.
        users: roles besides user that clients may connect as (trust still
        needs them in the auth file)."""
        self.pool_size, self.port, self.user, self.pool_mode = int(pool_size), int(port), user, pool_mode
        self.aliases = dict(aliases or {})
        self.users = [user] + [u for u in users if u != user]
        self.max_client_conn = max_client_conn
        self.name = name or f"pool{self.pool_size}-{self.port}"
        self.server_host = server_host or os.environ.get("PGHOST", "")
        self.server_port = int(server_port or os.environ.get("PGPORT", "5432"))
        if not self.server_host.startswith("/"):
            raise RuntimeError("PgBouncer needs the server's Unix socket directory in PGHOST "
                               "(eval \"$(scripts/pg-cluster.sh env NAME)\")")
        self.dir = pathlib.Path(root or VAR / "pgbouncer") / self.name
        self.proc = None

    # -- files
    @property
    def ini(self):
        return self.dir / "pgbouncer.ini"

    @property
    def logfile(self):
        return self.dir / "pgbouncer.log"

    def write_files(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        auth = self.dir / "userlist.txt"
        auth.write_text("".join(f'"{u}" ""\n' for u in self.users))
        self.ini.write_text(config_text(
            server_host=self.server_host, server_port=self.server_port, listen_port=self.port,
            socket_dir=self.dir, auth_file=auth, logfile=self.logfile, pidfile=self.dir / "pgbouncer.pid",
            pool_size=self.pool_size, pool_mode=self.pool_mode, max_client_conn=self.max_client_conn,
            admin_user=self.user, aliases=self.aliases))
        run_as = cluster_user()
        if run_as:
            for p in (self.dir, auth, self.ini):
                shutil.chown(p, user=run_as)
            if self.logfile.exists():
                shutil.chown(self.logfile, user=run_as)
        if len(str(self.dir / f".s.PGSQL.{self.port}")) > 100:
            raise RuntimeError(f"socket path too long under {self.dir} (set MCCDB_VAR to a shorter path)")

    # -- process
    def start(self, timeout=15.0):
        exe = binary()
        if exe is None:
            raise RuntimeError("pgbouncer is not installed (Debian: apt-get install pgbouncer; "
                               "scripts/install-deps.sh installs it)")
        if self.proc is not None:
            raise RuntimeError(f"{self.name} runs already")
        self.write_files()
        cmd = [exe, "-q"]
        if cluster_user():
            cmd += ["-u", cluster_user()]
        cmd.append(str(self.ini))
        size = self.logfile.stat().st_size if self.logfile.exists() else 0
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")
                self.proc = None
                raise RuntimeError(f"pgbouncer exited at start: {err.strip()}\n{self.log_since(size)}")
            if self.listening():
                return self
            if time.time() > deadline:
                self.stop()
                raise RuntimeError(f"pgbouncer did not listen on port {self.port} in {timeout:.0f} s:\n"
                                   f"{self.log_since(size)}")
            time.sleep(0.05)

    def log_since(self, offset):
        try:
            with open(self.logfile, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def listening(self):
        if not (self.dir / f".s.PGSQL.{self.port}").exists():
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self, timeout=10.0):
        """SIGINT (PgBouncer's safe shutdown: waits for running queries) and
        then SIGTERM; the server connections close with it."""
        if self.proc is None:
            return
        self.proc.send_signal(2)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- reaching it
    def conninfo(self):
        """psycopg.connect keywords for a client of the pooler (add dbname;
        and prepare_threshold=None: transaction pooling cannot keep
        prepared statements)."""
        return {"host": str(self.dir), "port": self.port, "user": self.user}

    def env(self):
        """libpq environment variables that point a client (pgbench) at the pooler."""
        return {"PGHOST": str(self.dir), "PGPORT": str(self.port), "PGUSER": self.user}

    def console(self):
        """An open connection (autocommit) to PgBouncer's admin console, for
        console_rows()."""
        import psycopg
        return psycopg.connect(**self.conninfo(), dbname="pgbouncer", autocommit=True)

    def admin(self, command):
        """Run a command on PgBouncer's admin console (SHOW POOLS, RECONNECT,
        ...) on a connection of its own; its rows as tuples of str."""
        with self.console() as c:
            return console_rows(c, command)[1]

    def settings(self):
        """What a results page records about the pooler."""
        got = {"pgbouncer": version(), "pool_mode": self.pool_mode, "default_pool_size": self.pool_size,
               "reserve_pool_size": 0, "max_client_conn": self.max_client_conn, "query_wait_timeout": 0}
        for alias, (dbname, size) in self.aliases.items():
            got[f"pool {alias}"] = f"{dbname}, pool_size {size}"
        return got


def console_rows(conn, command):
    """Run a command on an open admin console connection: (column names,
    rows as tuples of str).  The console speaks the simple query protocol
    only, so this goes through libpq's PQexec."""
    from psycopg import pq
    r = conn.pgconn.exec_(command.encode())
    if r.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
        raise RuntimeError(f"pgbouncer {command!r}: {r.error_message.decode(errors='replace').strip()}")
    names = [r.fname(j).decode() for j in range(r.nfields)]
    return names, [tuple(None if r.get_value(i, j) is None else r.get_value(i, j).decode()
                         for j in range(r.nfields)) for i in range(r.ntuples)]


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def version():
    exe = binary()
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0].strip() if out else None
