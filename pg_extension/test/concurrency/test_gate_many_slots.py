"""More than 64 slots: the predictive policy sees every query (issue 26, defect 5).

Its arrays of waiting and running queries had 64 entries, filled in
backend-slot order: past the 64th, waiters were never considered and
running queries were charged no run time while 64 others ran, so their
run times came out too short.  Eighty queries released together into
eighty slots must all run at once, and every one teach the model with its
whole run time: a co-run each in mccdb_query_stats, and a sleep is never
faster with company than alone.  The test cluster is restarted with
max_connections 100 for this module (the project cluster has 50), and
back afterwards.
"""
import threading
import time

import pytest
from conftest import cluster, configure, connect, wait_until

N = 80


@pytest.fixture(scope="module")
def many_connections():
    with connect() as c:
        c.execute("alter system set max_connections = 100")
    cluster("restart")
    try:
        yield
    finally:
        with connect() as c:
            c.execute("alter system reset max_connections")
        cluster("restart")


SQL = "select pg_sleep(1)"


def coruns(ctl, qid):
    return ctl.execute("select coalesce(sum(coruns), 0), coalesce(sum(admissions), 0) "
                       "from mccdb_query_stats where queryid = %s", (qid,)).fetchone()


def test_eighty_queries_run_at_once_in_eighty_slots_and_all_teach(many_connections, ctl):
    configure(ctl, schedule="predictive", corun_slots=N, max_wait="10min", min_cost=0)
    ctl.execute("select mccdb_learned_reset(), mccdb_query_stats_reset()")
    qid = ctl.execute("explain (verbose, format json) " + SQL).fetchone()[0][0]["Query Identifier"]
    # once alone: its alone time is known, so runs with company teach
    with connect() as c:
        c.execute(SQL)
    ctl.execute("select mccdb_hold_admission(true)")
    errors = []

    def one():
        try:
            with connect() as c:
                c.execute("set statement_timeout = '20s'")
                c.execute(SQL)
        except Exception as e:  # reported by the test
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(N)]
    try:
        for t in threads:
            t.start()
        wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", N, timeout=15)
    finally:
        ctl.execute("select mccdb_hold_admission(false)")
    most = 0
    deadline = time.time() + 1.5
    while time.time() < deadline and most < N:
        most = max(most, ctl.execute("select count(*) from mccdb_queue where state = 'running'"
                                     ).fetchone()[0])
        time.sleep(0.02)
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert most == N, f"at most {most} of {N} queries ran at once in {N} slots"
    # each of them ran with company and was accounted: N co-runs learned
    deadline = time.time() + 5
    while coruns(ctl, qid) != (N, N + 1) and time.time() < deadline:
        time.sleep(0.1)
    assert coruns(ctl, qid) == (N, N + 1), "(co-runs learned, admissions) of the query"
    # a sleep is never faster with company: each run's whole time was
    # counted (a run past the 64th was charged only once others ended)
    slowdown = ctl.execute("select mean_corun_slowdown from mccdb_query_stats where queryid = %s",
                           (qid,)).fetchone()[0]
    assert slowdown >= 0.95, f"mean co-run slowdown {slowdown:.3f}: run times were lost"
