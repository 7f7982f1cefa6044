"""The gate's defects of issue 26 (3, 4 and 7), each reproduced as the issue describes.

- 3: a statement that calls one of the extension's functions beside a join
  is not the extension's own: it waits in a held gate like any other.
- 4: the lock check of a gate waiter (after deadlock_timeout) neither leaks
  nor grows with the backends that wait on unrelated locks.
- 7 (a query that lent its slots for a stalled client takes them back as
  soon as its client reads again) became issue 48's row 8: it takes them
  back by waiting like any other (test_gate_attacks.py).
Against the real `test` cluster; statement_timeout bounds every session.
"""
import os
import pathlib
import re
import time

import pytest
from conftest import configure, connect, wait_until
from test_gate_never_hangs import JOIN, in_thread, session, tables  # noqa: F401 (a fixture)


def one_slot(ctl, **more):
    configure(ctl, schedule="mls", corun_slots=1, max_wait="10min", min_cost=0, **more)


# ---- 3: calling an extension function does not exempt a join from the gate

@pytest.mark.parametrize("sql", [
    "select count(*), mccdb_partition() is not null from gate_big b join gate_small s on s.id = b.id % 100 + 1",
    "select count(*) from gate_big b join gate_small s on s.id = b.id % 100 + 1 where mccdb_partition()::text <> s.v::text",
    "select count(*) from gate_big b join gate_small s on s.id = b.id % 100 + 1 "
    "cross join (select count(*) from mccdb_queue) q",
], ids=["target list", "where", "beside the queue view"])
def test_a_join_that_calls_an_extension_function_waits_in_a_held_gate(ctl, tables, sql):
    one_slot(ctl)
    ctl.execute("select mccdb_hold_admission(true)")
    c = session()
    try:
        t, result, errors = in_thread(lambda: c.execute(sql).fetchone()[0])
        # it waits in the gate (before the fix it ran straight through)
        wait_until(ctl, f"select count(*) from mccdb_queue where pid = {c.info.backend_pid} "
                        "and state = 'waiting'", 1, timeout=5)
        t.join(1.0)
        assert t.is_alive() and not result, "the join ran past the held gate"
        # the extension's own views and functions alone still run
        with session(statement_timeout="5s") as own:
            assert own.execute("select count(*) from mccdb_queue").fetchone()[0] == 1
            own.execute("select mccdb_partition()")
            own.execute("select * from mccdb_partition()")
            assert own.execute("select held from mccdb_scheduler()").fetchone()[0]
        ctl.execute("select mccdb_hold_admission(false)")
        t.join(15)
        assert not errors, errors
        assert result and result[0] >= 1
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        c.close()


# ---- 4: the lock check neither leaks nor costs per lock waiter

GRAND_TOTAL = re.compile(r"\[(\d+)\].*Grand total: (\d+) bytes in \d+ blocks; (\d+) free "
                         r"\(\d+ chunks\); (\d+) used")


def memory_used(ctl, pid, log, offset):
    """Ask backend pid to log its memory contexts; the bytes it uses (the
    server log's "Grand total" line) and the log's new offset."""
    assert ctl.execute("select pg_log_backend_memory_contexts(%s)", (pid,)).fetchone()[0]
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        for m in GRAND_TOTAL.finditer(text):
            if int(m.group(1)) == pid:
                return int(m.group(4)), offset + len(text[:m.end()].encode())
        time.sleep(0.05)
    raise AssertionError(f"backend {pid} logged no memory contexts")


def test_a_gate_waiters_lock_check_does_not_leak_with_many_lock_waiters(ctl, tables):
    ctl.execute("alter system set deadlock_timeout = '100ms'")
    one_slot(ctl)
    log = pathlib.Path(os.environ["MCCDB_CLUSTER_DIR"]) / "server.log"
    ctl.execute("create table if not exists gt_lockme (id int)")
    holder = session()
    lockers = [session() for _ in range(10)]
    waiter = session()
    threads = []
    try:
        holder.execute("begin")
        holder.execute("lock table gt_lockme in access exclusive mode")
        # sessions blocked on a lock that has nothing to do with the gate
        for lk in lockers:
            lk.execute("begin")
            threads.append(in_thread(lambda lk=lk: lk.execute("lock table gt_lockme in access share mode"))[0])
        pids = ",".join(str(lk.info.backend_pid) for lk in lockers)
        wait_until(ctl, f"select count(*) from pg_stat_activity where pid in ({pids}) "
                        "and wait_event_type = 'Lock'", len(lockers), timeout=10)
        # and one gate waiter, past deadlock_timeout: it checks the locks
        ctl.execute("select mccdb_hold_admission(true)")
        t, result, errors = in_thread(lambda: waiter.execute(JOIN).fetchone()[0])
        pid = waiter.info.backend_pid
        wait_until(ctl, f"select count(*) from mccdb_queue where pid = {pid} and state = 'waiting'",
                   1, timeout=5)
        time.sleep(0.5)
        before, offset = memory_used(ctl, pid, log, log.stat().st_size)
        time.sleep(3.0)     # six wake-ups at least, thirty deadlock_timeouts
        after, _ = memory_used(ctl, pid, log, offset)
        assert after - before < 16 * 1024, \
            f"the gate waiter's memory grew {after - before} bytes in 3 s"
        ctl.execute("select mccdb_hold_admission(false)")
        t.join(15)
        assert not errors, errors
        assert result == [20000]
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        holder.execute("rollback")
        for th in threads:
            th.join(10)
        for lk in lockers:
            lk.execute("rollback")
        for c in (holder, waiter, *lockers):
            c.close()
        ctl.execute("drop table gt_lockme")
