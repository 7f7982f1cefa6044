"""Placement in last-level-cache domains (mccdb.placement), against a real server.

The made-up machine has the real CPUs of this one as separate LLC domains
(cpu0 and cpu1 each alone), so the binding really happens: while a gated
query runs, its backend's Cpus_allowed_list (/proc/PID/status) is its
domain's CPU, and afterwards, whatever ended the statement (its end, an
ERROR, a cancel), the CPUs it had.  A terminated backend leaves no slot
behind.  Results do not change.  A domain none of whose CPUs exist here
(a made-up machine of 8 domains) is still chosen and shown, and nothing
is bound.
"""
import os
import pathlib
import threading
import time

import psycopg
import pytest

from conftest import GATE_SETTINGS, configure, connect, domains_of, make_machine, wait_until

# A gated query that runs for a while: a sleep after a scan (cost > min_cost = 0).
SLEEPER = "select pg_sleep({s}) from (select count(*) from lineorder) scan"


def cpus_allowed(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


def watch_binding(pid, want, timeout=10.0):
    """The affinities pid went through until it had want (or exited)."""
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            now = cpus_allowed(pid)
        except FileNotFoundError:
            break
        if not seen or seen[-1] != now:
            seen.append(now)
        if now == want:
            break
        time.sleep(0.005)
    return seen


def online_cpus():
    return len(os.sched_getaffinity(0))


@pytest.fixture
def two_domains(machine):
    """cpu0 and cpu1 as two LLC domains, one slot each, mls."""
    if online_cpus() < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    root, start = machine
    make_machine(root, "0-1", domains_of([[0], [1]]))
    rows, _ = start()
    assert [r[1] for r in rows] == ["0", "1"], rows
    with connect() as c:
        configure(c, schedule="mls", corun_slots=1, max_wait="10min")
    yield
    with connect() as c:
        for k in GATE_SETTINGS:
            c.execute(f"alter system reset mccdb.{k}")
        c.execute("select pg_reload_conf()")


def gated_session():
    c = connect()
    c.execute("set mccdb.min_cost = 0")
    c.execute("set max_parallel_workers_per_gather = 0")
    return c


def start_query(conn, sql, result):
    def run():
        try:
            result["rows"] = conn.execute(sql).fetchall()
        except psycopg.Error as e:
            result["error"] = type(e).__name__
    t = threading.Thread(target=run)
    t.start()
    return t


def running_in(ctl, pid):
    """The domain mccdb_queue shows for pid once it runs."""
    wait_until(ctl, f"select count(*) from mccdb_queue where pid = {pid} and state = 'running'", 1)
    return ctl.execute("select domain from mccdb_queue where pid = %s", (pid,)).fetchone()[0]


def test_two_queries_run_in_different_domains_bound_to_their_cpus(two_domains):
    with connect() as ctl, gated_session() as a, gated_session() as b:
        before = cpus_allowed(a.info.backend_pid)
        ra, rb = {}, {}
        ta = start_query(a, SLEEPER.format(s=2), ra)
        da = running_in(ctl, a.info.backend_pid)
        tb = start_query(b, SLEEPER.format(s=2), rb)
        db = running_in(ctl, b.info.backend_pid)
        assert {da, db} == {0, 1}, (da, db)
        assert cpus_allowed(a.info.backend_pid) == str(da)
        assert cpus_allowed(b.info.backend_pid) == str(db)
        used = ctl.execute("select array_agg(used_slots order by domain) from mccdb_llc_domains").fetchone()[0]
        assert used == [1, 1], used
        ta.join(30)
        tb.join(30)
        assert "error" not in ra and "error" not in rb, (ra, rb)
        assert cpus_allowed(a.info.backend_pid) == before
        assert cpus_allowed(b.info.backend_pid) == before
        wait_until(ctl, "select sum(used_slots)::int from mccdb_llc_domains", 0)


def test_a_query_is_placed_beside_the_others_not_beside_itself(two_domains):
    """With nothing else running both domains are equally good and the
    first is taken, every time: the query being admitted must not count
    as running in the domain its backend's last query had (it did once,
    and with a matrix in which a class hurts itself each query fled its
    own shadow to the other domain)."""
    with connect() as ctl:
        ctl.execute("select mccdb_replace_interference('{strong,weak}', '{strong,weak}', '{3.0,3.0}')")
    try:
        with connect() as ctl, gated_session() as a:
            domains = []
            for _ in range(3):
                result = {}
                t = start_query(a, SLEEPER.format(s=0.5), result)
                domains.append(running_in(ctl, a.info.backend_pid))
                t.join(30)
                assert "error" not in result, result
            assert domains == [0, 0, 0], domains
    finally:
        with connect() as ctl:
            ctl.execute("select mccdb_clear_interference()")


@pytest.mark.parametrize("how", ["error", "cancel", "statement_timeout"])
def test_the_cpus_come_back_after_an_interrupted_run(two_domains, how):
    with connect() as ctl, gated_session() as a:
        pid = a.info.backend_pid
        before = cpus_allowed(pid)
        sql = SLEEPER.format(s=2)
        if how == "error":
            sql = "select 1 / (pg_sleep(1)::text <> '')::int from (select count(*) from lineorder) scan"
        if how == "statement_timeout":
            a.execute("set statement_timeout = '1s'")
        result = {}
        t = start_query(a, sql, result)
        domain = running_in(ctl, pid)
        assert cpus_allowed(pid) == str(domain)
        if how == "cancel":
            ctl.execute("select pg_cancel_backend(%s)", (pid,))
        t.join(30)
        assert result.get("error") in ("DivisionByZero", "QueryCanceled"), result
        assert cpus_allowed(pid) == before, how
        wait_until(ctl, "select sum(used_slots)::int from mccdb_llc_domains", 0)
        # and the session runs the next query placed and bound again
        result = {}
        t = start_query(a, SLEEPER.format(s=0.8), result)
        domain = running_in(ctl, pid)
        assert cpus_allowed(pid) == str(domain)
        t.join(30)
        assert "error" not in result, result
        assert cpus_allowed(pid) == before


def test_a_terminated_backend_leaves_its_domain_free(two_domains):
    with connect() as ctl:
        a = gated_session()
        pid = a.info.backend_pid
        result = {}
        t = start_query(a, SLEEPER.format(s=5), result)
        running_in(ctl, pid)
        ctl.execute("select pg_terminate_backend(%s)", (pid,))
        t.join(30)
        a.close()
        wait_until(ctl, "select sum(used_slots)::int from mccdb_llc_domains", 0)
        assert ctl.execute("select count(*) from mccdb_queue").fetchone()[0] == 0


def test_results_are_the_same_placed(two_domains):
    sql = "select lo_orderdate % 7, count(*), sum(lo_revenue) from lineorder group by 1 order by 1"
    with connect() as plain:
        plain.execute("set mccdb.min_cost = 1e30")
        want = plain.execute(sql).fetchall()
    with connect() as ctl, gated_session() as a:
        got = a.execute(sql).fetchall()
        admitted = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0]
    assert got == want
    assert admitted >= 1


def test_parallel_workers_run_in_their_leaders_domain(two_domains):
    with connect() as ctl:
        configure(ctl, corun_slots=3)
        with gated_session() as a:
            for s in ("set max_parallel_workers_per_gather = 2", "set parallel_setup_cost = 0",
                      "set parallel_tuple_cost = 0", "set min_parallel_table_scan_size = 0",
                      "set parallel_leader_participation = off", "set enable_indexscan = off",
                      "set enable_indexonlyscan = off", "set enable_bitmapscan = off"):
                a.execute(s)
            pid = a.info.backend_pid
            unbound = cpus_allowed(pid)
            result = {}
            # each worker sleeps a little per row: long enough to be seen
            t = start_query(a, "select count(*) from lineorder "
                               "where lo_orderkey < 500 and pg_sleep(0.002) is not null", result)
            domain = running_in(ctl, pid)
            wait_until(ctl, f"select count(*) > 0 from pg_stat_activity where leader_pid = {pid} "
                            "and backend_type = 'parallel worker'", True)
            workers = [r[0] for r in ctl.execute(
                "select pid from pg_stat_activity where leader_pid = %s and backend_type = 'parallel worker'",
                (pid,)).fetchall()]
            # A worker shows in pg_stat_activity before its ExecutorStart binds it,
            # so each is watched until it is bound: unbound first, then only its
            # leader's domain, never another set.
            seen = {w: watch_binding(w, str(domain)) for w in workers}
            t.join(60)
            assert "error" not in result, result
            seen = {w: s for w, s in seen.items() if s}
            assert seen and all(s[-1] == str(domain) for s in seen.values()), (domain, seen)
            assert all(set(s) <= {str(domain), unbound} for s in seen.values()), (domain, seen)


def test_eight_made_up_domains_place_without_binding(machine):
    """Domains of CPUs this machine does not have: chosen and shown, not bound."""
    root, start = machine
    make_machine(root, "0-15", domains_of([list(range(2 * i, 2 * i + 2)) for i in range(8)]))
    rows, _ = start()
    assert len(rows) == 8
    with connect() as ctl:
        configure(ctl, schedule="mls", corun_slots=1, max_wait="10min")
        sessions = []
        try:
            sessions = [gated_session() for _ in range(3)]
            before = cpus_allowed(sessions[0].info.backend_pid)
            results = [{} for _ in sessions]
            threads = [start_query(s, SLEEPER.format(s=2), r) for s, r in zip(sessions, results)]
            domains = sorted(running_in(ctl, s.info.backend_pid) for s in sessions)
            slots = ctl.execute("select array_agg(slots order by domain) from mccdb_llc_domains").fetchone()[0]
            allowed = {cpus_allowed(s.info.backend_pid) for s in sessions}
            for t in threads:
                t.join(30)
            assert len(set(domains)) == 3, domains          # three domains, one query each
            assert slots == [1] * 8, slots
            # domains 0 (CPUs 0-1) holds this machine's CPUs; the others none of them
            assert allowed <= {before}, allowed
            assert all("error" not in r for r in results), results
        finally:
            for s in sessions:
                s.close()
            for k in GATE_SETTINGS:
                ctl.execute(f"alter system reset mccdb.{k}")
            ctl.execute("select pg_reload_conf()")


def test_one_domain_binds_nothing():
    """This machine as it is (one LLC here): no binding, the slots as before."""
    with connect() as ctl:
        rows = ctl.execute("select count(*), sum(slots) from mccdb_llc_domains").fetchone()
        if rows[0] != 1:
            pytest.skip("this machine has more than one LLC")
        configure(ctl, schedule="mls")
        try:
            with gated_session() as a:
                before = cpus_allowed(a.info.backend_pid)
                result = {}
                t = start_query(a, SLEEPER.format(s=1), result)
                assert running_in(ctl, a.info.backend_pid) == 0
                assert cpus_allowed(a.info.backend_pid) == before
                t.join(30)
            assert rows[1] == ctl.execute("select slots from mccdb_scheduler()").fetchone()[0]
        finally:
            ctl.execute("alter system reset mccdb.schedule")
            ctl.execute("select pg_reload_conf()")
