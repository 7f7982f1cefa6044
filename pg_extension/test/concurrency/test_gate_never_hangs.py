"""The admission gate never hangs a workload, and never leaks.

Each test reproduces one way the gate used to stop work (docs/design.md,
"The gate never hangs a workload") against the real `test` cluster with
many sessions; each fails on a gate without the fix.  One slot makes every
gated query wait for the one running; mccdb.min_cost = 0 gates every
SELECT; statement_timeout turns a hang into a failure, never a hung test.
"""
import os
import signal
import threading
import time

import psycopg
import pytest
from conftest import configure, connect, wait_until

DEADLOCK_TIMEOUT_S = 0.5
HANG = "20s"  # statement_timeout of every session that could hang


@pytest.fixture(scope="module")
def tables():
    with connect() as c:
        c.execute("drop table if exists gate_big, gate_small")
        c.execute("create table gate_big (id int primary key, pad text)")
        c.execute("insert into gate_big select g, repeat('x', 20) from generate_series(1, 20000) g")
        c.execute("create table gate_small (id int primary key, v int)")
        c.execute("insert into gate_small select g, g from generate_series(1, 100) g")
        c.execute("analyze gate_big, gate_small")
        # plpgsql: never inlined, so only running it touches gate_small
        c.execute("create or replace function gate_small_count() returns bigint "
                  "language plpgsql volatile as 'begin return (select count(*) from gate_small); end'")
    yield
    with connect() as c:
        c.execute("drop table if exists gate_big, gate_small")
        c.execute("drop function if exists gate_small_count()")


def session(**settings):
    c = connect()
    c.execute(f"set statement_timeout = '{HANG}'")
    for k, v in settings.items():
        c.execute(f"set {k} = '{v}'")
    return c


def one_slot(ctl, **more):
    ctl.execute(f"alter system set deadlock_timeout = '{int(DEADLOCK_TIMEOUT_S * 1000)}ms'")
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0, **more)


def in_thread(fn):
    """Run fn in a thread; return (thread, result list, error list)."""
    result, errors = [], []

    def body():
        try:
            result.append(fn())
        except Exception as e:  # reported by the test
            errors.append(e)

    t = threading.Thread(target=body)
    t.start()
    return t, result, errors


JOIN = "select count(*) from gate_big b join gate_small s on s.id = b.id % 100 + 1"


@pytest.mark.parametrize("variant", ["row lock", "table lock in a function"])
def test_deadlock_between_a_waiter_and_an_admitted_query_ends_in_deadlock_timeout(ctl, tables, variant):
    one_slot(ctl)
    a = session()
    b = session()
    try:
        a.execute("begin")
        if variant == "row lock":
            a.execute("update gate_big set pad = pad where id = 5")
            b_sql = ("select b.id from gate_big b join gate_small s on s.id = b.id "
                     "where b.id < 10 for update of b")
        else:
            a.execute("lock gate_small in access exclusive mode")
            # the plan does not touch gate_small: B is admitted, then blocks inside
            b_sql = "select gate_small_count() from gate_big b where b.id < 3"
        tb, _, berr = in_thread(lambda: b.execute(b_sql).fetchall())
        # B was admitted (the one slot) and now waits for A's lock
        wait_until(ctl, f"select count(*) from pg_stat_activity where pid = {b.info.backend_pid} "
                        "and wait_event_type = 'Lock'", 1, timeout=10)
        assert ctl.execute("select state from mccdb_queue where pid = %s",
                           (b.info.backend_pid,)).fetchone()[0] == "running", "B was admitted"
        assert ctl.execute("select %s = any(pg_blocking_pids(%s))",
                           (a.info.backend_pid, b.info.backend_pid)).fetchone()[0], \
            "pg_blocking_pids shows B waiting for A"
        before = ctl.execute("select admitted_for_locks from mccdb_scheduler()").fetchone()[0]
        # A now needs the gate that B's slot fills: without the fix, both wait for ever
        start = time.time()
        assert a.execute(JOIN).fetchone()[0] == 20000
        took = time.time() - start
        assert took < DEADLOCK_TIMEOUT_S + 1.0, f"A waited {took:.2f} s"
        assert ctl.execute("select admitted_for_locks from mccdb_scheduler()").fetchone()[0] == before + 1
        a.execute("commit")
        tb.join(30)
        assert not berr, berr
    finally:
        a.close()
        b.close()


def portal_bytes(c, name):
    return c.execute("select total_bytes from pg_backend_memory_contexts "
                     "where name = 'PortalContext' and ident = %s", (name,)).fetchone()[0]


def test_a_hundred_thousand_gated_fetches_leave_the_portal_memory_flat(ctl, tables):
    one_slot(ctl)
    with session() as c:
        c.execute("begin")
        c.execute("declare fetch_flat cursor for select b.id, s.v from gate_big b "
                  "join gate_small s on s.id = b.id % 100 cross join generate_series(1, 10)")
        for _ in range(1000):
            c.execute("fetch 1 from fetch_flat")
        after_1k = portal_bytes(c, "fetch_flat")
        for _ in range(100000):
            c.execute("fetch 1 from fetch_flat")
        after_101k = portal_bytes(c, "fetch_flat")
        c.execute("commit")
    assert after_101k - after_1k < 64 * 1024, \
        f"portal grew {after_101k - after_1k} bytes over 100,000 fetches"
    assert ctl.execute("select count(*) from mccdb_queue").fetchone()[0] == 0


def test_a_reader_that_stops_reading_does_not_block_others_past_the_bound(ctl, tables):
    one_slot(ctl, client_stall="300ms")
    reader = session()
    try:
        # a result far larger than the socket buffers, and nobody reading it
        reader.pgconn.send_query(b"select repeat('x', 1000) from generate_series(1, 200000)")
        wait_until(ctl, f"select count(*) from pg_stat_activity where pid = {reader.info.backend_pid} "
                        "and wait_event = 'ClientWrite'", 1, timeout=20)
        start = time.time()
        with session() as other:
            assert other.execute(JOIN).fetchone()[0] == 20000
        took = time.time() - start
        # the bound: mccdb.client_stall + the waiters' half-second wake-up
        assert took < 0.3 + 0.5 + 1.0, f"the other query waited {took:.2f} s"
        assert ctl.execute("select lent from mccdb_scheduler()").fetchone()[0] >= 1
    finally:
        ctl.execute("select pg_terminate_backend(%s)", (reader.info.backend_pid,))
        reader.close()
    wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=10)


def test_an_idle_cursor_lends_its_slot_at_once(ctl, tables):
    one_slot(ctl)
    with session() as cur, session() as other:
        cur.execute("begin")
        cur.execute(f"declare idle_c cursor for {JOIN}")
        cur.execute("fetch 1 from idle_c")
        assert ctl.execute("select state from mccdb_queue where pid = %s",
                           (cur.info.backend_pid,)).fetchone()[0] == "lent"
        start = time.time()
        assert other.execute(JOIN).fetchone()[0] == 20000
        assert time.time() - start < 2.0
        cur.execute("commit")
    wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=10)


def test_views_hold_and_release_bypass_a_held_gate_with_min_cost_zero(ctl, tables):
    one_slot(ctl)
    ctl.execute("select mccdb_hold_admission(true)")
    with session(statement_timeout="5s") as c:
        assert c.execute("select count(*) from mccdb_queue").fetchone()[0] == 0
        assert c.execute("select held from mccdb_scheduler()").fetchone()[0]
        c.execute("select * from mccdb_recent_queries limit 1")
        c.execute("select mccdb_hold_admission(false)")
        assert not c.execute("select held from mccdb_scheduler()").fetchone()[0]
        # and a gated query runs now the gate is released
        assert c.execute(JOIN).fetchone()[0] == 20000


@pytest.mark.parametrize("change", [{"schedule": "off"}, {"corun_slots": 2}])
def test_a_reload_reaches_queries_already_waiting(ctl, tables, change):
    one_slot(ctl)
    with session() as occupant, session() as waiter:
        t_occ, _, occ_err = in_thread(lambda: occupant.execute("select pg_sleep(8)").fetchall())
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'running'", 1, timeout=10)
        t_w, result, w_err = in_thread(lambda: waiter.execute(JOIN).fetchone()[0])
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", 1, timeout=10)
        for k, v in change.items():
            ctl.execute(f"alter system set mccdb.{k} = '{v}'")
        start = time.time()
        ctl.execute("select pg_reload_conf()")
        t_w.join(10)
        took = time.time() - start
        assert not w_err, w_err
        assert result == [20000]
        assert took < 1.5, f"the waiter saw the reload after {took:.2f} s"
        ctl.execute("select pg_cancel_backend(%s)", (occupant.info.backend_pid,))
        t_occ.join(10)


def test_a_hold_ends_with_its_session(ctl, tables):
    one_slot(ctl)
    holder = connect()
    holder.execute("select mccdb_hold_admission(true)")
    assert ctl.execute("select held_by from mccdb_scheduler()").fetchone()[0] == holder.info.backend_pid
    holder.close()
    wait_until(ctl, "select held from mccdb_scheduler()", False, timeout=5)
    with session(statement_timeout="5s") as c:
        assert c.execute(JOIN).fetchone()[0] == 20000


def test_max_wait_admits_through_a_hold(ctl, tables):
    one_slot(ctl)
    configure(ctl, max_wait="1s")
    ctl.execute("select mccdb_hold_admission(true)")
    with session(statement_timeout="10s") as c:
        start = time.time()
        assert c.execute(JOIN).fetchone()[0] == 20000
        assert 0.9 < time.time() - start < 3.0
    assert ctl.execute("select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0] >= 1


def matrix(c):
    return c.execute("select target, corunner, slowdown from mccdb_interference_matrix() "
                     "order by 1, 2").fetchall()


def test_a_bad_matrix_load_leaves_the_old_one(ctl):
    with ctl.transaction():
        ctl.execute("delete from mccdb_interference")
        ctl.execute("insert into mccdb_interference (target, corunner, slowdown) "
                    "values ('strong', 'weak', 1.5), ('weak', 'strong', 1.1)")
    ctl.execute("select mccdb_load_interference()")
    good = matrix(ctl)
    assert ("strong", "weak", 1.5) in good and len(good) == 9
    try:
        # a row the loader refuses (the table's own CHECK would refuse it too)
        ctl.execute("alter table mccdb_interference drop constraint mccdb_interference_slowdown_check")
        ctl.execute("update mccdb_interference set slowdown = 5000 where target = 'weak'")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            ctl.execute("select mccdb_load_interference()")
        assert matrix(ctl) == good, "nothing of the failed load took effect"
    finally:
        ctl.execute("delete from mccdb_interference")
        ctl.execute("alter table mccdb_interference add constraint mccdb_interference_slowdown_check "
                    "check (slowdown > 0 and slowdown < 1000)")
        ctl.execute("select mccdb_clear_interference()")


def test_the_matrix_survives_a_crash_restart():
    # no ctl fixture: the crash ends every session
    with connect() as c:
        c.execute("select mccdb_replace_interference('{strong,weak}', '{weak,strong}', '{1.7,1.2}')")
        want = matrix(c)
    victim = connect()
    pid = victim.info.backend_pid
    try:
        os.kill(pid, signal.SIGKILL)  # the postmaster reinitialises shared memory
    except PermissionError:
        pytest.fail("cannot signal the server's processes (run as the cluster's owner or root)")
    victim.close()
    deadline = time.time() + 60
    while True:
        try:
            with connect() as c:
                c.execute("select 1")
                # a connection can slip in before the crash is noticed
                if c.execute("select count(*) from pg_stat_activity where pid = %s", (pid,)).fetchone()[0] == 0:
                    got = matrix(c)
                    break
        except psycopg.OperationalError:
            pass
        assert time.time() < deadline, "the server did not come back"
        time.sleep(0.5)
    try:
        assert got == want
    finally:
        with connect() as c:
            c.execute("select mccdb_clear_interference()")
