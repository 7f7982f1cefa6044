"""Shared helpers of the concurrency tests: sessions, server-wide settings.

The scheduler settings are server-wide (PGC_SIGHUP): tests set them with
ALTER SYSTEM, and the ctl fixture resets them afterwards.
"""
import contextlib
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import psycopg
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

DB = "ssb"
# every setting a test may change with configure(); the fixture resets them
GATE_SETTINGS = ("schedule", "corun_slots", "max_wait", "min_cost", "client_stall", "short_query",
                 "memory_budget")


def cluster(cmd):
    """pg-cluster.sh CMD (restart, stop) on the cluster the tests run
    against (its env); the cluster's directory."""
    subprocess.run([str(ROOT / "scripts" / "pg-cluster.sh"), cmd, os.environ["MCCDB_CLUSTER"]],
                   check=True, stdout=subprocess.DEVNULL)
    return pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"])


@contextlib.contextmanager
def server_log():
    """What the server logs during the block: .text, set when it ends."""
    log = pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"]) / "server.log"
    tail = type("LogTail", (), {"text": ""})()
    size = log.stat().st_size
    yield tail
    with open(log, "rb") as f:
        f.seek(size)
        tail.text = f.read().decode(errors="replace")


def recreate_roles(c, roles):
    """Plain login roles, made anew (what an earlier run left is dropped)."""
    for r in roles:
        if c.execute("select 1 from pg_roles where rolname = %s", (r,)).fetchone():
            c.execute(f"drop owned by {r}")
            c.execute(f"drop role {r}")
        c.execute(f"create role {r} login")


def drop_roles(c, roles):
    """The roles, what they own and what they were granted."""
    for r in roles:
        c.execute(f"drop owned by {r}")
        c.execute(f"drop role {r}")


def connect(**kw):
    return psycopg.connect(dbname=DB, autocommit=True, **kw)


def tagged(sql, tag):
    """sql with a trailing /* tag */ that mccdb's recorded query text keeps:
    PostgreSQL 18 starts a statement's text after its leading comments."""
    return sql.rstrip().rstrip(";") + f"\n/* {tag} */"


def query(conn, name, suite="plq"):
    sql = conn.execute("select sql from mccdb_test_queries where suite = %s and name = %s",
                       (suite, name)).fetchone()[0]
    return sql.strip().rstrip(";")


def configure(ctl, **settings):
    for k, v in settings.items():
        ctl.execute(f"alter system set mccdb.{k} = '{v}'")
    ctl.execute("select pg_reload_conf()")
    # sessions opened from now on see the new values; wait for the server
    for _ in range(100):
        with connect() as c:
            if all(str(c.execute(f"show mccdb.{k}").fetchone()[0]).startswith(str(v))
                   for k, v in settings.items() if k != "max_wait"):
                return
        time.sleep(0.05)
    raise AssertionError(f"settings not visible after reload: {settings}")


def wait_until(ctl, sql, want, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = ctl.execute(sql).fetchone()[0]
        if got == want:
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {sql!r} = {want!r} (last {got!r})")


@pytest.fixture
def ctl():
    with connect() as c:
        # the controlling session itself is never gated, whatever a test sets
        c.execute("set mccdb.min_cost = 1e30")
        c.execute("select mccdb_hold_admission(false)")
        yield c
        c.execute("select mccdb_hold_admission(false)")
        for k in GATE_SETTINGS:
            c.execute(f"alter system reset mccdb.{k}")
        c.execute("alter system reset deadlock_timeout")
        c.execute("select pg_reload_conf()")


# ---- made-up machines for mccdb.cpu_topology_root (restart-only)

def make_machine(root, online, llc, level=3, size="32768K", private_l2=True):
    """A sysfs-like tree: online is the CPU list file's text; llc maps each
    CPU to the CPUs its last-level cache lists (as Linux prints them)."""
    (root / "online").write_text(online + "\n")
    for cpu, shared in llc.items():
        caches = [(1, "Data", "48K", str(cpu)), (1, "Instruction", "32K", str(cpu))]
        if private_l2 and level > 2:
            caches.append((2, "Unified", "1024K", str(cpu)))
        caches.append((level, "Unified", size, shared))
        for idx, (lvl, typ, sz, lst) in enumerate(caches):
            d = root / f"cpu{cpu}" / "cache" / f"index{idx}"
            d.mkdir(parents=True)
            for name, value in (("level", lvl), ("type", typ), ("size", sz), ("shared_cpu_list", lst)):
                (d / name).write_text(f"{value}\n")


def domains_of(groups):
    """{cpu: 'list of its group'} for CPU groups given as ranges."""
    return {c: (f"{min(g)}-{max(g)}" if len(g) > 1 else str(g[0])) for g in groups for c in g}


@pytest.fixture
def machine():
    """A directory the server's user can read, and a restart with the
    server's topology root pointed at it; reset and restarted afterwards."""
    root = pathlib.Path(tempfile.mkdtemp(prefix="mccdb-topology-"))

    def start(path=root):
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        with connect() as c:
            c.execute(f"alter system set mccdb.cpu_topology_root = '{path}'")
        with server_log() as log:
            cluster("restart")
        with connect() as c:
            rows = c.execute("select domain, cpus, ncpus, cache_level, cache_bytes, source "
                             "from mccdb_llc_domains order by domain").fetchall()
        return rows, log.text

    yield root, start
    with connect() as c:
        c.execute("alter system reset mccdb.cpu_topology_root")
    cluster("restart")
    shutil.rmtree(root)
