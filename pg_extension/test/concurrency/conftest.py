"""Shared helpers of the concurrency tests: sessions, server-wide settings.

The scheduler settings are server-wide (PGC_SIGHUP): tests set them with
ALTER SYSTEM, and the ctl fixture resets them afterwards.
"""
import contextlib
import os
import pathlib
import subprocess
import time

import psycopg
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

DB = "ssb"
# every setting a test may change with configure(); the fixture resets them
GATE_SETTINGS = ("schedule", "corun_slots", "max_wait", "min_cost", "client_stall")


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


