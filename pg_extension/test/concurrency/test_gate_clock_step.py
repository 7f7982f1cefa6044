"""The gate's waits are timed on the monotonic clock (issue 26, defect 6).

Waits used to compare GetCurrentTimestamp() values: after the wall clock
stepped back (an NTP step, a VM restored), mccdb.max_wait and the
deadlock escape stopped working for the length of the step.  Here a
server of its own runs under libfaketime (Debian's libfaketime): its wall
clock steps back an hour while a query waits in a held gate with max_wait
2 s; the query must still be admitted after about 2 s.  The monotonic
clock is left alone (DONT_FAKE_MONOTONIC), as a real step leaves it.

The step also stops the server's own timeouts (statement_timeout compares
the wall clock too): the test bounds the wait itself and cancels.
"""
import os
import pathlib
import pwd
import shutil
import subprocess
import tempfile
import threading
import time

import psycopg
import pytest
from conftest import connect

LIBFAKETIME = pathlib.Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
MAX_WAIT_S = 2.0


def as_owner(owner, cmd, **kw):
    if os.geteuid() == 0 and owner != "root":
        cmd = ["runuser", "-u", owner, "--", *cmd]
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


@pytest.fixture
def stepped_server():
    """(connect, step): a server of its own under libfaketime, and a
    function that sets its wall clock's offset ("-3600": an hour back)."""
    if not LIBFAKETIME.exists():
        pytest.fail(f"{LIBFAKETIME} is missing: run scripts/install-deps.sh (libfaketime)")
    with connect() as c:
        bindir = pathlib.Path(c.execute("select setting from pg_config where name = 'BINDIR'").fetchone()[0])
    # the server's user: the project cluster's
    owner = pwd.getpwuid(pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"]).stat().st_uid).pw_name
    root = pathlib.Path(tempfile.mkdtemp(prefix="mccdb-clock-"))
    data, sock, clock = root / "data", root / "sock", root / "faketime"
    sock.mkdir()
    clock.write_text("+0\n")
    for p in (root, sock, clock):
        shutil.chown(p, owner) if os.geteuid() == 0 else None
    root.chmod(0o755)
    clock.chmod(0o644)
    as_owner(owner, [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                     "--encoding=UTF8", "--locale=C.UTF-8"])
    with open(data / "postgresql.conf", "a") as f:
        f.write("listen_addresses = ''\n"
                f"unix_socket_directories = '{sock}'\n"
                "max_connections = 20\n"
                "shared_buffers = 32MB\n"
                "shared_preload_libraries = 'mccdb'\n"
                "mccdb.schedule = 'mls'\n"
                "mccdb.corun_slots = 1\n"
                "mccdb.min_cost = 0\n"
                f"mccdb.max_wait = '{int(MAX_WAIT_S * 1000)}ms'\n")
    env = dict(os.environ, LD_PRELOAD=str(LIBFAKETIME), FAKETIME_TIMESTAMP_FILE=str(clock),
               FAKETIME_CACHE_DURATION="1", DONT_FAKE_MONOTONIC="1")
    pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log")]
    try:
        as_owner(owner, [*pg_ctl, "-w", "-t", "60", "start"], env=env)

        def connect_own(**kw):
            return psycopg.connect(host=str(sock), dbname="postgres", user="postgres",
                                   autocommit=True, **kw)

        with connect_own() as c:
            c.execute("create extension mccdb")

        def step(offset):
            clock.write_text(offset + "\n")

        yield connect_own, step
    finally:
        subprocess.run([*(["runuser", "-u", owner, "--"] if os.geteuid() == 0 and owner != "root" else []),
                        *pg_ctl, "-m", "immediate", "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(root, ignore_errors=True)


def test_max_wait_admits_after_the_wall_clock_steps_back(stepped_server):
    connect_own, step = stepped_server
    with connect_own() as ctl, connect_own() as waiter:
        ctl.execute("set mccdb.min_cost = 1e30")
        ctl.execute("create table t as select generate_series(1, 1000) v")
        ctl.execute("analyze t")
        ctl.execute("select mccdb_hold_admission(true)")
        done = threading.Event()
        errors = []

        def run():
            try:
                waiter.execute("select count(*) from t a join t b using (v)")
            except Exception as e:  # reported by the test
                errors.append(e)
            done.set()

        t = threading.Thread(target=run)
        t.start()
        deadline = time.time() + 5
        while ctl.execute("select count(*) from mccdb_queue where state = 'waiting'").fetchone()[0] != 1:
            assert time.time() < deadline, "the query did not wait in the held gate"
            time.sleep(0.05)
        start = time.monotonic()
        step("-3600")
        # the step reaches every backend within FAKETIME_CACHE_DURATION
        admitted = done.wait(MAX_WAIT_S + 5)
        took = time.monotonic() - start
        if not admitted:
            ctl.execute("select pg_cancel_backend(%s)", (waiter.info.backend_pid,))
        t.join(10)
        now = ctl.execute("select extract(epoch from clock_timestamp())").fetchone()[0]
        assert float(now) < time.time() - 3000, "the server's wall clock did step back"
        assert admitted, f"still waiting {took:.1f} s after the clock stepped back (max_wait {MAX_WAIT_S} s)"
        assert not errors, errors
        assert ctl.execute("select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0] == 1
