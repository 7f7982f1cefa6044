"""Co-scheduling behaviour of mccdb against a real server, many sessions.

Needs the `test` cluster of scripts/run-tests.sh (libpq environment set,
database `ssb` loaded, mccdb_test_queries filled).  The scheduler settings
are server-wide (PGC_SIGHUP): each test sets them with ALTER SYSTEM, and a
fixture resets them afterwards.
"""
import contextlib
import os
import random
import threading
import time

import psycopg
import pytest
from conftest import configure, connect, query, tagged, wait_until

HASH = ["set enable_nestloop = off", "set enable_mergejoin = off"]
INDEX = ["set enable_hashjoin = off", "set enable_mergejoin = off",
         "set enable_bitmapscan = off", "set enable_memoize = off",
         "set enable_material = off"]


def run_session(sql, settings, errors, tag):
    try:
        with connect() as c:
            c.execute("set max_parallel_workers_per_gather = 0")
            for s in settings:
                c.execute(s)
            c.execute(tagged(sql, tag))
    except Exception as e:  # reported by the test
        errors.append((tag, e))


def batch(ctl, policy, sql_hash, sql_index):
    """Submit two hash-join and two index-join instances together, 2 slots."""
    configure(ctl, schedule=policy, corun_slots=2, max_wait="10min")
    ctl.execute("select mccdb_recent_reset()")
    ctl.execute("select mccdb_hold_admission(true)")
    errors, threads = [], []
    for i, (kind, sql, settings) in enumerate([("hash", sql_hash, HASH), ("index", sql_index, INDEX),
                                               ("hash", sql_hash, HASH), ("index", sql_index, INDEX)]):
        t = threading.Thread(target=run_session,
                             args=(sql, settings, errors, f"batch-{policy}-{kind}-{i}"))
        t.start()
        threads.append(t)
    wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", 4)
    queued = ctl.execute("select locality from mccdb_queue order by arrival").fetchall()
    # PostgreSQL 17 and later: an extension names its wait events
    event = "MccdbAdmission" if ctl.info.server_version >= 170000 else "Extension"
    waiting_events = ctl.execute(
        "select count(*) from pg_stat_activity a join mccdb_queue q using (pid) "
        "where a.wait_event_type = 'Extension' and a.wait_event = %s", (event,)).fetchone()[0]
    ctl.execute("select mccdb_hold_admission(false)")
    for t in threads:
        t.join(120)
    assert not errors, errors
    runs = ctl.execute(
        "select query, admit_seq, admitted, released from mccdb_recent_queries "
        "where query like %s order by admit_seq", (f"%/* batch-{policy}-%",)).fetchall()
    return queued, waiting_events, runs


def kind(run):
    return "hash" if "-hash-" in run[0] else "index"


def overlapping_pairs(runs):
    pairs = []
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            if a[2] < b[3] and b[2] < a[3]:
                pairs.append(tuple(sorted((kind(a), kind(b)))))
    return pairs


def test_waiting_queries_are_visible_in_queue_and_pg_stat_activity(ctl):
    sql = query(ctl, "plq_04")
    queued, waiting_events, runs = batch(ctl, "sls", sql, sql)
    assert len(queued) == 4
    assert waiting_events == 4, "every waiting backend shows wait event Extension/MccdbAdmission (18)"
    assert len(runs) == 4 and all(r[1] is not None for r in runs), "all four were admitted"


def test_sls_runs_hash_with_hash_then_index_with_index(ctl):
    sql = query(ctl, "plq_04")
    queued, _, runs = batch(ctl, "sls", sql, sql)
    assert sorted(q[0] for q in queued) == ["strong", "strong", "weak", "weak"]
    assert [kind(r) for r in runs[:2]] == ["hash", "hash"], runs
    assert overlapping_pairs(runs), "some queries ran together"
    assert ("hash", "index") not in overlapping_pairs(runs), "SLS never mixes the queues"


def test_mls_runs_hash_with_index_twice(ctl):
    # Decisions, not timings: while both queues have a waiter, MLS admits one
    # of each, and the query that replaces a finished one is of its queue.
    # (When one queue is empty MLS admits from the other, as SLS would: which
    # pair runs last depends on which query finishes first.)
    sql = query(ctl, "plq_04")
    _, _, runs = batch(ctl, "mls", sql, sql)
    compact = [(kind(r), r[1], r[2].time(), r[3].time()) for r in runs]
    assert sorted(kind(r) for r in runs[:2]) == ["hash", "index"], compact
    first_done = min(runs[:2], key=lambda r: r[3])
    assert kind(runs[2]) == kind(first_done), \
        f"the third query replaces the first to finish, in its queue: {compact}"
    assert ("hash", "index") in overlapping_pairs(runs), compact


def load_matrix(ctl, same_class, mixed):
    with ctl.transaction():
        ctl.execute("delete from mccdb_interference")
        for t in ("strong", "weak"):
            for c in ("strong", "weak"):
                ctl.execute("insert into mccdb_interference (target, corunner, slowdown) values (%s, %s, %s)",
                            (t, c, same_class if t == c else mixed))
    ctl.execute("select mccdb_load_interference()")


@pytest.mark.parametrize("same_class,mixed,first_pair_mixed", [(2.0, 1.05, True), (1.05, 2.0, False)])
def test_adaptive_follows_the_measured_matrix(ctl, same_class, mixed, first_pair_mixed):
    # Adaptive admits, beside what runs, the waiter with the least predicted
    # slowdown (it never leaves a slot idle, unlike SLS): the second query
    # admitted with the first shows which pairing the matrix preferred.
    load_matrix(ctl, same_class, mixed)
    try:
        assert ctl.execute("select interference_loaded from mccdb_scheduler()").fetchone()[0]
        sql = query(ctl, "plq_04")
        _, _, runs = batch(ctl, "adaptive", sql, sql)
        assert len(runs) == 4
        assert (kind(runs[0]) != kind(runs[1])) == first_pair_mixed, \
            f"first two admitted: {kind(runs[0])}, {kind(runs[1])} (same class x{same_class}, mixed x{mixed})"
    finally:
        ctl.execute("delete from mccdb_interference")
        ctl.execute("select mccdb_load_interference()")


def test_mls_plan_choice_splits_four_instances_into_two_of_each_class(ctl):
    # a query whose strong/moderate and weak plans both cost within the slack
    with connect() as c:
        c.execute("set max_parallel_workers_per_gather = 0")
        names = [r[0] for r in c.execute(
            "select name from mccdb_test_queries q where suite = 'ssb' and "
            "(select count(distinct locality = 'weak') from mccdb_plan_candidates("
            "rtrim(btrim(q.sql, E' \\n\\t'), ';')) where kept) = 2 order by name").fetchall()]
    assert names, "an SSB query with kept candidates of both queues exists"
    sql = query(ctl, names[0], suite="ssb")
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")
    ctl.execute("select mccdb_hold_admission(true)")
    errors, threads = [], []
    for i in range(4):
        t = threading.Thread(target=run_session,
                             args=(sql, ["set mccdb.plan_policy = mls"], errors, f"split-{i}"))
        t.start()
        threads.append(t)
        # plan one at a time: each sees the queue the previous ones made
        wait_until(ctl, "select count(*) from mccdb_queue", i + 1)
    classes = [r[0] for r in ctl.execute("select queue from mccdb_queue order by arrival")]
    ctl.execute("select mccdb_hold_admission(false)")
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(classes) == ["strong/moderate", "strong/moderate", "weak", "weak"], classes


@pytest.mark.parametrize("how", ["cancel", "statement_timeout", "terminate"])
def test_interrupts_end_the_wait_at_once(ctl, how):
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")
    ctl.execute("select mccdb_hold_admission(true)")
    sql = query(ctl, "plq_04")
    result = {}

    def waiter():
        try:
            with connect() as c:
                if how == "statement_timeout":
                    c.execute("set statement_timeout = '300ms'")
                result["pid"] = c.info.backend_pid
                t0 = time.time()
                try:
                    c.execute("/* interrupt */ " + sql)
                    result["outcome"] = "ran"
                except psycopg.Error as e:
                    result["outcome"] = type(e).__name__
                result["seconds"] = time.time() - t0
        except psycopg.Error as e:
            result.setdefault("outcome", type(e).__name__)

    t = threading.Thread(target=waiter)
    t.start()
    wait_until(ctl, "select count(*) from mccdb_queue where state = 'waiting'", 1)
    t0 = time.time()
    if how == "cancel":
        ctl.execute("select pg_cancel_backend(%s)", (result["pid"],))
    elif how == "terminate":
        ctl.execute("select pg_terminate_backend(%s)", (result["pid"],))
    t.join(30)
    ended = time.time() - t0
    assert result["outcome"] != "ran", result
    assert ended < 5, f"the wait ended {ended:.1f} s after the {how}"
    wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=5)
    assert ctl.execute("select used_slots from mccdb_scheduler()").fetchone()[0] == 0


# make test sends 100 signals; the long target (make test-long) 2,000.
STORM_SIGNALS = int(os.environ.get("MCCDB_STORM_SIGNALS", "100"))


def test_storm_of_cancels_and_terminations_leaves_no_slot_held(ctl):
    configure(ctl, schedule="mls", corun_slots=2, max_wait="2s")
    sqls = [query(ctl, "plq_02"), query(ctl, "plq_08")]
    stop = time.time() + 3600
    pids, lock = set(), threading.Lock()
    completed = []

    def client(i):
        rnd = random.Random(i)
        while time.time() < stop:
            pid = None
            try:
                with connect() as c:
                    pid = c.info.backend_pid
                    with lock:
                        pids.add(pid)
                    c.execute("set max_parallel_workers_per_gather = 0")
                    for s in (HASH if i % 2 else INDEX):
                        c.execute(s)
                    if rnd.random() < 0.3:
                        c.execute("set statement_timeout = '%dms'" % rnd.randint(50, 400))
                    for _ in range(3):
                        c.execute(rnd.choice(sqls))
                        completed.append(i)
            except psycopg.Error:
                pass
            finally:
                if pid is not None:
                    with lock:
                        pids.discard(pid)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    rnd = random.Random(42)
    signals = 0
    deadline = time.time() + max(60, STORM_SIGNALS / 5)
    while signals < STORM_SIGNALS and time.time() < deadline:
        with lock:
            victims = list(pids)
        if victims:
            fn = rnd.choice(["pg_cancel_backend", "pg_terminate_backend"])
            ctl.execute(f"select {fn}(%s)", (rnd.choice(victims),))
            signals += 1
        time.sleep(0.05)
    stop = time.time()
    for t in threads:
        t.join(120)
    assert signals >= STORM_SIGNALS, f"the storm sent {signals} of {STORM_SIGNALS} signals"
    assert completed, "some queries completed despite the storm"
    wait_until(ctl, "select count(*) from mccdb_queue", 0, timeout=10)
    assert ctl.execute("select used_slots from mccdb_scheduler()").fetchone()[0] == 0


def test_short_utility_and_own_statements_bypass_a_held_gate(ctl):
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")
    ctl.execute("select mccdb_hold_admission(true)")
    admitted_before = ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0]
    with connect() as c:
        c.execute("set statement_timeout = '5s'")  # a wait would fail the test
        assert c.execute("select count(*) from supplier").fetchone()[0] > 0, "cheap query ran"
        c.execute("create temp table bypass_t as select 1 as x")  # utility (cheap)
        assert c.execute("select count(*) from mccdb_queue").fetchone()[0] == 0, "own view ran"
        c.execute("set mccdb.min_cost = 1e30")
        # gated, it would wait for the held gate until statement_timeout fails it
        assert c.execute("select sum(lo_revenue) from lineorder").fetchone()[0] > 0
    assert ctl.execute("select admitted from mccdb_scheduler()").fetchone()[0] == admitted_before, \
        "none of these went through the gate"


def test_parallel_workers_take_slots(ctl):
    configure(ctl, schedule="mls", corun_slots=3, max_wait="10min")
    ctl.execute("select mccdb_hold_admission(true)")
    errors = []
    settings = ["set max_parallel_workers_per_gather = 2", "set parallel_setup_cost = 0",
                "set parallel_tuple_cost = 0", "set min_parallel_table_scan_size = 0"]

    def parallel_query():
        try:
            with connect() as c:
                for s in settings:
                    c.execute(s)
                c.execute("/* parallel */ select count(*) from lineorder where lo_quantity > 1").fetchone()
        except Exception as e:
            errors.append(e)

    t = threading.Thread(target=parallel_query)
    t.start()
    wait_until(ctl, "select count(*) from mccdb_queue", 1)
    slots = ctl.execute("select slots from mccdb_queue").fetchone()[0]
    ctl.execute("select mccdb_hold_admission(false)")
    t.join(60)
    assert not errors, errors
    assert slots == 3, f"the leader and its 2 planned workers take 3 slots, not {slots}"


# A parallel scan in a materialized CTE: its worker ends with the CTE, and
# then the leader runs on alone, in pg_sleep.
WORKER_THEN_LEADER = ("/* worker-then-leader */ with c as materialized "
                      "(select count(*) as n from lineorder where lo_quantity > 1) "
                      "select n, pg_sleep({}) from c")
ONE_WORKER = ["set max_parallel_workers_per_gather = 1", "set parallel_setup_cost = 0",
              "set parallel_tuple_cost = 0", "set min_parallel_table_scan_size = 0"]


@contextlib.contextmanager
def in_background(body):
    """Run body(session) in a thread on a session of its own; at the end of
    the block wait for it, and fail with what it raised."""
    errors = []

    def run():
        try:
            with connect() as c:
                body(c)
        except Exception as e:  # reported at the end of the block
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    try:
        yield t
    finally:
        t.join(60)
    assert not errors, errors


def plan_nodes(node):
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def test_a_worker_that_ended_gives_its_slot_back(ctl):
    # (issue 50: the gate counted a query's planned workers as slots until the
    # query ended, so a CPU stayed idle while its leader ran on alone and
    # other queries waited)
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")
    with connect() as c:
        for s in ONE_WORKER:
            c.execute(s)
        plan = c.execute("explain (analyze, format json) "
                         + WORKER_THEN_LEADER.format(0)).fetchone()[0][0]["Plan"]
        launched = [n.get("Workers Launched") for n in plan_nodes(plan)
                    if n["Node Type"] == "Gather"]
        assert launched == [1], f"the CTE's scan runs with a worker: {plan}"

    def leader(c):
        for s in ONE_WORKER:
            c.execute(s)
        c.execute(WORKER_THEN_LEADER.format(6)).fetchone()

    with in_background(leader) as t:
        # the worker has ended: the leader sleeps, alone in its group
        wait_until(ctl, "select count(*) from pg_stat_activity "
                   "where wait_event = 'PgSleep' and query like '%worker-then-leader%'", 1)
        wait_until(ctl, "select count(*) from pg_stat_activity a join pg_stat_activity l "
                   "on a.leader_pid = l.pid where l.query like '%worker-then-leader%' "
                   "and a.pid <> l.pid", 0)
        assert ctl.execute("select q.slots from mccdb_queue q join pg_stat_activity a using (pid) "
                           "where a.query like '%worker-then-leader%'").fetchall() == [(1,)], \
            "a leader whose worker ended holds 1 slot"
        assert ctl.execute("select used_slots from mccdb_scheduler()").fetchone()[0] == 1
        # so the second slot takes another query now, not when the leader ends
        with connect() as c:
            c.execute("set max_parallel_workers_per_gather = 0")
            c.execute("set statement_timeout = '4s'")  # the leader sleeps 6 s
            assert c.execute("/* beside */ select sum(lo_revenue) from lineorder").fetchone()[0] > 0
        assert t.is_alive(), "the second query ran while the leader still ran"
    wait_until(ctl, "select used_slots from mccdb_scheduler()", 0)


def test_a_worker_postgresql_cannot_launch_holds_no_slot(ctl):
    # (issue 50: the gate kept a slot for a worker its Gather could not
    # register, max_parallel_workers used up, until the query ended)
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")

    def leader(c):
        for s in ONE_WORKER:
            c.execute(s)
        c.execute("set max_parallel_workers = 0")  # the plan keeps its worker
        c.execute(WORKER_THEN_LEADER.format(4)).fetchone()

    with in_background(leader):
        wait_until(ctl, "select count(*) from pg_stat_activity "
                   "where wait_event = 'PgSleep' and query like '%worker-then-leader%'", 1)
        assert ctl.execute("select q.slots from mccdb_queue q join pg_stat_activity a using (pid) "
                           "where a.query like '%worker-then-leader%'").fetchall() == [(1,)], \
            "a leader whose worker cannot be launched holds 1 slot"
        assert ctl.execute("select used_slots from mccdb_scheduler()").fetchone()[0] == 1
    wait_until(ctl, "select used_slots from mccdb_scheduler()", 0)


def test_a_worker_of_a_statement_the_gate_did_not_admit_counts_against_the_launchable(ctl):
    # (issue 50: workers of statements the gate does not see were not known
    # to it, so it kept a slot for a worker max_parallel_workers left no
    # room for)
    configure(ctl, schedule="mls", corun_slots=2, max_wait="10min")
    ctl.execute("create table if not exists mccdb_test_eight_rows as "
                "select g from generate_series(1, 8) g")
    ctl.execute("analyze mccdb_test_eight_rows")

    def ungated(c):
        # below the gate (a superuser may raise it for a session); a
        # single-copy Gather: its worker runs the whole plan, a second a row
        c.execute("set mccdb.schedule_min_cost = 1e15")
        c.execute("set max_parallel_workers_per_gather = 1")
        c.execute("set force_parallel_mode = on" if c.info.server_version < 160000
                  else "set debug_parallel_query = on")
        c.execute("/* ungated-worker */ select count(*) from mccdb_test_eight_rows "
                  "where pg_sleep(1) is not null").fetchone()

    def gated(c):
        for s in ONE_WORKER:
            c.execute(s)
        c.execute("set max_parallel_workers = 1")  # the worker above takes it
        c.execute(WORKER_THEN_LEADER.format(3)).fetchone()

    try:
        with in_background(ungated):
            wait_until(ctl, "select count(*) from pg_stat_activity where backend_type = "
                       "'parallel worker' and query like '%ungated-worker%'", 1)
            assert ctl.execute("select count(*) from mccdb_queue q join pg_stat_activity a "
                               "using (pid) where a.query like '%ungated-worker%'"
                               ).fetchone()[0] == 0, "the statement is not in the gate"
            with in_background(gated):
                wait_until(ctl, "select count(*) from pg_stat_activity where wait_event = "
                           "'PgSleep' and query like '%worker-then-leader%'", 1)
                assert ctl.execute("select q.slots from mccdb_queue q join pg_stat_activity a "
                                   "using (pid) where a.query like '%worker-then-leader%'"
                                   ).fetchall() == [(1,)], \
                    "no slot kept for a worker the ungated statement's worker leaves no room for"
    finally:
        ctl.execute("drop table if exists mccdb_test_eight_rows")
    wait_until(ctl, "select used_slots from mccdb_scheduler()", 0)


@contextlib.contextmanager
def serial_sleeper(ctl, seconds):
    """A query without workers that holds one slot for seconds: running
    when the block starts, ended when it ends."""
    def sleep(c):
        c.execute("set max_parallel_workers_per_gather = 0")
        c.execute(f"/* serial-sleeper */ select pg_sleep({seconds}), count(*) "
                  "from lineorder").fetchone()

    with in_background(sleep) as t:
        wait_until(ctl, "select count(*) from mccdb_queue q join pg_stat_activity a using (pid) "
                   "where q.state = 'running' and a.query like '%serial-sleeper%'", 1)
        yield t


GROUPED_THEN_SLEEP = ("/* grouped-then-sleep */ with g as materialized "
                      "(select lo_custkey % 1000 as k, count(*) as n from lineorder group by 1) "
                      "select count(*), pg_sleep(3) from g")


def test_a_narrowed_query_holds_the_memory_of_the_workers_it_was_given(ctl):
    # (issue 50: a query admitted with fewer workers than planned kept the
    # working memory of all of them in the memory budget)
    configure(ctl, schedule="shortest", corun_slots=2, max_wait="10min", short_query=0)

    def memory_while_running():
        """Run GROUPED_THEN_SLEEP; its working memory in mccdb_queue while it sleeps."""
        launched = []

        def run(c):
            for s in ONE_WORKER:
                c.execute(s)
            # the planner's sizes: a size learned from a run would differ
            c.execute("set mccdb.learn_table_sizes = off")
            plan = c.execute("explain (analyze, format json) "
                             + GROUPED_THEN_SLEEP).fetchone()[0][0]["Plan"]
            launched.extend(n.get("Workers Launched") for n in plan_nodes(plan)
                            if n["Node Type"] in ("Gather", "Gather Merge"))

        with in_background(run):
            wait_until(ctl, "select count(*) from pg_stat_activity "
                       "where wait_event = 'PgSleep' and query like '%grouped-then-sleep%'", 1)
            rows = ctl.execute("select q.working_memory_bytes from mccdb_queue q "
                               "join pg_stat_activity a using (pid) "
                               "where a.query like '%grouped-then-sleep%' "
                               "and q.state = 'running'").fetchall()
        assert len(rows) == 1, rows
        return rows[0][0], launched

    full, launched = memory_while_running()
    assert launched == [1], f"with both slots free it runs with its worker: {launched}"
    with serial_sleeper(ctl, 8) as sleeper:
        narrowed, launched = memory_while_running()
        assert sleeper.is_alive(), "it ran beside the sleeper"
    assert launched == [0], f"in the one free slot it runs without its worker: {launched}"
    # the partial aggregate's hash table is the worker's and the leader's: one less
    assert 0 < narrowed < full, f"working memory {narrowed} narrowed, {full} with the worker"


@pytest.mark.parametrize("policy", ["mls", "shortest", "predictive"])
def test_a_parallel_query_takes_the_free_slot_with_fewer_workers(ctl, policy):
    # (issue 50: a query of 1 + 1 worker waited while one of 2 slots stayed
    # free, so a CPU idled whenever one query ran alone)
    configure(ctl, schedule=policy, corun_slots=2, max_wait="10min", short_query=0)
    with connect() as c:
        for s in ONE_WORKER:
            c.execute(s)
        parallel = "/* narrowed */ select count(*) from lineorder where lo_quantity > 1"
        want = c.execute(parallel).fetchone()[0]
        with serial_sleeper(ctl, 6) as sleeper:
            assert ctl.execute("select used_slots from mccdb_scheduler()").fetchone()[0] == 1
            c.execute("set statement_timeout = '4s'")  # the sleeper holds its slot 6 s
            plan = c.execute("explain (analyze, format json) " + parallel).fetchone()[0][0]["Plan"]
            workers = [(n["Workers Planned"], n.get("Workers Launched"))
                       for n in plan_nodes(plan) if n["Node Type"] == "Gather"]
            assert workers == [(0, 0)], f"run in the one free slot, without its worker: {workers}"
            assert c.execute(parallel).fetchone()[0] == want, "the same answer without the worker"
            assert sleeper.is_alive(), "it ran beside the sleeper"
    # with both slots free it runs with its worker again
    with connect() as c:
        for s in ONE_WORKER:
            c.execute(s)
        plan = c.execute("explain (analyze, format json) " + parallel).fetchone()[0][0]["Plan"]
        assert [n.get("Workers Launched") for n in plan_nodes(plan)
                if n["Node Type"] == "Gather"] == [1]
