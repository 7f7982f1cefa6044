"""Sessions, timed runs, co-runs and held batches against a PostgreSQL server.

Every session is its own connection (one per co-runner), autocommit, with
parallel workers off and JIT off unless the caller passes other settings,
and every statement recorded in mccdb's recent-queries ring.
The server comes from the libpq environment (eval "$(scripts/pg-cluster.sh env NAME)").
"""
import threading
import time

import psycopg

# The experiments read their own queries back from mccdb_recent_queries
# (locality, sizes, admission), whatever they cost: the ring's threshold is
# a server's default for its DBA, not the experiments'.  (On a server without
# mccdb the SET only makes a placeholder.)
BASE_SETTINGS = ["set max_parallel_workers_per_gather = 0", "set jit = off",
                 "set mccdb.track_min_cost = 0"]


class Query:
    """A query text with the session settings it needs (e.g. a forced plan)."""

    def __init__(self, name, sql, settings=(), search_path=None):
        self.name, self.sql, self.settings = name, sql, list(settings)
        if search_path:
            self.settings.append(f"set search_path = {search_path}")

    def __repr__(self):
        return f"Query({self.name})"


def connect(dbname=None, settings=(), base=True):
    kw = {"autocommit": True}
    if dbname:
        kw["dbname"] = dbname
    conn = psycopg.connect(**kw)
    for s in (BASE_SETTINGS if base else []) + list(settings):
        conn.execute(s)
    return conn


def session(q, dbname=None, extra=()):
    return connect(dbname, list(extra) + q.settings)


def timed(conn, sql):
    """Seconds to run sql and fetch all rows."""
    t0 = time.perf_counter()
    cur = conn.execute(sql)
    if cur.description is not None:
        cur.fetchall()
    return time.perf_counter() - t0


def backend_cpu(pid):
    """CPU seconds the backend process has run (/proc/PID/schedstat, ns), or None
    when the server is not on this host or not readable. On a shared machine
    this is the time-sharing-free cost of a query: cache misses stall the CPU
    and count, waiting for a CPU does not."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def timed_cpu(conn, sql):
    """(wall seconds, backend CPU seconds or None) to run sql and fetch all rows."""
    pid = conn.info.backend_pid
    c0 = backend_cpu(pid)
    wall = timed(conn, sql)
    c1 = backend_cpu(pid)
    return wall, (c1 - c0 if c0 is not None and c1 is not None else None)


def server_info(dbname=None):
    with connect(dbname) as c:
        ver = c.execute("show server_version").fetchone()[0]
        info = {"version": ver}
        try:
            g = c.execute("select size_bytes, llc_bytes, source from mccdb_cache_geometry()").fetchone()
            info.update(llc_sysfs=g[0], llc_used=g[1], llc_source=g[2])
        except psycopg.Error:
            pass
        try:
            info["counters"] = c.execute("select mccdb_counters_status()").fetchone()[0]
        except psycopg.Error:
            c.rollback() if not c.autocommit else None
        for k in ("shared_buffers", "work_mem", "mccdb.llc_size"):
            try:
                info[k] = c.execute(f"show {k}").fetchone()[0]
            except psycopg.Error:
                pass
        return info


class Looper:
    """A co-runner: runs its query again and again on its own connection until stopped."""

    def __init__(self, q, dbname=None, extra=()):
        self.q = q
        self.conn = session(q, dbname, extra)
        self.count = 0
        self.error = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            while not self._stop.is_set():
                self._started.set()
                self.conn.execute(self.q.sql).fetchall()
                self.count += 1
        except psycopg.errors.QueryCanceled:
            pass
        except Exception as e:  # reported by stop()
            if not self._stop.is_set():
                self.error = e
        finally:
            self._started.set()

    def start(self):
        self.thread.start()
        self._started.wait()
        time.sleep(0.05)
        return self

    def stop(self):
        self._stop.set()
        while self.thread.is_alive():  # a cancel may land between two queries: repeat it
            self.conn.cancel_safe()
            self.thread.join(0.2)
        self.conn.close()
        if self.error:
            raise self.error


def paired_rounds(conn, sql, start, stop, rounds, on_round=None):
    """rounds pairs of sql on conn: alone, then between start() and stop() of
    a co-runner.  A dict of paired lists 'alone', 'co' (wall s) and
    'alone_cpu', 'co_cpu' (the backend's CPU s, or both empty when not every
    run's CPU time was readable here).  on_round(r, w, w2, cpu, cpu2) after
    each pair."""
    out = {"alone": [], "co": [], "alone_cpu": [], "co_cpu": []}
    for r in range(rounds):
        w, cpu = timed_cpu(conn, sql)
        start()
        try:
            w2, cpu2 = timed_cpu(conn, sql)
        finally:
            stop()
        out["alone"].append(w)
        out["co"].append(w2)
        if cpu is not None and cpu2 is not None:
            out["alone_cpu"].append(cpu)
            out["co_cpu"].append(cpu2)
        if on_round:
            on_round(r, w, w2, cpu, cpu2)
    if len(out["alone_cpu"]) != len(out["alone"]):
        out["alone_cpu"], out["co_cpu"] = [], []
    return out


def alone_vs_corun_cpu(target, corunners, rounds, dbname=None, progress=None):
    """Per round: target alone, then target beside the co-runners (each looping
    on its own connection), with the target backend's CPU time: paired_rounds'
    dict."""
    loops = []

    def start():
        loops[:] = [Looper(q, dbname).start() for q in corunners]

    def stop():
        for lp in loops:
            lp.stop()

    def on_round(r, w, w2, cpu, cpu2):
        if progress:
            extra = f"; cpu {cpu:.3f} / {cpu2:.3f} s ({cpu2 / cpu:.2f}x)" if cpu and cpu2 else ""
            progress(f"  round {r + 1}/{rounds}: alone {w:.3f} s, co-run {w2:.3f} s ({w2 / w:.2f}x){extra}")

    with session(target, dbname) as c:
        timed(c, target.sql)  # warm
        return paired_rounds(c, target.sql, start, stop, rounds, on_round)


def alone_vs_corun(target, corunners, rounds, dbname=None, progress=None):
    """Per round: target alone, then target beside the co-runners (each looping
    on its own connection). Returns (alone_times, corun_times), paired by round."""
    m = alone_vs_corun_cpu(target, corunners, rounds, dbname, progress)
    return m["alone"], m["co"]


# --- the scheduler -------------------------------------------------------

def set_schedule(policy, dbname=None, timeout=10.0):
    """ALTER SYSTEM SET mccdb.schedule and reload; wait until the scheduler reports it."""
    with connect(dbname) as c:
        if not c.execute("select 1 from pg_extension where extname = 'mccdb'").fetchone():
            raise RuntimeError(
                f"the extension mccdb is not created in database {c.info.dbname!r}: "
                "run CREATE EXTENSION mccdb there (benchmarks/run_all.sh does)")
        c.execute(f"alter system set mccdb.schedule = '{policy}'")
        c.execute("select pg_reload_conf()")
    deadline = time.time() + timeout
    while True:
        with connect(dbname) as c:
            got = c.execute("select policy from mccdb_scheduler()").fetchone()[0]
            if got == policy:
                return
        if time.time() > deadline:
            raise RuntimeError(f"mccdb.schedule is {got!r}, wanted {policy!r}")
        time.sleep(0.1)


def cluster_name(environ):
    """The project cluster the libpq environment points at, or None: the
    name pg-cluster.sh env gave, else its socket directory's (which has the
    major's suffix: bench-pg18 is the cluster bench of PostgreSQL 18)."""
    import pathlib

    host = environ.get("PGHOST", "")
    if not host.startswith("/"):
        return None
    return environ.get("MCCDB_CLUSTER") or pathlib.Path(host).name or None


def cluster_command(cmd, *args, dbname=None, timeout=60.0):
    """scripts/pg-cluster.sh CMD NAME ARGS on the project cluster the libpq
    environment points at (a restart, a preload change), then wait until it
    takes connections again."""
    import os
    import subprocess

    from ..paths import CLUSTER_SCRIPT
    name = cluster_name(os.environ)
    if name is None:
        raise RuntimeError("this needs a project cluster (eval \"$(scripts/pg-cluster.sh env NAME)\")")
    subprocess.run([str(CLUSTER_SCRIPT), cmd, name, *args], check=True, stdout=subprocess.DEVNULL)
    wait_until_up(dbname, timeout)


def ensure_database(dbname):
    """Create database dbname on the server unless it is there; True when it was made."""
    with connect("postgres", base=False) as c:
        if c.execute("select 1 from pg_database where datname = %s", (dbname,)).fetchone():
            return False
        c.execute(f'create database "{dbname}"')
        return True


def wait_until_up(dbname=None, timeout=60.0):
    """Wait until the server takes connections (after a restart, or the
    recovery after a backend's crash)."""
    deadline = time.time() + timeout
    while True:
        try:
            with connect(dbname) as c:
                c.execute("select 1")
                return
        except psycopg.OperationalError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def set_preload(on, dbname=None, timeout=60.0):
    """Restart the project cluster with mccdb preloaded (on) or not (a stock
    server on the same data), keeping its other settings."""
    cluster_command("preload", "on" if on else "off", dbname=dbname, timeout=timeout)


def restart_with(settings, dbname=None, timeout=60.0):
    """ALTER SYSTEM SET each of settings ({name: value}; None resets it) and
    restart the project cluster: for settings a reload does not change."""
    with connect(dbname, base=False) as c:
        for k, v in settings.items():
            if v is None:
                c.execute(f"alter system reset {k}")
            else:
                c.execute(f"alter system set {k} = '{v}'")
    cluster_command("restart", dbname=dbname, timeout=timeout)


def reset_schedule(dbname=None):
    with connect(dbname) as c:
        c.execute("alter system reset mccdb.schedule")
        c.execute("select pg_reload_conf()")


def run_batch(queries, policy, dbname=None, timeout=600.0):
    """Submit queries together (each on its own connection) and wait for all.

    Under a scheduling policy the batch is queued with mccdb_hold_admission(true),
    one query after another (each planned once the previous one waits), and
    released at once; under 'off' (no gate) the threads start at a barrier.
    Returns (total seconds from release to the last finish, [per-query dict with
    'response' (release to finish, s), 'exec' (admitted to released from
    mccdb_recent_queries, s, or the response time when there is no gate), 'cpu'
    (backend CPU seconds, None when not readable), 'pid']).
    """
    conns = [session(q, dbname) for q in queries]
    pids = [c.info.backend_pid for c in conns]
    ends = [None] * len(queries)
    cpus = [None] * len(queries)
    errors = []
    barrier = threading.Barrier(len(queries) + 1)
    held = policy not in ("off", "stock")
    mccdb = policy != "stock"     # stock: a server without mccdb preloaded
    ctl = connect(dbname)
    try:
        if held:
            ctl.execute("select mccdb_hold_admission(true)")
        seq0 = ctl.execute("select coalesce(max(seq), 0) from mccdb_recent_queries").fetchone()[0] if mccdb else 0

        def work(i):
            try:
                if not held:
                    barrier.wait()
                c0 = backend_cpu(pids[i])
                conns[i].execute(queries[i].sql).fetchall()
                ends[i] = time.perf_counter()
                c1 = backend_cpu(pids[i])
                cpus[i] = c1 - c0 if c0 is not None and c1 is not None else None
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(queries))]
        if held:
            # one after another, each planned after the previous one is queued (so MLS
            # plan selection sees the queue the batch builds), then released together
            base = ctl.execute("select count(*) from mccdb_queue where state = 'waiting'").fetchone()[0]
            for i, t in enumerate(threads):
                t.start()
                deadline = time.time() + 30
                while ctl.execute("select count(*) from mccdb_queue where state = 'waiting'").fetchone()[0] < base + i + 1:
                    if errors:
                        raise errors[0]
                    if time.time() > deadline:
                        raise RuntimeError("batch did not queue (is the query below mccdb.min_cost?)")
                    time.sleep(0.005)
            t0 = time.perf_counter()
            ctl.execute("select mccdb_hold_admission(false)")
        else:
            for t in threads:
                t.start()
            t0 = time.perf_counter()
            barrier.wait()
        for t in threads:
            t.join(timeout)
        if errors:
            raise errors[0]
        rows = ctl.execute(
            "select pid, extract(epoch from released - admitted) from mccdb_recent_queries "
            "where seq > %s and pid = any(%s)", (seq0, pids)).fetchall() if mccdb else []
        exec_by_pid = {pid: float(s) for pid, s in rows if s is not None}
    finally:
        if held:
            try:
                ctl.execute("select mccdb_hold_admission(false)")
            except psycopg.Error:
                pass
        ctl.close()
        for c in conns:
            c.close()
    per = []
    for q, pid, end, cpu in zip(queries, pids, ends, cpus):
        resp = end - t0
        per.append({"name": q.name, "pid": pid, "response": resp,
                    "exec": exec_by_pid.get(pid, resp), "cpu": cpu})
    return max(ends) - t0, per


def partition_status(dbname=None):
    with connect(dbname) as c:
        return c.execute("select backend, status, buffer_pool_colors, nr_colors from mccdb_partition()").fetchone()


def counters_status(dbname=None):
    with connect(dbname) as c:
        return c.execute("select mccdb_counters_status()").fetchone()[0]
