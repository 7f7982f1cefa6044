"""mccdb.memory_budget (issue 50): the gate admits a statement only while
the admitted statements' estimated working memory stays within the budget.

The estimate (work_memory.c) is what EXPLAIN shows as Working Memory Bytes
and mccdb_queue as working_memory_bytes: each sort, hash table and
tuplestore at its estimated size, capped by work_mem or hash_mem.  A
statement over the whole budget runs when no other admitted statement holds
working memory, and says so; a waiter past mccdb.max_wait needs room beside
the running statements only, so a cursor left open between fetches cannot
hang it.  The checks sample the gate while the statements run: a sampling
test that could not fail is shown to fail without the budget.
"""
import threading
import time

import psycopg
import pytest
from conftest import DB, configure, connect, drop_roles, recreate_roles, wait_until
from test_gate_never_hangs import tables  # noqa: F401 (a fixture)

ROLE = "mccdb_mb_app"
# A sort of 20,000 rows that takes about a second (mb_slow spins 40 us a
# row here; nested statements are never gated), and a hash join on 100 rows
# (a few kB of hash table) that takes as long.
SORT = "select count(*) from (select pad, mb_slow(id) from gate_big order by 1) s"
JOIN = ("select count(*) from gate_big b join gate_small s on s.id = b.id % 100 + 1 "
        "where mb_slow(b.id) > 0")


@pytest.fixture(scope="module")
def slow(tables):
    with connect() as c:
        c.execute("create or replace function mb_slow(x int) returns int language plpgsql "
                  "volatile as 'begin for i in 1..8000 loop end loop; return x; end'")
        recreate_roles(c, [ROLE])
        c.execute(f"grant select on gate_big, gate_small to {ROLE}")
    yield
    with connect() as c:
        drop_roles(c, [ROLE])
        c.execute("drop function if exists mb_slow(int)")


def estimate(conn, sql):
    """The statement's working memory as EXPLAIN shows it, in bytes."""
    conn.execute("set mccdb.explain = on")
    plan = conn.execute("explain (format json) " + sql).fetchone()[0][0]
    return plan["MCC-DB"]["Working Memory Bytes"]


def budget_for(nbytes):
    """A value for mccdb.memory_budget of about nbytes (it is set in kB)."""
    return f"{max(int(nbytes // 1024), 1)}kB"


class Sampler(threading.Thread):
    """Reads the running entries of the gate 50 times a second."""

    def __init__(self):
        super().__init__()
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        with connect() as c:
            c.execute("set mccdb.min_cost = 1e30")
            while not self.stop.is_set():
                rows = c.execute("select pid, working_memory_bytes from mccdb_queue "
                                 "where state = 'running'").fetchall()
                used, budget = c.execute("select memory_in_use_bytes, memory_budget_bytes "
                                         "from mccdb_scheduler()").fetchone()
                self.samples.append((dict(rows), used, budget))
                time.sleep(0.02)


def run_held(ctl, statements):
    """Each statement in a session of its own, queued behind a hold and let
    go together; the gate sampled until all are done.  Returns the samples,
    the sessions' pids and their notices."""
    sessions = [psycopg.connect(dbname=DB, autocommit=True) for _ in statements]
    notices = {}
    errors = []
    threads = []
    sampler = Sampler()
    ctl.execute("select mccdb_hold_admission(true)")
    try:
        for s, sql in zip(sessions, statements):
            s.execute("set statement_timeout = '60s'")
            notices[s.info.backend_pid] = []
            s.add_notice_handler(lambda d, pid=s.info.backend_pid:
                                 notices[pid].append(d.message_primary))

            def go(s=s, sql=sql):
                try:
                    s.execute(sql).fetchall()
                except Exception as e:  # reported below, not lost in a thread
                    errors.append(e)
            t = threading.Thread(target=go)
            t.start()
            threads.append(t)
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'",
                   len(statements), timeout=20)
        sampler.start()
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
        for t in threads:
            t.join(60)
        sampler.stop.set()
        if sampler.is_alive():
            sampler.join(10)
        pids = [s.info.backend_pid for s in sessions]
        for s in sessions:
            s.close()
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a statement did not finish"
    return sampler.samples, pids, notices


def most_running(samples):
    return max(len(running) for running, _, _ in samples)


@pytest.mark.parametrize("policy", ["mls", "sls", "predictive", "shortest"])
def test_statements_that_do_not_fit_together_run_one_at_a_time(ctl, slow, policy):
    est = estimate(ctl, SORT)
    assert est > 0
    # one fits, two do not; four slots, so only memory holds them back
    configure(ctl, schedule=policy, corun_slots=4, max_wait="10min", min_cost=0,
              memory_budget=budget_for(1.5 * est))
    budget = ctl.execute("select memory_budget_bytes from mccdb_scheduler()").fetchone()[0]
    samples, _, _ = run_held(ctl, [SORT] * 4)
    assert len(samples) >= 20, "too few samples to judge"
    assert most_running(samples) == 1, f"{policy}: two ran at once within a budget for one"
    for running, used, _ in samples:
        assert used <= budget, f"{used} bytes in use over the budget of {budget}"
        assert sum(running.values()) <= budget


def test_without_a_budget_the_same_statements_run_together(ctl, slow):
    """The check above can fail: without the budget the sampler sees them together."""
    configure(ctl, schedule="mls", corun_slots=4, max_wait="10min", min_cost=0,
              memory_budget="0")
    samples, _, _ = run_held(ctl, [SORT] * 4)
    assert most_running(samples) >= 2
    assert all(budget is None for _, _, budget in samples)


def test_a_statement_over_the_budget_runs_alone_and_says_so(ctl, slow):
    est = estimate(ctl, SORT)
    join_est = estimate(ctl, JOIN)
    assert 0 < join_est < 0.5 * est
    configure(ctl, schedule="shortest", corun_slots=4, max_wait="10min", min_cost=0,
              memory_budget=budget_for(0.5 * est))
    alone_before = ctl.execute("select admitted_alone from mccdb_scheduler()").fetchone()[0]
    samples, pids, notices = run_held(ctl, [SORT, JOIN, JOIN, JOIN])
    big = pids[0]
    assert any("mccdb.memory_budget" in n for n in notices[big]), notices[big]
    assert not any(notices[p] for p in pids[1:]), "a statement within the budget was told"
    with_big = [running for running, _, _ in samples if big in running]
    assert with_big, "the big statement was never seen running"
    for running in with_big:
        others = {pid: mem for pid, mem in running.items() if pid != big and mem > 0}
        assert not others, f"ran beside the statement over the budget: {others}"
    # the small ones are not held to one at a time: they fit together
    assert max(len([p for p in running if p != big]) for running, _, _ in samples) >= 2
    alone_after = ctl.execute("select admitted_alone from mccdb_scheduler()").fetchone()[0]
    assert alone_after == alone_before + 1


def test_an_open_cursor_holds_its_memory_but_cannot_hang_a_big_statement(ctl, slow):
    est = estimate(ctl, SORT)
    configure(ctl, schedule="mls", corun_slots=4, max_wait="1s", min_cost=0,
              memory_budget=budget_for(0.5 * est))
    starved_before = ctl.execute(
        "select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0]
    with psycopg.connect(dbname=DB) as cursor_session, \
            psycopg.connect(dbname=DB, autocommit=True) as other:
        cursor_session.execute("declare c cursor for " + SORT.replace("count(*)", "*"))
        cursor_session.execute("fetch 1 from c")
        # the cursor's entry is lent between fetches, and keeps its memory
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'lent'", 1, timeout=10)
        assert ctl.execute("select memory_in_use_bytes from mccdb_scheduler()").fetchone()[0] > 0
        other.execute("set statement_timeout = '30s'")
        t0 = time.time()
        assert other.execute(SORT).fetchone()[0] == 20000
        took = time.time() - t0
        assert took >= 1.0, f"ran beside the open cursor's memory after {took:.2f} s"
        cursor_session.execute("fetch 1 from c")
        cursor_session.rollback()
    starved_after = ctl.execute(
        "select admitted_after_max_wait from mccdb_scheduler()").fetchone()[0]
    assert starved_after == starved_before + 1


def test_the_estimate_is_capped_by_the_sessions_work_mem(ctl, slow):
    with psycopg.connect(dbname=DB, autocommit=True) as c:
        c.execute("set work_mem = '4MB'")
        full = estimate(c, SORT)
        c.execute("set work_mem = '64kB'")
        capped = estimate(c, SORT)
    assert full > 64 * 1024
    assert capped == 64 * 1024


def test_a_plain_role_cannot_change_the_budget(ctl, slow):
    configure(ctl, memory_budget="1MB")
    with psycopg.connect(dbname=DB, user=ROLE, autocommit=True) as c:
        with pytest.raises(psycopg.errors.CantChangeRuntimeParam):
            c.execute("set mccdb.memory_budget = 0")
        # nor as its own default (a server-wide setting: postgresql.conf, ALTER SYSTEM)
        with pytest.raises((psycopg.errors.CantChangeRuntimeParam,
                            psycopg.errors.InsufficientPrivilege)):
            c.execute(f"alter role {ROLE} set mccdb.memory_budget = 0")
        assert c.execute("show mccdb.memory_budget").fetchone()[0] == "1MB"
