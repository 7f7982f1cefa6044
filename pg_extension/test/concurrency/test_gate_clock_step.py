"""The gate's waits are timed on the monotonic clock (issue 26, defect 6).

Waits used to compare GetCurrentTimestamp() values: after the wall clock
stepped back (an NTP step, a VM restored), mccdb.max_wait and the
deadlock escape stopped working for the length of the step.  Here a
server of its own runs under libfaketime (Debian's libfaketime): its wall
clock steps back an hour while a query waits in the gate, held (max_wait
2 s) or behind a query that waits for its lock (deadlock_timeout 0.5 s);
the query must still be admitted after about that long.  The monotonic
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
from conftest import connect, wait_until

# Debian's libfaketime, in the machine's multiarch directory
LIBFAKETIME = next(iter(sorted(pathlib.Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))), None)
MAX_WAIT_S = 2.0
DEADLOCK_TIMEOUT_S = 0.5


def as_owner(owner, cmd, check=True, **kw):
    if os.geteuid() == 0 and owner != "root":
        cmd = ["runuser", "-u", owner, "--", *cmd]
    return subprocess.run(cmd, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


@pytest.fixture(scope="module")
def stepped_server():
    """(connect, step): a server of its own under libfaketime, and a
    function that sets its wall clock's offset ("-3600": an hour back)."""
    if LIBFAKETIME is None:
        pytest.fail("libfaketime.so.1 is missing: run scripts/install-deps.sh (Debian's libfaketime)")
    with connect() as c:
        bindir = pathlib.Path(c.execute("select setting from pg_config where name = 'BINDIR'").fetchone()[0])
    # the server's user: the project cluster's
    owner = pwd.getpwuid(pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"]).stat().st_uid).pw_name
    root = pathlib.Path(tempfile.mkdtemp(prefix="mccdb-clock-"))
    data, sock, clock = root / "data", root / "sock", root / "faketime"
    sock.mkdir()
    clock.write_text("+0\n")
    if os.geteuid() == 0:
        for p in (root, sock, clock):
            shutil.chown(p, owner)
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
                f"mccdb.max_wait = '{int(MAX_WAIT_S * 1000)}ms'\n"
                f"deadlock_timeout = '{int(DEADLOCK_TIMEOUT_S * 1000)}ms'\n")
    env = dict(os.environ, LD_PRELOAD=str(LIBFAKETIME), FAKETIME_TIMESTAMP_FILE=str(clock),
               FAKETIME_NO_CACHE="1", DONT_FAKE_MONOTONIC="1")
    pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log")]
    try:
        as_owner(owner, [*pg_ctl, "-w", "-t", "60", "start"], env=env)

        def connect_own(**kw):
            return psycopg.connect(host=str(sock), dbname="postgres", user="postgres",
                                   autocommit=True, **kw)

        with connect_own() as c:
            c.execute("create extension mccdb")

        def step(offset):
            # renamed into place: a backend never reads a half-written file
            tmp = clock.with_suffix(".new")
            tmp.write_text(offset + "\n")
            tmp.chmod(0o644)
            tmp.replace(clock)

        yield connect_own, step
    finally:
        as_owner(owner, [*pg_ctl, "-m", "immediate", "-w", "stop"], check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def own(stepped_server):
    """A controlling session on the server, its wall clock right again."""
    connect_own, step = stepped_server
    step("+0")
    with connect_own() as ctl:
        ctl.execute("set mccdb.min_cost = 1e30")
        ctl.execute("create table if not exists t as select generate_series(1, 1000) v")
        ctl.execute("analyze t")
        yield connect_own, step, ctl
        ctl.execute("select mccdb_hold_admission(false)")


JOIN = "select count(*) from t a join t b using (v)"


def wait_through_a_step(ctl, step, session, bound):
    """Run JOIN in session, wait until it waits in the gate, step the wall
    clock back an hour; whether it was admitted within bound seconds of
    the step, and how long it took (cancelled if not admitted)."""
    done = threading.Event()
    errors = []

    def run():
        try:
            session.execute(JOIN)
        except Exception as e:  # reported by the test
            errors.append(e)
        done.set()

    t = threading.Thread(target=run)
    t.start()
    wait_until(ctl, f"select count(*) from mccdb_queue where pid = {session.info.backend_pid} "
                    "and state = 'waiting'", 1, timeout=5)
    start = time.monotonic()
    step("-3600")
    # every backend reads the clock file at each reading of the clock
    # (FAKETIME_NO_CACHE): the step reaches them at once
    admitted = done.wait(bound)
    took = time.monotonic() - start
    if not admitted:
        ctl.execute("select pg_cancel_backend(%s)", (session.info.backend_pid,))
    t.join(10)
    now = ctl.execute("select extract(epoch from clock_timestamp())").fetchone()[0]
    assert float(now) < time.time() - 3000, "the server's wall clock did step back"
    return admitted, took, errors


def test_max_wait_admits_after_the_wall_clock_steps_back(own):
    connect_own, step, ctl = own
    ctl.execute("select mccdb_hold_admission(true)")
    before = ctl.execute("select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0]
    with connect_own() as waiter:
        admitted, took, errors = wait_through_a_step(ctl, step, waiter, MAX_WAIT_S + 5)
    assert admitted, f"still waiting {took:.1f} s after the clock stepped back (max_wait {MAX_WAIT_S} s)"
    assert not errors, errors
    assert ctl.execute("select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0] == before + 1


def test_the_deadlock_escape_works_after_the_wall_clock_steps_back(own):
    connect_own, step, ctl = own
    ctl.execute("alter system set mccdb.max_wait = '10min'")
    ctl.execute("select pg_reload_conf()")
    ctl.execute("create table if not exists locked (v int)")
    # plpgsql: never inlined, so B takes the lock only when it runs, admitted
    ctl.execute("create or replace function locked_count() returns bigint language plpgsql "
                "volatile as 'begin return (select count(*) from locked); end'")
    a, b = connect_own(), connect_own()
    try:
        # A holds a lock; B is admitted into the one slot and waits for it
        a.execute("begin")
        a.execute("lock table locked in access exclusive mode")
        tb = threading.Thread(target=lambda: b.execute("select locked_count() from t where v < 3"), daemon=True)
        tb.start()
        wait_until(ctl, f"select count(*) from pg_stat_activity where pid = {b.info.backend_pid} "
                        "and wait_event_type = 'Lock'", 1, timeout=5)
        before = ctl.execute("select admitted_for_locks from mccdb_scheduler()").fetchone()[0]
        # A now needs the slot B fills: after deadlock_timeout, A goes first
        admitted, took, errors = wait_through_a_step(ctl, step, a, DEADLOCK_TIMEOUT_S + 5)
        assert admitted, (f"still waiting {took:.1f} s after the clock stepped back "
                          f"(deadlock_timeout {DEADLOCK_TIMEOUT_S} s)")
        assert not errors, errors
        assert ctl.execute("select admitted_for_locks from mccdb_scheduler()").fetchone()[0] == before + 1
        a.execute("rollback")
        tb.join(10)
    finally:
        ctl.execute("alter system reset mccdb.max_wait")
        ctl.execute("select pg_reload_conf()")
        for c in (a, b):
            ctl.execute("select pg_cancel_backend(%s)", (c.info.backend_pid,))
            c.close()
